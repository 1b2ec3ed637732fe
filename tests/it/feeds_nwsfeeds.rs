//! The api.weather.gov feeds (`nws_cli`, `nws_dsm`, `nws_hourly`) and the IEM AFOS
//! archive against a fixture server on 127.0.0.1.
//!
//! The products are real texts (data/real/cli, data/real/dsm) and the hourly forecast the
//! real document (data/real/forecast). The JSON around them is built in api.weather.gov's
//! documented shapes, since no real product list, product or points answer is saved in
//! shared/data: a product list is `{"@graph": [{id, issuanceTime, productCode, ...}]}`, a
//! product `{id, productCode, issuanceTime, productText}`, a point
//! `{"properties": {gridId, gridX, gridY, forecastHourly, ...}}` (as the pynws fixture
//! `points.json` shows it); Central Park's real cell is OKX 33,37. The AFOS archive
//! answer is IEM's `fmt=text`: each product between a SOH line and an ETX line, and
//! "ERROR: Could not Find: PIL" (status 200) when there is none.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{NaiveDate, TimeZone, Utc};
use serde_json::{json, Value};
use wxlake::clock::{Clock, ManualClock};
use wxlake::feeds::nws_hourly::{NwsHourly, NwsHourlyConfig};
use wxlake::feeds::nws_products::{NwsProducts, NwsProductsConfig, ProductKind};
use wxlake::feeds::{config::ClientConfig, http::HttpClient};
use wxlake::feeds::{Archive, FeedSink, Feeds, FeedsConfig, RecordingSink, Source};
use wxlake::stream::{EventLog, Hub, Replay};
use wxlake::stream_bridge;
use wxlake::write::WriteService;

use crate::support;

const CLINYC: &str = include_str!("../../data/real/cli/CLINYC.txt");
const DSM_COLLECTIVE: &str = include_str!("../../data/real/dsm/DSM.txt");
const HOURLY: &str = include_str!("../../data/real/forecast/nws_hourly_forecast_knyc_gen20260924T0316Z.json");
const CONTACT: &str = "nws-test@example.com";

/// The real CLINYC (Central Park, 2 Jan 2013: max 33, min 22) corrected later the way the
/// NWS does it: a CCA heading, a new issue time, the corrected values. Built from the real
/// text, changing only those lines.
fn clinyc_corrected() -> String {
    let out = CLINYC
        .replace("CDUS41 KOKX 030616", "CDUS41 KOKX 030916 CCA")
        .replace("116 AM EST THU JAN 3 2013", "416 AM EST THU JAN 3 2013")
        .replace("CLIMATE REPORT\n", "CLIMATE REPORT...CORRECTED TEMPERATURES...\n")
        .replace("  MAXIMUM         33    301 PM", "  MAXIMUM         35    301 PM")
        .replace("  MINIMUM         22    743 AM", "  MINIMUM         21    743 AM");
    assert_ne!(out, CLINYC);
    assert_eq!(out.matches("CCA").count(), 1, "the heading line exists in the real text");
    out
}

/// The KMEM message of the real DSM collective (CDUS27 KZME), as the single-station
/// product DSMMEM the AFOS archive stores: heading, AWIPS id, the message.
fn dsm_mem() -> String {
    dsm_product("KMEM", "KMEM")
}

/// The message of `station` in the real DSM collective as the single-station product of
/// `as_station` (`DSM` + its AWIPS location), the message relabelled when they differ.
fn dsm_product(station: &str, as_station: &str) -> String {
    let lines: Vec<&str> = DSM_COLLECTIVE.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| l.starts_with(&format!("{station} DS"))).unwrap();
    let end = start + lines[start..].iter().position(|l| l.ends_with('=')).unwrap();
    let message = lines[start..=end].join("\n").replacen(station, as_station, 1);
    format!("CDUS27 KZME 270616\nDSM{}\n{message}\n", &as_station[1..])
}

/// A product the fixture lists.
#[derive(Clone)]
struct Listed {
    id: &'static str,
    code: &'static str,
    location: &'static str,
    issued: &'static str,
    text: String,
}

