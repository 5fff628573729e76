//! Every upgrade pair of the shared corpus (`../shared/corpus`, real CRDs of
//! public operators across releases) compares without a tool error, and the
//! pairs PAIRS.md marks UNSAFE are flagged with the checks that match its
//! reasons, except the few [`NOT_BREAKING`] lists, checked by hand, which
//! must not be. Stored versions come from the project's history in the corpus,
//! as PAIRS.md computes them: every version that was the storage version in
//! a release up to the old one, or that such a release kept unserved. Each
//! pair is read as `diff` reads it, the new CRDs judged by `invalidCrd`
//! while they are parsed, and the report
//! must be the one judging them during the comparison gives.
//!
//! Outside CI a missing corpus skips the test with a notice; with CI=true it
//! fails.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use support::corpus::corpus_dir;
use support::runs::assert_has;

use crd_safety::command;
use crd_safety::compare::{Check, Severity};
use crd_safety::config::Config;
use crd_safety::engine::{StoredVersionsArg, diff, load};
use crd_safety::manifest::{Positions, Source, SourceOptions};
use crd_safety::report::Report;
use serde_json::Value;

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One release: its name and the (CRD, version) pairs that count as
/// stored history from it on.
type Release = (String, Vec<(String, String)>);

/// A release name's numbers (`v1.16.0` -> [1, 16, 0], `argocd-operator-0.0.15`
/// -> [0, 0, 15]), to order a project's releases oldest first:
/// manifest.json does not list them in order (external-secrets and Flux).
fn release_numbers(name: &str) -> Vec<u64> {
    let start = name
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(name.len());
    name[start..]
        .split(|c: char| !c.is_ascii_digit())
        .take_while(|part| !part.is_empty())
        .filter_map(|part| part.parse().ok())
        .collect()
}

/// Releases per project, oldest first, each with the versions it puts in
/// a cluster's stored history: its storage version (`v1*`), and the
/// versions it keeps only unserved (`v1alpha2(unserved)`), which a CRD
/// carries only because objects may still be stored in them. An entry
/// lists a CRD's versions comma-separated (`v1alpha2,v1beta1,v1*`).
fn storage_history(manifest: &Value) -> BTreeMap<String, Vec<Release>> {
    let mut by_project: BTreeMap<String, BTreeMap<String, Vec<(String, String)>>> = BTreeMap::new();
    for entry in manifest.as_array().into_iter().flatten() {
        let project = entry["project"].as_str().unwrap_or_default().to_string();
        let release = entry["release"].as_str().unwrap_or_default().to_string();
        let current = by_project
            .entry(project)
            .or_default()
            .entry(release)
            .or_default();
        for pair in entry["crd_versions"].as_array().into_iter().flatten() {
            let (Some(crd), Some(versions)) = (pair[0].as_str(), pair[1].as_str()) else {
                continue;
            };
            for version in versions.split(',').map(str::trim) {
                let stored = version
                    .strip_suffix('*')
                    .or_else(|| version.strip_suffix("(unserved)"));
                if let Some(v) = stored {
                    current.push((crd.to_string(), v.to_string()));
                }
            }
        }
    }
    by_project
        .into_iter()
        .map(|(project, releases)| {
            let mut releases: Vec<Release> = releases.into_iter().collect();
            releases.sort_by(|(a, _), (b, _)| {
                release_numbers(a)
                    .cmp(&release_numbers(b))
                    .then_with(|| a.cmp(b))
            });
            (project, releases)
        })
        .collect()
}

