//! What the two Iowa Environmental Mesonet request services (`asos.py` for METARs,
//! `asos1min.py` for one-minute data) share: IEM's station ids, the time window each
//! request asks for, reading an answer's rows before the decoder does, one request's way
//! from URL to sink, the polling of station batches ([`Service`]), the checks of the
//! settings both have ([`Settings::validated`]), and the source and archive both are
//! ([`Feed`]).
//!
//! Both services answer a station list and a `sts`..`ets` window (UTC, end excluded)
//! with a delimited export: `#DEBUG` comment lines (asos.py's `tdf`), a header naming
//! `station` and `valid` (`valid(UTC)` in asos1min.py), one row per report or minute.
//! Neither sends validators (the URL changes with every window anyway), so "nothing new"
//! is an answer without rows. IEM's CGI scripts are shared by many users and rate
//! limited per address: the sources ask for a station batch per request and few requests.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, DurationRound, Utc};
use parking_lot::Mutex;
use url::Url;

use super::http::{Fetched, HttpClient};
use super::sink::{FeedSink, Stored};
use super::source::{Archive, ArchiveUnit, FeedError, PollReport, Source};
use crate::catalog::Catalog;
use crate::clock::Clock;
use crate::decode::metar::is_station_id;
use crate::decode::timestamp::parse_timestamp;
use crate::ingest::{Format, IngestOptions};

/// IEM's public host, the default `base_url` of both IEM sources.
pub const IEM_BASE_URL: &str = "https://mesonet.agron.iastate.edu";

/// The catalog's US stations: IEM's request services cover the US ASOS network (asos.py
/// has other networks too, but the catalog's other stations are better served by AWC).
pub fn us_catalog_stations() -> Vec<String> {
    Catalog::global().all().iter().filter(|s| s.is_us()).map(|s| s.code.clone()).collect()
}

/// IEM's id for an ICAO id: IEM drops the K of contiguous-US stations (`KCVG` is `CVG`;
/// asos1min.py refuses the 4-letter form), other ids are its own.
pub fn iem_id(icao: &str) -> &str {
    match icao.strip_prefix('K') {
        Some(rest) if rest.len() == 3 => rest,
        _ => icao,
    }
}

/// The ICAO id of an IEM `station` value: a bare three-letter id gets its K back (as the
/// one-minute decoder does), anything else is taken as written.
pub fn icao_of(iem: &str) -> String {
    let up = iem.trim().to_ascii_uppercase();
    if up.len() == 3 && up.bytes().all(|b| b.is_ascii_alphabetic()) {
        format!("K{up}")
    } else {
        up
    }
}

/// `{base_url}/{path}`, a base URL under a path meaning that directory.
pub fn endpoint(base_url: &str, path: &str) -> Result<Url, String> {
    let mut base = Url::parse(base_url).map_err(|e| format!("base_url {base_url:?}: {e}"))?;
    if !base.path().ends_with('/') {
        base.set_path(&format!("{}/", base.path()));
    }
    base.join(path).map_err(|e| format!("base_url {base_url:?}: {e}"))
}

/// A UTC instant as both services read it (`2024-03-01T00:00Z`, minute precision).
pub fn minute(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%MZ").to_string()
}

/// The end of a live window: the next whole minute after `now` (the services take
/// `valid < ets`, so the current minute's row is in).
pub fn window_end(now: DateTime<Utc>) -> DateTime<Utc> {
    let m = chrono::Duration::minutes(1);
    now.duration_trunc(m).unwrap_or(now) + m
}

/// Upper-cases station ids and checks each is an ICAO id.
pub fn check_stations(stations: &mut [String]) -> Result<(), String> {
    for s in stations.iter_mut() {
        *s = s.trim().to_ascii_uppercase();
        if !is_station_id(s) {
            return Err(format!("station {s:?} is not a 4-character ICAO id"));
        }
    }
    if stations.is_empty() {
        return Err("stations is empty".to_string());
    }
    Ok(())
}

/// Checks the window settings both IEM sources have.
pub fn check_window(lookback_hours: f64, overlap_minutes: f64, interval: Duration) -> Result<(), String> {
    if !(lookback_hours.is_finite() && lookback_hours > 0.0) {
        return Err(format!("lookback_hours must be a positive number, found {lookback_hours}"));
    }
    if !(overlap_minutes.is_finite() && overlap_minutes >= 0.0) {
        return Err(format!("overlap_minutes must be a number >= 0, found {overlap_minutes}"));
    }
    if lookback_hours * 3600.0 < interval.as_secs_f64() {
        return Err(format!(
            "lookback_hours ({lookback_hours}) reaches back less than one interval ({} s): a failed poll could not be caught up",
            interval.as_secs_f64()
        ));
    }
    Ok(())
}

