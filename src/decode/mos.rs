//! MOS and NBM text bulletins (GFS MAV, NAM MET, GFS LAMP, NBM NBS) → forecast rows.
//!
//! These bulletins are where the GFS-MOS, NAM-MOS, LAV-MOS and NBS-MOS models come from.
//! A bulletin is a WMO preamble followed by station blocks; each block opens with a header
//! such as `KNYC   GFS MOS GUIDANCE    2/04/2022  1200 UTC` and continues with labelled
//! rows of 3-character columns (`HR`, `TMP`, `DPT`, `WDR`, …). Columns are read by
//! position, never by splitting on whitespace: values may run together (`PRA 100100`),
//! be negative (`-2`), blank or missing (`999`).
//!
//! Other bulletin types (GFS extended MEX, ECMWF MOS, NBM NBE/NBX/NBH/NBP) are recognised
//! by their header and skipped: their lines count in `read`, they give no rows and no
//! errors. A column becomes a row only when it carries a temperature, since spec 2.5
//! promises a temperature on every row.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Timelike, Utc};

use crate::decode::limits::MOS_LINE;
use crate::decode::text::{input_text, quote};
use crate::decode::types::{Decoded, ForecastRow, OptF64};
use crate::units::{c_to_f, f_to_c, kt_to_kmh, kt_to_mph};

/// Most columns a station block can have (NBS has 23, LAMP 25).
const MAX_COLS: usize = 32;

/// The bulletin a station header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bulletin {
    /// GFS MOS short range (MAV): `GFS MOS GUIDANCE`, 3-hourly then 6-hourly to 72 h.
    GfsMav,
    /// NAM MOS (MET): `NAM MOS GUIDANCE`, same layout as MAV.
    NamMet,
    /// GFS LAMP (LAV, and its ceiling/visibility extension LEV): `GFS LAMP GUIDANCE`,
    /// hourly for 25 hours.
    Lamp,
    /// NBM short range (NBS): `NBM [Vx.y] NBS GUIDANCE`, 3-hourly to 72 h.
    NbmNbs,
    /// GFS extended MOS (MEX): `GFSX MOS GUIDANCE`, 12-hourly; recognised, not decoded.
    GfsMex,
    /// ECMWF MOS (ECS/ECE): `ECM MOS GUIDANCE`; recognised, not decoded.
    EcmwfMos,
    /// Other NBM text products (NBE, NBX, NBH, NBP); recognised, not decoded.
    NbmOther,
}

impl Bulletin {
    /// The spec 2.5 model name of the rows this bulletin yields, or `None` for the
    /// bulletin types that are recognised but skipped.
    pub fn model(self) -> Option<&'static str> {
        match self {
            Bulletin::GfsMav => Some("GFS-MOS"),
            Bulletin::NamMet => Some("NAM-MOS"),
            Bulletin::Lamp => Some("LAV-MOS"),
            Bulletin::NbmNbs => Some("NBS-MOS"),
            Bulletin::GfsMex | Bulletin::EcmwfMos | Bulletin::NbmOther => None,
        }
    }

    /// The bulletin layout the encoder writes for a spec 2.5 model name.
    pub fn for_model(model: &str) -> Option<Self> {
        match model {
            "GFS-MOS" => Some(Bulletin::GfsMav),
            "NAM-MOS" => Some(Bulletin::NamMet),
            "LAV-MOS" => Some(Bulletin::Lamp),
            "NBS-MOS" => Some(Bulletin::NbmNbs),
            _ => None,
        }
    }

    /// Classifies the words between the station id and `GUIDANCE`.
    fn from_words(words: &[&str]) -> Option<Self> {
        match words {
            ["GFS", "MOS"] => Some(Bulletin::GfsMav),
            ["NAM", "MOS"] => Some(Bulletin::NamMet),
            ["GFS", "LAMP"] | ["LAMP"] => Some(Bulletin::Lamp),
            ["GFSX", "MOS"] => Some(Bulletin::GfsMex),
            ["ECM" | "ECMX" | "ECMWF", "MOS"] => Some(Bulletin::EcmwfMos),
            ["NBM", kind] => Self::nbm(kind),
            ["NBM", version, kind] if is_nbm_version(version) => Self::nbm(kind),
            _ => None,
        }
    }

    fn nbm(kind: &str) -> Option<Self> {
        match kind {
            "NBS" => Some(Bulletin::NbmNbs),
            "NBE" | "NBX" | "NBH" | "NBP" => Some(Bulletin::NbmOther),
            _ => None,
        }
    }

    /// What a row label means in this bulletin, for the rows we decode.
    fn field(self, label: &str) -> Option<Field> {
        match (self, label) {
            (Bulletin::GfsMav | Bulletin::NamMet, "HR") => Some(Field::Clock),
            (Bulletin::GfsMav | Bulletin::NamMet | Bulletin::Lamp, "CLD") => Some(Field::Cloud),
            (Bulletin::Lamp | Bulletin::NbmNbs, "UTC") => Some(Field::Clock),
            // LAMP's HR (in the LEV extension) and NBS's FHR count hours from the cycle.
            (Bulletin::Lamp, "HR") | (Bulletin::NbmNbs, "FHR") => Some(Field::Lead),
            (Bulletin::Lamp, "WGS") | (Bulletin::NbmNbs, "GST") => Some(Field::Gust),
            (Bulletin::NbmNbs, "SKY") => Some(Field::Cloud),
            (_, "TMP") => Some(Field::Tmp),
            (_, "DPT") => Some(Field::Dpt),
            (_, "WDR") => Some(Field::Wdr),
            (_, "WSP") => Some(Field::Wsp),
            _ => None,
        }
    }

    /// NBS writes missing values as 999 only; the older MOS products also use 99 for
    /// two-digit wind fields.
    fn wind_99_missing(self) -> bool {
        self != Bulletin::NbmNbs
    }
}

