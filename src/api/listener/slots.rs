//! The connection cap of the REST listener: one slot per open connection, and what each
//! connection is doing (a request in progress, a request head arriving, idle), so that a
//! connection over the cap can take the slot of one that holds it for nothing.
//!
//! Why evict rather than refuse: the connections that fill a server under a slowloris
//! attack are exactly the ones that have no request in progress (they trickle a head, or
//! sit idle). Refusing newcomers would let them lock out every client and the load
//! balancer's `/healthz`; closing the one that has waited longest keeps the server
//! answering while the cap still bounds the file descriptors. A connection with a request
//! in progress (a query, an ingest, the dashboard's stream relay) is never evicted: when
//! every slot is busy, the newcomer is answered `503` instead ([`Slots::admit`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// What one connection is doing, updated by its I/O and its requests without a lock.
#[derive(Debug)]
pub struct Slot {
    id: u64,
    epoch: Instant,
    /// Requests whose response has not been sent in full.
    busy: AtomicUsize,
    /// Milliseconds since `epoch` (plus one, so 0 means none) when the connection last had
    /// no request in progress.
    idle_since: AtomicU64,
    /// Milliseconds since `epoch` (plus one; 0: none) when the first byte of the next
    /// request head arrived.
    head_since: AtomicU64,
    /// Told to close: another connection took this slot.
    evicted: Notify,
}

impl Slot {
    fn new(id: u64, epoch: Instant) -> Self {
        let slot = Slot {
            id,
            epoch,
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_since: AtomicU64::new(0),
            evicted: Notify::new(),
        };
        slot.idle_since.store(slot.now(), Ordering::Relaxed);
        slot
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// Bytes arrived: when no request is in progress, they start the next request's head.
    pub fn bytes_read(&self) {
        if self.busy.load(Ordering::Relaxed) == 0 && self.head_since.load(Ordering::Relaxed) == 0 {
            self.head_since.store(self.now(), Ordering::Relaxed);
        }
    }

    /// A request head was parsed; the request is in progress until the guard is dropped
    /// (its response sent in full, or abandoned).
    pub fn request_started(self: &Arc<Self>) -> BusyGuard {
        self.busy.fetch_add(1, Ordering::Relaxed);
        self.head_since.store(0, Ordering::Relaxed);
        BusyGuard(Arc::clone(self))
    }

    /// For how many milliseconds the current request head has been arriving, if one is.
    pub fn head_age_ms(&self) -> Option<u64> {
        let since = self.head_since.load(Ordering::Relaxed);
        (since != 0 && self.busy.load(Ordering::Relaxed) == 0).then(|| self.now().saturating_sub(since))
    }

    /// Since when (ms) the connection holds its slot without a request in progress, if it does.
    fn waiting_since(&self) -> Option<u64> {
        if self.busy.load(Ordering::Relaxed) != 0 {
            return None;
        }
        match self.head_since.load(Ordering::Relaxed) {
            0 => Some(self.idle_since.load(Ordering::Relaxed)),
            head => Some(head),
        }
    }

    /// Resolves when another connection took this slot.
    pub async fn evicted(&self) {
        self.evicted.notified().await;
    }
}

/// A request in progress; dropping it makes the connection idle again (if it was the last).
#[derive(Debug)]
pub struct BusyGuard(Arc<Slot>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        let now = self.0.now();
        if self.0.busy.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.0.idle_since.store(now, Ordering::Relaxed);
        }
    }
}

/// Holds a slot while the connection is open; frees it when dropped.
#[derive(Debug)]
pub struct SlotLease {
    slots: Arc<Slots>,
    pub slot: Arc<Slot>,
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        self.slots.open.lock().remove(&self.slot.id);
    }
}

/// How a new connection is let in.
#[derive(Debug)]
pub enum Admission {
    /// Under the cap (or in the slot of an evicted connection): serve it.
    Admitted(SlotLease),
    /// Every slot has a request in progress: answer 503 and close.
    Busy,
}

/// The open connections of one listener, at most `max` of them.
#[derive(Debug)]
pub struct Slots {
    max: usize,
    epoch: Instant,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Slot>>>,
    evictions: AtomicU64,
}

impl Slots {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Slots {
            max: max.max(1),
            epoch: Instant::now(),
            next_id: AtomicU64::new(1),
            open: Mutex::new(HashMap::new()),
            evictions: AtomicU64::new(0),
        })
    }

    /// Lets a new connection in: under the cap at once; at the cap in the slot of the
    /// connection that has waited longest without a request in progress (told to close);
    /// otherwise [`Admission::Busy`].
    pub fn admit(self: &Arc<Self>) -> Admission {
        let mut open = self.open.lock();
        if open.len() >= self.max {
            let oldest = open.values().filter_map(|s| Some((s.waiting_since()?, s.id))).min().map(|(_, id)| id);
            let Some(victim) = oldest.and_then(|id| open.remove(&id)) else { return Admission::Busy };
            victim.evicted.notify_one();
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
        let slot = Arc::new(Slot::new(self.next_id.fetch_add(1, Ordering::Relaxed), self.epoch));
        open.insert(slot.id, Arc::clone(&slot));
        Admission::Admitted(SlotLease { slots: Arc::clone(self), slot })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.lock().len()
    }

    /// Connections closed so far to make room for a newer one.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(a: Admission) -> SlotLease {
        match a {
            Admission::Admitted(l) => l,
            Admission::Busy => panic!("busy"),
        }
    }

    #[tokio::test]
    async fn at_the_cap_the_longest_waiting_idle_connection_gives_way() {
        let slots = Slots::new(2);
        let a = lease(slots.admit());
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = lease(slots.admit());
        // `a` has a request in progress: it is never evicted; `b` is idle.
        let busy = a.slot.request_started();
        let c = lease(slots.admit());
        assert_eq!((slots.open(), slots.evictions()), (2, 1));
        tokio::time::timeout(std::time::Duration::from_secs(1), b.slot.evicted()).await.expect("b told to close");
        drop(b);
        assert_eq!(slots.open(), 2, "the evicted lease no longer counts");
        // Both remaining connections busy: a newcomer is refused.
        let _busy_c = c.slot.request_started();
        assert!(matches!(slots.admit(), Admission::Busy));
        // A request's end makes its connection evictable again.
        drop(busy);
        let _d = lease(slots.admit());
        assert_eq!(slots.evictions(), 2);
        drop(a);
    }

    #[test]
    fn a_head_in_progress_is_timed_from_its_first_byte() {
        let slots = Slots::new(4);
        let a = lease(slots.admit());
        assert_eq!(a.slot.head_age_ms(), None, "idle, no head yet");
        a.slot.bytes_read();
        assert!(a.slot.head_age_ms().is_some());
        let guard = a.slot.request_started();
        assert_eq!(a.slot.head_age_ms(), None, "the head is complete");
        a.slot.bytes_read();
        assert_eq!(a.slot.head_age_ms(), None, "body bytes start no head");
        drop(guard);
        assert_eq!(a.slot.head_age_ms(), None);
    }
}
