//! Work spread over the machine's cores, results in input order.
//!
//! `diff` parses documents, indexes positions and checks CRDs that do not
//! depend on each other; scoped threads pulling from a shared counter are
//! all that needs (no thread pool to keep, no dependency), and handing out
//! the costliest items first keeps one large CRD from finishing last.
//!
//! Requests to the API server go [`in_order`]: a bounded number in flight,
//! answers in the order asked.
//!
//! A scan validates page after page: [`Pool`] keeps its threads from one
//! page to the next, so what each thread caches (compiled patterns, CEL
//! contexts) is built once per scan instead of once per page.

use std::num::NonZeroUsize;

/// The stack of every thread that may judge CEL rules: the parser and the
/// tree walkers recurse once per level of a rule, and a rule as deep as
/// the API server accepts (250 operator levels, within the 96 levels of
/// nesting the `cel` crate reads) took more than the 2 MiB Rust and tokio
/// give a thread (a stack overflow aborts the process). The pages are only
/// mapped as they are touched (figures: docs/BENCHMARKS.md, "Stack of the
/// deepest CEL rule").
pub const STACK_BYTES: usize = 8 << 20;

/// A thread builder with [`STACK_BYTES`].
pub fn thread() -> std::thread::Builder {
    std::thread::Builder::new().stack_size(STACK_BYTES)
}
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// Runs `jobs` at most `limit` at a time until one fails, and returns
/// their outputs in the order of `jobs`, or the first failure.
///
/// `buffered` keeps the same order, but a finished job holds its slot
/// until every job before it is done, so one slow answer (a large CRD, a
/// long scan) leaves the others idle; here the next job starts as soon as
/// any one ends.
pub async fn in_order<T, E, F>(jobs: impl IntoIterator<Item = F>, limit: usize) -> Result<Vec<T>, E>
where
    F: Future<Output = Result<T, E>>,
{
    use futures::{StreamExt, TryStreamExt};
    let jobs = jobs
        .into_iter()
        .enumerate()
        .map(|(i, job)| async move { job.await.map(|out| (i, out)) });
    let mut done: Vec<(usize, T)> = futures::stream::iter(jobs)
        .buffer_unordered(limit.max(1))
        .try_collect()
        .await?;
    done.sort_unstable_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, out)| out).collect())
}

/// The cores this process may use, asked once: the answer reads cgroup
/// files (five system calls), and a `diff` asks on every parallel step.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
}

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
    let workers = cores().min(items.len());
    let costs: Vec<usize> = items.iter().map(&cost).collect();
    if workers <= 1 || costs.iter().sum::<usize>() < min_total {
        return items.iter().map(f).collect();
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(costs[i]));
    let next = AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            out.push((i, f(&items[i])));
        }
        out
    };
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        // The calling thread is one of the workers: one thread fewer to
        // start, and its allocations reuse what it has already freed.
        // A thread that cannot be started leaves its share to the others.
        let handles: Vec<_> = (1..workers)
            .filter_map(|_| thread().spawn_scoped(scope, work).ok())
            .collect();
        let mut done = work();
        for h in handles {
            done.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        done
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Worker threads kept until the pool is dropped, one per core.
pub struct Pool {
    workers: Vec<(mpsc::Sender<Task>, JoinHandle<()>)>,
}

type Task = Box<dyn FnOnce() + Send>;

/// One [`Pool::map`] call as the workers share it.
struct Batch<T, F> {
    items: Arc<Vec<T>>,
    next: AtomicUsize,
    f: F,
}

impl Pool {
    /// A pool with one thread per core (none with one core: [`Pool::map`]
    /// then runs on the calling thread).
    pub fn new() -> Pool {
        let n = cores();
        let workers = if n <= 1 {
            Vec::new()
        } else {
            (0..n)
                .filter_map(|i| {
                    let (tx, rx) = mpsc::channel::<Task>();
                    let handle = thread()
                        .name(format!("crd-safety-worker-{i}"))
                        .spawn(move || {
                            while let Ok(task) = rx.recv() {
                                task();
                            }
                        })
                        .ok()?;
                    Some((tx, handle))
                })
                .collect()
        };
        Pool { workers }
    }

    /// `f` over `items` on the pool's threads, the results in the order of
    /// `items`. A panic in `f` is raised again here, as a sequential map
    /// would.
    pub fn map<T, R, F>(&self, items: Arc<Vec<T>>, f: F) -> Vec<R>
    where
        T: Send + Sync + 'static,
        R: Send + 'static,
        F: Fn(&T) -> R + Send + Sync + 'static,
    {
        let n = items.len();
        if self.workers.is_empty() || n <= 1 {
            return items.iter().map(f).collect();
        }
        let batch = Arc::new(Batch {
            items,
            next: AtomicUsize::new(0),
            f,
        });
        let (done_tx, done_rx) = mpsc::channel::<(usize, std::thread::Result<R>)>();
        for (tx, _) in self.workers.iter().take(n) {
            let batch = Arc::clone(&batch);
            let done = done_tx.clone();
            let task: Task = Box::new(move || {
                loop {
                    let i = batch.next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = batch.items.get(i) else {
                        break;
                    };
                    let r =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (batch.f)(item)));
                    if done.send((i, r)).is_err() {
                        break;
                    }
                }
            });
            // A worker that is gone leaves its share to the others, or to
            // this thread below.
            let _ = tx.send(task);
        }
        drop(done_tx);
        let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
        for (i, r) in done_rx {
            match r {
                Ok(r) => out[i] = Some(r),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        out.into_iter()
            .enumerate()
            .map(|(i, r)| r.unwrap_or_else(|| (batch.f)(&batch.items[i])))
            .collect()
    }
}

impl Default for Pool {
    fn default() -> Self {
        Pool::new()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for (tx, handle) in std::mem::take(&mut self.workers) {
            drop(tx);
            let _ = handle.join();
        }
    }
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

    #[test]
    fn a_pool_keeps_the_input_order() {
        let pool = Pool::new();
        let items: Arc<Vec<usize>> = Arc::new((0..500).collect());
        let out = pool.map(Arc::clone(&items), |&i| i * 3);
        assert_eq!(out, items.iter().map(|i| i * 3).collect::<Vec<_>>());
    }

    #[test]
    fn a_pool_keeps_its_threads_and_their_caches_across_calls() {
        thread_local! {
            static WARM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        let pool = Pool::new();
        let n = pool.workers.len();
        if n == 0 {
            return;
        }
        // Each worker takes exactly one item of the first call: none can
        // pass the barrier before all have arrived.
        let barrier = Arc::new(std::sync::Barrier::new(n));
        let first = pool.map(Arc::new(vec![(); n]), move |_| {
            barrier.wait();
            WARM.with(|w| w.replace(true))
        });
        assert_eq!(first, vec![false; n]);
        let second = pool.map(Arc::new(vec![(); 100]), |_| WARM.with(|w| w.get()));
        assert_eq!(
            second,
            vec![true; 100],
            "a thread of the second call was new"
        );
    }

    #[test]
    #[should_panic(expected = "item 7")]
    fn a_panic_in_a_pool_worker_reaches_the_caller() {
        let pool = Pool::new();
        let items: Arc<Vec<usize>> = Arc::new((0..50).collect());
        pool.map(items, |&i| assert!(i != 7, "item 7"));
    }
}
