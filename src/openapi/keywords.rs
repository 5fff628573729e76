//! The keywords of one schema node, read in a single pass.
//!
//! The structural walks ask every node for some thirty keywords; looking
//! each up in the node's map is a scan per question. [`Keywords::of`] scans
//! the map once and files each known keyword in its slot, so the rules of a
//! walk read slots instead. Values are as in the map: a `null` keyword is
//! `Some(Value::Null)`, as with [`super::props::get`].

use serde_json::Value;

use super::props::{AdditionalProperties, Obj};

/// The JSON type Go's `JSONSchemaProps` decodes a keyword's value into.
#[derive(Clone, Copy)]
pub enum Expect {
    Str,
    Num,
    Int,
    Bool,
    StrList,
    Array,
    Schema,
    SchemaList,
    SchemaMap,
    SchemaOrBool,
    SchemaOrSchemaList,
    Dependencies,
    Object,
    Rules,
    /// `default` and `example`: any JSON value.
    Any,
}

/// Declares [`Kw`], its JSON spelling and what Go decodes it into, from one
/// table.
macro_rules! keywords {
    ($($kw:ident = $json:literal => $expect:ident,)*) => {
        /// A keyword of `JSONSchemaProps`, by its JSON name.
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        pub enum Kw {
            $($kw,)*
        }

        const COUNT: usize = [$($json,)*].len();

        impl Kw {
            /// Every field of `JSONSchemaProps` in apiextensions.k8s.io/v1,
            /// in its JSON spelling: the vocabulary the checks' tests hold
            /// the comparison to.
            #[cfg(test)]
            pub const JSON_NAMES: [&'static str; COUNT] = [$($json,)*];

            /// The keyword spelled `key`, if `JSONSchemaProps` has it.
            pub fn of(key: &str) -> Option<Kw> {
                Some(match key {
                    $($json => Kw::$kw,)*
                    _ => return None,
                })
            }

            /// What Go decodes the keyword's value into.
            pub fn expect(self) -> Expect {
                match self {
                    $(Kw::$kw => Expect::$expect,)*
                }
            }
        }
    };
}

keywords! {
    Id = "id" => Str,
    Schema = "$schema" => Str,
    Ref = "$ref" => Str,
    Description = "description" => Str,
    Type = "type" => Str,
    Format = "format" => Str,
    Title = "title" => Str,
    Pattern = "pattern" => Str,
    ListType = "x-kubernetes-list-type" => Str,
    MapType = "x-kubernetes-map-type" => Str,
    Maximum = "maximum" => Num,
    Minimum = "minimum" => Num,
    MultipleOf = "multipleOf" => Num,
    MaxLength = "maxLength" => Int,
    MinLength = "minLength" => Int,
    MaxItems = "maxItems" => Int,
    MinItems = "minItems" => Int,
    MaxProperties = "maxProperties" => Int,
    MinProperties = "minProperties" => Int,
    ExclusiveMaximum = "exclusiveMaximum" => Bool,
    ExclusiveMinimum = "exclusiveMinimum" => Bool,
    UniqueItems = "uniqueItems" => Bool,
    Nullable = "nullable" => Bool,
    PreserveUnknownFields = "x-kubernetes-preserve-unknown-fields" => Bool,
    EmbeddedResource = "x-kubernetes-embedded-resource" => Bool,
    IntOrString = "x-kubernetes-int-or-string" => Bool,
    Required = "required" => StrList,
    ListMapKeys = "x-kubernetes-list-map-keys" => StrList,
    Enum = "enum" => Array,
    Not = "not" => Schema,
    AllOf = "allOf" => SchemaList,
    AnyOf = "anyOf" => SchemaList,
    OneOf = "oneOf" => SchemaList,
    Properties = "properties" => SchemaMap,
    PatternProperties = "patternProperties" => SchemaMap,
    Definitions = "definitions" => SchemaMap,
    AdditionalProperties = "additionalProperties" => SchemaOrBool,
    AdditionalItems = "additionalItems" => SchemaOrBool,
    Items = "items" => SchemaOrSchemaList,
    Dependencies = "dependencies" => Dependencies,
    ExternalDocs = "externalDocs" => Object,
    Validations = "x-kubernetes-validations" => Rules,
    Default = "default" => Any,
    Example = "example" => Any,
}

/// One node's keywords, each in its slot.
pub struct Keywords<'a> {
    slots: [Option<&'a Value>; COUNT],
}

impl<'a> Keywords<'a> {
    /// Files the keywords of `node` (one pass over its map).
    pub fn of(node: &'a Obj) -> Keywords<'a> {
        let mut slots = [None; COUNT];
        for (key, value) in node {
            if let Some(kw) = Kw::of(key) {
                slots[kw as usize] = Some(value);
            }
        }
        Keywords { slots }
    }

    /// [`Keywords::of`], also telling whether Go decodes the node's
    /// keywords as they are and whether `NewStructural` accepts them: the
    /// same questions `schema_rules::decode_errors` answers with a walk of
    /// its own, asked here of the keys a walk reads anyway. Child schemas
    /// are only checked to be objects: the walk asks again when it gets
    /// there. `ok` turns false on anything undecodable or refused; the
    /// caller then takes the careful road, which finds and words it.
    pub fn of_checked(node: &'a Obj, ok: &mut bool) -> Keywords<'a> {
        let mut slots = [None; COUNT];
        for (key, value) in node {
            if let Some(kw) = Kw::of(key) {
                slots[kw as usize] = Some(value);
                if !value.is_null() && !decodes(kw, value) {
                    *ok = false;
                }
            }
        }
        Keywords { slots }
    }

    /// The keyword's value, `null` included.
    #[inline]
    pub fn get(&self, kw: Kw) -> Option<&'a Value> {
        self.slots[kw as usize]
    }

    /// Present with a non-null value (Go's non-nil pointer).
    pub fn has(&self, kw: Kw) -> bool {
        self.get(kw).is_some_and(|v| !v.is_null())
    }

    /// The string value, `""` when absent.
    pub fn str(&self, kw: Kw) -> &'a str {
        self.get(kw).and_then(Value::as_str).unwrap_or("")
    }

    /// The string value, when it is one.
    pub fn opt_str(&self, kw: Kw) -> Option<&'a str> {
        self.get(kw).and_then(Value::as_str)
    }

    /// The boolean value, `false` when absent.
    pub fn bool(&self, kw: Kw) -> bool {
        self.get(kw).and_then(Value::as_bool).unwrap_or(false)
    }

    /// The object value, when it is one.
    pub fn obj(&self, kw: Kw) -> Option<&'a Obj> {
        self.get(kw).and_then(Value::as_object)
    }

    /// The array value, empty when absent.
    pub fn arr(&self, kw: Kw) -> &'a [Value] {
        self.get(kw)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    }

    /// A string list (`required`, `x-kubernetes-list-map-keys`).
    pub fn strings(&self, kw: Kw) -> Vec<&'a str> {
        self.arr(kw).iter().filter_map(Value::as_str).collect()
    }

    /// `type`, `""` when absent.
    pub fn ty(&self) -> &'a str {
        self.str(Kw::Type)
    }

    /// `items` when it is a single schema.
    pub fn items(&self) -> Option<&'a Obj> {
        self.obj(Kw::Items)
    }

    /// `properties`, in the order written.
    pub fn properties(&self) -> impl Iterator<Item = (&'a String, &'a Obj)> + use<'a> {
        self.obj(Kw::Properties)
            .into_iter()
            .flat_map(|p| p.iter())
            .filter_map(|(k, v)| v.as_object().map(|o| (k, o)))
    }

    /// The property `name`, when declared.
    pub fn property(&self, name: &str) -> Option<&'a Obj> {
        self.obj(Kw::Properties)
            .and_then(|p| p.get(name))
            .and_then(Value::as_object)
    }

    /// Whether `properties` has at least one entry.
    pub fn has_properties(&self) -> bool {
        self.obj(Kw::Properties).is_some_and(|p| !p.is_empty())
    }

    /// `additionalProperties` as Go decodes it.
    pub fn additional_properties(&self) -> AdditionalProperties<'a> {
        AdditionalProperties::of(self.get(Kw::AdditionalProperties))
    }
}

