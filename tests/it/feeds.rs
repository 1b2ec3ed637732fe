//! The live feeds against servers on 127.0.0.1: a fixture AWC server (axum, port 0)
//! replaying the real AWC JSON, scripted to fail in each way a public service does, and
//! raw TCP servers for what axum will not do (hang, cut a body short).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{TimeZone, Utc};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wxlake::clock::{Clock, ManualClock};
use wxlake::feeds::awc_metar::{AwcMetar, AwcMetarConfig};
use wxlake::feeds::config::ClientConfig;
use wxlake::feeds::http::HttpClient;
use wxlake::feeds::{FeedSink, Feeds, FeedsConfig, RecordingSink, Source};
use wxlake::write::WriteService;

use crate::support;

const AWC_JSON: &str = include_str!("../../data/real/metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json");

/// What the fixture server answers next (the last one repeats).
#[derive(Debug, Clone)]
enum Reply {
    /// The real JSON, filtered to the requested ids, with an ETag; 304 when the request
    /// carries that ETag.
    Data,
    Status(u16),
    /// 429 or 503 with a Retry-After value.
    RetryAfter(u16, &'static str),
    /// Status 200 with this body and content type.
    Raw(&'static str, &'static str),
    /// Waits this long, then answers `Data` (to observe concurrency).
    Slow(Duration),
    /// The real JSON with a Last-Modified and no ETag, as a static file server or a CDN
    /// answers; 304 when the request's If-Modified-Since is that date.
    LastModified(&'static str),
    /// The real reports of the requested stations observed within `[from, to)` hours
    /// after 03:00Z, no validators: AWC's `hours=` lookback window as it slides.
    Window(i64, i64),
}

/// One request the fixture server saw.
#[derive(Debug, Clone)]
struct Seen {
    at: Instant,
    ids: String,
    if_none_match: Option<String>,
    if_modified_since: Option<String>,
    user_agent: String,
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
    in_flight: Mutex<(usize, usize)>,
}

impl Script {
    fn set(&self, replies: &[Reply]) {
        *self.replies.lock().unwrap() = replies.iter().cloned().collect();
    }
    fn next(&self) -> Reply {
        let mut q = self.replies.lock().unwrap();
        if q.len() > 1 {
            q.pop_front().unwrap()
        } else {
            q.front().cloned().unwrap_or(Reply::Data)
        }
    }
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// The real reports of the requested stations, as AWC would answer.
fn data_for(ids: &str) -> String {
    let all: Vec<serde_json::Value> = serde_json::from_str(AWC_JSON).unwrap();
    let wanted: Vec<&str> = ids.split(',').collect();
    let some: Vec<&serde_json::Value> =
        all.iter().filter(|r| wanted.contains(&r["icaoId"].as_str().unwrap_or_default())).collect();
    serde_json::to_string(&some).unwrap()
}

async fn metar(
    State(script): State<Arc<Script>>,
    Query(q): Query<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let ids = q.get("ids").cloned().unwrap_or_default();
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
    script.seen.lock().unwrap().push(Seen {
        at: Instant::now(),
        ids: ids.clone(),
        if_none_match: header("if-none-match"),
        if_modified_since: header("if-modified-since"),
        user_agent: header("user-agent").unwrap_or_default(),
    });
    assert_eq!(q.get("format").map(String::as_str), Some("json"));
    let etag = format!("\"v1-{ids}\"");
    let data = || {
        if header("if-none-match").as_deref() == Some(etag.as_str()) {
            return StatusCode::NOT_MODIFIED.into_response();
        }
        ([("content-type", "application/json"), ("etag", etag.as_str())], data_for(&ids)).into_response()
    };
    match script.next() {
        Reply::Data => data(),
        Reply::Status(s) => (StatusCode::from_u16(s).unwrap(), "oops").into_response(),
        Reply::RetryAfter(s, after) => {
            (StatusCode::from_u16(s).unwrap(), [("retry-after", after)], "slow down").into_response()
        }
        Reply::Raw(ct, body) => ([("content-type", ct)], body).into_response(),
        Reply::Window(from, to) => {
            let all: Vec<serde_json::Value> = serde_json::from_str(&data_for(&ids)).unwrap();
            let base = Utc.with_ymd_and_hms(2026, 9, 25, 3, 0, 0).unwrap().timestamp();
            let inside: Vec<&serde_json::Value> = all
                .iter()
                .filter(|r| (base + from * 3600..base + to * 3600).contains(&r["obsTime"].as_i64().unwrap()))
                .collect();
            ([("content-type", "application/json")], serde_json::to_string(&inside).unwrap()).into_response()
        }
        Reply::LastModified(date) => {
            if header("if-modified-since").as_deref() == Some(date) {
                return StatusCode::NOT_MODIFIED.into_response();
            }
            ([("content-type", "application/json"), ("last-modified", date)], data_for(&ids)).into_response()
        }
        Reply::Slow(d) => {
            {
                let mut f = script.in_flight.lock().unwrap();
                f.0 += 1;
                f.1 = f.1.max(f.0);
            }
            tokio::time::sleep(d).await;
            script.in_flight.lock().unwrap().0 -= 1;
            data()
        }
    }
}

/// The fixture AWC server; its base URL.
async fn awc_server(script: Arc<Script>) -> String {
    let app = axum::Router::new().route("/api/data/metar", axum::routing::get(metar)).with_state(script);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A raw server answering every connection with `reply` (after reading the request);
/// `None` holds the connection open without a word.
async fn raw_server(reply: Option<&'static str>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                match reply {
                    Some(r) => {
                        let _ = sock.write_all(r.as_bytes()).await;
                        let _ = sock.shutdown().await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(30)).await,
                }
            });
        }
    });
    format!("http://{addr}")
}

