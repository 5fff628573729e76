//! The string formats the CRD validator knows
//! (apiextensions-apiserver `pkg/apiserver/validation/formats.go`). Unknown
//! formats are ignored, as the server strips them; `int32`, `int64`, `float`
//! and `double` are kept by the server but only apply to strings there, so
//! they never fail here.
//!
//! The checks follow kube-openapi's strfmt registry. Where that calls a Go
//! standard-library parser (`net/mail`, `net/url`), this module approximates
//! it; see each function.

use std::net::IpAddr;
use std::sync::LazyLock;

use regex::Regex;

/// A format with a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Isbn,
    Isbn10,
    Isbn13,
    CreditCard,
    Ssn,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    Duration,
    DateTime,
    K8sShortName,
    K8sLongName,
}

/// `k8s-short-name` and `k8s-long-name` are gated by the server's
/// compatibility version; a 1.34 server accepts any string for them
/// (measured by tests/live/fidelity.rs), so they are only enforced from 1.35.
const K8S_NAME_FORMATS_SINCE: u32 = 35;

impl Format {
    /// The format behind a `format` keyword on a server of minor version
    /// `server_minor`; `None` for formats the server ignores.
    pub(crate) fn parse(name: &str, server_minor: u32) -> Option<Format> {
        Some(match name {
            "bsonobjectid" => Format::BsonObjectId,
            "uri" => Format::Uri,
            "email" => Format::Email,
            "hostname" => Format::Hostname,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "cidr" => Format::Cidr,
            "mac" => Format::Mac,
            "uuid" => Format::Uuid,
            "uuid3" => Format::Uuid3,
            "uuid4" => Format::Uuid4,
            "uuid5" => Format::Uuid5,
            "isbn" => Format::Isbn,
            "isbn10" => Format::Isbn10,
            "isbn13" => Format::Isbn13,
            "creditcard" => Format::CreditCard,
            "ssn" => Format::Ssn,
            "hexcolor" => Format::HexColor,
            "rgbcolor" => Format::RgbColor,
            "byte" => Format::Byte,
            "password" => Format::Password,
            "date" => Format::Date,
            "duration" => Format::Duration,
            "datetime" | "date-time" => Format::DateTime,
            "k8s-short-name" if server_minor >= K8S_NAME_FORMATS_SINCE => Format::K8sShortName,
            "k8s-long-name" if server_minor >= K8S_NAME_FORMATS_SINCE => Format::K8sLongName,
            _ => return None,
        })
    }

    /// Whether the API server validates a format on custom resources, on
    /// some server version (the comparison does not know the target server,
    /// so it counts formats newer servers validate). Other formats are
    /// documentation only.
    pub(crate) fn is_validated(name: &str) -> bool {
        Format::parse(name, u32::MAX).is_some()
    }

    /// The name used in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::BsonObjectId => "bsonobjectid",
            Format::Uri => "uri",
            Format::Email => "email",
            Format::Hostname => "hostname",
            Format::Ipv4 => "ipv4",
            Format::Ipv6 => "ipv6",
            Format::Cidr => "cidr",
            Format::Mac => "mac",
            Format::Uuid => "uuid",
            Format::Uuid3 => "uuid3",
            Format::Uuid4 => "uuid4",
            Format::Uuid5 => "uuid5",
            Format::Isbn => "isbn",
            Format::Isbn10 => "isbn10",
            Format::Isbn13 => "isbn13",
            Format::CreditCard => "creditcard",
            Format::Ssn => "ssn",
            Format::HexColor => "hexcolor",
            Format::RgbColor => "rgbcolor",
            Format::Byte => "byte",
            Format::Password => "password",
            Format::Date => "date",
            Format::Duration => "duration",
            Format::DateTime => "date-time",
            Format::K8sShortName => "k8s-short-name",
            Format::K8sLongName => "k8s-long-name",
        }
    }

    /// Whether `s` is valid for this format.
    pub(crate) fn is_valid(self, s: &str) -> bool {
        match self {
            Format::BsonObjectId => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            Format::Uri => is_uri(s),
            Format::Email => EMAIL.is_match(s),
            Format::Hostname => is_hostname(s),
            Format::Ipv4 => s.parse::<IpAddr>().is_ok() && s.contains('.'),
            Format::Ipv6 => s.parse::<IpAddr>().is_ok() && s.contains(':'),
            Format::Cidr => is_cidr(s),
            Format::Mac => is_mac(s),
            Format::Uuid => UUID.is_match(s),
            Format::Uuid3 => UUID3.is_match(s),
            Format::Uuid4 => UUID4.is_match(s),
            Format::Uuid5 => UUID5.is_match(s),
            Format::Isbn => is_isbn10(s) || is_isbn13(s),
            Format::Isbn10 => is_isbn10(s),
            Format::Isbn13 => is_isbn13(s),
            Format::CreditCard => is_credit_card(s),
            Format::Ssn => s.len() == 11 && SSN.is_match(s),
            Format::HexColor => HEX_COLOR.is_match(s),
            Format::RgbColor => RGB_COLOR.is_match(s),
            // An empty string is not valid `byte` for the server.
            Format::Byte => !s.is_empty() && decode_base64(s).is_some(),
            Format::Password => true,
            Format::Date => parse_date(s).is_some(),
            Format::Duration => is_duration(s),
            Format::DateTime => is_date_time(s),
            Format::K8sShortName => is_dns1123_label(s),
            Format::K8sLongName => is_dns1123_subdomain(s),
        }
    }
}

