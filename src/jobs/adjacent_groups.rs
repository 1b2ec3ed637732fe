//! Runs of equal group keys folded before a hash aggregate: a physical operator and the
//! job sessions' optimizer rule that places it.
//!
//! A lake file's rows come in their declared order (`forecasts`: station, run, valid
//! time), so the rows of one group of `forecast_daily`'s first aggregate (model, run date,
//! station, run, civil and standard day) arrive one after another, about nine at a time.
//! DataFusion's hash aggregate still hashes, looks up and updates every row: it does not
//! know the order (declaring it made DataFusion keep it through repartitions and sorted
//! aggregates, which cost more than they saved: benches/README.md, "Performance (issue
//! 33)"). [`AdjacentGroupsExec`] compares each row's keys with the row before it (one
//! vectorised pass over the key columns) and emits one row per run of equal keys, carrying
//! the run's partial aggregate states; the aggregate above it then merges states (`Single`
//! becomes `Final`, `SinglePartitioned` `FinalPartitioned`) instead of raw rows: a tenth of
//! the rows for that lake. A two-step aggregate's `Partial` step is left as it is (`fold`
//! says why).
//!
//! Exact for the functions it folds: `count` (rows, or non-null values), `min` and `max`
//! of primitive values, whose states are a count and a value and merge by sum, min and
//! max; the same run split across two batches, or two runs of one group apart, are merged
//! by the aggregate above as any two partial states are. A run's `min`/`max` is the one
//! DataFusion's accumulators would hold after its rows (of equal values such as 0 and −0,
//! the first); a batch with a NaN among their values, which those accumulators treat in an
//! order-dependent way, is handed on a row at a time. An aggregate with any other function,
//! a `DISTINCT`, a filter or grouping sets is left as it is, and so is one whose rows the
//! fold would split or order otherwise (its parent may need them as they are). Where runs
//! are short (an input in no useful order) the operator stops looking for them after a few
//! batches and hands each row on as its own state, which costs little beside the aggregate.
//!
//! Not on a cluster: Ballista's scheduler plans the physical operators itself.

use std::fmt;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use datafusion::arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, Int64Array, PrimitiveArray, RecordBatch, UInt32Array,
};
use datafusion::arrow::compute::{partition, take};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::projection::ProjectionMapping;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
};
use futures::{Stream, StreamExt};

/// The rule: over every aggregate it can fold (module docs), an [`AdjacentGroupsExec`] and
/// the aggregate in the mode that merges states. Runs last, after DataFusion's own rules
/// have chosen each aggregate's mode and partitioning, which it keeps.
#[derive(Debug, Default)]
pub struct AdjacentGroups;

