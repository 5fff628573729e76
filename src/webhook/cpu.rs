//! CPU work of a review that borrows the request's body: parsing a body of
//! up to `--max-body-bytes`, reading the objects' outlines, building the
//! log line and the answer. Run on an async worker as it is, it would
//! stall every other connection that worker serves (health probes
//! included) for as long as it takes; `block_in_place` first hands them to
//! another worker. The judgment itself, which owns its inputs, goes to the
//! blocking pool instead ([`super::review`]). The hand-over wakes a thread,
//! so work on a small body (a typical CRD's review is about 50 KiB, read
//! quickly) runs in place (figures: docs/BENCHMARKS.md, "Reading a review
//! in place").

use tokio::runtime::{Handle, RuntimeFlavor};

/// The body size below which its work runs in place: reading 64 KiB of
/// JSON takes about as long as handing a worker's tasks to another thread.
pub const IN_PLACE_BYTES: usize = 64 * 1024;

/// Runs `work` without holding up the runtime's other tasks; in place on
/// a current-thread runtime (an embedding test), which has no other worker
/// to hand them to.
pub fn cpu<T>(work: impl FnOnce() -> T) -> T {
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// [`cpu`] for work on a body of `bytes`: in place when it is small.
pub fn cpu_for<T>(bytes: usize, work: impl FnOnce() -> T) -> T {
    if bytes < IN_PLACE_BYTES {
        work()
    } else {
        cpu(work)
    }
}
