//! The feeds' HTTP client, with the manners a public service expects: conditional
//! requests, a timeout on every request, retries with backoff and jitter for transient
//! failures, `Retry-After` obeyed, a cap on requests in flight per host (and, where
//! configured, a least spacing between their starts), a circuit breaker per host, and a
//! User-Agent saying who to contact.
//!
//! Failures are typed by kind ([`FetchError::kind`]) so that the feeds can count them. A
//! "successful" answer that is not the data is a failure too: an HTML page with status 200
//! (a maintenance or login page served by a proxy) and a body shorter than its
//! Content-Length are body errors, never handed to a decoder.
//!
//! Validators (ETag, Last-Modified) are remembered per URL only when the caller says the
//! body was stored ([`HttpClient::remember`]): remembering them on receipt would turn the
//! next poll into a 304 even if storing this body failed, and the data would be skipped.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use reqwest::header::{HeaderMap, CONTENT_TYPE, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, RETRY_AFTER};
use reqwest::StatusCode;
use thiserror::Error;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use url::Url;

use super::backoff;
use super::breaker::{Admit, Breaker};
use super::client_config::ClientConfig;
use crate::error_chain::error_chain;

/// A request that did not yield the resource.
#[derive(Debug, Error)]
pub enum FetchError {
    /// No complete answer within the request's timeout (connect to last byte).
    #[error("{url}: no complete answer within {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    /// The host could not be reached (DNS, refused, TLS handshake).
    #[error("{url}: cannot connect: {reason}")]
    Connect { url: String, reason: String },
    /// The connection failed after it was made (reset, closed before the answer).
    #[error("{url}: connection failed: {reason}")]
    Transport { url: String, reason: String },
    /// An answer other than 2xx or 304.
    #[error("{url}: HTTP {status}{}", retry_after.map(|d| format!(" (Retry-After {d:?})")).unwrap_or_default())]
    Status { url: String, status: u16, retry_after: Option<Duration> },
    /// A 2xx whose body is not usable data.
    #[error("{url}: {problem}")]
    Body { url: String, problem: BodyProblem },
    /// The host is paused after repeated failures; nothing was sent.
    #[error("{host}: paused after repeated failures, next probe in {retry_in:?}")]
    BreakerOpen { host: String, retry_in: Duration },
    /// The request could not be built (a URL without a host, a bad header value).
    #[error("{url}: invalid request: {reason}")]
    Invalid { url: String, reason: String },
}

/// What was wrong with a 2xx body.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BodyProblem {
    #[error("body cut short: {received} of {expected} bytes (Content-Length)")]
    Truncated { expected: u64, received: u64 },
    #[error("an HTML page with status {status} instead of data")]
    HtmlPage { status: u16 },
    #[error("body larger than the {limit}-byte limit")]
    TooLarge { limit: usize },
    #[error("body unreadable after {received} bytes: {reason}")]
    Read { received: u64, reason: String },
}

impl FetchError {
    /// A stable name per kind, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::Timeout { .. } => "timeout",
            FetchError::Connect { .. } => "connect",
            FetchError::Transport { .. } => "transport",
            FetchError::Status { status, .. } if *status == 429 => "rate_limited",
            FetchError::Status { status, .. } if *status >= 500 => "server_error",
            FetchError::Status { .. } => "client_error",
            FetchError::Body { problem: BodyProblem::Truncated { .. }, .. } => "truncated",
            FetchError::Body { problem: BodyProblem::HtmlPage { .. }, .. } => "html_page",
            FetchError::Body { problem: BodyProblem::TooLarge { .. }, .. } => "too_large",
            FetchError::Body { problem: BodyProblem::Read { .. }, .. } => "body_read",
            FetchError::BreakerOpen { .. } => "breaker_open",
            FetchError::Invalid { .. } => "invalid",
        }
    }

    /// Worth trying again soon: the same request may well succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            FetchError::Timeout { .. } | FetchError::Connect { .. } | FetchError::Transport { .. } => true,
            FetchError::Status { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            FetchError::Body { problem, .. } => {
                matches!(problem, BodyProblem::Truncated { .. } | BodyProblem::Read { .. })
            }
            FetchError::BreakerOpen { .. } | FetchError::Invalid { .. } => false,
        }
    }

    /// Says the host is in trouble (counts toward its breaker). A 404 or 400 is our
    /// request's fault and shows the host answering; an HTML page instead of data is the
    /// host's (a maintenance page).
    fn host_trouble(&self) -> bool {
        self.is_transient() || matches!(self, FetchError::Body { problem: BodyProblem::HtmlPage { .. }, .. })
    }

    /// The wait the server asked for, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            FetchError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// ETag and Last-Modified of a stored response, sent back as If-None-Match and
