//! `GET /api/v2/nws_forecasts.php` (spec 4.4, 2.8): the versions of the api.weather.gov
//! hourly forecast for one Local Standard Time date, as 25 hourly slots. US stations only
//! (the NWS forecasts nowhere else); an international station is a 400, as on
//! precipitation.php. The versions come from the lake through `api::nws_cache`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::Duration;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::time::{fmt_iso_utc, standard_date};

/// Dates served: at most this many days ahead / back (spec 8).
pub const MAX_AHEAD_DAYS: i64 = 2;
pub const MAX_BACK_DAYS: i64 = 365;

/// Query of `GET /api/v2/nws_forecasts.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NwsForecastsQuery {
    /// Station code
    #[param(required = true, value_type = String)]
    pub station_code: Option<String>,
    /// YYYY-MM-DD (Local Standard Time); default today; at most 2 days ahead and 365 back
    #[param(value_type = Option<String>, format = Date)]
    pub date: Option<String>,
    /// `latest` (default) or `history`
    #[param(value_type = Option<crate::api::schemas::param::NwsMode>)]
    pub mode: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v2/nws_forecasts.php",
    tag = "forecasts",
    params(NwsForecastsQuery),
    responses(
        (status = 200, description = "object 2.8: latest has version/hourly_temps/high/low (null when no version); history has total_versions and forecasts", body = Object),
        (status = 400, description = "invalid parameter, date out of range, or not a US station (NWS forecasts exist for US stations only)", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    QueryParams(q): QueryParams<NwsForecastsQuery>,
) -> ApiResult<Response> {
    let station = params::station("station_code", &q.station_code)?;
    if !station.is_us() {
        // Refused like precipitation.php: an answer of nulls would look like "no forecast yet".
        return Err(ApiError::bad_request(
            format!("{} is not a US station", station.code),
            "NWS hourly forecasts (api.weather.gov) exist for US stations only: the catalog's K stations",
        ));
    }
    let mode = params::choice("mode", &q.mode, &["latest", "history"])?.unwrap_or("latest");
    let now = state.now();
    let today = standard_date(station.timezone, now);
    let date = params::date("date", &q.date)?.unwrap_or(today);
    if date > today + Duration::days(MAX_AHEAD_DAYS) || date < today - Duration::days(MAX_BACK_DAYS) {
        return Err(ApiError::bad_request(
            format!("date {date} is out of range"),
            format!(
                "date must be between {} and {} (at most {MAX_AHEAD_DAYS} days ahead and {MAX_BACK_DAYS} days back of today, {today}, in Local Standard Time)",
                today - Duration::days(MAX_BACK_DAYS),
                today + Duration::days(MAX_AHEAD_DAYS)
            ),
        ));
    }
    let versions = state.nws_versions.get(&state.live, station, date).await?;
    let offset_min = station.standard_offset_on(date).local_minus_utc() / 60;
    let mut o = serde_json::json!({
        "station_code": station.code,
        "station_name": station.name,
        "timezone": station.timezone.name(),
        "timezone_offset_hours": if offset_min % 60 == 0 { serde_json::json!(offset_min / 60) } else { serde_json::json!(f64::from(offset_min) / 60.0) },
        "forecast_date": date.to_string(),
        "timestamp": fmt_iso_utc(now),
        "units": "fahrenheit",
        "time_convention": "local_standard_time",
    });
    let map = o.as_object_mut().ok_or_else(|| ApiError::internal("json object"))?;
    if mode == "history" {
        map.insert("total_versions".into(), versions.len().into());
        map.insert("forecasts".into(), serde_json::to_value(versions.as_slice()).unwrap_or_default());
    } else {
        let last = versions.last();
        map.insert("version".into(), last.map(|v| v.version).into());
        map.insert("generated_at".into(), last.map(|v| v.generated_at.clone()).into());
        map.insert(
            "hourly_temps".into(),
            serde_json::to_value(last.map(|v| v.hourly_temps.clone()).unwrap_or_else(|| vec![None; 25]))
                .unwrap_or_default(),
        );
        map.insert("high".into(), last.and_then(|v| v.high).into());
        map.insert("low".into(), last.and_then(|v| v.low).into());
    }
    Ok(Json(o).into_response())
}
