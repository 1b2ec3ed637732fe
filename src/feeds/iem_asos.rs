//! METAR, SPECI and 5-minute HF-METAR of US stations from the Iowa Environmental
//! Mesonet's ASOS request service:
//! `GET {base}/cgi-bin/request/asos.py?station=CVG&station=MDW&data=metar&report_type=1&report_type=3&report_type=4&tz=UTC&format=tdf&sts=...&ets=...`.
//!
//! IEM is where the 5-minute reports (`MADISHF`) are, which AWC does not carry. The answer
//! is the tab-separated export the METAR decoder reads (data/real/metar/IEM_KCVG_*.tsv:
//! `#DEBUG` lines, then `station valid metar`), handed on unchanged as [`Format::Metar`].
//! One request per station batch, the batches of a poll together (each with at most one
//! request in flight). Each window starts at the batch's newest stored report less
//! `overlap_minutes` (late reports), at most `lookback_hours` back ([`iem::Coverage`]), so a
//! poll that failed, or a source down for hours, is caught up, and the lake's natural
//! keys store the overlap's reports once. As an archive, IEM keeps decades; a backfill
//! unit is one station's run of `archive_days` UTC days. The source and the archive are
//! those of [`iem::Feed`], shared with `iem_onemin`.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::http::HttpClient;
use super::iem::{self, Service, Settings};
use super::seconds::secs;
use super::source::FeedError;
use crate::clock::{Clock, SystemClock};
use crate::ingest::Format;

/// The name of its `[sources.NAME]` table.
pub const NAME: &str = "iem_asos";

/// IEM's report types: 1 = HF-METAR (5-minute), 3 = routine METAR, 4 = SPECI.
pub const REPORT_TYPES: [u8; 3] = [1, 3, 4];

/// `[sources.iem_asos]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IemAsosConfig {
    /// `enabled` (default true): false keeps the table but stops the feed.
    pub enabled: bool,
    /// `base_url` (default `https://mesonet.agron.iastate.edu`).
    pub base_url: String,
    /// `interval_secs` (default 300): HF-METARs come every 5 minutes; IEM rate-limits
    /// its CGI scripts per address, so no more often.
    #[serde(rename = "interval_secs", deserialize_with = "secs")]
    pub interval: Duration,
    /// `stations` (default: the catalog's US stations): ICAO ids; IEM is asked for them
    /// without the K of contiguous-US ids (`KCVG` as `CVG`), as it names them.
    pub stations: Vec<String>,
    /// `batch_size` (default 10): stations per request. An hour of one station is about
    /// 14 reports; a first poll's 6 hours of 10 stations about 850.
    pub batch_size: usize,
    /// `lookback_hours` (default 6): how far back the first poll reaches, and the most a
    /// later one catches up after failures.
    pub lookback_hours: f64,
    /// `overlap_minutes` (default 30): each window starts this long before the newest
    /// report already stored for its stations, for reports IEM receives late.
    pub overlap_minutes: f64,
    /// `report_types` (default [1, 3, 4]): IEM's types: 1 HF-METAR, 3 routine, 4 SPECI.
    pub report_types: Vec<u8>,
    /// `timeout_secs` (default 60): one request's limit, connect to last byte.
    #[serde(rename = "timeout_secs", deserialize_with = "secs")]
    pub timeout: Duration,
    /// `archive_days` (default 31): UTC days per backfill request of one station (a month
    /// with HF-METARs is about 9,000 reports).
    pub archive_days: u32,
}

impl Default for IemAsosConfig {
    fn default() -> Self {
        IemAsosConfig {
            enabled: true,
            base_url: iem::IEM_BASE_URL.to_string(),
            interval: Duration::from_secs(300),
            stations: iem::us_catalog_stations(),
            batch_size: 10,
            lookback_hours: 6.0,
            overlap_minutes: 30.0,
            report_types: REPORT_TYPES.to_vec(),
            timeout: Duration::from_secs(60),
            archive_days: 31,
        }
    }
}

impl IemAsosConfig {
    /// Upper-cases the station ids and checks every value; the message says which.
    pub fn validated(mut self) -> Result<Self, String> {
        self.stations = self.settings().validated()?.stations;
        if self.report_types.is_empty() || self.report_types.iter().any(|t| !REPORT_TYPES.contains(t)) {
            return Err(format!("report_types must be some of {REPORT_TYPES:?}, found {:?}", self.report_types));
        }
        Ok(self)
    }

