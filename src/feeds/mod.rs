//! Live feeds: wxlake fetching the public sources itself (issue 17), so `serve` keeps
//! current with no one posting data.
//!
//! A feed turns a source's responses into the input of an existing decoder and hands it
//! to a [`FeedSink`], which in `serve` is the live ingest path (WAL → hot state → stream →
//! lake), exactly what `POST /api/v2/ingest/{format}` uses. Settings come from the
//! `[sources]` table of the config file ([`config`]); every request goes through the one
//! polite client ([`http`]); [`runner`] polls each source on its interval.
//!
//! Sources so far: `awc_metar` (aviationweather.gov METAR JSON), `open_meteo` (model runs
//! from Open-Meteo's single-runs API), `mos` (MOS and NBM text bulletins).

pub mod awc_metar;
pub mod backoff;
pub mod breaker;
pub mod config;
pub mod http;
pub mod mos;
pub mod open_meteo;
pub mod runner;
pub mod sink;
pub mod source;

pub use config::FeedsConfig;
// The sources' settings, as `config::FeedsConfig` names them: through here, since each
// source module also reads `config` (its errors, the shared `secs` format).
pub use mos::MosConfig;
pub use open_meteo::OpenMeteoConfig;
pub use runner::{Feeds, SourceStatus};
pub use sink::{FeedSink, RecordingSink, Stored};
pub use source::{Archive, ArchiveUnit, PollReport, Source};
