//! Consumers' requirements against the real API server: `require` pins the
//! installed CRD, `apply-check --requirements` names the consumer a change
//! breaks, and `requirements` shows each one's state in the cluster.

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
