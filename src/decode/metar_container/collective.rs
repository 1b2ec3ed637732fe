//! WMO METAR collectives: bulletins dated by their `DDHHMM` header.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use super::dating::{ddhhmm, hint_reference, recent_reference, report_reference, time_group, Dating};
use super::report::{finish_report, is_keyword, keyword_kind};
use crate::decode::limits::METAR_REPORT;
use crate::decode::metar::is_station_id;
use crate::decode::types::{Decoded, Metar, ReportKind};

/// State of the bulletin being read.
pub(super) struct Bulletin {
    /// Header time resolved to a full date; `None` before/without a header.
    reference: Option<DateTime<Utc>>,
    /// Kind for reports without their own keyword (`METAR`/`SPECI` line, or TT = SP).
    default_kind: ReportKind,
    /// The line after the WMO header may be an AWIPS id (`METNYC`, `MTRNZY`).
    expect_awips: bool,
    /// Report texts already taken: collectives repeat reports verbatim.
    seen: HashSet<String>,
}

impl Bulletin {
    fn new() -> Self {
        Bulletin { reference: None, default_kind: ReportKind::Metar, expect_awips: false, seen: HashSet::new() }
    }
}

/// A report being assembled from continuation lines.
pub(super) struct Pending {
    line: usize,
    text: String,
}

/// Decodes WMO METAR collectives: SOH/ETX framing, sequence lines, `TTAAii CCCC YYGGgg
/// [BBB]` headers, AWIPS id lines, `METAR`/`SPECI` keyword lines, `=`-terminated reports
/// spanning indented continuation lines. Verbatim repeats within a bulletin are dropped
/// (not errors); reports whose first token is not a station id, or that hold control
/// characters such as a NUL byte, are rejected at the line they start on.
pub fn decode_collective(text: &str, month_hint: Option<(i32, u32)>, now: DateTime<Utc>) -> Decoded<Metar> {
    let dating = Dating { month_hint, now };
    let mut out = Decoded::new();
    let mut bulletin = Bulletin::new();
    let mut pending: Option<Pending> = None;
    for (idx, raw_line) in text.lines().enumerate() {
        let line_no = idx + 1;
        out.read += 1;
        let framed = raw_line.contains(['\u{1}', '\u{3}']);
        if framed {
            flush(&mut pending, &mut bulletin, dating, &mut out);
            if raw_line.contains('\u{1}') {
                bulletin = Bulletin::new();
            }
        }
        let line = raw_line.trim_matches(['\u{1}', '\u{3}', '\r']);
        let indented = line.starts_with([' ', '\t']);
        let trimmed = line.trim();
        if trimmed.is_empty() {
            flush(&mut pending, &mut bulletin, dating, &mut out);
            continue;
        }
        if !indented && bulletin_line(trimmed, &mut pending, &mut bulletin, dating, &mut out) {
            continue;
        }
        bulletin.expect_awips = false;
        if pending.is_some() && !indented && looks_like_report_start(trimmed) {
            flush(&mut pending, &mut bulletin, dating, &mut out);
        }
        let mut parts = trimmed.split('=').peekable();
        while let Some(part) = parts.next() {
            let part = part.trim();
            if !part.is_empty() {
                let p = pending.get_or_insert_with(|| Pending { line: line_no, text: String::new() });
                if !p.text.is_empty() {
                    p.text.push(' ');
                }
                p.text.push_str(part);
            }
            if parts.peek().is_some() {
                flush(&mut pending, &mut bulletin, dating, &mut out);
            }
        }
    }
    flush(&mut pending, &mut bulletin, dating, &mut out);
    out
}

