//! DataFusion over the lake: every Delta table registered as a [`SnapshotTable`] with its
//! Hive partitions and declared sort order ([`register_table`], also used for the jobs'
//! derived tables), plus the in-memory `stations` and `models` tables.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, Float64Array, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::execution::cache::cache_manager::{CacheManagerConfig, CachedFileMetadataEntry, FileMetadataCache};
use datafusion::execution::cache::default_cache::DefaultCache;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;

use super::delta::{At, TableShape};
use super::schema::TABLES;
use super::snapshot_table::SnapshotTable;
use super::{Lake, LakeError};
use crate::catalog::Catalog;
use crate::models::{MODELS, PUBLICATION};

/// Plans the statements of `text` (split by the SQL parser, so a `;` inside a string
/// literal or a comment is not a separator) and refuses any that would change something:
/// DDL (`CREATE ...`, `DROP ...`), DML (`INSERT`, `COPY`) and session statements (`SET`).
/// Rows enter the lake only through ingest, which deduplicates; an `INSERT` here would
/// bypass that, so analysts' SQL is read-only.
pub async fn read_only_plans(ctx: &SessionContext, text: &str) -> Result<Vec<LogicalPlan>, LakeError> {
    let options = datafusion::execution::context::SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false);
    let state = ctx.state();
    let mut plans = Vec::new();
    for statement in DFParser::parse_sql(text)? {
        let plan = state.statement_to_plan(statement).await?;
        options.verify_plan(&plan).map_err(|e| {
            LakeError::ReadOnly(e.to_string().trim_start_matches("Error during planning: ").to_string())
        })?;
        plans.push(plan);
    }
    Ok(plans)
}

/// A session with every lake table registered.
pub async fn session(lake: &Lake) -> Result<SessionContext, LakeError> {
    session_on(lake, runtime_env(lake)?).await
}

/// [`session`] on a given runtime (a job run's, or a cluster process's).
pub async fn session_on(lake: &Lake, runtime: Arc<RuntimeEnv>) -> Result<SessionContext, LakeError> {
    let ctx = SessionContext::new_with_config_rt(session_config(), runtime);
    for t in TABLES {
        register_table(&ctx, lake, TableShape::lake_table(t))?;
    }
    ctx.register_table("stations", Arc::new(stations_table()?))?;
    ctx.register_table("models", Arc::new(models_table()?))?;
    Ok(ctx)
}

/// The engine settings of every lake session (the cluster's client sends them to the
/// scheduler with each query, so a query plans the same way there).
pub fn session_config() -> SessionConfig {
    let mut config = SessionConfig::new()
        .with_information_schema(true)
        .with_target_partitions(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).max(2))
        .set_bool("datafusion.execution.parquet.pushdown_filters", true)
        .set_bool("datafusion.execution.parquet.reorder_filters", true);
    env_overrides(config.options_mut());
    config
}

/// Any engine setting from the environment, as DataFusion names it there
/// (`datafusion.execution.batch_size` from `DATAFUSION_EXECUTION_BATCH_SIZE`), over
/// wxlake's own: an operator tunes a deployment, and a benchmark tries a setting, without
/// a build. Applied last wherever wxlake sets engine options (here and for job sessions).
/// The environment is read once per process; a value the setting refuses is logged then
/// and left out.
pub fn env_overrides(options: &mut datafusion::config::ConfigOptions) {
    for (key, value) in env_settings() {
        // Checked against the defaults when read, so this cannot fail.
        options.set(key, value).ok();
    }
}

fn env_settings() -> &'static [(String, String)] {
    static SETTINGS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    SETTINGS.get_or_init(|| {
        let mut check = datafusion::config::ConfigOptions::default();
        let mut settings = Vec::new();
        for entry in check.entries() {
            let Some(value) = std::env::var_os(entry.key.to_uppercase().replace('.', "_")) else { continue };
            let value = value.to_string_lossy().into_owned();
            match check.set(&entry.key, &value) {
                Ok(()) => {
                    tracing::info!(setting = %entry.key, %value, "engine setting from the environment");
                    settings.push((entry.key, value));
                }
                Err(e) => {
                    tracing::warn!(setting = %entry.key, %value, error = %e, "engine setting from the environment refused")
                }
            }
        }
        settings
    })
}

