//! The containers METAR reports arrive in, and how each one dates its reports.
//!
//! A METAR stamps only day-of-month, hour and minute (`DDHHMMZ`), so every container has to
//! supply the year and month. Each does it differently: IEM/generic CSVs and NOAA LCD carry a
//! timestamp column, aviationweather.gov JSON an epoch `obsTime`, WMO collectives a
//! `DDHHMM` bulletin header (month from `--month` or today), and bare lines only `--month`.
//! `ingest metar` calls [`decode_metar_input`], which sniffs the container with [`detect`]
//! so operators never have to say what they are feeding in.

use super::metar::{is_station_id, parse_metar};
use crate::decode::limits::{METAR_REPORT, METAR_ROW};
use crate::decode::text::{input_text, quote};
use crate::decode::timestamp::parse_timestamp;
use crate::decode::types::{Decoded, Metar, ReportKind};
use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, TimeZone, Utc};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashSet;

/// The input layouts `ingest metar` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetarContainer {
    /// IEM ASOS CSV/TSV export (or any CSV/TSV with a METAR text column and a time column).
    IemDelimited,
    /// NOAA Local Climatological Data CSV (`REPORT_TYPE` + `REM` columns).
    Lcd,
    /// aviationweather.gov data API JSON (`rawOb`, `obsTime`, ...).
    AwcJson,
    /// WMO bulletin(s) (`SAUS70 KWBC 011200`) with `=`-terminated reports.
    Collective,
    /// One report per line, nothing else.
    BareLines,
}

/// Column names that hold the report text in delimited files (lower-cased).
const TEXT_COLUMNS: &[&str] = &["metar", "raw_text", "rawob", "raw_ob", "rem", "raw_metar"];
/// Column names that hold the observation time, in order of preference (lower-cased).
const TIME_COLUMNS: &[&str] = &[
    "valid",
    "valid_utc",
    "utc_valid",
    "datetime",
    "date",
    "obstime",
    "observation_time",
    "reporttime",
    "report_time",
    "time",
    "timestamp",
];
/// Column names that say which report type a row is (LCD `REPORT_TYPE`).
const TYPE_COLUMNS: &[&str] = &["report_type", "metartype", "metar_type"];

/// Bytes of the input `detect` looks at.
const SNIFF_BYTES: usize = 8192;

/// Guesses the container from the first few kilobytes. Order matters: JSON and SOH are
/// unambiguous, a delimited header names its columns, a WMO header can follow a sequence
/// line, and anything else is taken as one report per line.
pub fn detect(bytes: &[u8]) -> MetarContainer {
    let head = bytes.get(..bytes.len().min(SNIFF_BYTES)).unwrap_or(bytes);
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}');
    if text.trim_start().starts_with(['[', '{']) {
        return MetarContainer::AwcJson;
    }
    if head.contains(&0x01) {
        return MetarContainer::Collective;
    }
    let mut lines = text.lines().map(clean_line).filter(|l| !l.is_empty() && !l.starts_with('#'));
    if let Some(first) = lines.next() {
        if let Some(kind) = delimited_kind(first) {
            return kind;
        }
        if parse_wmo_header(first).is_some() {
            return MetarContainer::Collective;
        }
    }
    if lines.take(4).any(|l| parse_wmo_header(l).is_some()) {
        return MetarContainer::Collective;
    }
    MetarContainer::BareLines
}

/// Detects the container and decodes it. `month_hint` (`--month YYYY-MM`) dates
/// collectives and bare lines; without it they are dated from the current UTC date.
pub fn decode_metar_input(bytes: &[u8], month_hint: Option<(i32, u32)>) -> Decoded<Metar> {
    decode_metar_input_at(bytes, month_hint, Utc::now())
}

/// [`decode_metar_input`] with an explicit "now", so dating without a hint is testable.
/// Input that is not UTF-8 text (UTF-16, binary) is refused as a whole, naming what it is.
pub fn decode_metar_input_at(bytes: &[u8], month_hint: Option<(i32, u32)>, now: DateTime<Utc>) -> Decoded<Metar> {
    let text = match input_text(bytes) {
        Ok(t) => t,
        Err(e) => return Decoded::refused(e.to_string()),
    };
    match detect(bytes) {
        MetarContainer::IemDelimited | MetarContainer::Lcd => decode_delimited(&text),
        MetarContainer::AwcJson => decode_awc_json(&text),
        MetarContainer::Collective => decode_collective(&text, month_hint, now),
        MetarContainer::BareLines => decode_bare_lines(&text, month_hint, now),
    }
}

// ---------------------------------------------------------------------------------------
// Delimited: IEM, generic CSV, NOAA LCD

/// Where the interesting columns of a delimited file are.
struct DelimitedColumns {
    /// LCD dates rows in Local Standard Time of an unnamed zone: its `DATE` plus one day is
    /// after the report for any zone, which is what the parser's day resolution wants.
    lcd: bool,
    text: usize,
    time: usize,
    time_name: String,
    report_type: Option<usize>,
    needed: usize,
}

/// Decodes IEM ASOS exports, LCD and any CSV/TSV with a METAR text column and a time
/// column. The time column is only the dating reference: the report's own `DDHHMMZ` is
/// the observation time, resolved to the date nearest the column's value. That makes
/// LCD's Local Standard Time `DATE` (hours off UTC) and IEM's `valid` equally usable.
/// Rows with an LCD `REPORT_TYPE` other than FM-15/FM-16 (SYNOP, SOD, SOM) are skipped
/// silently: they are not METARs.
pub fn decode_delimited(text: &str) -> Decoded<Metar> {
    let mut out = Decoded::new();
    out.read = text.lines().count();
    let mut lines = data_lines(text);
    let Some((header_no, header)) = lines.next() else {
        return out;
    };
    let delim = sniff_delimiter(header);
    let mut fields = Vec::new();
    let columns = METAR_ROW
        .check(header.len())
        .and_then(|()| split_delimited(header, delim, &mut fields))
        .and_then(|()| delimited_columns(&fields));
    let cols = match columns {
        Ok(c) => c,
        Err(reason) => {
            out.reject(header_no, reason);
            return out;
        }
    };
    for (no, line) in lines {
        let row = METAR_ROW
            .check(line.len())
            .and_then(|()| split_delimited(line, delim, &mut fields))
            .and_then(|()| delimited_row(&fields, &cols));
        match row {
            Ok(Some(m)) => out.records.push(m),
            Ok(None) => {}
            Err(reason) => out.reject(no, reason),
        }
    }
    out
}

