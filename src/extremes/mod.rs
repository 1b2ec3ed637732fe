//! Live trading-day state: each station's running high and low under both settlement
//! logics, the data-quality and anomaly flags that go with them, and the new-high/new-low
//! events the stream sends.
//!
//! # Rules (spec 2.1–2.4, 4.1, 6; DESIGN.md "Settled interpretations")
//!
//! | | `nws` | `wu` |
//! |---|---|---|
//! | day | [00:00, 24:00) Local Standard Time | civil calendar day (23/24/25 h) |
//! | inputs | METAR, SPECI, HF-METAR, one-minute, 6-h groups wholly inside the day, the 24-h group of the report closing the day, DSM, CLI | routine METAR and SPECI |
//! | high / low | max of lowest probable / min of highest probable | the reported value |
//! | final | a final CLI for the day *is* the answer | never |
//!
//! * Probable range: a whole-°C reading at a °F station stands for every integer °F that
//!   rounds to it; `nws` takes the end the official report can no longer fall short of. A
//!   T-group, a one-minute reading and a 6/24-hour group are exact.
//! * `wu` rule 3 (K stations): a report with T-group tenths counts at once (its exact °F); a
//!   whole-degree report is *held* until a one-minute reading or another tenths reading within
//!   ±10 min rounds (half away from zero) to the same whole °C, and then counts as
//!   round(C·9/5+32). Held reports are listed in `data_quality` (see [`DataQuality`]).
//! * Celsius stations report native °C (whole or tenths as reported); rule 3 does not apply.
//! * 6-hour and 24-hour groups cover periods ending at the report's synoptic hour (a report
//!   filed at 05:54Z is the 06Z report, see `day::nominal_time`). A 6-hour group counts only
//!   when its whole period lies inside the `nws` day. The 24-hour group counts for the day
//!   whose end lies within 70 minutes after (or 10 minutes before) the report. On 57 real
//!   KLNK days, observations plus 6-hour groups aligned this way reproduce the official
//!   high/low on 56/57 days; taking the period to end at the filing time (so the 11:54Z
//!   group straddles the 06Z day start) gets 51/46 (test `klnk_six_hour_groups_need_synoptic_alignment`).
//! * Temperatures outside −60…60 °C are never an extreme and never raise an event; use
//!   [`suspect_temperature`] for the observation payload.
//!
//! # Design decisions on points the spec leaves open
//!
//! * Events: the first value of a day *is* a new high and a new low (`prev_*` null), so a
//!   client always learns the day's opening values. An event is raised whenever the day's
//!   answer changes value (normally up for a high; a final CLI may move it either way), not
//!   when only its time or source changes (an equal value reached earlier). Events carry the
//!   trading `date` they belong to: a late report or a `wu` confirmation can change an earlier
//!   day, and the server decides whether a past day's change is worth streaming.
//! * Ties: an equal value keeps the earliest time (when the high was first reached); at the
//!   same time the more official source wins. Every choice is a total order, so the answer is
//!   a function of the set of inputs: replaying a day in any order gives the same
//!   [`DayExtremes`]. Duplicated inputs are idempotent.
//! * Time of an extreme: the observation time; for 6/24-hour groups the report time; for
//!   DSM/CLI their reported time (LST converted to UTC) or the window end when they give none.
//! * `*_valid_through_utc` (`nws` only): window end once a CLI is final; else the latest of a
//!   DSM's / preliminary CLI's valid time (a full-day DSM: window end), the end of the
//!   unbroken chain of 6-hour groups from the window start, and the synoptic time of the
//!   closing 24-hour group. `None` while the value rests on observations only.
//! * Anomaly (module `anomaly`): readings are compared through their probable range, in the
//!   report's favour; no observation near the reported time means no evidence and no flag. The flag is about the day's official reports, so both logics show
//!   the flag of the reports for the same date.
//! * `data_quality.active`: the latest one-minute reading of the window is -999 *and* the
//!   day is still in progress at `now` (a finished day has no ongoing gap).
//! * "Station currently down" (module `staleness`): for the day in progress, a station
//!   whose newest reading is older than two of its expected reports (cadence learned from
//!   its own routine reports) plus 10 minutes gets a second, critical
//!   `temperature_data_missing` warning with `active: true`; it goes away with the next
//!   report.
//!
//! # Cost
//!
//! [`StationExtremes::apply`] is O(1) amortised: a cached window lookup, a running max/min and an
//! append to a time-sorted list of readings (out-of-order input is inserted by binary
//! search). Queries take `&self` and scan at most one day of readings. The caller owns the
//! locking: `apply` holds a write lock only for that constant work, so readers are never
//! held up for long. Measured rates (apply, `extremes` per logic) are in
//! `benches/README.md`, "Live engine and request handling" (`cargo bench --bench live`).
//!
//! [`StationExtremes::prune`] drops old days; an input arriving later for a pruned day would
//! start that day afresh, so past days are answered by replaying the lake into a fresh
//! `StationExtremes` (results do not depend on the order of the replay).

mod anomaly;
mod by_hour;
mod day;
mod logic;
mod quality;
mod readings;
mod staleness;
mod station;

#[cfg(test)]
pub(crate) mod tests;

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

use crate::decode::types::{DailyReport, Metar, OneMinute};
use crate::units::{c_to_f, is_suspect_c, round1, Units};

