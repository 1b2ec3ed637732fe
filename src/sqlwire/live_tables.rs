//! The hot state as SQL tables, next to the lake's:
//!
//! - `svc_extremes`: each station's trading-day high and low, today and yesterday, per
//!   logic (`nws`, `wu`), computed by [`trading_day::extremes`] (what `mode=svc_high`
//!   formats) and built into columns straight from its typed value when the query runs (not while it is
//!   planned: under the query's time limit and cancellation, [`LazyPartition`]). A
//!   filter on `station_code` or `logic` (`=`, `IN`, `OR`s of `=`) limits which stations
//!   are computed.
//! - `live_observations`: the observations acknowledged but not yet flushed to the lake,
//!   with the `observations` table's columns (so `observations UNION ALL
//!   live_observations` is everything acknowledged). Separate rather than unioned into
//!   `observations`, so `observations` means the same in `wxlake sql` and on the wire, and a
//!   query states when it wants rows that may still change (a flush moves them; during a
//!   flush a row can briefly be in both: `row_key` tells).
//!
//! [`super::overlay::OverlaySchema`] adds them to the lake's schema without changing the REST
//! API's session.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Duration;
use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Date32Builder, Float64Builder, RecordBatch, StringArray, StringBuilder,
    TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::create_physical_expr;
use datafusion::physical_expr::execution_props::ExecutionProps;
use datafusion::physical_expr::utils::{Guarantee, LiteralGuarantee};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;
use futures::future::BoxFuture;

use super::WireState;
use crate::catalog::Catalog;
use crate::decode::types::Metar;
use crate::extremes::{Logic, Source};
use crate::ingest::OfRecords;
use crate::lake::rows::{date32, LakeRecord, RowTimes};
use crate::trading_day::{self, TradingDay};
use crate::write::WriteService;

/// Name of the live extremes table.
pub const SVC_EXTREMES: &str = "svc_extremes";
/// Name of the unflushed observations table.
pub const LIVE_OBSERVATIONS: &str = "live_observations";

/// The live tables over the server's state.
pub fn live_tables(state: &WireState) -> HashMap<String, Arc<dyn TableProvider>> {
    let mut m: HashMap<String, Arc<dyn TableProvider>> = HashMap::new();
    m.insert(SVC_EXTREMES.to_string(), Arc::new(SvcExtremesTable { live: Arc::clone(&state.live) }));
    m.insert(LIVE_OBSERVATIONS.to_string(), Arc::new(LiveObservationsTable { live: Arc::clone(&state.live) }));
    m
}

/// `svc_extremes` (see the module docs).
#[derive(Clone)]
pub struct SvcExtremesTable {
    live: Arc<WriteService>,
}

impl std::fmt::Debug for SvcExtremesTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SvcExtremesTable")
    }
}

/// The columns of `svc_extremes`: those of the `daily_extremes` job table where they mean
/// the same, plus the station's units.
pub fn svc_extremes_schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    Arc::new(Schema::new(vec![
        Field::new("station_code", DataType::Utf8, false),
        Field::new("logic", DataType::Utf8, false),
        Field::new("date", DataType::Date32, false),
        Field::new("units", DataType::Utf8, false),
        Field::new("high", DataType::Float64, true),
        Field::new("low", DataType::Float64, true),
        Field::new("high_time", ts(), true),
        Field::new("low_time", ts(), true),
        Field::new("high_source", DataType::Utf8, true),
        Field::new("low_source", DataType::Utf8, true),
        Field::new("high_sources", DataType::Utf8, false),
        Field::new("low_sources", DataType::Utf8, false),
        Field::new("high_valid_through", ts(), true),
        Field::new("low_valid_through", ts(), true),
        Field::new("anomaly", DataType::Boolean, false),
        Field::new("is_final", DataType::Boolean, false),
        Field::new("data_quality", DataType::Utf8, false),
    ]))
}