/// Fast manners for tests.
fn client_cfg() -> ClientConfig {
    ClientConfig {
        contact: "feeds-test@example.com".to_string(),
        attempts: 3,
        backoff: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(5),
        breaker_failures: 5,
        breaker_pause: Duration::from_secs(60),
        ..ClientConfig::default()
    }
}

fn awc_cfg(base: &str, stations: &[&str], batch: usize) -> AwcMetarConfig {
    AwcMetarConfig {
        base_url: base.to_string(),
        stations: stations.iter().map(|s| s.to_string()).collect(),
        batch_size: batch,
        interval: Duration::from_millis(100),
        timeout: Duration::from_secs(5),
        ..AwcMetarConfig::default()
    }
}

fn awc(base: &str, client: ClientConfig) -> (AwcMetar, Arc<HttpClient>) {
    let client = Arc::new(HttpClient::new(client).unwrap());
    (AwcMetar::new(awc_cfg(base, &["KNYC", "KMDW", "KAUS"], 3), Arc::clone(&client)).unwrap(), client)
}

#[tokio::test]
async fn polled_reports_reach_the_lake_through_the_live_path_once() {
    let script = Arc::new(Script::default());
    let base = awc_server(Arc::clone(&script)).await;
    let (dir, lake) = support::temp_lake().await;
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 9, 25, 6, 31, 0).unwrap()));
    let live = Arc::new(support::open_live(&lake, &dir.path().join("state"), clock).await);

    let cfg = FeedsConfig::from_toml(
        &format!(
            "contact = \"ops@example.com\"\n[awc_metar]\nbase_url = \"{base}\"\nstations = [\"KNYC\", \"KMDW\", \"KAUS\", \"KLAX\"]\nbatch_size = 2\n"
        )
        .parse()
        .unwrap(),
    )
    .unwrap();
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&live));
    let feeds = Feeds::from_config(&cfg, sink).unwrap();
    let reports = feeds.poll_once().await;
    assert_eq!(reports.len(), 1);
    let (name, report) = &reports[0];
    assert_eq!(name, "awc_metar");
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!((report.requests, report.accepted, report.rejected), (2, 9, 0), "{}", report.summary());

    let seen = script.seen();
    let mut ids: Vec<String> = seen.iter().map(|s| s.ids.clone()).collect();
    ids.sort();
    assert_eq!(ids, ["KAUS,KLAX", "KNYC,KMDW"], "one request per batch");
    assert!(seen.iter().all(|s| s.user_agent.ends_with("(ops@example.com)") && s.user_agent.starts_with("wxlake/")));

    live.flush().await.unwrap();
    assert_eq!(support::scalar(&lake, "SELECT count(*) FROM observations").await, "9");
    assert_eq!(support::scalar(&lake, "SELECT count(*) FROM observations WHERE station_code = 'KNYC'").await, "3");
    let status = feeds.status();
    assert_eq!(status[0].polls, 1);
    assert!(status[0].last.as_ref().unwrap().ok);

    // A second poll with the stored ETags: 304s, nothing new handed to the live path.
    let (_, again) = &feeds.poll_once().await[0];
    assert_eq!((again.not_modified, again.accepted), (2, 0), "{}", again.summary());
    assert!(script.seen()[2..].iter().all(|s| s.if_none_match.is_some()));
    live.flush().await.unwrap();
    assert_eq!(support::scalar(&lake, "SELECT count(*) FROM observations").await, "9");
}

