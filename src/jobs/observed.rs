//! The `observed_extremes` helper table: every station's high and low per trading day and
//! logic, computed by replaying the lake's rows through the live engine
//! ([`StationExtremes::replay`]), so the `daily_extremes` job and the live path share one
//! implementation of the rules (LST windows, probable ranges, 6/24-hour groups, DSM/CLI
//! finality, `wu` rule 3, -999 gaps, suspect temperatures).
//!
//! Columns (one row per station, date and logic that has any input):
//! `station_code, date, logic, units, high, low, high_f, low_f, high_c, low_c, high_time,
//! low_time, high_source, low_source, high_sources, low_sources, cli_high, cli_low, is_final, anomaly, day_complete,
//! high_valid_through, low_valid_through, observations, suspect, onemin, missing_minutes,
//! held, quality_ok, data_quality`.
//!
//! - `date` is the Local Standard Time date for `nws`, the civil date for `wu`.
//! - `high_sources`/`low_sources`: comma-separated, every source whose own extreme equals
//!   the day's value (`svc_high_sources` of the API); empty without a value.
//! - `cli_high`/`cli_low` (`nws` rows only, native units): the day's CLI values, the final
//!   CLI when there is one, else the latest issued; the accuracy jobs verify against them.
//! - `day_complete`: the day's window had ended when the job ran (`now`); a row of a day
//!   still in progress is provisional and the API recomputes it.
//! - Counts over the day's window: `observations` (METAR/SPECI/HF-METAR, suspect ones
//!   included), `suspect` (outside −60…60 °C), `onemin` (one-minute rows incl. -999),
//!   `missing_minutes` (-999 rows), `held` (`wu` rule-3 reports still unconfirmed; null where
//!   the rule does not apply). `data_quality` is the API's JSON object for the logic.
//! - `high_by_hour`/`low_by_hour`: the running high/low at each local hour 1:00…24:00 of the
//!   day's clock from the readings known by then, comma-separated, native units, empty
//!   before the first reading and for hours not reached at `now` (`extremes::by_hour`:
//!   what the same-day bracket odds learn from).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, Utc};
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use rayon::prelude::*;

use super::error::JobError;
use crate::catalog::{Catalog, Station};
use crate::decode::types::{DailyKind, DailyReport, Metar, OneMinute};
use crate::extremes::{
    hours_column, suspect_temperature, ByHour, DayExtremes, Logic, Source, StationExtremes, REPLAY_AFTER, REPLAY_BEFORE,
};
use crate::lake::window::{load_replay_window, Known};
use crate::units::{f_to_c, round1, Units};

/// One output row.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedDay {
    pub station_code: String,
    pub units: Units,
    pub extremes: DayExtremes,
    pub cli_high: Option<f64>,
    pub cli_low: Option<f64>,
    pub day_complete: bool,
    pub observations: i32,
    pub suspect: i32,
    pub onemin: i32,
    pub missing_minutes: i32,
    pub by_hour: ByHour,
}

