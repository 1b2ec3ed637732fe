//! Claims: who may replace a file or rewrite a directory right now, across processes.
//!
//! A transaction record (visibility.rs) makes one swap atomic for readers, but nothing in it
//! stops two writers that planned from the same listing (two `wxlake compact` runs, a job
//! run by `serve` and by hand) from each committing a replacement of the same files: both
//! merged files would then be visible, every row twice. On S3 there is no rename and no
//! lock, but there is a conditional put: `If-None-Match: *` ([`PutMode::Create`]) creates
//! an object only if it does not exist, atomically. So before its record, a swap creates
//! one claim object per file it removes (and per directory it rewrites wholesale); the
//! first writer gets them all, the second gets `AlreadyExists` on one, lets go of what it
//! holds and changes nothing ([`LakeError::Conflict`]).
//!
//! Claims are released after the swap, so a writer that claims successfully may still have
//! planned from a listing older than someone else's finished swap. It therefore checks,
//! holding the claims, that every file it removes is still there and that a directory it
//! rewrites holds nothing it did not plan to replace. A crashed writer's claims are removed
//! by recovery once they are older than [`WRITING_GRACE`].

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutPayload};
use sha2::{Digest, Sha256};

use super::visibility::{delete_if_present, WRITING_GRACE};
use super::LakeError;

/// Claims held by one swap; [`Claims::release`] them when it is done (or failed).
#[derive(Debug)]
pub struct Claims {
    store: Arc<dyn ObjectStore>,
    held: Vec<Path>,
}

/// The claim object of a file or directory: a hash of its path, so any path fits one key.
fn claim_path(claims_root: &Path, target: &str) -> Path {
    let digest = Sha256::digest(target.as_bytes());
    claims_root.clone().join(format!("{}.claim", hex::encode(&digest[..16])))
}

impl Claims {
    /// Claims every file of `removes` and every directory of `rewrites` for swap `txn`,
    /// then checks they are as planned: each file of `removes` still exists, and each
    /// directory of `rewrites` holds no Parquet file outside `removes` (`visible` lists
    /// what readers see). On a conflict nothing is held and nothing was changed.
    pub async fn take(
        store: &Arc<dyn ObjectStore>,
        visible: &Arc<dyn ObjectStore>,
        claims_root: &Path,
        txn: &str,
        removes: &[Path],
        rewrites: &[Path],
    ) -> Result<Claims, LakeError> {
        let mut claims = Claims { store: Arc::clone(store), held: Vec::new() };
        let mut targets: Vec<String> = removes.iter().map(|p| p.to_string()).collect();
        targets.extend(rewrites.iter().map(|d| format!("{d}/")));
        // One order for every writer, so two overlapping swaps meet at the same first claim.
        targets.sort();
        targets.dedup();
        let body = serde_json::json!({ "txn": txn, "at": chrono::Utc::now().timestamp() }).to_string();
        let claim = |t: String| {
            let (store, body, p) = (Arc::clone(store), body.clone(), claim_path(claims_root, &t));
            async move {
                let put = store.put_opts(&p, PutPayload::from(body), PutMode::Create.into()).await;
                (t, put.map(|_| p))
            }
        };
        // The first claim alone: two runs of the same swap meet there and exactly one goes
        // on. The rest at once (a job's full recompute claims thousands of partitions; one
        // at a time that is minutes of round trips on S3).
        let mut targets = targets.into_iter();
        let first: Vec<_> = match targets.next() {
            Some(t) => vec![claim(t).await],
            None => Vec::new(),
        };
        let rest: Vec<_> = if first.iter().all(|(_, r)| r.is_ok()) {
            futures::stream::iter(targets).map(claim).buffer_unordered(CONCURRENCY).collect().await
        } else {
            Vec::new()
        };
        let mut failure = None;
        for (t, r) in first.into_iter().chain(rest) {
            match r {
                Ok(p) => claims.held.push(p),
                Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                    failure.get_or_insert(LakeError::Conflict(format!("{t} is being replaced by another writer")));
                }
                Err(e) => {
                    failure = Some(e.into());
                }
            }
        }
        if let Some(e) = failure {
            claims.release().await;
            return Err(e);
        }
        if let Err(e) = check_planned(store, visible, removes, rewrites).await {
            claims.release().await;
            return Err(e);
        }
        Ok(claims)
    }

    /// Lets go of every claim (best effort: a claim left behind expires in recovery).
    pub async fn release(&mut self) {
        let store = &self.store;
        futures::stream::iter(self.held.drain(..))
            .for_each_concurrent(CONCURRENCY, |p| async move {
                if let Err(e) = delete_if_present(store, &p).await {
                    tracing::warn!(claim = %p, error = %e, "could not release a claim");
                }
            })
            .await;
    }
}

