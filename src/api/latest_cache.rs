//! The lake's newest observation per station, for `latest` (v1, v2) and `nearby`: how it
//! is looked up is in api/v2/observations.rs; this is what is kept and for how long.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration as StdDuration;

use parking_lot::{Mutex, MutexGuard};

use super::observation_json::WithReports;
use crate::decode::types::Metar;
use crate::lake::loading_cache::LoadingCache;

/// How long the lake's newest observation of a station (or "none") stays in memory: rows
/// another process writes to the lake show in `latest` within this time.
pub const LATEST_LAKE_TTL: StdDuration = StdDuration::from_secs(60);

/// The lake's newest observation per station, with its day's reports (`None`: the lake
/// has no row of the station), kept for [`LATEST_LAKE_TTL`].
pub struct LatestCache {
    pub(crate) lake: LoadingCache<String, Option<(Metar, WithReports)>>,
    /// Stations whose background refresh is running.
    refreshing: Mutex<HashSet<String>>,
    /// The TTL in milliseconds ([`LATEST_LAKE_TTL`] unless set).
    ttl_ms: AtomicU64,
    /// Lake lookups run so far (monitoring, tests).
    pub(crate) lookups: AtomicU64,
}

impl Default for LatestCache {
    fn default() -> Self {
        LatestCache {
            lake: LoadingCache::default(),
            refreshing: Mutex::new(HashSet::new()),
            ttl_ms: AtomicU64::new(LATEST_LAKE_TTL.as_millis() as u64),
            lookups: AtomicU64::new(0),
        }
    }
}

impl LatestCache {
    /// How long a lake answer is kept.
    pub fn ttl(&self) -> StdDuration {
        StdDuration::from_millis(self.ttl_ms.load(Ordering::Relaxed))
    }

    /// Changes how long a lake answer is kept (tests; the default is [`LATEST_LAKE_TTL`]).
    pub fn set_ttl(&self, ttl: StdDuration) {
        self.ttl_ms.store(ttl.as_millis() as u64, Ordering::Relaxed);
    }

    /// How many lake lookups ran (each is at most one per station per TTL).
    pub fn lookups(&self) -> u64 {
        self.lookups.load(Ordering::Relaxed)
    }

    pub(crate) fn refreshing(&self) -> MutexGuard<'_, HashSet<String>> {
        self.refreshing.lock()
    }
}
