//! A run's output as Parquet: the rows split by output partition, checked against the
//! declaration and the chunk's key range, sorted by `sort_by` and encoded as one Snappy file
//! per partition (the lake's writer settings but the codec: [`writer_props`]), ready to stage.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{Duration, NaiveDate};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{cast, concat_batches, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Date32Type};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;
use rayon::prelude::*;

use super::error::JobError;
use super::spec::{JobSpec, OutputSpec};
use crate::lake::writer::FastMap;

/// One encoded output file.
pub struct OutputFile {
    /// Partition directory relative to the table (`model=GFS/run_date=2026-03-07`).
    pub dir: String,
    pub bytes: Bytes,
    pub rows: usize,
}

/// Splits the output by partition, checks it against the declaration and the chunk's key
/// range, sorts each partition and encodes it (on rayon).
pub async fn encode_output(
    spec: &JobSpec,
    batches: Vec<RecordBatch>,
    chunk: Option<(NaiveDate, NaiveDate)>,
) -> Result<Vec<OutputFile>, JobError> {
    let spec = spec.clone();
    tokio::task::spawn_blocking(move || encode_blocking(&spec, &batches, chunk)).await.map_err(JobError::Join)?
}

pub(crate) fn encode_blocking(
    spec: &JobSpec,
    batches: &[RecordBatch],
    chunk: Option<(NaiveDate, NaiveDate)>,
) -> Result<Vec<OutputFile>, JobError> {
    let bad = |reason: String| JobError::Output { job: spec.name.clone(), reason };
    let out = &spec.output;
    let schema = out.schema();
    let t = std::time::Instant::now();
    let Some(all) = output_batch(spec, batches)? else { return Ok(Vec::new()) };
    let t_out = t.elapsed();

    // Partition of every row: the columns' distinct values are checked (usable in a path,
    // key inside the range) and numbered once; rows are grouped by their numbers.
    let key = spec.incremental.as_ref().map(|i| i.key.as_str());
    let mut row_keys = vec![0u64; all.num_rows()];
    let mut names: Vec<Vec<String>> = Vec::new();
    for p in &out.partition_by {
        let col = all.column_by_name(p).ok_or_else(|| bad(format!("partition column {p} missing")))?;
        let (values, ids) = partition_values(col, p, &bad)?;
        if Some(p.as_str()) == key {
            for v in &values {
                let d = NaiveDate::parse_from_str(v, "%Y-%m-%d")
                    .map_err(|_| bad(format!("incremental key {p} = '{v}' is not a YYYY-MM-DD date")))?;
                if let Some((a, b)) = chunk {
                    if d < a || d > b {
                        return Err(bad(format!("a row has {p} = {d}, outside the run's range {a}..{b}")));
                    }
                }
            }
        }
        let radix = values.len() as u64;
        for (k, id) in row_keys.iter_mut().zip(ids) {
            *k = *k * radix + u64::from(id);
        }
        names.push(values);
    }
    let mut groups: FastMap<u64, Vec<u32>> = FastMap::default();
    for (row, k) in row_keys.iter().enumerate() {
        groups.entry(*k).or_default().push(row as u32);
    }
    let groups: Vec<(String, Vec<u32>)> = groups
        .into_values()
        .map(|rows| {
            let mut k = row_keys[rows[0] as usize];
            let mut parts = Vec::with_capacity(names.len());
            for (p, values) in out.partition_by.iter().zip(&names).rev() {
                let radix = values.len() as u64;
                parts.push(format!("{p}={}", values[(k % radix) as usize]));
                k /= radix;
            }
            parts.reverse();
            (parts.join("/"), rows)
        })
        .collect();

    let file_schema = out.file_schema();
    let keep: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| !out.partition_by.contains(f.name()))
        .map(|(i, _)| i)
        .collect();
    let props = writer_props(out);
    tracing::debug!(
        job = %spec.name,
        files = groups.len(),
        in_one_run = groups.iter().filter(|(_, rows)| is_run(rows)).count(),
        out_ms = t_out.as_millis() as u64,
        grouped_ms = t.elapsed().as_millis() as u64,
        "output partitions"
    );
    // The sort columns of every row, which each file's rows are ordered by.
    let sort_cols: Vec<usize> = out.sort_by.iter().filter_map(|c| all.schema().index_of(c).ok()).collect();
    let sort_keys = all.project(&sort_cols)?;
    // A file's buffer sized from its share of the rows (a slice's arrays are the whole's).
    let bytes_per_row = all.get_array_memory_size() / all.num_rows().max(1);
    groups
        .into_par_iter()
        .map(|(dir, rows)| {
            let rows = sorted_rows(&sort_keys, rows)?;
            let part = rows_of(&all, &rows)?.project(&keep)?;
            let part = RecordBatch::try_new(Arc::clone(&file_schema), part.columns().to_vec())?;
            let mut buf = Vec::with_capacity(part.num_rows() * bytes_per_row / 4 + 1024);
            let mut w = ArrowWriter::try_new(&mut buf, Arc::clone(&file_schema), Some(props.clone()))?;
            w.write(&part)?;
            w.close()?;
            Ok(OutputFile { dir, bytes: Bytes::from(buf), rows: part.num_rows() })
        })
        .collect()
}

