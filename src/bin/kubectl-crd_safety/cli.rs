//! Command-line definitions: what the user typed. `options` turns these
//! into the library's option types; nothing here does work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use crd_safety::cluster_write::migrate::Engine;
use crd_safety::config::{FailMode, Mode};
use crd_safety::crd_validation::KubeVersion;
use crd_safety::manifest::InputLimits;
pub use crd_safety::report::OutputFormat;

/// The exit codes of the report commands, as a literal so each command's
/// help can put its examples before them.
macro_rules! exit_codes {
    () => {
        "Exit codes:
  0  no error findings (warnings and info may be present)
  1  at least one error finding (never with --mode warn)
  2  usage, configuration or input error (bad YAML, not a CRD, unreadable path)
  3  cluster error (unreachable, TLS, 401/403, timeout), live commands only
  4  apply and migrate: the answer to the confirmation was no
  5  apply only: left half applied (a CRD written could not be restored)
  130  apply and migrate: interrupted (Ctrl-C, SIGTERM); apply restored what it wrote"
    };
}

/// Every kind of input a command reads CRDs from, for the top-level help.
macro_rules! sources {
    () => {
        "Where CRDs come from (OLD, NEW, -f and lint's PATH take any of these):
  FILE.yaml, DIR          files, or every YAML file under a directory (recursively)
  -                       standard input
  git:REF:PATH            a file or directory as it is at a git revision (git:main:config/crd)
  CHART_DIR, CHART.tgz    a Helm chart: its crds/ and templates rendered with its default values
  kustomize:DIR, -k DIR   a kustomization, rendered
  the live cluster        apply-check, apply, migrate and serve read it through the kubeconfig"
    };
}

macro_rules! apply_exit_codes {
    () => {
        "Exit codes:
  0  applied (or nothing to change)
  1  not applied: error findings (use --force to apply anyway), another field manager owns
     fields the manifests change and nobody said yes to taking them over on a terminal (use
     --force-conflicts, or --field-manager to apply as their owner), or --yes without
     --override-owners for a CRD that Helm, Argo CD, Flux or OLM manages
  2  usage, configuration or input error, or no terminal to confirm on and no --yes
  3  cluster error, or a write failed or met another client's change (CONFLICT): every CRD is
     as it was checked, the ones already written restored (the outcome table says each state)
  4  not applied: the answer to the confirmation was no
  5  left half applied: a CRD written could not be restored, or restoring it was not safe (a
     created CRD that has objects now, a change by someone else since); the table names them
  130  interrupted (Ctrl-C, SIGTERM) during the writes: no more started, and the CRDs already
     written were restored"
    };
}

macro_rules! migrate_exit_codes {
    () => {
        "Exit codes:
  0  migrated (storedVersions is now just the storage version), nothing to do, or a clean
     --dry-run
  1  not migrated: objects a rewrite would reject, or fields it would drop (use --allow-pruning
     to accept the loss)
  2  usage or input error (an unknown CRD), or no terminal to confirm on and no --yes
  3  cluster error, or objects that could not be rewritten: storedVersions untouched
  4  not migrated: the answer to the confirmation was no
  130  interrupted (Ctrl-C): writes in flight finished, storedVersions untouched; run again"
    };
}

macro_rules! serve_exit_codes {
    () => {
        "Exit codes:
  0  stopped by SIGTERM or Ctrl-C after answering the requests in flight
  2  unusable certificate, key or configuration, or the address cannot be listened on
  3  cluster error: the kubeconfig or in-cluster service account cannot be used"
    };
}

/// Will this CRD update break the cluster?
#[derive(Debug, Parser)]
#[command(
    name = "kubectl crd-safety",
    bin_name = "kubectl crd-safety",
    version,
    about = "Will this CustomResourceDefinition update break the cluster?",
    long_about = "Compares CustomResourceDefinitions before they are applied and reports every change \
that would be rejected by the API server, block updates of existing objects, silently drop stored data, \
or break clients.",
    after_help = concat!(sources!(), "\n\n", exit_codes!())
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compare old and new CRD manifests offline (files, directories or -), no cluster needed.
    #[command(after_help = concat!("Examples:
  # Two releases of an operator's CRDs, offline
  kubectl crd-safety diff v1.3/config/crd/bases/ config/crd/bases/
  # This branch against main, read from git (no checkout needed)
  kubectl crd-safety diff git:main:config/crd/bases config/crd/bases
  # A Helm chart's CRDs, as GitHub Actions annotations
  kubectl crd-safety diff ./chart-1.4.0/ ./chart/ -o github

