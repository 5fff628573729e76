//! Validating stored custom resources against a CRD version's structural
//! schema, the way the API server does on CREATE.
//!
//! [`Validator::new`] compiles a version's `openAPIV3Schema` once (regexes,
//! formats, CEL programs); [`Validator::validate`] then checks one object and
//! returns a [`ValidationOutcome`]: the violations the server would report, the data
//! the server would prune, drop or default on the next read/write, and the CEL
//! rules that could not be evaluated here.
//!
//! The order mirrors `customResourceStrategy.Validate`: decoding (pruning of
//! unknown fields, dropping of non-nullable nulls, read-time defaults), the
//! OpenAPI value validations, embedded resources, list types, and finally
//! `x-kubernetes-validations`, which are skipped when an earlier error is
//! blocking (a type or enum error), as the server does.
//!
//! Decisions where the server's behaviour needs a choice (each pinned by a
//! unit test; a differential run against kube-apiserver 1.34 will confirm):
//! - **Nulls.** A non-nullable `null` in an object (property or map value) is
//!   dropped by the decoder when the field has no default ([`PrunedKind::NullDropped`]),
//!   and replaced by the default when it has one ([`PrunedKind::Defaulted`]).
//!   A `null` list item is never dropped: it is a [`Rule::Nullable`]
//!   violation unless `items` is `nullable`.
//! - **`uniqueItems`** is forbidden in structural schemas (the CRD itself is
//!   rejected), so it is ignored here.
//! - **`metadata`** at the root is neither pruned nor validated, except for
//!   the `name` and `generateName` restrictions the schema may declare (the
//!   only ones a CRD may put there). ObjectMeta checks of embedded resources
//!   are not done either. The object's own name rules are the server's, not
//!   the schema's, and are not checked.
//! - **Ratcheting** ([`Violation::ratchetable`]): see that field.
//! - Cost budgets of CEL (per call and per object) are not enforced.

mod list_type;
pub(crate) mod node;
mod rules;
pub(crate) mod scalar;
mod trail;
mod walk;

use serde_json::Value;
use thiserror::Error;

use crate::schema::{FieldPath, Schema};

/// Why a schema could not be compiled into a [`Validator`]. Each of these is a
/// schema the API server would refuse to register.
#[derive(Debug, Error)]
pub enum ValidateError {
    /// A `pattern` is not a valid RE2 regular expression.
    #[error("{path}: pattern {pattern:?} does not compile: {source}")]
    BadPattern {
        path: String,
        pattern: String,
        #[source]
        source: Box<crate::re2::PatternError>,
    },
    /// A keyword has a value of the wrong JSON type (e.g. `maxLength: "5"`).
    #[error("{path}: `{keyword}` must be {expected}")]
    BadKeyword {
        path: String,
        keyword: &'static str,
        expected: &'static str,
    },
    /// The schema nests deeper than the validator supports.
    #[error("{path}: schema nests deeper than {limit} levels")]
    TooDeep { path: String, limit: usize },
}

/// Which validation a [`Violation`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// `type` (and `x-kubernetes-int-or-string`) does not match the value.
    Type,
    /// `null` where the schema is not `nullable`.
    Nullable,
    /// `enum`.
    Enum,
    /// `minimum` / `exclusiveMinimum`.
    Minimum,
    /// `maximum` / `exclusiveMaximum`.
    Maximum,
    /// `multipleOf`.
    MultipleOf,
    /// `minLength`, counted in Unicode code points.
    MinLength,
    /// `maxLength`, counted in Unicode code points.
    MaxLength,
    /// `pattern` (RE2, unanchored search).
    Pattern,
    /// `format`, for the formats the CRD validator knows.
    Format,
    /// `minItems`.
    MinItems,
    /// `maxItems`.
    MaxItems,
    /// `x-kubernetes-list-type: set` with duplicate items.
    ListSet,
    /// `x-kubernetes-list-type: map` with duplicate key tuples.
    ListMap,
    /// `minProperties`.
    MinProperties,
    /// `maxProperties`.
    MaxProperties,
    /// `required` (checked after defaulting).
    Required,
    /// `x-kubernetes-embedded-resource` without `apiVersion`/`kind`.
    EmbeddedResource,
    /// A branch of `allOf` fails (the message names the inner keyword).
    AllOf,
    /// No branch of `anyOf` matches.
    AnyOf,
    /// Not exactly one branch of `oneOf` matches.
    OneOf,
    /// The `not` schema matches.
    Not,
    /// An `x-kubernetes-validations` rule evaluates to false.
    Cel,
}

