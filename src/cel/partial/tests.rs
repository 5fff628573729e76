use super::*;
use serde_json::json;

fn schema(v: Value) -> Schema {
    Schema::from_value(&v).expect("test schema")
}

fn verdict(rule: &str, old: Value, new: Value) -> Option<CannotFail> {
    cannot_fail(rule, &schema(old), &schema(new), false)
}

#[test]
fn a_rule_that_only_constrains_a_new_field_cannot_fail() {
    let old = json!({"type": "object", "required": ["secretRef"], "properties": {
        "secretRef": {"type": "object"}}});
    let new = json!({"type": "object", "properties": {
        "secretRef": {"type": "object"}, "configMapRef": {"type": "object"}}});
    let v = verdict(
        "has(self.configMapRef) || has(self.secretRef)",
        old.clone(),
        new.clone(),
    )
    .expect("cannot fail");
    assert!(
        v.reason().contains("`secretRef` was required"),
        "{}",
        v.reason()
    );
    assert!(
        verdict(
            "!has(self.configMapRef) || !has(self.secretRef)",
            old.clone(),
            new.clone()
        )
        .is_some()
    );
    // Without the old `required`, an object may lack both.
    let loose = json!({"type": "object", "properties": {"secretRef": {"type": "object"}}});
    assert_eq!(
        verdict("has(self.configMapRef) || has(self.secretRef)", loose, new),
        None
    );
}

#[test]
fn a_rule_on_a_value_the_old_enum_did_not_allow_cannot_fail() {
    let old = json!({"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string", "enum": ["A", "B"]}}});
    let new = json!({"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string", "enum": ["A", "B", "CORS"]},
        "cors": {"type": "object"}}});
    for rule in [
        "!(has(self.cors) && self.type != 'CORS')",
        "!(!has(self.cors) && self.type == 'CORS')",
        "self.type == 'CORS' ? has(self.cors) : !has(self.cors)",
    ] {
        assert!(verdict(rule, old.clone(), new.clone()).is_some(), "{rule}");
    }
    // A rule on the old values themselves can fail.
    assert_eq!(verdict("self.type == 'A'", old, new), None);
}

#[test]
fn a_filter_on_a_new_enum_value_is_empty_for_stored_lists() {
    let item = |values: Value| {
        json!({"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string", "enum": values}}})
    };
    let old = json!({"type": "array", "items": item(json!(["A", "B"]))});
    let new = json!({"type": "array", "items": item(json!(["A", "B", "CORS"]))});
    let rule = "self.filter(f, f.type == 'CORS').size() <= 1";
    assert!(verdict(rule, old.clone(), new.clone()).is_some());
    assert!(verdict("self.all(f, f.type != 'CORS')", old.clone(), new.clone()).is_some());
    assert!(
        verdict(
            "!self.exists(f, f.type == 'CORS')",
            old.clone(),
            new.clone()
        )
        .is_some()
    );
    // On an old value, any number of elements may match.
    assert_eq!(
        verdict("self.filter(f, f.type == 'A').size() <= 1", old, new),
        None
    );
}

#[test]
fn reading_a_new_field_fails_and_a_defaulted_one_is_present() {
    let old = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let new = json!({"type": "object", "properties": {"a": {"type": "string"},
        "b": {"type": "string", "default": "x"}, "c": {"type": "string"}}});
    // Selecting an absent field is an error: the rule fails.
    assert_eq!(verdict("self.c == 'x'", old.clone(), new.clone()), None);
    assert_eq!(verdict("!has(self.b)", old.clone(), new.clone()), None);
    assert!(verdict("self.b == 'x'", old.clone(), new.clone()).is_some());
    // An error on the other side of || is hidden by true, as in CEL.
    assert!(verdict("!has(self.c) || self.c == 'x'", old, new).is_some());
}

