//! Fresh derived tables after a new model run (issue 17 item 7): when a flush stores
//! forecast rows, the jobs that read `forecasts` run at once for the run dates stored,
//! followed by the jobs that depend on them, instead of waiting for the scheduler's
//! debounce or the next cron tick.
//!
//! Scope. `forecast_daily` is partitioned by run_date and replaces whole partitions, so
//! "that run alone" is computed as its run_date: the run's partition is rewritten with the
//! other runs of that day, every model's, each computed as a full job run would (the
//! same SQL over the same rows), so the result equals the full run's. The jobs downstream
//! (`accuracy_pairs` keyed by observed date, then the per-station accuracy tables) run from
//! the first run date to today: a new run can change a pair only on a day it forecasts
//! that has been observed. Runs of one job never overlap ([`super::runner`]'s lock), so a
//! refresh and a scheduled run of the same job queue behind each other.
//!
//! Runs arriving while a refresh is under way are gathered and served by one next refresh.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::error::JobError;
use super::job_set::topo_order;
use super::runner::{no_progress, run_job_as};
use super::runs::{JobRun, RunStatus};
use super::spec::JobSpec;
use crate::clock::Clock;
use crate::lake::schema::FORECASTS;
use crate::lake::Lake;
pub use crate::models::StoredRun;

/// The trigger recorded in `job_runs` for these runs.
pub const TRIGGER: &str = "new_run";

/// A job of a refresh with the key range it recomputes (`None`: in full).
pub type Refresh<'a> = (&'a JobSpec, Option<(NaiveDate, NaiveDate)>);

/// The jobs a new run changes, in dependency order, with the range each recomputes: the
/// jobs reading `forecasts` over the runs' dates, then every job depending on them
/// (transitively), incremental ones from the first run date to `today`, others in full.
pub fn plan_refresh<'a>(
    specs: &'a [JobSpec],
    runs: &[StoredRun],
    today: NaiveDate,
) -> Result<Vec<Refresh<'a>>, JobError> {
    let (Some(first), Some(last)) =
        (runs.iter().map(StoredRun::run_date).min(), runs.iter().map(StoredRun::run_date).max())
    else {
        return Ok(Vec::new());
    };
    let mut chosen: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    for i in topo_order(specs)? {
        let spec = &specs[i];
        let root = spec.inputs.iter().any(|t| t == FORECASTS.name);
        let downstream = spec.depends_on.iter().any(|d| chosen.contains(d.as_str()));
        if !(root || downstream) || !spec.schedule.on_new_run {
            continue;
        }
        chosen.insert(spec.name.as_str());
        let range = match (&spec.incremental, root) {
            (None, _) => None,
            (Some(_), true) => Some((first, last)),
            (Some(_), false) => Some((first, today.max(last))),
        };
        out.push((spec, range));
    }
    Ok(out)
}

/// Runs the jobs of [`plan_refresh`] one after the other; a job whose dependency failed is
/// skipped. Returns the runs made.
pub async fn refresh_runs(
    lake: &Lake,
    specs: &[JobSpec],
    runs: &[StoredRun],
    today: NaiveDate,
) -> Result<Vec<JobRun>, JobError> {
    let mut failed: HashSet<String> = HashSet::new();
    let mut done = Vec::new();
    for (spec, range) in plan_refresh(specs, runs, today)? {
        if let Some(dep) = spec.depends_on.iter().find(|d| failed.contains(*d)) {
            tracing::warn!(job = %spec.name, dependency = %dep, "fresh run skipped: its dependency failed");
            failed.insert(spec.name.clone());
            continue;
        }
        match run_job_as(lake, spec, range, TRIGGER, &no_progress).await {
            Ok(run) if run.status == RunStatus::Ok => done.push(run),
            Ok(run) => {
                failed.insert(spec.name.clone());
                done.push(run);
            }
            Err(e) => {
                tracing::warn!(job = %spec.name, error = %e, "fresh run failed");
                failed.insert(spec.name.clone());
            }
        }
    }
    Ok(done)
}