pub use by_hour::{after_hours, hours_column, parse_hours_column, ByHour, DaysByHour};
pub use day::{Side, Source};
pub use logic::Logic;
pub use quality::{DataQuality, HeldObservation, QualityWarning, Severity, TEMPERATURE_DATA_MISSING};
pub use staleness::Staleness;
pub use station::{StationExtremes, REPLAY_AFTER, REPLAY_BEFORE};

/// One input to a station's live state.
#[derive(Debug, Clone, Copy)]
pub enum LiveInput<'a> {
    /// METAR, SPECI or HF-METAR.
    Metar(&'a Metar),
    /// One-minute ASOS reading (`temp_f == None` is a -999 gap).
    OneMinute(&'a OneMinute),
    /// DSM or CLI for one Local Standard Time day.
    Report(&'a DailyReport),
}

/// A day's extreme in native units, with both unit versions for the stream payload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Extreme {
    /// Native units: integer °F at °F stations, °C (whole or tenths) elsewhere.
    pub value: f64,
    /// °F; at Celsius stations converted and rounded to tenths.
    pub value_f: f64,
    /// °C; at °F stations converted from the integer °F and rounded to tenths.
    pub value_c: f64,
    pub time: DateTime<Utc>,
    pub source: Source,
}

impl Extreme {
    pub(crate) fn new(value: f64, time: DateTime<Utc>, source: Source, units: Units) -> Self {
        let (value_f, value_c) = match units {
            Units::Fahrenheit => (value, round1(crate::units::f_to_c(value))),
            Units::Celsius => (round1(c_to_f(value)), value),
        };
        Extreme { value, value_f, value_c, time, source }
    }
}

/// The full answer for one station, day and logic (spec 2.2 plus the stream's extras).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DayExtremes {
    pub date: NaiveDate,
    pub logic: Logic,
    pub units: Units,
    /// The day's UTC window.
    pub window_start: DateTime<Utc>,
    pub window_end: DateTime<Utc>,
    pub high: Option<Extreme>,
    pub low: Option<Extreme>,
    /// The sources whose own extreme for the day equals the high / low (see
    /// `DayState::sources`); empty without a value.
    pub high_sources: Vec<Source>,
    pub low_sources: Vec<Source>,
    /// A final CLI fixed the values (`nws` only).
    pub is_final: bool,
    pub anomaly: bool,
    pub data_quality: DataQuality,
    pub high_valid_through_utc: Option<DateTime<Utc>>,
    pub low_valid_through_utc: Option<DateTime<Utc>>,
}

impl DayExtremes {
    /// The `wu` reports still waiting for confirmation (empty for `nws` and Celsius stations).
    pub fn held(&self) -> &[HeldObservation] {
        self.data_quality.pending_confirmation.as_deref().unwrap_or(&[])
    }

    /// `data_quality` as spec 2.4 shows it: keyed by the requested logic.
    pub fn data_quality_by_logic(&self) -> BTreeMap<&'static str, &DataQuality> {
        BTreeMap::from([(self.logic.as_str(), &self.data_quality)])
    }
}

/// A change of a day's high or low.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtremeChange {
    pub logic: Logic,
    /// The trading day changed (in the logic's clock).
    pub date: NaiveDate,
    /// New value, native units.
    pub value: f64,
    pub value_f: f64,
    pub value_c: f64,
    /// `None` for the first value of the day.
    pub prev_value_f: Option<f64>,
    pub prev_value_c: Option<f64>,
    #[serde(rename = "observation_time_utc")]
    pub observation_time: DateTime<Utc>,
    pub source: Source,
}

/// What [`StationExtremes::apply`] reports.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveEvent {
    NewHigh(ExtremeChange),
    NewLow(ExtremeChange),
}

impl LiveEvent {
    /// The stream event name: `new_high` / `new_low`.
    pub fn name(&self) -> &'static str {
        match self {
            LiveEvent::NewHigh(_) => "new_high",
            LiveEvent::NewLow(_) => "new_low",
        }
    }
    pub fn change(&self) -> &ExtremeChange {
        match self {
            LiveEvent::NewHigh(c) | LiveEvent::NewLow(c) => c,
        }
    }
    pub fn side(&self) -> Side {
        match self {
            LiveEvent::NewHigh(_) => Side::High,
            LiveEvent::NewLow(_) => Side::Low,
        }
    }
}

/// The observation payload's `suspect_temperature` object (spec 6).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuspectTemperature {
    pub raw_celsius: f64,
    pub raw_fahrenheit: f64,
    /// Currently always `out_of_range`.
    pub reason: &'static str,
    pub message: String,
}

/// `Some` when the report's temperature lies outside −60…60 °C: the payload then shows null
/// temperatures and this object, and the reading never becomes an extreme.
pub fn suspect_temperature(m: &Metar) -> Option<SuspectTemperature> {
    let c = m.temperature_c().filter(|&c| is_suspect_c(c))?;
    Some(SuspectTemperature {
        raw_celsius: c,
        raw_fahrenheit: round1(c_to_f(c)),
        reason: "out_of_range",
        message: format!(
            "temperature {c:.1} °C is outside the plausible range -60 to 60 °C; rejected and excluded from the high/low"
        ),
    })
}
