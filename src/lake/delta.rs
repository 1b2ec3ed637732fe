//! Every lake table is a Delta Lake table (delta-rs), at its directory under the lake root.
//!
//! A table's Parquet files are written by wxlake's own writers (sorted, zstd, Snappy for
//! job outputs, Hive partition directories) and become part of the table only when a commit
//! to its `_delta_log/` names them: until then no reader (wxlake, Polars, DuckDB, Spark)
//! sees them, and a crash leaves at most an unnamed file that vacuum deletes. Each change is one commit:
//!
//! - an append (ingest, the WAL flush, `job_runs`): `WRITE` in mode `Append`, whose
//!   predicate names the partitions whose stored keys the writer read to drop duplicates;
//! - a replacement (a job's publish): `WRITE` in mode `Overwrite`, removing the files of
//!   the partitions recomputed and adding the new ones;
//! - a compaction: `OPTIMIZE`, a `dataChange: false` commit (readers' answers do not change).
//!
//! Two writers are kept apart by Delta's optimistic concurrency: a commit is a put of the
//! next log entry that fails if it exists (`If-None-Match` on S3, a hard link locally), and
//! delta-rs then checks the winner's actions against this commit's predicate and removes.
//! An append that finds rows added to a partition it read, or a publish that finds the
//! files it replaces gone, fails with [`LakeError::Conflict`] having changed nothing; the
//! writers retry on fresh snapshots. Replaced files stay in the store for the lake's keep
//! time (`--keep-replaced-secs`), so a query planned on an older snapshot still reads them,
//! then [`Lake::vacuum`] deletes them (and files a crashed writer never committed).
//!
//! The S3 scheme's log store is delta-rs's default one over the lake's own S3 client
//! ([`register_s3`]): the same conditional puts delta-rs's `s3` feature would use, without
//! building a second AWS SDK.

use std::collections::HashMap;
use std::sync::{Arc, Once};
use std::time::Duration;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use deltalake::kernel::engine::arrow_conversion::TryIntoKernel;
use deltalake::kernel::transaction::{CommitBuilder, TransactionError};
use deltalake::kernel::{
    new_metadata, Action, Add, Metadata, MetadataExt, Remove, StructField, StructType, Transaction,
};
use deltalake::logstore::{default_logstore, logstore_factories, LogStore, LogStoreFactory, StorageConfig};
use deltalake::operations::create::CreateBuilder;
use deltalake::operations::vacuum::VacuumMode;
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::table::config::TablePropertiesExt;
use deltalake::{checkpoints, DeltaTable, DeltaTableBuilder, DeltaTableError, TableProperty};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parking_lot::Mutex;
use url::Url;

use super::{Lake, LakeError};

/// What a lake table is: where its files are and what they hold. The one description of a
/// table for writing it (its Delta schema and partitioning) and reading it (the
/// [`super::snapshot_table::SnapshotTable`] provider).
#[derive(Debug, Clone)]
pub struct TableShape {
    /// The SQL name.
    pub name: String,
    /// Directory relative to the lake root (`forecasts`, `derived/forecast_daily`).
    pub dir: String,
    /// The columns stored in the files.
    pub file_schema: SchemaRef,
    /// Hive partition columns, outermost first, with the type SQL sees them as.
    pub partition_cols: Vec<(String, DataType)>,
    /// The order of the rows inside each file.
    pub sort: Vec<String>,
}

impl TableShape {
    /// A raw lake table as [`super::schema::TABLES`] defines it (partition values as
    /// strings, as ingest writes them).
    pub fn lake_table(t: &super::schema::TableDef) -> Self {
        TableShape {
            name: t.name.to_string(),
            dir: t.name.to_string(),
            file_schema: t.file_schema(),
            partition_cols: t.partition_cols.iter().map(|c| (c.to_string(), DataType::Utf8)).collect(),
            sort: t.sort_cols.iter().map(|c| c.to_string()).collect(),
        }
    }

    /// The partition columns' names, outermost first.
    pub fn partition_names(&self) -> Vec<&str> {
        self.partition_cols.iter().map(|(c, _)| c.as_str()).collect()
    }

    /// The columns SQL sees: the file's, then the partition columns.
    pub fn table_schema(&self) -> SchemaRef {
        let mut fields: Vec<Field> = self.file_schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.extend(self.partition_cols.iter().map(|(n, t)| Field::new(n, t.clone(), false)));
        Arc::new(Schema::new(fields))
    }

