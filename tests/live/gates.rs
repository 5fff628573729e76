//! Gates inside a rollout: the Job's exact command, run as its
//! ServiceAccount with in-cluster credentials (the token and CA files and
//! the `KUBERNETES_SERVICE_*` variables, no kubeconfig), against a real API
//! server with the RBAC `deploy/gates/rbac.yaml` ships.

use std::path::Path;
use std::process::{Command, Stdio};

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::support;
use support::envtest::control_plane;
use support::live::{admin, crd, create_objects, install, write_manifest};
use support::run::Run;

const NS: &str = "crd-safety-gate";
const SA: &str = "crd-safety-gate";

/// The shipped ClusterRole's rules.
fn shipped_rules() -> Vec<Value> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/gates/rbac.yaml"),
    )
    .expect("deploy/gates/rbac.yaml is readable");
    text.split("\n---\n")
        .map(|doc| serde_saphyr::from_str::<Value>(doc).expect("each document parses"))
        .find(|d| d["kind"] == "ClusterRole")
        .and_then(|d| d["rules"].as_array().cloned())
        .expect("a ClusterRole with rules")
}

/// The namespace, the ServiceAccount, and `rules` bound to it under the
/// shipped names; a token for it.
async fn service_account(client: &Client, rules: &[Value]) -> String {
    let apply = PatchParams::apply("crd-safety-test").force();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    Api::<Namespace>::all(client.clone())
        .patch(NS, &apply, &Patch::Apply(&ns))
        .await
        .expect("namespace");
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": SA, "namespace": NS}});
    Api::<ServiceAccount>::namespaced(client.clone(), NS)
        .patch(SA, &apply, &Patch::Apply(&sa))
        .await
        .expect("service account");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": SA}, "rules": rules});
    Api::<ClusterRole>::all(client.clone())
        .patch(SA, &apply, &Patch::Apply(&role))
        .await
        .expect("role");
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": SA},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SA},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}]});
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(SA, &apply, &Patch::Apply(&binding))
        .await
        .expect("binding");
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}});
    let body = serde_json::to_vec(&request).expect("a token request");
    let http = http::Request::post(format!(
        "/api/v1/namespaces/{NS}/serviceaccounts/{SA}/token"
    ))
    .header("content-type", "application/json")
    .body(body)
    .expect("a request");
    let answer: Value = client.request(http).await.expect("a token");
    answer["status"]["token"]
        .as_str()
        .expect("the token")
        .to_string()
}

/// The gate's command, `apply-check -f MANIFEST --objects`, as a pod runs
/// it: no kubeconfig, the service account files in `dir`.
fn gate(manifest: &str, dir: &Path, server: &str) -> Run {
    let port = server.rsplit(':').next().expect("a port");
    let home = tempfile::tempdir().expect("home");
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-crd_safety"))
        .args(["apply-check", "-f", manifest, "--objects", "-o", "json"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", port)
        .env("CRD_SAFETY_SERVICE_ACCOUNT_DIR", dir)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test]
async fn the_gate_passes_with_the_shipped_rbac_and_names_what_a_missing_rule_refuses() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let old = crd("gatewidgets", &[("v1", true, true)], json!({}));
    install(&client, &old).await;
    let objects = vec![("default".to_string(), "w".to_string(), json!({"size": 3}))];
    create_objects(&client, "gatewidgets", "v1", objects).await;
    let new = crd(
        "gatewidgets",
        &[("v1", true, true)],
        json!({"color": {"type": "string"}}),
    );
    let work = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(work.path(), "new.json", &new);
    let sa = work.path().join("serviceaccount");
    std::fs::create_dir_all(&sa).expect("sa dir");
    std::fs::copy(
        plane.dir.path().join("certs/apiserver.crt"),
        sa.join("ca.crt"),
    )
    .expect("the CA");
    std::fs::write(sa.join("namespace"), NS).expect("namespace file");

    let rules = shipped_rules();
    let token = service_account(&client, &rules).await;
    std::fs::write(sa.join("token"), &token).expect("token file");
    let r = gate(&manifest, &sa, &plane.server);
    assert_eq!(r.code, 0, "the gate with the shipped RBAC: {r:?}");
    let report: Value = serde_json::from_str(&r.stdout).expect("a JSON report");
    assert_eq!(
        report["crds"][0]["name"], "gatewidgets.example.com",
        "{report}"
    );
    assert_eq!(
        report["crds"][0]["scan"]["scanned"], 1,
        "the stored object was listed and checked as the ServiceAccount: {report}"
    );

    // Each rule taken away in turn: the gate fails and names the verb.
    for (missing, verb) in [(0usize, "patch"), (1, "list")] {
        let mut fewer = rules.clone();
        if missing == 0 {
            fewer[0]["verbs"] = json!(["get", "list"]);
        } else {
            fewer.remove(1);
        }
        service_account(&client, &fewer).await;
        let r = gate(&manifest, &sa, &plane.server);
        assert_ne!(r.code, 0, "without {verb}: {r:?}");
        assert!(
            r.stderr.contains(verb) || r.stdout.contains(verb),
            "without {verb}, the gate names it: {r:?}"
        );
    }
    service_account(&client, &rules).await;
}
