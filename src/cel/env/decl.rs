//! The CEL type of a schema node as the API server declares it to rule
//! compilation (`SchemaDeclType`), with the two numbers the cost estimate
//! is made of: the smallest a value can be when serialized, and the most
//! elements (characters, items, properties) it can hold. An unbounded node
//! is bounded by the largest request the server takes (3 MiB), divided by
//! the smallest size of one element; that is why a missing `maxItems` or
//! `maxLength` makes a rule expensive.
//!
//! A [`Decl`] reads the schema lazily: a rule touches a few fields of a
//! node whose subtree may hold thousands, so nothing is built for the rest.

use serde_json::Value;

use crate::cel::rule::escape as cel_escape;
use crate::openapi::keywords::{Keywords, Kw};
use crate::openapi::props::{
    AdditionalProperties, Obj, additional_properties, bool_of, get, items, str_of,
};

/// `celconfig.MaxRequestSizeBytes`.
pub const MAX_REQUEST_SIZE: i64 = 3 * 1024 * 1024;

/// A declared CEL type.
#[derive(Debug, Clone, Copy)]
pub struct Decl<'s> {
    src: Src<'s>,
    /// The minor version of the server that sizes it: how it sizes an
    /// int-or-string and the implied `metadata.name` changed over time.
    minor: u32,
    /// Strings sized in characters, as cel-go sizes them when it counts a
    /// rule's actual cost, rather than in the up to 4 bytes per character
    /// the estimate allows ([`Decl::at_runtime`]).
    chars: bool,
}

/// From 1.34 an int-or-string with `maxLength` is sized from it (before,
/// from the request size), `apiserver/pkg/cel/common/schemas.go`.
const INT_OR_STRING_MAX_LENGTH_SINCE: u32 = 34;

/// From 1.37 a resource's `metadata.name` is sized 253 bytes and
/// `generateName` 252 (before, from the request size),
/// `apiextensions-apiserver/pkg/apiserver/schema/cel/model/schemas.go`.
const CAPPED_NAMES_SINCE: u32 = 37;

