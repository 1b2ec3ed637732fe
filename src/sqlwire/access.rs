//! Who may query: the API key is the credential on both protocols, checked against the
//! same [`Access`] as the REST API: the key store (a revoked key stops within the
//! store's reload interval, under a second), the tier (Developer and Enterprise, as for
//! the REST analytics endpoints), and the key's v2 rate limits, where every query counts
//! as one request.

use std::sync::Arc;

use super::error::WireError;
use crate::access::keys::KeyRecord;
use crate::access::limits::ApiVersion;
use crate::access::Access;

/// The key behind `secret`, if it may use SQL at all (at connect time).
pub fn authorize(access: &Access, secret: Option<&str>) -> Result<Arc<KeyRecord>, WireError> {
    let secret = secret.map(str::trim).filter(|s| !s.is_empty()).ok_or(WireError::MissingKey)?;
    let record = access.authenticate(secret).ok_or(WireError::InvalidKey)?;
    if !record.tier.has_premium_endpoints() {
        return Err(WireError::Tier(record.tier.as_str()));
    }
    Ok(record)
}

/// Admits one query of the key behind `secret`: still valid (not revoked since connect),
/// and within its rate limits (the query is counted).
pub fn admit_query(access: &Access, secret: &str) -> Result<Arc<KeyRecord>, WireError> {
    let record = authorize(access, Some(secret))?;
    let d = access.count(&record, ApiVersion::V2);
    if !d.allowed {
        return Err(WireError::RateLimited(format!("rate limit exceeded: {}", d.refusal(record.tier))));
    }
    Ok(record)
}
