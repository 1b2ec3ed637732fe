//! The socket of one REST connection as hyper sees it: reads tell the connection's
//! [`Slot`] that a request head started arriving (for the header timeout), and hyper's own
//! answers to requests it cannot parse are rewritten into the API's JSON error.
//!
//! Why rewrite bytes: hyper answers a request line it cannot parse (400), a URI over its
//! limit (414) and a head over the size limit (431) itself, before any service sees a
//! request, with an empty body, and has no hook to change that answer. Its answer is
//! recognisable exactly: one of those statuses with `content-length: 0` and no header but
//! `connection: close` and `date` (every response of the router has a `content-type`, since every error of the
//! router is JSON). That head, written as one buffer (vectored writes are off), is swapped
//! for the same status with an [`ErrorBody`]; nothing else is touched.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::slots::Slot;
use crate::api::error::ErrorBody;

/// The largest request head (request line and headers) the REST listener reads.
pub const MAX_HEAD_BYTES: usize = 128 * 1024;

/// A connection's socket, watched and with hyper's bodiless errors made JSON.
pub struct ConnIo<T> {
    inner: T,
    slot: Option<Arc<Slot>>,
    /// The JSON answer replacing hyper's, and how much of it is written.
    replacement: Option<(Vec<u8>, usize)>,
}

impl<T> ConnIo<T> {
    /// `slot`: the connection's slot, told when bytes arrive (None for the 503 answer of a
    /// connection over the cap).
    pub fn new(inner: T, slot: Option<Arc<Slot>>) -> Self {
        ConnIo { inner, slot, replacement: None }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ConnIo<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            if let Some(slot) = &self.slot {
                slot.bytes_read();
            }
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ConnIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.replacement.is_none() {
            match json_for_automatic_error(buf) {
                Some(json) => this.replacement = Some((json, 0)),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        let Some((bytes, written)) = &mut this.replacement else { unreachable!("set above") };
        while *written < bytes.len() {
            match Pin::new(&mut this.inner).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *written += n,
                other => return other,
            }
        }
        // hyper's buffer counts as written: hyper closes the connection after it.
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        // One buffer per write, so hyper's error head is always seen whole.
        false
    }
}

/// The JSON answer for `buf` when it is hyper's automatic answer to an unparsable request.
fn json_for_automatic_error(buf: &[u8]) -> Option<Vec<u8>> {
    let head = std::str::from_utf8(buf).ok()?;
    let head = head.strip_suffix("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let code = status_line.strip_prefix("HTTP/1.1 ")?.get(..3)?;
    let mut date = None;
    let mut length_zero = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" if value.trim() == "0" => length_zero = true,
            "connection" if value.trim().eq_ignore_ascii_case("close") => {}
            "date" => date = Some(value.trim()),
            _ => return None,
        }
    }
    if !length_zero {
        return None;
    }
    let body = body_for(code)?;
    let json = serde_json::to_string(&body.cut()).ok()?;
    let mut out = format!(
        "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        json.len()
    );
    if let Some(date) = date {
        out.push_str(&format!("date: {date}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&json);
    Some(out.into_bytes())
}

/// What each of hyper's automatic answers means, in the API's words.
fn body_for(code: &str) -> Option<ErrorBody> {
    let (error, details) = match code {
        "400" => (
            "Malformed request",
            "the request line or a header is not valid HTTP/1.1 (e.g. GET /api/v2/observations.php?station_code=KNYC HTTP/1.1)".to_string(),
        ),
        "414" => (
            "URI too long",
            "the request target may be at most 65534 bytes: send fewer or shorter parameters".to_string(),
        ),
        "431" => (
            "Request header fields too large",
            format!("the request line and headers may be at most {MAX_HEAD_BYTES} bytes together"),
        ),
        _ => return None,
    };
    Some(ErrorBody { error: error.to_string(), details })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bodiless_error_heads_are_rewritten() {
        // As hyper 1.x writes it.
        let auto = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: Sat, 28 Nov 2026 02:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(json_for_automatic_error(auto).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "{head}");
        assert!(head.contains("content-type: application/json") && head.contains("date: Sat, 28 Nov"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"], "Request header fields too large");

        // A router response (any other header, a body, another status) passes untouched.
        for other in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"{\"rows\": []}",
        ] {
            assert!(json_for_automatic_error(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
    }

    #[tokio::test]
    async fn the_replacement_is_written_whole_and_reported_as_hypers_length() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (client, server) = tokio::io::duplex(16);
        let mut io = ConnIo::new(server, None);
        let auto = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
        let reader = tokio::spawn(async move {
            let mut client = client;
            let mut out = Vec::new();
            client.read_to_end(&mut out).await.unwrap();
            out
        });
        // The duplex holds 16 bytes at a time: the answer goes out over many writes.
        let n = std::future::poll_fn(|cx| Pin::new(&mut io).poll_write(cx, auto)).await.unwrap();
        assert_eq!(n, auto.len());
        io.shutdown().await.unwrap();
        drop(io);
        let out = String::from_utf8(reader.await.unwrap()).unwrap();
        assert!(out.starts_with("HTTP/1.1 400 Bad Request\r\ncontent-type: application/json"), "{out}");
        assert!(out.ends_with('}'), "{out}");
    }
}