", exit_codes!()))]
    Diff(DiffArgs),
    /// Compare manifests with the live cluster (its real status.storedVersions) and let the API
    /// server dry-run the update. Changes nothing.
    #[command(
        name = "apply-check",
        override_usage = "kubectl crd-safety apply-check (-f PATH... | -k DIR) [OPTIONS]",
        after_help = concat!("Examples:
  # Before upgrading an operator: what would its CRDs do to this cluster?
  kubectl crd-safety apply-check -f crds/
  # ...and which stored objects the new schemas reject or prune
  kubectl crd-safety apply-check -f crds/ --objects
  # Another context, as JSON
  kubectl crd-safety apply-check -f crds/ --context prod -o json

", exit_codes!())
    )]
    ApplyCheck(ApplyCheckArgs),
    /// Run apply-check, show the report, ask, then server-side apply the CRDs that change and
    /// wait for each to be Established; at a failure, restore the ones already written. Refuses
    /// when there are error findings unless --force.
    #[command(
        override_usage = "kubectl crd-safety apply (-f PATH... | -k DIR) [OPTIONS]",
        after_help = concat!("Examples:
  # Check, show, ask, apply
  kubectl crd-safety apply -f crds/
  # In a pipeline: no question, stop at any error finding
  kubectl crd-safety apply -f crds/ --yes

", apply_exit_codes!())
    )]
    Apply(ApplyArgs),
    /// Check CRD manifests on their own, with no old side (a first release): everything the API
    /// server would refuse (invalidCrd) and data lost between served versions.
    #[command(after_help = concat!("Examples:
  # A first release: would Kubernetes 1.30 accept these CRDs?
  kubectl crd-safety lint config/crd/bases/ --kube-version 1.30

", exit_codes!()))]
    Lint(LintArgs),
    /// Finish a storage-version migration: check every object against the storage version's
    /// schema, ask, rewrite every object in the storage version, then set status.storedVersions
    /// to the storage version alone (so a release may drop the old versions).
    #[command(after_help = concat!("Examples:
  # What a migration would do, changing nothing
  kubectl crd-safety migrate widgets.example.com --dry-run
  # Migrate, so the next release may drop v1alpha1
  kubectl crd-safety migrate widgets.example.com

", migrate_exit_codes!()))]
    Migrate(MigrateArgs),
    /// Serve a validating admission webhook that judges every create, update and delete of a
    /// CustomResourceDefinition with the checks of apply-check (see docs/webhook.md).
    #[command(after_help = concat!("Examples:
  # What the chart's pods run (docs/webhook.md)
  kubectl-crd_safety serve --tls-cert-file /tls/tls.crt --tls-private-key-file /tls/tls.key \\
    --config /config/config.yaml

", serve_exit_codes!()))]
    Serve(ServeArgs),
    /// Write a consumer's requirement on a CRD they depend on (a CRDRequirement): the CRD as it
    /// is now, the versions and fields they use. diff, lint and apply-check judge new CRDs
    /// against it with --requirements (see docs/requirements.md).
    #[command(after_help = "Examples:
  # Pin the installed Gateway API HTTPRoute CRD, for the fields our manifests use
  kubectl crd-safety require ingress-team/gateway-routes --crd httproutes.gateway.networking.k8s.io \\
    --fields-from deploy/routes/ --owner ingress-team --contact '#ingress' > gateway-routes.yaml
  # From a release's manifests, two fields, the storage version only
  kubectl crd-safety require certs --crd certificates.cert-manager.io --from cert-manager.crds.yaml \\
    --fields spec.secretName,spec.dnsNames --versions storage

