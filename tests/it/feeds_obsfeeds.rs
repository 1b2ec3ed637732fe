//! The observation feeds from AWC's cache file and IEM's request services against a
//! fixture server on 127.0.0.1 replaying real responses: rows stored once across
//! overlapping polls, stream events, a source down then back, archive units.
//!
//! What is real and what is built: the IEM ASOS answers are the real KCVG export of
//! 2024-03-01 (data/real/metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv), cut to the
//! requested window as asos.py does, with its `#DEBUG` lines. No catalog station has a
//! saved IEM export, so for stream events the same day is also served as Chicago Midway
//! (`MDW`, report texts relabelled KMDW). No one-minute answer and no cache file are saved
//! in data/real: the one-minute answer is built in asos1min.py's documented shape
//! (`station,station_name,valid(UTC),tmpf`, `M` for missing) from that day's real 5-minute
//! KCVG temperatures (each minute takes the latest HF-METAR's whole °F), and the cache file
//! in the real `metars.cache.csv` shape (status lines, the 44-column header, gzip) around
//! the real reports of the AWC JSON fixture.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use wxlake::clock::{Clock, ManualClock};
use wxlake::feeds::awc_cache::{AwcCache, AwcCacheConfig};
use wxlake::feeds::config::ClientConfig;
use wxlake::feeds::http::HttpClient;
use wxlake::feeds::iem_asos::{IemAsos, IemAsosConfig};
use wxlake::feeds::iem_onemin::{IemOnemin, IemOneminConfig};
use wxlake::feeds::{Archive, FeedSink, Feeds, FeedsConfig, RecordingSink, Source};
use wxlake::write::WriteService;

use crate::support;

const AWC_JSON: &str = include_str!("../../data/real/metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json");
const KCVG_TSV: &str = include_str!("../../data/real/metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv");

/// The fixture server's state.
#[derive(Default)]
struct Fixture {
    /// Which cache file is served: 1 = the older reports, 2 = all.
    cache_version: AtomicUsize,
    /// IEM answers 503 (its "server over capacity") while set.
    iem_down: AtomicBool,
    /// Query strings of the IEM requests, in order.
    iem_seen: Mutex<Vec<String>>,
    cache_seen: Mutex<Vec<Option<String>>>,
}

impl Fixture {
    fn iem_seen(&self) -> Vec<String> {
        self.iem_seen.lock().unwrap().clone()
    }
}

/// The real KCVG day as (station id as IEM writes it, valid, report text), for `station`
/// (`CVG`, or `MDW` relabelled).
fn iem_rows(station: &str) -> Vec<(String, NaiveDateTime, String)> {
    let mut lines = KCVG_TSV.lines().filter(|l| !l.starts_with('#'));
    assert_eq!(lines.next(), Some("station\tvalid\tmetar"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let valid = NaiveDateTime::parse_from_str(f[1], "%Y-%m-%d %H:%M").unwrap();
            (station.to_string(), valid, f[2].replace("KCVG ", &format!("K{station} ")))
        })
        .collect()
}

fn iem_time(q: &HashMap<String, Vec<String>>, key: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(&q[key][0], "%Y-%m-%dT%H:%MZ").unwrap()
}

fn query_map(raw: &str) -> HashMap<String, Vec<String>> {
    let mut q: HashMap<String, Vec<String>> = HashMap::new();
    for (k, v) in url::form_urlencoded::parse(raw.as_bytes()) {
        q.entry(k.into_owned()).or_default().push(v.into_owned());
    }
    q
}

