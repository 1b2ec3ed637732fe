//! How a scan's files are shared among its partitions.
//!
//! By default as DataFusion shares them: contiguous runs of about equal size. When the
//! session asks for it (`datafusion.optimizer.preserve_file_partitions` = N > 0, the option
//! DataFusion's own listing tables read) and the scan has at least N distinct partition
//! values, every file of one partition value goes to the partition that DataFusion's hash
//! repartitioning would send its rows to, and the scan declares `Hash(partition columns)`.
//! An aggregate grouped by the partition columns (and any others) then runs in one step per
//! partition: no shuffle of its partial groups and no final merge of them (job sessions:
//! [`crate::jobs::tables::tune`]).
//!
//! Why the repartitioning's own hash and not DataFusion's round-robin over the sorted
//! values: the optimizer takes two `Hash` partitionings of one count to be co-partitioned,
//! so a join of two scans whose groups were dealt round-robin over different sets of
//! values would pair the wrong partitions and lose rows (apache/datafusion#23436). Dealt by
//! the hash, a scan's partitions hold exactly what a `RepartitionExec` on the same columns
//! would have put in them, so the declaration is true for any plan.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::common::hash_utils::create_hashes;
use datafusion::common::ScalarValue;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::FileGroup;
use datafusion::error::Result;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{Partitioning, PhysicalExpr};
use datafusion::physical_plan::repartition::REPARTITION_RANDOM_STATE;

