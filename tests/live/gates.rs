//! Gates inside a rollout: the Job's exact command, run as its
//! ServiceAccount with in-cluster credentials (the token and CA files and
//! the `KUBERNETES_SERVICE_*` variables, no kubeconfig), against a real API
//! server with the RBAC `deploy/gates/kustomize/rbac.yaml` ships.

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
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/gates/kustomize/rbac.yaml"),
    )
    .expect("deploy/gates/kustomize/rbac.yaml is readable");
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

/// The namespace `ns`, created unless it is there.
async fn namespace(client: &Client, ns: &str) {
    let apply = PatchParams::apply("crd-safety-test").force();
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    Api::<Namespace>::all(client.clone())
        .patch(ns, &apply, &Patch::Apply(&namespace))
        .await
        .expect("namespace");
}

/// [`service_account`] for the ServiceAccount `sa` of `ns`.
async fn service_account_named(client: &Client, ns: &str, sa: &str, rules: &[Value]) -> String {
    let apply = PatchParams::apply("crd-safety-test").force();
    namespace(client, ns).await;
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": sa, "namespace": ns}});
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .patch(sa, &apply, &Patch::Apply(&account))
        .await
        .expect("service account");
    // Cluster-wide names of their own: the tests run at once on one server.
    let cluster_name = format!("{sa}.{ns}");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": cluster_name}, "rules": rules});
    Api::<ClusterRole>::all(client.clone())
        .patch(&cluster_name, &apply, &Patch::Apply(&role))
        .await
        .expect("role");
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": cluster_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_name},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]});
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(&cluster_name, &apply, &Patch::Apply(&binding))
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
    namespace(&client, ns).await;
    server_dry_run(plane, work.path(), &rendered);

    // The Job's command as its ServiceAccount, with the rendered rules, on
    // the mounted parts: a first install passes.
    let (args, creds, rules, sa) = the_job(&client, plane, &docs, ns, work.path()).await;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let crds_arg = args[2];
    // A CRD not installed yet is dry-run as a create: without that verb
    // the gate fails and names it.
    let mut no_create = rules.clone();
    no_create[0]["verbs"] = json!(["get", "list", "patch"]);
    service_account_named(&client, ns, &sa, &no_create).await;
    let refused = run_as_pod(&args, &creds, &plane.server);
    assert_eq!(refused.code, 3, "without create: {refused:?}");
    assert!(refused.stderr.contains("cannot create"), "{refused:?}");
    service_account_named(&client, ns, &sa, &rules).await;

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

/// What a kubelet would give the Job of `docs` in `ns`: its ServiceAccount
/// with the rendered ClusterRole's rules and a token (in a directory laid
/// out as a pod's), its ConfigMaps mounted under `work`, and its container's
/// arguments with the mount's path changed to where they are. Returns the
/// arguments, the credentials' directory, the rules and the account.
async fn the_job(
    client: &Client,
    plane: &support::envtest::ControlPlane,
    docs: &[Value],
    ns: &str,
    work: &Path,
) -> (Vec<String>, std::path::PathBuf, Vec<Value>, String) {
    let of_kind =
        |kind: &str| -> Vec<&Value> { docs.iter().filter(|d| d["kind"] == kind).collect() };
    let job = of_kind("Job")[0];
    let rules = of_kind("ClusterRole")[0]["rules"]
        .as_array()
        .expect("rules")
        .clone();
    let sa = job["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .expect("the Job's ServiceAccount")
        .to_string();
    let token = service_account_named(client, ns, &sa, &rules).await;
    let creds = work.join("serviceaccount");
    std::fs::create_dir_all(&creds).expect("sa dir");
    std::fs::copy(
        plane.dir.path().join("certs/apiserver.crt"),
        creds.join("ca.crt"),
    )
    .expect("the CA");
    std::fs::write(creds.join("namespace"), ns).expect("namespace");
    std::fs::write(creds.join("token"), &token).expect("token");
    let mounted = work.join("crds");
    let names: Vec<&str> = job["spec"]["template"]["spec"]["volumes"][0]["projected"]["sources"]
        .as_array()
        .expect("projected sources")
        .iter()
        .map(|s| s["configMap"]["name"].as_str().expect("a ConfigMap"))
        .collect();
    let configmaps: Vec<&Value> = of_kind("ConfigMap")
        .into_iter()
        .filter(|cm| names.contains(&cm["metadata"]["name"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(
        configmaps.len(),
        names.len(),
        "every ConfigMap the Job mounts is rendered: {names:?}"
    );
    mount(&configmaps, &mounted);
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let mount_path = container["volumeMounts"][0]["mountPath"]
        .as_str()
        .expect("the mount");
    let args = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("an argument"))
        .map(|a| {
            if a == mount_path {
                mounted.display().to_string()
            } else {
                a.to_string()
            }
        })
        .collect();
    (args, creds, rules, sa)
}

/// The documents of a rendered multi-document YAML stream.
fn documents(rendered: &str) -> Vec<Value> {
    rendered
        .split("\n---\n")
        .filter(|d| d.contains("kind:"))
        .map(|d| serde_saphyr::from_str::<Value>(d).expect("a rendered document parses"))
        .collect()
}

/// `kubectl kustomize DIR` (the kustomize of `kubectl apply -k`, the same
/// code Argo CD and Flux build with).
fn kustomize(dir: &Path) -> String {
    let out = Command::new("kubectl")
        .args(["kustomize", dir.to_str().expect("UTF-8")])
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `deploy/gates` copied under `root`, so an application's kustomization
/// beside it includes it by a relative path, as one in the user's
/// repository does.
fn copy_gates(root: &Path) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("a directory");
        for entry in std::fs::read_dir(from).expect("readable") {
            let entry = entry.expect("an entry");
            let path = entry.path();
            if path.is_dir() {
                copy(&path, &to.join(entry.file_name()));
            } else {
                std::fs::copy(&path, to.join(entry.file_name())).expect("a file");
            }
        }
    }
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/gates"),
        &root.join("deploy/gates"),
    );
}

/// A server-side dry run of `rendered` in the test server, which must pass.
fn server_dry_run(plane: &support::envtest::ControlPlane, work: &Path, rendered: &str) {
    let file = work.join("rendered.yaml");
    std::fs::write(&file, rendered).expect("rendered.yaml");
    let dry = support::webhook::kubectl(
        &plane.admin_kubeconfig,
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
        "the API server refused it: {}",
        String::from_utf8_lossy(&dry.stderr)
    );
}

/// The application's CRD of the kustomize gates: `argowidgets`, as OLD
/// (objects kept in v1alpha9) or NEW (v1 only).
fn argowidgets(old: bool) -> Value {
    let versions: &[(&str, bool, bool)] = if old {
        &[("v1alpha9", true, true), ("v1", true, false)]
    } else {
        &[("v1", true, true)]
    };
    crd(
        "argowidgets",
        versions,
        json!({"size": {"type": "integer"}}),
    )
}

/// An application directory as the user writes it for Argo CD: its CRD,
/// `deploy/gates/argocd`, and the CRD file's ConfigMap generated with the
/// hook's annotations (docs/gates.md).
fn argocd_application(root: &Path, ns: &str) -> std::path::PathBuf {
    copy_gates(root);
    let app = root.join("app");
    std::fs::create_dir_all(&app).expect("app/");
    write_manifest(&app, "argowidgets.json", &argowidgets(false));
    std::fs::write(
        app.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {ns}
resources:
  - argowidgets.json
  - ../deploy/gates/argocd
configMapGenerator:
  - name: crd-safety-gate-crds
    files: [argowidgets.json]
    options:
      annotations:
        argocd.argoproj.io/hook: PreSync
        argocd.argoproj.io/hook-delete-policy: BeforeHookCreation
"
        ),
    )
    .expect("kustomization.yaml");
    app
}

#[tokio::test]
async fn the_argocd_presync_gate_builds_is_accepted_and_its_job_stops_a_breaking_sync() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let work = tempfile::tempdir().expect("tempdir");
    let ns = "argowidgets-operator";
    let app = argocd_application(work.path(), ns);
    let rendered = kustomize(&app);
    let docs = documents(&rendered);
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "Job"
        ]
    );
    for doc in &docs {
        let hook = &doc["metadata"]["annotations"]["argocd.argoproj.io/hook"];
        if doc["kind"] == "CustomResourceDefinition" {
            assert!(hook.is_null(), "the CRD itself syncs as usual: {doc}");
        } else {
            assert_eq!(hook, "PreSync", "{}", doc["metadata"]);
            assert_eq!(
                doc["metadata"]["annotations"]["argocd.argoproj.io/hook-delete-policy"],
                "BeforeHookCreation"
            );
        }
    }
    let job = docs.iter().find(|d| d["kind"] == "Job").expect("the Job");
    let configmap = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap")
        .expect("the ConfigMap");
    assert_eq!(
        job["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"],
        "1"
    );
    assert_eq!(
        job["spec"]["template"]["spec"]["volumes"][0]["projected"]["sources"][0]["configMap"]["name"],
        configmap["metadata"]["name"],
        "the Job mounts the generated ConfigMap by its hashed name"
    );
    let binding = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRoleBinding")
        .expect("binding");
    assert_eq!(binding["subjects"][0]["namespace"], ns, "{binding}");

    namespace(&client, ns).await;
    server_dry_run(plane, work.path(), &rendered);

    let (args, creds, _, _) = the_job(&client, plane, &docs, ns, work.path()).await;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let first = run_as_pod(&args, &creds, &plane.server);
    assert_eq!(first.code, 0, "the first sync passes the gate: {first:?}");
    install(&client, &argowidgets(true)).await;
    let breaking = run_as_pod(&args, &creds, &plane.server);
    assert_eq!(breaking.code, 1, "the gate fails the sync: {breaking:?}");
    assert!(
        breaking.stdout.contains("storedVersionRemoval"),
        "{}",
        breaking.stdout
    );
}

