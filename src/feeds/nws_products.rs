//! Daily Climate Reports (CLI) and Daily Summary Messages (DSM) from api.weather.gov, two
//! sources (`nws_cli`, `nws_dsm`) of one kind: per station, the product list
//! `GET {base}/products/types/{CLI|DSM}/locations/{LOC}`, then each product not fetched
//! before, `GET {base}/products/{id}`, whose `productText` goes to the CLI or DSM decoder
//! as `POST /api/v2/ingest/{cli|dsm}` would send it. The archive (backfill) is the IEM
//! AFOS text archive, `retrieve.py?pil=CLINYC&sdate=..&edate=..&fmt=text`.
//!
//! The location is the station part of the product's AWIPS id (KNYC -> NYC, CLINYC), from
//! the one mapping the decoders use ([`cli_id_from_station`]), so a fetched product
//! decodes back to the station it was fetched for.
//!
//! **When.** The offices issue these products at known local hours, so a station's list
//! is read every `interval` inside its busy hours (local clock of the station) and every
//! `quiet_interval` outside them. CLI: the final report of the previous day shortly after
//! local midnight, a morning report (some offices' preliminary) and the afternoon
//! preliminary; DSM: the full-day message after midnight and the intermediate messages
//! many stations send during the day. Both windows are configurable (`busy_hours`).
//!
//! **Once.** A product id that was stored (or that can never decode) is never fetched
//! again: the ids are kept per location in memory and in the state file
//! ([`StateFile`]), so a restart does not re-fetch what is still listed. Only products
//! issued within `lookback_hours` are fetched live; older ones are the backfill's.
//!
//! **Corrections.** A corrected product (`CCA`, or a later issuance for the same day) has
//! a new id and is fetched like any other, oldest first; both reports are kept (the
//! lake's natural key includes the text), and every reader takes the one with the highest
//! precedence ([`crate::decode::types::DailyReport::precedence`]): a final over a
//! preliminary, then the latest issue, then the correction.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Timelike, Utc};
use chrono_tz::Tz;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use url::Url;

use super::http::{Fetched, HttpClient};
use super::seconds::secs;
use super::sink::{FeedSink, SinkError, Stored};
use super::source::{Archive, ArchiveUnit, FeedError, PollReport, Source};
use super::state_file::StateFile;
use crate::catalog::Catalog;
use crate::clock::{Clock, SystemClock};
use crate::decode::climate_report::cli_id_from_station;
use crate::decode::metar::is_station_id;
use crate::ingest::{Format, IngestOptions};

/// Which product a source fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProductKind {
    Cli,
    Dsm,
}

impl ProductKind {
    /// The source's name, as in `[sources.NAME]`.
    pub const fn source(self) -> &'static str {
        match self {
            ProductKind::Cli => "nws_cli",
            ProductKind::Dsm => "nws_dsm",
        }
    }

    /// The product type code of api.weather.gov and the first three letters of the AWIPS id.
    pub const fn code(self) -> &'static str {
        match self {
            ProductKind::Cli => "CLI",
            ProductKind::Dsm => "DSM",
        }
    }

    fn format(self) -> Format {
        match self {
            ProductKind::Cli => Format::Cli,
            ProductKind::Dsm => Format::Dsm,
        }
    }

    /// The default busy hours, `[start, end)` on the station's local clock. CLI: the
    /// final report after midnight (00-03), the morning report (06-10), the afternoon
    /// preliminary (16-19). DSM: the full-day message after midnight (00-03) and the
    /// intermediate messages of the morning (06-09), early afternoon (12-14) and late
    /// afternoon (16-19).
    pub fn default_busy_hours(self) -> Vec<[u32; 2]> {
        match self {
            ProductKind::Cli => vec![[0, 3], [6, 10], [16, 19]],
            ProductKind::Dsm => vec![[0, 3], [6, 9], [12, 14], [16, 19]],
        }
    }
}

