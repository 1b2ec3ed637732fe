//! The one way durations are written in the `[sources]` table: seconds, integer or
//! fractional (`60`, `0.5`). Its own module so that each source's config struct (kept in
//! the source's module) and [`super::config`] read durations alike without importing
//! each other.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// A duration written as seconds (integer or fractional, positive or zero).
pub fn secs<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let v = f64::deserialize(d)?;
    Duration::try_from_secs_f64(v)
        .map_err(|_| serde::de::Error::custom(format!("expected a number of seconds >= 0, found {v}")))
}
