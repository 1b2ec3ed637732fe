//! What every container checks and does to a report text before and after parsing it.

use std::borrow::Cow;

use chrono::{DateTime, Utc};

use crate::decode::limits::METAR_REPORT;
use crate::decode::metar::{is_station_id, parse_metar};
use crate::decode::text::quote;
use crate::decode::types::{Metar, ReportKind};

/// Checks what every container must check, then parses: a plausible length (see
/// [`METAR_REPORT`]), no control or non-ASCII characters (a NUL byte means a garbled
/// transmission), a station id first, something after the time group. A report without its own keyword gets HF-METAR when IEM marked
/// it `MADISHF`, else `fallback`.
pub(super) fn finish_report(text: &str, reference: DateTime<Utc>, fallback: ReportKind) -> Result<Metar, String> {
    METAR_REPORT.check(text.trim().len())?;
    check_chars(text)?;
    let text = normalise_ws(text);
    let mut toks = text.split_whitespace().skip_while(|t| is_prefix(t));
    let station = toks.next().ok_or("empty report")?;
    if !is_station_id(station) {
        return Err(format!("bad station id '{}'", clip(station)));
    }
    let _time = toks.next();
    match toks.next() {
        None => return Err(format!("{station}: no observation after the time group")),
        Some("NIL") => return Err(format!("{station}: NIL report")),
        Some(_) => {}
    }
    let mut metar = parse_metar(&text, reference).map_err(|e| format!("{station}: {e}"))?;
    if metar.kind.is_none() {
        let hf = text.split_whitespace().any(|t| t == "MADISHF");
        metar.kind = Some(if hf { ReportKind::HfMetar } else { fallback });
    }
    Ok(metar)
}

/// Rejects characters a METAR never contains. Unicode spaces (the NBSP of some feeds)
/// are fine: they become plain spaces.
pub(super) fn check_chars(text: &str) -> Result<(), String> {
    for c in text.chars() {
        if c.is_ascii() && (!c.is_ascii_control() || c.is_ascii_whitespace()) {
            continue;
        }
        if c == '\0' {
            return Err("NUL byte in report".into());
        }
        if c == char::REPLACEMENT_CHARACTER {
            return Err("invalid UTF-8 byte in report".into());
        }
        if c.is_whitespace() {
            continue;
        }
        if c.is_control() {
            return Err(format!("control character U+{:04X} in report", u32::from(c)));
        }
        return Err(format!("non-ASCII character '{c}' in report"));
    }
    Ok(())
}

/// Collapses any whitespace run to one ASCII space; borrows when already clean.
pub(super) fn normalise_ws(text: &str) -> Cow<'_, str> {
    let t = text.trim();
    let clean = t.is_ascii() && !t.contains(['\t', '\r', '\n']) && !t.contains("  ");
    if clean {
        Cow::Borrowed(t)
    } else {
        Cow::Owned(t.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

pub(super) fn is_keyword(t: &str) -> bool {
    t == "METAR" || t == "SPECI"
}

/// Tokens the parser accepts before the station id.
pub(super) fn is_prefix(t: &str) -> bool {
    is_keyword(t) || t == "COR"
}

pub(super) fn keyword_kind(t: &str) -> ReportKind {
    if t == "SPECI" {
        ReportKind::Speci
    } else {
        ReportKind::Metar
    }
}

/// A line without framing characters or surrounding whitespace.
pub(super) fn clean_line(l: &str) -> &str {
    l.trim_matches(|c: char| c.is_whitespace() || c == '\u{1}' || c == '\u{3}')
}

/// At most 24 characters of a bad value, control characters escaped, so a reason never
/// carries a whole line or raw bytes.
pub(super) fn clip(s: &str) -> Cow<'_, str> {
    quote(s, 24)
}