    /// The keys both IEM sources have.
    fn settings(&self) -> Settings {
        Settings {
            base_url: self.base_url.clone(),
            interval: self.interval,
            stations: self.stations.clone(),
            batch_size: self.batch_size,
            lookback_hours: self.lookback_hours,
            overlap_minutes: self.overlap_minutes,
            timeout: self.timeout,
            archive_days: self.archive_days,
        }
    }
}

/// The IEM ASOS feed: an [`iem::Feed`] of the `asos.py` service.
pub type IemAsos = iem::Feed<Asos>;

/// The `asos.py` service, as the kind of an [`iem::Feed`].
#[derive(Debug)]
pub struct Asos;

impl iem::Kind for Asos {
    const NAME: &'static str = NAME;
}

impl IemAsos {
    /// The feed for a validated `cfg`, on the system clock.
    pub fn new(cfg: IemAsosConfig, client: Arc<HttpClient>) -> Result<Self, FeedError> {
        Self::with_clock(cfg, client, Arc::new(SystemClock))
    }

    /// The feed with windows taken from `clock` (tests replay a past day).
    pub fn with_clock(cfg: IemAsosConfig, client: Arc<HttpClient>, clock: Arc<dyn Clock>) -> Result<Self, FeedError> {
        let mut params = vec![("data", "metar".to_string())];
        params.extend(cfg.report_types.iter().map(|t| ("report_type", t.to_string())));
        params.extend(
            [("tz", "UTC"), ("format", "tdf"), ("latlon", "no"), ("elev", "no"), ("missing", "M")]
                .map(|(k, v)| (k, v.to_string())),
        );
        let service = Service::new("cgi-bin/request/asos.py", params, Format::Metar, cfg.settings(), client, clock)?;
        Ok(iem::Feed::of(service))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn defaults_are_the_real_service_for_the_us_catalog() {
        let cfg = IemAsosConfig::default().validated().unwrap();
        assert_eq!(cfg.base_url, "https://mesonet.agron.iastate.edu");
        assert_eq!(cfg.interval, Duration::from_secs(300));
        assert!(cfg.stations.iter().all(|s| s.starts_with('K')) && cfg.stations.contains(&"KNYC".to_string()));
        assert!(!cfg.stations.contains(&"EGLC".to_string()));
    }

    #[test]
    fn bad_values_are_refused_precisely() {
        let bad = |f: fn(&mut IemAsosConfig)| {
            let mut c = IemAsosConfig::default();
            f(&mut c);
            c.validated().unwrap_err()
        };
        assert!(bad(|c| c.report_types = vec![2]).contains("report_types must be some of [1, 3, 4]"));
        assert!(bad(|c| c.stations = vec!["CVG".into()]).contains("station \"CVG\" is not a 4-character ICAO id"));
        assert!(bad(|c| c.lookback_hours = 0.01).contains("reaches back less than one interval"));
        assert!(bad(|c| c.overlap_minutes = -1.0).contains("overlap_minutes"));
        assert!(bad(|c| c.batch_size = 0).contains("batch_size"));
        assert!(bad(|c| c.base_url = "nope".into()).contains("base_url"));
    }

    #[test]
    fn the_url_asks_for_every_report_type_of_the_batch_in_utc() {
        let client = Arc::new(HttpClient::new(Default::default()).unwrap());
        let cfg = IemAsosConfig { base_url: "http://127.0.0.1:9/mirror".into(), ..IemAsosConfig::default() };
        let feed = IemAsos::new(cfg, client).unwrap();
        let t = |h| Utc.with_ymd_and_hms(2024, 3, 1, h, 0, 0).unwrap();
        let url = feed.url(&["KCVG".into(), "PHNL".into()], t(6), t(12));
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9/mirror/cgi-bin/request/asos.py?station=CVG&station=PHNL&data=metar&report_type=1&report_type=3&report_type=4&tz=UTC&format=tdf&latlon=no&elev=no&missing=M&sts=2024-03-01T06%3A00Z&ets=2024-03-01T12%3A00Z"
        );
    }
}
