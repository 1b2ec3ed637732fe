//! A day's running high and low at each whole hour of its own clock, as the engine
//! answered them from the readings it had by then: what the same-day bracket odds learn
//! how much a day still rises above (falls below) its running extreme at a given hour
//! from (`brackets::intraday`), stored by the `daily_extremes` job as `high_by_hour` and
//! `low_by_hour`.
//!
//! Hour k (1 to 24) holds the answer from every reading known (its row's `available_at`)
//! before local k:00 on the day's clock ([`crate::time::clock_hour`]: Local Standard Time
//! for `nws`, the civil clock for `wu`, so a day of 23 or 25 hours still has 24, each at
//! the same local hour as any other day's). Known, not observed: a reading that reaches
//! the lake later (one-minute data arrives a day late) was not part of the running value
//! at that hour, as it is not part of today's. An hour not yet reached at `now` is empty.
//! Reports (DSM, CLI) are left out: they settle the day, they are not readings of it.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Utc};

use super::{LiveInput, Logic, StationExtremes};
use crate::catalog::Station;
use crate::decode::types::{DailyReport, Metar, OneMinute};

/// One day's running extremes after each hour, native units (`None` before the day's first
/// usable reading).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ByHour {
    pub high: Vec<Option<f64>>,
    pub low: Vec<Option<f64>>,
}

/// Each day's [`ByHour`], by logic and date.
pub type DaysByHour = HashMap<(Logic, NaiveDate), ByHour>;

