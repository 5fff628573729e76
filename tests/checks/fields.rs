//! Field-level checks (`src/compare/fields.rs`): one schema keyword of one
//! field at a time.

use crate::catalog::{flagged, unsafe_example};
use crate::fixtures::*;

/// [`flags`] at `^.spec.foo` of `v1`, the field most fixtures change.
#[track_caller]
pub(crate) fn flags_foo(
    findings: &[Finding],
    check: Check,
    severity: Severity,
    mentions: &[&str],
) -> Finding {
    flags(
        findings,
        check,
        severity,
        Some("v1"),
        Some("^.spec.foo"),
        mentions,
    )
}

/// [`flags_foo`] on the catalog's unsafe example of `check`.
#[track_caller]
fn example_flags_foo(check: Check, severity: Severity, mentions: &[&str]) -> Finding {
    flags_foo(&flagged(check), check, severity, mentions)
}

/// The catalog's unsafe example of `check` as (old, new), both present.
pub(crate) fn example_pair(check: Check) -> (Value, Value) {
    let (old, new) = unsafe_example(check);
    (old.expect("fixture"), new.expect("fixture"))
}

/// The findings on the catalog's unsafe example of `check` read backwards
/// (new to old), mostly the safe direction.
pub(crate) fn reversed(check: Check) -> Vec<Finding> {
    let (old, new) = example_pair(check);
    compare(&new, &old)
}

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
fn enum_value_removed_is_unsafe() {
    example_flags_foo(
        Check::Enum,
        Severity::Error,
        &["enum values removed [\"b\"]"],
    );
}

#[test]
fn enum_restriction_added_is_unsafe() {
    let findings = compare(&widget(), &foo(json!({"type": "string", "enum": ["a"]})));
    flags_foo(
        &findings,
        Check::Enum,
        Severity::Error,
        &["enum restriction added [\"a\"]"],
    );
}

