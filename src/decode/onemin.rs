//! One-minute ASOS temperatures, as IEM's `asos1min` service exports them: a CSV whose
//! header names `station`, `valid` (UTC) and `tmpf` (°F), in any order, among other
//! columns. One-minute data is what confirms a whole-degree METAR reading to the exact
//! integer °F, so gaps matter: the `-999` sentinel becomes a kept row with `temp_f: None`.

use super::metar_container::decode_rows;
use super::timestamp::parse_timestamp;
use crate::decode::limits::ONEMIN_LINE;
use crate::decode::text::{input_text, quote};
use crate::decode::types::{Decoded, OneMinute};
use chrono::Timelike;
use std::borrow::Cow;
use std::fmt::Write as _;

/// Header names accepted for each required column (compared after [`normalise_column`]).
const STATION_COLUMNS: &[&str] = &["station", "station_id", "icao", "id"];
const TIME_COLUMNS: &[&str] = &["valid", "valid_utc", "utc_valid", "time", "timestamp", "datetime"];
const TEMP_COLUMNS: &[&str] = &["tmpf", "temp_f", "tmp_f", "temperature_f"];

/// Values at or below this are missing-data sentinels (-999, -9999), not temperatures.
const SENTINEL_MAX: f64 = -900.0;
/// Plausible surface air temperature range in °F (records: -80 °F Alaska, 134 °F Death
/// Valley); anything else, including unknown sentinels like -99, is corrupt input.
const PLAUSIBLE_F: (f64, f64) = (-90.0, 140.0);

/// Where the three columns sit in this file's rows.
struct Columns {
    station: usize,
    valid: usize,
    tmpf: usize,
    needed: usize,
}

/// Decodes a one-minute temperature CSV. Rows that cannot be read are reported by line;
/// missing temperatures (`-999`, `M`, empty) are kept as gaps, because a gap is information
/// the daily-extreme logic needs (an unconfirmed minute is not a confirmed one). Lines
/// longer than [`ONEMIN_LINE`] are rejected; input that is not UTF-8 text is refused whole.
pub fn decode_onemin(bytes: &[u8]) -> Decoded<OneMinute> {
    let text = match input_text(bytes) {
        Ok(t) => t,
        Err(e) => return Decoded::refused(e.to_string()),
    };
    decode_rows(&text, ONEMIN_LINE, header_columns, |fields, cols| decode_row(fields, cols).map(Some))
}

/// Writes rows in the same `station,valid,tmpf` layout `decode_onemin` reads, with `-999`
/// for gaps, so generated demo data goes through the real decoder.
pub fn encode_onemin_csv(rows: &[OneMinute]) -> String {
    let mut s = String::with_capacity(20 + rows.len() * 32);
    s.push_str("station,valid,tmpf\n");
    for row in rows {
        push_field(&mut s, &row.station);
        s.push(',');
        let fmt = if row.time.nanosecond() != 0 {
            "%Y-%m-%d %H:%M:%S%.f"
        } else if row.time.second() != 0 {
            "%Y-%m-%d %H:%M:%S"
        } else {
            "%Y-%m-%d %H:%M"
        };
        let _ = write!(s, "{}", row.time.format(fmt));
        s.push(',');
        match row.temp_f {
            Some(t) => {
                let _ = write!(s, "{t}");
            }
            None => s.push_str("-999"),
        }
        s.push('\n');
    }
    s
}

/// CSV-quotes a field only when it needs it (station ids never do in practice).
fn push_field(s: &mut String, field: &str) {
    if field.contains([',', '"', '\n', '\r']) {
        s.push('"');
        s.push_str(&field.replace('"', "\"\""));
        s.push('"');
    } else {
        s.push_str(field);
    }
}

