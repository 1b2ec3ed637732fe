//! Converts a lake written before its tables were Delta tables, in place.
//!
//! Such a lake holds Hive-partitioned Parquet directories and, beside them, the records of
//! wxlake's former visibility protocol under `_txn/` (which files a committed swap replaced,
//! which ones an unfinished swap added) and its claims under `_claims/`. A table converts in
//! one commit: version 0 of its Delta log names every file a reader of the old lake saw
//! (the `_txn` records applied), with the partition values of its path. That put is atomic,
//! so an interrupted upgrade leaves each table converted or not, and running it again
//! converts the rest (a table with a log is left alone). Once every table is converted, the
//! files the records hid and the records themselves are deleted.
//!
//! A lake written before rows carried `received_at` and `available_at`
//! (`lake::availability`) gets them the same way ([`add_times`]): each raw table's
//! partitions whose files lack them are rewritten with them filled by the backfill rules
//! (one rewrite commit per table, `dataChange: false`: the rows stay, they gain two
//! columns), then the Delta schema declares them. Run again after an interruption it
//! rewrites what is left; on a lake that has them it rewrites nothing.
//!
//! A lake marked with the times but written before forecasts kept the versions of a
//! re-published run declares `superseded_at` ([`add_versions`]: a schema commit only).
//!
//! The CLI runs these on every open of a lake ([`upgrade_if_needed`]: a lake already
//! upgraded says so in one object, `_lake_format`, so this costs one request), and
//! `wxlake lake upgrade` runs them explicitly and prints what they did.

use std::collections::{HashMap, HashSet};

use datafusion::arrow::datatypes::DataType;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use deltalake::kernel::{Action, Add};
use deltalake::operations::create::CreateBuilder;
use deltalake::protocol::SaveMode;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::ObjectStoreExt;
use serde::Deserialize;

use super::compact::{CompactStats, Rewrite};
use super::delta::{
    hive_partitions, mark_converted, mark_upgraded, TableShape, FORMAT_MARKER, FORMAT_TIMES, FORMAT_VERSIONS,
};
use super::schema::{FORECASTS, TABLES};
use super::store::delete_if_present;
use super::{Lake, LakeError};

/// What an upgrade did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Upgrade {
    /// Tables converted now, with their file counts.
    pub converted: Vec<(String, usize)>,
    /// Tables that already were Delta tables.
    pub already: Vec<String>,
    /// Files of the old protocol deleted (replaced files, unfinished swaps' files, records).
    pub deleted: usize,
    /// Raw tables given `received_at` and `available_at` now: what the rewrite did.
    pub times: Vec<(String, CompactStats)>,
    /// Columns `forecasts` declared now for the versions of re-published runs.
    pub versions: usize,
}

/// A record of the former protocol (only what the conversion needs).
#[derive(Debug, Deserialize)]
struct OldRecord {
    state: String,
    #[serde(default)]
    add: Vec<String>,
    #[serde(default)]
    remove: Vec<String>,
}

impl OldRecord {
    /// The files a reader of the old lake did not see.
    fn hidden(&self) -> &[String] {
        if self.state == "committed" {
            &self.remove
        } else {
            &self.add
        }
    }
}

/// [`upgrade`] and [`add_times`], unless the lake says it has both already (one request).
pub async fn upgrade_if_needed(lake: &Lake, shapes: &[TableShape]) -> Result<Upgrade, LakeError> {
    let marker = lake.location.root.clone().join(FORMAT_MARKER);
    match lake.store().get(&marker).await {
        Ok(got) => {
            let text = got.bytes().await?;
            let text = String::from_utf8_lossy(&text);
            let has = |line: &str| text.lines().any(|l| l == line);
            if !has(FORMAT_TIMES) {
                return Ok(Upgrade { times: add_times(lake).await?, ..Default::default() });
            }
            if !has(FORMAT_VERSIONS) {
                return Ok(Upgrade { versions: add_versions(lake).await?, ..Default::default() });
            }
            Ok(Upgrade::default())
        }
        Err(object_store::Error::NotFound { .. }) => upgrade(lake, shapes).await,
        Err(e) => Err(e.into()),
    }
}