#[derive(Default)]
struct Fixture {
    products: Mutex<Vec<Listed>>,
    /// The hourly forecast document served (a modified real one).
    hourly: Mutex<String>,
    /// AFOS archive products per PIL.
    afos: Mutex<HashMap<String, Vec<String>>>,
    /// Every request: path and query, User-Agent.
    seen: Mutex<Vec<(String, String)>>,
}

impl Fixture {
    fn record(&self, uri: &Uri, headers: &HeaderMap) {
        let ua = headers.get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        self.seen.lock().unwrap().push((uri.to_string(), ua));
    }
    fn count(&self, prefix: &str) -> usize {
        self.seen.lock().unwrap().iter().filter(|(p, _)| p.starts_with(prefix)).count()
    }
    /// The real document regenerated at `generated` from the grid of `updated`, every
    /// temperature raised by `bump` °F (a forecaster's change).
    fn set_hourly(&self, generated: &str, updated: &str, bump: i64) {
        let mut doc: Value = serde_json::from_str(HOURLY).unwrap();
        doc["properties"]["generatedAt"] = json!(generated);
        doc["properties"]["updateTime"] = json!(updated);
        for p in doc["properties"]["periods"].as_array_mut().unwrap() {
            p["temperature"] = json!(p["temperature"].as_i64().unwrap() + bump);
        }
        *self.hourly.lock().unwrap() = doc.to_string();
    }
}

type Fx = State<Arc<Fixture>>;

async fn list(State(fx): Fx, Path((code, loc)): Path<(String, String)>, uri: Uri, h: HeaderMap) -> Response {
    fx.record(&uri, &h);
    let graph: Vec<Value> = fx
        .products
        .lock()
        .unwrap()
        .iter()
        .rev() // newest first, as the service lists them
        .filter(|p| p.code == code && p.location == loc)
        .map(|p| {
            json!({"@id": format!("https://api.weather.gov/products/{}", p.id), "id": p.id,
                   "wmoCollectiveId": "CDUS41", "issuingOffice": "KOKX", "issuanceTime": p.issued,
                   "productCode": p.code, "productName": "Climatological Report (Daily)"})
        })
        .collect();
    let body = json!({"@context": {"@version": "1.1"}, "@graph": graph});
    ([("content-type", "application/ld+json")], body.to_string()).into_response()
}

async fn product(State(fx): Fx, Path(id): Path<String>, uri: Uri, h: HeaderMap) -> Response {
    fx.record(&uri, &h);
    let found = fx.products.lock().unwrap().iter().find(|p| p.id == id).cloned();
    match found {
        Some(p) => {
            let body = json!({"@id": format!("https://api.weather.gov/products/{id}"), "id": id,
                              "wmoCollectiveId": "CDUS41", "issuingOffice": "KOKX", "issuanceTime": p.issued,
                              "productCode": p.code, "productName": "Climatological Report (Daily)",
                              "productText": p.text});
            ([("content-type", "application/ld+json")], body.to_string()).into_response()
        }
        None => (StatusCode::NOT_FOUND, "{}").into_response(),
    }
}

async fn points(State(fx): Fx, Path(coords): Path<String>, uri: Uri, h: HeaderMap) -> Response {
    fx.record(&uri, &h);
    assert!(coords.split(',').all(|c| c.split('.').nth(1).is_none_or(|d| d.len() <= 4)), "{coords}");
    let body = json!({"id": format!("https://api.weather.gov/points/{coords}"), "type": "Feature",
        "properties": {"@id": format!("https://api.weather.gov/points/{coords}"), "@type": "wx:Point",
            "cwa": "OKX", "forecastOffice": "https://api.weather.gov/offices/OKX", "gridId": "OKX",
            "gridX": 33, "gridY": 37,
            "forecast": "https://api.weather.gov/gridpoints/OKX/33,37/forecast",
            "forecastHourly": "https://api.weather.gov/gridpoints/OKX/33,37/forecast/hourly",
            "forecastGridData": "https://api.weather.gov/gridpoints/OKX/33,37",
            "timeZone": "America/New_York", "radarStation": "KOKX"}});
    ([("content-type", "application/geo+json")], body.to_string()).into_response()
}

