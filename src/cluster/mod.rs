//! The only code that talks to the API server: connecting like kubectl,
//! reading live CRDs, server-side dry runs and applies, and the writes of a
//! storage-version migration.
//!
//! Errors are classified into what a user can act on (unreachable, TLS,
//! 401, 403, timeout), each one line that names the server or the denied
//! request, and never a credential.

pub mod access;
mod client;
pub mod conflict;
pub mod conversion;
pub mod kubeconfig;
mod list;
mod live_crds;
pub mod ownership;
pub mod proxy;
mod request;
pub mod retry;
mod storage_migration;
pub mod tls;
mod write;

pub use crate::crd::ResourceRef;
pub use list::{ListError, Page, ServerVersion};
pub use live_crds::LIST_FROM;
pub(crate) use request::{Attempt, GaveUp};
pub use retry::{RequestTrace, RetryNotice, RetryPolicy};
pub use storage_migration::{MigrationApi, MigrationCreate, MigrationState};
pub use write::{
    Deleted, RestoreError, Rewrite, RewriteError, StoredVersionsUpdate, created_by,
    only_status_moved, resource_version, same_content, same_managers,
};

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use hyper::body::Bytes;
use kube::api::{GetParams, Patch, PatchParams};
use kube::config::KubeConfigOptions;
use kube::{Client, Config};
use serde_json::Value;
use thiserror::Error;

/// The field manager of this tool's writes unless `--field-manager` names
/// another ([`Connection::with_field_manager`]).
pub const FIELD_MANAGER: &str = "kubectl-crd-safety";

/// kubectl-compatible connection flags. Those set replace the kubeconfig's
/// values as in kubectl (see [`kubeconfig::select`]).
#[derive(Debug, Clone, Default)]
pub struct KubeFlags {
    /// `--kubeconfig`; else `KUBECONFIG` (a `:`-joined list), else `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// `--cluster`.
    pub cluster: Option<String>,
    /// `--user`.
    pub user: Option<String>,
    /// `--request-timeout`.
    pub request_timeout: Option<Duration>,
    /// `--server`/`-s`.
    pub server: Option<String>,
    /// `--token`.
    pub token: Option<String>,
    /// `--certificate-authority`.
    pub certificate_authority: Option<PathBuf>,
    /// `--client-certificate`.
    pub client_certificate: Option<PathBuf>,
    /// `--client-key`.
    pub client_key: Option<PathBuf>,
    /// `--insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: bool,
    /// `--tls-server-name`.
    pub tls_server_name: Option<String>,
    /// `--as`.
    pub impersonate: Option<String>,
    /// `--as-group` (repeatable).
    pub impersonate_groups: Vec<String>,
    /// `--as-uid`.
    pub impersonate_uid: Option<String>,
}

/// Why the cluster could not answer.
#[derive(Debug, Error)]
pub enum ClusterError {
    /// The kubeconfig is missing or unusable.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// Nothing answers at the server address.
    #[error("cannot reach the API server at {server}: {detail}")]
    Unreachable { server: String, detail: String },
    /// The server's certificate is not trusted (or the TLS handshake failed).
    #[error("TLS handshake with {server} failed: {detail}")]
    Tls { server: String, detail: String },
    /// 401: the credentials were refused.
    #[error("{server} refused the credentials of context {context} (401 Unauthorized)")]
    Unauthorized { server: String, context: String },
    /// 403: the user may not do this.
    #[error("forbidden (403): {message}")]
    Forbidden { message: String },
    /// No answer within `--request-timeout`.
    #[error("request to {server} timed out{after}")]
    Timeout { server: String, after: String },
    /// A CRD's conversion webhook failed, so the server cannot hand out its
    /// objects in the version asked for: the webhook is what to fix, and no
    /// retry helps.
    #[error(
        "the conversion webhook of the CRD failed, so the API server cannot read its objects in \
         that version: {message}"
    )]
    ConversionWebhook { message: String },
    /// Any other API error.
    #[error("the API server answered {code}: {message}")]
    Api { code: u16, message: String },
    /// The credentials could not be obtained (an exec plugin failed).
    #[error("cannot get credentials: {0}")]
    Credentials(String),
    /// Anything else on the way.
    #[error("request to {server} failed: {detail}")]
    Other { server: String, detail: String },
    /// Transient failures (429, 5xx, lost connections) outlasted the retry
    /// policy; nothing was counted as complete.
    #[error("{last} (gave up after {tries} tries and {waited_secs:.1}s of waiting)")]
    GaveUp {
        last: Box<ClusterError>,
        tries: u32,
        waited_secs: f64,
    },
}

