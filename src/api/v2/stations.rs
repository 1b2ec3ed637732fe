//! `GET /api/v2/stations.php`: the catalog stations with, for each, its trading days under
//! both logics, its latest observation and its `svc_high` answers: what a board of all
//! stations (the dashboard's overview) or the head of one station's day view shows.
//!
//! Each value is computed by the functions that answer `observations.php` (`mode=latest`
//! and `mode=svc_high`), so it equals what that endpoint answers at the same instant; one
//! request instead of two or three per station keeps a 70-station board inside the
//! Professional tier's per-minute limit.
//!
//! `include=latest_runs` adds, per station, the latest run of every model that covers it:
//! the list the day view overlays and polls to notice a new run, from the index of
//! [`latest_runs`](crate::api::latest_runs) over the run dates `forecasts.php?run=latest`
//! answers from (so the two name the same run).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::observations::{latest_observation, latest_observation_as_of};
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::observation_json::{ObservationV2, SvcHigh};
use crate::api::params::{self, ClosedSet, QueryParams};
use crate::api::state::AppState;
use crate::catalog::{Catalog, Station};
use crate::extremes::Logic;
use crate::models::MODELS;
use crate::time::{day_window, fmt_iso_utc, fmt_utc, local_date};

/// Stations answered concurrently (most answers come from memory; a station without recent
/// observations waits for the lake once per cache period).
const CONCURRENCY: usize = 8;

/// `include` of the stations: the optional sections. The document keeps it a plain string:
/// an enum there would change the signature of clients generated from it.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StationsInclude {
    LatestRuns,
}

impl ClosedSet for StationsInclude {}

/// Query of `GET /api/v2/stations.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StationsQuery {
    /// Comma-separated catalog station codes; omitted means every catalog station
    #[param(value_type = Option<String>)]
    pub station_code: Option<String>,
    /// A trading day YYYY-MM-DD (default: today). Each logic answers its own day of that
    /// date, or its current day when that date has not begun under it yet
    #[param(value_type = Option<String>, format = Date)]
    pub date: Option<String>,
    /// `latest_runs`: add each covering model's latest run (the run `forecasts.php` with
    /// `run=latest` answers)
    #[param(value_type = Option<String>)]
    pub include: Option<String>,
}

/// A model's latest run for a station (`forecasts.php?model=M&run=latest` answers this run).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct LatestRun {
    pub model: String,
    /// ISO 8601 UTC, as the `X-Run-Time` header.
    pub run_time: String,
}

/// One trading day of a logic: its date and its window `[start_utc, end_utc)`.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct TradingDay {
    /// `YYYY-MM-DD` (Local Standard Time for nws, civil for wu).
    pub date: String,
    /// `YYYY-MM-DD HH:MM:SS`, UTC.
    pub start_utc: String,
    pub end_utc: String,
}

/// The trading day of each settlement logic.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Days {
    pub nws: TradingDay,
    pub wu: TradingDay,
}

/// `observations.php?mode=svc_high` of each logic's day.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct SvcPerLogic {
    pub nws: SvcHigh,
    pub wu: SvcHigh,
}

/// One station of the answer.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct StationDay {
    pub station_code: String,
    pub name: String,
    pub city: String,
    pub country: String,
    /// IANA zone.
    pub timezone: String,
    /// `fahrenheit` or `celsius`: the native units of every value of this station.
    pub units: String,
    /// The trading day answered under each logic.
    pub days: Days,
    /// The latest observation however old (`observations.php?mode=latest`), null when the
    /// station has none.
    pub latest: Option<ObservationV2>,
    /// `observations.php?mode=svc_high` of that day under each logic.
    pub svc: SvcPerLogic,
    /// With `include=latest_runs`: each model covering the station with a run in the last
    /// [`RECENT_DAYS`](crate::api::forecast_cache::RECENT_DAYS) days, by model name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_runs: Option<Vec<LatestRun>>,
}

