//! `GET /api/v2/status` (admin keys): the feeds' and stations' health as JSON (see
//! [`crate::api::health`]): per source its counters, last success and error and whether
//! it is late; per station the age of its newest reading and whether it is down.

use axum::extract::State;
use axum::Extension;

use crate::api::auth::{require_admin_for, Caller};
use crate::api::error::ApiResult;
use crate::api::health::{health, Health};
use crate::api::json::Json;
use crate::api::state::AppState;

#[utoipa::path(
    get,
    path = "/api/v2/status",
    tag = "operations",
    operation_id = "getStatus",
    summary = "Admin: the feeds' and stations' health as JSON",
    description = "Admin keys only. Per source: requests, polls, errors by kind, bytes, rows stored and duplicate, \
                   last success and error, and whether it is late (no successful poll for more than 3 intervals); \
                   per station: the age of its newest reading and whether it is down. `GET /metrics` has the same \
                   figures for Prometheus.",
    responses(
        (status = 200, description = "per source: requests, errors by kind, bytes, rows stored, last success and error, late; per station: age of the newest reading, down", body = Health),
        (status = 403, description = "the key is not an admin key", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> ApiResult<Json<Health>> {
    require_admin_for(&caller, "the status endpoint")?;
    Ok(Json(health(&state)))
}
