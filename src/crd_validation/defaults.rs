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
use crate::validate::node::CompiledNode;
use crate::validate::{PrunedKind, Validator, validate_at};

/// Every default of the structural schema `root`, checked.
pub fn validate_defaults(root: &Obj, path: &FieldPath, opts: &SchemaOptions) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(root, None, &mut path.clone(), true, false, opts, &mut errs);
    errs
}

/// `compiled` is `s` as a default above it already compiled it (with its
/// whole subtree): nested defaults reuse that instead of compiling their
/// subtree, and its CEL rules, once more per level.
fn walk(
    s: &Obj,
    compiled: Option<&CompiledNode>,
    path: &mut FieldPath,
    resource_root: bool,
    inside_meta: bool,
    opts: &SchemaOptions,
    errs: &mut Vec<FieldError>,
) {
    let kws = Keywords::of(s);
    let embedded = resource_root || kws.bool(Kw::EmbeddedResource);
    let inside_meta = inside_meta && !embedded;
    let default = kws.get(Kw::Default).filter(|d| !d.is_null());
    // The node alone, compiled like a version schema (its own default does
    // not matter for a value that is present), unless a default above
    // already compiled it. A schema the validator cannot compile has its own
    // error elsewhere (a pattern that does not compile).
    let own = (default.is_some() && compiled.is_none())
        .then(|| Schema::from_object(s).ok())
        .flatten()
        .and_then(|node| Validator::new(&node, opts.kube.minor).ok());
    let compiled = compiled.or(own.as_ref().map(Validator::root));
    if let (Some(default), Some(node)) = (default, compiled) {
        check_default(node, default, path, inside_meta, opts, errs);
    }
    if let Some(i) = kws.items() {
        walk(
            i,
            compiled.and_then(|c| c.items.as_deref()),
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
            compiled.and_then(|c| c.properties.get(name.as_str())),
            &mut path.push().child("properties").key(name),
            false,
            sub_meta,
            opts,
            errs,
        );
    }
}

fn check_default(
    node: &CompiledNode,
    default: &Value,
    path: &FieldPath,
    inside_meta: bool,
    opts: &SchemaOptions,
    errs: &mut Vec<FieldError>,
) {
    let dpath = path.child("default");
    let outcome = validate_at(node, default);
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
