//! Admission latency of `serve`: 20 clients at once, each on its own
//! keep-alive HTTPS connection (as the API server's webhook client keeps
//! them), sending UPDATE reviews of a typical CRD (cert-manager's
//! `certificates`, v1.15.0 -> v1.16.0), of ECK's `elasticsearches` (full
//! bases, v3.0.0 -> v3.5.0, about 1.5 MB of YAML each) and of the largest
//! CRD of the corpus (argocd-operator's `argocds`, 0.13.0 -> 0.18.0, 2.1 MB
//! of YAML), each against a `serve` of its own, with its memory at rest
//! and its peak after the load (what the chart's memory limit is set from).
//!
//! `serve` runs with the chart's settings (its defaults, the configuration
//! reloaded every 5 s); the clients set `TCP_NODELAY`, as the API server's
//! (Go) do.
//!
//! `cargo bench --bench webhook`; `WEBHOOK_BENCH_REVIEWS` sets the reviews
//! per client (default 25), `WEBHOOK_BENCH_CLIENTS` the clients (default
//! 20), `CRD_SAFETY_SERVE_BINARY` another `kubectl-crd_safety` to serve
//! (the image's static musl build, or an earlier build to compare with),
//! `WEBHOOK_BENCH_CASES` (e.g. `argocds,ECK`) the cases to run,
//! `WEBHOOK_BENCH_SERVE_ARGS` flags added to `serve`'s (e.g.
//! `--body-memory 16Mi`, to measure a setting).
//! Figures are printed, never asserted. The server
//! reads the cluster's version once, from a real kube-apiserver started by
//! the test harness.

#[path = "../tests/support/envtest.rs"]
mod envtest;
#[path = "support/mod.rs"]
mod support;
#[path = "../tests/support/webhook.rs"]
mod webhook;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crd_safety::manifest::{Source, load};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

fn crd_of(path: &std::path::Path) -> Value {
    let set = load(&[Source::Path(path.to_path_buf())]).expect("corpus file loads");
    set.crds
        .into_iter()
        .next()
        .expect("a CRD in the file")
        .crd
        .manifest
        .clone()
}

/// An UPDATE review of `old` to `new`, with the live CRD's status.
fn review(uid: &str, old: &Value, new: &Value) -> Vec<u8> {
    let mut old = old.clone();
    let storage: Vec<Value> = old["spec"]["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter(|v| v["storage"] == true)
                .map(|v| v["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    old["status"] = json!({"storedVersions": storage});
    let name = new["metadata"]["name"].clone();
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"},
            "resource": {"group": "apiextensions.k8s.io", "version": "v1", "resource": "customresourcedefinitions"},
            "name": name, "operation": "UPDATE",
            "userInfo": {"username": "bench"},
            "object": new, "oldObject": old, "dryRun": false
        }
    }))
    .expect("JSON")
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn client(
    addr: std::net::SocketAddr,
    ca: &webhook::TestCa,
) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
    let config = webhook::client_config(ca.pem.as_bytes());
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).expect("TCP_NODELAY");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("TLS");
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("HTTP/1.1");
    tokio::spawn(conn);
    send
}

/// The text in the new CRD that [`numbered`] rewrites, so every review of
/// a cold run is a pair the server has not judged yet.
const MARK: &str = "crd-safety-bench-000000";

/// `body` with its mark replaced by `n`.
fn numbered(body: &Bytes, at: usize, n: usize) -> Bytes {
    let mut v = body.to_vec();
    let digits = format!("{:06}", n % 1_000_000);
    v[at + MARK.len() - 6..at + MARK.len()].copy_from_slice(digits.as_bytes());
    Bytes::from(v)
}

