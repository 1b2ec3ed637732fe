//! The probability of every settlement bracket (issue 32): traders trade brackets ("80–81 °F
//! today?"), so the answer they want is a distribution over whole settlement degrees,
//! calibrated and verified.
//!
//! - [`baselines`]: climatology, the best single source's Gaussian, the equal-weight
//!   fraction of sources: what the distribution must beat.
//! - [`distribution`]: a probability per whole value; brackets, mean, quantiles, the floor
//!   (ceiling) today's observations put under (over) it.
//! - [`history`]: the verified past days of the asked sources, a column per source.
//! - [`intraday`]: within the day, what is left above the running high (below the low),
//!   learned from past days at the same hour.
//! - [`kernel`]: a weighted sum of Gaussian kernels to whole values, binned.
//! - [`ladder`]: bracket ladders (`<=79,80-81,...,>=88`), parsed and around a median.
//! - [`markets`]: the settlement markets on the catalog's stations (data/markets.csv).
//! - [`method`]: forecasts and their sources' verified errors to a distribution.
//! - [`scores`]: ignorance, ranked probability score, Brier of a ladder, PIT, reliability.

pub mod baselines;
pub mod distribution;
pub mod history;
pub mod intraday;
pub mod kernel;
pub mod ladder;
pub mod markets;
pub mod method;
pub mod scores;

pub use distribution::Distribution;
pub use history::{History, Verified};
pub use ladder::{Bracket, Ladder};
pub use method::{Method, METHOD};

/// Why a distribution could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BracketsError {
    /// A caller's value is wrong (a ladder, a probability).
    #[error("{0}")]
    Invalid(String),
    /// Nothing to make it from (no forecast, no verified history).
    #[error("{0}")]
    NoInput(String),
}
