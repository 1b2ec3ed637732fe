//! METAR / SPECI / HF-METAR report parser.
//!
//! One report text in, one [`Metar`] out. Only a missing or invalid station id or time group
//! (or a NIL report) rejects a report: every other malformed group is skipped, because real
//! reports carry plenty of groups nobody needs (weather, clouds, RVR, free-text remarks) and a
//! single odd group must not lose the temperature of an otherwise good observation.
//!
//! The parser walks the whitespace-separated tokens once, without regexes and without
//! per-token allocations: the only allocations are the station id and the normalised text.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc};

use crate::decode::types::{Metar, ReportKind};
use crate::units::{inhg_to_hpa, round_half_away, Probable};

/// A report time further than this from the reference is rejected: the DDHHMMZ group only
/// names the day of the month, so beyond this the month it belongs to is a guess.
const MAX_TIME_DISTANCE_DAYS: i64 = 25;

/// Metres in one statute mile.
const METRES_PER_SM: f64 = 1609.344;

/// Knots per metre/second and per km/h, for MPS and KMH wind groups.
const KT_PER_MPS: f64 = 1.943_844_5;
const KT_PER_KMH: f64 = 1.0 / 1.852;

/// Where a token sits in the report: body groups, a trend forecast (TEMPO/BECMG, ignored,
/// since its groups describe the future, not the observation) or the remarks after RMK.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Body,
    Trend,
    Remarks,
}

/// Parses one METAR/SPECI/HF-METAR report.
///
/// `reference` is when the report was received or filed (or any time up to ~20 days after
/// or ~1 day before the observation): the DDHHMMZ group carries only day/hour/minute, and
/// the month and year are those that put the observation closest to `reference`, time after
/// the reference counting 20-fold (see `resolve_day`); more than 25 days away is an error. `kind` comes from the
/// `METAR`/`SPECI` keyword or IEM's `MADISHF` marker and is `None` when the text names
/// neither, so the caller can fill it from its container.
pub fn parse_metar(text: &str, reference: DateTime<Utc>) -> Result<Metar, String> {
    let raw = normalise(text);
    let mut m = Metar::default();
    parse_tokens(&raw, reference, &mut m)?;
    m.raw = raw;
    Ok(m)
}