/// Runs `per_client` reviews on each of `clients` connections at once;
/// with `distinct`, each review is of a new pair (numbered from `first`).
/// Returns every latency, sorted.
async fn load_with(
    addr: std::net::SocketAddr,
    ca: &webhook::TestCa,
    body: Bytes,
    (clients, per_client): (usize, usize),
    distinct: Option<usize>,
    first: usize,
) -> Vec<Duration> {
    let mut senders = Vec::new();
    for _ in 0..clients {
        senders.push(client(addr, ca).await);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (c, mut send) in senders.into_iter().enumerate() {
        let body = body.clone();
        tasks.spawn(async move {
            let mut took = Vec::with_capacity(per_client);
            for i in 0..per_client {
                let this = match distinct {
                    Some(at) => numbered(&body, at, first + c * per_client + i),
                    None => body.clone(),
                };
                let req = http::Request::post("/validate")
                    .header("host", "127.0.0.1")
                    .header("content-type", "application/json")
                    .body(Full::new(this))
                    .expect("request");
                let started = Instant::now();
                let answer = send.send_request(req).await.expect("answered");
                let status = answer.status();
                let bytes = answer.into_body().collect().await.expect("body").to_bytes();
                took.push(started.elapsed());
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
            }
            took
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done.expect("client"));
    }
    all.sort();
    all
}

fn main() {
    let Some(corpus) = support::corpus_dir() else {
        return;
    };
    let Some(plane) = envtest::dedicated() else {
        return;
    };
    let per_client: usize = std::env::var("WEBHOOK_BENCH_REVIEWS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(25);
    let clients: usize = std::env::var("WEBHOOK_BENCH_CLIENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let cases = [
        (
            "typical: cert-manager certificates v1.15.0 -> v1.16.0",
            "cert-manager/v1.15.0/crd-certificates.yaml",
            "cert-manager/v1.16.0/crd-certificates.yaml",
        ),
        (
            "large: ECK elasticsearches v3.0.0 -> v3.5.0",
            "eck-full-bases/v3.0.0/elasticsearch.k8s.elastic.co_elasticsearches.yaml",
            "eck-full-bases/v3.5.0/elasticsearch.k8s.elastic.co_elasticsearches.yaml",
        ),
        (
            "largest: argocd-operator argocds 0.13.0 -> 0.18.0",
            "argocd-operator/0.13.0/argoproj.io_argocds.yaml",
            "argocd-operator/0.18.0/argoproj.io_argocds.yaml",
        ),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = webhook::TestCa::new();
    ca.issue(dir.path());
    // warn: every review is fully judged and answered with its findings.
    std::fs::write(dir.path().join("config.yaml"), "webhook:\n  mode: warn\n").expect("config");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // `WEBHOOK_BENCH_CASES=argocds,ECK`: only the cases whose label holds
    // one of these words (one case is a third of the run).
    let wanted = std::env::var("WEBHOOK_BENCH_CASES").unwrap_or_default();
    let picked = |label: &str| {
        wanted.is_empty()
            || wanted
                .split(',')
                .any(|w| !w.is_empty() && label.contains(w.trim()))
    };
    // The test harness reloads every 200 ms, for tests that wait on a
    // reload; here each reload's LIST of the consumers' requirements would
    // wake the API server on the same two cores five times a second.
    let extra = std::env::var("WEBHOOK_BENCH_SERVE_ARGS").unwrap_or_default();
    let mut serve_args: Vec<&str> = extra.split_whitespace().collect();
    if !serve_args.contains(&"--reload-interval") {
        serve_args.extend(["--reload-interval", "5s"]);
    }
    for (label, old, new) in cases.into_iter().filter(|(l, _, _)| picked(l)) {
        // A server per case, so each peak is this case's own.
        let served = webhook::Served::start(dir.path(), &plane.admin_kubeconfig, &serve_args);
        let pid = served.pid();
        std::thread::sleep(Duration::from_millis(500));
        let rest = rss_kib(pid, "VmRSS:") as f64 / 1024.0;
        let mut new = crd_of(&corpus.join(new));
        new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = json!(MARK);
        let body = Bytes::from(review("bench", &crd_of(&corpus.join(old)), &new));
        let at = body
            .windows(MARK.len())
            .position(|w| w == MARK.as_bytes())
            .expect("the mark is in the body");
        // One review first: the server reads the cluster's version once.
        runtime.block_on(load_with(served.addr, &ca, body.clone(), (1, 1), None, 0));
        println!(
            "{label}: review {:.0} KiB; serve at rest {rest:.1} MiB",
            body.len() as f64 / 1024.0
        );
        for (run, load, distinct, first) in [
            // One client, so each review is judged alone: the cost of one
            // new pair.
            (
                "one at a time, every pair new",
                (1, per_client),
                Some(at),
                500_000,
            ),
            ("every pair new", (clients, per_client), Some(at), 1),
            ("one pair again and again", (clients, per_client), None, 0),
        ] {
            let took = runtime.block_on(load_with(
                served.addr,
                &ca,
                body.clone(),
                load,
                distinct,
                first,
            ));
            println!(
                "  {run}: {} reviews by {} clients at once: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; serve RSS {:.1} MiB, peak {:.1} MiB",
                took.len(),
                load.0,
                percentile(&took, 0.5).as_secs_f64() * 1000.0,
                percentile(&took, 0.99).as_secs_f64() * 1000.0,
                took.last().copied().unwrap_or_default().as_secs_f64() * 1000.0,
                rss_kib(pid, "VmRSS:") as f64 / 1024.0,
                rss_kib(pid, "VmHWM:") as f64 / 1024.0
            );
        }
    }
}
