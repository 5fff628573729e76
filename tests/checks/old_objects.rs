//! Tightenings judged against what the old schema allows: a constraint no
//! object valid under the old schema can fail is info, with the reason; one
//! that some such object fails stays an error.

use crate::fixtures::*;

/// `^.spec` with `kind` (enum A, B, required) and `secretRef` (required),
/// plus whatever `more` adds.
fn kinds(more: Value) -> Value {
    let mut spec = json!({"type": "object", "required": ["kind", "secretRef"], "properties": {
        "kind": {"type": "string", "enum": ["A", "B"]},
        "secretRef": {"type": "object"},
        "note": {"type": "string"}}});
    if let (Some(p), Some(m)) = (spec["properties"].as_object_mut(), more.as_object()) {
        p.extend(m.clone());
    }
    spec
}

fn with_rules(spec: &Value, rules: &[&str]) -> Value {
    edit(spec, |s| {
        s["x-kubernetes-validations"] = rules.iter().map(|r| json!({"rule": r})).collect();
    })
}

#[test]
fn a_cel_rule_on_what_is_new_in_the_release_is_info_with_the_reason() {
    let old = kinds(json!({}));
    let new = kinds(json!({"configMapRef": {"type": "object"}}));
    let findings = compare(
        &spec(old),
        &spec(with_rules(
            &new,
            &[
                "has(self.configMapRef) || has(self.secretRef)",
                "!has(self.configMapRef) || self.kind == 'C'",
            ],
        )),
    );
    let rules: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.check == Check::XValidations)
        .collect();
    assert_eq!(rules.len(), 2, "{}", dump(&findings));
    for f in rules {
        assert_eq!(f.severity, Severity::Info, "{}", f.message);
        assert!(
            f.message
                .contains("cannot fail on any object valid under the old schema"),
            "{}",
            f.message
        );
    }
    assert!(
        findings[0]
            .message
            .contains("`secretRef` was required, so every stored object has it"),
        "{}",
        dump(&findings)
    );
}

#[test]
fn a_cel_rule_an_old_object_can_fail_stays_an_error() {
    let old = kinds(json!({}));
    let findings = compare(
        &spec(old.clone()),
        &spec(with_rules(&old, &["self.kind == 'A'", "!has(self.note)"])),
    );
    let errors = findings
        .iter()
        .filter(|f| f.check == Check::XValidations && f.severity == Severity::Error)
        .count();
    assert_eq!(errors, 2, "{}", dump(&findings));
}

#[test]
fn an_enum_replaced_by_bounds_every_old_value_meets_is_info() {
    let old = foo(json!({"type": "string", "enum": ["System"]}));
    let new = foo(json!({"type": "string", "minLength": 1, "maxLength": 253,
        "pattern": "^(System|[a-z0-9.-]+)$"}));
    let findings = compare(&old, &new);
    for check in [Check::MinLength, Check::MaxLength, Check::Pattern] {
        flags(
            &findings,
            check,
            Severity::Info,
            Some("v1"),
            Some("^.spec.foo"),
            &["every value the old schema allows here ([\"System\"]) meets it"],
        );
    }
    // One old value outside the new bound keeps the error.
    let old = foo(json!({"type": "string", "enum": ["System", "Everything"]}));
    let new = foo(json!({"type": "string", "maxLength": 6}));
    flags(
        &compare(&old, &new),
        Check::MaxLength,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["maxLength 6 added"],
    );
}

#[test]
fn a_pattern_widened_to_match_everything_the_old_one_did_is_info() {
    let old = foo(json!({"type": "string", "pattern": "^http(s)?://.+$"}));
    let new = foo(json!({"type": "string", "pattern": "^(http|https|socks5)://.+$"}));
    flags(
        &compare(&old, &new),
        Check::Pattern,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["the new pattern matches every string the old one matches"],
    );
    // The other way round, socks5:// values fail.
    flags(
        &compare(&new, &old),
        Check::Pattern,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["pattern changed"],
    );
}

#[test]
fn any_of_integer_or_string_over_a_string_field_is_info() {
    let old = foo(json!({"type": "string"}));
    let new = foo(json!({"x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}]}));
    flags(
        &compare(&old, &new),
        Check::AnyOf,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["every value the old schema allows is string"],
    );
    // A branch with a constraint of its own can still reject old values.
    let narrow = foo(json!({"x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]}));
    flags(
        &compare(&old, &narrow),
        Check::AnyOf,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["anyOf constraint added"],
    );
}

#[test]
fn a_default_on_a_field_the_old_schema_required_is_info() {
    let schema = |foo: Value| {
        spec(json!({"type": "object", "required": ["foo"], "properties": {"foo": foo}}))
    };
    let old = schema(json!({"type": "string"}));
    let new = schema(json!({"type": "string", "default": "x"}));
    flags(
        &compare(&old, &new),
        Check::Default,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &[
            "on a field the old schema required",
            "no stored object reads the default",
        ],
    );
    // Optional before: stored objects without it read the default.
    flags(
        &compare(
            &foo(json!({"type": "string"})),
            &foo(json!({"type": "string", "default": "x"})),
        ),
        Check::Default,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["default \"x\" added"],
    );
}

#[test]
fn conversion_webhook_to_none_with_a_single_version_converts_nothing() {
    let webhook = edit(&foo(json!({"type": "string"})), |c| {
        c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://convert.example.com"}}});
    });
    let none = foo(json!({"type": "string"}));
    flags(
        &compare(&webhook, &none),
        Check::Conversion,
        Severity::Info,
        None,
        None,
        &[
            "the new CRD has the single version v1",
            "nothing is ever converted",
        ],
    );
}

#[test]
fn bounds_over_a_const_like_pattern_are_judged_on_the_strings_it_allows() {
    let old = foo(json!({"type": "string", "pattern": "^(Always|Never)$"}));
    flags(
        &compare(
            &old,
            &foo(json!({"type": "string", "pattern": "^(Always|Never)$", "maxLength": 6})),
        ),
        Check::MaxLength,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["every value the old schema allows here ([\"Always\", \"Never\"]) meets it"],
    );
    flags(
        &compare(
            &old,
            &foo(json!({"type": "string", "pattern": "^(Always|Never)$", "maxLength": 5})),
        ),
        Check::MaxLength,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["maxLength 5 added"],
    );
}
