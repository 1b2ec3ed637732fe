//! The WAL directory's files: segments named by their first seq, the checkpoint that hides
//! trimmed records, and the lock that keeps a second process out (layout in [`super`]).

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{io_err, WalError};
use crate::durable::{self, sync_dir, Access};

pub(super) const CHECKPOINT: &str = "checkpoint";
pub(super) const CHECKPOINT_TMP: &str = "checkpoint.tmp";
pub(super) const LOCK_FILE: &str = "LOCK";
pub(super) const SEGMENT_PREFIX: &str = "wal-";
pub(super) const SEGMENT_SUFFIX: &str = ".log";

/// Segment files; only the current leader or a trim holds this lock.
pub(super) struct Segments {
    pub(super) dir: PathBuf,
    /// Sorted by first seq; the last one is the one appended to.
    pub(super) list: VecDeque<Segment>,
    pub(super) active: Option<File>,
    pub(super) active_size: u64,
    pub(super) segment_bytes: u64,
}

#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub(super) first_seq: u64,
    pub(super) path: PathBuf,
}

impl Segments {
    /// One write + one fsync for a whole batch, starting a new segment first if needed.
    pub(super) fn write_batch(&mut self, batch: &[u8], first_seq: u64) -> io::Result<()> {
        let full = self.active_size > 0 && self.active_size >= self.segment_bytes;
        if self.active.is_none() || full {
            self.roll(first_seq)?;
        }
        let Some(file) = self.active.as_mut() else {
            return Err(io::Error::other("no active WAL segment"));
        };
        match file.write_all(batch).and_then(|()| file.sync_data()) {
            Ok(()) => {
                self.active_size += batch.len() as u64;
                Ok(())
            }
            Err(e) => {
                // The file may now end in a partial batch, and after a failed fsync the page
                // cache cannot be trusted: continue in a fresh segment.
                self.active = None;
                Err(e)
            }
        }
    }

    /// Starts segment `wal-<first_seq>.log` and makes its directory entry durable.
    fn roll(&mut self, first_seq: u64) -> io::Result<()> {
        self.active = None;
        let path = self.dir.join(segment_name(first_seq));
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        sync_dir(&self.dir)?;
        self.active_size = file.metadata()?.len();
        if self.list.back().map(|s| s.first_seq) != Some(first_seq) {
            self.list.push_back(Segment { first_seq, path });
        }
        self.active = Some(file);
        Ok(())
    }
}

/// Removes from the front of `list` the segments whose records are all ≤ `seq`. The last
/// segment is kept: it is the one appended to, and its name keeps seqs monotonic.
pub(super) fn take_trimmed(list: &mut VecDeque<Segment>, seq: u64) -> Vec<Segment> {
    let mut out = Vec::new();
    while list.len() >= 2 {
        let Some(next) = list.get(1) else { break };
        if next.first_seq.saturating_sub(1) > seq {
            break;
        }
        if let Some(seg) = list.pop_front() {
            out.push(seg);
        }
    }
    out
}

pub(super) fn delete_segments(dir: &Path, doomed: &[Segment]) {
    if doomed.is_empty() {
        return;
    }
    for seg in doomed {
        if let Err(error) = fs::remove_file(&seg.path) {
            if error.kind() != io::ErrorKind::NotFound {
                tracing::warn!(segment = %seg.path.display(), %error, "cannot delete trimmed WAL segment");
            }
        }
    }
    if let Err(error) = sync_dir(dir) {
        tracing::warn!(dir = %dir.display(), %error, "cannot fsync WAL directory after trim");
    }
}

/// How long opening waits for a WAL lock held by someone else before giving up. A lock is
/// also briefly "held" by any process forked from ours between fork and exec (the child
/// shares the open file until exec closes it), and by a predecessor still exiting.
pub(super) const LOCK_WAIT: Duration = Duration::from_millis(500);

pub(super) fn take_dir_lock(dir: &Path) -> Result<File, WalError> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io_err(&path))?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(TryLockError::WouldBlock) => return Err(WalError::Locked(dir.to_path_buf())),
            Err(TryLockError::Error(source)) => return Err(WalError::Io { path, source }),
        }
    }
}

pub(super) fn remove_if_exists(path: &Path) -> Result<(), WalError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(path)(e)),
        _ => Ok(()),
    }
}

pub(super) fn read_checkpoint(dir: &Path) -> Result<u64, WalError> {
    let path = dir.join(CHECKPOINT);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_err(&path)(e)),
    };
    match text.trim().parse::<u64>() {
        Ok(seq) => Ok(seq),
        Err(_) => {
            // Replaying too much is safe (ingest dedups); refusing to start is not.
            tracing::warn!(path = %path.display(), "unreadable WAL checkpoint, replaying everything");
            Ok(0)
        }
    }
}

pub(super) fn write_checkpoint(dir: &Path, seq: u64) -> Result<(), WalError> {
    let (path, tmp) = (dir.join(CHECKPOINT), dir.join(CHECKPOINT_TMP));
    durable::replace(&path, &tmp, format!("{seq}\n").as_bytes(), Access::Default)
        .map_err(|e| WalError::Io { path: e.path, source: e.source })?;
    Ok(())
}

pub(super) fn segment_name(first_seq: u64) -> String {
    format!("{SEGMENT_PREFIX}{first_seq:020}{SEGMENT_SUFFIX}")
}

pub(super) fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(SEGMENT_PREFIX)?.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

pub(super) fn list_segments(dir: &Path) -> Result<Vec<Segment>, WalError> {
    let mut out = Vec::new();
    for item in fs::read_dir(dir).map_err(io_err(dir))? {
        let item = item.map_err(io_err(dir))?;
        let name = item.file_name();
        let Some(first_seq) = name.to_str().and_then(parse_segment_name) else { continue };
        let path = item.path();
        // Replay reads whole files: a device or directory under a segment name is skipped.
        if !fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            tracing::warn!(path = %path.display(), "WAL segment name on a non-regular file, ignored");
            continue;
        }
        out.push(Segment { first_seq, path });
    }
    out.sort_by_key(|s| s.first_seq);
    Ok(out)
}
