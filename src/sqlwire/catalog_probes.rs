//! What analysts' tools ask `pg_catalog` while they connect and browse, answered as
//! PostgreSQL answers for a database with no keys, indexes, constraints, sequences,
//! functions or comments, where `datafusion-pg-catalog` has no answer or the wrong shape:
//!
//! - functions it lacks: `pg_get_serial_sequence`, `pg_get_indexdef`, `pg_get_viewdef`,
//!   `pg_get_function_result`, `obj_description`, `col_description` (NULL: nothing of
//!   that kind exists), `pg_type_is_visible` (true, as `pg_table_is_visible`),
//!   `to_regtype` (a built-in type's oid, else NULL) and `_pg_expandarray` (pgjdbc's key
//!   lookups);
//! - `pg_index` and `pg_constraint`: empty, with PostgreSQL's array columns (`indkey`,
//!   `conkey` ...) as arrays, so SQLAlchemy's `unnest(indkey)` and pgjdbc's
//!   `conkey[pos.n]` plan (the library's copies hold PostgreSQL's own system catalog
//!   rows with those columns as text);
//! - `pg_cursors`: the connection's open cursors ([`OpenCursors`], which a connection's
//!   session carries as a config extension), which psycopg reads before closing a cursor
//!   whose `DECLARE` failed;
//! - `pg_class` with `relacl` and `reloptions` (pgjdbc's privileges, SQLAlchemy's
//!   indexes), NULL as for a table with default privileges and no options.
//!
//! [`register`] puts the functions into a session and returns the tables for its
//! `pg_catalog` overlay.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, BooleanArray, Int32Builder, RecordBatch, StringArray, StructArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{MemTable, SchemaProvider, Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::{provider_as_source, ViewTable};
use datafusion::error::Result;
use datafusion::logical_expr::{
    lit, ColumnarValue, LogicalPlanBuilder, ScalarUDF, Signature, SimpleScalarUDF, TypeSignature, Volatility,
};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{col, SessionContext};
use datafusion_postgres::pgwire::api::Type;

/// A function of `arities` arguments (any types) answering NULL of `returns`.
fn null_function(name: &str, arities: &[usize], returns: DataType) -> ScalarUDF {
    let signature = Signature::one_of(arities.iter().map(|&n| TypeSignature::Any(n)).collect(), Volatility::Stable);
    let null = ScalarValue::try_from(&returns).unwrap_or(ScalarValue::Null);
    ScalarUDF::from(SimpleScalarUDF::new_with_signature(
        name,
        signature,
        returns,
        Arc::new(move |_| Ok(ColumnarValue::Scalar(null.clone()))),
    ))
}

/// The built-in types `to_regtype` knows, by their PostgreSQL and SQL names.
fn regtype(name: &str) -> Option<u32> {
    let name = name.trim().trim_start_matches("pg_catalog.").to_ascii_lowercase();
    let alias = match name.as_str() {
        "integer" | "int" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" => "float8",
        "boolean" => "bool",
        "character varying" => "varchar",
        "timestamp with time zone" => "timestamptz",
        "timestamp without time zone" | "timestamp" => "timestamp",
        "decimal" => "numeric",
        other => other,
    };
    [
        Type::BOOL,
        Type::BYTEA,
        Type::CHAR,
        Type::NAME,
        Type::INT8,
        Type::INT2,
        Type::INT4,
        Type::TEXT,
        Type::OID,
        Type::JSON,
        Type::FLOAT4,
        Type::FLOAT8,
        Type::VARCHAR,
        Type::BPCHAR,
        Type::DATE,
        Type::TIME,
        Type::TIMESTAMP,
        Type::TIMESTAMPTZ,
        Type::INTERVAL,
        Type::NUMERIC,
        Type::UUID,
        Type::JSONB,
        Type::REGTYPE,
        Type::REGCLASS,
        Type::REGPROC,
    ]
    .into_iter()
    .find(|t| t.name() == alias)
    .map(|t| t.oid())
}

