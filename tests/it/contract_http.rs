//! The answers as the spec and docs/serving.md promise them (issue 15, "Contract"): latest however
//! old and from memory, no-data quality, JSON numbers, codes outside the catalog, the
//! ingest body cap, the Bearer scheme, the stream's address and US-only NWS forecasts.

use std::time::{Duration as StdDuration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chrono::Duration;
use serde_json::Value;
use tower::ServiceExt;
use wxlake::access::keys::Tier;
use wxlake::api::server;

use crate::http::{now0, App};

/// Stores METAR lines of March 2026 straight into the lake (as `wxlake ingest` does),
/// bypassing the server's hot state.
async fn into_lake(app: &App, lines: &str) {
    into_lake_in(app, (2026, 3), lines).await;
}

/// [`into_lake`] for METAR lines of another month.
async fn into_lake_in(app: &App, month: (i32, u32), lines: &str) {
    let mut s = wxlake::ingest::Summary::default();
    let opts = wxlake::ingest::IngestOptions { month: Some(month), ..Default::default() };
    wxlake::ingest::ingest_bytes(app.state.lake(), wxlake::ingest::Format::Metar, "t", lines.as_bytes(), &opts, &mut s)
        .await
        .unwrap();
    assert!(s.stored > 0, "{s:?}");
}

/// GET with a Developer key, returning the raw body text too.
async fn get_text(app: &App, uri: &str) -> (StatusCode, String) {
    let req = Request::get(uri).header("X-API-Key", app.key(Tier::Developer)).body(Body::empty()).unwrap();
    let resp = server::router(app.state.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24).await.unwrap();
    (status, String::from_utf8_lossy(&bytes).to_string())
}

const LATEST: &str = "/api/v2/observations.php?station_code=KNYC&mode=latest";

/// Spec 4.1: "the most recent observation of the station", however old: a station down
/// for a week, a backfilled history (docs/serving.md: 404 only when there is none at all).
#[tokio::test]
async fn latest_is_the_newest_observation_however_old() {
    let app = App::new().await;
    let (s, v) = app.get(LATEST).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "nothing at all: {v}");
    assert!(v["error"].is_string() && v["details"].is_string());

    // A week old, in the lake only (written by another process): "none" is kept for the
    // TTL, so the row shows once it has passed.
    into_lake(&app, "KNYC 011451Z 27008KT 10SM FEW250 03/M06 A3021 RMK AO2 SLP231 T00281061\n").await;
    let (s, _) = app.get(LATEST).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "within the TTL");
    app.state.latest.set_ttl(StdDuration::from_millis(50));
    tokio::time::sleep(StdDuration::from_millis(60)).await;
    let (s, v) = app.get(LATEST).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["observation_time"], "2026-03-01 14:51:00");
    let (s, v1) = app.get("/api/v1/observations.php?station_code=KNYC&mode=latest").await;
    assert_eq!((s, v1["observation_time"].as_str()), (StatusCode::OK, Some("2026-03-01T14:51:00Z")));
    let (s, near) = app.get("/api/v2/nearby.php?stations=KNYC").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(near["stations"][0]["latest"]["observation_time"], "2026-03-01 14:51:00");

    // An older report posted live (the hot state's latest is now two weeks old) does not
    // hide the lake's newer one.
    let (s, _) =
        app.ingest("metar", "month=2026-02", "KNYC 221451Z 27008KT 10SM CLR 01/M06 A3021 RMK AO2 T00111061\n").await;
    assert_eq!(s, StatusCode::ACCEPTED);
    let (_, v) = app.get(LATEST).await;
    assert_eq!(v["observation_time"], "2026-03-01 14:51:00");

    // A live report newer than both is the answer at once.
    let (s, _) =
        app.ingest("metar", "month=2026-03", "KNYC 081751Z 27008KT 10SM CLR 09/M06 A3021 RMK AO2 T00891061\n").await;
    assert_eq!(s, StatusCode::ACCEPTED);
    let (_, v) = app.get(LATEST).await;
    assert_eq!(v["observation_time"], "2026-03-08 17:51:00");
    assert_eq!(v["temperature"].as_f64(), Some(8.9));
}

