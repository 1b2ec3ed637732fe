//! Compaction: merge a partition's small files into one sorted file, in one Delta
//! `OPTIMIZE` commit (`dataChange: false`: the table's rows do not change) per table.
//!
//! wxlake merges the files itself rather than through delta-rs's optimize, which
//! concatenates files without restoring the table's sort order. The merged files are put
//! first (no snapshot names them yet), then one commit removes the old files and adds the
//! new: readers see one or the other. The old files stay for the lake's keep time (queries
//! on older snapshots still read them), then vacuum deletes them.
//!
//! Two processes may compact one lake at once (a `wxlake compact` while `serve` runs its
//! hourly compaction): both remove the same files, so the second commit conflicts and
//! changes nothing (its merged files are deleted), and no partition is ever merged twice
//! into two visible files. An append committed meanwhile stays beside the merged file.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{new_null_array, AsArray, RecordBatch, UInt64Array};
use datafusion::arrow::compute::{concat_batches, lexsort_to_indices, take_record_batch, SortColumn};
use datafusion::arrow::datatypes::{TimestampMicrosecondType, UInt64Type};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::availability::fill_times;
use super::delta::{ActiveFile, Change, NewFile, TableShape};
use super::rows::observation_key;
use super::schema::{TableDef, OBSERVATIONS};
use super::store::delete_if_present;
use super::writer::{encode_parquet, new_file_name};
use super::{Lake, LakeError};

/// What compaction did to one table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CompactStats {
    pub partitions: usize,
    pub files_before: usize,
    pub files_after: usize,
    pub rows: usize,
    /// Rows dropped as a second copy of a natural key (see [`rekey`]).
    pub duplicates: usize,
    /// Another writer rewrote the same files first: nothing changed here.
    pub conflict: bool,
}

/// Which partitions a compaction rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// Those with more than one file (the hourly compaction, `wxlake compact`).
    Merge,
    /// Also single-file partitions whose rows get other keys or hold one natural key twice
    /// (`wxlake compact --repair`: a lake written before a natural key changed meaning), or
    /// whose file lacks `received_at` and `available_at` (the upgrade of a lake written
    /// before they existed: `lake::upgrade`).
    Repair,
}

/// Reads every batch of one Parquet file, as it is.
pub async fn read_file(store: &Arc<dyn ObjectStore>, path: &Path) -> Result<Vec<RecordBatch>, LakeError> {
    let bytes = store.get(path).await?.bytes().await?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)?.build()?;
    Ok(reader.collect::<Result<Vec<_>, _>>()?)
}

/// A stored batch in the table's file schema: a file written before the two times
/// existed gets them (`availability::fill_times`, `model` the forecasts partition's), and
/// a later nullable column it lacks (forecasts' `superseded_at`) is NULL, so the batches of
/// one partition concatenate.
pub fn conform(table: &TableDef, model: Option<&str>, batch: &RecordBatch) -> Result<RecordBatch, LakeError> {
    let batch = fill_times(table, model, batch)?;
    let schema = table.file_schema();
    if batch.num_columns() == schema.fields().len() {
        return Ok(batch);
    }
    let cols = schema
        .fields()
        .iter()
        .map(|f| match batch.schema().index_of(f.name()) {
            Ok(i) => Ok(Arc::clone(batch.column(i))),
            Err(_) if f.is_nullable() => Ok(new_null_array(f.data_type(), batch.num_rows())),
            Err(e) => Err(e.into()),
        })
        .collect::<Result<Vec<_>, LakeError>>()?;
    Ok(RecordBatch::try_new(schema, cols)?)
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
    /// Sorts `rows` by the table's order and puts them as a new file of the partition `dir`
    /// (named by no snapshot until a commit adds it): where it went and the file to add.
    pub(super) async fn put_partition_file(
        &self,
        table: &TableDef,
        dir: &str,
        rows: &RecordBatch,
    ) -> Result<(Path, NewFile), LakeError> {
        let sorted = sort_batch(table, rows)?;
        let name = new_file_name();
        let out = self.table_path(&format!("{}/{dir}", table.name)).join(name.as_str());
        let bytes = encode_parquet(table, &sorted)?;
        let size = bytes.len() as u64;
        self.store().put(&out, PutPayload::from(bytes)).await?;
        Ok((out, NewFile { partition_dir: dir.to_string(), name, size, rows: sorted.num_rows() as u64 }))
    }

    /// Merges every partition of `table` that has more than one file.
    pub async fn compact(&self, table: &TableDef) -> Result<CompactStats, LakeError> {
        self.rewrite(table, Rewrite::Merge).await
    }

    /// Rewrites the partitions of `table` that `how` selects: merged, keys recomputed
    /// ([`rekey`]), one row per natural key, sorted; one commit for the table.
    pub async fn rewrite(&self, table: &TableDef, how: Rewrite) -> Result<CompactStats, LakeError> {
        let _guard = self.lock_writes().await;
        let store = self.store();
        let shape = TableShape::lake_table(table);
        let (snapshot, active) = self.table_files(&shape).await?;
        let mut parts: BTreeMap<String, Vec<ActiveFile>> = BTreeMap::new();
        for f in active {
            parts.entry(f.partition_dir().to_string()).or_default().push(f);
        }
        let mut stats = CompactStats::default();
        let (mut added, mut removed, mut written) = (Vec::new(), Vec::new(), Vec::new());
        for (dir, files) in parts {
            stats.files_before += files.len();
            if files.len() < 2 && how == Rewrite::Merge {
                stats.files_after += files.len();
                continue;
            }
            let mut batches = Vec::new();
            let mut filled = false;
            for f in &files {
                let model = f.partition_values.get("model").cloned().flatten();
                for b in read_file(&store, &f.location).await? {
                    // A file written before a column existed gets it here, so one merged
                    // file has one schema.
                    let adapted = conform(table, model.as_deref(), &b)?;
                    // Only the times are worth a repair: a missing `superseded_at` reads as
                    // NULL (current) from the file as it is.
                    filled |= b.schema().index_of("available_at").is_err();
                    batches.push(adapted);
                }
            }
            let merged = concat_batches(&table.file_schema(), &batches)?;
            let (merged, rekeyed) = rekey(table, &merged)?;
            let unique = dedup(&merged)?;
            let dropped = merged.num_rows() - unique.num_rows();
            if files.len() < 2 && dropped == 0 && !rekeyed && !filled {
                // A repair with nothing to repair here.
                stats.files_after += files.len();
                continue;
            }
            let (out, file) = self.put_partition_file(table, &dir, &unique).await?;
            written.push(out);
            stats.rows += file.rows as usize;
            added.push(file);
            removed.extend(files);
            stats.partitions += 1;
            stats.files_after += 1;
            stats.duplicates += dropped;
        }
        if added.is_empty() {
            return Ok(stats);
        }
        match self.commit(&shape, &snapshot, Change::Rewrite { files: added, remove: removed }).await {
            Ok(_) => Ok(stats),
            Err(e) => {
                for p in &written {
                    delete_if_present(store.as_ref(), p).await.ok();
                }
                match e {
                    LakeError::Conflict(why) => {
                        tracing::info!(table = table.name, %why, "left to the writer compacting it");
                        Ok(CompactStats {
                            files_before: stats.files_before,
                            files_after: stats.files_before,
                            conflict: true,
                            ..Default::default()
                        })
                    }
                    e => Err(e),
                }
            }
        }
    }
}