/// The runs with forecast rows written at or after `since` (their `inserted_at`): what a
/// batch ingest that started then stored, duplicates it dropped left out.
pub async fn stored_since(lake: &Lake, since: DateTime<Utc>) -> Result<Vec<StoredRun>, JobError> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{DataType, TimestampMicrosecondType};
    let ctx = crate::lake::query::session(lake).await?;
    let sql = "SELECT DISTINCT CAST(model AS VARCHAR) AS model, run_time FROM forecasts \
               WHERE inserted_at >= to_timestamp_micros($1)";
    let params = vec![datafusion::common::ScalarValue::Int64(Some(since.timestamp_micros()))];
    let batches = ctx.sql(sql).await?.with_param_values(params)?.collect().await?;
    let mut pairs = Vec::new();
    for b in &batches {
        let models = datafusion::arrow::compute::cast(b.column(0), &DataType::Utf8)?;
        let models = models.as_string::<i32>();
        let times = b.column(1).as_primitive::<TimestampMicrosecondType>();
        for i in (0..b.num_rows()).filter(|&i| models.is_valid(i) && times.is_valid(i)) {
            if let Some(t) = DateTime::from_timestamp_micros(times.value(i)) {
                pairs.push((models.value(i).to_string(), t));
            }
        }
    }
    Ok(StoredRun::distinct(pairs.iter().map(|(m, t)| (m.as_str(), *t))))
}

/// Spawns the task that refreshes the derived tables for each batch of stored runs
/// received (`WriteService::subscribe_new_runs`), gathering what arrives meanwhile.
/// `clock` is the live service's: its date ends the accuracy jobs' range (a simulated or
/// test clock included). `published` is called after each refresh that published rows, so
/// the server's caches of job tables reload at once (`WriteService::derived_published`).
pub fn spawn_fresh_runs(
    lake: Lake,
    specs: Vec<JobSpec>,
    mut stored: broadcast::Receiver<Vec<StoredRun>>,
    clock: Arc<dyn Clock>,
    published: impl Fn() + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let mut runs: BTreeSet<StoredRun> = match stored.recv().await {
                Ok(r) => r.into_iter().collect(),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    // The scheduler's new-data trigger still recomputes the recent days.
                    tracing::warn!(missed = n, "fresh runs missed notices of stored runs");
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            while let Ok(more) = stored.try_recv() {
                runs.extend(more);
            }
            let runs: Vec<StoredRun> = runs.into_iter().collect();
            let started = std::time::Instant::now();
            match refresh_runs(&lake, &specs, &runs, clock.now().date_naive()).await {
                Ok(done) => {
                    if done.iter().any(|r| r.status == RunStatus::Ok) {
                        published();
                    }
                    tracing::info!(runs = runs.len(), jobs = done.len(), took = ?started.elapsed(), "derived tables fresh")
                }
                Err(e) => tracing::warn!(error = %e, "fresh runs could not be planned"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_refreshes_forecast_daily_for_its_date_then_the_accuracy_jobs() {
        let specs = crate::jobs::embedded_specs().unwrap();
        let t = |s: &str| crate::time::parse_utc(s).unwrap();
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        let runs = StoredRun::distinct(
            [
                ("GFS", t("2026-09-24T06:00:00Z")),
                ("GFS", t("2026-09-24T06:00:00Z")),
                ("HRRR", t("2026-09-23T23:00:00Z")),
            ]
            .into_iter(),
        );
        assert_eq!(runs.len(), 2);
        let plan = plan_refresh(&specs, &runs, d("2026-09-25")).unwrap();
        let names: Vec<(&str, Option<(NaiveDate, NaiveDate)>)> =
            plan.iter().map(|(s, r)| (s.name.as_str(), *r)).collect();
        assert_eq!(names[0], ("forecast_daily", Some((d("2026-09-23"), d("2026-09-24")))));
        let pairs = names.iter().position(|(n, _)| *n == "accuracy_pairs").unwrap();
        assert_eq!(names[pairs].1, Some((d("2026-09-23"), d("2026-09-25"))));
        for n in ["model_accuracy", "accuracy_trends", "accuracy_daily_detail"] {
            let i = names.iter().position(|(x, _)| *x == n).unwrap_or_else(|| panic!("{n} missing: {names:?}"));
            assert!(i > pairs, "{n} after accuracy_pairs");
        }
        assert!(names.iter().all(|(n, _)| *n != "daily_extremes"), "observations are not changed by a run");
        assert!(names.iter().all(|(n, _)| *n != "bracket_scores"), "past checkpoints never saw a new run");
        assert!(plan_refresh(&specs, &[], d("2026-09-25")).unwrap().is_empty());
    }
}
