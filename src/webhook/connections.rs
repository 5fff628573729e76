//! The connections `serve` holds open, and which one gives way when a new
//! one arrives at `--max-connections`. Refusing the newcomer let 256 idle
//! TCP connections (a handshake never started, or a kept-alive connection
//! nobody uses) keep the API server out: its next connection was reset.
//! Now the connection that has waited longest without a request in flight
//! (still in its handshake, or idle between requests) is closed for it,
//! provided it has waited at least [`IDLE_GRACE`]: a connection that just
//! finished a handshake, or just wrote an answer, is about to be used.
//! A request in flight is never cut. Only when every connection is busy
//! or younger than that is the newcomer refused, as before.
//!
//! Closing an idle kept-alive connection is what every HTTP server does
//! at its idle timeout, and clients (Go's, the API server's) open a new
//! one for the next request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long a connection must have waited without a request in flight
/// before a newcomer may take its place.
pub const IDLE_GRACE: Duration = Duration::from_secs(1);

const HANDSHAKE: u8 = 0;
const IDLE: u8 = 1;
const BUSY: u8 = 2;
const CLOSING: u8 = 3;

/// One open connection as the registry sees it.
#[derive(Debug)]
pub struct Slot {
    state: AtomicU8,
    /// When it last started waiting (accepted, handshake done, answer
    /// given), in milliseconds since the registry was made.
    since_ms: AtomicU64,
    close: Notify,
}

/// The open connections.
#[derive(Debug)]
pub struct Connections {
    limit: usize,
    started: Instant,
    next: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Slot>>>,
}

/// A connection's place in the registry, given back when dropped.
#[derive(Debug)]
pub struct Held {
    id: u64,
    slot: Arc<Slot>,
    owner: Arc<Connections>,
}

/// How a newcomer was let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    /// There was room.
    Room,
    /// An idle connection was closed for it.
    Evicted,
}

impl Connections {
    /// A registry of at most `limit` connections (at least one).
    pub fn new(limit: usize) -> Arc<Connections> {
        Arc::new(Connections {
            limit: limit.max(1),
            started: Instant::now(),
            next: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Slot>>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for a new connection, closing the longest-waiting idle one
    /// when the registry is full; `None` when none may be closed.
    pub fn admit(self: &Arc<Self>) -> Option<(Held, Admitted)> {
        self.admit_at(self.now_ms())
    }

    /// [`Connections::admit`] at `now` (milliseconds since the registry
    /// was made).
    fn admit_at(self: &Arc<Self>, now: u64) -> Option<(Held, Admitted)> {
        let grace = u64::try_from(IDLE_GRACE.as_millis()).unwrap_or(u64::MAX);
        let mut open = self.open();
        // Connections being closed still count until they are gone, but
        // each has made room already.
        let closing = open
            .values()
            .filter(|s| s.state.load(Ordering::Acquire) == CLOSING)
            .count();
        let mut how = Admitted::Room;
        if open.len() - closing >= self.limit {
            let oldest = open
                .values()
                .filter(|s| matches!(s.state.load(Ordering::Acquire), HANDSHAKE | IDLE))
                .filter(|s| now.saturating_sub(s.since_ms.load(Ordering::Acquire)) >= grace)
                .min_by_key(|s| s.since_ms.load(Ordering::Acquire))?;
            let state = oldest.state.load(Ordering::Acquire);
            oldest
                .state
                .compare_exchange(state, CLOSING, Ordering::AcqRel, Ordering::Acquire)
                .ok()?;
            oldest.close.notify_one();
            how = Admitted::Evicted;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot {
            state: AtomicU8::new(HANDSHAKE),
            since_ms: AtomicU64::new(now),
            close: Notify::new(),
        });
        open.insert(id, Arc::clone(&slot));
        Some((
            Held {
                id,
                slot,
                owner: Arc::clone(self),
            },
            how,
        ))
    }
}

impl Held {
    /// The TLS handshake is done: the connection now waits for a request.
    pub fn handshaken(&self) {
        self.slot.idle(&self.owner);
    }

    /// What the connection's requests mark it busy with.
    pub fn marker(&self) -> Marker {
        Marker {
            slot: Arc::clone(&self.slot),
            owner: Arc::clone(&self.owner),
        }
    }

    /// Completes when the registry closes this connection for a newcomer.
    pub async fn evicted(&self) {
        self.slot.close.notified().await;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.owner.open().remove(&self.id);
    }
}

/// Marks a connection busy while a request is in flight on it.
#[derive(Debug, Clone)]
pub struct Marker {
    slot: Arc<Slot>,
    owner: Arc<Connections>,
}

impl Marker {
    /// Busy for as long as the guard lives: from a request's header to its
    /// answer.
    pub fn busy(&self) -> Busy {
        let _ = self
            .slot
            .state
            .compare_exchange(IDLE, BUSY, Ordering::AcqRel, Ordering::Acquire);
        Busy(self.clone())
    }
}

/// A request in flight on a connection ([`Marker::busy`]).
#[derive(Debug)]
pub struct Busy(Marker);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.slot.idle(&self.0.owner);
    }
}

impl Slot {
    /// Waiting again from now, unless it is being closed.
    fn idle(&self, owner: &Connections) {
        self.since_ms.store(owner.now_ms(), Ordering::Release);
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s != CLOSING).then_some(IDLE)
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A newcomer `after` from now.
    fn admit_after(c: &Arc<Connections>, after: Duration) -> Option<(Held, Admitted)> {
        let after = u64::try_from(after.as_millis()).unwrap_or(0);
        c.admit_at(c.now_ms() + after)
    }

