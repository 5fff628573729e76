//! Field-level checks: one old and one new schema node at the same path,
//! compared keyword by keyword.
//!
//! Every check is declared once, in [`FIELD_CHECKS`]: its catalog id, the
//! keywords it consumes, its options and its code. The dispatch walks that
//! table, and whatever keyword differs and no declaration claims is reported
//! as `unknownChange`, one finding per keyword, so a keyword cannot be
//! listed as understood without a check that reads it. The checks live by
//! family in the submodules.

mod branch_truth;
mod cel;
mod combinators;
mod docs;
mod lists;
mod presence;
mod restructured;
mod shape;
#[cfg(test)]
mod tests;
mod values;

use serde_json::Value;

use super::{Check, CheckOption, CheckOptions, Finding, Severity};
use crate::json::{json_eq, show};
use crate::schema::path::{Step, Trail};
use crate::schema::{AdditionalProperties, FieldPath, Schema};

pub(super) use docs::DOC_KEYWORDS;

/// What the walk is comparing.
pub(super) struct Context<'a> {
    /// The version label for findings (`v1`, or `v1alpha1 -> v1`).
    pub version: String,
    /// Per-check options.
    pub options: &'a CheckOptions,
    /// True when comparing two served versions of one CRD rather than one
    /// version across an update: descriptions, removals (left to
    /// `conversionDataLoss`) and unknown keywords are not reported then.
    pub cross_version: bool,
    /// The new CRD must have structural schemas (it prunes: the legacy
    /// `spec.preserveUnknownFields: true` is off). Only then does a missing
    /// `type` make the server refuse it.
    pub structural: bool,
    /// The new CRD converts between several versions with a webhook, which
    /// may return an object without a field its schema requires: the API
    /// server then defaults it on read.
    pub webhook_conversion: bool,
    /// Between two served versions: whether the old CRD served the first
    /// one, so stored objects may have been written through it. When it did
    /// not, what a finding says of "stored objects" holds of the objects
    /// written through it after the update, and the message says so.
    pub first_served_before: bool,
}

/// Compares two schemas from the root.
pub(super) fn walk(ctx: &Context<'_>, old: &Schema, new: &Schema, out: &mut Vec<Finding>) {
    walk_at(ctx, &Trail::ROOT, None, old, new, out);
}

/// Compares one pair of nodes, children first, and returns whether the two
/// subtrees are equal (nothing is reported for those). Deciding equality
/// bottom up looks at every node once; asking `old == new` on the way down
/// compared each subtree again at every level above it, which was most of
/// the comparison of a large CRD. A node's own findings still come before
/// its children's.
fn walk_at(
    ctx: &Context<'_>,
    trail: &Trail<'_>,
    list: Option<&Trail<'_>>,
    old: &Schema,
    new: &Schema,
    out: &mut Vec<Finding>,
) -> bool {
    let start = out.len();
    let mut same = old.properties.len() == new.properties.len();
    // Both sides are sorted by name: one merge finds the common children.
    let mut news = new.properties.iter().peekable();
    for (name, old_child) in &old.properties {
        while news.next_if(|(n, _)| n.as_str() < name.as_str()).is_some() {
            same = false;
        }
        match news.next_if(|(n, _)| *n == name) {
            Some((_, new_child)) => {
                same &= walk_at(
                    ctx,
                    &trail.property(name, old),
                    list,
                    old_child,
                    new_child,
                    out,
                );
            }
            None => same = false,
        }
    }
    match (&old.items, &new.items) {
        (Some(o), Some(n)) => {
            // The API server matches the items of a stored list to the
            // updated one only by key, in a `listType: map` (of the schema
            // it validates with, the new one); below the outermost other
            // list, nothing is matched and that list is what ratchets.
            let map = new
                .keyword("x-kubernetes-list-type")
                .and_then(Value::as_str)
                == Some("map");
            let list = list.or((!map).then_some(trail));
            same &= walk_at(ctx, &trail.element(Step::Items, old), list, o, n, out);
        }
        (None, None) => {}
        _ => same = false,
    }
    match (&old.additional_properties, &new.additional_properties) {
        (Some(AdditionalProperties::Schema(o)), Some(AdditionalProperties::Schema(n))) => {
            same &= walk_at(ctx, &trail.element(Step::MapValues, old), list, o, n, out);
        }
        (o, n) => same &= o == n,
    }
    if same && old.keywords == new.keywords {
        return true;
    }
    // Value constraints written in allOf are compared as if written on the
    // node, so moving them between the two is not a change.
    let (folded_old, folded_new) = (
        restructured::fold_all_of(old),
        restructured::fold_all_of(new),
    );
    let path = trail.path();
    let mut mine = Vec::new();
    let (old_node, new_node) = (
        folded_old.as_ref().unwrap_or(old),
        folded_new.as_ref().unwrap_or(new),
    );
    let mut node = Node {
        ctx,
        path: path.to_string(),
        field_path: &path,
        required_in_old: trail.required_by_holder(),
        list_above: list.map(Trail::path),
        element_of_old: trail.element_of(),
        old: old_node,
        new: new_node,
        differing: differing(old_node, new_node),
        out: &mut mine,
    };
    node.run_checks();
    if !ctx.cross_version {
        node.all_of_restructured(old, new);
    }
    if !mine.is_empty() {
        out.splice(start..start, mine);
    }
    false
}

