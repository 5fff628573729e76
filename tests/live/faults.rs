//! Long scans and applies survive a busy API server: the real kube-apiserver
//! behind a fault-injecting proxy (429 with `Retry-After`, 503, connections
//! closed before the answer or cut mid-body), and a real kube-apiserver
//! restarted in the middle of a scan of a few thousand objects. The runs
//! must complete with the counts the server really has, say how often they
//! retried, and fail (exit 3, no report) when the faults outlast the retry
//! policy.
//!
//! Each test prints what its faults cost in time, for the README's figures.

use crate::support;

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use kube::Client;
use serde_json::{Value, json};
use support::envtest::{ControlPlane, control_plane, dedicated, free_port};
use support::faults::{Fault, FaultProxy, Incoming, Seen};
use support::live::{admin, crd, create_objects, install, write_manifest};
use support::run::{Run, run};
use support::runs::{assert_has, finished, start};

/// Creates `n` objects `<plural>` named `o0..`, with `spec.size = i % 10`.
async fn create_numbered(client: &Client, plural: &str, n: usize) {
    let objects = (0..n)
        .map(|i| {
            (
                "default".to_string(),
                format!("o{i}"),
                json!({"size": i % 10}),
            )
        })
        .collect();
    create_objects(client, plural, "v1", objects).await;
}

/// The old CRD (any size) and the new one (`minimum: 2`): objects with size
/// 0 or 1, a fifth of [`create_numbered`]'s, become invalid.
fn old_and_new(plural: &str) -> (Value, Value) {
    let versions = [("v1", true, true)];
    (
        crd(plural, &versions, json!({})),
        crd(
            plural,
            &versions,
            json!({"size": {"type": "integer", "minimum": 2}}),
        ),
    )
}

/// Installs the old CRD with `n` objects; the path of the new manifest.
async fn setup(plane: &ControlPlane, plural: &str, n: usize, dir: &std::path::Path) -> String {
    let client = admin(plane).await;
    let (old, new) = old_and_new(plural);
    install(&client, &old).await;
    create_numbered(&client, plural, n).await;
    write_manifest(dir, "new.json", &new)
}

/// Runs `apply-check -f manifest --kubeconfig kubeconfig --objects
/// extra...`: the check with a scan of the objects.
fn scan(manifest: &str, kubeconfig: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "apply-check",
        "-f",
        manifest,
        "--kubeconfig",
        kubeconfig,
        "--objects",
    ];
    args.extend_from_slice(extra);
    run(&args, None)
}

/// Whether a request the proxy sees is a LIST of `plural`'s objects after
/// the first page (it sends a continue token).
fn later_page(r: &Incoming<'_>, plural: &str) -> bool {
    r.target
        .starts_with(&format!("/apis/example.com/v1/{plural}?"))
        && r.target.contains("continue=")
}