/// The rows of `rows` (sorted by `time`) with `from <= time < to`.
pub(super) fn between<T>(
    rows: &[T],
    time: impl Fn(&T) -> DateTime<Utc>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> &[T] {
    let lo = rows.partition_point(|r| time(r) < from);
    let hi = rows.partition_point(|r| time(r) < to);
    &rows[lo..hi.max(lo)]
}

/// The rows of one station for trading days `from..=to` (both logics) from its stored
/// inputs, each with when it became known (the hours' values count it from then), the
/// readings sorted by time. Days without any input have no row.
pub fn station_days(
    station: &Station,
    metars: &[&Known<Metar>],
    onemin: &[&Known<OneMinute>],
    reports: &[&DailyReport],
    from: NaiveDate,
    to: NaiveDate,
    now: DateTime<Utc>,
) -> Vec<ObservedDay> {
    let (live, mut by_hour) = StationExtremes::replay_by_hour(
        station,
        metars.iter().map(|(m, known)| (m, *known)),
        onemin.iter().map(|(o, known)| (o, *known)),
        reports.iter().copied(),
        from,
        to,
        now,
    );
    let mut out = Vec::new();
    let mut date = from;
    while date <= to {
        for logic in Logic::ALL {
            let Some(x) = live.extremes(logic, date, now) else { continue };
            let (start, end) = (x.window_start, x.window_end);
            let obs = between(metars, |(m, _)| m.time, start, end);
            let mins = between(onemin, |(o, _)| o.time, start, end);
            let (cli_high, cli_low) =
                if logic == Logic::Nws { cli_values(reports, date, station.units) } else { (None, None) };
            out.push(ObservedDay {
                station_code: station.code.clone(),
                units: station.units,
                day_complete: x.window_end <= now,
                observations: obs.len() as i32,
                suspect: obs.iter().filter(|(m, _)| suspect_temperature(m).is_some()).count() as i32,
                onemin: mins.len() as i32,
                missing_minutes: mins.iter().filter(|(o, _)| o.temp_f.is_none()).count() as i32,
                cli_high,
                cli_low,
                by_hour: by_hour.remove(&(logic, date)).unwrap_or_default(),
                extremes: x,
            });
        }
        date += Duration::days(1);
    }
    out
}

/// The CLI's max and min for `date` in native units: the final CLI (the latest issued of
/// them), else the latest preliminary one. Values outside −60…60 °C are dropped as the
/// live engine drops them.
fn cli_values(reports: &[&DailyReport], date: NaiveDate, units: Units) -> (Option<f64>, Option<f64>) {
    let best = reports.iter().filter(|r| r.kind == DailyKind::Cli && r.date == date).max_by_key(|r| r.precedence());
    let native = |f: Option<i32>| {
        let f = f?;
        let c = f_to_c(f64::from(f));
        if crate::units::is_suspect_c(c) {
            return None;
        }
        Some(match units {
            Units::Fahrenheit => f64::from(f),
            Units::Celsius => round1(c),
        })
    };
    best.map_or((None, None), |r| (native(r.max_f), native(r.min_f)))
}

/// The UTC span of the rows a replay of trading days `from..=to` of any station reads:
/// every zone's window of `from` starts after (from - 1 day) 00:00 UTC (UTC+14 at most)
/// and every window of `to` ends before (to + 2 days) 00:00 UTC (UTC-12 at least), widened
/// by the engine's replay margins.
pub(super) fn replay_span(from: NaiveDate, to: NaiveDate) -> (DateTime<Utc>, DateTime<Utc>) {
    let start = (from - Duration::days(1)).and_time(NaiveTime::MIN).and_utc() - REPLAY_BEFORE;
    let end = (to + Duration::days(2)).and_time(NaiveTime::MIN).and_utc() + REPLAY_AFTER;
    (start, end)
}

/// One station's rows of a replay read, each with when it became known: observations and
/// one-minute readings by time, so a day's are found by bisection ([`between`]).
#[derive(Default)]
pub(super) struct StationRows<'a> {
    pub metars: Vec<&'a Known<Metar>>,
    pub onemin: Vec<&'a Known<OneMinute>>,
    pub reports: Vec<&'a Known<DailyReport>>,
}

/// The rows of a replay read ([`load_replay_window`]) by station, with the reports of
/// days `from..=to` only.
pub(super) fn by_station<'a>(
    metars: &'a [Known<Metar>],
    onemin: &'a [Known<OneMinute>],
    reports: &'a [Known<DailyReport>],
    from: NaiveDate,
    to: NaiveDate,
) -> HashMap<&'a str, StationRows<'a>> {
    let mut stations = Stations::default();
    for m in metars {
        stations.rows(&m.0.station).metars.push(m);
    }
    for o in onemin {
        stations.rows(&o.0.station).onemin.push(o);
    }
    for r in reports.iter().filter(|(r, _)| from <= r.date && r.date <= to) {
        stations.rows(&r.0.station).reports.push(r);
    }
    // Each station's readings by time (the read's order is its files'; each file is
    // sorted by station and time, so this merges a few sorted runs), stations at once.
    let mut out = stations.rows;
    out.par_iter_mut().for_each(|(_, rows)| {
        rows.metars.sort_by_key(|(m, _)| m.time);
        rows.onemin.sort_by_key(|(o, _)| o.time);
    });
    out.into_iter().collect()
}

