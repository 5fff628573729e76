//! The custom resources that come with NEW (`diff --objects PATH`, and the
//! objects in NEW's own files), judged against NEW without a cluster.

use crate::support;

use serde_json::Value;
use support::run::run;

const OLD: &str = "examples/widgets/old.yaml";
const NEW: &str = "examples/widgets/new.yaml";
const SAMPLES: &str = "examples/widgets/samples";

/// `(rule, path, count, examples)` of each `manifestObjects` finding.
fn manifest_objects(report: &Value) -> Vec<(String, String, u64, Vec<String>)> {
    report["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "manifestObjects")
        .map(|f| {
            let o = &f["objects"];
            (
                o["rule"].as_str().unwrap_or_default().to_string(),
                f["path"].as_str().unwrap_or_default().to_string(),
                o["count"].as_u64().unwrap_or_default(),
                o["examples"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.as_str().map(str::to_string))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn samples_old_accepts_and_new_refuses_or_prunes_are_errors_at_their_file_and_line() {
    let r = run(
        &["diff", OLD, NEW, "--objects", SAMPLES, "-o", "json"],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let found = manifest_objects(&r.json());
    let at = format!("{SAMPLES}/widgets.yaml:14 demo/legacy-blue");
    for (rule, path) in [
        ("enum", "^.spec.color"),
        ("required", "^.spec.owner"),
        ("pruned", "^.spec.legacyMode"),
    ] {
        assert!(
            found.iter().any(|(r, p, n, e)| r == rule
                && p == path
                && *n == 1
                && e.as_slice() == std::slice::from_ref(&at)),
            "{rule} at {path} for {at}: {found:#?}"
        );
    }
    assert!(
        !found
            .iter()
            .any(|(_, _, _, e)| e.iter().any(|x| x.contains("demo/small"))),
        "the valid sample is not reported: {found:#?}"
    );
    // The table lists them with their file and line.
    let table = run(&["diff", OLD, NEW, "--objects", SAMPLES], None);
    assert!(table.stdout.contains("manifestObjects"), "{}", table.stdout);
    assert!(table.stdout.contains("widgets.yaml:14"), "{}", table.stdout);
}

#[test]
fn objects_in_news_own_files_are_judged_too_and_other_documents_are_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let new = std::fs::read_to_string(NEW).expect("example");
    let samples = std::fs::read_to_string(format!("{SAMPLES}/widgets.yaml")).expect("samples");
    let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n";
    let bundle = dir.path().join("bundle.yaml");
    std::fs::write(&bundle, format!("{new}\n---\n{samples}\n---\n{config_map}")).expect("write");
    let r = run(
        &["diff", OLD, &bundle.display().to_string(), "-o", "json"],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let found = manifest_objects(&r.json());
    assert!(
        found.iter().any(|(rule, _, _, e)| rule == "enum"
            && e.iter()
                .any(|x| x.contains("bundle.yaml:") && x.ends_with("demo/legacy-blue"))),
        "{found:#?}"
    );
    // Without samples, the example's report has no such finding.
    let plain = run(&["diff", OLD, NEW, "-o", "json"], None);
    assert!(manifest_objects(&plain.json()).is_empty());
}

#[test]
fn an_objects_path_that_does_not_exist_is_a_clear_error() {
    let r = run(&["diff", OLD, NEW, "--objects", "no/such/dir"], None);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("no/such/dir"), "{}", r.stderr);
}

#[test]
fn sarif_points_at_the_object_not_at_the_schema() {
    let r = run(
        &["diff", OLD, NEW, "--objects", SAMPLES, "-o", "sarif"],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let sarif: Value = serde_json::from_str(&r.stdout).expect("SARIF is JSON");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    let ours: Vec<&Value> = results
        .iter()
        .filter(|x| x["ruleId"] == "manifestObjects")
        .collect();
    assert!(!ours.is_empty(), "{results:#?}");
    for x in ours {
        let place = &x["locations"][0]["physicalLocation"];
        assert!(
            place["artifactLocation"]["uri"]
                .as_str()
                .is_some_and(|u| u.ends_with("samples/widgets.yaml")),
            "{place}"
        );
        assert_eq!(place["region"]["startLine"], 14, "{place}");
    }
}

#[test]
fn lint_judges_the_objects_in_its_inputs_as_an_empty_cluster_would() {
    let dir = tempfile::tempdir().expect("tempdir");
    let new = std::fs::read_to_string(NEW).expect("example");
    let samples = std::fs::read_to_string(format!("{SAMPLES}/widgets.yaml")).expect("samples");
    let bundle = dir.path().join("bundle.yaml");
    std::fs::write(&bundle, format!("{new}\n---\n{samples}")).expect("write");
    let r = run(&["lint", &bundle.display().to_string(), "-o", "json"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let found = manifest_objects(&r.json());
    assert!(
        found.iter().any(|(rule, path, _, e)| rule == "enum"
            && path == "^.spec.color"
            && e.iter().any(|x| x.ends_with("demo/legacy-blue"))),
        "{found:#?}"
    );
    let plain = run(&["lint", NEW, "-o", "json"], None);
    assert!(manifest_objects(&plain.json()).is_empty());
}
