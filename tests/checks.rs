//! Every check of the catalog (`Check::ALL`): the unsafe direction is flagged
//! with the right id, severity, version, path and message; the safe direction
//! is not; and the configuration (levels, `ignore`, `failMode`, `mode`,
//! per-check options, exceptions) is honoured.
//!
//! Fixtures are tiny inline CRDs built with `json!`: most tests change one
//! keyword of `^.spec.foo` in the single version `v1` of `widgets.example.com`.

use crd_safety::compare::{
    self, Check, CheckOptions, Finding, Severity, StoredVersions, StoredVersionsSource,
};
use crd_safety::config::Config;
use crd_safety::crd::Crd;
use crd_safety::diff::{StoredVersionsArg, diff};
use crd_safety::manifest::{self, ManifestSet, normalize_to_v1};
use crd_safety::report::{CrdStatus, Report};
use serde_json::{Value, json};

const NAME: &str = "widgets.example.com";

// ---------------------------------------------------------------------------
// Fixtures

/// A v1 CRD manifest with these `spec.versions` entries.
fn crd(versions: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": versions
        }
    })
}

/// A served version entry with this root schema.
fn version(name: &str, storage: bool, root: Value) -> Value {
    json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": root}})
}

/// An object schema with these properties.
fn props(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

/// A root schema whose `spec` is `spec`.
fn root(spec: Value) -> Value {
    props(json!({ "spec": spec }))
}

/// A CRD with the single version `v1` whose `^.spec` is `spec`.
fn spec(spec: Value) -> Value {
    crd(vec![version("v1", true, root(spec))])
}

/// A CRD with the single version `v1` whose `^.spec.foo` is `schema`.
fn foo(schema: Value) -> Value {
    spec(props(json!({ "foo": schema })))
}

/// The baseline: `^.spec.foo` is a string.
fn widget() -> Value {
    foo(json!({"type": "string"}))
}

/// `spec` properties `foo: string`, the schema most multi-version fixtures share.
fn string_foo() -> Value {
    props(json!({"foo": {"type": "string"}}))
}

/// `spec` properties `foo` and `bar`, both strings.
fn foo_and_bar() -> Value {
    props(json!({"foo": {"type": "string"}, "bar": {"type": "string"}}))
}

/// A CRD serving `v1alpha1` and `v1` with these `^.spec` schemas.
fn two_versions(storage: &str, alpha: Value, v1: Value) -> Value {
    crd(vec![
        version("v1alpha1", storage == "v1alpha1", root(alpha)),
        version("v1", storage == "v1", root(v1)),
    ])
}

/// [`two_versions`] with the same schema in both.
fn same_two(storage: &str) -> Value {
    two_versions(storage, string_foo(), string_foo())
}

/// A copy of `doc` changed by `f`.
fn edit(doc: &Value, f: impl FnOnce(&mut Value)) -> Value {
    let mut doc = doc.clone();
    f(&mut doc);
    doc
}

/// `widget()` with `spec.versions[0].<key>` set.
fn widget_v1(key: &str, value: Value) -> Value {
    edit(&widget(), |c| c["spec"]["versions"][0][key] = value)
}

/// A webhook conversion, with or without a caBundle.
fn webhook(ca: Option<&str>) -> Value {
    let mut client = json!({"service": {"name": "conv", "namespace": "system"}});
    if let Some(ca) = ca {
        client["caBundle"] = json!(ca);
    }
    json!({"strategy": "Webhook", "webhook": {"clientConfig": client, "conversionReviewVersions": ["v1"]}})
}

/// `doc` with `spec.conversion` set.
fn with_conversion(doc: &Value, conversion: Value) -> Value {
    edit(doc, |c| c["spec"]["conversion"] = conversion)
}

// ---------------------------------------------------------------------------
// Running the checks

fn load(doc: &Value) -> Crd {
    Crd::from_manifest(normalize_to_v1(doc.clone())).expect("fixture is a valid CRD")
}

/// Raw findings (default severities) with these options.
fn compare_with(old: &Value, new: &Value, options: &CheckOptions) -> Vec<Finding> {
    let (old, new) = (load(old), load(new));
    let stored = StoredVersions::resolve(&old, None);
    compare::compare_crds(&old, &new, &stored, options)
}

/// Raw findings with the default options.
fn compare(old: &Value, new: &Value) -> Vec<Finding> {
    compare_with(old, new, &CheckOptions::default())
}

fn manifests(doc: Option<&Value>) -> ManifestSet {
    let mut set = ManifestSet::default();
    if let Some(doc) = doc {
        manifest::load_text(&doc.to_string(), "fixture.json", true, &mut set)
            .expect("fixture loads");
    }
    set
}

/// The whole pipeline: load, compare, apply the configuration.
fn run(
    old: Option<&Value>,
    new: Option<&Value>,
    config: &str,
    stored: &StoredVersionsArg,
) -> Report {
    let config = Config::parse(config, "fixture.yaml").expect("fixture config parses");
    diff(&manifests(old), &manifests(new), stored, &config)
}

/// [`run`] with a config and no `--stored-versions`.
fn run_config(old: &Value, new: &Value, config: &str) -> Report {
    run(Some(old), Some(new), config, &StoredVersionsArg::default())
}

/// The reported findings of the report's only CRD.
fn reported(report: &Report) -> &[Finding] {
    assert_eq!(report.crds.len(), 1, "expected one CRD in the report");
    &report.crds[0].findings
}

fn dump(findings: &[Finding]) -> String {
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
fn flags(
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
fn assert_clean(findings: &[Finding]) {
    assert!(
        findings.is_empty(),
        "expected no findings, got:\n{}",
        dump(findings)
    );
}

/// Nothing of `check` is reported.
#[track_caller]
fn assert_no(findings: &[Finding], check: Check) {
    assert!(
        !findings.iter().any(|f| f.check == check),
        "expected no {check} finding, got:\n{}",
        dump(findings)
    );
}

// ---------------------------------------------------------------------------
// One unsafe example per check

/// The smallest (old, new) pair that trips each check at its default
/// severity; `None` is a CRD missing from that side. The match is exhaustive,
/// so a check added to the catalog does not compile here without an example.
fn unsafe_example(check: Check) -> (Option<Value>, Option<Value>) {
    let field = |old: Value, new: Value| (Some(foo(old)), Some(foo(new)));
    let pair = |old: Value, new: Value| (Some(old), Some(new));
    match check {
        Check::Scope => pair(
            widget(),
            edit(&widget(), |c| c["spec"]["scope"] = json!("Cluster")),
        ),
        // Stored versions unknown: the old storage version is assumed stored.
        Check::StoredVersionRemoval => pair(same_two("v1alpha1"), widget()),
        Check::ServedVersionRemoval => pair(same_two("v1"), widget()),
        Check::StorageVersionChange => pair(same_two("v1alpha1"), same_two("v1")),
        Check::Names => pair(
            widget(),
            edit(&widget(), |c| {
                c["spec"]["names"]["plural"] = json!("gizmos")
            }),
        ),
        Check::Subresources => pair(widget_v1("subresources", json!({"status": {}})), widget()),
        Check::PrinterColumns => pair(
            widget(),
            widget_v1(
                "additionalPrinterColumns",
                json!([{"name": "Foo", "type": "string", "jsonPath": ".spec.foo"}]),
            ),
        ),
        Check::Conversion => pair(
            with_conversion(&same_two("v1"), webhook(Some("Q0E="))),
            two_versions("v1", foo_and_bar(), string_foo()),
        ),
        Check::PreserveUnknownFields => pair(
            edit(&widget(), |c| {
                c["spec"]["preserveUnknownFields"] = json!(true)
            }),
            widget(),
        ),
        Check::Deprecation => pair(widget(), widget_v1("deprecated", json!(true))),
        Check::SelectableFields => pair(
            widget_v1("selectableFields", json!([{"jsonPath": ".spec.foo"}])),
            widget(),
        ),
        Check::NewCrd => (None, Some(widget())),
        Check::AbsentCrd => (Some(widget()), None),
        Check::ExistingFieldRemoval => pair(spec(foo_and_bar()), widget()),
        Check::Required => pair(
            widget(),
            spec(
                json!({"type": "object", "required": ["foo"], "properties": {"foo": {"type": "string"}}}),
            ),
        ),
        Check::Type => field(json!({"type": "string"}), json!({"type": "integer"})),
        Check::Enum => field(
            json!({"type": "string", "enum": ["a", "b"]}),
            json!({"type": "string", "enum": ["a"]}),
        ),
        Check::Default => field(
            json!({"type": "string", "default": "a"}),
            json!({"type": "string", "default": "b"}),
        ),
        Check::Minimum
        | Check::Maximum
        | Check::MinLength
        | Check::MaxLength
        | Check::MinItems
        | Check::MaxItems
        | Check::MinProperties
        | Check::MaxProperties => {
            let (kw, ty, lower) = bound_of(check);
            let tighter = if lower { 6 } else { 4 };
            (
                Some(bounded(ty, kw, Some(5))),
                Some(bounded(ty, kw, Some(tighter))),
            )
        }
        Check::ExclusiveMinimum => field(
            json!({"type": "integer", "minimum": 1}),
            json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}),
        ),
        Check::ExclusiveMaximum => field(
            json!({"type": "integer", "maximum": 9}),
            json!({"type": "integer", "maximum": 9, "exclusiveMaximum": true}),
        ),
        Check::MultipleOf => field(
            json!({"type": "integer"}),
            json!({"type": "integer", "multipleOf": 2}),
        ),
        Check::UniqueItems => field(
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
        ),
        Check::Pattern => field(
            json!({"type": "string"}),
            json!({"type": "string", "pattern": "^a"}),
        ),
        Check::Format => field(
            json!({"type": "string"}),
            json!({"type": "string", "format": "email"}),
        ),
        Check::Nullable => field(
            json!({"type": "string", "nullable": true}),
            json!({"type": "string"}),
        ),
        Check::XValidations => field(
            json!({"type": "string"}),
            with_rules(&[rule("self.size() < 5")]),
        ),
        Check::ListType => field(
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}),
        ),
        Check::MapType => field(
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "atomic"}),
        ),
        Check::AdditionalProperties => field(
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object"}),
        ),
        Check::IntOrString => field(
            json!({"x-kubernetes-int-or-string": true}),
            json!({"type": "integer"}),
        ),
        Check::EmbeddedResource => field(
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-embedded-resource": true}),
        ),
        Check::OneOf | Check::AnyOf | Check::AllOf => field(
            object_ab(),
            edit(&object_ab(), |s| {
                s[check.id()] = json!([{"required": ["a"]}, {"required": ["b"]}])
            }),
        ),
        Check::Not => field(
            object_ab(),
            edit(&object_ab(), |s| s["not"] = json!({"required": ["a", "b"]})),
        ),
        Check::Description => field(
            json!({"type": "string", "description": "old"}),
            json!({"type": "string", "description": "new"}),
        ),
        Check::ConversionDataLoss => {
            pair(widget(), two_versions("v1", foo_and_bar(), string_foo()))
        }
        Check::UnknownChange => field(
            json!({"type": "string", "x-acme-owner": "a"}),
            json!({"type": "string", "x-acme-owner": "b"}),
        ),
        // A new side the API server refuses: a node with properties but no type.
        Check::InvalidCrd => pair(
            widget(),
            spec(
                json!({"type": "object", "properties": {"foo": {"properties": {"a": {"type": "string"}}}}}),
            ),
        ),
        // Only `apply-check` reports it, from the API server's dry run
        // (tests/live_cluster.rs); no pair of manifests produces it.
        Check::ApiServerRejects
        | Check::FieldManagerConflict
        | Check::InvalidObjects
        | Check::PrunedFields
        | Check::DefaultedFields
        | Check::NotEvaluated => (None, None),
    }
}

