//! The accuracy chain end to end: forecasts and CLI reports in the lake, the jobs
//! (forecast_daily → daily_extremes → accuracy_pairs → model_accuracy, accuracy_trends,
//! accuracy_daily_detail), then /api/v2/model_accuracy.php and the table-backed
//! /api/v2/daily_extremes.php.
//!
//! Fixture at KNYC (LST day D = D 05:00Z .. D+1 05:00Z), days 2026-03-01..04, final CLI
//! highs 50, 52, 54, 56 and lows 30, one METAR a day. Each run forecasts one constant temperature T:
//! - GFS 00Z of day D: T = high(D) - 1 → lead 1 error +1 (its D+1 is lead 2);
//! - GFS 12Z of day D-1: T = high(D) + 3 → lead 1 error -3;
//! - HRRR 00Z of day D (48 h): T = high(D) → lead 1 error 0.

use axum::http::StatusCode;
use chrono::{Duration, NaiveDate, TimeZone, Utc};
use serde_json::{json, Value};
use wxlake::access::keys::Tier;
use wxlake::decode::types::{DailyKind, DailyReport, ForecastRow};
use wxlake::ingest::{ingest_bytes, Format, IngestOptions, Summary};

use crate::http::App;
use crate::support::knyc_forecast;

const HIGHS: [(u32, f64); 4] = [(1, 50.0), (2, 52.0), (3, 54.0), (4, 56.0)];

/// The run of `model` at `hour` UTC on March `day` (0 = February 28).
fn run(model: &'static str, day: u32, hour: i64, temp: f64, leads: i64) -> Vec<ForecastRow> {
    let run = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap() + Duration::hours(24 * (i64::from(day) - 1) + hour);
    (0..=leads).map(|lead| knyc_forecast(model, run, lead, temp)).collect()
}

fn cli(day: u32, high: f64) -> String {
    let r = DailyReport {
        kind: DailyKind::Cli,
        station: "KNYC".into(),
        date: NaiveDate::from_ymd_opt(2026, 3, day).unwrap(),
        max_f: Some(high as i32),
        max_time_lst: None,
        min_f: Some(30),
        min_time_lst: None,
        precip_in: Some(0.0),
        precip_trace: false,
        precip_mtd_in: Some(0.0),
        precip_mtd_trace: false,
        is_final: true,
        valid_as_of_lst: None,
        issued_at: Some(Utc.with_ymd_and_hms(2026, 3, day + 1, 11, 0, 0).unwrap()),
        correction: false,
        raw: String::new(),
    };
    wxlake::decode::climate_report::encode_cli(&r, "CENTRAL PARK NY")
}

async fn store(app: &App, format: Format, bytes: &[u8]) {
    let mut s = Summary::default();
    let opts = IngestOptions { month: Some((2026, 3)), ..Default::default() };
    ingest_bytes(app.state.lake(), format, "test", bytes, &opts, &mut s).await.unwrap();
    assert_eq!(s.rejected, 0, "{s}");
}

/// The fixture above with every job run, in dependency order.
async fn app_with_accuracy() -> App {
    let app = App::new().await;
    let mut rows = Vec::new();
    for (day, high) in HIGHS {
        rows.extend(run("GFS", day, 0, high - 1.0, 56));
        rows.extend(run("GFS", day - 1, 12, high + 3.0, 64));
        rows.extend(run("HRRR", day, 0, high, 48));
        store(&app, Format::Cli, cli(day, high).as_bytes()).await;
        // One observation a day (41 °F, below every CLI value): the final CLI decides.
        let metar = format!("KNYC {day:02}1800Z AUTO 27008KT 10SM CLR 05/M06 A3020 RMK T00501060\n");
        store(&app, Format::Metar, metar.as_bytes()).await;
    }
    store(&app, Format::Forecasts, wxlake::decode::forecast_rows::encode_forecast_csv(&rows).as_bytes()).await;
    let specs = wxlake::jobs::embedded_specs().unwrap();
    let runs = wxlake::jobs::run_all(app.state.lake(), &specs, None, &wxlake::jobs::runner::no_progress).await.unwrap();
    assert!(runs.iter().all(|r| r.status == wxlake::jobs::RunStatus::Ok), "{runs:?}");
    app
}