Exit codes:
  0  written
  2  usage or input error (the CRD is not there, a field or version it does not have)
  3  cluster error (--from cluster)")]
    Require(RequireArgs),
    /// Show each requirement and whether the installed CRD (or the one files hold) meets it,
    /// with what breaks it.
    #[command(after_help = "Examples:
  # The cluster's own requirements (its CRDRequirement objects, which serve enforces)
  kubectl crd-safety requirements
  # Every requirement of a directory against the cluster
  kubectl crd-safety requirements --requirements requirements/
  # ...against a release about to be applied, offline
  kubectl crd-safety requirements --requirements requirements/ -f crds/

Exit codes:
  0  every requirement is met (warnings may be present)
  1  a requirement is not met: an error finding against it, or its CRD is missing
  2  usage, configuration or input error (a malformed requirement names its file and line)
  3  cluster error")]
    Requirements(RequirementsArgs),
    /// The Helm plugin's commands (`helm crd-safety upgrade RELEASE CHART`, docs/helm-plugin.md).
    #[command(subcommand)]
    Helm(HelmCommand),
    /// List every check with its id, default severity and what it catches.
    Checks,
    /// Print the shell completion script of the binary (for `kubectl crd-safety`, kubectl 1.26+
    /// completes through the kubectl_complete-crd_safety helper shipped next to it).
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Answer a completion request in cobra's protocol (what kubectl_complete-crd_safety calls).
    #[command(name = "__complete", hide = true)]
    Complete {
        /// The words typed after `kubectl crd-safety`, the last one partial.
        #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
        words: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum HelmCommand {
    /// What `helm upgrade RELEASE CHART` would do to the cluster's CRDs: helm renders the upgrade
    /// (its flags: -f/--values, --set..., --version, --reuse-values, --reset-values, ...), then the
    /// live check of apply-check runs on the CRDs it would apply, with the chart's crds/ (which
    /// helm upgrade never applies) and the CRDs it would delete. Every other flag is apply-check's
    /// (--objects, -o, --config, ...). Changes nothing.
    #[command(
        override_usage = "helm crd-safety upgrade RELEASE CHART [HELM UPGRADE FLAGS] [APPLY-CHECK FLAGS]",
        after_help = concat!("Examples:
  # Before an operator upgrade: what would it do to its CRDs and their stored objects?
  helm crd-safety upgrade my-operator my-repo/operator --version 2.0.0 -f values.yaml --objects
  # Without helm's plugin manager
  kubectl-crd_safety helm upgrade my-operator ./chart -n operators --reuse-values

", exit_codes!())
    )]
    Upgrade(HelmUpgradeArgs),
}

