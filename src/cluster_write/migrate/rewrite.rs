//! The rewrite: every object of a CRD, listed page by page in the storage
//! version and written back unchanged with its `resourceVersion`, a bounded
//! number at a time. Writing an object stores it in the storage version;
//! that is the whole migration.
//!
//! - 409 means someone wrote the object after it was read, and every write
//!   stores in the storage version: it counts as migrated without a retry.
//! - 404 means it was deleted: nothing left to migrate.
//! - 429, 500, 503, 504 and lost connections are retried with exponential
//!   backoff (the server's `Retry-After` when it sends one) under the
//!   policy every request shares (`crate::cluster::RetryPolicy`), per object. A retried
//!   PUT is safe: if the first one was stored, the retry gets 409.
//! - 401/403 stop the run (no later write would succeed); anything else is
//!   reported for that object and the others go on.
//!
//! Pages are read while the previous one is written, so at most two pages
//! are in memory.

use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use serde_json::Value;

use super::RunOptions;
use crate::cluster::{
    Attempt, Connection, GaveUp, ListError, Page, ResourceRef, Rewrite, RewriteError,
};
use crate::outcome::ObjectFailure;
use crate::scan::object_name;

/// How the rewrite of one CRD ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Every listed object was handled (some may have failed).
    Complete,
    /// `stop` was set: writes in flight finished, no new ones started.
    Interrupted,
    /// 401/403: the run stops.
    Denied(String),
    /// A page could not be read.
    ListFailed(String),
}

/// Totals of one CRD's rewrite.
#[derive(Debug, Clone)]
pub struct Done {
    pub end: End,
    pub rewritten: u64,
    pub written_by_others: u64,
    pub deleted: u64,
    pub retries: u64,
    pub failed: Vec<ObjectFailure>,
}

/// What became of one object.
enum One {
    Done(Rewrite),
    /// Not started, or abandoned while waiting to retry: `stop` was set.
    Skipped,
    Failed(String),
    Denied(String),
}

/// Rewrites every object of `resource`. `tick` gets the number of objects
/// handled so far.
pub(super) async fn rewrite_all(
    conn: &Connection,
    resource: &ResourceRef,
    opts: RunOptions,
    stop: &AtomicBool,
    tick: &mut dyn FnMut(u64),
) -> Done {
    let mut done = Done {
        end: End::Complete,
        rewritten: 0,
        written_by_others: 0,
        deleted: 0,
        retries: 0,
        failed: Vec::new(),
    };
    let denied = AtomicBool::new(false);
    let halted = || stop.load(Ordering::SeqCst) || denied.load(Ordering::SeqCst);
    let mut restarted = false;
    let mut page = match first_page(conn, resource, opts).await {
        Ok(p) => p,
        Err(why) => {
            done.end = End::ListFailed(why);
            return done;
        }
    };
    let mut handled = 0u64;
    loop {
        let next = page.next().map(str::to_string);
        let items = std::mem::take(&mut page.items);
        let writing = async {
            let mut outcomes = futures::stream::iter(items)
                .map(|object| write_one(conn, resource, object, stop, &denied))
                .buffer_unordered(opts.concurrency.max(1));
            let mut results = Vec::new();
            while let Some(r) = outcomes.next().await {
                results.push(r);
            }
            results
        };
        let fetching = async {
            match &next {
                Some(t) => Some(conn.list_page(resource, opts.chunk_size, Some(t)).await),
                None => None,
            }
        };
        let (results, fetched) = tokio::join!(writing, fetching);
        for (object, one, retries) in results {
            done.retries += retries;
            match one {
                One::Done(Rewrite::Written) => done.rewritten += 1,
                One::Done(Rewrite::WrittenByOthers) => done.written_by_others += 1,
                One::Done(Rewrite::Deleted) => done.deleted += 1,
                One::Skipped => continue,
                One::Failed(message) => done.failed.push(ObjectFailure { object, message }),
                One::Denied(message) => {
                    if done.end == End::Complete {
                        done.end = End::Denied(message);
                    }
                    continue;
                }
            }
            handled += 1;
        }
        tick(handled);
        if done.end != End::Complete {
            return done;
        }
        if halted() {
            done.end = End::Interrupted;
            return done;
        }
        page = match fetched {
            None => return done,
            Some(Ok(p)) => p,
            // The continue token expired: list again from the start.
            // Objects already written are written again at no risk, and
            // the new listing covers every object that existed before it.
            Some(Err(ListError::Expired)) if !restarted => {
                restarted = true;
                match first_page(conn, resource, opts).await {
                    Ok(p) => p,
                    Err(why) => {
                        done.end = End::ListFailed(why);
                        return done;
                    }
                }
            }
            Some(Err(e)) => {
                done.end = End::ListFailed(e.to_string());
                return done;
            }
        };
    }
}

async fn first_page(
    conn: &Connection,
    resource: &ResourceRef,
    opts: RunOptions,
) -> Result<Page, String> {
    conn.list_page(resource, opts.chunk_size, None)
        .await
        .map_err(|e| e.to_string())
}

/// Writes one object back, retrying transient failures under the
/// connection's retry policy. Returns its name, what happened and how many
/// retries it took.
async fn write_one(
    conn: &Connection,
    resource: &ResourceRef,
    object: Value,
    stop: &AtomicBool,
    denied: &AtomicBool,
) -> (String, One, u64) {
    let name = object_name(&object);
    let written = conn
        .retried(&format!("PUT {name}"), Some(stop), || async {
            if stop.load(Ordering::SeqCst) || denied.load(Ordering::SeqCst) {
                return Attempt::Fatal(One::Skipped);
            }
            match conn.rewrite_object(resource, &object).await {
                Ok(r) => Attempt::Done(r),
                Err(RewriteError::Denied(why)) => {
                    denied.store(true, Ordering::SeqCst);
                    Attempt::Fatal(One::Denied(why))
                }
                Err(RewriteError::Refused(why)) => Attempt::Fatal(One::Failed(why)),
                Err(RewriteError::Transient { message, after }) => Attempt::Transient {
                    error: One::Failed(message.clone()),
                    cause: message,
                    after,
                },
            }
        })
        .await;
    match written {
        Ok((r, tries, _)) => (name, One::Done(r), u64::from(tries - 1)),
        Err(GaveUp {
            error: One::Failed(why),
            tries,
            exhausted: true,
            ..
        }) => (
            name,
            One::Failed(format!("{why} (gave up after {tries} tries)")),
            u64::from(tries - 1),
        ),
        Err(g) => (name, g.error, u64::from(g.tries - 1)),
    }
}
