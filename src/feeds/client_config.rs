//! The top-level keys of `[sources]`: how the feeds' one HTTP client behaves toward every
//! public service. Its own module, beside `http` which reads it and `config` which parses
//! it, so that neither `http` nor the sources (which use `http`) import `config`, which
//! imports the sources' config structs.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::seconds::secs;

/// How the feeds' HTTP client behaves toward every public service.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientConfig {
    /// `contact`: how a service's operator reaches whoever runs this wxlake (an e-mail or
    /// URL), sent in the User-Agent. api.weather.gov refuses requests without one; the
    /// default is empty, which sends `wxlake/VERSION` alone and warns at start.
    pub contact: String,
    /// `max_per_host` (default 2): requests in flight to one host at once, all sources
    /// together.
    pub max_per_host: usize,
    /// `attempts` (default 3): tries per request for transient failures (connect errors,
    /// timeouts, 5xx, 429, a body cut short) before the poll records the failure.
    pub attempts: u32,
    /// `backoff_secs` (default 1): the first retry's delay; each later one doubles, up to
    /// `backoff_max_secs` (default 30), each drawn at random in its upper half (jitter) so
    /// many clients do not retry in step.
    #[serde(rename = "backoff_secs", deserialize_with = "secs")]
    pub backoff: Duration,
    #[serde(rename = "backoff_max_secs", deserialize_with = "secs")]
    pub backoff_max: Duration,
    /// `max_retry_after_secs` (default 120): the longest Retry-After a request waits out
    /// before retrying; a longer one ends the attempt, and the host's later requests still
    /// wait until it has passed.
    #[serde(rename = "max_retry_after_secs", deserialize_with = "secs")]
    pub max_retry_after: Duration,
    /// `breaker_failures` (default 5): consecutive failed requests to a host after which
    /// it is paused (circuit breaker open: no request is sent).
    pub breaker_failures: u32,
    /// `breaker_pause_secs` (default 300): how long a paused host rests before one probe
    /// request is let through; its success closes the breaker, its failure pauses again.
    #[serde(rename = "breaker_pause_secs", deserialize_with = "secs")]
    pub breaker_pause: Duration,
    /// `max_body_bytes` (default 16 MiB): a larger response is refused as a body error.
    pub max_body_bytes: usize,
    /// `request_spacing_secs` (default: none): per host name, the least time between the
    /// starts of two requests to it, all sources together (`{ "api.weather.gov" = 1 }`).
    /// A poll asks for every station at once; for a service that publishes a rate rather
    /// than a cap on requests in flight, this spreads the burst so the rate holds in every
    /// minute, not only on average over the interval.
    #[serde(rename = "request_spacing_secs")]
    pub request_spacing: BTreeMap<String, f64>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            contact: String::new(),
            max_per_host: 2,
            attempts: 3,
            backoff: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            breaker_failures: 5,
            breaker_pause: Duration::from_secs(300),
            max_body_bytes: 16 * 1024 * 1024,
            request_spacing: BTreeMap::new(),
        }
    }
}

impl ClientConfig {
    /// The spacing of requests to `host` (a host name, without port).
    pub fn spacing(&self, host: &str) -> Duration {
        self.request_spacing.get(host).map_or(Duration::ZERO, |s| Duration::from_secs_f64(*s))
    }

    /// Checks every value; the message says which is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let bad = |message: &str| Err(message.to_string());
        if self.max_per_host == 0 {
            return bad("max_per_host must be at least 1");
        }
        if self.attempts == 0 {
            return bad("attempts must be at least 1");
        }
        if self.breaker_failures == 0 {
            return bad("breaker_failures must be at least 1");
        }
        if self.max_body_bytes == 0 {
            return bad("max_body_bytes must be at least 1");
        }
        if let Some((host, secs)) = self.request_spacing.iter().find(|(_, s)| !(s.is_finite() && **s >= 0.0)) {
            return Err(format!("request_spacing_secs: {host:?} must be a number of seconds >= 0, found {secs}"));
        }
        if self.contact.chars().any(|c| c.is_control()) {
            return bad("contact must not contain control characters (it is sent in a header)");
        }
        Ok(())
    }
}
