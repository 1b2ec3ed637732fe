//! `GET /api/v2/model_accuracy.php` (spec 4.6, Developer and Enterprise): which model to
//! trust at a station, lately. Served from the accuracy jobs' tables (`model_accuracy`,
//! `accuracy_trends`, `accuracy_daily_detail`; sql/ documents the rules), held in memory
//! per station for [`CACHE_TTL`]: the tables change once a day.
//!
//! Filters combine the jobs' per-(model, run-time label) sums, so every subset of models
//! and labels gets exact metrics: MAE = Σ|e| / n, bias = Σe / n, RMSE = √(Σe² / n), with
//! error e = observed − forecast (positive bias: the model ran cold). Our parameters beyond
//! the spec: `lead_days` (1 to 3, default 1: the latest run of each label issued before the
//! day starts) and `target` (`high`, default, or `low`).
//!
//! `station_code` is any ICAO code (four characters, a letter first), not only the
//! catalog's (spec 2.10: "other codes (for example KORD) are accepted there"). A code
//! outside the catalog is answered from the same tables, read per request rather than
//! cached (the codes are unbounded); with no pairs for it the answer has empty metrics,
//! and `city` and `units` are null (unknown).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::accuracy_cache::{r2, CellRow, DetailRow, ErrorSums, Metrics, StationAccuracy};
use crate::api::auth::{require_premium, Caller};
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::params::{self, ClosedSet, QueryParams};
use crate::api::state::AppState;
use crate::catalog::Station;
use crate::models::{MODELS, NWS_MODEL};
use crate::time::fmt_iso_utc;

/// Leads the accuracy jobs compute (sql/accuracy_pairs.sql).
pub const MAX_LEAD_DAYS: i32 = 3;

/// `window` of model accuracy.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, ToSchema)]
pub enum AccuracyWindow {
    // Each discriminant is the window's length in days (the tables' `window_days`).
    #[serde(rename = "7d")]
    Days7 = 7,
    #[serde(rename = "14d")]
    Days14 = 14,
    #[serde(rename = "30d")]
    Days30 = 30,
    #[serde(rename = "90d")]
    Days90 = 90,
}

impl ClosedSet for AccuracyWindow {}

/// `target` of model accuracy.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AccuracyTarget {
    High,
    Low,
}

impl ClosedSet for AccuracyTarget {}

/// The sections `include` adds.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum AccuracySection {
    Trends,
    DailyDetail,
}

impl ClosedSet for AccuracySection {}

/// The `station_code` of this endpoint: a catalog station, or any well-formed ICAO code.
fn station_param(raw: &Option<String>) -> Result<(String, Option<&'static Station>), ApiError> {
    let raw = params::required("station_code", raw, "an ICAO station code, e.g. KNYC or KORD")?;
    if let Some(s) = crate::catalog::Catalog::global().lookup(raw) {
        return Ok((s.code.clone(), Some(s)));
    }
    let code = raw.to_ascii_uppercase();
    let mut chars = code.chars();
    let icao = code.len() == 4
        && chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if !icao {
        return Err(ApiError::bad_request(
            format!("Invalid station_code: {}", raw.chars().take(24).collect::<String>()),
            "station_code is an ICAO code: four letters or digits, the first a letter (e.g. KNYC, KORD)",
        ));
    }
    Ok((code, None))
}

/// The request, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct AccuracyQuery {
    pub window: AccuracyWindow,
    /// `None`: every model.
    pub models: Option<BTreeSet<String>>,
    /// `None`: every run-time label.
    pub run_times: Option<BTreeSet<String>>,
    pub trends: bool,
    pub daily_detail: bool,
    pub lead_days: i32,
    pub target: AccuracyTarget,
}

/// A comma-separated list parameter (empty items ignored); `None` when absent or empty.
fn list(raw: &Option<String>) -> Option<Vec<String>> {
    let items: Vec<String> =
        params::value(raw)?.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
    (!items.is_empty()).then_some(items)
}

