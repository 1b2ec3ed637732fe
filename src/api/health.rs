//! The figures `GET /api/v2/status` and `/metrics` both show, computed once per request
//! from the feeds' [`SourceStatus`] (kept by the feeds runner) and each station's hot state
//! (the age of its newest reading, its expected cadence, and whether it is down by the rule
//! of `extremes::staleness`), and the push stream's fan-out (the hub's counters and its
//! delivery lag). One function builds them, so the JSON and the Prometheus text never
//! disagree.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::state::AppState;
use crate::catalog::Catalog;
use crate::extremes::Staleness;
use crate::feeds::SourceStatus;
use crate::stream::lag::LagSnapshot;

/// The body of `GET /api/v2/status`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Health {
    /// The server's time (RFC 3339 UTC).
    pub time: DateTime<Utc>,
    /// Names of the sources that are late: no successful poll for more than three of
    /// their intervals.
    pub late_sources: Vec<String>,
    /// Codes of the stations that are down now (no reading for more than two expected
    /// reports plus 10 minutes, or none held at all from a station a feed observes).
    pub down_stations: Vec<String>,
    /// WAL inputs not yet flushed to the lake.
    pub pending_wal_inputs: usize,
    /// Every feed this server runs (empty without `[sources]` in the config file).
    pub sources: Vec<SourceStatus>,
    /// Every catalog station, by code.
    pub stations: Vec<StationHealth>,
    /// The push stream's fan-out since the server started; null when it runs no stream.
    pub stream: Option<StreamHealth>,
}

/// The push stream's fan-out since the server started: what its subscribers are sent and
/// how late, the server's own share of their latency (the network and the client's work
/// come on top).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StreamHealth {
    /// Connections subscribed now.
    pub connections: usize,
    /// Events published.
    pub events_published: u64,
    /// Event copies queued to connections, one per subscribed connection per event.
    pub deliveries: u64,
    /// Connections dropped because their queue overflowed (a client too slow to read).
    pub dropped_slow: u64,
    /// The 50th percentile of the delivery lag, in milliseconds: from an event's creation
    /// to the moment its connection writes it, over every delivery since the server
    /// started; the upper bound of its bucket, at most 12.5 % above the true value. Null
    /// before the first delivery.
    pub delivery_lag_p50_ms: Option<f64>,
    /// The 90th percentile, as above.
    pub delivery_lag_p90_ms: Option<f64>,
    /// The 99th percentile, as above.
    pub delivery_lag_p99_ms: Option<f64>,
    /// The lags' counts, for `/metrics`' histogram.
    #[serde(skip)]
    pub lag: LagSnapshot,
}

impl StreamHealth {
    /// The fan-out of `hub` now.
    pub fn of(hub: &crate::stream::Hub) -> StreamHealth {
        let stats = hub.stats();
        let lag = hub.delivery_lag().snapshot();
        // Whole microseconds, as the buckets are: no binary-fraction tail in the JSON.
        let ms = |q| lag.quantile(q).map(|d| d.as_micros() as f64 / 1000.0);
        StreamHealth {
            connections: stats.clients,
            events_published: stats.published,
            deliveries: stats.delivered,
            dropped_slow: stats.dropped_slow,
            delivery_lag_p50_ms: ms(0.5),
            delivery_lag_p90_ms: ms(0.9),
            delivery_lag_p99_ms: ms(0.99),
            lag,
        }
    }
}

/// One station's freshness.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StationHealth {
    pub station: String,
    /// Time of the newest reading held (METAR, SPECI, HF-METAR or one-minute); null when
    /// the server holds none from the last two days.
    pub newest_utc: Option<DateTime<Utc>>,
    /// Seconds since then.
    pub age_secs: Option<i64>,
    /// The station's expected spacing of routine reports, in seconds.
    pub cadence_secs: Option<i64>,
    /// Down now ("station currently down" in its data_quality).
    pub down: bool,
}

/// Whether a station is down: by the staleness rule while it has a reading held; with
/// none held (the hot state keeps the last two days or so), when a running feed polls it
/// for observations. That station has been silent for days, far longer than any
/// cadence allows: it is down, not unknown. A station nothing is expected from (no
/// feed observes it: data arrive by `ingest` or not at all) is not called down for
/// having no data.
fn is_down(fresh: Option<Staleness>, observed: bool) -> bool {
    fresh.map_or(observed, |f| f.down)
}

/// The health as of the server's clock.
pub fn health(state: &AppState) -> Health {
    let now = state.now();
    let sources = state.feeds().map(|f| f.status()).unwrap_or_default();
    let observed = state.feeds().map(|f| f.observed_stations()).unwrap_or_default();
    let stations: Vec<StationHealth> = Catalog::global()
        .all()
        .iter()
        .map(|s| {
            let fresh = state.live.hot.read(&s.code, |h| h.live.staleness(now)).flatten();
            StationHealth {
                station: s.code.clone(),
                newest_utc: fresh.map(|f| f.newest),
                age_secs: fresh.map(|f| f.age_secs),
                cadence_secs: fresh.map(|f| f.cadence_secs),
                down: is_down(fresh, observed.contains(&s.code)),
            }
        })
        .collect();
    Health {
        time: now,
        late_sources: sources.iter().filter(|s| s.late).map(|s| s.name.clone()).collect(),
        down_stations: stations.iter().filter(|s| s.down).map(|s| s.station.clone()).collect(),
        pending_wal_inputs: state.live.pending(),
        sources,
        stations,
        stream: state.stream_feed().map(|f| StreamHealth::of(&f.hub)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_station_silent_for_longer_than_memory_is_down_when_a_feed_expects_it() {
        let at = |age_secs| Staleness {
            newest: DateTime::from_timestamp(1_750_000_000 - age_secs, 0).unwrap(),
            age_secs,
            cadence_secs: 3600,
            down: age_secs > Staleness::down_after(chrono::Duration::hours(1)).num_seconds(),
        };
        // Held readings decide by the staleness rule, whoever polls the station.
        assert!(!is_down(Some(at(600)), true));
        assert!(is_down(Some(at(3 * 3600)), false));
        // Nothing held from the last days: down when a feed observes it (dead for long),
        // not when no one sends its data.
        assert!(is_down(None, true));
        assert!(!is_down(None, false));
    }
}