/// `[sources.nws_cli]` / `[sources.nws_dsm]`: api.weather.gov CLI or DSM products.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NwsProductsConfig {
    /// `enabled` (default true): false keeps the table but stops the feed.
    pub enabled: bool,
    /// `base_url` (default `https://api.weather.gov`).
    pub base_url: String,
    /// `stations` (default: the catalog's US stations): ICAO ids; each is polled at the
    /// product location of its AWIPS id (KNYC -> NYC).
    pub stations: Vec<String>,
    /// `interval_secs` (default 300): how often a station's list is read inside its busy
    /// hours (and the runner's tick).
    #[serde(rename = "interval_secs", deserialize_with = "secs")]
    pub interval: Duration,
    /// `quiet_interval_secs` (default 3600): how often outside them.
    #[serde(rename = "quiet_interval_secs", deserialize_with = "secs")]
    pub quiet_interval: Duration,
    /// `busy_hours` (default per product, see [`ProductKind::default_busy_hours`]):
    /// `[[start, end], ...]` hours `[start, end)` of the station's local clock, 0-24.
    pub busy_hours: Option<Vec<[u32; 2]>>,
    /// `lookback_hours` (default 48): products issued earlier are left to the backfill.
    pub lookback_hours: f64,
    /// `timeout_secs` (default 20): one request's limit, connect to last byte.
    #[serde(rename = "timeout_secs", deserialize_with = "secs")]
    pub timeout: Duration,
    /// `archive_url` (default `https://mesonet.agron.iastate.edu/cgi-bin/afos/retrieve.py`):
    /// the IEM AFOS text archive, for `feeds backfill`.
    pub archive_url: String,
    /// `archive_days` (default 31): days of one archive request.
    pub archive_days: u32,
}

impl Default for NwsProductsConfig {
    fn default() -> Self {
        NwsProductsConfig {
            enabled: true,
            base_url: "https://api.weather.gov".to_string(),
            stations: us_stations(),
            interval: Duration::from_secs(300),
            quiet_interval: Duration::from_secs(3600),
            busy_hours: None,
            lookback_hours: 48.0,
            timeout: Duration::from_secs(20),
            archive_url: "https://mesonet.agron.iastate.edu/cgi-bin/afos/retrieve.py".to_string(),
            archive_days: 31,
        }
    }
}

/// The catalog's US stations: the ones the NWS issues CLI, DSM and point forecasts for.
pub(crate) fn us_stations() -> Vec<String> {
    Catalog::global().all().iter().filter(|s| s.is_us()).map(|s| s.code.clone()).collect()
}

impl NwsProductsConfig {
    /// Upper-cases the station ids, fills in the kind's busy hours and checks every
    /// value; the message says what is wrong (the config module says where).
    pub fn validated(mut self, kind: ProductKind) -> Result<Self, String> {
        for u in [&self.base_url, &self.archive_url] {
            Url::parse(u).map_err(|e| format!("{u:?}: {e}"))?;
        }
        for s in &mut self.stations {
            *s = s.trim().to_ascii_uppercase();
            if !is_station_id(s) {
                return Err(format!("station {s:?} is not a 4-character ICAO id"));
            }
        }
        if self.stations.is_empty() {
            return Err("stations is empty".to_string());
        }
        let hours = self.busy_hours.get_or_insert_with(|| kind.default_busy_hours());
        if let Some([a, b]) = hours.iter().find(|[a, b]| a >= b || *b > 24) {
            return Err(format!("busy_hours [{a}, {b}] is not [start, end) with 0 <= start < end <= 24"));
        }
        if self.interval.is_zero() || self.quiet_interval.is_zero() || self.timeout.is_zero() {
            return Err("interval_secs, quiet_interval_secs and timeout_secs must be positive".to_string());
        }
        if self.quiet_interval < self.interval {
            return Err("quiet_interval_secs must be at least interval_secs".to_string());
        }
        if !(self.lookback_hours.is_finite() && self.lookback_hours > 0.0) {
            return Err(format!("lookback_hours must be a positive number, found {}", self.lookback_hours));
        }
        if self.archive_days == 0 {
            return Err("archive_days must be at least 1".to_string());
        }
        Ok(self)
    }
}