#[derive(Debug, Args)]
pub struct HelmUpgradeArgs {
    /// The release.
    pub release: String,
    /// The chart, as helm upgrade takes it (a path, repo/name, oci://...).
    pub chart: String,
    /// helm upgrade's flags and apply-check's, in any order.
    #[arg(
        allow_hyphen_values = true,
        trailing_var_arg = true,
        value_name = "FLAGS"
    )]
    pub flags: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to serve HTTPS on.
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:8443")]
    pub listen: std::net::SocketAddr,
    /// PEM certificate chain to serve (reloaded when the file changes).
    #[arg(long, value_name = "FILE")]
    pub tls_cert_file: PathBuf,
    /// PEM private key of the certificate (reloaded with it).
    #[arg(long, value_name = "FILE")]
    pub tls_private_key_file: PathBuf,
    /// PEM CA certificate(s): require every client to present a certificate signed by one of
    /// them (give the API server one in its admission kubeconfig; see docs/webhook.md).
    #[arg(long, value_name = "FILE")]
    pub client_ca_file: Option<PathBuf>,
    /// Configuration file, the CLI's format with its webhook section (reloaded when it changes).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// How often the certificate and the configuration are read again.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crd_safety::duration::parse)]
    pub reload_interval: std::time::Duration,
    /// Refuse request bodies larger than this many bytes (413).
    #[arg(long, value_name = "BYTES", default_value_t = 8 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// After SIGTERM, keep answering this long while /readyz fails, so endpoints stop routing
    /// to this pod before it stops accepting.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crd_safety::duration::parse)]
    pub shutdown_delay: std::time::Duration,
    /// Then wait at most this long for requests in flight.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = crd_safety::duration::parse)]
    pub drain_timeout: std::time::Duration,
    /// Close a connection whose TLS handshake or request header has not arrived within this
    /// long (also the idle time after which a kept-alive connection is closed).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crd_safety::duration::parse)]
    pub header_read_timeout: std::time::Duration,
    /// Answer 408 to a request whose body has not arrived within this long.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crd_safety::duration::parse)]
    pub body_read_timeout: std::time::Duration,
    /// Connections open at once; more are closed as soon as accepted.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_connections: usize,
    /// Memory that judgments and object scans may hold at once (bytes, or Ki/Mi/Gi). Reviews
    /// beyond it wait; one that alone needs more is answered by failMode.
    #[arg(long, value_name = "SIZE", default_value = "64Mi", value_parser = crd_safety::webhook::parse_size)]
    pub memory_budget: u64,
    /// Request bodies held in memory at once (bytes, or Ki/Mi/Gi; at least --max-body-bytes).
    /// A review whose body finds no room waits unread; past its deadline it gets a 503.
    #[arg(long, value_name = "SIZE", default_value = "8Mi", value_parser = crd_safety::webhook::parse_size)]
    pub body_memory: u64,
    /// The most read of the config file, at start and at each reload (bytes, or Ki/Mi/Gi; at
    /// least 4Ki).
    #[arg(long, value_name = "SIZE", default_value = "64Mi", value_parser = parse_input_size)]
    pub max_input_bytes: u64,
    #[command(flatten)]
    pub kube: KubeArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Flags shared by every command that produces a report.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: OutputFormat,
    /// When to color the table (NO_COLOR is honored in auto).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// List info findings in the table too (JSON and YAML always have them).
    #[arg(long)]
    pub show_info: bool,
    /// Config file [default: .crd-safety.yaml in the working directory, if present].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Whether error findings fail the run [default: from the config file, else error].
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// How changes no check understands are treated [default: from the config file, else
    /// closed].
    #[arg(long, value_enum)]
    pub fail_mode: Option<FailMode>,
    /// Findings recorded in this file (--write-baseline) are listed apart as baselined and
    /// never fail; its entries that match nothing are reported as stale.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Record the current warnings and errors in FILE (replacing it) and treat them as
    /// baselined in this run.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Consumers' requirements (CRDRequirement or OpenShift CompatibilityRequirement files, or
    /// directories of them; repeatable): the new CRDs are judged against each, and findings name
    /// the consumer [default: requirements from the config file].
    #[arg(long, value_name = "PATH")]
    pub requirements: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RequireArgs {
    /// The requirement's name, NAME or NAMESPACE/NAME: findings against it name it.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The CRD to pin (httproutes.gateway.networking.k8s.io).
    #[arg(long, value_name = "CRD")]
    pub crd: String,
    /// Where the CRD is read: `cluster` (the installed one), or manifests (a file, a directory,
    /// a Helm chart, git:REF:PATH, - for stdin).
    #[arg(long, value_name = "cluster|PATH", default_value = "cluster")]
    pub from: String,
    /// Fields the consumer uses, comma-separated or repeated (spec.rules[*].matches, or
    /// spec.rules.matches) [default: every field].
    #[arg(long, value_name = "PATHS", value_delimiter = ',')]
    pub fields: Vec<String>,
    /// Objects of the CRD (samples, the consumer's own manifests; repeatable): the fields they
    /// set are added to --fields.
    #[arg(long, value_name = "PATH")]
    pub fields_from: Vec<String>,
    /// Fields the consumer does not care about, comma-separated or repeated.
    #[arg(long, value_name = "PATHS", value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// Versions held: storage, served, or version names (v1,v1beta1) [default: served].
    #[arg(long, value_name = "VERSIONS", value_delimiter = ',')]
    pub versions: Vec<String>,
    /// Who depends on the CRD (a team, a product).
    #[arg(long, value_name = "NAME")]
    pub owner: Option<String>,
    /// How to reach them (a channel, an address).
    #[arg(long, value_name = "TEXT")]
    pub contact: Option<String>,
    /// What breaking the requirement does: deny (its errors fail runs and the webhook
    /// refuses) or warn.
    #[arg(long, value_enum, default_value = "deny")]
    pub action: crd_safety::requirement::Action,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    pub output: DataOutput,
    #[command(flatten)]
    pub sources: SourceArgs,
    #[command(flatten)]
    pub kube: KubeArgs,
}

