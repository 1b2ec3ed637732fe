//! `GET /api/v2/brackets.php` (Developer and Enterprise): the probability of every whole
//! settlement value of a station's day high or low, and of each bracket of a ladder, as
//! `bracket_odds` computes it at the asked time (its docs say from what); this formats it.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::model_accuracy::AccuracyTarget;
use super::observations::logic_param;
use crate::api::as_of::AsOf;
use crate::api::auth::{require_premium, Caller};
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::bracket_odds::{odds, Ask, BracketP, Odds, OddsError, MAX_LEAD_DAYS};
use crate::brackets::markets::Quantity;
use crate::brackets::{BracketsError, Ladder, METHOD};
use crate::extremes::Logic;
use crate::time::fmt_iso_utc;

/// The quantiles reported.
const QUANTILES: [u8; 7] = [5, 10, 25, 50, 75, 90, 95];

/// Query of `GET /api/v2/brackets.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BracketsQuery {
    /// Station code (GET /api/v2/stations.php lists the catalog)
    #[param(required = true, value_type = String)]
    pub station_code: Option<String>,
    /// The settlement day YYYY-MM-DD in the logic's clock (default: the station's current day;
    /// at most 3 days ahead, the leads the odds are verified on)
    pub date: Option<String>,
    /// `high` or `low`
    #[param(required = true, value_type = AccuracyTarget)]
    pub target: Option<String>,
    /// `nws` (Local Standard Time day, as the climate report) or `wu` (civil day); default: the
    /// station's market's logic (data/markets.csv), else `nws`
    #[param(value_type = Option<Logic>)]
    pub logic: Option<String>,
    /// A ladder such as `<=79,80-81,82-83,84-85,86-87,>=88` (every whole value in exactly one
    /// bracket); default: the market's usual ladder around the median, else 2-degree
    /// brackets (1-degree in °C)
    pub brackets: Option<String>,
}

/// One whole settlement value.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ValueP {
    pub value: i32,
    pub p: f64,
}

/// A source the distribution used.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct BracketInput {
    /// A model, `NWS` (the hourly forecast), or a daily-forecasts source.
    pub source: String,
    /// Its run (the NWS version's generation time, a daily forecast's issuance), ISO 8601 UTC.
    pub run: String,
    /// Its forecast of the day's value, settlement unit.
    pub forecast: f64,
    /// Its share of the combined centre.
    pub weight: f64,
    /// Its mean error (settled − forecast) over its verified days, added to its forecast.
    pub bias: f64,
    /// Root mean squared error around the bias.
    pub spread: f64,
    /// Effective verified days behind bias and spread (season- and age-weighted).
    pub n: f64,
}

/// The market the day settles, when the catalog has one.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct MarketRef {
    pub venue: String,
    pub series: String,
    /// Who publishes the settlement value for this day.
    pub source: String,
}

/// The 200 body.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Brackets {
    pub station_code: String,
    /// The settlement day.
    pub date: String,
    /// `high` or `low`.
    pub target: String,
    pub logic: String,
    /// `fahrenheit` or `celsius`: the settlement unit of every value.
    pub units: String,
    pub market: Option<MarketRef>,
    /// Every whole value with a probability, lowest first; they sum to 1.
    pub distribution: Vec<ValueP>,
    /// The ladder's brackets, lowest first; they sum to 1.
    pub brackets: Vec<BracketP>,
    pub mean: f64,
    /// Quantiles 5, 10, 25, 50, 75, 90, 95 (whole values), keyed `p5` ... `p95`.
    pub quantiles: std::collections::BTreeMap<String, i32>,
    /// Target high: the running high so far (the value cannot settle below it); null before the day.
    pub floor: Option<i32>,
    /// Target low: the running low so far (the value cannot settle above it); null before the day.
    pub ceiling: Option<i32>,
    /// A final climate report settled the value: the distribution is that value.
    pub settled: Option<i32>,
    pub inputs: Vec<BracketInput>,
    /// The lead (days) whose verified errors were used: whole days to the day's start, 1
    /// within the day (where a run issued after the LST day began uses its lead-0 errors).
    pub lead_days: i64,
    /// Verified past days behind the fit.
    pub history_days: usize,
    /// Within the day: the effective number of past days, seen at the same local hour with
    /// a forecast as far above the running high (below the running low), that say how much
    /// the day still adds; null when that step did not apply (before the day or in its
    /// first hour, after it ended, a settled day, fewer than 10 such days: among them a
    /// lake whose `daily_extremes` rows predate the hour columns, until that job is run
    /// again over the history).
    pub same_day_days: Option<f64>,
    /// The method and its version.
    pub method: String,
    /// When this answer was computed (ISO 8601 UTC).
    pub computed_at: String,
    /// The moment answered for: `as_of` when given, else now.
    pub as_of: String,
}