fn is_nbm_version(word: &str) -> bool {
    word.len() > 1 && word.starts_with('V') && word[1..].bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// The kinds of row a block can hold; a block keeps one decoded row per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// UTC hour of each column (MAV/MET `HR`, LAMP/NBS `UTC`).
    Clock,
    /// Hours since the cycle (NBS `FHR`, LEV `HR`).
    Lead,
    Tmp,
    Dpt,
    Wdr,
    Wsp,
    Gust,
    Cloud,
}

const FIELDS: usize = 8;

impl Field {
    fn index(self) -> usize {
        self as usize
    }
    fn label(self) -> &'static str {
        match self {
            Field::Clock => "time",
            Field::Lead => "forecast-hour",
            Field::Tmp => "TMP",
            Field::Dpt => "DPT",
            Field::Wdr => "WDR",
            Field::Wsp => "WSP",
            Field::Gust => "gust",
            Field::Cloud => "cloud",
        }
    }
    /// Accepted range: anything outside is a garbled cell, not a forecast.
    fn range(self) -> (i32, i32) {
        match self {
            Field::Clock => (0, 23),
            Field::Lead => (0, 400),
            // -99 is a missing marker in NBS rows; no station forecast goes below -98 °F.
            Field::Tmp | Field::Dpt => (-98, 140),
            Field::Wdr => (0, 36),
            Field::Wsp => (0, 150),
            Field::Gust => (0, 200),
            Field::Cloud => (0, 100),
        }
    }
}

/// One station header: `KFOZ   NAM MOS GUIDANCE    8/12/2017  1200 UTC`.
#[derive(Debug, Clone, PartialEq)]
struct Header<'a> {
    station: &'a str,
    bulletin: Bulletin,
    run_time: DateTime<Utc>,
}

/// The model a station header line announces (`GFS-MOS` for `GFS MOS GUIDANCE`, …), or
/// `None` for a line that is not a valid header or a bulletin type we do not decode.
/// Lets a caller route a bulletin before decoding it.
pub fn model_of_header(line: &str) -> Option<&'static str> {
    bulletin_of_header(line).and_then(Bulletin::model)
}

/// The bulletin type of a valid station header line, including the skipped types.
pub fn bulletin_of_header(line: &str) -> Option<Bulletin> {
    parse_header(line).ok().map(|h| h.bulletin)
}

/// The station a valid station header line names (`KFOZ`), its padding and record
/// separator (0x1E, or `^^`) left out as the decoder leaves them. Lets a feed keep the
/// blocks of some stations only.
pub fn station_of_header(line: &str) -> Option<&str> {
    parse_header(line).ok().map(|h| h.station)
}

/// The run time a valid station header line states (`8/12/2017  1200 UTC`), as the
/// decoder dates the block's rows. Lets a feed check that a bulletin is the cycle it asked
/// for before storing it.
pub fn run_time_of_header(line: &str) -> Option<DateTime<Utc>> {
    parse_header(line).ok().map(|h| h.run_time)
}

fn is_pad(c: char) -> bool {
    c.is_whitespace() || c.is_control()
}