/// Declares `superseded_at` in the Delta schema of `forecasts` (`lake::versions`): one
/// schema commit, no file rewritten (a file without the column reads it as NULL: current),
/// then marks the lake so. Returns how many columns were declared.
pub async fn add_versions(lake: &Lake) -> Result<usize, LakeError> {
    let declared = lake.declare_columns(&TableShape::lake_table(&FORECASTS)).await?;
    mark_upgraded(lake).await?;
    Ok(declared)
}

/// Gives every raw table of `lake` the columns `received_at` and `available_at` (module
/// docs), then marks the lake so. Tables that do not exist are skipped. Returns what each
/// table's rewrite did.
pub async fn add_times(lake: &Lake) -> Result<Vec<(String, CompactStats)>, LakeError> {
    let mut done = Vec::new();
    let mut any = false;
    for table in TABLES {
        if lake.snapshot_files(table.name).await?.is_none() {
            continue;
        }
        any = true;
        let mut attempt = 0;
        let stats = loop {
            attempt += 1;
            let stats = lake.rewrite(table, Rewrite::Repair).await?;
            // A writer compacting the same partitions meanwhile wins; the rest is left to
            // another pass (a rewrite finds only what still lacks them).
            if !stats.conflict || attempt >= super::delta::COMMIT_ATTEMPTS {
                break stats;
            }
            super::delta::backoff(attempt).await;
        };
        if stats.conflict {
            return Err(LakeError::Conflict(format!("{}: adding the availability times kept conflicting", table.name)));
        }
        lake.declare_columns(&TableShape::lake_table(table)).await?;
        if stats.partitions > 0 {
            tracing::info!(
                table = table.name,
                partitions = stats.partitions,
                rows = stats.rows,
                "added received_at and available_at"
            );
        }
        done.push((table.name.to_string(), stats));
    }
    if any {
        mark_upgraded(lake).await?;
    }
    Ok(done)
}

