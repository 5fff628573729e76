//! The object validator against real CRD schemas from the shared corpus
//! (`../shared/corpus`, read in place): a valid object passes cleanly, and
//! each mutation is reported with the rule, path and count the API server
//! would give. Plus a property test: no input panics.

use crate::support;

use support::corpus::corpus_dir;

use crd_safety::manifest::{self, Source};
use crd_safety::object_validation::{PrunedKind, Rule, ValidationOutcome, Validator};
use crd_safety::schema::Schema;
use proptest::prelude::*;
use serde_json::{Value, json};

const CERTIFICATES: &str = "cert-manager/v1.21.1/cert-manager.io_certificates.yaml";
const HTTP_ROUTES: &str = "gateway-api-standard/v1.6.1/gateway.networking.k8s.io_httproutes.yaml";

/// The validator (as of Kubernetes 1.34) of version `v1` of a corpus CRD
/// file; `None` without the corpus.
fn corpus_validator(file: &str) -> Option<Validator> {
    let path = corpus_dir()?.join(file);
    let set = manifest::load(&[Source::Path(path)]).expect("corpus file loads");
    let crd = &set.crds.first().expect("one CRD").crd;
    let schema = &crd.version("v1").expect("version").schema;
    Some(Validator::new(schema, 34).expect("compiles"))
}

fn found(o: &ValidationOutcome) -> Vec<(String, Rule)> {
    o.violations
        .iter()
        .map(|v| (v.path.clone(), v.rule))
        .collect()
}

fn set(obj: &mut Value, pointer: &str, v: Value) {
    *obj.pointer_mut(pointer).expect("pointer exists") = v;
}

/// Removes the property at `pointer` (the counterpart of [`set`]).
fn remove(obj: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let parent = obj.pointer_mut(parent).and_then(Value::as_object_mut);
    parent.expect("an object holds the property").remove(key);
}

fn certificate() -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "secretName": "web-tls",
            "dnsNames": ["web.example.com", "www.example.com"],
            "duration": "2160h",
            "renewBefore": "360h",
            "issuerRef": {"name": "letsencrypt", "kind": "ClusterIssuer", "group": "cert-manager.io"},
            "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
            "usages": ["server auth", "digital signature"],
            "revisionHistoryLimit": 3
        },
        "status": {"conditions": [{"type": "Ready", "status": "True",
            "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "Ready", "message": "ok"}],
            "notAfter": "2024-04-01T00:00:00Z", "revision": 2}
    })
}

#[test]
fn a_valid_certificate_passes_cleanly() {
    let Some(v) = corpus_validator(CERTIFICATES) else {
        return;
    };
    assert!(!v.has_cel_rules());
    let o = v.validate(&certificate());
    assert!(o.is_clean(), "{o:#?}");
}

#[test]
fn certificate_mutations_are_reported_with_rule_and_path() {
    let Some(v) = corpus_validator(CERTIFICATES) else {
        return;
    };
    let mut obj = certificate();
    set(&mut obj, "/spec/privateKey/algorithm", json!("DSA"));
    set(&mut obj, "/spec/revisionHistoryLimit", json!("three"));
    remove(&mut obj, "/spec/issuerRef/name");
    remove(&mut obj, "/spec/secretName");
    obj["spec"]["keyAlgorithm"] = json!("rsa");
    obj["spec"]["commonName"] = Value::Null;
    let o = v.validate(&obj);
    assert_eq!(
        found(&o),
        [
            ("spec.issuerRef.name".to_string(), Rule::Required),
            ("spec.privateKey.algorithm".to_string(), Rule::Enum),
            ("spec.revisionHistoryLimit".to_string(), Rule::Type),
            ("spec.secretName".to_string(), Rule::Required),
        ]
    );
    assert_eq!(
        o.violations[1].schema_path.to_string(),
        "^.spec.privateKey.algorithm"
    );
    assert_eq!(
        o.violations[1].message,
        "Unsupported value: \"DSA\": supported values: \"RSA\", \"ECDSA\", \"Ed25519\""
    );
    let pruned: Vec<(String, PrunedKind)> =
        o.pruned.iter().map(|p| (p.path.clone(), p.kind)).collect();
    assert_eq!(
        pruned,
        [
            ("spec.commonName".to_string(), PrunedKind::NullDropped),
            ("spec.keyAlgorithm".to_string(), PrunedKind::Unknown),
        ]
    );
}

fn http_route() -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "parentRefs": [{"name": "gw", "sectionName": "https"}],
            "hostnames": ["web.example.com", "*.example.org"],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                    "filters": [{"type": "RequestHeaderModifier",
                                 "requestHeaderModifier": {"add": [{"name": "x-env", "value": "prod"}]}}],
                    "backendRefs": [{"name": "api", "port": 8080, "weight": 1}]
                },
                {
                    "matches": [{"path": {"type": "Exact", "value": "/"}, "method": "GET"}],
                    "backendRefs": [{"name": "web", "port": 80}]
                }
            ]
        }
    })
}

