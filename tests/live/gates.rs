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
    service_account_named(client, NS, SA, rules).await
}

/// [`service_account`] under other names.
async fn service_account_named(client: &Client, ns: &str, sa: &str, rules: &[Value]) -> String {
    let apply = PatchParams::apply("crd-safety-test").force();
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    Api::<Namespace>::all(client.clone())
        .patch(ns, &apply, &Patch::Apply(&namespace))
        .await
        .expect("namespace");
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": sa, "namespace": ns}});
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .patch(sa, &apply, &Patch::Apply(&account))
        .await
        .expect("service account");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": sa}, "rules": rules});
    Api::<ClusterRole>::all(client.clone())
        .patch(sa, &apply, &Patch::Apply(&role))
        .await
        .expect("role");
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": sa},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": sa},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]});
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(sa, &apply, &Patch::Apply(&binding))
        .await
        .expect("binding");
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}});
    let body = serde_json::to_vec(&request).expect("a token request");
    let http = http::Request::post(format!(
        "/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token"
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
    run_as_pod(
        &["apply-check", "-f", manifest, "--objects", "-o", "json"],
        dir,
        server,
    )
}

/// The binary with `args`, as a pod runs it: no kubeconfig, the service
/// account files in `dir`, the API server through `KUBERNETES_SERVICE_*`.
fn run_as_pod(args: &[&str], dir: &Path, server: &str) -> Run {
    let port = server.rsplit(':').next().expect("a port");
    let home = tempfile::tempdir().expect("home");
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-crd_safety"))
        .args(args)
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
            fewer[0]["verbs"] = json!(["get", "list", "create"]);
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

/// The ECK CRD files the Helm hook test's chart ships: Elasticsearch
/// (1.45 MB) and Kibana (1.22 MB), each over a ConfigMap's 1 MiB.
const ECK: &str = "eck-full-bases/v3.0.0";
const ECK_FILES: [&str; 2] = [
    "elasticsearch.k8s.elastic.co_elasticsearches.yaml",
    "kibana.k8s.elastic.co_kibanas.yaml",
];

/// A ConfigMap's limit on its data (the API server's `MaxSecretSize`).
const CONFIGMAP_BYTES: usize = 1024 * 1024;

/// An operator's chart with ECK's CRDs in `crds/` and the gate template
/// and values of `deploy/gates/helm` copied in, as docs/gates.md says.
fn operator_chart(corpus: &Path, dir: &Path) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/gates/helm");
    std::fs::create_dir_all(dir.join("crds")).expect("crds/");
    std::fs::create_dir_all(dir.join("templates")).expect("templates/");
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: eck-operator\nversion: 3.0.0\n",
    )
    .expect("Chart.yaml");
    std::fs::copy(repo.join("values.yaml"), dir.join("values.yaml")).expect("values.yaml");
    std::fs::copy(
        repo.join("templates/crd-safety-gate.yaml"),
        dir.join("templates/crd-safety-gate.yaml"),
    )
    .expect("the template");
    for file in ECK_FILES {
        std::fs::copy(corpus.join(ECK).join(file), dir.join("crds").join(file)).expect("a CRD");
    }
}

/// The ConfigMap volume the kubelet would mount for the Job, in `dir`: the
/// files in a dated hidden directory, `..data` linked to it, each key a
/// link through `..data` (as `projected` writes them).
fn mount(configmaps: &[&Value], dir: &Path) {
    use std::os::unix::fs::symlink;
    let dated = dir.join("..2026_12_03_12_00_00.000000001");
    std::fs::create_dir_all(&dated).expect("the dated directory");
    symlink(dated.file_name().expect("a name"), dir.join("..data")).expect("..data");
    for cm in configmaps {
        for (key, text) in cm["data"].as_object().expect("data") {
            std::fs::write(dated.join(key), text.as_str().expect("a string")).expect("a key");
            symlink(format!("..data/{key}"), dir.join(key)).expect("the key's link");
        }
    }
}