#[derive(Debug, Clone, Copy)]
enum Src<'s> {
    /// A schema node; `bool`: it is a resource root (the CRD's root or an
    /// embedded resource), which implies `apiVersion`, `kind` and
    /// `metadata.name`/`generateName`.
    Schema(&'s Obj, bool),
    /// An implied string (`kind`, `apiVersion`, `metadata.name`), bounded
    /// by the request size only.
    RequestString,
    /// An implied string of at most this many bytes (`metadata.name` from
    /// 1.37).
    CappedString(i64),
    /// The implied `metadata` of a resource root, with the properties the
    /// schema declares for it (a smaller `maxLength` of `name` or
    /// `generateName` caps those from 1.37).
    ImpliedMetadata(Option<&'s Obj>),
    /// The key type of every map: the server's shared `StringType`, whose
    /// `MaxElements` is never set.
    MapKey,
}

/// What a declared type is.
#[derive(Debug, Clone, Copy)]
pub enum Shape<'s> {
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    /// int-or-string.
    Dyn,
    List(Decl<'s>),
    /// Keys are strings ([`Decl::map_key`]).
    Map(Decl<'s>),
    Object,
}

fn int_of(s: &Obj, key: &str) -> Option<i64> {
    get(s, key).and_then(Value::as_i64)
}

fn embedded(s: &Obj) -> bool {
    bool_of(s, "x-kubernetes-embedded-resource")
}

fn int_or_string(s: &Obj) -> bool {
    bool_of(s, "x-kubernetes-int-or-string")
}

/// `kind`/`apiVersion`/`metadata` of a resource root are implied unless the
/// schema declares all of them as the server would add them.
fn implies_metadata(s: &Obj) -> bool {
    let ty = |o: Option<&Value>, t: &str| {
        o.and_then(|p| p.get("type")).and_then(Value::as_str) == Some(t)
    };
    let props = get(s, "properties");
    let meta = props.and_then(|p| p.get("metadata"));
    let meta_props = meta.and_then(|m| m.get("properties"));
    let declared = props.is_some()
        && ty(props.and_then(|p| p.get("kind")), "string")
        && ty(props.and_then(|p| p.get("apiVersion")), "string")
        && ty(meta, "object")
        && meta_props.is_some()
        && ty(meta_props.and_then(|p| p.get("name")), "string")
        && ty(meta_props.and_then(|p| p.get("generateName")), "string");
    !declared
}

/// The property name a CEL field name escapes (`foo__dash__bar` is
/// `foo-bar`), checked by escaping it back.
fn unescape(field: &str) -> Option<String> {
    if let Some(inner) = field.strip_prefix("__").and_then(|f| f.strip_suffix("__"))
        && cel_escape(inner).as_deref() == Some(field)
    {
        return Some(inner.to_string());
    }
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while !rest.is_empty() {
        let replaced = [
            ("__underscores__", "__"),
            ("__dot__", "."),
            ("__dash__", "-"),
            ("__slash__", "/"),
        ]
        .iter()
        .find_map(|(from, to)| rest.strip_prefix(from).map(|r| (r, *to)));
        match replaced {
            Some((r, to)) => {
                out.push_str(to);
                rest = r;
            }
            None => {
                let c = rest.chars().next()?;
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    (cel_escape(&out).as_deref() == Some(field)).then_some(out)
}

impl<'s> Decl<'s> {
    /// `SchemaDeclType(s, isResourceRoot)`: `None` where the server declares
    /// no type (the field is then absent to CEL).
    pub fn of(s: &'s Obj, resource_root: bool) -> Option<Decl<'s>> {
        let ok = int_or_string(s)
            || match str_of(s, "type") {
                "array" => items(s).is_some_and(|i| Decl::of(i, embedded(i)).is_some()),
                "object" => match additional_properties(s) {
                    AdditionalProperties::Schema(ap) => Decl::of(ap, embedded(ap)).is_some(),
                    _ => true,
                },
                "string" | "boolean" | "number" | "integer" => true,
                _ => false,
            };
        ok.then_some(Decl {
            src: Src::Schema(s, resource_root),
            minor: u32::MAX,
            chars: false,
        })
    }

    /// The same declaration, sized as a server of minor version `minor`
    /// sizes it (the newest's way by default).
    pub fn judged_by(self, minor: u32) -> Decl<'s> {
        Decl { minor, ..self }
    }

    /// The same declaration sized as an evaluation counts its actual cost:
    /// a string of `maxLength` characters is `maxLength` long, however many
    /// bytes they take (the estimate sizes it at 4 bytes a character). What
    /// the worst case of a real evaluation is computed with.
    pub fn at_runtime(self) -> Decl<'s> {
        Decl {
            chars: true,
            ..self
        }
    }

    /// Whether strings are sized in characters ([`Decl::at_runtime`]).
    pub fn counts_chars(&self) -> bool {
        self.chars
    }

    /// The type of a map's keys.
    pub fn map_key() -> Decl<'static> {
        Decl {
            src: Src::MapKey,
            minor: u32::MAX,
            chars: false,
        }
    }

    pub fn shape(&self) -> Shape<'s> {
        let s = match self.src {
            Src::Schema(s, _) => s,
            Src::RequestString | Src::CappedString(_) | Src::MapKey => return Shape::String,
            Src::ImpliedMetadata(_) => return Shape::Object,
        };
        if int_or_string(s) {
            return Shape::Dyn;
        }
        let (minor, chars) = (self.minor, self.chars);
        let child = |c: &'s Obj| Decl {
            src: Src::Schema(c, embedded(c)),
            minor,
            chars,
        };
        match str_of(s, "type") {
            "array" => match items(s) {
                Some(i) => Shape::List(child(i)),
                None => Shape::Dyn,
            },
            "object" => match additional_properties(s) {
                AdditionalProperties::Schema(ap) => Shape::Map(child(ap)),
                _ => Shape::Object,
            },
            "string" => match str_of(s, "format") {
                "byte" => Shape::Bytes,
                "duration" => Shape::Duration,
                "date" | "date-time" => Shape::Timestamp,
                _ => Shape::String,
            },
            "boolean" => Shape::Bool,
            "number" => Shape::Double,
            "integer" => Shape::Int,
            _ => Shape::Dyn,
        }
    }

    /// The field a CEL name selects on an object, when declared.
    pub fn field(&self, name: &str) -> Option<Decl<'s>> {
        match self.src {
            Src::ImpliedMetadata(declared) => {
                // `cappedLengthStringType`: the schema's own maxLength when
                // it is smaller.
                let cap = |limit: i64| {
                    let own = declared
                        .and_then(|d| d.get(name))
                        .and_then(|p| p.get("maxLength"))
                        .and_then(Value::as_i64);
                    Src::CappedString(own.map_or(limit, |m| m.min(limit)))
                };
                let src = match (name, self.minor >= CAPPED_NAMES_SINCE) {
                    ("name", true) => cap(253),
                    ("generateName", true) => cap(252),
                    ("name" | "generateName", false) => Src::RequestString,
                    _ => return None,
                };
                Some(Decl {
                    src,
                    minor: self.minor,
                    chars: self.chars,
                })
            }
            Src::Schema(s, root) if matches!(self.shape(), Shape::Object) => {
                if root && implies_metadata(s) {
                    match name {
                        "kind" | "apiVersion" => {
                            return Some(Decl {
                                src: Src::RequestString,
                                minor: self.minor,
                                chars: self.chars,
                            });
                        }
                        "metadata" => {
                            let declared = s
                                .get("properties")
                                .and_then(|p| p.get("metadata"))
                                .and_then(|m| m.get("properties"))
                                .and_then(Value::as_object);
                            return Some(Decl {
                                src: Src::ImpliedMetadata(declared),
                                minor: self.minor,
                                chars: self.chars,
                            });
                        }
                        _ => {}
                    }
                }
                let raw = unescape(name)?;
                let p = s
                    .get("properties")
                    .and_then(|p| p.get(&raw))
                    .and_then(Value::as_object)?;
                Decl::of(p, embedded(p)).map(|d| Decl {
                    minor: self.minor,
                    chars: self.chars,
                    ..d
                })
            }
            _ => None,
        }
    }

    /// `MinSerializedSize`.
    pub fn min_size(&self) -> i64 {
        let s = match self.src {
            Src::Schema(s, _) => s,
            _ => return 2,
        };
        if int_or_string(s) {
            return 1;
        }
        match self.shape() {
            Shape::Bool => 4,
            Shape::Int | Shape::Double | Shape::Dyn => 1,
            Shape::Duration => 3,
            Shape::Timestamp => {
                if str_of(s, "format") == "date" {
                    12
                } else {
                    21
                }
            }
            Shape::String | Shape::Bytes | Shape::List(_) | Shape::Map(_) => 2,
            Shape::Object => {
                let mut size: i64 = 2;
                for name in s
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    let Some(escaped) = cel_escape(name) else {
                        // Still counted by the server when it has a type.
                        if let Some(p) = property(s, name)
                            && p.get("default").is_none_or(Value::is_null)
                            && let Some(d) = Decl::of(p, embedded(p))
                        {
                            size += name.len() as i64 + d.min_size() + 4;
                        }
                        continue;
                    };
                    let has_default = property(s, name)
                        .is_some_and(|p| p.get("default").is_some_and(|d| !d.is_null()));
                    if has_default {
                        continue;
                    }
                    if let Some(d) = self.field(&escaped) {
                        size += name.len() as i64 + d.min_size() + 4;
                    }
                }
                size
            }
        }
    }

    /// `MaxElements`: 0 for scalars and objects, as the server leaves it.
    pub fn max_elements(&self) -> i64 {
        let s = match self.src {
            Src::Schema(s, _) => s,
            Src::RequestString => return MAX_REQUEST_SIZE - 2,
            Src::CappedString(n) => return n,
            _ => return 0,
        };
        let max_length = int_of(s, "maxLength");
        // Characters to bytes, for the estimate.
        let per_char = if self.chars { 1 } else { 4 };
        if int_or_string(s) {
            return match max_length {
                Some(m) if self.chars || self.minor >= INT_OR_STRING_MAX_LENGTH_SINCE => {
                    m.max(0).saturating_mul(per_char)
                }
                _ => MAX_REQUEST_SIZE - 2,
            };
        }
        match self.shape() {
            Shape::List(item) => int_of(s, "maxItems").map_or_else(
                || (MAX_REQUEST_SIZE - 2) / (item.min_size() + 1),
                |m| m.max(0),
            ),
            Shape::Map(value) => int_of(s, "maxProperties").map_or_else(
                || (MAX_REQUEST_SIZE - 2) / (value.min_size() + 6),
                |m| m.max(0),
            ),
            Shape::Bytes => max_length.map_or(MAX_REQUEST_SIZE - 2, |m| m.max(0)),
            Shape::Duration => 32,
            Shape::Timestamp => {
                if str_of(s, "format") == "date" {
                    12
                } else {
                    32
                }
            }
            Shape::String => match max_length {
                Some(m) => m.max(0).saturating_mul(per_char),
                None => match get(s, "enum").and_then(Value::as_array) {
                    Some(values) if !values.is_empty() => values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|v| v.len() as i64)
                        .max()
                        .unwrap_or(0),
                    _ => MAX_REQUEST_SIZE - 2,
                },
            },
            _ => 0,
        }
    }

    /// Whether the schema bounds the node itself (`maxLength`, `maxItems`,
    /// `maxProperties`, an enum, a format); otherwise the bound is the
    /// request size, and declaring one is how to make rules cheaper.
    pub fn bounded(&self) -> bool {
        let s = match self.src {
            Src::Schema(s, _) => s,
            Src::RequestString => return false,
            Src::CappedString(_) => return true,
            _ => return true,
        };
        if int_or_string(s) {
            return s.contains_key("maxLength");
        }
        match self.shape() {
            Shape::List(_) => s.contains_key("maxItems"),
            Shape::Map(_) => s.contains_key("maxProperties"),
            Shape::Bytes => s.contains_key("maxLength"),
            Shape::String => {
                s.contains_key("maxLength")
                    || get(s, "enum")
                        .and_then(Value::as_array)
                        .is_some_and(|e| !e.is_empty())
            }
            _ => true,
        }
    }

    /// Whether two declarations are the same type (the same schema node).
    pub fn same(&self, other: &Decl<'_>) -> bool {
        match (self.src, other.src) {
            (Src::Schema(a, _), Src::Schema(b, _)) => std::ptr::eq(a, b),
            (Src::ImpliedMetadata(_), Src::ImpliedMetadata(_)) => true,
            _ => false,
        }
    }
}

