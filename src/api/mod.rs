//! The HTTP API (axum): v2 and legacy v1 endpoints, the REST side of authentication and
//! rate limits (the keys and limits themselves are [`crate::access`]'s), the OpenAPI
//! document, and the stream's same-origin relay ([`stream_relay`]).
//! One module per endpoint; every path lives in [`paths`]. What the handlers share
//! ([`state::AppState`], the caches, [`params`], [`bound_sql`], [`error`]) imports no
//! handler, and the types only the OpenAPI document needs are in [`schemas`], so the
//! document ([`docs`]) is the only module that names every handler besides the router.
//! The router also serves the browser dashboard's page and assets ([`crate::dashboard`]);
//! its data comes from the endpoints above. The REST port's connections (timeouts, the connection cap) are served
//! by [`listener`].

pub mod accuracy_cache;
pub mod as_of;
pub mod auth;
pub mod daily_as_of;
pub mod docs;
pub mod error;
pub mod forecast_cache;
pub mod health;
pub mod ingest;
pub mod json;
pub mod json_stream;
pub mod latest_cache;
pub mod latest_runs;
pub mod listener;
pub mod metrics;
pub mod nws_cache;
pub mod observation_json;
pub mod params;
pub mod paths;
pub mod schemas;
pub mod server;
pub mod state;
pub mod stream_relay;
pub mod v1;
pub mod v2;

pub use state::{AppInner, AppState};
