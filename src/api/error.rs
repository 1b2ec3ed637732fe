//! The one JSON error every handler returns: `{"error": "...", "details": "..."}` with the
//! status of spec 7. Unknown routes, wrong methods, panics and rejected extractors all
//! end up here, so a client never sees an HTML page or an empty body.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::json::Json;

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
    pub fn with_headers(mut self, headers: Vec<(&'static str, String)>) -> Self {
        self.headers = headers;
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, Json(self.body)).into_response();
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

/// Handler result type.
pub type ApiResult<T> = Result<T, ApiError>;
