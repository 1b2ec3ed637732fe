//! The demo data generator: a realistic lake's worth of inputs, with no network.
//!
//! `wxlake demo` and `serve --demo` need data that exercises everything the real feeds do
//! — T-group rounding, HF-METARs, 6- and 24-hour groups, sensor gaps, SPECIs, DSM and CLI
//! reports, 18 models on their real cadences, NWS forecast versions — so the generator
//! writes the *real formats* and the caller ingests them through the same decoders as
//! real data. Nothing downstream knows the data is synthetic.
//!
//! # How it works
//! - [`climate`]: the truth, a pure function of `(seed, station, time)`: seasonal normals,
//!   a diurnal cycle in local solar time, AR(1) day-to-day anomalies, cold fronts, rain.
//! - [`site`]: one station over a span: what its sensors measured minute by minute (whole
//!   °F, a few short gaps a week, rain-gauge tips). Every product derives from it.
//! - [`observations`]: METAR/SPECI/HF-METAR text in IEM's TSV container, one-minute CSV.
//! - [`reports`]: DSM and CLI products of US stations.
//! - [`forecasts`]: all runs of the models covering the station (CSV rows and MOS
//!   bulletins) and the NWS hourly forecast versions (api.weather.gov JSON).
//! - [`sim`]: the simulated public sources `serve --demo` polls with the real feeds: the
//!   same reports, products and forecasts continuing in real time, over HTTP in the real
//!   services' formats.
//!
//! Everything is deterministic: the same [`DemoConfig`] gives byte-identical inputs on any
//! machine and thread count, and the simulator continues exactly the series the batch
//! generator wrote. Stations are independent, so [`generate_all`] runs them in parallel.
//!
//! # What comes out, per station ([`StationInputs`])
//! | field | format | decoder | stations |
//! |---|---|---|---|
//! | `metar_tsv` | IEM ASOS TSV: routine METAR, SPECI (keyword kept, so the kind survives), HF-METAR (`MADISHF`) | `metar_container::decode_metar_input` | all |
//! | `onemin_csv` | `station,valid,tmpf`, `-999` in sensor gaps | `onemin::decode_onemin` | US |
//! | `cli` | CLI products with WMO headings: a final per LST day (issued ≈ 06:00 LST next day), an afternoon preliminary for today | `climate_report::decode_cli` | US |
//! | `dsm` | DSM messages under `CDUS27` headings, sent ≈ 00:05 LST, one text per month of their days | `dsm::decode_dsm_with_year` (the month's middle) | US |
//! | `forecast_csv` | spec 2.5 rows of the gridded models covering the station (`Station::has_forecasts_from`), every run and lead | `forecast_rows::decode_forecast_csv` | all |
//! | `mos` | MAV / MET / LAMP / NBS bulletins, on the real products' columns (`mos::forecast_hours`) | `mos::decode_mos` | US |
//! | `nws_hourly` | api.weather.gov hourly JSON, 6 versions a day, 156 h each | `nws_hourly::decode_nws_hourly` | US |
//!
//! Nothing is observed, issued or published after `DemoConfig::now` (a run appears
//! `latency_h` after its cycle). Sizes: a station-week is about 8 MB of text, nearly all
//! of it forecasts; 90 days × 70 stations is ≈ 7 GB, so consume [`generate_all`] as it
//! yields rather than collecting it.
//!
//! # Example
//! ```ignore
//! use rayon::prelude::*;
//! let cfg = DemoConfig::ending_yesterday(chrono::Utc::now(), 7);
//! generate_all(&cfg).for_each(|inputs| {
//!     // decode inputs.metar_tsv with decode::metar_container, inputs.cli with
//!     // decode::climate_report, ... and write the records to the lake.
//! });
//! ```

pub mod climate;
pub mod forecasts;
/// Generated inputs → decoders → lake (the ingest side's part of `wxlake demo`).
pub mod load;
pub mod noise;
pub mod observations;
pub mod reports;
pub mod sim;
pub mod site;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use rayon::prelude::*;

use crate::catalog::{Catalog, Station};
use crate::decode::onemin::encode_onemin_csv;
use crate::time::{day_window, standard_date, DayClock};
use climate::{minute_index, Climate};
use site::Site;