impl Rule {
    /// Every rule, so what names rules by id (the catalog's
    /// `DecidedBy`) can be held to the real ones.
    pub const ALL: &'static [Rule] = &[
        Rule::Type,
        Rule::Nullable,
        Rule::Enum,
        Rule::Minimum,
        Rule::Maximum,
        Rule::MultipleOf,
        Rule::MinLength,
        Rule::MaxLength,
        Rule::Pattern,
        Rule::Format,
        Rule::MinItems,
        Rule::MaxItems,
        Rule::ListSet,
        Rule::ListMap,
        Rule::MinProperties,
        Rule::MaxProperties,
        Rule::Required,
        Rule::EmbeddedResource,
        Rule::AllOf,
        Rule::AnyOf,
        Rule::OneOf,
        Rule::Not,
        Rule::Cel,
    ];

    /// The schema keyword behind the rule, for reports.
    pub fn id(&self) -> &'static str {
        match self {
            Rule::Type => "type",
            Rule::Nullable => "nullable",
            Rule::Enum => "enum",
            Rule::Minimum => "minimum",
            Rule::Maximum => "maximum",
            Rule::MultipleOf => "multipleOf",
            Rule::MinLength => "minLength",
            Rule::MaxLength => "maxLength",
            Rule::Pattern => "pattern",
            Rule::Format => "format",
            Rule::MinItems => "minItems",
            Rule::MaxItems => "maxItems",
            Rule::ListSet => "x-kubernetes-list-type=set",
            Rule::ListMap => "x-kubernetes-list-type=map",
            Rule::MinProperties => "minProperties",
            Rule::MaxProperties => "maxProperties",
            Rule::Required => "required",
            Rule::EmbeddedResource => "x-kubernetes-embedded-resource",
            Rule::AllOf => "allOf",
            Rule::AnyOf => "anyOf",
            Rule::OneOf => "oneOf",
            Rule::Not => "not",
            Rule::Cel => "x-kubernetes-validations",
        }
    }

    /// Errors the API server calls blocking: after one of these it does not
    /// run the CEL rules (`hasBlockingErr`: type-invalid and not-supported).
    pub fn is_blocking(&self) -> bool {
        // A format error is a type error for the server ("must be of type
        // byte"): CEL is skipped after it too (tests/live/fidelity.rs).
        matches!(
            self,
            Rule::Type | Rule::Nullable | Rule::Enum | Rule::Format
        )
    }
}

/// One validation failure, as the API server would report it on CREATE.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The concrete field, k8s style: `spec.ports[2].name`, `spec.labels[foo]`.
    /// Empty for the object root.
    pub path: String,
    /// The schema field, for grouping: `^.spec.ports[*].name`.
    pub schema_path: FieldPath,
    /// Which validation failed.
    pub rule: Rule,
    /// Reads like the API server's field error, with the value and the limit.
    pub message: String,
    /// Whether an UPDATE that leaves this value unchanged still passes on
    /// Kubernetes >= 1.30 (KEP-4008 ratcheting; 1.33+ always on), as
    /// `tests/live/write_outcomes.rs` holds on every matrix version.
    ///
    /// The server drops an error when the schema node it is attached to holds
    /// a value equal (DeepEqual) to the old object's; list items are only
    /// correlated by key in `x-kubernetes-list-type: map` lists, so in other
    /// lists "unchanged" means the whole list. Hence:
    /// - value keywords (type, bounds, lengths, pattern, format, items and
    ///   properties counts, enum), and anything under
    ///   `allOf`/`anyOf`/`oneOf`/`not` (validated at the node like the rest):
    ///   `true`;
    /// - list-type duplicates: `true`. The server checks list types on an
    ///   update only when the stored object passed them, so any update of
    ///   an object that already holds duplicates passes;
    /// - `required`: `true`, but at the object that lacks the field (the
    ///   parent of the violation's path, usually `spec`): the error is that
    ///   object's, so updates that leave all of it unchanged pass (labels,
    ///   status) and any change to it is refused;
    /// - `x-kubernetes-embedded-resource`: `false` (checked the same way on
    ///   create and update);
    /// - CEL: `true` unless the rule references `oldSelf` or its evaluation
    ///   failed (a missing key): evaluation errors are never ratcheted.
    pub ratchetable: bool,
}

