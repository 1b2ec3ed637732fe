//! Model runs: Open-Meteo's forecast and single-run APIs for the gridded models, and the
//! MOS/NBM text bulletins, each run appearing `latency_h` after its run time
//! ([`crate::models`]) and only where the model covers the station ([`Station::has_forecasts_from`](crate::catalog::Station::has_forecasts_from)).
//!
//! - `GET /v1/forecast?latitude=..&longitude=..&hourly=temperature_2m,..&models=ID,..[&run=YYYY-MM-DDTHH:MM]`:
//!   the models asked for (Open-Meteo ids, those of `models::AVAILABILITY`, e.g.
//!   `gfs_global`), each its latest published run, or with `run` (the single-runs API)
//!   that run; one model gives the plain keys, several the keys suffixed with their ids.
//!   `latitude` and `longitude` may be comma lists of the same length (the feeds send a
//!   batch of stations): the answer is then a JSON array, one object per location in the
//!   order asked, each with its `location_id`, as the real API answers. Times are GMT
//!   (`utc_offset_seconds` 0), units the API defaults (°C, km/h, mm, %, hPa, °, WMO code);
//!   hours between a model's output steps, and variables a model does not supply, are
//!   null, as the decoder reads "not covered".
//! - `GET /cgi-bin/afos/retrieve.py?pil=MAVUSA&fmt=text&limit=1[&date=YYYYMMDD&hh=HH]`:
//!   IEM's text-product archive, a bulletin of a product (the AFOS id of each bulletin of
//!   `models::AVAILABILITY`: `MAVUSA` GFS MOS, `METUSA` NAM MOS, `LAVUSA` LAMP, `NBSUSA`
//!   NBM) with the blocks of every US station, heading first. With `date` and `hh`, the
//!   cycle of that hour once published; a cycle not yet published (or without them) gets
//!   the newest published bulletin, which is what IEM's `limit=1` retrieval answers: the
//!   `mos` feed must read each bulletin's run time from its headers, not trust the URL.
//!
//! Errors are Open-Meteo's `{"error": true, "reason": ...}` with status 400.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde_json::{json, Value};

use super::super::forecasts::{mos_bulletin, mos_pil, run_rows, runs};
use super::{parse_time, query_pairs, site, value, values, Refusal, SimState};
use crate::catalog::{Catalog, Station};
use crate::decode::types::ForecastRow;
use crate::models::{ModelSpec, Publisher, AVAILABILITY, MODELS};

pub const OPEN_METEO_PATH: &str = "/v1/forecast";
pub const MOS_PATH: &str = "/cgi-bin/afos/retrieve.py";

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

/// The index in `MODELS` of the model Open-Meteo serves as `id`: the feeds' own table
/// (`models::AVAILABILITY`), so the simulator answers exactly the ids the feed asks for.
fn open_meteo_model(id: &str) -> Option<usize> {
    AVAILABILITY
        .iter()
        .find(|a| matches!(a.publisher, Publisher::OpenMeteo(x) if x == id))
        .and_then(|a| model_index(a.model))
}

/// The index in `MODELS` of the MOS model whose bulletin IEM files as `pil` ([`mos_pil`]).
fn mos_model(pil: &str) -> Option<usize> {
    AVAILABILITY.iter().find(|a| mos_pil(a.model).as_deref() == Some(pil)).and_then(|a| model_index(a.model))
}

/// The AFOS ids of every bulletin served, in `models::AVAILABILITY` order.
pub fn mos_pils() -> Vec<String> {
    AVAILABILITY.iter().filter_map(|a| mos_pil(a.model)).collect()
}

/// The newest run of `spec` published by `now` (runs of the last two days).
pub fn latest_run(spec: &ModelSpec, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    runs(spec, now - Duration::days(2), now, now).pop()
}

/// The catalog stations at the requested points: `latitude` and `longitude` are comma
/// lists of one length (one point or several).
fn stations_at(pairs: &[(String, String)]) -> Result<Vec<&'static Station>, String> {
    let coords = |k: &str| -> Result<Vec<f64>, String> {
        let v: Vec<&str> = values(pairs, k);
        let parsed: Option<Vec<f64>> = v.iter().map(|x| x.parse::<f64>().ok().filter(|x| x.is_finite())).collect();
        parsed.filter(|p| !p.is_empty()).ok_or_else(|| "Parameter 'latitude' and 'longitude' must be numbers".into())
    };
    let (lats, lons) = (coords("latitude")?, coords("longitude")?);
    if lats.len() != lons.len() {
        return Err("Parameter 'latitude' and 'longitude' must have the same number of elements".into());
    }
    // The nearest station within the tolerance: some are closer than it to each other
    // (Central Park and LaGuardia).
    lats.iter()
        .zip(&lons)
        .map(|(&lat, &lon)| {
            let off = |s: &Station| (s.latitude - lat).abs().max((s.longitude - lon).abs());
            Catalog::global()
                .all()
                .iter()
                .filter(|s| off(s) <= POINT_TOLERANCE_DEG)
                .min_by(|a, b| off(a).total_cmp(&off(b)))
                .ok_or_else(|| format!("the simulator serves the catalog's stations only, not {lat},{lon}"))
        })
        .collect()
}

