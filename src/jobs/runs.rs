//! The `job_runs` table: one row per run (ok or failed), under
//! `derived/job_runs/job=<name>/`, visible to SQL as `job_runs` (tables.rs).
//!
//! Each run adds one small file (one Delta append); when a job's partition holds more
//! than [`MERGE_AT`] files they are merged into one by a compaction commit (lake/delta.rs).

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::{concat_batches, sort_to_indices, take_record_batch};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Field, Int64Type, Schema, SchemaRef, TimeUnit, TimestampMicrosecondType,
};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use serde::Serialize;

use super::error::JobError;
use crate::lake::compact::read_file;
use crate::lake::delta::{backoff, Change, NewFile, TableShape, COMMIT_ATTEMPTS};
use crate::lake::writer::new_file_name;
use crate::lake::{Lake, LakeError};
use object_store::ObjectStoreExt;

/// Files per job partition that trigger a merge.
pub const MERGE_AT: usize = 32;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Ok,
    Failed,
    /// Not started because a job it depends on failed (`run_all`).
    Skipped,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Skipped => "skipped",
        }
    }
    fn parse(s: &str) -> Self {
        match s {
            "ok" => RunStatus::Ok,
            "skipped" => RunStatus::Skipped,
            _ => RunStatus::Failed,
        }
    }
}

/// One run of a job, as recorded in `job_runs`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobRun {
    pub job: String,
    pub run_id: String,
    /// `cli`, `schedule`, `new_data`, `dependency`, `api` ...
    pub trigger: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub status: RunStatus,
    /// Rows published.
    pub rows: u64,
    /// Output partitions written.
    pub partitions: u64,
    /// Incremental-key range recomputed; `None` for a full run.
    pub range: Option<(NaiveDate, NaiveDate)>,
    pub error: Option<String>,
}

/// Directory of the table under the lake root.
pub fn dir() -> String {
    "derived/job_runs".to_string()
}

/// The `job_runs` table (partitioned by job, in start order).
pub fn shape() -> TableShape {
    TableShape {
        name: super::spec::JOB_RUNS.to_string(),
        dir: dir(),
        file_schema: file_schema(),
        partition_cols: vec![("job".into(), DataType::Utf8)],
        sort: vec!["started_at".into()],
    }
}

fn ts() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// Columns stored in the files (`job` is the partition).
pub fn file_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("run_id", DataType::Utf8, false),
            Field::new("trigger", DataType::Utf8, false),
            Field::new("started_at", ts(), false),
            Field::new("finished_at", ts(), false),
            Field::new("status", DataType::Utf8, false),
            Field::new("rows", DataType::Int64, false),
            Field::new("partitions", DataType::Int64, false),
            Field::new("range_from", DataType::Date32, true),
            Field::new("range_to", DataType::Date32, true),
            Field::new("error", DataType::Utf8, true),
        ]))
    })
    .clone()
}

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()
}

fn to_batch(runs: &[&JobRun]) -> Result<RecordBatch, JobError> {
    let days = |d: NaiveDate| (d - epoch()).num_days() as i32;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(runs.iter().map(|r| r.run_id.as_str()))),
        Arc::new(StringArray::from_iter_values(runs.iter().map(|r| r.trigger.as_str()))),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(runs.iter().map(|r| r.started_at.timestamp_micros()))
                .with_timezone("UTC"),
        ),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(runs.iter().map(|r| r.finished_at.timestamp_micros()))
                .with_timezone("UTC"),
        ),
        Arc::new(StringArray::from_iter_values(runs.iter().map(|r| r.status.as_str()))),
        Arc::new(Int64Array::from_iter_values(runs.iter().map(|r| r.rows as i64))),
        Arc::new(Int64Array::from_iter_values(runs.iter().map(|r| r.partitions as i64))),
        Arc::new(Date32Array::from(runs.iter().map(|r| r.range.map(|(a, _)| days(a))).collect::<Vec<_>>())),
        Arc::new(Date32Array::from(runs.iter().map(|r| r.range.map(|(_, b)| days(b))).collect::<Vec<_>>())),
        Arc::new(StringArray::from(runs.iter().map(|r| r.error.as_deref()).collect::<Vec<_>>())),
    ];
    Ok(RecordBatch::try_new(file_schema(), cols)?)
}

