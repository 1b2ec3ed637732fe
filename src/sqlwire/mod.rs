//! Analyst SQL over the network: read-only SQL for the tools analysts use, on the
//! PostgreSQL wire protocol ([`pg`]) and Arrow Flight SQL ([`flight`]), over the tables `wxlake sql`
//! sees plus the live state.
//!
//! One core serves both protocols:
//! - [`session`]: the sessions (the server's tables, the live tables, pg_catalog; one
//!   memory pool per query session);
//! - [`guard`]: read-only (no DDL, DML, COPY, engine SET, file or URL readers);
//! - [`bounded`] and [`admission`]: per-query memory and time limits, concurrency caps per
//!   key and overall, cancellation when the client goes away;
//! - [`executor`]: the runtime queries compute on, apart from the server's;
//! - [`access`]: the API key as the credential, tiers, revocation, rate limits (checked
//!   against [`crate::access`], as REST checks them);
//! - [`live_tables`]: `svc_extremes` and `live_observations`;
//! - [`server_settings`]: the version and settings clients probe, in PostgreSQL's terms;
//! - [`information_schema`]: DataFusion's, with PostgreSQL's type names in `columns`;
//! - [`like_escape`]: `LIKE ... ESCAPE` with another escape than the backslash;
//! - [`catalog_probes`]: the catalog functions and tables tools probe, answered as
//!   PostgreSQL does for a database without keys, indexes or functions.

pub mod access;
pub mod admission;
pub mod bounded;
pub mod catalog_probes;
pub mod error;
pub mod executor;
pub mod flight;
pub mod guard;
pub mod information_schema;
pub mod like_escape;
pub mod live_tables;
pub mod overlay;
pub mod pg;
pub mod server_settings;
pub mod session;

pub use admission::QueryLimits;
pub use error::WireError;
pub use session::WireEngine;

use std::sync::Arc;

/// What the SQL servers need of the running service, and nothing of the REST app's: the
/// live service (its query session and hot state, its clock) and who may query.
#[derive(Clone, Debug)]
pub struct WireState {
    pub live: Arc<crate::write::WriteService>,
    pub access: crate::access::Access,
}
