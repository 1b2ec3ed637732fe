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

use super::availability;
use super::delta::{backoff, partitions_predicate, Change, NewFile, TableShape, COMMIT_ATTEMPTS};
use super::rows::{LakeRecord, RowTimes};
use super::schema::{TableDef, Versions};
use super::{blocking, Lake, LakeError};

/// Hash containers for row keys and partition keys (already hashes of trusted fields,
/// so a fast non-DoS-resistant hasher is right; SipHash was a visible share of ingest).
/// Also for other keys the lake's own rows make (the bracket inputs' name numbers).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
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

/// Reads the `row_key` column of every file in a partition (of one snapshot).
async fn existing_keys(store: &Arc<dyn ObjectStore>, files: &[Path]) -> Result<FastSet<u64>, LakeError> {
    let mut keys = FastSet::default();
    for f in files {
        let bytes = store.get(f).await?.bytes().await?;
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
    pub async fn write_chunks<R: LakeRecord + 'static, C: Chunk<R>>(
        &self,
        chunks: Vec<C>,
    ) -> Result<WriteStats, LakeError> {
        let total: usize = chunks.iter().map(|c| c.rows().len()).sum();
        if total == 0 {
            return Ok(WriteStats::default());
        }
        // Runs of at most SLICE_ROWS rows of one chunk: (chunk, first row).
        let spans: Vec<(usize, usize)> = chunks
            .iter()
            .enumerate()
            .flat_map(|(c, chunk)| (0..chunk.rows().len()).step_by(SLICE_ROWS).map(move |start| (c, start)))
            .collect();
        if spans.len() > u32::MAX as usize {
            return Err(LakeError::TooLarge("a write takes at most 2^32 slices of 65,536 rows"));
        }
        let table = R::table();
        let _guard = self.lock_writes().await;
        let inserted_at = Utc::now();

        // Row keys and partition groups, a slice at a time on every core (one large input
        // is split as well as many small ones are spread).
        let (chunks, slices, parts) = blocking(move || {
            let grouped: Vec<(Slice, Vec<Group>)> = spans
                .par_iter()
                .map(|&(chunk, start)| {
                    let all = chunks[chunk].rows();
                    let rows = &all[start..(start + SLICE_ROWS).min(all.len())];
                    let (keys, groups) = group_rows(rows);
                    (Slice { chunk, start, keys }, groups)
                })
                .collect();
            let mut slices = Vec::with_capacity(grouped.len());
            let mut parts: BTreeMap<String, PartRows> = BTreeMap::new();
            for (s, (slice, groups)) in grouped.into_iter().enumerate() {
                slices.push(slice);
                for g in groups {
                    parts.entry(g.name).or_default().push((s as u32, g.rows));
                }
            }
            (chunks, slices, parts)
        })
        .await?;

        let rows =
            Arc::new(Rows { chunks, slices, parts: parts.into_iter().collect(), _rows: std::marker::PhantomData });
        let shape = TableShape::lake_table(table);
        let mut attempt = 0;
        let mut outcome = loop {
            attempt += 1;
            match self.store_once(&shape, table, &rows, inserted_at).await {
                Err(LakeError::Conflict(why)) if attempt < COMMIT_ATTEMPTS => {
                    // Another process committed to a partition this write read: read the
                    // keys again on the new snapshot.
                    tracing::info!(table = table.name, attempt, %why, "write conflicted; retrying on a new snapshot");
                    backoff(attempt).await;
                }
                done => break done,
            }
        };
        let versions = match &mut outcome {
            Ok(Stored { republished, .. }) if !republished.is_empty() => {
                let (shared, republished) = (Arc::clone(&rows), std::mem::take(republished));
                let candidates = blocking(move || republished_batches(&shared, republished, inserted_at)).await??;
                self.store_versions(table, &candidates).await
            }
            _ => Ok((0, 0)),
        };
        if let Ok(rows) = Arc::try_unwrap(rows) {
            blocking(move || rows.chunks.into_par_iter().for_each(Chunk::free)).await?;
        }
        let (Stored { rows, files, .. }, (versions, version_files)) = (outcome?, versions?);
        let stored = rows + versions;
        Ok(WriteStats { stored, duplicate: total - stored, files: files + version_files })
    }

    /// One attempt of a write on the table's latest snapshot: drops the keys stored in the
    /// touched partitions, puts a file per partition, commits them as one append. Returns
    /// the rows and files stored. Files put by an attempt that does not commit are
    /// deleted (or, after a crash, by vacuum: no snapshot names them).
    async fn store_once<R: LakeRecord + 'static, C: Chunk<R>>(
        &self,
        shape: &TableShape,
        table: &'static TableDef,
        rows: &Arc<Rows<R, C>>,
        inserted_at: DateTime<Utc>,
    ) -> Result<Stored, LakeError> {
        let store = self.store();
        let (snapshot, active) = self.table_files(shape).await?;
        let mut by_dir: FastMap<&str, Vec<Path>> = FastMap::default();
        for f in &active {
            by_dir.entry(f.partition_dir()).or_default().push(f.location.clone());
        }
        // Existing keys per partition (concurrent reads).
        let work: Vec<(usize, Vec<Path>)> = rows
            .parts
            .iter()
            .enumerate()
            .map(|(i, (p, _))| (i, by_dir.get(p.as_str()).cloned().unwrap_or_default()))
            .collect();
        let seen: Vec<(usize, FastSet<u64>)> = futures::stream::iter(work)
            .map(|(i, files)| {
                let store = Arc::clone(&store);
                async move { existing_keys(&store, &files).await.map(|k| (i, k)) }
            })
            .buffer_unordered(8)
            .try_collect()
            .await?;

        // Each partition's file is put as soon as it is encoded, while others still encode:
        // waiting for the last one left the store idle for most of the write.
        let (tx, rx) = tokio::sync::mpsc::channel::<(Path, Bytes)>(16);
        let puts = tokio::spawn(put_all(Arc::clone(&store), rx));
        let (shared, root) = (Arc::clone(rows), self.table_path(table.name));
        let encoded = blocking(move || {
            let rows = shared;
            let encoded = seen
                .into_par_iter()
                .map(|(i, seen)| {
                    let (dir, part) = &rows.parts[i];
                    let (file, republished) =
                        encode_partition(table, &rows.chunks, &rows.slices, part, seen, inserted_at)?;
                    let republished = (!republished.is_empty()).then_some((i, republished));
                    let Some((file, n)) = file else {
                        return Ok((None, republished));
                    };
                    let name = new_file_name();
                    let size = file.len() as u64;
                    let mut at = root.clone();
                    for p in dir.split('/') {
                        at = at.join(p);
                    }
                    let at = at.join(name.as_str());
                    // A closed channel means a put failed; `put_all` reports why.
                    tx.blocking_send((at, file)).map_err(|_| LakeError::PutAborted)?;
                    Ok((Some(NewFile { partition_dir: dir.clone(), name, size, rows: n as u64 }), republished))
                })
                .collect::<Result<Vec<_>, LakeError>>();
            drop(tx);
            encoded
        })
        .await?;
        let put = puts.await.map_err(LakeError::Join)?;
        let (new, republished): (Vec<NewFile>, Vec<_>) = match (put, encoded) {
            (Ok(()), Ok(parts)) => {
                let (files, republished): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
                (files.into_iter().flatten().collect(), republished.into_iter().flatten().collect())
            }
            // A failed put explains an aborted encode better than the abort does.
            (Err(e), _) | (Ok(()), Err(e)) => return Err(e),
        };
        let stored: usize = new.iter().map(|f| f.rows as usize).sum();
        let count = new.len();
        let read = partitions_predicate(
            shape.partition_cols.first().map_or("", |(c, _)| c.as_str()),
            rows.parts.iter().filter_map(|(p, _)| p.split('/').next()?.split_once('=').map(|(_, v)| v)),
        );
        let written: Vec<Path> = new
            .iter()
            .map(|f| self.table_path(&format!("{}/{}", table.name, f.partition_dir)).join(f.name.as_str()))
            .collect();
        if let Err(e) = self.commit(shape, &snapshot, Change::Append { files: new, read }).await {
            for p in &written {
                store.delete(p).await.ok();
            }
            return Err(e);
        }
        Ok(Stored { rows: stored, files: count, republished })
    }
}

