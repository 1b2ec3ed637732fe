//! Durable, bounded log of stream events: the source of event ids and of replay.
//!
//! Layout of the log directory:
//! - `next-id`: the id reservation, a decimal u64. Ids are handed out from blocks of
//!   [`ID_BLOCK`]; before the first id of a block is used, the end of the block is written here
//!   and fsynced (write-temp, fsync, rename, fsync dir). A restart continues after the reserved
//!   block, so ids stay monotonic even if the machine lost the unsynced tail of a segment. The
//!   cost is one fsync per [`ID_BLOCK`] events and a gap in the ids after each restart (ids are
//!   only ordered, never contiguous).
//! - `events-<first id, 20 digits>.jsonl`: segments, one JSON line per event
//!   (`{"id":..,"station":..,"name":..,"at":..,"data":{..}}`, `data` always last), appended in
//!   id order. Every open starts a new segment, so a line torn by a crash is never glued to the
//!   next one. A segment rotates when its first event is older than retention / 8 (or past
//!   [`MAX_SEGMENT_BYTES`]) and is deleted once all its events have left the retained window,
//!   so the directory holds about retention × 9/8 of events and never needs a rewrite.
//!
//! A write that fails (a full disk) is cut back to where the line began, so the segment
//! stays clean and active and the id is not issued; if even that fails, the segment is
//! retired and the id skipped, so no later segment reuses its name. Segments are deleted by
//! identity, never the one being appended to. A segment that cannot be read at open is
//! skipped (the log still opens) and its ids replay as [`Replay::Expired`]; a line is read
//! through a bound of [`MAX_EVENT_BYTES`], whatever the file holds.
//!
//! Durability policy: each event is written with one `write` call (in the OS page cache as
//! soon as `append` returns, so a process crash loses nothing), and the segment is fsynced at
//! most once per [`SYNC_INTERVAL`] (on the next append), on rotation, on [`EventLog::sync`] and
//! on drop. A power loss can thus lose about a second of events. That is acceptable because
//! events are derived data (they can be regenerated from observations), while ids, which
//! clients hold across reconnects, are protected by the reservation above: a client holding
//! an id from the lost tail gets [`Replay::Expired`] and resyncs.
//!
//! Memory is bounded by size ([`EventLogOptions::memory_budget`]), not by how many events the
//! retention happens to hold: a parsed JSON payload costs several times its text, and a
//! burst of events must not be able to take the server down. The payloads stay on disk; in
//! memory the log keeps
//! - an index of the retained events: id, time, interned station and name, and where the
//!   line sits (segment, offset, length), a fixed few dozen bytes per event;
//! - the encoded SSE frames of the newest events, as long as index and frames together fit
//!   the budget.
//!
//! Replay takes cached frames from memory and reads the others back from the segments (the
//! line's `data` bytes become the frame as they are, the payload is never parsed), so it is
//! exact and in id order whatever the budget. The index may use at most half the budget: past
//! that the oldest events leave the retained window early and a replay from before them is
//! [`Replay::Expired`], as after the retention. A restart reads only the index (each line is
//! validated, its payload not kept); the frame cache refills with new events.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fs;
use std::io;
use std::mem::size_of;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use parking_lot::Mutex;
use tracing::{debug, info, warn};

use self::files::{list_segments, read_reservation, LineHeader, DATA_KEY, NEXT_ID_FILE};
#[cfg(test)]
use self::files::{read_line_limited, SEGMENT_PREFIX, SEGMENT_SUFFIX};
use self::load::Load;
use self::segments::{ActiveSegment, Segment};
use super::frame::{encode_raw_frame, iso_timestamp};

mod files;
mod load;
mod replay;
mod segments;

/// Ids reserved per fsync of the `next-id` file.
pub const ID_BLOCK: u64 = 1024;
/// Longest time an appended event stays unsynced (while events keep arriving).
pub const SYNC_INTERVAL: StdDuration = StdDuration::from_secs(1);
/// Size at which a segment rotates even if it is young (bounds one file during bursts).
pub const MAX_SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// Largest stored line of one event; a payload this size is a bug upstream, not news.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// Memory the log may use for its index and cached frames unless configured otherwise.
pub const DEFAULT_MEMORY_BUDGET: usize = 16 * 1024 * 1024;

/// What a cached event costs beyond its frame: the `Event`, its `Arc` counts, its slot in the
/// cache and the allocator's rounding.
const CACHED_EVENT_OVERHEAD: usize = size_of::<Event>() + 64;

