//! Live feeds: wxlake fetching the public sources itself (issue 17), so `serve` keeps
//! current with no one posting data.
//!
//! A feed turns a source's responses into the input of an existing decoder and hands it
//! to a [`FeedSink`], which in `serve` is the live ingest path (WAL → hot state → stream →
//! lake), exactly what `POST /api/v2/ingest/{format}` uses. Settings come from the
//! `[sources]` table of the config file ([`config`]); every request goes through the one
//! polite client ([`http`]); [`runner`] polls each source on its interval and keeps each
//! source's [`status`] (counters, last outcome, late or not), which `wxlake feeds list`, the
//! status endpoint and `/metrics` show; [`backfill`] fetches a source's [`Archive`] into the
//! lake, resumably.
//!
//! Sources, each module holding its sources' `[sources.NAME]` settings too: `awc_metar`
//! (aviationweather.gov METAR JSON; a 15-day archive), `awc_cache` (its bulk cache file),
//! `iem_asos` (IEM METAR/SPECI/HF-METAR) and `iem_onemin` (IEM one-minute ASOS), both over
//! the IEM client of `iem`; `nws_products`, one module for the two product feeds `nws_cli`
//! and `nws_dsm` (api.weather.gov climate reports and daily summaries: the same product
//! API, differing only in the product code), `nws_hourly` (hourly forecasts), `open_meteo` (model runs from Open-Meteo's single-runs API), `mos` (MOS and
//! NBM text bulletins); the two model feeds keep their runs in a [`run_tracker`]. What a
//! source must remember across restarts is in its [`state_file`]. The production feeds
//! (`data/wxlake.live.toml`, which `serve --live` runs) and what a real deployment needs
//! are [`live_config`]. The client's settings
//! ([`client_config`]) and the seconds format ([`seconds`]) are leaves, so `config` may
//! name every source without a cycle.

pub mod awc_cache;
pub mod awc_metar;
pub mod backfill;
pub mod backoff;
pub mod breaker;
pub mod client_config;
pub mod config;
pub mod http;
pub mod iem;
pub mod iem_asos;
pub mod iem_onemin;
pub mod live_config;
pub mod mos;
pub mod nws_hourly;
pub mod nws_products;
pub mod open_meteo;
pub mod run_tracker;
pub mod runner;
pub mod seconds;
pub mod sink;
pub mod source;
pub mod state_file;
pub mod status;

pub use config::FeedsConfig;
pub use runner::{Feeds, SourceStatus};
pub use sink::{FeedSink, RecordingSink, Stored};
pub use source::{Archive, ArchiveUnit, PollReport, Source};
