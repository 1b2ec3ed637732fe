//! METAR/SPECI from the aviationweather.gov data API:
//! `GET {base}/api/data/metar?ids=A,B,...&format=json&hours=N`.
//!
//! The stations are split into batches, one request per batch, the batches of a poll in
//! parallel (each batch has at most one request in flight, and the client's per-host cap
//! bounds them together). The JSON array is the container the METAR decoder already reads
//! (`rawOb` dated by `obsTime`), so the body goes to the sink unchanged as
//! [`Format::Metar`]. Each request reaches `hours` back, more than the interval: a failed
//! poll is caught up by the next, and the lake's natural keys store a report once.
//!
//! AWC keeps the last 15 days, so the feed is also an [`Archive`] for short backfills: one
//! unit per station and UTC day, `...&hours=24&date=<next day>_0000` (the `date` parameter
//! ends the window), well under AWC's 400-report cap.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde::de::IgnoredAny;
use serde::Deserialize;
use url::Url;

use super::http::{Fetched, HttpClient};
use super::seconds::secs;
use super::sink::FeedSink;
use super::source::{Archive, ArchiveUnit, FeedError, PollReport, Source};
use crate::catalog::Catalog;
use crate::decode::metar::is_station_id;
use crate::ingest::{Format, IngestOptions};

/// The source's name, as in `[sources.awc_metar]`.
pub const NAME: &str = "awc_metar";

/// The most reports AWC returns for one request: a batch answering that many may have
/// been cut, and its stations should be split into smaller batches.
pub const AWC_MAX_RESULTS: usize = 400;

/// `[sources.awc_metar]`: METAR/SPECI from the aviationweather.gov data API,
/// `GET {base_url}/api/data/metar?ids=A,B&format=json&hours=N`, one request per batch.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AwcMetarConfig {
    /// `enabled` (default true): false keeps the table but stops the feed.
    pub enabled: bool,
    /// `base_url` (default `https://aviationweather.gov`).
    pub base_url: String,
    /// `interval_secs` (default 60): AWC asks for no endpoint to be polled more often than
    /// once a minute per client.
    #[serde(rename = "interval_secs", deserialize_with = "secs")]
    pub interval: Duration,
    /// `stations` (default: every station of the catalog): ICAO ids.
    pub stations: Vec<String>,
    /// `batch_size` (default 40): stations per request. AWC answers at most 400 reports a
    /// request: 40 stations over 2 hours is about 120, with room for SPECIs.
    pub batch_size: usize,
    /// `hours` (default 2): how far back each request reaches. Overlapping windows let a
    /// poll that failed be caught up by the next; the lake stores each report once.
    pub hours: f64,
    /// `timeout_secs` (default 20): one request's limit, connect to last byte.
    #[serde(rename = "timeout_secs", deserialize_with = "secs")]
    pub timeout: Duration,
}

impl Default for AwcMetarConfig {
    fn default() -> Self {
        AwcMetarConfig {
            enabled: true,
            base_url: "https://aviationweather.gov".to_string(),
            interval: Duration::from_secs(60),
            stations: Catalog::global().all().iter().map(|s| s.code.clone()).collect(),
            batch_size: 40,
            hours: 2.0,
            timeout: Duration::from_secs(20),
        }
    }
}

impl AwcMetarConfig {
    /// Upper-cases the station ids and checks every value; the message says which.
    pub fn validated(mut self) -> Result<Self, String> {
        let bad = |message: String| Err(message);
        if let Err(e) = Url::parse(&self.base_url) {
            return bad(format!("base_url {:?}: {e}", self.base_url));
        }
        for s in &mut self.stations {
            *s = s.trim().to_ascii_uppercase();
            if !is_station_id(s) {
                return bad(format!("station {s:?} is not a 4-character ICAO id"));
            }
        }
        if self.stations.is_empty() {
            return bad("stations is empty".to_string());
        }
        if self.batch_size == 0 {
            return bad("batch_size must be at least 1".to_string());
        }
        if !(self.hours.is_finite() && self.hours > 0.0) {
            return bad(format!("hours must be a positive number, found {}", self.hours));
        }
        if self.interval.is_zero() || self.timeout.is_zero() {
            return bad("interval_secs and timeout_secs must be positive".to_string());
        }
        if self.hours * 3600.0 < self.interval.as_secs_f64() {
            return bad(format!(
                "hours ({}) reaches back less than one interval ({} s): reports between polls would be missed",
                self.hours,
                self.interval.as_secs_f64()
            ));
        }
        Ok(self)
    }
}

/// The aviationweather.gov METAR feed.
#[derive(Debug)]
pub struct AwcMetar {
    cfg: AwcMetarConfig,
    client: Arc<HttpClient>,
    urls: Vec<Url>,
}

/// What one batch's request came to.
#[derive(Debug)]
enum Batch {
    NotModified,
    Empty { bytes: usize },
    Stored { bytes: usize, stored: super::sink::Stored },
}

