//! What a run covers: its key range, the chunks it is computed in, and which output
//! partitions it replaces.
//!
//! A run of an incremental job covers a range of its key (`run_date` for forecast_daily):
//! the given `--from/--to`, or for a full run every key value its source inputs hold (the
//! union of all of them, widened by `margin_days`; see [`JobSpec`]'s `[incremental]`),
//! computed `chunk_days` at a time (bounded memory). A full run's chunks cover the days the
//! sources hold, not the calendar between the first and the last: a lake of two months of
//! 2005 and twenty days of 2026 is a handful of chunks, not the ~1,100 empty ones of the
//! years between (each a query round trip, which on a cluster is a Ballista job of several
//! stages). A run with a range replaces the output partitions whose key lies in it; a full
//! run replaces them all.

use chrono::{Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Date32Type, Int64Type};
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{lit, not, ExprFunctionExt};
use datafusion::prelude::ident;
use datafusion::scalar::ScalarValue;
use tracing::warn;

use super::error::JobError;
use super::spec::{Incremental, JobSpec};
use super::tables::job_session;
use crate::lake::delta::ActiveFile;
use crate::lake::rows::date32;
use crate::lake::schema;
use crate::lake::{query, Lake};

/// Which output partitions a run replaces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Replace {
    All,
    KeyRange(NaiveDate, NaiveDate),
}

/// A run's chunks (`None` bounds for a non-incremental job) and what it replaces.
#[derive(Debug, PartialEq)]
pub(crate) struct Plan {
    pub(crate) chunks: Vec<Option<(NaiveDate, NaiveDate)>>,
    pub(crate) replace: Replace,
    pub(crate) range: Option<(NaiveDate, NaiveDate)>,
}

/// The chunks of a full run over `days` (sorted, distinct): each starts at a day held and
/// spans at most `chunk_days` days; days between held days inside a chunk are computed
/// with it, the gaps between chunks are not computed at all. Over contiguous days this is
/// [`split_range`] of the first and last.
pub(crate) fn split_days(days: &[NaiveDate], chunk_days: u32) -> Vec<Option<(NaiveDate, NaiveDate)>> {
    let span = Duration::days(i64::from(chunk_days.max(1)) - 1);
    let mut out = Vec::new();
    let mut rest = days;
    while let Some(&a) = rest.first() {
        let inside = rest.partition_point(|d| *d <= a + span);
        out.push(Some((a, rest[inside - 1])));
        rest = &rest[inside..];
    }
    out
}

/// `from..=to` in chunks of `days` days (the last one shorter).
pub(crate) fn split_range(from: NaiveDate, to: NaiveDate, days: u32) -> Vec<Option<(NaiveDate, NaiveDate)>> {
    let mut out = Vec::new();
    let mut a = from;
    while a <= to {
        let b = (a + Duration::days(i64::from(days.max(1)) - 1)).min(to);
        out.push(Some((a, b)));
        a = b + Duration::days(1);
    }
    out
}

/// The plan of a run over `range` (`None`: a full run); a range is refused for a job
/// without an incremental key, and when it is backwards.
pub(crate) async fn plan(lake: &Lake, spec: &JobSpec, range: Option<(NaiveDate, NaiveDate)>) -> Result<Plan, JobError> {
    let bad = |reason: String| JobError::Range { job: spec.name.clone(), reason };
    let Some(inc) = &spec.incremental else {
        if range.is_some() {
            return Err(bad("--from/--to need an [incremental] key; this job always runs in full".into()));
        }
        return Ok(Plan { chunks: vec![None], replace: Replace::All, range: None });
    };
    match range {
        Some((a, b)) if a > b => Err(bad(format!("--from {a} is after --to {b}"))),
        Some((a, b)) => Ok(Plan { chunks: split_range(a, b, inc.chunk_days), replace: Replace::KeyRange(a, b), range }),
        None => {
            let chunks = split_days(&full_days(lake, spec, inc).await?, inc.chunk_days);
            Ok(Plan { chunks, replace: Replace::All, range: None })
        }
    }
}

/// Days after today (UTC) a full run's sources may reach: a local trading day runs at most
/// a day ahead of the UTC date, and observations and forecast runs are never in the
/// future, so a later source date is a bogus value (a report dated 2099), not data.
pub const FULL_RUN_FUTURE_DAYS: i64 = 2;

