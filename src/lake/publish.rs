//! Atomic publication of many new files replacing many old ones (the derived tables of
//! the SQL jobs), on the transaction records of visibility.rs.
//!
//! A long job writes its files to `_staging/<id>/` first, outside every table directory,
//! so nothing is visible and no transaction record is open while it computes. Commit is
//! short: a `writing` record naming the final paths (hidden from now on), a rename of each
//! staged file into place (a filesystem rename locally; copy + delete on S3), the record
//! flipped to `committed` (one atomic put: the new files appear and the replaced ones
//! disappear together); the replaced files and the record are deleted once the lake's
//! keep time has passed (queries planned before the flip still read them). A crash
//! before the flip rolls back on the next open, after it rolls forward (visibility.rs);
//! staged files a crash leaves behind are never visible and [`Lake::clean_staging`]
//! removes them.
//!
//! Before its record, a commit claims the files it replaces, and a replacing commit
//! ([`Publication::commit_replacing`], the jobs') the directories it writes too
//! (claims.rs): when two processes run the same job at once, one publishes and the other
//! fails with [`LakeError::Conflict`], never both outputs side by side.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::claims::Claims;
use super::visibility::{delete_if_present, TxnRecord, TxnState};
use super::{Lake, LakeError};

/// Concurrent store operations of one stage or commit (a full recompute of a job moves
/// thousands of files; on S3 each is a round trip).
const CONCURRENCY: usize = 32;

/// Files staged for one atomic publication; see the module docs.
#[derive(Debug)]
pub struct Publication {
    lake: Lake,
    id: String,
    /// `(staged path, final path)`.
    staged: Vec<(Path, Path)>,
}

impl Lake {
    /// Where publications stage their files (`<root>/_staging/`).
    pub fn staging_root(&self) -> Path {
        self.location.root.clone().join("_staging")
    }

    /// Starts a publication.
    pub fn begin_publish(&self) -> Publication {
        Publication { lake: self.clone(), id: uuid::Uuid::new_v4().simple().to_string(), staged: Vec::new() }
    }

    /// Publishes `adds` and hides `removes` in one atomic step for readers.
    pub async fn publish(&self, adds: Vec<(Path, Bytes)>, removes: Vec<Path>) -> Result<(), LakeError> {
        let mut p = self.begin_publish();
        if let Err(e) = p.stage_all(adds).await {
            p.abort().await.ok();
            return Err(e);
        }
        p.commit(removes).await
    }

    /// Deletes staged files older than `age` (left by crashed or killed runs).
    pub async fn clean_staging(&self, age: chrono::Duration) -> Result<usize, LakeError> {
        let cutoff = chrono::Utc::now() - age;
        let inner = Arc::clone(self.visible().inner());
        let old: Vec<Path> = inner
            .list(Some(&self.staging_root()))
            .try_filter_map(|m| futures::future::ready(Ok((m.last_modified < cutoff).then_some(m.location))))
            .try_collect()
            .await?;
        for p in &old {
            delete_if_present(&inner, p).await?;
        }
        // Local lakes: drop the staging directories left empty.
        if let Some(dir) = &self.location.local_dir {
            if let Ok(entries) = std::fs::read_dir(dir.join("_staging")) {
                for e in entries.flatten() {
                    std::fs::remove_dir(e.path()).ok();
                }
            }
        }
        Ok(old.len())
    }
}

impl Publication {
    /// The publication's id (also its transaction record's).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Number of files staged so far.
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Writes `bytes`, to appear at `dest` when the publication commits.
    pub async fn stage(&mut self, dest: Path, bytes: Bytes) -> Result<(), LakeError> {
        self.stage_all(vec![(dest, bytes)]).await
    }