/// Column positions from the header row, or why this header is not usable.
fn delimited_columns(header: &[Cow<'_, str>]) -> Result<DelimitedColumns, String> {
    let names: Vec<String> = header.iter().map(|h| normalise_column(h)).collect();
    let find = |set: &[&str]| set.iter().find_map(|c| names.iter().position(|n| n == c));
    let text = find(TEXT_COLUMNS).ok_or("header lacks a metar/raw_text/rawOb/REM column")?;
    let time = find(TIME_COLUMNS).ok_or("header lacks a time column (valid, DATE, ...)")?;
    let report_type = find(TYPE_COLUMNS);
    let needed = text.max(time).max(report_type.unwrap_or(0)) + 1;
    let time_name = header.get(time).map_or("time", |h| h.trim()).to_string();
    let lcd = names.iter().any(|n| n == "report_type") && names.iter().any(|n| n == "rem");
    Ok(DelimitedColumns { lcd, text, time, time_name, report_type, needed })
}

/// One data row: `Ok(None)` for rows of other report types.
fn delimited_row(fields: &[Cow<'_, str>], cols: &DelimitedColumns) -> Result<Option<Metar>, String> {
    if fields.len() < cols.needed {
        return Err(format!("expected at least {} columns, found {}", cols.needed, fields.len()));
    }
    let field = |i: usize| fields.get(i).map_or("", |f| f.trim());
    // LCD rows of other types (FM-12 SYNOP, SOD, SOM) are not METARs; elsewhere a type
    // column only overrides the kind when it says METAR or SPECI.
    let forced = match cols.report_type.map(field).map(report_type_kind) {
        Some(None) if cols.lcd => return Ok(None),
        Some(kind) => kind,
        None => None,
    };
    let text = report_text(field(cols.text));
    if text.is_empty() || text == "M" {
        return Err("empty METAR text".into());
    }
    let when = field(cols.time);
    let reference = parse_timestamp(when).ok_or_else(|| format!("bad {} time '{}'", cols.time_name, clip(when)))?;
    let reference = if cols.lcd { reference + Duration::days(1) } else { reference };
    let mut metar = finish_report(text, reference, forced.unwrap_or(ReportKind::Metar))?;
    if forced.is_some() {
        metar.kind = forced;
    }
    Ok(Some(metar))
}

/// Lines of a delimited file that carry a header or data: (1-based line number, line),
/// skipping blank lines and `#` comments (IEM's `#DEBUG` preamble).
pub(crate) fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r'))).filter(|(_, l)| {
        let t = l.trim_start();
        !t.trim_end().is_empty() && !t.starts_with('#')
    })
}

/// Tab when the header line has one (IEM's `tdf`), else comma.
pub(crate) fn sniff_delimiter(header: &str) -> u8 {
    if header.contains('\t') {
        b'\t'
    } else {
        b','
    }
}

/// Splits one line into fields. Comma files may quote fields (`"LINCOLN AIRPORT, NE US"`,
/// `""` for a quote); tab files are never quoted. Records never span lines in these
/// exports, so an unterminated quote is an error for that line only. Hand-written so that
/// line numbers are exact and fields borrow from the input.
pub(crate) fn split_delimited<'a>(line: &'a str, delim: u8, fields: &mut Vec<Cow<'a, str>>) -> Result<(), String> {
    fields.clear();
    let quoting = delim == b',';
    let bytes = line.as_bytes();
    let find = |from: usize, what: u8| {
        bytes.get(from..).and_then(|rest| rest.iter().position(|b| *b == what)).map(|k| from + k)
    };
    let mut i = 0;
    loop {
        let after = if quoting && bytes.get(i) == Some(&b'"') {
            let (value, end) = quoted_field(line, i + 1)?;
            fields.push(value);
            end
        } else {
            let end = find(i, delim).unwrap_or(bytes.len());
            fields.push(Cow::Borrowed(line.get(i..end).unwrap_or("")));
            end
        };
        match find(after, delim) {
            Some(k) => i = k + 1,
            None => return Ok(()),
        }
    }
}

/// A quoted field whose content starts at `start`: its value and the index after the
/// closing quote.
fn quoted_field(line: &str, start: usize) -> Result<(Cow<'_, str>, usize), String> {
    let bytes = line.as_bytes();
    let mut owned: Option<String> = None;
    let mut j = start;
    loop {
        let q = bytes
            .get(j..)
            .and_then(|rest| rest.iter().position(|b| *b == b'"'))
            .map(|k| j + k)
            .ok_or("unterminated quoted field")?;
        let piece = line.get(j..q).unwrap_or("");
        if bytes.get(q + 1) == Some(&b'"') {
            let s = owned.get_or_insert_with(String::new);
            s.push_str(piece);
            s.push('"');
            j = q + 2;
            continue;
        }
        let value = match owned {
            Some(mut s) => {
                s.push_str(piece);
                Cow::Owned(s)
            }
            None => Cow::Borrowed(piece),
        };
        return Ok((value, q + 1));
    }
}

/// LCD `REPORT_TYPE` (or a METAR/SPECI type column) to a kind; `None` = not a METAR row.
fn report_type_kind(s: &str) -> Option<ReportKind> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("FM-15") || s.eq_ignore_ascii_case("METAR") {
        Some(ReportKind::Metar)
    } else if s.eq_ignore_ascii_case("FM-16") || s.eq_ignore_ascii_case("SPECI") {
        Some(ReportKind::Speci)
    } else {
        None
    }
}

/// Kind of delimited file a header line announces, if it is one.
fn delimited_kind(line: &str) -> Option<MetarContainer> {
    let sep = if line.contains('\t') {
        '\t'
    } else if line.contains(',') {
        ','
    } else {
        return None;
    };
    let names: Vec<String> = line.split(sep).map(normalise_column).collect();
    let has = |n: &str| names.iter().any(|x| x == n);
    if has("report_type") && has("rem") {
        Some(MetarContainer::Lcd)
    } else if names.iter().any(|n| TEXT_COLUMNS.contains(&n.as_str())) {
        Some(MetarContainer::IemDelimited)
    } else {
        None
    }
}

/// Lower-cased header name without quotes or a unit suffix (`valid(UTC)` → `valid`).
fn normalise_column(h: &str) -> String {
    let h = h.trim().trim_matches('"');
    let h = h.split('(').next().unwrap_or(h).trim();
    h.to_ascii_lowercase()
}

/// The report inside a text field: LCD prefixes `MET10501/01/23 00:54:02 ` before the
/// keyword and appends a QC flag like `(CK)`; both go.
fn report_text(field: &str) -> &str {
    let f = field.trim();
    let start = if starts_like_report(f) { 0 } else { keyword_offset(f).or_else(|| station_offset(f)).unwrap_or(0) };
    let t = f.get(start..).unwrap_or(f).trim_end();
    strip_qc_flag(t).trim_end_matches('=').trim_end()
}

