//! Write-ahead log for live ingest.
//!
//! `POST /api/v2/ingest/{format}` answers 2xx only once its input is durable: the raw input
//! (format name, options JSON, bytes) is appended here and fsynced before [`Wal::append`]
//! returns. The write path keeps each input's decoded records until a background flush has
//! stored them in the lake, then releases the entries ([`Wal::release`], which trims
//! through the released prefix); on start [`Wal::open`] hands back every entry not yet
//! trimmed, to be decoded and ingested again. The log stores raw inputs, not rows, because
//! decoding is deterministic and lake ingest deduplicates, so replaying an entry twice is
//! harmless.
//!
//! # Directory layout
//! - `wal-<first_seq:020>.log`: segments, named by the sequence number of the first record
//!   written to them, so every record of a segment has a seq below the next segment's name.
//!   Records are appended to the last segment; a new one is started once it reaches
//!   [`WalOptions::segment_bytes`] (64 MiB by default) or after a failed write.
//! - `checkpoint`: the highest trimmed seq as decimal ASCII plus `\n`, replaced atomically
//!   (write `checkpoint.tmp`, fsync, rename, fsync the directory). Replay skips records with
//!   seq ≤ checkpoint, which hides the trimmed part of a segment that is still in use.
//! - `LOCK`: held with an exclusive advisory lock while a [`Wal`] is open, so two processes
//!   never append to the same log. The OS releases it when the process dies, even by kill -9.
//!
//! # Files
//! - [`record`]: the byte layout of one record, its encoding and parsing.
//! - [`segment`]: the directory's files: segments, the checkpoint and the lock.
//! - [`commit`]: group commit, the append path.
//! - [`recovery`]: opening, replaying and repairing the segments.
//! - Trimming ([`Wal::trim_through`], [`Wal::release`]) is here, with the types every part shares.

mod commit;
mod record;
mod recovery;
mod segment;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use parking_lot::{Condvar, Mutex};
use thiserror::Error;

use commit::Queue;
use segment::{delete_segments, take_trimmed, write_checkpoint, Segments};

pub use record::MAX_BODY_BYTES;

/// Default size after which appends move to a new segment.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;

/// WAL failures. An `Err` from [`Wal::append`] means the input must not be acknowledged.
#[derive(Debug, Error)]
pub enum WalError {
    #[error("WAL I/O on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("WAL directory {0} is in use by another process")]
    Locked(PathBuf),
    #[error("WAL record too large: body of {size} bytes, limit {limit}")]
    TooLarge { size: usize, limit: usize },
    #[error("format name too long: {0} bytes, limit 65535")]
    FormatTooLong(usize),
    #[error("WAL write failed, record not acknowledged: {0}")]
    WriteFailed(#[source] Arc<io::Error>),
    #[error("cannot trim through seq {requested}: last appended seq is {last}")]
    TrimBeyondEnd { requested: u64, last: u64 },
    /// The blocking task that did the work failed (panicked or was cancelled).
    #[error("WAL task: {0}")]
    Task(#[source] tokio::task::JoinError),
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> WalError + '_ {
    move |source| WalError::Io { path: path.to_path_buf(), source }
}

/// One raw input not yet trimmed, as handed back by [`Wal::open`] for re-ingest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalEntry {
    pub seq: u64,
    /// When it was appended (what the live ingest received it at).
    pub timestamp: DateTime<Utc>,
    pub format: String,
    pub options_json: String,
    pub payload: Vec<u8>,
}

/// Damage found while replaying, so operators can see what was skipped and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayIssue {
    pub segment: PathBuf,
    /// Byte offset in the segment where the unreadable bytes start.
    pub offset: u64,
    /// How many bytes were skipped (or truncated).
    pub len: u64,
    /// Why the record at `offset` could not be read.
    pub reason: String,
    /// True when no valid record follows: a write cut short by a crash.
    pub torn_tail: bool,
}

/// Work the flusher still owes the lake: appended records not yet trimmed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pending {
    pub records: u64,
    /// Encoded record bytes, headers included.
    pub bytes: u64,
}

