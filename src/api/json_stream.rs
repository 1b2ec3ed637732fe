//! Query results as a streamed JSON array: batches are encoded as they arrive, so a large
//! forecast window never sits in memory as one document.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::json::writer::{LineDelimited, WriterBuilder};
use datafusion::dataframe::DataFrame;
use futures::StreamExt;

use super::error::ApiError;

/// Encodes one batch as comma-separated JSON objects (explicit nulls, as spec 2.5 says
/// nullable fields are null, not absent). Negative zero is written as zero, as in every
/// other API body (see [`super::json`]).
pub fn batch_objects(batch: &RecordBatch) -> Result<Vec<u8>, ApiError> {
    let batch = without_negative_zero(batch).map_err(ApiError::internal)?;
    let mut buf = Vec::with_capacity(batch.num_rows() * 256);
    {
        let mut w = WriterBuilder::new().with_explicit_nulls(true).build::<_, LineDelimited>(&mut buf);
        w.write(&batch).map_err(ApiError::internal)?;
        w.finish().map_err(ApiError::internal)?;
    }
    // Lines → comma-separated objects.
    let mut out = Vec::with_capacity(buf.len());
    for (i, line) in buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(line);
    }
    Ok(out)
}

/// The batch with `-0.0` replaced by `0.0` in its float columns (columns without one are
/// shared, not copied).
fn without_negative_zero(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
    let mut changed = false;
    for c in batch.columns() {
        let fixed: Option<ArrayRef> = match c.data_type() {
            DataType::Float64 => {
                let a = c.as_primitive::<Float64Type>();
                let found = a.values().iter().any(|v| *v == 0.0 && v.is_sign_negative());
                found.then(|| Arc::new(a.unary::<_, Float64Type>(|v| v + 0.0)) as ArrayRef)
            }
            DataType::Float32 => {
                let a = c.as_primitive::<Float32Type>();
                let found = a.values().iter().any(|v| *v == 0.0 && v.is_sign_negative());
                found.then(|| Arc::new(a.unary::<_, Float32Type>(|v| v + 0.0)) as ArrayRef)
            }
            _ => None,
        };
        changed |= fixed.is_some();
        columns.push(fixed.unwrap_or_else(|| Arc::clone(c)));
    }
    if changed {
        RecordBatch::try_new(batch.schema(), columns)
    } else {
        Ok(batch.clone())
    }
}

/// Rows per JSON chunk of [`stream_batch`].
const CHUNK_ROWS: usize = 1024;

/// Streams an in-memory batch as one JSON array, encoding 1,024 rows at a time as the
/// client reads (a large window is never one buffer).
pub fn stream_batch(batch: RecordBatch) -> Response {
    let n = batch.num_rows();
    let chunks = (0..n).step_by(CHUNK_ROWS).map(move |at| (at, batch.slice(at, CHUNK_ROWS.min(n - at))));
    let body = futures::stream::iter(chunks).map(|(at, b)| {
        let mut out = Vec::with_capacity(b.num_rows() * 640 + 2);
        out.push(if at == 0 { b'[' } else { b',' });
        out.extend_from_slice(&batch_objects(&b).map_err(|e| std::io::Error::other(e.body.error))?);
        Ok::<_, std::io::Error>(bytes::Bytes::from(out))
    });
    let body = body
        .chain(futures::stream::once(async move { Ok(bytes::Bytes::from_static(if n == 0 { b"[]" } else { b"]" })) }));
    let mut resp = Response::new(Body::from_stream(body));
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// Streams a DataFrame's rows as one JSON array.
pub async fn stream_array(df: DataFrame) -> Result<Response, ApiError> {
    let stream = df.execute_stream().await?;
    let mut first = true;
    let body = futures::stream::once(async { Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"[")) })
        .chain(stream.filter_map(move |batch| {
            let chunk = batch.map_err(ApiError::internal).and_then(|b| batch_objects(&b)).map(|objs| {
                if objs.is_empty() {
                    return None;
                }
                let mut v = Vec::with_capacity(objs.len() + 1);
                if !first {
                    v.push(b',');
                }
                first = false;
                v.extend_from_slice(&objs);
                Some(bytes::Bytes::from(v))
            });
            async move {
                match chunk {
                    Ok(Some(b)) => Some(Ok(b)),
                    Ok(None) => None,
                    // Mid-stream failure: end the body abruptly so the client sees invalid JSON
                    // rather than a silently truncated array.
                    Err(e) => Some(Err(std::io::Error::other(e.body.error))),
                }
            }
        }))
        .chain(futures::stream::once(async { Ok(bytes::Bytes::from_static(b"]")) }));
    let mut resp = Response::new(Body::from_stream(body));
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(resp)
}

#[cfg(test)]
mod stream_batch_tests {
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::*;

    async fn body_of(rows: i64) -> serde_json::Value {
        let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(0..rows))]).unwrap();
        let bytes = axum::body::to_bytes(stream_batch(batch).into_body(), 1 << 24).await.unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// Float columns never show `-0.0`; nulls and other values pass unchanged.
    #[tokio::test]
    async fn negative_zero_is_written_as_zero() {
        use datafusion::arrow::array::Float64Array;
        let schema = Arc::new(Schema::new(vec![
            Field::new("dew_point_c", DataType::Float64, true),
            Field::new("i", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Float64Array::from(vec![Some(-0.0), None, Some(-1.5), Some(0.0)])),
                Arc::new(Int64Array::from_iter_values(0..4)),
            ],
        )
        .unwrap();
        let text = String::from_utf8(batch_objects(&batch).unwrap()).unwrap();
        assert!(!text.contains("-0"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&format!("[{text}]")).unwrap();
        assert_eq!(v[0]["dew_point_c"], serde_json::json!(0.0));
        assert_eq!(v[1]["dew_point_c"], serde_json::Value::Null);
        assert_eq!(v[2]["dew_point_c"], serde_json::json!(-1.5));
    }

    /// Chunks join into one valid array, in order, whatever the row count.
    #[tokio::test]
    async fn chunked_batches_form_one_array() {
        assert_eq!(body_of(0).await, serde_json::json!([]));
        assert_eq!(body_of(1).await, serde_json::json!([{"i": 0}]));
        let v = body_of(2 * CHUNK_ROWS as i64 + 5).await;
        let items = v.as_array().unwrap();
        assert_eq!(items.len(), 2 * CHUNK_ROWS + 5);
        assert!(items.iter().enumerate().all(|(k, o)| o["i"] == k as i64));
    }
}
