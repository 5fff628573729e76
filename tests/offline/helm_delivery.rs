//! What `helm upgrade` and `helm uninstall` do with a chart's CRDs, judged by
//! `diff` of two chart releases built here (the real helm renders the
//! templates). `tests/live/helm_delivery.rs` shows on a real API server that
//! helm does what these findings say.

use serde_json::Value;

use crate::support::charts::{Layout, chart};
use crate::support::helm::{helm_dir, path_with_helm};
use crate::support::sources::Plugin;

/// `(check, severity, crd)` of every Helm delivery finding of a report.
fn delivery(report: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for crd in report["crds"].as_array().into_iter().flatten() {
        for f in crd["findings"].as_array().into_iter().flatten() {
            let check = f["check"].as_str().unwrap_or_default();
            if check.starts_with("helm") {
                out.push((
                    check.to_string(),
                    f["severity"].as_str().unwrap_or_default().to_string(),
                    crd["name"].as_str().unwrap_or_default().to_string(),
                ));
            }
        }
    }
    out
}

fn finding(check: &str, severity: &str, crd: &str) -> (String, String, String) {
    (check.into(), severity.into(), crd.into())
}

/// The message of the first finding of `check`.
fn message(report: &Value, check: &str) -> String {
    message_on(report, check, "")
}

