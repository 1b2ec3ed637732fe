//! `GET /api/v2/pacing.php` (spec 4.8, beta, Developer and Enterprise): the latest
//! observation against each model's latest run (and the latest NWS hourly version) for the
//! contract day. DESIGN.md: `pace` = latest observation − the model's temperature
//! interpolated linearly to the observation time; `high_pace`/`low_pace` = the model's
//! day high/low + pace; native units.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Duration, Utc};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Float64Type, TimestampMicrosecondType};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::observations::{history, history_as_of, logic_param};
use crate::api::as_of::forecast_rows;
use crate::api::auth::{require_premium, Caller};
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::observation_json::ObservationV2;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::extremes::Logic;
use crate::lake::bound_sql::Bindings;
use crate::time::{fmt_iso_utc, Window};
use crate::units::{f_to_c, Units};

/// One model's (or the NWS forecast's) pace.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct PaceRow {
    /// Model name, or `NWS` for the api.weather.gov hourly forecast.
    pub model: String,
    /// The run (for NWS: the version's generation time).
    pub run_time: String,
    /// Model temperature interpolated to the observation time; null when the run does not
    /// bracket it.
    pub model_at_observation: Option<f64>,
    pub pace: Option<f64>,
    /// The model's high / low over the contract day (points inside the day's window).
    pub model_high: Option<f64>,
    pub model_low: Option<f64>,
    pub high_pace: Option<f64>,
    pub low_pace: Option<f64>,
}

/// The pacing answer.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Pacing {
    pub station_code: String,
    /// The contract day `YYYY-MM-DD` in the logic's clock.
    pub date: String,
    /// `nws` or `wu`.
    pub logic: String,
    /// `fahrenheit` or `celsius`: every value below is in these units.
    pub units: String,
    /// The observation paced against.
    pub observation: PacedObservation,
    /// One row per model with a run in the last three days, by model name.
    pub models: Vec<PaceRow>,
    /// The latest NWS hourly forecast version's row; null without one.
    pub nws: Option<PaceRow>,
}

/// The latest plausible observation of the last 24 hours.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct PacedObservation {
    /// `YYYY-MM-DD HH:MM:SS`, UTC.
    pub observation_time: String,
    /// Temperature in native units (the observation record's `temperature_display`).
    pub value: f64,
}

fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Linear interpolation of `series` (time → value, sorted) at `t`.
pub fn interpolate(series: &BTreeMap<DateTime<Utc>, f64>, t: DateTime<Utc>) -> Option<f64> {
    let before = series.range(..=t).next_back();
    let after = series.range(t..).next();
    match (before, after) {
        (Some((t0, v0)), Some((t1, v1))) if t1 > t0 => {
            let w = (t - *t0).num_seconds() as f64 / (*t1 - *t0).num_seconds() as f64;
            Some(v0 + (v1 - v0) * w)
        }
        (Some((t0, v0)), Some(_)) if *t0 == t => Some(*v0),
        _ => None,
    }
}

/// The pace of one series against an observation.
pub fn pace_row(
    model: String,
    run: DateTime<Utc>,
    series: &BTreeMap<DateTime<Utc>, f64>,
    w: Window,
    obs_t: DateTime<Utc>,
    obs: f64,
) -> PaceRow {
    let at = interpolate(series, obs_t);
    let day: Vec<f64> = series.range(w.start..w.end).map(|(_, v)| *v).collect();
    let high = day.iter().copied().reduce(f64::max);
    let low = day.iter().copied().reduce(f64::min);
    let pace = at.map(|m| obs - m);
    PaceRow {
        model,
        run_time: fmt_iso_utc(run),
        model_at_observation: at.map(r1),
        pace: pace.map(r1),
        model_high: high.map(r1),
        model_low: low.map(r1),
        high_pace: high.zip(pace).map(|(h, p)| r1(h + p)),
        low_pace: low.zip(pace).map(|(l, p)| r1(l + p)),
    }
}

