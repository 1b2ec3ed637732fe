//! Opening a WAL: replaying its segments and repairing what a crash left behind.
//!
//! # Rules
//! Replay reads each segment front to back. A record that fails to parse (bad magic, length
//! running past the end, CRC mismatch, malformed body) is skipped by scanning forward for the
//! next magic that starts a valid record with a higher seq. If one is found, the bytes in
//! between are reported as corrupt ([`ReplayIssue`], `tracing::warn`) and replay goes on. If
//! none is found, the bytes are a torn tail (a write cut short by a crash): in the last segment
//! they are truncated away so appends continue after the last good record; in an older
//! segment they are reported and left alone. Nothing here panics on damaged files.

use std::collections::{BTreeSet, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::path::Path;

use parking_lot::{Condvar, Mutex};

use super::commit::Queue;
use super::record::{find_magic, parse_record, Bad};
use super::segment::{
    delete_segments, list_segments, read_checkpoint, remove_if_exists, take_dir_lock, take_trimmed, Segment, Segments,
    CHECKPOINT_TMP,
};
use super::{io_err, ReplayIssue, Wal, WalEntry, WalError, WalOptions};

impl Wal {
    /// Opens (creating if needed) the WAL in `dir` with default options and returns the
    /// entries not yet trimmed, in append order.
    pub fn open(dir: &Path) -> Result<(Wal, Vec<WalEntry>), WalError> {
        Self::open_with(dir, WalOptions::default())
    }

    /// [`Wal::open`] with explicit options (tests use tiny segments).
    pub fn open_with(dir: &Path, options: WalOptions) -> Result<(Wal, Vec<WalEntry>), WalError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let lock_file = take_dir_lock(dir)?;
        remove_if_exists(&dir.join(CHECKPOINT_TMP))?;
        let checkpoint = read_checkpoint(dir)?;
        let mut list: VecDeque<Segment> = list_segments(dir)?.into();
        let trimmed = take_trimmed(&mut list, checkpoint);
        delete_segments(dir, &trimmed);

        let replay = replay_segments(&list, checkpoint)?;
        let last_first = list.back().map_or(0, |s| s.first_seq);
        let settled = replay.max_seq.max(checkpoint).max(last_first.saturating_sub(1));
        let (active, active_size) = match list.back() {
            Some(seg) => open_active(seg, replay.last_valid_end)?,
            None => (None, 0),
        };
        tracing::debug!(
            dir = %dir.display(),
            segments = list.len(),
            entries = replay.entries.len(),
            checkpoint,
            "opened WAL"
        );

        let pending: VecDeque<(u64, u32)> = replay.lens.into();
        let pending_bytes = pending.iter().map(|&(_, len)| u64::from(len)).sum();
        let wal = Wal {
            dir: dir.to_path_buf(),
            queue: Mutex::new(Queue {
                next_seq: settled + 1,
                buf: Vec::new(),
                buf_records: Vec::new(),
                spare: Vec::new(),
                leader: false,
                settled_seq: settled,
                failures: Vec::new(),
                pending,
                pending_bytes,
                released: BTreeSet::new(),
                commits: 0,
            }),
            committed: Condvar::new(),
            io: Mutex::new(Segments {
                dir: dir.to_path_buf(),
                list,
                active,
                active_size,
                segment_bytes: options.segment_bytes,
            }),
            checkpoint: Mutex::new(checkpoint),
            issues: replay.issues,
            _lock: lock_file,
        };
        Ok((wal, replay.entries))
    }
}

/// What replay found across all segments.
pub(super) struct Replay {
    pub(super) entries: Vec<WalEntry>,
    /// (seq, encoded length) of each entry, for pending accounting.
    pub(super) lens: Vec<(u64, u32)>,
    pub(super) issues: Vec<ReplayIssue>,
    pub(super) max_seq: u64,
    /// End of the last valid record of the last segment: where appends resume.
    pub(super) last_valid_end: u64,
}

