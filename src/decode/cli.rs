//! NWS Daily Climate Report (CLI): decoder and encoder.
//!
//! The CLI is the official daily summary an NWS office issues for a climate station; its
//! MAXIMUM / MINIMUM rows are what daily-temperature markets settle on, so the values are
//! read exactly as printed and every record says whether it is final or preliminary.
//!
//! Layouts differ by office and era (column positions never hold across them: tabs, colon
//! times "3:01 PM", "57(E)", "57 E", "-21R", a missing TIME column, "MM"), so rows are read
//! by token inside the TEMPERATURE and PRECIPITATION blocks, and a time is only a time when
//! an AM/PM token follows it. One input may hold several products (WMO header / AWIPS id
//! lines start a product) and one product several stations (each
//! "...THE <NAME> CLIMATE SUMMARY FOR <DATE>..." line starts a section: CLIANC carries six
//! Alaska stations, CLIHOU both Houston airports).

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};

use crate::decode::limits::{CLI_LINE, CLI_PRODUCT};
use crate::decode::text::{input_text, quote};
use crate::decode::types::{DailyKind, DailyReport, Decoded};

/// AWIPS ids whose ICAO id is not "K" + id: Alaska, Hawaii, the Pacific, the Caribbean.
const NON_K_IDS: &[(&str, &str)] = &[
    ("ADQ", "PADQ"),
    ("AKN", "PAKN"),
    ("ANC", "PANC"),
    ("ANN", "PANT"),
    ("BET", "PABE"),
    ("BRW", "PABR"),
    ("CDB", "PACD"),
    ("FAI", "PAFA"),
    ("JNU", "PAJN"),
    ("MCG", "PAMC"),
    ("OME", "PAOM"),
    ("OTZ", "PAOT"),
    ("SNP", "PASN"),
    ("YAK", "PAYA"),
    ("HNL", "PHNL"),
    ("ITO", "PHTO"),
    ("LIH", "PHLI"),
    ("OGG", "PHOG"),
    ("GUM", "PGUM"),
    ("PPG", "NSTU"),
    ("SJU", "TJSJ"),
];

/// Section names of multi-station products, whose AWIPS id names only one of them (the
/// first CLIHOU section is Intercontinental, KIAH, not Hobby, KHOU). Exact, whitespace
/// normalised names as printed after "...THE ".
const SECTION_NAMES: &[(&str, &str)] = &[
    ("ANCHORAGE", "PANC"),
    ("ANCHORAGE AK", "PANC"),
    ("KING SALMON", "PAKN"),
    ("KODIAK", "PADQ"),
    ("BETHEL", "PABE"),
    ("BETHEL AP", "PABE"),
    ("SAINT PAUL ISLAND", "PASN"),
    ("COLD BAY", "PACD"),
    ("HOUSTON INTERCONTINENTAL", "KIAH"),
    ("HOUSTON/HOBBY AIRPORT", "KHOU"),
];

const MONTHS: [&str; 12] = [
    "JANUARY",
    "FEBRUARY",
    "MARCH",
    "APRIL",
    "MAY",
    "JUNE",
    "JULY",
    "AUGUST",
    "SEPTEMBER",
    "OCTOBER",
    "NOVEMBER",
    "DECEMBER",
];

const WEEKDAYS: [&str; 7] = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"];

/// ICAO id for the 3-letter station part of an AWIPS id (CLINYC -> "NYC" -> "KNYC").
///
/// Shared by the CLI and DSM decoders so both name a station the same way: a small table
/// for the non-contiguous states and territories, else "K" + id. A 4-letter id is taken as
/// an ICAO id already (the encoder writes one for stations outside both rules).
pub fn station_from_cli_id(id3: &str) -> String {
    let id = id3.trim().to_ascii_uppercase();
    if let Some((_, icao)) = NON_K_IDS.iter().find(|(a, _)| *a == id) {
        return (*icao).to_string();
    }
    if id.len() == 4 {
        return id;
    }
    format!("K{id}")
}

/// Inverse of [`station_from_cli_id`]: the AWIPS station part to write for an ICAO id, so
/// an encoded product decodes back to the same station.
pub fn cli_id_from_station(station: &str) -> String {
    let st = station.trim().to_ascii_uppercase();
    if let Some((id, _)) = NON_K_IDS.iter().find(|(_, icao)| *icao == st) {
        return (*id).to_string();
    }
    if let Some(rest) = st.strip_prefix('K') {
        if rest.len() == 3 && station_from_cli_id(rest) == st {
            return rest.to_string();
        }
    }
    st
}

/// A WMO abbreviated heading line ("CDUS41 KOKX 030616 CCA"): day and time of issue (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WmoHeader {
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    /// BBB group CCx / COR.
    pub correction: bool,
}

/// Parses a WMO heading `TTAAii CCCC YYGGgg [BBB]`; `None` for any other line.
pub(crate) fn parse_wmo_header(line: &str) -> Option<WmoHeader> {
    let mut it = line.split_whitespace();
    let ttaaii = it.next()?.as_bytes();
    let cccc = it.next()?.as_bytes();
    let yygggg = it.next()?.as_bytes();
    let bbb = it.next();
    if it.next().is_some()
        || ttaaii.len() != 6
        || !ttaaii[..4].iter().all(u8::is_ascii_uppercase)
        || !ttaaii[4..].iter().all(u8::is_ascii_digit)
        || cccc.len() != 4
        || !cccc.iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        || yygggg.len() != 6
        || !yygggg.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    if let Some(b) = bbb {
        if b.len() != 3 || !b.bytes().all(|c| c.is_ascii_uppercase()) {
            return None;
        }
    }
    let two = |i: usize| u32::from(yygggg[i] - b'0') * 10 + u32::from(yygggg[i + 1] - b'0');
    let (day, hour, minute) = (two(0), two(2), two(4));
    if !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let correction = bbb.is_some_and(|b| b.starts_with("CC") || b == "COR");
    Some(WmoHeader { day, hour, minute, correction })
}

/// The day-of-month `day` at `hour:minute` nearest to `anchor` (previous, same or next
/// month): WMO headings and DSM dates carry no month or year.
pub(crate) fn nearest_day_time(day: u32, hour: u32, minute: u32, anchor: NaiveDateTime) -> Option<NaiveDateTime> {
    let months = anchor.year() * 12 + anchor.month0() as i32;
    (-1..=1)
        .filter_map(|d| {
            let m = months + d;
            NaiveDate::from_ymd_opt(m.div_euclid(12), m.rem_euclid(12) as u32 + 1, day)?.and_hms_opt(hour, minute, 0)
        })
        .min_by_key(|t| (*t - anchor).num_seconds().abs())
}

/// Trims whitespace and control bytes (SOH/ETX, NUL) around a line.
pub(crate) fn clean(line: &str) -> &str {
    line.trim_matches(|c: char| c.is_whitespace() || c.is_control())
}

/// The NOAAPort sequence number line ("795") that precedes a WMO heading.
pub(crate) fn is_sequence_line(t: &str) -> bool {
    (1..=5).contains(&t.len()) && t.bytes().all(|c| c.is_ascii_digit())
}

/// First `n` characters of a line for an error message (char-boundary safe), control
/// characters escaped so that a reason never echoes raw bytes.
pub(crate) fn excerpt(s: &str, n: usize) -> String {
    quote(clean(s), n).into_owned()
}

/// Month number from a full or abbreviated (3+ letters) English month name.
fn month_from_name(s: &str) -> Option<u32> {
    if s.len() < 3 {
        return None;
    }
    MONTHS.iter().position(|m| m.starts_with(s)).map(|i| i as u32 + 1)
}