fn metrics(v: &Value) -> (f64, f64, f64, i64) {
    (v["mae"].as_f64().unwrap(), v["bias"].as_f64().unwrap(), v["rmse"].as_f64().unwrap(), v["n"].as_i64().unwrap())
}

#[tokio::test]
async fn model_accuracy_from_the_jobs() {
    let app = app_with_accuracy().await;
    let (s, v) = app.get("/api/v2/model_accuracy.php?station_code=KNYC").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!((v["station"].as_str(), v["city"].as_str()), (Some("KNYC"), Some("New York")), "{v}");
    assert_eq!(
        (v["window"].as_str(), v["as_of"].as_str(), v["lead_days"].as_i64()),
        (Some("7d"), Some("2026-03-04"), Some(1))
    );
    assert!(v["computed_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{v}");
    assert_eq!(v["models"], json!(["GFS", "HRRR"]));
    assert_eq!(v["days_available"], 4);
    // 12 pairs: errors +1 x4, -3 x4, 0 x4 → MAE 16/12, bias -8/12, RMSE sqrt(40/12).
    assert_eq!(metrics(&v["ensemble"]), (1.33, -0.67, 1.83, 12));
    assert_eq!(metrics(&v["per_model"]["GFS"]), (2.0, -1.0, 2.24, 8));
    assert_eq!(metrics(&v["per_model"]["HRRR"]), (0.0, 0.0, 0.0, 4));
    assert_eq!(metrics(&v["per_model_run"]["GFS"]["00z"]), (1.0, 1.0, 1.0, 4));
    assert_eq!(metrics(&v["per_model_run"]["GFS"]["12z"]), (3.0, -3.0, 3.0, 4));
    assert!(v.get("trends").is_none() && v.get("daily_detail").is_none(), "sections only on request");

    // Filters: labels and models pool only what they select; sections follow them.
    let (_, v) = app.get("/api/v2/model_accuracy.php?station_code=KNYC&run_time=00z&include=trends,daily_detail").await;
    assert_eq!(metrics(&v["ensemble"]), (0.5, 0.5, 0.71, 8));
    assert_eq!(metrics(&v["per_model"]["GFS"]), (1.0, 1.0, 1.0, 4));
    assert_eq!(v["per_model_run"]["GFS"].as_object().unwrap().len(), 1, "{v}");
    let gfs_trend = v["trends"]["GFS"].as_array().unwrap();
    assert_eq!(gfs_trend.last().unwrap(), &json!({"date": "2026-03-04", "mae_7d": 1.0, "bias_7d": 1.0, "n": 4}));
    assert_eq!(gfs_trend[0], json!({"date": "2026-03-01", "mae_7d": 1.0, "bias_7d": 1.0, "n": 1}));
    let last = v["daily_detail"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last,
        json!({"date": "2026-03-04", "actual_high": 56.0, "models": {"GFS": 55.0, "HRRR": 56.0},
               "run_times": {"GFS": "00z", "HRRR": "00z"}})
    );
    let (_, v) = app
        .get("/api/v2/model_accuracy.php?station_code=KNYC&model=GFS&run_time=12z&include=daily_detail,trends")
        .await;
    assert_eq!(v["models"], json!(["GFS"]));
    assert_eq!(v["daily_detail"][3]["models"], json!({"GFS": 59.0}));
    assert_eq!(v["daily_detail"][3]["run_times"], json!({"GFS": "12z"}));
    assert_eq!(v["trends"].as_object().unwrap().keys().collect::<Vec<_>>(), ["GFS"]);
    let (_, v) = app.get("/api/v2/model_accuracy.php?station_code=KNYC&model=HRRR,GFS&include=trends").await;
    // All GFS labels on 03-04: 8 pairs, errors +1 and -3.
    assert_eq!(v["trends"]["GFS"].as_array().unwrap().last().unwrap()["mae_7d"], 2.0);

    // A run label with no data and a model with no data are simply absent.
    let (s, v) = app.get("/api/v2/model_accuracy.php?station_code=KNYC&run_time=06z&model=ECMWF-IFS,NWS").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (v["models"].clone(), v["ensemble"].clone(), v["days_available"].clone()),
        (json!([]), Value::Null, json!(0))
    );

    // Lead 2: GFS 00Z of D-1 for D (errors +3 on 03-02..04), GFS 12Z of D-2 (T = high(D-1)+3:
    // errors -1); HRRR's 48 h never reach a second day.
    let (_, v) = app.get("/api/v2/model_accuracy.php?station_code=KNYC&lead_days=2").await;
    assert_eq!(metrics(&v["per_model_run"]["GFS"]["00z"]), (3.0, 3.0, 3.0, 3));
    assert_eq!(metrics(&v["per_model_run"]["GFS"]["12z"]), (1.0, -1.0, 1.0, 3));
    assert_eq!(v["models"], json!(["GFS"]));

    // Lows verify against the CLI's 30: GFS 00Z error 30 - (high - 1) = -19, -21, -23, -25:
    // MAE 22, bias -22, RMSE sqrt((361 + 441 + 529 + 625) / 4) = sqrt(489) = 22.11.
    let (_, v) = app
        .get("/api/v2/model_accuracy.php?station_code=KNYC&target=low&model=GFS&run_time=00z&include=daily_detail")
        .await;
    assert_eq!(metrics(&v["ensemble"]), (22.0, -22.0, 22.11, 4));
    assert_eq!(v["daily_detail"][0]["actual_low"], 30.0);

    // Windows: every pair is within 7 days of 03-04, so 90d says the same.
    let (_, v90) = app.get("/api/v2/model_accuracy.php?station_code=KNYC&window=90d").await;
    assert_eq!(v90["window"], "90d");
    assert_eq!(metrics(&v90["ensemble"]), (1.33, -0.67, 1.83, 12));

    // A catalog station without data: 200 with empty sections.
    let (s, v) = app.get("/api/v2/model_accuracy.php?station_code=KMDW&include=trends,daily_detail").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!((v["models"].clone(), v["ensemble"].clone()), (json!([]), Value::Null));
    assert_eq!(
        (v["trends"].clone(), v["daily_detail"].clone(), v["computed_at"].clone()),
        (json!({}), json!([]), Value::Null)
    );
}

