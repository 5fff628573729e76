//! Output for CI, through the binary: findings placed on their file, line
//! and column (`-o sarif`, `-o github`, JSON's `location`), the compact and
//! wide tables, and baselines from writing one to a finding that changes
//! again.

use crate::support;

use std::path::{Path, PathBuf};

use crd_safety::compare::Check;
use serde_json::Value;
use support::run::run;
use support::runs::assert_has;

const OLD: &str = "examples/widgets/old.yaml";
const NEW: &str = "examples/widgets/new.yaml";

/// The corpus pair used here: gateway-api v1.5 requires at least one rule
/// in an HTTPRoute (`minItems: 1` on `spec.rules`).
const CORPUS_OLD: &str = "../shared/corpus/gateway-api-standard/v1.4.1";
const CORPUS_NEW: &str = "../shared/corpus/gateway-api-standard/v1.5.1";

/// Whether the shared corpus is there; with CI=true it must be.
fn have_corpus() -> bool {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS_NEW);
    if dir.is_dir() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "corpus not found at {} (required when CI=true)",
        dir.display()
    );
    eprintln!("notice: corpus not found; skipping");
    false
}

/// Validates `log` against the SARIF 2.1.0 schema (tests/data, vendored
/// from the npm package @microsoft/jest-sarif; see tests/data/README.md),
/// and returns it parsed.
fn valid_sarif(log: &str) -> Value {
    let value: Value = serde_json::from_str(log).expect("-o sarif prints JSON");
    let errors = sarif_errors(&value);
    assert!(errors.is_empty(), "not valid SARIF 2.1.0: {errors:#?}");
    value
}

