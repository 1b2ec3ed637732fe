//! Gridded model runs from Open-Meteo: each run once, with its true run time.
//!
//! Live: the single-runs API (`GET {base}/v1/forecast?...&models=ID&run=YYYY-MM-DDTHH:MM`,
//! open-meteo.com/en/docs/single-runs-api) answers one model's run at one initialisation
//! time, the same parameters and JSON as the forecast API. Each poll asks, per model, for
//! the runs whose cycle time plus the model's availability delay (`models::AVAILABILITY`)
//! has passed within `lookback_hours`, and that are not stored yet: a run is fetched once,
//! after it is complete, and the run time handed to the decoder is the one asked for (the
//! JSON does not carry it). Stored runs are read back from the sink once per model and
//! process (the lake, in `serve`), then remembered, so a restart does not fetch them again.
//! A run asked for that stored nothing (the API does not have it yet: it answers an error,
//! or no temperatures) is asked again after a growing wait (the poll interval, doubling up
//! to an hour), reset once a batch of it is stored; a run whose requests failed in
//! [`MAX_ATTEMPTS`] polls is given up (at a 5-minute interval, 2 h 15 after the first
//! ask). What the feed remembers of runs is a [`RunTracker`], forgotten as they leave the
//! lookback.
//! Stations go in batches, several coordinates per request (the answer is then an array,
//! one object per location, in the order asked).
//!
//! Archive: the previous-runs API (`GET {archive_url}/v1/forecast?...&start_date&end_date`,
//! `temperature_2m_previous_dayN`), per model, batch of stations and day range; the decoder
//! dates each day-N value at 00Z N days before (see `decode::open_meteo`).
//!
//! A single-model answer names its series without a model suffix (`temperature_2m`); the
//! feed adds the model id (`temperature_2m_gfs_global`), the multi-model form the decoder
//! attributes, so the body stays the real response otherwise.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, NaiveDate, Utc};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use super::http::{Fetched, HttpClient};
use super::run_tracker::RunTracker;
use super::seconds::secs;
use super::sink::FeedSink;
use super::source::{Archive, ArchiveUnit, FeedError, PollReport, Source};
use crate::catalog::{Catalog, Station};
use crate::clock::{Clock, SystemClock};
use crate::ingest::{Format, IngestOptions};
use crate::models::{self, Availability, Publisher};

/// The source's name, as in `[sources.open_meteo]`.
pub const NAME: &str = "open_meteo";

/// The hourly variables asked for: every one the decoder maps to a forecast column.
pub const HOURLY: &str = "temperature_2m,relative_humidity_2m,dew_point_2m,apparent_temperature,\
wind_speed_10m,wind_direction_10m,wind_gusts_10m,cloud_cover,precipitation,weather_code,pressure_msl,\
surface_pressure";

/// Failed polls after which a run still missing is given up (logged): a cycle the
/// producer skipped must not be asked for until it leaves the lookback.
pub const MAX_ATTEMPTS: u32 = 6;

/// `[sources.open_meteo]`: Open-Meteo model runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OpenMeteoConfig {
    /// `enabled` (default true).
    pub enabled: bool,
    /// `base_url` (default `https://single-runs-api.open-meteo.com`): the single-runs API.
    pub base_url: String,
    /// `archive_url` (default `https://previous-runs-api.open-meteo.com`): the
    /// previous-runs API, for `feeds backfill open_meteo`.
    pub archive_url: String,
    /// `interval_secs` (default 300): how often the feed looks for newly published runs.
    /// Requests are made only for runs due and not stored, so a short interval costs
    /// nothing but a run's lateness is at most this.
    #[serde(rename = "interval_secs", deserialize_with = "secs")]
    pub interval: Duration,
    /// `stations` (default: every station of the catalog): ICAO ids of the catalog (the
    /// request needs their coordinates).
    pub stations: Vec<String>,
    /// `models` (default: every model of the 18 that Open-Meteo serves, see
    /// `models::AVAILABILITY`): spec 2.5 names.
    pub models: Vec<String>,
    /// `batch_size` (default 20): locations per request.
    pub batch_size: usize,
    /// `max_calls_per_minute` (default 0: unpaced): the most Open-Meteo calls the feed
    /// asks for in a minute, counted as Open-Meteo counts them ([`calls_per_location`]
    /// for each location of a request). The free tier allows 600 a minute, 5,000 an hour
    /// and 10,000 a day; a first start finds every run of the lookback due at once (about
    /// 2,000 calls for the catalog), which unpaced would go out in a minute or two. Paced,
    /// requests are spaced by their cost, so no minute asks for more than this.
    pub max_calls_per_minute: f64,
    /// `lookback_hours` (default 12): runs initialised longer ago are left to the backfill.
    pub lookback_hours: f64,
    /// `timeout_secs` (default 60): one request's limit.
    #[serde(rename = "timeout_secs", deserialize_with = "secs")]
    pub timeout: Duration,
}

