//! Where a feed's bodies go: [`FeedSink`], the same input the ingest endpoint takes (a
//! format, its options, the raw bytes).
//!
//! In `serve` the sink is the [`LiveService`] (WAL → hot state → stream events → lake
//! flush), so a polled METAR travels exactly the path of a POSTed one. The
//! [`RecordingSink`] decodes with the real decoders and keeps what it was given, for tests
//! and for runs that should fetch without storing.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use thiserror::Error;

use crate::ingest::{Format, IngestOptions};
use crate::write::{LiveError, LiveService};

/// What the sink did with one body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stored {
    /// Records (lines, reports) read from the body.
    pub read: usize,
    /// Records decoded and taken in (duplicates of stored rows included: the lake's
    /// natural keys drop them at flush).
    pub accepted: usize,
    /// Records the decoder refused.
    pub rejected: usize,
    /// Stream events (new high / new low) the body caused.
    pub events: usize,
}

/// A body the sink did not take.
#[derive(Debug, Error)]
pub enum SinkError {
    /// Nothing in the body decoded; the reasons of the first refused records.
    #[error("no usable records: {0}")]
    Unusable(String),
    /// Storing failed (WAL, lake).
    #[error("store failed: {0}")]
    Store(String),
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
}

/// The live path: durable in the WAL, applied to the hot state and streamed when this
/// returns, in the lake after the next flush.
#[async_trait]
impl FeedSink for Arc<LiveService> {
    async fn ingest(&self, format: Format, opts: IngestOptions, body: Bytes) -> Result<Stored, SinkError> {
        match LiveService::ingest(self, format, opts, body.to_vec()).await {
            Ok(o) => Ok(Stored { read: o.read, accepted: o.accepted, rejected: o.rejected, events: o.events }),
            Err(LiveError::Unusable(errors)) => Err(SinkError::Unusable(first_reasons(&errors))),
            Err(e) => Err(SinkError::Store(e.to_string())),
        }
    }
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
}

impl RecordingSink {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every body taken so far, in order.
    pub fn taken(&self) -> Vec<Recorded> {
        self.taken.lock().unwrap_or_else(|p| p.into_inner()).clone()
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
        let stored =
            Stored { read: decoded.read, accepted: decoded.records.len(), rejected: decoded.errors.len(), events: 0 };
        self.taken.lock().unwrap_or_else(|p| p.into_inner()).push(Recorded { format, opts, body, stored });
        Ok(stored)
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
