//! MOS and NBM text bulletins (GFS MAV, NAM MET, GFS LAMP LAV, NBM NBS), one file per
//! product and cycle, each fetched once after the model's availability delay
//! (`models::AVAILABILITY`).
//!
//! The default source is NCEP's NOMADS, which keeps each cycle's whole bulletin (every
//! station) as a plain text file for about two days, under a path naming the day and
//! cycle (`mdl_gfsmav.t12z`, `lmp.t1230z.lavtxt.ascii`, `blend_nbstx.t13z`). The URL of
//! each product is a template (`{date}` = YYYYMMDD, `{hh}` = the cycle hour, `{mm}` = its
//! minute), so a mirror or another archive can stand in. Only the blocks of the configured
//! stations are handed to the sink, as [`Format::Mos`], whose decoder reads the run time
//! from each block's header.
//!
//! A (product, cycle) is done once a row of it is stored, or once its bulletin carried
//! none of the configured stations; stored runs are read back from the sink once per
//! product and process, so a restart does not fetch them again. The run a bulletin holds is
//! read from its station headers, never assumed from the URL: a source that answers with
//! another cycle (an archive's "latest" bulletin while the asked one is not issued yet, a
//! mirror behind) has not published the asked cycle, and nothing is stored.
//!
//! A cycle asked for and not stored (not published yet, or the request failed) is asked
//! again after a growing wait (the poll interval, doubling up to an hour), so a bulletin
//! that never appears costs about a dozen requests over the 12-hour lookback, not one per
//! poll. A cycle whose requests failed [`MAX_ATTEMPTS`] times is given up; one the source
//! answers with another cycle is asked for until it leaves the lookback. What the feed
//! remembers of cycles is a [`RunTracker`], forgotten as they leave the lookback.
//!
//! The NBS file holds every NBM text station (over 9,000 by MDL's NBM text card, about
//! 3 KB each in the real bulletins: tens of megabytes, above the client's default
//! `max_body_bytes`): it is not among the default products; enabling it needs
//! `[sources] max_body_bytes` raised (64 MiB is enough). It is asked for at the cycles
//! of NBS-MOS's run labels (01, 07, 13, 19Z), though the NBM issues NBS text at other
//! hours too (the real bulletins in data/real are of 12, 15, 17 and 21Z).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde::Deserialize;
use url::Url;

use super::http::{Fetched, HttpClient};
use super::run_tracker::RunTracker;
use super::seconds::secs;
use super::sink::FeedSink;
use super::source::{FeedError, PollReport, Source};
use crate::catalog::Catalog;
use crate::clock::{Clock, SystemClock};
use crate::decode::mos::{run_time_of_header, station_of_header};
use crate::ingest::{Format, IngestOptions};
use crate::models;

/// The source's name, as in `[sources.mos]`.
pub const NAME: &str = "mos";

/// Failed requests after which a cycle still missing is given up.
pub const MAX_ATTEMPTS: u32 = 6;

/// One bulletin product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Product {
    /// Its code in `products` and `models::Publisher::Bulletin`.
    pub code: &'static str,
    /// The spec 2.5 model its rows carry (its run labels, LAMP's HH30 included, are the
    /// model's `cycle_minute`).
    pub model: &'static str,
    /// The NOMADS file of one cycle.
    pub default_url: &'static str,
}

/// The NOMADS file of one cycle of the bulletin `code`.
fn nomads_url(code: &str) -> Option<&'static str> {
    Some(match code {
        "MAV" => "https://nomads.ncep.noaa.gov/pub/data/nccf/com/gfs_mos/prod/gfs_mos.{date}/mdl_gfsmav.t{hh}z",
        "MET" => "https://nomads.ncep.noaa.gov/pub/data/nccf/com/nam_mos/prod/nam_mos.{date}/mdl_nammet.t{hh}z",
        "LAV" => "https://nomads.ncep.noaa.gov/pub/data/nccf/com/lmp/prod/lmp.{date}/lmp.t{hh}{mm}z.lavtxt.ascii",
        "NBS" => "https://nomads.ncep.noaa.gov/pub/data/nccf/com/blend/prod/blend.{date}/{hh}/text/blend_nbstx.t{hh}z",
        _ => return None,
    })
}

