//! Unit tests per keyword: each pins the API server behaviour it mirrors.

use serde_json::{Value, json};

use super::*;

/// A validator for `schema` as a server of minor version `minor` would build it.
fn compile(schema: &Value, minor: u32) -> Result<Validator, ValidateError> {
    Validator::new(&Schema::from_value(schema).expect("schema"), minor)
}

fn validator(schema: Value) -> Validator {
    compile(&schema, 34).expect("compiles")
}

fn run(schema: Value, object: Value) -> ValidationOutcome {
    validator(schema).validate(&object)
}

/// `(path, rule id)` of every violation.
fn found(o: &ValidationOutcome) -> Vec<(&str, &'static str)> {
    o.violations
        .iter()
        .map(|v| (v.path.as_str(), v.rule.id()))
        .collect()
}

fn pruned(o: &ValidationOutcome) -> Vec<(&str, PrunedKind)> {
    o.pruned.iter().map(|p| (p.path.as_str(), p.kind)).collect()
}

fn spec(props: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
}

fn one(o: &ValidationOutcome) -> &Violation {
    assert_eq!(o.violations.len(), 1, "{:#?}", o.violations);
    &o.violations[0]
}

#[test]
fn integral_floats_count_as_integers_and_integers_as_numbers() {
    let s = spec(json!({"i": {"type": "integer"}, "n": {"type": "number"}}));
    assert!(run(s.clone(), json!({"spec": {"i": 3, "n": 3}})).is_clean());
    assert!(run(s.clone(), json!({"spec": {"i": 3.0, "n": 2.5}})).is_clean());
    let o = run(s.clone(), json!({"spec": {"i": 3.5}}));
    assert_eq!(found(&o), [("spec.i", "type")]);
    assert_eq!(
        one(&o).message,
        "Invalid value: \"number\": spec.i in body must be of type integer: \"number\""
    );
    let o = run(s, json!({"spec": {"n": "3"}}));
    assert_eq!(found(&o), [("spec.n", "type")]);
    assert!(one(&o).message.contains("must be of type number"));
}

#[test]
fn int_or_string_accepts_both_and_nothing_else() {
    let s = spec(json!({"port": {"x-kubernetes-int-or-string": true}}));
    assert!(run(s.clone(), json!({"spec": {"port": 80}})).is_clean());
    assert!(run(s.clone(), json!({"spec": {"port": "http"}})).is_clean());
    let o = run(s, json!({"spec": {"port": true}}));
    assert_eq!(found(&o), [("spec.port", "type")]);
}

#[test]
fn a_type_error_stops_the_node_and_blocks_cel() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": "false"}],
        "properties": {"s": {"type": "string", "maxLength": 1}}}}});
    let o = run(s, json!({"spec": {"s": 5}}));
    assert_eq!(found(&o), [("spec.s", "type")]);
    assert_eq!(o.not_evaluated.len(), 1);
    assert_eq!(o.not_evaluated[0].rule, "*");
}

/// `nullable` lets a null past the type, not past an enum without null:
/// kube-apiserver 1.34 refuses it ("Unsupported value: null"). Found by the
/// soundness run's witnesses (seed 42, a `number` and a map of booleans).
#[test]
fn a_null_on_a_nullable_field_must_still_be_one_of_its_enum_values() {
    let s = spec(json!({
        "a": {"type": "number", "enum": [2], "nullable": true},
        "m": {"type": "object", "additionalProperties": {
            "type": "boolean", "enum": [true], "nullable": true}},
        "n": {"type": "string", "enum": ["x", null], "nullable": true}
    }));
    let o = run(s, json!({"spec": {"a": null, "m": {"k": null}, "n": null}}));
    let rules: Vec<&str> = found(&o).iter().map(|(_, r)| *r).collect();
    assert_eq!(rules, ["enum", "enum"], "{o:?}");
}

#[test]
fn nulls_in_objects_are_dropped_or_defaulted_and_nulls_in_lists_are_errors() {
    let s = spec(json!({
        "a": {"type": "string"},
        "b": {"type": "string", "default": "x"},
        "c": {"type": "string", "nullable": true},
        "l": {"type": "array", "items": {"type": "string"}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}}
    }));
    let o = run(
        s,
        json!({"spec": {"a": null, "b": null, "c": null, "l": ["x", null], "m": {"k": null}}}),
    );
    assert_eq!(found(&o), [("spec.l[1]", "nullable")]);
    assert!(one(&o).rule.is_blocking());
    assert_eq!(
        pruned(&o),
        [
            ("spec.a", PrunedKind::NullDropped),
            ("spec.b", PrunedKind::Defaulted),
            ("spec.m[k]", PrunedKind::NullDropped),
        ]
    );
}

#[test]
fn enum_lists_the_supported_values() {
    let s = spec(json!({"mode": {"type": "string", "enum": ["a", "b"]}}));
    assert!(run(s.clone(), json!({"spec": {"mode": "a"}})).is_clean());
    let o = run(s, json!({"spec": {"mode": "c"}}));
    let v = one(&o);
    assert_eq!(v.rule, Rule::Enum);
    assert_eq!(
        v.message,
        "Unsupported value: \"c\": supported values: \"a\", \"b\""
    );
    assert!(v.ratchetable);
}

