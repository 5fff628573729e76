//! The structural-schema model: one [`Schema`] node per `openAPIV3Schema` node.
//!
//! Child schemas that give a value its shape (`properties`, `items`,
//! `additionalProperties`) are typed children, so the comparison can walk old
//! and new side by side. Every other keyword is kept as written in
//! [`Schema::keywords`], so that a keyword no check understands is still seen
//! by the unknown-change catch-all instead of being dropped by a typed parser.

pub mod path;
pub mod pruning;
pub mod read;
pub mod sorted_map;
pub mod version;

use serde_json::{Map, Value};
use thiserror::Error;

pub use path::FieldPath;
use path::{Step, Trail};
pub use sorted_map::SortedMap;

/// Deeper schemas than this are refused: real CRDs stay far below it, and a
/// bound keeps hostile input from exhausting the stack.
pub const MAX_DEPTH: usize = 200;

/// Why a schema could not be read into the model.
#[derive(Debug, Error, PartialEq)]
pub enum SchemaError {
    /// A schema node is not a JSON object.
    #[error("{path}: a schema must be an object, found {found}")]
    NotAnObject { path: String, found: &'static str },
    /// `properties` is not a map of schemas.
    #[error("{path}: `properties` must be a map of schemas")]
    BadProperties { path: String },
    /// The schema nests deeper than [`MAX_DEPTH`].
    #[error("{path}: schema nests deeper than {MAX_DEPTH} levels")]
    TooDeep { path: String },
}

/// What `additionalProperties` says about map values.
#[derive(Debug, Clone, PartialEq)]
pub enum AdditionalProperties {
    /// `additionalProperties: true|false`.
    Allowed(bool),
    /// `additionalProperties: {schema}`: a map whose values follow the schema.
    Schema(Box<Schema>),
}

/// One node of a structural schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// Every keyword except the child schemas below, as written.
    pub keywords: SortedMap<Value>,
    /// `properties`, sorted by name.
    pub properties: SortedMap<Schema>,
    /// `items` when it is a single schema (structural schemas allow only that;
    /// the array form stays in `keywords`).
    pub items: Option<Box<Schema>>,
    /// `additionalProperties`.
    pub additional_properties: Option<AdditionalProperties>,
}

use crate::text::value_kind as kind_of;

/// Whether a model keeps the keywords written for people.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Docs {
    Keep,
    Drop,
}

impl Schema {
    /// Reads a schema from its JSON form.
    pub fn from_value(value: &Value) -> Result<Schema, SchemaError> {
        Self::build(value, &Trail::ROOT, 0, Docs::Keep)
    }

    fn build(
        value: &Value,
        at: &Trail<'_>,
        depth: usize,
        docs: Docs,
    ) -> Result<Schema, SchemaError> {
        if depth > MAX_DEPTH {
            return Err(SchemaError::TooDeep {
                path: at.path().to_string(),
            });
        }
        let Value::Object(map) = value else {
            return Err(SchemaError::NotAnObject {
                path: at.path().to_string(),
                found: kind_of(value),
            });
        };
        Self::build_object(map, at, depth, docs)
    }

    /// Reads a schema node held in a larger document, to validate values
    /// against it: without copying it out first, and without the keywords
    /// only people read (`description`, `title`, `example`, `externalDocs`),
    /// which are most of a CRD's text and which no validation reads. The
    /// offline CRD validation builds one per `default` it checks.
    pub fn for_validation(map: &serde_json::Map<String, Value>) -> Result<Schema, SchemaError> {
        Self::build_object(map, &Trail::ROOT, 0, Docs::Drop)
    }

