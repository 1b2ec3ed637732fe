use super::*;
use crate::decode::forecast_rows::is_model;
use crate::decode::timestamp::parse_timestamp;
use crate::decode::types::fixture;

fn utc(s: &str) -> DateTime<Utc> {
    parse_timestamp(s).unwrap()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

fn find<'a>(rows: &'a [ForecastRow], model: &str, run: &str, valid: &str) -> &'a ForecastRow {
    let (run, valid) = (utc(run), utc(valid));
    let hits: Vec<_> = rows.iter().filter(|r| r.model == model && r.run_time == run && r.valid_time == valid).collect();
    assert_eq!(hits.len(), 1, "{model} {run} {valid}");
    hits[0]
}

#[test]
fn previous_runs_fixture() {
    let d =
        decode_open_meteo(&fixture("forecast/openmeteo_previous_runs_knyc_gfs_ecmwf_2026-09-01_03.json"), "KNYC", None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.read, 72);
    // 72 hours × (GFS, ECMWF-IFS) × previous_day1..3, no nulls in the file.
    assert_eq!(d.records.len(), 72 * 2 * 3);
    // time[0] = "2026-09-01T00:00" (GMT). temperature_2m_previous_day1_gfs_seamless[0] = 71.5 °F,
    // from the run of 2026-08-31 00Z (assumed), lead 24 h.
    let r = find(&d.records, "GFS", "2026-08-31T00:00:00Z", "2026-09-01T00:00:00Z");
    assert_eq!(r.forecast_hour, 24);
    assert_eq!(r.temperature_f, Some(71.5));
    assert!(close(r.temperature_c.get(), (71.5 - 32.0) * 5.0 / 9.0));
    assert_eq!((r.latitude.get(), r.longitude.get()), (Some(40.78858), Some(-73.9661)));
    assert_eq!(r.location_name, "KNYC");
    // time[0], temperature_2m_previous_day3_ecmwf_ifs025[0] = 74.4 °F: run 2026-08-29 00Z, lead 72 h.
    let r = find(&d.records, "ECMWF-IFS", "2026-08-29T00:00:00Z", "2026-09-01T00:00:00Z");
    assert_eq!((r.forecast_hour, r.temperature_f.get()), (72, Some(74.4)));
    // time[1] = "2026-09-01T01:00"; precipitation_previous_day1_ecmwf_ifs025[1] = 0.004 inch.
    let r = find(&d.records, "ECMWF-IFS", "2026-08-31T00:00:00Z", "2026-09-01T01:00:00Z");
    assert_eq!((r.forecast_hour, r.temperature_f.get()), (25, Some(71.7)));
    assert_eq!(r.precipitation_in, Some(0.004));
    assert!(close(r.precipitation_mm.get(), 0.1016));
    // Last hour, time[71] = "2026-09-03T23:00": previous_day2_gfs_seamless[71] = 88.5 °F,
    // run 2026-09-01 00Z, lead 71 h.
    let r = find(&d.records, "GFS", "2026-09-01T00:00:00Z", "2026-09-03T23:00:00Z");
    assert_eq!((r.forecast_hour, r.temperature_f.get()), (71, Some(88.5)));
    assert_eq!(previous_run_time(utc("2026-09-02T15:00:00Z"), 2), Some(utc("2026-08-31T00:00:00Z")));
}