struct Node<'a, 'o> {
    ctx: &'a Context<'a>,
    path: String,
    field_path: &'a FieldPath,
    /// The old schema required this field: every stored object has it.
    required_in_old: bool,
    /// The outermost list above this node that is not `listType: map`:
    /// its items are not matched across an update, so a change to any of
    /// them re-checks this node in every item (see [`Node::ratcheting`]).
    list_above: Option<FieldPath>,
    /// The old schema of the list or map this node is an element of: its
    /// rules held for every stored element.
    element_of_old: Option<&'a Schema>,
    old: &'a Schema,
    new: &'a Schema,
    /// The keywords whose values differ, in name order: every check asks
    /// [`Node::changed`] first, and most nodes that differ at all differ in
    /// one keyword (`description`), so this is found once per node.
    differing: Vec<&'a str>,
    out: &'o mut Vec<Finding>,
}

/// The keywords present on one side only or with unequal values, in name
/// order, from one pass over both (sorted) keyword lists.
fn differing<'s>(old: &'s Schema, new: &'s Schema) -> Vec<&'s str> {
    let mut out = Vec::new();
    let mut news = new.keywords.iter().peekable();
    for (name, o) in old.keywords.iter() {
        while let Some((n, _)) = news.next_if(|(n, _)| n.as_str() < name.as_str()) {
            out.push(n.as_str());
        }
        match news.next_if(|(n, _)| *n == name) {
            Some((_, n)) if json_eq(o, n) => {}
            _ => out.push(name.as_str()),
        }
    }
    out.extend(news.map(|(n, _)| n.as_str()));
    out
}

impl Node<'_, '_> {
    fn emit(
        &mut self,
        check: Check,
        severity: Severity,
        message: String,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        let path = self.path.clone();
        self.emit_at(path, check, severity, message, old, new);
    }

    /// What [`messages::TIGHTENED`](crate::compare::messages::TIGHTENED)
    /// leaves out for a node below a list that is not `listType: map`:
    /// the server matches no item of such a list to the stored one, so an
    /// update that changes any item re-checks this node in all of them.
    fn ratcheting(&self) -> String {
        match &self.list_above {
            Some(list) => format!(
                "; it sits in the list {list}, which is not listType: map, so the server does not match \
its items across an update: an update that changes any item of {list} is rejected too"
            ),
            None => String::new(),
        }
    }

    /// Puts `witness` on the finding just emitted.
    fn witnessed(&mut self, witness: Option<Value>) {
        if let Some(f) = self.out.last_mut() {
            f.witness = witness;
        }
    }

    /// [`Node::emit`] for a path below this node (a removed child).
    fn emit_at(
        &mut self,
        path: String,
        check: Check,
        severity: Severity,
        message: String,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        let message = if self.ctx.cross_version && !self.ctx.first_served_before {
            let first = self.ctx.version.split(" -> ").next().unwrap_or_default();
            format!(
                "between served versions {} (conversion None, so objects are not converted), for objects \
written through {first} after the update (the old CRD did not serve {first}, so no stored object came through \
it): {message}",
                self.ctx.version
            )
        } else if self.ctx.cross_version {
            format!(
                "between served versions {} (conversion None, so objects are not converted): {message}",
                self.ctx.version
            )
        } else {
            message
        };
        self.out.push(
            Finding::new(check, severity, message)
                .in_version(self.ctx.version.clone())
                .at(path)
                .values(old.cloned(), new.cloned()),
        );
    }

    fn kw(&self, name: &str) -> (Option<&Value>, Option<&Value>) {
        (self.old.keyword(name), self.new.keyword(name))
    }

    fn changed(&self, name: &str) -> bool {
        self.differing.contains(&name)
    }

