//! Model runs: Open-Meteo's forecast and single-run APIs for the gridded models, and the
//! MOS/NBM text bulletins, each run appearing `latency_h` after its cycle
//! ([`crate::models`]) and only where the model covers the station ([`covers`]).
//!
//! - `GET /v1/forecast?latitude=..&longitude=..&hourly=temperature_2m,..&models=ID,..[&run=YYYY-MM-DDTHH:MM]`:
//!   the models asked for (Open-Meteo ids, e.g. `gfs_global`), each its latest published
//!   run, or with `run` (the single-runs API) that run; one model gives the plain keys,
//!   several the keys suffixed with their ids. Times are GMT (`utc_offset_seconds` 0),
//!   units the API defaults (°C, km/h, mm, %, hPa); hours between a model's output steps are
//!   null, as the decoder reads "not covered".
//! - `GET /cgi-bin/afos/retrieve.py?pil=MAVUSA&fmt=text&limit=1`: IEM's text-product
//!   archive, the latest bulletin of a product (`MAVUSA` GFS MOS, `METUSA` NAM MOS, `LAVUSA`
//!   LAMP, `NBSUSA` NBM) with the blocks of every US station, heading first.
//!
//! Errors are Open-Meteo's `{"error": true, "reason": ...}` with status 400.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::super::forecasts::{mos_bulletin, run_rows, runs};
use super::{parse_time, query_pairs, site, value, values, Refusal, SimState};
use crate::catalog::{Catalog, Station};
use crate::decode::types::{ForecastRow, OptF64};
use crate::models::{covers, ModelSpec, MODELS};

pub const OPEN_METEO_PATH: &str = "/v1/forecast";
pub const MOS_PATH: &str = "/cgi-bin/afos/retrieve.py";

/// Open-Meteo's ids of the gridded models it serves, with ours.
pub const OPEN_METEO_MODELS: [(&str, &str); 11] = [
    ("meteofrance_arpege_world", "ARPEGE"),
    ("ecmwf_ifs025", "ECMWF-IFS"),
    ("gem_global", "GEM-GDPS"),
    ("gem_hrdps_continental", "GEM-HRDPS"),
    ("gfs_global", "GFS"),
    ("ncep_hrrr_conus", "HRRR"),
    ("icon_global", "ICON"),
    ("jma_gsm", "JMA"),
    ("ncep_nam_conus", "NAM"),
    ("ncep_nbm_conus", "NBM"),
    ("ukmo_global_deterministic_10km", "UKMO"),
];

/// The AWIPS product ids of the MOS bulletins, with their models.
pub const MOS_PILS: [(&str, &str); 4] =
    [("MAVUSA", "GFS-MOS"), ("METUSA", "NAM-MOS"), ("LAVUSA", "LAV-MOS"), ("NBSUSA", "NBS-MOS")];

/// The hourly variables served, with the row value each takes (API default units).
const VARIABLES: [&str; 7] = [
    "temperature_2m",
    "relative_humidity_2m",
    "dew_point_2m",
    "wind_speed_10m",
    "cloud_cover",
    "precipitation",
    "pressure_msl",
];

/// How far from a catalog station a requested point may lie, degrees.
const POINT_TOLERANCE_DEG: f64 = 0.1;

fn om_error(reason: impl Into<String>) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [("content-type", "application/json")],
        json!({"error": true, "reason": reason.into()}).to_string(),
    )
        .into_response()
}

fn model_index(name: &str) -> Option<usize> {
    MODELS.iter().position(|m| m.name == name)
}

/// The newest run of `spec` published by `now` (cycles of the last two days).
pub fn latest_run(spec: &ModelSpec, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    runs(spec, now - Duration::days(2), now, now).pop()
}

