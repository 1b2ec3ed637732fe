//! What the runner knows about each source: counters since start, the last poll, the last
//! success and error, and whether the source is late. One [`SourceStatus`] per source feeds
//! `wxlake feeds list`, `GET /api/v2/status` and `/metrics`, so they always agree.
//!
//! A running `serve` or `feeds run` writes every source's status to
//! `<state dir>/feeds/status.json` after each poll ([`StatusFile`]), replacing the file
//! atomically (write a temporary file, then rename): `wxlake feeds list`, a separate
//! process, reads it back and never sees half a file.
//!
//! Late rule: a source is late when it has had no fully successful poll for more than
//! [`LATE_AFTER_INTERVALS`] of its intervals (counted from its last success, or from when the
//! runner started watching it). One failed poll is ordinary (the next one's overlapping
//! window catches up); three in a row means data is not arriving.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::source::PollReport;

/// Intervals without a successful poll after which a source is late.
pub const LATE_AFTER_INTERVALS: u32 = 3;

/// The status file under the state directory.
pub const STATUS_FILE: &str = "feeds/status.json";

/// One source as `feeds list` and the status endpoint show it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct SourceStatus {
    pub name: String,
    pub interval_secs: f64,
    /// When the runner began watching the source (the late rule counts from here until a
    /// first success).
    pub since: DateTime<Utc>,
    /// Polls finished, and those with at least one failed request.
    pub polls: u64,
    pub failed_polls: u64,
    /// Requests made (all outcomes), body bytes received, rows the sink accepted (new to
    /// the service) and rows it already held (overlapping windows, restarts).
    pub requests: u64,
    pub bytes: u64,
    pub rows_stored: u64,
    #[serde(default)]
    pub rows_duplicate: u64,
    /// Failed requests by kind (`timeout`, `server_error`, `malformed`, ...).
    pub errors: BTreeMap<String, u64>,
    /// When the next poll starts (None once stopped).
    pub next_poll: Option<DateTime<Utc>>,
    /// The end of the last poll in which every request succeeded.
    pub last_success: Option<DateTime<Utc>>,
    /// The last failed request.
    pub last_error: Option<LastError>,
    pub last: Option<LastPoll>,
    /// No success for more than [`LATE_AFTER_INTERVALS`] intervals (as of the last update;
    /// [`SourceStatus::at`] recomputes it for another moment).
    pub late: bool,
}

/// The last failed request of a source.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct LastError {
    pub at: DateTime<Utc>,
    pub kind: String,
    pub message: String,
}

/// The outcome of a source's latest poll.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct LastPoll {
    pub finished: DateTime<Utc>,
    pub duration_ms: u64,
    pub ok: bool,
    pub requests: usize,
    pub accepted: usize,
    /// Rows already held: not stored again, not streamed.
    #[serde(default)]
    pub duplicate: usize,
    pub rejected: usize,
    pub not_modified: usize,
    /// `kind: message` of each failed request.
    pub errors: Vec<String>,
}

impl LastPoll {
    pub(crate) fn of(report: &PollReport, finished: DateTime<Utc>, took: Duration) -> Self {
        LastPoll {
            finished,
            duration_ms: took.as_millis().try_into().unwrap_or(u64::MAX),
            ok: report.is_ok(),
            requests: report.requests,
            accepted: report.accepted,
            duplicate: report.duplicate,
            rejected: report.rejected,
            not_modified: report.not_modified,
            errors: report.errors.iter().map(|e| format!("{}: {e}", e.kind())).collect(),
        }
    }
}

impl SourceStatus {
    /// A source not polled yet, watched from `since`.
    pub fn new(name: &str, interval: Duration, since: DateTime<Utc>) -> Self {
        SourceStatus {
            name: name.to_string(),
            interval_secs: interval.as_secs_f64(),
            since,
            polls: 0,
            failed_polls: 0,
            requests: 0,
            bytes: 0,
            rows_stored: 0,
            rows_duplicate: 0,
            errors: BTreeMap::new(),
            next_poll: None,
            last_success: None,
            last_error: None,
            last: None,
            late: false,
        }
    }

    /// Adds one finished poll.
    pub fn record(&mut self, report: &PollReport, finished: DateTime<Utc>, took: Duration) {
        self.polls += 1;
        self.requests += report.requests as u64;
        self.bytes += report.bytes as u64;
        self.rows_stored += report.accepted as u64;
        self.rows_duplicate += report.duplicate as u64;
        for e in &report.errors {
            *self.errors.entry(e.kind().to_string()).or_default() += 1;
        }
        if let Some(e) = report.errors.last() {
            self.last_error = Some(LastError { at: finished, kind: e.kind().to_string(), message: e.to_string() });
        }
        if report.is_ok() {
            self.last_success = Some(finished);
        } else {
            self.failed_polls += 1;
        }
        self.last = Some(LastPoll::of(report, finished, took));
        self.late = self.is_late(finished);
    }

    /// How long the source may go without a success before it is late.
    pub fn late_after(&self) -> chrono::Duration {
        let secs = self.interval_secs * f64::from(LATE_AFTER_INTERVALS);
        chrono::Duration::milliseconds((secs * 1000.0).min(i64::MAX as f64 / 2.0) as i64)
    }

    /// Whether the source is late at `now` (see the module docs).
    pub fn is_late(&self, now: DateTime<Utc>) -> bool {
        let from = self.last_success.unwrap_or(self.since);
        now - from > self.late_after()
    }

    /// This status with `late` recomputed for `now`.
    pub fn at(mut self, now: DateTime<Utc>) -> Self {
        self.late = self.is_late(now);
        self
    }
}

