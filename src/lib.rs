//! wxlake: a weather observation and forecast analytics engine.
//!
//! Real formats are decoded ([`decode`]) and ingested ([`ingest`]) into a partitioned
//! Parquet lake on object storage ([`lake`]), queried with DataFusion SQL. A server adds
//! the write path of live ingest ([`write`]: WAL, hot state, flush, compaction) and the
//! settlement-day rules that turn readings into each day's high and low ([`extremes`]). The station
//! catalog, units and day windows that every part shares live in [`catalog`], [`units`]
//! and [`time`]; the model schedules in [`models`]; the realistic generator in [`demo`];
//! the live feeds that poll the public sources in [`feeds`].

pub mod api;
pub mod catalog;
pub mod clock;
pub mod decode;
pub mod demo;
pub mod extremes;
pub mod feeds;
pub mod ingest;
pub mod jobs;
pub mod lake;
pub mod models;
pub mod stream;
pub mod time;
pub mod units;
pub mod write;
