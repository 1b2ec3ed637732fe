//! The model feeds (`open_meteo`, `mos`) against fixture servers on 127.0.0.1 replaying
//! real responses, and the freshness of `forecast_daily` once a run lands.
//!
//! Open-Meteo: no single-runs answer is saved in ../shared/data, so the fixture builds one
//! in the documented shape (open-meteo.com/en/docs/single-runs-api: the forecast API's
//! JSON, one object per location, an array for several; series unsuffixed when one model
//! is asked for) around real content: the GFS 2 m temperatures of the real previous-runs
//! answer for KNYC (`openmeteo_previous_runs_knyc_gfs_ecmwf_2026-09-01_03.json`, °F),
//! hour by hour from the run asked for. MOS: the real bulletins `METNC1.txt` (NAM MOS),
//! `LAVUSA.txt` (LAMP) and `NBSUSA.txt` (NBM NBS, relabelled as a cycle the feed asks for,
//! see [`nbs_as_13z`]). There is no GFS MAV bulletin in data/real.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Value};
use wxlake::clock::{Clock, ManualClock};
use wxlake::feeds::config::ClientConfig;
use wxlake::feeds::http::HttpClient;
use wxlake::feeds::mos::{Mos, MosConfig};
use wxlake::feeds::open_meteo::{OpenMeteo, OpenMeteoConfig};
use wxlake::feeds::{Archive, FeedSink, RecordingSink, Source};
use wxlake::lake::Lake;
use wxlake::write::WriteService;

use crate::support;

const PREVIOUS_RUNS: &str =
    include_str!("../../data/real/forecast/openmeteo_previous_runs_knyc_gfs_ecmwf_2026-09-01_03.json");
const MET: &str = include_str!("../../data/real/forecast/mos/METNC1.txt");
const LAV: &str = include_str!("../../data/real/forecast/mos/LAVUSA.txt");
const NBS: &str = include_str!("../../data/real/forecast/mos/NBSUSA.txt");

/// What the fixture servers saw: the query of each request.
#[derive(Default)]
struct Seen(Mutex<Vec<HashMap<String, String>>>);

impl Seen {
    fn all(&self) -> Vec<HashMap<String, String>> {
        self.0.lock().unwrap().clone()
    }
    fn runs(&self) -> Vec<String> {
        self.all().iter().filter_map(|q| q.get("run").cloned()).collect()
    }
}

/// The real GFS series (°F), 72 hourly values.
fn real_gfs_series() -> Vec<Value> {
    let v: Value = serde_json::from_str(PREVIOUS_RUNS).unwrap();
    v["hourly"]["temperature_2m_previous_day1_gfs_seamless"].as_array().unwrap().clone()
}

/// One location's single-run answer for `run`.
fn single_run_answer(lat: &str, lon: &str, run: DateTime<Utc>) -> Value {
    let series = real_gfs_series();
    let times: Vec<String> = (0..series.len())
        .map(|i| (run + chrono::Duration::hours(i as i64)).format("%Y-%m-%dT%H:%M").to_string())
        .collect();
    json!({
        "latitude": lat.parse::<f64>().unwrap(),
        "longitude": lon.parse::<f64>().unwrap(),
        "generationtime_ms": 0.4,
        "utc_offset_seconds": 0,
        "timezone": "GMT",
        "timezone_abbreviation": "GMT",
        "elevation": 44.0,
        "hourly_units": { "time": "iso8601", "temperature_2m": "°F" },
        "hourly": { "time": times, "temperature_2m": series },
    })
}

/// KNYC's single-run answer for `run` as `wxlake ingest open-meteo` and the ingest endpoint
/// take it: the model named through the series' suffix, as the feed writes it.
fn knyc_gfs_answer(run: DateTime<Utc>) -> Value {
    let mut answer = single_run_answer("40.78858", "-73.9661", run);
    let hourly = answer["hourly"].as_object_mut().unwrap();
    let t = hourly.remove("temperature_2m").unwrap();
    hourly.insert("temperature_2m_gfs_global".into(), t);
    answer["hourly_units"] = json!({ "time": "iso8601", "temperature_2m_gfs_global": "°F" });
    answer
}

async fn single_runs(State(seen): State<Arc<Seen>>, Query(q): Query<HashMap<String, String>>) -> Response {
    seen.0.lock().unwrap().push(q.clone());
    let Some(run) = q.get("run").and_then(|r| chrono::NaiveDateTime::parse_from_str(r, "%Y-%m-%dT%H:%M").ok()) else {
        return (StatusCode::BAD_REQUEST, "{\"error\":true,\"reason\":\"run is required\"}").into_response();
    };
    let lats: Vec<&str> = q["latitude"].split(',').collect();
    let lons: Vec<&str> = q["longitude"].split(',').collect();
    let items: Vec<Value> = lats.iter().zip(&lons).map(|(a, o)| single_run_answer(a, o, run.and_utc())).collect();
    let body = if items.len() == 1 { items[0].clone() } else { Value::Array(items) };
    ([("content-type", "application/json")], body.to_string()).into_response()
}

