//! `spec`, in the order of `validateCustomResourceDefinitionSpec`: group and
//! scope, schemas present, versions (names, storage, deprecation warnings,
//! per-version schema, subresources, columns, selectable fields), names,
//! the shared (hoisted) schema, subresources, columns and selectable fields,
//! and conversion.
//!
//! The server validates its internal form of the CRD, into which a v1 CRD
//! is converted first: when every version carries the same schema (or the
//! same subresources, columns, selectable fields), the conversion moves it
//! to the top level. A single-version CRD's schema therefore reports at
//! `spec.validation.openAPIV3Schema`, a multi-version CRD with differing
//! schemas at `spec.versions[i].schema.openAPIV3Schema`; [`Internal`] does
//! that move so that our paths are the server's.

use std::collections::HashSet;

use serde_json::Value;

use super::SchemaOptions;
use super::columns::{validate_column, validate_selectable_fields, validate_subresources};
use super::conversion::validate_conversion;
use super::field::{FieldError, FieldPath};
use super::names;
use super::schema_rules::{new_structural_error, validate_validation};
use super::{KubeVersion, OldCrdFacts};
use crate::openapi::props::{Obj, arr_of, bool_of, str_of};

/// The first minor that lets an update keep more selectable fields than
/// the maximum when they are unchanged.
const TOO_MANY_SELECTABLE_KEPT_SINCE: u32 = 35;

/// The per-version parts, hoisted where every version agrees.
struct Internal<'a> {
    versions: Vec<&'a Obj>,
    validation: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: &'a [Value],
    selectable: &'a [Value],
    hoisted_schema: bool,
    hoisted_subresources: bool,
    hoisted_columns: bool,
    hoisted_selectable: bool,
}

fn non_null<'a>(v: &'a Obj, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// Whether every version has the same `key` (Go's semantic equality: for
/// lists, missing and empty are the same; `1` and `1.0` are the same
/// number).
fn all_same<'a>(versions: &[&'a Obj], key: &str, list: bool) -> bool {
    let get = |v: &'a Obj| -> Option<&'a Value> {
        non_null(v, key).filter(|x| !list || x.as_array().is_some_and(|a| !a.is_empty()))
    };
    !versions.is_empty()
        && versions.windows(2).all(|w| match (get(w[0]), get(w[1])) {
            (Some(a), Some(b)) => crate::json::json_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        })
}

