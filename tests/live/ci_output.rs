//! Positions and baselines on the live commands, against a real
//! kube-apiserver and etcd (see `support/envtest.rs`): `apply-check` places
//! findings on the manifest's lines, and a baseline it wrote lets `apply`
//! go ahead, while a finding that changes again is refused.

use crate::support;

use serde_json::{Value, json};
use support::envtest::control_plane;
use support::live::{admin, apply_check, crd, install, write_manifest};
use support::run::run;
use support::runs::assert_has;

#[tokio::test]
async fn apply_check_places_findings_and_a_baseline_lets_apply_through() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    install(&client, &crd("baselines", &[("v1", true, true)], json!({}))).await;
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let bounded = |max: u64| {
        crd(
            "baselines",
            &[("v1", true, true)],
            json!({"size": {"type": "integer", "maximum": max}}),
        )
    };
    let manifest = write_manifest(dir.path(), "new.json", &bounded(10));

    // The finding points at `"maximum"` in the manifest.
    let r = apply_check(&manifest, &kubeconfig, &["-o", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).expect("json");
    let maximum = report["crds"][0]["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["check"] == "maximum"))
        .expect("maximum added is a finding");
    let text = std::fs::read_to_string(&manifest).expect("manifest");
    let (line, column) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("\"maximum\"").map(|c| (i + 1, c + 1)))
        .expect("the manifest has maximum");
    assert_eq!(
        maximum["location"],
        json!({"file": manifest, "line": line, "column": column})
    );

    // Accept it: apply-check passes with the baseline, and apply goes ahead.
    let baseline = dir.path().join("baseline.yaml").display().to_string();
    let written = apply_check(&manifest, &kubeconfig, &["--write-baseline", &baseline]);
    assert_eq!(written.code, 0, "{}{}", written.stdout, written.stderr);
    let checked = apply_check(&manifest, &kubeconfig, &["--baseline", &baseline]);
    assert_eq!(checked.code, 0, "{}{}", checked.stdout, checked.stderr);
    assert!(checked.stdout.contains("baselined: maximum v1 ^.spec.size"));

    // The bound moves again: a new finding, apply refuses.
    let lowered = write_manifest(dir.path(), "lowered.json", &bounded(5));
    let refused = run(
        &[
            "apply",
            "-f",
            &lowered,
            "--kubeconfig",
            &kubeconfig,
            "--baseline",
            &baseline,
            "--yes",
        ],
        None,
    );
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    assert_has(&refused.stdout, "stale baseline entries");

    // (The test installed the CRD with its own field manager.)
    let applied = run(
        &[
            "apply",
            "-f",
            &manifest,
            "--kubeconfig",
            &kubeconfig,
            "--baseline",
            &baseline,
            "--yes",
            "--force-conflicts",
        ],
        None,
    );
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    assert_has(&applied.stdout, "baselines.example.com  configured");
}
