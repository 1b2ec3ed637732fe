//! The station's compact, time-sorted list of individual temperature readings.
//!
//! Running maxima answer "what is the high"; this list answers the questions that look at
//! readings around a moment: the `wu` confirmation of a whole-degree report (±10 min), the
//! DSM/CLI anomaly check (±20 min) and the -999 gap scan of a day. One entry is 24 bytes, so a
//! day of one-minute data plus reports is about 40 KB per station.
//!
//! Inputs can arrive out of order (a rebuild from the lake, a late feed), so entries are
//! inserted in order: appending is O(1) for in-order input, and a late entry is placed by
//! binary search. The same reading delivered twice is merged, never counted twice.
//!
//! One-minute readings and reports (METAR, SPECI, HF-METAR) are kept in two lists, each
//! in time order: one-minute data arrive about a day late, in batches, while reports come
//! within minutes, so in one list every late minute would be inserted before a day of
//! reports and shift them (most of a replay's time, benches/README.md "daily_extremes at
//! scale"). Each kind of reading arrives in order within its own list. The questions
//! that look at both take both slices.

use chrono::{DateTime, Utc};

/// What produced a reading. The order is the tie-break for equal times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ReadingKind {
    OneMinute,
    Metar,
    Speci,
    HfMetar,
}

/// One temperature reading. `missing` one-minute entries (the -999 sentinel) carry no value
/// and exist only for the data-quality scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reading {
    /// Unix seconds (UTC).
    pub t: i64,
    pub kind: ReadingKind,
    /// The -999 sentinel of one-minute data.
    pub missing: bool,
    /// The value maps to exactly one integer °F: a one-minute °F reading or a T-group with
    /// real tenths. Only exact readings confirm a held `wu` report.
    pub exact: bool,
    /// The value rounded half away from zero to whole °C: what confirmation compares.
    pub whole_c: i16,
    /// Probable integer-°F range (spec 2.1), the anomaly check's evidence.
    pub lo_f: i16,
    pub hi_f: i16,
    /// A whole-degree routine report at a rule-3 station still waiting for a second source.
    pub held: bool,
}

impl Reading {
    fn key(&self) -> (i64, ReadingKind) {
        (self.t, self.kind)
    }

    /// A reading that can confirm a held whole-degree report.
    pub fn confirms(&self, whole_c: i16) -> bool {
        !self.missing && self.exact && self.whole_c == whole_c
    }

    pub fn time(&self) -> DateTime<Utc> {
        DateTime::from_timestamp(self.t, 0).unwrap_or_default()
    }

    /// Which of two readings for the same (time, kind) survives. Deterministic so that the
    /// order duplicates arrive in never matters: a value beats a -999, then the higher range,
    /// then "still held" loses to "confirmed".
    fn preferred(a: Reading, b: Reading) -> Reading {
        let rank = |r: &Reading| (!r.missing, r.hi_f, r.lo_f, r.exact, !r.held, r.whole_c);
        if rank(&b) > rank(&a) {
            b
        } else {
            a
        }
    }
}

/// Time-sorted readings with merge-on-duplicate insertion, one-minute readings apart from
/// reports (module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Readings {
    minutes: Sorted,
    reports: Sorted,
    /// Number of entries with `held` set: lets one-minute ingest skip the confirmation scan
    /// entirely at stations (or times) with nothing waiting. Only reports are ever held.
    held: usize,
}

/// One list of readings in `(t, kind)` order.
#[derive(Debug, Clone, Default)]
struct Sorted(Vec<Reading>);

/// What an insertion did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inserted {
    New,
    /// Merged with an existing entry for the same time and kind.
    Duplicate,
}

impl Sorted {
    /// Inserts in order. A duplicate is merged into the entry it repeats, and the entry
    /// before and after the merge are returned.
    fn insert(&mut self, r: Reading) -> Option<(Reading, Reading)> {
        let key = r.key();
        let list = &mut self.0;
        let at = match list.last() {
            Some(last) if last.key() < key => list.len(),
            None => 0,
            Some(_) => list.partition_point(|x| x.key() < key),
        };
        if let Some(existing) = list.get_mut(at).filter(|x| x.key() == key) {
            let before = *existing;
            *existing = Reading::preferred(before, r);
            return Some((before, *existing));
        }
        list.insert(at, r);
        None
    }

