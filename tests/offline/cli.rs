//! The binary from the outside: what a user sees for each output format,
//! exit codes, and one clear line for every kind of bad input.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::run::run;
use support::runs::assert_has;

const OLD: &str = "examples/widgets/old.yaml";
const NEW: &str = "examples/widgets/new.yaml";

fn temp_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("temp file is written");
    path.display().to_string()
}

/// Error lines name temp paths; show them relative to the temp dir.
fn relative(text: &str, dir: &tempfile::TempDir) -> String {
    text.replace(&format!("{}/", dir.path().display()), "")
}

/// At 80 columns every line fits, and what cannot be read in pieces (a
/// check id, a version, a file name) is never cut.
#[test]
fn an_80_column_terminal_gets_whole_words() {
    let absolute_old = format!("{}/{OLD}", env!("CARGO_MANIFEST_DIR"));
    let r = support::run::run_in_columns(80, &["diff", &absolute_old, NEW], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    for line in r.stdout.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    for whole in [
        "storedVersionRemoval",
        "existingFieldRemoval",
        "servedVersionRemoval",
        "legacyMode",
        "v1alpha1",
        "widgets.example.com",
        "examples/widgets/new.yaml:3",
    ] {
        assert!(r.stdout.contains(whole), "{whole} is cut:\n{}", r.stdout);
    }
    // A source under the working directory is shown as the user would type it.
    assert_has(&r.stdout, "old: examples/widgets/old.yaml:4");
    insta::assert_snapshot!("widgets_table_80", r.stdout);
}

#[test]
fn an_unsafe_upgrade_prints_a_table_per_crd_and_exits_1() {
    let r = run(&["diff", OLD, NEW], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    insta::assert_snapshot!("widgets_table", r.stdout);
}

#[test]
fn the_table_lists_info_findings_on_request() {
    let r = run(&["diff", OLD, NEW, "--show-info"], None);
    assert!(r.stdout.contains("description"));
    let hidden = run(&["diff", OLD, NEW], None);
    assert!(
        hidden
            .stdout
            .contains("2 info findings hidden (--show-info to list)")
    );
}

#[test]
fn markdown_output_is_ready_for_a_pull_request_comment() {
    let r = run(&["diff", OLD, NEW, "-o", "markdown"], None);
    assert_eq!(r.code, 1);
    insta::assert_snapshot!("widgets_markdown", r.stdout);
}

#[test]
fn json_output_keeps_its_documented_contract() {
    let r = run(&["diff", OLD, NEW, "-o", "json"], None);
    assert_eq!(r.code, 1);
    let v: Value = serde_json::from_str(&r.stdout).expect("stdout is JSON");
    let crd = &v["crds"][0];
    assert_eq!(crd["name"], "widgets.example.com");
    assert_eq!(crd["status"], "unsafe");
    assert_eq!(
        crd["storedVersions"]["versions"],
        serde_json::json!(["v1alpha1", "v1"])
    );
    assert_eq!(crd["storedVersions"]["source"], "status");
    let findings = crd["findings"].as_array().expect("findings is a list");
    for f in findings {
        for key in [
            "check", "severity", "version", "path", "message", "old", "new",
        ] {
            assert!(f.get(key).is_some(), "finding lacks {key}: {f}");
        }
        assert!(matches!(
            f["severity"].as_str(),
            Some("error" | "warning" | "info")
        ));
    }
    let stored = findings
        .iter()
        .find(|f| f["check"] == "storedVersionRemoval")
        .expect("stored version removal is reported");
    assert_eq!(stored["severity"], "error");
    assert_eq!(stored["version"], "v1alpha1");
    assert!(
        stored["path"].is_null(),
        "CRD-wide findings have a null path"
    );
    let min = findings
        .iter()
        .find(|f| f["check"] == "minimum")
        .expect("minimum is reported");
    assert_eq!(min["path"], "^.spec.size");
    assert_eq!(
        (min["old"].as_i64(), min["new"].as_i64()),
        (Some(1), Some(2))
    );
    let s = &v["summary"];
    assert_eq!(s["crds"], 1);
    assert_eq!(s["unsafeCrds"], 1);
    assert_eq!(s["failed"], true);
    assert_eq!(
        s["errors"].as_u64(),
        Some(findings.iter().filter(|f| f["severity"] == "error").count() as u64)
    );
    assert_eq!(v["mode"], "error");
    assert_eq!(v["failMode"], "closed");
}

#[test]
fn yaml_output_has_the_same_structure_as_json() {
    let j: Value =
        serde_json::from_str(&run(&["diff", OLD, NEW, "-o", "json"], None).stdout).expect("json");
    let y: Value =
        serde_saphyr::from_str(&run(&["diff", OLD, NEW, "-o", "yaml"], None).stdout).expect("yaml");
    assert_eq!(j, y);
}

#[test]
fn a_safe_upgrade_exits_0() {
    let r = run(
        &[
            "diff",
            "examples/safe-upgrade/old.yaml",
            "examples/safe-upgrade/new.yaml",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("gadgets.example.com  SAFE"));
    assert!(
        r.stdout.contains("storedVersions: v1 (ASSUMED"),
        "the assumption is spelled out"
    );
}

#[test]
fn warn_mode_reports_errors_but_exits_0() {
    let r = run(&["diff", OLD, NEW, "--mode", "warn"], None);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("storedVersionRemoval"));
    assert!(r.stdout.contains("(mode: warn, not failing)"));
}

#[test]
fn a_config_file_changes_levels_and_records_exceptions() {
    let r = run(
        &[
            "diff",
            OLD,
            NEW,
            "--config",
            "examples/crd-safety.yaml",
            "-o",
            "json",
        ],
        None,
    );
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    let crd = &v["crds"][0];
    let checks: Vec<&str> = crd["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["check"].as_str())
        .collect();
    assert!(
        !checks.contains(&"description"),
        "description is ignored by the example config"
    );
    assert!(
        !checks.contains(&"existingFieldRemoval"),
        "legacyMode removal is excepted"
    );
    assert_eq!(crd["excepted"][0]["check"], "existingFieldRemoval");
    assert_eq!(crd["excepted"][0]["path"], "^.spec.legacyMode");
    assert!(
        crd["excepted"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("never read"))
    );
}

#[test]
fn stored_versions_from_the_flag_replace_the_assumption() {
    let r = run(
        &[
            "diff",
            "examples/conversion-none/old.yaml",
            "examples/conversion-none/new.yaml",
            "--stored-versions",
            "sprockets.example.com=v1alpha1,v1beta1",
            "-o",
            "json",
        ],
        None,
    );
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["crds"][0]["storedVersions"]["source"], "flag");
    let loss = v["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["check"] == "storedVersionRemoval" && f["version"] == "v1alpha1");
    assert!(
        loss.is_some(),
        "v1alpha1 is listed as stored and is absent from the new CRD"
    );
}

#[test]
fn the_old_side_can_come_from_stdin() {
    let old = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(OLD))
        .expect("example exists");
    let r = run(&["diff", "-", NEW, "-o", "json"], Some(&old));
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["crds"][0]["oldSource"], "<stdin>:4");
}

#[test]
fn a_directory_is_read_recursively_and_other_kinds_are_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("nested")).expect("mkdir");
    let crd =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(NEW)).expect("example");
    temp_file(&dir, "nested/crd.yaml", &crd);
    temp_file(
        &dir,
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
    );
    temp_file(&dir, "notes.txt", "not yaml: [\n");
    let r = run(
        &["diff", NEW, &dir.path().display().to_string(), "-o", "json"],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["summary"]["skippedDocuments"], 1);
    assert_eq!(v["skippedDocuments"][0]["kind"], "v1 Namespace");
}

