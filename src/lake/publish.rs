//! A job's publication: many new files replacing many old ones in one Delta commit.
//!
//! A long job writes its files to `_staging/<id>/` first, outside every table directory:
//! vacuum deletes files in a table's directory that no snapshot names once they are older
//! than the keep time, and a job may compute for longer than that. The commit moves them
//! into their partition directories (a filesystem rename locally, copy + delete on S3) and
//! then commits one `WRITE` (mode `Overwrite`) that removes the replaced files and adds the
//! new ones: readers see the old output or the new one, never both. A crash before the
//! commit leaves files no snapshot names (vacuum deletes them, [`Lake::clean_staging`] the
//! staged ones); two processes publishing the same partitions at once conflict, and the
//! one that loses changes nothing ([`LakeError::Conflict`]).

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::delta::{ActiveFile, Change, NewFile, TableShape};
use super::store::delete_if_present;
use super::{Lake, LakeError};

/// Concurrent store operations of one stage or commit (a full recompute of a job moves
/// thousands of files; on S3 each is a round trip).
const CONCURRENCY: usize = 32;

/// A file staged for a publication.
#[derive(Debug, Clone)]
struct Staged {
    at: Path,
    file: NewFile,
}

/// Files staged for one publication into the table `shape` describes; module docs.
#[derive(Debug)]
pub struct Publication {
    lake: Lake,
    shape: TableShape,
    id: String,
    staged: Vec<Staged>,
}

impl Lake {
    /// Where publications stage their files (`<root>/_staging/`).
    pub fn staging_root(&self) -> Path {
        self.location.root.clone().join("_staging")
    }

    /// Starts a publication into the table `shape` describes.
    pub fn begin_publish(&self, shape: TableShape) -> Publication {
        Publication { lake: self.clone(), shape, id: uuid::Uuid::new_v4().simple().to_string(), staged: Vec::new() }
    }

