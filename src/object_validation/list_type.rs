//! `x-kubernetes-list-type: set|map` uniqueness, and the bounded JSON
//! equality it and `enum` need.
//!
//! Items are compared by value, with numbers equal when numerically equal
//! (`1` and `1.0` are one value). Values nesting deeper than [`EQ_DEPTH`] are
//! never equal, so hostile input cannot exhaust the stack.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value};

/// How deep hashing looks into a value (equal values still hash equally;
/// deeper levels only add collisions).
pub(crate) const EQ_DEPTH: usize = 64;

/// Bounded, exact, number-aware JSON equality: the crate's one
/// ([`crate::json::json_eq`]).
pub(crate) use crate::json::json_eq;

fn hash_at(v: &Value, h: &mut DefaultHasher, depth: usize) {
    if depth > EQ_DEPTH {
        return;
    }
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => {
            // Equal numbers must hash equally: hash the f64 form.
            2u8.hash(h);
            n.as_f64().map(f64::to_bits).hash(h);
        }
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for x in a {
                hash_at(x, h, depth + 1);
            }
        }
        Value::Object(o) => {
            // Order-independent: sum of per-entry hashes.
            let mut sum = 0u64;
            for (k, x) in o {
                let mut eh = DefaultHasher::new();
                k.hash(&mut eh);
                hash_at(x, &mut eh, depth + 1);
                sum = sum.wrapping_add(eh.finish());
            }
            (5u8, o.len(), sum).hash(h);
        }
    }
}

/// Indices of items equal to an earlier item, by `key` (the item itself for
/// sets, the key tuple for maps). `None` keys (non-objects in a map list,
/// nulls) take no part.
pub(crate) fn duplicates<K>(n: usize, key: K) -> Vec<usize>
where
    K: Fn(usize, &mut dyn FnMut(&[Option<&Value>])),
{
    // Small lists: compare pairwise, no allocation on the happy path.
    let tuple_eq = |a: &[Option<&Value>], b: &[Option<&Value>]| {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| match (x, y) {
                (None, None) => true,
                (Some(x), Some(y)) => json_eq(x, y),
                _ => false,
            })
    };
    let mut dups = Vec::new();
    if n <= 16 {
        for i in 1..n {
            let mut dup = false;
            key(i, &mut |ki| {
                for j in 0..i {
                    key(j, &mut |kj| {
                        if !dup && tuple_eq(ki, kj) {
                            dup = true;
                        }
                    });
                    if dup {
                        break;
                    }
                }
            });
            if dup {
                dups.push(i);
            }
        }
        return dups;
    }
    let mut hashed: Vec<(u64, usize)> = (0..n)
        .map(|i| {
            let mut h = DefaultHasher::new();
            key(i, &mut |k| {
                for part in k {
                    match part {
                        Some(v) => hash_at(v, &mut h, 0),
                        None => 9u8.hash(&mut h),
                    }
                }
            });
            (h.finish(), i)
        })
        .collect();
    hashed.sort_unstable();
    let mut start = 0;
    while start < hashed.len() {
        let mut end = start + 1;
        while end < hashed.len() && hashed[end].0 == hashed[start].0 {
            end += 1;
        }
        for a in start + 1..end {
            let i = hashed[a].1;
            let mut dup = false;
            key(i, &mut |ki| {
                for b in &hashed[start..a] {
                    key(b.1, &mut |kj| {
                        if !dup && tuple_eq(ki, kj) {
                            dup = true;
                        }
                    });
                }
            });
            if dup {
                dups.push(i);
            }
        }
        start = end;
    }
    dups.sort_unstable();
    dups
}

/// The key tuple of a list-map item, as an object for messages.
pub(crate) fn key_object(keys: &[String], parts: &[Option<&Value>]) -> Value {
    let mut m = Map::new();
    for (k, v) in keys.iter().zip(parts) {
        if let Some(v) = v {
            m.insert(k.clone(), (*v).clone());
        }
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set_dups(items: &[Value]) -> Vec<usize> {
        duplicates(items.len(), |i, f| f(&[Some(&items[i])]))
    }

    #[test]
    fn equality_is_number_aware_and_order_free() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(!json_eq(&json!(1), &json!("1")));
        assert!(json_eq(
            &json!({"a": 1, "b": [1, 2]}),
            &json!({"b": [1, 2], "a": 1})
        ));
        assert!(!json_eq(&json!([1, 2]), &json!([2, 1])));
    }

    #[test]
    fn set_duplicates_are_the_later_indices() {
        let items = [json!("a"), json!("b"), json!("a"), json!("a")];
        assert_eq!(set_dups(&items), [2, 3]);
        let many: Vec<Value> = (0..40).map(|i| json!(i % 30)).collect();
        assert_eq!(set_dups(&many), (30..40).collect::<Vec<_>>());
        let objs = [json!({"x": 1, "y": 2}), json!({"y": 2, "x": 1})];
        assert_eq!(set_dups(&objs), [1]);
        assert!(set_dups(&[json!(1), json!(2)]).is_empty());
    }

    #[test]
    fn deep_values_do_not_recurse_without_bound() {
        let mut v = json!(1);
        for _ in 0..400 {
            v = json!([v]);
        }
        // Too deep to compare: never equal, and no stack overflow.
        assert!(!json_eq(&v, &v.clone()));
    }
}
