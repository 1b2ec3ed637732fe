//! The accuracy jobs' tables of one station in memory (`model_accuracy`, `accuracy_trends`,
//! `accuracy_daily_detail`, scope per_model_run), read once per [`CACHE_TTL`], and again at
//! once after the fresh runs of a new model run published (`jobs::fresh`): the endpoint
//! (api/v2/model_accuracy.rs) combines them per request.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Date32Type, Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ApiResult};
use crate::jobs::embedded_specs;
use crate::jobs::statements::{run_statements, Intermediates};
use crate::lake::bound_sql::{utf8_column, Bindings};
use crate::lake::loading_cache::LoadingCache;

/// How long a station's accuracy tables stay in memory before they are read again.
pub const CACHE_TTL: StdDuration = StdDuration::from_secs(60);
/// A metrics object (spec 2.9).
#[derive(Debug, Clone, Copy, Serialize, ToSchema, PartialEq)]
pub struct Metrics {
    pub mae: f64,
    pub bias: f64,
    pub rmse: f64,
    pub n: i64,
}

/// Sums of errors that add up across models, labels and days.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ErrorSums {
    pub n: i64,
    pub sum: f64,
    pub sum_abs: f64,
    pub sum_sq: f64,
}

impl ErrorSums {
    pub fn add(&mut self, o: &ErrorSums) {
        self.n += o.n;
        self.sum += o.sum;
        self.sum_abs += o.sum_abs;
        self.sum_sq += o.sum_sq;
    }

    /// The metrics, rounded to hundredths; `None` without pairs.
    pub fn metrics(&self) -> Option<Metrics> {
        (self.n > 0).then(|| {
            let n = self.n as f64;
            Metrics { mae: r2(self.sum_abs / n), bias: r2(self.sum / n), rmse: r2((self.sum_sq / n).sqrt()), n: self.n }
        })
    }
}

/// Rounded to hundredths.
pub fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// One `model_accuracy` row of scope per_model_run.
#[derive(Debug, Clone)]
pub struct CellRow {
    pub window_days: i32,
    pub lead_days: i32,
    pub target: String,
    pub model: String,
    pub run_label: String,
    pub sums: ErrorSums,
    pub day_bits: (i64, i64),
}

/// One `accuracy_trends` row of scope per_model_run.
#[derive(Debug, Clone)]
pub struct TrendRow {
    pub lead_days: i32,
    pub target: String,
    pub model: String,
    pub run_label: String,
    pub date: NaiveDate,
    pub sums: ErrorSums,
}

/// One `accuracy_daily_detail` row.
#[derive(Debug, Clone)]
pub struct DetailRow {
    pub date: NaiveDate,
    pub lead_days: i32,
    pub target: String,
    pub model: String,
    pub run_label: String,
    pub run_time: i64,
    pub forecast: f64,
    pub observed: f64,
}

/// Everything the endpoint serves for one station.
#[derive(Debug, Default)]
pub struct StationAccuracy {
    pub computed_at: Option<DateTime<Utc>>,
    pub as_of: Option<NaiveDate>,
    pub cells: Vec<CellRow>,
    pub trends: Vec<TrendRow>,
    pub detail: Vec<DetailRow>,
}

/// Per-station cache of the accuracy tables.
#[derive(Default)]
pub struct AccuracyCache {
    pub entries: LoadingCache<String, StationAccuracy>,
}

impl AccuracyCache {
    /// A catalog station's tables (cached while `version`, the live service's
    /// `derived_version`, is unchanged and for [`CACHE_TTL`] at most), or another code's
    /// (read now).
    pub async fn get(
        &self,
        ctx: &SessionContext,
        code: &str,
        in_catalog: bool,
        version: u64,
    ) -> ApiResult<Arc<StationAccuracy>> {
        if !in_catalog {
            return Ok(Arc::new(load(ctx, code).await?));
        }
        self.entries.get_or_load(&code.to_string(), version, CACHE_TTL, || load(ctx, code)).await
    }
}

/// The jobs that turn `accuracy_pairs` into the tables this module reads.
const FROM_PAIRS: [&str; 3] = ["model_accuracy", "accuracy_trends", "accuracy_daily_detail"];

/// A station's tables as they would have been computed at `t` (`as_of`, issue 31): the
/// three jobs' own SQL run over the station's pairs that could be scored by then
/// (`accuracy_pairs.available_at <= t`), in a session of its own. Never cached.
pub async fn load_as_of(ctx: &SessionContext, code: &str, t: DateTime<Utc>) -> ApiResult<StationAccuracy> {
    let mut b = Bindings::new();
    let sql =
        format!("SELECT * FROM accuracy_pairs WHERE station_code = {} AND available_at <= {}", b.str(code), b.time(t));
    let pairs = b.frame(ctx, &sql).await?;
    let schema = Arc::new(pairs.schema().as_arrow().clone());
    let scratch = SessionContext::new();
    scratch.register_table("accuracy_pairs", Arc::new(MemTable::try_new(schema, vec![pairs.collect().await?])?))?;
    let specs = embedded_specs().map_err(ApiError::internal)?;
    for name in FROM_PAIRS {
        let spec = specs.iter().find(|s| s.name == name).ok_or_else(|| ApiError::internal(format!("no job {name}")))?;
        let out = run_statements(&scratch, spec, None, Intermediates::Tables).await.map_err(ApiError::internal)?;
        let schema = Arc::new(out.schema().as_arrow().clone());
        let table = MemTable::try_new(schema, vec![out.collect().await?])?;
        scratch.register_table(spec.output.table.as_str(), Arc::new(table))?;
    }
    load(&scratch, code).await
}

