//! Where a feed's bodies go: [`FeedSink`], the same input the ingest endpoint takes (a
//! format, its options, the raw bytes).
//!
//! In `serve` the sink is the [`WriteService`] (WAL → hot state → stream events → lake
//! flush), so a polled METAR travels exactly the path of a POSTed one. The
//! [`RecordingSink`] decodes with the real decoders and keeps what it was given, for tests
//! and for runs that should fetch without storing.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use thiserror::Error;

use crate::ingest::{Format, IngestOptions};
use crate::write::{WriteError, WriteService};

/// What the sink did with one body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stored {
    /// Records (lines, reports) read from the body.
    pub read: usize,
    /// Records new to the service, taken in (forecast rows: every decoded row; the lake's
    /// natural keys drop stored ones at flush).
    pub accepted: usize,
    /// Records the service already held (same natural key: overlapping poll windows, a
    /// restart): nothing stored, nothing streamed.
    pub duplicate: usize,
    /// Records the decoder refused.
    pub rejected: usize,
    /// Stream events (new high / new low) the body caused.
    pub events: usize,
}

impl Stored {
    /// Records the service holds after this body, new or held already: a model run is
    /// there when this is not zero, whoever stored it first.
    pub fn held(&self) -> usize {
        self.accepted + self.duplicate
    }
}

/// Sums what the sink did with several bodies.
impl std::ops::AddAssign for Stored {
    fn add_assign(&mut self, other: Stored) {
        self.read += other.read;
        self.accepted += other.accepted;
        self.duplicate += other.duplicate;
        self.rejected += other.rejected;
        self.events += other.events;
    }
}

/// A body the sink did not take.
#[derive(Debug, Error)]
pub enum SinkError {
    /// Nothing in the body decoded; the reasons of the first refused records.
    #[error("no usable records: {0}")]
    Unusable(String),
    /// Storing failed (WAL, lake).
    #[error("store failed: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl SinkError {
    /// A stable name per kind, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            SinkError::Unusable(_) => "unusable",
            SinkError::Store(_) => "store",
        }
    }
}

/// Takes the bodies the feeds fetch.
#[async_trait]
pub trait FeedSink: Send + Sync {
    async fn ingest(&self, format: Format, opts: IngestOptions, body: Bytes) -> Result<Stored, SinkError>;

    /// The runs of `model` already stored with a run time at or after `since`, as
    /// (location, run time): the model feeds skip them, so a run is fetched once even
    /// across restarts. A sink that cannot tell answers none (each run is then fetched once
    /// per process, and the lake's natural keys still store it once).
    async fn stored_runs(&self, model: &str, since: DateTime<Utc>) -> Result<Vec<(String, DateTime<Utc>)>, SinkError> {
        let _ = (model, since);
        Ok(Vec::new())
    }
}

/// The live path: durable in the WAL, applied to the hot state and streamed when this
/// returns, in the lake after the next flush.
#[async_trait]
impl FeedSink for Arc<WriteService> {
    async fn ingest(&self, format: Format, opts: IngestOptions, body: Bytes) -> Result<Stored, SinkError> {
        match WriteService::ingest(self, format, opts, body).await {
            Ok(o) => Ok(Stored {
                read: o.read,
                accepted: o.accepted,
                duplicate: o.duplicate,
                rejected: o.rejected,
                events: o.events,
            }),
            Err(WriteError::Unusable(errors)) => Err(SinkError::Unusable(first_reasons(&errors))),
            Err(e) => Err(SinkError::Store(Box::new(e))),
        }
    }

    /// From the lake. Inputs logged but not yet flushed are not seen: right after a restart
    /// a run still in the WAL may be fetched once more, and stores nothing new.
    async fn stored_runs(&self, model: &str, since: DateTime<Utc>) -> Result<Vec<(String, DateTime<Utc>)>, SinkError> {
        stored_runs_in(&self.ctx, model, since).await.map_err(|e| SinkError::Store(Box::new(e)))
    }
}

