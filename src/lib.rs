//! wxlake: a weather observation and forecast analytics engine.
//!
//! Real formats are decoded ([`decode`]) and ingested ([`ingest`]) into a partitioned
//! Parquet lake on object storage ([`lake`]), queried with DataFusion SQL. The station
//! catalog, units and day windows that every part shares live in [`catalog`], [`units`]
//! and [`time`]; the model schedules in [`models`]; the realistic generator in [`demo`].

pub mod api;
pub mod catalog;
pub mod clock;
pub mod decode;
pub mod demo;
pub mod ingest;
pub mod jobs;
pub mod lake;
pub mod live;
pub mod models;
pub mod stream;
pub mod time;
pub mod units;