/// True for an ICAO-style station id: 4 characters, uppercase letter first, then uppercase
/// letters or digits (KCVG, WSSS, K1V4). Used to tell the station from keywords and junk.
pub fn is_station_id(tok: &str) -> bool {
    let b = tok.as_bytes();
    b.len() == 4 && b[0].is_ascii_uppercase() && b[1..].iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// Probable integer-°F range of the report's temperature: exact when the T-group carries
/// real tenths (ASOS measures whole °F), else the range a whole-°C reading allows. HF-METAR's
/// whole-degree T-group falls back to the body value (or the T-group rounded, if the body has
/// none). `None` when the report has no temperature at all.
pub fn temperature_fields(m: &Metar) -> Option<Probable> {
    if m.has_tenths() {
        return m.tgroup_temp_c.map(Probable::from_tenths);
    }
    m.temp_whole_c.or_else(|| m.tgroup_temp_c.map(|t| round_half_away(t) as i32)).map(Probable::from_whole_c)
}

/// What a report says, without how a source wrapped it: its normalised text from the
/// station id on. Sources disagree on the wrapper (AWC and IEM send `KNYC 270751Z ...`, WMO
/// collectives and NOAA LCD `METAR KNYC 270751Z ...=`) and on where a correction's `COR`
/// stands (`METAR COR KNYC 270751Z ...` in WMO form, `KNYC 270751Z COR ...` in US form), so
/// a leading `COR` is moved after the time group. The observations' natural key hashes
/// this, so one report is one row whichever source brought it; a correction keeps its
/// `COR` and stays a report of its own.
pub fn report_body(raw: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let clean = !raw.ends_with(['=', ' ']) && !raw.starts_with(' ') && !raw.contains("  ");
    let text: Cow<'_, str> =
        if clean && !raw.contains(['\t', '\n', '\r']) { Cow::Borrowed(raw) } else { Cow::Owned(normalise(raw)) };
    let mut rest = text.as_ref();
    let mut cor = false;
    loop {
        let (tok, tail) = rest.split_once(' ').unwrap_or((rest, ""));
        match tok {
            "METAR" | "SPECI" => rest = tail,
            "COR" => {
                cor = true;
                rest = tail;
            }
            _ => break,
        }
    }
    let mut parts = rest.splitn(3, ' ');
    let (station, time, tail) = (parts.next().unwrap_or(""), parts.next(), parts.next());
    let moved = match (cor, time) {
        (true, Some(time)) if tail.is_none_or(|t| t != "COR" && !t.starts_with("COR ")) => Some(match tail {
            Some(tail) => format!("{station} {time} COR {tail}"),
            None => format!("{station} {time} COR"),
        }),
        _ => None,
    };
    let skipped = text.len() - rest.len();
    match (moved, text) {
        (Some(m), _) => Cow::Owned(m),
        (None, Cow::Borrowed(t)) => Cow::Borrowed(&t[skipped..]),
        (None, Cow::Owned(t)) => Cow::Owned(t[skipped..].to_string()),
    }
}

/// Folds all whitespace runs to single spaces and drops the trailing `=` terminator, so the
/// stored text is the same whether a report came from a collective or a single-line feed.
fn normalise(text: &str) -> String {
    let trimmed = text.trim_end_matches(|c: char| c.is_whitespace() || c == '=');
    let mut raw = String::with_capacity(trimmed.len());
    for tok in trimmed.split_ascii_whitespace() {
        if !raw.is_empty() {
            raw.push(' ');
        }
        raw.push_str(tok);
    }
    raw
}

/// Short quote of a token for an error reason: junk tokens can be long or binary, so
/// control characters are escaped and the quote is cut at 24 characters.
fn show(tok: &str) -> String {
    const MAX: usize = 24;
    let mut s: String = tok.chars().take(MAX).flat_map(char::escape_debug).collect();
    if tok.chars().nth(MAX).is_some() {
        s.push('…');
    }
    s
}

/// The token walk: keywords, station, time, then body / trend / remark groups.
fn parse_tokens(raw: &str, reference: DateTime<Utc>, m: &mut Metar) -> Result<(), String> {
    if raw.is_empty() {
        return Err("empty report".to_string());
    }
    let mut toks = raw.split(' ').peekable();
    let (mut speci, mut metar) = (false, false);
    let station = loop {
        match toks.next() {
            Some("METAR") => metar = true,
            Some("SPECI") => speci = true,
            Some("COR") => m.cor = true,
            Some(tok) if is_station_id(tok) => break tok,
            Some(tok) => return Err(format!("expected station id, found '{}'", show(tok))),
            None => return Err("missing station id".to_string()),
        }
    };
    let time_tok = toks.next().ok_or_else(|| format!("missing time group after station {station}"))?;
    m.time = parse_time(time_tok, reference)?;

    let mut hf = false;
    let mut temp_seen = false;
    let mut section = Section::Body;
    while let Some(tok) = toks.next() {
        match tok {
            "RMK" => section = Section::Remarks,
            "MADISHF" => hf = true,
            _ => match section {
                Section::Body => {
                    if let Some(next) = body_group(m, tok, &mut toks, &mut temp_seen)? {
                        section = next;
                    }
                }
                Section::Trend => {}
                Section::Remarks => remark_group(m, tok),
            },
        }
    }

    m.station = station.to_string();
    m.kind = if speci {
        Some(ReportKind::Speci)
    } else if hf {
        Some(ReportKind::HfMetar)
    } else if metar {
        Some(ReportKind::Metar)
    } else {
        None
    };
    m.tgroup_is_whole = hf && m.tgroup_temp_c.is_some();
    Ok(())
}

/// Decodes `DDHHMMZ` (the `Z` may be missing) and places it in the month that fits
/// `reference` best.
fn parse_time(tok: &str, reference: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let b = tok.as_bytes();
    let digits = match b {
        [d @ .., b'Z'] if d.len() == 6 => d,
        d if d.len() == 6 => d,
        _ => return Err(format!("bad time group '{}'", show(tok))),
    };
    let bad = || format!("bad time group '{}'", show(tok));
    let day = num(&digits[0..2]).ok_or_else(bad)?;
    let hour = num(&digits[2..4]).ok_or_else(bad)?;
    let minute = num(&digits[4..6]).ok_or_else(bad)?;
    if !(1..=31).contains(&day) || hour > 24 || minute > 59 || (hour == 24 && minute > 0) {
        return Err(bad());
    }
    resolve_day(day, hour * 60 + minute, reference).ok_or_else(|| {
        format!(
            "time group '{}' is not within {MAX_TIME_DISTANCE_DAYS} days of {}",
            show(tok),
            reference.format("%Y-%m-%d %H:%MZ")
        )
    })
}

/// The datetime with day-of-month `day` and `minutes` after midnight that fits `reference`
/// best, looking in the reference month and its neighbours (day 31 skips 30-day months;
/// 2400Z is midnight of the next day). Reports are filed after they are observed, so a
/// report is expected up to ~20 days before the reference but at most ~1 day after it:
/// among the candidates within 25 days, time after the reference counts 20 times as much
/// as time before it.
fn resolve_day(day: u32, minutes: u32, reference: DateTime<Utc>) -> Option<DateTime<Utc>> {
    const FUTURE_WEIGHT: i64 = 20;
    let r = reference.naive_utc();
    let mut best: Option<(i64, NaiveDateTime)> = None;
    for offset in -1..=1 {
        let (y, mo) = shift_month(r.year(), r.month(), offset);
        let Some(date) = NaiveDate::from_ymd_opt(y, mo, day) else {
            continue;
        };
        let t = date.and_time(NaiveTime::MIN) + Duration::minutes(i64::from(minutes));
        let ahead = (t - r).num_seconds();
        if ahead.abs() > MAX_TIME_DISTANCE_DAYS * 86_400 {
            continue;
        }
        let cost = if ahead > 0 { ahead * FUTURE_WEIGHT } else { -ahead };
        if best.is_none_or(|(c, _)| cost < c) {
            best = Some((cost, t));
        }
    }
    best.map(|(_, t)| t.and_utc())
}

/// Month arithmetic for `offset` in -1..=1.
fn shift_month(year: i32, month: u32, offset: i32) -> (i32, u32) {
    let idx = year * 12 + month as i32 - 1 + offset;
    (idx.div_euclid(12), idx.rem_euclid(12) as u32 + 1)
}

/// Decimal value of an all-digit byte string (1 to 9 digits), else `None`.
fn num(b: &[u8]) -> Option<u32> {
    if b.is_empty() || b.len() > 9 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |a, &c| a * 10 + u32::from(c - b'0')))
}

