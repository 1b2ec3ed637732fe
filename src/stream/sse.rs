//! `GET /api/v2/stream`: authorization, the control events and the response body (each
//! frame encoded by [`super::frame`]).
//!
//! A connection sends `connected` first, then (with `last_event_id` or a `Last-Event-ID`
//! header) the replayed events or a `resync`, then live events, with a `heartbeat` every
//! [`StreamState::heartbeat`]. Control events (`connected`, `heartbeat`, `resync`,
//! `displaced`) carry no id, so a client's resume position only ever names a stored event.
//!
//! Control payloads (the spec leaves them to us):
//! - `connected`: `{"stations": [...], "user": "...", "timestamp": "..."}`
//! - `heartbeat`: `{"timestamp": "..."}`
//! - `resync`: `{"reason": "unknown_last_event_id" | "last_event_id_expired" | "slow_consumer",
//!   "last_event_id": "...", "timestamp": "..."}`. For `slow_consumer` it is the last event
//!   written to this connection and the connection closes after it: reconnect with that id to
//!   replay the rest. For the other two it echoes the id the client sent; the stream then goes
//!   on live, and the client should refetch current state over REST.
//! - `displaced`: `{"reason": "new_connection", "last_event_id": "...", "retry_after_ms": N,
//!   "timestamp": "..."}`, then the connection closes. Its frame also carries the SSE field
//!   `retry: N` (after `event:`), which a standard client obeys before reconnecting: two copies
//!   of a client sharing a key would otherwise displace each other as fast as they can
//!   reconnect.
//!
//! Replay is served page by page ([`REPLAY_PAGE_BYTES`]): pages the log holds in memory are
//! written at once, pages that need the segment files are read on the blocking pool, so a
//! client far behind never holds its whole backlog and never stalls an async worker.
//!
//! Reconnects are throttled per user before anything else happens ([`Hub::admit`]): one
//! that comes faster than the hub's [`ReconnectPolicy`] is refused with 429, a `Retry-After`
//! header and the usual JSON error body, and displaces nobody.

use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bytes::{Bytes, BytesMut};
use chrono::Utc;
use futures::Stream;
use serde::Deserialize;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::{Interval, MissedTickBehavior};
use tracing::{debug, info, warn};

use super::event_log::{EventLog, Replay};
use super::frame::{control_frame, encode_frame_with_retry, iso_timestamp};
use super::hub::{CloseReason, ConnectionCloser, Delivery, Hub, ReconnectPolicy, Subscription};
use super::lag::LagHistogram;

/// Path of the stream endpoint on the stream port.
pub const STREAM_PATH: &str = "/api/v2/stream";
/// Heartbeat period of the spec; well under the 60–90 s read timeouts clients use.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);
/// Shortest heartbeat accepted (a zero period would spin).
const MIN_HEARTBEAT: Duration = Duration::from_millis(100);
/// Ready frames are coalesced into one body chunk up to this size (fewer TLS records and
/// syscalls during replay and bursts; a single live event is never held back).
const MAX_CHUNK: usize = 64 * 1024;
/// Frames fetched from the log per replay step: a bounded slice of a client's backlog.
pub const REPLAY_PAGE_BYTES: usize = 256 * 1024;

/// Who may stream what; implemented by the server's key store.
pub trait StreamAuth: Send + Sync + 'static {
    /// Checks `api_key` (empty when absent) for `stations` (trimmed, upper-cased, de-duplicated;
    /// empty when absent). The refusal is rendered as-is before the stream starts: missing or
    /// unknown key 401, key not stream-enabled 403, too many stations for the tier 403, unknown
    /// or missing stations 400 — the implementation decides.
    fn authorize(&self, api_key: &str, stations: &[String]) -> Result<StreamGrant, StreamRefusal>;
}

/// A successful authorization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamGrant {
    /// Account the connection counts against (one connection per user).
    pub user: String,
    /// Stations the connection receives, in the order listed in `connected`.
    pub stations: Vec<String>,
    /// Event names this connection is not sent (live or replayed): what the key's tier may
    /// not have.
    pub withheld: Vec<String>,
}

/// A refused stream request, rendered as `{"error": ..., "details": ...}` with `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRefusal {
    /// HTTP status (401, 403, 400, ...); an invalid code renders as 500.
    pub status: u16,
    /// Short error text.
    pub error: String,
    /// What the client can do about it.
    pub details: String,
}

impl StreamRefusal {
    /// Convenience constructor.
    pub fn new(status: u16, error: impl Into<String>, details: impl Into<String>) -> Self {
        StreamRefusal { status, error: error.into(), details: details.into() }
    }
}