#[utoipa::path(
    get,
    path = "/api/v2/stations.php",
    tag = "observations",
    operation_id = "getStations",
    summary = "The catalog stations, each with its trading days, latest observation and svc_high",
    description = "Every catalog station (or the `station_code` list), in catalog order or the order asked, with \
                   its name, timezone and native units, its trading day under each logic, its latest observation \
                   (as observations.php `mode=latest`) and its `svc_high` answer under `nws` and `wu`: one request \
                   for a board of all stations. `include=latest_runs` adds each covering model's latest run. This \
                   is the list of valid `station_code` values. With `as_of`, that moment is now: the trading days, \
                   latest observation, svc_high and latest runs the service would have answered then.",
    params(StationsQuery, crate::api::as_of::AsOfQuery),
    responses(
        (status = 200, description = "the stations in catalog order (or in the order asked), each with its trading days, latest observation and svc_high under both logics", body = Vec<StationDay>),
        (status = 400, description = "unknown station, invalid date or include, or a parameter given twice", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    as_of: crate::api::as_of::AsOf,
    QueryParams(q): QueryParams<StationsQuery>,
) -> ApiResult<Response> {
    let stations = stations_param(&q.station_code)?;
    let date = params::date("date", &q.date)?;
    let runs = params::choice::<StationsInclude>("include", &q.include)?.is_some();
    let mut out: Vec<StationDay> = Vec::with_capacity(stations.len());
    for group in stations.chunks(CONCURRENCY) {
        // Futures pushed in a loop, not mapped by a closure: a closure over `&Station` makes
        // the handler's future fail axum's `Send` bound (a higher-ranked lifetime).
        let mut pending = Vec::with_capacity(group.len());
        for &st in group {
            pending.push(Box::pin(station_day(&state, st, date, runs, as_of.0)));
        }
        for answer in futures::future::join_all(pending).await {
            out.push(answer?);
        }
    }
    Ok(as_of.echo(Json(out).into_response()))
}

/// The `station_code` list (unknown codes are a 400 naming the code), or the whole catalog.
fn stations_param(raw: &Option<String>) -> Result<Vec<&'static Station>, ApiError> {
    let Some(list) = params::value(raw) else {
        return Ok(Catalog::global().all().iter().collect());
    };
    let mut out: Vec<&'static Station> = Vec::new();
    for code in list.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let st = params::station("station_code", &Some(code.to_string()))?;
        if !out.iter().any(|s| s.code == st.code) {
            out.push(st);
        }
    }
    Ok(out)
}

/// One station's answer for `date` (default: each logic's today), as of `as_of` when given:
/// then that moment is now, and each part is the answer its own endpoint gives as of it.
async fn station_day(
    state: &AppState,
    st: &'static Station,
    date: Option<NaiveDate>,
    runs: bool,
    as_of: Option<DateTime<Utc>>,
) -> ApiResult<StationDay> {
    let now = as_of.unwrap_or_else(|| state.now());
    let day_of = |logic: Logic| {
        let today = local_date(st.timezone, logic.clock(), now);
        date.map_or(today, |d| d.min(today))
    };
    let (nws_date, wu_date) = (day_of(Logic::Nws), day_of(Logic::Wu));
    let trading_day = |logic: Logic, d: NaiveDate| {
        let w = day_window(st.timezone, logic.clock(), d);
        TradingDay { date: d.to_string(), start_utc: fmt_utc(w.start), end_utc: fmt_utc(w.end) }
    };
    let latest = match as_of {
        None => latest_observation(state, st).await?,
        Some(t) => latest_observation_as_of(state, st, t).await?,
    };
    let latest = latest.map(|(m, r)| ObservationV2::new(&m, st, r.as_ref_pair()));
    let latest_runs = if runs { Some(latest_runs(state, st, as_of).await?) } else { None };
    let svc = |logic: Logic, d: NaiveDate| async move {
        let day = match as_of {
            None => crate::trading_day::extremes(&state.live, st, logic, Some(d)).await?,
            Some(t) => crate::trading_day::extremes_as_of(&state.live, st, logic, Some(d), t).await?,
        };
        ApiResult::Ok(SvcHigh::from(&day))
    };
    Ok(StationDay {
        station_code: st.code.clone(),
        name: st.name.clone(),
        city: st.city.clone(),
        country: st.country.clone(),
        timezone: st.timezone.name().to_string(),
        units: st.units.as_str().to_string(),
        days: Days { nws: trading_day(Logic::Nws, nws_date), wu: trading_day(Logic::Wu, wu_date) },
        latest,
        svc: SvcPerLogic { nws: svc(Logic::Nws, nws_date).await?, wu: svc(Logic::Wu, wu_date).await? },
        latest_runs,
    })
}

/// The latest run of each model covering `st` (the catalog's coverage: a station gets only
/// its models), in the models' order, from the latest-runs index (as of a time: among the
/// runs with rows available then, dated as the index counts from that day).
async fn latest_runs(
    state: &AppState,
    st: &'static Station,
    as_of: Option<DateTime<Utc>>,
) -> ApiResult<Vec<LatestRun>> {
    let runs = match as_of {
        None => state.latest_runs.of(&state.live, &st.code).await?,
        Some(t) => state.latest_runs.of_as_of(&state.live, &st.code, t).await?,
    };
    Ok(MODELS
        .iter()
        .filter(|m| st.has_forecasts_from(m.name))
        .filter_map(|m| runs.get(m.name).map(|&rt| LatestRun { model: m.name.to_string(), run_time: fmt_iso_utc(rt) }))
        .collect())
}
