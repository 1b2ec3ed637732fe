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
use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::mem::size_of;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration as StdDuration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use tracing::{debug, info, warn};

use super::frame::{encode_raw_frame, iso_timestamp};
use crate::lake::durable::{self, Access};

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

const NEXT_ID_FILE: &str = "next-id";
const SEGMENT_PREFIX: &str = "events-";
const SEGMENT_SUFFIX: &str = ".jsonl";
/// What introduces the payload, the last field of every line.
const DATA_KEY: &[u8] = b",\"data\":";
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

#[derive(Debug)]
struct Segment {
    seq: u32,
    path: Arc<Path>,
    /// Highest id in the segment (0 when none was readable).
    last_id: u64,
}

#[derive(Debug)]
struct ActiveSegment {
    seq: u32,
    path: Arc<Path>,
    file: File,
    first_at: DateTime<Utc>,
    last_id: u64,
    bytes: u64,
    dirty: bool,
}

impl ActiveSegment {
    fn into_closed(self) -> Segment {
        Segment { seq: self.seq, path: self.path, last_id: self.last_id }
    }
}

/// The fixed fields of a stored line; `data` follows them as the last field.
#[derive(Serialize, Deserialize)]
struct LineHeader<'a> {
    id: u64,
    #[serde(borrow)]
    station: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    at: DateTime<Utc>,
}

/// One event of a replay answer, resolved under the lock and read after it.
enum Slot {
    Cached(Arc<Event>),
    Disk { path: Arc<Path>, entry: Entry, station: Arc<str>, name: Arc<str> },
}

/// A replay answer before any disk read.
struct Plan {
    slots: Vec<Slot>,
    more: bool,
    on_disk: usize,
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
        let mut inner = self.lock();
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

    /// What a client that last saw `last_id` missed, for its `stations`: everything.
    ///
    /// `Unknown` and `Expired` tell the caller to send an explicit resync event instead of
    /// pretending the replay is complete. May read segment files.
    pub fn replay_after(&self, last_id: &str, stations: &HashSet<String>) -> Replay {
        self.replay_page(last_id, stations, usize::MAX)
    }

    /// Like [`EventLog::replay_after`], but stops once about `max_bytes` of frames are
    /// gathered (at least one event), with `more` set: a client far behind is served page by
    /// page instead of holding its whole backlog in memory. May read segment files.
    pub fn replay_page(&self, last_id: &str, stations: &HashSet<String>, max_bytes: usize) -> Replay {
        let plan = match self.plan(last_id, stations, max_bytes) {
            Ok(plan) => plan,
            Err(answer) => return answer,
        };
        match read_slots(plan.slots) {
            Ok(events) => Replay::Events { events, more: plan.more },
            Err(e) => {
                warn!(error = %e, "event log: replay cannot be read back; the client resyncs");
                Replay::Expired
            }
        }
    }

    /// [`EventLog::replay_page`] when it can be answered from memory alone (no file read,
    /// so callers on an async worker may use it directly); `None` when the page needs the
    /// segment files.
    pub fn replay_page_cached(&self, last_id: &str, stations: &HashSet<String>, max_bytes: usize) -> Option<Replay> {
        let plan = match self.plan(last_id, stations, max_bytes) {
            Ok(plan) => plan,
            Err(answer) => return Some(answer),
        };
        if plan.on_disk > 0 {
            return None;
        }
        let events = plan
            .slots
            .into_iter()
            .filter_map(|s| match s {
                Slot::Cached(e) => Some(e),
                Slot::Disk { .. } => None,
            })
            .collect();
        Some(Replay::Events { events, more: plan.more })
    }

