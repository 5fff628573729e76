//! The CEL type of a schema node as the API server declares it to rule
//! compilation (`SchemaDeclType`), with the two numbers the cost estimate
//! is made of: the smallest a value can be when serialized, and the most
//! elements (characters, items, properties) it can hold. An unbounded node
//! is bounded by the largest request the server takes (3 MiB), divided by
//! the smallest size of one element; that is why a missing `maxItems` or
//! `maxLength` makes a rule expensive.

use std::collections::BTreeMap;

use serde_json::Value;

use super::json::{AdditionalProperties, Obj, additional_properties, bool_of, items, str_of};

/// `celconfig.MaxRequestSizeBytes`.
pub const MAX_REQUEST_SIZE: i64 = 3 * 1024 * 1024;

/// A declared CEL type with its size bounds.
#[derive(Debug)]
pub struct Decl {
    pub kind: DeclKind,
    /// `MinSerializedSize`.
    pub min_size: i64,
    /// `MaxElements`; 0 for scalars, as the server leaves it.
    pub max_elements: i64,
    /// Whether the schema bounds the node itself (`maxLength`, `maxItems`,
    /// `maxProperties`, an enum, a format); otherwise the bound is the
    /// request size, and declaring one is how to make rules cheaper.
    pub bounded: bool,
}

#[derive(Debug)]
pub enum DeclKind {
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    /// int-or-string.
    Dyn,
    List(Box<Decl>),
    /// Keys are strings (see [`MAP_KEY`]).
    Map(Box<Decl>),
    /// Fields by their escaped CEL names.
    Object(BTreeMap<String, Decl>),
}

/// The key type of every map: the server's shared `StringType`, whose
/// `MaxElements` is never set.
pub static MAP_KEY: Decl = Decl {
    kind: DeclKind::String,
    min_size: 2,
    max_elements: 0,
    bounded: true,
};

fn scalar(kind: DeclKind, min_size: i64) -> Decl {
    Decl {
        kind,
        min_size,
        max_elements: 0,
        bounded: true,
    }
}

fn zero_if_negative(v: i64) -> i64 {
    v.max(0)
}

fn int_of(s: &Obj, key: &str) -> Option<i64> {
    s.get(key).and_then(Value::as_i64)
}

fn string_decl(max_elements: i64, bounded: bool) -> Decl {
    Decl {
        kind: DeclKind::String,
        min_size: 2,
        max_elements,
        bounded,
    }
}

/// `SchemaDeclType(s, isResourceRoot)`: `None` where the server declares
/// no type (the field is then absent to CEL).
pub fn decl_of(s: &Obj, resource_root: bool) -> Option<Decl> {
    if bool_of(s, "x-kubernetes-int-or-string") {
        let max = match int_of(s, "maxLength") {
            Some(m) => zero_if_negative(m).saturating_mul(4),
            None => MAX_REQUEST_SIZE - 2,
        };
        return Some(Decl {
            kind: DeclKind::Dyn,
            min_size: 1,
            max_elements: max,
            bounded: s.contains_key("maxLength"),
        });
    }
    match str_of(s, "type") {
        "array" => {
            let item_schema = items(s)?;
            let item = decl_of(item_schema, embedded(item_schema))?;
            let max = match int_of(s, "maxItems") {
                Some(m) => zero_if_negative(m),
                None => (MAX_REQUEST_SIZE - 2) / (item.min_size + 1),
            };
            Some(Decl {
                kind: DeclKind::List(Box::new(item)),
                min_size: 2,
                max_elements: max,
                bounded: s.contains_key("maxItems"),
            })
        }
        "object" => {
            if let AdditionalProperties::Schema(ap) = additional_properties(s) {
                let value = decl_of(ap, embedded(ap))?;
                let max = match int_of(s, "maxProperties") {
                    Some(m) => zero_if_negative(m),
                    None => (MAX_REQUEST_SIZE - 2) / (value.min_size + 6),
                };
                return Some(Decl {
                    kind: DeclKind::Map(Box::new(value)),
                    min_size: 2,
                    max_elements: max,
                    bounded: s.contains_key("maxProperties"),
                });
            }
            Some(object_decl(s, resource_root))
        }
        "string" => Some(match str_of(s, "format") {
            "byte" => Decl {
                kind: DeclKind::Bytes,
                min_size: 2,
                max_elements: int_of(s, "maxLength").map_or(MAX_REQUEST_SIZE - 2, zero_if_negative),
                bounded: s.contains_key("maxLength"),
            },
            "duration" => Decl {
                kind: DeclKind::Duration,
                min_size: 3,
                max_elements: 32,
                bounded: true,
            },
            "date" => Decl {
                kind: DeclKind::Timestamp,
                min_size: 12,
                max_elements: 12,
                bounded: true,
            },
            "date-time" => Decl {
                kind: DeclKind::Timestamp,
                min_size: 21,
                max_elements: 32,
                bounded: true,
            },
            _ => {
                let enum_values = s.get("enum").and_then(Value::as_array);
                let bounded =
                    s.contains_key("maxLength") || enum_values.is_some_and(|e| !e.is_empty());
                let max = match int_of(s, "maxLength") {
                    Some(m) => zero_if_negative(m).saturating_mul(4),
                    None => match enum_values.filter(|e| !e.is_empty()) {
                        Some(values) => values
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|v| v.len() as i64)
                            .max()
                            .unwrap_or(0),
                        None => MAX_REQUEST_SIZE - 2,
                    },
                };
                string_decl(max, bounded)
            }
        }),
        "boolean" => Some(scalar(DeclKind::Bool, 4)),
        "number" => Some(scalar(DeclKind::Double, 1)),
        "integer" => Some(scalar(DeclKind::Int, 1)),
        _ => None,
    }
}

