//! The lake: partitioned Parquet tables on an object store (local files by default, S3 at
//! scale), written idempotently and read through DataFusion.

pub mod claims;
pub mod compact;
pub mod publish;
pub mod query;
pub mod requests;
pub mod reread;
pub mod rows;
pub mod schema;
pub mod store;
pub mod visibility;
pub mod window;
pub mod writer;

use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;
use object_store::ObjectStore;
use thiserror::Error;

use requests::{CountingStore, RequestCounts};
pub use store::{LakeLocation, DEFAULT_LAKE};
use visibility::VisibleStore;
pub use visibility::KEEP_REPLACED;

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
    /// Another process is replacing (or has just replaced) the same files: this swap
    /// changed nothing and may be retried (claims.rs).
    #[error("concurrent writer: {0}; nothing was changed, retry when it has finished")]
    Conflict(String),
}

impl LakeError {
    /// [`LakeError::Setup`]: `message` (which says the cause), caused by `source`.
    pub fn setup(message: String, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        LakeError::Setup { message, source: Box::new(source) }
    }
}

/// An open lake: its location and its (visibility-aware) store.
#[derive(Debug, Clone)]
pub struct Lake {
    pub location: LakeLocation,
    store: Arc<VisibleStore>,
    /// The requests this lake has made of its backing store.
    counting: Arc<CountingStore>,
    /// Serialises writers inside this process (ingest, flush, compaction): per-partition
    /// dedup reads the existing keys, so two writers of one partition must not interleave.
    write_lock: Arc<tokio::sync::Mutex<()>>,
    /// How long files replaced by a compaction or a publish stay readable for the queries
    /// planned before it (visibility.rs).
    keep_replaced: Duration,
}

impl Lake {
    /// Opens (creating, for local paths) the lake at `url` and finishes any swap a crash
    /// interrupted; replaced files are kept [`KEEP_REPLACED`].
    pub async fn open(url: &str) -> Result<Self, LakeError> {
        Self::open_keeping(url, KEEP_REPLACED).await
    }

    /// [`Lake::open`], keeping the files a swap replaces for `keep_replaced` after it
    /// commits (zero: deleted at once, and a query planned before the swap may fail).
    pub async fn open_keeping(url: &str, keep_replaced: Duration) -> Result<Self, LakeError> {
        let location = store::parse_location(url)?;
        let opened = store::open_store(&location)?;
        let lake = Lake {
            location,
            store: opened.visible,
            counting: opened.counting,
            write_lock: Arc::new(tokio::sync::Mutex::new(())),
            keep_replaced,
        };
        // The first requests: a wrong endpoint, bucket or credential fails here, explained.
        let recovered = lake.store.recover(keep_replaced).await.map_err(|e| store::explain(&lake.location, e))?;
        if recovered.rolled_back > 0 {
            tracing::warn!(recovered.rolled_back, "rolled back interrupted lake swaps");
        }
        if recovered.retired > 0 {
            tracing::info!(recovered.retired, "deleted the files of swaps past their keep time");
        }
        let expired = claims::expire(lake.store.inner(), &lake.claims_root()).await?;
        if expired > 0 {
            tracing::warn!(expired, "dropped the claims of crashed writers");
        }
        Ok(lake)
    }

    /// Deletes the files replaced by swaps that committed more than `keep_replaced` ago
    /// (after each commit, and hourly in `serve`). Never fails the caller: what is not
    /// deleted now is found again by the next call or open.
    pub async fn retire_replaced(&self) {
        match self.store.recover(self.keep_replaced).await {
            Ok(r) if r.retired + r.rolled_back > 0 => {
                tracing::debug!(r.retired, r.rolled_back, "finished lake swaps");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not delete replaced lake files yet"),
        }
    }

    /// How long replaced files stay readable after a swap (see [`Lake::open_keeping`]).
    pub fn keep_replaced(&self) -> Duration {
        self.keep_replaced
    }

    /// Requests made of the backing store since this lake was opened (by every clone).
    pub fn requests(&self) -> RequestCounts {
        self.counting.counts()
    }

    /// Where swaps claim the files they replace (`<root>/_claims/`, see claims.rs).
    pub fn claims_root(&self) -> Path {
        self.location.root.clone().join("_claims")
    }

    /// The store readers and writers use (hides unfinished swaps).
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    pub(crate) fn visible(&self) -> &Arc<VisibleStore> {
        &self.store
    }

    /// Path of a table directory inside the store.
    pub fn table_path(&self, table: &str) -> Path {
        let mut p = self.location.root.clone();
        for part in table.split('/') {
            p = p.clone().join(part);
        }
        p
    }

    /// URL of a table directory, for DataFusion.
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
