//! `default` values, as `structuraldefaulting.ValidateDefaults` checks them:
//! each default must survive pruning unchanged (no unknown fields) and must
//! pass the node's own validation, CEL rules included. Our object validator
//! ([`crate::validate`]) does the validating, so defaults are judged by the
//! same code that judges stored objects.
//!
//! Like the server, the walk follows `properties` and `items` only (defaults
//! under `additionalProperties` are not validated), and treats the root as
//! an embedded resource: `apiVersion`, `kind` and `metadata` are "inside
//! metadata", where defaults are validated but never pruned.

use serde_json::Value;

use super::SchemaOptions;
use super::field::{FieldError, FieldPath};
use super::json::Obj;
use super::keywords::{Keywords, Kw};
use crate::schema::Schema;
use crate::validate::{PrunedKind, Validator};

/// Every default of the structural schema `root`, checked.
pub fn validate_defaults(root: &Obj, path: &FieldPath, opts: &SchemaOptions) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(root, &mut path.clone(), true, false, opts, &mut errs);
    errs
}

fn walk(
    s: &Obj,
    path: &mut FieldPath,
    resource_root: bool,
    inside_meta: bool,
    opts: &SchemaOptions,
    errs: &mut Vec<FieldError>,
) {
    let kws = Keywords::of(s);
    let embedded = resource_root || kws.bool(Kw::EmbeddedResource);
    let inside_meta = inside_meta && !embedded;
    if let Some(default) = kws.get(Kw::Default).filter(|d| !d.is_null()) {
        check_default(s, default, path, inside_meta, opts, errs);
    }
    if let Some(i) = kws.items() {
        walk(
            i,
            &mut path.push().child("items"),
            false,
            inside_meta,
            opts,
            errs,
        );
    }
    for (name, p) in kws.properties() {
        let sub_meta = inside_meta
            || (embedded && matches!(name.as_str(), "metadata" | "apiVersion" | "kind"));
        walk(
            p,
            &mut path.push().child("properties").key(name),
            false,
            sub_meta,
            opts,
            errs,
        );
    }
}

fn check_default(
    s: &Obj,
    default: &Value,
    path: &FieldPath,
    inside_meta: bool,
    opts: &SchemaOptions,
    errs: &mut Vec<FieldError>,
) {
    let dpath = path.child("default");
    // The node alone, compiled like a version schema (defaults sit mostly on
    // leaves, so this stays small); its own default does not matter for a
    // value that is present. A schema the validator cannot compile has its
    // own error elsewhere (a pattern that does not compile).
    let Ok(node) = Schema::from_object(s) else {
        return;
    };
    let Ok(validator) = Validator::new(&node, opts.kube.minor) else {
        return;
    };
    let outcome = validator.validate(default);
    if !inside_meta
        && opts.require_pruned_defaults
        && outcome.pruned.iter().any(|p| p.kind == PrunedKind::Unknown)
    {
        errs.push(
            FieldError::invalid(dpath.clone(), default.clone(), "must not have unknown fields")
                .with_fix("remove the fields the schema does not declare from the default (they would be pruned)"),
        );
    }
    if let Some(v) = outcome.violations.first() {
        let at = if v.path.is_empty() {
            dpath.to_string()
        } else {
            format!("{dpath}.{}", v.path)
        };
        errs.push(
            FieldError::invalid(dpath, default.clone(), format!("{at}: {}", v.message))
                .with_fix("make the default satisfy the node's own validations"),
        );
    }
}