#[test]
fn a_valid_http_route_passes_and_only_reports_read_time_defaults() {
    let Some(v) = corpus_validator(HTTP_ROUTES) else {
        return;
    };
    assert!(v.has_cel_rules());
    let o = v.validate(&http_route());
    assert!(o.violations.is_empty(), "{:#?}", o.violations);
    assert!(o.not_evaluated.is_empty(), "{:#?}", o.not_evaluated);
    let defaulted: Vec<&str> = o
        .pruned
        .iter()
        .inspect(|p| assert_eq!(p.kind, PrunedKind::Defaulted, "{p:?}"))
        .map(|p| p.path.as_str())
        .collect();
    assert_eq!(
        defaulted,
        [
            "spec.parentRefs[0].group",
            "spec.parentRefs[0].kind",
            "spec.rules[0].backendRefs[0].group",
            "spec.rules[0].backendRefs[0].kind",
            "spec.rules[1].backendRefs[0].group",
            "spec.rules[1].backendRefs[0].kind",
            "spec.rules[1].backendRefs[0].weight",
        ]
    );
}

#[test]
fn http_route_cel_and_structural_failures() {
    let Some(v) = corpus_validator(HTTP_ROUTES) else {
        return;
    };
    let mut obj = http_route();
    // A Service backend needs a port (CEL on the backendRef).
    remove(&mut obj, "/spec/rules/1/backendRefs/0/port");
    // Not a hostname (pattern).
    set(&mut obj, "/spec/hostnames/1", json!("Not_A_Host"));
    // A duplicate header name in a list-map.
    set(
        &mut obj,
        "/spec/rules/0/filters/0/requestHeaderModifier/add",
        json!([{"name": "x-env", "value": "a"}, {"name": "x-env", "value": "b"}]),
    );
    let o = v.validate(&obj);
    assert_eq!(
        found(&o),
        [
            ("spec.hostnames[1]".to_string(), Rule::Pattern),
            (
                "spec.rules[0].filters[0].requestHeaderModifier.add[1]".to_string(),
                Rule::ListMap
            ),
            ("spec.rules[1].backendRefs[0]".to_string(), Rule::Cel),
        ]
    );
    assert_eq!(
        o.violations[2].message,
        "Must have port for Service reference"
    );
    assert!(o.violations[2].ratchetable);
    assert_eq!(
        o.violations[2].schema_path.to_string(),
        "^.spec.rules[*].backendRefs[*]"
    );
    assert!(o.not_evaluated.is_empty(), "{:#?}", o.not_evaluated);
}

#[test]
fn a_type_error_skips_the_http_route_cel_rules() {
    let Some(v) = corpus_validator(HTTP_ROUTES) else {
        return;
    };
    let mut obj = http_route();
    remove(&mut obj, "/spec/rules/1/backendRefs/0/port");
    set(
        &mut obj,
        "/spec/rules/0/backendRefs/0/weight",
        json!("heavy"),
    );
    let o = v.validate(&obj);
    assert_eq!(
        found(&o),
        [(
            "spec.rules[0].backendRefs[0].weight".to_string(),
            Rule::Type
        )]
    );
    assert_eq!(o.not_evaluated.len(), 1);
    assert_eq!(o.not_evaluated[0].rule, "*");
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z0-9 ._-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                "(spec|a|b|min|max|name|port|items|[a-z]{1,3})",
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn prop_schemas() -> Vec<Validator> {
    let schemas = [
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": "self.min <= self.max"}, {"rule": "self.name.startsWith('a')"}],
        "required": ["name"],
        "properties": {
            "min": {"type": "integer", "minimum": 0}, "max": {"type": "integer", "multipleOf": 2},
            "name": {"type": "string", "pattern": "^[a-z]", "maxLength": 5, "default": "a"},
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}},
                          "x-kubernetes-validations": [{"rule": "size(self.name) > 0"}]}},
            "a": {"type": "array", "x-kubernetes-list-type": "set", "items": {"x-kubernetes-preserve-unknown-fields": true}},
            "b": {"type": "object", "additionalProperties": {"type": "number", "nullable": true},
                  "maxProperties": 2, "oneOf": [{"required": ["x"]}, {"required": ["y"]}]}
        }}}}),
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-validations": [{"rule": "has(self.spec)"}],
            "properties": {"spec": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true, "not": {"required": ["b"]}}}}),
        json!({}),
    ];
    schemas
        .iter()
        .map(|s| Validator::new(&Schema::from_value(s).expect("schema"), 34).expect("compiles"))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_input_panics(obj in arb_json(), spec in arb_json()) {
        let validators = prop_schemas();
        let mut wrapped = obj.clone();
        if let Value::Object(m) = &mut wrapped {
            m.insert("spec".to_string(), spec);
        }
        for v in &validators {
            let o = v.validate(&obj);
            let w = v.validate(&wrapped);
            // Every finding has a schema path rooted at `^`.
            for p in o.pruned.iter().chain(&w.pruned) {
                prop_assert!(p.schema_path.to_string().starts_with('^'));
            }
        }
    }
}