#[utoipa::path(
    get,
    path = "/api/v2/brackets.php",
    tag = "analytics",
    operation_id = "getBrackets",
    summary = "The probability of every settlement value and bracket of a station's day high or low",
    description = "Developer and Enterprise. From each source's latest forecast of the day known at the time (models' \
                   runs through forecast_daily, the NWS hourly version in force, daily forecasts) and each source's \
                   verified errors at that lead (accuracy_pairs known then), combined by the method named in `method` \
                   (docs/brackets.md); for the current or a past day the running high (low) under the logic is a \
                   floor (ceiling), and a final climate report settles the value. With `as_of`, only what was \
                   published and verified by then counts.",
    params(BracketsQuery, crate::api::as_of::AsOfQuery),
    responses(
        (status = 200, description = "the distribution, the ladder's brackets and the inputs", body = Brackets),
        (status = 400, description = "invalid or missing parameter, unknown station, a bad ladder, a day more than 3 days ahead, or a parameter given twice", body = crate::api::error::ErrorBody),
        (status = 403, description = "Professional and Testing keys: Access Denied", body = crate::api::error::ErrorBody),
        (status = 404, description = "no forecast of the day was known at the time", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    as_of: AsOf,
    QueryParams(q): QueryParams<BracketsQuery>,
) -> ApiResult<Response> {
    require_premium(&caller)?;
    let station = params::station("station_code", &q.station_code)?;
    let target = target_param(&q.target)?;
    let t = as_of.now(&state);
    let logic = if params::value(&q.logic).is_some() { Some(logic_param(&q.logic)?) } else { None };
    let ask = Ask::settling(station, target, params::date("date", &q.date)?, logic, t);
    if ask.days_ahead() > MAX_LEAD_DAYS {
        return Err(ApiError::bad_request(
            format!("date {} starts more than {MAX_LEAD_DAYS} days after {}", ask.date, fmt_iso_utc(t)),
            format!(
                "the odds are verified up to {MAX_LEAD_DAYS} days ahead (the leads accuracy_pairs scores); ask for a \
                 nearer day"
            ),
        ));
    }
    let ladder: Option<Ladder> = match params::value(&q.brackets) {
        Some(text) => Some(text.parse().map_err(|e: BracketsError| {
            ApiError::bad_request(
                format!("Invalid brackets: {e}"),
                "a comma-separated ladder such as <=79,80-81,82-83,84-85,86-87,>=88: an open lower tail, \
                 contiguous brackets, an open upper tail",
            )
        })?),
        None => None,
    };
    let odds = odds(&state.live, &state.bracket_rows, &ask, ladder, as_of.0.is_some()).await.map_err(|e| match e {
        OddsError::NoForecast { .. } => ApiError::not_found(
            e.to_string(),
            "no model run, NWS version or daily forecast of the day was available then",
        ),
        e => ApiError::internal(e),
    })?;
    Ok(as_of.echo(Json(Brackets::new(&ask, &odds, state.now())).into_response()))
}

/// The `target` parameter (required; the same closed set as model accuracy's).
fn target_param(raw: &Option<String>) -> Result<Quantity, ApiError> {
    let missing = || ApiError::missing("target", "valid values for target are high, low");
    match params::choice::<AccuracyTarget>("target", raw)? {
        Some(AccuracyTarget::High) => Ok(Quantity::High),
        Some(AccuracyTarget::Low) => Ok(Quantity::Low),
        None => Err(missing()),
    }
}

impl Brackets {
    /// The body for `ask`'s `odds`, computed at `computed_at`.
    fn new(ask: &Ask<'_>, odds: &Odds, computed_at: DateTime<Utc>) -> Self {
        let dist = &odds.distribution;
        let bound = |target: Quantity| odds.observed.filter(|_| ask.target == target).map(|o| o.value);
        Brackets {
            station_code: ask.station.code.clone(),
            date: ask.date.to_string(),
            target: ask.target.as_str().to_string(),
            logic: ask.logic.as_str().to_string(),
            units: ask.unit.as_str().to_string(),
            market: ask.market.map(|m| MarketRef {
                venue: m.venue.clone(),
                series: m.series.clone(),
                source: m.source.clone(),
            }),
            distribution: dist.values().map(|(value, p)| ValueP { value, p }).collect(),
            brackets: odds.bracket_rows(),
            mean: dist.mean(),
            quantiles: QUANTILES.iter().map(|&q| (format!("p{q}"), dist.quantile(f64::from(q) / 100.0))).collect(),
            floor: bound(Quantity::High),
            ceiling: bound(Quantity::Low),
            settled: odds.settled(),
            inputs: odds
                .inputs
                .iter()
                .map(|i| BracketInput {
                    source: i.fit.source.clone(),
                    run: i.run.map(fmt_iso_utc).unwrap_or_default(),
                    forecast: i.fit.forecast,
                    weight: i.fit.weight,
                    bias: i.fit.bias,
                    spread: i.fit.spread,
                    n: i.fit.n,
                })
                .collect(),
            lead_days: odds.lead_days,
            history_days: odds.history_days,
            same_day_days: odds.same_day_days.map(|n| (n * 10.0).round() / 10.0),
            method: METHOD.to_string(),
            computed_at: fmt_iso_utc(computed_at),
            as_of: fmt_iso_utc(ask.t),
        }
    }
}
