//! The worst-case runtime cost of all of a schema's rules over one object.
//!
//! The API server judges each rule at CRD write time by its estimated cost
//! times how often it can run per object (`env::cost`), and the sum of those
//! figures only against the schema-wide limit of 100,000,000. At runtime the
//! validation of one object has a budget of its own, 10,000,000
//! (`RuntimeCELCostBudget`), shared by every rule evaluation in the object
//! (a rule on list items runs once per item). A CRD can therefore be
//! accepted while an object at its size bounds runs out of budget, and the
//! server then refuses the object. This module adds up, rule by rule, the
//! server's estimate of one evaluation times how often it runs, with one
//! difference: strings are sized in characters, as cel-go counts them when
//! it tracks an evaluation's actual cost, not at the 4 bytes a character
//! the write-time estimate allows ([`Decl::at_runtime`]). The result is what
//! an object at the schema's sizes can really cost, and the comparison
//! tells from it when a change of rules makes that pass the budget
//! (`tests/live/cost_budget.rs` holds it to the server).

use serde_json::Value;

use crate::openapi::props::{AdditionalProperties, Obj, additional_properties, arr_of};
use crate::schema::path::FieldPath;
use crate::text::thousands;

use super::env::check::{Ty, check, normalize};
use super::env::cost::estimate;
use super::env::decl::{Decl, max_cardinality};

/// `RuntimeCELCostBudget`: what the rules of one object may cost together
/// in one request.
pub const RUNTIME_BUDGET: u64 = 10_000_000;

/// One rule's share of the worst case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCost {
    /// The node that holds the rule (`^.spec.items[*]`).
    pub path: String,
    /// The rule's text.
    pub rule: String,
    /// The most one evaluation can cost.
    pub per_call: u64,
    /// How many times it can run in one object.
    pub runs: u64,
    /// The sizes its worst case takes: the lists and maps above its node
    /// (how often it runs), then what it reads (`^.spec.s: 100,000
    /// characters`); a node no keyword bounds is sized by the request
    /// limit, as the estimator sizes it.
    pub sizes: Vec<String>,
    /// Every size it takes is declared (`maxItems`, `maxLength`,
    /// `maxProperties`, an enum, a format), none is the request limit.
    pub bounded: bool,
}

impl RuleCost {
    /// What it can cost in one object.
    pub fn total(&self) -> u64 {
        if self.per_call == 0 {
            0
        } else {
            self.per_call.saturating_mul(self.runs)
        }
    }
}

/// The worst case over every object a schema admits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectCost {
    /// Every rule that parses, in schema order.
    pub rules: Vec<RuleCost>,
}

impl ObjectCost {
    /// The rules' costs added up (saturating).
    pub fn total(&self) -> u64 {
        self.rules
            .iter()
            .fold(0u64, |t, r| t.saturating_add(r.total()))
    }

    /// The costs of the rules whose sizes are all declared. A rule sized
    /// by the request limit is costed as if the whole request were its
    /// node, and several such rules cannot all have that at once: their
    /// sum bounds the cost, but no single object reaches it.
    pub fn bounded_total(&self) -> u64 {
        self.rules
            .iter()
            .filter(|r| r.bounded)
            .fold(0u64, |t, r| t.saturating_add(r.total()))
    }
}

/// The worst-case runtime cost of `root`'s rules (`openAPIV3Schema`), by
/// the estimator of Kubernetes `minor` with strings sized in characters.
pub fn worst_case(root: &Obj, minor: u32) -> ObjectCost {
    let mut out = ObjectCost::default();
    walk(
        root,
        &FieldPath::root(),
        Some(1),
        true,
        &[],
        minor,
        &mut out,
    );
    out
}

fn bound_of(s: &Obj, key: &str) -> Option<u64> {
    s.get(key).and_then(Value::as_i64).map(|m| m.max(0) as u64)
}

/// The keyword that bounds how many children one value of `s` holds, and
/// its value (`None`: unbounded), or `None` for a node without repeated
/// children (`extractMaxElements`).
fn children_bound(s: &Obj) -> Option<(&'static str, Option<u64>)> {
    match s.get("type").and_then(Value::as_str) {
        Some("array") => Some(("items", bound_of(s, "maxItems"))),
        Some("object") if !matches!(additional_properties(s), AdditionalProperties::Absent) => {
            Some(("properties", bound_of(s, "maxProperties")))
        }
        _ => None,
    }
}

