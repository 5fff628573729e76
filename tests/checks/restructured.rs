//! Restructurings that accept the same values (`src/compare/fields/
//! restructured.rs`) are not reported as tightenings; the near misses that
//! do change what is accepted still are.

use crate::fields::object_ab;
use crate::fixtures::*;

/// `^.spec.foo` as a string with these extra keywords.
fn string_with(extra: Value) -> Value {
    let mut s = json!({"type": "string"});
    if let (Some(s), Some(e)) = (s.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    foo(s)
}

/// The one finding is the info that `^.spec.foo` was restructured, saying
/// each of `mentions`.
fn only_restructured(findings: &[Finding], mentions: &[&str]) {
    flags(
        findings,
        Check::AllOf,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        mentions,
    );
    assert_eq!(findings.len(), 1, "{}", dump(findings));
}

#[test]
fn the_same_enum_moved_out_of_all_of_is_not_a_tightening() {
    // prometheus-operator scrapeconfigs v0.16.0 -> v0.18.0,
    // ^.spec.ovhcloudSDConfigs[*].service.
    let e = json!(["VPS", "DedicatedServer"]);
    let old = string_with(json!({"allOf": [{"enum": e}, {"enum": e}]}));
    let new = string_with(json!({"enum": e}));
    let findings = compare(&old, &new);
    only_restructured(&findings, &["restructured", "the same values are accepted"]);
    // And back into allOf: the same values, ratcheted the same way.
    let findings = compare(&new, &old);
    only_restructured(&findings, &["the same values are accepted"]);
}

#[test]
fn bounds_and_patterns_moved_out_of_all_of_are_not_tightenings() {
    let old = string_with(
        json!({"allOf": [{"minLength": 2, "description": "at least two"},
                                         {"maxLength": 5}, {"pattern": "^[a-z]+$"}]}),
    );
    let new = string_with(json!({"minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"}));
    let findings = compare(&old, &new);
    only_restructured(&findings, &["restructured"]);
    // Two bounds in allOf mean the stricter one.
    let old = foo(json!({"type": "integer", "allOf": [{"minimum": 1}, {"minimum": 3}]}));
    let new = foo(json!({"type": "integer", "minimum": 3}));
    let findings = compare(&old, &new);
    assert_no(&findings, Check::Minimum);
    assert!(findings.iter().all(|f| f.severity == Severity::Info));
}

#[test]
fn a_tightening_written_in_all_of_is_still_reported() {
    let old = string_with(json!({"enum": ["a", "b"]}));
    let new = string_with(json!({"allOf": [{"enum": ["a"]}], "enum": ["a", "b"]}));
    flags(
        &compare(&old, &new),
        Check::Enum,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["enum values removed [\"b\"]"],
    );
    // Moved out, but with a value fewer.
    let old = string_with(json!({"allOf": [{"enum": ["a", "b"]}]}));
    let new = string_with(json!({"enum": ["a"]}));
    let findings = compare(&old, &new);
    flags(
        &findings,
        Check::Enum,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["enum values removed [\"b\"]"],
    );
    assert_no(&findings, Check::AllOf);
    // A stricter bound moved out of allOf.
    let old = foo(json!({"type": "integer", "allOf": [{"minimum": 1}]}));
    let new = foo(json!({"type": "integer", "minimum": 2}));
    flags(
        &compare(&old, &new),
        Check::Minimum,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["minimum raised 1 -> 2"],
    );
    // A second pattern cannot be folded into the first: a new constraint.
    let old = string_with(json!({"pattern": "^a"}));
    let new = string_with(json!({"pattern": "^a", "allOf": [{"pattern": "b$"}]}));
    flags(
        &compare(&old, &new),
        Check::AllOf,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["allOf constraint added"],
    );
}

#[test]
fn a_bound_next_to_an_exclusive_flag_is_not_folded() {
    // minimum 1 exclusive and minimum 1 in allOf: folding would hide that
    // the flag now applies to a different bound.
    let old = foo(json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}));
    let new = foo(
        json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true,
                         "allOf": [{"minimum": 3}]}),
    );
    flags(
        &compare(&old, &new),
        Check::AllOf,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["allOf constraint added"],
    );
}

/// `^.spec.foo` as an object with properties `a` and `b` and these
/// `kw` branches.
fn object_with(kw: &str, branches: Value) -> Value {
    foo(edit(&object_ab(), |s| s[kw] = branches))
}

#[test]
fn junctor_branches_reordered_are_the_same_constraint() {
    for kw in ["anyOf", "oneOf", "allOf"] {
        let (a, b) = (json!({"required": ["a"]}), json!({"required": ["b"]}));
        assert_clean(&compare(
            &object_with(kw, json!([a, b])),
            &object_with(kw, json!([b, a])),
        ));
    }
}

#[test]
fn a_type_the_node_already_has_spelled_out_in_a_branch_changes_nothing() {
    for kw in ["anyOf", "oneOf", "allOf"] {
        let old = object_with(
            kw,
            json!([{"required": ["a"]}, {"properties": {"b": {"minLength": 1}}}]),
        );
        let new = object_with(
            kw,
            json!([{"type": "object", "required": ["a"]},
                   {"type": "object", "properties": {"b": {"type": "string", "minLength": 1}}}]),
        );
        assert_clean(&compare(&old, &new));
    }
    let old = foo(edit(&object_ab(), |s| {
        s["not"] = json!({"required": ["a"]})
    }));
    let new = foo(edit(&object_ab(), |s| {
        s["not"] = json!({"type": "object", "required": ["a"]})
    }));
    assert_clean(&compare(&old, &new));
}

#[test]
fn a_type_the_node_does_not_have_in_a_branch_is_still_a_change() {
    // Under an int-or-string node, `type: string` in an anyOf branch
    // rejects what the branch used to accept as an integer.
    let node =
        |branches: Value| foo(json!({"x-kubernetes-int-or-string": true, "anyOf": branches}));
    let findings = compare(
        &node(json!([{"maxLength": 3}, {"minimum": 0}])),
        &node(json!([{"type": "string", "maxLength": 3}, {"minimum": 0}])),
    );
    flags(
        &findings,
        Check::AnyOf,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["1 anyOf branch removed"],
    );
}