#[derive(Debug, Args)]
pub struct RequirementsArgs {
    /// Requirements: files or directories of them (repeatable) [default: requirements from the
    /// config file, else the cluster's CRDRequirement objects].
    #[arg(long, value_name = "PATH")]
    pub requirements: Vec<PathBuf>,
    /// Judge the CRDs these manifests hold instead of the cluster's (repeatable): files,
    /// directories, Helm charts, git:REF:PATH, - for stdin.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filenames: Vec<String>,
    /// Config file [default: .crd-safety.yaml in the working directory, if present].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: ChangeOutput,
    /// List info findings in the table too (JSON and YAML always have them).
    #[arg(long)]
    pub show_info: bool,
    #[command(flatten)]
    pub sources: SourceArgs,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// Formats of a document `require` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DataOutput {
    Yaml,
    Json,
}

/// How git revisions, Helm charts and kustomizations are read (every command
/// that reads manifests).
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// The git repository `git:REF:PATH` reads [default: the one containing the working
    /// directory].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// A values file for `helm template` when a chart's templates make CRDs (repeatable, in
    /// order, like helm's -f).
    #[arg(long, value_name = "FILE")]
    pub helm_values: Vec<PathBuf>,
    /// A value for `helm template` (KEY=VALUE, repeatable, like helm's --set).
    #[arg(long, value_name = "KEY=VALUE")]
    pub helm_set: Vec<String>,
    /// Fail (exit 2) when a chart's templates make CRDs and helm is not on PATH, instead of a
    /// notice.
    #[arg(long)]
    pub require_helm: bool,
    /// The most read of one file, stdin, chart archive entry, git blob or rendered output (bytes,
    /// or Ki/Mi/Gi; at least 4Ki). Each source (an argument) may hold 4 times that in all
    /// (decompressed), and one file per 4 KiB of it (16,384 by default).
    #[arg(long, value_name = "SIZE", default_value = "64Mi", value_parser = parse_input_size)]
    pub max_input_bytes: u64,
}

