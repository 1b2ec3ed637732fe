//! The `data_quality` object (spec 2.4): -999 gaps in one-minute data, and the `wu` reports
//! held for confirmation.
//!
//! A station logs a missing one-minute temperature as -999. Those minutes are excluded from
//! the high/low, so a gap can leave the reported value understated; traders need to know how
//! big the gap is, whether it is still open and whether it sits next to the extreme.
//! The scan runs at query time over the day's readings (about 1,500 entries; its cost is in
//! `benches/README.md`) so that it is exact whatever order the readings arrived in; ingest
//! stays O(1).
//!
//! A day without any usable temperature reading (nothing received yet, or only -999 minutes
//! and suspect values) is not "coverage complete": [`DataQuality::no_data`] reports it as
//! `ok: false` with one critical `temperature_data_missing` warning whose gap is the whole
//! window so far, counted in minutes (the one-minute cadence a complete day has).

use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};

use super::readings::{Reading, ReadingKind};
use crate::time::fmt_utc;

/// The one warning code spec 2.4 defines.
pub const TEMPERATURE_DATA_MISSING: &str = "temperature_data_missing";

/// A missing minute this close (seconds) to the time of the high/low makes the gap
/// `near_extreme` (spec 2.4's sample gap: "within about 60 minutes of the high").
pub const NEAR_EXTREME_SECS: i64 = 60 * 60;

/// How bad a warning is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The station is down right now, or the gap could hide the real high/low.
    Critical,
    Warning,
}

/// One warning of spec 2.4, field names as the spec spells them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QualityWarning {
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub missing_count: u32,
    pub longest_run: u32,
    pub longest_run_minutes: i64,
    #[serde(serialize_with = "ser_utc")]
    pub first_missing_utc: DateTime<Utc>,
    #[serde(serialize_with = "ser_utc")]
    pub last_missing_utc: DateTime<Utc>,
    pub active: bool,
    pub active_run: u32,
    pub near_extreme: bool,
    pub near_high: bool,
    pub near_low: bool,
}

/// A whole-degree `wu` report at a K station waiting for a second source (spec 4.1 rule 3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldObservation {
    #[serde(serialize_with = "ser_utc")]
    pub observation_time_utc: DateTime<Utc>,
    /// `METAR` or `SPECI`.
    pub product: &'static str,
    /// The whole-degree reading.
    pub temperature_celsius: i32,
    /// What it will count as once confirmed, in the station's native units.
    pub value: f64,
    /// Confirmation would raise the high / lower the low.
    pub would_set_high: bool,
    pub would_set_low: bool,
}

/// `data_quality` for one logic (the API wraps it as `{"<logic>": …}`).
///
/// `ok` and `warnings` are spec 2.4 and only speak about -999 coverage. The two extra fields
/// make rule 3 visible and are present for `wu` at K stations only: `held` counts the
/// day's whole-degree reports not (yet) confirmed, `pending_confirmation` lists them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataQuality {
    pub ok: bool,
    pub warnings: Vec<QualityWarning>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_confirmation: Option<Vec<HeldObservation>>,
}

impl DataQuality {
    pub(crate) fn new(gap: Option<QualityWarning>, held: Option<Vec<HeldObservation>>) -> Self {
        let warnings: Vec<QualityWarning> = gap.into_iter().collect();
        DataQuality { ok: warnings.is_empty(), warnings, held: held.as_ref().map(Vec::len), pending_confirmation: held }
    }

    /// Adds `warning` (a station found down, see `staleness`): the day is not ok.
    pub(crate) fn with_warning(mut self, warning: Option<QualityWarning>) -> Self {
        if let Some(w) = warning {
            self.warnings.push(w);
            self.ok = false;
        }
        self
    }

