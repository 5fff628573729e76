//! The catalog as a whole: one unsafe example per check, each flagged
//! through the whole pipeline at its default severity.

use crate::fields::{QUADRATIC, bound_of, bounded, object_ab, rows, rule, with_rules};
use crate::fixtures::*;

/// The smallest (old, new) pair that trips each check at its default
/// severity; `None` is a CRD missing from that side. The match is exhaustive,
/// so a check added to the catalog does not compile here without an example.
pub(crate) fn unsafe_example(check: Check) -> (Option<Value>, Option<Value>) {
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
        Check::FieldAddition => pair(widget(), spec(foo_and_bar())),
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
        // Twelve rows of 400 integers, a second quadratic rule per row.
        Check::CelCostBudget => field(rows(12, &QUADRATIC[..1]), rows(12, &QUADRATIC)),
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
        // (tests/live/cluster.rs); no pair of manifests produces it.
        Check::ApiServerRejects
        | Check::FieldManagerConflict
        | Check::ConversionWebhookNotReady
        | Check::RolloutCrdPolicy
        | Check::InvalidObjects
        | Check::PrunedFields
        | Check::DefaultedFields
        | Check::NotEvaluated => (None, None),
        // Read from the manifests' text or a chart's layout, not from a
        // pair of CRD values (tests/offline/yaml_reading.rs,
        // tests/offline/helm_delivery.rs), or from the objects that come
        // with NEW (tests/offline/objects.rs).
        Check::ManifestObjects
        | Check::YamlReading
        | Check::CrdSize
        | Check::HelmCrdsNotUpgraded
        | Check::HelmDeletesCrd
        | Check::HelmUninstallDeletes => (None, None),
    }
}

/// Checks no offline comparison can report.
pub(crate) const LIVE_ONLY: &[Check] = &[
    Check::ApiServerRejects,
    Check::FieldManagerConflict,
    Check::ConversionWebhookNotReady,
    Check::RolloutCrdPolicy,
    Check::InvalidObjects,
    Check::PrunedFields,
    Check::DefaultedFields,
    Check::NotEvaluated,
];

/// Checks reported from how the manifests are written or delivered (their
/// text, a chart's `crds/` and templates, a size whose example would fill
/// the page), which a pair of small CRD values cannot show: each has its
/// example in docs/delivery.md and its tests.
pub(crate) const SOURCE_ONLY: &[Check] = &[
    Check::ManifestObjects,
    Check::YamlReading,
    Check::CrdSize,
    Check::HelmCrdsNotUpgraded,
    Check::HelmDeletesCrd,
    Check::HelmUninstallDeletes,
];

/// The findings the example of `check` gets through the whole pipeline.
pub(crate) fn flagged(check: Check) -> Vec<Finding> {
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
    for &check in Check::ALL
        .iter()
        .filter(|c| !LIVE_ONLY.contains(c) && !SOURCE_ONLY.contains(c))
    {
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