/// Seed used when the caller does not choose one.
pub const DEFAULT_SEED: u64 = 20_260_101;

/// Hours of truth kept past the data for forecasts (GFS/GEFS reach 384 h).
const FORECAST_REACH_H: i64 = 390;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoConfig {
    /// Last complete day (each station's Local Standard Time day). The generator also
    /// produces the following day ("today") up to `now`.
    pub end_date: NaiveDate,
    /// Number of complete days ending at `end_date`.
    pub days: u32,
    /// Station codes; empty means all 70 of the catalog.
    pub stations: Vec<String>,
    /// Everything random derives from this.
    pub seed: u64,
    /// Nothing is issued, observed or published after this instant.
    pub now: DateTime<Utc>,
    /// Model runs, MOS bulletins and NWS hourly forecasts (the bulk of the data).
    pub forecasts: bool,
    /// One-minute temperature files of US stations.
    pub onemin: bool,
}

impl DemoConfig {
    /// `days` complete days ending yesterday (UTC date of `now`), every station, default
    /// seed, forecasts and one-minute data on.
    pub fn ending_yesterday(now: DateTime<Utc>, days: u32) -> Self {
        let today = now.date_naive();
        DemoConfig {
            end_date: today.pred_opt().unwrap_or(today),
            days,
            stations: Vec::new(),
            seed: DEFAULT_SEED,
            now,
            forecasts: true,
            onemin: true,
        }
    }

    /// The catalog stations to generate, or the first unknown code.
    pub fn station_list(&self) -> Result<Vec<&'static Station>, String> {
        let catalog = Catalog::global();
        if self.stations.is_empty() {
            return Ok(catalog.all().iter().collect());
        }
        self.stations.iter().map(|c| catalog.lookup(c).ok_or_else(|| format!("unknown station '{c}'"))).collect()
    }
}

/// Everything generated for one station, in the real formats. Empty strings / vectors
/// where the station has no such product (international stations have no one-minute
/// data, CLI, DSM or NWS forecast).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StationInputs {
    pub station: String,
    /// METAR, SPECI and HF-METAR reports as an IEM ASOS TSV export.
    pub metar_tsv: String,
    /// One-minute temperatures (`station,valid,tmpf`, `-999` gaps), US stations only.
    pub onemin_csv: Option<String>,
    /// CLI products, one after another (finals, then today's preliminary).
    pub cli: String,
    /// DSM messages under WMO headings, one text per (year, month) of the days they report:
    /// a DSM's DD/MM has no year, so each month's file is read with its month
    /// (`ingest dsm --month`), as an archive of several months must be.
    pub dsm: Vec<((i32, u32), String)>,
    /// Gridded model rows, spec 2.5 columns, one header.
    pub forecast_csv: String,
    /// (model, bulletin text) for every GFS-MOS, NAM-MOS, LAV-MOS and NBS-MOS run.
    pub mos: Vec<(String, String)>,
    /// One api.weather.gov hourly forecast JSON document per version.
    pub nws_hourly: Vec<String>,
    /// The NWS point forecast's daily highs and lows (`daily-forecasts` CSV), US stations.
    pub daily_forecasts_csv: String,
}

/// The time span generated for one station.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Complete Local Standard Time days (CLI/DSM days).
    pub days: Vec<NaiveDate>,
    /// The partial day after them, when `now` has reached it.
    pub today: Option<NaiveDate>,
    /// First and last minute of observations (inclusive).
    pub obs_from: DateTime<Utc>,
    pub obs_to: DateTime<Utc>,
}

