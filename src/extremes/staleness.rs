//! "Station currently down" (spec 2.4 `severity: critical`) from real staleness: how long
//! since the station's newest reading, against the cadence it really reports at.
//!
//! The expected cadence is learned per station from its own routine reports (METAR and
//! 5-minute HF-METAR; SPECIs come at random and one-minute data arrives in late batches,
//! so neither sets the rhythm): the median spacing of those in the [`CADENCE_LOOKBACK`]
//! before the newest reading, between [`MIN_CADENCE`] and [`MAX_CADENCE`]. With too few
//! reports to tell, the cadence is the hourly one of a routine METAR station.
//!
//! Down rule: a station is down when its newest reading of any kind (one-minute included:
//! a station whose one-minute data is current is up) is older than [`MISSED_REPORTS`]
//! expected reports plus [`DOWN_GRACE`] (for the feed's polling and the report's transit).
//! An hourly station is down after 2 h 10 min without a report; an HF-METAR station after
//! 20 min. One late report is ordinary; two missed in a row are not.

use chrono::{DateTime, Duration, Utc};

use super::quality::{QualityWarning, Severity, TEMPERATURE_DATA_MISSING};
use super::readings::{ReadingKind, Readings};
use crate::time::fmt_utc;

/// Expected reports missed before a station is down.
pub const MISSED_REPORTS: i32 = 2;
/// Slack added to the missed reports (polling interval, transit of the report).
pub const DOWN_GRACE: Duration = Duration::minutes(10);
/// How far back the cadence is learned from.
pub const CADENCE_LOOKBACK: Duration = Duration::hours(6);
/// Bounds of a learned cadence.
pub const MIN_CADENCE: Duration = Duration::minutes(5);
pub const MAX_CADENCE: Duration = Duration::hours(1);

/// How fresh a station's data is at some moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Staleness {
    /// Time of the newest reading.
    pub newest: DateTime<Utc>,
    /// `now - newest` (never negative).
    pub age_secs: i64,
    /// The station's expected spacing of routine reports.
    pub cadence_secs: i64,
    /// Down by the rule of the module docs.
    pub down: bool,
}

impl Staleness {
    /// How long a station with this cadence may be silent before it is down.
    pub fn down_after(cadence: Duration) -> Duration {
        cadence * MISSED_REPORTS + DOWN_GRACE
    }

    /// Whether a station silent for `silence` is down however often it reports: longer
    /// than the slowest (hourly) cadence allows.
    pub fn down_whatever_the_cadence(silence: Duration) -> bool {
        silence > Self::down_after(MAX_CADENCE)
    }

    /// Expected reports missed since the newest one.
    pub fn missed(&self) -> u32 {
        u32::try_from(self.age_secs / self.cadence_secs.max(1)).unwrap_or(u32::MAX)
    }

    /// The critical `temperature_data_missing` warning of a down station, for the
    /// `logic` day in progress.
    pub fn warning(&self, logic: &str, now: DateTime<Utc>) -> Option<QualityWarning> {
        if !self.down {
            return None;
        }
        let cadence = Duration::seconds(self.cadence_secs);
        let missed = self.missed();
        Some(QualityWarning {
            code: TEMPERATURE_DATA_MISSING,
            severity: Severity::Critical,
            message: format!(
                "station currently down: no report since {} UTC ({} min ago; it reports every {} min), \
                 so the {logic} high and low may be understated",
                fmt_utc(self.newest),
                self.age_secs / 60,
                self.cadence_secs / 60
            ),
            missing_count: missed,
            longest_run: missed,
            longest_run_minutes: self.age_secs / 60,
            first_missing_utc: self.newest + cadence,
            last_missing_utc: (self.newest + cadence * i32::try_from(missed).unwrap_or(i32::MAX)).min(now),
            active: true,
            active_run: missed,
            near_extreme: false,
            near_high: false,
            near_low: false,
        })
    }
}