/// One station's product location.
#[derive(Debug, Clone)]
struct Location {
    station: String,
    /// The AWIPS id's station part (NYC).
    id: String,
    /// The station's zone for its busy hours (UTC for a station outside the catalog).
    tz: Tz,
}

/// What the source remembers across restarts: per location, the ids already handled.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Seen {
    by_location: BTreeMap<String, BTreeSet<String>>,
}

/// One entry of a product list (`@graph`).
#[derive(Debug, Deserialize)]
struct Listed {
    id: String,
    #[serde(rename = "issuanceTime")]
    issuance_time: DateTime<Utc>,
}

#[derive(Debug, Deserialize)]
struct ProductList {
    #[serde(rename = "@graph")]
    graph: Vec<Listed>,
}

/// A product (`/products/{id}`).
#[derive(Debug, Deserialize)]
struct Product {
    #[serde(rename = "productCode")]
    product_code: Option<String>,
    #[serde(rename = "productText")]
    product_text: String,
}

/// The CLI or DSM feed of api.weather.gov.
pub struct NwsProducts {
    kind: ProductKind,
    cfg: NwsProductsConfig,
    client: Arc<HttpClient>,
    /// `base_url` as a directory.
    base: Url,
    archive: Url,
    busy: Vec<[u32; 2]>,
    locations: Vec<Location>,
    seen: Mutex<Seen>,
    file: StateFile,
    /// When each location's list was last read (memory only: a restart reads them all).
    listed_at: Mutex<HashMap<String, DateTime<Utc>>>,
    /// Decides which lists are due (busy hours are the station's local clock).
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for NwsProducts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NwsProducts").field("kind", &self.kind).field("cfg", &self.cfg).finish_non_exhaustive()
    }
}

impl NwsProducts {
    /// The feed for a validated `cfg`, its memory kept under `state_dir` (if any).
    pub fn new(
        kind: ProductKind,
        cfg: NwsProductsConfig,
        client: Arc<HttpClient>,
        state_dir: Option<&std::path::Path>,
    ) -> Result<Self, FeedError> {
        let invalid = |url: &str, e: url::ParseError| FeedError::Malformed {
            url: url.to_string(),
            reason: e.to_string(),
            source: Some(Box::new(e)),
        };
        let base = directory(Url::parse(&cfg.base_url).map_err(|e| invalid(&cfg.base_url, e))?);
        let archive = Url::parse(&cfg.archive_url).map_err(|e| invalid(&cfg.archive_url, e))?;
        let catalog = Catalog::global();
        let locations = cfg
            .stations
            .iter()
            .map(|s| Location {
                station: s.clone(),
                id: cli_id_from_station(s),
                tz: catalog.get(s).map_or(Tz::UTC, |st| st.timezone),
            })
            .collect();
        let file = StateFile::new(state_dir, kind.source());
        let seen = file.load();
        let busy = cfg.busy_hours.clone().unwrap_or_else(|| kind.default_busy_hours());
        Ok(NwsProducts {
            kind,
            cfg,
            client,
            base,
            archive,
            busy,
            locations,
            seen: Mutex::new(seen),
            file,
            listed_at: Mutex::new(HashMap::new()),
            clock: Arc::new(SystemClock),
        })
    }

    /// The feed with an injected clock (tests, the demo's simulated day).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The product list URL of a location.
    pub fn list_url(&self, location: &str) -> Result<Url, FeedError> {
        self.join(&format!("products/types/{}/locations/{location}", self.kind.code()))
    }

    fn join(&self, path: &str) -> Result<Url, FeedError> {
        self.base.join(path).map_err(|e| FeedError::Malformed {
            url: self.base.to_string(),
            reason: e.to_string(),
            source: Some(Box::new(e)),
        })
    }

    /// Whether `loc`'s list is due at `now`.
    fn is_due(&self, loc: &Location, now: DateTime<Utc>) -> bool {
        let last = self.listed_at.lock().get(&loc.id).copied();
        is_due(last, now, loc.tz, &self.busy, self.cfg.interval, self.cfg.quiet_interval)
    }

