//! The lake: Delta Lake tables of partitioned Parquet on an object store (local files by
//! default, S3 at scale), written idempotently and read through DataFusion.

pub mod as_of;
pub mod availability;
pub mod bound_sql;
pub mod compact;
pub mod delta;
pub mod file_groups;
pub mod keys;
pub mod loading_cache;
pub mod newest;
pub mod publish;
pub mod query;
pub mod requests;
pub mod rows;
pub mod schema;
pub mod snapshot_table;
pub mod store;
pub mod time_travel;
pub mod upgrade;
pub mod versions;
pub mod window;
pub mod writer;

use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;
use object_store::ObjectStore;
use thiserror::Error;

use requests::{CountingStore, RequestCounts};
pub use store::{LakeLocation, DEFAULT_LAKE};

/// How long the files a commit replaced stay in the store by default, for the queries
/// planned on an older snapshot and for time travel: longer than an analyst's query
/// usually runs, short enough that a lake compacted hourly holds few extra files.
pub const KEEP_REPLACED: Duration = Duration::from_secs(600);

/// Lake failures, with the object or table involved.
#[derive(Debug, Error)]
pub enum LakeError {
    #[error("lake configuration: {0}")]
    Config(String),
    /// A configuration error caused by another (a URL, the directory, the store's builder):
    /// `message` already ends with the cause's text, which `source` keeps as an error.
    #[error("lake configuration: {message}")]
    Setup {
        message: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
    #[error("arrow: {0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error("parquet: {0}")]
    Parquet(#[from] datafusion::parquet::errors::ParquetError),
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("delta log: {0}")]
    Delta(#[from] deltalake::DeltaTableError),
    #[error("task: {0}")]
    Join(#[source] tokio::task::JoinError),
    /// A statement that would change data or the session, given where only reads are allowed.
    #[error("read-only: {0} (wxlake SQL only reads; rows enter the lake through ingest)")]
    ReadOnly(String),
    #[error("write too large: {0}")]
    TooLarge(&'static str),
    /// The encoders of a write stop when its puts have failed (the put error is returned).
    #[error("write stopped: a file could not be stored")]
    PutAborted,
    /// Another writer committed a change this one overlaps (delta.rs): this commit
    /// changed nothing and may be retried on a new snapshot.
    #[error("concurrent writer: {0}; nothing was changed, retry when it has finished")]
    Conflict(String),
}

impl LakeError {
    /// [`LakeError::Setup`]: `message` (which says the cause), caused by `source`.
    pub fn setup(message: String, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        LakeError::Setup { message, source: Box::new(source) }
    }
}

/// An open lake: its location and its store.
#[derive(Debug, Clone)]
pub struct Lake {
    pub location: LakeLocation,
    /// The backing store, every request counted.
    counting: Arc<CountingStore>,
    /// The Delta tables this process has loaded (delta.rs).
    pub(crate) tables: Arc<delta::Tables>,
    /// Serialises writers inside this process (ingest, flush, compaction): a write reads
    /// the keys its partitions hold, so two writers of one partition would retry each
    /// other's commits; across processes Delta's commit check keeps them apart.
    write_lock: Arc<tokio::sync::Mutex<()>>,
    /// How long files replaced by a commit stay in the store (see [`Lake::vacuum`]).
    keep_replaced: Duration,
}

impl Lake {
    /// Opens (creating, for local paths) the lake at `url`; replaced files are kept
    /// [`KEEP_REPLACED`].
    pub async fn open(url: &str) -> Result<Self, LakeError> {
        Self::open_keeping(url, KEEP_REPLACED).await
    }

    /// [`Lake::open`], keeping the files a commit replaces for `keep_replaced` (zero:
    /// deleted by the next vacuum, and a query planned before the commit may fail).
    pub async fn open_keeping(url: &str, keep_replaced: Duration) -> Result<Self, LakeError> {
        let location = store::parse_location(url)?;
        let counting = store::open_store(&location)?;
        let lake = Lake {
            location,
            counting,
            tables: Arc::default(),
            write_lock: Arc::new(tokio::sync::Mutex::new(())),
            keep_replaced,
        };
        // The first request: a wrong endpoint, bucket or credential fails here, explained.
        let root = lake.location.root.clone();
        lake.counting.list_with_delimiter(Some(&root)).await.map_err(|e| store::explain(&lake.location, e))?;
        Ok(lake)
    }

    /// How long replaced files stay in the store after a commit (see [`Lake::open_keeping`]).
    pub fn keep_replaced(&self) -> Duration {
        self.keep_replaced
    }

    /// Requests made of the backing store since this lake was opened (by every clone).
    pub fn requests(&self) -> RequestCounts {
        self.counting.counts()
    }

    /// The store readers and writers use.
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        self.counting.clone()
    }

    /// The directories of the lake's Delta tables (raw tables at the root, the jobs'
    /// outputs under `derived/`), relative to the root.
    pub async fn table_dirs(&self) -> Result<Vec<String>, LakeError> {
        let mut dirs = Vec::new();
        let mut pending = vec![self.location.root.clone()];
        while let Some(dir) = pending.pop() {
            let listing = self.counting.list_with_delimiter(Some(&dir)).await?;
            if listing.common_prefixes.iter().any(|p| p.filename() == Some("_delta_log")) {
                let rel = dir.as_ref().strip_prefix(self.location.root.as_ref()).unwrap_or(dir.as_ref());
                dirs.push(rel.trim_start_matches('/').to_string());
                continue;
            }
            // Tables sit at the root or one level below (`derived/<table>`).
            if dir == self.location.root || dir.filename() == Some("derived") {
                pending.extend(listing.common_prefixes.into_iter().filter(|p| !is_partition(p)));
            }
        }
        dirs.sort();
        Ok(dirs)
    }

    /// Vacuums every table of the lake ([`Lake::vacuum`]): hourly in `serve`, and after
    /// `wxlake compact`. Never fails the caller.
    pub async fn vacuum_all(&self) -> usize {
        match self.table_dirs().await {
            Ok(dirs) => {
                let mut n = 0;
                for d in dirs {
                    n += self.vacuum(&d).await;
                }
                n
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not list the lake's tables to vacuum them");
                0
            }
        }
    }

    /// Path of a table directory inside the store.
    pub fn table_path(&self, table: &str) -> Path {
        let mut p = self.location.root.clone();
        for part in table.split('/') {
            p = p.clone().join(part);
        }
        p
    }

    /// URL of a table directory (for DataFusion and delta-rs).
    pub fn table_url(&self, table: &str) -> String {
        store::dir_url(&self.location, &self.table_path(table))
    }

    /// A local directory next to the lake for state that is not lake data (keys, WAL,
    /// event log), or `None` for remote lakes (then `--state-dir` is required).
    pub fn default_state_dir(&self) -> Option<std::path::PathBuf> {
        self.location.local_dir.as_ref().map(|d| {
            let name = d.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "lake".into());
            d.with_file_name(format!("{name}.state"))
        })
    }

    pub(crate) async fn lock_writes(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.write_lock.lock().await
    }
}

/// Runs CPU-bound work (which fans out on rayon) off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, LakeError> {
    tokio::task::spawn_blocking(f).await.map_err(LakeError::Join)
}

/// Whether a directory is a Hive partition (`key=value`), not a table.
fn is_partition(p: &Path) -> bool {
    p.filename().is_some_and(|f| f.contains('='))
}
