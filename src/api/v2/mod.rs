//! v2 endpoints, one module each.

pub mod daily_extremes;
pub mod observations;
