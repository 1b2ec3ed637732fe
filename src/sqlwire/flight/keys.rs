//! Flight SQL's key metadata (`CommandGetPrimaryKeys`, `CommandGetImportedKeys`,
//! `CommandGetExportedKeys`, `CommandGetCrossReference`): the lake's tables declare no keys,
//! so each answers the empty result in the schema the Flight SQL specification gives it
//! (JDBC and ADBC clients ask while browsing a table; an error would break the browse).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

/// `CommandGetPrimaryKeys`' result schema.
pub fn primary_keys_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("catalog_name", DataType::Utf8, true),
        Field::new("db_schema_name", DataType::Utf8, true),
        Field::new("table_name", DataType::Utf8, false),
        Field::new("column_name", DataType::Utf8, false),
        Field::new("key_name", DataType::Utf8, true),
        Field::new("key_sequence", DataType::Int32, false),
    ]))
}

/// The result schema of the three foreign-key commands (imported, exported, cross
/// reference).
pub fn foreign_keys_schema() -> SchemaRef {
    let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    Arc::new(Schema::new(vec![
        text("pk_catalog_name", true),
        text("pk_db_schema_name", true),
        text("pk_table_name", false),
        text("pk_column_name", false),
        text("fk_catalog_name", true),
        text("fk_db_schema_name", true),
        text("fk_table_name", false),
        text("fk_column_name", false),
        Field::new("key_sequence", DataType::Int32, false),
        text("fk_key_name", true),
        text("pk_key_name", true),
        Field::new("update_rule", DataType::UInt8, false),
        Field::new("delete_rule", DataType::UInt8, false),
    ]))
}

/// No keys: the empty batch of `schema`.
pub fn none(schema: &SchemaRef) -> RecordBatch {
    RecordBatch::new_empty(Arc::clone(schema))
}
