//! The DataFusion table of a lake table: each scan reads one snapshot of the Delta table
//! (the latest, or a past one for time travel) and plans a Parquet scan of exactly the files
//! that snapshot names.
//!
//! Why not delta-rs's own provider: its scan is a `DeltaScanExec`, which has no physical
//! codec (delta-rs says so), so a Ballista scheduler could not send it to the executors;
//! and it declares no order, where every lake file is sorted (jobs rely on it). wxlake's
//! tables use none of the Delta features that need its reader (deletion vectors, column
//! mapping): [`SnapshotTable`] refuses a snapshot whose protocol asks for any other reader
//! feature ([`READ_FEATURES`] lists those it honours).
//! The plan is DataFusion's own Parquet scan, which the cluster's codec carries as it is;
//! the provider itself travels as its table URL, shape and [`At`]
//! (src/cluster/codec.rs).
//!
//! A snapshot is read by its own partition columns, which are the declared shape's except
//! in a version written before the declaration changed them (`forecast_daily` once was
//! partitioned by model and run date; time travel and `as_of` still read such versions):
//! that snapshot's files are scanned by its layout and its rows handed on in the declared
//! columns' order, so a query's columns never depend on the version it reads.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::{project_schema, DFSchema, ScalarValue, Statistics};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::helpers::expr_applicable_for_cols;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{col, utils::conjunction, Expr, SortExpr, TableProviderFilterPushDown};
use datafusion::physical_expr::create_lex_ordering;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::ExecutionPlan;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};
use url::Url;

use super::delta::{active_files, ActiveFile, At, TableShape};
use super::file_groups::by_partition_hash;
use super::Lake;

/// The Delta reader features a plain Parquet scan of a snapshot's files honours: none of
/// them changes what a file's rows are (deletion vectors and column mapping would).
const READ_FEATURES: [&str; 3] = ["TimestampWithoutTimezone", "V2Checkpoint", "VacuumProtocolCheck"];

/// A lake table for DataFusion (module docs).
#[derive(Debug, Clone)]
pub struct SnapshotTable {
    pub(crate) shape: TableShape,
    /// The table's URL (`file:///…/forecasts/`, `s3://bucket/lake/forecasts/`).
    pub(crate) url: Url,
    pub(crate) at: At,
    /// The lake's cache of loaded tables, when this process opened the lake (a cluster
    /// scheduler decoding a plan reads the log from the start).
    tables: Option<Arc<super::delta::Tables>>,
    schema: SchemaRef,
}

impl SnapshotTable {
    /// The table `shape` describes in `lake`, read at `at`.
    pub fn new(lake: &Lake, shape: TableShape, at: At) -> Result<Self, super::LakeError> {
        let url = lake.table_location(&shape.dir)?;
        Ok(Self::at_url(shape, url, at, Some(Arc::clone(&lake.tables))))
    }

    /// The table at `url` (a decoded plan's).
    pub(crate) fn at_url(shape: TableShape, url: Url, at: At, tables: Option<Arc<super::delta::Tables>>) -> Self {
        let schema = shape.table_schema();
        SnapshotTable { shape, url, at, tables, schema }
    }

    /// This table read at `at` instead.
    pub fn travel(&self, at: At) -> Self {
        SnapshotTable { at, ..self.clone() }
    }

    /// The store's URL and the table directory's path inside it.
    fn store_url_and_path(&self) -> Result<(ObjectStoreUrl, Path)> {
        let base = format!("{}://{}", self.url.scheme(), self.url.host_str().unwrap_or_default());
        let path = Path::from_url_path(self.url.path()).map_err(|e| DataFusionError::External(e.into()))?;
        Ok((ObjectStoreUrl::parse(base)?, path))
    }

    /// The snapshot's files and its partition columns, or `None` when no table was
    /// committed there (yet).
    async fn files(
        &self,
        store: Arc<dyn ObjectStore>,
        table_path: &Path,
    ) -> Result<Option<(Vec<ActiveFile>, Vec<String>)>> {
        let external = |e: super::LakeError| DataFusionError::External(Box::new(e));
        let table = match (self.at, &self.tables) {
            (At::Latest, Some(tables)) => tables.latest(store, &self.url).await.map_err(external)?,
            (at, _) => super::delta::load(store, &self.url, at).await.map_err(external)?,
        };
        let Some(table) = table else { return Ok(None) };
        let snapshot = table.snapshot().map_err(|e| DataFusionError::External(e.into()))?;
        let unread: Vec<String> = snapshot
            .protocol()
            .reader_features()
            .unwrap_or_default()
            .iter()
            .map(|f| format!("{f:?}"))
            .filter(|f| !READ_FEATURES.contains(&f.as_str()))
            .collect();
        if !unread.is_empty() {
            return Err(DataFusionError::NotImplemented(format!(
                "table {} asks for Delta reader features wxlake does not read ({})",
                self.shape.dir,
                unread.join(", ")
            )));
        }
        let partition_columns = snapshot.metadata().partition_columns().to_vec();
        Ok(Some((active_files(&table, table_path).map_err(external)?, partition_columns)))
    }