async fn hourly(State(fx): Fx, Path((wfo, xy)): Path<(String, String)>, uri: Uri, h: HeaderMap) -> Response {
    fx.record(&uri, &h);
    if (wfo.as_str(), xy.as_str()) != ("OKX", "33,37") {
        return (StatusCode::NOT_FOUND, "{}").into_response();
    }
    let body = fx.hourly.lock().unwrap().clone();
    ([("content-type", "application/geo+json")], body).into_response()
}

async fn afos(State(fx): Fx, Query(q): Query<HashMap<String, String>>, uri: Uri, h: HeaderMap) -> Response {
    fx.record(&uri, &h);
    let pil = q.get("pil").cloned().unwrap_or_default();
    let products = fx.afos.lock().unwrap().get(&pil).cloned().unwrap_or_default();
    if products.is_empty() {
        return ([("content-type", "text/plain")], format!("ERROR: Could not Find: {pil}")).into_response();
    }
    let body: String = products.iter().map(|p| format!("\u{1}\n{}\n\u{3}\n", p.replace('\r', ""))).collect();
    ([("content-type", "text/plain")], body).into_response()
}

/// The fixture server; its base URL.
async fn server(fx: Arc<Fixture>) -> String {
    use axum::routing::get;
    let app = axum::Router::new()
        .route("/products/types/{code}/locations/{loc}", get(list))
        .route("/products/{id}", get(product))
        .route("/points/{coords}", get(points))
        .route("/gridpoints/{wfo}/{xy}/forecast/hourly", get(hourly))
        .route("/cgi-bin/afos/retrieve.py", get(afos))
        .with_state(fx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// The live path with the push stream's publisher attached, and the REST API over it.
pub(crate) struct Rig {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) lake: wxlake::lake::Lake,
    pub(crate) live: Arc<WriteService>,
    pub(crate) clock: Arc<ManualClock>,
    api: support::Api,
    log: Arc<EventLog>,
}

impl Rig {
    /// `now` is the live engine's clock.
    pub(crate) async fn new(now: chrono::DateTime<Utc>) -> Rig {
        let (dir, lake) = support::temp_lake().await;
        let manual = Arc::new(ManualClock::new(now));
        let clock: Arc<dyn Clock> = manual.clone();
        let state_dir = dir.path().join("state");
        let live = Arc::new(support::open_live(&lake, &state_dir, clock).await);
        let log = Arc::new(EventLog::open(&dir.path().join("events"), chrono::Duration::hours(24)).unwrap());
        stream_bridge::spawn_publisher(Arc::clone(&live), Default::default(), Arc::clone(&log), Hub::new(64)).await;
        let api = support::Api::over(Arc::clone(&live), &state_dir);
        Rig { dir, lake, live, clock: manual, api, log }
    }

    pub(crate) async fn get(&self, uri: &str) -> Value {
        self.api.get(uri).await.1
    }

    /// The served CLI-day extremes of KNYC on 2 Jan 2013.
    async fn knyc_jan2(&self) -> (Option<f64>, Option<f64>) {
        let v = self.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws&date=2013-01-02").await;
        (v["svc_high"].as_f64(), v["svc_low"].as_f64())
    }

    /// Names of the stream events logged for `station` so far.
    pub(crate) fn events(&self, station: &str) -> Vec<String> {
        self.event_data(station).into_iter().map(|(name, _)| name).collect()
    }

    /// The stream events logged for `station` so far: name and payload, in order.
    pub(crate) fn event_data(&self, station: &str) -> Vec<(String, Value)> {
        let stations: HashSet<String> = [station.to_string()].into();
        match self.log.replay_after("0", &stations) {
            Replay::Events { events, .. } => {
                events.iter().map(|e| (e.name.to_string(), e.data().expect("a JSON payload"))).collect()
            }
            _ => Vec::new(),
        }
    }

    /// Waits (at most 5 s) until `station` has a stream event named `name`; its events.
    pub(crate) async fn wait_for_event(&self, station: &str, name: &str) -> Vec<(String, Value)> {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let events = self.event_data(station);
            if events.iter().any(|(n, _)| n == name) {
                return events;
            }
            assert!(std::time::Instant::now() < deadline, "no {name} event of {station}: {events:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Feeds of a `[sources]` text whose state is kept under `state_dir`.
fn feeds(text: &str, state_dir: &std::path::Path, sink: Arc<dyn FeedSink>) -> Feeds {
    let mut cfg = FeedsConfig::from_toml(&text.parse().unwrap()).unwrap();
    cfg.state_dir = Some(state_dir.to_path_buf());
    Feeds::from_config(&cfg, sink).unwrap()
}

fn cli_sources(base: &str) -> String {
    // Products of 2013 are "recent" only with a long lookback; every poll is due.
    format!(
        "contact = \"{CONTACT}\"\n[nws_cli]\nbase_url = \"{base}\"\nstations = [\"KNYC\"]\n\
         interval_secs = 0.05\nquiet_interval_secs = 0.05\nlookback_hours = 200000\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_reaches_the_hot_state_stream_and_lake_once_and_a_correction_replaces_it() {
    let fx = Arc::new(Fixture::default());
    fx.products.lock().unwrap().push(Listed {
        id: "0f1e2d3c-cli-nyc-1",
        code: "CLI",
        location: "NYC",
        issued: "2013-01-03T06:16:00+00:00",
        text: CLINYC.to_string(),
    });
    let base = server(Arc::clone(&fx)).await;
    // 3 Jan 2013 07:00Z: the 2nd is the previous trading day in New York (still news).
    let rig = Rig::new(Utc.with_ymd_and_hms(2013, 1, 3, 7, 0, 0).unwrap()).await;
    let feeds_dir = rig.dir.path().join("feeds-state");
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&rig.live));
    let feeds1 = feeds(&cli_sources(&base), &feeds_dir, Arc::clone(&sink));

    let (name, report) = feeds1.poll_once().await.remove(0);
    assert_eq!(name, "nws_cli");
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!((report.requests, report.accepted), (2, 1), "{}", report.summary());
    assert_eq!(rig.knyc_jan2().await, (Some(33.0), Some(22.0)), "the CLI's values are served");
    rig.wait_for_event("KNYC", "cli").await;

    // Listed again: the product is not fetched again, nothing more is stored.
    tokio::time::sleep(Duration::from_millis(60)).await; // the list is due again
    let (_, again) = feeds1.poll_once().await.remove(0);
    assert!(again.is_ok(), "{}", again.summary());
    assert_eq!((again.requests, again.accepted, again.empty), (1, 0, 1), "{}", again.summary());
    // Nor after a restart: the fetched ids are in the state directory.
    let feeds2 = feeds(&cli_sources(&base), &feeds_dir, Arc::clone(&sink));
    let (_, restarted) = feeds2.poll_once().await.remove(0);
    assert_eq!((restarted.requests, restarted.accepted), (1, 0), "{}", restarted.summary());
    assert_eq!(fx.count("/products/0f1e2d3c-cli-nyc-1"), 1, "fetched once");
    rig.live.flush().await.unwrap();
    assert_eq!(support::scalar(&rig.lake, "SELECT count(*) FROM reports").await, "1");
    assert_eq!(rig.events("KNYC").iter().filter(|n| *n == "cli").count(), 1);

    // The office corrects the report three hours later: the new values are served.
    fx.products.lock().unwrap().push(Listed {
        id: "0f1e2d3c-cli-nyc-2",
        code: "CLI",
        location: "NYC",
        issued: "2013-01-03T09:16:00+00:00",
        text: clinyc_corrected(),
    });
    tokio::time::sleep(Duration::from_millis(60)).await; // the list is due again
    let (_, corrected) = feeds2.poll_once().await.remove(0);
    assert!(corrected.is_ok(), "{}", corrected.summary());
    assert_eq!((corrected.requests, corrected.accepted), (2, 1), "{}", corrected.summary());
    assert_eq!(rig.knyc_jan2().await, (Some(35.0), Some(21.0)), "the correction wins");
    rig.live.flush().await.unwrap();
    assert_eq!(
        support::scalar(&rig.lake, "SELECT count(*) FROM reports WHERE correction AND high_f = 35").await,
        "1",
        "both reports are kept; readers take the correction"
    );
    // A server rebuilt from the lake serves the corrected values too.
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2013, 1, 3, 10, 0, 0).unwrap()));
    let reopened = support::open_live(&rig.lake, &rig.dir.path().join("state2"), clock).await;
    let best = reopened
        .hot
        .read("KNYC", |h| {
            h.reports
                .iter()
                .filter(|r| r.date == NaiveDate::from_ymd_opt(2013, 1, 2).unwrap())
                .max_by_key(|r| r.precedence())
                .map(|r| (r.max_f, r.min_f))
        })
        .flatten();
    assert_eq!(best, Some((Some(35), Some(21))));

    // Every request named the contact, as api.weather.gov requires.
    let seen = fx.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|(_, ua)| ua.starts_with("wxlake/") && ua.ends_with(&format!("({CONTACT})"))), "{seen:?}");
}