/// If-Modified-Since.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl Validators {
    fn from_headers(h: &HeaderMap) -> Self {
        let get = |name| h.get(name).and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok()).map(str::to_string);
        Validators { etag: get(ETAG), last_modified: get(LAST_MODIFIED) }
    }

    fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
}

/// A new body (status 2xx).
#[derive(Debug, Clone)]
pub struct Body {
    pub status: u16,
    pub bytes: Bytes,
    pub content_type: Option<String>,
    /// To pass to [`HttpClient::remember`] once the body is stored.
    pub validators: Validators,
}

/// The answer to a GET.
#[derive(Debug, Clone)]
pub enum Fetched {
    New(Body),
    /// 304: nothing new since the remembered validators.
    NotModified,
}

/// One host's shared state: its concurrency cap, breaker and Retry-After horizon.
#[derive(Debug)]
struct Host {
    permits: Semaphore,
    breaker: Mutex<Breaker>,
    /// No request to this host before this instant (its last Retry-After).
    not_before: Mutex<Option<Instant>>,
    /// The least time between the starts of two requests (`request_spacing_secs`).
    spacing: Duration,
    /// When the next request may start under `spacing`.
    next_start: Mutex<Option<Instant>>,
}

impl Host {
    /// Waits for this request's turn under the host's spacing and books the next one's.
    async fn wait_turn(&self) {
        if self.spacing.is_zero() {
            return;
        }
        let now = Instant::now();
        let start = {
            let mut next = self.next_start.lock();
            let start = next.map_or(now, |n| n.max(now));
            *next = Some(start + self.spacing);
            start
        };
        tokio::time::sleep_until(start).await;
    }
}

/// The client every feed shares (clone the `Arc`): caps and breakers are per host across
/// all sources.
#[derive(Debug)]
pub struct HttpClient {
    client: reqwest::Client,
    cfg: ClientConfig,
    user_agent: String,
    validators: Mutex<HashMap<String, Validators>>,
    hosts: Mutex<HashMap<String, Arc<Host>>>,
}

impl HttpClient {
    /// A client with `cfg`'s manners.
    pub fn new(cfg: ClientConfig) -> Result<Self, FetchError> {
        let user_agent = user_agent(&cfg.contact);
        if cfg.contact.is_empty() {
            tracing::warn!(
                "[sources] contact is not set: the feeds' User-Agent names no contact (api.weather.gov requires one)"
            );
        }
        let client = reqwest::Client::builder()
            .user_agent(&user_agent)
            .build()
            .map_err(|e| FetchError::Invalid { url: String::new(), reason: error_chain(&e) })?;
        Ok(HttpClient { client, cfg, user_agent, validators: Mutex::default(), hosts: Mutex::default() })
    }

    /// The User-Agent sent with every request.
    pub fn user_agent(&self) -> &str {
        &self.user_agent
    }

    /// Marks `validators` (from a [`Body`] of `url`) as stored: the next GET of `url` is
    /// conditional on them.
    pub fn remember(&self, url: &Url, validators: Validators) {
        if !validators.is_empty() {
            self.validators.lock().insert(url.to_string(), validators);
        }
    }

    /// Whether `url`'s host is paused by its breaker.
    pub fn is_paused(&self, url: &Url) -> bool {
        host_key(url).and_then(|k| self.hosts.lock().get(&k).cloned()).is_some_and(|h| h.breaker.lock().is_open())
    }

