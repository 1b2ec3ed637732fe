//! `GET /api/v2/daily_extremes.php` (beyond the spec): the trading-day high/low of every
//! day in a range. Finished days come from the `daily_extremes` job's table (the live
//! engine replayed over the lake, src/jobs/observed.rs); today, yesterday and any day the
//! job has not stored as finished are answered like `svc_high`, by [`crate::trading_day`].

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Duration, NaiveDate};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Date32Type, Float64Type, TimestampMicrosecondType};
use serde::Deserialize;
use utoipa::IntoParams;

use super::observations::{logic_param, SvcHigh};
use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::catalog::Station;
use crate::extremes::Logic;
use crate::lake::bound_sql::{utf8_column, Bindings};
use crate::time::fmt_utc;
use crate::trading_day;

/// Longest range per request.
pub const MAX_DAYS: i64 = 31;

/// Query of `GET /api/v2/daily_extremes.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DailyExtremesQuery {
    /// Station code
    #[param(required = true, value_type = String)]
    pub station_code: Option<String>,
    /// First trading day YYYY-MM-DD
    #[param(required = true, value_type = String, format = Date)]
    pub start_date: Option<String>,
    /// Last trading day YYYY-MM-DD (31 days at most in all); days after today are left out
    #[param(required = true, value_type = String, format = Date)]
    pub end_date: Option<String>,
    /// `nws` or `wu`
    #[param(required = true, value_type = Logic)]
    pub logic: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v2/daily_extremes.php",
    tag = "observations",
    operation_id = "getDailyExtremes",
    summary = "Trading-day highs and lows of a range of days (at most 31)",
    description = "One `svc_high` object per trading day from `start_date` to `end_date` (days after today are left \
                   out) under `logic`. Finished days come from the `daily_extremes` job's table; today, yesterday \
                   and any day the job has not stored are computed like observations.php `mode=svc_high`, by the \
                   same engine. With `as_of`, every day is computed by that engine from the readings and reports \
                   available then (days after that moment's trading day are left out).",
    params(DailyExtremesQuery, crate::api::as_of::AsOfQuery),
    responses(
        (status = 200, description = "one SvcHigh object per day, oldest first", body = [SvcHigh]),
        (status = 400, description = "invalid or missing parameter, unknown station, or a parameter given twice", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    as_of: crate::api::as_of::AsOf,
    QueryParams(q): QueryParams<DailyExtremesQuery>,
) -> ApiResult<Response> {
    let station = params::station("station_code", &q.station_code)?;
    let logic = logic_param(&q.logic)?;
    let start =
        params::date("start_date", &q.start_date)?.ok_or_else(|| ApiError::missing("start_date", "YYYY-MM-DD"))?;
    let end = params::date("end_date", &q.end_date)?.ok_or_else(|| ApiError::missing("end_date", "YYYY-MM-DD"))?;
    if end < start || end - start > Duration::days(MAX_DAYS - 1) {
        return Err(ApiError::bad_request(
            "Invalid date range",
            format!("end_date must be on or after start_date and at most {MAX_DAYS} days in all"),
        ));
    }
    let today = crate::time::local_date(station.timezone, logic.clock(), as_of.now(&state));
    let last = end.min(today);
    if let Some(t) = as_of.0 {
        // Every day recomputed by the engine from what the service knew at `t` (the stored
        // table holds the days as finished now).
        let mut out = Vec::new();
        let mut d = start;
        while d <= last {
            out.push(SvcHigh::from(&trading_day::extremes_as_of(&state.live, station, logic, Some(d), t).await?));
            d += Duration::days(1);
        }
        return Ok(as_of.echo(Json(out).into_response()));
    }
    let mut stored = if start < today - Duration::days(1) {
        stored_days(&state, station, logic, start, last.min(today - Duration::days(2))).await?
    } else {
        BTreeMap::new()
    };
    let mut out = Vec::new();
    let mut d = start;
    while d <= last {
        out.push(match stored.remove(&d) {
            Some(s) => s,
            None => SvcHigh::from(&trading_day::extremes(&state.live, station, logic, Some(d)).await?),
        });
        d += Duration::days(1);
    }
    Ok(Json(out).into_response())
}

/// The finished days `from..=to` the `daily_extremes` table holds for the station and logic.
async fn stored_days(
    state: &AppState,
    station: &Station,
    logic: Logic,
    from: NaiveDate,
    to: NaiveDate,
) -> ApiResult<BTreeMap<NaiveDate, SvcHigh>> {
    let mut p = Bindings::new();
    let sql = format!(
        "SELECT date, high, low, high_time, low_time, anomaly, data_quality, is_final, high_source, low_source, \
         high_valid_through, low_valid_through, high_sources, low_sources FROM daily_extremes WHERE station_code = {} AND logic = {} \
         AND day_complete AND date >= {} AND date <= {}",
        p.str(&station.code),
        p.str(logic.as_str()),
        p.date(from),
        p.date(to),
    );
    let mut out = BTreeMap::new();
    for b in p.collect(&state.live.ctx, &sql).await? {
        for (date, row) in rows(&b, station, logic)? {
            out.insert(date, row);
        }
    }
    Ok(out)
}

fn rows(b: &RecordBatch, station: &Station, logic: Logic) -> ApiResult<Vec<(NaiveDate, SvcHigh)>> {
    let text = |i: usize| utf8_column(b, i);
    let (dq, hs, ls, hl, ll) = (text(6)?, text(8)?, text(9)?, text(12)?, text(13)?);
    let (dq, hs, ls) = (dq.as_string::<i32>(), hs.as_string::<i32>(), ls.as_string::<i32>());
    let (hl, ll) = (hl.as_string::<i32>(), ll.as_string::<i32>());
    let list = |a: &datafusion::arrow::array::StringArray, r: usize| -> Vec<String> {
        a.value(r).split(',').filter(|s| !s.is_empty()).map(str::to_string).collect()
    };
    let num = |i: usize, r: usize| {
        let a = b.column(i).as_primitive::<Float64Type>();
        a.is_valid(r).then(|| a.value(r))
    };
    let time = |i: usize, r: usize| {
        let a = b.column(i).as_primitive::<TimestampMicrosecondType>();
        a.is_valid(r).then(|| DateTime::from_timestamp_micros(a.value(r))).flatten().map(fmt_utc)
    };
    let opt = |a: &datafusion::arrow::array::StringArray, r: usize| a.is_valid(r).then(|| a.value(r).to_string());
    let dates = b.column(0).as_primitive::<Date32Type>();
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    let mut out = Vec::with_capacity(b.num_rows());
    for r in 0..b.num_rows() {
        // Rows stored before the source lists existed lack them: recomputed instead.
        if hl.is_null(r) || ll.is_null(r) {
            continue;
        }
        let date = epoch + Duration::days(i64::from(dates.value(r)));
        let quality: serde_json::Value = serde_json::from_str(dq.value(r)).map_err(ApiError::internal)?;
        out.push((
            date,
            SvcHigh {
                station_code: station.code.clone(),
                date: date.to_string(),
                svc_high: num(1, r),
                svc_low: num(2, r),
                time_of_high_utc: time(3, r),
                time_of_low_utc: time(4, r),
                calculation_logic: logic.as_str().to_string(),
                units: station.units.as_str().to_string(),
                anomaly: b.column(5).as_boolean().value(r),
                data_quality: BTreeMap::from([(logic.as_str().to_string(), quality)]),
                is_final: b.column(7).as_boolean().value(r),
                high_source: opt(hs, r),
                low_source: opt(ls, r),
                svc_high_sources: list(hl, r),
                svc_low_sources: list(ll, r),
                high_valid_through_utc: time(10, r),
                low_valid_through_utc: time(11, r),
            },
        ));
    }
    Ok(out)
}
