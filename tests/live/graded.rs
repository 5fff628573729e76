//! The stored objects grade the findings they decide (`apply-check
//! --objects`), on the real API server of every matrix version: a real
//! operator upgrade (prometheus-operator v0.76.2 -> v0.92.0, as
//! kube-prometheus v0.14.0 -> v0.18.0 ship its CRDs) over a cluster holding
//! ordinary objects is safe for that cluster, and becomes unsafe, naming the
//! object, as soon as one stored object breaks a new `pattern` or `enum`.
//!
//! The CRDs are the corpus's, with their group renamed so that no other
//! test of this binary (the corpus's own dry runs) meets them.

use std::path::Path;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

use crate::support;
use support::corpus::corpus_dir;
use support::envtest::{ControlPlane, control_plane_of, matrix};
use support::live::{admin, apply_check, ensure_namespace, install_as};
use support::run::{Run, run};

pub(crate) const GROUP: &str = "monitoring.graded.example";
pub(crate) const OLD: &str = "prometheus-operator/kube-prometheus-v0.14.0_po-v0.76.2";
pub(crate) const NEW: &str = "prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0";

/// Every CRD of a corpus release, its group renamed to [`GROUP`].
pub(crate) fn release(dir: &Path) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("corpus file");
            let mut crd: Value =
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let plural = crd["spec"]["names"]["plural"]
                .as_str()
                .expect("plural")
                .to_string();
            crd["spec"]["group"] = json!(GROUP);
            crd["metadata"]["name"] = json!(format!("{plural}.{GROUP}"));
            if let Some(annotations) = crd["metadata"]["annotations"].as_object_mut() {
                annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
            }
            crd
        })
        .collect()
}

fn api(client: &kube::Client, kind: &str, plural: &str, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, "v1", kind);
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

pub(crate) async fn create(
    client: &kube::Client,
    kind: &str,
    plural: &str,
    name: &str,
    spec: Value,
) {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": kind,
        "metadata": {"name": name, "namespace": NS}, "spec": spec
    }))
    .expect("object");
    api(client, kind, plural, NS)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("{kind} {name} is created: {e}"));
}

async fn delete(client: &kube::Client, kind: &str, plural: &str, name: &str) {
    api(client, kind, plural, NS)
        .delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("{kind} {name} is deleted: {e}"));
}

pub(crate) const NS: &str = "graded";

/// The errors of a report: `(crd, check, path)`.
fn errors(report: &Value) -> Vec<(String, String, String)> {
    report["crds"]
        .as_array()
        .expect("crds")
        .iter()
        .flat_map(|c| {
            let name = c["name"].as_str().unwrap_or_default().to_string();
            c["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| f["severity"] == "error")
                .map(move |f| {
                    (
                        name.clone(),
                        f["check"].as_str().unwrap_or_default().to_string(),
                        f["path"].as_str().unwrap_or_default().to_string(),
                    )
                })
        })
        .collect()
}

/// Every finding of every CRD of a report.
fn every_finding(report: &Value) -> impl Iterator<Item = &Value> {
    report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["findings"].as_array().into_iter().flatten())
}

fn check(new: &str, kubeconfig: &str, extra: &[&str]) -> (Run, Value) {
    let mut args = vec!["--objects", "-o", "json"];
    args.extend_from_slice(extra);
    let r = apply_check(new, kubeconfig, &args);
    let report: Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("json report ({e}): {}{}", r.stdout, r.stderr));
    (r, report)
}

#[tokio::test]
async fn a_real_operator_upgrade_is_graded_by_the_clusters_own_objects() {
    let Some(corpus) = corpus_dir() else { return };
    for version in matrix() {
        let Some(plane) = control_plane_of(&version) else {
            return;
        };
        upgrade_graded_on(plane, &corpus).await;
    }
}

