//! API keys: creation, revocation and authentication (spec 5; DESIGN "Auth").
//!
//! Keys live in `<state_dir>/keys.json`. Only the SHA-256 of each secret is stored: the secret
//! (`wx_` + 40 base62 characters, about 238 random bits) is shown once, at creation. A fast,
//! unsalted hash is enough for secrets of that entropy (nothing to brute-force), and it keeps
//! authentication cheap on every request, where bcrypt/argon2 would cost milliseconds.
//!
//! The server and the CLI (`wxlake keys revoke ...`) are different processes sharing the file.
//! Every write takes an advisory lock on `<state_dir>/keys.lock`, re-reads the file, applies its
//! change and replaces the file atomically (temp file + fsync + rename), so no process loses
//! another's update and no reader ever sees a half-written file. Every reader checks the file's
//! identity (inode, length, mtime) at most once per check interval (1 s by default) on the
//! authentication path and reloads when it changed, so a revocation reaches a running server
//! within about a second, without a restart.
//!
//! By job: `tier` (what a key may do), `record` (a key as stored, its secret and how a query
//! names one), `file` (`keys.json`: layout, validation, identity), `lock` (the cross-process
//! lock and the atomic replace), `store` (the in-process view and its reloads) and `demo`
//! (the demo's keys, kept in plaintext for `serve --demo` to show again).

mod demo;
mod error;
mod file;
mod lock;
mod record;
mod store;
#[cfg(test)]
mod tests;
mod tier;

pub use demo::{DemoKey, DEMO_KEYS_FILE};
pub use error::KeyError;
pub use file::{KEYS_FILE, LOCK_FILE};
pub use record::KeyRecord;
pub use store::{KeyStore, DEFAULT_CHECK_INTERVAL};
pub use tier::Tier;