/// The runtime of every lake session: the lake's store registered at the lake's URL and
/// the process's footer cache. The cluster's scheduler plans and its executors read
/// through the same runtime (src/cluster).
///
/// Parquet footers are cached in one cache for every session of the process: a file
/// never changes once written (names are unique), and entries are checked against size
/// and time anyway. Nothing else is: which files a table has is its Delta snapshot's
/// business, read at each scan ([`SnapshotTable`]).
pub fn runtime_env(lake: &Lake) -> Result<Arc<RuntimeEnv>, LakeError> {
    build_runtime(lake, CacheManagerConfig::default().with_list_files_cache_limit(0))
}

fn build_runtime(lake: &Lake, caches: CacheManagerConfig) -> Result<Arc<RuntimeEnv>, LakeError> {
    let runtime = RuntimeEnvBuilder::new()
        .with_object_store_registry(Arc::new(super::store::LakeStores::default()))
        .with_cache_manager(
            caches.with_file_metadata_cache(Some(footer_cache())).with_metadata_cache_limit(FOOTER_CACHE_BYTES),
        )
        .build_arc()
        .map_err(|e| LakeError::setup(e.to_string(), e))?;
    let url = url::Url::parse(lake.location.base_url.as_str()).map_err(|e| LakeError::setup(e.to_string(), e))?;
    runtime.register_object_store(&url, lake.store());
    Ok(runtime)
}

/// Files the footer cache holds at once: a lake of 100,000 files (every ASOS station over
/// years, compacted to a file per partition) is queried without re-reading footers.
pub const FOOTER_CACHE_FILES: usize = 100_000;

/// Decoded footer bytes budgeted per file: a lake file's footer holds the schema and the
/// statistics of a few dozen columns in one or two row groups, plus their page index, and
/// decoded it takes a multiple of its size on disk. The limit only bounds the cache: it
/// holds what queries have read, least recently used first out.
const FOOTER_BYTES_PER_FILE: usize = 16 * 1024;

/// The footer cache's memory limit: [`FOOTER_CACHE_FILES`] footers.
pub const FOOTER_CACHE_BYTES: usize = FOOTER_CACHE_FILES * FOOTER_BYTES_PER_FILE;

/// The process's one footer cache (least recently used footers go first).
fn footer_cache() -> Arc<FileMetadataCache> {
    type Footers = DefaultCache<object_store::path::Path, CachedFileMetadataEntry>;
    static CACHE: std::sync::OnceLock<Arc<Footers>> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(|| Arc::new(Footers::new(FOOTER_CACHE_BYTES)));
    Arc::clone(cache) as Arc<FileMetadataCache>
}

/// Registers (or replaces) a lake table, the one way every table of the lake is
/// registered: lake tables, job outputs and `job_runs`, each read at its latest snapshot
/// at every scan.
pub fn register_table(ctx: &SessionContext, lake: &Lake, shape: TableShape) -> Result<(), LakeError> {
    let name = shape.name.clone();
    let table = SnapshotTable::new(lake, shape, At::Latest)?;
    ctx.deregister_table(name.as_str())?;
    ctx.register_table(name.as_str(), Arc::new(table))?;
    Ok(())
}

