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
//! legs. `BUNDLE_BENCH_BEFORE=PATH` times another build of the plugin (the
//! one before a change) beside this one in the same run.
//! `BUNDLE_BENCH_CONFLICTS=1` installs the bundle as kubectl's field
//! manager and rewords a field it owns in every CRD's next release, so
//! that each of this tool's dry runs meets a field-manager conflict.
//! `BUNDLE_BENCH_OBJECTS=N` stores about N objects spread over the bundle's
//! CRDs and adds `apply-check --objects`, beside the same LISTs made by a
//! plain client `--concurrency` at a time. Peak memory is GNU time's
//! maximum resident set (when `/usr/bin/time` exists). Figures are printed,
//! never asserted.

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
    // `BUNDLE_BENCH_CONFLICTS=1`: the new release also rewords each
    // version's root description, a field kubectl's field manager owns,
    // so every dry run meets a field-manager conflict.
    if std::env::var("BUNDLE_BENCH_CONFLICTS").is_ok_and(|v| v == "1")
        && let Some(versions) = m["spec"]["versions"].as_array_mut()
    {
        for v in versions {
            v["schema"]["openAPIV3Schema"]["description"] = json!(if added {
                "bench: reworded"
            } else {
                "bench: installed"
            });
        }
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

/// Wall time and peak memory of one run.
#[derive(Debug, Clone, Copy)]
struct Timed {
    wall: f64,
    /// Maximum resident set, MiB.
    peak: Option<f64>,
    /// User and system CPU time, seconds: what the client takes from the
    /// cores the API server shares.
    cpu: Option<f64>,
}

impl Timed {
    fn show(self, requests: usize) -> String {
        let peak = self
            .peak
            .map(|p| format!(", {p:.0} MiB"))
            .unwrap_or_default();
        let cpu = self
            .cpu
            .map(|c| format!(", cpu {c:.1} s"))
            .unwrap_or_default();
        format!("{:.1} s ({requests} req{peak}{cpu})", self.wall)
    }
}

/// Runs `program args`, under GNU time when it is there; reports an exit
/// other than 0 or 1 (a verdict) with the program's error.
fn timed(program: &str, args: &[&str]) -> (Timed, Vec<u8>) {
    let gnu_time = Path::new("/usr/bin/time").exists();
    let peak_file = tempfile::NamedTempFile::new().expect("temp file");
    let mut command = if gnu_time {
        let mut c = Command::new("/usr/bin/time");
        c.args(["-f", "%M %U %S", "-o"])
            .arg(peak_file.path())
            .arg(program);
        c
    } else {
        Command::new(program)
    };
    let started = Instant::now();
    let out = command.args(args).output().expect("the command runs");
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
    // The last line is GNU time's: peak KiB, user and system seconds.
    let figures: Vec<f64> = std::fs::read_to_string(peak_file.path())
        .ok()
        .and_then(|t| Some(t.lines().last()?.to_string()))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let peak = figures.first().map(|kib| kib / 1024.0);
    let cpu = (figures.len() == 3).then(|| figures[1] + figures[2]);
    (Timed { wall, peak, cpu }, out.stdout)
}

/// The smallest value `schema` describes as far as its types, required
/// fields, enums, defaults and lower bounds tell: what a bench object
/// carries. Patterns, formats and CEL rules are not read, so the server
/// refuses some.
fn minimal(schema: &Value) -> Value {
    if let Some(v) = schema.get("default") {
        return v.clone();
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    let at_least = |key: &str| schema[key].as_u64().unwrap_or(0);
    match schema["type"].as_str() {
        Some("object") => {
            let mut out = serde_json::Map::new();
            for name in schema["required"].as_array().into_iter().flatten() {
                if let Some(name) = name.as_str() {
                    out.insert(name.to_string(), minimal(&schema["properties"][name]));
                }
            }
            Value::Object(out)
        }
        Some("array") => (0..at_least("minItems").max(1))
            .map(|_| minimal(&schema["items"]))
            .collect(),
        Some("string") => json!("x".repeat(at_least("minLength").max(1) as usize)),
        Some("integer") | Some("number") => json!(schema["minimum"].as_i64().unwrap_or(1).max(1)),
        Some("boolean") => json!(false),
        _ if schema["x-kubernetes-int-or-string"] == json!(true) => json!(1),
        _ => json!({}),
    }
}

/// Stores about `count` objects spread over the bundle's CRDs (namespaced
/// ones in namespace `bench`), each as small as [`minimal`] makes it. The
/// server refuses those it makes too small; the number it stored is
/// returned.
fn store_objects(kubectl: &str, kubeconfig: &str, crds: &[Value], count: usize, dir: &Path) -> u64 {
    let _ = Command::new(kubectl)
        .args(["create", "namespace", "bench", "--kubeconfig", kubeconfig])
        .output();
    let mut items = Vec::new();
    for i in 0..count {
        let crd = &crds[i % crds.len()];
        let group = crd["spec"]["group"].as_str().unwrap_or("");
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or("");
        let Some(version) = crd["spec"]["versions"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["storage"] == json!(true)))
        else {
            continue;
        };
        let mut object = json!({
            "apiVersion": format!("{group}/{}", version["name"].as_str().unwrap_or("")),
            "kind": kind,
            "metadata": {"name": format!("o{i}")},
        });
        if crd["spec"]["scope"] == json!("Namespaced") {
            object["metadata"]["namespace"] = json!("bench");
        }
        if let Some(spec) = version.pointer("/schema/openAPIV3Schema/properties/spec") {
            object["spec"] = minimal(spec);
        }
        items.push(object);
    }
    let items_len = items.len();
    let file = dir.join("objects.json");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(&file, serde_json::to_string(&list).expect("json")).expect("objects file");
    let out = Command::new(kubectl)
        .args([
            "create",
            "--validate=false",
            "-f",
            &file.display().to_string(),
            "--kubeconfig",
            kubeconfig,
        ])
        .output()
        .expect("kubectl runs");
    let created = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.ends_with(" created"))
        .count() as u64;
    eprintln!("bundle bench: {created} of {} objects stored", items_len);
    if created == 0 {
        // Say why, or the scan figures measure empty listings unnoticed.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why: Vec<&str> = stderr.lines().take(5).collect();
        eprintln!("bundle bench: no object stored:\n{}", why.join("\n"));
    }
    created
}