fn parse_header(line: &str) -> Result<Header<'_>, String> {
    let t = line.trim_matches(is_pad);
    // The record separator (0x1E) before a station, written out as `^^` by some archives.
    let t = t.strip_prefix("^^").unwrap_or(t);
    let mut toks = [""; 10];
    let mut n = 0;
    for tok in t.split_ascii_whitespace() {
        if n == toks.len() {
            return Err("station header has too many words".into());
        }
        toks[n] = tok;
        n += 1;
    }
    let toks = &toks[..n];
    let g = toks.iter().position(|w| *w == "GUIDANCE").ok_or("station header without GUIDANCE")?;
    if g < 2 || n != g + 4 || toks[g + 3] != "UTC" {
        return Err(format!("bad station header '{}'", snippet(t, 60)));
    }
    let station = toks[0];
    if !(3..=8).contains(&station.len()) || !station.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("bad station id '{}'", snippet(station, 12)));
    }
    let bulletin = Bulletin::from_words(&toks[1..g])
        .ok_or_else(|| format!("unknown bulletin type '{}'", snippet(&toks[1..g].join(" "), 30)))?;
    let date = parse_mdy(toks[g + 1]).ok_or_else(|| format!("bad header date '{}'", snippet(toks[g + 1], 12)))?;
    let (hh, mm) = parse_hhmm(toks[g + 2]).ok_or_else(|| format!("bad header cycle '{}'", snippet(toks[g + 2], 12)))?;
    let run = date.and_hms_opt(hh, mm, 0).ok_or("bad header cycle")?;
    Ok(Header { station, bulletin, run_time: Utc.from_utc_datetime(&run) })
}

/// `M/DD/YYYY` as the headers write it.
fn parse_mdy(s: &str) -> Option<NaiveDate> {
    let mut it = s.split('/');
    let m = small_uint(it.next()?, 2)?;
    let d = small_uint(it.next()?, 2)?;
    let y = small_uint(it.next()?, 4)?;
    if it.next().is_some() || y < 1900 {
        return None;
    }
    NaiveDate::from_ymd_opt(y as i32, m, d)
}

/// `HHMM` cycle, 0000–2359.
fn parse_hhmm(s: &str) -> Option<(u32, u32)> {
    if s.len() != 4 {
        return None;
    }
    let v = small_uint(s, 4)?;
    let (h, m) = (v / 100, v % 100);
    (h < 24 && m < 60).then_some((h, m))
}

