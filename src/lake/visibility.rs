//! Atomic swaps on a store that has no atomic multi-file operations.
//!
//! Compaction replaces several files by one. Readers must never see both (duplicates) or
//! neither (data loss), and a crash must leave one of the two states. A transaction record
//! under `_txn/` (one atomic put) says which files are being added and removed:
//! while `state` is `writing`, the added files are hidden; once it is `committed`, the
//! removed files are hidden. Every listing through [`VisibleStore`] applies the records, so
//! DataFusion and the writer only ever see a consistent set. A listing is not a snapshot
//! (on S3 nothing is): the records are listed again after it, and it is taken again if a
//! swap changed them. Recovery rolls each record forward or back.
//!
//! The replaced files are not deleted at the commit: a query planned just before it (a
//! long analyst query over Flight SQL or pgwire, a `wxlake sql`) still reads them. The
//! committed record keeps them hidden from every later listing, and they are deleted with
//! the record once the swap is older than the lake's keep time (default
//! [`KEEP_REPLACED`]), by a later commit, `serve`'s hourly compaction or the next open of
//! the lake ([`VisibleStore::recover`]). Until then every listing applies the record too;
//! records are read once per version and cached (`Records`).
//!
//! Several processes may share a lake (`wxlake serve` publishing job outputs while a
//! `wxlake sql` or `ingest` opens it). Rolling forward a `committed` record is always safe
//! (its owner would delete the same files), but a `writing` record may belong to a swap in
//! progress elsewhere: recovery leaves it alone until it is [`WRITING_GRACE`] old (a swap
//! takes seconds). Until then its files stay hidden, so readers are consistent either way.
//!
//! On S3 a put is atomic but there is no rename and two processes may act on one record:
//! the owner flipping it to `committed` while another process's recovery rolls it back.
//! So a record is created with `If-None-Match` ([`PutMode::Create`]) and every change of
//! state is a conditional put on the e-tag it was read or written with
//! ([`PutMode::Update`]): recovery first marks a stale record `aborted` (its files stay
//! hidden), and an owner that was that slow then fails to commit instead of exposing files
//! recovery is deleting. Which writer may replace which files is claims.rs's business.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, UpdateVersion,
};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// A pending or committed file swap.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TxnRecord {
    pub id: String,
    pub state: TxnState,
    pub add: Vec<String>,
    pub remove: Vec<String>,
    /// Unix seconds when the swap began (0 in records written before this field existed:
    /// treated as old).
    #[serde(default)]
    pub created_at: i64,
    /// Unix seconds when the swap committed (0 before then, and in records written before
    /// this field existed: treated as old).
    #[serde(default)]
    pub committed_at: i64,
}

/// A `writing` record younger than this may belong to a live swap of another process.
pub const WRITING_GRACE: Duration = Duration::from_secs(600);

/// How long the files a swap replaced stay in the store by default, hidden from new
/// listings, for the queries planned before the swap: longer than an analyst's query
/// usually runs, short enough that a lake compacted hourly holds few extra files.
pub const KEEP_REPLACED: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TxnState {
    Writing,
    Committed,
    /// Rolled back by recovery: the added files stay hidden until they are deleted.
    Aborted,
}

impl TxnRecord {
    /// A new `writing` record, stamped now.
    pub fn writing(id: String, add: Vec<String>, remove: Vec<String>) -> Self {
        TxnRecord {
            id,
            state: TxnState::Writing,
            add,
            remove,
            created_at: chrono::Utc::now().timestamp(),
            committed_at: 0,
        }
    }

    /// Moves this record to `committed`, stamped now.
    pub fn commit(&mut self) {
        self.state = TxnState::Committed;
        self.committed_at = chrono::Utc::now().timestamp();
    }

    /// Paths a reader must not see while this record exists.
    fn hidden(&self) -> &[String] {
        match self.state {
            TxnState::Writing | TxnState::Aborted => &self.add,
            TxnState::Committed => &self.remove,
        }
    }
}

