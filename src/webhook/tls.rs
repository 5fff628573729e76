//! The serving certificate, reloaded when its files change (cert-manager
//! and the kubelet rotate a mounted Secret by swapping a symlink): each new
//! TLS handshake takes the key pair in force, connections already open keep
//! theirs, so a rotation drops no request.
//!
//! With a client CA (`--client-ca-file`) the server also asks every client
//! for a certificate signed by it and refuses the handshake without one:
//! only the API server (given that certificate in its admission
//! kubeconfig) can then post reviews.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use thiserror::Error;

/// Why the certificate or key cannot be used.
#[derive(Debug, Error)]
pub enum CertError {
    /// A file cannot be read.
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The certificate file holds no PEM certificate.
    #[error("{path}: no PEM certificate in it")]
    NoCertificate { path: String },
    /// The key file holds no usable private key.
    #[error("{path}: {detail}")]
    Key { path: String, detail: String },
    /// The client CA file holds no usable CA certificate.
    #[error("{path}: {detail}")]
    ClientCa { path: String, detail: String },
}

/// The CA certificates client certificates must be signed by, read from a
/// PEM file (once, at start-up).
pub fn client_roots(path: &Path) -> Result<rustls::RootCertStore, CertError> {
    let bad = |detail: String| CertError::ClientCa {
        path: path.display().to_string(),
        detail,
    };
    let pem = read(path)?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| bad(format!("unreadable PEM ({e})")))?;
        roots
            .add(cert)
            .map_err(|e| bad(format!("not a usable CA certificate ({e})")))?;
    }
    if roots.is_empty() {
        return Err(bad("no PEM certificate in it".to_string()));
    }
    Ok(roots)
}

/// The files and what was last read from them.
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<(Vec<u8>, Arc<CertifiedKey>)>,
}

impl std::fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

/// A certificate, key or CA bundle is a few KiB, and a mounted Secret holds
/// at most 1 MiB: more is refused rather than read, whatever the path
/// links to (the files are read again on every rotation check).
const MAX_PEM_BYTES: u64 = 1 << 20;

fn read(path: &Path) -> Result<Vec<u8>, CertError> {
    use std::io::Read;
    let failed = |source| CertError::Read {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(failed)?;
    let mut data = Vec::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut data)
        .map_err(failed)?;
    if data.len() as u64 > MAX_PEM_BYTES {
        return Err(failed(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {MAX_PEM_BYTES} bytes, which no certificate or key is"),
        )));
    }
    Ok(data)
}

/// Both files' contents, as one value to compare with the last read.
fn contents(cert: &Path, key: &Path) -> Result<(Vec<u8>, Vec<u8>), CertError> {
    Ok((read(cert)?, read(key)?))
}

fn certified(
    cert_path: &Path,
    cert: &[u8],
    key_path: &Path,
    key: &[u8],
) -> Result<CertifiedKey, CertError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
        .filter_map(Result::ok)
        .collect();
    if chain.is_empty() {
        return Err(CertError::NoCertificate {
            path: cert_path.display().to_string(),
        });
    }
    let bad_key = |detail: String| CertError::Key {
        path: key_path.display().to_string(),
        detail,
    };
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|e| bad_key(format!("no PEM private key in it ({e})")))?;
    let signer = any_supported_type(&key).map_err(|e| bad_key(format!("unusable key: {e}")))?;
    let certified = CertifiedKey::new(chain, signer);
    certified
        .keys_match()
        .map_err(|e| bad_key(format!("the key does not match the certificate ({e})")))?;
    Ok(certified)
}

impl ReloadingCert {
    /// Reads both files; an error here stops `serve` from starting.
    pub fn load(cert_path: &Path, key_path: &Path) -> Result<ReloadingCert, CertError> {
        let (cert, key) = contents(cert_path, key_path)?;
        let loaded = certified(cert_path, &cert, key_path, &key)?;
        Ok(ReloadingCert {
            cert_path: cert_path.to_path_buf(),
            key_path: key_path.to_path_buf(),
            current: RwLock::new(([cert, key].concat(), Arc::new(loaded))),
        })
    }

    /// Reads the files again: `Ok(true)` when a new pair is now in force,
    /// `Ok(false)` when nothing changed. On error the old pair stays (a
    /// rotation caught between writing the two files is read again next
    /// time).
    pub fn reload(&self) -> Result<bool, CertError> {
        let (cert, key) = contents(&self.cert_path, &self.key_path)?;
        let both = [cert.as_slice(), key.as_slice()].concat();
        let same = match self.current.read() {
            Ok(c) => c.0 == both,
            Err(p) => p.into_inner().0 == both,
        };
        if same {
            return Ok(false);
        }
        let loaded = Arc::new(certified(&self.cert_path, &cert, &self.key_path, &key)?);
        match self.current.write() {
            Ok(mut c) => *c = (both, loaded),
            Err(p) => *p.into_inner() = (both, loaded),
        }
        Ok(true)
    }

    fn in_force(&self) -> Arc<CertifiedKey> {
        match self.current.read() {
            Ok(c) => Arc::clone(&c.1),
            Err(p) => Arc::clone(&p.into_inner().1),
        }
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.in_force())
    }
}

/// A TLS server configuration that takes its key pair from `cert`,
/// offering HTTP/1.1 only (the API server's webhook client speaks it), and
/// requiring a client certificate signed by `client_roots` when given.
pub fn server_config(
    cert: Arc<ReloadingCert>,
    client_roots: Option<rustls::RootCertStore>,
) -> Result<rustls::ServerConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?;
    let builder = match client_roots {
        None => builder.with_no_client_auth(),
        Some(roots) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| rustls::Error::General(format!("client CA: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_cert_resolver(cert);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pem_path_linked_to_an_endless_file_is_refused_with_the_limit() {
        let err = read(Path::new("/dev/zero")).expect_err("refused");
        assert!(
            err.to_string().contains("larger than 1048576 bytes"),
            "{err}"
        );
        assert!(err.to_string().starts_with("/dev/zero: "), "{err}");
    }
}