/// `to_regtype(text)`: the oid of a built-in type (psycopg's type probes), NULL for any
/// other name (hstore, say, which this server does not have).
fn to_regtype() -> ScalarUDF {
    ScalarUDF::from(SimpleScalarUDF::new_with_signature(
        "to_regtype",
        Signature::exact(vec![DataType::Utf8], Volatility::Stable),
        DataType::Int32,
        Arc::new(|args| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let names = datafusion::common::cast::as_string_array(&arrays[0])?;
            let mut out = Int32Builder::with_capacity(names.len());
            for name in names.iter() {
                out.append_option(name.and_then(regtype).and_then(|oid| i32::try_from(oid).ok()));
            }
            let out: ArrayRef = Arc::new(out.finish());
            Ok(match &args[0] {
                ColumnarValue::Scalar(_) => ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?),
                ColumnarValue::Array(_) => ColumnarValue::Array(out),
            })
        }),
    ))
}

/// `_pg_expandarray(array)`: in PostgreSQL a set of `(x, n)`, each element with its
/// position; pgjdbc reads its fields (`(_pg_expandarray(i.indkey)).n`) over `pg_index`,
/// which is empty here, so it is only planned, never called on a row. Called, it gives the
/// first element with position 1 (exact for single-column keys).
fn pg_expandarray() -> ScalarUDF {
    let fields = Fields::from(vec![Field::new("x", DataType::Int16, true), Field::new("n", DataType::Int32, true)]);
    let returns = DataType::Struct(fields.clone());
    ScalarUDF::from(SimpleScalarUDF::new_with_signature(
        "_pg_expandarray",
        Signature::any(1, Volatility::Immutable),
        returns,
        Arc::new(move |args| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let rows = arrays[0].len();
            let list = datafusion::common::cast::as_list_array(&arrays[0])?;
            let mut x = datafusion::arrow::array::Int16Builder::with_capacity(rows);
            let mut n = Int32Builder::with_capacity(rows);
            for i in 0..rows {
                let first = list.is_valid(i).then(|| list.value(i)).filter(|v| !v.is_empty());
                match first {
                    Some(values) => {
                        let values = datafusion::arrow::compute::cast(&values, &DataType::Int16)?;
                        let values = datafusion::common::cast::as_int16_array(&values)?;
                        x.append_option(values.is_valid(0).then(|| values.value(0)));
                        n.append_value(1);
                    }
                    None => {
                        x.append_null();
                        n.append_null();
                    }
                }
            }
            let columns: Vec<ArrayRef> = vec![Arc::new(x.finish()), Arc::new(n.finish())];
            Ok(ColumnarValue::Array(Arc::new(StructArray::try_new(fields.clone(), columns, None)?)))
        }),
    ))
}

/// A cursor as `pg_cursors` lists it.
pub struct CursorRow {
    pub name: String,
    pub statement: String,
    pub is_holdable: bool,
    pub is_binary: bool,
    pub is_scrollable: bool,
}

/// What a session's connection lists in `pg_cursors`.
pub trait CursorList: Send + Sync {
    fn cursors(&self) -> Vec<CursorRow>;
}

/// The config extension a connection's session carries: its cursors (sessions without
/// one, Flight SQL's, list none).
pub struct OpenCursors(pub Arc<dyn CursorList>);

fn pg_cursors_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("statement", DataType::Utf8, false),
        Field::new("is_holdable", DataType::Boolean, false),
        Field::new("is_binary", DataType::Boolean, false),
        Field::new("is_scrollable", DataType::Boolean, false),
        Field::new("creation_time", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
    ]))
}

/// `pg_cursors`, read from the scanning session's [`OpenCursors`].
#[derive(Debug)]
struct PgCursors;

#[async_trait]
impl TableProvider for PgCursors {
    fn schema(&self) -> SchemaRef {
        pg_cursors_schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let rows = state.config().get_extension::<OpenCursors>().map(|c| c.0.cursors()).unwrap_or_default();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(rows.iter().map(|r| Some(r.name.as_str())).collect::<StringArray>()),
            Arc::new(rows.iter().map(|r| Some(r.statement.as_str())).collect::<StringArray>()),
            Arc::new(rows.iter().map(|r| Some(r.is_holdable)).collect::<BooleanArray>()),
            Arc::new(rows.iter().map(|r| Some(r.is_binary)).collect::<BooleanArray>()),
            Arc::new(rows.iter().map(|r| Some(r.is_scrollable)).collect::<BooleanArray>()),
            new_null_array(&DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), rows.len()),
        ];
        let batch = RecordBatch::try_new(pg_cursors_schema(), columns)?;
        Ok(MemorySourceConfig::try_new_exec(&[vec![batch]], pg_cursors_schema(), projection.cloned())?)
    }
}