/// `sTTT` (sign digit 0/1, then tenths) as °C. Goes through an integer so T1000 is 0.0,
/// never -0.0.
fn signed_tenths(b: &[u8]) -> Option<f64> {
    let (&sign, digits) = b.split_first()?;
    if digits.len() != 3 {
        return None;
    }
    let v = num(digits)? as i32;
    match sign {
        b'0' => Some(f64::from(v) / 10.0),
        b'1' => Some(f64::from(-v) / 10.0),
        _ => None,
    }
}

/// One body group. Returns the new section when the token starts a trend forecast, and an
/// error only for NIL (a NIL report has no observation to store).
fn body_group<'a, I: Iterator<Item = &'a str>>(
    m: &mut Metar,
    tok: &'a str,
    toks: &mut std::iter::Peekable<I>,
    temp_seen: &mut bool,
) -> Result<Option<Section>, String> {
    match tok {
        "AUTO" => m.auto = true,
        "COR" => m.cor = true,
        "NIL" => return Err("NIL report".to_string()),
        "TEMPO" | "BECMG" => return Ok(Some(Section::Trend)),
        "CAVOK" => set_metric_visibility(m, 9999),
        // Nonstandard "QNH 1011" (seen at VOHY).
        "QNH" => {
            if let Some(hpa) = toks.peek().and_then(|t| num(t.as_bytes())) {
                toks.next();
                set_altimeter(m, f64::from(hpa));
            }
        }
        _ => other_body_group(m, tok, toks, temp_seen),
    }
    Ok(None)
}