impl Default for OpenMeteoConfig {
    fn default() -> Self {
        OpenMeteoConfig {
            enabled: true,
            base_url: "https://single-runs-api.open-meteo.com".to_string(),
            archive_url: "https://previous-runs-api.open-meteo.com".to_string(),
            interval: Duration::from_secs(300),
            stations: Catalog::global().all().iter().map(|s| s.code.clone()).collect(),
            models: open_meteo_models().map(|a| a.model.to_string()).collect(),
            batch_size: 20,
            max_calls_per_minute: 0.0,
            lookback_hours: 12.0,
            timeout: Duration::from_secs(60),
        }
    }
}

/// What Open-Meteo counts one location of a request as: one call, more for a large one,
/// x(variables / 10) past 10 variables and x(days / 7) past a week of data. Open-Meteo's
/// pricing notes weigh large requests so; the week is the strict reading (a request that
/// counts less is only cheaper), so budgets computed with it hold.
pub fn calls_per_location(variables: usize, days: f64) -> f64 {
    (variables as f64 / 10.0).max(1.0) * (days / 7.0).max(1.0)
}

/// The calls one location of a live run's request counts as: the [`HOURLY`] variables over
/// the model's whole horizon.
pub fn run_calls_per_location(spec: &models::ModelSpec) -> f64 {
    calls_per_location(HOURLY.split(',').count(), f64::from(spec.horizon_h) / 24.0)
}

/// The models Open-Meteo serves, with their ids and delays.
fn open_meteo_models() -> impl Iterator<Item = &'static Availability> {
    models::AVAILABILITY.iter().filter(|a| matches!(a.publisher, Publisher::OpenMeteo(_)))
}

impl OpenMeteoConfig {
    /// Upper-cases the stations and checks every value.
    pub fn validated(mut self) -> Result<Self, String> {
        let bad = |message: String| Err(message);
        for (key, url) in [("base_url", &self.base_url), ("archive_url", &self.archive_url)] {
            if let Err(e) = Url::parse(url) {
                return bad(format!("{key} {url:?}: {e}"));
            }
        }
        for s in &mut self.stations {
            *s = s.trim().to_ascii_uppercase();
            if Catalog::global().get(s).is_none() {
                return bad(format!("station {s:?} is not in the station catalog (its coordinates are needed)"));
            }
        }
        if self.stations.is_empty() {
            return bad("stations is empty".to_string());
        }
        for m in &self.models {
            if open_meteo_models().all(|a| a.model != m.as_str()) {
                let known: Vec<&str> = open_meteo_models().map(|a| a.model).collect();
                return bad(format!("model {m:?} is not served by Open-Meteo; known: {}", known.join(", ")));
            }
        }
        if self.models.is_empty() {
            return bad("models is empty".to_string());
        }
        if self.batch_size == 0 {
            return bad("batch_size must be at least 1".to_string());
        }
        if !(self.max_calls_per_minute.is_finite() && self.max_calls_per_minute >= 0.0) {
            return bad(format!("max_calls_per_minute must be a number >= 0, found {}", self.max_calls_per_minute));
        }
        if !(self.lookback_hours.is_finite() && self.lookback_hours > 0.0) {
            return bad(format!("lookback_hours must be a positive number, found {}", self.lookback_hours));
        }
        if self.interval.is_zero() || self.timeout.is_zero() {
            return bad("interval_secs and timeout_secs must be positive".to_string());
        }
        Ok(self)
    }
}

/// One model the feed fetches: its spec, Open-Meteo id and delay.
#[derive(Debug, Clone, Copy)]
struct Model {
    spec: &'static models::ModelSpec,
    id: &'static str,
    delay_min: u32,
}

