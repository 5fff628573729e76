//! `webhook.ValidateCABundle`: whether a conversion webhook's `caBundle`
//! can serve as TLS roots, worded as client-go words it. From 1.31 an
//! update of an established CRD is refused when its new caBundle cannot
//! (the webhook could not be called anyway: every conversion would fail).

use base64::Engine as _;
use rustls::pki_types::CertificateDer;

/// Why client-go cannot use `pem` as root certificates, or `None` when at
/// least one `CERTIFICATE` block parses (`x509.CertPool.AppendCertsFromPEM`).
pub fn ca_bundle_error(pem: &[u8]) -> Option<String> {
    let parses = |der: &[u8]| webpki::EndEntityCert::try_from(&CertificateDer::from(der)).is_ok();
    let mut rest = pem;
    while let Some((block, next)) = decode(rest) {
        if block.is_certificate() && parses(&block.bytes) {
            return None;
        }
        rest = next;
    }
    // `createErrorParsingCAData`: the first thing wrong, in order.
    let mut rest = pem;
    while !rest.is_empty() {
        let Some((block, next)) = decode(rest) else {
            return Some(unable("unable to parse bytes as PEM block"));
        };
        rest = next;
        if !block.is_certificate() {
            continue;
        }
        if let Err(e) = webpki::EndEntityCert::try_from(&CertificateDer::from(&block.bytes[..])) {
            return Some(unable(&format!("failed to parse certificate: {e:?}")));
        }
    }
    Some(unable("no valid certificate authority data seen"))
}

/// The DER of every `CERTIFICATE` block of `pem` that Go's
/// `AppendCertsFromPEM` would read (blocks with headers are skipped), parsed
/// or not.
pub fn certificate_blocks(pem: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = pem;
    while let Some((block, next)) = decode(rest) {
        if block.is_certificate() {
            out.push(block.bytes);
        }
        rest = next;
    }
    out
}

fn unable(why: &str) -> String {
    format!("unable to load root certificates: {why}")
}

/// One PEM block.
struct Block {
    kind: String,
    has_headers: bool,
    bytes: Vec<u8>,
}

impl Block {
    fn is_certificate(&self) -> bool {
        self.kind == "CERTIFICATE" && !self.has_headers
    }
}

const BEGIN: &[u8] = b"-----BEGIN ";
const END: &[u8] = b"\n-----END ";
const DASHES: &[u8] = b"-----";

/// The line up to `\n` without trailing spaces, tabs and `\r`, and what
/// follows it (Go's `pem.getLine`).
fn line(data: &[u8]) -> (&[u8], &[u8]) {
    let (l, rest) = match memchr::memchr(b'\n', data) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &data[data.len()..]),
    };
    let end = l
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r'))
        .map_or(0, |i| i + 1);
    (&l[..end], rest)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// The next block of `data` and what follows it, as Go's `pem.Decode`
/// finds them: malformed blocks are skipped, `None` when none is left.
fn decode(data: &[u8]) -> Option<(Block, &[u8])> {
    let mut rest = data;
    loop {
        rest = if rest.starts_with(BEGIN) {
            &rest[BEGIN.len()..]
        } else {
            let i = find(rest, b"\n-----BEGIN ")?;
            &rest[i + 1 + BEGIN.len()..]
        };
        let (type_line, after) = line(rest);
        rest = after;
        let Some(kind) = type_line.strip_suffix(DASHES) else {
            continue;
        };
        let mut has_headers = false;
        loop {
            if rest.is_empty() {
                return None;
            }
            let (l, next) = line(rest);
            if !l.contains(&b':') {
                break;
            }
            has_headers = true;
            rest = next;
        }
        let (end, trailer_at) = if !has_headers && rest.starts_with(&END[1..]) {
            (0, END.len() - 1)
        } else {
            match find(rest, END) {
                Some(i) => (i, i + END.len()),
                None => continue,
            }
        };
        let trailer = &rest[trailer_at..];
        let trailer_len = kind.len() + DASHES.len();
        if trailer.len() < trailer_len
            || !trailer[..trailer_len].starts_with(kind)
            || !trailer[..trailer_len].ends_with(DASHES)
            || !line(&trailer[trailer_len..]).0.is_empty()
        {
            continue;
        }
        let body: Vec<u8> = rest[..end]
            .iter()
            .copied()
            .filter(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .collect();
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(&body) else {
            continue;
        };
        let (_, after_end) = line(&rest[(end + END.len()).saturating_sub(1)..]);
        return Some((
            Block {
                kind: String::from_utf8_lossy(kind).into_owned(),
                has_headers,
                bytes,
            },
            after_end,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed P-256 CA made with openssl for these tests.
    const TEST_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBkTCCATegAwIBAgIUWf3VZFoeGy7NN5slkV+xNSTfGr4wCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSY3JkLXNhZmV0eS10ZXN0LWNhMCAXDTI2MTEyNjExNDM1NVoY
DzIxMjYxMTAyMTE0MzU1WjAdMRswGQYDVQQDDBJjcmQtc2FmZXR5LXRlc3QtY2Ew
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATEHPZhU+7AAKwBkhJY9IPNkzjmiXW/
JlafTox5J4FB0JNFJg51QoHUTNyNWSKzyM14U3Ac6a9ecJloWQCrpSu5o1MwUTAd
BgNVHQ4EFgQU4Am3eiv2y5tA5247jar0+vKhEjYwHwYDVR0jBBgwFoAU4Am3eiv2
y5tA5247jar0+vKhEjYwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBF
AiBXgGTbZ2RWTLQMPOrt0CgGPf+Z5G6ObiQBr5f2y5xbQgIhANay8ARkX3L9Eq0h
0Oxyag6Igai60cbVDe1KDPrG0CQk
-----END CERTIFICATE-----
";

    #[test]
    fn what_is_not_pem_cannot_be_parsed() {
        assert_eq!(
            ca_bundle_error(b"foo").as_deref(),
            Some("unable to load root certificates: unable to parse bytes as PEM block")
        );
    }

    #[test]
    fn a_pem_block_of_another_kind_is_no_authority() {
        let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert_eq!(
            ca_bundle_error(key.as_bytes()).as_deref(),
            Some("unable to load root certificates: no valid certificate authority data seen")
        );
    }

    #[test]
    fn a_certificate_block_that_is_no_certificate_fails_to_parse() {
        let bad = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let e = ca_bundle_error(bad.as_bytes()).unwrap_or_default();
        assert!(
            e.starts_with("unable to load root certificates: failed to parse certificate: "),
            "{e}"
        );
        // Base64 that does not decode: the block is skipped as malformed.
        let broken = "-----BEGIN CERTIFICATE-----\nA!A\n-----END CERTIFICATE-----\n";
        assert_eq!(
            ca_bundle_error(broken.as_bytes()).as_deref(),
            Some("unable to load root certificates: unable to parse bytes as PEM block")
        );
    }

    #[test]
    fn a_real_certificate_is_accepted() {
        let pem = TEST_CA.as_bytes();
        assert_eq!(ca_bundle_error(pem), None);
        // Whatever else surrounds it.
        let mut with_key =
            b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_vec();
        with_key.extend_from_slice(pem);
        assert_eq!(ca_bundle_error(&with_key), None);
    }
}
