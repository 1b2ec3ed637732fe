//! `forecasts.php?mode=daily&as_of=t` when a run was re-published after t.
//!
//! The `forecast_daily` table summarises each run's current values (`lake::versions`), and
//! its `available_at` says from when a summary could be known. That answers as of t for
//! every run not re-published since t. A run whose values were replaced after t had other
//! values at t, which no stored summary holds: its days are summarised again here, by the
//! job's own SQL (`forecast_daily.sql`, run in a session of its own) over the values
//! current at t, and stand in for the stored rows of that run. Rare (a re-publication only
//! comes by a re-ingest), and bounded by the runs concerned.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::TimestampMicrosecondType;
use datafusion::datasource::MemTable;
use datafusion::prelude::{DataFrame, SessionContext};

use super::as_of::forecast_rows;
use super::error::{ApiError, ApiResult};
use crate::jobs::statements::{run_statements, Intermediates};
use crate::jobs::{embedded_specs, rust_tables};
use crate::lake::bound_sql::{utf8_column, Bindings};
use crate::lake::query::{models_table, stations_table};
use crate::lake::schema::SUPERSEDED_AT;

/// A run of one model.
type Run = (String, DateTime<Utc>);

/// The runs of `location` (of `model` when given) with values current at `t` but replaced
/// since, with their run dates.
async fn replaced_since(
    ctx: &SessionContext,
    location: &str,
    model: Option<&str>,
    t: DateTime<Utc>,
) -> ApiResult<Vec<(Run, NaiveDate)>> {
    let mut b = Bindings::new();
    let mut sql = format!(
        "SELECT DISTINCT model, run_time, run_date FROM forecasts \
         WHERE location_name = {} AND {SUPERSEDED_AT} > {} AND available_at <= {} AND run_date <= {}",
        b.str(location),
        b.time(t),
        b.time(t),
        b.partition_date(t.date_naive())
    );
    if let Some(m) = model {
        sql += &format!(" AND model = {}", b.str(m));
    }
    let mut runs = Vec::new();
    for batch in b.collect(ctx, &sql).await? {
        let (m, d) = (utf8_column(&batch, 0)?, utf8_column(&batch, 2)?);
        let (m, d, rt) =
            (m.as_string::<i32>(), d.as_string::<i32>(), batch.column(1).as_primitive::<TimestampMicrosecondType>());
        for i in 0..batch.num_rows() {
            let (Some(run), Ok(date)) =
                (DateTime::from_timestamp_micros(rt.value(i)), NaiveDate::parse_from_str(d.value(i), "%Y-%m-%d"))
            else {
                continue;
            };
            runs.push(((m.value(i).to_string(), run), date));
        }
    }
    Ok(runs)
}

/// `(model = .. AND run_time = ..) OR ..` for `runs`.
fn runs_filter(b: &mut Bindings, runs: &[(Run, NaiveDate)]) -> String {
    let each: Vec<String> =
        runs.iter().map(|((m, rt), _)| format!("(model = {} AND run_time = {})", b.str(m), b.time(*rt))).collect();
    format!("({})", each.join(" OR "))
}

/// A session whose `forecast_daily` is the live one's for `location` as it would have been
/// at `t`, when some of its runs were re-published since; `None` when none was (the live
/// table answers).
pub async fn session(
    ctx: &SessionContext,
    location: &str,
    model: Option<&str>,
    t: DateTime<Utc>,
) -> ApiResult<Option<SessionContext>> {
    let runs = replaced_since(ctx, location, model, t).await?;
    let (Some(from), Some(to)) = (runs.iter().map(|r| r.1).min(), runs.iter().map(|r| r.1).max()) else {
        return Ok(None);
    };
    let scratch = SessionContext::new();
    scratch.register_table("stations", Arc::new(stations_table().map_err(ApiError::internal)?))?;
    scratch.register_table("models", Arc::new(models_table().map_err(ApiError::internal)?))?;

    // The replaced runs' values current at t, marked current (the job keeps current rows).
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT * EXCLUDE ({SUPERSEDED_AT}), arrow_cast(NULL, 'Timestamp(Microsecond, Some(\"UTC\"))') AS {SUPERSEDED_AT} \
         FROM forecasts WHERE location_name = {} AND run_date >= {} AND run_date <= {} AND {} AND {}",
        b.str(location),
        b.partition_date(from),
        b.partition_date(to),
        forecast_rows(&mut b, Some(t), ""),
        runs_filter(&mut b, &runs),
    );
    register(&scratch, "forecasts", b.frame(ctx, &sql).await?).await?;
    let specs = embedded_specs().map_err(ApiError::internal)?;
    let spec =
        specs.iter().find(|s| s.name == "forecast_daily").ok_or_else(|| ApiError::internal("no job forecast_daily"))?;
    rust_tables::Helpers::new(Utc::now())
        .register(&scratch, &spec.helpers, from, to, rust_tables::Placement::Local)
        .await
        .map_err(ApiError::internal)?;
    let summaries =
        run_statements(&scratch, spec, Some((from, to)), Intermediates::Tables).await.map_err(ApiError::internal)?;
    register(&scratch, "fd_replaced", summaries).await?;

    // Every other run of the place as stored (none dated after t can have been available).
    let mut b = Bindings::new();
    let mut sql = format!(
        "SELECT * FROM forecast_daily WHERE location_name = {} AND run_date <= {} AND NOT {}",
        b.str(location),
        b.partition_date(t.date_naive()),
        runs_filter(&mut b, &runs)
    );
    if let Some(m) = model {
        sql += &format!(" AND model = {}", b.str(m));
    }
    register(&scratch, "fd_stored", b.frame(ctx, &sql).await?).await?;
    let columns = "model, CAST(run_date AS VARCHAR) AS run_date, location_name, tz_mode, date, timezone, run_time, \
                   CAST(points_used AS BIGINT) AS points_used, high_f, low_f, high_c, low_c, available_at";
    scratch
        .sql(&format!(
            "CREATE VIEW forecast_daily AS SELECT {columns} FROM fd_stored UNION ALL SELECT {columns} FROM fd_replaced"
        ))
        .await?;
    Ok(Some(scratch))
}

/// Registers the result of `frame` as a table of `scratch`.
async fn register(scratch: &SessionContext, name: &str, frame: DataFrame) -> ApiResult<()> {
    let schema = Arc::new(frame.schema().as_arrow().clone());
    let batches = frame.collect().await?;
    scratch.register_table(name, Arc::new(MemTable::try_new(schema, vec![batches])?))?;
    Ok(())
}
