//! The one error type of the SQL servers: every refusal carries the sentence the client
//! shows, and the SQLSTATE a PostgreSQL client (or the gRPC status a Flight SQL client)
//! acts on.

use datafusion::error::DataFusionError;
use thiserror::Error;

/// Why a connection or a query was refused or failed.
#[derive(Debug, Error)]
pub enum WireError {
    /// No credential at all.
    #[error("missing API key: give the key as the password (any user name), or as `Authorization: Bearer <key>`")]
    MissingKey,
    /// A credential that is no key of this server (or a revoked one).
    #[error("invalid API key (unknown or revoked)")]
    InvalidKey,
    /// A key whose tier has no SQL access.
    #[error("SQL access requires a Developer or Enterprise key; this key is {0}")]
    Tier(&'static str),
    /// Over the key's request limits.
    #[error("{0}")]
    RateLimited(String),
    /// Over a concurrency cap.
    #[error("{0}")]
    Busy(String),
    /// A statement that would change data, the session, or read outside the lake.
    #[error("read-only SQL: {0}")]
    ReadOnly(String),
    /// A query the client cancelled (PostgreSQL's CancelRequest, psql's Ctrl-C).
    #[error("canceling statement due to user request")]
    Cancelled,
    /// A query past the per-query time limit.
    #[error("query cancelled: it ran longer than the {0} s limit per query")]
    Timeout(u64),
    /// A query that needed more memory than the per-query pool holds.
    #[error("query needs more memory than the {limit_mib} MiB limit per query: {detail}")]
    Memory { limit_mib: usize, detail: String },
    /// Planning or execution failed for another reason (the engine's message).
    #[error("{0}")]
    Engine(#[from] DataFusionError),
}

impl WireError {
    /// The PostgreSQL SQLSTATE of this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            WireError::MissingKey | WireError::InvalidKey => "28P01",
            WireError::Tier(_) => "42501",
            WireError::RateLimited(_) => "53400",
            WireError::Busy(_) => "53300",
            WireError::ReadOnly(_) => "25006",
            WireError::Timeout(_) | WireError::Cancelled => "57014",
            WireError::Memory { .. } => "53200",
            WireError::Engine(_) => "XX000",
        }
    }

    /// The engine's error as one of ours when it is one of ours underneath (the bounded
    /// execution wraps its refusals in `DataFusionError::External`).
    pub fn from_engine(e: DataFusionError) -> WireError {
        find_refusal(&e).unwrap_or(WireError::Engine(e))
    }

    /// The refusal of ours somewhere in `e`'s chain (an engine error from a result stream,
    /// as a protocol library passes it on), if there is one.
    pub fn find_in(e: &(dyn std::error::Error + 'static)) -> Option<WireError> {
        let mut next = Some(e);
        while let Some(err) = next {
            if let Some(w) = err.downcast_ref::<WireError>() {
                return clone_refusal(w);
            }
            if let Some(w) = err.downcast_ref::<DataFusionError>().and_then(find_refusal) {
                return Some(w);
            }
            next = err.source();
        }
        None
    }
}

/// The refusal of ours inside an engine error, if there is one.
fn find_refusal(e: &DataFusionError) -> Option<WireError> {
    match e {
        DataFusionError::External(inner) => inner.downcast_ref::<WireError>().and_then(clone_refusal),
        DataFusionError::Shared(inner) => find_refusal(inner),
        DataFusionError::Context(_, inner) => find_refusal(inner),
        _ => None,
    }
}

/// A copy of a refusal (the engine error it travels in is shared, so it cannot be moved out).
fn clone_refusal(e: &WireError) -> Option<WireError> {
    Some(match e {
        WireError::MissingKey => WireError::MissingKey,
        WireError::InvalidKey => WireError::InvalidKey,
        WireError::Tier(t) => WireError::Tier(t),
        WireError::RateLimited(m) => WireError::RateLimited(m.clone()),
        WireError::Busy(m) => WireError::Busy(m.clone()),
        WireError::ReadOnly(m) => WireError::ReadOnly(m.clone()),
        WireError::Timeout(s) => WireError::Timeout(*s),
        WireError::Cancelled => WireError::Cancelled,
        WireError::Memory { limit_mib, detail } => WireError::Memory { limit_mib: *limit_mib, detail: detail.clone() },
        WireError::Engine(_) => return None,
    })
}

impl From<WireError> for DataFusionError {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Engine(e) => e,
            other => DataFusionError::External(Box::new(other)),
        }
    }
}
