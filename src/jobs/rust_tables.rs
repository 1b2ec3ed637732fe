//! Tables computed in Rust and registered for a job run (declared in `jobs/*.toml` as
//! `helpers`), so the SQL never converts time zones or re-derives model cadences itself
//! (STYLE.md: `AT TIME ZONE` grouping has had bugs; src/time.rs and src/models.rs are the
//! single sources). `wxlake jobs helpers` writes them as Parquet for other engines.
//!
//! - `day_windows(timezone, tz_mode, date, start_utc, end_utc, hours)`: the UTC window
//!   `[start_utc, end_utc)` of each local day of every catalog time zone, `tz_mode`
//!   `civil` (wall clock, 23/24/25 h) or `standard` (Local Standard Time, 24 h), from
//!   [`crate::time::day_window`]. Only the dates a run can touch are generated.
//! - `model_leads(model, forecast_hour, step_before_h, step_after_h, native_index)`: for
//!   every lead hour 0..=999 of every model, the native output step that ends at it
//!   (`step_before_h`, the step at lead h-1) and the one that starts at it (`step_after_h`),
//!   and `native_index`, the number of native steps from lead 0 to h (fractional between
//!   native leads). A run has no missing point between leads a and b when it has
//!   `round(native_index(b) - native_index(a)) + 1` points there, whatever the phase of
//!   its leads (NBS-MOS leads are 5, 8, 11 ... for a 01Z run).
//! - `observed_extremes`: the live engine's high/low per station, trading day and logic for
//!   the run's dates (see [`super::observed`]).
//! - `bracket_forecasts`: the bracket odds each settled station-day had at each checkpoint,
//!   and the baselines', scored (see [`super::bracket_scores`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{
    ArrayRef, Date32Array, Float64Array, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::bracket_scores::bracket_forecasts;
use super::error::JobError;
use super::observed::observed_extremes;
use super::replay_function::register_view;
use crate::bracket_odds::inputs::PastReads;
use crate::catalog::Catalog;
use crate::lake::rows::date32;
use crate::models::MODELS;
use crate::time::{day_window, DayClock};

/// One table computed in Rust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RustTable {
    DayWindows,
    ModelLeads,
    /// The live engine's daily extremes (observed.rs); needs observations, onemin, reports.
    ObservedExtremes,
    /// The bracket odds at each checkpoint and their baselines, scored (bracket_scores.rs).
    BracketForecasts,
}

impl RustTable {
    pub const ALL: [RustTable; 4] =
        [RustTable::DayWindows, RustTable::ModelLeads, RustTable::ObservedExtremes, RustTable::BracketForecasts];

    /// The SQL name (and the name in a declaration's `helpers`).
    pub fn name(self) -> &'static str {
        match self {
            RustTable::DayWindows => "day_windows",
            RustTable::ModelLeads => "model_leads",
            RustTable::ObservedExtremes => "observed_extremes",
            RustTable::BracketForecasts => "bracket_forecasts",
        }
    }

    /// The table named `s`, if any.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.name() == s)
    }
}

/// Lead hours covered by `model_leads` (every model's horizon is shorter).
pub const MAX_LEAD_H: u32 = 999;

/// Days a run can reach past its run date: the longest horizon, plus a day for zones east
/// of UTC and one of margin.
pub fn reach_days() -> i64 {
    let longest = MODELS.iter().map(|m| m.horizon_h).max().unwrap_or(384);
    i64::from(longest).div_euclid(24) + 2
}

/// `day_windows` for the catalog's zones and local dates `from..=to`.
pub fn day_windows(from: NaiveDate, to: NaiveDate) -> Result<MemTable, JobError> {
    let zones: BTreeSet<&str> = Catalog::global().all().iter().map(|s| s.timezone.name()).collect();
    let (mut tz, mut mode, mut date, mut start, mut end, mut hours) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for name in zones {
        let Ok(zone) = name.parse::<chrono_tz::Tz>() else { continue };
        for (clock, label) in [(DayClock::Civil, "civil"), (DayClock::Standard, "standard")] {
            let mut d = from;
            while d <= to {
                let w = day_window(zone, clock, d);
                tz.push(name);
                mode.push(label);
                date.push(date32(d));
                start.push(w.start.timestamp_micros());
                end.push(w.end.timestamp_micros());
                hours.push(((w.end - w.start).num_minutes() as f64 / 60.0).round() as i32);
                d += Duration::days(1);
            }
        }
    }
    let ts = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let schema = Arc::new(Schema::new(vec![
        Field::new("timezone", DataType::Utf8, false),
        Field::new("tz_mode", DataType::Utf8, false),
        Field::new("date", DataType::Date32, false),
        Field::new("start_utc", ts.clone(), false),
        Field::new("end_utc", ts, false),
        Field::new("hours", DataType::Int32, false),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(tz)),
        Arc::new(StringArray::from(mode)),
        Arc::new(Date32Array::from(date)),
        Arc::new(TimestampMicrosecondArray::from(start).with_timezone("UTC")),
        Arc::new(TimestampMicrosecondArray::from(end).with_timezone("UTC")),
        Arc::new(Int32Array::from(hours)),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), cols)?;
    Ok(MemTable::try_new(schema, vec![vec![batch]])?)
}

