//! Rate limits per API key (spec 8 for v2, spec 9 for v1).
//!
//! Each key has, per API version, two fixed windows: the current UTC minute and the current
//! UTC day. A request is admitted when neither window is full, and then counts in both;
//! refused requests count in neither, so a client that keeps retrying during a block is not
//! punished past the window it exceeded. Fixed windows (not sliding) keep the state at two
//! small counters per key and make the reset time exact and explainable: `X-RateLimit-Reset`
//! is the number of seconds until the binding window ends, where the binding window is the
//! one with fewer requests left (when refused: the full window that ends last, since the
//! request cannot succeed before then), and `Retry-After` equals it on a refusal.
//!
//! v1 and v2 are counted separately, each against its own table, as the spec gives one
//! table per version. The Testing tier, which the spec names without limits, gets the
//! Professional limits in both versions.
//!
//! Counters live in sharded maps, one mutex per shard, so a check is exact under any
//! concurrency (N threads never admit more than the limit) and uncontended costs a mutex, a
//! hash lookup and a clock read. A key's counters reset when its window rolls over, and each
//! shard drops keys not seen during the current UTC day, so memory is bounded by the keys
//! active today.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use super::keys::Tier;
pub use crate::clock::{Clock, ManualClock, SystemClock};

/// Header with the binding window's request allowance.
pub const HEADER_LIMIT: &str = "x-ratelimit-limit";
/// Header with the requests left in the binding window.
pub const HEADER_REMAINING: &str = "x-ratelimit-remaining";
/// Header with the seconds until the binding window resets.
pub const HEADER_RESET: &str = "x-ratelimit-reset";
/// Header with the seconds to wait before retrying; sent only with a 429.
pub const HEADER_RETRY_AFTER: &str = "retry-after";

const SECS_PER_MINUTE: i64 = 60;
const SECS_PER_DAY: i64 = 86_400;
/// Enough shards that 2-16 request threads rarely meet on one mutex.
const SHARDS: usize = 64;

/// Which interface a request came through; each has its own limits and counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiVersion {
    V1,
    V2,
}

/// Requests allowed per UTC minute and per UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub per_minute: u32,
    pub per_day: u32,
}

impl Limits {
    /// The spec's tables: v2 in part 8, v1 in part 9; Testing is treated as Professional.
    pub const fn for_tier(tier: Tier, api: ApiVersion) -> Limits {
        let (per_minute, per_day) = match (api, tier) {
            (_, Tier::Professional | Tier::Testing) => (60, 5_000),
            (ApiVersion::V2, Tier::Developer) => (300, 100_000),
            (ApiVersion::V2, Tier::Enterprise) => (1_200, 500_000),
            (ApiVersion::V1, Tier::Developer | Tier::Enterprise) => (300, 50_000),
        };
        Limits { per_minute, per_day }
    }
}

/// The window a [`Decision`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Minute,
    Day,
}

/// Outcome of one check, describing the binding window (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed (it has been counted); otherwise answer 429.
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the binding window resets, rounded up, 1..=86400.
    pub reset_secs: u64,
    /// Set only when refused: seconds until a retry can succeed.
    pub retry_after_secs: Option<u64>,
    pub window: Window,
}

impl Decision {
    /// Response headers for this decision. Names are lowercase (as HTTP/2 and hyper send them
    /// anyway), so `HeaderName::from_static` accepts them.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = Vec::with_capacity(4);
        h.push((HEADER_LIMIT, self.limit.to_string()));
        h.push((HEADER_REMAINING, self.remaining.to_string()));
        h.push((HEADER_RESET, self.reset_secs.to_string()));
        if let Some(secs) = self.retry_after_secs {
            h.push((HEADER_RETRY_AFTER, secs.to_string()));
        }
        h
    }

    /// Why a refused request was refused, the same at every front door: "{tier} tier
    /// allows N requests per minute; retry after S s".
    pub fn refusal(&self, tier: Tier) -> String {
        let window = match self.window {
            Window::Minute => "minute",
            Window::Day => "day",
        };
        let wait = self.retry_after_secs.unwrap_or(self.reset_secs);
        format!("{} tier allows {} requests per {window}; retry after {wait} s", tier.as_str(), self.limit)
    }
}