/// Every product this feed knows: the bulletins of `models::AVAILABILITY` (which model
/// each code carries is said there only), each with its NOMADS file.
pub fn products() -> impl Iterator<Item = Product> {
    models::bulletins().filter_map(|(code, model)| Some(Product { code, model, default_url: nomads_url(code)? }))
}

fn product(code: &str) -> Option<Product> {
    products().find(|p| p.code == code)
}

/// `[sources.mos]`: MOS/NBM text bulletins.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MosConfig {
    /// `enabled` (default true).
    pub enabled: bool,
    /// `products` (default `["MAV", "MET", "LAV"]`; `NBS` also known, see the module docs).
    pub products: Vec<String>,
    /// `urls` (default: the NOMADS files): per product code, the URL template of one
    /// cycle's bulletin, with `{date}` (YYYYMMDD), `{hh}` (cycle hour) and `{mm}` (its
    /// minute, `30` for LAV, else `00`).
    pub urls: BTreeMap<String, String>,
    /// `stations` (default: every station of the catalog; the bulletins carry only the
    /// stations their model covers): ICAO ids whose blocks are kept.
    pub stations: Vec<String>,
    /// `interval_secs` (default 300): how often the feed looks for newly issued cycles.
    #[serde(rename = "interval_secs", deserialize_with = "secs")]
    pub interval: Duration,
    /// `lookback_hours` (default 12): older cycles are not fetched (NOMADS keeps two days).
    pub lookback_hours: f64,
    /// `timeout_secs` (default 120): one request's limit (a bulletin is megabytes).
    #[serde(rename = "timeout_secs", deserialize_with = "secs")]
    pub timeout: Duration,
}

impl Default for MosConfig {
    fn default() -> Self {
        MosConfig {
            enabled: true,
            products: ["MAV", "MET", "LAV"].map(String::from).to_vec(),
            urls: BTreeMap::new(),
            stations: Catalog::global().all().iter().map(|s| s.code.clone()).collect(),
            interval: Duration::from_secs(300),
            lookback_hours: 12.0,
            timeout: Duration::from_secs(120),
        }
    }
}

impl MosConfig {
    /// Upper-cases codes and stations and checks every value.
    pub fn validated(mut self) -> Result<Self, String> {
        let bad = |message: String| Err(message);
        let known = || products().map(|p| p.code).collect::<Vec<_>>().join(", ");
        for p in &mut self.products {
            *p = p.trim().to_ascii_uppercase();
            if product(p).is_none() {
                return bad(format!("product {p:?} is not known; known: {}", known()));
            }
        }
        if self.products.is_empty() {
            return bad("products is empty".to_string());
        }
        self.urls =
            std::mem::take(&mut self.urls).into_iter().map(|(k, v)| (k.trim().to_ascii_uppercase(), v)).collect();
        for (code, template) in &self.urls {
            if product(code).is_none() {
                return bad(format!("urls.{code}: not a product; known: {}", known()));
            }
            if !(template.contains("{date}") && template.contains("{hh}")) {
                return bad(format!("urls.{code} {template:?} must contain {{date}} and {{hh}}"));
            }
            if let Err(e) = Url::parse(&fill(template, "20260101", "00", "00")) {
                return bad(format!("urls.{code} {template:?}: {e}"));
            }
        }
        for s in &mut self.stations {
            *s = s.trim().to_ascii_uppercase();
            if !crate::decode::metar::is_station_id(s) {
                return bad(format!("station {s:?} is not a 4-character ICAO id"));
            }
        }
        if self.stations.is_empty() {
            return bad("stations is empty".to_string());
        }
        if !(self.lookback_hours.is_finite() && self.lookback_hours > 0.0) {
            return bad(format!("lookback_hours must be a positive number, found {}", self.lookback_hours));
        }
        if self.interval.is_zero() || self.timeout.is_zero() {
            return bad("interval_secs and timeout_secs must be positive".to_string());
        }
        Ok(self)
    }

