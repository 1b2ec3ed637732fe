//! What can go wrong with the key store.

use std::io;
use std::path::{Path, PathBuf};

/// Failures of the key store. Messages name the file and never contain a whole secret.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// `reason` ends with the JSON error's message when that is what found it (`source`).
    #[error("{path} is not a valid key file: {reason}")]
    Corrupt {
        path: PathBuf,
        reason: String,
        #[source]
        source: Option<serde_json::Error>,
    },
    #[error("unknown tier '{0}' (expected professional, developer, enterprise or testing)")]
    UnknownTier(String),
    #[error("invalid user '{0}': expected 1-128 characters without control characters")]
    InvalidUser(String),
    #[error("no key matches '{0}'")]
    NotFound(String),
    #[error("'{0}' matches more than one key; give the key id")]
    Ambiguous(String),
    #[error("key {0} is revoked")]
    Revoked(String),
}

pub(super) fn io_error(path: &Path, source: io::Error) -> KeyError {
    KeyError::Io { path: path.to_path_buf(), source }
}

pub(super) fn corrupt(path: &Path, reason: String) -> KeyError {
    KeyError::Corrupt { path: path.to_path_buf(), reason, source: None }
}

/// [`KeyError::Corrupt`] found by (de)serialising: the JSON error's message, the error kept.
pub(super) fn corrupt_json(path: &Path, source: serde_json::Error) -> KeyError {
    KeyError::Corrupt { path: path.to_path_buf(), reason: source.to_string(), source: Some(source) }
}