fn small_uint(s: &str, max_len: usize) -> Option<u32> {
    if s.is_empty() || s.len() > max_len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// At most `max` characters of `s`, cut on a character boundary, control characters
/// escaped, for error reasons.
fn snippet(s: &str, max: usize) -> String {
    quote(s, max).into_owned()
}

/// Lines a bulletin carries before its first station: the sequence number (`906`), the
/// WMO heading (`FOUS46 KWNO 121200`, maybe with `RRA`/`CCA`) and the AWIPS id (`METNC1`).
fn is_preamble(t: &str) -> bool {
    if !t.is_empty() && t.len() <= 6 && t.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    let mut toks = t.split_ascii_whitespace();
    let (a, b, c, d, e) = (toks.next(), toks.next(), toks.next(), toks.next(), toks.next());
    match (a, b, c, d, e) {
        (Some(id), None, None, None, None) => {
            (4..=6).contains(&id.len()) && id.bytes().all(|x| x.is_ascii_uppercase() || x.is_ascii_digit())
        }
        (Some(tt), Some(cccc), Some(time), bbb, None) => {
            let tb = tt.as_bytes();
            tb.len() == 6
                && tb[..4].iter().all(u8::is_ascii_uppercase)
                && tb[4..].iter().all(u8::is_ascii_digit)
                && cccc.len() == 4
                && cccc.bytes().all(|x| x.is_ascii_uppercase() || x.is_ascii_digit())
                && time.len() == 6
                && time.bytes().all(|x| x.is_ascii_digit())
                && bbb.is_none_or(|x| x.len() == 3 && x.bytes().all(|y| y.is_ascii_uppercase()))
        }
        _ => false,
    }
}

/// One decoded row of a block: value per column, and where it came from.
#[derive(Debug, Clone, Copy)]
struct Series {
    line: usize,
    len: usize,
    vals: [Option<i16>; MAX_COLS],
}

impl Series {
    fn get(&self, k: usize) -> Option<i32> {
        if k < self.len {
            self.vals.get(k).copied().flatten().map(i32::from)
        } else {
            None
        }
    }
}

/// A station block being read.
struct Block {
    station: String,
    bulletin: Bulletin,
    run_time: DateTime<Utc>,
    header_line: usize,
    series: [Option<Series>; FIELDS],
}

impl Block {
    fn new(h: &Header<'_>, line: usize) -> Self {
        Block {
            station: h.station.to_string(),
            bulletin: h.bulletin,
            run_time: h.run_time,
            header_line: line,
            series: [None; FIELDS],
        }
    }

    /// Reads one row of the block; rows we do not decode (P06, CIG, …) are ignored.
    fn row(&mut self, n: usize, line: &str, out: &mut Decoded<ForecastRow>) {
        let body = line.trim_start_matches(' ');
        let bytes = body.as_bytes();
        let label_len =
            bytes.iter().take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b'/').count();
        let label_ok = (2..=3).contains(&label_len)
            && bytes.first().is_some_and(u8::is_ascii_uppercase)
            && bytes.get(label_len).is_none_or(|b| *b == b' ');
        if !label_ok {
            out.reject(n, format!("unrecognised row '{}'", snippet(body, 12)));
            return;
        }
        let Some(field) = self.bulletin.field(&body[..label_len]) else {
            return;
        };
        if self.series[field.index()].is_some() {
            out.reject(n, format!("duplicate {} row", &body[..label_len]));
            return;
        }
        match parse_series(self.bulletin, field, &body[..label_len], body, n) {
            Ok((s, bad)) => {
                if let Some(reason) = bad {
                    out.reject(n, reason);
                }
                self.series[field.index()] = Some(s);
            }
            Err(reason) => out.reject(n, reason),
        }
    }

    fn data(&self, f: Field) -> Option<&Series> {
        self.series[f.index()].as_ref()
    }

    /// Resolves each column's valid time and emits a row per column with a temperature.
    fn finish(self, out: &mut Decoded<ForecastRow>) {
        let Some(model) = self.bulletin.model() else { return };
        let has_data = [Field::Tmp, Field::Dpt, Field::Wdr, Field::Wsp, Field::Gust, Field::Cloud]
            .iter()
            .any(|f| self.data(*f).is_some());
        let Some((times, ncols)) = self.valid_times(out) else {
            if has_data {
                out.reject(self.header_line, format!("{} block without a time row", self.station));
            }
            return;
        };
        for f in [Field::Tmp, Field::Dpt, Field::Wdr, Field::Wsp, Field::Gust, Field::Cloud] {
            if let Some(s) = self.data(f) {
                if (ncols..s.len).any(|k| s.get(k).is_some()) {
                    out.reject(s.line, format!("{} row has {} columns, time row {ncols}", f.label(), s.len));
                }
            }
        }
        let Some(tmp) = self.data(Field::Tmp) else { return };
        for (k, valid) in times.iter().enumerate().take(ncols) {
            let (Some(valid), Some(t)) = (*valid, tmp.get(k)) else { continue };
            out.records.push(self.make_row(model, valid, t, k));
        }
    }

    fn make_row(&self, model: &'static str, valid: DateTime<Utc>, t: i32, k: usize) -> ForecastRow {
        let get = |f: Field| self.data(f).and_then(|s| s.get(k)).map(f64::from);
        let mut r = ForecastRow {
            model,
            location_name: self.station.as_str().into(),
            run_time: self.run_time,
            valid_time: valid,
            forecast_hour: lead_hours(self.run_time, valid),
            temperature_f: f64::from(t).into(),
            dew_point_f: get(Field::Dpt).into(),
            dew_point_c: get(Field::Dpt).map(f_to_c).into(),
            wind_direction_deg: self.data(Field::Wdr).and_then(|s| s.get(k)).map(|d| d * 10),
            wind_speed_mph: get(Field::Wsp).map(kt_to_mph).into(),
            wind_speed_kmh: get(Field::Wsp).map(kt_to_kmh).into(),
            wind_gusts_mph: get(Field::Gust).map(kt_to_mph).into(),
            wind_gusts_kmh: get(Field::Gust).map(kt_to_kmh).into(),
            cloud_cover: get(Field::Cloud).into(),
            ..ForecastRow::default()
        };
        r.complete_temperatures();
        r
    }

    /// Valid time per column. A forecast-hour row (NBS `FHR`, LEV `HR`) counts from the
    /// cycle's whole hour and is checked against the UTC row; otherwise the UTC hours roll
    /// over the day from the run time. Columns must advance in time.
    fn valid_times(&self, out: &mut Decoded<ForecastRow>) -> Option<([Option<DateTime<Utc>>; MAX_COLS], usize)> {
        let mut times = [None; MAX_COLS];
        let clock = self.data(Field::Clock);
        let ncols;
        let time_line;
        if let Some(lead) = self.data(Field::Lead) {
            ncols = lead.len;
            time_line = lead.line;
            let base = floor_hour(self.run_time);
            for (k, slot) in times.iter_mut().enumerate().take(ncols) {
                let Some(h) = lead.get(k) else { continue };
                let valid = base + Duration::hours(i64::from(h));
                match clock.and_then(|c| c.get(k).map(|u| (c.line, u))) {
                    Some((line, u)) if valid.hour() as i32 != u => out
                        .reject(line, format!("UTC hour {u:02} disagrees with forecast hour {h} in column {}", k + 1)),
                    _ => *slot = Some(valid),
                }
            }
        } else {
            let clock = clock?;
            ncols = clock.len;
            time_line = clock.line;
            let mut prev = self.run_time;
            for (k, slot) in times.iter_mut().enumerate().take(ncols) {
                let Some(h) = clock.get(k) else { continue };
                let mut valid = floor_day(prev) + Duration::hours(i64::from(h));
                if valid <= prev {
                    valid += Duration::days(1);
                }
                *slot = Some(valid);
                prev = valid;
            }
        }
        let mut prev: Option<DateTime<Utc>> = None;
        for (k, slot) in times.iter_mut().enumerate().take(ncols) {
            if let Some(v) = *slot {
                if prev.is_some_and(|p| p >= v) {
                    out.reject(time_line, format!("column {} does not advance in time", k + 1));
                    *slot = None;
                } else {
                    prev = Some(v);
                }
            }
        }
        Some((times, ncols))
    }
}