/// True when the text begins with METAR/SPECI or a station id.
fn starts_like_report(s: &str) -> bool {
    s.split_whitespace().next().is_some_and(|t| is_prefix(t) || is_station_id(t))
}

/// Byte offset of the first ` METAR ` / ` SPECI ` token inside a longer field.
fn keyword_offset(s: &str) -> Option<usize> {
    [" METAR ", " SPECI "].iter().filter_map(|k| s.find(k)).min().map(|i| i + 1)
}

/// Byte offset of the first `CCCC DDHHMMZ` pair in a field without a keyword.
fn station_offset(s: &str) -> Option<usize> {
    let mut toks = s.split_whitespace().peekable();
    while let Some(t) = toks.next() {
        if is_station_id(t) && toks.peek().is_some_and(|n| time_group(n).is_some()) {
            // `t` is a subslice of `s`, so the pointer difference is its byte offset.
            return Some(t.as_ptr() as usize - s.as_ptr() as usize);
        }
    }
    None
}

/// Drops a trailing NCEI quality flag token such as `(CK)` or `(RC)`.
fn strip_qc_flag(s: &str) -> &str {
    match s.rsplit_once(' ') {
        Some((head, last)) if last.len() <= 6 && last.len() >= 3 && last.starts_with('(') && last.ends_with(')') => {
            head.trim_end()
        }
        _ => s,
    }
}

// ---------------------------------------------------------------------------------------
// aviationweather.gov JSON

/// Decodes aviationweather.gov data API output: a JSON array of objects (or a GeoJSON
/// FeatureCollection whose features carry the same properties). `rawOb` is the report;
/// `obsTime` (epoch seconds), else `reportTime`/`receiptTime`, dates it. Errors carry the
/// 1-based record index.
pub fn decode_awc_json(text: &str) -> Decoded<Metar> {
    let mut out = Decoded::new();
    let value: Value = match serde_json::from_str(text.trim_start_matches('\u{feff}')) {
        Ok(v) => v,
        Err(e) => {
            out.read = 1;
            out.reject(e.line().max(1), format!("invalid JSON: {e}"));
            return out;
        }
    };
    let items = match &value {
        Value::Array(a) => Some(a),
        Value::Object(o) => o.get("features").and_then(Value::as_array),
        _ => None,
    };
    let Some(items) = items else {
        out.read = 1;
        out.reject(1, "expected a JSON array of METAR objects");
        return out;
    };
    for (i, item) in items.iter().enumerate() {
        out.read += 1;
        let obj = item.get("properties").unwrap_or(item);
        match awc_item(obj) {
            Ok(m) => out.records.push(m),
            Err(reason) => out.reject(i + 1, reason),
        }
    }
    out
}

/// One AWC object to a report.
fn awc_item(obj: &Value) -> Result<Metar, String> {
    let raw = ["rawOb", "raw_text", "rawText"]
        .iter()
        .find_map(|k| obj.get(k).and_then(Value::as_str))
        .ok_or("object lacks 'rawOb'")?;
    let reference = ["obsTime", "reportTime", "receiptTime"]
        .iter()
        .find_map(|k| obj.get(k).and_then(json_time))
        .ok_or("object lacks a usable obsTime/reportTime")?;
    let fallback = match obj.get("metarType").and_then(Value::as_str) {
        Some(t) if t.eq_ignore_ascii_case("SPECI") => ReportKind::Speci,
        _ => ReportKind::Metar,
    };
    finish_report(report_text(raw), reference, fallback)
}

