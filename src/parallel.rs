//! Work spread over the machine's cores, results in input order.
//!
//! `diff` parses documents, indexes positions and checks CRDs that do not
//! depend on each other; scoped threads pulling from a shared counter are
//! all that needs (no thread pool to keep, no dependency), and handing out
//! the costliest items first keeps one large CRD from finishing last.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` over `items` on up to as many threads as cores, the results in the
/// order of `items`. `cost` orders the work (largest first); below
/// `min_total` of it, or with one core, the map runs on the calling thread.
/// A panic in `f` is raised again here, as a sequential map would.
pub fn map<T, R>(
    items: &[T],
    cost: impl Fn(&T) -> usize,
    min_total: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let workers = std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .min(items.len());
    let costs: Vec<usize> = items.iter().map(&cost).collect();
    if workers <= 1 || costs.iter().sum::<usize>() < min_total {
        return items.iter().map(f).collect();
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(costs[i]));
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                        out.push((i, f(&items[i])));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_input_order_whatever_the_costs() {
        let items: Vec<usize> = (0..200).collect();
        let out = map(&items, |&i| (i * 7919) % 13, 0, |&i| i * 2);
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_small_load_runs_on_the_calling_thread() {
        let me = std::thread::current().id();
        let out = map(&[1, 2, 3], |_| 1, 100, |_| std::thread::current().id());
        assert!(out.iter().all(|id| *id == me));
    }
}
