//! The server's side of the push stream. The stream (`src/stream`) depends on no other
//! module; this is where it meets the rest of the server (the REST port's relay is
//! `api::stream_relay`):
//! - [`auth`]: who may stream what, checked against [`crate::access`];
//! - [`brackets`]: the `brackets` event, when a bracket's probability of a station's day moves;
//! - [`payloads`]: the JSON of each event of spec 6 (`observation`, `dsm` / `cli`,
//!   `new_high` / `new_low`);
//! - [`publisher`]: every record the hot state applies becomes stream events, appended to the
//!   event log and published, in one task so ids go out in order;

pub mod auth;
pub mod brackets;
#[cfg(test)]
mod log_memory;
pub mod payloads;
pub mod publisher;
#[cfg(test)]
mod tests;

pub use auth::PROFESSIONAL_MAX_STATIONS;
pub use payloads::{change_payload, observation_payload, report_payload};
pub use publisher::{events_for, spawn_publisher, PUBLISHER_INBOX};
