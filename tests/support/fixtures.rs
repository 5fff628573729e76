//! CRD manifests for tests: `<plural>.example.com` in group `example.com`,
//! namespaced, its kind derived from the plural. One builder, so a test's
//! fixture only spells out what differs (versions, schemas, extra fields).

#![allow(dead_code)]

use serde_json::{Value, json};

/// The kind of a test plural: `widgets` → `Widget` (the plural minus its
/// `s`; a fixture with an irregular plural sets its kind itself).
pub fn kind_of(plural: &str) -> String {
    format!(
        "{}{}",
        plural[..1].to_uppercase(),
        &plural[1..plural.len() - 1]
    )
}

/// A v1 CRD manifest `<plural>.example.com` with these `spec.versions`
/// entries (see [`version`]).
pub fn crd(plural: &str, versions: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": kind_of(plural), "plural": plural},
            "versions": versions
        }
    })
}

/// One `spec.versions` entry with this `openAPIV3Schema`.
pub fn version(name: &str, served: bool, storage: bool, root: Value) -> Value {
    json!({"name": name, "served": served, "storage": storage,
           "schema": {"openAPIV3Schema": root}})
}

/// A CRD serving one version `v1`, stored, with this `openAPIV3Schema`.
pub fn single(plural: &str, root: Value) -> Value {
    crd(plural, vec![version("v1", true, true, root)])
}