/// Runs `sql` with the station code bound to `$1`.
async fn query(ctx: &SessionContext, code: &str, sql: &str) -> ApiResult<Vec<RecordBatch>> {
    let mut b = Bindings::new();
    b.str(code);
    Ok(b.collect(ctx, sql).await?)
}

fn date_of(days: i32) -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default() + chrono::Duration::days(i64::from(days))
}

async fn load(ctx: &SessionContext, code: &str) -> ApiResult<StationAccuracy> {
    let mut out = StationAccuracy::default();
    let cells = query(
        ctx,
        code,
        "SELECT window_days, lead_days, target, model, run_label, n, sum_error, sum_abs_error, sum_sq_error, \
         day_bits_lo, day_bits_hi, as_of, computed_at FROM model_accuracy \
         WHERE station_code = $1 AND scope = 'per_model_run'",
    )
    .await?;
    for b in &cells {
        let (target, model, label) = (utf8_column(b, 2)?, utf8_column(b, 3)?, utf8_column(b, 4)?);
        let (target, model, label) = (target.as_string::<i32>(), model.as_string::<i32>(), label.as_string::<i32>());
        let i32s = |i: usize| b.column(i).as_primitive::<Int32Type>();
        let i64s = |i: usize| b.column(i).as_primitive::<Int64Type>();
        let f64s = |i: usize| b.column(i).as_primitive::<Float64Type>();
        let as_of = b.column(11).as_primitive::<Date32Type>();
        let computed = b.column(12).as_primitive::<TimestampMicrosecondType>();
        for r in 0..b.num_rows() {
            out.as_of = out.as_of.max(Some(date_of(as_of.value(r))));
            out.computed_at = out.computed_at.max(DateTime::from_timestamp_micros(computed.value(r)));
            out.cells.push(CellRow {
                window_days: i32s(0).value(r),
                lead_days: i32s(1).value(r),
                target: target.value(r).to_string(),
                model: model.value(r).to_string(),
                run_label: label.value(r).to_string(),
                sums: ErrorSums {
                    n: i64s(5).value(r),
                    sum: f64s(6).value(r),
                    sum_abs: f64s(7).value(r),
                    sum_sq: f64s(8).value(r),
                },
                day_bits: (i64s(9).value(r), i64s(10).value(r)),
            });
        }
    }
    let trends = query(
        ctx,
        code,
        "SELECT lead_days, target, model, run_label, date, n, sum_error, sum_abs_error, sum_sq_error \
         FROM accuracy_trends WHERE station_code = $1 AND scope = 'per_model_run'",
    )
    .await?;
    for b in &trends {
        let (target, model, label) = (utf8_column(b, 1)?, utf8_column(b, 2)?, utf8_column(b, 3)?);
        let (target, model, label) = (target.as_string::<i32>(), model.as_string::<i32>(), label.as_string::<i32>());
        let f64s = |i: usize| b.column(i).as_primitive::<Float64Type>();
        for r in 0..b.num_rows() {
            out.trends.push(TrendRow {
                lead_days: b.column(0).as_primitive::<Int32Type>().value(r),
                target: target.value(r).to_string(),
                model: model.value(r).to_string(),
                run_label: label.value(r).to_string(),
                date: date_of(b.column(4).as_primitive::<Date32Type>().value(r)),
                sums: ErrorSums {
                    n: b.column(5).as_primitive::<Int64Type>().value(r),
                    sum: f64s(6).value(r),
                    sum_abs: f64s(7).value(r),
                    sum_sq: f64s(8).value(r),
                },
            });
        }
    }
    let detail = query(
        ctx,
        code,
        "SELECT date, lead_days, target, model, run_label, run_time, forecast, observed \
         FROM accuracy_daily_detail WHERE station_code = $1",
    )
    .await?;
    for b in &detail {
        let (target, model, label) = (utf8_column(b, 2)?, utf8_column(b, 3)?, utf8_column(b, 4)?);
        let (target, model, label) = (target.as_string::<i32>(), model.as_string::<i32>(), label.as_string::<i32>());
        for r in 0..b.num_rows() {
            out.detail.push(DetailRow {
                date: date_of(b.column(0).as_primitive::<Date32Type>().value(r)),
                lead_days: b.column(1).as_primitive::<Int32Type>().value(r),
                target: target.value(r).to_string(),
                model: model.value(r).to_string(),
                run_label: label.value(r).to_string(),
                run_time: b.column(5).as_primitive::<TimestampMicrosecondType>().value(r),
                forecast: b.column(6).as_primitive::<Float64Type>().value(r),
                observed: b.column(7).as_primitive::<Float64Type>().value(r),
            });
        }
    }
    Ok(out)
}
