//! Forecast-side endpoints through the router: raw forecasts and runs, NWS hourly
//! versions, precipitation, v1 forecasts.

use axum::http::StatusCode;
use chrono::{Duration, TimeZone, Utc};
use wxlake::decode::types::{DailyKind, DailyReport, ForecastRow};
use wxlake::ingest::{ingest_bytes, Format, IngestOptions, Summary};

use crate::http::App;
use crate::support::{fixture, knyc_forecast};

async fn store(app: &App, format: Format, bytes: &[u8], opts: IngestOptions) -> Summary {
    let mut s = Summary::default();
    ingest_bytes(app.state.lake(), format, "test", bytes, &opts, &mut s).await.unwrap();
    assert!(s.rejected == 0, "{s}");
    s
}

fn row(model: &'static str, run_h: i64, lead: i64, f: f64) -> ForecastRow {
    knyc_forecast(model, Utc.with_ymd_and_hms(2026, 3, 8, 0, 0, 0).unwrap() + Duration::hours(run_h), lead, f)
}

#[tokio::test]
async fn raw_forecasts_runs_and_latest() {
    let app = App::new().await;
    let mut rows = Vec::new();
    for lead in 0..48 {
        rows.push(row("GFS", 0, lead, 40.0 + lead as f64 * 0.1));
        rows.push(row("GFS", 6, lead, 41.0 + lead as f64 * 0.1));
        rows.push(row("HRRR", 6, lead.min(18), 42.0));
    }
    // A point outside the catalog that a feed fetches model output for (a MOS station).
    for lead in 0..6 {
        let mut r = row("NAM-MOS", 0, lead * 3, 45.0);
        r.location_name = "KORD".into();
        rows.push(r);
    }
    let csv = wxlake::decode::forecast_rows::encode_forecast_csv(&rows);
    store(&app, Format::Forecasts, csv.as_bytes(), IngestOptions::default()).await;

    // Raw window: every run intersecting it, all models.
    let (s, v) = app
        .get("/api/v2/forecasts.php?location_name=KNYC&start_valid_time=2026-03-08T10:00:00Z&end_valid_time=2026-03-08T11:00:00Z")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let rows_back = v.as_array().unwrap();
    // GFS 00Z (2) + GFS 06Z (2) + HRRR 06Z (2).
    assert_eq!(rows_back.len(), 6, "{v}");
    let first = &rows_back[0];
    assert_eq!(first["model"], "GFS");
    assert_eq!(first["run_time"], "2026-03-08T00:00:00Z");
    assert_eq!(first["valid_time"], "2026-03-08T10:00:00Z");
    assert_eq!(first["forecast_hour"], 10);
    assert_eq!(first["temperature_f"].as_f64(), Some(41.0));
    assert!(first["temperature_k"].is_f64() && first["temperature_c"].is_f64());
    assert!(first.get("relative_humidity").unwrap().is_null(), "nullable fields are present as null");
    assert!(first["id"].is_i64() && first["inserted_at"].is_string());

    // run=latest needs model; answers the 06Z run with X-Run-Time.
    let (s, v) = app.get("/api/v2/forecasts.php?location_name=KNYC&run=latest").await;
    assert_eq!((s, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("Missing required parameter: model")));
    let (s, h, v) = app
        .call(
            "GET",
            "/api/v2/forecasts.php?location_name=KNYC&run=latest&model=GFS",
            Some(app.key(wxlake::access::keys::Tier::Developer)),
            "",
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["x-run-time"], "2026-03-08T06:00:00Z");
    assert_eq!(v.as_array().unwrap().len(), 48, "F00 to the run's last lead");
    // A pinned run filtered by a window.
    let (_, v) = app
        .get("/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=2026-03-08T00:00:00Z&start_valid_time=2026-03-08T00:00:00Z&end_valid_time=2026-03-08T02:00:00Z")
        .await;
    let hours: Vec<i64> = v.as_array().unwrap().iter().map(|r| r["forecast_hour"].as_i64().unwrap()).collect();
    assert_eq!(hours, [0, 1, 2]);
    // Empty results are [] with 200.
    let (s, v) = app.get("/api/v2/forecasts.php?location_name=KNYC&run=latest&model=UKMO").await;
    assert_eq!((s, v.as_array().map(Vec::len)), (StatusCode::OK, Some(0)));
    let (s, v) = app
        .get("/api/v2/forecasts.php?location_name=KMDW&start_valid_time=2026-03-08T10:00:00Z&end_valid_time=2026-03-08T11:00:00Z")
        .await;
    assert_eq!((s, v.as_array().map(Vec::len)), (StatusCode::OK, Some(0)));
    // Bad parameters.
    for q in [
        "location_name=KNYC&start_valid_time=2026-03-08T10:00:00Z",
        "location_name=KNYC&model=gfs&run=latest",
        "location_name=KNYC&run=yesterday",
        "location_name=K'NYC&run=latest&model=GFS",
        "location_name=KNYC&start_valid_time=2026-03-09T00:00:00Z&end_valid_time=2026-03-08T00:00:00Z",
    ] {
        let (s, v) = app.get(&format!("/api/v2/forecasts.php?{q}")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}: {v}");
    }
    // A location outside the catalog with forecasts is served; its daily summaries need a
    // configured timezone (spec 4.2 rule 6). A location with none is an unknown station.
    let (s, v) = app.get("/api/v2/forecasts.php?location_name=KORD&model=NAM-MOS&run=latest").await;
    assert_eq!((s, v.as_array().map(Vec::len)), (StatusCode::OK, Some(6)), "{v}");
    let (s, v) = app.get("/api/v2/forecasts.php?location_name=KORD&mode=daily").await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    for q in ["location_name=KXYZ&mode=daily", "location_name=KXYZ&run=latest&model=GFS"] {
        let (s, v) = app.get(&format!("/api/v2/forecasts.php?{q}")).await;
        assert_eq!((s, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("Unknown station: KXYZ")), "{q}: {v}");
    }

    // v1: the same rows with the v1 columns only.
    let (s, v) = app
        .get("/api/v1/forecasts.php?location_name=KNYC&model=HRRR&start_valid_time=2026-03-08T10:00:00Z&end_valid_time=2026-03-08T10:00:00Z")
        .await;
    assert_eq!(s, StatusCode::OK);
    let keys: Vec<&String> = v[0].as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 8, "{keys:?}");
    assert_eq!(v[0]["temperature_f"].as_f64(), Some(42.0));
    let (s, _) = app.get("/api/v1/forecasts.php?location_name=KNYC").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

