//! How a plan that reads lake tables and in-memory tables crosses the wire.
//!
//! A lake table ([`SnapshotTable`]) travels as what names it: its Delta table's URL, its
//! shape (partition columns, sort order; the columns are the plan's) and the version it
//! is read at. The scheduler reads that snapshot's log and plans a Parquet scan of its
//! files, which DataFusion's physical plan serialization carries to the executors as it is.
//!
//! DataFusion's plan serialization does not know `MemTable`s either: the `stations` and `models` tables of every session, and the helper tables
//! a job registers for its run (`day_windows` bounded by the run's dates, `model_leads`,
//! `observed_extremes` replayed through the live engine). Without help, Ballista refuses
//! any query that touches one.
//!
//! [`LakeLogicalCodec`] sends a `MemTable`'s rows inside the plan, as one Arrow IPC stream
//! per partition, and rebuilds the same table on the scheduler. Why rows and not names:
//! the helper tables depend on the run (dates, the clock, the lake's observations), so a
//! scheduler rebuilding them "by name" would need the run's parameters and, for
//! `observed_extremes`, the whole replay; the rows are what the client computed, so both
//! sides see the same table by construction. They are small (the catalog's stations, 18
//! models, a run's day windows and the models' 1,000 lead hours each). After the
//! scheduler's planning, DataFusion's physical plan serialization carries the rows to the
//! executors itself (its memory scan node). Everything else goes to Ballista's own codec.

use std::io::Cursor;
use std::sync::Arc;

use crate::lake::delta::{At, TableShape};
use crate::lake::snapshot_table::SnapshotTable;
use ballista_core::serde::BallistaLogicalExtensionCodec;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion_proto::logical_plan::LogicalExtensionCodec;

/// Marks a table encoded by this codec (anything else is Ballista's).
const MEM_TABLE_TAG: &[u8] = b"wxlake.memtable.v1\0";
const SNAPSHOT_TABLE_TAG: &[u8] = b"wxlake.snapshot.v1\0";

/// A lake table on the wire (module docs).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct SnapshotWire {
    name: String,
    dir: String,
    url: String,
    at: At,
    partition_cols: Vec<String>,
    sort: Vec<String>,
}

/// Ballista's logical codec plus in-memory tables (see the module docs). The client, the
/// scheduler and the executors all use it, so each decodes what the others encode.
#[derive(Debug, Default)]
pub struct LakeLogicalCodec {
    ballista: BallistaLogicalExtensionCodec,
}

