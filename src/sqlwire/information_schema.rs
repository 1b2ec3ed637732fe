//! `information_schema` as PostgreSQL's tools read it: DataFusion's, but for `columns`,
//! which names types as PostgreSQL does (`text`, `timestamp with time zone`, `double
//! precision`, `integer`, `boolean`, `date`, the same types the wire sends) where
//! DataFusion's names Arrow types (`Utf8`, `Timestamp(µs, "UTC")`), counts
//! `ordinal_position` from 1, and has `udt_name` and PostgreSQL's precisions. Grafana's
//! query builder finds time columns by these names; SQLAlchemy and DBeaver read them too.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::information_schema::InformationSchemaProvider;
use datafusion::catalog::{CatalogProviderList, SchemaProvider, Session, TableProvider};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_postgres::arrow_pg::datatypes::into_pg_type;
use datafusion_postgres::pgwire::api::Type;

use super::overlay::OverlaySchema;

/// The schema named `information_schema` of a session over `catalogs`.
pub fn schema(catalogs: Arc<dyn CatalogProviderList>) -> Arc<dyn SchemaProvider> {
    let base: Arc<dyn SchemaProvider> = Arc::new(InformationSchemaProvider::new(Arc::clone(&catalogs)));
    let columns: Arc<dyn TableProvider> = Arc::new(Columns { catalogs });
    Arc::new(OverlaySchema::new(base, [("columns".to_string(), columns)].into()))
}

/// A column type as PostgreSQL's `information_schema.columns` describes it.
struct PgType {
    data_type: String,
    udt_name: String,
    numeric_precision: Option<i32>,
    numeric_radix: Option<i32>,
    numeric_scale: Option<i32>,
    datetime_precision: Option<i32>,
}

fn pg_type(arrow: &DataType) -> PgType {
    let t = into_pg_type(arrow).unwrap_or(Type::TEXT);
    let data_type = match t.name() {
        "int2" => "smallint",
        "int4" => "integer",
        "int8" => "bigint",
        "float4" => "real",
        "float8" => "double precision",
        "bool" => "boolean",
        "varchar" => "character varying",
        "bpchar" => "character",
        "time" => "time without time zone",
        "timestamp" => "timestamp without time zone",
        "timestamptz" => "timestamp with time zone",
        n @ ("text" | "numeric" | "date" | "interval" | "bytea" | "json" | "jsonb" | "uuid" | "char" | "oid") => n,
        n if n.starts_with('_') => "ARRAY",
        _ => "USER-DEFINED",
    }
    .to_string();
    let (precision, radix, scale) = match t.name() {
        "int2" => (Some(16), Some(2), Some(0)),
        "int4" => (Some(32), Some(2), Some(0)),
        "int8" => (Some(64), Some(2), Some(0)),
        "float4" => (Some(24), Some(2), None),
        "float8" => (Some(53), Some(2), None),
        "numeric" => match arrow {
            DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => {
                (Some(i32::from(*p)), Some(10), Some(i32::from(*s)))
            }
            _ => (None, Some(10), None),
        },
        _ => (None, None, None),
    };
    let datetime_precision = match t.name() {
        "date" => Some(0),
        "time" | "timestamp" | "timestamptz" | "interval" => Some(6),
        _ => None,
    };
    PgType {
        data_type,
        udt_name: t.name().to_string(),
        numeric_precision: precision,
        numeric_radix: radix,
        numeric_scale: scale,
        datetime_precision,
    }
}

/// `information_schema.columns`, built when it is scanned.
#[derive(Debug)]
struct Columns {
    catalogs: Arc<dyn CatalogProviderList>,
}

fn columns_schema() -> SchemaRef {
    let text = |n: &str, nullable: bool| Field::new(n, DataType::Utf8, nullable);
    let number = |n: &str| Field::new(n, DataType::Int32, true);
    Arc::new(Schema::new(vec![
        text("table_catalog", false),
        text("table_schema", false),
        text("table_name", false),
        text("column_name", false),
        Field::new("ordinal_position", DataType::Int32, false),
        text("column_default", true),
        text("is_nullable", false),
        text("data_type", false),
        number("character_maximum_length"),
        number("character_octet_length"),
        number("numeric_precision"),
        number("numeric_precision_radix"),
        number("numeric_scale"),
        number("datetime_precision"),
        text("interval_type", true),
        text("udt_catalog", false),
        text("udt_schema", false),
        text("udt_name", false),
        text("is_identity", false),
        text("is_generated", false),
        text("is_updatable", false),
    ]))
}