    /// Resolves a replay under the lock: cached events as they are, the others as places to
    /// read once the lock is released (appends never wait for a replay's disk reads).
    fn plan(&self, last_id: &str, stations: &HashSet<String>, max_bytes: usize) -> std::result::Result<Plan, Replay> {
        let Ok(last) = last_id.trim().parse::<u64>() else {
            return Err(Replay::Unknown);
        };
        let mut inner = self.lock();
        inner.prune(Utc::now());
        if last > inner.last_issued {
            return Err(Replay::Unknown);
        }
        if last < inner.pruned_through {
            return Err(Replay::Expired);
        }
        // `hi` itself is safe: whoever saw the newest id of the old run saw everything before it.
        if inner.lost.iter().any(|&(lo, hi)| last > lo && last < hi) {
            return Err(Replay::Expired);
        }
        let mut wanted = vec![false; inner.stations.len()];
        for station in stations {
            if let Some(i) = inner.stations.get(station) {
                wanted[i as usize] = true;
            }
        }
        let start = inner.entries.partition_point(|e| e.id <= last);
        let cached_from = inner.entries.len() - inner.cache.len();
        let mut plan = Plan { slots: Vec::new(), more: false, on_disk: 0 };
        let mut bytes = 0usize;
        for (i, entry) in inner.entries.iter().enumerate().skip(start) {
            if !wanted[entry.station as usize] {
                continue;
            }
            if bytes >= max_bytes {
                plan.more = true;
                break;
            }
            if i >= cached_from {
                let event = &inner.cache[i - cached_from];
                bytes += event.frame.len();
                plan.slots.push(Slot::Cached(Arc::clone(event)));
                continue;
            }
            let Some(path) = inner.segment_path(entry.segment) else {
                warn!(id = entry.id, segment = entry.segment, "event log: indexed segment is gone");
                return Err(Replay::Expired);
            };
            bytes += entry.len as usize;
            plan.on_disk += 1;
            plan.slots.push(Slot::Disk {
                path,
                entry: *entry,
                station: inner.stations.resolve(entry.station),
                name: inner.names.resolve(entry.name),
            });
        }
        Ok(plan)
    }

    /// The highest id issued so far (0 for an empty log): where a fresh client "starts".
    pub fn last_id(&self) -> u64 {
        self.lock().last_issued
    }

    /// Number of events in the retained window.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// True when no event is retained.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Retained and cached events and the memory they use.
    pub fn stats(&self) -> EventLogStats {
        let inner = self.lock();
        EventLogStats {
            retained: inner.entries.len(),
            cached: inner.cache.len(),
            memory_bytes: inner.index_bytes() + inner.cache_bytes,
            memory_budget: inner.budget,
        }
    }

    /// Forces the active segment to stable storage (e.g. on graceful shutdown).
    pub fn sync(&self) -> Result<()> {
        self.lock().sync()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the log inconsistent in a way that
        // matters more than keeping the stream up, so poisoning is ignored.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for EventLog {
    fn drop(&mut self) {
        if let Err(e) = self.lock().sync() {
            warn!(error = %e, "event log: final fsync failed");
        }
    }
}

/// What `open` learns while reading the segments.
#[derive(Default)]
struct Load {
    max_id: u64,
    first_segment_id: Option<u64>,
    skipped: usize,
    skipped_segments: usize,
}

impl Inner {
    /// Persists a new reservation end before any id of the block is used.
    fn reserve(&mut self, through: u64) -> Result<()> {
        let path = self.dir.join(NEXT_ID_FILE);
        let tmp = self.dir.join(format!("{NEXT_ID_FILE}.tmp"));
        durable::replace(&path, &tmp, format!("{through}\n").as_bytes(), Access::Default)
            .map_err(|e| EventLogError::Io { action: e.step, path: e.path, source: e.source })?;
        self.reserved_through = through;
        Ok(())
    }

