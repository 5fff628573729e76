//! The models of stored CRDs read already. Every UPDATE review carries the
//! CRD as stored (`oldObject`), and while it stays unchanged the reviews of
//! new versions of it (an author's dry runs with edits, an operator's
//! upgrade tried against a cluster several times) would read it again: half
//! of a new pair's cost. The last few are kept, matched on their exact JSON
//! rather than a digest, so that nobody who may write CRDs can make one
//! stand for another.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use hyper::body::Bytes;

use super::error::ReviewError;
use crate::crd::Crd;

/// Models kept: the CRD being worked on and one more (a chart's CRDs are
/// reviewed one after another, each against its own stored CRD).
const MODELS: usize = 2;

/// The stored JSON of the models kept, in bytes, together: what bounds the
/// cache's memory, outside the judgments' budget. A model with its JSON
/// tree takes several times its JSON, so this keeps at most tens of MB
/// (figures: docs/BENCHMARKS.md, "A CRD's model and JSON tree in memory").
const MAX_JSON: usize = 3 * 1024 * 1024;

/// Stored CRDs' models, most recently used first.
#[derive(Default)]
pub struct StoredModels {
    inner: Mutex<VecDeque<(Bytes, Arc<Crd>)>>,
}

impl StoredModels {
    /// The model of the stored CRD whose JSON is `raw`, read by `read`
    /// unless it is kept; a CRD that cannot be read is not kept.
    pub fn get_or_read(
        &self,
        raw: &[u8],
        read: impl FnOnce(&[u8]) -> Result<Crd, ReviewError>,
    ) -> Result<Arc<Crd>, ReviewError> {
        {
            let mut kept = self.kept();
            if let Some(at) = kept.iter().position(|(json, _)| json[..] == raw[..])
                && let Some(hit) = kept.remove(at)
            {
                let model = Arc::clone(&hit.1);
                kept.push_front(hit);
                return Ok(model);
            }
        }
        // Read outside the lock: other reviews go on meanwhile.
        let model = Arc::new(read(raw)?);
        if raw.len() <= MAX_JSON {
            let mut kept = self.kept();
            kept.retain(|(json, _)| json[..] != raw[..]);
            kept.push_front((Bytes::copy_from_slice(raw), Arc::clone(&model)));
            let mut total = 0;
            let mut keep = 0;
            for (json, _) in kept.iter() {
                if keep == MODELS || total + json.len() > MAX_JSON {
                    break;
                }
                total += json.len();
                keep += 1;
            }
            kept.truncate(keep);
        }
        Ok(model)
    }

    /// The models, even after a panic elsewhere while they were locked
    /// (each entry is whole: nothing is half-written under the lock).
    fn kept(&self) -> MutexGuard<'_, VecDeque<(Bytes, Arc<Crd>)>> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd_json(name: &str, padding: usize) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "annotations": {"pad": "p".repeat(padding)}},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}
        }))
        .unwrap()
    }

    fn read(raw: &[u8]) -> Result<Crd, ReviewError> {
        let unreadable = |e: &dyn std::fmt::Display| ReviewError::unreadable(e.to_string());
        let value = serde_json::from_slice(raw).map_err(|e| unreadable(&e))?;
        Crd::from_manifest(value).map_err(|e| unreadable(&e))
    }

    #[test]
    fn the_same_stored_json_is_read_once_and_other_json_is_read_anew() {
        let models = StoredModels::default();
        let reads = std::cell::Cell::new(0);
        let counted = |raw: &[u8]| {
            reads.set(reads.get() + 1);
            read(raw)
        };
        let a = crd_json("widgets.example.com", 0);
        let first = models.get_or_read(&a, counted).unwrap();
        let again = models.get_or_read(&a, counted).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(reads.get(), 1);
        // One byte different (a longer annotation) is another CRD.
        let b = crd_json("widgets.example.com", 1);
        let other = models.get_or_read(&b, counted).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(reads.get(), 2);
        // Two are kept: the third pushes out the least recently used.
        models.get_or_read(&a, counted).unwrap();
        models
            .get_or_read(&crd_json("gadgets.example.com", 0), counted)
            .unwrap();
        assert_eq!(reads.get(), 3);
        models.get_or_read(&a, counted).unwrap();
        assert_eq!(reads.get(), 3);
        models.get_or_read(&b, counted).unwrap();
        assert_eq!(reads.get(), 4);
    }

    #[test]
    fn unreadable_crds_and_json_past_the_bound_are_not_kept() {
        let models = StoredModels::default();
        assert!(models.get_or_read(b"{}", read).is_err());
        assert!(models.kept().is_empty());
        let large = crd_json("widgets.example.com", MAX_JSON);
        models.get_or_read(&large, read).unwrap();
        assert!(models.kept().is_empty());
        // Two that fit one at a time but not together: the newer stays.
        let half = crd_json("widgets.example.com", MAX_JSON / 2 + 1);
        let other = crd_json("gadgets.example.com", MAX_JSON / 2 + 1);
        models.get_or_read(&half, read).unwrap();
        models.get_or_read(&other, read).unwrap();
        let kept = models.kept();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].1.name, "gadgets.example.com");
    }
}
