//! DataFusion over the lake: every table registered as a listing table with its Hive
//! partitions and declared sort order ([`register_listing`], also used for the jobs'
//! derived tables), plus the in-memory `stations` and `models` tables.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{ArrayRef, BooleanArray, Float64Array, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::datasource::MemTable;
use datafusion::execution::cache::cache_manager::{CacheManagerConfig, CachedFileMetadataEntry, FileMetadataCache};
use datafusion::execution::cache::default_cache::DefaultCache;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::{col, SortExpr};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;

use super::schema::{TableDef, TABLES};
use super::{Lake, LakeError};
use crate::catalog::Catalog;
use crate::models::MODELS;

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

/// [`session`] on a given runtime (a job run's, [`run_runtime_env`]).
pub async fn session_on(lake: &Lake, runtime: Arc<RuntimeEnv>) -> Result<SessionContext, LakeError> {
    let ctx = SessionContext::new_with_config_rt(session_config(), runtime);
    for t in TABLES {
        register_listing(&ctx, lake, Listing::lake_table(t))?;
    }
    ctx.register_table("stations", Arc::new(stations_table()?))?;
    ctx.register_table("models", Arc::new(models_table()?))?;
    Ok(ctx)
}

/// The engine settings of every lake session (the cluster's client sends them to the
/// scheduler with each query, so a query plans the same way there).
pub fn session_config() -> SessionConfig {
    SessionConfig::new()
        .with_information_schema(true)
        .with_target_partitions(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).max(2))
        .set_bool("datafusion.execution.parquet.pushdown_filters", true)
        .set_bool("datafusion.execution.parquet.reorder_filters", true)
}

/// The runtime of every lake session: the lake's (visibility-aware) store registered at
/// the lake's URL, no listing cache, and the process's footer cache. The cluster's
/// scheduler plans and its executors read through the same runtime (src/cluster).
///
/// DataFusion 55 caches file listings forever by default: a long-lived session (the
/// server's) would never see a flushed file, and would still list the files a job run or
/// a compaction replaced, nor would it see what another process (an `ingest` next to a
/// `serve`) wrote. The cache also lists a whole table on a miss, where a query filtering
/// on the partition columns lists one partition's prefix: on S3 with 100,000 files
/// that is 100 LIST pages instead of one. So listings are not cached (except across one
/// job run's chunks, [`run_runtime_env`]). Parquet footers
/// are, in one cache for every session of the process: a file never changes once
/// written (names are unique), and entries are checked against size and time anyway.
pub fn runtime_env(lake: &Lake) -> Result<Arc<RuntimeEnv>, LakeError> {
    build_runtime(lake, CacheManagerConfig::default().with_list_files_cache_limit(0))
}

/// The longest a job run reuses a table's listing (see [`run_runtime_env`]).
pub const RUN_LISTING_REUSE: Duration = Duration::from_secs(60);

/// Memory for a job run's cached listings: 64 MiB, about 300,000 files' metadata.
const RUN_LISTING_BYTES: usize = 64 << 20;

/// The runtime every chunk of one job run shares: [`runtime_env`]'s, except that a table's
/// listing is reused for up to [`RUN_LISTING_REUSE`]. A full run computes chunk after chunk
/// (a week each), each filtering a range of days that does not name the leading partition
/// column, so each listed the whole input table again, page after page on S3
/// (benches/README.md, "Scale-out"). A reused listing may name a file a compaction has
/// replaced since; the lake keeps such files for its keep time, and the reuse is capped
/// at half of it (none when the lake deletes replaced files at once).
pub fn run_runtime_env(lake: &Lake) -> Result<Arc<RuntimeEnv>, LakeError> {
    let reuse = RUN_LISTING_REUSE.min(lake.keep_replaced() / 2);
    if reuse.is_zero() {
        return runtime_env(lake);
    }
    let caches = CacheManagerConfig::default()
        .with_list_files_cache_limit(RUN_LISTING_BYTES)
        .with_list_files_cache_ttl(Some(reuse));
    build_runtime(lake, caches)
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

/// A Parquet listing table of the lake: where its files are and what they hold.
#[derive(Debug, Clone)]
pub struct Listing<'a> {
    /// The SQL name.
    pub name: &'a str,
    /// Directory relative to the lake root (`forecasts`, `derived/forecast_daily`).
    pub dir: &'a str,
    /// The columns stored in the files.
    pub file_schema: SchemaRef,
    /// Hive partition columns, outermost first, with the type SQL sees them as.
    pub partition_cols: Vec<(String, DataType)>,
    /// The order of the rows inside each file.
    pub sort: Vec<&'a str>,
}

impl Listing<'static> {
    /// A lake table as [`TABLES`] defines it (partition values as strings, as ingest
    /// writes them).
    pub fn lake_table(t: &'static TableDef) -> Self {
        Listing {
            name: t.name,
            dir: t.name,
            file_schema: t.file_schema(),
            partition_cols: t.partition_cols.iter().map(|c| (c.to_string(), DataType::Utf8)).collect(),
            sort: t.sort_cols.to_vec(),
        }
    }
}

