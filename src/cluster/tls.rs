//! TLS as kubectl does it, on rustls.
//!
//! kube-rs's own rustls setup refuses two things Go's `crypto/tls` (and so
//! kubectl) accepts:
//!
//! - an X.509 **v1 client certificate** (`openssl x509 -req` without
//!   extensions): rustls checks that the key matches the certificate by
//!   parsing it with webpki, which only reads v3 (`UnsupportedCertVersion`).
//!   We hand rustls the certificate chain and the signing key directly; the
//!   server is the one that validates a client certificate anyway.
//! - a `certificate-authority` that is the **server's own certificate**
//!   rather than its issuer: Go trusts a leaf that is itself in the root
//!   pool; webpki only builds chains to an issuer (`UnknownIssuer`). Our
//!   verifier accepts a served certificate that is byte-for-byte one of the
//!   configured CA certificates, still checks its validity period and that
//!   it names the server (as Go does), and otherwise defers to webpki.
//!
//! Everything else (system roots when no CA is configured,
//! `insecure-skip-tls-verify`, exec-plugin certificates) stays kube-rs's.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, SignatureScheme};
use thiserror::Error;

/// Why the TLS settings cannot be used. Messages name files, never contents.
#[derive(Debug, Error)]
pub enum TlsError {
    /// The client certificate (file or data) has no PEM certificate.
    #[error("client certificate: {0}")]
    ClientCertificate(String),
    /// The client key (file or data) has no usable private key.
    #[error("client key: {0}")]
    ClientKey(String),
    /// The certificate authority cannot be used.
    #[error("certificate authority: {0}")]
    CertificateAuthority(String),
}

/// A client certificate and key, as PEM.
#[derive(Clone)]
pub struct Identity {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// Presents one fixed certificate chain, without webpki's key check.
#[derive(Debug)]
struct FixedClientCert(Arc<CertifiedKey>);

impl ResolvesClientCert for FixedClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        // Offer the certificate only if the key can sign in a scheme the
        // server accepts; otherwise the handshake goes on without one, as Go's does.
        self.0
            .key
            .choose_scheme(sigschemes)
            .map(|_| Arc::clone(&self.0))
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// Makes `config` present `identity` as its client certificate.
pub fn set_client_identity(
    config: &mut rustls::ClientConfig,
    identity: &Identity,
) -> Result<(), TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&identity.cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::ClientCertificate(format!("not PEM: {e}")))?;
    if chain.is_empty() {
        return Err(TlsError::ClientCertificate(
            "no CERTIFICATE block found".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&identity.key_pem).map_err(|e| {
        TlsError::ClientKey(format!(
            "no usable private key (PKCS#1, PKCS#8 or SEC1 PEM): {e}"
        ))
    })?;
    let signing = provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| TlsError::ClientKey(format!("unsupported key: {e}")))?;
    config.client_auth_cert_resolver =
        Arc::new(FixedClientCert(Arc::new(CertifiedKey::new(chain, signing))));
    Ok(())
}

/// Trusts what webpki trusts, plus a served certificate that is itself one
/// of the configured CA certificates (Go's rule for a leaf in the root pool).
#[derive(Debug)]
struct LeafOrChain {
    inner: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for LeafOrChain {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let chained = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        if chained.is_ok()
            || !self
                .pinned
                .iter()
                .any(|p| p.as_ref() == end_entity.as_ref())
        {
            return chained;
        }
        let parsed = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_name(&parsed, server_name)?;
        if !within_validity(end_entity, now) {
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Expired,
            ));
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Replaces `config`'s verifier with one over `roots` (DER) that also
/// accepts a served certificate found among them.
pub fn set_roots(config: &mut rustls::ClientConfig, roots: &[Vec<u8>]) -> Result<(), TlsError> {
    let mut store = rustls::RootCertStore::empty();
    let mut pinned = Vec::new();
    for der in roots {
        let cert = CertificateDer::from(der.clone());
        // A certificate webpki cannot use as an anchor may still be pinned.
        let _ = store.add(cert.clone());
        pinned.push(cert);
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider())
        .build()
        .map_err(|e| TlsError::CertificateAuthority(e.to_string()))?;
    config
        .dangerous()
        .set_certificate_verifier(Arc::new(LeafOrChain { inner, pinned }));
    Ok(())
}

/// Whether a client that trusts only `roots` (DER) would accept `chain`
/// (DER, leaf first) served for `server_name` at `now`, by the rules
/// [`set_roots`] applies (Go's: a leaf that is itself among the roots is
/// trusted): what the API server decides when it calls a conversion
/// webhook with its `caBundle`. The reason, in words, when it would not.
pub fn verify_serving(
    chain: &[Vec<u8>],
    roots: &[Vec<u8>],
    server_name: &str,
    now: UnixTime,
) -> Result<(), String> {
    let Some((leaf, intermediates)) = chain.split_first() else {
        return Err("it holds no certificate".into());
    };
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|e| format!("{server_name:?} is no server name: {e}"))?;
    let mut store = rustls::RootCertStore::empty();
    for der in roots {
        let _ = store.add(CertificateDer::from(der.clone()));
    }
    let pinned = roots.iter().cloned().map(CertificateDer::from).collect();
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider())
        .build()
        .map_err(|e| format!("the caBundle holds no usable CA certificate ({e})"))?;
    let verifier = LeafOrChain { inner, pinned };
    let intermediates: Vec<CertificateDer<'_>> = intermediates
        .iter()
        .map(|d| CertificateDer::from(d.as_slice()))
        .collect();
    verifier
        .verify_server_cert(
            &CertificateDer::from(leaf.as_slice()),
            &intermediates,
            &name,
            &[],
            now,
        )
        .map(|_| ())
        .map_err(|e| refusal(&e, server_name))
}

