//! ASOS Daily Summary Message (DSM): decoder and encoder.
//!
//! A DSM is the station's own machine summary of the Local Standard Time day, sent after
//! midnight LST (and, with an HHMM valid time, as intermediate messages during the day).
//! It arrives long before the CLI and is what live daily-high logic confirms against, but
//! the official value is the CLI's, so every DSM record is `is_final = false`.
//!
//! Format (NWS ASOS DSM, as parsed by AWIPS `DailySummaryMessageParser`), one message per
//! station, wrapped at '/' and ended by '=':
//!
//! ```text
//! KHKS DS [COR] [HHMM] DD/MM TTThhmm/ TTThhmm// TTT/ TTT//PPPPhhmm/RRRR/R1/.../R24/...=
//!          |     |      |     max+time  min+time  day max/night min, min SLP, precip
//!          |     |      day/MONTH (no year)
//!          |     intermediate message valid time (LST)
//!          correction
//! ```
//!
//! Temperatures are whole °F; times are LST HHMM; precipitation is in hundredths of an
//! inch, "T" a trace; "M", "N" and "-" mark missing values.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};

use super::climate_report::{
    clean, day_times, excerpt, is_sequence_line, nearest_day_time, parse_wmo_header, station_from_cli_id,
};
use crate::decode::limits::{DSM_LINE, DSM_MESSAGE};
use crate::decode::text::input_text;
use crate::decode::types::{DailyKind, DailyReport, Decoded};

/// Decodes DSM messages received now: see [`decode_dsm_received`].
pub fn decode_dsm(bytes: &[u8]) -> Decoded<DailyReport> {
    decode_dsm_received(bytes, Utc::now())
}

/// Decodes DSM messages known only to have been received by `received` (a file ingested
/// without `--month`): a DSM reports a day that has begun, so each DD/MM (and a WMO
/// heading's day) takes the latest date not after `received` plus one day (local dates
/// run ahead of UTC). Nearest-date rounding would put a message over six months old into
/// the next year; this keeps the year of any message up to a year old.
pub fn decode_dsm_received(bytes: &[u8], received: DateTime<Utc>) -> Decoded<DailyReport> {
    decode(bytes, Dating::NotAfter(received.naive_utc() + chrono::Duration::days(1)))
}

/// Decodes DSM messages; `reference` fixes the year the DD/MM dates (and a WMO heading's
/// day) belong to: the WMO heading resolves to the day nearest `reference`, and each DSM
/// date to the date nearest that heading (or nearest `reference` without one).
///
/// Each message is one record; a malformed one is a [`crate::decode::types::LineError`]
/// at its first line, and the rest of the input is still read. Lines and messages longer
/// than [`DSM_LINE`] / [`DSM_MESSAGE`] are rejected; input that is not UTF-8 text is
/// refused as a whole.
/// `valid_as_of_lst` is the HHMM of an intermediate message (`KIPT DS 1700 06/06 ...`) and
/// `None` for the full-day message; `precip_mtd_in` is always `None` (a DSM has no month total).
pub fn decode_dsm_with_year(bytes: &[u8], reference: DateTime<Utc>) -> Decoded<DailyReport> {
    decode(bytes, Dating::Nearest(reference.naive_utc()))
}

/// How a DD/MM (or a heading's DD) without year or month gets them.
#[derive(Debug, Clone, Copy)]
enum Dating {
    /// The date nearest this time (a month the caller knows: previous, same or next year).
    Nearest(NaiveDateTime),
    /// The latest date not after this time.
    NotAfter(NaiveDateTime),
}

impl Dating {
    fn date(self, day: u32, month: u32) -> Option<NaiveDate> {
        match self {
            Dating::Nearest(anchor) => resolve_date(day, month, anchor),
            Dating::NotAfter(limit) => (-1..=0)
                .filter_map(|d| NaiveDate::from_ymd_opt(limit.year() + d, month, day))
                .filter(|x| *x <= limit.date())
                .max(),
        }
    }

    /// A heading's DDHHMM as a time.
    fn day_time(self, day: u32, hour: u32, minute: u32) -> Option<NaiveDateTime> {
        match self {
            Dating::Nearest(anchor) => nearest_day_time(day, hour, minute, anchor),
            Dating::NotAfter(limit) => day_times(day, hour, minute, limit, -2..=0).filter(|t| *t <= limit).max(),
        }
    }
}