#[test]
fn ensemble_fixture_gefs_mean_and_ecmwf_rejected() {
    let d = decode_open_meteo(&fixture("forecast/openmeteo_ensemble_knyc_gefs_ecmwf_2026-09-24_27.json"), "KNYC", None);
    assert_eq!(d.read, 96);
    // ECMWF ENS has no model name: one error naming it, no rows.
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    assert_eq!(d.errors[0].line, 0);
    assert!(d.errors[0].reason.contains("ecmwf_ifs025_ensemble"), "{}", d.errors[0].reason);
    assert_eq!(d.records.len(), 96);
    assert!(d.records.iter().all(|r| r.model == "GEFS"));
    // Run time: none given, so the first valid time 2026-09-24T00:00 GMT.
    let run = "2026-09-24T00:00:00Z";
    // Hour 0: control 63.9, member01 64.9, member02 64.4 → (63.9 + 64.9 + 64.4) / 3 = 64.4 °F.
    let r = find(&d.records, "GEFS", run, "2026-09-24T00:00:00Z");
    assert_eq!(r.forecast_hour, 0);
    assert!(close(r.temperature_f.get(), 64.4));
    assert!(close(r.precipitation_in.get(), 0.0));
    // Hour 1: 62.3, 63.5, 62.9 → 188.7 / 3 = 62.9 °F.
    assert!(close(find(&d.records, "GEFS", run, "2026-09-24T01:00:00Z").temperature_f.get(), 62.9));
    // Last hour (2026-09-27T23:00, index 95): 58.1, 57.1, 59.0 → 174.2 / 3 = 58.0667 °F;
    // precipitation 0.004, 0.0, 0.0 inch → 0.001333 inch.
    let r = find(&d.records, "GEFS", run, "2026-09-27T23:00:00Z");
    assert_eq!(r.forecast_hour, 95);
    assert!(close(r.temperature_f.get(), 174.2 / 3.0));
    assert!(close(r.precipitation_in.get(), 0.004 / 3.0));
    assert_eq!(r.weather_code, None);
    // With the caller's run time the lead follows it.
    let run = utc("2026-09-23T18:00:00Z");
    let d = decode_open_meteo(
        &fixture("forecast/openmeteo_ensemble_knyc_gefs_ecmwf_2026-09-24_27.json"),
        "KNYC",
        Some(run),
    );
    assert_eq!(d.records[0].run_time, run);
    assert_eq!(d.records[0].forecast_hour, 6);
}

/// A hand-built multi-model forecast response in New York local time (EDT, −4 h),
/// US units, with a null, an unknown model and the older variable spellings.
const PLAIN: &str = r#"{"latitude":40.78,"longitude":-73.97,"utc_offset_seconds":-14400,
      "timezone":"America/New_York","timezone_abbreviation":"EDT",
      "hourly_units":{"time":"iso8601","temperature_2m_gfs_seamless":"°F","temperature_2m_ecmwf_ifs025":"°F",
        "temperature_2m_gfs_graphcast025":"°F","relative_humidity_2m_gfs_seamless":"%","dew_point_2m_gfs_seamless":"°F",
        "apparent_temperature_gfs_seamless":"°F","windspeed_10m_gfs_seamless":"mp/h","wind_direction_10m_gfs_seamless":"°",
        "wind_gusts_10m_gfs_seamless":"kn","cloud_cover_gfs_seamless":"%","precipitation_gfs_seamless":"inch",
        "weather_code_gfs_seamless":"wmo code","pressure_msl_gfs_seamless":"hPa","surface_pressure_gfs_seamless":"hPa",
        "precipitation_probability_gfs_seamless":"%","cloud_cover_low_gfs_seamless":"%"},
      "hourly":{"time":["2026-09-24T00:00","2026-09-24T01:00","2026-09-24T02:00"],
        "temperature_2m_gfs_seamless":[60.1,null,58.7],
        "temperature_2m_ecmwf_ifs025":[59.0,58.2,57.5],
        "temperature_2m_gfs_graphcast025":[1,2,3],
        "relative_humidity_2m_gfs_seamless":[80,82,85],
        "dew_point_2m_gfs_seamless":[53.6,53.0,54.0],
        "apparent_temperature_gfs_seamless":[59.0,58.0,57.0],
        "windspeed_10m_gfs_seamless":[10.0,9.0,8.0],
        "wind_direction_10m_gfs_seamless":[200,210,220],
        "wind_gusts_10m_gfs_seamless":[20.0,18.0,16.0],
        "cloud_cover_gfs_seamless":[100,90,80],
        "precipitation_gfs_seamless":[0.01,0.0,0.0],
        "weather_code_gfs_seamless":[61,3,2],
        "pressure_msl_gfs_seamless":[1012.5,1012.9,1013.2],
        "surface_pressure_gfs_seamless":[1007.1,1007.4,1007.8],
        "precipitation_probability_gfs_seamless":[50,40,30],
        "cloud_cover_low_gfs_seamless":[10,10,10]}}"#;