fn re(p: &str) -> Regex {
    // The patterns are constants of this module, checked by the tests.
    Regex::new(p).unwrap_or_else(|e| panic!("built-in pattern {p}: {e}"))
}

/// net/mail.ParseAddress accepts `local@domain` and `Name <local@domain>`;
/// this approximates both (quoted local parts and comments are not handled).
static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:[^<>@]*<)?[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[^\]]*\])(?:>)?$",
    )
});
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    let c = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*";
    re(&format!(r"^rgb\({c},{c},{c}\)$"))
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:4\d{12}(?:\d{3})?|5[1-5]\d{14}|(?:222[1-9]|22[3-9]\d|2[3-6]\d{2}|27[01]\d|2720)\d{12}|6(?:011|5\d\d)\d{12}|3[47]\d{13}|3(?:0[0-5]|[68]\d)\d{11}|(?:2131|1800|35\d{3})\d{11}|6[27]\d{14})$",
    )
});
/// strfmt's lenient duration form: `<digits> <unit>` anywhere in the string.
static DURATION_WORDS: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)\s*([A-Za-zµ]+)"));
static DATE_TIME_CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});

fn is_hostname(s: &str) -> bool {
    s.len() <= 255 && HOSTNAME.is_match(s) && s.split('.').all(|p| p.len() <= 63)
}

