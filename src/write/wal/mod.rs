//! Write-ahead log for live ingest.
//!
//! `POST /api/v2/ingest/{format}` answers 2xx only once its input is durable: the raw input
//! (format name, options JSON, bytes) is appended here and fsynced before [`Wal::append`]
//! returns. A background flusher decodes the entries into the lake and then calls
//! [`Wal::trim_through`]; on start [`Wal::open`] hands back every entry not yet trimmed, to be
//! decoded and ingested again. The log stores raw inputs, not rows, because decoding is
//! deterministic and lake ingest deduplicates, so replaying an entry twice is harmless.
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
//! # Record layout
//! All integers are little-endian.
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0      | 4    | magic `WXW1` (`57 58 57 31`), lets replay resynchronise after damage |
//! | 4      | 4    | `body_len`: u32, bytes in the body below (at least 22) |
//! | 8      | 4    | CRC-32 (IEEE, crc32fast) of bytes 4..8 (`body_len`) followed by the body |
//! | 12     | 8    | body: `seq`, u64, strictly increasing across the whole log |
//! | 20     | 8    | body: `timestamp`, i64 microseconds since the Unix epoch (UTC) of the append |
//! | 28     | 2    | body: `format_len`, u16 |
//! | 30     | 4    | body: `options_len`, u32 |
//! | 34     | `format_len`  | body: format name, UTF-8 |
//! | …      | `options_len` | body: options JSON, UTF-8, stored as given by the caller |
//! | …      | rest of body  | body: payload, the raw input bytes |
//!
//! A record therefore takes `34 + format_len + options_len + payload_len` bytes.
//!
//! # Recovery rules
//! Replay reads each segment front to back. A record that fails to parse (bad magic, length
//! running past the end, CRC mismatch, malformed body) is skipped by scanning forward for the
//! next magic that starts a valid record with a higher seq. If one is found, the bytes in
//! between are reported as corrupt ([`ReplayIssue`], `tracing::warn`) and replay goes on. If
//! none is found, the bytes are a torn tail (a write cut short by a crash): in the last segment
//! they are truncated away so appends continue after the last good record; in an older
//! segment they are reported and left alone. Nothing here panics on damaged files.
//!
//! # Group commit
//! Appenders encode their record into a shared buffer under a mutex and take the next seq.
//! If no write is in flight, that appender becomes the leader: it takes the whole buffer,
//! writes it with one `write` and one `sync_data`, then wakes everyone. Records queued while
//! a leader waits on the disk go out together in the next batch, so N concurrent appenders
//! cost about one fsync per disk round trip instead of N. Every caller gets its seq only
//! after the fsync covering its record returned.

use std::collections::{BTreeSet, VecDeque};
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use thiserror::Error;

/// Default size after which appends move to a new segment.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;

/// Largest record body accepted; keeps `body_len` well inside u32 and replay memory bounded.
pub const MAX_BODY_BYTES: usize = 1 << 30;

const MAGIC: [u8; 4] = *b"WXW1";
/// magic + body_len + crc.
const FRAME_HEADER: usize = 12;
/// seq + timestamp + format_len + options_len.
const BODY_FIXED: usize = 22;
const CHECKPOINT: &str = "checkpoint";
const CHECKPOINT_TMP: &str = "checkpoint.tmp";
const LOCK_FILE: &str = "LOCK";
const SEGMENT_PREFIX: &str = "wal-";
const SEGMENT_SUFFIX: &str = ".log";
/// A batch buffer that grew past this (one huge input) is dropped rather than kept as spare.
const SPARE_KEEP_BYTES: usize = 8 << 20;

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
    #[error("WAL task: {0}")]
    Task(String),
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
    queue: Mutex<Queue>,
    committed: Condvar,
    io: Mutex<Segments>,
    /// The persisted checkpoint; also serialises trims.
    checkpoint: Mutex<u64>,
    issues: Vec<ReplayIssue>,
    _lock: File,
}

/// Appends waiting for a leader, and what is durable.
struct Queue {
    next_seq: u64,
    /// Encoded records not yet taken by a leader, in seq order.
    buf: Vec<u8>,
    /// (seq, encoded length) of each record in `buf`.
    buf_records: Vec<(u64, u32)>,
    /// Empty buffer swapped in when a leader takes `buf`, to reuse its allocation.
    spare: Vec<u8>,
    leader: bool,
    /// Every seq ≤ this has been written and fsynced, or its batch failed.
    settled_seq: u64,
    failures: Vec<Failure>,
    /// Durable records not yet trimmed, (seq, encoded length), in seq order.
    pending: VecDeque<(u64, u32)>,
    pending_bytes: u64,
    /// Seqs of `pending` the owner declared stored elsewhere ([`Wal::release`]) but that
    /// cannot be trimmed yet because an older durable record is still unreleased.
    released: BTreeSet<u64>,
    commits: u64,
}