/// Rows another process (`wxlake ingest`) writes to the lake while `serve` runs show in
/// latest (v2, v1) and nearby within the TTL, even when the hot state has a recent latest
/// (before, the lake was never asked then). The memory answer does not wait for the lake.
#[tokio::test]
async fn latest_sees_lake_rows_written_by_another_process() {
    let app = App::new().await;
    app.state.latest.set_ttl(StdDuration::from_millis(100));
    let (s, _) =
        app.ingest("metar", "month=2026-03", "KNYC 081751Z 27008KT 10SM CLR 09/M06 A3021 RMK AO2 T00891061\n").await;
    assert_eq!(s, StatusCode::ACCEPTED);
    let (_, v) = app.get(LATEST).await;
    assert_eq!(v["observation_time"], "2026-03-08 17:51:00");
    into_lake(&app, "KNYC 081756Z 27009KT 10SM CLR 10/M06 A3021 RMK AO2 T01001061\n").await;
    let mut seen = Value::Null;
    for _ in 0..100 {
        let (s, v) = app.get(LATEST).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        seen = v["observation_time"].clone();
        if seen == "2026-03-08 17:56:00" {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    assert_eq!(seen, "2026-03-08 17:56:00", "the lake's newer row never showed");
    let (_, v1) = app.get("/api/v1/observations.php?station_code=KNYC&mode=latest").await;
    assert_eq!(v1["observation_time"], "2026-03-08T17:56:00Z");
    let (_, near) = app.get("/api/v2/nearby.php?stations=KNYC").await;
    assert_eq!(near["stations"][0]["latest"]["observation_time"], "2026-03-08 17:56:00");
}

/// The lake lookup of latest is cheap: "none" is kept for the TTL (one lookup, not one
/// per request), and it reads the newest partitions first, stopping at the first that
/// holds the station (an unreadable older partition is never read; before, a row older
/// than ten days meant a scan of the whole table).
#[tokio::test]
async fn latest_lake_lookup_is_cached_and_reads_the_newest_partitions_first() {
    let app = App::new().await;
    into_lake_in(&app, (2026, 2), "KNYC 011451Z 27008KT 10SM FEW250 03/M06 A3021 RMK AO2 SLP231 T00281061\n").await;
    let before = app.state.latest.lookups();
    for _ in 0..5 {
        let (s, _) = app.get("/api/v2/observations.php?station_code=KMDW&mode=latest").await;
        assert_eq!(s, StatusCode::NOT_FOUND);
    }
    assert_eq!(app.state.latest.lookups() - before, 1, "no row is kept for the TTL too");
    crate::support::commit_broken_file(app.state.lake(), "observations", "date=2026-01-15").await;
    let (s, v) = app.get(LATEST).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["observation_time"], "2026-02-01 14:51:00");
}

/// A station in the hot state is answered from memory: with the lake's partition of the
/// day unreadable, latest still answers (history, which reads the lake, does not).
#[tokio::test]
async fn latest_of_a_live_station_is_served_from_memory() {
    let app = App::new().await;
    let (s, _) =
        app.ingest("metar", "month=2026-03", "KNYC 081751Z 27008KT 10SM CLR 09/M06 A3021 RMK AO2 T00891061\n").await;
    assert_eq!(s, StatusCode::ACCEPTED);
    crate::support::commit_broken_file(app.state.lake(), "observations", "date=2026-03-08").await;
    let (s, _) = app
        .get("/api/v2/observations.php?station_code=KNYC&start_time=2026-03-08T12:00:00Z&end_time=2026-03-08T18:00:00Z")
        .await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "history reads the broken lake");
    let (s, v) = app.get(LATEST).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["observation_time"], "2026-03-08 17:51:00");
}

/// CPU time of this thread (the test runtime runs every request on it), in µs.
fn thread_cpu_micros() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
}

