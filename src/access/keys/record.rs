//! A key as stored (never its secret), how secrets are made and hashed, and how a query
//! (an id, a whole secret or a secret prefix) names one key.

use chrono::{DateTime, Utc};
use rand::distr::Alphanumeric;
use rand::Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::KeyError;
use super::tier::Tier;

/// One key as stored in `keys.json` (never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// Short public id (`k_` + 8 hex), safe to log and to pass to `keys revoke`.
    pub id: String,
    pub user: String,
    pub tier: Tier,
    /// May use administrative endpoints.
    #[serde(default)]
    pub admin: bool,
    /// Enabled for the push stream (spec 5.7: "the key must be enabled").
    #[serde(default)]
    pub stream: bool,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub revoked_at: Option<DateTime<Utc>>,
    /// First characters of the secret (`wx_` + 5), to recognize a key seen in a client config.
    #[serde(default)]
    pub prefix: String,
    /// Lowercase hex SHA-256 of the secret.
    pub hash: String,
}

impl KeyRecord {
    /// A revoked key never authenticates again.
    pub fn is_active(&self) -> bool {
        self.revoked_at.is_none()
    }
}

/// Every secret starts with this, so leaked keys are recognizable by secret scanners.
pub(super) const SECRET_PREFIX: &str = "wx_";
/// Random base62 characters after `wx_`.
pub(super) const SECRET_RANDOM_CHARS: usize = 40;
/// Characters of the secret kept in the record (`wx_` + 5), so operators can tell keys apart
/// and revoke by what they see in a client's config; 5 of 40 characters leak ~30 of ~238 bits.
pub(super) const STORED_PREFIX_LEN: usize = 8;
/// Shortest secret prefix accepted by [`KeyStore::revoke`] (`wx_` + 4).
pub(super) const MIN_REVOKE_PREFIX: usize = 7;
/// Longer inputs cannot be keys; refusing them early bounds the hashing work per request.
pub(super) const MAX_SECRET_LEN: usize = 256;
/// Index of the one record named by `query` (see [`KeyStore::revoke`]).
pub(super) fn resolve(records: &[KeyRecord], query: &str) -> Result<usize, KeyError> {
    let query = query.trim();
    if let Some(i) = records.iter().position(|r| r.id == query) {
        return Ok(i);
    }
    if query.len() <= MAX_SECRET_LEN {
        let hash = to_hex(&sha256(query));
        if let Some(i) = records.iter().position(|r| r.hash.eq_ignore_ascii_case(&hash)) {
            return Ok(i);
        }
    }
    // Only the stored prefix of a longer input can be compared.
    let probe = query.get(..query.len().min(STORED_PREFIX_LEN)).unwrap_or_default();
    if probe.len() < MIN_REVOKE_PREFIX || !probe.starts_with(SECRET_PREFIX) {
        return Err(KeyError::NotFound(redact(query)));
    }
    let mut hits = records.iter().enumerate().filter(|(_, r)| r.prefix.starts_with(probe)).map(|(i, _)| i);
    match (hits.next(), hits.next()) {
        (Some(i), None) => Ok(i),
        (Some(_), Some(_)) => Err(KeyError::Ambiguous(redact(query))),
        (None, _) => Err(KeyError::NotFound(redact(query))),
    }
}

/// What an error message may show of user input that might be a secret.
pub(super) fn redact(s: &str) -> String {
    if s.starts_with(SECRET_PREFIX) && s.len() > STORED_PREFIX_LEN {
        let head: String = s.chars().take(STORED_PREFIX_LEN).collect();
        format!("{head}...")
    } else {
        s.chars().take(64).collect()
    }
}

pub(super) fn validate_user(user: &str) -> Result<String, KeyError> {
    let user = user.trim();
    let ok = !user.is_empty() && user.chars().count() <= 128 && !user.chars().any(char::is_control);
    if ok {
        Ok(user.to_string())
    } else {
        Err(KeyError::InvalidUser(user.chars().take(64).filter(|c| !c.is_control()).collect()))
    }
}

pub(super) fn new_secret(rng: &mut impl Rng) -> String {
    let mut s = String::with_capacity(SECRET_PREFIX.len() + SECRET_RANDOM_CHARS);
    s.push_str(SECRET_PREFIX);
    s.extend(rng.sample_iter(Alphanumeric).take(SECRET_RANDOM_CHARS).map(char::from));
    s
}

pub(super) fn sha256(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

pub(super) fn to_hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// Parses 64 hex digits (either case) into a digest.
pub(super) fn parse_digest(digits: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}
