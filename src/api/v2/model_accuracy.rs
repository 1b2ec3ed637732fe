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
use std::time::Duration as StdDuration;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type, Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
use datafusion::prelude::SessionContext;
use serde::Serialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::forecasts::lit;
use crate::api::auth::{require_premium, Caller};
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::loading_cache::LoadingCache;
use crate::api::params::Params;
use crate::api::AppState;
use crate::catalog::Station;
use crate::models::{MODELS, NWS_MODEL};

/// How long a station's accuracy tables stay in memory before they are read again.
pub const CACHE_TTL: StdDuration = StdDuration::from_secs(60);
/// Leads the accuracy jobs compute (sql/accuracy_pairs.sql).
pub const MAX_LEAD_DAYS: i32 = 3;
/// `window` values and their days.
pub const WINDOWS: [(&str, i32); 4] = [("7d", 7), ("14d", 14), ("30d", 30), ("90d", 90)];

/// A metrics object (spec 2.9).
#[derive(Debug, Clone, Copy, Serialize, ToSchema, PartialEq)]
pub struct Metrics {
    pub mae: f64,
    pub bias: f64,
    pub rmse: f64,
    pub n: i64,
}

/// Sums of errors that add up across models, labels and days.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ErrorSums {
    pub n: i64,
    pub sum: f64,
    pub sum_abs: f64,
    pub sum_sq: f64,
}

impl ErrorSums {
    fn add(&mut self, o: &ErrorSums) {
        self.n += o.n;
        self.sum += o.sum;
        self.sum_abs += o.sum_abs;
        self.sum_sq += o.sum_sq;
    }

    /// The metrics, rounded to hundredths; `None` without pairs.
    pub fn metrics(&self) -> Option<Metrics> {
        (self.n > 0).then(|| {
            let n = self.n as f64;
            Metrics { mae: r2(self.sum_abs / n), bias: r2(self.sum / n), rmse: r2((self.sum_sq / n).sqrt()), n: self.n }
        })
    }
}

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// One `model_accuracy` row of scope per_model_run.
#[derive(Debug, Clone)]
struct CellRow {
    window_days: i32,
    lead_days: i32,
    target: String,
    model: String,
    run_label: String,
    sums: ErrorSums,
    day_bits: (i64, i64),
}

/// One `accuracy_trends` row of scope per_model_run.
#[derive(Debug, Clone)]
struct TrendRow {
    lead_days: i32,
    target: String,
    model: String,
    run_label: String,
    date: NaiveDate,
    sums: ErrorSums,
}

/// One `accuracy_daily_detail` row.
#[derive(Debug, Clone)]
struct DetailRow {
    date: NaiveDate,
    lead_days: i32,
    target: String,
    model: String,
    run_label: String,
    run_time: i64,
    forecast: f64,
    observed: f64,
}

/// Everything the endpoint serves for one station.
#[derive(Debug, Default)]
struct StationAccuracy {
    computed_at: Option<DateTime<Utc>>,
    as_of: Option<NaiveDate>,
    cells: Vec<CellRow>,
    trends: Vec<TrendRow>,
    detail: Vec<DetailRow>,
}

/// Per-station cache of the accuracy tables.
#[derive(Default)]
pub struct AccuracyCache {
    entries: LoadingCache<String, StationAccuracy>,
}

impl AccuracyCache {
    /// A catalog station's tables (cached), or another code's (read now).
    async fn get(&self, ctx: &SessionContext, code: &str, in_catalog: bool) -> ApiResult<Arc<StationAccuracy>> {
        if !in_catalog {
            return Ok(Arc::new(load(ctx, code).await?));
        }
        self.entries.get_or_load(&code.to_string(), 0, CACHE_TTL, || load(ctx, code)).await
    }
}

/// The `station_code` of this endpoint: a catalog station, or any well-formed ICAO code.
fn station_param(p: &Params) -> Result<(String, Option<&'static Station>), ApiError> {
    let raw = p.required("station_code", "an ICAO station code, e.g. KNYC or KORD")?;
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

async fn query(ctx: &SessionContext, sql: &str) -> ApiResult<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}

fn strings(b: &RecordBatch, i: usize) -> ApiResult<datafusion::arrow::array::ArrayRef> {
    cast(b.column(i), &DataType::Utf8).map_err(ApiError::internal)
}

fn date_of(days: i32) -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default() + chrono::Duration::days(i64::from(days))
}

