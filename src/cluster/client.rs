//! Building the HTTP client from a resolved configuration: kube-rs's layers
//! (base URI, authentication, impersonation headers, timeouts), in kube-rs's
//! order, without its retry layer (retries are ours, [`super::retry`]),
//! over our TLS setup from [`super::tls`] and an optional HTTP proxy from
//! [`super::proxy`].

use base64::Engine;
use http::{HeaderValue, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::config::AuthInfo;
use kube::{Client, Config};
use rustls::pki_types::ServerName;
use secrecy::ExposeSecret;
use tower::ServiceBuilder;

use super::tls::{self, Identity};

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A credential file or inline value is unusable.
    #[error("{0}")]
    Credentials(String),
    /// The TLS settings cannot be used.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// kube-rs refused the configuration (exec plugin, token file, ...).
    #[error("{0}")]
    Kube(String),
}

/// Takes the client certificate and key out of `user` (files or inline
/// data), so that they reach rustls through [`tls::set_client_identity`]
/// rather than kube-rs's stricter path. `None` when the user has none.
pub fn take_identity(user: &mut AuthInfo) -> Result<Option<Identity>, BuildError> {
    let cert = read_pem(
        "client-certificate",
        user.client_certificate_data.take(),
        user.client_certificate.take(),
    )?;
    let key = read_pem(
        "client-key",
        user.client_key_data
            .take()
            .map(|k| k.expose_secret().to_string()),
        user.client_key.take(),
    )?;
    match (cert, key) {
        (Some(cert_pem), Some(key_pem)) => Ok(Some(Identity { cert_pem, key_pem })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(BuildError::Credentials(
            "the user has a client certificate but no client key".into(),
        )),
        (None, Some(_)) => Err(BuildError::Credentials(
            "the user has a client key but no client certificate".into(),
        )),
    }
}

/// Inline base64 data wins over a file, as in client-go.
fn read_pem(
    what: &str,
    data: Option<String>,
    file: Option<String>,
) -> Result<Option<Vec<u8>>, BuildError> {
    if let Some(data) = data.filter(|d| !d.is_empty()) {
        let clean: String = data.chars().filter(|c| !c.is_whitespace()).collect();
        return base64::engine::general_purpose::STANDARD
            .decode(clean)
            .map(Some)
            .map_err(|_| BuildError::Credentials(format!("{what}-data is not valid base64")));
    }
    match file.filter(|f| !f.is_empty()) {
        Some(path) => std::fs::read(&path)
            .map(Some)
            .map_err(|e| BuildError::Credentials(format!("{what} {path}: {e}"))),
        None => Ok(None),
    }
}

/// The client for `config`, presenting `identity` when given, connecting
/// through the HTTP proxy `proxy` (CONNECT) when given.
pub fn build(
    config: Config,
    identity: Option<Identity>,
    proxy: Option<Uri>,
) -> Result<Client, BuildError> {
    let mut tls_config = config.rustls_client_config().map_err(kube_err)?;
    if let Some(identity) = &identity {
        tls::set_client_identity(&mut tls_config, identity)?;
    }
    if !config.accept_invalid_certs
        && let Some(roots) = &config.root_cert
    {
        tls::set_roots(&mut tls_config, roots)?;
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    match proxy {
        None => with_connector(config, tls_config, http),
        Some(proxy) => {
            let mut tunnel = Tunnel::new(proxy.clone(), http);
            if let Some(auth) = proxy_authorization(&proxy) {
                tunnel = tunnel.with_auth(auth);
            }
            with_connector(config, tls_config, tunnel)
        }
    }
}

fn kube_err(e: kube::Error) -> BuildError {
    BuildError::Kube(super::one_line(&e))
}

/// `Proxy-Authorization: Basic ...` from the proxy URL's user info.
fn proxy_authorization(proxy: &Uri) -> Option<HeaderValue> {
    let (userinfo, _) = proxy.authority()?.as_str().rsplit_once('@')?;
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(userinfo).collect();
    let value = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(decoded)
    );
    HeaderValue::from_str(&value).ok()
}

/// kube-rs's layers over TLS over `inner` (a plain or proxied TCP connector).
fn with_connector<C>(
    config: Config,
    tls_config: rustls::ClientConfig,
    inner: C,
) -> Result<Client, BuildError>
where
    C: tower::Service<Uri> + Clone + Send + Sync + 'static,
    C::Response: hyper::rt::Read
        + hyper::rt::Write
        + hyper_util::client::legacy::connect::Connection
        + Send
        + Unpin
        + 'static,
    C::Future: Send + 'static,
    C::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = ServerName::try_from(name.clone())
            .map_err(|e| BuildError::Kube(format!("tls-server-name {name:?}: {e}")))?;
        https = https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    let mut connector =
        hyper_timeout::TimeoutConnector::new(https.enable_http1().wrap_connector(inner));
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let http_client: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer().map_err(kube_err)?)
        .layer(config.extra_headers_layer().map_err(kube_err)?)
        .map_err(Box::<dyn std::error::Error + Send + Sync>::from)
        .service(http_client);
    Ok(Client::new(service, config.default_namespace))
}
