//! Decoders for the real formats our data arrives in. One module per format; each is
//! pure (bytes in, typed records plus per-line errors out) and never panics on input.

pub mod climate_report;
pub mod daily_forecasts;
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
pub mod timestamp;
pub mod types;

/// Deterministic pseudo-random input for the decoders' robustness tests.
#[cfg(test)]
pub(crate) mod testrand {
    /// An xorshift generator: the same seed gives the same sequence on every run.
    pub fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// `n` pseudo-random bytes from `seed`.
    pub fn bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut next = xorshift(seed);
        (0..n).map(|_| (next() >> 24) as u8).collect()
    }
}
