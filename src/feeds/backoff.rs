//! When to try again: exponential backoff with jitter, and the server's own `Retry-After`.
//!
//! Jitter matters because every wxlake polling a public service on the minute would
//! otherwise retry in step and hit it together; each delay is drawn in the upper half of
//! its step, so it never shrinks below half the nominal wait.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::Rng;

/// The delay before retry number `retry` (1 = the first retry): `base * 2^(retry-1)`,
/// capped at `max`, then drawn uniformly in `[d/2, d]`.
pub fn delay(retry: u32, base: Duration, max: Duration) -> Duration {
    let nominal = nominal(retry, base, max);
    nominal.mul_f64(rand::rng().random_range(0.5..=1.0))
}

/// The delay before jitter.
fn nominal(retry: u32, base: Duration, max: Duration) -> Duration {
    let factor = 2u32.saturating_pow(retry.saturating_sub(1));
    base.saturating_mul(factor).min(max)
}

/// A `Retry-After` header's wait from `now`: delay-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`); a date in the past is no wait. `None` when the value
/// is neither (the caller then backs off on its own schedule).
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    // IMF-fixdate is RFC 2822 with the zone spelled GMT, which chrono accepts.
    let at = DateTime::parse_from_rfc2822(value).ok()?.with_timezone(&Utc);
    Some((at - now).to_std().unwrap_or(Duration::ZERO))
}

/// The longest wait between two asks for something not yet published.
pub const MAX_PATIENCE: Duration = Duration::from_secs(3600);

/// When to ask again for a thing a source publishes once (a model run, a bulletin's
/// cycle) and did not have when asked: the poll interval after the first miss, doubling
/// after each further one, at most [`MAX_PATIENCE`]; forgotten once it is stored. At a
/// 5-minute interval a thing that never appears is asked for 5 times in its first 75
/// minutes, then hourly: about a dozen times in a 12-hour lookback, not once per poll.
///
/// Polls keep their rhythm only roughly (a poll's clock is read when its turn in the poll
/// comes), so a wait counts as over half an interval early: a wait of one interval is the
/// next poll, not the one after.
#[derive(Debug)]
pub struct Patience<K> {
    interval: Duration,
    /// Per thing: misses so far and when it may be asked for again.
    waiting: std::collections::HashMap<K, (u32, DateTime<Utc>)>,
}

impl<K: std::hash::Hash + Eq> Patience<K> {
    /// Patience for a source polled every `interval`.
    pub fn new(interval: Duration) -> Self {
        Patience { interval, waiting: std::collections::HashMap::new() }
    }

    /// True when `key` may be asked for at `now`: never missed, or its wait is over.
    pub fn due(&self, key: &K, now: DateTime<Utc>) -> bool {
        self.waiting.get(key).is_none_or(|(_, next)| now + chrono_duration(self.interval / 2) >= *next)
    }

    /// Records that `key`, asked for at `now`, was not there; returns its misses so far.
    pub fn missed(&mut self, key: K, now: DateTime<Utc>) -> u32 {
        let entry = self.waiting.entry(key).or_insert((0, now));
        entry.0 += 1;
        entry.1 = now + chrono_duration(nominal(entry.0, self.interval, MAX_PATIENCE.max(self.interval)));
        entry.0
    }

    /// Forgets `key`'s misses: it was stored (or some of it was), so the next poll asks.
    pub fn found(&mut self, key: &K) {
        self.waiting.remove(key);
    }

    /// Keeps only the things `keep` says are still wanted (those inside the lookback).
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.waiting.retain(|k, _| keep(k));
    }
}

fn chrono_duration(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn patience_doubles_from_the_interval_to_an_hour_and_resets_when_found() {
        let t0 = Utc.with_ymd_and_hms(2026, 9, 25, 3, 15, 0).unwrap();
        let minutes = |m: i64| t0 + chrono::Duration::minutes(m);
        let mut p = Patience::new(Duration::from_secs(300));
        let key = ("MET", t0);
        assert!(p.due(&key, t0), "never asked: due");
        // A poll every 5 minutes for 12 hours; the ones that ask.
        let mut asked = Vec::new();
        for m in (0..12 * 60).step_by(5) {
            if p.due(&key, minutes(m)) {
                asked.push(m);
                p.missed(key, minutes(m));
            }
        }
        assert_eq!(asked[..6], [0, 5, 15, 35, 75, 135], "waits 5, 10, 20, 40, then 60 minutes");
        assert!(asked.windows(2).skip(4).all(|w| w[1] - w[0] == 60), "{asked:?}");
        assert_eq!(asked.len(), 15, "{asked:?}");
        // A poll a little early still asks; one well before the wait is over does not.
        let mut p = Patience::new(Duration::from_secs(300));
        assert_eq!(p.missed(key, t0), 1);
        assert!(p.due(&key, t0 + chrono::Duration::seconds(299)));
        assert_eq!(p.missed(key, minutes(5)), 2);
        assert!(!p.due(&key, minutes(10)) && p.due(&key, minutes(15)));
        // Found: the next poll asks, and the next miss waits one interval again.
        p.found(&key);
        assert!(p.due(&key, minutes(6)));
        assert_eq!(p.missed(key, minutes(6)), 1);
        assert!(p.due(&key, minutes(11)));
        // Retain drops what left the lookback.
        p.retain(|k| k.1 > t0);
        assert!(p.waiting.is_empty());
        // An interval longer than the cap waits one interval.
        let mut slow = Patience::new(Duration::from_secs(7200));
        slow.missed(key, t0);
        slow.missed(key, minutes(120));
        assert!(!slow.due(&key, minutes(120 + 59)) && slow.due(&key, minutes(240)));
    }

    #[test]
    fn delays_double_up_to_the_cap_with_jitter_in_the_upper_half() {
        let (base, max) = (Duration::from_millis(100), Duration::from_millis(1000));
        assert_eq!(nominal(1, base, max), Duration::from_millis(100));
        assert_eq!(nominal(2, base, max), Duration::from_millis(200));
        assert_eq!(nominal(4, base, max), Duration::from_millis(800));
        assert_eq!(nominal(5, base, max), max);
        assert_eq!(nominal(60, base, max), max);
        for retry in 1..8 {
            let d = delay(retry, base, max);
            let n = nominal(retry, base, max);
            assert!(d >= n / 2 && d <= n, "retry {retry}: {d:?} outside [{:?}, {n:?}]", n / 2);
        }
    }

    #[test]
    fn retry_after_takes_seconds_and_http_dates() {
        let now = Utc.with_ymd_and_hms(2015, 10, 21, 7, 27, 0).unwrap();
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), Some(Duration::from_secs(60)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
    }
}