/// `files` shared among `partitions` groups by the hash of their partition values, with
/// the partitioning that declares it (over `partition_cols`' positions in `schema`), or
/// `None` when there are fewer than `min_values` distinct values (too few to keep the
/// partitions busy) or no partition columns.
pub fn by_partition_hash(
    files: &[PartitionedFile],
    schema: &Schema,
    partition_cols: &[Field],
    partitions: usize,
    min_values: usize,
) -> Result<Option<(Vec<FileGroup>, Partitioning)>> {
    if partition_cols.is_empty() || partitions == 0 || min_values == 0 {
        return Ok(None);
    }
    // The files by partition value, so each group reads one value's files one after
    // another; the distinct values in the same order.
    let mut ordered: Vec<&PartitionedFile> = files.iter().collect();
    ordered.sort_by(|a, b| a.partition_values.partial_cmp(&b.partition_values).unwrap_or(std::cmp::Ordering::Equal));
    let mut values: Vec<&[ScalarValue]> = ordered.iter().map(|f| f.partition_values.as_slice()).collect();
    values.dedup();
    if values.len() < min_values.max(2) {
        return Ok(None);
    }
    let Some(exprs) = partition_cols
        .iter()
        .map(|f| schema.index_of(f.name()).ok().map(|i| Arc::new(Column::new(f.name(), i)) as Arc<dyn PhysicalExpr>))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    // One array per partition column over the distinct values, hashed as a
    // RepartitionExec hashes a batch of them.
    let columns = (0..partition_cols.len())
        .map(|i| ScalarValue::iter_to_array(values.iter().map(|v| v[i].clone())))
        .collect::<Result<Vec<_>>>()?;
    let mut hashes = vec![0u64; values.len()];
    create_hashes(&columns, REPARTITION_RANDOM_STATE.random_state(), &mut hashes)?;
    let slot: HashMap<&[ScalarValue], usize> =
        values.iter().zip(&hashes).map(|(v, h)| (*v, (h % partitions as u64) as usize)).collect();
    let mut groups: Vec<Vec<PartitionedFile>> = vec![Vec::new(); partitions];
    for f in ordered {
        groups[slot[f.partition_values.as_slice()]].push(f.clone());
    }
    let groups = groups.into_iter().map(FileGroup::new).collect();
    Ok(Some((groups, Partitioning::Hash(exprs, partitions))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{AsArray, RecordBatch, StringArray};
    use datafusion::arrow::datatypes::DataType;
    use datafusion::datasource::memory::MemorySourceConfig;
    use datafusion::execution::TaskContext;
    use datafusion::physical_plan::repartition::RepartitionExec;
    use datafusion::physical_plan::{common::collect, ExecutionPlan};

    fn fields() -> Vec<Field> {
        vec![Field::new("model", DataType::Utf8, false), Field::new("run_date", DataType::Utf8, false)]
    }

    /// Two files per (model, run_date) value.
    fn files(values: &[(String, String)]) -> Vec<PartitionedFile> {
        values
            .iter()
            .flat_map(|(m, d)| {
                (0..2).map(move |i| {
                    PartitionedFile::new(format!("model={m}/run_date={d}/{i}.parquet"), 100)
                        .with_partition_values(vec![ScalarValue::from(m.as_str()), ScalarValue::from(d.as_str())])
                })
            })
            .collect()
    }

    fn values(models: usize, days: usize) -> Vec<(String, String)> {
        (0..models).flat_map(|m| (1..=days).map(move |d| (format!("model{m}"), format!("2026-11-{d:02}")))).collect()
    }

    /// Each value's files are in the partition a `RepartitionExec` hashing the same
    /// columns sends its rows to, for several partition counts: the declared `Hash` holds
    /// for any plan, joins included.
    #[tokio::test]
    async fn files_go_where_the_repartitioning_sends_their_rows() {
        let values = values(18, 7);
        let schema = Arc::new(Schema::new(fields()));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from_iter_values(values.iter().map(|v| v.0.as_str()))),
                Arc::new(StringArray::from_iter_values(values.iter().map(|v| v.1.as_str()))),
            ],
        )
        .unwrap();
        for partitions in [2, 3, 4, 7] {
            let (groups, partitioning) =
                by_partition_hash(&files(&values), &schema, &fields(), partitions, 1).unwrap().unwrap();
            assert_eq!(groups.len(), partitions);
            let Partitioning::Hash(exprs, n) = partitioning.clone() else { panic!("{partitioning}") };
            assert_eq!((exprs.len(), n), (2, partitions));
            let input = MemorySourceConfig::try_new_exec(&[vec![batch.clone()]], Arc::clone(&schema), None).unwrap();
            let shuffle = RepartitionExec::try_new(input, partitioning).unwrap();
            let mut dealt = 0;
            for (i, group) in groups.iter().enumerate() {
                let rows = collect(shuffle.execute(i, Arc::new(TaskContext::default())).unwrap()).await.unwrap();
                let mut shuffled: Vec<(String, String)> = rows
                    .iter()
                    .flat_map(|b| {
                        let (m, d) = (b.column(0).as_string::<i32>(), b.column(1).as_string::<i32>());
                        (0..b.num_rows()).map(move |r| (m.value(r).to_string(), d.value(r).to_string()))
                    })
                    .collect();
                let mut grouped: Vec<(String, String)> = group
                    .iter()
                    .map(|f| (f.partition_values[0].to_string(), f.partition_values[1].to_string()))
                    .collect();
                grouped.dedup();
                shuffled.sort();
                let mut sorted = grouped.clone();
                sorted.sort();
                assert_eq!(sorted, shuffled, "partition {i} of {partitions}");
                // Every file of a value is in its group, the group's values one after another.
                assert_eq!(group.len(), 2 * grouped.len());
                assert_eq!(grouped, sorted);
                dealt += grouped.len();
            }
            assert_eq!(dealt, values.len());
        }
    }

    /// Too few distinct values to keep every partition busy, or no partition columns:
    /// shared by size as before.
    #[test]
    fn few_values_are_not_dealt_by_hash() {
        let schema = Schema::new(fields());
        let few = files(&values(3, 2));
        assert!(by_partition_hash(&few, &schema, &fields(), 2, 8).unwrap().is_none());
        assert!(by_partition_hash(&few, &schema, &fields(), 2, 6).unwrap().is_some());
        assert!(by_partition_hash(&few, &schema, &fields(), 2, 0).unwrap().is_none());
        assert!(by_partition_hash(&few, &schema, &[], 2, 1).unwrap().is_none());
    }
}
