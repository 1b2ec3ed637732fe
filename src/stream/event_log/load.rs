//! Opening: indexing the segments already on disk (each line validated, its payload not
//! kept), skipping what cannot be read.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use tracing::warn;

use super::files::{parse_line, read_line_limited};
use super::segments::Segment;
use super::{io_err, Entry, Inner, Result, MAX_EVENT_BYTES};

/// What `open` learns while reading the segments.
#[derive(Default)]
pub(super) struct Load {
    pub(super) max_id: u64,
    pub(super) first_segment_id: Option<u64>,
    pub(super) skipped: usize,
    pub(super) skipped_segments: usize,
}

impl Inner {
    /// Indexes the readable lines of one segment (payloads are validated, not kept), whose
    /// ids are at most `through`.
    ///
    /// A segment that cannot be read (an I/O error, not a bad line) is skipped with a
    /// warning rather than refusing to open: the stream must start. Its ids cannot be
    /// replayed, so they and every id before them leave the retained window (a replay from
    /// before `through` is [`Replay::Expired`], never a silent gap), and the file is removed
    /// with them.
    pub(super) fn load_segment(&mut self, path: &Path, cutoff_ms: i64, through: u64, load: &mut Load) {
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