/// An HTTP date `secs` from now, as a server would send in `Retry-After`.
fn http_date_in(secs: u64) -> String {
    let at = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        + Duration::from_secs(secs);
    let at = i64::try_from(at.as_secs()).expect("a representable time");
    chrono::DateTime::from_timestamp(at, 0)
        .expect("a valid timestamp")
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// How long after each faulted request its next try arrived: what the
/// fault cost.
fn fault_costs(seen: &[Seen]) -> Vec<(String, Duration)> {
    seen.iter()
        .enumerate()
        .filter(|(_, s)| s.fault != Fault::Forward)
        .filter_map(|(i, s)| {
            let retry = seen[i + 1..]
                .iter()
                .find(|r| r.method == s.method && r.target == s.target)?;
            let what = match &s.fault {
                Fault::Status { code, retry_after } => match retry_after {
                    Some(a) => format!("{code} (Retry-After: {a})"),
                    None => code.to_string(),
                },
                Fault::Close => "closed before the answer".into(),
                Fault::CutMidBody => "cut mid-body".into(),
                Fault::Forward | Fault::Delay(_) => unreachable!(),
            };
            let path = s.target.split('?').next().unwrap_or_default();
            Some((
                format!("{} {path}: {what}", s.method),
                retry.at.duration_since(s.at),
            ))
        })
        .collect()
}

fn print_costs(test: &str, costs: &[(String, Duration)]) {
    for (what, cost) in costs {
        eprintln!("figure: {test}: {what} cost {:.2}s", cost.as_secs_f64());
    }
}

#[tokio::test]
async fn a_scan_through_429_503_and_cut_connections_completes_with_exact_counts() {
    let Some(plane) = control_plane() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = setup(plane, "faultscans", 60, dir.path()).await;
    // Faults on the first try of: the CRD's GET, /version, the dry run, and
    // the LIST pages 2-5 (one fault each); every retry is forwarded.
    let pages = Mutex::new(0usize);
    let proxy = FaultProxy::start(plane, move |r: &Incoming<'_>| {
        if r.nth > 1 {
            return Fault::Forward;
        }
        let path = r.target.split('?').next().unwrap_or_default();
        if path.ends_with("/customresourcedefinitions/faultscans.example.com") {
            return match r.method {
                "GET" => Fault::status(429, Some("1")),
                // The one dry run (forced: its managedFields tell the
                // conflicts).
                "PATCH" => Fault::status(503, Some(http_date_in(2).as_str())),
                _ => Fault::Forward,
            };
        }
        if path == "/version" {
            return Fault::Close;
        }
        if later_page(r, "faultscans") {
            let mut pages = pages.lock().expect("page count");
            *pages += 1;
            return match *pages {
                1 => Fault::status(503, None),
                2 => Fault::CutMidBody,
                3 => Fault::Close,
                4 => Fault::status(429, Some("0")),
                _ => Fault::Forward,
            };
        }
        Fault::Forward
    });
    let pages_of_10 = ["--chunk-size", "10", "-o", "json"];
    // The baseline: the same scan through a proxy that forwards everything.
    let clean = FaultProxy::start(plane, |_: &Incoming<'_>| Fault::Forward);
    let clean_dir = tempfile::tempdir().expect("tempdir");
    let clean_kubeconfig = clean.kubeconfig(clean_dir.path());
    let started = Instant::now();
    let baseline = scan(&manifest, &clean_kubeconfig, &pages_of_10);
    let baseline_took = started.elapsed();
    assert_eq!(baseline.json()["cluster"]["retries"], 0);
    let faulty_kubeconfig = proxy.kubeconfig(dir.path());
    let started = Instant::now();
    let r = scan(&manifest, &faulty_kubeconfig, &pages_of_10);
    let took = started.elapsed();
    assert_eq!(
        r.code, 1,
        "invalid objects are found: {}{}",
        r.stdout, r.stderr
    );
    let report = r.json();
    let scan = &report["crds"][0]["scan"];
    assert_eq!(scan["scanned"], 60, "every object once: {scan}");
    assert_eq!(scan["invalid"], 12, "sizes 0 and 1: {scan}");
    assert_eq!(scan["retries"], 4, "one per faulted page: {scan}");
    assert_eq!(
        report["cluster"]["retries"], 7,
        "GET, /version, dry run, 4 pages"
    );
    // Each retry was shown as it happened.
    let warnings: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(warnings.len(), 7, "{}", r.stderr);
    for cause in [
        "GET crd faultscans.example.com: 429 Too Many Requests; retry 1 in 1.0s",
        "dry-run crd faultscans.example.com: 503 Service Unavailable; retry 1 in ",
        "GET /version: connection closed",
        // Our own backoff of 250 ms, stretched by up to a fifth of jitter.
        "LIST example.com/v1 faultscans: 503 Service Unavailable; retry 1 in 0.",
        "LIST example.com/v1 faultscans: connection closed",
        "LIST example.com/v1 faultscans: 429 Too Many Requests; retry 1 in 0.0s",
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(cause)),
            "{cause}: {}",
            r.stderr
        );
    }
    // A retried page is the same page: its continue token is sent again.
    let seen = proxy.seen();
    for faulted in seen.iter().filter(|s| s.fault != Fault::Forward) {
        let tries = seen.iter().filter(|s| s.target == faulted.target).count();
        assert_eq!(
            tries, 2,
            "{} {} retried once",
            faulted.method, faulted.target
        );
    }
    // Retry-After was honoured: one second, and the HTTP date's wait.
    let costs = fault_costs(&seen);
    let cost_of = |what: &str| {
        costs
            .iter()
            .find(|(w, _)| w.contains(what))
            .map(|(_, c)| *c)
            .unwrap_or_else(|| panic!("no fault {what} in {costs:?}"))
    };
    assert!(cost_of("429 (Retry-After: 1)") >= Duration::from_millis(950));
    assert!(cost_of("503 (Retry-After: ") >= Duration::from_millis(500));
    print_costs("scan of 60 objects", &costs);
    eprintln!(
        "figure: scan of 60 objects: {:.2}s through 7 faults, {:.2}s without ({:.1}x)",
        took.as_secs_f64(),
        baseline_took.as_secs_f64(),
        took.as_secs_f64() / baseline_took.as_secs_f64()
    );
}