#[test]
fn what_the_api_server_fills_in_is_unknown_at_the_root_only() {
    let old = json!({"type": "object", "properties": {
        "metadata": {"type": "object"},
        "kind": {"type": "string", "enum": ["A"]}}, "required": ["kind"]});
    let root = |rule: &str| cannot_fail(rule, &schema(old.clone()), &schema(old.clone()), true);
    assert_eq!(root("!has(self.metadata.name)"), None);
    assert_eq!(root("self.kind == 'A'"), None);
    // Below the root, `kind` is a field like any other.
    assert!(verdict("self.kind == 'A'", old.clone(), old).is_some());
}

#[test]
fn open_objects_and_unknown_functions_stay_unknown() {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    assert_eq!(verdict("!has(self.cors)", open.clone(), open), None);
    let old = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert_eq!(
        verdict(
            "self.a.matches('^x$') || true == false",
            old.clone(),
            old.clone()
        ),
        None
    );
    assert_eq!(verdict("not valid CEL ((", old.clone(), old), None);
}

/// The old schema of issue 42's examples: bounded `size`, `tags`, `name`,
/// an optional `mode` enum, a required `flag`, a list of ports.
fn bounded() -> Value {
    json!({"type": "object", "required": ["size", "flag", "name"], "properties": {
        "size": {"type": "integer", "minimum": 0, "maximum": 10},
        "tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 4}},
        "name": {"type": "string", "maxLength": 5},
        "mode": {"type": "string", "enum": ["Fast", "Slow"]},
        "ab": {"type": "string", "enum": ["a", "b"]},
        "flag": {"type": "boolean"},
        "host": {"type": "string", "pattern": "^[a-z]+\\.example\\.com$"},
        "x": {"type": "string"}}})
}

#[test]
fn rules_the_old_bounds_guarantee_cannot_fail() {
    let old = bounded();
    for rule in [
        "self.size <= 10",
        "self.size != 11",
        "double(self.size) <= 10.0",
        "string(self.size).size() <= 2",
        "self.size * self.size <= 100",
        "self.size in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
        "!has(self.tags) || self.tags.size() <= 3",
        "!has(self.tags) || self.tags.all(t, t.size() <= 4)",
        "self.name.size() <= 5",
        "self.flag || !self.flag",
        "has(self.x) || !has(self.x)",
        "!has(self.mode) || self.mode != 'Turbo'",
        "!has(self.ab) || self.ab.matches('^[ab]$')",
        "!has(self.host) || self.host.matches('example\\\\.com$')",
    ] {
        let v = verdict(rule, old.clone(), old.clone());
        assert!(v.is_some(), "{rule} cannot fail");
    }
}

#[test]
fn rules_just_past_the_old_bounds_can_fail() {
    let old = bounded();
    for rule in [
        "self.size < 10",
        "self.size != 10",
        "self.size * self.size < 100",
        "string(self.size).size() < 2",
        "self.size in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]",
        "!has(self.tags) || self.tags.size() <= 2",
        "!has(self.tags) || self.tags.all(t, t.size() <= 3)",
        "self.name.size() < 5",
        "self.flag",
        "has(self.x)",
        "!has(self.mode) || self.mode != 'Slow'",
        "self.mode != 'Turbo'",
        "self.ab.matches('^a$')",
        "!has(self.host) || self.host.matches('^[a-z]+$')",
    ] {
        assert_eq!(
            verdict(rule, old.clone(), old.clone()),
            None,
            "{rule} can fail"
        );
    }
}

#[test]
fn the_facts_name_the_bounds_used() {
    let old = bounded();
    let v = verdict("self.size <= 10", old.clone(), old.clone()).expect("cannot fail");
    assert!(
        v.reason().contains("the old schema bounds `size` to 0..10"),
        "{}",
        v.reason()
    );
    let v =
        verdict("!has(self.mode) || self.mode != 'Turbo'", old.clone(), old).expect("cannot fail");
    assert!(
        v.reason().contains("whether `mode` is set or not"),
        "{}",
        v.reason()
    );
}