/// Each day's final CLI is issued the next day at 11:00Z (stored as a backfill, so known
/// from then): as of a time, only the days whose value was known count.
#[tokio::test]
async fn model_accuracy_as_of_scores_only_days_verified_by_then() {
    let app = app_with_accuracy().await;
    let uri = "/api/v2/model_accuracy.php?station_code=KNYC&include=trends,daily_detail";
    let without_time = |mut v: Value| {
        v.as_object_mut().unwrap().remove("computed_at");
        v
    };
    let (_, now) = app.get(uri).await;
    let (s, after) = app.get(&format!("{uri}&as_of=2026-03-05T11:00:00Z")).await;
    assert_eq!(s, StatusCode::OK, "{after}");
    assert_eq!(without_time(after), without_time(now.clone()), "once the last CLI was out, the answer is today's");

    let (_, v) = app.get(&format!("{uri}&as_of=2026-03-05T10:59:59Z")).await;
    assert_eq!((v["as_of"].as_str(), v["days_available"].as_i64()), (Some("2026-03-03"), Some(3)), "{v}");
    // Three days of the twelve pairs: +1, -3 and 0 each.
    assert_eq!(metrics(&v["ensemble"]), (1.33, -0.67, 1.83, 9));
    let days: Vec<&str> = v["daily_detail"].as_array().unwrap().iter().map(|d| d["date"].as_str().unwrap()).collect();
    assert_eq!(days, ["2026-03-01", "2026-03-02", "2026-03-03"]);
    assert_eq!(v["trends"]["GFS"].as_array().unwrap().last().unwrap()["date"], "2026-03-03");
    assert_ne!(without_time(v), without_time(now));

    // Before the first CLI: nothing was scored yet.
    let (s, v) = app.get(&format!("{uri}&as_of=2026-03-02T10:59:59Z")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!((&v["ensemble"], v["days_available"].as_i64()), (&Value::Null, Some(0)), "{v}");
    assert_eq!(v["daily_detail"], json!([]));
}

#[tokio::test]
async fn model_accuracy_parameters_and_tiers() {
    let app = App::new().await;
    for tier in [Tier::Professional, Tier::Testing] {
        let (s, _, v) = app.call("GET", "/api/v2/model_accuracy.php?station_code=KNYC", Some(app.key(tier)), "").await;
        assert_eq!((s, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("Access Denied")), "{tier:?}");
    }
    for tier in [Tier::Developer, Tier::Enterprise] {
        let (s, _, v) = app.call("GET", "/api/v2/model_accuracy.php?station_code=KNYC", Some(app.key(tier)), "").await;
        assert_eq!(s, StatusCode::OK, "{tier:?} {v}");
    }
    let (s, _, _) = app.call("GET", "/api/v2/model_accuracy.php?station_code=KNYC", None, "").await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    for q in [
        "",
        "station_code=NOPE1", // not an ICAO code (a well-formed one outside the catalog is accepted, spec 2.10)
        "station_code=KNYC&window=5d",
        "station_code=KNYC&model=gfs",
        "station_code=KNYC&model=GFS,Bogus",
        "station_code=KNYC&run_time=7z",
        "station_code=KNYC&run_time=24z",
        "station_code=KNYC&run_time=%C3%A9z",
        "station_code=KNYC&include=everything",
        "station_code=KNYC&lead_days=0",
        "station_code=KNYC&lead_days=4",
        "station_code=KNYC&target=mid",
    ] {
        let (s, v) = app.get(&format!("/api/v2/model_accuracy.php?{q}")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}: {v}");
        assert!(v["error"].is_string() && v["details"].is_string(), "{q}: {v}");
    }
}

#[tokio::test]
async fn daily_extremes_endpoint_serves_the_job_table() {
    let app = app_with_accuracy().await;
    let (s, v) = app
        .get("/api/v2/daily_extremes.php?station_code=KNYC&start_date=2026-03-01&end_date=2026-03-04&logic=nws")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let days = v.as_array().unwrap();
    assert_eq!(days.len(), 4);
    for (d, (day, high)) in days.iter().zip(HIGHS) {
        assert_eq!(d["date"], format!("2026-03-0{day}"));
        assert_eq!((d["svc_high"].as_f64(), d["svc_low"].as_f64()), (Some(high), Some(30.0)));
        assert_eq!((d["high_source"].as_str(), d["is_final"].as_bool()), (Some("cli"), Some(true)));
        // The same answer as the live engine replaying the lake for that day.
        let (_, one) = app
            .get(&format!("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws&date=2026-03-0{day}"))
            .await;
        assert_eq!(d, &one);
    }
    let b = app
        .state
        .live
        .ctx
        .sql("SELECT count(*) FROM daily_extremes WHERE station_code = 'KNYC' AND logic = 'nws' AND day_complete")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let n = datafusion::arrow::array::AsArray::as_primitive::<datafusion::arrow::datatypes::Int64Type>(b[0].column(0));
    assert_eq!(n.value(0), 4);
}
