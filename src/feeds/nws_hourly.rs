//! The api.weather.gov hourly point forecast (`nws_hourly`), US stations only: each
//! station's grid cell is resolved once with `GET {base}/points/{lat},{lon}` and kept
//! (in memory and in the state file, [`StateFile`]), then every `interval` the cell's
//! `GET {base}/gridpoints/{wfo}/{x},{y}/forecast/hourly` goes to the NWS hourly decoder
//! as `POST /api/v2/ingest/nws-hourly?station=...` would send it.
//!
//! **Versions.** The service regenerates the document (a new `generatedAt`) far more
//! often than forecasters change the grid (`updateTime`), and the lake keys a version on
//! `generatedAt`. So a document is stored only when its `updateTime` differs from the
//! last one stored for the station (remembered across restarts too); an unchanged one
//! counts as not modified. What a version is, and which versions are served, stays the
//! decoder's and `nws_forecasts`' business.
//!
//! A 404 for a grid cell (an office re-gridded) forgets the cell, so the next poll
//! resolves the point again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use url::Url;

use super::http::{FetchError, Fetched, HttpClient};
use super::nws_products::us_stations;
use super::seconds::secs;
use super::sink::FeedSink;
use super::source::{FeedError, PollReport, Source};
use super::state_file::StateFile;
use crate::catalog::Catalog;
use crate::ingest::{Format, IngestOptions};

/// The source's name, as in `[sources.NAME]`.
pub const NAME: &str = "nws_hourly";

/// `[sources.nws_hourly]`: api.weather.gov hourly point forecasts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NwsHourlyConfig {
    /// `enabled` (default true): false keeps the table but stops the feed.
    pub enabled: bool,
    /// `base_url` (default `https://api.weather.gov`).
    pub base_url: String,
    /// `stations` (default: the catalog's US stations): catalog ids of US stations (the
    /// service covers the US only; the catalog gives the coordinates).
    pub stations: Vec<String>,
    /// `interval_secs` (default 1200): forecasters update grids a few times a day; the
    /// document is cached by the service for about as long.
    #[serde(rename = "interval_secs", deserialize_with = "secs")]
    pub interval: Duration,
    /// `timeout_secs` (default 20): one request's limit, connect to last byte.
    #[serde(rename = "timeout_secs", deserialize_with = "secs")]
    pub timeout: Duration,
}

impl Default for NwsHourlyConfig {
    fn default() -> Self {
        NwsHourlyConfig {
            enabled: true,
            base_url: "https://api.weather.gov".to_string(),
            stations: us_stations(),
            interval: Duration::from_secs(1200),
            timeout: Duration::from_secs(20),
        }
    }
}

impl NwsHourlyConfig {
    /// Upper-cases the station ids and checks every value; the message says what is
    /// wrong (the config module says where).
    pub fn validated(mut self) -> Result<Self, String> {
        Url::parse(&self.base_url).map_err(|e| format!("base_url {:?}: {e}", self.base_url))?;
        for s in &mut self.stations {
            *s = s.trim().to_ascii_uppercase();
            match Catalog::global().get(s) {
                Some(st) if st.is_us() => {}
                Some(_) => return Err(format!("station {s:?} is not in the US (api.weather.gov covers the US only)")),
                None => return Err(format!("station {s:?} is not in the catalog (its coordinates are needed)")),
            }
        }
        if self.stations.is_empty() {
            return Err("stations is empty".to_string());
        }
        if self.interval.is_zero() || self.timeout.is_zero() {
            return Err("interval_secs and timeout_secs must be positive".to_string());
        }
        Ok(self)
    }
}

/// A station's forecast grid cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridPoint {
    pub wfo: String,
    pub x: u32,
    pub y: u32,
}

/// What the source remembers across restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Memory {
    /// Each station's grid cell.
    points: BTreeMap<String, GridPoint>,
    /// Each station's last stored `updateTime` (as the service writes it).
    update_times: BTreeMap<String, String>,
}

/// The api.weather.gov hourly forecast feed.
#[derive(Debug)]
pub struct NwsHourly {
    cfg: NwsHourlyConfig,
    client: Arc<HttpClient>,
    /// `base_url` as a directory.
    base: Url,
    memory: Mutex<Memory>,
    file: StateFile,
}

impl NwsHourly {
    /// The feed for a validated `cfg`, its memory kept under `state_dir` (if any).
    pub fn new(
        cfg: NwsHourlyConfig,
        client: Arc<HttpClient>,
        state_dir: Option<&std::path::Path>,
    ) -> Result<Self, FeedError> {
        let mut base = Url::parse(&cfg.base_url).map_err(|e| FeedError::Malformed {
            url: cfg.base_url.clone(),
            reason: e.to_string(),
            source: Some(Box::new(e)),
        })?;
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        let file = StateFile::new(state_dir, NAME);
        let memory = file.load();
        Ok(NwsHourly { cfg, client, base, memory: Mutex::new(memory), file })
    }

