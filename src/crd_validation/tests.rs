//! Rules pinned from the API server's source; `tests/live/crd_validation.rs`
//! holds them to a real kube-apiserver.

use serde_json::{Value, json};

use super::*;

fn crd(schema: Value) -> Value {
    crate::crd::widget(json!([{"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": schema}}]))
}

/// The errors `validate_crd` reports for `m`, updating `old`, as text.
fn errors_on(m: &Value, old: Option<&Value>, minor: u32) -> Vec<String> {
    validate_crd(m, old, KubeVersion { minor })
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn errors(m: &Value) -> Vec<String> {
    errors_on(m, None, KubeVersion::NEWEST.minor)
}

/// A CRD whose `spec` has the properties `props` and the one CEL rule `rule`.
fn with_spec_rule(props: &Value, rule: &str) -> Value {
    crd(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": props, "x-kubernetes-validations": [{"rule": rule}]}}}),
    )
}

#[test]
fn a_valid_crd_has_no_errors() {
    let m = crd(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"size": {"type": "integer", "default": 1, "minimum": 0}}}}}),
    );
    assert_eq!(errors(&m), Vec::<String>::new());
}

#[test]
fn an_object_without_type_is_not_structural() {
    let m = crd(json!({"type": "object", "properties": {"spec": {
        "properties": {"size": {"type": "integer"}}}}}));
    assert_eq!(
        errors(&m),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
        ]
    );
}

#[test]
fn differing_version_schemas_report_per_version() {
    let mut m = crd(json!({"type": "object"}));
    m["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object",
            "properties": {"a": {"uniqueItems": true, "type": "array", "items": {"type": "string"}}}}}}
    ]);
    assert_eq!(
        errors(&m),
        vec![
            "spec.versions[1].schema.openAPIV3Schema.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        ]
    );
}

#[test]
fn two_storage_versions_and_a_repeated_version_are_reported() {
    let s = json!({"openAPIV3Schema": {"type": "object"}});
    let mut m = crd(json!({"type": "object"}));
    m["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": true, "schema": s},
        {"name": "v1", "served": true, "storage": true, "schema": s}
    ]);
    let e = errors(&m);
    assert!(
        e.iter()
            .any(|e| e.contains("must contain unique version names")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|e| e.contains("exactly one version marked as storage")),
        "{e:?}"
    );
}

#[test]
fn a_list_map_key_needs_required_or_default() {
    let m = crd(
        json!({"type": "object", "properties": {"ports": {"type": "array",
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
        "items": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "protocol": {"type": "string"}}}}}}),
    );
    assert_eq!(
        errors(&m),
        vec![
            "spec.validation.openAPIV3Schema.properties[ports].items.properties[protocol].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
        ]
    );
}

#[test]
fn defaults_must_validate_and_survive_pruning() {
    let m = crd(json!({"type": "object", "properties": {
        "size": {"type": "integer", "minimum": 1, "default": 0},
        "opts": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"b": "x"}}}}));
    let mut e = errors(&m);
    e.sort();
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e[0].starts_with("spec.validation.openAPIV3Schema.properties[opts].default: Invalid value: {\"b\":\"x\"}: must not have unknown fields"), "{e:?}");
    assert!(
        e[1].starts_with(
            "spec.validation.openAPIV3Schema.properties[size].default: Invalid value: 0:"
        ),
        "{e:?}"
    );
}

#[test]
fn junctors_may_not_carry_structure() {
    let m = crd(
        json!({"type": "object", "properties": {"a": {"type": "string",
        "anyOf": [{"type": "string"}, {"description": "x"}]}}}),
    );
    let e = errors(&m);
    assert!(e.contains(&"spec.validation.openAPIV3Schema.properties[a].anyOf[0].type: Forbidden: must be empty to be structural".to_string()), "{e:?}");
    assert!(e.contains(&"spec.validation.openAPIV3Schema.properties[a].anyOf[1].description: Forbidden: must be empty to be structural".to_string()), "{e:?}");
}