/// A connected client and what the report header says about it.
#[derive(Clone)]
pub struct Connection {
    /// The client.
    pub client: Client,
    /// The kubeconfig context in use.
    pub context: String,
    /// The API server URL.
    pub server: String,
    timeout: Option<Duration>,
    /// The exec plugin's `installHint`, for errors.
    install_hint: Option<String>,
    /// How transient failures are retried.
    retry_policy: RetryPolicy,
    /// Retries and traces of this connection (clones share it).
    log: Arc<retry::RequestLog>,
    /// Retries of the requests made through this clone only (see
    /// [`Connection::counting`]); they count in `log` too.
    own_retries: Arc<AtomicU64>,
    /// Whether the server has answered at least once: a refused connection
    /// after that is a restart, worth retrying; before, it is no server.
    reached: Arc<AtomicBool>,
    /// Ask for gzip-compressed answers, as kubectl does unless the cluster
    /// says `disable-compression: true`.
    compression: bool,
    /// The field manager of every write and dry run made through it, so
    /// that a dry run judges what the write will do.
    field_manager: Arc<str>,
}

/// Builds a client the way kubectl would from these flags.
pub async fn connect(flags: &KubeFlags) -> Result<Connection, ClusterError> {
    let select_err = |e: &(dyn std::error::Error + 'static)| ClusterError::Kubeconfig(one_line(e));
    let merged = kubeconfig::load(flags).map_err(|e| select_err(&e))?;
    if merged.clusters.is_empty() && flags.server.is_none() && in_cluster() {
        return connect_in_cluster(flags).await;
    }
    let mut selected = kubeconfig::select(&merged, flags).map_err(|e| select_err(&e))?;
    let install_hint = selected
        .kubeconfig
        .auth_infos
        .first()
        .and_then(|u| u.auth_info.as_ref())
        .and_then(|u| u.exec.as_ref())
        .and_then(|x| x.install_hint.clone());
    let kubeconfig_err = |e: &(dyn std::error::Error + 'static)| {
        ClusterError::Kubeconfig(with_install_hint(one_line(e), install_hint.as_deref()))
    };
    if let Some(exec) = selected
        .kubeconfig
        .auth_infos
        .first_mut()
        .and_then(|u| u.auth_info.as_mut())
        .and_then(|u| u.exec.as_mut())
    {
        interactive_mode(exec, std::io::stdin().is_terminal()).map_err(ClusterError::Kubeconfig)?;
    }
    let identity = match selected
        .kubeconfig
        .auth_infos
        .first_mut()
        .and_then(|u| u.auth_info.as_mut())
    {
        Some(user) => client::take_identity(user).map_err(|e| kubeconfig_err(&e))?,
        None => None,
    };
    let cluster_proxy = selected
        .kubeconfig
        .clusters
        .first_mut()
        .and_then(|c| c.cluster.as_mut())
        .and_then(|c| c.proxy_url.take());
    let mut config =
        Config::from_custom_kubeconfig(selected.kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| kubeconfig_err(&e))?;
    if let Some(t) = flags.request_timeout {
        config.connect_timeout = Some(t);
        config.read_timeout = Some(t);
        config.write_timeout = Some(t);
    }
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let proxy = proxy::choose(cluster_proxy.as_deref(), &config.cluster_url, |name| {
        std::env::var(name).ok()
    })
    .map_err(ClusterError::Kubeconfig)?;
    // Our retry policy is the only one: kube's would retry unseen and
    // uncounted, without a bound on the total time.
    config.default_retry = false;
    let compression = !config.disable_compression;
    let client = client::build(config, identity, proxy).map_err(|e| kubeconfig_err(&e))?;
    let mut conn = Connection::from_client(client, &selected.context, &server);
    conn.compression = compression;
    conn.timeout = flags.request_timeout;
    conn.install_hint = install_hint;
    Ok(conn)
}

/// Whether this process runs in a pod with a service account, as client-go
/// decides it: both service variables set.
fn in_cluster() -> bool {
    ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"]
        .iter()
        .all(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
}

/// Where a pod's service account files are (`token`, `ca.crt`,
/// `namespace`), as client-go reads them.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Names another directory of service account files, for a gate whose Job
/// mounts its token elsewhere and for the tests, which run the Job's exact
/// command outside a pod. client-go has no such override; without it the
/// behaviour is client-go's.
pub const SERVICE_ACCOUNT_DIR_ENV: &str = "CRD_SAFETY_SERVICE_ACCOUNT_DIR";

/// The pod's service account, as kubectl uses it when no kubeconfig file
/// exists (`serve` in its Deployment, a gate's Job). It is read as a
/// kubeconfig of one context would be, so the token file is re-read as the
/// kubelet rotates it and every other setting goes the usual way.
async fn connect_in_cluster(flags: &KubeFlags) -> Result<Connection, ClusterError> {
    use kube::config::{
        AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
    };
    let fail = |why: String| ClusterError::Kubeconfig(format!("in-cluster configuration: {why}"));
    let dir = std::env::var_os(SERVICE_ACCOUNT_DIR_ENV)
        .filter(|d| !d.is_empty())
        .map_or_else(
            || std::path::PathBuf::from(SERVICE_ACCOUNT_DIR),
            std::path::PathBuf::from,
        );
    let host = std::env::var("KUBERNETES_SERVICE_HOST").unwrap_or_default();
    let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_default();
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let token = dir.join("token");
    let ca = dir.join("ca.crt");
    for file in [&token, &ca] {
        if !file.is_file() {
            return Err(fail(format!(
                "{} is missing (a pod without a service account token?)",
                file.display()
            )));
        }
    }
    let namespace = std::fs::read_to_string(dir.join("namespace"))
        .ok()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    let name = "in-cluster".to_string();
    let kubeconfig = Kubeconfig {
        clusters: vec![NamedCluster {
            name: name.clone(),
            cluster: Some(Cluster {
                server: Some(format!("https://{host}:{port}")),
                certificate_authority: Some(ca.display().to_string()),
                ..Cluster::default()
            }),
            other: Default::default(),
        }],
        auth_infos: vec![NamedAuthInfo {
            name: name.clone(),
            auth_info: Some(AuthInfo {
                token_file: Some(token.display().to_string()),
                ..AuthInfo::default()
            }),
            other: Default::default(),
        }],
        contexts: vec![NamedContext {
            name: name.clone(),
            context: Some(Context {
                cluster: name.clone(),
                user: Some(name.clone()),
                namespace,
                ..Context::default()
            }),
            other: Default::default(),
        }],
        current_context: Some(name.clone()),
        ..Kubeconfig::default()
    };
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| fail(one_line(&e)))?;
    if let Some(t) = flags.request_timeout {
        config.connect_timeout = Some(t);
        config.read_timeout = Some(t);
        config.write_timeout = Some(t);
    }
    config.default_retry = false;
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let compression = !config.disable_compression;
    let client =
        client::build(config, None, None).map_err(|e| ClusterError::Kubeconfig(one_line(&e)))?;
    let mut conn = Connection::from_client(client, &name, &server);
    conn.compression = compression;
    conn.timeout = flags.request_timeout;
    Ok(conn)
}

/// Settles an exec plugin's `interactiveMode` as kubectl does: `Never`
/// gives it no terminal; `IfAvailable` (the default) gives it ours only when
/// stdin is one; `Always` without a terminal is an error. kube-rs hands an
/// interactive plugin our stdin and stderr, so without a terminal the
/// plugin runs as `Never`: its stderr, which may hold credentials, is then
/// captured and never printed.
fn interactive_mode(exec: &mut kube::config::ExecConfig, terminal: bool) -> Result<(), String> {
    use kube::config::ExecInteractiveMode as Mode;
    match exec.interactive_mode {
        Some(Mode::Never) => Ok(()),
        Some(Mode::Always) if !terminal => Err(
            "the exec credential plugin needs a terminal (interactiveMode: Always), but standard \
             input is not one"
                .into(),
        ),
        _ if !terminal => {
            exec.interactive_mode = Some(Mode::Never);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// An error and its sources on one line. A failed exec credential plugin is
/// described without its command line, environment or output, which can
/// hold credentials (kube-rs's own message includes all three).
/// What went wrong below a transport error, as its source chain says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    Tls,
    Timeout,
    Unreachable,
}

/// Walks `e`'s source chain (looking inside I/O errors, which hide their
/// inner error from `source()`) for the error types that say what happened,
/// instead of reading the wording: a TLS or timeout error anywhere wins over
/// the connection failure that wraps it.
fn cause(e: &(dyn std::error::Error + 'static)) -> Option<Cause> {
    let mut found = None;
    let mut current = Some(e);
    while let Some(err) = current {
        let here = match err.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .and_then(|inner| cause(inner))
                .or_else(|| io_cause(io)),
            None => cause_of(err),
        };
        match here {
            Some(Cause::Tls | Cause::Timeout) => return here,
            Some(Cause::Unreachable) => found = found.or(here),
            None => {}
        }
        current = err.source();
    }
    found
}

fn cause_of(err: &(dyn std::error::Error + 'static)) -> Option<Cause> {
    if err.is::<rustls::Error>() {
        return Some(Cause::Tls);
    }
    if err.is::<tokio::time::error::Elapsed>() {
        return Some(Cause::Timeout);
    }
    match err.downcast_ref::<hyper_util::client::legacy::Error>() {
        Some(h) if h.is_connect() => Some(Cause::Unreachable),
        _ => None,
    }
}

fn io_cause(io: &std::io::Error) -> Option<Cause> {
    use std::io::ErrorKind as K;
    match io.kind() {
        K::TimedOut => Some(Cause::Timeout),
        K::ConnectionRefused
        | K::ConnectionReset
        | K::ConnectionAborted
        | K::NotConnected
        | K::AddrNotAvailable
        | K::HostUnreachable
        | K::NetworkUnreachable => Some(Cause::Unreachable),
        _ => None,
    }
}

/// Why a connection failed, in kubectl's words where it has some ("The
/// connection to the server ... was refused - did you specify the right
/// host or port?"), from the innermost I/O error or DNS failure, instead
/// of the client stack's chain (`ServiceError: client error (Connect):`).
fn unreachable_detail(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use std::io::ErrorKind as K;
    let mut innermost = None;
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            let text = match io.kind() {
                K::ConnectionRefused => {
                    "connection refused - did you specify the right host or port?".to_string()
                }
                K::ConnectionReset => "connection reset by the server".to_string(),
                K::HostUnreachable => "no route to host".to_string(),
                K::NetworkUnreachable => "network is unreachable".to_string(),
                _ => {
                    let text = io.to_string();
                    // hyper-util's resolver: "failed to lookup address
                    // information: Name or service not known".
                    if text.contains("lookup address") {
                        format!("no such host ({text})")
                    } else {
                        text
                    }
                }
            };
            innermost = Some(text);
        }
        current = err.source();
    }
    innermost
}

fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(safe) = exec_failure(e) {
        return safe;
    }
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ").replace('\n', " ")
}

/// The credential-free description of an exec plugin failure anywhere in
/// `e`'s chain, if there is one.
fn exec_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use kube::client::AuthError;
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(auth) = err.downcast_ref::<AuthError>() {
            return match auth {
                AuthError::AuthExecStart(io) => {
                    Some(format!("cannot run the exec credential plugin: {io}"))
                }
                AuthError::AuthExecRun { out, .. } => Some(format!(
                    "the exec credential plugin failed ({})",
                    out.status
                )),
                AuthError::AuthExecParse(_) | AuthError::AuthExecSerialize(_) => {
                    Some("the exec credential plugin did not print a valid ExecCredential".into())
                }
                AuthError::AuthExec(_) => {
                    Some("the exec credential plugin returned no usable credential".into())
                }
                AuthError::MissingCommand
                | AuthError::ExecPluginFailed
                | AuthError::ExecMissingClusterInfo => {
                    Some(format!("exec credential plugin: {auth}"))
                }
                _ => None,
            };
        }
        current = err.source();
    }
    None
}

