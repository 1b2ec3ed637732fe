//! Derived tables in sessions: the session a job runs in, and the derived tables (plus
//! `job_runs`) for any other session (`wxlake sql`, the API). Every table is registered
//! through the lake's one registrar ([`register_table`]).

use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;

use super::adjacent_groups::AdjacentGroups;
use super::error::JobError;
use super::job_set::embedded_specs;
use super::runs;
use super::spec::{JobSpec, OutputSpec};
use crate::lake::delta::TableShape;
use crate::lake::query::{self, register_table};
use crate::lake::Lake;

/// Session settings for jobs (figures: benches/README.md, "SQL jobs"):
///
/// - `use_statistics_registry`: cardinality estimates that survive aggregates and joins,
///   so each hash join builds on its small lookup table; without it the joins after an
///   aggregate built on the aggregated side.
/// - `parquet.pushdown_filters` off: job scans read whole partitions and their filters drop
///   next to nothing, so evaluating them during decoding only costs. Row-group and page
///   pruning by statistics still apply.
/// - Files shared among partitions by the hash of their partition values once a scan has
///   [`PARTITION_VALUES_PER_PARTITION`] per partition ([`crate::lake::file_groups`]), and a
///   hash partitioning on some of an operator's keys taken as one on all of them (subset
///   satisfaction, DataFusion's default from four partitions): an aggregate grouped by a
///   table's partition columns and more runs in one step per partition.
/// - Runs of equal group keys folded before an aggregate that can merge them
///   ([`AdjacentGroups`]): the files' order puts a group's rows one after another.
///
/// A new context on `ctx`'s state (its tables included): an optimizer rule cannot be added
/// to a state in place.
pub fn tuned(ctx: &SessionContext) -> SessionContext {
    let state = SessionStateBuilder::new_from_existing(ctx.state())
        .with_physical_optimizer_rule(Arc::new(AdjacentGroups))
        .build();
    let ctx = SessionContext::new_with_state(state);
    tune_options(&ctx);
    ctx
}

fn tune_options(ctx: &SessionContext) {
    let state = ctx.state_ref();
    let mut state = state.write();
    let partitions = state.config().target_partitions();
    let options = state.config_mut().options_mut();
    options.optimizer.use_statistics_registry = true;
    options.execution.parquet.pushdown_filters = false;
    options.optimizer.preserve_file_partitions = PARTITION_VALUES_PER_PARTITION * partitions;
    options.optimizer.subset_repartition_threshold = partitions;
    query::env_overrides(options);
}

/// Distinct partition values per partition below which a job's scan is shared among
/// partitions by size instead: with fewer, one large value could keep a core busy while
/// the other idles.
const PARTITION_VALUES_PER_PARTITION: usize = 4;

/// Registers a job's output table (declared partition types and sort order).
pub fn register_output(ctx: &SessionContext, lake: &Lake, output: &OutputSpec) -> Result<(), JobError> {
    Ok(register_table(ctx, lake, output.shape())?)
}

/// Every table of a lake: the raw tables, the embedded jobs' outputs and `job_runs`.
pub fn all_shapes() -> Result<Vec<TableShape>, JobError> {
    let mut shapes: Vec<TableShape> = crate::lake::schema::TABLES.iter().map(|t| TableShape::lake_table(t)).collect();
    shapes.extend(embedded_specs()?.iter().map(|s| s.output.shape()));
    shapes.push(runs::shape());
    Ok(shapes)
}

/// Registers every derived table of the embedded job declarations, and `job_runs`.
/// Call after [`query::session`]; tables whose job never ran are empty.
pub async fn register_derived(ctx: &SessionContext, lake: &Lake) -> Result<(), JobError> {
    register_derived_with(ctx, lake, &embedded_specs()?)
}