/// A duration of `hours` (validated finite and non-negative).
pub fn hours(h: f64) -> chrono::Duration {
    chrono::Duration::milliseconds((h * 3_600_000.0) as i64)
}

/// How far each station's data is stored: the newest row time seen per station. A poll
/// asks from there (less an overlap for late rows), so a source down for hours is caught
/// up when it is back, within the lookback, and a row is asked for again only inside the
/// overlap (the lake's natural keys keep it once).
#[derive(Debug, Default)]
pub struct Coverage {
    newest: Mutex<HashMap<String, DateTime<Utc>>>,
}

impl Coverage {
    /// Where the next window of `stations` starts: the earliest of each station's newest
    /// stored row less `overlap`, never before `now - lookback` (a station with nothing
    /// stored starts there).
    pub fn start(
        &self,
        stations: &[String],
        now: DateTime<Utc>,
        lookback: chrono::Duration,
        overlap: chrono::Duration,
    ) -> DateTime<Utc> {
        let floor = now - lookback;
        let newest = self.newest.lock();
        stations.iter().map(|s| newest.get(s).map_or(floor, |t| (*t - overlap).max(floor))).min().unwrap_or(floor)
    }

    /// Records rows as stored (call once the sink took them).
    pub fn record(&self, rows: &HashMap<String, DateTime<Utc>>) {
        let mut newest = self.newest.lock();
        for (station, t) in rows {
            let e = newest.entry(station.clone()).or_insert(*t);
            *e = (*e).max(*t);
        }
    }

    /// The newest stored row of `station`, if any.
    pub fn newest(&self, station: &str) -> Option<DateTime<Utc>> {
        self.newest.lock().get(station).copied()
    }
}

/// An answer's rows as far as the feed needs them: how many, and the newest `valid` per
/// station (ICAO ids). Rows the decoder will refuse are skipped here; it reports them.
#[derive(Debug, Default, PartialEq)]
pub struct Rows {
    pub rows: usize,
    pub newest: HashMap<String, DateTime<Utc>>,
}

/// Reads an IEM export's header and rows (no quoting: IEM replaces the delimiter inside
/// station names). A body without a `station` and a `valid` column is not an export: an
/// error page served with status 200, a changed format.
pub fn scan(text: &str) -> Result<Rows, String> {
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r')).filter(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    });
    let header = lines.next().unwrap_or("");
    let delim = if header.contains('\t') { '\t' } else { ',' };
    let names: Vec<String> = header.split(delim).map(|h| h.trim().to_ascii_lowercase()).collect();
    let station = names.iter().position(|n| n == "station");
    let valid = names.iter().position(|n| n == "valid" || n.starts_with("valid("));
    let (Some(station), Some(valid)) = (station, valid) else {
        let shown: String = header.chars().take(80).collect();
        return Err(format!("expected an IEM export header with station and valid columns, found {shown:?}"));
    };
    let mut out = Rows::default();
    for line in lines {
        let mut fields = line.split(delim);
        let (mut s, mut v) = (None, None);
        for (i, f) in fields.by_ref().enumerate() {
            if i == station {
                s = Some(f);
            }
            if i == valid {
                v = Some(f);
            }
            if s.is_some() && v.is_some() {
                break;
            }
        }
        let (Some(s), Some(t)) = (s.filter(|s| !s.trim().is_empty()), v.and_then(parse_timestamp)) else {
            continue;
        };
        out.rows += 1;
        let e = out.newest.entry(icao_of(s)).or_insert(t);
        *e = (*e).max(t);
    }
    Ok(out)
}

/// What one request came to.
#[derive(Debug)]
pub enum Outcome {
    /// An answer without rows.
    Empty { bytes: usize },
    /// Rows handed to the sink.
    Stored { bytes: usize, stored: Stored, rows: Rows },
}

/// GETs `url`, checks the body is an IEM export and hands it to the sink as `format`.
/// Nothing is remembered here: the caller records coverage from the returned rows.
pub async fn fetch(
    client: &HttpClient,
    url: &Url,
    timeout: Duration,
    format: Format,
    sink: &dyn FeedSink,
) -> Result<Outcome, FeedError> {
    let body = match client.get(url, timeout).await? {
        // IEM sends no validators, so no request is conditional; a 304 would be a
        // proxy's doing and holds nothing new either.
        Fetched::NotModified => return Ok(Outcome::Empty { bytes: 0 }),
        Fetched::New(body) => body.bytes,
    };
    let bytes = body.len();
    let rows = scan_body(url, &body)?;
    if rows.rows == 0 {
        return Ok(Outcome::Empty { bytes });
    }
    let stored = sink.ingest(format, IngestOptions::default(), body).await?;
    Ok(Outcome::Stored { bytes, stored, rows })
}

