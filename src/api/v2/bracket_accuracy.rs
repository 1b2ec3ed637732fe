//! `GET /api/v2/bracket_accuracy.php` (Developer and Enterprise): how good the bracket odds
//! have been, from the `bracket_scores` job's table (src/jobs/bracket_scores.rs): per
//! checkpoint, each forecaster's mean scores over the forecasts both it and ours made, our
//! skill against each baseline, and the reliability of each forecaster's bracket
//! probabilities in ten bins with its PIT histogram.
//!
//! Skill: ignorance as bits saved per forecast (the baseline's mean minus ours: positive is
//! better), RPS and Brier as 1 − ours / the baseline's (positive is better, 1 is perfect).
//! With `as_of`, only the rows computed by then whose day had settled by then count (each
//! row's `computed_at` and `settled_at`).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::NaiveDate;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Date32Type, Float64Type, Int64Type};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::model_accuracy::AccuracyTarget;
use crate::api::as_of::AsOf;
use crate::api::auth::{require_premium, Caller};
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::jobs::bracket_scores::{CHECKPOINTS, FORECASTERS};
use crate::lake::bound_sql::{utf8_column, Bindings};
use crate::time::fmt_iso_utc;

/// Query of `GET /api/v2/bracket_accuracy.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BracketAccuracyQuery {
    /// A catalog station; default: every station pooled
    #[param(value_type = Option<String>)]
    pub station_code: Option<String>,
    /// `high` or `low`; default: both pooled
    #[param(value_type = Option<AccuracyTarget>)]
    pub target: Option<String>,
    /// First settlement day counted, YYYY-MM-DD (default: the first scored)
    pub from: Option<String>,
    /// Last settlement day counted, YYYY-MM-DD (default: the last scored)
    pub to: Option<String>,
}

/// One forecaster's scores at a checkpoint.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ForecasterScores {
    /// `wxlake` (ours), `climatology`, `best_source`, `equal_weight`.
    pub forecaster: String,
    /// Forecasts scored, each beside ours of the same station, day, target and checkpoint.
    pub n: i64,
    /// Mean ignorance (bits; lower is better).
    pub ignorance: f64,
    /// Mean ranked probability score over whole values (lower is better).
    pub rps: f64,
    /// Mean Brier score of the ladder (lower is better).
    pub brier: f64,
    /// Ours against this forecaster on the same forecasts (null for ours).
    pub skill: Option<Skill>,
}

/// Our skill against a baseline (positive: ours is better).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Skill {
    /// Bits saved per forecast: the baseline's mean ignorance minus ours.
    pub ignorance_bits: f64,
    /// 1 − our mean RPS / the baseline's.
    pub rps: f64,
    /// 1 − our mean Brier score / the baseline's.
    pub brier: f64,
}

/// One checkpoint.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct CheckpointScores {
    /// `D-1 12:00`, `D-1 18:00`, `D 06:00`, `D 10:00`, `D 13:00`, `D 16:00` (station local time).
    pub checkpoint: String,
    /// Ours first, then the baselines that had a forecast.
    pub forecasters: Vec<ForecasterScores>,
}

/// One bin of a reliability diagram: the ladder brackets whose probability fell in `[lo, hi)`
/// (the last bin includes 1).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ReliabilityBin {
    pub lo: f64,
    pub hi: f64,
    /// Brackets in the bin.
    pub n: i64,
    /// Their mean probability.
    pub forecast: f64,
    /// How often they settled in.
    pub observed: f64,
}

/// A forecaster's calibration over every checkpoint.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Calibration {
    pub forecaster: String,
    /// Bins with at least one bracket, lowest first.
    pub reliability: Vec<ReliabilityBin>,
    /// Forecasts whose PIT fell in each tenth of [0, 1] (flat when calibrated).
    pub pit_histogram: Vec<i64>,
}