/// The earliest day a date column (e.g. `reports.report_date`) may bound a full run with,
/// unless the lake holds older observations or forecasts: ASOS, which the DSM and the
/// observations come from, began in the early 1990s. See `plausible_first_day`.
pub const FULL_RUN_FLOOR: (i32, u32, u32) = (1990, 1, 1);

/// The last day a full run's sources may contribute: today + [`FULL_RUN_FUTURE_DAYS`].
fn plausible_last_day() -> NaiveDate {
    Utc::now().date_naive() + Duration::days(FULL_RUN_FUTURE_DAYS)
}

/// The first day a full run's date-column sources may contribute: [`FULL_RUN_FLOOR`], or
/// the first day of the lake's observations, one-minute data or forecast runs if earlier.
/// One bogus row (a report dated 1970 or 2099) must not stretch a full run over decades;
/// rows outside are left out of the range, with a warning (a run with `--from/--to` still
/// covers any day asked for). Read only for a job with a date-column source: it loads
/// three tables' file lists (the forecasts' is the lake's longest).
async fn plausible_first_day(lake: &Lake) -> Result<NaiveDate, JobError> {
    let today = Utc::now().date_naive();
    let mut first: Option<NaiveDate> = None;
    for (table, key) in [("observations", "date"), ("onemin", "date"), ("forecasts", "run_date")] {
        if let Some(&d) = key_dates(lake, table, key).await?.first() {
            first = Some(first.map_or(d, |f| f.min(d)));
        }
    }
    let (y, m, d) = FULL_RUN_FLOOR;
    let documented = NaiveDate::from_ymd_opt(y, m, d).unwrap_or(today);
    let floor = first.map_or(documented, |f| f.min(documented));
    Ok(floor.min(today))
}

/// The first and last day a full run covers (`None` when the sources hold nothing); the
/// run computes only the days of [`full_days`] between them.
#[cfg(test)]
pub(crate) async fn full_range(
    lake: &Lake,
    spec: &JobSpec,
    inc: &Incremental,
) -> Result<Option<(NaiveDate, NaiveDate)>, JobError> {
    let days = full_days(lake, spec, inc).await?;
    Ok(days.first().zip(days.last()).map(|(a, b)| (*a, *b)))
}

/// The days a full run covers, sorted and distinct: every day any of the job's incremental
/// sources holds, each widened by `margin_days` either way; none when they hold nothing.
/// Every source counts, not only one: a history loaded as one-minute data or reports
/// alone (its observations only recent) has days the observations' partitions lack.
/// No source day is later than today + [`FULL_RUN_FUTURE_DAYS`], and a date column's days
/// are bounded by [`plausible_first_day`].
pub(crate) async fn full_days(lake: &Lake, spec: &JobSpec, inc: &Incremental) -> Result<Vec<NaiveDate>, JobError> {
    let ceiling = plausible_last_day();
    let mut first_day = None;
    let mut held: Vec<NaiveDate> = Vec::new();
    for src in &inc.sources {
        match &src.column {
            None => {
                let dir = if schema::table(&src.table).is_some() {
                    src.table.clone()
                } else {
                    format!("derived/{}", src.table)
                };
                let mut dates = key_dates(lake, &dir, &inc.key).await?;
                let future = dates.iter().filter(|d| **d > ceiling).count();
                if future > 0 {
                    warn!(job = %spec.name, source = %src.table, partitions = future, after = %ceiling, "full run: partitions dated in the future left out");
                    dates.retain(|d| *d <= ceiling);
                }
                held.extend(dates);
            }
            Some(column) => {
                let floor = match first_day {
                    Some(f) => f,
                    None => *first_day.insert(plausible_first_day(lake).await?),
                };
                let ctx = job_session(lake, spec, query::runtime_env(lake)?).await?;
                let bad = |reason: String| JobError::Range {
                    job: spec.name.clone(),
                    reason: format!("incremental source {}.{column} {reason}", src.table),
                };
                // The spec cannot check a derived table's column when it is loaded alone:
                // check it here, before reading values as dates.
                let df = ctx.table(src.table.as_str()).await?;
                match df.schema().field_with_unqualified_name(column) {
                    Ok(f) if f.data_type() == &DataType::Date32 => {}
                    Ok(f) => {
                        return Err(bad(format!(
                            "is {}, not a date: a full run cannot take its days from it",
                            f.data_type()
                        )))
                    }
                    Err(_) => return Err(bad(format!("does not exist in {}", src.table))),
                }
                // Built as expressions: the bounds are typed values, the column a name.
                let day = |d: NaiveDate| lit(ScalarValue::Date32(Some(date32(d))));
                let inside = ident(column).between(day(floor), day(ceiling));
                let outside_df = df.clone().aggregate(
                    vec![],
                    vec![count(ident(column)).filter(not(inside.clone())).build()?.alias("outside")],
                )?;
                for b in outside_df.collect().await? {
                    let outside = b.column(0).as_primitive_opt::<Int64Type>();
                    let outside = outside.filter(|o| b.num_rows() > 0 && o.is_valid(0)).map_or(0, |o| o.value(0));
                    if outside > 0 {
                        warn!(job = %spec.name, source = %src.table, column = %column, rows = outside, from = %floor, to = %ceiling, "full run: rows with implausible dates left out of the range");
                    }
                }
                // The distinct days (one row per day: a report a day and station at most).
                let days_df = df.filter(inside)?.aggregate(vec![ident(column)], vec![])?;
                for b in days_df.collect().await? {
                    let a = b.column(0).as_primitive_opt::<Date32Type>().ok_or_else(|| {
                        bad(format!("gave {} values where dates were expected", b.column(0).data_type()))
                    })?;
                    held.extend(a.iter().flatten().filter_map(Date32Type::to_naive_date_opt));
                }
            }
        }
    }
    held.sort();
    held.dedup();
    let margin = i64::from(inc.margin_days);
    let mut days: Vec<NaiveDate> =
        held.iter().flat_map(|d| (-margin..=margin).map(move |m| *d + Duration::days(m))).collect();
    days.sort();
    days.dedup();
    Ok(days)
}