/// `--max-input-bytes`: a size as the other size flags take it, and at
/// least one file's worth per source.
fn parse_input_size(text: &str) -> Result<u64, String> {
    let size = crd_safety::webhook::parse_size(text)?;
    if size < InputLimits::MIN_FILE_BYTES {
        return Err(format!("{text:?} is too small: at least 4Ki"));
    }
    Ok(size)
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The CRDs as they are now: a file, a directory (read recursively), a Helm chart,
    /// git:REF:PATH, kustomize:DIR, or - for stdin.
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The CRDs about to be applied: as OLD.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// Versions objects may still be stored in, when OLD has no status: `v1alpha1,v1` for
    /// every CRD, or `NAME=v1alpha1,v1` for one (repeatable).
    #[arg(long, value_name = "[CRD=]VERSIONS")]
    pub stored_versions: Vec<String>,
    /// Custom resources to check against NEW besides those NEW's files hold (a kubebuilder
    /// project's config/samples, a GitOps repository's objects): each object OLD accepts and NEW
    /// refuses or prunes is an error, at its file and line (repeatable; read as OLD and NEW are).
    #[arg(long, value_name = "PATH")]
    pub objects: Vec<String>,
    /// Judge NEW by the CRD rules of this Kubernetes version (e.g. 1.33) [default: kubeVersion
    /// from the config file, else the newest supported].
    #[arg(long, value_name = "VERSION")]
    pub kube_version: Option<KubeVersion>,
    #[command(flatten)]
    pub sources: SourceArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    /// CRD manifests: files, directories (read recursively), Helm charts, git:REF:PATH,
    /// kustomize:DIR, or - for stdin.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<String>,
    /// Judge by the CRD rules of this Kubernetes version (e.g. 1.33) [default: kubeVersion from
    /// the config file, else the newest supported].
    #[arg(long, value_name = "VERSION")]
    pub kube_version: Option<KubeVersion>,
    #[command(flatten)]
    pub sources: SourceArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

/// kubectl's connection flags (kubectl passes none of its own to plugins).
#[derive(Debug, Args)]
pub struct KubeArgs {
    /// Path to the kubeconfig file [default: $KUBECONFIG (a :-separated list), then ~/.kube/config].
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long)]
    pub context: Option<String>,
    /// The kubeconfig cluster to use.
    #[arg(long)]
    pub cluster: Option<String>,
    /// The kubeconfig user to use.
    #[arg(long)]
    pub user: Option<String>,
    /// How long to wait for each request (`30s`, `1m`, or seconds; 0 = no limit), like kubectl.
    #[arg(long, value_name = "DURATION", value_parser = crd_safety::duration::parse)]
    pub request_timeout: Option<std::time::Duration>,
    /// The address of the API server (replaces the kubeconfig cluster's server).
    #[arg(short = 's', long, value_name = "URL")]
    pub server: Option<String>,
    /// Bearer token for authentication (never printed).
    #[arg(long, value_name = "TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Path to a CA certificate file for the API server.
    #[arg(long, value_name = "FILE")]
    pub certificate_authority: Option<PathBuf>,
    /// Path to a client certificate file for TLS.
    #[arg(long, value_name = "FILE")]
    pub client_certificate: Option<PathBuf>,
    /// Path to a client key file for TLS.
    #[arg(long, value_name = "FILE")]
    pub client_key: Option<PathBuf>,
    /// Do not check the server's certificate (insecure; like kubectl).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub insecure_skip_tls_verify: bool,
    /// Server name to use to validate the server certificate (and for SNI).
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// User to impersonate.
    #[arg(long = "as", value_name = "USER")]
    pub as_user: Option<String>,
    /// Group to impersonate (repeatable).
    #[arg(long = "as-group", value_name = "GROUP")]
    pub as_group: Vec<String>,
    /// UID to impersonate.
    #[arg(long = "as-uid", value_name = "UID")]
    pub as_uid: Option<String>,
    /// Log level, as kubectl's: 6 and up print each request to the API
    /// server on stderr (method, path, status, time); never credentials.
    #[arg(short = 'v', long = "v", value_name = "LEVEL", default_value_t = 0)]
    pub verbosity: u8,
}

#[derive(Debug, Args)]
pub struct ApplyCheckArgs {
    /// CRD manifests: files, directories (always read recursively), Helm charts, git:REF:PATH,
    /// or - for stdin (repeatable).
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "PATH",
        required_unless_present = "kustomize"
    )]
    pub filenames: Vec<String>,
    /// A kustomization directory, rendered with `kubectl kustomize` (repeatable).
    #[arg(short = 'k', long = "kustomize", value_name = "DIR")]
    pub kustomize: Vec<PathBuf>,
    /// Accepted for kubectl compatibility: directories are always read recursively.
    #[arg(short = 'R', long, hide = true)]
    pub recursive: bool,
    /// Also list the stored objects of every CRD that changes and report those the new schema
    /// would reject, prune or default (reads every object; needs list on the custom resources).
    #[arg(long)]
    pub objects: bool,
    /// With --objects, keep the schema's grade of every finding: by default a finding whose only
    /// harm is to stored values (a tightened bound, a new pattern, a removed field, ...) is an
    /// error only when a stored object is hurt, and a warning that says so when none is.
    #[arg(long, requires = "objects")]
    pub no_grade_by_objects: bool,
    /// Also send one stored object of every CRD with a conversion webhook to the webhook,
    /// through the API server's service proxy, to each served version and back, and check that
    /// it converts and comes back unchanged (needs list on the custom resources and create on
    /// services/proxy). Only to the webhook the live CRD already converts through: a manifest
    /// that names another is not probed (see --probe-conversion-service).
    #[arg(long)]
    pub probe_conversion: bool,
    /// With --probe-conversion, also probe a conversion webhook behind this Service although the
    /// live CRD does not convert through it yet: you allow the cluster's stored objects to be
    /// sent there (repeatable).
    #[arg(long, value_name = "NAMESPACE/NAME", requires = "probe_conversion",
          value_parser = crd_safety::live_check::parse_probe_service)]
    pub probe_conversion_service: Vec<crd_safety::live_check::ProbeService>,
    /// The field manager of the server-side dry run and of apply's writes, as kubectl's
    /// --field-manager: `kubectl` applies over CRDs installed with `kubectl apply --server-side`
    /// as their owner, with no conflict.
    #[arg(long, value_name = "NAME", default_value = crd_safety::cluster::FIELD_MANAGER,
          value_parser = crd_safety::cluster::ownership::parse_field_manager)]
    pub field_manager: String,
    /// Narrow --objects to the objects of this namespace, as kubectl's -n does (cluster-scoped
    /// CRDs are scanned whole) [default: every namespace].
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Objects per LIST page for --objects.
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_size: u32,
    /// Example objects per finding in the table for --objects (JSON and YAML list every object).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_examples: usize,
    /// Requests in flight at once: reads, dry runs and object scans of the CRDs (and with apply,
    /// the applies). The server's 429s and Retry-After are honoured whatever the number.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    #[command(flatten)]
    pub sources: SourceArgs,
    #[command(flatten)]
    pub kube: KubeArgs,
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub check: ApplyCheckArgs,
    /// Apply without asking (needed when there is no terminal, e.g. in CI).
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Apply even when there are error findings.
    #[arg(long)]
    pub force: bool,
    /// Take over fields owned by another field manager, like kubectl apply --server-side.
    #[arg(long)]
    pub force_conflicts: bool,
    /// Change CRDs a Helm release, Argo CD, Flux or OLM manages (they put their own version back
    /// at their next upgrade or sync): the answer to the second question, which --yes is not.
    #[arg(long)]
    pub override_owners: bool,
    /// How long to wait for each CRD to become Established.
    #[arg(long, value_name = "DURATION", value_parser = crd_safety::duration::parse, default_value = "60s")]
    pub wait_timeout: std::time::Duration,
}