/// The DSM feed through the live path, on the real collective's KMEM message: as DSMMEM
/// (Memphis is outside the catalog: stored, not streamed) and relabelled as Nashville's
/// DSMBNA (a catalog station in the same time zone, so the LST times mean the same). Both
/// reach the reports table dated by the products' issuance time (the feed's clock is a
/// year off the wall clock: a DSM's DD/MM has no year), KBNA's `dsm` event carries the
/// message's values, and the products listed again are not fetched again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dsm_reaches_the_reports_table_and_the_stream_once() {
    let fx = Arc::new(Fixture::default());
    for (id, location, station) in [("dsm-mem-1", "MEM", "KMEM"), ("dsm-bna-1", "BNA", "KBNA")] {
        fx.products.lock().unwrap().push(Listed {
            id,
            code: "DSM",
            location,
            issued: "2025-11-27T06:16:00+00:00",
            text: dsm_product("KMEM", station),
        });
    }
    let base = server(Arc::clone(&fx)).await;
    // 01:00 CST on the 27th: the 26th is the previous trading day, still news.
    let rig = Rig::new(Utc.with_ymd_and_hms(2025, 11, 27, 7, 0, 0).unwrap()).await;
    // Built, not read from a config file: a config naming KMEM (outside the catalog) is
    // refused at load.
    let dsm = NwsProductsConfig { base_url: base, stations: vec!["KMEM".into(), "KBNA".into()], ..Default::default() };
    let cfg = FeedsConfig {
        client: ClientConfig { contact: CONTACT.to_string(), ..ClientConfig::default() },
        nws_dsm: Some(dsm.validated(ProductKind::Dsm).unwrap()),
        state_dir: Some(rig.dir.path().join("feeds-state")),
        ..FeedsConfig::default()
    };
    let clock: Arc<dyn Clock> = rig.clock.clone();
    let feeds = Feeds::from_config_at(&cfg, Arc::new(Arc::clone(&rig.live)), clock).unwrap();

    let (name, report) = feeds.poll_once().await.remove(0);
    assert_eq!(name, "nws_dsm");
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!((report.requests, report.accepted), (4, 2), "two lists, two products: {}", report.summary());
    let events = rig.wait_for_event("KBNA", "dsm").await;
    let dsm: Vec<&Value> = events.iter().filter(|(n, _)| n == "dsm").map(|(_, d)| d).collect();
    assert_eq!(dsm.len(), 1, "{events:?}");
    let d = dsm[0];
    assert_eq!(
        (&d["station_code"], &d["event"], &d["for_date"], &d["high_f"], &d["low_f"]),
        (&json!("KBNA"), &json!("dsm"), &json!("2025-11-26"), &json!(56), &json!(43)),
        "{d}"
    );
    // 16:41 and 23:59 LST (CST, UTC-6).
    assert_eq!(
        (&d["high_time_utc"], &d["low_time_utc"]),
        (&json!("2025-11-26T22:41:00Z"), &json!("2025-11-27T05:59:00Z"))
    );
    assert!(rig.events("KMEM").is_empty(), "no stream for a station outside the catalog");

    // Five minutes later (busy hours: the lists are due again): nothing new is fetched.
    rig.clock.advance(chrono::Duration::minutes(5));
    let (_, again) = feeds.poll_once().await.remove(0);
    assert!(again.is_ok(), "{}", again.summary());
    assert_eq!((again.requests, again.accepted, again.empty), (2, 0, 2), "{}", again.summary());
    assert_eq!((fx.count("/products/dsm-mem-1"), fx.count("/products/dsm-bna-1")), (1, 1), "each fetched once");

    rig.live.flush().await.unwrap();
    let rows = support::sql(
        &rig.lake,
        "SELECT station_code, CAST(report_date AS VARCHAR), CAST(issued_at AS VARCHAR), high_f, low_f, is_final \
         FROM reports WHERE kind = 'dsm' ORDER BY station_code",
    )
    .await;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&rows).unwrap().to_string();
    assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 2, "{text}");
    for station in ["KBNA", "KMEM"] {
        let line = text.lines().find(|l| l.contains(station)).unwrap_or_else(|| panic!("{station}: {text}"));
        assert!(line.contains("2025-11-26") && line.contains("2025-11-27T06:16:00"), "{line}");
        assert!(line.contains("| 56 ") && line.contains("| 43 ") && line.contains("false"), "never final: {line}");
    }
    assert_eq!(rig.events("KBNA").iter().filter(|n| *n == "dsm").count(), 1);
}

