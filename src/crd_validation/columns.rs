//! Printer columns, selectable fields and the scale subresource's paths:
//! the parts of a CRD that point into its schema with JSONPaths.

use std::collections::HashSet;

use serde_json::Value;

use super::cel_rules::{Step, valid_field_path};
use super::field::{FieldError, FieldPath};
use crate::openapi::props::{Obj, str_of};

const COLUMN_TYPES: &[&str] = &["boolean", "date", "integer", "number", "string"];
const COLUMN_FORMATS: &[&str] = &[
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// The server refuses more distinct selectable fields than this per version.
pub(super) const MAX_SELECTABLE_FIELDS: usize = 8;

/// `validateSimpleJSONPath`.
fn simple_json_path(s: &str, path: &FieldPath) -> Option<FieldError> {
    if s.is_empty() {
        Some(FieldError::invalid(
            path.clone(),
            Value::from(s),
            "must not be empty",
        ))
    } else if !s.starts_with('.') {
        Some(
            FieldError::invalid(
                path.clone(),
                Value::from(s),
                "must be a simple json path starting with .",
            )
            .with_fix("write the path in dot notation from the object root, e.g. .spec.replicas"),
        )
    } else {
        None
    }
}

/// `ValidateCustomResourceColumnDefinition`.
pub fn validate_column(col: &Obj, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if str_of(col, "name").is_empty() {
        errs.push(FieldError::required(path.child("name"), ""));
    }
    let ty = str_of(col, "type");
    let types = format!("must be one of {}", COLUMN_TYPES.join(","));
    if ty.is_empty() {
        errs.push(FieldError::required(path.child("type"), types));
    } else if !COLUMN_TYPES.contains(&ty) {
        errs.push(FieldError::invalid(
            path.child("type"),
            Value::from(ty),
            types,
        ));
    }
    let format = str_of(col, "format");
    if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
        errs.push(FieldError::invalid(
            path.child("format"),
            Value::from(format),
            format!("must be one of {}", COLUMN_FORMATS.join(",")),
        ));
    }
    let json_path = str_of(col, "jsonPath");
    if json_path.is_empty() {
        errs.push(FieldError::required(path.child("JSONPath"), ""));
    } else if let Some(e) = simple_json_path(json_path, &path.child("JSONPath")) {
        errs.push(e);
    }
    errs
}

/// `ValidateCustomResourceDefinitionSubresources`: the scale paths.
pub fn validate_subresources(sub: &Obj, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = sub.get("scale").and_then(Value::as_object) else {
        return errs;
    };
    for (key, prefix, where_) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let p = path.child(&format!("scale.{key}"));
        let v = str_of(scale, key);
        if v.is_empty() {
            errs.push(FieldError::required(p, ""));
        } else if let Some(e) = simple_json_path(v, &p) {
            errs.push(e);
        } else if !v.starts_with(prefix) {
            errs.push(FieldError::invalid(p, Value::from(v), where_));
        }
    }
    let selector = str_of(scale, "labelSelectorPath");
    if !selector.is_empty() {
        let p = path.child("scale.labelSelectorPath");
        if let Some(e) = simple_json_path(selector, &p) {
            errs.push(e);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(FieldError::invalid(
                p,
                Value::from(selector),
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

/// `ValidateCustomResourceSelectableFields`. `schema` is `None` when the
/// schema is not structural: a 1.34 server then fails with an internal
/// error (500) instead of an answer; we say why.
pub fn validate_selectable_fields(
    fields: &[Value],
    schema: Option<&Obj>,
    path: &FieldPath,
    keeps_too_many: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut unique: HashSet<String> = HashSet::new();
    for (i, f) in fields.iter().enumerate() {
        let p = path.index(i).child("jsonPath");
        let json_path = f.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        if json_path.is_empty() {
            errs.push(FieldError::required(p, ""));
            continue;
        }
        let Some(schema) = schema else {
            errs.push(
                FieldError::internal(
                    p,
                    "the schema is not structural, so selectable fields cannot be resolved (a 1.34 API server fails the request here: it panics and drops the connection instead of answering)",
                )
                .with_fix("make the schema structural first (see the other findings)"),
            );
            continue;
        };
        let (steps, found) = match valid_field_path(json_path, schema, false) {
            Ok(r) => r,
            Err(e) => {
                errs.push(
                    FieldError::invalid(
                        p,
                        Value::from(json_path),
                        format!("is an invalid path: {e}"),
                    )
                    .with_fix("point at a declared field in dot notation, e.g. .spec.color"),
                );
                continue;
            }
        };
        let rendered: String = steps
            .iter()
            .map(|s| match s {
                Step::Field(n) => format!(".{n}"),
                Step::Key(k) => format!("[{k}]"),
            })
            .collect();
        if matches!(steps.first(), Some(Step::Field(n)) if n == "metadata") {
            errs.push(FieldError::invalid(
                p.clone(),
                Value::from(json_path),
                "must not point to fields in metadata",
            ));
        }
        let allowed =
            found.is_some_and(|s| matches!(str_of(s, "type"), "string" | "boolean" | "integer"));
        if !allowed {
            errs.push(FieldError::invalid(
                p.clone(),
                Value::from(json_path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(rendered) {
            errs.push(FieldError::duplicate(p, Value::from(json_path)));
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS && !keeps_too_many {
        errs.push(FieldError::too_many(
            path.clone(),
            unique.len(),
            MAX_SELECTABLE_FIELDS,
        ));
    }
    errs
}