    /// [`Publication::stage`] of several files, written concurrently. On an error some
    /// may be written: [`Publication::abort`] removes them.
    pub async fn stage_all(&mut self, files: Vec<(Path, Bytes)>) -> Result<(), LakeError> {
        let inner = Arc::clone(self.lake.visible().inner());
        let first = self.staged.len();
        let staged: Vec<(Path, Path)> = files
            .iter()
            .enumerate()
            .map(|(i, (dest, _))| {
                let name = dest.filename().unwrap_or("part.parquet");
                let at = self.lake.staging_root().join(self.id.as_str()).join(format!("{:06}-{name}", first + i));
                (at, dest.clone())
            })
            .collect();
        // Recorded before writing, so an abort after a failed put finds every file.
        self.staged.extend(staged.iter().cloned());
        futures::stream::iter(staged.into_iter().zip(files).map(|((at, _), (_, bytes))| {
            let inner = Arc::clone(&inner);
            async move { inner.put(&at, PutPayload::from(bytes)).await }
        }))
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
        Ok(())
    }

    /// Makes every staged file visible and every file of `removes` invisible, atomically
    /// for readers of the lake (the replaced files go after the keep time). Other writers may add
    /// files next to these meanwhile (appends); only the files of `removes` are claimed.
    pub async fn commit(self, removes: Vec<Path>) -> Result<(), LakeError> {
        self.commit_claiming(removes, false).await
    }

    /// [`Publication::commit`] for a publication that replaces everything in the
    /// directories it writes (a job's output partitions): fails with
    /// [`LakeError::Conflict`], publishing nothing, if another writer is publishing there
    /// or has published a file there that is not in `removes`.
    pub async fn commit_replacing(self, removes: Vec<Path>) -> Result<(), LakeError> {
        self.commit_claiming(removes, true).await
    }

