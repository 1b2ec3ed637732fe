//! Trading-day windows. `nws` days run midnight to midnight Local Standard Time all year;
//! `wu` days are the civil calendar day (23, 24 or 25 hours around DST changes). Every
//! caller goes through these functions so the live path, the jobs and the API agree.

use chrono::{DateTime, Duration, FixedOffset, LocalResult, NaiveDate, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::catalog::standard_offset;

/// Which clock a day is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DayClock {
    /// Local Standard Time (no DST): the `nws` logic and `tz_mode=standard`.
    Standard,
    /// Civil wall-clock time (with DST): the `wu` logic and `tz_mode=civil`.
    Civil,
}

/// A half-open UTC interval [start, end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl Window {
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        self.start <= t && t < self.end
    }
    /// True when [from, to] lies wholly inside the window (both ends inclusive of the
    /// window's end, since a 6-hour group ending exactly at midnight belongs to the day).
    pub fn covers(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> bool {
        self.start <= from && to <= self.end
    }
    pub fn hours(&self) -> i64 {
        (self.end - self.start).num_hours()
    }
}

/// The local date of `t` in Local Standard Time.
pub fn standard_date(tz: Tz, t: DateTime<Utc>) -> NaiveDate {
    let off = standard_offset(tz, t.date_naive());
    t.with_timezone(&off).date_naive()
}

/// The civil local date of `t`.
pub fn civil_date(tz: Tz, t: DateTime<Utc>) -> NaiveDate {
    t.with_timezone(&tz).date_naive()
}

/// The local date of `t` on the given clock.
pub fn local_date(tz: Tz, clock: DayClock, t: DateTime<Utc>) -> NaiveDate {
    match clock {
        DayClock::Standard => standard_date(tz, t),
        DayClock::Civil => civil_date(tz, t),
    }
}

/// UTC instant of local standard midnight starting `date`.
fn standard_midnight(tz: Tz, date: NaiveDate) -> DateTime<Utc> {
    let off: FixedOffset = standard_offset(tz, date);
    let local = date.and_time(NaiveTime::MIN);
    off.from_local_datetime(&local)
        .single()
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_else(|| Utc.from_utc_datetime(&local) - Duration::seconds(i64::from(off.local_minus_utc())))
}

/// UTC instant of civil midnight starting `date`. Where midnight itself is skipped by a
/// DST jump (e.g. America/Sao_Paulo before 2019, Asia/Beirut), the day starts at the
/// first valid local instant.
fn civil_midnight(tz: Tz, date: NaiveDate) -> DateTime<Utc> {
    let mut local = date.and_time(NaiveTime::MIN);
    for _ in 0..4 {
        match tz.from_local_datetime(&local) {
            LocalResult::Single(d) => return d.with_timezone(&Utc),
            LocalResult::Ambiguous(a, _) => return a.with_timezone(&Utc),
            LocalResult::None => local += Duration::minutes(30),
        }
    }
    standard_midnight(tz, date)
}

/// The UTC window of local `date` on `clock`.
pub fn day_window(tz: Tz, clock: DayClock, date: NaiveDate) -> Window {
    let next = date.succ_opt().unwrap_or(date);
    match clock {
        DayClock::Standard => Window { start: standard_midnight(tz, date), end: standard_midnight(tz, next) },
        DayClock::Civil => Window { start: civil_midnight(tz, date), end: civil_midnight(tz, next) },
    }
}

/// The UTC instant of `hour`:00 on `date`'s own clock (0 is the day's start, 24 the next
/// day's). A civil hour skipped by a DST jump starts at the first valid instant after it; a
/// repeated one at its first occurrence. So every day has hours 0..=24, whatever its length
/// (what a past day "at 16:00" means for a day of 23 or 25 hours).
pub fn clock_hour(tz: Tz, clock: DayClock, date: NaiveDate, hour: u32) -> DateTime<Utc> {
    let w = day_window(tz, clock, date);
    match (clock, hour) {
        (_, 0) => w.start,
        (_, h) if h >= 24 => w.end,
        (DayClock::Standard, h) => w.start + Duration::hours(i64::from(h)),
        (DayClock::Civil, h) => {
            let mut local = date.and_time(NaiveTime::MIN) + Duration::hours(i64::from(h));
            for _ in 0..4 {
                match tz.from_local_datetime(&local) {
                    LocalResult::Single(d) | LocalResult::Ambiguous(d, _) => {
                        return d.with_timezone(&Utc).clamp(w.start, w.end)
                    }
                    LocalResult::None => local += Duration::minutes(30),
                }
            }
            w.start + Duration::hours(i64::from(h))
        }
    }
}

/// The whole hours of `t`'s day passed on `clock` (its local hour of the day), the inverse of
/// [`clock_hour`]: the largest h with `clock_hour(h) <= t`.
pub fn hours_passed(tz: Tz, clock: DayClock, t: DateTime<Utc>) -> u32 {
    let date = local_date(tz, clock, t);
    (1..=24).take_while(|&h| clock_hour(tz, clock, date, h) <= t).last().unwrap_or(0)
}