    fn build_object(
        map: &serde_json::Map<String, Value>,
        at: &Trail<'_>,
        depth: usize,
        docs: Docs,
    ) -> Result<Schema, SchemaError> {
        let mut node = Schema::default();
        // Gathered in document order, sorted once at the end.
        let mut keywords = Vec::with_capacity(map.len());
        for (key, v) in map {
            match key.as_str() {
                "properties" => {
                    let Value::Object(props) = v else {
                        return Err(SchemaError::BadProperties {
                            path: at.path().to_string(),
                        });
                    };
                    node.properties = props
                        .iter()
                        .map(|(name, child)| {
                            let below = at.down(Step::Property(name));
                            Ok((name.clone(), Self::build(child, &below, depth + 1, docs)?))
                        })
                        .collect::<Result<_, SchemaError>>()?;
                }
                "items" if v.is_object() => {
                    let below = at.down(Step::Items);
                    node.items = Some(Box::new(Self::build(v, &below, depth + 1, docs)?));
                }
                "additionalProperties" => match v {
                    Value::Bool(b) => {
                        node.additional_properties = Some(AdditionalProperties::Allowed(*b))
                    }
                    Value::Object(_) => {
                        let below = at.down(Step::MapValues);
                        node.additional_properties = Some(AdditionalProperties::Schema(Box::new(
                            Self::build(v, &below, depth + 1, docs)?,
                        )))
                    }
                    other => {
                        return Err(SchemaError::NotAnObject {
                            path: at.down(Step::MapValues).path().to_string(),
                            found: kind_of(other),
                        });
                    }
                },
                "description" | "title" | "example" | "externalDocs" if docs == Docs::Drop => {}
                _ => {
                    keywords.push((key.clone(), v.clone()));
                }
            }
        }
        node.keywords = keywords.into_iter().collect();
        Ok(node)
    }

    /// The JSON form of this node (children included), for reports and for
    /// comparing subschemas inside `allOf`/`anyOf`/`oneOf`/`not`.
    pub fn to_value(&self) -> Value {
        let mut map: Map<String, Value> = self
            .keywords
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !self.properties.is_empty() {
            let props: Map<String, Value> = self
                .properties
                .iter()
                .map(|(k, v)| (k.clone(), v.to_value()))
                .collect();
            map.insert("properties".into(), Value::Object(props));
        }
        if let Some(items) = &self.items {
            map.insert("items".into(), items.to_value());
        }
        match &self.additional_properties {
            Some(AdditionalProperties::Allowed(b)) => {
                map.insert("additionalProperties".into(), Value::Bool(*b));
            }
            Some(AdditionalProperties::Schema(s)) => {
                map.insert("additionalProperties".into(), s.to_value());
            }
            None => {}
        }
        Value::Object(map)
    }

    /// How many schema nodes this one holds, itself included (the children
    /// of `properties`, `items` and `additionalProperties`): what checking
    /// it costs, roughly.
    pub fn node_count(&self) -> usize {
        1 + self
            .properties
            .values()
            .map(Schema::node_count)
            .sum::<usize>()
            + self.items.as_ref().map_or(0, |i| i.node_count())
            + match &self.additional_properties {
                Some(AdditionalProperties::Schema(s)) => s.node_count(),
                _ => 0,
            }
    }

    /// A keyword's raw value.
    pub fn keyword(&self, name: &str) -> Option<&Value> {
        self.keywords.get(name)
    }

    /// `type`, when it is a string.
    pub fn type_name(&self) -> Option<&str> {
        self.keyword("type").and_then(Value::as_str)
    }

    /// A string keyword such as `format` or `pattern`.
    pub fn str_keyword(&self, name: &str) -> Option<&str> {
        self.keyword(name).and_then(Value::as_str)
    }

    /// A boolean keyword; absent means false, as in the API server.
    pub fn flag(&self, name: &str) -> bool {
        self.keyword(name).and_then(Value::as_bool).unwrap_or(false)
    }

    /// A numeric keyword such as `minimum` or `maxLength`.
    pub fn number(&self, name: &str) -> Option<f64> {
        self.keyword(name).and_then(Value::as_f64)
    }

