//! `require`: a requirement written from a CRD as it is now, and the fields
//! a consumer's own objects use.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::Action;
use crate::crd::Crd;
use crate::manifest::Object;
use crate::schema::Schema;

/// What `--versions` said: `storage`, `served`, or version names.
pub type VersionsArg = Vec<String>;

/// What the flags of `require` said.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    /// `NAME` or `NAMESPACE/NAME`.
    pub name: String,
    /// `--owner`: who depends on the CRD.
    pub owner: Option<String>,
    /// `--contact`: how to reach them.
    pub contact: Option<String>,
    /// `--versions`.
    pub versions: VersionsArg,
    /// `--fields`, then what `--fields-from` found.
    pub fields: Vec<String>,
    /// `--exclude`.
    pub excluded: Vec<String>,
    /// `--action`.
    pub action: Action,
}

/// The `CRDRequirement` document for `draft` pinning `crd` (a manifest or a
/// live object): the snapshot keeps the spec and the name, and leaves out
/// what the cluster adds (status, managed fields, resource version...), which
/// says nothing about the API the consumer relies on.
pub fn document(draft: &Draft, crd: &Value) -> Value {
    let (namespace, name) = match draft.name.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, draft.name.as_str()),
    };
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    if let Some(ns) = namespace {
        metadata.insert("namespace".into(), json!(ns));
    }
    let mut spec = Map::new();
    let owner = match (&draft.owner, &draft.contact) {
        (Some(o), Some(c)) => Some(json!({"name": o, "contact": c})),
        (Some(o), None) => Some(json!({"name": o})),
        (None, Some(c)) => Some(json!({"contact": c})),
        (None, None) => None,
    };
    if let Some(owner) = owner {
        spec.insert("owner".into(), owner);
    }
    // Always a list (`[served]`, not `served`): the cluster's
    // CRDRequirement resource types each key once, so what `require` writes
    // can be applied there as it is.
    spec.insert(
        "versions".into(),
        match draft.versions.as_slice() {
            [] => json!(["served"]),
            many => json!(many),
        },
    );
    if !draft.fields.is_empty() {
        spec.insert("fields".into(), json!(draft.fields));
    }
    if !draft.excluded.is_empty() {
        spec.insert("excludedFields".into(), json!(draft.excluded));
    }
    if draft.action == Action::Warn {
        spec.insert("action".into(), json!("Warn"));
    }
    spec.insert("crd".into(), snapshot(crd));
    json!({
        "apiVersion": "crd-safety.io/v1alpha1",
        "kind": "CRDRequirement",
        "metadata": metadata,
        "spec": spec,
    })
}

/// The CRD without what the cluster adds to it.
fn snapshot(crd: &Value) -> Value {
    let mut out = Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = crd.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    let mut metadata = Map::new();
    if let Some(name) = crd.pointer("/metadata/name") {
        metadata.insert("name".into(), name.clone());
    }
    out.insert("metadata".into(), Value::Object(metadata));
    if let Some(spec) = crd.get("spec") {
        out.insert("spec".into(), spec.clone());
    }
    Value::Object(out)
}

/// The fields `objects` of `crd`'s kind set, as paths in schema notation
/// without the root (`spec.rules[*].matches[*].path.type`), sorted: the
/// leaves each object has, read with the schema of its version, so a map's
/// keys are not taken for fields. `apiVersion`, `kind` and `metadata` are
/// every object's and left out. `None` when no object is of the CRD's kind.
pub fn fields_from(crd: &Crd, objects: &[Object]) -> Option<Vec<String>> {
    let mut out = BTreeSet::new();
    let mut seen = false;
    for object in objects {
        let v = &object.value;
        let (Some(api_version), Some(kind)) = (
            v.get("apiVersion").and_then(Value::as_str),
            v.get("kind").and_then(Value::as_str),
        ) else {
            continue;
        };
        let Some((group, version)) = api_version.split_once('/') else {
            continue;
        };
        if group != crd.spec.group || kind != crd.spec.names.kind {
            continue;
        }
        let Some(crd_version) = crd.version(version) else {
            continue;
        };
        seen = true;
        if let Value::Object(map) = v {
            for (key, child) in map {
                if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(schema) = crd_version.schema.properties.get(key.as_str()) {
                    used(child, schema, key.clone(), &mut out);
                }
            }
        }
    }
    seen.then(|| out.into_iter().collect())
}

/// Adds the leaves of `value` below `path` that `schema` describes.
fn used(value: &Value, schema: &Schema, path: String, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) if !map.is_empty() && !schema.properties.is_empty() => {
            let mut any = false;
            for (key, child) in map {
                match schema.properties.get(key.as_str()) {
                    Some(s) => {
                        any = true;
                        used(child, s, format!("{path}.{key}"), out);
                    }
                    // Pruned on write unless the schema keeps it: a field
                    // the API never had is nothing to hold.
                    None if schema.preserves_unknown_fields() => {
                        any = true;
                        out.insert(format!("{path}.{key}"));
                    }
                    None => {}
                }
            }
            if !any {
                out.insert(path);
            }
        }
        Value::Array(items) if !items.is_empty() && schema.items.is_some() => {
            if let Some(item_schema) = schema.items.as_deref() {
                for item in items {
                    used(item, item_schema, format!("{path}[*]"), out);
                }
            }
        }
        // A scalar, an empty collection, a map of free keys: the field
        // itself is what is used.
        _ => {
            out.insert(path);
        }
    }
}
