//! The probability of every settlement value and bracket of one station's day, as the
//! service answers it at a time (issue 32): the sources' forecasts and verified errors
//! known then ([`inputs`]), combined by [`Method`], bounded by what the day's
//! observations settled (the `svc_high` engine's running high or low; a final climate
//! report settles the value).
//!
//! One computation below the front doors, like `trading_day`: `brackets.php` and the
//! stream's `brackets` event format the typed [`Odds`], so on the same ladder at the same
//! time they cannot disagree (the stream keeps the day's first ladder; `brackets.php`
//! centres the usual one on the median unless given one).

pub mod held;
pub mod inputs;

pub use held::HeldRows;
pub use inputs::Inputs;

use std::ops::RangeInclusive;

use chrono::{DateTime, NaiveDate, Utc};
use thiserror::Error;

use crate::brackets::intraday::{Intraday, PastDay};
use crate::brackets::markets::{self, Market, Quantity};
use crate::brackets::method::{Fit, SourceFit};
use crate::brackets::{BracketsError, Distribution, Ladder, Method};
use crate::catalog::Station;
use crate::extremes::{DayExtremes, Logic};
use crate::lake::LakeError;
use crate::time::{fmt_iso_utc, Window};
use crate::trading_day::{extremes, extremes_as_of, DayError};
use crate::units::{round_half_away, Units};
use crate::write::WriteService;

/// The longest lead `accuracy_pairs` verifies: odds further ahead would borrow its errors
/// and be too sure.
pub const MAX_LEAD_DAYS: i64 = 3;

/// A bracket and its probability, as the API and the stream send it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct BracketP {
    /// As in the ladder: `<=79`, `80-81`, `>=88`.
    pub label: String,
    /// Lowest and highest whole value included; null for an open tail.
    pub lo: Option<i32>,
    pub hi: Option<i32>,
    pub p: f64,
}

/// Why a station-day has no odds.
#[derive(Debug, Error)]
pub enum OddsError {
    /// No source had forecast the day by the time asked about.
    #[error("No forecast of {station} {date} known at {at}")]
    NoForecast { station: String, date: NaiveDate, at: String },
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Query(#[from] datafusion::error::DataFusionError),
    #[error(transparent)]
    Method(#[from] BracketsError),
}

/// The question: a station's day high or low, settled under a logic in a unit, as known
/// at `t`.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    pub station: &'a Station,
    pub date: NaiveDate,
    pub target: Quantity,
    pub logic: Logic,
    /// The settlement unit.
    pub unit: Units,
    /// What was known then counts.
    pub t: DateTime<Utc>,
    /// The catalog's market settling the day, when there is one.
    pub market: Option<&'static Market>,
}

impl<'a> Ask<'a> {
    /// The question for `station`'s `target` on `date` (default: the station's day in
    /// progress at `t`) under `logic` (default: the market's, else `nws`): the unit is the
    /// market's, else the station's.
    pub fn settling(
        station: &'a Station,
        target: Quantity,
        date: Option<NaiveDate>,
        logic: Option<Logic>,
        t: DateTime<Utc>,
    ) -> Self {
        // The catalog's markets on the station's quantity, in its order: where two venues
        // trade it (Kalshi on the climate report, Polymarket on Wunderground), the first
        // listed gives the default logic, and the asked logic picks its own market.
        let markets_on = |day: NaiveDate| markets::of_station(&station.code, target, day);
        let logic = logic
            .or_else(|| {
                let day = date.unwrap_or_else(|| crate::time::local_date(station.timezone, Logic::Nws.clock(), t));
                markets_on(day).first().map(|m| m.logic())
            })
            .unwrap_or(Logic::Nws);
        let date = date.unwrap_or_else(|| crate::time::local_date(station.timezone, logic.clock(), t));
        let market = markets_on(date).into_iter().find(|m| m.logic() == logic);
        let unit = match market.map(|m| m.unit.as_str()) {
            Some("c") => Units::Celsius,
            Some(_) => Units::Fahrenheit,
            None => station.units,
        };
        Ask { station, date, target, logic, unit, t, market }
    }

    /// The settlement day's UTC window.
    pub fn window(&self) -> Window {
        crate::time::day_window(self.station.timezone, self.logic.clock(), self.date)
    }

    /// Whole days from the asked time to the day's start, rounded up (as `accuracy_pairs`
    /// counts a run's lead); 0 or less within or after the day.
    pub fn days_ahead(&self) -> i64 {
        let ahead = self.window().start - self.t;
        (ahead.num_seconds() as f64 / 86_400.0).ceil() as i64
    }

    /// The lead whose verified errors fit the asked time ([`inputs`]): a time within the day
    /// takes lead 1 (a run issued after the day began takes lead 0: [`Ask::pair_leads`]).
    pub fn lead_days(&self) -> i64 {
        self.days_ahead().clamp(1, MAX_LEAD_DAYS)
    }

    /// The `accuracy_pairs` leads the inputs can use: [`Ask::lead_days`], and at lead 1 also
    /// lead 0, for the runs issued within the day (a lead-1 time is the day before or the
    /// day itself, so one read of the day's rows serves both).
    pub fn pair_leads(&self) -> RangeInclusive<i64> {
        match self.lead_days() {
            1 => 0..=1,
            lead => lead..=lead,
        }
    }