#[test]
fn int_or_string_spelled_out_is_allowed() {
    let m = crd(json!({"type": "object", "properties": {"port": {
        "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}]}}}));
    assert_eq!(errors(&m), Vec::<String>::new());
}

#[test]
fn helm_template_text_in_a_label_is_refused() {
    let mut m = crd(json!({"type": "object"}));
    m["metadata"]["labels"] = json!({"app.kubernetes.io/version": "{{ .Chart.AppVersion }}"});
    let e = errors(&m);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with(
            "metadata.labels: Invalid value: \"{{ .Chart.AppVersion }}\": a valid label must be"
        ),
        "{e:?}"
    );
}

#[test]
fn the_name_must_be_plural_dot_group() {
    let mut m = crd(json!({"type": "object"}));
    m["metadata"]["name"] = json!("widget.example.com");
    assert_eq!(
        errors(&m),
        vec![
            "metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group"
        ]
    );
}

#[test]
fn cel_syntax_errors_and_old_self_placement() {
    let m = crd(json!({"type": "object", "properties": {
        "a": {"type": "string", "x-kubernetes-validations": [{"rule": "self ==", "message": "m"}]},
        "l": {"type": "array", "items": {"type": "string", "maxLength": 10,
              "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}));
    let e = errors(&m);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e[0].starts_with("spec.validation.openAPIV3Schema.properties[a].x-kubernetes-validations[0].rule: Invalid value:"), "{e:?}");
    assert_eq!(
        e[1],
        "spec.validation.openAPIV3Schema.properties[l].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[l]"
    );
}

#[test]
fn metadata_at_the_root_only_takes_name_rules() {
    let m = crd(
        json!({"type": "object", "properties": {"metadata": {"type": "object",
        "properties": {"labels": {"type": "object"}}}}}),
    );
    assert_eq!(
        errors(&m),
        vec![
            "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ]
    );
}

#[test]
fn webhook_conversion_needs_review_versions_and_a_client() {
    let mut m = crd(json!({"type": "object"}));
    m["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {}});
    let e = errors(&m);
    assert_eq!(
        e,
        vec![
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.conversionReviewVersions: Required value",
        ]
    );
}

#[test]
fn an_update_does_not_tighten_what_the_stored_crd_had() {
    let bad_set = json!({"type": "object", "properties": {"l": {"type": "array",
        "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}});
    let m = crd(bad_set);
    assert_eq!(errors(&m).len(), 1);
    assert!(validate_crd(&m, Some(&m), KubeVersion::NEWEST).is_empty());
}

#[test]
fn kube_versions_parse_like_kubectl_prints_them() {
    assert_eq!("1.33".parse::<KubeVersion>(), Ok(KubeVersion { minor: 33 }));
    assert_eq!(
        "v1.34.2".parse::<KubeVersion>(),
        Ok(KubeVersion { minor: 34 })
    );
    assert!("1.99".parse::<KubeVersion>().is_err());
    assert!("two".parse::<KubeVersion>().is_err());
}

/// A node with more keywords than the small-map scan covers is read through
/// the map's own lookup (this once recursed without end).
#[test]
fn a_node_with_many_keywords_is_validated() {
    let m = crd(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"size": {
            "type": "integer", "description": "d", "title": "t", "format": "int32",
            "minimum": 0, "maximum": 9, "exclusiveMinimum": false, "exclusiveMaximum": false,
            "multipleOf": 1, "enum": [1, 2], "nullable": true, "default": 3,
            "example": 1, "externalDocs": {"url": "https://example.com"},
            "x-kubernetes-validations": [{"rule": "self > 0"}],
            "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-embedded-resource": false,
            "x-kubernetes-int-or-string": false}}}}}),
    );
    let errs = errors(&m);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("properties[size].default"), "{errs:?}");
}

/// The schema is walked once on the assumption that it decodes and
/// converts to a structural schema; a problem found deep in the tree sends
/// it the careful way (decode, convert, walk again), which words it as the
/// server does.
#[test]
fn problems_deep_in_the_tree_are_found_and_worded_by_the_servers_order() {
    let deep = |leaf: Value| {
        crd(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"list": {"type": "array", "items": {"type": "object",
                "properties": {"leaf": leaf}}}}}}}),
        )
    };
    let at =
        "spec.validation.openAPIV3Schema.properties[spec].properties[list].items.properties[leaf]";
    // Undecodable: only the decoding error, nothing else is validated.
    let errs = errors(&deep(json!({"type": "string", "uniqueItems": true,
        "allOf": [{"maxLength": "5"}]})));
    assert_eq!(
        errs,
        vec![format!(
            "{at}.allOf[0].maxLength: Invalid value: \"5\": cannot be decoded: must be an integer"
        )]
    );
    // Refused by NewStructural: the OpenAPI errors, and the conversion's
    // own error only when there are none.
    let errs = errors(&deep(json!({"type": "string", "$ref": "#/definitions/x"})));
    assert_eq!(
        errs,
        vec![format!("{at}.$ref: Forbidden: $ref is not supported")]
    );
    let errs = errors(&deep(
        json!({"type": "object", "properties": {"x": {"type": "string"}},
        "x-kubernetes-preserve-unknown-fields": false}),
    ));
    assert_eq!(
        errs,
        vec![format!(
            "{at}.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
        )]
    );
    let errs = errors(&deep(json!({"type": "array", "items": []})));
    assert_eq!(
        errs,
        vec!["spec.validation.openAPIV3Schema: Invalid value: \"\": OpenAPIV3Schema 'items' must be a schema, but is an array".to_string()]
    );
    // Empty values of keywords NewStructural refuses are Go's zero values:
    // accepted (`$ref` and `additionalItems` are pointers in Go, refused
    // when present at all).
    let errs = errors(&deep(json!({"type": "string", "id": "", "definitions": {},
        "patternProperties": {}})));
    assert_eq!(errs, Vec::<String>::new());
}

/// Defaults are found by the single walk and checked afterwards: each
/// against its own node compiled alone, nested ones against what the
/// default above them compiled, reported in the order of a walk that
/// takes a node's `items` before its properties, the properties as written.
#[test]
fn defaults_are_reported_in_walk_order_with_nested_ones_checked() {
    let m = crd(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {
            "zeta": {"type": "string", "default": 5},
            "outer": {"type": "object", "default": {"inner": "x"},
                "properties": {"inner": {"type": "string", "default": "toolong", "maxLength": 3}}},
            "alpha": {"type": "array", "default": ["ok"],
                "items": {"type": "string", "default": 7}}
        }}}}),
    );
    let errs = errors(&m);
    let paths: Vec<&str> = errs
        .iter()
        .map(|e| e.split(": ").next().unwrap_or(""))
        .collect();
    assert_eq!(
        paths,
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[zeta].default",
            "spec.validation.openAPIV3Schema.properties[spec].properties[outer].properties[inner].default",
            "spec.validation.openAPIV3Schema.properties[spec].properties[alpha].items.default",
        ],
        "{errs:#?}"
    );
}

