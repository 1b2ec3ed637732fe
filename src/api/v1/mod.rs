//! Legacy v1 endpoints (spec part 9).

pub mod observations;