    /// The URL template of `p`.
    fn template(&self, p: &Product) -> &str {
        self.urls.get(p.code).map_or(p.default_url, String::as_str)
    }
}

fn fill(template: &str, date: &str, hh: &str, mm: &str) -> String {
    template.replace("{date}", date).replace("{hh}", hh).replace("{mm}", mm)
}

/// The URL of `p`'s bulletin for the run labelled `run`.
fn bulletin_url(template: &str, run: DateTime<Utc>) -> Result<Url, FeedError> {
    let filled =
        fill(template, &run.format("%Y%m%d").to_string(), &run.format("%H").to_string(), &run.format("%M").to_string());
    Url::parse(&filled).map_err(|e| FeedError::Malformed {
        url: filled.clone(),
        reason: format!("bad URL: {e}"),
        source: Some(Box::new(e)),
    })
}

/// One product the feed fetches, with its model's spec and delay.
#[derive(Debug, Clone, Copy)]
struct Fetching {
    product: Product,
    spec: &'static models::ModelSpec,
    delay_min: u32,
}

/// The MOS/NBM bulletin feed.
pub struct Mos {
    cfg: MosConfig,
    client: Arc<HttpClient>,
    clock: Arc<dyn Clock>,
    products: Vec<Fetching>,
    stations: HashSet<String>,
    /// What is known of the runs, a bulletin stored whole.
    runs: Mutex<RunTracker<()>>,
}

impl std::fmt::Debug for Mos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mos").field("cfg", &self.cfg).finish_non_exhaustive()
    }
}

impl Mos {
    /// The feed for a validated `cfg`, on the system clock.
    pub fn new(cfg: MosConfig, client: Arc<HttpClient>) -> Result<Self, FeedError> {
        Self::with_clock(cfg, client, Arc::new(SystemClock))
    }

    /// The feed with an injected clock (tests, the demo).
    pub fn with_clock(cfg: MosConfig, client: Arc<HttpClient>, clock: Arc<dyn Clock>) -> Result<Self, FeedError> {
        let invalid = |reason: String| FeedError::Malformed { url: String::new(), reason, source: None };
        let products = cfg
            .products
            .iter()
            .map(|code| {
                let product = product(code).ok_or_else(|| invalid(format!("unknown product {code}")))?;
                let spec =
                    models::model(product.model).ok_or_else(|| invalid(format!("unknown model {}", product.model)))?;
                let a = models::availability(product.model)
                    .ok_or_else(|| invalid(format!("{} has no availability", product.model)))?;
                Ok(Fetching { product, spec, delay_min: a.delay_min() })
            })
            .collect::<Result<Vec<_>, FeedError>>()?;
        let stations = cfg.stations.iter().cloned().collect();
        let runs = Mutex::new(RunTracker::new(cfg.interval, MAX_ATTEMPTS));
        Ok(Mos { cfg, client, clock, products, stations, runs })
    }

    async fn poll_product(&self, f: &Fetching, sink: &dyn FeedSink, report: &mut PollReport) {
        let model = f.spec.name;
        let now = self.clock.now();
        let since = now - chrono::Duration::seconds((self.cfg.lookback_hours * 3600.0) as i64);
        if !self.runs.lock().is_seeded(model) {
            match sink.stored_runs(model, since).await {
                Ok(stored) => self.runs.lock().seed(model, stored.into_iter().map(|(_, run)| ((), run))),
                Err(e) => {
                    report.errors.push(e.into());
                    return;
                }
            }
        }
        let due: Vec<DateTime<Utc>> = {
            let mut runs = self.runs.lock();
            let published = models::published_runs(f.spec, f.delay_min, since, now);
            let due = runs.due_runs(model, since, published, now);
            due.into_iter().filter(|r| !runs.is_done(model, (), *r)).collect()
        };
        for run in due {
            report.requests += 1;
            let stored = match self.fetch(f, run, sink).await {
                Ok(Cycle::NotModified) => {
                    report.not_modified += 1;
                    false
                }
                Ok(Cycle::NotYet { bytes, found }) => {
                    report.empty += 1;
                    report.bytes += bytes;
                    tracing::debug!(
                        product = f.product.code,
                        %run,
                        found = ?found,
                        "the bulletin answered is not this cycle's: not published yet"
                    );
                    false
                }
                Ok(Cycle::NoneOfOurs { bytes }) => {
                    report.empty += 1;
                    report.bytes += bytes;
                    true
                }
                Ok(Cycle::Stored { bytes, stored }) => {
                    report.bytes += bytes;
                    report.add_stored(stored);
                    true
                }
                Err(e) => {
                    report.errors.push(e);
                    if self.runs.lock().failed(model, run) {
                        tracing::warn!(product = f.product.code, %run, "bulletin still missing; giving it up");
                    }
                    false
                }
            };
            let mut runs = self.runs.lock();
            if stored {
                runs.stored(model, (), run);
            }
            runs.asked(model, run, now, stored);
        }
    }

