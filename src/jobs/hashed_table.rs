//! A job's intermediate table (`CREATE TABLE … AS`) that keeps the hash partitioning of the
//! plan that made it.
//!
//! DataFusion's `CREATE TABLE … AS` keeps each output partition of the statement's plan as
//! one partition of a `MemTable`, but the table declares no partitioning, so a later
//! aggregate or join on the same columns shuffles rows that already sit where the shuffle
//! would put them. `forecast_daily`'s `fd_pieces` is such a table: made by an aggregate over
//! scans dealt by (model, run date), it feeds two aggregates grouped by those and more.
//! [`create`] runs the statement's plan itself and, when the plan's rows are hashed on
//! columns the table keeps, registers a [`HashedTable`]: the same `MemTable`, whose scans
//! declare that hash over the same partitions.
//!
//! The declaration is exactly what DataFusion's planner already held true of the plan's
//! rows (partition *i* holds every row whose columns hash to *i*, as a `RepartitionExec` on
//! them deals rows), so any plan that relies on it is right. A scan that leaves out one of
//! the columns cannot name it and declares nothing; nor does any scan once an `INSERT`,
//! `UPDATE` or `DELETE` is planned on the table (its rows may no longer follow the hash).
//! Where the hash crowds the rows into a few partitions ([`balanced`]), the table is
//! DataFusion's own. So is any other statement's (constraints, column defaults,
//! `TEMPORARY`, `IF NOT EXISTS`, an existing table without `OR REPLACE`), which DataFusion
//! runs as before.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{plan_err, project_schema, Constraints, Statistics};
use datafusion::datasource::memory::{MemTable, MemorySourceConfig};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{CreateMemoryTable, DdlStatement, Expr, LogicalPlan};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{
    collect_partitioned, DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties, StatisticsArgs,
};
use datafusion::prelude::SessionContext;
use datafusion_datasource::source::DataSource;

/// Runs `CREATE TABLE … AS` in `ctx`: as DataFusion does, but the table declares its plan's
/// hash partitioning where it can (module docs).
pub async fn create(ctx: &SessionContext, t: CreateMemoryTable) -> Result<()> {
    let names = t.input.schema().fields().iter().map(|f| f.name()).collect::<std::collections::HashSet<_>>();
    let plain = t.temporary
        || !t.constraints.is_empty()
        || !t.column_defaults.is_empty()
        || t.if_not_exists
        || names.len() != t.input.schema().fields().len()
        || (!t.or_replace && ctx.table_exist(t.name.clone())?);
    if plain {
        ctx.execute_logical_plan(LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(t))).await?.collect().await?;
        return Ok(());
    }
    // As DataFusion's own: the table's schema is the optimized plan's (which may say
    // otherwise of a column's nullability than the plan as written).
    let state = ctx.state();
    let input = state.optimize(&t.input)?;
    let schema = Arc::clone(input.schema().inner());
    let plan = state.create_physical_plan(&input).await?;
    let hash = hashed_columns(plan.output_partitioning(), &schema);
    let partitions = collect_partitioned(plan, ctx.task_ctx()).await?;
    let rows: Vec<usize> = partitions.iter().map(|p| p.iter().map(RecordBatch::num_rows).sum()).collect();
    let mem = MemTable::try_new(schema, partitions)?;
    let table: Arc<dyn TableProvider> = match hash {
        Some(columns) if balanced(&rows) => Arc::new(HashedTable { mem, columns, intact: AtomicBool::new(true) }),
        _ => Arc::new(mem),
    };
    ctx.deregister_table(t.name.clone())?;
    ctx.register_table(t.name, table)?;
    Ok(())
}

/// Whether no partition holds more than [`MAX_SHARE`] times its even share of the rows.
/// A later aggregate grouped by the hashed columns and more keeps the partitions as they
/// are (`subset_repartition_threshold`), so a hash on few distinct values (rows crowded
/// into one partition) would keep one core busy while the others idle; a shuffle on all
/// its keys spreads them.
fn balanced(rows: &[usize]) -> bool {
    let total: usize = rows.iter().sum();
    let most = rows.iter().copied().max().unwrap_or(0);
    most as f64 * rows.len() as f64 <= MAX_SHARE * total as f64
}

/// See [`balanced`]: the fair share and a half.
const MAX_SHARE: f64 = 1.5;

