//! `GET /api/v1/forecasts.php` (spec part 9): raw rows with the v1 columns.

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use chrono::Duration;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::json_stream::stream_array;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::api::v2::forecasts::{known_location, location_param, model_param};
use crate::lake::bound_sql::Bindings;

/// Query of `GET /api/v1/forecasts.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ForecastsV1Query {
    /// Station code
    #[param(required = true, value_type = String)]
    pub location_name: Option<String>,
    /// ISO 8601
    #[param(required = true, value_type = String, format = DateTime)]
    pub start_valid_time: Option<String>,
    /// ISO 8601, not before start_valid_time
    #[param(required = true, value_type = String, format = DateTime)]
    pub end_valid_time: Option<String>,
    /// One of the 18 model names
    #[param(value_type = Option<String>)]
    pub model: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v1/forecasts.php",
    tag = "v1",
    operation_id = "getForecastsV1",
    summary = "Legacy v1: raw forecast rows of a window, with the v1 columns",
    description = "The v1 interface (spec part 9): the rows of every run intersecting `[start_valid_time, \
                   end_valid_time]` (both required), optionally of one `model`, with the eight v1 columns. \
                   `location_name` must be a catalog station or a location with recent forecasts; anything else \
                   is a 400. New integrations use /api/v2/forecasts.php.",
    params(ForecastsV1Query),
    responses(
        (status = 200, description = "array of rows {model, location_name, run_time, valid_time, forecast_hour, temperature_k, temperature_f, temperature_c}; [] when empty", body = [crate::api::schemas::ForecastRowV1]),
        (status = 400, description = "invalid or missing parameter, unknown station, or a parameter given twice", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    as_of: crate::api::as_of::AsOf,
    QueryParams(q): QueryParams<ForecastsV1Query>,
) -> ApiResult<Response> {
    as_of.unsupported("the v1 API (as_of is a v2 parameter)")?;
    let loc = location_param(&q.location_name)?;
    let model = model_param(&q.model)?;
    let fmt = "ISO 8601, e.g. 2026-03-08T00:00:00Z";
    let s = params::time("start_valid_time", &q.start_valid_time)?
        .ok_or_else(|| ApiError::missing("start_valid_time", fmt))?;
    let e =
        params::time("end_valid_time", &q.end_valid_time)?.ok_or_else(|| ApiError::missing("end_valid_time", fmt))?;
    if e < s {
        return Err(ApiError::bad_request("end_valid_time is before start_valid_time", fmt));
    }
    let loc = known_location(&state, loc).await?;
    let mut b = Bindings::new();
    let mut filters = vec![format!("location_name = {}", b.str(&loc))];
    if let Some(m) = model {
        filters.push(format!("model = {}", b.str(m)));
    }
    filters.push(format!("valid_time >= {} AND valid_time <= {}", b.time(s), b.time(e)));
    filters.push(crate::lake::schema::CURRENT.to_string());
    filters.push(format!(
        "run_date >= {} AND run_date <= {}",
        b.partition_date((s - Duration::days(17)).date_naive()),
        b.partition_date(e.date_naive())
    ));
    let sql = format!(
        "SELECT model, location_name, run_time, valid_time, forecast_hour, temperature_k, temperature_f, temperature_c \
         FROM forecasts WHERE {} ORDER BY model, run_time, valid_time",
        filters.join(" AND ")
    );
    stream_array(b.frame(&state.live.ctx, &sql).await?).await
}