/// Parses a 12-hour clock time "301"/"1201"/"0151"/"3:01" with "AM"/"PM".
fn parse_clock(t: &str, ampm: &str) -> Option<NaiveTime> {
    let (h, m) = match t.split_once(':') {
        Some((h, m)) => (h, m),
        None if (3..=4).contains(&t.len()) && t.is_ascii() => t.split_at(t.len() - 2),
        None => return None,
    };
    if h.is_empty() || h.len() > 2 || m.len() != 2 {
        return None;
    }
    let h: u32 = h.parse().ok()?;
    let m: u32 = m.parse().ok()?;
    if !(1..=12).contains(&h) || m > 59 {
        return None;
    }
    let h24 = match (ampm, h) {
        ("AM", 12) => 0,
        ("AM", h) => h,
        ("PM", 12) => 12,
        ("PM", h) => h + 12,
        _ => return None,
    };
    NaiveTime::from_hms_opt(h24, m, 0)
}

fn is_ampm(t: &str) -> bool {
    matches!(t.trim_end_matches('.'), "AM" | "PM")
}

/// UTC offset (minutes) of a zone abbreviation in an issue line, and whether it is a
/// daylight-saving zone. "AST" is left unknown: Atlantic (-4) in Puerto Rico, Alaska (-9)
/// in older Alaska products (CLIOME 2006).
fn zone_offset(z: &str) -> (Option<i32>, bool) {
    let h = match z {
        "UTC" | "GMT" | "Z" => 0,
        "EST" => -5,
        "EDT" => -4,
        "CST" => -6,
        "CDT" => -5,
        "MST" => -7,
        "MDT" => -6,
        "PST" => -8,
        "PDT" => -7,
        "AKST" => -9,
        "AKDT" => -8,
        "HST" => -10,
        "HDT" => -9,
        "SST" => -11,
        "CHST" => 10,
        "ADT" => -3,
        _ => return (None, z.len() >= 3 && z.ends_with("DT")),
    };
    (Some(h * 60), z.ends_with("DT"))
}

/// The local issue line ("116 AM EST THU JAN 3 2013", or "0616 UTC THU JAN 3 2013").
#[derive(Debug, Clone, Copy)]
struct IssueLine {
    local: NaiveDateTime,
    offset_min: Option<i32>,
    daylight: bool,
}

impl IssueLine {
    fn parse(line: &str) -> Option<Self> {
        let tok: Vec<&str> = line.split_whitespace().take(9).collect();
        let k = tok.iter().position(|t| WEEKDAYS.contains(t))?;
        let month = month_from_name(tok.get(k + 1)?)?;
        let day: u32 = tok.get(k + 2)?.parse().ok()?;
        let year: i32 = tok.get(k + 3)?.parse().ok()?;
        if !(1900..=2200).contains(&year) {
            return None;
        }
        let date = NaiveDate::from_ymd_opt(year, month, day)?;
        let (time, zone) = match k {
            3 => (parse_clock(tok[0], tok[1])?, tok[2]),
            2 if tok[0].len() == 4 => {
                let hm: u32 = tok[0].parse().ok()?;
                (NaiveTime::from_hms_opt(hm / 100, hm % 100, 0)?, tok[1])
            }
            _ => return None,
        };
        let (offset_min, daylight) = zone_offset(zone);
        Some(IssueLine { local: date.and_time(time), offset_min, daylight })
    }

    fn utc(&self) -> Option<NaiveDateTime> {
        self.offset_min.map(|o| self.local - Duration::minutes(i64::from(o)))
    }
}

/// What a product says before its first section.
#[derive(Debug, Default)]
struct ProductHeader {
    wmo: Option<WmoHeader>,
    awips: Option<String>,
    issue: Option<IssueLine>,
    correction: bool,
}

impl ProductHeader {
    fn parse(lines: &[&str]) -> Self {
        let mut h = ProductHeader::default();
        for line in lines {
            let t = clean(line);
            if h.wmo.is_none() {
                if let Some(w) = parse_wmo_header(t) {
                    h.correction |= w.correction;
                    h.wmo = Some(w);
                    continue;
                }
            }
            if h.awips.is_none() {
                if let Some(id) = awips_station(t) {
                    h.awips = Some(id.to_string());
                    continue;
                }
            }
            if h.issue.is_none() {
                if let Some(i) = IssueLine::parse(t) {
                    h.issue = Some(i);
                    continue;
                }
            }
            if t.contains("CORRECTION") || t.contains("CORRECTED") {
                h.correction = true;
            }
        }
        h
    }

    /// Issue time in UTC: the WMO heading's day/time in the month nearest the local issue
    /// line (or the report date). A heading more than two days away from the text (CLIPPG
    /// Dec 2020: heading day 22, text Dec 28) is not trusted; the local line is used instead.
    fn issued_at(&self, report_date: NaiveDate) -> Option<DateTime<Utc>> {
        let local_utc = self.issue.and_then(|i| i.utc());
        let anchor = local_utc
            .or(self.issue.map(|i| i.local))
            .unwrap_or_else(|| report_date.and_time(NaiveTime::MIN) + Duration::hours(24));
        if let Some(w) = self.wmo {
            if let Some(t) = nearest_day_time(w.day, w.hour, w.minute, anchor) {
                if (t - anchor).num_hours().abs() <= 48 {
                    return Some(t.and_utc());
                }
            }
        }
        local_utc.map(|t| t.and_utc())
    }
}

/// The station part of an AWIPS id line "CLINYC" (3 letters, or a 4-letter ICAO id).
fn awips_station(t: &str) -> Option<&str> {
    let id = t.strip_prefix("CLI")?;
    let ok = (id.len() == 3 || id.len() == 4)
        && id.bytes().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && t != "CLIMATE";
    ok.then_some(id)
}

/// Splits an input into products: a WMO heading starts one, and so does an AWIPS id line
/// when the current product already has an id or any text. Returns line index ranges.
fn split_products(lines: &[&str]) -> Vec<(usize, usize)> {
    let mut starts = vec![0usize];
    let (mut has_wmo, mut has_awips, mut has_text) = (false, false, false);
    for (i, line) in lines.iter().enumerate() {
        let t = clean(line);
        let wmo = parse_wmo_header(t).is_some();
        let awips = !wmo && awips_station(t).is_some();
        if (wmo && (has_wmo || has_awips || has_text)) || (awips && (has_awips || has_text)) {
            let prev_seq = i > 0 && is_sequence_line(clean(lines[i - 1]));
            let at = if wmo && prev_seq { i - 1 } else { i };
            if at > *starts.last().unwrap_or(&0) {
                starts.push(at);
            }
            (has_wmo, has_awips, has_text) = (false, false, false);
        }
        if wmo {
            has_wmo = true;
        } else if awips {
            has_awips = true;
        } else if !t.is_empty() && !is_sequence_line(t) {
            has_text = true;
        }
    }
    let mut out = Vec::with_capacity(starts.len());
    for (k, &s) in starts.iter().enumerate() {
        out.push((s, starts.get(k + 1).copied().unwrap_or(lines.len())));
    }
    out
}

/// A section start: "...THE <NAME> CLIMATE SUMMARY FOR|FROM <DATE>...".
fn is_summary_line(t: &str) -> bool {
    t.contains("CLIMATE SUMMARY FOR") || t.contains("CLIMATE SUMMARY FROM")
}

/// Parsed section headline.
struct Headline {
    name: String,
    date: NaiveDate,
    corrected: bool,
}

