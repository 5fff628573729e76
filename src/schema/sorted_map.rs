//! A string-keyed map kept as one vector sorted by key.
//!
//! Schema nodes hold a handful of keywords and properties, and a CRD holds
//! thousands of nodes. A `BTreeMap` allocates a node of eleven slots even for
//! one entry, which made the model a third of a `diff`'s peak memory; a
//! vector of exactly the entries read is a fraction of that, compares with
//! one `memcmp`-like pass, and is as fast to look up at these sizes.
//! Iteration is in key order, as with the `BTreeMap` it replaces.

use std::borrow::Borrow;

/// A map from `String` to `V`, sorted by key, each key at most once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortedMap<V> {
    entries: Vec<(String, V)>,
}

impl<V> Default for SortedMap<V> {
    fn default() -> Self {
        SortedMap {
            entries: Vec::new(),
        }
    }
}

impl<V> SortedMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value under `key`.
    pub fn get<Q: Borrow<str> + ?Sized>(&self, key: &Q) -> Option<&V> {
        self.find(key.borrow()).ok().map(|i| &self.entries[i].1)
    }

    /// The stored key and value under `key`.
    pub fn get_key_value(&self, key: &str) -> Option<(&String, &V)> {
        self.find(key).ok().map(|i| {
            let (k, v) = &self.entries[i];
            (k, v)
        })
    }

    /// Whether `key` is present.
    pub fn contains_key<Q: Borrow<str> + ?Sized>(&self, key: &Q) -> bool {
        self.find(key.borrow()).is_ok()
    }

    /// Sets `key` to `value`, returning the value it replaces.
    pub fn insert(&mut self, key: String, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// Takes `key` out of the map.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        self.find(key).ok().map(|i| self.entries.remove(i).1)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in key order.
    pub fn iter(&self) -> Iter<'_, V> {
        Iter {
            inner: self.entries.iter(),
        }
    }

    /// Keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    /// Values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Values in key order, mutable.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + ExactSizeIterator {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// The same keys with each value changed by `f` (the order stays).
    pub fn map_values<W>(self, mut f: impl FnMut(V) -> W) -> SortedMap<W> {
        SortedMap {
            entries: self.entries.into_iter().map(|(k, v)| (k, f(v))).collect(),
        }
    }

    /// Restores the invariant after entries were pushed unsorted: sorted by
    /// key, and of a repeated key the last value kept (what inserting them
    /// one by one would leave).
    fn normalize(&mut self) {
        // Reversed, then sorted stably: of equal keys the last pushed comes
        // first, and `dedup` keeps the first of a run. Linear after the
        // sort even when a made-up document repeats one key many times.
        self.entries.reverse();
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        self.entries.dedup_by(|later, earlier| later.0 == earlier.0);
        self.entries.shrink_to_fit();
    }
}

impl<V> FromIterator<(String, V)> for SortedMap<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        let mut map = SortedMap {
            entries: iter.into_iter().collect(),
        };
        map.normalize();
        map
    }
}

impl<V> Extend<(String, V)> for SortedMap<V> {
    fn extend<I: IntoIterator<Item = (String, V)>>(&mut self, iter: I) {
        self.entries.extend(iter);
        self.normalize();
    }
}

impl<V, const N: usize> From<[(String, V); N]> for SortedMap<V> {
    fn from(entries: [(String, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

/// Borrowing iterator over a [`SortedMap`], yielding `(&key, &value)` like
/// the standard maps.
pub struct Iter<'a, V> {
    inner: std::slice::Iter<'a, (String, V)>,
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a String, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|(k, v)| (k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<V> DoubleEndedIterator for Iter<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|(k, v)| (k, v))
    }
}

impl<V> ExactSizeIterator for Iter<'_, V> {}

impl<'a, V> IntoIterator for &'a SortedMap<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<V> IntoIterator for SortedMap<V> {
    type Item = (String, V);
    type IntoIter = std::vec::IntoIter<(String, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<V> std::ops::Index<&str> for SortedMap<V> {
    type Output = V;

    /// Panics when `key` is absent, like the standard maps (for tests and
    /// keys already known present).
    fn index(&self, key: &str) -> &V {
        match self.get(key) {
            Some(v) => v,
            None => panic!("no entry for key {key:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SortedMap;
    use std::collections::BTreeMap;

    /// Any sequence of inserts and removes leaves the same entries, in the
    /// same order, as a `BTreeMap` given the same operations.
    #[test]
    fn behaves_like_a_btree_map() {
        let keys = ["type", "a", "description", "z", "a", "enum", "type", "m"];
        let mut ours = SortedMap::new();
        let mut std = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(ours.insert(k.to_string(), i), std.insert(k.to_string(), i));
            if i % 3 == 2 {
                assert_eq!(ours.remove("a"), std.remove("a"));
            }
            let a: Vec<_> = ours.iter().collect();
            let b: Vec<_> = std.iter().collect();
            assert_eq!(a, b);
        }
        assert_eq!(ours.get("type"), std.get("type"));
        assert_eq!(ours.get("nope"), None);
        assert!(ours.contains_key("m") && !ours.contains_key("q"));
    }

    #[test]
    fn collecting_sorts_and_keeps_the_last_of_a_repeated_key() {
        let map: SortedMap<i32> = [("b", 1), ("a", 2), ("b", 3), ("c", 4), ("a", 5)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let got: Vec<_> = map.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(got, [("a", 5), ("b", 3), ("c", 4)]);
    }

    #[test]
    fn extend_overrides_like_insert() {
        let mut map = SortedMap::from([("x".to_string(), 1), ("y".to_string(), 2)]);
        map.extend([("y".to_string(), 20), ("w".to_string(), 0)]);
        let got: Vec<_> = map.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(got, [("w", 0), ("x", 1), ("y", 20)]);
    }
}
