//! The hot path of raw forecast requests (`forecasts.php` with a `model`): the recent rows
//! of one (location, model) held in memory as one Arrow batch sorted by run_time then
//! valid_time, so a request is a filter and a JSON encoding instead of a DataFusion plan
//! over a dozen Parquet files (figures: benches/README.md, "Raw forecast requests").
//!
//! - An entry holds the run dates from [`RECENT_DAYS`] days before its load: every run that
//!   can reach a window starting after that date minus the longest horizon. Older windows
//!   and pinned runs go to the lake.
//! - An entry is current while the live service has stored no forecasts of its model since
//!   it was built ([`WriteService::forecast_version`](crate::write::WriteService::forecast_version):
//!   a new HRRR run leaves the other models' entries warm) and for [`TTL`] at most: rows
//!   written by another process (a `wxlake ingest`) appear within that time.
//! - When the live service stored rows of the model, the entry re-reads only the run dates
//!   those rows have ([`WriteService::run_dates_since`](crate::write::WriteService::run_dates_since),
//!   typically today's one partition instead of 20 days) and keeps its older rows; the
//!   whole window is read again once the last whole read is [`TTL`] old.
//! - At most [`MAX_ROWS`] rows are held; the least recently loaded entries go first.
//! - Concurrent misses of one key run one load ([`LoadingCache`]).

use std::sync::{Arc, LazyLock};
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::TimestampMicrosecondType;

use super::error::{ApiError, ApiResult};
use crate::decode::forecast_rows::COLUMNS;
use crate::lake::bound_sql::Bindings;
use crate::lake::loading_cache::LoadingCache;
use crate::lake::schema::SUPERSEDED_AT;
use crate::write::WriteService;

/// The spec 2.5 columns, in order, as SQL: `id` (from `row_key`: the natural key's hash, and
/// for a re-published run's other values their own, `lake::versions`), the columns
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
    /// Sorted by run_time, valid_time; the columns of spec 2.5, then `available_at` and
    /// `superseded_at` (which rows an answer as of a time sees, and which are current:
    /// `lake::versions`; [`Entry::select`] leaves them out).
    pub rows: RecordBatch,
    /// The model's live version these rows include.
    version: u64,
    /// When the whole window was last read (a refresh keeps it).
    read_whole: Instant,
}

impl Entry {
    fn times(&self, name: &str) -> Option<&datafusion::arrow::array::PrimitiveArray<TimestampMicrosecondType>> {
        self.rows.column_by_name(name).map(|c| c.as_primitive::<TimestampMicrosecondType>())
    }

    /// Whether every run that can reach `[start, ..]` is here.
    pub fn covers_window(&self, start: DateTime<Utc>, reach: Duration) -> bool {
        (start - reach).date_naive() >= self.from_date
    }

    /// Rows with `valid_time` in `[start, end]` and `run_time <= end`, optionally of one run,
    /// optionally only those available by a time, in the columns of spec 2.5.
    pub fn select(
        &self,
        window: Option<(DateTime<Utc>, DateTime<Utc>)>,
        run: Option<DateTime<Utc>>,
        as_of: Option<DateTime<Utc>>,
    ) -> ApiResult<RecordBatch> {
        let (Some(valid), Some(runs)) = (self.times("valid_time"), self.times("run_time")) else {
            return Err(ApiError::internal("cached forecast rows lack run_time/valid_time"));
        };
        let known = self.known(as_of)?;
        let run_us = run.map(|r| r.timestamp_micros());
        let win = window.map(|(s, e)| (s.timestamp_micros(), e.timestamp_micros()));
        let mask: BooleanArray = (0..self.rows.num_rows())
            .map(|i| {
                let (v, r) = (valid.value(i), runs.value(i));
                let in_window = win.is_none_or(|(s, e)| s <= v && v <= e && r <= e);
                Some(in_window && run_us.is_none_or(|x| x == r) && known(i))
            })
            .collect();
        let rows = filter_record_batch(&self.rows, &mask).map_err(ApiError::internal)?;
        rows.project(&(0..rows.num_columns() - 2).collect::<Vec<_>>()).map_err(ApiError::internal)
    }

    /// The latest run held (with `as_of`: the latest with a row available by then), if any.
    pub fn latest_run(&self, as_of: Option<DateTime<Utc>>) -> ApiResult<Option<DateTime<Utc>>> {
        let Some(runs) = self.times("run_time") else {
            return Err(ApiError::internal("cached forecast rows lack run_time"));
        };
        let known = self.known(as_of)?;
        // Sorted by run time: the last admitted row has the latest run.
        Ok((0..runs.len()).rev().find(|&i| known(i)).and_then(|i| DateTime::from_timestamp_micros(runs.value(i))))
    }