#[test]
fn minimum_and_maximum_with_exclusive_flags_at_the_boundary() {
    let s = spec(json!({
        "a": {"type": "integer", "minimum": 2, "maximum": 4},
        "b": {"type": "integer", "minimum": 2, "exclusiveMinimum": true,
              "maximum": 4, "exclusiveMaximum": true}
    }));
    assert!(run(s.clone(), json!({"spec": {"a": 2, "b": 3}})).is_clean());
    assert!(run(s.clone(), json!({"spec": {"a": 4}})).is_clean());
    let o = run(s.clone(), json!({"spec": {"a": 1, "b": 2}}));
    assert_eq!(found(&o), [("spec.a", "minimum"), ("spec.b", "minimum")]);
    assert_eq!(
        o.violations[0].message,
        "Invalid value: 1: spec.a in body should be greater than or equal to 2"
    );
    assert_eq!(
        o.violations[1].message,
        "Invalid value: 2: spec.b in body should be greater than 2"
    );
    let o = run(s, json!({"spec": {"a": 5, "b": 4}}));
    assert_eq!(found(&o), [("spec.a", "maximum"), ("spec.b", "maximum")]);
    assert!(o.violations[1].message.ends_with("should be less than 4"));
}

#[test]
fn multiple_of_for_integers_and_floats() {
    let s = spec(
        json!({"i": {"type": "integer", "multipleOf": 3}, "f": {"type": "number", "multipleOf": 0.5}}),
    );
    assert!(run(s.clone(), json!({"spec": {"i": 9, "f": 1.5}})).is_clean());
    let o = run(s, json!({"spec": {"i": 7, "f": 1.2}}));
    assert_eq!(
        found(&o),
        [("spec.f", "multipleOf"), ("spec.i", "multipleOf")]
    );
    assert!(
        o.violations[1]
            .message
            .ends_with("should be a multiple of 3")
    );
}

#[test]
fn string_lengths_count_code_points() {
    let s = spec(json!({"s": {"type": "string", "minLength": 2, "maxLength": 3}}));
    assert!(run(s.clone(), json!({"spec": {"s": "été"}})).is_clean());
    let o = run(s.clone(), json!({"spec": {"s": "étés"}}));
    assert_eq!(found(&o), [("spec.s", "maxLength")]);
    assert_eq!(
        one(&o).message,
        "Too long: \"étés\": may not be more than 3 characters (has 4)"
    );
    let o = run(s, json!({"spec": {"s": "é"}}));
    assert_eq!(found(&o), [("spec.s", "minLength")]);
}

#[test]
fn pattern_is_an_unanchored_search() {
    let s = spec(
        json!({"s": {"type": "string", "pattern": "[0-9]+"}, "t": {"type": "string", "pattern": "^[a-z]+$"}}),
    );
    assert!(run(s.clone(), json!({"spec": {"s": "abc1", "t": "abc"}})).is_clean());
    let o = run(s, json!({"spec": {"s": "abc", "t": "abc1"}}));
    assert_eq!(found(&o), [("spec.s", "pattern"), ("spec.t", "pattern")]);
    assert_eq!(
        o.violations[1].message,
        "Invalid value: \"abc1\": spec.t in body should match '^[a-z]+$'"
    );
}

#[test]
fn a_pattern_that_does_not_compile_is_an_error() {
    let err = compile(
        &spec(json!({"s": {"type": "string", "pattern": "(?=x)"}})),
        33,
    )
    .unwrap_err();
    assert!(matches!(err, ValidateError::BadPattern { ref path, .. } if path == "^.spec.s"));
    // Rust would accept this one; Go (the API server) does not, and says why.
    let err = compile(
        &spec(json!({"s": {"type": "string", "pattern": "a**"}})),
        33,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "^.spec.s: pattern \"a**\" does not compile: error parsing regexp: \
         invalid nested repetition operator: `**`"
    );
    assert!(matches!(
        compile(
            &spec(json!({"s": {"type": "string", "maxLength": "5"}})),
            33
        )
        .unwrap_err(),
        ValidateError::BadKeyword {
            keyword: "maxLength",
            ..
        }
    ));
}

#[test]
fn formats_known_to_the_server_are_checked_and_others_ignored() {
    let s = spec(json!({
        "t": {"type": "string", "format": "date-time"},
        "q": {"type": "string", "format": "quantity"},
        "n": {"type": "string", "format": "k8s-short-name"}
    }));
    let obj = json!({"spec": {"t": "yesterday", "q": "nonsense", "n": "Not_A_Name"}});
    let v = compile(&s, 35).unwrap();
    let o = v.validate(&obj);
    assert_eq!(found(&o), [("spec.n", "format"), ("spec.t", "format")]);
    assert_eq!(
        o.violations[1].message,
        "Invalid value: \"yesterday\": spec.t in body must be of type date-time: \"yesterday\""
    );
    // k8s-short-name is not enforced by a 1.34 server.
    let v = compile(&s, 34).unwrap();
    assert_eq!(found(&v.validate(&obj)), [("spec.t", "format")]);
}

