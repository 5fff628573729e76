//! The compiled form of one schema node: keywords read and checked once,
//! regexes and formats compiled, CEL rules compiled.

use std::collections::BTreeMap;

use serde_json::Value;

use super::ValidateError;
use crate::cel::rule::{Rules, escape};
use crate::cel::value::Extra;
use crate::openapi::formats::{Format, NumericFormat};
use crate::schema::{AdditionalProperties, FieldPath, Schema};

/// Deepest schema the validator compiles; the schema model refuses deeper ones
/// already, this keeps the walk's own recursion bounded too.
pub(crate) const MAX_DEPTH: usize = 256;

pub(crate) struct Options {
    pub server_minor: u32,
}

/// The JSON types a node accepts; empty means any.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Types(u8);

impl Types {
    pub const OBJECT: u8 = 1;
    pub const ARRAY: u8 = 2;
    pub const STRING: u8 = 4;
    pub const INTEGER: u8 = 8;
    pub const NUMBER: u8 = 16;
    pub const BOOLEAN: u8 = 32;

    pub fn any(self) -> bool {
        self.0 == 0
    }

    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// `integer, string` style, for messages.
    pub fn names(self) -> String {
        let all = [
            (Self::OBJECT, "object"),
            (Self::ARRAY, "array"),
            (Self::STRING, "string"),
            (Self::INTEGER, "integer"),
            (Self::NUMBER, "number"),
            (Self::BOOLEAN, "boolean"),
        ];
        let names: Vec<&str> = all
            .iter()
            .filter(|(b, _)| self.has(*b))
            // `number` also accepts integers; name it once.
            .filter(|(b, _)| !(*b == Self::INTEGER && self.has(Self::NUMBER)))
            .map(|(_, n)| *n)
            .collect();
        names.join(",")
    }
}

/// `minimum`/`maximum` with their OpenAPI 3.0 boolean `exclusive*` flag.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    pub value: f64,
    pub exclusive: bool,
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// `additionalProperties`.
#[derive(Debug)]
pub(crate) enum Additional {
    /// Absent or `false`: unknown keys are pruned.
    Absent,
    /// `true`: any value kept, not validated.
    Any,
    /// A map whose values follow the schema.
    Schema(Box<CompiledNode>),
}

#[derive(Debug)]
pub(crate) struct CompiledNode {
    pub types: Types,
    pub nullable: bool,
    pub default: Option<Value>,
    pub enum_values: Option<Vec<Value>>,
    pub minimum: Option<Bound>,
    pub maximum: Option<Bound>,
    pub multiple_of: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<crate::re2::LazyPattern>,
    pub format: Option<Format>,
    /// `int32` or `float` on a number, enforced from 1.36.
    pub numeric_format: Option<NumericFormat>,
    /// A node of type `integer` alone (default or int64 format) on 1.36+:
    /// its bounds must be integers, or every value fails.
    pub integer_bounds: bool,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub required: Vec<String>,
    pub properties: BTreeMap<String, CompiledNode>,
    /// Some property has a `default`: objects need the defaulting pass.
    pub has_defaults: bool,
    pub additional: Additional,
    pub items: Option<Box<CompiledNode>>,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub int_or_string: bool,
    pub list_type: ListType,
    pub all_of: Vec<CompiledNode>,
    pub any_of: Vec<CompiledNode>,
    pub one_of: Vec<CompiledNode>,
    pub not: Option<Box<CompiledNode>>,
    pub rules: Rules,
    /// This node or one below it has CEL rules.
    pub has_rules: bool,
    /// The property's name as CEL sees it (escaped once here rather than
    /// on every conversion); `None` for a name CEL cannot see, and for
    /// nodes that are not properties.
    pub cel_name: Option<std::sync::Arc<String>>,
}

fn bad(path: &FieldPath, keyword: &'static str, expected: &'static str) -> ValidateError {
    ValidateError::BadKeyword {
        path: path.to_string(),
        keyword,
        expected,
    }
}

fn count(
    s: &Schema,
    path: &FieldPath,
    keyword: &'static str,
) -> Result<Option<u64>, ValidateError> {
    match s.keyword(keyword) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) => Ok(Some(n)),
            // A count written as 5.0 is still a count.
            None => match v.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => Ok(Some(f as u64)),
                _ => Err(bad(path, keyword, "a non-negative integer")),
            },
        },
    }
}

fn number(
    s: &Schema,
    path: &FieldPath,
    keyword: &'static str,
) -> Result<Option<f64>, ValidateError> {
    match s.keyword(keyword) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| bad(path, keyword, "a number")),
    }
}

fn flag(s: &Schema, path: &FieldPath, keyword: &'static str) -> Result<bool, ValidateError> {
    match s.keyword(keyword) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(path, keyword, "a boolean")),
    }
}

