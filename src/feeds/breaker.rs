//! The circuit breaker of one host: after a run of failed requests the host is paused (no
//! request is sent), then one probe is let through; its success resumes normal traffic,
//! its failure pauses the host again.
//!
//! A service that is down or blocking us gets one request per pause instead of one per
//! poll per batch, and a feed asking for it learns at once that it is paused.

use std::time::Duration;

use tokio::time::Instant;

/// What the breaker lets a request do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Closed: send as usual.
    Go,
    /// The pause is over: this request is the one probe (send it once, without retries).
    Probe,
    /// Open: do not send; the pause ends in `retry_in`.
    Refuse { retry_in: Duration },
}

#[derive(Debug, Clone, Copy)]
enum State {
    Closed {
        failures: u32,
    },
    Open {
        until: Instant,
    },
    /// A probe is out since `since`. If its caller vanished without reporting (a cancelled
    /// poll), another probe is allowed once a pause has passed, so the host is never stuck.
    HalfOpen {
        since: Instant,
    },
}

/// One host's breaker.
#[derive(Debug)]
pub struct Breaker {
    threshold: u32,
    pause: Duration,
    state: State,
}

impl Breaker {
    /// Opens after `threshold` consecutive failures, for `pause`.
    pub fn new(threshold: u32, pause: Duration) -> Self {
        Breaker { threshold: threshold.max(1), pause, state: State::Closed { failures: 0 } }
    }

    /// Whether a request may be sent now.
    pub fn admit(&mut self, now: Instant) -> Admit {
        match self.state {
            State::Closed { .. } => Admit::Go,
            State::Open { until } if now < until => Admit::Refuse { retry_in: until - now },
            State::HalfOpen { since } if now < since + self.pause => {
                Admit::Refuse { retry_in: since + self.pause - now }
            }
            State::Open { .. } | State::HalfOpen { .. } => {
                self.state = State::HalfOpen { since: now };
                Admit::Probe
            }
        }
    }

    /// The host answered properly: close.
    pub fn success(&mut self) {
        self.state = State::Closed { failures: 0 };
    }

    /// A request failed for a reason that says the host is in trouble. Returns true when
    /// this failure opened the breaker.
    pub fn failure(&mut self, now: Instant) -> bool {
        match self.state {
            State::Closed { failures } if failures + 1 < self.threshold => {
                self.state = State::Closed { failures: failures + 1 };
                false
            }
            _ => {
                self.state = State::Open { until: now + self.pause };
                true
            }
        }
    }

    /// Whether requests are being refused (open, or a probe is out).
    pub fn is_open(&self) -> bool {
        !matches!(self.state, State::Closed { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_threshold_probes_after_pause_and_closes_on_success() {
        let pause = Duration::from_secs(10);
        let mut b = Breaker::new(3, pause);
        let t0 = Instant::now();
        assert!(!b.failure(t0));
        assert!(!b.failure(t0));
        assert_eq!(b.admit(t0), Admit::Go);
        assert!(b.failure(t0), "the third failure opens");
        assert_eq!(b.admit(t0 + Duration::from_secs(4)), Admit::Refuse { retry_in: Duration::from_secs(6) });
        assert_eq!(b.admit(t0 + pause), Admit::Probe);
        assert!(matches!(b.admit(t0 + pause), Admit::Refuse { .. }), "one probe at a time");
        b.success();
        assert!(!b.is_open());
        assert_eq!(b.admit(t0 + pause), Admit::Go);
    }

    #[test]
    fn a_failed_probe_pauses_again_and_a_lost_probe_does_not_wedge_the_host() {
        let pause = Duration::from_secs(10);
        let mut b = Breaker::new(1, pause);
        let t0 = Instant::now();
        assert!(b.failure(t0));
        let t1 = t0 + pause;
        assert_eq!(b.admit(t1), Admit::Probe);
        assert!(b.failure(t1), "a failed probe reopens at once");
        assert!(matches!(b.admit(t1 + Duration::from_secs(9)), Admit::Refuse { .. }));
        let t2 = t1 + pause;
        assert_eq!(b.admit(t2), Admit::Probe);
        // That probe's caller never reports back: after another pause, a new probe.
        assert_eq!(b.admit(t2 + pause), Admit::Probe);
    }

    #[test]
    fn a_success_resets_the_count() {
        let mut b = Breaker::new(2, Duration::from_secs(1));
        let t0 = Instant::now();
        b.failure(t0);
        b.success();
        assert!(!b.failure(t0), "the count restarted");
        assert!(b.failure(t0));
    }
}
