//! api.weather.gov hourly point forecasts (`/gridpoints/{wfo}/{x},{y}/forecast/hourly`),
//! and the raw gridpoint product (`/gridpoints/{wfo}/{x},{y}`) they are made from, into
//! one [`NwsHourlyForecast`] version in °F.
//!
//! Shapes handled: GeoJSON `properties.periods` with `startTime`/`endTime` carrying
//! offsets and `temperature` as a number with `temperatureUnit` (F or C), or as an object
//! `{unitCode, value}` (newer API versions); the raw gridpoint's
//! `properties.temperature.values`, each `{validTime: "<start>/<ISO 8601 duration>", value}`
//! in `uom` (°C), expanded to one period per hour.
//!
//! The forecast is one unit: a malformed period fails the whole document (a version with
//! silently missing hours would change the day's forecast high). A null temperature is an
//! hour the NWS does not forecast and is left out.

use chrono::{DateTime, Duration, Timelike, Utc};
use chrono_tz::Tz;
use serde_json::{json, Map, Value};

use super::timestamp::parse_timestamp;
use crate::decode::text::input_text;
use crate::decode::types::{NwsHourlyForecast, NwsHourlyPeriod};
use crate::units::c_to_f;

/// Temperatures outside this °F range are not a forecast but a broken document.
const PLAUSIBLE_F: std::ops::RangeInclusive<f64> = -100.0..=150.0;

/// Longest raw-grid validity we expand (hours): the product covers about a week.
const MAX_SPAN_H: i64 = 24 * 31;

/// Decodes one hourly forecast document (either shape). `generated_at` is `generatedAt`,
/// else `updateTime` (the raw gridpoint has only that). `station` is left `None`: the
/// document names a grid cell, not a station; the caller sets it.
pub fn decode_nws_hourly(bytes: &[u8]) -> Result<NwsHourlyForecast, String> {
    let text = input_text(bytes).map_err(|e| e.to_string())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let root: Value = serde_json::from_str(text).map_err(|e| format!("bad JSON: {e}"))?;
    let props = match root.get("properties") {
        Some(Value::Object(p)) => p,
        _ => root.as_object().ok_or("expected a JSON object")?,
    };
    let generated_at = generated_at(props)?;
    let periods = if let Some(periods) = props.get("periods") {
        hourly_periods(props, periods)?
    } else if let Some(grid) = props.get("temperature").filter(|t| t.get("values").is_some()) {
        grid_periods(grid)?
    } else {
        return Err("no periods and no temperature grid".into());
    };
    if periods.is_empty() {
        return Err("no period has a temperature".into());
    }
    Ok(NwsHourlyForecast { station: None, generated_at, periods })
}

fn generated_at(props: &Map<String, Value>) -> Result<DateTime<Utc>, String> {
    let (key, text) = ["generatedAt", "updateTime"]
        .iter()
        .find_map(|k| Some((*k, props.get(*k)?.as_str()?)))
        .ok_or("no generatedAt or updateTime")?;
    parse_timestamp(text).ok_or_else(|| format!("bad {key} '{}'", clip(text)))
}

/// `properties.periods` of the hourly forecast.
fn hourly_periods(props: &Map<String, Value>, periods: &Value) -> Result<Vec<NwsHourlyPeriod>, String> {
    let periods = periods.as_array().ok_or("periods is not an array")?;
    // `units: si` documents give °C when a period does not name its unit.
    let default_unit = props.get("units").and_then(Value::as_str).map(|u| if u == "si" { "C" } else { "F" });
    let mut out = Vec::with_capacity(periods.len());
    for (i, p) in periods.iter().enumerate() {
        let number = p.get("number").and_then(Value::as_u64).unwrap_or(i as u64 + 1);
        match period(p, default_unit) {
            Ok(Some(period)) => out.push(period),
            Ok(None) => {}
            Err(reason) => return Err(format!("period {number}: {reason}")),
        }
    }
    Ok(out)
}

