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
        findings
            .iter()
            .find(|f| f.check == Check::XValidations)
            .is_some_and(|f| f
                .message
                .contains("`secretRef` was required, so every stored object has it")),
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

/// Issue 42's three holes, each an error now: the server truncates an
/// integer's factor, converts a number to an integer enum value's type
/// before comparing, and defaults what stored objects lack on read.
#[test]
fn numbers_and_defaults_are_judged_as_the_server_reads_them() {
    let findings = compare(
        &foo(json!({"type": "integer", "multipleOf": 5})),
        &foo(json!({"type": "integer", "multipleOf": 2.5})),
    );
    flags(
        &findings,
        Check::MultipleOf,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &[
            "from Kubernetes 1.36 the API server rejects every value",
            "truncates the bound to 2",
        ],
    );
    // 2.5 is stored under {type: number, enum: [1, 2]}.
    flags(
        &compare(
            &foo(json!({"type": "number", "enum": [1, 2]})),
            &foo(json!({"type": "number", "enum": [1, 2], "maximum": 2})),
        ),
        Check::Maximum,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["maximum 2 added"],
    );
    // On an integer the same enum is exact.
    flags(
        &compare(
            &foo(json!({"type": "integer", "enum": [1, 2]})),
            &foo(json!({"type": "integer", "enum": [1, 2], "maximum": 2})),
        ),
        Check::Maximum,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["every value the old schema allows here ([1, 2]) meets it"],
    );
    // Stored objects without `level` read the new default 0.
    let level = |s: Value| spec(json!({"type": "object", "properties": {"level": s}}));
    let new = edit(
        &level(json!({"type": "integer", "enum": [0, 1, 3, 5], "default": 0})),
        |c| {
            c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
                json!([{"rule": "self.level > 0"}]);
        },
    );
    let found = compare(&level(json!({"type": "integer", "enum": [1, 3, 5]})), &new);
    let rule = found
        .iter()
        .find(|f| f.check == Check::XValidations)
        .expect("the rule is reported");
    assert_eq!(rule.severity, Severity::Error, "{}", dump(&found));
}

#[test]
fn keywords_the_old_node_already_implies_are_info() {
    flags(
        &compare(
            &foo(json!({"type": "integer"})),
            &foo(json!({"type": "integer", "multipleOf": 1})),
        ),
        Check::MultipleOf,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["every integer is a multiple of 1"],
    );
    flags(
        &compare(
            &foo(json!({"type": "string", "maxLength": 5})),
            &foo(json!({"type": "string", "maxLength": 5, "pattern": "^[\\s\\S]{0,5}$"})),
        ),
        Check::Pattern,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["the new pattern matches every string the old one matches"],
    );
    // One character more than the pattern allows is stored.
    flags(
        &compare(
            &foo(json!({"type": "string", "maxLength": 6})),
            &foo(json!({"type": "string", "maxLength": 6, "pattern": "^[\\s\\S]{0,5}$"})),
        ),
        Check::Pattern,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["pattern"],
    );
}

/// The rules of issue 42 that the old schema's bounds already guarantee:
/// info, naming the bound they rest on.
#[test]
fn rules_the_old_bounds_guarantee_are_info_with_the_bound_named() {
    let fields = json!({"type": "object", "required": ["size"], "properties": {
        "size": {"type": "integer", "minimum": 0, "maximum": 10},
        "tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 4}},
        "mode": {"type": "string", "enum": ["Fast", "Slow"]}}});
    for (rule, fact) in [
        ("self.size <= 10", "the old schema bounds `size` to 0..10"),
        (
            "self.size * self.size <= 100",
            "the old schema bounds `size` to 0..10",
        ),
        (
            "!has(self.tags) || self.tags.all(t, t.size() <= 4)",
            "whether `tags` is set or not",
        ),
        (
            "!has(self.mode) || self.mode != 'Turbo'",
            "`mode` holds one of its old enum values",
        ),
        ("self.size != 11", "cannot fail"),
        ("double(self.size) <= 10.0", "cannot fail"),
        ("string(self.size).size() <= 2", "cannot fail"),
        (
            "self.size in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
            "cannot fail",
        ),
        ("!has(self.tags) || self.tags.size() <= 3", "cannot fail"),
        ("has(self.tags) || !has(self.tags)", "cannot fail"),
        (
            "!has(self.mode) || self.mode.matches('^(Fast|Slow)$')",
            "cannot fail",
        ),
    ] {
        let new = edit(&fields, |s| {
            s["x-kubernetes-validations"] = json!([{"rule": rule}]);
        });
        let found = compare(&spec(fields.clone()), &spec(new));
        let f = found
            .iter()
            .find(|f| f.check == Check::XValidations)
            .unwrap_or_else(|| panic!("{rule} is reported: {}", dump(&found)));
        assert_eq!(f.severity, Severity::Info, "{rule}: {}", f.message);
        assert!(f.message.contains(fact), "{rule}: {}", f.message);
    }
}

