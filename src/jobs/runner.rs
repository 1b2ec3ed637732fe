//! Running jobs.
//!
//! A run of an incremental job covers a range of its key (`run_date` for forecast_daily):
//! the given `--from/--to`, or for a full run every key value its source inputs hold (the
//! union of all of them, widened by `margin_days`; see [`JobSpec`]'s `[incremental]`). The
//! range is computed `chunk_days` at a time (bounded memory): each chunk gets a fresh
//! session with the inputs and helpers registered, the job's statements run in order with
//! `$from`/`$to` replaced by the chunk's bounds as `DATE 'YYYY-MM-DD'` literals, and the
//! last statement's rows are cast to the declared output columns, split by output
//! partition, sorted by `sort_by` and encoded as one zstd Parquet file per partition,
//! staged out of sight. After the last chunk the run publishes in one atomic step
//! (lake/publish.rs): the new files appear and every file of the replaced partitions
//! (those whose key lies in the run's range; all of them for a full run) disappears.
//! Re-running is idempotent; a failure anywhere leaves the previous output untouched.
//! Every run, ok or failed, is recorded in `job_runs`.
//!
//! Runs of one job never overlap inside a process: [`run_job`] waits for the job's lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use chrono::{Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{cast, concat_batches, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Date32Type};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::{cast as cast_expr, Expr, LogicalPlan};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::DFParser;
use futures::TryStreamExt;
use object_store::path::Path;
use rayon::prelude::*;
use tracing::warn;

use super::helpers::register_helpers;
use super::runs::{self, JobRun, RunStatus};
use super::spec::{topo_order, JobSpec, OutputSpec};
use super::tables::job_session;
use super::JobError;
use crate::lake::schema;
use crate::lake::writer::new_file_name;
use crate::lake::Lake;

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
    let (run, err) = run_recorded(lake, spec, range, trigger, progress).await;
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
                run_recorded(lake, spec, r, "cli", progress).await.0
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
    let mut map = LOCKS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
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
    progress: &ProgressFn<'_>,
) -> (JobRun, Option<JobError>) {
    let lock = job_lock(&spec.name);
    let _guard = lock.lock().await;
    let started_at = Utc::now();
    let run_id = new_run_id();
    tracing::info!(job = %spec.name, %run_id, ?range, trigger, "job run starts");
    let result = execute(lake, spec, range, progress).await;
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

/// Which output partitions a run replaces.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Replace {
    All,
    KeyRange(NaiveDate, NaiveDate),
}

/// A run's chunks (`None` bounds for a non-incremental job) and what it replaces.
#[derive(Debug, PartialEq)]
struct Plan {
    chunks: Vec<Option<(NaiveDate, NaiveDate)>>,
    replace: Replace,
    range: Option<(NaiveDate, NaiveDate)>,
}

fn split_range(from: NaiveDate, to: NaiveDate, days: u32) -> Vec<Option<(NaiveDate, NaiveDate)>> {
    let mut out = Vec::new();
    let mut a = from;
    while a <= to {
        let b = (a + Duration::days(i64::from(days.max(1)) - 1)).min(to);
        out.push(Some((a, b)));
        a = b + Duration::days(1);
    }
    out
}