/// `model_leads` for the 18 models.
pub fn model_leads() -> Result<MemTable, JobError> {
    let n = MODELS.len() * (MAX_LEAD_H as usize + 1);
    let (mut model, mut lead, mut before, mut after, mut index) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for m in &MODELS {
        // Count in 1/lcm(steps) units so the index is exact (19.0, not 19.000000000000004).
        let unit = m.steps.iter().fold(1u64, |acc, s| lcm(acc, u64::from(s.1.max(1))));
        let mut units_so_far = 0u64;
        for h in 0..=MAX_LEAD_H {
            model.push(m.name);
            lead.push(h as i32);
            before.push(m.step_at(h.saturating_sub(1)) as i32);
            after.push(m.step_at(h) as i32);
            index.push(units_so_far as f64 / unit as f64);
            units_so_far += unit / u64::from(m.step_at(h).max(1));
        }
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("model", DataType::Utf8, false),
        Field::new("forecast_hour", DataType::Int32, false),
        Field::new("step_before_h", DataType::Int32, false),
        Field::new("step_after_h", DataType::Int32, false),
        Field::new("native_index", DataType::Float64, false),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(model)),
        Arc::new(Int32Array::from(lead)),
        Arc::new(Int32Array::from(before)),
        Arc::new(Int32Array::from(after)),
        Arc::new(Float64Array::from(index)),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), cols)?;
    Ok(MemTable::try_new(schema, vec![vec![batch]])?)
}

fn lcm(a: u64, b: u64) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    a / gcd(a, b) * b
}

/// Where a run's queries execute, which decides where `observed_extremes` is replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// In this process: every helper computed here.
    Local,
    /// On a cluster: `observed_extremes` becomes a view replayed on the executors
    /// ([`super::replay_function`]); the other helpers are computed here and travel in the plan.
    Cluster,
}

/// A run's helper tables, registered chunk by chunk: every chunk's are computed as known
/// at one moment (the run's), and what `bracket_forecasts` read of the history before one
/// chunk serves the next ([`PastReads`]).
pub struct Helpers {
    now: DateTime<Utc>,
    past: PastReads,
}

impl Helpers {
    /// The helpers of a run as known at `now`.
    pub fn new(now: DateTime<Utc>) -> Self {
        Helpers { now, past: PastReads::default() }
    }

    /// Registers `tables` (a job's `helpers`) for the run's chunk over incremental-key dates
    /// `from..=to` (the local dates a run of those days can reach).
    pub async fn register(
        &mut self,
        ctx: &SessionContext,
        tables: &[RustTable],
        from: NaiveDate,
        to: NaiveDate,
        placement: Placement,
    ) -> Result<(), JobError> {
        let now = self.now;
        for t in tables {
            let started = std::time::Instant::now();
            let table = match t {
                RustTable::DayWindows => day_windows(from - Duration::days(2), to + Duration::days(reach_days()))?,
                RustTable::ModelLeads => model_leads()?,
                RustTable::ObservedExtremes if placement == Placement::Cluster => {
                    register_view(ctx, from, to, now).await?;
                    continue;
                }
                RustTable::ObservedExtremes => observed_extremes(ctx, from, to, now).await?,
                RustTable::BracketForecasts => bracket_forecasts(ctx, from, to, now, &mut self.past).await?,
            };
            // What the client computes outside the SQL (on a cluster too), per chunk, at debug level.
            tracing::debug!(table = t.name(), %from, %to, elapsed_ms = started.elapsed().as_millis() as u64, "helper table computed");
            ctx.deregister_table(t.name())?;
            ctx.register_table(t.name(), Arc::new(table))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn rows(ctx: &SessionContext, q: &str) -> Vec<String> {
        let b = ctx.sql(q).await.unwrap().collect().await.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&b).unwrap().to_string();
        text.lines()
            .filter(|l| l.starts_with('|'))
            .skip(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[tokio::test]
    async fn day_windows_follow_time_rs() {
        let ctx = SessionContext::new();
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        ctx.register_table("day_windows", Arc::new(day_windows(d("2026-03-07"), d("2026-03-09")).unwrap())).unwrap();
        let r = rows(
            &ctx,
            "SELECT tz_mode, date, start_utc, hours FROM day_windows WHERE timezone = 'America/Chicago' \
             AND date = DATE '2026-03-08' ORDER BY tz_mode",
        )
        .await;
        assert_eq!(
            r,
            [
                "| civil | 2026-03-08 | 2026-03-08T06:00:00Z | 23 |",
                "| standard | 2026-03-08 | 2026-03-08T06:00:00Z | 24 |"
            ]
        );
        let r = rows(&ctx, "SELECT start_utc FROM day_windows WHERE timezone = 'Asia/Kolkata' AND date = DATE '2026-03-08' AND tz_mode = 'civil'").await;
        assert_eq!(r, ["| 2026-03-07T18:30:00Z |"]);
    }

    #[tokio::test]
    async fn model_leads_follow_models_rs() {
        let ctx = SessionContext::new();
        ctx.register_table("model_leads", Arc::new(model_leads().unwrap())).unwrap();
        let r = rows(
            &ctx,
            "SELECT forecast_hour, step_before_h, step_after_h, native_index FROM model_leads \
             WHERE model = 'GFS-MOS' AND forecast_hour IN (6, 57, 60, 63, 66, 72) ORDER BY 1",
        )
        .await;
        assert_eq!(
            r,
            [
                "| 6 | 3 | 3 | 2.0 |",
                "| 57 | 3 | 3 | 19.0 |",
                "| 60 | 3 | 6 | 20.0 |",
                "| 63 | 6 | 6 | 20.5 |",
                "| 66 | 6 | 6 | 21.0 |",
                "| 72 | 6 | 6 | 22.0 |"
            ]
        );
        let r = rows(
            &ctx,
            "SELECT step_before_h, step_after_h FROM model_leads WHERE model = 'GFS' AND forecast_hour = 120",
        )
        .await;
        assert_eq!(r, ["| 1 | 3 |"]);
    }
}