    /// Reads `loc`'s list and fetches what is new in it, oldest first, one request at a
    /// time.
    async fn poll_location(&self, loc: &Location, now: DateTime<Utc>, sink: &dyn FeedSink) -> PollReport {
        let mut report = PollReport::default();
        let url = match self.list_url(&loc.id) {
            Ok(u) => u,
            Err(e) => {
                report.errors.push(e);
                return report;
            }
        };
        report.requests += 1;
        let body = match self.client.get(&url, self.cfg.timeout).await {
            Ok(Fetched::NotModified) => {
                report.not_modified += 1;
                self.listed_at.lock().insert(loc.id.clone(), now);
                return report;
            }
            Ok(Fetched::New(body)) => body,
            Err(e) => {
                report.errors.push(e.into());
                return report;
            }
        };
        report.bytes += body.bytes.len();
        let list: ProductList = match serde_json::from_slice(&body.bytes) {
            Ok(l) => l,
            Err(e) => {
                report.errors.push(FeedError::Malformed {
                    url: url.to_string(),
                    reason: format!("expected the product list (`@graph` of id, issuanceTime): {e}"),
                    source: Some(Box::new(e)),
                });
                return report;
            }
        };
        self.listed_at.lock().insert(loc.id.clone(), now);
        let since = now - chrono::Duration::seconds((self.cfg.lookback_hours * 3600.0) as i64);
        let mut fresh: Vec<&Listed> = {
            let seen = self.seen.lock();
            let done = seen.by_location.get(&loc.id);
            list.graph.iter().filter(|p| p.issuance_time >= since && !done.is_some_and(|d| d.contains(&p.id))).collect()
        };
        if fresh.is_empty() {
            report.empty += 1;
        }
        fresh.sort_by_key(|p| p.issuance_time);
        let mut complete = true;
        for listed in fresh {
            report.requests += 1;
            match self.fetch_product(listed, sink).await {
                Ok((bytes, stored)) => {
                    report.bytes += bytes;
                    report.add_stored(stored);
                    self.mark_seen(&loc.id, &listed.id);
                }
                // A product that can never decode is not fetched again either.
                Err(e @ FeedError::Sink(SinkError::Unusable(_))) => {
                    tracing::warn!(source = self.kind.source(), station = %loc.station, id = %listed.id, error = %e, "product stores nothing");
                    self.mark_seen(&loc.id, &listed.id);
                    report.errors.push(e);
                }
                Err(e) => {
                    complete = false;
                    report.errors.push(e);
                }
            }
        }
        if complete {
            // Every new product is stored: the list is done with, and ids it no longer
            // lists will never come back.
            let listed: BTreeSet<&str> = list.graph.iter().map(|p| p.id.as_str()).collect();
            if let Some(ids) = self.seen.lock().by_location.get_mut(&loc.id) {
                ids.retain(|id| listed.contains(id.as_str()));
            }
            self.client.remember(&url, body.validators);
        }
        self.file.save(&*self.seen.lock());
        report
    }

    fn mark_seen(&self, location: &str, id: &str) {
        self.seen.lock().by_location.entry(location.to_string()).or_default().insert(id.to_string());
    }