/// The latency of latest for a station in the hot state, in process (router, auth, rate
/// limit, handler, JSON), in this (debug) build: wall time, and the CPU time each request
/// took on the test's one runtime thread (wall time on a shared machine includes the
/// scheduler's preemptions, ~4 ms slices under load). Prints both; asserts on CPU time,
/// with a bound no lake read meets. Release figures: `cargo bench --bench live` (case
/// `latest` and the percentile line after it).
#[tokio::test]
async fn latest_latency_in_process() {
    let app = App::new().await;
    let body: String = (0..60)
        .map(|i| {
            let t = now0() - Duration::minutes(60 - i);
            format!("KNYC {} 27008KT 10SM CLR 05/M02 A3012 RMK AO2 T00{}1017\n", t.format("%d%H%MZ"), 50 + i % 9)
        })
        .collect();
    let (s, _) = app.ingest("metar", "month=2026-03", &body).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    app.state.live.flush().await.unwrap();
    let router = server::router(app.state.clone());
    let key = app.key(Tier::Enterprise).to_string();
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for i in 0..2200 {
        // Enterprise allows 1,200 a minute: move the clock a minute now and then.
        if i % 1000 == 0 {
            app.clock.advance(Duration::seconds(61));
        }
        let req = Request::get(LATEST).header("X-API-Key", &key).body(Body::empty()).unwrap();
        let (t0, c0) = (Instant::now(), thread_cpu_micros());
        let resp = router.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 16).await.unwrap();
        let (took, used) = (t0.elapsed().as_micros() as u64, thread_cpu_micros() - c0);
        assert!(bytes.len() > 100);
        if i >= 200 {
            wall.push(took);
            cpu.push(used);
        }
    }
    wall.sort_unstable();
    cpu.sort_unstable();
    let pct = |v: &[u64], p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)];
    eprintln!(
        "latest in process ({} requests, debug build): wall p50 {} µs, p99 {} µs; CPU p50 {} µs, p99 {} µs, max {} µs",
        wall.len(),
        pct(&wall, 0.50),
        pct(&wall, 0.99),
        pct(&cpu, 0.50),
        pct(&cpu, 0.99),
        cpu[cpu.len() - 1]
    );
    assert!(pct(&cpu, 0.99) < 5_000, "CPU p99 {} µs: latest is not answered from memory", pct(&cpu, 0.99));
}

/// No readings is not complete coverage (spec 2.4 `ok`: "true when coverage is complete").
#[tokio::test]
async fn svc_high_without_data_is_not_ok() {
    let app = App::new().await;
    for logic in ["nws", "wu"] {
        let uri = format!("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic={logic}&date=2024-01-01");
        let (s, v) = app.get(&uri).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert!(v["svc_high"].is_null() && v["svc_low"].is_null());
        let dq = &v["data_quality"][logic];
        assert_eq!(dq["ok"], false, "{v}");
        let w = &dq["warnings"][0];
        assert_eq!(w["code"], "temperature_data_missing");
        assert_eq!(w["severity"], "critical");
        assert!(w["message"].as_str().unwrap().contains("no temperature reading"), "{w}");
        assert_eq!(w["missing_count"].as_i64(), Some(1440), "a finished day with no reading is 1,440 minutes of gap");
        assert_eq!(w["active"], false);
    }
    // Today, before any reading: an active gap since the day began (nws day: 05:00Z).
    let (_, v) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws").await;
    let w = &v["data_quality"]["nws"]["warnings"][0];
    assert_eq!((w["active"].as_bool(), w["missing_count"].as_i64()), (Some(true), Some(13 * 60)), "{v}");
    // Thirteen hours without one reading: the station is down (spec 2.4), however long ago
    // its last reading was.
    assert!(w["message"].as_str().unwrap().starts_with("station currently down: no temperature reading"), "{w}");
    // The range endpoint says the same of its empty days, and stays ok where data is.
    app.ingest("metar", "month=2026-03", "KNYC 081751Z 27008KT 10SM CLR 09/M06 A3021 RMK AO2 T00891061\n").await;
    let (s, v) = app
        .get("/api/v2/daily_extremes.php?station_code=KNYC&logic=nws&start_date=2026-03-07&end_date=2026-03-08")
        .await;
    assert_eq!(s, StatusCode::OK);
    let ok: Vec<bool> =
        v.as_array().unwrap().iter().map(|d| d["data_quality"]["nws"]["ok"].as_bool().unwrap()).collect();
    assert_eq!(ok, [false, true], "{v}");
}

