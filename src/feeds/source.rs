//! What every feed is to the runner: a [`Source`] polled on an interval, and the
//! [`PollReport`] of one poll.

use std::time::Duration;

use async_trait::async_trait;
use thiserror::Error;

use super::http::FetchError;
use super::sink::{FeedSink, SinkError, Stored};

/// Why one request of a poll stored nothing.
#[derive(Debug, Error)]
pub enum FeedError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The body is not what the source sends (bad JSON, wrong shape). When a parser found
    /// it, `reason` ends with the parser's message and `source` keeps its error.
    #[error("{url}: malformed response: {reason}")]
    Malformed {
        url: String,
        reason: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    #[error(transparent)]
    Sink(#[from] SinkError),
}

impl FeedError {
    /// [`FeedError::Malformed`] found by a parser: `reason` (which ends with the parser's
    /// message), keeping its error as the source.
    pub fn malformed_by(
        url: impl Into<String>,
        reason: String,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        FeedError::Malformed { url: url.into(), reason, source: Some(Box::new(source)) }
    }

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
    /// Records read, accepted (new), duplicate (already held) and rejected by the sink,
    /// and stream events caused.
    pub read: usize,
    pub accepted: usize,
    pub duplicate: usize,
    pub rejected: usize,
    pub events: usize,
    /// The requests that failed.
    pub errors: Vec<FeedError>,
}

impl PollReport {
    /// Adds what the sink did with one body.
    pub fn add_stored(&mut self, stored: Stored) {
        let Stored { read, accepted, duplicate, rejected, events } = stored;
        self.read += read;
        self.accepted += accepted;
        self.duplicate += duplicate;
        self.rejected += rejected;
        self.events += events;
    }

    /// True when no request failed.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// A one-line account for logs and `feeds list`.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} request(s): {} accepted, {} duplicate, {} rejected, {} not modified, {} empty",
            self.requests, self.accepted, self.duplicate, self.rejected, self.not_modified, self.empty
        );
        if let Some(e) = self.errors.first() {
            s.push_str(&format!("; {} failed, first: {e}", self.errors.len()));
        }
        s
    }
}

/// Sums the reports of a poll's parts (models, stations, locations) into the poll's.
impl std::ops::AddAssign for PollReport {
    fn add_assign(&mut self, part: PollReport) {
        let PollReport { requests, not_modified, empty, bytes, read, accepted, duplicate, rejected, events, errors } =
            part;
        self.requests += requests;
        self.not_modified += not_modified;
        self.empty += empty;
        self.bytes += bytes;
        self.add_stored(Stored { read, accepted, duplicate, rejected, events });
        self.errors.extend(errors);
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
    /// The stations whose observations it brings (none for a source of forecasts or
    /// reports). A station some running source observes is expected to report: silent
    /// for longer than the hot state holds readings, it is still down (`api::health`).
    fn observed_stations(&self) -> Vec<String> {
        Vec::new()
    }
}

/// One resumable piece of a backfill: what one archive request covers (typically one
/// station's or one model's days `from..=to`). `feeds backfill` records each finished
/// unit, so a rerun after a kill skips what it already stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ArchiveUnit {
    /// What the unit is about: a station id, a model name, a product location.
    pub key: String,
    pub from: chrono::NaiveDate,
    pub to: chrono::NaiveDate,
}

impl ArchiveUnit {
    /// A stable text id, for the resume record.
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.key, self.from, self.to)
    }
}

/// A source that keeps an archive, so `wxlake feeds backfill SOURCE --from D --to D` can
/// fetch a past range through the same decoders and sink as the live polls.
#[async_trait]
pub trait Archive: Send + Sync {
    /// The source's name, as in `[sources.NAME]`.
    fn name(&self) -> &str;
    /// The units covering the days `from..=to` for `stations` (empty: the source's
    /// configured stations), in the order they should be fetched.
    fn units(&self, from: chrono::NaiveDate, to: chrono::NaiveDate, stations: &[String]) -> Vec<ArchiveUnit>;
    /// Fetches one unit and hands it to `sink`; failures are in the report.
    async fn fetch(&self, unit: &ArchiveUnit, sink: &dyn FeedSink) -> PollReport;
    /// The first and last day whose derived rows a backfill of `from..=to` can change,
    /// by the key of each job (trading date, run date). By default the days around the
    /// UTC days fetched: a UTC day's readings fall in the trading day before it west of
    /// UTC and in the one after it east of UTC.
    fn days_touched(&self, from: chrono::NaiveDate, to: chrono::NaiveDate) -> (chrono::NaiveDate, chrono::NaiveDate) {
        (from - chrono::Duration::days(1), to + chrono::Duration::days(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_sum_field_by_field_with_their_errors() {
        let mut poll = PollReport { requests: 1, bytes: 10, ..PollReport::default() };
        poll.add_stored(Stored { read: 3, accepted: 2, duplicate: 5, rejected: 1, events: 1 });
        let part = PollReport {
            requests: 2,
            not_modified: 1,
            empty: 1,
            bytes: 5,
            read: 4,
            accepted: 4,
            duplicate: 1,
            rejected: 0,
            events: 2,
            errors: vec![FeedError::Malformed { url: "u".into(), reason: "r".into(), source: None }],
        };
        poll += part;
        assert_eq!((poll.requests, poll.not_modified, poll.empty, poll.bytes), (3, 1, 1, 15), "{poll:?}");
        assert_eq!((poll.read, poll.accepted, poll.duplicate, poll.rejected, poll.events), (7, 6, 6, 1, 3));
        assert_eq!(poll.errors.len(), 1);
    }
}