#[test]
fn the_storage_history_splits_version_lists_and_orders_releases() {
    let manifest = serde_json::json!([
        {"project": "p", "release": "v1.10.0", "crd_versions": [["a.x", "v1*,v1beta1(unserved)"]]},
        {"project": "p", "release": "v0.9.0", "crd_versions": [["a.x", "v1alpha2,v1beta1*"]]},
        {"project": "p", "release": "v1.2.0", "crd_versions": [["a.x", "v1beta1,v1*"]]},
    ]);
    let history = storage_history(&manifest);
    let names: Vec<&str> = history["p"].iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(names, ["v0.9.0", "v1.2.0", "v1.10.0"]);
    assert_eq!(
        history["p"][0].1,
        [("a.x".to_string(), "v1beta1".to_string())]
    );
    assert_eq!(
        history["p"][2].1,
        [
            ("a.x".to_string(), "v1".to_string()),
            ("a.x".to_string(), "v1beta1".to_string())
        ]
    );
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
const NOT_BREAKING: &[(&str, &str, &str, &str, &str)] = &[
    (
        "prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0",
        "scrapeconfigs.monitoring.coreos.com",
        "[schema] v1alpha1: enum added",
        "^.spec.ovhcloudSDConfigs[*].service",
        "v0.16.0 already required the same enum, twice, under allOf; v0.18.0 writes it once on the \
field: the same values are accepted",
    ),
    (
        "gateway-api-standard/v1.4.1",
        "backendtlspolicies.gateway.networking.k8s.io",
        "[schema] v1: bounds tightened",
        "^.spec.validation.wellKnownCACertificates",
        WELL_KNOWN_CA,
    ),
    (
        "gateway-api-experimental/v1.4.1",
        "backendtlspolicies.gateway.networking.k8s.io",
        "[schema] v1: bounds tightened",
        "^.spec.validation.wellKnownCACertificates",
        WELL_KNOWN_CA,
    ),
    (
        "gateway-api-experimental/v1.4.1",
        "backendtlspolicies.gateway.networking.k8s.io",
        "[schema] v1alpha3: bounds tightened",
        "^.spec.validation.wellKnownCACertificates",
        WELL_KNOWN_CA,
    ),
    (
        "gateway-api-experimental/v0.4.3",
        "gateways.gateway.networking.k8s.io",
        "[schema] v1alpha2: bounds tightened",
        "^.spec.addresses[*].type",
        "the old enum [IPAddress, Hostname, NamedAddress] is replaced by bounds and a pattern that \
all three values meet",
    ),
    (
        "karpenter/v0.33.0",
        "nodeclaims.karpenter.sh",
        "[schema] v1beta1: type changed",
        "^.spec.kubelet.kubeReserved{*}",
        KARPENTER_RESERVED,
    ),
    (
        "karpenter/v0.33.0",
        "nodepools.karpenter.sh",
        "[schema] v1beta1: type changed",
        "^.spec.template.spec.kubelet.kubeReserved{*}",
        KARPENTER_RESERVED,
    ),
];

/// Why Karpenter v0.37's string-only reserved resources break nothing.
const KARPENTER_RESERVED: &str = "the int-or-string values become strings, but v0.33's map rule \
`self.all(x, !self[x].startsWith('-'))` is an error on an integer value, so no stored object holds one \
(tests/live/fidelity.rs creates one on a real server and is refused)";

/// Why BackendTLSPolicy's v1.5 bounds break nothing.
const WELL_KNOWN_CA: &str = "the old enum [System] is replaced by minLength 1, maxLength 253 and a \
pattern, all of which System meets (created on a real server after the update)";

/// The [`NOT_BREAKING`] entry for this reason, if any.
fn not_breaking(old_dir: &str, crd: &str, issue: &str) -> Option<usize> {
    NOT_BREAKING
        .iter()
        .position(|(o, c, i, _, _)| *o == old_dir && *c == crd && issue.starts_with(i))
}

/// The false-alarm audit: error findings on the corpus pairs, by the check
/// that produced them, and the verdicts they make UNSAFE. Every change to
/// these figures is deliberate: a check that starts or stops firing on real
/// releases changes this table, and docs/checks.md ("How many errors are real")
/// gives the figures before and after the work that moved them.
const AUDIT_ERRORS: &[(&str, usize)] = &[
    ("additionalProperties", 4),
    ("allOf", 8),
    ("anyOf", 24),
    ("conversionDataLoss", 1042),
    ("default", 280),
    ("enum", 185),
    ("existingFieldRemoval", 396),
    ("fieldAddition", 110),
    ("format", 20),
    ("invalidCrd", 304),
    ("listType", 263),
    ("maxItems", 112),
    ("maxLength", 1211),
    ("maxProperties", 50),
    ("maximum", 135),
    ("minItems", 84),
    ("minLength", 1295),
    ("minProperties", 63),
    ("minimum", 247),
    ("oneOf", 60),
    ("pattern", 1309),
    ("preserveUnknownFields", 135),
    ("required", 468),
    ("scope", 2),
    ("storedVersionRemoval", 120),
    ("subresources", 11),
    ("type", 65),
    ("xValidations", 723),
];

/// Error findings per check, UNSAFE CRDs and UNSAFE pairs.
#[derive(Default)]
struct Audit {
    errors: BTreeMap<String, usize>,
    /// Of those, the ones that name a witness (a value the old schema
    /// allows and the new one refuses): they change only the message.
    witnessed: BTreeMap<String, usize>,
    unsafe_crds: usize,
    unsafe_pairs: usize,
}

impl Audit {
    fn count(&mut self, report: &crd_safety::report::Report) {
        let mut pair_unsafe = false;
        for crd in &report.crds {
            let errors = crd
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error);
            let mut crd_unsafe = false;
            for f in errors {
                *self.errors.entry(f.check.id().to_string()).or_default() += 1;
                if f.witness.is_some() {
                    *self.witnessed.entry(f.check.id().to_string()).or_default() += 1;
                }
                crd_unsafe = true;
            }
            self.unsafe_crds += usize::from(crd_unsafe);
            pair_unsafe |= crd_unsafe;
        }
        self.unsafe_pairs += usize::from(pair_unsafe);
    }

    fn total(&self) -> usize {
        self.errors.values().sum()
    }

    fn table(&self) -> String {
        let mut out = format!(
            "false-alarm audit: {} error findings, {} UNSAFE CRDs, {} UNSAFE pairs\n",
            self.total(),
            self.unsafe_crds,
            self.unsafe_pairs
        );
        for (check, n) in &self.errors {
            match self.witnessed.get(check) {
                Some(w) => out.push_str(&format!("  {check:<24} {n} ({w} with a witness)\n")),
                None => out.push_str(&format!("  {check:<24} {n}\n")),
            }
        }
        out
    }

    /// Where the figures differ from [`AUDIT_ERRORS`] and [`AUDIT_UNSAFE`].
    fn differences(&self) -> Vec<String> {
        let expected: BTreeMap<String, usize> = AUDIT_ERRORS
            .iter()
            .map(|(c, n)| (c.to_string(), *n))
            .collect();
        let mut out = Vec::new();
        if expected != self.errors {
            out.push(format!(
                "error findings per check changed: expected {expected:?}, got {:?}",
                self.errors
            ));
        }
        if (self.unsafe_crds, self.unsafe_pairs) != AUDIT_UNSAFE {
            out.push(format!(
                "UNSAFE (CRDs, pairs) changed: expected {AUDIT_UNSAFE:?}, got {:?}",
                (self.unsafe_crds, self.unsafe_pairs)
            ));
        }
        out
    }
}

