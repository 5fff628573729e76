//! CPU work of a review that borrows the request's body: parsing a body of
//! up to `--max-body-bytes`, reading the objects' outlines, building the
//! log line and the answer. Run on an async worker as it is, it would
//! stall every other connection that worker serves (health probes
//! included) for as long as it takes; `block_in_place` first hands them to
//! another worker. The judgment itself, which owns its inputs, goes to the
//! blocking pool instead ([`super::review`]).

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `work` without holding up the runtime's other tasks; in place on
/// a current-thread runtime (an embedding test), which has no other worker
/// to hand them to.
pub fn cpu<T>(work: impl FnOnce() -> T) -> T {
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}
