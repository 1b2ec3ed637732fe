//! Fan-out of events to connected stream clients.
//!
//! The hub keeps a registry indexed by station: `publish` touches only the subscribers of the
//! event's station and hands each one the same `Arc<Event>` with a non-blocking `try_send`
//! into that client's bounded queue. The publisher therefore never waits for a client and
//! never encodes per client (the SSE frame is encoded once, see [`Event::sse_frame`]).
//!
//! A client whose queue is full has fallen behind: it is dropped on the spot. Its
//! [`Subscription`] yields [`Delivery::Closed`]`(`[`CloseReason::SlowConsumer`]`)` ahead of
//! whatever is still queued (the client will replay those from the log), and the connection's
//! [`ConnectionCloser`] is triggered so the server can cut a socket that no longer drains.
//! One connection per user: `connect` displaces the user's previous subscription the same way
//! with [`CloseReason::Displaced`].
//!
//! Memory per idle client is its registry entry, an empty bounded queue and its waker; no
//! per-client buffers beyond the queue.
//!
//! "The newest connection wins" invites a loop: two copies of a client sharing a key displace
//! each other, and a client that reconnects at once after the close does so hundreds of times
//! a second. [`Hub::admit`] paces each user's connections ([`ReconnectPolicy`]: a burst, then
//! one per interval, a GCRA over one timestamp per user) and the displaced connection is told
//! how long to wait ([`ReconnectPolicy::displaced_retry`], sent as the SSE `retry:` field).

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, Notify};
use tracing::{debug, info};

use super::event_log::Event;
use super::lag::LagHistogram;

/// Why the hub ended a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client's queue overflowed: it is too slow and must reconnect and replay.
    SlowConsumer,
    /// The same user opened a newer connection (one connection per user; the newest wins).
    Displaced,
    /// The hub is shutting down ([`Hub::close_all`]).
    Shutdown,
}

/// What a [`Subscription`] yields.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// A live event for one of the subscribed stations.
    Event(Arc<Event>),
    /// The hub ended the subscription; nothing follows.
    Closed(CloseReason),
}

/// Lets the hub ask the server to close a client's connection.
///
/// A client that stopped reading leaves its response body unpolled (the socket is full), so
/// ending the body stream alone never reaches it; the server's connection task waits on
/// [`ConnectionCloser::requested`] and, after a grace period for the final event, drops the
/// connection.
#[derive(Debug, Clone, Default)]
pub struct ConnectionCloser {
    notify: Arc<Notify>,
}

impl ConnectionCloser {
    /// A fresh closer, one per connection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for the connection to be closed (idempotent; remembered if nobody waits yet).
    pub fn request(&self) {
        self.notify.notify_one();
    }

    /// Completes once [`ConnectionCloser::request`] has been called.
    pub async fn requested(&self) {
        self.notify.notified().await;
    }
}

/// How fast one user may (re)connect to the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// Connections a user may open back to back (at least 1).
    pub burst: u32,
    /// Past the burst, one more connection per this interval.
    pub interval: Duration,
    /// How long a displaced connection is asked to wait before reconnecting (SSE `retry:`).
    pub displaced_retry: Duration,
}

impl Default for ReconnectPolicy {
    /// Five back to back (a restart, a flaky network), then one every 5 s; a displaced client
    /// waits 10 s. A client that reconnects as soon as it is closed settles at one connection
    /// per 5 s instead of hundreds per second.
    fn default() -> Self {
        ReconnectPolicy { burst: 5, interval: Duration::from_secs(5), displaced_retry: Duration::from_secs(10) }
    }
}

/// Users' connection pacing: per user, the time at which its allowance is back to full
/// (GCRA's "theoretical arrival time"); a user whose allowance is full has no entry.
#[derive(Debug)]
struct Admissions {
    next_full: HashMap<String, Instant>,
    /// Size at which entries of users whose allowance is full again are swept out.
    sweep_at: usize,
}

/// Entries kept before the first sweep of idle users.
const ADMISSIONS_SWEEP: usize = 1024;

/// Counters for monitoring and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HubStats {
    /// Subscriptions currently registered.
    pub clients: usize,
    /// Events published.
    pub published: u64,
    /// Event copies queued to clients (one per matching client per event).
    pub delivered: u64,
    /// Clients dropped because their queue overflowed.
    pub dropped_slow: u64,
    /// Clients displaced by a newer connection of the same user.
    pub displaced: u64,
    /// Connections refused because the user reconnected too fast.
    pub throttled: u64,
}