/// Whether Go decodes `v` (not null) as keyword `kw`'s value, and
/// `NewStructural` takes it: schema-valued keywords must hold objects
/// (or lists and maps of them) and nothing a structural schema refuses.
fn decodes(kw: Kw, v: &Value) -> bool {
    if kw.refused(v) {
        return false;
    }
    let schemas = |a: &[Value]| a.iter().all(|x| x.is_object() || x.is_null());
    match kw {
        // Refused unless empty, and then still a map.
        Kw::Dependencies => v.is_object(),
        Kw::Validations => v.as_array().is_some_and(|rules| {
            rules.iter().all(|r| match r {
                Value::Null => true,
                Value::Object(r) => r.iter().all(|(k, x)| match k.as_str() {
                    "rule" | "message" | "messageExpression" | "reason" | "fieldPath" => {
                        x.is_string() || x.is_null()
                    }
                    "optionalOldSelf" => x.is_boolean() || x.is_null(),
                    _ => true,
                }),
                _ => false,
            })
        }),
        _ => match kw.expect() {
            Expect::Str => v.is_string(),
            Expect::Num => v.is_number(),
            Expect::Int => v.is_i64() || v.is_u64(),
            Expect::Bool => v.is_boolean(),
            Expect::StrList => v
                .as_array()
                .is_some_and(|a| a.iter().all(|x| x.is_string() || x.is_null())),
            Expect::Array => v.is_array(),
            Expect::Object | Expect::Schema => v.is_object(),
            Expect::SchemaList => v.as_array().is_some_and(|a| schemas(a)),
            Expect::SchemaMap => v
                .as_object()
                .is_some_and(|m| m.values().all(|x| x.is_object() || x.is_null())),
            Expect::SchemaOrBool => v.is_boolean() || v.is_object(),
            Expect::SchemaOrSchemaList => v.is_object(),
            Expect::Dependencies | Expect::Rules | Expect::Any => true,
        },
    }
}

impl Kw {
    /// Whether `NewStructural` refuses the keyword with value `v`: the
    /// keywords a structural schema cannot hold unless empty (Go's zero
    /// value), `x-kubernetes-preserve-unknown-fields: false`, and a list of
    /// `items`.
    pub fn refused(self, v: &Value) -> bool {
        match self {
            Kw::Id
            | Kw::Schema
            | Kw::Ref
            | Kw::PatternProperties
            | Kw::Dependencies
            | Kw::AdditionalItems
            | Kw::Definitions => !is_zero(v),
            Kw::PreserveUnknownFields => *v == Value::Bool(false),
            Kw::Items => v.is_array(),
            _ => false,
        }
    }
}

/// Go's zero value: what `reflect.DeepEqual(value, zero)` skips.
pub(crate) fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_found_by_their_exact_name_only() {
        assert_eq!(Kw::of("type"), Some(Kw::Type));
        assert_eq!(Kw::of("x-kubernetes-validations"), Some(Kw::Validations));
        assert_eq!(Kw::of("exclusiveMinimum"), Some(Kw::ExclusiveMinimum));
        for other in ["", "types", "Type", "minimu", "rule", "metadata", "$refs"] {
            assert_eq!(Kw::of(other), None, "{other}");
        }
    }
}