/// The Open-Meteo model feed.
pub struct OpenMeteo {
    cfg: OpenMeteoConfig,
    client: Arc<HttpClient>,
    clock: Arc<dyn Clock>,
    stations: Vec<&'static Station>,
    models: Vec<Model>,
    /// What is known of the runs, stored ones per station.
    runs: Mutex<RunTracker<String>>,
    /// When the next request may go out under `max_calls_per_minute` (None: now).
    next_call: Mutex<Option<tokio::time::Instant>>,
}

impl std::fmt::Debug for OpenMeteo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenMeteo").field("cfg", &self.cfg).finish_non_exhaustive()
    }
}

/// What one request came to.
enum Outcome {
    NotModified,
    Stored { bytes: usize, stored: super::sink::Stored },
}

impl OpenMeteo {
    /// The feed for a validated `cfg`, on the system clock.
    pub fn new(cfg: OpenMeteoConfig, client: Arc<HttpClient>) -> Result<Self, FeedError> {
        Self::with_clock(cfg, client, Arc::new(SystemClock))
    }

    /// The feed with an injected clock (tests, the demo).
    pub fn with_clock(cfg: OpenMeteoConfig, client: Arc<HttpClient>, clock: Arc<dyn Clock>) -> Result<Self, FeedError> {
        let invalid = |reason: String| FeedError::Malformed { url: cfg.base_url.clone(), reason, source: None };
        let stations = cfg
            .stations
            .iter()
            .map(|s| Catalog::global().get(s).ok_or_else(|| invalid(format!("station {s} is not in the catalog"))))
            .collect::<Result<Vec<_>, _>>()?;
        let models = cfg
            .models
            .iter()
            .map(|m| {
                let a = models::availability(m).ok_or_else(|| invalid(format!("model {m} has no live source")))?;
                let Publisher::OpenMeteo(id) = a.publisher else {
                    return Err(invalid(format!("model {m} is not served by Open-Meteo")));
                };
                let spec = models::model(m).ok_or_else(|| invalid(format!("unknown model {m}")))?;
                Ok(Model { spec, id, delay_min: a.delay_min() })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let runs = Mutex::new(RunTracker::new(cfg.interval, MAX_ATTEMPTS));
        Ok(OpenMeteo { cfg, client, clock, stations, models, runs, next_call: Mutex::new(None) })
    }

    /// The configured models `station` gets: those whose domain covers it
    /// ([`Station::has_forecasts_from`](crate::catalog::Station::has_forecasts_from): no NAM or HRRR outside theirs), the one place this is chosen.
    fn models_for<'a>(&'a self, station: &'a Station) -> impl Iterator<Item = &'a Model> {
        self.models.iter().filter(move |m| station.has_forecasts_from(m.spec.name))
    }

    /// The stations that get `model`, in the configured order.
    fn stations_for(&self, model: &Model) -> Vec<&'static Station> {
        self.stations.iter().copied().filter(|s| self.models_for(s).any(|m| m.spec.name == model.spec.name)).collect()
    }

    /// Waits until a request costing `calls` may go out under `max_calls_per_minute`, and
    /// books the time it takes: requests are spaced by their cost, whichever model or
    /// backfill unit asks, so a catch-up of many runs is spread over minutes.
    async fn pace(&self, calls: f64) {
        if self.cfg.max_calls_per_minute <= 0.0 {
            return;
        }
        let now = tokio::time::Instant::now();
        let start = {
            let mut next = self.next_call.lock();
            let start = next.map_or(now, |n| n.max(now));
            *next = Some(start + Duration::from_secs_f64(calls * 60.0 / self.cfg.max_calls_per_minute));
            start
        };
        tokio::time::sleep_until(start).await;
    }

    /// Reads `model`'s stored runs from the sink, once per process.
    async fn seed(&self, model: &Model, since: DateTime<Utc>, sink: &dyn FeedSink) -> Result<(), FeedError> {
        if self.runs.lock().is_seeded(model.spec.name) {
            return Ok(());
        }
        let stored = sink.stored_runs(model.spec.name, since).await?;
        self.runs.lock().seed(model.spec.name, stored);
        Ok(())
    }

    /// One model's due runs, oldest first, each as the batches of stations still missing.
    fn due(
        &self,
        model: &Model,
        since: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Vec<(DateTime<Utc>, Vec<&'static Station>)> {
        let stations = self.stations_for(model);
        let name = model.spec.name;
        let mut runs = self.runs.lock();
        let published = models::published_runs(model.spec, model.delay_min, since, now);
        runs.due_runs(name, since, published, now)
            .into_iter()
            .map(|run| {
                let missing =
                    stations.iter().copied().filter(|s| !runs.is_done(name, s.code.clone(), run)).collect::<Vec<_>>();
                (run, missing)
            })
            .filter(|(_, missing)| !missing.is_empty())
            .collect()
    }

    /// Polls one model: its due runs in order, one batch at a time.
    async fn poll_model(&self, model: &Model, sink: &dyn FeedSink, report: &mut PollReport) {
        let now = self.clock.now();
        let since = now - chrono::Duration::seconds((self.cfg.lookback_hours * 3600.0) as i64);
        if let Err(e) = self.seed(model, since, sink).await {
            // Without knowing what is stored, fetching could repeat every run: wait.
            report.errors.push(e);
            return;
        }
        for (run, missing) in self.due(model, since, now) {
            let mut failed = false;
            let mut stored_any = false;
            for batch in missing.chunks(self.cfg.batch_size) {
                report.requests += 1;
                let url = match single_run_url(&self.cfg.base_url, model.id, run, batch) {
                    Ok(u) => u,
                    Err(e) => {
                        report.errors.push(e);
                        failed = true;
                        continue;
                    }
                };
                self.pace(batch.len() as f64 * run_calls_per_location(model.spec)).await;
                match self.fetch(&url, model, Some(run), &HOURLY.split(',').collect::<Vec<_>>(), batch, sink).await {
                    Ok(Outcome::NotModified) => report.not_modified += 1,
                    Ok(Outcome::Stored { bytes, stored }) => {
                        report.bytes += bytes;
                        if stored.held() == 0 {
                            report.empty += 1;
                        }
                        stored_any |= stored.held() > 0;
                        report.add_stored(stored);
                    }
                    Err(e) => {
                        failed = true;
                        report.errors.push(e);
                    }
                }
            }
            let mut runs = self.runs.lock();
            runs.asked(model.spec.name, run, now, stored_any);
            if failed && runs.failed(model.spec.name, run) {
                let model = model.spec.name;
                tracing::warn!(model, %run, attempts = MAX_ATTEMPTS, "run still missing; giving it up");
            }
        }
    }

    /// Fetches one batch (a run, or an archive range when `run` is None) and hands each
    /// location's part to the sink; marks the stations whose run was stored.
    async fn fetch(
        &self,
        url: &Url,
        model: &Model,
        run: Option<DateTime<Utc>>,
        asked: &[&str],
        batch: &[&'static Station],
        sink: &dyn FeedSink,
    ) -> Result<Outcome, FeedError> {
        let body = match self.client.get(url, self.cfg.timeout).await? {
            Fetched::NotModified => return Ok(Outcome::NotModified),
            Fetched::New(body) => body,
        };
        let bytes = body.bytes.len();
        let parts = split_locations(url, &body.bytes, batch.len(), model.id, asked)?;
        let mut total = super::sink::Stored::default();
        let mut first_error = None;
        for (station, part) in batch.iter().zip(parts) {
            let opts = IngestOptions { station: Some(station.code.clone()), run_time: run, ..IngestOptions::default() };
            match sink.ingest(Format::OpenMeteo, opts, part).await {
                Ok(stored) => {
                    total += stored;
                    if let Some(run) = run.filter(|_| stored.held() > 0) {
                        self.runs.lock().stored(model.spec.name, station.code.clone(), run);
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) if total.held() == 0 => Err(e.into()),
            Some(e) => {
                tracing::warn!(%url, error = %e, "some locations of the batch stored nothing");
                Ok(Outcome::Stored { bytes, stored: total })
            }
            None => {
                self.client.remember(url, body.validators);
                Ok(Outcome::Stored { bytes, stored: total })
            }
        }
    }
}

#[async_trait]
impl Source for OpenMeteo {
    fn name(&self) -> &str {
        NAME
    }

    fn interval(&self) -> Duration {
        self.cfg.interval
    }

    /// Models in parallel (each its own requests, one at a time); the client's per-host
    /// cap bounds them together.
    async fn poll(&self, sink: &dyn FeedSink) -> PollReport {
        let reports = futures::future::join_all(self.models.iter().map(|m| async move {
            let mut r = PollReport::default();
            self.poll_model(m, sink, &mut r).await;
            r
        }))
        .await;
        let mut report = PollReport::default();
        for r in reports {
            report += r;
        }
        report
    }
}

/// Archive units: per model and batch of stations, ranges of at most this many days (the
/// previous-runs API answers a month of hourly values quickly).
pub const ARCHIVE_DAYS: i64 = 31;

#[async_trait]
impl Archive for OpenMeteo {
    fn name(&self) -> &str {
        NAME
    }

    /// Key `MODEL:ST1,ST2,...`.
    fn units(&self, from: NaiveDate, to: NaiveDate, stations: &[String]) -> Vec<ArchiveUnit> {
        let mut out = Vec::new();
        for model in &self.models {
            let chosen: Vec<&Station> = self
                .stations_for(model)
                .into_iter()
                .filter(|s| stations.is_empty() || stations.iter().any(|x| x.eq_ignore_ascii_case(&s.code)))
                .collect();
            for batch in chosen.chunks(self.cfg.batch_size) {
                let codes: Vec<&str> = batch.iter().map(|s| s.code.as_str()).collect();
                let key = format!("{}:{}", model.spec.name, codes.join(","));
                let mut start = from;
                while start <= to {
                    let end = (start + chrono::Duration::days(ARCHIVE_DAYS - 1)).min(to);
                    out.push(ArchiveUnit { key: key.clone(), from: start, to: end });
                    start = end + chrono::Duration::days(1);
                }
            }
        }
        out
    }

    /// The previous-runs API answers the values valid on `from..=to`, each from the run N
    /// days before (N up to 7): their runs are dated up to 7 days before `from`, and
    /// `forecast_daily` is keyed by run date. Their valid days are those fetched, give or
    /// take the station's trading day.
    fn days_touched(&self, from: NaiveDate, to: NaiveDate) -> (NaiveDate, NaiveDate) {
        let back = self.models.iter().map(|m| previous_runs_series(m).len()).max().unwrap_or(0).max(1);
        (from - chrono::Duration::days(back as i64), to + chrono::Duration::days(1))
    }

    async fn fetch(&self, unit: &ArchiveUnit, sink: &dyn FeedSink) -> PollReport {
        let mut report = PollReport { requests: 1, ..PollReport::default() };
        let bad = |reason: String| FeedError::Malformed { url: self.cfg.archive_url.clone(), reason, source: None };
        let Some((name, codes)) = unit.key.split_once(':') else {
            report.errors.push(bad(format!("archive unit {:?} is not MODEL:STATIONS", unit.key)));
            return report;
        };
        let Some(model) = self.models.iter().find(|m| m.spec.name == name) else {
            report.errors.push(bad(format!("archive unit names model {name:?}, not configured")));
            return report;
        };
        let batch: Option<Vec<&'static Station>> = codes.split(',').map(|c| Catalog::global().get(c)).collect();
        let Some(batch) = batch.filter(|b| !b.is_empty()) else {
            report.errors.push(bad(format!("archive unit {:?} names a station outside the catalog", unit.key)));
            return report;
        };
        let asked = previous_runs_series(model);
        let url = match previous_runs_url(&self.cfg.archive_url, model, unit.from, unit.to, &batch) {
            Ok(u) => u,
            Err(e) => {
                report.errors.push(e);
                return report;
            }
        };
        let asked: Vec<&str> = asked.iter().map(String::as_str).collect();
        let days = (unit.to - unit.from).num_days() as f64 + 1.0;
        self.pace(batch.len() as f64 * calls_per_location(asked.len(), days)).await;
        match self.fetch(&url, model, None, &asked, &batch, sink).await {
            Ok(Outcome::NotModified) => report.not_modified += 1,
            Ok(Outcome::Stored { bytes, stored }) => {
                report.bytes += bytes;
                report.add_stored(stored);
            }
            Err(e) => report.errors.push(e),
        }
        report
    }
}

/// `{base}/v1/forecast` with the batch's coordinates (comma-separated, in batch order).
fn endpoint(base: &str, batch: &[&Station]) -> Result<Url, FeedError> {
    let mut base_url = Url::parse(base).map_err(|e| FeedError::malformed_by(base, format!("base url: {e}"), e))?;
    if !base_url.path().ends_with('/') {
        base_url.set_path(&format!("{}/", base_url.path()));
    }
    let mut url =
        base_url.join("v1/forecast").map_err(|e| FeedError::malformed_by(base, format!("base url: {e}"), e))?;
    let lat: Vec<String> = batch.iter().map(|s| format!("{:.4}", s.latitude)).collect();
    let lon: Vec<String> = batch.iter().map(|s| format!("{:.4}", s.longitude)).collect();
    url.query_pairs_mut().append_pair("latitude", &lat.join(",")).append_pair("longitude", &lon.join(","));
    Ok(url)
}

/// The single-runs request of one model's run for a batch of stations.
fn single_run_url(base: &str, id: &str, run: DateTime<Utc>, batch: &[&Station]) -> Result<Url, FeedError> {
    let mut url = endpoint(base, batch)?;
    url.query_pairs_mut()
        .append_pair("hourly", HOURLY)
        .append_pair("models", id)
        .append_pair("run", &run.format("%Y-%m-%dT%H:%M").to_string())
        .append_pair("timezone", "GMT");
    Ok(url)
}

/// The previous-runs request: `temperature_2m_previous_day1..N` for the days the model's
/// horizon reaches (at most 7, the API's limit), over `from..=to`.
fn previous_runs_url(
    base: &str,
    model: &Model,
    from: NaiveDate,
    to: NaiveDate,
    batch: &[&Station],
) -> Result<Url, FeedError> {
    let hourly = previous_runs_series(model);
    let mut url = endpoint(base, batch)?;
    url.query_pairs_mut()
        .append_pair("hourly", &hourly.join(","))
        .append_pair("models", model.id)
        .append_pair("start_date", &from.to_string())
        .append_pair("end_date", &to.to_string())
        .append_pair("timezone", "GMT");
    Ok(url)
}

/// `temperature_2m_previous_day1..N`: the days the model's horizon reaches, at most 7
/// (the API's limit).
fn previous_runs_series(model: &Model) -> Vec<String> {
    let days = (model.spec.horizon_h / 24).clamp(1, 7);
    (1..=days).map(|d| format!("temperature_2m_previous_day{d}")).collect()
}

/// The per-location bodies of an answer for `expected` locations: an array of that many
/// objects, or one object when one location was asked. The series named as `asked` (a
/// one-model answer names them so) get the model id as suffix (see the module docs);
/// other keys, already suffixed, stay as they are.
fn split_locations(
    url: &Url,
    body: &Bytes,
    expected: usize,
    id: &str,
    asked: &[&str],
) -> Result<Vec<Bytes>, FeedError> {
    let malformed = |reason: String| FeedError::Malformed { url: url.to_string(), reason, source: None };
    let root: Value = serde_json::from_slice(body)
        .map_err(|e| FeedError::malformed_by(url.as_str(), format!("expected Open-Meteo JSON: {e}"), e))?;
    let items = match root {
        Value::Array(items) => items,
        obj @ Value::Object(_) => vec![obj],
        other => return Err(malformed(format!("expected a JSON object or array, found {}", kind(&other)))),
    };
    if items.len() != expected {
        return Err(malformed(format!("{} locations in the answer for {expected} asked", items.len())));
    }
    items
        .into_iter()
        .map(|mut item| {
            if let Some(reason) = item.get("reason").and_then(Value::as_str).filter(|_| item.get("error").is_some()) {
                return Err(malformed(format!("Open-Meteo error: {}", crate::decode::text::quote(reason, 120))));
            }
            for section in ["hourly", "hourly_units"] {
                if let Some(Value::Object(map)) = item.get_mut(section) {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| if asked.contains(&k.as_str()) { (format!("{k}_{id}"), v) } else { (k, v) })
                        .collect();
                }
            }
            serde_json::to_vec(&item)
                .map(Bytes::from)
                .map_err(|e| FeedError::malformed_by(url.as_str(), e.to_string(), e))
        })
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::decode::open_meteo::decode_open_meteo;

    fn station(code: &str) -> &'static Station {
        Catalog::global().get(code).unwrap()
    }

    #[test]
    fn stations_get_only_the_models_that_cover_them() {
        let cfg = OpenMeteoConfig { stations: vec!["KNYC".into(), "EGLC".into()], ..OpenMeteoConfig::default() };
        let client = Arc::new(HttpClient::new(crate::feeds::config::ClientConfig::default()).unwrap());
        let feed = OpenMeteo::new(cfg.validated().unwrap(), client).unwrap();
        let names = |code: &str| -> Vec<&str> { feed.models_for(station(code)).map(|m| m.spec.name).collect() };
        let (nyc, london) = (names("KNYC"), names("EGLC"));
        assert!(nyc.contains(&"NAM") && nyc.contains(&"HRRR") && nyc.contains(&"GFS"), "{nyc:?}");
        assert!(london.contains(&"GFS") && london.contains(&"ECMWF-IFS"), "{london:?}");
        for us_only in ["NAM", "HRRR", "NBM"] {
            assert!(!london.contains(&us_only), "{us_only} offered for EGLC: {london:?}");
        }
        let nam = feed.models.iter().find(|m| m.spec.name == "NAM").unwrap();
        assert_eq!(feed.stations_for(nam).iter().map(|s| s.code.as_str()).collect::<Vec<_>>(), ["KNYC"]);
    }

    #[test]
    fn every_open_meteo_id_decodes_to_its_own_model() {
        for a in open_meteo_models() {
            let Publisher::OpenMeteo(id) = a.publisher else { unreachable!() };
            let body = r#"{"hourly":{"time":["2026-09-24T00:00"],"temperature_2m":[20.5]},"hourly_units":{"temperature_2m":"°C"}}"#;
            let url = Url::parse("http://x/").unwrap();
            let parts =
                split_locations(&url, &Bytes::from_static(body.as_bytes()), 1, id, &["temperature_2m"]).unwrap();
            let run = "2026-09-24T00:00:00Z".parse().unwrap();
            let d = decode_open_meteo(&parts[0], "KNYC", Some(run));
            assert!(d.errors.is_empty(), "{id}: {:?}", d.errors);
            assert_eq!(d.records.len(), 1, "{id}");
            assert_eq!(d.records[0].model, a.model, "{id}");
            assert_eq!(d.records[0].run_time, run);
        }
    }

    #[test]
    fn urls_carry_the_batch_the_model_and_the_run() {
        let run = "2026-09-24T06:00:00Z".parse().unwrap();
        let url =
            single_run_url("http://127.0.0.1:9/om", "gfs_global", run, &[station("KNYC"), station("KMDW")]).unwrap();
        let q: HashMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(url.path(), "/om/v1/forecast");
        assert_eq!(q["models"], "gfs_global");
        assert_eq!(q["run"], "2026-09-24T06:00");
        assert_eq!(q["latitude"].split(',').count(), 2);
        assert!(q["hourly"].starts_with("temperature_2m,"));
        let gfs = Model { spec: models::model("GFS").unwrap(), id: "gfs_global", delay_min: 0 };
        let from = NaiveDate::from_ymd_opt(2026, 9, 1).unwrap();
        let url = previous_runs_url("http://h", &gfs, from, from, &[station("KNYC")]).unwrap();
        let q: HashMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(q["hourly"].split(',').next_back(), Some("temperature_2m_previous_day7"));
        assert_eq!((q["start_date"].as_str(), q["end_date"].as_str()), ("2026-09-01", "2026-09-01"));
    }

    #[test]
    fn answers_of_the_wrong_shape_are_refused_precisely() {
        let url = Url::parse("http://x/").unwrap();
        let asked = ["temperature_2m", "temperature_2m_previous_day1"];
        let e = |body: &'static str, n| {
            split_locations(&url, &Bytes::from_static(body.as_bytes()), n, "gfs_global", &asked)
        };
        assert!(e("[{}, {}]", 3).unwrap_err().to_string().contains("2 locations in the answer for 3 asked"));
        assert!(e("{\"hourly\": ", 1).unwrap_err().to_string().contains("expected Open-Meteo JSON"));
        assert!(e("42", 1).unwrap_err().to_string().contains("found a number"));
        let err = e(r#"{"error": true, "reason": "Parameter 'run' is invalid"}"#, 1).unwrap_err();
        assert!(err.to_string().contains("Open-Meteo error: Parameter 'run' is invalid"), "{err}");
        // A real previous-runs answer keeps its suffixed keys.
        let real = include_bytes!("../../data/real/forecast/openmeteo_previous_runs_knyc_gfs_ecmwf_2026-09-01_03.json");
        let parts = split_locations(&url, &Bytes::from_static(real), 1, "gfs_seamless", &asked).unwrap();
        let v: Value = serde_json::from_slice(&parts[0]).unwrap();
        assert!(v["hourly"].get("temperature_2m_previous_day1_ecmwf_ifs025").is_some());
    }

    #[test]
    fn a_backfill_touches_the_run_dates_of_the_previous_runs_it_stores() {
        let client = Arc::new(HttpClient::new(crate::feeds::config::ClientConfig::default()).unwrap());
        let feed = |models: &[&str]| {
            let models = models.iter().map(|m| m.to_string()).collect();
            let cfg = OpenMeteoConfig { stations: vec!["KNYC".into()], models, ..OpenMeteoConfig::default() };
            OpenMeteo::new(cfg.validated().unwrap(), Arc::clone(&client)).unwrap()
        };
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        let (from, to) = (d("2026-09-10"), d("2026-09-12"));
        // HRRR's horizon reaches two days: previous_day1..2, runs from 8 Sep.
        assert_eq!(Archive::days_touched(&feed(&["HRRR"]), from, to), (d("2026-09-08"), d("2026-09-13")));
        // GFS's reaches past the API's 7 days.
        assert_eq!(Archive::days_touched(&feed(&["HRRR", "GFS"]), from, to), (d("2026-09-03"), d("2026-09-13")));
        let range = crate::feeds::backfill::derived_range(&feed(&["GFS"]), from, to, to);
        assert_eq!(range, (d("2026-09-03"), to), "no later than today");
    }

    #[test]
    fn config_defaults_and_refusals() {
        let cfg = OpenMeteoConfig::default().validated().unwrap();
        assert_eq!(cfg.models.len(), open_meteo_models().count());
        assert!(cfg.models.iter().any(|m| m == "ECMWF-IFS") && !cfg.models.iter().any(|m| m == "GFS-MOS"));
        let bad = OpenMeteoConfig { models: vec!["GFS-MOS".into()], ..OpenMeteoConfig::default() };
        assert!(bad.validated().unwrap_err().to_string().contains("not served by Open-Meteo"));
        let bad = OpenMeteoConfig { stations: vec!["ZZZZ".into()], ..OpenMeteoConfig::default() };
        assert!(bad.validated().unwrap_err().to_string().contains("not in the station catalog"));
        assert_eq!(cfg.max_calls_per_minute, 0.0, "unpaced unless asked");
        let bad = OpenMeteoConfig { max_calls_per_minute: -1.0, ..OpenMeteoConfig::default() };
        assert!(bad.validated().unwrap_err().contains("max_calls_per_minute must be a number >= 0"));
    }

    #[test]
    fn a_location_counts_by_its_size() {
        assert_eq!(calls_per_location(5, 3.0), 1.0);
        assert_eq!(calls_per_location(20, 7.0), 2.0);
        assert!((calls_per_location(12, 16.0) - 1.2 * 16.0 / 7.0).abs() < 1e-9);
        // A live run: 12 variables over the horizon (GFS: 16 days; HRRR: 2).
        assert!((run_calls_per_location(models::model("GFS").unwrap()) - 1.2 * 16.0 / 7.0).abs() < 1e-9);
        assert!((run_calls_per_location(models::model("HRRR").unwrap()) - 1.2).abs() < 1e-9);
    }

    #[tokio::test]
    async fn paced_requests_are_spaced_by_their_cost() {
        let client = Arc::new(HttpClient::new(crate::feeds::config::ClientConfig::default()).unwrap());
        // 6,000 calls a minute is 100 a second: a request of 10 calls books 0.1 s.
        let cfg = OpenMeteoConfig { max_calls_per_minute: 6000.0, ..OpenMeteoConfig::default() };
        let feed = OpenMeteo::new(cfg.validated().unwrap(), Arc::clone(&client)).unwrap();
        let start = std::time::Instant::now();
        for _ in 0..3 {
            feed.pace(10.0).await;
        }
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(2), "the first at once: {took:?}");
        let unpaced = OpenMeteo::new(OpenMeteoConfig::default().validated().unwrap(), client).unwrap();
        let start = std::time::Instant::now();
        for _ in 0..3 {
            unpaced.pace(1e6).await;
        }
        assert!(start.elapsed() < Duration::from_millis(100));
    }
}
