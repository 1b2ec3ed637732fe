//! `GET /api/v2/stream`: authorization, the server-sent-event encoding and the response body.
//!
//! Wire format of every event, in exactly this order (clients in the wild start a new event on
//! the `event:` line and drop data lines seen before it):
//! ```text
//! event: <name>
//! id: <id>            (only for replayable events)
//! data: <one line of JSON>
//!
//! ```
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
use std::fmt::Write as _;
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
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio::time::{Interval, MissedTickBehavior};
use tracing::{debug, info, warn};

use super::event_log::{EventLog, Replay};
use super::hub::{CloseReason, ConnectionCloser, Delivery, Hub, ReconnectPolicy, Subscription};

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
    // Before subscribing: a refused reconnect must not displace the user's live connection.
    if let Err(wait) = state.hub.admit(&grant.user) {
        return too_many_connections(&grant.user, wait, state.hub.reconnect_policy());
    }
    let last_event_id = resume_id(request.headers(), query.last_event_id.as_deref());
    let closer = request.extensions().get::<ConnectionCloser>().cloned();
    let body = open_stream(&state, grant, last_event_id, closer);
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
fn parse_stations(raw: &str) -> Vec<String> {
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
        json!({"stations": grant.stations, "user": grant.user, "timestamp": super::iso_timestamp(Utc::now())}),
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
        displaced_retry: state.hub.reconnect_policy().displaced_retry,
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
    /// What a displaced connection is told to wait before reconnecting.
    displaced_retry: Duration,
}

