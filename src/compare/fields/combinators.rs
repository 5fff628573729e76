//! allOf, anyOf, oneOf and not: constraints over whole subschemas. The API
//! server ratchets their errors like any other keyword's: an update that
//! leaves the field as it was gets through (tests/live/write_outcomes.rs).

use std::collections::BTreeMap;

use serde_json::Value;

use super::branch_truth::{Branches, Truth};
use super::docs::DOC_KEYWORDS;
use super::restructured::without_implied_types;
use super::{FieldCheck, Node};
use crate::compare::messages::TIGHTENED;
use crate::compare::one_of;
use crate::compare::{Check, Severity};
use crate::schema::Schema;

impl Node<'_, '_> {
    /// The JSON types every value the old schema allows at this node has.
    fn old_types(&self) -> Option<Vec<&'static str>> {
        // A stored null fits no typed branch.
        if self.old.flag("nullable") {
            return None;
        }
        if self.old.flag("x-kubernetes-int-or-string") {
            return Some(vec!["integer", "string"]);
        }
        let t = match self.old.type_name()? {
            "string" => "string",
            "integer" => "integer",
            "number" => "number",
            "boolean" => "boolean",
            "object" => "object",
            "array" => "array",
            _ => return None,
        };
        Some(vec![t])
    }

    /// The facts by which every object the old schema allows meets the
    /// combinator `kw` as NEW writes it (`branches`), when they prove it.
    fn met_by_every_old_object(&self, kw: &str, branches: Option<&Value>) -> Option<String> {
        let mut judge = Branches::over(self.old, self.new)?;
        (judge.combinator(kw, branches?) == Truth::Always).then(|| judge.reasons())
    }

    pub(super) fn combinator(&mut self, c: &FieldCheck) {
        for &kw in c.keywords {
            self.combinator_on(c.check, kw);
        }
    }

    fn combinator_on(&mut self, check: Check, kw: &str) {
        if !self.changed(kw) {
            return;
        }
        let (o, n) = self.kw(kw);
        let (o, n) = (o.cloned(), n.cloned());
        let old_set = branches(o.as_ref(), Docs::Strip, self.old);
        let new_set = branches(n.as_ref(), Docs::Strip, self.new);
        let removed = old_set.keys().filter(|k| !new_set.contains_key(*k)).count();
        let added = new_set.keys().filter(|k| !old_set.contains_key(*k)).count();
        let word = |n: usize| if n == 1 { "branch" } else { "branches" };
        let (b_added, b_removed) = (word(added), word(removed));
        if removed == 0 && added == 0 {
            // The same constraints, reordered or documented differently.
            if branches(o.as_ref(), Docs::Keep, self.old)
                != branches(n.as_ref(), Docs::Keep, self.new)
            {
                self.documentation_changed(
                    format!("documentation inside {kw} changed"),
                    o.as_ref(),
                    n.as_ref(),
                );
            }
            return;
        }
        if let Some(facts) = self.met_by_every_old_object(kw, n.as_ref()) {
            let what = if o.is_none() {
                format!("{kw} constraint added ({added} {b_added})")
            } else {
                format!("{kw} changed ({added} {b_added} added, {removed} {b_removed} removed)")
            };
            let meets = match kw {
                "oneOf" => "matches exactly one branch",
                "anyOf" => "matches a branch",
                _ => "meets every branch",
            };
            self.emit(
                check,
                Severity::Info,
                format!(
                    "{what}: every object the old schema allows {meets} ({facts}), so no stored object can fail \
it; new writes must fit it"
                ),
                o.as_ref(),
                n.as_ref(),
            );
            return;
        }
        let old_types = self.old_types();
        let kept = kept_by_ratcheting(&self.ratcheting());
        let mut emit = |sev: Severity, what: String| {
            self.emit(check, sev, what, o.as_ref(), n.as_ref());
        };
        if o.is_none() {
            if check == Check::AnyOf
                && let Some(types) = old_types
                && types.iter().all(|t| has_type_branch(n.as_ref(), t))
            {
                emit(
                    Severity::Info,
                    format!(
                        "{kw} constraint added ({added} {b_added}): every value the old schema allows is {}, \
which a branch accepts as it is, so no stored object can fail it",
                        types.join(" or ")
                    ),
                );
                return;
            }
            emit(
                Severity::Error,
                format!(
                    "{kw} constraint added ({added} {b_added}): values that fit none of it are rejected; {kept}"
                ),
            );
            return;
        }
        if n.is_none() {
            if check == Check::AllOf {
                return; // every constraint lifted: looser
            }
            return; // anyOf/oneOf removed entirely: looser
        }
        match check {
            Check::AllOf => {
                if added > 0 {
                    emit(
                        Severity::Error,
                        format!(
                            "{added} allOf {b_added} added: each is a new constraint every value must meet; {kept}"
                        ),
                    );
                }
            }
            Check::AnyOf => {
                if removed > 0 {
                    emit(
                        Severity::Error,
                        format!(
                            "{removed} anyOf {b_removed} removed: values that only fit them are rejected; {kept}"
                        ),
                    );
                }
                if added > 0 {
                    let sev = Severity::info_if(self.ctx.options.any_of_allow_additions);
                    self.emit(
                        check,
                        sev,
                        format!("{added} anyOf {b_added} added: more values are accepted"),
                        o.as_ref(),
                        n.as_ref(),
                    );
                }
            }
            _ => {
                if removed > 0 {
                    emit(
                        Severity::Error,
                        format!(
                            "{removed} oneOf {b_removed} removed: values that only fit them are rejected; {kept}"
                        ),
                    );
                }
                if added > 0 {
                    let empty = Vec::new();
                    let old_branches = o.as_ref().and_then(Value::as_array).unwrap_or(&empty);
                    let new_branches = n.as_ref().and_then(Value::as_array).unwrap_or(&empty);
                    let is_added: Vec<bool> = new_branches
                        .iter()
                        .map(|b| !old_set.contains_key(&branch(b, Docs::Strip, self.new)))
                        .collect();
                    let max_properties = self
                        .new
                        .keywords
                        .get("maxProperties")
                        .and_then(Value::as_u64);
                    let (sev, what) = match one_of::added_branches(
                        old_branches,
                        new_branches,
                        &is_added,
                        max_properties,
                    ) {
                        one_of::Overlap::Proven(w) => (
                            Severity::Error,
                            format!(
                                "{added} oneOf {b_added} added that overlap an existing one: a value such as {w} matched one branch and now matches two, so it is rejected (oneOf means exactly one); {kept}"
                            ),
                        ),
                        one_of::Overlap::Disjoint => (
                            Severity::Info,
                            format!(
                                "{added} oneOf {b_added} added that share no value with the existing ones: more values are accepted"
                            ),
                        ),
                        one_of::Overlap::Undecided => (
                            Severity::Warning,
                            format!(
                                "{added} oneOf {b_added} added; whether a value can now match two branches could not be decided from the schema: such values are rejected (oneOf means exactly one); {kept}"
                            ),
                        ),
                    };
                    self.emit(check, sev, what, o.as_ref(), n.as_ref());
                }
            }
        }
    }

    pub(super) fn not(&mut self, c: &FieldCheck) {
        if !self.changed("not") {
            return;
        }
        let (o, n) = self.kw("not");
        let (o, n) = (o.cloned(), n.cloned());
        let Some(nv) = &n else { return };
        if let Some(ov) = &o
            && branch(ov, Docs::Strip, self.old) == branch(nv, Docs::Strip, self.new)
        {
            if branch(ov, Docs::Keep, self.old) != branch(nv, Docs::Keep, self.new) {
                self.documentation_changed(
                    "documentation inside not changed".to_string(),
                    o.as_ref(),
                    n.as_ref(),
                );
            }
            return;
        }
        let what = if o.is_none() { "added" } else { "changed" };
        if let Some(facts) = self.met_by_every_old_object("not", n.as_ref()) {
            self.emit(
                c.check,
                Severity::Info,
                format!(
                    "not constraint {what}: no object the old schema allows matches it ({facts}), so no stored \
object can fail it; new writes must not match it"
                ),
                o.as_ref(),
                n.as_ref(),
            );
            return;
        }
        let kept = kept_by_ratcheting(&self.ratcheting());
        self.emit(
            c.check,
            Severity::Error,
            format!("not constraint {what}: values matching it are rejected; {kept}"),
            o.as_ref(),
            n.as_ref(),
        );
    }
}