    fn range(&self, from: i64, to: i64) -> &[Reading] {
        let (a, b) = self.bounds(from, to);
        &self.0[a..b]
    }

    /// Index bounds of the readings with `from <= t < to`.
    fn bounds(&self, from: i64, to: i64) -> (usize, usize) {
        let a = self.0.partition_point(|x| x.t < from);
        let b = self.0.partition_point(|x| x.t < to);
        (a, b.max(a))
    }

    fn contains(&self, t: i64, kind: ReadingKind) -> bool {
        let key = (t, kind);
        let at = self.0.partition_point(|x| x.key() < key);
        self.0.get(at).is_some_and(|x| x.key() == key)
    }

    /// Drops every reading before `t`, returning how many of them were held.
    fn prune_before(&mut self, t: i64) -> usize {
        let n = self.0.partition_point(|x| x.t < t);
        let held = self.0[..n].iter().filter(|r| r.held).count();
        self.0.drain(..n);
        held
    }
}

impl Readings {
    /// Inserts in time order, merging with an entry of the same time and kind.
    pub fn insert(&mut self, r: Reading) -> Inserted {
        let list = if r.kind == ReadingKind::OneMinute { &mut self.minutes } else { &mut self.reports };
        match list.insert(r) {
            None => {
                self.held += usize::from(r.held);
                Inserted::New
            }
            Some((existing, merged)) => {
                self.held = self.held + usize::from(merged.held) - usize::from(existing.held);
                Inserted::Duplicate
            }
        }
    }

    /// True when a reading of `kind` at `t` (Unix seconds) is held.
    pub fn contains(&self, t: i64, kind: ReadingKind) -> bool {
        match kind {
            ReadingKind::OneMinute => self.minutes.contains(t, kind),
            _ => self.reports.contains(t, kind),
        }
    }

    /// One-minute readings with `from <= t < to` (Unix seconds).
    pub fn minutes(&self, from: i64, to: i64) -> &[Reading] {
        self.minutes.range(from, to)
    }

    /// Reports (METAR, SPECI, HF-METAR) with `from <= t < to` (Unix seconds).
    pub fn reports(&self, from: i64, to: i64) -> &[Reading] {
        self.reports.range(from, to)
    }

    /// The newest reading's time, of either kind.
    pub fn newest(&self) -> Option<i64> {
        let last = |s: &Sorted| s.0.last().map(|r| r.t);
        last(&self.minutes).max(last(&self.reports))
    }

    /// Readings of either kind within ±`secs` of `t`, both ends included (one-minute
    /// readings first, then reports: callers ask about any of them, not their order).
    pub fn around(&self, t: i64, secs: i64) -> impl Iterator<Item = &Reading> {
        let (from, to) = (t - secs, t + secs + 1);
        self.minutes(from, to).iter().chain(self.reports(from, to))
    }

    /// True when some exact reading within ±`secs` of `t` rounds to `whole_c`.
    pub fn confirmed(&self, t: i64, secs: i64, whole_c: i16) -> bool {
        self.around(t, secs).any(|r| r.confirms(whole_c))
    }

    /// Clears `held` on every held reading within ±`secs` of `t` that `whole_c` confirms,
    /// and returns the readings released.
    pub fn release_held(&mut self, t: i64, secs: i64, whole_c: i16) -> Vec<Reading> {
        if self.held == 0 {
            return Vec::new();
        }
        let (a, b) = self.reports.bounds(t - secs, t + secs + 1);
        let mut out = Vec::new();
        for r in &mut self.reports.0[a..b] {
            if r.held && r.whole_c == whole_c {
                r.held = false;
                out.push(*r);
            }
        }
        self.held -= out.len();
        out
    }

