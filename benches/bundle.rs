//! Big bundles over a slow network: `apply-check` and `apply` of a bundle
//! of N CRDs against a real kube-apiserver and etcd, through a loopback
//! proxy that delays every request by a round trip, beside kubectl's
//! server-side dry run and apply of the same bundle through the same proxy.
//!
//! `cargo bench --bench bundle` builds the bundles at bench time from the
//! corpus's real CRDs (cert-manager, Gateway API, Crossplane, Knative,
//! Velero, ...), each under a group of its own (`g<i>.bench.example`), so
//! nothing is copied into the repository. It installs the old bundle with
//! `kubectl apply --server-side`, then for every round trip times the new
//! bundle (one optional field added to every version). `BUNDLE_BENCH_N`
//! lists the bundle sizes (default `10,100`), `BUNDLE_BENCH_RTT_MS` the
//! round trips (default `0,20,50`); `BUNDLE_BENCH_APPLY=0` skips the apply
//! legs. Figures are printed, never asserted.

#[path = "../tests/support/envtest.rs"]
mod envtest;
#[path = "../tests/support/faults.rs"]
mod faults;
#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crd_safety::crd_validation::{self, KubeVersion};
use crd_safety::manifest::{Source, load, normalize_to_v1};
use serde_json::{Value, json};