/// The previous-runs API: the real answer (one location).
async fn previous_runs(State(seen): State<Arc<Seen>>, Query(q): Query<HashMap<String, String>>) -> Response {
    seen.0.lock().unwrap().push(q);
    ([("content-type", "application/json")], PREVIOUS_RUNS).into_response()
}

/// The NOMADS stand-in: the real MET bulletin for 2017-08-12 12Z, 404 for any other cycle.
async fn bulletin(
    State(seen): State<Arc<Seen>>,
    axum::extract::Path((date, hh)): axum::extract::Path<(String, String)>,
) -> Response {
    seen.0.lock().unwrap().push([("run".to_string(), format!("{date}T{hh}"))].into());
    if date == "20170812" && hh == "12" {
        ([("content-type", "text/plain")], MET).into_response()
    } else {
        (StatusCode::NOT_FOUND, "not found").into_response()
    }
}

/// The real NBSUSA (NBM NBS, the 15Z cycle of 7 Nov 2018) as the 13Z cycle: the feed asks
/// only for the cycles NBS-MOS runs are labelled with (01, 07, 13, 19Z, `models::MODELS`),
/// and no real NBS bulletin of those cycles is saved. The station headers say 1300 UTC and
/// each forecast hour (`FHR`) is two more, so every column keeps its real valid time and
/// values.
fn nbs_as_13z() -> String {
    let mut out = String::new();
    for line in NBS.lines() {
        let line = if line.contains("NBS GUIDANCE") {
            line.replace("1500 UTC", "1300 UTC")
        } else if let Some(hours) = line.strip_prefix("FHR ") {
            let later: Vec<String> = hours
                .split_whitespace()
                .map(|h| format!("{:>3}", format!("{:02}", h.parse::<u32>().unwrap() + 2)))
                .collect();
            format!("FHR {}", later.concat())
        } else {
            line.to_string()
        };
        out.push_str(&line);
        out.push('\n');
    }
    assert_eq!(out.matches("1300 UTC").count(), 2);
    out
}