#[tokio::test]
async fn the_table_says_how_often_it_retried_and_that_the_counts_are_complete() {
    let Some(plane) = control_plane() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = setup(plane, "faulttables", 20, dir.path()).await;
    let proxy = FaultProxy::start(plane, |r: &Incoming<'_>| {
        if later_page(r, "faulttables") && r.nth == 1 {
            Fault::status(503, Some("0"))
        } else {
            Fault::Forward
        }
    });
    let kubeconfig = proxy.kubeconfig(dir.path());
    let r = scan(&manifest, &kubeconfig, &["--chunk-size", "5"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_has(
        &r.stdout,
        &format!(
            "objects: 20 scanned in v1; 4 invalid, 0 losing data (server 1.{}, ratcheting on); 3 requests retried",
            plane.kube_minor
        ),
    );
    assert_has(
        &r.stdout,
        "retries: 3 requests to the API server retried after transient failures (429, 5xx, \
             lost connections); every count above is complete",
    );
}

#[tokio::test]
async fn faults_that_outlast_the_retries_fail_the_scan_instead_of_a_short_count() {
    let Some(plane) = control_plane() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = setup(plane, "faultstucks", 20, dir.path()).await;
    // The second page never comes (Retry-After: 0 keeps the test quick).
    let proxy = FaultProxy::start(plane, |r: &Incoming<'_>| {
        if later_page(r, "faultstucks") {
            Fault::status(503, Some("0"))
        } else {
            Fault::Forward
        }
    });
    let kubeconfig = proxy.kubeconfig(dir.path());
    let r = scan(
        &manifest,
        &kubeconfig,
        &["--chunk-size", "10", "-o", "json"],
    );
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout, "", "no report, so no partial count");
    let error: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(
        error,
        [
            "error: the API server answered 503: injected 503 (gave up after 8 tries and 0.0s of waiting)"
        ],
        "{}",
        r.stderr
    );
    let pages = proxy
        .seen()
        .iter()
        .filter(|s| s.target.contains("continue="))
        .count();
    assert_eq!(pages, 8, "the policy's 8 tries");
}