/// How long events stay replayable unless configured otherwise: a trading day and then some,
/// so a client that was offline overnight still catches up.
pub fn default_retention() -> Duration {
    Duration::hours(24)
}

/// How much the log keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventLogOptions {
    /// Events younger than this are replayable ([`default_retention`]).
    pub retention: Duration,
    /// Bytes of memory for the index and the cached frames together
    /// ([`DEFAULT_MEMORY_BUDGET`]); see the module docs.
    pub memory_budget: usize,
}

impl Default for EventLogOptions {
    fn default() -> Self {
        EventLogOptions { retention: default_retention(), memory_budget: DEFAULT_MEMORY_BUDGET }
    }
}

/// One stream event, as published and replayed: who it is about and its encoded SSE frame.
#[derive(Debug, Clone)]
pub struct Event {
    /// Monotonic id; sent as the SSE `id:` line and as the string field `data.id`.
    pub id: u64,
    /// Station the event is about; clients receive only their stations' events.
    pub station: Arc<str>,
    /// SSE event name (`observation`, `new_high`, ...).
    pub name: Arc<str>,
    /// When the event was created; drives retention.
    pub at: DateTime<Utc>,
    /// The SSE frame (`event:`, `id:`, `data:` lines), encoded once and shared by every
    /// client that receives the event: a fan-out to thousands of clients copies a reference.
    frame: Bytes,
}

impl Event {
    /// The encoded SSE frame (a reference-counted copy).
    pub fn sse_frame(&self) -> Bytes {
        self.frame.clone()
    }

    /// The JSON payload (with `id` and `timestamp`), decoded from the frame. The stream never
    /// needs it; it is for tests and diagnostics.
    pub fn data(&self) -> serde_json::Result<serde_json::Value> {
        let start = memchr::memmem::find(&self.frame, b"\ndata: ").map_or(self.frame.len(), |p| p + 7);
        let data = &self.frame[start..];
        serde_json::from_slice(data.strip_suffix(b"\n\n").unwrap_or(data))
    }

    /// Memory the frame cache counts for this event.
    fn cost(&self) -> usize {
        self.frame.len() + CACHED_EVENT_OVERHEAD
    }
}

/// Answer to "what did a client miss after `last_event_id`".
#[derive(Debug, Clone)]
pub enum Replay {
    /// Retained events after the id for the requested stations, in id order (possibly empty:
    /// the client missed nothing). With `more`, the answer stopped at the size asked for:
    /// ask again after the last event's id for the rest.
    Events {
        /// The events, oldest first.
        events: Vec<Arc<Event>>,
        /// True when matching events remain after the last one.
        more: bool,
    },
    /// The id is not a number or was never issued (in the future): the client's position is
    /// meaningless here and it must resync.
    Unknown,
    /// Events after the id have left the retained window (or were lost in a crash, or cannot
    /// be read back), so an exact replay is impossible and the client must resync.
    Expired,
}

