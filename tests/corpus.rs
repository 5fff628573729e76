//! Every upgrade pair of the shared corpus (`../shared/corpus`, real CRDs of
//! public operators across releases) compares without a tool error, and the
//! pairs PAIRS.md marks UNSAFE are flagged with the checks that match its
//! reasons, except the few [`NOT_BREAKING`] lists, checked by hand, which
//! must not be. Stored versions come from the project's history in the corpus,
//! as PAIRS.md computes them: every version that was the storage version in
//! a release up to the old one. Each pair is read as `diff` reads it, the
//! new CRDs judged by `invalidCrd` while they are parsed, and the report
//! must be the one judging them during the comparison gives.
//!
//! Outside CI a missing corpus skips the test with a notice; with CI=true it
//! fails.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use support::corpus::corpus_dir;

use crd_safety::compare::{Check, Severity};
use crd_safety::config::Config;
use crd_safety::diff::{StoredVersionsArg, diff, diff_judged, load};
use crd_safety::manifest::{Source, SourceOptions};
use serde_json::Value;

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One release: its name and the (CRD, storage version) pairs it ships.
type Release = (String, Vec<(String, String)>);

/// Releases per project, in manifest order (oldest first).
fn storage_history(manifest: &Value) -> BTreeMap<String, Vec<Release>> {
    let mut by_project: BTreeMap<String, Vec<Release>> = BTreeMap::new();
    for entry in manifest.as_array().into_iter().flatten() {
        let project = entry["project"].as_str().unwrap_or_default().to_string();
        let release = entry["release"].as_str().unwrap_or_default().to_string();
        let releases = by_project.entry(project).or_default();
        if releases.last().map(|(r, _)| r) != Some(&release) {
            releases.push((release.clone(), Vec::new()));
        }
        let current = &mut releases.last_mut().expect("pushed above").1;
        for pair in entry["crd_versions"].as_array().into_iter().flatten() {
            let (Some(crd), Some(version)) = (pair[0].as_str(), pair[1].as_str()) else {
                continue;
            };
            if let Some(v) = version.strip_suffix('*') {
                current.push((crd.to_string(), v.to_string()));
            }
        }
    }
    by_project
}

fn stored_versions_for(
    history: &[(String, Vec<(String, String)>)],
    old_release: &str,
) -> StoredVersionsArg {
    let mut arg = StoredVersionsArg::default();
    let upto = history
        .iter()
        .position(|(r, _)| r == old_release)
        .map_or(history.len(), |i| i + 1);
    for (_, storage) in &history[..upto] {
        for (crd, v) in storage {
            let list = arg.by_crd.entry(crd.clone()).or_default();
            if !list.contains(v) {
                list.push(v.clone());
            }
        }
    }
    arg
}

/// The checks that answer one of PAIRS.md's reasons.
fn expected_checks(issue: &str) -> Option<(Option<String>, &'static [Check])> {
    let category = issue.split(']').next()?.trim_start_matches('[');
    Some(match category {
        "storage" => (None, &[Check::StoredVersionRemoval]),
        "scope" => (None, &[Check::Scope]),
        "client" => (None, &[Check::ServedVersionRemoval]),
        "identity" => (None, &[Check::Names]),
        "schema" => {
            // "[schema] v1alpha2: required added x1, e.g. .spec.csr"
            let rest = issue.split("] ").nth(1)?;
            let (version, what) = rest.split_once(": ")?;
            let kind = what.split(" x").next()?;
            let checks: &'static [Check] = match kind {
                "required added" => &[Check::Required],
                "fields removed" => &[Check::ExistingFieldRemoval],
                "type changed" => &[Check::Type],
                "enum added" | "enum narrowed" => &[Check::Enum],
                "bounds tightened" => &[
                    Check::Minimum,
                    Check::Maximum,
                    Check::MinLength,
                    Check::MaxLength,
                    Check::MinItems,
                    Check::MaxItems,
                    Check::MinProperties,
                    Check::MaxProperties,
                ],
                "preserve unknown removed" => &[Check::PreserveUnknownFields],
                "nullable removed" => &[Check::Nullable],
                _ => return None,
            };
            (Some(version.to_string()), checks)
        }
        _ => return None,
    })
}

/// PAIRS.md reasons checked by hand and found not to break anything: the
/// pair's old release, the CRD, the start of the reason, the schema path
/// it names, and why. Such a reason must not be flagged (warning or above)
/// at that path, and an entry that no longer matches a reason fails too,
/// so the list cannot go stale.
const NOT_BREAKING: &[(&str, &str, &str, &str, &str)] = &[(
    "prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0",
    "scrapeconfigs.monitoring.coreos.com",
    "[schema] v1alpha1: enum added",
    "^.spec.ovhcloudSDConfigs[*].service",
    "v0.16.0 already required the same enum, twice, under allOf; v0.18.0 writes it once on the \
field: the same values are accepted",
)];

