//! The anomaly flag (spec 2.3): an official daily high (low) that sits 5 °F or more above
//! (below) every observation within ±20 minutes of the time the report gives for it.
//!
//! Such a value has no support in the station's own readings: a sensor spike, a keying error
//! or a report for the wrong day. The check needs evidence: a report without a time, or a
//! time with no readings around it (a gap, or readings already pruned), is not flagged.
//!
//! Readings are compared through their probable °F range, giving the report the benefit of
//! the doubt: the warmest reading counts at its highest probable value and the coldest at its
//! lowest (a whole-degree 3 °C reading may have been 38 °F, so a DSM high of 42 is only 4 °F
//! above it). One-minute readings and every METAR/SPECI/HF-METAR count; -999 minutes and
//! suspect temperatures do not.

use chrono::{DateTime, Utc};

use super::day::ReportEntry;
use super::readings::Readings;

/// Half-width of the evidence window around the report's time.
pub const NEAR_SECS: i64 = 20 * 60;
/// How far beyond the nearby readings the official value must be to be flagged.
pub const THRESHOLD_F: i32 = 5;

/// True when `max_f` at `t` is ≥ 5 °F above the warmest reading within ±20 min.
pub(crate) fn high_anomalous(readings: &Readings, t: DateTime<Utc>, max_f: i32) -> bool {
    let warmest = readings.around(t.timestamp(), NEAR_SECS).filter(|r| !r.missing).map(|r| r.hi_f).max();
    warmest.is_some_and(|w| max_f - i32::from(w) >= THRESHOLD_F)
}

/// True when `min_f` at `t` is ≥ 5 °F below the coldest reading within ±20 min.
pub(crate) fn low_anomalous(readings: &Readings, t: DateTime<Utc>, min_f: i32) -> bool {
    let coldest = readings.around(t.timestamp(), NEAR_SECS).filter(|r| !r.missing).map(|r| r.lo_f).min();
    coldest.is_some_and(|c| i32::from(c) - min_f >= THRESHOLD_F)
}

/// The flag for one DSM/CLI: its high or its low is anomalous.
pub(crate) fn report_anomalous(readings: &Readings, e: &ReportEntry) -> bool {
    let high = matches!((e.max_f, e.max_time), (Some(v), Some(t)) if high_anomalous(readings, t, v));
    let low = matches!((e.min_f, e.min_time), (Some(v), Some(t)) if low_anomalous(readings, t, v));
    high || low
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extremes::readings::{Reading, ReadingKind};
    use crate::time::parse_utc;

    fn reading(t: &str, lo: i16, hi: i16) -> Reading {
        Reading {
            t: parse_utc(t).unwrap().timestamp(),
            kind: ReadingKind::Metar,
            missing: false,
            exact: lo == hi,
            whole_c: 0,
            lo_f: lo,
            hi_f: hi,
            held: false,
        }
    }

    #[test]
    fn probable_range_gives_the_report_the_benefit_of_the_doubt() {
        let mut rs = Readings::default();
        // 03/M02 without T-group: 37..38 °F.
        rs.insert(reading("2026-01-10T20:52:00Z", 37, 38));
        let t = parse_utc("2026-01-10T21:00:00Z").unwrap();
        assert!(!high_anomalous(&rs, t, 42), "42 is 4 above 38");
        assert!(high_anomalous(&rs, t, 43));
        assert!(!low_anomalous(&rs, t, 33), "33 is 4 below 37");
        assert!(low_anomalous(&rs, t, 32));
        // Nothing near 23:00: no evidence, no flag.
        assert!(!high_anomalous(&rs, parse_utc("2026-01-10T23:00:00Z").unwrap(), 90));
    }
}