    /// The usual ladder around `median`: the market's, else four 2-degree brackets
    /// (1-degree in °C) and two tails.
    pub fn usual_ladder(&self, median: i32) -> Ladder {
        match self.market {
            Some(m) => m.ladder(median),
            None if self.unit == Units::Celsius => Ladder::around(median, 1, 4),
            None => Ladder::around(median, 2, 4),
        }
    }
}

/// The day's running extreme under the logic, whole in the settlement unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observed {
    pub value: i32,
    /// A final climate report fixed it.
    pub is_final: bool,
}

/// A source the distribution used.
#[derive(Debug, Clone, PartialEq)]
pub struct InputUsed {
    pub fit: SourceFit,
    /// Its run (the NWS version's generation time, a daily forecast's issuance).
    pub run: Option<DateTime<Utc>>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Odds {
    pub distribution: Distribution,
    pub ladder: Ladder,
    /// The probability of each bracket of `ladder`, in its order.
    pub brackets: Vec<f64>,
    /// The running extreme (a floor for the high, a ceiling for the low).
    pub observed: Option<Observed>,
    pub inputs: Vec<InputUsed>,
    pub lead_days: i64,
    pub history_days: usize,
    /// Effective past days at the same hour the same-day step rests on (none when it did
    /// not apply: before the day, a settled day, too little history).
    pub same_day_days: Option<f64>,
}

impl Odds {
    /// The ladder's brackets with their probabilities, lowest first.
    pub fn bracket_rows(&self) -> Vec<BracketP> {
        let labelled = self.ladder.brackets().iter().zip(&self.brackets);
        labelled.map(|(b, p)| BracketP { label: b.to_string(), lo: b.lo, hi: b.hi, p: *p }).collect()
    }

