//! One-minute ASOS temperatures of US stations from the Iowa Environmental Mesonet:
//! `GET {base}/cgi-bin/request/asos1min.py?station=CVG&vars=tmpf&sample=1min&what=download&delim=comma&tz=UTC&gis=no&sts=...&ets=...`.
//!
//! The answer is the CSV the one-minute decoder reads as it comes: a header
//! `station,station_name,valid(UTC),tmpf` (IEM replaces commas inside names), then one row
//! per station and minute, `M` for a missing value; IEM's 3-letter ids (`CVG`) get their
//! K back in the decoder. It goes to the sink unchanged as [`Format::Onemin`].
//!
//! IEM takes these data from NCEI about a day late, so the default lookback is two days
//! and each window starts at the batch's newest stored minute less `overlap_minutes`
//! ([`iem::Coverage`]): a poll asks again only from where the data stopped, and a day that
//! arrives late is fetched when it is there. asos1min.py refuses a request naming an id it
//! does not know (the whole batch fails, saying which); ids are sent without the K of
//! contiguous-US stations, as IEM names them. As an archive, a unit is one station's run
//! of `archive_days` UTC days. The source and the archive are those of [`iem::Feed`],
//! shared with `iem_asos`.

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
pub const NAME: &str = "iem_onemin";

/// `[sources.iem_onemin]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IemOneminConfig {
    /// `enabled` (default true): false keeps the table but stops the feed.
    pub enabled: bool,
    /// `base_url` (default `https://mesonet.agron.iastate.edu`).
    pub base_url: String,
    /// `interval_secs` (default 600): the data arrive in daily lumps, so polling more
    /// often finds nothing more.
    #[serde(rename = "interval_secs", deserialize_with = "secs")]
    pub interval: Duration,
    /// `stations` (default: the catalog's US stations): ICAO ids of ASOS stations.
    pub stations: Vec<String>,
    /// `batch_size` (default 5): stations per request. A day of one station is 1,440
    /// rows; a first poll of 5 stations over 2 days about 14,400 (under 1 MB).
    pub batch_size: usize,
    /// `lookback_hours` (default 48): how far back the first poll reaches, and the most a
    /// later one catches up; more than IEM's delay of about a day.
    pub lookback_hours: f64,
    /// `overlap_minutes` (default 60): each window starts this long before the newest
    /// minute already stored for its stations.
    pub overlap_minutes: f64,
    /// `timeout_secs` (default 120): one request's limit, connect to last byte.
    #[serde(rename = "timeout_secs", deserialize_with = "secs")]
    pub timeout: Duration,
    /// `archive_days` (default 7): UTC days per backfill request of one station (about
    /// 10,000 rows).
    pub archive_days: u32,
}

impl Default for IemOneminConfig {
    fn default() -> Self {
        IemOneminConfig {
            enabled: true,
            base_url: iem::IEM_BASE_URL.to_string(),
            interval: Duration::from_secs(600),
            stations: iem::us_catalog_stations(),
            batch_size: 5,
            lookback_hours: 48.0,
            overlap_minutes: 60.0,
            timeout: Duration::from_secs(120),
            archive_days: 7,
        }
    }
}

impl IemOneminConfig {
    /// Upper-cases the station ids and checks every value; the message says which.
    pub fn validated(mut self) -> Result<Self, String> {
        self.stations = self.settings().validated()?.stations;
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

/// The IEM one-minute feed: an [`iem::Feed`] of the `asos1min.py` service.
pub type IemOnemin = iem::Feed<Onemin>;

/// The `asos1min.py` service, as the kind of an [`iem::Feed`].
#[derive(Debug)]
pub struct Onemin;

impl iem::Kind for Onemin {
    const NAME: &'static str = NAME;
}

impl IemOnemin {
    /// The feed for a validated `cfg`, on the system clock.
    pub fn new(cfg: IemOneminConfig, client: Arc<HttpClient>) -> Result<Self, FeedError> {
        Self::with_clock(cfg, client, Arc::new(SystemClock))
    }

    /// The feed with windows taken from `clock` (tests replay a past day).
    pub fn with_clock(cfg: IemOneminConfig, client: Arc<HttpClient>, clock: Arc<dyn Clock>) -> Result<Self, FeedError> {
        let params = [
            ("vars", "tmpf"),
            ("sample", "1min"),
            ("what", "download"),
            ("delim", "comma"),
            ("tz", "UTC"),
            ("gis", "no"),
        ]
        .map(|(k, v)| (k, v.to_string()))
        .to_vec();
        let service =
            Service::new("cgi-bin/request/asos1min.py", params, Format::Onemin, cfg.settings(), client, clock)?;
        Ok(iem::Feed::of(service))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn the_url_names_iem_ids_tmpf_and_the_utc_window() {
        let client = Arc::new(HttpClient::new(Default::default()).unwrap());
        let feed = IemOnemin::new(IemOneminConfig::default().validated().unwrap(), client).unwrap();
        let t = |d, h| Utc.with_ymd_and_hms(2024, 3, d, h, 0, 0).unwrap();
        assert_eq!(
            feed.url(&["KCVG".into(), "KMDW".into()], t(1, 0), t(2, 0)).as_str(),
            "https://mesonet.agron.iastate.edu/cgi-bin/request/asos1min.py?station=CVG&station=MDW&vars=tmpf&sample=1min&what=download&delim=comma&tz=UTC&gis=no&sts=2024-03-01T00%3A00Z&ets=2024-03-02T00%3A00Z"
        );
    }

    #[test]
    fn a_lookback_shorter_than_the_interval_is_refused() {
        let cfg = IemOneminConfig { lookback_hours: 0.1, ..IemOneminConfig::default() };
        assert!(cfg.validated().unwrap_err().contains("reaches back less than one interval"));
    }
}