fn client() -> Arc<HttpClient> {
    Arc::new(
        HttpClient::new(ClientConfig {
            contact: CONTACT.to_string(),
            backoff: Duration::from_millis(10),
            backoff_max: Duration::from_millis(50),
            ..ClientConfig::default()
        })
        .unwrap(),
    )
}

#[tokio::test]
async fn the_point_is_resolved_once_and_a_version_is_stored_only_when_update_time_changes() {
    let fx = Arc::new(Fixture::default());
    fx.set_hourly("2026-09-24T03:16:37+00:00", "2026-09-23T21:46:15+00:00", 0);
    let base = server(Arc::clone(&fx)).await;
    let state = tempfile::tempdir().unwrap();
    let cfg = NwsHourlyConfig { base_url: base.clone(), stations: vec!["KNYC".into()], ..Default::default() }
        .validated()
        .unwrap();
    let source = NwsHourly::new(cfg.clone(), client(), Some(state.path())).unwrap();
    let sink = RecordingSink::new();

    let first = source.poll(&sink).await;
    assert!(first.is_ok(), "{}", first.summary());
    assert_eq!((first.requests, first.accepted), (2, 60), "{}", first.summary());
    // Regenerated (new generatedAt), same grid: not a new version.
    fx.set_hourly("2026-09-24T04:16:37+00:00", "2026-09-23T21:46:15+00:00", 0);
    let second = source.poll(&sink).await;
    assert_eq!((second.requests, second.accepted, second.not_modified), (1, 0, 1), "{}", second.summary());
    // The forecasters updated the grid: a new version.
    fx.set_hourly("2026-09-24T05:16:37+00:00", "2026-09-24T04:58:02+00:00", 1);
    let third = source.poll(&sink).await;
    assert_eq!((third.requests, third.accepted), (1, 60), "{}", third.summary());
    let taken = sink.taken();
    assert_eq!(taken.len(), 2);
    assert!(taken.iter().all(|t| t.opts.station.as_deref() == Some("KNYC")));
    assert!(taken[1].body.windows(20).any(|w| w == b"2026-09-24T05:16:37+"), "the new document is stored");

    // After a restart: the point and the last version are remembered.
    let restarted = NwsHourly::new(cfg, client(), Some(state.path())).unwrap();
    let after = restarted.poll(&sink).await;
    assert_eq!((after.requests, after.accepted, after.not_modified), (1, 0, 1), "{}", after.summary());
    assert_eq!(fx.count("/points/"), 1, "/points called once across polls and restarts");
    assert_eq!(fx.count("/points/40.7789,-73.9692"), 1, "the catalog's coordinates, four decimals");
    assert_eq!(fx.count("/gridpoints/OKX/33,37/forecast/hourly"), 4);
    assert!(fx.seen.lock().unwrap().iter().all(|(_, ua)| ua.ends_with(&format!("({CONTACT})"))));
}