    /// Deletes staged files older than `age` (left by crashed or killed runs).
    pub async fn clean_staging(&self, age: chrono::Duration) -> Result<usize, LakeError> {
        let cutoff = chrono::Utc::now() - age;
        let store = self.store();
        let old: Vec<Path> = store
            .list(Some(&self.staging_root()))
            .try_filter_map(|m| futures::future::ready(Ok((m.last_modified < cutoff).then_some(m.location))))
            .try_collect()
            .await?;
        for p in &old {
            delete_if_present(store.as_ref(), p).await?;
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
    /// Number of files staged so far.
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Writes files, each `(partition directory, bytes, rows)`, to appear when the
    /// publication commits. On an error some may be written: [`Publication::abort`]
    /// removes them.
    pub async fn stage_all(&mut self, files: Vec<(String, Bytes, u64)>) -> Result<(), LakeError> {
        let store = self.lake.store();
        let first = self.staged.len();
        let mut puts = Vec::with_capacity(files.len());
        for (i, (partition_dir, bytes, rows)) in files.into_iter().enumerate() {
            let name = super::writer::new_file_name();
            let at = self.lake.staging_root().join(self.id.as_str()).join(format!("{:06}-{name}", first + i));
            let file = NewFile { partition_dir, name, size: bytes.len() as u64, rows };
            // Recorded before writing, so an abort after a failed put finds every file.
            self.staged.push(Staged { at: at.clone(), file });
            puts.push((at, bytes));
        }
        futures::stream::iter(puts.into_iter().map(|(at, bytes)| {
            let store = std::sync::Arc::clone(&store);
            async move { store.put(&at, PutPayload::from(bytes)).await }
        }))
        .buffer_unordered(CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
        Ok(())
    }

    /// Moves the staged files into the table and commits them in place of `remove`, read
    /// on `snapshot`; `read` names the partitions recomputed (a concurrent writer there
    /// fails this commit). Returns the table's new version.
    pub async fn commit(
        self,
        snapshot: &deltalake::DeltaTable,
        remove: Vec<ActiveFile>,
        read: Option<String>,
    ) -> Result<u64, LakeError> {
        self.commit_as(snapshot, |files| Change::Replace { files, remove, read }).await
    }

    /// [`Publication::commit`] of a whole table laid out by its shape's partition columns
    /// where `snapshot`'s are others: `remove` is every file of `snapshot`
    /// ([`Change::Relayout`]).
    pub async fn commit_relayout(
        self,
        snapshot: &deltalake::DeltaTable,
        remove: Vec<ActiveFile>,
    ) -> Result<u64, LakeError> {
        self.commit_as(snapshot, |files| Change::Relayout { files, remove }).await
    }

    /// Moves the staged files into the table and commits `change` of them.
    async fn commit_as(
        self,
        snapshot: &deltalake::DeltaTable,
        change: impl FnOnce(Vec<NewFile>) -> Change,
    ) -> Result<u64, LakeError> {
        let store = self.lake.store();
        let moves: Vec<(Path, Path)> = self.staged.iter().map(|s| (s.at.clone(), self.destination(s))).collect();
        let moved = futures::stream::iter(moves.clone())
            .map(|(from, to)| {
                let store = std::sync::Arc::clone(&store);
                async move { store.rename(&from, &to).await }
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect::<Vec<_>>()
            .await;
        let files: Vec<NewFile> = self.staged.iter().map(|s| s.file.clone()).collect();
        let committed = match moved {
            Ok(_) => self.lake.commit(&self.shape, snapshot, change(files)).await,
            Err(e) => Err(e.into()),
        };
        if committed.is_err() {
            // Nothing names these files: delete them now rather than at the next vacuum.
            for (_, to) in &moves {
                delete_if_present(store.as_ref(), to).await.ok();
            }
            self.discard_staged().await;
        }
        self.remove_local_dir();
        committed
    }

    /// Drops the staged files; nothing was ever visible.
    pub async fn abort(self) -> Result<(), LakeError> {
        self.discard_staged().await;
        self.remove_local_dir();
        Ok(())
    }

    /// Where a staged file goes in the table.
    fn destination(&self, s: &Staged) -> Path {
        let mut p = self.lake.table_path(&self.shape.dir);
        for part in s.file.partition_dir.split('/').filter(|p| !p.is_empty()) {
            p = p.join(part);
        }
        p.join(s.file.name.as_str())
    }

    async fn discard_staged(&self) {
        let store = self.lake.store();
        let staged: Vec<Path> = self.staged.iter().map(|s| s.at.clone()).collect();
        futures::stream::iter(staged)
            .for_each_concurrent(CONCURRENCY, |at| {
                let store = std::sync::Arc::clone(&store);
                async move {
                    delete_if_present(store.as_ref(), &at).await.ok();
                }
            })
            .await;
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
    use std::sync::Arc;

    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn shape() -> TableShape {
        TableShape {
            name: "t".into(),
            dir: "derived/t".into(),
            file_schema: Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)])),
            partition_cols: vec![("day".into(), DataType::Utf8)],
            sort: vec!["x".into()],
        }
    }

    async fn names(lake: &Lake) -> Vec<String> {
        let (_, files) = lake.table_files(&shape()).await.unwrap();
        files.iter().map(|f| f.partition_dir().to_string()).collect()
    }

    /// Staged files are in no snapshot until the commit, which replaces the old ones in
    /// one version; an abort leaves nothing; a second publisher that read the same
    /// snapshot and replaces the same files conflicts and changes nothing.
    #[tokio::test]
    async fn staged_files_appear_only_at_commit_and_replace_the_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&dir.path().join("lake").display().to_string()).await.unwrap();
        let one = |d: &str| vec![(format!("day={d}"), Bytes::from_static(b"not read"), 1)];

        let snap = lake.delta_table(&shape()).await.unwrap();
        let mut p = lake.begin_publish(shape());
        p.stage_all(one("a")).await.unwrap();
        assert!(names(&lake).await.is_empty(), "staged files are in no snapshot");
        let v1 = p.commit(&snap, vec![], None).await.unwrap();
        assert_eq!(names(&lake).await, ["day=a"]);

        let (snap, old) = lake.table_files(&shape()).await.unwrap();
        let mut p = lake.begin_publish(shape());
        p.stage_all(one("b")).await.unwrap();
        let mut rival = lake.begin_publish(shape());
        rival.stage_all(one("c")).await.unwrap();
        assert_eq!(p.commit(&snap, old.clone(), None).await.unwrap(), v1 + 1);
        assert_eq!(names(&lake).await, ["day=b"]);
        let lost = rival.commit(&snap, old.clone(), None).await.unwrap_err();
        assert!(matches!(lost, LakeError::Conflict(_)), "{lost}");
        assert_eq!(names(&lake).await, ["day=b"], "the loser changed nothing");
        // The replaced file stays for queries on the older snapshot.
        assert!(lake.store().head(&old[0].location).await.is_ok());

        let mut p = lake.begin_publish(shape());
        p.stage_all(one("d")).await.unwrap();
        p.abort().await.unwrap();
        assert_eq!(names(&lake).await, ["day=b"]);
        let staged: Vec<_> = lake.store().list(Some(&lake.staging_root())).try_collect().await.unwrap();
        assert!(staged.is_empty(), "{staged:?}");
        let dirs = std::fs::read_dir(lake.location.local_dir.as_ref().unwrap().join("_staging")).unwrap().count();
        assert_eq!(dirs, 0, "no empty staging directories left");
    }

