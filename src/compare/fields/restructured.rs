//! Restructurings that accept exactly the same values: value constraints
//! moved between an `allOf` branch and the node itself, and a branch
//! spelling out the type its node already has. Generators do both between
//! releases (controller-gen turned `allOf: [{enum}, {enum}]` into one
//! `enum`); comparing how the schema is written would report a tightening
//! that is not there, so the checks compare the folded forms built here.

use serde_json::{Map, Value};

use super::docs::DOC_KEYWORDS;
use super::{Node, Severity};
use crate::compare::{Check, Fold};
use crate::json::json_eq;
use crate::schema::Schema;

/// The keywords an `allOf` branch may carry and still be folded into its
/// node, with how each combines: those of the checks whose catalog row
/// declares a [`Fold`], at the keyword each compares.
fn foldable() -> impl Iterator<Item = (&'static str, Fold)> {
    Check::ALL
        .iter()
        .filter_map(|&c| Some((super::reported_keyword(c)?, c.folds()?)))
}

fn merge_rule(key: &str) -> Option<Fold> {
    foldable().find(|(k, _)| *k == key).map(|(_, m)| m)
}

/// `a` and `b` combined by `rule`, or none when one keyword cannot say both.
fn merge(rule: Fold, a: &Value, b: &Value) -> Option<Value> {
    let number = |v: &Value| v.as_f64();
    match rule {
        Fold::Same => json_eq(a, b).then(|| a.clone()),
        Fold::Max | Fold::Min => {
            let (x, y) = (number(a)?, number(b)?);
            let first = if matches!(rule, Fold::Max) {
                x >= y
            } else {
                x <= y
            };
            Some(if first { a.clone() } else { b.clone() })
        }
        Fold::Intersect => {
            let (x, y) = (a.as_array()?, b.as_array()?);
            Some(Value::Array(
                x.iter()
                    .filter(|v| y.iter().any(|w| json_eq(v, w)))
                    .cloned()
                    .collect(),
            ))
        }
    }
}

/// The node with every `allOf` branch that only carries foldable
/// keywords (and documentation) merged into it, when the merge is exact.
/// Branches that cannot be merged stay in `allOf`, in their order; the
/// node is returned unchanged (`None`) when nothing folds.
pub(super) fn fold_all_of(node: &Schema) -> Option<Schema> {
    let branches = node.keyword("allOf")?.as_array()?;
    // With an exclusive bound, `minimum` and `maximum` no longer combine
    // by max and min.
    if ["exclusiveMinimum", "exclusiveMaximum"]
        .iter()
        .any(|k| node.keywords.contains_key(*k))
    {
        return None;
    }
    let mut keywords = node.keywords.clone();
    let mut kept = Vec::new();
    for branch in branches {
        match fold_branch(&keywords, branch) {
            Some(merged) => keywords.extend(merged),
            None => kept.push(branch.clone()),
        }
    }
    if kept.len() == branches.len() {
        return None;
    }
    if kept.is_empty() {
        keywords.remove("allOf");
    } else {
        keywords.insert("allOf".into(), Value::Array(kept));
    }
    Some(Schema {
        keywords,
        ..node.clone()
    })
}

/// The keywords `branch` sets on a node holding `keywords`, or none when
/// the branch cannot be folded.
fn fold_branch(
    keywords: &crate::schema::SortedMap<Value>,
    branch: &Value,
) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for (key, value) in branch.as_object()? {
        if DOC_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        let rule = merge_rule(key)?;
        let merged = match keywords.get(key) {
            Some(current) => merge(rule, current, value)?,
            None => value.clone(),
        };
        out.insert(key.clone(), merged);
    }
    Some(out)
}

/// `branch` of a junctor under `parent`, without the `type` keywords that
/// repeat what `parent` already requires at the same place (the branch
/// only sees values of that type anyway).
pub(super) fn without_implied_types(branch: &Value, parent: Option<&Schema>) -> Value {
    let Value::Object(map) = branch else {
        return branch.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "type" if parent.and_then(|p| p.keyword("type")) == Some(value) => {}
            "properties" => {
                let props = value.as_object().map(|props| {
                    props
                        .iter()
                        .map(|(name, s)| {
                            let under = parent.and_then(|p| p.properties.get(name));
                            (name.clone(), without_implied_types(s, under))
                        })
                        .collect::<Map<String, Value>>()
                });
                out.insert(key.clone(), props.map_or(value.clone(), Value::Object));
            }
            "items" => {
                let under = parent.and_then(|p| p.items.as_deref());
                out.insert(key.clone(), without_implied_types(value, under));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

impl Node<'_, '_> {
    /// Reports, at info, an `allOf` that changed on paper only: folded into
    /// the node, both sides accept the same values. `raw_old` and
    /// `raw_new` are the nodes as written; `self` holds the folded ones.
    pub(super) fn all_of_restructured(&mut self, raw_old: &Schema, raw_new: &Schema) {
        let (o, n) = (raw_old.keyword("allOf"), raw_new.keyword("allOf"));
        let same = |a: &Schema, b: &Schema| {
            foldable().chain([("allOf", Fold::Same)]).all(|(k, _)| {
                match (a.keyword(k), b.keyword(k)) {
                    (None, None) => true,
                    (Some(x), Some(y)) => json_eq(x, y),
                    _ => false,
                }
            })
        };
        let changed = match (o, n) {
            (None, None) => false,
            (Some(x), Some(y)) => !json_eq(x, y),
            _ => true,
        };
        if !changed || !same(self.old, self.new) {
            return;
        }
        let (o, n) = (o.cloned(), n.cloned());
        self.emit(
            Check::AllOf,
            Severity::Info,
            "restructured: value constraints moved between allOf and the field itself; the same values \
are accepted"
                .to_string(),
            o.as_ref(),
            n.as_ref(),
        );
    }
}
