//! `GET /api/v2/nws_forecasts.php` (spec 4.4, 2.8): the versions of the api.weather.gov
//! hourly forecast for one Local Standard Time date, as 25 hourly slots. US stations only
//! (the NWS forecasts nowhere else); an international station is a 400, as on
//! precipitation.php.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{Float64Type, TimestampMicrosecondType};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::auth::Caller;
use crate::api::bound_sql::Bindings;
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::loading_cache::LoadingCache;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::catalog::Station;
use crate::lake::schema::NWS_HOURLY;
use crate::time::{day_window, fmt_iso_utc, standard_date, DayClock};

/// Dates served: at most this many days ahead / back (spec 8).
pub const MAX_AHEAD_DAYS: i64 = 2;
pub const MAX_BACK_DAYS: i64 = 365;

/// One version of a date's hourly temperatures.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct NwsVersion {
    pub version: usize,
    /// When api.weather.gov generated it (ISO 8601 UTC).
    pub generated_at: String,
    /// Index 0 = midnight LST … 24 = next midnight; null for hours already past at issue.
    pub hourly_temps: Vec<Option<i64>>,
    pub high: Option<i64>,
    pub low: Option<i64>,
}

/// The 25 slots of `date` from one version's periods (start time → °F).
pub fn slots(
    window_start: DateTime<Utc>,
    generated_at: DateTime<Utc>,
    periods: &BTreeMap<DateTime<Utc>, f64>,
) -> Vec<Option<i64>> {
    (0..25)
        .map(|k| {
            let t = window_start + Duration::hours(k);
            // An hour that ended before the version was issued is past: null.
            if t + Duration::hours(1) <= generated_at {
                return None;
            }
            periods.get(&t).map(|f| f.round() as i64)
        })
        .collect()
}

fn version(n: usize, generated_at: DateTime<Utc>, temps: Vec<Option<i64>>) -> NwsVersion {
    let vals: Vec<i64> = temps.iter().flatten().copied().collect();
    NwsVersion {
        version: n,
        generated_at: fmt_iso_utc(generated_at),
        high: vals.iter().max().copied(),
        low: vals.iter().min().copied(),
        hourly_temps: temps,
    }
}

/// The versions of one (station, date), as [`versions`] answers them.
pub type VersionsCache = LoadingCache<(String, NaiveDate), Vec<NwsVersion>>;
/// Longest a (station, date) is served without re-reading the lake (rows stored through
/// this server make it current at once; rows another process wrote appear within this).
const VERSIONS_TTL: StdDuration = StdDuration::from_secs(60);
/// (station, date) pairs held; the least recently loaded go first.
const VERSIONS_HELD: usize = 2_000;

/// [`versions`] through the server's cache: the day view asks for the same date on every
/// load and poll, and the lake query behind it was the view's slowest answer
/// (benches/README.md, "Dashboard").
pub async fn cached_versions(state: &AppState, station: &Station, date: NaiveDate) -> ApiResult<Arc<Vec<NwsVersion>>> {
    let version = state.live.table_version(NWS_HOURLY.name);
    state
        .nws_versions
        .get_or_load(&(station.code.clone(), date), version, VERSIONS_TTL, || async {
            let found = versions(state, station, date).await?;
            state.nws_versions.evict(|_| 1, VERSIONS_HELD - 1);
            Ok(found)
        })
        .await
}

/// Every distinct version covering `date`, oldest first (a version identical to the one
/// before it is not a new version).
pub async fn versions(state: &AppState, station: &Station, date: NaiveDate) -> ApiResult<Vec<NwsVersion>> {
    let w = day_window(station.timezone, DayClock::Standard, date);
    let mut p = Bindings::new();
    let sql = format!(
        "SELECT generated_at, start_time, temperature_f FROM nws_hourly WHERE station_code = {} \
         AND date >= {} AND date <= {} AND start_time >= {} AND start_time <= {} \
         AND generated_at < {} ORDER BY generated_at, start_time",
        p.str(&station.code),
        p.partition_date(date - Duration::days(8)),
        p.partition_date(date + Duration::days(1)),
        p.time(w.start),
        p.time(w.start + Duration::hours(24)),
        p.time(w.end),
    );
    let mut by_version: BTreeMap<DateTime<Utc>, BTreeMap<DateTime<Utc>, f64>> = BTreeMap::new();
    for b in p.collect(&state.live.ctx, &sql).await? {
        let g = b.column(0).as_primitive::<TimestampMicrosecondType>();
        let s = b.column(1).as_primitive::<TimestampMicrosecondType>();
        let f = b.column(2).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            if let (Some(g), Some(s)) =
                (DateTime::from_timestamp_micros(g.value(i)), DateTime::from_timestamp_micros(s.value(i)))
            {
                by_version.entry(g).or_default().insert(s, f.value(i));
            }
        }
    }
    let mut out: Vec<NwsVersion> = Vec::new();
    for (g, periods) in by_version {
        let temps = slots(w.start, g, &periods);
        if temps.iter().all(Option::is_none) || out.last().is_some_and(|v| v.hourly_temps == temps) {
            continue;
        }
        out.push(version(out.len() + 1, g, temps));
    }
    Ok(out)
}

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
    let versions = cached_versions(&state, station, date).await?;
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
