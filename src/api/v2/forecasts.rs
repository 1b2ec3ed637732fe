//! `GET /api/v2/forecasts.php` (spec 4.2): raw rows of every run intersecting a window,
//! one pinned or the latest run, or per-day summaries from the `forecast_daily` job.

use axum::extract::State;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Duration, Utc};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Date32Type, Float64Type, Int64Type, TimestampMicrosecondType};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::api::as_of::{forecast_rows, AsOf, AsOfQuery};
use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::json_stream::stream_array;
use crate::api::params::{self, ClosedSet, QueryParams};
use crate::api::schemas::DailyForecastRow;
use crate::api::state::AppState;
use crate::lake::bound_sql::Bindings;

/// The spec 2.5 columns as SQL (the hot cache reads the same).
pub use crate::api::forecast_cache::RAW_COLUMNS;
use crate::catalog::Catalog;
use crate::lake::schema::KeyHasher;
use crate::models::MODELS;
use crate::time::{fmt_iso_utc, DayClock};

/// Longest lead of any model (GEFS/GFS, 384 h) plus a day: how far back a run can start
/// and still reach a window, for partition pruning on `run_date`.
const MAX_REACH_DAYS: i64 = 17;

/// A `run` other than `latest`: an ISO 8601 run time.
fn run_time(r: &str) -> Result<DateTime<Utc>, ApiError> {
    params::time_value("run", r).map_err(|mut e| {
        e.body.details = format!("run is `latest` or an ISO 8601 run_time; {}", e.body.details);
        e
    })
}

/// `model`: one of the 18 names, case-sensitive (spec 2.5).
pub fn model_param(raw: &Option<String>) -> Result<Option<&str>, ApiError> {
    match params::value(raw) {
        None => Ok(None),
        Some(m) if MODELS.iter().any(|s| s.name == m) => Ok(Some(m)),
        Some(m) => Err(ApiError::bad_request(
            format!("Unknown model: {m}"),
            format!("model is one of {}", MODELS.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")),
        )),
    }
}

/// `location_name`: a station code (letters and digits).
pub fn location_param(raw: &Option<String>) -> Result<String, ApiError> {
    let loc = params::required("location_name", raw, "a station code, e.g. KNYC")?;
    if loc.len() > 12 || !loc.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(ApiError::bad_request(format!("Invalid location_name: {loc}"), "a station code, e.g. KNYC"));
    }
    Ok(loc.to_ascii_uppercase())
}

/// A `location_name` the service knows, or the 400 of an unknown station (as every
/// endpoint answers one): a catalog station, or a location with forecasts of the last
/// [`RECENT_DAYS`](crate::api::forecast_cache::RECENT_DAYS) days (a feed may fetch model
/// output for points outside the catalog, e.g. MOS stations; see [`crate::api::latest_runs`]).
/// Anything else would only ever be `[]`, which reads as "no run yet" for a typo.
/// `loc` comes from [`location_param`]; checked last, after the cheap checks.
pub async fn known_location(state: &AppState, loc: String) -> Result<String, ApiError> {
    if Catalog::global().lookup(&loc).is_some() || !state.latest_runs.of(&state.live, &loc).await?.is_empty() {
        return Ok(loc);
    }
    Err(ApiError::bad_request(
        format!("Unknown station: {loc}"),
        format!(
            "location_name must be one of the {} catalog stations (GET /api/v2/stations.php lists them, and /docs \
             names them under location_name) or a location with forecasts stored in the last {} days",
            Catalog::global().len(),
            crate::api::forecast_cache::RECENT_DAYS
        ),
    ))
}

/// The raw-mode window; both ends required unless a run is given.
/// A UTC time range, both ends inclusive.
type Range = (DateTime<Utc>, DateTime<Utc>);

