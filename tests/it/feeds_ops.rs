//! Feeds operations (issue 17 items 3-5): a source down for an hour then back, seen by
//! `data_quality`, the status endpoint and `/metrics`; a backfill killed halfway (a
//! separate process, kill -9) that resumes and stores each row once.
//!
//! The fixture server answers the aviationweather.gov data API
//! (`/api/data/metar?ids=...&format=json&hours=N[&date=YYYYMMDD_HHMM]`) with the REAL
//! half-hourly WSSS METARs of data/real/metar/WSSS_2025-12-05_2026-01-18_scraped.csv,
//! wrapped in AWC's JSON shape (objects with `icaoId`, `obsTime` in epoch seconds and
//! `rawOb`, as in data/real/metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json; the other
//! fields AWC sends are not read by the decoder). It serves the reports of the window
//! `(end - hours, end]`, where `end` is the `date` parameter or the test's clock: the
//! source "has" exactly what was published by then.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use tower::ServiceExt;
use wxlake::access::keys::{KeyStore, Tier};
use wxlake::access::limits::RateLimiter;
use wxlake::api::{server, AppState};
use wxlake::clock::{Clock, ManualClock};
use wxlake::extremes::{DataQuality, Logic, Severity};
use wxlake::feeds::{FeedSink, Feeds, FeedsConfig};

use crate::support;

const WSSS_CSV: &str = include_str!("../../data/real/metar/WSSS_2025-12-05_2026-01-18_scraped.csv");

/// The real WSSS reports: (observation time, raw text), each once. The file's `Datetime`
/// is when the report was scraped (up to hours later, and one report was scraped twice);
/// AWC's `obsTime` is the observation time, the report's `DDHHMMZ` group read in the
/// days before the scrape.
fn wsss() -> Vec<(DateTime<Utc>, String)> {
    let mut out: Vec<(DateTime<Utc>, String)> = WSSS_CSV
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (t, raw) = l.split_once(',')?;
            let scraped = NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M UTC").ok()?.and_utc();
            let group = raw.split_whitespace().nth(2)?;
            let (day, hour, minute): (u32, u32, u32) =
                (group[..2].parse().ok()?, group[2..4].parse().ok()?, group[4..6].parse().ok()?);
            let observed = (0..4).map(|k| scraped - chrono::Duration::days(k)).find_map(|d| {
                let d = d.date_naive();
                (chrono::Datelike::day(&d) == day).then(|| d.and_hms_opt(hour, minute, 0)).flatten()
            })?;
            Some((observed.and_utc(), raw.trim().to_string()))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The fixture AWC server's state.
struct Fixture {
    /// "Now" for requests without `date` (the live feed); absent for backfills.
    clock: Option<Arc<ManualClock>>,
    /// Answer 503 to everything.
    down: AtomicBool,
    /// Milliseconds to wait before answering (to catch a backfill halfway).
    delay_ms: AtomicU64,
    /// The `ids` and `date` of every request.
    seen: Mutex<Vec<(String, Option<String>)>>,
    reports: Vec<(DateTime<Utc>, String)>,
}

impl Fixture {
    fn new(clock: Option<Arc<ManualClock>>) -> Arc<Self> {
        Arc::new(Fixture {
            clock,
            down: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
            seen: Mutex::new(Vec::new()),
            reports: wsss(),
        })
    }

    fn seen(&self) -> Vec<(String, Option<String>)> {
        self.seen.lock().unwrap().clone()
    }
}

async fn metar(State(f): State<Arc<Fixture>>, Query(q): Query<HashMap<String, String>>) -> Response {
    let ids = q.get("ids").cloned().unwrap_or_default();
    f.seen.lock().unwrap().push((ids.clone(), q.get("date").cloned()));
    if f.down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "down for maintenance").into_response();
    }
    let delay = f.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let end = match q.get("date") {
        Some(d) => NaiveDateTime::parse_from_str(d, "%Y%m%d_%H%M").expect("date=YYYYMMDD_HHMM").and_utc(),
        None => f.clock.as_ref().expect("a live request needs the clock").now(),
    };
    let hours: f64 = q.get("hours").and_then(|h| h.parse().ok()).expect("hours");
    let start = end - chrono::Duration::seconds((hours * 3600.0) as i64);
    let wanted: Vec<&str> = ids.split(',').collect();
    let body: Vec<serde_json::Value> = f
        .reports
        .iter()
        .filter(|(t, raw)| *t > start && *t <= end && wanted.iter().any(|id| raw.contains(&format!(" {id} "))))
        .map(|(t, raw)| serde_json::json!({"icaoId": "WSSS", "obsTime": t.timestamp(), "rawOb": raw}))
        .collect();
    ([("content-type", "application/json")], serde_json::to_string(&body).unwrap()).into_response()
}

