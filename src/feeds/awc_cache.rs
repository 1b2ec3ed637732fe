//! Every station's latest METAR/SPECI at once, from aviationweather.gov's bulk cache file
//! `GET {base}/data/cache/metars.cache.csv.gz`: gzip of the data server's status lines
//! (`No errors`, ..., `4721 results`), then a CSV with `raw_text`, `station_id`,
//! `observation_time`, ... `metar_type` columns, one row per station of the world.
//!
//! AWC rewrites the file about once a minute; the polls are conditional (ETag /
//! If-Modified-Since), so an unchanged file costs a 304. A changed one is gunzipped, and
//! only its rows that matter go on, as one CSV (header and those rows) in
//! [`Format::Metar`], which the METAR decoder reads like the cache file itself:
//!
//! - **Stations.** By default only the configured `stations` (the catalog): the hot
//!   state, the stream and the daily extremes serve catalog stations only, and other
//!   stations' reports would fill the lake with rows nothing reads (the decoder stores an
//!   unknown station with null local dates). `all_stations = true` keeps every station
//!   of the world in the lake, for operators who query them by SQL.
//! - **Rows already handed on.** Most stations' rows are the same from one file to the
//!   next; the rows of the last stored file are remembered (by hash) and skipped, so a
//!   poll logs and applies only new reports. The lake's natural keys would drop the
//!   repeats anyway; this keeps them out of the WAL. A failed store forgets nothing.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;
use serde::Deserialize;
use url::Url;

use super::http::{Fetched, HttpClient};
use super::seconds::secs;
use super::sink::FeedSink;
use super::source::{FeedError, PollReport, Source};
use crate::catalog::Catalog;
use crate::decode::metar::is_station_id;
use crate::ingest::{Format, IngestOptions};

/// The name of its `[sources.NAME]` table.
pub const NAME: &str = "awc_cache";

/// The cache file under `base_url`.
pub const CACHE_PATH: &str = "data/cache/metars.cache.csv.gz";

/// The most a gunzipped cache file may hold: the real one is a few megabytes; anything
/// far larger is not that file (or a decompression bomb).
pub const MAX_CSV_BYTES: usize = 128 * 1024 * 1024;

/// `[sources.awc_cache]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AwcCacheConfig {
    /// `enabled` (default true): false keeps the table but stops the feed.
    pub enabled: bool,
    /// `base_url` (default `https://aviationweather.gov`).
    pub base_url: String,
    /// `interval_secs` (default 60): AWC rewrites the file about once a minute and asks
    /// for nothing to be polled more often; unchanged files answer 304.
    #[serde(rename = "interval_secs", deserialize_with = "secs")]
    pub interval: Duration,
    /// `stations` (default: every station of the catalog): ICAO ids whose rows are kept.
    pub stations: Vec<String>,
    /// `all_stations` (default false): keep every station of the file (the lake only:
    /// the hot state and the stream cover catalog stations), ignoring `stations`.
    pub all_stations: bool,
    /// `timeout_secs` (default 60): one request's limit, connect to last byte.
    #[serde(rename = "timeout_secs", deserialize_with = "secs")]
    pub timeout: Duration,
}

impl Default for AwcCacheConfig {
    fn default() -> Self {
        AwcCacheConfig {
            enabled: true,
            base_url: "https://aviationweather.gov".to_string(),
            interval: Duration::from_secs(60),
            stations: Catalog::global().all().iter().map(|s| s.code.clone()).collect(),
            all_stations: false,
            timeout: Duration::from_secs(60),
        }
    }
}

impl AwcCacheConfig {
    /// Upper-cases the station ids and checks every value; the message says which.
    pub fn validated(mut self) -> Result<Self, String> {
        cache_url(&self.base_url)?;
        for s in &mut self.stations {
            *s = s.trim().to_ascii_uppercase();
            if !is_station_id(s) {
                return Err(format!("station {s:?} is not a 4-character ICAO id"));
            }
        }
        if self.stations.is_empty() && !self.all_stations {
            return Err("stations is empty (set all_stations = true for every station)".to_string());
        }
        if self.interval.is_zero() || self.timeout.is_zero() {
            return Err("interval_secs and timeout_secs must be positive".to_string());
        }
        Ok(self)
    }
}

/// `{base_url}/data/cache/metars.cache.csv.gz`.
fn cache_url(base_url: &str) -> Result<Url, String> {
    let mut base = Url::parse(base_url).map_err(|e| format!("base_url {base_url:?}: {e}"))?;
    if !base.path().ends_with('/') {
        base.set_path(&format!("{}/", base.path()));
    }
    base.join(CACHE_PATH).map_err(|e| format!("base_url {base_url:?}: {e}"))
}

/// The AWC cache-file feed.
#[derive(Debug)]
pub struct AwcCache {
    cfg: AwcCacheConfig,
    client: Arc<HttpClient>,
    url: Url,
    /// The kept stations (None: all).
    wanted: Option<HashSet<String>>,
    /// Hashes of the rows of the last file stored.
    last_rows: Mutex<HashSet<u64>>,
}