/// The real AWC answer (06:31Z, 25 Sep 2026) through the live path with the stream
/// publisher attached: an `observation` event per report (all are of the trading day in
/// progress or the one before), and `new_high` / `new_low` for the day in progress of
/// each logic a report falls in. In New York that day has begun under both logics (LST
/// 00:51 and EDT 00:51 reports); in Chicago and Austin (CDT) only the civil (wu) day has,
/// their 05:53Z reports being 23:53 of the 24th in standard time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_awc_answer_streams_observations_and_new_extremes() {
    let script = Arc::new(Script::default());
    let base = awc_server(Arc::clone(&script)).await;
    let rig = crate::feeds_nwsfeeds::Rig::new(Utc.with_ymd_and_hms(2026, 9, 25, 6, 31, 0).unwrap()).await;
    let (source, _) = awc(&base, client_cfg());
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&rig.live));
    let report = source.poll(sink.as_ref()).await;
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!(report.accepted, 9, "{}", report.summary());
    assert!(report.events > 0, "{}", report.summary());

    let reports: Vec<serde_json::Value> = serde_json::from_str(AWC_JSON).unwrap();
    for station in ["KNYC", "KMDW", "KAUS"] {
        let events = rig.wait_for_event(station, "new_low").await;
        let mut observed: Vec<(String, f64)> = events
            .iter()
            .filter(|(n, _)| n == "observation")
            .map(|(_, d)| {
                assert_eq!(d["station_code"], station, "{d}");
                (d["observation_time_utc"].as_str().unwrap().to_string(), d["temperature_celsius"].as_f64().unwrap())
            })
            .collect();
        observed.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want: Vec<(String, f64)> = reports
            .iter()
            .filter(|r| r["icaoId"] == station)
            .map(|r| {
                let t = Utc.timestamp_opt(r["obsTime"].as_i64().unwrap(), 0).unwrap();
                (wxlake::time::fmt_iso_utc(t), r["temp"].as_f64().unwrap())
            })
            .collect();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(observed, want, "{station}: one observation event per report, its temperature");

        let changes = |name: &str, logic: &str| -> Vec<serde_json::Value> {
            events.iter().filter(|(n, d)| n == name && d["logic"] == logic).map(|(_, d)| d.clone()).collect()
        };
        for name in ["new_high", "new_low"] {
            let wu = changes(name, "wu");
            assert!(!wu.is_empty(), "{station}: no wu {name}: {events:?}");
            assert!(wu.iter().all(|d| d["date"] == "2026-09-25" && d["station_code"] == station), "{wu:?}");
            assert_eq!(changes(name, "nws").is_empty(), station != "KNYC", "{station} nws {name}: {events:?}");
        }
    }
    // The days in progress after the poll. New York: LST from 05:00Z (05:51Z, 13.9 °C
    // alone), EDT from 04:00Z (04:51Z 14.4 °C, 05:51Z 13.9 °C). Chicago and Austin, CDT
    // from 05:00Z: their 05:53Z reports alone.
    for (station, logic, high, low) in [
        ("KNYC", "nws", 13.9, 13.9),
        ("KNYC", "wu", 14.4, 13.9),
        ("KMDW", "wu", 16.7, 16.7),
        ("KAUS", "wu", 28.3, 28.3),
    ] {
        let events = rig.event_data(station);
        let last = |name: &str| {
            events.iter().rev().find(|(n, d)| n == name && d["logic"] == logic).and_then(|(_, d)| d["value_c"].as_f64())
        };
        assert_eq!((last("new_high"), last("new_low")), (Some(high), Some(low)), "{station} {logic}: {events:?}");
    }
}

