//! What a bracket distribution is made from, as the service knew it at a time t: nothing
//! published or verified after t is read, so an answer as of t is the one given then and
//! a backtest cannot peek; the live answer is the same computation at now.
//!
//! - Today's forecasts of the settlement day: each model's latest run with a
//!   `forecast_daily` row available by t (the day's window in the logic's clock:
//!   `standard` for `nws`, `civil` for `wu`); the NWS hourly version in force at t
//!   (`as_of('nws_hourly', t)`), when its periods cover the whole day; each daily-forecasts
//!   source's latest issuance by t.
//! - The verified history of those sources: `accuracy_pairs` available by t at the lead of
//!   the asked time (whole days from t to the day's start, 1 to 3; a time within the day
//!   uses lead 1, as no pair has a same-day run yet), each model at the run label of its
//!   run used today; a daily-forecasts source by its latest issuance as long before each
//!   past day's start as t is before the asked day's. A past day's settled value is its
//!   full-day climate report's available by t, else its pairs' verifying value (the
//!   engine's day under `nws`).
//!
//! Values are in the settlement unit (°F or °C): pairs and forecasts in the station's
//! other unit are converted. Everything is read from the lake: a live input counts from
//! the flush that stores it.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Date32Type, Float64Type, TimestampMicrosecondType};
use datafusion::prelude::SessionContext;

use datafusion::error::{DataFusionError, Result};

use super::Ask;
use crate::brackets::markets::Quantity;
use crate::brackets::Verified;
use crate::extremes::Logic;
use crate::lake::bound_sql::{utf8_column, Bindings};
use crate::time::fmt_iso_utc;
use crate::units::Units;

/// The name of the NWS hourly forecast as a source (as in `accuracy_pairs`).
pub const NWS: &str = crate::models::NWS_HOURLY_SOURCE;

/// Years of verified history read.
const HISTORY_YEARS: i64 = 3;

/// Days before the settlement day a model run can be (forecast_daily's horizon).
const RUN_HORIZON_DAYS: i64 = 20;

impl Ask<'_> {
    /// The `forecast_daily` column of the target in the settlement unit.
    fn column(&self) -> &'static str {
        match (self.target, self.unit) {
            (Quantity::High, Units::Fahrenheit) => "high_f",
            (Quantity::High, Units::Celsius) => "high_c",
            (Quantity::Low, Units::Fahrenheit) => "low_f",
            (Quantity::Low, Units::Celsius) => "low_c",
        }
    }
}

/// One source's forecast of the settlement day.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceForecast {
    pub source: String,
    /// The run, the NWS version's generation time, or the daily forecast's issuance.
    pub run: DateTime<Utc>,
    pub forecast: f64,
}

/// What the distribution is made from.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub forecasts: Vec<SourceForecast>,
    pub history: Vec<Verified>,
    pub lead_days: i64,
}

/// The inputs of `ask` (module docs).
pub async fn gather(ctx: &SessionContext, ask: &Ask<'_>) -> Result<Inputs> {
    // The five reads are independent: planned and scanned together.
    let lead_days = ask.lead_days();
    let (mut forecasts, nws, daily, mut days, pairs) = futures::try_join!(
        model_runs(ctx, ask),
        nws_version(ctx, ask),
        daily_forecasts(ctx, ask),
        settled_by_cli(ctx, ask),
        pair_rows(ctx, ask, lead_days),
    )?;
    forecasts.extend(nws);
    // The run label `accuracy_pairs` gives each: a model's run hour, the NWS version's
    // 6-hour block.
    let labels: HashMap<String, String> = forecasts
        .iter()
        .map(|f| {
            let hour = chrono::Timelike::hour(&f.run);
            let label = if f.source == NWS { 6 * (hour / 6) } else { hour };
            (f.source.clone(), format!("{label:02}z"))
        })
        .collect();
    add_pairs(ask, &pairs, &labels, &mut days)?;
    // Daily forecasts: today's latest issuance of each source, and for each past day its
    // latest issuance as long before that day's start as t is before this one's.
    let ahead = ask.window().start - ask.t;
    let mut latest: BTreeMap<&str, &DailyIssue> = BTreeMap::new();
    for d in daily.iter().filter(|d| d.date == ask.date) {
        keep_latest(&mut latest, d.source.as_str(), d);
    }
    for d in latest.values() {
        forecasts.push(SourceForecast { source: d.source.clone(), run: d.issued_at, forecast: d.value });
    }
    let mut past: BTreeMap<(NaiveDate, &str), &DailyIssue> = BTreeMap::new();
    for d in daily.iter().filter(|d| d.date < ask.date && latest.contains_key(d.source.as_str())) {
        let start = crate::time::day_window(ask.station.timezone, ask.logic.clock(), d.date).start;
        if d.issued_at > start - ahead {
            continue;
        }
        keep_latest(&mut past, (d.date, d.source.as_str()), d);
    }
    for ((date, source), d) in past {
        if let Some(day) = days.get_mut(&date) {
            day.forecasts.push((source.to_string(), d.value));
        }
    }
    let history = days.into_values().filter(|d| !d.forecasts.is_empty()).collect();
    Ok(Inputs { forecasts, history, lead_days })
}