/// Approximates Go's `url.ParseRequestURI`: an absolute URI (`scheme:...`) or
/// an absolute path, no control characters, valid `%` escapes, no space in
/// the host.
fn is_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let ok = bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
            if !ok {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    if s.starts_with('/') {
        return true;
    }
    let Some(colon) = s.find(':') else {
        return false;
    };
    let scheme = &s[..colon];
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return false;
    }
    let rest = &s[colon + 1..];
    if let Some(auth) = rest.strip_prefix("//") {
        let host = auth.split(['/', '?', '#']).next().unwrap_or("");
        if host.contains(' ') {
            return false;
        }
    }
    true
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<IpAddr>() else {
        return false;
    };
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(bits) = bits.parse::<u32>() else {
        return false;
    };
    match ip {
        IpAddr::V4(_) => bits <= 32,
        IpAddr::V6(_) => bits <= 128,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx:..`, `xx-xx-..` or `xxxx.xxxx...`.
fn is_mac(s: &str) -> bool {
    let octets_ok = |n: usize| matches!(n, 6 | 8 | 20);
    let hex = |p: &str, len: usize| p.len() == len && p.bytes().all(|b| b.is_ascii_hexdigit());
    if s.contains(':') || s.contains('-') {
        let sep = if s.contains(':') { ':' } else { '-' };
        let parts: Vec<&str> = s.split(sep).collect();
        octets_ok(parts.len()) && parts.iter().all(|p| hex(p, 2))
    } else if s.contains('.') {
        let parts: Vec<&str> = s.split('.').collect();
        octets_ok(parts.len() * 2) && parts.iter().all(|p| hex(p, 4))
    } else {
        false
    }
}

fn isbn_digits(s: &str) -> String {
    s.chars().filter(|c| *c != ' ' && *c != '-').collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 10
        || !b[..9].iter().all(u8::is_ascii_digit)
        || !(b[9].is_ascii_digit() || b[9] == b'X')
    {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in b.iter().enumerate() {
        let v = if *c == b'X' { 10 } else { u32::from(c - b'0') };
        sum += (i as u32 + 1) * v;
    }
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = b[..12]
        .iter()
        .enumerate()
        .map(|(i, c)| u32::from(c - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    (10 - sum % 10) % 10 == u32::from(b[12] - b'0')
}

fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !CREDIT_CARD.is_match(&digits) {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in digits.bytes().rev().enumerate() {
        let mut v = u32::from(c - b'0');
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum.is_multiple_of(10)
}

/// Go's `base64.StdEncoding.DecodeString`: padded standard alphabet; `\r`
/// and `\n` are skipped.
pub(crate) fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    };
    let clean: Vec<u8> = s.bytes().filter(|b| *b != b'\r' && *b != b'\n').collect();
    if !clean.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    let chunks = clean.len() / 4;
    for (ci, chunk) in clean.chunks(4).enumerate() {
        let last = ci + 1 == chunks;
        let pad = chunk.iter().rev().take_while(|b| **b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            let v = if i >= 4 - pad { 0 } else { val(*c)? };
            n = (n << 6) | v;
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        // Go rejects non-zero bits in the padding (strict only in Strict mode;
        // StdEncoding tolerates them), so they are ignored here too.
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

fn two(b: &[u8]) -> Option<u32> {
    if b.len() == 2 && b.iter().all(u8::is_ascii_digit) {
        Some(u32::from(b[0] - b'0') * 10 + u32::from(b[1] - b'0'))
    } else {
        None
    }
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// `2006-01-02`, with a valid day of month (Go `time.Parse`).
pub(crate) fn parse_date(s: &str) -> Option<(i32, u32, u32)> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !b[..4].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let year = s[..4].parse::<i32>().ok()?;
    let month = two(&b[5..7])?;
    let day = two(&b[8..10])?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some((year, month, day))
}

/// strfmt `IsDateTime`: a date, `t` (any case), `hh:mm:ss`, an optional
/// fraction and a zone (`z` or `±hh:mm`).
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(clock)) = (parts.next(), parts.next()) else {
        return false;
    };
    if parse_date(date).is_none() {
        return false;
    }
    let Some(c) = DATE_TIME_CLOCK.captures(clock) else {
        return false;
    };
    let le = |i: usize, max: &str| c.get(i).is_some_and(|m| m.as_str() <= max);
    le(1, "23") && le(2, "59") && le(3, "59")
}

/// An RFC 3339 timestamp, as CEL sees a `date-time` field.
pub(crate) fn parse_timestamp(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    use chrono::{FixedOffset, NaiveDate, TimeZone};
    let b = s.as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't') {
        return None;
    }
    let (y, mo, d) = parse_date(&s[..10])?;
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, se) = (two(&b[11..13])?, two(&b[14..16])?, two(&b[17..19])?);
    let mut rest = &s[19..];
    let mut nanos = 0u32;
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 || n > 9 {
            return None;
        }
        nanos = frac[..n].parse::<u32>().ok()? * 10u32.pow(9 - n as u32);
        rest = &frac[n..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let rb = rest.as_bytes();
            if rb.len() != 6 || rb[3] != b':' {
                return None;
            }
            let sign = match rb[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            sign * (two(&rb[1..3])? as i32 * 3600 + two(&rb[4..6])? as i32 * 60)
        }
    };
    let tz = FixedOffset::east_opt(offset)?;
    let naive = NaiveDate::from_ymd_opt(y, mo, d)?.and_hms_nano_opt(h, mi, se, nanos)?;
    tz.from_local_datetime(&naive).single()
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub(crate) fn parse_go_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let mut num_len = int_len;
        let mut frac_len = 0;
        if rest.as_bytes().get(int_len) == Some(&b'.') {
            frac_len = rest[int_len + 1..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            num_len = int_len + 1 + frac_len;
        }
        if int_len == 0 && frac_len == 0 {
            return None;
        }
        let num: f64 = rest[..num_len].parse().ok().or_else(|| {
            // "5." parses in Go; Rust's f64 parser accepts it too, but keep a fallback.
            rest[..int_len].parse().ok()
        })?;
        rest = &rest[num_len..];
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(rest.len(), |(i, _)| i);
        let unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += num * unit;
        if total > 9.223_372_036_854_775e18 {
            return None;
        }
    }
    let n = total as i64;
    Some(if neg { -n } else { n })
}

/// strfmt `IsDuration`: Go durations, or `<n> <unit>` pairs with units like
/// `d`, `day`, `wk` found anywhere in the string.
fn is_duration(s: &str) -> bool {
    if parse_go_duration(s).is_some() {
        return true;
    }
    // Each group's last spelling also matches as a prefix ("days", "hours");
    // the server accepts "3 days" (tests/live/fidelity.rs).
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    DURATION_WORDS.captures_iter(s).any(|c| {
        let Some(unit) = c.get(2).map(|u| u.as_str().to_lowercase()) else {
            return false;
        };
        c.get(1).is_some_and(|n| n.as_str().parse::<i64>().is_ok())
            && UNITS.iter().any(|group| {
                group.iter().any(|v| *v == unit)
                    || group.last().is_some_and(|last| unit.starts_with(last))
            })
    })
}

fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(f: &str, s: &str) -> bool {
        Format::parse(f, 35).expect("known format").is_valid(s)
    }

    #[test]
    fn unknown_and_gated_formats_are_ignored() {
        assert_eq!(Format::parse("quantity", 34), None);
        assert_eq!(Format::parse("int32", 34), None);
        assert_eq!(Format::parse("k8s-short-name", 34), None);
        assert_eq!(
            Format::parse("k8s-short-name", 35),
            Some(Format::K8sShortName)
        );
        assert_eq!(Format::parse("date-time", 30), Some(Format::DateTime));
    }

    #[test]
    fn network_formats() {
        assert!(ok("ipv4", "10.0.0.1"));
        assert!(!ok("ipv4", "10.0.0.256"));
        assert!(!ok("ipv4", "::1"));
        assert!(!ok("ipv4", "010.0.0.1"));
        assert!(ok("ipv6", "fe80::1"));
        assert!(!ok("ipv6", "10.0.0.1"));
        assert!(ok("cidr", "10.0.0.0/8"));
        assert!(ok("cidr", "fd00::/64"));
        assert!(!ok("cidr", "10.0.0.0/33"));
        assert!(!ok("cidr", "10.0.0.0"));
        assert!(ok("mac", "00:00:5e:00:53:01"));
        assert!(ok("mac", "00-00-5e-00-53-01"));
        assert!(ok("mac", "0000.5e00.5301"));
        assert!(!ok("mac", "00:00:5e:00:53"));
        assert!(ok("hostname", "example.com"));
        assert!(ok("hostname", "localhost"));
        assert!(!ok("hostname", "exa mple.com"));
        assert!(!ok("hostname", &format!("{}.com", "a".repeat(64))));
        assert!(ok("uri", "https://example.com/a?b=c"));
        assert!(ok("uri", "/just/a/path"));
        assert!(!ok("uri", "example.com"));
        assert!(!ok("uri", "http://exa mple.com"));
        assert!(!ok("uri", "http://example.com/%zz"));
        assert!(ok("email", "a.b@example.com"));
        assert!(ok("email", "Jane <jane@example.com>"));
        assert!(!ok("email", "not-an-email"));
    }

    #[test]
    fn identifier_formats() {
        assert!(ok("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(ok("uuid", "123E4567-E89B-12D3-A456-426614174000"));
        // Dashes are optional for the server.
        assert!(ok("uuid", "123e4567e89b12d3a456426614174000"));
        assert!(!ok("uuid", "123e4567-e89b-12d3-a456-42661417400"));
        assert!(ok("uuid4", "123e4567-e89b-42d3-a456-426614174000"));
        assert!(!ok("uuid4", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(ok("uuid3", "123e4567-e89b-32d3-a456-426614174000"));
        assert!(ok("uuid5", "123e4567-e89b-52d3-a456-426614174000"));
        assert!(ok("bsonobjectid", "507f1f77bcf86cd799439011"));
        assert!(!ok("bsonobjectid", "507f1f77bcf86cd79943901"));
        assert!(ok("isbn10", "0-306-40615-2"));
        assert!(!ok("isbn10", "0-306-40615-3"));
        assert!(ok("isbn13", "978-0-306-40615-7"));
        assert!(ok("isbn", "978-0-306-40615-7"));
        assert!(ok("creditcard", "4111 1111 1111 1111"));
        assert!(!ok("creditcard", "4111 1111 1111 1112"));
        assert!(ok("ssn", "123-45-6789"));
        assert!(!ok("ssn", "123456789"));
        assert!(ok("hexcolor", "#ffaa00"));
        assert!(ok("hexcolor", "fa0"));
        assert!(!ok("hexcolor", "#ffaa0"));
        assert!(ok("rgbcolor", "rgb(255, 0, 10)"));
        assert!(!ok("rgbcolor", "rgb(256,0,0)"));
        assert!(ok("k8s-short-name", "my-app"));
        assert!(!ok("k8s-short-name", "My-app"));
        assert!(!ok("k8s-short-name", "a.b"));
        assert!(ok("k8s-long-name", "a.b-c.d"));
        assert!(!ok("k8s-long-name", "a..b"));
        assert!(ok("password", ""));
    }

    #[test]
    fn byte_is_padded_standard_base64() {
        assert_eq!(decode_base64("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_base64("aGVs\nbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_base64(""), Some(Vec::new()));
        assert!(decode_base64("aGVsbG8").is_none());
        assert!(decode_base64("aGV=bG8=").is_none());
        assert!(decode_base64("a_==").is_none());
    }

    #[test]
    fn dates_times_and_durations() {
        assert!(ok("date", "2024-02-29"));
        assert!(!ok("date", "2023-02-29"));
        assert!(!ok("date", "2024-2-1"));
        assert!(ok("date-time", "2024-01-02T03:04:05Z"));
        assert!(ok("date-time", "2024-01-02t03:04:05.123+01:00"));
        assert!(!ok("date-time", "2024-01-02T03:04Z"));
        assert!(!ok("date-time", "2024-01-02T24:00:00Z"));
        assert!(!ok("date-time", "2024-01-02T03:04:05"));
        assert!(!ok("date-time", ""));
        assert!(ok("duration", "1h30m"));
        assert!(ok("duration", "1.5s"));
        assert!(ok("duration", "-300ms"));
        assert!(ok("duration", "3 day"));
        assert!(ok("duration", "0"));
        assert!(ok("duration", "3 days"));
        assert!(ok("duration", "2 weeks"));
        assert!(!ok("duration", "3 fortnights"));
        assert!(!ok("duration", "soon"));
        assert_eq!(parse_go_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse_go_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_go_duration("5"), None);
        let t = parse_timestamp("2024-01-02T03:04:05.5+01:00").expect("parses");
        assert_eq!(t.to_rfc3339(), "2024-01-02T03:04:05.500+01:00");
        assert!(parse_timestamp("2024-01-02 03:04:05Z").is_none());
    }
}

/// The numeric formats the server checks on custom resources from 1.36
/// (kube-openapi passes the format to its number validator;
/// apiextensions-apiserver stops stripping `int32`/`float` from objects).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumericFormat {
    Int32,
    Float,
}

/// From this minor the numeric formats bind objects.
const NUMERIC_FORMATS_SINCE: u32 = 36;

impl NumericFormat {
    pub(crate) fn parse(name: &str, server_minor: u32) -> Option<NumericFormat> {
        if server_minor < NUMERIC_FORMATS_SINCE {
            return None;
        }
        match name {
            "int32" => Some(NumericFormat::Int32),
            "float" => Some(NumericFormat::Float),
            _ => None,
        }
    }

    /// Whether `n` fits, as kube-openapi checks it.
    pub(crate) fn fits(self, n: &serde_json::Number) -> bool {
        match self {
            NumericFormat::Int32 => match n.as_i64() {
                Some(i) => i32::try_from(i).is_ok(),
                // Not an integer: the type check reports it.
                None => n.as_f64().is_some_and(|f| f.fract() != 0.0),
            },
            NumericFormat::Float => n.as_f64().is_some_and(|f| f.abs() <= f64::from(f32::MAX)),
        }
    }

    /// Whether a `minimum`, `maximum` or `multipleOf` of `b` is a value of
    /// the format (`IsValueValidAgainstRange` on the bound): from 1.36 a
    /// bound that is not makes every value at the node fail, defaults
    /// included.
    pub(crate) fn holds_bound(self, b: f64) -> bool {
        match self {
            NumericFormat::Int32 => {
                b.fract() == 0.0 && b >= f64::from(i32::MIN) && b <= f64::from(i32::MAX)
            }
            NumericFormat::Float => b.abs() <= f64::from(f32::MAX),
        }
    }

    /// `integer with format int32`, as the server words it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            NumericFormat::Int32 => "integer with format int32",
            NumericFormat::Float => "number with format float",
        }
    }
}