/// Requests counted in one fixed window.
#[derive(Debug, Default, Clone, Copy)]
struct Counter {
    /// Index of the window since the Unix epoch (minutes or days).
    window: i64,
    count: u32,
}

impl Counter {
    /// Starts a fresh count when `window` is not the one counted so far.
    fn roll(&mut self, window: i64) {
        if self.window != window {
            *self = Counter { window, count: 0 };
        }
    }
}

/// One key's counters for one API version.
#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    minute: Counter,
    day: Counter,
}

/// One key's counters, per API version.
#[derive(Debug, Default, Clone, Copy)]
struct Entry {
    v1: Counters,
    v2: Counters,
}

impl Entry {
    fn counters(&mut self, api: ApiVersion) -> &mut Counters {
        match api {
            ApiVersion::V1 => &mut self.v1,
            ApiVersion::V2 => &mut self.v2,
        }
    }

    fn used_on(&self, day: i64) -> bool {
        self.v1.day.window == day || self.v2.day.window == day
    }
}

#[derive(Default)]
struct Shard {
    keys: HashMap<Box<str>, Entry>,
    /// The UTC day of the last sweep of stale keys.
    swept_day: i64,
}

impl Shard {
    /// Once per UTC day, forgets keys with no request today (their counts would reset anyway).
    fn sweep(&mut self, day: i64) {
        if self.swept_day != day {
            self.swept_day = day;
            self.keys.retain(|_, entry| entry.used_on(day));
        }
    }
}

/// Own cache line per shard, so threads on different shards do not slow each other.
#[repr(align(128))]
#[derive(Default)]
struct PaddedShard(Mutex<Shard>);

/// The moment of a check, split into the window indexes it falls in.
#[derive(Debug, Clone, Copy)]
struct Moment {
    minute: i64,
    day: i64,
    secs_to_minute_end: u64,
    secs_to_day_end: u64,
}

impl Moment {
    fn of(t: DateTime<Utc>) -> Self {
        let secs = t.timestamp();
        Moment {
            minute: secs.div_euclid(SECS_PER_MINUTE),
            day: secs.div_euclid(SECS_PER_DAY),
            secs_to_minute_end: secs_to_end(secs, SECS_PER_MINUTE),
            secs_to_day_end: secs_to_end(secs, SECS_PER_DAY),
        }
    }
}

/// Seconds from `secs` (any fraction past it included) to the end of its `period`, rounded
/// up: at 12:00:30.5 the minute ends in 29.5 s, reported as 30; at 12:00:00.0, as 60.
fn secs_to_end(secs: i64, period: i64) -> u64 {
    (period - secs.rem_euclid(period)).unsigned_abs()
}

/// Per-key, per-version fixed-window rate limiter. Share it behind an `Arc`.
pub struct RateLimiter {
    clock: Arc<dyn Clock>,
    shards: Box<[PaddedShard; SHARDS]>,
}

impl RateLimiter {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        let shards = Box::new(std::array::from_fn(|_| PaddedShard::default()));
        RateLimiter { clock, shards }
    }

    /// A limiter on the real clock.
    pub fn system() -> Self {
        RateLimiter::new(Arc::new(SystemClock))
    }

    /// Counts a request of `key_id` if its tier's limits for `api` allow it, and says so.
    pub fn check(&self, key_id: &str, tier: Tier, api: ApiVersion) -> Decision {
        let limits = Limits::for_tier(tier, api);
        let at = Moment::of(self.clock.now());
        let mut shard = self.shard(key_id).lock();
        shard.sweep(at.day);
        // Look up without allocating; allocate the key only the first time it is seen today.
        if let Some(entry) = shard.keys.get_mut(key_id) {
            return decide(entry.counters(api), limits, at);
        }
        let mut entry = Entry::default();
        let decision = decide(entry.counters(api), limits, at);
        shard.keys.insert(key_id.into(), entry);
        decision
    }

    /// Number of keys with counters held (for tests and metrics).
    pub fn tracked_keys(&self) -> usize {
        self.shards.iter().map(|s| s.0.lock().keys.len()).sum()
    }

    fn shard(&self, key_id: &str) -> &Mutex<Shard> {
        // Truncating the hash is fine: any bits pick a shard; the modulo keeps the index in range.
        &self.shards[shard_of(key_id)].0
    }
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter").field("tracked_keys", &self.tracked_keys()).finish()
    }
}