/// Failures of the event log. Appends are all-or-nothing: an error means no id was issued.
#[derive(Debug, thiserror::Error)]
pub enum EventLogError {
    /// A file or directory operation failed.
    #[error("event log: {action} {path}: {source}")]
    Io {
        /// What was being done ("write", "fsync", ...).
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The `next-id` file does not hold a number; ids cannot be continued safely.
    #[error("event log: {path} holds {found:?}, expected a decimal id")]
    BadReservation {
        /// Path of the reservation file.
        path: PathBuf,
        /// What it held (truncated).
        found: String,
    },
    /// Event payloads are JSON objects (the log adds `id` and `timestamp` to them).
    #[error("event data must be a JSON object, found {found}")]
    NotAnObject {
        /// JSON type found instead.
        found: &'static str,
    },
    /// The encoded event is larger than [`MAX_EVENT_BYTES`].
    #[error("event of {bytes} bytes refused: the log stores events of at most {max} bytes")]
    TooLarge {
        /// Size of the encoded line.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A line read back for replay is not the event the index points to (the file changed
    /// under the log).
    #[error("event log: {path} at byte {offset}: {reason}")]
    Corrupt {
        /// The segment.
        path: PathBuf,
        /// Where the line was expected.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The payload could not be serialized (should not happen for a `serde_json::Value`).
    #[error("event log: encoding event: {0}")]
    Encode(#[from] serde_json::Error),
}

type Result<T> = std::result::Result<T, EventLogError>;

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> EventLogError {
    let path = path.to_path_buf();
    move |source| EventLogError::Io { action, path, source }
}

/// Counters for monitoring and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventLogStats {
    /// Events in the retained window (replayable).
    pub retained: usize,
    /// The newest of them whose frames are held in memory.
    pub cached: usize,
    /// Bytes the index and the cached frames use (allocated capacity, not just length).
    pub memory_bytes: usize,
    /// The configured budget `memory_bytes` stays within.
    pub memory_budget: usize,
}

/// The durable, bounded event log. Cheap to share behind an `Arc`; all methods take `&self`.
#[derive(Debug)]
pub struct EventLog {
    inner: Mutex<Inner>,
}

/// Where one retained event's line is, and what replay filters on. Kept small: the index
/// holds one per retained event.
#[derive(Debug, Clone, Copy)]
struct Entry {
    id: u64,
    /// Creation time, milliseconds since the epoch (retention).
    at_ms: i64,
    /// Byte offset of the line in its segment.
    offset: u64,
    /// Line length, newline included.
    len: u32,
    /// Sequence number of the segment ([`Segment::seq`]).
    segment: u32,
    /// Interned station.
    station: u32,
    /// Interned event name.
    name: u32,
}

/// Strings stored once and named by a small number (stations and event names repeat in every
/// event).
#[derive(Debug, Default)]
struct Interner {
    values: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
}

impl Interner {
    fn intern(&mut self, value: &str) -> u32 {
        if let Some(&i) = self.index.get(value) {
            return i;
        }
        let i = self.values.len() as u32;
        let value: Arc<str> = Arc::from(value);
        self.values.push(Arc::clone(&value));
        self.index.insert(value, i);
        i
    }

    fn get(&self, value: &str) -> Option<u32> {
        self.index.get(value).copied()
    }

    fn resolve(&self, i: u32) -> Arc<str> {
        self.values.get(i as usize).cloned().unwrap_or_else(|| Arc::from(""))
    }

    fn len(&self) -> usize {
        self.values.len()
    }
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    retention: Duration,
    rotate_every: Duration,
    budget: usize,
    /// Most entries the index may hold (half the budget).
    max_entries: usize,
    /// Retained events, ascending ids.
    entries: VecDeque<Entry>,
    /// Events of the newest `cache.len()` entries, aligned with the tail of `entries`.
    cache: VecDeque<Arc<Event>>,
    /// Sum of [`Event::cost`] over `cache`.
    cache_bytes: usize,
    stations: Interner,
    names: Interner,
    /// Highest id that may have been issued (ids above it are "in the future").
    last_issued: u64,
    /// Highest id dropped from the retained window: replay from below it cannot be exact.
    pruned_through: u64,
    /// Ranges of ids strictly between lo and hi that were reserved before an open (this one
    /// or an earlier one still in the retained window) but are absent from disk: possibly
    /// issued and lost in a crash, so a client holding one must resync. `hi` is also the head
    /// a fresh client started from after that restart, so it stays replayable. Every restart
    /// leaves its range in the segment names (a run's first segment starts after the old
    /// reservation), so each open finds them all again, not only the newest.
    lost: Vec<(u64, u64)>,
    /// Ids up to this are covered by the fsynced reservation.
    reserved_through: u64,
    /// Closed segments on disk, oldest first.
    closed: VecDeque<Segment>,
    /// The segment being appended to (created lazily on the first append after open).
    active: Option<ActiveSegment>,
    /// Sequence number of the next segment created or loaded.
    next_seq: u32,
    last_sync: Instant,
    /// The next write's injected failure (tests only; see [`WriteFault`]).
    #[cfg(test)]
    fault: Option<WriteFault>,
}

/// A failure tests inject into the next segment write: `torn` bytes of the line reach the
/// file before the error (as with ENOSPC midway), and with `truncate_fails` the repair
/// fails too.
#[cfg(test)]
#[derive(Debug, Clone, Copy)]
struct WriteFault {
    torn: usize,
    truncate_fails: bool,
}

impl EventLog {
    /// Opens (creating if needed) the log in `dir`, keeping events younger than `retention`,
    /// with the default memory budget.
    pub fn open(dir: &Path, retention: Duration) -> Result<Self> {
        Self::open_with(dir, EventLogOptions { retention, ..EventLogOptions::default() })
    }

    /// Opens (creating if needed) the log in `dir` with explicit options.
    ///
    /// Unreadable lines (a write torn by a crash, a hand edit) are skipped with a warning:
    /// losing one derived event is better than refusing to start the stream. So is a
    /// segment that cannot be read at all (its ids then replay as [`Replay::Expired`]); only
    /// a directory that cannot be listed or a corrupt reservation refuse to open.
    pub fn open_with(dir: &Path, options: EventLogOptions) -> Result<Self> {
        fs::create_dir_all(dir).map_err(io_err("create", dir))?;
        let retention = options.retention.max(Duration::seconds(1));
        let reserved = read_reservation(&dir.join(NEXT_ID_FILE))?;
        let mut inner = Inner {
            dir: dir.to_path_buf(),
            retention,
            rotate_every: (retention / 8).max(Duration::seconds(1)),
            budget: options.memory_budget,
            max_entries: (options.memory_budget / 2 / size_of::<Entry>()).max(1),
            entries: VecDeque::new(),
            cache: VecDeque::new(),
            cache_bytes: 0,
            stations: Interner::default(),
            names: Interner::default(),
            last_issued: 0,
            pruned_through: 0,
            lost: Vec::new(),
            reserved_through: reserved,
            closed: VecDeque::new(),
            active: None,
            next_seq: 0,
            last_sync: Instant::now(),
            #[cfg(test)]
            fault: None,
        };
        let cutoff_ms = (Utc::now() - retention).timestamp_millis();
        let mut load = Load::default();
        let segments = list_segments(dir)?;
        for (i, (first_id, path)) in segments.iter().enumerate() {
            // Ids between what the previous segments hold and this one's first were reserved
            // by an earlier run and never reached disk (a rotation leaves no such range).
            if load.first_segment_id.is_some() && first_id.saturating_sub(1) > load.max_id {
                inner.lost.push((load.max_id, first_id - 1));
            }
            load.first_segment_id.get_or_insert(*first_id);
            // The last id the segment may hold: up to the next segment's first, or for the
            // newest one up to the reservation (no id beyond it was ever issued).
            let through = match segments.get(i + 1) {
                Some((next, _)) => next.saturating_sub(1),
                None => reserved.max(*first_id),
            };
            inner.load_segment(path, cutoff_ms, through, &mut load);
        }
        inner.pruned_through = match load.first_segment_id {
            Some(first) => inner.pruned_through.max(first.saturating_sub(1)),
            None => reserved,
        };
        inner.last_issued = load.max_id.max(reserved);
        if reserved > load.max_id && load.first_segment_id.is_some() {
            inner.lost.push((load.max_id, reserved));
        }
        // Ranges wholly below the retained window are answered as expired anyway.
        let pruned = inner.pruned_through;
        inner.lost.retain(|&(_, hi)| hi > pruned);
        inner.prune(Utc::now());
        info!(
            dir = %dir.display(),
            retained = inner.entries.len(),
            last_issued = inner.last_issued,
            skipped_lines = load.skipped,
            skipped_segments = load.skipped_segments,
            "event log opened"
        );
        Ok(EventLog { inner: Mutex::new(inner) })
    }

    /// Records an event and returns it with its new id; publish the returned `Arc` to the hub.
    ///
    /// `data` must be a JSON object; the log adds `"id"` (the id as a string, as the spec's
    /// payloads carry it) and `"timestamp"` (`at`, RFC 3339). The event is on disk (page cache)
    /// when this returns; see the module docs for the fsync policy.
    pub fn append(&self, station: &str, name: &str, data: serde_json::Value, at: DateTime<Utc>) -> Result<Arc<Event>> {
        let mut data = data;
        let Some(object) = data.as_object_mut() else {
            return Err(EventLogError::NotAnObject { found: json_type(&data) });
        };
        let mut inner = self.inner.lock();
        let id = inner.last_issued + 1;
        object.insert("id".into(), serde_json::Value::String(id.to_string()));
        object.insert("timestamp".into(), serde_json::Value::String(iso_timestamp(at)));
        let json = serde_json::to_vec(&data)?;
        let header = LineHeader { id, station: Cow::Borrowed(station), name: Cow::Borrowed(name), at };
        let mut line = serde_json::to_vec(&header)?;
        // The header's closing brace: the payload follows as the last field.
        line.pop();
        line.extend_from_slice(DATA_KEY);
        line.extend_from_slice(&json);
        line.extend_from_slice(b"}\n");
        if line.len() > MAX_EVENT_BYTES {
            return Err(EventLogError::TooLarge { bytes: line.len(), max: MAX_EVENT_BYTES });
        }
        if id > inner.reserved_through {
            inner.reserve(id + ID_BLOCK - 1)?;
        }
        let (segment, offset) = inner.write_line(&line, id, at)?;
        inner.last_issued = id;
        let (station_ix, name_ix) = (inner.stations.intern(station), inner.names.intern(name));
        let event = Arc::new(Event {
            id,
            station: inner.stations.resolve(station_ix),
            name: inner.names.resolve(name_ix),
            at,
            frame: encode_raw_frame(name, Some(id), &json),
        });
        let entry = Entry {
            id,
            at_ms: at.timestamp_millis(),
            offset,
            len: line.len() as u32,
            segment,
            station: station_ix,
            name: name_ix,
        };
        inner.push(entry, Some(Arc::clone(&event)));
        inner.prune(Utc::now());
        inner.sync_if_due();
        Ok(event)
    }

    /// The highest id issued so far (0 for an empty log): where a fresh client "starts".
    pub fn last_id(&self) -> u64 {
        self.inner.lock().last_issued
    }

    /// Number of events in the retained window.
    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    /// True when no event is retained.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Retained and cached events and the memory they use.
    pub fn stats(&self) -> EventLogStats {
        let inner = self.inner.lock();
        EventLogStats {
            retained: inner.entries.len(),
            cached: inner.cache.len(),
            memory_bytes: inner.index_bytes() + inner.cache_bytes,
            memory_budget: inner.budget,
        }
    }

    /// Forces the active segment to stable storage (e.g. on graceful shutdown).
    pub fn sync(&self) -> Result<()> {
        self.inner.lock().sync()
    }
}

impl Drop for EventLog {
    fn drop(&mut self) {
        if let Err(e) = self.inner.lock().sync() {
            warn!(error = %e, "event log: final fsync failed");
        }
    }
}

impl Inner {
    /// Memory of the index (its allocation, which is what the process pays).
    fn index_bytes(&self) -> usize {
        self.entries.capacity() * size_of::<Entry>()
    }

    /// Indexes an event (with its frame for the cache when it has one), then enforces the
    /// budget: the index's share first, the frames in what is left.
    fn push(&mut self, entry: Entry, event: Option<Arc<Event>>) {
        self.entries.push_back(entry);
        match event {
            Some(event) => {
                self.cache_bytes += event.cost();
                self.cache.push_back(event);
            }
            // An event without a frame ends the cached tail: the cache must stay aligned with
            // the newest entries.
            None => {
                self.cache.clear();
                self.cache_bytes = 0;
            }
        }
        while self.entries.len() > self.max_entries {
            self.pop_front_entry();
        }
        let frames_budget = self.budget.saturating_sub(self.index_bytes());
        while self.cache_bytes > frames_budget {
            let Some(event) = self.cache.pop_front() else {
                break;
            };
            self.cache_bytes -= event.cost();
        }
    }

    /// Drops the oldest retained event (and its cached frame).
    fn pop_front_entry(&mut self) {
        let Some(entry) = self.entries.pop_front() else {
            return;
        };
        self.pruned_through = self.pruned_through.max(entry.id);
        if self.cache.len() > self.entries.len() {
            if let Some(event) = self.cache.pop_front() {
                self.cache_bytes -= event.cost();
            }
        }
    }

    /// Drops events older than the retention, relative to `now`, and the closed segments
    /// none of whose events is retained any more.
    fn prune(&mut self, now: DateTime<Utc>) {
        let cutoff_ms = (now - self.retention).timestamp_millis();
        while self.entries.front().is_some_and(|e| e.at_ms < cutoff_ms) {
            self.pop_front_entry();
        }
        while self.closed.front().is_some_and(|s| s.last_id <= self.pruned_through) {
            if let Some(segment) = self.closed.pop_front() {
                // A segment is deleted by identity: never the file being appended to, even
                // if a closed record names the same path.
                if self.active.as_ref().is_some_and(|a| a.path == segment.path) {
                    warn!(path = %segment.path.display(), "event log: expired segment is the active file, kept");
                    continue;
                }
                match fs::remove_file(&segment.path) {
                    Ok(()) => debug!(path = %segment.path.display(), "event log: expired segment removed"),
                    Err(e) => warn!(path = %segment.path.display(), error = %e, "event log: cannot remove segment"),
                }
            }
        }
    }
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
