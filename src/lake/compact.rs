//! Compaction: merge a partition's small files into one sorted file.
//!
//! Readers never see a half-written state: the merged file is announced in a `writing`
//! transaction record (hidden), written, then the record flips to `committed` (one atomic
//! put: from now on only the merged file is visible); the old files and the record are
//! deleted once the lake's keep time has passed, so a query that listed them before still
//! reads them. See visibility.rs for the protocol and crash recovery.
//!
//! Two processes may compact one lake at once (a `wxlake compact` while `serve` runs its
//! hourly compaction). Each claims the files it replaces first (claims.rs); the one that
//! does not get them leaves that partition to the other, so no partition is ever merged
//! twice into two visible files.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch, UInt64Array};
use datafusion::arrow::compute::{concat_batches, lexsort_to_indices, take_record_batch, SortColumn};
use datafusion::arrow::datatypes::{TimestampMicrosecondType, UInt64Type};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::claims::Claims;
use super::rows::observation_key;
use super::schema::{TableDef, OBSERVATIONS};
use super::visibility::{delete_if_present, TxnRecord, TxnState};
use super::writer::{encode_parquet, new_file_name};
use super::{Lake, LakeError};

/// What compaction did to one table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactStats {
    pub partitions: usize,
    pub files_before: usize,
    pub files_after: usize,
    pub rows: usize,
    /// Rows dropped as a second copy of a natural key (see [`rekey`]).
    pub duplicates: usize,
}

/// Which partitions a compaction rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// Those with more than one file (the hourly compaction, `wxlake compact`).
    Merge,
    /// Also single-file partitions whose rows get other keys or hold one natural key twice
    /// (`wxlake compact --repair`: a lake written before a natural key changed meaning).
    Repair,
}

/// Reads every batch of one Parquet file, adapted to the table's current schema.
pub async fn read_file(store: &Arc<dyn ObjectStore>, path: &Path) -> Result<Vec<RecordBatch>, LakeError> {
    let bytes = store.get(path).await?.bytes().await?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)?.build()?;
    Ok(reader.collect::<Result<Vec<_>, _>>()?)
}

/// Sorts a batch by the table's sort columns (then row_key, so the order is total).
pub fn sort_batch(table: &TableDef, batch: &RecordBatch) -> Result<RecordBatch, LakeError> {
    let mut cols = Vec::new();
    for c in table.sort_cols.iter().chain(std::iter::once(&"row_key")) {
        if let Ok(i) = batch.schema().index_of(c) {
            cols.push(SortColumn { values: Arc::clone(batch.column(i)), options: None });
        }
    }
    if cols.is_empty() || batch.num_rows() < 2 {
        return Ok(batch.clone());
    }
    let idx = lexsort_to_indices(&cols, None)?;
    Ok(take_record_batch(batch, &idx)?)
}

/// Recomputes the `row_key` column where a table's natural key changed meaning after rows
/// were stored: observations are keyed by the report's body, not by the source's wrapper
/// (`METAR KNYC ...` and `KNYC ...` were two rows before). Other tables are returned as
/// they are. True in the second field when some key changed.
pub fn rekey(table: &TableDef, batch: &RecordBatch) -> Result<(RecordBatch, bool), LakeError> {
    if table.name != OBSERVATIONS.name || batch.num_rows() == 0 {
        return Ok((batch.clone(), false));
    }
    let col = |name: &str| batch.schema().index_of(name).map(|i| Arc::clone(batch.column(i)));
    let (station, time, kind, raw, keys) =
        (col("station_code")?, col("observation_time")?, col("report_type")?, col("raw")?, col("row_key")?);
    let (station, kind, raw) = (station.as_string::<i32>(), kind.as_string::<i32>(), raw.as_string::<i32>());
    let time = time.as_primitive::<TimestampMicrosecondType>();
    let old = keys.as_primitive::<UInt64Type>();
    let new: UInt64Array = (0..batch.num_rows())
        .map(|i| observation_key(station.value(i), time.value(i), kind.value(i), raw.value(i)))
        .collect::<Vec<u64>>()
        .into();
    if new.values() == old.values() {
        return Ok((batch.clone(), false));
    }
    let mut cols = batch.columns().to_vec();
    cols[batch.schema().index_of("row_key")?] = Arc::new(new);
    Ok((RecordBatch::try_new(batch.schema(), cols)?, true))
}

/// Drops rows whose row_key was already seen (concurrent writers, or keys recomputed by
/// [`rekey`]); the first occurrence, in file order, is kept.
fn dedup(batch: &RecordBatch) -> Result<RecordBatch, LakeError> {
    let Ok(i) = batch.schema().index_of("row_key") else { return Ok(batch.clone()) };
    let keys = batch.column(i).as_primitive::<UInt64Type>();
    let mut seen = HashSet::with_capacity(keys.len());
    let keep: Vec<u64> = (0..keys.len()).filter(|&r| seen.insert(keys.value(r))).map(|r| r as u64).collect();
    if keep.len() == batch.num_rows() {
        return Ok(batch.clone());
    }
    Ok(take_record_batch(batch, &UInt64Array::from(keep))?)
}