#[test]
fn enum_value_added_is_only_info_and_lifting_the_restriction_is_safe() {
    let (old, new) = example_pair(Check::Enum);
    let findings = compare(&new, &old);
    flags_foo(
        &findings,
        Check::Enum,
        Severity::Info,
        &["enum values added [\"b\"]"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
    assert_clean(&compare(&old, &widget()));
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

/// The keyword, the type it applies to, and whether it is a lower bound.
pub(crate) fn bound_of(check: Check) -> (&'static str, &'static str, bool) {
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
pub(crate) fn bounded(ty: &str, kw: &str, value: Option<i64>) -> Value {
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
        let f = flags_foo(
            &findings,
            check,
            Severity::Error,
            &[&format!("{kw} {verb} 5 -> {tighter}")],
        );
        assert_eq!(
            (f.old.clone(), f.new.clone()),
            (Some(json!(5)), Some(json!(tighter)))
        );
        assert_eq!(findings.len(), 1, "{kw}: {}", dump(&findings));
        let added = compare(&bounded(ty, kw, None), &bounded(ty, kw, Some(5)));
        flags_foo(&added, check, Severity::Error, &[&format!("{kw} 5 added")]);
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
    flags_foo(
        &findings,
        Check::Minimum,
        Severity::Error,
        &["minimum 0 added"],
    );
}

#[test]
fn exclusive_bounds_turned_on_are_unsafe_and_turned_off_safe() {
    for (check, limit) in [
        (Check::ExclusiveMinimum, "1"),
        (Check::ExclusiveMaximum, "9"),
    ] {
        let (old, new) = example_pair(check);
        let findings = compare(&old, &new);
        flags_foo(
            &findings,
            check,
            Severity::Error,
            &[&format!(
                "{} turned on (e.g. `{limit}` passes the old schema and fails it): the value {limit} itself",
                check.id()
            )],
        );
        assert_eq!(findings.len(), 1, "{}", dump(&findings));
        assert_clean(&compare(&new, &old));
    }
}

#[test]
fn multiple_of_added_or_changed_to_a_non_divisor_is_unsafe() {
    example_flags_foo(
        Check::MultipleOf,
        Severity::Error,
        &["multipleOf <none> -> 2"],
    );
    let m = |n: i64| foo(json!({"type": "integer", "multipleOf": n}));
    flags_foo(
        &compare(&m(2), &m(3)),
        Check::MultipleOf,
        Severity::Error,
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
    example_flags_foo(
        Check::UniqueItems,
        Severity::Error,
        &["uniqueItems turned on"],
    );
    assert_clean(&reversed(Check::UniqueItems));
}

#[test]
fn a_pattern_added_or_changed_is_unsafe() {
    example_flags_foo(Check::Pattern, Severity::Error, &["pattern \"^a\" added"]);
    let p = |re: &str| foo(json!({"type": "string", "pattern": re}));
    flags_foo(
        &compare(&p("^a"), &p("^b")),
        Check::Pattern,
        Severity::Error,
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
    example_flags_foo(
        Check::Format,
        Severity::Error,
        &["format <none> -> \"email\"", "validates email"],
    );
}

#[test]
fn an_unvalidated_format_is_info_and_a_removed_format_safe() {
    let f = |fmt: &str| foo(json!({"type": "string", "format": fmt}));
    let findings = compare(&widget(), &f("color"));
    flags_foo(
        &findings,
        Check::Format,
        Severity::Info,
        &["format <none> -> \"color\"", "does not validate color"],
    );
    assert_clean(&compare(&f("email"), &widget()));
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

/// A CEL rule without extras.
pub(crate) fn rule(rule: &str) -> Value {
    json!({ "rule": rule })
}

/// `^.spec.foo` as a string with these CEL rules.
pub(crate) fn with_rules(rules: &[Value]) -> Value {
    json!({"type": "string", "x-kubernetes-validations": rules})
}

fn cel(rules: &[Value]) -> Value {
    foo(with_rules(rules))
}

/// `^.spec.foo` as up to `rows` rows of at most 400 integers, each row
/// checked by these rules. `self.all(x, self.all(y, ...))` over 400 items
/// costs 802,002 per row by the API server's estimate: under its per-call
/// limit of 1,000,000, and twelve rows under its per-rule limit of
/// 10,000,000.
pub(crate) fn rows(rows: u64, rules: &[&str]) -> Value {
    let rules: Vec<Value> = rules.iter().map(|r| rule(r)).collect();
    json!({"type": "array", "maxItems": rows, "items": {
        "type": "array", "maxItems": 400,
        "items": {"type": "integer", "minimum": 0},
        "x-kubernetes-validations": rules
    }})
}

pub(crate) const QUADRATIC: [&str; 2] = [
    "self.all(x, self.all(y, x >= 0))",
    "self.all(x, self.all(y, x >= 1))",
];

#[test]
fn a_rule_added_past_the_per_object_cost_budget_warns() {
    let f = flags(
        &flagged(Check::CelCostBudget),
        Check::CelCostBudget,
        Severity::Warning,
        Some("v1"),
        Some("^.spec.foo[*]"),
        &[
            "can cost up to 19,248,048 in one object, above the API server's runtime budget of 10,000,000 per object (the old rules at most 9,624,024)",
            "(^.spec.foo: 12 items, ^.spec.foo[*]: 400 items)",
            "\"validation failed due to running out of cost budget, no further validation rules will be run\"",
            "at ^.spec.foo[*] (9,624,024, 12 runs of 802,002)",
        ],
    );
    assert_eq!(f.old, Some(json!(9_624_024)));
    assert_eq!(f.new, Some(json!(19_248_048)));
}

/// The stored objects hold at most two rows: the new schema's twelve are
/// for objects written after the update, and two rows cost 3,208,008.
#[test]
fn a_rule_added_over_a_list_the_old_schema_keeps_short_is_within_the_budget() {
    let findings = compare(&foo(rows(2, &QUADRATIC[..1])), &foo(rows(12, &QUADRATIC)));
    assert!(
        findings.iter().all(|f| f.check != Check::CelCostBudget),
        "{}",
        dump(&findings)
    );
    // Unchanged rules cost what they did: nothing to report, whatever the total.
    assert_clean(&compare(
        &foo(rows(12, &QUADRATIC)),
        &foo(rows(12, &QUADRATIC)),
    ));
}

#[test]
fn a_cel_rule_added_is_unsafe() {
    let f = example_flags_foo(
        Check::XValidations,
        Severity::Error,
        &["CEL rule added `self.size() < 5`"],
    );
    assert!(!f.message.contains("oldSelf"), "{}", f.message);
}

/// The rule's own message says what it enforces in its author's words; the
/// table's change column keeps it whole even when it holds a colon.
#[test]
fn a_cel_finding_shows_the_rules_message() {
    let with_message = json!({"rule": "self.size() < 5", "message": "names: at most 4 \"chars\""});
    let f = flags_foo(
        &compare(&cel(&[]), &cel(&[with_message])),
        Check::XValidations,
        Severity::Error,
        &["CEL rule added `self.size() < 5` (\"names: at most 4 \\\"chars\\\"\")"],
    );
    // With the value that shows it failing, after the rule.
    assert_eq!(
        crd_safety::report::change_of(&f),
        "CEL rule added `self.size() < 5` (\"names: at most 4 \\\"chars\\\"\") (e.g. `\"aaaaa\"`, 5 characters, \
passes the old schema and fails it)"
    );
}

#[test]
fn a_cel_rule_changed_is_unsafe() {
    flags_foo(
        &compare(
            &cel(&[rule("self.size() < 5")]),
            &cel(&[rule("self.size() < 3")]),
        ),
        Check::XValidations,
        Severity::Error,
        &["CEL rule changed `self.size() < 5` -> `self.size() < 3`"],
    );
}

#[test]
fn a_cel_transition_rule_added_says_it_is_never_ratcheted() {
    flags_foo(
        &compare(&widget(), &cel(&[rule("self == oldSelf")])),
        Check::XValidations,
        Severity::Error,
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
    flags_foo(
        &compare(&cel(&[rule("self == oldSelf")]), &cel(&[optional])),
        Check::XValidations,
        Severity::Error,
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
    flags_foo(
        &findings,
        Check::XValidations,
        Severity::Info,
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
    example_flags_foo(
        Check::ListType,
        Severity::Error,
        &[
            "x-kubernetes-list-type <none> -> \"set\"",
            "cannot be created again",
            "updates of a stored object that already holds them still succeed, even those that change the list",
        ],
    );
    flags_foo(
        &reversed(Check::ListType),
        Check::ListType,
        Severity::Warning,
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
    flags_foo(
        &compare(&map(json!(["name"])), &map(json!(["port"]))),
        Check::ListType,
        Severity::Error,
        &[
            "x-kubernetes-list-map-keys [\"name\"] -> [\"port\"]",
            "already holds them still succeed",
        ],
    );
}

#[test]
fn a_bound_tightened_in_a_list_that_is_not_a_map_says_a_change_to_any_item_is_rejected() {
    let names = |max: u64, extra: Value| {
        let mut s = json!({"type": "array", "items": {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "value": {"type": "string", "maxLength": max}}}});
        if let (Some(s), Value::Object(extra)) = (s.as_object_mut(), extra) {
            s.extend(extra);
        }
        foo(s)
    };
    let path = Some("^.spec.foo[*].value");
    let atomic = flags(
        &compare(&names(10, json!({})), &names(3, json!({}))),
        Check::MaxLength,
        Severity::Error,
        Some("v1"),
        path,
        &["an update that changes any item of ^.spec.foo is rejected too"],
    );
    assert!(
        atomic.message.contains("not listType: map"),
        "{}",
        atomic.message
    );
    let map = json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]});
    let keyed = flags(
        &compare(&names(10, map.clone()), &names(3, map)),
        Check::MaxLength,
        Severity::Error,
        Some("v1"),
        path,
        &["updates that leave it unchanged still succeed"],
    );
    assert!(!keyed.message.contains("rejected too"), "{}", keyed.message);
}

#[test]
fn a_map_becoming_atomic_is_a_warning_and_spelling_out_granular_safe() {
    example_flags_foo(
        Check::MapType,
        Severity::Warning,
        &[
            "x-kubernetes-map-type <none> -> \"atomic\"",
            "replaces this object as a whole",
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

/// An object with optional string properties `a`, `b` and `c`.
pub(crate) fn object_ab() -> Value {
    json!({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}
    }})
}

/// `^.spec.foo` is [`object_ab`] with `kw` set to one branch per entry of `required`.
pub(crate) fn combined(kw: &str, required: &[&str]) -> Value {
    let branches: Vec<Value> = required.iter().map(|r| json!({"required": [r]})).collect();
    foo(edit(&object_ab(), |s| s[kw] = json!(branches)))
}

#[test]
fn a_combinator_added_is_unsafe_and_blocks_updates_of_the_field() {
    for check in [Check::OneOf, Check::AnyOf, Check::AllOf] {
        flags_foo(
            &flagged(check),
            check,
            Severity::Error,
            &[
                &format!("{} constraint added (2 branches)", check.id()),
                "rejected by updates that touch the field; updates that leave it unchanged still succeed",
            ],
        );
    }
}

#[test]
fn a_one_of_or_any_of_branch_removed_is_unsafe() {
    for check in [Check::OneOf, Check::AnyOf] {
        let kw = check.id();
        flags_foo(
            &compare(&combined(kw, &["a", "b"]), &combined(kw, &["a"])),
            check,
            Severity::Error,
            &[&format!("1 {kw} branch removed"), "cannot be created again"],
        );
    }
}

#[test]
fn a_one_of_branch_added_is_graded_by_overlap_and_an_any_of_branch_info() {
    // {a, b} matched only the a-branch before, and matches both now.
    let findings = compare(&combined("oneOf", &["a"]), &combined("oneOf", &["a", "b"]));
    flags_foo(
        &findings,
        Check::OneOf,
        Severity::Error,
        &["1 oneOf branch added that overlap", "{a: ..., b: ...}"],
    );
    // A new discriminator value shares nothing with the old branches.
    let kind = |k: &str| json!({"required": ["a"], "properties": {"a": {"enum": [k]}}});
    let with = |branches: Vec<Value>| foo(edit(&object_ab(), |s| s["oneOf"] = json!(branches)));
    let findings = compare(&with(vec![kind("x")]), &with(vec![kind("x"), kind("y")]));
    flags_foo(&findings, Check::OneOf, Severity::Info, &["share no value"]);
    // Anything the schema cannot settle stays a warning that says so.
    let findings = compare(
        &with(vec![json!({"required": ["a"]})]),
        &with(vec![
            json!({"required": ["a"]}),
            json!({"not": {"required": ["a"]}}),
        ]),
    );
    flags_foo(
        &findings,
        Check::OneOf,
        Severity::Warning,
        &["could not be decided"],
    );
    let findings = compare(&combined("anyOf", &["a"]), &combined("anyOf", &["a", "b"]));
    flags_foo(
        &findings,
        Check::AnyOf,
        Severity::Info,
        &["1 anyOf branch added"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn an_all_of_branch_added_is_unsafe_and_removed_safe() {
    flags_foo(
        &compare(&combined("allOf", &["a"]), &combined("allOf", &["a", "b"])),
        Check::AllOf,
        Severity::Error,
        &["1 allOf branch added"],
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
        flags_foo(
            &findings,
            Check::Description,
            Severity::Info,
            &[&format!("documentation inside {kw} changed")],
        );
        assert_eq!(findings.len(), 1, "{}", dump(&findings));
    }
}

#[test]
fn a_not_constraint_added_or_changed_is_unsafe_and_removed_safe() {
    example_flags_foo(
        Check::Not,
        Severity::Error,
        &[
            "not constraint added",
            "updates that leave it unchanged still succeed",
        ],
    );
    let not = |req: Value| {
        foo(edit(&object_ab(), |s| {
            s["not"] = json!({ "required": req })
        }))
    };
    flags_foo(
        &compare(&not(json!(["a", "b"])), &not(json!(["a", "c"]))),
        Check::Not,
        Severity::Error,
        &["not constraint changed"],
    );
    assert_clean(&compare(&not(json!(["a", "b"])), &foo(object_ab())));
}

#[test]
fn a_description_change_is_only_info() {
    let findings = flagged(Check::Description);
    flags_foo(
        &findings,
        Check::Description,
        Severity::Info,
        &["description changed"],
    );
    assert_eq!(findings.len(), 1, "{}", dump(&findings));
}

#[test]
fn an_unknown_keyword_change_is_reported_readably() {
    let findings = flagged(Check::UnknownChange);
    let f = flags_foo(&findings, Check::UnknownChange, Severity::Error, &[]);
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