/// Body groups recognised by shape rather than by exact text.
fn other_body_group<'a, I: Iterator<Item = &'a str>>(
    m: &mut Metar,
    tok: &'a str,
    toks: &mut std::iter::Peekable<I>,
    temp_seen: &mut bool,
) {
    let b = tok.as_bytes();
    if let Some(rest) = b.strip_suffix(b"KT") {
        wind_group(m, rest, 1.0);
    } else if let Some(rest) = b.strip_suffix(b"MPS") {
        wind_group(m, rest, KT_PER_MPS);
    } else if let Some(rest) = b.strip_suffix(b"KMH") {
        wind_group(m, rest, KT_PER_KMH);
    } else if let Some(rest) = b.strip_suffix(b"SM") {
        if m.visibility_sm.is_none() {
            if let Some((v, less)) = statute_miles(rest) {
                m.visibility_sm = Some(v);
                m.visibility_less_than = less;
            }
        }
    } else if let Some(digits) = b.strip_prefix(b"SLP") {
        // Some stations put the sea-level pressure before RMK (`A3001 SLP162 RMK ...`).
        slp_group(m, digits);
    } else if b.len() == 7 && b.get(3) == Some(&b'V') {
        variable_sector(m, b);
    } else if b.len() == 5 && matches!(b[0], b'A' | b'Q') {
        altimeter_group(m, b);
    } else if b.len() == 5 && num(b).is_some() && m.visibility_sm.is_none() && !*temp_seen {
        // `00000` without a unit (seen at VOHY), where the wind group belongs. Only calm is
        // unambiguous: `22005` could be knots or m/s, so it is skipped.
        if b.get(3..) == Some(b"00") {
            wind_group(m, b, 1.0);
        }
    } else if let Some(metres) = metric_visibility(b) {
        set_metric_visibility(m, metres);
    } else if let [whole] | [b'P', whole] = b {
        if whole.is_ascii_digit() {
            whole_plus_fraction(m, *whole - b'0', toks);
        }
    } else if let [b'M', whole] = b {
        if whole.is_ascii_digit() && whole_plus_fraction(m, *whole - b'0', toks) {
            m.visibility_less_than = true;
        }
    } else if !*temp_seen && b.contains(&b'/') {
        if let Some((t, d)) = temp_dew(b) {
            *temp_seen = t.is_some() || d.is_some();
            m.temp_whole_c = t;
            m.dew_whole_c = d;
        }
    }
}