fn scan_body(url: &Url, body: &Bytes) -> Result<Rows, FeedError> {
    let malformed = |reason: String| FeedError::Malformed { url: url.to_string(), reason, source: None };
    let text = std::str::from_utf8(body)
        .map_err(|e| FeedError::malformed_by(url.as_str(), format!("not UTF-8 text: {e}"), e))?;
    scan(text).map_err(malformed)
}

/// Adds one request's outcome to a poll's report.
pub fn add(report: &mut PollReport, outcome: Result<Outcome, FeedError>) {
    report.requests += 1;
    match outcome {
        Ok(Outcome::Empty { bytes }) => {
            report.empty += 1;
            report.bytes += bytes;
        }
        Ok(Outcome::Stored { bytes, stored, .. }) => {
            report.bytes += bytes;
            report.add_stored(stored);
        }
        Err(e) => report.errors.push(e),
    }
}

/// The archive units of `stations` over `from..=to`: per station, runs of at most
/// `days` days, oldest first.
pub fn archive_units(
    stations: &[String],
    from: chrono::NaiveDate,
    to: chrono::NaiveDate,
    days: u32,
) -> Vec<ArchiveUnit> {
    let mut out = Vec::new();
    let step = chrono::Days::new(u64::from(days.max(1)) - 1);
    for s in stations {
        let mut start = from;
        while start <= to {
            let end = start.checked_add_days(step).unwrap_or(to).min(to);
            out.push(ArchiveUnit { key: s.clone(), from: start, to: end });
            match end.succ_opt() {
                Some(next) => start = next,
                None => break,
            }
        }
    }
    out
}

/// The UTC window of an archive unit: its first day's midnight to the midnight after its
/// last day.
pub fn unit_window(unit: &ArchiveUnit) -> (DateTime<Utc>, DateTime<Utc>) {
    let start = unit.from.and_time(chrono::NaiveTime::MIN).and_utc();
    let end = unit.to.succ_opt().unwrap_or(unit.to).and_time(chrono::NaiveTime::MIN).and_utc();
    (start, end)
}

/// What a source's config says about its requests: the keys both IEM sources have.
#[derive(Debug, Clone)]
pub struct Settings {
    pub base_url: String,
    pub interval: Duration,
    pub stations: Vec<String>,
    pub batch_size: usize,
    pub lookback_hours: f64,
    pub overlap_minutes: f64,
    pub timeout: Duration,
    pub archive_days: u32,
}

impl Settings {
    /// Upper-cases the station ids and checks every value; the message says which.
    pub fn validated(mut self) -> Result<Self, String> {
        endpoint(&self.base_url, "")?;
        check_stations(&mut self.stations)?;
        if self.batch_size == 0 {
            return Err("batch_size must be at least 1".to_string());
        }
        if self.interval.is_zero() || self.timeout.is_zero() {
            return Err("interval_secs and timeout_secs must be positive".to_string());
        }
        check_window(self.lookback_hours, self.overlap_minutes, self.interval)?;
        if self.archive_days == 0 {
            return Err("archive_days must be at least 1".to_string());
        }
        Ok(self)
    }
}

/// One IEM request service as a feed: its endpoint and fixed parameters, the stations in
/// batches of one request each, and how far each station is stored. `iem_asos` and
/// `iem_onemin` are this with their own parameters, format and settings.
pub struct Service {
    client: Arc<HttpClient>,
    clock: Arc<dyn Clock>,
    endpoint: Url,
    /// The query parameters after the stations, before the window.
    params: Vec<(&'static str, String)>,
    format: Format,
    settings: Settings,
    coverage: Coverage,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").field("endpoint", &self.endpoint.as_str()).finish_non_exhaustive()
    }
}