/// The 200 body.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct BracketAccuracy {
    /// The station asked, or null for every station pooled.
    pub station_code: Option<String>,
    /// The target asked, or null for both.
    pub target: Option<String>,
    /// First and last settlement day scored in the answer (null without any).
    pub from: Option<String>,
    pub to: Option<String>,
    /// Our forecasts scored.
    pub forecasts: i64,
    pub checkpoints: Vec<CheckpointScores>,
    pub calibration: Vec<Calibration>,
    /// The methods the counted forecasts were made by (`brackets.php`'s `method`; a row keeps
    /// its method until the job recomputes it).
    pub methods: Vec<String>,
    pub computed_at: String,
}

#[utoipa::path(
    get,
    path = "/api/v2/bracket_accuracy.php",
    tag = "analytics",
    operation_id = "getBracketAccuracy",
    summary = "How good the bracket odds have been: skill against three baselines per checkpoint, reliability",
    description = "Developer and Enterprise. From the bracket_scores job (docs/brackets.md): every settled station-day \
                   forecast at six checkpoints (D-1 12:00 and 18:00, D 06:00, 10:00, 13:00, 16:00 local) as brackets.php \
                   would have answered then, and three baselines made from the same inputs (climatology, the best single \
                   source's Gaussian, the equal-weight fraction of sources), scored against the settled value. With \
                   `as_of`, only the forecasts settled by then count.",
    params(BracketAccuracyQuery, crate::api::as_of::AsOfQuery),
    responses(
        (status = 200, description = "scores per checkpoint and calibration", body = BracketAccuracy),
        (status = 400, description = "invalid parameter, unknown station, from after to, or a parameter given twice", body = crate::api::error::ErrorBody),
        (status = 403, description = "Professional and Testing keys: Access Denied", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    as_of: AsOf,
    QueryParams(q): QueryParams<BracketAccuracyQuery>,
) -> ApiResult<Response> {
    require_premium(&caller)?;
    let station = match params::value(&q.station_code) {
        Some(_) => Some(params::station("station_code", &q.station_code)?),
        None => None,
    };
    let target = params::choice::<AccuracyTarget>("target", &q.target)?.map(|t| match t {
        AccuracyTarget::High => "high",
        AccuracyTarget::Low => "low",
    });
    let (from, to) = (params::date("from", &q.from)?, params::date("to", &q.to)?);
    if let (Some(a), Some(b)) = (from, to) {
        if a > b {
            return Err(ApiError::bad_request(format!("from {a} is after to {b}"), "from must not be after to"));
        }
    }
    let filter = Filter { station: station.map(|s| s.code.as_str()), target, from, to, as_of };
    let (checkpoints, calibration, (span, methods)) =
        futures::try_join!(scores(&state, &filter), calibration(&state, &filter), span(&state, &filter))?;
    let forecasts = checkpoints
        .iter()
        .flat_map(|c| c.forecasters.iter().filter(|f| f.forecaster == FORECASTERS[0]).map(|f| f.n))
        .sum();
    let body = BracketAccuracy {
        station_code: station.map(|s| s.code.clone()),
        target: target.map(str::to_string),
        from: span.map(|s| s.0.to_string()),
        to: span.map(|s| s.1.to_string()),
        forecasts,
        checkpoints,
        calibration,
        methods,
        computed_at: fmt_iso_utc(state.now()),
    };
    Ok(as_of.echo(Json(body).into_response()))
}

/// The rows asked about.
struct Filter<'a> {
    station: Option<&'a str>,
    target: Option<&'a str>,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
    as_of: AsOf,
}

impl Filter<'_> {
    /// The SQL conditions, bound in `b`.
    fn sql(&self, b: &mut Bindings) -> String {
        let mut c = vec!["TRUE".to_string()];
        if let Some(s) = self.station {
            c.push(format!("station_code = {}", b.str(s)));
        }
        if let Some(t) = self.target {
            c.push(format!("target = {}", b.str(t)));
        }
        if let Some(d) = self.from {
            c.push(format!("date >= {}", b.date(d)));
        }
        if let Some(d) = self.to {
            c.push(format!("date <= {}", b.date(d)));
        }
        if let Some(t) = self.as_of.0 {
            let t = b.time(t);
            c.push(format!("settled_at <= {t} AND computed_at <= {t}"));
        }
        c.join(" AND ")
    }
}

