//! The containers METAR reports arrive in, and how each one dates its reports.
//!
//! A METAR stamps only day-of-month, hour and minute (`DDHHMMZ`), so every container has to
//! supply the year and month. Each does it differently: IEM/generic CSVs and NOAA LCD carry a
//! timestamp column, aviationweather.gov JSON an epoch `obsTime` and its cache CSV an
//! `observation_time` column after the data server's status lines, WMO collectives a
//! `DDHHMM` bulletin header (month from `--month` or today), and bare lines only `--month`.
//! `ingest metar` calls [`decode_metar_input`], which sniffs the container with [`detect`]
//! so operators never have to say what they are feeding in.

use chrono::{DateTime, Utc};

use crate::decode::text::input_text;
use crate::decode::types::{Decoded, Metar};

mod awc_cache;
mod awc_json;
mod bare_lines;
mod collective;
mod dating;
mod delimited;
mod report;

pub use awc_cache::decode_awc_cache;
use awc_cache::is_preamble_line;
pub use awc_json::decode_awc_json;
pub use bare_lines::decode_bare_lines;
pub use collective::decode_collective;
use collective::parse_wmo_header;
pub use delimited::decode_delimited;
pub(crate) use delimited::decode_rows;
use delimited::delimited_kind;
use report::clean_line;

/// The input layouts `ingest metar` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetarContainer {
    /// IEM ASOS CSV/TSV export (or any CSV/TSV with a METAR text column and a time column).
    IemDelimited,
    /// NOAA Local Climatological Data CSV (`REPORT_TYPE` + `REM` columns).
    Lcd,
    /// aviationweather.gov data API JSON (`rawOb`, `obsTime`, ...).
    AwcJson,
    /// aviationweather.gov cache CSV (`metars.cache.csv`): status lines, then `raw_text`,
    /// `observation_time`, ... columns.
    AwcCache,
    /// WMO bulletin(s) (`SAUS70 KWBC 011200`) with `=`-terminated reports.
    Collective,
    /// One report per line, nothing else.
    BareLines,
}

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
        if is_preamble_line(first) {
            return MetarContainer::AwcCache;
        }
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
        MetarContainer::AwcCache => decode_awc_cache(&text),
        MetarContainer::Collective => decode_collective(&text, month_hint, now),
        MetarContainer::BareLines => decode_bare_lines(&text, month_hint, now),
    }
}

#[cfg(test)]
mod tests;
