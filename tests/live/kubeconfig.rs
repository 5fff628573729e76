//! "Works wherever kubectl works": each kubeconfig variant (credentials,
//! key types, exec plugins, TLS settings, merged files, command-line
//! overrides) is tried first with the real `kubectl` and then with our
//! `apply-check`, against the live test control plane; both must agree, and
//! must match the expected outcome. Impersonation is tested with a user that
//! may only impersonate.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::json;
use support::envtest::{ADMIN_TOKEN, ControlPlane, control_plane, sh};
use support::live::{admin, crd, write_manifest};
use support::runs::assert_has;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn b64(path: &Path) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(path).expect("file to encode"))
}

/// What one tool did with one variant.
struct Outcome {
    ok: bool,
    output: String,
}

/// The environment both tools run in: no ambient kubeconfig, a private HOME
/// (kubectl's discovery cache), plus `env`.
fn command(program: &str, home: &Path, env: &[(String, String)]) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_remove("KUBECONFIG")
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    cmd
}

fn finish(cmd: &mut Command) -> Outcome {
    let out = cmd.output().expect("the program runs");
    Outcome {
        ok: out.status.success(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// One variant: a kubeconfig (or none), extra environment, extra flags
/// (kubectl's names, which are also ours), and the outcome expected.
struct Variant {
    name: &'static str,
    kubeconfig: Option<PathBuf>,
    env: Vec<(String, String)>,
    flags: Vec<String>,
    expect_ok: bool,
    /// Text both tools must print (an install hint, a user name).
    expect_text: Option<&'static str>,
    /// A proxy both tools must go through.
    proxy: Option<Arc<AtomicUsize>>,
}

impl Variant {
    fn new(name: &'static str, kubeconfig: PathBuf, expect_ok: bool) -> Variant {
        Variant {
            kubeconfig: Some(kubeconfig),
            ..Variant::without_kubeconfig(name, expect_ok)
        }
    }

    fn without_kubeconfig(name: &'static str, expect_ok: bool) -> Variant {
        Variant {
            name,
            kubeconfig: None,
            env: Vec::new(),
            flags: Vec::new(),
            expect_ok,
            expect_text: None,
            proxy: None,
        }
    }

    fn kubectl(&self, home: &Path) -> Outcome {
        let mut cmd = command("kubectl", home, &self.env);
        if let Some(k) = &self.kubeconfig {
            cmd.arg("--kubeconfig").arg(k);
        }
        finish(
            cmd.args(["get", "crd", "-o", "name", "--request-timeout=20s"])
                .args(&self.flags),
        )
    }

    fn ours(&self, home: &Path, manifest: &str) -> Outcome {
        // MATRIX_BINARY runs the matrix against another build (an older
        // release, to see which variants it handled).
        let binary = std::env::var("MATRIX_BINARY")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_kubectl-crd_safety").to_string());
        let mut cmd = command(&binary, home, &self.env);
        cmd.args(["apply-check", "-f", manifest, "--request-timeout=20s"]);
        if let Some(k) = &self.kubeconfig {
            cmd.arg("--kubeconfig").arg(k);
        }
        finish(cmd.args(&self.flags))
    }
}

/// A minimal HTTP CONNECT proxy on loopback; counts the tunnels it opens.
fn connect_proxy() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("proxy port");
    let url = format!("http://{}", listener.local_addr().expect("proxy address"));
    let tunnels = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&tunnels);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let count = Arc::clone(&count);
            std::thread::spawn(move || tunnel(client, &count));
        }
    });
    (url, tunnels)
}

fn tunnel(client: TcpStream, count: &AtomicUsize) -> Option<()> {
    let mut reader = BufReader::new(client.try_clone().ok()?);
    let mut request = String::new();
    reader.read_line(&mut request).ok()?;
    let target = request
        .strip_prefix("CONNECT ")?
        .split(' ')
        .next()?
        .to_string();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let upstream = TcpStream::connect(&target).ok()?;
    count.fetch_add(1, Ordering::SeqCst);
    let mut out = client.try_clone().ok()?;
    out.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .ok()?;
    let (mut up_read, mut up_write) = (upstream.try_clone().ok()?, upstream);
    std::thread::spawn(move || std::io::copy(&mut up_read, &mut out));
    std::io::copy(&mut reader, &mut up_write).ok()?;
    Some(())
}