#[test]
fn integer_arithmetic_that_may_overflow_can_fail() {
    let old = json!({"type": "object", "required": ["big"], "properties": {
        "big": {"type": "integer", "minimum": 0}}});
    assert_eq!(verdict("self.big + 1 > 0", old.clone(), old.clone()), None);
    let bounded = json!({"type": "object", "required": ["big"], "properties": {
        "big": {"type": "integer", "minimum": 0, "maximum": 9_223_372_036_854_775_806_i64}}});
    assert!(verdict("self.big + 1 > 0", bounded.clone(), bounded).is_some());
    // Exact beyond 2^53: 2^53 + 1 is not 2^53.
    let e = json!({"type": "object", "required": ["n"], "properties": {
        "n": {"type": "integer", "enum": [9_007_199_254_740_993_i64]}}});
    assert_eq!(
        verdict("self.n == 9007199254740992", e.clone(), e.clone()),
        None
    );
    assert!(verdict("self.n != 9007199254740992", e.clone(), e).is_some());
}

#[test]
fn a_new_default_is_what_stored_objects_without_the_field_read() {
    // `level` gains 0 in its enum and `default: 0`: stored objects without
    // it now read 0 and fail `self.level > 0`.
    let old = json!({"type": "object", "properties": {
        "level": {"type": "integer", "enum": [1, 3, 5]}}});
    let new = json!({"type": "object", "properties": {
        "level": {"type": "integer", "enum": [0, 1, 3, 5], "default": 0}}});
    assert_eq!(verdict("self.level > 0", old.clone(), new.clone()), None);
    assert!(verdict("self.level >= 0", old, new).is_some());
    // An object default makes what is below it unknown, required or not.
    let old = json!({"type": "object", "properties": {"o": {"type": "object",
        "required": ["a"], "properties": {"a": {"type": "string"}}}}});
    let new = json!({"type": "object", "properties": {"o": {"type": "object", "default": {},
        "required": ["a"], "properties": {"a": {"type": "string"}}}}});
    assert_eq!(verdict("has(self.o.a)", old, new), None);
}

#[test]
fn a_number_enum_is_not_the_set_of_stored_values() {
    // The server stores 2.5 under {type: number, enum: [1, 2]}.
    let old = json!({"type": "object", "required": ["n"], "properties": {
        "n": {"type": "number", "enum": [1, 2]}}});
    assert_eq!(verdict("self.n <= 2.0", old.clone(), old.clone()), None);
    // Strings that CEL sees as bytes or timestamps are not strings.
    let b = json!({"type": "object", "required": ["b"], "properties": {
        "b": {"type": "string", "format": "byte", "enum": ["YWJj"]}}});
    assert_eq!(verdict("size(self.b) == 4", b.clone(), b), None);
}

