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

use crate::cel::budget::{ObjectCost, RUNTIME_BUDGET, RuleCost, worst_case};
use crate::crd::Crd;
use crate::kube_version::KubeVersion;
use crate::schema::{AdditionalProperties, FieldPath, Schema};
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

/// The `(node, rule)` pairs of a schema.
fn rules(s: &Schema, at: &FieldPath, out: &mut Vec<(String, String)>) {
    if let Some(Value::Array(rs)) = s.keyword("x-kubernetes-validations") {
        for r in rs {
            if let Some(text) = r.get("rule").and_then(Value::as_str) {
                out.push((at.to_string(), text.to_string()));
            }
        }
    }
    for (name, child) in s.properties.iter() {
        rules(child, &at.property(name), out);
    }
    if let Some(items) = &s.items {
        rules(items, &at.items(), out);
    }
    if let Some(AdditionalProperties::Schema(v)) = &s.additional_properties {
        rules(v, &at.map_values(), out);
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
    match s.to_value() {
        Value::Object(root) => worst_case(&root, KubeVersion::NEWEST.minor),
        _ => ObjectCost::default(),
    }
}

/// The finding for one version, if its rules can now exhaust the budget.
fn judge(old: &Schema, new: &Schema) -> Option<Finding> {
    let (mut old_rules, mut new_rules) = (Vec::new(), Vec::new());
    rules(old, &FieldPath::root(), &mut old_rules);
    rules(new, &FieldPath::root(), &mut new_rules);
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
}