/// asos.py: the requested stations' reports in `sts <= valid < ets`, sorted by valid.
async fn asos(State(fx): State<Arc<Fixture>>, RawQuery(raw): RawQuery) -> Response {
    let raw = raw.unwrap_or_default();
    fx.iem_seen.lock().unwrap().push(raw.clone());
    if fx.iem_down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "ERROR: server over capacity, please try later").into_response();
    }
    let q = query_map(&raw);
    assert_eq!(q["data"], ["metar"]);
    assert_eq!(q["report_type"], ["1", "3", "4"]);
    assert_eq!((q["tz"][0].as_str(), q["format"][0].as_str()), ("UTC", "tdf"));
    let (sts, ets) = (iem_time(&q, "sts"), iem_time(&q, "ets"));
    let mut rows: Vec<_> = q["station"].iter().flat_map(|s| iem_rows(s)).filter(|r| r.1 >= sts && r.1 < ets).collect();
    rows.sort_by_key(|r| r.1);
    let mut body = format!(
        "#DEBUG: Format Typ    -> tdf\n#DEBUG: Time Period   -> {sts}+00:00 {ets}+00:00\n#DEBUG: Time Zone     -> UTC\n\
         #DEBUG: Data Contact   -> daryl herzmann akrherz@iastate.edu 515-294-5978\n#DEBUG: Entries Found -> -1\nstation\tvalid\tmetar\n"
    );
    for (s, v, m) in rows {
        body.push_str(&format!("{s}\t{}\t{m}\n", v.format("%Y-%m-%d %H:%M")));
    }
    ([("content-type", "text/plain")], body).into_response()
}

/// The whole °F of a report's T-group (`T00301100` is 3.0 °C, 37 °F).
fn tgroup_f(report: &str) -> Option<f64> {
    let t = report
        .split_whitespace()
        .find(|t| t.len() == 9 && t.starts_with('T') && t[1..].bytes().all(|b| b.is_ascii_digit()))?;
    let c = t[2..5].parse::<f64>().ok()? / 10.0 * if &t[1..2] == "1" { -1.0 } else { 1.0 };
    Some((c * 9.0 / 5.0 + 32.0).round())
}

/// The built one-minute day of `station`: each minute of 2024-03-01 with the latest
/// HF-METAR temperature at or before it.
fn onemin_rows(station: &str) -> Vec<(NaiveDateTime, String)> {
    let hf: Vec<(NaiveDateTime, f64)> = iem_rows(station)
        .into_iter()
        .filter(|r| r.2.contains("MADISHF"))
        .filter_map(|r| tgroup_f(&r.2).map(|f| (r.1, f)))
        .collect();
    let start = NaiveDate::from_ymd_opt(2024, 3, 1).unwrap().and_hms_opt(0, 0, 0).unwrap();
    (0..1440)
        .map(|m| {
            let t = start + chrono::Duration::minutes(m);
            let f = hf.iter().rev().find(|(v, _)| *v <= t).map_or("M".to_string(), |(_, f)| format!("{f:.1}"));
            (t, f)
        })
        .collect()
}

/// asos1min.py: `station,station_name,valid(UTC),tmpf`, ordered by station then valid.
async fn asos1min(State(fx): State<Arc<Fixture>>, RawQuery(raw): RawQuery) -> Response {
    let raw = raw.unwrap_or_default();
    fx.iem_seen.lock().unwrap().push(raw.clone());
    let q = query_map(&raw);
    assert_eq!((q["vars"][0].as_str(), q["tz"][0].as_str(), q["delim"][0].as_str()), ("tmpf", "UTC", "comma"));
    let (sts, ets) = (iem_time(&q, "sts"), iem_time(&q, "ets"));
    let mut body = "station,station_name,valid(UTC),tmpf\n".to_string();
    for s in &q["station"] {
        if s.len() != 3 {
            return (StatusCode::UNPROCESSABLE_ENTITY, format!("Unknown station provided: {s}")).into_response();
        }
        for (t, f) in onemin_rows(s).into_iter().filter(|r| r.0 >= sts && r.0 < ets) {
            body.push_str(&format!("{s},CINCINNATI_N KY,{},{f}\n", t.format("%Y-%m-%d %H:%M")));
        }
    }
    ([("content-type", "application/octet-stream")], body).into_response()
}