/// The fan-out hub. Cloning is cheap and shares the same registry.
#[derive(Debug, Clone)]
pub struct Hub {
    inner: Arc<HubInner>,
}

#[derive(Debug)]
struct HubInner {
    capacity: usize,
    policy: ReconnectPolicy,
    admissions: Mutex<Admissions>,
    registry: RwLock<Registry>,
    next_conn: AtomicU64,
    published: AtomicU64,
    delivered: AtomicU64,
    dropped_slow: AtomicU64,
    displaced: AtomicU64,
    throttled: AtomicU64,
    /// Publication to hand-over, per delivery (recorded by the HTTP side).
    lag: Arc<LagHistogram>,
}

#[derive(Debug, Default)]
struct Registry {
    clients: HashMap<u64, Arc<Client>>,
    by_user: HashMap<String, u64>,
    by_station: HashMap<String, HashMap<u64, Arc<Client>>>,
}

/// A registered client. The queue's only `Sender` lives here, so removing the client from the
/// registry closes the queue and wakes its subscription.
#[derive(Debug)]
struct Client {
    conn: u64,
    user: String,
    stations: HashSet<String>,
    tx: mpsc::Sender<Arc<Event>>,
    shared: Arc<Shared>,
}

/// State shared between the hub's entry and the subscription.
#[derive(Debug, Default)]
struct Shared {
    end: OnceLock<CloseReason>,
    closer: Mutex<Option<ConnectionCloser>>,
}

impl Shared {
    /// Records the end reason (first one wins) and asks the connection to close.
    fn end(&self, reason: CloseReason) -> bool {
        let first = self.end.set(reason).is_ok();
        if first {
            if let Some(closer) = self.closer.lock().as_ref() {
                closer.request();
            }
        }
        first
    }
}

impl Hub {
    /// A hub whose clients may each fall `queue_capacity` events behind before being dropped.
    ///
    /// Size it for bursts (a CLI release touches every station at once), not for the average.
    pub fn new(queue_capacity: usize) -> Self {
        Self::with_policy(queue_capacity, ReconnectPolicy::default())
    }

    /// [`Hub::new`] with an explicit reconnect policy.
    pub fn with_policy(queue_capacity: usize, policy: ReconnectPolicy) -> Self {
        let policy = ReconnectPolicy { burst: policy.burst.max(1), ..policy };
        Hub {
            inner: Arc::new(HubInner {
                capacity: queue_capacity.max(1),
                policy,
                admissions: Mutex::new(Admissions { next_full: HashMap::new(), sweep_at: ADMISSIONS_SWEEP }),
                registry: RwLock::new(Registry::default()),
                next_conn: AtomicU64::new(1),
                published: AtomicU64::new(0),
                delivered: AtomicU64::new(0),
                dropped_slow: AtomicU64::new(0),
                displaced: AtomicU64::new(0),
                throttled: AtomicU64::new(0),
                lag: Arc::default(),
            }),
        }
    }

    /// The pacing of users' connections.
    pub fn reconnect_policy(&self) -> ReconnectPolicy {
        self.inner.policy
    }

    /// Counts a connection attempt of `user` against its allowance; `Err(wait)` when it comes
    /// too soon (nothing is counted then, and the caller must not connect: a refused attempt
    /// displaces nobody). Call after authorization, before [`Hub::connect`].
    pub fn admit(&self, user: &str) -> Result<(), Duration> {
        let now = Instant::now();
        let policy = self.inner.policy;
        // With a full allowance a user may come `burst` times at once: `next_full` may run
        // ahead of now by up to (burst - 1) intervals before a connection is refused.
        let tolerance = policy.interval.saturating_mul(policy.burst - 1);
        let mut admissions = self.inner.admissions.lock();
        if admissions.next_full.len() >= admissions.sweep_at {
            admissions.next_full.retain(|_, full| *full > now);
            admissions.sweep_at = (admissions.next_full.len() * 2).max(ADMISSIONS_SWEEP);
        }
        let full = admissions.next_full.get(user).copied().unwrap_or(now).max(now);
        let ahead = full - now;
        if ahead > tolerance {
            drop(admissions);
            self.inner.throttled.fetch_add(1, Ordering::Relaxed);
            return Err(ahead - tolerance);
        }
        admissions.next_full.insert(user.to_string(), full + policy.interval);
        Ok(())
    }