/// Per checkpoint and forecaster, the means over the forecasts it shares with ours.
async fn scores(state: &AppState, f: &Filter<'_>) -> ApiResult<Vec<CheckpointScores>> {
    let mut b = Bindings::new();
    let sql = format!(
        "WITH f AS (SELECT station_code, date, target, checkpoint, forecaster, ignorance, rps, brier \
         FROM bracket_scores WHERE ignorance IS NOT NULL AND {cond}) \
         SELECT o.checkpoint, o.forecaster, count(*), avg(w.ignorance), avg(o.ignorance), avg(w.rps), avg(o.rps), \
         avg(w.brier), avg(o.brier) FROM f w JOIN f o ON w.station_code = o.station_code AND w.date = o.date \
         AND w.target = o.target AND w.checkpoint = o.checkpoint WHERE w.forecaster = 'wxlake' \
         GROUP BY o.checkpoint, o.forecaster",
        cond = f.sql(&mut b),
    );
    let mut by_checkpoint: BTreeMap<usize, Vec<(usize, ForecasterScores)>> = BTreeMap::new();
    for batch in b.collect(&state.live.ctx, &sql).await? {
        let (checkpoints, forecasters) = (utf8_column(&batch, 0)?, utf8_column(&batch, 1)?);
        let (checkpoints, forecasters) = (checkpoints.as_string::<i32>(), forecasters.as_string::<i32>());
        let n = batch.column(2).as_primitive::<Int64Type>();
        let mean = |i: usize, r: usize| {
            let a = batch.column(i).as_primitive::<Float64Type>();
            a.is_valid(r).then(|| a.value(r)).filter(|v| v.is_finite())
        };
        for r in 0..batch.num_rows() {
            let (Some(ci), Some(fi)) = (
                CHECKPOINTS.iter().position(|c| c.2 == checkpoints.value(r)),
                FORECASTERS.iter().position(|x| *x == forecasters.value(r)),
            ) else {
                continue;
            };
            // Means of non-null scores over at least one forecast: never missing, but a row
            // without them is left out rather than sent as a number it is not.
            let (Some(o0), Some(o1), Some(o2), Some(t0), Some(t1), Some(t2)) =
                (mean(3, r), mean(5, r), mean(7, r), mean(4, r), mean(6, r), mean(8, r))
            else {
                continue;
            };
            let (ours, theirs) = ((o0, o1, o2), (t0, t1, t2));
            // A ratio needs the baseline's score above zero (null against a perfect one).
            let skill = (fi > 0 && theirs.1 > 0.0 && theirs.2 > 0.0).then(|| Skill {
                ignorance_bits: theirs.0 - ours.0,
                rps: 1.0 - ours.1 / theirs.1,
                brier: 1.0 - ours.2 / theirs.2,
            });
            let scores = ForecasterScores {
                forecaster: FORECASTERS[fi].to_string(),
                n: n.value(r),
                ignorance: theirs.0,
                rps: theirs.1,
                brier: theirs.2,
                skill,
            };
            by_checkpoint.entry(ci).or_default().push((fi, scores));
        }
    }
    Ok(by_checkpoint
        .into_iter()
        .map(|(ci, mut list)| {
            list.sort_by_key(|(fi, _)| *fi);
            CheckpointScores {
                checkpoint: CHECKPOINTS[ci].2.to_string(),
                forecasters: list.into_iter().map(|(_, s)| s).collect(),
            }
        })
        .collect())
}

