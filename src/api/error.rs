//! The one JSON error every handler returns: `{"error": "...", "details": "..."}` with the
//! status of spec 7. Unknown routes, wrong methods, panics and rejected extractors all
//! end up here, so a client never sees an HTML page or an empty body (hyper's own answers
//! to requests it cannot parse are rewritten into this shape by the listener,
//! [`crate::api::listener`]).
//!
//! Messages echo what the client sent ("Unknown station: ..."), so what a client sent is
//! cut short here, where every error becomes bytes, rather than in each handler: a word
//! longer than [`MAX_ECHO_CHARS`] characters is cut there with an ellipsis, and a whole
//! field longer than [`MAX_FIELD_CHARS`] too. A 10 KB `station_code` thus costs 64
//! characters of the answer, not 10 KB, and no handler can forget to cut.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::json::Json;
use crate::write::probe::StorageFault;

/// Error body of every non-2xx response.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ErrorBody {
    /// What went wrong, in one sentence.
    pub error: String,
    /// What a valid request looks like, or more context.
    pub details: String,
}

/// An error response: status, body and optional extra headers (rate-limit headers).
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
    pub headers: Vec<(&'static str, String)>,
}

impl ApiError {
    pub fn new(status: StatusCode, error: impl Into<String>, details: impl Into<String>) -> Self {
        ApiError { status, body: ErrorBody { error: error.into(), details: details.into() }, headers: Vec::new() }
    }
    /// 400: invalid or missing parameters.
    pub fn bad_request(error: impl Into<String>, details: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, details)
    }
    /// 400 for a missing required parameter, in the wording of spec 7's sample.
    pub fn missing(param: &str, details: impl Into<String>) -> Self {
        Self::bad_request(format!("Missing required parameter: {param}"), details)
    }
    /// 401: invalid or missing API key.
    pub fn unauthorized(error: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            error,
            "send the key as 'Authorization: Bearer <API_KEY>' or 'X-API-Key: <API_KEY>'",
        )
    }
    /// 403: the key's tier may not use this endpoint (spec 5 item 6: body text Access Denied).
    pub fn forbidden(details: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "Access Denied", details)
    }
    pub fn not_found(error: impl Into<String>, details: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, error, details)
    }
    pub fn unprocessable(error: impl Into<String>, details: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, error, details)
    }
    /// 500 with the cause logged, not leaked.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error", "the error was logged; retry later")
    }
    /// 507 for a full disk, 503 for any other storage failure, each with `Retry-After`
    /// (seconds), the cause logged: the client learns to come back rather than that the
    /// server is broken, and nothing it sent was acknowledged.
    pub fn storage(fault: StorageFault, cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, ?fault, "storage failure");
        let (status, error, details, retry) = match fault {
            StorageFault::Full => (
                StatusCode::INSUFFICIENT_STORAGE,
                "The server's storage is full",
                "nothing was stored or acknowledged; retry once space is freed",
                RETRY_FULL_SECS,
            ),
            StorageFault::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "The server's storage is not available",
                "nothing was stored or acknowledged; retry shortly",
                RETRY_UNAVAILABLE_SECS,
            ),
        };
        Self::new(status, error, details).with_headers(vec![("retry-after", retry.to_string())])
    }
    /// 503 with `Retry-After`: an answer that needs the lake did not come in time.
    pub fn lake_deadline(deadline: std::time::Duration) -> Self {
        tracing::warn!(deadline_secs = deadline.as_secs_f64(), "a lake read passed its deadline");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "The lake did not answer in time",
            format!(
                "no answer within {} s; retry shortly (GET /healthz says whether the lake answers)",
                deadline.as_secs_f64()
            ),
        )
        .with_headers(vec![("retry-after", RETRY_UNAVAILABLE_SECS.to_string())])
    }
    pub fn with_headers(mut self, headers: Vec<(&'static str, String)>) -> Self {
        self.headers = headers;
        self
    }
}

/// `Retry-After` of a 507: freeing space takes an operator.
pub const RETRY_FULL_SECS: u64 = 60;
/// `Retry-After` of a 503 for storage that failed or answered too slowly.
pub const RETRY_UNAVAILABLE_SECS: u64 = 5;

pub use crate::echo::{cut_echoes, MAX_ECHO_CHARS, MAX_FIELD_CHARS};

impl ErrorBody {
    /// The body as it is sent: echoes cut short ([`cut_echoes`]).
    pub fn cut(&self) -> ErrorBody {
        ErrorBody { error: cut_echoes(&self.error), details: cut_echoes(&self.details) }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, Json(self.body.cut())).into_response();
        for (k, v) in self.headers {
            if let Ok(v) = HeaderValue::from_str(&v) {
                resp.headers_mut().insert(k, v);
            }
        }
        resp
    }
}

impl From<crate::lake::LakeError> for ApiError {
    fn from(e: crate::lake::LakeError) -> Self {
        ApiError::internal(e)
    }
}

impl From<datafusion::error::DataFusionError> for ApiError {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        ApiError::internal(e)
    }
}

impl From<crate::trading_day::DayError> for ApiError {
    fn from(e: crate::trading_day::DayError) -> Self {
        use crate::trading_day::DayError;
        match e {
            DayError::Future { ref today, ref station, logic, .. } => ApiError::bad_request(
                e.to_string(),
                format!("the current {} trading day of {station} is {today}", logic.as_str()),
            ),
            DayError::Lake(e) => e.into(),
        }
    }
}

/// Handler result type.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_and_long_fields_are_cut_short() {
        assert_eq!(cut_echoes("Unknown station: KNYC"), "Unknown station: KNYC");
        let long = "X".repeat(10_000);
        let cut = cut_echoes(&format!("Unknown station: {long} (see /docs)"));
        assert_eq!(cut, format!("Unknown station: {}… (see /docs)", "X".repeat(MAX_ECHO_CHARS)));
        // Characters, not bytes: a multi-byte echo is never split inside a character.
        let cut = cut_echoes(&"é".repeat(100));
        assert_eq!(cut.chars().count(), MAX_ECHO_CHARS + 1);
        let many = "ab ".repeat(1_000);
        let cut = cut_echoes(&many);
        assert_eq!(cut.chars().count(), MAX_FIELD_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[tokio::test]
    async fn the_response_carries_the_cut_body() {
        let e = ApiError::bad_request(format!("Unknown station: {}", "K".repeat(5_000)), "x");
        let resp = e.into_response();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["error"].as_str().unwrap().chars().count(), "Unknown station: ".len() + MAX_ECHO_CHARS + 1);
        assert_eq!(v["details"], "x");
    }
}
