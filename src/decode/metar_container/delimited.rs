//! Delimited containers: IEM ASOS CSV/TSV exports, NOAA LCD, any CSV/TSV with a METAR
//! text column and a time column; each row dated by its time column.

use std::borrow::Cow;

use chrono::Duration;

use super::dating::time_group;
use super::report::{clip, finish_report, is_prefix};
use super::MetarContainer;
use crate::decode::limits::{Limit, METAR_ROW};
use crate::decode::metar::is_station_id;
use crate::decode::timestamp::parse_timestamp;
use crate::decode::types::{Decoded, Metar, ReportKind};

/// Column names that hold the report text in delimited files (lower-cased).
pub(super) const TEXT_COLUMNS: &[&str] = &["metar", "raw_text", "rawob", "raw_ob", "rem", "raw_metar"];
/// Column names that hold the observation time, in order of preference (lower-cased).
pub(super) const TIME_COLUMNS: &[&str] = &[
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
pub(super) const TYPE_COLUMNS: &[&str] = &["report_type", "metartype", "metar_type"];

/// Where the interesting columns of a delimited file are.
pub(super) struct DelimitedColumns {
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
    decode_rows(text, METAR_ROW, delimited_columns, delimited_row)
}

/// Decodes a delimited export, the one loop of every CSV/TSV container: the first data
/// line is the header, which `columns` reads (its error rejects the header and ends the
/// input); each later line, split, goes to `row` (`Ok(None)` skips it silently). Every
/// line is held to `limit` before it is split.
pub(crate) fn decode_rows<C, T>(
    text: &str,
    limit: Limit,
    columns: impl Fn(&[Cow<'_, str>]) -> Result<C, String>,
    row: impl Fn(&[Cow<'_, str>], &C) -> Result<Option<T>, String>,
) -> Decoded<T> {
    let mut out = Decoded::new();
    out.read = text.lines().count();
    let mut lines = data_lines(text);
    let Some((header_no, header)) = lines.next() else {
        return out;
    };
    let delim = sniff_delimiter(header);
    let mut fields = Vec::new();
    let header_columns = limit
        .check(header.len())
        .and_then(|()| split_delimited(header, delim, &mut fields))
        .and_then(|()| columns(&fields));
    let cols = match header_columns {
        Ok(c) => c,
        Err(reason) => {
            out.reject(header_no, reason);
            return out;
        }
    };
    for (no, line) in lines {
        let decoded = limit
            .check(line.len())
            .and_then(|()| split_delimited(line, delim, &mut fields))
            .and_then(|()| row(&fields, &cols));
        match decoded {
            Ok(Some(r)) => out.records.push(r),
            Ok(None) => {}
            Err(reason) => out.reject(no, reason),
        }
    }
    out
}

/// Column positions from the header row, or why this header is not usable.
pub(super) fn delimited_columns(header: &[Cow<'_, str>]) -> Result<DelimitedColumns, String> {
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
pub(super) fn delimited_row(fields: &[Cow<'_, str>], cols: &DelimitedColumns) -> Result<Option<Metar>, String> {
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
pub(super) fn quoted_field(line: &str, start: usize) -> Result<(Cow<'_, str>, usize), String> {
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
pub(super) fn report_type_kind(s: &str) -> Option<ReportKind> {
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
pub(super) fn delimited_kind(line: &str) -> Option<MetarContainer> {
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
pub(super) fn normalise_column(h: &str) -> String {
    let h = h.trim().trim_matches('"');
    let h = h.split('(').next().unwrap_or(h).trim();
    h.to_ascii_lowercase()
}

/// The report inside a text field: LCD prefixes `MET10501/01/23 00:54:02 ` before the
/// keyword and appends a QC flag like `(CK)`; both go.
pub(super) fn report_text(field: &str) -> &str {
    let f = field.trim();
    let start = if starts_like_report(f) { 0 } else { keyword_offset(f).or_else(|| station_offset(f)).unwrap_or(0) };
    let t = f.get(start..).unwrap_or(f).trim_end();
    strip_qc_flag(t).trim_end_matches('=').trim_end()
}

/// True when the text begins with METAR/SPECI or a station id.
pub(super) fn starts_like_report(s: &str) -> bool {
    s.split_whitespace().next().is_some_and(|t| is_prefix(t) || is_station_id(t))
}

/// Byte offset of the first ` METAR ` / ` SPECI ` token inside a longer field.
pub(super) fn keyword_offset(s: &str) -> Option<usize> {
    [" METAR ", " SPECI "].iter().filter_map(|k| s.find(k)).min().map(|i| i + 1)
}

/// Byte offset of the first `CCCC DDHHMMZ` pair in a field without a keyword.
pub(super) fn station_offset(s: &str) -> Option<usize> {
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
pub(super) fn strip_qc_flag(s: &str) -> &str {
    match s.rsplit_once(' ') {
        Some((head, last)) if last.len() <= 6 && last.len() >= 3 && last.starts_with('(') && last.ends_with(')') => {
            head.trim_end()
        }
        _ => s,
    }
}
