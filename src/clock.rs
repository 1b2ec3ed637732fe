//! The source of "now" for everything time-dependent (rate-limit windows, trading days,
//! data-quality "active" gaps), injectable so tests cross minutes and days instantly.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Utc};

/// Source of the current time, injectable so tests can cross minutes and days instantly.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The real UTC clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told to, for tests; shareable across threads.
#[derive(Debug)]
pub struct ManualClock {
    nanos: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `start` (nanosecond precision, years 1677-2262).
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock { nanos: AtomicI64::new(to_nanos(start)) }
    }

    /// Moves the clock to `t`.
    pub fn set(&self, t: DateTime<Utc>) {
        self.nanos.store(to_nanos(t), Ordering::SeqCst);
    }

    /// Moves the clock by `d` (may be negative).
    pub fn advance(&self, d: chrono::Duration) {
        let step = d.num_nanoseconds().unwrap_or(i64::MAX);
        // The closure always returns Some, so fetch_update cannot fail.
        let _ = self.nanos.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| Some(n.saturating_add(step)));
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        DateTime::from_timestamp_nanos(self.nanos.load(Ordering::SeqCst))
    }
}

fn to_nanos(t: DateTime<Utc>) -> i64 {
    t.timestamp_nanos_opt().unwrap_or(if t.timestamp() < 0 { i64::MIN } else { i64::MAX })
}
