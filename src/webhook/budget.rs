//! The memory `serve` may spend on judgments at once. A judgment of the
//! largest corpus CRD builds MiBs (two schema models, the comparison's
//! working set) from a body of 1.9 MB, so what
//! bounds the process is not how many reviews arrive but how much their
//! work holds. Each judgment, and each object scan, reserves its
//! estimated cost before it starts and keeps the reservation until its
//! work on the blocking pool ends (not until its client leaves). Reviews
//! beyond the budget wait for room, within their deadline; a review whose
//! cost alone is more than the whole budget can never fit and is answered
//! by `failMode` at once, with the reason.
//!
//! The budget is counted in KiB on a semaphore, so waiters are served in
//! order and a large review is not starved by small ones slipping past.

use super::error::{Kind, ReviewError};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The smallest budget: below this not even a typical CRD could be
/// judged, which is a typo rather than a choice.
pub const MIN_BYTES: u64 = 1 << 20;

/// Bytes a judgment holds per byte of the CRDs it reads (old and new
/// objects' JSON, as the request carries them): about twice what a
/// judgment of the largest corpus CRD held at its peak, which leaves
/// room for what the allocator keeps on top. The CRDs are now read
/// without JSON trees and hold less; the figure is kept as the margin it
/// now is (figures: docs/BENCHMARKS.md, "The judgments' memory per input
/// byte").
pub const BYTES_PER_INPUT_BYTE: u64 = 16;

/// What every judgment holds whatever its size (the findings, the report,
/// the rules of the server's version).
pub const FIXED_BYTES: u64 = 256 << 10;

/// A size as `--memory-budget` takes it: bytes, or a number with a
/// Kubernetes binary suffix (`Ki`, `Mi`, `Gi`), as in a pod's limits.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        _ => {
            return Err(format!(
                "{text:?} is not a size: use bytes or Ki, Mi, Gi (e.g. 48Mi)"
            ));
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("{text:?} is not a size: use bytes or Ki, Mi, Gi (e.g. 48Mi)"))
}

/// The estimated memory of judging CRDs whose JSON is `input` bytes.
pub fn judgment_cost(input: usize) -> u64 {
    FIXED_BYTES + BYTES_PER_INPUT_BYTE * input as u64
}

/// A review whose cost the budget cannot hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "judging it needs about {} MiB, more than the {} MiB serve may spend on judgments \
     (--memory-budget)",
    mib(*needed),
    mib(*budget)
)]
pub struct TooLarge {
    /// The estimated cost, in bytes.
    pub needed: u64,
    /// The whole budget, in bytes.
    pub budget: u64,
}

impl From<TooLarge> for ReviewError {
    fn from(e: TooLarge) -> ReviewError {
        ReviewError::new(
            Kind::TooLarge,
            format!("crd-safety did not check this CRD: {e}"),
        )
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / f64::from(1 << 20))
}

/// The memory budget of judgments.
#[derive(Clone)]
pub struct Budget {
    kib: Arc<Semaphore>,
    total_kib: u32,
}

/// Room reserved in the budget, given back when dropped: it moves into
/// the blocking work it pays for.
#[derive(Debug)]
pub struct Reserved {
    _permit: OwnedSemaphorePermit,
}

impl Budget {
    /// A budget of `bytes` (at least [`MIN_BYTES`]).
    pub fn new(bytes: u64) -> Budget {
        let kib = (bytes.max(MIN_BYTES) / 1024).min(u64::from(u32::MAX >> 4));
        let total_kib = u32::try_from(kib).unwrap_or(u32::MAX >> 4);
        Budget {
            kib: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
        }
    }

    /// The whole budget, in bytes.
    pub fn total(&self) -> u64 {
        u64::from(self.total_kib) * 1024
    }

    /// What is not reserved now, in bytes.
    pub fn available(&self) -> u64 {
        self.kib.available_permits() as u64 * 1024
    }

    /// Reserves `bytes`, waiting for room; refuses at once what the whole
    /// budget could never hold.
    pub async fn reserve(&self, bytes: u64) -> Result<Reserved, TooLarge> {
        let too_large = TooLarge {
            needed: bytes,
            budget: self.total(),
        };
        let kib = bytes.div_ceil(1024).max(1);
        if kib > u64::from(self.total_kib) {
            return Err(too_large);
        }
        // `kib` fits in u32: it is at most `total_kib`.
        let kib = u32::try_from(kib).map_err(|_| too_large)?;
        // The semaphore is never closed; a closed one would refuse.
        let permit = Arc::clone(&self.kib)
            .acquire_many_owned(kib)
            .await
            .map_err(|_| too_large)?;
        Ok(Reserved { _permit: permit })
    }
}

/// The budget and the cores, shared by all CPU work of the reviews (a
/// pair's judgment, reading a request's CRD, the stored CRD, the
/// requirements' judgments and reads): the one way to reserve room and
/// run within it. One permit per core: more at once only adds memory, not
/// speed. The permit and the room move into the work on the blocking
/// pool, so a review that gives up (its client left, its deadline passed)
/// frees neither while its work goes on.
#[derive(Clone)]
pub struct Judging {
    budget: Budget,
    cores: Arc<Semaphore>,
}