#[test]
fn item_counts_and_set_duplicates() {
    let s = spec(json!({"l": {"type": "array", "minItems": 1, "maxItems": 3,
        "x-kubernetes-list-type": "set", "items": {"type": "string"}}}));
    assert!(run(s.clone(), json!({"spec": {"l": ["a", "b"]}})).is_clean());
    let o = run(s.clone(), json!({"spec": {"l": []}}));
    assert_eq!(found(&o), [("spec.l", "minItems")]);
    let o = run(s, json!({"spec": {"l": ["a", "b", "a", "c"]}}));
    assert_eq!(
        found(&o),
        [
            ("spec.l", "maxItems"),
            ("spec.l[2]", "x-kubernetes-list-type=set")
        ]
    );
    assert_eq!(
        o.violations[0].message,
        "Too many: 4: must have at most 3 items"
    );
    assert_eq!(o.violations[1].message, "Duplicate value: \"a\"");
    assert!(o.violations[0].ratchetable);
    assert!(
        o.violations[1].ratchetable,
        "updates of an object that already holds duplicates pass"
    );
}

#[test]
fn list_map_keys_are_compared_after_defaulting() {
    let s = spec(
        json!({"ports": {"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["port", "protocol"],
        "items": {"type": "object", "required": ["port"], "properties": {
            "port": {"type": "integer"},
            "protocol": {"type": "string", "default": "TCP"}}}}}),
    );
    let ok = json!({"spec": {"ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}]}});
    let o = run(s.clone(), ok);
    assert!(o.violations.is_empty(), "{:?}", o.violations);
    let o = run(
        s,
        json!({"spec": {"ports": [{"port": 80}, {"port": 80, "protocol": "TCP"}]}}),
    );
    assert_eq!(found(&o), [("spec.ports[1]", "x-kubernetes-list-type=map")]);
    assert_eq!(
        one(&o).message,
        "Duplicate value: {\"port\":80,\"protocol\":\"TCP\"}"
    );
    assert_eq!(one(&o).schema_path.to_string(), "^.spec.ports[*]");
}

#[test]
fn unknown_fields_are_pruned_and_not_descended() {
    let s = spec(json!({"a": {"type": "string"}}));
    let o = run(
        s,
        json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "whatever": 1},
               "status": {"deep": {"er": 1}}, "spec": {"a": "x", "b": {"c": 1}}}),
    );
    assert!(o.violations.is_empty());
    assert_eq!(
        pruned(&o),
        [
            ("spec.b", PrunedKind::Unknown),
            ("status", PrunedKind::Unknown)
        ]
    );
    assert_eq!(o.pruned[0].schema_path.to_string(), "^.spec.b");
}

#[test]
fn preserve_unknown_fields_and_additional_properties() {
    let s = spec(json!({
        "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"n": {"type": "integer"}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
        "any": {"type": "object", "additionalProperties": true}
    }));
    let o = run(
        s,
        json!({"spec": {"raw": {"n": "x", "other": {"deep": 1}},
                        "labels": {"ok": "abc", "bad": "abcd"}, "any": {"x": [1]}}}),
    );
    assert_eq!(
        found(&o),
        [("spec.labels[bad]", "maxLength"), ("spec.raw.n", "type")]
    );
    assert_eq!(o.violations[0].schema_path.to_string(), "^.spec.labels{*}");
    assert!(o.pruned.is_empty());
}

#[test]
fn properties_are_counted_after_pruning_and_defaulting() {
    let s = spec(
        json!({"m": {"type": "object", "minProperties": 2, "maxProperties": 2,
        "properties": {"a": {"type": "string"}, "b": {"type": "string", "default": "d"}}}}),
    );
    // `x` is pruned, `b` is defaulted: two properties remain.
    let o = run(s.clone(), json!({"spec": {"m": {"a": "1", "x": "2"}}}));
    assert!(o.violations.is_empty(), "{:?}", o.violations);
    let o = run(s, json!({"spec": {"m": {"a": null}}}));
    assert_eq!(found(&o), [("spec.m", "minProperties")]);
}

#[test]
fn required_is_checked_after_defaulting_and_null_dropping() {
    let s = json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object",
        "required": ["a", "b", "c"], "properties": {
        "a": {"type": "string"}, "b": {"type": "string", "default": "x"},
        "c": {"type": "string", "nullable": true}}}}});
    let o = run(s.clone(), json!({"spec": {"a": "1", "c": null}}));
    assert!(o.violations.is_empty());
    assert_eq!(pruned(&o), [("spec.b", PrunedKind::Defaulted)]);
    let o = run(s.clone(), json!({"spec": {"a": null, "c": null}}));
    assert_eq!(found(&o), [("spec.a", "required")]);
    assert_eq!(one(&o).message, "Required value");
    assert!(
        one(&o).ratchetable,
        "a missing required field is ratcheted at the object that lacks it"
    );
    let o = run(s, json!({"kind": "K"}));
    assert_eq!(found(&o), [("spec", "required")]);
}