/// `dddffKT`, `dddffGggKT`, `VRBffKT`, 3-digit speeds; `unit` converts to knots.
/// `rest` is the group without its unit suffix. Only the first wind group counts (a wind
/// shear group `WS020/18040KT` does not parse as one).
///
/// Each part may be reported missing on its own (`///` or `MMM` direction, `//` speed,
/// `G//` gust, as automated stations and decoder test suites write them): a missing part
/// is `None` and the parts that were reported are kept (`///04KT` is 4 kt from an unknown
/// direction, `27010G//KT` 10 kt from 270° with an unknown gust). A part that is neither
/// a value nor a missing marker makes the token something other than a wind group.
fn wind_group(m: &mut Metar, rest: &[u8], unit: f64) {
    let seen = m.wind_speed_kt.is_some() || m.wind_dir_deg.is_some() || m.wind_variable;
    if seen || rest.len() < 5 {
        return;
    }
    let (dir_b, speeds) = rest.split_at(3);
    let (dir, variable) = match dir_b {
        b"VRB" => (None, true),
        d if is_missing(d) => (None, false),
        d => match num(d) {
            Some(d) if d <= 360 => (Some(d as u16), false),
            _ => return,
        },
    };
    let (speed_b, gust_b) = match speeds.iter().position(|&c| c == b'G') {
        Some(i) => {
            let (s, g) = speeds.split_at(i);
            (s, Some(&g[1..]))
        }
        None => (speeds, None),
    };
    let Some(speed) = wind_speed(speed_b) else {
        return;
    };
    let gust = match gust_b {
        Some([]) => None,
        Some(g) => match wind_speed(g) {
            Some(g) => g,
            None => return,
        },
        None => None,
    };
    // 000 is the direction of a calm only; with a speed missing it says nothing.
    m.wind_dir_deg = if dir == Some(0) && speed.is_none_or(|s| s == 0) { None } else { dir };
    m.wind_variable = variable;
    m.wind_speed_kt = speed.map(|s| f64::from(s) * unit);
    m.wind_gust_kt = gust.map(|g| f64::from(g) * unit);
}

/// A wind speed: `Some(Some(v))` for two or three digits, `Some(None)` for a missing
/// marker (`//`, `///`, `MM`), `None` for anything else.
fn wind_speed(b: &[u8]) -> Option<Option<u32>> {
    if is_missing(b) && b.len() <= 3 {
        return Some(None);
    }
    if (2..=3).contains(&b.len()) {
        num(b).map(Some)
    } else {
        None
    }
}

/// All `/` or all `M`: a value the station did not report.
fn is_missing(b: &[u8]) -> bool {
    !b.is_empty() && (b.iter().all(|&c| c == b'/') || b.iter().all(|&c| c == b'M'))
}

/// `dddVddd` variable wind sector.
fn variable_sector(m: &mut Metar, b: &[u8]) {
    let (from, to) = (num(&b[0..3]), num(&b[4..7]));
    if let (Some(f), Some(t)) = (from, to) {
        if f <= 360 && t <= 360 && m.wind_var_from.is_none() {
            m.wind_var_from = Some(f as u16);
            m.wind_var_to = Some(t as u16);
        }
    }
}

/// `Annnn` (hundredths of inHg) or `Qnnnn` (hPa). Values outside any real pressure are
/// treated as malformed and skipped.
fn altimeter_group(m: &mut Metar, b: &[u8]) {
    let (&unit, digits) = match b.split_first() {
        Some(x) => x,
        None => return,
    };
    let Some(v) = num(digits) else {
        return;
    };
    match unit {
        b'A' => set_altimeter(m, inhg_to_hpa(f64::from(v) / 100.0)),
        b'Q' => set_altimeter(m, f64::from(v)),
        _ => {}
    }
}

/// Stores an hPa altimeter unless one is already set or it is implausible.
fn set_altimeter(m: &mut Metar, hpa: f64) {
    if m.altimeter_hpa.is_none() && (850.0..=1100.0).contains(&hpa) {
        m.altimeter_hpa = Some(hpa);
    }
}

/// `nnnn`, `nnnnNDV` or `nnnnD` (`D` a compass direction: `1000W`, `5000NE`) metres
/// visibility. A direction marks a visibility that differs by direction; as the first
/// visibility group of a report it is the one the report leads with, and the plain
/// group after it (`1000W 3000`) is the largest, not the prevailing one.
fn metric_visibility(b: &[u8]) -> Option<u32> {
    const DIRECTIONS: [&[u8]; 8] = [b"N", b"NE", b"E", b"SE", b"S", b"SW", b"W", b"NW"];
    let digits = b.get(..4)?;
    let suffix = &b[4..];
    let known = suffix.is_empty() || suffix == b"NDV" || DIRECTIONS.contains(&suffix);
    if known {
        num(digits)
    } else {
        None
    }
}