/// A cache file's rows that go on.
#[derive(Debug, PartialEq)]
pub struct Selected {
    /// The header and the new rows of kept stations, as CSV.
    pub csv: String,
    /// Rows of the file that are of kept stations (new or not).
    pub kept: usize,
    /// New rows in `csv`.
    pub new: usize,
    /// Hashes of every kept row, to skip next time.
    pub hashes: HashSet<u64>,
}

impl AwcCache {
    /// The feed for a validated `cfg` (see [`AwcCacheConfig::validated`]).
    pub fn new(cfg: AwcCacheConfig, client: Arc<HttpClient>) -> Result<Self, FeedError> {
        let url = cache_url(&cfg.base_url).map_err(|reason| FeedError::Malformed {
            url: cfg.base_url.clone(),
            reason,
            source: None,
        })?;
        let wanted = (!cfg.all_stations).then(|| cfg.stations.iter().cloned().collect());
        Ok(AwcCache { cfg, client, url, wanted, last_rows: Mutex::new(HashSet::new()) })
    }

    /// The cache file's URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Picks a file's rows to hand on: kept stations, not in the last stored file.
    pub fn select(&self, text: &str) -> Result<Selected, String> {
        let last = self.last_rows.lock();
        select_rows(text, self.wanted.as_ref(), &last)
    }

    async fn fetch(&self, sink: &dyn FeedSink, report: &mut PollReport) -> Result<(), FeedError> {
        let body = match self.client.get(&self.url, self.cfg.timeout).await? {
            Fetched::NotModified => {
                report.not_modified += 1;
                return Ok(());
            }
            Fetched::New(body) => body,
        };
        report.bytes += body.bytes.len();
        let malformed = |reason: String| FeedError::Malformed { url: self.url.to_string(), reason, source: None };
        let text = gunzip(&body.bytes).map_err(malformed)?;
        let selected = self.select(&text).map_err(malformed)?;
        if selected.new > 0 {
            let stored =
                sink.ingest(Format::Metar, IngestOptions::default(), Bytes::from(selected.csv.into_bytes())).await?;
            report.add_stored(stored);
        } else {
            report.empty += 1;
        }
        *self.last_rows.lock() = selected.hashes;
        self.client.remember(&self.url, body.validators);
        Ok(())
    }
}

#[async_trait]
impl Source for AwcCache {
    fn name(&self) -> &str {
        NAME
    }

    fn observed_stations(&self) -> Vec<String> {
        match &self.wanted {
            Some(wanted) => wanted.iter().cloned().collect(),
            None => crate::catalog::Catalog::global().all().iter().map(|s| s.code.clone()).collect(),
        }
    }

    fn interval(&self) -> Duration {
        self.cfg.interval
    }

    async fn poll(&self, sink: &dyn FeedSink) -> PollReport {
        let mut report = PollReport { requests: 1, ..PollReport::default() };
        if let Err(e) = self.fetch(sink, &mut report).await {
            report.errors.push(e);
        }
        report
    }
}

/// The file's text: gunzipped when it is gzip (a server may also have sent it decoded),
/// at most [`MAX_CSV_BYTES`], UTF-8.
pub fn gunzip(body: &[u8]) -> Result<String, String> {
    let mut out = Vec::new();
    if body.starts_with(&[0x1f, 0x8b]) {
        let mut z = flate2::read::MultiGzDecoder::new(body).take(MAX_CSV_BYTES as u64 + 1);
        z.read_to_end(&mut out).map_err(|e| format!("bad gzip data: {e}"))?;
        if out.len() > MAX_CSV_BYTES {
            return Err(format!("gunzipped file larger than {MAX_CSV_BYTES} bytes"));
        }
    } else {
        out = body.to_vec();
    }
    String::from_utf8(out).map_err(|e| format!("not UTF-8 text: {e}"))
}

/// The header and the new rows of `wanted` stations (None: all) of a cache file, skipping
/// the status lines and rows whose hash is in `last`. A file without a `raw_text` header
/// is not the cache file (an error page, a changed format).
pub fn select_rows(text: &str, wanted: Option<&HashSet<String>>, last: &HashSet<u64>) -> Result<Selected, String> {
    let hasher = foldhash::fast::FixedState::with_seed(0x5eed);
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty());
    let header = lines
        .by_ref()
        .find(|l| l.split(',').any(|c| c.trim().eq_ignore_ascii_case("raw_text")))
        .ok_or("expected the cache CSV header (raw_text, station_id, observation_time, ...); found none")?;
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let text_col = names.iter().position(|n| n.eq_ignore_ascii_case("raw_text")).unwrap_or(0);
    let station_col = names.iter().position(|n| n.eq_ignore_ascii_case("station_id"));
    let mut out = Selected { csv: format!("{header}\n"), kept: 0, new: 0, hashes: HashSet::new() };
    for line in lines {
        if let Some(w) = wanted {
            let station = station_col
                .and_then(|c| field(line, c))
                .filter(|s| !s.is_empty())
                .or_else(|| field(line, text_col).and_then(report_station));
            if !station.is_some_and(|s| w.contains(s)) {
                continue;
            }
        }
        out.kept += 1;
        let h = hasher.hash_one(line);
        out.hashes.insert(h);
        if !last.contains(&h) {
            out.new += 1;
            out.csv.push_str(line);
            out.csv.push('\n');
        }
    }
    Ok(out)
}