#[test]
fn plain_multi_model_local_time_and_units() {
    let run = utc("2026-09-24T00:00:00Z");
    let d = decode_open_meteo(PLAIN.as_bytes(), "KNYC", Some(run));
    assert_eq!(d.read, 3);
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    assert_eq!(d.errors[0].reason, "unknown Open-Meteo model 'gfs_graphcast025'");
    // GFS hour 1 is null: 2 GFS rows + 3 ECMWF rows.
    assert_eq!(d.records.len(), 5);
    // "2026-09-24T00:00" at −14400 s is 04:00Z; lead from the 00Z run is 4 h.
    let r = find(&d.records, "GFS", "2026-09-24T00:00:00Z", "2026-09-24T04:00:00Z");
    assert_eq!(r.forecast_hour, 4);
    assert_eq!(r.temperature_f, Some(60.1));
    assert_eq!(r.relative_humidity, Some(80.0));
    assert_eq!(r.dew_point_f, Some(53.6));
    assert!(close(r.dew_point_c.get(), 12.0));
    assert_eq!(r.apparent_temp_f, Some(59.0));
    assert!(close(r.apparent_temp_c.get(), 15.0));
    assert_eq!(r.wind_speed_mph, Some(10.0));
    assert!(close(r.wind_speed_kmh.get(), 16.09344));
    assert_eq!(r.wind_direction_deg, Some(200));
    // 20 kn = 23.0156 mph = 37.04 km/h.
    assert!(close(r.wind_gusts_kmh.get(), 37.04));
    assert!((r.wind_gusts_mph.get().unwrap() - 23.0156).abs() < 1e-3);
    assert_eq!(r.cloud_cover, Some(100.0));
    assert_eq!(r.precipitation_in, Some(0.01));
    assert!(close(r.precipitation_mm.get(), 0.254));
    assert_eq!(r.weather_code, Some(61));
    assert_eq!((r.pressure_msl_hpa.get(), r.surface_pressure_hpa.get()), (Some(1012.5), Some(1007.1)));
    let r = find(&d.records, "GFS", "2026-09-24T00:00:00Z", "2026-09-24T06:00:00Z");
    assert_eq!((r.temperature_f.get(), r.weather_code), (Some(58.7), Some(2)));
    let r = find(&d.records, "ECMWF-IFS", "2026-09-24T00:00:00Z", "2026-09-24T05:00:00Z");
    assert_eq!((r.temperature_f.get(), r.forecast_hour, r.relative_humidity.get()), (Some(58.2), 5, None));
    // Without a run time the first valid time (04:00Z) is used.
    let d = decode_open_meteo(PLAIN.as_bytes(), "KNYC", None);
    assert!(d.records.iter().all(|r| r.run_time == utc("2026-09-24T04:00:00Z")));
    // A run time after some valid times rejects those hours only.
    let d = decode_open_meteo(PLAIN.as_bytes(), "KNYC", Some(utc("2026-09-24T05:00:00Z")));
    assert_eq!(d.records.len(), 3);
    let mut lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
    lines.sort_unstable();
    assert_eq!(lines, vec![0, 1, 1]); // graphcast; GFS and ECMWF at 04:00Z
}