    /// Appends one line; returns the segment's sequence number and the line's offset in it.
    fn write_line(&mut self, line: &[u8], id: u64, at: DateTime<Utc>) -> Result<(u32, u64)> {
        if self.active.as_ref().is_some_and(|a| a.first_at + self.rotate_every <= at || a.bytes >= MAX_SEGMENT_BYTES) {
            self.close_active()?;
        }
        if self.active.is_none() {
            self.active = Some(self.create_segment(id, at)?);
        }
        let Some(active) = self.active.as_mut() else {
            return Err(EventLogError::Io {
                action: "create",
                path: self.dir.clone(),
                source: io::Error::other("no active segment"),
            });
        };
        let offset = active.bytes;
        #[cfg(test)]
        let fault = self.fault.take();
        #[cfg(test)]
        let written = match fault {
            Some(f) => {
                let _ = active.file.write_all(&line[..f.torn.min(line.len())]);
                Err(io::Error::other("injected write failure"))
            }
            None => active.file.write_all(line),
        };
        #[cfg(not(test))]
        let written = active.file.write_all(line);
        if let Err(source) = written {
            // A partial write may have left a torn line. Cut it off, so the segment is as
            // it was and stays the active one: the id was not issued and the next append
            // writes a clean line at the same offset.
            #[cfg(test)]
            let repaired = match fault {
                Some(f) if f.truncate_fails => Err(io::Error::other("injected truncate failure")),
                _ => active.file.set_len(offset),
            };
            #[cfg(not(test))]
            let repaired = active.file.set_len(offset);
            let path = active.path.to_path_buf();
            if let Err(e) = repaired {
                // The torn bytes stay: never append after them again. The segment is retired
                // (its earlier events stay indexed and expire as usual) and its id is skipped
                // (never issued: ids are only ordered), so the next segment, named after the
                // next id, can never reopen this file.
                warn!(path = %path.display(), error = %e, "event log: cannot cut a torn write; segment retired");
                if let Some(active) = self.active.take() {
                    self.closed.push_back(active.into_closed());
                }
                self.last_issued = self.last_issued.max(id);
            }
            return Err(EventLogError::Io { action: "write", path, source });
        }
        active.bytes += line.len() as u64;
        active.last_id = id;
        active.dirty = true;
        Ok((active.seq, offset))
    }

    fn create_segment(&mut self, first_id: u64, at: DateTime<Utc>) -> Result<ActiveSegment> {
        let path = self.dir.join(format!("{SEGMENT_PREFIX}{first_id:020}{SEGMENT_SUFFIX}"));
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(io_err("create", &path))?;
        // Offsets are positions in the file: start after whatever a same-named file holds.
        let bytes = file.metadata().map_err(io_err("stat", &path))?.len();
        durable::sync_dir(&self.dir).map_err(io_err("fsync", &self.dir))?;
        debug!(path = %path.display(), "event log: new segment");
        let seq = self.next_seq;
        self.next_seq += 1;
        Ok(ActiveSegment { seq, path: Arc::from(path), file, first_at: at, last_id: 0, bytes, dirty: false })
    }

    fn close_active(&mut self) -> Result<()> {
        self.sync()?;
        if let Some(active) = self.active.take() {
            self.closed.push_back(active.into_closed());
        }
        Ok(())
    }

    fn sync_if_due(&mut self) {
        if self.last_sync.elapsed() >= SYNC_INTERVAL {
            if let Err(e) = self.sync() {
                warn!(error = %e, "event log: fsync failed (events stay in the page cache)");
            }
        }
    }

