//! Query parameters: each endpoint declares its own struct (serde `Deserialize` for the
//! request, utoipa `IntoParams` for the OpenAPI document, so a parameter's name and its
//! documentation are written once, on the field), and these helpers check a field's value
//! with a precise 400: which parameter, what was found, what is valid.
//!
//! Fields are raw strings (`Option<String>`): a value that does not parse must be answered
//! with the spec's JSON error naming it, never with a deserializer's message, so the
//! parsing is done here and not by serde. A blank value counts as absent. Each field's
//! `#[param(value_type = ...)]` states what a client sends (an enum, a number, a date) and
//! `required = true` what it must send, since the field itself is always an optional string.

use std::collections::HashMap;

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::catalog::{Catalog, Station};
use crate::time::parse_utc;

/// Years a time or date parameter may fall in. Query times become SQL timestamp values,
/// which hold nanoseconds (years 1678 to 2261): a year outside that range, valid ISO 8601
/// as it is, was a 500. No weather data of the service is that old or that far ahead.
pub const SUPPORTED_YEARS: std::ops::RangeInclusive<i32> = 1900..=2199;

/// An endpoint's query struct, extracted from the query string. A repeated name keeps its
/// last value and unknown names are ignored, as clients of the original service expect.
#[derive(Debug, Clone, Default)]
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Query(map) = Query::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let object = map.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect();
        serde_json::from_value(serde_json::Value::Object(object))
            .map(QueryParams)
            .map_err(|e| ApiError::bad_request("Invalid query string", e.to_string()).into_response())
    }
}

fn out_of_range(name: &str, s: &str) -> ApiError {
    ApiError::bad_request(
        format!("Invalid {name}: {s} is out of range"),
        format!("{name} must fall in the years {} to {}", SUPPORTED_YEARS.start(), SUPPORTED_YEARS.end()),
    )
}

/// An ISO 8601 UTC time given as parameter `name` (also for values that are not only a
/// time, such as a forecast `run`).
pub fn time_value(name: &str, s: &str) -> Result<DateTime<Utc>, ApiError> {
    match parse_utc(s) {
        Some(t) if SUPPORTED_YEARS.contains(&t.year()) => Ok(t),
        Some(_) => Err(out_of_range(name, s)),
        None => Err(ApiError::bad_request(
            format!("Invalid {name}: {s}"),
            format!("{name} must be an ISO 8601 UTC time, e.g. 2026-03-08T06:00:00Z"),
        )),
    }
}

/// A field's value, trimmed; `None` when absent or blank.
pub fn value(raw: &Option<String>) -> Option<&str> {
    raw.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// A required parameter `name`; missing is spec 7's "Missing required parameter" with `details`.
pub fn required<'a>(name: &str, raw: &'a Option<String>, details: &str) -> Result<&'a str, ApiError> {
    value(raw).ok_or_else(|| ApiError::missing(name, details))
}

/// A catalog station (case-insensitive), required; unknown codes are a 400 naming the code.
pub fn station(name: &str, raw: &Option<String>) -> Result<&'static Station, ApiError> {
    let code = required(name, raw, "a station code of the catalog, e.g. KNYC")?;
    Catalog::global().lookup(code).ok_or_else(|| {
        ApiError::bad_request(
            format!("Unknown station: {code}"),
            "station_code must be one of the 70 catalog stations (see the stations list in the API docs)",
        )
    })
}

/// An ISO 8601 time.
pub fn time(name: &str, raw: &Option<String>) -> Result<Option<DateTime<Utc>>, ApiError> {
    value(raw).map(|s| time_value(name, s)).transpose()
}

/// A `YYYY-MM-DD` date.
pub fn date(name: &str, raw: &Option<String>) -> Result<Option<NaiveDate>, ApiError> {
    match value(raw) {
        None => Ok(None),
        Some(s) => match NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            Ok(d) if SUPPORTED_YEARS.contains(&d.year()) => Ok(Some(d)),
            Ok(_) => Err(out_of_range(name, s)),
            Err(_) => {
                Err(ApiError::bad_request(format!("Invalid {name}: {s}"), format!("{name} must be a date YYYY-MM-DD")))
            }
        },
    }
}

/// One of a fixed set of values.
pub fn choice<'a>(name: &str, raw: &'a Option<String>, valid: &[&str]) -> Result<Option<&'a str>, ApiError> {
    match value(raw) {
        None => Ok(None),
        Some(v) if valid.contains(&v) => Ok(Some(v)),
        Some(v) => Err(ApiError::bad_request(
            format!("Invalid {name}: {v}"),
            format!("valid values for {name} are {}", valid.join(", ")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::Request;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Q {
        a: Option<String>,
        b: Option<String>,
    }

    async fn extract(uri: &str) -> Result<Q, Response> {
        let (mut parts, ()) = Request::get(uri).body(()).unwrap().into_parts();
        QueryParams::<Q>::from_request_parts(&mut parts, &()).await.map(|QueryParams(q)| q)
    }

    #[tokio::test]
    async fn last_value_wins_and_unknown_names_are_ignored() {
        let q = extract("/x?a=1&a=2&c=3&b=%20&").await.unwrap();
        assert_eq!(q, Q { a: Some("2".into()), b: Some(" ".into()) });
        assert_eq!(value(&q.b), None, "blank is absent");
        assert_eq!(extract("/x").await.unwrap(), Q { a: None, b: None });
    }

    #[test]
    fn values_are_checked_with_the_parameter_named() {
        let raw = Some(" KNYC' OR 1=1 ".to_string());
        let e = station("station_code", &raw).unwrap_err();
        assert_eq!(e.body.error, "Unknown station: KNYC' OR 1=1");
        let e = required("logic", &None, "Valid values are nws and wu").unwrap_err();
        assert_eq!(e.body.error, "Missing required parameter: logic");
        let e = choice("mode", &Some("x".into()), &["a", "b"]).unwrap_err();
        assert_eq!(
            (e.body.error.as_str(), e.body.details.as_str()),
            ("Invalid mode: x", "valid values for mode are a, b")
        );
        assert_eq!(date("date", &Some("2026-03-08".into())).unwrap(), NaiveDate::from_ymd_opt(2026, 3, 8));
        assert!(date("date", &Some("3000-01-01".into())).unwrap_err().body.error.ends_with("is out of range"));
        assert!(time("t", &Some("yesterday".into())).is_err());
    }
}
