//! Which fields exist and what they read as: removed, added and required fields,
//! and defaults (`src/compare/fields/presence.rs`).

use super::*;

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
fn adding_an_optional_field_is_safe_and_listed() {
    let findings = compare(&widget(), &spec(foo_and_bar()));
    flags(
        &findings,
        Check::FieldAddition,
        Severity::Info,
        Some("v1"),
        Some("^.spec.bar"),
        &[
            "field ^.spec.bar added (optional)",
            "unless an earlier release had the field",
        ],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

/// Where the old schema kept unknown fields, a stored object may already
/// hold anything under the new name (found by the soundness differential
/// on the real API server: a stored `c: junk` fails a new
/// `c: {format: date-time}`).
#[test]
fn a_field_added_where_unknown_fields_were_kept_is_an_error() {
    let kept = |props: Value| {
        spec(
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": props}),
        )
    };
    flags(
        &compare(
            &kept(json!({"foo": {"type": "string"}})),
            &kept(json!({"foo": {"type": "string"},
                "c": {"type": "string", "format": "date-time"}})),
        ),
        Check::FieldAddition,
        Severity::Error,
        Some("v1"),
        Some("^.spec.c"),
        &[
            "added where the old schema kept unknown fields",
            "apply-check --objects",
        ],
    );
}

#[test]
fn a_new_required_field_is_unsafe() {
    let f = flags(
        &flagged(Check::Required),
        Check::Required,
        Severity::Error,
        Some("v1"),
        Some("^.spec"),
        &[
            "new required field foo on ^.spec",
            "lets through only updates that leave ^.spec as it was",
        ],
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
    let findings = compare(&widget(), &new);
    assert!(
        findings
            .iter()
            .all(|f| f.check == Check::FieldAddition && f.severity == Severity::Info),
        "{}",
        dump(&findings)
    );
}

#[test]
fn a_required_field_made_optional_is_safe() {
    let (_, required) = unsafe_example(Check::Required);
    assert_clean(&compare(&required.expect("fixture"), &widget()));
}

#[test]
fn a_changed_default_is_unsafe() {
    example_flags_foo(
        Check::Default,
        Severity::Error,
        &["default changed \"a\" -> \"b\""],
    );
}

#[test]
fn a_default_removed_or_added_on_an_existing_field_is_unsafe() {
    let defaulted = foo(json!({"type": "string", "default": "a"}));
    flags_foo(
        &compare(&defaulted, &widget()),
        Check::Default,
        Severity::Error,
        &["default \"a\" removed"],
    );
    // Stored objects without the field suddenly read "a".
    flags_foo(
        &compare(&widget(), &defaulted),
        Check::Default,
        Severity::Error,
        &[
            "default \"a\" added to an existing field",
            "every client suddenly reads",
        ],
    );
    // The type's zero value: typed clients read it as before.
    flags_foo(
        &compare(&widget(), &foo(json!({"type": "string", "default": ""}))),
        Check::Default,
        Severity::Warning,
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
