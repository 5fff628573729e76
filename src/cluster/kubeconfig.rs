//! Which cluster and credentials to use: kubeconfig files merged like
//! kubectl merges them, then kubectl's command-line overrides (`--server`,
//! `--token`, `--as`, ...) applied with client-go's precedence.
//!
//! The result is a kubeconfig with exactly one context, which kube-rs turns
//! into a client configuration (exec plugins, token files, certificate files
//! are still read by kube-rs).

use std::path::{Path, PathBuf};

use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};
use thiserror::Error;

use super::KubeFlags;

/// Why no cluster could be selected.
#[derive(Debug, Error)]
pub enum SelectError {
    /// A kubeconfig file could not be read or parsed.
    #[error("{path}: {detail}")]
    Read { path: String, detail: String },
    /// There is no kubeconfig at all, and no --server.
    #[error(
        "no kubeconfig found ($KUBECONFIG, ~/.kube/config): pass --kubeconfig, or --server with credentials"
    )]
    NoConfig,
    /// No context was named and the kubeconfig has no current-context.
    #[error(
        "no context: the kubeconfig sets no current-context (pass --context, or --server with credentials)"
    )]
    NoContext,
    /// The named context does not exist.
    #[error("context {0:?} not found in the kubeconfig")]
    UnknownContext(String),
    /// The named cluster does not exist (and no --server replaces it).
    #[error("cluster {0:?} not found in the kubeconfig")]
    UnknownCluster(String),
    /// The user named by --user does not exist.
    #[error("user {0:?} not found in the kubeconfig")]
    UnknownUser(String),
    /// The cluster has no server address.
    #[error("cluster {0:?} has no server address")]
    NoServer(String),
}

/// The kubeconfig files kubectl would read: `--kubeconfig`, else each file of
/// `KUBECONFIG` (missing ones skipped, like client-go), else `~/.kube/config`
/// if it exists.
fn sources(flags: &KubeFlags) -> Vec<(PathBuf, bool)> {
    if let Some(path) = &flags.kubeconfig {
        return vec![(path.clone(), true)];
    }
    if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        return std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| (p, false))
            .collect();
    }
    home_config().map(|p| vec![(p, false)]).unwrap_or_default()
}

fn home_config() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    Some(Path::new(&home).join(".kube").join("config"))
}

/// Reads and merges the kubeconfig files (first file to set a value wins).
pub fn load(flags: &KubeFlags) -> Result<Kubeconfig, SelectError> {
    let mut merged = Kubeconfig::default();
    for (path, required) in sources(flags) {
        if !required && !path.exists() {
            continue;
        }
        // The path is named once, as kubectl does ("stat PATH: no such
        // file or directory"). `read_from` also makes the file's relative
        // certificate paths absolute, so it does the reading.
        let one = Kubeconfig::read_from(&path).map_err(|e| SelectError::Read {
            path: path.display().to_string(),
            detail: match &e {
                kube::config::KubeconfigError::ReadConfig(io, _) => match io.kind() {
                    std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => io.to_string(),
                },
                _ => super::one_line(&e),
            },
        })?;
        merged = merged.merge(one).map_err(|e| SelectError::Read {
            path: path.display().to_string(),
            detail: super::one_line(&e),
        })?;
    }
    Ok(merged)
}

/// What was selected, for the report header.
#[derive(Debug, Clone)]
pub struct Selected {
    /// A single-context kubeconfig with the overrides applied.
    pub kubeconfig: Kubeconfig,
    /// The context name shown to the user (`(flags)` when none is used).
    pub context: String,
}