    fn join(&self, path: &str) -> Result<Url, FeedError> {
        self.base.join(path).map_err(|e| FeedError::Malformed {
            url: self.base.to_string(),
            reason: e.to_string(),
            source: Some(Box::new(e)),
        })
    }

    /// `{base}/points/{lat},{lon}` of a catalog station.
    pub fn points_url(&self, station: &str) -> Result<Url, FeedError> {
        let st = Catalog::global().get(station).ok_or_else(|| FeedError::Malformed {
            url: self.base.to_string(),
            reason: format!("station {station} is not in the catalog"),
            source: None,
        })?;
        self.join(&format!("points/{},{}", coordinate(st.latitude), coordinate(st.longitude)))
    }

    /// The station's grid cell: remembered, or resolved now (one request).
    async fn grid_point(&self, station: &str, report: &mut PollReport) -> Result<GridPoint, FeedError> {
        if let Some(p) = self.memory.lock().points.get(station) {
            return Ok(p.clone());
        }
        let url = self.points_url(station)?;
        report.requests += 1;
        let body = match self.client.get(&url, self.cfg.timeout).await? {
            Fetched::New(body) => body,
            Fetched::NotModified => {
                return Err(FeedError::Malformed {
                    url: url.to_string(),
                    reason: "304 to an unconditional GET".into(),
                    source: None,
                })
            }
        };
        report.bytes += body.bytes.len();
        let point = parse_point(&body.bytes).map_err(|reason| FeedError::Malformed {
            url: url.to_string(),
            reason,
            source: None,
        })?;
        tracing::info!(station, wfo = %point.wfo, x = point.x, y = point.y, "nws_hourly: grid point resolved");
        let mut memory = self.memory.lock();
        memory.points.insert(station.to_string(), point.clone());
        self.file.save(&*memory);
        Ok(point)
    }

    /// One station: its grid point, then its hourly forecast if its `updateTime` is new.
    async fn poll_station(&self, station: &str, sink: &dyn FeedSink) -> PollReport {
        let mut report = PollReport::default();
        if let Err(e) = self.fetch_forecast(station, sink, &mut report).await {
            report.errors.push(e);
        }
        report
    }

    async fn fetch_forecast(
        &self,
        station: &str,
        sink: &dyn FeedSink,
        report: &mut PollReport,
    ) -> Result<(), FeedError> {
        let point = self.grid_point(station, report).await?;
        let url = self.join(&format!("gridpoints/{}/{},{}/forecast/hourly", point.wfo, point.x, point.y))?;
        report.requests += 1;
        let body = match self.client.get(&url, self.cfg.timeout).await {
            Ok(Fetched::New(body)) => body,
            Ok(Fetched::NotModified) => {
                report.not_modified += 1;
                return Ok(());
            }
            Err(e) => {
                if matches!(e, FetchError::Status { status: 404, .. }) {
                    tracing::warn!(station, %url, "nws_hourly: grid cell gone; the point is resolved again next poll");
                    let mut memory = self.memory.lock();
                    memory.points.remove(station);
                    self.file.save(&*memory);
                }
                return Err(e.into());
            }
        };
        report.bytes += body.bytes.len();
        let version = update_time(&body.bytes).map_err(|reason| FeedError::Malformed {
            url: url.to_string(),
            reason,
            source: None,
        })?;
        if self.memory.lock().update_times.get(station) == Some(&version) {
            report.not_modified += 1;
            self.client.remember(&url, body.validators);
            return Ok(());
        }
        let opts = IngestOptions { station: Some(station.to_string()), ..IngestOptions::default() };
        let stored = sink.ingest(Format::NwsHourly, opts, body.bytes).await?;
        report.add_stored(stored);
        {
            let mut memory = self.memory.lock();
            memory.update_times.insert(station.to_string(), version);
            self.file.save(&*memory);
        }
        self.client.remember(&url, body.validators);
        Ok(())
    }
}

