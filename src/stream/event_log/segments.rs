//! The segment files being written: the id reservation, appending a line (and cutting a
//! torn one back), rotation and fsync.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use tracing::{debug, warn};

use super::files::{NEXT_ID_FILE, SEGMENT_PREFIX, SEGMENT_SUFFIX};
use super::{io_err, EventLogError, Inner, Result, MAX_SEGMENT_BYTES, SYNC_INTERVAL};
use crate::durable::{self, Access};

#[derive(Debug)]
pub(super) struct Segment {
    pub(super) seq: u32,
    pub(super) path: Arc<Path>,
    /// Highest id in the segment (0 when none was readable).
    pub(super) last_id: u64,
}

#[derive(Debug)]
pub(super) struct ActiveSegment {
    pub(super) seq: u32,
    pub(super) path: Arc<Path>,
    pub(super) file: File,
    pub(super) first_at: DateTime<Utc>,
    pub(super) last_id: u64,
    pub(super) bytes: u64,
    pub(super) dirty: bool,
}

impl ActiveSegment {
    pub(super) fn into_closed(self) -> Segment {
        Segment { seq: self.seq, path: self.path, last_id: self.last_id }
    }
}

impl Inner {
    /// Persists a new reservation end before any id of the block is used.
    pub(super) fn reserve(&mut self, through: u64) -> Result<()> {
        let path = self.dir.join(NEXT_ID_FILE);
        let tmp = self.dir.join(format!("{NEXT_ID_FILE}.tmp"));
        durable::replace(&path, &tmp, format!("{through}\n").as_bytes(), Access::Default)
            .map_err(|e| EventLogError::Io { action: e.step, path: e.path, source: e.source })?;
        self.reserved_through = through;
        Ok(())
    }

    /// Appends one line; returns the segment's sequence number and the line's offset in it.
    pub(super) fn write_line(&mut self, line: &[u8], id: u64, at: DateTime<Utc>) -> Result<(u32, u64)> {
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

    pub(super) fn create_segment(&mut self, first_id: u64, at: DateTime<Utc>) -> Result<ActiveSegment> {
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

    pub(super) fn close_active(&mut self) -> Result<()> {
        self.sync()?;
        if let Some(active) = self.active.take() {
            self.closed.push_back(active.into_closed());
        }
        Ok(())
    }

    pub(super) fn sync_if_due(&mut self) {
        if self.last_sync.elapsed() >= SYNC_INTERVAL {
            if let Err(e) = self.sync() {
                warn!(error = %e, "event log: fsync failed (events stay in the page cache)");
            }
        }
    }

    pub(super) fn sync(&mut self) -> Result<()> {
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
    pub(super) fn segment_path(&self, seq: u32) -> Option<Arc<Path>> {
        if let Some(active) = self.active.as_ref().filter(|a| a.seq == seq) {
            return Some(Arc::clone(&active.path));
        }
        let i = self.closed.partition_point(|s| s.seq < seq);
        self.closed.get(i).filter(|s| s.seq == seq).map(|s| Arc::clone(&s.path))
    }
}
