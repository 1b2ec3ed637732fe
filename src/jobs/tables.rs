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
use crate::lake::{query, Lake};

/// Session settings for jobs (measured on forecast_daily, 7.2 M rows, 2 cores):
///
/// - `use_statistics_registry`: cardinality estimates that survive aggregates and joins,
///   so each hash join builds on its small lookup table; without it the joins after an
///   aggregate built on the aggregated side (final query 0.5 s instead of 0.2 s a week).
/// - `parquet.pushdown_filters` off: job scans read whole partitions and their filters drop
///   next to nothing, so evaluating them during decoding only costs (about 10%). Row-group
///   and page pruning by statistics still apply.
pub fn tune(ctx: &SessionContext) {
    let state = ctx.state_ref();
    let mut state = state.write();
    let options = state.config_mut().options_mut();
    options.optimizer.use_statistics_registry = true;
    options.execution.parquet.pushdown_filters = false;
}

/// Registers a listing table over `dir` (relative to the lake root), declaring the files'
/// order as the partition columns then `sort` (every file holds one value of each
/// partition column, so it is trivially sorted by them; the prefix lets DataFusion prove
/// that several files of a scan partition follow each other).
pub fn register_listing(
    ctx: &SessionContext,
    lake: &Lake,
    name: &str,
    dir: &str,
    file_schema: SchemaRef,
    partition_cols: &[(String, DataType)],
    sort: &[&str],
) -> Result<(), JobError> {
    let url = ListingTableUrl::parse(lake.table_url(dir))?;
    let order: Vec<SortExpr> = partition_cols
        .iter()
        .map(|(c, _)| c.as_str())
        .chain(sort.iter().copied())
        .map(|c| col(c).sort(true, false))
        .collect();
    let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
        .with_file_extension(".parquet")
        .with_table_partition_cols(partition_cols.to_vec())
        .with_file_sort_order(vec![order]);
    let config = ListingTableConfig::new(url).with_listing_options(options).with_schema(file_schema);
    ctx.deregister_table(name)?;
    ctx.register_table(name, Arc::new(ListingTable::try_new(config)?))?;
    Ok(())
}

/// Registers one job's output table.
pub fn register_output(ctx: &SessionContext, lake: &Lake, spec: &JobSpec) -> Result<(), JobError> {
    let sort: Vec<&str> = spec.output.sort_by.iter().map(String::as_str).collect();
    let parts = spec.output.partition_types();
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
    register_job_runs(ctx, lake)
}

fn register_job_runs(ctx: &SessionContext, lake: &Lake) -> Result<(), JobError> {
    register_listing(
        ctx,
        lake,
        JOB_RUNS,
        &runs::dir(),
        runs::file_schema(),
        &[("job".into(), DataType::Utf8)],
        &["started_at"],
    )
}

/// The session a job runs in: every lake table (as [`query::session`] registers them, with
/// the files' declared sort order), `stations`, `models`, the outputs of the jobs it reads
/// (`derived_inputs`) and `job_runs`, with the settings of [`tune`].
///
/// Why the forecasts' sort order does not make forecast_daily stream: DataFusion keeps a
/// declared order only for scan partitions whose files provably follow each other (min/max
/// statistics), and a (model, run_date) partition's files all span the same stations. With
/// the partition columns declared as an order prefix and files grouped by statistics, the
/// first aggregate does run in `PartiallySorted` mode, but measured 40% slower than the hash
/// aggregate on 2 cores (DataFusion 55), so the job keeps the hash aggregate and gets its
/// speed from one scan for both tz_modes and small join build sides instead.
pub async fn job_session(lake: &Lake, spec: &JobSpec) -> Result<SessionContext, JobError> {
    let ctx = query::session(lake).await?;
    tune(&ctx);
    for o in &spec.derived_inputs {
        let sort: Vec<&str> = o.sort_by.iter().map(String::as_str).collect();
        register_listing(&ctx, lake, &o.table, &o.dir(), o.file_schema(), &o.partition_types(), &sort)?;
    }
    register_job_runs(&ctx, lake)?;
    Ok(ctx)
}