impl Rule {
    /// `x-kubernetes-list-type` set or map uniqueness: every server
    /// version, before ratcheting too, checks it on an update only if the
    /// stored object passed it, so an object that fails it can be updated
    /// in any way.
    pub fn is_list_type(self) -> bool {
        matches!(self, Rule::ListSet | Rule::ListMap)
    }
}

/// What happens to stored data on the next read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrunedKind {
    /// A field the schema does not describe: dropped on the next write.
    Unknown,
    /// A `null` for a non-nullable field without default: dropped on decode.
    NullDropped,
    /// An absent (or non-nullable `null`) field with a `default`: clients see
    /// the default on read, and the next write stores it.
    Defaulted,
}

/// A field the server would prune, drop or default.
#[derive(Debug, Clone, PartialEq)]
pub struct Pruned {
    /// Concrete path, k8s style.
    pub path: String,
    /// Schema path (the parent's path plus the field for unknown fields).
    pub schema_path: FieldPath,
    pub kind: PrunedKind,
}

/// A CEL rule that could not be evaluated here. Never counted as a pass.
#[derive(Debug, Clone, PartialEq)]
pub struct NotEvaluated {
    /// The schema node the rule is attached to.
    pub schema_path: FieldPath,
    /// The rule's CEL expression (`*` for "all rules", when CEL was skipped).
    pub rule: String,
    /// Why: compile error, unsupported function, evaluation error, skipped.
    pub reason: String,
}

/// The result of validating one object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValidationOutcome {
    /// Sorted by path, then rule.
    pub violations: Vec<Violation>,
    /// Data lost or changed on the next read/write, sorted by path.
    pub pruned: Vec<Pruned>,
    /// CEL rules we could not evaluate.
    pub not_evaluated: Vec<NotEvaluated>,
}

impl ValidationOutcome {
    /// No violation, nothing pruned, every rule evaluated.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty() && self.pruned.is_empty() && self.not_evaluated.is_empty()
    }

    /// Whether the API server would refuse to CREATE this object.
    pub fn rejected(&self) -> bool {
        !self.violations.is_empty()
    }
}

/// A CRD version's schema, compiled for validating many objects.
#[derive(Debug)]
pub struct Validator {
    root: node::CompiledNode,
}

impl Validator {
    /// Compiles `schema` (the version's `openAPIV3Schema`). `server_minor`
    /// (e.g. 33) gates formats that newer servers know (k8s-short-name and
    /// k8s-long-name from 1.34 on).
    pub fn new(schema: &Schema, server_minor: u32) -> Result<Validator, ValidateError> {
        let opts = node::Options { server_minor };
        let root = node::CompiledNode::compile(schema, &FieldPath::root(), &opts, 0)?;
        Ok(Validator { root })
    }

    /// Validates a stored object as the API server would on CREATE, and
    /// reports what it would prune, drop or default on read.
    pub fn validate(&self, object: &Value) -> ValidationOutcome {
        validate_at(&self.root, object)
    }

    /// The compiled root, to validate values against its nodes
    /// ([`validate_at`]).
    pub(crate) fn root(&self) -> &node::CompiledNode {
        &self.root
    }

    /// Whether any node carries `x-kubernetes-validations`.
    pub fn has_cel_rules(&self) -> bool {
        self.root.has_rules
    }
}

/// [`Validator::validate`] with `node` as the root: a value checked against
/// one node of a compiled schema as if that node were compiled alone (its
/// compiled form does not depend on where it sits).
pub(crate) fn validate_at(node: &node::CompiledNode, object: &Value) -> ValidationOutcome {
    let mut out = ValidationOutcome::default();
    walk::validate(node, object, &mut out);
    // Report order: by path, then rule (the walk follows the object's key order).
    out.violations
        .sort_by(|a, b| a.path.cmp(&b.path).then(a.rule.cmp(&b.rule)));
    out.pruned.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests;
