//! `celCostBudget`: a change of rules after which an object the old schema
//! allows can run out of the API server's per-object CEL budget.
//!
//! The server checks each rule when the CRD is written, by its estimated
//! cost times how often it runs per object, and the rules of a schema only
//! together against a limit ten times the runtime budget. At runtime all the
//! rule evaluations of one object share 10,000,000, so a CRD the server
//! accepts can still refuse large objects ("validation failed due to running
//! out of cost budget, no further validation rules will be run"). Stored
//! objects are bounded by the old schema's sizes, so the new rules are
//! costed over the new schema without the fields only it declares, with
//! each `maxItems`, `maxLength` and `maxProperties` lowered to the old one
//! where the old is lower
//! ([`bounded_by`]), with the server's own estimator, strings sized in
//! characters as an evaluation counts them (`cel::budget`). A warning when
//! the old rules stayed within the budget and the rules whose sizes are all
//! declared pass it; info when the old rules could already pass it (the old
//! sizes never kept objects within it), or when only rules sized by the
//! request limit take the total past it (each is costed as if the whole
//! request were its node, which no object is for all of them at once).

use serde_json::{Value, json};

/// The keyword its findings point at: the rules whose cost it adds up.
pub(super) const REPORTED_KEYWORD: &str = "x-kubernetes-validations";

use crate::cel::budget::{ObjectCost, RUNTIME_BUDGET, RuleCost, worst_case};
use crate::crd::Crd;
use crate::kube_version::KubeVersion;
use crate::schema::path::Trail;
use crate::schema::{AdditionalProperties, Schema};
use crate::text::thousands;

use super::{Check, Finding, Severity};

/// The size keywords the estimator reads.
const SIZES: [&str; 3] = ["maxItems", "maxLength", "maxProperties"];

/// The server's message when an object runs out of budget.
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

pub(super) fn check(old: &Crd, new: &Crd, out: &mut Vec<Finding>) {
    // A version the new CRD does not serve validates no request.
    for nv in new.versions.iter().filter(|v| v.spec.served) {
        let Some(ov) = old.version(nv.name()) else {
            continue;
        };
        if let Some(f) = judge(&ov.schema, &nv.schema) {
            out.push(f.in_version(nv.name()));
        }
    }
}

/// The `(node, rule)` pairs of a schema; a node's path is written only
/// where it holds rules.
fn rules(s: &Schema, at: &Trail<'_>, out: &mut Vec<(String, String)>) {
    if let Some(Value::Array(rs)) = s.keyword("x-kubernetes-validations") {
        let path = at.path().to_string();
        for r in rs {
            if let Some(text) = r.get("rule").and_then(Value::as_str) {
                out.push((path.clone(), text.to_string()));
            }
        }
    }
    for (step, child) in s.children() {
        rules(child, &at.down(step), out);
    }
}

/// `new` with each size bound lowered to `old`'s at the same node, where
/// `old` bounds it lower (or only `old` does), and without the rules of
/// the fields `old` does not declare: the largest values both a stored
/// object and the new schema allow.
pub fn bounded_by(new: &Schema, old: &Schema) -> Schema {
    let mut keywords = new.keywords.clone();
    for key in SIZES {
        let o = old.keyword(key).and_then(Value::as_i64);
        let n = new.keyword(key).and_then(Value::as_i64);
        if let Some(o) = o
            && n.is_none_or(|n| o < n)
        {
            keywords.insert(key.to_string(), json!(o));
        }
    }
    // A field only NEW declares is in no stored object: its rules never
    // run on one. It stays declared, for the rules above that read it.
    let properties = new
        .properties
        .iter()
        .map(|(name, child)| {
            let child = match old.properties.get(name) {
                Some(oc) => bounded_by(child, oc),
                None => without_rules(child),
            };
            (name.clone(), child)
        })
        .collect();
    let items = new.items.as_ref().map(|i| {
        Box::new(match &old.items {
            Some(oi) => bounded_by(i, oi),
            None => (**i).clone(),
        })
    });
    let additional_properties = match (&new.additional_properties, &old.additional_properties) {
        (Some(AdditionalProperties::Schema(v)), Some(AdditionalProperties::Schema(ov))) => {
            Some(AdditionalProperties::Schema(Box::new(bounded_by(v, ov))))
        }
        (other, _) => other.clone(),
    };
    Schema {
        keywords,
        properties,
        items,
        additional_properties,
    }
}