/// What one attempt of a write stored.
struct Stored {
    rows: usize,
    files: usize,
    /// Per partition (index in the write's parts), the rows whose natural key was stored
    /// already, for a table that keeps versions: (slice, row) pairs.
    republished: Vec<(usize, Vec<(u32, u32)>)>,
}

/// The rows of `republished` as one batch per partition, keyed by their values
/// ([`LakeRecord::version_key`]) and known when received (`lake::versions`).
fn republished_batches<R: LakeRecord, C: Chunk<R>>(
    rows: &Rows<R, C>,
    republished: Vec<(usize, Vec<(u32, u32)>)>,
    inserted_at: DateTime<Utc>,
) -> Result<Vec<(String, RecordBatch)>, LakeError> {
    republished
        .into_iter()
        .map(|(part, picked)| {
            let mut refs = Vec::with_capacity(picked.len());
            let mut times = RowTimes { inserted_at: inserted_at.timestamp_micros(), ..Default::default() };
            for (s, i) in picked {
                let slice = &rows.slices[s as usize];
                let chunk = &rows.chunks[slice.chunk];
                refs.push(&chunk.rows()[slice.start + i as usize]);
                let received = chunk.received_at().unwrap_or(inserted_at).timestamp_micros();
                times.received_at.push(received);
                times.available_at.push(received);
            }
            let keys: Vec<u64> = refs.iter().map(|r| r.version_key()).collect();
            Ok((rows.parts[part].0.clone(), R::to_batch(&refs, &keys, times)?))
        })
        .collect()
}