/// Rows grouped by station as [`by_station`] reads them.
#[derive(Default)]
struct Stations<'a> {
    rows: Vec<(&'a str, StationRows<'a>)>,
    index: HashMap<&'a str, usize>,
    /// The station of the previous row: rows come in runs of one station (a file is sorted
    /// by station), so most rows need no lookup.
    last: usize,
}

impl<'a> Stations<'a> {
    fn rows(&mut self, code: &'a str) -> &mut StationRows<'a> {
        if self.rows.get(self.last).is_none_or(|(held, _)| *held != code) {
            let next = self.rows.len();
            self.last = *self.index.entry(code).or_insert(next);
            if self.last == next {
                self.rows.push((code, StationRows::default()));
            }
        }
        &mut self.rows[self.last].1
    }
}

/// The days `from..=to` of every station of `rows` the catalog knows, stations in code
/// order (stations replayed in parallel).
pub(super) fn days_of_stations(
    rows: HashMap<&str, StationRows<'_>>,
    from: NaiveDate,
    to: NaiveDate,
    now: DateTime<Utc>,
) -> Vec<ObservedDay> {
    let catalog = Catalog::global();
    let mut stations: Vec<_> = rows.into_iter().filter_map(|(code, v)| Some((catalog.get(code)?, v))).collect();
    stations.sort_by(|a, b| a.0.code.cmp(&b.0.code));
    stations
        .par_iter()
        .flat_map_iter(|(s, rows)| {
            let reports: Vec<&DailyReport> = rows.reports.iter().map(|(r, _)| r).collect();
            station_days(s, &rows.metars, &rows.onemin, &reports, from, to, now)
        })
        .collect()
}

/// Computes `observed_extremes` for trading days `from..=to` of every station from the
/// lake tables registered in `ctx` (`observations`, `onemin`, `reports`).
pub async fn observed_extremes(
    ctx: &SessionContext,
    from: NaiveDate,
    to: NaiveDate,
    now: DateTime<Utc>,
) -> Result<MemTable, JobError> {
    let (start, end) = replay_span(from, to);
    let started = std::time::Instant::now();
    let (metars, onemin, reports) = load_replay_window(ctx, start, end, None).await?;
    let read = started.elapsed();
    let started = std::time::Instant::now();
    let rows = days_of_stations(by_station(&metars, &onemin, &reports, from, to), from, to, now);
    let replayed = started.elapsed();
    let batch = to_batch(&rows)?;
    // Where the helper's time goes (benches/README.md, "daily_extremes at scale").
    tracing::debug!(
        observations = metars.len(),
        onemin = onemin.len(),
        reports = reports.len(),
        read_ms = read.as_millis() as u64,
        replay_ms = replayed.as_millis() as u64,
        batch_ms = (started.elapsed() - replayed).as_millis() as u64,
        "observed_extremes: read and replayed"
    );
    Ok(MemTable::try_new(batch.schema(), vec![vec![batch]])?)
}

/// The helper's schema.
pub fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    Arc::new(Schema::new(vec![
        f("station_code", DataType::Utf8, false),
        f("date", DataType::Date32, false),
        f("logic", DataType::Utf8, false),
        f("units", DataType::Utf8, false),
        f("high", DataType::Float64, true),
        f("low", DataType::Float64, true),
        f("high_f", DataType::Float64, true),
        f("low_f", DataType::Float64, true),
        f("high_c", DataType::Float64, true),
        f("low_c", DataType::Float64, true),
        f("high_time", ts(), true),
        f("low_time", ts(), true),
        f("high_source", DataType::Utf8, true),
        f("low_source", DataType::Utf8, true),
        f("high_sources", DataType::Utf8, false),
        f("low_sources", DataType::Utf8, false),
        f("cli_high", DataType::Float64, true),
        f("cli_low", DataType::Float64, true),
        f("is_final", DataType::Boolean, false),
        f("anomaly", DataType::Boolean, false),
        f("day_complete", DataType::Boolean, false),
        f("high_valid_through", ts(), true),
        f("low_valid_through", ts(), true),
        f("observations", DataType::Int32, false),
        f("suspect", DataType::Int32, false),
        f("onemin", DataType::Int32, false),
        f("missing_minutes", DataType::Int32, false),
        f("held", DataType::Int32, true),
        f("quality_ok", DataType::Boolean, false),
        f("data_quality", DataType::Utf8, false),
        f("high_by_hour", DataType::Utf8, false),
        f("low_by_hour", DataType::Utf8, false),
    ]))
}