impl Service {
    /// The service at `{base_url}/{path}` (`base_url` of `settings`), its bodies handed on
    /// as `format`.
    pub fn new(
        path: &str,
        params: Vec<(&'static str, String)>,
        format: Format,
        settings: Settings,
        client: Arc<HttpClient>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, FeedError> {
        let base_url = &settings.base_url;
        let endpoint = endpoint(base_url, path).map_err(|reason| FeedError::Malformed {
            url: base_url.to_string(),
            reason,
            source: None,
        })?;
        Ok(Service { client, clock, endpoint, params, format, settings, coverage: Coverage::default() })
    }

    /// The request for `stations` over `sts..ets`.
    pub fn url(&self, stations: &[String], sts: DateTime<Utc>, ets: DateTime<Utc>) -> Url {
        let mut u = self.endpoint.clone();
        {
            let mut q = u.query_pairs_mut();
            for s in stations {
                q.append_pair("station", iem_id(s));
            }
            for (k, v) in &self.params {
                q.append_pair(k, v);
            }
            q.append_pair("sts", &minute(sts));
            q.append_pair("ets", &minute(ets));
        }
        u
    }

    /// The newest row stored through this feed for `station`.
    pub fn covered_until(&self, station: &str) -> Option<DateTime<Utc>> {
        self.coverage.newest(station)
    }

    /// One request per batch, the batches together; coverage moves once a batch's rows
    /// are stored.
    pub async fn poll(&self, sink: &dyn FeedSink) -> PollReport {
        let batches = self.settings.stations.chunks(self.settings.batch_size.max(1));
        let outcomes = futures::future::join_all(batches.map(|b| self.poll_batch(b, sink))).await;
        let mut report = PollReport::default();
        for o in outcomes {
            add(&mut report, o);
        }
        report
    }

    async fn poll_batch(&self, stations: &[String], sink: &dyn FeedSink) -> Result<Outcome, FeedError> {
        let now = self.clock.now();
        let lookback = hours(self.settings.lookback_hours);
        let overlap = hours(self.settings.overlap_minutes / 60.0);
        let sts = self.coverage.start(stations, now, lookback, overlap);
        let url = self.url(stations, sts, window_end(now));
        let outcome = fetch(&self.client, &url, self.settings.timeout, self.format, sink).await?;
        if let Outcome::Stored { rows, .. } = &outcome {
            self.coverage.record(&rows.newest);
        }
        Ok(outcome)
    }

    /// The archive units of `stations` (empty: the configured ones) over `from..=to`.
    pub fn units(&self, from: chrono::NaiveDate, to: chrono::NaiveDate, stations: &[String]) -> Vec<ArchiveUnit> {
        let stations = if stations.is_empty() { &self.settings.stations[..] } else { stations };
        archive_units(stations, from, to, self.settings.archive_days)
    }

    /// Fetches one archive unit (coverage is the live polls' and stays as it is).
    pub async fn fetch_unit(&self, unit: &ArchiveUnit, sink: &dyn FeedSink) -> PollReport {
        let (sts, ets) = unit_window(unit);
        let url = self.url(std::slice::from_ref(&unit.key), sts, ets);
        let mut report = PollReport::default();
        add(&mut report, fetch(&self.client, &url, self.settings.timeout, self.format, sink).await);
        report
    }
}

/// Which IEM service a [`Feed`] is.
pub trait Kind: Send + Sync + 'static {
    /// The name of its `[sources.NAME]` table.
    const NAME: &'static str;
}

/// An IEM service as a [`Source`] and an [`Archive`], named by its kind `K`: `iem_asos`
/// and `iem_onemin` are this (`IemAsos`, `IemOnemin`), each with its own constructor.
pub struct Feed<K> {
    service: Service,
    kind: PhantomData<K>,
}

impl<K: Kind> std::fmt::Debug for Feed<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed").field("source", &K::NAME).field("service", &self.service).finish()
    }
}

impl<K: Kind> Feed<K> {
    /// The feed of `service`.
    pub fn of(service: Service) -> Self {
        Feed { service, kind: PhantomData }
    }

    /// The request for `stations` over `sts..ets`.
    pub fn url(&self, stations: &[String], sts: DateTime<Utc>, ets: DateTime<Utc>) -> Url {
        self.service.url(stations, sts, ets)
    }

    /// The newest row stored through this feed for `station`.
    pub fn covered_until(&self, station: &str) -> Option<DateTime<Utc>> {
        self.service.covered_until(station)
    }
}

#[async_trait]
impl<K: Kind> Source for Feed<K> {
    fn name(&self) -> &str {
        K::NAME
    }

    fn observed_stations(&self) -> Vec<String> {
        self.service.settings.stations.clone()
    }

    fn interval(&self) -> Duration {
        self.service.settings.interval
    }

    async fn poll(&self, sink: &dyn FeedSink) -> PollReport {
        self.service.poll(sink).await
    }
}

#[async_trait]
impl<K: Kind> Archive for Feed<K> {
    fn name(&self) -> &str {
        K::NAME
    }