fn property<'s>(s: &'s Obj, name: &str) -> Option<&'s Obj> {
    get(s, "properties")
        .and_then(|p| p.get(name))
        .and_then(Value::as_object)
}

/// `extractMaxElements`: how many values of a child one value of `s`
/// holds, `None` when unbounded.
pub fn max_elements(kws: &Keywords) -> Option<u64> {
    let bound = |kw: Kw| kws.get(kw).and_then(Value::as_i64).map(|m| m.max(0) as u64);
    match kws.ty() {
        "object" if !matches!(kws.additional_properties(), AdditionalProperties::Absent) => {
            bound(Kw::MaxProperties)
        }
        "array" => bound(Kw::MaxItems),
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

    fn bounds(v: Value) -> (i64, i64) {
        let o = v.as_object().unwrap();
        let d = Decl::of(o, false).unwrap();
        (d.min_size(), d.max_elements())
    }

    #[test]
    fn bounds_follow_the_servers_estimates() {
        assert_eq!(bounds(json!({"type": "string"})).1, 3_145_726);
        assert_eq!(bounds(json!({"type": "string", "maxLength": 10})).1, 40);
        assert_eq!(
            bounds(json!({"type": "string", "enum": ["a", "abcd"]})).1,
            4
        );
        assert_eq!(
            bounds(json!({"type": "array", "items": {"type": "string"}})).1,
            3_145_726 / 3
        );
        assert_eq!(
            bounds(json!({"type": "object", "additionalProperties": {"type": "integer"}})).1,
            3_145_726 / 7
        );
        let (min, _) = bounds(
            json!({"type": "object", "required": ["ab", "x-y"], "properties": {
            "ab": {"type": "string"}, "c": {"type": "integer"}, "x-y": {"type": "boolean"}}}),
        );
        assert_eq!(min, 2 + (2 + 2 + 4) + (3 + 4 + 4));
        assert_eq!(max_cardinality(min), 3_145_728 / 22);
    }

    #[test]
    fn fields_are_found_by_their_escaped_names() {
        let s = json!({"type": "object", "properties": {
            "foo-bar": {"type": "string"}, "a__b": {"type": "integer"}, "in": {"type": "boolean"},
            "nested": {"type": "object", "properties": {"x": {"type": "string"}}}}});
        let d = Decl::of(s.as_object().unwrap(), true).unwrap();
        assert!(matches!(
            d.field("foo__dash__bar").map(|f| f.shape()),
            Some(Shape::String)
        ));
        assert!(matches!(
            d.field("a__underscores__b").map(|f| f.shape()),
            Some(Shape::Int)
        ));
        assert!(matches!(
            d.field("__in__").map(|f| f.shape()),
            Some(Shape::Bool)
        ));
        assert!(d.field("foo-bar").is_none());
        assert!(matches!(
            d.field("kind").map(|f| f.shape()),
            Some(Shape::String)
        ));
        let meta = d.field("metadata").unwrap();
        assert!(meta.field("name").is_some() && meta.field("labels").is_none());
        assert!(d.field("nested").and_then(|n| n.field("x")).is_some());
    }
}
