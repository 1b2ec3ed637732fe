//! Whether the write path can still do its job, for `/healthz`: a load balancer routes
//! away from a server whose WAL cannot take a record (disk full, read-only, gone) or whose
//! lake does not answer, and back once it can. Each check is a real operation (a small
//! file written, fsynced and removed in the WAL directory; one listing of the lake's root
//! under a deadline), run at most once per [`PROBE_TTL`], so a health checker polling every
//! second costs one probe per interval and never waits on a hung store for long.
//!
//! Also the classification of a failed write ([`StorageFault`]): a full disk is the
//! operator's to fix (507 on ingest), anything else storage-related may pass (503); both
//! come with a `Retry-After`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use serde::Serialize;

/// How long a probe's answer is reused.
pub const PROBE_TTL: Duration = Duration::from_secs(5);
/// The longest the lake probe waits for one listing: well under a load balancer's
/// health-check timeout.
pub const LAKE_PROBE_DEADLINE: Duration = Duration::from_secs(2);
/// Bytes the WAL probe writes: one page, so a full file system refuses it.
const WAL_PROBE_BYTES: usize = 4096;

/// One part of the write path that cannot do its job now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Fault {
    /// `wal` or `lake`.
    pub part: &'static str,
    /// What failed, as the operating system or the store said it.
    pub reason: String,
}

/// What kind of storage failure an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageFault {
    /// No space left (or a quota reached): nothing is written until space is freed.
    Full,
    /// Storage failed otherwise (an I/O error, a store not answering): may pass.
    Unavailable,
}

impl StorageFault {
    /// The kind of `e`, from the I/O errors in its source chain: ENOSPC or EDQUOT is
    /// [`StorageFault::Full`], any other is [`StorageFault::Unavailable`].
    pub fn of(e: &(dyn std::error::Error + 'static)) -> StorageFault {
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(err) = next {
            // The WAL shares one failed write's error among the records of a group commit.
            let io = err
                .downcast_ref::<std::io::Error>()
                .or_else(|| err.downcast_ref::<std::sync::Arc<std::io::Error>>().map(|a| a.as_ref()));
            if io.is_some_and(|io| {
                io.kind() == std::io::ErrorKind::StorageFull || matches!(io.raw_os_error(), Some(28 | 122))
            }) {
                return StorageFault::Full;
            }
            next = err.source();
        }
        StorageFault::Unavailable
    }
}

/// The cached outcome of the last probes.
#[derive(Debug, Default)]
pub struct Probes {
    last: tokio::sync::Mutex<Option<(Instant, Vec<Fault>)>>,
}

impl Probes {
    /// The faults now: the cached answer while younger than [`PROBE_TTL`], else a new
    /// probe of the WAL directory and the lake (callers arriving meanwhile wait for it).
    pub async fn faults(&self, wal_dir: &Path, lake: &dyn ObjectStore, root: &object_store::path::Path) -> Vec<Fault> {
        let mut last = self.last.lock().await;
        if let Some((_, faults)) = last.as_ref().filter(|(at, _)| at.elapsed() < PROBE_TTL) {
            return faults.clone();
        }
        let dir = wal_dir.to_path_buf();
        let wal = tokio::task::spawn_blocking(move || probe_wal(&dir));
        let lake = probe_lake(lake, root);
        let (wal, lake) = tokio::join!(wal, lake);
        let wal = wal.unwrap_or_else(|e| Some(Fault { part: "wal", reason: format!("probe task failed: {e}") }));
        let faults: Vec<Fault> = wal.into_iter().chain(lake).collect();
        for f in &faults {
            tracing::warn!(part = f.part, reason = %f.reason, "health probe failed");
        }
        *last = Some((Instant::now(), faults.clone()));
        faults
    }
}

/// Writes, fsyncs and removes a page-sized file in the WAL directory.
fn probe_wal(dir: &Path) -> Option<Fault> {
    let path: PathBuf = dir.join(".health-probe");
    let written = (|| {
        let mut f = std::fs::File::create(&path)?;
        f.write_all(&[0u8; WAL_PROBE_BYTES])?;
        f.sync_all()
    })();
    let _ = std::fs::remove_file(&path);
    written
        .err()
        .map(|e| Fault { part: "wal", reason: format!("WAL directory {} is not writable: {e}", dir.display()) })
}

/// Lists the lake's root once, within [`LAKE_PROBE_DEADLINE`].
async fn probe_lake(store: &dyn ObjectStore, root: &object_store::path::Path) -> Option<Fault> {
    match tokio::time::timeout(LAKE_PROBE_DEADLINE, store.list_with_delimiter(Some(root))).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(Fault { part: "lake", reason: format!("the lake does not answer: {e}") }),
        Err(_) => Some(Fault {
            part: "lake",
            reason: format!("the lake did not answer a listing within {} s", LAKE_PROBE_DEADLINE.as_secs()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_told_from_other_failures() {
        let full = std::io::Error::from_raw_os_error(28);
        assert_eq!(StorageFault::of(&full), StorageFault::Full);
        let quota = std::io::Error::from_raw_os_error(122);
        assert_eq!(StorageFault::of(&quota), StorageFault::Full);
        // Wrapped, as the WAL reports it.
        let wrapped =
            crate::write::wal::WalError::WriteFailed(std::sync::Arc::new(std::io::Error::from_raw_os_error(28)));
        assert_eq!(StorageFault::of(&wrapped), StorageFault::Full);
        let eio = std::io::Error::from_raw_os_error(5);
        assert_eq!(StorageFault::of(&eio), StorageFault::Unavailable);
    }

    #[tokio::test]
    async fn probes_find_a_missing_wal_directory_and_cache_their_answer() {
        let dir = tempfile::tempdir().unwrap();
        let store = object_store::memory::InMemory::new();
        let root = object_store::path::Path::from("lake");
        let probes = Probes::default();
        assert!(probes.faults(dir.path(), &store, &root).await.is_empty());
        let gone = dir.path().join("no-such-dir");
        let fresh = Probes::default();
        let faults = fresh.faults(&gone, &store, &root).await;
        assert_eq!(faults.len(), 1, "{faults:?}");
        assert_eq!(faults[0].part, "wal");
        assert!(faults[0].reason.contains("no-such-dir"), "{faults:?}");
        // Within the TTL the first answer stands, even for another directory.
        assert!(probes.faults(&gone, &store, &root).await.is_empty());
    }
}
