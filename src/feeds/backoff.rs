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

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

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