/// The cache file of `version`, gzipped: the reports of the AWC JSON (version 1: those
/// before 05:00Z) and one of KCVG, a station outside the catalog.
fn cache_file(version: usize) -> Vec<u8> {
    let header = "raw_text,station_id,observation_time,latitude,longitude,temp_c,dewpoint_c,wind_dir_degrees,wind_speed_kt,wind_gust_kt,visibility_statute_mi,altim_in_hg,sea_level_pressure_mb,corrected,auto,auto_station,maintenance_indicator_on,no_signal,lightning_sensor_off,freezing_rain_sensor_off,present_weather_sensor_off,wx_string,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,flight_category,three_hr_pressure_tendency_mb,maxT_c,minT_c,maxT24hr_c,minT24hr_c,precip_in,pcp3hr_in,pcp6hr_in,pcp24hr_in,snow_in,vert_vis_ft,metar_type,elevation_m";
    let reports: Vec<serde_json::Value> = serde_json::from_str(AWC_JSON).unwrap();
    let mut rows: Vec<String> = reports
        .iter()
        .filter(|r| version >= 2 || r["obsTime"].as_i64().unwrap() < 1_790_312_400)
        .map(|r| {
            let mut f = vec![String::new(); 44];
            f[0] = format!("\"{}\"", r["rawOb"].as_str().unwrap());
            f[1] = r["icaoId"].as_str().unwrap().to_string();
            f[2] = Utc
                .timestamp_opt(r["obsTime"].as_i64().unwrap(), 0)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string();
            f[3] = r["lat"].to_string();
            f[4] = r["lon"].to_string();
            f[5] = r["temp"].to_string();
            f[6] = r["dewp"].to_string();
            f[42] = r["metarType"].as_str().unwrap().to_string();
            f[43] = r["elev"].to_string();
            f.join(",")
        })
        .collect();
    let (_, _, kcvg) = iem_rows("CVG").into_iter().find(|r| r.2.contains("010052Z")).unwrap();
    rows.push(format!("{kcvg},KCVG,2024-03-01T00:52:00.000Z{}METAR,267", ",".repeat(40)));
    let text = format!(
        "No errors\nNo warnings\n14 ms\ndata source=metars\n{} results\n{header}\n{}\n",
        rows.len(),
        rows.join("\n")
    );
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(text.as_bytes()).unwrap();
    z.finish().unwrap()
}

async fn cache(State(fx): State<Arc<Fixture>>, headers: HeaderMap) -> Response {
    let inm = headers.get("if-none-match").and_then(|v| v.to_str().ok()).map(str::to_string);
    fx.cache_seen.lock().unwrap().push(inm.clone());
    let version = fx.cache_version.load(Ordering::SeqCst).max(1);
    let etag = format!("\"cache-v{version}\"");
    if inm.as_deref() == Some(etag.as_str()) {
        return StatusCode::NOT_MODIFIED.into_response();
    }
    ([("content-type", "application/x-gzip"), ("etag", etag.as_str())], cache_file(version)).into_response()
}