#[tokio::test]
async fn hourly_versions_reach_the_lake_through_the_live_path() {
    let fx = Arc::new(Fixture::default());
    fx.set_hourly("2026-09-24T03:16:37+00:00", "2026-09-23T21:46:15+00:00", 0);
    let base = server(Arc::clone(&fx)).await;
    let rig = Rig::new(Utc.with_ymd_and_hms(2026, 9, 24, 6, 0, 0).unwrap()).await;
    let text = format!(
        "contact = \"{CONTACT}\"\n[nws_hourly]\nbase_url = \"{base}\"\nstations = [\"KNYC\"]\ninterval_secs = 900\n"
    );
    let feeds = feeds(&text, &rig.dir.path().join("feeds-state"), Arc::new(Arc::clone(&rig.live)));
    for (generated, updated, bump) in [
        ("2026-09-24T03:16:37+00:00", "2026-09-23T21:46:15+00:00", 0),
        ("2026-09-24T03:46:37+00:00", "2026-09-23T21:46:15+00:00", 0),
        ("2026-09-24T04:16:37+00:00", "2026-09-24T04:01:00+00:00", 2),
    ] {
        fx.set_hourly(generated, updated, bump);
        let (name, report) = feeds.poll_once().await.remove(0);
        assert_eq!(name, "nws_hourly");
        assert!(report.is_ok(), "{}", report.summary());
    }
    rig.live.flush().await.unwrap();
    assert_eq!(support::scalar(&rig.lake, "SELECT count(DISTINCT generated_at) FROM nws_hourly").await, "2");
    let v = rig.get("/api/v2/nws_forecasts.php?station_code=KNYC&date=2026-09-24&mode=history").await;
    assert_eq!(v["total_versions"].as_u64(), Some(2), "{v}");
}