fn decode(bytes: &[u8], dating: Dating) -> Decoded<DailyReport> {
    let text = match input_text(bytes) {
        Ok(t) => t,
        Err(e) => return Decoded::refused(e.to_string()),
    };
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut out = Decoded::new();
    out.read = lines.len();
    let mut issued: Option<NaiveDateTime> = None;
    // The heading's DDHHMM, re-dated against each message's own date below: the reference
    // only fixes the year, and a message months older than it must not borrow its month.
    let mut heading: Option<(u32, u32, u32)> = None;
    let mut i = 0;
    while i < lines.len() {
        if let Err(reason) = DSM_LINE.check(lines[i].len()) {
            out.reject(i + 1, reason);
            i += 1;
            continue;
        }
        let t = clean(lines[i]);
        if t.is_empty() || is_sequence_line(t) || matches!(t, "NNNN" | "$$" | "&&") || is_awips_line(t) {
            i += 1;
            continue;
        }
        if let Some(h) = parse_wmo_header(t) {
            issued = dating.day_time(h.day, h.hour, h.minute);
            heading = Some((h.day, h.hour, h.minute));
            i += 1;
            continue;
        }
        match message_kind(t) {
            Some(kind) => {
                let (next, body, raw) = collect_message(&lines, i);
                if let Err(reason) = DSM_MESSAGE.check(raw.len()) {
                    out.reject(i + 1, reason);
                } else if kind == "DS" {
                    // Around a known month, the date nearest the heading's time. A message
                    // only known to be received by a time is dated by that alone: a
                    // heading's day gives no year, nor even a month then.
                    let dating = match (dating, issued) {
                        (Dating::Nearest(_), Some(t)) => Dating::Nearest(t),
                        _ => dating,
                    };
                    match parse_message(&body, dating) {
                        Ok(mut r) => {
                            let own_day = r.date.and_hms_opt(12, 0, 0).unwrap_or_default();
                            r.issued_at = heading
                                .and_then(|(d, h, m)| nearest_day_time(d, h, m, own_day))
                                .or(issued)
                                .map(|t| t.and_utc());
                            r.raw = raw;
                            out.records.push(r);
                        }
                        Err(reason) => out.reject(i + 1, reason),
                    }
                }
                // "MS" (monthly summary) messages are skipped: not a daily value.
                i = next;
            }
            None => {
                out.reject(i + 1, format!("expected '<STATION> DS DD/MM ...', found '{}'", excerpt(t, 40)));
                i += 1;
            }
        }
    }
    if out.records.is_empty() && out.errors.is_empty() {
        out.reject(1, "no DSM message found: expected '<STATION> DS DD/MM ...'");
    }
    out
}

/// An AWIPS id line of a collective ("DSMZME"): one short alphanumeric token.
fn is_awips_line(t: &str) -> bool {
    (4..=6).contains(&t.len())
        && t.bytes().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && t.starts_with("DSM")
}

/// "DS" / "MS" when the line starts a message ("KHKS DS ...").
fn message_kind(t: &str) -> Option<&'static str> {
    let mut it = t.split_whitespace();
    let stn = it.next()?;
    let kind = it.next()?;
    let stn_ok = (3..=4).contains(&stn.len())
        && stn.starts_with(|c: char| c.is_ascii_uppercase())
        && stn.bytes().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    match (stn_ok, kind) {
        (true, "DS") => Some("DS"),
        (true, "MS") => Some("MS"),
        _ => None,
    }
}

/// Gathers a message from line `i` to its '=' (or to the next message / heading / blank
/// line / end of input when the '=' is missing). Continuation lines are joined without a
/// separator because messages wrap after a '/'. Returns the next line index, the joined
/// body (without '=') and the raw text.
fn collect_message(lines: &[&str], i: usize) -> (usize, String, String) {
    let mut body = String::new();
    let mut raw = String::new();
    let mut j = i;
    while j < lines.len() {
        let t = clean(lines[j]);
        if j > i && (t.is_empty() || message_kind(t).is_some() || parse_wmo_header(t).is_some()) {
            break;
        }
        if !raw.is_empty() {
            raw.push('\n');
        }
        if let Some(eq) = t.find('=') {
            body.push_str(&t[..eq]);
            raw.push_str(&t[..=eq]);
            return (j + 1, body, raw);
        }
        body.push_str(t);
        raw.push_str(t);
        j += 1;
    }
    (j, body, raw)
}

