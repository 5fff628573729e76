//! JSON values as the API server's CEL sees them, typed by the schema
//! node they sit under: declared property names escaped, map keys not,
//! `number` fields as doubles, `date-time`/`duration`/`byte` strings as
//! timestamps, durations and bytes, unknown fields pruned.
//!
//! The schema comes in through [`Typed`], what CEL needs to know of a
//! node; the object validator's compiled nodes implement it, so the rules
//! compiled here and the nodes that hold them depend on each other one way.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube::core::cel::cel::Value as CelValue;
use kube::core::cel::cel::objects::{Key, Map as CelMap};
use serde_json::Value;

use super::rule::escape;
use crate::openapi::formats::{Format, decode_base64, parse_go_duration, parse_timestamp};

/// Deepest value (below the rule's node) converted for CEL.
pub(crate) const CEL_VALUE_DEPTH: usize = 100;

/// What CEL needs to know of a schema node to see a value under it.
pub(crate) trait Typed: Sized {
    /// Declared properties by name as written.
    fn properties(&self) -> &BTreeMap<String, Self>;
    /// `additionalProperties`.
    fn additional(&self) -> Extra<'_, Self>;
    /// `items`.
    fn items(&self) -> Option<&Self>;
    fn nullable(&self) -> bool;
    fn default(&self) -> Option<&Value>;
    /// A property's name as CEL sees it; `None` when CEL cannot see it.
    fn cel_name(&self) -> Option<&Arc<String>>;
    /// Some property has a `default`.
    fn has_defaults(&self) -> bool;
    /// `x-kubernetes-preserve-unknown-fields`.
    fn preserve_unknown(&self) -> bool;
    /// `x-kubernetes-embedded-resource`.
    fn embedded(&self) -> bool;
    /// The `format` that changes a string's CEL type; `None` on an
    /// int-or-string node, whose strings stay strings.
    fn string_format(&self) -> Option<Format>;
    /// `type: number`: every number is a double.
    fn is_number(&self) -> bool;
    /// `type: integer`: whole doubles are ints.
    fn is_integer(&self) -> bool;
    /// A `null` here is dropped by the decoder: not nullable, no default.
    fn drops_null(&self) -> bool {
        !self.nullable() && self.default().is_none()
    }
}

/// A node's `additionalProperties`, as [`Typed::additional`] reports it.
pub(crate) enum Extra<'a, N> {
    /// Absent or `false`: unknown keys are pruned.
    Absent,
    /// `true`: any value kept.
    Any,
    /// A map whose values follow the schema.
    Schema(&'a N),
}

pub(crate) fn key(k: String) -> Key {
    Key::String(Arc::new(k))
}

fn string<N: Typed>(s: &str, node: Option<&N>) -> CelValue {
    let format = node.and_then(Typed::string_format);
    match format {
        Some(Format::DateTime) => {
            if let Some(t) = parse_timestamp(s) {
                return CelValue::Timestamp(t);
            }
        }
        Some(Format::Duration) => {
            if let Some(d) = parse_go_duration(s) {
                return CelValue::Duration(chrono::Duration::nanoseconds(d));
            }
        }
        Some(Format::Byte) => {
            if let Some(b) = decode_base64(s) {
                return CelValue::Bytes(Arc::new(b));
            }
        }
        _ => {}
    }
    CelValue::String(Arc::new(s.to_string()))
}

/// The decoded value as CEL sees it; `Err` when it nests too deep.
pub(crate) fn to_cel<N: Typed>(
    node: Option<&N>,
    v: &Value,
    depth: usize,
    is_root: bool,
) -> Result<CelValue, String> {
    if depth > CEL_VALUE_DEPTH {
        return Err(format!(
            "the value nests deeper than {CEL_VALUE_DEPTH} levels below the rule"
        ));
    }
    Ok(match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => number(n, node),
        Value::String(s) => string(s, node),
        Value::Array(a) => {
            let items = node.and_then(Typed::items);
            let list = a
                .iter()
                .map(|x| to_cel(items, x, depth + 1, false))
                .collect::<Result<Vec<_>, _>>()?;
            CelValue::List(Arc::new(list))
        }
        Value::Object(o) => {
            let mut map = HashMap::with_capacity(o.len());
            match node {
                None => {
                    for (k, c) in o {
                        if let Some(name) = escape(k) {
                            map.insert(key(name), to_cel::<N>(None, c, depth + 1, false)?);
                        }
                    }
                }
                Some(n) => {
                    let untyped =
                        n.properties().is_empty() && matches!(n.additional(), Extra::Absent);
                    for (k, c) in o {
                        if let Some(p) = n.properties().get(k) {
                            let c = if c.is_null() && !p.nullable() {
                                match p.default() {
                                    Some(d) => d,
                                    None => continue,
                                }
                            } else {
                                c
                            };
                            if let Some(name) = p.cel_name() {
                                map.insert(
                                    Key::String(name.clone()),
                                    to_cel(Some(p), c, depth + 1, false)?,
                                );
                            }
                            continue;
                        }
                        match n.additional() {
                            Extra::Schema(a) => {
                                if c.is_null() && a.drops_null() {
                                    continue;
                                }
                                map.insert(key(k.clone()), to_cel(Some(a), c, depth + 1, false)?);
                            }
                            Extra::Any => {
                                map.insert(key(k.clone()), to_cel::<N>(None, c, depth + 1, false)?);
                            }
                            Extra::Absent => {
                                let kept = (n.preserve_unknown() && untyped)
                                    || ((is_root || n.embedded())
                                        && matches!(
                                            k.as_str(),
                                            "apiVersion" | "kind" | "metadata"
                                        ));
                                if kept && let Some(name) = escape(k) {
                                    map.insert(key(name), to_cel::<N>(None, c, depth + 1, false)?);
                                }
                            }
                        }
                    }
                    if n.has_defaults() {
                        for (name, p) in n.properties() {
                            if let (Some(d), false) = (p.default(), o.contains_key(name))
                                && let Some(escaped) = p.cel_name()
                            {
                                map.insert(
                                    Key::String(escaped.clone()),
                                    to_cel(Some(p), d, depth + 1, false)?,
                                );
                            }
                        }
                    }
                }
            }
            CelValue::Map(CelMap { map: Arc::new(map) })
        }
    })
}

/// A JSON number as CEL types it: a double for `number` fields, else an
/// int, a uint, or a double when nothing else holds it.
pub(crate) fn number<N: Typed>(n: &serde_json::Number, node: Option<&N>) -> CelValue {
    if node.is_some_and(Typed::is_number) {
        return CelValue::Float(n.as_f64().unwrap_or(f64::NAN));
    }
    if let Some(i) = n.as_i64() {
        return CelValue::Int(i);
    }
    if node.is_some_and(Typed::is_integer)
        && let Some(f) = n.as_f64()
        && f.fract() == 0.0
        && f.abs() < 9.2e18
    {
        return CelValue::Int(f as i64);
    }
    if let Some(u) = n.as_u64() {
        return CelValue::UInt(u);
    }
    CelValue::Float(n.as_f64().unwrap_or(f64::NAN))
}
