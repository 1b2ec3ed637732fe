//! Decoders for the real formats our data arrives in. One module per format; each is
//! pure (bytes in, typed records plus per-line errors out) and never panics on input.

pub mod cli;
pub mod dsm;
pub mod forecast_parquet;
pub mod forecast_rows;
pub mod limits;
pub mod metar;
pub mod metar_container;
pub mod mos;
pub mod number;
pub mod nws_hourly;
pub mod onemin;
pub mod open_meteo;
pub mod swar;
pub mod text;
pub mod types;