    /// The scan of a snapshot partitioned by `columns` instead of the declared ones (module
    /// docs): scanned by its own layout, then filtered by what this provider told the
    /// planner it applies exactly (filters over declared partition columns) and that
    /// layout cannot prune by, then its columns put in the declared order.
    async fn scan_laid_out_by(
        &self,
        columns: &[String],
        state: &dyn Session,
        files: Files,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let shape = self.shape.laid_out_by(columns).map_err(DataFusionError::Plan)?;
        let schema = shape.table_schema();
        let declared = self.shape.partition_names();
        let own: Vec<&str> = columns.iter().map(String::as_str).collect();
        let residual: Vec<Expr> = filters
            .iter()
            .filter(|f| !declared.is_empty() && expr_applicable_for_cols(&declared, f))
            .filter(|f| own.is_empty() || !expr_applicable_for_cols(&own, f))
            .cloned()
            .collect();
        let wanted: Vec<&str> = match projection {
            Some(p) => p.iter().map(|i| self.schema.field(*i).name().as_str()).collect(),
            None => self.schema.fields().iter().map(|f| f.name().as_str()).collect(),
        };
        let mut needed = std::collections::BTreeSet::new();
        for name in wanted.iter().copied().chain(residual.iter().flat_map(|f| f.column_refs()).map(|c| c.name.as_str()))
        {
            needed.insert(schema.index_of(name)?);
        }
        let needed: Vec<usize> = needed.into_iter().collect();
        let limit = if residual.is_empty() { limit } else { None };
        let mut plan = scan_files(&shape, &schema, state, files, Some(&needed), filters, limit).await?;
        if let Some(predicate) = conjunction(residual) {
            let df_schema = DFSchema::try_from(plan.schema())?;
            plan = Arc::new(FilterExec::try_new(state.create_physical_expr(predicate, &df_schema)?, plan)?);
        }
        let scanned = plan.schema();
        let exprs = wanted
            .iter()
            .map(|name| {
                Ok((Arc::new(Column::new_with_schema(name, &scanned)?) as Arc<dyn PhysicalExpr>, name.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(ProjectionExec::try_new(exprs, plan)?))
    }

    /// The files whose partition values pass `filters` (each applicable to partition
    /// columns only), with those values typed as SQL sees them.
    fn prune(
        shape: &TableShape,
        state: &dyn Session,
        files: Vec<ActiveFile>,
        filters: &[Expr],
    ) -> Result<Vec<(ActiveFile, Vec<ScalarValue>)>> {
        let values: Vec<Vec<ScalarValue>> = files
            .iter()
            .map(|f| {
                shape
                    .partition_cols
                    .iter()
                    .map(|(name, dt)| match f.partition_values.get(name).cloned().flatten() {
                        Some(v) => ScalarValue::try_from_string(v, dt),
                        None => ScalarValue::try_from(dt),
                    })
                    .collect()
            })
            .collect::<Result<_>>()?;
        let Some(predicate) = conjunction(filters.iter().cloned()) else {
            return Ok(files.into_iter().zip(values).collect());
        };
        if files.is_empty() {
            return Ok(vec![]);
        }
        let fields: Vec<_> = shape.partition_cols.iter().map(|(n, t)| Field::new(n, t.clone(), true)).collect();
        let schema = Arc::new(Schema::new(fields));
        let columns: Vec<ArrayRef> = (0..shape.partition_cols.len())
            .map(|i| ScalarValue::iter_to_array(values.iter().map(|v| v[i].clone())))
            .collect::<Result<_>>()?;
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns)?;
        let df_schema = DFSchema::try_from(schema)?;
        let physical = state.create_physical_expr(predicate, &df_schema)?;
        let mask = physical.evaluate(&batch)?.into_array(batch.num_rows())?;
        let mask = mask
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| DataFusionError::Internal("partition filter is not boolean".into()))?
            .clone();
        Ok(files
            .into_iter()
            .zip(values)
            .enumerate()
            .filter(|(i, _)| mask.is_valid(*i) && mask.value(*i))
            .map(|(_, f)| f)
            .collect())
    }
}

#[async_trait]
impl TableProvider for SnapshotTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let (store_url, table_path) = self.store_url_and_path()?;
        let store = state.runtime_env().object_store(&store_url)?;
        let Some((files, partition_columns)) = self.files(Arc::clone(&store), &table_path).await? else {
            return Ok(Arc::new(EmptyExec::new(project_schema(&self.schema, projection)?)));
        };
        let files = Files { store_url, store, files };
        if partition_columns != self.shape.partition_names() {
            return self.scan_laid_out_by(&partition_columns, state, files, projection, filters, limit).await;
        }
        scan_files(&self.shape, &self.schema, state, files, projection, filters, limit).await
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        let names = self.shape.partition_names();
        Ok(filters
            .iter()
            .map(|f| {
                if !names.is_empty() && expr_applicable_for_cols(&names, f) {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Inexact
                }
            })
            .collect())
    }
}

