//! The hot path of raw forecast requests (`forecasts.php` with a `model`): the recent rows
//! of one (location, model) held in memory as one Arrow batch sorted by run_time then
//! valid_time, so a request is a filter and a JSON encoding instead of a DataFusion plan
//! over a dozen Parquet files (figures: benches/README.md, "Raw forecast requests").
//!
//! - An entry holds the run dates from [`RECENT_DAYS`] days before its load: every run that
//!   can reach a window starting after that date minus the longest horizon. Older windows
//!   and pinned runs go to the lake.
//! - An entry is current while the live service has stored no forecasts of its model since
//!   it was built ([`LiveService::forecast_version`](crate::write::LiveService::forecast_version):
//!   a new HRRR run leaves the other models' entries warm) and for [`TTL`] at most: rows
//!   written by another process (a `wxlake ingest`) appear within that time.
//! - At most [`MAX_ROWS`] rows are held; the least recently loaded entries go first.
//! - Concurrent misses of one key run one load ([`LoadingCache`]).

use std::sync::{Arc, LazyLock};
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::TimestampMicrosecondType;

use super::bound_sql::Bindings;
use super::error::{ApiError, ApiResult};
use super::loading_cache::LoadingCache;
use crate::decode::forecast_rows::COLUMNS;
use crate::write::LiveService;

/// The spec 2.5 columns, in order, as SQL: `id` (from the natural-key hash), the columns
/// the forecast decoders read and write (one list: [`COLUMNS`]), and `inserted_at`.
pub static RAW_COLUMNS: LazyLock<String> =
    LazyLock::new(|| format!("CAST(row_key / 2048 AS BIGINT) AS id, {}, inserted_at", COLUMNS.join(", ")));

/// Days of run dates an entry holds, counted back from the day it is loaded.
pub const RECENT_DAYS: i64 = 20;
/// Longest an entry is served without re-reading the lake.
pub const TTL: StdDuration = StdDuration::from_secs(60);
/// Rows held in all entries together (about 200 bytes each).
pub const MAX_ROWS: usize = 2_000_000;

/// One (location, model): its recent rows.
pub struct Entry {
    /// Runs on or after this date are all here.
    pub from_date: NaiveDate,
    /// Sorted by run_time, valid_time; the columns of spec 2.5.
    pub rows: RecordBatch,
}

impl Entry {
    fn times(&self, name: &str) -> Option<&datafusion::arrow::array::PrimitiveArray<TimestampMicrosecondType>> {
        self.rows.column_by_name(name).map(|c| c.as_primitive::<TimestampMicrosecondType>())
    }

    /// Whether every run that can reach `[start, ..]` is here.
    pub fn covers_window(&self, start: DateTime<Utc>, reach: Duration) -> bool {
        (start - reach).date_naive() >= self.from_date
    }

    /// Rows with `valid_time` in `[start, end]` and `run_time <= end`, optionally of one run.
    pub fn select(
        &self,
        window: Option<(DateTime<Utc>, DateTime<Utc>)>,
        run: Option<DateTime<Utc>>,
    ) -> ApiResult<RecordBatch> {
        let (Some(valid), Some(runs)) = (self.times("valid_time"), self.times("run_time")) else {
            return Err(ApiError::internal("cached forecast rows lack run_time/valid_time"));
        };
        let run_us = run.map(|r| r.timestamp_micros());
        let win = window.map(|(s, e)| (s.timestamp_micros(), e.timestamp_micros()));
        let mask: BooleanArray = (0..self.rows.num_rows())
            .map(|i| {
                let (v, r) = (valid.value(i), runs.value(i));
                let in_window = win.is_none_or(|(s, e)| s <= v && v <= e && r <= e);
                Some(in_window && run_us.is_none_or(|x| x == r))
            })
            .collect();
        filter_record_batch(&self.rows, &mask).map_err(ApiError::internal)
    }

    /// The latest run held, if any.
    pub fn latest_run(&self) -> Option<DateTime<Utc>> {
        let runs = self.times("run_time")?;
        (runs.len() > runs.null_count()).then(|| runs.value(runs.len() - 1)).and_then(DateTime::from_timestamp_micros)
    }
}

/// The cache (one per server).
#[derive(Default)]
pub struct ForecastCache {
    entries: LoadingCache<(String, String), Entry>,
}

impl ForecastCache {
    /// The current entry of (location, model), loading it when missing or stale.
    pub async fn get(&self, live: &LiveService, location: &str, model: &str) -> ApiResult<Arc<Entry>> {
        let version = live.forecast_version(model);
        let key = (location.to_string(), model.to_string());
        self.entries
            .get_or_load(&key, version, TTL, || async {
                let entry = load(live, location, model).await?;
                // Room for it: the oldest entries go (only on a load, not per request).
                self.entries.evict(|e| e.rows.num_rows(), MAX_ROWS.saturating_sub(entry.rows.num_rows()));
                Ok(entry)
            })
            .await
    }
}

async fn load(live: &LiveService, location: &str, model: &str) -> ApiResult<Entry> {
    let from_date = live.clock.now().date_naive() - Duration::days(RECENT_DAYS);
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT {} FROM forecasts WHERE location_name = {} AND model = {} AND run_date >= {} \
         ORDER BY run_time, valid_time",
        RAW_COLUMNS.as_str(),
        b.str(location),
        b.str(model),
        b.partition_date(from_date)
    );
    let (schema, batches) = b.collect_with_schema(&live.ctx, &sql).await?;
    let rows = concat_batches(&schema, &batches).map_err(ApiError::internal)?;
    Ok(Entry { from_date, rows })
}