/// UNSAFE CRDs and UNSAFE pairs of the audit.
const AUDIT_UNSAFE: (usize, usize) = (613, 144);

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
    let mut audit = Audit::default();
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
        let (new, _) = match new {
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
        // The report as `diff OLD_DIR NEW_DIR` makes it (large directories
        // a few CRDs at a time, the new CRDs judged as they are read) must
        // be the one made from both sides read whole.
        let request = command::diff::Request {
            old: vec![Source::Path(dir.join(old_dir))],
            new: vec![Source::Path(dir.join(new_dir))],
            sources: SourceOptions {
                positions: Positions::Never,
                ..SourceOptions::default()
            },
            stored: stored.clone(),
            config: config.clone(),
            ..command::diff::Request::default()
        };
        let report = match command::diff::run(&request) {
            Ok(diffed) => diffed.report,
            Err(e) => {
                problems.push(format!("{label}: diff failed: {e}"));
                continue;
            }
        };
        let as_json = |r| serde_json::to_value(r).expect("a report serializes");
        if as_json(&report) != as_json(&diff(&old, &new, &stored, &config)) {
            problems.push(format!(
                "{label}: `diff` gives another report than both sides read whole"
            ));
        }
        compared += 1;
        audit.count(&report);
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
    eprintln!("{}", audit.table());
    problems.extend(audit.differences());
    assert!(compared >= 170, "only {compared} pairs compared");
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The report of `diff OLD NEW` on two release directories of the corpus,
/// with the stored versions given (or assumed when `None`).
fn corpus_report(dir: &Path, old: &str, new: &str, stored: Option<&[&str]>) -> Report {
    let config = Config::default();
    let (old, new) = load(
        &[Source::Path(dir.join(old))],
        &[Source::Path(dir.join(new))],
        &SourceOptions::default(),
        &config,
    );
    let old = old.expect("old side loads");
    let (new, _) = new.expect("new side loads");
    let arg = StoredVersionsArg {
        all: stored.map(|s| s.iter().map(|v| v.to_string()).collect()),
        ..StoredVersionsArg::default()
    };
    diff(&old, &new, &arg, &config)
}

/// `(check, severity)` of every finding on `crd` at `path`.
fn at(report: &Report, crd: &str, path: &str) -> Vec<(String, Severity)> {
    report
        .crds
        .iter()
        .filter(|c| c.name == crd)
        .flat_map(|c| &c.findings)
        .filter(|f| f.path.as_deref() == Some(path))
        .map(|f| (f.check.id().to_string(), f.severity))
        .collect()
}

#[test]
fn real_upgrades_are_not_called_unsafe_for_errors_no_stored_object_can_trigger() {
    let Some(dir) = corpus_dir() else { return };
    // Gateway API v1.5: CEL rules on the new CORS filter, and an enum
    // replaced by bounds its one value meets.
    let gateway = corpus_report(
        &dir,
        "gateway-api-standard/v1.4.1",
        "gateway-api-standard/v1.5.1",
        None,
    );
    let filters = at(
        &gateway,
        "httproutes.gateway.networking.k8s.io",
        "^.spec.rules[*].filters[*]",
    );
    assert!(
        filters.iter().any(|(c, _)| c == "xValidations")
            && filters.iter().all(|(_, s)| *s == Severity::Info),
        "{filters:?}"
    );
    let tls = gateway
        .crds
        .iter()
        .find(|c| c.name == "backendtlspolicies.gateway.networking.k8s.io")
        .expect("BackendTLSPolicy compared");
    assert!(
        tls.findings.iter().all(|f| f.severity == Severity::Info),
        "{:?}",
        tls.findings
    );

    // Flux kustomize-controller: `required: [secretRef]` replaced by two
    // rules about the new configMapRef.
    let flux = corpus_report(
        &dir,
        "flux-kustomize-controller/v1.0.0",
        "flux-kustomize-controller/v1.8.0",
        None,
    );
    let kube_config = at(
        &flux,
        "kustomizations.kustomize.toolkit.fluxcd.io",
        "^.spec.kubeConfig",
    );
    let rules: Vec<&(String, Severity)> = kube_config
        .iter()
        .filter(|(c, _)| c == "xValidations")
        .collect();
    assert_eq!(rules.len(), 2, "{kube_config:?}");
    assert!(
        kube_config.iter().all(|(_, s)| *s == Severity::Info),
        "{kube_config:?}"
    );

    // cert-manager 1.7: Webhook -> None with a single version converts
    // nothing.
    let cert_manager = corpus_report(&dir, "cert-manager/v1.6.3", "cert-manager/v1.7.0", None);
    for crd in &cert_manager.crds {
        for f in crd.findings.iter().filter(|f| f.check == Check::Conversion) {
            assert_eq!(f.severity, Severity::Info, "{}: {}", crd.name, f.message);
        }
    }
}

#[test]
fn stored_versions_the_old_crd_cannot_have_are_ignored_with_a_warning() {
    let Some(dir) = corpus_dir() else { return };
    // cert-manager 1.7 defines only v1: a cluster cannot list v1alpha2.
    let report = corpus_report(
        &dir,
        "cert-manager/v1.7.0",
        "cert-manager/v1.12.0",
        Some(&["v1alpha2", "v1"]),
    );
    let certificates = report
        .crds
        .iter()
        .find(|c| c.name == "certificates.cert-manager.io")
        .expect("compared");
    let stored: Vec<(Severity, &str)> = certificates
        .findings
        .iter()
        .filter(|f| f.check == Check::StoredVersionRemoval)
        .map(|f| (f.severity, f.message.as_str()))
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0].0, Severity::Warning);
    assert_has(stored[0].1, "--stored-versions names v1alpha2");
    assert_has(stored[0].1, "ignored");
}

