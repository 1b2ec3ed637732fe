//! A station's trading-day high and low under one logic, as the service answers them
//! (spec 2.2): today and yesterday from the hot state, an older day recomputed from the
//! lake's rows by the same engine ([`StationExtremes::replay`]), and for a day without a single
//! reading, a data quality that says what that absence means as seen now.
//!
//! One computation below every front door: REST (`mode=svc_high`, `daily_extremes.php`,
//! `stations.php`, and through them the dashboard) and the SQL servers' `svc_extremes`
//! table read the typed [`TradingDay`] and only format it, so they cannot disagree on a
//! value.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use thiserror::Error;

use crate::catalog::Station;
use crate::extremes::{DataQuality, DayExtremes, Logic, Staleness, StationExtremes, REPLAY_AFTER, REPLAY_BEFORE};
use crate::lake::window::load_window;
use crate::lake::LakeError;
use crate::write::WriteService;

/// Why a trading day has no answer.
#[derive(Debug, Error)]
pub enum DayError {
    /// The day has not begun at the station: `today` is its current trading day.
    #[error("date {date} is in the future")]
    Future { date: NaiveDate, today: NaiveDate, station: String, logic: Logic },
    #[error(transparent)]
    Lake(#[from] LakeError),
}

/// A station's trading day under one logic.
#[derive(Debug, Clone)]
pub struct TradingDay {
    pub station: Station,
    pub logic: Logic,
    pub date: NaiveDate,
    /// The engine's extremes; `None` when nothing at all was reported for the day.
    pub extremes: Option<DayExtremes>,
    /// The engine's data quality, or for a day without data, what that absence means as
    /// seen when the day was computed.
    pub data_quality: DataQuality,
}

impl TradingDay {
    /// The day from the engine's extremes `x` (`None`: nothing reported), as seen at `now`.
    pub fn new(station: &Station, logic: Logic, date: NaiveDate, x: Option<DayExtremes>, now: DateTime<Utc>) -> Self {
        let data_quality = match &x {
            Some(x) => x.data_quality.clone(),
            None => {
                let w = crate::time::day_window(station.timezone, logic.clock(), date);
                let held = (logic == Logic::Wu && station.code.starts_with('K')).then(Vec::new);
                let dq = DataQuality::no_data(logic.as_str(), w.start, w.end, now, held);
                // Nothing at all since the day began, for longer than any cadence allows:
                // the station is down, even once its last reading has left memory.
                let down = now < w.end && Staleness::down_whatever_the_cadence(now - w.start);
                if down {
                    dq.station_down()
                } else {
                    dq
                }
            }
        };
        TradingDay { station: station.clone(), logic, date, extremes: x, data_quality }
    }
}

/// The trading-day extremes of `date` (default: today) under `logic`. Today and yesterday
/// come from the hot state; older days are recomputed from the lake by the same engine.
pub async fn extremes(
    svc: &WriteService,
    station: &Station,
    logic: Logic,
    date: Option<NaiveDate>,
) -> Result<TradingDay, DayError> {
    let now = svc.clock.now();
    let today = crate::time::local_date(station.timezone, logic.clock(), now);
    let date = date.unwrap_or(today);
    if date > today {
        return Err(DayError::Future { date, today, station: station.code.clone(), logic });
    }
    let hot = if date >= today - Duration::days(1) {
        svc.hot.read(&station.code, |h| h.live.extremes(logic, date, now)).flatten()
    } else {
        None
    };
    let x = match hot {
        Some(x) => Some(x),
        None => day_from_lake(svc, station, logic, date, now).await?,
    };
    Ok(TradingDay::new(station, logic, date, x, now))
}

/// Recomputes one past day from the lake's rows with a fresh engine.
async fn day_from_lake(
    svc: &WriteService,
    station: &Station,
    logic: Logic,
    date: NaiveDate,
    now: DateTime<Utc>,
) -> Result<Option<DayExtremes>, LakeError> {
    let w = crate::time::day_window(station.timezone, logic.clock(), date);
    let (obs, onemin, reports) =
        load_window(&svc.ctx, Some(&station.code), w.start - REPLAY_BEFORE, w.end + REPLAY_AFTER, None).await?;
    let live = StationExtremes::replay(station, &obs, &onemin, reports.iter().filter(|r| r.date == date));
    Ok(live.extremes(logic, date, now))
}

/// The trading day of `date` (default: the day in progress at `t`) as the service would
/// have answered at `t` (REST `as_of`): `t` is now, and the day is recomputed by the same
/// engine from what the service knew then ([`WriteService::known_window`]: the inputs it
/// held by `t` with when each became known, from memory for recent windows, else the
/// lake's rows available by `t` and the inputs acknowledged by `t`). The engine is a function of its
/// input set, so this is the answer the hot state gave at `t`; a gap open then is open here.
pub async fn extremes_as_of(
    svc: &WriteService,
    station: &Station,
    logic: Logic,
    date: Option<NaiveDate>,
    t: DateTime<Utc>,
) -> Result<TradingDay, DayError> {
    let today = crate::time::local_date(station.timezone, logic.clock(), t);
    let date = date.unwrap_or(today);
    if date > today {
        return Err(DayError::Future { date, today, station: station.code.clone(), logic });
    }
    let w = crate::time::day_window(station.timezone, logic.clock(), date);
    let (from, to) = (w.start - REPLAY_BEFORE, w.end + REPLAY_AFTER);
    let (obs, onemin, reports) = svc.known_window(&station.code, from, to, t, true).await?;
    let live = StationExtremes::replay(station, &obs, &onemin, reports.iter().filter(|r| r.date == date));
    Ok(TradingDay::new(station, logic, date, live.extremes(logic, date, t), t))
}