/// The window of the trading day containing `t`.
pub fn window_at(tz: Tz, clock: DayClock, t: DateTime<Utc>) -> (NaiveDate, Window) {
    let d = local_date(tz, clock, t);
    (d, day_window(tz, clock, d))
}

/// [`local_date`] / [`window_at`] for many instants of one zone and clock, answered from
/// the last two days' windows while instants stay inside them: the lake writes millions of
/// rows sorted by station then time, and the live engine applies reports in time order; a
/// zone lookup per instant was a measurable share of both. Two, because a replay in the
/// order rows became known interleaves today's reports with yesterday's one-minute
/// readings, which arrive a day late: one remembered day would be looked up again at
/// every switch.
#[derive(Debug, Clone, Copy)]
pub struct DateMemo {
    tz: Tz,
    clock: DayClock,
    /// The most recently used first.
    days: [Option<(NaiveDate, Window)>; 2],
}

impl DateMemo {
    pub fn new(tz: Tz, clock: DayClock) -> Self {
        DateMemo { tz, clock, days: [None; 2] }
    }

    /// The local date of `t`, equal to `local_date(tz, clock, t)`.
    pub fn date(&mut self, t: DateTime<Utc>) -> NaiveDate {
        self.locate(t).0
    }

    /// The date of `t` and that day's window, equal to `window_at(tz, clock, t)`.
    pub fn locate(&mut self, t: DateTime<Utc>) -> (NaiveDate, Window) {
        let holds = |day: &Option<(NaiveDate, Window)>| day.filter(|(_, w)| w.contains(t));
        if let Some(found) = holds(&self.days[0]) {
            return found;
        }
        if let Some(found) = holds(&self.days[1]) {
            self.days.swap(0, 1);
            return found;
        }
        let found = window_at(self.tz, self.clock, t);
        // Only a window that really holds `t` may answer later instants (a zone whose base
        // offset changed that day could disagree with itself).
        if found.1.contains(t) {
            self.days = [Some(found), self.days[0]];
        }
        found
    }

    /// Forgets the remembered days (callers that prune their days).
    pub fn clear(&mut self) {
        self.days = [None; 2];
    }
}

