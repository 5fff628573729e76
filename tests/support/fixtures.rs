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

/// The same CRD as block YAML, as generators write it (for tests of
/// reading files): one version `v1` whose `spec` has the properties
/// `spec_properties`, each a line of flow YAML (`size: {type: integer}`).
pub fn crd_yaml(plural: &str, spec_properties: &[String]) -> String {
    let mut text = format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{kind: {kind}, plural: {plural}}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
",
        kind = kind_of(plural)
    );
    for p in spec_properties {
        text.push_str("              ");
        text.push_str(p);
        text.push('\n');
    }
    text
}