/// Holds in `map` the latest issuance under `key`.
fn keep_latest<'a, K: Ord>(map: &mut BTreeMap<K, &'a DailyIssue>, key: K, d: &'a DailyIssue) {
    let held = map.entry(key).or_insert(d);
    if d.issued_at > held.issued_at {
        *held = d;
    }
}

/// Each model's latest run with a row of the day available by t.
async fn model_runs(ctx: &SessionContext, ask: &Ask<'_>) -> Result<Vec<SourceForecast>> {
    let mut b = Bindings::new();
    let tz_mode = if ask.logic == Logic::Nws { "standard" } else { "civil" };
    let sql = format!(
        "SELECT model, run_time, {col} FROM forecast_daily WHERE location_name = {loc} AND tz_mode = {mode} \
         AND date = {date} AND available_at <= {t} AND run_date >= {from} AND run_date <= {to} \
         AND {col} IS NOT NULL",
        col = ask.column(),
        loc = b.str(&ask.station.code),
        mode = b.str(tz_mode),
        date = b.date(ask.date),
        t = b.time(ask.t),
        from = b.partition_date(ask.date - Duration::days(RUN_HORIZON_DAYS)),
        to = b.partition_date(ask.t.date_naive()),
    );
    let mut latest: BTreeMap<String, SourceForecast> = BTreeMap::new();
    for batch in b.collect(ctx, &sql).await? {
        let models = utf8_column(&batch, 0)?;
        let (models, runs, values) = (models.as_string::<i32>(), times(&batch, 1)?, floats(&batch, 2)?);
        for (i, run) in runs.into_iter().enumerate() {
            let Some(run) = run else { continue };
            let f = SourceForecast { source: models.value(i).to_string(), run, forecast: values.value(i) };
            match latest.get(&f.source) {
                Some(l) if l.run >= run => {}
                _ => {
                    latest.insert(f.source.clone(), f);
                }
            }
        }
    }
    Ok(latest.into_values().collect())
}

/// The NWS hourly version in force at t, when its periods cover the day's window; once
/// the day has begun, the one in force at its start (a later version covers only the hours
/// left, and the lead-1 history scores the version before the day).
async fn nws_version(ctx: &SessionContext, ask: &Ask<'_>) -> Result<Option<SourceForecast>> {
    let w = ask.window();
    let at = ask.t.min(w.start);
    let mut b = Bindings::new();
    // The time is the service's own (formatted here, not the caller's text).
    let sql = format!(
        "SELECT max(generated_at), max(temperature_f), min(temperature_f), min(start_time), max(end_time) \
         FROM as_of('nws_hourly', '{at}') WHERE station_code = {st} AND start_time >= {from} AND start_time < {to}",
        at = fmt_iso_utc(at),
        st = b.str(&ask.station.code),
        from = b.time(w.start),
        to = b.time(w.end),
    );
    let batches = b.collect(ctx, &sql).await?;
    let Some(batch) = batches.iter().find(|b| b.num_rows() > 0) else { return Ok(None) };
    let (generated, first, last) = (times(batch, 0)?[0], times(batch, 3)?[0], times(batch, 4)?[0]);
    let (high, low) = (floats(batch, 1)?, floats(batch, 2)?);
    let (Some(generated), Some(first), Some(last)) = (generated, first, last) else { return Ok(None) };
    if first > w.start || last < w.end || high.is_null(0) {
        return Ok(None);
    }
    let value = match ask.target {
        Quantity::High => high.value(0),
        Quantity::Low => low.value(0),
    };
    Ok(Some(SourceForecast {
        source: NWS.to_string(),
        run: generated,
        forecast: Units::Fahrenheit.convert(value, ask.unit),
    }))
}

/// A daily forecast's value of the asked quantity.
#[derive(Debug)]
struct DailyIssue {
    source: String,
    date: NaiveDate,
    issued_at: DateTime<Utc>,
    value: f64,
}

/// Every daily forecast of the station issued by t for the asked day and the history's.
async fn daily_forecasts(ctx: &SessionContext, ask: &Ask<'_>) -> Result<Vec<DailyIssue>> {
    let mut b = Bindings::new();
    let value = ask.target.as_str();
    let sql = format!(
        "SELECT source, date, issued_at, {value}, units FROM as_of('daily_forecasts', '{at}') \
         WHERE station_code = {st} AND date <= {to} AND date >= {from} AND {value} IS NOT NULL",
        at = fmt_iso_utc(ask.t),
        st = b.str(&ask.station.code),
        to = b.date(ask.date),
        from = b.date(ask.date - Duration::days(365 * HISTORY_YEARS)),
    );
    let mut out = Vec::new();
    for batch in b.collect(ctx, &sql).await? {
        let (sources, units) = (utf8_column(&batch, 0)?, utf8_column(&batch, 4)?);
        let (sources, units) = (sources.as_string::<i32>(), units.as_string::<i32>());
        let (dates, issued, values) = (dates(&batch, 1)?, times(&batch, 2)?, floats(&batch, 3)?);
        for i in 0..batch.num_rows() {
            let (Some(date), Some(issued_at)) = (dates[i], issued[i]) else { continue };
            let Some(unit) = Units::parse(units.value(i)) else { continue };
            let v = unit.convert(values.value(i), ask.unit);
            out.push(DailyIssue { source: sources.value(i).to_string(), date, issued_at, value: v });
        }
    }
    Ok(out)
}