async fn plan(lake: &Lake, spec: &JobSpec, range: Option<(NaiveDate, NaiveDate)>) -> Result<Plan, JobError> {
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
            let chunks = match full_range(lake, spec, inc).await? {
                Some((a, b)) => split_range(a, b, inc.chunk_days),
                None => Vec::new(),
            };
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
/// observations come from, began in the early 1990s. See [`plausible_days`].
pub const FULL_RUN_FLOOR: (i32, u32, u32) = (1990, 1, 1);

/// The days a full run's date-column sources may contribute: from [`FULL_RUN_FLOOR`] (or the
/// first day of the lake's observations, one-minute data or forecast runs, if earlier) to
/// today + [`FULL_RUN_FUTURE_DAYS`]. One bogus row (a report dated 1970 or 2099)
/// must not stretch a full run over decades; rows outside are left out of the range, with
/// a warning (a run with `--from/--to` still covers any day asked for).
async fn plausible_days(lake: &Lake) -> Result<(NaiveDate, NaiveDate), JobError> {
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
    Ok((floor.min(today), today + Duration::days(FULL_RUN_FUTURE_DAYS)))
}

/// The days a full run covers: from the first to the last day any of the job's
/// incremental sources holds, widened by `margin_days`; `None` when they hold nothing.
/// Every source counts, not only one: a history loaded as one-minute data or reports
/// alone (its observations only recent) has days the observations' partitions lack.
/// No source day is later than today + [`FULL_RUN_FUTURE_DAYS`], and a date column's days
/// are bounded by [`plausible_days`].
async fn full_range(
    lake: &Lake,
    spec: &JobSpec,
    inc: &super::spec::Incremental,
) -> Result<Option<(NaiveDate, NaiveDate)>, JobError> {
    let (floor, ceiling) = plausible_days(lake).await?;
    let mut bounds: Option<(NaiveDate, NaiveDate)> = None;
    let mut widen = |a: NaiveDate, b: NaiveDate| {
        bounds = Some(bounds.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
    };
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
                if let (Some(&a), Some(&b)) = (dates.first(), dates.last()) {
                    widen(a, b);
                }
            }
            Some(column) => {
                let ctx = job_session(lake, spec).await?;
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
                let inside = format!("{column} BETWEEN DATE '{floor}' AND DATE '{ceiling}'");
                let q = format!(
                    "SELECT min({column}) FILTER (WHERE {inside}), max({column}) FILTER (WHERE {inside}), \
                     count({column}) FILTER (WHERE NOT ({inside})) FROM {}",
                    src.table
                );
                for b in ctx.sql(&q).await?.collect().await? {
                    if b.num_rows() == 0 {
                        continue;
                    }
                    let date = |i: usize| -> Result<Option<NaiveDate>, JobError> {
                        let a = b.column(i).as_primitive_opt::<Date32Type>().ok_or_else(|| {
                            bad(format!("gave {} values where dates were expected", b.column(i).data_type()))
                        })?;
                        Ok(a.is_valid(0).then(|| Date32Type::to_naive_date_opt(a.value(0))).flatten())
                    };
                    let outside = b.column(2).as_primitive_opt::<datafusion::arrow::datatypes::Int64Type>();
                    let outside = outside.filter(|o| o.is_valid(0)).map_or(0, |o| o.value(0));
                    if outside > 0 {
                        warn!(job = %spec.name, source = %src.table, column = %column, rows = outside, from = %floor, to = %ceiling, "full run: rows with implausible dates left out of the range");
                    }
                    if let (Some(a), Some(z)) = (date(0)?, date(1)?) {
                        widen(a, z);
                    }
                }
            }
        }
    }
    let margin = Duration::days(i64::from(inc.margin_days));
    Ok(bounds.map(|(a, b)| (a - margin, b + margin)))
}

