//! The API server's rules for one `openAPIV3Schema`, in the server's order:
//! the keyword types Go can decode, the OpenAPI restrictions of
//! `ValidateCustomResourceDefinitionOpenAPISchema` (unsupported keywords,
//! list and map types, `x-kubernetes-validations` fields, CEL), the
//! structural-schema invariants and completeness of
//! `apiserver/schema.ValidateStructural`, and the defaults (see
//! [`super::defaults`]). Paths are the server's field paths.

use serde_json::Value;

use super::SchemaOptions;
use super::cel_rules;
use super::defaults;
use super::field::{FieldError, FieldPath};
use crate::openapi::keywords::{Expect, Keywords, Kw, is_zero};
use crate::openapi::props::{
    AdditionalProperties, Obj, arr_of, bool_of, get, has, items, obj_of, properties, property,
    str_of, strings_of,
};

const OPENAPI_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];

/// Root fields allowed when the status subresource is on
/// (`allowedFieldsAtRootSchema`, in JSON spelling).
const ALLOWED_AT_ROOT_WITH_STATUS: &[&str] = &[
    "description",
    "type",
    "format",
    "title",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "required",
    "items",
    "properties",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
];

/// Validates `spec.validation` / `spec.versions[i].schema` (the wrapper
/// object holding `openAPIV3Schema`).
pub fn validate_validation(
    wrapper: &Value,
    status_enabled: bool,
    opts: &SchemaOptions,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(schema) = wrapper.get("openAPIV3Schema").filter(|v| !v.is_null()) else {
        return errs;
    };
    let root_path = path.child("openAPIV3Schema");
    let Some(root) = schema.as_object() else {
        errs.push(FieldError::invalid(
            root_path,
            schema.clone(),
            "cannot be decoded: a schema must be an object",
        ));
        return errs;
    };
    // One walk over the tree does the OpenAPI checks, the structural
    // invariants and finds the defaults and CEL rules; the server's gates
    // (decoding, conversion to a structural schema, its invariants, then
    // defaults, then CEL) are applied afterwards to what it found. A walk
    // over a large schema costs mostly the first touch of every key, so
    // the work is done on one touch instead of four. The walk assumes that
    // everything decodes and converts, and says if it found otherwise; then
    // the schema is decoded and converted on its own first, as the server
    // does, and walked again knowing the outcome.
    let (conversion_error, found, walk_errs) = match walk_schema(root, &root_path, opts, true) {
        (found, walk_errs, true) => (None, found, walk_errs),
        (_, _, false) => {
            let mut decoded = Decoded::default();
            decode_errors(root, &mut root_path.clone(), &mut decoded);
            if !decoded.errs.is_empty() {
                // The server fails to decode the request and validates nothing.
                return decoded.errs;
            }
            let conversion_error = if decoded.refused {
                new_structural_error(root)
            } else {
                None
            };
            // When the root converts, every subtree does.
            let (found, walk_errs, _) =
                walk_schema(root, &root_path, opts, conversion_error.is_none());
            (conversion_error, found, walk_errs)
        }
    };

    if status_enabled {
        for (key, value) in root {
            if is_zero(value) {
                continue;
            }
            if key == "type" {
                if value.as_str() != Some("object") {
                    errs.push(FieldError::invalid(
                        path.child("openAPIV3Schema.type"),
                        value.clone(),
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !ALLOWED_AT_ROOT_WITH_STATUS.contains(&key.as_str()) {
                errs.push(FieldError::invalid(
                    root_path.clone(),
                    Value::String(format!("{key}: ...")),
                    "only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled",
                ).with_fix("move the keyword into spec (or another property): with the status subresource the root may only describe an object"));
                break;
            }
        }
    }
    if bool_of(root, "nullable") {
        errs.push(FieldError::forbidden(
            path.child("openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }

    let mut structural_init_errs = Vec::new();
    let mut cel_allowed = false;
    let total = std::cell::RefCell::new(cel_rules::TotalCost::default());
    if opts.require_structural {
        if let Some(msg) = conversion_error.clone() {
            structural_init_errs.push(FieldError::invalid(root_path.clone(), Value::from(""), msg));
        } else {
            let structural = structural_errors(root, &root_path, found.structural);
            if !structural.is_empty() {
                errs.extend(structural);
            } else {
                let defaults = defaults::validate_sites(&found.defaults, opts);
                if !defaults.is_empty() {
                    errs.extend(defaults);
                } else {
                    cel_allowed = true;
                }
            }
        }
    }
    // Schema errors go straight after the ones above, CEL errors after all.
    errs.extend(walk_errs);
    if cel_allowed {
        for site in &found.cel {
            let scope = cel_rules::CostScope {
                cardinality: site.cardinality,
                suppress_per_expression: opts.suppress_per_expression_cost,
                total: &total,
                kube: opts.kube,
                stored_expressions: opts.stored_expressions,
            };
            errs.extend(cel_rules::compile_errors(
                site.node,
                &site.path,
                site.uncorrelatable.as_deref(),
                site.is_root,
                &scope,
            ));
        }
    }
    if errs.is_empty() {
        errs.extend(structural_init_errs);
    }
    let total = total.into_inner();
    if cel_allowed && total.total > cel_rules::SCHEMA_COST_LIMIT {
        for (path, _) in &total.most_expensive {
            errs.push(FieldError::forbidden(
                path.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errs.push(
            FieldError::forbidden(
                root_path,
                cel_rules::cost_message(
                    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                    total.total,
                    cel_rules::SCHEMA_COST_LIMIT,
                ),
            )
            .with_fix("add maxItems, maxProperties and maxLength to the lists, maps and strings the most expensive rules read"),
        );
    }
    errs
}

/// The single walk of [`validate_validation`] over `root`: its OpenAPI
/// errors and what it found for the later checks, and whether every node
/// it read decodes and converts to a structural schema (with
/// `structural_ok` the caller says whether the schema converts, so far as
/// it knows).
fn walk_schema<'s>(
    root: &'s Obj,
    root_path: &FieldPath,
    opts: &SchemaOptions,
    structural_ok: bool,
) -> (Found<'s>, Vec<FieldError>, bool) {
    let check_structural = opts.require_structural && structural_ok;
    let walker = Walker {
        opts,
        cel_here: true,
        structural_ok,
    };
    let state = State {
        allow_defaults: true,
        disallow_reason: None,
        inside_resource_meta: false,
        uncorrelatable: None,
        cardinality: Some(1),
    };
    let along = Along {
        level: check_structural.then_some(Level::Root),
        defaults: check_structural.then_some(DefaultsAt {
            resource_root: true,
            inside_meta: false,
        }),
    };
    let mut found = Found {
        decodes: true,
        ..Found::default()
    };
    let mut walk_errs = Vec::new();
    walker.walk(
        root,
        &mut root_path.clone(),
        &state,
        true,
        along,
        &mut walk_errs,
        &mut found,
    );
    let decodes = found.decodes;
    (found, walk_errs, decodes)
}

// ---------------------------------------------------------------------------
// Decoding: keyword values Go cannot put into JSONSchemaProps.

/// A keyword's value the server cannot decode into `JSONSchemaProps`.
fn undecodable(p: &FieldPath, v: &Value, what: &str, out: &mut Vec<FieldError>) {
    out.push(
        FieldError::invalid(p.clone(), v.clone(), format!("cannot be decoded: must be {what}"))
            .with_fix("the API server rejects the whole request before validating it; fix the keyword's value type"),
    )
}

/// What the decoding walk found: the keyword values of the wrong JSON type,
/// and whether any node holds a keyword [`new_structural_error`] refuses.
/// The walk reads every key anyway; noting refusals on the way spares a
/// second walk over the whole tree for the (usual) schema that has none.
#[derive(Default)]
struct Decoded {
    errs: Vec<FieldError>,
    refused: bool,
}

/// Keyword values of the wrong JSON type, in the whole schema. `path` is
/// extended in place (and restored) as the walk descends.
///
/// The walk reaches every node `new_structural_error` reaches, and more:
/// the others sit under `definitions`, `patternProperties`, `dependencies`,
/// `additionalItems` or an `items` list, which that function refuses where
/// they are. So `refused` stays false exactly when it returns `None`.
fn decode_errors(s: &Obj, path: &mut FieldPath, out: &mut Decoded) {
    for (key, v) in s {
        if v.is_null() {
            continue;
        }
        let Some(kw) = Kw::of(key) else { continue };
        out.refused |= kw.refused(v);
        let exp = match kw.expect() {
            Expect::Any => continue,
            exp => exp,
        };
        // Most keywords are scalars of the right type: only a value that
        // fails, or a schema to descend into, needs its path built.
        let scalar_ok = match exp {
            Expect::Str => Some(v.is_string()),
            Expect::Num => Some(v.is_number()),
            Expect::Int => Some(v.is_i64() || v.is_u64()),
            Expect::Bool => Some(v.is_boolean()),
            Expect::Array => Some(v.is_array()),
            Expect::Object => Some(v.is_object()),
            _ => None,
        };
        if scalar_ok == Some(true) {
            continue;
        }
        let mut p = path.push().child(key);
        let bad =
            |p: &FieldPath, what: &str, out: &mut Decoded| undecodable(p, v, what, &mut out.errs);
        match exp {
            Expect::Str if !v.is_string() => bad(&p, "a string", out),
            Expect::Num if !v.is_number() => bad(&p, "a number", out),
            Expect::Int if !(v.is_i64() || v.is_u64()) => bad(&p, "an integer", out),
            Expect::Bool if !v.is_boolean() => bad(&p, "a boolean", out),
            Expect::StrList
                if !v
                    .as_array()
                    .is_some_and(|a| a.iter().all(|x| x.is_string() || x.is_null())) =>
            {
                bad(&p, "a list of strings", out)
            }
            Expect::Array if !v.is_array() => bad(&p, "a list", out),
            Expect::Object if !v.is_object() => bad(&p, "an object", out),
            Expect::Schema => match v.as_object() {
                Some(o) => decode_errors(o, &mut p, out),
                None => bad(&p, "a schema object", out),
            },
            Expect::SchemaList => match v.as_array() {
                Some(a) => {
                    for (i, x) in a.iter().enumerate() {
                        match x.as_object() {
                            Some(o) => decode_errors(o, &mut p.push().index(i), out),
                            None if x.is_null() => {}
                            None => bad(&p, "a list of schema objects", out),
                        }
                    }
                }
                None => bad(&p, "a list of schema objects", out),
            },
            Expect::SchemaMap => match v.as_object() {
                Some(m) => {
                    for (k, x) in m {
                        match x.as_object() {
                            Some(o) => decode_errors(o, &mut p.push().key(k), out),
                            None if x.is_null() => {}
                            None => bad(&p, "a map of schema objects", out),
                        }
                    }
                }
                None => bad(&p, "a map of schema objects", out),
            },
            Expect::SchemaOrBool => match v {
                Value::Bool(_) => {}
                Value::Object(o) => decode_errors(o, &mut p, out),
                _ => bad(&p, "a boolean or a schema object", out),
            },
            Expect::SchemaOrSchemaList => match v {
                Value::Object(o) => decode_errors(o, &mut p, out),
                Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        if let Some(o) = x.as_object() {
                            decode_errors(o, &mut p.push().index(i), out);
                        } else if !x.is_null() {
                            bad(&p, "a schema object or a list of them", out);
                        }
                    }
                }
                _ => bad(&p, "a schema object or a list of them", out),
            },
            Expect::Dependencies => match v.as_object() {
                Some(m) => {
                    for (k, x) in m {
                        match x {
                            Value::Object(o) => decode_errors(o, &mut p.push().key(k), out),
                            Value::Array(a) if a.iter().all(Value::is_string) => {}
                            Value::Null => {}
                            _ => bad(&p, "a map of schemas or string lists", out),
                        }
                    }
                }
                None => bad(&p, "a map of schemas or string lists", out),
            },
            Expect::Rules => match v.as_array() {
                Some(a) => {
                    for (i, rule) in a.iter().enumerate() {
                        let Some(r) = rule.as_object() else {
                            if !rule.is_null() {
                                bad(&p, "a list of rule objects", out);
                            }
                            continue;
                        };
                        for (rk, rv) in r {
                            let ok = match rk.as_str() {
                                "rule" | "message" | "messageExpression" | "reason"
                                | "fieldPath" => rv.is_string() || rv.is_null(),
                                "optionalOldSelf" => rv.is_boolean() || rv.is_null(),
                                _ => true,
                            };
                            if !ok {
                                out.errs.push(FieldError::invalid(
                                    FieldPath::index(&p, i).child(rk),
                                    rv.clone(),
                                    "cannot be decoded: wrong value type",
                                ));
                            }
                        }
                    }
                }
                None => bad(&p, "a list of rule objects", out),
            },
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------
// NewStructural: keywords a structural schema cannot hold at all.

/// The first error `structuralschema.NewStructural` returns, if any.
pub fn new_structural_error(s: &Obj) -> Option<String> {
    // One pass over the node's keys finds its children and whether it holds
    // anything refused; the refusals are then checked in the server's order,
    // which decides the message when there are several.
    let mut refused = false;
    let (mut items, mut props, mut additional, mut not) = (None, None, None, None);
    let mut junctors: [&[Value]; 3] = [&[], &[], &[]];
    for (key, v) in s {
        let Some(kw) = Kw::of(key) else { continue };
        refused |= kw.refused(v);
        match kw {
            Kw::Items => items = v.as_object(),
            Kw::Properties => props = v.as_object(),
            Kw::AdditionalProperties => additional = v.as_object(),
            Kw::Not => not = v.as_object(),
            Kw::AllOf => junctors[0] = v.as_array().map_or(&[], Vec::as_slice),
            Kw::AnyOf => junctors[1] = v.as_array().map_or(&[], Vec::as_slice),
            Kw::OneOf => junctors[2] = v.as_array().map_or(&[], Vec::as_slice),
            _ => {}
        }
    }
    if refused {
        let unsupported = [
            ("id", "'id'"),
            ("$schema", "'schema'"),
            ("$ref", "'$ref'"),
            ("patternProperties", "'patternProperties'"),
            ("dependencies", "'dependencies'"),
            ("additionalItems", "'additionalItems'"),
            ("definitions", "'definitions'"),
        ];
        for (key, name) in unsupported {
            if get(s, key).is_some_and(|v| !is_zero(v)) {
                return Some(format!("OpenAPIV3Schema {name} is not supported"));
            }
        }
        if let Some(Value::Bool(false)) = get(s, "x-kubernetes-preserve-unknown-fields") {
            return Some(
                "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                    .into(),
            );
        }
        if get(s, "items").is_some_and(Value::is_array) {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into());
        }
    }
    let children = items
        .into_iter()
        .chain(
            props
                .into_iter()
                .flatten()
                .filter_map(|(_, p)| p.as_object()),
        )
        .chain(additional)
        .chain(not)
        .chain(junctors.into_iter().flatten().filter_map(Value::as_object));
    for child in children {
        if let Some(e) = new_structural_error(child) {
            return Some(e);
        }
    }
    None
}

// ---------------------------------------------------------------------------
// ValidateStructural: invariants and completeness.

/// What the server's version changes in the nested (junctor) schemas.
#[derive(Clone, Copy)]
struct Nested {
    /// 1.30: `additionalProperties: false` under `allOf`/`anyOf`/`oneOf`/
    /// `not` is refused too.
    forbids_false_additional_properties: bool,
}

impl Nested {
    fn of(kube: super::KubeVersion) -> Nested {
        Nested {
            forbids_false_additional_properties: kube.minor < 31,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// `structuralschema.ValidateStructural`'s list for `root`, from the
/// invariants the walk found: with the completeness of the root's value
/// validations, sorted like the server's list.
fn structural_errors(
    root: &Obj,
    path: &FieldPath,
    mut invariants: Vec<FieldError>,
) -> Vec<FieldError> {
    completeness_of_value_validation(root, Some(root), path, path, &mut invariants);
    // Formatted once per error: a non-structural schema has thousands.
    invariants.sort_by_cached_key(ToString::to_string);
    invariants
}

/// For a root schema whose [`new_structural_error`] is `None`: the errors
/// of `structuralschema.ValidateStructural` (`Err`), or when there are none
/// those of its defaults, as [`validate_validation`] judges them. What the
/// server's update rules ask of the stored CRD.
pub fn structural_then_defaults(
    root: &Obj,
    path: &FieldPath,
    opts: &SchemaOptions,
) -> Result<Vec<FieldError>, Vec<FieldError>> {
    let opts = SchemaOptions {
        require_structural: true,
        ..*opts
    };
    let (found, _, _) = walk_schema(root, path, &opts, true);
    let structural = structural_errors(root, path, found.structural);
    if structural.is_empty() {
        Ok(defaults::validate_sites(&found.defaults, &opts))
    } else {
        Err(structural)
    }
}

fn type_of(s: &Obj) -> &str {
    str_of(s, "type")
}

/// `[{type: integer}, {type: string}]`: the int-or-string pattern, written
/// out (exactly these, nothing else in the branches).
fn is_int_or_string_any_of(branches: &[Value]) -> bool {
    let only_type = |v: &Value, t: &str| {
        v.as_object().is_some_and(|o| {
            o.iter()
                .filter(|(_, x)| !is_zero(x))
                .all(|(k, x)| k == "type" && x.as_str() == Some(t))
                && str_of(o, "type") == t
        })
    };
    branches.len() == 2 && only_type(&branches[0], "integer") && only_type(&branches[1], "string")
}

/// One node's structural invariants (its children are checked by
/// [`Walker::walk`] on its way down). The errors are sorted in the end, so the order in which
/// nodes are visited does not matter.
fn invariants_node(
    kws: &Keywords,
    lvl: Level,
    nested: Nested,
    path: &mut FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let ty = kws.ty();
    if ty == "array" && kws.items().is_none() {
        errs.push(FieldError::required(
            path.child("items"),
            "must be specified",
        ));
    }
    let ap = kws.additional_properties();
    if lvl == Level::Root && !matches!(ap, AdditionalProperties::Absent) {
        errs.push(FieldError::forbidden(
            path.child("additionalProperties"),
            "must not be used at the root",
        ));
    }
    let int_or_string = kws.bool(Kw::IntOrString);
    let preserve = kws.bool(Kw::PreserveUnknownFields);
    let embedded = kws.bool(Kw::EmbeddedResource);
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            path.child("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            path.child("x-kubernetes-embedded-resource"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(kws.arr(Kw::AnyOf));
    let skip_first_all_of_any_of = kws
        .arr(Kw::AllOf)
        .first()
        .and_then(Value::as_object)
        .is_some_and(|a| is_int_or_string_any_of(arr_of(a, "anyOf")));
    value_validation(
        kws,
        skip_any_of,
        skip_first_all_of_any_of,
        lvl,
        nested,
        path,
        errs,
    );

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && ty != "object" {
        if ty.is_empty() {
            errs.push(FieldError::required(
                path.child("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(FieldError::invalid(
                path.child("type"),
                Value::from(ty),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(
            FieldError::required(path.child("type"), detail)
                .with_fix("declare the node's type (e.g. type: object for a node with properties); every node of a structural schema has one"),
        );
    }
    if embedded && !matches!(ap, AdditionalProperties::Absent) {
        errs.push(FieldError::forbidden(
            path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            path.child("type"),
            Value::from(ty),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for field in ["kind", "apiVersion"] {
            if let Some(p) = kws.property(field)
                && type_of(p) != "string"
            {
                errs.push(FieldError::invalid(
                    path.child("properties").key(field).child("type"),
                    Value::from(type_of(p)),
                    "must be string",
                ));
            }
        }
    }
    // Only a resource root or an embedded resource has anything to check in
    // `metadata`: other nodes skip the lookup (a hash of the name).
    if check_metadata && let Some(meta) = kws.property("metadata") {
        let mpath = path.child("properties").key("metadata");
        if type_of(meta) != "object" {
            errs.push(FieldError::invalid(
                mpath.child("type"),
                Value::from(type_of(meta)),
                "must be object",
            ));
        }
        if lvl == Level::Root && !root_metadata_is_implicit(meta) {
            errs.push(
                FieldError::forbidden(
                    mpath,
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                )
                .with_fix("describe metadata as just `type: object` (optionally with name/generateName rules): the server supplies ObjectMeta itself"),
            );
        }
    }
    if embedded && !preserve && !kws.has_properties() {
        errs.push(FieldError::required(
            path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Root `metadata` may only be `type` (any), `default` (checked elsewhere)
/// and `properties` limited to `name` and `generateName`.
fn root_metadata_is_implicit(meta: &Obj) -> bool {
    for (k, v) in meta {
        if is_zero(v) {
            continue;
        }
        match k.as_str() {
            "type" | "default" => {}
            "properties" => {
                let Some(p) = v.as_object() else { return false };
                if !p.keys().all(|n| n == "name" || n == "generateName") {
                    return false;
                }
            }
            // Keys Go drops on decoding never reach the check.
            _ if Kw::of(k).is_none() => {}
            _ => return false,
        }
    }
    true
}

/// `type` is not `want` though `keyword` needs it: missing (`Required`)
/// or another type (`Invalid`), as the API server words it.
fn type_must_be(ty: &str, want: &str, keyword: &str, path: &FieldPath) -> FieldError {
    let detail = format!("must be {want} if {keyword} is specified");
    if ty.is_empty() {
        FieldError::required(path.child("type"), detail)
    } else {
        FieldError::invalid(path.child("type"), Value::from(ty), detail)
    }
}

fn value_validation(
    kws: &Keywords,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    nested: Nested,
    path: &mut FieldPath,
    errs: &mut Vec<FieldError>,
) {
    for (kw, name) in [
        (Kw::AnyOf, "anyOf"),
        (Kw::AllOf, "allOf"),
        (Kw::OneOf, "oneOf"),
    ] {
        if kw == Kw::AnyOf && skip_any_of {
            continue;
        }
        for (i, b) in kws.arr(kw).iter().enumerate() {
            if let Some(b) = b.as_object() {
                let skip = kw == Kw::AllOf && skip_first_all_of_any_of && i == 0;
                let at = &mut path.push().child(name).index(i);
                nested_value_validation(b, skip, lvl, nested, at, errs);
            }
        }
    }
    if let Some(n) = kws.obj(Kw::Not) {
        nested_value_validation(n, false, lvl, nested, &mut path.push().child("not"), errs);
    }
    let pattern = kws.str(Kw::Pattern);
    if !pattern.is_empty()
        && let Some(e) = super::go_regex_error(pattern)
    {
        errs.push(
            FieldError::invalid(
                path.child("pattern"),
                Value::from(pattern),
                format!("must be a valid regular expression, but isn't: {e}"),
            )
            .with_fix("the server compiles patterns with Go's RE2: no lookaround, no backreferences, no possessive quantifiers"),
        );
    }
}

fn nested_value_validation(
    v: &Obj,
    skip_any_of: bool,
    lvl: Level,
    nested: Nested,
    path: &mut FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let kws = Keywords::of(v);
    value_validation(&kws, skip_any_of, false, lvl, nested, path, errs);
    if let Some(i) = kws.items() {
        nested_value_validation(i, false, lvl, nested, &mut path.push().child("items"), errs);
    }
    for (k, p) in kws.properties() {
        nested_value_validation(
            p,
            false,
            Level::Field,
            nested,
            &mut path.push().child("properties").key(k),
            errs,
        );
    }
    let fix = "keep type, default, nullable, descriptions and x-kubernetes-* in the structural part of the schema; allOf/anyOf/oneOf/not may only add value validations";
    let forbid = |key: &str, detail: &str, errs: &mut Vec<FieldError>| {
        errs.push(FieldError::forbidden(path.child(key), detail).with_fix(fix));
    };
    if !kws.ty().is_empty() {
        forbid("type", "must be empty to be structural", errs);
    }
    // From 1.31 additionalProperties: false decodes to nothing in a nested
    // validation; 1.30 kept it, and refused it like any other value.
    match kws.additional_properties() {
        AdditionalProperties::Schema(_) | AdditionalProperties::Bool(true) => forbid(
            "additionalProperties",
            "must be undefined to be structural",
            errs,
        ),
        AdditionalProperties::Bool(false) if nested.forbids_false_additional_properties => forbid(
            "additionalProperties",
            "must be undefined to be structural",
            errs,
        ),
        _ => {}
    }
    if kws.has(Kw::Default) {
        forbid("default", "must be undefined to be structural", errs);
    }
    if !kws.str(Kw::Title).is_empty() {
        forbid("title", "must be empty to be structural", errs);
    }
    if !kws.str(Kw::Description).is_empty() {
        forbid("description", "must be empty to be structural", errs);
    }
    if kws.bool(Kw::Nullable) {
        forbid("nullable", "must be false to be structural", errs);
    }
    for (kw, key) in [
        (
            Kw::PreserveUnknownFields,
            "x-kubernetes-preserve-unknown-fields",
        ),
        (Kw::EmbeddedResource, "x-kubernetes-embedded-resource"),
        (Kw::IntOrString, "x-kubernetes-int-or-string"),
    ] {
        if kws.bool(kw) {
            forbid(key, "must be false to be structural", errs);
        }
    }
    if !kws.arr(Kw::ListMapKeys).is_empty() {
        forbid(
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
            errs,
        );
    }
    if kws.has(Kw::ListType) {
        forbid(
            "x-kubernetes-list-type",
            "must be undefined to be structural",
            errs,
        );
    }
    if kws.has(Kw::MapType) {
        forbid(
            "x-kubernetes-map-type",
            "must be undefined to be structural",
            errs,
        );
    }
    if !kws.arr(Kw::Validations).is_empty() {
        forbid(
            "x-kubernetes-validations",
            "must be empty to be structural",
            errs,
        );
    }
    if kws.property("metadata").is_some() {
        errs.push(FieldError::forbidden(
            path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Completeness: every property an `allOf`/`anyOf`/`oneOf`/`not` of the
/// root names must exist in the structural part. The server checks this
/// from the root's value validations only.
fn completeness_of_value_validation(
    v: &Obj,
    s: Option<&Obj>,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path.clone(),
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    if let Some(n) = obj_of(v, "not") {
        completeness_of_nested(n, Some(s), s_path, &v_path.child("not"), errs);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, b) in arr_of(v, key).iter().enumerate() {
            if let Some(b) = b.as_object() {
                completeness_of_nested(b, Some(s), s_path, &v_path.child(key).index(i), errs);
            }
        }
    }
}

fn completeness_of_nested(
    v: &Obj,
    s: Option<&Obj>,
    s_path: &FieldPath,
    v_path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(
            FieldError::required(s_path.clone(), format!("because it is defined in {v_path}"))
                .with_fix("declare the field in the structural part (properties/items) too, with its type"),
        );
        return;
    };
    completeness_of_value_validation(v, Some(s), s_path, v_path, errs);
    if let Some(vi) = items(v) {
        completeness_of_nested(
            vi,
            items(s),
            &s_path.child("items"),
            &v_path.child("items"),
            errs,
        );
    }
    for (k, vp) in properties(v) {
        let sp = property(s, k);
        if sp.is_none() {
            errs.push(
                FieldError::required(
                    s_path.child("properties").key(k),
                    format!("because it is defined in {}", v_path.child("properties").key(k)),
                )
                .with_fix("declare the field in the structural part (properties/items) too, with its type"),
            );
        } else {
            completeness_of_nested(
                vp,
                sp,
                &s_path.child("properties").key(k),
                &v_path.child("properties").key(k),
                errs,
            );
        }
    }
}

// ---------------------------------------------------------------------------
// ValidateCustomResourceDefinitionOpenAPISchema.

#[derive(Clone)]
struct State {
    allow_defaults: bool,
    /// Shared: every node below carries it.
    disallow_reason: Option<std::rc::Rc<str>>,
    inside_resource_meta: bool,
    /// The first ancestor whose values cannot be correlated between two
    /// revisions of an object (oldSelf is meaningless below it); shared,
    /// because every node below it carries it.
    uncorrelatable: Option<std::rc::Rc<FieldPath>>,
    /// How many values of this node one object can hold (`None`: unbounded).
    cardinality: Option<u64>,
}

impl State {
    fn forbid_defaults(&self, reason: String) -> State {
        State {
            allow_defaults: false,
            disallow_reason: Some(reason.into()),
            ..self.clone()
        }
    }

    fn forbid_old_self(&self, path: &FieldPath) -> State {
        if self.uncorrelatable.is_some() {
            return self.clone();
        }
        State {
            uncorrelatable: Some(std::rc::Rc::new(path.clone())),
            ..self.clone()
        }
    }
}

/// Where a node sits, for the checks [`Walker::walk`] does besides its
/// own: its level in the structural tree (`None` off the structural part,
/// or when the invariants are not checked), and its place on the path the
/// defaults walk follows (`properties` and `items` from the root).
#[derive(Clone, Copy)]
struct Along {
    level: Option<Level>,
    defaults: Option<DefaultsAt>,
}

impl Along {
    /// Under a value validation, `definitions`, `dependencies` or a tuple
    /// `items`: none of the structural walks go there.
    const OFF: Along = Along {
        level: None,
        defaults: None,
    };
}

/// A node on the defaults walk's path: whether it is a resource root (an
/// embedded resource, or the root) and whether it lies inside a resource's
/// `metadata`, `apiVersion` or `kind` (defaults there are not pruned).
#[derive(Clone, Copy)]
struct DefaultsAt {
    resource_root: bool,
    inside_meta: bool,
}

/// What one walk found for the checks that run after it.
#[derive(Default)]
struct Found<'s> {
    /// The structural invariants broken (unsorted).
    structural: Vec<FieldError>,
    /// Every `default` on the defaults walk's path, in the walk's order.
    defaults: Vec<defaults::Site<'s>>,
    /// The steps from the root to the node being walked, while it is on
    /// the defaults walk's path.
    steps: Vec<defaults::Step<'s>>,
    /// Rules whose fields are valid, to compile once CEL is allowed.
    cel: Vec<CelSite<'s>>,
    /// Every node walked decodes and converts ([`Keywords::of_checked`]).
    decodes: bool,
}

/// A node whose `x-kubernetes-validations` are compiled if the schema
/// passes the structural and defaults checks.
struct CelSite<'s> {
    node: &'s Obj,
    path: FieldPath,
    uncorrelatable: Option<std::rc::Rc<FieldPath>>,
    is_root: bool,
    cardinality: Option<u64>,
}

struct Walker<'a> {
    opts: &'a SchemaOptions<'a>,
    /// Rules here are compiled (not under a value validation), if the
    /// schema's structural checks and defaults pass.
    cel_here: bool,
    /// The schema converts to a structural one (`fieldPath`s can be resolved).
    structural_ok: bool,
}

impl Walker<'_> {
    /// Adds the subtree's schema errors to `errs`, and its structural
    /// errors, defaults and CEL rules to `found` (one set of lists for the
    /// whole walk, not a set per node).
    #[allow(clippy::too_many_arguments)]
    fn walk<'s>(
        &self,
        s: &'s Obj,
        path: &mut FieldPath,
        st: &State,
        is_root: bool,
        along: Along,
        errs: &mut Vec<FieldError>,
        found: &mut Found<'s>,
    ) {
        let kws = Keywords::of_checked(s, &mut found.decodes);
        if let Some(level) = along.level {
            invariants_node(
                &kws,
                level,
                Nested::of(self.opts.kube),
                path,
                &mut found.structural,
            );
        }
        // The defaults walk's view of this node and of its children.
        let defaults_here = along.defaults.map(|at| {
            let embedded = at.resource_root || kws.bool(Kw::EmbeddedResource);
            (embedded, at.inside_meta && !embedded)
        });
        if let Some((_, inside_meta)) = defaults_here
            && let Some(default) = kws.get(Kw::Default).filter(|d| !d.is_null())
        {
            found.defaults.push(defaults::Site {
                node: s,
                default,
                path: path.clone(),
                inside_meta,
                steps: found.steps.clone(),
            });
        }
        let errs_before = errs.len();
        self.standard(&kws, path, st, errs);
        // The children's state: each value of this node holds up to
        // max_elements of them.
        let child_card = st
            .cardinality
            .and_then(|c| crate::cel::env::decl::max_elements(&kws).map(|m| c.saturating_mul(m)));
        let child = &State {
            cardinality: child_card,
            ..st.clone()
        };

        if kws.bool(Kw::UniqueItems) {
            errs.push(
                FieldError::forbidden(
                    path.child("uniqueItems"),
                    "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                )
                .with_fix("use x-kubernetes-list-type: set (or map) instead"),
            );
        }
        let ap = kws.additional_properties();
        if !matches!(ap, AdditionalProperties::Absent) {
            if kws.has_properties() && !matches!(ap, AdditionalProperties::Bool(true)) {
                errs.push(
                    FieldError::forbidden(
                        path.child("additionalProperties"),
                        "additionalProperties and properties are mutual exclusive",
                    )
                    .with_fix("a node is either a struct (properties) or a map (additionalProperties), not both"),
                );
            }
            if let AdditionalProperties::Schema(o) = ap {
                let sub = if child.inside_resource_meta {
                    child.forbid_defaults(
                        "inside additionalProperties applying to object metadata".into(),
                    )
                } else {
                    child.clone()
                };
                let along = Along {
                    level: along.level.map(|_| Level::Field),
                    defaults: None,
                };
                self.walk_into(
                    o,
                    &mut path.push().child("additionalProperties"),
                    &sub,
                    along,
                    errs,
                    found,
                );
            }
        }
        let embedded = kws.bool(Kw::EmbeddedResource);
        let map_type = kws.opt_str(Kw::MapType);
        for (i, (name, p)) in kws.properties().enumerate() {
            let mut sub = child.clone();
            // Granular and atomic maps correlate their fields; anything else not.
            if map_type.is_some_and(|m| m != "granular" && m != "atomic") {
                sub = sub.forbid_old_self(path);
            }
            if (is_root || embedded) && matches!(name.as_str(), "metadata" | "kind" | "apiVersion")
            {
                sub.inside_resource_meta = true;
                if is_root {
                    sub = sub.forbid_defaults(format!("in top-level {name}"));
                }
            }
            let at = defaults_here.map(|(embedded, inside_meta)| DefaultsAt {
                resource_root: false,
                inside_meta: inside_meta
                    || (embedded && matches!(name.as_str(), "metadata" | "apiVersion" | "kind")),
            });
            let along = Along {
                level: along.level.map(|_| Level::Field),
                defaults: at,
            };
            if at.is_some() {
                found.steps.push(defaults::Step::Property(name, i));
            }
            self.walk_into(
                p,
                &mut path.push().child("properties").key(name),
                &sub,
                along,
                errs,
                found,
            );
            if at.is_some() {
                found.steps.pop();
            }
        }
        // Value validations: no CEL context below them.
        let value_walker = Walker {
            cel_here: false,
            ..*self
        };
        if let Some(n) = kws.obj(Kw::Not) {
            value_walker.walk_into(
                n,
                &mut path.push().child("not"),
                st,
                Along::OFF,
                errs,
                found,
            );
        }
        for (kw, key) in [
            (Kw::AllOf, "allOf"),
            (Kw::OneOf, "oneOf"),
            (Kw::AnyOf, "anyOf"),
        ] {
            for (i, b) in kws.arr(kw).iter().enumerate() {
                if let Some(b) = b.as_object() {
                    value_walker.walk_into(
                        b,
                        &mut path.push().child(key).index(i),
                        st,
                        Along::OFF,
                        errs,
                        found,
                    );
                }
            }
        }
        if let Some(defs) = kws.obj(Kw::Definitions) {
            for (k, d) in defs {
                if let Some(d) = d.as_object() {
                    value_walker.walk_into(
                        d,
                        &mut path.push().child("definitions").key(k),
                        st,
                        Along::OFF,
                        errs,
                        found,
                    );
                }
            }
        }
        let list_type = kws.opt_str(Kw::ListType);
        if kws.get(Kw::Items).is_some_and(|v| !v.is_null()) {
            let sub = if list_type != Some("map") {
                child.forbid_old_self(path)
            } else {
                child.clone()
            };
            match kws.get(Kw::Items) {
                Some(Value::Object(o)) => {
                    let at = defaults_here.map(|(_, inside_meta)| DefaultsAt {
                        resource_root: false,
                        inside_meta,
                    });
                    let along = Along {
                        level: along.level.map(|_| Level::Item),
                        defaults: at,
                    };
                    if at.is_some() {
                        found.steps.push(defaults::Step::Items);
                    }
                    self.walk_into(o, &mut path.push().child("items"), &sub, along, errs, found);
                    if at.is_some() {
                        found.steps.pop();
                    }
                }
                Some(Value::Array(a)) => {
                    for (i, x) in a.iter().enumerate() {
                        if let Some(o) = x.as_object() {
                            self.walk_into(
                                o,
                                &mut path.push().child("items").index(i),
                                &sub,
                                Along::OFF,
                                errs,
                                found,
                            );
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(deps) = kws.obj(Kw::Dependencies) {
            for (k, d) in deps {
                if let Some(d) = d.as_object() {
                    value_walker.walk_into(
                        d,
                        &mut path.push().child("dependencies").key(k),
                        st,
                        Along::OFF,
                        errs,
                        found,
                    );
                }
            }
        }
        if let Some(Value::Bool(false)) = kws.get(Kw::PreserveUnknownFields) {
            errs.push(FieldError::invalid(
                path.child("x-kubernetes-preserve-unknown-fields"),
                Value::Bool(false),
                "must be true or undefined",
            ));
        }
        self.map_and_list_types(&kws, path, errs);
        if !kws.arr(Kw::Validations).is_empty() {
            let rule_errs = cel_rules::rule_field_errors(s, path, self.structural_ok);
            errs.extend(rule_errs);
            if errs.len() == errs_before && self.cel_here {
                found.cel.push(CelSite {
                    node: s,
                    path: path.clone(),
                    uncorrelatable: st.uncorrelatable.clone(),
                    is_root,
                    cardinality: st.cardinality,
                });
            }
        }
    }

    /// [`Walker::walk`] of a child that is not a resource root, adding its
    /// errors to the parent's.
    fn walk_into<'s>(
        &self,
        s: &'s Obj,
        path: &mut FieldPath,
        st: &State,
        along: Along,
        errs: &mut Vec<FieldError>,
        found: &mut Found<'s>,
    ) {
        self.walk(s, path, st, false, along, errs, found);
    }

    /// `specStandardValidatorV3.validate`.
    fn standard(&self, kws: &Keywords, path: &FieldPath, st: &State, errs: &mut Vec<FieldError>) {
        let ty = kws.ty();
        if self.opts.require_valid_property_type && !ty.is_empty() && !OPENAPI_TYPES.contains(&ty) {
            errs.push(FieldError::not_supported(
                path.child("type"),
                Value::from(ty),
                OPENAPI_TYPES,
            ));
        }
        if kws.has(Kw::Default) && !st.allow_defaults {
            let mut detail = "must not be set".to_string();
            if let Some(r) = &st.disallow_reason {
                detail.push(' ');
                detail.push_str(r);
            }
            errs.push(FieldError::forbidden(path.child("default"), detail));
        }
        let unsupported = [
            (Kw::Id, "id", "id is not supported"),
            (
                Kw::AdditionalItems,
                "additionalItems",
                "additionalItems is not supported",
            ),
            (
                Kw::PatternProperties,
                "patternProperties",
                "patternProperties is not supported",
            ),
            (
                Kw::Definitions,
                "definitions",
                "definitions is not supported",
            ),
            (
                Kw::Dependencies,
                "dependencies",
                "dependencies is not supported",
            ),
            (Kw::Ref, "$ref", "$ref is not supported"),
        ];
        for (kw, key, detail) in unsupported {
            let present = match kw {
                Kw::AdditionalItems | Kw::Ref => kws.has(kw),
                _ => kws.get(kw).is_some_and(|v| !is_zero(v)),
            };
            if present {
                errs.push(
                    FieldError::forbidden(path.child(key), detail).with_fix(
                        "CRD schemas must be self-contained: inline the referenced schema",
                    ),
                );
            }
        }
        if ty == "null" {
            errs.push(FieldError::forbidden(
                path.child("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if kws
            .get(Kw::Items)
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            errs.push(FieldError::forbidden(
                path.child("items"),
                "items must be a schema object and not an array",
            ));
        }
        if st.inside_resource_meta && kws.bool(Kw::EmbeddedResource) {
            errs.push(FieldError::forbidden(
                path.child("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
    }

    fn map_and_list_types(&self, kws: &Keywords, path: &FieldPath, errs: &mut Vec<FieldError>) {
        let ty = kws.ty();
        let map_type = kws.opt_str(Kw::MapType);
        let list_type = kws.opt_str(Kw::ListType);
        if map_type.is_some() && ty != "object" {
            errs.push(type_must_be(ty, "object", "x-kubernetes-map-type", path));
        }
        if let Some(m) = map_type
            && m != "atomic"
            && m != "granular"
        {
            errs.push(FieldError::not_supported(
                path.child("x-kubernetes-map-type"),
                Value::from(m),
                &["atomic", "granular"],
            ));
        }
        if list_type.is_some() && ty != "array" {
            errs.push(type_must_be(ty, "array", "x-kubernetes-list-type", path));
        } else if self.opts.require_atomic_set_type
            && list_type == Some("set")
            && let Some(is) = kws.items()
        {
            match type_of(is) {
                "array" => {
                    if let Some(lt) = get(is, "x-kubernetes-list-type").and_then(Value::as_str)
                        && lt != "atomic"
                    {
                        errs.push(FieldError::invalid(
                            path.child("items").child("x-kubernetes-list-type"),
                            Value::from(lt),
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                }
                "object"
                    if get(is, "x-kubernetes-map-type").and_then(Value::as_str)
                        != Some("atomic") =>
                {
                    errs.push(
                        FieldError::invalid(
                            path.child("items").child("x-kubernetes-map-type"),
                            Value::Null,
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        )
                        .with_fix("set x-kubernetes-map-type: atomic on the items, or use x-kubernetes-list-type: map with keys"),
                    );
                }
                _ => {}
            }
        }
        if let Some(lt) = list_type
            && !matches!(lt, "atomic" | "set" | "map")
        {
            errs.push(FieldError::not_supported(
                path.child("x-kubernetes-list-type"),
                Value::from(lt),
                &["atomic", "set", "map"],
            ));
        }
        let keys = kws.strings(Kw::ListMapKeys);
        if !keys.is_empty() {
            match list_type {
                None => errs.push(FieldError::required(
                    path.child("x-kubernetes-list-type"),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )),
                Some(lt) if lt != "map" => errs.push(FieldError::invalid(
                    path.child("x-kubernetes-list-type"),
                    Value::from(lt),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )),
                _ => {}
            }
        }
        if list_type == Some("map") {
            if keys.is_empty() {
                errs.push(FieldError::required(
                    path.child("x-kubernetes-list-map-keys"),
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            match kws.get(Kw::Items) {
                None | Some(Value::Null) => errs.push(FieldError::required(
                    path.child("items"),
                    "must have a schema if x-kubernetes-list-type is map",
                )),
                Some(Value::Array(a)) => errs.push(FieldError::invalid(
                    path.child("items"),
                    Value::Array(a.clone()),
                    "must only have a single schema if x-kubernetes-list-type is map",
                )),
                _ => {}
            }
            if let Some(is) = kws.items() {
                if type_of(is) != "object" {
                    errs.push(FieldError::invalid(
                        path.child("items").child("type"),
                        Value::from(type_of(is)),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let mut seen = std::collections::HashSet::new();
                    for k in &keys {
                        match property(is, k) {
                            Some(p) => {
                                if matches!(type_of(p), "array" | "object") {
                                    errs.push(FieldError::invalid(
                                        path.child("items").child("properties").key(k).child("type"),
                                        Value::from(type_of(is)),
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => errs.push(FieldError::invalid(
                                path.child("x-kubernetes-list-map-keys"),
                                Value::from(keys.clone()),
                                "entries must all be names of item properties",
                            )),
                        }
                        if !seen.insert(*k) {
                            errs.push(FieldError::invalid(
                                path.child("x-kubernetes-list-map-keys"),
                                Value::from(keys.clone()),
                                "must not contain duplicate entries",
                            ));
                        }
                    }
                }
            }
        }
        if self.opts.require_map_list_keys_map_set {
            errs.extend(map_list_keys_map_set(kws, path));
        }
    }
}

/// `validateMapListKeysMapSet`: set and map list items are not nullable;
/// map keys are required or defaulted, and not nullable.
pub fn map_list_keys_map_set(kws: &Keywords, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(is) = kws.items() else { return errs };
    let Some(lt) = kws.opt_str(Kw::ListType) else {
        return errs;
    };
    if lt != "set" && lt != "map" {
        return errs;
    }
    if bool_of(is, "nullable") {
        errs.push(FieldError::forbidden(
            path.child("items").child("nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required = strings_of(is, "required");
        for k in kws.strings(Kw::ListMapKeys) {
            let Some(p) = property(is, k) else { continue };
            if !required.contains(&k) && !has(p, "default") {
                errs.push(
                    FieldError::required(
                        path.child("items").child("properties").key(k).child("default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    )
                    .with_fix("add the key to the items' required list, or give it a default"),
                );
            }
            if bool_of(p, "nullable") {
                errs.push(FieldError::forbidden(
                    path.child("items")
                        .child("properties")
                        .key(k)
                        .child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}

/// Whether any node of the schema matches `pred` (`SchemaHas`). One pass
/// over each node's keys finds its subschemas.
pub fn schema_has(s: &Obj, pred: &dyn Fn(&Obj) -> bool) -> bool {
    if pred(s) {
        return true;
    }
    let any = |v: &Value| v.as_object().is_some_and(|o| schema_has(o, pred));
    s.iter().any(|(key, v)| match key.as_str() {
        "items" => match v {
            Value::Array(a) => a.iter().any(any),
            _ => any(v),
        },
        "allOf" | "anyOf" | "oneOf" => v.as_array().is_some_and(|a| a.iter().any(any)),
        "not" | "additionalProperties" | "additionalItems" => any(v),
        "properties" | "patternProperties" | "definitions" | "dependencies" => {
            v.as_object().is_some_and(|m| m.values().any(any))
        }
        _ => false,
    })
}