    /// This table laid out by partition columns `columns` instead of its own (a snapshot
    /// or a directory written before its declaration changed them): the same columns,
    /// typed as declared, those in the files the others; no declared order (such files
    /// were sorted by the layout of their time). Fails on a column the table lacks.
    pub fn laid_out_by(&self, columns: &[String]) -> Result<TableShape, String> {
        let table = self.table_schema();
        let partition_cols = columns
            .iter()
            .map(|c| match table.field_with_name(c) {
                Ok(f) => Ok((c.clone(), f.data_type().clone())),
                Err(_) => Err(format!("table {}: partitioned by {c}, which the table no longer declares", self.dir)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let fields: Vec<Field> =
            table.fields().iter().filter(|f| !columns.contains(f.name())).map(|f| f.as_ref().clone()).collect();
        Ok(TableShape { file_schema: Arc::new(Schema::new(fields)), partition_cols, sort: Vec::new(), ..self.clone() })
    }

    /// The Delta schema of the table (partition columns included, as Delta wants them).
    /// `row_key` is an unsigned 64-bit hash in the files; Delta has no unsigned type and
    /// declares it `long` (delta-kernel's mapping): docs/lake.md says how readers see it.
    pub(crate) fn delta_schema(&self) -> Result<StructType, LakeError> {
        let schema = self.table_schema();
        schema.as_ref().try_into_kernel().map_err(|e| LakeError::setup(format!("table {}: {e}", self.name), e))
    }
}

/// One data file of a table's snapshot.
#[derive(Debug, Clone)]
pub struct ActiveFile {
    /// The file's path in the lake's store.
    pub location: Path,
    /// Its path relative to the table directory, as the log names it.
    pub relative: String,
    pub size: u64,
    /// Milliseconds since the epoch, when it was written.
    pub modified_ms: i64,
    /// Partition column values, by name.
    pub partition_values: HashMap<String, Option<String>>,
}

impl ActiveFile {
    /// This file's removal from the table (`data_change`: whether rows leave the table, as
    /// in a publish, or only move, as in a compaction).
    pub fn remove(&self, data_change: bool) -> Action {
        Action::Remove(Remove {
            path: self.relative.clone(),
            deletion_timestamp: Some(chrono::Utc::now().timestamp_millis()),
            data_change,
            extended_file_metadata: Some(true),
            partition_values: Some(self.partition_values.clone()),
            size: Some(self.size as i64),
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
        })
    }

    /// The partition directory this file is in (relative to the table).
    pub fn partition_dir(&self) -> &str {
        self.relative.rsplit_once('/').map_or("", |(d, _)| d)
    }
}

/// A file written into a table's directory, to be added by a commit.
#[derive(Debug, Clone)]
pub struct NewFile {
    /// The partition directory relative to the table (`date=2026-03-01/station_code=KNYC`).
    pub partition_dir: String,
    /// The file's name in it.
    pub name: String,
    pub size: u64,
    pub rows: u64,
}

impl NewFile {
    /// The commit's `add` for this file: its partition values parsed back from the
    /// directory, the row count as its statistics.
    fn add(&self, data_change: bool) -> Action {
        let partition_values =
            hive_partitions(&self.partition_dir).map(|(k, v)| (k.to_string(), Some(v.to_string()))).collect();
        let relative = if self.partition_dir.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.partition_dir, self.name)
        };
        Action::Add(Add {
            path: relative,
            partition_values,
            size: self.size as i64,
            modification_time: chrono::Utc::now().timestamp_millis(),
            data_change,
            stats: Some(format!("{{\"numRecords\":{}}}", self.rows)),
            tags: None,
            deletion_vector: None,
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
        })
    }
}

/// The `name=value` segments of a path in Hive partition directories
/// (`model=GFS/run_date=2026-01-10/part-1.parquet`), outermost first: how a file's place
/// names its partition.
pub fn hive_partitions(path: &str) -> impl Iterator<Item = (&str, &str)> {
    path.split('/').filter_map(|p| p.split_once('='))
}

/// The application transaction every rewrite (compaction) commits (see [`Change::Rewrite`]).
const REWRITE_APP_ID: &str = "wxlake.rewrite";

/// What a commit does to a table (module docs).
#[derive(Debug)]
pub enum Change {
    /// New rows; `read` is the predicate over the partitions whose keys were read.
    Append { files: Vec<NewFile>, read: Option<String> },
    /// The files of `remove` give way to `files`; `read` says which partitions the
    /// publish recomputed (a concurrent writer there is a conflict).
    Replace { files: Vec<NewFile>, remove: Vec<ActiveFile>, read: Option<String> },
    /// The same rows in other files (compaction).
    Rewrite { files: Vec<NewFile>, remove: Vec<ActiveFile> },
    /// Every file of the table (`remove`) gives way to `files`, laid out by the shape's
    /// partition columns where the table's are others (a declaration that changed them):
    /// the commit's metadata action names the new ones, so every reader of that version
    /// on, wxlake's and other engines', reads the new layout, and older versions the old.
    Relayout { files: Vec<NewFile>, remove: Vec<ActiveFile> },
}

impl Change {
    /// The commit's actions and operation; `metadata` is the new metadata of a
    /// [`Change::Relayout`].
    fn into_actions(self, partition_by: Vec<String>, metadata: Option<Metadata>) -> (Vec<Action>, DeltaOperation) {
        match self {
            Change::Append { files, read } => (
                files.iter().map(|f| f.add(true)).collect(),
                DeltaOperation::Write { mode: SaveMode::Append, partition_by: Some(partition_by), predicate: read },
            ),
            Change::Replace { files, remove, read } => {
                let mut actions: Vec<Action> = remove.iter().map(|f| f.remove(true)).collect();
                actions.extend(files.iter().map(|f| f.add(true)));
                let op = DeltaOperation::Write {
                    mode: SaveMode::Overwrite,
                    partition_by: Some(partition_by),
                    predicate: read,
                };
                (actions, op)
            }
            Change::Rewrite { files, remove } => {
                let mut actions: Vec<Action> = remove.iter().map(|f| f.remove(false)).collect();
                actions.extend(files.iter().map(|f| f.add(false)));
                // delta-rs checks two commits removing one file only for removes that change
                // data, so two rewrites of the same files would both commit (every row twice).
                // Each rewrite names the same application transaction: the second of two
                // concurrent ones conflicts on it.
                actions.push(Action::Txn(Transaction {
                    app_id: REWRITE_APP_ID.to_string(),
                    version: chrono::Utc::now().timestamp_millis(),
                    last_updated: Some(chrono::Utc::now().timestamp_millis()),
                }));
                (actions, DeltaOperation::Optimize { predicate: None, target_size: 0 })
            }
            Change::Relayout { files, remove } => {
                let mut actions: Vec<Action> = metadata.into_iter().map(Action::Metadata).collect();
                actions.extend(remove.iter().map(|f| f.remove(true)));
                actions.extend(files.iter().map(|f| f.add(true)));
                let op = DeltaOperation::Write {
                    mode: SaveMode::Overwrite,
                    partition_by: Some(partition_by),
                    predicate: None,
                };
                (actions, op)
            }
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Change::Append { files, .. } => files.is_empty(),
            Change::Replace { files, remove, .. } | Change::Rewrite { files, remove } => {
                files.is_empty() && remove.is_empty()
            }
            // The layout changes even when the table has no rows.
            Change::Relayout { .. } => false,
        }
    }
}

/// A predicate over partition column `col` naming the values given, for a commit's
/// conflict check (`col IN ('a', 'b')`).
pub fn partitions_predicate<'a>(col: &str, values: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let quoted: Vec<String> = values.into_iter().map(|v| format!("'{}'", v.replace('\'', "''"))).collect();
    (!quoted.is_empty()).then(|| format!("{col} IN ({})", quoted.join(", ")))
}

