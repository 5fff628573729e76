//! The Helm chart `charts/crd-safety` and the plain manifests rendered from
//! it (`deploy/crd-safety.yaml`): the chart lints in every certificate mode,
//! the modes meant for GitOps render the same text every time,
//! the checked-in manifests are current, everything it renders is accepted
//! by a real API server (a server-side dry run, under the restricted Pod
//! Security Standard), the webhook configuration registers what `serve`
//! expects, `serve` starts with the pod's arguments and the generated
//! certificate and configuration, answering TLS for the Service's name, and
//! an upgrade keeps the generated certificate. The operations' defaults: the
//! pods spread over nodes and zones, take a priority class the API server
//! admits, the `matchConditions` examples of values.yaml are CEL the API
//! server accepts, and with `clientAuth` the pods refuse every client
//! without a certificate (the kubelet's probes become TCP checks).
//!
//! helm comes from `scripts/helm-bin.sh`; without it (or without the test
//! API server) the tests return early, except in CI, where they fail.

// Signals, pseudo-terminals and the test control plane: Unix only.
#![cfg(unix)]

use crate::support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::envtest::control_plane;
use support::helm::helm_dir;
use support::runs::assert_has;
use support::webhook::kubectl;

/// The namespace the dry-run renders use (created for real, as a dry run
/// of namespaced objects needs their namespace).
const DRY_RUN_NS: &str = "crd-safety-dryrun";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn chart() -> PathBuf {
    repo().join("charts/crd-safety")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `helm args`, failing with its output unless it succeeds.
fn helm(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(dir.join("helm"))
        .args(args)
        .env(
            "HELM_CACHE_HOME",
            std::env::temp_dir().join("crd-safety-helm-cache"),
        )
        .env(
            "HELM_CONFIG_HOME",
            std::env::temp_dir().join("crd-safety-helm-config"),
        )
        .env(
            "HELM_DATA_HOME",
            std::env::temp_dir().join("crd-safety-helm-data"),
        )
        .output()
        .expect("helm runs");
    assert!(
        out.status.success(),
        "helm {args:?} failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

/// `helm template crd-safety charts/crd-safety --namespace ns --set ...`.
fn render(dir: &Path, namespace: &str, sets: &[&str]) -> String {
    let mut args = Vec::new();
    for set in sets {
        args.extend(["--set", set]);
    }
    render_with(dir, namespace, &args)
}

/// `helm template crd-safety charts/crd-safety --namespace ns ARGS...`.
fn render_with(dir: &Path, namespace: &str, extra: &[&str]) -> String {
    let chart = chart();
    let mut args = vec![
        "template",
        "crd-safety",
        chart.to_str().expect("UTF-8 path"),
        "--namespace",
        namespace,
    ];
    args.extend(extra);
    text(&helm(dir, &args).stdout)
}

/// The values of certificates.mode secret: a Secret named `mine`, and the
/// caBundle as the PEM of a CA of the test's own (`--set-file`), kept in
/// `dir`.
fn secret_mode(dir: &Path) -> Vec<String> {
    let ca = dir.join("ca.crt");
    std::fs::write(&ca, support::webhook::TestCa::new().pem).expect("write");
    vec![
        "--set".into(),
        "certificates.mode=secret".into(),
        "--set".into(),
        "certificates.secret.name=mine".into(),
        "--set-file".into(),
        format!("certificates.secret.caBundle={}", ca.display()),
    ]
}

/// The chart's arguments for each certificate mode.
fn modes(dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    vec![
        (
            "generate",
            vec!["--set".into(), "certificates.mode=generate".into()],
        ),
        ("secret", secret_mode(dir)),
        (
            "cert-manager",
            vec!["--set".into(), "certificates.mode=cert-manager".into()],
        ),
    ]
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// The documents of a multi-document YAML text: the text of each and its
/// parsed value, leaving out documents with nothing but comments.
fn documents(yaml: &str) -> Vec<(String, Value)> {
    let mut chunks = vec![String::new()];
    for line in yaml.lines() {
        if line == "---" {
            chunks.push(String::new());
        } else {
            let last = chunks.last_mut().expect("a chunk");
            last.push_str(line);
            last.push('\n');
        }
    }
    chunks
        .into_iter()
        .filter(|c| {
            c.lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        })
        .map(|c| {
            let v = serde_saphyr::from_str::<Value>(&c)
                .unwrap_or_else(|e| panic!("a rendered document does not parse: {e}\n{c}"));
            (c, v)
        })
        .collect()
}

/// The one document of `kind`.
fn one<'a>(docs: &'a [(String, Value)], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs
        .iter()
        .map(|(_, v)| v)
        .filter(|v| v["kind"] == kind)
        .collect();
    assert_eq!(found.len(), 1, "expected one {kind}, found {}", found.len());
    found[0]
}

fn kinds(docs: &[(String, Value)]) -> Vec<String> {
    let mut k: Vec<String> = docs
        .iter()
        .map(|(_, v)| v["kind"].as_str().unwrap_or("?").to_string())
        .collect();
    k.sort();
    k
}

/// The documents a cluster without cert-manager accepts: the test API
/// server has no cert-manager CRDs, so Issuers and Certificates are left
/// out of the dry run (their spec is cert-manager's to validate).
fn without_cert_manager(docs: &[(String, Value)]) -> String {
    docs.iter()
        .filter(|(_, v)| {
            !v["apiVersion"]
                .as_str()
                .unwrap_or("")
                .starts_with("cert-manager.io/")
        })
        .map(|(t, _)| format!("---\n{t}"))
        .collect()
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}

#[test]
fn helm_lint_passes_in_every_certificate_mode() {
    let Some(dir) = helm_dir() else { return };
    let chart = chart();
    let chart = chart.to_str().expect("UTF-8 path");
    let files = tempfile::tempdir().expect("tempdir");
    for (mode, args) in modes(files.path()) {
        // --strict: a lint warning fails too (the icon notice is only INFO).
        let mut lint = vec!["lint", "--strict", chart];
        lint.extend(strs(&args));
        let out = helm(dir, &lint);
        let said = text(&out.stdout);
        assert!(said.contains("0 chart(s) failed"), "{mode}: {said}");
        assert!(!said.contains("[WARNING]"), "{mode}: {said}");
    }
}

#[test]
fn an_unknown_certificates_mode_or_failure_policy_fails_the_render() {
    let Some(dir) = helm_dir() else { return };
    for (set, expected) in [
        ("certificates.mode=self", "certificates.mode must be"),
        (
            "certificates.mode=secret",
            "certificates.secret.name is required",
        ),
        ("failurePolicy=Deny", "failurePolicy must be"),
        ("timeoutSeconds=31", "timeoutSeconds must be"),
    ] {
        let out = Command::new(dir.join("helm"))
            .args(["template", "crd-safety"])
            .arg(chart())
            .args(["--set", set])
            .output()
            .expect("helm runs");
        assert!(!out.status.success(), "{set} rendered");
        assert!(
            text(&out.stderr).contains(expected),
            "{set}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn the_checked_in_deploy_manifests_are_current() {
    let Some(dir) = helm_dir() else { return };
    let out = Command::new("bash")
        .arg(repo().join("scripts/render-deploy.sh"))
        .arg("--check")
        .env("HELM", dir.join("helm"))
        .output()
        .expect("scripts/render-deploy.sh runs");
    assert!(
        out.status.success(),
        "deploy/crd-safety.yaml is stale; run scripts/render-deploy.sh\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let deploy = std::fs::read_to_string(repo().join("deploy/crd-safety.yaml")).expect("deploy");
    let docs = documents(&deploy);
    assert_eq!(docs[0].1["kind"], "Namespace", "the namespace comes first");
    assert_eq!(docs[0].1["metadata"]["name"], "crd-safety");
    let hook = one(&docs, "ValidatingWebhookConfiguration");
    assert_eq!(
        hook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "crd-safety/crd-safety-serving"
    );
}

/// Creates namespace `ns` for real (a dry run of namespaced objects needs
/// it), under the restricted Pod Security Standard, enforced and warned.
fn namespace(kubeconfig: &Path, ns: &str) {
    let out = kubectl(kubeconfig, &["create", "namespace", ns]);
    let err = text(&out.stderr);
    assert!(
        out.status.success() || err.contains("AlreadyExists"),
        "create namespace {ns}: {err}"
    );
    let out = kubectl(
        kubeconfig,
        &[
            "label",
            "--overwrite",
            "namespace",
            ns,
            "pod-security.kubernetes.io/enforce=restricted",
            "pod-security.kubernetes.io/warn=restricted",
        ],
    );
    assert!(out.status.success(), "label {ns}: {}", text(&out.stderr));
}

/// `kubectl apply --server-side --dry-run=server` of `yaml`.
fn dry_run_output(kubeconfig: &Path, yaml: &str) -> Output {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("rendered.yaml");
    std::fs::write(&file, yaml).expect("write");
    kubectl(
        kubeconfig,
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-f",
            file.to_str().expect("UTF-8 path"),
        ],
    )
}

/// A server-side dry run of `yaml` that must pass without a Pod Security
/// warning.
fn dry_run(kubeconfig: &Path, what: &str, yaml: &str) {
    let out = dry_run_output(kubeconfig, yaml);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "{what}: the API server refused it:\n{stdout}{stderr}"
    );
    assert!(
        !stderr.contains("PodSecurity"),
        "{what}: the pods break the restricted Pod Security Standard:\n{stderr}"
    );
    assert!(stdout.contains("(server dry run)"), "{what}: {stdout}");
}

#[test]
fn the_rendered_manifests_pass_a_server_side_dry_run() {
    let Some(dir) = helm_dir() else { return };
    let Some(plane) = control_plane() else { return };
    let kubeconfig = &plane.admin_kubeconfig;
    namespace(kubeconfig, DRY_RUN_NS);
    let files = tempfile::tempdir().expect("tempdir");
    for (mode, args) in modes(files.path()) {
        let docs = documents(&render_with(dir, DRY_RUN_NS, &strs(&args)));
        let mut expected = vec![
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "Deployment",
            "PodDisruptionBudget",
            "Service",
            "ServiceAccount",
            "ValidatingWebhookConfiguration",
        ];
        match mode {
            "generate" => expected.push("Secret"),
            "cert-manager" => expected.extend(["Certificate", "Certificate", "Issuer", "Issuer"]),
            // The Secret is the user's.
            _ => {}
        }
        expected.sort();
        assert_eq!(kinds(&docs), expected, "{mode}");
        dry_run(kubeconfig, mode, &without_cert_manager(&docs));
    }
    // The Pod Security check has teeth: a pod that may run as root is
    // warned about.
    let docs = documents(&render(
        dir,
        DRY_RUN_NS,
        &["podSecurityContext.runAsNonRoot=false"],
    ));
    let out = dry_run_output(kubeconfig, &without_cert_manager(&docs));
    assert_has(&text(&out.stderr), "would violate PodSecurity \"restricted");
    // The checked-in manifests too, in their own namespace.
    namespace(kubeconfig, "crd-safety");
    let deploy = std::fs::read_to_string(repo().join("deploy/crd-safety.yaml")).expect("deploy");
    dry_run(
        kubeconfig,
        "deploy/crd-safety.yaml",
        &without_cert_manager(&documents(&deploy)),
    );
}

#[test]
fn the_webhook_configuration_registers_what_serve_expects() {
    let Some(dir) = helm_dir() else { return };
    for (sets, policy, timeout) in [
        (vec![], "Ignore", 10),
        (vec!["failurePolicy=Fail", "timeoutSeconds=5"], "Fail", 5),
    ] {
        let files = tempfile::tempdir().expect("tempdir");
        for (mode, args) in modes(files.path()) {
            let mut all = strs(&args);
            for set in &sets {
                all.extend(["--set", set]);
            }
            let docs = documents(&render_with(dir, "guard", &all));
            let config = one(&docs, "ValidatingWebhookConfiguration");
            let hooks = config["webhooks"].as_array().expect("webhooks");
            assert_eq!(hooks.len(), 2);
            let hook = &hooks[0];
            // The second validates the consumers' requirements, at serve's
            // own path for them, with the same policy and certificate.
            let requirements = &hooks[1];
            assert_eq!(requirements["name"], "requirements.crd-safety.io");
            assert_eq!(
                requirements["rules"],
                serde_json::json!([{
                    "apiGroups": ["crd-safety.io"],
                    "apiVersions": ["v1alpha1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["crdrequirements"],
                    "scope": "Cluster"
                }])
            );
            assert_eq!(
                requirements["clientConfig"]["service"]["path"],
                "/requirements"
            );
            assert_eq!(requirements["failurePolicy"], policy, "{all:?}");
            assert_eq!(
                requirements["clientConfig"]["caBundle"],
                hook["clientConfig"]["caBundle"]
            );
            assert_eq!(hook["sideEffects"], "None");
            assert_eq!(hook["admissionReviewVersions"], serde_json::json!(["v1"]));
            assert_eq!(hook["failurePolicy"], policy, "{all:?}");
            assert_eq!(hook["timeoutSeconds"], timeout, "{all:?}");
            assert_eq!(
                hook["rules"],
                serde_json::json!([{
                    "apiGroups": ["apiextensions.k8s.io"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "resources": ["customresourcedefinitions"],
                    "scope": "Cluster"
                }]),
                "CRDs only, not their status"
            );
            assert!(hook.get("namespaceSelector").is_none());
            let service = &hook["clientConfig"]["service"];
            assert_eq!(service["name"], "crd-safety");
            assert_eq!(service["namespace"], "guard");
            assert_eq!(service["path"], "/validate");
            assert_eq!(service["port"], 443);
            let svc = one(&docs, "Service");
            assert_eq!(svc["metadata"]["name"], "crd-safety");
            assert_eq!(svc["spec"]["ports"][0]["port"], 443);
            assert_eq!(svc["spec"]["ports"][0]["targetPort"], "https");
            let ca = &hook["clientConfig"]["caBundle"];
            if mode == "generate" {
                // The caBundle is the CA in the Secret the pods serve.
                let secret = one(&docs, "Secret");
                assert_eq!(secret["type"], "kubernetes.io/tls");
                assert_eq!(*ca, secret["data"]["ca.crt"]);
                assert!(config["metadata"].get("annotations").is_none());
            } else if mode == "secret" {
                // The given CA, and the pods mount the given Secret.
                let given = std::fs::read(files.path().join("ca.crt")).expect("ca.crt");
                assert_eq!(base64_decode(ca.as_str().expect("caBundle")), given);
                assert!(config["metadata"].get("annotations").is_none());
                let pod = &one(&docs, "Deployment")["spec"]["template"]["spec"];
                let tls = pod["volumes"]
                    .as_array()
                    .and_then(|vs| vs.iter().find(|v| v["name"] == "tls"))
                    .expect("the tls volume");
                assert_eq!(tls["secret"]["secretName"], "mine");
            } else {
                assert!(ca.is_null(), "cainjector fills it");
                assert_eq!(
                    config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                    "guard/crd-safety-serving"
                );
                let serving = docs
                    .iter()
                    .map(|(_, v)| v)
                    .find(|v| v["metadata"]["name"] == "crd-safety-serving")
                    .expect("the serving Certificate");
                assert_eq!(serving["spec"]["secretName"], "crd-safety-tls");
                let names = serving["spec"]["dnsNames"].as_array().expect("dnsNames");
                assert!(names.contains(&Value::from("crd-safety.guard.svc")));
            }
        }
    }
}

#[test]
fn the_pods_are_restricted_and_mount_what_serve_reads() {
    let Some(dir) = helm_dir() else { return };
    let docs = documents(&render(dir, "guard", &[]));
    let deploy = one(&docs, "Deployment");
    assert_eq!(deploy["spec"]["replicas"], 2);
    let pod = &deploy["spec"]["template"];
    assert!(
        pod["metadata"].get("annotations").is_none(),
        "no checksum/config: serve reloads its configuration"
    );
    let spec = &pod["spec"];
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(spec["securityContext"]["runAsUser"], 65532);
    assert_eq!(
        spec["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let c = &spec["containers"][0];
    assert_eq!(c["image"], "ghcr.io/crd-safety/crd-safety:0.1.0");
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(
        c["securityContext"]["capabilities"]["drop"],
        serde_json::json!(["ALL"])
    );
    assert_eq!(c["ports"][0]["containerPort"], 8443);
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        assert_eq!(c[probe]["httpGet"]["path"], path);
        assert_eq!(c[probe]["httpGet"]["scheme"], "HTTPS");
        assert_eq!(c[probe]["httpGet"]["port"], "https");
    }
    // serve's memory budget fits under the container's limit, with room
    // for the bodies in flight and the server itself.
    let args: Vec<&str> = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let at = args
        .iter()
        .position(|a| *a == "--memory-budget")
        .expect("--memory-budget");
    let mib = |q: &str| {
        q.strip_suffix("Mi")
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{q:?} is not in Mi"))
    };
    let budget = mib(args[at + 1]);
    let limit = mib(c["resources"]["limits"]["memory"]
        .as_str()
        .expect("a limit"));
    assert!(limit >= 2 * budget, "limit {limit}Mi, budget {budget}Mi");
    let mounts = c["volumeMounts"].as_array().expect("mounts");
    for (name, path) in [("tls", "/tls"), ("config", "/config")] {
        let m = mounts.iter().find(|m| m["name"] == name).expect("a mount");
        assert_eq!(m["mountPath"], path);
        assert_eq!(m["readOnly"], true);
        assert!(m.get("subPath").is_none(), "a subPath never sees updates");
    }
    let pdb = one(&docs, "PodDisruptionBudget");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    // With one replica, no PodDisruptionBudget (it would block drains).
    let single = documents(&render(dir, "guard", &["replicaCount=1"]));
    assert!(!kinds(&single).contains(&"PodDisruptionBudget".to_string()));
    // The ClusterRole: the CRDs, the requirements, only `list` on custom
    // resources, and asking the authorizer who may list them (a
    // SubjectAccessReview is a question, stored nowhere).
    let role = one(&docs, "ClusterRole");
    let rules = role["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), 4, "{rules:?}");
    assert_eq!(
        rules[1]["resources"],
        serde_json::json!(["crdrequirements"])
    );
    assert_eq!(rules[2]["verbs"], serde_json::json!(["list"]));
    assert_eq!(
        (&rules[3]["resources"], &rules[3]["verbs"]),
        (
            &serde_json::json!(["subjectaccessreviews"]),
            &serde_json::json!(["create"])
        )
    );
    for rule in &rules[..3] {
        for verb in rule["verbs"].as_array().expect("verbs") {
            assert!(
                ["get", "list", "watch"].contains(&verb.as_str().unwrap_or("")),
                "read-only: {rule}"
            );
        }
    }
}

/// `serve` started as the pod starts it, with its files in a directory.
struct Serving {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `serve` with the container's `args`, the pod's /tls and /config
/// paths moved into `dir`, on a loopback port, against `kubeconfig`.
fn serve_like_the_pod(args: &[String], dir: &Path, kubeconfig: &Path) -> Serving {
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            a.replacen("/tls/", &format!("{}/tls/", dir.display()), 1)
                .replacen("/config/", &format!("{}/config/", dir.display()), 1)
                .replacen("/client-ca/", &format!("{}/client-ca/", dir.display()), 1)
        })
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-crd_safety"))
        .args(&args)
        .args(["--listen", "127.0.0.1:0", "--kubeconfig"])
        .arg(kubeconfig)
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("serve starts");
    let stdout = child.stdout.take().expect("stdout piped");
    // Killed on drop, even when it never gets to serving.
    let mut serving = Serving {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("serve never said it was serving: {seen:#?}"));
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if v["event"] == "serving" {
            serving.addr = v["address"]
                .as_str()
                .and_then(|a| a.parse().ok())
                .expect("address");
            return serving;
        }
        seen.push(line);
    }
}

/// `GET path` over TLS to `addr`, trusting only `ca_pem` and checking the
/// certificate against `server_name`, as the API server checks it against
/// the Service's DNS name. The status code.
async fn get_as(addr: SocketAddr, ca_pem: &[u8], server_name: &str, path: &str) -> u16 {
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n");
    support::webhook::https_as(addr, ca_pem, server_name, request.as_bytes())
        .await
        .0
}

#[tokio::test]
async fn serve_runs_with_the_pods_arguments_and_the_generated_certificate() {
    let Some(dir) = helm_dir() else { return };
    let Some(plane) = control_plane() else { return };
    let docs = documents(&render(
        dir,
        DRY_RUN_NS,
        &[
            "config.webhook.mode=enforce",
            "config.webhook.scanObjects.enabled=true",
        ],
    ));
    let files = tempfile::tempdir().expect("tempdir");
    // The Secret and the ConfigMap, as the kubelet mounts them.
    std::fs::create_dir_all(files.path().join("tls")).expect("tls dir");
    std::fs::create_dir_all(files.path().join("config")).expect("config dir");
    let secret = one(&docs, "Secret");
    for key in ["tls.crt", "tls.key", "ca.crt"] {
        let data = secret["data"][key].as_str().expect("secret data");
        std::fs::write(files.path().join("tls").join(key), base64_decode(data)).expect("write");
    }
    let config = one(&docs, "ConfigMap")["data"]["config.yaml"]
        .as_str()
        .expect("config.yaml");
    assert_has(config, "mode: enforce");
    std::fs::write(files.path().join("config/config.yaml"), config).expect("write");

    let deploy = one(&docs, "Deployment");
    let args: Vec<String> = deploy["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("a string").to_string())
        .collect();
    let served = serve_like_the_pod(&args, files.path(), &plane.admin_kubeconfig);

    let hook = one(&docs, "ValidatingWebhookConfiguration");
    let ca = base64_decode(
        hook["webhooks"][0]["clientConfig"]["caBundle"]
            .as_str()
            .expect("caBundle"),
    );
    // The name the API server calls: <service>.<namespace>.svc.
    let service_name = format!("crd-safety.{DRY_RUN_NS}.svc");
    for path in ["/healthz", "/readyz"] {
        assert_eq!(
            get_as(served.addr, &ca, &service_name, path).await,
            200,
            "{path}"
        );
    }
}

#[test]
fn the_secret_and_cert_manager_modes_render_the_same_text_every_time() {
    // Argo CD renders with `helm template` on every sync, where `lookup`
    // finds nothing: a mode whose output changed from one render to the
    // next would install a new CA each time.
    let Some(dir) = helm_dir() else { return };
    let files = tempfile::tempdir().expect("tempdir");
    let modes = modes(files.path());
    for (mode, args) in &modes {
        let first = render_with(dir, "guard", &strs(args));
        let second = render_with(dir, "guard", &strs(args));
        if *mode == "generate" {
            // Why the other modes exist: generate makes a new CA each time.
            assert_ne!(first, second, "{mode}");
        } else {
            assert_eq!(first, second, "{mode}: two renders differ");
        }
    }
    // The CA's PEM (--set-file) and its base64 give the same caBundle.
    let ca = std::fs::read(files.path().join("ca.crt")).expect("ca.crt");
    let b64 = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&ca)
    };
    let given_b64 = format!("certificates.secret.caBundle={b64}");
    let as_b64 = render_with(
        dir,
        "guard",
        &[
            "--set",
            "certificates.mode=secret",
            "--set",
            "certificates.secret.name=mine",
            "--set",
            &given_b64,
        ],
    );
    let (_, as_pem) = modes
        .iter()
        .find(|(mode, _)| *mode == "secret")
        .expect("secret mode");
    assert_eq!(as_b64, render_with(dir, "guard", &strs(as_pem)));
    // A caBundle that holds no certificate fails the render, not every
    // review later.
    let out = Command::new(dir.join("helm"))
        .args(["template", "crd-safety"])
        .arg(chart())
        .args([
            "--set",
            "certificates.mode=secret",
            "--set",
            "certificates.secret.name=mine",
            "--set",
            "certificates.secret.caBundle=bm90IGEgY2VydA==",
        ])
        .output()
        .expect("helm runs");
    assert!(!out.status.success());
    assert_has(&text(&out.stderr), "holds no PEM certificate");
}

#[test]
fn an_upgrade_keeps_the_generated_certificate() {
    let Some(dir) = helm_dir() else { return };
    let Some(plane) = control_plane() else { return };
    let kubeconfig = &plane.admin_kubeconfig;
    let ns = "crd-safety-upgrade";
    namespace(kubeconfig, ns);
    // Without a cluster to look in, every render makes new certificates.
    let first = documents(&render(dir, ns, &[]));
    let second = documents(&render(dir, ns, &[]));
    let secret = one(&first, "Secret");
    assert_ne!(secret["data"], one(&second, "Secret")["data"]);
    // The first install's Secret, for real.
    let yaml = first
        .iter()
        .find(|(_, v)| v["kind"] == "Secret")
        .map(|(t, _)| t.clone())
        .expect("the Secret");
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("secret.yaml");
    std::fs::write(&file, yaml).expect("write");
    let out = kubectl(
        kubeconfig,
        &[
            "apply",
            "--server-side",
            "-f",
            file.to_str().expect("UTF-8 path"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // An upgrade (lookup works with a cluster) keeps it, and the caBundle.
    let chart = chart();
    let upgrade = documents(&text(
        &helm(
            dir,
            &[
                "template",
                "crd-safety",
                chart.to_str().expect("UTF-8 path"),
                "--namespace",
                ns,
                "--dry-run=server",
                "--kubeconfig",
                kubeconfig.to_str().expect("UTF-8 path"),
            ],
        )
        .stdout,
    ));
    assert_eq!(one(&upgrade, "Secret")["data"], secret["data"]);
    assert_eq!(
        one(&upgrade, "ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"],
        secret["data"]["ca.crt"]
    );
}

#[test]
fn the_pods_spread_over_nodes_and_zones_and_may_take_a_critical_priority() {
    let Some(dir) = helm_dir() else { return };
    let Some(plane) = control_plane() else { return };
    let kubeconfig = &plane.admin_kubeconfig;
    let docs = documents(&render(dir, DRY_RUN_NS, &[]));
    let spec = &one(&docs, "Deployment")["spec"];
    let selector = &spec["selector"]["matchLabels"];
    let pod = &spec["template"]["spec"];
    assert!(pod.get("priorityClassName").is_none(), "none by default");
    assert!(pod.get("affinity").is_none());
    // Nodes required (as a required anti-affinity would), zones preferred;
    // both count only the release's pods, on nodes they may run on.
    let spread = pod["topologySpreadConstraints"]
        .as_array()
        .expect("topologySpreadConstraints");
    let by_key = |key: &str| {
        spread
            .iter()
            .find(|c| c["topologyKey"] == key)
            .unwrap_or_else(|| panic!("no constraint on {key}: {spread:?}"))
    };
    let nodes = by_key("kubernetes.io/hostname");
    assert_eq!(nodes["whenUnsatisfiable"], "DoNotSchedule");
    let zones = by_key("topology.kubernetes.io/zone");
    assert_eq!(zones["whenUnsatisfiable"], "ScheduleAnyway");
    for c in spread {
        assert_eq!(c["maxSkew"], 1);
        assert_eq!(c["nodeTaintsPolicy"], "Honor", "{c}");
        assert_eq!(c["labelSelector"]["matchLabels"], *selector);
    }
    // The rollout surges one pod and never goes below replicaCount: with a
    // required anti-affinity that needs a node more than replicas.
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
    assert_eq!(one(&docs, "PodDisruptionBudget")["spec"]["minAvailable"], 1);
    // Overridable: a constraint's own selector stays; `[]` drops them.
    let own = documents(&render_with(
        dir,
        DRY_RUN_NS,
        &[
            "--set-json",
            r#"topologySpreadConstraints=[{"maxSkew":2,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"tier":"webhooks"}}}]"#,
        ],
    ));
    let pod = &one(&own, "Deployment")["spec"]["template"]["spec"];
    assert_eq!(
        pod["topologySpreadConstraints"],
        serde_json::json!([{
            "maxSkew": 2,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"tier": "webhooks"}}
        }])
    );
    let none = documents(&render_with(
        dir,
        DRY_RUN_NS,
        &["--set-json", "topologySpreadConstraints=[]"],
    ));
    let pod = &one(&none, "Deployment")["spec"]["template"]["spec"];
    assert!(pod.get("topologySpreadConstraints").is_none());
    // The class the values suggest exists in every cluster and is admitted
    // outside kube-system. The Priority admission plugin resolves it on
    // pods, not on Deployments, so the dry run is of the pod the Deployment
    // makes (with its ServiceAccount, which the ServiceAccount plugin looks
    // up, made for real in a namespace of this test's own); one that does
    // not exist is refused, so the check has teeth.
    namespace(kubeconfig, DRY_RUN_NS);
    dry_run(
        kubeconfig,
        "the default spread",
        &without_cert_manager(&docs),
    );
    let ns = "crd-safety-priority";
    namespace(kubeconfig, ns);
    let out = kubectl(
        kubeconfig,
        &["-n", ns, "create", "serviceaccount", "crd-safety"],
    );
    let err = text(&out.stderr);
    assert!(
        out.status.success() || err.contains("AlreadyExists"),
        "create serviceaccount: {err}"
    );
    let pod_of = |class: &str| {
        let docs = documents(&render(dir, ns, &[&format!("priorityClassName={class}")]));
        let template = &one(&docs, "Deployment")["spec"]["template"];
        assert_eq!(template["spec"]["priorityClassName"], class);
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "crd-safety-priority",
                "namespace": ns,
                "labels": template["metadata"]["labels"],
            },
            "spec": template["spec"],
        })
        .to_string()
    };
    dry_run(
        kubeconfig,
        "priorityClassName",
        &pod_of("system-cluster-critical"),
    );
    let out = dry_run_output(kubeconfig, &pod_of("no-such-class"));
    assert!(
        !out.status.success(),
        "an unknown priority class was admitted"
    );
    assert_has(&text(&out.stderr), "no-such-class");
}

/// The `matchConditions` example of values.yaml: its commented lines from
/// `# matchConditions:` up to the first comment line not indented under
/// it, uncommented.
fn match_conditions_example() -> String {
    let values = std::fs::read_to_string(chart().join("values.yaml")).expect("values.yaml");
    let mut lines = values.lines().skip_while(|l| *l != "# matchConditions:");
    let mut example = String::new();
    if let Some(first) = lines.next() {
        example.push_str(&first[2..]);
        example.push('\n');
    }
    for line in lines.take_while(|l| l.starts_with("#   ")) {
        example.push_str(&line[2..]);
        example.push('\n');
    }
    example
}

#[test]
fn the_match_condition_examples_are_cel_the_api_server_accepts() {
    let Some(dir) = helm_dir() else { return };
    let Some(plane) = control_plane() else { return };
    let kubeconfig = &plane.admin_kubeconfig;
    let example = match_conditions_example();
    let files = tempfile::tempdir().expect("tempdir");
    let render_conditions = |yaml: &str| {
        let file = files.path().join("conditions.yaml");
        std::fs::write(&file, yaml).expect("write");
        let docs = documents(&render_with(
            dir,
            DRY_RUN_NS,
            &["-f", file.to_str().expect("UTF-8 path")],
        ));
        let (text, config) = docs
            .into_iter()
            .find(|(_, v)| v["kind"] == "ValidatingWebhookConfiguration")
            .expect("the webhook configuration");
        (format!("---\n{text}"), config)
    };
    let (yaml, config) = render_conditions(&example);
    let conditions = &config["webhooks"][0]["matchConditions"];
    let names: Vec<&str> = conditions
        .as_array()
        .unwrap_or_else(|| panic!("no matchConditions from {example}"))
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["not-break-glass-group", "not-crd-generating-controllers"]
    );
    let expressions = conditions.to_string();
    assert_has(&expressions, "request.userInfo.groups");
    assert_has(
        &expressions,
        "system:serviceaccount:crossplane-system:crossplane",
    );
    // The CRDRequirement webhook keeps every request.
    assert!(config["webhooks"][1].get("matchConditions").is_none());
    // The API server compiles and type-checks every expression when the
    // configuration is written: the examples pass a server-side dry run...
    dry_run(kubeconfig, "the matchConditions examples", &yaml);
    // ...and one naming a field AdmissionRequest's userInfo lacks, or not
    // returning a bool, does not.
    for (bad, said) in [
        (
            "!('platform-admins' in request.userInfo.group)",
            "undefined field",
        ),
        ("request.userInfo.username", "bool"),
    ] {
        let (yaml, _) = render_conditions(&format!(
            "matchConditions:\n  - name: bad\n    expression: {bad:?}\n"
        ));
        let out = dry_run_output(kubeconfig, &yaml);
        assert!(!out.status.success(), "{bad} was accepted");
        assert_has(&text(&out.stderr), said);
    }
}

#[tokio::test]
async fn with_client_auth_the_pods_refuse_clients_without_a_certificate_and_probe_by_tcp() {
    let Some(dir) = helm_dir() else { return };
    let Some(plane) = control_plane() else { return };
    let kubeconfig = &plane.admin_kubeconfig;
    let docs = documents(&render(
        dir,
        DRY_RUN_NS,
        &["clientAuth.caSecretName=clients"],
    ));
    let pod = &one(&docs, "Deployment")["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let args: Vec<String> = c["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("a string").to_string())
        .collect();
    let at = args
        .iter()
        .position(|a| a == "--client-ca-file")
        .expect("--client-ca-file");
    assert_eq!(args[at + 1], "/client-ca/ca.crt");
    let ca_volume = pod["volumes"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == "client-ca"))
        .expect("the client-ca volume");
    assert_eq!(ca_volume["secret"]["secretName"], "clients");
    let mount = c["volumeMounts"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == "client-ca"))
        .expect("the client-ca mount");
    assert_eq!(mount["mountPath"], "/client-ca");
    assert!(mount.get("subPath").is_none());
    // The kubelet presents no client certificate: its probes check that the
    // port accepts, keeping their timing.
    for (probe, period) in [("livenessProbe", 10), ("readinessProbe", 5)] {
        assert!(c[probe].get("httpGet").is_none(), "{probe}: {}", c[probe]);
        assert_eq!(c[probe]["tcpSocket"]["port"], "https", "{probe}");
        assert_eq!(c[probe]["periodSeconds"], period, "{probe}");
    }
    // Without clientAuth, nothing of it.
    let plain = documents(&render(dir, DRY_RUN_NS, &[]));
    let plain_c = &one(&plain, "Deployment")["spec"]["template"]["spec"]["containers"][0];
    assert!(!plain_c["args"].to_string().contains("--client-ca-file"));
    assert_eq!(plain_c["readinessProbe"]["httpGet"]["path"], "/readyz");
    namespace(kubeconfig, DRY_RUN_NS);
    dry_run(kubeconfig, "clientAuth", &without_cert_manager(&docs));

    // serve with those arguments: a serving certificate for 127.0.0.1, the
    // chart's configuration, and a client CA at the pod's paths.
    let files = tempfile::tempdir().expect("tempdir");
    for sub in ["tls", "config", "client-ca"] {
        std::fs::create_dir_all(files.path().join(sub)).expect("dir");
    }
    let serving = support::webhook::TestCa::new();
    serving.issue(&files.path().join("tls"));
    let config = one(&docs, "ConfigMap")["data"]["config.yaml"]
        .as_str()
        .expect("config.yaml");
    std::fs::write(files.path().join("config/config.yaml"), config).expect("write");
    let clients = support::webhook::TestCa::new();
    std::fs::write(files.path().join("client-ca/ca.crt"), &clients.pem).expect("write");
    let served = serve_like_the_pod(&args, files.path(), kubeconfig);
    // What the tcpSocket probe checks.
    tokio::net::TcpStream::connect(served.addr)
        .await
        .expect("the port accepts");
    // What an httpGet probe, or a Prometheus without a certificate, gets.
    for path in ["/healthz", "/readyz", "/metrics"] {
        let got =
            support::webhook::https_with(served.addr, &serving, None, &support::webhook::get(path))
                .await;
        assert!(
            got.is_err(),
            "{path} answered without a certificate: {got:?}"
        );
    }
    // A scraper with a certificate of the client CA.
    let scraper = clients.client("prometheus");
    let (code, body) = support::webhook::https_with(
        served.addr,
        &serving,
        Some(&scraper),
        &support::webhook::get("/metrics"),
    )
    .await
    .expect("/metrics with a client certificate");
    assert_eq!(code, 200);
    assert_has(&body, "# TYPE crd_safety_reviews_total counter");
}
