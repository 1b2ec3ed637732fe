//! `GET /api/v2/nws_forecasts.php` (spec 4.4, 2.8): the versions of the api.weather.gov
//! hourly forecast for one Local Standard Time date, as 25 hourly slots. US stations only
//! (the NWS forecasts nowhere else); an international station is a 400, as on
//! precipitation.php. The versions come from the lake through `api::nws_cache`.
//!
//! Only US stations are served, and every US zone's standard offset is a whole number of
//! hours: `timezone_offset_hours` is an integer, as spec 2.8 types it.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::Duration;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::as_of::{AsOf, AsOfQuery};
use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::nws_cache::NwsVersion;
use crate::api::params::{self, ClosedSet, QueryParams};
use crate::api::state::AppState;
use crate::time::{fmt_iso_utc, standard_date};

/// Dates served: at most this many days ahead / back (spec 8).
pub const MAX_AHEAD_DAYS: i64 = 2;
pub const MAX_BACK_DAYS: i64 = 365;

/// `mode` of the NWS forecasts.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NwsMode {
    Latest,
    History,
}

impl ClosedSet for NwsMode {}

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
    #[param(value_type = Option<NwsMode>)]
    pub mode: Option<String>,
}

/// What both modes answer about the station and date (spec 2.8).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct NwsForecastDay {
    pub station_code: String,
    pub station_name: String,
    /// IANA zone.
    pub timezone: String,
    /// The fixed UTC offset of Local Standard Time, in hours (US stations: whole hours).
    pub timezone_offset_hours: i32,
    /// The date, `YYYY-MM-DD` in Local Standard Time.
    pub forecast_date: String,
    /// Response time, ISO 8601 UTC.
    pub timestamp: String,
    /// Always `fahrenheit`.
    pub units: String,
    /// Always `local_standard_time`.
    pub time_convention: String,
}

/// `mode=latest` (the default): the date's most recent version; every version field is
/// null (and the 25 slots too) while the date has none.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct NwsForecastLatest {
    #[serde(flatten)]
    pub day: NwsForecastDay,
    /// The version number, 1 for the date's first.
    pub version: Option<usize>,
    /// When api.weather.gov generated it, ISO 8601 UTC.
    pub generated_at: Option<String>,
    /// 25 slots: index 0 = midnight Local Standard Time … 24 = the next midnight, °F; null
    /// for hours already past when the version was issued.
    pub hourly_temps: Vec<Option<i64>>,
    /// Largest non-null slot.
    pub high: Option<i64>,
    /// Smallest non-null slot.
    pub low: Option<i64>,
}

/// `mode=history`: every version of the date, oldest first.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct NwsForecastHistory {
    #[serde(flatten)]
    pub day: NwsForecastDay,
    pub total_versions: usize,
    pub forecasts: Vec<NwsVersion>,
}

/// 200 body of `GET /api/v2/nws_forecasts.php`: the shape depends on `mode`.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(untagged)]
pub enum NwsForecasts {
    Latest(NwsForecastLatest),
    History(NwsForecastHistory),
}

#[utoipa::path(
    get,
    path = "/api/v2/nws_forecasts.php",
    tag = "forecasts",
    operation_id = "getNwsForecasts",
    summary = "Beta: versions of the NWS hourly temperature forecast for a US station's date",
    description = "The api.weather.gov hourly forecast as 25 hourly slots of one Local Standard Time date (no \
                   daylight-saving shift: in summer the day runs 1 AM to 1 AM civil time). A version that repeats \
                   the previous one is not new. `mode=latest` (default): the most recent version; `mode=history`: \
                   every version. `date`: default today, at most 2 days ahead and 365 back. US stations only: an \
                   international station is a 400.",
    params(NwsForecastsQuery, AsOfQuery),
    responses(
        (status = 200, description = "object 2.8: latest has version/hourly_temps/high/low (null when no version); history has total_versions and forecasts", body = NwsForecasts),
        (status = 400, description = "invalid parameter, unknown station, date out of range, not a US station (NWS forecasts exist for US stations only), or a parameter given twice", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    as_of: AsOf,
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
    let mode = params::choice("mode", &q.mode)?.unwrap_or(NwsMode::Latest);
    let now = state.now();
    // "today" is the asked moment's: the date range is judged as it was then.
    let today = standard_date(station.timezone, as_of.now(&state));
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
    let stored = state.nws_versions.get(&state.live, station, date).await?;
    let as_of_versions;
    let versions = match as_of.0 {
        None => &stored.current,
        Some(t) => {
            as_of_versions = stored.versions(Some(t));
            &as_of_versions
        }
    };
    let day = NwsForecastDay {
        station_code: station.code.clone(),
        station_name: station.name.clone(),
        timezone: station.timezone.name().to_string(),
        timezone_offset_hours: station.standard_offset_on(date).local_minus_utc() / 3600,
        forecast_date: date.to_string(),
        timestamp: fmt_iso_utc(now),
        units: "fahrenheit".to_string(),
        time_convention: "local_standard_time".to_string(),
    };
    let body = if mode == NwsMode::History {
        NwsForecasts::History(NwsForecastHistory { day, total_versions: versions.len(), forecasts: versions.to_vec() })
    } else {
        let last = versions.last();
        NwsForecasts::Latest(NwsForecastLatest {
            day,
            version: last.map(|v| v.version),
            generated_at: last.map(|v| v.generated_at.clone()),
            hourly_temps: last.map_or_else(|| vec![None; 25], |v| v.hourly_temps.clone()),
            high: last.and_then(|v| v.high),
            low: last.and_then(|v| v.low),
        })
    };
    Ok(as_of.echo(Json(body).into_response()))
}