/// Parses a row's 3-character cells. `Err` rejects the whole row (misaligned or too
/// long: its columns cannot be trusted); a bad cell is reported and read as missing.
fn parse_series(
    bulletin: Bulletin,
    field: Field,
    label: &str,
    body: &str,
    line: usize,
) -> Result<(Series, Option<String>), String> {
    let mut s = Series { line, len: 0, vals: [None; MAX_COLS] };
    let pad = body.get(label.len()..4.min(body.len())).unwrap_or("x");
    if !pad.bytes().all(|b| b == b' ') {
        return Err(format!("misaligned {label} row"));
    }
    let cells = body.get(4..).unwrap_or("");
    if cells.len() % 3 != 0 {
        return Err(format!("truncated or misaligned {label} row ({} characters of cells)", cells.len()));
    }
    s.len = cells.len() / 3;
    if s.len > MAX_COLS {
        return Err(format!("{label} row has {} columns, at most {MAX_COLS} expected", s.len));
    }
    let mut bad = None;
    for k in 0..s.len {
        let parsed = match cells.get(3 * k..3 * k + 3) {
            Some(cell) => parse_cell(bulletin, field, cell).ok_or(cell),
            None => Err("?"),
        };
        match parsed {
            Ok(v) => s.vals[k] = v.map(|v| v as i16),
            Err(cell) => {
                if bad.is_none() {
                    bad = Some(format!("bad {label} value '{}' in column {}", snippet(cell.trim(), 12), k + 1));
                }
            }
        }
    }
    Ok((s, bad))
}

/// One cell: `Some(None)` for missing (blank, 999, and the per-field markers), `None`
/// when the cell is garbled or out of range.
///
/// Cloud cover: NBS `SKY` is already a percentage. MAV/MET/LAMP `CLD` is a category and
/// is mapped to a representative percentage — CL (clear) 0, FW (few) 25, SC (scattered)
/// 50, BK (broken) 80, OV (overcast) 100 — so the row carries a comparable number; the
/// category boundaries (0, 1–2, 3–4, 5–7, 8 oktas) are what the value really means.
fn parse_cell(bulletin: Bulletin, field: Field, cell: &str) -> Option<Option<i32>> {
    let t = cell.trim_start_matches(' ');
    if t.is_empty() || t == "999" {
        return Some(None);
    }
    if field == Field::Cloud && bulletin != Bulletin::NbmNbs {
        return match t {
            "CL" => Some(Some(0)),
            "FW" => Some(Some(25)),
            "SC" => Some(Some(50)),
            "BK" => Some(Some(80)),
            "OV" => Some(Some(100)),
            _ => None,
        };
    }
    if field == Field::Gust && t == "NG" {
        return Some(None);
    }
    let v: i32 = parse_int(t)?;
    let missing = match field {
        Field::Tmp | Field::Dpt => v == -99,
        Field::Wdr => v == 99,
        Field::Wsp | Field::Gust => v == 99 && bulletin.wind_99_missing(),
        _ => false,
    };
    if missing {
        return Some(None);
    }
    let (lo, hi) = field.range();
    (lo..=hi).contains(&v).then_some(Some(v))
}

/// Optional minus sign and up to three digits.
fn parse_int(t: &str) -> Option<i32> {
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i32 = digits.parse().ok()?;
    Some(if neg { -v } else { v })
}

fn floor_hour(t: DateTime<Utc>) -> DateTime<Utc> {
    t - Duration::seconds(i64::from(t.minute() * 60 + t.second())) - Duration::nanoseconds(i64::from(t.nanosecond()))
}

fn floor_day(t: DateTime<Utc>) -> DateTime<Utc> {
    Utc.from_utc_datetime(&t.date_naive().and_time(chrono::NaiveTime::MIN))
}

/// Whole hours from the run to the valid time, rounded up: a LAMP cycle labelled 1230
/// calls its 13Z column hour 1 (LAMP counts from the cycle's whole hour).
fn lead_hours(run: DateTime<Utc>, valid: DateTime<Utc>) -> i32 {
    let m = (valid - run).num_minutes();
    let h = if m >= 0 { (m + 59) / 60 } else { -((-m) / 60) };
    h as i32
}

