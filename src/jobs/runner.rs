//! Running jobs: one run = the chunks of its plan ([`super::plan`]), each computed in a
//! fresh session with the inputs and the tables computed in Rust registered
//! ([`super::tables::job_session`], [`super::rust_tables`]), the job's statements run with
//! `$from`/`$to` bound to the chunk's bounds ([`super::statements`]), and the rows encoded
//! as sorted Parquet per output partition ([`super::encode`]), staged out of sight. After
//! the last chunk the run publishes in one atomic step (lake/publish.rs): the new files
//! appear and every file of the replaced partitions disappears. Re-running is idempotent;
//! a failure anywhere leaves the previous output untouched. Every run, ok or failed, is
//! recorded in `job_runs`.
//!
//! Runs of one job never overlap inside a process: [`run_job`] waits for the job's lock.
//!
//! On a cluster ([`run_job_on`], [`run_all_on`]: `wxlake jobs run --cluster`) only the
//! statements run there: the session and the helper tables are built here as for a local
//! run (`observed_extremes` replays the lake's observations through the live engine in this
//! process), the session is turned into the cluster's ([`crate::cluster::client`]), and the
//! rows come back here to be encoded, staged and published as above. So a run on the
//! cluster publishes in the same one atomic step, and a failure there (an executor lost
//! for good, a stage failing too often) fails the run before anything is published.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use chrono::{Duration, NaiveDate, Utc};
use parking_lot::Mutex;

use super::encode::encode_blocking;
use super::error::JobError;
use super::job_set::topo_order;
use super::plan::{plan, replaced_files};
use super::runs::{self, JobRun, RunStatus};
use super::rust_tables::{Helpers, Placement};
use super::spec::JobSpec;
use super::statements::{run_statements, Intermediates};
use super::tables::job_session;
use crate::cluster::client::remote_session;
use crate::cluster::SchedulerUrl;
use crate::lake::{query, Lake};

/// What a run is doing, for progress display.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The run starts: `total` chunks to compute.
    Start,
    /// A chunk `[from, to]` of the key range was computed.
    Chunk { from: Option<NaiveDate>, to: Option<NaiveDate> },
    /// Publishing `files` files and replacing `replaced` old ones.
    Publish { files: usize, replaced: usize },
    /// Done.
    Finish,
}

/// Progress of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub job: String,
    pub step: Step,
    /// Chunks computed so far, of `total`.
    pub done: usize,
    pub total: usize,
    /// Output rows so far.
    pub rows: u64,
}

/// A progress callback (the CLI draws a bar; the scheduler logs).
pub type ProgressFn<'a> = dyn Fn(&Progress) + Send + Sync + 'a;

/// A callback that ignores progress.
pub fn no_progress(_: &Progress) {}

/// Runs one job over `range` (inclusive dates of its incremental key; `None` = full run)
/// and records the run. Waits while another run of the same job is in progress.
pub async fn run_job(
    lake: &Lake,
    spec: &JobSpec,
    range: Option<(NaiveDate, NaiveDate)>,
    progress: &ProgressFn<'_>,
) -> Result<JobRun, JobError> {
    run_job_as(lake, spec, range, "cli", progress).await
}

/// [`run_job`] with the trigger recorded in `job_runs` (`cli`, `schedule`, `new_data` ...).
pub async fn run_job_as(
    lake: &Lake,
    spec: &JobSpec,
    range: Option<(NaiveDate, NaiveDate)>,
    trigger: &str,
    progress: &ProgressFn<'_>,
) -> Result<JobRun, JobError> {
    run_job_on(lake, spec, range, trigger, None, progress).await
}

/// [`run_job_as`], the statements run on the cluster of `cluster` when given.
pub async fn run_job_on(
    lake: &Lake,
    spec: &JobSpec,
    range: Option<(NaiveDate, NaiveDate)>,
    trigger: &str,
    cluster: Option<&SchedulerUrl>,
    progress: &ProgressFn<'_>,
) -> Result<JobRun, JobError> {
    let (run, err) = run_recorded(lake, spec, range, trigger, cluster, progress).await;
    match err {
        None => Ok(run),
        Some(e) => Err(e),
    }
}

/// Runs every job in dependency order. Jobs whose dependency failed are skipped (and
/// recorded as such); `range` applies to incremental jobs, the others run in full.
/// Errors only for an inconsistent set of declarations (cycle, unknown dependency).
pub async fn run_all(
    lake: &Lake,
    specs: &[JobSpec],
    range: Option<(NaiveDate, NaiveDate)>,
    progress: &ProgressFn<'_>,
) -> Result<Vec<JobRun>, JobError> {
    run_all_on(lake, specs, range, None, progress).await
}