impl Lake {
    /// Merges every partition of `table` that has more than one file.
    pub async fn compact(&self, table: &TableDef) -> Result<CompactStats, LakeError> {
        self.rewrite(table, Rewrite::Merge).await
    }

    /// Rewrites the partitions of `table` that `how` selects: merged, keys recomputed
    /// ([`rekey`]), one row per natural key, sorted.
    pub async fn rewrite(&self, table: &TableDef, how: Rewrite) -> Result<CompactStats, LakeError> {
        let _guard = self.lock_writes().await;
        let store = self.store();
        let root = self.table_path(table.name);
        let metas: Vec<_> = store.list(Some(&root)).try_collect().await?;
        let mut parts: BTreeMap<String, Vec<Path>> = BTreeMap::new();
        for m in metas {
            let loc = m.location.to_string();
            if let Some((dir, _)) = loc.rsplit_once('/') {
                if loc.ends_with(".parquet") {
                    parts.entry(dir.to_string()).or_default().push(m.location);
                }
            }
        }
        let mut stats = CompactStats::default();
        let mut committed = Vec::new();
        for (dir, mut files) in parts {
            stats.files_before += files.len();
            if files.len() < 2 && how == Rewrite::Merge {
                stats.files_after += files.len();
                continue;
            }
            files.sort();
            let mut batches = Vec::new();
            for f in &files {
                batches.extend(read_file(&store, f).await?);
            }
            let merged = concat_batches(&table.file_schema(), &batches)?;
            let (merged, rekeyed) = rekey(table, &merged)?;
            let unique = dedup(&merged)?;
            let dropped = merged.num_rows() - unique.num_rows();
            if files.len() < 2 && dropped == 0 && !rekeyed {
                // A repair with nothing to repair here.
                stats.files_after += files.len();
                continue;
            }
            let merged = sort_batch(table, &unique)?;
            let out = Path::from(dir.as_str()).join(new_file_name());
            let bytes = encode_parquet(table, &merged)?;
            match self.swap(&files, &out, bytes).await {
                Ok(rec) => {
                    committed.push(rec);
                    stats.partitions += 1;
                    stats.files_after += 1;
                    stats.rows += merged.num_rows();
                    stats.duplicates += dropped;
                }
                Err(LakeError::Conflict(why)) => {
                    tracing::info!(partition = %dir, %why, "left to the writer compacting it");
                    stats.files_after += files.len();
                }
                Err(e) => return Err(e),
            }
        }
        // The swaps' records, one a partition, become one: each would stay for the keep
        // time and be read by every listing until then. Once per table, not per partition:
        // the retirement's listing of `_txn/`.
        if !committed.is_empty() {
            if let Err(e) = self.visible().merge_committed(&committed).await {
                tracing::warn!(table = table.name, error = %e, "compaction records left one a partition");
            }
            self.retire_replaced().await;
        }
        Ok(stats)
    }

    /// Replaces `old` files by `new` atomically for readers (see module docs), returning
    /// the committed record, or returns [`LakeError::Conflict`] having changed nothing when
    /// another writer holds them.
    async fn swap(&self, old: &[Path], new: &Path, bytes: bytes::Bytes) -> Result<TxnRecord, LakeError> {
        let vis = self.visible();
        let id = uuid::Uuid::new_v4().simple().to_string();
        let mut claims = Claims::take(vis.inner(), &self.store(), &self.claims_root(), &id, old, &[]).await?;
        let done = self.swap_claimed(id, old, new, bytes).await;
        claims.release().await;
        done
    }

    async fn swap_claimed(
        &self,
        id: String,
        old: &[Path],
        new: &Path,
        bytes: bytes::Bytes,
    ) -> Result<TxnRecord, LakeError> {
        let vis = self.visible();
        let mut rec = TxnRecord::writing(id, vec![new.to_string()], old.iter().map(|p| p.to_string()).collect());
        let version = vis.create_record(&rec).await?;
        let committed = async {
            vis.inner().put(new, PutPayload::from(bytes)).await?;
            rec.commit();
            vis.update_record(&rec, &version).await
        }
        .await;
        if let Err(e) = committed {
            // Not committed, or not known to be (a lost reply): mark the record aborted
            // first, so the new file stays hidden and the old ones visible, then undo.
            rec.state = TxnState::Aborted;
            vis.put_record(&rec).await.ok();
            delete_if_present(vis.inner(), new).await.ok();
            vis.drop_record(&rec.id).await.ok();
            return Err(e.into());
        }
        Ok(rec)
    }
}
