//! Requirements as a cluster holds them: `CRDRequirement` objects of the
//! chart's custom resource (`crdrequirements.crd-safety.io`), which `serve`
//! enforces and `requirements` reads when no file is given.
//!
//! Each object is read on its own: one that does not parse (created while
//! the webhook that validates them was down) is reported by name, and the
//! others still hold.

use serde_json::Value;

use super::{Requirement, RequirementError, parse_objects};
use crate::crd::ResourceRef;
use crate::manifest::{DocumentText, Location, Object, SharedText};

/// The API group of the custom resource.
pub const GROUP: &str = "crd-safety.io";
/// Its version.
pub const VERSION: &str = "v1alpha1";
/// Its plural, the resource the webhook and the RBAC rules name.
pub const PLURAL: &str = "crdrequirements";

/// The collection to list: cluster-scoped, in the one version there is.
pub fn resource() -> ResourceRef {
    ResourceRef {
        group: GROUP.into(),
        version: VERSION.into(),
        plural: PLURAL.into(),
        namespace: None,
    }
}

/// A requirement the cluster holds that could not be read.
#[derive(Debug)]
pub struct Unreadable {
    /// `metadata.name`.
    pub name: String,
    /// The CRD it means to pin (`spec.crd.metadata.name`), when that much
    /// can be read: reviews of that CRD say the requirement is not enforced.
    pub crd: Option<String>,
    /// Why.
    pub error: RequirementError,
}

/// One `CRDRequirement` as the API server hands it out (a LIST item, or the
/// object of an admission request). Its findings and errors name it
/// `CRDRequirement NAME`, as there is no file or line.
pub fn from_object(value: Value) -> Result<Requirement, RequirementError> {
    let location = Location {
        file: format!("CRDRequirement {}", name_of(&value)),
        line: 0,
    };
    let object = Object {
        value,
        location: location.clone(),
        text: DocumentText::new(SharedText::whole(String::new()), 1),
    };
    let mut found = parse_objects(vec![object])?;
    match found.len() {
        1 => Ok(found.remove(0)),
        _ => Err(RequirementError::Invalid {
            location,
            message: "not a crd-safety.io/v1alpha1 CRDRequirement".into(),
        }),
    }
}

/// Every requirement of a LIST, and those that could not be read.
pub fn from_list(items: Vec<Value>) -> (Vec<Requirement>, Vec<Unreadable>) {
    let mut read = Vec::new();
    let mut unreadable = Vec::new();
    for item in items {
        let name = name_of(&item).to_string();
        let crd = pinned_name(&item);
        match from_object(item) {
            Ok(r) => read.push(r),
            Err(error) => unreadable.push(Unreadable { name, crd, error }),
        }
    }
    (read, unreadable)
}

/// `spec.crd.metadata.name` of a requirement object, read without the rest.
pub fn pinned_name(value: &Value) -> Option<String> {
    value
        .pointer("/spec/crd/metadata/name")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn name_of(value: &Value) -> &str {
    value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("(no name)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn requirement(name: &str, fields: Value) -> Value {
        json!({
            "apiVersion": "crd-safety.io/v1alpha1",
            "kind": "CRDRequirement",
            "metadata": {"name": name, "uid": "u", "resourceVersion": "7"},
            "spec": {
                "owner": {"name": "team-b"},
                "versions": ["served"],
                "fields": fields,
                "crd": {
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "CustomResourceDefinition",
                    "metadata": {"name": "widgets.example.com"},
                    "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                        "versions": [{"name": "v1", "served": true, "storage": true,
                            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                "spec": {"type": "object", "properties": {"route": {"type": "string"}}}}}}}]}
                }
            }
        })
    }

    #[test]
    fn one_unreadable_requirement_does_not_hide_the_others() {
        let (read, unreadable) = from_list(vec![
            requirement("uses-route", json!(["spec.route"])),
            requirement("uses-nothing", json!(["spec.nosuch"])),
        ]);
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].name, "uses-route");
        assert_eq!(read[0].source.to_string(), "CRDRequirement uses-route");
        assert_eq!(unreadable.len(), 1);
        assert_eq!(unreadable[0].name, "uses-nothing");
        assert_eq!(unreadable[0].crd.as_deref(), Some("widgets.example.com"));
        assert_eq!(
            unreadable[0].error.to_string(),
            "CRDRequirement uses-nothing: spec.fields.0: spec.nosuch is not a field of the pinned CRD in v1"
        );
    }

    #[test]
    fn another_kind_is_not_a_requirement() {
        let err = from_object(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        )
        .expect_err("not a requirement");
        assert_eq!(
            err.to_string(),
            "CRDRequirement c: not a crd-safety.io/v1alpha1 CRDRequirement"
        );
    }
}
