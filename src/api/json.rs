//! The one JSON encoder of API bodies: [`Json`] for handlers, [`to_vec`] for anything else
//! that sends API values (the stream can share it).
//!
//! Numbers: negative zero is written as `0`. It comes from rounding small negative values
//! (`round1(-0.04)`, a bias of -0.001 rounded to hundredths, a dew point of -0.04 °C) and
//! means nothing to a client, while some parse `-0.0` as a distinct value or show it as
//! "-0". Doing it in the encoder covers every field, today's and future ones, instead of
//! each handler remembering to. Arrow-encoded rows get the same rule in
//! [`super::json_stream::batch_objects`].

use std::io;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

/// serde_json's compact output, with `-0.0` written as `0.0`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiFormatter;

impl Formatter for ApiFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        // `-0.0 + 0.0` is `+0.0`; every other value (NaN never reaches here) is unchanged.
        CompactFormatter.write_f64(writer, value + 0.0)
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        CompactFormatter.write_f32(writer, value + 0.0)
    }
}

/// Serialises `value` as API JSON.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, ApiFormatter))?;
    Ok(out)
}

/// A JSON response body written by [`to_vec`]; use it instead of `axum::Json`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        match to_vec(&self.0) {
            Ok(bytes) => {
                let mut resp = bytes.into_response();
                resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                resp
            }
            Err(e) => {
                tracing::error!(error = %e, "response did not serialise");
                let body = br#"{"error":"Internal server error","details":"the response could not be encoded"}"#;
                let mut resp = (StatusCode::INTERNAL_SERVER_ERROR, &body[..]).into_response();
                resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                resp
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_zero_is_written_as_zero() {
        let v = serde_json::json!({"a": -0.0, "b": [-0.0_f64, 0.0, -1.5, 2.25], "c": {"d": -0.0_f32}});
        let text = String::from_utf8(to_vec(&v).unwrap()).unwrap();
        assert_eq!(text, r#"{"a":0.0,"b":[0.0,0.0,-1.5,2.25],"c":{"d":0.0}}"#);
        // Typed structs go through the same path.
        #[derive(Serialize)]
        struct S {
            x: Option<f64>,
            y: f64,
        }
        let text = String::from_utf8(to_vec(&S { x: Some(-0.0), y: -0.04_f64.round() }).unwrap()).unwrap();
        assert_eq!(text, r#"{"x":0.0,"y":0.0}"#);
        assert!(!text.contains("-0"));
    }

    #[tokio::test]
    async fn responses_are_json_without_negative_zero() {
        let resp = Json(serde_json::json!({"bias": (-0.001_f64 * 100.0).round() / 100.0})).into_response();
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(resp.into_body(), 1 << 16).await.unwrap();
        assert_eq!(&body[..], br#"{"bias":0.0}"#);
    }
}
