//! Forecasts published as a day's high and low only (the NWS point forecast's "High near
//! 75", MOS X/N, NBM TXN, a commercial daily forecast), in wxlake's own CSV:
//!
//! ```text
//! source,station_code,issued_at,date,high,low,units
//! NWS-POINT,KNYC,2026-03-09T20:05:00Z,2026-03-10,75,58,f
//! ```
//!
//! `source` is a name of capitals, digits and `-` that is not one of the 18 model names
//! (a model's own runs come as forecast rows); `issued_at` is ISO 8601 with its offset
//! (UTC), which is also when the forecast became available; `date` the settlement day it
//! forecasts; `high` and `low` numbers, either may be empty but not both; `units` `f` or
//! `c`. The header must be exactly this (a file of another shape is refused whole, not
//! read column by column into the wrong places); each bad row is rejected with its line.

use std::borrow::Cow;

use chrono::{DateTime, Days, NaiveDate, Utc};

use super::metar_container::decode_rows;
use super::timestamp::{parse_local, parse_timestamp};
use crate::decode::limits::FORECAST_ROW;
use crate::decode::text::input_text;
use crate::decode::types::{DailyForecast, Decoded};
use crate::models::{MODEL_NAMES, NWS_HOURLY_SOURCE};
use crate::units::Units;

/// The header, in order.
pub const HEADER: [&str; 7] = ["source", "station_code", "issued_at", "date", "high", "low", "units"];

/// Longest source name.
const SOURCE_MAX: usize = 32;

/// Furthest ahead of its issuance a forecast's day may be.
const MAX_AHEAD_DAYS: i64 = 366;

/// Plausible daily extremes (°F and °C): anything else is a broken file, not weather.
const PLAUSIBLE_F: std::ops::RangeInclusive<f64> = -100.0..=150.0;
const PLAUSIBLE_C: std::ops::RangeInclusive<f64> = -75.0..=66.0;

/// Decodes a daily-forecasts CSV (module docs).
pub fn decode_daily_forecasts(bytes: &[u8]) -> Decoded<DailyForecast> {
    let text = match input_text(bytes) {
        Ok(t) => t,
        Err(e) => return Decoded::refused(e.to_string()),
    };
    decode_rows(&text, FORECAST_ROW, header, |fields, ()| row(fields).map(Some))
}

fn header(fields: &[Cow<'_, str>]) -> Result<(), String> {
    let got: Vec<&str> = fields.iter().map(|f| f.trim()).collect();
    if got == HEADER {
        Ok(())
    } else {
        Err(format!("the header must be `{}`, found `{}`", HEADER.join(","), got.join(",")))
    }
}

fn row(fields: &[Cow<'_, str>]) -> Result<DailyForecast, String> {
    if fields.len() != HEADER.len() {
        return Err(format!("expected {} fields, found {}", HEADER.len(), fields.len()));
    }
    let f = |i: usize| fields[i].trim();
    let source = f(0);
    if source.is_empty()
        || source.len() > SOURCE_MAX
        || !source.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(format!("source `{source}`: 1 to {SOURCE_MAX} capitals, digits and `-`"));
    }
    if MODEL_NAMES.contains(&source) {
        return Err(format!("source `{source}` is a model: its runs are forecast rows, not daily forecasts"));
    }
    if source == NWS_HOURLY_SOURCE {
        return Err(format!(
            "source `{source}` names the NWS hourly forecast: name a daily one otherwise (NWS-POINT, MOS-GFS)"
        ));
    }
    let station = f(1).to_ascii_uppercase();
    if station.is_empty() || station.len() > 12 || !station.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!("station_code `{}`: a station code such as KNYC", f(1)));
    }
    // An offset must be written: a time without one names no instant.
    let issued_at: DateTime<Utc> = match parse_local(f(2)).and_then(|(_, offset)| offset).and(parse_timestamp(f(2))) {
        Some(t) => t,
        None => return Err(format!("issued_at `{}`: ISO 8601 with its offset, e.g. 2026-03-09T20:05:00Z", f(2))),
    };
    let date = NaiveDate::parse_from_str(f(3), "%Y-%m-%d").map_err(|_| format!("date `{}`: YYYY-MM-DD", f(3)))?;
    let units = match f(6) {
        "f" | "F" => Units::Fahrenheit,
        "c" | "C" => Units::Celsius,
        other => return Err(format!("units `{other}`: f or c")),
    };
    let plausible = if units == Units::Fahrenheit { PLAUSIBLE_F } else { PLAUSIBLE_C };
    let value = |i: usize, name: &str| -> Result<Option<f64>, String> {
        if f(i).is_empty() {
            return Ok(None);
        }
        match f(i).parse::<f64>() {
            Ok(v) if plausible.contains(&v) => Ok(Some(v)),
            _ => Err(format!("{name} `{}`: a temperature in {}", f(i), units.as_str())),
        }
    };
    let (high, low) = (value(4, "high")?, value(5, "low")?);
    match (high, low) {
        (None, None) => return Err("neither high nor low".into()),
        (Some(h), Some(l)) if h < l => return Err(format!("high {h} below low {l}")),
        _ => {}
    }
    // A forecast issued after its day ended everywhere (12:00 UTC the next day: the last
    // zone's midnight) is an observation; one issued more than a year ahead is no forecast.
    if (date - issued_at.date_naive()).num_days() > MAX_AHEAD_DAYS {
        return Err(format!("date {date} is more than {MAX_AHEAD_DAYS} days after issued_at {issued_at}"));
    }
    let ended = date.checked_add_days(Days::new(1)).and_then(|d| d.and_hms_opt(12, 0, 0)).map(|t| t.and_utc());
    if ended.is_none_or(|end| issued_at >= end) {
        return Err(format!("issued_at {issued_at} is after the day {date} it forecasts"));
    }
    Ok(DailyForecast { source: source.to_string(), station, issued_at, date, high, low, units })
}