#[test]
fn embedded_resources_need_api_version_and_kind() {
    let s = spec(
        json!({"template": {"type": "object", "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true}}),
    );
    let ok = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {}}}});
    assert!(run(s.clone(), ok).is_clean());
    let o = run(s, json!({"spec": {"template": {"kind": ""}}}));
    assert_eq!(
        found(&o),
        [
            ("spec.template.apiVersion", "x-kubernetes-embedded-resource"),
            ("spec.template.kind", "x-kubernetes-embedded-resource")
        ]
    );
    assert!(!o.violations[0].ratchetable);
}

#[test]
fn root_metadata_is_kept_and_only_name_rules_apply() {
    let s = json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}},
        "spec": {"type": "object"}}});
    let o = run(
        s.clone(),
        json!({"metadata": {"name": "abc", "labels": {"a": "b"}}, "spec": {}}),
    );
    assert!(o.is_clean(), "{o:?}");
    let o = run(s, json!({"metadata": {"name": "abcdef"}}));
    assert_eq!(found(&o), [("metadata.name", "maxLength")]);
}

#[test]
fn junctors_validate_values_and_ratchet_like_any_keyword() {
    let s = spec(json!({
        "one": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
        "any": {"x-kubernetes-int-or-string": true,
                "anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+%$"}]},
        "all": {"type": "string", "allOf": [{"maxLength": 2}, {"pattern": "a"}]},
        "not": {"type": "object", "properties": {"a": {"type": "string"}}, "not": {"required": ["a"]}}
    }));
    let ok = json!({"spec": {"one": {"a": "x"}, "any": "50%", "all": "a", "not": {}}});
    let o = run(s.clone(), ok);
    assert!(o.is_clean(), "{o:?}");
    let bad = json!({"spec": {"one": {"a": "x", "b": "y"}, "any": "half", "all": "bbb", "not": {"a": "x"}}});
    let o = run(s, bad);
    assert_eq!(
        found(&o),
        [
            ("spec.all", "allOf"),
            ("spec.all", "allOf"),
            ("spec.any", "anyOf"),
            ("spec.not", "not"),
            ("spec.one", "oneOf"),
        ]
    );
    assert!(o.violations.iter().all(|v| v.ratchetable));
    assert!(
        o.violations[0]
            .message
            .starts_with("allOf[0]: maxLength: Too long")
    );
    assert!(o.violations[4].message.contains("2 matched"));
}

#[test]
fn junctor_branches_see_the_decoded_object() {
    // `b` has a default, so `required: [b]` in a branch holds; `x` is pruned.
    let s = spec(json!({"o": {"type": "object",
        "properties": {"b": {"type": "string", "default": "d"}},
        "anyOf": [{"required": ["b"]}], "not": {"required": ["x"]}}}));
    let o = run(s, json!({"spec": {"o": {"x": 1}}}));
    assert!(o.violations.is_empty(), "{:?}", o.violations);
}

fn cel_schema(rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object",
    "x-kubernetes-validations": rules,
    "properties": {
        "min": {"type": "integer"}, "max": {"type": "integer"},
        "replicas": {"type": "integer", "default": 1},
        "my-name": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
    }}}})
}

#[test]
fn cel_rules_pass_and_fail_with_their_message() {
    let s = cel_schema(json!([
        {"rule": "self.min <= self.max", "message": "min must not exceed max"},
        {"rule": "self.replicas >= 1", "messageExpression": "'replicas is ' + string(self.replicas)"}
    ]));
    let v = validator(s);
    assert!(v.has_cel_rules());
    assert!(
        v.validate(&json!({"spec": {"min": 1, "max": 2}}))
            .violations
            .is_empty()
    );
    let o = v.validate(&json!({"spec": {"min": 3, "max": 2, "replicas": 0}}));
    assert_eq!(
        found(&o),
        [
            ("spec", "x-kubernetes-validations"),
            ("spec", "x-kubernetes-validations")
        ]
    );
    assert_eq!(o.violations[0].message, "min must not exceed max");
    assert_eq!(o.violations[1].message, "replicas is 0");
    assert!(o.violations[0].ratchetable);
    assert!(o.not_evaluated.is_empty());
}

#[test]
fn cel_sees_defaults_escaped_names_and_unescaped_map_keys() {
    let s = cel_schema(json!([
        {"rule": "self.replicas == 1"},
        {"rule": "self.my__dash__name == 'x'"},
        {"rule": "'a-b' in self.labels"}
    ]));
    let o = run(s, json!({"spec": {"my-name": "x", "labels": {"a-b": "c"}}}));
    assert!(o.violations.is_empty(), "{:?}", o.violations);
    assert!(o.not_evaluated.is_empty(), "{:?}", o.not_evaluated);
}

