//! Consumers' requirements against the real API server: `require` pins the
//! installed CRD, `apply-check --requirements` names the consumer a change
//! breaks, `requirements` shows each one's state in the cluster, and
//! `serve` enforces the cluster's own `CRDRequirement` objects.

use crate::support;

use serde_json::{Value, json};
use support::envtest::control_plane;
use support::live::{admin, apply_check, crd, install, write_manifest};
use support::run::run;

/// `require NAME --crd CRD --from cluster` with `extra` flags: the file it
/// wrote.
fn require(
    dir: &std::path::Path,
    name: &str,
    crd: &str,
    kubeconfig: &str,
    extra: &[&str],
) -> String {
    let mut args = vec!["require", name, "--crd", crd, "--kubeconfig", kubeconfig];
    args.extend_from_slice(extra);
    let r = run(&args, None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let path = dir.join(format!("{}.yaml", name.replace('/', "-")));
    std::fs::write(&path, &r.stdout).expect("requirement written");
    path.display().to_string()
}

fn requirement_findings(report: &Value) -> Vec<(String, String)> {
    report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["findings"].as_array().into_iter().flatten())
        .filter_map(|f| {
            let name = f["requirement"]["name"].as_str()?;
            Some((
                name.to_string(),
                f["path"].as_str().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

#[tokio::test]
async fn apply_check_names_the_consumer_whose_pinned_field_a_change_removes() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let fields = json!({"route": {"type": "string"}, "legacy": {"type": "string"}});
    install(&client, &crd("consumeds", &[("v1", true, true)], fields)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let req = require(
        dir.path(),
        "team-b/uses-route",
        "consumeds.example.com",
        &kubeconfig,
        &[
            "--fields",
            "spec.route",
            "--owner",
            "Team B",
            "--contact",
            "#team-b",
        ],
    );

    // Removing the pinned field breaks the requirement, by name.
    let without_route = write_manifest(
        dir.path(),
        "no-route.json",
        &crd(
            "consumeds",
            &[("v1", true, true)],
            json!({"legacy": {"type": "string"}}),
        ),
    );
    let r = apply_check(
        &without_route,
        &kubeconfig,
        &["--requirements", &req, "-o", "json"],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    assert_eq!(
        requirement_findings(&report),
        [("team-b/uses-route".to_string(), "^.spec.route".to_string())]
    );
    let finding = report["crds"][0]["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f.get("requirement").is_some()))
        .expect("the requirement's finding");
    assert!(
        finding["message"].as_str().is_some_and(|m| m.starts_with(
            "breaks `team-b/uses-route` (owner: Team B, #team-b): field ^.spec.route removed"
        )),
        "{finding:#}"
    );
    assert_eq!(report["requirements"][0]["met"], false);

    // Removing a field it does not use is the owner's finding only.
    let without_legacy = write_manifest(
        dir.path(),
        "no-legacy.json",
        &crd(
            "consumeds",
            &[("v1", true, true)],
            json!({"route": {"type": "string"}}),
        ),
    );
    let r = apply_check(
        &without_legacy,
        &kubeconfig,
        &["--requirements", &req, "-o", "json"],
    );
    let report = r.json();
    assert!(requirement_findings(&report).is_empty(), "{report:#}");
    assert_eq!(report["requirements"][0]["met"], true);
    assert!(
        report["crds"][0]["findings"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["check"] == "existingFieldRemoval")),
        "{report:#}"
    );
}

#[tokio::test]
async fn requirements_shows_whether_the_installed_crds_meet_each_requirement() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let fields = json!({"port": {"type": "integer"}, "host": {"type": "string"}});
    install(&client, &crd("pinneds", &[("v1", true, true)], fields)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let reqs = dir.path().join("reqs");
    std::fs::create_dir(&reqs).expect("a directory");
    require(
        &reqs,
        "uses-port",
        "pinneds.example.com",
        &kubeconfig,
        &["--fields", "spec.port"],
    );
    require(
        &reqs,
        "uses-host",
        "pinneds.example.com",
        &kubeconfig,
        &["--fields", "spec.host"],
    );
    // A requirement on a CRD this cluster does not have.
    let absent = write_manifest(
        dir.path(),
        "absent.json",
        &crd("unpinneds", &[("v1", true, true)], json!({})),
    );
    let r = run(
        &[
            "require",
            "uses-absent",
            "--crd",
            "unpinneds.example.com",
            "--from",
            &absent,
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::write(reqs.join("absent.yaml"), &r.stdout).expect("written");

    // The owner drops `host` (the API server allows it).
    install(
        &client,
        &crd(
            "pinneds",
            &[("v1", true, true)],
            json!({"port": {"type": "integer"}}),
        ),
    )
    .await;

    let reqs = reqs.display().to_string();
    let r = run(
        &[
            "requirements",
            "--requirements",
            &reqs,
            "--kubeconfig",
            &kubeconfig,
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let states: Value = serde_json::from_str(&r.stdout).expect("JSON");
    let mut summary: Vec<(String, String)> = states["requirements"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap_or("").to_string();
            (text("name"), text("state"))
        })
        .collect();
    summary.sort();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        summary,
        [
            pair("uses-absent", "CRDNotFound"),
            pair("uses-host", "RequirementsNotMet"),
            pair("uses-port", "Compatible"),
        ]
    );
    assert!(
        states["against"]
            .as_str()
            .is_some_and(|a| a.starts_with("the cluster (context envtest-admin")),
        "{states:#}"
    );

    let r = run(
        &[
            "requirements",
            "--requirements",
            &reqs,
            "--kubeconfig",
            &kubeconfig,
        ],
        None,
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("existingFieldRemoval v1 ^.spec.host: field ^.spec.host removed"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("1 of 3 requirements met"), "{}", r.stdout);
}

/// `serve` with the chart's `CRDRequirement` resource: the webhook runs
/// where the control plane does (Unix).
#[cfg(unix)]
mod enforced {
    use super::*;

    use support::envtest::dedicated;
    use support::runs::assert_has;
    use support::webhook::{
        Served, TestCa, kubectl, register, register_requirements, until_kubectl_says,
    };

    /// `kubectl apply --server-side` of `file` (taking over the installer's
    /// fields), with `dry_run` as the API server's dry run: admission runs,
    /// the webhook answers either way.
    fn apply_crd(kubeconfig: &std::path::Path, file: &str, dry_run: bool) -> std::process::Output {
        let mut args = vec!["apply", "--server-side", "--force-conflicts", "-f", file];
        if dry_run {
            args.push("--dry-run=server");
        }
        kubectl(kubeconfig, &args)
    }

    fn stderr(out: &std::process::Output) -> String {
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Waits until `serve` logs that it has read requirements named `names`
    /// (it lists them at start and every `--reload-interval`).
    fn until_serve_reads(served: &Served, names: &[&str]) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let log = served.log();
            let read = log.iter().rev().find(|v| v["event"] == "requirements read");
            if let Some(read) = read
                && names.iter().all(|n| {
                    read["requirements"]
                        .as_array()
                        .is_some_and(|a| a.contains(&json!(n)))
                })
            {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "serve never read {names:?}: {log:#?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// The states `requirements` (no `--requirements`: the cluster's own)
    /// prints as JSON, by name, and its exit code.
    fn cluster_states(kubeconfig: &str) -> (i32, Vec<(String, String)>) {
        let r = run(
            &["requirements", "--kubeconfig", kubeconfig, "-o", "json"],
            None,
        );
        let states: Value = serde_json::from_str(&r.stdout).expect("JSON");
        let mut summary: Vec<(String, String)> = states["requirements"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|s| {
                let text = |k: &str| s[k].as_str().unwrap_or("").to_string();
                (text("name"), text("state"))
            })
            .collect();
        summary.sort();
        (r.code, summary)
    }

    #[tokio::test]
    async fn the_webhook_enforces_the_clusters_requirements_whatever_its_own_mode() {
        // A webhook reaches every CRD request: a control plane of its own.
        let Some(plane) = dedicated() else { return };
        let client = admin(&plane).await;
        let kc = &plane.admin_kubeconfig;
        let kubeconfig = kc.display().to_string();
        let dir = tempfile::tempdir().expect("tempdir");
        let files = dir.path();

        // The chart's CRDRequirement resource, installed as kubectl would.
        let chart_crd = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/charts/crd-safety/crds/crdrequirements.yaml"
        );
        let out = kubectl(kc, &["apply", "--server-side", "-f", chart_crd]);
        assert!(out.status.success(), "{}", stderr(&out));
        let out = kubectl(
            kc,
            &[
                "wait",
                "--for=condition=Established",
                "crd/crdrequirements.crd-safety.io",
                "--timeout=30s",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));

        let widgets = |fields: Value| crd("widgets", &[("v1", true, true)], fields);
        let string = json!({"type": "string"});
        let integer = json!({"type": "integer"});
        install(
            &client,
            &widgets(json!({"route": string, "legacy": string, "port": integer})),
        )
        .await;

        // `serve` in warn mode: its own findings never deny.
        let ca = TestCa::new();
        ca.issue(files);
        std::fs::write(files.join("config.yaml"), "webhook:\n  mode: warn\n").expect("config");
        let served = Served::start(files, kc, &[]);
        register(&client, &served.url(), &ca, "Fail").await;

        let mut malformed: Value = serde_json::from_str(&{
            let r = run(
                &[
                    "require",
                    "uses-nothing",
                    "--crd",
                    "widgets.example.com",
                    "--kubeconfig",
                    &kubeconfig,
                    "-o",
                    "json",
                ],
                None,
            );
            assert_eq!(r.code, 0, "{}", r.stderr);
            r.stdout
        })
        .expect("JSON");
        malformed["spec"]["fields"] = json!(["spec.nosuch"]);
        // One stored before the webhook validated them: read, reported, not
        // enforced.
        let mut stale = malformed.clone();
        stale["metadata"]["name"] = json!("stale-fields");
        let stale = write_manifest(files, "stale.json", &stale);
        let malformed = write_manifest(files, "malformed.json", &malformed);
        let out = kubectl(kc, &["apply", "-f", &stale]);
        assert!(out.status.success(), "{}", stderr(&out));

        // From now on, a requirement that does not parse is refused, with the
        // reason.
        register_requirements(&client, &served, &ca).await;
        let out = until_kubectl_says(kc, &["apply", "-f", &malformed], "cannot be read");
        assert!(!out.status.success());
        assert_has(
            &stderr(&out),
            "crd-safety: this CRDRequirement cannot be read: CRDRequirement uses-nothing: \
             spec.fields.0: spec.nosuch is not a field of the pinned CRD in v1",
        );

        // Two consumers pin what they use, written by `require` from the
        // cluster and applied as they are.
        let route = require(
            files,
            "uses-route",
            "widgets.example.com",
            &kubeconfig,
            &[
                "--fields",
                "spec.route",
                "--owner",
                "Team B",
                "--contact",
                "#team-b",
            ],
        );
        let port = require(
            files,
            "uses-port",
            "widgets.example.com",
            &kubeconfig,
            &["--fields", "spec.port", "--action", "warn"],
        );
        for file in [&route, &port] {
            let out = kubectl(kc, &["apply", "-f", file]);
            assert!(out.status.success(), "{}", stderr(&out));
        }
        until_serve_reads(&served, &["uses-port", "uses-route"]);
        served.wait_for("requirement unreadable", 0);

        // Removing the pinned field is denied, naming the consumer, though the
        // webhook's own mode only warns.
        let no_route = write_manifest(
            files,
            "no-route.json",
            &widgets(json!({"legacy": string, "port": integer})),
        );
        let out = apply_crd(kc, &no_route, true);
        assert!(!out.status.success());
        let text = stderr(&out);
        assert_has(&text, "denied the request");
        assert_has(
            &text,
            "existingFieldRemoval v1 ^.spec.route: breaks `uses-route` (owner: Team B, #team-b): field ^.spec.route removed",
        );

        // Removing a field nobody pinned passes, with the webhook's own warning.
        let no_legacy = write_manifest(
            files,
            "no-legacy.json",
            &widgets(json!({"route": string, "port": integer})),
        );
        let out = apply_crd(kc, &no_legacy, false);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_has(
            &stderr(&out),
            "Warning: crd-safety error existingFieldRemoval v1 ^.spec.legacy",
        );
        assert!(!stderr(&out).contains("breaks"), "{}", stderr(&out));
        assert_has(
            &stderr(&out),
            "Warning: CRDRequirement stale-fields is not enforced, it cannot be read: \
             spec.fields.0: spec.nosuch is not a field of the pinned CRD in v1",
        );

        // A Warn requirement warns, and the change goes through.
        let no_port = write_manifest(files, "no-port.json", &widgets(json!({"route": string})));
        let out = apply_crd(kc, &no_port, false);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_has(
            &stderr(&out),
            "breaks `uses-port`: field ^.spec.port removed",
        );

        // A pinned CRD cannot be deleted; the refusal names its requirements.
        let out = kubectl(kc, &["delete", "crd", "widgets.example.com"]);
        assert!(!out.status.success());
        assert_has(
            &stderr(&out),
            "widgets.example.com is pinned by the requirements `uses-port`, `uses-route` (owner: Team B, #team-b)",
        );

        // `requirements` reads the cluster's own requirements; one that
        // cannot be read fails it, named, as a malformed file does.
        let r = run(&["requirements", "--kubeconfig", &kubeconfig], None);
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert_has(
            &r.stderr,
            "CRDRequirement stale-fields: spec.fields.0: spec.nosuch is not a field",
        );
        let out = kubectl(kc, &["delete", "crdrequirement", "stale-fields"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            cluster_states(&kubeconfig),
            (
                0,
                vec![
                    pair("uses-port", "CompatibleWithWarnings"),
                    pair("uses-route", "Compatible")
                ]
            )
        );

        // Break-glass accepts a requirement's finding as it accepts the rest;
        // the requirement is then not met.
        let mut accepted = widgets(json!({}));
        accepted["metadata"]["annotations"] = json!({
            "crd-safety.io/accept": "existingFieldRemoval",
            "crd-safety.io/accept-reason": "team B moved to v2 routes; see #7"
        });
        let accepted = write_manifest(files, "accepted.json", &accepted);
        let out = apply_crd(kc, &accepted, false);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(
            cluster_states(&kubeconfig),
            (
                1,
                vec![
                    pair("uses-port", "CompatibleWithWarnings"),
                    pair("uses-route", "RequirementsNotMet")
                ]
            )
        );
        let r = run(&["requirements", "--kubeconfig", &kubeconfig], None);
        assert_has(&r.stdout, "uses-route (CRDRequirement uses-route):");
        assert_has(&r.stdout, "1 of 2 requirements met");
        drop(ca);
    }
}