/// The LISTs `apply-check --objects` makes (every served version of every
/// CRD, 500 a page), made by a plain client `concurrency` at a time: how
/// long the listings alone take over this network.
fn plain_listing(kubeconfig: &str, crds: &[Value], concurrency: usize) -> f64 {
    use futures::StreamExt;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("config");
        let client = kube::Client::try_from(config).expect("client");
        let mut paths = Vec::new();
        for crd in crds {
            let group = crd["spec"]["group"].as_str().unwrap_or("");
            let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or("");
            for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
                if v["served"] == json!(true) {
                    let name = v["name"].as_str().unwrap_or("");
                    paths.push(format!("/apis/{group}/{name}/{plural}"));
                }
            }
        }
        let started = Instant::now();
        futures::stream::iter(paths.into_iter().map(|path| {
            let client = client.clone();
            async move {
                let mut token: Option<String> = None;
                loop {
                    let mut params = kube::api::ListParams::default().limit(500);
                    if let Some(t) = &token {
                        params = params.continue_token(t);
                    }
                    let request = kube::core::Request::new(&path)
                        .list(&params)
                        .expect("request");
                    let page: Value = client.request(request).await.expect("LIST");
                    match page["metadata"]["continue"].as_str() {
                        Some(t) if !t.is_empty() => token = Some(t.to_string()),
                        _ => break,
                    }
                }
            }
        }))
        .buffer_unordered(concurrency)
        .collect::<Vec<_>>()
        .await;
        started.elapsed().as_secs_f64()
    })
}