#[test]
fn a_split_never_joins_elements_of_a_list() {
    // Each element has `x` or not; a list may mix them.
    let old = json!({"type": "object", "required": ["items"], "properties": {"items": {
        "type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}}}});
    assert_eq!(
        verdict(
            "self.items.all(i, has(i.x)) || self.items.all(i, !has(i.x))",
            old.clone(),
            old.clone()
        ),
        None
    );
    assert!(verdict("self.items.all(i, !has(i.gone))", old.clone(), old).is_some());
}

fn given(rule: &str, held: &[&str], old: Value, new: Value) -> Option<CannotFail> {
    cannot_fail_given(rule, held, &schema(old), &schema(new), false)
}

#[test]
fn a_rule_extended_over_a_new_field_follows_from_the_rule_it_replaces() {
    // cert-manager's issuers: "exactly one of tpp or cloud" became "exactly
    // one of tpp, cloud or ngts" in the release that added ngts.
    let old = json!({"type": "object", "properties": {
        "tpp": {"type": "object"}, "cloud": {"type": "object"}}});
    let mut new = old.clone();
    new["properties"]["ngts"] = json!({"type": "object"});
    let before = "(has(self.tpp) ? 1 : 0) + (has(self.cloud) ? 1 : 0) == 1";
    let after =
        "(has(self.tpp) ? 1 : 0) + (has(self.cloud) ? 1 : 0) + (has(self.ngts) ? 1 : 0) == 1";
    assert_eq!(verdict(after, old.clone(), new.clone()), None);
    let proof = given(after, &[before], old.clone(), new.clone()).expect("implied");
    assert!(
        proof
            .reason()
            .contains("follows from the old rule at this node"),
        "{}",
        proof.reason()
    );
    // The same text with the comment and layout of another author.
    let reformatted = "has(self.tpp) != has(self.cloud) // exactly one";
    assert!(given(reformatted, &[before], old.clone(), old.clone()).is_some());
    // A rule the old one does not imply stays unproven.
    assert_eq!(given("has(self.tpp)", &[before], old.clone(), new), None);
    assert_eq!(given(after, &[], old.clone(), old), None);
}

#[test]
fn an_old_rule_is_not_assumed_where_the_new_schema_reads_objects_differently() {
    let old = json!({"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string"}}});
    // The old rule held with `a` present; the new schema prunes `a`, so
    // the objects the evaluation sees no longer pass it.
    let pruned = json!({"type": "object", "properties": {"b": {"type": "string"}}});
    assert_eq!(
        given(
            "has(self.b)",
            &["has(self.a) || has(self.b)"],
            old.clone(),
            pruned
        ),
        None
    );
    // A new default fills in what the old rule saw absent.
    let mut defaulted = old.clone();
    defaulted["properties"]["c"] = json!({"type": "string", "default": "x"});
    assert_eq!(
        given(
            "!has(self.c) || has(self.a)",
            &["has(self.a)"],
            old.clone(),
            defaulted
        ),
        None
    );
    // The same reading: the implication is used.
    assert!(given("has(self.a)", &["has(self.a)"], old.clone(), old).is_some());
}

/// Gateway API's TLSRoute `hostnames` before v1.5: every item matches this
/// pattern, and no rule.
const HOSTNAME: &str =
    "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

fn hostnames() -> Value {
    json!({"type": "array", "maxItems": 16, "items": {
        "type": "string", "minLength": 1, "maxLength": 253, "pattern": HOSTNAME}})
}

#[test]
fn rules_the_old_hostname_pattern_implies_cannot_fail() {
    let old = hostnames();
    // The two rules Gateway API v1.5 added on hostnames besides `isIP`.
    let rfc1123 = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$";
    let plain = format!("self.all(h, !h.contains('*') ? h.matches('{rfc1123}') : true)");
    let wildcard = format!(
        "self.all(h, h.contains('*') ? (h.startsWith('*.') && h.substring(2).matches('{rfc1123}')) : true)"
    );
    for rule in [
        plain.as_str(),
        wildcard.as_str(),
        "self.all(h, h.matches('^[-a-z0-9.*]+$'))",
        "self.all(h, !h.endsWith('.'))",
        "self.all(h, h.size() <= 253)",
    ] {
        let v = verdict(rule, old.clone(), old.clone());
        assert!(v.is_some(), "{rule} cannot fail");
    }
    let v = verdict(&plain, old.clone(), old.clone()).expect("implied");
    assert!(
        v.reason()
            .contains(&format!("the old pattern `{HOSTNAME}` implies it"))
            && v.reason().contains("that does not contain `*`"),
        "{}",
        v.reason()
    );
    let v = verdict(&wildcard, old.clone(), old).expect("implied");
    assert!(v.reason().contains("from character 2 on"), "{}", v.reason());
}

#[test]
fn rules_the_old_hostname_pattern_does_not_imply_can_fail() {
    let old = hostnames();
    for rule in [
        // Dotted digits match the old pattern: `1.2.3.4` is a hostname
        // there, and an IP address.
        "self.all(h, !isIP(h))",
        // Without the check for `*`, a wildcard fails it.
        "self.all(h, h.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))",
        "self.all(h, !h.startsWith('*.') || h.substring(2).size() <= 5)",
        "self.all(h, h.contains('.'))",
        "self.all(h, h.size() <= 252)",
        // `*` alone is not a hostname, but `a` is, and it is too short.
        "self.all(h, h.substring(2).size() >= 0)",
    ] {
        assert_eq!(
            verdict(rule, old.clone(), old.clone()),
            None,
            "{rule} can fail"
        );
    }
}

#[test]
fn an_unanchored_old_pattern_only_says_where_it_is_found() {
    // `[a-z]+` is found in `A-a`: the old pattern does not make the whole
    // string lower case, only some of it.
    let old = json!({"type": "object", "required": ["s"], "properties": {
        "s": {"type": "string", "pattern": "[a-z]+"}}});
    assert_eq!(
        verdict("self.s.matches('^[a-z]+$')", old.clone(), old.clone()),
        None
    );
    assert!(verdict("self.s.matches('[a-z]')", old.clone(), old.clone()).is_some());
    assert_eq!(
        verdict("self.s.size() <= 5", old.clone(), old.clone()),
        None
    );
    // Anchored at both ends, it bounds the length too.
    let five = json!({"type": "object", "required": ["s"], "properties": {
        "s": {"type": "string", "pattern": "^[a-z]{1,5}$"}}});
    let v = verdict("self.s.size() <= 5", five.clone(), five.clone()).expect("bounded");
    assert!(
        v.reason()
            .contains("the old pattern `^[a-z]{1,5}$` bounds `s` to 1..5 characters"),
        "{}",
        v.reason()
    );
    assert!(verdict("size(self.s) >= 1", five.clone(), five.clone()).is_some());
    assert_eq!(verdict("self.s.size() <= 4", five.clone(), five), None);
}

#[test]
fn a_check_the_rule_made_narrows_only_its_own_branch() {
    // Narrowing follows a variable (a list item), not a field path.
    let old = json!({"type": "array", "items": {"type": "string", "pattern": "^(a|b[0-9]+)$"}});
    for rule in [
        "self.all(s, s.startsWith('b') ? s.matches('^b[0-9]+$') : s.matches('^a$'))",
        "self.all(s, !s.startsWith('b') || s.matches('[0-9]'))",
        "self.all(s, s.contains('a') ? s.endsWith('a') : s.matches('[0-9]$'))",
    ] {
        assert!(verdict(rule, old.clone(), old.clone()).is_some(), "{rule}");
    }
    for rule in [
        // The branches swapped.
        "self.all(s, s.startsWith('b') ? s.matches('^a$') : s.matches('^b[0-9]+$'))",
        "self.all(s, s.startsWith('b') || s.matches('[0-9]'))",
    ] {
        assert_eq!(verdict(rule, old.clone(), old.clone()), None, "{rule}");
    }
}

/// Each synthetic class of issue 59: a one-rule change on an old schema
/// whose own keywords already decide it for every stored object.
fn same(rule: &str, s: Value) -> Option<CannotFail> {
    verdict(rule, s.clone(), s)
}

#[test]
fn a_negated_membership_of_a_value_the_enum_never_held_cannot_fail() {
    let s = json!({"type": "string", "enum": ["a", "b"]});
    for rule in ["!(self in ['c'])", "!(self in ['c', 'd'])"] {
        let v = same(rule, s.clone()).expect(rule);
        assert!(v.reason().contains("enum"), "{rule}: {}", v.reason());
    }
    // `a` is a value the enum allows, so the rule can fail.
    assert_eq!(same("!(self in ['a'])", s), None);
}

#[test]
fn a_string_function_the_enum_values_already_satisfy_cannot_fail() {
    let lower = json!({"type": "string", "enum": ["a", "b"]});
    assert!(same("self.lowerAscii() == self", lower.clone()).is_some());
    assert!(same("self.upperAscii() != self", lower).is_some());
    // `A` is not lower case: the rule fails on it.
    let mixed = json!({"type": "string", "enum": ["A", "b"]});
    assert_eq!(same("self == self.lowerAscii()", mixed), None);
}

#[test]
fn type_of_an_int_or_string_is_int_or_string_unless_it_may_be_null() {
    let s = json!({"x-kubernetes-int-or-string": true});
    assert!(same("type(self) == string || type(self) == int", s.clone()).is_some());
    // A stored integer fails this one.
    assert_eq!(same("type(self) == string", s), None);
    let nullable = json!({"x-kubernetes-int-or-string": true, "nullable": true});
    assert_eq!(
        same("type(self) == string || type(self) == int", nullable),
        None
    );
}

#[test]
fn a_negated_exists_over_items_the_old_max_length_bounds_cannot_fail() {
    let s = json!({"type": "array", "items": {"type": "string", "maxLength": 10}});
    assert!(same("!self.exists(x, size(x) > 10)", s.clone()).is_some());
    assert_eq!(same("!self.exists(x, size(x) > 9)", s), None);
}

#[test]
fn all_over_map_values_the_old_schema_bounds_cannot_fail() {
    let ints = json!({"type": "object", "additionalProperties": {"type": "integer", "maximum": 5}});
    let v = same("self.all(k, self[k] <= 5)", ints.clone()).expect("bounded values");
    assert!(v.reason().contains("one of its values"), "{}", v.reason());
    let strings =
        json!({"type": "object", "additionalProperties": {"type": "string", "maxLength": 5}});
    assert!(same("self.all(k, self[k].size() <= 5)", strings).is_some());
    // A looser bound, named properties or unknown fields all admit a 6.
    let six = json!({"type": "object", "additionalProperties": {"type": "integer", "maximum": 6}});
    assert_eq!(same("self.all(k, self[k] <= 5)", six), None);
    let named = json!({"type": "object", "properties": {"k": {"type": "integer", "maximum": 6}}});
    assert_eq!(same("self.all(k, self[k] <= 5)", named), None);
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    assert_eq!(same("self.all(k, self[k] <= 5)", open), None);
}

#[test]
fn a_strict_bound_the_old_exclusive_maximum_gives_cannot_fail() {
    let exclusive = json!({"type": "number", "maximum": 100, "exclusiveMaximum": true});
    let v = same("self < 100.0", exclusive).expect("exclusive maximum");
    assert!(v.reason().contains("below 100"), "{}", v.reason());
    // Without `exclusiveMaximum`, 100 itself is stored and fails.
    let inclusive = json!({"type": "number", "maximum": 100});
    assert_eq!(same("self < 100.0", inclusive), None);
}

#[test]
fn a_rule_can_error_only_where_a_stored_value_can_make_it() {
    let errs = |rule: &str, v: Value| {
        let s = schema(v);
        can_error(rule, &s, &s, false)
    };
    let optional = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let required =
        json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}});
    // A missing key is an error...
    assert!(errs("self.a != 'x'", optional.clone()));
    // ...unless the rule asks first, either way round.
    assert!(!errs("!has(self.a) || self.a != 'x'", optional.clone()));
    assert!(!errs("has(self.a) && self.a != 'x'", optional));
    assert!(!errs("self.a != 'x'", required));
    let string = json!({"type": "string"});
    assert!(!errs("self.size() < 5", string.clone()));
    // Functions that parse their argument fail on what they cannot parse.
    assert!(errs("duration(self) > duration('1s')", string.clone()));
    // A string function of an integer has no overload.
    assert!(errs("self.startsWith('-')", json!({"type": "integer"})));
    assert!(!errs("self.startsWith('-')", string));
}