    async fn fetch(&self, f: &Fetching, run: DateTime<Utc>, sink: &dyn FeedSink) -> Result<Cycle, FeedError> {
        let url = bulletin_url(self.cfg.template(&f.product), run)?;
        let body = match self.client.get(&url, self.cfg.timeout).await? {
            Fetched::NotModified => return Ok(Cycle::NotModified),
            Fetched::New(body) => body,
        };
        let bytes = body.bytes.len();
        let text = std::str::from_utf8(&body.bytes).map_err(|e| FeedError::Malformed {
            url: url.to_string(),
            reason: format!("the bulletin is not text: {e}"),
            source: Some(Box::new(e)),
        })?;
        let found = bulletin_run(text);
        if found != Some(run) && text.contains("GUIDANCE") {
            // Not remembered: the next ask must fetch the body again.
            return Ok(Cycle::NotYet { bytes, found });
        }
        let Some(kept) = keep_stations(text, &self.stations) else {
            if !text.contains("GUIDANCE") {
                return Err(FeedError::Malformed {
                    url: url.to_string(),
                    reason: "no MOS/NBM station header".into(),
                    source: None,
                });
            }
            self.client.remember(&url, body.validators);
            return Ok(Cycle::NoneOfOurs { bytes });
        };
        let stored = sink.ingest(Format::Mos, IngestOptions::default(), Bytes::from(kept)).await?;
        self.client.remember(&url, body.validators);
        Ok(Cycle::Stored { bytes, stored })
    }
}

enum Cycle {
    NotModified,
    /// The answer holds another run (`found`, from its headers) than the one asked for.
    NotYet {
        bytes: usize,
        found: Option<DateTime<Utc>>,
    },
    NoneOfOurs {
        bytes: usize,
    },
    Stored {
        bytes: usize,
        stored: super::sink::Stored,
    },
}

#[async_trait]
impl Source for Mos {
    fn name(&self) -> &str {
        NAME
    }

    fn interval(&self) -> Duration {
        self.cfg.interval
    }

    /// Products one after the other: the bulletins share one host and are large.
    async fn poll(&self, sink: &dyn FeedSink) -> PollReport {
        let mut report = PollReport::default();
        for f in &self.products {
            self.poll_product(f, sink, &mut report).await;
        }
        report
    }
}

/// The run time of a bulletin: the one its first station header states (every block of
/// a bulletin is of one run).
fn bulletin_run(text: &str) -> Option<DateTime<Utc>> {
    text.lines().filter(|l| l.contains("GUIDANCE")).find_map(run_time_of_header)
}