impl AccuracyQuery {
    pub fn parse(p: &ModelAccuracyQuery) -> Result<Self, ApiError> {
        let window = match params::value(&p.window) {
            None => AccuracyWindow::Days7,
            Some(w) => AccuracyWindow::from_name(w).map_err(|valid| {
                ApiError::bad_request(
                    format!("Invalid window '{w}'"),
                    format!("window must be one of {}", valid.join(", ")),
                )
            })?,
        };
        let models = match list(&p.model) {
            None => None,
            Some(names) => {
                let known: Vec<&str> = MODELS.iter().map(|m| m.name).chain([NWS_MODEL]).collect();
                if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
                    return Err(ApiError::bad_request(
                        format!("Unknown model '{bad}'"),
                        format!("model names are case-sensitive: {}", known.join(", ")),
                    ));
                }
                Some(names.into_iter().collect())
            }
        };
        let run_times = match list(&p.run_time) {
            None => None,
            Some(labels) => {
                let valid = |l: &str| {
                    l.is_ascii() && l.len() == 3 && l.ends_with('z') && l[..2].parse::<u8>().is_ok_and(|h| h < 24)
                };
                if let Some(bad) = labels.iter().find(|l| !valid(l)) {
                    return Err(ApiError::bad_request(
                        format!("Invalid run_time '{bad}'"),
                        "run_time labels are the UTC initialization hour as HHz: 00z, 06z, 12z, 18z ...",
                    ));
                }
                Some(labels.into_iter().collect())
            }
        };
        let (mut trends, mut daily_detail) = (false, false);
        for s in list(&p.include).unwrap_or_default() {
            match AccuracySection::from_name(&s) {
                Ok(AccuracySection::Trends) => trends = true,
                Ok(AccuracySection::DailyDetail) => daily_detail = true,
                Err(valid) => {
                    return Err(ApiError::bad_request(
                        format!("Invalid include '{s}'"),
                        format!("include takes {}, comma-separated", valid.join(" and/or ")),
                    ))
                }
            }
        }
        let lead_days = match params::value(&p.lead_days) {
            None => 1,
            Some(s) => s.parse::<i32>().ok().filter(|l| (1..=MAX_LEAD_DAYS).contains(l)).ok_or_else(|| {
                ApiError::bad_request(
                    format!("Invalid lead_days '{s}'"),
                    format!("lead_days is 1 to {MAX_LEAD_DAYS} (1: the latest run issued before the day starts)"),
                )
            })?,
        };
        let target = params::choice("target", &p.target)?.unwrap_or(AccuracyTarget::High);
        Ok(AccuracyQuery { window, models, run_times, trends, daily_detail, lead_days, target })
    }

    fn wants(&self, model: &str, label: &str) -> bool {
        self.models.as_ref().is_none_or(|m| m.contains(model))
            && self.run_times.as_ref().is_none_or(|r| r.contains(label))
    }
}

/// The 200 body (spec 4.6, plus `as_of`, `lead_days`, `target` and `units`). Metrics are in
/// the station's units, error = observed - forecast (positive bias: the model ran cold).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ModelAccuracy {
    /// The ICAO code asked, upper case.
    pub station: String,
    /// The catalog station's city; null for a code outside the catalog.
    pub city: Option<String>,
    /// When the accuracy jobs last computed the tables, ISO 8601 UTC; null before their
    /// first run.
    pub computed_at: Option<String>,
    /// The latest verified day, `YYYY-MM-DD`: the window ends there.
    pub as_of: Option<String>,
    /// `7d`, `14d`, `30d` or `90d`.
    pub window: String,
    /// 1 to 3.
    pub lead_days: i32,
    /// `high` or `low`: the daily extreme verified.
    pub target: String,
    /// `fahrenheit` or `celsius`; null for a code outside the catalog.
    pub units: Option<String>,
    /// The models with data in the window (after the `model` filter), by name.
    pub models: Vec<String>,
    /// Days with at least one pair in the window.
    pub days_available: u32,
    /// Every selected model and run time together; null without pairs.
    pub ensemble: Option<Metrics>,
    /// Per model, over the selected run times.
    pub per_model: BTreeMap<String, Metrics>,
    /// Per model, then per run-time label (`00z`, `06z`, ...).
    pub per_model_run: BTreeMap<String, BTreeMap<String, Metrics>>,
    /// With `include=trends`: per model, the rolling 7-day series, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trends: Option<BTreeMap<String, Vec<TrendPoint>>>,
    /// With `include=daily_detail`: the last 30 days, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_detail: Option<Vec<DetailDay>>,
}

/// One point of a model's rolling 7-day trend.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct TrendPoint {
    /// The window's last day, `YYYY-MM-DD`.
    pub date: String,
    pub mae_7d: f64,
    pub bias_7d: f64,
    pub n: i64,
}