impl IntoResponse for StreamRefusal {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(json!({"error": self.error, "details": self.details}))).into_response()
    }
}

/// Everything the stream endpoint needs.
#[derive(Clone)]
pub struct StreamState {
    /// Live fan-out.
    pub hub: Hub,
    /// Replay source (and id authority).
    pub log: Arc<EventLog>,
    /// Key and station checks.
    pub auth: Arc<dyn StreamAuth>,
    /// Heartbeat period ([`DEFAULT_HEARTBEAT`] in production).
    pub heartbeat: Duration,
}

/// The router of the stream port: `GET /api/v2/stream`, JSON errors for anything else.
pub fn stream_router(state: StreamState) -> Router {
    Router::new()
        .route(STREAM_PATH, get(stream_handler).fallback(method_not_allowed))
        .fallback(not_found)
        .with_state(state)
}

async fn not_found() -> Response {
    StreamRefusal::new(404, "not found", format!("the stream port serves only GET {STREAM_PATH}")).into_response()
}

async fn method_not_allowed() -> Response {
    StreamRefusal::new(405, "method not allowed", format!("use GET {STREAM_PATH}")).into_response()
}

#[derive(Debug, Default, Deserialize)]
struct StreamQuery {
    stations: Option<String>,
    api_key: Option<String>,
    last_event_id: Option<String>,
}

async fn stream_handler(State(state): State<StreamState>, request: Request) -> Response {
    let query = match Query::<StreamQuery>::try_from_uri(request.uri()) {
        Ok(Query(q)) => q,
        Err(e) => return StreamRefusal::new(400, "invalid query string", e.body_text()).into_response(),
    };
    let requested = parse_stations(query.stations.as_deref().unwrap_or(""));
    let grant = match state.auth.authorize(query.api_key.as_deref().unwrap_or(""), &requested) {
        Ok(grant) => grant,
        Err(refusal) => {
            info!(status = refusal.status, error = %refusal.error, "stream: request refused");
            return refusal.into_response();
        }
    };
    let closer = request.extensions().get::<ConnectionCloser>().cloned();
    stream_response(&state, grant, request.headers(), query.last_event_id.as_deref(), closer)
}

/// The event stream of an authorized request: the user's reconnect pacing first, then
/// `connected`, the replay after the resume id (the `Last-Event-ID` header, else
/// `query_last_event_id`), live events and heartbeats. Shared by this port's handler and
/// the REST port's same-origin relay (`stream_bridge::relay`), so both serve one
/// event log and one hub the same way.
pub fn stream_response(
    state: &StreamState,
    grant: StreamGrant,
    headers: &HeaderMap,
    query_last_event_id: Option<&str>,
    closer: Option<ConnectionCloser>,
) -> Response {
    // Before subscribing: a refused reconnect must not displace the user's live connection.
    if let Err(wait) = state.hub.admit(&grant.user) {
        return too_many_connections(&grant.user, wait, state.hub.reconnect_policy());
    }
    let last_event_id = resume_id(headers, query_last_event_id);
    let body = open_stream(state, grant, last_event_id, closer);
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // One stream per connection: when the stream ends (displaced, slow, shutdown) the client
    // sees EOF instead of an idle keep-alive connection.
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    // Proxies (nginx) must not buffer the events.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// 429 for a reconnect that came too soon, with `Retry-After` in whole seconds (rounded up,
/// so a client that waits exactly that long is admitted).
fn too_many_connections(user: &str, wait: Duration, policy: ReconnectPolicy) -> Response {
    let secs = wait.as_secs().saturating_add(u64::from(wait.subsec_nanos() > 0)).max(1);
    info!(user, retry_after = secs, "stream: reconnect refused (too fast)");
    let mut response = StreamRefusal::new(
        429,
        "Too many stream connections",
        format!(
            "a user may open {} stream connections back to back, then one every {} s; retry after {secs} s",
            policy.burst,
            policy.interval.as_secs_f64()
        ),
    )
    .into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// The client's resume position. The `Last-Event-ID` header wins over the query parameter:
/// a browser `EventSource` reconnects to the same URL (whose `last_event_id` is stale) and
/// puts the id it actually saw last in the header.
fn resume_id(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    let header = headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::trim);
    header.filter(|h| !h.is_empty()).or(query.map(str::trim).filter(|q| !q.is_empty())).map(str::to_string)
}

/// Splits `KNYC, kmdw,,KNYC` into `["KNYC", "KMDW"]`.
pub fn parse_stations(raw: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for code in raw.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let code = code.to_ascii_uppercase();
        if !out.contains(&code) {
            out.push(code);
        }
    }
    out
}