/// Writes a kubeconfig with one context `m` from a cluster and a user block
/// (YAML, indented as under `cluster:` / `user:`).
fn kubeconfig(dir: &Path, name: &str, cluster: &str, user: &str) -> PathBuf {
    let path = dir.join(format!("{name}.kubeconfig"));
    let text = format!(
        "apiVersion: v1
kind: Config
current-context: m
contexts:
- name: m
  context: {{cluster: c, user: u}}
clusters:
- name: c
  cluster:
{cluster}
users:
- name: u
  user:
{user}
"
    );
    std::fs::write(&path, text).expect("kubeconfig written");
    path
}

/// The materials: client identities signed by the test CA, the API
/// server's CA bundle and its leaf alone.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn make(plane: &ControlPlane, dir: &Path) -> Pki {
        let ca = plane.dir.path().join("pki");
        let certs = plane.dir.path().join("certs");
        sh(
            dir,
            &format!(
                r#"ca={ca}; certs={certs}
printf 'extendedKeyUsage=clientAuth\n' > client.ext
sign() {{ # name key [v1]
  openssl req -new -key "$2" -out "$1.csr" -subj "/O=system:masters/CN=matrix-$1" 2>/dev/null
  if [ "${{3:-}}" = v1 ]; then
    openssl x509 -req -in "$1.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial -out "$1.crt" -days 2 2>/dev/null
  else
    openssl x509 -req -in "$1.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial -out "$1.crt" -days 2 -extfile client.ext 2>/dev/null
  fi
}}
openssl genrsa -traditional -out rsa1.key 2048 2>/dev/null;       sign rsa1 rsa1.key
openssl genpkey -algorithm RSA -out rsa8.key 2>/dev/null;         sign rsa8 rsa8.key
openssl ecparam -genkey -name prime256v1 -out ecsec1.key;         sign ecsec1 ecsec1.key
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out ec8.key; sign ec8 ec8.key
openssl genpkey -algorithm ed25519 -out ed.key;                   sign ed ed.key
openssl genrsa -traditional -out v1.key 2048 2>/dev/null;         sign v1 v1.key v1
openssl x509 -in v1.crt -noout -text | grep -q 'Version: 1'
# The serving bundle is leaf + CA; the first certificate is the leaf.
cp "$certs/apiserver.crt" bundle.crt
awk '/BEGIN/{{n++}} n==1' "$certs/apiserver.crt" > leaf.crt
openssl x509 -in leaf.crt -noout -ext subjectAltName > leaf.san 2>/dev/null || true
echo -n {ADMIN_TOKEN} > token"#,
                ca = ca.display(),
                certs = certs.display(),
            ),
        );
        Pki {
            dir: dir.to_path_buf(),
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

/// An exec plugin: checks that its args and env arrived (and, when asked,
/// the cluster info), then prints `credential`.
fn exec_plugin(
    dir: &Path,
    name: &str,
    credential: &serde_json::Value,
    expect_info: Option<&str>,
) -> String {
    let cred = dir.join(format!("{name}.json"));
    std::fs::write(&cred, credential.to_string()).expect("credential file");
    let check_info = expect_info
        .map(|s| format!("printf '%s' \"$KUBERNETES_EXEC_INFO\" | grep -q '{s}' || {{ echo 'no cluster info' >&2; exit 1; }}\n"))
        .unwrap_or_default();
    let script = dir.join(format!("{name}.sh"));
    write_script(
        &script,
        &format!(
            "#!/bin/bash\n[ \"$MATRIX_ENV\" = from-kubeconfig ] || {{ echo 'env missing' >&2; exit 1; }}\n\
             [ \"$1\" = --mode ] && [ \"$2\" = matrix ] || {{ echo 'args missing' >&2; exit 1; }}\n\
             {check_info}cat '{}'\n",
            cred.display()
        ),
    );
    script.display().to_string()
}

fn exec_user(command: &str, api_version: &str, extra: &str) -> String {
    format!(
        "    exec:
      apiVersion: {api_version}
      command: {command}
      args: [--mode, matrix]
      env: [{{name: MATRIX_ENV, value: from-kubeconfig}}]
      interactiveMode: Never
{extra}"
    )
}

/// Writes `text` to `dir/name`: a kubeconfig the template of [`kubeconfig`]
/// cannot express.
fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("file written");
    path
}

