//! Reading schema keywords from raw JSON the way Go decodes them into
//! `JSONSchemaProps`: a missing key or `null` is the zero value.

use serde_json::{Map, Value};

pub type Obj = Map<String, Value>;

/// `s[key]`. Schema nodes hold a handful of keywords, and the validation
/// asks each node for dozens of them: a scan of a small map's entries is
/// several times cheaper than hashing the key (SipHash) for the index map
/// `serde_json` keeps in document order.
#[inline]
pub fn get<'a>(s: &'a Obj, key: &str) -> Option<&'a Value> {
    if s.len() <= 16 {
        // Keywords often share a length (`type`/`enum`, `minimum`/`default`):
        // the last byte tells most of them apart without a call to memcmp.
        let last = key.as_bytes().last();
        s.iter()
            .find(|(k, _)| k.len() == key.len() && k.as_bytes().last() == last && k.as_str() == key)
            .map(|(_, v)| v)
    } else {
        s.get(key)
    }
}

/// The string value of `key`, `""` when absent.
pub fn str_of<'a>(s: &'a Obj, key: &str) -> &'a str {
    get(s, key).and_then(Value::as_str).unwrap_or("")
}

/// The boolean value of `key`, `false` when absent.
pub fn bool_of(s: &Obj, key: &str) -> bool {
    get(s, key).and_then(Value::as_bool).unwrap_or(false)
}

/// The object under `key`, when it is one.
pub fn obj_of<'a>(s: &'a Obj, key: &str) -> Option<&'a Obj> {
    get(s, key).and_then(Value::as_object)
}

/// The array under `key`, empty when absent.
pub fn arr_of<'a>(s: &'a Obj, key: &str) -> &'a [Value] {
    get(s, key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// Whether `key` is present with a non-null value (Go's non-nil pointer).
pub fn has(s: &Obj, key: &str) -> bool {
    get(s, key).is_some_and(|v| !v.is_null())
}

/// A string list (`required`, `x-kubernetes-list-map-keys`).
pub fn strings_of<'a>(s: &'a Obj, key: &str) -> Vec<&'a str> {
    arr_of(s, key).iter().filter_map(Value::as_str).collect()
}

/// `properties`, in the order written (errors are sorted where the server
/// sorts them; elsewhere document order reads naturally).
pub fn properties(s: &Obj) -> impl Iterator<Item = (&String, &Obj)> {
    obj_of(s, "properties")
        .into_iter()
        .flat_map(|p| p.iter())
        .filter_map(|(k, v)| v.as_object().map(|o| (k, o)))
}

/// The property `name`, when declared.
pub fn property<'a>(s: &'a Obj, name: &str) -> Option<&'a Obj> {
    obj_of(s, "properties")
        .and_then(|p| p.get(name))
        .and_then(Value::as_object)
}

/// Whether `properties` has at least one entry.
pub fn has_properties(s: &Obj) -> bool {
    obj_of(s, "properties").is_some_and(|p| !p.is_empty())
}

/// `items` when it is a single schema.
pub fn items(s: &Obj) -> Option<&Obj> {
    get(s, "items").and_then(Value::as_object)
}

/// `additionalProperties` as Go decodes it: absent, a boolean, or a schema.
pub enum AdditionalProperties<'a> {
    Absent,
    Bool(bool),
    Schema(&'a Obj),
}

impl<'a> AdditionalProperties<'a> {
    /// The keyword's value, decoded.
    pub fn of(v: Option<&'a Value>) -> AdditionalProperties<'a> {
        match v {
            Some(Value::Bool(b)) => AdditionalProperties::Bool(*b),
            Some(Value::Object(o)) => AdditionalProperties::Schema(o),
            _ => AdditionalProperties::Absent,
        }
    }
}

pub fn additional_properties(s: &Obj) -> AdditionalProperties<'_> {
    AdditionalProperties::of(get(s, "additionalProperties"))
}