impl<'a> Internal<'a> {
    fn new(spec: &'a Obj) -> Internal<'a> {
        let versions: Vec<&Obj> = arr_of(spec, "versions")
            .iter()
            .filter_map(Value::as_object)
            .collect();
        let hoisted_schema = all_same(&versions, "schema", false);
        let hoisted_subresources = all_same(&versions, "subresources", false);
        let hoisted_columns = all_same(&versions, "additionalPrinterColumns", true);
        let hoisted_selectable = all_same(&versions, "selectableFields", true);
        let first = versions.first().copied();
        Internal {
            validation: first
                .filter(|_| hoisted_schema)
                .and_then(|v| non_null(v, "schema")),
            subresources: first
                .filter(|_| hoisted_subresources)
                .and_then(|v| non_null(v, "subresources")),
            columns: first
                .filter(|_| hoisted_columns)
                .map_or(&[][..], |v| arr_of(v, "additionalPrinterColumns")),
            selectable: first
                .filter(|_| hoisted_selectable)
                .map_or(&[][..], |v| arr_of(v, "selectableFields")),
            versions,
            hoisted_schema,
            hoisted_subresources,
            hoisted_columns,
            hoisted_selectable,
        }
    }

    fn version_schema(&self, v: &'a Obj) -> Option<&'a Value> {
        if self.hoisted_schema {
            None
        } else {
            non_null(v, "schema")
        }
    }

    fn version_subresources(&self, v: &'a Obj) -> Option<&'a Value> {
        if self.hoisted_subresources {
            None
        } else {
            non_null(v, "subresources")
        }
    }

    /// `getSubresourcesForVersion`.
    fn subresources_for(&self, v: &'a Obj) -> Option<&'a Value> {
        if self.hoisted_subresources {
            self.subresources
        } else {
            non_null(v, "subresources")
        }
    }

    fn any_status(&self) -> bool {
        has_status(self.subresources)
            || self
                .versions
                .iter()
                .any(|v| has_status(self.version_subresources(v)))
    }
}

fn has_status(sub: Option<&Value>) -> bool {
    sub.and_then(|s| s.get("status"))
        .is_some_and(|s| !s.is_null())
}

/// Whether the schema wrapper holds an `openAPIV3Schema`.
fn has_openapi_schema(wrapper: Option<&Value>) -> bool {
    wrapper
        .and_then(|w| w.get("openAPIV3Schema"))
        .is_some_and(|s| !s.is_null())
}

/// The spec rules. `old` carries what the stored CRD already breaks, which
/// the server does not start enforcing on an update.
pub fn validate_spec(spec: &Obj, old: Option<&OldCrdFacts>, kube: KubeVersion) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = FieldPath::new("spec");
    let group = str_of(spec, "group");
    if group.is_empty() {
        errs.push(FieldError::required(path.child("group"), ""));
    } else {
        let msgs = names::dns1123_subdomain(group);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                path.child("group"),
                Value::from(group),
                msgs.join(","),
            ));
        } else if !group.contains('.') {
            errs.push(
                FieldError::invalid(
                    path.child("group"),
                    Value::from(group),
                    "should be a domain with at least one dot",
                )
                .with_fix("use a domain you own, e.g. example.com"),
            );
        }
    }
    match str_of(spec, "scope") {
        "" => errs.push(FieldError::required(path.child("scope"), "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            path.child("scope"),
            Value::from(other),
            &["Cluster", "Namespaced"],
        )),
    }
    let preserve = bool_of(spec, "preserveUnknownFields");
    let none = OldCrdFacts::default();
    let facts = old.unwrap_or(&none);
    let opts = SchemaOptions {
        // Pruning (preserveUnknownFields false, always so in v1) requires
        // structural schemas whatever the stored CRD had.
        require_structural: !preserve || !facts.non_structural,
        require_pruned_defaults: !facts.unpruned_defaults,
        require_atomic_set_type: !facts.non_atomic_set,
        require_map_list_keys_map_set: !facts.invalid_map_list_keys,
        require_valid_property_type: !facts.invalid_types,
        kube,
        suppress_per_expression_cost: false,
        stored_expressions: old.map(|f| &f.expressions),
    };
    let opts_for = |version: &str, schema: &Value| SchemaOptions {
        suppress_per_expression_cost: facts.schema_unchanged(version, schema),
        ..opts
    };
    let internal = Internal::new(spec);
    let stored = facts.spec.map(Internal::new);
    // `findTooManySelectableFieldsAllowed` (1.35): a stored list of more
    // than the maximum may stay as long as it is unchanged, compared in
    // the internal form (hoisted when every version agrees).
    let keeps_too_many = |new: &[Value], old: &[Value]| {
        kube.minor >= TOO_MANY_SELECTABLE_KEPT_SINCE
            && old.len() > super::columns::MAX_SELECTABLE_FIELDS
            && new == old
    };
    let stored_selectable = |name: &str| -> &[Value] {
        stored
            .as_ref()
            .filter(|o| !o.hoisted_selectable)
            .and_then(|o| o.versions.iter().find(|v| str_of(v, "name") == name))
            .map_or(&[][..], |v| arr_of(v, "selectableFields"))
    };
    let require_openapi_schema = !facts.missing_schemas;
    if !has_openapi_schema(internal.validation) {
        for (i, v) in internal.versions.iter().enumerate() {
            let missing = !has_openapi_schema(non_null(v, "schema"));
            let schema_path = path
                .child("versions")
                .index(i)
                .child("schema")
                .child("openAPIV3Schema");
            if require_openapi_schema && missing {
                errs.push(
                    FieldError::required(schema_path, "")
                        .with_fix("every version needs schema.openAPIV3Schema (at least type: object with x-kubernetes-preserve-unknown-fields: true)"),
                );
            } else if !require_openapi_schema && !preserve && bool_of(v, "served") && missing {
                errs.push(FieldError::required(
                    schema_path,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    // Only a CRD with spec.preserveUnknownFields (rare since v1) needs the
    // walk over every schema node that looks for a default.
    if preserve && super::spec_has(spec, &|s| s.get("default").is_some_and(|d| !d.is_null())) {
        errs.push(FieldError::invalid(
            path.child("preserveUnknownFields"),
            Value::Bool(true),
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage = 0;
    let mut seen = HashSet::new();
    let mut unique = true;
    for (i, v) in internal.versions.iter().enumerate() {
        let vpath = path.child("versions").index(i);
        let name = str_of(v, "name");
        if bool_of(v, "storage") {
            storage += 1;
        }
        if !seen.insert(name) {
            unique = false;
        }
        let msgs = names::dns1035_label(name);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                vpath.child("name"),
                Value::from(name),
                msgs.join(","),
            ));
        }
        for msg in deprecation_warning_errors(v) {
            errs.push(FieldError::invalid(
                vpath.child("deprecationWarning"),
                v.get("deprecationWarning").cloned().unwrap_or(Value::Null),
                msg,
            ));
        }
        let status = has_status(internal.subresources_for(v));
        if let Some(schema) = internal.version_schema(v) {
            errs.extend(validate_validation(
                schema,
                status,
                &opts_for(name, schema),
                &vpath.child("schema"),
            ));
        }
        if let Some(sub) = internal.version_subresources(v).and_then(Value::as_object) {
            errs.extend(validate_subresources(sub, &vpath.child("subresources")));
        }
        if !internal.hoisted_columns {
            for (j, c) in arr_of(v, "additionalPrinterColumns").iter().enumerate() {
                if let Some(c) = c.as_object() {
                    errs.extend(validate_column(
                        c,
                        &vpath.child("additionalPrinterColumns").index(j),
                    ));
                }
            }
        }
        let selectable = arr_of(v, "selectableFields");
        if !internal.hoisted_selectable && !selectable.is_empty() && kube.has_selectable_fields() {
            match internal.version_schema(v).and_then(|w| w.get("openAPIV3Schema")).and_then(Value::as_object) {
                None => errs.push(FieldError::invalid(
                    vpath.child("selectableFields"),
                    Value::from(""),
                    "may only be set when `version.schema.openAPIV3Schema` is not included",
                ).with_fix("the versions' schemas are identical, so the server keeps one shared schema: give every version the same selectableFields")),
                Some(schema) => {
                    let structural = new_structural_error(schema);
                    if let Some(e) = &structural {
                        errs.push(FieldError::invalid(vpath.child("schema.openAPIV3Schema"), Value::from(""), e.clone()));
                    }
                    errs.extend(validate_selectable_fields(
                        selectable,
                        structural.is_none().then_some(schema),
                        &vpath.child("selectableFields"),
                        keeps_too_many(selectable, stored_selectable(str_of(v, "name"))),
                    ));
                }
            }
        }
    }
    if !unique {
        errs.push(
            FieldError::invalid(
                path.child("versions"),
                Value::from("..."),
                "must contain unique version names",
            )
            .with_fix("list each version once"),
        );
    }
    if storage != 1 {
        errs.push(
            FieldError::invalid(
                path.child("versions"),
                Value::from("..."),
                "must have exactly one version marked as storage version",
            )
            .with_fix(
                "set storage: true on exactly one version (the one new objects are written in)",
            ),
        );
    }

    let names_obj = spec.get("names").and_then(Value::as_object);
    let empty = Obj::new();
    let n = names_obj.unwrap_or(&empty);
    let kind = str_of(n, "kind");
    // The server's defaults: singular = lower-case kind, listKind = kind + "List".
    let singular = match str_of(n, "singular") {
        "" => kind.to_lowercase(),
        s => s.to_string(),
    };
    let list_kind = match str_of(n, "listKind") {
        "" if !kind.is_empty() => format!("{kind}List"),
        s => s.to_string(),
    };
    let npath = path.child("names");
    for (field, value) in [
        ("plural", str_of(n, "plural")),
        ("singular", singular.as_str()),
        ("kind", kind),
        ("listKind", list_kind.as_str()),
    ] {
        if value.is_empty() {
            errs.push(FieldError::required(npath.child(field), ""));
        }
    }
    errs.extend(names_errors(n, &singular, &list_kind, &npath));

    if let Some(schema) = internal.validation {
        let first = internal.versions.first().map_or("", |v| str_of(v, "name"));
        errs.extend(validate_validation(
            schema,
            internal.any_status(),
            &opts_for(first, schema),
            &path.child("validation"),
        ));
    }
    if let Some(sub) = internal.subresources.and_then(Value::as_object) {
        errs.extend(validate_subresources(sub, &path.child("subresources")));
    }
    for (i, c) in internal.columns.iter().enumerate() {
        if let Some(c) = c.as_object() {
            errs.extend(validate_column(
                c,
                &path.child("additionalPrinterColumns").index(i),
            ));
        }
    }
    if !internal.selectable.is_empty() && kube.has_selectable_fields() {
        match internal.validation {
            None => errs.push(FieldError::invalid(
                path.child("selectableFields"),
                Value::from(""),
                "may only be set when validations.schema is included",
            )),
            Some(wrapper) => {
                let schema = wrapper.get("openAPIV3Schema").and_then(Value::as_object);
                let structural = schema.and_then(new_structural_error);
                if let Some(e) = &structural {
                    errs.push(FieldError::invalid(
                        path.child("schema.openAPIV3Schema"),
                        Value::from(""),
                        e.clone(),
                    ));
                }
                errs.extend(validate_selectable_fields(
                    internal.selectable,
                    schema.filter(|_| structural.is_none()),
                    &path.child("selectableFields"),
                    keeps_too_many(
                        internal.selectable,
                        stored.as_ref().map_or(&[][..], |o| o.selectable),
                    ),
                ));
            }
        }
    }
    errs.extend(validate_conversion(
        spec.get("conversion"),
        preserve,
        facts.recognized_review_versions,
    ));
    errs
}

/// `validateDeprecationWarning`.
fn deprecation_warning_errors(v: &Obj) -> Vec<String> {
    let deprecated = bool_of(v, "deprecated");
    let Some(w) = v.get("deprecationWarning").and_then(Value::as_str) else {
        return Vec::new();
    };
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut out = Vec::new();
    if w.len() > 256 {
        out.push("must be <= 256 characters long".into());
    }
    if w.is_empty() {
        out.push("must not be an empty string".into());
    }
    for (i, c) in w.char_indices() {
        if c.is_control() {
            out.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
            break;
        }
    }
    out
}

/// `ValidateCustomResourceDefinitionNames`.
fn names_errors(n: &Obj, singular: &str, list_kind: &str, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let label = |field: &str, value: &str, lower: bool, errs: &mut Vec<FieldError>| {
        if value.is_empty() {
            return;
        }
        let checked = if lower {
            value.to_lowercase()
        } else {
            value.to_string()
        };
        let msgs = names::dns1035_label(&checked);
        if !msgs.is_empty() {
            let detail = if lower {
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    msgs.join(",")
                )
            } else {
                msgs.join(",")
            };
            errs.push(FieldError::invalid(
                path.child(field),
                Value::from(value),
                detail,
            ));
        }
    };
    label("plural", str_of(n, "plural"), false, &mut errs);
    label("singular", singular, false, &mut errs);
    let kind = str_of(n, "kind");
    label("kind", kind, true, &mut errs);
    label("listKind", list_kind, true, &mut errs);
    for (i, s) in arr_of(n, "shortNames").iter().enumerate() {
        let s = s.as_str().unwrap_or("");
        let msgs = names::dns1035_label(s);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                path.child("shortNames").index(i),
                Value::from(s),
                msgs.join(","),
            ));
        }
    }
    if !kind.is_empty() && kind == list_kind {
        errs.push(FieldError::invalid(
            path.child("listKind"),
            Value::from(list_kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in arr_of(n, "categories").iter().enumerate() {
        let c = c.as_str().unwrap_or("");
        let msgs = names::dns1035_label(c);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                path.child("categories").index(i),
                Value::from(c),
                msgs.join(","),
            ));
        }
    }
    errs
}
