//! The physical operator behind `as_of` for tables whose rows are versions of each other
//! (`Versions::Latest`, `Versions::Document`): over an input sorted by the version key and
//! then newest first, it keeps the first row of each key (a correction chosen over the
//! report it corrects), or every row tied with that first row on one column (all the
//! periods of a station's newest forecast document).
//!
//! Why not SQL: `row_number() OVER (PARTITION BY key ORDER BY ...) = 1` computes the same,
//! but DataFusion's window operator keeps a state per partition of the window (one per
//! report: thousands for one station-day) and planning the window cost as much as the
//! whole plain query of a past day (benches/README.md, "As of"). A sorted input and one
//! comparison per row with the row before it is all the choice needs.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use datafusion::arrow::array::{ArrayRef, BooleanArray, BooleanBufferBuilder, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::row::{OwnedRow, RowConverter, Rows, SortField};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, LexOrdering, OrderingRequirements, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::{Stream, StreamExt};

/// Which rows of a key's sorted group [`NewestExec`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The first one.
    First,
    /// Every row equal to the first on the column at this index of the input.
    TiedOn(usize),
}

/// Keeps the newest version per key of an input sorted by `ordering` (module docs).
#[derive(Debug)]
pub struct NewestExec {
    input: Arc<dyn ExecutionPlan>,
    /// The input's sort: the key columns first, then the order choosing the newest.
    ordering: LexOrdering,
    /// Indices of the key columns in the input.
    key: Vec<usize>,
    keep: Keep,
    properties: Arc<PlanProperties>,
}

impl NewestExec {
    /// `input` must be one partition sorted by `ordering`, whose first `key.len()`
    /// expressions are the key columns.
    pub fn new(input: Arc<dyn ExecutionPlan>, ordering: LexOrdering, key: Vec<usize>, keep: Keep) -> Self {
        let eq = EquivalenceProperties::new_with_orderings(input.schema(), [ordering.clone()]);
        let properties = Arc::new(PlanProperties::new(
            eq,
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        NewestExec { input, ordering, key, keep, properties }
    }
}

impl DisplayAs for NewestExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "NewestExec: key={:?}, keep={:?}, order=[{}]", self.key, self.keep, self.ordering)
    }
}

impl ExecutionPlan for NewestExec {
    fn name(&self) -> &'static str {
        "NewestExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        vec![Some(OrderingRequirements::from(self.ordering.clone()))]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(format!("NewestExec has one input, given {}", children.len())));
        }
        Ok(Arc::new(NewestExec::new(children.swap_remove(0), self.ordering.clone(), self.key.clone(), self.keep)))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!("NewestExec has one partition, asked for {partition}")));
        }
        let schema = self.input.schema();
        Ok(Box::pin(NewestStream {
            input: self.input.execute(0, context)?,
            chooser: Chooser::new(&schema, self.key.clone(), self.keep)?,
            schema,
        }))
    }
}

/// The stream of [`NewestExec`].
struct NewestStream {
    input: SendableRecordBatchStream,
    schema: SchemaRef,
    chooser: Chooser,
}

/// The choice over consecutive batches of a sorted input: the last key seen (and its
/// group's first tie value) carry over from one batch to the next.
struct Chooser {
    key: Vec<usize>,
    keys: RowConverter,
    tie: Option<(usize, RowConverter)>,
    last_key: Option<OwnedRow>,
    first_tie: Option<OwnedRow>,
}

impl Chooser {
    fn new(schema: &SchemaRef, key: Vec<usize>, keep: Keep) -> Result<Self> {
        let field = |i: usize| SortField::new(schema.field(i).data_type().clone());
        let keys = RowConverter::new(key.iter().map(|&i| field(i)).collect())?;
        let tie = match keep {
            Keep::First => None,
            Keep::TiedOn(i) => Some((i, RowConverter::new(vec![field(i)])?)),
        };
        Ok(Chooser { key, keys, tie, last_key: None, first_tie: None })
    }