/// [`run_all`], the statements run on the cluster of `cluster` when given.
pub async fn run_all_on(
    lake: &Lake,
    specs: &[JobSpec],
    range: Option<(NaiveDate, NaiveDate)>,
    cluster: Option<&SchedulerUrl>,
    progress: &ProgressFn<'_>,
) -> Result<Vec<JobRun>, JobError> {
    let order = topo_order(specs)?;
    let mut status: HashMap<&str, RunStatus> = HashMap::new();
    let mut out = Vec::new();
    for i in order {
        let spec = &specs[i];
        let blocked = spec.depends_on.iter().find(|d| status.get(d.as_str()).is_some_and(|s| *s != RunStatus::Ok));
        let run = match blocked {
            Some(dep) => {
                let now = Utc::now();
                let run = JobRun {
                    job: spec.name.clone(),
                    run_id: new_run_id(),
                    trigger: "cli".into(),
                    started_at: now,
                    finished_at: now,
                    status: RunStatus::Skipped,
                    rows: 0,
                    partitions: 0,
                    range: None,
                    error: Some(format!("dependency {dep} did not succeed")),
                };
                record_or_warn(lake, &run).await;
                run
            }
            None => {
                let r = if spec.incremental.is_some() { range } else { None };
                run_recorded(lake, spec, r, "cli", cluster, progress).await.0
            }
        };
        status.insert(spec.name.as_str(), run.status);
        out.push(run);
    }
    Ok(out)
}

fn new_run_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}", Utc::now().format("%Y%m%dT%H%M%S"), &id[..8])
}

/// One lock per job name: runs of a job never overlap inside this process.
fn job_lock(name: &str) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let mut map = LOCKS.get_or_init(Default::default).lock();
    Arc::clone(map.entry(name.to_string()).or_default())
}

async fn record_or_warn(lake: &Lake, run: &JobRun) {
    if let Err(e) = runs::record(lake, run).await {
        tracing::warn!(job = %run.job, run_id = %run.run_id, error = %e, "could not record the run in job_runs");
    }
}

/// Runs and records; returns the recorded run and the error of a failed one.
async fn run_recorded(
    lake: &Lake,
    spec: &JobSpec,
    range: Option<(NaiveDate, NaiveDate)>,
    trigger: &str,
    cluster: Option<&SchedulerUrl>,
    progress: &ProgressFn<'_>,
) -> (JobRun, Option<JobError>) {
    let lock = job_lock(&spec.name);
    let _guard = lock.lock().await;
    let started_at = Utc::now();
    let run_id = new_run_id();
    tracing::info!(job = %spec.name, %run_id, ?range, trigger, "job run starts");
    let result = execute(lake, spec, range, cluster, progress).await;
    let finished_at = Utc::now();
    let mut run = JobRun {
        job: spec.name.clone(),
        run_id,
        trigger: trigger.to_string(),
        started_at,
        finished_at,
        status: RunStatus::Ok,
        rows: 0,
        partitions: 0,
        range,
        error: None,
    };
    let err = match result {
        Ok(o) => {
            run.rows = o.rows;
            run.partitions = o.partitions;
            run.range = o.range;
            tracing::info!(job = %spec.name, rows = o.rows, partitions = o.partitions, "job run ok");
            None
        }
        Err(e) => {
            run.status = RunStatus::Failed;
            run.error = Some(e.to_string());
            tracing::warn!(job = %spec.name, error = %e, "job run failed");
            Some(e)
        }
    };
    record_or_warn(lake, &run).await;
    (run, err)
}

struct Outcome {
    rows: u64,
    partitions: u64,
    range: Option<(NaiveDate, NaiveDate)>,
}

