//! The CustomResourceDefinition model the checks read.
//!
//! The CRD's spec (names, versions, conversion, subresources, printer columns)
//! is read with k8s-openapi's `apiextensions/v1` types; the schemas are taken
//! out first and read into our own [`Schema`] model, which keeps every keyword
//! (k8s-openapi's `JSONSchemaProps` would silently drop ones it does not know)
//! and is cheaper to walk. The normalized document itself is kept in
//! [`Crd::manifest`] for the commands that send it to a cluster.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use serde_json::Value;
use thiserror::Error;

use crate::schema::{Schema, SchemaError};

mod read;

/// Why a document is not a usable CRD.
#[derive(Debug, Error)]
pub enum CrdError {
    /// `metadata.name` is missing or empty.
    #[error("CRD has no metadata.name")]
    NoName,
    /// The spec does not match `apiextensions.k8s.io/v1`.
    #[error("CRD {name}: {source}")]
    Spec {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    /// `spec.versions` is empty.
    #[error("CRD {name}: spec.versions is empty")]
    NoVersions { name: String },
    /// A version has no `schema.openAPIV3Schema`.
    #[error("CRD {name}: version {version} has no schema.openAPIV3Schema")]
    NoSchema { name: String, version: String },
    /// The document is not JSON (only when read with [`Crd::from_json`]).
    #[error("{0}")]
    Unreadable(#[source] serde_json::Error),
    /// The schema of a version cannot be read.
    #[error("CRD {name}: version {version}: {source}")]
    Schema {
        name: String,
        version: String,
        #[source]
        source: SchemaError,
    },
}

/// One entry of `spec.versions`, with its schema in our model.
#[derive(Debug, Clone)]
pub struct CrdVersion {
    /// The typed version entry (its `schema` field is left empty).
    pub spec: apiext::CustomResourceDefinitionVersion,
    /// `schema.openAPIV3Schema`.
    pub schema: Schema,
}

impl CrdVersion {
    /// The version name, e.g. `v1beta1`.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// A CRD ready to be compared.
#[derive(Debug, Clone)]
pub struct Crd {
    /// `metadata.name`, e.g. `widgets.example.com`.
    pub name: String,
    /// The typed spec (version schemas are left empty; see [`Crd::versions`]).
    pub spec: apiext::CustomResourceDefinitionSpec,
    /// The versions in the order the manifest lists them.
    pub versions: Vec<CrdVersion>,
    /// `status.storedVersions`, when the document carried a status (as
    /// `kubectl get crd -o yaml` prints it).
    pub stored_versions: Option<Vec<String>>,
    /// The normalized (`apiextensions.k8s.io/v1`) document; without the
    /// version schemas after [`Crd::without_schema_json`].
    pub manifest: Value,
    /// The whole document's JSON length, kept when `manifest` no longer
    /// holds all of it.
    json_len: Option<usize>,
}

impl Crd {
    /// Schema nodes over all versions: what checking this CRD costs,
    /// roughly, to share the work of many CRDs among threads.
    pub fn schema_nodes(&self) -> usize {
        self.versions.iter().map(|v| v.schema.node_count()).sum()
    }

    /// Builds the model from a document already normalized to v1.
    pub fn from_manifest(manifest: Value) -> Result<Crd, CrdError> {
        Self::assemble(manifest, |manifest, i| {
            let schema = manifest
                .get("spec")?
                .get("versions")?
                .get(i)?
                .get("schema")?
                .as_object()?
                .get("openAPIV3Schema")?;
            Some(Schema::from_value(schema))
        })
    }

    /// What [`Crd::from_manifest`] and then [`Crd::without_schema_json`]
    /// give, read straight from the document's JSON: the schemas go into
    /// the models as they are parsed (see [`crate::schema::read`]) and
    /// never into a `Value` tree, which is most of the cost of reading a
    /// large CRD. How the webhook reads CRDs: a request's, and the one the
    /// API server stores.
    pub fn from_json(json: &[u8]) -> Result<Crd, CrdError> {
        let mut doc = read::document(json).map_err(CrdError::Unreadable)?;
        let mut lens = vec![None; doc.schemas.len()];
        let mut crd = Self::assemble(doc.manifest, |_, i| {
            let measured = doc.schemas.get_mut(i)?.take()?;
            Some(measured.map(|m| {
                lens[i] = Some(m.json_len);
                m.schema
            }))
        })?;
        crd.json_len = Some(read::document_len(&crd.manifest, &lens));
        Ok(crd)
    }

    /// The model of `manifest`, whose version `i`'s schema `schema_of`
    /// gives (`None` when the version has none).
    fn assemble(
        manifest: Value,
        mut schema_of: impl FnMut(&Value, usize) -> Option<Result<Schema, SchemaError>>,
    ) -> Result<Crd, CrdError> {
        let name = manifest
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or(CrdError::NoName)?
            .to_string();
        // The schemas stay out of the typed parse: they are read into our
        // own model, and copying or parsing them twice would double the
        // cost (they are nearly all of a CRD's bytes).
        let spec_value = match manifest.get("spec") {
            Some(Value::Object(spec)) => {
                let mut copy = serde_json::Map::new();
                for (key, value) in spec {
                    let value = match (key.as_str(), value) {
                        ("versions", Value::Array(versions)) => {
                            Value::Array(versions.iter().map(without_schema).collect())
                        }
                        _ => value.clone(),
                    };
                    copy.insert(key.clone(), value);
                }
                Value::Object(copy)
            }
            other => other.cloned().unwrap_or(Value::Null),
        };
        let spec: apiext::CustomResourceDefinitionSpec = serde_json::from_value(spec_value)
            .map_err(|source| CrdError::Spec {
                name: name.clone(),
                source,
            })?;
        if spec.versions.is_empty() {
            return Err(CrdError::NoVersions { name });
        }
        let mut versions = Vec::with_capacity(spec.versions.len());
        // A version listed twice or a count of storage versions other than
        // one are the API server's to refuse: the `invalidCrd` check reports
        // them with everything else, so one run shows every problem.
        for (i, v) in spec.versions.iter().enumerate() {
            let schema = schema_of(&manifest, i)
                .ok_or_else(|| CrdError::NoSchema {
                    name: name.clone(),
                    version: v.name.clone(),
                })?
                .map_err(|source| CrdError::Schema {
                    name: name.clone(),
                    version: v.name.clone(),
                    source,
                })?;
            versions.push(CrdVersion {
                spec: v.clone(),
                schema,
            });
        }
        let stored_versions = manifest
            .pointer("/status/storedVersions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            });
        Ok(Crd {
            name,
            spec,
            versions,
            stored_versions,
            manifest,
            json_len: None,
        })
    }

    /// The same CRD without the version schemas' JSON in `manifest`: the
    /// models in [`Crd::versions`] hold them, and the JSON tree is about
    /// as large again. The webhook keeps only this, for the time of a
    /// judgment and in its cache of stored models. What the checks read
    /// from `manifest` besides the schemas (the spec's other fields, a
    /// version's other keys, the metadata) stays, and [`Crd::json_len`]
    /// still gives the whole document's length. Not for a CRD to be
    /// applied or written out (figures: docs/BENCHMARKS.md, "A CRD's model
    /// and JSON tree in memory").
    pub fn without_schema_json(mut self) -> Crd {
        let len = self.json_len();
        if let Some(versions) = self
            .manifest
            .pointer_mut("/spec/versions")
            .and_then(Value::as_array_mut)
        {
            for v in versions {
                if let Some(schema) = v.get_mut("schema").and_then(Value::as_object_mut) {
                    schema.remove("openAPIV3Schema");
                }
            }
        }
        self.json_len = Some(len);
        self
    }

    /// The same CRD with only the `metadata` fields named in `kept`, and
    /// of `status` only `storedVersions`: what the webhook's verdict
    /// cache keys on, so that nothing else of a request can decide a
    /// verdict. [`Crd::json_len`] still gives the whole document's length.
    pub fn keeping_metadata(mut self, kept: &[&str]) -> Crd {
        let len = self.json_len();
        if let Some(meta) = self
            .manifest
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        {
            meta.retain(|k, _| kept.contains(&k.as_str()));
        }
        if let Some(status) = self
            .manifest
            .get_mut("status")
            .and_then(Value::as_object_mut)
        {
            status.retain(|k, _| k == "storedVersions");
        }
        self.json_len = Some(len);
        self
    }

    /// The same CRD, measured as `len` bytes of JSON: the webhook's
    /// request says how long the object it sent is.
    pub fn with_json_len(mut self, len: usize) -> Crd {
        self.json_len = Some(len);
        self
    }

    /// The length of the document's compact JSON (what `crdSize` measures).
    pub fn json_len(&self) -> usize {
        self.json_len
            .unwrap_or_else(|| crate::json::written_len(&self.manifest))
    }

    /// The version named `name`.
    pub fn version(&self, name: &str) -> Option<&CrdVersion> {
        self.versions.iter().find(|v| v.name() == name)
    }

    /// The storage version: the first marked `storage: true`, else the
    /// first version (a CRD without exactly one is `invalidCrd`).
    pub fn storage_version(&self) -> &CrdVersion {
        self.versions
            .iter()
            .find(|v| v.spec.storage)
            .unwrap_or(&self.versions[0])
    }

    /// The custom resources of this CRD read and written through `version`.
    pub fn resource(&self, version: &str) -> ResourceRef {
        ResourceRef {
            group: self.spec.group.clone(),
            version: version.to_string(),
            plural: self.spec.names.plural.clone(),
            namespace: None,
        }
    }

    /// [`Crd::resource`] narrowed to `namespace` when the CRD is namespaced
    /// (kubectl, too, ignores `-n` for cluster-scoped resources).
    pub fn resource_in(&self, version: &str, namespace: Option<&str>) -> ResourceRef {
        let mut r = self.resource(version);
        if self.spec.scope == "Namespaced" {
            r.namespace = namespace.map(str::to_string);
        }
        r
    }

    /// Versions with `served: true`.
    pub fn served_versions(&self) -> impl Iterator<Item = &CrdVersion> {
        self.versions.iter().filter(|v| v.spec.served)
    }

    /// `spec.conversion.strategy`, `None` when absent (the API server default).
    pub fn conversion_strategy(&self) -> &str {
        self.spec
            .conversion
            .as_ref()
            .map_or("None", |c| c.strategy.as_str())
    }

    /// `spec.preserveUnknownFields` (true only on CRDs created as v1beta1).
    pub fn preserve_unknown_fields(&self) -> bool {
        self.spec.preserve_unknown_fields.unwrap_or(false)
    }
}

/// One resource of a CRD in one version, `/apis/{group}/{version}/{plural}`:
/// plain data here, so plans can name what they will list and write without
/// depending on the cluster code.
#[derive(Debug, Clone)]
pub struct ResourceRef {
    /// API group, e.g. `example.com`.
    pub group: String,
    /// The version to read the objects in (the server converts).
    pub version: String,
    /// Plural resource name.
    pub plural: String,
    /// Only the objects of this namespace (`-n`), or every namespace.
    pub namespace: Option<String>,
}

impl ResourceRef {
    /// The collection's API path, in `namespace` when given:
    /// `/apis/{group}/{version}[/namespaces/{ns}]/{plural}`.
    pub fn path(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) => format!(
                "/apis/{}/{}/namespaces/{ns}/{}",
                self.group, self.version, self.plural
            ),
            None => format!("/apis/{}/{}/{}", self.group, self.version, self.plural),
        }
    }
}

/// A copy of one `spec.versions[i]` without its `schema`.
fn without_schema(version: &Value) -> Value {
    let Value::Object(v) = version else {
        return version.clone();
    };
    Value::Object(
        v.iter()
            .filter(|(k, _)| k.as_str() != "schema")
            .map(|(k, x)| (k.clone(), x.clone()))
            .collect(),
    )
}

/// The `widgets.example.com` CRD with `versions`, shared by the unit tests.
#[cfg(test)]
pub(crate) fn widget(versions: Value) -> Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets"},
                 "versions": versions}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_crd_with_two_storage_versions_still_loads_for_the_checks() {
        let s = json!({"openAPIV3Schema": {"type": "object"}});
        let crd = Crd::from_manifest(widget(json!([
            {"name": "v1", "served": true, "storage": true, "schema": s},
            {"name": "v2", "served": true, "storage": true, "schema": s}
        ])))
        .unwrap();
        assert_eq!(crd.storage_version().name(), "v1");
    }