/// Installs `dir` as it is, straight to the server, as crd-safety's own
/// field manager would own it after an apply.
/// Installs the bundle as this tool's field manager, or, with
/// `BUNDLE_BENCH_CONFLICTS=1`, as kubectl's own (`kubectl`), as a user
/// who ran `kubectl apply --server-side` would have.
fn install(kubectl: &str, kubeconfig: &str, dir: &Path) {
    let conflicts = std::env::var("BUNDLE_BENCH_CONFLICTS").is_ok_and(|v| v == "1");
    let manager = if conflicts {
        "--field-manager=kubectl"
    } else {
        "--field-manager=kubectl-crd-safety"
    };
    let out = Command::new(kubectl)
        .args([
            "apply",
            "--server-side",
            "--force-conflicts",
            manager,
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
    let before = std::env::var("BUNDLE_BENCH_BEFORE").ok();
    let objects: usize = std::env::var("BUNDLE_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let work = tempfile::tempdir().expect("tempdir");
    let mut offset = 0usize;
    println!(
        "Kubernetes {}, one run each; requests counted at the proxy; peak memory by GNU time",
        plane.kube_version
    );
    let mut rows = Vec::new();
    let mut object_rows = Vec::new();
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
        let stored = if objects > 0 {
            store_objects(&kubectl, &admin, &old, objects, work.path())
        } else {
            0
        };
        let new_path = new_dir.display().to_string();
        for rtt in &rtts {
            let proxy = faults::FaultProxy::delaying(&plane, Duration::from_millis(*rtt));
            let kc_dir = work.path().join(format!("kc-{n}-{rtt}"));
            std::fs::create_dir_all(&kc_dir).expect("kubeconfig dir");
            let kc = proxy.kubeconfig(&kc_dir);
            // Each leg through the proxy, with the requests it saw.
            let leg = |program: &str, args: &[&str]| {
                let seen = proxy.seen().len();
                let (t, out) = timed(program, args);
                (t, proxy.seen().len() - seen, out)
            };
            let check_args = [
                "apply-check",
                "-f",
                &new_path,
                "--kubeconfig",
                &kc,
                "-o",
                "json",
            ];
            let (check, check_req, _) = leg(plugin, &check_args);
            let check_before = before
                .as_deref()
                .map(|b| leg(b, &check_args))
                .map_or("-".to_string(), |(t, r, _)| t.show(r));
            let (dry, dry_req, _) = leg(
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
            if objects > 0 {
                let with_objects = [&check_args[..], &["--objects"]].concat();
                let (scan, scan_req, out) = leg(plugin, &with_objects);
                let scanned: u64 = serde_json::from_slice::<Value>(&out)
                    .ok()
                    .and_then(|r| {
                        r["crds"].as_array().map(|crds| {
                            crds.iter()
                                .filter_map(|c| c["scan"]["scanned"].as_u64())
                                .sum()
                        })
                    })
                    .unwrap_or(0);
                let scan_before = before
                    .as_deref()
                    .map(|b| leg(b, &with_objects))
                    .map_or("-".to_string(), |(t, r, _)| t.show(r));
                let plain = plain_listing(&kc, &new, 8);
                let scanning = scan.wall - check.wall;
                object_rows.push(format!(
                    "| {n} | {rtt} ms | {scanned} of {stored} | {} | {scan_before} | {scanning:.1} s | {plain:.1} s | {:.2}x |",
                    scan.show(scan_req),
                    scanning / plain
                ));
            }
            let (mut ours, mut ours_before, mut theirs) =
                ("-".to_string(), "-".to_string(), "-".to_string());
            let mut ratio_apply = String::from("-");
            if with_apply {
                let apply_args = ["apply", "-f", &new_path, "--kubeconfig", &kc, "--yes"];
                let (a, a_req, _) = leg(plugin, &apply_args);
                install(&kubectl, &admin, &old_dir);
                if let Some(b) = before.as_deref() {
                    let (t, r, _) = leg(b, &apply_args);
                    ours_before = t.show(r);
                    install(&kubectl, &admin, &old_dir);
                }
                let (k, k_req, _) = leg(
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
                install(&kubectl, &admin, &old_dir);
                ours = a.show(a_req);
                theirs = k.show(k_req);
                ratio_apply = format!("{:.2}x", a.wall / k.wall);
            }
            let row = format!(
                "| {n} | {rtt} ms | {} | {check_before} | {} | {:.2}x | {ours} | {ours_before} | {theirs} | {ratio_apply} |",
                check.show(check_req),
                dry.show(dry_req),
                check.wall / dry.wall
            );
            println!("{row}");
            rows.push(row);
        }
    }
    println!();
    println!(
        "| CRDs | round trip | apply-check | before | kubectl --dry-run=server | ratio | apply --yes | before | kubectl apply --server-side | ratio |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for row in rows {
        println!("{row}");
    }
    if !object_rows.is_empty() {
        println!();
        println!(
            "| CRDs | round trip | objects scanned | apply-check --objects | before | scan (minus apply-check) | plain client's LISTs, 8 at once | ratio |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
        for row in object_rows {
            println!("{row}");
        }
    }
}