#[test]
fn an_all_rule_no_integer_element_passes_refuses_integers() {
    let map = schema(json!({"type": "object",
        "additionalProperties": {"x-kubernetes-int-or-string": true}}));
    assert!(refuses_int_elements(
        "self.all(x, !self[x].startsWith('-'))",
        &map
    ));
    // The keys are strings; `exists` passes with one string value.
    assert!(!refuses_int_elements(
        "self.all(x, !x.startsWith('-'))",
        &map
    ));
    assert!(!refuses_int_elements(
        "self.exists(x, !self[x].startsWith('-'))",
        &map
    ));
    let list = schema(json!({"type": "array", "items": {"x-kubernetes-int-or-string": true}}));
    assert!(refuses_int_elements("self.all(x, x.endsWith('%'))", &list));
    assert!(!refuses_int_elements(
        "self.all(x, type(x) == int || x.endsWith('%'))",
        &list
    ));
}

#[test]
fn a_test_read_twice_of_one_field_comes_out_the_same_both_times() {
    // Istio 1.24 -> 1.28's "UDS may not include ports", rewritten.
    let s = schema(json!({"type": "object", "properties": {
        "address": {"type": "string"}, "ports": {"type": "object"}}}));
    let old = "(has(self.address) && self.address.startsWith('unix://')) ? !has(self.ports) : true";
    let new = "(has(self.address) ? self.address : \"\").startsWith(\"unix://\") ? !has(self.ports) : true";
    let v = cannot_fail_given(new, &[old], &s, &s, false).expect("the same test");
    assert!(
        v.reason()
            .contains("whichever way `self.address.startsWith(\"unix://\")` comes out"),
        "{}",
        v.reason()
    );
    // Two fields are two tests.
    let other =
        "(has(self.other) ? self.other : \"\").startsWith(\"unix://\") ? !has(self.ports) : true";
    let s2 = schema(json!({"type": "object", "properties": {
        "address": {"type": "string"}, "other": {"type": "string"}, "ports": {"type": "object"}}}));
    assert_eq!(cannot_fail_given(other, &[old], &s2, &s2, false), None);
}