#[async_trait]
impl TableProvider for SvcExtremesTable {
    fn schema(&self) -> SchemaRef {
        svc_extremes_schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        // Inexact: the filter narrows what is computed, DataFusion still applies it.
        Ok(filters
            .iter()
            .map(|f| {
                if literal_values(f, "station_code").is_some() || literal_values(f, "logic").is_some() {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // All the filters at once: `AND`ed lists narrow to their intersection.
        let all = conjunction(filters.iter().cloned());
        let stations = all.as_ref().and_then(|f| literal_values(f, "station_code"));
        let logics = all.as_ref().and_then(|f| literal_values(f, "logic"));
        let table = self.clone();
        lazy_exec(SVC_EXTREMES, svc_extremes_schema(), projection, move || {
            let (table, stations, logics) = (table.clone(), stations.clone(), logics.clone());
            Box::pin(async move { table.compute(stations.as_deref(), logics.as_deref()).await })
        })
    }
}

impl SvcExtremesTable {
    /// One row per (station, logic, day) for today and yesterday, as `svc_high` answers.
    async fn compute(&self, stations: Option<&[String]>, logics: Option<&[String]>) -> Result<RecordBatch> {
        let schema = svc_extremes_schema();
        let mut b = Columns::default();
        for station in Catalog::global().all() {
            if stations.is_some_and(|s| !s.contains(&station.code)) {
                continue;
            }
            for logic in [Logic::Nws, Logic::Wu] {
                if logics.is_some_and(|l| !l.iter().any(|x| x == logic.as_str())) {
                    continue;
                }
                let today = crate::time::local_date(station.timezone, logic.clock(), self.live.clock.now());
                for date in [today - Duration::days(1), today] {
                    let day = trading_day::extremes(&self.live, station, logic, Some(date)).await.map_err(|e| {
                        DataFusionError::External(Box::new(e)).context(format!("svc_extremes {}", station.code))
                    })?;
                    b.push(&day);
                }
            }
        }
        Ok(RecordBatch::try_new(schema, b.finish())?)
    }
}

/// Builders of `svc_extremes`' columns.
#[derive(Default)]
struct Columns {
    station: StringBuilder,
    logic: StringBuilder,
    date: Date32Builder,
    units: StringBuilder,
    high: Float64Builder,
    low: Float64Builder,
    high_time: TimestampMicrosecondBuilder,
    low_time: TimestampMicrosecondBuilder,
    high_source: StringBuilder,
    low_source: StringBuilder,
    high_sources: StringBuilder,
    low_sources: StringBuilder,
    high_valid: TimestampMicrosecondBuilder,
    low_valid: TimestampMicrosecondBuilder,
    anomaly: BooleanBuilder,
    is_final: BooleanBuilder,
    quality: StringBuilder,
}

impl Columns {
    fn push(&mut self, day: &TradingDay) {
        let x = day.extremes.as_ref();
        let (high, low) = (x.and_then(|x| x.high), x.and_then(|x| x.low));
        let micros = |t: Option<chrono::DateTime<chrono::Utc>>| t.map(|t| t.timestamp_micros());
        let names =
            |s: Option<&[Source]>| s.unwrap_or_default().iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",");
        self.station.append_value(&day.station.code);
        self.logic.append_value(day.logic.as_str());
        self.date.append_value(date32(day.date));
        self.units.append_value(day.station.units.as_str());
        self.high.append_option(high.map(|e| e.value));
        self.low.append_option(low.map(|e| e.value));
        self.high_time.append_option(micros(high.map(|e| e.time)));
        self.low_time.append_option(micros(low.map(|e| e.time)));
        self.high_source.append_option(high.map(|e| e.source.as_str()));
        self.low_source.append_option(low.map(|e| e.source.as_str()));
        self.high_sources.append_value(names(x.map(|x| x.high_sources.as_slice())));
        self.low_sources.append_value(names(x.map(|x| x.low_sources.as_slice())));
        self.high_valid.append_option(micros(x.and_then(|x| x.high_valid_through_utc)));
        self.low_valid.append_option(micros(x.and_then(|x| x.low_valid_through_utc)));
        self.anomaly.append_value(x.is_some_and(|x| x.anomaly));
        self.is_final.append_value(x.is_some_and(|x| x.is_final));
        // The JSON the REST answer's `data_quality` holds for the logic.
        self.quality.append_value(serde_json::to_value(&day.data_quality).unwrap_or_default().to_string());
    }

    fn finish(mut self) -> Vec<ArrayRef> {
        let utc = |b: &mut TimestampMicrosecondBuilder| -> ArrayRef { Arc::new(b.finish().with_timezone("UTC")) };
        vec![
            Arc::new(self.station.finish()),
            Arc::new(self.logic.finish()),
            Arc::new(self.date.finish()),
            Arc::new(self.units.finish()),
            Arc::new(self.high.finish()),
            Arc::new(self.low.finish()),
            utc(&mut self.high_time),
            utc(&mut self.low_time),
            Arc::new(self.high_source.finish()),
            Arc::new(self.low_source.finish()),
            Arc::new(self.high_sources.finish()),
            Arc::new(self.low_sources.finish()),
            utc(&mut self.high_valid),
            utc(&mut self.low_valid),
            Arc::new(self.anomaly.finish()),
            Arc::new(self.is_final.finish()),
            Arc::new(self.quality.finish()),
        ]
    }
}

/// The strings `column` must be one of for filter `f` to hold (`column = 'x'`,
/// `column IN (...)`, the `OR`s DataFusion rewrites a short `IN` into, and `AND`s of
/// these), as DataFusion's [`LiteralGuarantee`] finds them in the filter's physical
/// form; None when `f` does not limit `column` to a list of strings.
fn literal_values(f: &Expr, column: &str) -> Option<Vec<String>> {
    let schema = DFSchema::try_from(svc_extremes_schema()).ok()?;
    // Unqualified: the table's columns, whatever the query called the table.
    let props = ExecutionProps::new();
    let expr =
        create_physical_expr(&unnormalize_col(f.clone()), &schema, &props, &PhysicalPlanningContext::default()).ok()?;
    let guarantee = LiteralGuarantee::analyze(&expr)
        .into_iter()
        .find(|g| g.column.name == column && g.guarantee == Guarantee::In)?;
    // Strings only; a NULL literal matches no row, so it adds no value.
    let strings: Vec<Option<&str>> = guarantee.literals.iter().map(ScalarValue::try_as_str).collect::<Option<_>>()?;
    let mut values: Vec<String> = strings.into_iter().flatten().map(str::to_string).collect();
    values.sort();
    Some(values)
}

/// `live_observations` (see the module docs).
#[derive(Debug)]
pub struct LiveObservationsTable {
    live: Arc<WriteService>,
}

/// The `observations` table's columns: the stored ones, then the `date` partition.
pub fn observations_schema() -> SchemaRef {
    let t = <Metar as LakeRecord>::table();
    let mut fields: Vec<Field> = t.file_schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.extend(t.partition_cols.iter().map(|c| Field::new(*c, DataType::Utf8, true)));
    Arc::new(Schema::new(fields))
}

#[async_trait]
impl TableProvider for LiveObservationsTable {
    fn schema(&self) -> SchemaRef {
        observations_schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let live = Arc::clone(&self.live);
        lazy_exec(LIVE_OBSERVATIONS, observations_schema(), projection, move || {
            let live = Arc::clone(&live);
            Box::pin(async move { pending_batch(&live) })
        })
    }
}

/// The observations `live` holds unflushed, as one batch of [`observations_schema`].
fn pending_batch(live: &WriteService) -> Result<RecordBatch> {
    let pending = live.pending_records();
    let (mut refs, mut received) = (Vec::new(), Vec::new());
    for input in &pending {
        let metars = Metar::of(&input.records);
        refs.extend(metars);
        received.extend(std::iter::repeat_n(input.at.timestamp_micros(), metars.len()));
    }
    let keys: Vec<u64> = refs.iter().map(|m| m.row_key()).collect();
    // Live rows: known when received. Not written yet: `inserted_at` is now.
    let times = RowTimes {
        inserted_at: live.clock.now().timestamp_micros(),
        received_at: received.clone(),
        available_at: received,
    };
    let stored = Metar::to_batch(&refs, &keys, times)?;
    let dates: ArrayRef = Arc::new(StringArray::from_iter_values(refs.iter().map(|m| {
        let p = m.partition();
        p.strip_prefix("date=").unwrap_or(&p).to_string()
    })));
    let mut cols = stored.columns().to_vec();
    cols.push(dates);
    Ok(RecordBatch::try_new(observations_schema(), cols)?)
}

/// Computes a live table's one batch.
type Compute = Box<dyn Fn() -> BoxFuture<'static, Result<RecordBatch>> + Send + Sync>;

/// A live table's one partition, computed when its stream is first polled: at execution,
/// under the query's time limit and cancellation ([`super::bounded`]), never while the
/// query is planned (`scan`), where no limit applies yet.
struct LazyPartition {
    table: &'static str,
    schema: SchemaRef,
    compute: Compute,
}

impl std::fmt::Debug for LazyPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyPartition").field("table", &self.table).finish_non_exhaustive()
    }
}

impl PartitionStream for LazyPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        // The future does nothing until the stream is polled.
        let batch = (self.compute)();
        Box::pin(RecordBatchStreamAdapter::new(Arc::clone(&self.schema), futures::stream::once(batch)))
    }
}