fn period(p: &Value, default_unit: Option<&str>) -> Result<Option<NwsHourlyPeriod>, String> {
    let start_time = time_field(p, "startTime")?;
    let end_time = time_field(p, "endTime")?;
    if end_time <= start_time {
        return Err("endTime not after startTime".into());
    }
    let (value, unit) = match p.get("temperature") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => (n.as_f64(), p.get("temperatureUnit").and_then(Value::as_str)),
        Some(Value::Object(o)) => match o.get("value") {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => (v.as_f64(), o.get("unitCode").and_then(Value::as_str)),
        },
        Some(other) => return Err(format!("temperature is not a number: {}", clip(&other.to_string()))),
    };
    let value = value.ok_or("temperature is not a number")?;
    let unit = unit.or(default_unit).ok_or("temperature has no unit")?;
    let temperature_f = to_f(value, unit)?;
    Ok(Some(NwsHourlyPeriod { start_time, end_time, temperature_f }))
}

fn time_field(p: &Value, key: &str) -> Result<DateTime<Utc>, String> {
    let text = p.get(key).and_then(Value::as_str).ok_or_else(|| format!("no {key}"))?;
    parse_timestamp(text).ok_or_else(|| format!("bad {key} '{}'", clip(text)))
}

/// A temperature in °F. °C is converted and rounded to hundredths: NWS °C values are
/// conversions of whole °F (22.777… °C), and rounding removes the float residue
/// (73.00000000000001) without touching any real digit.
fn to_f(value: f64, unit: &str) -> Result<f64, String> {
    let f = match unit.rsplit(':').next().unwrap_or(unit) {
        "F" | "degF" => value,
        "C" | "degC" => (c_to_f(value) * 100.0).round() / 100.0,
        other => return Err(format!("unknown temperature unit '{}'", clip(other))),
    };
    if PLAUSIBLE_F.contains(&f) {
        Ok(f)
    } else {
        Err(format!("temperature {f} F out of range"))
    }
}

/// The raw gridpoint's `temperature` layer, expanded to hourly periods.
fn grid_periods(grid: &Value) -> Result<Vec<NwsHourlyPeriod>, String> {
    let unit = grid.get("uom").and_then(Value::as_str).unwrap_or("wmoUnit:degC");
    let values = grid.get("values").and_then(Value::as_array).ok_or("temperature.values is not an array")?;
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let entry = |reason: String| format!("temperature value {}: {reason}", i + 1);
        let valid = v.get("validTime").and_then(Value::as_str).ok_or_else(|| entry("no validTime".into()))?;
        let (start, hours) = interval(valid).map_err(entry)?;
        let value = match v.get("value") {
            None | Some(Value::Null) => continue,
            Some(x) => x.as_f64().ok_or_else(|| entry("value is not a number".into()))?,
        };
        let temperature_f = to_f(value, unit).map_err(entry)?;
        for h in 0..hours {
            let start_time = start.checked_add_signed(Duration::hours(h));
            let end_time = start.checked_add_signed(Duration::hours(h + 1));
            let (Some(start_time), Some(end_time)) = (start_time, end_time) else {
                return Err(entry("time out of range".into()));
            };
            out.push(NwsHourlyPeriod { start_time, end_time, temperature_f });
        }
    }
    Ok(out)
}

/// `2022-02-04T10:00:00+00:00/PT2H` → (start, whole hours).
fn interval(valid: &str) -> Result<(DateTime<Utc>, i64), String> {
    let (start, duration) = valid.split_once('/').ok_or_else(|| format!("bad validTime '{}'", clip(valid)))?;
    let start = parse_timestamp(start).ok_or_else(|| format!("bad validTime '{}'", clip(valid)))?;
    let seconds = duration_seconds(duration).ok_or_else(|| format!("bad duration '{}'", clip(duration)))?;
    if seconds <= 0 || seconds % 3600 != 0 || seconds > MAX_SPAN_H * 3600 {
        return Err(format!("duration '{}' is not whole hours", clip(duration)));
    }
    Ok((start, seconds / 3600))
}

/// ISO 8601 duration `P[nW][nD][T[nH][nM][nS]]` in seconds (no years or months: they
/// have no fixed length, and the NWS does not use them).
fn duration_seconds(s: &str) -> Option<i64> {
    let rest = s.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d, Some(t)),
        Some(_) => return None,
        None => (rest, None),
    };
    let mut total = 0i64;
    let mut any = false;
    for (part, units) in
        [(date, &[('W', 604_800), ('D', 86_400)][..]), (time.unwrap_or(""), &[('H', 3600), ('M', 60), ('S', 1)][..])]
    {
        let mut rest = part;
        let mut allowed = units;
        while !rest.is_empty() {
            let n = rest.bytes().take_while(u8::is_ascii_digit).count();
            let value: i64 = rest.get(..n)?.parse().ok()?;
            let designator = rest.get(n..)?.chars().next()?;
            let pos = allowed.iter().position(|(c, _)| *c == designator)?;
            total = total.checked_add(value.checked_mul(allowed[pos].1)?)?;
            allowed = &allowed[pos + 1..];
            rest = rest.get(n + 1..)?;
            any = true;
        }
    }
    any.then_some(total)
}