#[test]
fn cel_names_keep_single_underscores_and_escape_double_ones() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object",
    "properties": {"foo_bar": {"type": "string"}, "a__b": {"type": "string"}},
    "x-kubernetes-validations": [
        {"rule": "self.foo_bar == 'x'", "message": "foo_bar"},
        {"rule": "self.a__underscores__b == 'y'", "message": "a__b"}
    ]}}});
    let o = run(s.clone(), json!({"spec": {"foo_bar": "x", "a__b": "y"}}));
    assert!(
        o.violations.is_empty() && o.not_evaluated.is_empty(),
        "{o:?}"
    );
    let o = run(s, json!({"spec": {"foo_bar": "z", "a__b": "y"}}));
    assert_eq!(one(&o).message, "foo_bar");
}

#[test]
fn a_missing_field_is_a_cel_failure_like_the_server() {
    let s = cel_schema(json!([{"rule": "self.min > 0", "fieldPath": ".min"}]));
    let o = run(s, json!({"spec": {}}));
    let v = one(&o);
    assert_eq!(v.rule, Rule::Cel);
    assert_eq!(v.path, "spec.min");
    assert_eq!(v.message, "no such key: min");
}

#[test]
fn transition_rules_are_skipped_on_create_unless_old_self_is_optional() {
    let s = cel_schema(json!([
        {"rule": "self.min == oldSelf.min"},
        {"rule": "!oldSelf.hasValue() && self.min > 5", "optionalOldSelf": true, "message": "too small"}
    ]));
    let o = run(s, json!({"spec": {"min": 1}}));
    assert!(o.not_evaluated.is_empty(), "{:?}", o.not_evaluated);
    let v = one(&o);
    assert_eq!(v.message, "too small");
    assert!(!v.ratchetable);
}

/// The `cel` crate's program is built only for a rule the direct evaluator
/// cannot decide; a rule whose program would not build is still reported,
/// whatever the direct evaluator could have said.
#[test]
fn the_cel_crate_program_is_built_only_when_needed() {
    let v = validator(cel_schema(json!([
        {"rule": "self.min > 0", "message": "positive"},
        {"rule": "self.min > 0", "messageExpression": "'bad' +"},
        {"rule": "self.min > 0", "fieldPath": 5},
        {"rule": "self.?min.orValue(1) > 0"},
        {"rule": "self.min > 2", "messageExpression": "'min is ' + string(self.min)"}
    ])));
    let o = v.validate(&json!({"spec": {"min": 1}}));
    let skipped: Vec<&str> = o.not_evaluated.iter().map(|n| n.reason.as_str()).collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(skipped.iter().all(|r| r.starts_with("does not compile")));
    assert_eq!(one(&o).message, "min is 1");
    let rules = v.root.properties["spec"].rules.get();
    assert!(rules[0].direct.is_some());
    assert!(rules[0].compiled_yet().is_none(), "decided directly");
    assert!(
        rules[4].compiled_yet().is_some(),
        "its message needed the program"
    );
}

#[test]
fn rules_that_cannot_be_evaluated_are_reported_not_passed() {
    let s = cel_schema(json!([
        {"rule": "self.min ==="},
        {"rule": "cel.bind(x, self.min, x > 0)"},
        {"rule": "self.min > 'x'"}
    ]));
    let o = run(s, json!({"spec": {"min": 1}}));
    assert!(o.violations.is_empty(), "{:?}", o.violations);
    let rules: Vec<&str> = o.not_evaluated.iter().map(|n| n.rule.as_str()).collect();
    assert_eq!(
        rules,
        [
            "self.min ===",
            "cel.bind(x, self.min, x > 0)",
            "self.min > 'x'"
        ]
    );
    assert!(o.not_evaluated[0].reason.starts_with("does not compile"));
    assert!(
        o.not_evaluated
            .iter()
            .all(|n| n.schema_path.to_string() == "^.spec")
    );
}

#[test]
fn cel_on_list_items_and_formats() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.at < timestamp('2030-01-01T00:00:00Z')", "message": "too late"}],
            "properties": {"at": {"type": "string", "format": "date-time"},
                           "every": {"type": "string", "format": "duration"}}}},
        "period": {"type": "string", "format": "duration",
            "x-kubernetes-validations": [{"rule": "self > duration('1m')"}]}
    }}}});
    let o = run(
        s,
        json!({"spec": {"items": [{"at": "2024-01-01T00:00:00Z"}, {"at": "2031-01-01T00:00:00Z"}],
                        "period": "30s"}}),
    );
    assert_eq!(
        found(&o),
        [
            ("spec.items[1]", "x-kubernetes-validations"),
            ("spec.period", "x-kubernetes-validations")
        ]
    );
    assert_eq!(
        o.violations[1].message,
        "failed rule: self > duration('1m')"
    );
    assert_eq!(o.violations[0].schema_path.to_string(), "^.spec.items[*]");
}