async fn server(fx: Arc<Fixture>) -> String {
    let app = axum::Router::new()
        .route("/data/cache/metars.cache.csv.gz", axum::routing::get(cache))
        .route("/cgi-bin/request/asos.py", axum::routing::get(asos))
        .route("/cgi-bin/request/asos1min.py", axum::routing::get(asos1min))
        .with_state(fx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn client() -> Arc<HttpClient> {
    Arc::new(
        HttpClient::new(ClientConfig {
            contact: "feeds-test@example.com".to_string(),
            attempts: 1,
            backoff: Duration::from_millis(10),
            ..ClientConfig::default()
        })
        .unwrap(),
    )
}

/// A live service on a lake in a temp dir, its clock at `now`, with a stream publisher
/// attached whose observations' and one-minute readings' event names are collected.
struct Live {
    _dir: tempfile::TempDir,
    lake: wxlake::lake::Lake,
    svc: Arc<WriteService>,
    clock: Arc<ManualClock>,
    events: Arc<Mutex<Vec<(String, String)>>>,
}

async fn live(now: DateTime<Utc>) -> Live {
    let (dir, lake) = support::temp_lake().await;
    let clock = Arc::new(ManualClock::new(now));
    let svc = Arc::new(support::open_live(&lake, &dir.path().join("state"), clock.clone() as Arc<dyn Clock>).await);
    let mut rx = svc.attach_publisher(64).await;
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    tokio::spawn(async move {
        while let Some(notice) = rx.recv().await {
            use wxlake::write::hot::Applied;
            if let Applied::Observation { station, events, .. } | Applied::OneMinute { station, events } =
                &notice.applied
            {
                seen.lock().unwrap().extend(events.iter().map(|e| (station.clone(), e.name().to_string())));
            }
            if let Some(done) = notice.logged {
                let _ = done.send(());
            }
        }
    });
    Live { _dir: dir, lake, svc, clock, events }
}

#[tokio::test]
async fn the_cache_file_stores_catalog_reports_once_and_streams_their_highs() {
    let fx = Arc::new(Fixture::default());
    fx.cache_version.store(1, Ordering::SeqCst);
    let base = server(Arc::clone(&fx)).await;
    let l = live(Utc.with_ymd_and_hms(2026, 9, 25, 6, 31, 0).unwrap()).await;
    let cfg = AwcCacheConfig { base_url: base.clone(), ..AwcCacheConfig::default() }.validated().unwrap();
    let feed = AwcCache::new(cfg, client()).unwrap();
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&l.svc));

    let first = feed.poll(sink.as_ref()).await;
    assert!(first.is_ok(), "{}", first.summary());
    assert_eq!((first.requests, first.accepted, first.rejected), (1, 6, 0), "{}", first.summary());
    assert!(first.events > 0);
    // Unchanged file: a 304.
    let second = feed.poll(sink.as_ref()).await;
    assert_eq!((second.not_modified, second.accepted), (1, 0), "{}", second.summary());
    assert_eq!(fx.cache_seen.lock().unwrap()[1].as_deref(), Some("\"cache-v1\""));
    // A new file: only its three new reports go on.
    fx.cache_version.store(2, Ordering::SeqCst);
    let third = feed.poll(sink.as_ref()).await;
    assert_eq!((third.accepted, third.read), (3, 4), "the header and three rows: {}", third.summary());

    l.svc.flush().await.unwrap();
    assert_eq!(support::scalar(&l.lake, "SELECT count(*) FROM observations").await, "9");
    assert_eq!(support::scalar(&l.lake, "SELECT count(DISTINCT row_key) FROM observations").await, "9");
    assert_eq!(support::scalar(&l.lake, "SELECT count(*) FROM observations WHERE station_code = 'KCVG'").await, "0");
    let events = l.events.lock().unwrap().clone();
    assert!(events.iter().any(|(s, e)| s == "KNYC" && e == "new_high"), "{events:?}");
    assert!(events.iter().any(|(s, e)| s == "KAUS" && e == "new_high"), "{events:?}");

    // all_stations keeps the station outside the catalog too.
    let cfg = AwcCacheConfig { base_url: base, stations: vec![], all_stations: true, ..AwcCacheConfig::default() };
    let all = AwcCache::new(cfg.validated().unwrap(), client()).unwrap();
    let rec = RecordingSink::new();
    let report = all.poll(&rec).await;
    assert_eq!(report.accepted, 10, "{}", report.summary());
    assert!(String::from_utf8_lossy(&rec.taken()[0].body).contains("KCVG 010052Z"));
}

fn iem_cfg(base: &str, stations: &[&str]) -> IemAsosConfig {
    IemAsosConfig {
        base_url: base.to_string(),
        stations: stations.iter().map(|s| s.to_string()).collect(),
        interval: Duration::from_millis(100),
        ..IemAsosConfig::default()
    }
    .validated()
    .unwrap()
}