    #[test]
    fn without_the_schema_json_the_models_and_the_documents_length_stay() {
        let m = widget(json!([{"name": "v1", "served": true, "storage": true,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object",
                "properties": {"spec": {"type": "string", "description": "é \"quoted\""}}}}}]));
        let whole_len = serde_json::to_vec(&m).unwrap().len();
        let crd = Crd::from_manifest(m).unwrap();
        assert_eq!(crd.json_len(), whole_len);
        let kept = crd.clone().without_schema_json();
        assert_eq!(kept.json_len(), whole_len, "the whole document's length");
        assert_eq!(
            kept.manifest["spec"]["versions"][0],
            json!({"name": "v1", "served": true, "storage": true,
                   "subresources": {"status": {}}, "schema": {}}),
            "only the schema's JSON goes"
        );
        assert_eq!(kept.versions[0].schema, crd.versions[0].schema);
        assert_eq!(kept.spec, crd.spec);
    }

    #[test]
    fn a_version_without_schema_is_refused() {
        let err = Crd::from_manifest(widget(
            json!([{"name": "v1", "served": true, "storage": true}]),
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "CRD widgets.example.com: version v1 has no schema.openAPIV3Schema"
        );
    }

    #[test]
    fn stored_versions_come_from_status() {
        let mut m = widget(json!([{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object"}}}]));
        m["status"] = json!({"storedVersions": ["v1alpha1", "v1"]});
        let crd = Crd::from_manifest(m).unwrap();
        assert_eq!(
            crd.stored_versions,
            Some(vec!["v1alpha1".into(), "v1".into()])
        );
        assert_eq!(crd.storage_version().name(), "v1");
        assert_eq!(crd.conversion_strategy(), "None");
    }
}
