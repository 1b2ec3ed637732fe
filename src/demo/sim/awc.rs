//! aviationweather.gov's data API, `GET /api/data/metar?ids=A,B&format=json&hours=N`:
//! the METARs and SPECIs of the last `hours`, as the JSON array AWC sends (`rawOb` with
//! its `METAR`/`SPECI` keyword, `obsTime` in epoch seconds, `metarType`, `temp`/`dewp`).
//!
//! AWC carries routine and special reports only (no 5-minute HF-METARs: those come from
//! IEM), and a report reaches it a couple of minutes after its observation time
//! ([`RECEIPT_DELAY_MIN`]); the simulator serves a report from then on.

use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{json, Value};

use super::super::climate::minute_index;
use super::super::observations::reports;
use super::{query_pairs, site, station, value, values, Refusal, SimState};
use crate::catalog::Station;
use crate::decode::metar::parse_metar;
use crate::decode::types::ReportKind;

/// The endpoint's path.
pub const METAR_PATH: &str = "/api/data/metar";

/// Minutes between a report's observation and its arrival at AWC.
pub const RECEIPT_DELAY_MIN: i64 = 2;

/// The longest look-back served (AWC's own limit is a few days; the feeds ask for 2 h).
const MAX_HOURS: f64 = 72.0;

/// The handler: checks the query, then builds the answer off the async threads.
pub async fn metar(State(sim): State<SimState>, RawQuery(q): RawQuery) -> Response {
    let pairs = query_pairs(q.as_deref());
    if let Some(f) = value(&pairs, "format").filter(|f| *f != "json") {
        return Refusal::bad_request(format!("format={f}: the simulator answers format=json only")).into_response();
    }
    let hours = match value(&pairs, "hours").map(str::parse::<f64>) {
        None => 1.5,
        Some(Ok(h)) if h.is_finite() && h > 0.0 && h <= MAX_HOURS => h,
        Some(_) => return Refusal::bad_request(format!("hours must be a number in (0, {MAX_HOURS}]")).into_response(),
    };
    let ids = values(&pairs, "ids");
    if ids.is_empty() {
        return Refusal::bad_request("ids is required (comma-separated ICAO ids)").into_response();
    }
    // Ids the catalog does not know are answered with nothing, as AWC does.
    let stations: Vec<&'static Station> = ids.iter().filter_map(|id| station(id)).collect();
    let (now, seed) = (sim.now(), sim.seed());
    match tokio::task::spawn_blocking(move || metar_json(&stations, hours, now, seed)).await {
        Ok(body) => ([("content-type", "application/json")], body).into_response(),
        Err(e) => Refusal(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// The JSON array AWC answers for `stations` with `hours` of look-back at `now`: per
/// station newest first.
pub fn metar_json(stations: &[&'static Station], hours: f64, now: DateTime<Utc>, seed: u64) -> String {
    let received_by = now - Duration::minutes(RECEIPT_DELAY_MIN);
    let from = now - Duration::seconds((hours * 3600.0) as i64);
    let mut out: Vec<Value> = Vec::new();
    for &st in stations {
        let s = site(st, seed, from, received_by, received_by);
        let mut r: Vec<_> = reports(&s, minute_index(from), minute_index(received_by))
            .into_iter()
            .filter(|r| r.kind != ReportKind::HfMetar)
            .collect();
        r.reverse();
        out.extend(r.into_iter().map(|r| item(st, r.time, r.kind, &r.text)));
    }
    Value::Array(out).to_string()
}

/// One report as AWC writes it.
fn item(st: &Station, time: DateTime<Utc>, kind: ReportKind, text: &str) -> Value {
    let (metar_type, raw) = match kind {
        ReportKind::Speci => ("SPECI", text.to_string()),
        _ => ("METAR", format!("METAR {text}")),
    };
    let parsed = parse_metar(&raw, time).ok();
    let temp = parsed.as_ref().and_then(|m| m.tgroup_temp_c.or(m.temp_whole_c.map(f64::from)));
    let dewp = parsed.as_ref().and_then(|m| m.tgroup_dew_c.or(m.dew_whole_c.map(f64::from)));
    let iso = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Millis, true);
    // AWC's reportTime is the nominal hour a routine report stands for.
    let nominal = if kind == ReportKind::Metar && minute_index(time).rem_euclid(60) >= 45 {
        DateTime::from_timestamp((time.timestamp() / 3600 + 1) * 3600, 0).unwrap_or(time)
    } else {
        time
    };
    json!({
        "icaoId": st.code,
        "receiptTime": iso(time + Duration::minutes(RECEIPT_DELAY_MIN)),
        "obsTime": time.timestamp(),
        "reportTime": iso(nominal),
        "temp": temp,
        "dewp": dewp,
        "metarType": metar_type,
        "rawOb": raw,
        "lat": st.latitude,
        "lon": st.longitude,
        "elev": (st.elevation_ft * 0.3048).round(),
        "name": st.name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::decode::types::Metar;
    use crate::demo::measured_f;
    use crate::ingest::{Format, IngestOptions, Records};
    use crate::units::f_to_c;
    use chrono::TimeZone;

    fn decode(body: &str) -> Vec<Metar> {
        let d = Format::Metar.decode(body.as_bytes(), &IngestOptions::default());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        match d.records {
            Records::Observations(v) => v,
            _ => panic!("not observations"),
        }
    }

    #[test]
    fn reports_decode_with_the_t_group_of_the_measured_temperature() {
        let now = Utc.with_ymd_and_hms(2026, 4, 2, 15, 10, 0).unwrap();
        let st: Vec<&'static Station> = ["KNYC", "EGLC", "XXXX"].iter().filter_map(|c| station(c)).collect();
        let body = metar_json(&st, 3.0, now, 77);
        let v: Vec<Value> = serde_json::from_str(&body).unwrap();
        assert!(v.iter().all(|r| r["rawOb"].as_str().unwrap().starts_with(r["metarType"].as_str().unwrap())));
        let m = decode(&body);
        assert_eq!(m.len(), v.len());
        // KNYC: hourly routine reports (plus any SPECI), no HF-METARs; EGLC: half-hourly.
        let knyc: Vec<&Metar> = m.iter().filter(|r| r.station == "KNYC").collect();
        assert!(knyc.iter().filter(|r| r.kind == Some(ReportKind::Metar)).count() == 3, "{knyc:?}");
        assert!(knyc.iter().all(|r| r.kind != Some(ReportKind::HfMetar)));
        assert_eq!(m.iter().filter(|r| r.station == "EGLC").count(), 6);
        let nyc = Catalog::global().get("KNYC").unwrap();
        for r in knyc.iter().filter(|r| r.kind == Some(ReportKind::Metar)) {
            let (Some(t), Some(f)) = (r.tgroup_temp_c, measured_f(nyc, r.time, 77)) else { continue };
            // The T-group is the measured whole °F in tenths of °C.
            assert!((t - (f_to_c(f64::from(f)) * 10.0).round() / 10.0).abs() < 1e-9, "{r:?}");
        }
        assert!(m
            .iter()
            .all(|r| r.time <= now - Duration::minutes(RECEIPT_DELAY_MIN) && r.time > now - Duration::hours(3)));
        // Nothing for unknown ids or before the window opens.
        assert_eq!(metar_json(&[], 2.0, now, 77), "[]");
    }
}
