//! `GET /api/v1/observations.php` (spec part 9): latest, svc_high (no low, logic chosen
//! by station type) and history, with v1 field names.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::auth::Caller;
use crate::api::error::ApiResult;
use crate::api::json::Json;
use crate::api::observation_json::ObservationV1;
use crate::api::observation_json::SvcHigh;
pub use crate::api::observation_json::SvcHighV1;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::api::v2::observations::{history, history_range, latest_observation, no_observation, ObservationMode};
use crate::catalog::Station;
use crate::extremes::Logic;
use crate::trading_day;

/// v1 picks the logic by station type: US stations settle on the national climate report
/// (nws, "standard" time), international stations on the civil-day history (wu).
pub fn v1_logic(station: &Station) -> (Logic, &'static str) {
    if station.is_us() {
        (Logic::Nws, "standard")
    } else {
        (Logic::Wu, "civil")
    }
}

/// Query of `GET /api/v1/observations.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ObservationsV1Query {
    /// Station code
    #[param(required = true, value_type = String)]
    pub station_code: Option<String>,
    /// `latest`, `svc_high`, or `history` (the default)
    #[param(value_type = Option<ObservationMode>)]
    pub mode: Option<String>,
    /// history, required: ISO 8601 UTC
    #[param(value_type = Option<String>, format = DateTime)]
    pub start_time: Option<String>,
    /// history, required: ISO 8601 UTC, after start_time and at most 24 h after it
    #[param(value_type = Option<String>, format = DateTime)]
    pub end_time: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v1/observations.php",
    tag = "v1",
    operation_id = "getObservationsV1",
    summary = "Legacy v1: latest observation, day high or history, with v1 field names",
    description = "The v1 interface (spec part 9), kept for existing clients: `mode=latest`, `mode=svc_high` (the \
                   day high only; the logic follows the station type: `standard` (nws) for US stations, `civil` \
                   (wu) otherwise) and history (`start_time`/`end_time`, at most 24 hours). New integrations use \
                   /api/v2/observations.php.",
    params(ObservationsV1Query),
    responses(
        (status = 200, description = "latest: one v1 observation; svc_high: the day high (SvcHighV1); history: array of v1 observations, oldest first", body = crate::api::schemas::ObservationsV1Body),
        (status = 404, description = "no observation for the station (latest)", body = crate::api::error::ErrorBody),
        (status = 400, description = "invalid or missing parameter, unknown station, or a parameter given twice", body = crate::api::error::ErrorBody),
        (status = 401, description = "invalid or missing API key", body = crate::api::error::ErrorBody),
        (status = 429, description = "rate limit exceeded (v1 limits)", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    as_of: crate::api::as_of::AsOf,
    QueryParams(q): QueryParams<ObservationsV1Query>,
) -> ApiResult<Response> {
    as_of.unsupported("the v1 API (as_of is a v2 parameter)")?;
    let station = params::station("station_code", &q.station_code)?;
    match params::choice::<ObservationMode>("mode", &q.mode)? {
        Some(ObservationMode::Latest) => {
            let (m, r) = latest_observation(&state, station).await?.ok_or_else(|| no_observation(station))?;
            Ok(Json(ObservationV1::new(&m, station, r.as_ref_pair())).into_response())
        }
        Some(ObservationMode::SvcHigh) => {
            let (logic, label) = v1_logic(station);
            let s = SvcHigh::from(&trading_day::extremes(&state.live, station, logic, None).await?);
            Ok(Json(SvcHighV1 {
                station_code: s.station_code,
                date: s.date,
                svc_high: s.svc_high,
                time_of_high_utc: s.time_of_high_utc,
                calculation_logic: label.to_string(),
            })
            .into_response())
        }
        Some(ObservationMode::History) | None => {
            let (start, end) = history_range(&q.start_time, &q.end_time)?;
            let obs = history(&state, station, start, end).await?;
            let out: Vec<ObservationV1> =
                obs.iter().map(|(m, r)| ObservationV1::new(m, station, r.as_ref_pair())).collect();
            Ok(Json(out).into_response())
        }
    }
}