async fn load(ctx: &SessionContext, code: &str) -> ApiResult<StationAccuracy> {
    let st = lit(code);
    let mut out = StationAccuracy::default();
    let cells = query(
        ctx,
        &format!(
            "SELECT window_days, lead_days, target, model, run_label, n, sum_error, sum_abs_error, sum_sq_error, \
             day_bits_lo, day_bits_hi, as_of, computed_at FROM model_accuracy \
             WHERE station_code = {st} AND scope = 'per_model_run'"
        ),
    )
    .await?;
    for b in &cells {
        let (target, model, label) = (strings(b, 2)?, strings(b, 3)?, strings(b, 4)?);
        let (target, model, label) = (target.as_string::<i32>(), model.as_string::<i32>(), label.as_string::<i32>());
        let i32s = |i: usize| b.column(i).as_primitive::<Int32Type>();
        let i64s = |i: usize| b.column(i).as_primitive::<Int64Type>();
        let f64s = |i: usize| b.column(i).as_primitive::<Float64Type>();
        let as_of = b.column(11).as_primitive::<Date32Type>();
        let computed = b.column(12).as_primitive::<TimestampMicrosecondType>();
        for r in 0..b.num_rows() {
            out.as_of = out.as_of.max(Some(date_of(as_of.value(r))));
            out.computed_at = out.computed_at.max(DateTime::from_timestamp_micros(computed.value(r)));
            out.cells.push(CellRow {
                window_days: i32s(0).value(r),
                lead_days: i32s(1).value(r),
                target: target.value(r).to_string(),
                model: model.value(r).to_string(),
                run_label: label.value(r).to_string(),
                sums: ErrorSums {
                    n: i64s(5).value(r),
                    sum: f64s(6).value(r),
                    sum_abs: f64s(7).value(r),
                    sum_sq: f64s(8).value(r),
                },
                day_bits: (i64s(9).value(r), i64s(10).value(r)),
            });
        }
    }
    let trends = query(
        ctx,
        &format!(
            "SELECT lead_days, target, model, run_label, date, n, sum_error, sum_abs_error, sum_sq_error \
             FROM accuracy_trends WHERE station_code = {st} AND scope = 'per_model_run'"
        ),
    )
    .await?;
    for b in &trends {
        let (target, model, label) = (strings(b, 1)?, strings(b, 2)?, strings(b, 3)?);
        let (target, model, label) = (target.as_string::<i32>(), model.as_string::<i32>(), label.as_string::<i32>());
        let f64s = |i: usize| b.column(i).as_primitive::<Float64Type>();
        for r in 0..b.num_rows() {
            out.trends.push(TrendRow {
                lead_days: b.column(0).as_primitive::<Int32Type>().value(r),
                target: target.value(r).to_string(),
                model: model.value(r).to_string(),
                run_label: label.value(r).to_string(),
                date: date_of(b.column(4).as_primitive::<Date32Type>().value(r)),
                sums: ErrorSums {
                    n: b.column(5).as_primitive::<Int64Type>().value(r),
                    sum: f64s(6).value(r),
                    sum_abs: f64s(7).value(r),
                    sum_sq: f64s(8).value(r),
                },
            });
        }
    }
    let detail = query(
        ctx,
        &format!(
            "SELECT date, lead_days, target, model, run_label, run_time, forecast, observed \
             FROM accuracy_daily_detail WHERE station_code = {st}"
        ),
    )
    .await?;
    for b in &detail {
        let (target, model, label) = (strings(b, 2)?, strings(b, 3)?, strings(b, 4)?);
        let (target, model, label) = (target.as_string::<i32>(), model.as_string::<i32>(), label.as_string::<i32>());
        for r in 0..b.num_rows() {
            out.detail.push(DetailRow {
                date: date_of(b.column(0).as_primitive::<Date32Type>().value(r)),
                lead_days: b.column(1).as_primitive::<Int32Type>().value(r),
                target: target.value(r).to_string(),
                model: model.value(r).to_string(),
                run_label: label.value(r).to_string(),
                run_time: b.column(5).as_primitive::<TimestampMicrosecondType>().value(r),
                forecast: b.column(6).as_primitive::<Float64Type>().value(r),
                observed: b.column(7).as_primitive::<Float64Type>().value(r),
            });
        }
    }
    Ok(out)
}

/// The request, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct AccuracyQuery {
    pub window: (&'static str, i32),
    /// `None`: every model.
    pub models: Option<BTreeSet<String>>,
    /// `None`: every run-time label.
    pub run_times: Option<BTreeSet<String>>,
    pub trends: bool,
    pub daily_detail: bool,
    pub lead_days: i32,
    pub target: &'static str,
}

