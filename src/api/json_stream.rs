//! Query results as a streamed JSON array: batches are encoded as they arrive, so a large
//! forecast window never sits in memory as one document.

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::json::writer::{LineDelimited, WriterBuilder};
use datafusion::dataframe::DataFrame;
use futures::StreamExt;

use super::error::ApiError;

/// Encodes one batch as comma-separated JSON objects (explicit nulls, as spec 2.5 says
/// nullable fields are null, not absent).
pub fn batch_objects(batch: &RecordBatch) -> Result<Vec<u8>, ApiError> {
    let mut buf = Vec::with_capacity(batch.num_rows() * 256);
    {
        let mut w = WriterBuilder::new().with_explicit_nulls(true).build::<_, LineDelimited>(&mut buf);
        w.write(batch).map_err(ApiError::internal)?;
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