/// Tuning knobs; the defaults suit production.
#[derive(Debug, Clone)]
pub struct WalOptions {
    /// Start a new segment once the current one holds at least this many bytes.
    pub segment_bytes: u64,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions { segment_bytes: DEFAULT_SEGMENT_BYTES }
    }
}

/// The write-ahead log of one state directory. Share it as `Arc<Wal>`; every method takes
/// `&self` and is safe to call from many threads.
pub struct Wal {
    dir: PathBuf,
    // parking_lot's locks do not poison: a panic elsewhere must not turn every later
    // append into a panic (nothing panics while mutating what they guard).
    queue: Mutex<Queue>,
    committed: Condvar,
    io: Mutex<Segments>,
    /// The persisted checkpoint; also serialises trims.
    checkpoint: Mutex<u64>,
    issues: Vec<ReplayIssue>,
    _lock: File,
}

impl Wal {
    /// Declares every record with seq ≤ `seq` durably in the lake: persists the checkpoint
    /// (so replay skips them) and deletes segments holding nothing newer. Lower or repeated
    /// seqs are no-ops; a seq beyond [`Wal::last_seq`] is refused, since it would hide
    /// records not yet written. A segment that cannot be deleted is logged and retried at
    /// the next open; the checkpoint already hides its records.
    pub fn trim_through(&self, seq: u64) -> Result<(), WalError> {
        let last = self.last_seq();
        if seq > last {
            return Err(WalError::TrimBeyondEnd { requested: seq, last });
        }
        let mut checkpoint = self.checkpoint.lock();
        if seq <= *checkpoint {
            return Ok(());
        }
        write_checkpoint(&self.dir, seq)?;
        *checkpoint = seq;
        let doomed = take_trimmed(&mut self.io.lock().list, seq);
        delete_segments(&self.dir, &doomed);

        let mut q = self.queue.lock();
        while let Some(&(front, len)) = q.pending.front() {
            if front > seq {
                break;
            }
            q.pending.pop_front();
            q.pending_bytes -= u64::from(len);
        }
        Ok(())
    }

    /// Declares the records `seqs` durably stored elsewhere (the lake) and trims the log
    /// through the longest run of durable records, oldest first, that are all released.
    /// Returns the checkpoint after the call.
    ///
    /// This is the trim the live path uses, because it is correct whatever order records
    /// reach their owner in: under group commit, appenders wake in any order, so a flush
    /// may store seq 7 while seq 6 is durable but not yet handed to it. Trimming "through
    /// the highest stored seq" would hide 6 from replay; here 7 waits, released, until 6
    /// is released too. Unknown or already trimmed seqs are ignored.
    pub fn release(&self, seqs: impl IntoIterator<Item = u64>) -> Result<u64, WalError> {
        let through = {
            let mut q = self.queue.lock();
            let settled = q.settled_seq;
            q.released.extend(seqs.into_iter().filter(|&s| s <= settled));
            let mut through = None;
            for &(seq, _) in &q.pending {
                if !q.released.contains(&seq) {
                    break;
                }
                through = Some(seq);
            }
            through
        };
        if let Some(seq) = through {
            self.trim_through(seq)?;
        }
        let checkpoint = *self.checkpoint.lock();
        let mut q = self.queue.lock();
        q.released = q.released.split_off(&(checkpoint + 1));
        Ok(checkpoint)
    }

    /// Records appended (or replayed) and not yet trimmed, for flush scheduling and metrics.
    pub fn pending(&self) -> Pending {
        let q = self.queue.lock();
        Pending { records: q.pending.len() as u64, bytes: q.pending_bytes }
    }

    /// Highest seq handed out whose write has finished (successfully or not); every
    /// acknowledged append has a seq ≤ this, so `trim_through(last_seq())` is always valid.
    pub fn last_seq(&self) -> u64 {
        self.queue.lock().settled_seq
    }

    /// Group commits (one write + one fsync each) since open; appends / commits is the
    /// batching factor.
    pub fn commits(&self) -> u64 {
        self.queue.lock().commits
    }

    /// Damage found by the replay in [`Wal::open`].
    pub fn replay_issues(&self) -> &[ReplayIssue] {
        &self.issues
    }

    /// The directory holding the segments.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