/// No `-0.0` anywhere: `today_precip` on a dry day (a sum of nothing), forecast rows.
#[tokio::test]
async fn json_never_has_negative_zero() {
    let app = App::new().await;
    let (s, text) = get_text(&app, "/api/v2/precipitation.php?station_code=KNYC").await;
    assert_eq!(s, StatusCode::OK, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["today_precip"].as_f64(), Some(0.0));
    assert!(!text.contains("-0.0") && !text.contains(":-0,") && !text.contains(":-0}"), "{text}");

    let run = now0() - Duration::hours(12);
    let mut rows = Vec::new();
    for lead in 0..3 {
        let mut r = crate::support::knyc_forecast("GFS", run, lead, 32.0);
        r.dew_point_c = Some(-0.0).into();
        r.dew_point_f = Some(32.0).into();
        rows.push(r);
    }
    app.state.lake().write(rows).await.unwrap();
    for uri in [
        "/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=latest",
        "/api/v2/forecasts.php?location_name=KNYC&start_valid_time=2026-03-08T00:00:00Z&end_valid_time=2026-03-09T00:00:00Z",
    ] {
        let (s, text) = get_text(&app, uri).await;
        assert_eq!(s, StatusCode::OK, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v.as_array().map(Vec::len), Some(3), "{uri}: {text}");
        assert_eq!(v[0]["dew_point_c"].as_f64(), Some(0.0));
        assert!(!text.contains("-0.0"), "{uri}: {text}");
    }
}

/// Spec 2.1 types `*_display` (other than temperature_display) as integer.
#[tokio::test]
async fn display_fields_are_integers() {
    let app = App::new().await;
    // A 6-hour group (1sTTT 2sTTT) and a dew point with tenths.
    let line = "KNYC 081751Z 27008KT 10SM CLR 09/M06 A3021 RMK AO2 SLP231 T00891061 10094 20017\n";
    app.ingest("metar", "month=2026-03", line).await;
    let (_, text) = get_text(&app, LATEST).await;
    let v: Value = serde_json::from_str(&text).unwrap();
    for f in ["dew_point_display", "six_hour_high_display", "six_hour_low_display"] {
        assert!(v[f].is_i64(), "{f} = {} in {text}", v[f]);
    }
    assert_eq!(v["dew_point_display"].as_i64(), Some(21), "-6.1 °C = 21 °F");
    assert_eq!(v["six_hour_high_display"].as_i64(), Some(49), "9.4 °C = 48.9 °F");
    assert!(!text.contains("_display\":49.0"));
}