/// The plan of a live table of `schema` whose batch `compute` makes (see [`LazyPartition`]).
fn lazy_exec(
    table: &'static str,
    schema: SchemaRef,
    projection: Option<&Vec<usize>>,
    compute: impl Fn() -> BoxFuture<'static, Result<RecordBatch>> + Send + Sync + 'static,
) -> Result<Arc<dyn ExecutionPlan>> {
    let partition = LazyPartition { table, schema: Arc::clone(&schema), compute: Box::new(compute) };
    let exec = StreamingTableExec::try_new(schema, vec![Arc::new(partition)], projection, Vec::new(), false, None)?;
    Ok(Arc::new(exec))
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::{col, lit};

    use super::*;

    /// `=` and `IN` on a column narrow what `svc_extremes` computes; anything else does not.
    #[test]
    fn filters_that_narrow_the_stations() {
        assert_eq!(literal_values(&col("station_code").eq(lit("KNYC")), "station_code"), Some(vec!["KNYC".into()]));
        assert_eq!(literal_values(&lit("KNYC").eq(col("station_code")), "station_code"), Some(vec!["KNYC".into()]));
        let list = col("logic").in_list(vec![lit("nws"), lit("wu")], false);
        assert_eq!(literal_values(&list, "logic"), Some(vec!["nws".into(), "wu".into()]));
        assert_eq!(literal_values(&col("logic").in_list(vec![lit("nws")], true), "logic"), None, "NOT IN");
        assert_eq!(literal_values(&col("station_code").gt(lit("K")), "station_code"), None);
        assert_eq!(literal_values(&col("station_code").eq(lit("KNYC")), "logic"), None);
    }

    /// The `OR`s DataFusion rewrites a short `IN` into narrow too, and so do qualified
    /// columns and `AND`s; an `OR` that lets another value through does not.
    #[test]
    fn ors_of_equalities_narrow_the_stations() {
        let either = col("station_code").eq(lit("A")).or(col("station_code").eq(lit("B")));
        assert_eq!(literal_values(&either, "station_code"), Some(vec!["A".into(), "B".into()]));
        let qualified = Expr::Column(datafusion::common::Column::new(Some(SVC_EXTREMES), "station_code"));
        assert_eq!(literal_values(&qualified.eq(lit("A")), "station_code"), Some(vec!["A".into()]));
        let both = either.clone().and(col("logic").eq(lit("wu")));
        assert_eq!(literal_values(&both, "station_code"), Some(vec!["A".into(), "B".into()]));
        assert_eq!(literal_values(&both, "logic"), Some(vec!["wu".into()]));
        let loose = col("station_code").eq(lit("A")).or(col("logic").eq(lit("wu")));
        assert_eq!(literal_values(&loose, "station_code"), None);
        let wider = col("station_code").eq(lit("A")).or(col("station_code").gt(lit("K")));
        assert_eq!(literal_values(&wider, "station_code"), None);
    }

    #[test]
    fn live_observations_have_the_observations_columns() {
        let s = observations_schema();
        assert_eq!(s.fields().last().map(|f| f.name().as_str()), Some("date"));
        assert!(s.field_with_name("station_code").is_ok());
    }
}