    /// The quality of a `logic` day `[start, end)` with no usable temperature reading, as
    /// seen at `now` (see the module docs). `held` lists `wu` reports waiting for
    /// confirmation, when the rule applies.
    pub fn no_data(
        logic: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        now: DateTime<Utc>,
        held: Option<Vec<HeldObservation>>,
    ) -> Self {
        let until = now.clamp(start, end);
        let minutes = (until - start).num_minutes().max(0);
        let active = now < end;
        let count = u32::try_from(minutes).unwrap_or(u32::MAX);
        let mut message = format!(
            "no temperature reading in the {logic} day ({} to {} UTC){}: the high and low are unknown",
            fmt_utc(start),
            fmt_utc(end),
            if active { " so far" } else { "" },
        );
        if held.as_ref().is_some_and(|h| !h.is_empty()) {
            message.push_str("; whole-degree reports are held for confirmation (pending_confirmation)");
        }
        let warning = QualityWarning {
            code: TEMPERATURE_DATA_MISSING,
            severity: Severity::Critical,
            message,
            missing_count: count,
            longest_run: count,
            longest_run_minutes: minutes,
            first_missing_utc: start,
            last_missing_utc: (until - chrono::Duration::minutes(1)).max(start),
            active,
            active_run: if active { count } else { 0 },
            near_extreme: false,
            near_high: false,
            near_low: false,
        };
        DataQuality::new(Some(warning), held)
    }

    /// Marks a [`DataQuality::no_data`] answer as "station currently down" (spec 2.4): its
    /// warning's message is prefixed so, as the staleness warning's is. For a day in
    /// progress without a single reading since it began, longer ago than any station may
    /// be silent ([`super::Staleness::down_whatever_the_cadence`]).
    pub fn station_down(mut self) -> Self {
        for w in self.warnings.iter_mut().filter(|w| w.active) {
            w.message = format!("station currently down: {}", w.message);
        }
        self
    }
}

/// Serialises a UTC time as the spec's `YYYY-MM-DD HH:MM:SS`.
pub(crate) fn ser_utc<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&fmt_utc(*t))
}

/// What the scan needs to know besides the readings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GapContext {
    /// Times of the current high and low (Unix seconds).
    pub high_t: Option<i64>,
    pub low_t: Option<i64>,
    /// The day is still in progress: only then can a gap be "ongoing".
    pub in_progress: bool,
    /// For the message: `nws` or `wu`.
    pub logic: &'static str,
}

/// Scans a day's readings (time order) for -999 one-minute gaps. A run is a sequence of
/// missing one-minute readings with no valid one-minute reading between them; its length in
/// minutes runs from its first to its last missing minute, inclusive.
pub(crate) fn gap_warning(readings: &[Reading], ctx: GapContext) -> Option<QualityWarning> {
    let mut s = Scan::default();
    for r in readings.iter().filter(|r| r.kind == ReadingKind::OneMinute) {
        s.step(r, ctx);
    }
    s.finish(ctx)
}

#[derive(Default)]
struct Scan {
    count: u32,
    first: Option<i64>,
    last: i64,
    run: u32,
    run_start: i64,
    longest: (u32, i64, i64),
    near_high: bool,
    near_low: bool,
}

impl Scan {
    fn step(&mut self, r: &Reading, ctx: GapContext) {
        if !r.missing {
            self.run = 0;
            return;
        }
        self.count += 1;
        self.first.get_or_insert(r.t);
        self.last = r.t;
        if self.run == 0 {
            self.run_start = r.t;
        }
        self.run += 1;
        if self.run > self.longest.0 {
            self.longest = (self.run, self.run_start, r.t);
        }
        let near = |t: Option<i64>| t.is_some_and(|t| (r.t - t).abs() <= NEAR_EXTREME_SECS);
        self.near_high |= near(ctx.high_t);
        self.near_low |= near(ctx.low_t);
    }