impl LogicalExtensionCodec for LakeLogicalCodec {
    fn try_decode(&self, buf: &[u8], inputs: &[LogicalPlan], ctx: &TaskContext) -> Result<Extension> {
        self.ballista.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.ballista.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        if let Some(body) = buf.strip_prefix(MEM_TABLE_TAG) {
            return Ok(Arc::new(decode_mem_table(body, table_ref)?));
        }
        match buf.strip_prefix(SNAPSHOT_TABLE_TAG) {
            Some(body) => Ok(Arc::new(decode_snapshot_table(body, table_ref, &schema)?)),
            None => self.ballista.try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        if let Some(table) = node.downcast_ref::<SnapshotTable>() {
            let wire = SnapshotWire {
                name: table.shape.name.clone(),
                dir: table.shape.dir.clone(),
                url: table.url.to_string(),
                at: table.at,
                partition_cols: table.shape.partition_cols.iter().map(|(c, _)| c.clone()).collect(),
                sort: table.shape.sort.clone(),
            };
            buf.extend_from_slice(SNAPSHOT_TABLE_TAG);
            return serde_json::to_writer(buf, &wire).map_err(|e| DataFusionError::External(e.into()));
        }
        if node.downcast_ref::<crate::lake::as_of::AsOfTable>().is_some() {
            return Err(DataFusionError::NotImplemented(format!(
                "'{table_ref}': {} runs in the local engine only (its choice of versions is an operator the \
                 executors do not have): run the query without --cluster",
                crate::lake::as_of::AS_OF
            )));
        }
        let Some(table) = node.downcast_ref::<MemTable>() else {
            return self.ballista.try_encode_table_provider(table_ref, node, buf).map_err(|e| {
                DataFusionError::NotImplemented(format!(
                    "table '{table_ref}' cannot be sent to the cluster (only lake tables and in-memory tables \
                     can): {e}"
                ))
            });
        };
        buf.extend_from_slice(MEM_TABLE_TAG);
        encode_mem_table(table, table_ref, buf)
    }

    fn try_decode_file_format(&self, buf: &[u8], ctx: &TaskContext) -> Result<Arc<dyn FileFormatFactory>> {
        self.ballista.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(&self, buf: &mut Vec<u8>, node: Arc<dyn FileFormatFactory>) -> Result<()> {
        self.ballista.try_encode_file_format(buf, node)
    }
}

/// A lake table from its wire form; `schema` is the plan's (file columns, then the
/// partition columns with their types).
fn decode_snapshot_table(body: &[u8], name: &TableReference, schema: &SchemaRef) -> Result<SnapshotTable> {
    let wire: SnapshotWire = serde_json::from_slice(body)
        .map_err(|e| DataFusionError::Internal(format!("lake table '{name}': bad plan data: {e}")))?;
    let url = url::Url::parse(&wire.url).map_err(|e| DataFusionError::External(e.into()))?;
    let is_partition = |f: &&Arc<Field>| wire.partition_cols.contains(f.name());
    let file_fields: Vec<Arc<Field>> = schema.fields().iter().filter(|f| !is_partition(f)).cloned().collect();
    let partition_cols = wire
        .partition_cols
        .iter()
        .map(|c| Ok((c.clone(), schema.field_with_name(c)?.data_type().clone())))
        .collect::<Result<Vec<_>>>()?;
    let shape = TableShape {
        name: wire.name,
        dir: wire.dir,
        file_schema: Arc::new(Schema::new(file_fields)),
        partition_cols,
        sort: wire.sort,
    };
    Ok(SnapshotTable::at_url(shape, url, wire.at, None))
}

/// Body: the partition count (u32 LE), then per partition its IPC stream's length (u64
/// LE) and the stream (schema, then the batches).
fn encode_mem_table(table: &MemTable, name: &TableReference, buf: &mut Vec<u8>) -> Result<()> {
    let schema = table.schema();
    buf.extend_from_slice(&u32::try_from(table.batches.len()).map_err(|_| too_many(name))?.to_le_bytes());
    for partition in &table.batches {
        // Our tables are built once and never written; a writer holding the lock would
        // mean a table being filled while it is planned, which is no state to ship.
        let batches = partition.try_read().map_err(|_| {
            DataFusionError::Execution(format!("in-memory table '{name}' is being written; it cannot be sent"))
        })?;
        let mut stream = Vec::new();
        {
            let mut w = StreamWriter::try_new(&mut stream, &schema)?;
            for b in batches.iter() {
                w.write(b)?;
            }
            w.finish()?;
        }
        buf.extend_from_slice(&(stream.len() as u64).to_le_bytes());
        buf.extend_from_slice(&stream);
    }
    Ok(())
}

fn decode_mem_table(mut body: &[u8], name: &TableReference) -> Result<MemTable> {
    let corrupt = || DataFusionError::Internal(format!("in-memory table '{name}': truncated plan data"));
    let count = u32::from_le_bytes(take(&mut body, 4).and_then(|b| b.try_into().ok()).ok_or_else(corrupt)?);
    let mut schema: Option<SchemaRef> = None;
    let mut partitions: Vec<Vec<RecordBatch>> = Vec::with_capacity(count.min(1024) as usize);
    for _ in 0..count {
        let len = u64::from_le_bytes(take(&mut body, 8).and_then(|b| b.try_into().ok()).ok_or_else(corrupt)?);
        let stream = take(&mut body, usize::try_from(len).map_err(|_| corrupt())?).ok_or_else(corrupt)?;
        let reader = StreamReader::try_new(Cursor::new(stream), None)?;
        schema.get_or_insert_with(|| reader.schema());
        partitions.push(reader.collect::<std::result::Result<Vec<_>, _>>()?);
    }
    let schema =
        schema.ok_or_else(|| DataFusionError::Internal(format!("in-memory table '{name}' has no partition")))?;
    MemTable::try_new(schema, partitions)
}

/// The first `n` bytes of `body`, which moves past them (`None` when it is shorter).
fn take<'a>(body: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = body.split_at_checked(n)?;
    *body = rest;
    Some(head)
}

fn too_many(name: &TableReference) -> DataFusionError {
    DataFusionError::Execution(format!("in-memory table '{name}' has too many partitions to send"))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::prelude::SessionContext;
    use datafusion_proto::bytes::{
        logical_plan_from_bytes_with_extension_codec, logical_plan_to_bytes_with_extension_codec,
    };

    use super::*;
    use crate::lake::query::{models_table, stations_table};

    /// A plan joining the two built-in tables survives the trip and answers the same, and
    /// an empty partition stays a partition.
    #[tokio::test]
    async fn in_memory_tables_cross_the_wire_with_their_rows() {
        let ctx = SessionContext::new();
        ctx.register_table("stations", Arc::new(stations_table().unwrap())).unwrap();
        ctx.register_table("models", Arc::new(models_table().unwrap())).unwrap();
        let schema = stations_table().unwrap().schema();
        ctx.register_table("two_parts", Arc::new(MemTable::try_new(schema, vec![vec![], vec![]]).unwrap())).unwrap();
        let q = "SELECT s.station_code, s.timezone, m.model, (SELECT count(*) FROM two_parts) AS n \
                 FROM stations s CROSS JOIN models m WHERE m.model IN ('GFS', 'NAM') ORDER BY 1, 3";
        let plan = ctx.sql(q).await.unwrap().into_optimized_plan().unwrap();
        let codec = LakeLogicalCodec::default();
        let bytes = logical_plan_to_bytes_with_extension_codec(&plan, &codec).unwrap();

        // The far side has none of the tables registered: the plan carries them.
        let far = SessionContext::new();
        let decoded = logical_plan_from_bytes_with_extension_codec(&bytes, &far.task_ctx(), &codec).unwrap();
        let here = ctx.execute_logical_plan(plan).await.unwrap().collect().await.unwrap();
        let there = far.execute_logical_plan(decoded).await.unwrap().collect().await.unwrap();
        let (here, there) = (pretty_format_batches(&here).unwrap(), pretty_format_batches(&there).unwrap());
        assert_eq!(here.to_string(), there.to_string());
        assert!(here.to_string().contains("| KNYC         |"), "{here}");
        assert!(here.to_string().lines().count() > 100, "{here}");
    }

    /// A lake table crosses as its Delta table's URL, shape and version: the far side,
    /// which never opened the lake, reads that version and answers the same (past
    /// versions too, as `table_at` reads them).
    #[tokio::test]
    async fn lake_tables_cross_the_wire_as_their_delta_table() {
        use crate::lake::schema::FORECASTS;
        let tmp = tempfile::tempdir().unwrap();
        let lake = crate::lake::Lake::open(&tmp.path().join("lake").display().to_string()).await.unwrap();
        let run = chrono::DateTime::parse_from_rfc3339("2026-03-07T00:00:00Z").unwrap().to_utc();
        let rows = |first: i32| -> Vec<crate::decode::types::ForecastRow> {
            (first..first + 5)
                .map(|h| crate::decode::types::ForecastRow {
                    model: "GFS",
                    location_name: "KNYC".into(),
                    run_time: run,
                    valid_time: run + chrono::Duration::hours(h.into()),
                    forecast_hour: h,
                    ..Default::default()
                })
                .collect()
        };
        lake.write(rows(0)).await.unwrap();
        let first = lake.delta_table(&TableShape::lake_table(&FORECASTS)).await.unwrap().version().unwrap();
        lake.write(rows(5)).await.unwrap();
        let ctx = crate::jobs::analyst_session(&lake).await.unwrap();
        let codec = LakeLogicalCodec::default();
        let far = SessionContext::new();
        for (q, n) in [
            ("SELECT count(*) AS n FROM forecasts WHERE run_date = '2026-03-07'", "10"),
            (&*format!("SELECT count(*) AS n FROM table_at('forecasts', {first})"), "5"),
        ] {
            let plan = ctx.sql(q).await.unwrap().into_optimized_plan().unwrap();
            let bytes = logical_plan_to_bytes_with_extension_codec(&plan, &codec).unwrap();
            let decoded = logical_plan_from_bytes_with_extension_codec(&bytes, &far.task_ctx(), &codec).unwrap();
            let there = far.execute_logical_plan(decoded).await.unwrap().collect().await.unwrap();
            let text = pretty_format_batches(&there).unwrap().to_string();
            assert!(text.contains(&format!("| {n} ")), "{q}: {text}");
        }
    }

    #[test]
    fn truncated_table_data_is_an_error_not_a_panic() {
        let codec = LakeLogicalCodec::default();
        let mut buf = Vec::new();
        codec.try_encode_table_provider(&"models".into(), Arc::new(models_table().unwrap()), &mut buf).unwrap();
        let ctx = SessionContext::new();
        let schema = models_table().unwrap().schema();
        for cut in [MEM_TABLE_TAG.len() + 2, buf.len() - 3] {
            let e = codec.try_decode_table_provider(&buf[..cut], &"models".into(), schema.clone(), &ctx.task_ctx());
            assert!(e.is_err(), "cut at {cut}");
        }
        let whole = codec.try_decode_table_provider(&buf, &"models".into(), schema.clone(), &ctx.task_ctx()).unwrap();
        assert_eq!(whole.schema(), schema);
    }
}