fn from_batch(job: &str, b: &RecordBatch) -> Result<Vec<JobRun>, JobError> {
    let col = |name: &str| -> Result<&ArrayRef, JobError> {
        b.column_by_name(name)
            .ok_or_else(|| JobError::Output { job: job.into(), reason: format!("job_runs file without {name}") })
    };
    let s = |name: &str| -> Result<&StringArray, JobError> {
        col(name)?
            .as_string_opt::<i32>()
            .ok_or_else(|| JobError::Output { job: job.into(), reason: format!("job_runs.{name} type") })
    };
    let (run_id, trigger, status, error) = (s("run_id")?, s("trigger")?, s("status")?, s("error")?);
    let started = col("started_at")?.as_primitive::<TimestampMicrosecondType>();
    let finished = col("finished_at")?.as_primitive::<TimestampMicrosecondType>();
    let rows = col("rows")?.as_primitive::<Int64Type>();
    let parts = col("partitions")?.as_primitive::<Int64Type>();
    let (rf, rt) = (col("range_from")?.as_primitive::<Date32Type>(), col("range_to")?.as_primitive::<Date32Type>());
    let day = |v: i32| epoch() + chrono::Duration::days(i64::from(v));
    let utc = |v: i64| DateTime::from_timestamp_micros(v).unwrap_or_default();
    Ok((0..b.num_rows())
        .map(|i| JobRun {
            job: job.to_string(),
            run_id: run_id.value(i).to_string(),
            trigger: trigger.value(i).to_string(),
            started_at: utc(started.value(i)),
            finished_at: utc(finished.value(i)),
            status: RunStatus::parse(status.value(i)),
            rows: rows.value(i).max(0) as u64,
            partitions: parts.value(i).max(0) as u64,
            range: (rf.is_valid(i) && rt.is_valid(i)).then(|| (day(rf.value(i)), day(rt.value(i)))),
            error: error.is_valid(i).then(|| error.value(i).to_string()),
        })
        .collect())
}

fn encode(batch: &RecordBatch) -> Result<Bytes, JobError> {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, file_schema(), Some(props))?;
    w.write(batch)?;
    w.close()?;
    Ok(Bytes::from(buf))
}

/// Serialises merges of the job_runs partitions inside this process.
fn merge_lock() -> &'static tokio::sync::Mutex<()> {
    static L: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    L.get_or_init(|| tokio::sync::Mutex::new(()))
}