/// One day of `daily_detail`: the observed extreme and each model's forecast of it.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct DetailDay {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// The observed high (`target=high`, the default); absent with `target=low`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_high: Option<f64>,
    /// The observed low (`target=low`); absent with `target=high`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_low: Option<f64>,
    /// Model name to its forecast of the day's extreme (its latest run among the selected
    /// labels).
    pub models: BTreeMap<String, f64>,
    /// Model name to the run-time label of that run.
    pub run_times: BTreeMap<String, String>,
}

/// The response body for station `code` (`station`: its catalog entry, if any) from its
/// tables.
fn respond(code: &str, station: Option<&Station>, data: &StationAccuracy, q: &AccuracyQuery) -> ModelAccuracy {
    let target = q.target.name();
    let cells: Vec<&CellRow> = data
        .cells
        .iter()
        .filter(|c| c.window_days == q.window as i32 && c.lead_days == q.lead_days && c.target == target)
        .filter(|c| q.wants(&c.model, &c.run_label) && c.sums.n > 0)
        .collect();
    let mut ensemble = ErrorSums::default();
    let mut bits = (0i64, 0i64);
    let mut per_model: BTreeMap<&str, ErrorSums> = BTreeMap::new();
    let mut per_model_run: BTreeMap<String, BTreeMap<String, Metrics>> = BTreeMap::new();
    for c in &cells {
        ensemble.add(&c.sums);
        bits = (bits.0 | c.day_bits.0, bits.1 | c.day_bits.1);
        per_model.entry(&c.model).or_default().add(&c.sums);
        if let Some(m) = c.sums.metrics() {
            per_model_run.entry(c.model.clone()).or_default().insert(c.run_label.clone(), m);
        }
    }
    let models: Vec<&str> = per_model.keys().copied().collect();
    ModelAccuracy {
        station: code.to_string(),
        city: station.map(|s| s.city.clone()),
        computed_at: data.computed_at.map(fmt_iso_utc),
        as_of: data.as_of.map(|d| d.to_string()),
        window: q.window.name().to_string(),
        lead_days: q.lead_days,
        target: target.to_string(),
        units: station.map(|s| s.units.as_str().to_string()),
        models: models.iter().map(|m| m.to_string()).collect(),
        days_available: bits.0.count_ones() + bits.1.count_ones(),
        ensemble: ensemble.metrics(),
        per_model: per_model.iter().filter_map(|(m, s)| Some((m.to_string(), s.metrics()?))).collect(),
        per_model_run,
        trends: q.trends.then(|| trends(data, q, &models)),
        daily_detail: q.daily_detail.then(|| daily_detail(data, q, &models)),
    }
}

/// Per model, the rolling 7-day points of the selected labels added up.
fn trends(data: &StationAccuracy, q: &AccuracyQuery, models: &[&str]) -> BTreeMap<String, Vec<TrendPoint>> {
    let mut by_model: BTreeMap<&str, BTreeMap<NaiveDate, ErrorSums>> = BTreeMap::new();
    let target = q.target.name();
    for t in data.trends.iter().filter(|t| t.lead_days == q.lead_days && t.target == target) {
        if models.contains(&t.model.as_str()) && q.wants(&t.model, &t.run_label) {
            by_model.entry(&t.model).or_default().entry(t.date).or_default().add(&t.sums);
        }
    }
    by_model
        .into_iter()
        .map(|(m, points)| {
            let series = points
                .into_iter()
                .filter_map(|(d, s)| {
                    let x = s.metrics()?;
                    Some(TrendPoint { date: d.to_string(), mae_7d: x.mae, bias_7d: x.bias, n: x.n })
                })
                .collect();
            (m.to_string(), series)
        })
        .collect()
}

