//! One station's extremes for one trading day under one logic.
//!
//! The day keeps a running best candidate for the high and for the low (O(1) per input), the
//! official reports for the day (a handful), and the 6-hour group periods it has seen (at most
//! four or five), so the answer, its source and how far it is locked in are all read in O(1).
//! Everything here is a function of the *set* of inputs: ties are broken by a total order, so
//! the order inputs arrive in never changes the answer.

use chrono::{DateTime, Duration, FixedOffset, NaiveDateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use crate::decode::types::{DailyKind, DailyReport};
use crate::time::Window;
use crate::units::{f_to_c, is_suspect_c, round1, Units};

/// Where an extreme came from (the stream and `svc_high` show it so a trader can judge it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A METAR, SPECI or HF-METAR body temperature (T-group when it has real tenths).
    Observation,
    /// A one-minute ASOS reading (°F, exact).
    OneMinute,
    /// A 6-hour maximum/minimum group (1sTTT / 2sTTT).
    SixHourGroup,
    /// The 24-hour maximum/minimum group (4sTTTsTTT) of the report closing the day.
    TwentyFourHourGroup,
    /// The station's Daily Summary Message.
    Dsm,
    /// The NWS Daily Climate Report.
    Cli,
}

impl Source {
    /// Every source, in the order lists of sources are given.
    pub const ALL: [Source; 6] = [
        Source::Observation,
        Source::OneMinute,
        Source::SixHourGroup,
        Source::TwentyFourHourGroup,
        Source::Dsm,
        Source::Cli,
    ];

    fn index(self) -> usize {
        self as usize
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Source::Observation => "observation",
            Source::OneMinute => "one_minute",
            Source::SixHourGroup => "six_hour_group",
            Source::TwentyFourHourGroup => "twenty_four_hour_group",
            Source::Dsm => "dsm",
            Source::Cli => "cli",
        }
    }
}

/// High or low.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    High,
    Low,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::High => 0,
            Side::Low => 1,
        }
    }

    /// True when `a` is a better `self` extreme than `b` (higher high, lower low).
    fn better(self, a: f64, b: f64) -> bool {
        match self {
            Side::High => a > b,
            Side::Low => a < b,
        }
    }
}

/// One candidate value for an extreme, in the station's native units. For `nws` the value of
/// a whole-°C reading is already the bound that counts (lowest probable for the high, highest
/// probable for the low).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cand {
    pub value: f64,
    pub time: DateTime<Utc>,
    pub source: Source,
}

impl Cand {
    /// True when `self` should replace `cur` as the `side` extreme: a strictly better value,
    /// or the same value reached earlier (the time of a high is when it was first reached),
    /// or — same value, same time — the more official source. A total order, so the winner
    /// never depends on arrival order.
    fn beats(&self, cur: &Cand, side: Side) -> bool {
        side.better(self.value, cur.value)
            || (self.value == cur.value
                && (self.time, std::cmp::Reverse(self.source)) < (cur.time, std::cmp::Reverse(cur.source)))
    }
}

/// A DSM or CLI for this day, reduced to what the extremes need, times in UTC.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReportEntry {
    pub kind: DailyKind,
    pub is_final: bool,
    /// °F as reported (suspect values dropped).
    pub max_f: Option<i32>,
    pub min_f: Option<i32>,
    /// Native units.
    pub max: Option<f64>,
    pub min: Option<f64>,
    pub max_time: Option<DateTime<Utc>>,
    pub min_time: Option<DateTime<Utc>>,
    /// Through when the report's values are complete (spec 6 `*_valid_through_utc`).
    pub valid_through: Option<DateTime<Utc>>,
    pub issued_at: Option<DateTime<Utc>>,
    pub correction: bool,
}