/// Output formats of `migrate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChangeOutput {
    Table,
    Json,
    Yaml,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// CRDs to migrate, by name (widgets.example.com).
    #[arg(value_name = "CRD", required = true)]
    pub crds: Vec<String>,
    /// Plan and check only: change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Migrate without asking (needed when there is no terminal, e.g. in CI).
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Migrate even though fields the storage version's schema does not describe are dropped.
    #[arg(long)]
    pub allow_pruning: bool,
    /// Count the objects per namespace in the plan.
    #[arg(long)]
    pub by_namespace: bool,
    /// Who writes the objects back.
    #[arg(long, value_enum, default_value = "auto")]
    pub engine: Engine,
    /// How long the server engine waits for the cluster's migrator to take
    /// a migration up (auto then lets the client take over).
    #[arg(long, value_name = "DURATION", value_parser = crd_safety::duration::parse, default_value = "30s")]
    pub server_wait: std::time::Duration,
    /// Objects written at once (client engine).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// Objects per LIST page.
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_size: u32,
    /// Example objects per finding in the table (JSON and YAML list every object).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_examples: usize,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: ChangeOutput,
    /// When to color the table (NO_COLOR is honored in auto).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command};

    /// The chart passes its own values for the memory bounds; a user who
    /// runs `serve` bare and one who installs the chart get the same ones
    /// (docs/webhook.md states one figure for each).
    #[test]
    fn the_charts_memory_bounds_are_serves_defaults() {
        let cli = Cli::try_parse_from([
            "kubectl-crd_safety",
            "serve",
            "--tls-cert-file",
            "tls.crt",
            "--tls-private-key-file",
            "tls.key",
        ])
        .map_err(|e| e.to_string());
        let Ok(Cli {
            command: Command::Serve(serve),
        }) = cli
        else {
            panic!("serve's arguments parse: {cli:?}");
        };
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/crd-safety/values.yaml");
        let text = std::fs::read_to_string(path).expect("the chart's values");
        let values: serde_yaml::Value = serde_yaml::from_str(&text).expect("values are YAML");
        let size = |key: &str| {
            let text = values[key].as_str().unwrap_or_default();
            crd_safety::webhook::parse_size(text)
                .unwrap_or_else(|e| panic!("the chart's {key}: {e}"))
        };
        assert_eq!(size("bodyMemory"), serve.body_memory);
        assert_eq!(size("memoryBudget"), serve.memory_budget);
        assert_eq!(serve.body_memory, 8 << 20);
    }
}