    fn sync(&mut self) -> Result<()> {
        self.last_sync = Instant::now();
        match self.active.as_mut() {
            Some(active) if active.dirty => {
                active.file.sync_data().map_err(io_err("fsync", &active.path))?;
                active.dirty = false;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The path of segment `seq`, if it is still on disk.
    fn segment_path(&self, seq: u32) -> Option<Arc<Path>> {
        if let Some(active) = self.active.as_ref().filter(|a| a.seq == seq) {
            return Some(Arc::clone(&active.path));
        }
        let i = self.closed.partition_point(|s| s.seq < seq);
        self.closed.get(i).filter(|s| s.seq == seq).map(|s| Arc::clone(&s.path))
    }

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

    /// Indexes the readable lines of one segment (payloads are validated, not kept), whose
    /// ids are at most `through`.
    ///
    /// A segment that cannot be read (an I/O error, not a bad line) is skipped with a
    /// warning rather than refusing to open: the stream must start. Its ids cannot be
    /// replayed, so they and every id before them leave the retained window (a replay from
    /// before `through` is [`Replay::Expired`], never a silent gap), and the file is removed
    /// with them.
    fn load_segment(&mut self, path: &Path, cutoff_ms: i64, through: u64, load: &mut Load) {
        let seq = self.next_seq;
        self.next_seq += 1;
        match self.index_segment(path, seq, cutoff_ms, load) {
            Ok(last_id) => self.closed.push_back(Segment { seq, path: Arc::from(path), last_id }),
            Err(e) => {
                let through = through.max(load.max_id);
                warn!(error = %e, expired_through = through, "event log: unreadable segment skipped; replays from before it resync");
                while self.entries.front().is_some_and(|x| x.id <= through) {
                    self.pop_front_entry();
                }
                self.pruned_through = self.pruned_through.max(through);
                load.max_id = through;
                load.skipped_segments += 1;
                self.closed.push_back(Segment { seq, path: Arc::from(path), last_id: through });
            }
        }
    }

    /// [`Inner::load_segment`]'s reading: indexes the lines, returns the highest id.
    fn index_segment(&mut self, path: &Path, seq: u32, cutoff_ms: i64, load: &mut Load) -> Result<u64> {
        let file = File::open(path).map_err(io_err("open", path))?;
        let mut reader = BufReader::with_capacity(256 * 1024, file);
        let (mut buf, mut head) = (Vec::new(), Vec::new());
        let (mut offset, mut line_no, mut last_id) = (0u64, 0usize, 0u64);
        loop {
            buf.clear();
            // Bounded: a garbage file without line ends is never read into memory whole.
            let n = read_line_limited(&mut reader, &mut buf, MAX_EVENT_BYTES + 1).map_err(io_err("read", path))?;
            if n == 0 {
                break;
            }
            line_no += 1;
            let line_offset = offset;
            offset += n;
            if n > MAX_EVENT_BYTES as u64 {
                warn!(path = %path.display(), line = line_no, bytes = n, "event log: line longer than an event may be, skipped");
                load.skipped += 1;
                continue;
            }
            let (id, at, station, name) = match parse_line(&buf, &mut head, true) {
                Ok((h, _)) if h.id > load.max_id => {
                    (h.id, h.at, self.stations.intern(&h.station), self.names.intern(&h.name))
                }
                Ok((h, _)) => {
                    warn!(path = %path.display(), line = line_no, id = h.id, "event log: id out of order, skipped");
                    load.skipped += 1;
                    continue;
                }
                Err(reason) => {
                    warn!(path = %path.display(), line = line_no, reason, "event log: unreadable line skipped");
                    load.skipped += 1;
                    continue;
                }
            };
            load.max_id = id;
            last_id = id;
            let at_ms = at.timestamp_millis();
            if self.entries.is_empty() && at_ms < cutoff_ms {
                // Already out of the window: never indexed (the same as pruning it at once).
                self.pruned_through = id;
                continue;
            }
            let entry = Entry { id, at_ms, offset: line_offset, len: n as u32, segment: seq, station, name };
            self.push(entry, None);
        }
        Ok(last_id)
    }
}

/// Reads one line (through its `\n`) into `buf`, keeping at most `limit` bytes of it: the
/// rest of a longer line is consumed and dropped. Returns the bytes consumed (0 at the end).
fn read_line_limited<R: BufRead>(reader: &mut R, buf: &mut Vec<u8>, limit: usize) -> io::Result<u64> {
    let mut total = 0u64;
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let room = limit.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let n = chunk.len();
        reader.consume(n);
        total += n as u64;
        if done {
            return Ok(total);
        }
    }
}

/// Splits a stored line into its header and the raw bytes of its `data` object. `head` is
/// scratch space the header borrows from. With `validate`, the payload is checked to be one
/// well-formed JSON object that fits on one SSE line (done once, when the log is opened).
fn parse_line<'h, 'l>(
    line: &'l [u8],
    head: &'h mut Vec<u8>,
    validate: bool,
) -> std::result::Result<(LineHeader<'h>, &'l [u8]), String> {
    if line.len() > MAX_EVENT_BYTES {
        return Err(format!("line of {} bytes, more than the {MAX_EVENT_BYTES} an event may take", line.len()));
    }
    let line = line.strip_suffix(b"\n").ok_or("no line end (a torn write)")?;
    let body = line.strip_suffix(b"}").ok_or("not a JSON object")?;
    // Strings are written with their quotes escaped, so the first unescaped `,"data":` is
    // the key itself; every field before it is a short string or a number.
    let key = memchr::memmem::find(body, DATA_KEY).ok_or("no data field")?;
    let data = &body[key + DATA_KEY.len()..];
    head.clear();
    head.extend_from_slice(&body[..key]);
    head.push(b'}');
    let header: LineHeader<'h> = serde_json::from_slice(head).map_err(|e| format!("header: {e}"))?;
    if !data.starts_with(b"{") {
        return Err("data is not a JSON object".into());
    }
    if validate {
        serde_json::from_slice::<serde::de::IgnoredAny>(data).map_err(|e| format!("data: {e}"))?;
        if memchr::memchr(b'\r', data).is_some() {
            return Err("data holds a carriage return (it would split the SSE line)".into());
        }
    }
    Ok((header, data))
}

/// Turns a replay plan into events, reading the lines that are not cached.
fn read_slots(slots: Vec<Slot>) -> Result<Vec<Arc<Event>>> {
    let mut events = Vec::with_capacity(slots.len());
    let mut open: Option<(Arc<Path>, File)> = None;
    let (mut buf, mut head) = (Vec::new(), Vec::new());
    for slot in slots {
        let (path, entry, station, name) = match slot {
            Slot::Cached(event) => {
                events.push(event);
                continue;
            }
            Slot::Disk { path, entry, station, name } => (path, entry, station, name),
        };
        let mut file = match open.take() {
            Some((p, f)) if Arc::ptr_eq(&p, &path) => f,
            _ => File::open(&path).map_err(io_err("open", &path))?,
        };
        buf.resize(entry.len as usize, 0);
        file.seek(SeekFrom::Start(entry.offset)).map_err(io_err("seek", &path))?;
        file.read_exact(&mut buf).map_err(io_err("read", &path))?;
        let corrupt =
            |reason: String| EventLogError::Corrupt { path: path.to_path_buf(), offset: entry.offset, reason };
        let (header, data) = parse_line(&buf, &mut head, false).map_err(corrupt)?;
        if header.id != entry.id {
            return Err(corrupt(format!("event {} where the index has {}", header.id, entry.id)));
        }
        let frame = encode_raw_frame(&name, Some(entry.id), data);
        events.push(Arc::new(Event { id: entry.id, station, name, at: header.at, frame }));
        open = Some((path, file));
    }
    Ok(events)
}

/// Segment files in `dir`, sorted by first id; other files are ignored.
fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut segments = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err("list", dir))? {
        let entry = entry.map_err(io_err("list", dir))?;
        let name = entry.file_name();
        let Some(first_id) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SEGMENT_PREFIX))
            .and_then(|n| n.strip_suffix(SEGMENT_SUFFIX))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        segments.push((first_id, entry.path()));
    }
    segments.sort();
    Ok(segments)
}

fn read_reservation(path: &Path) -> Result<u64> {
    match fs::read_to_string(path) {
        Ok(text) => text.trim().parse::<u64>().map_err(|_| EventLogError::BadReservation {
            path: path.to_path_buf(),
            found: text.chars().take(40).collect(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(source) => Err(EventLogError::Io { action: "read", path: path.to_path_buf(), source }),
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