/// Requests in flight at once while claiming, releasing or checking.
const CONCURRENCY: usize = 32;

/// Directories checked with one listing each; more are checked with one listing of the
/// path they share (a few pages for a whole table, instead of one LIST per partition).
const LISTINGS_PER_DIRECTORY_UP_TO: usize = 8;

/// The objects directly in any of `dirs`, as `store` lists them.
async fn files_in(store: &Arc<dyn ObjectStore>, dirs: &[&str]) -> Result<Vec<Path>, LakeError> {
    let listed: Vec<Path> = if dirs.len() <= LISTINGS_PER_DIRECTORY_UP_TO {
        let mut all = Vec::new();
        for d in dirs {
            let metas: Vec<_> = store.list(Some(&Path::from(*d))).try_collect().await?;
            all.extend(metas.into_iter().map(|m| m.location));
        }
        all
    } else {
        let shared = shared_prefix(dirs);
        let metas: Vec<_> =
            store.list((!shared.is_empty()).then(|| Path::from(shared.as_str())).as_ref()).try_collect().await?;
        metas.into_iter().map(|m| m.location).collect()
    };
    let dirs: HashSet<&str> = dirs.iter().copied().collect();
    Ok(listed.into_iter().filter(|p| dirs.contains(parent(p.as_ref()))).collect())
}

/// The directory of a path ("" at the root).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or_default()
}

/// The longest run of whole path segments every one of `dirs` starts with.
fn shared_prefix(dirs: &[&str]) -> String {
    let mut shared: Vec<&str> = dirs.first().map(|d| d.split('/').collect()).unwrap_or_default();
    for d in &dirs[1.min(dirs.len())..] {
        let same = shared.iter().zip(d.split('/')).take_while(|(a, b)| *a == b).count();
        shared.truncate(same);
    }
    shared.join("/")
}

/// The state a swap planned from is still the state of the store (see [`Claims::take`]).
async fn check_planned(
    store: &Arc<dyn ObjectStore>,
    visible: &Arc<dyn ObjectStore>,
    removes: &[Path],
    rewrites: &[Path],
) -> Result<(), LakeError> {
    // Listings rather than one HEAD per file.
    let remove_dirs: BTreeSet<&str> = removes.iter().map(|p| parent(p.as_ref())).collect();
    let remove_dirs: Vec<&str> = remove_dirs.into_iter().collect();
    let present: HashSet<Path> = files_in(store, &remove_dirs).await?.into_iter().collect();
    if let Some(gone) = removes.iter().find(|f| !present.contains(*f)) {
        return Err(LakeError::Conflict(format!("{gone} was already replaced by another writer")));
    }
    let planned: HashSet<&Path> = removes.iter().collect();
    let rewrite_dirs: Vec<&str> = rewrites.iter().map(|d| d.as_ref()).collect();
    let now = files_in(visible, &rewrite_dirs).await?;
    if let Some(new) = now.iter().find(|p| p.as_ref().ends_with(".parquet") && !planned.contains(p)) {
        return Err(LakeError::Conflict(format!("{new} was published by another writer since this one began")));
    }
    Ok(())
}