/// A comma-separated list parameter (empty items ignored); `None` when absent or empty.
fn list(p: &Params, name: &str) -> Option<Vec<String>> {
    let items: Vec<String> =
        p.get(name)?.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
    (!items.is_empty()).then_some(items)
}

impl AccuracyQuery {
    pub fn parse(p: &Params) -> Result<Self, ApiError> {
        let window = match p.get("window") {
            None => WINDOWS[0],
            Some(w) => WINDOWS.into_iter().find(|(name, _)| *name == w).ok_or_else(|| {
                ApiError::bad_request(format!("Invalid window '{w}'"), "window must be one of 7d, 14d, 30d, 90d")
            })?,
        };
        let models = match list(p, "model") {
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
        let run_times = match list(p, "run_time") {
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
        for s in list(p, "include").unwrap_or_default() {
            match s.as_str() {
                "trends" => trends = true,
                "daily_detail" => daily_detail = true,
                other => {
                    return Err(ApiError::bad_request(
                        format!("Invalid include '{other}'"),
                        "include takes trends and/or daily_detail, comma-separated",
                    ))
                }
            }
        }
        let lead_days = match p.get("lead_days") {
            None => 1,
            Some(s) => s.parse::<i32>().ok().filter(|l| (1..=MAX_LEAD_DAYS).contains(l)).ok_or_else(|| {
                ApiError::bad_request(
                    format!("Invalid lead_days '{s}'"),
                    format!("lead_days is 1 to {MAX_LEAD_DAYS} (1: the latest run issued before the day starts)"),
                )
            })?,
        };
        let target = match p.choice("target", &["high", "low"])? {
            Some("low") => "low",
            _ => "high",
        };
        Ok(AccuracyQuery { window, models, run_times, trends, daily_detail, lead_days, target })
    }

    fn wants(&self, model: &str, label: &str) -> bool {
        self.models.as_ref().is_none_or(|m| m.contains(model))
            && self.run_times.as_ref().is_none_or(|r| r.contains(label))
    }
}

/// The response body for station `code` (`station`: its catalog entry, if any) from its
/// tables.
fn respond(code: &str, station: Option<&Station>, data: &StationAccuracy, q: &AccuracyQuery) -> Value {
    let cells: Vec<&CellRow> = data
        .cells
        .iter()
        .filter(|c| c.window_days == q.window.1 && c.lead_days == q.lead_days && c.target == q.target)
        .filter(|c| q.wants(&c.model, &c.run_label) && c.sums.n > 0)
        .collect();
    let mut ensemble = ErrorSums::default();
    let mut bits = (0i64, 0i64);
    let mut per_model: BTreeMap<&str, ErrorSums> = BTreeMap::new();
    let mut per_model_run: BTreeMap<&str, BTreeMap<&str, Metrics>> = BTreeMap::new();
    for c in &cells {
        ensemble.add(&c.sums);
        bits = (bits.0 | c.day_bits.0, bits.1 | c.day_bits.1);
        per_model.entry(&c.model).or_default().add(&c.sums);
        if let Some(m) = c.sums.metrics() {
            per_model_run.entry(&c.model).or_default().insert(&c.run_label, m);
        }
    }
    let models: Vec<&str> = per_model.keys().copied().collect();
    let mut body = json!({
        "station": code,
        "city": station.map(|s| s.city.as_str()),
        "computed_at": data.computed_at.map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
        "as_of": data.as_of.map(|d| d.to_string()),
        "window": q.window.0,
        "lead_days": q.lead_days,
        "target": q.target,
        "units": station.map(|s| s.units.as_str()),
        "models": models,
        "days_available": bits.0.count_ones() + bits.1.count_ones(),
        "ensemble": ensemble.metrics(),
        "per_model": per_model.iter().map(|(m, s)| (m.to_string(), json!(s.metrics()))).collect::<Map<_, _>>(),
        "per_model_run": per_model_run,
    });
    if q.trends {
        body["trends"] = Value::Object(trends(data, q, &models));
    }
    if q.daily_detail {
        body["daily_detail"] = Value::Array(daily_detail(data, q, &models));
    }
    body
}

/// Per model, the rolling 7-day points of the selected labels added up.
fn trends(data: &StationAccuracy, q: &AccuracyQuery, models: &[&str]) -> Map<String, Value> {
    let mut by_model: BTreeMap<&str, BTreeMap<NaiveDate, ErrorSums>> = BTreeMap::new();
    for t in data.trends.iter().filter(|t| t.lead_days == q.lead_days && t.target == q.target) {
        if models.contains(&t.model.as_str()) && q.wants(&t.model, &t.run_label) {
            by_model.entry(&t.model).or_default().entry(t.date).or_default().add(&t.sums);
        }
    }
    by_model
        .into_iter()
        .map(|(m, points)| {
            let series: Vec<Value> = points
                .into_iter()
                .filter_map(|(d, s)| {
                    let x = s.metrics()?;
                    Some(json!({"date": d.to_string(), "mae_7d": x.mae, "bias_7d": x.bias, "n": x.n}))
                })
                .collect();
            (m.to_string(), Value::Array(series))
        })
        .collect()
}

/// Per day of the last 30, the observed value and each model's forecast from its latest run
/// among the selected labels.
fn daily_detail(data: &StationAccuracy, q: &AccuracyQuery, models: &[&str]) -> Vec<Value> {
    let mut days: BTreeMap<NaiveDate, (f64, BTreeMap<&str, &DetailRow>)> = BTreeMap::new();
    for d in data.detail.iter().filter(|d| d.lead_days == q.lead_days && d.target == q.target) {
        if !models.contains(&d.model.as_str()) || !q.wants(&d.model, &d.run_label) {
            continue;
        }
        let day = days.entry(d.date).or_insert((d.observed, BTreeMap::new()));
        let slot = day.1.entry(&d.model).or_insert(d);
        if (d.run_time, &d.run_label) > (slot.run_time, &slot.run_label) {
            *slot = d;
        }
    }
    let actual = if q.target == "high" { "actual_high" } else { "actual_low" };
    days.into_iter()
        .map(|(date, (observed, per))| {
            let forecasts: Map<String, Value> =
                per.iter().map(|(m, d)| (m.to_string(), json!(r2(d.forecast)))).collect();
            let labels: Map<String, Value> = per.iter().map(|(m, d)| (m.to_string(), json!(d.run_label))).collect();
            json!({"date": date.to_string(), actual: observed, "models": forecasts, "run_times": labels})
        })
        .collect()
}

#[utoipa::path(
    get,
    path = "/api/v2/model_accuracy.php",
    tag = "analytics",
    params(
        ("station_code" = String, Query, description = "Station code, e.g. KORD"),
        ("window" = Option<crate::api::docs::param::AccuracyWindow>, Query, description = "`7d` (default), `14d`, `30d` or `90d`, ending at `as_of`, the latest verified day"),
        ("model" = Option<String>, Query, description = "Comma-separated, case-sensitive model names (spec 2.5 plus `NWS`, the api.weather.gov hourly forecast); omitted: all"),
        ("run_time" = Option<String>, Query, description = "Comma-separated run-time labels (`00z`, `12z` ...: UTC initialization hour; NWS versions are labelled by their 6-hour slot); omitted: all"),
        ("include" = Option<String>, Query, description = "Comma-separated optional sections: `trends`, `daily_detail`"),
        ("lead_days" = Option<i32>, Query, minimum = 1, maximum = 3, description = "1 (default) to 3: the forecast of day D is the latest run of each label issued before D starts minus lead_days - 1 days"),
        ("target" = Option<crate::api::docs::param::AccuracyTarget>, Query, description = "`high` (default) or `low`: which daily extreme is verified"),
    ),
    responses(
        (status = 200, description = "spec 4.6: station, city, computed_at, window, models, days_available, ensemble, per_model, per_model_run, [trends], [daily_detail]; plus as_of, lead_days, target, units. Metrics are {mae, bias, rmse, n} in the station's units, error = observed - forecast (positive bias: the model ran cold); ensemble is null without pairs. daily_detail items carry actual_high (target=high) or actual_low (target=low)", body = Object),
        (status = 400, description = "invalid parameter (station_code not an ICAO code; unknown model, label, window, include, lead_days or target)", body = crate::api::error::ErrorBody),
        (status = 403, description = "Professional and Testing keys: Access Denied", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> ApiResult<Response> {
    require_premium(&caller)?;
    let p = Params(q);
    let (code, station) = station_param(&p)?;
    let q = AccuracyQuery::parse(&p)?;
    let data = state.accuracy.get(&state.live.ctx, &code, station.is_some()).await?;
    Ok(Json(respond(&code, station, &data, &q)).into_response())
}