/// A coordinate as api.weather.gov wants it: at most four decimals (it redirects longer
/// ones), no trailing zeros.
fn coordinate(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// `properties.gridId`, `gridX`, `gridY` of a `/points` answer (numbers, or numbers in
/// strings as some answers write them).
fn parse_point(body: &[u8]) -> Result<GridPoint, String> {
    let root: Value = serde_json::from_slice(body).map_err(|e| format!("expected the points JSON: {e}"))?;
    let props = root.get("properties").ok_or("expected the points JSON: no properties")?;
    let wfo = props
        .get("gridId")
        .and_then(Value::as_str)
        .filter(|w| !w.is_empty() && w.bytes().all(|c| c.is_ascii_alphanumeric()))
        .ok_or("no gridId (an office id) in properties")?
        .to_string();
    let cell = |k: &str| -> Result<u32, String> {
        let v = props.get(k).ok_or(format!("no {k} in properties"))?;
        v.as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or(format!("{k} is not a grid index: {v}"))
    };
    Ok(GridPoint { wfo, x: cell("gridX")?, y: cell("gridY")? })
}

/// The forecast's version marker: `properties.updateTime` (else `generatedAt`).
fn update_time(body: &[u8]) -> Result<String, String> {
    let root: Value = serde_json::from_slice(body).map_err(|e| format!("expected the hourly forecast JSON: {e}"))?;
    let props = root.get("properties").ok_or("expected the hourly forecast JSON: no properties")?;
    ["updateTime", "generatedAt"]
        .iter()
        .find_map(|k| props.get(*k).and_then(Value::as_str))
        .map(str::to_string)
        .ok_or_else(|| "no updateTime or generatedAt in properties".to_string())
}

#[async_trait]
impl Source for NwsHourly {
    fn name(&self) -> &str {
        NAME
    }

    fn interval(&self) -> Duration {
        self.cfg.interval
    }

    async fn poll(&self, sink: &dyn FeedSink) -> PollReport {
        let parts = futures::future::join_all(self.cfg.stations.iter().map(|s| self.poll_station(s, sink))).await;
        let mut report = PollReport::default();
        for p in parts {
            report += p;
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_have_at_most_four_decimals() {
        assert_eq!(coordinate(40.77898), "40.779");
        assert_eq!(coordinate(-73.96925), "-73.9693");
        assert_eq!(coordinate(30.0), "30");
        assert_eq!(coordinate(-0.00001), "0");
    }

    #[test]
    fn points_and_update_times_are_read_and_bad_ones_refused() {
        let p = parse_point(br#"{"properties": {"gridId": "TAE", "gridX": 58, "gridY": 65}}"#).unwrap();
        assert_eq!(p, GridPoint { wfo: "TAE".into(), x: 58, y: 65 });
        let p = parse_point(br#"{"properties": {"gridId": "TAE", "gridX": "58", "gridY": "65"}}"#).unwrap();
        assert_eq!((p.x, p.y), (58, 65));
        assert!(parse_point(br#"{"properties": {"gridId": "../x", "gridX": 1, "gridY": 2}}"#).is_err());
        assert!(parse_point(br#"{"properties": {"gridId": "TAE", "gridX": -1, "gridY": 2}}"#)
            .unwrap_err()
            .contains("gridX"));
        assert!(parse_point(b"<html>").unwrap_err().contains("points JSON"));

        let real = include_bytes!("../../data/real/forecast/nws_hourly_forecast_knyc_gen20260924T0316Z.json");
        assert_eq!(update_time(real).unwrap(), "2026-09-23T21:46:15+00:00");
        assert!(update_time(br#"{"properties": {}}"#).is_err());
    }

    #[test]
    fn the_table_is_read_through_the_feeds_config() {
        let read = |t: &str| crate::feeds::FeedsConfig::from_toml(&toml::from_str(t).unwrap());
        let cfg = read("[nws_hourly]\ninterval_secs = 900\n").unwrap().nws_hourly.unwrap();
        assert_eq!((cfg.interval, cfg.base_url.as_str()), (Duration::from_secs(900), "https://api.weather.gov"));
        let e = read("[nws_hourly]\nstations = [\"EGLC\"]\n").unwrap_err().to_string();
        assert!(e.starts_with("[sources.nws_hourly]: station \"EGLC\" is not in the US"), "{e}");
    }

    #[test]
    fn only_us_catalog_stations_are_accepted() {
        let ok = NwsHourlyConfig::default().validated().unwrap();
        assert!(ok.stations.iter().any(|s| s == "KNYC"));
        let bad = |s: &str| NwsHourlyConfig { stations: vec![s.into()], ..Default::default() }.validated().unwrap_err();
        assert!(bad("EGLC").contains("not in the US"));
        assert!(bad("KXYZ").contains("not in the catalog"));
        assert_eq!(
            NwsHourlyConfig { stations: vec!["knyc".into()], ..Default::default() }.validated().unwrap().stations,
            ["KNYC"]
        );
    }
}