/// The files of the table at `dir` (relative to the lake root, latest snapshot) with
/// their value of partition column `key`; none when there is no table yet.
async fn files_with_key(lake: &Lake, dir: &str, key: &str) -> Result<Vec<(ActiveFile, Option<String>)>, JobError> {
    let Some((_, files)) = lake.snapshot_files(dir).await? else { return Ok(vec![]) };
    Ok(files
        .into_iter()
        .map(|f| {
            let v = f.partition_values.get(key).cloned().flatten();
            (f, v)
        })
        .collect())
}

/// The sorted distinct dates of partition column `key` under `dir`.
async fn key_dates(lake: &Lake, dir: &str, key: &str) -> Result<Vec<NaiveDate>, JobError> {
    let mut dates: Vec<NaiveDate> = files_with_key(lake, dir, key)
        .await?
        .into_iter()
        .filter_map(|(_, v)| v.and_then(|v| NaiveDate::parse_from_str(&v, "%Y-%m-%d").ok()))
        .collect();
    dates.sort();
    dates.dedup();
    Ok(dates)
}

/// The output's latest snapshot (created if the job never ran), the files of it a run
/// replaces, and the predicate naming the partitions it recomputes (for the commit's
/// conflict check: another publisher there makes this one fail).
pub(crate) async fn replaced_files(
    lake: &Lake,
    spec: &JobSpec,
    replace: Replace,
) -> Result<(deltalake::DeltaTable, Vec<ActiveFile>, Option<String>), JobError> {
    let key = spec.incremental.as_ref().map(|i| i.key.as_str()).unwrap_or("");
    let (snapshot, files) = lake.table_files(&spec.output.shape()).await?;
    let in_range = |v: Option<&String>| match replace {
        Replace::All => true,
        Replace::KeyRange(a, b) => {
            v.and_then(|v| NaiveDate::parse_from_str(v, "%Y-%m-%d").ok()).is_some_and(|d| a <= d && d <= b)
        }
    };
    let files = files.into_iter().filter(|f| in_range(f.partition_values.get(key).and_then(|v| v.as_ref()))).collect();
    let read = match replace {
        Replace::All => Some("true".to_string()),
        Replace::KeyRange(a, b) => Some(format!("{key} >= '{a}' AND {key} <= '{b}'")),
    };
    Ok((snapshot, files, read))
}
