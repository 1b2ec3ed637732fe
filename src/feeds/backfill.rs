//! `wxlake feeds backfill`: a source's archive fetched unit by unit ([`ArchiveUnit`]) into
//! the lake, resumable.
//!
//! Each unit finished is recorded in `<state dir>/feeds/backfill/<source>.done`, one unit
//! id a line, appended and synced to disk only after the unit's rows are in the lake; a
//! rerun skips the recorded units. A kill between the store and the record replays that
//! one unit, which the lake's natural keys turn into duplicates counted, not rows added. A
//! line cut short by a kill (no final newline) is not a record: it is dropped on open.
//!
//! The rows go straight to the lake ([`LakeSink`], the batch path of `wxlake ingest`), not
//! through a server's write-ahead log: a backfill is about past days, needs no stream
//! events or hot state, and may run beside a `serve` that holds the state's WAL.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;
use thiserror::Error;

use super::sink::{FeedSink, SinkError, Stored};
use super::source::{Archive, ArchiveUnit, PollReport};
use crate::ingest::{Format, IngestOptions};
use crate::lake::Lake;

/// The folder of the resume records under the state directory.
pub const BACKFILL_DIR: &str = "feeds/backfill";

/// The resume record could not be read or written.
#[derive(Debug, Error)]
#[error("backfill record {path}: {source}")]
pub struct ResumeError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// The finished units of one source's backfills.
#[derive(Debug)]
pub struct ResumeLog {
    path: PathBuf,
    done: BTreeSet<String>,
    file: std::fs::File,
}

impl ResumeLog {
    /// Opens (or creates) the record of `source` under `state_dir`.
    pub fn open(state_dir: &Path, source: &str) -> Result<Self, ResumeError> {
        let path = state_dir.join(BACKFILL_DIR).join(format!("{source}.done"));
        let err = |source| ResumeError { path: path.clone(), source };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(err)?;
        }
        let text = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(err(e)),
        };
        // Only newline-terminated lines are records; a torn tail is cut off so the next
        // append starts on a line of its own.
        let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let done = String::from_utf8_lossy(&text[..complete])
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(err)?;
        if complete < text.len() {
            file.set_len(complete as u64).map_err(err)?;
        }
        Ok(ResumeLog { path, done, file })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `unit` was finished by an earlier run.
    pub fn is_done(&self, unit: &ArchiveUnit) -> bool {
        self.done.contains(&unit.id())
    }

    /// Records `unit` as finished, durably (synced before this returns).
    pub fn mark_done(&mut self, unit: &ArchiveUnit) -> Result<(), ResumeError> {
        let id = unit.id();
        let err = |source| ResumeError { path: self.path.clone(), source };
        self.file.write_all(format!("{id}\n").as_bytes()).map_err(err)?;
        self.file.sync_data().map_err(err)?;
        self.done.insert(id);
        Ok(())
    }
}

/// What happened to one unit, for the progress display.
#[derive(Debug)]
pub enum UnitOutcome<'a> {
    /// Finished by an earlier run.
    Skipped,
    /// Fetched and stored now.
    Stored(&'a PollReport),
    /// A request failed: the unit is not recorded, a rerun fetches it again.
    Failed(&'a PollReport),
}

/// The whole backfill's account.
#[derive(Debug, Default)]
pub struct BackfillReport {
    pub units: usize,
    pub skipped: usize,
    pub stored: usize,
    /// Unit ids that failed, with the first error of each.
    pub failed: Vec<(String, String)>,
    pub requests: usize,
    pub accepted: usize,
    /// Rows the lake held already (a rerun, overlapping units).
    pub duplicate: usize,
    pub rejected: usize,
}

impl BackfillReport {
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty()
    }
}

