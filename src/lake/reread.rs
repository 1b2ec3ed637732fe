//! Reads that race a swap are planned again.
//!
//! Compaction and job publishes delete the files they replaced right after their commit
//! ([`super::visibility`]). A query planned before that commit lists the old files and,
//! when it opens one after the deletion, fails with the store's "not found": the rows are
//! all still there, in the new files. [`collect`] plans such a query again (a new listing
//! sees the new files) instead of answering the client with an error; any other error, or
//! a file still missing after [`ATTEMPTS`] plans, is returned as it is.
//!
//! Only whole-result reads can be asked again. A streamed answer whose first bytes are
//! already sent (`api::json_stream`) cannot, and keeps the error.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::ParamValues;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;

/// Plans per read: a swap takes seconds, so a second listing normally sees its outcome;
/// the third covers a second swap of the same partition in between.
pub const ATTEMPTS: usize = 3;

/// Whether `e` says a file the plan listed is gone (found anywhere in its source chain:
/// DataFusion wraps the store's error in parquet, context and shared errors).
pub fn is_vanished_file(e: &DataFusionError) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(object_store::Error::NotFound { .. }) = err.downcast_ref::<object_store::Error>() {
            return true;
        }
        if let Some(DataFusionError::ObjectStore(inner)) = err.downcast_ref::<DataFusionError>() {
            if matches!(inner.as_ref(), object_store::Error::NotFound { .. }) {
                return true;
            }
        }
        cur = err.source();
    }
    false
}

/// Plans `sql` with `params` bound and collects every batch, planning again when a listed
/// file vanished under the read. Returns the result's schema with the batches (an empty
/// result has no batch to take it from).
pub async fn collect(
    ctx: &SessionContext,
    sql: &str,
    params: impl Into<ParamValues> + Clone,
) -> Result<(SchemaRef, Vec<RecordBatch>), DataFusionError> {
    let mut attempt = 1;
    loop {
        let df = ctx.sql(sql).await?.with_param_values(params.clone())?;
        let schema = SchemaRef::clone(df.schema().inner());
        match df.collect().await {
            Ok(batches) => return Ok((schema, batches)),
            Err(e) if attempt < ATTEMPTS && is_vanished_file(&e) => {
                tracing::debug!(attempt, error = %e, "a file listed by the plan was replaced; planning again");
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::file_format::parquet::ParquetFormat;
    use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
    use parquet::arrow::ArrowWriter;

    use super::*;

    fn write(path: &std::path::Path, values: &[i64]) {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(values.to_vec()))]).unwrap();
        let mut w = ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    async fn table(ctx: &SessionContext, dir: &std::path::Path) {
        let url = ListingTableUrl::parse(format!("{}/", dir.display())).unwrap();
        let opts = ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let cfg = ListingTableConfig::new(url).with_listing_options(opts).infer_schema(&ctx.state()).await.unwrap();
        ctx.register_table("t", Arc::new(ListingTable::try_new(cfg).unwrap())).unwrap();
    }

    /// A session that lists files on every plan, as the lake's ([`super::super::query::session`]).
    fn uncached() -> SessionContext {
        use datafusion::execution::cache::cache_manager::CacheManagerConfig;
        use datafusion::execution::runtime_env::RuntimeEnvBuilder;
        let runtime = RuntimeEnvBuilder::new()
            .with_cache_manager(CacheManagerConfig::default().with_list_files_cache_limit(0))
            .build_arc()
            .unwrap();
        SessionContext::new_with_config_rt(Default::default(), runtime)
    }

    #[tokio::test]
    async fn a_file_deleted_after_planning_is_recognised_and_a_new_plan_reads_its_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.parquet"), dir.path().join("b.parquet"));
        write(&a, &[1, 2]);
        write(&b, &[3]);
        let ctx = uncached();
        table(&ctx, dir.path()).await;

        // A plan listed a and b; a "compaction" replaces both by c before the read.
        let plan = ctx.sql("SELECT sum(v) FROM t").await.unwrap().create_physical_plan().await.unwrap();
        write(&dir.path().join("c.parquet"), &[1, 2, 3]);
        std::fs::remove_file(&a).unwrap();
        std::fs::remove_file(&b).unwrap();
        let err = datafusion::physical_plan::collect(plan, ctx.task_ctx()).await.unwrap_err();
        assert!(is_vanished_file(&err), "{err}");

        let (schema, batches) = collect(&ctx, "SELECT sum(v) AS s FROM t", ParamValues::List(vec![])).await.unwrap();
        assert_eq!(schema.field(0).name(), "s");
        let s = batches[0].column(0).as_any().downcast_ref::<Int64Array>().unwrap().value(0);
        assert_eq!(s, 6);

        // Other errors are not taken for a swap.
        let err = ctx.sql("SELECT nope FROM t").await.unwrap_err();
        assert!(!is_vanished_file(&err));
    }
}