/// `s` without its rules, and its children without theirs.
fn without_rules(s: &Schema) -> Schema {
    let mut keywords = s.keywords.clone();
    keywords.remove("x-kubernetes-validations");
    Schema {
        keywords,
        properties: s
            .properties
            .iter()
            .map(|(name, c)| (name.clone(), without_rules(c)))
            .collect(),
        items: s.items.as_ref().map(|i| Box::new(without_rules(i))),
        additional_properties: match &s.additional_properties {
            Some(AdditionalProperties::Schema(v)) => {
                Some(AdditionalProperties::Schema(Box::new(without_rules(v))))
            }
            other => other.clone(),
        },
    }
}

fn costed(s: &Schema) -> ObjectCost {
    match to_be_costed(s) {
        Some(Value::Object(root)) => worst_case(&root, KubeVersion::NEWEST.minor),
        _ => ObjectCost::default(),
    }
}

/// The JSON the estimator reads of `s`: each node that holds rules whole
/// (a rule reads anything below it), the nodes on the way to one with
/// their own keywords (the lists and maps among them decide how often a
/// rule runs), nothing else (`None` when no rule is below). The estimator
/// reads no other node, and a CRD's rules sit on a few small nodes: the
/// whole schema written out was most of this check's time on the largest
/// corpus CRD.
fn to_be_costed(s: &Schema) -> Option<Value> {
    if s.keyword("x-kubernetes-validations").is_some() {
        return Some(s.to_value());
    }
    let properties: serde_json::Map<String, Value> = s
        .properties
        .iter()
        .filter_map(|(name, child)| Some((name.clone(), to_be_costed(child)?)))
        .collect();
    let items = s.items.as_deref().and_then(to_be_costed);
    let values = match &s.additional_properties {
        Some(AdditionalProperties::Schema(v)) => Some(to_be_costed(v)),
        _ => None,
    };
    if properties.is_empty() && items.is_none() && !matches!(values, Some(Some(_))) {
        return None;
    }
    let mut node: serde_json::Map<String, Value> = s
        .keywords
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !properties.is_empty() {
        node.insert("properties".into(), Value::Object(properties));
    }
    if let Some(items) = items {
        node.insert("items".into(), items);
    }
    match (&s.additional_properties, values) {
        // A map stays a map for the rules below it: its values' schema, or
        // an empty one where no rule is below them.
        (Some(AdditionalProperties::Schema(_)), Some(v)) => {
            node.insert(
                "additionalProperties".into(),
                v.unwrap_or_else(|| json!({})),
            );
        }
        (Some(AdditionalProperties::Allowed(b)), _) => {
            node.insert("additionalProperties".into(), Value::Bool(*b));
        }
        _ => {}
    }
    Some(Value::Object(node))
}

/// The finding for one version, if its rules can now exhaust the budget.
fn judge(old: &Schema, new: &Schema) -> Option<Finding> {
    let (mut old_rules, mut new_rules) = (Vec::new(), Vec::new());
    rules(old, &Trail::ROOT, &mut old_rules);
    rules(new, &Trail::ROOT, &mut new_rules);
    // Rules only kept or removed, and sizes bounded by OLD's: no object
    // costs more than it did.
    if new_rules.iter().all(|r| old_rules.contains(r)) {
        return None;
    }
    let before = costed(old);
    let after = costed(&bounded_by(new, old));
    let (was, is) = (before.total(), after.total());
    if is <= RUNTIME_BUDGET || is <= was {
        return None;
    }
    let added: Vec<&RuleCost> = after
        .rules
        .iter()
        .filter(|r| !old_rules.contains(&(r.path.clone(), r.rule.clone())))
        .collect();
    let costliest = added.iter().max_by_key(|r| r.total()).copied();
    let at = costliest.map_or_else(|| "^".to_string(), |r| r.path.clone());
    // Where the old rules could already pass the budget, the old schema's
    // sizes never kept objects within it: what is new is only how much.
    // Where the total passes the budget only with rules sized by the
    // request limit, no single object is known to reach it.
    let severity = if was > RUNTIME_BUDGET || after.bounded_total() <= RUNTIME_BUDGET {
        Severity::Info
    } else {
        Severity::Warning
    };
    Some(
        Finding::new(Check::CelCostBudget, severity, message(&after, was, is))
            .at(at)
            .values(Some(json!(was)), Some(json!(is))),
    )
}