/// Handles bulletin framing lines (sequence number, WMO header, AWIPS id, keyword line).
/// Returns true when the line was one of them.
pub(super) fn bulletin_line(
    line: &str,
    pending: &mut Option<Pending>,
    bulletin: &mut Bulletin,
    dating: Dating,
    out: &mut Decoded<Metar>,
) -> bool {
    if let Some(h) = parse_wmo_header(line) {
        flush(pending, bulletin, dating, out);
        *bulletin = Bulletin::new();
        bulletin.reference = header_reference(h, dating);
        bulletin.expect_awips = true;
        if h.tt == "SP" {
            bulletin.default_kind = ReportKind::Speci;
        }
        return true;
    }
    if is_keyword(line) {
        flush(pending, bulletin, dating, out);
        bulletin.default_kind = keyword_kind(line);
        bulletin.expect_awips = false;
        return true;
    }
    if pending.is_some() {
        return false;
    }
    if line.len() == 3 && line.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    if bulletin.expect_awips && is_awips_id(line) {
        bulletin.expect_awips = false;
        return true;
    }
    false
}

/// Ends the pending report: normalise, drop verbatim repeats, decode, record.
pub(super) fn flush(pending: &mut Option<Pending>, bulletin: &mut Bulletin, dating: Dating, out: &mut Decoded<Metar>) {
    let Some(p) = pending.take() else { return };
    if let Err(reason) = METAR_REPORT.check(p.text.len()) {
        return out.reject(p.line, reason);
    }
    let text = p.text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() || !bulletin.seen.insert(text.clone()) {
        return;
    }
    let reference = match bulletin.reference {
        Some(r) => Ok(r),
        None => report_reference(&text, dating),
    };
    match reference.and_then(|r| finish_report(&text, r, bulletin.default_kind)) {
        Ok(m) => out.records.push(m),
        Err(reason) => out.reject(p.line, reason),
    }
}

/// The dating parts of a WMO abbreviated heading.
#[derive(Clone, Copy)]
pub(super) struct WmoHeader<'a> {
    tt: &'a str,
    day: u32,
    hour: u32,
    minute: u32,
}

/// Parses `TTAAii CCCC YYGGgg [BBB]` (`SAUS70 KWBC 011200`, `SAEW KAWN 020100 RRG`,
/// `SACU31 MUHA 090915 RTD`).
pub(super) fn parse_wmo_header(line: &str) -> Option<WmoHeader<'_>> {
    let mut toks = line.split_whitespace();
    let ttaaii = toks.next()?;
    let cccc = toks.next()?;
    let when = toks.next()?;
    let bbb = toks.next();
    if toks.next().is_some() {
        return None;
    }
    let tb = ttaaii.as_bytes();
    let tt_ok = (tb.len() == 4 || tb.len() == 6)
        && tb.iter().take(4).all(u8::is_ascii_uppercase)
        && tb.iter().skip(4).all(u8::is_ascii_digit);
    let cccc_ok = cccc.len() == 4 && cccc.bytes().all(|b| b.is_ascii_uppercase());
    let bbb_ok = bbb.is_none_or(|b| b.len() == 3 && b.bytes().all(|c| c.is_ascii_uppercase()));
    if !(tt_ok && cccc_ok && bbb_ok && when.len() == 6) {
        return None;
    }
    let (day, hour, minute) = ddhhmm(when)?;
    Some(WmoHeader { tt: ttaaii.get(..2)?, day, hour, minute })
}

/// AWIPS product id line after the header (`METNYC`, `MTRNZY`).
pub(super) fn is_awips_id(line: &str) -> bool {
    (4..=6).contains(&line.len()) && line.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// A non-indented line that opens a new report even without a preceding `=`.
pub(super) fn looks_like_report_start(line: &str) -> bool {
    let mut toks = line.split_whitespace();
    match toks.next() {
        Some(t) if is_keyword(t) => true,
        Some(t) if is_station_id(t) => toks.next().and_then(time_group).is_some(),
        _ => false,
    }
}

/// Header time as a full date: the hinted month, else the latest such day not after now.
pub(super) fn header_reference(h: WmoHeader<'_>, dating: Dating) -> Option<DateTime<Utc>> {
    match dating.month_hint {
        Some(hint) => hint_reference(hint, h.day, h.hour, h.minute).ok(),
        None => recent_reference(h.day, h.hour, h.minute, dating.now),
    }
}
