//! Input bytes as text, for every decoder, and quoting input in error reasons.
//!
//! Every format wxlake reads is text. UTF-16 (what Windows tools write as "Unicode"),
//! UTF-32 and binary files (a gzip archive, a Parquet file given the wrong format) are
//! refused up front with a reason naming what the input is: decoded as UTF-8 they would
//! otherwise fail line by line with misleading reasons ("header lacks a column") and
//! quote raw bytes back at the user.

use std::borrow::Cow;

/// Bytes [`input_text`] inspects to tell text from binary.
const SNIFF_BYTES: usize = 8192;
/// Fewest non-text bytes that make an input binary: a short input with a stray byte or
/// two is still read line by line (its reasons quote those bytes escaped).
const MIN_BAD_BYTES: usize = 8;

/// Why an input is not UTF-8 text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotText {
    /// UTF-16 or UTF-32, from its byte-order mark or its pattern of NUL bytes.
    #[error("input is {encoding} text ({evidence}); wxlake reads UTF-8: convert it first (iconv -f {iconv} -t UTF-8)")]
    WideEncoding { encoding: &'static str, iconv: &'static str, evidence: &'static str },
    /// A known binary container, named from its magic number.
    #[error("input is {0} data, not text")]
    Container(&'static str),
    /// Anything else with too many control or non-UTF-8 bytes to be text.
    #[error("input is binary, not text: {bad} of its first {sample} bytes are control or non-UTF-8 bytes (it starts {head})")]
    Binary { bad: usize, sample: usize, head: String },
}

/// The input as text: borrowed when it is valid UTF-8, else with invalid sequences
/// replaced by U+FFFD (a stray Latin-1 degree sign in a bulletin stays readable), unless
/// the input is not text at all (see [`NotText`]). `String::from_utf8_lossy` alone walks
/// valid input chunk by chunk, several times slower than the validator that answers the
/// common case here.
pub fn input_text(bytes: &[u8]) -> Result<Cow<'_, str>, NotText> {
    check_text(bytes)?;
    Ok(match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    })
}

/// Looks at the start of the input only: wide encodings and binary formats show
/// themselves in the first bytes, and scanning a whole bulk file twice would cost
/// as much as decoding it.
fn check_text(bytes: &[u8]) -> Result<(), NotText> {
    let wide = |encoding, iconv, evidence| Err(NotText::WideEncoding { encoding, iconv, evidence });
    // UTF-32 first: its little-endian mark begins with UTF-16's.
    if bytes.starts_with(&[0xFF, 0xFE, 0, 0]) {
        return wide("UTF-32LE", "UTF-32", "byte-order mark FF FE 00 00");
    }
    if bytes.starts_with(&[0, 0, 0xFE, 0xFF]) {
        return wide("UTF-32BE", "UTF-32", "byte-order mark 00 00 FE FF");
    }
    if bytes.starts_with(&[0xFF, 0xFE]) {
        return wide("UTF-16LE", "UTF-16", "byte-order mark FF FE");
    }
    if bytes.starts_with(&[0xFE, 0xFF]) {
        return wide("UTF-16BE", "UTF-16", "byte-order mark FE FF");
    }
    if let Some(name) = container(bytes) {
        return Err(NotText::Container(name));
    }
    let sample = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if let Some(le) = utf16_without_bom(sample) {
        return if le {
            wide("UTF-16LE", "UTF-16LE", "every other byte is NUL")
        } else {
            wide("UTF-16BE", "UTF-16BE", "every other byte is NUL")
        };
    }
    let bad = non_text_bytes(sample, bytes.len() > sample.len());
    // A collective may carry a stray NUL or a framing byte; a tenth of the input is not a
    // transmission error any more.
    if bad >= MIN_BAD_BYTES && bad * 10 > sample.len() {
        return Err(NotText::Binary { bad, sample: sample.len(), head: hex_head(sample) });
    }
    Ok(())
}

/// Names binary formats by their magic number.
fn container(bytes: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (&[0x1F, 0x8B], "gzip-compressed"),
        (b"PK\x03\x04", "zip archive"),
        (b"BZh", "bzip2-compressed"),
        (&[0xFD, b'7', b'z', b'X', b'Z', 0], "xz-compressed"),
        (&[0x28, 0xB5, 0x2F, 0xFD], "zstd-compressed"),
        (b"PAR1", "Parquet"),
        (b"\x89PNG", "PNG image"),
        (b"\x7FELF", "ELF executable"),
        (b"%PDF-", "PDF document"),
        (b"\x89HDF", "HDF5"),
    ];
    MAGIC.iter().find(|(m, _)| bytes.starts_with(m)).map(|(_, name)| *name)
}

/// `Some(true)` for UTF-16LE and `Some(false)` for UTF-16BE text without a byte-order
/// mark: mostly-ASCII UTF-16 has a NUL in (nearly) every high byte and almost never in a
/// low one. Needs a few characters to judge.
fn utf16_without_bom(sample: &[u8]) -> Option<bool> {
    let pairs = sample.len() / 2;
    if pairs < 2 {
        return None;
    }
    let (mut even, mut odd) = (0, 0);
    for pair in sample.chunks_exact(2) {
        even += usize::from(pair[0] == 0);
        odd += usize::from(pair[1] == 0);
    }
    let most = |n: usize| n * 10 >= pairs * 7;
    let few = |n: usize| n * 10 <= pairs;
    if most(odd) && few(even) {
        Some(true)
    } else if most(even) && few(odd) {
        Some(false)
    } else {
        None
    }
}