/// The WMO preamble and the station blocks of `stations`, or None when no block is
/// theirs. A block runs from its header line (`KNYC   GFS MOS GUIDANCE ...`, in the real
/// bulletins often after a record separator, 0x1E) to the next header; the station is read
/// from the header as the decoder reads it.
fn keep_stations(text: &str, stations: &HashSet<String>) -> Option<String> {
    let mut out = String::new();
    let mut keeping = true;
    let mut kept = false;
    for line in text.lines() {
        if let Some(station) = line.contains("GUIDANCE").then(|| station_of_header(line)).flatten() {
            keeping = stations.contains(station);
            kept |= keeping;
        }
        if keeping {
            out.push_str(line);
            out.push('\n');
        }
    }
    kept.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::mos::decode_mos;
    use crate::models::Publisher;

    const MET: &str = include_str!("../../data/real/forecast/mos/METNC1.txt");

    #[test]
    fn only_the_configured_stations_blocks_are_kept() {
        let all = decode_mos(MET.as_bytes());
        let mut names: Vec<String> = all.records.iter().map(|r| r.location_name.to_string()).collect();
        names.dedup();
        assert!(names.len() >= 2, "{names:?}");
        let one: HashSet<String> = [names[1].clone()].into();
        let kept = keep_stations(MET, &one).unwrap();
        let d = decode_mos(kept.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records.len(), all.records.iter().filter(|r| r.location_name == names[1]).count());
        assert!(keep_stations(MET, &["ZZZZ".to_string()].into()).is_none());
    }

    #[test]
    fn blocks_after_a_record_separator_are_kept_too() {
        // The real LAMP and NBS bulletins put 0x1E before each station header.
        for (text, station) in [
            (include_str!("../../data/real/forecast/mos/LAVUSA.txt"), "PHHI"),
            (include_str!("../../data/real/forecast/mos/NBSUSA.txt"), "KALN"),
        ] {
            assert!(text.contains(&format!("\u{1e}{station}")), "{station}");
            let kept = keep_stations(text, &[station.to_string()].into()).unwrap_or_else(|| panic!("{station}"));
            let d = decode_mos(kept.as_bytes());
            assert!(!d.records.is_empty() && d.errors.is_empty(), "{station}: {:?}", d.errors);
            assert!(d.records.iter().all(|r| r.location_name == station), "{station}");
            let all = decode_mos(text.as_bytes());
            assert_eq!(d.records.len(), all.records.iter().filter(|r| r.location_name == station).count());
        }
    }

    #[test]
    fn a_bulletin_states_its_run_in_its_headers() {
        assert_eq!(bulletin_run(MET), Some("2017-08-12T12:00:00Z".parse().unwrap()));
        let lav = include_str!("../../data/real/forecast/mos/LAVUSA.txt");
        assert_eq!(bulletin_run(lav), Some("2020-07-10T12:30:00Z".parse().unwrap()));
        assert_eq!(bulletin_run("no header here\n"), None);
    }

    #[test]
    fn urls_fill_day_cycle_and_minute() {
        let run = "2026-09-24T12:30:00Z".parse().unwrap();
        assert_eq!(
            bulletin_url(product("LAV").unwrap().default_url, run).unwrap().as_str(),
            "https://nomads.ncep.noaa.gov/pub/data/nccf/com/lmp/prod/lmp.20260924/lmp.t1230z.lavtxt.ascii"
        );
        let run = "2026-09-24T13:00:00Z".parse().unwrap();
        assert!(bulletin_url(product("NBS").unwrap().default_url, run)
            .unwrap()
            .as_str()
            .ends_with("/blend.20260924/13/text/blend_nbstx.t13z"));
    }

    #[test]
    fn every_product_has_its_bulletin_availability() {
        assert_eq!(products().count(), models::bulletins().count(), "a NOMADS file for every bulletin");
        for p in products() {
            let a = models::availability(p.model).unwrap();
            assert_eq!(a.publisher, Publisher::Bulletin(p.code));
            assert_eq!(crate::decode::mos::Bulletin::for_model(p.model).and_then(|b| b.model()), Some(p.model));
        }
        let cfg = MosConfig::default().validated().unwrap();
        assert_eq!(cfg.products, ["MAV", "MET", "LAV"]);
        let err = |c: MosConfig| c.validated().unwrap_err().to_string();
        assert!(err(MosConfig { products: vec!["MEX".into()], ..MosConfig::default() }).contains("product \"MEX\""));
        let urls = [("MAV".to_string(), "http://h/mav".to_string())].into();
        assert!(err(MosConfig { urls, ..MosConfig::default() }).contains("must contain {date} and {hh}"));
    }
}