/// From 1.36 the server checks `int32` on integers (found by the soundness
/// differential on 1.37: a stored 2^63-1 is refused after the update).
#[test]
fn int32_added_to_an_integer_is_judged_by_the_old_bounds() {
    flags(
        &compare(
            &foo(json!({"type": "integer"})),
            &foo(json!({"type": "integer", "format": "int32"})),
        ),
        Check::Format,
        Severity::Error,
        Some("v1"),
        Some("^.spec.foo"),
        &["from Kubernetes 1.36 the API server rejects values int32 cannot hold"],
    );
    flags(
        &compare(
            &foo(json!({"type": "integer", "minimum": 0, "maximum": 65535})),
            &foo(json!({"type": "integer", "minimum": 0, "maximum": 65535, "format": "int32"})),
        ),
        Check::Format,
        Severity::Info,
        Some("v1"),
        Some("^.spec.foo"),
        &["the old minimum and maximum keep every value within it"],
    );
}

/// A conversion webhook may return an object without a field the schema
/// requires; the API server then defaults it on read, so a changed default
/// there is no longer harmless.
#[test]
fn a_default_changed_on_a_required_field_under_a_conversion_webhook_is_an_error() {
    let two_versions = |default: &str| {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "required": ["foo"], "properties": {"foo": {"type": "string", "default": default}}}}});
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                    "clientConfig": {"url": "https://convert.example.com"}}},
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": schema.clone()}},
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": schema}}]}})
    };
    let found = compare(&two_versions("a"), &two_versions("b"));
    let defaults: Vec<&Finding> = found.iter().filter(|f| f.check == Check::Default).collect();
    assert!(!defaults.is_empty(), "{}", dump(&found));
    for f in defaults {
        assert_eq!(f.severity, Severity::Error, "{}", f.message);
        assert!(
            f.message.contains("through the conversion webhook"),
            "{}",
            f.message
        );
    }
}

#[test]
fn a_rule_rewritten_to_cover_a_new_field_is_info_because_the_old_rule_implies_it() {
    let old = kinds(json!({"tpp": {"type": "object"}, "cloud": {"type": "object"}}));
    let new = kinds(
        json!({"tpp": {"type": "object"}, "cloud": {"type": "object"},
        "ngts": {"type": "object"}}),
    );
    let findings = compare(
        &spec(with_rules(
            &old,
            &["(has(self.tpp) ? 1 : 0) + (has(self.cloud) ? 1 : 0) == 1"],
        )),
        &spec(with_rules(
            &new,
            &["[has(self.tpp), has(self.cloud), has(self.ngts)].filter(x, x).size() == 1"],
        )),
    );
    let changed = findings
        .iter()
        .find(|f| f.check == Check::XValidations)
        .unwrap_or_else(|| panic!("{}", dump(&findings)));
    assert_eq!(changed.severity, Severity::Info, "{}", changed.message);
    assert!(
        changed.message.contains("CEL rule changed")
            && changed
                .message
                .contains("it follows from the old rule at this node"),
        "{}",
        changed.message
    );
    // The same rewrite where the old rule does not imply the new one.
    let findings = compare(
        &spec(with_rules(&old, &["has(self.tpp) || has(self.cloud)"])),
        &spec(with_rules(
            &new,
            &["[has(self.tpp), has(self.cloud), has(self.ngts)].filter(x, x).size() == 1"],
        )),
    );
    assert!(
        findings
            .iter()
            .any(|f| f.check == Check::XValidations && f.severity == Severity::Error),
        "{}",
        dump(&findings)
    );
}

/// Gateway API's TLSRoute `hostnames` before v1.5: a pattern on every item.
const HOSTNAME: &str =
    "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

#[test]
fn rules_the_old_hostname_pattern_implies_are_info_and_is_ip_stays_an_error() {
    let old = json!({"type": "array", "maxItems": 16, "items": {
        "type": "string", "minLength": 1, "maxLength": 253, "pattern": HOSTNAME}});
    // The rules Gateway API v1.5.1 added on the same items.
    let rfc1123 = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$";
    let plain = format!("self.all(h, !h.contains('*') ? h.matches('{rfc1123}') : true)");
    let wildcard = format!(
        "self.all(h, h.contains('*') ? (h.startsWith('*.') && h.substring(2).matches('{rfc1123}')) : true)"
    );
    let new = edit(&old, |s| {
        s["x-kubernetes-validations"] = json!([
            {"rule": "self.all(h, !isIP(h))"},
            {"rule": plain},
            {"rule": wildcard},
        ]);
    });
    let findings = compare(&foo(old), &foo(new));
    let rules: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.check == Check::XValidations)
        .collect();
    assert_eq!(rules.len(), 3, "{}", dump(&findings));
    for f in &rules {
        if f.message.contains("isIP") {
            // `192.0.2.1` matches the old pattern and is an address.
            assert_eq!(f.severity, Severity::Error, "{}", f.message);
            assert!(f.message.contains("192.0.2.1"), "{}", f.message);
        } else {
            assert_eq!(f.severity, Severity::Info, "{}", f.message);
            assert!(
                f.message
                    .contains(&format!("the old pattern `{HOSTNAME}` implies it")),
                "{}",
                f.message
            );
        }
    }
}