impl AwcMetar {
    /// The feed for a validated `cfg` (see [`AwcMetarConfig::validated`]).
    pub fn new(cfg: AwcMetarConfig, client: Arc<HttpClient>) -> Result<Self, FeedError> {
        let urls = batch_urls(&cfg)?;
        Ok(AwcMetar { cfg, client, urls })
    }

    /// One URL per batch of stations, in the configured order.
    pub fn urls(&self) -> &[Url] {
        &self.urls
    }

    async fn fetch_batch(&self, url: &Url, sink: &dyn FeedSink) -> Result<Batch, FeedError> {
        let body = match self.client.get(url, self.cfg.timeout).await? {
            Fetched::NotModified => return Ok(Batch::NotModified),
            Fetched::New(body) => body,
        };
        let bytes = body.bytes.len();
        let reports = count_reports(url, &body.bytes)?;
        if reports >= AWC_MAX_RESULTS {
            tracing::warn!(%url, reports, "AWC answered its maximum: reports may be missing; lower batch_size or hours");
        }
        if reports == 0 {
            self.client.remember(url, body.validators);
            return Ok(Batch::Empty { bytes });
        }
        let stored = sink.ingest(Format::Metar, IngestOptions::default(), body.bytes).await?;
        self.client.remember(url, body.validators);
        Ok(Batch::Stored { bytes, stored })
    }
}

#[async_trait]
impl Source for AwcMetar {
    fn name(&self) -> &str {
        NAME
    }

    fn observed_stations(&self) -> Vec<String> {
        self.cfg.stations.clone()
    }

    fn interval(&self) -> Duration {
        self.cfg.interval
    }

    async fn poll(&self, sink: &dyn FeedSink) -> PollReport {
        let outcomes = futures::future::join_all(self.urls.iter().map(|u| self.fetch_batch(u, sink))).await;
        tally(outcomes)
    }
}

#[async_trait]
impl Archive for AwcMetar {
    fn name(&self) -> &str {
        NAME
    }

    fn units(&self, from: chrono::NaiveDate, to: chrono::NaiveDate, stations: &[String]) -> Vec<ArchiveUnit> {
        let stations = if stations.is_empty() { &self.cfg.stations } else { stations };
        from.iter_days()
            .take_while(|d| *d <= to)
            .flat_map(|day| stations.iter().map(move |s| ArchiveUnit { key: s.clone(), from: day, to: day }))
            .collect()
    }

    async fn fetch(&self, unit: &ArchiveUnit, sink: &dyn FeedSink) -> PollReport {
        let outcome = match archive_url(&self.cfg, unit) {
            Ok(url) => self.fetch_batch(&url, sink).await,
            Err(e) => Err(e),
        };
        tally(vec![outcome])
    }
}

/// The report of a poll or fetch from its requests' outcomes.
fn tally(outcomes: Vec<Result<Batch, FeedError>>) -> PollReport {
    let mut report = PollReport { requests: outcomes.len(), ..PollReport::default() };
    for outcome in outcomes {
        match outcome {
            Ok(Batch::NotModified) => report.not_modified += 1,
            Ok(Batch::Empty { bytes }) => {
                report.empty += 1;
                report.bytes += bytes;
            }
            Ok(Batch::Stored { bytes, stored }) => {
                report.bytes += bytes;
                report.add_stored(stored);
            }
            Err(e) => report.errors.push(e),
        }
    }
    report
}

/// `{base}/api/data/metar`.
fn endpoint(cfg: &AwcMetarConfig) -> Result<Url, FeedError> {
    let mut base =
        Url::parse(&cfg.base_url).map_err(|e| FeedError::malformed_by(&cfg.base_url, format!("base_url: {e}"), e))?;
    // `http://host/mirror` means the directory `mirror`, as `http://host/mirror/` does.
    if !base.path().ends_with('/') {
        base.set_path(&format!("{}/", base.path()));
    }
    base.join("api/data/metar").map_err(|e| FeedError::malformed_by(&cfg.base_url, format!("base_url: {e}"), e))
}

/// One archive unit's URL: the station's reports of the UTC days `from..=to`, the window
/// ending at 00:00Z after `to`.
fn archive_url(cfg: &AwcMetarConfig, unit: &ArchiveUnit) -> Result<Url, FeedError> {
    let invalid = |reason: String| FeedError::Malformed { url: cfg.base_url.clone(), reason, source: None };
    if !is_station_id(&unit.key) {
        return Err(invalid(format!("station {:?} is not a 4-character ICAO id", unit.key)));
    }
    let days = (unit.to - unit.from).num_days() + 1;
    if days < 1 {
        return Err(invalid(format!("unit {} ends before it starts", unit.id())));
    }
    let end = unit.to + chrono::Duration::days(1);
    let mut u = endpoint(cfg)?;
    u.set_query(Some(&format!(
        "ids={}&format=json&hours={}&date={}_0000",
        unit.key.to_ascii_uppercase(),
        days * 24,
        end.format("%Y%m%d")
    )));
    Ok(u)
}

