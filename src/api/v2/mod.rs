//! v2 endpoints, one module each.

pub mod bracket_accuracy;
pub mod brackets;
pub mod daily_extremes;
pub mod forecasts;
pub mod model_accuracy;
pub mod nearby;
pub mod nws_forecasts;
pub mod observations;
pub mod pacing;
pub mod precipitation;
pub mod stations;
pub mod status;
