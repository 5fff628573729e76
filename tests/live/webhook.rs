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
use support::webhook::{Served, TestCa, chunked, get, kubectl, post, register, until_kubectl_says};

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
    setup_with(config, failure_policy, &[]).await
}

/// [`setup`], with more arguments for `serve`.
async fn setup_with(config: &str, failure_policy: &str, serve_args: &[&str]) -> Option<Setup> {
    let plane = dedicated()?;
    let client = admin(&plane).await;
    install(&client, &widgets(json!({"color": {"type": "string"}}))).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new();
    ca.issue(dir.path());
    write_config(dir.path(), config);
    let served = Served::start(dir.path(), &plane.admin_kubeconfig, serve_args);
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
    // Without client authentication, who asked is what the body claims.
    assert!(
        reviews.iter().all(|r| r["identity"] == "claimed"),
        "{reviews:#?}"
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
        // Without a declared length the limit holds as the body arrives.
        ("huge, chunked", chunked(&[b' '; 70_000]), 413, "larger than 65536 bytes"),
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
    assert_has(&metrics, "crd_safety_bad_requests_total 7\n");
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
            .is_some_and(|w| w.contains("CustomResourceDefinitions only, not v1 Pod")),
        "{answer:#}"
    );
    let (_, metrics) = support::webhook::https(addr, &ca, &get("/metrics")).await;
    assert_has(
        &metrics,
        "crd_safety_reviews_total{operation=\"CREATE\",verdict=\"warn\"} 1\n",
    );
    assert_has(&metrics, "crd_safety_review_duration_seconds_count 1\n");
    assert_has(
        &metrics,
        "crd_safety_reviews_unfinished_total{reason=\"unreadable\"} 1\n",
    );
    // A forged review (the API server would refuse this CRD) whose new
    // version adds a rule 15,000 operators deep: judged and answered, and
    // the server lives on. Its parse overflowed the stack, which aborted
    // `serve` and every review in flight with it.
    let old = widgets(json!({"n": {"type": "integer"}}));
    let deep = format!("1{} > 0", " + 1".repeat(15_000));
    let new =
        widgets(json!({"n": {"type": "integer", "x-kubernetes-validations": [{"rule": deep}]}}));
    let name = new["metadata"]["name"].as_str().unwrap_or_default();
    let forged = support::webhook::review("UPDATE", name, Some(&old), Some(&new));
    let (code, body) = support::webhook::https(addr, &ca, &forged).await;
    let response = support::webhook::answer(code, &body);
    assert_eq!(response["allowed"], false, "{response:#}");
    assert!(
        response["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("CEL rule added")),
        "{response:#}"
    );
    let (code, _) = support::webhook::https(addr, &ca, &get("/healthz")).await;
    assert_eq!(code, 200);
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
    // A maximum every stored widget meets: the objects decide it, and
    // enforce lets the update through with a warning that says why.
    let loose = write_manifest(
        files,
        "loose.json",
        &widgets(json!({"color": {"type": "string"}, "size": {"type": "integer", "maximum": 100}})),
    );
    let out = kubectl(kc, &dry_run(&loose));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_has(
        &stderr(&out),
        "no stored object fails it (0 of 3 in v1 scanned)",
    );
    // With the schema's grades kept, the same update is denied.
    let before = s.served.log().len();
    write_config(files, &format!("gradeByObjects: false\n{config}"));
    s.served.wait_for("configuration reloaded", before);
    let out = kubectl(kc, &dry_run(&loose));
    assert!(!out.status.success(), "{}", stderr(&out));
    assert_has(&stderr(&out), "^.spec.size");
    let before = s.served.log().len();
    write_config(files, config);
    s.served.wait_for("configuration reloaded", before);
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
    // Both reviews are counted by what kept their scan from finishing.
    let (_, metrics) = support::webhook::https(s.served.addr, &s.ca, &get("/metrics")).await;
    assert_has(
        &metrics,
        "crd_safety_reviews_unfinished_total{reason=\"limit\"} 2\n",
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

/// The stored CRD `name`, as the API server returns it (uid included).
fn stored(kubeconfig: &Path, name: &str) -> Value {
    let out = kubectl(kubeconfig, &["get", "crd", name, "-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("CRD JSON")
}

/// `crd` with the schema of its first version's `spec.color` replaced.
fn with_color(crd: &Value, color: Value) -> Value {
    let mut crd = crd.clone();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"] =
        color;
    crd
}

/// What nobody who only reaches the Service may learn: the names and
/// values of objects, and how many there are.
fn assert_reveals_nothing(what: &str, response: &Value, secrets: &[&str]) {
    let text = response.to_string();
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{what}: {secret:?} leaked: {response:#}"
        );
    }
    assert!(
        !text.contains("still exist"),
        "{what}: a count leaked: {response:#}"
    );
    assert!(
        response["warnings"].as_array().is_none_or(Vec::is_empty),
        "{what}: nothing but the refusal: {response:#}"
    );
}

#[tokio::test]
async fn a_forged_review_reads_nothing_for_its_sender_and_is_refused() {
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let kc = &plane.admin_kubeconfig;
    let client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    // A Deployment the sender may not read, and a CRD with one object.
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "payroll-db", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "payroll"}},
                 "template": {"metadata": {"labels": {"app": "payroll"}},
                              "spec": {"containers": [{"name": "db", "image": "db",
                                       "env": [{"name": "PASSWORD", "value": "hunter2-env"}]}]}}}
    });
    let file = write_manifest(files, "deployment.json", &deployment);
    let out = kubectl(kc, &["apply", "-f", &file]);
    assert!(out.status.success(), "{}", stderr(&out));
    install(
        &client,
        &crd(
            "vaults",
            &[("v1", true, true)],
            json!({"color": {"type": "string"}}),
        ),
    )
    .await;
    create_objects(
        &client,
        "vaults",
        "v1",
        vec![(
            "default".into(),
            "vault-7".into(),
            json!({"size": 1, "color": "hunter2-color"}),
        )],
    )
    .await;
    let ca = TestCa::new();
    ca.issue(files);
    write_config(
        files,
        "webhook:\n  mode: enforce\n  failMode: closed\n  scanObjects: {enabled: true}\n",
    );
    let served = Served::start(files, kc, &[]);
    let send = |body: Vec<u8>| {
        let ca = &ca;
        let addr = served.addr;
        async move {
            let (code, body) = support::webhook::https(addr, ca, &body).await;
            support::webhook::answer(code, &body)
        }
    };
    let secrets = ["payroll", "hunter2", "vault-7"];

    // A made-up CRD naming another group's resource, with a schema that
    // rejects every Deployment: not stored, so nothing is listed.
    let mut fake = crd("deployments", &[("v1", true, true)], json!({}));
    fake["metadata"] =
        json!({"name": "deployments.apps", "uid": "0d1e2f00-0000-4000-8000-000000000000"});
    fake["spec"]["group"] = json!("apps");
    fake["spec"]["names"] = json!({"kind": "Deployment", "plural": "deployments"});
    let rejecting = {
        let mut c = fake.clone();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object", "required": ["nothing"], "properties": {"nothing": {"type": "string", "maxLength": 0}}});
        c
    };
    for (what, body) in [
        (
            "DELETE deployments.apps",
            support::webhook::review("DELETE", "deployments.apps", Some(&fake), None),
        ),
        (
            "UPDATE deployments.apps",
            support::webhook::review("UPDATE", "deployments.apps", Some(&fake), Some(&rejecting)),
        ),
    ] {
        let response = send(body).await;
        assert_eq!(response["allowed"], false, "{what}: {response:#}");
        let message = response["status"]["message"].as_str().unwrap_or("");
        assert_has(
            message,
            "crd-safety read nothing for this request: no CRD \"deployments.apps\" with the uid of the request's object is stored in the cluster",
        );
        assert_has(message, "failMode: closed");
        assert_reveals_nothing(what, &response, &secrets);
    }

    // A name that is no CRD's name (it would reach another path): refused
    // before anything is read.
    let mut traversing = fake.clone();
    traversing["metadata"]["name"] = json!("../../../api/v1/namespaces/default/secrets");
    let response = send(support::webhook::review(
        "DELETE",
        "../../../api/v1/namespaces/default/secrets",
        Some(&traversing),
        None,
    ))
    .await;
    assert_eq!(response["allowed"], false, "{response:#}");
    assert_has(
        response["status"]["message"].as_str().unwrap_or(""),
        "\"../../../api/v1/namespaces/default/secrets\" is not the name of a CRD",
    );
    assert_reveals_nothing("a path for a name", &response, &secrets);

    // The real CRD's name and uid, but a body claiming another group and
    // plural: refused, the stored CRD's resources are not listed either.
    let vaults = stored(kc, "vaults.example.com");
    let mut posing = vaults.clone();
    posing["spec"]["group"] = json!("apps");
    posing["spec"]["names"]["plural"] = json!("deployments");
    let posing_new = with_color(&posing, json!({"type": "string", "enum": ["red"]}));
    let response = send(support::webhook::review(
        "UPDATE",
        "vaults.example.com",
        Some(&posing),
        Some(&posing_new),
    ))
    .await;
    assert_eq!(response["allowed"], false, "{response:#}");
    assert_has(
        response["status"]["message"].as_str().unwrap_or(""),
        "claims group \"apps\" and plural \"deployments\", which the stored CRD vaults.example.com does not have",
    );
    assert_reveals_nothing("posing as apps", &response, &secrets);

    // Another uid than the stored CRD's: refused, no count.
    let mut other_uid = vaults.clone();
    other_uid["metadata"]["uid"] = json!("0d1e2f00-0000-4000-8000-000000000001");
    let response = send(support::webhook::review(
        "DELETE",
        "vaults.example.com",
        Some(&other_uid),
        None,
    ))
    .await;
    assert_eq!(response["allowed"], false, "{response:#}");
    assert_has(
        response["status"]["message"].as_str().unwrap_or(""),
        "no CRD \"vaults.example.com\" with the uid of the request's object",
    );
    assert_reveals_nothing("another uid", &response, &secrets);

    // The genuine article still works, but says only what the requester
    // may read: mallory may not list vaults, so the deletion guard
    // refuses without a count, and the scan without names...
    let red_only = with_color(&vaults, json!({"type": "string", "enum": ["red"]}));
    let response = send(support::webhook::review(
        "DELETE",
        "vaults.example.com",
        Some(&vaults),
        None,
    ))
    .await;
    assert_eq!(response["allowed"], false, "{response:#}");
    assert_has(
        response["status"]["message"].as_str().unwrap_or(""),
        "Vault objects still exist (how many is not said: \"mallory\" may not list vaults.example.com)",
    );
    let text = response.to_string();
    assert!(
        !text.contains("1 Vault") && !secrets.iter().any(|s| text.contains(s)),
        "mallory learnt something: {response:#}"
    );
    let response = send(support::webhook::review(
        "UPDATE",
        "vaults.example.com",
        Some(&vaults),
        Some(&red_only),
    ))
    .await;
    assert_eq!(response["allowed"], false, "{response:#}");
    assert_has(
        response["status"]["message"].as_str().unwrap_or(""),
        "enum v1 ^.spec.color: On this cluster stored objects fail it; which and how many is not said: \"mallory\" may not list vaults.example.com",
    );
    assert!(!response.to_string().contains("vault-7"), "{response:#}");
    // ...and to whom the API server lets list them, the deletion guard
    // counts, and the scan names the object and the rule, not the value.
    let as_admin = |operation: &str, new: Option<&Value>| {
        let mut body: Value = serde_json::from_slice(&{
            let r = support::webhook::review(operation, "vaults.example.com", Some(&vaults), new);
            let at = r
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("a header")
                + 4;
            r[at..].to_vec()
        })
        .expect("JSON");
        body["request"]["userInfo"] = json!({"username": "admin", "groups": ["system:masters"]});
        post(&serde_json::to_vec(&body).expect("JSON"))
    };
    let response = send(as_admin("DELETE", None)).await;
    assert_eq!(response["allowed"], false, "{response:#}");
    assert_has(
        response["status"]["message"].as_str().unwrap_or(""),
        "1 Vault object still exist",
    );
    let response = send(as_admin("UPDATE", Some(&red_only))).await;
    let text = response.to_string();
    assert_eq!(response["allowed"], false, "{response:#}");
    assert_has(&text, "default/vault-7");
    assert_has(
        &text,
        "values not shown (webhook.reveal: values shows them)",
    );
    assert!(!text.contains("hunter2"), "a value leaked: {response:#}");
    assert!(
        !served
            .log()
            .iter()
            .any(|l| l.to_string().contains("hunter2")),
        "a value was logged"
    );
    // Opted in: the sample with its value is shown.
    let before = served.log().len();
    write_config(
        files,
        "webhook:\n  mode: enforce\n  failMode: closed\n  reveal: values\n  scanObjects: {enabled: true}\n",
    );
    served.wait_for("configuration reloaded", before);
    let response = send(as_admin("UPDATE", Some(&red_only))).await;
    assert_has(&response.to_string(), "hunter2-color");
}