pub(super) fn replay_segments(list: &VecDeque<Segment>, checkpoint: u64) -> Result<Replay, WalError> {
    let mut replay =
        Replay { entries: Vec::new(), lens: Vec::new(), issues: Vec::new(), max_seq: 0, last_valid_end: 0 };
    for (i, seg) in list.iter().enumerate() {
        let bytes = fs::read(&seg.path).map_err(io_err(&seg.path))?;
        let scan = scan_segment(&bytes, replay.max_seq);
        for (entry, len) in scan.records {
            replay.max_seq = replay.max_seq.max(entry.seq);
            if entry.seq > checkpoint {
                replay.lens.push((entry.seq, len));
                replay.entries.push(entry);
            }
        }
        let is_last = i + 1 == list.len();
        for bad in scan.bad {
            let issue = ReplayIssue {
                segment: seg.path.clone(),
                offset: bad.offset as u64,
                len: bad.len as u64,
                reason: bad.reason.to_string(),
                torn_tail: bad.torn_tail,
            };
            warn_issue(&issue, is_last);
            replay.issues.push(issue);
        }
        if is_last {
            replay.last_valid_end = scan.valid_end as u64;
        }
    }
    Ok(replay)
}

pub(super) fn warn_issue(issue: &ReplayIssue, is_last: bool) {
    let segment = issue.segment.display();
    if issue.torn_tail {
        let action = if is_last { "truncating" } else { "ignoring" };
        tracing::warn!(%segment, offset = issue.offset, len = issue.len, reason = %issue.reason,
            "WAL segment ends in a torn record, {action} it");
    } else {
        tracing::warn!(%segment, offset = issue.offset, len = issue.len, reason = %issue.reason,
            "corrupt WAL record skipped");
    }
}

/// Opens the last segment for appending, cutting off a torn tail first.
pub(super) fn open_active(seg: &Segment, valid_end: u64) -> Result<(Option<File>, u64), WalError> {
    let path = &seg.path;
    let file = OpenOptions::new().append(true).open(path).map_err(io_err(path))?;
    let len = file.metadata().map_err(io_err(path))?.len();
    if len > valid_end {
        file.set_len(valid_end).and_then(|()| file.sync_all()).map_err(io_err(path))?;
    }
    Ok((Some(file), valid_end))
}

pub(super) struct BadSpan {
    pub(super) offset: usize,
    pub(super) len: usize,
    pub(super) reason: Bad,
    pub(super) torn_tail: bool,
}

pub(super) struct Scan {
    pub(super) records: Vec<(WalEntry, u32)>,
    pub(super) bad: Vec<BadSpan>,
    /// Offset just past the last valid record.
    pub(super) valid_end: usize,
}

/// Reads every record of one segment; `prev_seq` is the highest seq seen before it.
pub(super) fn scan_segment(bytes: &[u8], prev_seq: u64) -> Scan {
    let mut scan = Scan { records: Vec::new(), bad: Vec::new(), valid_end: 0 };
    let mut last_seq = prev_seq;
    let mut pos = 0;
    while pos < bytes.len() {
        match parse_record(bytes, pos) {
            Ok((entry, len)) => {
                last_seq = last_seq.max(entry.seq);
                scan.records.push((entry, len as u32));
                pos += len;
                scan.valid_end = pos;
            }
            Err(reason) => match resync(bytes, pos + 1, last_seq) {
                Some(next) => {
                    scan.bad.push(BadSpan { offset: pos, len: next - pos, reason, torn_tail: false });
                    pos = next;
                }
                None => {
                    scan.bad.push(BadSpan { offset: pos, len: bytes.len() - pos, reason, torn_tail: true });
                    break;
                }
            },
        }
    }
    scan
}

/// Offset of the next valid record at or after `from` with a seq above `after_seq`; the seq
/// test rejects an old record that happens to sit inside a damaged payload.
pub(super) fn resync(bytes: &[u8], from: usize, after_seq: u64) -> Option<usize> {
    let mut pos = from;
    while let Some(found) = find_magic(bytes.get(pos..)?) {
        let at = pos + found;
        if let Ok((entry, _)) = parse_record(bytes, at) {
            if entry.seq > after_seq {
                return Some(at);
            }
        }
        pos = at + 1;
    }
    None
}
