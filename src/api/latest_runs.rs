//! The latest run of every (location, model) in the forecast cache's window: what
//! `stations.php?include=latest_runs` answers. One small lake query (three columns, grouped)
//! serves every station, where loading each covering model's forecast cache cost the day
//! view most of its first round trip.
//!
//! - Built on first use over the run dates the forecast cache holds
//!   ([`RECENT_DAYS`](super::forecast_cache::RECENT_DAYS)), so it names the run that
//!   `forecasts.php?run=latest` answers; runs older than that window are left out on read,
//!   as the cache leaves them out.
//! - A run this server stored is added at read time from the live service's own record
//!   ([`WriteService::stored_runs`]): no lake read, so it shows as soon as it is flushed,
//!   however often runs arrive.
//! - After [`TTL`] (rows another process wrote), the index is refreshed from the run dates
//!   since the day before its last refresh, keeping the later run per key: a run being
//!   published is dated today or, just after midnight, yesterday, so the refresh reads two
//!   days of partitions rather than the window.
//! - A run another process stored with an older date (a backfill of a station or model with
//!   no newer run) is seen by the full rebuild every [`REBUILD_EVERY`].
//! - Concurrent requests wait for one refresh.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::TimestampMicrosecondType;

use super::error::ApiResult;
use super::forecast_cache::{RECENT_DAYS, TTL};
use crate::lake::bound_sql::{utf8_column, Bindings};
use crate::write::WriteService;

/// Longest the index goes without a full rebuild over the whole window.
pub const REBUILD_EVERY: StdDuration = StdDuration::from_secs(600);

/// (location, model) → its latest run (µs since the epoch).
type Index = HashMap<(String, String), i64>;

struct Built {
    index: Arc<Index>,
    refreshed: Instant,
    rebuilt: Instant,
    /// The UTC date of the last refresh: the next one reads from the day before.
    refreshed_on: NaiveDate,
}

/// See the module docs (one per server).
#[derive(Default)]
pub struct LatestRuns {
    built: tokio::sync::Mutex<Option<Built>>,
}

impl LatestRuns {
    /// The latest run of each model with rows for `location` in the window, by model name.
    pub async fn of(&self, live: &WriteService, location: &str) -> ApiResult<HashMap<String, DateTime<Utc>>> {
        let index = self.current(live).await?;
        let from = (live.clock.now().date_naive() - Duration::days(RECENT_DAYS)).and_time(chrono::NaiveTime::MIN);
        let from = from.and_utc();
        let mut out: HashMap<String, DateTime<Utc>> = index
            .iter()
            .filter(|((loc, _), _)| loc == location)
            .filter_map(|((_, model), &t)| Some((model.clone(), DateTime::from_timestamp_micros(t)?)))
            .collect();
        for (model, t) in live.stored_runs(location) {
            let held = out.entry(model.to_string()).or_insert(t);
            *held = (*held).max(t);
        }
        out.retain(|_, t| *t >= from);
        Ok(out)
    }

    /// [`of`](Self::of) as the service would have answered at `t`: the latest run of each
    /// model with rows for `location` available by `t`, dated from the window's first day
    /// counted from `t` (read from the lake, not the index: a past moment is not cached).
    pub async fn of_as_of(
        &self,
        live: &WriteService,
        location: &str,
        t: DateTime<Utc>,
    ) -> ApiResult<HashMap<String, DateTime<Utc>>> {
        let from = t.date_naive() - Duration::days(RECENT_DAYS);
        let mut b = Bindings::new();
        let sql = format!(
            "SELECT location_name, model, max(run_time) FROM forecasts WHERE location_name = {} \
             AND available_at <= {} AND run_date >= {} AND run_date <= {} GROUP BY location_name, model",
            b.str(location),
            b.time(t),
            b.partition_date(from),
            b.partition_date(t.date_naive())
        );
        let from = from.and_time(chrono::NaiveTime::MIN).and_utc();
        Ok(index_of(b.collect(&live.ctx, &sql).await?)?
            .into_iter()
            .filter_map(|((_, model), t)| Some((model, DateTime::from_timestamp_micros(t)?)))
            .filter(|(_, t)| *t >= from)
            .collect())
    }

    async fn current(&self, live: &WriteService) -> ApiResult<Arc<Index>> {
        let mut built = self.built.lock().await;
        let today = live.clock.now().date_naive();
        match built.as_mut() {
            Some(b) if b.refreshed.elapsed() < TTL => Ok(Arc::clone(&b.index)),
            Some(b) if b.rebuilt.elapsed() < REBUILD_EVERY => {
                let newer = query(live, b.refreshed_on - Duration::days(1)).await?;
                let mut index = (*b.index).clone();
                for (key, t) in newer {
                    let held = index.entry(key).or_insert(t);
                    *held = (*held).max(t);
                }
                b.index = Arc::new(index);
                (b.refreshed, b.refreshed_on) = (Instant::now(), today);
                Ok(Arc::clone(&b.index))
            }
            _ => {
                let index = Arc::new(query(live, today - Duration::days(RECENT_DAYS)).await?);
                let now = Instant::now();
                *built = Some(Built { index: Arc::clone(&index), refreshed: now, rebuilt: now, refreshed_on: today });
                Ok(index)
            }
        }
    }
}

/// The latest run per (location, model) among run dates from `from` on.
async fn query(live: &WriteService, from: NaiveDate) -> ApiResult<Index> {
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT location_name, model, max(run_time) FROM forecasts WHERE run_date >= {} \
         GROUP BY location_name, model",
        b.partition_date(from)
    );
    index_of(b.collect(&live.ctx, &sql).await?)
}

/// The rows (location, model, latest run) as an index.
fn index_of(batches: Vec<datafusion::arrow::array::RecordBatch>) -> ApiResult<Index> {
    let mut out = Index::new();
    for batch in batches {
        let (locations, models) = (utf8_column(&batch, 0)?, utf8_column(&batch, 1)?);
        let (locations, models) = (locations.as_string::<i32>(), models.as_string::<i32>());
        let runs = batch.column(2).as_primitive::<TimestampMicrosecondType>();
        for i in (0..batch.num_rows()).filter(|&i| runs.is_valid(i)) {
            out.insert((locations.value(i).to_string(), models.value(i).to_string()), runs.value(i));
        }
    }
    Ok(out)
}
