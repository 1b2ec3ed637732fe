//! Table registration: the session a job runs in, and the derived tables (plus
//! `job_runs`) for any other session (`wxlake sql`, the API).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::logical_expr::{col, SortExpr};
use datafusion::prelude::SessionContext;

use super::runs;
use super::spec::{embedded_specs, JobSpec, JOB_RUNS};
use super::JobError;
use crate::lake::schema::{self, TableDef};
use crate::lake::{query, Lake};

/// Session settings for jobs.
///
/// - `split_file_groups_by_statistics`: a scan partition reads its files in the order of
///   their min/max statistics on the declared sort order. Path order is not enough: it puts
///   `model=GFS-MOS/` before `model=GFS/` ('-' < '/') although "GFS" < "GFS-MOS", and
///   DataFusion then drops the declared order of the whole scan.
/// - `use_statistics_registry`: cardinality estimates that survive joins and aggregates,
///   so every hash join of a job builds on its small lookup table (without it, a join
///   after an aggregate built on the aggregated side: 5x slower for forecast_daily).
pub fn tune(ctx: &SessionContext) {
    let state = ctx.state_ref();
    let mut state = state.write();
    let options = state.config_mut().options_mut();
    options.execution.split_file_groups_by_statistics = true;
    options.optimizer.use_statistics_registry = true;
}

/// Registers a listing table over `dir` (relative to the lake root).
///
/// The declared order is the partition columns then `sort`: every file holds one value
/// of each partition column, so a file is trivially sorted by them, and with that prefix
/// DataFusion can prove that a scan partition reading several files in path order is still
/// sorted (min/max statistics of consecutive files do not overlap). Aggregates grouped by
/// the partition columns and a prefix of `sort` then stream instead of hashing everything.
pub fn register_listing(
    ctx: &SessionContext,
    lake: &Lake,
    name: &str,
    dir: &str,
    file_schema: SchemaRef,
    partition_cols: &[&str],
    sort: &[&str],
) -> Result<(), JobError> {
    let url = ListingTableUrl::parse(lake.table_url(dir))?;
    let order: Vec<SortExpr> = partition_cols.iter().chain(sort).map(|c| col(*c).sort(true, false)).collect();
    let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
        .with_file_extension(".parquet")
        .with_table_partition_cols(partition_cols.iter().map(|c| (c.to_string(), DataType::Utf8)).collect())
        .with_file_sort_order(vec![order]);
    let config = ListingTableConfig::new(url).with_listing_options(options).with_schema(file_schema);
    ctx.deregister_table(name)?;
    ctx.register_table(name, Arc::new(ListingTable::try_new(config)?))?;
    Ok(())
}

/// Registers a lake table (observations, forecasts ...) with its partition-prefixed order.
pub fn register_lake_table(ctx: &SessionContext, lake: &Lake, t: &TableDef) -> Result<(), JobError> {
    register_listing(ctx, lake, t.name, t.name, t.file_schema(), t.partition_cols, t.sort_cols)
}

/// Registers one job's output table.
pub fn register_output(ctx: &SessionContext, lake: &Lake, spec: &JobSpec) -> Result<(), JobError> {
    let parts: Vec<&str> = spec.output.partition_by.iter().map(String::as_str).collect();
    let sort: Vec<&str> = spec.output.sort_by.iter().map(String::as_str).collect();
    register_listing(ctx, lake, &spec.output.table, &spec.output.dir(), spec.output.file_schema(), &parts, &sort)
}

/// Registers every derived table of the embedded job declarations, and `job_runs`.
/// Call after [`query::session`]; tables whose job never ran are empty.
pub async fn register_derived(ctx: &SessionContext, lake: &Lake) -> Result<(), JobError> {
    register_derived_with(ctx, lake, &embedded_specs()?)
}

/// [`register_derived`] for a given set of declarations.
pub fn register_derived_with(ctx: &SessionContext, lake: &Lake, specs: &[JobSpec]) -> Result<(), JobError> {
    for s in specs {
        register_output(ctx, lake, s)?;
    }
    register_listing(ctx, lake, JOB_RUNS, &runs::dir(), runs::file_schema(), &["job"], &["started_at"])
}

/// The session a job runs in: every lake table, `stations`, `models`, the outputs of the
/// jobs it reads (`derived_inputs`) and `job_runs`. Lake tables are registered with their
/// partition-prefixed order (see [`register_listing`]).
pub async fn job_session(lake: &Lake, spec: &JobSpec) -> Result<SessionContext, JobError> {
    let ctx = query::session(lake).await?;
    tune(&ctx);
    for t in schema::TABLES {
        register_lake_table(&ctx, lake, t)?;
    }
    for o in &spec.derived_inputs {
        let parts: Vec<&str> = o.partition_by.iter().map(String::as_str).collect();
        let sort: Vec<&str> = o.sort_by.iter().map(String::as_str).collect();
        register_listing(&ctx, lake, &o.table, &o.dir(), o.file_schema(), &parts, &sort)?;
    }
    register_listing(&ctx, lake, JOB_RUNS, &runs::dir(), runs::file_schema(), &["job"], &["started_at"])?;
    Ok(ctx)
}
