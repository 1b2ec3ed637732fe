//! `as_of=<ISO 8601 UTC>` on the v2 REST endpoints: the answer the service would have given
//! at that moment, from the rows available by then (`available_at <= as_of`,
//! `lake::availability`) and the inputs it had acknowledged by then. The answer echoes the
//! time in the `X-As-Of` header (and, in object bodies, an `as_of` field).
//!
//! A time after the server's clock is a 400: the future is not known yet. A time before
//! any data gives each endpoint's documented empty answer. An endpoint that cannot answer
//! as of a time yet says so with a 400 rather than answering as of now: a backtest handed
//! today's data silently would be worse than an error.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::ApiError;
use super::params;
use super::state::AppState;
use crate::lake::bound_sql::Bindings;
use crate::lake::schema::{CURRENT, SUPERSEDED_AT};
use crate::time::fmt_iso_utc;

/// The parameter's name, in queries and the `X-As-Of` header.
pub const AS_OF: &str = "as_of";

/// The header that echoes `as_of` on an answer given as of a time (as documented, and
/// as sent: HTTP/1 header names are sent in lower case).
pub const AS_OF_HEADER_NAME: &str = "X-As-Of";
pub const AS_OF_HEADER: &str = "x-as-of";

/// The `as_of` parameter as documented on every endpoint that answers as of a time.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AsOfQuery {
    /// ISO 8601 UTC, not after the server's time: answer as the service would have at that
    /// moment, from the rows available by then (each row's `available_at`); echoed in the
    /// `X-As-Of` header. Absent: now.
    #[param(value_type = Option<String>, format = DateTime)]
    pub as_of: Option<String>,
}

/// The moment a request asks about: `None` for now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AsOf(pub Option<DateTime<Utc>>);

impl AsOf {
    /// The moment asked about, or the server's now.
    pub fn now(&self, state: &AppState) -> DateTime<Utc> {
        self.0.unwrap_or_else(|| state.now())
    }

    /// A 400 when a time was asked on an endpoint (or mode) that cannot answer as of one yet.
    pub fn unsupported(&self, what: &str) -> Result<(), ApiError> {
        match self.0 {
            None => Ok(()),
            Some(_) => Err(ApiError::bad_request(
                format!("as_of is not supported by {what}"),
                "as_of works on every v2 endpoint that reads observations or forecasts; this answer would \
                 be today's, so it is refused rather than given",
            )),
        }
    }

    /// `response` with the `X-As-Of` header when a time was asked.
    pub fn echo(&self, mut response: Response) -> Response {
        if let Some(t) = self.0 {
            // Microseconds when the time has them (an input's receipt stamp can).
            if let Ok(v) = HeaderValue::from_str(&t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)) {
                response.headers_mut().insert(AS_OF_HEADER, v);
            }
        }
        response
    }
}

/// The SQL condition keeping the `forecasts` rows a reader sees (with `alias` before each
/// column, like `f.`): now, each fact's current version; as of t, the rows available then
/// and not yet replaced by a re-published run's other values (`lake::versions`).
pub fn forecast_rows(b: &mut Bindings, as_of: Option<DateTime<Utc>>, alias: &str) -> String {
    match as_of {
        None => format!("{alias}{CURRENT}"),
        Some(t) => {
            let t = b.time(t);
            format!("{alias}available_at <= {t} AND ({alias}{SUPERSEDED_AT} IS NULL OR {alias}{SUPERSEDED_AT} > {t})")
        }
    }
}

/// Parses `as_of` from the query pairs against the server's `now`.
pub fn parse(pairs: &[(String, String)], now: DateTime<Utc>) -> Result<AsOf, ApiError> {
    let mut given = pairs.iter().filter(|(k, _)| k == AS_OF).map(|(_, v)| v.trim()).filter(|v| !v.is_empty());
    let Some(v) = given.next() else { return Ok(AsOf(None)) };
    if given.next().is_some() {
        return Err(ApiError::bad_request("Repeated parameter: as_of", "as_of takes one value: give it once"));
    }
    let t = params::time_value(AS_OF, v)?;
    // The lake keeps microseconds: a finer time would admit what a stored one cannot say.
    let t = DateTime::from_timestamp_micros(t.timestamp_micros()).unwrap_or(t);
    if t > now {
        return Err(ApiError::bad_request(
            format!("Invalid as_of: {v} is in the future"),
            format!("as_of must not be after the server's time, {}", fmt_iso_utc(now)),
        ));
    }
    Ok(AsOf(Some(t)))
}

impl FromRequestParts<AppState> for AsOf {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        // Most requests ask about now: they skip a second parse of the query (the
        // endpoint's own parameters parse it once more).
        if !parts.uri.query().is_some_and(|q| q.contains(AS_OF)) {
            return Ok(AsOf(None));
        }
        let Query(pairs) = Query::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        parse(&pairs, state.now()).map_err(IntoResponse::into_response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[&str]) -> Vec<(String, String)> {
        v.iter().map(|v| (AS_OF.to_string(), v.to_string())).collect()
    }

    #[test]
    fn as_of_is_a_past_utc_time_given_once() {
        let now = crate::time::parse_utc("2026-11-28T14:00:00Z").unwrap();
        assert_eq!(parse(&[], now).unwrap(), AsOf(None));
        assert_eq!(parse(&pairs(&[" "]), now).unwrap(), AsOf(None));
        let t = parse(&pairs(&["2026-11-28T13:00:00Z"]), now).unwrap().0.unwrap();
        assert_eq!(fmt_iso_utc(t), "2026-11-28T13:00:00Z");
        assert_eq!(parse(&pairs(&["2026-11-28T14:00:00Z"]), now).unwrap().0, Some(now));
        let future = parse(&pairs(&["2026-11-28T14:00:01Z"]), now).unwrap_err();
        assert!(future.body.error.contains("in the future"), "{}", future.body.error);
        assert!(parse(&pairs(&["yesterday"]), now).unwrap_err().body.error.contains("Invalid as_of"));
        assert!(parse(&pairs(&["1800-01-01T00:00:00Z"]), now).unwrap_err().body.error.contains("out of range"));
        let twice = parse(&pairs(&["2026-11-28T13:00:00Z", "2026-11-28T12:00:00Z"]), now).unwrap_err();
        assert!(twice.body.error.contains("Repeated"));
        // Nanoseconds are cut to the lake's microseconds.
        let fine = parse(&pairs(&["2026-11-28T13:00:00.123456789Z"]), now).unwrap().0.unwrap();
        assert_eq!(fine.timestamp_subsec_nanos(), 123_456_000);
    }
}