/// Splits the first whitespace-delimited token off `s`.
fn split_token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(k) => (&s[..k], &s[k..]),
        None => (s, ""),
    }
}

/// Hour and minute of an HHMM group (hour 24 only as 2400).
type Hhmm = (u32, u32);

fn parse_hhmm(s: &str) -> Option<Hhmm> {
    if s.len() != 4 || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let v: u32 = s.parse().ok()?;
    let (h, m) = (v / 100, v % 100);
    ((h < 24 && m < 60) || v == 2400).then_some((h, m))
}

/// HHMM on `date` (LST); 2400 is the end of the day.
fn at(date: NaiveDate, (h, m): Hhmm) -> Option<NaiveDateTime> {
    if h == 24 {
        return date.succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0));
    }
    date.and_hms_opt(h, m, 0)
}

fn is_missing(s: &str) -> bool {
    s.is_empty() || s.bytes().all(|c| matches!(c, b'M' | b'N' | b'-'))
}

/// A temperature + time group "661152", "-051152" (°F, LST HHMM); a bare "66" (no time) is
/// accepted too. The last four digits are the time.
fn parse_temp_group(s: &str, what: &str) -> Result<(Option<i32>, Option<Hhmm>), String> {
    if is_missing(s) {
        return Ok((None, None));
    }
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let bad = || format!("bad {what} group '{}'", excerpt(s, 12));
    if !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let (temp, time) = match digits.len() {
        1..=3 => (digits, None),
        5..=7 => {
            let (t, hm) = digits.split_at(digits.len() - 4);
            (t, Some(parse_hhmm(hm).ok_or_else(bad)?))
        }
        _ => return Err(bad()),
    };
    let v: i32 = temp.parse().map_err(|_| bad())?;
    let v = if neg { -v } else { v };
    if !(-100..=150).contains(&v) {
        return Err(format!("implausible {what} '{}'", excerpt(s, 12)));
    }
    Ok((Some(v), time))
}

/// Daily precipitation "45" (hundredths), "T", or missing.
fn parse_precip(s: &str) -> Result<(Option<f64>, bool), String> {
    match s {
        "T" => Ok((Some(0.0), true)),
        _ if is_missing(s) => Ok((None, false)),
        _ if s.len() <= 4 && s.bytes().all(|c| c.is_ascii_digit()) => {
            let v: u32 = s.parse().map_err(|_| format!("bad precipitation '{}'", excerpt(s, 12)))?;
            Ok((Some(f64::from(v) / 100.0), false))
        }
        _ => Err(format!("bad precipitation '{}'", excerpt(s, 12))),
    }
}

/// The DD/MM date nearest `anchor` (previous, same or next year).
fn resolve_date(day: u32, month: u32, anchor: NaiveDateTime) -> Option<NaiveDate> {
    let a = anchor.date();
    (-1..=1).filter_map(|d| NaiveDate::from_ymd_opt(a.year() + d, month, day)).min_by_key(|x| (*x - a).num_days().abs())
}

