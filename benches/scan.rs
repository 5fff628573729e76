//! The object scan against a raw paginated LIST of the same objects, on a
//! real kube-apiserver (the live tests' control plane).
//!
//! `cargo bench --bench scan` loads objects into two CRDs (`SCAN_BENCH_N`
//! objects, default 10000, and a tenth of that), then in one run, interleaved:
//! - time: `scan_crd` (LIST + validate) vs LIST alone (same pages, same JSON
//!   parsing, no validation), medians of several rounds, as a ratio;
//! - memory: each measurement again in a child process that prints its peak
//!   RSS, for both sizes, to show whether memory grows with N.
//!
//! `SCAN_BENCH_CRD=httproute` scans a CEL-heavy schema instead: Gateway
//! API's HTTPRoute v1 (from the corpus, `../shared/corpus` or
//! `$CRD_SAFETY_CORPUS`), whose rules dominate validation.
//!
//! Figures are printed, never asserted.

#[path = "../tests/support/envtest.rs"]
mod envtest;
#[path = "../tests/support/fixtures.rs"]
mod fixtures;
#[path = "support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crd_safety::cluster::{Connection, ResourceRef};
use crd_safety::crd::Crd;
use crd_safety::scan::{ScanOptions, scan_crd};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

const ROUNDS: usize = 5;

fn simple_manifest(plural: &str, minimum: i64) -> Value {
    fixtures::single(
        plural,
        json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "required": ["size"],
        "properties": {
          "size": {"type": "integer", "minimum": minimum, "maximum": 1000},
          "name": {"type": "string", "maxLength": 63, "pattern": "^[a-z][a-z0-9-]*$"},
          "mode": {"type": "string", "enum": ["fast", "safe", "off"]},
          "labels": {"type": "object", "additionalProperties": {"type": "string"}},
          "ports": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name", "port"], "properties": {
              "name": {"type": "string"},
              "port": {"type": "integer", "minimum": 1, "maximum": 65535}}}},
          "window": {"type": "object", "properties": {
              "lo": {"type": "integer"}, "hi": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.lo <= self.hi", "message": "lo <= hi"}]}
        }}}}),
    )
}

fn simple_object(kind: &str, i: usize) -> Value {
    let mode = ["fast", "safe", "off"][i % 3];
    json!({
        "apiVersion": "example.com/v1", "kind": kind,
        "metadata": {"name": format!("obj-{i:06}"), "namespace": format!("ns-{}", i % 10)},
        "spec": {
            "size": i % 20,
            "name": format!("name-{i}"),
            "mode": mode,
            "labels": {"team": "a", "tier": format!("t{}", i % 4)},
            "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}],
            "window": {"lo": i % 7, "hi": 6},
            "notes": "a field the schema does not describe is pruned by the server"
        }
    })
}

/// Whether `SCAN_BENCH_CRD=httproute` asks for the CEL-heavy schema.
fn http_routes() -> bool {
    std::env::var("SCAN_BENCH_CRD").is_ok_and(|v| v == "httproute")
}

/// HTTPRoute v1's schema from the corpus.
fn http_route_schema() -> Value {
    let path = support::corpus()
        .join("gateway-api-standard/v1.6.1/gateway.networking.k8s.io_httproutes.yaml");
    let text = std::fs::read_to_string(&path).expect("HTTPRoute CRD in the corpus");
    let crd: Value = serde_yaml::from_str(&text).expect("HTTPRoute CRD parses");
    crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == "v1"))
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
        .expect("HTTPRoute v1 schema")
}

/// The CRD as stored (`minimum` 0) or as changed (`minimum` 3: for the
/// HTTPRoute, a new description, so the version is scanned).
fn manifest(plural: &str, minimum: i64) -> Value {
    if !http_routes() {
        return simple_manifest(plural, minimum);
    }
    let mut schema = http_route_schema();
    if minimum > 0 {
        schema["description"] = json!("changed");
    }
    fixtures::single(plural, schema)
}

fn object(kind: &str, i: usize) -> Value {
    if !http_routes() {
        return simple_object(kind, i);
    }
    json!({
        "apiVersion": "example.com/v1", "kind": kind,
        "metadata": {"name": format!("obj-{i:06}"), "namespace": format!("ns-{}", i % 10)},
        "spec": support::http_route_spec(i),
    })
}

