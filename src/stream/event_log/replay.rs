//! Replay: what a client that last saw an id missed, from the cached frames and the
//! segment files, resolved under the lock and read after it.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use chrono::Utc;
use tracing::warn;

use super::files::parse_line;
use super::{io_err, Entry, Event, EventLog, EventLogError, Replay, Result};
use crate::stream::frame::encode_raw_frame;

/// One event of a replay answer, resolved under the lock and read after it.
pub(super) enum Slot {
    Cached(Arc<Event>),
    Disk { path: Arc<Path>, entry: Entry, station: Arc<str>, name: Arc<str> },
}

/// A replay answer before any disk read.
pub(super) struct Plan {
    slots: Vec<Slot>,
    more: bool,
    on_disk: usize,
}

impl EventLog {
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
        let mut inner = self.inner.lock();
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