/// Converts every table of `lake` that is not a Delta table yet: those `shapes` describe
/// (their declared partition types) and any other Parquet directory (partition columns
/// read as strings, the schema from a file's footer). Then marks the lake converted.
pub async fn upgrade(lake: &Lake, shapes: &[TableShape]) -> Result<Upgrade, LakeError> {
    let store = lake.store();
    let root = lake.location.root.clone();
    let records_dir = root.clone().join("_txn");
    let mut records = Vec::new();
    let mut record_paths = Vec::new();
    for meta in store.list(Some(&records_dir)).try_collect::<Vec<_>>().await? {
        let bytes = store.get(&meta.location).await?.bytes().await?;
        let record: OldRecord = serde_json::from_slice(&bytes)
            .map_err(|e| LakeError::setup(format!("old lake record {}: {e}", meta.location), e))?;
        records.push(record);
        record_paths.push(meta.location);
    }
    let hidden: HashSet<&str> = records.iter().flat_map(|r| r.hidden().iter().map(String::as_str)).collect();

    let mut report = Upgrade::default();
    for dir in parquet_dirs(lake).await? {
        let table_path = lake.table_path(&dir);
        let listing = store.list_with_delimiter(Some(&table_path)).await?;
        if listing.common_prefixes.iter().any(|p| p.filename() == Some("_delta_log")) {
            report.already.push(dir);
            continue;
        }
        let url = lake.table_location(&dir)?;
        let files: Vec<_> = store
            .list(Some(&table_path))
            .try_filter(|m| {
                let keep = m.location.as_ref().ends_with(".parquet") && !hidden.contains(m.location.as_ref());
                futures::future::ready(keep)
            })
            .try_collect()
            .await?;
        let Some(first) = files.first() else { continue };
        let prefix = format!("{table_path}/");
        // Partitioned as its directories are, whatever a declaration says now (a job's
        // output written before its partition columns changed: its next run lays it out
        // anew, docs/jobs.md).
        let relative = first.location.as_ref().strip_prefix(&prefix).unwrap_or_default();
        let columns: Vec<String> = hive_partitions(relative).map(|(k, _)| k.to_string()).collect();
        let shape = match shapes.iter().find(|s| s.dir == dir) {
            Some(s) if s.partition_names() == columns => s.clone(),
            Some(s) => s.laid_out_by(&columns).map_err(LakeError::Config)?,
            None => inferred_shape(lake, &dir, &first.location, columns).await?,
        };
        let adds: Vec<Action> = files
            .iter()
            .map(|m| {
                let relative = m.location.as_ref().strip_prefix(&prefix).unwrap_or(m.location.as_ref()).to_string();
                let partition_values = hive_partitions(&relative)
                    .map(|(k, v)| (k.to_string(), Some(v.to_string())))
                    .collect::<HashMap<_, _>>();
                Action::Add(Add {
                    path: relative,
                    partition_values,
                    size: m.size as i64,
                    modification_time: m.last_modified.timestamp_millis(),
                    data_change: true,
                    stats: None,
                    tags: None,
                    deletion_vector: None,
                    base_row_id: None,
                    default_row_commit_version: None,
                    clustering_provider: None,
                })
            })
            .collect();
        let log_store = super::delta::handle(store.clone(), &url)?.log_store();
        CreateBuilder::new()
            .with_log_store(log_store)
            .with_table_name(shape.name.clone())
            .with_columns(shape.delta_schema()?.fields().cloned())
            .with_partition_columns(shape.partition_names())
            .with_save_mode(SaveMode::ErrorIfExists)
            .with_actions(adds)
            .await?;
        tracing::info!(table = dir, files = files.len(), "converted to a Delta table");
        report.converted.push((dir, files.len()));
    }

    // Every table is converted: what the old records hid goes, then the records.
    for path in hidden {
        delete_if_present(store.as_ref(), &Path::from(path)).await?;
        report.deleted += 1;
    }
    for p in record_paths {
        delete_if_present(store.as_ref(), &p).await?;
        report.deleted += 1;
    }
    for claim in store.list(Some(&root.clone().join("_claims"))).try_collect::<Vec<_>>().await? {
        delete_if_present(store.as_ref(), &claim.location).await?;
    }
    // An empty lake stays empty (a command that fails before writing leaves nothing).
    if !report.converted.is_empty() {
        mark_converted(lake).await?;
    }
    if !report.converted.is_empty() || !report.already.is_empty() {
        report.times = add_times(lake).await?;
    }
    Ok(report)
}

/// The directories (relative to the root) that hold Parquet files in Hive partitions: the
/// raw tables at the root, the jobs' outputs under `derived/`.
async fn parquet_dirs(lake: &Lake) -> Result<Vec<String>, LakeError> {
    let store = lake.store();
    let root = lake.location.root.clone();
    let mut dirs = Vec::new();
    let top = store.list_with_delimiter(Some(&root)).await?;
    for p in top.common_prefixes {
        let Some(name) = p.filename().map(str::to_string) else { continue };
        if name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        if name == "derived" {
            for d in store.list_with_delimiter(Some(&p)).await?.common_prefixes {
                if let Some(n) = d.filename().filter(|n| !n.starts_with('_') && !n.contains('=')) {
                    dirs.push(format!("derived/{n}"));
                }
            }
        } else if !name.contains('=') {
            dirs.push(name);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// The shape of a table no declaration describes: the columns of one of its files, the
/// partition columns of that file's path (`columns`, as strings).
async fn inferred_shape(lake: &Lake, dir: &str, file: &Path, columns: Vec<String>) -> Result<TableShape, LakeError> {
    let bytes = lake.store().get(file).await?.bytes().await?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
    let partition_cols = columns.into_iter().map(|k| (k, DataType::Utf8)).collect();
    Ok(TableShape {
        name: dir.rsplit('/').next().unwrap_or(dir).to_string(),
        dir: dir.to_string(),
        file_schema: builder.schema().clone(),
        partition_cols,
        sort: vec![],
    })
}