/// Epoch seconds or an ISO 8601 string.
fn json_time(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::Number(n) => n.as_i64().and_then(|s| Utc.timestamp_opt(s, 0).single()),
        Value::String(s) => parse_timestamp(s),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// WMO collectives

/// State of the bulletin being read.
struct Bulletin {
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
struct Pending {
    line: usize,
    text: String,
}

/// Dating context shared by collectives and bare lines.
#[derive(Clone, Copy)]
struct Dating {
    month_hint: Option<(i32, u32)>,
    now: DateTime<Utc>,
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
fn bulletin_line(
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
fn flush(pending: &mut Option<Pending>, bulletin: &mut Bulletin, dating: Dating, out: &mut Decoded<Metar>) {
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
struct WmoHeader<'a> {
    tt: &'a str,
    day: u32,
    hour: u32,
    minute: u32,
}

/// Parses `TTAAii CCCC YYGGgg [BBB]` (`SAUS70 KWBC 011200`, `SAEW KAWN 020100 RRG`,
/// `SACU31 MUHA 090915 RTD`).
fn parse_wmo_header(line: &str) -> Option<WmoHeader<'_>> {
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
fn is_awips_id(line: &str) -> bool {
    (4..=6).contains(&line.len()) && line.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// A non-indented line that opens a new report even without a preceding `=`.
fn looks_like_report_start(line: &str) -> bool {
    let mut toks = line.split_whitespace();
    match toks.next() {
        Some(t) if is_keyword(t) => true,
        Some(t) if is_station_id(t) => toks.next().and_then(time_group).is_some(),
        _ => false,
    }
}

/// Header time as a full date: the hinted month, else the latest such day not after now.
fn header_reference(h: WmoHeader<'_>, dating: Dating) -> Option<DateTime<Utc>> {
    match dating.month_hint {
        Some(hint) => hint_reference(hint, h.day, h.hour, h.minute).ok(),
        None => recent_reference(h.day, h.hour, h.minute, dating.now),
    }
}

// ---------------------------------------------------------------------------------------
// Bare lines

/// Decodes one report per line (optional `METAR `/`SPECI ` prefix and `=`). With
/// `--month`, day DD of a report is DD of that month; without, the latest such day not
/// after now. A line holding only `METAR` or `SPECI` sets the kind of the lines after it.
pub fn decode_bare_lines(text: &str, month_hint: Option<(i32, u32)>, now: DateTime<Utc>) -> Decoded<Metar> {
    let dating = Dating { month_hint, now };
    let mut out = Decoded::new();
    let mut default_kind = ReportKind::Metar;
    for (idx, line) in text.lines().enumerate() {
        out.read += 1;
        let line = clean_line(line).trim_end_matches('=').trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Err(reason) = METAR_REPORT.check(line.len()) {
            out.reject(idx + 1, reason);
            continue;
        }
        if is_keyword(line) {
            default_kind = keyword_kind(line);
            continue;
        }
        let text = normalise_ws(line);
        let result =
            report_reference(&text, dating).and_then(|reference| finish_report(&text, reference, default_kind));
        match result {
            Ok(m) => out.records.push(m),
            Err(reason) => out.reject(idx + 1, reason),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Shared report handling

/// Checks what every container must check, then parses: a plausible length (see
/// [`METAR_REPORT`]), no control or non-ASCII characters (a NUL byte means a garbled
/// transmission), a station id first, something after the time group. A report without its own keyword gets HF-METAR when IEM marked
/// it `MADISHF`, else `fallback`.
fn finish_report(text: &str, reference: DateTime<Utc>, fallback: ReportKind) -> Result<Metar, String> {
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
fn check_chars(text: &str) -> Result<(), String> {
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
fn normalise_ws(text: &str) -> Cow<'_, str> {
    let t = text.trim();
    let clean = t.is_ascii() && !t.contains(['\t', '\r', '\n']) && !t.contains("  ");
    if clean {
        Cow::Borrowed(t)
    } else {
        Cow::Owned(t.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

/// Reference time for a report that has no container time: its own DD HH:MM placed in
/// the hinted month, or the latest such day not after now. When the report has no
/// readable time group, the hint's mid-month or now, and the parser reports the group.
fn report_reference(text: &str, dating: Dating) -> Result<DateTime<Utc>, String> {
    let mut toks = text.split_whitespace().skip_while(|t| is_prefix(t));
    let group = toks.nth(1).and_then(time_group);
    match (group, dating.month_hint) {
        (Some((d, h, m)), Some(hint)) => hint_reference(hint, d, h, m),
        (Some((d, h, m)), None) => Ok(recent_reference(d, h, m, dating.now).unwrap_or(dating.now)),
        (None, Some(hint)) => hint_reference(hint, 15, 12, 0),
        (None, None) => Ok(dating.now),
    }
}

/// Day `day` of the hinted month at HH:MM (2400 is the next midnight; a time that is
/// no time gives midnight, and the parser then names the bad group).
fn hint_reference((year, month): (i32, u32), day: u32, hour: u32, minute: u32) -> Result<DateTime<Utc>, String> {
    let date = NaiveDate::from_ymd_opt(year, month, day)
        .ok_or_else(|| format!("day {day} does not exist in {year}-{month:02}"))?;
    Ok(at_minutes(date, hour, minute))
}

/// Latest DD HH:MM not later than one hour after `now` (reports are never from the
/// future; the hour allows for clock skew), within the last few months.
fn recent_reference(day: u32, hour: u32, minute: u32, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let limit = now + Duration::hours(1);
    let (mut year, mut month) = (now.year(), now.month());
    for _ in 0..4 {
        let t = NaiveDate::from_ymd_opt(year, month, day).map(|d| at_minutes(d, hour, minute));
        if let Some(t) = t.filter(|t| *t <= limit) {
            return Some(t);
        }
        (year, month) = if month == 1 { (year - 1, 12) } else { (year, month - 1) };
    }
    None
}

/// `date` at HH:MM counted in minutes, so METAR's 2400Z works; midnight when out of range.
fn at_minutes(date: NaiveDate, hour: u32, minute: u32) -> DateTime<Utc> {
    let minutes = if hour <= 24 && minute <= 59 { i64::from(hour * 60 + minute) } else { 0 };
    Utc.from_utc_datetime(&date.and_time(NaiveTime::MIN)) + Duration::minutes(minutes)
}

/// `DDHHMMZ` (the parser also takes it without `Z`) → (day, hour, minute), digits only
/// (ranges are the parser's business).
fn time_group(tok: &str) -> Option<(u32, u32, u32)> {
    ddhhmm(tok.strip_suffix('Z').unwrap_or(tok))
}

/// `DDHHMM` → (day, hour, minute).
fn ddhhmm(s: &str) -> Option<(u32, u32, u32)> {
    let b = s.as_bytes();
    if b.len() != 6 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let two = |i: usize| Some(u32::from(b.get(i)? - b'0') * 10 + u32::from(b.get(i + 1)? - b'0'));
    Some((two(0)?, two(2)?, two(4)?))
}

fn is_keyword(t: &str) -> bool {
    t == "METAR" || t == "SPECI"
}

/// Tokens the parser accepts before the station id.
fn is_prefix(t: &str) -> bool {
    is_keyword(t) || t == "COR"
}

fn keyword_kind(t: &str) -> ReportKind {
    if t == "SPECI" {
        ReportKind::Speci
    } else {
        ReportKind::Metar
    }
}

/// A line without framing characters or surrounding whitespace.
fn clean_line(l: &str) -> &str {
    l.trim_matches(|c: char| c.is_whitespace() || c == '\u{1}' || c == '\u{3}')
}

/// At most 24 characters of a bad value, control characters escaped, so a reason never
/// carries a whole line or raw bytes.
fn clip(s: &str) -> Cow<'_, str> {
    quote(s, 24)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::types::fixture;
    use chrono::NaiveDateTime;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    /// Decodes a fixture through detection, with a fixed "now" that must not matter.
    fn decode_fixture(rel: &str, hint: Option<(i32, u32)>) -> Decoded<Metar> {
        decode_metar_input_at(&fixture(rel), hint, utc(2030, 1, 1, 0, 0))
    }

    fn count(d: &Decoded<Metar>, kind: ReportKind) -> usize {
        d.records.iter().filter(|m| m.kind == Some(kind)).count()
    }

    /// (valid, metar) columns of an IEM export, read independently of the decoder.
    fn iem_rows(rel: &str) -> Vec<(DateTime<Utc>, String)> {
        let bytes = fixture(rel);
        let text = String::from_utf8(bytes).unwrap();
        let mut lines = text.lines().filter(|l| !l.starts_with('#'));
        let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
        let v = header.iter().position(|h| *h == "valid").unwrap();
        let m = header.iter().position(|h| *h == "metar").unwrap();
        lines
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                let t = NaiveDateTime::parse_from_str(f[v], "%Y-%m-%d %H:%M").unwrap();
                (Utc.from_utc_datetime(&t), f[m].to_string())
            })
            .collect()
    }

    #[test]
    fn detect_real_files() {
        use MetarContainer::*;
        let cases = [
            ("metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv", IemDelimited),
            ("metar/IEM_KCVG_2024-03-01_routine.tsv", IemDelimited),
            ("metar/IEM_KCVG_2024-03-01_specials.tsv", IemDelimited),
            ("metar/IEM_VOHY_2014-03-01_2014-04-04_all_fields.tsv", IemDelimited),
            ("metar/WSSS_2025-12-05_2026-01-18_scraped.csv", IemDelimited),
            ("metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json", AwcJson),
            ("lcd/LCD_KLNK_USW00014939_2023-01-01_2023-02-26_metric.csv", Lcd),
        ];
        for (rel, want) in cases {
            assert_eq!(detect(&fixture(rel)), want, "{rel}");
        }
        for name in ["badchars", "collective", "collective2", "first", "kawn", "kmwn", "nullbyte", "rtd_bbb", "sa"] {
            let rel = format!("metar/pyiem_collectives/{name}.txt");
            assert_eq!(detect(&fixture(&rel)), Collective, "{rel}");
        }
        assert_eq!(detect(b"METAR KNYC 011251Z 00000KT 10SM CLR 01/M01 A3000\n"), BareLines);
        assert_eq!(detect(b""), BareLines);
    }

    #[test]
    fn iem_kcvg_all_reports() {
        // 323 lines = 5 #DEBUG + header + 317 rows; `grep -c MADISHF` = 287 HF reports,
        // the other 30 are the 24 routine + 6 special rows of the two smaller exports.
        let rel = "metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv";
        let d = decode_fixture(rel, None);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.read, 323);
        assert_eq!(d.records.len(), 317);
        assert_eq!(count(&d, ReportKind::HfMetar), 287);
        assert_eq!(count(&d, ReportKind::Metar), 30);
        // Every report's own time agrees with IEM's `valid` column; station is the ICAO id.
        let rows = iem_rows(rel);
        for (m, (valid, text)) in d.records.iter().zip(&rows) {
            assert_eq!(m.time, *valid, "{text}");
            assert_eq!(m.station, "KCVG");
        }
        // Line 7: "CVG 2024-03-01 00:00 KCVG 010000Z AUTO 15005KT ... MADISHF".
        assert_eq!(d.records[0].time, utc(2024, 3, 1, 0, 0));
        assert_eq!(d.records[0].kind, Some(ReportKind::HfMetar));
    }

    #[test]
    fn iem_kcvg_routine_and_specials() {
        // Rows = lines - 6 (5 #DEBUG + header): 30 - 6 = 24 and 12 - 6 = 6.
        for (rel, n) in [("metar/IEM_KCVG_2024-03-01_routine.tsv", 24), ("metar/IEM_KCVG_2024-03-01_specials.tsv", 6)] {
            let d = decode_fixture(rel, None);
            assert!(d.errors.is_empty(), "{rel}: {:?}", d.errors);
            assert_eq!(d.records.len(), n, "{rel}");
            let rows = iem_rows(rel);
            for (m, (valid, _)) in d.records.iter().zip(&rows) {
                assert_eq!(m.time, *valid);
            }
        }
        // specials.tsv line 7: "KCVG 011707Z 18006KT 9SM -PLRA ..." (IEM drops the SPECI
        // keyword, so the kind falls back to METAR).
        let d = decode_fixture("metar/IEM_KCVG_2024-03-01_specials.tsv", None);
        assert_eq!(d.records[0].time, utc(2024, 3, 1, 17, 7));
        assert_eq!(d.records[0].station, "KCVG");
        assert_eq!(d.records[0].kind, Some(ReportKind::Metar));
    }

    #[test]
    fn iem_vohy_all_fields() {
        // 420 lines - 5 #DEBUG - header = 414 rows of 30 tab-separated columns.
        let rel = "metar/IEM_VOHY_2014-03-01_2014-04-04_all_fields.tsv";
        let d = decode_fixture(rel, None);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records.len(), 414);
        let rows = iem_rows(rel);
        for (m, (valid, _)) in d.records.iter().zip(&rows) {
            assert_eq!(m.time, *valid);
            assert_eq!(m.station, "VOHY");
        }
        // Last line (420): "VOHY 041540Z 10003KT 6000 FEW020 SCT200 32/12 Q1014 NOSIG".
        let last = d.records.last().unwrap();
        assert_eq!(last.time, utc(2014, 4, 4, 15, 40));
        assert_eq!(last.kind, Some(ReportKind::Metar));
    }

    #[test]
    fn wsss_scraped_csv() {
        // 1223 lines = header `Datetime,METAR` + 1222 rows; `grep -c ',SPECI WSSS'` = 5.
        let rel = "metar/WSSS_2025-12-05_2026-01-18_scraped.csv";
        let d = decode_fixture(rel, None);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records.len(), 1222);
        assert_eq!(count(&d, ReportKind::Speci), 5);
        assert_eq!(count(&d, ReportKind::Metar), 1217);
        // Line 2: "2025-12-05 14:30 UTC,METAR WSSS 051430Z 34006KT ...".
        assert_eq!(d.records[0].station, "WSSS");
        assert_eq!(d.records[0].time, utc(2025, 12, 5, 14, 30));
        // Line 236: "2025-12-12 09:47 UTC,SPECI WSSS 120941Z ..." (scrape time is later
        // than the report time: the text wins).
        assert_eq!(d.records[234].time, utc(2025, 12, 12, 9, 41));
        assert_eq!(d.records[234].kind, Some(ReportKind::Speci));
        // Every report precedes its scrape timestamp by under an hour, except line 277
        // ("2025-12-14 05:40 UTC,METAR WSSS 132300Z ...", scraped 6 h 40 min late).
        let text = String::from_utf8(fixture(rel)).unwrap();
        for (i, (m, line)) in d.records.iter().zip(text.lines().skip(1)).enumerate() {
            let stamp = line.split(" UTC,").next().unwrap();
            let t = NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M").unwrap();
            let late = (Utc.from_utc_datetime(&t) - m.time).num_minutes();
            let want = if i + 2 == 277 { 400..401 } else { 0..60 };
            assert!(want.contains(&late), "{line}: {late}");
        }
        assert_eq!(d.records[275].time, utc(2025, 12, 13, 23, 0));
    }

    #[test]
    fn awc_json() {
        // `grep -c rawOb` = 9 objects.
        let d = decode_fixture("metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json", None);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.read, 9);
        assert_eq!(d.records.len(), 9);
        let got: Vec<(&str, DateTime<Utc>)> = d.records.iter().map(|m| (m.station.as_str(), m.time)).collect();
        // rawOb of objects 1-3: KAUS 250553Z, KMDW 250553Z, KNYC 250551Z (Sept 2026).
        assert_eq!(
            got[..3],
            [("KAUS", utc(2026, 9, 25, 5, 53)), ("KMDW", utc(2026, 9, 25, 5, 53)), ("KNYC", utc(2026, 9, 25, 5, 51))]
        );
        assert_eq!(got[8], ("KNYC", utc(2026, 9, 25, 3, 51)));
        assert!(d.records.iter().all(|m| m.kind == Some(ReportKind::Metar)));
    }

    #[test]
    fn lcd_klnk() {
        // `grep -c ',FM-15,'` = 1357, `grep -c ',FM-16,'` = 357; the other 285 rows are
        // FM-12 (226), SOD (57), SOM (2) and are skipped. 2000 lines incl. the header.
        let rel = "lcd/LCD_KLNK_USW00014939_2023-01-01_2023-02-26_metric.csv";
        let d = decode_fixture(rel, None);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.read, 2000);
        assert_eq!(d.records.len(), 1714);
        assert_eq!(count(&d, ReportKind::Metar), 1357);
        assert_eq!(count(&d, ReportKind::Speci), 357);
        // DATE is Central Standard Time all year: every report is DATE + 6 h.
        let bytes = fixture(rel);
        let mut reader = csv::Reader::from_reader(bytes.as_slice());
        let headers = reader.headers().unwrap().clone();
        let col = |n: &str| headers.iter().position(|h| h == n).unwrap();
        let (date, rtype) = (col("DATE"), col("REPORT_TYPE"));
        let dates: Vec<DateTime<Utc>> = reader
            .records()
            .map(Result::unwrap)
            .filter(|r| matches!(r[rtype].trim(), "FM-15" | "FM-16"))
            .map(|r| {
                let t = NaiveDateTime::parse_from_str(&r[date], "%Y-%m-%dT%H:%M:%S").unwrap();
                Utc.from_utc_datetime(&t) + Duration::hours(6)
            })
            .collect();
        assert_eq!(dates.len(), 1714);
        for (m, want) in d.records.iter().zip(&dates) {
            assert_eq!(m.time, *want, "{}", m.raw);
            assert_eq!(m.station, "KLNK");
        }
        // Line 3: "MET09601/01/23 00:54:02 METAR KLNK 010654Z 01005KT 8SM CLR M03/M05 A2980
        // RMK AO2 SLP102 T10331050 (CK)": prefix and QC flag are not part of the report.
        let first = &d.records[0];
        assert_eq!(first.time, utc(2023, 1, 1, 6, 54));
        assert_eq!(first.kind, Some(ReportKind::Metar));
        assert!(first.raw.contains("KLNK 010654Z 01005KT"), "{}", first.raw);
        assert!(first.raw.ends_with("T10331050"), "{}", first.raw);
        // First FM-16: DATE 2023-01-02T07:52:00, "SPECI KLNK 021352Z 05009KT ...".
        let speci = d.records.iter().find(|m| m.kind == Some(ReportKind::Speci)).unwrap();
        assert_eq!(speci.time, utc(2023, 1, 2, 13, 52));
    }

    fn collective(name: &str, hint: (i32, u32)) -> Decoded<Metar> {
        let d = decode_fixture(&format!("metar/pyiem_collectives/{name}.txt"), Some(hint));
        assert_eq!(detect(&fixture(&format!("metar/pyiem_collectives/{name}.txt"))), MetarContainer::Collective);
        d
    }

    fn stations(d: &Decoded<Metar>) -> Vec<&str> {
        d.records.iter().map(|m| m.station.as_str()).collect()
    }

    #[test]
    fn collective_with_garbage_and_duplicates() {
        // 14 '='-terminated reports: KMIA 081403Z appears twice verbatim (dropped once),
        // then three garbage ones on lines 31-33.
        let d = collective("collective", (2013, 8));
        assert_eq!(stations(&d), ["KSPS", "KMIA", "KALO", "PAJN", "RJSK", "KEST", "KAMW", "KAMW", "KALO", "KALO"]);
        let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [31, 32, 33], "{:?}", d.errors);
        assert_eq!(d.errors[0].reason, "QQQQ: no observation after the time group");
        assert!(d.errors[1].reason.starts_with("QQQQ: "), "{}", d.errors[1].reason);
        assert_eq!(d.errors[2].reason, "bad station id '1QQQ'");
        assert_eq!(d.read, 34);
        // Lines 7-10: KMIA spans four lines and ends in "$=".
        let kmia = &d.records[1];
        assert_eq!(kmia.time, utc(2013, 8, 8, 14, 3));
        assert_eq!(kmia.kind, Some(ReportKind::Metar));
        assert!(kmia.raw.starts_with("KMIA 081403Z 16032G45KT 1/2SM"), "{}", kmia.raw);
        assert!(kmia.raw.contains("OVC034 23/19 A3003"), "{}", kmia.raw);
        assert!(kmia.raw.contains("MOV NE P0046"), "{}", kmia.raw);
    }

    #[test]
    fn collective2_month_boundary() {
        // `grep -c '='` = 35 reports, header 010000 with reports stamped 31 23:5x.
        let d = collective("collective2", (2018, 1));
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records.len(), 35);
        assert_eq!(d.records[0].station, "KDMH");
        assert_eq!(d.records[0].time, utc(2017, 12, 31, 23, 54));
        assert!(d.records.iter().all(|m| m.time.month() == 12));
    }

    #[test]
    fn first_and_small_collectives() {
        // first.txt: header 010030, KSPS 302352Z (previous month) and KALO 010001Z.
        let d = collective("first", (2017, 12));
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let times: Vec<_> = d.records.iter().map(|m| m.time).collect();
        assert_eq!(times, [utc(2017, 11, 30, 23, 52), utc(2017, 12, 1, 0, 1)]);
        // Without a hint, the header day is the latest 1st not after now.
        let now = utc(2017, 12, 15, 0, 0);
        let bytes = fixture("metar/pyiem_collectives/first.txt");
        let d2 = decode_metar_input_at(&bytes, None, now);
        assert_eq!(d2.records.iter().map(|m| m.time).collect::<Vec<_>>(), times);

        // kawn.txt: "000" line, "SAEW KAWN 020100 RRG", keyword on each report, TEMPO
        // continuation line.
        let d = collective("kawn", (2017, 8));
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(stations(&d), ["LFBA", "LFBD", "LFLL"]);
        assert!(d.records[1].raw.ends_with("Q1013 TEMPO 4000 SHRA BKN020TCU"), "{}", d.records[1].raw);
        assert_eq!(d.records[2].time, utc(2017, 8, 2, 1, 0));

        // kmwn.txt: no '=' and no trailing newline: the report ends at end of input.
        let d = collective("kmwn", (2019, 12));
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(stations(&d), ["KMWN"]);
        assert_eq!(d.records[0].time, utc(2019, 12, 20, 3, 50));

        // rtd_bbb.txt: "SACU31 MUHA 090915 RTD" header.
        let d = collective("rtd_bbb", (2017, 8));
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(stations(&d), ["MUCL"]);
        assert_eq!(d.records[0].time, utc(2017, 8, 9, 9, 5));
    }

    #[test]
    fn collective_bad_bytes() {
        // badchars.txt: a UTF-8 NBSP inside HRYR's report is whitespace, all 3 decode.
        let d = collective("badchars", (2018, 6));
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(stations(&d), ["HKJK", "HRYR", "HUEN"]);
        assert!(d.records[1].raw.contains("SCT100 21/16"), "{}", d.records[1].raw);
        // nullbyte.txt: the SPECI on line 5 carries a NUL byte: rejected, not truncated.
        let d = collective("nullbyte", (2017, 8));
        assert!(d.records.is_empty());
        assert_eq!(d.errors.len(), 1);
        assert_eq!(d.errors[0].line, 5);
        assert_eq!(d.errors[0].reason, "NUL byte in report");
        // sa.txt: Canadian SA-format lines (3-letter ids) are not METARs: 4 rejects.
        let d = collective("sa", (2017, 8));
        assert!(d.records.is_empty());
        let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [3, 4, 5, 6]);
        assert_eq!(d.errors[0].reason, "bad station id 'WXL'");
    }

    #[test]
    fn collective_keyword_lines_and_speci_bulletin() {
        let text = "SPUS70 KWBC 011200\nKAAA 011155Z 00000KT 10SM CLR 01/M01 A3000=\n\
                    METAR\nKBBB 011156Z 00000KT 10SM CLR 01/M01 A3000\n\
                    KCCC 011157Z 00000KT 10SM CLR 01/M01 A3000\nSPECI\n\
                    KDDD 011158Z 00000KT 10SM CLR 01/M01 A3000=\n";
        let d = decode_metar_input_at(text.as_bytes(), Some((2024, 5)), utc(2030, 1, 1, 0, 0));
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let kinds: Vec<_> = d.records.iter().map(|m| (m.station.as_str(), m.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("KAAA", Some(ReportKind::Speci)),
                ("KBBB", Some(ReportKind::Metar)),
                ("KCCC", Some(ReportKind::Metar)),
                ("KDDD", Some(ReportKind::Speci)),
            ]
        );
        assert_eq!(d.records[3].time, utc(2024, 5, 1, 11, 58));
    }

    const BARE: &str = "METAR KNYC 011251Z 00000KT 10SM CLR 01/M01 A3000 RMK AO2=\n\
                        SPECI KNYC 011305Z 00000KT 2SM BR OVC004 01/01 A3000\n\
                        \n\
                        KNYC 302351Z 00000KT 10SM CLR 01/M01 A3000\n\
                        K1 011251Z 00000KT 10SM CLR 01/M01 A3000\n\
                        KNYC 311251Z 00000KT 10SM CLR 01/M01 A3000\n";

    #[test]
    fn bare_lines_with_month_hint() {
        let d = decode_metar_input_at(BARE.as_bytes(), Some((2024, 4)), utc(2030, 1, 1, 0, 0));
        assert_eq!(d.read, 6);
        let got: Vec<_> = d.records.iter().map(|m| (m.time, m.kind)).collect();
        assert_eq!(
            got,
            [
                (utc(2024, 4, 1, 12, 51), Some(ReportKind::Metar)),
                (utc(2024, 4, 1, 13, 5), Some(ReportKind::Speci)),
                (utc(2024, 4, 30, 23, 51), Some(ReportKind::Metar)),
            ]
        );
        let errs: Vec<_> = d.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
        assert_eq!(errs, [(5, "bad station id 'K1'"), (6, "day 31 does not exist in 2024-04")]);
    }

    #[test]
    fn bare_lines_without_hint_use_latest_past_day() {
        let now = utc(2024, 5, 15, 12, 0);
        let d = decode_metar_input_at(BARE.as_bytes(), None, now);
        let times: Vec<_> = d.records.iter().map(|m| m.time).collect();
        // Day 1 → 1 May; day 30 → 30 April (30 May is in the future); day 31 → 31 March.
        assert_eq!(
            times,
            [utc(2024, 5, 1, 12, 51), utc(2024, 5, 1, 13, 5), utc(2024, 4, 30, 23, 51), utc(2024, 3, 31, 12, 51)]
        );
        assert_eq!(d.errors.len(), 1);
    }

    #[test]
    fn generic_csv_variants() {
        // Comma-separated IEM export; the text's day disagrees with `valid` on line 5.
        let iem = "#DEBUG: Format Typ    -> comma\n\
                   station,valid,metar\n\
                   CVG,2024-03-01 00:52,KCVG 010052Z 14003KT 10SM FEW250 03/M11 A3042\n\
                   CVG,2024-03-01 01:52,KCVG 010152Z 15007KT 10SM CLR 02/M09 A3042\n\
                   CVG,2024-03-01 00:00,KCVG 292355Z 15007KT 10SM CLR 02/M09 A3042\n\
                   CVG,not a time,KCVG 010252Z 15007KT 10SM CLR 02/M09 A3042\n\
                   CVG,2024-03-01 03:52\n\
                   CVG,2024-03-01 04:52,M\n";
        assert_eq!(detect(iem.as_bytes()), MetarContainer::IemDelimited);
        let d = decode_metar_input(iem.as_bytes(), None);
        let times: Vec<_> = d.records.iter().map(|m| m.time).collect();
        assert_eq!(times, [utc(2024, 3, 1, 0, 52), utc(2024, 3, 1, 1, 52), utc(2024, 2, 29, 23, 55)]);
        let errs: Vec<_> = d.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
        assert_eq!(
            errs,
            [(6, "bad valid time 'not a time'"), (7, "expected at least 3 columns, found 2"), (8, "empty METAR text"),]
        );
        // Any header with a raw text column and a time column, any order, ISO times.
        let other = "obsTime,raw_text,flight_category\n\
                     2024-07-04T13:51:00Z,SPECI KMDW 041351Z 12004KT 10SM OVC250 17/13 A3029,VFR\n";
        let d = decode_metar_input(other.as_bytes(), None);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records[0].time, utc(2024, 7, 4, 13, 51));
        assert_eq!(d.records[0].kind, Some(ReportKind::Speci));
        // A type column outside LCD only overrides METAR/SPECI; other codes decode.
        let typed = "station,valid,report_type,metar\n\
                     CVG,2024-03-01 00:52,3,KCVG 010052Z 14003KT 10SM FEW250 03/M11 A3042\n\
                     CVG,2024-03-01 00:55,SPECI,KCVG 010055Z 14003KT 10SM FEW250 03/M11 A3042\n";
        let d = decode_metar_input(typed.as_bytes(), None);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let kinds: Vec<_> = d.records.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, [Some(ReportKind::Metar), Some(ReportKind::Speci)]);
        // LCD-style REM without a keyword: the report starts at `CCCC DDHHMMZ`.
        assert_eq!(
            report_text("MET10501/01/23 00:54:02 KLNK 010654Z 01005KT 8SM CLR (CK)"),
            "KLNK 010654Z 01005KT 8SM CLR"
        );
        // A delimited header without a time column is one error.
        let d = decode_metar_input(b"station,metar\nCVG,KCVG 010052Z 14003KT\n", None);
        assert_eq!(d.errors.len(), 1);
        assert_eq!(d.errors[0].line, 1);
    }

    #[test]
    fn awc_json_edge_cases() {
        let d = decode_awc_json("[{\"rawOb\": \"METAR KAUS 250553Z 16006KT\"");
        assert!(d.records.is_empty());
        assert_eq!(d.errors.len(), 1);
        assert!(d.errors[0].reason.starts_with("invalid JSON"));
        let json = r#"{"type":"FeatureCollection","features":[
            {"properties":{"rawOb":"KAUS 250553Z 16006KT 10SM 28/23 A3008","obsTime":"2026-09-25T05:53:00Z","metarType":"SPECI"}},
            {"properties":{"rawOb":"KAUS 250653Z 16006KT 10SM 28/23 A3008"}},
            {"properties":{"obsTime":1790315580}}]}"#;
        let d = decode_metar_input(json.as_bytes(), None);
        assert_eq!(d.read, 3);
        assert_eq!(d.records.len(), 1);
        assert_eq!(d.records[0].kind, Some(ReportKind::Speci));
        let errs: Vec<_> = d.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
        assert_eq!(errs, [(2, "object lacks a usable obsTime/reportTime"), (3, "object lacks 'rawOb'")]);
    }

    #[test]
    fn garbage_never_panics() {
        let mut noise = Vec::new();
        let mut x: u32 = 12345;
        for _ in 0..20_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            noise.push((x >> 16) as u8);
        }
        let inputs: Vec<Vec<u8>> = vec![
            noise.clone(),
            b"\0\0\0".to_vec(),
            b"\x01\r\r\n\x03".to_vec(),
            b"SAUS70 KWBC 311200\nKAAA 3\xff1200Z=\n\xe9\xe9\n".to_vec(),
            b"station,valid,metar\n\"CVG,2024\n".to_vec(),
            b"[1, \"x\", null, {\"rawOb\": 5}]".to_vec(),
            b"SAUS70 KWBC 999999\nKAAA 999999Z 00000KT=\n".to_vec(),
            fixture("metar/pyiem_collectives/nullbyte.txt")[..60].to_vec(),
        ];
        for input in &inputs {
            for hint in [None, Some((2024, 2)), Some((2024, 13))] {
                let d = decode_metar_input_at(input, hint, utc(2024, 3, 1, 0, 0));
                assert!(d.records.len() <= 1);
            }
        }
        let d = decode_metar_input(&inputs[3], Some((2024, 3)));
        assert_eq!(d.errors.len(), 2, "{:?}", d.errors);
        assert_eq!(d.errors[0].reason, "invalid UTF-8 byte in report");
    }

    /// A report longer than any real METAR is rejected with its length in every container
    /// (it used to be stored), and the good report next to it decodes. Exactly at the
    /// limit still decodes.
    #[test]
    fn over_long_reports_are_rejected_in_every_container() {
        let now = utc(2024, 3, 20, 0, 0);
        let good = "KNYC 011251Z 36010KT 10SM FEW250 05/M05 A3000";
        let huge = format!("KNYC 011251Z {}", "36010KT ".repeat(150_000));
        let huge = huge.trim_end();
        let too_long = |len: usize| format!("METAR report of {len} bytes is longer than the 1024-byte limit");
        let errs = |d: &Decoded<Metar>| d.errors.iter().map(|e| (e.line, e.reason.clone())).collect::<Vec<_>>();
        let stored = |d: &Decoded<Metar>| d.records.iter().map(|m| m.raw.clone()).collect::<Vec<_>>();

        let bare = format!("{huge}\n{good}\n");
        let d = decode_metar_input_at(bare.as_bytes(), Some((2024, 3)), now);
        assert_eq!((stored(&d), errs(&d)), (vec![good.to_string()], vec![(1, too_long(huge.len()))]));

        let coll = format!("SAUS70 KWBC 011300\nMETAR\n{huge}=\n{good}=\n");
        let d = decode_metar_input_at(coll.as_bytes(), Some((2024, 3)), now);
        assert_eq!((stored(&d), errs(&d)), (vec![good.to_string()], vec![(3, too_long(huge.len()))]));

        let json =
            serde_json::json!([{"rawOb": huge, "obsTime": 1_709_297_460}, {"rawOb": good, "obsTime": 1_709_297_460}]);
        let d = decode_metar_input_at(json.to_string().as_bytes(), None, now);
        assert_eq!((stored(&d), errs(&d)), (vec![good.to_string()], vec![(1, too_long(huge.len()))]));

        // In a CSV the row is held to its own limit, the report to the report's.
        let row = |text: &str| format!("NYC\t2024-03-01 12:51\t{text}\n");
        let mid = format!("KNYC 011251Z 36010KT 10SM RMK {}", "X".repeat(2000));
        let tsv = format!("station\tvalid\tmetar\n{}{}{}", row(huge), row(&mid), row(good));
        let d = decode_metar_input_at(tsv.as_bytes(), None, now);
        let row_reason = format!("METAR CSV row of {} bytes is longer than the 16384-byte limit", row(huge).len() - 1);
        assert_eq!(stored(&d), vec![good.to_string()]);
        assert_eq!(errs(&d), vec![(2, row_reason), (3, too_long(mid.len()))]);

        let at_limit = format!("{good} RMK {}", "X".repeat(1024 - good.len() - 5));
        assert_eq!(at_limit.len(), 1024);
        let d = decode_metar_input_at(format!("{at_limit}\n{at_limit}X\n").as_bytes(), Some((2024, 3)), now);
        assert_eq!((stored(&d), errs(&d)), (vec![at_limit.clone()], vec![(2, too_long(1025))]));
    }

    /// UTF-16 and binary inputs are refused as a whole, naming the encoding (a UTF-16 IEM
    /// export used to be reported as a header without a metar column).
    #[test]
    fn utf16_and_binary_inputs_are_named() {
        let now = utc(2024, 3, 20, 0, 0);
        let text = String::from_utf8(fixture("metar/IEM_KCVG_2024-03-01_routine.tsv")).unwrap();
        let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect();
        let d = decode_metar_input_at(&le, None, now);
        assert_eq!((d.records.len(), d.read), (0, 1));
        assert_eq!(d.errors.len(), 1);
        assert_eq!(
            d.errors[0].reason,
            "input is UTF-16LE text (byte-order mark FF FE); wxlake reads UTF-8: convert it first (iconv -f UTF-16 -t UTF-8)"
        );
        let d = decode_metar_input_at(&[0x1F, 0x8B, 0x08, 0x00, 0x12, 0x34], None, now);
        assert_eq!(d.errors[0].reason, "input is gzip-compressed data, not text");
    }
}