    /// Fetches one product and hands its text to the sink; the body's size and what the
    /// sink stored. A DSM's DD/MM dates carry no year: the listed issuance time dates
    /// them (and goes to the write-ahead log with the text, so a replay dates them alike),
    /// not the wall clock of whenever the text is decoded.
    async fn fetch_product(&self, listed: &Listed, sink: &dyn FeedSink) -> Result<(usize, Stored), FeedError> {
        let id = listed.id.as_str();
        let url = self.base.to_string();
        if id.is_empty() || !id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') {
            return Err(FeedError::Malformed { url, reason: format!("product id {id:?} is not an id"), source: None });
        }
        let url = self.join(&format!("products/{id}"))?;
        let body = match self.client.get(&url, self.cfg.timeout).await? {
            Fetched::New(body) => body,
            // Never asked conditionally (a product is fetched once), but harmless.
            Fetched::NotModified => return Ok((0, Stored::default())),
        };
        let product: Product = serde_json::from_slice(&body.bytes).map_err(|e| FeedError::Malformed {
            url: url.to_string(),
            reason: format!("expected a product with productText: {e}"),
            source: Some(Box::new(e)),
        })?;
        if let Some(code) = product.product_code.as_deref().filter(|c| *c != self.kind.code()) {
            return Err(FeedError::Malformed {
                url: url.to_string(),
                reason: format!("expected a {} product, found {code}", self.kind.code()),
                source: None,
            });
        }
        // The product's issuance time: DSM messages are dated by it, and a report whose
        // text states none takes it as its issuance (its `available_at`).
        let opts = IngestOptions { issued: Some(listed.issuance_time), ..IngestOptions::default() };
        let stored = sink.ingest(self.kind.format(), opts, product.product_text.into_bytes().into()).await?;
        Ok((body.bytes.len(), stored))
    }

    /// The archive URL of one unit: products entered from `from` up to two days after
    /// `to` (a day's final CLI and DSM are issued the next day; corrections later still).
    pub fn archive_url(&self, unit: &ArchiveUnit) -> Url {
        let mut u = self.archive.clone();
        let pil = format!("{}{}", self.kind.code(), cli_id_from_station(&unit.key));
        let until = unit.to + chrono::Duration::days(2);
        u.query_pairs_mut()
            .append_pair("pil", &pil)
            .append_pair("sdate", &unit.from.to_string())
            .append_pair("edate", &until.to_string())
            .append_pair("fmt", "text")
            .append_pair("limit", "9999");
        u
    }
}

/// `url` as a directory: `http://host/mirror` means `mirror/`, as `http://host/mirror/` does.
fn directory(mut url: Url) -> Url {
    if !url.path().ends_with('/') {
        url.set_path(&format!("{}/", url.path()));
    }
    url
}

/// A list read at `last` is due again at `now` after `interval` while the station's
/// local clock is in a busy window, else after `quiet`. Polls start on the runner's
/// rhythm of `interval`, so half an interval of slack keeps a due list from slipping to
/// the next tick by a few milliseconds.
fn is_due(
    last: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    tz: Tz,
    busy: &[[u32; 2]],
    interval: Duration,
    quiet: Duration,
) -> bool {
    let Some(last) = last else { return true };
    let hour = now.with_timezone(&tz).hour();
    let period = if busy.iter().any(|[a, b]| (*a..*b).contains(&hour)) { interval } else { quiet };
    let elapsed = (now - last).to_std().unwrap_or_default();
    elapsed + interval / 2 >= period
}

#[async_trait]
impl Source for NwsProducts {
    fn name(&self) -> &str {
        self.kind.source()
    }

    fn interval(&self) -> Duration {
        self.cfg.interval
    }

    async fn poll(&self, sink: &dyn FeedSink) -> PollReport {
        let now = self.clock.now();
        let due: Vec<&Location> = self.locations.iter().filter(|l| self.is_due(l, now)).collect();
        let parts = futures::future::join_all(due.into_iter().map(|l| self.poll_location(l, now, sink))).await;
        let mut report = PollReport::default();
        for part in parts {
            report += part;
        }
        report
    }
}

#[async_trait]
impl Archive for NwsProducts {
    fn name(&self) -> &str {
        self.kind.source()
    }

    /// Per station, runs of `archive_days` days.
    fn units(&self, from: NaiveDate, to: NaiveDate, stations: &[String]) -> Vec<ArchiveUnit> {
        let stations = if stations.is_empty() { &self.cfg.stations } else { stations };
        let step = i64::from(self.cfg.archive_days.max(1));
        let mut units = Vec::new();
        for s in stations {
            let mut start = from;
            while start <= to {
                let end = (start + chrono::Duration::days(step - 1)).min(to);
                units.push(ArchiveUnit { key: s.trim().to_ascii_uppercase(), from: start, to: end });
                start = end + chrono::Duration::days(1);
            }
        }
        units
    }

