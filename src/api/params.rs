//! Query parameters: each endpoint declares its own struct (serde `Deserialize` for the
//! request, utoipa `IntoParams` for the OpenAPI document, so a parameter's name and its
//! documentation are written once, on the field), and these helpers check a field's value
//! with a precise 400: which parameter, what was found, what is valid.
//!
//! Fields are raw strings (`Option<String>`): a value that does not parse must be answered
//! with the spec's JSON error naming it, never with a deserializer's message, and only when
//! the handler reads the parameter (a parameter of another mode is ignored), so the parsing
//! is done here, at the handler's call. A blank value counts as absent. Each field's
//! `#[param(value_type = ...)]` states what a client sends (an enum, a number, a date) and
//! `required = true` what it must send, since the field itself is always an optional string.
//! A parameter whose values are a fixed list is a [`ClosedSet`]: one enum parses it, names
//! the valid values in its 400 and lists them in the document.
//!
//! Every parameter is single-valued (lists are comma-separated in one value), so a name
//! the endpoint documents that comes twice is a 400: answering for the last one silently
//! (`station_code=KNYC&station_code=EGLC` answered for EGLC) hides the client's mistake.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned};
use utoipa::openapi::path::ParameterIn;
use utoipa::IntoParams;

use super::error::ApiError;
use crate::catalog::{Catalog, Station};
use crate::time::parse_utc;

/// Years a time or date parameter may fall in. Query times become SQL timestamp values,
/// which hold nanoseconds (years 1678 to 2261): a year outside that range, valid ISO 8601
/// as it is, was a 500. No weather data of the service is that old or that far ahead.
pub const SUPPORTED_YEARS: std::ops::RangeInclusive<i32> = 1900..=2199;

/// An endpoint's query struct, extracted from the query string. A name the struct
/// documents (its `IntoParams`) given twice is a 400; unknown names are ignored, as clients
/// of the original service expect (cache busters, tracking parameters).
#[derive(Debug, Clone, Default)]
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + IntoParams> FromRequestParts<S> for QueryParams<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Query(pairs) = Query::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        // The documented names are built (with their schemas) only when a name repeats at
        // all, which no well-formed request does: not on every request of a hot endpoint.
        let any_repeat = pairs.iter().enumerate().any(|(i, (k, _))| pairs[..i].iter().any(|(e, _)| e == k));
        if let Some(name) = any_repeat.then(|| repeated(&pairs, &documented_names::<T>())).flatten() {
            return Err(ApiError::bad_request(
                format!("Repeated parameter: {name}"),
                format!(
                    "{name} takes one value: give it once (lists such as stations=KNYC,EGLC are comma-separated \
                     in one value)"
                ),
            )
            .into_response());
        }
        let object = pairs.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect();
        serde_json::from_value(serde_json::Value::Object(object))
            .map(QueryParams)
            .map_err(|e| ApiError::bad_request("Invalid query string", e.to_string()).into_response())
    }
}

/// The query parameter names `T` documents.
fn documented_names<T: IntoParams>() -> Vec<String> {
    T::into_params(|| Some(ParameterIn::Query)).into_iter().map(|p| p.name).collect()
}

/// The first of `names` that `pairs` holds more than once.
fn repeated<'a>(pairs: &'a [(String, String)], names: &[String]) -> Option<&'a str> {
    pairs.iter().enumerate().find_map(|(i, (k, _))| {
        (names.contains(k) && pairs[..i].iter().any(|(earlier, _)| earlier == k)).then_some(k.as_str())
    })
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
    Catalog::global().lookup(code).ok_or_else(|| unknown_station(name, code))
}

/// The 400 of a code that names no catalog station, with where the list is: the
/// `stations.php` endpoint (any key) and the parameter's description in `/docs`.
pub fn unknown_station(name: &str, code: &str) -> ApiError {
    let (error, details) = crate::catalog::unknown_station_message(name, code);
    ApiError::bad_request(error, details)
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

/// A parameter whose valid values are a fixed list: a fieldless enum whose variants' serde
/// names are the values. Its derived `Deserialize` parses a value and names the valid ones;
/// its derived `ToSchema` lists the same names in the document (the field's `value_type`).
pub trait ClosedSet: DeserializeOwned + PartialEq {
    /// The value spelled exactly `s`, or else every valid name, in declaration order.
    fn from_name(s: &str) -> Result<Self, &'static [&'static str]> {
        Self::deserialize(StrDeserializer::<NoVariant>::new(s)).map_err(|NoVariant(valid)| valid)
    }

    /// Every valid name, in declaration order.
    fn values() -> &'static [&'static str] {
        Self::from_name("").err().unwrap_or_default()
    }

    /// This value's name.
    fn name(&self) -> &'static str {
        Self::values().iter().copied().find(|n| Self::from_name(n).ok().as_ref() == Some(self)).unwrap_or_default()
    }
}

