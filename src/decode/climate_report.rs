//! NWS Daily Climate Report (the CLI product): decoder and encoder. The module is named for
//! the report, since `cli` in this crate means the command line (`src/cli/`).
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
    day_times(day, hour, minute, anchor, -1..=1).min_by_key(|t| (*t - anchor).num_seconds().abs())
}

/// The day-of-month `day` at `hour:minute` in each month `months` away from `anchor`'s
/// (a month without that day is skipped).
pub(crate) fn day_times(
    day: u32,
    hour: u32,
    minute: u32,
    anchor: NaiveDateTime,
    months: std::ops::RangeInclusive<i32>,
) -> impl Iterator<Item = NaiveDateTime> {
    let base = anchor.year() * 12 + anchor.month0() as i32;
    months.filter_map(move |d| {
        let m = base + d;
        NaiveDate::from_ymd_opt(m.div_euclid(12), m.rem_euclid(12) as u32 + 1, day)?.and_hms_opt(hour, minute, 0)
    })
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
        return Err(format!("bad temperature '{}'", excerpt(tok, 12)));
    }
    match t.parse::<i32>() {
        Ok(v) if (-100..=150).contains(&v) => Ok(Some(v)),
        _ => Err(format!("implausible temperature '{}'", excerpt(tok, 12))),
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
        return Err(format!("bad precipitation '{}'", excerpt(tok, 12)));
    }
    match t.parse::<f64>() {
        Ok(v) if v < 1000.0 => Ok(Amount::Inches(v)),
        _ => Err(format!("bad precipitation '{}'", excerpt(tok, 12))),
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
                time_err = Some(format!("bad time '{}'", excerpt(&format!("{t} {ap}"), 16)));
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
mod tests;