/// The span of `cfg` for `station`: its LST days, widened to cover the civil days too.
pub fn span(cfg: &DemoConfig, station: &Station) -> Span {
    let tz = station.timezone;
    let first = cfg.end_date - Duration::days(i64::from(cfg.days.max(1)) - 1);
    let std_start = day_window(tz, DayClock::Standard, first).start;
    let civil_start = day_window(tz, DayClock::Civil, first).start;
    let obs_from = std_start.min(civil_start);
    let after = cfg.end_date.succ_opt().unwrap_or(cfg.end_date);
    let limit = day_window(tz, DayClock::Standard, after).end - Duration::minutes(1);
    let obs_to = cfg.now.min(limit).max(obs_from);
    let days: Vec<NaiveDate> = (0..i64::from(cfg.days.max(1)))
        .map(|k| first + Duration::days(k))
        .filter(|&d| day_window(tz, DayClock::Standard, d).end <= cfg.now)
        .collect();
    let last = standard_date(tz, obs_to);
    let today = (day_window(tz, DayClock::Standard, last).end > obs_to).then_some(last);
    Span { days, today, obs_from, obs_to }
}

/// Generates every input of one station. Pure and deterministic: the same config and
/// code give the same bytes. An unknown code gives empty inputs.
pub fn generate_station(cfg: &DemoConfig, code: &str) -> StationInputs {
    let Some(station) = Catalog::global().lookup(code) else {
        return StationInputs { station: code.to_string(), ..Default::default() };
    };
    let sp = span(cfg, station);
    if cfg.now < sp.obs_from {
        return StationInputs { station: station.code.clone(), ..Default::default() };
    }
    // A day of history before the span, so the first reports' 6/24-hour groups and
    // precipitation totals are complete.
    let history = sp.obs_from - Duration::hours(25);
    let reach = sp.obs_to + Duration::hours(FORECAST_REACH_H);
    let site = Site::new(station, cfg.seed, history, sp.obs_to, reach);
    let (from_m, to_m) = (minute_index(sp.obs_from), minute_index(sp.obs_to));

    let reports = observations::reports(&site, from_m - 1, to_m);
    let metar_tsv = observations::iem_tsv(&station.code, &reports, sp.obs_from, sp.obs_to);
    let mut out = StationInputs { station: station.code.clone(), metar_tsv, ..Default::default() };
    if station.is_us() {
        if cfg.onemin {
            out.onemin_csv = Some(encode_onemin_csv(&observations::onemin_rows(&site, from_m, to_m)));
        }
        let (cli, dsm) = reports::daily_reports(&site, &sp.days, sp.today, cfg.now);
        out.cli = reports::cli_text(&site, &cli);
        out.dsm = reports::dsm_texts_by_month(&dsm);
    }
    if cfg.forecasts {
        let runs_from = sp.obs_from - Duration::hours(24);
        let (csv, mos) = forecasts::model_forecasts(&site, runs_from, sp.obs_to, cfg.now);
        out.forecast_csv = csv;
        out.mos = mos;
        if station.is_us() {
            out.nws_hourly = forecasts::nws_hourly(&site, runs_from, sp.obs_to, cfg.now);
            out.daily_forecasts_csv = forecasts::daily_forecasts(&site, sp.obs_from, sp.obs_to, cfg.now);
        }
    }
    out
}

/// Every station of `cfg`, generated in parallel (one rayon task per station). Unknown
/// codes are skipped; check [`DemoConfig::station_list`] first to report them. Consume
/// the iterator as it goes: at 90 days × 70 stations the forecasts alone run to gigabytes.
pub fn generate_all(cfg: &DemoConfig) -> impl IndexedParallelIterator<Item = StationInputs> + '_ {
    let codes: Vec<String> = match cfg.station_list() {
        Ok(list) => list.into_iter().map(|s| s.code.clone()).collect(),
        Err(_) => cfg.stations.iter().filter(|c| Catalog::global().lookup(c).is_some()).cloned().collect(),
    };
    codes.into_par_iter().map(move |code| generate_station(cfg, &code))
}

/// The true air temperature (°C) at `station` during the minute containing `t`.
pub fn truth_c(station: &Station, t: DateTime<Utc>, seed: u64) -> f64 {
    Climate::new(station, seed).truth_c(t)
}

/// What the station's sensor reported at `t` (whole °F), `None` during a sensor gap.
pub fn measured_f(station: &Station, t: DateTime<Utc>, seed: u64) -> Option<i32> {
    let c = Climate::new(station, seed);
    let m = minute_index(t);
    (!site::sensor_gap(c.key(), m)).then(|| site::measured_f(c.truth_c(t)))
}

#[cfg(test)]
mod tests;
