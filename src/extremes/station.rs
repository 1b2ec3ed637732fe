//! Per-station live state: the latest observation, each logic's days, the readings list, and
//! how each input feeds them.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use chrono_tz::Tz;

use super::anomaly;
use super::day::{nominal_time, six_hour_period, Cand, DayState, ReportEntry, Side, Source};
use super::quality::{gap_warning, DataQuality, GapContext, HeldObservation};
use super::readings::{Reading, ReadingKind, Readings};
use super::staleness::{self, Staleness};
use super::{DayExtremes, Extreme, ExtremeChange, LiveEvent, LiveInput, Logic};
use crate::catalog::{standard_offset, Station};
use crate::decode::metar::temperature_fields;
use crate::decode::types::{DailyReport, Metar, OneMinute, ReportKind};
use crate::time::{day_window, local_date, DateMemo, Window};
use crate::units::{c_to_f, f_to_c, is_suspect_c, round1, round_half_away, tenths_c_to_whole_f, Units};

/// Margins around a day's window when replaying stored rows for it: readings just before
/// the window (a `wu` confirmation within ±10 min, the gap scan's context) and the reports
/// just after it (the 24-hour group of the report closing the day, late one-minute data).
pub const REPLAY_BEFORE: Duration = Duration::hours(7);
pub const REPLAY_AFTER: Duration = Duration::hours(2);

/// A second source this close (seconds) confirms a held whole-degree `wu` report.
pub const CONFIRM_SECS: i64 = 10 * 60;
/// A report this long before the end of a Local Standard Time day (or up to
/// [`CLOSING_AFTER`] after it) closes that day: its 24-hour group is the day's.
pub const CLOSING_BEFORE: Duration = Duration::minutes(70);
/// How late after the end of a Local Standard Time day a report still closes it.
pub const CLOSING_AFTER: Duration = Duration::minutes(10);

/// One station's live state. Create one per station with [`StationExtremes::new`], feed every
/// input through [`StationExtremes::apply`], read with the `&self` queries.
#[derive(Debug, Clone)]
pub struct StationExtremes {
    code: String,
    tz: Tz,
    units: Units,
    /// `wu` rule 3 applies (US stations: code starts with K).
    rule3: bool,
    latest: Option<Metar>,
    pub(super) readings: Readings,
    days: [BTreeMap<NaiveDate, DayState>; 2],
    /// Last day looked up per logic (`Logic::index` order): nearly every input falls in it.
    cache: [DateMemo; 2],
}

impl StationExtremes {
    /// Empty state for a catalog station (or a hand-built `Station`): its zone, native units
    /// and whether `wu` rule 3 applies (codes starting with K).
    pub fn new(station: &Station) -> Self {
        StationExtremes {
            code: station.code.clone(),
            tz: station.timezone,
            units: station.units,
            rule3: station.code.starts_with('K'),
            latest: None,
            readings: Readings::default(),
            days: [BTreeMap::new(), BTreeMap::new()],
            cache: Logic::ALL.map(|l| DateMemo::new(station.timezone, l.clock())),
        }
    }