    /// The rows of `batch` kept.
    fn choose(&mut self, batch: &RecordBatch) -> Result<RecordBatch> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(batch.clone());
        }
        let columns: Vec<ArrayRef> = self.key.iter().map(|&i| Arc::clone(batch.column(i))).collect();
        let keys = self.keys.convert_columns(&columns)?;
        let ties: Option<Rows> = match &self.tie {
            Some((i, converter)) => Some(converter.convert_columns(&[Arc::clone(batch.column(*i))])?),
            None => None,
        };
        let mut keep = BooleanBufferBuilder::new(n);
        for row in 0..n {
            let starts = match row {
                0 => self.last_key.as_ref().is_none_or(|last| last.row() != keys.row(0)),
                _ => keys.row(row - 1) != keys.row(row),
            };
            let kept = match &ties {
                None => starts,
                Some(ties) => {
                    if starts {
                        self.first_tie = Some(ties.row(row).owned());
                    }
                    self.first_tie.as_ref().is_some_and(|first| first.row() == ties.row(row))
                }
            };
            keep.append(kept);
        }
        self.last_key = Some(keys.row(n - 1).owned());
        Ok(filter_record_batch(batch, &BooleanArray::new(keep.finish(), None))?)
    }
}

impl Stream for NewestStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.input.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(batch))) => Poll::Ready(Some(self.chooser.choose(&batch))),
            other => other,
        }
    }
}

impl RecordBatchStream for NewestStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    /// Rows (key, order value), already sorted by key then newest first.
    fn batch(schema: &SchemaRef, rows: &[(&str, i64)]) -> RecordBatch {
        let keys = StringArray::from(rows.iter().map(|r| r.0).collect::<Vec<_>>());
        let values = Int64Array::from(rows.iter().map(|r| r.1).collect::<Vec<_>>());
        RecordBatch::try_new(Arc::clone(schema), vec![Arc::new(keys), Arc::new(values)]).unwrap()
    }

    fn kept(chooser: &mut Chooser, schema: &SchemaRef, rows: &[(&str, i64)]) -> Vec<(String, i64)> {
        let out = chooser.choose(&batch(schema, rows)).unwrap();
        let keys = out.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        let values = out.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        (0..out.num_rows()).map(|i| (keys.value(i).to_string(), values.value(i))).collect()
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("k", DataType::Utf8, false), Field::new("v", DataType::Int64, false)]))
    }

    #[test]
    fn first_per_key_holds_across_batches() {
        let schema = schema();
        let mut c = Chooser::new(&schema, vec![0], Keep::First).unwrap();
        let own = |v: &[(&str, i64)]| v.iter().map(|(k, v)| (k.to_string(), *v)).collect::<Vec<_>>();
        assert_eq!(kept(&mut c, &schema, &[("a", 9), ("a", 3), ("b", 5)]), own(&[("a", 9), ("b", 5)]));
        // "b" continues from the batch before: its newest was kept there.
        assert_eq!(kept(&mut c, &schema, &[("b", 4), ("b", 1), ("c", 2)]), own(&[("c", 2)]));
        assert_eq!(kept(&mut c, &schema, &[]), own(&[]));
        assert_eq!(kept(&mut c, &schema, &[("c", 1), ("d", 7)]), own(&[("d", 7)]));
    }

    #[test]
    fn tied_rows_of_the_newest_document_are_all_kept() {
        let schema = schema();
        let mut c = Chooser::new(&schema, vec![0], Keep::TiedOn(1)).unwrap();
        let own = |v: &[(&str, i64)]| v.iter().map(|(k, v)| (k.to_string(), *v)).collect::<Vec<_>>();
        assert_eq!(kept(&mut c, &schema, &[("a", 9), ("a", 9), ("a", 8)]), own(&[("a", 9), ("a", 9)]));
        // The newest document of "b" spans two batches; its older one does not count.
        assert_eq!(kept(&mut c, &schema, &[("b", 5), ("b", 5)]), own(&[("b", 5), ("b", 5)]));
        assert_eq!(kept(&mut c, &schema, &[("b", 5), ("b", 4), ("c", 4)]), own(&[("b", 5), ("c", 4)]));
    }
}