/// Writes an executable script to `path`.
fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).expect("script written");
    sh(
        path.parent().expect("a directory"),
        &format!("chmod +x '{}'", path.display()),
    );
}

fn variants(plane: &ControlPlane, pki: &Pki, dir: &Path) -> Vec<Variant> {
    let server = &plane.server;
    let bundle = pki.path("bundle.crt");
    let cluster = format!("    server: {server}\n    certificate-authority: {bundle}");
    let cert_files = |key: &str| {
        format!(
            "    client-certificate: {}\n    client-key: {}",
            pki.path(&format!("{key}.crt")),
            pki.path(&format!("{key}.key"))
        )
    };
    let cert_data = |key: &str| {
        format!(
            "    client-certificate-data: {}\n    client-key-data: {}",
            b64(&pki.dir.join(format!("{key}.crt"))),
            b64(&pki.dir.join(format!("{key}.key")))
        )
    };
    // The kubeconfig most variants vary only the cluster of: the RSA
    // PKCS#1 client certificate.
    let rsa1 = |name: &str, cluster: &str| kubeconfig(dir, name, cluster, &cert_files("rsa1"));
    let mut v = Vec::new();
    for key in ["rsa1", "rsa8", "ecsec1", "ec8", "ed"] {
        let name: &'static str = match key {
            "rsa1" => "client cert files, RSA key PKCS#1",
            "rsa8" => "client cert files, RSA key PKCS#8",
            "ecsec1" => "client cert files, ECDSA P-256 key SEC1 (with EC PARAMETERS)",
            "ec8" => "client cert files, ECDSA P-384 key PKCS#8",
            _ => "client cert files, Ed25519 key PKCS#8",
        };
        let k = kubeconfig(dir, &format!("files-{key}"), &cluster, &cert_files(key));
        v.push(Variant::new(name, k, true));
    }
    for key in ["rsa1", "ecsec1", "ed"] {
        let name: &'static str = match key {
            "rsa1" => "client cert -data inline, RSA PKCS#1",
            "ecsec1" => "client cert -data inline, ECDSA SEC1",
            _ => "client cert -data inline, Ed25519",
        };
        let k = kubeconfig(dir, &format!("data-{key}"), &cluster, &cert_data(key));
        v.push(Variant::new(name, k, true));
    }
    v.push(Variant::new(
        "X.509 v1 client certificate",
        kubeconfig(dir, "v1", &cluster, &cert_files("v1")),
        true,
    ));
    v.push(Variant::new(
        "token",
        kubeconfig(dir, "token", &cluster, &format!("    token: {ADMIN_TOKEN}")),
        true,
    ));
    v.push(Variant::new(
        "wrong token (401)",
        kubeconfig(dir, "badtoken", &cluster, "    token: not-a-token"),
        false,
    ));
    v.push(Variant::new(
        "tokenFile",
        kubeconfig(
            dir,
            "tokenfile",
            &cluster,
            &format!("    tokenFile: {}", pki.path("token")),
        ),
        true,
    ));
    for (name, api, file) in [
        (
            "exec plugin v1, token",
            "client.authentication.k8s.io/v1",
            "exec-v1",
        ),
        (
            "exec plugin v1beta1, token",
            "client.authentication.k8s.io/v1beta1",
            "exec-v1beta1",
        ),
    ] {
        let plugin = exec_plugin(
            dir,
            file,
            &json!({"apiVersion": api, "kind": "ExecCredential", "status": {"token": ADMIN_TOKEN}}),
            None,
        );
        v.push(Variant::new(
            name,
            kubeconfig(dir, file, &cluster, &exec_user(&plugin, api, "")),
            true,
        ));
    }
    let api = "client.authentication.k8s.io/v1";
    let read = |f: &str| std::fs::read_to_string(pki.dir.join(f)).expect("pem");
    let plugin = exec_plugin(
        dir,
        "exec-cert",
        &json!({"apiVersion": api, "kind": "ExecCredential", "status": {
            "clientCertificateData": read("rsa8.crt"), "clientKeyData": read("rsa8.key")}}),
        None,
    );
    v.push(Variant::new(
        "exec plugin v1, client certificate",
        kubeconfig(dir, "exec-cert", &cluster, &exec_user(&plugin, api, "")),
        true,
    ));
    let port = server.rsplit(':').next().unwrap_or_default().to_string();
    let plugin = exec_plugin(
        dir,
        "exec-info",
        &json!({"apiVersion": api, "kind": "ExecCredential", "status": {"token": ADMIN_TOKEN}}),
        Some(&port),
    );
    v.push(Variant::new(
        "exec plugin with provideClusterInfo",
        kubeconfig(
            dir,
            "exec-info",
            &cluster,
            &exec_user(&plugin, api, "      provideClusterInfo: true\n"),
        ),
        true,
    ));
    // A failing plugin whose stderr and environment hold a credential:
    // kubectl passes its stderr through; we report the failure without it.
    let failing = dir.join("exec-failing.sh");
    write_script(
        &failing,
        "#!/bin/bash\necho \"login failed for $LEAKY\" >&2\nexit 1\n",
    );
    v.push(Variant::new(
        "exec plugin that fails (credential in its env and stderr)",
        kubeconfig(
            dir,
            "exec-failing",
            &cluster,
            &format!(
                "    exec:\n      apiVersion: {api}\n      command: {}\n      \
                 env: [{{name: LEAKY, value: {ADMIN_TOKEN}}}]\n      interactiveMode: Never\n",
                failing.display()
            ),
        ),
        false,
    ));
    let mut missing = Variant::new(
        "exec plugin missing: installHint shown",
        kubeconfig(
            dir,
            "exec-missing",
            &cluster,
            &exec_user(
                "crd-safety-login-not-installed",
                api,
                "      installHint: install crd-safety-login from the matrix docs\n",
            ),
        ),
        false,
    );
    missing.expect_text = Some("install crd-safety-login from the matrix docs");
    v.push(missing);
    v.push(Variant::new(
        "insecure-skip-tls-verify",
        rsa1(
            "insecure",
            &format!("    server: {server}\n    insecure-skip-tls-verify: true"),
        ),
        true,
    ));
    v.push(Variant::new(
        "no CA, server cert not trusted",
        rsa1("untrusted", &format!("    server: {server}")),
        false,
    ));
    v.push(Variant::new(
        "tls-server-name naming a SAN of the serving cert (kubernetes.default.svc)",
        rsa1(
            "tsn",
            &format!("{cluster}\n    tls-server-name: kubernetes.default.svc"),
        ),
        true,
    ));
    v.push(Variant::new(
        "tls-server-name not in the serving cert",
        rsa1(
            "tsn-bad",
            &format!("{cluster}\n    tls-server-name: not-the-server.example"),
        ),
        false,
    ));
    v.push(Variant::new(
        "certificate-authority is the server's own leaf certificate",
        rsa1(
            "leaf",
            &format!(
                "    server: {server}\n    certificate-authority: {}",
                pki.path("leaf.crt")
            ),
        ),
        true,
    ));
    // KUBECONFIG=a:b, the cluster and context in one file, the user in the other.
    let a = write_file(
        dir,
        "split-a.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: m\ncontexts:\n- name: m\n  context: {{cluster: c, user: split-user}}\n\
             clusters:\n- name: c\n  cluster:\n{cluster}\n"
        ),
    );
    let b = write_file(
        dir,
        "split-b.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nusers:\n- name: split-user\n  user:\n{}\n",
            cert_files("ec8")
        ),
    );
    let mut list = Variant::without_kubeconfig(
        "KUBECONFIG list: cluster and user from different files",
        true,
    );
    list.env = vec![(
        "KUBECONFIG".into(),
        format!(
            "{}:{}:{}",
            a.display(),
            dir.join("absent").display(),
            b.display()
        ),
    )];
    v.push(list);
    v.push(Variant::without_kubeconfig("no kubeconfig at all", false));
    let ns = write_file(
        dir,
        "ns.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: m\ncontexts:\n- name: m\n  context: {{cluster: c, user: u, namespace: does-not-exist}}\n\
             clusters:\n- name: c\n  cluster:\n{cluster}\nusers:\n- name: u\n  user:\n{}\n",
            cert_files("rsa1")
        ),
    );
    v.push(Variant::new(
        "a context namespace that does not exist (unused)",
        ns,
        true,
    ));
    let no_current = write_file(
        dir,
        "nocurrent.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\ncontexts:\n- name: m\n  context: {{cluster: c, user: u}}\n\
             clusters:\n- name: c\n  cluster:\n{cluster}\nusers:\n- name: u\n  user:\n{}\n",
            cert_files("rsa1")
        ),
    );
    v.push(Variant::new(
        "no current-context",
        no_current.clone(),
        false,
    ));
    let mut with_context = Variant::new("no current-context, --context given", no_current, true);
    with_context.flags = vec!["--context".into(), "m".into()];
    v.push(with_context);
    // Command-line flags instead of (or over) the kubeconfig.
    let empty = write_file(dir, "empty.kubeconfig", "apiVersion: v1\nkind: Config\n");
    let mut flags_only = Variant::new(
        "flags only: --server --token --certificate-authority",
        empty.clone(),
        true,
    );
    flags_only.flags = vec![
        format!("--server={server}"),
        format!("--token={ADMIN_TOKEN}"),
        format!("--certificate-authority={bundle}"),
    ];
    v.push(flags_only);
    let mut flags_cert = Variant::new(
        "flags only: -s, --client-certificate/--client-key (v1 cert), --insecure-skip-tls-verify",
        empty,
        true,
    );
    flags_cert.flags = vec![
        "-s".into(),
        server.clone(),
        format!("--client-certificate={}", pki.path("v1.crt")),
        format!("--client-key={}", pki.path("v1.key")),
        "--insecure-skip-tls-verify".into(),
    ];
    v.push(flags_cert);
    let broken = kubeconfig(
        dir,
        "broken",
        "    server: https://127.0.0.1:1\n    tls-server-name: not-the-server.example",
        "    token: not-a-token",
    );
    let mut over = Variant::new(
        "flags override a wrong kubeconfig: --server (clears tls-server-name), --token, --certificate-authority",
        broken.clone(),
        true,
    );
    over.flags = vec![
        format!("--server={server}"),
        format!("--token={ADMIN_TOKEN}"),
        format!("--certificate-authority={}", pki.path("leaf.crt")),
    ];
    v.push(over);
    let (proxy_url, tunnels) = connect_proxy();
    let mut proxied = Variant::new(
        "proxy-url (HTTP CONNECT proxy)",
        rsa1("proxy", &format!("{cluster}\n    proxy-url: {proxy_url}")),
        true,
    );
    proxied.proxy = Some(tunnels);
    v.push(proxied);
    let dead = format!("http://127.0.0.1:{}", free_port());
    v.push(Variant::new(
        "proxy-url of a proxy that is down",
        rsa1("proxy-down", &format!("{cluster}\n    proxy-url: {dead}")),
        false,
    ));
    let mut env_proxy = Variant::new(
        "HTTPS_PROXY is not used for a loopback server",
        rsa1("env-proxy", &cluster),
        true,
    );
    env_proxy.env = vec![("HTTPS_PROXY".into(), dead)];
    v.push(env_proxy);
    let mut no_user = Variant::new(
        "--user naming a user the kubeconfig lacks",
        rsa1("no-user", &cluster),
        false,
    );
    no_user.flags = vec!["--user=nobody".into()];
    v.push(no_user);
    let mut tsn_flag = Variant::new("--tls-server-name flag", rsa1("tsn-flag", &cluster), true);
    tsn_flag.flags = vec!["--tls-server-name=kubernetes.default.svc".into()];
    v.push(tsn_flag);
    let mut bad_token_flag = Variant::new("--token flag with a wrong token (401)", broken, false);
    bad_token_flag.flags = vec![
        format!("--server={server}"),
        "--token=wrong".into(),
        "--insecure-skip-tls-verify".into(),
    ];
    v.push(bad_token_flag);
    v
}