/// The [`NOT_BREAKING`] entry for this reason, if any.
fn not_breaking(old_dir: &str, crd: &str, issue: &str) -> Option<usize> {
    NOT_BREAKING
        .iter()
        .position(|(o, c, i, _, _)| *o == old_dir && *c == crd && issue.starts_with(i))
}

#[test]
fn every_corpus_pair_compares_and_unsafe_pairs_are_flagged_with_the_right_checks() {
    let Some(dir) = corpus_dir() else { return };
    let pairs = read_json(&dir.join("pairs.json"));
    let history = storage_history(&read_json(&dir.join("manifest.json")));
    let config = Config::default();
    let mut problems = Vec::new();
    let mut compared = 0usize;
    let mut checked_reasons = 0usize;
    let mut used = vec![false; NOT_BREAKING.len()];
    for pair in pairs.as_array().into_iter().flatten() {
        let project = pair["project"].as_str().unwrap_or_default();
        let old_dir = pair["old_dir"].as_str().unwrap_or_default();
        let new_dir = pair["new_dir"].as_str().unwrap_or_default();
        let label = format!("{old_dir} -> {new_dir}");
        let (old, new) = load(
            &[Source::Path(dir.join(old_dir))],
            &[Source::Path(dir.join(new_dir))],
            &SourceOptions::default(),
            &config,
        );
        let old = match old {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!("{label}: tool error on old side: {e}"));
                continue;
            }
        };
        let (new, verdicts) = match new {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!("{label}: tool error on new side: {e}"));
                continue;
            }
        };
        let stored = stored_versions_for(
            history.get(project).map(Vec::as_slice).unwrap_or_default(),
            pair["old"].as_str().unwrap_or_default(),
        );
        let report = diff_judged(&old, &new, &verdicts, &stored, &config);
        let as_json = |r| serde_json::to_value(r).expect("a report serializes");
        if as_json(&report) != as_json(&diff(&old, &new, &stored, &config)) {
            problems.push(format!(
                "{label}: the CRDs judged while read give another report"
            ));
        }
        compared += 1;
        if pair["verdict"] != "UNSAFE" {
            continue;
        }
        for (crd_name, crd) in pair["crds"].as_object().into_iter().flatten() {
            let Some(entry) = report.crds.iter().find(|c| &c.name == crd_name) else {
                problems.push(format!("{label}: {crd_name} missing from the report"));
                continue;
            };
            for issue in crd["issues"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if let Some(i) = not_breaking(old_dir, crd_name, issue) {
                    used[i] = true;
                    let path = NOT_BREAKING[i].3;
                    let flagged: Vec<String> = entry
                        .findings
                        .iter()
                        .filter(|f| f.severity >= Severity::Warning)
                        .filter(|f| f.path.as_deref() == Some(path))
                        .map(|f| format!("{} {}: {}", f.check, f.severity, f.message))
                        .collect();
                    if !flagged.is_empty() {
                        problems.push(format!(
                            "{label}: {crd_name}: {path} is not breaking ({}), yet flagged: {flagged:?}",
                            NOT_BREAKING[i].4
                        ));
                    }
                    continue;
                }
                let Some((version, checks)) = expected_checks(issue) else {
                    continue;
                };
                checked_reasons += 1;
                let found = entry.findings.iter().any(|f| {
                    checks.contains(&f.check)
                        && f.severity >= Severity::Warning
                        && version
                            .as_ref()
                            .is_none_or(|v| f.version.as_deref() == Some(v.as_str()))
                });
                if !found {
                    let got: BTreeSet<String> = entry
                        .findings
                        .iter()
                        .filter(|f| f.severity >= Severity::Warning)
                        .map(|f| format!("{}@{}", f.check, f.version.as_deref().unwrap_or("-")))
                        .collect();
                    problems.push(format!(
                        "{label}: {crd_name}: {issue:?} not flagged; got {got:?}"
                    ));
                }
            }
        }
    }
    for (entry, used) in NOT_BREAKING.iter().zip(&used) {
        if !used {
            problems.push(format!("NOT_BREAKING entry matches no reason: {entry:?}"));
        }
    }
    eprintln!("compared {compared} corpus pairs, checked {checked_reasons} unsafe reasons");
    assert!(compared >= 170, "only {compared} pairs compared");
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