    /// A relayout (the table's partition columns changed) and a replace, both decided on
    /// one snapshot: whichever commits second conflicts and changes nothing, so the table
    /// is never half in one layout and half in the other, whichever order they race in.
    #[tokio::test]
    async fn a_relayout_and_a_concurrent_replace_never_both_commit() {
        for relayout_first in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let lake = Lake::open(&dir.path().join("lake").display().to_string()).await.unwrap();
            let old = shape();
            let mut new = shape();
            new.partition_cols = vec![];
            new.file_schema = Arc::new(Schema::new(vec![
                Field::new("x", DataType::Int64, false),
                Field::new("day", DataType::Utf8, false),
            ]));
            let file = |dir: &str| vec![(dir.to_string(), Bytes::from_static(b"not read"), 1)];
            let snap = lake.delta_table(&old).await.unwrap();
            let mut p = lake.begin_publish(old.clone());
            p.stage_all(file("day=a")).await.unwrap();
            p.commit(&snap, vec![], None).await.unwrap();

            let (snap, files) = lake.table_files(&old).await.unwrap();
            let mut relayout = lake.begin_publish(new.clone());
            relayout.stage_all(file("")).await.unwrap();
            let mut replace = lake.begin_publish(old.clone());
            replace.stage_all(file("day=b")).await.unwrap();
            let (won, lost) = if relayout_first {
                let won = relayout.commit_relayout(&snap, files.clone()).await;
                (won, replace.commit(&snap, files.clone(), None).await)
            } else {
                let won = replace.commit(&snap, files.clone(), None).await;
                (won, relayout.commit_relayout(&snap, files.clone()).await)
            };
            won.unwrap();
            let lost = lost.unwrap_err();
            assert!(matches!(lost, LakeError::Conflict(_)), "{lost}");
            let (_, now) = lake.snapshot_files("derived/t").await.unwrap().unwrap();
            let dirs: Vec<&str> = now.iter().map(|f| f.partition_dir()).collect();
            assert_eq!(dirs, [if relayout_first { "" } else { "day=b" }], "relayout first: {relayout_first}");
            assert_eq!(lake.layout_differs(&new).await.unwrap(), !relayout_first);
        }
    }

    #[tokio::test]
    async fn old_staged_files_are_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&dir.path().join("lake").display().to_string()).await.unwrap();
        let mut p = lake.begin_publish(shape());
        p.stage_all(vec![("day=x".into(), Bytes::from_static(b"x"), 1)]).await.unwrap();
        assert_eq!(lake.clean_staging(chrono::Duration::hours(1)).await.unwrap(), 0);
        assert_eq!(lake.clean_staging(chrono::Duration::seconds(-1)).await.unwrap(), 1);
    }
}