/// The table columns (by index) a plan's rows are hashed on, if its partitioning is a hash
/// of columns only.
fn hashed_columns(partitioning: &Partitioning, schema: &SchemaRef) -> Option<Vec<usize>> {
    let Partitioning::Hash(exprs, _) = partitioning else { return None };
    exprs
        .iter()
        .map(|e| {
            let c = e.downcast_ref::<Column>()?;
            (schema.fields().get(c.index())?.name() == c.name()).then_some(c.index())
        })
        .collect()
}

/// A `MemTable` made by [`create`] from a plan whose rows were hashed on `columns`.
#[derive(Debug)]
pub struct HashedTable {
    mem: MemTable,
    columns: Vec<usize>,
    /// False once a write to the table is planned: its rows may no longer follow the hash.
    intact: AtomicBool,
}

impl HashedTable {
    /// The hash a scan of `projection` declares, if it still holds and keeps every column.
    fn partitioning(&self, projection: Option<&Vec<usize>>, schema: &SchemaRef) -> Option<Partitioning> {
        if !self.intact.load(Ordering::Acquire) {
            return None;
        }
        let exprs = self
            .columns
            .iter()
            .map(|&c| {
                let at = projection.map_or(Some(c), |p| p.iter().position(|&i| i == c))?;
                Some(Arc::new(Column::new(schema.field(at).name(), at)) as Arc<dyn PhysicalExpr>)
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Partitioning::Hash(exprs, self.mem.batches.len()))
    }
}

#[async_trait]
impl TableProvider for HashedTable {
    fn schema(&self) -> SchemaRef {
        self.mem.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.mem.constraints()
    }

    fn table_type(&self) -> TableType {
        self.mem.table_type()
    }

    fn get_column_default(&self, column: &str) -> Option<&Expr> {
        self.mem.get_column_default(column)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let projected = project_schema(&self.mem.schema(), projection)?;
        let Some(partitioning) = self.partitioning(projection, &projected) else {
            return self.mem.scan(state, projection, filters, limit).await;
        };
        let mut partitions = Vec::with_capacity(self.mem.batches.len());
        for p in &self.mem.batches {
            partitions.push(p.read().await.clone());
        }
        let source = MemorySourceConfig::try_new(&partitions, self.mem.schema(), projection.cloned())?;
        Ok(Arc::new(HashedMemoryExec::new(source, projected, partitioning)))
    }

    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.intact.store(false, Ordering::Release);
        self.mem.insert_into(state, input, insert_op).await
    }

    async fn delete_from(&self, state: &dyn Session, filters: Vec<Expr>) -> Result<Arc<dyn ExecutionPlan>> {
        self.intact.store(false, Ordering::Release);
        self.mem.delete_from(state, filters).await
    }

    async fn update(
        &self,
        state: &dyn Session,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.intact.store(false, Ordering::Release);
        self.mem.update(state, assignments, filters).await
    }
}

/// A scan of a [`HashedTable`]'s partitions, as they are, declaring their hash. A leaf of
/// its own rather than DataFusion's memory scan, which declares no partitioning and which
/// the optimizer may split into more partitions.
#[derive(Debug)]
pub struct HashedMemoryExec {
    source: MemorySourceConfig,
    properties: Arc<PlanProperties>,
}

impl HashedMemoryExec {
    fn new(source: MemorySourceConfig, schema: SchemaRef, partitioning: Partitioning) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema),
            partitioning,
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        HashedMemoryExec { source, properties }
    }
}

impl DisplayAs for HashedMemoryExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "HashedMemoryExec: {}, ", self.properties.output_partitioning())?;
        self.source.fmt_as(t, f)
    }
}