/// One column of one table, as `columns` lists it.
struct ColumnRow {
    catalog: String,
    schema: String,
    table: String,
    column: String,
    position: i32,
    nullable: bool,
    pg: PgType,
}

impl Columns {
    async fn batch(&self) -> Result<RecordBatch> {
        let mut rows = Vec::new();
        for catalog_name in self.catalogs.catalog_names() {
            let Some(catalog) = self.catalogs.catalog(&catalog_name) else { continue };
            for schema_name in catalog.schema_names() {
                let Some(schema) = catalog.schema(&schema_name) else { continue };
                for table_name in schema.table_names() {
                    let Some(table) = schema.table(&table_name).await? else { continue };
                    for (i, field) in table.schema().fields().iter().enumerate() {
                        rows.push(ColumnRow {
                            catalog: catalog_name.clone(),
                            schema: schema_name.clone(),
                            table: table_name.clone(),
                            column: field.name().clone(),
                            position: i32::try_from(i + 1).unwrap_or(i32::MAX),
                            nullable: field.is_nullable(),
                            pg: pg_type(field.data_type()),
                        });
                    }
                }
            }
        }
        let text = |f: &dyn Fn(&ColumnRow) -> Option<&str>| -> ArrayRef {
            Arc::new(rows.iter().map(f).collect::<StringArray>())
        };
        let number = |f: &dyn Fn(&ColumnRow) -> Option<i32>| -> ArrayRef {
            Arc::new(rows.iter().map(f).collect::<Int32Array>())
        };
        // In `columns_schema`'s order.
        let columns = vec![
            text(&|r| Some(&r.catalog)),
            text(&|r| Some(&r.schema)),
            text(&|r| Some(&r.table)),
            text(&|r| Some(&r.column)),
            number(&|r| Some(r.position)),
            text(&|_| None),
            text(&|r| Some(if r.nullable { "YES" } else { "NO" })),
            text(&|r| Some(&r.pg.data_type)),
            number(&|_| None),
            number(&|_| None),
            number(&|r| r.pg.numeric_precision),
            number(&|r| r.pg.numeric_radix),
            number(&|r| r.pg.numeric_scale),
            number(&|r| r.pg.datetime_precision),
            text(&|_| None),
            text(&|r| Some(&r.catalog)),
            text(&|_| Some("pg_catalog")),
            text(&|r| Some(&r.pg.udt_name)),
            text(&|_| Some("NO")),
            text(&|_| Some("NEVER")),
            text(&|_| Some("NO")),
        ];
        Ok(RecordBatch::try_new(columns_schema(), columns)?)
    }
}

#[async_trait]
impl TableProvider for Columns {
    fn schema(&self) -> SchemaRef {
        columns_schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let batch = self.batch().await?;
        Ok(MemorySourceConfig::try_new_exec(&[vec![batch]], columns_schema(), projection.cloned())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::TimeUnit;

    #[test]
    fn types_are_named_as_postgresql_names_them() {
        let name = |t: DataType| pg_type(&t).data_type;
        assert_eq!(name(DataType::Utf8), "text");
        assert_eq!(name(DataType::Utf8View), "text");
        assert_eq!(name(DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))), "timestamp with time zone");
        assert_eq!(name(DataType::Timestamp(TimeUnit::Microsecond, None)), "timestamp without time zone");
        assert_eq!(name(DataType::Float64), "double precision");
        assert_eq!(name(DataType::Int32), "integer");
        assert_eq!(name(DataType::Boolean), "boolean");
        assert_eq!(name(DataType::Date32), "date");
        assert_eq!(pg_type(&DataType::Float64).numeric_precision, Some(53));
        assert_eq!(pg_type(&DataType::Utf8).udt_name, "text");
    }
}