/// Writes the forecast in the api.weather.gov hourly shape, times in `tz` with their
/// offsets, temperatures in °F (whole degrees as integers, as the NWS writes them).
/// `isDaytime` is approximated as 06:00–17:59 local (the NWS uses sunrise and sunset;
/// nothing here reads it). `updateTime` repeats `generatedAt`, the only time we keep.
pub fn encode_nws_hourly(f: &NwsHourlyForecast, tz: Tz) -> String {
    let periods: Vec<Value> = f
        .periods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let start = p.start_time.with_timezone(&tz);
            json!({
                "number": i + 1,
                "startTime": start.format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
                "endTime": p.end_time.with_timezone(&tz).format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
                "isDaytime": (6..18).contains(&start.hour()),
                "temperature": temperature_json(p.temperature_f),
                "temperatureUnit": "F",
            })
        })
        .collect();
    let generated = f.generated_at.format("%Y-%m-%dT%H:%M:%S%:z").to_string();
    let mut props = json!({
        "units": "us",
        "forecastGenerator": "HourlyForecastGenerator",
        "generatedAt": generated,
        "updateTime": generated,
        "periods": periods,
    });
    if let (Some(first), Some(last)) = (f.periods.first(), f.periods.last()) {
        let span = (last.end_time - first.start_time).num_hours().max(0);
        let valid = format!("{}/P{}DT{}H", first.start_time.format("%Y-%m-%dT%H:%M:%S%:z"), span / 24, span % 24);
        props["validTimes"] = Value::String(valid);
    }
    json!({ "properties": props }).to_string()
}

fn temperature_json(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e9 {
        json!(f as i64)
    } else {
        json!(f)
    }
}

