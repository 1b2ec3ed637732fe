//! The byte layout of one WAL record, its encoding and parsing.
//!
//! # Layout
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

use chrono::DateTime;

use super::{WalEntry, WalError};

/// Largest record body accepted; keeps `body_len` well inside u32 and replay memory bounded.
pub const MAX_BODY_BYTES: usize = 1 << 30;

pub(super) const MAGIC: [u8; 4] = *b"WXW1";
/// magic + body_len + crc.
pub(super) const FRAME_HEADER: usize = 12;
/// seq + timestamp + format_len + options_len.
pub(super) const BODY_FIXED: usize = 22;

/// Why bytes at an offset are not a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bad {
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

pub(super) fn find_magic(hay: &[u8]) -> Option<usize> {
    hay.windows(MAGIC.len()).position(|w| w == MAGIC)
}

pub(super) fn le_u16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

pub(super) fn le_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

pub(super) fn le_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// Parses the record starting at `pos`; returns it and its encoded length.
pub(super) fn parse_record(bytes: &[u8], pos: usize) -> Result<(WalEntry, usize), Bad> {
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

pub(super) fn record_crc(len_bytes: &[u8], body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(len_bytes);
    hasher.update(body);
    hasher.finalize()
}

pub(super) fn parse_body(body: &[u8]) -> Result<WalEntry, Bad> {
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
pub(super) fn checked_body_len(format: &str, options_json: &str, payload: &[u8]) -> Result<u32, WalError> {
    if format.len() > usize::from(u16::MAX) {
        return Err(WalError::FormatTooLong(format.len()));
    }
    let size = BODY_FIXED.saturating_add(format.len()).saturating_add(options_json.len()).saturating_add(payload.len());
    if size > MAX_BODY_BYTES {
        return Err(WalError::TooLarge { size, limit: MAX_BODY_BYTES });
    }
    u32::try_from(size).map_err(|_| WalError::TooLarge { size, limit: MAX_BODY_BYTES })
}

pub(super) struct RecordFields<'a> {
    pub(super) seq: u64,
    pub(super) timestamp: i64,
    pub(super) format: &'a str,
    pub(super) options_json: &'a str,
    pub(super) payload: &'a [u8],
}

/// Appends one encoded record to `out` and returns its length. `body_len` comes from
/// [`checked_body_len`], which also bounds the u16/u32 length fields.
pub(super) fn encode_record(out: &mut Vec<u8>, rec: &RecordFields<'_>, body_len: u32) -> u32 {
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