/// Admits and counts the request, or refuses it, for one key and version.
fn decide(c: &mut Counters, limits: Limits, at: Moment) -> Decision {
    c.minute.roll(at.minute);
    c.day.roll(at.day);
    let day_full = c.day.count >= limits.per_day;
    let minute_full = c.minute.count >= limits.per_minute;
    if day_full || minute_full {
        // A full day outlasts a full minute, so it is the one to report when both are full.
        let (window, limit, reset) = if day_full {
            (Window::Day, limits.per_day, at.secs_to_day_end)
        } else {
            (Window::Minute, limits.per_minute, at.secs_to_minute_end)
        };
        return Decision {
            allowed: false,
            limit,
            remaining: 0,
            reset_secs: reset,
            retry_after_secs: Some(reset),
            window,
        };
    }
    c.minute.count += 1;
    c.day.count += 1;
    let minute_left = limits.per_minute - c.minute.count;
    let day_left = limits.per_day - c.day.count;
    let (window, limit, remaining, reset) = if minute_left < day_left {
        (Window::Minute, limits.per_minute, minute_left, at.secs_to_minute_end)
    } else {
        (Window::Day, limits.per_day, day_left, at.secs_to_day_end)
    };
    Decision { allowed: true, limit, remaining, reset_secs: reset, retry_after_secs: None, window }
}