/// On an update, the stored CRD's facts only matter where it broke a rule
/// an update relaxes, or for the cost limit of single rules, which a
/// version whose schema is unchanged is not held to again.
#[test]
fn an_update_keeps_the_strict_verdict_unless_the_stored_crd_relaxes_it() {
    let costly = json!({"type": "object", "properties": {"l": {"type": "array",
        "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y))"}]}}});
    let m = crd(costly);
    let created = errors(&m);
    assert!(
        created
            .iter()
            .any(|e| e.contains("estimated rule cost exceeds budget")),
        "{created:?}"
    );
    // The same schema stored already: its rule's own cost is not judged again.
    let same = validate_crd(&m, Some(&m), KubeVersion::NEWEST);
    assert!(
        !same
            .iter()
            .any(|e| e.detail.starts_with("estimated rule cost exceeds")),
        "{same:?}"
    );
    // A stored CRD that broke nothing: the new one's errors stand as on a create.
    let bad_set = crd(
        json!({"type": "object", "properties": {"l": {"type": "array",
        "x-kubernetes-list-type": "set", "items": {"type": "object",
            "properties": {"a": {"type": "string"}}}}}}),
    );
    let fine = crd(
        json!({"type": "object", "properties": {"l": {"type": "array",
        "items": {"type": "string"}}}}),
    );
    let updated = errors_on(&bad_set, Some(&fine), KubeVersion::NEWEST.minor);
    assert_eq!(updated, errors(&bad_set));
    assert_eq!(updated.len(), 1);
}

