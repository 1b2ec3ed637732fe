//! How long events take from publication to their connections: the server's share of a
//! client's latency, measured where the server hands an event's frame to a connection.
//!
//! A client's own clock says when an event arrived, which includes the network and the
//! client's own work; on one machine a load generator's core is part of what it measures.
//! This histogram is what the server can answer for: from the event's creation (its `at`)
//! to the moment its connection's body yields the frame, which the connection writes in
//! the same poll. Recording sits on the fan-out's path (once per delivery), so it is one
//! atomic add into a fixed log-linear bucket array: no lock, no allocation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Buckets per doubling of the lag: a percentile is known to within 1/8 (12.5 %).
const SUB_BUCKETS: usize = 8;
/// Doublings covered (up to 2^29 µs, about 9 minutes); longer lags fall into the last bucket.
const DOUBLINGS: usize = 26;
const BUCKETS: usize = SUB_BUCKETS * (DOUBLINGS + 1);

/// Delivery lags in microseconds.
#[derive(Debug)]
pub struct LagHistogram {
    buckets: Box<[AtomicU64]>,
    /// Their sum (a Prometheus histogram's `_sum`).
    sum_us: AtomicU64,
}

impl Default for LagHistogram {
    fn default() -> Self {
        LagHistogram { buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(), sum_us: AtomicU64::new(0) }
    }
}

/// The bucket of `us` microseconds: below 8 µs one per microsecond, then 8 per doubling.
fn bucket(us: u64) -> usize {
    if us < SUB_BUCKETS as u64 {
        return us as usize;
    }
    let octave = 63 - us.leading_zeros() as usize; // ≥ 3
    let sub = (us >> (octave - 3)) as usize & (SUB_BUCKETS - 1);
    (SUB_BUCKETS * (octave - 2) + sub).min(BUCKETS - 1)
}

/// The largest lag in microseconds that falls into bucket `b` (its upper bound).
fn upper_bound_us(b: usize) -> u64 {
    if b < SUB_BUCKETS {
        return b as u64;
    }
    let octave = b / SUB_BUCKETS + 2;
    let sub = (b % SUB_BUCKETS) as u64;
    ((SUB_BUCKETS as u64 + sub + 1) << (octave - 3)) - 1
}

impl LagHistogram {
    /// Counts one delivery that took `lag` (a lag the clock put below zero counts as zero).
    pub fn record(&self, lag: Duration) {
        let us = u64::try_from(lag.as_micros()).unwrap_or(u64::MAX);
        self.buckets[bucket(us)].fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    /// The counts so far (each bucket read once; deliveries recorded meanwhile may or may
    /// not be in it).
    pub fn snapshot(&self) -> LagSnapshot {
        LagSnapshot {
            counts: self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect(),
            sum_us: self.sum_us.load(Ordering::Relaxed),
        }
    }
}

/// Counts of a [`LagHistogram`] at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LagSnapshot {
    counts: Vec<u64>,
    sum_us: u64,
}

impl LagSnapshot {
    /// Deliveries counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The lags' sum.
    pub fn sum(&self) -> Duration {
        Duration::from_micros(self.sum_us)
    }

    /// Deliveries whose lag's bucket lies wholly at or below `bound`: a Prometheus
    /// histogram's cumulative count for `le = bound`, short by at most the deliveries of
    /// the one bucket that straddles it.
    pub fn at_most(&self, bound: Duration) -> u64 {
        let bound = u64::try_from(bound.as_micros()).unwrap_or(u64::MAX);
        self.counts.iter().enumerate().take_while(|(b, _)| upper_bound_us(*b) <= bound).map(|(_, n)| n).sum()
    }

    /// What was recorded between `earlier` (a snapshot of the same histogram) and this one.
    pub fn since(&self, earlier: &LagSnapshot) -> LagSnapshot {
        let counts = self.counts.iter().zip(&earlier.counts).map(|(a, b)| a.saturating_sub(*b)).collect();
        LagSnapshot { counts, sum_us: self.sum_us.saturating_sub(earlier.sum_us) }
    }

    /// The lag that `q` (0..=1) of the deliveries did not exceed, as its bucket's upper
    /// bound (at most 12.5 % above the true value); `None` without deliveries.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(Duration::from_micros(upper_bound_us(b)));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lag lands in a bucket whose bounds hold it, within 12.5 %, in order.
    #[test]
    fn buckets_hold_their_lags() {
        let mut last = 0;
        for us in (0..100_000u64).chain([1 << 20, (1 << 26) - 1]) {
            let b = bucket(us);
            assert!(b >= last, "{us}");
            last = b;
            let hi = upper_bound_us(b);
            let lo = if b == 0 { 0 } else { upper_bound_us(b - 1) + 1 };
            assert!(lo <= us && us <= hi, "{us}: bucket {b} is {lo}..={hi}");
            assert!(hi - lo <= us / 8, "{us}: bucket {b} is {lo}..={hi}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    /// Quantiles of a known spread, and of what was recorded since a snapshot.
    #[test]
    fn quantiles_are_the_upper_bounds_of_their_ranks() {
        let h = LagHistogram::default();
        assert_eq!(h.snapshot().quantile(0.5), None);
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 100);
        let within = |q: f64, ms: u64| {
            let got = s.quantile(q).unwrap().as_micros() as u64;
            got >= ms * 1000 && got <= ms * 1000 * 9 / 8
        };
        assert!(within(0.5, 50) && within(0.99, 99) && within(1.0, 100) && within(0.0, 1));
        assert_eq!(s.sum(), Duration::from_millis(5050));
        assert_eq!(s.at_most(Duration::from_millis(200)), 100);
        let below_50 = s.at_most(Duration::from_millis(50));
        assert!((44..=50).contains(&below_50), "{below_50}: short by one bucket at most");
        assert_eq!(s.at_most(Duration::from_micros(999)), 0);
        h.record(Duration::from_secs(1));
        let later = h.snapshot().since(&s);
        assert_eq!(later.count(), 1);
        assert_eq!(later.sum(), Duration::from_secs(1));
        assert!(later.quantile(0.5).unwrap() >= Duration::from_secs(1));
    }
}