#[tokio::test]
async fn the_second_poll_sends_the_etag_and_a_304_is_nothing_new() {
    let script = Arc::new(Script::default());
    let base = awc_server(Arc::clone(&script)).await;
    let (source, _) = awc(&base, client_cfg());
    let sink = RecordingSink::new();
    let first = source.poll(&sink).await;
    assert_eq!((first.accepted, first.not_modified), (9, 0), "{}", first.summary());
    let second = source.poll(&sink).await;
    assert_eq!((second.accepted, second.not_modified), (0, 1), "{}", second.summary());
    let seen = script.seen();
    assert_eq!(seen[0].if_none_match, None);
    assert_eq!(seen[1].if_none_match.as_deref(), Some("\"v1-KNYC,KMDW,KAUS\""));
    assert_eq!(sink.taken().len(), 1);
}

/// A server that sends Last-Modified and no ETag: the poll after a stored body asks with
/// If-Modified-Since (and no If-None-Match), and its 304 hands nothing to the sink; a new
/// file (a later Last-Modified) is fetched again.
#[tokio::test]
async fn last_modified_alone_makes_the_next_poll_conditional() {
    let script = Arc::new(Script::default());
    let first_date = "Fri, 25 Sep 2026 06:31:02 GMT";
    script.set(&[Reply::LastModified(first_date)]);
    let base = awc_server(Arc::clone(&script)).await;
    let (dir, lake) = support::temp_lake().await;
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 9, 25, 6, 32, 0).unwrap()));
    let live = Arc::new(support::open_live(&lake, &dir.path().join("state"), clock).await);
    let (source, _) = awc(&base, client_cfg());
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&live));

    let first = source.poll(sink.as_ref()).await;
    assert_eq!((first.accepted, first.not_modified), (9, 0), "{}", first.summary());
    let second = source.poll(sink.as_ref()).await;
    assert!(second.is_ok(), "{}", second.summary());
    assert_eq!((second.requests, second.accepted, second.not_modified), (1, 0, 1), "{}", second.summary());
    let seen = script.seen();
    assert_eq!((seen[0].if_modified_since.as_deref(), seen[0].if_none_match.as_deref()), (None, None));
    assert_eq!(seen[1].if_modified_since.as_deref(), Some(first_date), "the stored body's Last-Modified");
    assert_eq!(seen[1].if_none_match, None, "no ETag was sent, none is invented");
    live.flush().await.unwrap();
    assert_eq!(support::scalar(&lake, "SELECT count(*) FROM observations").await, "9");
    let inserted = support::scalar(&lake, "SELECT max(inserted_at) FROM observations").await;

    // The file changed: a full answer (the same nine reports, held already: duplicates,
    // nothing new), the new date remembered for the next poll.
    let later = "Fri, 25 Sep 2026 06:41:02 GMT";
    script.set(&[Reply::LastModified(later)]);
    let third = source.poll(sink.as_ref()).await;
    assert_eq!((third.accepted, third.duplicate, third.not_modified), (0, 9, 0), "{}", third.summary());
    assert_eq!(script.seen()[2].if_modified_since.as_deref(), Some(first_date));
    assert_eq!(source.poll(sink.as_ref()).await.not_modified, 1);
    assert_eq!(script.seen()[3].if_modified_since.as_deref(), Some(later));
    live.flush().await.unwrap();
    assert_eq!(support::scalar(&lake, "SELECT count(*) FROM observations").await, "9", "the same reports, once");
    assert_eq!(support::scalar(&lake, "SELECT max(inserted_at) FROM observations").await, inserted);
}

#[tokio::test]
async fn a_500_is_retried_with_backoff() {
    let script = Arc::new(Script::default());
    script.set(&[Reply::Status(500), Reply::Status(502), Reply::Data]);
    let base = awc_server(Arc::clone(&script)).await;
    let (source, _) = awc(&base, client_cfg());
    let sink = RecordingSink::new();
    let report = source.poll(&sink).await;
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!(report.accepted, 9);
    assert_eq!(script.seen().len(), 3, "two retries");

    // Out of attempts: the poll records the server error, the sink got nothing more.
    script.set(&[Reply::Status(503)]);
    let report = source.poll(&sink).await;
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].kind(), "server_error");
    assert_eq!(script.seen().len(), 6);
    assert_eq!(sink.taken().len(), 1);
}