    /// `required` as a list of names.
    pub fn required(&self) -> Vec<&str> {
        self.keyword("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// `x-kubernetes-preserve-unknown-fields: true` on this node.
    pub fn preserves_unknown_fields(&self) -> bool {
        self.flag("x-kubernetes-preserve-unknown-fields")
    }

    /// The schema of map values, when `additionalProperties` is a schema.
    pub fn map_values(&self) -> Option<&Schema> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The child schemas with the step to each: properties in name order,
    /// then list items, then map values (parents before children when
    /// walked depth first).
    pub fn children(&self) -> impl Iterator<Item = (Step<'_>, &Schema)> {
        let properties = self
            .properties
            .iter()
            .map(|(name, child)| (Step::Property(name), child));
        properties
            .chain(self.items.as_deref().map(|i| (Step::Items, i)))
            .chain(self.map_values().map(|v| (Step::MapValues, v)))
    }

    /// Whether a value one step below this node that the schema does not
    /// describe is kept: the node keeps unknown fields, or (for a property)
    /// allows any `additionalProperties`. Otherwise it is pruned.
    pub fn keeps_undescribed(&self, property: bool) -> bool {
        self.preserves_unknown_fields()
            || property
                && matches!(
                    self.additional_properties,
                    Some(AdditionalProperties::Allowed(true))
                )
    }

    /// The node at `path`, and whether an ancestor on the way (or the node's
    /// parent) keeps unknown fields, which stops pruning below it.
    pub fn lookup(&self, path: &FieldPath) -> Lookup<'_> {
        let mut node = self;
        for seg in path.segments() {
            let next = match seg {
                path::Segment::Property(name) => node.properties.get(name.as_str()),
                path::Segment::Items => node.items.as_deref(),
                path::Segment::MapValues => node.map_values(),
            };
            match next {
                Some(n) => node = n,
                None => {
                    let kept = node.keeps_undescribed(matches!(seg, path::Segment::Property(_)));
                    return if kept {
                        Lookup::KeptUnknown
                    } else {
                        Lookup::Pruned
                    };
                }
            }
        }
        Lookup::Found(node)
    }
}

/// Where a path leads in a schema.
#[derive(Debug)]
pub enum Lookup<'a> {
    /// The schema describes the path.
    Found(&'a Schema),
    /// Not described, but an enclosing node keeps unknown fields.
    KeptUnknown,
    /// Not described: the API server prunes it.
    Pruned,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn children_are_typed_and_other_keywords_kept() {
        let s = Schema::from_value(&json!({
            "type": "object",
            "title": "t",
            "properties": {"spec": {"type": "object", "properties": {
                "ports": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}}
        }))
        .unwrap();
        assert_eq!(s.keyword("title"), Some(&json!("t")));
        fn paths(s: &Schema, at: &str, out: &mut Vec<String>) {
            for (step, child) in s.children() {
                let here = format!("{at}{step}");
                if matches!(step, Step::Property(_)) {
                    out.push(here.clone());
                }
                paths(child, &here, out);
            }
        }
        let mut found = Vec::new();
        paths(&s, "^", &mut found);
        let paths = found;
        assert_eq!(
            paths,
            [
                "^.spec",
                "^.spec.labels",
                "^.spec.ports",
                "^.spec.ports[*].name"
            ]
        );
        assert_eq!(
            s.to_value()["properties"]["spec"]["properties"]["labels"]["additionalProperties"],
            json!({"type": "string"})
        );
    }

    #[test]
    fn the_model_for_validation_drops_only_what_people_read() {
        let written = json!({
            "type": "object",
            "description": "root",
            "properties": {"spec": {
                "type": "object",
                "title": "Spec",
                "externalDocs": {"url": "https://example.com"},
                "properties": {"size": {
                    "type": "integer", "minimum": 1, "example": 3,
                    "description": "how many", "x-kubernetes-validations": [{"rule": "self < 9"}]
                }}
            }}
        });
        let Value::Object(map) = &written else {
            unreachable!("the literal is an object")
        };
        let lean = Schema::for_validation(map).unwrap();
        let mut expected = written.clone();
        expected.as_object_mut().unwrap().remove("description");
        let spec = &mut expected["properties"]["spec"];
        spec.as_object_mut().unwrap().remove("title");
        spec.as_object_mut().unwrap().remove("externalDocs");
        let size = spec["properties"]["size"].as_object_mut().unwrap();
        size.remove("example");
        size.remove("description");
        assert_eq!(lean.to_value(), expected);
        // The full model keeps them all.
        assert_eq!(Schema::from_value(&written).unwrap().to_value(), written);
    }

    #[test]
    fn a_schema_that_is_not_an_object_is_an_error_with_its_path() {
        let err = Schema::from_value(&json!({"properties": {"spec": "nope"}})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "^.spec: a schema must be an object, found a string"
        );
    }

    #[test]
    fn lookup_reports_pruning_and_preserved_subtrees() {
        let s = Schema::from_value(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}}},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}))
        .unwrap();
        let p = FieldPath::root().property("spec").property("b");
        assert!(matches!(s.lookup(&p), Lookup::Pruned));
        let p = FieldPath::root().property("raw").property("x");
        assert!(matches!(s.lookup(&p), Lookup::KeptUnknown));
        let p = FieldPath::root().property("spec").property("a");
        assert!(matches!(s.lookup(&p), Lookup::Found(_)));
    }
}