/// The log store factory for `s3://` tables: delta-rs's default log store (commits are
/// puts with `If-None-Match`) on the store the lake passes in.
#[derive(Debug, Default)]
struct ConditionalPutLogStores;

impl LogStoreFactory for ConditionalPutLogStores {
    fn with_options(
        &self,
        prefixed_store: deltalake::logstore::ObjectStoreRef,
        root_store: deltalake::logstore::ObjectStoreRef,
        location: &Url,
        options: &StorageConfig,
    ) -> deltalake::DeltaResult<Arc<dyn LogStore>> {
        Ok(default_logstore(prefixed_store, root_store, location, options))
    }
}

/// Registers the `s3://` log store with delta-rs (once per process).
pub fn register_s3() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if let Ok(url) = Url::parse("s3://") {
            logstore_factories().insert(url, Arc::new(ConditionalPutLogStores));
        }
    });
}

/// Where a table is read: the latest commit, or one of the past (time travel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum At {
    Latest,
    Version(u64),
    /// The latest version committed at or before this time (milliseconds since the epoch).
    Time(i64),
}

/// A table handle on `store` at `url` (not loaded).
pub(crate) fn handle(store: Arc<dyn ObjectStore>, url: &Url) -> Result<DeltaTable, LakeError> {
    register_s3();
    Ok(DeltaTableBuilder::from_url(url.clone())?.with_storage_backend(store, url.clone()).build()?)
}