/// One data row to a record, or why not.
fn decode_row(fields: &[Cow<'_, str>], c: &Columns) -> Result<OneMinute, String> {
    if fields.len() < c.needed {
        return Err(format!("expected at least {} columns, found {}", c.needed, fields.len()));
    }
    let field = |i: usize| fields.get(i).map_or("", |f| f.trim());
    let station = normalise_station(field(c.station))?;
    let valid = field(c.valid);
    let time = parse_timestamp(valid).ok_or_else(|| format!("bad valid time '{}'", clip(valid)))?;
    let temp_f = parse_tmpf(field(c.tmpf))?;
    Ok(OneMinute { station, time, temp_f })
}

/// Finds the three columns in the header row; a header without them means the file is
/// not a one-minute export, which is one error for the whole input.
fn header_columns(header: &[Cow<'_, str>]) -> Result<Columns, String> {
    let find = |names: &[&str]| header.iter().position(|h| names.contains(&normalise_column(h).as_str()));
    let missing = |what: &str| format!("header lacks a '{what}' column");
    let station = find(STATION_COLUMNS).ok_or_else(|| missing("station"))?;
    let valid = find(TIME_COLUMNS).ok_or_else(|| missing("valid"))?;
    let tmpf = find(TEMP_COLUMNS).ok_or_else(|| missing("tmpf"))?;
    let needed = station.max(valid).max(tmpf) + 1;
    Ok(Columns { station, valid, tmpf, needed })
}

/// Lower-cases a header name and drops a unit suffix such as IEM's `valid(UTC)`.
fn normalise_column(h: &str) -> String {
    let h = h.trim().trim_matches('"');
    let h = h.split('(').next().unwrap_or(h).trim();
    h.to_ascii_lowercase()
}

/// Station id as given, upper-cased; IEM drops the K of US stations, so a bare
/// three-letter id gets it back (CVG → KCVG) to match the METAR station ids.
fn normalise_station(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty station".into());
    }
    if s.len() > 5 || !s.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!("bad station '{}'", clip(s)));
    }
    let up = s.to_ascii_uppercase();
    if up.len() == 3 && up.bytes().all(|b| b.is_ascii_alphabetic()) {
        Ok(format!("K{up}"))
    } else {
        Ok(up)
    }
}

/// `tmpf` to °F: missing markers give `Ok(None)`, corrupt values an error.
fn parse_tmpf(s: &str) -> Result<Option<f64>, String> {
    let s = s.trim();
    if s.is_empty() || s.eq_ignore_ascii_case("M") || s.eq_ignore_ascii_case("NA") {
        return Ok(None);
    }
    let v: f64 = s.parse().map_err(|_| format!("bad tmpf '{}'", clip(s)))?;
    if v <= SENTINEL_MAX {
        return Ok(None);
    }
    if !v.is_finite() || v < PLAUSIBLE_F.0 || v > PLAUSIBLE_F.1 {
        return Err(format!("implausible tmpf '{}'", clip(s)));
    }
    Ok(Some(v))
}

/// At most 24 characters of a bad value, control characters escaped, so a reason never
/// carries a whole line or raw bytes.
fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    quote(s, 24)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    /// Realistic IEM-style export (extra columns, `valid(UTC)` header, one-minute rows),
    /// with a -999 run, `M`, an empty value, and broken rows.
    const FIXTURE: &str = "\
station,station_name,valid(UTC),tmpf,dwpf
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:00,41.0,30.0
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:01,41.0,30.0
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:02,-999,30.0
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:03,-999.0,-999
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:04,M,M
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:05,,30.0
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:06,40.0,30.0
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:07
NYC,NEW YORK CNTRL PK TWR,2024-03-01 25:08,40.0,30.0
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:09,abc,30.0