/// The shard of a key id: a fixed-seed hash (the same shard for the same key in every run).
fn shard_of(key_id: &str) -> usize {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0).hash_one(key_id) as usize % SHARDS
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 3, 10, h, m, s).unwrap()
    }

    fn limiter(start: DateTime<Utc>) -> (Arc<ManualClock>, RateLimiter) {
        let clock = Arc::new(ManualClock::new(start));
        let limiter = RateLimiter::new(clock.clone());
        (clock, limiter)
    }

    #[test]
    fn limit_tables_match_the_spec() {
        use ApiVersion::*;
        use Tier::*;
        // Spec part 8 (v2) and part 9 (v1); Testing as Professional by our choice.
        let expected = [
            (Professional, V2, 60, 5_000),
            (Developer, V2, 300, 100_000),
            (Enterprise, V2, 1_200, 500_000),
            (Testing, V2, 60, 5_000),
            (Professional, V1, 60, 5_000),
            (Developer, V1, 300, 50_000),
            (Enterprise, V1, 300, 50_000),
            (Testing, V1, 60, 5_000),
        ];
        for (tier, api, per_minute, per_day) in expected {
            assert_eq!(Limits::for_tier(tier, api), Limits { per_minute, per_day }, "{tier} {api:?}");
        }
    }

    #[test]
    fn sixty_first_professional_request_in_a_minute_is_refused() {
        let (_, rl) = limiter(at(12, 0, 20));
        let first = rl.check("k_1", Tier::Professional, ApiVersion::V2);
        assert_eq!(
            first,
            Decision {
                allowed: true,
                limit: 60,
                remaining: 59,
                reset_secs: 40,
                retry_after_secs: None,
                window: Window::Minute
            }
        );
        for i in 2..=60 {
            let d = rl.check("k_1", Tier::Professional, ApiVersion::V2);
            assert!(d.allowed, "request {i}");
            assert_eq!(d.remaining, 60 - i);
        }
        let refused = rl.check("k_1", Tier::Professional, ApiVersion::V2);
        assert_eq!(
            refused,
            Decision {
                allowed: false,
                limit: 60,
                remaining: 0,
                reset_secs: 40,
                retry_after_secs: Some(40),
                window: Window::Minute
            }
        );
        // Another key is unaffected.
        assert!(rl.check("k_2", Tier::Professional, ApiVersion::V2).allowed);
    }

    #[test]
    fn each_tier_and_version_stops_at_its_per_minute_limit() {
        let (_, rl) = limiter(at(8, 30, 0));
        for api in [ApiVersion::V1, ApiVersion::V2] {
            for tier in Tier::ALL {
                let key = format!("{tier}-{api:?}");
                let per_minute = Limits::for_tier(tier, api).per_minute;
                let admitted = (0..per_minute + 5).filter(|_| rl.check(&key, tier, api).allowed).count();
                assert_eq!(admitted, per_minute as usize, "{key}");
                let d = rl.check(&key, tier, api);
                assert_eq!((d.allowed, d.limit, d.retry_after_secs), (false, per_minute, Some(60)), "{key}");
            }
        }
    }

    #[test]
    fn retry_after_rounds_the_fraction_up() {
        let (clock, rl) = limiter(at(12, 0, 30) + Duration::milliseconds(500));
        for _ in 0..60 {
            rl.check("k", Tier::Testing, ApiVersion::V2);
        }
        assert_eq!(rl.check("k", Tier::Testing, ApiVersion::V2).retry_after_secs, Some(30));
        clock.set(at(12, 0, 59) + Duration::milliseconds(999));
        assert_eq!(rl.check("k", Tier::Testing, ApiVersion::V2).retry_after_secs, Some(1));
    }

    #[test]
    fn the_minute_window_resets_at_the_next_utc_minute() {
        let (clock, rl) = limiter(at(12, 0, 59));
        for _ in 0..60 {
            assert!(rl.check("k", Tier::Professional, ApiVersion::V2).allowed);
        }
        assert!(!rl.check("k", Tier::Professional, ApiVersion::V2).allowed);
        clock.set(at(12, 1, 0));
        let d = rl.check("k", Tier::Professional, ApiVersion::V2);
        assert_eq!((d.allowed, d.remaining, d.reset_secs), (true, 59, 60));
    }

    #[test]
    fn the_daily_limit_binds_across_minutes_and_resets_at_utc_midnight() {
        let (clock, rl) = limiter(at(0, 0, 0));
        let tier = Tier::Professional;
        let mut admitted = 0u32;
        // 60 a minute for 84 minutes reaches 5,000 in the 84th minute (01:23).
        for _ in 0..84 {
            for _ in 0..60 {
                if rl.check("k", tier, ApiVersion::V2).allowed {
                    admitted += 1;
                }
            }
            clock.advance(Duration::minutes(1));
        }
        assert_eq!(admitted, 5_000);
        clock.set(at(1, 24, 0));
        let d = rl.check("k", tier, ApiVersion::V2);
        let to_midnight = 86_400 - (3_600 + 24 * 60);
        assert_eq!(
            d,
            Decision {
                allowed: false,
                limit: 5_000,
                remaining: 0,
                reset_secs: to_midnight,
                retry_after_secs: Some(to_midnight),
                window: Window::Day
            }
        );
        clock.set(Utc.with_ymd_and_hms(2024, 3, 11, 0, 0, 0).unwrap());
        let d = rl.check("k", tier, ApiVersion::V2);
        assert!(d.allowed);
        assert_eq!((d.limit, d.remaining, d.window), (60, 59, Window::Minute));
    }

    #[test]
    fn headers_report_the_window_with_fewer_requests_left() {
        let (clock, rl) = limiter(at(0, 0, 0));
        for _ in 0..83 {
            for _ in 0..60 {
                rl.check("k", Tier::Professional, ApiVersion::V2);
            }
            clock.advance(Duration::minutes(1));
        }
        // 4,980 used at 01:23:00: the day (19 left after this one) binds before the minute (59).
        let d = rl.check("k", Tier::Professional, ApiVersion::V2);
        assert_eq!((d.allowed, d.limit, d.remaining, d.window), (true, 5_000, 19, Window::Day));
        assert_eq!(d.reset_secs, 86_400 - 83 * 60);
    }

    #[test]
    fn v1_and_v2_have_separate_counters_and_limits() {
        let (clock, rl) = limiter(at(6, 0, 0));
        for _ in 0..300 {
            assert!(rl.check("k", Tier::Developer, ApiVersion::V1).allowed);
        }
        assert!(!rl.check("k", Tier::Developer, ApiVersion::V1).allowed);
        let d = rl.check("k", Tier::Developer, ApiVersion::V2);
        assert_eq!((d.allowed, d.limit, d.remaining), (true, 300, 299));
        // Daily: v1 Enterprise stops at 50,000, v2 Enterprise goes on.
        let mut v1 = 0;
        let mut v2 = 0;
        for _ in 0..170 {
            for _ in 0..300 {
                v1 += u32::from(rl.check("e", Tier::Enterprise, ApiVersion::V1).allowed);
                v2 += u32::from(rl.check("e", Tier::Enterprise, ApiVersion::V2).allowed);
            }
            clock.advance(Duration::minutes(1));
        }
        assert_eq!((v1, v2), (50_000, 51_000));
        assert_eq!(rl.check("e", Tier::Enterprise, ApiVersion::V1).window, Window::Day);
    }

    #[test]
    fn headers_include_retry_after_only_when_refused() {
        let (_, rl) = limiter(at(12, 0, 45));
        let ok = rl.check("k", Tier::Professional, ApiVersion::V1).headers();
        assert_eq!(
            ok,
            vec![
                ("x-ratelimit-limit", "60".to_string()),
                ("x-ratelimit-remaining", "59".to_string()),
                ("x-ratelimit-reset", "15".to_string()),
            ]
        );
        for _ in 0..59 {
            rl.check("k", Tier::Professional, ApiVersion::V1);
        }
        let refused = rl.check("k", Tier::Professional, ApiVersion::V1).headers();
        assert_eq!(refused.len(), 4);
        assert_eq!(refused[1], ("x-ratelimit-remaining", "0".to_string()));
        assert_eq!(refused[3], ("retry-after", "15".to_string()));
    }

    #[test]
    fn keys_idle_for_a_day_are_forgotten() {
        let (clock, rl) = limiter(at(23, 59, 0));
        // Three ids in one shard, so one request sweeps them all.
        let ids: Vec<String> =
            (0..).map(|i| format!("k_{i:08x}")).filter(|k| shard_of(k) == shard_of("a")).take(2).collect();
        let (b, c) = (ids[0].as_str(), ids[1].as_str());
        for k in ["a", b, c] {
            rl.check(k, Tier::Developer, ApiVersion::V2);
        }
        rl.check("a", Tier::Developer, ApiVersion::V1);
        assert_eq!(rl.tracked_keys(), 3);
        // After midnight: "a" and b are used again, c is dropped.
        clock.advance(Duration::minutes(2));
        rl.check("a", Tier::Developer, ApiVersion::V1);
        rl.check(b, Tier::Developer, ApiVersion::V2);
        assert_eq!(rl.tracked_keys(), 2);
        let d = rl.check(c, Tier::Developer, ApiVersion::V2);
        assert_eq!(d.remaining, 299, "a new day starts a new count");
        assert_eq!(rl.tracked_keys(), 3);
    }

    #[test]
    fn concurrent_requests_never_exceed_the_limit() {
        let clock = Arc::new(ManualClock::new(at(12, 0, 1)));
        let rl = Arc::new(RateLimiter::new(clock));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let rl = Arc::clone(&rl);
                std::thread::spawn(move || {
                    let mut admitted = [0u32; 2];
                    for i in 0..2_000 {
                        let (key, tier) = if i % 2 == 0 { ("p", Tier::Professional) } else { ("e", Tier::Enterprise) };
                        if rl.check(key, tier, ApiVersion::V2).allowed {
                            admitted[i % 2] += 1;
                        }
                    }
                    admitted
                })
            })
            .collect();
        let totals = threads.into_iter().map(|t| t.join().unwrap()).fold([0, 0], |a, b| [a[0] + b[0], a[1] + b[1]]);
        assert_eq!(totals, [60, 1_200]);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(at(1, 2, 3));
        assert_eq!(c.now(), at(1, 2, 3));
        c.advance(Duration::seconds(-3));
        assert_eq!(c.now(), at(1, 2, 0));
        let before = SystemClock.now();
        assert!((SystemClock.now() - before).num_seconds() < 5);
    }
}
