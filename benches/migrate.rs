//! `migrate` against the manual way, `kubectl get -o json | kubectl replace
//! -f -`, on a real kube-apiserver and etcd (the live tests' control plane).
//!
//! `cargo bench --bench migrate` loads `MIGRATE_BENCH_N` objects (default
//! 10000) into each of two identical CRDs while `v1alpha1` is their storage
//! version, moves storage to `v1`, then in one run migrates one CRD with the
//! plugin and the other with kubectl, each under `/usr/bin/time` for wall
//! time and peak memory, and reads etcd to confirm both really stored every
//! object in `v1`. `MIGRATE_BENCH_CONCURRENCY` sets `--concurrency` (default
//! 4). Figures are printed, never asserted.

#[path = "../tests/support/envtest.rs"]
mod envtest;
#[path = "../tests/support/etcd.rs"]
mod etcd;
#[path = "../tests/support/fixtures.rs"]
mod fixtures;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

fn manifest(plural: &str, storage: &str) -> Value {
    let root = json!({"type": "object", "properties": {"spec": {
    "type": "object",
    "properties": {
        "size": {"type": "integer", "minimum": 0},
        "name": {"type": "string", "maxLength": 63},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "port": {"type": "integer"}}}}
    }}}});
    fixtures::crd(
        plural,
        vec![
            fixtures::version("v1alpha1", true, storage == "v1alpha1", root.clone()),
            fixtures::version("v1", true, storage == "v1", root),
        ],
    )
}

async fn install(client: &Client, plural: &str, storage: &str) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let m: CustomResourceDefinition =
        serde_json::from_value(manifest(plural, storage)).expect("CRD");
    crds.patch(
        &format!("{plural}.example.com"),
        &PatchParams::apply("bench").force(),
        &Patch::Apply(&m),
    )
    .await
    .expect("CRD applied");
    tokio::time::sleep(Duration::from_secs(2)).await;
}

async fn load(client: &Client, plural: &str, n: usize) {
    install(client, plural, "v1alpha1").await;
    let kind = fixtures::kind_of(plural);
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1alpha1", &kind),
        plural,
    );
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for ns in 0..10 {
        let object = serde_json::from_value(json!({"metadata": {"name": format!("ns-{ns}")}}))
            .expect("namespace");
        let _ = namespaces.create(&PostParams::default(), &object).await;
    }
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let (client, ar, kind) = (client.clone(), ar.clone(), kind.clone());
        set.spawn(async move {
            for i in (worker..n).step_by(8) {
                let ns = format!("ns-{}", i % 10);
                let object: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "example.com/v1alpha1", "kind": kind,
                    "metadata": {"name": format!("obj-{i:06}"), "namespace": ns},
                    "spec": {"size": i, "name": format!("name-{i}"),
                             "labels": {"team": "a", "tier": format!("t{}", i % 4)},
                             "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]}
                }))
                .expect("object");
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
                let _ = api.create(&PostParams::default(), &object).await;
            }
        });
    }
    while set.join_next().await.is_some() {}
    eprintln!(
        "loaded {n} {plural} in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    install(client, plural, "v1").await;
}

/// Runs `script` in bash; returns wall seconds. Peak memory is written by
/// `/usr/bin/time` into the files the script names.
fn timed(script: &str) -> f64 {
    let started = Instant::now();
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .output()
        .expect("bash runs");
    let wall = started.elapsed().as_secs_f64();
    if !out.status.success() {
        eprintln!("failed: {script}\n{}", String::from_utf8_lossy(&out.stderr));
    }
    wall
}

fn peak_mib(file: &Path) -> f64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse::<f64>().ok()))
        .map_or(0.0, |kib| kib / 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; anything else (cargo test --benches) only smoke-runs.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("migrate bench: run with `cargo bench --bench migrate`");
        return;
    }
    let n: usize = std::env::var("MIGRATE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let Some(plane) = envtest::control_plane() else {
        eprintln!("migrate bench: no control plane available");
        return;
    };
    let kubectl = ["/usr/bin/kubectl", "kubectl"]
        .into_iter()
        .find(|k| {
            Command::new(k)
                .arg("version")
                .arg("--client")
                .output()
                .is_ok()
        })
        .expect("kubectl on the PATH");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(&plane.admin_kubeconfig).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("config");
        let client = Client::try_from(config).expect("client");
        load(&client, "pluginmigrations", n).await;
        load(&client, "kubectlreplaces", n).await;
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().display();
    let kubeconfig = plane.admin_kubeconfig.display();
    let plugin = env!("CARGO_BIN_EXE_kubectl-crd_safety");

    let concurrency: u16 = std::env::var("MIGRATE_BENCH_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    // The plan and check alone (what --dry-run does), then the whole run.
    let check = timed(&format!(
        "{plugin} migrate pluginmigrations.example.com --dry-run --kubeconfig {kubeconfig} > /dev/null"
    ));
    let ours = timed(&format!(
        "/usr/bin/time -o {d}/ours -f %M {plugin} migrate pluginmigrations.example.com --yes \
         --concurrency {concurrency} --kubeconfig {kubeconfig} > {d}/ours.out"
    ));
    let theirs = timed(&format!(
        "/usr/bin/time -o {d}/get -f %M {kubectl} --kubeconfig {kubeconfig} get kubectlreplaces -A -o json \
         | /usr/bin/time -o {d}/replace -f %M {kubectl} --kubeconfig {kubeconfig} replace -f - > /dev/null"
    ));
    let stored = |plural: &str| etcd::stored_version_counts(&plane.etcd, "example.com", plural);
    println!("{n} objects, stored in v1alpha1, storage version moved to v1; one run each:");
    println!(
        "  crd-safety migrate (check + rewrite, concurrency {concurrency}): {ours:.1} s, {:.0} objects/s \
         (the check alone, --dry-run: {check:.1} s), peak RSS {:.0} MiB; etcd after: {:?}",
        n as f64 / ours,
        peak_mib(&dir.path().join("ours")),
        stored("pluginmigrations")
    );
    println!(
        "  kubectl get -o json | kubectl replace -f -: {theirs:.1} s, {:.0} objects/s, peak RSS get {:.0} MiB + replace {:.0} MiB; etcd after: {:?}",
        n as f64 / theirs,
        peak_mib(&dir.path().join("get")),
        peak_mib(&dir.path().join("replace")),
        stored("kubectlreplaces")
    );
    println!(
        "  ratio: crd-safety is {:.1}x the speed of kubectl replace",
        theirs / ours
    );
}
