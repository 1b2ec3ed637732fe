//! Durations in the `[sources]` table, written as seconds (`60`, `0.5`): the one reader
//! every source's config struct uses, in its own module so that source modules need not
//! import `config` (which imports them).

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// A duration written as seconds (integer or fractional, positive or zero).
pub fn secs<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let v = f64::deserialize(d)?;
    Duration::try_from_secs_f64(v)
        .map_err(|_| serde::de::Error::custom(format!("expected a number of seconds >= 0, found {v}")))
}