fn normalise_name(s: &str) -> String {
    let s = s.trim_matches(|c: char| c == '.' || c.is_whitespace());
    let s = s.strip_prefix("THE ").unwrap_or(s);
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads name and date from a headline; the date may be "MONTH D YYYY" or "D MONTH YYYY"
/// and may wrap onto the next line, the name onto the previous one.
fn parse_headline(lines: &[&str], s: usize) -> Result<Headline, String> {
    let line = clean(lines[s]);
    let Some(pos) = line.find("CLIMATE SUMMARY") else {
        return Err("expected 'CLIMATE SUMMARY FOR <date>'".into());
    };
    let mut name = normalise_name(&line[..pos]);
    if name.is_empty() && s > 0 {
        name = normalise_name(clean(lines[s - 1]));
    }
    let is_sep = |c: char| c.is_whitespace() || c == '.' || c == ',';
    let mut toks: Vec<&str> = line[pos + "CLIMATE SUMMARY".len()..].split(is_sep).filter(|t| !t.is_empty()).collect();
    if toks.len() < 4 {
        if let Some(next) = lines.get(s + 1) {
            toks.extend(clean(next).split(is_sep).filter(|t| !t.is_empty()));
        }
    }
    let corrected = toks.iter().any(|t| *t == "CORRECTION" || *t == "CORRECTED");
    let date = match toks.as_slice() {
        [_, a, b, y, ..] => {
            let (m, d) = match (month_from_name(a), month_from_name(b)) {
                (Some(m), None) => (Some(m), b.parse::<u32>().ok()),
                (None, Some(m)) => (Some(m), a.parse::<u32>().ok()),
                _ => (None, None),
            };
            match (m, d, y.parse::<i32>().ok()) {
                (Some(m), Some(d), Some(y)) if (1850..=2200).contains(&y) => NaiveDate::from_ymd_opt(y, m, d),
                _ => None,
            }
        }
        _ => None,
    };
    match date {
        Some(date) => Ok(Headline { name, date, corrected }),
        None => Err(format!("bad CLIMATE SUMMARY date in '{}'", excerpt(line, 80))),
    }
}

/// A precipitation amount as printed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Amount {
    Missing,
    Trace,
    Inches(f64),
}

impl Amount {
    fn value(self) -> Option<f64> {
        match self {
            Amount::Missing => None,
            Amount::Trace => Some(0.0),
            Amount::Inches(x) => Some(x),
        }
    }
}

/// Strips the flags a value may carry: "R" record, "E"/"(E)" estimated, "*" footnote.
fn strip_flags(tok: &str) -> &str {
    let t = tok.trim_end_matches('*');
    let t = t.strip_suffix("(E)").unwrap_or(t);
    t.trim_end_matches(['R', 'E'])
}

fn parse_temp_value(tok: &str) -> Result<Option<i32>, String> {
    if matches!(tok, "MM" | "M") {
        return Ok(None);
    }
    let t = strip_flags(tok);
    let digits = t.strip_prefix('-').unwrap_or(t);
    if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("bad temperature '{tok}'"));
    }
    match t.parse::<i32>() {
        Ok(v) if (-100..=150).contains(&v) => Ok(Some(v)),
        _ => Err(format!("implausible temperature '{tok}'")),
    }
}

fn parse_amount(tok: &str) -> Result<Amount, String> {
    match tok {
        "MM" | "M" => return Ok(Amount::Missing),
        "T" | "T*" | "TR" => return Ok(Amount::Trace),
        _ => {}
    }
    let t = strip_flags(tok);
    if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit() || c == b'.') {
        return Err(format!("bad precipitation '{tok}'"));
    }
    match t.parse::<f64>() {
        Ok(v) if v < 1000.0 => Ok(Amount::Inches(v)),
        _ => Err(format!("bad precipitation '{tok}'")),
    }
}

/// One MAXIMUM / MINIMUM row.
#[derive(Debug, Clone, Copy)]
struct TempRow {
    value: Option<i32>,
    time: Option<NaiveTime>,
}

/// Reads "MAXIMUM [TEMPERATURE] [(F)] <value>[R|(E)] [E] [<time> AM|PM] ...". The time is
/// taken only when an AM/PM token follows it: in layouts without a TIME column the next
/// number is the record value. A bad time is reported but keeps the value.
fn parse_temp_row(tok: &[&str]) -> Result<(TempRow, Option<String>), String> {
    let mut i = 1;
    while tok.get(i).is_some_and(|t| t.starts_with("TEMPERATURE") || *t == "(F)" || t.starts_with("...")) {
        i += 1;
    }
    let Some(v) = tok.get(i) else {
        return Err(format!("no value in {} row", tok.first().unwrap_or(&"")));
    };
    let value = parse_temp_value(v)?;
    i += 1;
    if tok.get(i).is_some_and(|t| matches!(*t, "E" | "(E)" | "R")) {
        i += 1;
    }
    let mut time_err = None;
    let time = match (tok.get(i), tok.get(i + 1)) {
        (Some(t), Some(ap)) if is_ampm(ap) => {
            let got = parse_clock(t, ap.trim_end_matches('.'));
            if got.is_none() {
                time_err = Some(format!("bad time '{t} {ap}'"));
            }
            got
        }
        _ => None,
    };
    Ok((TempRow { value, time }, time_err))
}

