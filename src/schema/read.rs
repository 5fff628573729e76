//! Reading a schema's JSON straight into the model, with its written length.
//!
//! The webhook receives every CRD as JSON, and a large one is megabytes of
//! schema. Reading it into a `serde_json::Value` first and then into the
//! model allocated every node twice and cloned every keyword; here the
//! parser's events build the model directly, and each node's compact JSON
//! length (what `crdSize` measures) is counted from the entries that stay,
//! so nothing is written out again to measure it.
//!
//! The result is the one [`Schema::from_value`] gives for the same JSON,
//! length included (held by the tests over real CRDs). A key repeated in
//! one object counts last, as in a `serde_json::Map`; the one difference is
//! that an unreadable value (a property that is not an object) is an error
//! even when a later repetition of its key would have replaced it: the API
//! server never sends a repeated key, so only a made-up request can tell.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::path::{Step, Trail};
use super::{AdditionalProperties, MAX_DEPTH, Schema, SchemaError, SortedMap};
use crate::json::written_len;
use crate::text::value_kind;

/// A schema node read from JSON, or why it is not one.
pub type Read = Result<Measured, SchemaError>;

/// A schema and the length of its compact JSON.
#[derive(Debug)]
pub struct Measured {
    pub schema: Schema,
    pub json_len: usize,
}

/// What to do with a JSON value depending on its shape: an object or a
/// list is handed over still unread (to be read into something else than
/// a `Value`), anything else arrives as a `Value`.
pub trait Shaped<'de>: Sized {
    type Out;

    /// An object.
    fn map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Out, A::Error> {
        let value = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(self.other(value))
    }

    /// A list.
    fn seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Out, A::Error> {
        let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(self.other(value))
    }

    /// Any other value (or an object or a list the two above did not want).
    fn other(self, value: Value) -> Self::Out;
}

/// Runs a [`Shaped`] reader over one JSON value.
pub struct ByShape<S>(pub S);

