//! allOf, anyOf, oneOf and not (`src/compare/fields/combinators.rs`,
//! `branch_truth.rs`).

use super::*;

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
