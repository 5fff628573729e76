//! Live tests against a real kube-apiserver and etcd (see
//! `support/envtest.rs`), on the control plane the live tests share. Each
//! test uses its own CRD names so the tests can run in parallel.

use crate::support;

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use serde_json::{Value, json};
use support::envtest::{control_plane, control_plane_of, free_port, matrix};
use support::live::{admin, apply_check, crd, create_objects, findings, install, write_manifest};
use support::run::run;
use support::runs::{assert_has, finding};

/// `apply-check` of the safe-upgrade example with `kubeconfig` meets a
/// cluster fault: exit 3 and one line on stderr, which is returned.
fn fault_line(kubeconfig: &str, extra: &[&str]) -> String {
    let r = apply_check("examples/safe-upgrade/new.yaml", kubeconfig, extra);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    r.stderr
}

/// Writes a kubeconfig's `text` to `name` in `dir`: its path.
fn kubeconfig_file(dir: &Path, name: &str, text: String) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("kubeconfig");
    path.display().to_string()
}

#[tokio::test]
async fn the_test_control_plane_serves_crds_to_admin_and_denies_the_restricted_user() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    install(&client, &crd("harnesses", &[("v1", true, true)], json!({}))).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let live = crds
        .get("harnesses.example.com")
        .await
        .expect("admin reads the CRD");
    let stored = live
        .status
        .and_then(|s| s.stored_versions)
        .unwrap_or_default();
    assert_eq!(
        stored,
        vec!["v1".to_string()],
        "the server records the storage version"
    );
    let restricted = plane
        .client(&plane.restricted_kubeconfig)
        .await
        .expect("restricted client");
    let denied: Api<CustomResourceDefinition> = Api::all(restricted);
    match denied.get("harnesses.example.com").await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stored_version_removal_is_caught_only_thanks_to_the_live_stored_versions() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    // v1alpha1 is the storage version when the first object is written...
    install(
        &client,
        &crd(
            "olders",
            &[("v1alpha1", true, true), ("v1", true, false)],
            json!({}),
        ),
    )
    .await;
    let first = ("default".into(), "first".into(), json!({"size": 1}));
    create_objects(&client, "olders", "v1alpha1", vec![first]).await;
    // ...then storage moves to v1: status.storedVersions is now [v1alpha1, v1].
    let switched = crd(
        "olders",
        &[("v1alpha1", true, false), ("v1", true, true)],
        json!({}),
    );
    install(&client, &switched).await;

    let dir = tempfile::tempdir().expect("tempdir");
    let dropped = write_manifest(
        dir.path(),
        "new.json",
        &crd("olders", &[("v1", true, true)], json!({})),
    );
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = apply_check(&dropped, &kubeconfig, &["-o", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(report["crds"][0]["storedVersions"]["source"], "status");
    assert_eq!(
        report["crds"][0]["storedVersions"]["versions"],
        json!(["v1alpha1", "v1"])
    );
    let removal = (
        "storedVersionRemoval".into(),
        "error".into(),
        Some("v1alpha1".into()),
    );
    let f = findings(&report);
    assert!(f.contains(&removal), "{f:?}");
    // The API server's own refusal is reported.
    let rejection = finding(&report, "apiServerRejects");
    assert!(
        rejection["message"]
            .as_str()
            .is_some_and(|m| m.contains("storedVersions")),
        "{rejection}"
    );
    assert_eq!(report["cluster"]["server"], plane.server.as_str());

    // Offline, the same manifests cannot know v1alpha1 was ever stored.
    let installed = write_manifest(dir.path(), "installed.json", &switched);
    let offline = run(&["diff", &installed, &dropped, "-o", "json"], None);
    let offline: Value = serde_json::from_str(&offline.stdout).expect("json");
    assert!(
        !findings(&offline).contains(&removal),
        "offline the removal can only be a warning"
    );
}

#[tokio::test]
async fn a_crd_missing_from_the_cluster_is_new_and_the_header_names_the_context() {
    let Some(plane) = control_plane() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_manifest(
        dir.path(),
        "fresh.json",
        &crd("freshes", &[("v1", true, true)], json!({})),
    );
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = apply_check(&path, &kubeconfig, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .starts_with(&format!("context: envtest-admin  server: {}", plane.server)),
        "{}",
        r.stdout
    );
    assert_has(&r.stdout, "freshes.example.com  NEW");
}

#[tokio::test]
async fn the_api_servers_own_rejection_is_a_finding() {
    let Some(plane) = control_plane() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bad = crd("brokens", &[("v1", true, true)], json!({}));
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{"rule": "self.size >"}]);
    let path = write_manifest(dir.path(), "broken.json", &bad);
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = apply_check(&path, &kubeconfig, &["-o", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).expect("json");
    // The dry run's refusal.
    let f = finding(&report, "apiServerRejects");
    assert!(
        f["message"]
            .as_str()
            .is_some_and(|m| m.contains("x-kubernetes-validations")),
        "{f}"
    );
    // The offline check saw it too, at the path the server names.
    let offline = finding(&report, "invalidCrd");
    assert_eq!(
        offline["path"],
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    // Judged by the server's own version, which the report names exactly.
    assert_eq!(report["kubeVersion"], format!("1.{}", plane.kube_minor));
    assert_eq!(report["kubeVersionSource"], "server");
    assert_eq!(report["serverVersion"], plane.kube_version);
}

/// The user story of 1.37: a new rule using a list function of 1.34 is
/// taken by a 1.35+ server and refused by older ones. `apply-check` says
/// what the server it talks to says, on every server of the matrix.
#[tokio::test]
async fn a_new_rule_is_judged_by_the_connected_servers_own_version() {
    for version in matrix() {
        let Some(plane) = control_plane_of(&version) else {
            return;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let mut listed = crd("distincts", &[("v1", true, true)], json!({}));
        listed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["l"] = json!({"type": "array", "maxItems": 8,
                "items": {"type": "string", "maxLength": 16}});
        listed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
            json!([{"rule": "self.l.distinct().size() == self.l.size()"}]);
        let path = write_manifest(dir.path(), "distinct.json", &listed);
        let kubeconfig = plane.admin_kubeconfig.display().to_string();
        let r = apply_check(&path, &kubeconfig, &["-o", "json"]);
        let report: Value = serde_json::from_str(&r.stdout).expect("json");
        let checks: Vec<&str> = report["crds"][0]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["severity"] == "error")
            .filter_map(|f| f["check"].as_str())
            .collect();
        if plane.kube_minor >= 35 {
            assert_eq!(
                r.code, 0,
                "{}: {}{}",
                plane.kube_version, r.stdout, r.stderr
            );
            assert!(checks.is_empty(), "{}: {checks:?}", plane.kube_version);
        } else {
            assert_eq!(
                r.code, 1,
                "{}: {}{}",
                plane.kube_version, r.stdout, r.stderr
            );
            assert_eq!(
                checks,
                ["invalidCrd", "apiServerRejects"],
                "{}: the offline check and the dry run agree",
                plane.kube_version
            );
        }
    }
}

#[tokio::test]
async fn cluster_faults_are_one_line_and_exit_3() {
    let Some(plane) = control_plane() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let admin_cfg = std::fs::read_to_string(&plane.admin_kubeconfig).expect("kubeconfig");

    // 403: the restricted user may not read CRDs.
    let restricted = plane.restricted_kubeconfig.display().to_string();
    let stderr = fault_line(&restricted, &[]);
    assert!(
        stderr.contains("forbidden (403)")
            && stderr.contains("cannot get resource \"customresourcedefinitions\""),
        "{stderr}"
    );

    // Nothing listens on the port.
    let closed = free_port();
    let unreachable = admin_cfg.replace(&plane.server, &format!("https://127.0.0.1:{closed}"));
    let path = kubeconfig_file(dir.path(), "unreachable.kubeconfig", unreachable);
    let stderr = fault_line(&path, &[]);
    assert!(
        stderr.contains("cannot reach the API server at https://127.0.0.1:")
            && stderr.ends_with(": connection refused - did you specify the right host or port?\n"),
        "{stderr}"
    );

    // 401: a bearer token the server does not know.
    let token = "not-a-real-token-4f1c2a";
    let user_start = admin_cfg.find("users:").expect("users section");
    let user_end = admin_cfg.find("contexts:").expect("contexts section");
    let with_token = format!(
        "{}users:\n- name: admin\n  user:\n    token: {token}\n{}",
        &admin_cfg[..user_start],
        &admin_cfg[user_end..]
    );
    let path = kubeconfig_file(dir.path(), "token.kubeconfig", with_token);
    let stderr = fault_line(&path, &[]);
    assert_has(
        &stderr,
        &format!(
            "{} refused the credentials of context envtest-admin (401 Unauthorized)",
            plane.server
        ),
    );
    assert!(!stderr.contains(token), "the token is never printed");

    // A request timeout: the path to the real server stalls (a relay that
    // accepts connections and never forwards a byte).
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    let port = stalled.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in stalled.incoming().take(8).flatten() {
            held.push(conn);
        }
        std::thread::sleep(std::time::Duration::from_secs(30));
    });
    let slow = admin_cfg.replace(&plane.server, &format!("https://127.0.0.1:{port}"));
    let path = kubeconfig_file(dir.path(), "stalled.kubeconfig", slow);
    let started = std::time::Instant::now();
    let stderr = fault_line(&path, &["--request-timeout", "1s"]);
    assert_has(
        &stderr,
        &format!("request to https://127.0.0.1:{port} timed out after 1s (--request-timeout)"),
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the timeout bounds the wait"
    );

    // The server's certificate is not signed by the CA the kubeconfig trusts.
    let wrong_ca = plane.dir.path().join("pki/ca.crt");
    let serving_ca = plane.dir.path().join("certs/apiserver.crt");
    let untrusted = admin_cfg.replace(
        &serving_ca.display().to_string(),
        &wrong_ca.display().to_string(),
    );
    let path = kubeconfig_file(dir.path(), "untrusted.kubeconfig", untrusted);
    let stderr = fault_line(&path, &[]);
    assert_has(&stderr, "TLS handshake with");
    for secret in [".key", "BEGIN"] {
        assert!(!stderr.contains(secret), "no credential material in errors");
    }
}

#[tokio::test]
async fn kubectl_runs_the_plugin_as_kubectl_crd_safety() {
    let Some(plane) = control_plane() else { return };
    let kubectl = plane.assets.join("kubectl");
    let kubectl = if kubectl.exists() {
        kubectl
    } else {
        std::path::PathBuf::from("kubectl")
    };
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kubectl-crd_safety"))
        .parent()
        .expect("binary directory")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(&kubectl)
        .args([
            "crd-safety",
            "apply-check",
            "-f",
            "examples/safe-upgrade/new.yaml",
            "--kubeconfig",
        ])
        .arg(&plane.admin_kubeconfig)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) if !std::env::var("CI").is_ok_and(|v| v == "true") => {
            eprintln!("notice: kubectl not available ({e}); skipping the plugin test");
            return;
        }
        Err(e) => panic!("kubectl is required in CI: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_has(&stdout, "gadgets.example.com  NEW");
}