/// The staleness of `readings` at `now`, or `None` when there is no reading at all.
pub(crate) fn staleness(readings: &Readings, now: DateTime<Utc>) -> Option<Staleness> {
    let newest = readings.newest()?;
    let cadence = cadence(readings, newest);
    let age = (now.timestamp() - newest).max(0);
    Some(Staleness {
        newest: DateTime::from_timestamp(newest, 0).unwrap_or_default(),
        age_secs: age,
        cadence_secs: cadence.num_seconds(),
        down: age > Staleness::down_after(cadence).num_seconds(),
    })
}

/// The median spacing of routine reports before `newest` (see the module docs).
fn cadence(readings: &Readings, newest: i64) -> Duration {
    let from = newest - CADENCE_LOOKBACK.num_seconds();
    let times: Vec<i64> = readings
        .reports(from, newest + 1)
        .iter()
        .filter(|r| matches!(r.kind, ReadingKind::Metar | ReadingKind::HfMetar))
        .map(|r| r.t)
        .collect();
    let mut gaps: Vec<i64> = times.windows(2).map(|w| w[1] - w[0]).filter(|g| *g > 0).collect();
    if gaps.len() < 2 {
        return MAX_CADENCE;
    }
    gaps.sort_unstable();
    let median = gaps[gaps.len() / 2];
    Duration::seconds(median).clamp(MIN_CADENCE, MAX_CADENCE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extremes::readings::Reading;

    fn reading(t: i64, kind: ReadingKind) -> Reading {
        Reading { t, kind, missing: false, exact: true, whole_c: 10, lo_f: 50, hi_f: 50, held: false }
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap()
    }

    #[test]
    fn the_cadence_is_learned_from_routine_reports_and_sets_when_a_station_is_down() {
        // Hourly METARs with a SPECI and one-minute data between them.
        let mut hourly = Readings::default();
        for h in 0..6 {
            hourly.insert(reading(h * 3600 + 3240, ReadingKind::Metar));
        }
        hourly.insert(reading(3 * 3600 + 600, ReadingKind::Speci));
        let last = 5 * 3600 + 3240;
        let s = staleness(&hourly, at(last + 2 * 3600 + 600)).unwrap();
        assert_eq!((s.cadence_secs, s.down), (3600, false), "2 h 10 min is the limit");
        let s = staleness(&hourly, at(last + 2 * 3600 + 601)).unwrap();
        assert!(s.down);
        assert_eq!(s.missed(), 2);
        let w = s.warning("nws", at(last + 2 * 3600 + 601)).unwrap();
        assert!(w.active && w.severity == Severity::Critical && w.message.starts_with("station currently down"));

        // HF-METAR every 5 minutes: down after 20 minutes.
        let mut hf = Readings::default();
        for i in 0..24 {
            hf.insert(reading(i * 300, ReadingKind::HfMetar));
        }
        let last = 23 * 300;
        let s = staleness(&hf, at(last + 20 * 60)).unwrap();
        assert_eq!((s.cadence_secs, s.down), (300, false));
        assert!(staleness(&hf, at(last + 21 * 60)).unwrap().down);
        // Fresh one-minute data keeps a station up whatever its reports do.
        hf.insert(reading(last + 20 * 60, ReadingKind::OneMinute));
        assert!(!staleness(&hf, at(last + 21 * 60)).unwrap().down);
        assert!(staleness(&hf, at(last + 21 * 60)).unwrap().warning("nws", at(0)).is_none());

        assert!(!Staleness::down_whatever_the_cadence(Duration::minutes(130)));
        assert!(Staleness::down_whatever_the_cadence(Duration::minutes(131)));

        // Too few reports to learn from: hourly.
        let mut one = Readings::default();
        one.insert(reading(0, ReadingKind::Metar));
        assert_eq!(staleness(&one, at(60)).unwrap().cadence_secs, 3600);
        assert!(staleness(&Readings::default(), at(0)).is_none());
    }
}
