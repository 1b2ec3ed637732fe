//! The push stream: server-sent events on a dedicated HTTPS port (spec parts 3, 4.5, 6).
//!
//! Traders keep one connection open all day, so the stream is built around four promises:
//! a new event reaches every subscriber in well under a second, a reconnect loses nothing,
//! one slow client never holds up the others, and a user has exactly one live connection.
//!
//! The pieces, each usable on its own:
//! - [`event_log::EventLog`]: the durable record of events, bounded in time (retention) and
//!   in memory (payloads on disk, an index and the newest frames in memory). It assigns the
//!   ids (monotonic across restarts) and answers "what happened after id N" for replay.
//! - [`hub::Hub`]: the fan-out. One `publish` per event hands an `Arc<Event>` to the bounded
//!   queue of each subscriber of that station; a full queue drops that client alone, and a
//!   second connection of a user displaces the first (told when to come back), and a user's
//!   reconnects are paced.
//! - [`sse`]: the HTTP side. `GET /api/v2/stream` authorizes through the integrator's
//!   [`sse::StreamAuth`], then writes `connected`, replayed events, live events and heartbeats
//!   as `event:` / `id:` / `data:` lines.
//! - [`lag`]: how long deliveries take from an event's creation to its connection, the
//!   server's share of a client's latency.
//! - [`frame`]: the SSE wire format of one event, shared by the log (which keeps encoded
//!   frames) and the HTTP side.
//! - [`tls`]: rustls configuration from PEM files, a self-signed pair for `serve --demo`, and
//!   the HTTPS-only listener that serves the router.
//!
//! Wiring, as the server does it:
//! ```ignore
//! let log = Arc::new(EventLog::open(&state_dir.join("events"), default_retention())?);
//! let hub = Hub::new(1024);
//! // producer side, for every derived event:
//! hub.publish(log.append("KNYC", "new_high", payload, Utc::now())?);
//! // HTTPS side:
//! let router = stream_router(StreamState { hub, log, auth, heartbeat: DEFAULT_HEARTBEAT });
//! serve_tls(listener, load_tls(cert, key)?, router, shutdown).await;
//! ```
//! Append to the log BEFORE publishing: a reconnecting client subscribes to live events first
//! and reads the log second, and only that order makes replay + live exact (no gap, no
//! duplicate). Append and publish from one task (or under one lock) so events are published
//! in id order: a client resumes from the highest id it saw, so an event overtaken by a later
//! id on the wire could be skipped by a reconnect.
//!
//! This module depends on no other wxlake module but the shared helpers
//! (`crate::durable` for the event log's files, `crate::net` for the listener): authorization comes in through
//! [`sse::StreamAuth`] and events through [`event_log::EventLog::append`]; the server's
//! implementations of both (API keys, spec 6 payloads, the publisher fed by the live path)
//! are in `stream_bridge`.

pub mod event_log;
pub mod frame;
pub mod hub;
pub mod lag;
pub mod sse;
#[cfg(test)]
pub(crate) mod testkit;
pub mod tls;

pub use event_log::{
    default_retention, Event, EventLog, EventLogError, EventLogOptions, EventLogStats, Replay, DEFAULT_MEMORY_BUDGET,
};
pub use hub::{CloseReason, ConnectionCloser, Delivery, Hub, HubStats, ReconnectPolicy, Subscription};
pub use sse::{
    parse_stations, stream_response, stream_router, StreamAuth, StreamGrant, StreamRefusal, StreamState,
    DEFAULT_HEARTBEAT, STREAM_PATH,
};
pub use tls::{load_tls, self_signed, serve_tls, serve_tls_with, ServeOptions, TlsError};