#[test]
fn bad_input_gets_one_clear_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crd =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(NEW)).expect("example");
    let cases = [
        ("broken.yaml", "apiVersion: v1\nkind: [oops\n".to_string(), "broken.yaml:2: invalid YAML"),
        ("broken.json", "{\"a\": }".to_string(), "broken.json:1: invalid JSON"),
        ("scalar.yaml", "hello\n".to_string(), "scalar.yaml:1: not a Kubernetes object"),
        (
            "other.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n".to_string(),
            "other.yaml: no CustomResourceDefinition found (1 document(s) read, 1 of another kind)",
        ),
        (
            "noversions.yaml",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b.c}\nspec: {group: b.c, scope: Namespaced, names: {kind: A, plural: a}, versions: []}\n".to_string(),
            "noversions.yaml:1: CRD a.b.c: spec.versions is empty",
        ),
        ("dup.yaml", format!("{crd}---\n{crd}"), "CRD widgets.example.com is defined twice (first at dup.yaml:3)"),
    ];
    for (name, text, want) in cases {
        let path = temp_file(&dir, name, &text);
        let r = run(&["diff", NEW, &path], None);
        let stderr = relative(&r.stderr, &dir);
        assert_eq!(r.code, 2, "{name}: {stderr}");
        assert!(r.stdout.is_empty(), "{name}: nothing on stdout");
        assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
        assert!(
            stderr.contains(want),
            "{name}: {stderr:?} should contain {want:?}"
        );
        assert!(!stderr.contains("panicked"), "{name}");
    }
}

