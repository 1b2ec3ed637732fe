//! The server-sent-event wire format, in one place: the event log stores frames in it and the
//! stream writes them.
//!
//! Every event, in exactly this order (clients in the wild start a new event on the `event:`
//! line and drop data lines seen before it):
//! ```text
//! event: <name>
//! id: <id>            (only for replayable events)
//! data: <one line of JSON>
//!
//! ```

use std::fmt::Write as _;

use bytes::Bytes;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

/// The one timestamp format of stream payloads: RFC 3339 UTC with milliseconds and `Z`, so
/// every `timestamp` field (events, heartbeats, control events) sorts and parses the same way.
pub(crate) fn iso_timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A control event (no id: a resume position only ever names a stored event).
pub(crate) fn control_frame(name: &str, data: Value) -> Bytes {
    encode_frame(name, None, &data)
}

/// Encodes one event: `event:`, then `id:` (if any), then one `data:` line, then a blank line.
///
/// `serde_json` never emits a raw newline, so the data is always one line; a name is
/// stripped of CR/LF so it cannot split the frame.
pub fn encode_frame(name: &str, id: Option<u64>, data: &Value) -> Bytes {
    encode_raw_frame(name, id, data.to_string().as_bytes())
}

/// [`encode_frame`] for data already encoded: `json` must be one line of JSON (the event log
/// stores and replays payloads as serde_json wrote them).
pub(crate) fn encode_raw_frame(name: &str, id: Option<u64>, json: &[u8]) -> Bytes {
    let mut frame = frame_head(name, json.len());
    if let Some(id) = id {
        let _ = writeln!(frame, "id: {id}");
    }
    frame_data(frame, json)
}

/// A control frame with the SSE `retry:` field (milliseconds a client waits before it
/// reconnects), between `event:` and `data:`.
pub(crate) fn encode_frame_with_retry(name: &str, retry_ms: u64, data: &Value) -> Bytes {
    let json = data.to_string();
    let mut frame = frame_head(name, json.len());
    let _ = writeln!(frame, "retry: {retry_ms}");
    frame_data(frame, json.as_bytes())
}

fn frame_head(name: &str, data_len: usize) -> String {
    let mut frame = String::with_capacity(data_len + name.len() + 48);
    frame.push_str("event: ");
    frame.extend(name.chars().filter(|c| *c != '\n' && *c != '\r'));
    frame.push('\n');
    frame
}

fn frame_data(head: String, json: &[u8]) -> Bytes {
    let mut frame = head.into_bytes();
    frame.extend_from_slice(b"data: ");
    frame.extend_from_slice(json);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn frame_lines_are_event_id_data_blank() {
        let frame = encode_frame("new_high", Some(42), &json!({"a": "x\ny"}));
        assert_eq!(&frame[..], b"event: new_high\nid: 42\ndata: {\"a\":\"x\\ny\"}\n\n");
        let frame = encode_frame("heart\nbeat", None, &json!({}));
        assert_eq!(&frame[..], b"event: heartbeat\ndata: {}\n\n");
    }
}