impl ExecutionPlan for HashedMemoryExec {
    fn name(&self) -> &'static str {
        "HashedMemoryExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return Err(DataFusionError::Internal(format!("HashedMemoryExec has no input, given {}", children.len())));
        }
        Ok(self)
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let count = self.properties.output_partitioning().partition_count();
        if partition >= count {
            return plan_err!("HashedMemoryExec has {count} partitions, asked for {partition}");
        }
        self.source.open(partition, context)
    }

    fn statistics_from_inputs(&self, _inputs: &[Arc<Statistics>], args: &StatisticsArgs) -> Result<Arc<Statistics>> {
        self.source.partition_statistics(args.partition())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{AsArray, Int64Array};
    use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::common::hash_utils::create_hashes;
    use datafusion::physical_plan::displayable;
    use datafusion::physical_plan::repartition::REPARTITION_RANDOM_STATE;
    use datafusion::prelude::SessionConfig;

    const PARTITIONS: usize = 3;

    /// A session of three partitions whose `src` holds (k, v) rows dealt to four partitions
    /// with no regard to k, and whose aggregates may use a hash on a subset of their keys
    /// (as a job's session, `jobs::tables::tuned`).
    fn session() -> SessionContext {
        let mut config = SessionConfig::new().with_target_partitions(PARTITIONS);
        config.options_mut().optimizer.subset_repartition_threshold = PARTITIONS;
        let ctx = SessionContext::new_with_config(config);
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Int64, false),
        ]));
        let parts = (0..4)
            .map(|p| {
                let rows = 0..500i64;
                let k = Int64Array::from_iter_values(rows.clone().map(|r| (r * 7 + p) % 37));
                let v = Int64Array::from_iter_values(rows.map(|r| r + 1000 * p));
                vec![RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(k), Arc::new(v)]).unwrap()]
            })
            .collect();
        ctx.register_table("src", Arc::new(MemTable::try_new(schema, parts).unwrap())).unwrap();
        ctx
    }

    async fn create_sql(ctx: &SessionContext, sql: &str) -> Result<()> {
        match ctx.state().create_logical_plan(sql).await? {
            LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(t)) => create(ctx, t).await,
            other => panic!("not a CREATE TABLE … AS: {other}"),
        }
    }

    /// A query's plan (text) and its rows, sorted as text.
    async fn answer(ctx: &SessionContext, sql: &str) -> (String, Vec<String>) {
        let df = ctx.sql(sql).await.unwrap();
        let plan = df.clone().create_physical_plan().await.unwrap();
        let shown = displayable(plan.as_ref()).indent(true).to_string();
        let batches = df.collect().await.unwrap();
        let text = pretty_format_batches(&batches).unwrap().to_string();
        // The lines of values: the first line of text between bars is the header.
        let mut rows: Vec<String> = text.lines().filter(|l| l.starts_with("| ")).skip(1).map(str::to_string).collect();
        rows.sort();
        (shown, rows)
    }

    const GROUPED: &str = "CREATE OR REPLACE TABLE t AS SELECT k, count(*) AS c, sum(v) AS s FROM src GROUP BY k";
    /// Grouped by the table's hash column and another: the job's shape (`fd_days` over
    /// `fd_pieces`).
    const REGROUPED: &str = "SELECT k, c, sum(s) AS s, count(*) AS n FROM t GROUP BY k, c";
    /// The same answer from `src` itself.
    const DIRECT: &str =
        "SELECT k, c, sum(s) AS s, count(*) AS n FROM (SELECT k, count(*) AS c, sum(v) AS s FROM src GROUP BY k) GROUP BY k, c";

    /// The table of an aggregate declares the aggregate's hash, and that declaration is
    /// true: each row sits in the partition DataFusion's repartitioning would deal it to.
    /// An aggregate over the table then runs in one step per partition, with the rows of
    /// the same query over the source.
    #[tokio::test]
    async fn a_table_keeps_its_plans_hash_and_its_rows_are_where_the_hash_puts_them() {
        let ctx = session();
        create_sql(&ctx, GROUPED).await.unwrap();
        let provider = ctx.table_provider("t").await.unwrap();
        let table = provider.downcast_ref::<HashedTable>().expect("a hashed table");
        assert_eq!(table.columns, vec![0], "hashed on k");
        assert_eq!(table.mem.batches.len(), PARTITIONS);
        let mut rows = 0;
        for (i, partition) in table.mem.batches.iter().enumerate() {
            for batch in partition.read().await.iter() {
                let mut hashes = vec![0u64; batch.num_rows()];
                create_hashes(&[Arc::clone(batch.column(0))], REPARTITION_RANDOM_STATE.random_state(), &mut hashes)
                    .unwrap();
                for (h, k) in hashes.iter().zip(batch.column(0).as_primitive::<Int64Type>().values()) {
                    assert_eq!((h % PARTITIONS as u64) as usize, i, "k = {k} is in partition {i}");
                }
                rows += batch.num_rows();
            }
        }
        assert_eq!(rows, 37, "one row per k");

        let (plan, got) = answer(&ctx, REGROUPED).await;
        assert!(plan.contains("HashedMemoryExec"), "{plan}");
        assert!(plan.contains("SinglePartitioned") && !plan.contains("RepartitionExec"), "{plan}");
        let (_, want) = answer(&ctx, DIRECT).await;
        assert_eq!(got, want);
    }

    /// A scan that leaves out a hashed column declares nothing; a plan whose rows are not
    /// hashed makes DataFusion's own table.
    #[tokio::test]
    async fn no_hash_is_declared_where_it_could_not_be_named() {
        let ctx = session();
        create_sql(&ctx, GROUPED).await.unwrap();
        let (plan, got) = answer(&ctx, "SELECT c, count(*) AS n FROM t GROUP BY c").await;
        assert!(!plan.contains("HashedMemoryExec") && plan.contains("RepartitionExec"), "{plan}");
        assert_eq!(
            got.iter().map(|r| r.split('|').nth(2).unwrap().trim().parse::<usize>().unwrap()).sum::<usize>(),
            37
        );

        create_sql(&ctx, "CREATE OR REPLACE TABLE u AS SELECT k, v FROM src").await.unwrap();
        let provider = ctx.table_provider("u").await.unwrap();
        assert!(provider.downcast_ref::<MemTable>().is_some(), "rows dealt with no hash: a plain table");
    }

    /// Rows hashed on a column of one value all sit in one partition: the table declares
    /// nothing, so an aggregate on that column and more shuffles them over every core.
    /// Hashed on a column of many values, the same statement's table declares its hash.
    #[tokio::test]
    async fn rows_crowded_into_one_partition_declare_nothing() {
        let ctx = session();
        let windowed = |by: &str| {
            format!(
                "CREATE OR REPLACE TABLE w AS SELECT g, k, v, row_number() OVER (PARTITION BY {by} ORDER BY k, v) AS r \
                 FROM (SELECT k % 1 AS g, k, v FROM src)"
            )
        };
        create_sql(&ctx, &windowed("g")).await.unwrap();
        let provider = ctx.table_provider("w").await.unwrap();
        let plain = provider.downcast_ref::<MemTable>().expect("a plain table");
        let mut rows = Vec::new();
        for p in &plain.batches {
            rows.push(p.read().await.iter().map(RecordBatch::num_rows).sum::<usize>());
        }
        assert_eq!(rows.iter().max(), Some(&2000), "every row in one partition: {rows:?}");

        create_sql(&ctx, &windowed("k")).await.unwrap();
        let provider = ctx.table_provider("w").await.unwrap();
        assert!(provider.downcast_ref::<HashedTable>().is_some(), "hashed on k, 37 values");
    }

    #[test]
    fn balance_allows_half_again_a_fair_share() {
        assert!(balanced(&[50, 50]) && balanced(&[75, 25]) && balanced(&[0, 0]) && balanced(&[]));
        assert!(!balanced(&[76, 24]) && !balanced(&[0, 10, 0]));
        assert!(balanced(&[50, 10, 40]) && !balanced(&[51, 9, 40]));
    }

    /// After a write the rows may no longer follow the hash (an inserted row lands in any
    /// partition), so the table stops declaring it and each group still comes out once.
    #[tokio::test]
    async fn a_write_ends_the_declaration() {
        let ctx = session();
        create_sql(&ctx, GROUPED).await.unwrap();
        let extra: Vec<String> = (0..37).map(|k| format!("({k}, 1, 5)")).collect();
        ctx.sql(&format!("INSERT INTO t VALUES {}", extra.join(", "))).await.unwrap().collect().await.unwrap();
        let (plan, got) = answer(&ctx, "SELECT k, sum(c) AS c, count(*) AS n FROM t GROUP BY k").await;
        assert_eq!(got.len(), 37, "each k once:\n{}\n{plan}", got.join("\n"));
        assert!(got.iter().all(|r| r.split('|').nth(3).unwrap().trim() == "2"), "{}", got.join("\n"));
        assert!(!plan.contains("HashedMemoryExec"), "{plan}");
    }

    /// What this module does not make tables for is DataFusion's, with its rules: an
    /// existing table is an error without `OR REPLACE`, and kept with `IF NOT EXISTS`.
    #[tokio::test]
    async fn other_create_statements_keep_datafusions_rules() {
        let ctx = session();
        create_sql(&ctx, GROUPED).await.unwrap();
        let err = create_sql(&ctx, "CREATE TABLE t AS SELECT 1 AS one").await.unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        create_sql(&ctx, "CREATE TABLE IF NOT EXISTS t AS SELECT 1 AS one").await.unwrap();
        assert!(ctx.table_provider("t").await.unwrap().downcast_ref::<HashedTable>().is_some(), "kept");
        create_sql(&ctx, "CREATE OR REPLACE TABLE t AS SELECT 1 AS one").await.unwrap();
        let (_, rows) = answer(&ctx, "SELECT * FROM t").await;
        assert_eq!(rows, vec!["| 1   |"]);
    }
}