#[test]
fn every_kubeconfig_variant_works_with_us_exactly_when_it_works_with_kubectl() {
    let Some(plane) = control_plane() else { return };
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl is required in CI"
        );
        eprintln!("notice: kubectl not found; skipping the kubeconfig matrix");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let pki = Pki::make(plane, dir.path());
    let manifest = write_manifest(
        dir.path(),
        "crd.json",
        &crd("matrices", &[("v1", true, true)], json!({})),
    );
    let mut failures = Vec::new();
    let mut table = String::new();
    let variants = variants(plane, &pki, dir.path());
    for v in &variants {
        let tunnels = || v.proxy.as_ref().map(|t| t.load(Ordering::SeqCst));
        let before = tunnels();
        let theirs = v.kubectl(&home);
        let between = tunnels();
        let ours = v.ours(&home, &manifest);
        let after = tunnels();
        if let (Some(a), Some(b), Some(c)) = (before, between, after)
            && (b == a || c == b)
        {
            failures.push(format!(
                "{}: both must go through the proxy (kubectl: {} tunnels, ours: {})",
                v.name,
                b - a,
                c - b
            ));
        }
        let mark = |ok: bool| if ok { "ok" } else { "fails" };
        table.push_str(&format!(
            "  {:<6} {:<6} {}\n",
            mark(theirs.ok),
            mark(ours.ok),
            v.name
        ));
        if theirs.ok != v.expect_ok || ours.ok != v.expect_ok {
            failures.push(format!(
                "{}: expected {}, kubectl {}, ours {}\n  kubectl: {}\n  ours: {}",
                v.name,
                mark(v.expect_ok),
                mark(theirs.ok),
                mark(ours.ok),
                theirs.output.trim(),
                ours.output.trim()
            ));
        }
        if let Some(text) = v.expect_text
            && !(theirs.output.contains(text) && ours.output.contains(text))
        {
            failures.push(format!(
                "{}: both should print {text:?}\n  kubectl: {}\n  ours: {}",
                v.name,
                theirs.output.trim(),
                ours.output.trim()
            ));
        }
        if !ours.ok && ours.output.trim().lines().count() != 1 {
            failures.push(format!(
                "{}: not one line on failure: {}",
                v.name, ours.output
            ));
        }
        for secret in [ADMIN_TOKEN, "not-a-token"] {
            if ours.output.contains(secret) {
                failures.push(format!(
                    "{}: a credential was printed: {}",
                    v.name, ours.output
                ));
            }
        }
    }
    eprintln!("kubectl ours   variant\n{table}");
    assert!(variants.len() >= 30, "the matrix covers the variants");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// RBAC for a user that may impersonate and nothing else.