/// The past days a full-day climate report available by t settled (the report a reader
/// of the day settles on, `as_of('reports', t)`), without forecasts yet.
async fn settled_by_cli(ctx: &SessionContext, ask: &Ask<'_>) -> Result<BTreeMap<NaiveDate, Verified>> {
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT report_date, CAST({value}_f AS DOUBLE) FROM as_of('reports', '{at}') WHERE kind = 'cli' \
         AND station_code = {st} AND is_final AND report_date < {to} AND report_date >= {from} \
         AND {value}_f IS NOT NULL",
        value = ask.target.as_str(),
        at = fmt_iso_utc(ask.t),
        st = b.str(&ask.station.code),
        to = b.date(ask.date),
        from = b.date(ask.date - Duration::days(365 * HISTORY_YEARS)),
    );
    let mut days = BTreeMap::new();
    for batch in b.collect(ctx, &sql).await? {
        let (dates, values) = (dates(&batch, 0)?, floats(&batch, 1)?);
        for (i, date) in dates.into_iter().enumerate() {
            if let Some(date) = date {
                days.insert(
                    date,
                    Verified {
                        date,
                        forecasts: Vec::new(),
                        settled: Units::Fahrenheit.convert(values.value(i), ask.unit),
                    },
                );
            }
        }
    }
    Ok(days)
}

/// The `accuracy_pairs` rows of the station and target at `lead` available by t.
async fn pair_rows(ctx: &SessionContext, ask: &Ask<'_>, lead: i64) -> Result<Vec<RecordBatch>> {
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT date, model, run_label, forecast, observed FROM accuracy_pairs WHERE station_code = {st} \
         AND target = {target} AND lead_days = {lead} AND available_at <= {t} AND date < {to} AND date >= {from}",
        st = b.str(&ask.station.code),
        target = b.str(ask.target.as_str()),
        t = b.time(ask.t),
        to = b.date(ask.date),
        from = b.date(ask.date - Duration::days(365 * HISTORY_YEARS)),
    );
    b.collect(ctx, &sql).await
}

/// The verified days of the asked sources in `pairs` (each model at its run label)
/// added to `days`; a day no climate report settled takes its pairs' verifying value.
fn add_pairs(
    ask: &Ask<'_>,
    pairs: &[RecordBatch],
    labels: &HashMap<String, String>,
    days: &mut BTreeMap<NaiveDate, Verified>,
) -> Result<()> {
    for batch in pairs {
        let (models, run_labels) = (utf8_column(batch, 1)?, utf8_column(batch, 2)?);
        let (models, run_labels) = (models.as_string::<i32>(), run_labels.as_string::<i32>());
        let (dates, forecasts, observed) = (dates(batch, 0)?, floats(batch, 3)?, floats(batch, 4)?);
        for (i, date) in dates.into_iter().enumerate() {
            let Some(date) = date else { continue };
            let model = models.value(i);
            // Each source at the run label of its run used today.
            let wanted = labels.get(model).is_some_and(|l| l == run_labels.value(i));
            if !wanted || forecasts.is_null(i) || observed.is_null(i) {
                continue;
            }
            let day = days.entry(date).or_insert_with(|| Verified {
                date,
                forecasts: Vec::new(),
                settled: ask.station.units.convert(observed.value(i), ask.unit),
            });
            // One pair per station, day, model, label, lead and target.
            day.forecasts.push((model.to_string(), ask.station.units.convert(forecasts.value(i), ask.unit)));
        }
    }
    Ok(())
}

fn internal(what: &str) -> DataFusionError {
    DataFusionError::Internal(format!("bracket inputs: unexpected type of {what}"))
}

fn floats(batch: &RecordBatch, i: usize) -> Result<&datafusion::arrow::array::PrimitiveArray<Float64Type>> {
    batch.column(i).as_primitive_opt::<Float64Type>().ok_or_else(|| internal(batch.schema().field(i).name()))
}

fn times(batch: &RecordBatch, i: usize) -> Result<Vec<Option<DateTime<Utc>>>> {
    let a = batch
        .column(i)
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(|| internal(batch.schema().field(i).name()))?;
    Ok((0..a.len()).map(|r| a.is_valid(r).then(|| DateTime::from_timestamp_micros(a.value(r))).flatten()).collect())
}

fn dates(batch: &RecordBatch, i: usize) -> Result<Vec<Option<NaiveDate>>> {
    let a = batch.column(i).as_primitive_opt::<Date32Type>().ok_or_else(|| internal(batch.schema().field(i).name()))?;
    Ok((0..a.len()).map(|r| a.is_valid(r).then(|| Date32Type::to_naive_date_opt(a.value(r))).flatten()).collect())
}
