//! The server's side of the push stream. The stream (`src/stream`) depends on no other
//! module; this is where it meets the rest of the server:
//! - [`auth`]: who may stream what, checked against the API keys;
//! - [`payloads`]: the JSON of each event of spec 6 (`observation`, `dsm` / `cli`,
//!   `new_high` / `new_low`);
//! - [`publisher`]: every record the hot state applies becomes stream events, appended to the
//!   event log and published, in one task so ids go out in order;
//! - [`relay`]: the same events on the REST port, same-origin for the dashboard, the key in
//!   a header.

pub mod auth;
#[cfg(test)]
mod log_memory;
pub mod payloads;
pub mod publisher;
pub mod relay;
#[cfg(test)]
mod tests;

pub use auth::PROFESSIONAL_MAX_STATIONS;
pub use payloads::{change_payload, observation_payload, report_payload};
pub use publisher::{events_for, spawn_publisher, PUBLISHER_INBOX};