async fn upgrade_graded_on(plane: &ControlPlane, corpus: &Path) {
    let at = format!("[{}]", plane.kube_version);
    let client = admin(plane).await;
    for crd in release(&corpus.join(OLD)) {
        // As the project's docs tell users to install them.
        install_as(&client, &crd, "kubectl").await;
    }
    ensure_namespace(&client, NS).await;
    create(
        &client,
        "ServiceMonitor",
        "servicemonitors",
        "web",
        json!({"selector": {"matchLabels": {"app": "web"}}, "endpoints": [{"port": "http", "interval": "30s"}]}),
    )
    .await;
    create(
        &client,
        "PrometheusRule",
        "prometheusrules",
        "web-alerts",
        json!({"groups": [{"name": "web", "rules": [{"alert": "WebDown", "expr": "up == 0", "for": "5m"}]}]}),
    )
    .await;
    create(
        &client,
        "Prometheus",
        "prometheuses",
        "main",
        json!({"replicas": 1, "serviceMonitorSelector": {}, "ruleSelector": {}}),
    )
    .await;

    let dir = tempfile::tempdir().expect("tempdir");
    for crd in release(&corpus.join(NEW)) {
        let name = crd["metadata"]["name"].as_str().expect("name").to_string();
        std::fs::write(
            dir.path().join(format!("{name}.json")),
            serde_json::to_vec_pretty(&crd).expect("json"),
        )
        .expect("manifest written");
    }
    let new = dir.path().display().to_string();
    let kubeconfig = plane.admin_kubeconfig.display().to_string();

    // Without the objects: the schema alone, every tightening an error.
    let r = apply_check(&new, &kubeconfig, &["-o", "json"]);
    assert_eq!(r.code, 1, "{at} the schema alone fails: {}", r.stderr);
    let schema_only: Value = serde_json::from_str(&r.stdout).expect("json");
    let schema_errors = errors(&schema_only).len();
    assert!(
        schema_errors > 200,
        "{at} {schema_errors} errors without --objects"
    );

    // With them: no stored object is hurt, so the cluster is safe.
    let (r, report) = check(&new, &kubeconfig, &[]);
    assert_eq!(r.code, 0, "{at} {:?}\n{}", errors(&report), r.stderr);
    let grading = &report["summary"]["grading"];
    assert_eq!(grading["objectsScanned"], 3, "{at} {grading}");
    assert!(
        grading["reachNoObject"].as_u64().unwrap_or(0) >= schema_errors as u64 - 10,
        "{at} nearly every error is decided by the objects: {grading} of {schema_errors}"
    );
    assert_eq!(grading["reachObjects"], 0, "{at} {grading}");
    let lowered = every_finding(&report)
        .find(|f| f["check"] == "pattern" && f["path"] == "^.spec.endpoints[*].proxyUrl")
        .cloned()
        .expect("the new proxyUrl pattern is reported");
    assert_eq!(lowered["severity"], "warning", "{at} {lowered}");
    assert_eq!(lowered["grade"]["outcome"], "noStoredObjectAffected");
    assert_eq!(lowered["grade"]["schemaSeverity"], "error");
    assert!(
        lowered["message"]
            .as_str()
            .is_some_and(|m| m.contains("no stored object fails it (0 of 1 in v1 scanned)")),
        "{at} {lowered}"
    );
    // The table says what the verdict rests on.
    let table = apply_check(&new, &kubeconfig, &["--objects"]);
    assert_eq!(table.code, 0, "{at} {}", table.stderr);
    assert!(
        table.stdout.contains("by the 3 stored objects scanned: "),
        "{at} {}",
        table.stdout
    );
    // ...on about one screen: the verdicts, what is left once per check,
    // what the objects cleared counted per check.
    assert!(
        table.stdout.lines().count() <= 80,
        "{at} a report to read in a minute, not {} lines:\n{}",
        table.stdout.lines().count(),
        table.stdout
    );
    assert!(
        table.stdout.contains("reach no stored object"),
        "{at} {}",
        table.stdout
    );
    let schema_table = apply_check(&new, &kubeconfig, &[]);
    println!(
        "{at} prometheus-operator v0.76.2 -> v0.92.0: schema alone {schema_errors} errors, {} table lines, exit {}; \
         graded by 3 objects: {} errors, {grading}, {} table lines, exit {}",
        schema_table.stdout.lines().count(),
        schema_table.code,
        errors(&report).len(),
        table.stdout.lines().count(),
        table.code
    );
    // Narrowed to a namespace, the objects decide nothing, and it says why.
    let (r, narrowed) = check(&new, &kubeconfig, &["-n", "default"]);
    assert_eq!(r.code, 1, "{at} a narrowed scan keeps the errors");
    let undecided = narrowed["summary"]["grading"]["undecided"]
        .as_u64()
        .unwrap_or(0);
    assert!(undecided as usize >= schema_errors - 10, "{at} {undecided}");

    // One stored object breaks the new pattern: one error, naming it.
    create(
        &client,
        "ServiceMonitor",
        "servicemonitors",
        "behind-proxy",
        json!({"selector": {}, "endpoints": [{"port": "http", "proxyUrl": "proxy.internal:3128"}]}),
    )
    .await;
    let (r, report) = check(&new, &kubeconfig, &[]);
    assert_eq!(r.code, 1, "{at} {}", r.stderr);
    let found = errors(&report);
    assert_eq!(
        found,
        [(
            format!("servicemonitors.{GROUP}"),
            "pattern".to_string(),
            "^.spec.endpoints[*].proxyUrl".to_string()
        )],
        "{at} one error, the schema finding that the object fails"
    );
    let error = every_finding(&report)
        .find(|f| f["severity"] == "error")
        .cloned()
        .expect("the error");
    assert_eq!(error["objects"]["count"], 1, "{at} {error}");
    assert_eq!(
        error["objects"]["examples"],
        json!([format!("{NS}/behind-proxy")])
    );
    assert_eq!(error["grade"]["outcome"], "storedObjectsAffected");
    let r = run(
        &[
            "apply",
            "-f",
            &new,
            "--kubeconfig",
            &kubeconfig,
            "--objects",
            "--yes",
            "--force-conflicts",
        ],
        None,
    );
    assert_eq!(r.code, 1, "{at} apply refuses: {}{}", r.stdout, r.stderr);
    delete(&client, "ServiceMonitor", "servicemonitors", "behind-proxy").await;

    // A value outside a new enum: the same.
    create(
        &client,
        "Prometheus",
        "prometheuses",
        "mixed-case",
        json!({"alerting": {"alertmanagers": [{"namespace": NS, "name": "am", "port": "web", "scheme": "Https"}]}}),
    )
    .await;
    let (r, report) = check(&new, &kubeconfig, &[]);
    assert_eq!(r.code, 1, "{at} {}", r.stderr);
    assert_eq!(
        errors(&report),
        [(
            format!("prometheuses.{GROUP}"),
            "enum".to_string(),
            "^.spec.alerting.alertmanagers[*].scheme".to_string()
        )],
        "{at}"
    );
    delete(&client, "Prometheus", "prometheuses", "mixed-case").await;

    // The objects that come with the manifests are checked too: a sample
    // the new pattern refuses, at its file and line.
    let samples = tempfile::tempdir().expect("tempdir");
    let sample = samples.path().join("monitor.yaml");
    std::fs::write(
        &sample,
        format!(
            "apiVersion: {GROUP}/v1\nkind: ServiceMonitor\nmetadata:\n  name: sample\n  namespace: {NS}\n\
             spec:\n  selector: {{}}\n  endpoints:\n  - port: http\n    proxyUrl: proxy.internal:3128\n"
        ),
    )
    .expect("sample written");
    let sample = sample.display().to_string();
    let r = run(
        &[
            "apply-check",
            "-f",
            &new,
            "-f",
            &sample,
            "--kubeconfig",
            &kubeconfig,
            "--objects",
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 1, "{at} {}", r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).expect("json");
    let found = errors(&report);
    assert_eq!(
        found,
        [(
            format!("servicemonitors.{GROUP}"),
            "manifestObjects".to_string(),
            "^.spec.endpoints[*].proxyUrl".to_string()
        )],
        "{at} only the sample, which no stored object is"
    );
    assert!(
        r.stdout.contains(&format!("{sample}:1 {NS}/sample")),
        "{at} {}",
        r.stdout
    );

    // Safe again: `apply` applies it without --force, as the owner kubectl's
    // server-side install made (no fields to take over).
    let r = run(
        &[
            "apply",
            "-f",
            &new,
            "--kubeconfig",
            &kubeconfig,
            "--objects",
            "--yes",
            "--field-manager",
            "kubectl",
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{at} apply applies: {}{}", r.stdout, r.stderr);
    let applied: Value = serde_json::from_str(&r.stdout).expect("json");
    let results = applied["apply"]["results"].as_array().expect("results");
    assert!(
        results
            .iter()
            .all(|r| r["result"] == "configured" || r["result"] == "unchanged"),
        "{at} {results:?}"
    );
    assert!(
        results.iter().any(|r| r["result"] == "configured"),
        "{at} {results:?}"
    );
}