/// The real reports of `valid` in `from..to` (one station's day).
fn reports_between(from: (u32, u32), to: (u32, u32)) -> usize {
    let t = |(h, m)| NaiveDate::from_ymd_opt(2024, 3, 1).unwrap().and_hms_opt(h, m, 0).unwrap();
    iem_rows("CVG").iter().filter(|r| r.1 >= t(from) && r.1 < t(to)).count()
}

#[tokio::test]
async fn iem_asos_overlapping_polls_and_an_outage_leave_each_report_once_and_no_gap() {
    let fx = Arc::new(Fixture::default());
    let base = server(Arc::clone(&fx)).await;
    let l = live(Utc.with_ymd_and_hms(2024, 3, 1, 12, 0, 0).unwrap()).await;
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&l.svc));
    let feed = IemAsos::with_clock(iem_cfg(&base, &["KCVG", "KMDW"]), client(), l.clock.clone()).unwrap();

    // First poll: the 6-hour lookback, both stations in one request.
    let first = feed.poll(sink.as_ref()).await;
    assert!(first.is_ok(), "{}", first.summary());
    let six_hours = reports_between((6, 0), (12, 1));
    assert_eq!((first.requests, first.accepted, first.rejected), (1, 2 * six_hours, 0), "{}", first.summary());
    let q = query_map(&fx.iem_seen()[0]);
    assert_eq!(q["station"], ["CVG", "MDW"]);
    assert_eq!((q["sts"][0].as_str(), q["ets"][0].as_str()), ("2024-03-01T06:00Z", "2024-03-01T12:01Z"));
    assert!(first.events > 0);
    let events = l.events.lock().unwrap().clone();
    assert!(events.iter().all(|(s, _)| s == "KMDW"), "only the catalog station streams: {events:?}");
    assert!(events.iter().any(|(_, e)| e == "new_high"), "{events:?}");

    // Ten minutes on: the window starts 30 minutes before the newest report stored.
    l.clock.advance(chrono::Duration::minutes(10));
    let second = feed.poll(sink.as_ref()).await;
    assert!(second.is_ok(), "{}", second.summary());
    let q = query_map(&fx.iem_seen()[1]);
    assert_eq!((q["sts"][0].as_str(), q["ets"][0].as_str()), ("2024-03-01T11:30Z", "2024-03-01T12:11Z"));
    // The half hour the windows share was taken by the first poll: duplicates.
    assert_eq!(
        (second.accepted, second.duplicate),
        (2 * reports_between((12, 1), (12, 11)), 2 * reports_between((11, 30), (12, 1))),
        "{}",
        second.summary()
    );

    // IEM down for three hours: the polls fail, nothing is recorded as covered.
    fx.iem_down.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        l.clock.advance(chrono::Duration::hours(1));
        let down = feed.poll(sink.as_ref()).await;
        assert_eq!(down.errors[0].kind(), "server_error", "{}", down.summary());
    }
    // Back: one window from before the outage to now.
    fx.iem_down.store(false, Ordering::SeqCst);
    let back = feed.poll(sink.as_ref()).await;
    assert!(back.is_ok(), "{}", back.summary());
    let q = query_map(fx.iem_seen().last().unwrap());
    assert_eq!((q["sts"][0].as_str(), q["ets"][0].as_str()), ("2024-03-01T11:40Z", "2024-03-01T15:11Z"));

    l.svc.flush().await.unwrap();
    let stored = reports_between((6, 0), (15, 11));
    let count = |q: &'static str| support::scalar(&l.lake, q);
    assert_eq!(count("SELECT count(*) FROM observations WHERE station_code = 'KCVG'").await, stored.to_string());
    assert_eq!(count("SELECT count(*) FROM observations").await, (2 * stored).to_string(), "every report once, no gap");
    assert_eq!(count("SELECT count(DISTINCT row_key) FROM observations").await, (2 * stored).to_string());
    assert_eq!(feed.covered_until("KCVG"), Some(Utc.with_ymd_and_hms(2024, 3, 1, 15, 10, 0).unwrap()));
}