/// Picks context, cluster and user like kubectl and applies the flags.
///
/// Precedence follows client-go's `DirectClientConfig`: a flag replaces
/// the kubeconfig's value; `--certificate-authority` or
/// `--insecure-skip-tls-verify` replace both the CA and the skip setting;
/// `--server` without `--tls-server-name` clears the kubeconfig's
/// `tls-server-name`; `--token` wins over the kubeconfig's token file, and
/// over an exec plugin or auth provider (client-go does not run the plugin
/// when a token is given). Without `--context` and current-context, only
/// `--server` makes a usable configuration.
pub fn select(config: &Kubeconfig, flags: &KubeFlags) -> Result<Selected, SelectError> {
    let context_name = flags
        .context
        .clone()
        .or_else(|| config.current_context.clone().filter(|c| !c.is_empty()));
    let context = match &context_name {
        Some(name) => config
            .contexts
            .iter()
            .find(|c| &c.name == name)
            .map(|c| c.context.clone().unwrap_or_default())
            .ok_or_else(|| SelectError::UnknownContext(name.clone()))?,
        None if flags.server.is_some() || flags.cluster.is_some() => Context::default(),
        None if config.contexts.is_empty() && config.clusters.is_empty() => {
            return Err(SelectError::NoConfig);
        }
        None => return Err(SelectError::NoContext),
    };
    let cluster_name = flags.cluster.clone().unwrap_or(context.cluster.clone());
    let mut cluster = match config.clusters.iter().find(|c| c.name == cluster_name) {
        Some(named) => named.cluster.clone().unwrap_or_default(),
        None if flags.server.is_some() => Cluster::default(),
        None => return Err(SelectError::UnknownCluster(cluster_name)),
    };
    // Like kubectl, a --user that does not exist is an error; a context's
    // user that does not exist means no credentials.
    if let Some(name) = &flags.user
        && !config.auth_infos.iter().any(|u| &u.name == name)
    {
        return Err(SelectError::UnknownUser(name.clone()));
    }
    let user_name = flags.user.clone().or(context.user.clone());
    let mut user = user_name
        .as_ref()
        .and_then(|name| config.auth_infos.iter().find(|u| &u.name == name))
        .and_then(|named| named.auth_info.clone())
        .unwrap_or_default();

    override_cluster(&mut cluster, flags);
    override_user(&mut user, flags);
    if cluster.server.as_deref().is_none_or(str::is_empty) {
        return Err(SelectError::NoServer(cluster_name));
    }

    let shown = context_name.unwrap_or_else(|| "(flags)".to_string());
    let kubeconfig = Kubeconfig {
        clusters: vec![NamedCluster {
            name: "selected".into(),
            cluster: Some(cluster),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: "selected".into(),
            auth_info: Some(user),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: "selected".into(),
            context: Some(Context {
                cluster: "selected".into(),
                user: Some("selected".into()),
                // CRDs are cluster-scoped: the context's namespace is unused.
                namespace: None,
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some("selected".into()),
        ..Kubeconfig::default()
    };
    Ok(Selected {
        kubeconfig,
        context: shown,
    })
}

fn override_cluster(cluster: &mut Cluster, flags: &KubeFlags) {
    if let Some(server) = &flags.server {
        cluster.server = Some(server.clone());
    }
    if flags.insecure_skip_tls_verify || flags.certificate_authority.is_some() {
        cluster.insecure_skip_tls_verify = Some(flags.insecure_skip_tls_verify);
        cluster.certificate_authority = flags
            .certificate_authority
            .as_ref()
            .map(|p| p.display().to_string());
        cluster.certificate_authority_data = None;
    }
    if flags.tls_server_name.is_some() || flags.server.is_some() {
        cluster.tls_server_name = flags.tls_server_name.clone();
    }
}

fn override_user(user: &mut AuthInfo, flags: &KubeFlags) {
    if let Some(token) = &flags.token {
        user.token = Some(token.clone().into());
        user.token_file = None;
        user.exec = None;
        user.auth_provider = None;
    }
    if let Some(cert) = &flags.client_certificate {
        user.client_certificate = Some(cert.display().to_string());
        user.client_certificate_data = None;
    }
    if let Some(key) = &flags.client_key {
        user.client_key = Some(key.display().to_string());
        user.client_key_data = None;
    }
    if let Some(name) = &flags.impersonate {
        user.impersonate = Some(name.clone());
    }
    if !flags.impersonate_groups.is_empty() {
        user.impersonate_groups = Some(flags.impersonate_groups.clone());
    }
    if let Some(uid) = &flags.impersonate_uid {
        user.impersonate_uid = Some(uid.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Kubeconfig {
        Kubeconfig::from_yaml(
            r#"
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team-a}
- name: prod
  context: {cluster: prod-cluster, user: prod-user}
clusters:
- name: dev-cluster
  cluster: {server: "https://dev:6443", certificate-authority-data: QUJD, tls-server-name: dev.internal}
- name: prod-cluster
  cluster: {server: "https://prod:6443"}
users:
- name: dev-user
  user: {tokenFile: /tmp/t, exec: {command: get-token, apiVersion: client.authentication.k8s.io/v1}}
- name: prod-user
  user: {client-certificate-data: QUJD, client-key-data: QUJD}
"#,
        )
        .expect("test kubeconfig")
    }

    fn selected(flags: &KubeFlags) -> (Cluster, AuthInfo, String) {
        let s = select(&config(), flags).expect("selects");
        let cluster = s.kubeconfig.clusters[0].cluster.clone().unwrap_or_default();
        let user = s.kubeconfig.auth_infos[0]
            .auth_info
            .clone()
            .unwrap_or_default();
        (cluster, user, s.context)
    }

    #[test]
    fn the_current_context_is_used_without_flags() {
        let (cluster, user, context) = selected(&KubeFlags::default());
        assert_eq!(context, "dev");
        assert_eq!(cluster.server.as_deref(), Some("https://dev:6443"));
        assert_eq!(user.token_file.as_deref(), Some("/tmp/t"));
    }

    #[test]
    fn server_flag_clears_the_kubeconfig_tls_server_name() {
        let flags = KubeFlags {
            server: Some("https://10.0.0.1:6443".into()),
            ..KubeFlags::default()
        };
        let (cluster, _, _) = selected(&flags);
        assert_eq!(cluster.server.as_deref(), Some("https://10.0.0.1:6443"));
        assert_eq!(cluster.tls_server_name, None);
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("QUJD"));
    }

    #[test]
    fn insecure_flag_replaces_the_ca() {
        let flags = KubeFlags {
            insecure_skip_tls_verify: true,
            ..KubeFlags::default()
        };
        let (cluster, _, _) = selected(&flags);
        assert_eq!(cluster.insecure_skip_tls_verify, Some(true));
        assert_eq!(cluster.certificate_authority_data, None);
    }

    #[test]
    fn token_flag_wins_over_token_file_and_exec() {
        let flags = KubeFlags {
            token: Some("abc".into()),
            ..KubeFlags::default()
        };
        let (_, user, _) = selected(&flags);
        assert!(user.token.is_some());
        assert_eq!(user.token_file, None);
        assert!(user.exec.is_none());
    }

    #[test]
    fn impersonation_flags_are_carried() {
        let flags = KubeFlags {
            context: Some("prod".into()),
            impersonate: Some("jane".into()),
            impersonate_groups: vec!["a".into(), "b".into()],
            impersonate_uid: Some("42".into()),
            ..KubeFlags::default()
        };
        let (_, user, context) = selected(&flags);
        assert_eq!(context, "prod");
        assert_eq!(user.impersonate.as_deref(), Some("jane"));
        assert_eq!(user.impersonate_groups, Some(vec!["a".into(), "b".into()]));
        assert_eq!(user.impersonate_uid.as_deref(), Some("42"));
        assert!(user.client_certificate_data.is_some());
    }

    #[test]
    fn a_missing_context_is_a_clear_error_unless_server_is_given() {
        let mut config = config();
        config.current_context = None;
        assert!(matches!(
            select(&config, &KubeFlags::default()),
            Err(SelectError::NoContext)
        ));
        let flags = KubeFlags {
            server: Some("https://x:6443".into()),
            token: Some("t".into()),
            ..KubeFlags::default()
        };
        let s = select(&config, &flags).expect("flags alone are enough");
        assert!(matches!(
            select(&Kubeconfig::default(), &KubeFlags::default()),
            Err(SelectError::NoConfig)
        ));
        assert_eq!(s.context, "(flags)");
        assert!(matches!(
            select(
                &config,
                &KubeFlags {
                    context: Some("nope".into()),
                    ..KubeFlags::default()
                }
            ),
            Err(SelectError::UnknownContext(_))
        ));
        assert!(matches!(
            select(
                &config,
                &KubeFlags {
                    context: Some("prod".into()),
                    user: Some("nobody".into()),
                    ..KubeFlags::default()
                }
            ),
            Err(SelectError::UnknownUser(_))
        ));
    }
}
