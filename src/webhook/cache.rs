//! Verdicts already reached, by what they depend on. The same pair of
//! CRDs reaches the webhook again and again: `kubectl diff` or a server
//! dry run before every apply, Argo CD's server-side diff on every refresh,
//! Helm's retries, and the same release on both replicas' neighbours. The
//! findings of a pair depend only on the old spec and stored versions
//! (and whether the stored CRD was applied client-side), the new spec and
//! annotations, the configuration and the server's version, so they are kept
//! under a hash of those (the break-glass annotations, the object count and
//! the scan are decided anew every time). Requests for a pair being judged
//! wait for that judgment instead of repeating it.
//!
//! This is what keeps 20 concurrent reviews of the largest corpus CRD near
//! the latency of one (figures: docs/BENCHMARKS.md, "Admission webhook
//! latency and memory").

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use super::decision::Operation;
use super::error::ReviewError;
use crate::compare::Finding;

/// Pairs remembered.
const CAPACITY: usize = 512;

/// Findings remembered over all pairs: what bounds the cache's memory. A
/// typical pair has a few findings, the largest corpus CRD's upgrade a
/// few hundred errors and warnings, so this keeps a few MiB. Info findings
/// never reach a verdict and are not kept: with them, `serve` grew with
/// every new pair in the bench (figures: docs/BENCHMARKS.md, "The verdict
/// cache's findings").
const MAX_FINDINGS: usize = 8192;

/// What a verdict depends on: everything of the two objects a judgment
/// reads ([`super::request::read_crd`] keeps nothing else of them), and
/// what it is judged under. Both objects are the one the request names
/// ([`super::request::Request::inconsistency`] refuses any other), so
/// the name stands for theirs.
#[derive(Hash)]
pub struct Key<'a> {
    /// The CRD's name.
    pub name: &'a str,
    /// CREATE or UPDATE.
    pub operation: Operation,
    /// Both objects' annotations, raw (the size and Helm checks read some).
    pub new_annotations: &'a str,
    pub old_annotations: &'a str,
    /// The old spec and `status.storedVersions`, raw (empty on CREATE).
    pub old_spec: &'a str,
    pub old_stored: &'a str,
    /// The new spec, raw.
    pub new_spec: &'a str,
    /// The new and old objects' JSON lengths as sent (`crdSize` measures
    /// them: [`super::request::read_crd`] takes these, not its own).
    pub lengths: (usize, usize),
    /// Which configuration was in force (bumped on every reload).
    pub config_generation: u64,
    /// The server's minor version.
    pub kube_minor: u32,
}

type Slot = Arc<OnceCell<Arc<Vec<Finding>>>>;

/// A bounded map from keys to findings, oldest out first. Keys are kept
/// as 64-bit SipHash digests under keys drawn at random when the process
/// starts: whoever can write CRDs cannot compute them, so cannot make an
/// unsafe pair collide with a safe one that was judged already.
#[derive(Default)]
pub struct VerdictCache {
    hasher: RandomState,
    inner: Mutex<Entries>,
}

/// The slots by key, their keys oldest first, and the findings they hold.
#[derive(Default)]
struct Entries {
    slots: HashMap<u64, (Slot, usize)>,
    order: VecDeque<u64>,
    findings: usize,
}

impl Entries {
    /// Drops the oldest slots while more than `CAPACITY` pairs or
    /// `MAX_FINDINGS` findings are kept, never the newest one.
    fn trim(&mut self) {
        while self.order.len() > 1 && (self.order.len() > CAPACITY || self.findings > MAX_FINDINGS)
        {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some((_, weight)) = self.slots.remove(&oldest) {
                self.findings -= weight;
            }
        }
    }
}