impl ReportEntry {
    /// Reduces a report for the day of `window`; `lst` is the station's standard offset
    /// (report times are Local Standard Time).
    pub fn new(r: &DailyReport, window: Window, lst: FixedOffset, units: Units) -> Self {
        let plausible = |f: Option<i32>| f.filter(|&f| !is_suspect_c(f_to_c(f64::from(f))));
        let (max_f, min_f) = (plausible(r.max_f), plausible(r.min_f));
        let native = |f: Option<i32>| {
            f.map(|f| match units {
                Units::Fahrenheit => f64::from(f),
                Units::Celsius => round1(f_to_c(f64::from(f))),
            })
        };
        let final_cli = r.kind == DailyKind::Cli && r.is_final;
        let valid_through = if final_cli {
            Some(window.end)
        } else if let Some(v) = r.valid_as_of_lst {
            lst_to_utc(v, lst).map(|t| t.clamp(window.start, window.end))
        } else if r.kind == DailyKind::Dsm {
            // A DSM without an HHMM valid time is the full-day message, sent after midnight.
            Some(window.end)
        } else {
            None
        };
        ReportEntry {
            kind: r.kind,
            is_final: final_cli,
            max_f,
            min_f,
            max: native(max_f),
            min: native(min_f),
            max_time: r.max_time_lst.and_then(|t| lst_to_utc(t, lst)),
            min_time: r.min_time_lst.and_then(|t| lst_to_utc(t, lst)),
            valid_through,
            issued_at: r.issued_at,
            correction: r.correction,
        }
    }

    fn source(&self) -> Source {
        match self.kind {
            DailyKind::Cli => Source::Cli,
            DailyKind::Dsm => Source::Dsm,
        }
    }

    /// The report's value for `side` as a candidate; a report without a time is placed at
    /// the window end (its value is known to hold for the whole day, not when it happened).
    pub fn cand(&self, side: Side, window: Window) -> Option<Cand> {
        let (v, t) = match side {
            Side::High => (self.max, self.max_time),
            Side::Low => (self.min, self.min_time),
        };
        v.map(|value| Cand { value, time: t.unwrap_or(window.end), source: self.source() })
    }

    /// Order among final CLIs for the same day: the latest issue (then the correction) wins.
    fn precedence(&self) -> impl Ord {
        (self.issued_at, self.correction, self.max_f, self.min_f, self.max_time, self.min_time)
    }
}

/// A Local Standard Time clock reading to UTC.
pub(crate) fn lst_to_utc(t: NaiveDateTime, lst: FixedOffset) -> Option<DateTime<Utc>> {
    lst.from_local_datetime(&t).single().map(|d| d.with_timezone(&Utc))
}

/// The synoptic time a routine report stands for: a report within 15 minutes of a whole hour
/// (ASOS files the 06Z report at 05:51–05:56) is for that hour. The 6-hour and 24-hour
/// groups cover periods ending at that hour, which is what lets a group ending "at 12Z" sit
/// inside a Local Standard Time day starting at 06Z.
pub(crate) fn nominal_time(t: DateTime<Utc>) -> DateTime<Utc> {
    let secs = t.timestamp();
    let hour = (secs + 1800).div_euclid(3600) * 3600;
    if (secs - hour).abs() <= 15 * 60 {
        DateTime::from_timestamp(hour, 0).unwrap_or(t)
    } else {
        t
    }
}

/// The period a 6-hour group covers: the six hours ending at the report's synoptic time.
pub(crate) fn six_hour_period(report: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let end = nominal_time(report);
    (end - Duration::hours(6), end)
}

/// One logic's state for one trading day.
#[derive(Debug, Clone)]
pub(crate) struct DayState {
    pub window: Window,
    high: Option<Cand>,
    low: Option<Cand>,
    /// Each source's own extreme per side (`[side][source]`), so the answer can say which
    /// sources reached its value (O(1) per input, like the running extremes).
    by_source: [[Option<f64>; Source::ALL.len()]; 2],
    reports: Vec<ReportEntry>,
    /// The final CLI with the highest precedence: its values are the answer.
    final_cli: Option<ReportEntry>,
    /// Periods (start, end) of in-window 6-hour max / min groups.
    six_max: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    six_min: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// Synoptic time of the report whose 24-hour group closed the day.
    closing_group: Option<DateTime<Utc>>,
}

impl DayState {
    pub fn new(window: Window) -> Self {
        DayState {
            window,
            high: None,
            low: None,
            by_source: [[None; Source::ALL.len()]; 2],
            reports: Vec::new(),
            final_cli: None,
            six_max: Vec::new(),
            six_min: Vec::new(),
            closing_group: None,
        }
    }

    /// Offers a candidate to the running extreme.
    pub fn offer(&mut self, side: Side, c: Cand) {
        let own = &mut self.by_source[side.index()][c.source.index()];
        if own.is_none_or(|v| side.better(c.value, v)) {
            *own = Some(c.value);
        }
        let slot = match side {
            Side::High => &mut self.high,
            Side::Low => &mut self.low,
        };
        if slot.as_ref().is_none_or(|cur| c.beats(cur, side)) {
            *slot = Some(c);
        }
    }

