//! `migrate`'s two engines against the manual way, `kubectl get -o json |
//! kubectl replace -f -`, on a real kube-apiserver, etcd and
//! kube-controller-manager (its storage-version migrator does the server
//! engine's work).
//!
//! `cargo bench --bench migrate` starts Kubernetes `MIGRATE_BENCH_KUBE`
//! (default 1.37, where `storagemigration.k8s.io/v1` is served), loads
//! `MIGRATE_BENCH_N` objects (default 10000) into each of three identical
//! CRDs while `v1alpha1` is their storage version, moves storage to `v1`,
//! then in one run migrates one CRD with `--engine client`, one with
//! `--engine server` and one with kubectl, each under `/usr/bin/time` for
//! wall time and the tool's peak memory, counts the requests the API
//! server answered meanwhile (`apiserver_request_total`, everyone's:
//! the server engine's writes come from kube-controller-manager), and reads
//! etcd to confirm every object really is stored in `v1`.
//! `MIGRATE_BENCH_CONCURRENCY` sets `--concurrency` (default 4). Figures
//! are printed, never asserted.

#[path = "../tests/support/envtest.rs"]
mod envtest;
#[path = "../tests/support/etcd.rs"]
mod etcd;
#[path = "../tests/support/fixtures.rs"]
mod fixtures;
#[path = "support/mod.rs"]
mod support;

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

/// Requests the API server has answered so far, from its own metrics.
async fn requests_served(client: &Client) -> u64 {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = client.request_text(request).await.expect("metrics");
    text.lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Peak memory of the control plane's kube-controller-manager, in MiB.
fn controller_manager_peak_mib(plane: &envtest::ControlPlane) -> f64 {
    let dir = plane.dir.path().display().to_string();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    for p in procs.flatten() {
        let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.starts_with(&format!(
            "{}",
            plane.assets.join("kube-controller-manager").display()
        )) && cmdline.contains(&dir)
        {
            let status = std::fs::read_to_string(p.path().join("status")).unwrap_or_default();
            return status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
                .map_or(0.0, |kib| kib / 1024.0);
        }
    }
    0.0
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
    let version = std::env::var("MIGRATE_BENCH_KUBE").unwrap_or_else(|_| "1.37".into());
    let Some(mut plane) = envtest::serving_storage_migration(&version, true) else {
        eprintln!("migrate bench: no control plane available");
        return;
    };
    let minor = envtest::minor_of(&version);
    let kubectl = support::kubectl();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let client = rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(&plane.admin_kubeconfig).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("config");
        let client = Client::try_from(config).expect("client");
        load(&client, "pluginmigrations", n).await;
        load(&client, "servermigrations", n).await;
        load(&client, "kubectlreplaces", n).await;
        client
    });
    // Started once the CRDs exist: the migrator's garbage-collector graph
    // then knows them from its first discovery instead of 30 s later.
    let (_, gates) = envtest::storage_migration_flags(minor);
    plane.start_controller_manager(
        &[
            "garbage-collector-controller",
            "storage-version-migrator-controller",
        ],
        &gates,
    );
    std::thread::sleep(Duration::from_secs(5));
    let served = || rt.block_on(requests_served(&client));
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().display();
    let kubeconfig = plane.admin_kubeconfig.display();
    let plugin = env!("CARGO_BIN_EXE_kubectl-crd_safety");

    let concurrency: u16 = std::env::var("MIGRATE_BENCH_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    // The plan and check alone (what --dry-run does), then the whole runs.
    let check = timed(&format!(
        "{plugin} migrate pluginmigrations.example.com --dry-run --kubeconfig {kubeconfig} > /dev/null"
    ));
    let before = served();
    let client_engine = timed(&format!(
        "/usr/bin/time -o {d}/client -f %M {plugin} migrate pluginmigrations.example.com --yes \
         --engine client --concurrency {concurrency} --kubeconfig {kubeconfig} > {d}/client.out"
    ));
    let client_requests = served() - before;
    let kcm_before = controller_manager_peak_mib(&plane);
    let before = served();
    let server_engine = timed(&format!(
        "/usr/bin/time -o {d}/server -f %M {plugin} migrate servermigrations.example.com --yes \
         --engine server --kubeconfig {kubeconfig} > {d}/server.out"
    ));
    let server_requests = served() - before;
    let kcm_after = controller_manager_peak_mib(&plane);
    let before = served();
    let theirs = timed(&format!(
        "/usr/bin/time -o {d}/get -f %M {kubectl} --kubeconfig {kubeconfig} get kubectlreplaces -A -o json \
         | /usr/bin/time -o {d}/replace -f %M {kubectl} --kubeconfig {kubeconfig} replace -f - > /dev/null"
    ));
    let kubectl_requests = served() - before;
    let stored = |plural: &str| etcd::stored_version_counts(&plane.etcd, "example.com", plural);
    println!(
        "{n} objects, stored in v1alpha1, storage version moved to v1, on {}; one run each:",
        plane.kube_version
    );
    println!(
        "  crd-safety migrate --engine client (check + rewrite, concurrency {concurrency}): \
         {client_engine:.1} s, {:.0} objects/s (the check alone, --dry-run: {check:.1} s), \
         {client_requests} requests, peak RSS {:.0} MiB; etcd after: {:?}",
        n as f64 / client_engine,
        peak_mib(&dir.path().join("client")),
        stored("pluginmigrations")
    );
    println!(
        "  crd-safety migrate --engine server (check + the cluster's migrator): \
         {server_engine:.1} s, {:.0} objects/s, {server_requests} requests, peak RSS {:.0} MiB \
         (kube-controller-manager's peak {kcm_before:.0} -> {kcm_after:.0} MiB); etcd after: {:?}",
        n as f64 / server_engine,
        peak_mib(&dir.path().join("server")),
        stored("servermigrations")
    );
    println!(
        "  kubectl get -o json | kubectl replace -f -: {theirs:.1} s, {:.0} objects/s, \
         {kubectl_requests} requests, peak RSS get {:.0} MiB + replace {:.0} MiB; etcd after: {:?}",
        n as f64 / theirs,
        peak_mib(&dir.path().join("get")),
        peak_mib(&dir.path().join("replace")),
        stored("kubectlreplaces")
    );
    println!(
        "  ratios: the server engine takes {:.2}x the client engine's time; the client engine \
         is {:.1}x the speed of kubectl replace",
        server_engine / client_engine,
        theirs / client_engine
    );
}