#[test]
fn new_rules_get_the_libraries_of_the_version_before_the_servers() {
    let props = json!({"tags": {"type": "array", "maxItems": 4,
        "items": {"type": "string", "maxLength": 8}}});
    let with_rule = |rule: &str| with_spec_rule(&props, rule);
    let on = |m: &Value, minor: u32| errors_on(m, None, minor);
    // `distinct` comes with the lists library of 1.34: a 1.34 server
    // refuses it in a new rule, a 1.35 server takes it.
    let new = with_rule("self.tags.distinct().size() == self.tags.size()");
    let refused = on(&new, 34);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("undeclared reference to 'distinct'")
            && refused[0].contains(cel_types::NEW_LIBRARY),
        "{refused:?}"
    );
    assert_eq!(on(&new, 35), Vec::<String>::new());
    assert_eq!(on(&new, 37), Vec::<String>::new());
    // Semver came with 1.33, so a 1.34 server takes it and 1.33 does not.
    let semver = with_rule("self.tags.all(t, !isSemver(t) || semver(t).major() < 9)");
    assert_eq!(on(&semver, 34), Vec::<String>::new());
    assert_eq!(on(&semver, 33).len(), 1);
    // `first` and `last` come with the CEL of 1.33, for every rule.
    let first = with_rule("self.tags.first().orValue('') != 'x'");
    assert_eq!(on(&first, 33), Vec::<String>::new());
    assert!(
        on(&first, 32)
            .first()
            .is_some_and(|e| e.contains("Kubernetes 1.32 does not implement it")),
        "{:?}",
        on(&first, 32)
    );
    // `duration(int)` type-checks up to 1.36 and is refused from 1.37.
    let duration = with_rule("duration(5) > duration('1s') || self.tags.size() > 0");
    assert_eq!(on(&duration, 36), Vec::<String>::new());
    assert_eq!(on(&duration, 37).len(), 1);
    // Selecting from an optional `oldSelf` gives an optional.
    let mut transition = with_rule("oldSelf.tags == self.tags");
    transition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"]
        [0]["optionalOldSelf"] = json!(true);
    let refused = errors(&transition);
    assert!(
        refused
            .iter()
            .any(|e| e.contains("'_==_' applied to '(optional_type(list(string)), list(string))'")),
        "{refused:?}"
    );
    // A rule the stored CRD already has compiles with the server's own
    // libraries, even where the schema around it changed.
    let mut stored = new.clone();
    stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["tags"]["maxItems"] = json!(8);
    assert!(validate_crd(&new, Some(&stored), KubeVersion { minor: 34 }).is_empty());
}

#[test]
fn type_errors_the_checker_is_sure_of_are_refused() {
    let props = json!({"size": {"type": "integer"}, "name": {"type": "string", "maxLength": 8},
        "labels": {"type": "object", "maxProperties": 4,
            "additionalProperties": {"type": "string", "maxLength": 8}}});
    let with_rule = |rule: &str| with_spec_rule(&props, rule);
    for (rule, why) in [
        ("self.size == 1u", "'_==_' applied to '(int, uint)'"),
        (
            "[1, 'a'].size() == 2",
            "expected type 'int' but found 'string'",
        ),
        (
            "has(self.size.x)",
            "type 'int' does not support field selection",
        ),
        (
            "self.labels.exists(k, self.labels[k] > 0)",
            "'_>_' applied to '(string, int)'",
        ),
        (
            "self.name.split(1).size() > 0",
            "'split' applied to 'string.(int)'",
        ),
        (
            "self.labels.contains('a')",
            "'contains' applied to 'map(string, string).(string)'",
        ),
        (
            "self.name == null",
            "'_==_' applied to '(string, null_type)'",
        ),
        ("size(self) > 0", "'size' applied to '(object)'"),
        (
            "self.name.startswith('a')",
            "undeclared reference to 'startswith'",
        ),
        ("other.size() > 1", "undeclared reference to 'other'"),
        (
            "duration('1 hour') > duration('1h')",
            "invalid duration argument",
        ),
        (
            "timestamp('yesterday') < timestamp('2024-01-01T00:00:00Z')",
            "invalid timestamp argument",
        ),
    ] {
        let errs = errors(&with_rule(rule));
        assert!(errs.len() == 1 && errs[0].contains(why), "{rule}: {errs:?}");
    }
    for rule in [
        "self.size < 2.5 && self.size == 1",
        "!has(self.labels.a) || self.labels.a != ''",
        "self.labels.all(k, k in self.labels && self.labels[k] != '')",
        "type(self.size) == int",
        "dyn(self.size).startsWith('a')",
        "self.labels.map(k, self.labels[k].size()).all(n, n < 9)",
        "self.?labels.?a.orValue('') == ''",
        "self.labels.filter(k, k != '').all(k, k.startsWith('a'))",
    ] {
        assert_eq!(errors(&with_rule(rule)), Vec::<String>::new(), "{rule}");
    }
}

#[test]
fn a_server_outside_the_known_versions_gets_a_notice_and_its_own_is_exact() {
    let newest = KubeVersion::for_server(KubeVersion::NEWEST.minor + 3);
    assert_eq!(newest, KubeVersion::NEWEST);
    let notice = newest
        .notice_for_server(KubeVersion::NEWEST.minor + 3, "v1.99.0")
        .expect("a newer server is told");
    assert!(
        notice.contains("newer than the newest CRD rules"),
        "{notice}"
    );
    let oldest = KubeVersion::for_server(KubeVersion::OLDEST.minor - 1);
    let notice = oldest
        .notice_for_server(KubeVersion::OLDEST.minor - 1, "v1.0.0")
        .expect("an older server is told");
    assert!(notice.contains("older than the oldest"), "{notice}");
    let exact = KubeVersion::NEWEST;
    assert_eq!(exact.notice_for_server(exact.minor, "v1.37.2"), None);
    let unchecked = KubeVersion::for_server(28);
    let notice = unchecked
        .notice_for_server(28, "v1.28.15")
        .expect("a server before the checked versions is told");
    assert!(
        notice.contains("not checked against a real API server"),
        "{notice}"
    );
}