fn window(q: &ForecastsQuery, run_given: bool) -> Result<Option<Range>, ApiError> {
    let fmt = "ISO 8601, e.g. 2026-03-08T00:00:00Z";
    let (start, end) =
        (params::time("start_valid_time", &q.start_valid_time)?, params::time("end_valid_time", &q.end_valid_time)?);
    match (start, end) {
        (Some(s), Some(e)) if e < s => Err(ApiError::bad_request("end_valid_time is before start_valid_time", fmt)),
        (Some(s), Some(e)) => Ok(Some((s, e))),
        (None, None) if run_given => Ok(None),
        (None, _) => Err(ApiError::missing("start_valid_time", format!("{fmt}; required unless run is given"))),
        (_, None) => Err(ApiError::missing("end_valid_time", format!("{fmt}; required unless run is given"))),
    }
}

/// `mode` of the v2 forecasts: `raw` (default; `hourly` is a synonym the original
/// service accepted) or `daily`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ForecastMode {
    Raw,
    Hourly,
    Daily,
}

impl ClosedSet for ForecastMode {}

/// `tz_mode` of forecasts `mode=daily`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TzMode {
    Civil,
    Standard,
}

impl ClosedSet for TzMode {}

/// Query of `GET /api/v2/forecasts.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ForecastsQuery {
    /// Station code
    #[param(required = true, value_type = String)]
    pub location_name: Option<String>,
    /// ISO 8601; required unless run is given
    #[param(value_type = Option<String>, format = DateTime)]
    pub start_valid_time: Option<String>,
    /// ISO 8601, not before start_valid_time; required unless run is given
    #[param(value_type = Option<String>, format = DateTime)]
    pub end_valid_time: Option<String>,
    /// One of the 18 model names; required with run=latest
    #[param(value_type = Option<String>)]
    pub model: Option<String>,
    /// `latest` or an ISO 8601 run_time
    #[param(value_type = Option<String>)]
    pub run: Option<String>,
    /// `raw` (the default: hourly rows; `hourly` is accepted as a synonym) or `daily` for per-day summaries
    #[param(value_type = Option<ForecastMode>)]
    pub mode: Option<String>,
    /// daily only: `civil` (default) or `standard`
    #[param(value_type = Option<TzMode>)]
    pub tz_mode: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v2/forecasts.php",
    tag = "forecasts",
    operation_id = "getForecasts",
    summary = "Model forecasts: raw hourly rows, one run (latest or pinned), or per-day summaries",
    description = "Raw (default; `mode=raw`, or `hourly` as the original service called it): the rows of every run \
                   intersecting `[start_valid_time, end_valid_time]`, by model, run and valid time. `run=latest` \
                   (needs `model`) or `run=<run_time>`: one run, the window optional; `run=latest` answers header \
                   `X-Run-Time` (the run's initialization time, ISO 8601 UTC) and `[]` when the model has no run. \
                   `mode=daily`: per model and local day (`tz_mode` civil or standard), each model at its latest \
                   run (or the pinned `run`), only fully covered days; header `X-Run-Signature` identifies the set \
                   of runs, and with `run=latest` `X-Run-Time` names the newest of them (the run itself when \
                   `model` is given). A re-published run answers with its current values (its first ones are \
                   kept). With `as_of`: only rows available by then, a re-published run with the values in force \
                   then; `run=latest` is the latest run available then, and `mode=daily` gives the days whose every point was available then. \
                   `location_name` must be a catalog station or a location with recent forecasts; anything else \
                   is a 400.",
    params(ForecastsQuery, AsOfQuery),
    responses(
        (status = 200, description = "raw: array of forecast rows (2.5); daily: array of summary rows (2.6); [] when empty", body = [crate::api::schemas::ForecastsV2Item],
            headers(
                ("X-Run-Time" = String, description = "with run=latest: the resolved run's initialization time, ISO 8601 UTC (mode=daily without model: the newest run summarized); absent when there is no run"),
                ("X-Run-Signature" = String, description = "mode=daily: 16 hex digits identifying the set of runs summarized"),
            )),
        (status = 400, description = "invalid or missing parameter, unknown station, or a parameter given twice", body = crate::api::error::ErrorBody),
        (status = 422, description = "mode=daily for a location without a configured timezone (a non-catalog location with forecasts)", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    as_of: AsOf,
    QueryParams(q): QueryParams<ForecastsQuery>,
) -> ApiResult<Response> {
    let loc = location_param(&q.location_name)?;
    let model = model_param(&q.model)?;
    // `hourly`: the original service's name for raw rows, still sent by real clients.
    let mode = params::choice::<ForecastMode>("mode", &q.mode)?;
    let run = params::value(&q.run);
    if mode == Some(ForecastMode::Daily) {
        let tz_mode = params::choice("tz_mode", &q.tz_mode)?.unwrap_or(TzMode::Civil);
        let loc = known_location(&state, loc).await?;
        return Ok(as_of.echo(daily(&state, &loc, model, run, tz_mode, &q, as_of.0).await?));
    }
    let win = window(&q, run.is_some())?;
    let loc = known_location(&state, loc).await?;
    if let Some(m) = model {
        if let Some(resp) = from_cache(&state, &loc, m, run, win, as_of.0).await? {
            return Ok(as_of.echo(resp));
        }
    }
    let mut b = Bindings::new();
    let mut filters = vec![format!("location_name = {}", b.str(&loc))];
    if let Some(m) = model {
        filters.push(format!("model = {}", b.str(m)));
    }
    filters.push(forecast_rows(&mut b, as_of.0, ""));
    if let Some(t) = as_of.0 {
        // No run can be dated after the time (`available_at >= run_time`).
        filters.push(format!("run_date <= {}", b.partition_date(t.date_naive())));
    }
    let mut run_time_header = None;
    let pinned = match run {
        Some("latest") => {
            let m = model.ok_or_else(|| ApiError::missing("model", "model is required with run=latest"))?;
            match latest_run(&state, m, &loc, as_of.0).await? {
                None => return Ok(as_of.echo(Json(Vec::<serde_json::Value>::new()).into_response())),
                Some(rt) => {
                    run_time_header = Some(rt);
                    Some(rt)
                }
            }
        }
        Some(r) => Some(run_time(r)?),
        None => None,
    };
    if let Some(rt) = pinned {
        filters.push(format!("run_time = {} AND run_date = {}", b.time(rt), b.partition_date(rt.date_naive())));
    }
    if let Some((s, e)) = win {
        let (s_, e_) = (b.time(s), b.time(e));
        filters.push(format!("valid_time >= {s_} AND valid_time <= {e_} AND run_time <= {e_}"));
        if run.is_none() {
            filters.push(format!(
                "run_date >= {} AND run_date <= {}",
                b.partition_date((s - Duration::days(MAX_REACH_DAYS)).date_naive()),
                b.partition_date(e.date_naive())
            ));
        }
    }
    let sql = format!(
        "SELECT {} FROM forecasts WHERE {} ORDER BY model, run_time, valid_time",
        RAW_COLUMNS.as_str(),
        filters.join(" AND ")
    );
    let df = b.frame(&state.live.ctx, &sql).await?;
    let mut resp = stream_array(df).await?;
    if let Some(rt) = run_time_header {
        if let Ok(v) = HeaderValue::from_str(&fmt_iso_utc(rt)) {
            resp.headers_mut().insert("x-run-time", v);
        }
    }
    Ok(as_of.echo(resp))
}

/// Serves a raw request for one model from the hot cache when the cache holds every row it
/// needs (see api/forecast_cache.rs); `None` sends it to the lake.
async fn from_cache(
    state: &AppState,
    loc: &str,
    model: &str,
    run: Option<&str>,
    win: Option<Range>,
    as_of: Option<DateTime<Utc>>,
) -> ApiResult<Option<Response>> {
    let entry = state.forecasts.get(&state.live, loc, model).await?;
    let pinned = match run {
        None => match win {
            Some((s, _)) if entry.covers_window(s, Duration::days(MAX_REACH_DAYS)) => None,
            _ => return Ok(None),
        },
        // Every run dated from the entry's first date on is held, so the latest held (as
        // of a time: with a row available then) is the latest there is; none, the lake.
        Some("latest") => match entry.latest_run(as_of)? {
            Some(rt) => Some(rt),
            None => return Ok(None),
        },
        Some(r) => match run_time(r)? {
            rt if rt.date_naive() >= entry.from_date => Some(rt),
            _ => return Ok(None),
        },
    };
    let mut resp = crate::api::json_stream::stream_batch(entry.select(win, pinned, as_of)?);
    if run == Some("latest") {
        if let Some(v) = pinned.and_then(|rt| HeaderValue::from_str(&fmt_iso_utc(rt)).ok()) {
            resp.headers_mut().insert("x-run-time", v);
        }
    }
    Ok(Some(resp))
}

/// The most recent run of `model` at `loc` (with `as_of`: the most recent with rows
/// available by then): the last few days first (cheap), then all.
pub async fn latest_run(
    state: &AppState,
    model: &str,
    loc: &str,
    as_of: Option<DateTime<Utc>>,
) -> ApiResult<Option<DateTime<Utc>>> {
    let now = as_of.unwrap_or_else(|| state.now());
    let recent = (now - Duration::days(3)).date_naive();
    for only_recent in [true, false] {
        let mut b = Bindings::new();
        let mut sql = format!(
            "SELECT max(run_time) FROM forecasts WHERE model = {} AND location_name = {}",
            b.str(model),
            b.str(loc)
        );
        if only_recent {
            sql += &format!(" AND run_date >= {}", b.partition_date(recent));
        }
        if let Some(t) = as_of {
            sql += &format!(" AND available_at <= {} AND run_date <= {}", b.time(t), b.partition_date(t.date_naive()));
        }
        let batches = b.collect(&state.live.ctx, &sql).await?;
        if let Some(b) = batches.first() {
            let a = b.column(0).as_primitive::<TimestampMicrosecondType>();
            if !a.is_empty() && a.is_valid(0) {
                return Ok(DateTime::from_timestamp_micros(a.value(0)));
            }
        }
    }
    Ok(None)
}

/// `mode=daily`: rows of the `forecast_daily` job, each model at its latest run unless a
/// run is pinned, restricted to the window's local dates when a window is given. With
/// `as_of`, only the days whose every point was available by then: those the job,
/// run at that moment, would have produced.
async fn daily(
    state: &AppState,
    loc: &str,
    model: Option<&str>,
    run: Option<&str>,
    tz_mode: TzMode,
    q: &ForecastsQuery,
    as_of: Option<DateTime<Utc>>,
) -> ApiResult<Response> {
    let Some(station) = Catalog::global().lookup(loc) else {
        return Err(ApiError::unprocessable(
            format!("No timezone configured for {loc}"),
            "mode=daily buckets forecast hours into local days and needs the station's IANA timezone; \
             only catalog stations have one",
        ));
    };
    let mut b = Bindings::new();
    let mut filters =
        vec![format!("location_name = {}", b.str(&station.code)), format!("tz_mode = {}", b.str(tz_mode.name()))];
    if let Some(m) = model {
        filters.push(format!("model = {}", b.str(m)));
    }
    let win = window(q, true)?;
    if let Some((s, e)) = win {
        let clock = if tz_mode == TzMode::Standard { DayClock::Standard } else { DayClock::Civil };
        let (ds, de) =
            (crate::time::local_date(station.timezone, clock, s), crate::time::local_date(station.timezone, clock, e));
        filters.push(format!("date >= {} AND date <= {}", b.date(ds), b.date(de)));
    }
    let mut known = String::new();
    if let Some(t) = as_of {
        let (t, day) = (b.time(t), b.partition_date(t.date_naive()));
        filters.push(format!("available_at <= {t} AND run_date <= {day}"));
        known = format!(" AND l.available_at <= {t} AND l.run_date <= {day}");
    }
    let base = filters.join(" AND ");
    let run_filter = match run {
        None | Some("latest") => format!(
            "run_time = (SELECT max(l.run_time) FROM forecast_daily l WHERE l.model = d.model \
             AND l.location_name = d.location_name AND l.tz_mode = d.tz_mode{known})"
        ),
        Some(r) => {
            let rt = run_time(r)?;
            format!("run_time = {}", b.time(rt))
        }
    };
    let sql = format!(
        "SELECT model, date, timezone, tz_mode, run_time, points_used, high_f, low_f, high_c, low_c \
         FROM forecast_daily d WHERE {base} AND {run_filter} ORDER BY model, date"
    );
    // A run re-published since `as_of` is summarised as it was then (api/daily_as_of.rs).
    let scratch = match as_of {
        Some(t) => crate::api::daily_as_of::session(&state.live.ctx, &station.code, model, t).await?,
        None => None,
    };
    let batches = b.collect(scratch.as_ref().unwrap_or(&state.live.ctx), &sql).await?;
    let us = station.is_us();
    let mut rows = Vec::new();
    let mut runs: Vec<String> = Vec::new();
    let mut newest_run: Option<DateTime<Utc>> = None;
    for b in &batches {
        let s = |c: usize| b.column(c).as_string::<i32>();
        let date = b.column(1).as_primitive::<Date32Type>();
        let rt = b.column(4).as_primitive::<TimestampMicrosecondType>();
        let pts = datafusion::arrow::compute::cast(b.column(5), &datafusion::arrow::datatypes::DataType::Int64)
            .map_err(ApiError::internal)?;
        let pts = pts.as_primitive::<Int64Type>();
        let f = |c: usize, i: usize| {
            let a = b.column(c).as_primitive::<Float64Type>();
            a.is_valid(i).then(|| (a.value(i) * 10.0).round() / 10.0)
        };
        for i in 0..b.num_rows() {
            let run_time = DateTime::from_timestamp_micros(rt.value(i)).unwrap_or_default();
            newest_run = newest_run.max(Some(run_time));
            let run_s = fmt_iso_utc(run_time);
            runs.push(format!("{}@{run_s}", s(0).value(i)));
            // US stations carry the Fahrenheit fields, international ones the Celsius fields.
            let (high, low) = if us { (f(6, i), f(7, i)) } else { (f(8, i), f(9, i)) };
            rows.push(DailyForecastRow {
                model: s(0).value(i).to_string(),
                date: Date32Type::to_naive_date_opt(date.value(i)).map(|d| d.to_string()).unwrap_or_default(),
                timezone: s(2).value(i).to_string(),
                tz_mode: s(3).value(i).to_string(),
                run_time: run_s,
                points_used: pts.value(i),
                high_f: high.filter(|_| us),
                low_f: low.filter(|_| us),
                high_c: high.filter(|_| !us),
                low_c: low.filter(|_| !us),
            });
        }
    }
    runs.sort();
    runs.dedup();
    let sig = runs.iter().fold(KeyHasher::default(), |h, r| h.str(r)).finish();
    let mut resp = Json(rows).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("{sig:016x}")) {
        resp.headers_mut().insert("x-run-signature", v);
    }
    // As in raw mode, `run=latest` names the run it resolved to (spec 4.2 rule 2); with
    // several models, each at its own latest run, the newest of them.
    if let (Some("latest"), Some(rt)) = (run, newest_run) {
        if let Ok(v) = HeaderValue::from_str(&fmt_iso_utc(rt)) {
            resp.headers_mut().insert("x-run-time", v);
        }
    }
    Ok(resp)
}
