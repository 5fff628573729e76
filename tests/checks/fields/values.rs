//! Value constraints: enum, bounds, multipleOf, pattern and format
//! (`src/compare/fields/values.rs`).

use super::*;

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
