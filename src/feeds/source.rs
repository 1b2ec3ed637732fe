//! What every feed is to the runner: a [`Source`] polled on an interval, and the
//! [`PollReport`] of one poll.

use std::time::Duration;

use async_trait::async_trait;
use thiserror::Error;

use super::http::FetchError;
use super::sink::{FeedSink, SinkError};

/// Why one request of a poll stored nothing.
#[derive(Debug, Error)]
pub enum FeedError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The body is not what the source sends (bad JSON, wrong shape).
    #[error("{url}: malformed response: {reason}")]
    Malformed { url: String, reason: String },
    #[error(transparent)]
    Sink(#[from] SinkError),
}

impl FeedError {
    /// A stable name per kind, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            FeedError::Fetch(e) => e.kind(),
            FeedError::Malformed { .. } => "malformed",
            FeedError::Sink(e) => e.kind(),
        }
    }
}

/// What one poll of a source did, summed over its requests.
#[derive(Debug, Default)]
pub struct PollReport {
    /// Requests the poll made (batches), whatever their outcome.
    pub requests: usize,
    /// Answered 304: nothing new.
    pub not_modified: usize,
    /// Answered with no reports.
    pub empty: usize,
    /// Body bytes received.
    pub bytes: usize,
    /// Records read, accepted and rejected by the sink, and stream events caused.
    pub read: usize,
    pub accepted: usize,
    pub rejected: usize,
    pub events: usize,
    /// The requests that failed.
    pub errors: Vec<FeedError>,
}

impl PollReport {
    /// True when no request failed.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// A one-line account for logs and `feeds list`.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} request(s): {} accepted, {} rejected, {} not modified, {} empty",
            self.requests, self.accepted, self.rejected, self.not_modified, self.empty
        );
        if let Some(e) = self.errors.first() {
            s.push_str(&format!("; {} failed, first: {e}", self.errors.len()));
        }
        s
    }
}

/// One feed.
#[async_trait]
pub trait Source: Send + Sync {
    /// The name of its `[sources.NAME]` table.
    fn name(&self) -> &str;
    /// Time between the starts of two polls.
    fn interval(&self) -> Duration;
    /// Fetches what is new and hands it to `sink`. Never fails as a whole: each failed
    /// request is in the report, and the others still run.
    async fn poll(&self, sink: &dyn FeedSink) -> PollReport;
}