#[tokio::test]
async fn iem_asos_archive_units_are_fetched_and_refetching_stores_nothing_new() {
    let fx = Arc::new(Fixture::default());
    let base = server(Arc::clone(&fx)).await;
    let l = live(Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap()).await;
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&l.svc));
    let feed = IemAsos::new(IemAsosConfig { archive_days: 2, ..iem_cfg(&base, &["KCVG"]) }, client()).unwrap();
    let d = |day| NaiveDate::from_ymd_opt(2024, 3, day).unwrap();
    let units = Archive::units(&feed, NaiveDate::from_ymd_opt(2024, 2, 29).unwrap(), d(2), &[]);
    let ids: Vec<String> = units.iter().map(|u| u.id()).collect();
    assert_eq!(ids, ["KCVG/2024-02-29/2024-03-01", "KCVG/2024-03-02/2024-03-02"]);
    let first = feed.fetch(&units[0], sink.as_ref()).await;
    assert_eq!((first.accepted, first.rejected), (iem_rows("CVG").len(), 0), "{}", first.summary());
    let q = query_map(&fx.iem_seen()[0]);
    assert_eq!((q["sts"][0].as_str(), q["ets"][0].as_str()), ("2024-02-29T00:00Z", "2024-03-02T00:00Z"));
    let empty = feed.fetch(&units[1], sink.as_ref()).await;
    assert_eq!((empty.empty, empty.accepted), (1, 0), "{}", empty.summary());
    // A rerun of a unit (a backfill killed before recording it) stores nothing twice.
    assert!(feed.fetch(&units[0], sink.as_ref()).await.is_ok());
    l.svc.flush().await.unwrap();
    assert_eq!(support::scalar(&l.lake, "SELECT count(*) FROM observations").await, iem_rows("CVG").len().to_string());
}

#[tokio::test]
async fn iem_onemin_polls_from_the_newest_stored_minute_and_backfills_a_day() {
    let fx = Arc::new(Fixture::default());
    let base = server(Arc::clone(&fx)).await;
    // The day arrives a day late at IEM: polled on 2 March.
    let l = live(Utc.with_ymd_and_hms(2024, 3, 2, 12, 0, 0).unwrap()).await;
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&l.svc));
    let cfg = IemOneminConfig {
        base_url: base.clone(),
        stations: vec!["KCVG".into(), "KMDW".into()],
        interval: Duration::from_millis(100),
        ..IemOneminConfig::default()
    }
    .validated()
    .unwrap();
    let feed = IemOnemin::with_clock(cfg.clone(), client(), l.clock.clone()).unwrap();
    let first = feed.poll(sink.as_ref()).await;
    assert!(first.is_ok(), "{}", first.summary());
    assert_eq!((first.requests, first.accepted, first.rejected), (1, 2 * 1440, 0), "{}", first.summary());
    let q = query_map(&fx.iem_seen()[0]);
    assert_eq!(q["station"], ["CVG", "MDW"]);
    assert!(first.events > 0);
    let events = l.events.lock().unwrap().clone();
    assert!(events.iter().all(|(s, _)| s == "KMDW"), "only the catalog station streams: {events:?}");
    assert!(events.iter().any(|(_, e)| e == "new_high"), "{events:?}");
    assert_eq!((q["sts"][0].as_str(), q["ets"][0].as_str()), ("2024-02-29T12:00Z", "2024-03-02T12:01Z"));

    l.clock.advance(chrono::Duration::minutes(10));
    let second = feed.poll(sink.as_ref()).await;
    assert_eq!(
        (second.accepted, second.duplicate),
        (0, 2 * 61),
        "the overlap's hour only, 22:59 to 23:59, taken by the first poll: {}",
        second.summary()
    );
    let q = query_map(&fx.iem_seen()[1]);
    assert_eq!(q["sts"][0], "2024-03-01T22:59Z");

    // Backfill of the same day through the archive: nothing stored twice.
    let units = Archive::units(
        &feed,
        NaiveDate::from_ymd_opt(2024, 3, 1).unwrap(),
        NaiveDate::from_ymd_opt(2024, 3, 1).unwrap(),
        &[],
    );
    assert_eq!(units.len(), 2, "one per station");
    let backfill = feed.fetch(&units[0], sink.as_ref()).await;
    assert_eq!((backfill.accepted, backfill.duplicate), (0, 1440), "{}", backfill.summary());
    assert_eq!(query_map(fx.iem_seen().last().unwrap())["station"], ["CVG"]);

    // An id asos1min.py does not know fails the batch, saying so.
    let bad = IemOnemin::new(IemOneminConfig { stations: vec!["PHNL".into()], ..cfg }, client()).unwrap();
    let report = bad.poll(&RecordingSink::new()).await;
    assert_eq!(report.errors[0].kind(), "client_error", "{}", report.summary());

    l.svc.flush().await.unwrap();
    assert_eq!(support::scalar(&l.lake, "SELECT count(*) FROM onemin").await, "2880");
    assert_eq!(support::scalar(&l.lake, "SELECT count(*) FROM onemin WHERE temperature_f IS NULL").await, "0");
}