/// The `i`th comma-separated field of a line, quotes removed (the cache quotes fields with
/// commas; no field here needs `""` unescaping to compare a station id).
fn field(line: &str, i: usize) -> Option<&str> {
    let mut rest = line;
    for k in 0.. {
        let (value, after) = if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"')?;
            let after = &q[end + 1..];
            (&q[..end], after.find(',').map(|c| &after[c + 1..]))
        } else {
            match rest.find(',') {
                Some(c) => (&rest[..c], Some(&rest[c + 1..])),
                None => (rest, None),
            }
        };
        if k == i {
            return Some(value.trim());
        }
        rest = after?;
    }
    None
}

/// The station of a report text (`METAR KNYC 250551Z ...` or `KNYC 250551Z ...`).
fn report_station(raw: &str) -> Option<&str> {
    raw.split_whitespace().find(|t| !matches!(*t, "METAR" | "SPECI" | "COR")).filter(|t| is_station_id(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "raw_text,station_id,observation_time,latitude,longitude,temp_c,dewpoint_c,metar_type";

    fn file(rows: &[&str]) -> String {
        format!(
            "No errors\nNo warnings\n9 ms\ndata source=metars\n{} results\n{HEADER}\n{}\n",
            rows.len(),
            rows.join("\n")
        )
    }

    #[test]
    fn rows_of_kept_stations_go_on_once() {
        let rows = [
            "KNYC 250551Z AUTO VRB06G18KT 10SM CLR 14/04 A3023,KNYC,2026-09-25T05:51:00Z,40.78,-73.97,13.9,3.9,METAR",
            "\"METAR EGLL 250550Z 24006KT CAVOK 12/08 Q1021\",EGLL,2026-09-25T05:50:00Z,51.48,-0.46,12,8,METAR",
            "\"SPECI KMDW 250553Z 12004KT, 10SM\",,2026-09-25T05:53:00Z,41.78,-87.75,17,13,SPECI",
        ];
        let wanted: HashSet<String> = ["KNYC".to_string(), "KMDW".to_string()].into();
        let s = select_rows(&file(&rows), Some(&wanted), &HashSet::new()).unwrap();
        assert_eq!((s.kept, s.new), (2, 2));
        assert_eq!(
            s.csv,
            format!("{HEADER}\n{}\n{}\n", rows[0], rows[2]),
            "the station from raw_text when station_id is empty"
        );
        let again = select_rows(&file(&rows), Some(&wanted), &s.hashes).unwrap();
        assert_eq!((again.kept, again.new, again.csv), (2, 0, format!("{HEADER}\n")));
        let all = select_rows(&file(&rows), None, &s.hashes).unwrap();
        assert_eq!((all.kept, all.new), (3, 1));
        let e = select_rows("<p>Service unavailable</p>", None, &HashSet::new()).unwrap_err();
        assert!(e.contains("expected the cache CSV header"), "{e}");
    }

    #[test]
    fn gzip_is_undone_and_plain_text_passes() {
        use std::io::Write;
        let text = file(&["KNYC 250551Z AUTO 10SM CLR 14/04 A3023,KNYC,2026-09-25T05:51:00Z,,,,,METAR"]);
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(text.as_bytes()).unwrap();
        let gz = z.finish().unwrap();
        assert_eq!(gunzip(&gz).unwrap(), text);
        assert_eq!(gunzip(text.as_bytes()).unwrap(), text);
        assert!(gunzip(&gz[..gz.len() / 2]).unwrap_err().starts_with("bad gzip data"));
    }

    #[test]
    fn config_defaults_and_refusals() {
        let c = AwcCacheConfig::default().validated().unwrap();
        assert_eq!(
            cache_url(&c.base_url).unwrap().as_str(),
            "https://aviationweather.gov/data/cache/metars.cache.csv.gz"
        );
        assert_eq!(c.stations.len(), Catalog::global().len());
        let e = AwcCacheConfig { stations: vec![], ..AwcCacheConfig::default() }.validated().unwrap_err();
        assert!(e.contains("all_stations"), "{e}");
        assert!(AwcCacheConfig { stations: vec![], all_stations: true, ..AwcCacheConfig::default() }
            .validated()
            .is_ok());
        let e = AwcCacheConfig { stations: vec!["nyc".into()], ..AwcCacheConfig::default() }.validated().unwrap_err();
        assert!(e.contains("\"NYC\" is not a 4-character ICAO id"), "{e}");
    }
}