async fn allow_impersonation(client: &kube::Client, user: &str) {
    let apply = |kind: &str, version: &str, group: &str, plural: &str| {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(group, version, kind),
            plural,
        );
        Api::<DynamicObject>::all_with(client.clone(), &ar)
    };
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "matrix-impersonator"},
        "rules": [
            {"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["impersonate"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["uids"], "verbs": ["impersonate"]}
        ]
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "matrix-impersonator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "matrix-impersonator"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
    });
    let pp = PatchParams::apply("crd-safety-test").force();
    for (kind, plural, object) in [
        ("ClusterRole", "clusterroles", role),
        ("ClusterRoleBinding", "clusterrolebindings", binding),
    ] {
        apply(kind, "v1", "rbac.authorization.k8s.io", plural)
            .patch("matrix-impersonator", &pp, &Patch::Apply(&object))
            .await
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
}

#[tokio::test]
async fn a_user_who_may_only_impersonate_works_through_as_and_as_group() {
    let Some(plane) = control_plane() else { return };
    // A user of this test's own (the shared `restricted` user must keep no
    // bindings).
    let user = "impersonator";
    allow_impersonation(&admin(plane).await, user).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(
        dir.path(),
        "crd.json",
        &crd("impersonations", &[("v1", true, true)], json!({})),
    );
    let kubeconfig = plane.user_kubeconfig(user).display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["apply-check", "-f", &manifest, "--kubeconfig", &kubeconfig];
        args.extend_from_slice(extra);
        support::run::run(&args, None)
    };
    let plain = run(&[]);
    assert_eq!(plain.code, 3, "without --as: 403\n{}", plain.stderr);
    assert_has(&plain.stderr, "forbidden (403)");
    assert_has(&plain.stderr, &format!("\"{user}\""));

    let as_jane = run(&["--as", "jane"]);
    assert_eq!(as_jane.code, 3, "jane has no rights\n{}", as_jane.stderr);
    assert!(
        as_jane.stderr.contains("\"jane\""),
        "the server sees the impersonated user: {}",
        as_jane.stderr
    );

    let as_admin = run(&[
        "--as",
        "jane",
        "--as-group",
        "system:authenticated",
        "--as-group",
        "system:masters",
        "--as-uid",
        "1234",
    ]);
    assert_eq!(
        as_admin.code, 0,
        "impersonating a member of system:masters works\n{}",
        as_admin.stderr
    );
    assert_has(&as_admin.stdout, "impersonations.example.com");
}
