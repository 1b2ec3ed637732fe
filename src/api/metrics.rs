//! `GET /metrics` (admin keys, as `Authorization: Bearer <key>`): the figures of
//! `GET /api/v2/status` in the Prometheus text exposition format, encoded by
//! `prometheus-client`.
//!
//! Why a key: the endpoint names the sources, their errors and every station's state, and
//! the REST port may face the internet; Prometheus sends a bearer token with
//! `authorization: { credentials: <admin key> }` in its scrape config. Scrapes count
//! against the key's rate limit like any request: scrape at most every 15 s or so.
//!
//! The registry is built from a snapshot at each scrape: the runner owns the counters (the
//! same ones `feeds list` and the status endpoint show), so nothing is counted twice. The
//! stream's delivery lag is a histogram whose buckets are Prometheus' usual bounds over
//! the hub's finer ones ([`DeliveryLag`]), so `histogram_quantile` over a rate gives the
//! lag of any recent window.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::auth::{require_admin_for, Caller};
use super::error::{ApiError, ApiResult};
use super::health::{health, Health};
use super::state::AppState;
use crate::stream::lag::LagSnapshot;

/// The exposition format's content type.
pub const CONTENT_TYPE_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

type Labels = Vec<(&'static str, String)>;

#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    operation_id = "getMetrics",
    summary = "Admin: the status figures in the Prometheus text format",
    description = "Admin keys only (Prometheus sends one as a bearer token). The figures of GET /api/v2/status as \
                   Prometheus text exposition: `wxlake_feed_*` per source, `wxlake_station_*` per station, \
                   `wxlake_stream_*` for the push stream. Scrapes count against the key's rate limit.",
    responses(
        (status = 200, description = "Prometheus text exposition: wxlake_feed_* per source, wxlake_station_* per station", body = String, content_type = "text/plain"),
        (status = 403, description = "the key is not an admin key", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> ApiResult<Response> {
    require_admin_for(&caller, "/metrics")?;
    let text = encode(&health(&state)).map_err(ApiError::internal)?;
    Ok(([(CONTENT_TYPE, CONTENT_TYPE_TEXT)], text).into_response())
}

/// The exposition text of `h`.
pub fn encode(h: &Health) -> Result<String, std::fmt::Error> {
    let counter = Family::<Labels, Counter>::default;
    let gauge = Family::<Labels, Gauge>::default;
    let (requests, polls, failed, bytes, rows, duplicates, errors) =
        (counter(), counter(), counter(), counter(), counter(), counter(), counter());
    let (late, age, down, cadence) = (gauge(), gauge(), gauge(), gauge());
    let last_success = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    let last_error = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    let ts = |t: chrono::DateTime<chrono::Utc>| t.timestamp_millis() as f64 / 1000.0;
    for s in &h.sources {
        let l: Labels = vec![("source", s.name.clone())];
        requests.get_or_create(&l).inc_by(s.requests);
        polls.get_or_create(&l).inc_by(s.polls);
        failed.get_or_create(&l).inc_by(s.failed_polls);
        bytes.get_or_create(&l).inc_by(s.bytes);
        rows.get_or_create(&l).inc_by(s.rows_stored);
        duplicates.get_or_create(&l).inc_by(s.rows_duplicate);
        late.get_or_create(&l).set(i64::from(s.late));
        for (kind, n) in &s.errors {
            errors.get_or_create(&vec![("source", s.name.clone()), ("kind", kind.clone())]).inc_by(*n);
        }
        if let Some(t) = s.last_success {
            last_success.get_or_create(&l).set(ts(t));
        }
        if let Some(e) = &s.last_error {
            last_error.get_or_create(&l).set(ts(e.at));
        }
    }
    for st in &h.stations {
        let l: Labels = vec![("station", st.station.clone())];
        down.get_or_create(&l).set(i64::from(st.down));
        if let (Some(a), Some(c)) = (st.age_secs, st.cadence_secs) {
            age.get_or_create(&l).set(a);
            cadence.get_or_create(&l).set(c);
        }
    }
    let mut r = Registry::with_prefix("wxlake");
    r.register("feed_requests", "Requests made by a feed (all outcomes)", requests);
    r.register("feed_polls", "Polls finished", polls);
    r.register("feed_failed_polls", "Polls with at least one failed request", failed);
    r.register("feed_errors", "Failed requests by kind", errors);
    r.register("feed_bytes", "Response body bytes received", bytes);
    r.register("feed_rows_stored", "Rows the feed handed to the store, new to the service", rows);
    r.register("feed_rows_duplicate", "Rows the feed fetched again that the service already held", duplicates);
    r.register("feed_last_success_timestamp_seconds", "End of the last poll with no failed request", last_success);
    r.register("feed_last_error_timestamp_seconds", "When the last request failed", last_error);
    r.register("feed_late", "1 when the source had no successful poll for more than 3 intervals", late);
    r.register("station_observation_age_seconds", "Age of the station's newest reading", age);
    r.register("station_cadence_seconds", "The station's expected spacing of routine reports", cadence);
    r.register("station_down", "1 when the station is down (data_quality: station currently down)", down);
    if let Some(st) = &h.stream {
        let connections: Gauge = Gauge::default();
        connections.set(i64::try_from(st.connections).unwrap_or(i64::MAX));
        let (published, deliveries, dropped): (Counter, Counter, Counter) = Default::default();
        published.inc_by(st.events_published);
        deliveries.inc_by(st.deliveries);
        dropped.inc_by(st.dropped_slow);
        r.register("stream_connections", "Push stream connections subscribed now", connections);
        r.register("stream_events_published", "Events published to the push stream", published);
        r.register("stream_deliveries", "Event copies queued to connections", deliveries);
        r.register("stream_dropped_slow", "Connections dropped because their queue overflowed", dropped);
        r.register(
            "stream_delivery_lag_seconds",
            "From an event's creation to its connection's write (the server's share of a client's latency)",
            DeliveryLag(st.lag.clone()),
        );
    }
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &r)?;
    Ok(out)
}

/// Upper bounds of the delivery lag's buckets, in seconds (Prometheus' usual ones, from a
/// millisecond to ten seconds).
const LAG_BOUNDS_SECS: [f64; 12] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The stream's delivery lag as a Prometheus histogram. Each bound counts the deliveries
/// whose hub bucket lies wholly below it, so a delivery within 12.5 % under a bound may
/// count in the next one up: never in a lower one than its lag.
#[derive(Debug)]
struct DeliveryLag(LagSnapshot);

impl EncodeMetric for DeliveryLag {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let mut counted = 0;
        let mut buckets: Vec<(f64, u64)> = LAG_BOUNDS_SECS
            .iter()
            .map(|&bound| {
                let upto = self.0.at_most(Duration::from_secs_f64(bound));
                let here = upto - counted;
                counted = upto;
                (bound, here)
            })
            .collect();
        buckets.push((f64::INFINITY, self.0.count() - counted));
        encoder.encode_histogram::<NoLabelSet>(self.0.sum().as_secs_f64(), self.0.count(), &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::health::StationHealth;
    use crate::feeds::status::LastError;
    use crate::feeds::SourceStatus;

    /// Each of `lines` is a whole line of the exposition `text`.
    fn assert_lines(text: &str, lines: &[&str]) {
        for line in lines {
            assert!(text.lines().any(|l| l == *line), "{line} missing from\n{text}");
        }
    }

    #[test]
    fn the_exposition_names_each_source_and_station_with_its_figures() {
        let t = |s: &str| s.parse::<chrono::DateTime<chrono::Utc>>().unwrap();
        let mut src = SourceStatus::new("awc_metar", std::time::Duration::from_secs(60), t("2026-09-25T06:00:00Z"));
        src.requests = 12;
        src.bytes = 3400;
        src.rows_stored = 9;
        src.polls = 6;
        src.failed_polls = 2;
        src.errors.insert("timeout".into(), 2);
        src.last_success = Some(t("2026-09-25T06:04:00.5Z"));
        src.last_error =
            Some(LastError { at: t("2026-09-25T06:05:00Z"), kind: "timeout".into(), message: "no answer".into() });
        src.late = true;
        let station = |code: &str, age: Option<i64>, down| StationHealth {
            station: code.into(),
            newest_utc: age.map(|a| t("2026-09-25T06:10:00Z") - chrono::Duration::seconds(a)),
            age_secs: age,
            cadence_secs: age.map(|_| 3600),
            down,
        };
        let h = Health {
            time: t("2026-09-25T06:10:00Z"),
            late_sources: vec!["awc_metar".into()],
            down_stations: vec!["KMDW".into()],
            pending_wal_inputs: 0,
            stream: None,
            sources: vec![src],
            stations: vec![
                station("KNYC", Some(600), false),
                station("KMDW", Some(9000), true),
                station("EGLL", None, false),
            ],
        };
        let text = encode(&h).unwrap();
        assert_lines(
            &text,
            &[
                "# TYPE wxlake_feed_requests counter",
                "wxlake_feed_requests_total{source=\"awc_metar\"} 12",
                "wxlake_feed_errors_total{source=\"awc_metar\",kind=\"timeout\"} 2",
                "wxlake_feed_bytes_total{source=\"awc_metar\"} 3400",
                "wxlake_feed_last_success_timestamp_seconds{source=\"awc_metar\"} 1790316240.5",
                "wxlake_feed_late{source=\"awc_metar\"} 1",
                "wxlake_station_observation_age_seconds{station=\"KMDW\"} 9000",
                "wxlake_station_down{station=\"KMDW\"} 1",
                "wxlake_station_down{station=\"EGLL\"} 0",
                "# EOF",
            ],
        );
        assert!(!text.contains("age_seconds{station=\"EGLL\"}"), "no age without a reading");
        assert!(!text.contains("wxlake_stream_"), "no stream figures without a stream");
    }

    /// The stream's figures: its connections, and the delivery lag as a cumulative
    /// histogram whose every delivery sits at or below the first bound above its lag.
    #[test]
    fn the_stream_lag_is_a_histogram_over_prometheus_bounds() {
        let hub = crate::stream::Hub::new(16);
        let _subscribed = hub.connect("u", ["KNYC".to_string()].into());
        for ms in [2, 40, 3000] {
            hub.delivery_lag().record(Duration::from_millis(ms));
        }
        let stream = crate::api::health::StreamHealth::of(&hub);
        assert_eq!((stream.connections, stream.dropped_slow), (1, 0));
        let p50 = stream.delivery_lag_p50_ms.unwrap();
        assert!((40.0..=45.0).contains(&p50), "{p50}");
        let h = Health {
            time: chrono::Utc::now(),
            late_sources: vec![],
            down_stations: vec![],
            pending_wal_inputs: 0,
            sources: vec![],
            stations: vec![],
            stream: Some(stream),
        };
        let text = encode(&h).unwrap();
        assert_lines(
            &text,
            &[
                "wxlake_stream_connections 1",
                "# TYPE wxlake_stream_delivery_lag_seconds histogram",
                "wxlake_stream_delivery_lag_seconds_bucket{le=\"0.001\"} 0",
                "wxlake_stream_delivery_lag_seconds_bucket{le=\"0.005\"} 1",
                "wxlake_stream_delivery_lag_seconds_bucket{le=\"0.025\"} 1",
                "wxlake_stream_delivery_lag_seconds_bucket{le=\"0.05\"} 2",
                "wxlake_stream_delivery_lag_seconds_bucket{le=\"2.5\"} 2",
                "wxlake_stream_delivery_lag_seconds_bucket{le=\"5.0\"} 3",
                "wxlake_stream_delivery_lag_seconds_bucket{le=\"+Inf\"} 3",
                "wxlake_stream_delivery_lag_seconds_count 3",
                "wxlake_stream_delivery_lag_seconds_sum 3.042",
            ],
        );
    }
}
