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
//! - [`trading_day`]: a station's trading-day high and low as the service answers them,
//!   for every front door.
//! - [`lake`]: the Parquet lake (schemas, writer, reads, compaction, query session).
//! - [`jobs`]: the SQL jobs that compute derived tables.
//! - [`brackets`]: the probability of every settlement value and bracket, and its scores.
//! - [`bracket_odds`]: one station-day's bracket odds as the service answers them at a time
//!   (the REST endpoint and the stream event format it).
//! - [`access`]: who may use the service: API keys, tiers and rate limits, for every
//!   front door (REST, the PostgreSQL wire, Flight SQL, the stream).
//! - [`api`]: the REST API (and the stream's same-origin relay).
//! - [`dashboard`]: the browser page and its assets, served by the REST router.
//! - [`stream_bridge`]: where the stream meets the write path (the publisher, the event
//!   payloads).
//! - [`sqlwire`]: analyst SQL over the PostgreSQL wire protocol and Arrow Flight SQL.
//! - [`cluster`]: the same SQL distributed on an embedded Ballista scheduler and executors.
//! - [`stream`]: the push stream (event log, hub, SSE, TLS).
//! - [`feeds`]: live feeds from the public sources.
//! - [`demo`]: the realistic generator.
//! - [`catalog`], [`models`], [`time`], [`units`], [`clock`], [`error_chain`], [`echo`],
//!   [`durable`], [`net`]: what every part shares.

pub mod access;
pub mod api;
pub mod bracket_odds;
pub mod brackets;
pub mod catalog;
pub mod clock;
pub mod cluster;
pub mod dashboard;
pub mod decode;
pub mod demo;
pub mod durable;
pub mod echo;
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
pub mod stream_bridge;
pub mod time;
pub mod trading_day;
pub mod units;
pub mod write;