/// Registers (or replaces) a listing table, the one way every table of the lake is
/// registered: lake tables, job outputs and `job_runs`.
///
/// The declared order is [`Listing::sort`], the order inside each file, and not the
/// partition columns before it (true as well: a file holds one value of each). With that
/// prefix DataFusion keeps the order across the files of a scan whenever each holds a
/// different partition (a compacted lake, a job's output), and then groups by the
/// partition columns in `PartiallySorted` mode behind order-preserving repartitions, which
/// measured slower than hashing for the jobs' aggregates (benches/README.md, "SQL jobs").
pub fn register_listing(ctx: &SessionContext, lake: &Lake, listing: Listing<'_>) -> Result<(), LakeError> {
    let url = ListingTableUrl::parse(lake.table_url(listing.dir))?;
    let order: Vec<SortExpr> = listing.sort.iter().map(|c| col(*c).sort(true, false)).collect();
    let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
        .with_file_extension(".parquet")
        .with_table_partition_cols(listing.partition_cols)
        .with_file_sort_order(vec![order]);
    let config = ListingTableConfig::new(url).with_listing_options(options).with_schema(listing.file_schema);
    ctx.deregister_table(listing.name)?;
    ctx.register_table(listing.name, Arc::new(ListingTable::try_new(config)?))?;
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

/// The model schedule table (name, cycles, horizon, coarsest step), used by jobs to decide
/// full-day coverage. `cycles` lists the runs' UTC labels (`00z,06z,12z,18z`; LAMP's
/// `00:30z,01:30z,...`, its runs being labelled HH30).
pub fn models_table() -> Result<MemTable, LakeError> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("model", DataType::Utf8, false),
        Field::new("cycles", DataType::Utf8, false),
        Field::new("horizon_h", DataType::Int32, false),
        Field::new("max_step_h", DataType::Int32, false),
        Field::new("statistical", DataType::Boolean, false),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(MODELS.iter().map(|m| m.name))),
        Arc::new(StringArray::from_iter_values(MODELS.iter().map(|m| m.cycle_labels().join(",")))),
        Arc::new(Int32Array::from_iter_values(MODELS.iter().map(|m| m.horizon_h as i32))),
        Arc::new(Int32Array::from_iter_values(MODELS.iter().map(|m| m.max_step() as i32))),
        Arc::new(BooleanArray::from(MODELS.iter().map(|m| m.statistical).collect::<Vec<_>>())),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), cols)?;
    Ok(MemTable::try_new(schema, vec![vec![batch]])?)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;

    use super::*;

    /// One job run's chunks list a table once (within the reuse time); a lake that
    /// deletes replaced files at once gets no reuse, and neither does any other session.
    #[tokio::test]
    async fn a_runs_sessions_share_their_listings() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().join("lake").display());
        let lists = |lake: &Lake, runtime: fn(&Lake) -> Result<Arc<RuntimeEnv>, LakeError>| {
            let lake = lake.clone();
            async move {
                let runtime = runtime(&lake).unwrap();
                let before = lake.requests().list;
                for _ in 0..3 {
                    let ctx = session_on(&lake, Arc::clone(&runtime)).await.unwrap();
                    ctx.sql("SELECT count(*) FROM forecasts WHERE run_date > '2026-01-01'")
                        .await
                        .unwrap()
                        .collect()
                        .await
                        .unwrap();
                }
                lake.requests().list - before
            }
        };
        let lake = Lake::open(&url).await.unwrap();
        // A table with a file (DataFusion caches no empty listing).
        let run = chrono::DateTime::parse_from_rfc3339("2026-03-07T00:00:00Z").unwrap().to_utc();
        let row = crate::decode::types::ForecastRow {
            model: "GFS",
            location_name: "KNYC".into(),
            run_time: run,
            valid_time: run + chrono::Duration::hours(6),
            forecast_hour: 6,
            ..Default::default()
        };
        lake.write(vec![row]).await.unwrap();
        let once = lists(&lake, run_runtime_env).await;
        let every_time = lists(&lake, runtime_env).await;
        assert!(once > 0, "the first session lists");
        assert_eq!(every_time, 3 * once, "without reuse each of the three sessions lists");
        let no_keep = Lake::open_keeping(&url, Duration::ZERO).await.unwrap();
        assert_eq!(lists(&no_keep, run_runtime_env).await, 3 * once, "nothing kept, nothing reused");
    }

    #[tokio::test]
    async fn models_table_shows_each_models_true_run_labels() {
        let ctx = SessionContext::new();
        ctx.register_table("models", Arc::new(models_table().unwrap())).unwrap();
        let batches = ctx.sql("SELECT model, cycles FROM models").await.unwrap().collect().await.unwrap();
        let mut cycles = std::collections::HashMap::new();
        for b in &batches {
            for i in 0..b.num_rows() {
                let text = |c: usize| b.column(c).as_string::<i32>().value(i).to_string();
                cycles.insert(text(0), text(1));
            }
        }
        assert_eq!(cycles.len(), 18);
        assert_eq!(cycles["GFS"], "00z,06z,12z,18z");
        assert_eq!(cycles["NAM-MOS"], "00z,12z");
        let lav = &cycles["LAV-MOS"];
        assert!(lav.starts_with("00:30z,01:30z,") && lav.ends_with(",23:30z"), "{lav}");
        assert_eq!(lav.split(',').count(), 24);
    }
}