fn message(after: &ObjectCost, was: u64, is: u64) -> String {
    let mut top: Vec<&RuleCost> = after.rules.iter().filter(|r| r.total() > 0).collect();
    top.sort_by_key(|r| std::cmp::Reverse(r.total()));
    let costliest: Vec<String> = top
        .iter()
        .take(3)
        .map(|r| {
            let runs = if r.runs == 1 {
                String::new()
            } else {
                format!(", {} runs of {}", thousands(r.runs), thousands(r.per_call))
            };
            format!(
                "`{}` at {} ({}{runs})",
                r.rule,
                r.path,
                thousands(r.total())
            )
        })
        .collect();
    let before = if was > RUNTIME_BUDGET {
        format!(
            "the old rules could already cost {}, above the budget too, so this is info: the new ones add to it",
            thousands(was)
        )
    } else {
        format!("the old rules at most {}", thousands(was))
    };
    let request_sized = if after.bounded_total() > RUNTIME_BUDGET {
        String::new()
    } else {
        format!(
            "Info: the declared sizes account for only {}; the rest takes sizes only the 3 MiB request limit bounds, \
each such rule costed as if the whole request were its node, which no object is for all of them at once. ",
            thousands(after.bounded_total())
        )
    };
    // The sizes of the costliest rules, once each.
    let mut sizes: Vec<&str> = Vec::new();
    for r in top.iter().take(3) {
        for t in &r.sizes {
            if !sizes.contains(&t.as_str()) {
                sizes.push(t);
            }
        }
    }
    let sizes = match sizes.len() {
        0 => String::new(),
        n @ 1..=6 => format!(" ({})", sizes[..n].join(", ")),
        n => format!(" ({}, and {} more)", sizes[..6].join(", "), n - 6),
    };
    format!(
        "the rules of this version can cost up to {} in one object, above the API server's runtime budget of {} per object ({before}): \
an object at the old schema's size bounds{sizes} can be refused on create and update with \"{OUT_OF_BUDGET}\". \
Costliest: {}. {request_sized}The figures are the server's estimator with strings counted in characters, as an evaluation counts them: \
an evaluation reaches them when every list and map is full, every string at its maxLength and no rule stops early \
(`exists`, `&&`, `||`, `?:`), so a stored object is refused only if it comes that close; \
lower maxItems, maxProperties or maxLength where the rules iterate, or make the rules cheaper",
        thousands(is),
        thousands(RUNTIME_BUDGET),
        costliest.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(v: Value) -> Schema {
        Schema::from_value(&v).unwrap()
    }

    fn list(max_items: u64, rules: &[&str]) -> Schema {
        schema(json!({"type": "object", "properties": {"xs": {
            "type": "array", "maxItems": max_items,
            "items": {"type": "integer", "minimum": 0},
            "x-kubernetes-validations": rules.iter().map(|r| json!({"rule": r})).collect::<Vec<_>>(),
        }}}))
    }

    const R: [&str; 4] = [
        "self.all(x, self.all(y, x >= 0))",
        "self.all(x, self.all(y, x >= 1))",
        "self.all(x, self.all(y, x >= 2))",
        "self.all(x, self.all(y, x >= 3))",
    ];

    #[test]
    fn the_old_bounds_hold_down_the_new_ones() {
        let old = list(10, &[]);
        let new = list(1000, &R[..1]);
        let b = bounded_by(&new, &old);
        let xs = b.properties.get("xs").unwrap();
        assert_eq!(xs.keyword("maxItems"), Some(&json!(10)));
        // Only OLD bounds it: OLD's bound.
        let new_unbounded = schema(json!({"type": "object", "properties": {"xs": {
            "type": "array", "items": {"type": "string"}}}}));
        let old_bounded = schema(json!({"type": "object", "properties": {"xs": {
            "type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 3}}}}));
        let b = bounded_by(&new_unbounded, &old_bounded);
        // A field only NEW declares is in no stored object: its rules go.
        let with_new_field = schema(json!({"type": "object", "properties": {
            "xs": {"type": "array", "items": {"type": "string"}},
            "ys": {"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.size() > 0"}]}}}}));
        let only_old = bounded_by(&with_new_field, &old_bounded);
        let ys = only_old.properties.get("ys").unwrap();
        assert_eq!(
            ys.items
                .as_ref()
                .unwrap()
                .keyword("x-kubernetes-validations"),
            None
        );
        let xs = b.properties.get("xs").unwrap();
        assert_eq!(xs.keyword("maxItems"), Some(&json!(5)));
        assert_eq!(
            xs.items.as_ref().unwrap().keyword("maxLength"),
            Some(&json!(3))
        );
    }

    #[test]
    fn rules_added_past_the_budget_are_reported() {
        let one = costed(&list(400, &R[..1])).total();
        // Enough copies to pass the budget, and one fewer under it.
        let n = (RUNTIME_BUDGET / one + 1) as usize;
        assert!(n < R.len() + 20, "{one}");
        let texts: Vec<String> = (0..n)
            .map(|i| format!("self.all(x, self.all(y, x >= {i}))"))
            .collect();
        let all: Vec<&str> = texts.iter().map(String::as_str).collect();
        let f = judge(&list(400, &all[..n - 1]), &list(400, &all)).unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.path.as_deref(), Some("^.xs"));
        assert!(f.message.contains("^.xs: 400 items"), "{}", f.message);
        assert!(f.message.contains(OUT_OF_BUDGET), "{}", f.message);
        // The same rules over the old schema's ten items cost a
        // sixteen-hundredth: nothing to report.
        assert!(judge(&list(10, &all[..n - 1]), &list(400, &all)).is_none());
    }

    #[test]
    fn rules_added_where_the_old_ones_could_already_pass_the_budget_are_info() {
        let texts: Vec<String> = (0..20)
            .map(|i| format!("self.all(x, self.all(y, x >= {i}))"))
            .collect();
        let all: Vec<&str> = texts.iter().map(String::as_str).collect();
        let f = judge(&list(400, &all[..15]), &list(400, &all)).unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.message
                .contains("the old rules could already cost 12,030,030"),
            "{}",
            f.message
        );
    }

    #[test]
    fn rules_past_the_budget_only_at_request_sized_lists_are_info() {
        let unbounded = |rules: &[&str]| {
            schema(json!({"type": "object", "properties": {"xs": {
                "type": "array",
                "items": {"type": "integer",
                    "x-kubernetes-validations": rules.iter().map(|r| json!({"rule": r})).collect::<Vec<_>>()},
            }}}))
        };
        let f = judge(
            &unbounded(&["self >= 0"]),
            &unbounded(&["self >= 0", "self >= 1", "self >= 2", "self >= 3"]),
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.message.contains("the declared sizes account for only 0")
                && f.message
                    .contains("^.xs: as many items as fit in a request"),
            "{}",
            f.message
        );
    }

    #[test]
    fn rules_kept_or_removed_are_not_reported() {
        let many: Vec<String> = (0..40)
            .map(|i| format!("self.all(x, self.all(y, x >= {i}))"))
            .collect();
        let all: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(judge(&list(400, &all), &list(400, &all)).is_none());
        assert!(judge(&list(400, &all), &list(400, &all[..30])).is_none());
    }

    #[test]
    fn costing_only_the_paths_to_rules_costs_what_the_whole_schema_does() {
        let s = schema(json!({"type": "object", "properties": {
            "spec": {"type": "object", "description": "no rule here", "properties": {
                "plain": {"type": "string", "description": "never read"},
                "xs": {"type": "array", "maxItems": 20, "items": {"type": "object",
                    "properties": {
                        "name": {"type": "string", "maxLength": 30,
                            "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]},
                        "other": {"type": "integer"}}}},
                "labels": {"type": "object", "maxProperties": 8,
                    "additionalProperties": {"type": "string", "maxLength": 12,
                        "x-kubernetes-validations": [{"rule": "self.size() > 1"}]}},
                "tags": {"type": "object", "maxProperties": 3, "properties": {
                    "t": {"type": "string", "maxLength": 5,
                        "x-kubernetes-validations": [{"rule": "self != 'x'"}]}},
                    "additionalProperties": {"type": "string"}}}}}}));
        let whole = match s.to_value() {
            Value::Object(root) => worst_case(&root, KubeVersion::NEWEST.minor),
            _ => ObjectCost::default(),
        };
        assert_eq!(whole.rules.len(), 3);
        assert_eq!(costed(&s), whole);
        let pruned = to_be_costed(&s).unwrap();
        assert!(
            pruned
                .pointer("/properties/spec/properties/plain")
                .is_none()
        );
        assert!(
            pruned
                .pointer("/properties/spec/properties/xs/items/properties/other")
                .is_none()
        );
        // A map stays a map, for how often the rules below it run.
        assert_eq!(
            pruned.pointer("/properties/spec/properties/tags/additionalProperties"),
            Some(&json!({}))
        );
        assert_eq!(to_be_costed(&schema(json!({"type": "string"}))), None);
    }
}