    /// The archive is asked for products entered from `from` to two days after `to`:
    /// the final report of the day before `from` (issued on `from`), and reports for up to
    /// the day after `to`.
    fn days_touched(&self, from: NaiveDate, to: NaiveDate) -> (NaiveDate, NaiveDate) {
        (from - chrono::Duration::days(1), to + chrono::Duration::days(2))
    }

    /// The AFOS text answer holds every product of the unit, each between SOH/ETX marks
    /// the decoders skip; "ERROR: Could not Find" (status 200) means there are none.
    async fn fetch(&self, unit: &ArchiveUnit, sink: &dyn FeedSink) -> PollReport {
        let url = self.archive_url(unit);
        let mut report = PollReport { requests: 1, ..PollReport::default() };
        let body = match self.client.get(&url, self.cfg.timeout).await {
            Ok(Fetched::New(body)) => body,
            Ok(Fetched::NotModified) => {
                report.not_modified += 1;
                return report;
            }
            Err(e) => {
                report.errors.push(e.into());
                return report;
            }
        };
        report.bytes = body.bytes.len();
        let text = String::from_utf8_lossy(&body.bytes);
        let head = text.trim_start();
        if head.is_empty() || head.starts_with("ERROR: Could not Find") {
            report.empty += 1;
            return report;
        }
        if head.starts_with("ERROR") {
            let reason = head.lines().next().unwrap_or_default().chars().take(120).collect();
            report.errors.push(FeedError::Malformed { url: url.to_string(), reason, source: None });
            return report;
        }
        // DSM dates are DD/MM: the unit's middle fixes their year.
        let middle = unit.from + (unit.to - unit.from) / 2;
        let opts = match self.kind {
            ProductKind::Dsm => {
                use chrono::Datelike;
                IngestOptions { month: Some((middle.year(), middle.month())), ..IngestOptions::default() }
            }
            ProductKind::Cli => IngestOptions::default(),
        };
        match sink.ingest(self.kind.format(), opts, body.bytes).await {
            Ok(stored) => report.add_stored(stored),
            Err(e) => report.errors.push(e.into()),
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 15, h, m, 0).unwrap()
    }

    #[test]
    fn lists_are_read_often_in_busy_hours_and_slowly_otherwise() {
        let ny: Tz = "America/New_York".parse().unwrap();
        let busy = ProductKind::Cli.default_busy_hours();
        let (five, hour) = (Duration::from_secs(300), Duration::from_secs(3600));
        let due = |last, now| is_due(Some(last), now, ny, &busy, five, hour);
        assert!(is_due(None, at(3, 0), ny, &busy, five, hour), "never read: due");
        // 12:00Z is 07:00 EST, a busy hour: every five minutes.
        assert!(due(at(11, 55), at(12, 0)));
        assert!(!due(at(11, 58), at(12, 0)));
        // 15:00Z is 10:00 EST, quiet: hourly.
        assert!(!due(at(14, 30), at(15, 0)));
        assert!(due(at(14, 0), at(15, 0)));
        // A tick a few milliseconds early is still on time.
        assert!(due(at(11, 55), at(12, 0) - chrono::Duration::milliseconds(20)));
    }

    #[test]
    fn config_defaults_and_refusals() {
        let cli = NwsProductsConfig::default().validated(ProductKind::Cli).unwrap();
        assert_eq!(cli.base_url, "https://api.weather.gov");
        assert_eq!(cli.busy_hours.as_deref(), Some(&[[0, 3], [6, 10], [16, 19]][..]));
        assert!(cli.stations.iter().any(|s| s == "KNYC") && !cli.stations.iter().any(|s| s == "EGLC"));
        let dsm = NwsProductsConfig::default().validated(ProductKind::Dsm).unwrap();
        assert_eq!(dsm.busy_hours.unwrap().len(), 4);
        let bad = |c: NwsProductsConfig| c.validated(ProductKind::Cli).unwrap_err();
        assert!(bad(NwsProductsConfig { busy_hours: Some(vec![[9, 6]]), ..Default::default() }).contains("[9, 6]"));
        assert!(bad(NwsProductsConfig { stations: vec!["NYC".into()], ..Default::default() }).contains("\"NYC\""));
        assert!(bad(NwsProductsConfig { quiet_interval: Duration::from_secs(1), ..Default::default() })
            .contains("quiet_interval_secs"));
        assert!(bad(NwsProductsConfig { lookback_hours: f64::NAN, ..Default::default() }).contains("lookback_hours"));
    }