/// Where the decoder is in the input.
enum State {
    /// Before the first station header, or after a preamble line ended a block
    /// (bulletins concatenated into one input).
    Outside,
    /// Inside a block we do not decode (skipped type, or a header we could not read).
    Skipping,
    /// Inside a GFS-MOS / NAM-MOS / LAV-MOS / NBS-MOS block.
    Reading(Box<Block>),
}

/// Decodes a MOS / NBM text bulletin (one or many station blocks, or several bulletins
/// one after the other) into forecast rows of GFS-MOS (MAV), NAM-MOS (MET), LAV-MOS
/// (LAMP) and NBS-MOS (NBS), one row per column that carries a temperature.
/// `latitude`/`longitude` stay `None`: the caller fills them from the station catalog.
/// MEX, ECMWF MOS and NBE/NBX blocks are skipped silently. A line longer than
/// [`MOS_LINE`] is rejected and skipped; input that is not UTF-8 text is refused whole.
///
/// Units: TMP/DPT °F (°C and K derived), WDR tens of degrees (00 with WSP 00 is calm and
/// gives 0°), WSP and gusts (NBS `GST`, LAMP `WGS`) knots converted to mph and km/h.
/// `cloud_cover` is NBS `SKY` as written (percent); MAV/MET/LAMP only give the category
/// `CLD`, mapped to CL 0 %, FW 25 %, SC 50 %, BK 80 %, OV 100 %.
pub fn decode_mos(bytes: &[u8]) -> Decoded<ForecastRow> {
    let text = match input_text(bytes) {
        Ok(t) => t,
        Err(e) => return Decoded::refused(e.to_string()),
    };
    let mut out = Decoded::new();
    let mut state = State::Outside;
    let mut seen_header = false;
    let mut content_line = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        out.read += 1;
        if let Err(reason) = MOS_LINE.check(raw.len()) {
            out.reject(n, reason);
            continue;
        }
        let line = raw.trim_end_matches(is_pad);
        let trimmed = line.trim_start_matches(is_pad);
        if trimmed.is_empty() {
            continue;
        }
        content_line.get_or_insert(n);
        if trimmed.contains("GUIDANCE") {
            if let State::Reading(b) = std::mem::replace(&mut state, State::Skipping) {
                b.finish(&mut out);
            }
            seen_header = true;
            match parse_header(trimmed) {
                Ok(h) if h.bulletin.model().is_some() => state = State::Reading(Box::new(Block::new(&h, n))),
                Ok(_) => {}
                Err(reason) => out.reject(n, reason),
            }
            continue;
        }
        match &mut state {
            State::Skipping => {}
            State::Outside if is_preamble(trimmed) => {}
            State::Outside => {
                out.reject(n, format!("unexpected line outside a station block: '{}'", snippet(trimmed, 20)))
            }
            State::Reading(_) if is_preamble(trimmed) => {
                if let State::Reading(b) = std::mem::replace(&mut state, State::Outside) {
                    b.finish(&mut out);
                }
            }
            State::Reading(block) => block.row(n, line, &mut out),
        }
    }
    if let State::Reading(b) = state {
        b.finish(&mut out);
    }
    if let (false, Some(n)) = (seen_header, content_line) {
        out.reject(n, "no MOS/NBM station header found");
    }
    out
}

// ---------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------

/// Forecast hours (from the cycle's whole hour) of the columns a real bulletin of this
/// model carries: MAV/MET 6–60 every 3 h then 66 and 72; LAMP 1–25 hourly; NBS 23
/// three-hourly columns on synoptic hours starting at least 4 h out (06 for a 12Z run,
/// 04 for 17Z). `None` for a model without a MOS text layout.
pub fn forecast_hours(model: &str, run_time: DateTime<Utc>) -> Option<Vec<i32>> {
    Bulletin::for_model(model).map(|b| schedule(b, run_time))
}

fn schedule(b: Bulletin, run_time: DateTime<Utc>) -> Vec<i32> {
    match b {
        Bulletin::Lamp => (1..=25).collect(),
        Bulletin::NbmNbs => {
            let h = run_time.hour() as i32;
            let first = (4..7).find(|l| (h + l) % 3 == 0).unwrap_or(6);
            (0..23).map(|k| first + 3 * k).collect()
        }
        _ => (6..=60).step_by(3).chain([66, 72]).collect(),
    }
}

/// Writes one station block in the text layout of `model` (GFS-MOS → MAV, NAM-MOS → MET,
/// LAV-MOS → LAMP, NBS-MOS → NBS), the way the NWS web pages show it (one leading space
/// per line). Columns follow the real product's schedule ([`forecast_hours`]); each takes
/// the row whose `valid_time` matches, and columns without one are written missing. Only
/// the rows `decode_mos` reads are written (no N/X, P06, …). `None` for other models.
pub fn encode_mos(model: &str, station: &str, run_time: DateTime<Utc>, rows: &[ForecastRow]) -> Option<String> {
    Bulletin::for_model(model).map(|b| encode(b, station, run_time, rows))
}