    #[test]
    fn a_newcomer_at_the_limit_closes_the_longest_idle_connection() {
        let c = Connections::new(2);
        let (a, how) = c.admit().expect("room");
        assert_eq!(how, Admitted::Room);
        let (b, _) = c.admit().expect("room");
        a.handshaken();
        b.handshaken();
        // Both just started waiting: nobody gives way yet.
        assert!(c.admit().is_none());
        // `a` has waited longest.
        b.slot.since_ms.store(c.now_ms() + 5, Ordering::Release);
        let (_new, how) = admit_after(&c, IDLE_GRACE * 2).expect("a gives way");
        assert_eq!(how, Admitted::Evicted);
        assert_eq!(a.slot.state.load(Ordering::Acquire), CLOSING);
        assert_ne!(b.slot.state.load(Ordering::Acquire), CLOSING);
        // A connection being closed made its room already: the next
        // newcomer needs another to give way.
        let (_next, how) = admit_after(&c, IDLE_GRACE * 2).expect("b gives way");
        assert_eq!(how, Admitted::Evicted);
        assert_eq!(b.slot.state.load(Ordering::Acquire), CLOSING);
    }

    #[test]
    fn a_request_in_flight_is_never_cut() {
        let c = Connections::new(1);
        let (a, _) = c.admit().expect("room");
        a.handshaken();
        let busy = a.marker().busy();
        assert!(
            admit_after(&c, IDLE_GRACE * 10).is_none(),
            "the busy connection was closed"
        );
        drop(busy);
        // Idle again, and from now: it waits its grace first.
        assert!(c.admit().is_none());
        assert!(admit_after(&c, IDLE_GRACE * 2).is_some());
    }

    #[test]
    fn a_handshake_that_does_not_come_gives_way_too() {
        let c = Connections::new(1);
        let (a, _) = c.admit().expect("room");
        let (_b, how) = admit_after(&c, IDLE_GRACE * 2).expect("the silent one gives way");
        assert_eq!(how, Admitted::Evicted);
        drop(a);
        assert_eq!(c.open().len(), 1, "a closed connection leaves the registry");
    }
}