impl VerdictCache {
    /// The findings for `key`, judged by `judge` unless they are known or
    /// being judged; a failed judgment is not kept.
    pub async fn get_or_judge<F, Fut>(
        &self,
        key: &Key<'_>,
        judge: F,
    ) -> Result<Arc<Vec<Finding>>, ReviewError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Vec<Finding>, ReviewError>>,
    {
        let id = self.hasher.hash_one(key);
        let slot = {
            let mut entries = self.entries();
            match entries.slots.get(&id) {
                Some((slot, _)) => Arc::clone(slot),
                None => {
                    let slot: Slot = Arc::default();
                    entries.slots.insert(id, (Arc::clone(&slot), 0));
                    entries.order.push_back(id);
                    entries.trim();
                    slot
                }
            }
        };
        let mut judged_here = false;
        let result = slot
            .get_or_try_init(|| async {
                judged_here = true;
                judge().await.map(Arc::new)
            })
            .await
            .cloned();
        let mut entries = self.entries();
        match &result {
            Err(_) => {
                if let Some((_, weight)) = entries.slots.remove(&id) {
                    entries.findings -= weight;
                }
                entries.order.retain(|k| *k != id);
            }
            // Weighed once, by the review that judged it.
            Ok(findings) if judged_here => {
                if let Some((_, weight)) = entries.slots.get_mut(&id) {
                    *weight = findings.len();
                    entries.findings += findings.len();
                    entries.trim();
                }
            }
            Ok(_) => {}
        }
        result
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Check, Severity};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn key(new_spec: &str) -> Key<'_> {
        Key {
            name: "w",
            operation: Operation::Update,
            new_annotations: "",
            old_annotations: "",
            old_spec: "{}",
            old_stored: "[\"v1\"]",
            new_spec,
            lengths: (100, 100),
            config_generation: 0,
            kube_minor: 34,
        }
    }

    #[tokio::test]
    async fn a_pair_is_judged_once_and_a_different_pair_again() {
        let cache = VerdictCache::default();
        let judged = AtomicUsize::new(0);
        let judge = || async {
            judged.fetch_add(1, Ordering::SeqCst);
            Ok(vec![Finding::new(Check::Enum, Severity::Error, "x")])
        };
        let a = cache.get_or_judge(&key("{\"a\":1}"), judge).await.unwrap();
        let b = cache.get_or_judge(&key("{\"a\":1}"), judge).await.unwrap();
        assert_eq!(a, b);
        assert_eq!(judged.load(Ordering::SeqCst), 1);
        cache.get_or_judge(&key("{\"a\":2}"), judge).await.unwrap();
        assert_eq!(judged.load(Ordering::SeqCst), 2);
        // The same specs with anything else a judgment reads changed:
        // another pair each time.
        let client_side = r#"{"kubectl.kubernetes.io/last-applied-configuration":"{}"}"#;
        let others = [
            Key {
                old_annotations: client_side,
                ..key("{\"a\":2}")
            },
            Key {
                new_annotations: client_side,
                ..key("{\"a\":2}")
            },
            Key {
                operation: Operation::Create,
                ..key("{\"a\":2}")
            },
            Key {
                lengths: (300_000, 100),
                ..key("{\"a\":2}")
            },
            Key {
                name: "decoy",
                ..key("{\"a\":2}")
            },
        ];
        for (n, other) in others.iter().enumerate() {
            cache.get_or_judge(other, judge).await.unwrap();
            assert_eq!(judged.load(Ordering::SeqCst), 3 + n);
        }
    }

    #[tokio::test]
    async fn the_cache_keeps_at_most_its_share_of_findings_oldest_out_first() {
        let cache = VerdictCache::default();
        let many = |n: usize| {
            move || async move {
                Ok((0..n)
                    .map(|_| Finding::new(Check::Enum, Severity::Error, "x"))
                    .collect())
            }
        };
        let specs: Vec<String> = (0..4).map(|i| format!("{{\"v\":{i}}}")).collect();
        for spec in &specs {
            cache
                .get_or_judge(&key(spec), many(MAX_FINDINGS / 3))
                .await
                .unwrap();
        }
        let held = cache.entries().findings;
        assert!(held <= MAX_FINDINGS, "{held}");
        assert_eq!(cache.entries().order.len(), 3);
        // The oldest went; the newest is kept.
        let judged = AtomicUsize::new(0);
        let count = || async {
            judged.fetch_add(1, Ordering::SeqCst);
            Ok(Vec::new())
        };
        cache.get_or_judge(&key(&specs[3]), count).await.unwrap();
        assert_eq!(judged.load(Ordering::SeqCst), 0, "the newest is kept");
        cache.get_or_judge(&key(&specs[0]), count).await.unwrap();
        assert_eq!(
            judged.load(Ordering::SeqCst),
            1,
            "the oldest is judged again"
        );
    }

    #[tokio::test]
    async fn a_failed_judgment_is_tried_again() {
        let cache = VerdictCache::default();
        let first = cache
            .get_or_judge(&key("{}"), || async {
                Err(ReviewError::unreadable("boom"))
            })
            .await;
        assert!(first.is_err());
        let second = cache
            .get_or_judge(&key("{}"), || async { Ok(Vec::new()) })
            .await;
        assert_eq!(second.unwrap().len(), 0);
    }
}