    /// GETs `url`, each attempt limited to `timeout`, retrying transient failures.
    pub async fn get(&self, url: &Url, timeout: Duration) -> Result<Fetched, FetchError> {
        let Some(key) = host_key(url) else {
            return Err(FetchError::Invalid { url: url.to_string(), reason: "the URL names no host".to_string() });
        };
        let host = self.host(&key);
        let admit = host.breaker.lock().admit(Instant::now());
        let attempts = match admit {
            Admit::Refuse { retry_in } => return Err(FetchError::BreakerOpen { host: key, retry_in }),
            Admit::Probe => {
                tracing::info!(host = %key, "breaker half-open: probing");
                1
            }
            Admit::Go => self.cfg.attempts,
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let wait_until = *host.not_before.lock();
            if let Some(t) = wait_until {
                tokio::time::sleep_until(t).await;
            }
            let result = {
                let _permit = host.permits.acquire().await.expect("the semaphore is never closed");
                host.wait_turn().await;
                self.once(url, timeout).await
            };
            let err = match result {
                Ok(fetched) => {
                    host.breaker.lock().success();
                    return Ok(fetched);
                }
                Err(e) => e,
            };
            let retry_after = err.retry_after();
            if let Some(wait) = retry_after {
                let t = Instant::now() + wait;
                let mut nb = host.not_before.lock();
                *nb = Some(nb.map_or(t, |old| old.max(t)));
            }
            let give_up = !err.is_transient()
                || attempt >= attempts
                || retry_after.is_some_and(|wait| wait > self.cfg.max_retry_after);
            if give_up {
                let mut breaker = host.breaker.lock();
                if err.host_trouble() {
                    if breaker.failure(Instant::now()) {
                        tracing::warn!(host = %key, pause = ?self.cfg.breaker_pause, error = %err, "host paused after repeated failures");
                    }
                } else {
                    breaker.success();
                }
                return Err(err);
            }
            // With a Retry-After the wait happens at the loop's top (for every request to
            // the host); otherwise back off.
            let delay = if retry_after.is_some() {
                Duration::ZERO
            } else {
                backoff::delay(attempt, self.cfg.backoff, self.cfg.backoff_max)
            };
            tracing::debug!(url = %url, attempt, kind = err.kind(), ?delay, ?retry_after, "retrying");
            tokio::time::sleep(delay).await;
        }
    }

    fn host(&self, key: &str) -> Arc<Host> {
        let mut hosts = self.hosts.lock();
        Arc::clone(hosts.entry(key.to_string()).or_insert_with(|| {
            Arc::new(Host {
                permits: Semaphore::new(self.cfg.max_per_host),
                breaker: Mutex::new(Breaker::new(self.cfg.breaker_failures, self.cfg.breaker_pause)),
                not_before: Mutex::new(None),
                spacing: self.cfg.spacing(key.rsplit_once(':').map_or(key, |(name, _)| name)),
                next_start: Mutex::new(None),
            })
        }))
    }

    /// One attempt.
    async fn once(&self, url: &Url, timeout: Duration) -> Result<Fetched, FetchError> {
        let mut req = self.client.get(url.clone()).timeout(timeout);
        let known = self.validators.lock().get(url.as_str()).cloned();
        if let Some(v) = known {
            if let Some(etag) = v.etag {
                req = req.header(IF_NONE_MATCH, etag);
            }
            if let Some(lm) = v.last_modified {
                req = req.header(IF_MODIFIED_SINCE, lm);
            }
        }
        let mut resp = req.send().await.map_err(|e| send_error(url, timeout, e))?;
        let status = resp.status();
        if status == StatusCode::NOT_MODIFIED {
            return Ok(Fetched::NotModified);
        }
        if !status.is_success() {
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| backoff::parse_retry_after(v, chrono::Utc::now()));
            return Err(FetchError::Status { url: url.to_string(), status: status.as_u16(), retry_after });
        }
        let body_err = |problem| FetchError::Body { url: url.to_string(), problem };
        let limit = self.cfg.max_body_bytes;
        let expected = resp.content_length();
        if expected.is_some_and(|n| n > limit as u64) {
            return Err(body_err(BodyProblem::TooLarge { limit }));
        }
        let content_type = resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
        let validators = Validators::from_headers(resp.headers());
        let mut buf = BytesMut::with_capacity(expected.unwrap_or(0) as usize);
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if buf.len() + chunk.len() > limit {
                        return Err(body_err(BodyProblem::TooLarge { limit }));
                    }
                    buf.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) if e.is_timeout() => {
                    return Err(FetchError::Timeout { url: url.to_string(), timeout });
                }
                Err(e) => {
                    let received = buf.len() as u64;
                    return Err(body_err(match expected {
                        Some(expected) if received < expected => BodyProblem::Truncated { expected, received },
                        _ => BodyProblem::Read { received, reason: error_chain(&e) },
                    }));
                }
            }
        }
        let received = buf.len() as u64;
        if let Some(expected) = expected.filter(|&n| n != received) {
            return Err(body_err(BodyProblem::Truncated { expected, received }));
        }
        if is_html(content_type.as_deref(), &buf) {
            return Err(body_err(BodyProblem::HtmlPage { status: status.as_u16() }));
        }
        Ok(Fetched::New(Body { status: status.as_u16(), bytes: buf.freeze(), content_type, validators }))
    }
}