/// Distinct real CRDs of the corpus, in a fixed order.
fn corpus_crds(corpus: &Path) -> Vec<Value> {
    let dirs = [
        "cert-manager",
        "gateway-api-experimental",
        "crossplane",
        "knative-serving",
        "velero",
        "istio",
        "strimzi",
        "cluster-api",
        "prometheus-operator",
        "tekton-pipeline",
        "keda",
        "external-secrets",
        "argo-cd",
        "eck",
    ];
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for d in dirs {
        // Each release on its own: a project's releases define the same CRDs.
        let Ok(entries) = std::fs::read_dir(corpus.join(d)) else {
            continue;
        };
        let mut releases: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        releases.sort();
        for release in releases.into_iter().rev() {
            let Ok(set) = load(&[Source::Path(release)]) else {
                continue;
            };
            for c in set.crds {
                let m = normalize_to_v1(c.crd.manifest.clone());
                let plural = m["spec"]["names"]["plural"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                // Only CRDs the server takes (some releases carry Helm text).
                let valid =
                    crd_validation::validate_crd(&m, None, KubeVersion::for_server(34)).is_empty();
                if valid
                    && m["spec"]["versions"]
                        .as_array()
                        .is_some_and(|v| !v.is_empty())
                    && seen.insert(plural)
                {
                    out.push(m);
                }
            }
        }
    }
    out
}

/// CRD `i` of the bundle: corpus CRD `i mod len` under group
/// `g<i>.bench.example`; `added` puts one optional field in every version.
fn bundle_crd(base: &Value, i: usize, added: bool) -> Value {
    let mut m = base.clone();
    let group = format!("g{i}.bench.example");
    let plural = m["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or("x")
        .to_string();
    m["metadata"] = json!({"name": format!("{plural}.{group}")});
    m["spec"]["group"] = json!(group);
    if let Some(o) = m.as_object_mut() {
        o.remove("status");
    }
    if let Some(conv) = m["spec"].get_mut("conversion") {
        *conv = json!({"strategy": "None"});
    }
    if added && let Some(versions) = m["spec"]["versions"].as_array_mut() {
        for v in versions {
            let root = &mut v["schema"]["openAPIV3Schema"];
            let spec_props = root
                .pointer("/properties/spec/properties")
                .is_some_and(Value::is_object);
            let props = if spec_props {
                root.pointer_mut("/properties/spec/properties")
            } else {
                root.pointer_mut("/properties").filter(|p| p.is_object())
            };
            if let Some(props) = props {
                props["benchAdded"] = json!({"type": "string", "maxLength": 63});
            }
        }
    }
    m
}

fn write_bundle(dir: &Path, crds: &[Value]) {
    std::fs::create_dir_all(dir).expect("bundle dir");
    for (i, c) in crds.iter().enumerate() {
        let text = serde_json::to_string(c).expect("json");
        std::fs::write(dir.join(format!("{i:04}.json")), text).expect("bundle file");
    }
}

/// Runs `program args`; wall seconds, and whether it exited 0 or 1 (a
/// verdict), printing its error otherwise.
fn timed(program: &str, args: &[&str]) -> f64 {
    let started = Instant::now();
    let out = Command::new(program)
        .args(args)
        .output()
        .expect("the command runs");
    let wall = started.elapsed().as_secs_f64();
    if !matches!(out.status.code(), Some(0 | 1)) {
        eprintln!(
            "failed ({:?}): {program} {}\n{}",
            out.status.code(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    wall
}

/// Installs `dir` as it is, straight to the server, as crd-safety's own
/// field manager would own it after an apply.
fn install(kubectl: &str, kubeconfig: &str, dir: &Path) {
    let out = Command::new(kubectl)
        .args([
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=kubectl-crd-safety",
            "-f",
            &dir.display().to_string(),
            "--kubeconfig",
            kubeconfig,
        ])
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "install failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn list(var: &str, default: &str) -> Vec<u64> {
    std::env::var(var)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect()
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("bundle bench: run with `cargo bench --bench bundle`");
        return;
    }
    let Some(corpus) = support::corpus_dir() else {
        return;
    };
    let Some(plane) = envtest::dedicated() else {
        eprintln!("bundle bench: no control plane available");
        return;
    };
    let bases = corpus_crds(&corpus);
    eprintln!("{} distinct corpus CRDs", bases.len());
    if bases.is_empty() {
        eprintln!("bundle bench: no corpus CRD could be read");
        return;
    }
    let kubectl = support::kubectl();
    let plugin = env!("CARGO_BIN_EXE_kubectl-crd_safety");
    let admin = plane.admin_kubeconfig.display().to_string();
    let sizes = list("BUNDLE_BENCH_N", "10,100");
    let rtts = list("BUNDLE_BENCH_RTT_MS", "0,20,50");
    let with_apply = std::env::var("BUNDLE_BENCH_APPLY").map_or(true, |v| v != "0");
    let work = tempfile::tempdir().expect("tempdir");
    let mut offset = 0usize;
    println!(
        "Kubernetes {}, one run each; requests counted at the proxy",
        plane.kube_version
    );
    println!(
        "| CRDs | round trip | apply-check | kubectl --dry-run=server | ratio | apply --yes | kubectl apply --server-side | ratio |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for n in sizes {
        let n = n as usize;
        let old: Vec<Value> = (0..n)
            .map(|i| bundle_crd(&bases[i % bases.len()], offset + i, false))
            .collect();
        let new: Vec<Value> = (0..n)
            .map(|i| bundle_crd(&bases[i % bases.len()], offset + i, true))
            .collect();
        offset += n;
        let (old_dir, new_dir): (PathBuf, PathBuf) = (
            work.path().join(format!("old-{n}")),
            work.path().join(format!("new-{n}")),
        );
        write_bundle(&old_dir, &old);
        write_bundle(&new_dir, &new);
        install(&kubectl, &admin, &old_dir);
        std::thread::sleep(Duration::from_secs(2));
        let new_path = new_dir.display().to_string();
        for rtt in &rtts {
            let proxy = faults::FaultProxy::delaying(&plane, Duration::from_millis(*rtt));
            let kc_dir = work.path().join(format!("kc-{n}-{rtt}"));
            std::fs::create_dir_all(&kc_dir).expect("kubeconfig dir");
            let kc = proxy.kubeconfig(&kc_dir);
            let before = proxy.seen().len();
            let check = timed(
                plugin,
                &[
                    "apply-check",
                    "-f",
                    &new_path,
                    "--kubeconfig",
                    &kc,
                    "-o",
                    "json",
                ],
            );
            let check_requests = proxy.seen().len() - before;
            let before = proxy.seen().len();
            let dry = timed(
                &kubectl,
                &[
                    "apply",
                    "--server-side",
                    "--force-conflicts",
                    "--dry-run=server",
                    "-f",
                    &new_path,
                    "--kubeconfig",
                    &kc,
                ],
            );
            let dry_requests = proxy.seen().len() - before;
            let (mut ours, mut theirs) = (String::from("-"), String::from("-"));
            let mut ratio_apply = String::from("-");
            if with_apply {
                let before = proxy.seen().len();
                let a = timed(
                    plugin,
                    &["apply", "-f", &new_path, "--kubeconfig", &kc, "--yes"],
                );
                let a_requests = proxy.seen().len() - before;
                install(&kubectl, &admin, &old_dir);
                let before = proxy.seen().len();
                let k = timed(
                    &kubectl,
                    &[
                        "apply",
                        "--server-side",
                        "--force-conflicts",
                        "--field-manager=kubectl-crd-safety",
                        "-f",
                        &new_path,
                        "--kubeconfig",
                        &kc,
                    ],
                );
                let k_requests = proxy.seen().len() - before;
                install(&kubectl, &admin, &old_dir);
                ours = format!("{a:.1} s ({a_requests} req)");
                theirs = format!("{k:.1} s ({k_requests} req)");
                ratio_apply = format!("{:.2}x", a / k);
            }
            println!(
                "| {n} | {rtt} ms | {check:.1} s ({check_requests} req) | {dry:.1} s ({dry_requests} req) | {:.2}x | {ours} | {theirs} | {ratio_apply} |",
                check / dry
            );
        }
    }
}