/// "VALID [TODAY] AS OF 0500 PM LOCAL TIME" -> 17:00 (local clock time).
fn parse_valid_as_of(t: &str) -> Option<Option<NaiveTime>> {
    if !t.contains("VALID") || !t.contains("AS OF") {
        return None;
    }
    let tok: Vec<&str> = t.split_whitespace().collect();
    let k = tok.windows(2).position(|w| w[0] == "AS" && w[1] == "OF")?;
    Some(match (tok.get(k + 2), tok.get(k + 3)) {
        (Some(a), Some(b)) => parse_clock(a, b.trim_end_matches('.')),
        _ => None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Block {
    Other,
    Temp,
    Precip,
}

/// Values read from one section's body.
#[derive(Debug, Default)]
struct Body {
    valid_line: bool,
    valid_as_of: Option<NaiveTime>,
    today: Option<bool>,
    max: Option<TempRow>,
    min: Option<TempRow>,
    precip: Option<Amount>,
    mtd: Option<Amount>,
}

fn first_token(t: &str) -> &str {
    t.split_whitespace().next().unwrap_or("")
}

/// Scans a section: the VALID line before the blocks, then the first TEMPERATURE and the
/// first PRECIPITATION block (later ones, e.g. the NORMALS table or a supplemental
/// "MAXIMUM TEMPERATURE... 59" block, are never read). A block ends at any line that is
/// not one of its rows.
fn scan_body(lines: &[&str], s: usize, e: usize, body: &mut Body, errors: &mut Vec<(usize, String)>) {
    let mut block = Block::Other;
    let (mut temp_seen, mut precip_seen) = (false, false);
    for (n, line) in lines.iter().enumerate().take(e).skip(s) {
        let t = clean(line);
        if t.is_empty() {
            continue;
        }
        let first = first_token(t);
        if !temp_seen && (first == "TEMPERATURE" || first.starts_with("TEMPERATURE(")) {
            (block, temp_seen) = (Block::Temp, true);
            continue;
        }
        if !precip_seen && (first == "PRECIPITATION" || first.starts_with("PRECIPITATION(")) {
            (block, precip_seen) = (Block::Precip, true);
            continue;
        }
        if !temp_seen && !precip_seen && !body.valid_line {
            if let Some(time) = parse_valid_as_of(t) {
                body.valid_line = true;
                body.valid_as_of = time;
                if time.is_none() {
                    errors.push((n + 1, format!("bad VALID AS OF time in '{}'", excerpt(t, 60))));
                }
                continue;
            }
        }
        let starts_numeric = t.starts_with(|c: char| c.is_ascii_digit() || c == '-');
        match block {
            Block::Other => {}
            Block::Temp => match first {
                "YESTERDAY" | "TODAY" => {
                    body.today.get_or_insert(first == "TODAY");
                }
                "MAXIMUM" | "MINIMUM" => {
                    let tok: Vec<&str> = t.split_whitespace().collect();
                    let slot = if first == "MAXIMUM" { &mut body.max } else { &mut body.min };
                    if slot.is_some() {
                        continue;
                    }
                    match parse_temp_row(&tok) {
                        Ok((row, time_err)) => {
                            *slot = Some(row);
                            if let Some(r) = time_err {
                                errors.push((n + 1, format!("{first}: {r}")));
                            }
                        }
                        Err(r) => errors.push((n + 1, format!("{first}: {r}"))),
                    }
                }
                "AVERAGE" => {}
                _ if starts_numeric => {}
                _ => block = Block::Other,
            },
            Block::Precip => {
                let tok: Vec<&str> = t.split_whitespace().collect();
                let (slot, value, label) = match tok.as_slice() {
                    ["YESTERDAY" | "TODAY", rest @ ..] => {
                        body.today.get_or_insert(first == "TODAY");
                        (&mut body.precip, rest.first(), first)
                    }
                    ["MONTH", "TO", "DATE", rest @ ..] => (&mut body.mtd, rest.first(), "MONTH TO DATE"),
                    ["SINCE", ..] | ["(INCHES)" | "(IN)"] => continue,
                    _ if starts_numeric => continue,
                    _ => {
                        block = Block::Other;
                        continue;
                    }
                };
                if slot.is_some() {
                    continue;
                }
                match value.map(|v| parse_amount(v)) {
                    Some(Ok(a)) => *slot = Some(a),
                    Some(Err(r)) => errors.push((n + 1, format!("PRECIPITATION {label}: {r}"))),
                    None => errors.push((n + 1, format!("PRECIPITATION {label}: no value"))),
                }
            }
        }
    }
}

/// Joins lines into product text, dropping blank lines at both ends.
fn join_lines<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for l in parts {
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out.trim_matches(|c: char| c == '\n' || c.is_whitespace()).to_string()
}

/// Decodes every CLI product and station section in `bytes`.
///
/// One record per "...CLIMATE SUMMARY FOR <date>..." section. Station: the section name
/// when it is a known multi-station name, else (single-section products) the AWIPS id.
/// `is_final` is false for preliminaries ("VALID [TODAY] AS OF", or values for TODAY).
/// The VALID time is local clock time (a 7:23 AM CDT issue says "VALID AS OF 0700 AM"),
/// so it is moved back one hour to LST when the issue line's zone is a daylight zone.
/// Values are kept as printed: a morning preliminary's MAXIMUM is the highest so far (CLIAUS
/// at 7 AM reports the overnight 81), which `is_final = false` tells consumers.
/// Row problems are per-line errors; the record keeps what could be read. A line longer
/// than [`CLI_LINE`] is rejected and left out (no CLI row is that long), a section longer
/// than [`CLI_PRODUCT`] rejected whole; input that is not UTF-8 text is refused whole.
pub fn decode_cli(bytes: &[u8]) -> Decoded<DailyReport> {
    let text = match input_text(bytes) {
        Ok(t) => t,
        Err(e) => return Decoded::refused(e.to_string()),
    };
    let mut out = Decoded::new();
    let lines: Vec<&str> = text
        .lines()
        .enumerate()
        .map(|(i, l)| match CLI_LINE.check(l.len()) {
            Ok(()) => l.trim_end_matches('\r'),
            Err(reason) => {
                out.reject(i + 1, reason);
                ""
            }
        })
        .collect();
    out.read = lines.len();
    for (start, end) in split_products(&lines) {
        decode_product(&lines, start, end, &mut out);
    }
    if out.records.is_empty() && out.errors.is_empty() {
        out.reject(1, "no CLI product: expected '...THE <STATION> CLIMATE SUMMARY FOR <DATE>...'");
    }
    out
}

fn decode_product(lines: &[&str], start: usize, end: usize, out: &mut Decoded<DailyReport>) {
    let sections: Vec<usize> = (start..end).filter(|&i| is_summary_line(clean(lines[i]))).collect();
    let Some(&first) = sections.first() else {
        let has_text = lines[start..end].iter().any(|l| !clean(l).is_empty());
        if has_text {
            out.reject(start + 1, "no '...CLIMATE SUMMARY FOR <DATE>...' line in CLI product");
        }
        return;
    };
    let header = ProductHeader::parse(&lines[start..first]);
    let multi = sections.len() > 1;
    for (k, &s) in sections.iter().enumerate() {
        let e = sections.get(k + 1).copied().unwrap_or(end);
        let raw = if multi {
            join_lines(lines[start..first].iter().chain(&lines[s..e]).copied())
        } else {
            join_lines(lines[start..end].iter().copied())
        };
        decode_section(lines, s, e, &header, multi, raw, out);
    }
}

fn resolve_station(name: &str, awips: Option<&str>, multi: bool) -> Option<String> {
    if let Some((_, icao)) = SECTION_NAMES.iter().find(|(n, _)| *n == name) {
        return Some((*icao).to_string());
    }
    match awips {
        Some(id) if !multi => Some(station_from_cli_id(id)),
        _ => None,
    }
}

fn decode_section(
    lines: &[&str],
    s: usize,
    e: usize,
    header: &ProductHeader,
    multi: bool,
    raw: String,
    out: &mut Decoded<DailyReport>,
) {
    if let Err(reason) = CLI_PRODUCT.check(raw.len()) {
        return out.reject(s + 1, reason);
    }
    let head = match parse_headline(lines, s) {
        Ok(h) => h,
        Err(r) => return out.reject(s + 1, r),
    };
    let Some(station) = resolve_station(&head.name, header.awips.as_deref(), multi) else {
        let why = if multi { "unknown station name in multi-station CLI" } else { "no AWIPS id (CLIxxx) line" };
        return out.reject(s + 1, format!("{why}: '{}'", excerpt(&head.name, 60)));
    };
    let mut body = Body::default();
    let mut errors = Vec::new();
    scan_body(lines, s + 1, e, &mut body, &mut errors);
    for (line, reason) in errors {
        out.reject(line, reason);
    }
    if body.max.is_none() && body.min.is_none() && body.precip.is_none() {
        return out
            .reject(s + 1, format!("no MAXIMUM, MINIMUM or PRECIPITATION row for '{}'", excerpt(&head.name, 60)));
    }
    let date = head.date;
    let daylight = header.issue.is_some_and(|i| i.daylight);
    let valid_as_of_lst = body.valid_as_of.map(|t| {
        let local = date.and_time(t);
        if daylight {
            local - Duration::hours(1)
        } else {
            local
        }
    });
    let precip = body.precip.unwrap_or(Amount::Missing);
    let mtd = body.mtd.unwrap_or(Amount::Missing);
    out.records.push(DailyReport {
        kind: DailyKind::Cli,
        station,
        date,
        max_f: body.max.and_then(|r| r.value),
        max_time_lst: body.max.and_then(|r| r.time).map(|t| date.and_time(t)),
        min_f: body.min.and_then(|r| r.value),
        min_time_lst: body.min.and_then(|r| r.time).map(|t| date.and_time(t)),
        precip_in: precip.value(),
        precip_trace: precip == Amount::Trace,
        precip_mtd_in: mtd.value(),
        precip_mtd_trace: mtd == Amount::Trace,
        is_final: !(body.valid_line || body.today == Some(true)),
        valid_as_of_lst,
        issued_at: header.issued_at(date),
        correction: header.correction || head.corrected,
        raw,
    });
}

/// "301 PM" for 15:01, the classic CLI time column.
fn clock12(t: NaiveTime) -> String {
    let h = t.hour() % 12;
    let h = if h == 0 { 12 } else { h };
    let ampm = if t.hour() < 12 { "AM" } else { "PM" };
    format!("{h}{:02} {ampm}", t.minute())
}

fn fmt_amount(v: Option<f64>, trace: bool) -> String {
    match (v, trace) {
        (_, true) => "T".to_string(),
        (Some(x), false) => format!("{x:.2}"),
        (None, false) => "MM".to_string(),
    }
}

fn temp_row(label: &str, v: Option<i32>, t: Option<NaiveDateTime>) -> String {
    let value = v.map_or_else(|| "MM".to_string(), |v| v.to_string());
    let time = match (v, t) {
        (Some(_), Some(t)) => clock12(t.time()),
        _ => String::new(),
    };
    format!("  {label:<14}{value:>4}  {time:>7}").trim_end().to_string()
}

/// Writes `r` as a CLI product in the classic layout (CLINYC's), which [`decode_cli`] reads
/// back to the same values. Used by the demo generator and round-trip tests.
///
/// The station's time zone is not known here, so the issue line is written in UTC
/// ("0616 UTC THU JAN 3 2013", the style of national-centre products) and preliminary
/// VALID times are written as LST. Without `issued_at` no WMO heading or issue line is
/// written. A final report is written as YESTERDAY, a preliminary one as TODAY.
pub fn encode_cli(r: &DailyReport, station_name: &str) -> String {
    let mut s = String::with_capacity(1600);
    let name = normalise_name(&station_name.to_ascii_uppercase());
    let name = if name.is_empty() { r.station.to_ascii_uppercase() } else { name };
    let id = cli_id_from_station(&r.station);
    if let Some(t) = r.issued_at {
        let bbb = if r.correction { " CCA" } else { "" };
        s.push_str(&format!("000\nCDUS41 KWBC {}{bbb}\n", t.format("%d%H%M")));
    }
    s.push_str(&format!("CLI{id}\n\nCLIMATE REPORT\nNATIONAL WEATHER SERVICE\n"));
    if let Some(t) = r.issued_at {
        let d = t.date_naive();
        let wd = WEEKDAYS[d.weekday().num_days_from_monday() as usize];
        let mon = &MONTHS[d.month0() as usize][..3];
        s.push_str(&format!("{} UTC {wd} {mon} {} {}\n", t.format("%H%M"), d.day(), d.year()));
    }
    let corr = if r.correction && r.issued_at.is_none() { " CORRECTION" } else { "" };
    let month = MONTHS[r.date.month0() as usize];
    s.push_str("\n...................................\n\n");
    s.push_str(&format!("...THE {name} CLIMATE SUMMARY FOR {month} {} {}{corr}...\n", r.date.day(), r.date.year()));
    let period = if r.is_final { "YESTERDAY" } else { "TODAY" };
    if let (false, Some(v)) = (r.is_final, r.valid_as_of_lst) {
        let hm = clock12(v.time());
        let hm = if hm.len() < 7 { format!("0{hm}") } else { hm };
        s.push_str(&format!("VALID {period} AS OF {hm} LOCAL TIME.\n"));
    }
    s.push_str("\nCLIMATE NORMAL PERIOD 1991 TO 2020\n\n");
    s.push_str("WEATHER ITEM   OBSERVED TIME\n                VALUE   (LST)\n");
    s.push_str(".................................\nTEMPERATURE (F)\n");
    s.push_str(&format!(" {period}\n"));
    s.push_str(&temp_row("MAXIMUM", r.max_f, r.max_time_lst));
    s.push('\n');
    s.push_str(&temp_row("MINIMUM", r.min_f, r.min_time_lst));
    s.push('\n');
    if let (Some(a), Some(b)) = (r.max_f, r.min_f) {
        let avg = (f64::from(a + b) / 2.0).round() as i32;
        s.push_str(&format!("  {:<14}{avg:>4}\n", "AVERAGE"));
    }
    s.push_str("\nPRECIPITATION (IN)\n");
    s.push_str(&format!("  {period:<14}{:>6}\n", fmt_amount(r.precip_in, r.precip_trace)));
    s.push_str(&format!("  {:<14}{:>6}\n", "MONTH TO DATE", fmt_amount(r.precip_mtd_in, r.precip_mtd_trace)));
    s.push_str("\n.................................\n\n");
    s.push_str("-  INDICATES NEGATIVE NUMBERS.\nR  INDICATES RECORD WAS SET OR TIED.\n");
    s.push_str("MM INDICATES DATA IS MISSING.\nT  INDICATES TRACE AMOUNT.\n\n$$\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::types::fixture;

    fn dt(y: i32, m: u32, d: u32, h: u32, mi: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, m, d).and_then(|x| x.and_hms_opt(h, mi, 0)).expect("valid test date")
    }

    fn utc(y: i32, m: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        dt(y, m, d, h, mi).and_utc()
    }

    fn ymd(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("valid test date")
    }

    /// Decodes a fixture that must give exactly one record and no errors.
    fn one(name: &str) -> DailyReport {
        let d = decode_cli(&fixture(&format!("cli/{name}")));
        assert!(d.errors.is_empty(), "{name}: {:?}", d.errors);
        assert_eq!(d.records.len(), 1, "{name}");
        d.records.into_iter().next().expect("one record")
    }

    #[test]
    fn every_fixture_decodes_without_errors() {
        let dir = format!("{}/data/real/cli", env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .expect("cli fixture dir")
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|n| n.ends_with(".txt"))
            .collect();
        names.sort();
        assert!(names.len() >= 50, "expected the ~50 CLI fixtures, found {}", names.len());
        for name in &names {
            let d = decode_cli(&fixture(&format!("cli/{name}")));
            // Every fixture carries readable values; none is expected to produce an error.
            assert!(d.errors.is_empty(), "{name}: {:?}", d.errors);
            let want = match name.as_str() {
                "CLIANC.txt" => 6, // six Alaska stations in one product
                "CLIHOU.txt" => 2, // Intercontinental and Hobby
                _ => 1,
            };
            assert_eq!(d.records.len(), want, "{name}");
            assert!(d.read > 20, "{name}");
            for r in &d.records {
                assert_eq!(r.kind, DailyKind::Cli);
                assert_eq!(r.station.len(), 4, "{name}: {}", r.station);
                assert!(r.max_f.is_some() || r.min_f.is_some(), "{name}");
                assert!(r.raw.contains("CLIMATE SUMMARY"), "{name}");
                let issued = r.issued_at.expect("every fixture has a resolvable issue time");
                // A CLI is issued on its climate day or within a few weeks after (CLIEWN is
                // a correction issued 20 days later).
                let lag = issued.date_naive() - r.date;
                assert!((0..=21).contains(&lag.num_days()), "{name}: lag {lag}");
            }
        }
    }

    #[test]
    fn clinyc_final() {
        // Lines 25-31: MAXIMUM 33 301 PM, MINIMUM 22 743 AM, YESTERDAY 0.00, MTD 0.00.
        let r = one("CLINYC.txt");
        assert_eq!(r.station, "KNYC");
        assert_eq!(r.date, ymd(2013, 1, 2));
        assert_eq!(r.max_f, Some(33));
        assert_eq!(r.max_time_lst, Some(dt(2013, 1, 2, 15, 1)));
        assert_eq!(r.min_f, Some(22));
        assert_eq!(r.min_time_lst, Some(dt(2013, 1, 2, 7, 43)));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.0), false));
        assert_eq!((r.precip_mtd_in, r.precip_mtd_trace), (Some(0.0), false));
        assert!(r.is_final);
        assert_eq!(r.valid_as_of_lst, None);
        // CDUS41 KOKX 030616 + "116 AM EST THU JAN 3 2013".
        assert_eq!(r.issued_at, Some(utc(2013, 1, 3, 6, 16)));
        assert!(!r.correction);
        assert!(r.raw.starts_with("795"));
        assert!(r.raw.ends_with("$$"));
    }

    #[test]
    fn cliaus_morning_preliminary() {
        // 7 AM preliminary: MAXIMUM 81 3:39 AM is the overnight value; MTD is T.
        let r = one("CLIAUS_202609041223_morning_prelim_for_2026-09-04.txt");
        assert_eq!(r.station, "KAUS");
        assert_eq!(r.date, ymd(2026, 9, 4));
        assert_eq!(r.max_f, Some(81));
        assert_eq!(r.max_time_lst, Some(dt(2026, 9, 4, 3, 39)));
        assert_eq!(r.min_f, Some(79));
        assert_eq!(r.min_time_lst, Some(dt(2026, 9, 4, 5, 33)));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.0), false));
        assert_eq!((r.precip_mtd_in, r.precip_mtd_trace), (Some(0.0), true));
        assert!(!r.is_final);
        // "VALID AS OF 0700 AM LOCAL TIME" issued 723 AM CDT: 07:00 CDT = 06:00 CST.
        assert_eq!(r.valid_as_of_lst, Some(dt(2026, 9, 4, 6, 0)));
        assert_eq!(r.issued_at, Some(utc(2026, 9, 4, 12, 23)));
    }

    #[test]
    fn cliatl_afternoon_preliminary() {
        // "VALID TODAY AS OF 0400 PM", MAXIMUM 94 3:05 PM, MINIMUM 75 6:37 AM.
        let r = one("CLIATL_202609042033_afternoon_prelim_for_2026-09-04.txt");
        assert_eq!(r.station, "KATL");
        assert_eq!(r.date, ymd(2026, 9, 4));
        assert_eq!((r.max_f, r.max_time_lst), (Some(94), Some(dt(2026, 9, 4, 15, 5))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(75), Some(dt(2026, 9, 4, 6, 37))));
        assert_eq!(r.precip_in, Some(0.0));
        assert_eq!(r.precip_mtd_in, Some(0.0));
        assert!(!r.is_final);
        assert_eq!(r.valid_as_of_lst, Some(dt(2026, 9, 4, 15, 0)));
        assert_eq!(r.issued_at, Some(utc(2026, 9, 4, 20, 33)));
    }

    #[test]
    fn clicvg_tab_variant_trace() {
        // MAXIMUM 81 202 PM, MINIMUM 57 523 AM, YESTERDAY T, MTD 2.74; a tab in SNOWFALL.
        let r = one("CLICVG_tab.txt");
        assert_eq!((r.station.as_str(), r.date), ("KCVG", ymd(2013, 5, 9)));
        assert_eq!((r.max_f, r.max_time_lst), (Some(81), Some(dt(2013, 5, 9, 14, 2))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(57), Some(dt(2013, 5, 9, 5, 23))));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.0), true));
        assert_eq!((r.precip_mtd_in, r.precip_mtd_trace), (Some(2.74), false));
        assert!(r.is_final);
        assert_eq!(r.issued_at, Some(utc(2013, 5, 10, 5, 41)));
    }

    #[test]
    fn clicvg_colon_times() {
        // MAXIMUM 39 11:29 PM, MINIMUM 22 12:43 AM, YESTERDAY 0.14, MTD 0.34.
        let r = one("CLICVG_colon.txt");
        assert_eq!((r.station.as_str(), r.date), ("KCVG", ymd(2021, 2, 4)));
        assert_eq!((r.max_f, r.max_time_lst), (Some(39), Some(dt(2021, 2, 4, 23, 29))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(22), Some(dt(2021, 2, 4, 0, 43))));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.14), false));
        assert_eq!(r.precip_mtd_in, Some(0.34));
        assert!(r.is_final);
        assert_eq!(r.issued_at, Some(utc(2021, 2, 5, 5, 34)));
    }

    #[test]
    fn clirdu_v2_correction_cca_and_separate_e_flag() {
        // CDUS42 KRAH 210922 CCA; "MAXIMUM 57 E 300 PM", "MINIMUM 31 E 651 AM", T, 0.64.
        let r = one("CLIRDU_v2.txt");
        assert_eq!((r.station.as_str(), r.date), ("KRDU", ymd(2021, 3, 20)));
        assert_eq!((r.max_f, r.max_time_lst), (Some(57), Some(dt(2021, 3, 20, 15, 0))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(31), Some(dt(2021, 3, 20, 6, 51))));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.0), true));
        assert_eq!(r.precip_mtd_in, Some(0.64));
        assert!(r.correction);
        assert!(r.is_final);
        // The supplemental "MAXIMUM TEMPERATURE... 59" block after && is not read.
        assert_eq!(r.issued_at, Some(utc(2021, 3, 21, 9, 22)));
    }

    #[test]
    fn clirdu_attached_e_flag() {
        // "MAXIMUM 57(E)  221 AM", "MINIMUM 37(E) 1100 PM".
        let r = one("CLIRDU.txt");
        assert_eq!((r.max_f, r.max_time_lst), (Some(57), Some(dt(2021, 3, 19, 2, 21))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(37), Some(dt(2021, 3, 19, 23, 0))));
        assert!(!r.correction);
    }

    #[test]
    fn cliewn_text_correction_and_footnote() {
        // "CLIMATE REPORT (CORRECTION)", headline "... SEPTEMBER 28 2014 CORRECTION...",
        // issued Oct 18; YESTERDAY "0.00*" (footnote: false tip removed).
        let r = one("CLIEWN.txt");
        assert_eq!((r.station.as_str(), r.date), ("KEWN", ymd(2014, 9, 28)));
        assert_eq!((r.max_f, r.max_time_lst), (Some(83), Some(dt(2014, 9, 28, 14, 13))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(62), Some(dt(2014, 9, 28, 6, 17))));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.0), false));
        assert_eq!(r.precip_mtd_in, Some(7.56));
        assert!(r.correction);
        assert_eq!(r.issued_at, Some(utc(2014, 10, 18, 13, 30)));
    }

    #[test]
    fn clisew_missing_times_and_cliaby_missing_precip() {
        // CLISEW: "MAXIMUM 44 MM", "MINIMUM 34 MM" (time column MM).
        let r = one("CLISEW.txt");
        assert_eq!((r.max_f, r.max_time_lst), (Some(44), None));
        assert_eq!((r.min_f, r.min_time_lst), (Some(34), None));
        assert_eq!((r.precip_in, r.precip_mtd_in), (Some(0.0), Some(5.38)));
        // CLIABY: "YESTERDAY MM" and no MONTH TO DATE row.
        let r = one("CLIABY.txt");
        assert_eq!((r.station.as_str(), r.date), ("KABY", ymd(2014, 9, 29)));
        assert_eq!((r.max_f, r.max_time_lst), (Some(79), Some(dt(2014, 9, 29, 16, 18))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(72), Some(dt(2014, 9, 29, 10, 41))));
        assert_eq!((r.precip_in, r.precip_trace), (None, false));
        assert_eq!(r.precip_mtd_in, None);
    }

    #[test]
    fn clialo_record_flag_negative() {
        // "MINIMUM -21R 355 AM", "VALID TODAY AS OF 0500 PM" issued 527 PM CST (no shift).
        let r = one("CLIALO.txt");
        assert_eq!((r.station.as_str(), r.date), ("KALO", ymd(2014, 1, 3)));
        assert_eq!((r.min_f, r.min_time_lst), (Some(-21), Some(dt(2014, 1, 3, 3, 55))));
        assert_eq!((r.max_f, r.max_time_lst), (Some(19), Some(dt(2014, 1, 3, 16, 56))));
        assert_eq!(r.precip_mtd_in, Some(0.07));
        assert!(!r.is_final);
        assert_eq!(r.valid_as_of_lst, Some(dt(2014, 1, 3, 17, 0)));
    }

    #[test]
    fn cliclimsos_minimum_only_preliminaries() {
        // CLIFMY 7 AM: only "MINIMUM 63 454 AM", TODAY 0.00, MTD 0.05, EST (no shift).
        let r = one("CLIFMY.txt");
        assert_eq!((r.max_f, r.max_time_lst), (None, None));
        assert_eq!((r.min_f, r.min_time_lst), (Some(63), Some(dt(2014, 12, 29, 4, 54))));
        assert_eq!((r.precip_in, r.precip_mtd_in), (Some(0.0), Some(0.05)));
        assert!(!r.is_final);
        assert_eq!(r.valid_as_of_lst, Some(dt(2014, 12, 29, 7, 0)));
        // CLIBNA 9 AM CDT: no TIME column, "MAXIMUM 47", "MINIMUM 34".
        let r = one("CLIBNA.txt");
        assert_eq!((r.max_f, r.max_time_lst, r.min_f), (Some(47), None, Some(34)));
        assert_eq!(r.valid_as_of_lst, Some(dt(2015, 10, 19, 8, 0)));
        assert_eq!(r.precip_mtd_in, Some(1.52));
    }

    #[test]
    fn clieka_no_time_column() {
        // "MAXIMUM 55 63 1937": 63 is the record, not a time.
        let r = one("CLIEKA.txt");
        assert_eq!((r.max_f, r.max_time_lst), (Some(55), None));
        assert_eq!((r.min_f, r.min_time_lst), (Some(42), None));
        assert_eq!((r.precip_in, r.precip_mtd_in), (Some(0.01), Some(9.65)));
    }

    #[test]
    fn clianc_multi_station_product() {
        let d = decode_cli(&fixture("cli/CLIANC.txt"));
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let st: Vec<&str> = d.records.iter().map(|r| r.station.as_str()).collect();
        assert_eq!(st, ["PANC", "PAKN", "PADQ", "PABE", "PASN", "PACD"]);
        for r in &d.records {
            assert_eq!(r.date, ymd(2017, 3, 14));
            assert_eq!(r.issued_at, Some(utc(2017, 3, 15, 12, 35)));
            // Each record's raw is header + its own section and decodes on its own.
            let again = decode_cli(r.raw.as_bytes());
            assert_eq!(again.records.len(), 1);
            assert_eq!(again.records[0].station, r.station);
            assert_eq!(again.records[0].max_f, r.max_f);
        }
        // Anchorage: MAXIMUM 23 330 PM, MINIMUM 12 1159 PM (line 24-26).
        let a = &d.records[0];
        assert_eq!((a.max_f, a.max_time_lst), (Some(23), Some(dt(2017, 3, 14, 15, 30))));
        assert_eq!((a.min_f, a.min_time_lst), (Some(12), Some(dt(2017, 3, 14, 23, 59))));
        // King Salmon: MAXIMUM 22 357 PM, MINIMUM 9 1159 PM.
        let k = &d.records[1];
        assert_eq!((k.max_f, k.max_time_lst), (Some(22), Some(dt(2017, 3, 14, 15, 57))));
        assert_eq!(k.min_f, Some(9));
    }

    #[test]
    fn clihou_two_airports() {
        let d = decode_cli(&fixture("cli/CLIHOU.txt"));
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let (iah, hou) = (&d.records[0], &d.records[1]);
        // Intercontinental: MAXIMUM 80 233 PM, MINIMUM 61 1158 PM, MTD 3.40.
        assert_eq!(iah.station, "KIAH");
        assert_eq!((iah.max_f, iah.max_time_lst), (Some(80), Some(dt(2014, 11, 30, 14, 33))));
        assert_eq!((iah.min_f, iah.min_time_lst), (Some(61), Some(dt(2014, 11, 30, 23, 58))));
        assert_eq!(iah.precip_mtd_in, Some(3.40));
        // Hobby: MAXIMUM 79 200 PM, MINIMUM 62 730 AM, MTD 4.44.
        assert_eq!(hou.station, "KHOU");
        assert_eq!((hou.max_f, hou.max_time_lst), (Some(79), Some(dt(2014, 11, 30, 14, 0))));
        assert_eq!((hou.min_f, hou.min_time_lst), (Some(62), Some(dt(2014, 11, 30, 7, 30))));
        assert_eq!(hou.precip_mtd_in, Some(4.44));
        assert!(!hou.raw.contains("INTERCONTINENTAL CLIMATE SUMMARY"));
    }

    #[test]
    fn clippg_condensed_today_and_bad_heading_day() {
        // No blank lines, "TEMPERATURE(F)", TODAY at 5 PM SST -> preliminary.
        let r = one("CLIPPG.txt");
        assert_eq!((r.station.as_str(), r.date), ("NSTU", ymd(2020, 12, 28)));
        assert_eq!((r.max_f, r.max_time_lst), (Some(89), Some(dt(2020, 12, 28, 13, 50))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(77), Some(dt(2020, 12, 28, 5, 50))));
        assert_eq!((r.precip_in, r.precip_mtd_in), (Some(0.0), Some(14.55)));
        assert!(!r.is_final);
        // Heading says day 22, text Dec 28 500 PM SST (UTC-11): the text wins.
        assert_eq!(r.issued_at, Some(utc(2020, 12, 29, 4, 0)));
        // CLIPPG4: "SUMMARY FROM MARCH 30 2023", YESTERDAY -> final.
        let r = one("CLIPPG4.txt");
        assert_eq!(r.date, ymd(2023, 3, 30));
        assert_eq!((r.max_f, r.max_time_lst), (Some(86), Some(dt(2023, 3, 30, 11, 50))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(77), Some(dt(2023, 3, 30, 6, 50))));
        assert!(r.is_final);
    }

    #[test]
    fn clione_2006_abbreviated_month() {
        // "FOR NOV 8 2006", MAXIMUM 29 0432 PM, MINIMUM 19 0420 AM, YESTERDAY T, MTD 0.09.
        let r = one("CLIOME_2.txt");
        assert_eq!((r.station.as_str(), r.date), ("PAOM", ymd(2006, 11, 8)));
        assert_eq!((r.max_f, r.max_time_lst), (Some(29), Some(dt(2006, 11, 8, 16, 32))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(19), Some(dt(2006, 11, 8, 4, 20))));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.0), true));
        assert_eq!(r.precip_mtd_in, Some(0.09));
        assert_eq!(r.issued_at, Some(utc(2006, 11, 9, 9, 51)));
        // The 2007 layout (indented WEATHER ITEM header).
        let r = one("CLICVG_2007.txt");
        assert_eq!(r.date, ymd(2007, 6, 30));
        assert_eq!((r.max_f, r.max_time_lst), (Some(82), Some(dt(2007, 6, 30, 16, 3))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(67), Some(dt(2007, 6, 30, 7, 27))));
        assert_eq!(r.precip_mtd_in, Some(1.74));
    }

    #[test]
    fn station_ids() {
        assert_eq!(station_from_cli_id("NYC"), "KNYC");
        assert_eq!(station_from_cli_id("ANN"), "PANT");
        assert_eq!(station_from_cli_id("PPG"), "NSTU");
        assert_eq!(station_from_cli_id("EGLL"), "EGLL");
        for st in ["KNYC", "PANC", "NSTU", "PHNL", "EGLL", "KANC"] {
            assert_eq!(station_from_cli_id(&cli_id_from_station(st)), st);
        }
    }

    #[test]
    fn garbage_truncated_and_binary_input() {
        for input in [
            &b""[..],
            b"\x00\x01\xff\xfe garbage \x00\n\x80\x81",
            b"CLIMATE SUMMARY FOR",
            b"...THE X CLIMATE SUMMARY FOR FOOBAR 99 2013...\nTEMPERATURE (F)\n MAXIMUM 33",
            b"CDUS41 KOKX 030616\nCLINYC\n...THE CENTRAL PARK NY CLIMATE SUMMARY FOR JANUARY 2 2013...\nTEMPERATURE (F)\n  MAXIMUM  3\xff3  301 PM\n",
        ] {
            let d = decode_cli(input);
            assert!(d.records.is_empty(), "{input:?}");
            assert!(!d.errors.is_empty(), "{input:?}");
        }
        // Truncated in the middle of the product: the rows present are kept.
        let full = fixture("cli/CLINYC.txt");
        let text = String::from_utf8_lossy(&full);
        let cut = text.find("  MINIMUM").expect("row");
        let d = decode_cli(text[..cut + 20].as_bytes());
        assert_eq!(d.records.len(), 1);
        assert_eq!(d.records[0].max_f, Some(33));
        assert_eq!(d.records[0].precip_in, None);
        // Every prefix of a real product decodes without panicking.
        for n in (0..full.len()).step_by(7) {
            let _ = decode_cli(&full[..n]);
        }
    }

    /// An implausibly long line is rejected with its length and left out, the product
    /// still decodes; a product far longer than any CLI is rejected whole; UTF-16 input
    /// is named.
    #[test]
    fn over_long_lines_products_and_utf16() {
        let text = String::from_utf8(fixture("cli/CLINYC.txt")).unwrap();
        let at = text.find("  MINIMUM").unwrap();
        let long = format!("{}{}\n{}", &text[..at], "X".repeat(3000), &text[at..]);
        let line = long[..at].lines().count() + 1;
        let d = decode_cli(long.as_bytes());
        assert_eq!(d.records.len(), 1);
        assert_eq!(d.records[0].min_f, Some(22));
        assert!(!d.records[0].raw.contains("XXX"));
        assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
        assert_eq!(
            (d.errors[0].line, d.errors[0].reason.as_str()),
            (line, "CLI line of 3000 bytes is longer than the 1024-byte limit")
        );
        let padded = format!("{}{}{}", &text[..at], format!("{}\n", "X".repeat(1000)).repeat(70), &text[at..]);
        let d = decode_cli(padded.as_bytes());
        assert!(d.records.is_empty());
        assert!(d.errors.iter().any(|e| e.reason.starts_with("CLI product of ")), "{:?}", d.errors);
        let utf16: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        let d = decode_cli(&utf16);
        assert_eq!((d.records.len(), d.errors.len()), (0, 1));
        assert!(d.errors[0].reason.starts_with("input is UTF-16BE text"), "{:?}", d.errors);
    }

    #[test]
    fn bad_rows_are_line_errors() {
        let text = "CLIXYZ\n...THE X CLIMATE SUMMARY FOR JANUARY 2 2013...\nTEMPERATURE (F)\n YESTERDAY\n  MAXIMUM  9X9  301 PM\n  MINIMUM  22  1399 PM\nPRECIPITATION (IN)\n  YESTERDAY  0.0.1\n";
        let d = decode_cli(text.as_bytes());
        assert_eq!(d.records.len(), 1);
        let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [5, 6, 8], "{:?}", d.errors);
        assert!(d.errors[0].reason.contains("9X9"));
        assert!(d.errors[1].reason.contains("1399 PM"));
        let r = &d.records[0];
        assert_eq!((r.station.as_str(), r.max_f, r.min_f, r.min_time_lst), ("KXYZ", None, Some(22), None));
    }

    #[test]
    fn layout_variants_day_first_date_wrapped_headline_long_labels() {
        // Hand-written variants the brief names but no fixture shows: "2 JANUARY 2013",
        // a headline wrapped after FOR, "MAXIMUM TEMPERATURE (F)" rows, a 24-hour-style
        // "UTC" issue line, "VALID TODAY AS OF" with a colon time.
        let text = "CDUS41 KOKX 022130\nCLINYC\nCLIMATE REPORT\n0530 UTC WED JAN 2 2013\n\
            ...THE CENTRAL PARK NY CLIMATE SUMMARY FOR\n2 JANUARY 2013...\n\
            VALID TODAY AS OF 4:00 PM LOCAL TIME.\nTEMPERATURE (F)\n TODAY\n\
            MAXIMUM TEMPERATURE (F)  33R  1201 AM\nMINIMUM TEMPERATURE (F)  -2  12:00 PM\n\
            PRECIPITATION (IN)\n TODAY  MM\n MONTH TO DATE 12.05\n";
        let d = decode_cli(text.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let r = &d.records[0];
        assert_eq!((r.station.as_str(), r.date), ("KNYC", ymd(2013, 1, 2)));
        assert_eq!((r.max_f, r.max_time_lst), (Some(33), Some(dt(2013, 1, 2, 0, 1))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(-2), Some(dt(2013, 1, 2, 12, 0))));
        assert_eq!((r.precip_in, r.precip_mtd_in), (None, Some(12.05)));
        assert!(!r.is_final);
        assert_eq!(r.valid_as_of_lst, Some(dt(2013, 1, 2, 16, 0)));
        // The heading's 21:30 on day 2 is nearer the issue line than 05:30 is: kept.
        assert_eq!(r.issued_at, Some(utc(2013, 1, 2, 21, 30)));
    }

    #[test]
    fn crlf_and_noaaport_line_endings() {
        let plain = decode_cli(&fixture("cli/CLINYC.txt"));
        let text = String::from_utf8_lossy(&fixture("cli/CLINYC.txt")).replace('\n', "\r\r\n");
        let text = format!("\x01{text}\x03");
        let d = decode_cli(text.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let (a, b) = (&plain.records[0], &d.records[0]);
        assert_eq!((a.max_f, a.max_time_lst, a.min_f, a.issued_at), (b.max_f, b.max_time_lst, b.min_f, b.issued_at));
        assert!(!b.raw.contains('\r'));
    }

    #[test]
    fn two_products_in_one_input() {
        let mut both = fixture("cli/CLINYC.txt");
        both.extend_from_slice(b"\n");
        both.extend(fixture("cli/CLIDCA.txt"));
        let d = decode_cli(&both);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let st: Vec<&str> = d.records.iter().map(|r| r.station.as_str()).collect();
        assert_eq!(st, ["KNYC", "KDCA"]);
        assert!(!d.records[0].raw.contains("CLIDCA"));
    }

    fn sample(is_final: bool) -> DailyReport {
        DailyReport {
            kind: DailyKind::Cli,
            station: "KNYC".into(),
            date: ymd(2013, 1, 2),
            max_f: Some(33),
            max_time_lst: Some(dt(2013, 1, 2, 15, 1)),
            min_f: Some(-4),
            min_time_lst: Some(dt(2013, 1, 2, 0, 43)),
            precip_in: Some(1.27),
            precip_trace: false,
            precip_mtd_in: Some(0.0),
            precip_mtd_trace: true,
            is_final,
            valid_as_of_lst: (!is_final).then(|| dt(2013, 1, 2, 16, 0)),
            issued_at: Some(utc(2013, 1, 3, 6, 16)),
            correction: !is_final,
            raw: String::new(),
        }
    }

    #[test]
    fn encode_round_trip() {
        for mut r in [sample(true), sample(false)] {
            let text = encode_cli(&r, "Central Park NY");
            let d = decode_cli(text.as_bytes());
            assert!(d.errors.is_empty(), "{:?}\n{text}", d.errors);
            assert_eq!(d.records.len(), 1, "{text}");
            r.raw = text.trim().to_string();
            assert_eq!(d.records[0], r, "{text}");
        }
        // Missing values, no issue time, a non-K station.
        let mut r = sample(true);
        (r.station, r.max_f, r.max_time_lst, r.precip_in, r.precip_mtd_in) = ("PANT".into(), None, None, None, None);
        (r.precip_mtd_trace, r.issued_at, r.min_time_lst) = (false, None, None);
        let text = encode_cli(&r, "Annette");
        let d = decode_cli(text.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert!(text.contains("CLIANN"));
        r.raw = text.trim().to_string();
        assert_eq!(d.records[0], r, "{text}");
    }
}