/// `wxlake/VERSION (contact)`, the form api.weather.gov asks for.
fn user_agent(contact: &str) -> String {
    let version = env!("CARGO_PKG_VERSION");
    if contact.is_empty() {
        format!("wxlake/{version}")
    } else {
        format!("wxlake/{version} ({contact})")
    }
}

/// `host:port`, the unit of caps and breakers.
fn host_key(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port_or_known_default() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    })
}

/// An HTML document where data was expected: said by the Content-Type, or by the first
/// bytes when a server labels its error page as something else.
fn is_html(content_type: Option<&str>, body: &[u8]) -> bool {
    if content_type.is_some_and(|ct| ct.trim_start().to_ascii_lowercase().starts_with("text/html")) {
        return true;
    }
    let start = body.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(body.len());
    let head = &body[start..body.len().min(start + 15)];
    let head = head.to_ascii_lowercase();
    head.starts_with(b"<!doctype html") || head.starts_with(b"<html")
}

fn send_error(url: &Url, timeout: Duration, e: reqwest::Error) -> FetchError {
    let url_s = url.to_string();
    if e.is_timeout() {
        FetchError::Timeout { url: url_s, timeout }
    } else if e.is_connect() {
        FetchError::Connect { url: url_s, reason: error_chain(&e) }
    } else if e.is_builder() {
        FetchError::Invalid { url: url_s, reason: error_chain(&e) }
    } else {
        FetchError::Transport { url: url_s, reason: error_chain(&e) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_recognised_by_type_or_by_its_first_bytes() {
        assert!(is_html(Some("text/html; charset=utf-8"), b"[]"));
        assert!(is_html(Some("application/json"), b"\n  <!DOCTYPE html><html>"));
        assert!(is_html(None, b"<HTML><body>Service Unavailable"));
        assert!(!is_html(Some("application/json"), b"[{\"rawOb\": \"<html\"}]"));
        assert!(!is_html(None, b""));
    }

    #[tokio::test]
    async fn requests_to_a_spaced_host_start_apart() {
        let spacing = [("api.weather.gov".to_string(), 0.1)].into();
        let client = HttpClient::new(ClientConfig { request_spacing: spacing, ..ClientConfig::default() }).unwrap();
        let host = client.host("api.weather.gov:443");
        assert_eq!(host.spacing, Duration::from_millis(100));
        assert!(client.host("aviationweather.gov:443").spacing.is_zero());
        let start = std::time::Instant::now();
        for _ in 0..3 {
            host.wait_turn().await;
        }
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(2), "the first at once: {took:?}");
    }

    #[test]
    fn user_agent_names_the_contact() {
        assert_eq!(user_agent("ops@example.com"), format!("wxlake/{} (ops@example.com)", env!("CARGO_PKG_VERSION")));
        assert_eq!(user_agent(""), format!("wxlake/{}", env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn kinds_and_transience() {
        let status = |s| FetchError::Status { url: "u".into(), status: s, retry_after: None };
        assert_eq!(status(429).kind(), "rate_limited");
        assert!(status(429).is_transient() && status(503).is_transient() && !status(404).is_transient());
        assert!(!status(404).host_trouble());
        let html = FetchError::Body { url: "u".into(), problem: BodyProblem::HtmlPage { status: 200 } };
        assert!(!html.is_transient() && html.host_trouble());
        assert_eq!(html.kind(), "html_page");
        assert_eq!(
            FetchError::Body { url: "u".into(), problem: BodyProblem::Truncated { expected: 10, received: 4 } }
                .to_string(),
            "u: body cut short: 4 of 10 bytes (Content-Length)"
        );
    }
}