#[test]
fn the_size_of_one_list_is_one_value_in_every_place_it_is_read() {
    let s = schema(json!({"type": "object", "properties": {
        "endpoints": {"type": "array", "maxItems": 10, "items": {"type": "string"}}}}));
    let old = "!has(self.endpoints) || size(self.endpoints) == 1";
    let new = "(has(self.endpoints) ? self.endpoints : []).size() <= 1";
    let v = cannot_fail_given(new, &[old], &s, &s, false).expect("size 0 or 1");
    assert!(
        v.reason().contains("whatever the size of `self.endpoints`"),
        "{}",
        v.reason()
    );
    // Without the old rule, two endpoints fail it.
    assert_eq!(cannot_fail_given(new, &[], &s, &s, false), None);
    // A looser old rule does not imply a stricter new one.
    assert_eq!(
        cannot_fail_given(
            new,
            &["!has(self.endpoints) || size(self.endpoints) <= 2"],
            &s,
            &s,
            false
        ),
        None
    );
}

#[test]
fn a_comprehension_over_one_list_is_one_outcome() {
    let s = schema(json!({"type": "object", "properties": {
        "addresses": {"type": "array", "maxItems": 8, "items": {"type": "string"}},
        "resolution": {"type": "string", "enum": ["NONE", "STATIC", "DNS"]}}}));
    let old = "!(has(self.addresses) && self.addresses.exists(k, k.contains('/')) && \
(has(self.resolution) && self.resolution != 'STATIC' && self.resolution != 'NONE'))";
    let new = "!((has(self.addresses) ? self.addresses : []).exists(k, k.contains(\"/\")) && \
!((has(self.resolution) ? self.resolution : \"NONE\") in [\"STATIC\", \"NONE\"]))";
    let v = cannot_fail_given(new, &[old], &s, &s, false).expect("equivalent");
    assert!(
        v.reason().contains("`self.addresses.exists(k, …)`"),
        "{}",
        v.reason()
    );
    // A test over another variable's list is not the same outcome.
    let inner = "self.addresses.all(a, self.addresses.exists(k, k == a))";
    assert!(crate::cel::rewrite::only_self(
        &parse_rule(inner).expect("parses")
    ));
    let inner_exists = parse_rule("self.addresses.exists(k, k == a)").expect("parses");
    assert!(!crate::cel::rewrite::only_self(&inner_exists));
}