#[tokio::test]
async fn archive_units_are_fetched_from_the_afos_archive() {
    let fx = Arc::new(Fixture::default());
    fx.afos.lock().unwrap().insert("CLINYC".into(), vec![CLINYC.to_string(), clinyc_corrected()]);
    fx.afos.lock().unwrap().insert("DSMMEM".into(), vec![dsm_mem()]);
    let base = server(Arc::clone(&fx)).await;
    let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
    let archive_url = format!("{base}/cgi-bin/afos/retrieve.py");
    let cfg = NwsProductsConfig { archive_url: archive_url.clone(), archive_days: 31, ..Default::default() };
    let cli =
        NwsProducts::new(ProductKind::Cli, cfg.clone().validated(ProductKind::Cli).unwrap(), client(), None).unwrap();
    let sink = RecordingSink::new();

    let units = cli.units(d("2013-01-01"), d("2013-01-02"), &["KNYC".into(), "KLGA".into()]);
    assert_eq!(units.len(), 2);
    let report = Archive::fetch(&cli, &units[0], &sink).await;
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!((report.requests, report.accepted), (1, 2), "the original and its correction");
    let nothing = Archive::fetch(&cli, &units[1], &sink).await;
    assert!(nothing.is_ok(), "{}", nothing.summary());
    assert_eq!((nothing.empty, nothing.accepted), (1, 0), "\"Could not Find\" is no products");

    let dsm = NwsProducts::new(ProductKind::Dsm, cfg.validated(ProductKind::Dsm).unwrap(), client(), None).unwrap();
    let units = dsm.units(d("2025-11-20"), d("2025-11-30"), &["KMEM".into()]);
    let report = Archive::fetch(&dsm, &units[0], &sink).await;
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!(report.accepted, 1);
    let taken = sink.taken();
    assert_eq!(taken.len(), 2);
    assert_eq!(taken[1].opts.month, Some((2025, 11)), "the unit's month dates the DSM's DD/MM");

    let seen: Vec<String> = fx.seen.lock().unwrap().iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(
        seen,
        [
            "/cgi-bin/afos/retrieve.py?pil=CLINYC&sdate=2013-01-01&edate=2013-01-04&fmt=text&limit=9999",
            "/cgi-bin/afos/retrieve.py?pil=CLILGA&sdate=2013-01-01&edate=2013-01-04&fmt=text&limit=9999",
            "/cgi-bin/afos/retrieve.py?pil=DSMMEM&sdate=2025-11-20&edate=2025-12-02&fmt=text&limit=9999",
        ]
    );
}