/// A NOMADS stand-in for LAMP and NBS: the real LAVUSA for its 12:30Z cycle of 10 Jul 2020,
/// the NBS of [`nbs_as_13z`] for 13Z on 7 Nov 2018, 404 for anything else.
async fn lav_nbs_bulletin(
    State(seen): State<Arc<Seen>>,
    axum::extract::Path((code, date, hhmm)): axum::extract::Path<(String, String, String)>,
) -> Response {
    seen.0.lock().unwrap().push([("run".to_string(), format!("{code}:{date}T{hhmm}"))].into());
    match (code.as_str(), date.as_str(), hhmm.as_str()) {
        ("LAV", "20200710", "1230") => ([("content-type", "text/plain")], LAV.to_string()).into_response(),
        ("NBS", "20181107", "1300") => ([("content-type", "text/plain")], nbs_as_13z()).into_response(),
        _ => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

/// Open-Meteo without the run yet: its error answer, recorded.
async fn refused(State(seen): State<Arc<Seen>>, Query(q): Query<HashMap<String, String>>) -> Response {
    seen.0.lock().unwrap().push(q);
    (StatusCode::BAD_REQUEST, [("content-type", "application/json")], "{\"error\":true,\"reason\":\"no such run\"}")
        .into_response()
}

/// An archive answering its newest bulletin whatever the cycle asked for: the real MET of
/// 2017-08-12 12Z.
async fn latest_bulletin(
    State(seen): State<Arc<Seen>>,
    axum::extract::Path((date, hh)): axum::extract::Path<(String, String)>,
) -> Response {
    seen.0.lock().unwrap().push([("run".to_string(), format!("{date}T{hh}"))].into());
    ([("content-type", "text/plain")], MET).into_response()
}

/// The fixture server; its base URL.
async fn server(seen: Arc<Seen>) -> String {
    let app = axum::Router::new()
        .route("/single/v1/forecast", axum::routing::get(single_runs))
        .route("/previous/v1/forecast", axum::routing::get(previous_runs))
        .route("/nomads/met/{date}/{hh}", axum::routing::get(bulletin))
        .route("/refused/v1/forecast", axum::routing::get(refused))
        .route("/latest/met/{date}/{hh}", axum::routing::get(latest_bulletin))
        .route("/bulletins/{code}/{date}/{hhmm}", axum::routing::get(lav_nbs_bulletin))
        .with_state(seen);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn client() -> Arc<HttpClient> {
    Arc::new(
        HttpClient::new(ClientConfig {
            contact: "modelfeeds-test@example.com".to_string(),
            attempts: 1,
            backoff: Duration::from_millis(10),
            ..ClientConfig::default()
        })
        .unwrap(),
    )
}

fn om_cfg(base: &str, stations: &[&str]) -> OpenMeteoConfig {
    OpenMeteoConfig {
        base_url: format!("{base}/single"),
        archive_url: format!("{base}/previous"),
        stations: stations.iter().map(|s| s.to_string()).collect(),
        models: vec!["GFS".to_string()],
        batch_size: 2,
        interval: Duration::from_millis(100),
        timeout: Duration::from_secs(5),
        ..OpenMeteoConfig::default()
    }
    .validated()
    .unwrap()
}

/// A live service on `lake` (state in `dir`) driven by `clock`, that clock as the feeds
/// take it, and the service as their sink.
async fn live_at(
    dir: &tempfile::TempDir,
    lake: &Lake,
    clock: &Arc<ManualClock>,
) -> (Arc<dyn Clock>, Arc<WriteService>, Arc<dyn FeedSink>) {
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let live = Arc::new(support::open_live(lake, &dir.path().join("state"), Arc::clone(&dyn_clock)).await);
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&live));
    (dyn_clock, live, sink)
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

/// GFS becomes available 330 minutes after its cycle: at 05:29 the 00Z run is not asked
/// for, at 05:30 it is; each run is asked for once across polls and across a restart
/// (the lake says it is stored), and lands with the run time asked for.
#[tokio::test]
async fn open_meteo_runs_are_stored_once_each_with_their_run_time_and_not_before_their_delay() {
    let seen = Arc::new(Seen::default());
    let base = server(Arc::clone(&seen)).await;
    let (dir, lake) = support::temp_lake().await;
    let clock = Arc::new(ManualClock::new(at(2026, 9, 1, 5, 29)));
    let (dyn_clock, live, sink) = live_at(&dir, &lake, &clock).await;
    let cfg = om_cfg(&base, &["KNYC", "KMDW"]);
    let feed = OpenMeteo::with_clock(cfg.clone(), client(), Arc::clone(&dyn_clock)).unwrap();

    let first = feed.poll(sink.as_ref()).await;
    assert!(first.is_ok(), "{}", first.summary());
    assert_eq!(seen.runs(), ["2026-08-31T18:00"], "12 h back: the 18Z run only; 00Z is not out until 05:30");
    assert_eq!((first.requests, first.accepted), (1, 2 * 72), "{}", first.summary());
    let q = &seen.all()[0];
    assert_eq!((q["models"].as_str(), q["latitude"].split(',').count()), ("gfs_global", 2), "one batch: {q:?}");

    let again = feed.poll(sink.as_ref()).await;
    assert_eq!(again.requests, 0, "a stored run is not asked for again: {}", again.summary());

    clock.set(at(2026, 9, 1, 5, 30));
    let third = feed.poll(sink.as_ref()).await;
    assert_eq!(seen.runs(), ["2026-08-31T18:00", "2026-09-01T00:00"]);
    assert_eq!(third.accepted, 144, "{}", third.summary());
    assert_eq!(feed.poll(sink.as_ref()).await.requests, 0);

    live.flush().await.unwrap();
    let rows = support::sql(
        &lake,
        "SELECT CAST(run_time AS VARCHAR) AS r, count(DISTINCT location_name) AS s, count(*) AS n, \
         min(forecast_hour) AS h0, max(forecast_hour) AS h1 FROM forecasts GROUP BY 1 ORDER BY 1",
    )
    .await;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&rows).unwrap().to_string();
    assert!(text.contains("2026-08-31T18:00:00Z") || text.contains("2026-08-31 18:00:00"), "{text}");
    assert_eq!(support::scalar(&lake, "SELECT count(DISTINCT run_time) FROM forecasts").await, "2", "{text}");
    assert_eq!(support::scalar(&lake, "SELECT count(*) FROM forecasts").await, "288", "{text}");
    assert_eq!(support::scalar(&lake, "SELECT min(forecast_hour) FROM forecasts").await, "0", "{text}");
    assert_eq!(support::scalar(&lake, "SELECT max(forecast_hour) FROM forecasts").await, "71", "{text}");

    // A restart: a new feed (empty memory) reads the stored runs from the lake.
    let restarted = OpenMeteo::with_clock(cfg, client(), dyn_clock).unwrap();
    let r = restarted.poll(sink.as_ref()).await;
    assert!(r.is_ok(), "{}", r.summary());
    assert_eq!(r.requests, 0, "nothing refetched after a restart: {}", r.summary());
    assert_eq!(seen.runs().len(), 2);
}

/// A run the server does not have is asked for again after a growing wait (the 5-minute
/// interval, then 10, 20, 40 and 60 minutes), then given up after MAX_ATTEMPTS failures.
#[tokio::test]
async fn a_refused_run_is_asked_for_less_and_less_often_then_given_up() {
    let seen = Arc::new(Seen::default());
    let base = server(Arc::clone(&seen)).await;
    let start = at(2026, 9, 1, 5, 30);
    let clock = Arc::new(ManualClock::new(start));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let mut cfg = om_cfg(&base, &["KNYC"]);
    cfg.base_url = format!("{base}/refused");
    cfg.interval = Duration::from_secs(300);
    let feed = OpenMeteo::with_clock(cfg, client(), dyn_clock).unwrap();
    let sink = RecordingSink::new();
    // A poll every 5 minutes until the 06Z run is due (11:30); the minutes the 00Z run
    // was asked for at.
    let mut asked = Vec::new();
    for m in (0..360).step_by(5) {
        clock.set(start + chrono::Duration::minutes(m));
        let before = seen.runs().iter().filter(|r| *r == "2026-09-01T00:00").count();
        let r = feed.poll(&sink).await;
        assert_eq!(r.accepted, 0);
        if seen.runs().iter().filter(|r| *r == "2026-09-01T00:00").count() > before {
            asked.push(m);
        }
    }
    assert_eq!(wxlake::feeds::open_meteo::MAX_ATTEMPTS, 6);
    assert_eq!(asked, [0, 5, 15, 35, 75, 135], "growing waits, then given up");
}

/// A bulletin cycle the source has not published (it answers its newest, an older cycle)
/// is asked for after growing waits capped at an hour: from its due time (03:15) until it
/// leaves the 12-hour lookback (12:00), 12 requests at a 5-minute interval instead of 105;
/// nothing is stored and no error reported.
#[tokio::test]
async fn an_unpublished_mos_cycle_is_asked_for_less_and_less_often() {
    let seen = Arc::new(Seen::default());
    let base = server(Arc::clone(&seen)).await;
    // The 13 Aug 00Z MET is due at 03:15; 12Z is due at 15:15, after the polls below.
    let start = at(2017, 8, 13, 3, 15);
    let clock = Arc::new(ManualClock::new(start));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    let cfg = MosConfig {
        products: vec!["MET".into()],
        urls: [("MET".to_string(), format!("{base}/latest/met/{{date}}/{{hh}}"))].into(),
        stations: vec!["KFOZ".into()],
        ..MosConfig::default()
    }
    .validated()
    .unwrap();
    assert_eq!((cfg.interval, cfg.lookback_hours), (Duration::from_secs(300), 12.0));
    let feed = Mos::with_clock(cfg, client(), dyn_clock).unwrap();
    let sink = RecordingSink::new();
    let mut asked = Vec::new();
    for m in (0..12 * 60).step_by(5) {
        clock.set(start + chrono::Duration::minutes(m));
        let r = feed.poll(&sink).await;
        assert!(r.is_ok() && r.accepted == 0, "{}", r.summary());
        if r.requests > 0 {
            assert_eq!((r.requests, r.empty), (1, 1), "{}", r.summary());
            asked.push(m);
        }
    }
    assert!(seen.runs().iter().all(|r| r == "20170813T00"), "{:?}", seen.runs());
    assert_eq!(asked[..6], [0, 5, 15, 35, 75, 135], "{asked:?}");
    assert!(asked.windows(2).skip(4).all(|w| w[1] - w[0] == 60), "an hour apart at most: {asked:?}");
    assert_eq!(asked.len(), 12, "{asked:?}");
    assert_eq!(asked.last(), Some(&495), "the last ask before 12:00 (minute 525): {asked:?}");
    assert!(sink.taken().is_empty());
}

/// The previous-runs archive: one unit per model and batch, the real answer decoded with
/// day-N run times.
#[tokio::test]
async fn the_open_meteo_archive_stores_previous_runs() {
    let seen = Arc::new(Seen::default());
    let base = server(Arc::clone(&seen)).await;
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(at(2026, 9, 4, 0, 0)));
    let mut cfg = om_cfg(&base, &["KNYC"]);
    // The real answer is GFS (gfs_seamless) and ECMWF: both are decoded.
    cfg.models = vec!["GFS".into()];
    let feed = OpenMeteo::with_clock(cfg, client(), clock).unwrap();
    let d = |s: &str| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
    let units = feed.units(d("2026-09-01"), d("2026-09-03"), &[]);
    assert_eq!(units.len(), 1);
    assert_eq!(units[0].key, "GFS:KNYC");
    let sink = RecordingSink::new();
    let r = Archive::fetch(&feed, &units[0], &sink).await;
    assert!(r.is_ok(), "{}", r.summary());
    assert_eq!(r.accepted, 2 * 3 * 72, "two models x three leads x 72 hours: {}", r.summary());
    let q = &seen.all()[0];
    assert_eq!((q["start_date"].as_str(), q["end_date"].as_str()), ("2026-09-01", "2026-09-03"));
    let taken = sink.taken();
    assert_eq!(taken[0].opts.station.as_deref(), Some("KNYC"));
    assert_eq!(taken[0].opts.run_time, None, "previous-runs data date their own runs");
}

