//! The checks' fixtures, tiny inline CRDs built with `json!` (most change
//! one keyword of `^.spec.foo` in the single version `v1` of [`NAME`]), and
//! the ways to run them: raw comparison, or the whole pipeline with a
//! configuration.

pub(crate) use crd_safety::compare::{
    self, Check, CheckOptions, Finding, Severity, StoredVersions, StoredVersionsSource,
};
pub(crate) use crd_safety::config::Config;
pub(crate) use crd_safety::crd::Crd;
pub(crate) use crd_safety::engine::{StoredVersionsArg, diff};
pub(crate) use crd_safety::manifest::{self, ManifestSet, normalize_to_v1};
pub(crate) use crd_safety::report::{CrdStatus, Report};
pub(crate) use serde_json::{Value, json};

use crate::crds;

pub(crate) const NAME: &str = "widgets.example.com";

/// A v1 CRD manifest [`NAME`] with these `spec.versions` entries.
pub(crate) fn crd(versions: Vec<Value>) -> Value {
    crds::crd("widgets", versions)
}

/// A served version entry with this root schema.
pub(crate) fn version(name: &str, storage: bool, root: Value) -> Value {
    crds::version(name, true, storage, root)
}

/// An object schema with these properties.
pub(crate) fn props(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

/// A root schema whose `spec` is `spec`.
pub(crate) fn root(spec: Value) -> Value {
    props(json!({ "spec": spec }))
}

/// A CRD with the single version `v1` whose `^.spec` is `spec`.
pub(crate) fn spec(spec: Value) -> Value {
    crd(vec![version("v1", true, root(spec))])
}

/// A CRD with the single version `v1` whose `^.spec.foo` is `schema`.
pub(crate) fn foo(schema: Value) -> Value {
    spec(props(json!({ "foo": schema })))
}

/// The baseline: `^.spec.foo` is a string.
pub(crate) fn widget() -> Value {
    foo(json!({"type": "string"}))
}

/// `spec` properties `foo: string`, the schema most multi-version fixtures share.
pub(crate) fn string_foo() -> Value {
    props(json!({"foo": {"type": "string"}}))
}

/// `spec` properties `foo` and `bar`, both strings.
pub(crate) fn foo_and_bar() -> Value {
    props(json!({"foo": {"type": "string"}, "bar": {"type": "string"}}))
}

/// A CRD serving `v1alpha1` and `v1` with these `^.spec` schemas.
pub(crate) fn two_versions(storage: &str, alpha: Value, v1: Value) -> Value {
    crd(vec![
        version("v1alpha1", storage == "v1alpha1", root(alpha)),
        version("v1", storage == "v1", root(v1)),
    ])
}

/// [`two_versions`] with the same schema in both.
pub(crate) fn same_two(storage: &str) -> Value {
    two_versions(storage, string_foo(), string_foo())
}

/// A copy of `doc` changed by `f`.
pub(crate) fn edit(doc: &Value, f: impl FnOnce(&mut Value)) -> Value {
    let mut doc = doc.clone();
    f(&mut doc);
    doc
}

/// `widget()` with `spec.versions[0].<key>` set.
pub(crate) fn widget_v1(key: &str, value: Value) -> Value {
    edit(&widget(), |c| c["spec"]["versions"][0][key] = value)
}

/// A webhook conversion, with or without a caBundle.
pub(crate) fn webhook(ca: Option<&str>) -> Value {
    let mut client = json!({"service": {"name": "conv", "namespace": "system"}});
    if let Some(ca) = ca {
        client["caBundle"] = json!(ca);
    }
    json!({"strategy": "Webhook", "webhook": {"clientConfig": client, "conversionReviewVersions": ["v1"]}})
}

/// `doc` with `spec.conversion` set.
pub(crate) fn with_conversion(doc: &Value, conversion: Value) -> Value {
    edit(doc, |c| c["spec"]["conversion"] = conversion)
}

pub(crate) fn load(doc: &Value) -> Crd {
    Crd::from_manifest(normalize_to_v1(doc.clone())).expect("fixture is a valid CRD")
}

/// Raw findings (default severities) with these options.
pub(crate) fn compare_with(old: &Value, new: &Value, options: &CheckOptions) -> Vec<Finding> {
    let (old, new) = (load(old), load(new));
    let stored = StoredVersions::resolve(&old, None);
    compare::compare_crds(&old, &new, &stored, options)
}

/// Raw findings with the default options.
pub(crate) fn compare(old: &Value, new: &Value) -> Vec<Finding> {
    compare_with(old, new, &CheckOptions::default())
}

pub(crate) fn manifests(doc: Option<&Value>) -> ManifestSet {
    let mut set = ManifestSet::default();
    if let Some(doc) = doc {
        manifest::load_text(&doc.to_string(), "fixture.json", true, &mut set)
            .expect("fixture loads");
    }
    set
}

/// The whole pipeline: load, compare, apply the configuration.
pub(crate) fn run(
    old: Option<&Value>,
    new: Option<&Value>,
    config: &str,
    stored: &StoredVersionsArg,
) -> Report {
    let config = Config::parse(config, "fixture.yaml").expect("fixture config parses");
    diff(&manifests(old), &manifests(new), stored, &config)
}

/// [`run`] with a config and no `--stored-versions`.
pub(crate) fn run_config(old: &Value, new: &Value, config: &str) -> Report {
    run(Some(old), Some(new), config, &StoredVersionsArg::default())
}

/// The reported findings of the report's only CRD.
pub(crate) fn reported(report: &Report) -> &[Finding] {
    assert_eq!(report.crds.len(), 1, "expected one CRD in the report");
    &report.crds[0].findings
}

pub(crate) fn dump(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "  {} {} {:?} {:?}: {}",
                f.check, f.severity, f.version, f.path, f.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The one finding of `check` at `severity`, checked for version, path and
/// the phrases its message must contain.
#[track_caller]
pub(crate) fn flags(
    findings: &[Finding],
    check: Check,
    severity: Severity,
    version: Option<&str>,
    path: Option<&str>,
    mentions: &[&str],
) -> Finding {
    let matching: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.check == check && f.severity == severity)
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "expected one {check} {severity} finding, got:\n{}",
        dump(findings)
    );
    let f = matching[0];
    assert_eq!(f.version.as_deref(), version, "version of: {}", f.message);
    assert_eq!(f.path.as_deref(), path, "path of: {}", f.message);
    for m in mentions {
        assert!(
            f.message.contains(m),
            "message does not mention {m:?}: {}",
            f.message
        );
    }
    f.clone()
}

/// Nothing at all is reported.
#[track_caller]
pub(crate) fn assert_clean(findings: &[Finding]) {
    assert!(
        findings.is_empty(),
        "expected no findings, got:\n{}",
        dump(findings)
    );
}

/// Nothing of `check` is reported.
#[track_caller]
pub(crate) fn assert_no(findings: &[Finding], check: Check) {
    assert!(
        !findings.iter().any(|f| f.check == check),
        "expected no {check} finding, got:\n{}",
        dump(findings)
    );
}
