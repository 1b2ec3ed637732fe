//! `POST /api/v2/ingest/{format}` (admin keys): the live ingest. A 2xx means the input is
//! in the write-ahead log (it survives kill -9) and in the hot state.
//!
//! A body is at most [`MAX_BODY_BYTES`] (2 MiB): one request is one WAL record and one
//! decode on the request path, so a larger input is refused with a JSON 413 before any of
//! it is logged; split it into several requests, or load files with `wxlake ingest`.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::{require_admin, Caller};
use super::error::{ApiError, ApiResult};
use super::json::Json;
use super::params::{self, QueryParams};
use super::state::AppState;
use crate::ingest::format::ALL_FORMATS;
use crate::ingest::{Format, IngestOptions};
use crate::write::{WriteError, WriteOutcome};

/// Largest ingest body accepted (the router sets it as the route's body limit).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Query of `POST /api/v2/ingest/{format}`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct IngestQuery {
    /// YYYY-MM for inputs without a year (bare METAR lines, DSM)
    #[param(value_type = Option<String>)]
    pub month: Option<String>,
    /// station for open-meteo and nws-hourly inputs
    #[param(value_type = Option<String>)]
    pub station: Option<String>,
    /// run time for open-meteo inputs
    #[param(value_type = Option<String>)]
    pub run_time: Option<String>,
}

#[utoipa::path(
    post,
    path = "/api/v2/ingest/{format}",
    tag = "ingest",
    operation_id = "ingestInput",
    summary = "Admin: ingest raw input (METAR, DSM, CLI, forecasts, ...) into the live service",
    description = "Admin keys only. The body is the raw input, in any format `wxlake ingest` reads, at most 2 MiB. \
                   A 202 means the input is fsynced in the write-ahead log and applied to the hot state (new \
                   observations go out on the push stream); it reaches the lake at the next flush. Records the \
                   service already holds are counted as duplicate, not stored again.",
    params(
        ("format" = String, Path, description = "metar, onemin, cli, dsm, forecasts, open-meteo, mos, nws-hourly, daily-forecasts"),
        IngestQuery,
    ),
    request_body(content = crate::api::schemas::RawInput, description = "the raw input, as `wxlake ingest` reads it (text or Parquet bytes; any Content-Type is read as bytes); at most 2 MiB (2,097,152 bytes) per request", content_type = "application/octet-stream"),
    responses(
        (status = 202, description = "durable in the WAL and applied to the hot state", body = crate::api::schemas::IngestOutcome),
        (status = 400, description = "unknown format, bad parameter, or nothing usable in the body", body = crate::api::error::ErrorBody),
        (status = 403, description = "the key is not an admin key", body = crate::api::error::ErrorBody),
        (status = 413, description = "the body is larger than 2 MiB (2,097,152 bytes); nothing was logged", body = crate::api::error::ErrorBody),
        (status = 503, description = "the WAL could not take the input (an I/O failure); nothing was acknowledged; see Retry-After", body = crate::api::error::ErrorBody),
        (status = 507, description = "the WAL's disk is full; nothing was acknowledged; see Retry-After", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(format): Path<String>,
    QueryParams(q): QueryParams<IngestQuery>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    let body = body.map_err(body_error)?;
    let format: Format =
        format.parse().map_err(|e: String| ApiError::bad_request(format!("Unknown format: {format}"), e))?;
    let month = match params::value(&q.month) {
        None => None,
        Some(m) => Some(
            parse_month(m).ok_or_else(|| ApiError::bad_request(format!("Invalid month: {m}"), "month is YYYY-MM"))?,
        ),
    };
    let opts = IngestOptions {
        month,
        station: params::value(&q.station).map(str::to_string),
        run_time: params::time("run_time", &q.run_time)?,
        issued: None,
    };
    if body.is_empty() {
        return Err(ApiError::bad_request("Empty body", "POST the raw input of the format as the request body"));
    }
    match state.live.ingest(format, opts, body).await {
        Ok(outcome) => Ok((StatusCode::ACCEPTED, Json::<WriteOutcome>(outcome)).into_response()),
        Err(WriteError::Unusable(errors)) => {
            let first: Vec<String> = errors.iter().take(5).map(|e| format!("line {}: {}", e.line, e.reason)).collect();
            Err(ApiError::bad_request(
                format!("No usable {format} records in the body"),
                if first.is_empty() { "the body decoded to nothing".to_string() } else { first.join("; ") },
            ))
        }
        Err(e) => Err(match e.storage_fault() {
            Some(fault) => ApiError::storage(fault, e),
            None => ApiError::internal(e),
        }),
    }
}

/// The JSON error for a body that could not be read: over the cap (413), or cut short.
fn body_error(r: BytesRejection) -> ApiError {
    if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Body too large: the ingest limit is {MAX_BODY_BYTES} bytes (2 MiB) per request"),
            "split the input into several requests of at most 2 MiB, or load files with `wxlake ingest`",
        )
    } else {
        ApiError::new(r.status(), "Could not read the request body", r.body_text())
    }
}

fn parse_month(s: &str) -> Option<(i32, u32)> {
    let (y, m) = s.split_once('-')?;
    let (y, m) = (y.parse().ok()?, m.parse().ok()?);
    (1..=12).contains(&m).then_some((y, m))
}

/// Names of every format, for error details.
pub fn format_names() -> String {
    ALL_FORMATS.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")
}