/// The exec plugin's `installHint`, added to a failure to start it, as
/// kubectl does.
fn with_install_hint(message: String, hint: Option<&str>) -> String {
    match hint {
        Some(hint) if message.contains("cannot run the exec credential plugin") => {
            format!(
                "{message}. {}",
                hint.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        }
        _ => message,
    }
}

impl Connection {
    /// A connection over a client built elsewhere (embedding, tests); the
    /// context and server only label reports and errors. Requests are retried
    /// under the default [`RetryPolicy`] (on top of any retries the client
    /// has itself); no compression is asked for.
    pub fn from_client(client: Client, context: &str, server: &str) -> Connection {
        Connection {
            client,
            context: context.to_string(),
            server: server.to_string(),
            timeout: None,
            install_hint: None,
            retry_policy: RetryPolicy::default(),
            log: Arc::default(),
            own_retries: Arc::default(),
            reached: Arc::default(),
            compression: false,
            field_manager: Arc::from(FIELD_MANAGER),
        }
    }

    /// A clone whose [`Connection::own_retries`] counts only the retries of
    /// requests made through it: the scans of several CRDs run at once on
    /// one connection, and each reports its own.
    pub fn counting(&self) -> Connection {
        Connection {
            own_retries: Arc::default(),
            ..self.clone()
        }
    }

    /// Requests retried so far among those made through this clone and its
    /// own clones since [`Connection::counting`] made it.
    pub fn own_retries(&self) -> u64 {
        self.own_retries.load(Ordering::Relaxed)
    }

    /// This connection with another retry policy.
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Connection {
        self.retry_policy = policy;
        self
    }

    /// This connection writing as field manager `name` (`--field-manager`):
    /// `kubectl` applies over what `kubectl apply --server-side` installed
    /// as the owner of those fields, with no conflict to force.
    pub fn with_field_manager(mut self, name: &str) -> Connection {
        self.field_manager = Arc::from(name);
        self
    }

    /// The field manager of this connection's writes.
    pub fn field_manager(&self) -> &str {
        &self.field_manager
    }

    /// This connection asking for gzip-compressed answers, or not.
    pub fn with_compression(mut self, on: bool) -> Connection {
        self.compression = on;
        self
    }

    /// The retry policy of every request.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry_policy
    }

    /// Requests retried so far on this connection.
    pub fn retries(&self) -> u64 {
        self.log.count()
    }

    /// Calls `f` before every retry (for a progress line).
    pub fn on_retry(&self, f: impl Fn(&RetryNotice) + Send + Sync + 'static) {
        self.log.observe(Box::new(f));
    }

    /// Calls `f` after every request with its outcome (for `-v`).
    pub fn on_request(&self, f: impl Fn(&RequestTrace) + Send + Sync + 'static) {
        self.log.trace_with(Box::new(f));
    }

    /// Counts a retry made by a caller's own loop (a migration's writes).
    pub fn note_retry(&self, notice: &RetryNotice) {
        self.log.note(notice);
    }

    fn classify(&self, e: kube::Error) -> ClusterError {
        if let kube::Error::Api(status) = &e {
            return match status.code {
                401 => ClusterError::Unauthorized {
                    server: self.server.clone(),
                    context: self.context.clone(),
                },
                403 => ClusterError::Forbidden {
                    message: status.message.clone(),
                },
                // apiextensions-apiserver: "conversion webhook for GVK failed: ...".
                500 if status.message.contains("conversion webhook for ") => {
                    ClusterError::ConversionWebhook {
                        message: status.message.clone(),
                    }
                }
                code => ClusterError::Api {
                    code,
                    message: status.message.clone(),
                },
            };
        }
        if let Some(exec) = exec_failure(&e) {
            return ClusterError::Credentials(with_install_hint(
                exec,
                self.install_hint.as_deref(),
            ));
        }
        let detail = one_line(&e);
        let server = self.server.clone();
        match cause(&e) {
            Some(Cause::Tls) => ClusterError::Tls { server, detail },
            Some(Cause::Timeout) => ClusterError::Timeout {
                server,
                after: self
                    .timeout
                    .map(|t| format!(" after {}s (--request-timeout)", t.as_secs_f64()))
                    .unwrap_or_default(),
            },
            Some(Cause::Unreachable) => ClusterError::Unreachable {
                server,
                detail: unreachable_detail(&e).unwrap_or(detail),
            },
            None => ClusterError::Other { server, detail },
        }
    }

    /// Requests about CRDs. Answers are kept as untyped JSON, so every
    /// field the server returns survives.
    fn crds(&self) -> kube::core::Request {
        kube::core::Request::new("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    }

    /// A request kube-core could not build (a bug, not a cluster problem).
    fn unbuildable(&self, e: kube::core::request::Error) -> ClusterError {
        ClusterError::Other {
            server: self.server.clone(),
            detail: e.to_string(),
        }
    }

    /// Every CRD's name with its `status.storedVersions`, in one LIST (what
    /// shell completion offers `migrate`). Only those two fields are kept
    /// from the answer.
    pub async fn stored_versions_of_crds(
        &self,
    ) -> Result<Vec<(String, Vec<String>)>, ClusterError> {
        #[derive(serde::Deserialize)]
        struct List {
            #[serde(default)]
            items: Vec<Item>,
        }
        #[derive(serde::Deserialize)]
        struct Item {
            metadata: Meta,
            #[serde(default)]
            status: Status,
        }
        #[derive(serde::Deserialize)]
        struct Meta {
            name: String,
        }
        #[derive(Default, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Status {
            #[serde(default)]
            stored_versions: Vec<String>,
        }
        let request = self
            .crds()
            .list(&kube::api::ListParams::default())
            .map_err(|e| self.unbuildable(e))?;
        let list: List = self
            .call("LIST crds", request)
            .await
            .map_err(|f| self.classify_failed(f))?;
        Ok(list
            .items
            .into_iter()
            .map(|i| (i.metadata.name, i.status.stored_versions))
            .collect())
    }

    /// The live CRD as JSON (status included), or `None` when it does not
    /// exist: a missing CRD is news, not an error.
    pub async fn get_crd(&self, name: &str) -> Result<Option<Value>, ClusterError> {
        let request = self
            .crds()
            .get(name, &GetParams::default())
            .map_err(|e| self.unbuildable(e))?;
        match self
            .call::<Value>(&format!("GET crd {name}"), request)
            .await
        {
            Ok(crd) => Ok(Some(crd)),
            Err(f) if f.code() == Some(404) => Ok(None),
            Err(f) => Err(self.classify_failed(f)),
        }
    }

    /// [`Connection::get_crd`], the JSON left unread: the webhook reads it
    /// off the async threads, straight into the model
    /// ([`crate::crd::Crd::from_json`]).
    pub async fn get_crd_json(&self, name: &str) -> Result<Option<Bytes>, ClusterError> {
        let request = self
            .crds()
            .get(name, &GetParams::default())
            .map_err(|e| self.unbuildable(e))?;
        match self.call_raw(&format!("GET crd {name}"), request).await {
            Ok(json) => Ok(Some(json)),
            Err(f) if f.code() == Some(404) => Ok(None),
            Err(f) => Err(self.classify_failed(f)),
        }
    }

    /// A server-side apply of `manifest` to CRD `name`. Retrying one is
    /// safe: applying the same configuration again as the same field
    /// manager changes nothing if the first one was stored.
    ///
    /// With `resource_version`, the applied configuration names it
    /// (`metadata.resourceVersion`), which the API server takes as a
    /// precondition: 409 if the CRD has moved on since.
    async fn patch_crd(
        &self,
        what: &str,
        name: &str,
        params: &PatchParams,
        manifest: &Value,
        resource_version: Option<&str>,
    ) -> Result<Value, request::Failed> {
        let mut body = apply_body(manifest);
        if let (Some(rv), Some(meta)) = (
            resource_version,
            body.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let body = Patch::Apply(body);
        let request = self
            .crds()
            .patch(name, params, &body)
            .map_err(|e| request::Failed {
                error: kube::Error::BuildRequest(e),
                tries: 0,
                waited: Duration::ZERO,
                exhausted: false,
            })?;
        self.call(&format!("{what} crd {name}"), request).await
    }

    /// Server-side-applies `manifest` with `dryRun=All`: the API server's own
    /// verdict on the update, or the object it would store, and whether a
    /// plain (unforced) apply would conflict with another field manager.
    ///
    /// With the `live` CRD, one forced dry run answers both: the fields it
    /// took from other managers are the conflicts a plain apply meets, and
    /// [`conflict::conflicts`] composes the server's refusal from them. A
    /// plain dry run is sent too only where that answer is not certain
    /// (`conflict`'s module says when), or for a CRD not installed yet.
    pub async fn dry_run_apply(
        &self,
        name: &str,
        manifest: &Value,
        live: Option<&Value>,
    ) -> Result<DryRun, ClusterError> {
        let forced = PatchParams::apply(self.field_manager()).force().dry_run();
        if let Some(live) = live {
            let obj = match self
                .patch_crd("dry-run", name, &forced, manifest, None)
                .await
            {
                Ok(obj) => obj,
                Err(f) if f.code() == Some(409) || f.refused() => {
                    return Ok(DryRun::Rejected(f.message()));
                }
                Err(f) => return Err(self.classify_failed(f)),
            };
            match conflict::conflicts(live, &obj, self.field_manager()) {
                Some(conflict::Conflicts::None) => return Ok(DryRun::Accepted(obj)),
                Some(conflict::Conflicts::Refused(message)) => {
                    return Ok(DryRun::Conflict {
                        would_store: obj,
                        message,
                    });
                }
                None => {}
            }
            let plain = PatchParams::apply(self.field_manager()).dry_run();
            return match self
                .patch_crd("dry-run", name, &plain, manifest, None)
                .await
            {
                Ok(stored) => Ok(DryRun::Accepted(stored)),
                Err(f) if f.code() == Some(409) => Ok(DryRun::Conflict {
                    would_store: obj,
                    message: f.message(),
                }),
                Err(f) if f.refused() => Ok(DryRun::Rejected(f.message())),
                Err(f) => Err(self.classify_failed(f)),
            };
        }
        let plain = PatchParams::apply(self.field_manager()).dry_run();
        let conflict = match self
            .patch_crd("dry-run", name, &plain, manifest, None)
            .await
        {
            Ok(obj) => return Ok(DryRun::Accepted(obj)),
            Err(f) if f.code() == Some(409) => Some(f.message()),
            Err(f) if f.refused() => return Ok(DryRun::Rejected(f.message())),
            Err(f) => return Err(self.classify_failed(f)),
        };
        // Forced, to learn whether the CRD itself is valid.
        match self
            .patch_crd("dry-run", name, &forced, manifest, None)
            .await
        {
            Ok(obj) => Ok(DryRun::Conflict {
                would_store: obj,
                message: conflict.unwrap_or_default(),
            }),
            Err(f) if f.code() == Some(409) || f.refused() => Ok(DryRun::Rejected(f.message())),
            Err(f) => Err(self.classify_failed(f)),
        }
    }

    /// Polls the CRD until it is `Established`, its names are refused, or
    /// `wait` runs out. A CRD that is not established serves nothing, so an
    /// apply is only done when this says so.
    pub async fn wait_established(
        &self,
        name: &str,
        wait: Duration,
        applied: Option<&Value>,
    ) -> Result<Established, ClusterError> {
        // The apply's answer carries the stored status: an update of an
        // established CRD whose names are the accepted ones is served as
        // it is, with no further request. New or renamed ones are polled,
        // as the naming and establishing controllers decide them later.
        if applied.is_some_and(settled) {
            return Ok(Established::Yes);
        }
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let Some(live) = self.get_crd(name).await? else {
                return Ok(Established::Gone);
            };
            let conditions = live["status"]["conditions"].as_array().cloned();
            let condition = |kind: &str| {
                conditions
                    .iter()
                    .flatten()
                    .find(|c| c["type"] == kind)
                    .map(|c| {
                        (
                            c["status"].as_str().unwrap_or_default().to_string(),
                            c["message"].as_str().unwrap_or_default().to_string(),
                        )
                    })
            };
            if let Some((status, message)) = condition("NamesAccepted")
                && status == "False"
            {
                return Ok(Established::NamesRefused(message));
            }
            if condition("Established").is_some_and(|(status, _)| status == "True") {
                return Ok(Established::Yes);
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(Established::TimedOut);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The API server's answer to a dry-run apply.
#[derive(Debug)]
pub enum DryRun {
    /// The object the server would store.
    Accepted(Value),
    /// Valid, but only a forced apply would store it: another field manager
    /// owns fields it changes (the server's message names them).
    Conflict { would_store: Value, message: String },
    /// The server refuses the update, in its own words.
    Rejected(String),
}

/// Why a real write of `apply` did not happen.
#[derive(Debug, Error)]
pub enum ApplyError {
    /// Another field manager owns fields this manifest sets (409).
    #[error("{0} (use --force-conflicts to take the fields over)")]
    Conflict(String),
    /// The CRD is no longer as it was checked: another client changed,
    /// created or deleted it in between (409 on the `resourceVersion`
    /// precondition, or on a create). Nothing was written, so their change
    /// stays.
    #[error(
        "changed by another client since it was checked, so it was not written (their change \
         stays): {0}"
    )]
    Changed(String),
    /// The server refuses the object (400/422, or an admission denial).
    #[error("the API server refused it: {0}")]
    Rejected(String),
    /// The request failed before the server's verdict: nothing was written.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The request failed after it may have reached the server (a lost
    /// answer, a timeout, retries that ran out): the write may have landed.
    #[error("{0} (whether the write landed is not known)")]
    Unsure(ClusterError),
}

/// Whether an applied CRD became usable.
#[derive(Debug, PartialEq, Eq)]
pub enum Established {
    /// `Established=True`.
    Yes,
    /// `NamesAccepted=False`: the names clash with another CRD.
    NamesRefused(String),
    /// Still not established when the wait ran out.
    TimedOut,
    /// Deleted while waiting.
    Gone,
}

/// The manifest without the fields the server owns, as server-side apply
/// wants it.
/// Whether a CRD as the server returned it is established under exactly
/// the names its spec asks for.
fn settled(crd: &Value) -> bool {
    let established = crd["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    });
    established
        && crd["spec"]["names"].is_object()
        && crd["spec"]["names"] == crd["status"]["acceptedNames"]
}

pub fn apply_body(manifest: &Value) -> Value {
    let mut body = manifest.clone();
    if let Some(obj) = body.as_object_mut() {
        obj.remove("status");
    }
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "managedFields",
            "generation",
            "selfLink",
        ] {
            meta.remove(key);
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_server_is_named_in_kubectls_words() {
        #[derive(Debug, thiserror::Error)]
        #[error("client error (Connect)")]
        struct Wrapper(#[source] std::io::Error);
        let refused = Wrapper(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(
            unreachable_detail(&refused).as_deref(),
            Some("connection refused - did you specify the right host or port?")
        );
        let dns = Wrapper(std::io::Error::other(
            "failed to lookup address information: Name or service not known",
        ));
        assert_eq!(
            unreachable_detail(&dns).as_deref(),
            Some("no such host (failed to lookup address information: Name or service not known)")
        );
    }
    use std::io::{Error as IoError, ErrorKind};

    #[test]
    fn the_source_chain_says_what_went_wrong() {
        let tls = IoError::other(rustls::Error::General("bad certificate".into()));
        assert_eq!(cause(&tls), Some(Cause::Tls));
        let timed_out = IoError::new(ErrorKind::TimedOut, "deadline");
        assert_eq!(cause(&timed_out), Some(Cause::Timeout));
        let refused = IoError::new(ErrorKind::ConnectionRefused, "no");
        assert_eq!(cause(&refused), Some(Cause::Unreachable));
        // A TLS failure wrapped in a connection error is a TLS failure.
        let wrapped = IoError::new(ErrorKind::ConnectionReset, tls);
        assert_eq!(cause(&wrapped), Some(Cause::Tls));
        // Wording alone decides nothing.
        let worded = IoError::other("tls timeout connect refused");
        assert_eq!(cause(&worded), None);
    }
}