/// Per day of the last 30, the observed value and each model's forecast from its latest run
/// among the selected labels.
fn daily_detail(data: &StationAccuracy, q: &AccuracyQuery, models: &[&str]) -> Vec<DetailDay> {
    let mut days: BTreeMap<NaiveDate, (f64, BTreeMap<&str, &DetailRow>)> = BTreeMap::new();
    let target = q.target.name();
    for d in data.detail.iter().filter(|d| d.lead_days == q.lead_days && d.target == target) {
        if !models.contains(&d.model.as_str()) || !q.wants(&d.model, &d.run_label) {
            continue;
        }
        let day = days.entry(d.date).or_insert((d.observed, BTreeMap::new()));
        let slot = day.1.entry(&d.model).or_insert(d);
        if (d.run_time, &d.run_label) > (slot.run_time, &slot.run_label) {
            *slot = d;
        }
    }
    let high = q.target == AccuracyTarget::High;
    days.into_iter()
        .map(|(date, (observed, per))| DetailDay {
            date: date.to_string(),
            actual_high: high.then_some(observed),
            actual_low: (!high).then_some(observed),
            models: per.iter().map(|(m, d)| (m.to_string(), r2(d.forecast))).collect(),
            run_times: per.iter().map(|(m, d)| (m.to_string(), d.run_label.clone())).collect(),
        })
        .collect()
}

/// Query of `GET /api/v2/model_accuracy.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ModelAccuracyQuery {
    /// Station code, e.g. KORD
    #[param(required = true, value_type = String)]
    pub station_code: Option<String>,
    /// `7d` (default), `14d`, `30d` or `90d`, ending at `as_of`, the latest verified day
    #[param(value_type = Option<AccuracyWindow>)]
    pub window: Option<String>,
    /// Comma-separated, case-sensitive model names (spec 2.5 plus `NWS`, the api.weather.gov hourly forecast); omitted: all
    #[param(value_type = Option<String>)]
    pub model: Option<String>,
    /// Comma-separated run-time labels (`00z`, `12z` ...: UTC initialization hour; NWS versions are labelled by their 6-hour slot); omitted: all
    #[param(value_type = Option<String>)]
    pub run_time: Option<String>,
    /// Comma-separated optional sections: `trends`, `daily_detail`
    #[param(value_type = Option<String>)]
    pub include: Option<String>,
    /// 1 (default) to 3: the forecast of day D is the latest run of each label issued before D starts minus lead_days - 1 days
    #[param(value_type = Option<i32>, minimum = 1, maximum = 3)]
    pub lead_days: Option<String>,
    /// `high` (default) or `low`: which daily extreme is verified
    #[param(value_type = Option<AccuracyTarget>)]
    pub target: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v2/model_accuracy.php",
    tag = "analytics",
    operation_id = "getModelAccuracy",
    summary = "Forecast accuracy (MAE, bias, RMSE) per model and run time at a station",
    description = "Developer and Enterprise. Which model to trust at a station lately: the daily high (or low, \
                   `target=low`) forecast by each model's run against the observed one, over `window` days ending \
                   at `as_of`, as metrics `{mae, bias, rmse, n}` for all models together (`ensemble`), per model and \
                   per model and run-time label; `include=trends,daily_detail` adds a rolling 7-day series per model \
                   and the last 30 days' values. Any well-formed ICAO code is accepted (spec 2.10): a code outside \
                   the catalog answers what the tables hold for it, with `city` and `units` null; a malformed code \
                   is a 400. With `as_of`, only the pairs that could be scored by then count (each pair's \
                   forecast available and its day's verifying value known: `accuracy_pairs.available_at`); \
                   the body's own `as_of` stays the latest verified day.",
    params(ModelAccuracyQuery, crate::api::as_of::AsOfQuery),
    responses(
        (status = 200, description = "spec 4.6: station, city, computed_at, window, models, days_available, ensemble, per_model, per_model_run, [trends], [daily_detail]; plus as_of, lead_days, target, units. ensemble is null without pairs. daily_detail items carry actual_high (target=high) or actual_low (target=low)", body = ModelAccuracy),
        (status = 400, description = "invalid parameter (station_code not an ICAO code; unknown model, label, window, include, lead_days or target), or a parameter given twice", body = crate::api::error::ErrorBody),
        (status = 403, description = "Professional and Testing keys: Access Denied", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    as_of: crate::api::as_of::AsOf,
    QueryParams(p): QueryParams<ModelAccuracyQuery>,
) -> ApiResult<Response> {
    require_premium(&caller)?;
    let (code, station) = station_param(&p.station_code)?;
    let q = AccuracyQuery::parse(&p)?;
    let data = match as_of.0 {
        None => state.accuracy.get(&state.live.ctx, &code, station.is_some(), state.live.derived_version()).await?,
        Some(t) => Arc::new(crate::api::accuracy_cache::load_as_of(&state.live.ctx, &code, t).await?),
    };
    Ok(as_of.echo(Json(respond(&code, station, &data, &q)).into_response()))
}