#[test]
fn hostile_nesting_does_not_overflow() {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(|| {
            let mut deep = json!(1);
            for _ in 0..10_000 {
                // Not `json!`, which would re-serialize `deep` every time.
                let mut m = serde_json::Map::new();
                m.insert("a".to_string(), deep);
                deep = Value::Object(m);
            }
            let s = spec(
                json!({"raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-validations": [{"rule": "has(self.a)"}]},
                "set": {"type": "array", "x-kubernetes-list-type": "set",
                        "items": {"x-kubernetes-preserve-unknown-fields": true}}}),
            );
            let mut spec = serde_json::Map::new();
            spec.insert("raw".to_string(), deep.clone());
            spec.insert("set".to_string(), Value::Array(vec![deep.clone(), deep]));
            let mut obj = serde_json::Map::new();
            obj.insert("spec".to_string(), Value::Object(spec));
            let obj = Value::Object(obj);
            let o = run(s, obj);
            assert!(o.violations.is_empty(), "{:?}", o.violations);
            assert_eq!(o.not_evaluated.len(), 1);
            assert!(o.not_evaluated[0].reason.contains("nests deeper"));
        })
        .expect("spawn")
        .join()
        .expect("no panic");
}

#[test]
fn the_validator_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Validator>();
}

#[test]
fn rule_ids_are_the_schema_keywords() {
    assert_eq!(Rule::MaxLength.id(), "maxLength");
    assert_eq!(Rule::Cel.id(), "x-kubernetes-validations");
    assert!(Rule::Type.is_blocking() && Rule::Enum.is_blocking() && !Rule::MaxLength.is_blocking());
}

#[test]
fn self_size_and_matches_agree_with_the_cel_crate() {
    let props = json!({
        "list": {"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.size() == size(self) && self.size() == 3"}]},
        "map": {"type": "object", "additionalProperties": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.size() == size(self) && self.size() == 2"}]},
        "str": {"type": "string",
            "x-kubernetes-validations": [
                {"rule": "self.size() == size(self) && self.size() == 4"},
                {"rule": "self.matches('^ab+c$')"},
                {"rule": "self.matches('^x')", "message": "no x"},
                {"rule": "self.matches('(')"}
            ]},
        "raw": {"type": "string", "format": "byte",
            "x-kubernetes-validations": [{"rule": "self.size() == size(self) && self.size() == 2"}]},
        "num": {"type": "integer",
            "x-kubernetes-validations": [{"rule": "self.size() == 1"}, {"rule": "size(self) == 1"}]},
        "items": {"type": "array", "items": {"type": "object",
            "properties": {"tags": {"type": "array", "items": {"type": "string"}}}},
            "x-kubernetes-validations": [{"rule": "self.all(x, x.tags.all(self, self.size() < 3))"}]}
    });
    let object = json!({"spec": {"list": ["a", "b", "c"], "map": {"a": "1", "b": "2"},
        "str": "abbc", "raw": "AAE=", "num": 5, "items": [{"tags": ["ab", "cde"]}]}});
    // Twice, so that the second run uses the cached regexes.
    for _ in 0..2 {
        let o = run(spec(props.clone()), object.clone());
        let failed: Vec<(&str, &str)> = o
            .violations
            .iter()
            .map(|v| (v.path.as_str(), v.message.as_str()))
            .collect();
        assert_eq!(
            failed,
            [
                (
                    "spec.items",
                    "failed rule: self.all(x, x.tags.all(self, self.size() < 3))"
                ),
                ("spec.str", "no x")
            ]
        );
        let reasons: Vec<(&str, &str)> = o
            .not_evaluated
            .iter()
            .map(|n| (n.rule.as_str(), n.reason.as_str()))
            .collect();
        assert_eq!(reasons.len(), 3, "{reasons:#?}");
        assert_eq!(reasons[0].0, "self.size() == 1");
        assert_eq!(reasons[1].0, "size(self) == 1");
        assert_eq!(reasons[0].1, reasons[1].1);
        assert!(
            reasons[0].1.contains("cannot determine the size"),
            "{reasons:#?}"
        );
        assert_eq!(reasons[2].0, "self.matches('(')");
        assert!(reasons[2].1.contains("not a valid regex"), "{reasons:#?}");
    }
}