/// Control bytes text never holds (NUL, most C0 controls, DEL) plus bytes of invalid
/// UTF-8 sequences. Tab, line ends, form feed and vertical tab, and the SOH / ETX / RS
/// framing of WMO bulletins are text here. When the sample was cut from a longer input,
/// an incomplete sequence at its very end is not counted.
fn non_text_bytes(sample: &[u8], cut: bool) -> usize {
    let mut bad = 0;
    let mut chunks = sample.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        bad += chunk
            .valid()
            .bytes()
            .filter(|&b| {
                (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0B | 0x0C | 0x01 | 0x03 | 0x1E)) || b == 0x7F
            })
            .count();
        let last = chunks.peek().is_none();
        if !(cut && last) {
            bad += chunk.invalid().len();
        }
    }
    bad
}

/// The first bytes in hex (`1F 8B 08 00 …`), to show binary input without echoing it.
fn hex_head(sample: &[u8]) -> String {
    const SHOWN: usize = 8;
    let mut s: Vec<String> = sample.iter().take(SHOWN).map(|b| format!("{b:02X}")).collect();
    if sample.len() > SHOWN {
        s.push("…".into());
    }
    s.join(" ")
}

/// At most `max` characters of `s` for an error reason, with control characters escaped
/// (`\0`, `\u{1}`) so that a reason never carries raw non-text bytes to a terminal or a
/// JSON consumer, and `…` when cut. Borrows when nothing needs changing.
pub fn quote(s: &str, max: usize) -> Cow<'_, str> {
    let cut = s.char_indices().nth(max).map(|(i, _)| i);
    let head = cut.map_or(s, |i| &s[..i]);
    if cut.is_none() && !head.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(head.len() + 4);
    for c in head.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    if cut.is_some() {
        out.push('…');
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_text_is_borrowed_and_invalid_bytes_are_replaced() {
        assert!(matches!(input_text("KNYC 12°".as_bytes()), Ok(Cow::Borrowed("KNYC 12°"))));
        assert_eq!(input_text(b"KN\xffYC 011200Z 00000KT").unwrap(), "KN\u{fffd}YC 011200Z 00000KT");
        // WMO framing (SOH, ETX) and one NUL in a collective are still text.
        let collective = b"\x01\r\r\n001 \r\r\nSAUS70 KWBC 011200\r\r\nKCVG 011152Z 00000KT 10SM A3000=\x00\r\r\n\x03";
        assert!(input_text(collective).is_ok());
        assert_eq!(input_text(b"").unwrap(), "");
    }

    #[test]
    fn wide_encodings_are_named() {
        let utf16le: Vec<u8> = "station,valid,tmpf\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
        let utf16be: Vec<u8> = "station,valid,tmpf\n".encode_utf16().flat_map(u16::to_be_bytes).collect();
        let with_bom = |bom: &[u8], body: &[u8]| [bom, body].concat();
        for (bytes, want) in [
            (with_bom(&[0xFF, 0xFE], &utf16le), "input is UTF-16LE text (byte-order mark FF FE)"),
            (with_bom(&[0xFE, 0xFF], &utf16be), "input is UTF-16BE text (byte-order mark FE FF)"),
            (utf16le.clone(), "input is UTF-16LE text (every other byte is NUL)"),
            (utf16be.clone(), "input is UTF-16BE text (every other byte is NUL)"),
            (with_bom(&[0xFF, 0xFE, 0, 0], b"K\0\0\0"), "input is UTF-32LE text"),
            (with_bom(&[0, 0, 0xFE, 0xFF], b"\0\0\0K"), "input is UTF-32BE text"),
        ] {
            let e = input_text(&bytes).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
            assert!(e.contains("convert it first"), "{e}");
        }
    }

    #[test]
    fn binary_input_is_summarised_never_echoed() {
        let e = input_text(&[0x1F, 0x8B, 8, 0, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(e.to_string(), "input is gzip-compressed data, not text");
        assert_eq!(input_text(b"PAR1\x15\x04").unwrap_err(), NotText::Container("Parquet"));
        let bytes = crate::decode::testrand::bytes(0x2545_F491_4F6C_DD1D, 20_000);
        let e = input_text(&bytes).unwrap_err();
        let NotText::Binary { bad, sample, .. } = &e else { panic!("{e:?}") };
        assert_eq!(*sample, SNIFF_BYTES);
        assert!(*bad * 10 > *sample, "{e}");
        let msg = e.to_string();
        assert!(msg.contains(&format!("it starts {:02X} {:02X}", bytes[0], bytes[1])), "{msg}");
        assert!(!msg.chars().any(|c| c.is_control() || c == '\u{fffd}'), "{msg}");
        // A multi-byte character cut by the sample's end is not a bad byte.
        let long = "°".repeat(SNIFF_BYTES);
        assert!(input_text(long.as_bytes()).is_ok());
    }

    #[test]
    fn quote_escapes_controls_and_cuts() {
        assert!(matches!(quote("KNYC", 24), Cow::Borrowed("KNYC")));
        assert_eq!(quote("a\u{0}b\u{1b}[2J", 24), "a\\0b\\u{1b}[2J");
        assert_eq!(quote("ÄÖÜ\u{fffd}", 24), "ÄÖÜ\u{fffd}");
        assert_eq!(quote(&"X".repeat(30), 24), format!("{}…", "X".repeat(24)));
        assert_eq!(quote("abc", 0), "…");
    }
}