#[tokio::test]
async fn the_flux_gate_is_accepted_waits_for_its_job_and_holds_the_release_back() {
    let Some(corpus) = support::corpus::corpus_dir() else {
        return;
    };
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let work = tempfile::tempdir().expect("tempdir");
    let text =
        std::fs::read_to_string(corpus.join(
            "flux-kustomize-controller/v1.9.4/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
        ))
        .expect("Flux's Kustomization CRD");
    let flux: Value = serde_saphyr::from_str(&text).expect("the CRD parses");
    install(&client, &flux).await;
    namespace(&client, "flux-system").await;

    // Flux's objects as shipped: accepted by the server with Flux's CRD.
    let gate = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/gates/flux/gate.yaml"),
    )
    .expect("deploy/gates/flux/gate.yaml");
    let docs = documents(&gate);
    let gate_ks = docs
        .iter()
        .find(|d| d["metadata"]["name"] == "crd-safety-gate")
        .expect("the gate's Kustomization");
    assert_eq!(
        gate_ks["spec"]["wait"], true,
        "the gate is Ready only once its Job is"
    );
    assert_eq!(gate_ks["spec"]["force"], true, "a changed Job is replaced");
    let release = docs
        .iter()
        .find(|d| d["metadata"]["name"] != "crd-safety-gate")
        .expect("the operator's Kustomization");
    assert_eq!(release["spec"]["dependsOn"][0]["name"], "crd-safety-gate");
    server_dry_run(plane, work.path(), &gate);

    // The gate's path: the kustomize base and the CRD files' ConfigMap,
    // no hooks; its Job passes as its ServiceAccount.
    copy_gates(work.path());
    let path = work.path().join("operators/widgets/gate");
    std::fs::create_dir_all(&path).expect("the gate's path");
    let ns = "fluxwidgets-gate";
    write_manifest(
        &path,
        "fluxwidgets.json",
        &crd("fluxwidgets", &[("v1", true, true)], json!({})),
    );
    std::fs::write(
        path.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {ns}
resources:
  - ../../../deploy/gates/kustomize
configMapGenerator:
  - name: crd-safety-gate-crds
    files: [fluxwidgets.json]
"
        ),
    )
    .expect("kustomization.yaml");
    let rendered = kustomize(&path);
    assert!(!rendered.contains("argocd.argoproj.io"), "{rendered}");
    let docs = documents(&rendered);
    namespace(&client, ns).await;
    server_dry_run(plane, work.path(), &rendered);
    let (args, creds, _, _) = the_job(&client, plane, &docs, ns, work.path()).await;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = run_as_pod(&args, &creds, &plane.server);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("fluxwidgets.example.com"),
        "{}",
        run.stdout
    );
}