/// A schema whose rules use what `cel::direct` decides and what it leaves to
/// the `cel` crate (formats, doubles, maps, nulls, root metadata).
fn direct_schema() -> Value {
    json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "!has(self.spec.name) || self.spec.name != self.metadata.name"}],
        "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "!has(self.lo) || !has(self.hi) || self.lo <= self.hi", "message": "lo <= hi"},
            {"rule": "self.mode in ['A', 'B']", "messageExpression": "'mode ' + self.mode"},
            {"rule": "(has(self.items) ? size(self.items) : 0) + (has(self.tags) ? self.tags.size() : 0) < 5"},
            {"rule": "!has(self.when) || self.when > timestamp('2024-01-01T00:00:00Z')"},
            {"rule": "!has(self.ratio) || self.ratio >= 0.5"},
            {"rule": "self.lo > 1"}
        ],
        "properties": {
            "name": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self.startsWith('n-')"}, {"rule": "self.matches('^n-[a-z]+$')"},
                {"rule": "size(self) < 6 && !self.contains('--') && !self.endsWith('-')"}]},
            "lo": {"type": "integer"}, "hi": {"type": "integer"},
            "mode": {"type": "string", "default": "A"},
            "when": {"type": "string", "format": "date-time"},
            "ratio": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "!('*' in self && self.size() > 1)"}]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(k, k.size() < 3)"}, {"rule": "!has(self.x)"}]},
            "items": {"type": "array",
                "x-kubernetes-validations": [
                    {"rule": "self.filter(f, f.type == 'A').size() <= 1"},
                    {"rule": "self.all(x, self.exists_one(y, x.type == y.type))"},
                    {"rule": "self.map(x, x.type).exists(t, t == 'C') || self.size() == 0"},
                    {"rule": "self.size() == 0 || self[0].type != 'B'"}],
                "items": {"type": "object", "properties": {
                    "type": {"type": "string"}, "a": {"type": "string"},
                    "b": {"type": "integer", "nullable": true}},
                    "x-kubernetes-validations": [
                        {"rule": "!(has(self.a) && self.type != 'A')", "fieldPath": ".a"},
                        {"rule": "!has(self.b) || self.b == null || self.b > 0"}]}}}}}})
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// Evaluating in place gives the same outcome as the `cel` crate alone.
    #[test]
    fn direct_evaluation_agrees_with_the_cel_crate(
        fields in proptest::collection::vec((0usize..9, 0usize..12), 0..9),
    ) {
        use proptest::prelude::*;
        let scalars = [json!(null), json!("A"), json!("B"), json!("C"), json!("n-ab"),
            json!("n--"), json!("*"), json!(0), json!(3), json!(-2), json!(1.5),
            json!("2023-05-01T00:00:00Z")];
        let names = ["name", "lo", "hi", "mode", "when", "ratio", "tags", "labels", "items"];
        let mut spec = serde_json::Map::new();
        for (f, s) in &fields {
            let v = match names[*f] {
                "tags" => json!(scalars.iter().skip(*s).step_by(3).cloned().collect::<Vec<_>>()),
                "labels" => json!({"ab": scalars[*s], "x": "y"}).as_object().map(|m| {
                    Value::Object(m.iter().take(*s % 3).map(|(k, v)| (k.clone(), v.clone())).collect())
                }).unwrap_or_default(),
                "items" => json!((0..*s % 4).map(|i| {
                    let mut o = json!({"type": scalars[(s + i) % 4 + 1], "b": scalars[(s * 3 + i) % 12]});
                    if (s + i) % 3 == 0 { o["a"] = json!("x"); }
                    o
                }).collect::<Vec<_>>()),
                _ => scalars[*s].clone(),
            };
            spec.insert(names[*f].to_string(), v);
        }
        let object = json!({"metadata": {"name": "n-ab"}, "spec": spec});
        let v = validator(direct_schema());
        let mut direct = ValidationOutcome::default();
        let mut slow = ValidationOutcome::default();
        rules::evaluate_with(&v.root, &object, &mut direct, true);
        rules::evaluate_with(&v.root, &object, &mut slow, false);
        prop_assert_eq!(direct, slow, "{}", object);
    }
}