    async fn commit_claiming(self, removes: Vec<Path>, exclusive: bool) -> Result<(), LakeError> {
        if self.staged.is_empty() && removes.is_empty() {
            return Ok(());
        }
        let mut dirs: Vec<Path> = Vec::new();
        if exclusive {
            for (_, dest) in &self.staged {
                let d = dest.as_ref().rsplit_once('/').map(|(d, _)| Path::from(d)).unwrap_or_default();
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
        let vis = self.lake.visible();
        let claimed =
            Claims::take(vis.inner(), &self.lake.store(), &self.lake.claims_root(), &self.id, &removes, &dirs).await;
        let mut claims = match claimed {
            Ok(c) => c,
            Err(e) => {
                self.discard_staged().await;
                return Err(e);
            }
        };
        let done = self.commit_claimed(removes).await;
        claims.release().await;
        done
    }

    async fn commit_claimed(self, removes: Vec<Path>) -> Result<(), LakeError> {
        let vis = Arc::clone(self.lake.visible());
        let inner = Arc::clone(vis.inner());
        let mut rec = TxnRecord::writing(
            self.id.clone(),
            self.staged.iter().map(|(_, d)| d.to_string()).collect(),
            removes.iter().map(|p| p.to_string()).collect(),
        );
        let version = match vis.create_record(&rec).await {
            Ok(v) => v,
            Err(e) => {
                self.discard_staged().await;
                return Err(e.into());
            }
        };
        let moved = futures::stream::iter(self.staged.iter().cloned())
            .map(|(from, to)| {
                let inner = Arc::clone(&inner);
                async move { inner.rename(&from, &to).await }
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect::<Vec<_>>()
            .await;
        let committed = match moved {
            Ok(_) => {
                rec.commit();
                vis.update_record(&rec, &version).await.map(|_| ())
            }
            Err(e) => Err(e),
        };
        if let Err(e) = committed {
            // Roll back now rather than waiting for the next open: aborted first (the new
            // files hidden, the old visible, whatever the failed put did), then undone.
            rec.state = TxnState::Aborted;
            vis.put_record(&rec).await.ok();
            for (_, d) in &self.staged {
                delete_if_present(&inner, d).await.ok();
            }
            vis.drop_record(&self.id).await.ok();
            self.discard_staged().await;
            return Err(e.into());
        }
        self.remove_local_dir();
        self.lake.retire_replaced().await;
        Ok(())
    }

    /// Drops the staged files; nothing was ever visible.
    pub async fn abort(self) -> Result<(), LakeError> {
        self.discard_staged().await;
        Ok(())
    }

    async fn discard_staged(&self) {
        let inner = self.lake.visible().inner();
        futures::stream::iter(&self.staged)
            .for_each_concurrent(CONCURRENCY, |(s, _)| async move {
                delete_if_present(inner, s).await.ok();
            })
            .await;
        self.remove_local_dir();
    }

    /// Local lakes keep empty directories after renames: remove this publication's.
    fn remove_local_dir(&self) {
        if let Some(dir) = &self.lake.location.local_dir {
            std::fs::remove_dir(dir.join("_staging").join(&self.id)).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn visible(lake: &Lake, dir: &str) -> Vec<String> {
        let mut v: Vec<String> = lake
            .store()
            .list(Some(&lake.table_path(dir)))
            .map_ok(|m| m.location.filename().unwrap_or_default().to_string())
            .try_collect()
            .await
            .unwrap();
        v.sort();
        v
    }

    #[tokio::test]
    async fn staged_files_appear_only_at_commit_and_replace_the_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&dir.path().join("lake").display().to_string()).await.unwrap();
        let t = lake.table_path("derived/t");
        lake.publish(vec![(t.clone().join("a.parquet"), Bytes::from_static(b"a"))], vec![]).await.unwrap();
        assert_eq!(visible(&lake, "derived/t").await, ["a.parquet"]);

        let mut p = lake.begin_publish();
        p.stage(t.clone().join("b.parquet"), Bytes::from_static(b"b")).await.unwrap();
        p.stage(t.clone().join("c.parquet"), Bytes::from_static(b"c")).await.unwrap();
        assert_eq!(visible(&lake, "derived/t").await, ["a.parquet"], "staged files are invisible");
        p.commit(vec![t.clone().join("a.parquet")]).await.unwrap();
        assert_eq!(visible(&lake, "derived/t").await, ["b.parquet", "c.parquet"]);
        // The replaced file stays for a query that listed it before the commit...
        let records = lake.visible().records().await.unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].state, crate::lake::visibility::TxnState::Committed);
        let a = lake.store().get(&t.clone().join("a.parquet")).await.unwrap();
        assert_eq!(a.bytes().await.unwrap().as_ref(), b"a");
        // ...until the keep time is over: then deleted with the record.
        let url = dir.path().join("lake").display().to_string();
        let lake = Lake::open_keeping(&url, std::time::Duration::ZERO).await.unwrap();
        assert!(lake.visible().records().await.unwrap().is_empty());
        assert!(lake.store().head(&t.clone().join("a.parquet")).await.is_err());
        assert_eq!(visible(&lake, "derived/t").await, ["b.parquet", "c.parquet"]);

        let mut p = lake.begin_publish();
        p.stage(t.clone().join("d.parquet"), Bytes::from_static(b"d")).await.unwrap();
        p.abort().await.unwrap();
        assert_eq!(visible(&lake, "derived/t").await, ["b.parquet", "c.parquet"]);
        let staged: Vec<_> = lake.store().list(Some(&lake.staging_root())).try_collect().await.unwrap();
        assert!(staged.is_empty());
        let dirs = std::fs::read_dir(lake.location.local_dir.as_ref().unwrap().join("_staging")).unwrap().count();
        assert_eq!(dirs, 0, "no empty staging directories left");
    }

    #[tokio::test]
    async fn old_staged_files_are_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&dir.path().join("lake").display().to_string()).await.unwrap();
        let mut p = lake.begin_publish();
        p.stage(lake.table_path("derived/t/x.parquet"), Bytes::from_static(b"x")).await.unwrap();
        assert_eq!(lake.clean_staging(chrono::Duration::hours(1)).await.unwrap(), 0);
        assert_eq!(lake.clean_staging(chrono::Duration::seconds(-1)).await.unwrap(), 1);
    }
}
