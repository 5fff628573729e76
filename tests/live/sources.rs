//! The sources of `offline/sources.rs` (a git revision, a chart, a
//! kustomization) as the new side of `apply-check` against the real API
//! server. The CRD is `paints.example.com`, a plural of its own on the
//! shared control plane (`widgets` is the differential test's).

use crate::support;

use serde_json::Value;
use support::envtest::control_plane;
use support::live::{admin, install};
use support::sources::{
    colored, crds_chart, enum_findings, kustomization, plugin, two_commit_repo,
};

const PLURAL: &str = "paints";

#[tokio::test]
async fn apply_check_reads_a_git_revision_a_chart_and_a_kustomization() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    // The cluster runs the first release, with blue.
    let installed: Value = serde_saphyr::from_str(&colored(PLURAL, &["red", "green", "blue"]))
        .expect("fixture parses");
    install(&client, &installed).await;
    let kubeconfig = plane.admin_kubeconfig.display().to_string();

    let repo = two_commit_repo(PLURAL);
    let chart = repo.path().join("chart");
    crds_chart(&chart, PLURAL, &["red", "green"]);
    kustomization(repo.path(), PLURAL);
    let p = plugin(repo.path());
    for source in [
        vec!["-f", "git:HEAD:crds"],
        vec!["-f", "chart"],
        vec!["-k", "overlay"],
    ] {
        let mut args = vec!["apply-check", "--kubeconfig", &kubeconfig, "-o", "json"];
        args.extend(&source);
        let out = p.run(&args);
        assert_eq!(out.code, 1, "{source:?}: {}{}", out.stdout, out.stderr);
        let report: Value = serde_json::from_str(&out.stdout).expect("JSON report");
        assert_eq!(enum_findings(&report), ["^.spec.color"], "{source:?}");
        assert_eq!(report["crds"][0]["status"], "unsafe");
    }
    // The unchanged first release is safe against the cluster.
    let same = p.run(&[
        "apply-check",
        "--kubeconfig",
        &kubeconfig,
        "-f",
        "git:v1.0:crds",
    ]);
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);
}