    /// The value a final climate report settled, if one did.
    pub fn settled(&self) -> Option<i32> {
        self.observed.filter(|o| o.is_final).map(|o| o.value)
    }
}

/// The odds of `ask` on `ladder` (default: the usual one around the median), from its
/// day's rows `held` in memory (read once, chosen as known at `ask.t`). `as_of`: `t` is a
/// past moment (the day's extremes as the service knew them then), else now (the live
/// engine's, what `svc_high` answers).
pub async fn odds(
    live: &WriteService,
    held: &HeldRows,
    ask: &Ask<'_>,
    ladder: Option<Ladder>,
    as_of: bool,
) -> Result<Odds, OddsError> {
    let inputs = held.rows(live, ask).await?.inputs(ask);
    let observed = observed(live, ask, as_of).await?;
    compose(ask, &inputs, observed, ladder)
}

/// The odds of `ask` from its `inputs` and the day's running extreme `observed` (a final
/// climate report's value settles it): what [`odds`] answers, and what the
/// `bracket_scores` job scores at each checkpoint from the same inputs.
pub fn compose(
    ask: &Ask<'_>,
    inputs: &Inputs,
    observed: Option<Observed>,
    ladder: Option<Ladder>,
) -> Result<Odds, OddsError> {
    compose_fitted(ask, inputs, observed, ladder, None)
}

/// The method's distribution of `ask`'s day from `inputs`, before the day's observations
/// bound it: a pure function of the forecasts and the history, so a caller holding it for
/// the same ones may pass it to [`compose_fitted`] again.
pub fn fit(ask: &Ask<'_>, inputs: &Inputs) -> Result<(Distribution, Fit), OddsError> {
    let forecasts = inputs.forecast_values();
    if forecasts.is_empty() {
        return Err(OddsError::NoForecast {
            station: ask.station.code.clone(),
            date: ask.date,
            at: fmt_iso_utc(ask.t),
        });
    }
    Ok(Method::default().distribution(&inputs.history, ask.date, &forecasts)?)
}

/// [`compose`] with the method's answer already made: `fitted` is [`fit`] of the same
/// `ask` and `inputs` (made here when `None`; ignored when a final climate report settles
/// the day).
pub fn compose_fitted(
    ask: &Ask<'_>,
    inputs: &Inputs,
    observed: Option<Observed>,
    ladder: Option<Ladder>,
    fitted: Option<(Distribution, Fit)>,
) -> Result<Odds, OddsError> {
    let (dist, fit) = match (observed.filter(|o| o.is_final), fitted) {
        (Some(o), _) => (Distribution::new(o.value, vec![1.0])?, None),
        (None, Some((d, fit))) => (d, Some(fit)),
        (None, None) => fit(ask, inputs).map(|(d, fit)| (d, Some(fit)))?,
    };
    let (dist, same_day_days) = on_the_day(ask, inputs, observed, dist, fit.as_ref());
    let fits = fit.map(|f| f.sources).unwrap_or_default();
    let ladder = ladder.unwrap_or_else(|| ask.usual_ladder(dist.quantile(0.5)));
    let brackets = dist.brackets(&ladder);
    let inputs_used = fits
        .into_iter()
        .map(|fit| {
            let run = inputs.forecasts.iter().find(|f| f.source == fit.source).map(|f| f.run);
            InputUsed { fit, run }
        })
        .collect();
    Ok(Odds {
        distribution: dist,
        ladder,
        brackets,
        observed,
        inputs: inputs_used,
        lead_days: inputs.lead_days,
        history_days: inputs.history.len(),
        same_day_days,
    })
}

/// The distribution [`compose_fitted`] answers from `dist`, its `fit`'s (made before the
/// day's observations) when it is not settled: bounded by the running extreme `observed`
/// and, within the day, sharpened ([`within_day`]), with the effective past days behind
/// that (`None` when it did not apply). The `bracket_scores` job scores it without the
/// rest of the answer (the inputs' listing, the brackets).
pub fn on_the_day(
    ask: &Ask<'_>,
    inputs: &Inputs,
    observed: Option<Observed>,
    dist: Distribution,
    fit: Option<&Fit>,
) -> (Distribution, Option<f64>) {
    let dist = bounded(dist, ask.target, observed);
    match (observed, fit) {
        (Some(o), Some(fit)) => match within_day(inputs, fit, &dist, o, ask.target) {
            Some((d, n)) => (d, Some(n)),
            None => (dist, None),
        },
        _ => (dist, None),
    }
}

/// Within the day: the forecast's distribution `bounded` by the running extreme `o`,
/// sharpened by what past days still added after the same hour (`brackets::intraday`), and
/// the effective past days behind it; `None` when too few past days have that hour's
/// running extreme.
fn within_day(
    inputs: &Inputs,
    fit: &Fit,
    bounded: &Distribution,
    o: Observed,
    target: Quantity,
) -> Option<(Distribution, f64)> {
    let days = inputs.history.days();
    let past: Vec<PastDay> = fit
        .past
        .iter()
        .filter_map(|&(row, weight, center)| {
            let day = days.get(row)?;
            Some(PastDay { weight, center, settled: day.settled, running: day.running? })
        })
        .collect();
    Intraday::default().distribution(bounded, fit.center, o.value, target, &past)
}

/// `dist` with no probability below the running high (above the running low).
pub fn bounded(dist: Distribution, target: Quantity, observed: Option<Observed>) -> Distribution {
    match (observed, target) {
        (Some(o), Quantity::High) => dist.at_least(o.value),
        (Some(o), Quantity::Low) => dist.at_most(o.value),
        (None, _) => dist,
    }
}

/// What the day's observations settled by `ask.t` (none before the day begins: the
/// trading day's own future check says so).
async fn observed(live: &WriteService, ask: &Ask<'_>, as_of: bool) -> Result<Option<Observed>, OddsError> {
    let day = match as_of {
        true => extremes_as_of(live, ask.station, ask.logic, Some(ask.date), ask.t).await,
        false => extremes(live, ask.station, ask.logic, Some(ask.date)).await,
    };
    match day {
        Ok(day) => Ok(Observed::of(ask, day.extremes.as_ref())),
        Err(DayError::Future { .. }) => Ok(None),
        Err(DayError::Lake(e)) => Err(e.into()),
    }
}

impl Observed {
    /// The running extreme of `ask`'s target in the engine's day `x`, whole in the
    /// settlement unit.
    pub fn of(ask: &Ask<'_>, x: Option<&DayExtremes>) -> Option<Observed> {
        let x = x?;
        let extreme = match ask.target {
            Quantity::High => x.high.as_ref(),
            Quantity::Low => x.low.as_ref(),
        };
        extreme.map(|e| {
            let v = if ask.unit == Units::Fahrenheit { e.value_f } else { e.value_c };
            Observed { value: round_half_away(v) as i32, is_final: x.is_final }
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn where_two_venues_trade_a_station_the_asked_logic_picks_its_market() {
        let station = |code: &str| Catalog::global().get(code).unwrap();
        let t = Utc.with_ymd_and_hms(2026, 9, 1, 15, 0, 0).unwrap();
        let day = NaiveDate::from_ymd_opt(2026, 9, 1);
        // Miami's high: Kalshi on the climate report (listed first), Polymarket on
        // Wunderground.
        let default = Ask::settling(station("KMIA"), Quantity::High, day, None, t);
        assert_eq!((default.logic, default.market.map(|m| m.series.as_str())), (Logic::Nws, Some("KXHIGHMIA")));
        let wu = Ask::settling(station("KMIA"), Quantity::High, day, Some(Logic::Wu), t);
        assert_eq!(wu.market.map(|m| m.venue.as_str()), Some("polymarket"));
        assert_eq!((wu.logic, wu.unit), (Logic::Wu, Units::Fahrenheit));
        // Ankara's: Polymarket only, in whole °C.
        let ankara = Ask::settling(station("LTAC"), Quantity::High, day, None, t);
        assert_eq!((ankara.logic, ankara.unit), (Logic::Wu, Units::Celsius));
        // A logic no market of the station settles on: no market, the station's unit.
        let none = Ask::settling(station("LTAC"), Quantity::High, day, Some(Logic::Nws), t);
        assert!(none.market.is_none());
    }
}