fn has_rules(s: &Obj) -> bool {
    !arr_of(s, "x-kubernetes-validations").is_empty()
}

/// Whether `s` or a node below it holds a rule.
fn rules_below(s: &Obj) -> bool {
    has_rules(s) || children(s).iter().any(|(_, c)| rules_below(c))
}

enum Step<'s> {
    Property(&'s str),
    Items,
    MapValues,
}

fn children(s: &Obj) -> Vec<(Step<'_>, &Obj)> {
    let mut out = Vec::new();
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            if let Some(c) = child.as_object() {
                out.push((Step::Property(name), c));
            }
        }
    }
    if let Some(items) = s.get("items").and_then(Value::as_object) {
        out.push((Step::Items, items));
    }
    if let AdditionalProperties::Schema(ap) = additional_properties(s) {
        out.push((Step::MapValues, ap));
    }
    out
}

/// How a size reads in a message.
fn size_text(path: &str, max: u64, unit: &str, bounded: bool) -> String {
    if bounded {
        format!("{path}: {} {unit}", thousands(max))
    } else {
        format!("{path}: as many {unit} as fit in a request")
    }
}

/// Adds the rules of `s` and below to `out`. `chain` holds the sizes of
/// the lists and maps above `s`.
fn walk(
    s: &Obj,
    path: &FieldPath,
    cardinality: Option<u64>,
    resource_root: bool,
    chain: &[String],
    minor: u32,
    out: &mut ObjectCost,
) {
    if !rules_below(s) {
        return;
    }
    let embedded = s
        .get("x-kubernetes-embedded-resource")
        .and_then(Value::as_bool)
        == Some(true);
    // Only a node with rules needs its declaration: built above one, it
    // would describe the whole subtree for nothing.
    let decl = has_rules(s)
        .then(|| Decl::of(s, resource_root || embedded))
        .flatten()
        .map(|d| d.judged_by(minor).at_runtime());
    if let Some(decl) = decl {
        let runs = cardinality.unwrap_or_else(|| max_cardinality(decl.min_size()));
        let here = path.to_string();
        for rule in arr_of(s, "x-kubernetes-validations") {
            let Some(src) = rule.get("rule").and_then(Value::as_str) else {
                continue;
            };
            let Ok(expr) = super::parse::parse_rule(src) else {
                continue;
            };
            let optional_old_self =
                rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
            let mut next = 1u64 << 40;
            let e = normalize(&expr, &mut next);
            let checked = check(&e, Ty::of(decl), optional_old_self);
            let est = estimate(&e, &checked, decl, minor);
            // No estimate (a rule that does not type-check here): the
            // CRD validation reports it; no figure to add.
            if est.cost.max == u64::MAX {
                continue;
            }
            let mut sizes = chain.to_vec();
            // A size of 0 (a map key, as the estimator sizes it) costs
            // nothing and says nothing.
            for r in est.read.iter().filter(|r| r.max > 0) {
                // `self.a[*]` from the rule's node: `^.spec.a[*]`.
                let at = format!("{here}{}", r.path.strip_prefix("self").unwrap_or(&r.path));
                let text = size_text(&at, r.max, r.unit, r.bounded);
                if !sizes.contains(&text) {
                    sizes.push(text);
                }
            }
            out.rules.push(RuleCost {
                path: here.clone(),
                rule: src.to_string(),
                per_call: est.cost.max,
                runs,
                sizes,
                bounded: cardinality.is_some() && est.read.iter().all(|r| r.bounded),
            });
        }
    }
    let bound = children_bound(s);
    let mut chain = chain.to_vec();
    if let Some((what, b)) = bound {
        let unit = if what == "items" { "items" } else { "entries" };
        chain.push(size_text(
            &path.to_string(),
            b.unwrap_or_default(),
            unit,
            b.is_some(),
        ));
    }
    let per_value = match bound {
        Some((_, b)) => b,
        None => Some(1),
    };
    let child_card = cardinality.and_then(|c| per_value.map(|m| c.saturating_mul(m)));
    for (step, child) in children(s) {
        let below = match step {
            Step::Property(name) => path.property(name),
            Step::Items => path.items(),
            Step::MapValues => path.map_values(),
        };
        walk(child, &below, child_card, false, &chain, minor, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cost(schema: Value) -> ObjectCost {
        worst_case(schema.as_object().unwrap(), 34)
    }

    fn list(max_items: Option<u64>, rules: &[&str]) -> Value {
        let mut xs = json!({
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
            "x-kubernetes-validations": rules.iter().map(|r| json!({"rule": r})).collect::<Vec<_>>(),
        });
        if let Some(m) = max_items {
            xs["maxItems"] = json!(m);
        }
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"xs": xs}}}})
    }

    #[test]
    fn a_quadratic_rule_costs_the_square_of_the_list_size() {
        let small = cost(list(Some(10), &["self.all(x, self.all(y, x >= 0))"]));
        let large = cost(list(Some(100), &["self.all(x, self.all(y, x >= 0))"]));
        assert_eq!(small.rules.len(), 1);
        assert_eq!(small.rules[0].runs, 1);
        assert_eq!(small.rules[0].path, "^.spec.xs");
        // The square: a tenfold list costs about a hundredfold.
        let ratio = large.total() as f64 / small.total() as f64;
        assert!((80.0..=110.0).contains(&ratio), "{ratio}");
        assert_eq!(small.rules[0].sizes, ["^.spec.xs: 10 items"]);
    }

    #[test]
    fn rules_add_up_over_one_object() {
        let one = cost(list(Some(400), &["self.all(x, self.all(y, x >= 0))"]));
        let two = cost(list(
            Some(400),
            &[
                "self.all(x, self.all(y, x >= 0))",
                "self.all(x, self.all(y, x >= 1))",
            ],
        ));
        assert_eq!(two.total(), 2 * one.total());
    }

    #[test]
    fn a_rule_on_list_items_runs_once_per_item_of_every_enclosing_list() {
        let schema = json!({"type": "object", "properties": {"rows": {
            "type": "array", "maxItems": 20,
            "items": {"type": "object", "properties": {"cells": {
                "type": "array", "maxItems": 30,
                "items": {"type": "string", "maxLength": 8,
                    "x-kubernetes-validations": [{"rule": "self.size() > 0"}]}
            }}}
        }}});
        let c = cost(schema);
        assert_eq!(c.rules.len(), 1);
        assert_eq!(c.rules[0].runs, 600);
        assert_eq!(c.rules[0].path, "^.rows[*].cells[*]");
        assert_eq!(c.total(), 600 * c.rules[0].per_call);
        assert_eq!(
            c.rules[0].sizes,
            [
                "^.rows: 20 items",
                "^.rows[*].cells: 30 items",
                "^.rows[*].cells[*]: 8 characters"
            ]
        );
    }

    #[test]
    fn items_below_an_unbounded_list_run_as_often_as_fit_in_a_request() {
        let schema = json!({"type": "object", "properties": {"xs": {
            "type": "array",
            "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]}
        }}});
        let c = cost(schema);
        assert_eq!(c.rules[0].runs, max_cardinality(1));
        assert_eq!(
            c.rules[0].sizes,
            ["^.xs: as many items as fit in a request"]
        );
        assert!(!c.rules[0].bounded);
        assert_eq!(c.bounded_total(), 0);
    }

    /// The server estimates a string of 100,000 characters at 400,000
    /// bytes; an evaluation counts 100,000, and so does the worst case.
    #[test]
    fn strings_are_sized_in_characters_as_an_evaluation_counts_them() {
        let schema = |max: u64| {
            json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": max}},
                   "x-kubernetes-validations": [{"rule": "self.s.matches('^a*$')"}]})
        };
        let c = cost(schema(100_000));
        let written = {
            let v = schema(100_000);
            let root = v.as_object().unwrap();
            let decl = Decl::of(root, true).unwrap().judged_by(34);
            let e = super::super::parse::parse_rule("self.s.matches('^a*$')").unwrap();
            let mut next = 1u64 << 40;
            let e = normalize(&e, &mut next);
            estimate(&e, &check(&e, Ty::of(decl), false), decl, 34)
                .cost
                .max
        };
        assert!(
            (3.9..=4.1).contains(&(written as f64 / c.rules[0].per_call as f64)),
            "{written} {}",
            c.rules[0].per_call
        );
        // Ten times the characters, ten times the cost.
        let ratio = c.total() as f64 / cost(schema(10_000)).total() as f64;
        assert!((9.9..=10.1).contains(&ratio), "{ratio}");
        assert_eq!(c.rules[0].sizes, ["^.s: 100,000 characters"]);
        assert!(c.rules[0].bounded);
        assert_eq!(c.bounded_total(), c.total());
    }

    #[test]
    fn a_schema_without_rules_costs_nothing() {
        let c = cost(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert_eq!(c, ObjectCost::default());
        assert_eq!(c.total(), 0);
    }
}
