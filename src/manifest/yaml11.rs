//! What a plain YAML scalar means to kubectl, Helm and Argo CD.
//!
//! They all read manifests with sigs.k8s.io/yaml, which parses with go-yaml
//! v2 (YAML 1.1 resolution) and turns the result into JSON. A plain scalar
//! then reads differently from what YAML 1.2 readers (and people) see:
//! `y`, `yes`, `on`, `n`, `no`, `off` are booleans, keys included, `0755`
//! is octal, `1_000` is a thousand, and a key that resolved to anything but
//! a string is written back as one (`y:` becomes the key `"true"`). Since
//! what the API server stores is kubectl's reading, every reader of this
//! crate types plain scalars here, and where the two readings differ the
//! loader records a [`Reading`], which the report turns into a warning.
//!
//! The rules are read from go-yaml v2.4.2's `resolve.go` (the map of
//! special words, then by first character: a float for `.`, else a
//! timestamp, Go's `ParseInt`/`ParseUint` with base 0 after dropping
//! every `_`, then a float) and sigs.k8s.io/yaml v1.6.0's key conversion;
//! `tests/live/yaml_reading.rs` holds this module to the real reader.

use std::borrow::Cow;

use serde_json::Value;

use super::positions::Position;

/// A plain scalar kubectl reads otherwise than it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// Where the scalar is.
    pub position: Position,
    /// The scalar as written.
    pub written: String,
    /// What kubectl reads it as, in JSON (`true`, `493`, `"true"` for a key).
    pub read_as: String,
    /// A mapping key rather than a value.
    pub key: bool,
}

/// A [`Reading`] as a reader finds it: line and column in the document's
/// own text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Note {
    pub line: usize,
    pub column: usize,
    pub written: String,
    pub read_as: String,
    pub key: bool,
}

impl Note {
    pub(super) fn new(at: (usize, usize), written: &str, read_as: &str, key: bool) -> Note {
        Note {
            line: at.0,
            column: at.1,
            written: written.to_string(),
            read_as: read_as.to_string(),
            key,
        }
    }
}

/// A plain scalar as go-yaml v2 resolves it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str,
}

/// go-yaml v2's resolution of a plain (untagged, unquoted) scalar.
fn resolve(text: &str) -> Resolved {
    let Some(&first) = text.as_bytes().first() else {
        return Resolved::Null;
    };
    // Only these first characters can start anything but a string.
    if !matches!(first, b'+' | b'-' | b'0'..=b'9' | b'.' | b'~')
        && !matches!(
            first,
            b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O'
        )
    {
        return Resolved::Str;
    }
    if let Some(word) = special_word(text) {
        return word;
    }
    match first {
        b'.' => {
            // Go's ParseFloat of the text as written; `.5`, `.5e3`.
            if is_yaml_float(text) {
                finite(text)
            } else {
                Resolved::Str
            }
        }
        b'+' | b'-' | b'0'..=b'9' => {
            // A timestamp (`2001-12-14`) is kept as its text when read
            // into an interface, as it is here; no number has a `-` there.
            let plain: Cow<str> = if text.contains('_') {
                Cow::Owned(text.replace('_', ""))
            } else {
                Cow::Borrowed(text)
            };
            if let Some(i) = go_parse_int(&plain) {
                return Resolved::Int(i);
            }
            if let Some(u) = go_parse_uint(&plain) {
                return Resolved::Uint(u);
            }
            if is_yaml_float(&plain) {
                return finite(&plain);
            }
            Resolved::Str
        }
        _ => Resolved::Str,
    }
}

/// The words go-yaml v2 looks up before anything else (case as listed:
/// `yEs` is a string).
fn special_word(text: &str) -> Option<Resolved> {
    Some(match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Resolved::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Resolved::Bool(false)
        }
        "~" | "null" | "Null" | "NULL" => Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Resolved::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Resolved::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// A float Go parses without error: one past f64's range is an error there,
/// and the scalar stays a string.
fn finite(text: &str) -> Resolved {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() => Resolved::Float(f),
        _ => Resolved::Str,
    }
}