#[tokio::test]
async fn a_dsm_product_is_fetched_and_a_malformed_list_is_a_precise_error() {
    let fx = Arc::new(Fixture::default());
    fx.products.lock().unwrap().push(Listed {
        id: "dsm-mem-1",
        code: "DSM",
        location: "MEM",
        issued: "2025-11-27T06:16:00+00:00",
        text: dsm_mem(),
    });
    let base = server(Arc::clone(&fx)).await;
    let cfg = NwsProductsConfig {
        base_url: base.clone(),
        stations: vec!["KMEM".into()],
        lookback_hours: 200000.0,
        ..Default::default()
    }
    .validated(ProductKind::Dsm)
    .unwrap();
    let source = NwsProducts::new(ProductKind::Dsm, cfg, client(), None).unwrap();
    assert_eq!(Source::name(&source), "nws_dsm");
    let sink = RecordingSink::new();
    let report = source.poll(&sink).await;
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!((report.requests, report.accepted), (2, 1), "{}", report.summary());
    assert_eq!(fx.count("/products/types/DSM/locations/MEM"), 1);
    assert_eq!(sink.taken()[0].format, wxlake::ingest::Format::Dsm);

    // A list that is not a list: a malformed error naming what was expected.
    let app = axum::Router::new().route(
        "/products/types/{code}/locations/{loc}",
        axum::routing::get(|| async { ([("content-type", "application/json")], "{\"@graph\": [{\"id\": 3}]}") }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let cfg =
        NwsProductsConfig { base_url: format!("http://{addr}"), stations: vec!["KNYC".into()], ..Default::default() }
            .validated(ProductKind::Cli)
            .unwrap();
    let source = NwsProducts::new(ProductKind::Cli, cfg, client(), None).unwrap();
    let report = source.poll(&RecordingSink::new()).await;
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].kind(), "malformed");
    assert!(report.errors[0].to_string().contains("expected the product list"), "{}", report.errors[0]);
}

#[tokio::test]
async fn a_grid_cell_that_is_gone_is_resolved_again() {
    let fx = Arc::new(Fixture::default());
    fx.set_hourly("2026-09-24T03:16:37+00:00", "2026-09-23T21:46:15+00:00", 0);
    let base = server(Arc::clone(&fx)).await;
    let state = tempfile::tempdir().unwrap();
    // A remembered cell the office no longer serves (re-gridded since the last run).
    std::fs::create_dir_all(state.path().join("feeds")).unwrap();
    std::fs::write(
        state.path().join("feeds/nws_hourly.json"),
        r#"{"points": {"KNYC": {"wfo": "OKX", "x": 32, "y": 36}}, "update_times": {}}"#,
    )
    .unwrap();
    let cfg =
        NwsHourlyConfig { base_url: base, stations: vec!["KNYC".into()], ..Default::default() }.validated().unwrap();
    let source = NwsHourly::new(cfg, client(), Some(state.path())).unwrap();
    let sink = RecordingSink::new();
    let gone = source.poll(&sink).await;
    assert_eq!(gone.errors.len(), 1, "{}", gone.summary());
    assert_eq!(gone.errors[0].kind(), "client_error", "{}", gone.errors[0]);
    assert_eq!(fx.count("/points/"), 0, "the remembered cell was used");
    let again = source.poll(&sink).await;
    assert!(again.is_ok(), "{}", again.summary());
    assert_eq!((again.requests, again.accepted), (2, 60), "{}", again.summary());
    assert_eq!(fx.count("/points/"), 1);
    let saved = std::fs::read_to_string(state.path().join("feeds/nws_hourly.json")).unwrap();
    assert!(saved.contains("\"x\": 33"), "{saved}");
}
