//! Source publishes a model run → its `mode=daily` rows are served (issue 17 "Figures",
//! target ≤ 2 s). A fixture Open-Meteo server on 127.0.0.1 answers single-run requests
//! with the real GFS series of `data/real/forecast` (°F, 72 hours); the clock passes each
//! new 6-hourly GFS cycle's availability delay, the `open_meteo` feed polls once, and the
//! time runs from that poll's start (the polling interval excluded) until
//! `GET /api/v2/forecasts.php?location_name=KNYC&mode=daily&model=GFS` through the real
//! router names the new run: fetch, decode, WAL, early flush, the fresh `forecast_daily`
//! run (and the accuracy jobs after it), then the query.
//! Run: `cargo bench --bench feeds_models` (figures: benches/README.md).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Query;
use axum::http::Request;
use chrono::{TimeZone, Utc};
use serde_json::{json, Value};
use tower::ServiceExt;
use wxlake::access::keys::{KeyStore, Tier};
use wxlake::access::limits::RateLimiter;
use wxlake::api::{server, AppState};
use wxlake::clock::{Clock, ManualClock};
use wxlake::feeds::config::ClientConfig;
use wxlake::feeds::http::HttpClient;
use wxlake::feeds::open_meteo::{OpenMeteo, OpenMeteoConfig};
use wxlake::feeds::{FeedSink, Source};
use wxlake::lake::Lake;
use wxlake::write::WriteService;

const PREVIOUS_RUNS: &str =
    include_str!("../data/real/forecast/openmeteo_previous_runs_knyc_gfs_ecmwf_2026-09-01_03.json");
const RUNS: usize = 12;

/// A single-run answer in the documented shape around the real GFS values.
async fn single_run(Query(q): Query<HashMap<String, String>>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let v: Value = serde_json::from_str(PREVIOUS_RUNS).unwrap();
    let series = v["hourly"]["temperature_2m_previous_day1_gfs_seamless"].clone();
    let run = chrono::NaiveDateTime::parse_from_str(&q["run"], "%Y-%m-%dT%H:%M").unwrap().and_utc();
    let times: Vec<String> =
        (0..72).map(|i| (run + chrono::Duration::hours(i)).format("%Y-%m-%dT%H:%M").to_string()).collect();
    let body = json!({
        "latitude": 40.78858, "longitude": -73.9661, "utc_offset_seconds": 0, "timezone": "GMT",
        "hourly_units": {"time": "iso8601", "temperature_2m": "°F"},
        "hourly": {"time": times, "temperature_2m": series},
    });
    ([("content-type", "application/json")], body.to_string()).into_response()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/v1/forecast", axum::routing::get(single_run));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let lake = Lake::open(&format!("file://{}", dir.path().join("lake").display())).await.unwrap();
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 9, 1, 0, 0, 0).unwrap()));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let state_dir = dir.path().join("state");
    let keys = KeyStore::open(&state_dir).unwrap();
    let key = keys.create(Tier::Enterprise, "bench", false, false).unwrap().1;
    let live = Arc::new(
        WriteService::open(
            lake.clone(),
            wxlake::jobs::analyst_session(&lake).await.unwrap(),
            &state_dir,
            Arc::clone(&dyn_clock),
        )
        .await
        .unwrap(),
    );
    live.spawn_background(Duration::from_secs(3600));
    let specs = wxlake::jobs::embedded_specs().unwrap();
    let published = Arc::clone(&live);
    wxlake::jobs::spawn_fresh_runs(
        live.lake.clone(),
        specs,
        live.subscribe_new_runs(),
        Arc::clone(&dyn_clock),
        move || published.derived_published(),
    );
    let state =
        AppState::new(keys, RateLimiter::new(Arc::clone(&dyn_clock)), Arc::clone(&live), Arc::clone(&dyn_clock));

    let cfg = OpenMeteoConfig {
        base_url: base.clone(),
        stations: vec!["KNYC".into()],
        models: vec!["GFS".into()],
        // The newest cycle only.
        lookback_hours: 6.0,
        ..OpenMeteoConfig::default()
    }
    .validated()
    .unwrap();
    let client =
        Arc::new(HttpClient::new(ClientConfig { contact: "bench@example.com".into(), ..Default::default() }).unwrap());
    let feed = OpenMeteo::with_clock(cfg, client, Arc::clone(&dyn_clock)).unwrap();
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&live));
    let delay = wxlake::models::availability("GFS").unwrap().delay_min();

    let mut took = Vec::new();
    for i in 0..RUNS {
        let cycle = Utc.with_ymd_and_hms(2026, 9, 1, 0, 0, 0).unwrap() + chrono::Duration::hours(6 * i as i64);
        clock.set(cycle + chrono::Duration::minutes(i64::from(delay)));
        let want = cycle.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let started = Instant::now();
        let report = feed.poll(sink.as_ref()).await;
        assert_eq!(report.requests, 1, "{}", report.summary());
        loop {
            let req = Request::get("/api/v2/forecasts.php?location_name=KNYC&mode=daily&model=GFS")
                .header("Authorization", format!("Bearer {key}"))
                .body(Body::empty())
                .unwrap();
            let resp = server::router(state.clone()).oneshot(req).await.unwrap();
            let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24).await.unwrap();
            let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if v.as_array().is_some_and(|a| a.iter().any(|d| d["run_time"] == want.as_str())) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "run {want} never served: {v}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        took.push(started.elapsed());
    }
    took.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "model run publish -> mode=daily served, {RUNS} GFS runs: min {:.0} ms, median {:.0} ms, max {:.0} ms",
        ms(took[0]),
        ms(took[RUNS / 2]),
        ms(took[RUNS - 1])
    );
}