#[test]
fn single_model_unsuffixed_celsius_unixtime() {
    // 1790208000 = 2026-09-24T00:00:00Z; unixtime is UTC whatever the offset.
    let json = r#"{"latitude":51.5,"longitude":-0.1,"utc_offset_seconds":3600,"timezone":"Europe/London",
          "hourly_units":{"time":"unixtime","temperature_2m":"°C","wind_speed_10m":"km/h"},
          "hourly":{"time":[1790208000,1790211600],"temperature_2m":[12.3,11.8],"wind_speed_10m":[18.0,null]}}"#;
    let d = decode_open_meteo(json.as_bytes(), "EGLL", None);
    assert!(d.records.is_empty());
    assert_eq!(d.errors[0].reason, "temperature_2m has no model suffix and no model was given");
    let d = decode_open_meteo_model(json.as_bytes(), "EGLL", None, Some("ukmo_global_deterministic_10km"));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records.len(), 2);
    let r = &d.records[0];
    assert_eq!((r.model, r.valid_time), ("UKMO", utc("2026-09-24T00:00:00Z")));
    assert_eq!(r.temperature_c, Some(12.3));
    assert!(close(r.temperature_k.get(), 285.45));
    assert_eq!(r.wind_speed_kmh, Some(18.0));
    assert_eq!(d.records[1].wind_speed_kmh, None);
    let d = decode_open_meteo_model(json.as_bytes(), "EGLL", None, Some("UKMO"));
    assert_eq!(d.records.len(), 2);
}

#[test]
fn ensemble_means_wind_direction_as_vectors() {
    // Control 350°, member 10°: the mean direction is north (0°), not 180°.
    // Temperatures 10.0 and 11.0 °C → 10.5; one member null at hour 1 → the other alone.
    let json = r#"{"utc_offset_seconds":0,"hourly_units":{"temperature_2m_gfs05":"°C","temperature_2m_member01_gfs05":"°C"},
          "hourly":{"time":["2026-03-01T00:00","2026-03-01T01:00","2026-03-01T02:00"],
            "temperature_2m_gfs05":[10.0,null,null],"temperature_2m_member01_gfs05":[11.0,12.5,null],
            "wind_direction_10m_gfs05":[350,90,0],"wind_direction_10m_member01_gfs05":[10,null,0],
            "weather_code_gfs05":[1,2,3],"weather_code_member01_gfs05":[3,2,1]}}"#;
    let d = decode_open_meteo(json.as_bytes(), "KORD", None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records.len(), 2);
    let r = &d.records[0];
    assert_eq!(r.model, "GEFS");
    assert!(close(r.temperature_c.get(), 10.5));
    assert!(matches!(r.wind_direction_deg, Some(0 | 360)), "{:?}", r.wind_direction_deg);
    assert_eq!(r.weather_code, None);
    let r = &d.records[1];
    assert_eq!((r.temperature_c.get(), r.wind_direction_deg, r.forecast_hour), (Some(12.5), Some(90), 1));
}

#[test]
fn model_ids() {
    assert_eq!(resolve_model("gfs_seamless", false), Ok("GFS"));
    assert_eq!(resolve_model("gfs_seamless", true), Ok("GEFS"));
    assert_eq!(resolve_model("gfs05", false), Ok("GEFS"));
    assert_eq!(resolve_model("ncep_gfs013", false), Ok("GFS"));
    assert_eq!(resolve_model("ecmwf_ifs04", false), Ok("ECMWF-IFS"));
    assert_eq!(resolve_model("gem_hrdps_continental", false), Ok("GEM-HRDPS"));
    assert_eq!(resolve_model("ncep_nbm_conus", false), Ok("NBM"));
    assert_eq!(resolve_model("meteofrance_arpege_world", false), Ok("ARPEGE"));
    assert!(resolve_model("ecmwf_ifs025", true).unwrap_err().contains("ECMWF ensemble"));
    assert!(resolve_model("ecmwf_aifs025_single", false).unwrap_err().contains("AIFS"));
    assert!(resolve_model("icon_seamless", true).is_err());
    for (_, name) in DETERMINISTIC.iter().chain(ENSEMBLE) {
        assert!(is_model(name), "{name}");
    }
}