/// Parses one joined message (without '=') into a record (issued_at/raw set by caller).
fn parse_message(body: &str, dating: Dating) -> Result<DailyReport, String> {
    let (stn, rest) = split_token(body);
    let (ds, mut rest) = split_token(rest);
    if ds != "DS" {
        return Err(format!("expected 'DS' after station, found '{}'", excerpt(ds, 12)));
    }
    let station = if stn.len() == 3 { station_from_cli_id(stn) } else { stn.to_string() };
    let mut correction = false;
    let mut valid = None;
    loop {
        let (tok, after) = split_token(rest);
        if tok == "COR" && !correction && valid.is_none() {
            correction = true;
        } else if let (None, Some(hm)) = (valid, parse_hhmm(tok)) {
            valid = Some(hm);
        } else {
            break;
        }
        rest = after;
    }
    let rest = rest.trim_start();
    let date_tok = rest.get(..5).unwrap_or(rest);
    let db = date_tok.as_bytes();
    let date_ok = db.len() == 5 && db[2] == b'/' && db.iter().enumerate().all(|(k, c)| k == 2 || c.is_ascii_digit());
    if !date_ok {
        return Err(format!("expected DD/MM date, found '{}'", excerpt(date_tok, 12)));
    }
    let (day, month) = (
        u32::from(db[0] - b'0') * 10 + u32::from(db[1] - b'0'),
        u32::from(db[3] - b'0') * 10 + u32::from(db[4] - b'0'),
    );
    let date = dating.date(day, month).ok_or_else(|| format!("bad DD/MM date '{}'", excerpt(date_tok, 12)))?;
    let mut groups = rest[5..].split('/').map(str::trim);
    let max = groups.next().unwrap_or("");
    let Some(min) = groups.next() else {
        return Err(format!("truncated DSM: no minimum temperature group after '{}'", excerpt(max, 12)));
    };
    let (max_f, max_t) = parse_temp_group(max, "maximum temperature")?;
    let (min_f, min_t) = parse_temp_group(min, "minimum temperature")?;
    // groups: "" (the '//'), day max, night min, "" ('//'), min SLP + time, precipitation.
    let rest_groups: Vec<&str> = groups.by_ref().take(6).collect();
    for k in [0, 3] {
        if let Some(g) = rest_groups.get(k).filter(|g| !g.is_empty()) {
            return Err(format!("expected '//' before '{}'", excerpt(g, 12)));
        }
    }
    let (precip_in, precip_trace) = match rest_groups.get(5) {
        Some(p) => parse_precip(p)?,
        None => (None, false),
    };
    let max_time_lst = max_t.and_then(|hm| at(date, hm));
    let min_time_lst = min_t.and_then(|hm| at(date, hm));
    Ok(DailyReport {
        kind: DailyKind::Dsm,
        station,
        date,
        max_f,
        max_time_lst,
        min_f,
        min_time_lst,
        precip_in,
        precip_trace,
        precip_mtd_in: None,
        precip_mtd_trace: false,
        is_final: false,
        valid_as_of_lst: valid.and_then(|hm| at(date, hm)),
        issued_at: None,
        correction,
        raw: String::new(),
    })
}

/// "TT" or "-TT", two digits at least as ASOS writes them.
fn fmt_temp(v: i32) -> String {
    if v < 0 {
        format!("-{:02}", -v)
    } else {
        format!("{v:02}")
    }
}

/// HHMM of a time on `date` (the next day's 00:00 is written 2400).
fn fmt_hhmm(t: NaiveDateTime, date: NaiveDate) -> String {
    if t.date() > date && t.time() == NaiveTime::MIN {
        return "2400".to_string();
    }
    format!("{:02}{:02}", t.hour(), t.minute())
}

fn temp_group(v: Option<i32>, t: Option<NaiveDateTime>, date: NaiveDate) -> String {
    match (v, t) {
        (Some(v), Some(t)) => format!("{}{}", fmt_temp(v), fmt_hhmm(t, date)),
        (Some(v), None) => fmt_temp(v),
        (None, _) => "M".to_string(),
    }
}

/// Writes `r` as one DSM message in the real layout (wrapped after '/' at 69 columns,
/// ended by '='), which [`decode_dsm_with_year`] reads back. Fields a [`DailyReport`] does
/// not hold (sea-level pressure, hourly precipitation, wind) are written missing ("M");
/// a `valid_as_of_lst` makes it an intermediate message ("KNYC DS 1700 02/01 ...").
pub fn encode_dsm(r: &DailyReport) -> String {
    let mut s = format!("{} DS ", r.station);
    if r.correction {
        s.push_str("COR ");
    }
    if let Some(v) = r.valid_as_of_lst {
        s.push_str(&format!("{} ", fmt_hhmm(v, r.date)));
    }
    s.push_str(&format!("{:02}/{:02} ", r.date.day(), r.date.month()));
    s.push_str(&format!("{}/ ", temp_group(r.max_f, r.max_time_lst, r.date)));
    s.push_str(&format!("{}// ", temp_group(r.min_f, r.min_time_lst, r.date)));
    let t = |v: Option<i32>| v.map_or_else(|| "M".to_string(), fmt_temp);
    s.push_str(&format!("{}/ {}//M/", t(r.max_f), t(r.min_f)));
    let precip = match (r.precip_in, r.precip_trace) {
        (_, true) => "T".to_string(),
        (Some(x), false) => format!("{:02}", (x * 100.0).round() as i64),
        (None, false) => "M".to_string(),
    };
    s.push_str(&precip);
    s.push('/');
    s.push_str(&"M/".repeat(24));
    s.push_str("M/M/M=");
    wrap(&s, 69)
}