/// Sources as the table stores them: comma-separated names.
pub fn source_list(sources: &[Source]) -> String {
    sources.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",")
}

pub(super) fn to_batch(rows: &[ObservedDay]) -> Result<RecordBatch, JobError> {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    let x = |f: fn(&DayExtremes) -> Option<f64>| Float64Array::from_iter(rows.iter().map(|r| f(&r.extremes)));
    let t = |f: fn(&DayExtremes) -> Option<DateTime<Utc>>| {
        TimestampMicrosecondArray::from_iter(rows.iter().map(|r| f(&r.extremes).map(|t| t.timestamp_micros())))
            .with_timezone("UTC")
    };
    let s = |f: fn(&DayExtremes) -> Option<&'static str>| StringArray::from_iter(rows.iter().map(|r| f(&r.extremes)));
    let b = |f: fn(&ObservedDay) -> bool| BooleanArray::from_iter(rows.iter().map(|r| Some(f(r))));
    let i = |f: fn(&ObservedDay) -> i32| Int32Array::from_iter_values(rows.iter().map(f));
    let quality = rows
        .iter()
        .map(|r| {
            serde_json::to_string(&r.extremes.data_quality)
                .map_err(|source| JobError::RustTable { column: "data_quality", source })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.station_code.as_str()))),
        Arc::new(Date32Array::from_iter_values(rows.iter().map(|r| (r.extremes.date - epoch).num_days() as i32))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.extremes.logic.as_str()))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.units.as_str()))),
        Arc::new(x(|e| e.high.map(|v| v.value))),
        Arc::new(x(|e| e.low.map(|v| v.value))),
        Arc::new(x(|e| e.high.map(|v| v.value_f))),
        Arc::new(x(|e| e.low.map(|v| v.value_f))),
        Arc::new(x(|e| e.high.map(|v| v.value_c))),
        Arc::new(x(|e| e.low.map(|v| v.value_c))),
        Arc::new(t(|e| e.high.map(|v| v.time))),
        Arc::new(t(|e| e.low.map(|v| v.time))),
        Arc::new(s(|e| e.high.map(|v| v.source.as_str()))),
        Arc::new(s(|e| e.low.map(|v| v.source.as_str()))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| source_list(&r.extremes.high_sources)))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| source_list(&r.extremes.low_sources)))),
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.cli_high))),
        Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.cli_low))),
        Arc::new(b(|r| r.extremes.is_final)),
        Arc::new(b(|r| r.extremes.anomaly)),
        Arc::new(b(|r| r.day_complete)),
        Arc::new(t(|e| e.high_valid_through_utc)),
        Arc::new(t(|e| e.low_valid_through_utc)),
        Arc::new(i(|r| r.observations)),
        Arc::new(i(|r| r.suspect)),
        Arc::new(i(|r| r.onemin)),
        Arc::new(i(|r| r.missing_minutes)),
        Arc::new(Int32Array::from_iter(rows.iter().map(|r| r.extremes.data_quality.held.map(|h| h as i32)))),
        Arc::new(b(|r| r.extremes.data_quality.ok)),
        Arc::new(StringArray::from(quality)),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| hours_column(&r.by_hour.high)))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| hours_column(&r.by_hour.low)))),
    ];
    Ok(RecordBatch::try_new(schema(), cols)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extremes::tests::{klnk, klnk_metars, klnk_sod};

    /// The job's Rust step on 57 real KLNK days (LCD file: METARs with 6/24-hour groups)
    /// against the official daily values of the same file: the same 56/57 highs and 57/57
    /// lows as the live engine (live/tests.rs explains the one miss, the file's last day).
    #[test]
    fn klnk_daily_extremes_match_the_official_values() {
        let records = klnk_metars();
        let metars: Vec<&Metar> = records.iter().collect();
        let sod = klnk_sod();
        let (from, to) = (sod[0].0, sod[sod.len() - 1].0);
        let now = DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z").unwrap().to_utc();
        // The file has no receipt times: each reading known when observed.
        let mut known: Vec<Known<Metar>> = metars.iter().map(|m| ((*m).clone(), m.time)).collect();
        known.sort_by_key(|(m, _)| m.time);
        let known: Vec<&Known<Metar>> = known.iter().collect();
        let days = station_days(&klnk(), &known, &[], &[], from, to, now);
        let nws: HashMap<NaiveDate, &ObservedDay> =
            days.iter().filter(|d| d.extremes.logic == Logic::Nws).map(|d| (d.extremes.date, d)).collect();
        let (mut hi, mut lo) = (0, 0);
        for (d, smax, smin) in &sod {
            let day = nws[d];
            assert!(day.day_complete, "{d}");
            // The file's last day ends at 19:36Z: 14 reports, under the 20 the accuracy
            // jobs require of a day without CLI (sql/accuracy_pairs.sql), so the miss
            // below would never verify a forecast. Every other day has at least 24.
            if *d == to {
                assert_eq!(day.observations, 14);
            } else {
                assert!(day.observations >= 24, "{d}: {}", day.observations);
            }
            hi += usize::from(day.extremes.high.map(|e| e.value) == Some(f64::from(*smax)));
            lo += usize::from(day.extremes.low.map(|e| e.value) == Some(f64::from(*smin)));
        }
        assert_eq!((hi, lo), (56, 57));
        // Both logics for every day, and the batch the job stores.
        assert_eq!(days.len(), 2 * sod.len());
        let batch = to_batch(&days).unwrap();
        assert_eq!(batch.num_rows(), days.len());
        assert_eq!(batch.schema(), schema());
    }

    fn report(kind: DailyKind, max_f: i32, is_final: bool, hour: u32) -> DailyReport {
        DailyReport {
            kind,
            station: "KNYC".into(),
            date: NaiveDate::from_ymd_opt(2026, 3, 7).unwrap(),
            max_f: Some(max_f),
            max_time_lst: None,
            min_f: Some(200),
            min_time_lst: None,
            precip_in: None,
            precip_trace: false,
            precip_mtd_in: None,
            precip_mtd_trace: false,
            is_final,
            valid_as_of_lst: None,
            issued_at: Some(NaiveDate::from_ymd_opt(2026, 3, 8).unwrap().and_hms_opt(hour, 0, 0).unwrap().and_utc()),
            correction: false,
            raw: String::new(),
        }
    }

    /// The verifying CLI: a final one beats a later preliminary one; DSMs never count; a
    /// suspect value (200 °F) is dropped as the live engine drops it.
    #[test]
    fn cli_values_prefer_the_final_report() {
        let d = NaiveDate::from_ymd_opt(2026, 3, 7).unwrap();
        let fin = report(DailyKind::Cli, 50, true, 11);
        let later_prelim = report(DailyKind::Cli, 52, false, 20);
        let dsm = report(DailyKind::Dsm, 60, false, 21);
        assert_eq!(cli_values(&[&fin, &later_prelim, &dsm], d, Units::Fahrenheit), (Some(50.0), None));
        assert_eq!(cli_values(&[&later_prelim, &dsm], d, Units::Fahrenheit), (Some(52.0), None));
        assert_eq!(cli_values(&[&dsm], d, Units::Fahrenheit), (None, None));
        assert_eq!(cli_values(&[&fin], d, Units::Celsius), (Some(10.0), None));
    }
}