/// Fetches every unit of `units` not in `log` into `sink`, one after another (an archive
/// is a public service: one request in flight per backfill), recording each success.
/// `on_unit` sees every unit's outcome. Fails only when the record cannot be written.
pub async fn run(
    archive: &dyn Archive,
    units: &[ArchiveUnit],
    sink: &dyn FeedSink,
    log: &mut ResumeLog,
    mut on_unit: impl FnMut(&ArchiveUnit, UnitOutcome<'_>),
) -> Result<BackfillReport, ResumeError> {
    let mut out = BackfillReport { units: units.len(), ..BackfillReport::default() };
    for unit in units {
        if log.is_done(unit) {
            out.skipped += 1;
            on_unit(unit, UnitOutcome::Skipped);
            continue;
        }
        let report = archive.fetch(unit, sink).await;
        out.requests += report.requests;
        out.accepted += report.accepted;
        out.duplicate += report.duplicate;
        out.rejected += report.rejected;
        if report.is_ok() {
            log.mark_done(unit)?;
            out.stored += 1;
            on_unit(unit, UnitOutcome::Stored(&report));
        } else {
            let first = report.errors.first().map(|e| format!("{}: {e}", e.kind())).unwrap_or_default();
            tracing::warn!(source = archive.name(), unit = %unit.id(), error = %first, "backfill unit failed");
            out.failed.push((unit.id(), first));
            on_unit(unit, UnitOutcome::Failed(&report));
        }
    }
    Ok(out)
}

/// The days the derived jobs recompute after a backfill of `from..=to`: the days the
/// archive's rows can change ([`Archive::days_touched`]: the trading days around the UTC
/// days fetched, the run dates of forecasts issued before them), ending by `today` (no
/// later day has data), and covering `from..=to` in any case.
pub fn derived_range(
    archive: &dyn Archive,
    from: chrono::NaiveDate,
    to: chrono::NaiveDate,
    today: chrono::NaiveDate,
) -> (chrono::NaiveDate, chrono::NaiveDate) {
    let (first, last) = archive.days_touched(from, to);
    (first.min(from), last.min(today).max(to))
}

/// Decodes with the real decoders and stores straight into the lake (idempotent: rows
/// already stored are counted as duplicates, not added).
#[derive(Debug, Clone)]
pub struct LakeSink {
    lake: Lake,
}

impl LakeSink {
    pub fn new(lake: Lake) -> Self {
        LakeSink { lake }
    }
}

#[async_trait]
impl FeedSink for LakeSink {
    async fn ingest(&self, format: Format, opts: IngestOptions, body: Bytes) -> Result<Stored, SinkError> {
        let decoded = crate::lake::blocking(move || format.decode(&body, &opts))
            .await
            .map_err(|e| SinkError::Store(Box::new(e)))?;
        if decoded.records.is_empty() {
            let reasons: Vec<String> =
                decoded.errors.iter().take(3).map(|e| format!("line {}: {}", e.line, e.reason)).collect();
            return Err(SinkError::Unusable(if reasons.is_empty() {
                "the body decoded to nothing".to_string()
            } else {
                reasons.join("; ")
            }));
        }
        let stats =
            crate::ingest::store(&self.lake, decoded.records).await.map_err(|e| SinkError::Store(Box::new(e)))?;
        Ok(Stored {
            read: decoded.read,
            accepted: stats.stored,
            duplicate: stats.duplicate,
            rejected: decoded.errors.len(),
            events: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(key: &str, day: u32) -> ArchiveUnit {
        let d = chrono::NaiveDate::from_ymd_opt(2026, 9, day).unwrap();
        ArchiveUnit { key: key.into(), from: d, to: d }
    }

    /// An archive of observations (the default `days_touched`).
    struct Observations;

    #[async_trait]
    impl Archive for Observations {
        fn name(&self) -> &str {
            "observations"
        }
        fn units(&self, _: chrono::NaiveDate, _: chrono::NaiveDate, _: &[String]) -> Vec<ArchiveUnit> {
            Vec::new()
        }
        async fn fetch(&self, _: &ArchiveUnit, _: &dyn FeedSink) -> PollReport {
            PollReport::default()
        }
    }

    #[test]
    fn the_derived_range_covers_the_trading_days_around_the_days_fetched() {
        let d = |day: u32| chrono::NaiveDate::from_ymd_opt(2026, 9, day).unwrap();
        // Readings of 6 Sep UTC fall in 5 Sep west of UTC, in 11 Sep east of it.
        assert_eq!(derived_range(&Observations, d(6), d(10), d(20)), (d(5), d(11)));
        assert_eq!(derived_range(&Observations, d(6), d(10), d(10)), (d(5), d(10)), "no later than today");
        assert_eq!(derived_range(&Observations, d(6), d(12), d(10)), (d(5), d(12)), "the days asked for, always");
    }

    #[test]
    fn finished_units_survive_a_reopen_and_a_torn_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ResumeLog::open(dir.path(), "awc_metar").unwrap();
        assert!(!log.is_done(&unit("KNYC", 1)));
        log.mark_done(&unit("KNYC", 1)).unwrap();
        log.mark_done(&unit("KNYC", 2)).unwrap();
        let path = log.path().to_path_buf();
        drop(log);
        // A kill in the middle of the third append.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"KNYC/2026-09-0").unwrap();
        let mut log = ResumeLog::open(dir.path(), "awc_metar").unwrap();
        assert!(log.is_done(&unit("KNYC", 1)) && log.is_done(&unit("KNYC", 2)));
        assert!(!log.is_done(&unit("KNYC", 3)));
        log.mark_done(&unit("KNYC", 3)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "KNYC/2026-09-01/2026-09-01\nKNYC/2026-09-02/2026-09-02\nKNYC/2026-09-03/2026-09-03\n");
    }
}
