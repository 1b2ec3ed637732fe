//! The server's write path (live ingest): decode → write-ahead log (durable: only then is
//! a request acknowledged) → hot state → background flush to the lake → WAL trim. Batch
//! ingest (`wxlake ingest`, the demo loader) writes to the lake directly through
//! [`crate::ingest`]; this module is what a running server adds around it, as InfluxDB 3
//! keeps its WAL and write buffer apart from the rest.
//!
//! - [`wal`]: the write-ahead log (record format, segments, group commit, recovery).
//! - [`service`]: [`WriteService`], which owns the WAL, the pending inputs (decoded once),
//!   the hot state,
//!   the server's query session, table versions and the new-data broadcast.
//! - [`hot`]: the in-memory state of every station (live extremes, recent observations
//!   and reports).
//! - [`background`]: the periodic flush, hot-state pruning and hourly compaction.
//! - [`probe`]: whether the WAL and the lake can do their job now (`/healthz`), and what
//!   kind of storage failure an error is.
//!
//! The flush follows "persist, then clear exactly what was persisted": it snapshots the
//! pending inputs, writes them to the lake, then removes those inputs (by sequence number)
//! from memory and releases them to the WAL, which trims only a run of released records
//! with no unreleased one among them ([`wal::Wal::release`]). Inputs reach `pending` out of
//! sequence order under group commit, so nothing here may assume "everything below the
//! newest stored seq is stored". A record is always in the lake, the WAL or both; a crash
//! between the two replays records the lake already has, which idempotent ingest turns
//! into duplicates counted, not rows added. On start the hot state is rebuilt from the
//! lake's recent days and then the WAL.
//!
//! Every record the hot state applies is handed, in apply order, to the stream publisher
//! attached with [`WriteService::attach_publisher`] through a bounded channel that the
//! ingest waits on when full, and an ingest is acknowledged only once the publisher has
//! logged its events: a burst slows the acknowledgement down, it never loses an event, and
//! an acknowledged input's events are in the event log (which gives each its id) even if
//! the process dies right after.

pub mod background;
pub mod hot;
pub mod probe;
pub mod service;
pub mod wal;

pub use service::{Notice, WriteError, WriteOutcome, WriteService};