    /// Drops every reading before `t`.
    pub fn prune_before(&mut self, t: i64) {
        self.held -= self.minutes.prune_before(t) + self.reports.prune_before(t);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.minutes.0.len() + self.reports.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_min(t: i64, f: Option<i16>) -> Reading {
        let f0 = f.unwrap_or(0);
        Reading {
            t,
            kind: ReadingKind::OneMinute,
            missing: f.is_none(),
            exact: true,
            whole_c: crate::units::f_to_c(f64::from(f0)).round() as i16,
            lo_f: f0,
            hi_f: f0,
            held: false,
        }
    }

    #[test]
    fn out_of_order_inserts_keep_time_order_and_merge_duplicates() {
        let mut rs = Readings::default();
        for t in [300, 60, 180, 120, 240, 0] {
            assert_eq!(rs.insert(one_min(t, Some(40))), Inserted::New);
        }
        let times: Vec<i64> = rs.minutes(i64::MIN, i64::MAX).iter().map(|r| r.t).collect();
        assert_eq!(times, [0, 60, 120, 180, 240, 300]);
        // A -999 and a value for the same minute: the value wins in either order.
        let mut a = Readings::default();
        a.insert(one_min(60, None));
        assert_eq!(a.insert(one_min(60, Some(41))), Inserted::Duplicate);
        let mut b = Readings::default();
        b.insert(one_min(60, Some(41)));
        b.insert(one_min(60, None));
        assert_eq!(a.minutes(0, 100), b.minutes(0, 100));
        assert!(!a.minutes(0, 100)[0].missing);
        assert_eq!(a.len(), 1);
    }

    #[test]
    fn a_day_of_late_minutes_keeps_both_kinds_in_order_and_visible() {
        let mut rs = Readings::default();
        let report = |t| Reading { kind: ReadingKind::Metar, ..one_min(t, Some(50)) };
        for t in (0..86_400).step_by(300) {
            rs.insert(report(t));
        }
        // The same day's minutes, a day late: after every report.
        for t in (0..86_400).step_by(60) {
            assert_eq!(rs.insert(one_min(t, Some(40))), Inserted::New);
        }
        assert_eq!(rs.len(), 288 + 1440);
        let sorted = |rs: &[Reading]| rs.windows(2).all(|w| w[0].key() < w[1].key());
        assert!(sorted(rs.minutes(i64::MIN, i64::MAX)) && sorted(rs.reports(i64::MIN, i64::MAX)));
        assert_eq!(rs.minutes(600, 900).len(), 5);
        assert_eq!(rs.reports(600, 900).len(), 1);
        let kinds: Vec<ReadingKind> = rs.around(600, 60).map(|r| r.kind).collect();
        assert_eq!(kinds, [ReadingKind::OneMinute, ReadingKind::OneMinute, ReadingKind::OneMinute, ReadingKind::Metar]);
        assert_eq!(rs.newest(), Some(86_340));
        assert!(rs.contains(600, ReadingKind::Metar) && rs.contains(660, ReadingKind::OneMinute));
        assert!(!rs.contains(660, ReadingKind::Metar));
    }

    #[test]
    fn around_includes_both_ends() {
        let mut rs = Readings::default();
        for t in [0, 600, 1200, 1201] {
            rs.insert(one_min(t, Some(40)));
        }
        let near: Vec<i64> = rs.around(600, 600).map(|r| r.t).collect();
        assert_eq!(near, [0, 600, 1200]);
        assert!(rs.minutes(5, 5).is_empty());
        assert!(rs.minutes(1300, 5).is_empty());
    }

    #[test]
    fn held_count_follows_release_and_prune() {
        let mut rs = Readings::default();
        let held = |t| Reading {
            t,
            kind: ReadingKind::Metar,
            missing: false,
            exact: false,
            whole_c: 3,
            lo_f: 37,
            hi_f: 38,
            held: true,
        };
        rs.insert(held(0));
        rs.insert(held(3600));
        rs.insert(held(3600)); // duplicate: still one held entry
        assert_eq!(rs.held, 2);
        assert!(rs.release_held(600, 600, 4).is_empty(), "value disagrees");
        assert_eq!(rs.release_held(600, 600, 3).len(), 1);
        assert_eq!(rs.held, 1);
        rs.prune_before(3601);
        assert_eq!((rs.held, rs.len()), (0, 0));
    }
}