/// The rows `rows` of `all`, in that order: a slice when they are one run (a job whose
/// query gives each partition's rows together and in order, as `bracket_scores`' helper
/// does), else gathered.
fn rows_of(all: &RecordBatch, rows: &[u32]) -> Result<RecordBatch, JobError> {
    match rows.first() {
        Some(&first) if is_run(rows) => Ok(all.slice(first as usize, rows.len())),
        _ => Ok(take_record_batch(all, &UInt32Array::from_iter_values(rows.iter().copied()))?),
    }
}

/// Whether row numbers count up one by one without gaps (a sorted partition's rows may
/// be any order of them: first and last alone do not tell).
fn is_run(rows: &[u32]) -> bool {
    !rows.is_empty() && rows.windows(2).all(|w| w[1] == w[0].wrapping_add(1))
}

/// The query's rows as one batch of the declared output schema (types and nullability
/// checked); `None` when there are no rows.
pub fn output_batch(spec: &JobSpec, batches: &[RecordBatch]) -> Result<Option<RecordBatch>, JobError> {
    let bad = |reason: String| JobError::Output { job: spec.name.clone(), reason };
    let schema = spec.output.schema();
    if batches.iter().all(|b| b.num_rows() == 0) {
        return Ok(None);
    }
    let all = concat_batches(&batches[0].schema(), batches)?;
    let mut cols = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let c = all.column_by_name(f.name()).ok_or_else(|| bad(format!("column {} missing", f.name())))?;
        if !f.is_nullable() && c.null_count() > 0 {
            return Err(bad(format!(
                "column {} is declared non-null but has {} null value(s)",
                f.name(),
                c.null_count()
            )));
        }
        cols.push(if c.data_type() == f.data_type() { Arc::clone(c) } else { cast(c, f.data_type())? });
    }
    Ok(Some(RecordBatch::try_new(schema, cols)?))
}

