//! `serve` as an admission webhook of a real API server: the API server
//! calls it over HTTPS on loopback (a `ValidatingWebhookConfiguration` with
//! `clientConfig.url` and a test CA), and real clients (kubectl in its
//! client-side, server-side and replace forms, crd-safety's own
//! `apply-check`) meet its verdicts.

// Signals, pseudo-terminals and the test control plane: Unix only.
#![cfg(unix)]

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::envtest::{ControlPlane, dedicated};
use support::live::{admin, crd, create_objects, install, write_manifest};
use support::run::run;
use support::runs::assert_has;
use support::webhook::{Served, TestCa, get, kubectl, post, register, until_kubectl_says};

fn write_config(dir: &Path, text: &str) {
    let tmp = dir.join(".config.yaml.new");
    std::fs::write(&tmp, text).expect("config");
    std::fs::rename(&tmp, dir.join("config.yaml")).expect("rename");
}

/// `kubectl apply --server-side --dry-run=server` of `file`, taking over
/// fields from the test's installer: the API server runs admission, the
/// webhook answers, nothing is stored.
fn dry_run(file: &str) -> [&str; 6] {
    [
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "-f",
        file,
    ]
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The widget CRD with `spec.size` and the given extra spec fields.
fn widgets(extra: Value) -> Value {
    crd("widgets", &[("v1", true, true)], extra)
}

struct Setup {
    plane: ControlPlane,
    ca: TestCa,
    served: Served,
    dir: tempfile::TempDir,
}

/// A control plane of its own (a webhook configuration reaches every
/// request), `serve` with `config`, registered with `failure_policy`, and
/// the widget CRD (`size`, `color`) installed before the webhook.
async fn setup(config: &str, failure_policy: &str) -> Option<Setup> {
    let plane = dedicated()?;
    let client = admin(&plane).await;
    install(&client, &widgets(json!({"color": {"type": "string"}}))).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new();
    ca.issue(dir.path());
    write_config(dir.path(), config);
    let served = Served::start(dir.path(), &plane.admin_kubeconfig, &[]);
    register(&client, &served.url(), &ca, failure_policy).await;
    Some(Setup {
        plane,
        ca,
        served,
        dir,
    })
}

#[tokio::test]
async fn an_unsafe_update_is_denied_for_every_client_and_a_safe_one_passes() {
    let Some(s) = setup("webhook:\n  mode: enforce\n", "Fail").await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let files = s.dir.path();
    // `color` removed: stored widgets would lose it.
    let unsafe_crd = write_manifest(files, "unsafe.json", &widgets(json!({})));
    let denied = until_kubectl_says(kc, &dry_run(&unsafe_crd), "denied the request");
    assert!(!denied.status.success());
    let text = stderr(&denied);
    assert_has(
        &text,
        "crd-safety: this update of widgets.example.com is unsafe (1 error):",
    );
    assert_has(&text, "- existingFieldRemoval v1 ^.spec.color:");
    assert!(
        text.contains("crd-safety.io/accept: \"existingFieldRemoval\""),
        "the way out is named: {text}"
    );
    for args in [
        vec!["apply", "-f", &unsafe_crd],
        vec![
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            &unsafe_crd,
        ],
        vec!["replace", "-f", &unsafe_crd],
    ] {
        let out = kubectl(kc, &args);
        assert!(!out.status.success(), "kubectl {args:?} passed");
        assert!(
            stderr(&out).contains("existingFieldRemoval v1 ^.spec.color"),
            "kubectl {args:?}: {}",
            stderr(&out)
        );
    }
    // Nothing of it was stored.
    let live = kubectl(kc, &["get", "crd", "widgets.example.com", "-o", "json"]);
    let live: Value = serde_json::from_slice(&live.stdout).expect("CRD JSON");
    assert!(
        live.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color")
            .is_some()
    );
    // apply-check sees the webhook's denial in the server's dry run.
    let report = run(
        &[
            "apply-check",
            "-f",
            &unsafe_crd,
            "--kubeconfig",
            kc.to_str().expect("utf-8"),
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(report.code, 1, "{}", report.stderr);
    let findings = &report.json()["crds"][0]["findings"];
    let rejects: Vec<&Value> = findings
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "apiServerRejects")
        .collect();
    assert_eq!(rejects.len(), 1, "{findings:#}");
    assert!(
        rejects[0]["message"].as_str().is_some_and(
            |m| m.contains("admission webhook \"crds.crd-safety.io\" denied the request")
        ),
        "{:#}",
        rejects[0]
    );
    // A safe change (a new optional field) passes, for real.
    let safe = write_manifest(
        files,
        "safe.json",
        &widgets(json!({"color": {"type": "string"}, "shape": {"type": "string"}})),
    );
    let out = kubectl(
        kc,
        &["apply", "--server-side", "--force-conflicts", "-f", &safe],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // One log line per decision, naming the user and the verdict.
    let log = s.served.log();
    let reviews: Vec<&Value> = log.iter().filter(|v| v["event"] == "review").collect();
    assert!(
        reviews.iter().any(|r| r["verdict"] == "deny"
            && r["operation"] == "UPDATE"
            && r["crd"] == "widgets.example.com"
            && r["dryRun"] == true),
        "{reviews:#?}"
    );
    assert!(
        reviews
            .iter()
            .any(|r| r["verdict"] == "allow" && r["dryRun"] == false),
        "{reviews:#?}"
    );
    assert!(
        reviews
            .iter()
            .all(|r| r["user"].as_str().is_some_and(|u| !u.is_empty()))
    );
    drop(s.ca);
}

#[tokio::test]
async fn warn_mode_break_glass_deletion_guard_reloads_and_failure_policy() {
    let Some(mut s) = setup("webhook:\n  mode: warn\n", "Fail").await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let files = s.dir.path();
    let client = admin(&s.plane).await;

    // warn: allowed, and kubectl shows each finding as a Warning: line.
    let no_color = write_manifest(files, "no-color.json", &widgets(json!({})));
    let out = until_kubectl_says(
        kc,
        &dry_run(&no_color),
        "Warning: crd-safety error existingFieldRemoval v1 ^.spec.color",
    );
    assert!(out.status.success(), "{}", stderr(&out));

    // enforce, by editing the mounted configuration: denied, with no
    // failed review on the way.
    let before = s.served.log().len();
    write_config(files, "webhook:\n  mode: enforce\n");
    s.served.wait_for("configuration reloaded", before);
    let out = kubectl(kc, &dry_run(&no_color));
    assert_has(&stderr(&out), "denied the request");

    // Break-glass: accepted with a reason, still warned, logged with the user.
    let mut accepted = widgets(json!({}));
    accepted["metadata"]["annotations"] = json!({
        "crd-safety.io/accept": "existingFieldRemoval",
        "crd-safety.io/accept-reason": "color was never read; see #42"
    });
    let accepted = write_manifest(files, "accepted.json", &accepted);
    let out = kubectl(
        kc,
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            &accepted,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_has(
        &stderr(&out),
        "Warning: crd-safety error existingFieldRemoval v1 ^.spec.color",
    );
    let glass = s
        .served
        .log()
        .into_iter()
        .rev()
        .find(|v| v["event"] == "review" && v["breakGlass"].is_object())
        .expect("the break-glass review is logged");
    assert_eq!(
        glass["breakGlass"]["reason"],
        "color was never read; see #42"
    );
    assert_eq!(glass["accepted"], json!(["existingFieldRemoval"]));
    assert!(glass["user"].as_str().is_some_and(|u| !u.is_empty()));

    // The deletion guard: refused while a widget exists, with the count.
    create_objects(
        &client,
        "widgets",
        "v1",
        vec![("default".into(), "w1".into(), json!({"size": 1}))],
    )
    .await;
    let out = kubectl(kc, &["delete", "crd", "widgets.example.com"]);
    assert!(!out.status.success());
    assert_has(&stderr(&out), "1 Widget object still exist");

    // A rotated certificate (same CA) is served without a failed review.
    let before = s.served.log().len();
    s.ca.issue(files);
    s.served.wait_for("certificate reloaded", before);
    for _ in 0..5 {
        let out = kubectl(
            kc,
            &["delete", "crd", "widgets.example.com", "--dry-run=server"],
        );
        assert_has(&stderr(&out), "denied the request");
    }

    // Without objects the delete is allowed.
    let out = kubectl(
        kc,
        &["delete", "widgets.example.com", "w1", "-n", "default"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = kubectl(
        kc,
        &["delete", "crd", "widgets.example.com", "--dry-run=server"],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    // Stopped: `Fail` refuses CRD changes, `Ignore` lets them through.
    let url = s.served.url();
    assert_eq!(s.served.terminate(), 0, "serve exits 0 on SIGTERM");
    let safe = write_manifest(
        files,
        "safe.json",
        &widgets(json!({"shape": {"type": "string"}})),
    );
    let out = kubectl(kc, &dry_run(&safe));
    assert!(!out.status.success());
    assert_has(&stderr(&out), "failed calling webhook");
    register(&client, &url, &s.ca, "Ignore").await;
    until_kubectl_says(kc, &dry_run(&safe), "serverside-applied (server dry run)");
}

#[tokio::test]
async fn hostile_bodies_get_a_400_and_the_server_keeps_serving() {
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new();
    ca.issue(dir.path());
    write_config(dir.path(), "webhook:\n  mode: enforce\n");
    let mut served = Served::start(
        dir.path(),
        &plane.admin_kubeconfig,
        &["--max-body-bytes", "65536"],
    );
    let addr = served.addr;
    let review = |v: Value| serde_json::to_vec(&v).expect("JSON");
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("not JSON", post(b"hello"), 400, "not an AdmissionReview"),
        (
            "truncated",
            post(br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"#),
            400,
            "not an AdmissionReview",
        ),
        (
            "wrong kind",
            post(&review(json!({"kind": "Pod", "apiVersion": "v1", "request": null}))),
            400,
            "expected an admission.k8s.io/v1 AdmissionReview, found v1 Pod",
        ),
        (
            "v1beta1",
            post(&review(json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1"}))),
            400,
            "expected an admission.k8s.io/v1 AdmissionReview",
        ),
        (
            "no request",
            post(&review(json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}))),
            400,
            "carries no request",
        ),
        // Refused from its declared length, before the body is sent (a
        // client still writing when the answer comes would see a reset).
        (
            "huge",
            post(&vec![b' '; 100_000])[..200].to_vec(),
            413,
            "larger than 65536 bytes",
        ),
        ("GET /validate", get("/validate"), 405, "method not allowed"),
        ("unknown path", get("/mutate"), 404, "no such path: /mutate"),
    ];
    for (what, request, status, says) in &cases {
        let (code, body) = support::webhook::https(addr, &ca, request).await;
        assert_eq!(code, *status, "{what}: {body}");
        assert!(body.contains(says), "{what}: {body}");
    }
    // Still alive, and it counted what it refused.
    let (code, body) = support::webhook::https(addr, &ca, &get("/healthz")).await;
    assert_eq!((code, body.as_str()), (200, "ok\n"));
    let (code, _) = support::webhook::https(addr, &ca, &get("/readyz")).await;
    assert_eq!(code, 200);
    let (code, metrics) = support::webhook::https(addr, &ca, &get("/metrics")).await;
    assert_eq!(code, 200);
    assert_has(&metrics, "crd_safety_bad_requests_total 6\n");
    // A review of something that is not a CRD is answered, not a crash:
    // allowed under failMode open, with the reason.
    let pod_review = review(json!({
        "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "p", "operation": "CREATE", "userInfo": {"username": "alice"},
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
        }
    }));
    let (code, body) = support::webhook::https(addr, &ca, &post(&pod_review)).await;
    assert_eq!(code, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("an AdmissionReview answer");
    assert_eq!(answer["response"]["uid"], "u1");
    assert_eq!(answer["response"]["allowed"], true);
    assert!(
        answer["response"]["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("CustomResourceDefinitions only, not Pod")),
        "{answer:#}"
    );
    let (_, metrics) = support::webhook::https(addr, &ca, &get("/metrics")).await;
    assert_has(
        &metrics,
        "crd_safety_reviews_total{operation=\"CREATE\",verdict=\"warn\"} 1\n",
    );
    assert_has(&metrics, "crd_safety_review_duration_seconds_count 1\n");
    assert_eq!(served.terminate(), 0);
    let log = served.log();
    assert_eq!(
        log.last().map(|v| v["event"].clone()),
        Some(json!("stopped"))
    );
}

/// Runs `helm args` against the control plane, with its state in `home`.
fn helm(dir: &Path, home: &Path, kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(dir.join("helm"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env_remove("KUBECONFIG")
        .output()
        .expect("helm runs")
}

/// A chart that keeps its CRD in `templates/` (so `helm upgrade` changes
/// it, unlike `crds/`).
fn chart_with_crd(dir: &Path, version: &str, crd: &Value) -> String {
    let chart = dir.join(format!("gadgets-{version}"));
    std::fs::create_dir_all(chart.join("templates")).expect("chart dir");
    std::fs::write(
        chart.join("Chart.yaml"),
        format!("apiVersion: v2\nname: gadgets\nversion: {version}\n"),
    )
    .expect("Chart.yaml");
    std::fs::write(
        chart.join("templates/crd.json"),
        serde_json::to_string_pretty(crd).expect("JSON"),
    )
    .expect("template");
    chart.display().to_string()
}

#[tokio::test]
async fn helm_upgrade_of_a_chart_with_crds_in_templates_is_denied_with_the_findings() {
    let Some(helm_dir) = support::helm::helm_dir() else {
        return;
    };
    let Some(s) = setup("webhook:\n  mode: enforce\n", "Fail").await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let files = s.dir.path();
    let gadgets = |extra: Value| crd("gadgets", &[("v1", true, true)], extra);
    let v1 = chart_with_crd(
        files,
        "1.0.0",
        &gadgets(json!({"color": {"type": "string"}})),
    );
    // The first install is a CREATE: a new CRD is allowed.
    let out = until_kubectl_says(
        kc,
        &["get", "validatingwebhookconfiguration", "crd-safety"],
        "crd-safety",
    );
    assert!(out.status.success());
    let install = helm(helm_dir, files, kc, &["install", "gadgets", &v1, "--wait"]);
    assert!(install.status.success(), "{}", stderr(&install));
    let v2 = chart_with_crd(files, "2.0.0", &gadgets(json!({})));
    // The API server may still be loading the webhook configuration: the
    // upgrade is retried until the webhook answers (a denial proves it).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let upgrade = loop {
        let out = helm(helm_dir, files, kc, &["upgrade", "gadgets", &v2]);
        if !out.status.success() || std::time::Instant::now() > deadline {
            break out;
        }
        // It went through before the webhook was active: put v1 back.
        helm(helm_dir, files, kc, &["upgrade", "gadgets", &v1]);
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert!(
        !upgrade.status.success(),
        "helm upgrade passed an unsafe CRD change"
    );
    let text = stderr(&upgrade);
    assert_has(&text, "denied the request");
    assert_has(&text, "existingFieldRemoval v1 ^.spec.color");
}

#[tokio::test]
async fn the_object_scan_reports_stored_objects_the_new_schema_rejects_and_its_limits_follow_fail_mode()
 {
    let config =
        "webhook:\n  mode: enforce\n  scanObjects: {enabled: true, deadline: 5s, maxObjects: 10}\n";
    let Some(s) = setup(config, "Fail").await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let files = s.dir.path();
    let client = admin(&s.plane).await;
    create_objects(
        &client,
        "widgets",
        "v1",
        (0..3)
            .map(|i| {
                (
                    "default".to_string(),
                    format!("w{i}"),
                    json!({"size": 50 + i}),
                )
            })
            .collect(),
    )
    .await;
    // A maximum every stored widget exceeds: the comparison reports the
    // tightened bound, and the scan names the objects it would reject.
    let tightened = write_manifest(
        files,
        "tightened.json",
        &widgets(json!({"color": {"type": "string"}, "size": {"type": "integer", "maximum": 10}})),
    );
    let args = dry_run(tightened.as_str());
    let out = until_kubectl_says(kc, &args, "denied the request");
    let text = stderr(&out);
    assert_has(&text, "^.spec.size");
    let review = s
        .served
        .log()
        .into_iter()
        .rev()
        .find(|v| v["event"] == "review" && v["verdict"] == "deny")
        .expect("the review is logged");
    assert_eq!(review["scan"], "completed", "{review:#}");
    assert_eq!(review["objects"], 3, "{review:#}");
    assert!(
        review["findings"].as_array().is_some_and(|fs| fs
            .iter()
            .any(|f| f["objects"]["count"] == 3 || f["objects"].is_object())),
        "the scan's finding names the objects: {review:#}"
    );
    // More objects than maxObjects: not scanned. failMode open allows
    // (with the comparison's own findings still deciding), closed denies.
    create_objects(
        &client,
        "widgets",
        "v1",
        (3..12)
            .map(|i| ("default".to_string(), format!("w{i}"), json!({"size": 1})))
            .collect(),
    )
    .await;
    let before = s.served.log().len();
    write_config(
        files,
        "webhook:\n  mode: enforce\n  failMode: closed\n  scanObjects: {enabled: true, maxObjects: 10}\n",
    );
    s.served.wait_for("configuration reloaded", before);
    let shape = write_manifest(
        files,
        "shape.json",
        &widgets(json!({"color": {"type": "string"}, "shape": {"type": "string"}})),
    );
    let out = kubectl(kc, &dry_run(&shape));
    let text = stderr(&out);
    assert!(!out.status.success(), "{text}");
    assert_has(&text, "12 objects, more than scanObjects.maxObjects (10)");
    let before = s.served.log().len();
    write_config(
        files,
        "webhook:\n  mode: enforce\n  failMode: open\n  scanObjects: {enabled: true, maxObjects: 10}\n",
    );
    s.served.wait_for("configuration reloaded", before);
    let out = kubectl(kc, &dry_run(&shape));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("Warning: crd-safety unfinished: the stored objects were not scanned"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_certificate_rotation_and_a_configuration_change_fail_no_review() {
    let Some(s) = setup("webhook:\n  mode: enforce\n", "Fail").await else {
        return;
    };
    let kc = s.plane.admin_kubeconfig.clone();
    let files = s.dir.path();
    let unsafe_crd = write_manifest(files, "unsafe.json", &widgets(json!({})));
    let args = dry_run(unsafe_crd.as_str());
    until_kubectl_says(&kc, &args, "denied the request");
    // Reviews keep coming while the certificate rotates and the mode
    // changes; each must be answered by the webhook (denied, or allowed
    // with warnings after the switch to warn), never fail to call it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let looping = {
        let (stop, kc) = (std::sync::Arc::clone(&stop), kc.clone());
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        std::thread::spawn(move || {
            let mut answers = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let a: Vec<&str> = args.iter().map(String::as_str).collect();
                answers.push(stderr(&kubectl(&kc, &a)));
            }
            answers
        })
    };
    let before = s.served.log().len();
    s.ca.issue(files);
    s.served.wait_for("certificate reloaded", before);
    std::thread::sleep(std::time::Duration::from_secs(1));
    write_config(files, "webhook:\n  mode: warn\n");
    s.served.wait_for("configuration reloaded", before);
    std::thread::sleep(std::time::Duration::from_secs(1));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let answers = looping.join().expect("the review loop");
    assert!(answers.len() >= 4, "{answers:#?}");
    for a in &answers {
        assert!(
            a.contains("denied the request")
                || a.contains("Warning: crd-safety error existingFieldRemoval"),
            "a review failed: {a}"
        );
    }
    assert!(
        answers
            .last()
            .is_some_and(|a| a.contains("Warning: crd-safety"))
    );
}

#[tokio::test]
async fn a_scan_that_outlasts_its_deadline_follows_fail_mode() {
    let Some(plane) = dedicated() else {
        return;
    };
    let client = admin(&plane).await;
    install(&client, &widgets(json!({"color": {"type": "string"}}))).await;
    create_objects(
        &client,
        "widgets",
        "v1",
        vec![("default".into(), "w1".into(), json!({"size": 1}))],
    )
    .await;
    // serve reaches the cluster through a proxy that takes 3 s to answer
    // any read of widgets: no scan can finish within a 1 s deadline.
    let proxy = support::faults::FaultProxy::start(&plane, |r: &support::faults::Incoming<'_>| {
        if r.target.starts_with("/apis/example.com/") {
            support::faults::Fault::Delay(std::time::Duration::from_secs(3))
        } else {
            support::faults::Fault::Forward
        }
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    let slow_kubeconfig = proxy.kubeconfig(files);
    let ca = TestCa::new();
    ca.issue(files);
    write_config(
        files,
        "webhook:\n  mode: enforce\n  failMode: closed\n  scanObjects: {enabled: true, deadline: 1s}\n",
    );
    let served = Served::start(files, Path::new(&slow_kubeconfig), &[]);
    register(&client, &served.url(), &ca, "Fail").await;
    let kc = &plane.admin_kubeconfig;
    // A safe change: only the unfinished scan can deny it.
    let shape = write_manifest(
        files,
        "shape.json",
        &widgets(json!({"color": {"type": "string"}, "shape": {"type": "string"}})),
    );
    let args = dry_run(shape.as_str());
    let started = std::time::Instant::now();
    let out = until_kubectl_says(kc, &args, "denied the request");
    let text = stderr(&out);
    assert_has(&text, "did not finish within scanObjects.deadline (1s)");
    assert_has(&text, "failMode: closed denies what could not be checked");
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
    let before = served.log().len();
    write_config(
        files,
        "webhook:\n  mode: enforce\n  failMode: open\n  scanObjects: {enabled: true, deadline: 1s}\n",
    );
    served.wait_for("configuration reloaded", before);
    let out = kubectl(kc, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "Warning: crd-safety unfinished: the scan of the stored objects did not finish"
        ),
        "{}",
        stderr(&out)
    );
}