/// `wxlake feeds backfill open_meteo --from 1 Sep --to 3 Sep`: the previous-runs answer
/// (the real one, days 1 to 3 before each valid hour) holds runs from 29 Aug on, so the
/// derived jobs after it cover those run dates too: `forecast_daily` then equals a full
/// run of the job, the runs before 1 Sep included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_meteo_backfill_derives_the_runs_it_stored_before_its_first_day() {
    let seen = Arc::new(Seen::default());
    let base = server(Arc::clone(&seen)).await;
    let dir = tempfile::tempdir().unwrap();
    let lake_dir = dir.path().join("lake");
    let config = dir.path().join("wxlake.toml");
    std::fs::write(
        &config,
        format!(
            "[sources]\ncontact = \"backfill-test@example.com\"\nattempts = 1\n\
             [sources.open_meteo]\nbase_url = \"{base}/single\"\narchive_url = \"{base}/previous\"\n\
             stations = [\"KNYC\"]\nmodels = [\"GFS\"]\n"
        ),
    )
    .unwrap();
    let args: Vec<String> = ["--config", config.to_str().unwrap(), "feeds", "backfill", "open_meteo"]
        .into_iter()
        .chain([
            "--from",
            "2026-09-01",
            "--to",
            "2026-09-03",
            "--state-dir",
            dir.path().join("state").to_str().unwrap(),
        ])
        .map(String::from)
        .collect();
    let run_lake = lake_dir.clone();
    let o = tokio::task::spawn_blocking(move || {
        support::wxlake(&run_lake, &args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    let err = support::stderr(&o);
    assert!(o.status.success(), "{err}");
    // GFS's previous runs reach 7 days back.
    assert!(err.contains("derived jobs for 2026-08-25..2026-09-04"), "{err}");
    assert_eq!(seen.all().len(), 1, "one unit");

    let lake = Lake::open(&format!("file://{}", lake_dir.display())).await.unwrap();
    let stored = support::rows(&lake, "SELECT DISTINCT CAST(run_date AS VARCHAR) FROM forecasts ORDER BY 1").await;
    assert_eq!(stored.concat(), ["2026-08-29", "2026-08-30", "2026-08-31", "2026-09-01", "2026-09-02"]);
    let daily =
        "SELECT CAST(model AS VARCHAR), CAST(run_time AS VARCHAR), tz_mode, CAST(date AS VARCHAR), high_f, low_f \
                 FROM forecast_daily ORDER BY 1, 2, 3, 4";
    let after_backfill = support::rows(&lake, daily).await;
    let first_run_date = after_backfill.iter().map(|r| r[1].clone()).min().unwrap_or_default();
    assert!(first_run_date.starts_with("2026-08-30"), "the runs of 30 and 31 Aug have full days: {after_backfill:?}");
    let specs = wxlake::jobs::embedded_specs().unwrap();
    let spec = specs.iter().find(|s| s.name == "forecast_daily").unwrap();
    wxlake::jobs::run_job(&lake, spec, None, &wxlake::jobs::runner::no_progress).await.unwrap();
    assert_eq!(support::rows(&lake, daily).await, after_backfill, "as a full run of forecast_daily");
}

/// MOS: the 12Z MET is due at 15:15 (delay 195 minutes), fetched once, and only the
/// configured stations' blocks are stored.
#[tokio::test]
async fn mos_bulletins_are_fetched_once_per_cycle_after_their_delay() {
    let seen = Arc::new(Seen::default());
    let base = server(Arc::clone(&seen)).await;
    let (dir, lake) = support::temp_lake().await;
    let clock = Arc::new(ManualClock::new(at(2017, 8, 12, 15, 14)));
    let (dyn_clock, live, sink) = live_at(&dir, &lake, &clock).await;
    let cfg = MosConfig {
        products: vec!["MET".into()],
        urls: [("MET".to_string(), format!("{base}/nomads/met/{{date}}/{{hh}}"))].into(),
        stations: vec!["KFOZ".into(), "KFSD".into()],
        lookback_hours: 12.0,
        ..MosConfig::default()
    }
    .validated()
    .unwrap();
    let feed = Mos::with_clock(cfg.clone(), client(), Arc::clone(&dyn_clock)).unwrap();

    let r = feed.poll(sink.as_ref()).await;
    assert_eq!(r.requests, 0, "00Z is older than the lookback, 12Z not out yet: {}", r.summary());
    clock.set(at(2017, 8, 12, 15, 15));
    let r = feed.poll(sink.as_ref()).await;
    assert!(r.is_ok(), "{}", r.summary());
    assert_eq!(seen.runs(), ["20170812T12"]);
    assert!(r.accepted > 0 && r.rejected == 0, "{}", r.summary());
    assert_eq!(feed.poll(sink.as_ref()).await.requests, 0, "fetched once");

    live.flush().await.unwrap();
    assert_eq!(support::scalar(&lake, "SELECT count(DISTINCT location_name) FROM forecasts").await, "2");
    assert_eq!(support::scalar(&lake, "SELECT min(location_name) FROM forecasts").await, "KFOZ");
    assert_eq!(support::scalar(&lake, "SELECT max(location_name) FROM forecasts").await, "KFSD");
    assert_eq!(support::scalar(&lake, "SELECT count(DISTINCT run_time) FROM forecasts").await, "1");
    assert_eq!(support::scalar(&lake, "SELECT max(model) FROM forecasts").await, "NAM-MOS");
    let restarted = Mos::with_clock(cfg, client(), dyn_clock).unwrap();
    assert_eq!(restarted.poll(sink.as_ref()).await.requests, 0, "stored cycles are not refetched after a restart");
}

/// LAMP (LAV) and NBM NBS bulletins through the feed and the live path: each cycle is
/// fetched once after its delay (LAV 65 min, NBS 90 min), only the configured stations'
/// blocks are stored, every row with the model of its product and the run time its station
/// headers state (LAMP's labelled HH30), and a later poll asks for neither again.
#[tokio::test]
async fn lamp_and_nbs_bulletins_are_stored_per_model_with_their_header_run_time() {
    let seen = Arc::new(Seen::default());
    let base = server(Arc::clone(&seen)).await;
    let (dir, lake) = support::temp_lake().await;
    // NBS 13Z is due at 14:30.
    let clock = Arc::new(ManualClock::new(at(2018, 11, 7, 14, 30)));
    let (dyn_clock, live, sink) = live_at(&dir, &lake, &clock).await;
    let stations = ["KALM", "PHHI", "PHJH"];
    let cfg = MosConfig {
        products: vec!["LAV".into(), "NBS".into()],
        urls: ["LAV", "NBS"].map(|c| (c.to_string(), format!("{base}/bulletins/{c}/{{date}}/{{hh}}{{mm}}"))).into(),
        stations: stations.map(String::from).to_vec(),
        // Two hours: one cycle of each product is due at a time below.
        lookback_hours: 2.0,
        ..MosConfig::default()
    }
    .validated()
    .unwrap();
    let feed = Mos::with_clock(cfg, client(), dyn_clock).unwrap();
    // What the real decoder reads from each bulletin for the configured stations.
    let expected = |text: &str| {
        let opts = wxlake::ingest::IngestOptions::default();
        let wxlake::ingest::Records::Forecasts(rows) =
            wxlake::ingest::Format::Mos.decode(text.as_bytes(), &opts).records
        else {
            panic!("not forecasts")
        };
        rows.iter().filter(|r| stations.contains(&&*r.location_name)).count()
    };

    let nbs = feed.poll(sink.as_ref()).await;
    assert!(nbs.is_ok(), "{}", nbs.summary());
    assert_eq!(seen.runs(), ["NBS:20181107T1300"]);
    let nbs_rows = expected(&nbs_as_13z());
    assert!(nbs_rows > 0);
    assert_eq!((nbs.requests, nbs.accepted, nbs.rejected), (1, nbs_rows, 0), "KALM's block only: {}", nbs.summary());
    // Before LAMP's 13:30Z cycle of that day is due (14:35; the fixture has none).
    clock.set(at(2018, 11, 7, 14, 34));
    assert_eq!(feed.poll(sink.as_ref()).await.requests, 0, "the 13Z NBS is done");

    // LAMP's 12:30Z cycle is due at 13:35.
    clock.set(at(2020, 7, 10, 13, 35));
    let lav = feed.poll(sink.as_ref()).await;
    assert!(lav.is_ok(), "{}", lav.summary());
    assert_eq!(seen.runs(), ["NBS:20181107T1300", "LAV:20200710T1230"]);
    let lav_rows = expected(LAV);
    assert!(lav_rows > 0);
    assert_eq!((lav.requests, lav.accepted, lav.rejected), (1, lav_rows, 0), "{}", lav.summary());
    clock.set(at(2020, 7, 10, 14, 0));
    let again = feed.poll(sink.as_ref()).await;
    assert_eq!(again.requests, 0, "the 12:30Z LAV is done: {}", again.summary());

    live.flush().await.unwrap();
    let got = support::sql(
        &lake,
        "SELECT CAST(model AS VARCHAR) AS m, CAST(location_name AS VARCHAR) AS l, CAST(run_time AS VARCHAR) AS r, \
         count(*) AS n, min(valid_time) AS v0 FROM forecasts GROUP BY 1, 2, 3 ORDER BY 1, 2",
    )
    .await;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&got).unwrap().to_string();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("-MOS")).collect();
    assert_eq!(lines.len(), 3, "KALM (NBS), PHHI and PHJH (LAV); PHBK and KALN left out: {text}");
    assert!(
        lines[0].contains("LAV-MOS") && lines[0].contains("PHHI") && lines[0].contains("2020-07-10T12:30:00"),
        "{text}"
    );
    assert!(
        lines[1].contains("LAV-MOS") && lines[1].contains("PHJH") && lines[1].contains("2020-07-10T12:30:00"),
        "{text}"
    );
    assert!(
        lines[2].contains("NBS-MOS") && lines[2].contains("KALM") && lines[2].contains("2018-11-07T13:00:00"),
        "{text}"
    );
    // The real columns' valid times: NBS's first is 21Z (FHR 08 of 13Z).
    assert!(lines[2].contains("2018-11-07T21:00:00"), "{text}");
    let total: usize = support::scalar(&lake, "SELECT count(*) FROM forecasts").await.parse().unwrap();
    assert_eq!(total, nbs_rows + lav_rows, "each row once");
}