/// Raw requests with a model come from the hot cache (api/forecast_cache.rs): the same
/// rows as the lake query, and runs ingested through the server show at once.
#[tokio::test]
async fn raw_forecasts_loading_cache_matches_the_lake_and_follows_live_ingest() {
    let app = App::new().await;
    let mut rows: Vec<ForecastRow> = (0..48).map(|lead| row("GFS", 0, lead, 40.0 + lead as f64 * 0.1)).collect();
    rows.extend((0..19).map(|lead| row("HRRR", 6, lead, 42.0)));
    store(
        &app,
        Format::Forecasts,
        wxlake::decode::forecast_rows::encode_forecast_csv(&rows).as_bytes(),
        IngestOptions::default(),
    )
    .await;
    let window = "start_valid_time=2026-03-08T10:00:00Z&end_valid_time=2026-03-08T20:00:00Z";
    let (_, cached) = app.get(&format!("/api/v2/forecasts.php?location_name=KNYC&model=GFS&{window}")).await;
    let (_, all) = app.get(&format!("/api/v2/forecasts.php?location_name=KNYC&{window}")).await;
    let from_lake: Vec<&serde_json::Value> = all.as_array().unwrap().iter().filter(|r| r["model"] == "GFS").collect();
    assert_eq!(cached.as_array().unwrap().len(), 11);
    assert_eq!(cached.as_array().unwrap().iter().collect::<Vec<_>>(), from_lake, "cache and lake give the same rows");
    assert_eq!(latest_runs(&app).await, ["GFS 2026-03-08T00:00:00Z", "HRRR 2026-03-08T06:00:00Z"]);

    // A new run through the server's ingest: visible in the next request.
    let new_run: Vec<ForecastRow> = (0..48).map(|lead| row("GFS", 6, lead, 50.0)).collect();
    let (s, v) = app.ingest("forecasts", "", &wxlake::decode::forecast_rows::encode_forecast_csv(&new_run)).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    app.state.live.flush().await.unwrap();
    let (_, all) = app.get(&format!("/api/v2/forecasts.php?location_name=KNYC&{window}")).await;
    assert_eq!(all.as_array().unwrap().iter().filter(|r| r["model"] == "GFS").count(), 22, "lake path");
    let (_, cached) = app.get(&format!("/api/v2/forecasts.php?location_name=KNYC&model=GFS&{window}")).await;
    assert_eq!(cached.as_array().unwrap().len(), 22, "both runs: {cached}");
    let (_, h, latest) = app
        .call(
            "GET",
            "/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=latest",
            Some(app.key(wxlake::access::keys::Tier::Developer)),
            "",
        )
        .await;
    assert_eq!(h["x-run-time"], "2026-03-08T06:00:00Z");
    assert_eq!(latest.as_array().unwrap().len(), 48);
    // The station answer names the same latest runs; an older run stored later (a
    // backfill) does not replace a newer one.
    assert_eq!(latest_runs(&app).await, ["GFS 2026-03-08T06:00:00Z", "HRRR 2026-03-08T06:00:00Z"]);
    // An older GFS run stored through the server (yesterday's date): the cached entry
    // re-reads from that date, not only from its newest run's.
    let older: Vec<ForecastRow> = (0..48).map(|lead| row("GFS", -12, lead, 30.0)).collect();
    let (s, v) = app.ingest("forecasts", "", &wxlake::decode::forecast_rows::encode_forecast_csv(&older)).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    app.state.live.flush().await.unwrap();
    let (_, all) = app.get(&format!("/api/v2/forecasts.php?location_name=KNYC&{window}")).await;
    let from_lake: Vec<&serde_json::Value> = all.as_array().unwrap().iter().filter(|r| r["model"] == "GFS").collect();
    let (_, cached) = app.get(&format!("/api/v2/forecasts.php?location_name=KNYC&model=GFS&{window}")).await;
    assert_eq!(from_lake.len(), 33, "three runs in the window");
    assert_eq!(cached.as_array().unwrap().iter().collect::<Vec<_>>(), from_lake, "the refreshed entry equals the lake");
    let old_run: Vec<ForecastRow> = (0..19).map(|lead| row("HRRR", -6, lead, 39.0)).collect();
    let (s, v) = app.ingest("forecasts", "", &wxlake::decode::forecast_rows::encode_forecast_csv(&old_run)).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    app.state.live.flush().await.unwrap();
    assert_eq!(latest_runs(&app).await, ["GFS 2026-03-08T06:00:00Z", "HRRR 2026-03-08T06:00:00Z"]);
    // Windows older than the cache's reach are read from the lake.
    let (s, v) = app
        .get("/api/v2/forecasts.php?location_name=KNYC&model=GFS&start_valid_time=2025-12-01T00:00:00Z&end_valid_time=2025-12-02T00:00:00Z")
        .await;
    assert_eq!((s, v.as_array().map(Vec::len)), (StatusCode::OK, Some(0)));
}