/// serde's answer to a name that is none of an enum's variants: their names.
#[derive(Debug)]
struct NoVariant(&'static [&'static str]);

impl de::Error for NoVariant {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NoVariant(&[])
    }
    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
        NoVariant(expected)
    }
}

impl std::fmt::Display for NoVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not one of {}", self.0.join(", "))
    }
}

impl std::error::Error for NoVariant {}

/// A value of the closed set `T`.
pub fn choice<T: ClosedSet>(name: &str, raw: &Option<String>) -> Result<Option<T>, ApiError> {
    let Some(v) = value(raw) else { return Ok(None) };
    T::from_name(v).map(Some).map_err(|valid| {
        ApiError::bad_request(
            format!("Invalid {name}: {v}"),
            format!("valid values for {name} are {}", valid.join(", ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use axum::http::Request;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum AB {
        A,
        B,
    }
    impl ClosedSet for AB {}

    #[derive(Debug, Deserialize, PartialEq, utoipa::IntoParams)]
    struct Q {
        a: Option<String>,
        b: Option<String>,
    }

    async fn extract(uri: &str) -> Result<Q, Response> {
        let (mut parts, ()) = Request::get(uri).body(()).unwrap().into_parts();
        QueryParams::<Q>::from_request_parts(&mut parts, &()).await.map(|QueryParams(q)| q)
    }

    async fn error_of(uri: &str) -> (axum::http::StatusCode, serde_json::Value) {
        let resp = extract(uri).await.expect_err(uri);
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 16).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn a_repeated_parameter_is_a_400_and_unknown_names_are_ignored() {
        let q = extract("/x?a=1&c=3&c=4&b=%20&").await.unwrap();
        assert_eq!(q, Q { a: Some("1".into()), b: Some(" ".into()) });
        assert_eq!(value(&q.b), None, "blank is absent");
        assert_eq!(extract("/x").await.unwrap(), Q { a: None, b: None });
        for uri in ["/x?a=1&a=2", "/x?b=1&a=KNYC&a=EGLC", "/x?a=&a=2"] {
            let (status, body) = error_of(uri).await;
            assert_eq!(status, axum::http::StatusCode::BAD_REQUEST, "{uri}");
            assert_eq!(body["error"], "Repeated parameter: a", "{uri}");
            assert!(body["details"].as_str().unwrap().contains("comma-separated"), "{body}");
        }
    }

    #[test]
    fn values_are_checked_with_the_parameter_named() {
        let raw = Some(" KNYC' OR 1=1 ".to_string());
        let e = station("station_code", &raw).unwrap_err();
        assert_eq!(e.body.error, "Unknown station: KNYC' OR 1=1");
        assert!(e.body.details.contains("GET /api/v2/stations.php lists them"), "{}", e.body.details);
        let e = required("logic", &None, "Valid values are nws and wu").unwrap_err();
        assert_eq!(e.body.error, "Missing required parameter: logic");
        let e = choice::<AB>("mode", &Some("x".into())).unwrap_err();
        assert_eq!(
            (e.body.error.as_str(), e.body.details.as_str()),
            ("Invalid mode: x", "valid values for mode are a, b")
        );
        assert_eq!((AB::values(), AB::B.name()), (&["a", "b"][..], "b"));
        assert_eq!(choice::<AB>("mode", &Some(" b ".into())).unwrap(), Some(AB::B));
        assert!(choice::<AB>("mode", &Some("B".into())).is_err(), "the exact spelling");
        assert_eq!(date("date", &Some("2026-03-08".into())).unwrap(), NaiveDate::from_ymd_opt(2026, 3, 8));
        assert!(date("date", &Some("3000-01-01".into())).unwrap_err().body.error.ends_with("is out of range"));
        assert!(time("t", &Some("yesterday".into())).is_err());
    }
}
