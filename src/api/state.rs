//! What every handler shares ([`AppState`]): the key store and rate limiter (shared with
//! the other front doors, [`Access`]), the live service with its query session, the clock
//! and the response caches.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::accuracy_cache::AccuracyCache;
use super::forecast_cache::ForecastCache;
use super::latest_cache::LatestCache;
use super::latest_runs::LatestRuns;
use super::nws_cache::NwsCache;
use crate::access::keys::KeyStore;
use crate::access::limits::RateLimiter;
use crate::access::Access;
use crate::bracket_odds::HeldRows;
use crate::clock::Clock;
use crate::feeds::Feeds;
use crate::stream::{EventLog, Hub};
use crate::write::WriteService;

/// The push stream's event source as the REST port's relay needs it: the one event log and
/// hub the HTTPS stream serves (so the relay is no second event source).
#[derive(Clone)]
pub struct StreamFeed {
    pub hub: Hub,
    pub log: Arc<EventLog>,
    /// Heartbeat period of the stream, kept by the relay too.
    pub heartbeat: Duration,
}

/// Everything a handler needs, cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<AppInner>);

/// The shared parts behind [`AppState`].
pub struct AppInner {
    pub keys: Arc<KeyStore>,
    pub limiter: Arc<RateLimiter>,
    pub live: Arc<WriteService>,
    pub clock: Arc<dyn Clock>,
    /// The accuracy tables per station (model_accuracy.php).
    pub accuracy: AccuracyCache,
    /// Recent raw forecast rows per (location, model) (forecasts.php).
    pub forecasts: ForecastCache,
    /// The NWS hourly versions per (station, date) (nws_forecasts.php).
    pub nws_versions: NwsCache,
    /// The newest lake observation of stations the hot state cannot answer for (latest).
    pub latest: LatestCache,
    /// The latest run per (location, model) (stations.php?include=latest_runs).
    pub latest_runs: LatestRuns,
    /// The rows behind recent bracket odds (brackets.php, shared with the stream's watcher).
    pub bracket_rows: Arc<HeldRows>,
    /// Where the HTTPS push stream listens, once it does (unset: the stream is not
    /// enabled). The REST port names it to clients that ask it for the stream.
    stream_addr: OnceLock<SocketAddr>,
    /// The live feeds this process runs, once started (unset: none; the status endpoint
    /// and /metrics then show stations only).
    feeds: OnceLock<Arc<Feeds>>,
    /// The stream's event log and hub, once the stream runs (the dashboard's relay).
    stream_feed: OnceLock<StreamFeed>,
}

impl std::ops::Deref for AppState {
    type Target = AppInner;
    fn deref(&self) -> &AppInner {
        &self.0
    }
}

impl AppState {
    pub fn new(keys: KeyStore, limiter: RateLimiter, live: Arc<WriteService>, clock: Arc<dyn Clock>) -> Self {
        AppState(Arc::new(AppInner {
            keys: Arc::new(keys),
            limiter: Arc::new(limiter),
            live,
            clock,
            accuracy: Default::default(),
            forecasts: Default::default(),
            nws_versions: Default::default(),
            latest: Default::default(),
            latest_runs: Default::default(),
            bracket_rows: Default::default(),
            stream_addr: OnceLock::new(),
            feeds: OnceLock::new(),
            stream_feed: OnceLock::new(),
        }))
    }
    /// Records the feeds this process runs (once; later calls are ignored).
    pub fn set_feeds(&self, feeds: Arc<Feeds>) {
        let _ = self.feeds.set(feeds);
    }
    /// The feeds this process runs, if any.
    pub fn feeds(&self) -> Option<&Arc<Feeds>> {
        self.feeds.get()
    }
    /// Records the push stream's listening address (once; later calls are ignored).
    pub fn set_stream_addr(&self, addr: SocketAddr) {
        let _ = self.stream_addr.set(addr);
    }
    /// Records the stream's event log and hub for the REST port's relay (once).
    pub fn set_stream_feed(&self, feed: StreamFeed) {
        let _ = self.stream_feed.set(feed);
    }
    /// The stream's event log and hub, when the stream is enabled.
    pub fn stream_feed(&self) -> Option<&StreamFeed> {
        self.stream_feed.get()
    }
    /// The push stream's listening address, when the stream is enabled.
    pub fn stream_addr(&self) -> Option<SocketAddr> {
        self.stream_addr.get().copied()
    }
    /// The keys and limits, for the front doors that are not REST (SQL, the stream).
    pub fn access(&self) -> Access {
        Access::new(Arc::clone(&self.keys), Arc::clone(&self.limiter))
    }
    pub fn lake(&self) -> &crate::lake::Lake {
        &self.live.lake
    }
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }
}

impl From<AppState> for crate::sqlwire::WireState {
    /// The SQL servers' part of a server's state (they share its live service and access).
    fn from(state: AppState) -> Self {
        crate::sqlwire::WireState { live: Arc::clone(&state.live), access: state.access() }
    }
}