/// Subscribes, then sets up the replay, and builds the response body.
fn open_stream(
    state: &StreamState,
    grant: StreamGrant,
    last_event_id: Option<String>,
    closer: Option<ConnectionCloser>,
) -> SseBody {
    let stations: HashSet<String> = grant.stations.iter().cloned().collect();
    // Read the head before subscribing: a fresh client's resume point is "everything after
    // what existed when it connected".
    let head = state.log.last_id();
    // Live first, replay second: an event published meanwhile is either in the replay (and
    // skipped live by id) or arrives live, never neither.
    let subscription = state.hub.connect(&grant.user, stations.clone());
    if let Some(closer) = closer {
        subscription.attach_closer(closer);
    }
    let mut prelude = VecDeque::new();
    prelude.push_back(control_frame(
        "connected",
        json!({"stations": grant.stations, "user": grant.user, "timestamp": iso_timestamp(Utc::now())}),
    ));
    info!(
        user = %grant.user,
        conn = subscription.conn_id(),
        stations = grant.stations.len(),
        last_event_id = last_event_id.as_deref().unwrap_or(""),
        "stream: connected"
    );
    let replay = last_event_id.map(|sent| ReplayCursor {
        log: Arc::clone(&state.log),
        stations: Arc::new(stations),
        after: sent.clone(),
        sent,
        first: true,
        task: None,
        replayed: 0,
    });
    let heartbeat = state.heartbeat.max(MIN_HEARTBEAT);
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    SseBody {
        prelude,
        replay,
        subscription,
        heartbeat: ticker,
        skip_through: 0,
        position: head,
        done: false,
        user: grant.user,
        withheld: grant.withheld.into_iter().collect(),
        displaced_retry: state.hub.reconnect_policy().displaced_retry,
        lag: Arc::clone(state.hub.delivery_lag()),
    }
}

/// Where a connection's replay stands.
struct ReplayCursor {
    log: Arc<EventLog>,
    stations: Arc<HashSet<String>>,
    /// The id the client sent (echoed by a `resync` about it).
    sent: String,
    /// The next page starts after this id.
    after: String,
    /// True until the first page is answered (which judges the client's id).
    first: bool,
    /// A page being read from disk on the blocking pool.
    task: Option<JoinHandle<Replay>>,
    replayed: usize,
}

/// The response body: prelude (connected + replay), then heartbeats and live events, then at
/// most one closing control event.
struct SseBody {
    prelude: VecDeque<Bytes>,
    /// Replay still to send; live events wait until it is done.
    replay: Option<ReplayCursor>,
    subscription: Subscription,
    heartbeat: Interval,
    /// Live events with ids up to here were already replayed.
    skip_through: u64,
    /// Id of the last event written (the resume point sent in `resync` / `displaced`).
    position: u64,
    done: bool,
    user: String,
    /// Event names not sent to this connection ([`StreamGrant::withheld`]).
    withheld: HashSet<String>,
    /// What a displaced connection is told to wait before reconnecting.
    displaced_retry: Duration,
    /// Where each live event's lag is recorded ([`Hub::delivery_lag`]).
    lag: Arc<LagHistogram>,
}

/// One body chunk made of frames: a single frame goes out as it is (the event's shared
/// bytes, no copy: the usual case of one live event per wake-up); a second one starts a
/// buffer that holds them all.
#[derive(Default)]
struct Chunk {
    one: Option<Bytes>,
    many: BytesMut,
}

impl Chunk {
    fn len(&self) -> usize {
        self.one.as_ref().map_or(self.many.len(), Bytes::len)
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&mut self, frame: Bytes) {
        if self.many.is_empty() {
            match self.one.take() {
                None => {
                    self.one = Some(frame);
                    return;
                }
                Some(first) => self.many.extend_from_slice(&first),
            }
        }
        self.many.extend_from_slice(&frame);
    }

    fn freeze(self) -> Bytes {
        self.one.unwrap_or_else(|| self.many.freeze())
    }
}

impl Stream for SseBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let mut out = Chunk::default();
        loop {
            while out.len() < MAX_CHUNK {
                match this.prelude.pop_front() {
                    Some(frame) => out.push(frame),
                    None => break,
                }
            }
            if !out.is_empty() {
                return Poll::Ready(Some(Ok(out.freeze())));
            }
            if this.replay.is_none() {
                break;
            }
            if this.poll_replay(cx).is_pending() {
                return Poll::Pending;
            }
        }
        if this.heartbeat.poll_tick(cx).is_ready() {
            out.push(control_frame("heartbeat", json!({"timestamp": iso_timestamp(Utc::now())})));
        }
        this.poll_live(cx, &mut out);
        if out.is_empty() {
            return if this.done { Poll::Ready(None) } else { Poll::Pending };
        }
        Poll::Ready(Some(Ok(out.freeze())))
    }
}