impl Stream for SseBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let mut out = BytesMut::new();
        loop {
            while out.len() < MAX_CHUNK {
                match this.prelude.pop_front() {
                    Some(frame) => out.extend_from_slice(&frame),
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
            out.extend_from_slice(&control_frame("heartbeat", json!({"timestamp": super::iso_timestamp(Utc::now())})));
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
                    self.prelude.push_back(event.sse_frame());
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

    /// Appends ready live events (and a closing event) to `out`.
    fn poll_live(&mut self, cx: &mut Context<'_>, out: &mut BytesMut) {
        while out.len() < MAX_CHUNK {
            match Pin::new(&mut self.subscription).poll_next(cx) {
                Poll::Ready(Some(Delivery::Event(event))) => {
                    if event.id <= self.skip_through {
                        continue;
                    }
                    self.position = self.position.max(event.id);
                    out.extend_from_slice(&event.sse_frame());
                }
                Poll::Ready(Some(Delivery::Closed(reason))) => {
                    info!(user = %self.user, ?reason, last_event_id = self.position, "stream: closed by hub");
                    if let Some(frame) = closing_frame(reason, self.position, self.displaced_retry) {
                        out.extend_from_slice(&frame);
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
    let now = super::iso_timestamp(Utc::now());
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
        json!({"reason": reason, "last_event_id": last_event_id, "timestamp": super::iso_timestamp(Utc::now())}),
    )
}

fn control_frame(name: &str, data: Value) -> Bytes {
    encode_frame(name, None, &data)
}

/// Encodes one event: `event:`, then `id:` (if any), then one `data:` line, then a blank line.
///
/// `serde_json` never emits a raw newline, so the data is always one line; a name is
/// stripped of CR/LF so it cannot split the frame.
pub fn encode_frame(name: &str, id: Option<u64>, data: &Value) -> Bytes {
    encode_raw_frame(name, id, data.to_string().as_bytes())
}

/// [`encode_frame`] for data already encoded: `json` must be one line of JSON (the event log
/// stores and replays payloads as serde_json wrote them).
pub(crate) fn encode_raw_frame(name: &str, id: Option<u64>, json: &[u8]) -> Bytes {
    let mut frame = frame_head(name, json.len());
    if let Some(id) = id {
        let _ = writeln!(frame, "id: {id}");
    }
    frame_data(frame, json)
}

/// A control frame with the SSE `retry:` field (milliseconds a client waits before it
/// reconnects), between `event:` and `data:`.
fn encode_frame_with_retry(name: &str, retry_ms: u64, data: &Value) -> Bytes {
    let json = data.to_string();
    let mut frame = frame_head(name, json.len());
    let _ = writeln!(frame, "retry: {retry_ms}");
    frame_data(frame, json.as_bytes())
}

fn frame_head(name: &str, data_len: usize) -> String {
    let mut frame = String::with_capacity(data_len + name.len() + 48);
    frame.push_str("event: ");
    frame.extend(name.chars().filter(|c| *c != '\n' && *c != '\r'));
    frame.push('\n');
    frame
}

fn frame_data(head: String, json: &[u8]) -> Bytes {
    let mut frame = head.into_bytes();
    frame.extend_from_slice(b"data: ");
    frame.extend_from_slice(json);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::testkit::{self, SseClient, TestServer};
    use std::time::Instant;

    #[test]
    fn frame_lines_are_event_id_data_blank() {
        let frame = encode_frame("new_high", Some(42), &json!({"a": "x\ny"}));
        assert_eq!(&frame[..], b"event: new_high\nid: 42\ndata: {\"a\":\"x\\ny\"}\n\n");
        let frame = encode_frame("heart\nbeat", None, &json!({}));
        assert_eq!(&frame[..], b"event: heartbeat\ndata: {}\n\n");
    }

    #[test]
    fn stations_are_trimmed_upper_cased_and_deduplicated() {
        assert_eq!(parse_stations(" KNYC, kmdw,,KNYC ,"), vec!["KNYC", "KMDW"]);
        assert!(parse_stations("").is_empty());
    }

    #[test]
    fn header_wins_over_stale_query_id() {
        let mut headers = HeaderMap::new();
        assert_eq!(resume_id(&headers, Some(" 7 ")), Some("7".into()));
        assert_eq!(resume_id(&headers, Some("")), None);
        headers.insert("last-event-id", HeaderValue::from_static("9"));
        assert_eq!(resume_id(&headers, Some("7")), Some("9".into()));
        headers.insert("last-event-id", HeaderValue::from_static(""));
        assert_eq!(resume_id(&headers, Some("7")), Some("7".into()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connected_first_then_live_event_in_line_order() {
        let server = TestServer::start(testkit::Options::default()).await;
        let mut client = server.open("alice", "KNYC,KMDW", None).await;
        assert_eq!(client.status, 200);
        assert_eq!(client.header("content-type"), Some("text/event-stream"));
        let connected = client.next_event().await.expect("connected");
        assert_eq!(connected.lines[0], "event: connected");
        assert_eq!(connected.id, None, "connected carries no id");
        assert_eq!(connected.data["stations"], json!(["KNYC", "KMDW"]));
        assert_eq!(connected.data["user"], "alice");
        assert!(connected.data["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));

        let published = server.publish("KNYC", "new_high", json!({"value_f": 75}));
        let event = client.next_event().await.expect("event");
        let id = published.to_string();
        assert_eq!(event.lines.len(), 3);
        assert_eq!(event.lines[0], "event: new_high");
        assert_eq!(event.lines[1], format!("id: {id}"));
        assert!(event.lines[2].starts_with("data: {"));
        assert_eq!(event.data["id"], json!(id));
        assert_eq!(event.data["value_f"], 75);
        assert!(event.data["timestamp"].is_string());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn heartbeat_every_interval_without_id() {
        let server =
            TestServer::start(testkit::Options { heartbeat: Duration::from_secs(1), ..Default::default() }).await;
        let mut client = server.open("alice", "KNYC", None).await;
        client.next_event().await.expect("connected");
        let start = Instant::now();
        for _ in 0..2 {
            let hb = client.next_event().await.expect("heartbeat");
            assert_eq!(hb.lines.len(), 2, "{:?}", hb.lines);
            assert_eq!(hb.lines[0], "event: heartbeat");
            assert!(hb.lines[1].starts_with("data: "));
            assert!(hb.data["timestamp"].is_string());
        }
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(1900) && elapsed < Duration::from_secs(5), "{elapsed:?}");
    }

    /// Publishes a stream of events across two stations while a client disconnects and
    /// reconnects, and checks the client's view: every KNYC event exactly once, in order.
    async fn reconnect_replays_exactly(via_header: bool) {
        let server = TestServer::start(testkit::Options::default()).await;
        let mut first = server.open("alice", "KNYC", None).await;
        first.next_event().await.expect("connected");
        let mut expected = Vec::new();
        for i in 0..6u64 {
            let station = if i % 2 == 0 { "KNYC" } else { "KMDW" };
            let id = server.publish(station, "observation", json!({"n": i}));
            if station == "KNYC" {
                expected.push(id);
            }
        }
        let mut seen = Vec::new();
        while seen.len() < 3 {
            seen.push(first.next_event().await.expect("event").id_u64());
        }
        assert_eq!(seen, expected);
        let last_seen = *seen.last().unwrap();
        drop(first);

        // Events missed while disconnected, then a publisher that keeps going during the
        // reconnect (the race replay + live must survive).
        for i in 0..10u64 {
            let station = if i % 2 == 0 { "KNYC" } else { "KMDW" };
            let id = server.publish(station, "observation", json!({"n": i}));
            if station == "KNYC" {
                expected.push(id);
            }
        }
        let publisher = server.spawn_publisher(200, Duration::from_millis(2));
        let mut second = if via_header {
            server.open_with_header("alice", "KNYC", &last_seen.to_string()).await
        } else {
            server.open("alice", "KNYC", Some(&last_seen.to_string())).await
        };
        assert_eq!(second.next_event().await.expect("connected").name, "connected");
        let live_ids = publisher.await.unwrap();
        expected.extend(live_ids);
        let tail = server.publish("KNYC", "observation", json!({"final": true}));
        expected.push(tail);
        loop {
            let e = second.next_event().await.expect("event");
            assert_eq!(e.name, "observation");
            seen.push(e.id_u64());
            if e.id_u64() == tail {
                break;
            }
        }
        assert_eq!(seen, expected, "replay + live must have no gap and no duplicate");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reconnect_with_last_event_id_query_replays_then_goes_live() {
        reconnect_replays_exactly(false).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reconnect_with_last_event_id_header_replays_then_goes_live() {
        reconnect_replays_exactly(true).await;
    }

    /// The deterministic form of the replay/live race: an event already in the log (so in the
    /// replay) is published to the hub only after the client subscribed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn event_both_replayed_and_published_late_is_sent_once() {
        let server = TestServer::start(testkit::Options::default()).await;
        let seen = server.publish("KNYC", "observation", json!({}));
        let late = server.log.append("KNYC", "observation", json!({"late": true}), Utc::now()).unwrap();
        let mut client = server.open("alice", "KNYC", Some(&seen.to_string())).await;
        assert_eq!(client.next_event().await.expect("connected").name, "connected");
        assert_eq!(client.next_event().await.expect("replayed").id_u64(), late.id);
        server.hub.publish(Arc::clone(&late));
        let next = server.publish("KNYC", "observation", json!({}));
        assert_eq!(client.next_event().await.expect("live").id_u64(), next, "late duplicate must be skipped");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unknown_or_expired_id_gets_resync_then_live() {
        let server = TestServer::start(testkit::Options::default()).await;
        let old = chrono::Utc::now() - chrono::Duration::hours(30);
        let expired = server.log.append("KNYC", "observation", json!({}), old).unwrap().id;
        server.publish("KNYC", "observation", json!({}));
        let before_window = (expired - 1).to_string();
        for (last, reason) in [
            ("bogus", "unknown_last_event_id"),
            ("999999", "unknown_last_event_id"),
            (before_window.as_str(), "last_event_id_expired"),
        ] {
            let mut client = server.open("alice", "KNYC", Some(last)).await;
            assert_eq!(client.next_event().await.expect("connected").name, "connected");
            let resync = client.next_event().await.expect("resync");
            assert_eq!(resync.name, "resync");
            assert_eq!(resync.id, None);
            assert_eq!(resync.data["reason"], reason, "for {last}");
            assert_eq!(resync.data["last_event_id"], last);
            let live = server.publish("KNYC", "new_low", json!({}));
            let e = client.next_event().await.expect("live after resync");
            assert_eq!((e.name.as_str(), e.id_u64()), ("new_low", live));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn second_connection_displaces_the_first() {
        let server = TestServer::start(testkit::Options::default()).await;
        let mut first = server.open("alice", "KNYC", None).await;
        first.next_event().await.expect("connected");
        let id = server.publish("KNYC", "observation", json!({}));
        assert_eq!(first.next_event().await.expect("event").id_u64(), id);
        let mut second = server.open("alice", "KNYC", None).await;
        second.next_event().await.expect("connected");
        let displaced = first.next_event().await.expect("displaced");
        assert_eq!(displaced.name, "displaced");
        assert_eq!(displaced.data["last_event_id"], id.to_string());
        assert_eq!(displaced.retry, Some(ReconnectPolicy::default().displaced_retry.as_millis() as u64));
        assert!(first.next_event().await.is_none(), "displaced connection must reach EOF");
        assert!(first.reaches_eof().await);
        let next = server.publish("KNYC", "observation", json!({}));
        assert_eq!(second.next_event().await.expect("event").id_u64(), next);
        assert_eq!(server.hub.stats().displaced, 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn displaced_client_is_told_how_long_to_wait() {
        let reconnect = ReconnectPolicy { displaced_retry: Duration::from_millis(7500), ..Default::default() };
        let server = TestServer::start(testkit::Options { reconnect, ..Default::default() }).await;
        let mut first = server.open("alice", "KNYC", None).await;
        first.next_event().await.expect("connected");
        let mut second = server.open("alice", "KNYC", None).await;
        second.next_event().await.expect("connected");
        let displaced = first.next_event().await.expect("displaced");
        // `retry:` after `event:` (clients start an event there), before `data:`.
        assert_eq!(displaced.lines[0], "event: displaced");
        assert_eq!(displaced.lines[1], "retry: 7500");
        assert!(displaced.lines[2].starts_with("data: {"), "{:?}", displaced.lines);
        assert_eq!(displaced.retry, Some(7500));
        assert_eq!(displaced.data["retry_after_ms"], 7500);
        assert!(first.reaches_eof().await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fast_reconnects_get_429_with_retry_after_and_displace_nobody() {
        let reconnect = ReconnectPolicy { burst: 3, interval: Duration::from_secs(10), ..Default::default() };
        let server = TestServer::start(testkit::Options { reconnect, ..Default::default() }).await;
        let mut clients = Vec::new();
        for _ in 0..3 {
            let mut c = server.open("bob", "KNYC", None).await;
            assert_eq!(c.status, 200);
            c.next_event().await.expect("connected");
            clients.push(c);
        }
        let mut refused = server.open("bob", "KNYC", None).await;
        assert_eq!(refused.status, 429);
        assert_eq!(refused.header("content-type"), Some("application/json"));
        let retry_after: u64 = refused.header("retry-after").expect("Retry-After").parse().unwrap();
        assert!((1..=10).contains(&retry_after), "{retry_after}");
        let body: Value = serde_json::from_slice(&refused.read_body().await).unwrap();
        assert_eq!(body["error"], "Too many stream connections");
        assert!(body["details"].as_str().unwrap().contains(&format!("retry after {retry_after} s")), "{body}");
        // The refused attempt displaced nobody: the newest admitted connection stays live.
        let id = server.publish("KNYC", "observation", json!({}));
        let live = clients.last_mut().unwrap();
        assert_eq!(live.next_event().await.expect("event").id_u64(), id);
        let stats = server.hub.stats();
        assert_eq!((stats.displaced, stats.throttled, stats.clients), (2, 1, 1));
        // Other users have their own allowance.
        let mut other = server.open("carol", "KNYC", None).await;
        assert_eq!(other.status, 200);
        assert_eq!(other.next_event().await.expect("connected").name, "connected");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_user_is_admitted_once_retry_after_has_passed() {
        let reconnect = ReconnectPolicy { burst: 1, interval: Duration::from_secs(2), ..Default::default() };
        let server = TestServer::start(testkit::Options { reconnect, ..Default::default() }).await;
        let mut first = server.open("bob", "KNYC", None).await;
        first.next_event().await.expect("connected");
        let refused = server.open("bob", "KNYC", None).await;
        assert_eq!(refused.status, 429);
        let retry_after: u64 = refused.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=2).contains(&retry_after), "{retry_after}");
        tokio::time::sleep(Duration::from_secs(retry_after)).await;
        let mut again = server.open("bob", "KNYC", None).await;
        assert_eq!(again.status, 200);
        assert_eq!(again.next_event().await.expect("connected").name, "connected");
        assert_eq!(first.next_event().await.expect("displaced").name, "displaced");
    }

    /// A backlog larger than the log's memory and than one replay page: read back from the
    /// segment files page by page, still every event once and in order, then live.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replay_from_disk_spans_pages_exactly() {
        let server = TestServer::start(testkit::Options { log_budget: 64 * 1024, ..Default::default() }).await;
        let pad = "x".repeat(1000);
        let mut expected = Vec::new();
        for i in 0..800u64 {
            let station = if i % 4 == 3 { "KMDW" } else { "KNYC" };
            let id = server.publish(station, "observation", json!({"n": i, "pad": pad}));
            if station == "KNYC" {
                expected.push(id);
            }
        }
        let stats = server.log.stats();
        assert!(stats.cached < 100 && stats.memory_bytes <= 64 * 1024, "{stats:?}");
        assert!(expected.len() * 1000 > 2 * REPLAY_PAGE_BYTES, "spans pages");
        let mut client = server.open("alice", "KNYC", Some("0")).await;
        assert_eq!(client.next_event().await.expect("connected").name, "connected");
        let mut seen = Vec::new();
        while seen.len() < expected.len() {
            let e = client.next_event().await.expect("replayed");
            assert_eq!(e.name, "observation");
            assert_eq!(e.data["pad"], pad.as_str());
            seen.push(e.id_u64());
        }
        assert_eq!(seen, expected);
        let live = server.publish("KNYC", "new_high", json!({}));
        assert_eq!(client.next_event().await.expect("live").id_u64(), live);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_client_is_dropped_with_resync_while_fast_one_keeps_up() {
        // The queue and pacing leave a busy CI machine's scheduler ample slack: only a socket
        // that stopped draining, never a briefly starved task, overflows 16 events 5 ms apart.
        let server = TestServer::start(testkit::Options { queue: 16, ..Default::default() }).await;
        let mut slow = server.open_slow("slow", "KNYC").await;
        let mut fast = server.open("fast", "KNYC", None).await;
        fast.next_event().await.expect("connected");
        let collector = tokio::spawn(async move {
            let mut ids = Vec::new();
            while let Some(e) = fast.next_event().await {
                ids.push(e.id_u64());
                if e.data.get("last").is_some() {
                    break;
                }
            }
            ids
        });
        // Large events fill the slow client's socket quickly; stop as soon as it is dropped.
        let padding = "x".repeat(64 * 1024);
        let mut published = Vec::new();
        for _ in 0..1000 {
            published.push(server.publish("KNYC", "observation", json!({"pad": padding})));
            tokio::time::sleep(Duration::from_millis(5)).await;
            if server.hub.stats().dropped_slow > 0 {
                break;
            }
        }
        assert_eq!(server.hub.stats().dropped_slow, 1, "slow client not detected in {} events", published.len());
        published.push(server.publish("KNYC", "observation", json!({"last": true})));
        let fast_ids = tokio::time::timeout(Duration::from_secs(20), collector).await.unwrap().unwrap();
        assert_eq!(fast_ids, published, "the fast client must get every event, in order");

        // Now the slow client reads: a gapless prefix, then resync naming its last id, then EOF.
        let mut ids = Vec::new();
        let mut last = None;
        while let Some(e) = slow.next_event().await {
            match e.name.as_str() {
                "connected" => {}
                "observation" => ids.push(e.id_u64()),
                _ => last = Some(e),
            }
        }
        let resync = last.expect("final event");
        assert_eq!(resync.name, "resync");
        assert_eq!(resync.data["reason"], "slow_consumer");
        assert_eq!(ids, published[..ids.len()].to_vec(), "delivered part is a gapless prefix");
        assert!(ids.len() < published.len());
        // Nothing existed when it connected, so its resume point is its last event (or 0).
        let resume = ids.last().map_or(0, |id| *id);
        assert_eq!(resync.data["last_event_id"], resume.to_string());
        assert!(slow.reaches_eof().await);
    }

    /// A dropped client that never drains cannot take its final event: after the grace period
    /// the server cuts the connection instead of holding it (and its buffers) forever.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropped_client_that_never_reads_is_cut_after_the_grace_period() {
        let options = testkit::Options { queue: 16, close_grace: Duration::from_millis(500), ..Default::default() };
        let server = TestServer::start(options).await;
        let mut slow = server.open_slow("slow", "KNYC").await;
        let padding = "x".repeat(64 * 1024);
        let mut published = 0;
        while server.hub.stats().dropped_slow == 0 && published < 1000 {
            server.publish("KNYC", "observation", json!({"pad": padding}));
            published += 1;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(server.hub.stats().dropped_slow, 1);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let mut names = Vec::new();
        while let Some(e) = slow.next_event().await {
            names.push(e.name);
        }
        assert!(slow.reaches_eof().await);
        assert!(!names.iter().any(|n| n == "resync"), "the cut connection never drained its final event");
        assert!(names.len() < published + 1, "only what was already in the socket buffers arrives");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refusals_render_json_with_the_status() {
        let server = TestServer::start(testkit::Options::default()).await;
        for (query, status) in [
            ("stations=KNYC", 401),
            ("stations=KNYC&api_key=nope", 401),
            ("stations=KNYC&api_key=nostream", 403),
            ("api_key=key-alice", 400),
            ("stations=KNYC,KMDW,KAUS,KDFW,KMIA,KBOS&api_key=key-alice", 403),
        ] {
            let mut client = SseClient::get(&server, &format!("{STREAM_PATH}?{query}"), &[]).await;
            assert_eq!(client.status, status, "{query}");
            assert_eq!(client.header("content-type"), Some("application/json"));
            let body: Value = serde_json::from_slice(&client.read_body().await).unwrap();
            assert!(body["error"].is_string() && body["details"].is_string(), "{body}");
        }
        let mut other = SseClient::get(&server, "/api/v2/observations.php", &[]).await;
        assert_eq!(other.status, 404);
        let body: Value = serde_json::from_slice(&other.read_body().await).unwrap();
        assert_eq!(body["error"], "not found");
    }
}