#[test]
fn key_parsing() {
    let p = parse_key("temperature_2m_member07_ncep_gefs025").unwrap();
    assert_eq!((p.var, p.member, p.day, p.model), (Var::Temp, Some(7), None, Some("ncep_gefs025")));
    let p = parse_key("precipitation_previous_day3_ecmwf_ifs025").unwrap();
    assert_eq!((p.var, p.member, p.day, p.model), (Var::Precip, None, Some(3), Some("ecmwf_ifs025")));
    let p = parse_key("temperature_2m").unwrap();
    assert_eq!((p.member, p.day, p.model), (None, None, None));
    assert!(parse_key("temperature_2m_spread_ncep_gefs025").is_none());
    assert!(parse_key("temperature_80m").is_none());
    assert!(parse_key("wind_speed_100m_gfs_seamless").is_none());
    assert_eq!(parse_key("precipitation_probability").unwrap().model, Some("probability"));
}

#[test]
fn whole_response_errors_and_garbage() {
    let cases: [(&[u8], &str); 6] = [
        (b"", "bad JSON"),
        (b"\xff\x00{]", "bad JSON"),
        (br#"{"error":true,"reason":"Latitude must be in range of -90 to 90"}"#, "Open-Meteo error: Latitude"),
        (br#"[{"hourly":{}},{"hourly":{}}]"#, "2 locations"),
        (br#"{"hourly":{"time":["2026-01-01T00:00"],"precipitation_gfs_seamless":[1]}}"#, "no temperature_2m"),
        (br#"{"daily":{}}"#, "no hourly"),
    ];
    for (input, want) in cases {
        let d = decode_open_meteo(input, "KNYC", None);
        assert!(d.records.is_empty());
        assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
        assert!(d.errors[0].reason.starts_with(want), "{} vs {want}", d.errors[0].reason);
    }
    let d = decode_open_meteo(PLAIN.as_bytes(), "  ", None);
    assert_eq!(d.errors[0].reason, "empty location_name");
    // Truncated real file.
    let full = fixture("forecast/openmeteo_ensemble_knyc_gefs_ecmwf_2026-09-24_27.json");
    for cut in [1, 100, full.len() / 2, full.len() - 3] {
        let d = decode_open_meteo(&full[..cut], "KNYC", None);
        assert!(d.records.is_empty() && d.errors.len() == 1);
    }
}

#[test]
fn bad_entries_are_reported_per_hour_or_key() {
    let json = r#"{"utc_offset_seconds":0,"hourly_units":{"temperature_2m_gfs_seamless":"K"},
          "hourly":{"time":["2026-01-01T00:00","yesterday","2026-01-01T02:00"],
            "temperature_2m_gfs_seamless":[1,2,3],
            "temperature_2m_icon_global":[1.5,"2.5",3.5],
            "temperature_2m_jma_seamless":[1,2],
            "temperature_2m_gem_global":{"a":1}}}"#;
    let d = decode_open_meteo(json.as_bytes(), "X", None);
    let mut got: Vec<(usize, String)> = d.errors.iter().map(|e| (e.line, e.reason.clone())).collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (0, "temperature_2m_gem_global: expected an array".to_string()),
            (0, "temperature_2m_gfs_seamless: unknown unit 'K'".to_string()),
            (0, "temperature_2m_jma_seamless: 2 values for 3 times".to_string()),
            (2, "bad time \"yesterday\"".to_string()),
            (2, "temperature_2m_icon_global: expected a number, found \"2.5\"".to_string()),
        ]
    );
    // ICON hours 0 and 2 (hour 1 has a bad time and a bad value).
    assert_eq!(d.records.len(), 2);
    assert!(d.records.iter().all(|r| r.model == "ICON"));
    assert_eq!(d.records[1].temperature_c, Some(3.5));
}

/// Names from the response (model suffixes, units, keys) reach reasons quoted and escaped,
/// like every decoder's (the fuzz targets check it).
#[test]
fn names_from_the_response_are_escaped_in_reasons() {
    let json = PLAIN.replace("gfs_graphcast025", "gfs\\u0001cast");
    let d = decode_open_meteo(json.as_bytes(), "KNYC", None);
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    assert_eq!(d.errors[0].reason, "unknown Open-Meteo model 'gfs\\u{1}cast'");
}