#[tokio::test]
async fn the_helm_hook_cuts_large_crds_under_the_configmap_limit_and_its_job_gates_the_upgrade() {
    let Some(helm) = support::helm::helm_dir() else {
        return;
    };
    let Some(corpus) = support::corpus::corpus_dir() else {
        return;
    };
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let work = tempfile::tempdir().expect("tempdir");
    let chart = work.path().join("eck-operator");
    operator_chart(&corpus, &chart);
    let ns = "eck-system";
    let out = Command::new(helm.join("helm"))
        .args(["template", "eck", chart.to_str().expect("UTF-8"), "-n", ns])
        .args(["--set", "crdSafetyGate.enabled=true"])
        .args([
            "--set",
            "crdSafetyGate.groups={elasticsearch.k8s.elastic.co,kibana.k8s.elastic.co}",
        ])
        .env("HELM_CACHE_HOME", work.path().join("helm-cache"))
        .env("HELM_CONFIG_HOME", work.path().join("helm-config"))
        .env("HELM_DATA_HOME", work.path().join("helm-data"))
        .output()
        .expect("helm runs");
    let rendered = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "helm template: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs: Vec<Value> = rendered
        .split("\n---\n")
        .filter(|d| d.contains("kind:"))
        .map(|d| serde_saphyr::from_str::<Value>(d).expect("a rendered document parses"))
        .collect();
    let of_kind =
        |kind: &str| -> Vec<&Value> { docs.iter().filter(|d| d["kind"] == kind).collect() };

    // Every object is a pre-install,pre-upgrade hook; each ConfigMap is
    // under the limit; the parts put back together are the files, byte
    // for byte; the Job mounts every part and runs once.
    for doc in &docs {
        assert_eq!(
            doc["metadata"]["annotations"]["helm.sh/hook"], "pre-install,pre-upgrade",
            "{}",
            doc["metadata"]
        );
    }
    let configmaps = of_kind("ConfigMap");
    for cm in &configmaps {
        let size: usize = cm["data"]
            .as_object()
            .expect("data")
            .values()
            .map(|v| v.as_str().map_or(0, str::len))
            .sum();
        assert!(
            size < CONFIGMAP_BYTES,
            "{} holds {size} bytes",
            cm["metadata"]["name"]
        );
    }
    for file in ECK_FILES {
        let mut parts: Vec<(String, String)> = configmaps
            .iter()
            .flat_map(|cm| cm["data"].as_object().expect("data").iter())
            .filter(|(k, _)| k.starts_with(&format!("{file}.part-")))
            .map(|(k, v)| (k.clone(), v.as_str().expect("text").to_string()))
            .collect();
        parts.sort();
        assert!(parts.len() >= 2, "{file} is over 1 MiB: cut in parts");
        let joined: String = parts.into_iter().map(|(_, text)| text).collect();
        let original = std::fs::read_to_string(corpus.join(ECK).join(file)).expect("the file");
        assert!(joined == original, "{file}: its parts join to the file");
    }
    let jobs = of_kind("Job");
    let job = jobs.first().expect("one Job");
    assert_eq!(
        job["metadata"]["name"], "eck-crd-safety-gate-1",
        "the Job's name carries the release's revision (Jobs are immutable)"
    );
    assert_eq!(job["spec"]["backoffLimit"], 0);
    let sources = job["spec"]["template"]["spec"]["volumes"][0]["projected"]["sources"]
        .as_array()
        .expect("projected sources");
    assert_eq!(sources.len(), configmaps.len(), "every part is mounted");

    // The API server accepts everything the hook renders.
    let kubeconfig = &plane.admin_kubeconfig;
    let created = support::webhook::kubectl(kubeconfig, &["create", "namespace", ns]);
    assert!(
        created.status.success() || String::from_utf8_lossy(&created.stderr).contains("exists"),
        "{created:?}"
    );
    let file = work.path().join("rendered.yaml");
    std::fs::write(&file, &rendered).expect("rendered.yaml");
    let dry = support::webhook::kubectl(
        kubeconfig,
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-f",
            file.to_str().expect("UTF-8"),
        ],
    );
    assert!(
        dry.status.success(),
        "the API server refused the hook's objects: {}",
        String::from_utf8_lossy(&dry.stderr)
    );

    // The Job's command as its ServiceAccount, with the rendered rules, on
    // the mounted parts: a first install passes.
    let role = of_kind("ClusterRole");
    let rules = role[0]["rules"].as_array().expect("rules").clone();
    let sa = job["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .expect("the Job's ServiceAccount");
    let token = service_account_named(&client, ns, sa, &rules).await;
    let creds = work.path().join("serviceaccount");
    std::fs::create_dir_all(&creds).expect("sa dir");
    std::fs::copy(
        plane.dir.path().join("certs/apiserver.crt"),
        creds.join("ca.crt"),
    )
    .expect("the CA");
    std::fs::write(creds.join("namespace"), ns).expect("namespace");
    std::fs::write(creds.join("token"), &token).expect("token");
    let crds = work.path().join("crds");
    mount(&configmaps, &crds);
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let mount_path = container["volumeMounts"][0]["mountPath"]
        .as_str()
        .expect("the mount");
    let crds_arg = crds.to_str().expect("UTF-8");
    let args: Vec<&str> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("an argument"))
        .map(|a| if a == mount_path { crds_arg } else { a })
        .collect();
    // A CRD not installed yet is dry-run as a create: without that verb
    // the gate fails and names it.
    let mut no_create = rules.clone();
    no_create[0]["verbs"] = json!(["get", "list", "patch"]);
    service_account_named(&client, ns, sa, &no_create).await;
    let refused = run_as_pod(&args, &creds, &plane.server);
    assert_eq!(refused.code, 3, "without create: {refused:?}");
    assert!(refused.stderr.contains("cannot create"), "{refused:?}");
    service_account_named(&client, ns, sa, &rules).await;

    let first = run_as_pod(&args, &creds, &plane.server);
    assert_eq!(first.code, 0, "a first install passes the gate: {first:?}");
    for file in ECK_FILES {
        assert!(
            first.stdout.contains(&format!("{crds_arg}/{file}")) || first.stdout.contains(file),
            "the report names {file}: {}",
            first.stdout
        );
    }

    // The live Kibana CRD keeps its objects in a version the chart no
    // longer has: the gate fails, naming the check, and the upgrade stops.
    let text = std::fs::read_to_string(corpus.join(ECK).join(ECK_FILES[1])).expect("kibanas");
    let mut live: Value = serde_saphyr::from_str(&text).expect("the Kibana CRD");
    let versions = live["spec"]["versions"].as_array_mut().expect("versions");
    let mut old = versions[0].clone();
    for v in versions.iter_mut() {
        v["storage"] = json!(false);
    }
    old["name"] = json!("v1alpha9");
    old["storage"] = json!(true);
    versions.push(old);
    install(&client, &live).await;
    let second = run_as_pod(&args, &creds, &plane.server);
    assert_eq!(second.code, 1, "the gate stops the upgrade: {second:?}");
    assert!(
        second.stdout.contains("storedVersionRemoval"),
        "{}",
        second.stdout
    );
    let crds_api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    crds_api
        .delete("kibanas.kibana.k8s.elastic.co", &Default::default())
        .await
        .expect("the live Kibana CRD is removed");
}
