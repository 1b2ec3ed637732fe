//! What Flight SQL clients receive: view types as their plain forms (ADBC, JDBC and older
//! pyarrow fail on `Utf8View`/`BinaryView`), DataFusion's errors as gRPC statuses, and a
//! prepared statement's parameters as a schema and as values.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::logical_expr::LogicalPlan;
use tonic::Status;

use crate::sqlwire::error::WireError;

/// The type a client receives for `t`.
fn client_type(t: &DataType) -> DataType {
    match t {
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        other => other.clone(),
    }
}

/// `schema` with view types replaced ([`client_type`]).
pub fn client_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> =
        schema.fields().iter().map(|f| f.as_ref().clone().with_data_type(client_type(f.data_type()))).collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` cast to `schema` (from [`client_schema`]); columns of unchanged type are shared.
pub fn to_client(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
    if batch.schema().fields().iter().zip(schema.fields()).all(|(a, b)| a.data_type() == b.data_type()) {
        return batch.with_schema(Arc::clone(schema));
    }
    let cols = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| if c.data_type() == f.data_type() { Ok(Arc::clone(c)) } else { cast(c, f.data_type()) })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(Arc::clone(schema), cols)
}

/// A refusal or failure as the gRPC status a client reports.
pub fn status(e: WireError) -> Status {
    let msg = e.to_string();
    match e {
        WireError::MissingKey | WireError::InvalidKey => Status::unauthenticated(msg),
        WireError::Tier(_) | WireError::ReadOnly(_) => Status::permission_denied(msg),
        WireError::RateLimited(_) | WireError::Busy(_) | WireError::Memory { .. } => Status::resource_exhausted(msg),
        WireError::Timeout(_) => Status::deadline_exceeded(msg),
        WireError::Cancelled => Status::cancelled(msg),
        WireError::Engine(_) => Status::invalid_argument(msg),
    }
}

/// The parameters of a plan (`$1`, `$2` ...) as a schema, in order.
pub fn parameter_schema(plan: &LogicalPlan) -> Result<Schema, WireError> {
    let types = plan.get_parameter_types()?;
    let mut named: Vec<(usize, String, DataType)> = types
        .into_iter()
        .map(|(name, t)| {
            let n = name.trim_start_matches('$').parse::<usize>().unwrap_or(usize::MAX);
            (n, name, t.unwrap_or(DataType::Null))
        })
        .collect();
    named.sort();
    Ok(Schema::new(named.into_iter().map(|(_, name, t)| Field::new(name, client_type(&t), true)).collect::<Vec<_>>()))
}

/// The first row of a parameter batch as positional values.
pub fn parameter_values(batch: &RecordBatch) -> Result<ParamValues, WireError> {
    if batch.num_rows() == 0 {
        return Ok(ParamValues::List(Vec::new()));
    }
    let values = batch
        .columns()
        .iter()
        .map(|c| ScalarValue::try_from_array(c, 0).map(Into::into))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ParamValues::List(values))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int32Array, StringViewArray};

    use super::*;

    #[test]
    fn view_strings_reach_clients_as_utf8() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Utf8View, true),
            Field::new("n", DataType::Int32, false),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(StringViewArray::from(vec![Some("KNYC"), None])), Arc::new(Int32Array::from(vec![1, 2]))],
        )
        .unwrap();
        let client = client_schema(&schema);
        assert_eq!(client.field(0).data_type(), &DataType::Utf8);
        let out = to_client(batch, &client).unwrap();
        assert_eq!(out.column(0).data_type(), &DataType::Utf8);
        assert_eq!(out.num_rows(), 2);
    }
}
