//! What every handler shares ([`AppState`]): the key store, the rate limiter, the live
//! service with its query session, the clock and the response caches.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use super::accuracy_cache::AccuracyCache;
use super::forecast_cache::ForecastCache;
use super::keys::KeyStore;
use super::latest_cache::LatestCache;
use super::limits::RateLimiter;
use crate::clock::Clock;
use crate::feeds::Feeds;
use crate::write::LiveService;

/// Everything a handler needs, cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<AppInner>);

/// The shared parts behind [`AppState`].
pub struct AppInner {
    pub keys: KeyStore,
    pub limiter: RateLimiter,
    pub live: Arc<LiveService>,
    pub clock: Arc<dyn Clock>,
    /// The accuracy tables per station (model_accuracy.php).
    pub accuracy: AccuracyCache,
    /// Recent raw forecast rows per (location, model) (forecasts.php).
    pub forecasts: ForecastCache,
    /// The newest lake observation of stations the hot state cannot answer for (latest).
    pub latest: LatestCache,
    /// Where the HTTPS push stream listens, once it does (unset: the stream is not
    /// enabled). The REST port names it to clients that ask it for the stream.
    stream_addr: OnceLock<SocketAddr>,
    /// The live feeds this process runs, once started (unset: none; the status endpoint
    /// and /metrics then show stations only).
    feeds: OnceLock<Arc<Feeds>>,
}

impl std::ops::Deref for AppState {
    type Target = AppInner;
    fn deref(&self) -> &AppInner {
        &self.0
    }
}

impl AppState {
    pub fn new(keys: KeyStore, limiter: RateLimiter, live: Arc<LiveService>, clock: Arc<dyn Clock>) -> Self {
        AppState(Arc::new(AppInner {
            keys,
            limiter,
            live,
            clock,
            accuracy: Default::default(),
            forecasts: Default::default(),
            latest: Default::default(),
            stream_addr: OnceLock::new(),
            feeds: OnceLock::new(),
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
    /// The push stream's listening address, when the stream is enabled.
    pub fn stream_addr(&self) -> Option<SocketAddr> {
        self.stream_addr.get().copied()
    }
    pub fn lake(&self) -> &crate::lake::Lake {
        &self.live.lake
    }
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }
}