/// A write's rows, kept until it commits (a retried attempt reads them again).
struct Rows<R, C: Chunk<R>> {
    chunks: Vec<C>,
    slices: Vec<Slice>,
    /// Each partition's directory and rows.
    parts: Vec<(String, PartRows)>,
    _rows: std::marker::PhantomData<fn() -> R>,
}

/// The rows of one chunk of a write: owned (a decoded input, freed with the write) or
/// shared (the write path's pending inputs, which it keeps until the write is done, so the
/// write reads them where they are instead of copying them).
pub trait Chunk<R>: Send + Sync + 'static {
    fn rows(&self) -> &[R];
    /// When the write path received these rows (its clock), for rows that arrived live:
    /// they were known then, so that is their `available_at` too. `None` for a backfill:
    /// received at the write, known since their source published them
    /// (`lake::availability`).
    fn received_at(&self) -> Option<DateTime<Utc>> {
        None
    }
    /// Frees the chunk once written.
    fn free(self);
}

impl<R: Send + Sync + 'static> Chunk<R> for Vec<R> {
    fn rows(&self) -> &[R] {
        self
    }
    /// On every core: dropping ten million records on one thread took longer than encoding
    /// some of them.
    fn free(self) {
        self.into_par_iter().for_each(drop);
    }
}

/// Rows keyed and grouped per task: enough to amortise a task, few enough that one large
/// input spreads over every core.
const SLICE_ROWS: usize = 1 << 16;

/// A run of rows of one chunk (from `start`) and their row keys.
struct Slice {
    chunk: usize,
    start: usize,
    keys: Vec<u64>,
}

/// One partition's rows of one slice (indexes from the slice's start).
struct Group {
    name: String,
    rows: Vec<u32>,
}

/// A partition's rows: (slice, row indexes) in input order.
type PartRows = Vec<(u32, Vec<u32>)>;

/// The row keys of `rows` and their indexes grouped by partition (in row order). Rows of
/// one input mostly arrive partition by partition: consecutive rows of the same partition
/// skip the map lookup, and a partition's path is formatted once per slice.
fn group_rows<R: LakeRecord>(rows: &[R]) -> (Vec<u64>, Vec<Group>) {
    let mut keys = Vec::with_capacity(rows.len());
    let mut groups: Vec<Group> = Vec::new();
    let mut slot_of: FastMap<u64, usize> = FastMap::default();
    let mut last: Option<(u64, usize)> = None;
    for (i, r) in rows.iter().enumerate() {
        keys.push(r.row_key());
        let p = r.partition_key();
        let slot = match last {
            Some((lp, slot)) if lp == p => slot,
            _ => *slot_of.entry(p).or_insert_with(|| {
                groups.push(Group { name: r.partition(), rows: Vec::new() });
                groups.len() - 1
            }),
        };
        groups[slot].rows.push(i as u32);
        last = Some((p, slot));
    }
    (keys, groups)
}