/// Deletes claims older than [`WRITING_GRACE`] (their writer crashed: a swap takes seconds).
/// Run after recovery has finished the records those writers left. Returns how many.
pub async fn expire(store: &Arc<dyn ObjectStore>, claims_root: &Path) -> Result<usize, LakeError> {
    let cutoff = chrono::Utc::now() - chrono::Duration::from_std(WRITING_GRACE).unwrap_or_default();
    let old: Vec<Path> = store
        .list(Some(claims_root))
        .try_filter_map(|m| futures::future::ready(Ok((m.last_modified < cutoff).then_some(m.location))))
        .try_collect()
        .await?;
    for p in &old {
        delete_if_present(store, p).await?;
    }
    Ok(old.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    fn setup() -> (Arc<dyn ObjectStore>, Path) {
        (Arc::new(InMemory::new()), Path::from("_claims"))
    }

    #[tokio::test]
    async fn the_second_writer_of_the_same_files_gets_a_conflict_and_holds_nothing() {
        let (s, root) = setup();
        let (a, b) = (Path::from("t/d=1/a.parquet"), Path::from("t/d=1/b.parquet"));
        for p in [&a, &b] {
            s.put(p, PutPayload::from_static(b"x")).await.unwrap();
        }
        let mut first = Claims::take(&s, &s, &root, "1", &[a.clone(), b.clone()], &[]).await.unwrap();
        let err = Claims::take(&s, &s, &root, "2", std::slice::from_ref(&b), &[]).await.unwrap_err();
        assert!(matches!(err, LakeError::Conflict(ref m) if m.contains("b.parquet")), "{err}");
        assert_eq!(s.list(Some(&root)).try_collect::<Vec<_>>().await.unwrap().len(), 2, "only the first's claims");
        // The first finishes: its files are gone. A late second writer claims, then sees that.
        s.delete(&a).await.unwrap();
        first.release().await;
        let err = Claims::take(&s, &s, &root, "2", std::slice::from_ref(&a), &[]).await.unwrap_err();
        assert!(matches!(err, LakeError::Conflict(ref m) if m.contains("already replaced")), "{err}");
        assert!(s.list(Some(&root)).try_collect::<Vec<_>>().await.unwrap().is_empty());
    }

    /// A job's full recompute rewrites thousands of partitions: the check after claiming
    /// lists the table they share once, not each partition (a LIST per partition was
    /// minutes on S3), and still finds a file another writer added to any of them.
    #[tokio::test]
    async fn many_rewritten_directories_are_checked_with_one_listing() {
        let counting = Arc::new(crate::lake::requests::CountingStore::new(Arc::new(InMemory::new())));
        let s: Arc<dyn ObjectStore> = counting.clone();
        let root = Path::from("_claims");
        let dirs: Vec<Path> = (0..300).map(|i| Path::from(format!("derived/t/model=M{}/d={i}", i % 7))).collect();
        let removes: Vec<Path> = dirs.iter().map(|d| d.clone().join("old.parquet")).collect();
        for p in &removes {
            s.put(p, PutPayload::from_static(b"x")).await.unwrap();
        }
        s.put(&Path::from("derived/other/d=1/x.parquet"), PutPayload::from_static(b"x")).await.unwrap();
        let before = counting.counts();
        let mut c = Claims::take(&s, &s, &root, "1", &removes, &dirs).await.unwrap();
        let used = counting.counts();
        assert_eq!(used.put - before.put, 600, "one claim per file and per directory");
        assert!(used.list - before.list <= 2, "{} LISTs", used.list - before.list);
        c.release().await;
        assert!(s.list(Some(&root)).try_collect::<Vec<_>>().await.unwrap().is_empty(), "every claim released");
        // A file published into the 200th partition since: the run stops, holding nothing.
        s.put(&dirs[199].clone().join("new.parquet"), PutPayload::from_static(b"x")).await.unwrap();
        let err = Claims::take(&s, &s, &root, "2", &removes, &dirs).await.unwrap_err();
        assert!(matches!(err, LakeError::Conflict(ref m) if m.contains("d=199/new.parquet")), "{err}");
        // A file of the plan already replaced: likewise.
        s.delete(&removes[250]).await.unwrap();
        let err = Claims::take(&s, &s, &root, "3", &removes[240..], &[]).await.unwrap_err();
        assert!(matches!(err, LakeError::Conflict(ref m) if m.contains("d=250/old.parquet")), "{err}");
        assert!(s.list(Some(&root)).try_collect::<Vec<_>>().await.unwrap().is_empty());
    }

    #[test]
    fn the_shared_prefix_is_of_whole_segments() {
        assert_eq!(shared_prefix(&["a/model=X/d=1", "a/model=Y/d=1"]), "a");
        assert_eq!(shared_prefix(&["a/m=X/d=1", "a/m=X/d=12"]), "a/m=X");
        assert_eq!(shared_prefix(&["a/b"]), "a/b");
        assert_eq!(shared_prefix(&[]), "");
    }

    #[tokio::test]
    async fn a_rewritten_directory_must_hold_only_what_was_planned() {
        let (s, root) = setup();
        let dir = Path::from("derived/t/d=1");
        let mut c = Claims::take(&s, &s, &root, "1", &[], std::slice::from_ref(&dir)).await.unwrap();
        c.release().await;
        // Another publication added a file meanwhile: a run planned on the empty table stops.
        s.put(&dir.clone().join("x.parquet"), PutPayload::from_static(b"x")).await.unwrap();
        let err = Claims::take(&s, &s, &root, "2", &[], std::slice::from_ref(&dir)).await.unwrap_err();
        assert!(matches!(err, LakeError::Conflict(ref m) if m.contains("x.parquet")), "{err}");
        let planned = [dir.clone().join("x.parquet")];
        Claims::take(&s, &s, &root, "3", &planned, &[dir]).await.unwrap().release().await;
        assert_eq!(expire(&s, &root).await.unwrap(), 0, "fresh claims are kept");
    }
}