/// Item 7: a run landing through the live path (the feed → WriteService → flush) has its
/// `mode=daily` rows served within a short bound, with no scheduler tick, and they equal
/// what a full `forecast_daily` run gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forecast_daily_is_fresh_right_after_a_run_lands() {
    let seen = Arc::new(Seen::default());
    let base = server(Arc::clone(&seen)).await;
    let app = crate::http::App::new().await;
    app.clock.set(at(2026, 9, 1, 5, 30));
    let live = Arc::clone(&app.state.live);
    let specs = wxlake::jobs::embedded_specs().unwrap();
    let published = Arc::clone(&live);
    let clock: Arc<dyn Clock> = app.clock.clone();
    wxlake::jobs::spawn_fresh_runs(live.lake.clone(), specs.clone(), live.subscribe_new_runs(), clock, move || {
        published.derived_published()
    });
    let version = live.derived_version();
    live.spawn_background(Duration::from_secs(3600));
    let dyn_clock: Arc<dyn Clock> = app.clock.clone();
    let mut cfg = om_cfg(&base, &["KNYC"]);
    // 00Z only (18Z of the day before is older than 6 hours).
    cfg.lookback_hours = 6.0;
    let feed = OpenMeteo::with_clock(cfg, client(), dyn_clock).unwrap();
    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&live));

    let url = "/api/v2/forecasts.php?location_name=KNYC&mode=daily&model=GFS";
    let (_, before) = app.get(url).await;
    assert_eq!(before.as_array().map(Vec::len), Some(0), "{before}");
    let started = Instant::now();
    let r = feed.poll(sink.as_ref()).await;
    assert_eq!((r.requests, r.accepted), (1, 72), "{}", r.summary());
    // The flush is asked for at once (not in an hour) and the fresh run follows it.
    let fresh = loop {
        let (_, v) = app.get(url).await;
        if v.as_array().is_some_and(|a| !a.is_empty()) {
            break v;
        }
        // Issue 17's target is 2 s in release; a debug build serves it in about 0.2 s, so
        // 10 s fails only on a real regression, not on a loaded machine.
        assert!(started.elapsed() < Duration::from_secs(10), "mode=daily did not serve the new run within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let took = started.elapsed();
    // The caches of job tables (model_accuracy) are told once the refresh published.
    let deadline = Instant::now() + Duration::from_secs(30);
    while live.derived_version() == version {
        assert!(Instant::now() < deadline, "the refresh never reported its publication");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(fresh.as_array().unwrap().iter().all(|d| d["run_time"] == "2026-09-01T00:00:00Z"), "{fresh}");
    // 72 hours from 00Z cover the civil days 1 and 2 of New York (04Z..04Z) fully.
    assert_eq!(fresh.as_array().unwrap().len(), 2, "{fresh}");

    // Equal to a full run of the job.
    let spec = specs.iter().find(|s| s.name == "forecast_daily").unwrap();
    wxlake::jobs::run_job(&live.lake, spec, None, &wxlake::jobs::runner::no_progress).await.unwrap();
    let (_, full) = app.get(url).await;
    assert_eq!(fresh, full);
    let recorded = live.ctx.sql("SELECT job FROM job_runs WHERE trigger = 'new_run'").await.unwrap();
    let recorded = recorded.collect().await.unwrap();
    assert!(recorded.iter().map(|b| b.num_rows()).sum::<usize>() > 0, "the fresh runs are recorded");
    eprintln!("run landed -> mode=daily served in {took:?}");
}

/// Central Park's hourly METARs of 1-3 Sep 2026, built: a smooth day (20 °C at 03 LST,
/// 26 °C at 15 LST) with T-groups, 24 reports a day, enough for a verifying day.
fn knyc_hourly_metars() -> String {
    let mut out = String::new();
    for day in 1..=3 {
        for hour in 0..24 {
            let lst = (hour + 24 - 5) % 24;
            let tenths = 230.0 + 30.0 * (2.0 * std::f64::consts::PI * (lst as f64 - 15.0) / 24.0).cos();
            let tenths = tenths.round() as i64;
            let whole = (tenths as f64 / 10.0).round() as i64;
            out.push_str(&format!(
                "KNYC {day:02}{hour:02}51Z 00000KT 10SM CLR {whole:02}/10 A3000 RMK AO2 T0{tenths:03}0100\n"
            ));
        }
    }
    out
}

/// Item 7, the accuracy tables: with the observed days in the lake (their daily_extremes
/// computed by the job, as the hourly cron does), a GFS run forecasting them lands through
/// the live ingest path, and right after, with no scheduler running, accuracy_pairs pairs
/// its forecasts with those observations and model_accuracy scores it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accuracy_tables_are_fresh_right_after_a_run_lands() {
    use wxlake::jobs::runner::no_progress;
    let app = crate::http::App::new().await;
    app.clock.set(at(2026, 9, 4, 6, 0));
    let live = Arc::clone(&app.state.live);
    let specs = wxlake::jobs::embedded_specs().unwrap();
    let (status, v) = app.ingest("metar", "month=2026-09", &knyc_hourly_metars()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{v}");
    live.flush().await.unwrap();
    let daily_extremes = specs.iter().find(|s| s.name == "daily_extremes").unwrap();
    wxlake::jobs::run_job(&live.lake, daily_extremes, None, &no_progress).await.unwrap();
    let verifying = "SELECT count(*) FROM daily_extremes WHERE station_code = 'KNYC' AND logic = 'nws' \
                     AND day_complete AND observations >= 20 AND CAST(date AS VARCHAR) IN ('2026-09-01', '2026-09-02')";
    assert_eq!(support::scalar(&live.lake, verifying).await, "2", "1 and 2 Sep are observed days");

    let published = Arc::clone(&live);
    let clock: Arc<dyn Clock> = app.clock.clone();
    wxlake::jobs::spawn_fresh_runs(live.lake.clone(), specs, live.subscribe_new_runs(), clock, move || {
        published.derived_published()
    });
    live.spawn_background(Duration::from_secs(3600));
    let version = live.derived_version();
    let run = at(2026, 9, 1, 0, 0);
    let body = knyc_gfs_answer(run).to_string();
    let (status, v) = app.ingest("open-meteo", "station=KNYC&run_time=2026-09-01T00:00:00Z", &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{v}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while live.derived_version() == version {
        assert!(Instant::now() < deadline, "the derived tables were not refreshed for the new run");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The run's pairs: 1 Sep at lead 1 (issued 5 h before the LST day), 2 Sep at leads 1
    // and 2, high and low; each the observed day's value against the run's daily value.
    let pairs = support::rows(
        &live.lake,
        "SELECT CAST(p.date AS VARCHAR) AS d, p.lead_days, p.target, p.forecast, p.observed, p.error, \
                CASE p.target WHEN 'high' THEN e.high ELSE e.low END AS extreme, \
                CASE p.target WHEN 'high' THEN f.high_f ELSE f.low_f END AS daily \
         FROM accuracy_pairs p \
         JOIN daily_extremes e ON e.station_code = p.station_code AND e.date = p.date AND e.logic = 'nws' \
         JOIN forecast_daily f ON f.location_name = p.station_code AND f.date = p.date \
              AND f.run_time = p.run_time AND f.tz_mode = 'standard' AND CAST(f.model AS VARCHAR) = p.model \
         WHERE p.station_code = 'KNYC' AND p.model = 'GFS' AND p.run_label = '00z' \
         ORDER BY 1, 2, 3",
    )
    .await;
    let text = format!("{pairs:?}");
    let got: Vec<(String, i64, String)> = pairs
        .iter()
        .map(|r| {
            let num = |i: usize| r[i].parse::<f64>().unwrap_or_else(|_| panic!("{r:?}"));
            assert_eq!(num(4), num(6), "the observed value is the day's extreme: {text}");
            assert_eq!(num(3), num(7), "the forecast is the run's daily value: {text}");
            assert!((num(5) - (num(4) - num(3))).abs() < 1e-9, "error = observed - forecast: {text}");
            (r[0].clone(), r[1].parse().unwrap(), r[2].clone())
        })
        .collect();
    let want: Vec<(String, i64, String)> = [("2026-09-01", 1), ("2026-09-02", 1), ("2026-09-02", 2)]
        .into_iter()
        .flat_map(|(d, l)| ["high", "low"].map(|t| (d.to_string(), l, t.to_string())))
        .collect();
    assert_eq!(got, want, "{text}");
    let scored = "SELECT sum(n) FROM model_accuracy WHERE station_code = 'KNYC' AND model = 'GFS' \
                  AND scope = 'per_model_run' AND run_label = '00z' AND window_days = 7";
    assert_eq!(support::scalar(&live.lake, scored).await, "6", "model_accuracy scores the run's six pairs");
    let fresh = "SELECT count(DISTINCT job) FROM job_runs WHERE trigger = 'new_run' AND status = 'ok' \
                 AND job IN ('forecast_daily', 'accuracy_pairs', 'model_accuracy')";
    assert_eq!(support::scalar(&live.lake, fresh).await, "3");
}

/// `wxlake ingest` of a model run refreshes `forecast_daily` for it at once, as the live
/// path does; `--no-refresh` leaves the derived tables alone.
#[test]
fn cli_ingest_of_a_run_refreshes_forecast_daily() {
    let dir = tempfile::tempdir().unwrap();
    let run = at(2026, 9, 1, 0, 0);
    let file = dir.path().join("gfs_00z.json");
    std::fs::write(&file, knyc_gfs_answer(run).to_string()).unwrap();
    let days = "SELECT count(*) AS n FROM forecast_daily WHERE location_name = 'KNYC'";
    let ingest = |lake: &std::path::Path, extra: &[&str]| {
        let mut args = vec!["ingest", "open-meteo", "--station", "KNYC", "--run-time", "2026-09-01T00:00:00Z"];
        args.extend_from_slice(extra);
        args.push(file.to_str().unwrap());
        let o = support::wxlake(lake, &args);
        assert!(o.status.success(), "{}", support::stderr(&o));
    };
    let lake = dir.path().join("lake");
    ingest(&lake, &[]);
    let o = support::wxlake(&lake, &["sql", days, "--format", "csv"]);
    // Civil and standard days 1 and 2 of September in New York.
    assert_eq!(support::stdout(&o), "n\n4\n", "{}", support::stderr(&o));

    let quiet = dir.path().join("quiet");
    ingest(&quiet, &["--no-refresh"]);
    let o = support::wxlake(&quiet, &["sql", days, "--format", "csv"]);
    assert!(!support::stdout(&o).contains("n\n4"), "{}{}", support::stdout(&o), support::stderr(&o));
}