fn types(s: &Schema, path: &FieldPath) -> Result<Types, ValidateError> {
    let one = |name: &str| -> Option<u8> {
        Some(match name {
            "object" => Types::OBJECT,
            "array" => Types::ARRAY,
            "string" => Types::STRING,
            "integer" => Types::INTEGER,
            // `integer` values are acceptable where `number` is expected.
            "number" => Types::NUMBER | Types::INTEGER,
            "boolean" => Types::BOOLEAN,
            _ => return None,
        })
    };
    match s.keyword("type") {
        None | Some(Value::Null) => Ok(Types::default()),
        Some(Value::String(t)) if t.is_empty() => Ok(Types::default()),
        Some(Value::String(t)) => one(t).map(Types).ok_or_else(|| {
            bad(
                path,
                "type",
                "one of object, array, string, integer, number, boolean",
            )
        }),
        Some(_) => Err(bad(path, "type", "a string")),
    }
}

impl CompiledNode {
    pub(crate) fn compile(
        s: &Schema,
        path: &FieldPath,
        opts: &Options,
        depth: usize,
    ) -> Result<CompiledNode, ValidateError> {
        if depth > MAX_DEPTH {
            return Err(ValidateError::TooDeep {
                path: path.to_string(),
                limit: MAX_DEPTH,
            });
        }
        let mut types = types(s, path)?;
        let int_or_string = flag(s, path, "x-kubernetes-int-or-string")?;
        if int_or_string {
            types = Types(Types::INTEGER | Types::STRING);
        }
        // `number` was widened to accept integers; remember `number` for messages.
        let enum_values = match s.keyword("enum") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(_) => return Err(bad(path, "enum", "a list")),
        };
        let bound =
            |value: Option<f64>, excl: &'static str| -> Result<Option<Bound>, ValidateError> {
                let exclusive = flag(s, path, excl)?;
                Ok(value.map(|value| Bound { value, exclusive }))
            };
        let minimum = bound(number(s, path, "minimum")?, "exclusiveMinimum")?;
        let maximum = bound(number(s, path, "maximum")?, "exclusiveMaximum")?;
        let multiple_of = number(s, path, "multipleOf")?.filter(|m| *m > 0.0);
        let pattern =
            match s.keyword("pattern") {
                None | Some(Value::Null) => None,
                Some(Value::String(p)) => Some(crate::re2::LazyPattern::new(p).map_err(|e| {
                    ValidateError::BadPattern {
                        path: path.to_string(),
                        pattern: p.clone(),
                        source: Box::new(e),
                    }
                })?),
                Some(_) => return Err(bad(path, "pattern", "a string")),
            };
        let format = match s.keyword("format") {
            None | Some(Value::Null) => None,
            Some(Value::String(f)) => Format::parse(f, opts.server_minor),
            Some(_) => return Err(bad(path, "format", "a string")),
        };
        let numeric_format = s
            .keyword("format")
            .and_then(Value::as_str)
            .and_then(|f| NumericFormat::parse(f, opts.server_minor));
        let required = match s.keyword("required") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|r| r.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(path, "required", "a list of strings"))?,
            Some(_) => return Err(bad(path, "required", "a list of strings")),
        };
        let list_type = match s.keyword("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => {
                let keys = match s.keyword("x-kubernetes-list-map-keys") {
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|r| r.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            bad(path, "x-kubernetes-list-map-keys", "a list of strings")
                        })?,
                    _ => Vec::new(),
                };
                ListType::Map(keys)
            }
            _ => ListType::Atomic,
        };

        let mut properties = BTreeMap::new();
        for (name, child) in &s.properties {
            let mut child = CompiledNode::compile(child, &path.property(name), opts, depth + 1)?;
            child.cel_name = escape(name).map(std::sync::Arc::new);
            properties.insert(name.clone(), child);
        }
        let has_defaults = properties
            .values()
            .any(|p: &CompiledNode| p.default.is_some());
        let additional = match &s.additional_properties {
            None | Some(AdditionalProperties::Allowed(false)) => Additional::Absent,
            Some(AdditionalProperties::Allowed(true)) => Additional::Any,
            Some(AdditionalProperties::Schema(child)) => Additional::Schema(Box::new(
                CompiledNode::compile(child, &path.map_values(), opts, depth + 1)?,
            )),
        };
        let items = match &s.items {
            Some(child) => Some(Box::new(CompiledNode::compile(
                child,
                &path.items(),
                opts,
                depth + 1,
            )?)),
            None => None,
        };
        let junctor = |keyword: &'static str| -> Result<Vec<CompiledNode>, ValidateError> {
            match s.keyword(keyword) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(branches)) => branches
                    .iter()
                    .map(|b| {
                        let b = Schema::from_value(b)
                            .map_err(|_| bad(path, keyword, "a list of schemas"))?;
                        CompiledNode::compile_branch(&b, path, opts, depth + 1)
                    })
                    .collect(),
                Some(_) => Err(bad(path, keyword, "a list of schemas")),
            }
        };
        let all_of = junctor("allOf")?;
        let any_of = junctor("anyOf")?;
        let one_of = junctor("oneOf")?;
        let not = match s.keyword("not") {
            None | Some(Value::Null) => None,
            Some(v) => {
                let b = Schema::from_value(v).map_err(|_| bad(path, "not", "a schema"))?;
                Some(Box::new(CompiledNode::compile_branch(
                    &b,
                    path,
                    opts,
                    depth + 1,
                )?))
            }
        };
        let rules = Rules::new(s.keyword("x-kubernetes-validations"));

        let mut node = CompiledNode {
            types,
            nullable: flag(s, path, "nullable")?,
            default: s.keyword("default").cloned(),
            enum_values,
            minimum,
            maximum,
            multiple_of,
            min_length: count(s, path, "minLength")?,
            max_length: count(s, path, "maxLength")?,
            pattern,
            format,
            numeric_format,
            integer_bounds: opts.server_minor >= crate::openapi::numbers::TYPED_BOUNDS_SINCE
                && types == Types(Types::INTEGER)
                && numeric_format.is_none(),
            min_items: count(s, path, "minItems")?,
            max_items: count(s, path, "maxItems")?,
            min_properties: count(s, path, "minProperties")?,
            max_properties: count(s, path, "maxProperties")?,
            required,
            properties,
            has_defaults,
            additional,
            items,
            preserve_unknown: flag(s, path, "x-kubernetes-preserve-unknown-fields")?,
            embedded: flag(s, path, "x-kubernetes-embedded-resource")?,
            int_or_string,
            list_type,
            all_of,
            any_of,
            one_of,
            not,
            rules,
            has_rules: false,
            cel_name: None,
        };
        node.has_rules = !node.rules.is_empty()
            || node.properties.values().any(|p| p.has_rules)
            || node.items.as_ref().is_some_and(|i| i.has_rules)
            || matches!(&node.additional, Additional::Schema(a) if a.has_rules);
        Ok(node)
    }

    /// A branch of `allOf`/`anyOf`/`oneOf`/`not`: value validations only. CEL
    /// rules and defaults are not allowed there in structural schemas and are
    /// dropped.
    fn compile_branch(
        s: &Schema,
        path: &FieldPath,
        opts: &Options,
        depth: usize,
    ) -> Result<CompiledNode, ValidateError> {
        let mut n = CompiledNode::compile(s, path, opts, depth)?;
        fn strip(n: &mut CompiledNode) {
            n.rules.clear();
            n.has_rules = false;
            n.default = None;
            n.has_defaults = false;
            for p in n.properties.values_mut() {
                strip(p);
            }
            if let Some(i) = n.items.as_mut() {
                strip(i);
            }
            if let Additional::Schema(a) = &mut n.additional {
                strip(a);
            }
        }
        strip(&mut n);
        Ok(n)
    }

    /// Whether a non-nullable `null` here is dropped (no default) by the decoder.
    pub(crate) fn drops_null(&self) -> bool {
        !self.nullable && self.default.is_none()
    }
}

impl crate::cel::value::Typed for CompiledNode {
    fn properties(&self) -> &BTreeMap<String, Self> {
        &self.properties
    }
    fn additional(&self) -> Extra<'_, Self> {
        match &self.additional {
            Additional::Absent => Extra::Absent,
            Additional::Any => Extra::Any,
            Additional::Schema(a) => Extra::Schema(a),
        }
    }
    fn items(&self) -> Option<&Self> {
        self.items.as_deref()
    }
    fn nullable(&self) -> bool {
        self.nullable
    }
    fn default(&self) -> Option<&Value> {
        self.default.as_ref()
    }
    fn cel_name(&self) -> Option<&std::sync::Arc<String>> {
        self.cel_name.as_ref()
    }
    fn has_defaults(&self) -> bool {
        self.has_defaults
    }
    fn preserve_unknown(&self) -> bool {
        self.preserve_unknown
    }
    fn embedded(&self) -> bool {
        self.embedded
    }
    fn string_format(&self) -> Option<Format> {
        if self.int_or_string {
            None
        } else {
            self.format
        }
    }
    fn is_number(&self) -> bool {
        self.types.has(Types::NUMBER)
    }
    fn is_integer(&self) -> bool {
        self.types.has(Types::INTEGER)
    }
}