/// A snapshot's files and the store they are in.
struct Files {
    store_url: ObjectStoreUrl,
    store: Arc<dyn ObjectStore>,
    files: Vec<ActiveFile>,
}

/// The scan of `files`, laid out as `shape` says, with the columns of `schema` (the
/// shape's table schema).
async fn scan_files(
    shape: &TableShape,
    schema: &SchemaRef,
    state: &dyn Session,
    files: Files,
    projection: Option<&Vec<usize>>,
    filters: &[Expr],
    limit: Option<usize>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let Files { store_url, store, files } = files;
    let names = shape.partition_names();
    let partition_filters: Vec<Expr> =
        filters.iter().filter(|f| !names.is_empty() && expr_applicable_for_cols(&names, f)).cloned().collect();
    let files = SnapshotTable::prune(shape, state, files, &partition_filters)?;
    if files.is_empty() {
        return Ok(Arc::new(EmptyExec::new(project_schema(schema, projection)?)));
    }

    // Statistics and order of each file from its footer (cached by the runtime), as a
    // listing table collects them: the order of a group of several files holds only
    // when their statistics show they do not overlap.
    let format = ParquetFormat::default();
    let collect = state.config().collect_statistics();
    let concurrency = state.config_options().execution.meta_fetch_concurrency.get();
    let file_schema = Arc::clone(&shape.file_schema);
    let partitioned: Vec<PartitionedFile> = futures::stream::iter(files)
        .map(|(f, values)| {
            let (format, store, file_schema) = (&format, &store, Arc::clone(&file_schema));
            async move {
                let meta = ObjectMeta {
                    location: f.location.clone(),
                    last_modified: chrono::DateTime::from_timestamp_millis(f.modified_ms).unwrap_or_default(),
                    size: f.size,
                    e_tag: None,
                    version: None,
                };
                let mut file = PartitionedFile::new_from_meta(meta.clone()).with_partition_values(values);
                if collect {
                    let inferred = format.infer_stats_and_ordering(state, store, file_schema, &meta).await?;
                    file = file.with_statistics(Arc::new(inferred.statistics)).with_ordering(inferred.ordering);
                }
                Ok::<_, DataFusionError>(file)
            }
        })
        .buffered(concurrency)
        .try_collect()
        .await?;

    let partition_fields: Vec<Field> =
        shape.partition_cols.iter().map(|(n, t)| Field::new(n, t.clone(), false)).collect();
    let target = state.config().target_partitions();
    let min_values = state.config_options().optimizer.preserve_file_partitions;
    let (groups, partitioning) = match by_partition_hash(&partitioned, schema, &partition_fields, target, min_values)? {
        Some((groups, partitioning)) => (groups, Some(partitioning)),
        None => (FileGroup::new(partitioned).split_files(target), None),
    };
    let (groups, statistics) =
        datafusion_datasource::compute_all_files_statistics(groups, Arc::clone(schema), collect, false)?;
    let order: Vec<SortExpr> = shape.sort.iter().map(|c| col(c.as_str()).sort(true, false)).collect();
    let ordering = create_lex_ordering(schema, &[order], state.execution_props())?;
    let table_schema = datafusion_datasource::TableSchemaBuilder::from(&shape.file_schema)
        .with_table_partition_cols(partition_fields.into_iter().map(Arc::new).collect::<Vec<_>>())
        .build();
    let config = FileScanConfigBuilder::new(store_url, format.file_source(table_schema))
        .with_file_groups(groups)
        .with_statistics(if collect { statistics } else { Statistics::new_unknown(schema) })
        .with_projection_indices(projection.cloned())?
        .with_limit(limit)
        .with_output_ordering(ordering)
        .with_output_partitioning(partitioning)
        .build();
    format.create_physical_plan(state, config).await
}