/// The webhook keeps a CRD without its schemas' JSON tree (the models hold
/// the schemas): its judgment must find exactly what a judgment of the
/// whole documents finds. The newest pair of every project of the corpus,
/// every CRD on both sides.
#[test]
fn the_webhooks_crds_without_schema_json_are_judged_as_the_whole_documents() {
    use crd_safety::crd::Crd;
    use crd_safety::webhook::review::findings_of;
    use std::sync::Arc;
    let Some(dir) = corpus_dir() else { return };
    let pairs = read_json(&dir.join("pairs.json"));
    let mut newest: BTreeMap<&str, &Value> = BTreeMap::new();
    for pair in pairs.as_array().into_iter().flatten() {
        newest.insert(pair["project"].as_str().unwrap_or_default(), pair);
    }
    let config = Config::default();
    let mut judged = 0usize;
    let mut with_findings = 0usize;
    for pair in newest.values() {
        let side = |key: &str| {
            crd_safety::manifest::load(&[Source::Path(
                dir.join(pair[key].as_str().unwrap_or_default()),
            )])
            .expect("corpus side loads")
        };
        let (old, new) = (side("old_dir"), side("new_dir"));
        for n in &new.crds {
            let Some(o) = old.crds.iter().find(|o| o.crd.name == n.crd.name) else {
                continue;
            };
            let whole = findings_of(Some(Arc::clone(&o.crd)), Arc::clone(&n.crd), &config);
            let stripped = findings_of(
                Some(Arc::new(Crd::clone(&o.crd).without_schema_json())),
                Arc::new(Crd::clone(&n.crd).without_schema_json()),
                &config,
            );
            assert_eq!(
                stripped, whole,
                "{} ({} -> {})",
                n.crd.name, pair["old_dir"], pair["new_dir"]
            );
            assert_eq!(
                Crd::clone(&n.crd).without_schema_json().json_len(),
                serde_json::to_vec(&n.crd.manifest).map_or(0, |b| b.len()),
                "{}: the whole document's length is kept",
                n.crd.name
            );
            judged += 1;
            with_findings += usize::from(!whole.is_empty());
        }
    }
    assert!(
        judged > 50 && with_findings > 10,
        "{judged} CRDs judged, {with_findings} with findings"
    );
}