/// Checks no offline comparison can report.
const LIVE_ONLY: &[Check] = &[
    Check::ApiServerRejects,
    Check::FieldManagerConflict,
    Check::InvalidObjects,
    Check::PrunedFields,
    Check::DefaultedFields,
    Check::NotEvaluated,
];

/// The findings the example of `check` gets through the whole pipeline.
fn flagged(check: Check) -> Vec<Finding> {
    let (old, new) = unsafe_example(check);
    let report = run(
        old.as_ref(),
        new.as_ref(),
        "",
        &StoredVersionsArg::default(),
    );
    reported(&report).to_vec()
}

#[test]
fn every_check_in_the_catalog_flags_its_unsafe_example_at_its_default_severity() {
    for &check in Check::ALL.iter().filter(|c| !LIVE_ONLY.contains(c)) {
        let findings = flagged(check);
        assert!(
            findings
                .iter()
                .any(|f| f.check == check && f.severity == check.default_severity()),
            "{check}: no {} finding in:\n{}",
            check.default_severity(),
            dump(&findings)
        );
    }
}

#[test]
fn every_check_id_can_be_configured() {
    for check in Check::ALL {
        let config = Config::parse(&format!("checks:\n  {}: info\n", check.id()), "c.yaml");
        assert!(config.is_ok(), "{check}: {:?}", config.err());
    }
}

// ---------------------------------------------------------------------------
// CRD level

#[test]
fn scope_change_is_unsafe() {
    let f = flags(
        &flagged(Check::Scope),
        Check::Scope,
        Severity::Error,
        None,
        None,
        &["scope changed Namespaced -> Cluster", "Widget"],
    );
    assert_eq!(
        (f.old.clone(), f.new.clone()),
        (Some(json!("Namespaced")), Some(json!("Cluster")))
    );
}

/// `v1alpha1` (not storage) and `v1` (storage), with `status.storedVersions`.
fn stored_in(versions: &[&str]) -> Value {
    edit(&same_two("v1"), |c| {
        c["status"] = json!({ "storedVersions": versions })
    })
}

#[test]
fn removing_a_version_listed_in_status_stored_versions_is_unsafe() {
    let findings = compare(&stored_in(&["v1alpha1", "v1"]), &widget());
    flags(
        &findings,
        Check::StoredVersionRemoval,
        Severity::Error,
        Some("v1alpha1"),
        None,
        &[
            "stored version v1alpha1 removed",
            "status.storedVersions lists it",
        ],
    );
}

#[test]
fn removing_a_version_not_in_status_stored_versions_is_not_a_stored_version_removal() {
    let findings = compare(&stored_in(&["v1"]), &widget());
    assert_no(&findings, Check::StoredVersionRemoval);
}

#[test]
fn removing_a_version_named_by_the_stored_versions_flag_is_unsafe() {
    let mut stored = StoredVersionsArg::default();
    stored.add("v1alpha1,v1").expect("fixture flag value");
    let report = run(Some(&same_two("v1")), Some(&widget()), "", &stored);
    flags(
        reported(&report),
        Check::StoredVersionRemoval,
        Severity::Error,
        Some("v1alpha1"),
        None,
        &["--stored-versions lists it"],
    );
    let source = report.crds[0].stored_versions.as_ref().map(|s| s.source);
    assert_eq!(source, Some(StoredVersionsSource::Flag));
}

#[test]
fn removing_the_assumed_storage_version_is_an_error() {
    let findings = flagged(Check::StoredVersionRemoval);
    flags(
        &findings,
        Check::StoredVersionRemoval,
        Severity::Error,
        Some("v1alpha1"),
        None,
        &["stored version v1alpha1 removed", "assumed"],
    );
}

#[test]
fn removing_another_version_when_stored_versions_are_assumed_is_a_warning() {
    let findings = compare(&same_two("v1"), &widget());
    flags(
        &findings,
        Check::StoredVersionRemoval,
        Severity::Warning,
        Some("v1alpha1"),
        None,
        &["version v1alpha1 removed", "--stored-versions"],
    );
    assert!(
        !findings
            .iter()
            .any(|f| f.check == Check::StoredVersionRemoval && f.severity == Severity::Error)
    );
}

#[test]
fn removing_a_served_version_is_a_warning() {
    flags(
        &flagged(Check::ServedVersionRemoval),
        Check::ServedVersionRemoval,
        Severity::Warning,
        Some("v1alpha1"),
        None,
        &["served version v1alpha1 removed", "example.com/v1alpha1"],
    );
}

#[test]
fn no_longer_serving_a_version_is_a_warning() {
    let new = edit(&same_two("v1"), |c| {
        c["spec"]["versions"][0]["served"] = json!(false)
    });
    let findings = compare(&same_two("v1"), &new);
    flags(
        &findings,
        Check::ServedVersionRemoval,
        Severity::Warning,
        Some("v1alpha1"),
        None,
        &["version v1alpha1 no longer served"],
    );
}

#[test]
fn serving_a_version_again_or_adding_a_version_is_safe() {
    let unserved = edit(&same_two("v1"), |c| {
        c["spec"]["versions"][0]["served"] = json!(false)
    });
    assert_clean(&compare(&unserved, &same_two("v1")));
    assert_clean(&compare(&widget(), &same_two("v1")));
}

#[test]
fn moving_the_storage_version_is_info() {
    let f = flags(
        &flagged(Check::StorageVersionChange),
        Check::StorageVersionChange,
        Severity::Info,
        None,
        None,
        &["storage version v1alpha1 -> v1"],
    );
    assert!(!f.message.contains("conversionDataLoss"), "{}", f.message);
}

#[test]
fn moving_the_storage_version_between_differing_schemas_mentions_the_data_loss() {
    let old = two_versions("v1alpha1", foo_and_bar(), string_foo());
    let new = two_versions("v1", foo_and_bar(), string_foo());
    flags(
        &compare(&old, &new),
        Check::StorageVersionChange,
        Severity::Info,
        None,
        None,
        &["storage version v1alpha1 -> v1", "conversionDataLoss"],
    );
}

