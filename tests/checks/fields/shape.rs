//! What kind of value a node takes and what it keeps: type, nullable, int-or-string,
//! embedded resources, unknown fields and map values (`src/compare/fields/shape.rs`).

use super::*;

#[test]
fn a_type_change_is_unsafe() {
    let f = example_flags_foo(
        Check::Type,
        Severity::Error,
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
fn nullable_removed_is_unsafe_and_added_only_info() {
    example_flags_foo(Check::Nullable, Severity::Error, &["nullable removed"]);
    let findings = reversed(Check::Nullable);
    flags_foo(
        &findings,
        Check::Nullable,
        Severity::Info,
        &["nullable added"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn preserve_unknown_fields_removed_from_a_field_is_unsafe() {
    let kept = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let findings = compare(&foo(kept.clone()), &foo(json!({"type": "object"})));
    flags_foo(
        &findings,
        Check::PreserveUnknownFields,
        Severity::Error,
        &[
            "x-kubernetes-preserve-unknown-fields removed",
            "under ^.spec.foo",
        ],
    );
    let typed_map = foo(json!({"type": "object", "additionalProperties": {"type": "string"}}));
    flags_foo(
        &compare(&foo(kept.clone()), &typed_map),
        Check::PreserveUnknownFields,
        Severity::Warning,
        &["replaced by a typed map"],
    );
    flags_foo(
        &compare(&foo(json!({"type": "object"})), &foo(kept)),
        Check::PreserveUnknownFields,
        Severity::Info,
        &["x-kubernetes-preserve-unknown-fields added"],
    );
}

#[test]
fn preserve_unknown_fields_removed_from_a_scalar_is_info_as_nothing_there_can_be_pruned() {
    // Knative v1.12 -> v1.23 drops the marker from `type: string` fields
    // such as `priorityClassName`: a string has no fields to prune.
    let kept = foo(json!({"type": "string", "x-kubernetes-preserve-unknown-fields": true}));
    flags_foo(
        &compare(&kept, &widget()),
        Check::PreserveUnknownFields,
        Severity::Info,
        &[
            "pruning drops nothing under ^.spec.foo",
            "the values stored there are strings",
        ],
    );
    // A string node that used to keep an untyped value is not whole: a map
    // stored there loses its keys.
    let untyped = foo(json!({"x-kubernetes-preserve-unknown-fields": true}));
    flags_foo(
        &compare(&untyped, &widget()),
        Check::PreserveUnknownFields,
        Severity::Error,
        &["x-kubernetes-preserve-unknown-fields removed"],
    );
}

#[test]
fn additional_properties_narrowed_is_unsafe_and_widened_safe() {
    example_flags_foo(
        Check::AdditionalProperties,
        Severity::Error,
        &["additionalProperties {\"type\":\"string\"} removed"],
    );
    let map = |ap: Value| foo(json!({"type": "object", "additionalProperties": ap}));
    flags_foo(
        &compare(&map(json!(true)), &map(json!({"type": "string"}))),
        Check::AdditionalProperties,
        Severity::Error,
        &["additionalProperties narrowed true -> {\"type\":\"string\"}"],
    );
    assert_clean(&compare(&map(json!({"type": "string"})), &map(json!(true))));
}

#[test]
fn int_or_string_removed_is_unsafe_and_added_info() {
    example_flags_foo(
        Check::IntOrString,
        Severity::Error,
        &["x-kubernetes-int-or-string removed: the field now accepts only integer"],
    );
    let ios = foo(json!({"x-kubernetes-int-or-string": true}));
    let findings = compare(&foo(json!({})), &ios);
    flags_foo(
        &findings,
        Check::IntOrString,
        Severity::Info,
        &["x-kubernetes-int-or-string added"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

/// Karpenter v0.33 -> v0.37's `kubeReserved`: int-or-string values become
/// strings under a map rule that an integer value cannot pass.
#[test]
fn int_or_string_to_string_is_info_where_an_old_rule_refused_every_integer() {
    let map = |values: Value, rule: &str| {
        foo(json!({"type": "object", "additionalProperties": values,
            "x-kubernetes-validations": [{"rule": rule}]}))
    };
    let ios = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]});
    let string = json!({"type": "string"});
    let refusing = "self.all(x, !self[x].startsWith('-'))";
    let findings = compare(&map(ios.clone(), refusing), &map(string.clone(), refusing));
    flags(
        &findings,
        Check::IntOrString,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo{*}"),
        &[
            "no stored value is an integer",
            "the old rule `self.all(x, !self[x].startsWith('-'))` on the map cannot pass with an integer",
        ],
    );
    assert!(
        !findings.iter().any(|f| f.severity == Severity::Error),
        "{}",
        dump(&findings)
    );
    // A rule on the keys alone says nothing of the values.
    let keys = "self.all(x, x.startsWith('a'))";
    flags(
        &compare(&map(ios.clone(), keys), &map(string.clone(), keys)),
        Check::IntOrString,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo{*}"),
        &["x-kubernetes-int-or-string removed"],
    );
    // So does `exists`: one string value is enough to pass it.
    let some = "self.exists(x, self[x].startsWith('-'))";
    flags(
        &compare(&map(ios, some), &map(string, some)),
        Check::IntOrString,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo{*}"),
        &["x-kubernetes-int-or-string removed"],
    );
}

#[test]
fn embedded_resource_turned_on_or_off_is_unsafe() {
    example_flags_foo(
        Check::EmbeddedResource,
        Severity::Error,
        &["x-kubernetes-embedded-resource turned on"],
    );
    flags_foo(
        &reversed(Check::EmbeddedResource),
        Check::EmbeddedResource,
        Severity::Error,
        &["x-kubernetes-embedded-resource turned off"],
    );
}
