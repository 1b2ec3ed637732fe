//! wxlake: a weather observation and forecast analytics engine.
//!
//! Real formats are decoded and ingested into a partitioned Parquet lake on object
//! storage, queried with DataFusion SQL; a server adds live ingest, the settlement-day
//! extremes, the REST API and the push stream. The modules (README "Where things are"):
//!
//! - [`decode`]: one pure decoder per real format.
//! - [`ingest`]: batch ingest (format dispatch, summaries, storing).
//! - [`write`]: the server's write path (WAL, hot state, flush, background tasks).
//! - [`extremes`]: the settlement-day rules behind each day's high and low.
//! - [`lake`]: the Parquet lake (schemas, writer, reads, compaction, query session).
//! - [`jobs`]: the SQL jobs that compute derived tables.
//! - [`api`]: the REST API, keys and limits, and the stream's server glue.
//! - [`sqlwire`]: analyst SQL over the PostgreSQL wire protocol and Arrow Flight SQL.
//! - [`cluster`]: the same SQL distributed on an embedded Ballista scheduler and executors.
//! - [`stream`]: the push stream (event log, hub, SSE, TLS).
//! - [`feeds`]: live feeds from the public sources.
//! - [`demo`]: the realistic generator.
//! - [`catalog`], [`models`], [`time`], [`units`], [`clock`], [`error_chain`], [`durable`],
//!   [`net`]: what every part shares.

pub mod api;
pub mod catalog;
pub mod clock;
pub mod cluster;
pub mod decode;
pub mod demo;
pub mod durable;
pub mod error_chain;
pub mod extremes;
pub mod feeds;
pub mod ingest;
pub mod jobs;
pub mod lake;
pub mod models;
pub mod net;
pub mod sqlwire;
pub mod stream;
pub mod time;
pub mod units;
pub mod write;