/// Per forecaster, the reliability of its bracket probabilities and its PIT histogram.
async fn calibration(state: &AppState, f: &Filter<'_>) -> ApiResult<Vec<Calibration>> {
    let mut b = Bindings::new();
    let cond = f.sql(&mut b);
    let sql = format!(
        "SELECT forecaster, 'reliability', LEAST(CAST(floor(p * 10) AS BIGINT), 9) AS bin, count(*), sum(p), \
         sum(CASE WHEN hit THEN 1.0 ELSE 0.0 END) FROM bracket_scores WHERE {cond} GROUP BY forecaster, bin \
         UNION ALL \
         SELECT forecaster, 'pit', LEAST(CAST(floor(pit * 10) AS BIGINT), 9) AS bin, count(*), 0.0, 0.0 \
         FROM bracket_scores WHERE pit IS NOT NULL AND {cond} GROUP BY forecaster, bin"
    );
    let mut out: Vec<Calibration> = FORECASTERS
        .iter()
        .map(|f| Calibration { forecaster: f.to_string(), reliability: Vec::new(), pit_histogram: vec![0; 10] })
        .collect();
    let mut bins: Vec<BTreeMap<i64, (i64, f64, f64)>> = vec![BTreeMap::new(); FORECASTERS.len()];
    for batch in b.collect(&state.live.ctx, &sql).await? {
        let (forecasters, kinds) = (utf8_column(&batch, 0)?, utf8_column(&batch, 1)?);
        let (forecasters, kinds) = (forecasters.as_string::<i32>(), kinds.as_string::<i32>());
        let (bin, n) = (batch.column(2).as_primitive::<Int64Type>(), batch.column(3).as_primitive::<Int64Type>());
        let (sum_p, hits) =
            (batch.column(4).as_primitive::<Float64Type>(), batch.column(5).as_primitive::<Float64Type>());
        for r in 0..batch.num_rows() {
            let Some(fi) = FORECASTERS.iter().position(|x| *x == forecasters.value(r)) else { continue };
            let k = bin.value(r).clamp(0, 9);
            match kinds.value(r) {
                "pit" => out[fi].pit_histogram[k as usize] += n.value(r),
                _ => {
                    let e = bins[fi].entry(k).or_default();
                    *e = (e.0 + n.value(r), e.1 + sum_p.value(r), e.2 + hits.value(r));
                }
            }
        }
    }
    for (c, bins) in out.iter_mut().zip(bins) {
        c.reliability = bins
            .into_iter()
            .map(|(k, (n, sum_p, hits))| ReliabilityBin {
                lo: k as f64 / 10.0,
                hi: (k + 1) as f64 / 10.0,
                n,
                forecast: sum_p / n as f64,
                observed: hits / n as f64,
            })
            .collect();
    }
    out.retain(|c| !c.reliability.is_empty());
    Ok(out)
}

/// The first and last settlement day of the rows asked about, and their methods.
async fn span(state: &AppState, f: &Filter<'_>) -> ApiResult<(Option<(NaiveDate, NaiveDate)>, Vec<String>)> {
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT min(date), max(date), method FROM bracket_scores WHERE {} GROUP BY method ORDER BY method",
        f.sql(&mut b)
    );
    let (mut span, mut methods): (Option<(NaiveDate, NaiveDate)>, Vec<String>) = (None, Vec::new());
    for batch in b.collect(&state.live.ctx, &sql).await? {
        let (first, last) =
            (batch.column(0).as_primitive::<Date32Type>(), batch.column(1).as_primitive::<Date32Type>());
        let names = utf8_column(&batch, 2)?;
        let names = names.as_string::<i32>();
        for r in 0..batch.num_rows() {
            // Null only in rows written before the column existed.
            if names.is_valid(r) {
                methods.push(names.value(r).to_string());
            }
            let dates = Date32Type::to_naive_date_opt(first.value(r)).zip(Date32Type::to_naive_date_opt(last.value(r)));
            if let Some((a, z)) = dates {
                span = Some(span.map_or((a, z), |(x, y)| (x.min(a), y.max(z))));
            }
        }
    }
    Ok((span, methods))
}