    #[test]
    fn the_tables_are_read_through_the_feeds_config() {
        let read = |t: &str| crate::feeds::FeedsConfig::from_toml(&toml::from_str(t).unwrap());
        let cfg = read("[nws_cli]\n[nws_dsm]\nstations = [\"knyc\"]\n").unwrap();
        assert_eq!(cfg.nws_cli.unwrap().busy_hours.unwrap().len(), 3);
        assert_eq!(cfg.nws_dsm.unwrap().stations, ["KNYC"]);
        let e = read("[nws_dsm]\nbusy_hours = [[9, 6]]\n").unwrap_err().to_string();
        assert!(e.starts_with("[sources.nws_dsm]: busy_hours [9, 6]"), "{e}");
        let e = read("[nws_cli]\nbusy_hour = 1\n").unwrap_err().to_string();
        assert!(e.starts_with("[sources.nws_cli]: unknown field `busy_hour`"), "{e}");
    }

    fn source(kind: ProductKind) -> NwsProducts {
        let client = Arc::new(HttpClient::new(Default::default()).unwrap());
        let cfg = NwsProductsConfig { archive_days: 10, ..NwsProductsConfig::default() }.validated(kind).unwrap();
        NwsProducts::new(kind, cfg, client, None).unwrap()
    }

    #[test]
    fn urls_name_the_location_of_the_station() {
        let cli = source(ProductKind::Cli);
        assert_eq!(cli.list_url("NYC").unwrap().as_str(), "https://api.weather.gov/products/types/CLI/locations/NYC");
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        let units = cli.units(d("2026-01-01"), d("2026-01-25"), &["knyc".to_string()]);
        let spans: Vec<(NaiveDate, NaiveDate)> = units.iter().map(|u| (u.from, u.to)).collect();
        assert_eq!(
            spans,
            [
                (d("2026-01-01"), d("2026-01-10")),
                (d("2026-01-11"), d("2026-01-20")),
                (d("2026-01-21"), d("2026-01-25"))
            ]
        );
        assert_eq!(
            cli.archive_url(&units[0]).as_str(),
            "https://mesonet.agron.iastate.edu/cgi-bin/afos/retrieve.py?pil=CLINYC&sdate=2026-01-01&edate=2026-01-12&fmt=text&limit=9999"
        );
        let dsm = source(ProductKind::Dsm);
        assert!(dsm.archive_url(&units[0]).as_str().contains("pil=DSMNYC"));
        assert_eq!(dsm.units(d("2026-01-01"), d("2026-01-01"), &[]).len(), dsm.cfg.stations.len());
    }

    #[test]
    fn list_and_product_shapes_are_read() {
        let list: ProductList = serde_json::from_str(
            r#"{"@context": {}, "@graph": [{"@id": "https://api.weather.gov/products/a-1", "id": "a-1",
               "wmoCollectiveId": "CDUS41", "issuingOffice": "KOKX", "issuanceTime": "2013-01-03T06:16:00+00:00",
               "productCode": "CLI", "productName": "Climatological Report (Daily)"}]}"#,
        )
        .unwrap();
        assert_eq!(list.graph[0].id, "a-1");
        assert_eq!(list.graph[0].issuance_time, Utc.with_ymd_and_hms(2013, 1, 3, 6, 16, 0).unwrap());
        let p: Product =
            serde_json::from_str(r#"{"id": "a-1", "productCode": "CLI", "productText": "CLINYC"}"#).unwrap();
        assert_eq!(p.product_text, "CLINYC");
    }
}
