//! SQL jobs: `jobs/*.toml` declarations running `sql/*.sql` (plain DataFusion SQL) into
//! derived tables of the lake, `derived/<table>/`, Hive-partitioned Parquet that any
//! reader understands and that the API serves.
//!
//! - [`spec`]: the declarations (what a job reads, writes, how it is partitioned and
//!   scheduled), parsed from a directory or from the copies compiled into the binary
//!   ([`embedded`]).
//! - [`runner`]: one run = the job's statements over the inputs, `$from`/`$to` replaced by
//!   the run's range, computed chunk by chunk, written as sorted Parquet per output
//!   partition and published atomically (lake/publish.rs): readers see the old output or
//!   the new one, never a mix, and a failed run leaves the old one.
//! - [`helpers`]: tables computed in Rust for the SQL (local day windows, model cadences,
//!   and [`observed`]: the live engine's daily extremes).
//! - [`runs`]: `job_runs`, the record of every run.
//! - [`tables`]: registering derived tables in any session ([`register_derived`]).
//! - [`schedule`], [`scheduler`]: cron and new-data triggers, one run per job at a time.
//! - [`cli`]: `wxlake jobs list | run <name> [--from D --to D] | run --all | runs`.

pub mod cli;
pub mod embedded;
pub mod helpers;
pub mod observed;
pub mod runner;
pub mod runs;
pub mod schedule;
pub mod scheduler;
pub mod spec;
pub mod tables;

use thiserror::Error;

pub use runner::{run_all, run_job, run_job_as, Progress, Step};
pub use runs::{JobRun, RunStatus};
pub use scheduler::spawn_scheduler;
pub use spec::{embedded_specs, load_specs, JobSpec};
pub use tables::register_derived;

/// Job failures, naming the job, file or statement involved.
#[derive(Debug, Error)]
pub enum JobError {
    #[error("{origin}: {reason}")]
    Spec { origin: String, reason: String },
    #[error("unknown job '{name}' (jobs: {known})")]
    UnknownJob { name: String, known: String },
    #[error("{0}")]
    Cycle(String),
    #[error("job {job}: {reason}")]
    Range { job: String, reason: String },
    #[error("job {job}, {file} statement {statement}: {source}")]
    Sql { job: String, file: String, statement: usize, source: Box<datafusion::error::DataFusionError> },
    #[error("job {job}: output: {reason}")]
    Output { job: String, reason: String },
    #[error("lake: {0}")]
    Lake(#[from] crate::lake::LakeError),
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("arrow: {0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error("parquet: {0}")]
    Parquet(#[from] datafusion::parquet::errors::ParquetError),
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
    #[error("helper table: {0}")]
    Helper(String),
    #[error("task: {0}")]
    Join(String),
}