/// The distinct path strings of a partition column (strings as they are, dates as
/// YYYY-MM-DD) and each row's index into them.
fn partition_values(
    a: &ArrayRef,
    name: &str,
    bad: &dyn Fn(String) -> JobError,
) -> Result<(Vec<String>, Vec<u32>), JobError> {
    if a.null_count() > 0 {
        return Err(bad(format!("partition column {name} has null values")));
    }
    let mut values: Vec<String> = Vec::new();
    let mut ids = Vec::with_capacity(a.len());
    if a.data_type() == &DataType::Date32 {
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
        let mut seen: FastMap<i32, u32> = FastMap::default();
        for d in a.as_primitive::<Date32Type>().values().iter() {
            let id = *seen.entry(*d).or_insert_with(|| {
                values.push((epoch + Duration::days(i64::from(*d))).format("%Y-%m-%d").to_string());
                values.len() as u32 - 1
            });
            ids.push(id);
        }
    } else {
        let s = cast(a, &DataType::Utf8)?;
        let mut seen: FastMap<&str, u32> = FastMap::default();
        for v in s.as_string::<i32>().iter() {
            let v = v.unwrap_or_default();
            let id = match seen.get(v) {
                Some(id) => *id,
                None => {
                    values.push(v.to_string());
                    let id = values.len() as u32 - 1;
                    seen.insert(v, id);
                    id
                }
            };
            ids.push(id);
        }
    }
    let unusable = |v: &String| {
        v.is_empty() || v.contains(['/', '\\']) || v.chars().any(char::is_control) || v == "." || v == ".."
    };
    if let Some(v) = values.iter().find(|v| unusable(v)) {
        return Err(bad(format!("partition column {name} has value '{v}', unusable in a path")));
    }
    Ok((values, ids))
}

/// `rows` put in order of the columns of `keys` (the sort columns of every row, compared in
/// the row format: one byte comparison per pair of rows), unchanged when they are in order
/// already. Only the sort columns are gathered to compare: the file's columns are gathered
/// once, in the final order.
fn sorted_rows(keys: &RecordBatch, rows: Vec<u32>) -> Result<Vec<u32>, JobError> {
    if keys.num_columns() == 0 || rows.len() < 2 {
        return Ok(rows);
    }
    let arrays = rows_of(keys, &rows)?.columns().to_vec();
    let converter = RowConverter::new(arrays.iter().map(|a| SortField::new(a.data_type().clone())).collect())?;
    let bytes = converter.convert_columns(&arrays)?;
    if (1..bytes.num_rows()).all(|i| bytes.row(i - 1) <= bytes.row(i)) {
        return Ok(rows);
    }
    let mut idx: Vec<u32> = (0..bytes.num_rows() as u32).collect();
    idx.sort_unstable_by(|&a, &b| bytes.row(a as usize).cmp(&bytes.row(b as usize)));
    Ok(idx.into_iter().map(|i| rows[i as usize]).collect())
}