/// One partition's new file: drops keys already stored or seen earlier in this write (the
/// first occurrence wins; a natural key includes its partition's fields), sorts, builds
/// and encodes. The file is `None` when every row was a duplicate; else it comes with its
/// row count. Beside it, for a table that keeps versions ([`Versions::Superseded`]), the
/// rows whose natural key is stored or came in an earlier chunk, the first of each chunk,
/// as (slice, row) in input order: maybe re-publications (`lake::versions` decides).
#[allow(clippy::type_complexity)]
fn encode_partition<R: LakeRecord>(
    table: &TableDef,
    chunks: &[impl Chunk<R>],
    slices: &[Slice],
    rows: &PartRows,
    mut seen: FastSet<u64>,
    inserted_at: DateTime<Utc>,
) -> Result<(Option<(Bytes, usize)>, Vec<(u32, u32)>), LakeError> {
    let n: usize = rows.iter().map(|(_, r)| r.len()).sum();
    // A table keeping versions tells a stored key, or one an earlier chunk (input) of
    // this write holds, from one repeated within an input: the first two may be
    // re-publications, offered once per key and chunk; the last is a duplicate.
    // A key in `seen` without an `origin` (the chunk that brought it here) is stored.
    let versions = matches!(table.versions, Versions::Superseded);
    let mut origin: FastMap<u64, u32> = FastMap::default();
    let mut offered: FastSet<(u64, u32)> = FastSet::default();
    let mut republished = Vec::new();
    seen.reserve(n);
    // Sort compact (sort key, row key, row) entries rather than the rows; the stable sort
    // merges the already-sorted runs inputs usually arrive in (one per station file) in
    // near-linear time.
    let mut order = Vec::with_capacity(n);
    for (s, idx) in rows {
        let slice = &slices[*s as usize];
        let records = &chunks[slice.chunk].rows()[slice.start..];
        for &i in idx {
            let (key, chunk) = (slice.keys[i as usize], slice.chunk as u32);
            if seen.insert(key) {
                let r = &records[i as usize];
                order.push((r.sort_key(), key, r, chunk));
                if versions {
                    origin.insert(key, chunk);
                }
            } else if versions {
                let earlier = origin.get(&key).is_none_or(|&c| c < chunk);
                if earlier && offered.insert((key, chunk)) {
                    republished.push((*s, i));
                }
            }
        }
    }
    if order.is_empty() {
        return Ok((None, republished));
    }
    order.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let refs: Vec<&R> = order.iter().map(|o| o.2).collect();
    let row_keys: Vec<u64> = order.iter().map(|o| o.1).collect();
    let mut times = RowTimes { inserted_at: inserted_at.timestamp_micros(), ..Default::default() };
    (times.received_at, times.available_at) = order
        .iter()
        .map(|&(_, _, r, chunk)| {
            let (received, available) = match chunks[chunk as usize].received_at() {
                Some(live) if R::states_its_availability() => (live, availability::settle(r.published_at(), live)),
                Some(live) => (live, live),
                None => (inserted_at, availability::settle(r.published_at(), inserted_at)),
            };
            (received.timestamp_micros(), available.timestamp_micros())
        })
        .unzip();
    drop(order);
    let batch = R::to_batch(&refs, &row_keys, times)?;
    Ok((Some((encode_parquet(table, &batch)?, refs.len())), republished))
}

/// Puts every file that arrives, several at once, until the sender is done. On the first
/// failure it stops (dropping the receiver, which stops the encoders) and returns it.
async fn put_all(store: Arc<dyn ObjectStore>, rx: tokio::sync::mpsc::Receiver<(Path, Bytes)>) -> Result<(), LakeError> {
    receiver_stream(rx)
        .map(|(path, bytes)| {
            let store = Arc::clone(&store);
            async move { store.put(&path, PutPayload::from(bytes)).await }
        })
        .buffer_unordered(8)
        .try_for_each(|_| async { Ok(()) })
        .await?;
    Ok(())
}

/// The receiver as a stream.
fn receiver_stream<T: Send + 'static>(mut rx: tokio::sync::mpsc::Receiver<T>) -> impl futures::Stream<Item = T> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Builds a batch of `R` rows without storing them (benchmarks and tests), as if received
/// live and written at `at`.
pub fn batch_of<R: LakeRecord>(records: &[R], at: DateTime<Utc>) -> Result<RecordBatch, LakeError> {
    let refs: Vec<&R> = records.iter().collect();
    let keys: Vec<u64> = records.iter().map(|r| r.row_key()).collect();
    Ok(R::to_batch(&refs, &keys, RowTimes::live(records.len(), at, at))?)
}