    /// Whether row `i` is what a reader saw at `as_of`: available then and not replaced yet
    /// by other values of a re-published run (without a time: current).
    fn known(&self, as_of: Option<DateTime<Utc>>) -> ApiResult<impl Fn(usize) -> bool + '_> {
        let (Some(available), Some(superseded)) = (self.times("available_at"), self.times(SUPERSEDED_AT)) else {
            return Err(ApiError::internal("cached forecast rows lack available_at/superseded_at"));
        };
        let t = as_of.map(|t| t.timestamp_micros());
        Ok(move |i: usize| match t {
            None => superseded.is_null(i),
            Some(t) => {
                available.is_valid(i) && available.value(i) <= t && (superseded.is_null(i) || superseded.value(i) > t)
            }
        })
    }
}

/// The cache (one per server).
#[derive(Default)]
pub struct ForecastCache {
    entries: LoadingCache<(String, String), Entry>,
}

impl ForecastCache {
    /// The current entry of (location, model), loading it when missing or stale.
    pub async fn get(&self, live: &WriteService, location: &str, model: &str) -> ApiResult<Arc<Entry>> {
        let version = live.forecast_version(model);
        let key = (location.to_string(), model.to_string());
        let previous = self.entries.latest(&key);
        self.entries
            .get_or_load(&key, version, TTL, || async {
                let entry = match previous {
                    Some(p) => refresh(live, location, model, &p, version).await?,
                    None => load(live, location, model, version).await?,
                };
                // Room for it: the oldest entries go (only on a load, not per request).
                self.entries.evict(|e| e.rows.num_rows(), MAX_ROWS.saturating_sub(entry.rows.num_rows()));
                Ok(entry)
            })
            .await
    }
}

/// `previous` brought up to `version`: only the run dates stored since are read again when
/// the live service knows them, the window is the same day's and the last whole read is
/// younger than [`TTL`]; else a whole [`load`].
async fn refresh(live: &WriteService, location: &str, model: &str, previous: &Entry, version: u64) -> ApiResult<Entry> {
    let from_date = live.clock.now().date_naive() - Duration::days(RECENT_DAYS);
    let since = live.run_dates_since(model, previous.version);
    let (true, true, Some(since)) = (previous.from_date == from_date, previous.read_whole.elapsed() < TTL, since)
    else {
        return load(live, location, model, version).await;
    };
    let Some(changed) = since.map(|d| d.max(from_date)) else {
        // Nothing of this model stored since: the rows are current (the entry expired).
        return load(live, location, model, version).await;
    };
    let newer = read(live, location, model, changed).await?;
    let cut = changed.and_time(chrono::NaiveTime::MIN).and_utc().timestamp_micros();
    let kept = match previous.times("run_time") {
        Some(runs) => runs.values().partition_point(|&t| t < cut),
        None => return Err(ApiError::internal("cached forecast rows lack run_time")),
    };
    let rows = concat_batches(&newer.schema(), [&previous.rows.slice(0, kept), &newer]).map_err(ApiError::internal)?;
    Ok(Entry { from_date, rows, version, read_whole: previous.read_whole })
}

/// The whole window of (location, model), as of `version`.
async fn load(live: &WriteService, location: &str, model: &str, version: u64) -> ApiResult<Entry> {
    let from_date = live.clock.now().date_naive() - Duration::days(RECENT_DAYS);
    let read_whole = Instant::now();
    let rows = read(live, location, model, from_date).await?;
    Ok(Entry { from_date, rows, version, read_whole })
}

/// The rows of runs dated `from_date` on, sorted by run_time, valid_time.
async fn read(live: &WriteService, location: &str, model: &str, from_date: NaiveDate) -> ApiResult<RecordBatch> {
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT {}, available_at, {SUPERSEDED_AT} FROM forecasts WHERE location_name = {} AND model = {} AND run_date >= {} \
         ORDER BY run_time, valid_time",
        RAW_COLUMNS.as_str(),
        b.str(location),
        b.str(model),
        b.partition_date(from_date)
    );
    let (schema, batches) = b.collect_with_schema(&live.ctx, &sql).await?;
    concat_batches(&schema, &batches).map_err(ApiError::internal)
}
