//! `GET /api/v2/stream/relay` on the REST port: the push stream's events for a browser.
//!
//! A browser cannot easily use the stream's own HTTPS port (a self-signed certificate under
//! `serve --demo`, another origin), and the spec puts the stream's key in the URL, which a
//! page must not do. The relay serves the same event log and hub as the stream (no second
//! event source), on the page's own origin, with the key in a header like every REST call:
//! the auth middleware counts the request, then [`StreamAuth`] applies the stream's own
//! rules (stream-enabled key, catalog stations, the Professional tier's station limit).
//!
//! The relay's connections count per user apart from the stream port's: one dashboard
//! connection per user (a second tab displaces the first, as on the stream), and a trader's
//! dashboard never displaces the program that holds the user's stream connection.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::auth::key_from_headers;
use crate::api::error::ApiError;
use crate::api::params::QueryParams;
use crate::api::state::AppState;
use crate::stream::{parse_stations, stream_response, StreamAuth, StreamGrant, StreamState};

/// Appended to the user of a relay connection: its own one-connection slot per user.
pub const RELAY_USER_SUFFIX: &str = "#relay";

/// Query of the relay.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RelayQuery {
    /// comma-separated station codes (Professional: at most 5)
    #[param(required = true, value_type = String)]
    pub stations: Option<String>,
    /// id of the last event received: replays what was missed (the Last-Event-ID header works too)
    pub last_event_id: Option<String>,
}

/// The relay's handler (behind the auth middleware: the key is valid and counted).
#[utoipa::path(
    get,
    path = crate::api::paths::V2_STREAM_RELAY,
    tag = "stream",
    operation_id = "openStreamRelay",
    summary = "The push stream's events relayed on the REST port (same origin, for the browser dashboard)",
    description = "The same events, ids, replay and heartbeats as the push stream (one event log), for a client that \
                   cannot use the stream's own HTTPS listener or must not put its key in a URL: the key goes in \
                   `Authorization: Bearer` or `X-API-Key` like every REST call, and the stream's rules apply (the key \
                   must be stream-enabled; Professional: at most 5 stations). A user has one relay connection (a newer \
                   one displaces it with a `displaced` event), counted apart from the user's stream connection. 404 \
                   when the server runs without a stream.",
    params(RelayQuery),
    responses(
        (status = 200, description = "text/event-stream: events as `event:`, `id:`, `data:` lines (see /api/v2/stream)", content_type = "text/event-stream"),
        (status = 400, description = "missing or unknown stations", body = crate::api::error::ErrorBody),
        (status = 403, description = "key not stream-enabled, or too many stations for the tier", body = crate::api::error::ErrorBody),
        (status = 404, description = "this server runs without a push stream", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    headers: HeaderMap,
    QueryParams(q): QueryParams<RelayQuery>,
) -> Response {
    let Some(feed) = state.stream_feed().cloned() else {
        return ApiError::not_found(
            "The push stream is not enabled on this server",
            "start wxlake serve with --stream-addr ADDR --tls-cert FILE --tls-key FILE (or --demo): the relay serves \
             the stream's events",
        )
        .into_response();
    };
    let secret = key_from_headers(&headers).unwrap_or_default();
    let stations = parse_stations(q.stations.as_deref().unwrap_or(""));
    let access = state.access();
    let grant = match access.authorize(secret, &stations) {
        Ok(grant) => grant,
        Err(refusal) => return refusal.into_response(),
    };
    let grant = StreamGrant { user: format!("{}{RELAY_USER_SUFFIX}", grant.user), ..grant };
    let stream = StreamState { hub: feed.hub, log: feed.log, auth: Arc::new(access), heartbeat: feed.heartbeat };
    stream_response(&stream, grant, &headers, q.last_event_id.as_deref(), None)
}