/// `[sources.awc_cache]`, `[sources.iem_asos]` and `[sources.iem_onemin]` in a config file
/// become running sources.
#[tokio::test]
async fn the_config_tables_enable_the_three_feeds() {
    let fx = Arc::new(Fixture::default());
    let base = server(Arc::clone(&fx)).await;
    let cfg = FeedsConfig::from_toml(
        &format!(
            "attempts = 1\n[awc_cache]\nbase_url = \"{base}\"\n[iem_asos]\nbase_url = \"{base}\"\nstations = [\"KMDW\"]\n\
             [iem_onemin]\nbase_url = \"{base}\"\nstations = [\"KMDW\"]\n"
        )
        .parse()
        .unwrap(),
    )
    .unwrap();
    let feeds = Feeds::from_config(&cfg, Arc::new(RecordingSink::new())).unwrap();
    let mut reports = feeds.poll_once().await;
    reports.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<&str> = reports.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["awc_cache", "iem_asos", "iem_onemin"]);
    assert!(reports.iter().all(|r| r.1.is_ok()), "{:?}", reports.iter().map(|r| r.1.summary()).collect::<Vec<_>>());
    // Today's windows hold nothing of the 2024 fixture day: answered, empty.
    assert_eq!((reports[1].1.empty, reports[2].1.empty), (1, 1));
    assert_eq!(reports[0].1.accepted, 6);
}

/// The example file's commented `[sources.awc_cache]`, `[sources.iem_asos]` and
/// `[sources.iem_onemin]` blocks, uncommented, parse: every key they document exists.
#[test]
fn the_example_blocks_of_the_three_feeds_parse_when_uncommented() {
    let text = include_str!("../../data/wxlake.example.toml");
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        if ["# [sources.awc_cache]", "# [sources.iem_asos]", "# [sources.iem_onemin]"].contains(&line) {
            inside = true;
        } else if line.trim().is_empty() {
            inside = false;
        }
        out.push_str(if inside { line.strip_prefix("# ").unwrap_or(line) } else { line });
        out.push('\n');
    }
    let cfg = FeedsConfig::from_file_text(&out).unwrap();
    let (cache, asos, onemin) = (cfg.awc_cache.unwrap(), cfg.iem_asos.unwrap(), cfg.iem_onemin.unwrap());
    assert_eq!((cache.stations.len(), cache.all_stations), (2, false));
    assert_eq!((asos.batch_size, asos.report_types.as_slice(), asos.archive_days), (10, &[1, 3, 4][..], 31));
    assert_eq!((onemin.lookback_hours, onemin.interval), (48.0, Duration::from_secs(600)));
}
