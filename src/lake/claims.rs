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

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
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
        for t in &targets {
            let p = claim_path(claims_root, t);
            let put = store.put_opts(&p, PutPayload::from(body.clone()), PutMode::Create.into()).await;
            match put {
                Ok(_) => claims.held.push(p),
                Err(object_store::Error::AlreadyExists { .. }) | Err(object_store::Error::Precondition { .. }) => {
                    claims.release().await;
                    return Err(LakeError::Conflict(format!("{t} is being replaced by another writer")));
                }
                Err(e) => {
                    claims.release().await;
                    return Err(e.into());
                }
            }
        }
        if let Err(e) = check_planned(store, visible, removes, rewrites).await {
            claims.release().await;
            return Err(e);
        }
        Ok(claims)
    }

    /// Lets go of every claim (best effort: a claim left behind expires in recovery).
    pub async fn release(&mut self) {
        for p in self.held.drain(..) {
            if let Err(e) = delete_if_present(&self.store, &p).await {
                tracing::warn!(claim = %p, error = %e, "could not release a claim");
            }
        }
    }
}

/// The state a swap planned from is still the state of the store (see [`Claims::take`]).
async fn check_planned(
    store: &Arc<dyn ObjectStore>,
    visible: &Arc<dyn ObjectStore>,
    removes: &[Path],
    rewrites: &[Path],
) -> Result<(), LakeError> {
    // One listing per directory rather than one HEAD per file.
    let mut by_dir: BTreeMap<String, Vec<&Path>> = BTreeMap::new();
    for p in removes {
        let s = p.as_ref();
        by_dir.entry(s.rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_default()).or_default().push(p);
    }
    for (dir, files) in by_dir {
        let present: HashSet<Path> = store
            .list_with_delimiter(Some(&Path::from(dir.as_str())))
            .await?
            .objects
            .into_iter()
            .map(|m| m.location)
            .collect();
        if let Some(gone) = files.iter().find(|f| !present.contains(**f)) {
            return Err(LakeError::Conflict(format!("{gone} was already replaced by another writer")));
        }
    }
    let planned: HashSet<&Path> = removes.iter().collect();
    for dir in rewrites {
        let now: Vec<Path> = visible.list(Some(dir)).map_ok(|m| m.location).try_collect().await?;
        if let Some(new) = now.iter().find(|p| p.as_ref().ends_with(".parquet") && !planned.contains(p)) {
            return Err(LakeError::Conflict(format!("{new} was published by another writer since this one began")));
        }
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
