//! Legacy v1 endpoints (spec part 9).

pub mod forecasts;
pub mod observations;
