//! Authentication and rate limiting, applied to every API route before its handler.
//!
//! The key comes from `Authorization: Bearer <key>` or `X-API-Key: <key>` (spec 5); the
//! request counts against the key's per-minute and per-day windows of its API version
//! (v1 and v2 have separate tables, spec 8 and 9). Every authenticated response carries the
//! rate-limit headers; a refusal is a 429 with `Retry-After`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::state::AppState;
use crate::access::keys::{KeyRecord, Tier};
use crate::access::limits::ApiVersion;

/// The authenticated key, available to handlers as an extension.
#[derive(Debug, Clone)]
pub struct Caller(pub Arc<KeyRecord>);

impl Caller {
    pub fn tier(&self) -> Tier {
        self.0.tier
    }
}

/// The secret a request carries, if any. The `Authorization` scheme name is matched
/// case-insensitively (RFC 9110 11.1: `Bearer`, `bearer` and `BEARER` are the same scheme),
/// with any run of spaces or tabs before the key.
pub fn key_from_headers(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        if let Some(k) = bearer_token(v) {
            return Some(k);
        }
    }
    headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::trim).filter(|k| !k.is_empty())
}

/// The token of a `Bearer` credential, whatever the case of the scheme name.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once([' ', '\t'])?;
    let token = rest.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Middleware: 401 without a valid key, 429 over the limit, else the handler with
/// rate-limit headers added to its response.
pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let api = if req.uri().path().starts_with("/api/v1/") { ApiVersion::V1 } else { ApiVersion::V2 };
    let Some(secret) = key_from_headers(req.headers()) else {
        return ApiError::unauthorized("Missing API key").into_response();
    };
    let Some(record) = state.keys.authenticate(secret) else {
        return ApiError::unauthorized("Invalid API key").into_response();
    };
    let decision = state.limiter.check(&record.id, record.tier, api);
    let headers = decision.headers();
    if !decision.allowed {
        return ApiError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            "Rate limit exceeded",
            decision.refusal(record.tier),
        )
        .with_headers(headers)
        .into_response();
    }
    req.extensions_mut().insert(Caller(record));
    let mut resp = next.run(req).await;
    for (k, v) in headers {
        if let Ok(v) = HeaderValue::from_str(&v) {
            resp.headers_mut().insert(k, v);
        }
    }
    resp
}

/// 403 unless the caller's tier may use the premium endpoints (accuracy, nearby, pacing).
pub fn require_premium(caller: &Caller) -> Result<(), ApiError> {
    if caller.tier().has_premium_endpoints() {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "this endpoint requires a Developer or Enterprise key; this key is {}",
            caller.tier().as_str()
        )))
    }
}

/// 403 unless the key may POST ingest.
pub fn require_admin(caller: &Caller) -> Result<(), ApiError> {
    require_admin_for(caller, "ingest")
}

/// 403 unless the key is an admin key; `what` names the endpoint in the message.
pub fn require_admin_for(caller: &Caller, what: &str) -> Result<(), ApiError> {
    if caller.0.admin {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!("{what} requires an admin key (wxlake keys create --admin)")))
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn key(auth: Option<&str>, x_api_key: Option<&str>) -> Option<String> {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert("authorization", HeaderValue::from_str(a).unwrap());
        }
        if let Some(k) = x_api_key {
            h.insert("x-api-key", HeaderValue::from_str(k).unwrap());
        }
        key_from_headers(&h).map(str::to_string)
    }

    /// RFC 9110: the scheme name is case-insensitive; the key itself is taken as sent.
    #[test]
    fn bearer_scheme_is_case_insensitive() {
        for auth in ["Bearer k-1", "bearer k-1", "BEARER k-1", "bEaReR   k-1", "Bearer\tk-1", " Bearer k-1 "] {
            assert_eq!(key(Some(auth), None).as_deref(), Some("k-1"), "{auth:?}");
        }
        assert_eq!(key(Some("Basic dXNlcjpw"), None), None, "another scheme is no key");
        assert_eq!(key(Some("Bearer"), None), None, "a scheme without a token is no key");
        assert_eq!(key(Some("Bearerk-1"), None), None);
        assert_eq!(key(Some("Basic x"), Some(" k-2 ")).as_deref(), Some("k-2"), "X-API-Key still works");
    }
}