impl PhysicalOptimizerRule for AdjacentGroups {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let folded = node.downcast_ref::<AggregateExec>().map(fold).transpose()?.flatten();
            Ok(match folded {
                Some(plan) => Transformed::yes(plan),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "adjacent_groups"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// How one aggregate function's state is made from a run's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fold {
    Count,
    Min,
    Max,
}

impl Fold {
    /// The fold of `f`, if it is one this operator computes exactly.
    fn of(f: &AggregateFunctionExpr, input: &SchemaRef) -> Result<Option<Fold>> {
        let args = f.expressions();
        if f.is_distinct() || !f.order_bys().is_empty() || args.len() != 1 {
            return Ok(None);
        }
        let fold = match f.fun().name() {
            "count" => return Ok(Some(Fold::Count)),
            "min" => Fold::Min,
            "max" => Fold::Max,
            _ => return Ok(None),
        };
        Ok(is_primitive(&args[0].data_type(input)?).then_some(fold))
    }
}

/// The primitive types `min`/`max` states are folded for.
fn is_primitive(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float32
            | Float64
            | Date32
            | Date64
            | Timestamp(_, _)
            | Time32(_)
            | Time64(_)
            | Duration(_)
    )
}

/// `agg` over an [`AdjacentGroupsExec`] of its input, merging the states, when it can be.
fn fold(agg: &AggregateExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let merging = match agg.mode() {
        AggregateMode::Single => AggregateMode::Final,
        AggregateMode::SinglePartitioned => AggregateMode::FinalPartitioned,
        // Not `Partial`: its merging mode, `PartialReduce`, never stops aggregating when the
        // groups are as many as the rows, as `Partial` does (handing the rows on to the
        // final aggregate), so an input without runs would be aggregated twice.
        _ => return Ok(None),
    };
    let group = agg.group_expr();
    if !group.is_single() || group.expr().is_empty() || agg.limit_options().is_some() {
        return Ok(None);
    }
    if agg.filter_expr().iter().any(Option::is_some) {
        return Ok(None);
    }
    let Some(keys) =
        group.expr().iter().map(|(e, _)| e.downcast_ref::<Column>().map(Column::index)).collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let input = agg.input();
    let schema = input.schema();
    let mut folds = Vec::with_capacity(agg.aggr_expr().len());
    for f in agg.aggr_expr() {
        match Fold::of(f, &schema)? {
            Some(fold) => folds.push((fold, Arc::clone(&f.expressions()[0]))),
            None => return Ok(None),
        }
    }
    // The states are what a partial aggregate of the same groups and functions emits: the
    // keys, then one state column per function (a count; a value).
    let partial = AggregateExec::try_new(
        AggregateMode::Partial,
        group.clone(),
        agg.aggr_expr().to_vec(),
        agg.filter_expr().to_vec(),
        Arc::clone(input),
        Arc::clone(&schema),
    )?;
    let states = partial.schema();
    if states.fields().len() != keys.len() + folds.len() {
        return Ok(None);
    }
    let adjacent = Arc::new(AdjacentGroupsExec::new(Arc::clone(input), keys, folds, states)?);
    let merged = AggregateExec::try_new(
        merging,
        group.as_final(),
        agg.aggr_expr().to_vec(),
        agg.filter_expr().to_vec(),
        adjacent,
        agg.input_schema(),
    )?;
    // Its parent may rely on how the aggregate's rows are split and ordered (an
    // `InterleaveExec` over a UNION ALL needs its children hashed alike): fold only where
    // both stay as they were.
    let kept = same_split(merged.properties().output_partitioning(), agg.properties().output_partitioning())
        && merged.properties().output_ordering() == agg.properties().output_ordering();
    Ok(kept.then(|| Arc::new(merged) as Arc<dyn ExecutionPlan>))
}

/// Whether two partitionings split rows alike (DataFusion's `==` holds no two unknown
/// ones equal, even of the same count).
fn same_split(a: &Partitioning, b: &Partitioning) -> bool {
    match (a, b) {
        (Partitioning::UnknownPartitioning(n), Partitioning::UnknownPartitioning(m)) => n == m,
        _ => a == b,
    }
}

/// Emits, per run of consecutive input rows with equal keys, the keys and each function's
/// state over the run (module docs).
#[derive(Debug)]
pub struct AdjacentGroupsExec {
    input: Arc<dyn ExecutionPlan>,
    /// The key columns' indices in the input.
    keys: Vec<usize>,
    /// Each function's fold and argument.
    folds: Vec<(Fold, Arc<dyn PhysicalExpr>)>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl AdjacentGroupsExec {
    fn new(
        input: Arc<dyn ExecutionPlan>,
        keys: Vec<usize>,
        folds: Vec<(Fold, Arc<dyn PhysicalExpr>)>,
        states: SchemaRef,
    ) -> Result<Self> {
        // Rows stay in their input partition, so the input's partitioning holds, named as
        // DataFusion names it through a projection of the key columns onto the states'
        // leading ones: as an aggregate over the same input names its own.
        let input_schema = input.schema();
        let mapping = ProjectionMapping::try_new(
            keys.iter().zip(states.fields()).map(|(&k, state)| {
                (Arc::new(Column::new(input_schema.field(k).name(), k)) as Arc<dyn PhysicalExpr>, state.name().clone())
            }),
            &input_schema,
        )?;
        let partitioning = input.output_partitioning().project(&mapping, input.equivalence_properties());
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(states),
            partitioning,
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(AdjacentGroupsExec { input, keys, folds, properties, metrics: ExecutionPlanMetricsSet::new() })
    }
}

impl DisplayAs for AdjacentGroupsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let folds: Vec<String> = self.folds.iter().map(|(k, e)| format!("{k:?}({e})")).collect();
        write!(f, "AdjacentGroupsExec: keys={:?}, states=[{}]", self.keys, folds.join(", "))
    }
}