/// HTTPRoute's own rules (Gateway API v1.6.1, from the corpus when present)
/// on routes that pass and routes that break them: the same outcome either
/// way.
#[test]
fn direct_evaluation_agrees_on_http_routes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../shared/corpus/gateway-api-standard/v1.6.1/gateway.networking.k8s.io_httproutes.yaml",
    );
    let Ok(text) = std::fs::read_to_string(&path) else {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "{} not found (the corpus is required when CI=true)",
            path.display()
        );
        eprintln!("notice: {} not found; skipping", path.display());
        return;
    };
    let crd: Value = serde_yaml::from_str(&text).expect("CRD parses");
    let schema = crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == "v1"))
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
        .expect("v1 schema");
    let v = validator(schema);
    let filter = |t: &str, body: Value| {
        let mut f = json!({"type": t});
        if let Some(k) = body.as_object().and_then(|b| b.keys().next()) {
            f[k] = body[k].clone();
        }
        f
    };
    let redirect = json!({"requestRedirect": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/x"}}});
    let rewrite =
        json!({"urlRewrite": {"path": {"type": "ReplaceFullPath", "replacePrefixMatch": "/x"}}});
    let mirror = json!({"requestMirror": {"backendRef": {"name": "m", "group": "", "kind": "Service"},
        "percent": 5, "fraction": {"numerator": 3, "denominator": 2}}});
    let cors = json!({"cors": {"allowOrigins": ["*", "https://a"], "allowMethods": ["GET"]}});
    let specs = [
        json!({"parentRefs": [{"name": "gw"}, {"name": "gw"}], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "//a/../"}}]}]}),
        json!({"parentRefs": [{"name": "gw", "namespace": "a"}, {"name": "gw", "namespace": "b", "sectionName": "x"}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/a"}}, {"path": {"type": "Exact", "value": "/b%2F"}}],
                "filters": [filter("RequestRedirect", redirect.clone()), filter("URLRewrite", rewrite.clone())],
                "backendRefs": [{"name": "b", "filters": [filter("RequestMirror", mirror.clone())]}]}]}),
        json!({"rules": [{"matches": [{"path": {"type": "RegularExpression", "value": "^/a.*"}}],
                "filters": [filter("CORS", cors.clone()), filter("CORS", cors.clone()), filter("RequestMirror", json!({}))],
                "backendRefs": [{"name": "b", "kind": "Service", "group": ""}],
                "timeouts": {"request": "10s", "backendRequest": "20s"}}]}),
        json!({"rules": [{"filters": [filter("RequestRedirect", redirect.clone())], "backendRefs": [{"name": "b", "port": 80}]},
                {"matches": [{"path": {"type": "Exact", "value": "/ok"}, "method": "GET",
                    "headers": [{"name": "x", "value": "1"}, {"name": "x", "value": "2"}]}]}]}),
        json!({"hostnames": ["a.example.com"], "rules": [{"backendRefs": [{"name": "b", "port": 80, "weight": 1}],
                "filters": [filter("ExtensionRef", json!({"extensionRef": {"group": "g", "kind": "K", "name": "n"}}))]}]}),
    ];
    for spec in specs {
        let object = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "r", "namespace": "default"}, "spec": spec});
        let mut direct = ValidationOutcome::default();
        let mut slow = ValidationOutcome::default();
        rules::evaluate_with(&v.root, &object, &mut direct, true);
        rules::evaluate_with(&v.root, &object, &mut slow, false);
        assert_eq!(direct, slow, "{object}");
    }
}

/// The common forms are decided in place; a `date-time` string or a double
/// is left to the `cel` crate.
#[test]
fn common_rules_are_decided_in_place_and_the_rest_left_to_the_cel_crate() {
    let v = validator(direct_schema());
    let spec_node = &v.root.properties["spec"];
    let spec = json!({"lo": 5, "hi": 3, "mode": "A", "when": "2023-05-01T00:00:00Z", "ratio": 1.5});
    let decided: Vec<Option<bool>> = spec_node
        .rules
        .get()
        .iter()
        .map(|r| {
            let mut scope = crate::cel::direct::Scope::default();
            r.direct
                .as_ref()
                .and_then(|p| crate::cel::direct::evaluate(p, spec_node, &spec, false, &mut scope))
        })
        .collect();
    assert_eq!(
        decided,
        [Some(false), Some(true), Some(true), None, None, Some(true)]
    );
}

/// Objects are validated against rules as deep as the API server accepts
/// on the stack of the threads that scan ([`crate::parallel::STACK_BYTES`],
/// here in a debug build); what is nested deeper than the `cel` crate
/// reads, or deeper than the server accepts, is reported as not evaluated,
/// with the reason, and never parsed.
#[test]
fn rules_as_deep_as_the_server_accepts_are_evaluated_or_said_not_to_be() {
    let (accepted, refused) = crate::cel::depth::deepest_rules();
    let validated = crate::parallel::thread()
        .spawn(move || {
            let rules: Vec<Value> = accepted
                .iter()
                .chain(&refused)
                .map(|r| json!({"rule": r}))
                .collect();
            let schema = spec(json!({"n": {"type": "integer", "x-kubernetes-validations": rules}}));
            let holds = run(schema.clone(), json!({"spec": {"n": 5}}));
            let fails = run(schema, json!({"spec": {"n": -5}}));
            ((holds, fails), accepted, refused)
        })
        .expect("a thread")
        .join();
    let Ok(((o, fails), accepted, refused)) = validated else {
        panic!("the validation panicked");
    };
    // Every rule holds for 5: no violation, whatever was evaluated; for -5
    // every one evaluated fails but the list comparison.
    assert!(o.violations.is_empty(), "{:#?}", o.violations);
    let evaluated = accepted
        .iter()
        .filter(|r| crate::cel::depth::measure(r).nesting <= crate::cel::depth::CEL_CRATE_NESTING)
        .count();
    assert_eq!(
        fails.violations.len(),
        evaluated - 1,
        "{:#?}",
        fails.violations
    );
    let reason = |r: &String| {
        o.not_evaluated
            .iter()
            .find(|n| &n.rule == r)
            .map(|n| n.reason.as_str())
    };
    for r in &accepted {
        let nesting = crate::cel::depth::measure(r).nesting;
        match reason(r) {
            None => assert!(nesting <= crate::cel::depth::CEL_CRATE_NESTING),
            Some(why) => assert!(why.contains("more than the 96 crd-safety reads"), "{why}"),
        }
    }
    for r in &refused {
        let why = reason(r).unwrap_or_default();
        assert!(
            why.contains("recursion") || why.contains("size exceeds"),
            "{why}: {}",
            &r[..60]
        );
    }
}