/// Query of `GET /api/v2/pacing.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PacingQuery {
    /// Station code
    #[param(required = true, value_type = String)]
    pub station_code: Option<String>,
    /// contract day window: `nws` (Local Standard Time, default) or `wu` (civil)
    #[param(value_type = Option<Logic>)]
    pub logic: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v2/pacing.php",
    tag = "analytics",
    operation_id = "getPacing",
    summary = "Beta: the latest observation against each model's forecast for the contract day",
    description = "Developer and Enterprise. Per model's latest run (and the latest NWS hourly version): the model \
                   temperature interpolated to the latest observation's time, `pace` = observation - model, and \
                   `high_pace`/`low_pace` = the model's day high/low + pace, in the station's native units.",
    params(PacingQuery, crate::api::as_of::AsOfQuery),
    responses(
        (status = 200, description = "the latest observation against each model's latest run and the latest NWS hourly version", body = Pacing),
        (status = 400, description = "invalid or missing parameter, unknown station, or a parameter given twice", body = crate::api::error::ErrorBody),
        (status = 403, description = "Professional and Testing keys: Access Denied", body = crate::api::error::ErrorBody),
        (status = 404, description = "no recent observation to pace against", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    as_of: crate::api::as_of::AsOf,
    QueryParams(q): QueryParams<PacingQuery>,
) -> ApiResult<Response> {
    require_premium(&caller)?;
    let station = params::station("station_code", &q.station_code)?;
    let logic = if params::value(&q.logic).is_some() { logic_param(&q.logic)? } else { Logic::Nws };
    // As of a time: that moment is now, and only rows available by then count.
    let now = as_of.now(&state);
    let obs = match as_of.0 {
        None => history(&state, station, now - Duration::days(1), now + Duration::hours(1)).await?,
        Some(t) => history_as_of(&state, station, now - Duration::days(1), now + Duration::hours(1), t).await?,
    };
    let (m, r) =
        obs.iter().rev().find(|(m, _)| m.temperature_c().is_some_and(|c| !crate::units::is_suspect_c(c))).ok_or_else(
            || {
                ApiError::not_found(
                    format!("No recent observation for {}", station.code),
                    "nothing to pace against in the last 24 h",
                )
            },
        )?;
    let o = ObservationV2::new(m, station, r.as_ref_pair());
    let obs_value = o.temperature_display.unwrap_or_default();
    let date = crate::time::local_date(station.timezone, logic.clock(), now);
    let w = crate::time::day_window(station.timezone, logic.clock(), date);
    let unit_col = if station.units == Units::Fahrenheit { "temperature_f" } else { "temperature_c" };

    // Each model's latest run, then that run's points around the contract day.
    let mut p = Bindings::new();
    let (loc, recent, now_) =
        (p.str(&station.code), p.partition_date((now - Duration::days(3)).date_naive()), p.time(now));
    // A run can arrive in pieces: as of a time, only the rows available then, in both parts.
    let avail = match as_of.0 {
        Some(_) => format!(" AND available_at <= {now_}"),
        None => String::new(),
    };
    let f_avail = format!(" AND {}", forecast_rows(&mut p, as_of.0, "f."));
    let sql = format!(
        "WITH latest AS (SELECT model, max(run_time) AS rt FROM forecasts WHERE location_name = {loc} \
           AND run_date >= {recent} AND run_time <= {now_}{avail} GROUP BY model) \
         SELECT f.model, f.run_time, f.valid_time, f.{unit_col} FROM forecasts f JOIN latest l \
           ON f.model = l.model AND f.run_time = l.rt \
         WHERE f.location_name = {loc} AND f.run_date >= {recent}{f_avail} \
           AND f.valid_time >= {from} AND f.valid_time <= {to} ORDER BY f.model, f.valid_time",
        from = p.time(w.start.min(m.time) - Duration::hours(6)),
        to = p.time(w.end + Duration::hours(6)),
    );
    let mut series: BTreeMap<(String, DateTime<Utc>), BTreeMap<DateTime<Utc>, f64>> = BTreeMap::new();
    for b in p.collect(&state.live.ctx, &sql).await? {
        let (md, rt, vt, v) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_primitive::<TimestampMicrosecondType>(),
            b.column(2).as_primitive::<TimestampMicrosecondType>(),
            b.column(3).as_primitive::<Float64Type>(),
        );
        for i in 0..b.num_rows() {
            if let (true, Some(r), Some(t)) = (
                v.is_valid(i),
                DateTime::from_timestamp_micros(rt.value(i)),
                DateTime::from_timestamp_micros(vt.value(i)),
            ) {
                series.entry((md.value(i).to_string(), r)).or_default().insert(t, v.value(i));
            }
        }
    }
    let models: Vec<PaceRow> =
        series.iter().map(|((model, run), s)| pace_row(model.clone(), *run, s, w, m.time, obs_value)).collect();
    let nws = nws_pace(&state, &station.code, station.units, w, m.time, obs_value, now, as_of.0).await?;
    let body = Json(Pacing {
        station_code: station.code.clone(),
        date: date.to_string(),
        logic: logic.as_str().to_string(),
        units: station.units.as_str().to_string(),
        observation: PacedObservation { observation_time: o.observation_time, value: obs_value },
        models,
        nws,
    })
    .into_response();
    Ok(as_of.echo(body))
}