/// `schema` with the named columns as arrays of their element type.
fn with_arrays(schema: &Schema, arrays: &[(&str, DataType)]) -> Schema {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match arrays.iter().find(|(n, _)| n == f.name()) {
            Some((_, element)) => Field::new(f.name(), DataType::new_list(element.clone(), true), true),
            None => f.as_ref().clone(),
        })
        .collect();
    Schema::new(fields)
}

/// An empty table of `schema`.
fn empty(schema: Schema) -> Result<Arc<dyn TableProvider>> {
    Ok(Arc::new(MemTable::try_new(Arc::new(schema), vec![vec![]])?))
}

/// The functions into `ctx`, and the tables of `pg_catalog` (the library's, `base`) that
/// replace its own.
pub async fn register(
    ctx: &SessionContext,
    base: &Arc<dyn SchemaProvider>,
) -> Result<HashMap<String, Arc<dyn TableProvider>>> {
    ctx.register_udf(null_function("pg_get_serial_sequence", &[2], DataType::Utf8));
    ctx.register_udf(null_function("pg_get_indexdef", &[1, 3], DataType::Utf8));
    ctx.register_udf(null_function("pg_get_viewdef", &[1, 2], DataType::Utf8));
    ctx.register_udf(null_function("pg_get_function_result", &[1], DataType::Utf8));
    ctx.register_udf(null_function("pg_get_function_arguments", &[1], DataType::Utf8));
    ctx.register_udf(null_function("obj_description", &[1, 2], DataType::Utf8));
    ctx.register_udf(null_function("col_description", &[2], DataType::Utf8));
    ctx.register_udf(null_function("shobj_description", &[2], DataType::Utf8));
    ctx.register_udf(ScalarUDF::from(SimpleScalarUDF::new_with_signature(
        "pg_type_is_visible",
        Signature::any(1, Volatility::Stable),
        DataType::Boolean,
        Arc::new(|_| Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))))),
    )));
    ctx.register_udf(to_regtype());
    ctx.register_udf(pg_expandarray());

    let mut tables: HashMap<String, Arc<dyn TableProvider>> = HashMap::new();
    tables.insert("pg_cursors".into(), Arc::new(PgCursors));
    let oids = DataType::Int32;
    let int2 = DataType::Int16;
    if let Some(index) = base.table("pg_index").await? {
        let arrays = [
            ("indkey", int2.clone()),
            ("indcollation", oids.clone()),
            ("indclass", oids.clone()),
            ("indoption", int2.clone()),
        ];
        tables.insert("pg_index".into(), empty(with_arrays(&index.schema(), &arrays))?);
    }
    if let Some(constraint) = base.table("pg_constraint").await? {
        let arrays = [
            ("conkey", int2.clone()),
            ("confkey", int2.clone()),
            ("conpfeqop", oids.clone()),
            ("conppeqop", oids.clone()),
            ("conffeqop", oids.clone()),
            ("confdelsetcols", int2.clone()),
            ("conexclop", oids.clone()),
        ];
        tables.insert("pg_constraint".into(), empty(with_arrays(&constraint.schema(), &arrays))?);
    }
    if let Some(class) = base.table("pg_class").await? {
        let schema = class.schema();
        let mut columns: Vec<datafusion::logical_expr::Expr> =
            schema.fields().iter().map(|f| col(datafusion::common::Column::from_name(f.name()))).collect();
        for extra in ["relacl", "reloptions"] {
            if schema.field_with_name(extra).is_err() {
                let null =
                    ScalarValue::try_from_array(&new_null_array(&DataType::new_list(DataType::Utf8, true), 1), 0)?;
                columns.push(lit(null).alias(extra));
            }
        }
        let plan = LogicalPlanBuilder::scan("pg_class", provider_as_source(class), None)?.project(columns)?.build()?;
        tables.insert("pg_class".into(), Arc::new(ViewTable::new(plan, None)));
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_regtype_knows_sql_and_postgresql_names_and_nothing_else() {
        assert_eq!(regtype("integer"), Some(Type::INT4.oid()));
        assert_eq!(regtype("pg_catalog.int4"), Some(Type::INT4.oid()));
        assert_eq!(regtype("timestamp with time zone"), Some(Type::TIMESTAMPTZ.oid()));
        assert_eq!(regtype("hstore"), None);
    }
}