    /// Subscribes `user` to `stations`, displacing the user's previous subscription (which
    /// yields [`CloseReason::Displaced`]). Subscribe BEFORE reading the replay from the log.
    pub fn connect(&self, user: &str, stations: HashSet<String>) -> Subscription {
        let conn = self.inner.next_conn.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(self.inner.capacity);
        let shared = Arc::new(Shared::default());
        let client = Arc::new(Client {
            conn,
            user: user.to_string(),
            stations: stations.clone(),
            tx,
            shared: Arc::clone(&shared),
        });
        let displaced = {
            let mut reg = self.inner.registry.write();
            let old = reg.by_user.get(user).copied().and_then(|old| reg.remove(old));
            for station in &stations {
                reg.by_station.entry(station.clone()).or_default().insert(conn, Arc::clone(&client));
            }
            reg.by_user.insert(user.to_string(), conn);
            reg.clients.insert(conn, client);
            old
        };
        if let Some(old) = displaced {
            if old.shared.end(CloseReason::Displaced) {
                self.inner.displaced.fetch_add(1, Ordering::Relaxed);
                info!(user, old_conn = old.conn, new_conn = conn, "stream: connection displaced by a newer one");
            }
        }
        debug!(user, conn, stations = stations.len(), "stream: subscribed");
        Subscription { conn, rx, shared, hub: Arc::downgrade(&self.inner), finished: false }
    }

    /// Hands `event` to every subscriber of its station; returns how many got it queued.
    ///
    /// Never blocks and never waits on a client: a client whose queue is full is dropped as a
    /// slow consumer instead.
    pub fn publish(&self, event: Arc<Event>) -> usize {
        self.inner.published.fetch_add(1, Ordering::Relaxed);
        let mut queued = 0usize;
        let mut slow = Vec::new();
        {
            let reg = self.inner.registry.read();
            if let Some(clients) = reg.by_station.get(&*event.station) {
                for client in clients.values() {
                    match client.tx.try_send(Arc::clone(&event)) {
                        Ok(()) => queued += 1,
                        Err(mpsc::error::TrySendError::Full(_)) => slow.push(client.conn),
                        Err(mpsc::error::TrySendError::Closed(_)) => {}
                    }
                }
            }
        }
        self.inner.delivered.fetch_add(queued as u64, Ordering::Relaxed);
        for conn in slow {
            self.drop_slow(conn, event.id);
        }
        queued
    }

    /// The stations someone subscribes to now (work done per station is done for them only).
    pub fn subscribed_stations(&self) -> Vec<String> {
        let reg = self.inner.registry.read();
        reg.by_station.iter().filter(|(_, clients)| !clients.is_empty()).map(|(s, _)| s.clone()).collect()
    }

    /// Ends every subscription (server shutdown): streams end without a final event, and
    /// clients reconnect with their last id.
    pub fn close_all(&self) {
        let removed: Vec<Arc<Client>> = {
            let mut reg = self.inner.registry.write();
            let conns: Vec<u64> = reg.clients.keys().copied().collect();
            conns.into_iter().filter_map(|c| reg.remove(c)).collect()
        };
        for client in &removed {
            client.shared.end(CloseReason::Shutdown);
        }
        info!(clients = removed.len(), "stream: all subscriptions closed");
    }

    /// Current counters.
    pub fn stats(&self) -> HubStats {
        HubStats {
            clients: self.inner.registry.read().clients.len(),
            published: self.inner.published.load(Ordering::Relaxed),
            delivered: self.inner.delivered.load(Ordering::Relaxed),
            dropped_slow: self.inner.dropped_slow.load(Ordering::Relaxed),
            displaced: self.inner.displaced.load(Ordering::Relaxed),
            throttled: self.inner.throttled.load(Ordering::Relaxed),
        }
    }

    /// How long deliveries took from an event's creation to its connection
    /// ([`LagHistogram`]); the HTTP side records into it.
    pub fn delivery_lag(&self) -> &Arc<LagHistogram> {
        &self.inner.lag
    }