/// `stations.php?include=latest_runs` for KNYC: "model run_time" in the models' order.
async fn latest_runs(app: &App) -> Vec<String> {
    let (s, v) = app.get("/api/v2/stations.php?station_code=KNYC&include=latest_runs").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let runs = v[0]["latest_runs"].as_array().unwrap_or_else(|| panic!("no latest_runs: {v}"));
    runs.iter().map(|r| format!("{} {}", r["model"].as_str().unwrap(), r["run_time"].as_str().unwrap())).collect()
}

#[tokio::test]
async fn nws_hourly_versions_per_lst_date() {
    let app = App::new().await;
    app.clock.set(Utc.with_ymd_and_hms(2026, 9, 24, 12, 0, 0).unwrap());
    let real = std::fs::read_to_string(fixture("forecast/nws_hourly_forecast_knyc_gen20260924T0316Z.json")).unwrap();
    let opts = || IngestOptions { station: Some("KNYC".into()), ..Default::default() };
    store(&app, Format::NwsHourly, real.as_bytes(), opts()).await;
    // A later version with one hour changed, and a third identical to the second.
    let v2 = real.replace("2026-09-24T03:16:37+00:00", "2026-09-24T04:16:37+00:00").replacen(
        "\"temperature\":68",
        "\"temperature\":70",
        1,
    );
    assert_ne!(v2, real, "fixture edit must apply");
    store(&app, Format::NwsHourly, v2.as_bytes(), opts()).await;
    let v3 = v2.replace("2026-09-24T04:16:37+00:00", "2026-09-24T04:46:37+00:00");
    store(&app, Format::NwsHourly, v3.as_bytes(), opts()).await;

    let (s, v) = app.get("/api/v2/nws_forecasts.php?station_code=KNYC&date=2026-09-24&mode=history").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["total_versions"], 2, "an unchanged version is not a new one");
    let first = &v["forecasts"][0];
    // Read off the JSON: slots from 05:00Z (midnight EST) hourly.
    let want: Vec<i64> =
        vec![55, 55, 54, 53, 52, 52, 52, 53, 56, 59, 62, 64, 66, 67, 67, 68, 67, 66, 66, 64, 62, 60, 59, 60, 59];
    let got: Vec<i64> = first["hourly_temps"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
    assert_eq!(got, want);
    assert_eq!((first["high"].as_i64(), first["low"].as_i64()), (Some(68), Some(52)));
    assert_eq!(v["forecasts"][1]["high"].as_i64(), Some(70));
    assert_eq!(v["time_convention"], "local_standard_time");
    assert_eq!(v["timezone_offset_hours"], -5);

    let (_, latest) = app.get("/api/v2/nws_forecasts.php?station_code=KNYC&date=2026-09-24").await;
    assert_eq!((latest["version"].as_u64(), latest["high"].as_i64()), (Some(2), Some(70)));
    assert_eq!(latest["hourly_temps"].as_array().unwrap().len(), 25);
    // The evening before: the 03:16Z version starts at 23:00 EDT = 22:00 EST (slot 22); by
    // the 04:16Z version that hour has ended, so it is null there: a new version.
    let (_, d23) = app.get("/api/v2/nws_forecasts.php?station_code=KNYC&date=2026-09-23&mode=history").await;
    assert_eq!(d23["total_versions"], 2, "{d23}");
    let v1 = d23["forecasts"][0]["hourly_temps"].as_array().unwrap();
    assert!(v1[..22].iter().all(|t| t.is_null()), "{d23}");
    assert_eq!((v1[22].as_i64(), v1[23].as_i64(), v1[24].as_i64()), (Some(57), Some(57), Some(55)));
    let v2 = d23["forecasts"][1]["hourly_temps"].as_array().unwrap();
    assert!(v2[..23].iter().all(|t| t.is_null()), "{d23}");
    assert_eq!(v2[23].as_i64(), Some(57));
    // Date limits.
    for d in ["2026-09-27", "2025-09-23", "tomorrow"] {
        let (s, v) = app.get(&format!("/api/v2/nws_forecasts.php?station_code=KNYC&date={d}")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{d}: {v}");
    }
    let (s, v) = app.get("/api/v2/nws_forecasts.php?station_code=KMDW&date=2026-09-26").await;
    assert_eq!((s, v["version"].is_null()), (StatusCode::OK, true), "no version yet is not an error");
}

#[tokio::test]
async fn precipitation_month_to_date_plus_today() {
    let app = App::new().await;
    let cli = DailyReport {
        kind: DailyKind::Cli,
        station: "KNYC".into(),
        date: chrono::NaiveDate::from_ymd_opt(2026, 3, 7).unwrap(),
        max_f: Some(50),
        max_time_lst: None,
        min_f: Some(38),
        min_time_lst: None,
        precip_in: Some(0.1),
        precip_trace: false,
        precip_mtd_in: Some(1.25),
        precip_mtd_trace: false,
        is_final: true,
        valid_as_of_lst: None,
        issued_at: Some(Utc.with_ymd_and_hms(2026, 3, 8, 11, 0, 0).unwrap()),
        correction: false,
        raw: String::new(),
    };
    let text = wxlake::decode::climate_report::encode_cli(&cli, "CENTRAL PARK NY");
    let (s, v) = app.ingest("cli", "", &text).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    let reports = "\
KNYC 081451Z 27008KT 10SM -RA BKN050 08/06 A3021 RMK AO2 P0002 T00780061
KNYC 081500Z AUTO 27008KT 10SM -RA BKN050 08/06 A3021 RMK P0001 T00800060 MADISHF
KNYC 081545Z AUTO 27008KT 10SM -RA BKN050 08/06 A3021 RMK P0003 T00800060 MADISHF
KNYC 081551Z 27008KT 10SM -RA BKN050 08/06 A3021 RMK AO2 P0004 T00780061
KNYC 081600Z AUTO 27008KT 10SM BKN050 08/06 A3021 RMK P0000 T00800060 MADISHF
";
    let (s, v) = app.ingest("metar", "month=2026-03", reports).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    let (s, v) = app.get("/api/v2/precipitation.php?station_code=KNYC").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["official_mtd"].as_f64(), Some(1.25));
    assert_eq!(v["cli_date"], "2026-03-07");
    assert_eq!(v["today_local_date"], "2026-03-08");
    assert_eq!(v["today_hourly_max"]["2026-03-08 09"].as_f64(), Some(0.02));
    assert_eq!(v["today_hourly_max"]["2026-03-08 10"].as_f64(), Some(0.04));
    assert_eq!(v["today_precip"].as_f64(), Some(0.06));
    assert_eq!(v["total_mtd"].as_f64(), Some(1.31));
    assert_eq!(v["has_trace"], true);
    assert_eq!(v["last_trace_time"], "2026-03-08 11:00:00");
    assert_eq!((v["month"].as_i64(), v["year"].as_i64(), v["units"].as_str()), (Some(3), Some(2026), Some("inches")));
    let (s, _) = app.get("/api/v2/precipitation.php?station_code=EGLC").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn nearby_and_pacing_for_premium_tiers() {
    let app = App::new().await;
    let (s, v) = app
        .ingest("metar", "month=2026-03", "KNYC 081600Z AUTO 28009KT 10SM CLR 10/M06 A3020 RMK T01001060 MADISHF\n")
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    let rows: Vec<ForecastRow> = (0..48).map(|lead| row("GFS", 6, lead, 38.0 + lead as f64)).collect();
    store(
        &app,
        Format::Forecasts,
        wxlake::decode::forecast_rows::encode_forecast_csv(&rows).as_bytes(),
        IngestOptions::default(),
    )
    .await;

    for tier in [wxlake::access::keys::Tier::Professional, wxlake::access::keys::Tier::Testing] {
        for path in ["/api/v2/nearby.php?station_code=KLGA", "/api/v2/pacing.php?station_code=KNYC"] {
            let (s, _, v) = app.call("GET", path, Some(app.key(tier)), "").await;
            assert_eq!((s, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("Access Denied")), "{tier:?} {path}");
        }
    }

    let (s, v) = app.get("/api/v2/nearby.php?station_code=KLGA&radius_km=30").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let st = v["stations"].as_array().unwrap();
    assert_eq!(st.len(), 1, "{v}");
    assert_eq!(st[0]["station_code"], "KNYC");
    let d = st[0]["distance_km"].as_f64().unwrap();
    assert!((5.0..15.0).contains(&d), "{d}");
    assert_eq!(st[0]["latest"]["observation_time"], "2026-03-08 16:00:00");
    let (_, v) = app.get("/api/v2/nearby.php?stations=KNYC,EGLC").await;
    assert_eq!(v["stations"][1]["latest"], serde_json::Value::Null);
    for q in ["", "station_code=KLGA&radius_km=-3", "stations=KNYC,NOPE"] {
        let (s, _) = app.get(&format!("/api/v2/nearby.php?{q}")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
    }

    // Observed 50 °F at 16Z; GFS 06Z says 38 + lead: 48 at 16Z → pace +2; over the LST day
    // (05Z–05Z, leads 0..22) it peaks at 60 and bottoms at 38.
    let (s, v) = app.get("/api/v2/pacing.php?station_code=KNYC").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!((v["date"].as_str(), v["logic"].as_str()), (Some("2026-03-08"), Some("nws")));
    let gfs = &v["models"][0];
    assert_eq!(gfs["model"], "GFS");
    assert_eq!(gfs["run_time"], "2026-03-08T06:00:00Z");
    assert_eq!((gfs["model_at_observation"].as_f64(), gfs["pace"].as_f64()), (Some(48.0), Some(2.0)));
    assert_eq!((gfs["model_high"].as_f64(), gfs["high_pace"].as_f64()), (Some(60.0), Some(62.0)));
    assert_eq!((gfs["model_low"].as_f64(), gfs["low_pace"].as_f64()), (Some(38.0), Some(40.0)));
    assert!(v["nws"].is_null(), "no NWS hourly forecast ingested");
}

#[tokio::test]
async fn daily_summaries_from_the_forecast_daily_job() {
    let app = App::new().await;
    let mut rows = Vec::new();
    for lead in 0..48 {
        rows.push(row("GFS", 0, lead, 40.0 + lead as f64 * 0.1));
        rows.push(row("HRRR", 6, lead.min(18), 42.0));
    }
    store(
        &app,
        Format::Forecasts,
        wxlake::decode::forecast_rows::encode_forecast_csv(&rows).as_bytes(),
        IngestOptions::default(),
    )
    .await;
    let specs = wxlake::jobs::embedded_specs().unwrap();
    let spec = specs.iter().find(|s| s.name == "forecast_daily").unwrap();
    let run = wxlake::jobs::run_job(app.state.lake(), spec, None, &wxlake::jobs::runner::no_progress).await.unwrap();
    assert!(run.rows > 0, "{run:?}");

    // DST starts on 2026-03-08 in New York: the civil day is 23 hours (05Z..04Z), the
    // standard day 24 (05Z..05Z). The 00Z GFS run covers both; the 9th ends 23Z: partial.
    let key = app.key(wxlake::access::keys::Tier::Developer).to_string();
    let (s, h, v) = app.call("GET", "/api/v2/forecasts.php?location_name=KNYC&mode=daily", Some(&key), "").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let days = v.as_array().unwrap();
    assert_eq!(days.len(), 1, "only the fully covered day, only GFS (HRRR starts 06Z): {v}");
    let d = &days[0];
    assert_eq!(
        (d["model"].as_str(), d["date"].as_str(), d["tz_mode"].as_str()),
        (Some("GFS"), Some("2026-03-08"), Some("civil"))
    );
    assert_eq!(
        (d["points_used"].as_i64(), d["high_f"].as_f64(), d["low_f"].as_f64()),
        (Some(23), Some(42.7), Some(40.5))
    );
    assert!(d.get("high_c").is_none(), "US stations carry Fahrenheit fields only");
    assert_eq!(d["timezone"], "America/New_York");
    let sig = h["x-run-signature"].to_str().unwrap().to_string();
    assert!(h.get("x-run-time").is_none(), "X-Run-Time answers run=latest");
    // run=latest names the run it resolved to (docs/serving.md: "run=latest (with X-Run-Time)"), as
    // raw mode does; without a model, the newest run summarized.
    for q in ["&model=GFS&run=latest", "&run=latest"] {
        let uri = format!("/api/v2/forecasts.php?location_name=KNYC&mode=daily{q}");
        let (s, h, v) = app.call("GET", &uri, Some(&key), "").await;
        assert_eq!((s, v.as_array().map(Vec::len)), (StatusCode::OK, Some(1)), "{uri}: {v}");
        assert_eq!(h["x-run-time"], "2026-03-08T00:00:00Z", "{uri}");
        assert_eq!(h["x-run-signature"].to_str().unwrap(), sig, "{uri}");
    }
    let (_, h, v) = app
        .call("GET", "/api/v2/forecasts.php?location_name=KNYC&mode=daily&model=UKMO&run=latest", Some(&key), "")
        .await;
    assert_eq!(v.as_array().map(Vec::len), Some(0));
    assert!(h.get("x-run-time").is_none(), "no run, no X-Run-Time");
    let (_, h2, _) =
        app.call("GET", "/api/v2/forecasts.php?location_name=KNYC&mode=daily&model=GFS", Some(&key), "").await;
    assert_eq!(h2["x-run-signature"].to_str().unwrap(), sig, "same set of runs, same signature");

    let (_, v) = app.get("/api/v2/forecasts.php?location_name=KNYC&mode=daily&tz_mode=standard").await;
    assert_eq!((v[0]["points_used"].as_i64(), v[0]["high_f"].as_f64()), (Some(24), Some(42.8)));
    let (_, v) = app.get("/api/v2/forecasts.php?location_name=KNYC&mode=daily&run=2026-03-08T00:00:00Z").await;
    assert_eq!(v.as_array().unwrap().len(), 1);
    let (s, v) = app.get("/api/v2/forecasts.php?location_name=KNYC&mode=daily&model=UKMO").await;
    assert_eq!((s, v.as_array().map(Vec::len)), (StatusCode::OK, Some(0)), "no covered day is [] with 200");
}