impl ExecutionPlan for AdjacentGroupsExec {
    fn name(&self) -> &'static str {
        "AdjacentGroupsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for (_, e) in &self.folds {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(format!(
                "AdjacentGroupsExec has one input, given {}",
                children.len()
            )));
        }
        Ok(Arc::new(AdjacentGroupsExec::new(
            children.swap_remove(0),
            self.keys.clone(),
            self.folds.clone(),
            self.schema(),
        )?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        Ok(Box::pin(AdjacentStream {
            input: self.input.execute(partition, context)?,
            folder: Folder {
                keys: self.keys.clone(),
                folds: self.folds.clone(),
                schema: self.schema(),
                seen: Seen::default(),
            },
            metrics: BaselineMetrics::new(&self.metrics, partition),
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// Batches looked at before deciding whether runs are worth finding.
const PROBE_BATCHES: usize = 4;
/// Input rows per run below which finding runs is not worth it.
const MIN_RUN: usize = 2;

/// Rows and runs seen so far, to stop looking for runs in an input without them.
#[derive(Debug, Default)]
struct Seen {
    batches: usize,
    rows: usize,
    runs: usize,
}

impl Seen {
    fn worth_it(&self) -> bool {
        self.batches < PROBE_BATCHES || self.rows >= MIN_RUN * self.runs
    }
}

/// The fold of one partition's batches.
struct Folder {
    keys: Vec<usize>,
    folds: Vec<(Fold, Arc<dyn PhysicalExpr>)>,
    schema: SchemaRef,
    seen: Seen,
}

impl Folder {
    /// One state row per run of `batch` (or per row, once runs proved short).
    fn fold(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let n = batch.num_rows();
        let keys: Vec<ArrayRef> = self.keys.iter().map(|&i| Arc::clone(batch.column(i))).collect();
        let args: Vec<ColumnarValue> = self.folds.iter().map(|(_, e)| e.evaluate(batch)).collect::<Result<_>>()?;
        let runs: Option<Vec<Range<usize>>> = match self.seen.worth_it() && n > 0 && !has_nan(&args) {
            true => Some(partition(&keys)?.ranges()),
            false => None,
        };
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        match &runs {
            Some(runs) => {
                self.seen.batches += 1;
                self.seen.rows += n;
                self.seen.runs += runs.len();
                let firsts = UInt32Array::from_iter_values(runs.iter().map(|r| r.start as u32));
                for k in &keys {
                    columns.push(take(k.as_ref(), &firsts, None)?);
                }
            }
            None => columns.extend(keys),
        }
        for ((fold, _), arg) in self.folds.iter().zip(args) {
            columns.push(state(*fold, arg, n, runs.as_deref())?);
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

/// Whether a float argument holds a NaN: DataFusion's `min`/`max` let a NaN replace the
/// value held and any value replace a NaN, so their answer depends on the order of every
/// row and only a state per row keeps it.
fn has_nan(args: &[ColumnarValue]) -> bool {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::{Float32Type, Float64Type};
    args.iter().any(|a| match a {
        ColumnarValue::Array(a) => match a.data_type() {
            DataType::Float64 => a.as_primitive::<Float64Type>().values().iter().any(|v| v.is_nan()),
            DataType::Float32 => a.as_primitive::<Float32Type>().values().iter().any(|v| v.is_nan()),
            _ => false,
        },
        ColumnarValue::Scalar(s) => match s {
            datafusion::common::ScalarValue::Float64(Some(v)) => v.is_nan(),
            datafusion::common::ScalarValue::Float32(Some(v)) => v.is_nan(),
            _ => false,
        },
    })
}

/// One function's state per run (or per row when `runs` is `None`) of an `n`-row batch.
fn state(fold: Fold, arg: ColumnarValue, n: usize, runs: Option<&[Range<usize>]>) -> Result<ArrayRef> {
    let array = match arg {
        ColumnarValue::Array(a) => a,
        // A constant: `count(*)` counts rows; a constant min or max is itself.
        ColumnarValue::Scalar(s) => match fold {
            Fold::Count => {
                let per = |len: usize| if s.is_null() { 0 } else { len as i64 };
                return Ok(Arc::new(match runs {
                    Some(runs) => Int64Array::from_iter_values(runs.iter().map(|r| per(r.len()))),
                    None => Int64Array::from_iter_values((0..n).map(|_| per(1))),
                }));
            }
            Fold::Min | Fold::Max => s.to_array_of_size(runs.map_or(n, <[_]>::len))?,
        },
    };
    if fold == Fold::Count && array.null_count() == 0 {
        return Ok(Arc::new(match runs {
            Some(runs) => Int64Array::from_iter_values(runs.iter().map(|r| r.len() as i64)),
            None => Int64Array::from_iter_values((0..n).map(|_| 1)),
        }));
    }
    if fold == Fold::Count {
        let valid = |i: usize| i64::from(array.is_valid(i));
        return Ok(Arc::new(match runs {
            Some(runs) => Int64Array::from_iter_values(runs.iter().map(|r| r.clone().map(valid).sum::<i64>())),
            None => Int64Array::from_iter_values((0..n).map(valid)),
        }));
    }
    let Some(runs) = runs else {
        return Ok(array);
    };
    use datafusion::arrow::datatypes::*;
    let mismatch = || DataFusionError::Internal(format!("AdjacentGroupsExec: no fold of {}", array.data_type()));
    macro_rules! extreme {
        ($t:ty) => {
            extreme::<$t>(array.as_any().downcast_ref::<PrimitiveArray<$t>>().ok_or_else(mismatch)?, runs, fold)
        };
    }
    Ok(match array.data_type() {
        DataType::Int8 => extreme!(Int8Type),
        DataType::Int16 => extreme!(Int16Type),
        DataType::Int32 => extreme!(Int32Type),
        DataType::Int64 => extreme!(Int64Type),
        DataType::UInt8 => extreme!(UInt8Type),
        DataType::UInt16 => extreme!(UInt16Type),
        DataType::UInt32 => extreme!(UInt32Type),
        DataType::UInt64 => extreme!(UInt64Type),
        DataType::Float32 => extreme!(Float32Type),
        DataType::Float64 => extreme!(Float64Type),
        DataType::Date32 => extreme!(Date32Type),
        DataType::Date64 => extreme!(Date64Type),
        DataType::Timestamp(TimeUnit::Second, _) => extreme!(TimestampSecondType),
        DataType::Timestamp(TimeUnit::Millisecond, _) => extreme!(TimestampMillisecondType),
        DataType::Timestamp(TimeUnit::Microsecond, _) => extreme!(TimestampMicrosecondType),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => extreme!(TimestampNanosecondType),
        DataType::Time32(TimeUnit::Second) => extreme!(Time32SecondType),
        DataType::Time32(TimeUnit::Millisecond) => extreme!(Time32MillisecondType),
        DataType::Time64(TimeUnit::Microsecond) => extreme!(Time64MicrosecondType),
        DataType::Time64(TimeUnit::Nanosecond) => extreme!(Time64NanosecondType),
        DataType::Duration(TimeUnit::Second) => extreme!(DurationSecondType),
        DataType::Duration(TimeUnit::Millisecond) => extreme!(DurationMillisecondType),
        DataType::Duration(TimeUnit::Microsecond) => extreme!(DurationMicrosecondType),
        DataType::Duration(TimeUnit::Nanosecond) => extreme!(DurationNanosecondType),
        _ => return Err(mismatch()),
    })
}

/// The least (`Fold::Min`) or greatest value of each run, NULL for a run of NULLs, as
/// DataFusion's `min`/`max` accumulators choose it: a value replaces the one held only when
/// strictly less (greater), so of equal ones (0 and −0) the first stays. (NaN, which they let
/// replace anything, never reaches here: [`Folder::fold`] hands such batches on row by row.)
fn extreme<T: ArrowPrimitiveType>(values: &PrimitiveArray<T>, runs: &[Range<usize>], fold: Fold) -> ArrayRef {
    let better = |a: T::Native, b: T::Native| match fold {
        Fold::Min => a < b,
        _ => a > b,
    };
    let all = values.values();
    let out: PrimitiveArray<T> = match values.nulls().filter(|n| n.null_count() > 0) {
        // Runs are never empty.
        None => PrimitiveArray::new(
            runs.iter()
                .map(|r| {
                    all[r.clone()].iter().copied().reduce(|b, v| if better(v, b) { v } else { b }).unwrap_or_default()
                })
                .collect(),
            None,
        ),
        Some(nulls) => runs
            .iter()
            .map(|r| {
                r.clone().filter(|&i| nulls.is_valid(i)).map(|i| all[i]).reduce(|b, v| if better(v, b) { v } else { b })
            })
            .collect(),
    };
    Arc::new(out.with_data_type(values.data_type().clone()))
}

/// The stream of [`AdjacentGroupsExec`]'s partition.
struct AdjacentStream {
    input: SendableRecordBatchStream,
    folder: Folder,
    metrics: BaselineMetrics,
}

impl Stream for AdjacentStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.input.poll_next_unpin(cx);
        let this = &mut *self;
        let folded = match polled {
            Poll::Ready(Some(Ok(batch))) => {
                let _timer = this.metrics.elapsed_compute().timer();
                Poll::Ready(Some(this.folder.fold(&batch)))
            }
            other => other,
        };
        this.metrics.record_poll(folded)
    }
}

impl RecordBatchStream for AdjacentStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.folder.schema)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{AsArray, Float64Array, StringArray, TimestampMicrosecondArray};
    use datafusion::arrow::datatypes::{Field, Float64Type, Schema, TimeUnit};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::datasource::MemTable;
    use datafusion::execution::SessionStateBuilder;
    use datafusion::physical_plan::displayable;
    use datafusion::prelude::{SessionConfig, SessionContext};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// Rows in runs of 1 to 12 equal keys (`station`, `run`), a group's runs at times apart,
    /// with NULL keys and values, both zeros and a rare NaN among the floats, a time zone on
    /// the times; `shuffled` scatters the rows instead. Three partitions of uneven batches
    /// (runs cross batch ends), each station in one: DataFusion's own `min`/`max` of 0 and
    /// −0 or of a NaN depend on the order rows meet, so no group's rows come from two
    /// partitions, whose order would be the scheduler's.
    fn batches(seed: u64, shuffled: bool) -> (Arc<Schema>, Vec<Vec<RecordBatch>>) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("station", DataType::Utf8, true),
            Field::new("run", DataType::Int64, true),
            Field::new("valid", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
            Field::new("temp", DataType::Float64, true),
            Field::new("zero", DataType::Float64, true),
        ]));
        type Row = (Option<String>, Option<i64>, Option<i64>, Option<f64>, Option<f64>);
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut parts: Vec<Vec<Row>> = vec![Vec::new(); 3];
        for _ in 0..3000 {
            let number = rng.random_range(0..7);
            let station = (number < 6).then(|| format!("K{number:03}"));
            let run = (rng.random_range(0..20) > 0).then(|| rng.random_range(0..4i64));
            for _ in 0..rng.random_range(1..=12) {
                let valid = (rng.random_range(0..10) > 0).then(|| rng.random_range(0..1_000_000i64));
                let temp = match rng.random_range(0..50) {
                    0 => None,
                    _ => Some(f64::from(rng.random_range(-400..1000)) / 10.0),
                };
                // Both zeros, whose least and greatest is the first one met, and a rare NaN.
                let zero = match rng.random_range(0..2000) {
                    0 => Some(f64::NAN),
                    1..200 => None,
                    200..1100 => Some(-0.0),
                    _ => Some(0.0),
                };
                parts[number % 3].push((station.clone(), run, valid, temp, zero));
            }
        }
        let batches = parts
            .into_iter()
            .map(|mut rows| {
                if shuffled {
                    for i in (1..rows.len()).rev() {
                        rows.swap(i, rng.random_range(0..=i));
                    }
                }
                let mut out = Vec::new();
                let mut at = 0;
                while at < rows.len() {
                    let chunk = &rows[at..(at + rng.random_range(1..3000)).min(rows.len())];
                    at += chunk.len();
                    let valid = TimestampMicrosecondArray::from_iter(chunk.iter().map(|r| r.2)).with_timezone("UTC");
                    out.push(
                        RecordBatch::try_new(
                            Arc::clone(&schema),
                            vec![
                                Arc::new(StringArray::from_iter(chunk.iter().map(|r| r.0.clone()))),
                                Arc::new(Int64Array::from_iter(chunk.iter().map(|r| r.1))),
                                Arc::new(valid),
                                Arc::new(Float64Array::from_iter(chunk.iter().map(|r| r.3))),
                                Arc::new(Float64Array::from_iter(chunk.iter().map(|r| r.4))),
                            ],
                        )
                        .unwrap(),
                    );
                }
                out
            })
            .collect();
        (schema, batches)
    }

    fn session(folding: bool, partitions: usize) -> SessionContext {
        let config = SessionConfig::new().with_target_partitions(partitions).with_batch_size(1024);
        let mut state = SessionStateBuilder::new().with_config(config).with_default_features();
        if folding {
            state = state.with_physical_optimizer_rule(Arc::new(AdjacentGroups));
        }
        SessionContext::new_with_state(state.build())
    }

    /// The query's rows (in one order) and its physical plan, in a session with the rule or without.
    async fn answer(folding: bool, partitions: usize, shuffled: bool, sql: &str) -> (String, String) {
        let ctx = session(folding, partitions);
        let (schema, parts) = batches(7, shuffled);
        // One partition in: the aggregate runs in one step (`Single`).
        let parts = if partitions == 1 { vec![parts.concat()] } else { parts };
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, parts).unwrap())).unwrap();
        let df = ctx.sql(sql).await.unwrap();
        let plan = df.clone().create_physical_plan().await.unwrap();
        let shown = displayable(plan.as_ref()).indent(true).to_string();
        let rows = pretty_format_batches(&df.collect().await.unwrap()).unwrap().to_string();
        (rows, shown)
    }

    const FOLDABLE: &str = "SELECT station, run, count(*) AS n, count(valid) AS n_valid, min(valid), max(valid), \
        min(temp), max(temp), max(run), min(zero), max(zero) FROM t GROUP BY station, run ORDER BY station, run";

    /// `count(DISTINCT)`, which DataFusion plans as a grouping with no function under a
    /// count: both fold.
    const DISTINCT: &str = "SELECT station, count(DISTINCT run) AS runs FROM t GROUP BY station ORDER BY station";

    /// An aggregate in one step over one partition (`Single`), over rows in runs and
    /// scattered: the same rows as DataFusion's own, and the operator in the plan. Over
    /// several partitions DataFusion aggregates in two steps, whose `Partial` is left alone.
    #[tokio::test]
    async fn folded_aggregates_answer_as_datafusion_does() {
        let (_, parts) = batches(7, false);
        let nans: usize = parts
            .iter()
            .flatten()
            .map(|b| b.column(4).as_primitive::<Float64Type>().values().iter().filter(|v| v.is_nan()).count())
            .sum();
        assert!(nans > 0, "the data holds a NaN");
        for partitions in [1, 2, 4] {
            for shuffled in [false, true] {
                for sql in [FOLDABLE, DISTINCT] {
                    let (plain, plain_plan) = answer(false, partitions, shuffled, sql).await;
                    let (folded, plan) = answer(true, partitions, shuffled, sql).await;
                    assert!(!plain_plan.contains("AdjacentGroupsExec"));
                    let expected = partitions == 1;
                    assert_eq!(plan.contains("AdjacentGroupsExec"), expected, "{partitions} partitions:\n{plan}");
                    assert_eq!(folded, plain, "{partitions} partitions, shuffled {shuffled}:\n{plan}");
                }
                let (plain, _) = answer(false, partitions, shuffled, FOLDABLE).await;
                assert!(plain.lines().count() > 30, "every group:\n{plain}");
                assert!(
                    plain.contains("| -0.0") && plain.contains("| 0.0 "),
                    "both zeros come first somewhere:\n{plain}"
                );
            }
        }
    }

    /// `FOLDABLE`'s aggregate in one step per partition over its rows hashed by the keys
    /// into three partitions (`SinglePartitioned`, as the jobs' first aggregate over files
    /// dealt by partition value), in a session without the rule.
    async fn partitioned_single_step(ctx: &SessionContext, shuffled: bool) -> Arc<dyn ExecutionPlan> {
        use datafusion::physical_plan::repartition::RepartitionExec;
        let (schema, parts) = batches(5, shuffled);
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, vec![parts.concat()]).unwrap())).unwrap();
        let sql = FOLDABLE.split(" ORDER BY").next().unwrap();
        let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
        ctx.deregister_table("t").unwrap();
        let mut node = Arc::clone(&plan);
        let agg = loop {
            if node.downcast_ref::<AggregateExec>().is_some() {
                break node;
            }
            node = Arc::clone(node.children()[0]);
        };
        let agg = agg.downcast_ref::<AggregateExec>().unwrap();
        let keys = agg.group_expr().expr().iter().map(|(e, _)| Arc::clone(e)).collect();
        let input = Arc::new(RepartitionExec::try_new(Arc::clone(agg.input()), Partitioning::Hash(keys, 3)).unwrap());
        Arc::new(
            AggregateExec::try_new(
                AggregateMode::SinglePartitioned,
                agg.group_expr().clone(),
                agg.aggr_expr().to_vec(),
                agg.filter_expr().to_vec(),
                input,
                agg.input_schema(),
            )
            .unwrap(),
        )
    }

    /// A plan's rows, sorted as text.
    async fn sorted_rows(ctx: &SessionContext, plan: Arc<dyn ExecutionPlan>) -> String {
        let batches = datafusion::physical_plan::collect(plan, ctx.task_ctx()).await.unwrap();
        let text = pretty_format_batches(&batches).unwrap().to_string();
        let mut rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
        rows.sort();
        rows.join("\n")
    }

    /// One step per partition over an input partitioned by the keys (`SinglePartitioned`):
    /// the rule's plan gives DataFusion's rows.
    #[tokio::test]
    async fn a_partitioned_single_step_folds_too() {
        for shuffled in [false, true] {
            let mut answers = Vec::new();
            for folding in [false, true] {
                let ctx = session(false, 1);
                let partitioned = partitioned_single_step(&ctx, shuffled).await;
                let plan = match folding {
                    true => AdjacentGroups.optimize(partitioned, &ConfigOptions::default()).unwrap(),
                    false => partitioned,
                };
                let shown = displayable(plan.as_ref()).indent(true).to_string();
                assert_eq!(shown.contains("AdjacentGroupsExec"), folding, "{shown}");
                assert_eq!(shown.contains("FinalPartitioned"), folding, "{shown}");
                answers.push(sorted_rows(&ctx, plan).await);
            }
            assert!(answers[0].lines().count() > 30);
            assert_eq!(answers[1], answers[0], "shuffled {shuffled}");
        }
    }

    /// A UNION ALL of two such aggregates, as `forecast_daily`'s per-day rollup would be
    /// over a scan: DataFusion interleaves them, which needs both hashed alike. Folded, each
    /// keeps its partitioning (the rule used to leave it unknown, and rebuilding the
    /// interleave failed), and the rows are DataFusion's.
    #[tokio::test]
    async fn folding_keeps_an_aggregates_partitioning_for_its_parent() {
        use datafusion::physical_plan::union::InterleaveExec;
        let mut answers = Vec::new();
        for folding in [false, true] {
            let ctx = session(false, 1);
            let two = vec![partitioned_single_step(&ctx, false).await, partitioned_single_step(&ctx, true).await];
            let union: Arc<dyn ExecutionPlan> = Arc::new(InterleaveExec::try_new(two).unwrap());
            let plan = match folding {
                true => AdjacentGroups.optimize(union, &ConfigOptions::default()).unwrap(),
                false => union,
            };
            let shown = displayable(plan.as_ref()).indent(true).to_string();
            assert_eq!(shown.matches("AdjacentGroupsExec").count(), if folding { 2 } else { 0 }, "{shown}");
            assert!(matches!(plan.output_partitioning(), Partitioning::Hash(_, 3)), "{shown}");
            answers.push(sorted_rows(&ctx, plan).await);
        }
        assert!(answers[0].lines().count() > 60);
        assert_eq!(answers[1], answers[0]);
    }

    /// Anything else stays DataFusion's: sums (floating-point order), filters,
    /// grouping sets, a key that is an expression.
    #[tokio::test]
    async fn other_aggregates_are_left_alone() {
        for sql in [
            "SELECT station, sum(temp) FROM t GROUP BY station",
            "SELECT station, count(*) FILTER (WHERE run > 1) FROM t GROUP BY station",
            "SELECT station, run, max(temp) FROM t GROUP BY GROUPING SETS ((station), (station, run))",
            "SELECT upper(station), max(temp) FROM t GROUP BY upper(station)",
            "SELECT max(station) FROM t GROUP BY run",
        ] {
            let (_, plan) = answer(true, 2, false, sql).await;
            assert!(!plan.contains("AdjacentGroupsExec"), "{sql}:\n{plan}");
        }
    }

    /// Runs in order: a state row per run. Scattered rows: after the probe, a state row
    /// per row, with no search for runs.
    #[tokio::test]
    async fn runs_are_looked_for_only_where_they_are() {
        for (shuffled, folds) in [(false, true), (true, false)] {
            let (schema, parts) = batches(11, shuffled);
            let batch = datafusion::arrow::compute::concat_batches(&schema, parts.iter().flatten()).unwrap();
            let states = Arc::new(Schema::new(vec![
                Field::new("station", DataType::Utf8, true),
                Field::new("run", DataType::Int64, true),
                Field::new("n", DataType::Int64, false),
            ]));
            let count = Arc::new(Column::new("run", 1)) as Arc<dyn PhysicalExpr>;
            let mut folder =
                Folder { keys: vec![0, 1], folds: vec![(Fold::Count, count)], schema: states, seen: Seen::default() };
            let mut counted = 0;
            for i in 0..PROBE_BATCHES + 2 {
                let slice = batch.slice(i * 1000, 1000);
                let out = folder.fold(&slice).unwrap();
                let n = out.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
                counted += n.iter().flatten().sum::<i64>();
                let rows = out.num_rows();
                match (folds, i < PROBE_BATCHES) {
                    (true, _) => assert!(rows < 500, "batch {i}: {rows} runs of 1000 rows in order"),
                    (false, true) => assert!(rows > 900, "batch {i}: {rows} runs of 1000 scattered rows"),
                    (false, false) => assert_eq!(rows, 1000, "batch {i}: after the probe, a row each"),
                }
            }
            let seen = batch.slice(0, 1000 * (PROBE_BATCHES + 2));
            let non_null = (seen.num_rows() - seen.column(1).null_count()) as i64;
            assert_eq!(counted, non_null, "count(run) over the states is the rows' count");
            assert_eq!(folder.seen.worth_it(), folds, "{:?}", folder.seen);
        }
    }
}