/// A verifier's refusal in a user's words.
fn refusal(e: &rustls::Error, server_name: &str) -> String {
    use rustls::CertificateError as C;
    let rustls::Error::InvalidCertificate(cert) = e else {
        return e.to_string();
    };
    match cert {
        C::UnknownIssuer => "it is not signed by a certificate of the caBundle".into(),
        C::BadSignature => "it is signed by another key than the caBundle's CA of that name (a CA \
                            rotated since?)"
            .into(),
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            format!("it does not name {server_name} (its DNS names are what the API server checks)")
        }
        C::Expired | C::ExpiredContext { .. } => "it has expired".into(),
        C::NotValidYet | C::NotValidYetContext { .. } => "it is not valid yet".into(),
        other => format!("{other:?}"),
    }
}

/// Whether `now` is within the certificate's notBefore..notAfter. A minimal
/// DER walk: Certificate → TBSCertificate → [version] serial sigAlg issuer
/// validity.
fn within_validity(der: &[u8], now: UnixTime) -> bool {
    let Some((not_before, not_after)) = validity(der) else {
        return false;
    };
    let now = now.as_secs();
    not_before <= now && now <= not_after
}

/// The notBefore and notAfter of a DER certificate, in seconds since the
/// epoch.
pub fn validity(der: &[u8]) -> Option<(u64, u64)> {
    let (cert, _) = der_item(der, 0x30)?;
    let (tbs, _) = der_item(cert, 0x30)?;
    let mut rest = tbs;
    if rest.first() == Some(&0xA0) {
        rest = der_skip(rest)?;
    }
    rest = der_skip(rest)?; // serial
    rest = der_skip(rest)?; // signature algorithm
    rest = der_skip(rest)?; // issuer
    let (validity, _) = der_item(rest, 0x30)?;
    let (nb, after) = der_time(validity)?;
    let (na, _) = der_time(after)?;
    Some((nb, na))
}

/// The contents of a DER item with `tag` at the start of `data`, and what
/// follows it.
fn der_item(data: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    if *data.first()? != tag {
        return None;
    }
    let (len, header) = match *data.get(1)? {
        n if n < 0x80 => (usize::from(n), 2),
        n => {
            let bytes = usize::from(n & 0x7F);
            if bytes == 0 || bytes > 4 {
                return None;
            }
            let mut len = 0usize;
            for b in data.get(2..2 + bytes)? {
                len = (len << 8) | usize::from(*b);
            }
            (len, 2 + bytes)
        }
    };
    let end = header.checked_add(len)?;
    Some((data.get(header..end)?, data.get(end..)?))
}

fn der_skip(data: &[u8]) -> Option<&[u8]> {
    let tag = *data.first()?;
    der_item(data, tag).map(|(_, rest)| rest)
}

/// A UTCTime or GeneralizedTime as seconds since the epoch.
fn der_time(data: &[u8]) -> Option<(u64, &[u8])> {
    let tag = *data.first()?;
    let (body, rest) = der_item(data, tag)?;
    let text = std::str::from_utf8(body).ok()?.strip_suffix('Z')?;
    let (year, rest_text) = match tag {
        0x17 => {
            let yy: u64 = text.get(0..2)?.parse().ok()?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, text.get(2..)?)
        }
        0x18 => (text.get(0..4)?.parse().ok()?, text.get(4..)?),
        _ => return None,
    };
    let num = |r: std::ops::Range<usize>| -> Option<u64> { rest_text.get(r)?.parse().ok() };
    let (month, day, hour, min, sec) =
        (num(0..2)?, num(2..4)?, num(4..6)?, num(6..8)?, num(8..10)?);
    Some((
        days_from_civil(year, month, day)? * 86400 + hour * 3600 + min * 60 + sec,
        rest,
    ))
}

/// Days from 1970-01-01 to a proleptic Gregorian date.
fn days_from_civil(y: u64, m: u64, d: u64) -> Option<u64> {
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y < 1970 {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::days_from_civil;

    #[test]
    fn civil_days_count_from_the_epoch() {
        assert_eq!(days_from_civil(1970, 1, 1), Some(0));
        assert_eq!(days_from_civil(2000, 3, 1), Some(11_017));
        assert_eq!(days_from_civil(2026, 11, 23), Some(20_780));
    }
}