/// The table at `url` as of `at`, or `None` when no table was ever committed there.
pub async fn load(store: Arc<dyn ObjectStore>, url: &Url, at: At) -> Result<Option<DeltaTable>, LakeError> {
    // delta-kernel refuses a local directory that does not exist rather than finding no log,
    // and logs an error for one without a log (a table whose first files are written before
    // its first commit, as `job_runs`' are, on a new lake's first job): neither is a table.
    if url.scheme() == "file" && url.to_file_path().is_ok_and(|p| !p.join("_delta_log").is_dir()) {
        return Ok(None);
    }
    let mut table = handle(store, url)?;
    let loaded = match at {
        At::Latest => table.load().await,
        At::Version(v) => table.load_version(v).await,
        At::Time(ms) => {
            let Some(t) = chrono::DateTime::from_timestamp_millis(ms) else {
                return Err(LakeError::Config(format!("time travel: {ms} ms is not a time")));
            };
            table.load_with_datetime(t).await
        }
    };
    match loaded {
        Ok(()) => Ok(Some(table)),
        Err(DeltaTableError::NotATable(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The files of a loaded table's snapshot, with their store paths under `table_path`.
pub fn active_files(table: &DeltaTable, table_path: &Path) -> Result<Vec<ActiveFile>, LakeError> {
    let state = table.snapshot()?;
    let mut files: Vec<ActiveFile> = state
        .log_data()
        .iter()
        .map(|f| {
            let relative = f.path().to_string();
            let mut location = table_path.clone();
            for part in relative.split('/') {
                location = location.join(part);
            }
            ActiveFile {
                location,
                relative,
                size: f.size().max(0) as u64,
                modified_ms: f.modification_time(),
                partition_values: f.partition_values_map(),
            }
        })
        .collect();
    files.sort_by(|a, b| a.relative.cmp(&b.relative));
    Ok(files)
}

/// The process's loaded tables, by URL: a new snapshot reads only the log entries since
/// the cached one (and lists the log from there).
#[derive(Debug, Default)]
pub(crate) struct Tables {
    loaded: Mutex<HashMap<String, DeltaTable>>,
}

impl Tables {
    /// The latest snapshot of the table at `url`, or `None` when there is no table.
    pub(crate) async fn latest(&self, store: Arc<dyn ObjectStore>, url: &Url) -> Result<Option<DeltaTable>, LakeError> {
        let cached = self.loaded.lock().get(url.as_str()).cloned();
        let table = match cached {
            Some(mut t) => {
                t.update_incremental(None).await?;
                t
            }
            None => match load(store, url, At::Latest).await? {
                Some(t) => t,
                None => return Ok(None),
            },
        };
        self.remember(url, &table);
        Ok(Some(table))
    }

    /// Keeps `table` as the newest known snapshot at `url` (unless a newer one is kept).
    fn remember(&self, url: &Url, table: &DeltaTable) {
        let mut loaded = self.loaded.lock();
        let newer = loaded.get(url.as_str()).is_some_and(|t| t.version() > table.version());
        if !newer {
            loaded.insert(url.to_string(), table.clone());
        }
    }
}

impl Lake {
    /// The URL delta-rs knows a table directory by.
    pub fn table_location(&self, dir: &str) -> Result<Url, LakeError> {
        Url::parse(&self.table_url(dir)).map_err(|e| LakeError::setup(format!("table {dir}: {e}"), e))
    }

    /// The latest snapshot of the table `shape` describes, creating the table (empty) when
    /// it does not exist yet.
    pub async fn delta_table(&self, shape: &TableShape) -> Result<DeltaTable, LakeError> {
        let url = self.table_location(&shape.dir)?;
        match self.tables.latest(self.store(), &url).await? {
            Some(t) => Ok(t),
            None => {
                let t = self.create_table(shape, &url).await?;
                self.tables.remember(&url, &t);
                // Tables are only created once the CLI's open has converted the lake.
                mark_created(self).await?;
                Ok(t)
            }
        }
    }

    /// Declares in the Delta schema of the table `shape` describes the columns of its
    /// shape that the schema lacks (nullable ones, appended: old files simply lack them),
    /// in one metadata commit; other engines read the table by that schema. Returns how
    /// many were added; none, and no commit, when the table has them all or does not
    /// exist.
    pub async fn declare_columns(&self, shape: &TableShape) -> Result<usize, LakeError> {
        let Some((table, missing)) = self.undeclared(shape).await? else { return Ok(0) };
        if missing.is_empty() {
            return Ok(0);
        }
        if let Some(f) = missing.iter().find(|f| !f.is_nullable()) {
            return Err(LakeError::Config(format!("{}: a new column must be nullable: {}", shape.dir, f.name())));
        }
        let added = missing.len();
        let table = table.add_columns().with_fields(missing).await?;
        self.tables.remember(&self.table_location(&shape.dir)?, &table);
        Ok(added)
    }

    /// How many columns of the table `shape` describes its Delta schema lacks (none when
    /// the table does not exist yet: it will be created with them all).
    pub async fn undeclared_columns(&self, shape: &TableShape) -> Result<usize, LakeError> {
        Ok(self.undeclared(shape).await?.map_or(0, |(_, missing)| missing.len()))
    }

    /// The table's latest snapshot and the fields of `shape` its schema lacks.
    async fn undeclared(&self, shape: &TableShape) -> Result<Option<(DeltaTable, Vec<StructField>)>, LakeError> {
        let url = self.table_location(&shape.dir)?;
        let Some(table) = self.tables.latest(self.store(), &url).await? else { return Ok(None) };
        let declared = table.snapshot()?.schema();
        let missing = shape.delta_schema()?.fields().filter(|f| !declared.contains(f.name())).cloned().collect();
        Ok(Some((table, missing)))
    }

    /// Creates an empty table; another process creating it at the same moment wins or
    /// loses the put of version 0, and either way the table exists afterwards.
    async fn create_table(&self, shape: &TableShape, url: &Url) -> Result<DeltaTable, LakeError> {
        if let Ok(dir) = url.to_file_path() {
            std::fs::create_dir_all(&dir)
                .map_err(|e| LakeError::setup(format!("table dir {}: {e}", dir.display()), e))?;
        }
        let log_store = handle(self.store(), url)?.log_store();
        let created = CreateBuilder::new()
            .with_log_store(log_store)
            .with_table_name(shape.name.clone())
            .with_columns(shape.delta_schema()?.fields().cloned())
            .with_partition_columns(shape.partition_names())
            .with_configuration_property(TableProperty::LogRetentionDuration, Some(LOG_RETENTION))
            .with_save_mode(SaveMode::Ignore)
            .await;
        match created {
            Ok(t) if t.version().is_some() => Ok(t),
            Ok(_) | Err(DeltaTableError::VersionAlreadyExists(_)) | Err(DeltaTableError::Transaction { .. }) => {
                load(self.store(), url, At::Latest)
                    .await?
                    .ok_or_else(|| LakeError::Config(format!("table {}: could not be created", shape.dir)))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the table `shape` describes exists with partition columns other than the
    /// shape's: its next full publish is a [`Change::Relayout`].
    pub async fn layout_differs(&self, shape: &TableShape) -> Result<bool, LakeError> {
        let url = self.table_location(&shape.dir)?;
        let Some(table) = self.tables.latest(self.store(), &url).await? else { return Ok(false) };
        Ok(table.snapshot()?.metadata().partition_columns() != shape.partition_names())
    }

    /// The latest snapshot of a table and its files.
    pub async fn table_files(&self, shape: &TableShape) -> Result<(DeltaTable, Vec<ActiveFile>), LakeError> {
        let table = self.delta_table(shape).await?;
        let files = active_files(&table, &self.table_path(&shape.dir))?;
        Ok((table, files))
    }

    /// The latest snapshot of the table at `dir` and its files, without creating it:
    /// `None` when no table is there.
    pub async fn snapshot_files(&self, dir: &str) -> Result<Option<(DeltaTable, Vec<ActiveFile>)>, LakeError> {
        let url = self.table_location(dir)?;
        let Some(table) = self.tables.latest(self.store(), &url).await? else { return Ok(None) };
        let files = active_files(&table, &self.table_path(dir))?;
        Ok(Some((table, files)))
    }

    /// Commits `change` on top of `read` (the snapshot the writer decided on), returning
    /// the new version, or [`LakeError::Conflict`] when a concurrent commit overlaps it.
    pub async fn commit(&self, shape: &TableShape, read: &DeltaTable, change: Change) -> Result<u64, LakeError> {
        if change.is_empty() {
            return Ok(read.version().unwrap_or(0));
        }
        let partition_by = shape.partition_names().into_iter().map(String::from).collect();
        let replaces = matches!(change, Change::Replace { .. } | Change::Relayout { .. });
        let metadata = match change {
            Change::Relayout { .. } => Some(relaid_metadata(read, shape)?),
            _ => None,
        };
        let (actions, op) = change.into_actions(partition_by, metadata);
        let committed =
            CommitBuilder::default().with_actions(actions).build(Some(read.snapshot()?), read.log_store(), op).await;
        match committed {
            Ok(done) => {
                let url = self.table_location(&shape.dir)?;
                let mut table = read.clone();
                // The next snapshot starts from this commit's (read again from the log).
                if table.update_incremental(Some(done.version)).await.is_ok() {
                    self.tables.remember(&url, &table);
                    checkpoint_if_due(&table, &shape.dir, replaces).await;
                }
                Ok(done.version)
            }
            Err(DeltaTableError::Transaction {
                source:
                    source @ (TransactionError::CommitConflict(_)
                    | TransactionError::MaxCommitAttempts(_)
                    | TransactionError::VersionAlreadyExists(_)),
            }) => Err(LakeError::Conflict(format!("{}: {source}", shape.dir))),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes the files of the table at `dir` that no snapshot of the last keep time
    /// names (Delta's vacuum), in two passes: the files commits replaced more than the
    /// lake's keep time ago (`lite`: the log's removes), and files no commit ever named
    /// (`full`: a crashed writer's) once they are [`ORPHAN_AGE`] old, so that a writer
    /// between its put and its commit never loses its file, whatever the keep time.
    /// Returns how many; never fails the caller (what stays is found by the next vacuum).
    pub async fn vacuum(&self, dir: &str) -> usize {
        let done = async {
            let url = self.table_location(dir)?;
            let Some(table) = self.tables.latest(self.store(), &url).await? else { return Ok(0) };
            let keep = chrono::Duration::from_std(self.keep_replaced)
                .map_err(|e| LakeError::Config(format!("keep time: {e}")))?;
            let orphan_age = chrono::Duration::from_std(ORPHAN_AGE).unwrap_or(keep).max(keep);
            let mut deleted = 0;
            let mut table = table;
            for (mode, retention) in [(VacuumMode::Lite, keep), (VacuumMode::Full, orphan_age)] {
                let (after, metrics) = table
                    .vacuum()
                    .with_retention_period(retention)
                    .with_enforce_retention_duration(false)
                    .with_mode(mode)
                    .await?;
                deleted += metrics.files_deleted.len();
                table = after;
            }
            Ok::<usize, LakeError>(deleted)
        }
        .await;
        match done {
            Ok(n) => {
                if n > 0 {
                    tracing::debug!(table = dir, deleted = n, "vacuumed replaced files");
                }
                n
            }
            Err(e) => {
                tracing::warn!(table = dir, error = %e, "could not vacuum yet");
                0
            }
        }
    }
}

/// The metadata of `read` with the schema and partition columns of `shape`; its id, name,
/// description and settings kept (it is the same table, laid out anew).
fn relaid_metadata(read: &DeltaTable, shape: &TableShape) -> Result<Metadata, LakeError> {
    let old = read.snapshot()?.metadata().clone();
    let columns = shape.partition_names();
    let kernel = |source| LakeError::Delta(DeltaTableError::Kernel { source });
    let mut metadata = new_metadata(&shape.delta_schema()?, columns, old.configuration().clone())
        .and_then(|m| m.with_table_id(old.id().to_string()))
        .map_err(kernel)?;
    if let Some(name) = old.name() {
        metadata = metadata.with_name(name.to_string()).map_err(kernel)?;
    }
    if let Some(description) = old.description() {
        metadata = metadata.with_description(description.to_string()).map_err(kernel)?;
    }
    Ok(metadata)
}

/// Writes a checkpoint of `table` (just committed) when its version is due one, every
/// `delta.checkpointInterval` commits (Delta's default, 100), or every
/// [`REPLACE_CHECKPOINT_INTERVAL`] when the commit replaced files (`replaces`: a job's
/// publish), and then deletes the commits the checkpoint makes unnecessary that are older
/// than the log's keep time ([`LOG_RETENTION`]). Without checkpoints a new reader replays every JSON commit since
/// the table was created, and the log only grows: a job's output republished every day, or
/// the server's commit per flush, makes every process's first read of the table slower
/// each day. delta-rs does this after its own operations' commits; ours are built by hand
/// (`CommitBuilder`), which does not. A failed checkpoint is logged, never the commit's
/// failure: the commit stands, and the next due one writes a checkpoint.
async fn checkpoint_if_due(table: &DeltaTable, dir: &str, replaces: bool) {
    let Ok(snapshot) = table.snapshot() else { return };
    let version = snapshot.version();
    let mut interval = snapshot.table_config().checkpoint_interval().get();
    if replaces {
        interval = interval.min(REPLACE_CHECKPOINT_INTERVAL);
    }
    if (version + 1) % interval != 0 {
        return;
    }
    let started = std::time::Instant::now();
    if let Err(e) = checkpoints::create_checkpoint(table, None).await {
        tracing::warn!(table = dir, version, error = %e, "could not write the log's checkpoint");
        return;
    }
    let deleted = checkpoints::cleanup_metadata(table, None).await.unwrap_or_else(|e| {
        tracing::warn!(table = dir, version, error = %e, "could not delete the log's expired commits");
        0
    });
    tracing::debug!(
        table = dir,
        version,
        deleted,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "log checkpointed"
    );
}

/// Commits between checkpoints of a table whose commits replace its files (a job's output,
/// republished whole or by partitions on every run): each such commit adds a remove and an
/// add per file replaced, so with Delta's hundred every new reader replayed up to a hundred
/// times the table before its first query, more with every run (benches/README.md,
/// "where the rest of a run goes"). A checkpoint of such a table is one small file: its
/// live files' adds.
const REPLACE_CHECKPOINT_INTERVAL: u64 = 10;

/// How long a table's log keeps its commits (Delta's default is 30 days): the server
/// commits on every flush, and a reader lists the log since its last snapshot, which on
/// local files walks the whole directory. A version older than the keep time cannot be
/// read anyway once vacuum has deleted its replaced files; two days keep the history
/// (`DESCRIBE HISTORY` in other engines) of the last day whole.
const LOG_RETENTION: &str = "interval 2 days";

/// How old a file no commit names must be before vacuum deletes it: longer than any
/// writer takes between putting its files and committing them.
pub const ORPHAN_AGE: Duration = Duration::from_secs(3600);

/// The object at the lake's root that says its tables are Delta tables: written when a
/// table is created and by a finished upgrade (upgrade.rs), so later opens skip the look
/// at every table.
pub(crate) const FORMAT_MARKER: &str = "_lake_format";

/// The line of [`FORMAT_MARKER`] that says every raw table has `received_at` and
/// `available_at` (upgrade.rs, `add_times`).
pub(crate) const FORMAT_TIMES: &str = "times";

/// The line of [`FORMAT_MARKER`] that says `forecasts` declares `superseded_at`
/// (`lake::versions`; upgrade.rs declares it on a lake that lacks the line).
pub(crate) const FORMAT_VERSIONS: &str = "versions";

/// The marker of a lake with every column.
fn marker_text() -> String {
    format!("delta\n{FORMAT_TIMES}\n{FORMAT_VERSIONS}\n")
}

/// Writes [`FORMAT_MARKER`] unless it exists: a lake whose first table is created now has
/// every column from the start, so it says so; a lake marked before keeps its mark
/// (`upgrade_if_needed` adds what it lacks).
pub(crate) async fn mark_created(lake: &Lake) -> Result<(), LakeError> {
    let opts = object_store::PutOptions::from(object_store::PutMode::Create);
    match lake.store().put_opts(&lake.location.root.clone().join(FORMAT_MARKER), marker_text().into(), opts).await {
        Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Writes [`FORMAT_MARKER`] of a lake converted to Delta tables, the times not added yet.
pub(crate) async fn mark_converted(lake: &Lake) -> Result<(), LakeError> {
    lake.store().put(&lake.location.root.clone().join(FORMAT_MARKER), "delta\n".into()).await?;
    Ok(())
}

/// Writes [`FORMAT_MARKER`] of a lake converted and given every column.
pub(crate) async fn mark_upgraded(lake: &Lake) -> Result<(), LakeError> {
    lake.store().put(&lake.location.root.clone().join(FORMAT_MARKER), marker_text().into()).await?;
    Ok(())
}

/// How many times a writer takes a fresh snapshot after losing a commit to another.
pub const COMMIT_ATTEMPTS: usize = 5;

/// A pause before a retried commit, longer each time and jittered, so two writers that
/// collided do not collide again.
pub async fn backoff(attempt: usize) {
    let ms = 20u64 << attempt.min(6);
    let jitter = rand::random::<u64>() % ms.max(1);
    tokio::time::sleep(Duration::from_millis(ms + jitter)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a test's subscriber wrote.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Every `delta.checkpointInterval`-th commit (here 10; Delta's default, which wxlake's
    /// tables keep, is 100) writes a checkpoint, so a new reader starts from it instead of
    /// replaying every commit; commits before a checkpoint that are older than the log's
    /// keep time are deleted by the next one, and the table reads the same throughout
    /// (the latest version, and a version the kept log still holds).
    #[tokio::test]
    async fn the_log_is_checkpointed_at_its_interval_and_expired_commits_go() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&dir.path().join("lake").display().to_string()).await.unwrap();
        let shape = TableShape {
            name: "t".into(),
            dir: "derived/t".into(),
            file_schema: Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)])),
            partition_cols: vec![("day".into(), DataType::Utf8)],
            sort: vec!["x".into()],
        };
        let url = lake.table_location(&shape.dir).unwrap();
        std::fs::create_dir_all(url.to_file_path().unwrap()).unwrap();
        CreateBuilder::new()
            .with_log_store(handle(lake.store(), &url).unwrap().log_store())
            .with_columns(shape.delta_schema().unwrap().fields().cloned())
            .with_partition_columns(["day"])
            .with_configuration_property(TableProperty::LogRetentionDuration, Some(LOG_RETENTION))
            .with_configuration_property(TableProperty::CheckpointInterval, Some("10"))
            .await
            .unwrap();
        let log = dir.path().join("lake/derived/t/_delta_log");
        let commits = |from: usize, to: usize| {
            let (lake, shape) = (&lake, &shape);
            async move {
                for i in from..to {
                    let file = NewFile {
                        partition_dir: format!("day={}", i % 3),
                        name: format!("f{i}.parquet"),
                        size: 1,
                        rows: 1,
                    };
                    let snapshot = lake.delta_table(shape).await.unwrap();
                    lake.commit(shape, &snapshot, Change::Append { files: vec![file], read: None }).await.unwrap();
                }
            }
        };
        let files_at = |at: At| {
            let (lake, url, shape) = (&lake, &url, &shape);
            async move {
                let t = load(lake.store(), url, at).await.unwrap().unwrap();
                (t.version(), active_files(&t, &lake.table_path(&shape.dir)).unwrap().len())
            }
        };
        let checkpoint = |v: u64| log.join(format!("{v:020}.checkpoint.parquet"));
        let json = |v: u64| log.join(format!("{v:020}.json"));

        // Version 0 created the table; versions 1..=8 are not due, 9 is the 10th commit.
        commits(0, 8).await;
        assert!(!log.join("_last_checkpoint").exists());
        commits(8, 9).await;
        assert!(checkpoint(9).exists());
        assert_eq!(files_at(At::Latest).await, (Some(9), 9));

        // Age every commit so far past the keep time (two days).
        let old = std::time::SystemTime::now() - Duration::from_secs(3 * 86_400);
        for e in std::fs::read_dir(&log).unwrap() {
            std::fs::File::options().write(true).open(e.unwrap().path()).unwrap().set_modified(old).unwrap();
        }
        commits(9, 19).await;
        assert!(checkpoint(19).exists());
        assert!((0..9).all(|v| !json(v).exists()), "aged commits before a checkpoint go");
        assert!((9..=19).all(|v| json(v).exists()), "the checkpoint's own and later commits stay");
        assert_eq!(files_at(At::Latest).await, (Some(19), 19));
        assert_eq!(files_at(At::Version(15)).await, (Some(15), 15));
    }

    /// A table whose commits replace its files (a job's output) is checkpointed every
    /// [`REPLACE_CHECKPOINT_INTERVAL`] commits although it keeps Delta's default interval
    /// (100), and reads the same from the checkpoint; appends keep the table's interval.
    #[tokio::test]
    async fn replacing_commits_are_checkpointed_every_tenth_version() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&dir.path().join("lake").display().to_string()).await.unwrap();
        let shape = |name: &str| TableShape {
            name: name.into(),
            dir: format!("derived/{name}"),
            file_schema: Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)])),
            partition_cols: vec![("day".into(), DataType::Utf8)],
            sort: vec!["x".into()],
        };
        let file = |i: u64| NewFile {
            partition_dir: format!("day={}", i % 3),
            name: format!("f{i}.parquet"),
            size: 1,
            rows: 1,
        };
        let log = |name: &str| dir.path().join(format!("lake/derived/{name}/_delta_log"));
        let checkpoints = |name: &str| {
            let mut v: Vec<String> = std::fs::read_dir(log(name))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".checkpoint.parquet"))
                .collect();
            v.sort();
            v
        };
        let (replaced, appended) = (shape("replaced"), shape("appended"));
        for i in 0..12u64 {
            let snapshot = lake.delta_table(&replaced).await.unwrap();
            let (_, remove) = lake.table_files(&replaced).await.unwrap();
            lake.commit(&replaced, &snapshot, Change::Replace { files: vec![file(i)], remove, read: None })
                .await
                .unwrap();
            let snapshot = lake.delta_table(&appended).await.unwrap();
            lake.commit(&appended, &snapshot, Change::Append { files: vec![file(i)], read: None }).await.unwrap();
        }
        assert_eq!(checkpoints("replaced"), [format!("{:020}.checkpoint.parquet", 9)]);
        assert!(checkpoints("appended").is_empty());
        let url = lake.table_location(&replaced.dir).unwrap();
        let t = load(lake.store(), &url, At::Latest).await.unwrap().unwrap();
        let files = active_files(&t, &lake.table_path(&replaced.dir)).unwrap();
        assert_eq!(files.len(), 1, "the checkpoint and the commits after it give the last file alone");
        assert!(files[0].location.as_ref().ends_with("f11.parquet"), "{:?}", files[0].location);
    }

    /// A table directory holding a file but no log yet (how `job_runs` starts on a new
    /// lake: its first file is written, then committed) is no table, and finding that out
    /// logs no error: the first command on a fresh clone printed the kernel's
    /// "No files in log segment" as an ERROR line.
    #[tokio::test]
    async fn a_directory_without_a_log_is_no_table_and_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("derived/job_runs");
        std::fs::create_dir_all(table.join("job=x")).unwrap();
        std::fs::write(table.join("job=x/part-0.parquet"), b"written before its commit").unwrap();
        let url = Url::from_directory_path(&table).unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::local::LocalFileSystem::new());

        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        let _default = tracing::subscriber::set_default(subscriber);
        assert!(load(store, &url, At::Latest).await.unwrap().is_none());
        let logged = String::from_utf8_lossy(&captured.0.lock()).to_string();
        assert!(logged.is_empty(), "{logged}");
    }
}