async fn execute(
    lake: &Lake,
    spec: &JobSpec,
    range: Option<(NaiveDate, NaiveDate)>,
    cluster: Option<&SchedulerUrl>,
    progress: &ProgressFn<'_>,
) -> Result<Outcome, JobError> {
    if let Err(e) = lake.clean_staging(Duration::days(1)).await {
        tracing::warn!(error = %e, "could not clean old staged files");
    }
    // A column the declaration gained: the rows already published lack it, so the run
    // recomputes every partition, and the column is declared in the table's schema once
    // that run is published (a run that fails leaves it undeclared: the next one widens
    // again). A job reading another job's output widens only once that output declares all
    // its columns, so its full run reads them filled.
    let widen = lake.undeclared_columns(&spec.output.shape()).await? > 0 && inputs_declared(lake, spec).await?;
    // A declaration whose partition columns changed (forecast_daily's, from model and run
    // date to run date alone): the table's files are laid out by the old ones, so the run
    // recomputes every partition and its publish lays the table out anew in one commit
    // (`Change::Relayout`); until then readers read the old layout (`SnapshotTable`).
    let relayout = lake.layout_differs(&spec.output.shape()).await?;
    let range = if widen || relayout {
        let why = if relayout { "partitioning changed" } else { "gained columns" };
        tracing::info!(job = %spec.name, "the output's {why}: recomputing every partition");
        None
    } else {
        range
    };
    let plan = plan(lake, spec, range).await?;
    let total = plan.chunks.len();
    let mut p = Progress { job: spec.name.clone(), step: Step::Start, done: 0, total, rows: 0 };
    progress(&p);
    let mut publication = lake.begin_publish(spec.output.shape());
    let mut partitions = 0u64;
    let runtime = query::runtime_env(lake)?;
    let mut helpers = Helpers::new(Utc::now());
    // Chunk i+1 is computed while chunk i is sorted and encoded on the blocking pool.
    let computed: Result<(), JobError> = async {
        let mut encoding: Option<(Option<(NaiveDate, NaiveDate)>, tokio::task::JoinHandle<_>)> = None;
        for chunk in plan.chunks.iter().map(Some).chain([None]) {
            let next = match chunk {
                Some(chunk) => {
                    let ctx = job_session(lake, spec, Arc::clone(&runtime)).await?;
                    if let Some((a, b)) = chunk {
                        let placement = if cluster.is_some() { Placement::Cluster } else { Placement::Local };
                        helpers.register(&ctx, &spec.helpers, *a, *b, placement).await?;
                    }
                    let ctx = match cluster {
                        Some(url) => remote_session(&ctx, url).await?,
                        None => ctx,
                    };
                    let intermediates = match cluster {
                        Some(_) => Intermediates::ViewsWhenUsedOnce,
                        None => Intermediates::Tables,
                    };
                    // Each partition's rows in its own order, one partition after another (not
                    // interleaved as they arrive): a query that gives a table partition's rows
                    // together (`bracket_scores`' helper, a batch per date) keeps them so, and
                    // the encoder writes them without gathering them (`encode::rows_of`).
                    let df = run_statements(&ctx, spec, *chunk, intermediates).await?;
                    let batches: Vec<_> = df.collect_partitioned().await?.into_iter().flatten().collect();
                    let (spec2, chunk2) = (spec.clone(), *chunk);
                    Some((*chunk, tokio::task::spawn_blocking(move || encode_blocking(&spec2, &batches, chunk2))))
                }
                None => None,
            };
            if let Some((done, handle)) = std::mem::replace(&mut encoding, next) {
                let t = std::time::Instant::now();
                let files = handle.await.map_err(JobError::Join)??;
                let waited = t.elapsed();
                let mut staged = Vec::with_capacity(files.len());
                for f in files {
                    p.rows += f.rows as u64;
                    partitions += 1;
                    staged.push((f.dir, f.bytes, f.rows as u64));
                }
                publication.stage_all(staged).await?;
                tracing::debug!(job = %spec.name, encode_wait_ms = waited.as_millis() as u64, stage_ms = (t.elapsed() - waited).as_millis() as u64, "chunk staged");
                p.done += 1;
                p.step = Step::Chunk { from: done.map(|c| c.0), to: done.map(|c| c.1) };
                progress(&p);
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = computed {
        publication.abort().await.ok();
        return Err(e);
    }
    let t = std::time::Instant::now();
    let (snapshot, removes, read) = match replaced_files(lake, spec, plan.replace).await {
        Ok(r) => r,
        Err(e) => {
            publication.abort().await.ok();
            return Err(e);
        }
    };
    p.step = Step::Publish { files: publication.len(), replaced: removes.len() };
    progress(&p);
    if relayout {
        publication.commit_relayout(&snapshot, removes).await?;
    } else {
        publication.commit(&snapshot, removes, read).await?;
    }
    tracing::debug!(job = %spec.name, ms = t.elapsed().as_millis() as u64, "published");
    if widen {
        lake.declare_columns(&spec.output.shape()).await?;
    }
    p.step = Step::Finish;
    progress(&p);
    Ok(Outcome { rows: p.rows, partitions, range: plan.range })
}

/// Whether every job output `spec` reads declares all its columns.
async fn inputs_declared(lake: &Lake, spec: &JobSpec) -> Result<bool, JobError> {
    for input in &spec.derived_inputs {
        if lake.undeclared_columns(&input.shape()).await? > 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests;