/// Whether a subschema's identity includes its documentation.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Docs {
    /// What it accepts only: documentation keywords dropped.
    Strip,
    /// As written (up to key order and number spelling).
    Keep,
}

/// A subschema's identity for set comparisons: keys sorted, numbers
/// normalized, documentation dropped or kept. Only schema keywords are
/// dropped: a property named `description` stays.
pub(super) fn canonical(v: &Value, docs: Docs) -> String {
    fn schema(v: &Value, docs: Docs) -> Value {
        let Value::Object(m) = v else {
            return value(v);
        };
        let sorted: BTreeMap<&String, Value> = m
            .iter()
            .filter(|(k, _)| docs == Docs::Keep || !DOC_KEYWORDS.contains(&k.as_str()))
            .map(|(k, v)| {
                let v = match (k.as_str(), v) {
                    ("properties" | "patternProperties" | "definitions", Value::Object(m)) => {
                        Value::Object(
                            m.iter()
                                .map(|(n, s)| (n.clone(), schema(s, docs)))
                                .collect(),
                        )
                    }
                    ("allOf" | "anyOf" | "oneOf" | "items", Value::Array(a)) => {
                        Value::Array(a.iter().map(|s| schema(s, docs)).collect())
                    }
                    ("not" | "items" | "additionalProperties" | "additionalItems", _) => {
                        schema(v, docs)
                    }
                    _ => value(v),
                };
                (k, v)
            })
            .collect();
        Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
    }
    /// Data (enum values, defaults): numbers normalized, nothing dropped.
    fn value(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), value(v))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(value).collect()),
            Value::Number(n) => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
                _ => v.clone(),
            },
            _ => v.clone(),
        }
    }
    schema(v, docs).to_string()
}

/// The identities of a junctor's branches, as a set: the same branches
/// in another order are the same constraint.
pub(super) fn branches(v: Option<&Value>, docs: Docs, parent: &Schema) -> BTreeMap<String, ()> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(|b| (branch(b, docs, parent), ())).collect())
        .unwrap_or_default()
}

/// A branch's identity under `parent`: a `type` the parent already
/// requires is left out, as it accepts nothing more or less there.
fn branch(b: &Value, docs: Docs, parent: &Schema) -> String {
    canonical(&without_implied_types(b, Some(parent)), docs)
}

/// Whether one of the branches accepts every value of JSON type `t`: it
/// says nothing but `type: t` (documentation aside).
fn has_type_branch(branches: Option<&Value>, t: &str) -> bool {
    branches
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .any(|b| {
            b.get("type").and_then(Value::as_str) == Some(t)
                && b.keys()
                    .all(|k| k == "type" || DOC_KEYWORDS.contains(&k.as_str()))
        })
}

/// What the server does with stored objects a combinator now refuses
/// (`ratcheting`: [`Node::ratcheting`]'s caveat for a node in a list).
fn kept_by_ratcheting(ratcheting: &str) -> String {
    format!("stored objects that fail it {TIGHTENED}{ratcheting}")
}