impl Judging {
    /// One permit per core, over `budget`.
    pub fn new(budget: Budget) -> Judging {
        Judging {
            budget,
            cores: Arc::new(Semaphore::new(crate::parallel::cores())),
        }
    }

    /// Reserves `bytes`, waiting for room (the review's deadline bounds
    /// the wait); refuses at once what the whole budget cannot hold.
    pub async fn reserve(&self, bytes: u64) -> Result<Arc<Reserved>, TooLarge> {
        self.budget.reserve(bytes).await.map(Arc::new)
    }

    /// Runs `work` on the blocking pool once a core is free, `reserved`
    /// (the room it works in) and the core held by the work itself until
    /// it ends.
    pub async fn run<T: Send + 'static>(
        &self,
        reserved: impl Send + 'static,
        work: impl FnOnce() -> Result<T, ReviewError> + Send + 'static,
    ) -> Result<T, ReviewError> {
        let stopped = |e: &dyn std::fmt::Display| {
            ReviewError::new(
                Kind::Stopped,
                format!("the check stopped inside crd-safety: {e}"),
            )
        };
        let core = Arc::clone(&self.cores)
            .acquire_owned()
            .await
            .map_err(|e| stopped(&e))?;
        tokio::task::spawn_blocking(move || {
            let _held = (core, reserved);
            work()
        })
        .await
        .map_err(|e| stopped(&e))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MIB: u64 = 1 << 20;

    #[tokio::test]
    async fn a_cost_above_the_whole_budget_is_refused_at_once_with_both_figures() {
        let budget = Budget::new(8 * MIB);
        let err = budget.reserve(9 * MIB).await.unwrap_err();
        assert_eq!(
            err,
            TooLarge {
                needed: 9 * MIB,
                budget: 8 * MIB
            }
        );
        assert_eq!(
            err.to_string(),
            "judging it needs about 9.0 MiB, more than the 8.0 MiB serve may spend on judgments \
             (--memory-budget)"
        );
        assert_eq!(budget.available(), 8 * MIB, "nothing stays reserved");
    }

    #[tokio::test]
    async fn reservations_beyond_the_budget_wait_until_room_is_given_back() {
        let budget = Budget::new(8 * MIB);
        let first = budget.reserve(5 * MIB).await.unwrap();
        assert_eq!(budget.available(), 3 * MIB);
        // 5 + 5 > 8: the second waits while the first holds its room.
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(5 * MIB).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        // The waiter at the head of the queue collects the room there is
        // (so small reservations behind it cannot starve it): what is left
        // to others is at most what the first left.
        assert!(budget.available() <= 3 * MIB, "never more than the budget");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("room was given back")
            .unwrap()
            .unwrap();
        assert_eq!(budget.available(), 3 * MIB);
        drop(second);
        assert_eq!(budget.available(), 8 * MIB);
    }

    #[tokio::test]
    async fn many_small_reservations_never_hold_more_than_the_budget() {
        let budget = Budget::new(4 * MIB);
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(budget.reserve(MIB).await.unwrap());
        }
        assert_eq!(budget.available(), 0);
        let fifth = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(MIB).await }
        });
        tokio::task::yield_now().await;
        assert!(!fifth.is_finished(), "a fifth MiB waits");
        held.pop();
        let fifth = fifth.await.unwrap().unwrap();
        assert_eq!(budget.available(), 0);
        drop((held, fifth));
        assert_eq!(budget.available(), 4 * MIB);
    }

    #[tokio::test]
    async fn a_large_review_waiting_is_not_overtaken_by_small_ones() {
        let budget = Budget::new(4 * MIB);
        let held = budget.reserve(3 * MIB).await.unwrap();
        let large = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(4 * MIB).await }
        });
        tokio::task::yield_now().await;
        // One MiB is free, but the large review came first.
        let small = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(MIB).await }
        });
        tokio::task::yield_now().await;
        assert!(!large.is_finished() && !small.is_finished());
        drop(held);
        let large = large.await.unwrap().unwrap();
        tokio::task::yield_now().await;
        assert!(!small.is_finished(), "the large one holds it all");
        drop(large);
        small.await.unwrap().unwrap();
    }

    #[test]
    fn sizes_are_read_as_in_a_pods_limits() {
        assert_eq!(parse_size("48Mi"), Ok(48 * MIB));
        assert_eq!(parse_size("1Gi"), Ok(1024 * MIB));
        assert_eq!(parse_size("512Ki"), Ok(512 * 1024));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("48MB").is_err());
        assert!(parse_size("Mi").is_err());
        assert!(parse_size("-1Mi").is_err());
    }

    #[test]
    fn a_budget_below_one_mib_is_one_mib() {
        assert_eq!(Budget::new(0).total(), MIB);
        assert_eq!(Budget::new(100 * MIB).total(), 100 * MIB);
    }

    #[test]
    fn the_cost_grows_with_the_crds_it_reads() {
        assert_eq!(judgment_cost(0), FIXED_BYTES);
        assert!(judgment_cost(1_400_000) > 20 * MIB);
    }
}