/// An object store that hides the files of unfinished swaps.
#[derive(Debug)]
pub struct VisibleStore {
    inner: Arc<dyn ObjectStore>,
    records: Records,
}

impl fmt::Display for VisibleStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VisibleStore({})", self.inner)
    }
}

/// What [`VisibleStore::recover`] finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Swaps that never committed (crashed, or aborted and not cleaned up): undone.
    pub rolled_back: usize,
    /// Committed swaps past their keep time: the files they replaced deleted.
    pub retired: usize,
}

impl VisibleStore {
    pub fn new(inner: Arc<dyn ObjectStore>, txn_dir: Path) -> Self {
        VisibleStore { records: Records { store: Arc::clone(&inner), dir: txn_dir, cache: Default::default() }, inner }
    }

    /// The unwrapped store (sees everything).
    pub fn inner(&self) -> &Arc<dyn ObjectStore> {
        &self.inner
    }

    fn txn_path(&self, id: &str) -> Path {
        self.records.dir.clone().join(format!("{id}.json"))
    }

    /// Every transaction record currently present.
    pub async fn records(&self) -> Result<Vec<TxnRecord>> {
        Ok(self.records.read().await?.into_iter().map(|(r, _)| r).collect())
    }

    /// Creates a new record (`If-None-Match`: record ids are unique, so this only fails if
    /// the store does); returns its version for [`VisibleStore::update_record`].
    pub async fn create_record(&self, rec: &TxnRecord) -> Result<UpdateVersion> {
        let res = self.inner.put_opts(&self.txn_path(&rec.id), record_body(rec), PutMode::Create.into()).await?;
        Ok(UpdateVersion { e_tag: res.e_tag, version: res.version })
    }

    /// Changes a record's state if it is still the version `seen` (`If-Match`), so two
    /// processes never both move one record on. Fails with `Precondition` (or `NotFound`)
    /// when someone else changed or removed it. Stores without conditional updates (the
    /// local filesystem, where only one host writes) overwrite.
    pub async fn update_record(&self, rec: &TxnRecord, seen: &UpdateVersion) -> Result<UpdateVersion> {
        let path = self.txn_path(&rec.id);
        let res = match self.inner.put_opts(&path, record_body(rec), PutMode::Update(seen.clone()).into()).await {
            Err(object_store::Error::NotImplemented { .. }) => self.inner.put(&path, record_body(rec)).await?,
            other => other?,
        };
        Ok(UpdateVersion { e_tag: res.e_tag, version: res.version })
    }

    /// Writes (or overwrites) a transaction record: the single atomic step of a swap.
    pub async fn put_record(&self, rec: &TxnRecord) -> Result<()> {
        self.inner.put(&self.txn_path(&rec.id), record_body(rec)).await.map(|_| ())
    }

    /// Removes a finished record.
    pub async fn drop_record(&self, id: &str) -> Result<()> {
        delete_if_present(&self.inner, &self.txn_path(id)).await
    }

    /// Replaces committed records by one that hides the same files, stamped now (so every
    /// file stays at least the keep time after its own swap): a compaction's swaps, one a
    /// partition, would otherwise each be listed and read until they retire. The merged
    /// record is written before the others go, so the files stay hidden throughout; a
    /// crash in between leaves both, which retire alike.
    pub async fn merge_committed(&self, recs: &[TxnRecord]) -> Result<()> {
        if recs.len() < 2 {
            return Ok(());
        }
        let mut merged = TxnRecord::writing(
            uuid::Uuid::new_v4().simple().to_string(),
            recs.iter().flat_map(|r| r.add.iter().cloned()).collect(),
            recs.iter().flat_map(|r| r.remove.iter().cloned()).collect(),
        );
        merged.commit();
        self.create_record(&merged).await?;
        for r in recs {
            self.drop_record(&r.id).await?;
        }
        Ok(())
    }