/// The message of the first finding of `check` on a CRD whose name starts
/// with `crd`.
fn message_on(report: &Value, check: &str, crd: &str) -> String {
    report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with(crd)))
        .flat_map(|c| c["findings"].as_array().into_iter().flatten())
        .find(|f| f["check"] == check)
        .and_then(|f| f["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Runs `diff old new -o json` in `dir` with helm on `PATH`; the exit code
/// and the report.
fn diff(dir: &std::path::Path, helm: &std::path::Path) -> (i32, Value) {
    let p = Plugin {
        dir,
        path: Some(path_with_helm(helm)),
    };
    let out = p.run(&["diff", "old", "new", "-o", "json"]);
    let report = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", out.stdout, out.stderr));
    (out.code, report)
}

#[test]
fn a_crd_moved_from_templates_to_crds_is_deleted_by_helm_upgrade() {
    let Some(helm) = helm_dir() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    chart(
        &d.join("old"),
        "op",
        "1.0.0",
        &[("widgets", &["a"], Layout::Templates)],
    );
    chart(
        &d.join("new"),
        "op",
        "1.1.0",
        &[("widgets", &["a", "b"], Layout::Crds)],
    );
    let (code, report) = diff(d, helm);
    assert_eq!(code, 1);
    assert_eq!(
        delivery(&report),
        [finding("helmDeletesCrd", "error", "widgets.example.com")]
    );
    let msg = message(&report, "helmDeletesCrd");
    assert!(
        msg.starts_with("helm upgrade deletes this CRD and every Widget: ")
            && msg
                .contains("kubectl annotate crd widgets.example.com helm.sh/resource-policy=keep"),
        "{msg}"
    );
}

#[test]
fn a_crd_disabled_by_a_value_is_deleted_by_helm_upgrade() {
    let Some(helm) = helm_dir() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    let on = Layout::Switched { enabled: true };
    let off = Layout::Switched { enabled: false };
    chart(
        &d.join("old"),
        "op",
        "1.0.0",
        &[
            ("widgets", &["a"], on),
            ("gizmos", &["a"], Layout::TemplatesKept),
        ],
    );
    chart(
        &d.join("new"),
        "op",
        "1.1.0",
        &[
            ("widgets", &["a"], off),
            ("gizmos", &["a"], Layout::TemplatesKept),
        ],
    );
    let (code, report) = diff(d, helm);
    assert_eq!(code, 1);
    assert_eq!(
        delivery(&report),
        [finding("helmDeletesCrd", "error", "widgets.example.com")]
    );
    assert!(
        message(&report, "helmDeletesCrd").contains("NEW does not render it"),
        "{report}"
    );
}

/// cert-manager's `installCRDs` -> `crds.enabled` class: NEW's values
/// switch every CRD template off, so NEW renders no CRD at all. That is the
/// upgrade deleting them all, not an input without CRDs.
#[test]
fn a_chart_whose_values_switch_every_crd_off_is_reported_as_deleting_them() {
    let Some(helm) = helm_dir() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    let on = Layout::Switched { enabled: true };
    let off = Layout::Switched { enabled: false };
    chart(
        &d.join("old"),
        "op",
        "1.0.0",
        &[("widgets", &["a"], on), ("gizmos", &["a"], on)],
    );
    chart(
        &d.join("new"),
        "op",
        "1.1.0",
        &[("widgets", &["a"], off), ("gizmos", &["a"], off)],
    );
    let (code, report) = diff(d, helm);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        delivery(&report),
        [
            finding("helmDeletesCrd", "error", "gizmos.example.com"),
            finding("helmDeletesCrd", "error", "widgets.example.com"),
        ]
    );
    assert!(
        message_on(&report, "helmDeletesCrd", "widgets").contains("NEW does not render it"),
        "{report}"
    );
}

/// A directory of files without a CRD stays an error (exit 2): only a chart
/// that helm rendered whole can answer "no CRD".
#[test]
fn files_without_a_crd_are_still_an_input_error() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    chart(
        &d.join("old"),
        "op",
        "1.0.0",
        &[("widgets", &["a"], Layout::Crds)],
    );
    std::fs::create_dir_all(d.join("new")).expect("new dir");
    std::fs::write(
        d.join("new/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    )
    .expect("write");
    let p = Plugin { dir: d, path: None };
    let out = p.run(&["diff", "old", "new"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("no CustomResourceDefinition found"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_keep_policy_spares_the_crd_but_crds_changes_still_do_not_land() {
    let Some(helm) = helm_dir() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    chart(
        &d.join("old"),
        "op",
        "1.0.0",
        &[("widgets", &["a"], Layout::TemplatesKept)],
    );
    chart(
        &d.join("new"),
        "op",
        "1.1.0",
        &[("widgets", &["a", "b"], Layout::Crds)],
    );
    let (code, report) = diff(d, helm);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        delivery(&report),
        [finding(
            "helmCrdsNotUpgraded",
            "warning",
            "widgets.example.com"
        )]
    );
}

#[test]
fn a_change_under_crds_is_not_applied_by_helm_upgrade() {
    let Some(helm) = helm_dir() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    chart(
        &d.join("old"),
        "op",
        "1.0.0",
        &[("widgets", &["a"], Layout::Crds)],
    );
    chart(
        &d.join("new"),
        "op",
        "1.1.0",
        &[
            ("widgets", &["a", "b", "c"], Layout::Crds),
            ("gizmos", &["a"], Layout::Crds),
        ],
    );
    let (code, report) = diff(d, helm);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        delivery(&report),
        [
            finding("helmCrdsNotUpgraded", "warning", "gizmos.example.com"),
            finding("helmCrdsNotUpgraded", "warning", "widgets.example.com"),
        ]
    );
    let new_crd = message_on(&report, "helmCrdsNotUpgraded", "gizmos");
    assert!(
        new_crd.starts_with("helm upgrade does not apply this new CRD of crds/: ")
            && new_crd.contains("so the cluster does not get it"),
        "{new_crd}"
    );
    let msg = message_on(&report, "helmCrdsNotUpgraded", "widgets");
    assert!(
        msg.starts_with("helm upgrade does not apply this change of crds/: ")
            && msg.contains("the 2 field(s) this release adds are pruned")
            && msg.contains("(`kubectl crd-safety apply -f new/crds`)"),
        "{msg}"
    );
    // An unchanged release says nothing of delivery.
    let (code, same) = {
        std::fs::remove_dir_all(d.join("new")).expect("removed");
        chart(
            &d.join("new"),
            "op",
            "1.0.1",
            &[("widgets", &["a"], Layout::Crds)],
        );
        diff(d, helm)
    };
    assert_eq!(code, 0);
    assert_eq!(delivery(&same), []);
}

#[test]
fn helm_uninstall_deleting_templated_crds_is_said_once_per_chart() {
    let Some(helm) = helm_dir() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    let crds: &[(&str, &[&str], Layout)] = &[
        ("widgets", &["a"], Layout::Templates),
        ("gizmos", &["a"], Layout::Templates),
        ("kept", &["a"], Layout::TemplatesKept),
    ];
    chart(&d.join("old"), "op", "1.0.0", crds);
    chart(&d.join("new"), "op", "1.0.1", crds);
    let (code, report) = diff(d, helm);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        delivery(&report),
        [finding(
            "helmUninstallDeletes",
            "warning",
            "gizmos.example.com"
        )]
    );
    let msg = message(&report, "helmUninstallDeletes");
    assert!(
        msg.starts_with("helm uninstall of new deletes 2 CRD(s) of its templates/ (gizmos.example.com, widgets.example.com)"),
        "{msg}"
    );
}
