//! Who may use the service, on every front door: the API keys and their tiers
//! ([`keys`]) and the per-key rate limits ([`limits`]). REST (`api::auth`), the PostgreSQL
//! wire and Flight SQL (`sqlwire::access`) and the push stream (`stream_bridge::auth`) all
//! check one [`Access`], so a key revoked or a limit reached holds at every door at once.
//! It knows no front door: each turns a refusal into its own protocol's answer.

pub mod keys;
pub mod limits;

use std::sync::Arc;

use keys::{KeyRecord, KeyStore};
use limits::{ApiVersion, Decision, RateLimiter};

/// The key store and the rate limiter, shared by every front door; cheap to clone.
#[derive(Clone)]
pub struct Access {
    pub keys: Arc<KeyStore>,
    pub limiter: Arc<RateLimiter>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access").finish_non_exhaustive()
    }
}

impl Access {
    pub fn new(keys: Arc<KeyStore>, limiter: Arc<RateLimiter>) -> Self {
        Access { keys, limiter }
    }

    /// The valid (not revoked) key behind `secret`.
    pub fn authenticate(&self, secret: &str) -> Option<Arc<KeyRecord>> {
        self.keys.authenticate(secret)
    }

    /// Counts one request of `key` against its `api` limits; the decision says whether it
    /// was admitted (a refused request counts nowhere).
    pub fn count(&self, key: &KeyRecord, api: ApiVersion) -> Decision {
        self.limiter.check(&key.id, key.tier, api)
    }
}