/// The latest NWS hourly version's pace (NWS forecasts are °F; converted for °C stations);
/// `as_of`: of the versions available by then.
#[allow(clippy::too_many_arguments)]
async fn nws_pace(
    state: &AppState,
    code: &str,
    units: Units,
    w: Window,
    obs_t: DateTime<Utc>,
    obs: f64,
    now: DateTime<Utc>,
    as_of: Option<DateTime<Utc>>,
) -> ApiResult<Option<PaceRow>> {
    let mut p = Bindings::new();
    let (loc, d, now) = (p.str(code), p.partition_date((now - Duration::days(8)).date_naive()), p.time(now));
    let (avail, n_avail) = match as_of.map(|t| p.time(t)) {
        Some(t) => (format!(" AND available_at <= {t}"), format!(" AND n.available_at <= {t}")),
        None => (String::new(), String::new()),
    };
    let sql = format!(
        "WITH v AS (SELECT max(generated_at) AS g FROM nws_hourly WHERE station_code = {loc} AND date >= {d} \
           AND generated_at <= {now}{avail}) \
         SELECT n.generated_at, n.start_time, n.temperature_f FROM nws_hourly n JOIN v ON n.generated_at = v.g \
         WHERE n.station_code = {loc} AND n.date >= {d}{n_avail} ORDER BY n.start_time",
    );
    let mut s = BTreeMap::new();
    let mut gen = None;
    for b in p.collect(&state.live.ctx, &sql).await? {
        let (g, st, f) = (
            b.column(0).as_primitive::<TimestampMicrosecondType>(),
            b.column(1).as_primitive::<TimestampMicrosecondType>(),
            b.column(2).as_primitive::<Float64Type>(),
        );
        for i in 0..b.num_rows() {
            gen = DateTime::from_timestamp_micros(g.value(i));
            if let Some(t) = DateTime::from_timestamp_micros(st.value(i)) {
                let v = if units == Units::Fahrenheit { f.value(i) } else { f_to_c(f.value(i)) };
                s.insert(t, v);
            }
        }
    }
    Ok(gen.map(|g| pace_row(crate::models::NWS_MODEL.to_string(), g, &s, w, obs_t, obs)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn pace_interpolates_between_points() {
        let t = |h: u32, m: u32| Utc.with_ymd_and_hms(2026, 3, 8, h, m, 0).unwrap();
        let series: BTreeMap<_, _> = [(t(12, 0), 40.0), (t(15, 0), 46.0), (t(18, 0), 44.0), (t(21, 0), 38.0)].into();
        assert_eq!(interpolate(&series, t(13, 30)), Some(43.0));
        assert_eq!(interpolate(&series, t(15, 0)), Some(46.0));
        assert_eq!(interpolate(&series, t(22, 0)), None, "no point after: no extrapolation");
        let w = Window { start: t(12, 0), end: t(21, 0) };
        // Observed 45 at 13:30 against a modelled 43: pace +2; model high 46 → 48, low 40 → 42.
        let r = pace_row("GFS".into(), t(6, 0), &series, w, t(13, 30), 45.0);
        assert_eq!((r.pace, r.model_high, r.high_pace, r.low_pace), (Some(2.0), Some(46.0), Some(48.0), Some(42.0)));
    }
}