#[tokio::test]
async fn retry_after_is_waited_out_before_the_next_request() {
    let script = Arc::new(Script::default());
    script.set(&[Reply::RetryAfter(429, "1"), Reply::Data]);
    let base = awc_server(Arc::clone(&script)).await;
    let (source, _) = awc(&base, client_cfg());
    let sink = RecordingSink::new();
    let report = source.poll(&sink).await;
    assert!(report.is_ok(), "{}", report.summary());
    let seen = script.seen();
    assert_eq!(seen.len(), 2);
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_secs(1), "retried after {gap:?}, Retry-After said 1 s");

    // A Retry-After longer than max_retry_after ends the request; the host's next request
    // (the next poll) still waits it out.
    script.set(&[Reply::RetryAfter(503, "2"), Reply::Data]);
    let (source, _) = awc(&base, ClientConfig { max_retry_after: Duration::from_secs(1), ..client_cfg() });
    let report = source.poll(&sink).await;
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].kind(), "server_error");
    assert!(report.errors[0].to_string().contains("Retry-After 2s"), "{}", report.errors[0]);
    let started = Instant::now();
    let report = source.poll(&sink).await;
    assert!(report.is_ok(), "{}", report.summary());
    assert!(started.elapsed() >= Duration::from_millis(1500), "the next poll waited {:?}", started.elapsed());
}

#[tokio::test]
async fn a_hung_connection_times_out() {
    let base = raw_server(None).await;
    let client = Arc::new(HttpClient::new(ClientConfig { attempts: 2, ..client_cfg() }).unwrap());
    let cfg = AwcMetarConfig { timeout: Duration::from_millis(200), ..awc_cfg(&base, &["KNYC"], 1) };
    let source = AwcMetar::new(cfg, client).unwrap();
    let started = Instant::now();
    let report = source.poll(&RecordingSink::new()).await;
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].kind(), "timeout", "{}", report.errors[0]);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(3),
        "two attempts of 200 ms took {took:?}"
    );
}

#[tokio::test]
async fn a_truncated_body_is_a_body_error() {
    let base = raw_server(Some(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\nconnection: close\r\n\r\n[{\"icaoId\": \"KNYC\", \"rawOb\": \"METAR KNYC",
    ))
    .await;
    let (source, _) = awc(&base, client_cfg());
    let sink = RecordingSink::new();
    let report = source.poll(&sink).await;
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].kind(), "truncated", "{}", report.errors[0]);
    assert!(report.errors[0].to_string().contains("of 1000 bytes"), "{}", report.errors[0]);
    assert!(sink.taken().is_empty());
}

#[tokio::test]
async fn malformed_json_and_an_html_page_with_200_store_nothing() {
    let script = Arc::new(Script::default());
    let base = awc_server(Arc::clone(&script)).await;
    let (source, _) = awc(&base, client_cfg());
    let sink = RecordingSink::new();

    script.set(&[Reply::Raw("application/json", "[{\"icaoId\": \"KNYC\", \"rawOb\": ")]);
    let report = source.poll(&sink).await;
    assert_eq!(report.errors[0].kind(), "malformed", "{}", report.errors[0]);

    script.set(&[Reply::Raw("text/html", "<!DOCTYPE html><html><body>Maintenance</body></html>")]);
    let report = source.poll(&sink).await;
    assert_eq!(report.errors[0].kind(), "html_page", "{}", report.errors[0]);

    // Mislabelled as JSON, still an HTML page.
    script.set(&[Reply::Raw("application/json", "\n<html><head><title>502</title></head></html>")]);
    let report = source.poll(&sink).await;
    assert_eq!(report.errors[0].kind(), "html_page", "{}", report.errors[0]);

    // JSON, but no report decodes: the sink refuses it.
    script.set(&[Reply::Raw("application/json", "[{\"icaoId\": \"KNYC\", \"rawOb\": \"garbage\", \"obsTime\": 1}]")]);
    let report = source.poll(&sink).await;
    assert_eq!(report.errors[0].kind(), "unusable", "{}", report.errors[0]);

    assert!(sink.taken().is_empty());
    assert_eq!(script.seen().len(), 4, "none of these is retried");
}