#[tokio::test]
async fn with_a_client_ca_only_clients_with_its_certificate_are_answered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    // The API server presents a client certificate to the webhook because
    // its admission configuration points at a kubeconfig holding one.
    let clients = TestCa::new();
    let (cert, key) = clients.client("kube-apiserver");
    let b64 = |s: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    let webhook_kubeconfig = files.join("webhook.kubeconfig");
    std::fs::write(
        &webhook_kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nusers:\n- name: \"*\"\n  user:\n    \
             client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&cert),
            b64(&key)
        ),
    )
    .expect("webhook kubeconfig");
    let admission = files.join("admission.yaml");
    std::fs::write(
        &admission,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n\
             - name: ValidatingAdmissionWebhook\n  configuration:\n    \
             apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    \
             kubeConfigFile: {}\n",
            webhook_kubeconfig.display()
        ),
    )
    .expect("admission configuration");
    let version = std::env::var("CRD_SAFETY_KUBE_VERSION").unwrap_or_else(|_| "1.34".into());
    let extras = support::envtest::Extras {
        apiserver_args: vec![format!(
            "--admission-control-config-file={}",
            admission.display()
        )],
        ..Default::default()
    };
    let Some(plane) = support::envtest::dedicated_with(&version, &extras) else {
        return;
    };
    let client = admin(&plane).await;
    install(&client, &widgets(json!({"color": {"type": "string"}}))).await;
    let ca = TestCa::new();
    ca.issue(files);
    write_config(files, "webhook:\n  mode: enforce\n");
    std::fs::write(files.join("clients.crt"), &clients.pem).expect("client CA");
    let client_ca = files.join("clients.crt");
    let served = Served::start(
        files,
        &plane.admin_kubeconfig,
        &["--client-ca-file", client_ca.to_str().expect("utf-8")],
    );
    // Without a certificate, or with one of another CA: refused in the
    // TLS handshake, no HTTP answer at all.
    let stranger = TestCa::new().client("kube-apiserver");
    for (what, identity) in [("no certificate", None), ("another CA's", Some(&stranger))] {
        let refused =
            support::webhook::https_with(served.addr, &ca, identity, &get("/healthz")).await;
        assert!(refused.is_err(), "{what}: answered {refused:?}");
    }
    let answered =
        support::webhook::https_with(served.addr, &ca, Some(&(cert, key)), &get("/healthz")).await;
    assert_eq!(answered, Ok((200, "ok\n".to_string())));
    // The API server's reviews are answered: the unsafe update is denied.
    register(&client, &served.url(), &ca, "Fail").await;
    let unsafe_crd = write_manifest(files, "unsafe.json", &widgets(json!({})));
    let denied = until_kubectl_says(
        &plane.admin_kubeconfig,
        &dry_run(&unsafe_crd),
        "denied the request",
    );
    assert_has(&stderr(&denied), "existingFieldRemoval v1 ^.spec.color");
    // Only the API server can post reviews now: who asked is its word.
    let reviews: Vec<Value> = served
        .log()
        .into_iter()
        .filter(|v| v["event"] == "review")
        .collect();
    assert!(
        !reviews.is_empty() && reviews.iter().all(|r| r["identity"] == "authenticated"),
        "{reviews:#?}"
    );
    // /metrics too: the handshake is refused before any path is read, so
    // Prometheus scrapes with a certificate of that CA (docs/webhook.md).
    let metrics = get("/metrics");
    let refused = support::webhook::https_with(served.addr, &ca, None, &metrics).await;
    assert!(
        refused.is_err(),
        "/metrics without a certificate: {refused:?}"
    );
    let scraper = clients.client("prometheus");
    let scraped = support::webhook::https_with(served.addr, &ca, Some(&scraper), &metrics)
        .await
        .expect("/metrics with a certificate of the client CA");
    assert_eq!(scraped.0, 200);
    assert_has(&scraped.1, "crd_safety_reviews_total{");
}

