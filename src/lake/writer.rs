//! Idempotent, partitioned Parquet writes.
//!
//! A write groups records by partition, drops those whose natural key is already stored
//! (in this batch or in the partition's files), sorts the rest by the table's sort order
//! and writes one new zstd Parquet file per touched partition with a single atomic put.
//! Encoding runs on rayon; store I/O is async and concurrent.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::UInt64Type;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::arrow::{ArrowWriter, ProjectionMask};
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::metadata::SortingColumn;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rayon::prelude::*;

use super::rows::LakeRecord;
use super::schema::TableDef;
use super::{Lake, LakeError};

/// Hash containers for row keys and partition keys (already hashes of trusted fields,
/// so a fast non-DoS-resistant hasher is right; SipHash was a visible share of ingest).
type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// What a write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub stored: usize,
    pub duplicate: usize,
    pub files: usize,
}

impl std::ops::AddAssign for WriteStats {
    fn add_assign(&mut self, o: Self) {
        self.stored += o.stored;
        self.duplicate += o.duplicate;
        self.files += o.files;
    }
}

/// Parquet settings for every lake file: zstd, page statistics, declared sort order.
pub fn writer_props(table: &TableDef) -> WriterProperties {
    props_for(&table.file_schema(), table.sort_cols)
}

/// The lake's Parquet settings for any schema sorted by `sort_cols` (derived tables too):
/// zstd, page statistics (readers prune by them), the sort order recorded in the footer.
pub fn props_for<S: AsRef<str>>(schema: &datafusion::arrow::datatypes::Schema, sort_cols: &[S]) -> WriterProperties {
    let sorting: Vec<SortingColumn> = sort_cols
        .iter()
        .filter_map(|c| schema.index_of(c.as_ref()).ok())
        .map(|i| SortingColumn { column_idx: i as i32, descending: false, nulls_first: false })
        .collect();
    let mut props = WriterProperties::builder();
    if schema.index_of("row_key").is_ok() {
        // A hash per row never repeats: dictionary-encoding it only burns the writer's
        // time filling a dictionary that falls back to plain encoding anyway.
        props = props.set_column_dictionary_enabled("row_key".into(), false);
    }
    props
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(256 * 1024))
        .set_sorting_columns(Some(sorting))
        .build()
}

/// Encodes one batch as a Parquet file in memory.
pub fn encode_parquet(table: &TableDef, batch: &RecordBatch) -> Result<Bytes, LakeError> {
    let mut buf = Vec::with_capacity(batch.get_array_memory_size() / 4 + 1024);
    let mut w = ArrowWriter::try_new(&mut buf, table.file_schema(), Some(writer_props(table)))?;
    w.write(batch)?;
    w.close()?;
    Ok(Bytes::from(buf))
}

/// A new, unique data file name (sortable by creation time).
pub fn new_file_name() -> String {
    format!("part-{}-{}.parquet", Utc::now().format("%Y%m%dT%H%M%S%6f"), uuid::Uuid::new_v4().simple())
}

/// Lists the visible Parquet files of one partition directory.
pub async fn partition_files(store: &Arc<dyn ObjectStore>, dir: &Path) -> Result<Vec<Path>, LakeError> {
    let metas: Vec<_> = store.list(Some(dir)).try_collect().await?;
    let mut files: Vec<Path> =
        metas.into_iter().map(|m| m.location).filter(|p| p.as_ref().ends_with(".parquet")).collect();
    files.sort();
    Ok(files)
}

/// Reads the `row_key` column of every file in a partition.
async fn existing_keys(store: &Arc<dyn ObjectStore>, dir: &Path) -> Result<FastSet<u64>, LakeError> {
    let mut keys = FastSet::default();
    for f in partition_files(store, dir).await? {
        let bytes = store.get(&f).await?.bytes().await?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
        let idx = builder.schema().index_of("row_key")?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), [idx]);
        for batch in builder.with_projection(mask).build()? {
            let batch = batch?;
            keys.extend(batch.column(0).as_primitive::<UInt64Type>().values().iter().copied());
        }
    }
    Ok(keys)
}