#[tokio::test]
async fn the_breaker_opens_after_repeated_failures_and_recovers_after_a_probe() {
    let script = Arc::new(Script::default());
    script.set(&[Reply::Status(500)]);
    let base = awc_server(Arc::clone(&script)).await;
    let pause = Duration::from_millis(300);
    let (source, client) =
        awc(&base, ClientConfig { attempts: 1, breaker_failures: 2, breaker_pause: pause, ..client_cfg() });
    let sink = RecordingSink::new();
    let url = source.urls()[0].clone();

    for _ in 0..2 {
        assert_eq!(source.poll(&sink).await.errors[0].kind(), "server_error");
    }
    assert!(client.is_paused(&url));
    let report = source.poll(&sink).await;
    assert_eq!(report.errors[0].kind(), "breaker_open", "{}", report.errors[0]);
    assert_eq!(script.seen().len(), 2, "nothing is sent while paused");

    // The probe after the pause fails: paused again at once.
    tokio::time::sleep(pause).await;
    assert_eq!(source.poll(&sink).await.errors[0].kind(), "server_error");
    assert_eq!(source.poll(&sink).await.errors[0].kind(), "breaker_open");
    assert_eq!(script.seen().len(), 3);

    // The service is back: the next probe succeeds and traffic resumes.
    script.set(&[Reply::Data]);
    tokio::time::sleep(pause).await;
    let report = source.poll(&sink).await;
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!(report.accepted, 9);
    assert!(!client.is_paused(&url));
}

#[tokio::test]
async fn requests_to_one_host_respect_the_cap() {
    let script = Arc::new(Script::default());
    script.set(&[Reply::Slow(Duration::from_millis(100))]);
    let base = awc_server(Arc::clone(&script)).await;
    let client = Arc::new(HttpClient::new(ClientConfig { max_per_host: 2, ..client_cfg() }).unwrap());
    let stations = ["KNYC", "KMDW", "KAUS", "KLAX", "KSEA", "KDEN"];
    let source = AwcMetar::new(awc_cfg(&base, &stations, 1), client).unwrap();
    let report = source.poll(&RecordingSink::new()).await;
    assert_eq!(report.requests, 6);
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!(script.in_flight.lock().unwrap().1, 2, "at most two in flight, and the cap is used");
}

#[tokio::test]
async fn the_runner_polls_on_its_interval_until_shutdown() {
    let script = Arc::new(Script::default());
    let base = awc_server(Arc::clone(&script)).await;
    let (source, _) = awc(&base, client_cfg());
    let sink = Arc::new(RecordingSink::new());
    let feeds = Arc::new(Feeds::new(vec![Arc::new(source) as Arc<dyn Source>], sink.clone()));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(Arc::clone(&feeds).run(async move {
        let _ = rx.await;
    }));
    tokio::time::sleep(Duration::from_millis(350)).await;
    let st = &feeds.status()[0];
    assert_eq!(st.name, "awc_metar");
    assert!((2..=5).contains(&st.polls), "{} polls in 350 ms at 100 ms", st.polls);
    assert!(st.last_success.is_some() && st.next_poll.is_some());
    assert_eq!(st.last.as_ref().unwrap().not_modified, 1, "polls after the first are 304s");
    tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(2), run).await.expect("stops promptly").unwrap();
    let polls = feeds.status()[0].polls;
    assert!(feeds.status()[0].next_poll.is_none());
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(script.seen().len() as u64, polls, "no request after shutdown");
    assert_eq!(sink.taken().len(), 1);
}