/// Wraps after '/' so no line exceeds `width` (the DSM's own line breaking).
fn wrap(s: &str, width: usize) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut line_len = 0;
    for piece in s.split_inclusive('/') {
        let mut piece = piece;
        if line_len > 0 && line_len + piece.len() > width {
            out.push('\n');
            line_len = 0;
            piece = piece.trim_start();
        }
        out.push_str(piece);
        line_len += piece.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::types::fixture;

    fn dt(y: i32, m: u32, d: u32, h: u32, mi: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, m, d).and_then(|x| x.and_hms_opt(h, mi, 0)).expect("valid test date")
    }

    /// The collective was sent 2015-11-27 06:16Z (pyIEM files it under 2015-11-26).
    fn reference() -> DateTime<Utc> {
        dt(2015, 11, 28, 0, 0).and_utc()
    }

    #[test]
    fn real_collective_all_23_stations() {
        let d = decode_dsm_with_year(&fixture("dsm/DSM.txt"), reference());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let stations: Vec<&str> = d.records.iter().map(|r| r.station.as_str()).collect();
        assert_eq!(
            stations,
            [
                "KHKS", "KFSM", "KFYV", "KCKV", "KMEM", "KJBR", "KJAN", "KBWG", "KLIT", "KHSV", "KRUE", "KHKA", "KPBF",
                "KAWM", "KMKL", "KTVR", "KHOT", "KMEI", "KGLH", "KGWO", "KBPK", "KDCU", "KLLQ"
            ]
        );
        assert_eq!(d.read, 72);
        for r in &d.records {
            assert_eq!(r.kind, DailyKind::Dsm);
            assert_eq!(r.date, NaiveDate::from_ymd_opt(2015, 11, 26).expect("date"));
            assert_eq!(r.issued_at, Some(dt(2015, 11, 27, 6, 16).and_utc()));
            assert!(!r.is_final);
            assert!(!r.correction);
            assert!(r.max_f.is_some() && r.min_f.is_some() && r.max_time_lst.is_some());
            assert!(r.raw.starts_with(&r.station) && r.raw.ends_with('='));
            assert_eq!(r.valid_as_of_lst, None);
        }
    }

    #[test]
    fn real_collective_hand_checked() {
        let d = decode_dsm_with_year(&fixture("dsm/DSM.txt"), reference());
        let get = |s: &str| d.records.iter().find(|r| r.station == s).expect("station");
        // Line 3: "KHKS DS 26/11 661152/ 470316// 66/ 46//0021509/45/..."
        let r = get("KHKS");
        assert_eq!((r.max_f, r.max_time_lst), (Some(66), Some(dt(2015, 11, 26, 11, 52))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(47), Some(dt(2015, 11, 26, 3, 16))));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.45), false));
        // Line 6: "KFSM DS 26/11 591546/ 462359// 59/ 46//9920531/T/..."
        let r = get("KFSM");
        assert_eq!((r.max_f, r.max_time_lst), (Some(59), Some(dt(2015, 11, 26, 15, 46))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(46), Some(dt(2015, 11, 26, 23, 59))));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.0), true));
        // Line 60: "KGWO DS 26/11 632307/ 450236// 63/ 43//0021549/61/..."
        let r = get("KGWO");
        assert_eq!((r.max_f, r.max_time_lst), (Some(63), Some(dt(2015, 11, 26, 23, 7))));
        assert_eq!((r.min_f, r.min_time_lst), (Some(45), Some(dt(2015, 11, 26, 2, 36))));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.61), false));
    }

    /// A collective received now dates each message by itself: the latest DD/MM not after
    /// tomorrow, so a day 11 months old keeps its year (nearest-date rounding put it into
    /// next year; a one-year demo lake had its DSMs dated up to 2027-05-29), whatever the
    /// heading's day says.
    #[test]
    fn a_received_message_is_never_dated_in_the_future() {
        let msg = b"CDUS27 KZME 020516\nKNYC DS 01/12 451200/ 371431// 45/ 37//M/00/=\n\
                    KNYC DS 25/11 501200/ 401431// 50/ 40//M/00/=\nKNYC DS 27/11 521200/ 421431// 52/ 42//M/00/=";
        let d = decode_dsm_received(msg, dt(2026, 11, 26, 19, 0).and_utc());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let dates: Vec<NaiveDate> = d.records.iter().map(|r| r.date).collect();
        let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("date");
        // 1 Dec: last year's; 25 Nov: yesterday; 27 Nov: tomorrow (a local date ahead of UTC).
        assert_eq!(dates, [day(2025, 12, 1), day(2026, 11, 25), day(2026, 11, 27)]);
        // Each issued time is the heading's DDHHMM nearest the message's own day.
        assert_eq!(d.records[0].issued_at, Some(dt(2025, 12, 2, 5, 16).and_utc()));
        // Across New Year: 31/12 received on 10 January is the old year's.
        let d = decode_dsm_received(b"KNYC DS 31/12 451200/ 371431// 45/ 37//M/00/", dt(2027, 1, 10, 0, 0).and_utc());
        assert_eq!(d.records[0].date, day(2026, 12, 31));
        // With a month given (`--month`, the feeds' archives), the nearest date as before.
        let d =
            decode_dsm_with_year(b"KNYC DS 30/11 451200/ 371431// 45/ 37//M/00/", dt(2026, 11, 15, 12, 0).and_utc());
        assert_eq!(d.records[0].date, day(2026, 11, 30));
    }

    #[test]
    fn year_resolution_across_new_year() {
        // A 31/12 message read on Jan 1 belongs to the previous year; no WMO heading.
        let msg = b"KNYC DS 31/12 451200/ 371431// 45/ 37//M/00/";
        let d = decode_dsm_with_year(msg, dt(2016, 1, 1, 6, 0).and_utc());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records[0].date, NaiveDate::from_ymd_opt(2015, 12, 31).expect("date"));
        assert_eq!(d.records[0].issued_at, None);
        assert_eq!(d.records[0].precip_in, Some(0.0));
    }

    #[test]
    fn intermediate_and_correction() {
        // AWIPS example: "KIPT DS 1700 06/06 761655/ 530514// 76/ 53//9840011/00/..."
        let msg = b"KIPT DS 1700 06/06 761655/ 530514// 76/ 53//9840011/00/00/\n00/-/-/29141041/ 30180953=\nKSGJ DS COR 30/08 M/ -051704//M/ 76//M/T/";
        let d = decode_dsm_with_year(msg, dt(2017, 6, 7, 0, 0).and_utc());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let r = &d.records[0];
        assert_eq!(r.valid_as_of_lst, Some(dt(2017, 6, 6, 17, 0)));
        assert_eq!((r.max_f, r.min_f, r.precip_in), (Some(76), Some(53), Some(0.0)));
        let r = &d.records[1];
        assert!(r.correction);
        assert_eq!((r.max_f, r.max_time_lst), (None, None));
        assert_eq!((r.min_f, r.min_time_lst), (Some(-5), Some(dt(2017, 8, 30, 17, 4))));
        assert_eq!((r.precip_in, r.precip_trace), (Some(0.0), true));
    }

    #[test]
    fn malformed_messages_are_line_errors() {
        let input = b"CDUS27 KZME 270616\nKAAA DS 26/11 66115/ 470316//=\nKBBB DS 2X/11 661152/ 470316//=\nKCCC DS 26/11 661152/ 470316/ 66/=\nKDDD DS 26/11 661152/ 470316// 66/ 46//M/4X/=\nKEEE DS 26/11 661152=\nKFFF DS 26/11 661152/ 470316// 66/ 46//M/12/=\n\x00\xff garbage line\n";
        let d = decode_dsm_with_year(input, reference());
        let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 3, 4, 5, 6, 8], "{:?}", d.errors);
        assert!(d.errors[0].reason.contains("66115"), "{:?}", d.errors[0]);
        assert!(d.errors[1].reason.contains("DD/MM"), "{:?}", d.errors[1]);
        assert!(d.errors[3].reason.contains("4X"), "{:?}", d.errors[3]);
        assert_eq!(d.records.len(), 1);
        assert_eq!((d.records[0].station.as_str(), d.records[0].precip_in), ("KFFF", Some(0.12)));
    }

    #[test]
    fn garbage_and_truncation_never_panic() {
        for input in [
            &b""[..],
            b"\x00\x00\x00",
            b"\xff\xfe\xfd\n\x80",
            b"KHKS DS",
            b"KHKS DS 26/1",
            b"KHKS DS 99/99 661152/ 470316//",
        ] {
            let d = decode_dsm_with_year(input, reference());
            assert!(d.records.is_empty(), "{input:?}");
            assert!(!d.errors.is_empty(), "{input:?}");
        }
        let full = fixture("dsm/DSM.txt");
        for n in 0..full.len().min(400) {
            let _ = decode_dsm_with_year(&full[..n], reference());
        }
        let _ = decode_dsm(&full);
    }

    /// UTF-16 and binary input is refused up front, naming what it is (it used to fail
    /// line by line, quoting raw bytes); junk lines in a text input are quoted with their
    /// control characters escaped.
    #[test]
    fn non_text_input_is_named_and_junk_is_escaped() {
        let text = String::from_utf8(fixture("dsm/DSM.txt")).unwrap();
        let utf16: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let d = decode_dsm_with_year(&utf16, reference());
        assert_eq!((d.records.len(), d.errors.len()), (0, 1), "{:?}", d.errors);
        assert!(d.errors[0].reason.starts_with("input is UTF-16LE text (every other byte is NUL)"), "{:?}", d.errors);
        let binary = crate::decode::testrand::bytes(0x9E37_79B9_7F4A_7C15, 4096);
        let d = decode_dsm_with_year(&binary, reference());
        assert_eq!(d.errors.len(), 1);
        assert!(d.errors[0].reason.starts_with("input is binary, not text"), "{:?}", d.errors);
        let junk = format!("{text}KXX\u{1b}[2J\u{7} DS 26/11 junk\n");
        let d = decode_dsm_with_year(junk.as_bytes(), reference());
        assert_eq!(d.records.len(), 23);
        assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
        assert!(d.errors[0].reason.contains("KXX\\u{1b}[2J\\u{7} DS"), "{:?}", d.errors);
        assert!(!d.errors[0].reason.chars().any(char::is_control), "{:?}", d.errors);
    }

    /// A line or message longer than any DSM is rejected with its length; the messages
    /// around it still decode.
    #[test]
    fn over_long_lines_and_messages_are_rejected() {
        let text = String::from_utf8(fixture("dsm/DSM.txt")).unwrap();
        let long_line = format!("KXXX DS 26/11 {}=\n{text}", "9".repeat(5000));
        let d = decode_dsm_with_year(long_line.as_bytes(), reference());
        assert_eq!(d.records.len(), 23);
        assert_eq!(d.errors.len(), 1);
        assert_eq!(
            (d.errors[0].line, d.errors[0].reason.as_str()),
            (1, "DSM line of 5015 bytes is longer than the 1024-byte limit")
        );
        // Lines of plausible length that never reach a '=' make one implausible message.
        let wrapped = format!("KXXX DS 26/11 661152/\n{}{text}", "470316//\n".repeat(200));
        let d = decode_dsm_with_year(wrapped.as_bytes(), reference());
        assert_eq!(d.records.len(), 23);
        assert_eq!(d.errors.len(), 1);
        assert_eq!(d.errors[0].line, 1);
        assert!(d.errors[0].reason.starts_with("DSM message of "), "{:?}", d.errors);
    }

    #[test]
    fn encode_round_trip() {
        let date = NaiveDate::from_ymd_opt(2026, 2, 1).expect("date");
        let base = DailyReport {
            kind: DailyKind::Dsm,
            station: "KNYC".into(),
            date,
            max_f: Some(45),
            max_time_lst: Some(dt(2026, 2, 1, 12, 0)),
            min_f: Some(-7),
            min_time_lst: Some(dt(2026, 2, 1, 14, 31)),
            precip_in: Some(1.23),
            precip_trace: false,
            precip_mtd_in: None,
            precip_mtd_trace: false,
            is_final: false,
            valid_as_of_lst: None,
            issued_at: None,
            correction: false,
            raw: String::new(),
        };
        let mut variants = vec![base.clone()];
        let mut v = base.clone();
        (v.valid_as_of_lst, v.correction, v.precip_in, v.precip_trace) =
            (Some(dt(2026, 2, 1, 17, 0)), true, Some(0.0), true);
        variants.push(v);
        let mut v = base;
        (v.max_f, v.max_time_lst, v.min_time_lst, v.precip_in) = (None, None, Some(dt(2026, 2, 2, 0, 0)), None);
        variants.push(v);
        for mut r in variants {
            let text = encode_dsm(&r);
            assert!(text.lines().all(|l| l.len() <= 69), "{text}");
            let d = decode_dsm_with_year(text.as_bytes(), dt(2026, 2, 3, 0, 0).and_utc());
            assert!(d.errors.is_empty(), "{:?}\n{text}", d.errors);
            r.raw = text.clone();
            assert_eq!(d.records, [r], "{text}");
        }
    }
}