#[test]
fn defaults_meet_the_kubernetes_name_formats_from_1_34() {
    let with_default = |default: &str| {
        crd(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "name": {"type": "string", "format": "k8s-short-name", "default": default}}}}}),
        )
    };
    let on = |m: &Value, minor: u32| validate_crd(m, None, KubeVersion { minor }).len();
    assert_eq!(on(&with_default("foo-bar"), 34), 0);
    assert_eq!(
        on(&with_default("Foo_Bar"), 33),
        0,
        "1.33 does not know the format"
    );
    assert_eq!(on(&with_default("Foo_Bar"), 34), 1);
    assert_eq!(on(&with_default("Foo_Bar"), 37), 1);
}

#[test]
fn exists_one_is_not_declared_for_crd_rules() {
    let props = json!({"l": {"type": "array", "maxItems": 4,
        "items": {"type": "string", "maxLength": 8}}});
    let with_rule = |rule: &str| with_spec_rule(&props, rule);
    let refused = errors(&with_rule("self.l.existsOne(x, x == 'a') || true"));
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("undeclared reference to 'existsOne'"),
        "{refused:?}"
    );
    // `exists_one` is, and the word in a string is only text.
    assert_eq!(
        errors(&with_rule("self.l.exists_one(x, x == 'a') || true")),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(&with_rule("self.l.all(x, x != 'existsOne(')")),
        Vec::<String>::new()
    );
}

#[test]
fn more_than_eight_unchanged_selectable_fields_may_stay_from_1_35() {
    let mut props = serde_json::Map::new();
    for i in 0..9 {
        props.insert(format!("f{i}"), json!({"type": "string"}));
    }
    let mut stored = crd(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": props}}}));
    let fields: Vec<Value> = (0..9)
        .map(|i| json!({"jsonPath": format!(".spec.f{i}")}))
        .collect();
    stored["spec"]["versions"][0]["selectableFields"] = Value::Array(fields.clone());
    let too_many = |m: &Value, old: Option<&Value>, minor: u32| {
        errors_on(m, old, minor)
            .iter()
            .any(|e| e.contains("Too many"))
    };
    // Unchanged: kept from 1.35, refused by every update before.
    assert!(!too_many(&stored, Some(&stored), 35));
    assert!(too_many(&stored, Some(&stored), 34));
    // Changed, even reordered: refused.
    let mut changed = stored.clone();
    let mut reordered = fields;
    reordered.reverse();
    changed["spec"]["versions"][0]["selectableFields"] = Value::Array(reordered);
    assert!(too_many(&changed, Some(&stored), 37));
    // And a create never keeps them.
    assert!(too_many(&stored, None, 37));
}

#[test]
fn an_update_of_an_established_crd_checks_the_ca_bundle_from_1_31() {
    let mut stored = crd(json!({"type": "object"}));
    stored["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "s", "namespace": "n"}}}});
    stored["status"] = json!({"conditions": [{"type": "Established", "status": "True"}]});
    let mut bad = stored.clone();
    bad["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = json!("Zm9v");
    let ca_bundle_errors = |new: &Value, old: Option<&Value>, minor: u32| -> Vec<String> {
        errors_on(new, old, minor)
            .into_iter()
            .filter(|e| e.contains("caBundle"))
            .collect()
    };
    assert_eq!(
        ca_bundle_errors(&bad, Some(&stored), 34),
        [
            "spec.conversion.webhookClientConfig.caBundle: Invalid value: \"Zm9v\": unable to load \
          root certificates: unable to parse bytes as PEM block"
        ]
    );
    assert!(ca_bundle_errors(&bad, Some(&stored), 30).is_empty());
    // A create, a stored CRD not established, or one whose own caBundle
    // was bad: not checked.
    assert!(ca_bundle_errors(&bad, None, 37).is_empty());
    let mut pending = stored.clone();
    pending["status"] = json!({});
    assert!(ca_bundle_errors(&bad, Some(&pending), 37).is_empty());
    assert!(ca_bundle_errors(&bad, Some(&bad), 37).is_empty());
}
