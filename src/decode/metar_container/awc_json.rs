//! aviationweather.gov data API JSON: `rawOb` dated by `obsTime`.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;

use super::delimited::report_text;
use super::report::finish_report;
use crate::decode::timestamp::parse_timestamp;
use crate::decode::types::{Decoded, Metar, ReportKind};

/// Decodes aviationweather.gov data API output: a JSON array of objects (or a GeoJSON
/// FeatureCollection whose features carry the same properties). `rawOb` is the report;
/// `obsTime` (epoch seconds), else `reportTime`/`receiptTime`, dates it. Errors carry the
/// 1-based record index.
pub fn decode_awc_json(text: &str) -> Decoded<Metar> {
    let mut out = Decoded::new();
    let value: Value = match serde_json::from_str(text.trim_start_matches('\u{feff}')) {
        Ok(v) => v,
        Err(e) => {
            out.read = 1;
            out.reject(e.line().max(1), format!("invalid JSON: {e}"));
            return out;
        }
    };
    let items = match &value {
        Value::Array(a) => Some(a),
        Value::Object(o) => o.get("features").and_then(Value::as_array),
        _ => None,
    };
    let Some(items) = items else {
        out.read = 1;
        out.reject(1, "expected a JSON array of METAR objects");
        return out;
    };
    for (i, item) in items.iter().enumerate() {
        out.read += 1;
        let obj = item.get("properties").unwrap_or(item);
        match awc_item(obj) {
            Ok(m) => out.records.push(m),
            Err(reason) => out.reject(i + 1, reason),
        }
    }
    out
}

/// One AWC object to a report.
pub(super) fn awc_item(obj: &Value) -> Result<Metar, String> {
    let raw = ["rawOb", "raw_text", "rawText"]
        .iter()
        .find_map(|k| obj.get(k).and_then(Value::as_str))
        .ok_or("object lacks 'rawOb'")?;
    let reference = ["obsTime", "reportTime", "receiptTime"]
        .iter()
        .find_map(|k| obj.get(k).and_then(json_time))
        .ok_or("object lacks a usable obsTime/reportTime")?;
    let fallback = match obj.get("metarType").and_then(Value::as_str) {
        Some(t) if t.eq_ignore_ascii_case("SPECI") => ReportKind::Speci,
        _ => ReportKind::Metar,
    };
    let mut metar = finish_report(report_text(raw), reference, fallback)?;
    // What `available_at` of a backfilled report rests on (`lake::availability`).
    metar.receipt_time = obj.get("receiptTime").and_then(json_time);
    Ok(metar)
}

/// Epoch seconds or an ISO 8601 string.
pub(super) fn json_time(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::Number(n) => n.as_i64().and_then(|s| Utc.timestamp_opt(s, 0).single()),
        Value::String(s) => parse_timestamp(s),
        _ => None,
    }
}