/// `/v1/forecast`.
pub async fn open_meteo(State(sim): State<SimState>, RawQuery(q): RawQuery) -> Response {
    let pairs = query_pairs(q.as_deref());
    let coord = |k: &str| value(&pairs, k).and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite());
    let (Some(lat), Some(lon)) = (coord("latitude"), coord("longitude")) else {
        return om_error("Parameter 'latitude' and 'longitude' must be numbers");
    };
    let Some(st) = Catalog::global()
        .all()
        .iter()
        .find(|s| (s.latitude - lat).abs() <= POINT_TOLERANCE_DEG && (s.longitude - lon).abs() <= POINT_TOLERANCE_DEG)
    else {
        return om_error(format!("the simulator serves the catalog's stations only, not {lat},{lon}"));
    };
    let hourly: Vec<String> = values(&pairs, "hourly").into_iter().map(str::to_string).collect();
    if let Some(bad) = hourly.iter().find(|v| !VARIABLES.contains(&v.as_str())) {
        return om_error(format!("Cannot initialize ForecastVariable from invalid String value {bad}"));
    }
    let ids = values(&pairs, "models");
    if ids.is_empty() {
        return om_error("the simulator needs models=ID[,ID...] (it has no seamless blend)");
    }
    let now = sim.now();
    let asked_run = match value(&pairs, "run").map(|r| (r, parse_time(r))) {
        None => None,
        Some((_, Some(t))) => Some(t),
        Some((r, None)) => return om_error(format!("Invalid date format for run: {r}")),
    };
    let mut picked = Vec::new();
    for id in ids {
        let Some(index) = OPEN_METEO_MODELS.iter().find(|(k, _)| *k == id).and_then(|(_, name)| model_index(name))
        else {
            return om_error(format!("Cannot initialize MultiDomains from invalid String value {id}"));
        };
        let spec = &MODELS[index];
        if !covers(spec.name, st) {
            return om_error(format!("{id} does not cover {lat},{lon}"));
        }
        let run = match asked_run {
            None => latest_run(spec, now),
            Some(t) => runs(spec, t, t, now).pop(),
        };
        let Some(run) = run else { return om_error(format!("no run of {id} available at {now}")) };
        picked.push((id.to_string(), index, run));
    }
    let seed = sim.seed();
    let built = tokio::task::spawn_blocking(move || open_meteo_json(st, &picked, &hourly, seed)).await;
    match built {
        Ok(body) => ([("content-type", "application/json")], body.to_string()).into_response(),
        Err(e) => Refusal(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Runs at `st` in Open-Meteo's JSON: `models` are (Open-Meteo id, index in `MODELS`, run).
/// One model gives the plain keys (`temperature_2m`), several the keys suffixed with each
/// id (`temperature_2m_gfs_global`), on one hourly axis from the earliest run to the
/// furthest valid hour; hours a model does not output are null.
pub fn open_meteo_json(
    st: &'static Station,
    models: &[(String, usize, DateTime<Utc>)],
    hourly: &[String],
    seed: u64,
) -> Value {
    let end = |&(_, index, run): &(String, usize, DateTime<Utc>)| {
        run + Duration::hours(i64::from(MODELS[index].horizon_for(chrono::Timelike::hour(&run))))
    };
    let (Some(first), Some(last)) = (models.iter().map(|m| m.2).min(), models.iter().map(end).max()) else {
        return json!({"error": true, "reason": "no model"});
    };
    let s = site(st, seed, first, first, last + Duration::hours(2));
    let hours: Vec<DateTime<Utc>> = (0..=(last - first).num_hours()).map(|h| first + Duration::hours(h)).collect();
    let mut data = serde_json::Map::new();
    data.insert("time".into(), json!(hours.iter().map(|t| t.format("%Y-%m-%dT%H:%M").to_string()).collect::<Vec<_>>()));
    let mut units = serde_json::Map::new();
    units.insert("time".into(), json!("iso8601"));
    for (id, index, run) in models {
        let rows = run_rows(&s, *index, *run);
        let at = |t: DateTime<Utc>| rows.iter().find(|r| r.valid_time == t);
        for var in hourly {
            let key = if models.len() == 1 { var.clone() } else { format!("{var}_{id}") };
            data.insert(
                key.clone(),
                json!(hours.iter().map(|&t| at(t).and_then(|r| pick(r, var))).collect::<Vec<_>>()),
            );
            units.insert(key, json!(unit(var)));
        }
    }
    json!({
        "latitude": st.latitude,
        "longitude": st.longitude,
        "generationtime_ms": 0.5,
        "utc_offset_seconds": 0,
        "timezone": "GMT",
        "timezone_abbreviation": "GMT",
        "elevation": (st.elevation_ft * 0.3048).round(),
        "hourly_units": Value::Object(units),
        "hourly": Value::Object(data),
    })
}

/// The row's value of an hourly variable, in the API's default unit.
fn pick(r: &ForecastRow, var: &str) -> Option<f64> {
    let v: OptF64 = match var {
        "temperature_2m" => r.temperature_c,
        "relative_humidity_2m" => r.relative_humidity,
        "dew_point_2m" => r.dew_point_c,
        "wind_speed_10m" => r.wind_speed_kmh,
        "cloud_cover" => r.cloud_cover,
        "precipitation" => r.precipitation_mm,
        _ => r.pressure_msl_hpa,
    };
    v.get()
}

/// The API's default unit of an hourly variable.
fn unit(var: &str) -> &'static str {
    match var {
        "temperature_2m" | "dew_point_2m" => "°C",
        "relative_humidity_2m" | "cloud_cover" => "%",
        "wind_speed_10m" => "km/h",
        "precipitation" => "mm",
        _ => "hPa",
    }
}

/// `/cgi-bin/afos/retrieve.py?pil=..`: the latest bulletin of the product.
pub async fn mos(State(sim): State<SimState>, RawQuery(q): RawQuery) -> Response {
    let pairs = query_pairs(q.as_deref());
    let Some(pil) = value(&pairs, "pil") else { return Refusal::bad_request("pil is required").into_response() };
    let Some((_, name)) = MOS_PILS.iter().find(|(p, _)| *p == pil) else {
        return Refusal::not_found(format!("no product {pil:?} (simulated: MAVUSA, METUSA, LAVUSA, NBSUSA)"))
            .into_response();
    };
    let (now, seed) = (sim.now(), sim.seed());
    let Some(index) = model_index(name) else { return Refusal::not_found("unknown model").into_response() };
    match tokio::task::spawn_blocking(move || mos_text(index, now, seed)).await {
        Ok(Some(text)) => ([("content-type", "text/plain; charset=utf-8")], text).into_response(),
        Ok(None) => Refusal::not_found("no bulletin published yet").into_response(),
        Err(e) => Refusal(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// The latest bulletin of MOS model `MODELS[index]` at `now`: one heading, then the block
/// of every station the model covers.
pub fn mos_text(index: usize, now: DateTime<Utc>, seed: u64) -> Option<String> {
    let spec = &MODELS[index];
    let run = latest_run(spec, now)?;
    let mut out = String::new();
    for st in Catalog::global().all().iter().filter(|s| covers(spec.name, s)) {
        let s = site(st, seed, run, run, run + Duration::hours(i64::from(spec.horizon_h) + 2));
        let text = mos_bulletin(&s, index, run)?;
        if out.is_empty() {
            out = text;
        } else {
            // The heading is the part before the first station block (blank line after the AWIPS id).
            out.push('\n');
            out.push_str(text.split_once("\n\n").map_or(text.as_str(), |(_, block)| block));
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::mos::decode_mos;
    use crate::decode::open_meteo::decode_open_meteo_model;
    use crate::ingest::{Format, IngestOptions, Records};
    use chrono::TimeZone;

    #[test]
    fn an_open_meteo_run_decodes_to_the_models_rows() {
        let now = Utc.with_ymd_and_hms(2026, 4, 3, 20, 0, 0).unwrap();
        let gfs = model_index("GFS").unwrap();
        let run = latest_run(&MODELS[gfs], now).unwrap();
        assert_eq!(run, Utc.with_ymd_and_hms(2026, 4, 3, 12, 0, 0).unwrap(), "12Z is out at 16Z, 18Z at 22Z");
        let st = Catalog::global().get("KNYC").unwrap();
        let vars = vec!["temperature_2m".to_string(), "precipitation".to_string()];
        let body = open_meteo_json(st, &[("gfs_global".into(), gfs, run)], &vars, 77).to_string();
        let d = decode_open_meteo_model(body.as_bytes(), "KNYC", Some(run), Some("gfs_global"));
        assert!(d.errors.is_empty(), "{:?}", &d.errors[..d.errors.len().min(3)]);
        let s = site(st, 77, run, run, run + Duration::hours(400));
        let truth = run_rows(&s, gfs, run);
        assert_eq!(d.records.len(), truth.len(), "one row per output step");
        for (got, want) in d.records.iter().zip(&truth) {
            assert_eq!((got.model, got.run_time, got.valid_time), ("GFS", run, want.valid_time));
            assert_eq!(got.temperature_c.get(), want.temperature_c.get(), "{}", want.valid_time);
        }
    }

    #[test]
    fn several_models_of_one_run_decode_through_the_ingest_format() {
        // The single-runs API: `run=2026-04-03T00:00` of GFS and ECMWF, suffixed keys.
        let now = Utc.with_ymd_and_hms(2026, 4, 3, 20, 0, 0).unwrap();
        let run = Utc.with_ymd_and_hms(2026, 4, 3, 0, 0, 0).unwrap();
        let (gfs, ifs) = (model_index("GFS").unwrap(), model_index("ECMWF-IFS").unwrap());
        assert!(runs(&MODELS[ifs], run, run, now).contains(&run));
        let st = Catalog::global().get("EGLC").unwrap();
        let models = [("gfs_global".to_string(), gfs, run), ("ecmwf_ifs025".to_string(), ifs, run)];
        let body = open_meteo_json(st, &models, &["temperature_2m".to_string()], 3).to_string();
        assert!(body.contains("\"temperature_2m_ecmwf_ifs025\""));
        let opts = IngestOptions { station: Some("EGLC".into()), run_time: Some(run), ..Default::default() };
        let d = Format::OpenMeteo.decode(body.as_bytes(), &opts);
        assert!(d.errors.is_empty(), "{:?}", &d.errors[..d.errors.len().min(3)]);
        let Records::Forecasts(rows) = d.records else { panic!("not forecasts") };
        let s = site(st, 3, run, run, run + Duration::hours(400));
        for (index, name) in [(gfs, "GFS"), (ifs, "ECMWF-IFS")] {
            let truth = run_rows(&s, index, run);
            let got: Vec<_> = rows.iter().filter(|r| r.model == name).collect();
            assert_eq!(got.len(), truth.len(), "{name}");
            assert!(got.iter().zip(&truth).all(|(g, w)| g.temperature_c.get() == w.temperature_c.get()), "{name}");
        }
    }

    #[test]
    fn the_mos_bulletin_holds_every_us_station_and_decodes() {
        let now = Utc.with_ymd_and_hms(2026, 4, 3, 20, 0, 0).unwrap();
        let mav = model_index("GFS-MOS").unwrap();
        let text = mos_text(mav, now, 77).unwrap();
        assert!(text.contains("MAVUSA"), "{:.80}", text);
        let d = decode_mos(text.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", &d.errors[..d.errors.len().min(3)]);
        let us = Catalog::global().all().iter().filter(|s| s.is_us()).count();
        let mut stations: Vec<&str> = d.records.iter().map(|r| r.location_name.as_str()).collect();
        stations.dedup();
        assert_eq!(stations.len(), us);
        let run = latest_run(&MODELS[mav], now).unwrap();
        assert!(d.records.iter().all(|r| r.run_time == run && r.model == "GFS-MOS"));
        // The first station's TMP row is its simulated forecast in whole °F.
        let st = Catalog::global().get(stations[0]).unwrap();
        let s = site(st, 77, run, run, run + Duration::hours(100));
        let truth = run_rows(&s, mav, run);
        let first: Vec<Option<f64>> =
            d.records.iter().filter(|r| r.location_name == st.code).map(|r| r.temperature_f.get()).collect();
        assert_eq!(first, truth.iter().map(|r| r.temperature_f.get()).collect::<Vec<_>>());
    }
}
