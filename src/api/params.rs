//! Query-string parsing with precise 400s: which parameter, what was found, what is valid.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Utc};

use super::error::ApiError;
use crate::catalog::{Catalog, Station};
use crate::time::parse_utc;

/// The request's query parameters (last value wins for repeated names).
#[derive(Debug, Clone, Default)]
pub struct Params(pub HashMap<String, String>);

impl Params {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|s| s.trim()).filter(|s| !s.is_empty())
    }

    pub fn required(&self, name: &str, details: &str) -> Result<&str, ApiError> {
        self.get(name).ok_or_else(|| ApiError::missing(name, details))
    }

    /// A catalog station (case-insensitive); unknown codes are a 400 naming the code.
    pub fn station(&self, name: &str) -> Result<&'static Station, ApiError> {
        let code = self.required(name, "a station code of the catalog, e.g. KNYC")?;
        Catalog::global().lookup(code).ok_or_else(|| {
            ApiError::bad_request(
                format!("Unknown station: {code}"),
                "station_code must be one of the 70 catalog stations (see the stations list in the API docs)",
            )
        })
    }

    /// An ISO 8601 time.
    pub fn time(&self, name: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(s) => parse_utc(s).map(Some).ok_or_else(|| {
                ApiError::bad_request(
                    format!("Invalid {name}: {s}"),
                    format!("{name} must be an ISO 8601 UTC time, e.g. 2026-03-08T06:00:00Z"),
                )
            }),
        }
    }

    /// A `YYYY-MM-DD` date.
    pub fn date(&self, name: &str) -> Result<Option<NaiveDate>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(s) => NaiveDate::parse_from_str(s, "%Y-%m-%d").map(Some).map_err(|_| {
                ApiError::bad_request(format!("Invalid {name}: {s}"), format!("{name} must be a date YYYY-MM-DD"))
            }),
        }
    }

    /// One of a fixed set of values.
    pub fn choice<'a>(&'a self, name: &str, valid: &[&str]) -> Result<Option<&'a str>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) if valid.contains(&v) => Ok(Some(v)),
            Some(v) => Err(ApiError::bad_request(
                format!("Invalid {name}: {v}"),
                format!("valid values for {name} are {}", valid.join(", ")),
            )),
        }
    }
}