/// GFS MOS (MAV) block: 3-hourly to 60 h, then 66 and 72 h. See [`encode_mos`].
pub fn encode_mav(station: &str, run_time: DateTime<Utc>, rows: &[ForecastRow]) -> String {
    encode(Bulletin::GfsMav, station, run_time, rows)
}

/// NBM NBS block: 23 three-hourly columns to about 72 h, as the real NBS is (hourly
/// guidance is the separate NBH product). See [`encode_mos`].
pub fn encode_nbs(station: &str, run_time: DateTime<Utc>, rows: &[ForecastRow]) -> String {
    encode(Bulletin::NbmNbs, station, run_time, rows)
}

/// One output column: its valid time, lead and the row supplying its values.
struct Col<'a> {
    valid: DateTime<Utc>,
    lead: i32,
    row: Option<&'a ForecastRow>,
}

fn encode(b: Bulletin, station: &str, run_time: DateTime<Utc>, rows: &[ForecastRow]) -> String {
    let base = floor_hour(run_time);
    let cols: Vec<Col<'_>> = schedule(b, run_time)
        .into_iter()
        .map(|lead| {
            let valid = base + Duration::hours(i64::from(lead));
            Col { valid, lead, row: rows.iter().find(|r| r.valid_time == valid) }
        })
        .collect();
    let mut s = String::with_capacity(1024);
    let date = format!("{}/{:02}/{}", run_time.month(), run_time.day(), run_time.year());
    let cycle = run_time.format("%H%M");
    let _ = match b {
        Bulletin::GfsMav => writeln!(s, " {station:<6} GFS MOS GUIDANCE {date:>12}  {cycle} UTC"),
        Bulletin::NamMet => writeln!(s, " {station:<6} NAM MOS GUIDANCE {date:>12}  {cycle} UTC"),
        Bulletin::Lamp => writeln!(s, " {station:<6} GFS LAMP GUIDANCE {date:>11}  {cycle} UTC"),
        _ => writeln!(s, " {station:<7} NBM V4.2 NBS GUIDANCE {date:>12}  {cycle} UTC"),
    };
    let wide = b == Bulletin::NbmNbs;
    if b != Bulletin::Lamp {
        s.push(' ');
        s.push_str(&dt_row(&cols));
        s.push('\n');
    }
    let label = if matches!(b, Bulletin::GfsMav | Bulletin::NamMet) { "HR " } else { "UTC" };
    write_row(&mut s, label, &cols, |c| Some(c.valid.hour() as i32), Pad::Zero);
    if wide {
        write_row(&mut s, "FHR", &cols, |c| Some(c.lead), Pad::Zero);
    }
    write_row(&mut s, "TMP", &cols, |c| c.row.and_then(row_temp_f).and_then(temp_cell), Pad::Space);
    let dew =
        |c: &Col<'_>| c.row.and_then(|r| r.dew_point_f.get().or(r.dew_point_c.get().map(c_to_f))).and_then(temp_cell);
    write_row(&mut s, "DPT", &cols, dew, Pad::Space);
    if wide {
        let sky = |c: &Col<'_>| c.row.and_then(|r| r.cloud_cover.get()).map(|p| p.round().clamp(0.0, 100.0) as i32);
        write_row(&mut s, "SKY", &cols, sky, Pad::Space);
    }
    // MAV/MET/LAMP write two-digit winds with a leading zero and 99 for missing.
    let wind_pad = if wide { Pad::Space } else { Pad::ZeroWind };
    write_row(&mut s, "WDR", &cols, |c| c.row.and_then(wdr_cell), wind_pad);
    let wsp = |c: &Col<'_>| c.row.and_then(|r| speed_kt(r.wind_speed_mph, r.wind_speed_kmh));
    write_row(&mut s, "WSP", &cols, wsp, wind_pad);
    match b {
        Bulletin::NbmNbs => {
            let gst = |c: &Col<'_>| c.row.and_then(|r| speed_kt(r.wind_gusts_mph, r.wind_gusts_kmh));
            write_row(&mut s, "GST", &cols, gst, Pad::Space);
        }
        Bulletin::Lamp => write_gust_row(&mut s, &cols),
        _ => {}
    }
    if !wide {
        write_cloud_row(&mut s, &cols);
    }
    s
}

#[derive(Clone, Copy)]
enum Pad {
    /// MAV/MET/LAMP style: two digits with a leading zero (`05`).
    Zero,
    /// As `Zero`, with ` 99` rather than `999` for a missing value (MOS wind rows).
    ZeroWind,
    /// NBS style: right-aligned without padding (` 5`).
    Space,
}