/// Spec 2.10: the accuracy endpoint accepts codes outside the catalog, such as KORD.
#[tokio::test]
async fn model_accuracy_accepts_codes_outside_the_catalog() {
    let app = App::new().await;
    let (s, v) = app.get("/api/v2/model_accuracy.php?station_code=KORD").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["station"], "KORD");
    assert_eq!(v["models"], serde_json::json!([]));
    assert!(v["ensemble"].is_null() && v["city"].is_null() && v["units"].is_null(), "{v}");
    let (s, v) = app.get("/api/v2/model_accuracy.php?station_code=kord&include=trends,daily_detail").await;
    assert_eq!((s, v["station"].as_str()), (StatusCode::OK, Some("KORD")));
    assert_eq!(
        (v["trends"].as_object().map(|o| o.len()), v["daily_detail"].as_array().map(Vec::len)),
        (Some(0), Some(0))
    );
    let (s, v) = app.get("/api/v2/model_accuracy.php?station_code=KNYC").await;
    assert_eq!((s, v["city"].is_string()), (StatusCode::OK, true), "catalog stations keep their city");
    for bad in ["K%24RD", "KORDX", "1ORD", "KO"] {
        let (s, v) = app.get(&format!("/api/v2/model_accuracy.php?station_code={bad}")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {v}");
        assert!(v["error"].as_str().unwrap().starts_with("Invalid station_code"), "{v}");
    }
    let (s, _) = app.get("/api/v2/model_accuracy.php").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

/// The 2 MiB ingest cap answers like every other error (JSON), and the Bearer scheme is
/// case-insensitive (RFC 9110).
#[tokio::test]
async fn ingest_cap_is_a_json_413_and_bearer_is_case_insensitive() {
    let app = App::new().await;
    let line = "KNYC 081751Z 27008KT 10SM CLR 09/M06 A3021 RMK AO2 T00891061\n";
    let big = line.repeat(2 * 1024 * 1024 / line.len() + 1);
    assert!(big.len() > wxlake::api::ingest::MAX_BODY_BYTES);
    let (s, h, v) = app.call("POST", "/api/v2/ingest/metar?month=2026-03", Some(&app.admin.clone()), &big).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert_eq!(h["content-type"], "application/json");
    assert!(v["error"].as_str().unwrap().contains("2097152"), "{v}");
    assert!(v["details"].is_string());
    assert_eq!(app.state.live.pending(), 0, "nothing of it was logged");
    // At the cap exactly is fine.
    let at_cap = line.repeat(wxlake::api::ingest::MAX_BODY_BYTES / line.len());
    let (s, _, v) = app.call("POST", "/api/v2/ingest/metar?month=2026-03", Some(&app.admin.clone()), &at_cap).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");

    for scheme in ["BEARER", "bearer", "Bearer", "bEaReR"] {
        let req = Request::get(LATEST)
            .header("Authorization", format!("{scheme} {}", app.key(Tier::Professional)))
            .body(Body::empty())
            .unwrap();
        let resp = server::router(app.state.clone()).oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{scheme}");
    }
}

/// The REST port names the stream's address (or says there is none); no key needed.
#[tokio::test]
async fn stream_path_on_the_rest_port_names_the_stream() {
    let app = App::new().await;
    let (s, _, v) = app.call("GET", "/api/v2/stream?stations=KNYC&api_key=x", None, "").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(v["error"].as_str().unwrap().contains("not enabled"), "{v}");
    assert!(v["details"].as_str().unwrap().contains("--stream-addr"), "{v}");

    app.state.set_stream_addr("127.0.0.1:8443".parse().unwrap());
    let (s, _, v) = app.call("GET", "/api/v2/stream?stations=KNYC&api_key=x", None, "").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(v["error"].as_str().unwrap().contains("https://127.0.0.1:8443/api/v2/stream"), "{v}");
    assert_eq!(
        wxlake::api::server::stream_url("0.0.0.0:9443".parse().unwrap(), Some("wx.example.com:8080")),
        "https://wx.example.com:9443/api/v2/stream"
    );
    assert_eq!(
        wxlake::api::server::stream_url("[::]:9443".parse().unwrap(), Some("[::1]:8080")),
        "https://[::1]:9443/api/v2/stream"
    );
    assert_eq!(
        wxlake::api::server::stream_url("0.0.0.0:9443".parse().unwrap(), Some("<script>")),
        "https://localhost:9443/api/v2/stream"
    );
}

/// NWS forecasts exist for US stations only: an international one is refused like
/// precipitation.php refuses it, not answered with nulls.
#[tokio::test]
async fn nws_forecasts_refuse_international_stations() {
    let app = App::new().await;
    for path in ["/api/v2/nws_forecasts.php", "/api/v2/precipitation.php"] {
        let (s, v) = app.get(&format!("{path}?station_code=EGLC")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{path}: {v}");
        assert!(v["error"].as_str().unwrap().contains("EGLC"), "{v}");
    }
    let (s, v) = app.get("/api/v2/nws_forecasts.php?station_code=KNYC").await;
    assert_eq!(s, StatusCode::OK, "{v}");
}