/// go-yaml's float pattern: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_float(t: &str) -> bool {
    let b = t.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseUint(s, 0, 64)`: `0x`, `0o`, `0b` prefixes, a
/// leading `0` for octal, no sign.
fn go_parse_uint(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (base, digits): (u32, &[u8]) = if b[0] == b'0' && b.len() >= 3 {
        match b[1].to_ascii_lowercase() {
            b'x' => (16, &b[2..]),
            b'o' => (8, &b[2..]),
            b'b' => (2, &b[2..]),
            _ => (8, &b[1..]),
        }
    } else if b[0] == b'0' {
        (8, &b[1..])
    } else {
        (10, b)
    };
    let mut n: u64 = 0;
    for &c in digits {
        let d = (c as char).to_digit(36)?;
        if d >= base {
            return None;
        }
        n = n.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let n = go_parse_uint(rest)?;
    if negative {
        if n <= 1 << 63 {
            Some((n as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(n).ok()
    }
}

/// Why kubectl cannot read a scalar at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// `.inf`, `.nan`: JSON has no such number.
    NotJson,
    /// A null key (`~:`), or one that resolved to a number past i64.
    Key,
}

impl Refusal {
    /// The error, in the words a user fixes it with.
    pub(super) fn message(self, text: &str) -> String {
        match self {
            Refusal::NotJson => format!(
                "`{text}` is read by kubectl as a number JSON cannot hold, and kubectl refuses the document: quote it"
            ),
            Refusal::Key => format!(
                "the key `{text}` cannot be a JSON object key for kubectl, which refuses the document: quote it"
            ),
        }
    }
}

/// kubectl's reading of a plain scalar value, as JSON reaches the API
/// server: a float with no fraction is an integer there (Go writes
/// `1.0` as `1`, and the server decodes it as one).
pub(super) fn value(text: &str) -> Result<Value, Refusal> {
    Ok(match resolve(text) {
        Resolved::Null => Value::Null,
        Resolved::Bool(b) => Value::Bool(b),
        Resolved::Int(i) => Value::from(i),
        Resolved::Uint(u) => Value::from(u),
        Resolved::Float(f) if !f.is_finite() => return Err(Refusal::NotJson),
        Resolved::Float(f) => json_float(f),
        Resolved::Str => Value::String(text.to_string()),
    })
}

/// A float as it comes out of Go's JSON encoder and into the API server.
fn json_float(f: f64) -> Value {
    // Integral and printed without an exponent (below 1e21), the server
    // reads it back as an int64 where it fits.
    if f.fract() == 0.0 && f.abs() < 9.2e18 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// kubectl's key for a plain mapping key: what it resolved to, written as
/// sigs.k8s.io/yaml writes a non-string key.
pub(super) fn key(text: &str) -> Result<Cow<'_, str>, Refusal> {
    Ok(match resolve(text) {
        Resolved::Str => Cow::Borrowed(text),
        Resolved::Bool(b) => Cow::Borrowed(if b { "true" } else { "false" }),
        Resolved::Int(i) => Cow::Owned(i.to_string()),
        Resolved::Float(f) => Cow::Owned(go_float32_g(f)),
        Resolved::Null | Resolved::Uint(_) => return Err(Refusal::Key),
    })
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, with go-yaml's names for
/// the infinities: the shortest digits that read back as the same float32,
/// in exponent form when the exponent is below -4 or 6 and above.
fn go_float32_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let short = format!("{:e}", f as f32);
    let (mantissa, exp) = short.split_once('e').unwrap_or((&short, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{}", f as f32)
}

/// Whether kubectl reads the plain value `text` (read as `kubectl`) other
/// than a YAML 1.2 reader does: YAML 1.2's core schema has only
/// `true`/`false` for booleans, decimal, `0o` and `0x` integers, and no
/// `_` in numbers.
pub(super) fn value_differs(text: &str, kubectl: &Value) -> bool {
    match (yaml12(text), kubectl) {
        (Resolved::Str, Value::String(_)) | (Resolved::Null, Value::Null) => false,
        (Resolved::Bool(a), Value::Bool(b)) => a != *b,
        (Resolved::Int(_) | Resolved::Uint(_) | Resolved::Float(_), Value::Number(n)) => {
            number(yaml12(text)) != n.as_f64()
        }
        _ => true,
    }
}

fn number(r: Resolved) -> Option<f64> {
    match r {
        Resolved::Int(i) => Some(i as f64),
        Resolved::Uint(u) => Some(u as f64),
        Resolved::Float(f) => Some(f),
        _ => None,
    }
}

/// A plain scalar by YAML 1.2's core schema (what the YAML 1.2 readers
/// and editors show).
fn yaml12(text: &str) -> Resolved {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        "true" | "True" | "TRUE" => return Resolved::Bool(true),
        "false" | "False" | "FALSE" => return Resolved::Bool(false),
        _ => {}
    }
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|c| c.is_ascii_digit()) {
        return text
            .parse::<i64>()
            .map(Resolved::Int)
            .unwrap_or_else(|_| finite(text));
    }
    for (prefix, radix) in [("0o", 8), ("0x", 16)] {
        if let Some(digits) = text.strip_prefix(prefix)
            && let Ok(u) = u64::from_str_radix(digits, radix)
            && !digits.starts_with(['+', '-'])
        {
            return Resolved::Uint(u);
        }
    }
    if is_yaml_float(text) {
        return finite(text);
    }
    match unsigned {
        ".inf" | ".Inf" | ".INF" => Resolved::Float(f64::INFINITY),
        _ => Resolved::Str,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_1_1_words_are_booleans_in_the_case_go_yaml_lists() {
        for t in [
            "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "TRUE",
        ] {
            assert_eq!(value(t), Ok(json!(true)), "{t}");
        }
        for t in ["n", "N", "no", "NO", "off", "Off", "OFF", "false", "False"] {
            assert_eq!(value(t), Ok(json!(false)), "{t}");
        }
        for t in ["yEs", "oN", "nO", "tRUE", "yes!", "o"] {
            assert_eq!(value(t), Ok(json!(t)), "{t}");
        }
    }

    #[test]
    fn numbers_read_as_go_reads_them() {
        let cases = [
            ("0777", json!(511)),
            ("0x1F", json!(31)),
            ("0o17", json!(15)),
            ("0b101", json!(5)),
            ("1_000", json!(1000)),
            ("+5", json!(5)),
            ("-0", json!(0)),
            ("08", json!(8)),
            ("1e3", json!(1000)),
            ("1.0", json!(1)),
            (".5", json!(0.5)),
            ("18446744073709551615", json!(18446744073709551615u64)),
            ("-9223372036854775808", json!(i64::MIN)),
            ("1e999", json!("1e999")),
            ("1:20", json!("1:20")),
            ("2001-12-14", json!("2001-12-14")),
            ("0x", json!("0x")),
            ("-", json!("-")),
            ("=", json!("=")),
        ];
        for (t, want) in cases {
            assert_eq!(value(t), Ok(want), "{t}");
        }
        assert_eq!(value(".inf"), Err(Refusal::NotJson));
        assert_eq!(value(".NaN"), Err(Refusal::NotJson));
    }

    #[test]
    fn keys_are_written_back_as_sigs_yaml_writes_them() {
        let cases = [
            ("y", "true"),
            ("Off", "false"),
            ("0x10", "16"),
            ("1.0", "1"),
            ("1.5", "1.5"),
            ("3.14159265", "3.1415927"),
            ("1e7", "1e+07"),
            ("0.00001", "1e-05"),
            ("spec", "spec"),
            ("yEs", "yEs"),
        ];
        for (t, want) in cases {
            assert_eq!(key(t).as_deref(), Ok(want), "{t}");
        }
        assert_eq!(key("~"), Err(Refusal::Key));
        assert_eq!(key("18446744073709551615"), Err(Refusal::Key));
    }

    #[test]
    fn only_real_differences_from_yaml_1_2_are_flagged() {
        let differs = |t: &str| value(t).is_ok_and(|v| value_differs(t, &v));
        for t in ["y", "yes", "on", "Off", "no", "0777", "1_000", "0b101"] {
            assert!(differs(t), "{t}");
        }
        for t in [
            "true", "False", "12", "-3", "1.5", "0x1F", "0o17", "1e3", "x", "~", "08", "08x",
        ] {
            assert!(!differs(t), "{t}");
        }
    }
}