#[test]
fn renaming_the_plural_is_unsafe() {
    flags(
        &flagged(Check::Names),
        Check::Names,
        Severity::Error,
        None,
        None,
        &["names.plural changed widgets -> gizmos"],
    );
}

#[test]
fn removing_a_short_name_is_a_warning() {
    let old = edit(&widget(), |c| {
        c["spec"]["names"]["shortNames"] = json!(["wd", "wdg"])
    });
    let new = edit(&widget(), |c| {
        c["spec"]["names"]["shortNames"] = json!(["wdg"])
    });
    flags(
        &compare(&old, &new),
        Check::Names,
        Severity::Warning,
        None,
        None,
        &["names.shortNames removed: wd", "kubectl get wd"],
    );
}

#[test]
fn adding_short_names_or_spelling_out_default_names_is_safe() {
    let new = edit(&widget(), |c| {
        c["spec"]["names"]["shortNames"] = json!(["wd"]);
        c["spec"]["names"]["categories"] = json!(["all"]);
        c["spec"]["names"]["singular"] = json!("widget");
        c["spec"]["names"]["listKind"] = json!("WidgetList");
    });
    assert_clean(&compare(&widget(), &new));
}

#[test]
fn removing_the_status_subresource_is_unsafe() {
    flags(
        &flagged(Check::Subresources),
        Check::Subresources,
        Severity::Error,
        Some("v1"),
        None,
        &["status subresource removed"],
    );
}

#[test]
fn adding_the_status_subresource_is_a_warning() {
    let findings = compare(&widget(), &widget_v1("subresources", json!({"status": {}})));
    flags(
        &findings,
        Check::Subresources,
        Severity::Warning,
        Some("v1"),
        None,
        &["status subresource added"],
    );
}