/// At most 32 characters of an offending value, control characters escaped.
fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    crate::decode::text::quote(s, 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::types::fixture;

    fn utc(s: &str) -> DateTime<Utc> {
        parse_timestamp(s).unwrap()
    }

    fn at(f: &NwsHourlyForecast, start: &str) -> f64 {
        let t = utc(start);
        let hits: Vec<_> = f.periods.iter().filter(|p| p.start_time == t).collect();
        assert_eq!(hits.len(), 1, "{start}");
        hits[0].temperature_f
    }

    #[test]
    fn knyc_hourly_2026() {
        let f = decode_nws_hourly(&fixture("forecast/nws_hourly_forecast_knyc_gen20260924T0316Z.json")).unwrap();
        assert_eq!(f.station, None);
        assert_eq!(f.generated_at, utc("2026-09-24T03:16:37Z"));
        assert_eq!(f.periods.len(), 60);
        // Period 1: 2026-09-23T23:00:00-04:00 → 2026-09-24T00:00:00-04:00, 57 F.
        let p = &f.periods[0];
        assert_eq!((p.start_time, p.end_time), (utc("2026-09-24T03:00:00Z"), utc("2026-09-24T04:00:00Z")));
        assert_eq!(p.temperature_f, 57.0);
        // Period 3 (01:00-04:00) 55 F; period 13 (11:00-04:00) 62 F; period 24 (22:00-04:00) 60 F.
        assert_eq!(at(&f, "2026-09-24T05:00:00Z"), 55.0);
        assert_eq!(at(&f, "2026-09-24T15:00:00Z"), 62.0);
        assert_eq!(at(&f, "2026-09-25T02:00:00Z"), 60.0);
        // Period 60: 2026-09-26T10:00:00-04:00, 62 F.
        let last = &f.periods[59];
        assert_eq!((last.start_time, last.temperature_f), (utc("2026-09-26T14:00:00Z"), 62.0));
        assert!(f.periods.windows(2).all(|w| w[0].end_time == w[1].start_time));
    }

    #[test]
    fn pynws_hourly_2019() {
        let f = decode_nws_hourly(&fixture("forecast/nws_api/nws_gridpoints_forecast_hourly_2019-10-15_trimmed.json"))
            .unwrap();
        // generatedAt 2019-10-15T00:12:54+00:00 wins over updateTime 2019-10-14T23:16:24+00:00.
        assert_eq!(f.generated_at, utc("2019-10-15T00:12:54Z"));
        assert_eq!(f.periods.len(), 2);
        // 2019-10-14T20:00:00-04:00, 78 F; 21:00-04:00, 77 F.
        assert_eq!(f.periods[0].start_time, utc("2019-10-15T00:00:00Z"));
        assert_eq!(f.periods[0].temperature_f, 78.0);
        assert_eq!(f.periods[1].end_time, utc("2019-10-15T02:00:00Z"));
        assert_eq!(f.periods[1].temperature_f, 77.0);
    }

    #[test]
    fn raw_gridpoint_tae_2022() {
        let f = decode_nws_hourly(&fixture("forecast/nws_api/nws_gridpoints_raw_TAE_58_65_2022-02-04.json")).unwrap();
        assert_eq!(f.generated_at, utc("2022-02-04T03:15:41Z"));
        // validTimes 2022-02-03T21:00:00+00:00/P7DT14H = 182 hours, which the values tile.
        assert_eq!(f.periods.len(), 182);
        assert!(f.periods.windows(2).all(|w| w[0].end_time == w[1].start_time));
        // 2022-02-03T21:00/PT1H 22.777… °C = 73 F.
        assert_eq!(at(&f, "2022-02-03T21:00:00Z"), 73.0);
        // 2022-02-04T01:00/PT10H 18.888… °C = 66 F, every hour 01Z..10Z.
        for h in 1..=10 {
            assert_eq!(at(&f, &format!("2022-02-04T{h:02}:00:00Z")), 66.0);
        }
        // 2022-02-04T16:00/PT2H 22.222… °C = 72 F for 16Z and 17Z.
        assert_eq!(at(&f, "2022-02-04T16:00:00Z"), 72.0);
        assert_eq!(at(&f, "2022-02-04T17:00:00Z"), 72.0);
        // Last: 2022-02-11T10:00/PT1H 4.444… °C = 40 F.
        let last = f.periods.last().unwrap();
        assert_eq!((last.start_time, last.temperature_f), (utc("2022-02-11T10:00:00Z"), 40.0));
    }

    #[test]
    fn object_temperature_and_celsius() {
        let json = r#"{"properties":{"generatedAt":"2025-01-10T12:00:00+00:00","periods":[
            {"number":1,"startTime":"2025-01-10T07:00:00-05:00","endTime":"2025-01-10T08:00:00-05:00",
             "temperature":{"unitCode":"wmoUnit:degC","value":-2.2222222222222223}},
            {"number":2,"startTime":"2025-01-10T08:00:00-05:00","endTime":"2025-01-10T09:00:00-05:00",
             "temperature":{"unitCode":"wmoUnit:degF","value":29}},
            {"number":3,"startTime":"2025-01-10T09:00:00-05:00","endTime":"2025-01-10T10:00:00-05:00",
             "temperature":-1,"temperatureUnit":"C"},
            {"number":4,"startTime":"2025-01-10T10:00:00-05:00","endTime":"2025-01-10T11:00:00-05:00",
             "temperature":{"unitCode":"wmoUnit:degC","value":null}}]}}"#;
        let f = decode_nws_hourly(json.as_bytes()).unwrap();
        assert_eq!(f.periods.len(), 3);
        // -2.222… °C = 28 F; 29 F as is; -1 °C = 30.2 F.
        let temps: Vec<f64> = f.periods.iter().map(|p| p.temperature_f).collect();
        assert_eq!(temps, vec![28.0, 29.0, 30.2]);
        assert_eq!(f.periods[0].start_time, utc("2025-01-10T12:00:00Z"));
    }

    #[test]
    fn malformed_documents_fail_with_reasons() {
        let base = |period: &str| {
            format!(r#"{{"properties":{{"generatedAt":"2025-01-10T12:00:00+00:00","periods":[{period}]}}}}"#)
        };
        let ok = r#""startTime":"2025-01-10T07:00:00-05:00","endTime":"2025-01-10T08:00:00-05:00""#;
        let cases = [
            (base(&format!(r#"{{"number":1,{ok},"temperature":"warm","temperatureUnit":"F"}}"#)), "period 1: temperature is not a number: \"warm\""),
            (base(&format!(r#"{{"number":7,{ok},"temperature":50,"temperatureUnit":"K"}}"#)), "period 7: unknown temperature unit 'K'"),
            (base(&format!(r#"{{"number":2,{ok},"temperature":50}}"#)), "period 2: temperature has no unit"),
            (base(&format!(r#"{{"number":2,{ok},"temperature":500,"temperatureUnit":"F"}}"#)), "period 2: temperature 500 F out of range"),
            (base(r#"{"startTime":"2025-01-10T07:00:00-05:00","endTime":"2025-01-10T07:00:00-05:00","temperature":1,"temperatureUnit":"F"}"#), "period 1: endTime not after startTime"),
            (base(r#"{"startTime":"tomorrow","endTime":"2025-01-10T07:00:00-05:00","temperature":1,"temperatureUnit":"F"}"#), "period 1: bad startTime 'tomorrow'"),
            (base(""), "no period has a temperature"),
            (r#"{"properties":{"periods":[]}}"#.to_string(), "no generatedAt or updateTime"),
            (r#"{"properties":{"updateTime":"2022-02-04T03:15:41+00:00"}}"#.to_string(), "no periods and no temperature grid"),
            (r#"{"properties":{"updateTime":"2022-02-04T03:15:41+00:00","temperature":{"values":[{"validTime":"2022-02-04T10:00:00+00:00/PT30M","value":1}]}}}"#.to_string(), "temperature value 1: duration 'PT30M' is not whole hours"),
            (r#"{"properties":{"updateTime":"2022-02-04T03:15:41+00:00","temperature":{"values":[{"validTime":"2022-02-04T10:00:00+00:00","value":1}]}}}"#.to_string(), "temperature value 1: bad validTime '2022-02-04T10:00:00+00:00'"),
            ("[1,2]".to_string(), "expected a JSON object"),
        ];
        for (input, want) in cases {
            assert_eq!(decode_nws_hourly(input.as_bytes()).unwrap_err(), want);
        }
        assert!(decode_nws_hourly(b"\xfe\x00garbage").unwrap_err().starts_with("bad JSON"));
        // FF FE is UTF-16's byte-order mark: named, not "bad JSON".
        let e = decode_nws_hourly(b"\xff\xfe{\x00}\x00").unwrap_err();
        assert!(e.starts_with("input is UTF-16LE text (byte-order mark FF FE)"), "{e}");
        let full = fixture("forecast/nws_hourly_forecast_knyc_gen20260924T0316Z.json");
        for cut in [0, 10, full.len() / 2, full.len() - 3] {
            assert!(decode_nws_hourly(&full[..cut]).is_err());
        }
    }

    #[test]
    fn durations() {
        assert_eq!(duration_seconds("PT1H"), Some(3600));
        assert_eq!(duration_seconds("P7DT14H"), Some(7 * 86_400 + 14 * 3600));
        assert_eq!(duration_seconds("P1D"), Some(86_400));
        assert_eq!(duration_seconds("P1W"), Some(604_800));
        assert_eq!(duration_seconds("PT1H30M"), Some(5400));
        for bad in ["", "P", "PT", "1H", "PT1", "PTH", "P1M", "PT1M1H", "PT1H1H", "P1DT", "PT99999999999999999999H"] {
            assert_eq!(duration_seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn encode_round_trip() {
        let f = decode_nws_hourly(&fixture("forecast/nws_hourly_forecast_knyc_gen20260924T0316Z.json")).unwrap();
        let text = encode_nws_hourly(&f, chrono_tz::America::New_York);
        assert!(text.contains(r#""startTime":"2026-09-23T23:00:00-04:00""#), "{}", &text[..300]);
        assert!(text.contains(r#""generatedAt":"2026-09-24T03:16:37+00:00""#));
        assert!(text.contains(r#""temperature":57,"#));
        assert!(text.contains(r#""validTimes":"2026-09-24T03:00:00+00:00/P2DT12H""#));
        assert_eq!(decode_nws_hourly(text.as_bytes()).unwrap(), f);
        // Fractional °F and the raw grid survive too.
        let g = decode_nws_hourly(&fixture("forecast/nws_api/nws_gridpoints_raw_TAE_58_65_2022-02-04.json")).unwrap();
        let mut g2 = g.clone();
        g2.periods[0].temperature_f = 30.2;
        let back = decode_nws_hourly(encode_nws_hourly(&g2, chrono_tz::America::New_York).as_bytes()).unwrap();
        assert_eq!(back, g2);
    }
}
