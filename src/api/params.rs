//! Query-string parsing with precise 400s: which parameter, what was found, what is valid.

use std::collections::HashMap;

use chrono::{DateTime, Datelike, NaiveDate, Utc};

use super::error::ApiError;
use crate::catalog::{Catalog, Station};
use crate::time::parse_utc;

/// Years a time or date parameter may fall in. Query times become SQL timestamp literals,
/// which hold nanoseconds (years 1678 to 2261): a year outside that range, valid ISO 8601
/// as it is, was a 500. No weather data of the service is that old or that far ahead.
pub const SUPPORTED_YEARS: std::ops::RangeInclusive<i32> = 1900..=2199;

fn out_of_range(name: &str, s: &str) -> ApiError {
    ApiError::bad_request(
        format!("Invalid {name}: {s} is out of range"),
        format!("{name} must fall in the years {} to {}", SUPPORTED_YEARS.start(), SUPPORTED_YEARS.end()),
    )
}

/// An ISO 8601 UTC time given as parameter `name` (also for values read outside [`Params`],
/// such as a forecast `run`).
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
        self.get(name).map(|s| time_value(name, s)).transpose()
    }

    /// A `YYYY-MM-DD` date.
    pub fn date(&self, name: &str) -> Result<Option<NaiveDate>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(s) => match NaiveDate::parse_from_str(s, "%Y-%m-%d") {
                Ok(d) if SUPPORTED_YEARS.contains(&d.year()) => Ok(Some(d)),
                Ok(_) => Err(out_of_range(name, s)),
                Err(_) => Err(ApiError::bad_request(
                    format!("Invalid {name}: {s}"),
                    format!("{name} must be a date YYYY-MM-DD"),
                )),
            },
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