/// What the SARIF 2.1.0 schema finds wrong with `log`.
fn sarif_errors(log: &Value) -> Vec<String> {
    let schema_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sarif-schema-2.1.0.json");
    let text =
        std::fs::read_to_string(&schema_path).expect("the vendored SARIF schema is readable");
    // The published schema's `run.language` pattern has a stray `]`, a
    // literal in .NET's regexes (which SARIF's authors used) but an error in
    // ECMA-262's, which the validator checks schemas against: escape it, the
    // same meaning in both.
    let text = text.replace(
        r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#,
        r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#,
    );
    let schema: Value = serde_json::from_str(&text).expect("the SARIF schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    validator
        .iter_errors(log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn the_schema_check_refuses_a_log_that_is_not_sarif() {
    let r = run(&["diff", OLD, NEW, "-o", "sarif"], None);
    let mut log: Value = serde_json::from_str(&r.stdout).expect("JSON");
    log["runs"][0]["results"][0]["level"] = "fatal".into();
    log["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        0.into();
    assert_eq!(sarif_errors(&log).len(), 2, "{:#?}", sarif_errors(&log));
}

fn results(log: &Value) -> &Vec<Value> {
    log["runs"][0]["results"]
        .as_array()
        .expect("the run has results")
}

fn result_for<'a>(log: &'a Value, check: &str, path: &str) -> &'a Value {
    results(log)
        .iter()
        .find(|r| r["ruleId"] == check && r["properties"]["path"] == path)
        .unwrap_or_else(|| panic!("no {check} result at {path}"))
}

fn region(result: &Value) -> (&str, u64, u64) {
    let physical = &result["locations"][0]["physicalLocation"];
    (
        physical["artifactLocation"]["uri"].as_str().unwrap_or(""),
        physical["region"]["startLine"].as_u64().unwrap_or(0),
        physical["region"]["startColumn"].as_u64().unwrap_or(0),
    )
}

#[test]
fn sarif_has_a_rule_per_check_and_results_on_the_schema_node() {
    let r = run(&["diff", OLD, NEW, "-o", "sarif"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let log = valid_sarif(&r.stdout);
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .expect("rules");
    assert_eq!(rules.len(), Check::ALL.len());
    assert!(rules.iter().all(|r| r["help"]["text"].is_string()));
    // `minimum: 2` on line 35 of NEW, at column 17.
    let minimum = result_for(&log, "minimum", "^.spec.size");
    assert_eq!(region(minimum), ("examples/widgets/new.yaml", 35, 17));
    assert_eq!(minimum["level"], "error");
    assert_eq!(
        rules[minimum["ruleIndex"].as_u64().unwrap_or(0) as usize]["id"],
        "minimum"
    );
    // A removed field is where it was, in OLD.
    let removed = result_for(&log, "existingFieldRemoval", "^.spec.legacyMode");
    assert_eq!(region(removed), ("examples/widgets/old.yaml", 51, 15));
    let description = result_for(&log, "description", "^.spec.size");
    assert_eq!(description["level"], "note");
}

#[test]
fn github_output_annotates_each_finding_on_its_line() {
    let r = run(&["diff", OLD, NEW, "-o", "github"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines.contains(
        &"::error file=examples/widgets/new.yaml,line=35,col=17,title=crd-safety minimum%3A widgets.example.com v1 ^.spec.size::minimum raised 1 -> 2 (e.g. `1` passes the old schema and fails it): objects outside the new bound cannot be created again as they are (GitOps re-sync, restore) and are rejected by updates that touch the field; updates that leave it unchanged still succeed on Kubernetes 1.30+ (validation ratcheting), not before; check the stored objects first (apply-check --objects)"
    ), "{}", r.stdout);
    // A CRD-wide finding points at its spec node: the removed version entry.
    assert_has(
        &r.stdout,
        "::warning file=examples/widgets/old.yaml,line=19,col=5,title=crd-safety servedVersionRemoval%3A widgets.example.com v1alpha1::",
    );
    assert!(r.stdout.contains(
        "::notice file=examples/widgets/new.yaml,line=36,col=17,title=crd-safety description%3A"
    ));
    assert_eq!(
        lines.last(),
        Some(&"1 CRD: 1 unsafe (8 errors), 0 with warnings, 0 safe")
    );
}

/// The JSON `location` of the `minimum` finding when NEW is `text` on stdin.
fn minimum_location_from_stdin(text: &str) -> Value {
    let r = run(&["diff", OLD, "-", "-o", "json"], Some(text));
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON");
    v["crds"][0]["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["check"] == "minimum"))
        .expect("a minimum finding")["location"]
        .clone()
}

#[test]
fn findings_read_from_stdin_know_their_line_too() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(NEW))
        .expect("the example is readable");
    assert_eq!(
        minimum_location_from_stdin(&text),
        serde_json::json!({"file": "<stdin>", "line": 35, "column": 17})
    );
    // SARIF cannot point into stdin: the result keeps its logical location.
    let r = run(&["diff", OLD, "-", "-o", "sarif"], Some(&text));
    let log = valid_sarif(&r.stdout);
    let minimum = result_for(&log, "minimum", "^.spec.size");
    assert!(minimum["locations"][0]["physicalLocation"].is_null());
    assert_eq!(
        minimum["locations"][0]["logicalLocations"][0]["fullyQualifiedName"],
        "widgets.example.com v1 ^.spec.size"
    );
}

/// Positions are recorded while parsing, but a document the fast YAML path
/// leaves to serde-saphyr (here: an anchor) is placed by the second pass,
/// on the same line and column.
#[test]
fn a_document_with_an_anchor_is_placed_too() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(NEW))
        .expect("the example is readable")
        .replacen(
            "kind: CustomResourceDefinition",
            "kind: &k CustomResourceDefinition",
            1,
        );
    assert_eq!(
        minimum_location_from_stdin(&text),
        serde_json::json!({"file": "<stdin>", "line": 35, "column": 17})
    );
}

#[test]
fn a_corpus_pair_is_placed_on_its_lines_in_sarif_and_github_output() {
    if !have_corpus() {
        return;
    }
    let r = run(&["diff", CORPUS_OLD, CORPUS_NEW, "-o", "sarif"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let log = valid_sarif(&r.stdout);
    let file =
        "../shared/corpus/gateway-api-standard/v1.5.1/gateway.networking.k8s.io_httproutes.yaml";
    let bounded = results(&log)
        .iter()
        .find(|r| {
            r["ruleId"] == "minItems"
                && r["properties"]["version"] == "v1"
                && r["properties"]["path"] == "^.spec.rules"
        })
        .expect("minItems added to HTTPRoute rules");
    assert_eq!(region(bounded), (file, 3191, 17));
    let r = run(&["diff", CORPUS_OLD, CORPUS_NEW, "-o", "github"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains(&format!(
        "::error file={file},line=3191,col=17,title=crd-safety minItems%3A httproutes.gateway.networking.k8s.io v1 ^.spec.rules::minItems 1 added (e.g. `[]` passes the old schema and fails it): "
    )));
    // Every annotation is one line: nothing in a message breaks the command.
    for line in r.stdout.lines() {
        assert!(
            line.starts_with("::") || line.contains(" CRDs: "),
            "stray line: {line}"
        );
    }
}

#[test]
fn the_table_shows_what_changed_and_explains_each_check_once() {
    let r = run(&["diff", OLD, NEW], None);
    assert_eq!(r.code, 1);
    // (cli.rs pins the whole compact table: `widgets_table`.)
    assert_has(&r.stdout, "┆ minimum raised 1 -> 2 ");
    // The shared explanation of tightened rules is printed once per check,
    // not once per row.
    let why = "cannot be created again as they are";
    assert_eq!(r.stdout.matches(why).count(), 3, "{}", r.stdout);
    let wide = run(&["diff", OLD, NEW, "-o", "wide"], None);
    assert_eq!(wide.code, 1);
    insta::assert_snapshot!("widgets_wide_table", wide.stdout);
}

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// A copy of the widgets example to change.
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("temp dir");
        for (from, to) in [(OLD, "old.yaml"), (NEW, "new.yaml")] {
            std::fs::copy(
                Path::new(env!("CARGO_MANIFEST_DIR")).join(from),
                dir.path().join(to),
            )
            .expect("example copied");
        }
        Project { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn diff(&self, extra: &[&str]) -> support::run::Run {
        let (old, new) = (self.path("old.yaml"), self.path("new.yaml"));
        let mut args = vec!["diff", old.as_str(), new.as_str()];
        args.extend_from_slice(extra);
        run(&args, None)
    }

    fn edit_new(&self, from: &str, to: &str) {
        let path = PathBuf::from(self.path("new.yaml"));
        let text = std::fs::read_to_string(&path).expect("readable");
        assert!(text.contains(from), "fixture has {from}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("writable");
    }
}

#[test]
fn a_baseline_passes_until_a_finding_changes_again() {
    let p = Project::new();
    let baseline = p.path("baseline.yaml");
    let written = p.diff(&["--write-baseline", &baseline]);
    assert_eq!(written.code, 0, "{}", written.stderr);
    assert_has(&written.stderr, "wrote 10 findings to the baseline");
    let text = std::fs::read_to_string(&baseline).expect("the baseline is written");
    assert!(text.starts_with("# crd-safety baseline"), "{text}");
    assert_has(&text, "check: minimum");

    // Re-run: everything is baselined, nothing fails.
    let again = p.diff(&["--baseline", &baseline]);
    assert_eq!(again.code, 0, "{}", again.stdout);
    assert!(
        again
            .stdout
            .contains(
                "  baselined: minimum v1 ^.spec.size (minimum raised 1 -> 2 (e.g. `1` passes the old schema and fails it))"
            )
    );
    assert!(
        again
            .stdout
            .contains("; 10 findings accepted by the baseline"),
        "{}",
        again.stdout
    );

    // The minimum changes again: a new finding, and the old entry is stale.
    p.edit_new("minimum: 2", "minimum: 3");
    let changed = p.diff(&["--baseline", &baseline, "-o", "json"]);
    assert_eq!(changed.code, 1, "{}", changed.stderr);
    let v: Value = serde_json::from_str(&changed.stdout).expect("JSON");
    let findings: Vec<&str> = v["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| f["message"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(findings[0].starts_with("minimum raised 1 -> 3"));
    assert_eq!(v["crds"][0]["baselined"].as_array().map(Vec::len), Some(9));
    assert_eq!(v["summary"]["baselined"], 9);
    assert_eq!(v["summary"]["staleBaseline"], 1);
    assert_eq!(v["staleBaseline"][0]["check"], "minimum");
    assert_eq!(v["staleBaseline"][0]["path"], "^.spec.size");

    // Every format lists the baselined findings and the stale entry.
    let table = p.diff(&["--baseline", &baseline]);
    assert!(table.stdout.contains("stale baseline entries"));
    assert!(
        table
            .stdout
            .contains("  widgets.example.com minimum v1 ^.spec.size\n")
    );
    let markdown = p.diff(&["--baseline", &baseline, "-o", "markdown"]);
    assert!(markdown.stdout.contains("Accepted by the baseline:"));
    assert!(markdown.stdout.contains("### Stale baseline entries"));
    let github = p.diff(&["--baseline", &baseline, "-o", "github"]);
    assert!(
        github
            .stdout
            .contains("accepted by the baseline: enum widgets.example.com v1 ^.spec.color\n")
    );
    assert!(github.stdout.contains("::notice title=crd-safety%3A stale baseline entry::widgets.example.com minimum v1 ^.spec.size matches no finding any more"));
    let sarif = p.diff(&["--baseline", &baseline, "-o", "sarif"]);
    let log = valid_sarif(&sarif.stdout);
    let enum_result = result_for(&log, "enum", "^.spec.color");
    assert_eq!(enum_result["baselineState"], "unchanged");
    assert_eq!(enum_result["suppressions"][0]["kind"], "external");
    assert_eq!(
        result_for(&log, "minimum", "^.spec.size")["baselineState"],
        "new"
    );

    // Refreshing the baseline drops the stale entry and takes the new one.
    let refreshed = p.diff(&["--baseline", &baseline, "--write-baseline", &baseline]);
    assert_eq!(refreshed.code, 0, "{}", refreshed.stderr);
    let clean = p.diff(&["--baseline", &baseline, "-o", "json"]);
    let v: Value = serde_json::from_str(&clean.stdout).expect("JSON");
    assert_eq!(clean.code, 0);
    assert_eq!(v["summary"]["staleBaseline"], 0);
    assert_eq!(v["summary"]["baselined"], 10);
}

#[test]
fn a_malformed_baseline_is_one_error_line_with_its_line_number() {
    let p = Project::new();
    let baseline = p.path("baseline.yaml");
    std::fs::write(
        &baseline,
        "crdSafetyBaseline: 1\nfindings:\n- fingerprint: xyz\n  crd: widgets.example.com\n  check: enum\n",
    )
    .expect("writable");
    let r = p.diff(&["--baseline", &baseline]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr
            .replace(&format!("{}/", p.dir.path().display()), ""),
        "error: baseline.yaml:3: invalid baseline: fingerprint \"xyz\" is not 16 lower-case hex digits\n"
    );
    std::fs::write(&baseline, "findings: [oops\n").expect("writable");
    let r = p.diff(&["--baseline", &baseline]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
    assert_has(&r.stderr, "baseline.yaml:");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

#[test]
fn a_baseline_that_cannot_be_written_leaves_nothing_behind() {
    let p = Project::new();
    // A directory in the way: the temporary file is written, the rename fails.
    let target = p.path("baseline.yaml");
    std::fs::create_dir(&target).expect("dir created");
    let r = p.diff(&["--write-baseline", &target]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
    assert_has(&r.stderr, "cannot write the baseline");
    let leftovers: Vec<_> = std::fs::read_dir(p.dir.path())
        .expect("listable")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(Path::new(&target).is_dir());
}

#[test]
fn lint_places_the_api_servers_objections_on_the_schema_node() {
    let r = run(
        &["lint", "examples/invalid-crd/gadgets.yaml", "-o", "github"],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    // spec.settings has properties but no type: line 34 is `settings:`.
    assert_has(
        &r.stdout,
        "::error file=examples/invalid-crd/gadgets.yaml,line=34,col=17,title=crd-safety invalidCrd%3A ",
    );
    // A new CRD is at the start of its document.
    assert!(
        r.stdout
            .contains("::notice file=examples/invalid-crd/gadgets.yaml,line=6,col=1,title=crd-safety newCrd%3A gadgets.example.com::"),
        "{}",
        r.stdout
    );
}

#[test]
fn the_pre_commit_hook_runs_lint_on_the_files_it_is_given() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml"),
    )
    .expect("the hook file is readable");
    let hooks: Value = serde_saphyr::from_str(&text).expect("the hook file is YAML");
    let entry = hooks[0]["entry"].as_str().expect("the hook has an entry");
    let mut words = entry.split_whitespace();
    assert_eq!(words.next(), Some("kubectl-crd_safety"));
    // pre-commit appends the staged files to the entry.
    let mut args: Vec<&str> = words.collect();
    args.push("examples/invalid-crd/gadgets.yaml");
    let r = run(&args, None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains("invalidCrd"));
    args.pop();
    args.push("examples/safe-upgrade/new.yaml");
    assert_eq!(run(&args, None).code, 0);
}
