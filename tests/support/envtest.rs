//! A real control plane for the live tests: etcd and kube-apiserver on
//! loopback, started once per test binary, the way controller-runtime's
//! envtest starts them.
//!
//! Binaries come from `KUBEBUILDER_ASSETS`, or are built once from the Go
//! module proxy by `scripts/envtest-assets.sh`. When they cannot be had, the
//! live tests are skipped with a notice, except with `CI=true`, where they
//! fail. Each server runs under a tiny bash wrapper that kills it when the
//! test process goes away (its stdin pipe closes), so no server outlives the
//! tests even though the shared control plane is never dropped.

#![allow(dead_code)]

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A bearer token the API server maps to a user in `system:masters`
/// (`--token-auth-file`).
pub const ADMIN_TOKEN: &str = "crd-safety-admin-token";
/// A bearer token for user `token-restricted`, with no RBAC bindings.
pub const RESTRICTED_TOKEN: &str = "crd-safety-restricted-token";

/// A running etcd + kube-apiserver and kubeconfigs for two users.
pub struct ControlPlane {
    /// Keeps certificates, data and kubeconfigs alive.
    pub dir: tempfile::TempDir,
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    /// etcd's client URL, `http://127.0.0.1:<port>` (plain HTTP on loopback),
    /// for tests that look at what is really stored.
    pub etcd: String,
    /// A user in `system:masters`.
    pub admin_kubeconfig: PathBuf,
    /// A user with no RBAC bindings at all (every request is forbidden).
    /// The live tests share it and rely on that: a test that binds RBAC
    /// makes a user of its own ([`ControlPlane::user_kubeconfig`]).
    pub restricted_kubeconfig: PathBuf,
    /// The directory with kube-apiserver, etcd (and kubectl when available).
    pub assets: PathBuf,
    /// kube-apiserver's version (`v1.34.4`): the default, or the one
    /// `CRD_SAFETY_KUBE_VERSION` asks `scripts/envtest-assets.sh` for.
    pub kube_version: String,
    /// Its minor version (`34`).
    pub kube_minor: u32,
    /// kube-apiserver's flags, to start it again.
    apiserver_args: Vec<String>,
    // Dropping these closes the wrappers' stdin, which stops the servers.
    // kube-apiserver's comes first.
    _guards: Vec<(Child, ChildStdin)>,
}