#[test]
fn lint_reports_what_the_api_server_would_refuse() {
    let r = run(
        &["lint", "examples/invalid-crd/gadgets.yaml", "-o", "json"],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["kubeVersion"], "1.37");
    let paths: Vec<&str> = v["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "invalidCrd")
        .filter_map(|f| f["path"].as_str())
        .collect();
    // Structural errors hide the default and CEL checks, as on the server.
    assert_eq!(
        paths,
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[settings].type",
            "spec.validation.openAPIV3Schema.properties[spec].properties[ports].items.properties[protocol].default",
        ]
    );
    assert_eq!(v["kubeVersionSource"], "default");
    let table = run(&["lint", "examples/invalid-crd/gadgets.yaml"], None);
    assert_has(&table.stdout, "(CRD rules of Kubernetes 1.37)");
    // A version the user chose is said to be theirs.
    let chosen = run(
        &[
            "lint",
            "examples/invalid-crd/gadgets.yaml",
            "--kube-version",
            "1.31",
        ],
        None,
    );
    assert!(
        chosen
            .stdout
            .contains("(CRD rules of Kubernetes 1.31, from --kube-version)"),
        "{}",
        chosen.stdout
    );
}

#[test]
fn lint_gives_the_servers_cost_verdict_and_the_bounds_that_fix_it() {
    let example = "examples/invalid-crd/backups.yaml";
    let r = run(&["lint", example, "-o", "json"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    let rule = "spec.validation.openAPIV3Schema.properties[spec].properties[targets].items.x-kubernetes-validations[0].rule";
    let findings = v["crds"][0]["findings"].as_array().expect("findings");
    let over = findings
        .iter()
        .find(|f| {
            f["path"] == rule
                && f["message"].as_str().is_some_and(|m| {
                    m.contains("estimated rule cost exceeds budget by factor of more than 100x")
                })
        })
        .expect("a per-rule cost finding");
    let message = over["message"].as_str().unwrap_or("");
    assert_has(message, "maxLength on self.host");
    assert_has(message, "maxItems");
    // With the bounds declared, the same rule fits the budget.
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(example))
        .expect("example")
        .replace(
            "type: array\n",
            "type: array\n                maxItems: 32\n",
        )
        .replace(
            "host: {type: string}",
            "host: {type: string, maxLength: 253}",
        );
    let bounded = temp_file(&dir, "bounded.yaml", &text);
    let r = run(&["lint", &bounded], None);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

#[test]
fn two_storage_versions_are_a_finding_not_a_stop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crd =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(NEW)).expect("example");
    let text = crd.replace(
        "  - name: v1\n",
        "  - name: v2\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object}}\n  - name: v1\n",
    );
    let path = temp_file(&dir, "twostorage.yaml", &text);
    let r = run(&["diff", NEW, &path, "-o", "json"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    let invalid: Vec<&Value> = v["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "invalidCrd")
        .collect();
    assert!(
        invalid.iter().any(|f| f["path"] == "spec.versions"
            && f["message"]
                .as_str()
                .is_some_and(|m| m.contains("exactly one version marked as storage version"))),
        "{invalid:?}"
    );
}

#[test]
fn an_unknown_kube_version_is_a_usage_error() {
    let r = run(&["diff", OLD, NEW, "--kube-version", "1.99"], None);
    assert_eq!(r.code, 2);
    assert_has(&r.stderr, "not supported");
}

#[test]
fn usage_errors_exit_2() {
    let missing = run(&["diff", NEW, "does/not/exist.yaml"], None);
    assert_eq!(missing.code, 2);
    assert!(
        missing
            .stderr
            .starts_with("error: does/not/exist.yaml: No such file or directory"),
        "{}",
        missing.stderr
    );
    let both_stdin = run(&["diff", "-", "-"], None);
    assert_eq!(both_stdin.code, 2);
    assert!(
        both_stdin
            .stderr
            .contains("only one of OLD and NEW can be -")
    );
    let no_args = run(&["diff"], None);
    assert_eq!(no_args.code, 2);
    let bad_flag = run(&["diff", OLD, NEW, "--stored-versions", "x="], None);
    assert_eq!(bad_flag.code, 2);
}

#[test]
fn a_bad_config_is_refused_naming_the_valid_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = temp_file(&dir, "c.yaml", "checks:\n  enumz: ignore\n");
    let r = run(&["diff", OLD, NEW, "--config", &path], None);
    assert_eq!(r.code, 2);
    let stderr = relative(&r.stderr, &dir);
    assert!(
        stderr.starts_with("error: c.yaml: checks: unknown check \"enumz\"; valid checks: scope,"),
        "{stderr}"
    );
}

#[test]
fn color_is_used_only_when_asked_or_on_a_terminal() {
    let plain = run(&["diff", OLD, NEW], None);
    assert!(
        !plain.stdout.contains('\u{1b}'),
        "no escape codes when piped"
    );
    let forced = run(&["diff", OLD, NEW, "--color", "always"], None);
    assert!(forced.stdout.contains("\u{1b}["), "--color always colors");
}

#[test]
fn the_checks_command_lists_the_whole_catalog() {
    let r = run(&["checks"], None);
    assert_eq!(r.code, 0);
    for c in crd_safety::compare::Check::ALL {
        assert!(r.stdout.contains(c.id()), "{} missing", c.id());
    }
}

#[test]
fn help_documents_the_exit_codes() {
    let r = run(&["diff", "--help"], None);
    assert_eq!(r.code, 0);
    for line in [
        "0  no error findings",
        "1  at least one error finding",
        "2  usage",
        "3  cluster error",
    ] {
        assert!(r.stdout.contains(line), "{line}");
    }
}

#[test]
fn every_command_shows_examples_that_name_it_and_its_required_inputs() {
    for command in ["diff", "apply-check", "apply", "lint", "migrate", "serve"] {
        let r = run(&[command, "--help"], None);
        assert_eq!(r.code, 0, "{command}");
        let examples = r
            .stdout
            .split_once("Examples:\n")
            .map(|(_, rest)| rest)
            .unwrap_or_else(|| panic!("{command} --help has no Examples:\n{}", r.stdout));
        let first = examples.lines().find(|l| !l.trim_start().starts_with('#'));
        assert!(
            first.is_some_and(|l| l.contains(&format!(" {command} "))),
            "{command}: {first:?}"
        );
        assert!(
            examples.contains("Exit codes:"),
            "{command}: exit codes after examples"
        );
    }
    // Required inputs show in the usage line, where kubectl users look.
    let r = run(&["apply-check", "--help"], None);
    assert!(
        r.stdout
            .contains("Usage: kubectl crd-safety apply-check (-f PATH... | -k DIR)")
    );
}

#[test]
fn each_kubernetes_version_is_judged_by_its_own_cel_libraries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let with_rule = |name: &str, rule: &str| {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                        "type": "object", "properties": {"tags": {"type": "array", "maxItems": 8,
                            "items": {"type": "string", "maxLength": 16}}}}}}}}]}});
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
            json!([{"rule": rule}]);
        let path = dir.path().join(name);
        std::fs::write(&path, crd.to_string()).expect("write");
        path.display().to_string()
    };
    let lint = |path: &str, version: &str| {
        run(
            &["lint", path, "--kube-version", version, "-o", "json"],
            None,
        )
    };
    // The lists library of 1.34 reaches new rules from 1.35, as the
    // servers compile them (checked against 1.34 and 1.37 API servers).
    let distinct = with_rule(
        "distinct.json",
        "self.tags.distinct().size() == self.tags.size()",
    );
    assert_eq!(lint(&distinct, "1.37").code, 0);
    assert_eq!(lint(&distinct, "1.35").code, 0);
    let refused = lint(&distinct, "1.34");
    assert_eq!(refused.code, 1);
    assert!(
        refused
            .stdout
            .contains("not available to new CRD rules before Kubernetes 1.35"),
        "{}",
        refused.stdout
    );
    assert_eq!(lint(&distinct, "1.33").code, 1);
    // `first` comes with the CEL of 1.33 (checked against a 1.30 server).
    let first = with_rule("first.json", "self.tags.first().orValue('') != 'x'");
    assert_eq!(lint(&first, "1.33").code, 0);
    assert_eq!(lint(&first, "1.30").code, 1);
}