    fn units(&self, from: chrono::NaiveDate, to: chrono::NaiveDate, stations: &[String]) -> Vec<ArchiveUnit> {
        self.service.units(from, to, stations)
    }

    async fn fetch(&self, unit: &ArchiveUnit, sink: &dyn FeedSink) -> PollReport {
        self.service.fetch_unit(unit, sink).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveDate, TimeZone};

    #[test]
    fn ids_lose_and_regain_the_k_of_us_stations() {
        assert_eq!(iem_id("KCVG"), "CVG");
        assert_eq!(iem_id("PHNL"), "PHNL");
        assert_eq!(iem_id("VOHY"), "VOHY");
        assert_eq!(icao_of("CVG"), "KCVG");
        assert_eq!(icao_of("vohy"), "VOHY");
        assert_eq!(icao_of("K2X3"), "K2X3");
    }

    #[test]
    fn the_real_export_is_scanned_for_rows_and_the_newest_per_station() {
        let text = include_str!("../../data/real/metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv");
        let rows = scan(text).unwrap();
        assert_eq!(rows.rows, text.lines().filter(|l| !l.starts_with('#')).count() - 1);
        assert_eq!(rows.newest.len(), 1);
        assert_eq!(rows.newest["KCVG"], Utc.with_ymd_and_hms(2024, 3, 1, 23, 55, 0).unwrap());
        let onemin = "station,station_name,valid(UTC),tmpf\nCVG,CINCINNATI_N KY,2024-03-01 00:00,37.00\nCVG,CINCINNATI_N KY,2024-03-01 00:01,M\nCVG,x,bad,1\n";
        let rows = scan(onemin).unwrap();
        assert_eq!(rows.rows, 2);
        assert_eq!(rows.newest["KCVG"], Utc.with_ymd_and_hms(2024, 3, 1, 0, 1, 0).unwrap());
        assert_eq!(scan("station\tvalid\tmetar\n").unwrap(), Rows::default());
        let e = scan("ERROR: server over capacity, please try later").unwrap_err();
        assert!(e.contains("expected an IEM export header"), "{e}");
    }

    #[test]
    fn windows_start_at_the_newest_stored_row_less_the_overlap_within_the_lookback() {
        let c = Coverage::default();
        let now = Utc.with_ymd_and_hms(2024, 3, 1, 12, 0, 0).unwrap();
        let (look, over) = (chrono::Duration::hours(6), chrono::Duration::minutes(30));
        let both = ["KCVG".to_string(), "KMDW".to_string()];
        assert_eq!(c.start(&both, now, look, over), now - look, "nothing stored: the lookback");
        c.record(&HashMap::from([("KCVG".to_string(), now - chrono::Duration::minutes(5))]));
        assert_eq!(c.start(&both[..1], now, look, over), now - chrono::Duration::minutes(35));
        assert_eq!(c.start(&both, now, look, over), now - look, "the batch starts at its least covered station");
        // A station stored long ago (a source down for a day) starts at the lookback.
        assert_eq!(c.start(&both[..1], now + chrono::Duration::days(1), look, over), now + chrono::Duration::hours(18));
        // Older rows never move coverage back.
        c.record(&HashMap::from([("KCVG".to_string(), now - chrono::Duration::hours(3))]));
        assert_eq!(c.newest("KCVG"), Some(now - chrono::Duration::minutes(5)));
        assert_eq!(
            window_end(Utc.with_ymd_and_hms(2024, 3, 1, 12, 3, 30).unwrap()),
            now + chrono::Duration::minutes(4)
        );
        assert_eq!(minute(now), "2024-03-01T12:00Z");
    }

    #[test]
    fn archive_units_split_each_station_into_runs_of_days() {
        let d = |m, day| NaiveDate::from_ymd_opt(2024, m, day).unwrap();
        let units = archive_units(&["KCVG".into(), "KMDW".into()], d(1, 30), d(2, 3), 3);
        let ids: Vec<String> = units.iter().map(|u| u.id()).collect();
        assert_eq!(
            ids,
            [
                "KCVG/2024-01-30/2024-02-01",
                "KCVG/2024-02-02/2024-02-03",
                "KMDW/2024-01-30/2024-02-01",
                "KMDW/2024-02-02/2024-02-03"
            ]
        );
        assert!(archive_units(&["KCVG".into()], d(2, 3), d(2, 1), 3).is_empty());
        let (s, e) = unit_window(&units[1]);
        assert_eq!((minute(s), minute(e)), ("2024-02-02T00:00Z".to_string(), "2024-02-04T00:00Z".to_string()));
    }
}
