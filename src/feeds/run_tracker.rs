//! What a model feed (`open_meteo`, `mos`) remembers about the runs it fetches, per
//! (model, run time): which are stored, whether the sink was asked what is stored
//! already, how many polls failed, and when to ask again for one not published yet.
//!
//! The rules, one place for both feeds:
//! - a model's stored runs are read from the sink once per process ([`RunTracker::seed`]);
//! - a run is due when it is not given up (fewer than `max_attempts` failed polls) and its
//!   wait is over ([`Patience`]: the poll interval, doubling up to an hour, reset once some
//!   of it is stored);
//! - everything about a run initialised at or before the start of the lookback is
//!   forgotten ([`RunTracker::due_runs`]), stored runs included: such a run is never asked
//!   for again, so the memory stays as large as the lookback, however long the server runs.
//!
//! What is stored is kept per location (`L`): Open-Meteo stores a run station by station
//! (`L` = the station's id), a MOS bulletin whole (`L` = `()`).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::backoff::Patience;

/// A model's run: (model name, run time).
type Run = (&'static str, DateTime<Utc>);

/// The runs of the model feeds: stored, seeded, failed, waited for.
#[derive(Debug)]
pub struct RunTracker<L> {
    /// Failed polls after which a run is given up.
    max_attempts: u32,
    /// (model, location, run) stored.
    done: HashSet<(&'static str, L, DateTime<Utc>)>,
    /// Models whose stored runs were read from the sink.
    seeded: HashSet<&'static str>,
    /// Failed polls per run.
    failures: HashMap<Run, u32>,
    /// When to ask again for a run whose last ask stored nothing.
    patience: Patience<Run>,
}

impl<L: Hash + Eq> RunTracker<L> {
    /// The memory of a feed polled every `interval`, giving a run up after `max_attempts`
    /// failed polls.
    pub fn new(interval: Duration, max_attempts: u32) -> Self {
        RunTracker {
            max_attempts,
            done: HashSet::new(),
            seeded: HashSet::new(),
            failures: HashMap::new(),
            patience: Patience::new(interval),
        }
    }

    /// True once `model`'s stored runs were read from the sink.
    pub fn is_seeded(&self, model: &str) -> bool {
        self.seeded.contains(model)
    }

    /// Records `model`'s runs the sink already holds, as (location, run time).
    pub fn seed(&mut self, model: &'static str, stored: impl IntoIterator<Item = (L, DateTime<Utc>)>) {
        self.done.extend(stored.into_iter().map(|(location, run)| (model, location, run)));
        self.seeded.insert(model);
    }

    /// Of `published` (`model`'s runs initialised after `since`), those to ask for at
    /// `now`: not given up, wait over. Forgets first what is known of `model`'s runs at or
    /// before `since`, which left the lookback. Whether a run is stored is the caller's
    /// question ([`RunTracker::is_done`]): per location, or whole.
    pub fn due_runs(
        &mut self,
        model: &'static str,
        since: DateTime<Utc>,
        published: Vec<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Vec<DateTime<Utc>> {
        let inside = |m: &str, r: &DateTime<Utc>| m != model || *r > since;
        self.done.retain(|(m, _, r)| inside(m, r));
        self.failures.retain(|(m, r), _| inside(m, r));
        self.patience.retain(|(m, r)| inside(m, r));
        published
            .into_iter()
            .filter(|run| self.failures.get(&(model, *run)).copied().unwrap_or(0) < self.max_attempts)
            .filter(|run| self.patience.due(&(model, *run), now))
            .collect()
    }

    /// True when `model`'s run `run` is stored for `location`.
    pub fn is_done(&self, model: &'static str, location: L, run: DateTime<Utc>) -> bool {
        self.done.contains(&(model, location, run))
    }

    /// Records that `model`'s run `run` is stored for `location`.
    pub fn stored(&mut self, model: &'static str, location: L, run: DateTime<Utc>) {
        self.done.insert((model, location, run));
    }

    /// Records an ask for `model`'s run `run` at `now`: `found` (something of it stored)
    /// resets its wait, else the wait grows.
    pub fn asked(&mut self, model: &'static str, run: DateTime<Utc>, now: DateTime<Utc>, found: bool) {
        if found {
            self.patience.found(&(model, run));
        } else {
            self.patience.missed((model, run), now);
        }
    }

    /// Records a poll of `model`'s run `run` whose requests failed; true when this one
    /// gives the run up (the caller says so in the log).
    pub fn failed(&mut self, model: &'static str, run: DateTime<Utc>) -> bool {
        let n = self.failures.entry((model, run)).or_default();
        *n += 1;
        *n == self.max_attempts
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn t(h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 9, 25, h, 0, 0).unwrap()
    }

    const FIVE_MINUTES: Duration = Duration::from_secs(300);

    #[test]
    fn a_seeded_run_is_done_and_the_model_seeded() {
        let mut runs = RunTracker::new(FIVE_MINUTES, 6);
        assert!(!runs.is_seeded("GFS"));
        runs.seed("GFS", [("KNYC".to_string(), t(6))]);
        assert!(runs.is_seeded("GFS") && !runs.is_seeded("NAM"));
        assert!(runs.is_done("GFS", "KNYC".to_string(), t(6)));
        assert!(!runs.is_done("GFS", "KMDW".to_string(), t(6)) && !runs.is_done("NAM", "KNYC".to_string(), t(6)));
        runs.stored("GFS", "KMDW".to_string(), t(6));
        assert!(runs.is_done("GFS", "KMDW".to_string(), t(6)));
    }

    #[test]
    fn a_run_failing_max_attempts_polls_is_given_up_once() {
        let mut runs: RunTracker<()> = RunTracker::new(FIVE_MINUTES, 3);
        let gave_up: Vec<bool> = (0..4).map(|_| runs.failed("MET", t(12))).collect();
        assert_eq!(gave_up, [false, false, true, false]);
        assert_eq!(runs.due_runs("MET", t(0), vec![t(6), t(12)], t(13)), [t(6)], "t(12) is given up");
    }

    #[test]
    fn a_run_not_found_waits_and_one_found_is_asked_at_once() {
        let mut runs: RunTracker<()> = RunTracker::new(FIVE_MINUTES, 6);
        let now = t(13);
        let minutes = |m| now + chrono::Duration::minutes(m);
        assert_eq!(runs.due_runs("MET", t(0), vec![t(12)], now), [t(12)]);
        runs.asked("MET", t(12), now, false);
        assert!(runs.due_runs("MET", t(0), vec![t(12)], minutes(1)).is_empty(), "waits an interval");
        assert_eq!(runs.due_runs("MET", t(0), vec![t(12)], minutes(5)), [t(12)]);
        runs.asked("MET", t(12), minutes(5), false);
        assert!(runs.due_runs("MET", t(0), vec![t(12)], minutes(10)).is_empty(), "then two");
        runs.asked("MET", t(12), minutes(10), true);
        assert_eq!(runs.due_runs("MET", t(0), vec![t(12)], minutes(10)), [t(12)], "found: no wait");
    }

    #[test]
    fn runs_leaving_the_lookback_are_forgotten_stored_ones_too() {
        let mut runs = RunTracker::new(FIVE_MINUTES, 6);
        runs.seed("GFS", [("KNYC".to_string(), t(0)), ("KNYC".to_string(), t(6))]);
        runs.stored("NAM", "KNYC".to_string(), t(0));
        runs.failed("GFS", t(0));
        runs.asked("GFS", t(0), t(1), false);
        runs.failed("GFS", t(6));
        runs.due_runs("GFS", t(0), vec![t(6)], t(7));
        // GFS's t(0) left the lookback (a run at `since` is outside it: see
        // `models::published_runs`); t(6) and NAM's runs stay.
        assert!(!runs.is_done("GFS", "KNYC".to_string(), t(0)));
        assert!(runs.is_done("GFS", "KNYC".to_string(), t(6)));
        assert!(runs.is_done("NAM", "KNYC".to_string(), t(0)), "another model's lookback is its own");
        assert_eq!(runs.done.len(), 2);
        assert_eq!(runs.failures.len(), 1);
        assert!(runs.patience.due(&("GFS", t(0)), t(1)), "its wait is forgotten");
        // A server running for days keeps one lookback's runs, no more.
        for day in 1..=30 {
            let since = t(0) + chrono::Duration::days(day);
            runs.stored("GFS", "KNYC".to_string(), since + chrono::Duration::hours(6));
            runs.due_runs("GFS", since, Vec::new(), since);
        }
        assert_eq!(runs.done.iter().filter(|(m, _, _)| *m == "GFS").count(), 1);
    }
}