    /// Records an official report: its values are candidates, and a final CLI becomes the
    /// answer. The same report delivered twice is kept once.
    pub fn add_report(&mut self, e: ReportEntry) {
        if self.reports.contains(&e) {
            return;
        }
        for side in [Side::High, Side::Low] {
            if let Some(c) = e.cand(side, self.window) {
                self.offer(side, c);
            }
        }
        if e.is_final && self.final_cli.as_ref().is_none_or(|f| e.precedence() > f.precedence()) {
            self.final_cli = Some(e.clone());
        }
        self.reports.push(e);
    }

    /// Records the period of an in-window 6-hour group (for `valid_through`).
    pub fn add_six_hour_period(&mut self, side: Side, period: (DateTime<Utc>, DateTime<Utc>)) {
        let list = match side {
            Side::High => &mut self.six_max,
            Side::Low => &mut self.six_min,
        };
        if !list.contains(&period) {
            list.push(period);
        }
    }

    /// Records the synoptic time of the report whose 24-hour group closed this day.
    pub fn add_closing_group(&mut self, t: DateTime<Utc>) {
        let t = t.min(self.window.end);
        self.closing_group = Some(self.closing_group.map_or(t, |c| c.max(t)));
    }

    /// The day's answer for `side`: the final CLI's value when there is one, else the
    /// running extreme.
    pub fn answer(&self, side: Side) -> Option<Cand> {
        self.final_cli.as_ref().and_then(|f| f.cand(side, self.window)).or(match side {
            Side::High => self.high,
            Side::Low => self.low,
        })
    }

    /// The sources that reached the day's `side` value: every source whose own extreme for
    /// the day equals the answer (a final CLI's value may differ from what the observations
    /// reached; then they are not listed), in [`Source::ALL`] order, always including the
    /// answer's own source. Empty without a value.
    pub fn sources(&self, side: Side) -> Vec<Source> {
        let Some(answer) = self.answer(side) else {
            return Vec::new();
        };
        let tenths = |v: f64| (v * 10.0).round();
        let own = &self.by_source[side.index()];
        Source::ALL
            .into_iter()
            .filter(|s| *s == answer.source || own[s.index()].is_some_and(|v| tenths(v) == tenths(answer.value)))
            .collect()
    }

    pub fn is_final(&self) -> bool {
        self.final_cli.is_some()
    }

    pub fn reports(&self) -> &[ReportEntry] {
        &self.reports
    }

    /// Through when `side` is locked in: the window end once a CLI is final; else the latest
    /// of the reports' valid times (DSM, preliminary CLI), the end of the unbroken chain of
    /// 6-hour groups from the window start, and the closing 24-hour group. `None` while the
    /// value rests on observations alone.
    pub fn valid_through(&self, side: Side) -> Option<DateTime<Utc>> {
        if self.final_cli.is_some() {
            return Some(self.window.end);
        }
        let has_value = |e: &&ReportEntry| match side {
            Side::High => e.max.is_some(),
            Side::Low => e.min.is_some(),
        };
        let reports = self.reports.iter().filter(has_value).filter_map(|e| e.valid_through).max();
        let periods = match side {
            Side::High => &self.six_max,
            Side::Low => &self.six_min,
        };
        let chain = chain_end(self.window.start, periods);
        [reports, chain, self.closing_group].into_iter().flatten().max()
    }
}