/// Stores a metric visibility in the statute-mile column without rounding: the stored
/// value is the double nearest `metres / 1609.344`, so `round(visibility_sm * 1609.344)`
/// gives back exactly the metres the report gave (rounding to hundredths of a mile
/// turned `0100` into 96.6 m). 9999 means 10 km or more and is stored as 10 km.
fn set_metric_visibility(m: &mut Metar, metres: u32) {
    if m.visibility_sm.is_some() {
        return;
    }
    let metres = if metres == 9999 { 10_000 } else { metres };
    m.visibility_sm = Some(f64::from(metres) / METRES_PER_SM);
    m.visibility_less_than = false;
}

/// `1 1/2SM` (and `P1 1/2SM`, `M1 1/2SM`, whose prefix the caller has read): a whole
/// number of miles in its own token followed by a proper fraction. True when the two
/// tokens were a visibility and were stored.
fn whole_plus_fraction<'a, I: Iterator<Item = &'a str>>(
    m: &mut Metar,
    whole: u8,
    toks: &mut std::iter::Peekable<I>,
) -> bool {
    if m.visibility_sm.is_some() {
        return false;
    }
    let frac = toks.peek().and_then(|t| t.as_bytes().strip_suffix(b"SM")).and_then(fraction).filter(|f| *f < 1.0);
    let Some(f) = frac else {
        return false;
    };
    toks.next();
    m.visibility_sm = Some(f64::from(whole) + f);
    m.visibility_less_than = false;
    true
}

/// Statute-mile visibility without its `SM`: `10`, `1/2`, `M1/4` (less than), `P6` (more
/// than 6, stored as its bound 6, like `P1 1/2SM` as 1.5), and the run-together `11/2`
/// for 1 1/2.
fn statute_miles(b: &[u8]) -> Option<(f64, bool)> {
    let (less, b) = match b.strip_prefix(b"M") {
        Some(r) => (true, r),
        None => (false, b.strip_prefix(b"P").unwrap_or(b)),
    };
    let v = if b.contains(&b'/') {
        fraction(b)?
    } else if (1..=3).contains(&b.len()) {
        f64::from(num(b)?)
    } else {
        return None;
    };
    Some((v, less))
}

/// `n/d` (proper fraction) or `wn/d` run together (11/2 = 1 1/2).
fn fraction(b: &[u8]) -> Option<f64> {
    let i = b.iter().position(|&c| c == b'/')?;
    let (n_b, d_b) = (&b[..i], &b[i + 1..]);
    if n_b.is_empty() || n_b.len() > 2 || d_b.is_empty() || d_b.len() > 2 {
        return None;
    }
    let (n, d) = (num(n_b)?, num(d_b)?);
    if d == 0 {
        return None;
    }
    if n < d {
        return Some(f64::from(n) / f64::from(d));
    }
    // Two-digit numerator not below the denominator: whole digit + proper fraction.
    let (w, n) = (num(&n_b[..1])?, num(&n_b[1..])?);
    (n_b.len() == 2 && n < d && n > 0).then(|| f64::from(w) + f64::from(n) / f64::from(d))
}

/// `TT/DD` with `M` for minus; either side may be missing (`15/`, `15/M`, `15///`, `///15`,
/// `//`, `/////`). Returns `None` when the token is not a temperature group at all.
fn temp_dew(b: &[u8]) -> Option<(Option<i32>, Option<i32>)> {
    let (temp, dew) = match b {
        [b'/', b'/', b'/', dew @ ..] => (None, dew),
        [b'/', dew @ ..] => (None, dew),
        _ => {
            let i = b.iter().position(|&c| c == b'/')?;
            let (t, rest) = b.split_at(i);
            (Some(whole_c(t)?), rest.get(1..).unwrap_or_default())
        }
    };
    let dew = if dew.is_empty() || dew == b"M" || dew.iter().all(|&c| c == b'/') { None } else { Some(whole_c(dew)?) };
    Some((temp, dew))
}