/// Writes rows in the layout [`decode_daily_forecasts`] reads (the demo's and tests'
/// inputs go through the real decoder).
pub fn encode_daily_forecasts_csv(rows: &[DailyForecast]) -> String {
    let mut s = HEADER.join(",");
    s.push('\n');
    let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            r.source,
            r.station,
            r.issued_at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            r.date,
            num(r.high),
            num(r.low),
            if r.units == Units::Fahrenheit { "f" } else { "c" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "source,station_code,issued_at,date,high,low,units\n\
        NWS-POINT,KNYC,2026-03-09T20:05:00Z,2026-03-10,75,58,f\n\
        ACME-2,EGLC,2026-03-09T21:00:00+01:00,2026-03-10,,4.5,c\n";

    #[test]
    fn rows_decode_with_their_times_and_units() {
        let d = decode_daily_forecasts(GOOD.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records.len(), 2);
        let (a, b) = (&d.records[0], &d.records[1]);
        assert_eq!(
            (a.source.as_str(), a.station.as_str(), a.high, a.low),
            ("NWS-POINT", "KNYC", Some(75.0), Some(58.0))
        );
        assert_eq!(a.units, Units::Fahrenheit);
        assert_eq!(b.issued_at.to_rfc3339(), "2026-03-09T20:00:00+00:00", "the offset applied");
        assert_eq!((b.high, b.low, b.units), (None, Some(4.5), Units::Celsius));
        let again = decode_daily_forecasts(encode_daily_forecasts_csv(&d.records).as_bytes());
        assert_eq!(again.records, d.records);
    }

    #[test]
    fn each_bad_row_is_rejected_with_its_reason() {
        let header = "source,station_code,issued_at,date,high,low,units\n";
        let cases = [
            ("nws,KNYC,2026-03-09T20:05:00Z,2026-03-10,75,58,f", "capitals"),
            ("GFS,KNYC,2026-03-09T20:05:00Z,2026-03-10,75,58,f", "is a model"),
            ("NWS,KNYC,2026-03-09T20:05:00Z,2026-03-10,75,58,f", "names the NWS hourly forecast"),
            ("NWS-POINT,K NYC,2026-03-09T20:05:00Z,2026-03-10,75,58,f", "station_code"),
            ("NWS-POINT,KNYC,2026-03-09 20:05,2026-03-10,75,58,f", "with its offset"),
            ("NWS-POINT,KNYC,2026-03-09T20:05:00Z,10/03/2026,75,58,f", "YYYY-MM-DD"),
            ("NWS-POINT,KNYC,2026-03-09T20:05:00Z,2026-03-10,,,f", "neither"),
            ("NWS-POINT,KNYC,2026-03-09T20:05:00Z,2026-03-10,50,58,f", "below low"),
            ("NWS-POINT,KNYC,2026-03-09T20:05:00Z,2026-03-10,75,58,k", "f or c"),
            ("NWS-POINT,KNYC,2026-03-09T20:05:00Z,2026-03-10,750,58,f", "a temperature in"),
            ("NWS-POINT,KNYC,2026-03-09T20:05:00Z,2026-03-10,warm,58,f", "a temperature in"),
            ("NWS-POINT,KNYC,2026-03-11T12:00:00Z,2026-03-10,75,58,f", "after the day"),
            ("NWS-POINT,KNYC,2026-03-09T20:05:00Z,+262142-12-31,75,58,f", "days after issued_at"),
            ("NWS-POINT,KNYC,2026-03-09T20:05:00 UTC,2027-06-10,75,58,f", "days after issued_at"),
            ("NWS-POINT,KNYC,2026-03-09T20:05:00Z,2026-03-10,75,58", "expected 7 fields"),
        ];
        for (line, says) in cases {
            let d = decode_daily_forecasts(format!("{header}{line}\n").as_bytes());
            assert!(d.records.is_empty(), "{line}");
            assert_eq!(d.errors.len(), 1, "{line}");
            assert_eq!(d.errors[0].line, 2, "{line}");
            assert!(d.errors[0].reason.contains(says), "{line}: {}", d.errors[0].reason);
        }
        let wrong = decode_daily_forecasts(b"station,date,high\nKNYC,2026-03-10,75\n");
        assert!(wrong.records.is_empty() && wrong.errors[0].reason.contains("the header must be"));
    }
}