/// Every file under `dir` (relative to the lake root) with the `key=` value of its path.
async fn files_with_key(lake: &Lake, dir: &str, key: &str) -> Result<Vec<(Path, Option<String>)>, JobError> {
    let prefix = format!("{key}=");
    let metas: Vec<_> = lake.store().list(Some(&lake.table_path(dir))).try_collect().await?;
    Ok(metas
        .into_iter()
        .filter(|m| m.location.as_ref().ends_with(".parquet"))
        .map(|m| {
            let v = m.location.parts().find_map(|p| p.as_ref().strip_prefix(&prefix).map(str::to_string));
            (m.location, v)
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

/// The visible output files a run replaces.
async fn replaced_files(lake: &Lake, spec: &JobSpec, replace: Replace) -> Result<Vec<Path>, JobError> {
    let key = spec.incremental.as_ref().map(|i| i.key.as_str()).unwrap_or("");
    let files = files_with_key(lake, &spec.output.dir(), key).await?;
    Ok(files
        .into_iter()
        .filter(|(_, v)| match replace {
            Replace::All => true,
            Replace::KeyRange(a, b) => v
                .as_deref()
                .and_then(|v| NaiveDate::parse_from_str(v, "%Y-%m-%d").ok())
                .is_some_and(|d| a <= d && d <= b),
        })
        .map(|(p, _)| p)
        .collect())
}

async fn execute(
    lake: &Lake,
    spec: &JobSpec,
    range: Option<(NaiveDate, NaiveDate)>,
    progress: &ProgressFn<'_>,
) -> Result<Outcome, JobError> {
    if let Err(e) = lake.clean_staging(Duration::days(1)).await {
        tracing::warn!(error = %e, "could not clean old staged files");
    }
    let plan = plan(lake, spec, range).await?;
    let total = plan.chunks.len();
    let mut p = Progress { job: spec.name.clone(), step: Step::Start, done: 0, total, rows: 0 };
    progress(&p);
    let mut publication = lake.begin_publish();
    let mut partitions = 0u64;
    // Chunk i+1 is computed while chunk i is sorted and encoded on the blocking pool.
    let computed: Result<(), JobError> = async {
        let mut encoding: Option<(Option<(NaiveDate, NaiveDate)>, tokio::task::JoinHandle<_>)> = None;
        for chunk in plan.chunks.iter().map(Some).chain([None]) {
            let next = match chunk {
                Some(chunk) => {
                    let ctx = job_session(lake, spec).await?;
                    if let Some((a, b)) = chunk {
                        register_helpers(&ctx, spec, *a, *b).await?;
                    }
                    let batches = run_statements(&ctx, spec, *chunk).await?.collect().await?;
                    let (spec2, chunk2) = (spec.clone(), *chunk);
                    Some((*chunk, tokio::task::spawn_blocking(move || encode_blocking(&spec2, &batches, chunk2))))
                }
                None => None,
            };
            if let Some((done, handle)) = std::mem::replace(&mut encoding, next) {
                let files = handle.await.map_err(|e| JobError::Join(e.to_string()))??;
                for f in files {
                    let path = lake.table_path(&format!("{}/{}", spec.output.dir(), f.dir)).join(new_file_name());
                    publication.stage(path, f.bytes).await?;
                    p.rows += f.rows as u64;
                    partitions += 1;
                }
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
    let removes = match replaced_files(lake, spec, plan.replace).await {
        Ok(r) => r,
        Err(e) => {
            publication.abort().await.ok();
            return Err(e);
        }
    };
    p.step = Step::Publish { files: publication.len(), replaced: removes.len() };
    progress(&p);
    publication.commit(removes).await?;
    p.step = Step::Finish;
    progress(&p);
    Ok(Outcome { rows: p.rows, partitions, range: plan.range })
}

/// True when SQL text uses the `$from` or `$to` parameter.
pub fn mentions_range(sql: &str) -> bool {
    ["$from", "$to"].iter().any(|p| find_param(sql, p).is_some())
}

/// Byte offset of the first `param` not followed by an identifier character.
fn find_param(sql: &str, param: &str) -> Option<usize> {
    let mut start = 0;
    while let Some(i) = sql[start..].find(param) {
        let at = start + i;
        let next = sql[at + param.len()..].chars().next();
        if !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Some(at);
        }
        start = at + param.len();
    }
    None
}

/// Replaces `$from` and `$to` by `DATE 'YYYY-MM-DD'` literals.
pub fn substitute(sql: &str, range: Option<(NaiveDate, NaiveDate)>) -> Result<String, String> {
    let mut text = sql.to_string();
    for (param, value) in [("$from", range.map(|r| r.0)), ("$to", range.map(|r| r.1))] {
        while let Some(at) = find_param(&text, param) {
            let Some(d) = value else {
                return Err(format!("{param} is used but the run has no range"));
            };
            text.replace_range(at..at + param.len(), &format!("DATE '{}'", d.format("%Y-%m-%d")));
        }
    }
    Ok(text)
}

/// Runs the job's statements in `ctx` (inputs and helpers already registered) and returns
/// the last one's result cast to the declared output columns. Shared by the runner and
/// the sqllogictest adapter, so the tests run the very SQL text the job runs.
pub async fn run_statements(
    ctx: &SessionContext,
    spec: &JobSpec,
    range: Option<(NaiveDate, NaiveDate)>,
) -> Result<DataFrame, JobError> {
    let sql_err = |file: &str, statement: usize, e: datafusion::error::DataFusionError| JobError::Sql {
        job: spec.name.clone(),
        file: file.to_string(),
        statement,
        source: Box::new(e),
    };
    let mut statements = Vec::new();
    for f in &spec.sql {
        let text = substitute(&f.text, range)
            .map_err(|r| JobError::Range { job: spec.name.clone(), reason: format!("{}: {r}", f.path) })?;
        let parsed = DFParser::parse_sql(&text).map_err(|e| sql_err(&f.path, 0, e))?;
        for (i, s) in parsed.into_iter().enumerate() {
            statements.push((f.path.as_str(), i + 1, s));
        }
    }
    let Some(last) = statements.pop() else {
        return Err(JobError::Output { job: spec.name.clone(), reason: "the SQL files hold no statement".into() });
    };
    let state = ctx.state();
    for (file, n, s) in statements {
        let plan = state.statement_to_plan(s).await.map_err(|e| sql_err(file, n, e))?;
        ctx.execute_logical_plan(plan)
            .await
            .map_err(|e| sql_err(file, n, e))?
            .collect()
            .await
            .map_err(|e| sql_err(file, n, e))?;
    }
    let (file, n, s) = last;
    let plan = state.statement_to_plan(s).await.map_err(|e| sql_err(file, n, e))?;
    if matches!(plan, LogicalPlan::Ddl(_) | LogicalPlan::Dml(_) | LogicalPlan::Copy(_) | LogicalPlan::Statement(_)) {
        return Err(sql_err(
            file,
            n,
            datafusion::error::DataFusionError::Plan("the last statement must be a query producing the output".into()),
        ));
    }
    let df = ctx.execute_logical_plan(plan).await.map_err(|e| sql_err(file, n, e))?;
    conform(df, spec).map_err(|e| match e {
        JobError::DataFusion(d) => sql_err(file, n, d),
        other => other,
    })
}

/// Selects the declared columns, in declared order, cast to their declared types.
fn conform(df: DataFrame, spec: &JobSpec) -> Result<DataFrame, JobError> {
    let bad = |reason: String| JobError::Output { job: spec.name.clone(), reason };
    let produced: Vec<String> = df.schema().fields().iter().map(|f| f.name().clone()).collect();
    for p in &produced {
        if !spec.output.columns.iter().any(|c| &c.name == p) {
            return Err(bad(format!("the query produces column {p}, which [output].columns does not declare")));
        }
    }
    let mut exprs = Vec::new();
    for c in &spec.output.columns {
        let Some(field) = df.schema().fields().iter().find(|f| f.name() == &c.name) else {
            return Err(bad(format!(
                "declared column {} is missing from the query (it produces {})",
                c.name,
                produced.join(", ")
            )));
        };
        let want = c.kind.data_type();
        let e = Expr::Column(datafusion::common::Column::new_unqualified(&c.name));
        exprs.push(if field.data_type() == &want { e } else { cast_expr(e, want).alias(&c.name) });
    }
    Ok(df.select(exprs)?)
}

/// One encoded output file.
pub struct OutputFile {
    /// Partition directory relative to the table (`model=GFS/run_date=2026-03-07`).
    pub dir: String,
    pub bytes: Bytes,
    pub rows: usize,
}

/// Splits the output by partition, checks it against the declaration and the chunk's key
/// range, sorts each partition and encodes it (on rayon).
pub async fn encode_output(
    spec: &JobSpec,
    batches: Vec<RecordBatch>,
    chunk: Option<(NaiveDate, NaiveDate)>,
) -> Result<Vec<OutputFile>, JobError> {
    let spec = spec.clone();
    tokio::task::spawn_blocking(move || encode_blocking(&spec, &batches, chunk))
        .await
        .map_err(|e| JobError::Join(e.to_string()))?
}

fn encode_blocking(
    spec: &JobSpec,
    batches: &[RecordBatch],
    chunk: Option<(NaiveDate, NaiveDate)>,
) -> Result<Vec<OutputFile>, JobError> {
    let bad = |reason: String| JobError::Output { job: spec.name.clone(), reason };
    let out = &spec.output;
    let schema = out.schema();
    let Some(all) = output_batch(spec, batches)? else { return Ok(Vec::new()) };

    // Partition of every row: the columns' distinct values are checked (usable in a path,
    // key inside the range) and numbered once; rows are grouped by their numbers.
    let key = spec.incremental.as_ref().map(|i| i.key.as_str());
    let mut row_keys = vec![0u64; all.num_rows()];
    let mut names: Vec<Vec<String>> = Vec::new();
    for p in &out.partition_by {
        let col = all.column_by_name(p).ok_or_else(|| bad(format!("partition column {p} missing")))?;
        let (values, ids) = partition_values(col, p, &bad)?;
        if Some(p.as_str()) == key {
            for v in &values {
                let d = NaiveDate::parse_from_str(v, "%Y-%m-%d")
                    .map_err(|_| bad(format!("incremental key {p} = '{v}' is not a YYYY-MM-DD date")))?;
                if let Some((a, b)) = chunk {
                    if d < a || d > b {
                        return Err(bad(format!("a row has {p} = {d}, outside the run's range {a}..{b}")));
                    }
                }
            }
        }
        let radix = values.len() as u64;
        for (k, id) in row_keys.iter_mut().zip(ids) {
            *k = *k * radix + u64::from(id);
        }
        names.push(values);
    }
    let mut groups: HashMap<u64, Vec<u32>> = HashMap::new();
    for (row, k) in row_keys.iter().enumerate() {
        groups.entry(*k).or_default().push(row as u32);
    }
    let groups: Vec<(String, Vec<u32>)> = groups
        .into_values()
        .map(|rows| {
            let mut k = row_keys[rows[0] as usize];
            let mut parts = Vec::with_capacity(names.len());
            for (p, values) in out.partition_by.iter().zip(&names).rev() {
                let radix = values.len() as u64;
                parts.push(format!("{p}={}", values[(k % radix) as usize]));
                k /= radix;
            }
            parts.reverse();
            (parts.join("/"), rows)
        })
        .collect();

    let file_schema = out.file_schema();
    let keep: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| !out.partition_by.contains(f.name()))
        .map(|(i, _)| i)
        .collect();
    let props = writer_props(out);
    groups
        .into_par_iter()
        .map(|(dir, rows)| {
            let part = take_record_batch(&all, &UInt32Array::from(rows))?.project(&keep)?;
            let part = RecordBatch::try_new(Arc::clone(&file_schema), part.columns().to_vec())?;
            let part = sort_by(&part, &out.sort_by)?;
            let mut buf = Vec::with_capacity(part.get_array_memory_size() / 4 + 1024);
            let mut w = ArrowWriter::try_new(&mut buf, Arc::clone(&file_schema), Some(props.clone()))?;
            w.write(&part)?;
            w.close()?;
            Ok(OutputFile { dir, bytes: Bytes::from(buf), rows: part.num_rows() })
        })
        .collect()
}

/// The query's rows as one batch of the declared output schema (types and nullability
/// checked); `None` when there are no rows.
pub fn output_batch(spec: &JobSpec, batches: &[RecordBatch]) -> Result<Option<RecordBatch>, JobError> {
    let bad = |reason: String| JobError::Output { job: spec.name.clone(), reason };
    let schema = spec.output.schema();
    if batches.iter().all(|b| b.num_rows() == 0) {
        return Ok(None);
    }
    let all = concat_batches(&batches[0].schema(), batches)?;
    let mut cols = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let c = all.column_by_name(f.name()).ok_or_else(|| bad(format!("column {} missing", f.name())))?;
        if !f.is_nullable() && c.null_count() > 0 {
            return Err(bad(format!(
                "column {} is declared non-null but has {} null value(s)",
                f.name(),
                c.null_count()
            )));
        }
        cols.push(if c.data_type() == f.data_type() { Arc::clone(c) } else { cast(c, f.data_type())? });
    }
    Ok(Some(RecordBatch::try_new(schema, cols)?))
}

/// The distinct path strings of a partition column (strings as they are, dates as
/// YYYY-MM-DD) and each row's index into them.
fn partition_values(
    a: &ArrayRef,
    name: &str,
    bad: &dyn Fn(String) -> JobError,
) -> Result<(Vec<String>, Vec<u32>), JobError> {
    if a.null_count() > 0 {
        return Err(bad(format!("partition column {name} has null values")));
    }
    let mut values: Vec<String> = Vec::new();
    let mut ids = Vec::with_capacity(a.len());
    if a.data_type() == &DataType::Date32 {
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
        let mut seen: HashMap<i32, u32> = HashMap::new();
        for d in a.as_primitive::<Date32Type>().values().iter() {
            let id = *seen.entry(*d).or_insert_with(|| {
                values.push((epoch + Duration::days(i64::from(*d))).format("%Y-%m-%d").to_string());
                values.len() as u32 - 1
            });
            ids.push(id);
        }
    } else {
        let s = cast(a, &DataType::Utf8)?;
        let mut seen: HashMap<&str, u32> = HashMap::new();
        for v in s.as_string::<i32>().iter() {
            let v = v.unwrap_or_default();
            let id = match seen.get(v) {
                Some(id) => *id,
                None => {
                    values.push(v.to_string());
                    let id = values.len() as u32 - 1;
                    seen.insert(v, id);
                    id
                }
            };
            ids.push(id);
        }
    }
    let unusable = |v: &String| {
        v.is_empty() || v.contains(['/', '\\']) || v.chars().any(char::is_control) || v == "." || v == ".."
    };
    if let Some(v) = values.iter().find(|v| unusable(v)) {
        return Err(bad(format!("partition column {name} has value '{v}', unusable in a path")));
    }
    Ok((values, ids))
}

/// Sorts by `cols` (compared in the row format: one byte comparison per pair of rows),
/// unless the batch is sorted already.
fn sort_by(batch: &RecordBatch, cols: &[String]) -> Result<RecordBatch, JobError> {
    if cols.is_empty() || batch.num_rows() < 2 {
        return Ok(batch.clone());
    }
    let arrays: Vec<ArrayRef> = cols.iter().filter_map(|c| batch.column_by_name(c)).cloned().collect();
    let converter = RowConverter::new(arrays.iter().map(|a| SortField::new(a.data_type().clone())).collect())?;
    let rows = converter.convert_columns(&arrays)?;
    if (1..rows.num_rows()).all(|i| rows.row(i - 1) <= rows.row(i)) {
        return Ok(batch.clone());
    }
    let mut idx: Vec<u32> = (0..rows.num_rows() as u32).collect();
    idx.sort_unstable_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
    Ok(take_record_batch(batch, &UInt32Array::from(idx))?)
}

/// The lake's Parquet settings with the output's sort order.
fn writer_props(out: &OutputSpec) -> WriterProperties {
    crate::lake::writer::props_for(&out.file_schema(), &out.sort_by)
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, TimeZone};

    use super::*;
    use crate::decode::types::ForecastRow;
    use crate::jobs::spec::{find, load_specs, parse_spec};
    use crate::jobs::tables::register_derived_with;
    use crate::lake::query;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn rows(
        model: &'static str,
        station: &str,
        run: DateTime<Utc>,
        leads: impl Iterator<Item = i32>,
        offset: f64,
    ) -> Vec<ForecastRow> {
        leads
            .map(|h| {
                let mut r = ForecastRow {
                    model,
                    location_name: station.into(),
                    run_time: run,
                    valid_time: run + Duration::hours(i64::from(h)),
                    forecast_hour: h,
                    temperature_c: Some(f64::from(h) / 10.0 + offset).into(),
                    ..Default::default()
                };
                r.complete_temperatures();
                r
            })
            .collect()
    }

    async fn lake() -> (tempfile::TempDir, Lake) {
        let tmp = tempfile::tempdir().unwrap();
        let lake = Lake::open(&tmp.path().join("lake").display().to_string()).await.unwrap();
        (tmp, lake)
    }

    fn forecast_daily() -> JobSpec {
        let specs = load_specs(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs")).unwrap();
        find(&specs, "forecast_daily").unwrap().clone()
    }

    async fn scalar(lake: &Lake, spec: &JobSpec, q: &str) -> String {
        let ctx = query::session(lake).await.unwrap();
        register_derived_with(&ctx, lake, std::slice::from_ref(spec)).unwrap();
        let b = ctx.sql(q).await.unwrap().collect().await.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&b).unwrap().to_string();
        text.lines()
            .filter(|l| l.starts_with('|'))
            .skip(1)
            .map(|l| l.trim_matches('|').split('|').map(str::trim).collect::<Vec<_>>().join(" | "))
            .collect::<Vec<_>>()
            .join(";")
    }

    async fn output_files(lake: &Lake, spec: &JobSpec) -> Vec<Path> {
        replaced_files(lake, spec, Replace::All).await.unwrap()
    }

    #[tokio::test]
    async fn runs_publish_replace_and_record() {
        let (_tmp, lake) = lake().await;
        let spec = forecast_daily();
        let r1 = Utc.with_ymd_and_hms(2026, 1, 10, 0, 0, 0).unwrap();
        let r2 = Utc.with_ymd_and_hms(2026, 1, 11, 0, 0, 0).unwrap();
        let mut input = rows("GFS", "KNYC", r1, 0..=72, 0.0);
        input.extend(rows("GFS", "EGLC", r1, 0..=72, 0.0));
        input.extend(rows("ICON", "KNYC", r2, 0..=72, 0.0));
        lake.write(input).await.unwrap();

        // Full run: every run_date of the forecasts.
        let seen = Mutex::new(Vec::new());
        let run = run_job(&lake, &spec, None, &|p: &Progress| seen.lock().unwrap().push(p.step.clone())).await.unwrap();
        assert_eq!(run.status, RunStatus::Ok);
        assert_eq!(run.partitions, 2, "model=GFS/run_date=2026-01-10, model=ICON/run_date=2026-01-11");
        let total = scalar(&lake, &spec, "SELECT count(*) FROM forecast_daily").await;
        assert_eq!(total, run.rows.to_string());
        assert_eq!(
            scalar(
                &lake,
                &spec,
                "SELECT count(*) FROM forecast_daily WHERE location_name = 'EGLC' AND tz_mode = 'civil'"
            )
            .await,
            "3"
        );
        assert_eq!(
            scalar(&lake, &spec, "SELECT high_f IS NULL, high_c FROM forecast_daily WHERE location_name = 'EGLC' AND tz_mode = 'civil' AND date = DATE '2026-01-10'").await,
            "true | 2.3"
        );
        let steps = seen.into_inner().unwrap();
        assert_eq!(steps.first(), Some(&Step::Start));
        assert_eq!(steps.last(), Some(&Step::Finish));
        let files = output_files(&lake, &spec).await;
        assert_eq!(files.len(), 2);

        // A long-lived session (the API's) sees republished output.
        let long_lived = query::session(&lake).await.unwrap();
        register_derived_with(&long_lived, &lake, std::slice::from_ref(&spec)).unwrap();
        let count = |ctx: SessionContext| async move {
            let b = ctx.sql("SELECT count(DISTINCT run_time) FROM forecast_daily WHERE model = 'GFS'").await.unwrap();
            let b = b.collect().await.unwrap();
            b[0].column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0)
        };
        assert_eq!(count(long_lived.clone()).await, 1);

        // Re-run one day after new data: only that partition's file changes.
        lake.write(rows("GFS", "KNYC", r1 + Duration::hours(6), 0..=72, 0.0)).await.unwrap();
        let run2 = run_job(&lake, &spec, Some((d("2026-01-10"), d("2026-01-10"))), &no_progress).await.unwrap();
        assert_eq!(run2.range, Some((d("2026-01-10"), d("2026-01-10"))));
        let after = output_files(&lake, &spec).await;
        assert_eq!(after.len(), 2);
        assert!(!after.contains(&files.iter().find(|p| p.as_ref().contains("model=GFS")).unwrap().clone()));
        let icon: Vec<_> = files.iter().filter(|p| p.as_ref().contains("model=ICON")).collect();
        assert!(icon.iter().all(|p| after.contains(p)), "the ICON partition (2026-01-11) is untouched");
        assert_eq!(
            scalar(&lake, &spec, "SELECT count(DISTINCT run_time) FROM forecast_daily WHERE model = 'GFS'").await,
            "2"
        );

        // Idempotent: the same range again gives the same rows.
        let before = scalar(&lake, &spec, "SELECT count(*), sum(points_used), sum(high_f) FROM forecast_daily").await;
        run_job(&lake, &spec, Some((d("2026-01-10"), d("2026-01-11"))), &no_progress).await.unwrap();
        run_job(&lake, &spec, None, &no_progress).await.unwrap();
        assert_eq!(
            scalar(&lake, &spec, "SELECT count(*), sum(points_used), sum(high_f) FROM forecast_daily").await,
            before
        );
        assert_eq!(output_files(&lake, &spec).await.len(), 2);

        // Everything recorded, newest first; nothing left staged.
        let hist = runs::history(&lake, Some("forecast_daily"), 10).await.unwrap();
        assert_eq!(hist.len(), 4);
        assert!(hist.iter().all(|r| r.status == RunStatus::Ok));
        assert_eq!(
            scalar(&lake, &spec, "SELECT count(*) FROM job_runs WHERE job = 'forecast_daily' AND status = 'ok'").await,
            "4"
        );
        let staged: Vec<_> = lake.store().list(Some(&lake.staging_root())).try_collect().await.unwrap();
        assert!(staged.is_empty());
    }

    #[tokio::test]
    async fn a_failed_run_leaves_the_previous_output() {
        let (_tmp, lake) = lake().await;
        let good = forecast_daily();
        let r1 = Utc.with_ymd_and_hms(2026, 1, 10, 0, 0, 0).unwrap();
        lake.write(rows("GFS", "KNYC", r1, 0..=72, 0.0)).await.unwrap();
        run_job(&lake, &good, None, &no_progress).await.unwrap();
        let before = scalar(&lake, &good, "SELECT count(*), sum(high_f) FROM forecast_daily").await;
        let files = output_files(&lake, &good).await;

        // Same output table, SQL failing at run time: nothing changes, the failure is recorded.
        let mut bad = good.clone();
        bad.sql[0].text = good.sql[0].text.replace("FROM fd_days d", "FROM fd_days d JOIN no_such_table x ON true");
        lake.write(rows("GFS", "KNYC", r1 + Duration::hours(6), 0..=72, 5.0)).await.unwrap();
        let e = run_job(&lake, &bad, Some((d("2026-01-10"), d("2026-01-10"))), &no_progress).await.unwrap_err();
        assert!(e.to_string().contains("no_such_table"), "{e}");
        assert_eq!(scalar(&lake, &good, "SELECT count(*), sum(high_f) FROM forecast_daily").await, before);
        assert_eq!(output_files(&lake, &good).await, files);
        let last = &runs::history(&lake, Some("forecast_daily"), 1).await.unwrap()[0];
        assert_eq!(last.status, RunStatus::Failed);
        assert!(last.error.as_deref().unwrap_or("").contains("no_such_table"));

        // Output outside the declared range or contract is refused before publishing.
        let mut outside = good.clone();
        outside.sql[0].text = good.sql[0]
            .text
            .replace("d.run_date,\n    d.location_name", "'2030-01-01' AS run_date,\n    d.location_name");
        let e = run_job(&lake, &outside, Some((d("2026-01-10"), d("2026-01-10"))), &no_progress).await.unwrap_err();
        assert!(e.to_string().contains("outside the run's range"), "{e}");
        let mut undeclared = good.clone();
        undeclared.sql[0].text =
            good.sql[0].text.replace("d.points AS points_used,", "d.points AS points_used, 1 AS extra,");
        let e = run_job(&lake, &undeclared, None, &no_progress).await.unwrap_err();
        assert!(e.to_string().contains("extra"), "{e}");
        assert_eq!(scalar(&lake, &good, "SELECT count(*), sum(high_f) FROM forecast_daily").await, before);
    }

    #[tokio::test]
    async fn ranges_are_checked_and_chunked() {
        let (_tmp, lake) = lake().await;
        let spec = forecast_daily();
        // Before any run the derived tables exist and are empty.
        let ctx = query::session(&lake).await.unwrap();
        crate::jobs::register_derived(&ctx, &lake).await.unwrap();
        for t in ["forecast_daily", "job_runs"] {
            let n = ctx.sql(&format!("SELECT count(*) FROM {t}")).await.unwrap().collect().await.unwrap();
            assert_eq!(n[0].column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0), 0, "{t}");
        }
        let e = run_job(&lake, &spec, Some((d("2026-01-12"), d("2026-01-10"))), &no_progress).await.unwrap_err();
        assert!(e.to_string().contains("after"), "{e}");
        assert_eq!(split_range(d("2026-01-01"), d("2026-01-15"), 7).len(), 3);
        assert_eq!(split_range(d("2026-01-01"), d("2026-01-15"), 7)[2], Some((d("2026-01-15"), d("2026-01-15"))));
        // An empty lake: a full run publishes nothing and succeeds.
        let run = run_job(&lake, &spec, None, &no_progress).await.unwrap();
        assert_eq!((run.rows, run.partitions), (0, 0));

        let plain = parse_spec(
            "t",
            "name = \"plain\"\nsql = \"q.sql\"\n[output]\ntable = \"plain\"\ncolumns = [{ name = \"n\", type = \"bigint\" }]\n",
            &|_| Ok("SELECT count(*) AS n FROM stations".into()),
        )
        .unwrap();
        let e = run_job(&lake, &plain, Some((d("2026-01-10"), d("2026-01-10"))), &no_progress).await.unwrap_err();
        assert!(e.to_string().contains("incremental"), "{e}");
        let run = run_job(&lake, &plain, None, &no_progress).await.unwrap();
        assert_eq!(run.rows, 1);
        assert_eq!(scalar(&lake, &plain, "SELECT n FROM plain").await, "70");
    }

    #[test]
    fn parameters_are_substituted_as_date_literals() {
        let r = Some((d("2026-01-10"), d("2026-01-12")));
        assert_eq!(
            substitute("x BETWEEN $from AND $to, $from_x, $tox", r).unwrap(),
            "x BETWEEN DATE '2026-01-10' AND DATE '2026-01-12', $from_x, $tox"
        );
        assert!(substitute("x > $from", None).is_err());
        assert!(mentions_range("a >= $to)"));
        assert!(!mentions_range("a >= $today"));
    }

    /// An incremental job whose full-run days come from a column of a derived table
    /// (`[incremental] source = "forecast_daily.model"`): the spec cannot check the type
    /// when it is loaded; a full run refuses with a clear error instead of panicking.
    fn by_days(source: &str, input: &str) -> JobSpec {
        let toml = format!(
            "name = \"by_days\"\nsql = \"q.sql\"\ninputs = [\"{input}\"]\n[output]\ntable = \"by_days\"\n\
             partition_by = [\"d\"]\ncolumns = [{{ name = \"d\", type = \"date\" }}, {{ name = \"n\", type = \"bigint\" }}]\n\
             [incremental]\nkey = \"d\"\nsource = \"{source}\"\n"
        );
        parse_spec("t", &toml, &|_| Ok("SELECT DATE '2026-01-10' AS d, count(*) AS n FROM stations WHERE DATE '2026-01-10' BETWEEN $from AND $to".into()))
            .unwrap()
    }

    #[tokio::test]
    async fn a_derived_source_column_that_is_not_a_date_is_refused() {
        let (_tmp, lake) = lake().await;
        let mut spec = by_days("forecast_daily.model", "forecast_daily");
        spec.derived_inputs = vec![forecast_daily().output];
        let e = run_job(&lake, &spec, None, &no_progress).await.unwrap_err();
        assert!(e.to_string().contains("forecast_daily.model is Utf8, not a date"), "{e}");
        let mut missing = by_days("forecast_daily.nope", "forecast_daily");
        missing.derived_inputs = vec![forecast_daily().output];
        let e = run_job(&lake, &missing, None, &no_progress).await.unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    /// One report dated 1970 and one dated 2099 do not stretch a full run over decades:
    /// the range is the plausible days (FULL_RUN_FLOOR or older lake data, today + 2).
    #[tokio::test]
    async fn bogus_report_dates_do_not_stretch_a_full_run() {
        use crate::decode::types::{DailyKind, DailyReport};
        let (_tmp, lake) = lake().await;
        let spec = by_days("reports.report_date", "reports");
        let inc = spec.incremental.clone().unwrap();
        let today = Utc::now().date_naive();
        let report = |date: NaiveDate| DailyReport::blank(DailyKind::Cli, "KNYC", date);
        lake.write(vec![report(d("1970-01-01")), report(d("1995-06-01")), report(today - Duration::days(3))])
            .await
            .unwrap();
        lake.write(vec![report(d("2099-01-01")), report(today + Duration::days(40))]).await.unwrap();
        assert_eq!(full_range(&lake, &spec, &inc).await.unwrap(), Some((d("1995-06-01"), today - Duration::days(3))));
        // Forecasts older than the floor make it earlier: a 1985 report is then plausible.
        lake.write(rows("GFS", "KNYC", Utc.with_ymd_and_hms(1985, 1, 10, 0, 0, 0).unwrap(), 0..=3, 0.0)).await.unwrap();
        lake.write(vec![report(d("1985-02-01"))]).await.unwrap();
        assert_eq!(full_range(&lake, &spec, &inc).await.unwrap(), Some((d("1985-02-01"), today - Duration::days(3))));
    }
}