/// `dd` or `Mdd` whole degrees Celsius.
fn whole_c(b: &[u8]) -> Option<i32> {
    let (neg, digits) = match b.strip_prefix(b"M") {
        Some(d) => (true, d),
        None => (false, b),
    };
    if digits.len() != 2 {
        return None;
    }
    let v = num(digits)? as i32;
    Some(if neg { -v } else { v })
}

/// One remark group. Only the coded groups the lake needs are read; the first of each
/// kind wins.
fn remark_group(m: &mut Metar, tok: &str) {
    let b = tok.as_bytes();
    match b {
        [b'S', b'L', b'P', rest @ ..] => slp_group(m, rest),
        [b'T', rest @ ..] if rest.len() == 4 || rest.len() == 8 => t_group(m, rest),
        [b'P', rest @ ..] if rest.len() == 4 && m.precip_hour_in.is_none() => {
            m.precip_hour_in = hundredths(rest);
            m.precip_trace = m.precip_hour_in == Some(0.0);
        }
        [kind, rest @ ..] if b.len() == 5 => five_char_remark(m, *kind, rest),
        [b'4', rest @ ..] if b.len() == 9 => day_extremes(m, rest),
        _ => {}
    }
}

/// `4sTTTsTTT`: 24-hour max and min, tenths of °C; both halves or nothing.
fn day_extremes(m: &mut Metar, rest: &[u8]) {
    if m.day_max_c.is_some() || m.day_min_c.is_some() {
        return;
    }
    let (hi, lo) = rest.split_at(rest.len().min(4));
    if let (Some(hi), Some(lo)) = (signed_tenths(hi), signed_tenths(lo)) {
        m.day_max_c = Some(hi);
        m.day_min_c = Some(lo);
    }
}

/// `SLPppp` (the digits after `SLP`), in the remarks or before them; `SLPNO` and
/// other non-digit forms stay `None`. The first one wins.
fn slp_group(m: &mut Metar, digits: &[u8]) {
    if digits.len() == 3 && m.sea_level_pressure_hpa.is_none() {
        m.sea_level_pressure_hpa = num(digits).map(slp_hpa);
    }
}

/// `SLPppp`: tenths of hPa with the leading 9 or 10 dropped (310 → 1031.0, 980 → 998.0).
fn slp_hpa(v: u32) -> f64 {
    let tenths = if v < 500 { 10_000 + v } else { 9_000 + v };
    f64::from(tenths) / 10.0
}

/// `TsTTTsTTT` (or `TsTTT` without dew point): tenths of °C.
fn t_group(m: &mut Metar, rest: &[u8]) {
    if m.tgroup_temp_c.is_some() {
        return;
    }
    let Some(t) = signed_tenths(&rest[..4]) else {
        return;
    };
    m.tgroup_temp_c = Some(t);
    m.tgroup_dew_c = rest.get(4..).and_then(signed_tenths);
}

/// The 5-character coded remarks: `1sTTT` / `2sTTT` 6-hour max/min, `6RRRR` 3/6-hour and
/// `7RRRR` 24-hour precipitation (hundredths of an inch; `6////` stays `None`).
fn five_char_remark(m: &mut Metar, kind: u8, rest: &[u8]) {
    match kind {
        b'1' if m.six_hour_max_c.is_none() => m.six_hour_max_c = signed_tenths(rest),
        b'2' if m.six_hour_min_c.is_none() => m.six_hour_min_c = signed_tenths(rest),
        b'6' if m.precip_6h_in.is_none() => m.precip_6h_in = hundredths(rest),
        b'7' if m.precip_24h_in.is_none() => m.precip_24h_in = hundredths(rest),
        _ => {}
    }
}

/// Four digits of hundredths of an inch.
fn hundredths(b: &[u8]) -> Option<f64> {
    num(b).map(|v| f64::from(v) / 100.0)
}

#[cfg(test)]
mod tests;