/// `/v1/forecast`.
pub async fn open_meteo(State(sim): State<SimState>, RawQuery(q): RawQuery) -> Response {
    let pairs = query_pairs(q.as_deref());
    let stations = match stations_at(&pairs) {
        Ok(s) => s,
        Err(reason) => return om_error(reason),
    };
    let hourly: Vec<String> = values(&pairs, "hourly").into_iter().map(str::to_string).collect();
    if let Some(bad) = hourly.iter().find(|v| series(v).is_none()) {
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
        let Some(index) = open_meteo_model(id) else {
            return om_error(format!("Cannot initialize MultiDomains from invalid String value {id}"));
        };
        let spec = &MODELS[index];
        if let Some(st) = stations.iter().find(|st| !st.has_forecasts_from(spec.name)) {
            return om_error(format!("{id} does not cover {},{}", st.latitude, st.longitude));
        }
        let run = match asked_run {
            None => latest_run(spec, now),
            Some(t) => runs(spec, t, t, now).pop(),
        };
        let Some(run) = run else { return om_error(format!("no run of {id} available at {now}")) };
        picked.push((id.to_string(), index, run));
    }
    let seed = sim.seed();
    let built = tokio::task::spawn_blocking(move || {
        let mut each: Vec<Value> = stations.iter().map(|&st| open_meteo_json(st, &picked, &hourly, seed)).collect();
        if each.len() == 1 {
            return each.remove(0);
        }
        for (i, v) in each.iter_mut().enumerate() {
            v["location_id"] = json!(i);
        }
        Value::Array(each)
    })
    .await;
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
            let Some((unit, pick)) = series(var) else { continue };
            let key = if models.len() == 1 { var.clone() } else { format!("{var}_{id}") };
            data.insert(key.clone(), json!(hours.iter().map(|&t| at(t).and_then(pick)).collect::<Vec<_>>()));
            units.insert(key, json!(unit));
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

/// A row's value of an hourly variable.
type Pick = fn(&ForecastRow) -> Option<f64>;

/// The hourly variables served: name, unit (the API's default) and the row's value of it.
/// Every variable the `open_meteo` feed asks for (`feeds::open_meteo::HOURLY`) is here; a
/// model that does not supply one (HRDPS has no humidity) gives nulls, as the real API does.
const SERIES: [(&str, &str, Pick); 12] = [
    ("temperature_2m", "°C", |r| r.temperature_c.get()),
    ("relative_humidity_2m", "%", |r| r.relative_humidity.get()),
    ("dew_point_2m", "°C", |r| r.dew_point_c.get()),
    ("apparent_temperature", "°C", |r| r.apparent_temp_c.get()),
    ("wind_speed_10m", "km/h", |r| r.wind_speed_kmh.get()),
    ("wind_direction_10m", "°", |r| r.wind_direction_deg.map(f64::from)),
    ("wind_gusts_10m", "km/h", |r| r.wind_gusts_kmh.get()),
    ("cloud_cover", "%", |r| r.cloud_cover.get()),
    ("precipitation", "mm", |r| r.precipitation_mm.get()),
    ("weather_code", "wmo code", |r| r.weather_code.map(f64::from)),
    ("pressure_msl", "hPa", |r| r.pressure_msl_hpa.get()),
    ("surface_pressure", "hPa", |r| r.surface_pressure_hpa.get()),
];

/// The unit and value of hourly variable `var`; `None` for one the simulator does not
/// know, which the real API refuses too.
fn series(var: &str) -> Option<(&'static str, Pick)> {
    SERIES.iter().find(|(name, _, _)| *name == var).map(|&(_, unit, pick)| (unit, pick))
}

/// `/cgi-bin/afos/retrieve.py?pil=..[&date=YYYYMMDD&hh=HH]`: the cycle asked for once
/// published, else the newest published bulletin (see the module docs).
pub async fn mos(State(sim): State<SimState>, RawQuery(q): RawQuery) -> Response {
    let pairs = query_pairs(q.as_deref());
    let Some(pil) = value(&pairs, "pil") else { return Refusal::bad_request("pil is required").into_response() };
    let Some(index) = mos_model(pil) else {
        return Refusal::not_found(format!("no product {pil:?} (simulated: {})", mos_pils().join(", ")))
            .into_response();
    };
    let spec = &MODELS[index];
    let asked = match (value(&pairs, "date"), value(&pairs, "hh")) {
        (None, None) => None,
        (Some(date), Some(hh)) => {
            let day = NaiveDate::parse_from_str(date, "%Y%m%d").ok();
            let hour = hh.parse::<u32>().ok().filter(|h| spec.cycles.contains(h));
            let run = day.zip(hour).and_then(|(d, h)| d.and_hms_opt(h, spec.cycle_minute, 0)).map(|t| t.and_utc());
            let Some(run) = run else {
                return Refusal::bad_request(format!("no {pil} cycle {date} {hh}Z")).into_response();
            };
            Some(run)
        }
        _ => return Refusal::bad_request("date and hh go together").into_response(),
    };
    let (now, seed) = (sim.now(), sim.seed());
    let run = asked.filter(|t| runs(spec, *t, *t, now).contains(t)).or_else(|| latest_run(spec, now));
    let Some(run) = run else { return Refusal::not_found("no bulletin published yet").into_response() };
    match tokio::task::spawn_blocking(move || mos_text(index, run, seed)).await {
        Ok(Some(text)) => ([("content-type", "text/plain; charset=utf-8")], text).into_response(),
        Ok(None) => Refusal::not_found("no bulletin published yet").into_response(),
        Err(e) => Refusal(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// The bulletin of MOS model `MODELS[index]`'s `run`: one heading, then the block of every
/// station the model covers.
pub fn mos_text(index: usize, run: DateTime<Utc>, seed: u64) -> Option<String> {
    let spec = &MODELS[index];
    let mut out = String::new();
    for st in Catalog::global().all().iter().filter(|s| s.has_forecasts_from(spec.name)) {
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
        let text = mos_text(mav, latest_run(&MODELS[mav], now).unwrap(), 77).unwrap();
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

    #[test]
    fn the_simulator_serves_every_variable_model_and_bulletin_the_feeds_ask_for() {
        for var in crate::feeds::open_meteo::HOURLY.split(',') {
            assert!(series(var).is_some(), "{var} is asked for by the feed");
        }
        for a in AVAILABILITY {
            let index = match a.publisher {
                Publisher::OpenMeteo(id) => open_meteo_model(id),
                Publisher::Bulletin(code) => mos_model(&format!("{code}USA")),
            };
            assert_eq!(index.map(|i| MODELS[i].name), Some(a.model));
        }
        assert_eq!(mos_pils(), ["MAVUSA", "METUSA", "LAVUSA", "NBSUSA"]);

        // Every variable of a GFS run decodes, null or not.
        let now = Utc.with_ymd_and_hms(2026, 4, 3, 20, 0, 0).unwrap();
        let gfs = model_index("GFS").unwrap();
        let run = latest_run(&MODELS[gfs], now).unwrap();
        let vars: Vec<String> = crate::feeds::open_meteo::HOURLY.split(',').map(String::from).collect();
        let body =
            open_meteo_json(Catalog::global().get("KNYC").unwrap(), &[("gfs_global".into(), gfs, run)], &vars, 5);
        let d = decode_open_meteo_model(body.to_string().as_bytes(), "KNYC", Some(run), Some("gfs_global"));
        assert!(d.errors.is_empty(), "{:?}", &d.errors[..d.errors.len().min(3)]);
        assert!(d.records.iter().all(|r| r.wind_direction_deg.is_some() && r.surface_pressure_hpa.is_some()));

        // LAMP runs are labelled HH30, their columns on whole hours from 1 h.
        let lav = model_index("LAV-MOS").unwrap();
        let run = latest_run(&MODELS[lav], now).unwrap();
        assert_eq!(run, Utc.with_ymd_and_hms(2026, 4, 3, 18, 30, 0).unwrap(), "18:30's is out at 19:30");
        let d = decode_mos(mos_text(lav, run, 5).unwrap().as_bytes());
        assert!(d.errors.is_empty(), "{:?}", &d.errors[..d.errors.len().min(3)]);
        assert!(d.records.iter().all(|r| r.run_time == run && chrono::Timelike::minute(&r.valid_time) == 0));
        assert_eq!(d.records[0].forecast_hour, 1);
        assert_eq!(d.records[0].valid_time, Utc.with_ymd_and_hms(2026, 4, 3, 19, 0, 0).unwrap());
    }
}