    fn drop_slow(&self, conn: u64, at_event: u64) {
        let removed = self.inner.registry.write().remove(conn);
        if let Some(client) = removed {
            if client.shared.end(CloseReason::SlowConsumer) {
                self.inner.dropped_slow.fetch_add(1, Ordering::Relaxed);
                info!(
                    user = %client.user,
                    conn,
                    at_event,
                    capacity = self.inner.capacity,
                    "stream: slow consumer dropped (queue full)"
                );
            }
        }
    }
}

impl Registry {
    /// Unregisters a connection everywhere; dropping the returned entry closes its queue.
    fn remove(&mut self, conn: u64) -> Option<Arc<Client>> {
        let client = self.clients.remove(&conn)?;
        for station in &client.stations {
            if let Some(map) = self.by_station.get_mut(station) {
                map.remove(&conn);
                if map.is_empty() {
                    self.by_station.remove(station);
                }
            }
        }
        if self.by_user.get(&client.user) == Some(&conn) {
            self.by_user.remove(&client.user);
        }
        Some(client)
    }
}

/// One client's live feed: a [`Stream`] of [`Delivery`] that ends after `Closed` (or when the
/// hub is gone). Dropping it unregisters the client.
#[derive(Debug)]
pub struct Subscription {
    conn: u64,
    rx: mpsc::Receiver<Arc<Event>>,
    shared: Arc<Shared>,
    hub: Weak<HubInner>,
    finished: bool,
}

impl Subscription {
    /// The hub's id of this connection (for logs).
    pub fn conn_id(&self) -> u64 {
        self.conn
    }

    /// Registers the connection's closer; triggered at once if the subscription already ended.
    pub fn attach_closer(&self, closer: ConnectionCloser) {
        let mut slot = self.shared.closer.lock();
        if self.shared.end.get().is_some() {
            closer.request();
        }
        *slot = Some(closer);
    }
}

