//! The jobs engine's error: every failure names the job, file or statement involved.

use thiserror::Error;

/// Job failures, naming the job, file or statement involved.
#[derive(Debug, Error)]
pub enum JobError {
    #[error("{origin}: {reason}")]
    Spec { origin: String, reason: String },
    /// A declaration that could not be read or does not parse as TOML.
    #[error("{origin}: {source}")]
    SpecFile {
        origin: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
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
    #[error("table computed in Rust: {column}: {source}")]
    RustTable {
        column: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("task: {0}")]
    Join(#[source] tokio::task::JoinError),
    #[error("cluster: {0}")]
    Cluster(#[from] crate::cluster::ClusterError),
}