    /// A fresh state fed with stored rows (the engine's answer for past days: the API's
    /// `svc_high` on an old date and the `daily_extremes` job both come through here, so
    /// there is one implementation of the rules). Rows of other stations are ignored; the
    /// order does not matter (see the module docs).
    pub fn replay<'a>(
        station: &Station,
        metars: impl IntoIterator<Item = &'a Metar>,
        onemin: impl IntoIterator<Item = &'a OneMinute>,
        reports: impl IntoIterator<Item = &'a DailyReport>,
    ) -> Self {
        let mut live = StationExtremes::new(station);
        for m in metars.into_iter().filter(|m| m.station == station.code) {
            live.apply(LiveInput::Metar(m));
        }
        for o in onemin.into_iter().filter(|o| o.station == station.code) {
            live.apply(LiveInput::OneMinute(o));
        }
        for r in reports.into_iter().filter(|r| r.station == station.code) {
            live.apply(LiveInput::Report(r));
        }
        live
    }

    pub fn code(&self) -> &str {
        &self.code
    }

    pub fn units(&self) -> Units {
        self.units
    }

    pub fn timezone(&self) -> Tz {
        self.tz
    }

    /// Feeds one input and returns the new-high/new-low events it caused: usually none, at
    /// most one per logic, side and day touched (a closing 24-hour group or a `wu`
    /// confirmation across midnight touches the previous day).
    pub fn apply(&mut self, input: LiveInput<'_>) -> Vec<LiveEvent> {
        let mut ev = Vec::new();
        match input {
            LiveInput::Metar(m) => self.apply_metar(m, &mut ev),
            LiveInput::OneMinute(o) => self.apply_one_minute(o, &mut ev),
            LiveInput::Report(r) => self.apply_report(r, &mut ev),
        }
        ev
    }

    /// The latest METAR/SPECI/HF-METAR by observation time (never one-minute data). Suspect
    /// temperatures included: it is still the latest observation.
    pub fn latest(&self) -> Option<&Metar> {
        self.latest.as_ref()
    }

    /// True when a one-minute reading of minute `t` is held (a one-minute feed's windows
    /// overlap, so most of each answer was applied already).
    pub fn holds_one_minute(&self, t: DateTime<Utc>) -> bool {
        self.readings.contains(t.timestamp(), ReadingKind::OneMinute)
    }

    /// The trading day (in `logic`'s clock) containing `t`.
    pub fn day_of(&self, logic: Logic, t: DateTime<Utc>) -> NaiveDate {
        local_date(self.tz, logic.clock(), t)
    }

    /// The UTC window of `date` under `logic`.
    pub fn window(&self, logic: Logic, date: NaiveDate) -> Window {
        day_window(self.tz, logic.clock(), date)
    }

    /// The day's full answer, or `None` when nothing has been seen for that day. `now` only
    /// decides whether a gap at the end of the data is still "active". A day with no usable
    /// temperature is not ok ([`DataQuality::no_data`]).
    pub fn extremes(&self, logic: Logic, date: NaiveDate, now: DateTime<Utc>) -> Option<DayExtremes> {
        let day = self.days[logic.index()].get(&date)?;
        let w = day.window;
        let high = day.answer(Side::High);
        let low = day.answer(Side::Low);
        let (from, to) = (w.start.timestamp(), w.end.timestamp());
        let (minutes, reports) = (self.readings.minutes(from, to), self.readings.reports(from, to));
        let ctx = GapContext {
            high_t: high.map(|c| c.time.timestamp()),
            low_t: low.map(|c| c.time.timestamp()),
            in_progress: now < w.end,
            logic: logic.as_str(),
        };
        let held = (logic == Logic::Wu && self.rule3).then(|| self.held_list(reports, high, low));
        let data_quality = if high.is_none() && low.is_none() {
            // Touched (a held report, -999 minutes, a suspect value) but nothing usable.
            DataQuality::no_data(logic.as_str(), w.start, w.end, now, held)
        } else {
            // Only the day in progress can have a station that is down "currently".
            let down = (ctx.in_progress && now >= w.start)
                .then(|| self.staleness(now).and_then(|s| s.warning(logic.as_str(), now)))
                .flatten();
            DataQuality::new(gap_warning(minutes, ctx), held).with_warning(down)
        };
        let nws = logic == Logic::Nws;
        Some(DayExtremes {
            date,
            logic,
            units: self.units,
            window_start: w.start,
            window_end: w.end,
            high: high.map(|c| self.extreme(c)),
            low: low.map(|c| self.extreme(c)),
            high_sources: day.sources(Side::High),
            low_sources: day.sources(Side::Low),
            is_final: nws && day.is_final(),
            anomaly: self.day_anomaly(date),
            data_quality,
            high_valid_through_utc: day.valid_through(Side::High).filter(|_| nws),
            low_valid_through_utc: day.valid_through(Side::Low).filter(|_| nws),
        })
    }

    /// The day's high and low answer so far, native units (what [`Self::extremes`] answers,
    /// without the data-quality scan: cheap enough to ask after every hour of a replay).
    pub fn running(&self, logic: Logic, date: NaiveDate) -> (Option<f64>, Option<f64>) {
        let Some(day) = self.days[logic.index()].get(&date) else { return (None, None) };
        (day.answer(Side::High).map(|c| c.value), day.answer(Side::Low).map(|c| c.value))
    }

    /// How fresh the station's data is at `now` (`None` before any reading): its newest
    /// reading's age, its expected cadence and whether it is down (see `staleness`).
    pub fn staleness(&self, now: DateTime<Utc>) -> Option<Staleness> {
        staleness::staleness(&self.readings, now)
    }

    /// The anomaly flag of one DSM/CLI (for the `dsm`/`cli` stream payloads), judged against
    /// the readings held now.
    pub fn report_anomaly(&self, r: &DailyReport) -> bool {
        anomaly::report_anomalous(&self.readings, &self.report_entry(r))
    }

    /// Drops days that ended before the `keep_days` days preceding the day containing `now`
    /// (per logic), and the readings no kept day can look at.
    pub fn prune(&mut self, keep_days: u32, now: DateTime<Utc>) {
        let mut oldest_start: Option<DateTime<Utc>> = None;
        for logic in Logic::ALL {
            let today = self.day_of(logic, now);
            let first = today - Duration::days(i64::from(keep_days));
            self.days[logic.index()].retain(|d, _| *d >= first);
            let start = self.window(logic, first).start;
            oldest_start = Some(oldest_start.map_or(start, |s| s.min(start)));
        }
        if let Some(s) = oldest_start {
            // Confirmation and anomaly checks look up to 20 minutes outside a window.
            self.readings.prune_before((s - Duration::hours(1)).timestamp());
        }
        self.cache.iter_mut().for_each(DateMemo::clear);
    }

    // ---- inputs ----

    fn apply_metar(&mut self, m: &Metar, ev: &mut Vec<LiveEvent>) {
        self.update_latest(m);
        self.touch_days(m.time);
        self.apply_groups(m, ev);
        let Some(c) = m.temperature_c().filter(|&c| !is_suspect_c(c)) else {
            return;
        };
        let Some(p) = temperature_fields(m) else {
            return;
        };
        let exact = m.has_tenths();
        let whole_c = round_half_away(c) as i16;
        let kind = match m.kind {
            Some(ReportKind::HfMetar) => ReadingKind::HfMetar,
            Some(ReportKind::Speci) => ReadingKind::Speci,
            Some(ReportKind::Metar) | None => ReadingKind::Metar,
        };
        let t = m.time.timestamp();
        let routine = kind != ReadingKind::HfMetar;
        let held = routine && self.rule3 && !exact && !self.readings.confirmed(t, CONFIRM_SECS, whole_c);
        self.readings.insert(Reading {
            t,
            kind,
            missing: false,
            exact,
            whole_c,
            lo_f: clamp_i16(p.lowest_f),
            hi_f: clamp_i16(p.highest_f),
            held,
        });
        // nws: the bound the official value can no longer fall short of.
        let (lo, hi) = match self.units {
            Units::Fahrenheit => (f64::from(p.lowest_f), f64::from(p.highest_f)),
            Units::Celsius => (c, c),
        };
        self.offer(Logic::Nws, m.time, Side::High, Cand { value: lo, time: m.time, source: Source::Observation }, ev);
        self.offer(Logic::Nws, m.time, Side::Low, Cand { value: hi, time: m.time, source: Source::Observation }, ev);
        if routine && !held {
            self.offer_wu(m.time, self.wu_value(c, exact), ev);
        }
        if exact {
            self.release_held(t, whole_c, ev);
        }
    }

    fn apply_one_minute(&mut self, o: &OneMinute, ev: &mut Vec<LiveEvent>) {
        self.touch_days(o.time);
        let t = o.time.timestamp();
        let Some(f) = o.temp_f else {
            self.readings.insert(Reading {
                t,
                kind: ReadingKind::OneMinute,
                missing: true,
                exact: true,
                whole_c: 0,
                lo_f: 0,
                hi_f: 0,
                held: false,
            });
            return;
        };
        let c = f_to_c(f);
        if is_suspect_c(c) || !f.is_finite() {
            return;
        }
        let whole_c = round_half_away(c) as i16;
        let fi = clamp_i16(f.round() as i32);
        self.readings.insert(Reading {
            t,
            kind: ReadingKind::OneMinute,
            missing: false,
            exact: true,
            whole_c,
            lo_f: fi,
            hi_f: fi,
            held: false,
        });
        // ASOS one-minute data are whole °F; a stray fraction must not leak into svc_high.
        let value = match self.units {
            Units::Fahrenheit => f.round(),
            Units::Celsius => round1(c),
        };
        for side in [Side::High, Side::Low] {
            self.offer(Logic::Nws, o.time, side, Cand { value, time: o.time, source: Source::OneMinute }, ev);
        }
        self.release_held(t, whole_c, ev);
    }

    fn apply_report(&mut self, r: &DailyReport, ev: &mut Vec<LiveEvent>) {
        let w = self.window(Logic::Nws, r.date);
        let entry = self.report_entry(r);
        let wu_window = self.window(Logic::Wu, r.date);
        self.days[Logic::Wu.index()].entry(r.date).or_insert_with(|| DayState::new(wu_window));
        let units = self.units;
        let day = self.days[Logic::Nws.index()].entry(r.date).or_insert_with(|| DayState::new(w));
        let before = [day.answer(Side::High), day.answer(Side::Low)];
        day.add_report(entry);
        for (side, prev) in [Side::High, Side::Low].into_iter().zip(before) {
            push_change(ev, Logic::Nws, r.date, side, prev, day.answer(side), units);
        }
    }

    /// 6-hour groups whose period lies inside an `nws` day, and the 24-hour group of the
    /// report that closes one.
    fn apply_groups(&mut self, m: &Metar, ev: &mut Vec<LiveEvent>) {
        if m.six_hour_max_c.is_some() || m.six_hour_min_c.is_some() {
            let (start, end) = six_hour_period(m.time);
            let (date, w) = self.locate(Logic::Nws, start);
            if w.covers(start, end) {
                for (side, v) in [(Side::High, m.six_hour_max_c), (Side::Low, m.six_hour_min_c)] {
                    let Some(v) = v.filter(|&v| !is_suspect_c(v)) else { continue };
                    let cand = Cand { value: self.exact_value(v), time: m.time, source: Source::SixHourGroup };
                    self.offer_in(Logic::Nws, date, w, side, cand, ev);
                    self.day_mut(Logic::Nws, date, w).add_six_hour_period(side, (start, end));
                }
            }
        }
        if m.day_max_c.is_some() || m.day_min_c.is_some() {
            // The day whose end lies in [r - 10 min, r + 70 min]: the one containing the
            // instant just before r - 10 min (so exactly 10 min after the end still counts).
            let (date, w) = self.locate(Logic::Nws, m.time - CLOSING_AFTER - Duration::seconds(1));
            if m.time >= w.end - CLOSING_BEFORE {
                for (side, v) in [(Side::High, m.day_max_c), (Side::Low, m.day_min_c)] {
                    let Some(v) = v.filter(|&v| !is_suspect_c(v)) else { continue };
                    let cand = Cand { value: self.exact_value(v), time: m.time, source: Source::TwentyFourHourGroup };
                    self.offer_in(Logic::Nws, date, w, side, cand, ev);
                }
                self.day_mut(Logic::Nws, date, w).add_closing_group(nominal_time(m.time));
            }
        }
    }

    /// A new exact reading confirms the held `wu` reports around it.
    fn release_held(&mut self, t: i64, whole_c: i16, ev: &mut Vec<LiveEvent>) {
        for r in self.readings.release_held(t, CONFIRM_SECS, whole_c) {
            let value = self.wu_value(f64::from(r.whole_c), false);
            self.offer_wu(r.time(), value, ev);
        }
    }

    fn update_latest(&mut self, m: &Metar) {
        let newer = match &self.latest {
            None => true,
            Some(cur) => (m.time, m.cor, &m.raw) > (cur.time, cur.cor, &cur.raw),
        };
        if newer {
            self.latest = Some(m.clone());
        }
    }

    // ---- days ----

    /// The day containing `t` under `logic`, through the one-entry cache.
    fn locate(&mut self, logic: Logic, t: DateTime<Utc>) -> (NaiveDate, Window) {
        self.cache[logic.index()].locate(t)
    }

    fn day_mut(&mut self, logic: Logic, date: NaiveDate, w: Window) -> &mut DayState {
        self.days[logic.index()].entry(date).or_insert_with(|| DayState::new(w))
    }

    /// Makes sure both logics have a day for `t`, so a day with only held reports or only
    /// -999 minutes still answers (with its data quality).
    fn touch_days(&mut self, t: DateTime<Utc>) {
        for logic in Logic::ALL {
            let (d, w) = self.locate(logic, t);
            self.day_mut(logic, d, w);
        }
    }

    fn offer(&mut self, logic: Logic, t: DateTime<Utc>, side: Side, cand: Cand, ev: &mut Vec<LiveEvent>) {
        let (date, w) = self.locate(logic, t);
        self.offer_in(logic, date, w, side, cand, ev);
    }

    fn offer_in(&mut self, logic: Logic, date: NaiveDate, w: Window, side: Side, cand: Cand, ev: &mut Vec<LiveEvent>) {
        let units = self.units;
        let day = self.day_mut(logic, date, w);
        let before = day.answer(side);
        day.offer(side, cand);
        push_change(ev, logic, date, side, before, day.answer(side), units);
    }

    fn offer_wu(&mut self, t: DateTime<Utc>, value: f64, ev: &mut Vec<LiveEvent>) {
        for side in [Side::High, Side::Low] {
            self.offer(Logic::Wu, t, side, Cand { value, time: t, source: Source::Observation }, ev);
        }
    }

    // ---- values ----

    /// A `wu` value in native units: tenths → the exact °F (or °C as reported); a whole °C →
    /// round(C·9/5+32) (or the whole °C).
    fn wu_value(&self, c: f64, exact: bool) -> f64 {
        match (self.units, exact) {
            (Units::Fahrenheit, true) => f64::from(tenths_c_to_whole_f(c)),
            (Units::Fahrenheit, false) => round_half_away(c_to_f(c)),
            (Units::Celsius, _) => c,
        }
    }

    /// A tenths-of-°C group value in native units.
    fn exact_value(&self, c: f64) -> f64 {
        match self.units {
            Units::Fahrenheit => f64::from(tenths_c_to_whole_f(c)),
            Units::Celsius => c,
        }
    }

    fn extreme(&self, c: Cand) -> Extreme {
        Extreme::new(c.value, c.time, c.source, self.units)
    }

    fn report_entry(&self, r: &DailyReport) -> ReportEntry {
        let w = self.window(Logic::Nws, r.date);
        ReportEntry::new(r, w, standard_offset(self.tz, r.date), self.units)
    }

    // ---- queries ----

    fn held_list(&self, reports: &[Reading], high: Option<Cand>, low: Option<Cand>) -> Vec<HeldObservation> {
        reports
            .iter()
            .filter(|r| r.held)
            .map(|r| {
                let value = self.wu_value(f64::from(r.whole_c), false);
                HeldObservation {
                    observation_time_utc: r.time(),
                    product: if r.kind == ReadingKind::Speci { "SPECI" } else { "METAR" },
                    temperature_celsius: i32::from(r.whole_c),
                    value,
                    would_set_high: high.is_none_or(|h| value > h.value),
                    would_set_low: low.is_none_or(|l| value < l.value),
                }
            })
            .collect()
    }

    /// Any official report for `date` is anomalous.
    fn day_anomaly(&self, date: NaiveDate) -> bool {
        self.days[Logic::Nws.index()]
            .get(&date)
            .is_some_and(|d| d.reports().iter().any(|e| anomaly::report_anomalous(&self.readings, e)))
    }
}

/// Pushes an event when the day's answer for `side` changed value.
fn push_change(
    ev: &mut Vec<LiveEvent>,
    logic: Logic,
    date: NaiveDate,
    side: Side,
    before: Option<Cand>,
    after: Option<Cand>,
    units: Units,
) {
    let Some(after) = after else { return };
    if before.is_some_and(|b| b.value == after.value) {
        return;
    }
    let new = Extreme::new(after.value, after.time, after.source, units);
    let prev = before.map(|b| Extreme::new(b.value, b.time, b.source, units));
    let change = ExtremeChange {
        logic,
        date,
        value: new.value,
        value_f: new.value_f,
        value_c: new.value_c,
        prev_value_f: prev.map(|p| p.value_f),
        prev_value_c: prev.map(|p| p.value_c),
        observation_time: new.time,
        source: new.source,
    };
    ev.push(match side {
        Side::High => LiveEvent::NewHigh(change),
        Side::Low => LiveEvent::NewLow(change),
    });
}

fn clamp_i16(v: i32) -> i16 {
    v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}