/// `(location_name, run_time)` of `model`'s stored runs since `since`, read with the
/// partition columns first so only the run dates concerned are listed.
async fn stored_runs_in(
    ctx: &datafusion::prelude::SessionContext,
    model: &str,
    since: DateTime<Utc>,
) -> Result<Vec<(String, DateTime<Utc>)>, datafusion::error::DataFusionError> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::TimestampMicrosecondType;
    use datafusion::common::ScalarValue;
    let sql = "SELECT DISTINCT location_name, run_time FROM forecasts \
               WHERE CAST(model AS VARCHAR) = $1 AND CAST(run_date AS VARCHAR) >= $2";
    let params =
        vec![ScalarValue::Utf8(Some(model.to_string())), ScalarValue::Utf8(Some(since.format("%Y-%m-%d").to_string()))];
    let batches = ctx.sql(sql).await?.with_param_values(params)?.collect().await?;
    let mut out = Vec::new();
    for b in &batches {
        let names = datafusion::arrow::compute::cast(b.column(0), &datafusion::arrow::datatypes::DataType::Utf8)?;
        let names = names.as_string::<i32>();
        let times = b.column(1).as_primitive::<TimestampMicrosecondType>();
        for i in 0..b.num_rows() {
            if names.is_null(i) || times.is_null(i) {
                continue;
            }
            if let Some(t) = DateTime::from_timestamp_micros(times.value(i)).filter(|t| *t >= since) {
                out.push((names.value(i).to_string(), t));
            }
        }
    }
    Ok(out)
}

fn first_reasons(errors: &[crate::decode::types::LineError]) -> String {
    if errors.is_empty() {
        return "the body decoded to nothing".to_string();
    }
    errors.iter().take(3).map(|e| format!("line {}: {}", e.line, e.reason)).collect::<Vec<_>>().join("; ")
}

/// One body a [`RecordingSink`] took.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub format: Format,
    pub opts: IngestOptions,
    pub body: Bytes,
    pub stored: Stored,
}

/// Decodes each body with the real decoder and keeps it; stores nothing.
#[derive(Debug, Default)]
pub struct RecordingSink {
    taken: Mutex<Vec<Recorded>>,
    /// (model, location, run time) of every forecast row taken.
    runs: Mutex<std::collections::BTreeSet<(String, String, DateTime<Utc>)>>,
}

impl RecordingSink {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every body taken so far, in order.
    pub fn taken(&self) -> Vec<Recorded> {
        self.taken.lock().clone()
    }

    /// Records accepted over all bodies.
    pub fn accepted(&self) -> usize {
        self.taken().iter().map(|r| r.stored.accepted).sum()
    }
}

#[async_trait]
impl FeedSink for RecordingSink {
    async fn ingest(&self, format: Format, opts: IngestOptions, body: Bytes) -> Result<Stored, SinkError> {
        let decoded = format.decode(&body, &opts);
        if decoded.records.is_empty() {
            return Err(SinkError::Unusable(first_reasons(&decoded.errors)));
        }
        // It keeps no records, so it cannot tell a duplicate: everything decoded counts.
        let stored = Stored {
            read: decoded.read,
            accepted: decoded.records.len(),
            rejected: decoded.errors.len(),
            ..Stored::default()
        };
        if let crate::ingest::Records::Forecasts(rows) = &decoded.records {
            let mut runs = self.runs.lock();
            runs.extend(rows.iter().map(|r| (r.model.to_string(), r.location_name.to_string(), r.run_time)));
        }
        self.taken.lock().push(Recorded { format, opts, body, stored });
        Ok(stored)
    }

    async fn stored_runs(&self, model: &str, since: DateTime<Utc>) -> Result<Vec<(String, DateTime<Utc>)>, SinkError> {
        let runs = self.runs.lock();
        Ok(runs.iter().filter(|(m, _, t)| m == model && *t >= since).map(|(_, l, t)| (l.clone(), *t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AWC: &[u8] = include_bytes!("../../data/real/metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json");

    #[tokio::test]
    async fn the_recording_sink_decodes_with_the_real_decoder() {
        let sink = RecordingSink::new();
        let stored = sink.ingest(Format::Metar, IngestOptions::default(), Bytes::from_static(AWC)).await.unwrap();
        assert_eq!(stored.accepted, 9, "{stored:?}");
        assert_eq!(stored.rejected, 0);
        assert_eq!(sink.taken().len(), 1);
        let err = sink.ingest(Format::Metar, IngestOptions::default(), Bytes::from_static(b"[]")).await.unwrap_err();
        assert_eq!(err.kind(), "unusable");
        assert_eq!(sink.taken().len(), 1, "a refused body is not recorded");
    }
}