/// Formats a UTC time the way the spec's samples do: `YYYY-MM-DD HH:MM:SS`.
pub fn fmt_utc(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Formats a UTC time as ISO 8601 with a `Z`, to the second: `YYYY-MM-DDTHH:MM:SSZ`, the
/// form of run times, generation and computation stamps and headers.
pub fn fmt_iso_utc(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The ISO 8601 forms clients send (with `Z`, an offset or none, `T` or space, with or
/// without seconds, or a bare date at midnight UTC): the decoders' one timestamp parser.
pub use crate::decode::timestamp::parse_timestamp_or_date as parse_utc;

#[cfg(test)]
mod tests {
    use super::*;
    use chrono_tz::{America, Asia, Australia};

    fn utc(s: &str) -> DateTime<Utc> {
        parse_utc(s).unwrap()
    }
    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn both_utc_formats_are_to_the_second() {
        let t = utc("2026-03-08T07:05:09.75Z");
        assert_eq!(fmt_utc(t), "2026-03-08 07:05:09");
        assert_eq!(fmt_iso_utc(t), "2026-03-08T07:05:09Z");
    }

    #[test]
    fn clock_hours_are_the_local_hours_on_days_of_23_and_25_hours() {
        let ny = America::New_York;
        // 2026-03-08: 02:00 EST jumps to 03:00 EDT (23 hours). 16:00 EDT is 20:00Z, 15
        // hours after the day's 05:00Z start; the skipped 02:00 starts at 03:00 EDT (07:00Z).
        let spring = d("2026-03-08");
        assert_eq!(clock_hour(ny, DayClock::Civil, spring, 16), utc("2026-03-08T20:00:00Z"));
        assert_eq!(clock_hour(ny, DayClock::Civil, spring, 2), utc("2026-03-08T07:00:00Z"));
        assert_eq!(clock_hour(ny, DayClock::Civil, spring, 3), utc("2026-03-08T07:00:00Z"));
        assert_eq!(clock_hour(ny, DayClock::Civil, spring, 24), day_window(ny, DayClock::Civil, spring).end);
        // 2026-11-01: 02:00 EDT falls back to 01:00 EST (25 hours); 16:00 EST is 21:00Z,
        // the repeated 01:00 counts from its first occurrence (05:00Z).
        let fall = d("2026-11-01");
        assert_eq!(clock_hour(ny, DayClock::Civil, fall, 16), utc("2026-11-01T21:00:00Z"));
        assert_eq!(clock_hour(ny, DayClock::Civil, fall, 1), utc("2026-11-01T05:00:00Z"));
        // On the standard clock every hour is an hour from the start, summer or not.
        assert_eq!(clock_hour(ny, DayClock::Standard, d("2026-07-04"), 15), utc("2026-07-04T20:00:00Z"));
        // The inverse.
        assert_eq!(hours_passed(ny, DayClock::Civil, utc("2026-03-08T20:30:00Z")), 16);
        assert_eq!(hours_passed(ny, DayClock::Civil, utc("2026-11-01T21:00:00Z")), 16);
        assert_eq!(hours_passed(ny, DayClock::Civil, utc("2026-11-01T05:59:00Z")), 1);
        assert_eq!(hours_passed(ny, DayClock::Civil, utc("2026-11-01T04:10:00Z")), 0);
        assert_eq!(hours_passed(ny, DayClock::Standard, utc("2026-07-04T20:59:00Z")), 15);
    }

    #[test]
    fn standard_day_is_always_24h_and_shifted_in_summer() {
        // New York, July: LST is UTC-5, so the nws day starts 05:00Z (01:00 EDT).
        let w = day_window(America::New_York, DayClock::Standard, d("2026-07-04"));
        assert_eq!(w.start, utc("2026-07-04T05:00:00Z"));
        assert_eq!(w.hours(), 24);
        // Civil day starts 04:00Z.
        let c = day_window(America::New_York, DayClock::Civil, d("2026-07-04"));
        assert_eq!(c.start, utc("2026-07-04T04:00:00Z"));
        // 00:30 EDT on the 5th (04:30Z) is still the 4th in LST.
        assert_eq!(standard_date(America::New_York, utc("2026-07-05T04:30:00Z")), d("2026-07-04"));
        assert_eq!(civil_date(America::New_York, utc("2026-07-05T04:30:00Z")), d("2026-07-05"));
    }

    #[test]
    fn date_memo_agrees_with_local_date_for_every_station_across_dst() {
        // Every catalog zone (plus a pre-2019 Sao Paulo with midnight DST jumps), every
        // 40 minutes through a year, forwards and after jumping back (how the writer
        // walks one run's valid times after another's), and two days interleaved.
        let mut zones: Vec<Tz> = crate::catalog::Catalog::global().all().iter().map(|s| s.timezone).collect();
        zones.push(chrono_tz::America::Sao_Paulo);
        zones.sort_by_key(|z| z.name());
        zones.dedup();
        let start = utc("2017-10-01T00:00:00Z");
        for tz in zones {
            for clock in [DayClock::Standard, DayClock::Civil] {
                let mut memo = DateMemo::new(tz, clock);
                for pass in 0..2 {
                    for step in 0..(366 * 36) {
                        let t = start + Duration::minutes(40 * step + 7 * pass);
                        assert_eq!(memo.date(t), local_date(tz, clock, t), "{tz} {clock:?} {t}");
                    }
                }
                // Each instant then the same a day before (a replay's reports between the
                // one-minute readings that arrive a day late).
                for step in 0..(366 * 36) {
                    let t = start + Duration::minutes(40 * step + 3);
                    for u in [t, t - Duration::days(1)] {
                        assert_eq!(memo.date(u), local_date(tz, clock, u), "{tz} {clock:?} {u}");
                    }
                }
            }
        }
    }

    #[test]
    fn dst_days_have_23_and_25_civil_hours() {
        // US 2026: DST starts Mar 8, ends Nov 1.
        assert_eq!(day_window(America::Chicago, DayClock::Civil, d("2026-03-08")).hours(), 23);
        assert_eq!(day_window(America::Chicago, DayClock::Civil, d("2026-11-01")).hours(), 25);
        assert_eq!(day_window(America::Chicago, DayClock::Standard, d("2026-03-08")).hours(), 24);
        assert_eq!(day_window(America::Chicago, DayClock::Standard, d("2026-11-01")).hours(), 24);
        // Southern hemisphere: Sydney DST ends Apr 5 2026, starts Oct 4 2026.
        assert_eq!(day_window(Australia::Sydney, DayClock::Civil, d("2026-04-05")).hours(), 25);
        assert_eq!(day_window(Australia::Sydney, DayClock::Civil, d("2026-10-04")).hours(), 23);
        // Sydney LST is UTC+10 all year.
        let w = day_window(Australia::Sydney, DayClock::Standard, d("2026-01-10"));
        assert_eq!(w.start, utc("2026-01-09T14:00:00Z"));
    }

    #[test]
    fn half_hour_zone() {
        let w = day_window(Asia::Kolkata, DayClock::Standard, d("2026-09-01"));
        assert_eq!(w.start, utc("2026-08-31T18:30:00Z"));
        assert_eq!(day_window(Asia::Kolkata, DayClock::Civil, d("2026-09-01")), w);
    }

    #[test]
    fn window_edges_are_half_open() {
        let w = day_window(America::Chicago, DayClock::Standard, d("2026-01-10"));
        assert!(w.contains(utc("2026-01-10T06:00:00Z")));
        assert!(!w.contains(utc("2026-01-11T06:00:00Z")));
        assert!(w.covers(utc("2026-01-11T00:00:00Z"), utc("2026-01-11T06:00:00Z")));
        assert!(!w.covers(utc("2026-01-10T03:00:00Z"), utc("2026-01-10T09:00:00Z")));
    }
}