async fn fixture_server(f: Arc<Fixture>) -> String {
    let app = axum::Router::new().route("/api/data/metar", axum::routing::get(metar)).with_state(f);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// GET `uri` through the router with `key`; the status and the body text.
async fn get(state: &AppState, uri: &str, key: &str) -> (StatusCode, String) {
    let req = Request::builder().uri(uri).header("Authorization", format!("Bearer {key}")).body(Body::empty()).unwrap();
    let resp = server::router(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24).await.unwrap();
    (status, String::from_utf8_lossy(&bytes).to_string())
}

fn down_warning(q: &DataQuality) -> Option<&wxlake::extremes::QualityWarning> {
    q.warnings.iter().find(|w| w.active && w.message.starts_with("station currently down"))
}

#[tokio::test]
async fn a_source_down_for_an_hour_then_back_leaves_no_gap_and_data_quality_follows() {
    let t0 = Utc.with_ymd_and_hms(2025, 12, 6, 4, 5, 0).unwrap();
    let clock = Arc::new(ManualClock::new(t0));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let fixture = Fixture::new(Some(Arc::clone(&clock)));
    let base = fixture_server(Arc::clone(&fixture)).await;
    let (dir, lake) = support::temp_lake().await;
    let state_dir = dir.path().join("state");
    let keys = KeyStore::open(&state_dir).unwrap();
    let admin = keys.create(Tier::Enterprise, "ops", true, false).unwrap().1;
    let user = keys.create(Tier::Enterprise, "trader", false, false).unwrap().1;
    let live = Arc::new(support::open_live(&lake, &state_dir, dyn_clock.clone()).await);
    let cfg = FeedsConfig::from_toml(
        &format!(
            "contact = \"ops@example.com\"\nattempts = 1\nbreaker_failures = 100\n\
             [awc_metar]\nbase_url = \"{base}\"\nstations = [\"WSSS\"]\ninterval_secs = 600\nhours = 2\n"
        )
        .parse()
        .unwrap(),
    )
    .unwrap();
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&live));
    let feeds = Arc::new(Feeds::from_config(&cfg, sink).unwrap().with_clock(dyn_clock.clone()));
    let state = AppState::new(keys, RateLimiter::new(dyn_clock.clone()), Arc::clone(&live), dyn_clock.clone());
    state.set_feeds(Arc::clone(&feeds));
    let day = NaiveDate::from_ymd_opt(2025, 12, 6).unwrap();
    let quality = || {
        live.hot
            .read("WSSS", |h| h.live.extremes(Logic::Nws, day, clock.now()))
            .flatten()
            .expect("a WSSS day")
            .data_quality
    };

    // Up: the window (02:05, 04:05] brings four reports; the station is current.
    let (_, r) = &feeds.poll_once().await[0];
    assert!(r.is_ok() && r.accepted == 4, "{}", r.summary());
    assert!(quality().ok, "{:?}", quality());

    // Down from 04:15 to 05:15: seven polls fail. The newest report (04:00) is 75 min old
    // at 05:15, more than two half-hourly reports plus 10 min: the station is down now.
    fixture.down.store(true, Ordering::SeqCst);
    for _ in 0..7 {
        clock.advance(chrono::Duration::minutes(10));
        let (_, r) = &feeds.poll_once().await[0];
        assert!(!r.is_ok());
        if clock.now() == Utc.with_ymd_and_hms(2025, 12, 6, 5, 5, 0).unwrap() {
            assert!(down_warning(&quality()).is_none(), "65 min without a report is not down yet");
        }
    }
    let q = quality();
    assert!(!q.ok);
    let w = down_warning(&q).unwrap_or_else(|| panic!("a critical 'station currently down' warning: {q:?}"));
    assert_eq!(w.severity, Severity::Critical);
    assert_eq!((w.active_run, w.longest_run_minutes), (2, 75), "{w:?}");

    // The status says which source is late and which station is down; admin keys only.
    let (s, body) = get(&state, "/api/v2/status", &user).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("requires an admin key"), "{body}");
    let (s, body) = get(&state, "/api/v2/status", &admin).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["late_sources"], serde_json::json!(["awc_metar"]));
    assert_eq!(v["down_stations"], serde_json::json!(["WSSS"]));
    let src = &v["sources"][0];
    assert_eq!((src["polls"].as_u64(), src["failed_polls"].as_u64()), (Some(8), Some(7)));
    assert_eq!((src["requests"].as_u64(), src["rows_stored"].as_u64()), (Some(8), Some(4)));
    assert_eq!(src["errors"]["server_error"], 7);
    assert_eq!(src["last_error"]["kind"], "server_error");
    let wsss = v["stations"].as_array().unwrap().iter().find(|s| s["station"] == "WSSS").unwrap();
    assert_eq!((wsss["age_secs"].as_i64(), wsss["cadence_secs"].as_i64()), (Some(75 * 60), Some(1800)));
    assert!(v["stream"].is_null(), "this server runs no push stream: {}", v["stream"]);
    let (s, metrics) = get(&state, "/metrics", &admin).await;
    assert_eq!(s, StatusCode::OK, "{metrics}");
    for line in [
        "wxlake_feed_late{source=\"awc_metar\"} 1",
        "wxlake_feed_errors_total{source=\"awc_metar\",kind=\"server_error\"} 7",
        "wxlake_feed_rows_stored_total{source=\"awc_metar\"} 4",
        "wxlake_station_down{station=\"WSSS\"} 1",
        "wxlake_station_observation_age_seconds{station=\"WSSS\"} 4500",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} missing from\n{metrics}");
    }
    assert_eq!(get(&state, "/metrics", &user).await.0, StatusCode::FORBIDDEN);

    // Back at 05:25: the two-hour window catches up 04:30 and 05:00; nothing is left missing.
    fixture.down.store(false, Ordering::SeqCst);
    clock.advance(chrono::Duration::minutes(10));
    let (_, r) = &feeds.poll_once().await[0];
    assert!(r.is_ok(), "{}", r.summary());
    let q = quality();
    assert!(q.ok && q.warnings.is_empty(), "{q:?}");
    let v: serde_json::Value = serde_json::from_str(&get(&state, "/api/v2/status", &admin).await.1).unwrap();
    assert_eq!(v["late_sources"], serde_json::json!([]));
    assert_eq!(v["down_stations"], serde_json::json!([]));

    live.flush().await.unwrap();
    let published =
        fixture.reports.iter().filter(|(t, _)| *t > t0 - chrono::Duration::hours(2) && *t <= clock.now()).count();
    assert_eq!(published, 6, "02:30 to 05:00, half-hourly");
    let q = "SELECT count(*) FROM observations WHERE station_code = 'WSSS'";
    assert_eq!(support::scalar(&lake, q).await, published.to_string(), "every published report, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_killed_halfway_resumes_and_stores_each_row_once() {
    use std::process::{Command, Stdio};

    let fixture = Fixture::new(None);
    fixture.delay_ms.store(300, Ordering::SeqCst);
    let base = fixture_server(Arc::clone(&fixture)).await;
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let state = dir.path().join("state");
    let config = dir.path().join("wxlake.toml");
    std::fs::write(
        &config,
        format!(
            "lake = \"file://{}\"\n[sources]\ncontact = \"backfill-test@example.com\"\nattempts = 1\n\
             [sources.awc_metar]\nbase_url = \"{base}\"\nstations = [\"WSSS\"]\n",
            lake.display()
        ),
    )
    .unwrap();
    let backfill = |extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
        c.args(["--config", config.to_str().unwrap(), "feeds", "backfill", "awc_metar"])
            .args(["--from", "2025-12-06", "--to", "2025-12-15", "--state-dir", state.to_str().unwrap()])
            .args(extra)
            .env_remove("WXLAKE_LAKE")
            .env_remove("WXLAKE_STATE_DIR");
        c
    };
    let record = state.join("feeds/backfill/awc_metar.done");
    let lines = || std::fs::read_to_string(&record).map(|t| t.lines().count()).unwrap_or(0);

    // First run, killed (SIGKILL) once four of the ten days are recorded.
    let mut child = backfill(&["--no-jobs"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines() < 4 {
        assert!(Instant::now() < deadline, "the backfill never got halfway");
        assert!(child.try_wait().unwrap().is_none(), "the backfill ended before it was killed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    // A request the killed process had sent may still reach the server's handler.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let done_before = lines();
    assert!((4..10).contains(&done_before), "{done_before} of 10 days recorded when killed");
    let first_run = fixture.seen().len();

    // The rerun fetches only the days not recorded, then runs the derived jobs.
    fixture.delay_ms.store(0, Ordering::SeqCst);
    let mut rerun = backfill(&[]);
    let o = tokio::task::spawn_blocking(move || rerun.output().unwrap()).await.unwrap();
    let err = support::stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("{done_before} done before")), "{err}");
    assert!(err.contains("job "), "the derived jobs ran: {err}");
    // Singapore is UTC+8: the evening of 15 Dec UTC is the morning of its 16th.
    assert!(err.contains("derived jobs for 2025-12-05..2025-12-16"), "{err}");
    assert_eq!(lines(), 10);
    let seen = fixture.seen();
    let recorded: Vec<String> = std::fs::read_to_string(&record).unwrap().lines().map(str::to_string).collect();
    let refetched: Vec<&(String, Option<String>)> = seen[first_run..]
        .iter()
        .filter(|(_, date)| {
            let d =
                NaiveDate::parse_from_str(&date.clone().unwrap()[..8], "%Y%m%d").unwrap() - chrono::Duration::days(1);
            recorded[..done_before].contains(&format!("WSSS/{d}/{d}"))
        })
        .collect();
    assert!(refetched.is_empty(), "recorded days were fetched again: {refetched:?}");
    assert_eq!(seen.len() - first_run, 10 - done_before, "one request per remaining day");

    // Each published report of the ten days is stored once, the replayed day included.
    let start = Utc.with_ymd_and_hms(2025, 12, 6, 0, 0, 0).unwrap();
    let end = Utc.with_ymd_and_hms(2025, 12, 16, 0, 0, 0).unwrap();
    let expected = fixture.reports.iter().filter(|(t, _)| *t > start && *t <= end).count();
    assert!(expected > 100, "{expected}");
    let lake = wxlake::lake::Lake::open(&format!("file://{}", lake.display())).await.unwrap();
    let q = "SELECT count(*), count(DISTINCT observation_time) FROM observations WHERE station_code = 'WSSS'";
    let batches = support::sql(&lake, q).await;
    let col = |i: usize| {
        datafusion::arrow::util::display::ArrayFormatter::try_new(batches[0].column(i).as_ref(), &Default::default())
            .unwrap()
            .value(0)
            .to_string()
    };
    assert_eq!((col(0), col(1)), (expected.to_string(), expected.to_string()));
    let days = "SELECT min(date), max(date) FROM daily_extremes WHERE station_code = 'WSSS' AND logic = 'wu'";
    let days = support::rows(&lake, days).await;
    assert_eq!(days, [["2025-12-06", "2025-12-16"]], "every trading day the backfilled reports fall in");
}

/// `feeds run --once` is cron-friendly (one summary line per source, exit 1 when a request
/// failed, the polled reports in the lake); `feeds list` reads back what it recorded; a
/// source without an archive is refused by `feeds backfill` with a precise message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feeds_run_once_then_list_and_backfill_refusals() {
    use std::process::Command;

    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2025, 12, 6, 4, 5, 0).unwrap()));
    let fixture = Fixture::new(Some(Arc::clone(&clock)));
    let base = fixture_server(Arc::clone(&fixture)).await;
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let config = dir.path().join("wxlake.toml");
    std::fs::write(
        &config,
        format!(
            "lake = \"file://{}\"\n[sources]\ncontact = \"cron@example.com\"\nattempts = 1\n\
             [sources.awc_metar]\nbase_url = \"{base}\"\nstations = [\"WSSS\"]\n",
            lake.display()
        ),
    )
    .unwrap();
    let feeds = move |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
        c.args(["--config", config.to_str().unwrap(), "feeds"]).args(args).env_remove("WXLAKE_LAKE");
        c.env_remove("WXLAKE_STATE_DIR");
        c
    };
    let run = |args: &'static [&'static str]| {
        let mut c = feeds(args);
        async move { tokio::task::spawn_blocking(move || c.output().unwrap()).await.unwrap() }
    };

    let o = run(&["list"]).await;
    assert!(o.status.success(), "{}", support::stderr(&o));
    assert!(support::stdout(&o).lines().nth(1).unwrap().contains("not polled yet"), "{}", support::stdout(&o));

    let o = run(&["run", "--once"]).await;
    assert!(o.status.success(), "{}", support::stderr(&o));
    assert_eq!(
        support::stdout(&o).lines().collect::<Vec<_>>(),
        ["awc_metar: 1 request(s): 4 accepted, 0 duplicate, 0 rejected, 0 not modified, 0 empty"]
    );
    let l = support::wxlake(&lake, &["sql", "SELECT count(*) AS n FROM observations", "--format", "csv"]);
    assert_eq!(support::stdout(&l), "n\n4\n", "{}", support::stderr(&l));

    fixture.down.store(true, Ordering::SeqCst);
    let o = run(&["run", "--once", "awc_metar"]).await;
    assert_eq!(o.status.code(), Some(1), "a failed request fails the run: {}", support::stderr(&o));
    assert!(support::stdout(&o).contains("1 failed, first: "), "{}", support::stdout(&o));

    let o = run(&["list"]).await;
    let out = support::stdout(&o);
    let row: Vec<&str> = out.lines().nth(1).unwrap().split('\t').collect();
    assert_eq!((row[0], row[6], row[7], row[8]), ("awc_metar", "1", "1", "0"), "{out}");
    assert!(row[9].starts_with("FAILED: server_error"), "{out}");
    assert!(support::stderr(&o).contains("by feeds run --once"), "{}", support::stderr(&o));

    let o = run(&["run", "--once", "iem_asos"]).await;
    assert!(!o.status.success());
    assert!(support::stderr(&o).contains("[sources.iem_asos]: not an enabled source"), "{}", support::stderr(&o));
    let o = run(&["backfill", "nws_cli", "--from", "2025-12-06", "--to", "2025-12-06"]).await;
    assert!(support::stderr(&o).contains("[sources.nws_cli]: "), "{}", support::stderr(&o));
    let o = run(&["backfill", "awc_metar", "--from", "2025-12-06", "--to", "2025-12-05"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", support::stderr(&o));
}

/// `feeds run` without `--once` polls on its interval, writes the status file after each
/// poll, and on SIGTERM stops polling and flushes what it stored to the lake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feeds_run_polls_until_sigterm_then_flushes() {
    use std::process::{Command, Stdio};

    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2025, 12, 6, 4, 5, 0).unwrap()));
    let fixture = Fixture::new(Some(Arc::clone(&clock)));
    let base = fixture_server(Arc::clone(&fixture)).await;
    let dir = tempfile::tempdir().unwrap();
    let (lake, state) = (dir.path().join("lake"), dir.path().join("state"));
    let config = dir.path().join("wxlake.toml");
    std::fs::write(
        &config,
        format!(
            "lake = \"file://{}\"\n[sources]\ncontact = \"run@example.com\"\n\
             [sources.awc_metar]\nbase_url = \"{base}\"\nstations = [\"WSSS\"]\ninterval_secs = 0.5\n",
            lake.display()
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .args(["--config", config.to_str().unwrap(), "feeds", "run", "--flush-secs", "3600"])
        .args(["--state-dir", state.to_str().unwrap()])
        .env_remove("WXLAKE_LAKE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status_file = state.join("feeds/status.json");
    let polls = || -> u64 {
        let Ok(text) = std::fs::read_to_string(&status_file) else { return 0 };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["sources"][0]["polls"].as_u64().unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while polls() < 3 {
        assert!(Instant::now() < deadline, "feeds run did not poll three times");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let err = support::stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("flushing the WAL to the lake"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&status_file).unwrap()).unwrap();
    assert_eq!(v["writer"], "feeds run");
    assert!(v["sources"][0]["next_poll"].is_null(), "stopped: no next poll");
    let requests = fixture.seen().len();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(fixture.seen().len(), requests, "no request after the stop");
    let l = support::wxlake(&lake, &["sql", "SELECT count(*) AS n FROM observations", "--format", "csv"]);
    assert_eq!(support::stdout(&l), "n\n4\n", "every poll's reports, stored once: {}", support::stderr(&l));
}
