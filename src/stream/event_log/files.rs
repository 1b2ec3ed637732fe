//! The log's files: the names of the segments and of the id reservation, and the line
//! format (a header, then the raw `data` object as the last field, so replay can frame the
//! payload without parsing it).

use std::borrow::Cow;
use std::fs;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{io_err, EventLogError, Result, MAX_EVENT_BYTES};

pub(super) const NEXT_ID_FILE: &str = "next-id";
pub(super) const SEGMENT_PREFIX: &str = "events-";
pub(super) const SEGMENT_SUFFIX: &str = ".jsonl";
/// What introduces the payload, the last field of every line.
pub(super) const DATA_KEY: &[u8] = b",\"data\":";

/// The fixed fields of a stored line; `data` follows them as the last field.
#[derive(Serialize, Deserialize)]
pub(super) struct LineHeader<'a> {
    pub(super) id: u64,
    #[serde(borrow)]
    pub(super) station: Cow<'a, str>,
    #[serde(borrow)]
    pub(super) name: Cow<'a, str>,
    pub(super) at: DateTime<Utc>,
}

/// Reads one line (through its `\n`) into `buf`, keeping at most `limit` bytes of it: the
/// rest of a longer line is consumed and dropped. Returns the bytes consumed (0 at the end).
pub(super) fn read_line_limited<R: BufRead>(reader: &mut R, buf: &mut Vec<u8>, limit: usize) -> io::Result<u64> {
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
pub(super) fn parse_line<'h, 'l>(
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

/// Segment files in `dir`, sorted by first id; other files are ignored.
pub(super) fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
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

pub(super) fn read_reservation(path: &Path) -> Result<u64> {
    match fs::read_to_string(path) {
        Ok(text) => text.trim().parse::<u64>().map_err(|_| EventLogError::BadReservation {
            path: path.to_path_buf(),
            found: text.chars().take(40).collect(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(source) => Err(EventLogError::Io { action: "read", path: path.to_path_buf(), source }),
    }
}