#[test]
fn a_missing_kubeconfig_is_named_once_like_kubectl_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nowhere").join("config");
    let missing = missing.display().to_string();
    let r = run(
        &[
            "apply-check",
            "-f",
            "examples/widgets/new.yaml",
            "--kubeconfig",
            &missing,
        ],
        None,
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!("error: kubeconfig: {missing}: no such file or directory\n")
    );
}

/// Every offline report, in JSON and in YAML, holds to the documented
/// output contract (`docs/output.schema.json`); the live tests hold theirs
/// (apply-check, `--objects`, apply, migrate) to it through `Run::json`.
#[test]
fn every_offline_report_holds_to_the_output_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let baseline = dir.path().join("baseline.yaml");
    let baseline = baseline.display().to_string();
    let written = run(&["diff", OLD, NEW, "--write-baseline", &baseline], None);
    assert_eq!(written.code, 0, "{}", written.stderr);
    let runs: [&[&str]; 6] = [
        &["diff", OLD, NEW],
        &[
            "diff",
            "examples/conversion-none/old.yaml",
            "examples/conversion-none/new.yaml",
        ],
        &[
            "diff",
            "examples/safe-upgrade/old.yaml",
            "examples/safe-upgrade/new.yaml",
        ],
        &["lint", "examples/invalid-crd"],
        // Accepted by the baseline, one entry stale (the CRD is the same).
        &["diff", OLD, OLD, "--baseline", &baseline],
        &["diff", OLD, NEW, "--config", "examples/crd-safety.yaml"],
    ];
    for args in runs {
        for format in ["json", "yaml"] {
            let r = run(&[args, &["-o", format]].concat(), None);
            assert!(matches!(r.code, 0 | 1), "{args:?}: {}", r.stderr);
            let value: Value = if format == "json" {
                serde_json::from_str(&r.stdout).expect("JSON")
            } else {
                serde_saphyr::from_str(&r.stdout).expect("YAML")
            };
            let errors = support::contract::violations(&value);
            assert!(errors.is_empty(), "{args:?} -o {format}: {errors:#?}");
        }
    }
}

