//! Whether a `oneOf` branch added to a schema breaks values that were
//! valid: `oneOf` means exactly one branch matches, so a value that matched
//! one old branch and also matches the new one is rejected.
//!
//! Decided for branches written the usual way (only `required` and
//! `properties` whose schemas are empty or an `enum`): two such branches
//! overlap unless a property both require (or one requires) has enums that
//! share no value. An overlap is proven with a witness: an object holding
//! the properties both branches require, with values both allow, that
//! matched exactly one old branch. Anything else is undecided.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::fields::DOC_KEYWORDS;

/// The verdict on the added branches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlap {
    /// A value valid before matches two branches now; the witness names it.
    Proven(String),
    /// The new branches share no value with the old ones.
    Disjoint,
    /// The branches are not simple enough to decide.
    Undecided,
}

/// A branch made only of required properties and per-property enums.
struct Simple {
    required: BTreeSet<String>,
    /// Property -> allowed values (`None`: unconstrained).
    enums: BTreeMap<String, Option<Vec<Value>>>,
}

fn simple(b: &Value) -> Option<Simple> {
    let m = b.as_object()?;
    let mut s = Simple {
        required: BTreeSet::new(),
        enums: BTreeMap::new(),
    };
    for (k, v) in m {
        match k.as_str() {
            "required" => {
                for r in v.as_array()? {
                    s.required.insert(r.as_str()?.to_string());
                }
            }
            "properties" => {
                for (p, ps) in v.as_object()? {
                    let pm = ps.as_object()?;
                    let mut allowed = None;
                    for (pk, pv) in pm {
                        match pk.as_str() {
                            "enum" => allowed = Some(pv.as_array()?.clone()),
                            k if DOC_KEYWORDS.contains(&k) => {}
                            _ => return None,
                        }
                    }
                    s.enums.insert(p.clone(), allowed);
                }
            }
            k if DOC_KEYWORDS.contains(&k) => {}
            _ => return None,
        }
    }
    Some(s)
}

/// An object both branches accept, as `{property: value-or-"any"}`, or
/// `None` when they exclude each other.
fn witness(a: &Simple, b: &Simple) -> Option<BTreeMap<String, Option<Value>>> {
    let mut w = BTreeMap::new();
    for p in a.required.union(&b.required) {
        let ea = a.enums.get(p).cloned().flatten();
        let eb = b.enums.get(p).cloned().flatten();
        let value = match (ea, eb) {
            (Some(x), Some(y)) => Some(x.into_iter().find(|v| y.contains(v))?),
            (Some(x), None) | (None, Some(x)) => Some(x.into_iter().next()?),
            (None, None) => None,
        };
        w.insert(p.clone(), value);
    }
    Some(w)
}

/// Whether branch `s` accepts the witness `w` (properties absent from `w`
/// are absent from the object).
fn accepts(s: &Simple, w: &BTreeMap<String, Option<Value>>) -> bool {
    s.required.iter().all(|r| w.contains_key(r))
        && s.enums
            .iter()
            .all(|(p, allowed)| match (w.get(p), allowed) {
                (Some(Some(v)), Some(vals)) => vals.contains(v),
                // An unconstrained value can be chosen inside the enum.
                (Some(None), Some(vals)) => !vals.is_empty(),
                _ => true,
            })
}

fn describe(w: &BTreeMap<String, Option<Value>>) -> String {
    if w.is_empty() {
        return "{} (any object)".into();
    }
    let parts: Vec<String> = w
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{k}: {v}"),
            None => format!("{k}: ..."),
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Judges a `oneOf` whose branches went from `old` to `new`, where
/// `added[i]` says whether `new[i]` is a branch `old` did not have, for a
/// node that allows at most `max_properties` fields.
pub fn added_branches(
    old: &[Value],
    new: &[Value],
    added: &[bool],
    max_properties: Option<u64>,
) -> Overlap {
    let (Some(old), Some(new)) = (
        old.iter().map(simple).collect::<Option<Vec<_>>>(),
        new.iter().map(simple).collect::<Option<Vec<_>>>(),
    ) else {
        return Overlap::Undecided;
    };
    let mut any_overlap = false;
    for (i, x) in new.iter().enumerate() {
        for (j, y) in new.iter().enumerate() {
            // Pairs of distinct branches, at least one of them new.
            if j <= i || !(added.get(i) == Some(&true) || added.get(j) == Some(&true)) {
                continue;
            }
            let Some(w) = witness(x, y) else { continue };
            if max_properties.is_some_and(|m| (w.len() as u64) > m) {
                // Too many fields for the node: this pair cannot meet.
                continue;
            }
            any_overlap = true;
            // Valid before: exactly one old branch accepted it; now two do.
            if old.iter().filter(|o| accepts(o, &w)).count() == 1 {
                return Overlap::Proven(describe(&w));
            }
        }
    }
    if any_overlap {
        // They meet only on values that were not valid before, which does
        // not show that a valid value breaks, nor that none does.
        Overlap::Undecided
    } else {
        Overlap::Disjoint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arr(v: Value) -> Vec<Value> {
        v.as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn a_branch_on_another_required_field_overlaps() {
        let old = arr(json!([{"required": ["a"]}, {"required": ["b"]}]));
        let new = arr(json!([{"required": ["a"]}, {"required": ["b"]}, {"required": ["c"]}]));
        let added = [false, false, true];
        assert_eq!(
            added_branches(&old, &new, &added, None),
            Overlap::Proven("{a: ..., c: ...}".into())
        );
        // A node that allows one field only never holds both.
        assert_eq!(
            added_branches(&old, &new, &added, Some(1)),
            Overlap::Disjoint
        );
    }

    #[test]
    fn a_rewritten_branch_does_not_overlap_the_one_it_replaces() {
        let old = arr(json!([{"properties": {"a": {}}}]));
        let new = arr(json!([{"properties": {"a": {}, "b": {}}}]));
        assert_eq!(added_branches(&old, &new, &[true], None), Overlap::Disjoint);
    }

    #[test]
    fn a_new_discriminator_value_is_disjoint() {
        let branch = |k: &str| json!({"required": ["kind"], "properties": {"kind": {"enum": [k]}}});
        let old = vec![branch("a"), branch("b")];
        let new = vec![branch("a"), branch("b"), branch("c")];
        let added = [false, false, true];
        assert_eq!(added_branches(&old, &new, &added, None), Overlap::Disjoint);
        let bc = json!({"required": ["kind"], "properties": {"kind": {"enum": ["b", "c"]}}});
        let new = vec![branch("a"), branch("b"), bc];
        assert_eq!(
            added_branches(&old, &new, &added, None),
            Overlap::Proven("{kind: \"b\"}".into())
        );
    }

    #[test]
    fn branches_with_other_keywords_are_undecided() {
        let old = arr(json!([{"required": ["a"]}]));
        let new = arr(json!([{"required": ["a"]}, {"not": {"required": ["a"]}}]));
        assert_eq!(
            added_branches(&old, &new, &[false, true], None),
            Overlap::Undecided
        );
    }
}