/// `{base}/api/data/metar?ids=...&format=json&hours=N` per batch. The ids are checked
/// ICAO ids (letters and digits), so the comma-joined list needs no escaping.
fn batch_urls(cfg: &AwcMetarConfig) -> Result<Vec<Url>, FeedError> {
    let endpoint = endpoint(cfg)?;
    Ok(cfg
        .stations
        .chunks(cfg.batch_size.max(1))
        .map(|ids| {
            let mut u = endpoint.clone();
            u.set_query(Some(&format!("ids={}&format=json&hours={}", ids.join(","), cfg.hours)));
            u
        })
        .collect())
}

/// The number of reports in an AWC JSON answer, which must be an array. AWC answers
/// "nothing for these stations" with an empty body (204) or `[]`.
fn count_reports(url: &Url, body: &Bytes) -> Result<usize, FeedError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(0);
    }
    serde_json::from_slice::<Vec<IgnoredAny>>(body).map(|v| v.len()).map_err(|e| FeedError::Malformed {
        url: url.to_string(),
        reason: format!("expected the JSON array of METARs: {e}"),
        source: Some(Box::new(e)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(stations: &[&str], batch: usize) -> AwcMetarConfig {
        AwcMetarConfig {
            base_url: "https://aviationweather.gov".into(),
            stations: stations.iter().map(|s| s.to_string()).collect(),
            batch_size: batch,
            ..AwcMetarConfig::default()
        }
    }

    #[test]
    fn stations_are_batched_into_one_url_each() {
        let urls = batch_urls(&cfg(&["KNYC", "KMDW", "KAUS"], 2)).unwrap();
        let urls: Vec<String> = urls.iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "https://aviationweather.gov/api/data/metar?ids=KNYC,KMDW&format=json&hours=2",
                "https://aviationweather.gov/api/data/metar?ids=KAUS&format=json&hours=2",
            ]
        );
        let mut under_path = cfg(&["KNYC"], 5);
        under_path.base_url = "http://127.0.0.1:8080/mirror".into();
        under_path.hours = 1.5;
        assert_eq!(
            batch_urls(&under_path).unwrap()[0].as_str(),
            "http://127.0.0.1:8080/mirror/api/data/metar?ids=KNYC&format=json&hours=1.5"
        );
    }

    #[test]
    fn archive_units_are_one_station_day_each_and_their_url_ends_the_window_next_midnight() {
        let client = Arc::new(HttpClient::new(crate::feeds::config::ClientConfig::default()).unwrap());
        let awc = AwcMetar::new(cfg(&["KNYC", "KMDW"], 40), client).unwrap();
        let d = |day| chrono::NaiveDate::from_ymd_opt(2026, 9, day).unwrap();
        let units = Archive::units(&awc, d(1), d(2), &[]);
        let ids: Vec<String> = units.iter().map(ArchiveUnit::id).collect();
        assert_eq!(
            ids,
            [
                "KNYC/2026-09-01/2026-09-01",
                "KMDW/2026-09-01/2026-09-01",
                "KNYC/2026-09-02/2026-09-02",
                "KMDW/2026-09-02/2026-09-02"
            ]
        );
        assert_eq!(Archive::units(&awc, d(3), d(3), &["KAUS".to_string()]).len(), 1);
        assert!(Archive::units(&awc, d(3), d(2), &[]).is_empty());
        assert_eq!(
            archive_url(&awc.cfg, &units[3]).unwrap().as_str(),
            "https://aviationweather.gov/api/data/metar?ids=KMDW&format=json&hours=24&date=20260903_0000"
        );
        let bad = ArchiveUnit { key: "K NY".into(), from: d(1), to: d(1) };
        assert!(archive_url(&awc.cfg, &bad).unwrap_err().to_string().contains("not a 4-character ICAO id"));
    }

    #[test]
    fn reports_are_counted_and_other_shapes_refused() {
        let url = Url::parse("http://x/").unwrap();
        let real =
            Bytes::from_static(include_bytes!("../../data/real/metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json"));
        assert_eq!(count_reports(&url, &real).unwrap(), 9);
        assert_eq!(count_reports(&url, &Bytes::from_static(b"")).unwrap(), 0);
        assert_eq!(count_reports(&url, &Bytes::from_static(b" []\n")).unwrap(), 0);
        let e = count_reports(&url, &Bytes::from_static(b"[{\"rawOb\": ")).unwrap_err();
        assert_eq!(e.kind(), "malformed");
        assert!(e.to_string().contains("expected the JSON array of METARs"), "{e}");
        let e = count_reports(&url, &Bytes::from_static(b"{\"error\":\"bad ids\"}")).unwrap_err();
        assert_eq!(e.kind(), "malformed");
    }
}