#[tokio::test]
async fn an_apply_whose_answer_is_lost_is_retried_and_applied_once() {
    let Some(plane) = control_plane() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let client = admin(plane).await;
    let manifest = setup(plane, "faultapplies", 0, dir.path()).await;
    // The real apply reaches the server but its answer is cut. The retry,
    // conditional on the checked resourceVersion like the first, meets the
    // first one's write (409): the CRD is read again (that GET answered 503
    // once, and retried) and a dry run of the apply changes nothing, so
    // the 409 is our own write landed, counted once, not a conflict.
    let proxy = FaultProxy::start(plane, |r: &Incoming<'_>| {
        let crd = r
            .target
            .starts_with("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/faultapplies");
        match r.method {
            "PATCH" if crd && !r.target.contains("dryRun") && r.nth == 1 => Fault::CutMidBody,
            "GET" if crd && r.nth == 2 => Fault::status(503, None),
            _ => Fault::Forward,
        }
    });
    let kubeconfig = proxy.kubeconfig(dir.path());
    let r = run(
        &[
            "apply",
            "-f",
            &manifest,
            "--kubeconfig",
            &kubeconfig,
            "--yes",
            "--force",
            "--force-conflicts",
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    assert_eq!(
        report["apply"]["decision"], "applied",
        "{}",
        report["apply"]
    );
    assert_eq!(report["apply"]["results"][0]["result"], "configured");
    assert_eq!(report["apply"]["retries"], 2, "{}", report["apply"]);
    let applies = proxy
        .seen()
        .iter()
        .filter(|s| s.method == "PATCH" && !s.target.contains("dryRun"))
        .count();
    assert_eq!(applies, 2, "the lost answer's apply was sent again");
    let dry_runs_after = proxy
        .seen()
        .iter()
        .filter(|s| s.method == "PATCH" && s.target.contains("dryRun"))
        .count();
    assert_eq!(
        dry_runs_after, 2,
        "the check's one (forced: its managedFields tell the conflict) and the one that judged the 409"
    );
    let live: Value = client
        .request(
            http::Request::get(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/faultapplies.example.com",
            )
            .body(Vec::new())
            .expect("request"),
        )
        .await
        .expect("the CRD is readable");
    assert_eq!(
        live["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"]["minimum"],
        2,
        "the new schema is in place"
    );
}

/// LIST requests the server has counted for `plural` (its
/// `apiserver_request_total`), or 0 while it cannot say.
async fn lists_served(client: &Client, plural: &str) -> u64 {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let Ok(text) = client.request_text(request).await else {
        return 0;
    };
    let resource = format!("resource=\"{plural}\"");
    text.lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| l.contains(&resource) && l.contains("verb=\"LIST\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// The scan of `manifest`'s objects as the admin, straight to the server,
/// started for the test to restart the server under it.
fn scan_directly(plane: &ControlPlane, manifest: &str) -> std::process::Child {
    let args = [
        "apply-check",
        "-f",
        manifest,
        "--objects",
        "--chunk-size",
        "10",
        "-o",
        "json",
    ];
    start(&args, &plane.admin_kubeconfig)
}

#[tokio::test]
async fn a_scan_survives_the_api_server_restarting_in_the_middle() {
    // A control plane of its own: the others' tests must not see it go.
    let Some(mut plane) = tokio::task::spawn_blocking(dedicated)
        .await
        .expect("control plane thread")
    else {
        return;
    };
    let n = 3000;
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = setup(&plane, "restarts", n, dir.path()).await;
    // A baseline in the same run, for the figure.
    let started = Instant::now();
    let baseline = finished(scan_directly(&plane, &manifest)).await;
    let baseline_took = started.elapsed();
    assert_eq!(baseline.code, 1, "baseline scan: {}", baseline.stderr);
    let client = admin(&plane).await;
    let before = lists_served(&client, "restarts").await;
    let started = Instant::now();
    let child = scan_directly(&plane, &manifest);
    // Restart once the server has served a tenth of the 300 pages.
    let deadline = Instant::now() + Duration::from_secs(120);
    while lists_served(&client, "restarts").await < before + 30 {
        assert!(Instant::now() < deadline, "the scan never got going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let restart_started = Instant::now();
    plane = tokio::task::spawn_blocking(move || {
        plane.restart_apiserver();
        plane
    })
    .await
    .expect("restart thread");
    let away = restart_started.elapsed();
    let r = finished(child).await;
    let took = started.elapsed();
    let stderr = &r.stderr;
    assert_eq!(r.code, 1, "{}{stderr}", r.stdout);
    let report: Value = serde_json::from_str(&r.stdout).expect("a JSON report");
    let scan = &report["crds"][0]["scan"];
    assert_eq!(scan["scanned"], n, "every object exactly once: {scan}");
    assert_eq!(scan["invalid"], n / 5, "sizes 0 and 1: {scan}");
    let retries = scan["retries"].as_u64().unwrap_or_default();
    assert!(
        retries >= 1,
        "the restart was seen and retried: {scan}\n{stderr}"
    );
    assert!(
        stderr.contains("LIST example.com/v1 restarts: "),
        "the retries are shown: {stderr}"
    );
    // Still the same control plane, for the record.
    assert!(lists_served(&admin(&plane).await, "restarts").await > 0);
    for warning in stderr.lines().filter(|l| l.starts_with("warning: ")) {
        eprintln!("figure: restart: {warning}");
    }
    eprintln!(
        "figure: scan of {n} objects: {:.2}s without a restart, {:.2}s with one ({:.1}x; \
         server away and back to ready in {:.2}s; {retries} retries)",
        baseline_took.as_secs_f64(),
        took.as_secs_f64(),
        took.as_secs_f64() / baseline_took.as_secs_f64(),
        away.as_secs_f64()
    );
}

#[tokio::test]
async fn large_pages_come_gzip_compressed_unless_the_kubeconfig_disables_it() {
    let Some(plane) = control_plane() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = setup(plane, "gzips", 600, dir.path()).await;
    let mut bytes = Vec::new();
    for (extra, expected) in [
        ("", Some("gzip")),
        ("    disable-compression: true\n", None),
    ] {
        let proxy = FaultProxy::start(plane, |_: &Incoming<'_>| Fault::Forward);
        let kubeconfig = proxy.kubeconfig_with(dir.path(), extra);
        let r = scan(
            &manifest,
            &kubeconfig,
            &["--chunk-size", "500", "-o", "json"],
        );
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        let scan = &r.json()["crds"][0]["scan"];
        assert_eq!(scan["scanned"], 600, "{scan}");
        assert_eq!(scan["invalid"], 120, "{scan}");
        let answers = proxy.answers();
        // The API server compresses answers above 128 KiB: the first page.
        let page = answers
            .iter()
            .find(|a| a.target.starts_with("/apis/example.com/v1/gzips?") && a.bytes > 0)
            .expect("a LIST answer");
        let listed: usize = answers
            .iter()
            .filter(|a| a.target.starts_with("/apis/example.com/v1/gzips?"))
            .map(|a| a.bytes)
            .sum();
        assert_eq!(
            page.encoding.as_deref(),
            expected,
            "kubeconfig extra {extra:?}: {page:?}"
        );
        bytes.push(listed);
    }
    eprintln!(
        "figure: LIST of 600 objects in pages of 500: {} bytes gzip, {} bytes plain ({:.1}x smaller)",
        bytes[0],
        bytes[1],
        bytes[1] as f64 / bytes[0] as f64
    );
}

/// A conversion webhook that does not answer makes the API server fail
/// every read of the CRD's objects in another version with a 500. That is
/// not retried (the server names no wait, and client-go does not retry
/// such a 500 either): the scan stops at once with one line that names the
/// conversion webhook.
#[tokio::test]
async fn a_broken_conversion_webhook_fails_at_once_naming_it() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let closed = free_port();
    let webhook = json!({
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": format!("https://127.0.0.1:{closed}/convert")},
        },
    });
    let mut old = crd(
        "convfails",
        &[("v1", true, true), ("v2", true, false)],
        json!({}),
    );
    old["spec"]["conversion"] = webhook;
    install(&client, &old).await;
    // Stored in v1, the version it is written in: no conversion yet.
    create_numbered(&client, "convfails", 3).await;
    // The new release changes v2, so the scan reads the objects in v2,
    // which only the webhook can convert them to.
    let mut new = old.clone();
    new["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]
        ["minimum"] = json!(2);
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(dir.path(), "new.json", &new);
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = scan(&manifest, &kubeconfig, &[]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("error: the conversion webhook of the CRD failed")
            && r.stderr.contains("conversion webhook for example.com/")
            && r.stderr.contains("connection refused"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("gave up after"),
        "not retried: {}",
        r.stderr
    );
}
