//! The HTTP API (axum): v2 and legacy v1 endpoints, authentication and rate limits, the
//! OpenAPI document. One module per endpoint; every path lives in [`paths`].

pub mod auth;
pub mod docs;
pub mod error;
pub mod forecast_cache;
pub mod hot_cache;
pub mod ingest;
pub mod json_stream;
pub mod keys;
pub mod limits;
pub mod observation_json;
pub mod params;
pub mod paths;
pub mod server;
pub mod v1;
pub mod v2;

use std::sync::Arc;

use crate::clock::Clock;
use crate::ingest::live::LiveService;
use keys::KeyStore;
use limits::RateLimiter;

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
    pub accuracy: v2::model_accuracy::AccuracyCache,
    /// Recent raw forecast rows per (location, model) (forecasts.php).
    pub forecasts: forecast_cache::ForecastCache,
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
        }))
    }
    pub fn lake(&self) -> &crate::lake::Lake {
        &self.live.lake
    }
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }
}