    /// Finishes the swaps that are over: committed ones are rolled forward once they are
    /// `keep_replaced` old (the replaced files deleted, then the record; younger ones keep
    /// serving the queries planned before them), and `writing` ones older than
    /// [`WRITING_GRACE`] are rolled back (younger ones may be live in another process and
    /// are left hidden), as are aborted ones. Called when a lake opens and after each commit.
    pub async fn recover(&self, keep_replaced: Duration) -> Result<Recovered> {
        let now = chrono::Utc::now().timestamp();
        let older_than = |t: i64, d: Duration| now - t >= d.as_secs() as i64;
        let recs: Vec<(TxnRecord, UpdateVersion)> = self
            .records
            .read()
            .await?
            .into_iter()
            .filter(|(r, _)| match r.state {
                TxnState::Writing => older_than(r.created_at, WRITING_GRACE),
                // Nothing replaced (a first publish): nothing to keep.
                TxnState::Committed => r.remove.is_empty() || older_than(r.committed_at, keep_replaced),
                TxnState::Aborted => true,
            })
            .collect();
        let mut done = Recovered::default();
        for (mut rec, seen) in recs {
            if rec.state == TxnState::Writing {
                // Claim the rollback first: if the owner commits meanwhile, one of the two
                // conditional puts fails and the other's outcome stands.
                rec.state = TxnState::Aborted;
                match self.update_record(&rec, &seen).await {
                    Ok(_) => {}
                    Err(object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
            delete_all(&self.inner, rec.hidden()).await?;
            self.drop_record(&rec.id).await?;
            match rec.state {
                TxnState::Committed => done.retired += 1,
                TxnState::Writing | TxnState::Aborted => done.rolled_back += 1,
            }
        }
        Ok(done)
    }
}

fn record_body(rec: &TxnRecord) -> PutPayload {
    PutPayload::from(serde_json::to_vec(rec).unwrap_or_default())
}

/// The transaction records under `_txn/`, read through a cache: committed records stay
/// for the lake's keep time, and every listing reads them all, so each is fetched once per
/// version (an S3 GET is a round trip) and known by its listed e-tag after that.
#[derive(Debug, Clone)]
struct Records {
    store: Arc<dyn ObjectStore>,
    dir: Path,
    cache: Arc<Mutex<HashMap<Path, CachedRecord>>>,
}

#[derive(Debug, Clone)]
struct CachedRecord {
    listed: ObjectMeta,
    record: TxnRecord,
    version: UpdateVersion,
}

impl Records {
    /// The record objects as one LIST shows them (location order).
    async fn list(&self) -> Result<Vec<ObjectMeta>> {
        let mut metas: Vec<ObjectMeta> = self.store.list(Some(&self.dir)).try_collect().await?;
        metas.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(metas)
    }

    /// Every record with the version it was read at.
    async fn read(&self) -> Result<Vec<(TxnRecord, UpdateVersion)>> {
        self.fetch(&self.list().await?).await
    }

    /// The records `metas` lists: from the cache when the listing shows the version
    /// cached (same e-tag and time; a store without e-tags is always read), else read.
    /// Entries of records no longer listed are dropped.
    async fn fetch(&self, metas: &[ObjectMeta]) -> Result<Vec<(TxnRecord, UpdateVersion)>> {
        let cached: Vec<Option<CachedRecord>> = {
            let cache = self.cache.lock();
            metas
                .iter()
                .map(|m| cache.get(&m.location).filter(|c| m.e_tag.is_some() && same_version(&c.listed, m)).cloned())
                .collect()
        };
        // The others read concurrently (a large compaction leaves one record a partition).
        // Owned values in the futures: a borrow there makes the listing futures not `Send`.
        let pending: Vec<(ObjectMeta, Option<CachedRecord>)> = metas.iter().cloned().zip(cached).collect();
        let store = Arc::clone(&self.store);
        let read: Vec<Option<CachedRecord>> = stream::iter(pending)
            .map(move |(m, hit)| {
                let store = Arc::clone(&store);
                async move {
                    if hit.is_some() {
                        return Ok(hit);
                    }
                    match store.get(&m.location).await {
                        Ok(r) => {
                            let version =
                                UpdateVersion { e_tag: r.meta.e_tag.clone(), version: r.meta.version.clone() };
                            let bytes = r.bytes().await?;
                            Ok(serde_json::from_slice::<TxnRecord>(&bytes).ok().map(|record| CachedRecord {
                                listed: m,
                                record,
                                version,
                            }))
                        }
                        // Dropped between list and get: the swap just finished.
                        Err(object_store::Error::NotFound { .. }) => Ok(None),
                        Err(e) => Err(e),
                    }
                }
            })
            .buffered(RECORD_READS)
            .try_collect()
            .await?;
        let read: Vec<CachedRecord> = read.into_iter().flatten().collect();
        let out = read.iter().map(|c| (c.record.clone(), c.version.clone())).collect();
        *self.cache.lock() = read.into_iter().map(|c| (c.listed.location.clone(), c)).collect();
        Ok(out)
    }

    /// Lists through `list` what readers may see: the records are listed before and after,
    /// and the listing only counts if they did not change in between (else it is taken
    /// again). A listing is not a snapshot (on S3 nothing is): without the second look a
    /// swap that began or committed during it could show both its old and new files, or
    /// neither.
    async fn consistent_listing<T, F, Fut>(&self, list: F) -> Result<(T, HashSet<String>)>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut before = self.list().await?;
        for _ in 0..LIST_ATTEMPTS {
            let recs = self.fetch(&before).await?;
            let listing = list().await?;
            let after = self.list().await?;
            if before.len() == after.len() && before.iter().zip(&after).all(|(x, y)| same_version(x, y)) {
                let hidden = recs.iter().flat_map(|(r, _)| r.hidden().iter().cloned()).collect();
                return Ok((listing, hidden));
            }
            before = after;
        }
        Err(object_store::Error::Generic {
            store: "lake",
            source: format!(
                "the lake's transaction records under {} changed during {LIST_ATTEMPTS} listings in a row",
                self.dir
            )
            .into(),
        })
    }
}

/// Two listings show the same object in the same version.
fn same_version(a: &ObjectMeta, b: &ObjectMeta) -> bool {
    a.location == b.location && a.e_tag == b.e_tag && a.last_modified == b.last_modified
}

/// Deletes a path, treating "already gone" as success.
pub async fn delete_if_present(store: &Arc<dyn ObjectStore>, p: &Path) -> Result<()> {
    match store.delete(p).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Records read at once when a listing shows records not cached yet.
const RECORD_READS: usize = 32;

/// Deletes `paths`, "already gone" counting as done. Through the store's bulk delete: a
/// full recompute's record names thousands of files, and S3 deletes up to 1,000 keys a
/// request.
async fn delete_all(store: &Arc<dyn ObjectStore>, paths: &[String]) -> Result<()> {
    let locations: Vec<Result<Path>> = paths.iter().map(|p| Ok(Path::from(p.as_str()))).collect();
    let mut deleted = store.delete_stream(stream::iter(locations).boxed());
    while let Some(d) = deleted.next().await {
        match d {
            Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// How often a listing is retried while swaps keep changing the records under it.
const LIST_ATTEMPTS: usize = 8;

#[async_trait]
impl ObjectStore for VisibleStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let inner = Arc::clone(&self.inner);
        let records = self.records.clone();
        let prefix = prefix.cloned();
        stream::once(async move {
            let listed = records.consistent_listing(|| inner.list(prefix.as_ref()).try_collect::<Vec<_>>()).await;
            match listed {
                Ok((metas, hidden)) => {
                    stream::iter(metas.into_iter().filter(move |m| !hidden.contains(m.location.as_ref())).map(Ok))
                        .boxed()
                }
                Err(e) => stream::once(async move { Err(e) }).boxed(),
            }
        })
        .flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let (mut res, hidden) = self.records.consistent_listing(|| self.inner.list_with_delimiter(prefix)).await?;
        res.objects.retain(|m| !hidden.contains(m.location.as_ref()));
        Ok(res)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    async fn names(s: &VisibleStore) -> Vec<String> {
        let mut v: Vec<String> =
            s.list(Some(&Path::from("t"))).map_ok(|m| m.location.to_string()).try_collect().await.unwrap();
        v.sort();
        v
    }

    #[tokio::test]
    async fn swap_is_atomic_for_readers_and_recoverable() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let s = VisibleStore::new(Arc::clone(&inner), Path::from("_txn"));
        for p in ["t/a.parquet", "t/b.parquet"] {
            s.put(&Path::from(p), PutPayload::from_static(b"x")).await.unwrap();
        }
        let mut rec = TxnRecord::writing(
            "1".into(),
            vec!["t/c.parquet".into()],
            vec!["t/a.parquet".into(), "t/b.parquet".into()],
        );
        s.put_record(&rec).await.unwrap();
        s.put(&Path::from("t/c.parquet"), PutPayload::from_static(b"y")).await.unwrap();
        assert_eq!(names(&s).await, ["t/a.parquet", "t/b.parquet"], "new file hidden while writing");
        rec.commit();
        s.put_record(&rec).await.unwrap();
        assert_eq!(names(&s).await, ["t/c.parquet"], "old files hidden once committed");
        // The replaced files stay for the queries that listed them before the commit.
        assert_eq!(s.recover(KEEP_REPLACED).await.unwrap(), Recovered::default());
        assert_eq!(names(&s).await, ["t/c.parquet"]);
        assert_eq!(s.get(&Path::from("t/a.parquet")).await.unwrap().bytes().await.unwrap().as_ref(), b"x");
        // Past the keep time (or after a crash, found by the next open): deleted with the record.
        assert_eq!(s.recover(Duration::ZERO).await.unwrap(), Recovered { rolled_back: 0, retired: 1 });
        assert_eq!(names(&s).await, ["t/c.parquet"]);
        assert!(s.records().await.unwrap().is_empty());
        let all: Vec<_> = inner.list(Some(&Path::from("t"))).try_collect::<Vec<_>>().await.unwrap();
        assert_eq!(all.len(), 1);
    }

    #[tokio::test]
    async fn a_commit_keeps_its_replaced_files_until_the_keep_time_is_over() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let s = VisibleStore::new(Arc::clone(&inner), Path::from("_txn"));
        s.put(&Path::from("t/a.parquet"), PutPayload::from_static(b"x")).await.unwrap();
        let mut rec = TxnRecord::writing("5".into(), vec!["t/c.parquet".into()], vec!["t/a.parquet".into()]);
        s.put(&Path::from("t/c.parquet"), PutPayload::from_static(b"y")).await.unwrap();
        rec.commit();
        s.put_record(&rec).await.unwrap();
        let keep = Duration::from_secs(300);
        // Committed 299 s ago: kept. 300 s ago: retired.
        rec.committed_at -= 299;
        s.put_record(&rec).await.unwrap();
        assert_eq!(s.recover(keep).await.unwrap().retired, 0);
        assert!(inner.head(&Path::from("t/a.parquet")).await.is_ok());
        rec.committed_at -= 1;
        s.put_record(&rec).await.unwrap();
        assert_eq!(s.recover(keep).await.unwrap().retired, 1);
        assert!(inner.head(&Path::from("t/a.parquet")).await.is_err());
        assert_eq!(names(&s).await, ["t/c.parquet"]);
    }

    #[tokio::test]
    async fn merged_records_hide_what_each_hid_until_they_retire() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let s = VisibleStore::new(Arc::clone(&inner), Path::from("_txn"));
        let mut recs = Vec::new();
        for (i, p) in ["a", "b", "c"].iter().enumerate() {
            s.put(&Path::from(format!("t/{p}1.parquet")), PutPayload::from_static(b"old")).await.unwrap();
            s.put(&Path::from(format!("t/{p}2.parquet")), PutPayload::from_static(b"new")).await.unwrap();
            let mut rec =
                TxnRecord::writing(format!("m{i}"), vec![format!("t/{p}2.parquet")], vec![format!("t/{p}1.parquet")]);
            rec.commit();
            s.put_record(&rec).await.unwrap();
            recs.push(rec);
        }
        let seen = names(&s).await;
        assert_eq!(seen, ["t/a2.parquet", "t/b2.parquet", "t/c2.parquet"]);
        s.merge_committed(&recs).await.unwrap();
        let merged = s.records().await.unwrap();
        assert_eq!(merged.len(), 1, "{merged:?}");
        assert_eq!(merged[0].remove.len(), 3);
        assert_eq!(names(&s).await, seen, "the same files hidden");
        assert_eq!(s.recover(KEEP_REPLACED).await.unwrap(), Recovered::default(), "kept for the keep time");
        assert_eq!(s.recover(Duration::ZERO).await.unwrap().retired, 1);
        let all: Vec<_> = inner.list(Some(&Path::from("t"))).try_collect::<Vec<_>>().await.unwrap();
        assert_eq!(all.len(), 3, "the old files deleted");
    }

    #[tokio::test]
    async fn records_are_fetched_once_per_version() {
        let counting = Arc::new(crate::lake::requests::CountingStore::new(Arc::new(InMemory::new())));
        let s = VisibleStore::new(Arc::clone(&counting) as Arc<dyn ObjectStore>, Path::from("_txn"));
        s.put(&Path::from("t/a.parquet"), PutPayload::from_static(b"x")).await.unwrap();
        let mut rec = TxnRecord::writing("6".into(), vec!["t/c.parquet".into()], vec!["t/a.parquet".into()]);
        rec.commit();
        s.put_record(&rec).await.unwrap();
        s.put(&Path::from("t/c.parquet"), PutPayload::from_static(b"y")).await.unwrap();
        let gets = counting.counts().get;
        for _ in 0..5 {
            assert_eq!(names(&s).await, ["t/c.parquet"]);
        }
        assert_eq!(counting.counts().get - gets, 1, "five listings, one GET of the record");
        // A new version of the record is read again.
        rec.state = TxnState::Aborted;
        s.put_record(&rec).await.unwrap();
        assert_eq!(names(&s).await, ["t/a.parquet"]);
        assert_eq!(counting.counts().get - gets, 2);
    }

    #[tokio::test]
    async fn recovery_rolls_back_an_unfinished_write() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let s = VisibleStore::new(Arc::clone(&inner), Path::from("_txn"));
        s.put(&Path::from("t/a.parquet"), PutPayload::from_static(b"x")).await.unwrap();
        let mut rec = TxnRecord::writing("2".into(), vec!["t/c.parquet".into()], vec!["t/a.parquet".into()]);
        s.put_record(&rec).await.unwrap();
        s.put(&Path::from("t/c.parquet"), PutPayload::from_static(b"partial")).await.unwrap();
        // Just begun: maybe another process's live swap. Left alone, its file stays hidden.
        assert_eq!(s.recover(KEEP_REPLACED).await.unwrap(), Recovered::default());
        assert_eq!(names(&s).await, ["t/a.parquet"]);
        assert_eq!(s.records().await.unwrap().len(), 1);
        // Older than the grace period: a crashed swap, rolled back.
        rec.created_at -= WRITING_GRACE.as_secs() as i64;
        s.put_record(&rec).await.unwrap();
        assert_eq!(s.recover(KEEP_REPLACED).await.unwrap(), Recovered { rolled_back: 1, retired: 0 });
        assert_eq!(names(&s).await, ["t/a.parquet"]);
        let all: Vec<_> = inner.list(Some(&Path::from("t"))).try_collect::<Vec<_>>().await.unwrap();
        assert_eq!(all.len(), 1, "the partial file is deleted");
    }

    #[tokio::test]
    async fn a_commit_during_a_listing_is_not_missed() {
        let meddler = Arc::new(CommitsDuringListing { inner: Arc::new(InMemory::new()), pending: Default::default() });
        let s = VisibleStore::new(Arc::clone(&meddler) as Arc<dyn ObjectStore>, Path::from("_txn"));
        for p in ["t/a.parquet", "t/c.parquet"] {
            s.put(&Path::from(p), PutPayload::from_static(b"x")).await.unwrap();
        }
        let rec = TxnRecord::writing("3".into(), vec!["t/c.parquet".into()], vec!["t/a.parquet".into()]);
        let version = s.create_record(&rec).await.unwrap();
        // The first listing of `t` runs while the swap commits and deletes `a`: read with
        // the records from before, it would show neither file.
        let committed = TxnRecord { state: TxnState::Committed, ..rec };
        *meddler.pending.lock().unwrap() = Some((committed.clone(), version));
        assert_eq!(names(&s).await, ["t/c.parquet"]);
        assert!(meddler.pending.lock().unwrap().is_none(), "the swap ran during the listing");
        // A second writer holding a stale version cannot move the record on.
        let stale = UpdateVersion { e_tag: Some("\"stale\"".into()), version: None };
        let err = s.update_record(&TxnRecord { state: TxnState::Aborted, ..committed }, &stale).await.unwrap_err();
        assert!(matches!(err, object_store::Error::Precondition { .. }), "{err}");
    }

    #[tokio::test]
    async fn an_owner_too_slow_for_recovery_cannot_commit_after_the_rollback() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let s = VisibleStore::new(Arc::clone(&inner), Path::from("_txn"));
        s.put(&Path::from("t/a.parquet"), PutPayload::from_static(b"x")).await.unwrap();
        let mut rec = TxnRecord::writing("4".into(), vec!["t/c.parquet".into()], vec!["t/a.parquet".into()]);
        rec.created_at -= WRITING_GRACE.as_secs() as i64;
        let version = s.create_record(&rec).await.unwrap();
        s.put(&Path::from("t/c.parquet"), PutPayload::from_static(b"y")).await.unwrap();
        // Another process's recovery rolls the stale swap back...
        assert_eq!(s.recover(KEEP_REPLACED).await.unwrap().rolled_back, 1);
        // ...and the owner, waking up, cannot commit over it: its version is gone.
        rec.state = TxnState::Committed;
        let err = s.update_record(&rec, &version).await.unwrap_err();
        assert!(
            matches!(err, object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. }),
            "{err}"
        );
        assert_eq!(names(&s).await, ["t/a.parquet"]);
        assert!(s.records().await.unwrap().is_empty());
    }

    /// A store whose next listing of `t/` first commits the pending record and deletes what
    /// it removes: a swap finishing while a reader lists.
    #[derive(Debug)]
    struct CommitsDuringListing {
        inner: Arc<InMemory>,
        pending: std::sync::Mutex<Option<(TxnRecord, UpdateVersion)>>,
    }

    impl fmt::Display for CommitsDuringListing {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "CommitsDuringListing")
        }
    }

    #[async_trait]
    impl ObjectStore for CommitsDuringListing {
        async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
            self.inner.put_opts(location, payload, opts).await
        }

        async fn put_multipart_opts(
            &self,
            location: &Path,
            opts: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(location, opts).await
        }

        async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
            self.inner.get_opts(location, options).await
        }

        fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
            self.inner.delete_stream(locations)
        }

        fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            let swap = match prefix {
                Some(p) if p.as_ref() == "t" => self.pending.lock().unwrap().take(),
                _ => None,
            };
            let inner = Arc::clone(&self.inner);
            let prefix = prefix.cloned();
            stream::once(async move {
                if let Some((rec, version)) = swap {
                    let body = record_body(&rec);
                    inner.put_opts(&Path::from("_txn/3.json"), body, PutMode::Update(version).into()).await.unwrap();
                    for p in &rec.remove {
                        inner.delete(&Path::from(p.as_str())).await.unwrap();
                    }
                }
                inner.list(prefix.as_ref())
            })
            .flatten()
            .boxed()
        }

        async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }

        async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }
}