/// The station catalog as a SQL table.
pub fn stations_table() -> Result<MemTable, LakeError> {
    let c = Catalog::global().all();
    let schema = Arc::new(Schema::new(vec![
        Field::new("station_code", DataType::Utf8, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("city", DataType::Utf8, false),
        Field::new("country", DataType::Utf8, false),
        Field::new("units", DataType::Utf8, false),
        Field::new("timezone", DataType::Utf8, false),
        Field::new("standard_offset_minutes", DataType::Int32, false),
        Field::new("latitude", DataType::Float64, false),
        Field::new("longitude", DataType::Float64, false),
        Field::new("elevation_ft", DataType::Float64, false),
        Field::new("precipitation", DataType::Boolean, false),
    ]));
    let strings = |f: fn(&crate::catalog::Station) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(c.iter().map(f)))
    };
    let floats = |f: fn(&crate::catalog::Station) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(c.iter().map(f)))
    };
    let cols: Vec<ArrayRef> = vec![
        strings(|s| s.code.clone()),
        strings(|s| s.name.clone()),
        strings(|s| s.city.clone()),
        strings(|s| s.country.clone()),
        strings(|s| s.units.as_str().to_string()),
        strings(|s| s.timezone.name().to_string()),
        Arc::new(Int32Array::from_iter_values(c.iter().map(|s| s.standard_offset().local_minus_utc() / 60))),
        floats(|s| s.latitude),
        floats(|s| s.longitude),
        floats(|s| s.elevation_ft),
        Arc::new(BooleanArray::from(c.iter().map(|s| s.precipitation).collect::<Vec<_>>())),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), cols)?;
    Ok(MemTable::try_new(schema, vec![vec![batch]])?)
}

/// The model schedule table (name, cycles, horizon, coarsest step, when runs are published
/// and where that figure comes from), used by jobs to decide full-day coverage and by
/// analysts to see what `available_at` of a backfilled run rests on. `cycles` lists the runs' UTC labels (`00z,06z,12z,18z`; LAMP's
/// `00:30z,01:30z,...`, its runs being labelled HH30).
pub fn models_table() -> Result<MemTable, LakeError> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("model", DataType::Utf8, false),
        Field::new("cycles", DataType::Utf8, false),
        Field::new("horizon_h", DataType::Int32, false),
        Field::new("max_step_h", DataType::Int32, false),
        Field::new("statistical", DataType::Boolean, false),
        Field::new("publication_delay_min", DataType::Int32, false),
        Field::new("publication_source", DataType::Utf8, false),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(MODELS.iter().map(|m| m.name))),
        Arc::new(StringArray::from_iter_values(MODELS.iter().map(|m| m.cycle_labels().join(",")))),
        Arc::new(Int32Array::from_iter_values(MODELS.iter().map(|m| m.horizon_h as i32))),
        Arc::new(Int32Array::from_iter_values(MODELS.iter().map(|m| m.max_step() as i32))),
        Arc::new(BooleanArray::from(MODELS.iter().map(|m| m.statistical).collect::<Vec<_>>())),
        // PUBLICATION is in MODELS order (a models.rs test holds it so).
        Arc::new(Int32Array::from_iter_values(PUBLICATION.iter().map(|p| p.delay_min as i32))),
        Arc::new(StringArray::from_iter_values(PUBLICATION.iter().map(|p| p.source))),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), cols)?;
    Ok(MemTable::try_new(schema, vec![vec![batch]])?)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;

    use super::*;

    #[tokio::test]
    async fn models_table_shows_each_models_true_run_labels() {
        let ctx = SessionContext::new();
        ctx.register_table("models", Arc::new(models_table().unwrap())).unwrap();
        let q = "SELECT model, cycles, publication_delay_min FROM models";
        let batches = ctx.sql(q).await.unwrap().collect().await.unwrap();
        let mut delay = std::collections::HashMap::new();
        let mut cycles = std::collections::HashMap::new();
        for b in &batches {
            for i in 0..b.num_rows() {
                let text = |c: usize| b.column(c).as_string::<i32>().value(i).to_string();
                cycles.insert(text(0), text(1));
                delay.insert(text(0), b.column(2).as_primitive::<datafusion::arrow::datatypes::Int32Type>().value(i));
            }
        }
        assert_eq!(cycles.len(), 18);
        assert_eq!(cycles["GFS"], "00z,06z,12z,18z");
        assert_eq!(cycles["NAM-MOS"], "00z,12z");
        let lav = &cycles["LAV-MOS"];
        assert!(lav.starts_with("00:30z,01:30z,") && lav.ends_with(",23:30z"), "{lav}");
        assert_eq!(lav.split(',').count(), 24);
        // Each model's own publication delay on its own row.
        assert_eq!((delay["GFS"], delay["HRRR"], delay["GEFS"]), (330, 135, 370));
    }
}