    fn finish(self, ctx: GapContext) -> Option<QualityWarning> {
        let first = self.first?;
        // `run` is the trailing run: non-zero when the latest one-minute reading is missing.
        let active = ctx.in_progress && self.run > 0;
        let active_run = if active { self.run } else { 0 };
        let near_extreme = self.near_high || self.near_low;
        let (longest_run, run_from, run_to) = self.longest;
        let longest_run_minutes = (run_to - run_from) / 60 + 1;
        let time = |t: i64| DateTime::from_timestamp(t, 0).unwrap_or_default();
        let mut message = format!(
            "{} one-minute temperature reading{} missing (-999) in the {} day; longest gap {} min from {} UTC",
            self.count,
            if self.count == 1 { "" } else { "s" },
            ctx.logic,
            longest_run_minutes,
            fmt_utc(time(run_from)),
        );
        if active {
            message.push_str(&format!("; station not reporting for the last {active_run} min"));
        }
        match (self.near_high, self.near_low) {
            (true, true) => message.push_str("; gap near the high and the low: both may be understated"),
            (true, false) => message.push_str("; gap near the high: it may be understated"),
            (false, true) => message.push_str("; gap near the low: it may be overstated"),
            (false, false) => {}
        }
        Some(QualityWarning {
            code: TEMPERATURE_DATA_MISSING,
            severity: if active || near_extreme { Severity::Critical } else { Severity::Warning },
            message,
            missing_count: self.count,
            longest_run,
            longest_run_minutes,
            first_missing_utc: time(first),
            last_missing_utc: time(self.last),
            active,
            active_run,
            near_extreme,
            near_high: self.near_high,
            near_low: self.near_low,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_utc;

    const T0: &str = "2026-01-10T12:00:00Z";

    /// One-minute readings from `T0`, one per minute; `None` = -999.
    fn minutes(values: &[Option<i16>]) -> Vec<Reading> {
        let t0 = parse_utc(T0).unwrap().timestamp();
        values
            .iter()
            .enumerate()
            .map(|(i, v)| Reading {
                t: t0 + 60 * i as i64,
                kind: ReadingKind::OneMinute,
                missing: v.is_none(),
                exact: true,
                whole_c: 0,
                lo_f: v.unwrap_or(0),
                hi_f: v.unwrap_or(0),
                held: false,
            })
            .collect()
    }

    fn ctx(high_min: Option<i64>, low_min: Option<i64>, in_progress: bool) -> GapContext {
        let t0 = parse_utc(T0).unwrap().timestamp();
        GapContext {
            high_t: high_min.map(|m| t0 + 60 * m),
            low_t: low_min.map(|m| t0 + 60 * m),
            in_progress,
            logic: "nws",
        }
    }

    #[test]
    fn gap_table() {
        let v = Some(40);
        // (readings, high at minute, low at minute, in progress) -> (count, longest, minutes,
        //  first, last, active, active_run, near_high, near_low, critical)
        type Want = (u32, u32, i64, &'static str, &'static str, bool, u32, bool, bool, bool);
        type Case = (Vec<Option<i16>>, Option<i64>, Option<i64>, bool, Option<Want>);
        let cases: Vec<Case> = vec![
            (vec![v, v, v], Some(1), Some(0), true, None),
            // Two runs (2 and 3); the high at minute 200 is far: a plain warning.
            (
                vec![v, None, None, v, None, None, None, v],
                Some(200),
                Some(-200),
                true,
                Some((5, 3, 3, "2026-01-10 12:01:00", "2026-01-10 12:06:00", false, 0, false, false, false)),
            ),
            // The last reading is missing: an ongoing gap of 2, critical...
            (
                vec![v, None, v, None, None],
                Some(-300),
                None,
                true,
                Some((3, 2, 2, "2026-01-10 12:01:00", "2026-01-10 12:04:00", true, 2, false, false, true)),
            ),
            // ...but not once the day is over.
            (
                vec![v, None, v, None, None],
                Some(-300),
                None,
                false,
                Some((3, 2, 2, "2026-01-10 12:01:00", "2026-01-10 12:04:00", false, 0, false, false, false)),
            ),
            // A missing minute exactly 60 min from the high is near it; 61 min from the low is not.
            (
                vec![v, None, v],
                Some(61),
                Some(-60),
                false,
                Some((1, 1, 1, "2026-01-10 12:01:00", "2026-01-10 12:01:00", false, 0, true, false, true)),
            ),
            (
                vec![v, None, v],
                Some(62),
                Some(-59),
                false,
                Some((1, 1, 1, "2026-01-10 12:01:00", "2026-01-10 12:01:00", false, 0, false, true, true)),
            ),
        ];
        for (i, (vals, hi, lo, prog, want)) in cases.into_iter().enumerate() {
            let got = gap_warning(&minutes(&vals), ctx(hi, lo, prog));
            let got = got.map(|w| {
                assert_eq!(w.code, "temperature_data_missing");
                assert_eq!(w.near_extreme, w.near_high || w.near_low);
                let (first, last) = (fmt_utc(w.first_missing_utc), fmt_utc(w.last_missing_utc));
                (
                    w.missing_count,
                    w.longest_run,
                    w.longest_run_minutes,
                    first,
                    last,
                    w.active,
                    w.active_run,
                    w.near_high,
                    w.near_low,
                    w.severity == Severity::Critical,
                )
            });
            let want = want.map(|w| (w.0, w.1, w.2, w.3.to_string(), w.4.to_string(), w.5, w.6, w.7, w.8, w.9));
            assert_eq!(got, want, "case {i}");
        }
    }

    /// No reading at all is not complete coverage: a finished day is one gap of 1,440
    /// minutes; a day in progress is an active gap up to now.
    #[test]
    fn no_data_is_not_ok() {
        let start = parse_utc("2024-01-01T05:00:00Z").unwrap();
        let end = start + chrono::Duration::hours(24);
        let done = DataQuality::no_data("nws", start, end, end + chrono::Duration::days(400), None);
        assert!(!done.ok);
        let w = &done.warnings[0];
        assert_eq!((w.code, w.severity), (TEMPERATURE_DATA_MISSING, Severity::Critical));
        assert_eq!((w.missing_count, w.longest_run, w.longest_run_minutes), (1440, 1440, 1440));
        assert_eq!(
            (fmt_utc(w.first_missing_utc), fmt_utc(w.last_missing_utc)),
            (fmt_utc(start), "2024-01-02 04:59:00".into())
        );
        assert!(!w.active && w.active_run == 0 && !w.near_extreme);
        assert!(w.message.contains("no temperature reading"), "{}", w.message);
        let live = DataQuality::no_data("wu", start, end, start + chrono::Duration::minutes(90), Some(Vec::new()));
        let w = &live.warnings[0];
        assert!(!live.ok && w.active);
        assert_eq!((w.missing_count, w.active_run), (90, 90));
        assert!(w.message.contains("so far"));
        assert_eq!(live.held, Some(0));
        // A station down: the active warning says so first; a finished day's is unchanged.
        let down = live.station_down();
        assert!(down.warnings[0].message.starts_with("station currently down: no temperature reading"));
        assert_eq!(done.clone().station_down().warnings[0].message, done.warnings[0].message);
    }

    #[test]
    fn serialises_with_the_spec_field_names() {
        let w = gap_warning(&minutes(&[Some(40), None]), ctx(Some(0), None, true)).unwrap();
        let dq = DataQuality::new(Some(w), None);
        let j = serde_json::to_value(&dq).unwrap();
        assert_eq!(j["ok"], false);
        let w = &j["warnings"][0];
        let mut keys: Vec<&str> = w.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "active",
                "active_run",
                "code",
                "first_missing_utc",
                "last_missing_utc",
                "longest_run",
                "longest_run_minutes",
                "message",
                "missing_count",
                "near_extreme",
                "near_high",
                "near_low",
                "severity"
            ]
        );
        assert_eq!(w["severity"], "critical");
        assert_eq!(w["first_missing_utc"], "2026-01-10 12:01:00");
        assert!(j.get("held").is_none() && j.get("pending_confirmation").is_none());
        let clean = serde_json::to_value(DataQuality::new(None, Some(Vec::new()))).unwrap();
        assert_eq!(clean, serde_json::json!({"ok": true, "warnings": [], "held": 0, "pending_confirmation": []}));
    }
}
