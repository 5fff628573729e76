//! Property tests: no input makes the parser or the comparison panic, and a
//! CRD compared with itself never produces a finding.

use crate::support::fixtures;

use crd_safety::compare::{CheckOptions, StoredVersions, compare_crds};
use crd_safety::crd::Crd;
use crd_safety::manifest::{ManifestSet, load_text, normalize_to_v1};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, including the wrong type for a keyword.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..100).prop_map(Value::from),
        (-5.0f64..5.0).prop_map(Value::from),
        "[a-z=^$.*]{0,8}".prop_map(Value::String),
        prop::collection::vec("[a-z]{0,3}", 0..3).prop_map(|v| json!(v)),
    ]
}

const KEYWORDS: &[&str] = &[
    "type",
    "format",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "exclusiveMinimum",
    "multipleOf",
    "pattern",
    "nullable",
    "required",
    "description",
    "title",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
    "x-kubernetes-embedded-resource",
    "anyOf",
    "oneOf",
    "not",
    "uniqueItems",
];

fn keywords() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((prop::sample::select(KEYWORDS), scalar()), 0..5)
        .prop_map(|kv| kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A random schema tree, sometimes malformed.
fn schema() -> impl Strategy<Value = Value> {
    let leaf = keywords().prop_map(Value::Object);
    leaf.prop_recursive(4, 40, 4, |inner| {
        (
            keywords(),
            prop::collection::btree_map("[a-c]{1,2}", inner.clone(), 0..4),
            prop::option::of(inner.clone()),
            prop::option::of(prop_oneof![any::<bool>().prop_map(Value::Bool), inner]),
        )
            .prop_map(|(mut kw, props, items, additional)| {
                if !props.is_empty() {
                    kw.insert("properties".into(), json!(props));
                }
                if let Some(i) = items {
                    kw.insert("items".into(), i);
                }
                if let Some(a) = additional {
                    kw.insert("additionalProperties".into(), a);
                }
                Value::Object(kw)
            })
    })
}

fn crd(schemas: &[(&str, bool, bool, Value)], conversion: &str) -> Value {
    let versions = schemas
        .iter()
        .map(|(name, served, storage, s)| fixtures::version(name, *served, *storage, s.clone()))
        .collect();
    let mut crd = fixtures::crd("things", versions);
    crd["spec"]["conversion"] = json!({"strategy": conversion});
    crd
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn reading_any_text_never_panics(text in "[a-zA-Z0-9:{}\\[\\],'\"#&*!|>\\- \n]{0,300}") {
        let mut set = ManifestSet::default();
        let _ = load_text(&text, "fuzz.yaml", false, &mut set);
        let _ = load_text(&text, "fuzz.json", true, &mut set);
    }

    #[test]
    fn a_crd_compared_with_itself_has_no_findings(a in schema(), b in schema(), conv in prop::sample::select(vec!["None", "Webhook"])) {
        let doc = crd(&[("v1alpha1", true, false, a), ("v1", true, true, b)], conv);
        // A schema the model refuses (a keyword of the wrong type) is not a
        // case of this property: rejected, and counted by proptest, which
        // fails the test when too few generated CRDs are usable.
        let Ok(c) = Crd::from_manifest(normalize_to_v1(doc)) else {
            return Err(TestCaseError::reject("a schema the model refuses"));
        };
        let stored = StoredVersions::resolve(&c, None);
        let findings = compare_crds(&c, &c, &stored, &CheckOptions::default());
        // Served versions may legitimately disagree with each other, but
        // nothing changed between old and new, so nothing new is reported.
        prop_assert!(findings.is_empty(), "{findings:#?}");
    }

    #[test]
    fn comparing_any_two_schemas_never_panics(a in schema(), b in schema(), c in schema()) {
        let old = crd(&[("v1", true, true, a)], "None");
        let new = crd(&[("v1", true, true, b), ("v2", true, false, c)], "None");
        if let (Ok(old), Ok(new)) = (Crd::from_manifest(old), Crd::from_manifest(new)) {
            let stored = StoredVersions::resolve(&old, None);
            for f in compare_crds(&old, &new, &stored, &CheckOptions::default()) {
                prop_assert!(!f.message.is_empty());
                if let Some(p) = &f.path {
                    prop_assert!(p.starts_with('^'), "{p}");
                }
            }
        }
    }
}