impl<'de, S: Shaped<'de>> DeserializeSeed<'de> for ByShape<S> {
    type Value = S::Out;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<S::Out, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: Shaped<'de>> Visitor<'de> for ByShape<S> {
    type Value = S::Out;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<S::Out, A::Error> {
        self.0.map(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<S::Out, A::Error> {
        self.0.seq(seq)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<S::Out, E> {
        Ok(self.0.other(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<S::Out, E> {
        Ok(self.0.other(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<S::Out, E> {
        Ok(self.0.other(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<S::Out, E> {
        Ok(self.0.other(Value::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<S::Out, E> {
        Ok(self.0.other(Value::String(v.to_string())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<S::Out, E> {
        Ok(self.0.other(Value::String(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<S::Out, E> {
        Ok(self.0.other(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<S::Out, E> {
        Ok(self.0.other(Value::Null))
    }
}

/// Consumes the rest of an object whose reading has already failed.
fn skip_rest<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// The length of a key's JSON and the colon after it.
fn key_len(key: &str) -> usize {
    written_len(key) + 1
}

/// The length of an object's JSON from the lengths of its entries (each
/// key, colon and value).
fn object_len(entries: usize, entry_lens: usize) -> usize {
    2 + entry_lens + entries.saturating_sub(1)
}

/// Reads a schema node: `openAPIV3Schema` itself, or any schema below it.
pub struct Node<'t> {
    pub at: &'t Trail<'t>,
    pub depth: usize,
}

impl Node<'_> {
    fn too_deep(&self) -> Option<SchemaError> {
        (self.depth > MAX_DEPTH).then(|| SchemaError::TooDeep {
            path: self.at.path().to_string(),
        })
    }
}

impl<'de> Shaped<'de> for Node<'_> {
    type Out = Read;

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
        if let Some(e) = self.too_deep() {
            skip_rest(map)?;
            return Ok(Err(e));
        }
        let mut node = Schema::default();
        let mut keywords: Vec<(String, Value)> = Vec::new();
        // The lengths of the typed children's entries, of whichever
        // repetition of their key came last.
        let mut properties_len = None;
        let mut items_len = None;
        let mut additional_len = None;
        while let Some(key) = map.next_key::<String>()? {
            let failed = match key.as_str() {
                "properties" => {
                    match map.next_value_seed(ByShape(Properties {
                        at: self.at,
                        depth: self.depth,
                    }))? {
                        Ok((properties, len)) => {
                            node.properties = properties;
                            properties_len = Some(len);
                            None
                        }
                        Err(e) => Some(e),
                    }
                }
                "items" => {
                    let below = self.at.down(Step::Items);
                    match map.next_value_seed(ByShape(Items(Node {
                        at: &below,
                        depth: self.depth + 1,
                    })))? {
                        ItemsValue::Schema(Ok(m)) => {
                            node.items = Some(Box::new(m.schema));
                            items_len = Some(m.json_len);
                            None
                        }
                        ItemsValue::Schema(Err(e)) => Some(e),
                        ItemsValue::Keyword(v) => {
                            // An array of schemas (or anything else) stays
                            // a keyword, as `Schema::from_value` keeps it.
                            node.items = None;
                            items_len = None;
                            keywords.push((key, v));
                            None
                        }
                    }
                }
                "additionalProperties" => {
                    let below = self.at.down(Step::MapValues);
                    match map.next_value_seed(ByShape(Additional(Node {
                        at: &below,
                        depth: self.depth + 1,
                    })))? {
                        Ok((additional, len)) => {
                            node.additional_properties = Some(additional);
                            additional_len = Some(len);
                            None
                        }
                        Err(e) => Some(e),
                    }
                }
                _ => {
                    let value = map.next_value::<Value>()?;
                    keywords.push((key, value));
                    None
                }
            };
            if let Some(e) = failed {
                skip_rest(map)?;
                return Ok(Err(e));
            }
        }
        if node.items.is_some() {
            // A later `items` schema replaced an earlier keyword one.
            keywords.retain(|(k, _)| k != "items");
        }
        node.keywords = keywords.into_iter().collect();
        let mut entries = node.keywords.len();
        let mut lens: usize = node
            .keywords
            .iter()
            .map(|(k, v)| key_len(k) + written_len(v))
            .sum();
        for (key, len) in [
            ("properties", properties_len),
            ("items", items_len),
            ("additionalProperties", additional_len),
        ] {
            if let Some(len) = len {
                entries += 1;
                lens += key_len(key) + len;
            }
        }
        Ok(Ok(Measured {
            schema: node,
            json_len: object_len(entries, lens),
        }))
    }

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Read, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(self.too_deep().unwrap_or_else(|| {
            SchemaError::NotAnObject {
                path: self.at.path().to_string(),
                found: "a list",
            }
        })))
    }

    fn other(self, value: Value) -> Read {
        Err(self.too_deep().unwrap_or_else(|| SchemaError::NotAnObject {
            path: self.at.path().to_string(),
            found: value_kind(&value),
        }))
    }
}

/// Reads `properties`: a map of schemas.
struct Properties<'t> {
    at: &'t Trail<'t>,
    depth: usize,
}

impl<'de> Shaped<'de> for Properties<'_> {
    type Out = Result<(SortedMap<Schema>, usize), SchemaError>;

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut read: Vec<(String, Measured)> = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            let below = self.at.down(Step::Property(&name));
            let child = map.next_value_seed(ByShape(Node {
                at: &below,
                depth: self.depth + 1,
            }))?;
            match child {
                Ok(m) => read.push((name, m)),
                Err(e) => {
                    skip_rest(map)?;
                    return Ok(Err(e));
                }
            }
        }
        // Sorted, and of a repeated name the last kept.
        let read: SortedMap<Measured> = read.into_iter().collect();
        let lens: usize = read.iter().map(|(k, m)| key_len(k) + m.json_len).sum();
        let len = object_len(read.len(), lens);
        Ok(Ok((read.map_values(|m| m.schema), len)))
    }

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Out, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(self.bad()))
    }

    fn other(self, _: Value) -> Self::Out {
        Err(self.bad())
    }
}

impl Properties<'_> {
    fn bad(&self) -> SchemaError {
        SchemaError::BadProperties {
            path: self.at.path().to_string(),
        }
    }
}

/// Reads `items`: a schema when it is an object, a keyword otherwise.
struct Items<'t>(Node<'t>);

/// What `items` held.
enum ItemsValue {
    Schema(Read),
    Keyword(Value),
}

impl<'de> Shaped<'de> for Items<'_> {
    type Out = ItemsValue;

    fn map<A: MapAccess<'de>>(self, map: A) -> Result<ItemsValue, A::Error> {
        self.0.map(map).map(ItemsValue::Schema)
    }

    fn other(self, value: Value) -> ItemsValue {
        ItemsValue::Keyword(value)
    }
}

/// Reads `additionalProperties`: a boolean or a schema.
struct Additional<'t>(Node<'t>);

impl<'de> Shaped<'de> for Additional<'_> {
    type Out = Result<(AdditionalProperties, usize), SchemaError>;

    fn map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Out, A::Error> {
        Ok(self
            .0
            .map(map)?
            .map(|m| (AdditionalProperties::Schema(Box::new(m.schema)), m.json_len)))
    }

    fn other(self, value: Value) -> Self::Out {
        match value {
            Value::Bool(b) => Ok((AdditionalProperties::Allowed(b), written_len(&value))),
            other => Err(SchemaError::NotAnObject {
                path: self.0.at.path().to_string(),
                found: value_kind(&other),
            }),
        }
    }
}