/// `wxlake serve --config FILE` runs the feeds the file's `[sources]` enables: the real
/// binary polls the fixture AWC server and what it fetched is in the lake after a
/// graceful stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_the_feeds_its_config_file_enables() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let script = Arc::new(Script::default());
    let base = awc_server(Arc::clone(&script)).await;
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let config = dir.path().join("wxlake.toml");
    std::fs::write(
        &config,
        format!(
            "lake = \"file://{}\"\n[serve]\naddr = \"127.0.0.1:0\"\nflush-secs = 1\n\
             [sources]\ncontact = \"serve-test@example.com\"\n\
             [sources.awc_metar]\nbase_url = \"{base}\"\nstations = [\"KNYC\", \"KMDW\", \"KAUS\"]\ninterval_secs = 1\n",
            lake.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .args(["--config", config.to_str().unwrap(), "serve"])
        .env_remove("WXLAKE_LAKE")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || for _ in BufReader::new(stderr).lines() {});

    let deadline = Instant::now() + Duration::from_secs(60);
    while !script.seen().iter().any(|s| s.user_agent.ends_with("(serve-test@example.com)")) {
        assert!(Instant::now() < deadline, "serve never polled the configured source");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Two polls: the second sends the first one's ETag.
    while script.seen().len() < 2 {
        assert!(Instant::now() < deadline, "serve polled once only");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    assert!(status.success(), "{status:?}");
    assert!(script.seen()[1].if_none_match.is_some(), "the second poll is conditional");

    let o = support::wxlake(
        &lake,
        &["sql", "SELECT station_code, count(*) AS n FROM observations GROUP BY 1 ORDER BY 1", "--format", "csv"],
    );
    assert_eq!(support::stdout(&o), "station_code,n\nKAUS,3\nKMDW,3\nKNYC,3\n", "{}", support::stderr(&o));
}

/// The live service and its stream publisher over one directory, as `serve` has them.
struct Run {
    live: Arc<WriteService>,
    log: Arc<wxlake::stream::EventLog>,
}

impl Run {
    async fn open(dir: &std::path::Path, lake: &wxlake::lake::Lake, now: chrono::DateTime<Utc>) -> Run {
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
        let live = Arc::new(support::open_live(lake, &dir.join("state"), clock).await);
        let log = Arc::new(wxlake::stream::EventLog::open(&dir.join("events"), chrono::Duration::hours(24)).unwrap());
        wxlake::stream_bridge::spawn_publisher(
            Arc::clone(&live),
            Default::default(),
            Arc::clone(&log),
            wxlake::stream::Hub::new(64),
        )
        .await;
        Run { live, log }
    }

    /// The `observation` events logged so far: (station, observation time).
    fn observations(&self) -> Vec<(String, String)> {
        let stations: std::collections::HashSet<String> = ["KNYC", "KMDW", "KAUS"].map(String::from).into();
        match self.log.replay_after("0", &stations) {
            wxlake::stream::Replay::Events { events, .. } => events
                .iter()
                .filter(|e| &*e.name == "observation")
                .map(|e| {
                    let d: serde_json::Value = e.data().unwrap();
                    (
                        d["station_code"].as_str().unwrap().to_string(),
                        d["observation_time_utc"].as_str().unwrap().to_string(),
                    )
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Waits (at most 5 s) until `n` observation events are logged; then a moment more, so
    /// an extra one would show.
    async fn settle(&self, n: usize) -> Vec<(String, String)> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.observations().len() < n && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.observations()
    }

    async fn stop(self) {
        self.live.detach_publisher().await;
        // The publisher ends once its inbox closes and lets go of the service (and its WAL).
        let deadline = Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&self.live) > 1 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// AWC's lookback window slides over the real answer's nine reports: ten polls whose
/// windows overlap, flushed in the middle and restarted after the fifth, stream exactly one
/// `observation` event per distinct report; every poll after a report's first counts it as
/// a duplicate, not as accepted, and the lake holds it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_polls_and_a_restart_stream_each_report_once() {
    let script = Arc::new(Script::default());
    let base = awc_server(Arc::clone(&script)).await;
    // Hours after 03:00Z: the reports are at 03:5x, 04:5x and 05:5x.
    let windows = [(0, 1), (0, 2), (0, 2), (1, 2), (0, 3), (1, 3), (0, 3), (2, 3), (1, 3), (0, 3)];
    script.set(&windows.iter().map(|&(a, b)| Reply::Window(a, b)).collect::<Vec<_>>());
    let now = Utc.with_ymd_and_hms(2026, 9, 25, 6, 31, 0).unwrap();
    let (dir, lake) = support::temp_lake().await;
    let mut totals = (0, 0);
    let mut run = Run::open(dir.path(), &lake, now).await;
    for i in 0..windows.len() {
        if i == 5 {
            run.stop().await;
            run = Run::open(dir.path(), &lake, now).await;
        }
        let (source, _) = awc(&base, client_cfg());
        let report = source.poll(&run.live).await;
        assert!(report.is_ok(), "poll {i}: {}", report.summary());
        totals = (totals.0 + report.accepted, totals.1 + report.duplicate);
        if i == 2 {
            run.live.flush().await.unwrap();
        }
    }
    let events = run.settle(9).await;
    let distinct: std::collections::BTreeSet<&(String, String)> = events.iter().collect();
    assert_eq!((events.len(), distinct.len()), (9, 9), "one event per report: {events:?}");
    // Each window's reports, less the nine first sightings.
    let served: i64 = windows.iter().map(|(a, b)| 3 * (b - a)).sum();
    assert_eq!(totals, (9, served as usize - 9), "accepted, duplicate");
    run.live.flush().await.unwrap();
    assert_eq!(support::scalar(&lake, "SELECT count(*) FROM observations").await, "9");
    run.stop().await;
}
