//! `default` values, as `structuraldefaulting.ValidateDefaults` checks them:
//! each default must survive pruning unchanged (no unknown fields) and must
//! pass the node's own validation, CEL rules included. Our object validator
//! ([`crate::object_validation`]) does the validating, so defaults are judged by the
//! same code that judges stored objects.
//!
//! Like the server, only defaults reached through `properties` and `items`
//! are checked (those under `additionalProperties` are not), and the root
//! is an embedded resource: `apiVersion`, `kind` and `metadata` are "inside
//! metadata", where defaults are validated but never pruned. The schema's
//! single walk (`schema_rules`) finds them; this module checks them.

use serde_json::Value;

use super::SchemaOptions;
use super::field::{FieldError, FieldPath};
use crate::object_validation::node::CompiledNode;
use crate::object_validation::scalar;
use crate::object_validation::{PrunedKind, Validator, validate_at};
use crate::openapi::props::Obj;
use crate::schema::Schema;

/// One step on the defaults walk's path from the root: into `items`, or
/// into the property of that name (with its place among the properties,
/// which orders the errors as the server's walk does).
#[derive(Clone, Copy)]
pub(super) enum Step<'s> {
    Items,
    Property(&'s str, usize),
}

impl Step<'_> {
    /// The walk's order: a node's `items` before its properties, the
    /// properties as written.
    fn rank(self) -> usize {
        match self {
            Step::Items => 0,
            Step::Property(_, i) => i + 1,
        }
    }
}

/// A node holding a `default`, found by `schema_rules`' walk over the
/// whole schema, on the path the server's defaults walk follows.
pub(super) struct Site<'s> {
    pub node: &'s Obj,
    pub default: &'s Value,
    pub path: FieldPath,
    pub inside_meta: bool,
    /// From the root to `node`.
    pub steps: Vec<Step<'s>>,
}

/// The defaults of `sites` (parents before their descendants, as a walk
/// from the root finds them), checked: a default's node is compiled once
/// (with its subtree), and the defaults below it are checked against that
/// compiled subtree rather than compiling theirs again. The errors come in
/// the order of a walk that takes a node's `items` before its properties.
pub(super) fn validate_sites(sites: &[Site], opts: &SchemaOptions) -> Vec<FieldError> {
    // The sites form a tree: each hangs under the nearest site whose steps
    // begin its own.
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); sites.len()];
    let mut roots = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for (i, site) in sites.iter().enumerate() {
        while let Some(&top) = open.last() {
            if is_below(&sites[top].steps, &site.steps) {
                break;
            }
            open.pop();
        }
        match open.last() {
            Some(&parent) => children[parent].push(i),
            None => roots.push(i),
        }
        open.push(i);
    }
    let mut errs: Vec<(usize, FieldError)> = Vec::new();
    for r in roots {
        check_site(sites, &children, r, None, opts, &mut errs);
    }
    // Stable: a site's own errors keep their order.
    errs.sort_by(|a, b| {
        let ka = sites[a.0].steps.iter().map(|s| s.rank());
        let kb = sites[b.0].steps.iter().map(|s| s.rank());
        ka.cmp(kb)
    });
    errs.into_iter().map(|(_, e)| e).collect()
}

/// Whether `below` lies strictly under the node `above` leads to.
fn is_below(above: &[Step], below: &[Step]) -> bool {
    below.len() > above.len()
        && above.iter().zip(below).all(|(a, b)| match (a, b) {
            (Step::Items, Step::Items) => true,
            (Step::Property(x, _), Step::Property(y, _)) => x == y,
            _ => false,
        })
}

/// Checks site `i` against `compiled` (its node as a default above it
/// compiled it) or against its own node compiled alone, then the sites
/// below it.
fn check_site(
    sites: &[Site],
    children: &[Vec<usize>],
    i: usize,
    compiled: Option<&CompiledNode>,
    opts: &SchemaOptions,
    errs: &mut Vec<(usize, FieldError)>,
) {
    let site = &sites[i];
    // Most defaults are a scalar on a leaf declaring little: settled from
    // the node as written, without building a validator for it.
    if children[i].is_empty() && scalar::surely_valid(site.node, site.default) {
        return;
    }
    let own = compiled
        .is_none()
        .then(|| Schema::for_validation(site.node).ok())
        .flatten()
        .and_then(|node| Validator::new(&node, formats_of_defaults(opts.kube)).ok());
    let compiled = compiled.or(own.as_ref().map(Validator::root));
    if let Some(node) = compiled {
        let mut mine = Vec::new();
        check_default(
            node,
            site.default,
            &site.path,
            site.inside_meta,
            opts,
            &mut mine,
        );
        errs.extend(mine.into_iter().map(|e| (i, e)));
    }
    for &c in &children[i] {
        let below = compiled.and_then(|mut n| {
            for step in &sites[c].steps[site.steps.len()..] {
                n = match step {
                    Step::Items => n.items.as_deref()?,
                    Step::Property(name, _) => n.properties.get(*name)?,
                };
            }
            Some(n)
        });
        check_site(sites, children, c, below, opts, errs);
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

/// The server version whose formats a `default` is held to. From 1.34 the
/// server validates defaults against every format kube-openapi knows,
/// without the stripping by compatibility version that objects get, so
/// `k8s-short-name` and `k8s-long-name` bind defaults a release before
/// they bind objects (apiextensions-apiserver 1.34,
/// `pkg/apiserver/schema/defaulting/validation.go`).
fn formats_of_defaults(kube: super::KubeVersion) -> u32 {
    /// Where objects get the Kubernetes name formats.
    const NAME_FORMATS_FOR_OBJECTS: u32 = 35;
    const ALL_FORMATS_SINCE: u32 = 34;
    if kube.minor >= ALL_FORMATS_SINCE {
        kube.minor.max(NAME_FORMATS_FOR_OBJECTS)
    } else {
        kube.minor
    }
}
