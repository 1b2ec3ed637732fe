//! What the fuzz targets share: the decoders, an input-chosen clock and hints, and the
//! promises every decoded output must keep beyond "no panic".
//!
//! # Why the decoders are compiled here from `src/`, not through the `wxlake` crate
//!
//! A fuzz build instruments every crate it compiles. Depending on `wxlake` means
//! instrumenting DataFusion: that build took about 50 minutes on CI's two cores, so the
//! fuzz step could never run there. The decoders do not need DataFusion: they are pure
//! (bytes in, records and per-line errors out), and `src/decode` is kept self-contained
//! for this reason: it may use only itself, `crate::units` and `crate::models`, and the
//! crates listed in this crate's Cargo.toml (chrono, chrono-tz, serde, serde_json, csv,
//! thiserror, memchr, compact_str, bytes, arrow, parquet). The modules below are the
//! very files wxlake ships, included by path, so what is fuzzed is what runs in
//! production; a decoder that starts to reach outside those modules breaks this build,
//! which is the check that keeps `src/decode` self-contained.

#[path = "../../../src/decode/mod.rs"]
pub mod decode;
#[path = "../../../src/models.rs"]
pub mod models;
#[path = "../../../src/units.rs"]
pub mod units;

use std::hash::Hasher as _;

use chrono::{DateTime, TimeZone, Utc};

use decode::types::{DailyReport, Decoded, ForecastRow, LineError, Metar, NwsHourlyForecast, OneMinute};

/// A cheap, stable hash of the input (FNV-1a), from which the clock and the hints are
/// chosen: the same input always replays with the same ones, whatever the day.
fn hash(data: &[u8]) -> u64 {
    let mut h = fnv::FnvHasher::default();
    h.write(data);
    h.finish()
}

/// "Now" for decoders that date reports without a year: edges where dating goes wrong
/// (leap day, month and year ends, a non-leap century, a DST change) and an ordinary day
/// matching the real fixtures.
const CLOCKS: [(i32, u32, u32, u32, u32, u32); 8] = [
    (2024, 2, 29, 23, 59, 59),
    (2024, 3, 1, 0, 0, 30),
    (2025, 12, 31, 23, 59, 59),
    (2026, 1, 1, 0, 0, 0),
    (2026, 4, 30, 23, 30, 0),
    (2026, 3, 8, 7, 0, 0),
    (2026, 9, 24, 6, 31, 0),
    (2100, 2, 28, 23, 0, 0),
];

/// The clock for this input.
pub fn clock(data: &[u8]) -> DateTime<Utc> {
    let (y, mo, d, h, mi, s) = CLOCKS[(hash(data) % CLOCKS.len() as u64) as usize];
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).single().expect("a valid clock")
}

/// `month=YYYY-MM` hints as the ingest endpoint parses them (any unsigned year, month
/// 1–12): ordinary months, leap February, and years chrono cannot represent.
const MONTHS: [(i32, u32); 10] = [
    (2024, 2),
    (2025, 12),
    (2026, 1),
    (2026, 9),
    (2100, 2),
    (0, 1),
    (9999, 12),
    (262_143, 12),
    (262_144, 1),
    (i32::MAX, 12),
];

/// The month hint for this input.
pub fn month_hint(data: &[u8]) -> (i32, u32) {
    MONTHS[((hash(data) >> 8) % MONTHS.len() as u64) as usize]
}

/// Asserts the promises of `decode::types` for every output: errors name a line from 1
/// and a short reason without raw control characters (reasons quote and clip what they
/// show), and every record keeps its own promises.
pub fn check<T>(d: &Decoded<T>, record: impl Fn(&T)) {
    check_from(d, 1, record);
}

/// [`check`] for a decoder whose errors may number from `first_line`: Open-Meteo reports
/// what concerns the whole response (an unusable model series) at line 0, documented and
/// tested in `decode::open_meteo`.
pub fn check_from<T>(d: &Decoded<T>, first_line: usize, record: impl Fn(&T)) {
    check_errors(&d.errors, first_line);
    d.records.iter().for_each(record);
}

/// Every rejected line: numbered from `first_line`, a non-empty reason, clipped and escaped.
pub fn check_errors(errors: &[LineError], first_line: usize) {
    for e in errors {
        assert!(e.line >= first_line, "line numbers start at {first_line}: {e:?}");
        assert!(!e.reason.is_empty(), "an error says why: {e:?}");
        assert!(e.reason.len() <= 1024, "reasons are clipped, got {} bytes: {e:?}", e.reason.len());
        assert!(!e.reason.chars().any(char::is_control), "reasons escape control characters: {e:?}");
    }
}

fn finite(name: &str, v: Option<f64>) {
    if let Some(v) = v {
        assert!(v.is_finite(), "{name} = {v}: decoders never produce a non-finite number");
    }
}

/// A METAR: every number finite.
pub fn metar(m: &Metar) {
    for (name, v) in [
        ("wind_speed_kt", m.wind_speed_kt),
        ("wind_gust_kt", m.wind_gust_kt),
        ("visibility_sm", m.visibility_sm),
        ("tgroup_temp_c", m.tgroup_temp_c),
        ("tgroup_dew_c", m.tgroup_dew_c),
        ("altimeter_hpa", m.altimeter_hpa),
        ("sea_level_pressure_hpa", m.sea_level_pressure_hpa),
        ("six_hour_max_c", m.six_hour_max_c),
        ("six_hour_min_c", m.six_hour_min_c),
        ("day_max_c", m.day_max_c),
        ("day_min_c", m.day_min_c),
        ("precip_hour_in", m.precip_hour_in),
        ("precip_6h_in", m.precip_6h_in),
        ("precip_24h_in", m.precip_24h_in),
    ] {
        finite(name, v);
    }
    assert!(!m.station.is_empty(), "a METAR names its station: {m:?}");
}

/// A one-minute reading: finite temperature.
pub fn one_minute(r: &OneMinute) {
    finite("temp_f", r.temp_f);
}

/// A CLI or DSM report: finite precipitation.
pub fn daily_report(r: &DailyReport) {
    finite("precip_in", r.precip_in);
    finite("precip_mtd_in", r.precip_mtd_in);
}

/// A forecast row: a known model, a location, valid after run, every number finite
/// (`OptF64`'s NaN means none, so a decoder must never store a NaN nor an infinity), and
/// all three temperature units present whenever one is (spec 2.5).
pub fn forecast_row(r: &ForecastRow) {
    assert!(decode::forecast_rows::is_model(r.model), "unknown model in a decoded row: {r:?}");
    assert!(!r.location_name.trim().is_empty(), "a decoded row has a location: {r:?}");
    assert!(r.valid_time >= r.run_time, "valid_time before run_time: {r:?}");
    for v in r.floats() {
        finite("forecast value", v.get());
    }
    let temps = [r.temperature_k, r.temperature_f, r.temperature_c].map(|t| t.is_some());
    assert!(temps == [true; 3] || temps == [false; 3], "temperatures completed in all three units: {r:?}");
}

/// An NWS hourly forecast: finite temperatures, periods that end after they start.
pub fn nws_hourly(f: &NwsHourlyForecast) {
    for p in &f.periods {
        assert!(p.temperature_f.is_finite(), "temperature_f {}: {p:?}", p.temperature_f);
        assert!(p.end_time >= p.start_time, "period ends before it starts: {p:?}");
    }
}