fn write_row(s: &mut String, label: &str, cols: &[Col<'_>], value: impl Fn(&Col<'_>) -> Option<i32>, pad: Pad) {
    let _ = write!(s, " {label:<3} ");
    for c in cols {
        let _ = match (value(c), pad) {
            (Some(v), Pad::Zero | Pad::ZeroWind) if (0..=99).contains(&v) => write!(s, " {v:02}"),
            (Some(v), _) if (-99..=999).contains(&v) => write!(s, "{v:>3}"),
            (_, Pad::ZeroWind) => write!(s, " 99"),
            _ => write!(s, "999"),
        };
    }
    end_row(s);
}

/// LAMP gusts: `NG` (no gust) when the column has a row but no gust.
fn write_gust_row(s: &mut String, cols: &[Col<'_>]) {
    s.push_str(" WGS ");
    for c in cols {
        let _ = match c.row.map(|r| speed_kt(r.wind_gusts_mph, r.wind_gusts_kmh)) {
            Some(Some(v)) if (0..=99).contains(&v) => write!(s, " {v:02}"),
            Some(Some(v)) if v <= 200 => write!(s, "{v:>3}"),
            Some(_) => write!(s, " NG"),
            None => write!(s, "999"),
        };
    }
    end_row(s);
}

/// MAV/MET/LAMP cloud category from a percentage, by nearest representative value of
/// the decoder's mapping (so decode → encode reproduces the category).
fn write_cloud_row(s: &mut String, cols: &[Col<'_>]) {
    s.push_str(" CLD ");
    for c in cols {
        let cat = match c.row.and_then(|r| r.cloud_cover.get()) {
            Some(p) if p < 12.5 => " CL",
            Some(p) if p < 37.5 => " FW",
            Some(p) if p < 65.0 => " SC",
            Some(p) if p < 90.0 => " BK",
            Some(_) => " OV",
            None => "999",
        };
        s.push_str(cat);
    }
    end_row(s);
}

fn end_row(s: &mut String) {
    let keep = s.trim_end_matches(' ').len();
    s.truncate(keep);
    s.push('\n');
}

fn row_temp_f(r: &ForecastRow) -> Option<f64> {
    r.temperature_f.get().or(r.temperature_c.get().map(c_to_f)).or(r.temperature_k.get().map(|k| c_to_f(k - 273.15)))
}

/// Whole °F that fits a 3-character cell and is not a missing marker.
fn temp_cell(f: f64) -> Option<i32> {
    let v = f.round();
    (v.is_finite() && (-98.0..=140.0).contains(&v)).then_some(v as i32)
}

fn speed_kt(mph: OptF64, kmh: OptF64) -> Option<i32> {
    let kt = mph.get().map(|m| m / kt_to_mph(1.0)).or(kmh.get().map(|k| k / kt_to_kmh(1.0)))?;
    let v = kt.round();
    (v.is_finite() && (0.0..=150.0).contains(&v)).then_some(v as i32)
}

/// Tens of degrees, 36 for north and 00 only for calm, as MOS writes it.
fn wdr_cell(r: &ForecastRow) -> Option<i32> {
    let deg = r.wind_direction_deg?;
    let calm = speed_kt(r.wind_speed_mph, r.wind_speed_kmh) == Some(0);
    let tens = ((f64::from(deg.rem_euclid(360)) / 10.0).round() as i32) % 36;
    Some(if calm {
        0
    } else if tens == 0 {
        36
    } else {
        tens
    })
}

/// The `DT` row: `/MON  D` markers where the date changes, the first one only when it
/// fits before the second, a marker that runs past the last column cut to `/` — the
/// way the NWS writes it.
fn dt_row(cols: &[Col<'_>]) -> String {
    const MONTHS: [&str; 12] = ["JAN", "FEB", "MAR", "APR", "MAY", "JUNE", "JULY", "AUG", "SEPT", "OCT", "NOV", "DEC"];
    let width = 4 + 3 * cols.len();
    let marker = |t: DateTime<Utc>| {
        let m = MONTHS.get(t.month0() as usize).unwrap_or(&"JAN");
        format!("/{m:<4}{:>3}", t.day())
    };
    let changes: Vec<(usize, DateTime<Utc>)> = cols
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0].valid.date_naive() != w[1].valid.date_naive())
        .map(|(k, w)| (4 + 3 * (k + 1) + 1, w[1].valid))
        .collect();
    let mut s = String::from("DT ");
    if let Some(first) = cols.first() {
        if changes.first().is_none_or(|(pos, _)| *pos >= 11) {
            s.push_str(&marker(first.valid));
        }
    }
    for (pos, t) in changes {
        while s.len() < pos {
            s.push(' ');
        }
        let m = marker(t);
        if s.len() + m.len() <= width {
            s.push_str(&m);
        } else {
            s.push('/');
        }
    }
    s
}

#[cfg(test)]
mod tests;
