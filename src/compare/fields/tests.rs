//! The declarations hold what they promise: every keyword a check claims is
//! one it compares, every field check of the catalog is declared once, and a
//! change to any keyword of the structural-schema vocabulary is either
//! compared by a check or reported as `unknownChange`.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{Context, FIELD_CHECKS, walk};
use crate::compare::{Check, CheckOptions, Finding, Severity};
use crate::openapi::keywords::Kw;
use crate::schema::Schema;

/// The keywords no check compares: the API server refuses all of them in a
/// structural schema, so a change to one is left to the catch-all.
const LEFT_TO_UNKNOWN_CHANGE: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
];

fn findings(old: &Value, new: &Value) -> Vec<Finding> {
    let old = Schema::from_value(old).expect("fixture schema");
    let new = Schema::from_value(new).expect("fixture schema");
    let options = CheckOptions::default();
    let ctx = Context {
        version: "v1".to_string(),
        options: &options,
        cross_version: false,
        structural: true,
        webhook_conversion: false,
        first_served_before: true,
    };
    let mut out = Vec::new();
    walk(&ctx, &old, &new, &mut out);
    out
}

fn dump(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("  {} {}: {}", f.check, f.severity, f.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Adds `kw: value` to a schema.
fn with(base: &Value, kw: &str, value: Value) -> Value {
    let mut v = base.clone();
    v[kw] = value;
    v
}

/// A change of `kw` at the root in the direction a check flags: the old and
/// the new schema, which differ in `kw` only.
fn change(kw: &str) -> Option<(Value, Value)> {
    let string = json!({"type": "string"});
    let integer = json!({"type": "integer"});
    let array = json!({"type": "array", "items": {"type": "string"}});
    let object = json!({"type": "object"});
    let object_ab =
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
    let added = |base: &Value, value: Value| (base.clone(), with(base, kw, value));
    let removed = |base: &Value, value: Value| (with(base, kw, value), base.clone());
    let changed = |base: &Value, old: Value, new: Value| (with(base, kw, old), with(base, kw, new));
    Some(match kw {
        "properties" => removed(&object, json!({"a": {"type": "string"}})),
        "items" => removed(&json!({"type": "array"}), json!({"type": "string"})),
        "additionalProperties" => changed(&object, json!(true), json!(false)),
        "description" | "title" | "example" => changed(&string, json!("a"), json!("b")),
        "externalDocs" => changed(&string, json!({"url": "a"}), json!({"url": "b"})),
        "required" => added(&object_ab, json!(["a"])),
        "type" => changed(&json!({}), json!("string"), json!("integer")),
        "enum" => added(&string, json!(["a"])),
        "default" => added(&string, json!("x")),
        "minimum" | "maximum" | "multipleOf" => added(&integer, json!(2)),
        "minLength" | "maxLength" => added(&string, json!(2)),
        "minItems" | "maxItems" => added(&array, json!(2)),
        "minProperties" | "maxProperties" => added(&object, json!(2)),
        "exclusiveMinimum" => added(&with(&integer, "minimum", json!(0)), json!(true)),
        "exclusiveMaximum" => added(&with(&integer, "maximum", json!(9)), json!(true)),
        "uniqueItems" => added(&array, json!(true)),
        "pattern" => added(&string, json!("^a")),
        "format" => added(&string, json!("email")),
        "nullable" => removed(&string, json!(true)),
        "x-kubernetes-validations" => added(&string, json!([{"rule": "self.size() > 1"}])),
        "x-kubernetes-list-type" => added(&array, json!("set")),
        "x-kubernetes-list-map-keys" => {
            let list = json!({
                "type": "array",
                "x-kubernetes-list-type": "map",
                "items": object_ab.clone(),
            });
            changed(&list, json!(["a"]), json!(["b"]))
        }
        "x-kubernetes-map-type" => added(&object, json!("atomic")),
        "x-kubernetes-preserve-unknown-fields" => removed(&object, json!(true)),
        "x-kubernetes-int-or-string" => removed(&json!({}), json!(true)),
        "x-kubernetes-embedded-resource" => added(
            &with(&object, "x-kubernetes-preserve-unknown-fields", json!(true)),
            json!(true),
        ),
        "allOf" | "anyOf" | "oneOf" => added(
            &object_ab,
            json!([{"required": ["a"]}, {"required": ["b"]}]),
        ),
        "not" => added(&object_ab, json!({"required": ["a", "b"]})),
        "id" | "$schema" | "$ref" => added(&string, json!("a")),
        "patternProperties" | "definitions" | "dependencies" => {
            added(&object, json!({"a": {"type": "string"}}))
        }
        "additionalItems" => added(&array, json!(false)),
        _ => return None,
    })
}

/// The keys whose values differ between two JSON objects.
fn differing_keys(old: &Value, new: &Value) -> BTreeSet<String> {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return BTreeSet::new();
    };
    o.keys()
        .chain(n.keys())
        .filter(|k| o.get(*k) != n.get(*k))
        .cloned()
        .collect()
}

#[test]
fn every_keyword_a_check_claims_is_one_it_compares() {
    for check in FIELD_CHECKS {
        for &kw in check.keywords {
            let (old, new) = change(kw).unwrap_or_else(|| panic!("no example change of {kw}"));
            assert_eq!(
                differing_keys(&old, &new),
                BTreeSet::from([kw.to_string()]),
                "the example of {kw} must change {kw} only"
            );
            let found = findings(&old, &new);
            assert!(
                found.iter().any(|f| f.check == check.check),
                "{} claims {kw}, but changing {kw} yields no {} finding:\n{}",
                check.check,
                check.check,
                dump(&found)
            );
            assert!(
                found.iter().all(|f| f.check != Check::UnknownChange),
                "{kw} is claimed, yet reported as unknown:\n{}",
                dump(&found)
            );
        }
    }
}

#[test]
fn every_keyword_of_the_vocabulary_is_compared_or_reported_as_unknown() {
    for kw in Kw::JSON_NAMES {
        let claimed = FIELD_CHECKS.iter().any(|c| c.keywords.contains(&kw));
        if claimed {
            assert!(
                !LEFT_TO_UNKNOWN_CHANGE.contains(&kw),
                "{kw} is claimed by a check but listed as left to unknownChange"
            );
            continue; // held to a finding by the test above
        }
        assert!(
            LEFT_TO_UNKNOWN_CHANGE.contains(&kw),
            "{kw} is compared by no check: declare it with the check that understands it"
        );
        let (old, new) = change(kw).unwrap_or_else(|| panic!("no example change of {kw}"));
        let found = findings(&old, &new);
        assert!(
            found.iter().any(|f| f.check == Check::UnknownChange
                && f.severity == Severity::Error
                && f.message.starts_with(&format!("^: {kw} "))),
            "a change of {kw} is not reported as unknownChange:\n{}",
            dump(&found)
        );
    }
}

#[test]
fn a_keyword_outside_the_vocabulary_is_reported_as_unknown() {
    let found = findings(
        &json!({"type": "string", "x-acme-owner": "a"}),
        &json!({"type": "string", "x-acme-owner": "b"}),
    );
    assert_eq!(found.len(), 1, "{}", dump(&found));
    assert_eq!(found[0].check, Check::UnknownChange);
    assert!(
        found[0]
            .message
            .starts_with("^: x-acme-owner \"a\" -> \"b\""),
        "{}",
        found[0].message
    );
}

#[test]
fn tuple_items_are_reported_as_unknown_although_items_is_claimed() {
    // Only a single-schema `items` is walked; the tuple form stays a keyword.
    let found = findings(
        &json!({"type": "array", "items": [{"type": "string"}]}),
        &json!({"type": "array", "items": [{"type": "integer"}]}),
    );
    assert!(
        found
            .iter()
            .any(|f| f.check == Check::UnknownChange && f.message.starts_with("^: items ")),
        "{}",
        dump(&found)
    );
}

#[test]
fn every_field_check_of_the_catalog_is_declared_once() {
    let field_level = |c: &&Check| c.family() == crate::compare::Family::Field;
    let mut catalog: Vec<Check> = Check::ALL.iter().filter(field_level).copied().collect();
    // Listed with the CRD-level checks: it also covers the legacy
    // spec.preserveUnknownFields.
    catalog.push(Check::PreserveUnknownFields);
    catalog.sort();
    let mut declared: Vec<Check> = FIELD_CHECKS.iter().map(|c| c.check).collect();
    declared.sort();
    assert_eq!(declared, catalog);
}

#[test]
fn every_field_check_declares_what_it_reaches_and_folds_where_it_compares() {
    for c in FIELD_CHECKS {
        assert!(
            c.check.declared_reach().is_some(),
            "{}: declare `reach` in its catalog row",
            c.check
        );
    }
    for &check in Check::ALL {
        if check.folds().is_some() {
            assert!(
                super::reported_keyword(check).is_some(),
                "{check} declares a fold, but no field check of it compares a keyword"
            );
        }
    }
}

#[test]
fn a_documentation_change_is_info_under_description_wherever_it_is() {
    for kw in ["description", "title", "example", "externalDocs"] {
        let (old, new) = change(kw).expect("example");
        let found = findings(&old, &new);
        assert_eq!(found.len(), 1, "{kw}:\n{}", dump(&found));
        assert_eq!(found[0].check, Check::Description);
        assert_eq!(found[0].severity, Severity::Info);
        assert_eq!(
            found[0].message,
            format!("{kw} changed (documentation only; never fails)")
        );
    }
    for kw in ["allOf", "anyOf", "oneOf"] {
        let found = findings(
            &json!({"type": "object", kw: [{"required": ["a"], "description": "old"}]}),
            &json!({"type": "object", kw: [{"required": ["a"], "title": "new"}]}),
        );
        assert_eq!(found.len(), 1, "{kw}:\n{}", dump(&found));
        assert_eq!(found[0].check, Check::Description);
        assert_eq!(found[0].severity, Severity::Info);
        assert_eq!(
            found[0].message,
            format!("documentation inside {kw} changed (documentation only; never fails)")
        );
    }
    let found = findings(
        &json!({"type": "object", "not": {"required": ["a"]}}),
        &json!({"type": "object", "not": {"required": ["a"], "example": {"a": 1}}}),
    );
    assert_eq!(found.len(), 1, "{}", dump(&found));
    assert_eq!(found[0].check, Check::Description);
    assert_eq!(found[0].severity, Severity::Info);
}

#[test]
fn reordered_branches_are_no_change() {
    let found = findings(
        &json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
        &json!({"type": "object", "anyOf": [{"required": ["b"]}, {"required": ["a"]}]}),
    );
    assert!(found.is_empty(), "{}", dump(&found));
}

#[test]
fn a_property_named_like_a_documentation_keyword_is_not_documentation() {
    // A branch constraining `description` becomes one constraining `title`:
    // what it accepts changes.
    let branch = |name: &str| json!([{"properties": {name: {"enum": ["x"]}}}]);
    let props = json!({"description": {"type": "string"}, "title": {"type": "string"}});
    let found = findings(
        &json!({"type": "object", "properties": props, "allOf": branch("description")}),
        &json!({"type": "object", "properties": props, "allOf": branch("title")}),
    );
    assert!(
        found
            .iter()
            .any(|f| f.check == Check::AllOf && f.severity == Severity::Error),
        "{}",
        dump(&found)
    );
}

#[test]
fn a_list_type_on_a_field_that_becomes_a_list_is_not_about_duplicates() {
    // Cluster API's failureDomains: a map in v1beta1, a list map in v1beta2.
    let old = json!({"type": "object", "properties": {"fd": {"type": "object",
        "additionalProperties": {"type": "object", "properties": {"controlPlane": {"type": "boolean"}}}}}});
    let new = json!({"type": "object", "properties": {"fd": {"type": "array",
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}});
    let found = findings(&old, &new);
    let list = found
        .iter()
        .find(|f| f.check == Check::ListType)
        .unwrap_or_else(|| panic!("{}", dump(&found)));
    assert_eq!(list.severity, Severity::Info, "{}", dump(&found));
    assert!(
        list.message
            .contains("no stored value of this field is a list")
    );
    assert!(
        found
            .iter()
            .any(|f| f.check == Check::Type && f.severity == Severity::Error),
        "the type change stays the error: {}",
        dump(&found)
    );
}