/// The status file could not be written or read.
#[derive(Debug, Error)]
pub enum StatusFileError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a feeds status file: {source}")]
    Malformed {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// What the status file holds: who wrote it, when, and every source's status.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StatusSnapshot {
    /// The process that runs the feeds (`serve` or `feeds run`) and its pid.
    pub writer: String,
    pub pid: u32,
    pub written: DateTime<Utc>,
    pub sources: Vec<SourceStatus>,
}

/// `<state dir>/feeds/status.json`, shared between the process running the feeds and
/// `wxlake feeds list`.
#[derive(Debug, Clone)]
pub struct StatusFile {
    path: PathBuf,
}

impl StatusFile {
    /// The status file of a state directory.
    pub fn in_state_dir(dir: &Path) -> Self {
        StatusFile { path: dir.join(STATUS_FILE) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file with `snapshot` (temporary file, then rename).
    ///
    /// Every source's task writes the file after its own poll, so writes of one process
    /// overlap: each goes through a temporary file of its own (pid and a per-process
    /// sequence number). With one name per process, two overlapping writes shared the
    /// temporary file and the second rename found it gone (`No such file or directory`,
    /// with the directory right there).
    pub fn write(&self, snapshot: &StatusSnapshot) -> Result<(), StatusFileError> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let io = |source| StatusFileError::Io { path: self.path.clone(), source };
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let text = serde_json::to_vec_pretty(snapshot)
            .map_err(|source| StatusFileError::Malformed { path: self.path.clone(), source })?;
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self.path.with_extension(format!("json.tmp{}-{seq}", std::process::id()));
        let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map_err(io)
    }

    /// The last snapshot written, or `None` when no feeds ever ran with this state.
    pub fn read(&self) -> Result<Option<StatusSnapshot>, StatusFileError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StatusFileError::Io { path: self.path.clone(), source }),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| StatusFileError::Malformed { path: self.path.clone(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feeds::http::FetchError;
    use crate::feeds::source::FeedError;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn counters_add_up_and_the_late_rule_counts_intervals_since_the_last_success() {
        let mut st = SourceStatus::new("awc_metar", Duration::from_secs(60), t("2026-09-25T06:00:00Z"));
        assert!(!st.is_late(t("2026-09-25T06:03:00Z")), "exactly three intervals is not late yet");
        assert!(st.is_late(t("2026-09-25T06:03:01Z")), "never succeeded for over three intervals");
        let ok = PollReport { requests: 2, bytes: 100, accepted: 9, ..PollReport::default() };
        st.record(&ok, t("2026-09-25T06:04:00Z"), Duration::from_millis(5));
        assert!(!st.late);
        let failed = PollReport {
            requests: 2,
            errors: vec![
                FeedError::Fetch(FetchError::Status { url: "u".into(), status: 503, retry_after: None }),
                FeedError::Malformed { url: "u".into(), reason: "bad".into(), source: None },
            ],
            ..PollReport::default()
        };
        st.record(&failed, t("2026-09-25T06:05:00Z"), Duration::from_millis(5));
        assert_eq!((st.polls, st.failed_polls, st.requests, st.bytes, st.rows_stored), (2, 1, 4, 100, 9));
        assert_eq!(st.errors, BTreeMap::from([("malformed".into(), 1), ("server_error".into(), 1)]));
        assert_eq!(st.last_error.as_ref().unwrap().kind, "malformed");
        assert_eq!(st.last_success, Some(t("2026-09-25T06:04:00Z")));
        assert!(!st.clone().at(t("2026-09-25T06:07:00Z")).late);
        assert!(st.at(t("2026-09-25T06:07:01Z")).late);
    }

    #[test]
    fn the_file_round_trips_and_a_bad_one_is_a_precise_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = StatusFile::in_state_dir(dir.path());
        assert_eq!(file.read().unwrap(), None);
        let snap = StatusSnapshot {
            writer: "feeds run".into(),
            pid: 7,
            written: t("2026-09-25T06:00:00Z"),
            sources: vec![SourceStatus::new("awc_metar", Duration::from_secs(60), t("2026-09-25T06:00:00Z"))],
        };
        file.write(&snap).unwrap();
        assert_eq!(file.read().unwrap(), Some(snap));
        std::fs::write(file.path(), b"{\"writer\": 3").unwrap();
        let e = file.read().unwrap_err().to_string();
        assert!(e.contains("not a feeds status file"), "{e}");
    }

    /// The sources' tasks write the file at the same moments: every write succeeds, no
    /// temporary file is left behind, and the file is always whole.
    #[test]
    fn overlapping_writes_of_one_process_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let file = StatusFile::in_state_dir(dir.path());
        let snap = |n: usize| StatusSnapshot {
            writer: format!("serve {n}"),
            pid: 7,
            written: t("2026-09-25T06:00:00Z"),
            sources: (0..20)
                .map(|i| SourceStatus::new(&format!("source_{i}"), Duration::from_secs(60), t("2026-09-25T06:00:00Z")))
                .collect(),
        };
        let failures: usize = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..8)
                .map(|w| {
                    let file = file.clone();
                    scope.spawn(move || (0..40).filter(|i| file.write(&snap(w * 100 + i)).is_err()).count())
                })
                .collect();
            writers.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(failures, 0);
        assert!(file.read().unwrap().is_some_and(|s| s.sources.len() == 20));
        let left: Vec<_> =
            std::fs::read_dir(dir.path().join("feeds")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("status.json")]);
    }
}