# comment line ignored
,NO STATION,2024-03-01 05:10,40.0,30.0
NYC,NEW YORK CNTRL PK TWR,2024-03-01 05:11,412.0,30.0
KNYC,NEW YORK CNTRL PK TWR,2024-03-01T05:12:00Z,39.9,30.0
";

    fn at(h: u32, m: u32) -> chrono::DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 3, 1, h, m, 0).unwrap()
    }

    #[test]
    fn fixture_rows_gaps_and_errors() {
        let d = decode_onemin(FIXTURE.as_bytes());
        // 16 physical lines; rows on lines 2-8 and 16 decode (8), lines 9, 10, 11, 14, 15 fail.
        assert_eq!(d.read, 16);
        assert_eq!(d.records.len(), 8);
        let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![9, 10, 11, 14, 15], "{:?}", d.errors);
        assert!(d.errors[0].reason.contains("columns"));
        assert!(d.errors[1].reason.contains("bad valid time"));
        assert!(d.errors[2].reason.contains("bad tmpf 'abc'"));
        assert_eq!(d.errors[3].reason, "empty station");
        assert!(d.errors[4].reason.contains("implausible"));
        // Line 2: NYC 05:00 41.0 -> KNYC.
        assert_eq!(d.records[0], OneMinute { station: "KNYC".into(), time: at(5, 0), temp_f: Some(41.0) });
        // Lines 4-7: -999, -999.0, M and empty are kept as gaps.
        let gaps: Vec<_> = d.records[2..6].iter().map(|r| (r.time, r.temp_f)).collect();
        assert_eq!(gaps, vec![(at(5, 2), None), (at(5, 3), None), (at(5, 4), None), (at(5, 5), None)]);
        // Line 16: ISO 8601 with Z, 4-letter id kept as given.
        assert_eq!(d.records[7], OneMinute { station: "KNYC".into(), time: at(5, 12), temp_f: Some(39.9) });
    }

    #[test]
    fn column_order_and_seconds() {
        let csv = "tmpf,valid,station\n-999,2024-01-02 03:04:05,DSM\n12.5,2024-01-02 03:05:00,PHNL\n";
        let d = decode_onemin(csv.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records[0].station, "KDSM");
        assert_eq!(d.records[0].time, Utc.with_ymd_and_hms(2024, 1, 2, 3, 4, 5).unwrap());
        assert_eq!(d.records[0].temp_f, None);
        assert_eq!(d.records[1].station, "PHNL");
        assert_eq!(d.records[1].temp_f, Some(12.5));
    }

    #[test]
    fn missing_header_column_is_one_error() {
        let d = decode_onemin(b"station,valid,dwpf\nNYC,2024-03-01 05:00,30\n");
        assert!(d.records.is_empty());
        assert_eq!(d.errors.len(), 1);
        assert_eq!(d.errors[0].line, 1);
        assert_eq!(d.errors[0].reason, "header lacks a 'tmpf' column");
    }

    /// UTF-16 input (a spreadsheet saved as "Unicode text") used to be reported as a
    /// header without a station column; it is named for what it is.
    #[test]
    fn utf16_input_is_named_not_a_missing_column() {
        for (bom, le) in [(&[0xFF, 0xFE][..], true), (&[][..], true), (&[0xFE, 0xFF][..], false)] {
            let body = FIXTURE.encode_utf16().flat_map(|u| if le { u.to_le_bytes() } else { u.to_be_bytes() });
            let bytes: Vec<u8> = bom.iter().copied().chain(body).collect();
            let d = decode_onemin(&bytes);
            assert_eq!((d.records.len(), d.errors.len()), (0, 1), "{:?}", d.errors);
            let want = if le { "input is UTF-16LE text" } else { "input is UTF-16BE text" };
            assert!(d.errors[0].reason.starts_with(want), "{:?}", d.errors);
            assert!(!d.errors[0].reason.contains("column"), "{:?}", d.errors);
        }
    }

    #[test]
    fn over_long_line_is_rejected_with_its_length() {
        let csv =
            format!("station,valid,tmpf\nNYC,2024-03-01 05:00,41,{}\nNYC,2024-03-01 05:01,42\n", "x".repeat(5000));
        let d = decode_onemin(csv.as_bytes());
        assert_eq!(d.records.len(), 1);
        assert_eq!(d.errors.len(), 1);
        assert_eq!(
            (d.errors[0].line, d.errors[0].reason.as_str()),
            (2, "one-minute CSV line of 5024 bytes is longer than the 4096-byte limit")
        );
    }

    #[test]
    fn round_trip() {
        let rows = vec![
            OneMinute { station: "KNYC".into(), time: at(5, 0), temp_f: Some(41.0) },
            OneMinute { station: "KNYC".into(), time: at(5, 1), temp_f: None },
            OneMinute { station: "KMDW".into(), time: at(5, 2), temp_f: Some(-3.5) },
            OneMinute {
                station: "KMDW".into(),
                time: Utc.with_ymd_and_hms(2024, 3, 1, 5, 3, 7).unwrap(),
                temp_f: Some(0.1),
            },
        ];
        let csv = encode_onemin_csv(&rows);
        assert!(csv.starts_with("station,valid,tmpf\nKNYC,2024-03-01 05:00,41\n"));
        assert!(csv.contains("KNYC,2024-03-01 05:01,-999\n"));
        let d = decode_onemin(csv.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records, rows);
    }

    #[test]
    fn garbage_never_panics() {
        let inputs: [&[u8]; 6] = [
            b"",
            b"\0\0\0\xff\xfe",
            b"station,valid,tmpf\n\xff\xfe,\0,\x01\n",
            b"station,valid,tmpf\n\"NYC,2024-03-01 05:00,41\n",
            b"station\tvalid\ttmpf\nNYC\t2024-03-01 05:00\t41\n",
            b"station,valid,tmpf\nNYC,2024-03-01 05:\xc3\xa9,41\n",
        ];
        for input in inputs {
            let d = decode_onemin(input);
            assert!(d.records.len() <= 1);
        }
        let tab = decode_onemin(inputs[4]);
        assert_eq!(tab.records.len(), 1);
        let bad = decode_onemin(inputs[2]);
        assert_eq!(bad.errors.len(), 1);
        assert_eq!(bad.errors[0].line, 2);
    }
}