impl StationExtremes {
    /// [`StationExtremes::replay`], fed in the order the readings became known (each with
    /// that moment), with the running extremes of trading days `from..=to` at each of their
    /// hours reached by `now`. The engine at the end is the same as `replay`'s (its answer
    /// does not depend on the order of its inputs).
    pub fn replay_by_hour<'a>(
        station: &Station,
        metars: impl IntoIterator<Item = (&'a Metar, DateTime<Utc>)>,
        onemin: impl IntoIterator<Item = (&'a OneMinute, DateTime<Utc>)>,
        reports: impl IntoIterator<Item = &'a DailyReport>,
        from: NaiveDate,
        to: NaiveDate,
        now: DateTime<Utc>,
    ) -> (Self, DaysByHour) {
        let ours = |code: &str| code == station.code;
        let mut inputs: Vec<(DateTime<Utc>, LiveInput<'a>)> = metars
            .into_iter()
            .filter(|(m, _)| ours(&m.station))
            .map(|(m, known)| (known, LiveInput::Metar(m)))
            .chain(
                onemin.into_iter().filter(|(o, _)| ours(&o.station)).map(|(o, known)| (known, LiveInput::OneMinute(o))),
            )
            .collect();
        inputs.sort_by_key(|(t, _)| *t);
        let mut hours: Vec<(DateTime<Utc>, Logic, NaiveDate)> = Vec::new();
        for date in from.iter_days().take_while(|d| *d <= to) {
            for logic in Logic::ALL {
                let at = |k: u32| crate::time::clock_hour(station.timezone, logic.clock(), date, k);
                hours.extend((1..=24).map(|k| (at(k), logic, date)));
            }
        }
        hours.sort_by_key(|h| h.0);
        let mut live = StationExtremes::new(station);
        let mut days = DaysByHour::new();
        let mut next = inputs.into_iter().peekable();
        for (at, logic, date) in hours {
            while let Some((_, input)) = next.next_if(|(t, _)| *t < at) {
                live.apply(input);
            }
            let (high, low) = if at <= now { live.running(logic, date) } else { (None, None) };
            let day = days.entry((logic, date)).or_default();
            day.high.push(high);
            day.low.push(low);
        }
        for (_, input) in next {
            live.apply(input);
        }
        for r in reports.into_iter().filter(|r| ours(&r.station)) {
            live.apply(LiveInput::Report(r));
        }
        (live, days)
    }
}

/// The table's form of one side's hours: comma-separated values, empty before the first.
pub fn hours_column(values: &[Option<f64>]) -> String {
    let text: Vec<String> = values.iter().map(|v| v.map(|v| v.to_string()).unwrap_or_default()).collect();
    text.join(",")
}

/// A column written by [`hours_column`], read back: an empty or malformed entry is `None`.
pub fn parse_hours_column(column: &str) -> Vec<Option<f64>> {
    column.split(',').map(|v| v.parse::<f64>().ok().filter(|v| v.is_finite())).collect()
}

/// The value at local hour `k` (1 to 24) of `hours`: `None` for hour 0, an hour past the
/// day's, or an hour before its first reading.
pub fn after_hours(hours: &[Option<f64>], k: usize) -> Option<f64> {
    hours.get(k.checked_sub(1)?).copied().flatten()
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::extremes::tests::{klnk, klnk_metars, klnk_sod};

    #[test]
    fn the_hours_climb_to_the_days_answer_and_the_engine_is_replays() {
        let records = klnk_metars();
        let metars: Vec<&Metar> = records.iter().collect();
        let sod = klnk_sod();
        let (from, to) = (sod[1].0, sod[sod.len() - 2].0);
        let now = DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z").unwrap().to_utc();
        // The LCD file has no receipt times: each reading known when observed.
        let known: Vec<(&Metar, DateTime<Utc>)> = metars.iter().map(|m| (*m, m.time)).collect();
        let (live, days) = StationExtremes::replay_by_hour(&klnk(), known.iter().copied(), [], [], from, to, now);
        let replayed = StationExtremes::replay(&klnk(), metars.iter().copied(), [], []);
        for date in from.iter_days().take_while(|d| *d <= to) {
            for logic in Logic::ALL {
                assert_eq!(live.extremes(logic, date, now), replayed.extremes(logic, date, now), "{date} {logic}");
                let day = &days[&(logic, date)];
                assert_eq!(day.high.len(), 24, "{date}");
                // Never down for the high, never up for the low, and the last hour is the
                // day's answer from observations.
                let highs: Vec<f64> = day.high.iter().flatten().copied().collect();
                assert!(highs.windows(2).all(|w| w[0] <= w[1]), "{date} {logic}: {highs:?}");
                let lows: Vec<f64> = day.low.iter().flatten().copied().collect();
                assert!(lows.windows(2).all(|w| w[0] >= w[1]), "{date} {logic}: {lows:?}");
                let x = replayed.extremes(logic, date, now).unwrap();
                assert_eq!(day.high[23], x.high.map(|e| e.value), "{date} {logic}");
                assert_eq!(day.low[23], x.low.map(|e| e.value), "{date} {logic}");
            }
        }
        // Hour k counts only what was observed before it: the first hour of a day sees
        // readings of its first hour only.
        let date = from + Duration::days(3);
        let w = crate::time::day_window(klnk().timezone, Logic::Nws.clock(), date);
        let first_hour: Vec<&Metar> =
            metars.iter().copied().filter(|m| m.time < w.start + Duration::hours(1)).collect();
        let early = StationExtremes::replay(&klnk(), first_hour, [], []);
        assert_eq!(days[&(Logic::Nws, date)].high[0], early.running(Logic::Nws, date).0);
        // A day in progress: the hours not yet ended are empty.
        let noon = w.start + Duration::minutes(12 * 60 + 30);
        let (_, today) = StationExtremes::replay_by_hour(&klnk(), known.iter().copied(), [], [], date, date, noon);
        let hours = &today[&(Logic::Nws, date)].high;
        assert_eq!(hours[..12], days[&(Logic::Nws, date)].high[..12]);
        assert!(hours[12..].iter().all(Option::is_none), "{hours:?}");
        // Known, not observed: the same readings known a day late count in no hour of their
        // day, and the engine at the end is unchanged.
        let late: Vec<(&Metar, DateTime<Utc>)> = known.iter().map(|(m, t)| (*m, *t + Duration::days(1))).collect();
        let (after, slow) = StationExtremes::replay_by_hour(&klnk(), late.iter().copied(), [], [], date, date, now);
        assert!(slow[&(Logic::Nws, date)].high.iter().all(Option::is_none));
        assert_eq!(after.extremes(Logic::Nws, date, now), replayed.extremes(Logic::Nws, date, now));
    }

    #[test]
    fn the_column_round_trips_and_refuses_what_it_cannot_read() {
        let hours = [None, Some(61.0), Some(61.5), Some(-3.0)];
        let column = hours_column(&hours);
        assert_eq!(column, ",61,61.5,-3");
        assert_eq!(parse_hours_column(&column), hours);
        assert_eq!(
            [0, 1, 2, 3, 4, 5].map(|k| after_hours(&hours, k)),
            [None, None, Some(61.0), Some(61.5), Some(-3.0), None]
        );
        assert_eq!(parse_hours_column("1,x,NaN,inf"), [Some(1.0), None, None, None]);
    }
}