impl Stream for Subscription {
    type Item = Delivery;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(None);
        }
        // The end reason is checked before the queue: a dropped client skips what is still
        // queued (it replays it from the log) and gets its final event without delay.
        if let Some(reason) = this.shared.end.get() {
            this.finished = true;
            return Poll::Ready(Some(Delivery::Closed(*reason)));
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(event)) => Poll::Ready(Some(Delivery::Event(event))),
            Poll::Ready(None) => {
                // The queue closes only after the end reason is set (or the hub is gone).
                this.finished = true;
                let reason = this.shared.end.get().copied().unwrap_or(CloseReason::Shutdown);
                Poll::Ready(Some(Delivery::Closed(reason)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade() {
            let removed = hub.registry.write().remove(self.conn);
            if removed.is_some() {
                debug!(conn = self.conn, "stream: unsubscribed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::event_log::{default_retention, EventLog};
    use futures::StreamExt;
    use serde_json::json;
    use std::time::Duration;

    fn set(list: &[&str]) -> HashSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn log() -> (tempfile::TempDir, EventLog) {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        (dir, log)
    }

    async fn next(sub: &mut Subscription) -> Delivery {
        tokio::time::timeout(Duration::from_secs(5), sub.next()).await.expect("delivery in time").expect("open")
    }

    fn event_id(d: Delivery) -> u64 {
        match d {
            Delivery::Event(e) => e.id,
            other => panic!("expected event, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn publish_reaches_only_subscribers_of_the_station() {
        let (_d, log) = log();
        let hub = Hub::new(8);
        let mut a = hub.connect("alice", set(&["KNYC", "KMDW"]));
        let mut b = hub.connect("bob", set(&["KMDW"]));
        let e1 = log.append("KNYC", "observation", json!({}), chrono::Utc::now()).unwrap();
        let e2 = log.append("KMDW", "observation", json!({}), chrono::Utc::now()).unwrap();
        assert_eq!(hub.publish(e1), 1);
        assert_eq!(hub.publish(e2), 2);
        assert_eq!(event_id(next(&mut a).await), 1);
        assert_eq!(event_id(next(&mut a).await), 2);
        assert_eq!(event_id(next(&mut b).await), 2);
        let stats = hub.stats();
        assert_eq!((stats.clients, stats.published, stats.delivered), (2, 2, 3));
    }

    #[tokio::test]
    async fn full_queue_drops_only_that_client_ahead_of_its_backlog() {
        let (_d, log) = log();
        let hub = Hub::new(2);
        let mut slow = hub.connect("slow", set(&["KNYC"]));
        let mut fast = hub.connect("fast", set(&["KNYC"]));
        let closer = ConnectionCloser::new();
        slow.attach_closer(closer.clone());
        for i in 0..5u64 {
            let e = log.append("KNYC", "observation", json!({}), chrono::Utc::now()).unwrap();
            hub.publish(e);
            assert_eq!(event_id(next(&mut fast).await), i + 1);
        }
        // Slow never read: 2 queued, the third overflowed and dropped it.
        assert!(matches!(next(&mut slow).await, Delivery::Closed(CloseReason::SlowConsumer)));
        assert!(slow.next().await.is_none());
        tokio::time::timeout(Duration::from_secs(1), closer.requested()).await.expect("connection close requested");
        let stats = hub.stats();
        assert_eq!((stats.clients, stats.dropped_slow), (1, 1));
    }

    #[tokio::test]
    async fn second_connection_of_a_user_displaces_the_first() {
        let (_d, log) = log();
        let hub = Hub::new(8);
        let mut first = hub.connect("alice", set(&["KNYC"]));
        let mut second = hub.connect("alice", set(&["KNYC"]));
        assert!(matches!(next(&mut first).await, Delivery::Closed(CloseReason::Displaced)));
        assert!(first.next().await.is_none());
        let e = log.append("KNYC", "observation", json!({}), chrono::Utc::now()).unwrap();
        assert_eq!(hub.publish(e), 1);
        assert_eq!(event_id(next(&mut second).await), 1);
        // Dropping the displaced subscription must not unregister the newer one.
        drop(first);
        assert_eq!(hub.stats().clients, 1);
        assert_eq!(hub.stats().displaced, 1);
    }

    #[tokio::test]
    async fn closer_attached_after_the_end_fires_immediately() {
        let hub = Hub::new(8);
        let first = hub.connect("alice", set(&["KNYC"]));
        let _second = hub.connect("alice", set(&["KNYC"]));
        let closer = ConnectionCloser::new();
        first.attach_closer(closer.clone());
        tokio::time::timeout(Duration::from_secs(1), closer.requested()).await.expect("close requested");
    }

    #[tokio::test]
    async fn dropping_a_subscription_unregisters_it() {
        let hub = Hub::new(8);
        let a = hub.connect("alice", set(&["KNYC"]));
        let _b = hub.connect("bob", set(&["KNYC"]));
        drop(a);
        assert_eq!(hub.stats().clients, 1);
        let reg = hub.inner.registry.read();
        assert!(!reg.by_user.contains_key("alice"));
        assert_eq!(reg.by_station["KNYC"].len(), 1);
    }

    #[test]
    fn admit_allows_a_burst_then_one_per_interval_per_user() {
        let policy = ReconnectPolicy { burst: 3, interval: Duration::from_millis(300), ..Default::default() };
        let hub = Hub::with_policy(8, policy);
        for _ in 0..3 {
            hub.admit("alice").unwrap();
        }
        let wait = hub.admit("alice").unwrap_err();
        assert!(wait > Duration::ZERO && wait <= policy.interval, "{wait:?}");
        // Refusals are not counted: waiting what was asked is enough.
        assert!(hub.admit("alice").is_err());
        hub.admit("bob").unwrap();
        std::thread::sleep(hub.admit("alice").unwrap_err());
        hub.admit("alice").unwrap();
        assert!(hub.admit("alice").is_err());
        assert_eq!(hub.stats().throttled, 4);
        // A user idle for burst × interval has its whole burst again.
        std::thread::sleep(policy.interval * 3);
        for _ in 0..3 {
            hub.admit("alice").unwrap();
        }
    }

    #[tokio::test]
    async fn close_all_ends_every_subscription() {
        let hub = Hub::new(8);
        let mut a = hub.connect("alice", set(&["KNYC"]));
        let mut b = hub.connect("bob", set(&["KMDW"]));
        hub.close_all();
        assert!(matches!(next(&mut a).await, Delivery::Closed(CloseReason::Shutdown)));
        assert!(matches!(next(&mut b).await, Delivery::Closed(CloseReason::Shutdown)));
        assert_eq!(hub.stats().clients, 0);
    }
}