impl SseBody {
    /// Fetches the next replay page into the prelude (or ends the replay). Pending only while
    /// a page is read from disk.
    fn poll_replay(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(cursor) = self.replay.as_mut() else {
            return Poll::Ready(());
        };
        let answer = loop {
            if let Some(task) = cursor.task.as_mut() {
                let answer = match Pin::new(task).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(answer)) => answer,
                    Poll::Ready(Err(e)) => {
                        warn!(user = %self.user, error = %e, "stream: replay read failed");
                        Replay::Expired
                    }
                };
                cursor.task = None;
                break answer;
            }
            if let Some(answer) = cursor.log.replay_page_cached(&cursor.after, &cursor.stations, REPLAY_PAGE_BYTES) {
                break answer;
            }
            let (log, stations, after) = (Arc::clone(&cursor.log), Arc::clone(&cursor.stations), cursor.after.clone());
            cursor.task =
                Some(tokio::task::spawn_blocking(move || log.replay_page(&after, &stations, REPLAY_PAGE_BYTES)));
        };
        match answer {
            Replay::Events { events, more } => {
                if cursor.first {
                    // A numeric id that the log accepted is at most the head; it parses.
                    self.skip_through = cursor.sent.trim().parse::<u64>().unwrap_or(0);
                }
                for event in &events {
                    self.skip_through = self.skip_through.max(event.id);
                    if !self.withheld.contains(&*event.name) {
                        self.prelude.push_back(event.sse_frame());
                    }
                }
                self.position = self.skip_through;
                cursor.replayed += events.len();
                cursor.first = false;
                match events.last() {
                    Some(last) if more => cursor.after = last.id.to_string(),
                    _ => {
                        debug!(user = %self.user, replayed = cursor.replayed, "stream: replay done");
                        self.replay = None;
                    }
                }
            }
            Replay::Unknown => {
                self.prelude.push_back(resync_frame("unknown_last_event_id", &cursor.sent));
                self.replay = None;
            }
            Replay::Expired => {
                // Later pages expire only if the client fell a whole retention behind while
                // replaying: name where it got to.
                let last = if cursor.first { cursor.sent.clone() } else { self.position.to_string() };
                self.prelude.push_back(resync_frame("last_event_id_expired", &last));
                self.replay = None;
            }
        }
        Poll::Ready(())
    }

    /// Appends ready live events (and a closing event) to `out`, recording each event's lag.
    fn poll_live(&mut self, cx: &mut Context<'_>, out: &mut Chunk) {
        let mut now = None;
        while out.len() < MAX_CHUNK {
            match Pin::new(&mut self.subscription).poll_next(cx) {
                Poll::Ready(Some(Delivery::Event(event))) => {
                    if event.id <= self.skip_through {
                        continue;
                    }
                    self.position = self.position.max(event.id);
                    if !self.withheld.contains(&*event.name) {
                        out.push(event.sse_frame());
                        let now = *now.get_or_insert_with(Utc::now);
                        self.lag.record((now - event.at).to_std().unwrap_or_default());
                    }
                }
                Poll::Ready(Some(Delivery::Closed(reason))) => {
                    info!(user = %self.user, ?reason, last_event_id = self.position, "stream: closed by hub");
                    if let Some(frame) = closing_frame(reason, self.position, self.displaced_retry) {
                        out.push(frame);
                    }
                    self.done = true;
                    return;
                }
                Poll::Ready(None) => {
                    self.done = true;
                    return;
                }
                Poll::Pending => return,
            }
        }
    }
}

fn closing_frame(reason: CloseReason, position: u64, displaced_retry: Duration) -> Option<Bytes> {
    let now = iso_timestamp(Utc::now());
    match reason {
        CloseReason::SlowConsumer => Some(control_frame(
            "resync",
            json!({"reason": "slow_consumer", "last_event_id": position.to_string(), "timestamp": now}),
        )),
        CloseReason::Displaced => {
            let retry_ms = u64::try_from(displaced_retry.as_millis()).unwrap_or(u64::MAX);
            let data = json!({
                "reason": "new_connection",
                "last_event_id": position.to_string(),
                "retry_after_ms": retry_ms,
                "timestamp": now,
            });
            Some(encode_frame_with_retry("displaced", retry_ms, &data))
        }
        CloseReason::Shutdown => None,
    }
}

fn resync_frame(reason: &str, last_event_id: &str) -> Bytes {
    control_frame(
        "resync",
        json!({"reason": reason, "last_event_id": last_event_id, "timestamp": iso_timestamp(Utc::now())}),
    )
}

#[cfg(test)]
mod tests;