/// A batch whose write failed; its appenders each take the error once.
struct Failure {
    first: u64,
    last: u64,
    waiting: usize,
    error: Arc<io::Error>,
}

/// Segment files; only the current leader or a trim holds this lock.
struct Segments {
    dir: PathBuf,
    /// Sorted by first seq; the last one is the one appended to.
    list: VecDeque<Segment>,
    active: Option<File>,
    active_size: u64,
    segment_bytes: u64,
}

#[derive(Debug, Clone)]
struct Segment {
    first_seq: u64,
    path: PathBuf,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not turn every later append into a panic: the data under these
    // locks stays consistent because nothing panics while mutating it.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

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

    /// Appends one raw input and returns its seq once it is fsynced. Blocks the calling
    /// thread for about one disk flush; from async code use [`Wal::append_async`] or
    /// `spawn_blocking`. An `Err` means the input must not be acknowledged (though after a
    /// failed flush it may still turn up at replay, which idempotent ingest tolerates).
    pub fn append(&self, format: &str, options_json: &str, payload: &[u8]) -> Result<u64, WalError> {
        let body_len = checked_body_len(format, options_json, payload)?;
        let timestamp = now_micros();
        let mut q = lock(&self.queue);
        let seq = q.next_seq;
        q.next_seq += 1;
        let fields = RecordFields { seq, timestamp, format, options_json, payload };
        let len = encode_record(&mut q.buf, &fields, body_len);
        q.buf_records.push((seq, len));
        loop {
            if q.settled_seq >= seq {
                return take_result(&mut q, seq);
            }
            q = if q.leader {
                self.committed.wait(q).unwrap_or_else(|poisoned| poisoned.into_inner())
            } else {
                self.lead(q)
            };
        }
    }

    /// Async wrapper over [`Wal::append`] on tokio's blocking pool, so request handlers do
    /// not stall a runtime worker during the fsync.
    pub async fn append_async<P>(
        self: &Arc<Self>,
        format: String,
        options_json: String,
        payload: P,
    ) -> Result<u64, WalError>
    where
        P: AsRef<[u8]> + Send + 'static,
    {
        let wal = Arc::clone(self);
        tokio::task::spawn_blocking(move || wal.append(&format, &options_json, payload.as_ref()))
            .await
            .map_err(|e| WalError::Task(e.to_string()))?
    }

    /// Writes everything queued as one batch, then wakes the waiters. Called with the queue
    /// locked and no leader active; returns with the queue locked again.
    fn lead<'a>(&'a self, mut q: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        let records = std::mem::take(&mut q.buf_records);
        let (Some(&(first, _)), Some(&(last, _))) = (records.first(), records.last()) else {
            return q;
        };
        q.leader = true;
        let mut batch = std::mem::take(&mut q.spare);
        std::mem::swap(&mut batch, &mut q.buf);
        drop(q);

        let result = lock(&self.io).write_batch(&batch, first);