/// `kube-apiserver --version` (`Kubernetes v1.34.4`) as the version string
/// and its minor.
fn apiserver_version(assets: &std::path::Path) -> (String, u32) {
    let out = std::process::Command::new(assets.join("kube-apiserver"))
        .arg("--version")
        .output()
        .expect("kube-apiserver --version runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().trim_start_matches("Kubernetes ").to_string();
    let minor = version
        .trim_start_matches("v1.")
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("unexpected kube-apiserver version {text:?}"));
    (version, minor)
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A loopback port free when asked (nothing listens on it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Runs a bash script in `dir` (`-euo pipefail`), failing with its stderr.
pub fn sh(dir: &Path, script: &str) {
    let out = Command::new("bash")
        .arg("-euo")
        .arg("pipefail")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "setup step failed: {script}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Finds or builds the binaries of the default Kubernetes version (or the
/// one `CRD_SAFETY_KUBE_VERSION` names), or of `version` when given. `Err`
/// is the reason they are unavailable.
fn assets(version: Option<&str>, controller_manager: bool) -> Result<PathBuf, String> {
    let mut script = Command::new("bash");
    script.arg(repo().join("scripts/envtest-assets.sh"));
    if let Some(v) = version {
        script.arg(v);
    }
    if controller_manager {
        script.arg("--with-controller-manager");
    }
    let out = script
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run scripts/envtest-assets.sh: {e}"))?;
    match out.status.code() {
        Some(0) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text.lines().last().unwrap_or("").trim().to_string();
            Ok(PathBuf::from(line))
        }
        Some(3) => Err("envtest binaries are not available (see the line above)".into()),
        other => panic!("scripts/envtest-assets.sh failed with {other:?}"),
    }
}

/// The wrapper: start the server, wait for stdin to close (this process
/// exited), then stop the server (SIGTERM, SIGKILL after 5 s) and remove
/// `$CLEANUP` if set.
const GUARD: &str = r#""$@" & server=$!
stop() {
  kill "$server" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$server" 2>/dev/null
  if [ -n "${CLEANUP:-}" ]; then rm -rf "$CLEANUP"; fi
}
trap stop EXIT
read -r _ || true"#;

/// Starts `program args` under a wrapper that dies with this process.
fn spawn_guarded(
    program: &Path,
    args: &[String],
    log: &Path,
    cleanup: Option<&Path>,
) -> (Child, ChildStdin) {
    let log = std::fs::File::create(log).expect("log file");
    let mut cmd = Command::new("bash");
    if let Some(dir) = cleanup {
        cmd.env("CLEANUP", dir);
    }
    let mut child = cmd
        .arg("-c")
        .arg(GUARD)
        .arg("guard")
        .arg(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("the server starts");
    let stdin = child.stdin.take().expect("piped stdin");
    (child, stdin)
}

fn write_kubeconfig(path: &Path, server: &str, ca: &Path, cert: &Path, key: &Path, user: &str) {
    let text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: {user}
  user:
    client-certificate: {cert}
    client-key: {key}
contexts:
- name: envtest-{user}
  context:
    cluster: envtest
    user: {user}
    namespace: default
current-context: envtest-{user}
",
        ca = ca.display(),
        cert = cert.display(),
        key = key.display()
    );
    let mut f = std::fs::File::create(path).expect("kubeconfig");
    f.write_all(text.as_bytes()).expect("kubeconfig written");
}

/// What a dedicated control plane has beyond the shared one's etcd and
/// kube-apiserver.
#[derive(Debug, Default, Clone)]
pub struct Extras {
    /// More kube-apiserver flags (feature gates, `--runtime-config`).
    pub apiserver_args: Vec<String>,
    /// Provide kube-controller-manager, for
    /// [`ControlPlane::start_controller_manager`].
    pub controller_manager: bool,
}

impl ControlPlane {
    fn start(version: Option<&str>, extras: &Extras) -> Result<ControlPlane, String> {
        let assets = assets(version, extras.controller_manager)?;
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::create_dir_all(d.join("pki")).expect("pki dir");
        // A CA for client certificates, two users, and the service-account key.
        sh(
            d,
            r#"cd pki
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=crd-safety-test-ca 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' > client.ext
for u in admin:system:masters restricted:; do
  name=${u%%:*}; group=${u#*:}
  subj="/CN=$name"; [ -n "$group" ] && subj="/O=$group/CN=$name"
  openssl req -newkey rsa:2048 -nodes -keyout $name.key -out $name.csr -subj "$subj" 2>/dev/null
  openssl x509 -req -in $name.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $name.crt -days 2 -extfile client.ext 2>/dev/null
done
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
printf '%s,token-admin,uid-token-admin,"system:masters"\n%s,token-restricted,uid-token-restricted\n' \
  crd-safety-admin-token crd-safety-restricted-token > tokens.csv"#,
        );
        let (client_port, peer_port, api_port) = (free_port(), free_port(), free_port());
        let etcd_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let etcd_args: Vec<String> = vec![
            format!("--data-dir={}", d.join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=default={peer_url}"),
            "--unsafe-no-fsync".into(),
        ];
        // etcd stops last and removes the whole directory.
        let etcd = spawn_guarded(
            &assets.join("etcd"),
            &etcd_args,
            &d.join("etcd.log"),
            Some(d),
        );
        let server = format!("https://127.0.0.1:{api_port}");
        let pki = d.join("pki");
        let api_args: Vec<String> = vec![
            format!("--etcd-servers={etcd_url}"),
            format!("--cert-dir={}", d.join("certs").display()),
            format!("--secure-port={api_port}"),
            "--bind-address=127.0.0.1".into(),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            "--authorization-mode=RBAC".into(),
            format!("--service-account-issuer={server}"),
            format!(
                "--service-account-key-file={}",
                pki.join("sa.pub").display()
            ),
            format!(
                "--service-account-signing-key-file={}",
                pki.join("sa.key").display()
            ),
            format!("--client-ca-file={}", pki.join("ca.crt").display()),
            format!("--token-auth-file={}", pki.join("tokens.csv").display()),
            "--disable-admission-plugins=ServiceAccount".into(),
            "--allow-privileged=true".into(),
        ]
        .into_iter()
        .chain(extras.apiserver_args.iter().cloned())
        .collect();
        let apiserver = spawn_guarded(
            &assets.join("kube-apiserver"),
            &api_args,
            &d.join("apiserver.log"),
            None,
        );
        // The API server writes its self-signed serving certificate at start.
        let serving_ca = d.join("certs/apiserver.crt");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !serving_ca.exists() {
            assert!(
                Instant::now() < deadline,
                "kube-apiserver wrote no serving certificate; see {}",
                d.join("apiserver.log").display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let admin = d.join("admin.kubeconfig");
        let restricted = d.join("restricted.kubeconfig");
        write_kubeconfig(
            &admin,
            &server,
            &serving_ca,
            &pki.join("admin.crt"),
            &pki.join("admin.key"),
            "admin",
        );
        write_kubeconfig(
            &restricted,
            &server,
            &serving_ca,
            &pki.join("restricted.crt"),
            &pki.join("restricted.key"),
            "restricted",
        );
        let (kube_version, kube_minor) = apiserver_version(&assets);
        let plane = ControlPlane {
            dir,
            server,
            etcd: etcd_url,
            admin_kubeconfig: admin,
            restricted_kubeconfig: restricted,
            assets,
            kube_version,
            kube_minor,
            apiserver_args: api_args,
            _guards: vec![apiserver, etcd],
        };
        plane.wait_ready(deadline);
        Ok(plane)
    }

    /// Stops kube-apiserver (SIGTERM, as a rolling restart does), starts it
    /// again on the same port over the same etcd, and returns once it is
    /// ready; only for a [`dedicated`] control plane.
    pub fn restart_apiserver(&mut self) {
        let (mut child, stdin) = self._guards.remove(0);
        drop(stdin);
        child.wait().expect("kube-apiserver stopped");
        let restarted = spawn_guarded(
            &self.assets.join("kube-apiserver"),
            &self.apiserver_args,
            &self.dir.path().join("apiserver-restarted.log"),
            None,
        );
        self._guards.insert(0, restarted);
        self.wait_ready(Instant::now() + Duration::from_secs(60));
    }

    /// Starts kube-controller-manager as the admin, running only
    /// `controllers` (e.g. the garbage collector and the storage-version
    /// migrator) with `args` added; it stops with the control plane. Only
    /// for a plane started with [`Extras::controller_manager`].
    pub fn start_controller_manager(&mut self, controllers: &[&str], args: &[&str]) {
        let mut all = vec![
            format!("--kubeconfig={}", self.admin_kubeconfig.display()),
            format!("--controllers={}", controllers.join(",")),
            "--leader-elect=false".into(),
            "--secure-port=0".into(),
        ];
        all.extend(args.iter().map(|a| a.to_string()));
        let guard = spawn_guarded(
            &self.assets.join("kube-controller-manager"),
            &all,
            &self.dir.path().join("controller-manager.log"),
            None,
        );
        // Before etcd's guard, which removes the directory when it stops.
        self._guards.insert(1, guard);
    }

    /// Polls `/readyz` with the admin identity until the server is ready.
    fn wait_ready(&self, deadline: Instant) {
        // Tests call this from inside their own runtime; poll on a thread of
        // our own so the two runtimes never nest.
        std::thread::scope(|scope| {
            scope
                .spawn(|| self.poll_ready(deadline))
                .join()
                .expect("readiness poll")
        });
    }

    fn poll_ready(&self, deadline: Instant) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            loop {
                if let Ok(client) = self.client(&self.admin_kubeconfig).await {
                    let req = http::Request::get("/readyz")
                        .body(Vec::new())
                        .expect("request");
                    if let Ok(body) = client.request_text(req).await
                        && body.trim() == "ok"
                    {
                        return;
                    }
                }
                assert!(
                    Instant::now() < deadline,
                    "kube-apiserver not ready within 60s; see {}",
                    self.dir.path().join("apiserver.log").display()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
    }

    /// A kubeconfig for `user` (a client certificate of the test CA, in no
    /// group): a user of the caller's own, for a test that binds RBAC to
    /// it. The shared control plane's `restricted` user must keep no
    /// bindings at all, as the tests of other modules rely on it.
    pub fn user_kubeconfig(&self, user: &str) -> PathBuf {
        assert!(
            !user.is_empty()
                && user
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "a user name of lowercase letters, digits and dashes: {user:?}"
        );
        let dir = self.dir.path().join("users").join(user);
        std::fs::create_dir_all(&dir).expect("user dir");
        let pki = self.dir.path().join("pki");
        // A serial file of its own: tests make users at the same time.
        sh(
            &dir,
            &format!(
                r#"printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl req -newkey rsa:2048 -nodes -keyout user.key -out user.csr -subj "/CN={user}" 2>/dev/null
openssl x509 -req -in user.csr -CA {ca} -CAkey {key} -CAserial ca.srl -CAcreateserial -out user.crt -days 2 -extfile client.ext 2>/dev/null"#,
                ca = pki.join("ca.crt").display(),
                key = pki.join("ca.key").display(),
            ),
        );
        let kubeconfig = dir.join("kubeconfig");
        write_kubeconfig(
            &kubeconfig,
            &self.server,
            &self.dir.path().join("certs/apiserver.crt"),
            &dir.join("user.crt"),
            &dir.join("user.key"),
            user,
        );
        kubeconfig
    }

    /// A kube-rs client for one of the kubeconfigs.
    pub async fn client(&self, kubeconfig: &Path) -> Result<kube::Client, String> {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| e.to_string())?;
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| e.to_string())?;
        kube::Client::try_from(config).map_err(|e| e.to_string())
    }
}

/// A control plane of the caller's own (for a test that restarts it), or
/// `None` (after a notice) when the binaries are unavailable outside CI.
pub fn dedicated() -> Option<ControlPlane> {
    started(None, &Extras::default())
}

/// A control plane of the caller's own, of Kubernetes `version`, with
/// `extras`; `None` (after a notice) when the binaries are unavailable
/// outside CI.
pub fn dedicated_with(version: &str, extras: &Extras) -> Option<ControlPlane> {
    started(Some(version), extras)
}

fn started(version: Option<&str>, extras: &Extras) -> Option<ControlPlane> {
    match ControlPlane::start(version, extras) {
        Ok(p) => Some(p),
        Err(why) if in_ci() => panic!("live tests are required in CI, but {why}"),
        Err(why) => {
            eprintln!("notice: skipping live-cluster tests: {why}");
            None
        }
    }
}

/// The control plane shared by every test of this binary, or `None` (after
/// a notice) when the binaries are unavailable outside CI.
pub fn control_plane() -> Option<&'static ControlPlane> {
    static PLANE: OnceLock<Option<ControlPlane>> = OnceLock::new();
    PLANE.get_or_init(dedicated).as_ref()
}

/// The Kubernetes minors the version-sensitive live tests run on. With
/// `CI=true`: the oldest and newest supported and the default (1.30, 1.34,
/// 1.37), whose differences in CRD validation and CEL are what these tests
/// hold the offline check to. Otherwise only the default, unless
/// `CRD_SAFETY_KUBE_MATRIX` lists others (`1.30,1.37`); building a
/// kube-apiserver takes minutes.
pub fn matrix() -> Vec<String> {
    if let Ok(list) = std::env::var("CRD_SAFETY_KUBE_MATRIX") {
        return list
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
    }
    if in_ci() {
        return ["1.30", "1.34", "1.37"].map(String::from).to_vec();
    }
    vec![String::new()]
}

/// The shared control plane of the matrix entry `version` (`""` for the
/// default one, which is [`control_plane`]).
pub fn control_plane_of(version: &str) -> Option<&'static ControlPlane> {
    let minor = |v: &str| {
        v.trim_start_matches('v')
            .split('.')
            .take(2)
            .collect::<Vec<_>>()
            .join(".")
    };
    let default = std::env::var("CRD_SAFETY_KUBE_VERSION").unwrap_or_else(|_| "1.34".to_string());
    if version.is_empty() || minor(version) == minor(&default) {
        return control_plane();
    }
    static PLANES: OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, &'static Option<ControlPlane>>>,
    > = OnceLock::new();
    let planes = PLANES.get_or_init(Default::default);
    let mut planes = planes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let plane = planes
        .entry(version.to_string())
        .or_insert_with(|| Box::leak(Box::new(started(Some(version), &Extras::default()))));
    plane.as_ref()
}

/// Runs `check` on every control plane of the [`matrix`] and fails with
/// every disagreement it returns, each marked with its server's version.
/// Returns without checking when the binaries are unavailable outside CI.
pub async fn assert_agrees_on_matrix<F, Fut>(check: F)
where
    F: Fn(&'static ControlPlane) -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let mut disagreements = Vec::new();
    for version in matrix() {
        let Some(plane) = control_plane_of(&version) else {
            return;
        };
        disagreements.extend(
            check(plane)
                .await
                .into_iter()
                .map(|d| format!("[{}] {d}", plane.kube_version)),
        );
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}

/// The minor a matrix entry names (`""` is the default, 1.34 unless
/// `CRD_SAFETY_KUBE_VERSION` says otherwise).
pub fn minor_of(version: &str) -> u32 {
    let default = std::env::var("CRD_SAFETY_KUBE_VERSION").unwrap_or_else(|_| "1.34".into());
    let v = if version.is_empty() {
        &default
    } else {
        version
    };
    v.trim_start_matches('v')
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .expect("a version like 1.34")
}

/// What kube-apiserver of `minor` needs to serve `storagemigration.k8s.io`
/// (1.37 serves v1 by default), and the feature gates its
/// kube-controller-manager needs to run the migrator.
pub fn storage_migration_flags(minor: u32) -> (Vec<String>, Vec<&'static str>) {
    match minor {
        37.. => (Vec::new(), Vec::new()),
        35 | 36 => (
            vec![
                "--feature-gates=StorageVersionMigrator=true".into(),
                "--runtime-config=storagemigration.k8s.io/v1beta1=true".into(),
            ],
            vec!["--feature-gates=StorageVersionMigrator=true"],
        ),
        _ => (
            vec![
                "--feature-gates=StorageVersionMigrator=true".into(),
                "--runtime-config=storagemigration.k8s.io/v1alpha1=true".into(),
            ],
            vec!["--feature-gates=StorageVersionMigrator=true,InformerResourceVersion=true"],
        ),
    }
}

/// A control plane of its own serving `storagemigration.k8s.io`, with
/// kube-controller-manager built (started by the test when it wants the
/// migrator).
pub fn serving_storage_migration(version: &str, controller_manager: bool) -> Option<ControlPlane> {
    let minor = minor_of(version);
    let version = if version.is_empty() {
        format!("1.{minor}")
    } else {
        version.to_string()
    };
    let (apiserver_args, _) = storage_migration_flags(minor);
    dedicated_with(
        &version,
        &Extras {
            apiserver_args,
            controller_manager,
        },
    )
}