/// Appends `run` to `job_runs` (and merges the job's files when there are many).
pub async fn record(lake: &Lake, run: &JobRun) -> Result<(), JobError> {
    let shape = shape();
    let partition = format!("job={}", run.job);
    let bytes = encode(&to_batch(&[run])?)?;
    let name = new_file_name();
    let file = NewFile { partition_dir: partition.clone(), name: name.clone(), size: bytes.len() as u64, rows: 1 };
    lake.store().put(&lake.table_path(&format!("{}/{partition}", dir())).join(name.as_str()), bytes.into()).await?;
    // An append reads nothing: it commits on whatever snapshot is newest.
    let mut attempt = 0;
    loop {
        attempt += 1;
        let snapshot = lake.delta_table(&shape).await?;
        match lake.commit(&shape, &snapshot, Change::Append { files: vec![file.clone()], read: None }).await {
            Err(LakeError::Conflict(_)) if attempt < COMMIT_ATTEMPTS => backoff(attempt).await,
            done => {
                done?;
                break;
            }
        }
    }

    let _guard = merge_lock().lock().await;
    let (snapshot, active) = lake.table_files(&shape).await?;
    let files: Vec<_> = active.into_iter().filter(|f| f.partition_dir() == partition).collect();
    if files.len() <= MERGE_AT {
        return Ok(());
    }
    let store = lake.store();
    let mut batches = Vec::new();
    for f in &files {
        batches.extend(read_file(&store, &f.location).await?);
    }
    let merged = concat_batches(&file_schema(), &batches)?;
    let started = merged.column_by_name("started_at").cloned().unwrap_or_else(|| Arc::clone(merged.column(0)));
    let merged = take_record_batch(&merged, &sort_to_indices(&started, None, None)?)?;
    let bytes = encode(&merged)?;
    let name = new_file_name();
    let out = NewFile {
        partition_dir: partition.clone(),
        name: name.clone(),
        size: bytes.len() as u64,
        rows: merged.num_rows() as u64,
    };
    let at = lake.table_path(&format!("{}/{partition}", dir())).join(name.as_str());
    store.put(&at, bytes.into()).await?;
    match lake.commit(&shape, &snapshot, Change::Rewrite { files: vec![out], remove: files }).await {
        Ok(_) => Ok(()),
        // Another process merged them first: its file holds the same runs.
        Err(LakeError::Conflict(_)) => {
            store.delete(&at).await.ok();
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Recorded runs, newest first: of one job, or of all.
pub async fn history(lake: &Lake, job: Option<&str>, limit: usize) -> Result<Vec<JobRun>, JobError> {
    let store = lake.store();
    let (_, files) = lake.table_files(&shape()).await?;
    let mut runs = Vec::new();
    for f in files {
        let Some(Some(name)) = f.partition_values.get("job").cloned() else { continue };
        if job.is_some_and(|j| j != name) {
            continue;
        }
        for b in read_file(&store, &f.location).await? {
            runs.extend(from_batch(&name, &b)?);
        }
    }
    runs.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| b.run_id.cmp(&a.run_id)));
    runs.truncate(limit);
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(job: &str, i: i64, status: RunStatus) -> JobRun {
        let t = DateTime::from_timestamp(1_770_000_000 + i * 60, 0).unwrap();
        JobRun {
            job: job.into(),
            run_id: format!("r{i:03}"),
            trigger: "cli".into(),
            started_at: t,
            finished_at: t + chrono::Duration::seconds(5),
            status,
            rows: i as u64,
            partitions: 1,
            range: (i % 2 == 0)
                .then(|| (NaiveDate::from_ymd_opt(2026, 3, 1).unwrap(), NaiveDate::from_ymd_opt(2026, 3, 2).unwrap())),
            error: (status == RunStatus::Failed).then(|| "boom".to_string()),
        }
    }

    #[tokio::test]
    async fn runs_round_trip_and_merge() {
        let tmp = tempfile::tempdir().unwrap();
        let lake = Lake::open(&tmp.path().join("lake").display().to_string()).await.unwrap();
        for i in 0..(MERGE_AT as i64 + 3) {
            record(&lake, &run("a_job", i, if i == 5 { RunStatus::Failed } else { RunStatus::Ok })).await.unwrap();
        }
        record(&lake, &run("b_job", 100, RunStatus::Ok)).await.unwrap();
        let all = history(&lake, Some("a_job"), 1000).await.unwrap();
        assert_eq!(all.len(), MERGE_AT + 3);
        assert_eq!(all[0], run("a_job", MERGE_AT as i64 + 2, RunStatus::Ok), "newest first, fields round-trip");
        assert_eq!(all.iter().find(|r| r.run_id == "r005").unwrap().error.as_deref(), Some("boom"));
        let (_, files) = lake.table_files(&shape()).await.unwrap();
        let a_job = files.iter().filter(|f| f.partition_dir() == "job=a_job").count();
        assert!(a_job <= 3, "merged: {a_job} files");
        assert_eq!(history(&lake, None, 2).await.unwrap()[0].job, "b_job");
    }
}
