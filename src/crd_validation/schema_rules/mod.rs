//! The API server's rules for one `openAPIV3Schema`, in the server's order:
//! the keyword types Go can decode, the OpenAPI restrictions of
//! `ValidateCustomResourceDefinitionOpenAPISchema` (unsupported keywords,
//! list and map types, `x-kubernetes-validations` fields, CEL), the
//! structural-schema invariants and completeness of
//! `apiserver/schema.ValidateStructural`, and the defaults (see
//! [`super::defaults`]). Paths are the server's field paths.

mod decode;
mod new_structural;
mod openapi;
mod structural;

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

use decode::*;
pub use new_structural::new_structural_error;
pub use openapi::map_list_keys_map_set;
use openapi::*;
pub use structural::structural_then_defaults;
use structural::*;

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

/// over each node's keys finds its subschemas.
/// Whether any node of the schema matches `pred` (`SchemaHas`). One pass
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