/// The schema is strict: a field it does not know, or a value outside an
/// enum, is a violation, so the contract cannot drift unnoticed.
#[test]
fn the_output_schema_refuses_a_report_that_drifted() {
    let mut report = run(&["diff", OLD, NEW, "-o", "json"], None).json();
    report["crds"][0]["findings"][0]["severity"] = "fatal".into();
    report["summary"]["surprise"] = 1.into();
    let errors = support::contract::violations(&report);
    assert_eq!(errors.len(), 2, "{errors:#?}");
}

/// A CRD with `spec` as given, for the witness tests.
fn crd_with_spec(spec: Value) -> String {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gauges.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Gauge", "plural": "gauges"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": spec}}}}]}})
    .to_string()
}

fn gauge_spec() -> Value {
    json!({"type": "object", "properties": {
        "size": {"type": "integer", "minimum": 0, "maximum": 10},
        "name": {"type": "string", "maxLength": 8},
        "label": {"type": "string"}}})
}

/// An error about a new rule or a tightened keyword names a value that the
/// old schema allows and the new one refuses, so a reviewer can check it
/// at once; the JSON report carries the whole value.
#[test]
fn errors_name_a_value_the_old_schema_allows_and_the_change_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = temp_file(&dir, "old.json", &crd_with_spec(gauge_spec()));
    let mut new_spec = gauge_spec();
    new_spec["properties"]["name"]["maxLength"] = json!(4);
    new_spec["x-kubernetes-validations"] = json!([
        {"rule": "!has(self.size) || self.size < 10", "message": "size below 10"},
        // Fails only on a value no candidate is: an error without a witness.
        {"rule": "!has(self.label) || self.label != 'ab' + 'cd'"},
    ]);
    let new = temp_file(&dir, "new.json", &crd_with_spec(new_spec));
    let r = run(&["diff", &old, &new], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    insta::assert_snapshot!("witness_table", relative(&r.stdout, &dir));

    let report = run(&["diff", &old, &new, "-o", "json"], None).json();
    let findings = report["crds"][0]["findings"].as_array().expect("findings");
    let witness = |check: &str, part: &str| {
        findings
            .iter()
            .find(|f| {
                f["check"] == check && f["message"].as_str().is_some_and(|m| m.contains(part))
            })
            .unwrap_or_else(|| panic!("no {check} finding with {part}: {findings:#?}"))
            .get("witness")
            .cloned()
    };
    assert_eq!(
        witness("xValidations", "self.size < 10"),
        Some(json!({"size": 10}))
    );
    assert_eq!(
        witness("maxLength", "maxLength lowered"),
        Some(json!("aaaaa")),
        "one character past the new bound"
    );
    assert_eq!(witness("xValidations", "'ab' + 'cd'"), None);
    assert!(support::contract::violations(&report).is_empty());
}

/// A new default is what stored objects without the field read as: the
/// rule that refuses it is shown failing on an object without the field.
#[test]
fn a_witness_reads_the_object_through_the_new_defaults() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = |new: bool| {
        let mut s = json!({"type": "object", "properties": {
            "level": {"type": "integer", "enum": [1, 3, 5]}}});
        if new {
            s["properties"]["level"] =
                json!({"type": "integer", "enum": [0, 1, 3, 5], "default": 0});
            s["x-kubernetes-validations"] = json!([{"rule": "self.level > 0"}]);
        }
        crd_with_spec(s)
    };
    let old = temp_file(&dir, "old.json", &spec(false));
    let new = temp_file(&dir, "new.json", &spec(true));
    let report = run(&["diff", &old, &new, "-o", "json"], None).json();
    let rule = report["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["check"] == "xValidations")
        .expect("the rule is reported");
    assert_eq!(rule["severity"], "error");
    assert_eq!(rule["witness"], json!({}));
    assert!(
        rule["message"].as_str().is_some_and(|m| m.starts_with(
            "CEL rule added `self.level > 0` (e.g. `{}` passes the old schema and fails it): "
        )),
        "{rule}"
    );
}
