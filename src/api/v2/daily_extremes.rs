//! `GET /api/v2/daily_extremes.php` (beyond the spec): the trading-day high/low of every
//! day in a range, computed by the same engine as `svc_high`.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::Duration;

use super::observations::{logic_param, svc_high, SvcHigh};
use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::params::Params;
use crate::api::AppState;

/// Longest range per request.
pub const MAX_DAYS: i64 = 31;

#[utoipa::path(
    get,
    path = "/api/v2/daily_extremes.php",
    tag = "observations",
    params(
        ("station_code" = String, Query, description = "Station code"),
        ("start_date" = String, Query, description = "First trading day YYYY-MM-DD"),
        ("end_date" = String, Query, description = "Last trading day YYYY-MM-DD (at most 31 days after start_date)"),
        ("logic" = String, Query, description = "`nws` or `wu`"),
    ),
    responses(
        (status = 200, description = "one SvcHigh object per day", body = [SvcHigh]),
        (status = 400, description = "invalid or missing parameters", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> ApiResult<Response> {
    let p = Params(q);
    let station = p.station("station_code")?;
    let logic = logic_param(&p)?;
    let start = p.date("start_date")?.ok_or_else(|| ApiError::missing("start_date", "YYYY-MM-DD"))?;
    let end = p.date("end_date")?.ok_or_else(|| ApiError::missing("end_date", "YYYY-MM-DD"))?;
    if end < start || end - start > Duration::days(MAX_DAYS - 1) {
        return Err(ApiError::bad_request(
            "Invalid date range",
            format!("end_date must be on or after start_date and at most {MAX_DAYS} days in all"),
        ));
    }
    let today = crate::time::local_date(station.timezone, logic.clock(), state.now());
    let mut out = Vec::new();
    let mut d = start;
    while d <= end.min(today) {
        out.push(svc_high(&state, station, logic, Some(d)).await?);
        d += Duration::days(1);
    }
    Ok(Json(out).into_response())
}