    fn run_checks(&mut self) {
        for check in FIELD_CHECKS {
            if check.across_versions || !self.ctx.cross_version {
                (check.run)(self, check);
            }
        }
        if !self.ctx.cross_version {
            self.unknown();
        }
    }

    fn unknown(&mut self) {
        for key in self.differing.clone() {
            if consumed(key) {
                continue;
            }
            let (o, n) = self.kw(key);
            let (o, n) = (o.cloned(), n.cloned());
            self.emit(
                Check::UnknownChange,
                Severity::Error,
                format!(
                    "{}: {key} {} -> {} (no check understands this keyword; accept it with an exception or \
failMode: open)",
                    self.path,
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
                o.as_ref(),
                n.as_ref(),
            );
        }
    }
}

/// One field check, declared once.
struct FieldCheck {
    /// The catalog id its findings carry.
    check: Check,
    /// The keywords it compares: they are taken off the unknown-change
    /// catch-all, so each must be one the check really reads (the tests hold
    /// every claim to a finding).
    keywords: &'static [&'static str],
    /// Also run between two served versions of one CRD (conversion None).
    /// Removals are left to `conversionDataLoss` there, and documentation
    /// cannot lose data.
    across_versions: bool,
    /// Its option besides `level`, if any (none has two).
    option: Option<CheckOption>,
    /// Its findings point at the node, not at its first keyword: a removed
    /// field is gone from `properties`, so the old node is the place.
    at_node: bool,
    /// Its code.
    run: Run,
}

impl FieldCheck {
    /// A check of `keywords` that also runs between served versions and has
    /// no options besides `level`: what most are.
    const fn of(check: Check, keywords: &'static [&'static str], run: Run) -> FieldCheck {
        FieldCheck {
            check,
            keywords,
            across_versions: true,
            option: None,
            at_node: false,
            run,
        }
    }

    /// Its findings point at the node (see `at_node`).
    const fn reported_at_node(self) -> FieldCheck {
        FieldCheck {
            at_node: true,
            ..self
        }
    }

    /// Only between the old and the new CRD (see `across_versions`).
    const fn old_to_new_only(self) -> FieldCheck {
        FieldCheck {
            across_versions: false,
            ..self
        }
    }

    /// With its one option, `key` as the config file spells it.
    const fn option(self, key: &'static str, set: fn(&mut CheckOptions, bool)) -> FieldCheck {
        FieldCheck {
            option: Some(CheckOption { key, set }),
            ..self
        }
    }
}

/// A field check's code.
type Run = fn(&mut Node<'_, '_>, &FieldCheck);

/// Options whose names are shared by the declarations below.
const ALLOW_ADDITIONS: &str = "allowAdditions";
const ALLOW_REMOVAL: &str = "allowRemoval";