        let mut q = lock(&self.queue);
        batch.clear();
        if batch.capacity() <= SPARE_KEEP_BYTES {
            q.spare = batch;
        }
        match result {
            Ok(()) => {
                for &(seq, len) in &records {
                    q.pending.push_back((seq, len));
                    q.pending_bytes += u64::from(len);
                }
            }
            Err(error) => {
                tracing::warn!(first, last, %error, "WAL batch write failed");
                q.failures.push(Failure { first, last, waiting: records.len(), error: Arc::new(error) });
            }
        }
        q.commits += 1;
        q.settled_seq = last;
        q.leader = false;
        self.committed.notify_all();
        q
    }

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
        let mut checkpoint = lock(&self.checkpoint);
        if seq <= *checkpoint {
            return Ok(());
        }
        write_checkpoint(&self.dir, seq)?;
        *checkpoint = seq;
        let doomed = take_trimmed(&mut lock(&self.io).list, seq);
        delete_segments(&self.dir, &doomed);

        let mut q = lock(&self.queue);
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
            let mut q = lock(&self.queue);
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
        let checkpoint = *lock(&self.checkpoint);
        let mut q = lock(&self.queue);
        q.released = q.released.split_off(&(checkpoint + 1));
        Ok(checkpoint)
    }

    /// Records appended (or replayed) and not yet trimmed, for flush scheduling and metrics.
    pub fn pending(&self) -> Pending {
        let q = lock(&self.queue);
        Pending { records: q.pending.len() as u64, bytes: q.pending_bytes }
    }

    /// Highest seq handed out whose write has finished (successfully or not); every
    /// acknowledged append has a seq ≤ this, so `trim_through(last_seq())` is always valid.
    pub fn last_seq(&self) -> u64 {
        lock(&self.queue).settled_seq
    }

    /// Group commits (one write + one fsync each) since open; appends / commits is the
    /// batching factor.
    pub fn commits(&self) -> u64 {
        lock(&self.queue).commits
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

/// Hands the batch outcome for `seq` to its appender.
fn take_result(q: &mut Queue, seq: u64) -> Result<u64, WalError> {
    let Some(i) = q.failures.iter().position(|f| f.first <= seq && seq <= f.last) else {
        return Ok(seq);
    };
    let failure = &mut q.failures[i];
    let error = Arc::clone(&failure.error);
    failure.waiting = failure.waiting.saturating_sub(1);
    if failure.waiting == 0 {
        q.failures.swap_remove(i);
    }
    Err(WalError::WriteFailed(error))
}

impl Segments {
    /// One write + one fsync for a whole batch, starting a new segment first if needed.
    fn write_batch(&mut self, batch: &[u8], first_seq: u64) -> io::Result<()> {
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
fn take_trimmed(list: &mut VecDeque<Segment>, seq: u64) -> Vec<Segment> {
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

fn delete_segments(dir: &Path, doomed: &[Segment]) {
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
const LOCK_WAIT: Duration = Duration::from_millis(500);

fn take_dir_lock(dir: &Path) -> Result<File, WalError> {
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

fn remove_if_exists(path: &Path) -> Result<(), WalError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(path)(e)),
        _ => Ok(()),
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn read_checkpoint(dir: &Path) -> Result<u64, WalError> {
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

fn write_checkpoint(dir: &Path, seq: u64) -> Result<(), WalError> {
    let tmp = dir.join(CHECKPOINT_TMP);
    let mut file = File::create(&tmp).map_err(io_err(&tmp))?;
    file.write_all(format!("{seq}\n").as_bytes()).and_then(|()| file.sync_all()).map_err(io_err(&tmp))?;
    let path = dir.join(CHECKPOINT);
    fs::rename(&tmp, &path).map_err(io_err(&path))?;
    sync_dir(dir).map_err(io_err(dir))
}

fn segment_name(first_seq: u64) -> String {
    format!("{SEGMENT_PREFIX}{first_seq:020}{SEGMENT_SUFFIX}")
}

fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(SEGMENT_PREFIX)?.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn list_segments(dir: &Path) -> Result<Vec<Segment>, WalError> {
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

/// What replay found across all segments.
struct Replay {
    entries: Vec<WalEntry>,
    /// (seq, encoded length) of each entry, for pending accounting.
    lens: Vec<(u64, u32)>,
    issues: Vec<ReplayIssue>,
    max_seq: u64,
    /// End of the last valid record of the last segment: where appends resume.
    last_valid_end: u64,
}

fn replay_segments(list: &VecDeque<Segment>, checkpoint: u64) -> Result<Replay, WalError> {
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

fn warn_issue(issue: &ReplayIssue, is_last: bool) {
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
fn open_active(seg: &Segment, valid_end: u64) -> Result<(Option<File>, u64), WalError> {
    let path = &seg.path;
    let file = OpenOptions::new().append(true).open(path).map_err(io_err(path))?;
    let len = file.metadata().map_err(io_err(path))?.len();
    if len > valid_end {
        file.set_len(valid_end).and_then(|()| file.sync_all()).map_err(io_err(path))?;
    }
    Ok((Some(file), valid_end))
}

/// Why bytes at an offset are not a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bad {
    Truncated { need: usize, have: usize },
    Magic,
    Length(u32),
    Checksum { stored: u32, computed: u32 },
    Body(&'static str),
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::Truncated { need, have } => {
                write!(f, "record needs {need} bytes, segment has {have} left")
            }
            Bad::Magic => write!(f, "expected record magic 'WXW1'"),
            Bad::Length(len) => write!(f, "body length {len} below the {BODY_FIXED}-byte minimum"),
            Bad::Checksum { stored, computed } => {
                write!(f, "CRC mismatch: stored {stored:08x}, computed {computed:08x}")
            }
            Bad::Body(what) => write!(f, "malformed body: {what}"),
        }
    }
}

struct BadSpan {
    offset: usize,
    len: usize,
    reason: Bad,
    torn_tail: bool,
}

struct Scan {
    records: Vec<(WalEntry, u32)>,
    bad: Vec<BadSpan>,
    /// Offset just past the last valid record.
    valid_end: usize,
}

/// Reads every record of one segment; `prev_seq` is the highest seq seen before it.
fn scan_segment(bytes: &[u8], prev_seq: u64) -> Scan {
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
fn resync(bytes: &[u8], from: usize, after_seq: u64) -> Option<usize> {
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

fn find_magic(hay: &[u8]) -> Option<usize> {
    hay.windows(MAGIC.len()).position(|w| w == MAGIC)
}

fn le_u16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn le_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn le_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// Parses the record starting at `pos`; returns it and its encoded length.
fn parse_record(bytes: &[u8], pos: usize) -> Result<(WalEntry, usize), Bad> {
    let rest = bytes.get(pos..).unwrap_or_default();
    let truncated = |need| Bad::Truncated { need, have: rest.len() };
    if rest.get(..4).ok_or(truncated(FRAME_HEADER))? != MAGIC {
        return Err(Bad::Magic);
    }
    let body_len = le_u32(rest, 4).ok_or(truncated(FRAME_HEADER))?;
    let stored = le_u32(rest, 8).ok_or(truncated(FRAME_HEADER))?;
    if (body_len as usize) < BODY_FIXED {
        return Err(Bad::Length(body_len));
    }
    let total = FRAME_HEADER + body_len as usize;
    let body = rest.get(FRAME_HEADER..total).ok_or(truncated(total))?;
    let computed = record_crc(&body_len.to_le_bytes(), body);
    if stored != computed {
        return Err(Bad::Checksum { stored, computed });
    }
    Ok((parse_body(body)?, total))
}

fn record_crc(len_bytes: &[u8], body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(len_bytes);
    hasher.update(body);
    hasher.finalize()
}

fn parse_body(body: &[u8]) -> Result<WalEntry, Bad> {
    let short = Bad::Body("fixed fields cut short");
    let seq = le_u64(body, 0).ok_or(short)?;
    let micros = le_u64(body, 8).ok_or(short)? as i64;
    let format_len = usize::from(le_u16(body, 16).ok_or(short)?);
    let options_len = le_u32(body, 18).ok_or(short)? as usize;
    let format_end = BODY_FIXED + format_len;
    let options_end = format_end.checked_add(options_len).ok_or(Bad::Body("options length overflows"))?;
    let too_long = Bad::Body("format and options longer than the body");
    let format = body.get(BODY_FIXED..format_end).ok_or(too_long)?;
    let options = body.get(format_end..options_end).ok_or(too_long)?;
    let payload = body.get(options_end..).ok_or(too_long)?;
    let format = std::str::from_utf8(format).map_err(|_| Bad::Body("format is not UTF-8"))?;
    let options = std::str::from_utf8(options).map_err(|_| Bad::Body("options are not UTF-8"))?;
    Ok(WalEntry {
        seq,
        timestamp: DateTime::from_timestamp_micros(micros).unwrap_or_default(),
        format: format.to_owned(),
        options_json: options.to_owned(),
        payload: payload.to_vec(),
    })
}

/// Body length of a record, or why it cannot be stored.
fn checked_body_len(format: &str, options_json: &str, payload: &[u8]) -> Result<u32, WalError> {
    if format.len() > usize::from(u16::MAX) {
        return Err(WalError::FormatTooLong(format.len()));
    }
    let size = BODY_FIXED.saturating_add(format.len()).saturating_add(options_json.len()).saturating_add(payload.len());
    if size > MAX_BODY_BYTES {
        return Err(WalError::TooLarge { size, limit: MAX_BODY_BYTES });
    }
    u32::try_from(size).map_err(|_| WalError::TooLarge { size, limit: MAX_BODY_BYTES })
}

struct RecordFields<'a> {
    seq: u64,
    timestamp: i64,
    format: &'a str,
    options_json: &'a str,
    payload: &'a [u8],
}

/// Appends one encoded record to `out` and returns its length. `body_len` comes from
/// [`checked_body_len`], which also bounds the u16/u32 length fields.
fn encode_record(out: &mut Vec<u8>, rec: &RecordFields<'_>, body_len: u32) -> u32 {
    let start = out.len();
    out.reserve(FRAME_HEADER + body_len as usize);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&body_len.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&rec.seq.to_le_bytes());
    out.extend_from_slice(&rec.timestamp.to_le_bytes());
    out.extend_from_slice(&(rec.format.len() as u16).to_le_bytes());
    out.extend_from_slice(&(rec.options_json.len() as u32).to_le_bytes());
    out.extend_from_slice(rec.format.as_bytes());
    out.extend_from_slice(rec.options_json.as_bytes());
    out.extend_from_slice(rec.payload);
    let crc = record_crc(&body_len.to_le_bytes(), &out[start + FRAME_HEADER..]);
    out[start + 8..start + FRAME_HEADER].copy_from_slice(&crc.to_le_bytes());
    FRAME_HEADER as u32 + body_len
}

fn now_micros() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    fn tiny(segment_bytes: u64) -> WalOptions {
        WalOptions { segment_bytes }
    }

    fn reopen(dir: &Path) -> (Wal, Vec<WalEntry>) {
        Wal::open(dir).expect("reopen")
    }

    fn segment_files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("wal-"))
            .collect();
        names.sort();
        names
    }

    fn only_segment(dir: &Path) -> PathBuf {
        let names = segment_files(dir);
        assert_eq!(names.len(), 1, "{names:?}");
        dir.join(&names[0])
    }

    fn seqs(entries: &[WalEntry]) -> Vec<u64> {
        entries.iter().map(|e| e.seq).collect()
    }

    /// Appends `n` records "metar" / `{"i":k}` / 50 bytes and returns the record lengths.
    fn append_n(wal: &Wal, n: u64) -> Vec<usize> {
        (1..=n)
            .map(|k| {
                let options = format!("{{\"i\":{k}}}");
                let payload = vec![b'a' + (k % 26) as u8; 50];
                wal.append("metar", &options, &payload).unwrap();
                34 + 5 + options.len() + 50
            })
            .collect()
    }

    #[test]
    fn round_trip_keeps_every_field_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let before = Utc::now();
        let binary: Vec<u8> = (0..=255u8).chain([0, 0, 0xff]).collect();
        {
            let (wal, entries) = Wal::open(dir.path()).unwrap();
            assert!(entries.is_empty());
            assert_eq!(wal.append("metar", "{}", b"KJFK 011251Z").unwrap(), 1);
            assert_eq!(wal.append("onemin", r#"{"month":"2024-07"}"#, &binary).unwrap(), 2);
            assert_eq!(wal.append("cli", "{}", b"").unwrap(), 3);
            assert_eq!(wal.last_seq(), 3);
            // 34 + format + options + payload: 34+5+2+12, 34+6+19+259, 34+3+2+0.
            assert_eq!(wal.pending(), Pending { records: 3, bytes: 53 + 318 + 39 });
            assert_eq!(fs::metadata(only_segment(dir.path())).unwrap().len(), 53 + 318 + 39);
        }
        let (wal, entries) = reopen(dir.path());
        assert!(wal.replay_issues().is_empty());
        assert_eq!(seqs(&entries), [1, 2, 3]);
        assert_eq!(entries[0].format, "metar");
        assert_eq!(entries[0].options_json, "{}");
        assert_eq!(entries[0].payload, b"KJFK 011251Z");
        assert_eq!(entries[1].format, "onemin");
        assert_eq!(entries[1].options_json, r#"{"month":"2024-07"}"#);
        assert_eq!(entries[1].payload, binary);
        assert_eq!(entries[2].format, "cli");
        assert!(entries[2].payload.is_empty());
        let after = Utc::now();
        for e in &entries {
            assert!(e.timestamp >= before - chrono::Duration::seconds(1) && e.timestamp <= after);
        }
        assert_eq!(wal.pending(), Pending { records: 3, bytes: 410 });
        assert_eq!(wal.append("dsm", "{}", b"x").unwrap(), 4);
    }

    #[test]
    fn torn_tail_is_truncated_and_earlier_records_survive() {
        let dir = tempfile::tempdir().unwrap();
        let lens = {
            let (wal, _) = Wal::open(dir.path()).unwrap();
            append_n(&wal, 5)
        };
        let path = only_segment(dir.path());
        let full: usize = lens.iter().sum();
        let four: usize = lens[..4].iter().sum();
        // Cut record 5 in its payload.
        OpenOptions::new().write(true).open(&path).unwrap().set_len(full as u64 - 7).unwrap();

        let (wal, entries) = reopen(dir.path());
        assert_eq!(seqs(&entries), [1, 2, 3, 4]);
        let issues = wal.replay_issues();
        assert_eq!(issues.len(), 1);
        assert!(issues[0].torn_tail);
        assert_eq!(issues[0].offset, four as u64);
        assert_eq!(issues[0].len, (lens[4] - 7) as u64);
        assert_eq!(fs::metadata(&path).unwrap().len(), four as u64);
        // Appends resume right after record 4; seq 5 was never durable, so it is reused.
        assert_eq!(wal.append("metar", "{}", b"again").unwrap(), 5);
        drop(wal);
        let (wal, entries) = reopen(dir.path());
        assert!(wal.replay_issues().is_empty());
        assert_eq!(seqs(&entries), [1, 2, 3, 4, 5]);
        assert_eq!(entries[4].payload, b"again");
    }

    #[test]
    fn every_cut_point_keeps_exactly_the_complete_records() {
        let dir = tempfile::tempdir().unwrap();
        let lens = {
            let (wal, _) = Wal::open(dir.path()).unwrap();
            append_n(&wal, 3)
        };
        let path = only_segment(dir.path());
        let original = fs::read(&path).unwrap();
        let ends = [lens[0], lens[0] + lens[1], lens[0] + lens[1] + lens[2]];
        for cut in 0..=original.len() {
            fs::write(&path, &original[..cut]).unwrap();
            let (wal, entries) = reopen(dir.path());
            let complete = ends.iter().filter(|&&end| end <= cut).count();
            assert_eq!(entries.len(), complete, "cut at {cut}");
            let torn = !ends.contains(&cut) && cut != 0;
            assert_eq!(wal.replay_issues().len(), usize::from(torn), "cut at {cut}");
        }
    }

    #[test]
    fn garbage_tail_is_dropped_without_panic() {
        let dir = tempfile::tempdir().unwrap();
        let lens = {
            let (wal, _) = Wal::open(dir.path()).unwrap();
            append_n(&wal, 3)
        };
        let path = only_segment(dir.path());
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        // Zeros (an extended but unwritten tail), a fake magic with a huge length, and junk.
        file.write_all(&[0u8; 100]).unwrap();
        file.write_all(b"WXW1\xff\xff\xff\x7f\0\0\0\0junk").unwrap();
        drop(file);

        let (wal, entries) = reopen(dir.path());
        assert_eq!(seqs(&entries), [1, 2, 3]);
        assert_eq!(wal.replay_issues().len(), 1);
        assert!(wal.replay_issues()[0].torn_tail);
        assert_eq!(wal.replay_issues()[0].len, 100 + 16);
        let total: usize = lens.iter().sum();
        assert_eq!(fs::metadata(&path).unwrap().len(), total as u64);
        assert_eq!(wal.append("metar", "{}", b"next").unwrap(), 4);
        drop(wal);
        let (wal, entries) = reopen(dir.path());
        assert!(wal.replay_issues().is_empty());
        assert_eq!(seqs(&entries), [1, 2, 3, 4]);
    }

    #[test]
    fn flipped_bit_mid_file_skips_only_that_record() {
        let dir = tempfile::tempdir().unwrap();
        let lens = {
            let (wal, _) = Wal::open(dir.path()).unwrap();
            append_n(&wal, 5)
        };
        let path = only_segment(dir.path());
        let original = fs::read(&path).unwrap();
        let third = lens[0] + lens[1];
        // A payload bit, a length bit and a magic bit of record 3 each lose only record 3.
        for (what, at) in [("payload", third + lens[2] - 3), ("length", third + 5), ("magic", third)] {
            let mut damaged = original.clone();
            damaged[at] ^= 0x10;
            fs::write(&path, &damaged).unwrap();
            let (wal, entries) = reopen(dir.path());
            assert_eq!(seqs(&entries), [1, 2, 4, 5], "{what}");
            let issues = wal.replay_issues();
            assert_eq!(issues.len(), 1, "{what}");
            assert_eq!(issues[0].offset, third as u64, "{what}");
            assert_eq!(issues[0].len, lens[2] as u64, "{what}");
            assert!(!issues[0].torn_tail, "{what}");
            assert_eq!(issues[0].segment, path, "{what}");
            // Damage in the middle is kept on disk for inspection, not truncated.
            assert_eq!(fs::metadata(&path).unwrap().len(), original.len() as u64);
        }
        let mut damaged = original.clone();
        damaged[third + lens[2] - 3] ^= 1;
        fs::write(&path, &damaged).unwrap();
        let (wal, _) = reopen(dir.path());
        assert!(wal.replay_issues()[0].reason.contains("CRC mismatch"));
    }

    #[test]
    fn random_bytes_never_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(segment_name(1));
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..50 {
            let len = (round * 37) % 700;
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                bytes.push(state as u8);
            }
            if round % 3 == 0 && len > 8 {
                bytes[len / 2..len / 2 + 4].copy_from_slice(&MAGIC);
            }
            fs::write(&path, &bytes).unwrap();
            let (wal, entries) = reopen(dir.path());
            assert!(entries.is_empty());
            assert_eq!(wal.replay_issues().len(), usize::from(len > 0));
            assert_eq!(fs::metadata(&path).unwrap().len(), 0);
        }
    }

    #[test]
    fn segments_roll_after_the_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        // Each record is 34 + 5 + 2 + 200 = 241 bytes: a segment fills after 5 (1205 bytes).
        {
            let (wal, _) = Wal::open_with(dir.path(), tiny(1000)).unwrap();
            for _ in 0..12 {
                wal.append("metar", "{}", &[7u8; 200]).unwrap();
            }
        }
        assert_eq!(segment_files(dir.path()), [segment_name(1), segment_name(6), segment_name(11)]);
        assert_eq!(segment_name(6), "wal-00000000000000000006.log");
        let (wal, entries) = Wal::open_with(dir.path(), tiny(1000)).unwrap();
        assert_eq!(seqs(&entries), (1..=12).collect::<Vec<_>>());
        // The reopened log keeps appending to the last, unfilled segment.
        assert_eq!(wal.append("metar", "{}", &[7u8; 200]).unwrap(), 13);
        assert_eq!(segment_files(dir.path()).len(), 3);
        assert_eq!(fs::metadata(dir.path().join(segment_name(11))).unwrap().len(), 3 * 241);
    }

    #[test]
    fn release_trims_only_a_released_prefix() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (wal, _) = Wal::open_with(dir.path(), tiny(1)).unwrap();
            append_n(&wal, 6);
            // 2, 3 and 5 are stored, 1 is not yet: nothing may be trimmed.
            assert_eq!(wal.release([2, 3, 5]).unwrap(), 0);
            assert_eq!(wal.pending().records, 6);
            // 1 arrives: the run 1..=3 goes, 4 holds 5 back.
            assert_eq!(wal.release([1]).unwrap(), 3);
            assert_eq!(wal.pending().records, 3);
            // Unknown, repeated and trimmed seqs change nothing.
            assert_eq!(wal.release([1, 2, 99]).unwrap(), 3);
            assert_eq!(wal.release([4]).unwrap(), 5);
        }
        let (_wal, entries) = reopen(dir.path());
        assert_eq!(seqs(&entries), [6], "only the unreleased record is replayed");
    }

    #[test]
    fn trim_deletes_whole_segments_and_checkpoint_hides_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        {
            // segment_bytes 1: every (single-threaded) append starts its own segment.
            let (wal, _) = Wal::open_with(dir.path(), tiny(1)).unwrap();
            append_n(&wal, 10);
            assert_eq!(segment_files(dir.path()).len(), 10);
            wal.trim_through(4).unwrap();
            assert_eq!(segment_files(dir.path()), (5..=10).map(segment_name).collect::<Vec<_>>());
            assert_eq!(fs::read_to_string(dir.path().join("checkpoint")).unwrap(), "4\n");
            assert_eq!(wal.pending().records, 6);
            assert_eq!(wal.pending().bytes, 5 * (34 + 5 + 7 + 50) + (34 + 5 + 8 + 50));
            // Going backwards or repeating is a no-op; going past the end is refused.
            wal.trim_through(2).unwrap();
            assert_eq!(fs::read_to_string(dir.path().join("checkpoint")).unwrap(), "4\n");
            assert!(matches!(wal.trim_through(11), Err(WalError::TrimBeyondEnd { requested: 11, last: 10 })));
        }
        let (wal, entries) = Wal::open_with(dir.path(), tiny(1)).unwrap();
        assert_eq!(seqs(&entries), [5, 6, 7, 8, 9, 10]);
        // Trim everything: the last segment stays (it is appended to) but is hidden.
        wal.trim_through(10).unwrap();
        assert_eq!(segment_files(dir.path()), [segment_name(10)]);
        assert_eq!(wal.pending(), Pending::default());
        drop(wal);
        let (wal, entries) = Wal::open_with(dir.path(), tiny(1)).unwrap();
        assert!(entries.is_empty());
        assert_eq!(wal.last_seq(), 10);
        assert_eq!(wal.append("metar", "{}", b"after").unwrap(), 11);
    }

    #[test]
    fn checkpoint_hides_trimmed_part_of_the_active_segment() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (wal, _) = Wal::open(dir.path()).unwrap();
            append_n(&wal, 5);
            wal.trim_through(3).unwrap();
            assert_eq!(wal.pending().records, 2);
        }
        assert_eq!(segment_files(dir.path()).len(), 1);
        let (wal, entries) = reopen(dir.path());
        assert_eq!(seqs(&entries), [4, 5]);
        assert_eq!(wal.pending().records, 2);
    }

    #[test]
    fn interrupted_trim_is_finished_at_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (wal, _) = Wal::open_with(dir.path(), tiny(1)).unwrap();
            append_n(&wal, 4);
        }
        // As if the process died after persisting the checkpoint but before deleting.
        fs::write(dir.path().join("checkpoint"), "2\n").unwrap();
        fs::write(dir.path().join("checkpoint.tmp"), "3").unwrap();
        let (_wal, entries) = reopen(dir.path());
        assert_eq!(seqs(&entries), [3, 4]);
        assert_eq!(segment_files(dir.path()), [segment_name(3), segment_name(4)]);
        assert!(!dir.path().join("checkpoint.tmp").exists());
    }

    #[test]
    fn second_open_of_the_same_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(dir.path()).unwrap();
        assert!(matches!(Wal::open(dir.path()), Err(WalError::Locked(_))));
        drop(wal);
        assert!(Wal::open(dir.path()).is_ok());
    }

    #[test]
    fn oversized_inputs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(dir.path()).unwrap();
        let long = "x".repeat(70_000);
        assert!(matches!(wal.append(&long, "{}", b""), Err(WalError::FormatTooLong(70_000))));
        assert_eq!(wal.last_seq(), 0);
        assert_eq!(wal.append("metar", "{}", b"ok").unwrap(), 1);
    }

    /// A failed write (ENOSPC from /dev/full standing in for the segment) fails only the
    /// appends of that batch; the log moves to a new segment and keeps working.
    #[cfg(target_os = "linux")]
    #[test]
    fn failed_write_is_reported_and_the_log_recovers() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(dir.path()).unwrap();
        let trap = dir.path().join(segment_name(1));
        std::os::unix::fs::symlink("/dev/full", &trap).unwrap();
        let err = wal.append("metar", "{}", b"lost").unwrap_err();
        assert!(matches!(err, WalError::WriteFailed(_)), "{err}");
        assert_eq!(wal.pending().records, 0);
        assert_eq!(wal.append("metar", "{}", b"kept").unwrap(), 2);
        assert_eq!(wal.pending().records, 1);
        assert_eq!(wal.last_seq(), 2);
        drop(wal);
        let (_wal, entries) = reopen(dir.path());
        assert_eq!(seqs(&entries), [2]);
        assert_eq!(entries[0].payload, b"kept");
        fs::remove_file(&trap).unwrap();
    }

    #[test]
    fn concurrent_appends_are_replayed_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut acked = Vec::new();
        {
            let (wal, _) = Wal::open_with(dir.path(), tiny(64 << 10)).unwrap();
            let wal = Arc::new(wal);
            let handles: Vec<_> = (0..8)
                .map(|t| {
                    let wal = Arc::clone(&wal);
                    std::thread::spawn(move || {
                        (0..500)
                            .map(|i| {
                                let payload = format!("t{t}-i{i}");
                                (wal.append("metar", "{}", payload.as_bytes()).unwrap(), payload)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for h in handles {
                acked.extend(h.join().unwrap());
            }
            assert_eq!(wal.last_seq(), 4000);
            assert_eq!(wal.pending().records, 4000);
            assert!(wal.commits() <= 4000);
        }
        let unique: HashSet<u64> = acked.iter().map(|(s, _)| *s).collect();
        assert_eq!(unique.len(), 4000);
        let (wal, entries) = Wal::open_with(dir.path(), tiny(64 << 10)).unwrap();
        assert!(wal.replay_issues().is_empty());
        assert_eq!(seqs(&entries), (1..=4000).collect::<Vec<_>>());
        for (seq, payload) in &acked {
            let entry = &entries[(*seq - 1) as usize];
            assert_eq!(entry.payload, payload.as_bytes(), "seq {seq}");
        }
        assert!(segment_files(dir.path()).len() > 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn append_async_from_many_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(dir.path()).unwrap();
        let wal = Arc::new(wal);
        let tasks: Vec<_> = (0..16)
            .map(|t| {
                let wal = Arc::clone(&wal);
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    for i in 0..20 {
                        let payload = format!("{t}:{i}").into_bytes();
                        got.push(wal.append_async("metar".into(), "{}".into(), payload).await);
                    }
                    got
                })
            })
            .collect();
        let mut all = HashSet::new();
        for task in tasks {
            for seq in task.await.unwrap() {
                assert!(all.insert(seq.unwrap()));
            }
        }
        assert_eq!(all.len(), 320);
        assert_eq!(wal.last_seq(), 320);
    }

    const CRASH_CHILD_ENV: &str = "WXLAKE_WAL_CRASH_CHILD_DIR";

    /// Body of the child process of `kill9_keeps_every_acknowledged_record`: appends from 4
    /// threads and prints "ack <seq>" after each append returns, until killed (or 30 s).
    #[test]
    #[ignore = "child process of kill9_keeps_every_acknowledged_record"]
    fn crash_child() {
        let Some(dir) = std::env::var_os(CRASH_CHILD_ENV) else {
            return;
        };
        let (wal, _) = Wal::open_with(Path::new(&dir), tiny(256 << 10)).unwrap();
        let wal = Arc::new(wal);
        let started = Instant::now();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let wal = Arc::clone(&wal);
                std::thread::spawn(move || {
                    let payload = vec![b'0' + t; 300];
                    while started.elapsed() < Duration::from_secs(30) {
                        let seq = wal.append("metar", "{}", &payload).unwrap();
                        println!("ack {seq}");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn kill9_keeps_every_acknowledged_record() {
        let dir = tempfile::tempdir().unwrap();
        let this_module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &format!("{this_module}::crash_child")])
            .args(["--ignored", "--nocapture", "--test-threads=1"])
            .env(CRASH_CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut acked = Vec::new();
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            // Only newline-terminated lines count: a line cut by the kill is not an ack.
            while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                let text = String::from_utf8_lossy(&line);
                if let Some(seq) = text.strip_suffix('\n').and_then(|l| l.strip_prefix("ack ")) {
                    acked.push(seq.parse::<u64>().unwrap());
                    if acked.len() == 1 {
                        let _ = first_tx.send(());
                    }
                }
                line.clear();
            }
            acked
        });
        let started = first_rx.recv_timeout(Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(200));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        let acked = reader.join().unwrap();
        assert!(started.is_ok(), "child never acknowledged an append");
        assert!(acked.len() >= 10, "only {} acks", acked.len());

        let (wal, entries) = Wal::open(dir.path()).unwrap();
        let replayed: HashSet<u64> = entries.iter().map(|e| e.seq).collect();
        assert_eq!(replayed.len(), entries.len(), "a seq replayed twice");
        for seq in &acked {
            assert!(replayed.contains(seq), "acknowledged seq {seq} lost");
        }
        assert!(entries.windows(2).all(|w| w[0].seq < w[1].seq));
        assert!(entries.iter().all(|e| e.format == "metar" && e.payload.len() == 300));
        assert!(wal.replay_issues().iter().all(|i| i.torn_tail));
    }
}