/// Opens a TLS connection to `addr` and sends `partial`, then waits: a
/// client that holds a connection without finishing its request. `Err`
/// when the server would not even finish the handshake.
async fn stalling(
    addr: std::net::SocketAddr,
    ca: &TestCa,
    partial: &[u8],
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    use tokio::io::AsyncWriteExt;
    let config = support::webhook::client_config(ca.pem.as_bytes());
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let mut tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tls.write_all(partial)
        .await
        .map_err(|e| format!("write: {e}"))?;
    tls.flush().await.map_err(|e| format!("flush: {e}"))?;
    Ok(tls)
}

/// Reads what the server sends until it closes the connection, or
/// `within` passes (then panics: the server kept it open).
async fn closed_within(
    tls: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    within: std::time::Duration,
) -> String {
    use tokio::io::AsyncReadExt;
    let mut answer = Vec::new();
    match tokio::time::timeout(within, tls.read_to_end(&mut answer)).await {
        Ok(_) => String::from_utf8_lossy(&answer).into_owned(),
        Err(_) => panic!("the connection was still open after {within:?}"),
    }
}

/// The bodies' memory bound (`--body-memory`): past its first 64 KiB, a
/// body is read only once room for the rest of its declared length is
/// reserved. A client holding all the room (it sent more than 64 KiB,
/// then slowed to a trickle) makes the next large review wait unread;
/// past that review's deadline (a share of the API server's `?timeout=`)
/// it is answered 503, so the API server's failurePolicy decides. The
/// holder gives the room back once its body falls below 4 MiB/s, and the
/// reviews go on.
#[tokio::test]
async fn a_body_without_room_waits_unread_and_gets_a_503_past_its_deadline() {
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    let ca = TestCa::new();
    ca.issue(files);
    write_config(files, "webhook:\n  mode: enforce\n");
    let served = Served::start(
        files,
        &plane.admin_kubeconfig,
        &[
            "--max-body-bytes",
            "8388608",
            "--body-memory",
            "8Mi",
            "--body-read-timeout",
            "5s",
        ],
    );
    let addr = served.addr;
    // Declares the largest body the server takes and sends 70 KB of it at
    // once: the room is all reserved for the rest, for the 5 s of
    // --body-read-timeout at most.
    let mut start = b"POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 8388608\r\n\r\n{\"kind\":\"".to_vec();
    start.extend(std::iter::repeat_n(b'a', 70_000));
    let mut holder = stalling(addr, &ca, &start)
        .await
        .expect("a client connects");
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    // A review larger than the first 64 KiB needs room too, more than the
    // holder leaves.
    let mut created = crd("roomlessbodies", &[("v1", true, true)], json!({}));
    created["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] =
        json!("a roomless body. ".repeat(12_000));
    let review =
        support::webhook::review("CREATE", "roomlessbodies.example.com", None, Some(&created));
    let with_timeout = String::from_utf8(review.clone()).expect("UTF-8").replacen(
        "POST /validate ",
        "POST /validate?timeout=500ms ",
        1,
    );
    let started = std::time::Instant::now();
    let (code, body) = support::webhook::https(addr, &ca, with_timeout.as_bytes()).await;
    let waited = started.elapsed();
    assert_eq!(code, 503, "{body}");
    assert_has(&body, "busy");
    assert_has(&body, "--body-memory");
    // It waited for its deadline (0.8 of the 0.5 s the API server gives),
    // no longer.
    assert!(
        waited >= std::time::Duration::from_millis(350)
            && waited < std::time::Duration::from_secs(4),
        "answered after {waited:?}"
    );
    let (_, metrics) = support::webhook::https(addr, &ca, &get("/metrics")).await;
    assert_has(&metrics, "crd_safety_bodies_waited_out_total 1\n");
    // The holder is cut off for its rate; its room comes back.
    let said = closed_within(&mut holder, std::time::Duration::from_secs(15)).await;
    assert_has(&said, "408 Request Timeout");
    assert_has(&said, "at least 1 MiB/s once the room for it is reserved");
    let (code, body) = support::webhook::https(addr, &ca, &review).await;
    assert_eq!(
        support::webhook::answer(code, &body)["allowed"],
        true,
        "{body}"
    );
}

#[tokio::test]
async fn slow_clients_are_cut_off_and_do_not_hold_up_other_reviews() {
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    let ca = TestCa::new();
    ca.issue(files);
    write_config(files, "webhook:\n  mode: enforce\n");
    let mut served = Served::start(
        files,
        &plane.admin_kubeconfig,
        &["--header-read-timeout", "2s", "--body-read-timeout", "2s"],
    );
    let addr = served.addr;
    let margin = std::time::Duration::from_secs(10);
    // Slowloris: half a header on each of several connections, and one
    // whole header with half its body.
    let mut half_headers = Vec::new();
    for _ in 0..5 {
        half_headers.push(
            stalling(
                addr,
                &ca,
                b"POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le",
            )
            .await
            .expect("a slow client connects"),
        );
    }
    let mut half_body = stalling(
        addr,
        &ca,
        b"POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\":",
    )
    .await
    .expect("a slow client connects");
    // Meanwhile reviews are answered, promptly.
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let created = crd("slowlorises", &[("v1", true, true)], json!({}));
        let (code, body) = support::webhook::https(
            addr,
            &ca,
            &support::webhook::review("CREATE", "slowlorises.example.com", None, Some(&created)),
        )
        .await;
        assert_eq!(
            support::webhook::answer(code, &body)["allowed"],
            true,
            "{body}"
        );
        assert!(
            started.elapsed() < margin,
            "a review waited {:?}",
            started.elapsed()
        );
    }
    // Each slow client is cut off after its timeout: no answer to half a
    // header, a 408 to half a body.
    for tls in &mut half_headers {
        let said = closed_within(tls, std::time::Duration::from_secs(2) + margin).await;
        assert!(!said.contains("200 OK"), "{said}");
    }
    let said = closed_within(&mut half_body, std::time::Duration::from_secs(2) + margin).await;
    assert_has(&said, "408 Request Timeout");
    assert_has(&said, "--body-read-timeout");
    assert_eq!(served.terminate(), 0);
    drop(half_headers);

    // Over --max-connections with every connection busy (a request in
    // flight on each), a connection is closed at once; those open before
    // it are still served.
    let served = Served::start(
        files,
        &plane.admin_kubeconfig,
        &[
            "--header-read-timeout",
            "60s",
            "--body-read-timeout",
            "60s",
            "--max-connections",
            "4",
        ],
    );
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(
            stalling(
                served.addr,
                &ca,
                b"POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\":",
            )
            .await
            .expect("within the limit"),
        );
    }
    // Past the grace an idle connection would have given way; busy ones
    // do not.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let refused = stalling(served.addr, &ca, b"GET /healthz HTTP/1.1\r\n\r\n").await;
    let refused = match refused {
        Err(e) => e,
        Ok(mut tls) => closed_within(&mut tls, margin).await,
    };
    assert!(
        !refused.contains("200 OK"),
        "a fifth connection was answered: {refused}"
    );
    // A held one is served.
    {
        use tokio::io::AsyncWriteExt;
        let tls = &mut held[0];
        tls.write_all(&[b' '; 92])
            .await
            .expect("the rest of the body");
        let said = closed_within(tls, margin).await;
        assert_has(&said, "400 Bad Request");
    }
    drop(held);
    let deadline = std::time::Instant::now() + margin;
    loop {
        match support::webhook::https_with(served.addr, &ca, None, &get("/metrics")).await {
            Ok((200, metrics)) => {
                // At least the fifth (retries of this loop may add more).
                assert_has(&metrics, "crd_safety_connections_refused_total ");
                assert!(!metrics.contains("crd_safety_connections_refused_total 0\n"));
                break;
            }
            other => assert!(
                std::time::Instant::now() < deadline,
                "connections never freed: {other:?}"
            ),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_stalled_api_server_gets_a_fail_mode_answer_within_the_review_deadline() {
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let client = admin(plane).await;
    install(
        &client,
        &crd(
            "lockers",
            &[("v1", true, true)],
            json!({"color": {"type": "string"}}),
        ),
    )
    .await;
    let lockers = stored(&plane.admin_kubeconfig, "lockers.example.com");
    // Reads of the CRD and of its objects stall for far longer than any
    // deadline; the server's version still answers.
    let proxy = support::faults::FaultProxy::start(plane, |r: &support::faults::Incoming<'_>| {
        if r.target.contains("lockers") {
            support::faults::Fault::Delay(std::time::Duration::from_secs(60))
        } else {
            support::faults::Fault::Forward
        }
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    let stalled = proxy.kubeconfig(files);
    let ca = TestCa::new();
    ca.issue(files);
    write_config(
        files,
        "webhook:\n  mode: enforce\n  failMode: closed\n  reviewDeadline: 2s\n  scanObjects: {enabled: true, deadline: 30s}\n",
    );
    let served = Served::start(files, Path::new(&stalled), &[]);
    let limit = std::time::Duration::from_secs(2 + 10);
    let changed = with_color(&lockers, json!({"type": "string", "maxLength": 3}));
    for (what, request) in [
        (
            "DELETE",
            support::webhook::review("DELETE", "lockers.example.com", Some(&lockers), None),
        ),
        (
            "UPDATE with a scan",
            support::webhook::review(
                "UPDATE",
                "lockers.example.com",
                Some(&lockers),
                Some(&changed),
            ),
        ),
    ] {
        let started = std::time::Instant::now();
        let (code, body) = support::webhook::https(served.addr, &ca, &request).await;
        let took = started.elapsed();
        let response = support::webhook::answer(code, &body);
        assert!(took < limit, "{what}: answered after {took:?}");
        assert_eq!(response["allowed"], false, "{what}: {response:#}");
        let message = response["status"]["message"].as_str().unwrap_or("");
        assert_has(message, "the review did not finish within its deadline (2s");
        assert_has(message, "failMode: closed denies what could not be checked");
    }
    // failMode open: allowed, saying what was not checked.
    let before = served.log().len();
    write_config(
        files,
        "webhook:\n  mode: enforce\n  failMode: open\n  reviewDeadline: 2s\n",
    );
    served.wait_for("configuration reloaded", before);
    let started = std::time::Instant::now();
    let (code, body) = support::webhook::https(
        served.addr,
        &ca,
        &support::webhook::review("DELETE", "lockers.example.com", Some(&lockers), None),
    )
    .await;
    assert!(started.elapsed() < limit);
    let response = support::webhook::answer(code, &body);
    assert_eq!(response["allowed"], true, "{response:#}");
    assert_has(
        &response["warnings"].to_string(),
        "failMode: open allows it unchecked",
    );
}

#[tokio::test]
async fn the_charts_network_policy_admits_only_the_control_planes_addresses() {
    let Some(helm_dir) = support::helm::helm_dir() else {
        return;
    };
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/crd-safety");
    let home = tempfile::tempdir().expect("tempdir");
    let render = |sets: &[&str]| {
        let mut args = vec![
            "template",
            "crd-safety",
            chart.to_str().expect("UTF-8 path"),
            "--namespace",
            "crd-safety-netpol",
            "--show-only",
            "templates/networkpolicy.yaml",
        ];
        for set in sets {
            args.extend(["--set", set]);
        }
        helm(helm_dir, home.path(), &plane.admin_kubeconfig, &args)
    };
    // Off by default.
    let out = render(&[]);
    assert!(!out.status.success(), "rendered by default");
    assert_has(&stderr(&out), "could not find template");
    // On without addresses: refused, saying what is missing.
    let out = render(&["networkPolicy.enabled=true"]);
    assert!(!out.status.success());
    assert_has(
        &stderr(&out),
        "networkPolicy.enabled needs networkPolicy.controlPlaneCIDRs",
    );
    // On: only the webhook's port, only from the given peers; the API
    // server accepts it.
    let out = render(&[
        "networkPolicy.enabled=true",
        "networkPolicy.controlPlaneCIDRs={10.0.0.0/24,192.168.10.0/28}",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let yaml = String::from_utf8_lossy(&out.stdout).into_owned();
    let policy: Value = serde_saphyr::from_str(&yaml).expect("one document");
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(
        policy["spec"]["ingress"],
        json!([{"ports": [{"port": "https", "protocol": "TCP"}],
                "from": [{"ipBlock": {"cidr": "10.0.0.0/24"}}, {"ipBlock": {"cidr": "192.168.10.0/28"}}]}])
    );
    support::live::ensure_namespace(&admin(plane).await, "crd-safety-netpol").await;
    let files = tempfile::tempdir().expect("tempdir");
    let file = files.path().join("policy.yaml");
    std::fs::write(&file, &yaml).expect("write");
    let out = kubectl(
        &plane.admin_kubeconfig,
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-f",
            file.to_str().expect("UTF-8 path"),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test]
async fn break_glass_accepts_only_the_change_it_was_written_for() {
    let Some(s) = setup("webhook:\n  mode: enforce\n", "Fail").await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let files = s.dir.path();
    let client = admin(&s.plane).await;
    let crd_name = "widgets.example.com";
    let annotate = |pairs: &[&str]| {
        let mut args = vec!["annotate", "crd", crd_name, "--overwrite"];
        args.extend(pairs);
        kubectl(kc, &args)
    };
    let no_color = write_manifest(files, "no-color.json", &widgets(json!({})));
    until_kubectl_says(kc, &dry_run(&no_color), "denied the request");

    // Accepted together with the change it accepts: honoured.
    let mut accepted = widgets(json!({}));
    accepted["metadata"]["annotations"] = json!({
        "crd-safety.io/accept": "existingFieldRemoval",
        "crd-safety.io/accept-reason": "color was never read; see #42"
    });
    let file = write_manifest(files, "accepted.json", &accepted);
    let out = kubectl(
        kc,
        &["apply", "--server-side", "--force-conflicts", "-f", &file],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    // The next release removes another field, the annotation unchanged:
    // it was written for the last change, not this one.
    let mut no_size = accepted.clone();
    no_size["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] =
        json!({});
    let file = write_manifest(files, "no-size.json", &no_size);
    let out = kubectl(
        kc,
        &["apply", "--server-side", "--force-conflicts", "-f", &file],
    );
    assert!(
        !out.status.success(),
        "a stale break-glass let a removal through"
    );
    let text = stderr(&out);
    assert_has(&text, "existingFieldRemoval v1 ^.spec.size");
    assert_has(
        &text,
        "crd-safety.io/accept is ignored: it was set by an earlier change and this request does not change it",
    );

    // Arming the deletion guard's break-glass is itself judged: without a
    // reason, refused while objects exist.
    create_objects(
        &client,
        "widgets",
        "v1",
        vec![("default".into(), "w1".into(), json!({"size": 1}))],
    )
    .await;
    let out = annotate(&["crd-safety.io/accept-", "crd-safety.io/accept-reason-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = annotate(&["crd-safety.io/accept=crdDeletion"]);
    assert!(!out.status.success(), "armed without a reason");
    let text = stderr(&out);
    assert_has(
        &text,
        "this update arms crd-safety.io/accept: crdDeletion while 1 Widget object exist",
    );
    assert_has(&text, "crd-safety.io/accept-reason must say why");
    // With a reason: allowed, warned, logged as break-glass with the user.
    let out = annotate(&[
        "crd-safety.io/accept=crdDeletion",
        "crd-safety.io/accept-reason=retiring widgets",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_has(
        &stderr(&out),
        "Warning: crd-safety crdDeletion: this update arms",
    );
    let armed = s
        .served
        .log()
        .into_iter()
        .rev()
        .find(|v| {
            v["event"] == "review" && v["operation"] == "UPDATE" && v["breakGlass"].is_object()
        })
        .expect("the arming is logged");
    assert_eq!(armed["accepted"], json!(["crdDeletion"]), "{armed:#}");
    assert_eq!(armed["breakGlass"]["reason"], "retiring widgets");
    assert_eq!(armed["objects"], 1);

    // The deletion is a later request: the annotation must name the
    // generation it was written for.
    let delete = ["delete", "crd", crd_name, "--dry-run=server"];
    let out = kubectl(kc, &delete);
    assert!(!out.status.success(), "an unbound crdDeletion was honoured");
    let generation = stored(kc, crd_name)["metadata"]["generation"]
        .as_i64()
        .expect("generation");
    assert_has(
        &stderr(&out),
        &format!("first set crd-safety.io/accept-generation: \"{generation}\""),
    );
    let out = annotate(&[&format!("crd-safety.io/accept-generation={generation}")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = kubectl(kc, &delete);
    assert!(out.status.success(), "{}", stderr(&out));

    // A change of the spec moves the generation: the armed deletion is
    // disarmed.
    let shape = write_manifest(
        files,
        "shape.json",
        &widgets(json!({"shape": {"type": "string"}})),
    );
    let out = kubectl(
        kc,
        &["apply", "--server-side", "--force-conflicts", "-f", &shape],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = kubectl(kc, &delete);
    assert!(
        !out.status.success(),
        "a crdDeletion of an older generation was honoured"
    );
    assert_has(&stderr(&out), "1 Widget object still exist");
}

#[tokio::test]
async fn a_review_larger_than_the_memory_budget_is_answered_by_fail_mode_with_the_reason() {
    let closed = "webhook:\n  mode: enforce\n  failMode: closed\n";
    let Some(s) = setup_with(closed, "Fail", &["--memory-budget", "1Mi"]).await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let files = s.dir.path();
    // A small safe change fits the budget and passes.
    let shape = write_manifest(
        files,
        "shape.json",
        &widgets(json!({"color": {"type": "string"}, "shape": {"type": "string"}})),
    );
    until_kubectl_says(kc, &dry_run(&shape), "serverside-applied (server dry run)");
    // The same change with a 200 KB description: judging it would need
    // more than the whole budget, so failMode decides, and says why.
    let mut large = widgets(json!({"color": {"type": "string"}, "shape": {"type": "string"}}));
    large["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] =
        json!("a widget. ".repeat(20_000));
    let large = write_manifest(files, "large.json", &large);
    let out = kubectl(kc, &dry_run(&large));
    assert!(!out.status.success(), "failMode closed let it through");
    let text = stderr(&out);
    assert_has(&text, "denied the request");
    assert_has(
        &text,
        "crd-safety did not check this CRD: judging it needs about",
    );
    assert_has(
        &text,
        "more than the 1.0 MiB serve may spend on judgments (--memory-budget)",
    );
    assert_has(&text, "failMode: closed denies what could not be checked");
    // failMode open: allowed, with the same reason as a warning.
    let before = s.served.log().len();
    write_config(files, "webhook:\n  mode: enforce\n  failMode: open\n");
    s.served.wait_for("configuration reloaded", before);
    let out = kubectl(kc, &dry_run(&large));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_has(
        &stderr(&out),
        "more than the 1.0 MiB serve may spend on judgments (--memory-budget)",
    );
    assert_has(&stderr(&out), "failMode: open allows it unchecked");
}

#[tokio::test]
async fn break_glass_by_lets_only_the_listed_users_and_groups_accept_a_change() {
    let config = "webhook:\n  mode: enforce\n  breakGlassBy:\n    users: [alice]\n    groups: [platform-admins]\n";
    let Some(s) = setup(config, "Fail").await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let files = s.dir.path();
    // Three users who may change CRDs (the admin impersonates them; the
    // API server puts who they are into the review's userInfo).
    let out = kubectl(
        kc,
        &[
            "create",
            "clusterrolebinding",
            "crd-editors",
            "--clusterrole=cluster-admin",
            "--user=alice",
            "--user=mallory",
            "--user=bob",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let mut accepted = widgets(json!({}));
    accepted["metadata"]["annotations"] = json!({
        "crd-safety.io/accept": "existingFieldRemoval",
        "crd-safety.io/accept-reason": "color was never read; see #42"
    });
    let file = write_manifest(files, "accepted.json", &accepted);
    let as_user = |who: &[&str]| {
        let mut args = dry_run(&file).to_vec();
        args.extend(who);
        kubectl(kc, &args)
    };
    // Not listed: the annotation is ignored and the removal denied.
    let out = until_kubectl_says(
        kc,
        &[&dry_run(&file)[..], &["--as", "mallory"]].concat(),
        "denied the request",
    );
    assert!(!out.status.success());
    let text = stderr(&out);
    assert_has(&text, "existingFieldRemoval v1 ^.spec.color");
    assert_has(
        &text,
        "crd-safety.io/accept is ignored: \"mallory\" may not use break-glass in this cluster",
    );
    // Listed by name, or by group: accepted, logged with the user.
    let out = as_user(&["--as", "alice"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_has(
        &stderr(&out),
        "Warning: crd-safety error existingFieldRemoval v1 ^.spec.color",
    );
    let out = as_user(&["--as", "bob", "--as-group", "platform-admins"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let glass: Vec<Value> = s
        .served
        .log()
        .into_iter()
        .filter(|v| v["event"] == "review" && v["breakGlass"].is_object())
        .collect();
    let users: Vec<&str> = glass.iter().filter_map(|v| v["user"].as_str()).collect();
    assert_eq!(users, ["alice", "bob"], "{glass:#?}");
    assert_eq!(glass[1]["groups"][0], "platform-admins", "{:#}", glass[1]);
    assert_eq!(
        glass[0]["breakGlass"]["reason"],
        "color was never read; see #42"
    );
}

/// The verdict cache once keyed on the request's name and the raw specs,
/// while the judgment paired the two objects by their own names: a forged
/// review whose `oldObject` named another CRD was judged as a creation
/// (nothing to find), and its "allowed" then answered the genuine removal
/// of a field with the same specs, in `enforce` mode. A review whose
/// objects are not the one object it names is now refused in every mode
/// and whatever `failMode` says (the API server never sends one), and it
/// is never judged, so it decides nothing later.
#[tokio::test]
async fn a_forged_review_cannot_turn_a_later_denial_into_an_allow() {
    let open = "webhook:\n  mode: enforce\n  failMode: open\n";
    let Some(s) = setup(open, "Ignore").await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let files = s.dir.path();
    let send = |body: Vec<u8>| {
        let ca = &s.ca;
        let addr = s.served.addr;
        async move {
            let (code, body) = support::webhook::https(addr, ca, &body).await;
            support::webhook::answer(code, &body)
        }
    };
    // The genuine change, as the API server would send it for `kubectl
    // replace` of the stored CRD without `spec.color`: every field in the
    // stored order, so the specs are the same bytes.
    let live = stored(kc, "widgets.example.com");
    let mut unsafe_crd = live.clone();
    unsafe_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        .as_object_mut()
        .expect("properties")
        .shift_remove("color");
    let renamed = |crd: &Value, field: &str, value: &str| {
        let mut crd = crd.clone();
        crd["metadata"][field] = json!(value);
        crd
    };
    let decoy = renamed(&live, "name", "decoy.example.com");
    let name = "widgets.example.com";
    let forged = [
        (
            "the oldObject is another CRD",
            support::webhook::review("UPDATE", name, Some(&decoy), Some(&unsafe_crd)),
            "the request names \"widgets.example.com\", but its oldObject is \"decoy.example.com\"",
        ),
        (
            "the object is another CRD",
            support::webhook::review(
                "UPDATE",
                name,
                Some(&live),
                Some(&renamed(&unsafe_crd, "name", "decoy.example.com")),
            ),
            "but its object is \"decoy.example.com\"",
        ),
        (
            "two objects of other uids",
            support::webhook::review(
                "UPDATE",
                name,
                Some(&renamed(
                    &live,
                    "uid",
                    "0d1e2f00-0000-4000-8000-000000000009",
                )),
                Some(&unsafe_crd),
            ),
            "object and oldObject are not the same object",
        ),
        (
            "a CREATE with an oldObject",
            support::webhook::review("CREATE", name, Some(&decoy), Some(&unsafe_crd)),
            "a CREATE carries an object and no oldObject",
        ),
        (
            "an UPDATE without its oldObject",
            support::webhook::review("UPDATE", name, None, Some(&unsafe_crd)),
            "an UPDATE carries both object and oldObject",
        ),
    ];
    for (what, body, why) in forged {
        let response = send(body).await;
        assert_eq!(response["allowed"], false, "{what}: {response:#}");
        let message = response["status"]["message"].as_str().unwrap_or("");
        assert_has(message, "crd-safety refused this review: ");
        assert_has(message, why);
    }
    // The genuine pair is still judged on its own: denied, directly...
    let response = send(support::webhook::review(
        "UPDATE",
        name,
        Some(&live),
        Some(&unsafe_crd),
    ))
    .await;
    assert_eq!(response["allowed"], false, "{response:#}");
    assert_has(
        response["status"]["message"].as_str().unwrap_or(""),
        "existingFieldRemoval v1 ^.spec.color",
    );
    // ...and through the API server.
    let file = write_manifest(files, "unsafe.json", &unsafe_crd);
    let out = until_kubectl_says(
        kc,
        &["replace", "--dry-run=server", "-f", &file],
        "denied the request",
    );
    assert!(!out.status.success());
    assert_has(&stderr(&out), "existingFieldRemoval v1 ^.spec.color");
    let refused = s
        .served
        .log()
        .into_iter()
        .filter(|v| {
            v["event"] == "review"
                && v["verdict"] == "deny"
                && v["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("crd-safety refused this review"))
        })
        .count();
    assert_eq!(refused, 5, "each forged review is logged as refused");
}

/// Unserving every version, then deleting the CRD, walked around the
/// deletion guard: with nothing served the objects could not be counted,
/// and an uncounted deletion followed `failMode: open`. Unserving every
/// version is now an error of its own, and a CRD that serves nothing is
/// taken to have objects. In `warn` mode (the chart's default) the guard
/// denies too: a warning cannot bring deleted objects back.
#[tokio::test]
async fn the_deletion_guard_cannot_be_walked_around_by_unserving_every_version() {
    let warn = "webhook:\n  mode: warn\n  failMode: open\n";
    let Some(s) = setup(warn, "Fail").await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let files = s.dir.path();
    let client = admin(&s.plane).await;
    create_objects(
        &client,
        "widgets",
        "v1",
        vec![("default".into(), "w1".into(), json!({"size": 1}))],
    )
    .await;
    // warn mode: the deletion with an object stored is denied.
    let delete = ["delete", "crd", "widgets.example.com", "--dry-run=server"];
    let out = until_kubectl_says(kc, &delete, "denied the request");
    assert_has(&stderr(&out), "1 Widget object still exist");
    // Someone who may delete CRDs but not list widgets learns that some
    // exist, not how many: the API server's authorizer says who may.
    for args in [
        &[
            "create",
            "clusterrole",
            "crd-deleter",
            "--verb=get,list,delete",
            "--resource=customresourcedefinitions",
        ][..],
        &[
            "create",
            "clusterrolebinding",
            "crd-deleter",
            "--clusterrole=crd-deleter",
            "--user=carol",
        ][..],
    ] {
        let out = kubectl(kc, args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let as_carol = [&delete[..], &["--as", "carol"]].concat();
    let out = until_kubectl_says(kc, &as_carol, "denied the request");
    assert_has(
        &stderr(&out),
        "Widget objects still exist (how many is not said: \"carol\" may not list widgets.example.com)",
    );
    assert!(!stderr(&out).contains("1 Widget"), "{}", stderr(&out));

    let mut unserved = widgets(json!({"color": {"type": "string"}}));
    unserved["spec"]["versions"][0]["served"] = json!(false);
    let unserved = write_manifest(files, "unserved.json", &unserved);
    // enforce: unserving every version is denied.
    let before = s.served.log().len();
    write_config(files, "webhook:\n  mode: enforce\n  failMode: open\n");
    s.served.wait_for("configuration reloaded", before);
    let out = kubectl(kc, &dry_run(&unserved));
    assert!(!out.status.success(), "unserving every version passed");
    assert_has(&stderr(&out), "servedVersionRemoval v1");
    assert_has(
        &stderr(&out),
        "no version of widgets.example.com is served any more",
    );
    // warn: it goes through with the error as a warning...
    let before = s.served.log().len();
    write_config(files, warn);
    s.served.wait_for("configuration reloaded", before);
    let apply = [
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        &unserved,
    ];
    let out = kubectl(kc, &apply);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_has(
        &stderr(&out),
        "Warning: crd-safety error servedVersionRemoval v1",
    );
    // ...and the deletion that follows is still refused, uncounted.
    let out = kubectl(kc, &delete);
    assert!(!out.status.success(), "the unserved CRD was deleted");
    let text = stderr(&out);
    assert_has(
        &text,
        "widgets.example.com serves no version, so its Widget objects cannot be counted and may exist (status.storedVersions: v1)",
    );
    assert!(
        !text.contains("failMode"),
        "not an unfinished check: {text}"
    );
    let live = stored(kc, "widgets.example.com");
    assert_eq!(live["spec"]["versions"][0]["served"], false);

    // The skip label the chart's objectSelector example leaves out of
    // review would turn every later check off, this guard's included:
    // adding it is denied in warn mode too, and passes as break-glass.
    let mut skipped = live.clone();
    skipped["metadata"]["labels"] = json!({"crd-safety.io/skip": "true"});
    let file = write_manifest(files, "skipped.json", &skipped);
    let out = kubectl(kc, &["replace", "--dry-run=server", "-f", &file]);
    assert!(!out.status.success(), "the skip label was added");
    assert_has(
        &stderr(&out),
        "skipLabel: this change adds the label crd-safety.io/skip",
    );
    skipped["metadata"]["annotations"] = json!({
        "crd-safety.io/accept": "skipLabel",
        "crd-safety.io/accept-reason": "retired: managed by hand from now on"
    });
    let file = write_manifest(files, "skipped.json", &skipped);
    let out = kubectl(kc, &["replace", "--dry-run=server", "-f", &file]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Idle and slow clients cannot keep a genuine review out. With 300
/// TCP connections open and silent (more than `--max-connections`), a new
/// connection once met a reset; now the connection idle the longest gives
/// way to it. Two clients that declare 8 MiB bodies and send a byte a
/// second once held the whole body room, in order, until a genuine review
/// got a 503 past its deadline; now a body reserves room only past its
/// first 64 KiB.
#[tokio::test]
async fn idle_connections_and_slow_senders_cannot_keep_a_review_out() {
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    let ca = TestCa::new();
    ca.issue(files);
    write_config(files, "webhook:\n  mode: enforce\n");
    let served = Served::start(files, &plane.admin_kubeconfig, &[]);
    let addr = served.addr;
    let mut idle = Vec::new();
    for _ in 0..300 {
        if let Ok(tcp) = tokio::net::TcpStream::connect(addr).await {
            idle.push(tcp);
        }
    }
    // Past the grace every silent connection may give way.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let mut slow = Vec::new();
    for _ in 0..2 {
        slow.push(
            stalling(
                addr,
                &ca,
                b"POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 8388608\r\n\r\n{",
            )
            .await
            .expect("a slow sender connects"),
        );
    }
    let trickle = async {
        use tokio::io::AsyncWriteExt;
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            for s in &mut slow {
                let _ = s.write_all(b" ").await;
                let _ = s.flush().await;
            }
        }
    };
    let genuine = async {
        let created = crd("crowdedservers", &[("v1", true, true)], json!({}));
        let mut large = created.clone();
        large["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] =
            json!("a crowded server. ".repeat(5_000));
        let mut answers = Vec::new();
        for crd in [&created, &large] {
            let review =
                support::webhook::review("CREATE", "crowdedservers.example.com", None, Some(crd));
            let with_timeout = String::from_utf8(review).expect("UTF-8").replacen(
                "POST /validate ",
                "POST /validate?timeout=10s ",
                1,
            );
            let started = std::time::Instant::now();
            let answered =
                support::webhook::https_with(addr, &ca, None, with_timeout.as_bytes()).await;
            answers.push((answered, started.elapsed()));
        }
        answers
    };
    let answers = tokio::select! {
        answers = genuine => answers,
        () = trickle => unreachable!("the trickle never ends"),
    };
    for (answered, took) in answers {
        let (code, body) =
            answered.unwrap_or_else(|e| panic!("the review's connection failed: {e}"));
        assert_eq!(
            support::webhook::answer(code, &body)["allowed"],
            true,
            "after {took:?}: {body}"
        );
        // Well within its deadline (8 s): a 503 would have come after it.
        eprintln!("a genuine review among 300 idle connections answered in {took:?}");
    }
    let (_, metrics) = support::webhook::https(addr, &ca, &get("/metrics")).await;
    assert!(
        !metrics.contains("crd_safety_connections_evicted_total 0\n"),
        "{metrics}"
    );
    assert_has(&metrics, "crd_safety_bodies_waited_out_total 0\n");
    drop((idle, slow));
}

/// The chart's `resources.limits.memory`, in bytes.
fn chart_memory_limit() -> u64 {
    let values = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/crd-safety/values.yaml"),
    )
    .expect("the chart's values");
    let limits = values.find("  limits:").expect("resources.limits");
    let memory = values[limits..]
        .lines()
        .find_map(|l| l.trim().strip_prefix("memory:"))
        .expect("limits.memory");
    crd_safety::webhook::parse_size(memory.trim()).expect("a size")
}

/// A review of `operation` for `memorybombs.example.com` as JSON, with
/// `user_info` and the objects given.
fn bomb_review(
    operation: &str,
    user_info: Value,
    old: Option<&Value>,
    new: Option<&Value>,
) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("bomb-{operation}"),
            "name": "memorybombs.example.com",
            "operation": operation,
            "userInfo": user_info,
            "object": new,
            "oldObject": old,
        }
    }))
    .expect("JSON")
}

/// Every request issue 58 measured (7 MiB of groups, of annotations, of
/// labels, a 7 MiB `CRDRequirement`, a 1.5 KB review of three costly
/// patterns, a 7 MiB CRD), four of each at once, sent to `serve` held to
/// the chart's memory limit (a cgroup where the test may make one; its
/// peak RSS otherwise). Before the bounds, one such request peaked over
/// the chart's 128Mi: an OOM kill of the replica (figures:
/// docs/BENCHMARKS.md, "After the hostile-input bounds (2026-12-02)").
#[tokio::test]
async fn serve_held_to_the_charts_memory_limit_survives_every_hostile_request() {
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let kc = &plane.admin_kubeconfig;
    let client = admin(plane).await;
    let strings =
        json!({"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}});
    install(&client, &crd("memorybombs", &[("v1", true, true)], strings)).await;
    let limit = chart_memory_limit();
    let cgroup = support::memory::Limit::new("crd-safety-serve", limit);
    if let Err(why) = &cgroup {
        eprintln!(
            "notice: serve runs without a memory limit ({why}); its peak RSS is held to {limit} bytes instead"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    let ca = TestCa::new();
    ca.issue(files);
    write_config(files, "webhook:\n  mode: enforce\n  failMode: closed\n");
    let procs = cgroup.as_ref().ok().map(support::memory::Limit::procs);
    // The chart's budgets are serve's defaults (a unit test holds them so).
    let served = Served::start_joining(files, kc, &[], procs.as_deref());
    let live = stored(kc, "memorybombs.example.com");
    let seven = 7 << 20;
    let groups: Vec<String> = (0..seven / 9).map(|i| format!("g{i:06}")).collect();
    let many = |n: usize| -> serde_json::Map<String, Value> {
        (0..n).map(|i| (format!("k{i}"), json!(""))).collect()
    };
    let with_meta = |field: &str, entries: serde_json::Map<String, Value>| {
        let mut crd = live.clone();
        crd["metadata"][field] = Value::Object(entries);
        crd
    };
    let mut patterns = live.clone();
    for field in ["a", "b", "c"] {
        patterns["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            [field]["pattern"] = json!(format!("^\\pL{{1000}}{field}$"));
    }
    let mut large = live.clone();
    large["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] =
        json!("a memory bomb. ".repeat(seven / 15));
    let requirement = json!({
        "apiVersion": "crd-safety.io/v1alpha1", "kind": "CRDRequirement",
        "metadata": {"name": "bomb", "namespace": "default"},
        "spec": {"crd": "memorybombs.example.com", "note": "x".repeat(seven)}
    });
    let mallory = json!({"username": "mallory"});
    let requirement_review = serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "bomb-requirement", "name": "bomb", "operation": "CREATE",
                    "userInfo": mallory, "object": requirement}
    }))
    .expect("JSON");
    let to_requirements = |body: Vec<u8>| {
        let mut r = String::from_utf8(post(&body)).expect("UTF-8");
        r = r.replacen("POST /validate ", "POST /requirements ", 1);
        r.into_bytes()
    };
    let bombs: Vec<(&str, Vec<u8>)> = vec![
        (
            "a DELETE with 7 MiB of groups",
            post(&bomb_review(
                "DELETE",
                json!({"username": "mallory", "groups": groups}),
                Some(&live),
                None,
            )),
        ),
        (
            "a DELETE with 7 MiB of annotations",
            post(&bomb_review(
                "DELETE",
                mallory.clone(),
                Some(&with_meta("annotations", many(seven / 14))),
                None,
            )),
        ),
        (
            "a DELETE with annotations up to the API server's limit",
            post(&bomb_review(
                "DELETE",
                mallory.clone(),
                Some(&with_meta("annotations", many(40_000))),
                None,
            )),
        ),
        (
            "a DELETE with 7 MiB of labels",
            post(&bomb_review(
                "DELETE",
                mallory.clone(),
                Some(&with_meta("labels", many(seven / 14))),
                None,
            )),
        ),
        (
            "a 7 MiB CRDRequirement",
            to_requirements(requirement_review),
        ),
        (
            "three costly patterns",
            post(&bomb_review(
                "UPDATE",
                mallory.clone(),
                Some(&live),
                Some(&patterns),
            )),
        ),
        (
            "a 7 MiB CRD",
            post(&bomb_review(
                "UPDATE",
                mallory.clone(),
                Some(&live),
                Some(&large),
            )),
        ),
    ];
    for (what, body) in &bombs {
        let started = std::time::Instant::now();
        let answers = futures::future::join_all(
            (0..4).map(|_| support::webhook::https_with(served.addr, &ca, None, body)),
        )
        .await;
        for answer in answers {
            let (code, text) = answer.unwrap_or_else(|e| panic!("{what}: no answer: {e}"));
            assert!(
                [200, 400, 408, 413].contains(&code),
                "{what}: {code} {}",
                &text[..text.len().min(300)]
            );
            // What could not be judged within the limits is denied
            // (failMode: closed, undecided patterns); a DELETE of a CRD
            // without objects may pass.
            if code == 200 && !what.contains("DELETE") {
                let response = support::webhook::answer(code, &text);
                assert_eq!(response["allowed"], false, "{what}: {response:#}");
            }
        }
        eprintln!("{what}: four answered in {:?}", started.elapsed());
    }
    let (code, _) = support::webhook::https(served.addr, &ca, &get("/healthz")).await;
    assert_eq!(code, 200, "serve is down");
    let rss = support::memory::peak_rss(served.pid()).expect("serve's VmHWM");
    match &cgroup {
        Ok(cgroup) => {
            assert_eq!(cgroup.oom_kills(), 0, "the kernel killed serve for memory");
            eprintln!(
                "peak held to {limit}: cgroup {} bytes, serve's RSS {rss} bytes",
                cgroup.peak()
            );
        }
        Err(_) => eprintln!("peak RSS {rss} of {limit} bytes"),
    }
    assert!(
        rss < limit,
        "serve's peak RSS {rss} passed the chart's limit {limit}"
    );
    drop(served);
}

/// `enforce` with the scan over a real operator upgrade
/// (prometheus-operator v0.76.2 -> v0.92.0): every tightening it brings is
/// cleared by the cluster's ordinary objects, so `kubectl apply` goes
/// through; one stored object the new schema refuses turns it into a
/// denial that names the rule.
#[tokio::test]
async fn enforce_with_the_scan_lets_a_real_upgrade_through_until_a_stored_object_breaks_it() {
    use crate::graded::{GROUP, NEW, NS, OLD, create, release};
    let Some(corpus) = support::corpus::corpus_dir() else {
        return;
    };
    let config = "webhook:\n  mode: enforce\n  failMode: closed\n  scanObjects: {enabled: true}\n";
    let Some(s) = setup(config, "Fail").await else {
        return;
    };
    let kc = &s.plane.admin_kubeconfig;
    let client = admin(&s.plane).await;
    for crd in release(&corpus.join(OLD)) {
        support::live::install_as(&client, &crd, "kubectl").await;
    }
    support::live::ensure_namespace(&client, NS).await;
    create(
        &client,
        "ServiceMonitor",
        "servicemonitors",
        "web",
        json!({"selector": {"matchLabels": {"app": "web"}}, "endpoints": [{"port": "http"}]}),
    )
    .await;
    let dir = s.dir.path().join("new");
    std::fs::create_dir_all(&dir).expect("dir");
    for crd in release(&corpus.join(NEW)) {
        let name = crd["metadata"]["name"].as_str().expect("name").to_string();
        write_manifest(&dir, &format!("{name}.json"), &crd);
    }
    let new = dir.display().to_string();
    let out = kubectl(kc, &dry_run(&new));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_has(&stderr(&out), "no stored object fails it");
    create(
        &client,
        "ServiceMonitor",
        "servicemonitors",
        "behind-proxy",
        json!({"selector": {}, "endpoints": [{"port": "http", "proxyUrl": "proxy.internal:3128"}]}),
    )
    .await;
    let out = kubectl(kc, &dry_run(&new));
    let text = stderr(&out);
    assert!(!out.status.success(), "{text}");
    assert_has(&text, &format!("servicemonitors.{GROUP}"));
    assert_has(&text, "pattern v1 ^.spec.endpoints[*].proxyUrl");
}