/// Every field check, in the order its findings are reported.
const FIELD_CHECKS: &[FieldCheck] = &[
    FieldCheck::of(
        Check::ExistingFieldRemoval,
        &["properties", "items"],
        |n, c| n.field_removal(c),
    )
    .old_to_new_only()
    .reported_at_node(),
    // `properties` is claimed by the removal check above.
    FieldCheck::of(Check::FieldAddition, &[], |n, c| n.field_addition(c)).old_to_new_only(),
    FieldCheck::of(Check::Description, docs::DOC_KEYWORDS, |n, c| {
        n.documentation(c)
    })
    .old_to_new_only(),
    FieldCheck::of(Check::Required, &["required"], |n, c| n.required(c)),
    FieldCheck::of(Check::Type, &["type"], |n, c| n.type_(c)),
    FieldCheck::of(Check::Enum, &["enum"], |n, c| n.enum_(c))
        .option(ALLOW_ADDITIONS, |o, b| o.enum_allow_additions = b),
    FieldCheck::of(Check::Default, &["default"], |n, c| n.default(c)),
    FieldCheck::of(Check::Minimum, &["minimum"], |n, c| n.lower_bound(c)),
    FieldCheck::of(Check::MinLength, &["minLength"], |n, c| n.lower_bound(c)),
    FieldCheck::of(Check::MinItems, &["minItems"], |n, c| n.lower_bound(c)),
    FieldCheck::of(Check::MinProperties, &["minProperties"], |n, c| {
        n.lower_bound(c)
    }),
    FieldCheck::of(Check::Maximum, &["maximum"], |n, c| n.upper_bound(c)),
    FieldCheck::of(Check::MaxLength, &["maxLength"], |n, c| n.upper_bound(c)),
    FieldCheck::of(Check::MaxItems, &["maxItems"], |n, c| n.upper_bound(c)),
    FieldCheck::of(Check::MaxProperties, &["maxProperties"], |n, c| {
        n.upper_bound(c)
    }),
    FieldCheck::of(Check::ExclusiveMinimum, &["exclusiveMinimum"], |n, c| {
        n.exclusive(c, "minimum")
    }),
    FieldCheck::of(Check::ExclusiveMaximum, &["exclusiveMaximum"], |n, c| {
        n.exclusive(c, "maximum")
    }),
    FieldCheck::of(Check::MultipleOf, &["multipleOf"], |n, c| n.multiple_of(c)),
    FieldCheck::of(Check::UniqueItems, &["uniqueItems"], |n, c| {
        n.unique_items(c)
    }),
    FieldCheck::of(Check::Pattern, &["pattern"], |n, c| n.pattern(c))
        .option(ALLOW_REMOVAL, |o, b| o.pattern_allow_removal = b),
    FieldCheck::of(Check::Format, &["format"], |n, c| n.format(c)),
    FieldCheck::of(Check::Nullable, &["nullable"], |n, c| n.nullable(c))
        .option("allowAddition", |o, b| o.nullable_allow_addition = b),
    FieldCheck::of(
        Check::XValidations,
        &["x-kubernetes-validations"],
        |n, c| n.x_validations(c),
    )
    .option(ALLOW_REMOVAL, |o, b| o.x_validations_allow_removal = b),
    FieldCheck::of(
        Check::ListType,
        &["x-kubernetes-list-type", "x-kubernetes-list-map-keys"],
        |n, c| n.list_type(c),
    ),
    FieldCheck::of(Check::MapType, &["x-kubernetes-map-type"], |n, c| {
        n.map_type(c)
    }),
    FieldCheck::of(
        Check::PreserveUnknownFields,
        &["x-kubernetes-preserve-unknown-fields"],
        |n, c| n.preserve_unknown_fields(c),
    ),
    FieldCheck::of(
        Check::AdditionalProperties,
        &["additionalProperties"],
        |n, c| n.additional_properties(c),
    ),
    FieldCheck::of(
        Check::IntOrString,
        &["x-kubernetes-int-or-string"],
        |n, c| n.int_or_string(c),
    ),
    FieldCheck::of(
        Check::EmbeddedResource,
        &["x-kubernetes-embedded-resource"],
        |n, c| n.embedded_resource(c),
    ),
    FieldCheck::of(Check::AllOf, &["allOf"], |n, c| n.combinator(c)),
    FieldCheck::of(Check::AnyOf, &["anyOf"], |n, c| n.combinator(c))
        .option(ALLOW_ADDITIONS, |o, b| o.any_of_allow_additions = b),
    FieldCheck::of(Check::OneOf, &["oneOf"], |n, c| n.combinator(c)),
    FieldCheck::of(Check::Not, &["not"], |n, c| n.not(c)),
];

/// The schema keyword a field check's findings point at (SARIF, GitHub
/// annotations): the first it claims, so a check cannot be located at a
/// keyword it does not read. None for a check that is not a field check,
/// that claims none, or that points at the node.
pub(in crate::compare) fn reported_keyword(check: Check) -> Option<&'static str> {
    let c = FIELD_CHECKS.iter().find(|c| c.check == check)?;
    if c.at_node {
        return None;
    }
    c.keywords.first().copied()
}

/// The options a field check accepts besides `level`.
pub(super) fn options_of(check: Check) -> &'static [CheckOption] {
    FIELD_CHECKS
        .iter()
        .find(|c| c.check == check)
        .and_then(|c| c.option.as_ref())
        .map_or(&[], std::slice::from_ref)
}

/// The children the walk descends into as typed schemas rather than
/// keywords. One still among a node's keywords is in a form the walk cannot
/// read (tuple `items`), so the catch-all reports it even though a check
/// claims the name.
const TYPED_CHILDREN: &[&str] = &["properties", "items", "additionalProperties"];

/// Whether some declared check compares this keyword.
fn consumed(key: &str) -> bool {
    !TYPED_CHILDREN.contains(&key) && FIELD_CHECKS.iter().any(|c| c.keywords.contains(&key))
}

/// A removed field's schema can be huge (a whole PodSpec); findings carry
/// only its top keywords.
fn summarize_schema(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for key in ["type", "format", "default", "enum"] {
                if let Some(x) = m.get(key) {
                    out.insert(key.to_string(), x.clone());
                }
            }
            if let Some(Value::Object(p)) = m.get("properties") {
                out.insert(
                    "properties".into(),
                    Value::Array(p.keys().map(|k| Value::String(k.clone())).collect()),
                );
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}