async fn load(client: &Client, plural: &str, n: usize) {
    let m = manifest(plural, 0);
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::erase::<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        >(&()),
    );
    let name = format!("{plural}.example.com");
    crds.patch(
        &name,
        &PatchParams::apply("bench").force(),
        &Patch::Apply(&m),
    )
    .await
    .expect("CRD applied");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let kind = m["spec"]["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", &kind),
        plural,
    );
    let namespaces: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()),
    );
    for ns in 0..10 {
        let nsobj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{ns}")}}))
        .expect("namespace");
        let _ = namespaces.create(&PostParams::default(), &nsobj).await;
    }
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let client = client.clone();
        let ar = ar.clone();
        let kind = kind.clone();
        set.spawn(async move {
            for i in (worker..n).step_by(8) {
                let obj: DynamicObject = serde_json::from_value(object(&kind, i)).expect("object");
                let ns = obj.metadata.namespace.clone().unwrap_or_default();
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
                // Retried: right after the CRD is applied its endpoint may
                // not serve yet; an object already there is done.
                for _ in 0..20 {
                    match api.create(&PostParams::default(), &obj).await {
                        Err(kube::Error::Api(e)) if e.code != 409 => {
                            tokio::time::sleep(Duration::from_millis(500)).await;
                        }
                        Err(kube::Error::Api(_)) | Ok(_) => break,
                        Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                    }
                }
            }
        });
    }
    while set.join_next().await.is_some() {}
    eprintln!(
        "loaded {n} {plural} in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

async fn connect(kubeconfig: &Path) -> Connection {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("config");
    let client = Client::try_from(config).expect("client");
    Connection::from_client(client, "bench", "envtest")
}

/// LIST only: the same pages and JSON parsing as the scan, no validation.
async fn raw_list(conn: &Connection, plural: &str) -> u64 {
    let resource = ResourceRef {
        group: "example.com".into(),
        version: "v1".into(),
        plural: plural.into(),
        namespace: None,
    };
    let mut token: Option<String> = None;
    let mut n = 0u64;
    loop {
        let page = conn
            .list_page(&resource, 500, token.as_deref())
            .await
            .expect("page");
        n += page.items.len() as u64;
        match page.next() {
            Some(t) => token = Some(t.to_string()),
            None => return n,
        }
    }
}

async fn scan(conn: &Connection, plural: &str) -> u64 {
    let old = Crd::from_manifest(manifest(plural, 0)).expect("old");
    let new = Crd::from_manifest(manifest(plural, 3)).expect("new");
    let s = scan_crd(conn, &old, &new, 34, &ScanOptions::default(), &mut |_| {})
        .await
        .expect("scan");
    s.summary.scanned
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Child mode: one measurement, then print `objects peak_rss_kib`.
fn child(mode: &str, plural: &str, kubeconfig: &Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let n = rt.block_on(async {
        let conn = connect(kubeconfig).await;
        match mode {
            "raw" => raw_list(&conn, plural).await,
            _ => scan(&conn, plural).await,
        }
    });
    println!("{n} {}", peak_rss_kib());
}

fn measure_child(mode: &str, plural: &str, kubeconfig: &Path) -> (u64, u64) {
    let out = Command::new(std::env::current_exe().expect("exe"))
        .env(
            "SCAN_BENCH_CHILD",
            format!("{mode}:{plural}:{}", kubeconfig.display()),
        )
        .output()
        .expect("child runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text
        .split_whitespace()
        .map(|p| p.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    if let Ok(spec) = std::env::var("SCAN_BENCH_CHILD") {
        let mut parts = spec.splitn(3, ':');
        let (mode, plural, kc) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        child(mode, plural, Path::new(kc));
        return;
    }
    // `cargo bench` passes `--bench`; anything else (cargo test --benches) only smoke-runs.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("scan bench: run with `cargo bench --bench scan`");
        return;
    }
    let n: usize = std::env::var("SCAN_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let Some(plane) = envtest::control_plane() else {
        eprintln!("scan bench: no control plane available");
        return;
    };
    let kubeconfig = plane.admin_kubeconfig.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let sizes = [("smallbenches", n / 10), ("benches", n)];
    rt.block_on(async {
        let conn = connect(&kubeconfig).await;
        for (plural, count) in sizes {
            load(&conn.client, plural, count).await;
        }
        // Warm-up, then interleaved rounds on the large CRD.
        raw_list(&conn, "benches").await;
        scan(&conn, "benches").await;
        let (mut raw, mut scanned) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let t = Instant::now();
            let a = raw_list(&conn, "benches").await;
            raw.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let b = scan(&conn, "benches").await;
            scanned.push(t.elapsed().as_secs_f64());
            assert_eq!(a, b, "both read every object");
        }
        let (r, s) = (median(raw), median(scanned));
        println!(
            "{n} objects: raw LIST {:.0} ms, scan {:.0} ms, scan/LIST {:.2}x ({:.0} objects/s scanned)",
            r * 1e3,
            s * 1e3,
            s / r,
            n as f64 / s
        );
        // gzip, as the plugin asks for it by default, against plain
        // answers, interleaved (loopback: only the CPU cost shows here).
        let gzip = conn.clone().with_compression(true);
        let (mut plain_raw, mut gzip_raw, mut plain_scan, mut gzip_scan) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            for (c, out) in [(&conn, &mut plain_raw), (&gzip, &mut gzip_raw)] {
                let t = Instant::now();
                assert_eq!(raw_list(c, "benches").await, n as u64);
                out.push(t.elapsed().as_secs_f64());
            }
            for (c, out) in [(&conn, &mut plain_scan), (&gzip, &mut gzip_scan)] {
                let t = Instant::now();
                assert_eq!(scan(c, "benches").await, n as u64);
                out.push(t.elapsed().as_secs_f64());
            }
        }
        let (pr, gr, ps, gs) = (
            median(plain_raw),
            median(gzip_raw),
            median(plain_scan),
            median(gzip_scan),
        );
        println!(
            "{n} objects: raw LIST {:.0} ms plain vs {:.0} ms gzip ({:.2}x); scan {:.0} ms plain vs {:.0} ms gzip ({:.2}x)",
            pr * 1e3,
            gr * 1e3,
            gr / pr,
            ps * 1e3,
            gs * 1e3,
            gs / ps
        );
    });
    for (plural, count) in sizes {
        let (n_raw, rss_raw) = measure_child("raw", plural, &kubeconfig);
        let (n_scan, rss_scan) = measure_child("scan", plural, &kubeconfig);
        println!(
            "{count:>6} objects: peak RSS raw LIST {} MiB ({n_raw} read), scan {} MiB ({n_scan} scanned)",
            rss_raw / 1024,
            rss_scan / 1024
        );
    }
}