/// The one session analysts' SQL runs in, with the engine settings of [`query::session`]:
/// every lake table, `stations`, `models`, the jobs' derived tables and `job_runs`. `wxlake
/// sql` queries it, and the server's (REST, and through it the SQL servers of
/// [`crate::sqlwire`]) is built by it, so a query sees the same tables everywhere.
pub async fn analyst_session(lake: &Lake) -> Result<SessionContext, JobError> {
    let ctx = query::session(lake).await?;
    register_derived(&ctx, lake).await?;
    crate::lake::time_travel::TableAt::register(&ctx).await?;
    crate::lake::as_of::AsOf::register(&ctx).await?;
    Ok(ctx)
}

/// [`register_derived`] for a given set of declarations.
pub fn register_derived_with(ctx: &SessionContext, lake: &Lake, specs: &[JobSpec]) -> Result<(), JobError> {
    for s in specs {
        register_output(ctx, lake, &s.output)?;
    }
    register_job_runs(ctx, lake)
}

fn register_job_runs(ctx: &SessionContext, lake: &Lake) -> Result<(), JobError> {
    Ok(register_table(ctx, lake, runs::shape())?)
}

/// The session a job runs in: every lake table (as [`query::session`] registers them, with
/// the files' declared sort order), `stations`, `models`, the outputs of the jobs it reads
/// (`derived_inputs`) and `job_runs`, with the settings of [`tune`], on `runtime`.
///
/// Why the forecasts' sort order does not make forecast_daily stream: DataFusion keeps a
/// declared order only for scan partitions whose files provably follow each other (min/max
/// statistics), and a (model, run_date) partition's files all span the same stations.
/// Declaring the partition columns as an order prefix makes the first aggregate run in
/// `PartiallySorted` mode on a compacted lake, measured slower than the hash aggregate
/// (benches/README.md), so no table declares it ([`register_table`]) and the job gets its
/// speed from one scan for both tz_modes and small join build sides instead.
pub async fn job_session(lake: &Lake, spec: &JobSpec, runtime: Arc<RuntimeEnv>) -> Result<SessionContext, JobError> {
    let ctx = tuned(&query::session_on(lake, runtime).await?);
    for o in &spec.derived_inputs {
        register_output(&ctx, lake, o)?;
    }
    register_job_runs(&ctx, lake)?;
    Ok(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::job_set::find;
    use crate::lake::snapshot_table::SnapshotTable;

    /// Lake tables, job outputs and `job_runs` go through one registrar and declare their
    /// order by one rule: the files' sort columns, no partition prefix; partition columns
    /// keep their declared types.
    #[tokio::test]
    async fn every_table_declares_its_order_by_one_rule() {
        let tmp = tempfile::tempdir().unwrap();
        let lake = Lake::open(&tmp.path().join("lake").display().to_string()).await.unwrap();
        let specs = embedded_specs().unwrap();
        let runtime = query::runtime_env(&lake).unwrap();
        let ctx = job_session(&lake, find(&specs, "accuracy_pairs").unwrap(), runtime).await.unwrap();
        let declared = |name: &'static str| {
            let ctx = ctx.clone();
            async move {
                let provider = ctx.table_provider(name).await.unwrap();
                let t = provider.downcast_ref::<SnapshotTable>().unwrap();
                let parts: Vec<String> = t.shape.partition_cols.iter().map(|(c, ty)| format!("{c}:{ty}")).collect();
                (t.shape.sort.clone(), parts)
            }
        };
        assert_eq!(
            declared("forecasts").await,
            (
                vec!["location_name".into(), "run_time".into(), "valid_time".into()],
                vec!["model:Utf8".into(), "run_date:Utf8".into()]
            )
        );
        let fd = &find(&specs, "forecast_daily").unwrap().output;
        let fd_parts: Vec<String> = fd.partition_types().iter().map(|(c, ty)| format!("{c}:{ty}")).collect();
        assert_eq!(declared("forecast_daily").await, (fd.sort_by.clone(), fd_parts));
        assert_eq!(declared("job_runs").await, (vec!["started_at".to_string()], vec!["job:Utf8".to_string()]));
    }
}
