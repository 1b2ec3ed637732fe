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
    /// Comma-separated station codes (Professional: at most 5)
    #[param(required = true, value_type = String)]
    pub stations: Option<String>,
    /// Id of the last event received: replays what was missed (the Last-Event-ID header works too)
    pub last_event_id: Option<String>,
}

/// The relay's handler (behind the auth middleware: the key is valid and counted).
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
    let grant = match state.authorize(secret, &stations) {
        Ok(grant) => grant,
        Err(refusal) => return refusal.into_response(),
    };
    let grant = StreamGrant { user: format!("{}{RELAY_USER_SUFFIX}", grant.user), stations: grant.stations };
    let stream = StreamState { hub: feed.hub, log: feed.log, auth: Arc::new(state.clone()), heartbeat: feed.heartbeat };
    stream_response(&stream, grant, &headers, q.last_event_id.as_deref(), None)
}