#[test]
fn removing_the_scale_subresource_is_unsafe_and_adding_it_is_info() {
    let scaled = widget_v1(
        "subresources",
        json!({"scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}),
    );
    flags(
        &compare(&scaled, &widget()),
        Check::Subresources,
        Severity::Error,
        Some("v1"),
        None,
        &["scale subresource removed"],
    );
    let added = compare(&widget(), &scaled);
    flags(
        &added,
        Check::Subresources,
        Severity::Info,
        Some("v1"),
        None,
        &["scale subresource added"],
    );
    assert_eq!(added.len(), 1, "{}", dump(&added));
}

#[test]
fn printer_column_changes_are_info() {
    let columns = |cols: Value| widget_v1("additionalPrinterColumns", cols);
    let foo_col = json!({"name": "Foo", "type": "string", "jsonPath": ".spec.foo"});
    let foo_moved = json!({"name": "Foo", "type": "string", "jsonPath": ".spec.bar"});
    flags(
        &flagged(Check::PrinterColumns),
        Check::PrinterColumns,
        Severity::Info,
        Some("v1"),
        None,
        &["printer column \"Foo\" added"],
    );
    flags(
        &compare(&columns(json!([foo_col])), &widget()),
        Check::PrinterColumns,
        Severity::Info,
        Some("v1"),
        None,
        &["printer column \"Foo\" removed"],
    );
    flags(
        &compare(&columns(json!([foo_col])), &columns(json!([foo_moved]))),
        Check::PrinterColumns,
        Severity::Info,
        Some("v1"),
        None,
        &["printer column \"Foo\" changed"],
    );
}

#[test]
fn conversion_webhook_to_none_with_differing_served_schemas_is_unsafe() {
    let findings = flagged(Check::Conversion);
    flags(
        &findings,
        Check::Conversion,
        Severity::Error,
        None,
        None,
        &["conversion Webhook -> None", "lose or misread"],
    );
}

#[test]
fn conversion_webhook_to_none_with_one_schema_is_a_warning() {
    let old = with_conversion(&same_two("v1"), webhook(Some("Q0E=")));
    let findings = compare(&old, &same_two("v1"));
    flags(
        &findings,
        Check::Conversion,
        Severity::Warning,
        None,
        None,
        &["conversion Webhook -> None", "share one schema"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn dropping_the_conversion_webhook_ca_bundle_is_a_warning() {
    let old = with_conversion(&same_two("v1"), webhook(Some("Q0E=")));
    let new = with_conversion(&same_two("v1"), webhook(None));
    let findings = compare(&old, &new);
    flags(
        &findings,
        Check::Conversion,
        Severity::Warning,
        None,
        None,
        &["caBundle is missing"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn a_new_ca_bundle_is_safe_and_switching_to_a_webhook_is_info() {
    let old = with_conversion(&same_two("v1"), webhook(Some("Q0E=")));
    let new = with_conversion(&same_two("v1"), webhook(Some("Q0I=")));
    assert_clean(&compare(&old, &new));
    let findings = compare(&same_two("v1"), &old);
    flags(
        &findings,
        Check::Conversion,
        Severity::Info,
        None,
        None,
        &["conversion None -> Webhook"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn dropping_the_crd_level_preserve_unknown_fields_is_unsafe() {
    flags(
        &flagged(Check::PreserveUnknownFields),
        Check::PreserveUnknownFields,
        Severity::Error,
        None,
        None,
        &["spec.preserveUnknownFields true -> false"],
    );
}

#[test]
fn turning_on_the_crd_level_preserve_unknown_fields_is_not_flagged() {
    let (old, new) = unsafe_example(Check::PreserveUnknownFields);
    let (old, new) = (old.expect("fixture"), new.expect("fixture"));
    assert_clean(&compare(&new, &old));
}

#[test]
fn deprecating_a_version_is_info() {
    flags(
        &flagged(Check::Deprecation),
        Check::Deprecation,
        Severity::Info,
        Some("v1"),
        None,
        &["version v1 marked deprecated"],
    );
    let deprecated = |warning: &str| {
        edit(&widget(), |c| {
            c["spec"]["versions"][0]["deprecated"] = json!(true);
            c["spec"]["versions"][0]["deprecationWarning"] = json!(warning);
        })
    };
    flags(
        &compare(&widget(), &deprecated("use v2")),
        Check::Deprecation,
        Severity::Info,
        Some("v1"),
        None,
        &["marked deprecated", "use v2"],
    );
    flags(
        &compare(&deprecated("use v2"), &deprecated("use v3")),
        Check::Deprecation,
        Severity::Info,
        Some("v1"),
        None,
        &["deprecationWarning text changed"],
    );
    flags(
        &compare(&deprecated("use v2"), &widget()),
        Check::Deprecation,
        Severity::Info,
        Some("v1"),
        None,
        &["no longer deprecated"],
    );
}

#[test]
fn removing_a_selectable_field_is_a_warning_and_adding_one_is_safe() {
    flags(
        &flagged(Check::SelectableFields),
        Check::SelectableFields,
        Severity::Warning,
        Some("v1"),
        None,
        &["selectable field .spec.foo removed"],
    );
    let (old, new) = unsafe_example(Check::SelectableFields);
    assert_clean(&compare(&new.expect("fixture"), &old.expect("fixture")));
}

#[test]
fn a_crd_only_in_the_new_manifests_is_new() {
    let report = run(
        None,
        Some(&same_two("v1")),
        "",
        &StoredVersionsArg::default(),
    );
    assert_eq!(report.crds[0].status, CrdStatus::New);
    let findings = reported(&report);
    flags(
        findings,
        Check::NewCrd,
        Severity::Info,
        None,
        None,
        &["new CRD (kind Widget, versions v1alpha1, v1)"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(findings));
}

#[test]
fn a_new_crd_whose_served_versions_lose_data_gets_warnings_not_errors() {
    let new = two_versions("v1", foo_and_bar(), string_foo());
    let report = run(None, Some(&new), "", &StoredVersionsArg::default());
    assert_eq!(report.crds[0].status, CrdStatus::New);
    flags(
        reported(&report),
        Check::ConversionDataLoss,
        Severity::Warning,
        Some("v1alpha1"),
        Some("^.spec.bar"),
        &["exists in served version v1alpha1 but not in storage version v1"],
    );
}

#[test]
fn a_crd_only_in_the_old_manifests_is_absent() {
    let report = run(Some(&widget()), None, "", &StoredVersionsArg::default());
    assert_eq!(report.crds[0].status, CrdStatus::Absent);
    assert_eq!(report.exit_code(), 0);
    flags(
        reported(&report),
        Check::AbsentCrd,
        Severity::Info,
        None,
        None,
        &["leaves widgets.example.com in place", "every Widget object"],
    );
}

// ---------------------------------------------------------------------------
// Field level

#[test]
fn removing_a_field_is_unsafe() {
    let f = flags(
        &flagged(Check::ExistingFieldRemoval),
        Check::ExistingFieldRemoval,
        Severity::Error,
        Some("v1"),
        Some("^.spec.bar"),
        &["field ^.spec.bar removed", "prunes"],
    );
    assert_eq!(f.old, Some(json!({"type": "string"})));
}

#[test]
fn removing_a_field_under_preserve_unknown_fields_is_a_warning() {
    let keep = |p: Value| {
        edit(&p, |s| {
            s["x-kubernetes-preserve-unknown-fields"] = json!(true)
        })
    };
    let findings = compare(&spec(keep(foo_and_bar())), &spec(keep(string_foo())));
    flags(
        &findings,
        Check::ExistingFieldRemoval,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.bar"),
        &["its data is kept", "x-kubernetes-preserve-unknown-fields"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn removing_a_status_field_is_a_warning() {
    let with_status = |status: Value| {
        crd(vec![version(
            "v1",
            true,
            props(json!({"spec": string_foo(), "status": status})),
        )])
    };
    let findings = compare(
        &with_status(props(json!({"phase": {"type": "string"}}))),
        &with_status(json!({"type": "object"})),
    );
    flags(
        &findings,
        Check::ExistingFieldRemoval,
        Severity::Warning,
        Some("v1"),
        Some("^.status.phase"),
        &["status field ^.status.phase removed"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn removing_the_item_schema_of_a_list_is_unsafe() {
    let findings = compare(
        &foo(json!({"type": "array", "items": {"type": "string"}})),
        &foo(json!({"type": "array"})),
    );
    flags(
        &findings,
        Check::ExistingFieldRemoval,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo[*]"),
        &["the item schema of ^.spec.foo removed"],
    );
}

#[test]
fn adding_an_optional_field_is_safe() {
    assert_clean(&compare(&widget(), &spec(foo_and_bar())));
}

#[test]
fn a_new_required_field_is_unsafe() {
    let f = flags(
        &flagged(Check::Required),
        Check::Required,
        Severity::Error,
        Some("v1"),
        Some("^.spec"),
        &["new required field foo on ^.spec", "never ratcheted"],
    );
    assert_eq!(f.new, Some(json!("foo")));
}

#[test]
fn a_new_required_field_with_a_default_is_a_warning() {
    let new = spec(json!({"type": "object", "required": ["foo"],
        "properties": {"foo": {"type": "string", "default": "x"}}}));
    let findings = compare(&widget(), &new);
    flags(
        &findings,
        Check::Required,
        Severity::Warning,
        Some("v1"),
        Some("^.spec"),
        &[
            "field foo becomes required on ^.spec",
            "has a default (\"x\")",
        ],
    );
    let required = findings
        .iter()
        .filter(|f| f.check == Check::Required)
        .count();
    assert_eq!(required, 1, "{}", dump(&findings));
}

#[test]
fn a_required_field_inside_a_new_object_is_safe() {
    let new = spec(props(json!({
        "foo": {"type": "string"},
        "bar": {"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}}
    })));
    assert_clean(&compare(&widget(), &new));
}

#[test]
fn a_required_field_made_optional_is_safe() {
    let (_, required) = unsafe_example(Check::Required);
    assert_clean(&compare(&required.expect("fixture"), &widget()));
}

#[test]
fn a_type_change_is_unsafe() {
    let f = flags(
        &flagged(Check::Type),
        Check::Type,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["type changed \"string\" -> \"integer\""],
    );
    assert_eq!(
        (f.old.clone(), f.new.clone()),
        (Some(json!("string")), Some(json!("integer")))
    );
}

#[test]
fn spelling_out_type_object_on_a_node_with_properties_is_safe() {
    let implied = spec(json!({"properties": {"foo": {"type": "string"}}}));
    assert_clean(&compare(&implied, &widget()));
}

#[test]
fn dropping_type_object_from_a_node_with_properties_is_unsafe() {
    // Without `type` the schema is not structural: the server refuses it.
    let implied = spec(json!({"properties": {"foo": {"type": "string"}}}));
    let findings = compare(&widget(), &implied);
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
    assert_eq!(findings[0].check, Check::Type);
    assert_eq!(findings[0].severity, Severity::Error);
    assert!(
        findings[0]
            .message
            .starts_with("type removed (object -> none)")
    );
    // With x-kubernetes-preserve-unknown-fields a typeless node is allowed.
    let preserving = spec(json!({"x-kubernetes-preserve-unknown-fields": true,
        "properties": {"foo": {"type": "string"}}}));
    assert!(
        compare(&widget(), &preserving)
            .iter()
            .all(|f| f.check != Check::Type)
    );
}

#[test]
fn enum_value_removed_is_unsafe() {
    flags(
        &flagged(Check::Enum),
        Check::Enum,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["enum values removed [\"b\"]"],
    );
}

#[test]
fn enum_restriction_added_is_unsafe() {
    let findings = compare(&widget(), &foo(json!({"type": "string", "enum": ["a"]})));
    flags(
        &findings,
        Check::Enum,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["enum restriction added [\"a\"]"],
    );
}

#[test]
fn enum_value_added_is_only_info_and_lifting_the_restriction_is_safe() {
    let (old, new) = unsafe_example(Check::Enum);
    let (old, new) = (old.expect("fixture"), new.expect("fixture"));
    let findings = compare(&new, &old);
    flags(
        &findings,
        Check::Enum,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["enum values added [\"b\"]"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
    assert_clean(&compare(&old, &widget()));
}

#[test]
fn a_changed_default_is_unsafe() {
    flags(
        &flagged(Check::Default),
        Check::Default,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["default changed \"a\" -> \"b\""],
    );
}

#[test]
fn a_default_removed_or_added_on_an_existing_field_is_unsafe() {
    let defaulted = foo(json!({"type": "string", "default": "a"}));
    flags(
        &compare(&defaulted, &widget()),
        Check::Default,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["default \"a\" removed"],
    );
    // Stored objects without the field suddenly read "a".
    flags(
        &compare(&widget(), &defaulted),
        Check::Default,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &[
            "default \"a\" added to an existing field",
            "every client suddenly reads",
        ],
    );
    // The type's zero value: typed clients read it as before.
    flags(
        &compare(&widget(), &foo(json!({"type": "string", "default": ""}))),
        Check::Default,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo"),
        &["it is the type's zero value"],
    );
    // A new field with a default changes nothing stored.
    assert_no(
        &compare(
            &widget(),
            &spec(props(json!({
                "foo": {"type": "string"}, "bar": {"type": "string", "default": "b"}
            }))),
        ),
        Check::Default,
    );
}

/// The keyword, the type it applies to, and whether it is a lower bound.
fn bound_of(check: Check) -> (&'static str, &'static str, bool) {
    match check {
        Check::Minimum => ("minimum", "integer", true),
        Check::Maximum => ("maximum", "integer", false),
        Check::MinLength => ("minLength", "string", true),
        Check::MaxLength => ("maxLength", "string", false),
        Check::MinItems => ("minItems", "array", true),
        Check::MaxItems => ("maxItems", "array", false),
        Check::MinProperties => ("minProperties", "object", true),
        Check::MaxProperties => ("maxProperties", "object", false),
        other => panic!("{other} is not a bound check"),
    }
}

const BOUNDS: [Check; 8] = [
    Check::Minimum,
    Check::Maximum,
    Check::MinLength,
    Check::MaxLength,
    Check::MinItems,
    Check::MaxItems,
    Check::MinProperties,
    Check::MaxProperties,
];

/// `^.spec.foo` of type `ty` with `kw: value` when given.
fn bounded(ty: &str, kw: &str, value: Option<i64>) -> Value {
    let mut s = json!({ "type": ty });
    match ty {
        "array" => s["items"] = json!({"type": "string"}),
        "object" => s["additionalProperties"] = json!({"type": "string"}),
        _ => {}
    }
    if let Some(v) = value {
        s[kw] = json!(v);
    }
    foo(s)
}

#[test]
fn tightened_or_added_bounds_are_unsafe() {
    for check in BOUNDS {
        let (kw, ty, lower) = bound_of(check);
        let (tighter, verb) = if lower { (6, "raised") } else { (4, "lowered") };
        let findings = compare(&bounded(ty, kw, Some(5)), &bounded(ty, kw, Some(tighter)));
        let f = flags(
            &findings,
            check,
            Severity::Error,
            Some("v1"),
            Some("^.spec.foo"),
            &[&format!("{kw} {verb} 5 -> {tighter}")],
        );
        assert_eq!(
            (f.old.clone(), f.new.clone()),
            (Some(json!(5)), Some(json!(tighter)))
        );
        assert_eq!(findings.len(), 1, "{kw}: {}", dump(&findings));
        let added = compare(&bounded(ty, kw, None), &bounded(ty, kw, Some(5)));
        flags(
            &added,
            check,
            Severity::Error,
            Some("v1"),
            Some("^.spec.foo"),
            &[&format!("{kw} 5 added")],
        );
    }
}

#[test]
fn loosened_or_removed_bounds_are_safe() {
    for check in BOUNDS {
        let (kw, ty, lower) = bound_of(check);
        let looser = if lower { 4 } else { 6 };
        let old = bounded(ty, kw, Some(5));
        assert_clean(&compare(&old, &bounded(ty, kw, Some(looser))));
        assert_clean(&compare(&old, &bounded(ty, kw, None)));
    }
}

#[test]
fn a_zero_length_or_count_minimum_added_is_safe_but_a_zero_minimum_is_not() {
    for check in [Check::MinLength, Check::MinItems, Check::MinProperties] {
        let (kw, ty, _) = bound_of(check);
        assert_clean(&compare(&bounded(ty, kw, None), &bounded(ty, kw, Some(0))));
    }
    let findings = compare(
        &bounded("integer", "minimum", None),
        &bounded("integer", "minimum", Some(0)),
    );
    flags(
        &findings,
        Check::Minimum,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["minimum 0 added"],
    );
}

#[test]
fn exclusive_bounds_turned_on_are_unsafe_and_turned_off_safe() {
    for (check, limit) in [
        (Check::ExclusiveMinimum, "1"),
        (Check::ExclusiveMaximum, "9"),
    ] {
        let (old, new) = unsafe_example(check);
        let (old, new) = (old.expect("fixture"), new.expect("fixture"));
        let findings = compare(&old, &new);
        flags(
            &findings,
            check,
            Severity::Error,
            Some("v1"),
            Some("^.spec.foo"),
            &[&format!(
                "{} turned on: the value {limit} itself",
                check.id()
            )],
        );
        assert_eq!(findings.len(), 1, "{}", dump(&findings));
        assert_clean(&compare(&new, &old));
    }
}

#[test]
fn multiple_of_added_or_changed_to_a_non_divisor_is_unsafe() {
    flags(
        &flagged(Check::MultipleOf),
        Check::MultipleOf,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["multipleOf <none> -> 2"],
    );
    let m = |n: i64| foo(json!({"type": "integer", "multipleOf": n}));
    flags(
        &compare(&m(2), &m(3)),
        Check::MultipleOf,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["multipleOf 2 -> 3"],
    );
}

#[test]
fn multiple_of_changed_to_a_divisor_or_removed_is_safe() {
    let m = |n: i64| foo(json!({"type": "integer", "multipleOf": n}));
    assert_clean(&compare(&m(4), &m(2)));
    assert_clean(&compare(&m(4), &foo(json!({"type": "integer"}))));
}

#[test]
fn unique_items_turned_on_is_unsafe_and_off_safe() {
    flags(
        &flagged(Check::UniqueItems),
        Check::UniqueItems,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["uniqueItems turned on"],
    );
    let (old, new) = unsafe_example(Check::UniqueItems);
    assert_clean(&compare(&new.expect("fixture"), &old.expect("fixture")));
}

#[test]
fn a_pattern_added_or_changed_is_unsafe() {
    flags(
        &flagged(Check::Pattern),
        Check::Pattern,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["pattern \"^a\" added"],
    );
    let p = |re: &str| foo(json!({"type": "string", "pattern": re}));
    flags(
        &compare(&p("^a"), &p("^b")),
        Check::Pattern,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["pattern changed \"^a\" -> \"^b\""],
    );
}

#[test]
fn a_pattern_removed_is_safe() {
    let (_, patterned) = unsafe_example(Check::Pattern);
    assert_clean(&compare(&patterned.expect("fixture"), &widget()));
}

#[test]
fn a_validated_format_added_is_unsafe() {
    flags(
        &flagged(Check::Format),
        Check::Format,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["format <none> -> \"email\"", "validates email"],
    );
}

#[test]
fn an_unvalidated_format_is_info_and_a_removed_format_safe() {
    let f = |fmt: &str| foo(json!({"type": "string", "format": fmt}));
    let findings = compare(&widget(), &f("color"));
    flags(
        &findings,
        Check::Format,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["format <none> -> \"color\"", "does not validate color"],
    );
    assert_clean(&compare(&f("email"), &widget()));
}

#[test]
fn nullable_removed_is_unsafe_and_added_only_info() {
    flags(
        &flagged(Check::Nullable),
        Check::Nullable,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["nullable removed"],
    );
    let (old, new) = unsafe_example(Check::Nullable);
    let findings = compare(&new.expect("fixture"), &old.expect("fixture"));
    flags(
        &findings,
        Check::Nullable,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["nullable added"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

/// A CEL rule without extras.
fn rule(rule: &str) -> Value {
    json!({ "rule": rule })
}

/// `^.spec.foo` as a string with these CEL rules.
fn with_rules(rules: &[Value]) -> Value {
    json!({"type": "string", "x-kubernetes-validations": rules})
}

fn cel(rules: &[Value]) -> Value {
    foo(with_rules(rules))
}

#[test]
fn a_cel_rule_added_is_unsafe() {
    let f = flags(
        &flagged(Check::XValidations),
        Check::XValidations,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["CEL rule added `self.size() < 5`"],
    );
    assert!(!f.message.contains("oldSelf"), "{}", f.message);
}

#[test]
fn a_cel_rule_changed_is_unsafe() {
    flags(
        &compare(
            &cel(&[rule("self.size() < 5")]),
            &cel(&[rule("self.size() < 3")]),
        ),
        Check::XValidations,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["CEL rule changed `self.size() < 5` -> `self.size() < 3`"],
    );
}

#[test]
fn a_cel_transition_rule_added_says_it_is_never_ratcheted() {
    flags(
        &compare(&widget(), &cel(&[rule("self == oldSelf")])),
        Check::XValidations,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &[
            "CEL rule added `self == oldSelf`",
            "transition rule (uses oldSelf)",
            "never ratcheted",
        ],
    );
}

#[test]
fn optional_old_self_changed_is_unsafe() {
    let optional = json!({"rule": "self == oldSelf", "optionalOldSelf": true});
    flags(
        &compare(&cel(&[rule("self == oldSelf")]), &cel(&[optional])),
        Check::XValidations,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["optionalOldSelf changed on CEL rule `self == oldSelf`"],
    );
}

#[test]
fn a_cel_message_only_change_is_info() {
    let with_message = |m: &str| json!({"rule": "self.size() < 5", "message": m});
    let findings = compare(
        &cel(&[with_message("too long")]),
        &cel(&[with_message("at most 4")]),
    );
    flags(
        &findings,
        Check::XValidations,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["message, reason or fieldPath of CEL rule `self.size() < 5` changed"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn a_cel_rule_removed_is_safe() {
    let two = cel(&[rule("self.size() < 5"), rule("self != 'x'")]);
    assert_clean(&compare(&two, &cel(&[rule("self.size() < 5")])));
    assert_clean(&compare(&two, &widget()));
}

fn list(extra: Value) -> Value {
    let mut s = json!({"type": "array", "items": {"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}});
    if let (Some(s), Value::Object(extra)) = (s.as_object_mut(), extra) {
        s.extend(extra);
    }
    foo(s)
}

#[test]
fn a_list_becoming_a_set_is_unsafe_and_becoming_atomic_a_warning() {
    flags(
        &flagged(Check::ListType),
        Check::ListType,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["x-kubernetes-list-type <none> -> \"set\""],
    );
    let (old, new) = unsafe_example(Check::ListType);
    flags(
        &compare(&new.expect("fixture"), &old.expect("fixture")),
        Check::ListType,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo"),
        &[
            "x-kubernetes-list-type \"set\" -> <none>",
            "replaces the whole list",
        ],
    );
    assert_clean(&compare(
        &list(json!({})),
        &list(json!({"x-kubernetes-list-type": "atomic"})),
    ));
}

#[test]
fn list_map_keys_changed_is_unsafe() {
    let map = |keys: Value| {
        list(json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys}))
    };
    flags(
        &compare(&map(json!(["name"])), &map(json!(["port"]))),
        Check::ListType,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["x-kubernetes-list-map-keys [\"name\"] -> [\"port\"]"],
    );
}

#[test]
fn a_map_becoming_atomic_is_a_warning_and_spelling_out_granular_safe() {
    flags(
        &flagged(Check::MapType),
        Check::MapType,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo"),
        &[
            "x-kubernetes-map-type <none> -> \"atomic\"",
            "replaces as a whole",
        ],
    );
    let (old, _) = unsafe_example(Check::MapType);
    let old = old.expect("fixture");
    let granular = edit(&old, |c| {
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["foo"]["x-kubernetes-map-type"] = json!("granular");
    });
    assert_clean(&compare(&old, &granular));
}

#[test]
fn preserve_unknown_fields_removed_from_a_field_is_unsafe() {
    let kept = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let findings = compare(&foo(kept.clone()), &foo(json!({"type": "object"})));
    flags(
        &findings,
        Check::PreserveUnknownFields,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &[
            "x-kubernetes-preserve-unknown-fields removed",
            "under ^.spec.foo",
        ],
    );
    let typed_map = foo(json!({"type": "object", "additionalProperties": {"type": "string"}}));
    flags(
        &compare(&foo(kept.clone()), &typed_map),
        Check::PreserveUnknownFields,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo"),
        &["replaced by a typed map"],
    );
    flags(
        &compare(&foo(json!({"type": "object"})), &foo(kept)),
        Check::PreserveUnknownFields,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["x-kubernetes-preserve-unknown-fields added"],
    );
}

#[test]
fn additional_properties_narrowed_is_unsafe_and_widened_safe() {
    flags(
        &flagged(Check::AdditionalProperties),
        Check::AdditionalProperties,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["additionalProperties narrowed {\"type\":\"string\"} -> null"],
    );
    let map = |ap: Value| foo(json!({"type": "object", "additionalProperties": ap}));
    flags(
        &compare(&map(json!(true)), &map(json!({"type": "string"}))),
        Check::AdditionalProperties,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["additionalProperties narrowed true -> {\"type\":\"string\"}"],
    );
    assert_clean(&compare(&map(json!({"type": "string"})), &map(json!(true))));
}

#[test]
fn int_or_string_removed_is_unsafe_and_added_info() {
    flags(
        &flagged(Check::IntOrString),
        Check::IntOrString,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["x-kubernetes-int-or-string removed: the field now accepts only integer"],
    );
    let ios = foo(json!({"x-kubernetes-int-or-string": true}));
    let findings = compare(&foo(json!({})), &ios);
    flags(
        &findings,
        Check::IntOrString,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["x-kubernetes-int-or-string added"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn embedded_resource_turned_on_or_off_is_unsafe() {
    flags(
        &flagged(Check::EmbeddedResource),
        Check::EmbeddedResource,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["x-kubernetes-embedded-resource turned on"],
    );
    let (old, new) = unsafe_example(Check::EmbeddedResource);
    flags(
        &compare(&new.expect("fixture"), &old.expect("fixture")),
        Check::EmbeddedResource,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["x-kubernetes-embedded-resource turned off"],
    );
}

/// An object with optional string properties `a`, `b` and `c`.
fn object_ab() -> Value {
    json!({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}
    }})
}

/// `^.spec.foo` is [`object_ab`] with `kw` set to one branch per entry of `required`.
fn combined(kw: &str, required: &[&str]) -> Value {
    let branches: Vec<Value> = required.iter().map(|r| json!({"required": [r]})).collect();
    foo(edit(&object_ab(), |s| s[kw] = json!(branches)))
}

#[test]
fn a_combinator_added_is_unsafe_and_never_ratcheted() {
    for check in [Check::OneOf, Check::AnyOf, Check::AllOf] {
        flags(
            &flagged(check),
            check,
            Severity::Error,
            Some("v1"),
            Some("^.spec.foo"),
            &[
                &format!("{} constraint added (2 branch(es))", check.id()),
                "never ratcheted",
            ],
        );
    }
}

#[test]
fn a_one_of_or_any_of_branch_removed_is_unsafe() {
    for check in [Check::OneOf, Check::AnyOf] {
        let kw = check.id();
        flags(
            &compare(&combined(kw, &["a", "b"]), &combined(kw, &["a"])),
            check,
            Severity::Error,
            Some("v1"),
            Some("^.spec.foo"),
            &[&format!("1 {kw} branch(es) removed"), "never ratcheted"],
        );
    }
}

#[test]
fn a_one_of_branch_added_is_graded_by_overlap_and_an_any_of_branch_info() {
    // {a, b} matched only the a-branch before, and matches both now.
    let findings = compare(&combined("oneOf", &["a"]), &combined("oneOf", &["a", "b"]));
    flags(
        &findings,
        Check::OneOf,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["1 oneOf branch(es) added that overlap", "{a: ..., b: ...}"],
    );
    // A new discriminator value shares nothing with the old branches.
    let kind = |k: &str| json!({"required": ["a"], "properties": {"a": {"enum": [k]}}});
    let with = |branches: Vec<Value>| foo(edit(&object_ab(), |s| s["oneOf"] = json!(branches)));
    let findings = compare(&with(vec![kind("x")]), &with(vec![kind("x"), kind("y")]));
    flags(
        &findings,
        Check::OneOf,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["share no value"],
    );
    // Anything the schema cannot settle stays a warning that says so.
    let findings = compare(
        &with(vec![json!({"required": ["a"]})]),
        &with(vec![
            json!({"required": ["a"]}),
            json!({"not": {"required": ["a"]}}),
        ]),
    );
    flags(
        &findings,
        Check::OneOf,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo"),
        &["could not be decided"],
    );
    let findings = compare(&combined("anyOf", &["a"]), &combined("anyOf", &["a", "b"]));
    flags(
        &findings,
        Check::AnyOf,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["1 anyOf branch(es) added"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn an_all_of_branch_added_is_unsafe_and_removed_safe() {
    flags(
        &compare(&combined("allOf", &["a"]), &combined("allOf", &["a", "b"])),
        Check::AllOf,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["1 allOf branch(es) added"],
    );
    assert_clean(&compare(
        &combined("allOf", &["a", "b"]),
        &combined("allOf", &["a"]),
    ));
}

#[test]
fn a_combinator_removed_or_only_redocumented_is_safe() {
    for kw in ["oneOf", "anyOf", "allOf"] {
        assert_clean(&compare(&combined(kw, &["a", "b"]), &foo(object_ab())));
        let documented = foo(edit(&object_ab(), |s| {
            s[kw] = json!([{"required": ["a"], "description": "needs a"}, {"required": ["b"]}]);
        }));
        // Documentation is reported wherever it changes, and only at info.
        let findings = compare(&combined(kw, &["a", "b"]), &documented);
        flags(
            &findings,
            Check::Description,
            Severity::Info,
            Some("v1"),
            Some("^.spec.foo"),
            &[&format!("documentation inside {kw} changed")],
        );
        assert_eq!(findings.len(), 1, "{}", dump(&findings));
    }
}

#[test]
fn a_not_constraint_added_or_changed_is_unsafe_and_removed_safe() {
    flags(
        &flagged(Check::Not),
        Check::Not,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["not constraint added", "never ratcheted"],
    );
    let not = |req: Value| {
        foo(edit(&object_ab(), |s| {
            s["not"] = json!({ "required": req })
        }))
    };
    flags(
        &compare(&not(json!(["a", "b"])), &not(json!(["a", "c"]))),
        Check::Not,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["not constraint changed"],
    );
    assert_clean(&compare(&not(json!(["a", "b"])), &foo(object_ab())));
}

#[test]
fn a_description_change_is_only_info() {
    let findings = flagged(Check::Description);
    flags(
        &findings,
        Check::Description,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["description changed"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn an_unknown_keyword_change_is_reported_readably() {
    let findings = flagged(Check::UnknownChange);
    let f = flags(
        &findings,
        Check::UnknownChange,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &[],
    );
    assert!(
        f.message
            .starts_with("^.spec.foo: x-acme-owner \"a\" -> \"b\""),
        "{}",
        f.message
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn an_unknown_version_field_change_is_reported() {
    let old = widget_v1("x-extra", json!("a"));
    let new = widget_v1("x-extra", json!("b"));
    flags(
        &compare(&old, &new),
        Check::UnknownChange,
        Severity::Error,
        Some("v1"),
        None,
        &["versions[v1].x-extra: \"a\" -> \"b\""],
    );
}

// ---------------------------------------------------------------------------
// Across the served versions of the new CRD (conversion None)

#[test]
fn a_served_only_field_is_lost_at_storage_time() {
    let f = flags(
        &flagged(Check::ConversionDataLoss),
        Check::ConversionDataLoss,
        Severity::Error,
        Some("v1alpha1"),
        Some("^.spec.bar"),
        &["^.spec.bar exists in served version v1alpha1 but not in storage version v1"],
    );
    assert!(f.message.contains("silently dropped"), "{}", f.message);
}

#[test]
fn a_storage_only_field_is_lost_on_update_through_the_other_version() {
    let new = two_versions("v1", string_foo(), foo_and_bar());
    let findings = compare(&widget(), &new);
    flags(
        &findings,
        Check::ConversionDataLoss,
        Severity::Error,
        Some("v1alpha1"),
        Some("^.spec.bar"),
        &["^.spec.bar exists in storage version v1 but not in served version v1alpha1"],
    );
}

#[test]
fn fields_kept_by_preserve_unknown_fields_are_not_lost() {
    let kept = edit(&string_foo(), |s| {
        s["x-kubernetes-preserve-unknown-fields"] = json!(true)
    });
    let new = two_versions("v1", foo_and_bar(), kept);
    assert_no(&compare(&widget(), &new), Check::ConversionDataLoss);
}

#[test]
fn served_versions_with_differing_schemas_are_compared_with_each_other() {
    let new = two_versions(
        "v1",
        props(json!({"foo": {"type": "integer"}})),
        string_foo(),
    );
    let findings = compare(&widget(), &new);
    flags(
        &findings,
        Check::Type,
        Severity::Error,
        Some("v1alpha1 -> v1"),
        Some("^.spec.foo"),
        &[
            "between served versions v1alpha1 -> v1 (conversion None",
            "type changed \"integer\" -> \"string\"",
        ],
    );
    flags(
        &findings,
        Check::Conversion,
        Severity::Warning,
        None,
        None,
        &["conversion is None but the served versions' schemas differ"],
    );
}

#[test]
fn cross_version_problems_the_old_crd_already_had_are_not_reported_again() {
    let differing = two_versions(
        "v1",
        foo_and_bar(),
        props(json!({"foo": {"type": "integer"}})),
    );
    // Neither the pair's type mismatch, nor the data loss, nor the
    // conversion warning: the old CRD had all of them already.
    assert_clean(&compare(&differing, &differing));
}

#[test]
fn cross_version_problems_are_new_when_the_old_crd_converted_with_a_webhook() {
    let differing = two_versions("v1", foo_and_bar(), string_foo());
    let old = with_conversion(&differing, webhook(Some("Q0E=")));
    flags(
        &compare(&old, &differing),
        Check::ConversionDataLoss,
        Severity::Error,
        Some("v1alpha1"),
        Some("^.spec.bar"),
        &["^.spec.bar exists in served version v1alpha1 but not in storage version v1"],
    );
}

#[test]
fn a_new_cross_version_problem_is_reported_next_to_grandfathered_ones() {
    let old = two_versions("v1", foo_and_bar(), string_foo());
    let new = two_versions(
        "v1",
        props(
            json!({"foo": {"type": "string"}, "bar": {"type": "string"}, "baz": {"type": "string"}}),
        ),
        string_foo(),
    );
    let findings = compare(&old, &new);
    flags(
        &findings,
        Check::ConversionDataLoss,
        Severity::Error,
        Some("v1alpha1"),
        Some("^.spec.baz"),
        &["^.spec.baz exists in served version v1alpha1"],
    );
    let losses = findings
        .iter()
        .filter(|f| f.check == Check::ConversionDataLoss)
        .count();
    assert_eq!(losses, 1, "{}", dump(&findings));
}

#[test]
fn a_conversion_webhook_turns_the_cross_version_checks_off() {
    let new = with_conversion(
        &two_versions("v1", foo_and_bar(), string_foo()),
        webhook(Some("Q0E=")),
    );
    let old = with_conversion(&widget(), webhook(Some("Q0E=")));
    assert_clean(&compare(&old, &new));
}

// ---------------------------------------------------------------------------
// v1beta1 input

/// `widget()` with a status subresource and a printer column, as v1beta1
/// wrote it; the root schema leaves `type: object` implied.
fn v1beta1_widget(preserve_unknown_fields: Option<bool>) -> Value {
    let mut doc = json!({
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "version": "v1",
            "names": {"kind": "Widget", "plural": "widgets"},
            "validation": {"openAPIV3Schema": {"properties": {"spec": string_foo()}}},
            "subresources": {"status": {}},
            "additionalPrinterColumns": [{"name": "Foo", "type": "string", "JSONPath": ".spec.foo"}]
        }
    });
    if let Some(p) = preserve_unknown_fields {
        doc["spec"]["preserveUnknownFields"] = json!(p);
    }
    doc
}

/// The v1 spelling of [`v1beta1_widget`].
fn v1_widget() -> Value {
    edit(&widget(), |c| {
        c["spec"]["versions"][0]["subresources"] = json!({"status": {}});
        c["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Foo", "type": "string", "jsonPath": ".spec.foo"}]);
    })
}

#[test]
fn a_v1beta1_crd_against_its_v1_equivalent_only_reports_the_dropped_preserve_unknown_fields() {
    let findings = compare(&v1beta1_widget(None), &v1_widget());
    flags(
        &findings,
        Check::PreserveUnknownFields,
        Severity::Error,
        None,
        None,
        &["spec.preserveUnknownFields true -> false"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn a_v1beta1_crd_without_preserve_unknown_fields_matches_its_v1_equivalent() {
    assert_clean(&compare(&v1beta1_widget(Some(false)), &v1_widget()));
    let report = run_config(&v1beta1_widget(Some(false)), &v1_widget(), "");
    assert_eq!(report.crds[0].status, CrdStatus::Safe);
}

// ---------------------------------------------------------------------------
// Configuration

#[test]
fn findings_fail_the_run_by_default() {
    let (old, new) = unsafe_example(Check::Enum);
    let report = run_config(&old.expect("fixture"), &new.expect("fixture"), "");
    assert_eq!(report.crds[0].status, CrdStatus::Unsafe);
    assert_eq!(report.exit_code(), 1);
}

#[test]
fn a_check_level_changes_the_severity() {
    for (check, level, severity) in [
        (Check::Enum, "warning", Severity::Warning),
        (Check::Type, "info", Severity::Info),
        (Check::Scope, "warning", Severity::Warning),
        (Check::Description, "error", Severity::Error),
    ] {
        let (old, new) = unsafe_example(check);
        let config = format!("checks:\n  {}: {level}\n", check.id());
        let report = run_config(&old.expect("fixture"), &new.expect("fixture"), &config);
        let findings = reported(&report);
        assert!(
            findings
                .iter()
                .all(|f| f.check != check || f.severity == severity),
            "{check}: {}",
            dump(findings)
        );
        assert!(
            findings.iter().any(|f| f.check == check),
            "{check}: {}",
            dump(findings)
        );
        assert_eq!(
            report.exit_code(),
            u8::from(severity == Severity::Error),
            "{check}"
        );
    }
}

#[test]
fn an_ignored_check_drops_its_findings_without_turning_them_into_unknown_changes() {
    for check in [
        Check::Default,
        Check::Description,
        Check::XValidations,
        Check::Enum,
        Check::PrinterColumns,
        Check::PreserveUnknownFields,
        Check::Minimum,
    ] {
        let (old, new) = unsafe_example(check);
        let config = format!("checks:\n  {}: ignore\n", check.id());
        let report = run_config(&old.expect("fixture"), &new.expect("fixture"), &config);
        assert_clean(reported(&report));
        assert!(report.crds[0].excepted.is_empty());
        assert_eq!(report.exit_code(), 0, "{check}");
    }
}

#[test]
fn fail_mode_open_makes_unknown_changes_warnings() {
    let (old, new) = unsafe_example(Check::UnknownChange);
    let (old, new) = (old.expect("fixture"), new.expect("fixture"));
    let closed = run_config(&old, &new, "failMode: closed\n");
    flags(
        reported(&closed),
        Check::UnknownChange,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &[],
    );
    assert_eq!(closed.exit_code(), 1);
    let open = run_config(&old, &new, "failMode: open\n");
    flags(
        reported(&open),
        Check::UnknownChange,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo"),
        &[],
    );
    assert_eq!(open.crds[0].status, CrdStatus::Warning);
    assert_eq!(open.exit_code(), 0);
}

#[test]
fn fail_mode_open_leaves_other_errors_alone() {
    let (old, new) = unsafe_example(Check::Type);
    let report = run_config(
        &old.expect("fixture"),
        &new.expect("fixture"),
        "failMode: open\n",
    );
    flags(
        reported(&report),
        Check::Type,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &[],
    );
    assert_eq!(report.exit_code(), 1);
}

#[test]
fn mode_warn_lists_the_errors_but_exits_zero() {
    let (old, new) = unsafe_example(Check::Type);
    let report = run_config(
        &old.expect("fixture"),
        &new.expect("fixture"),
        "mode: warn\n",
    );
    flags(
        reported(&report),
        Check::Type,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &[],
    );
    assert_eq!(report.crds[0].status, CrdStatus::Unsafe);
    assert_eq!(report.summary.errors, 1);
    assert!(!report.summary.failed);
    assert_eq!(report.exit_code(), 0);
    assert!(
        report.summary_line().contains("mode: warn, not failing"),
        "{}",
        report.summary_line()
    );
}

#[test]
fn per_check_options_flip_the_safe_direction_to_an_error() {
    let any_of = (combined("anyOf", &["a"]), combined("anyOf", &["a", "b"]));
    let cases = [
        (
            "enum: {allowAdditions: false}",
            Check::Enum,
            unsafe_example(Check::Enum),
            true,
        ),
        (
            "pattern: {allowRemoval: false}",
            Check::Pattern,
            unsafe_example(Check::Pattern),
            true,
        ),
        (
            "nullable: {allowAddition: false}",
            Check::Nullable,
            unsafe_example(Check::Nullable),
            true,
        ),
        (
            "xValidations: {allowRemoval: false}",
            Check::XValidations,
            unsafe_example(Check::XValidations),
            true,
        ),
        (
            "anyOf: {allowAdditions: false}",
            Check::AnyOf,
            (Some(any_of.0), Some(any_of.1)),
            false,
        ),
    ];
    for (option, check, (old, new), reverse) in cases {
        let (old, new) = (old.expect("fixture"), new.expect("fixture"));
        // The examples are the unsafe direction; the safe one is the reverse.
        let (old, new) = if reverse { (new, old) } else { (old, new) };
        let default = run_config(&old, &new, "");
        assert!(
            reported(&default)
                .iter()
                .all(|f| f.severity != Severity::Error),
            "{option}: {}",
            dump(reported(&default))
        );
        let strict = run_config(&old, &new, &format!("checks:\n  {option}\n"));
        flags(
            reported(&strict),
            check,
            Severity::Error,
            Some("v1"),
            Some("^.spec.foo"),
            &[],
        );
        assert_eq!(strict.exit_code(), 1, "{option}");
    }
}

#[test]
fn an_option_and_a_level_combine() {
    let (old, new) = unsafe_example(Check::Pattern);
    let report = run_config(
        &new.expect("fixture"),
        &old.expect("fixture"),
        "checks:\n  pattern: {level: warning, allowRemoval: false}\n",
    );
    flags(
        reported(&report),
        Check::Pattern,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo"),
        &["pattern \"^a\" removed (pattern.allowRemoval is false)"],
    );
}

/// A config with one exception for `existingFieldRemoval` of `^.spec.bar`.
fn exception(crd: &str, version: Option<&str>, path: &str, check: &str) -> String {
    let version = version
        .map(|v| format!("    version: {v}\n"))
        .unwrap_or_default();
    format!(
        "exceptions:\n  - crd: \"{crd}\"\n{version}    path: \"{path}\"\n    check: {check}\n    reason: \"bar was never used\"\n"
    )
}

#[test]
fn an_exception_moves_a_matching_finding_into_excepted_with_its_reason() {
    let (old, new) = unsafe_example(Check::ExistingFieldRemoval);
    let (old, new) = (old.expect("fixture"), new.expect("fixture"));
    for config in [
        exception(
            "*.example.com",
            Some("v1"),
            "^.spec.*",
            "existingFieldRemoval",
        ),
        exception(NAME, None, "^.spec.bar", "existingFieldRemoval"),
        exception("widgets.*", None, "*", "existingFieldRemoval"),
    ] {
        let report = run_config(&old, &new, &config);
        assert_clean(reported(&report));
        let excepted = &report.crds[0].excepted;
        assert_eq!(excepted.len(), 1, "{config}");
        assert_eq!(excepted[0].reason, "bar was never used");
        assert_eq!(excepted[0].finding.check, Check::ExistingFieldRemoval);
        assert_eq!(excepted[0].finding.path.as_deref(), Some("^.spec.bar"));
        assert_eq!(report.crds[0].status, CrdStatus::Safe);
        assert_eq!(report.summary.excepted, 1);
        assert_eq!(report.exit_code(), 0);
    }
}

#[test]
fn an_exception_for_another_crd_version_path_or_check_does_not_apply() {
    let (old, new) = unsafe_example(Check::ExistingFieldRemoval);
    let (old, new) = (old.expect("fixture"), new.expect("fixture"));
    for config in [
        exception("gadgets.example.com", None, "*", "existingFieldRemoval"),
        exception(NAME, Some("v2"), "*", "existingFieldRemoval"),
        exception(NAME, None, "^.spec.foo", "existingFieldRemoval"),
        exception(NAME, None, "*", "type"),
    ] {
        let report = run_config(&old, &new, &config);
        assert!(report.crds[0].excepted.is_empty(), "{config}");
        flags(
            reported(&report),
            Check::ExistingFieldRemoval,
            Severity::Error,
            Some("v1"),
            Some("^.spec.bar"),
            &[],
        );
    }
}

#[test]
fn an_exception_without_a_path_covers_crd_wide_findings() {
    let (old, new) = unsafe_example(Check::Scope);
    let config = "exceptions:\n  - crd: widgets.example.com\n    check: scope\n    reason: recreated on purpose\n";
    let report = run_config(&old.expect("fixture"), &new.expect("fixture"), config);
    assert_clean(reported(&report));
    let excepted = &report.crds[0].excepted;
    assert_eq!(excepted.len(), 1);
    assert_eq!(excepted[0].finding.check, Check::Scope);
    assert_eq!(excepted[0].reason, "recreated on purpose");
}

#[test]
fn policy_apply_works_on_raw_findings_too() {
    let (old, new) = unsafe_example(Check::UnknownChange);
    let raw = compare(&old.expect("fixture"), &new.expect("fixture"));
    let config = Config::parse("failMode: open\n", "c.yaml").expect("fixture config");
    let (kept, excepted) = config.policy().apply(NAME, raw);
    assert!(excepted.is_empty());
    flags(
        &kept,
        Check::UnknownChange,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo"),
        &[],
    );
}

#[test]
fn an_api_server_rejection_honours_levels_and_exceptions_like_any_check() {
    let rejection = Finding {
        check: Check::ApiServerRejects,
        severity: Severity::Error,
        version: None,
        path: None,
        message: "the API server refuses this update (server-side dry run): denied".to_string(),
        old: None,
        new: Some(json!("denied")),
        location: None,
        objects: None,
    };
    let apply = |config: &str| {
        let config = Config::parse(config, "c.yaml").expect("fixture config");
        config.policy().apply(NAME, vec![rejection.clone()])
    };
    let (kept, _) = apply("checks:\n  apiServerRejects: warning\n");
    flags(
        &kept,
        Check::ApiServerRejects,
        Severity::Warning,
        None,
        None,
        &["denied"],
    );
    let (kept, excepted) = apply(
        "exceptions:\n  - crd: \"*\"\n    check: apiServerRejects\n    reason: known webhook quirk\n",
    );
    assert_clean(&kept);
    assert_eq!(excepted.len(), 1);
    assert_eq!(excepted[0].reason, "known webhook quirk");
}

#[test]
fn date_time_and_datetime_are_the_same_format() {
    let f = |fmt: &str| foo(json!({"type": "string", "format": fmt}));
    assert_no(&compare(&f("date-time"), &f("datetime")), Check::Format);
}

#[test]
fn an_exception_with_a_non_string_version_is_refused_instead_of_matching_everything() {
    let err = Config::parse(
        "exceptions:\n- crd: a\n  version: 2\n  check: enum\n  reason: r\n",
        "c.yaml",
    )
    .expect_err("a numeric version is refused");
    assert_eq!(
        err.to_string(),
        "c.yaml: exceptions[0].version: expected a string, found 2"
    );
}

#[test]
fn webhook_to_none_is_explained_once() {
    let old = with_conversion(&same_two("v1"), webhook(Some("Y2E=")));
    let mut new = same_two("v1");
    new["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["extra"] =
        json!({"type": "string"});
    let conversions: Vec<Finding> = compare(&old, &new)
        .into_iter()
        .filter(|f| f.check == Check::Conversion)
        .collect();
    assert_eq!(conversions.len(), 1, "{}", dump(&conversions));
}

#[test]
fn a_version_served_in_neither_release_and_not_stored_cannot_break_anything() {
    let unserved = |alpha: Value| {
        edit(&two_versions("v1", alpha, string_foo()), |c| {
            c["spec"]["versions"][0]["served"] = json!(false)
        })
    };
    let (old, new) = (unserved(foo_and_bar()), unserved(string_foo()));
    // Stored versions known and without v1alpha1: the removal is info.
    let known = edit(&old, |c| c["status"] = json!({"storedVersions": ["v1"]}));
    let findings = compare(&known, &new);
    let f = findings
        .iter()
        .find(|f| f.check == Check::ExistingFieldRemoval)
        .expect("the removal is still reported");
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(f.version.as_deref(), Some("v1alpha1"));
    assert!(
        f.message.contains("served in neither release"),
        "{}",
        f.message
    );
    // Only assumed: a warning that says what would make it safe.
    let findings = compare(&old, &new);
    let f = findings
        .iter()
        .find(|f| f.check == Check::ExistingFieldRemoval)
        .expect("reported");
    assert_eq!(f.severity, Severity::Warning);
    // Still stored: still an error.
    let stored = edit(&old, |c| {
        c["status"] = json!({"storedVersions": ["v1alpha1", "v1"]})
    });
    let findings = compare(&stored, &new);
    assert!(
        findings
            .iter()
            .any(|f| f.check == Check::ExistingFieldRemoval && f.severity == Severity::Error),
        "{}",
        dump(&findings)
    );
}