/// End of the unbroken run of periods starting at `start` (a period may begin before the
/// run's current end, never after it), or `None` when no period starts the run.
fn chain_end(start: DateTime<Utc>, periods: &[(DateTime<Utc>, DateTime<Utc>)]) -> Option<DateTime<Utc>> {
    let mut sorted = periods.to_vec();
    sorted.sort_unstable();
    let mut end = start;
    for (s, e) in sorted {
        if s > end {
            break;
        }
        end = end.max(e);
    }
    (end > start).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_utc;

    fn utc(s: &str) -> DateTime<Utc> {
        parse_utc(s).unwrap()
    }
    fn window() -> Window {
        Window { start: utc("2026-01-10T06:00:00Z"), end: utc("2026-01-11T06:00:00Z") }
    }
    fn obs(v: f64, t: &str) -> Cand {
        Cand { value: v, time: utc(t), source: Source::Observation }
    }

    #[test]
    fn nominal_time_snaps_routine_reports_to_the_hour() {
        for (t, want) in [
            ("2026-01-10T05:54:00Z", "2026-01-10T06:00:00Z"),
            ("2026-01-10T05:45:00Z", "2026-01-10T06:00:00Z"),
            ("2026-01-10T06:10:00Z", "2026-01-10T06:00:00Z"),
            ("2026-01-10T05:44:00Z", "2026-01-10T05:44:00Z"),
            ("2026-01-10T23:51:00Z", "2026-01-11T00:00:00Z"),
        ] {
            assert_eq!(nominal_time(utc(t)), utc(want), "{t}");
        }
        let (s, e) = six_hour_period(utc("2026-01-10T11:54:00Z"));
        assert_eq!((s, e), (utc("2026-01-10T06:00:00Z"), utc("2026-01-10T12:00:00Z")));
    }

    #[test]
    fn ties_go_to_the_earliest_time_in_any_order() {
        let a = obs(40.0, "2026-01-10T18:00:00Z");
        let b = obs(40.0, "2026-01-10T15:00:00Z");
        let c = obs(39.0, "2026-01-10T12:00:00Z");
        for order in [[a, b, c], [c, b, a], [b, a, c]] {
            let mut d = DayState::new(window());
            for x in order {
                d.offer(Side::High, x);
                d.offer(Side::Low, x);
            }
            assert_eq!(d.answer(Side::High), Some(b));
            assert_eq!(d.answer(Side::Low), Some(c));
        }
    }

    #[test]
    fn sources_are_every_source_whose_own_extreme_equals_the_answer() {
        let c = |v: f64, t: &str, source: Source| Cand { value: v, time: utc(t), source };
        let mut d = DayState::new(window());
        assert_eq!(d.sources(Side::High), [], "no value, no source");
        // In any order: 45 by an observation (first) and a 6-hour group, 44 by a minute.
        let inputs = [
            c(45.0, "2026-01-10T18:00:00Z", Source::SixHourGroup),
            c(44.0, "2026-01-10T12:00:00Z", Source::OneMinute),
            c(45.0, "2026-01-10T15:00:00Z", Source::Observation),
            c(43.0, "2026-01-10T10:00:00Z", Source::Observation),
        ];
        for x in inputs {
            d.offer(Side::High, x);
            d.offer(Side::Low, x);
        }
        assert_eq!(d.answer(Side::High).map(|a| a.source), Some(Source::Observation));
        assert_eq!(d.sources(Side::High), [Source::Observation, Source::SixHourGroup]);
        assert_eq!(d.sources(Side::Low), [Source::Observation], "43 by one observation");
        // A final CLI decides the high: only sources that reached its value are listed.
        let cli = ReportEntry {
            kind: DailyKind::Cli,
            is_final: true,
            max_f: Some(46),
            min_f: Some(44),
            max: Some(46.0),
            min: Some(44.0),
            max_time: None,
            min_time: None,
            valid_through: None,
            issued_at: None,
            correction: false,
        };
        d.add_report(cli);
        assert_eq!(d.sources(Side::High), [Source::Cli]);
        assert_eq!(d.sources(Side::Low), [Source::OneMinute, Source::Cli], "44 by a minute and the CLI");
    }

    #[test]
    fn chain_of_six_hour_groups_must_start_at_the_window_start() {
        let w = window();
        let p = |s: &str, e: &str| (utc(s), utc(e));
        let g12 = p("2026-01-10T06:00:00Z", "2026-01-10T12:00:00Z");
        let g18 = p("2026-01-10T12:00:00Z", "2026-01-10T18:00:00Z");
        let g00 = p("2026-01-10T18:00:00Z", "2026-01-11T00:00:00Z");
        assert_eq!(chain_end(w.start, &[g18, g12]), Some(utc("2026-01-10T18:00:00Z")));
        assert_eq!(chain_end(w.start, &[g18, g00]), None, "no group starts the run");
        assert_eq!(chain_end(w.start, &[g12, g00]), Some(utc("2026-01-10T12:00:00Z")), "18Z missing");
        assert_eq!(chain_end(w.start, &[]), None);
    }
}