fn embedded(s: &Obj) -> bool {
    bool_of(s, "x-kubernetes-embedded-resource")
}

/// Whether a resource root already declares `kind`, `apiVersion` and
/// `metadata.name`/`generateName` as the server would add them.
fn has_type_and_object_meta(s: &Obj) -> bool {
    let ty = |o: Option<&Value>, t: &str| {
        o.and_then(|p| p.get("type")).and_then(Value::as_str) == Some(t)
    };
    let props = s.get("properties");
    let meta = props.and_then(|p| p.get("metadata"));
    let meta_props = meta.and_then(|m| m.get("properties"));
    props.is_some()
        && ty(props.and_then(|p| p.get("kind")), "string")
        && ty(props.and_then(|p| p.get("apiVersion")), "string")
        && ty(meta, "object")
        && meta_props.is_some()
        && ty(meta_props.and_then(|p| p.get("name")), "string")
        && ty(meta_props.and_then(|p| p.get("generateName")), "string")
}

fn object_decl(s: &Obj, resource_root: bool) -> Decl {
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let implicit_meta = resource_root && !has_type_and_object_meta(s);
    let mut fields = BTreeMap::new();
    let mut min_size: i64 = 2;
    let mut add = |name: &str, decl: Decl, has_default: bool| {
        if required.contains(&name) && !has_default {
            min_size += name.len() as i64 + decl.min_size + 4;
        }
        if let Some(escaped) = crate::validate::cel_escape(name) {
            fields.insert(escaped, decl);
        }
    };
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            if implicit_meta && matches!(name.as_str(), "kind" | "apiVersion" | "metadata") {
                continue;
            }
            let Some(p) = p.as_object() else { continue };
            if let Some(decl) = decl_of(p, embedded(p)) {
                add(name, decl, p.get("default").is_some_and(|d| !d.is_null()));
            }
        }
    }
    if implicit_meta {
        let request_string = || string_decl(MAX_REQUEST_SIZE - 2, false);
        add("kind", request_string(), false);
        add("apiVersion", request_string(), false);
        let mut meta = BTreeMap::new();
        meta.insert("name".to_string(), request_string());
        meta.insert("generateName".to_string(), request_string());
        add(
            "metadata",
            Decl {
                kind: DeclKind::Object(meta),
                min_size: 2,
                max_elements: 0,
                bounded: true,
            },
            false,
        );
    }
    Decl {
        kind: DeclKind::Object(fields),
        min_size,
        max_elements: 0,
        bounded: true,
    }
}

/// `extractMaxElements`: how many values of a child one value of `s`
/// holds, `None` when unbounded.
pub fn max_elements(s: &Obj) -> Option<u64> {
    let bound = |key: &str| s.get(key).and_then(Value::as_i64).map(|m| m.max(0) as u64);
    match str_of(s, "type") {
        "object" if !matches!(additional_properties(s), AdditionalProperties::Absent) => {
            bound("maxProperties")
        }
        "array" => bound("maxItems"),
        _ => Some(1),
    }
}

/// `maxCardinality(minSize)`: how many values of a node with this smallest
/// size fit in one request, for a rule whose node is under an unbounded
/// list or map.
pub fn max_cardinality(min_size: i64) -> u64 {
    (MAX_REQUEST_SIZE / (min_size + 1)).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decl(v: Value) -> Decl {
        decl_of(v.as_object().unwrap(), false).unwrap()
    }

    #[test]
    fn bounds_follow_the_servers_estimates() {
        let s = decl(json!({"type": "string"}));
        assert_eq!(s.max_elements, 3_145_726);
        let s = decl(json!({"type": "string", "maxLength": 10}));
        assert_eq!(s.max_elements, 40);
        let s = decl(json!({"type": "string", "enum": ["a", "abcd"]}));
        assert_eq!(s.max_elements, 4);
        let l = decl(json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(l.max_elements, 3_145_726 / 3);
        let m = decl(json!({"type": "object", "additionalProperties": {"type": "integer"}}));
        assert_eq!(m.max_elements, 3_145_726 / 7);
        let o = decl(json!({"type": "object", "required": ["ab"], "properties": {
            "ab": {"type": "string"}, "c": {"type": "integer"}}}));
        assert_eq!(o.min_size, 2 + 2 + 2 + 4);
        assert_eq!(max_cardinality(o.min_size), 3_145_728 / 11);
    }
}