/// The lake's Parquet settings with the output's sort order, compressed with Snappy
/// rather than the lake's zstd: a job writes one small file per partition (forecast_daily:
/// 1,663 files of about 2,200 rows), and the Parquet writer starts a zstd context for every
/// column of every file, which cost about a second of forecast_daily's eight for 13 % less
/// size (benches/README.md, "Session 23"). Every reader of the lake reads Snappy.
fn writer_props(out: &OutputSpec) -> WriterProperties {
    crate::lake::writer::props_for(&out.file_schema(), &out.sort_by)
        .into_builder()
        .set_compression(Compression::SNAPPY)
        .build()
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Date32Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::Int64Type;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;
    use crate::jobs::spec::parse_spec;

    fn spec() -> JobSpec {
        let toml = r#"name = "t"
sql = "q.sql"
inputs = []
[output]
table = "t"
partition_by = ["d"]
sort_by = ["k"]
columns = [{ name = "d", type = "date" }, { name = "k", type = "string" }, { name = "v", type = "bigint" }]
"#;
        parse_spec("test", toml, &|_| Ok("SELECT 1".into())).unwrap()
    }

    fn batch(rows: &[(i32, &str, i64)]) -> RecordBatch {
        RecordBatch::try_new(
            spec().output.schema(),
            vec![
                Arc::new(Date32Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
            ],
        )
        .unwrap()
    }

    /// Each file's rows as (k, v), by partition directory.
    fn files(batches: &[RecordBatch]) -> Vec<(String, Vec<(String, i64)>)> {
        let mut out: Vec<_> = encode_blocking(&spec(), batches, None)
            .unwrap()
            .into_iter()
            .map(|f| {
                let mut rows = Vec::new();
                for b in ParquetRecordBatchReaderBuilder::try_new(f.bytes).unwrap().build().unwrap() {
                    let b = b.unwrap();
                    let (k, v) = (b.column(0).as_string::<i32>(), b.column(1).as_primitive::<Int64Type>());
                    rows.extend((0..b.num_rows()).map(|i| (k.value(i).to_string(), v.value(i))));
                }
                assert_eq!(rows.len(), f.rows);
                (f.dir, rows)
            })
            .collect();
        out.sort();
        out
    }

    /// A partition whose rows come in one run is written from a slice of them; the files are
    /// the same as when its rows are scattered among the others' and gathered, and sorted
    /// either way.
    #[test]
    fn a_partition_in_one_run_is_written_as_a_gathered_one() {
        let ordered = [(1, "a", 1), (1, "b", 2), (1, "c", 3), (2, "a", 4), (2, "b", 5), (3, "x", 6)];
        let scattered = [(2, "b", 5), (1, "c", 3), (3, "x", 6), (1, "a", 1), (2, "a", 4), (1, "b", 2)];
        // In one run but not sorted: still sorted by the writer.
        let unsorted_run = [(1, "c", 3), (1, "a", 1), (1, "b", 2), (2, "b", 5), (2, "a", 4), (3, "x", 6)];
        let expected = files(&[batch(&ordered)]);
        assert_eq!(expected.len(), 3);
        assert_eq!(expected[0].0, "d=1970-01-02");
        assert_eq!(expected[0].1, [("a".to_string(), 1), ("b".into(), 2), ("c".into(), 3)]);
        assert_eq!(files(&[batch(&scattered)]), expected);
        assert_eq!(files(&[batch(&unsorted_run)]), expected);
        // Several batches, a partition across two of them.
        assert_eq!(files(&[batch(&ordered[..2]), batch(&ordered[2..])]), expected);
        assert!(is_run(&[4, 5, 6]) && !is_run(&[4, 6, 7]) && !is_run(&[]));
    }

    /// The rows of one partition, scattered in the output, come back in the order of the
    /// sort columns (several, a null first as the row format orders it), and rows in order
    /// already come back as they are. A reordered run of rows is not taken for a run.
    #[test]
    fn sorted_rows_orders_a_partitions_rows_by_every_sort_column() {
        let schema = Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
            datafusion::arrow::datatypes::Field::new("a", DataType::Utf8, true),
            datafusion::arrow::datatypes::Field::new("b", DataType::Int64, false),
            datafusion::arrow::datatypes::Field::new("v", DataType::Int64, false),
        ]));
        let a = [Some("y"), Some("x"), None, Some("x"), Some("y"), Some("x"), Some("x")];
        let b = [2, 9, 5, 1, 1, 1, 3];
        let all = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(a.to_vec())),
                Arc::new(Int64Array::from(b.to_vec())),
                Arc::new(Int64Array::from_iter_values(0..7)),
            ],
        )
        .unwrap();
        let keys = all.project(&[0, 1]).unwrap();
        let rows = vec![6, 0, 5, 2, 4, 1];
        let mut expected = rows.clone();
        expected.sort_by_key(|&r| (a[r as usize], b[r as usize], r));
        assert_eq!(sorted_rows(&keys, rows).unwrap(), expected);
        assert_eq!(expected, [2, 5, 6, 1, 4, 0]);
        let in_order = vec![3, 6, 1];
        assert_eq!(sorted_rows(&keys, in_order.clone()).unwrap(), in_order);
        assert_eq!(sorted_rows(&keys, vec![4]).unwrap(), [4]);
        assert!(!is_run(&[3, 5, 4, 6]) && !is_run(&[4, 3]) && is_run(&[7]));
        let gathered = rows_of(&all, &[3, 5, 4, 6]).unwrap();
        assert_eq!(gathered.column(2).as_primitive::<Int64Type>().values(), &[3, 5, 4, 6]);
    }
}
