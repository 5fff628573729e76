//! The only code that talks to the API server: connecting like kubectl,
//! reading live CRDs, server-side dry runs and applies, and the writes of a
//! storage-version migration.
//!
//! Errors are classified into what a user can act on (unreachable, TLS,
//! 401, 403, timeout), each one line that names the server or the denied
//! request, and never a credential.

mod client;
pub mod kubeconfig;
mod list;
pub mod ownership;
pub mod proxy;
pub mod tls;
mod write;

pub use list::{ListError, Page, ResourceRef};
pub use write::{Rewrite, RewriteError, StoredVersionsUpdate};

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::config::KubeConfigOptions;
use kube::{Api, Client, Config};
use serde_json::Value;
use thiserror::Error;

/// The field manager every write of this tool uses.
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
    /// Any other API error.
    #[error("the API server answered {code}: {message}")]
    Api { code: u16, message: String },
    /// The credentials could not be obtained (an exec plugin failed).
    #[error("cannot get credentials: {0}")]
    Credentials(String),
    /// Anything else on the way.
    #[error("request to {server} failed: {detail}")]
    Other { server: String, detail: String },
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
    /// The same connection without kube's own retries of 429/503/504, for
    /// writes that retry under their own bounded, counted policy.
    unretried: Client,
}

/// Builds a client the way kubectl would from these flags.
pub async fn connect(flags: &KubeFlags) -> Result<Connection, ClusterError> {
    let select_err = |e: &(dyn std::error::Error + 'static)| ClusterError::Kubeconfig(one_line(e));
    let merged = kubeconfig::load(flags).map_err(|e| select_err(&e))?;
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
    // The same connection without kube's retries, for writes that retry
    // under their own bounded, counted policy.
    let mut plain = config.clone();
    plain.default_retry = false;
    let unretried =
        client::build(plain, identity.clone(), proxy.clone()).map_err(|e| kubeconfig_err(&e))?;
    let client = client::build(config, identity, proxy).map_err(|e| kubeconfig_err(&e))?;
    Ok(Connection {
        client,
        context: selected.context,
        server,
        timeout: flags.request_timeout,
        install_hint,
        unretried,
    })
}

/// An error and its sources on one line. A failed exec credential plugin is
/// described without its command line, environment or output, which can
/// hold credentials (kube-rs's own message includes all three).
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
    /// context and server only label reports and errors. Writes use the same
    /// client, with whatever retries it has.
    pub fn from_client(client: Client, context: &str, server: &str) -> Connection {
        Connection {
            unretried: client.clone(),
            client,
            context: context.to_string(),
            server: server.to_string(),
            timeout: None,
            install_hint: None,
        }
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
        let lower = detail.to_lowercase();
        let server = self.server.clone();
        if lower.contains("certificate") || lower.contains("unknownissuer") || lower.contains("tls")
        {
            ClusterError::Tls { server, detail }
        } else if lower.contains("timed out")
            || lower.contains("timeout")
            || lower.contains("elapsed")
        {
            ClusterError::Timeout {
                server,
                after: self
                    .timeout
                    .map(|t| format!(" after {}s (--request-timeout)", t.as_secs_f64()))
                    .unwrap_or_default(),
            }
        } else if lower.contains("connect") || lower.contains("refused") || lower.contains("dns") {
            ClusterError::Unreachable { server, detail }
        } else {
            ClusterError::Other { server, detail }
        }
    }

    /// CRDs as untyped JSON, so every field the server returns survives.
    fn crds_dynamic(&self) -> Api<kube::core::DynamicObject> {
        Api::all_with(
            self.client.clone(),
            &kube::discovery::ApiResource::erase::<CustomResourceDefinition>(&()),
        )
    }

    /// The live CRD as JSON (status included), or `None` when it does not
    /// exist: a missing CRD is news, not an error.
    pub async fn get_crd(&self, name: &str) -> Result<Option<Value>, ClusterError> {
        match self.crds_dynamic().get_opt(name).await {
            Ok(Some(obj)) => self.to_value(obj).map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(self.classify(e)),
        }
    }

    /// Server-side-applies `manifest` with `dryRun=All`: the API server's own
    /// verdict on the update, or the object it would store, and whether a
    /// plain (unforced) apply would conflict with another field manager.
    pub async fn dry_run_apply(
        &self,
        name: &str,
        manifest: &Value,
    ) -> Result<DryRun, ClusterError> {
        let body = Patch::Apply(apply_body(manifest));
        let plain = PatchParams::apply(FIELD_MANAGER).dry_run();
        let conflict = match self.crds_dynamic().patch(name, &plain, &body).await {
            Ok(obj) => return Ok(DryRun::Accepted(self.to_value(obj)?)),
            Err(kube::Error::Api(status)) if status.code == 409 => Some(status.message.clone()),
            Err(kube::Error::Api(status)) if matches!(status.code, 400 | 422) => {
                return Ok(DryRun::Rejected(status.message.clone()));
            }
            Err(e) => return Err(self.classify(e)),
        };
        // Forced, to learn whether the CRD itself is valid.
        let forced = PatchParams::apply(FIELD_MANAGER).force().dry_run();
        match self.crds_dynamic().patch(name, &forced, &body).await {
            Ok(obj) => Ok(DryRun::Conflict {
                would_store: self.to_value(obj)?,
                message: conflict.unwrap_or_default(),
            }),
            Err(kube::Error::Api(status)) if matches!(status.code, 400 | 409 | 422) => {
                Ok(DryRun::Rejected(status.message.clone()))
            }
            Err(e) => Err(self.classify(e)),
        }
    }

    /// Server-side-applies `manifest` for real, as field manager
    /// [`FIELD_MANAGER`]. Without `force_conflicts`, fields owned by another
    /// manager make this fail with [`ApplyError::Conflict`], like kubectl.
    pub async fn apply(
        &self,
        name: &str,
        manifest: &Value,
        force_conflicts: bool,
    ) -> Result<Value, ApplyError> {
        let mut params = PatchParams::apply(FIELD_MANAGER);
        if force_conflicts {
            params = params.force();
        }
        match self
            .crds_dynamic()
            .patch(name, &params, &Patch::Apply(apply_body(manifest)))
            .await
        {
            Ok(obj) => Ok(self.to_value(obj)?),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                Err(ApplyError::Conflict(status.message.clone()))
            }
            Err(kube::Error::Api(status)) if matches!(status.code, 400 | 422) => {
                Err(ApplyError::Rejected(status.message.clone()))
            }
            Err(e) => Err(ApplyError::Cluster(self.classify(e))),
        }
    }

    /// Moves the fields that the `Update` managers `from` own on CRD `name`
    /// to our `Apply` manager, as `kubectl apply --server-side` does with
    /// what a client-side `kubectl apply` left (see [`ownership`]). The
    /// write is conditional on the resourceVersion read. `false` when there
    /// was nothing to move.
    pub async fn take_over_fields(&self, name: &str, from: &[&str]) -> Result<bool, ClusterError> {
        let Some(live) = self.get_crd(name).await? else {
            return Ok(false);
        };
        let managed = live["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let Some(fields) = ownership::take_over(&managed, from, FIELD_MANAGER) else {
            return Ok(false);
        };
        let patch = serde_json::json!({"metadata": {
            "resourceVersion": live["metadata"]["resourceVersion"],
            "managedFields": fields,
        }});
        self.crds_dynamic()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| self.classify(e))?;
        Ok(true)
    }

    /// Polls the CRD until it is `Established`, its names are refused, or
    /// `wait` runs out. A CRD that is not established serves nothing, so an
    /// apply is only done when this says so.
    pub async fn wait_established(
        &self,
        name: &str,
        wait: Duration,
    ) -> Result<Established, ClusterError> {
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

    fn to_value(&self, obj: kube::core::DynamicObject) -> Result<Value, ClusterError> {
        serde_json::to_value(obj).map_err(|e| ClusterError::Other {
            server: self.server.clone(),
            detail: e.to_string(),
        })
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

/// Why a real apply did not happen.
#[derive(Debug, Error)]
pub enum ApplyError {
    /// Another field manager owns fields this manifest sets (409).
    #[error("{0} (use --force-conflicts to take the fields over)")]
    Conflict(String),
    /// The server refuses the object (400/422).
    #[error("the API server refused it: {0}")]
    Rejected(String),
    /// The request itself failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
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