impl Lake {
    /// Stores `records`, skipping any whose natural key is already in the lake.
    pub async fn write<R: LakeRecord + 'static>(&self, records: Vec<R>) -> Result<WriteStats, LakeError> {
        self.write_chunks(vec![records]).await
    }

    /// Stores the records of several chunks (one per decoded input, say) as one write:
    /// one new file per touched partition, the earlier chunk's row winning where chunks
    /// repeat a natural key. Taking the chunks as they are saves concatenating them, which
    /// for a bulk load copies gigabytes of rows once more.
    pub async fn write_chunks<R: LakeRecord + 'static>(&self, chunks: Vec<Vec<R>>) -> Result<WriteStats, LakeError> {
        let total: usize = chunks.iter().map(Vec::len).sum();
        if total == 0 {
            return Ok(WriteStats::default());
        }
        let table = R::table();
        let _guard = self.lock_writes().await;
        let store = self.store();
        let inserted_at = Utc::now();

        // Group by partition, computing keys once (in parallel, without allocating); the
        // partition path is formatted once per group. Rows are numbered across chunks in
        // order.
        let keyed: Vec<(u64, u64)> =
            chunks.par_iter().flat_map_iter(|c| c.iter().map(|r| (r.partition_key(), r.row_key()))).collect();
        // Rows of one input mostly arrive partition by partition: consecutive rows of the
        // same partition skip the map lookup.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut slot_of: FastMap<u64, usize> = FastMap::default();
        let mut last: Option<(u64, usize)> = None;
        for (i, (r, (p, _))) in chunks.iter().flatten().zip(&keyed).enumerate() {
            let slot = match last {
                Some((lp, slot)) if lp == *p => slot,
                _ => *slot_of.entry(*p).or_insert_with(|| {
                    groups.push(Vec::new());
                    names.push(r.partition());
                    groups.len() - 1
                }),
            };
            groups[slot].push(i);
            last = Some((*p, slot));
        }
        let parts: BTreeMap<String, Vec<usize>> = names.into_iter().zip(groups).collect();

        // Existing keys per partition (concurrent reads).
        let work: Vec<(Path, Vec<usize>)> =
            parts.into_iter().map(|(p, idx)| (self.table_path(&format!("{}/{p}", table.name)), idx)).collect();
        let work: Vec<(Path, Vec<usize>, FastSet<u64>)> = futures::stream::iter(work)
            .map(|(dir, idx)| {
                let store = Arc::clone(&store);
                async move { existing_keys(&store, &dir).await.map(|k| (dir, idx, k)) }
            })
            .buffer_unordered(8)
            .try_collect()
            .await?;

        // Per partition on rayon: drop keys already stored or seen earlier in this batch
        // (the first occurrence wins; a natural key includes its partition's fields), sort,
        // build and encode.
        let encoded = tokio::task::spawn_blocking(move || {
            let records: Vec<&R> = chunks.iter().flatten().collect();
            let encoded = work
                .into_par_iter()
                .filter_map(|(dir, idx, mut seen)| {
                    seen.reserve(idx.len());
                    let mut rows: Vec<usize> = idx.into_iter().filter(|&i| seen.insert(keyed[i].1)).collect();
                    if rows.is_empty() {
                        return None;
                    }
                    // Sort compact (sort key, row key, index) entries rather than indexes
                    // into the rows; the stable sort merges the already-sorted runs inputs
                    // usually arrive in (one per station file) in near-linear time.
                    let mut order: Vec<_> = rows.iter().map(|&i| (records[i].sort_key(), keyed[i].1, i)).collect();
                    order.sort();
                    rows.clear();
                    rows.extend(order.into_iter().map(|(_, _, i)| i));
                    let refs: Vec<&R> = rows.iter().map(|&i| records[i]).collect();
                    let keys: Vec<u64> = rows.iter().map(|&i| keyed[i].1).collect();
                    let file = R::to_batch(&refs, &keys, inserted_at)
                        .map_err(LakeError::from)
                        .and_then(|batch| encode_parquet(table, &batch));
                    Some(file.map(|bytes| (dir.clone().join(new_file_name()), bytes, rows.len())))
                })
                .collect::<Result<Vec<_>, LakeError>>();
            // Free the rows on every core: dropping ten million records (two strings
            // each) on this one thread took longer than encoding some of them.
            drop(records);
            chunks.into_par_iter().flat_map(Vec::into_par_iter).for_each(drop);
            encoded
        })
        .await
        .map_err(|e| LakeError::Join(e.to_string()))??;

        let stored: usize = encoded.iter().map(|(_, _, n)| n).sum();
        let stats = WriteStats { stored, duplicate: total - stored, files: encoded.len() };
        futures::stream::iter(encoded)
            .map(|(path, bytes, _)| {
                let store = Arc::clone(&store);
                async move { store.put(&path, PutPayload::from(bytes)).await }
            })
            .buffer_unordered(8)
            .try_collect::<Vec<_>>()
            .await?;
        Ok(stats)
    }
}

/// Builds a batch of `R` rows without storing them (benchmarks and the live path).
pub fn batch_of<R: LakeRecord>(records: &[R], inserted_at: DateTime<Utc>) -> Result<RecordBatch, LakeError> {
    let refs: Vec<&R> = records.iter().collect();
    let keys: Vec<u64> = records.iter().map(|r| r.row_key()).collect();
    Ok(R::to_batch(&refs, &keys, inserted_at)?)
}
