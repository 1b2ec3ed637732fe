//! `serve --demo`'s weather: the simulated public sources (`demo::sim`) on 127.0.0.1,
//! polled by the real feeds through the live path. A manual clock shared by the simulator
//! and the live service crosses hours in an instant.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use wxlake::clock::{Clock, ManualClock};
use wxlake::demo::sim::{demo_sources, Simulator};
use wxlake::demo::DEFAULT_SEED;
use wxlake::feeds::config::{ClientConfig, SOURCES};
use wxlake::feeds::http::{Fetched, HttpClient};
use wxlake::feeds::mos::Mos;
use wxlake::feeds::{Feeds, FeedsConfig, RecordingSink, Source};
use wxlake::ingest::{Format, IngestOptions, Records};
use wxlake::lake::Lake;
use wxlake::models;
use wxlake::write::hot::Applied;

use crate::support;

const STATIONS: [&str; 4] = ["KNYC", "KMDW", "EGLC", "RJTT"];

#[tokio::test]
async fn the_awc_feed_against_the_simulator_streams_observations_and_new_extremes() {
    // 14:00Z: morning in Chicago and New York, afternoon in London, night in Tokyo.
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 4, 2, 14, 0, 0).unwrap()));
    let shared: Arc<dyn Clock> = clock.clone();
    let sim = Simulator::start(Arc::clone(&shared), DEFAULT_SEED).await.unwrap();
    let (dir, lake) = support::temp_lake().await;
    let live = Arc::new(support::open_live(&lake, &dir.path().join("state"), Arc::clone(&shared)).await);

    // What the stream publisher would send: every applied record, its events by name.
    let events = Arc::new(Mutex::new(Vec::<(String, &'static str)>::new()));
    let mut inbox = live.attach_publisher(1024).await;
    let seen = Arc::clone(&events);
    tokio::spawn(async move {
        while let Some(notice) = inbox.recv().await {
            if let Applied::Observation { station, events, .. } = &notice.applied {
                seen.lock().unwrap().extend(events.iter().map(|e| (station.clone(), e.name())));
            }
            if let Some(done) = notice.logged {
                let _ = done.send(());
            }
        }
    });

    // The demo's own table, narrowed to the AWC feed and a few stations to keep the test
    // fast (the other sources have tests of their own).
    let mut table = demo_sources(sim.base_url());
    table.retain(|name, v| !v.is_table() || name == "awc_metar");
    let awc = table.get_mut("awc_metar").and_then(|v| v.as_table_mut()).expect("the demo polls awc_metar");
    awc.insert("stations".into(), toml::Value::Array(STATIONS.iter().map(|s| toml::Value::from(*s)).collect()));
    let cfg = FeedsConfig::from_toml(&table).unwrap();
    let feeds = Feeds::from_config(&cfg, Arc::new(Arc::clone(&live))).unwrap();

    let (name, first) = feeds.poll_once().await.remove(0);
    assert_eq!(name, "awc_metar");
    assert!(first.is_ok(), "{}", first.summary());
    // (12:00, 13:58]: KNYC and KMDW hourly, EGLC and RJTT half-hourly (SPECIs may add).
    assert!(first.accepted >= 2 + 2 + 3 + 3, "{}", first.summary());
    assert!(first.events > 0, "the first reports of a day set its high and low: {}", first.summary());

    // An hour later: the new hour's reports, and the morning warming sets new highs.
    clock.advance(chrono::Duration::hours(1));
    let (_, second) = feeds.poll_once().await.remove(0);
    assert!(second.is_ok(), "{}", second.summary());
    assert!(second.accepted >= first.accepted / 2, "{}", second.summary());
    clock.advance(chrono::Duration::hours(2));
    let (_, third) = feeds.poll_once().await.remove(0);
    assert!(third.is_ok(), "{}", third.summary());

    let names: Vec<(String, &str)> = events.lock().unwrap().clone();
    assert!(names.iter().any(|(_, n)| *n == "new_high"), "{names:?}");
    assert!(names.iter().any(|(_, n)| *n == "new_low"), "{names:?}");
    assert!(
        names.iter().any(|(s, n)| s == "KNYC" && *n == "new_high"),
        "New York warms through the morning: {names:?}"
    );
    assert_eq!(names.len(), first.events + second.events + third.events);

    // In the lake once each, although the windows overlapped.
    live.flush().await.unwrap();
    let stored: usize = support::scalar(&lake, "SELECT count(*) FROM observations").await.parse().unwrap();
    // Accepted means new to the service: the reports the overlapping windows brought
    // again are duplicates, and the lake holds each accepted report once.
    let accepted = first.accepted + second.accepted + third.accepted;
    assert_eq!(stored, accepted, "stored {stored} of {accepted} accepted");
    assert!(second.duplicate > 0, "an hour later the 2-hour windows overlap: {}", second.summary());
    // 17:00Z: EGLC's 16:30 report is the newest AWC has (17:00's arrives at 17:02).
    let latest =
        support::scalar(&lake, "SELECT max(observation_time) FROM observations WHERE station_code = 'EGLC'").await;
    assert!(latest.contains("2026-04-02") && latest.contains("16:30"), "{latest}");
}

/// Every simulated endpoint through the feeds' own client, decoded by the ingest formats.
#[tokio::test]
async fn every_simulated_endpoint_answers_in_its_real_format() {
    let now = Utc.with_ymd_and_hms(2026, 4, 3, 23, 30, 0).unwrap();
    let sim = Simulator::start(Arc::new(ManualClock::new(now)), DEFAULT_SEED).await.unwrap();
    let client =
        HttpClient::new(ClientConfig { contact: "demosim-test@example.com".into(), ..ClientConfig::default() })
            .unwrap();
    let get = |path: String| {
        let url = url::Url::parse(&format!("{}{path}", sim.base_url())).unwrap();
        let client = &client;
        async move {
            match client.get(&url, Duration::from_secs(20)).await {
                Ok(Fetched::New(body)) => body.bytes,
                other => panic!("{url}: {other:?}"),
            }
        }
    };
    let decode = |format: Format, body: &[u8], station: Option<&str>| {
        let opts = IngestOptions { month: Some((2026, 4)), station: station.map(str::to_string), ..Default::default() };
        let d = format.decode(body, &opts);
        assert!(d.errors.is_empty(), "{format}: {:?}", d.errors);
        d.records
    };

    let body = get("/api/data/metar?ids=KNYC,EGLC&format=json&hours=2".into()).await;
    let Records::Observations(m) = decode(Format::Metar, &body, None) else { panic!() };
    assert!(m.iter().any(|r| r.station == "KNYC") && m.iter().any(|r| r.station == "EGLC"));

    let body = get("/cgi-bin/request/asos.py?station=NYC&data=metar&sts=2026-04-03T20:00Z&ets=2026-04-03T23:00Z&tz=Etc/UTC&format=onlytdf".into()).await;
    let Records::Observations(m) = decode(Format::Metar, &body, None) else { panic!() };
    assert!(m.len() >= 36 + 3, "{}", m.len());

    let body = get("/cgi-bin/request/asos1min.py?station=NYC&vars=tmpf&sts=2026-04-03T22:00Z&ets=2026-04-03T23:00Z&sample=1min&what=download&delim=comma".into()).await;
    let Records::OneMinute(rows) = decode(Format::Onemin, &body, None) else { panic!() };
    assert_eq!(rows.len(), 60);

    for (kind, format) in [("CLI", Format::Cli), ("DSM", Format::Dsm)] {
        let body = get(format!("/products/types/{kind}/locations/NYC")).await;
        let list: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let graph = list["@graph"].as_array().unwrap();
        assert!(!graph.is_empty(), "{kind}");
        assert!(graph.iter().all(|p| p["productCode"] == kind));
        let id = graph[0]["id"].as_str().unwrap();
        let body = get(format!("/products/{id}")).await;
        let product: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let text = product["productText"].as_str().unwrap();
        let Records::Reports(r) = decode(format, text.as_bytes(), None) else { panic!() };
        assert_eq!(r.len(), 1, "{kind}");
        assert_eq!(r[0].station, "KNYC");
    }
    let empty = get("/products/types/CLI/locations/EGLC".into()).await;
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&empty).unwrap()["@graph"], serde_json::json!([]));

    let nyc = wxlake::catalog::Catalog::global().get("KNYC").unwrap();
    let body = get(format!("/points/{:.4},{:.4}", nyc.latitude, nyc.longitude)).await;
    let point: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let hourly = point["properties"]["forecastHourly"].as_str().unwrap();
    let path = hourly.strip_prefix(sim.base_url()).expect("the forecast URL is on the simulator");
    let body = get(path.to_string()).await;
    let Records::NwsHourly(rows) = decode(Format::NwsHourly, &body, Some("KNYC")) else { panic!() };
    assert_eq!(rows.len(), 156);

    let body = get("/data/cache/metars.cache.csv.gz".into()).await;
    assert_eq!(&body[..3], &[0x1f, 0x8b, 8], "a gzip file");

    let body = get(format!(
        "/v1/forecast?latitude={}&longitude={}&hourly=temperature_2m&models=gfs_global,ecmwf_ifs025&run=2026-04-03T00:00",
        nyc.latitude, nyc.longitude
    ))
    .await;
    let run = Utc.with_ymd_and_hms(2026, 4, 3, 0, 0, 0).unwrap();
    let opts = IngestOptions { station: Some("KNYC".into()), run_time: Some(run), ..Default::default() };
    let d = Format::OpenMeteo.decode(&body, &opts);
    assert!(d.errors.is_empty(), "{:?}", &d.errors[..d.errors.len().min(3)]);
    let Records::Forecasts(rows) = d.records else { panic!() };
    assert!(rows.iter().any(|r| r.model == "GFS") && rows.iter().any(|r| r.model == "ECMWF-IFS"));

    let body = get("/cgi-bin/afos/retrieve.py?pil=NBSUSA&fmt=text&limit=1".into()).await;
    let Records::Forecasts(rows) = decode(Format::Mos, &body, None) else { panic!() };
    assert!(rows.iter().all(|r| r.model == "NBS-MOS") && rows.iter().any(|r| r.location_name == "KNYC"));

    // Malformed requests get the precise 4xx a service gives.
    for (path, status) in [
        ("/api/data/metar?format=json", 400),
        ("/cgi-bin/request/asos.py?station=NYC", 400),
        ("/products/00000000-0000-4000-0000-000000000000", 404),
        ("/points/91,x", 400),
        ("/points/51.5,0.05", 404),
        ("/v1/forecast?latitude=51.505&longitude=0.05&hourly=temperature_2m&models=ncep_nam_conus", 400),
        ("/cgi-bin/afos/retrieve.py?pil=XYZUSA", 404),
    ] {
        let url = url::Url::parse(&format!("{}{path}", sim.base_url())).unwrap();
        let err = client.get(&url, Duration::from_secs(5)).await.unwrap_err();
        assert!(err.to_string().contains(&status.to_string()), "{path}: {err}");
    }
}

/// `wxlake serve --demo` end to end: it starts the simulator, runs the AWC feed against
/// it, and a station absent from the lake gets today's observations through the live path.
#[tokio::test(flavor = "multi_thread")]
async fn serve_demo_runs_the_feeds_against_its_simulator() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    // Some data, so that --demo does not build a demo lake.
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "KNYC 011251Z 00000KT 10SM CLR 05/M02 A3012 RMK AO2 T00501017\n").unwrap();
    let o = support::wxlake(&lake, &["ingest", "metar", "--month", "2026-03", input.to_str().unwrap()]);
    assert!(o.status.success(), "{}", support::stderr(&o));

    let mut server = Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .arg("--lake")
        .arg(format!("file://{}", lake.display()))
        .args(["serve", "--demo", "--addr", "127.0.0.1:0", "--stream-addr", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The keys come on stdout, which is read to its end (a closed pipe would fail the
    // server's next print).
    let (key_tx, key_rx) = std::sync::mpsc::channel();
    let out = BufReader::new(server.stdout.take().unwrap());
    std::thread::spawn(move || {
        for l in out.lines().map_while(Result::ok) {
            if let Some(k) = l.strip_prefix("enterprise").and_then(|r| r.split_whitespace().next()) {
                let _ = key_tx.send(k.to_string());
            }
        }
    });
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    let mut addr = None;
    for l in lines.by_ref().map_while(Result::ok) {
        said.push(l.clone());
        if let Some(a) = l.split("listening on http://").nth(1) {
            addr = a.split_whitespace().next().map(str::to_string);
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let key = key_rx.recv_timeout(Duration::from_secs(10)).ok();
    let (Some(key), Some(addr)) = (key, addr) else {
        let _ = server.kill();
        panic!("the demo server did not start: {said:?}");
    };
    let said = said.join("\n");
    assert!(said.contains("demo: simulated public sources on http://127.0.0.1:"), "{said}");
    assert!(said.contains("feeds: polling") && said.contains("awc_metar"), "{said}");

    // EGLC reports every 30 minutes; the first poll brings the last two hours.
    // Live: observed within the last hour (a calendar-day check fails just after midnight).
    let url = format!("http://{addr}/api/v2/observations.php?station_code=EGLC&mode=latest");
    let live = |body: &str| {
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let at = v["observation_time"].as_str().unwrap_or_default();
        chrono::NaiveDateTime::parse_from_str(at, "%Y-%m-%d %H:%M:%S")
            .is_ok_and(|t| v["station_code"] == "EGLC" && Utc::now() - t.and_utc() < chrono::Duration::hours(1))
    };
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while std::time::Instant::now() < deadline {
        if let Ok(r) = client.get(&url).header("X-API-Key", &key).send().await {
            let ok = r.status().is_success();
            last = r.text().await.unwrap_or_default();
            if ok && live(&last) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(live(&last), "no live EGLC observation of the last hour: {last}");
}

/// Sets `key` of source `name`'s table in a `[sources]` table.
fn set(table: &mut toml::Table, name: &str, key: &str, value: toml::Value) {
    let source = table.get_mut(name).and_then(|v| v.as_table_mut()).unwrap_or_else(|| panic!("the demo runs {name}"));
    source.insert(key.into(), value);
}

fn list(items: &[&str]) -> toml::Value {
    toml::Value::Array(items.iter().map(|s| toml::Value::from(*s)).collect())
}

/// Every feed `serve --demo` runs, configured by `demo_sources` (stations, models and
/// lookbacks narrowed to keep the test fast), polled twice six hours apart against the
/// simulator on one manual clock: each stores what its simulated source serves, model
/// runs each once with their true run times, and the second poll brings newer runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_demo_feed_stores_what_the_simulator_serves() {
    // 16:30Z, 2 April (EDT): the 12Z MAV and MET are out, LAMP to 14:30, NAM and ICON 12Z,
    // HRRR to 14Z, GFS 06Z; KNYC's morning final CLI and its 07 LST DSM are out.
    let t0 = Utc.with_ymd_and_hms(2026, 4, 2, 16, 30, 0).unwrap();
    let clock = Arc::new(ManualClock::new(t0));
    let shared: Arc<dyn Clock> = clock.clone();
    let sim = Simulator::start(Arc::clone(&shared), DEFAULT_SEED).await.unwrap();
    let (dir, lake) = support::temp_lake().await;
    let live = Arc::new(support::open_live(&lake, &dir.path().join("state"), Arc::clone(&shared)).await);
    let events = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let mut inbox = live.attach_publisher(4096).await;
    let seen = Arc::clone(&events);
    tokio::spawn(async move {
        while let Some(notice) = inbox.recv().await {
            let mut seen = seen.lock().unwrap();
            match &notice.applied {
                Applied::Observation { station, .. } => seen.push((station.clone(), "observation".into())),
                Applied::Report { station, report, .. } => seen.push((station.clone(), report.kind.as_str().into())),
                Applied::OneMinute { .. } => {}
            }
            drop(seen);
            if let Some(done) = notice.logged {
                let _ = done.send(());
            }
        }
    });

    let mut table = demo_sources(sim.base_url());
    for name in ["awc_metar", "awc_cache"] {
        set(&mut table, name, "stations", list(&["KNYC", "EGLC"]));
    }
    for name in ["iem_asos", "iem_onemin", "mos"] {
        set(&mut table, name, "stations", list(&["KNYC", "KMDW"]));
    }
    for name in ["nws_cli", "nws_dsm", "nws_hourly"] {
        set(&mut table, name, "stations", list(&["KNYC"]));
    }
    set(&mut table, "open_meteo", "stations", list(&["KNYC", "EGLC"]));
    set(&mut table, "open_meteo", "models", list(&["GFS", "HRRR", "NAM", "ICON"]));
    let (om_lookback_h, mos_lookback_h) = (11.0, 4.6);
    set(&mut table, "open_meteo", "lookback_hours", toml::Value::Float(om_lookback_h));
    set(&mut table, "mos", "lookback_hours", toml::Value::Float(mos_lookback_h));
    let cfg = FeedsConfig::from_toml(&table).unwrap();
    let feeds = Feeds::from_config_at(&cfg, Arc::new(Arc::clone(&live)), Arc::clone(&shared)).unwrap();
    let mut names = feeds.names();
    names.sort();
    let mut all: Vec<String> = SOURCES.iter().map(|s| s.to_string()).collect();
    all.sort();
    assert_eq!(names, all, "the demo runs every feed of this build");

    let poll = || async {
        let reports: BTreeMap<String, _> = feeds.poll_once().await.into_iter().collect();
        for (name, r) in &reports {
            assert!(r.is_ok(), "{name}: {}", r.summary());
        }
        reports
    };
    let first = poll().await;
    for (name, r) in &first {
        // The cache file repeats what the METAR API brought in the same round: held
        // already, so duplicates; every other feed brings something new.
        let took = if name == "awc_cache" { r.accepted + r.duplicate } else { r.accepted };
        assert!(took > 0, "{name} took nothing: {}", r.summary());
    }
    live.flush().await.unwrap();
    // What a client of the REST API sees: the latest GFS run, the NWS hourly versions.
    let api = support::Api::over(Arc::clone(&live), &dir.path().join("state"));
    let latest_gfs = || async {
        let (headers, rows) = api.get("/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=latest").await;
        let run = headers.get("x-run-time").expect("X-Run-Time").to_str().unwrap().to_string();
        let rows = rows.as_array().cloned().unwrap_or_default();
        assert!(!rows.is_empty() && rows.iter().all(|r| r["run_time"] == run.as_str()), "{run}: {rows:?}");
        run
    };
    let nws_versions = || async {
        let (_, v) = api.get("/api/v2/nws_forecasts.php?station_code=KNYC&date=2026-04-03&mode=history").await;
        v["total_versions"].as_u64().unwrap_or_else(|| panic!("{v}"))
    };
    assert_eq!(latest_gfs().await, "2026-04-02T06:00:00Z");
    let versions = nws_versions().await;
    assert!(versions >= 1, "the morning's NWS hourly version");
    let gfs_latest = |lake: Lake| async move {
        support::scalar(
            &lake,
            "SELECT max(run_time) FROM forecasts WHERE CAST(model AS VARCHAR) = 'GFS' AND CAST(location_name AS VARCHAR) = 'KNYC'",
        )
        .await
    };
    assert!(gfs_latest(lake.clone()).await.starts_with("2026-04-02T06:00"), "GFS 12Z is out at 17:30");
    let om_models = |code: &'static str, lake: Lake| async move {
        support::rows(
            &lake,
            &format!(
                "SELECT DISTINCT CAST(model AS VARCHAR) FROM forecasts WHERE CAST(location_name AS VARCHAR) = '{code}' \
                 AND CAST(model AS VARCHAR) NOT LIKE '%-MOS' ORDER BY 1"
            ),
        )
        .await
        .concat()
    };
    assert_eq!(om_models("KNYC", lake.clone()).await, ["GFS", "HRRR", "ICON", "NAM"]);
    assert_eq!(om_models("EGLC", lake.clone()).await, ["GFS", "ICON"], "NAM and HRRR do not cover London");

    // Six hours later: newer runs, the afternoon's reports.
    let t1 = t0 + chrono::Duration::hours(6);
    clock.set(t1);
    let second = poll().await;
    for name in ["awc_metar", "iem_asos", "open_meteo", "mos"] {
        assert!(second[name].accepted > 0, "{name}: {}", second[name].summary());
    }
    live.flush().await.unwrap();
    assert!(gfs_latest(lake.clone()).await.starts_with("2026-04-02T12:00"), "the 12Z GFS landed");
    assert_eq!(latest_gfs().await, "2026-04-02T12:00:00Z", "forecasts.php?run=latest moved to the new run");
    assert_eq!(nws_versions().await, versions + 1, "the afternoon's NWS hourly version is a new one");

    // Each bulletin's run once, with the run time its headers state: exactly the cycles
    // due at either poll, LAMP's labelled HH30.
    for (model, code) in [("GFS-MOS", "MAV"), ("NAM-MOS", "MET"), ("LAV-MOS", "LAV")] {
        let spec = models::model(model).unwrap();
        let delay = models::availability(model).unwrap().delay_min();
        let since = |t: DateTime<Utc>| t - chrono::Duration::seconds((mos_lookback_h * 3600.0) as i64);
        let want: BTreeSet<DateTime<Utc>> =
            [t0, t1].into_iter().flat_map(|t| models::published_runs(spec, delay, since(t), t)).collect();
        let got = support::rows(
            &lake,
            &format!(
                "SELECT run_time, count(*), count(DISTINCT valid_time) FROM forecasts \
                 WHERE CAST(model AS VARCHAR) = '{model}' AND CAST(location_name AS VARCHAR) = 'KNYC' \
                 GROUP BY run_time ORDER BY run_time"
            ),
        )
        .await;
        let got_runs: BTreeSet<DateTime<Utc>> = got
            .iter()
            .map(|r| {
                r[0].parse::<DateTime<Utc>>().unwrap_or_else(|_| {
                    chrono::NaiveDateTime::parse_from_str(&r[0], "%Y-%m-%dT%H:%M:%S").unwrap().and_utc()
                })
            })
            .collect();
        assert_eq!(got_runs, want, "{code}: {got:?}");
        assert!(got.iter().all(|r| r[1] == r[2]), "{code}: one row per valid time: {got:?}");
    }

    let seen = events.lock().unwrap().clone();
    for kind in ["observation", "cli", "dsm"] {
        assert!(seen.iter().any(|(s, k)| k == kind && s == "KNYC"), "no KNYC {kind} event: {seen:?}");
    }
    for (table, station) in [("observations", "KMDW"), ("onemin", "KNYC"), ("nws_hourly", "KNYC")] {
        let n: usize = support::scalar(
            &lake,
            &format!("SELECT count(*) FROM {table} WHERE CAST(station_code AS VARCHAR) = '{station}'"),
        )
        .await
        .parse()
        .unwrap();
        assert!(n > 0, "{table}: nothing of {station}");
    }
}

/// A bulletin source that answers the asked cycle with an older one (an archive's
/// "latest" while the cycle is not issued yet) has not published that cycle: the feed
/// stores nothing for it and asks again, after a growing wait, and stores it once it is
/// out.
#[tokio::test]
async fn a_mos_cycle_is_done_only_when_its_own_bulletin_is_stored() {
    // The simulator issues the 12Z MET at 15:00; the feed, an hour ahead, asks at 15:20
    // (its delay is 195 min) and gets the 00Z bulletin, the newest out.
    let sim_clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 4, 2, 14, 20, 0).unwrap()));
    let feed_clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 4, 2, 15, 20, 0).unwrap()));
    let sim = Simulator::start(sim_clock.clone(), DEFAULT_SEED).await.unwrap();
    let mut table = demo_sources(sim.base_url());
    set(&mut table, "mos", "products", list(&["MET"]));
    set(&mut table, "mos", "stations", list(&["KNYC"]));
    let cfg = FeedsConfig::from_toml(&table).unwrap();
    let client = Arc::new(HttpClient::new(cfg.client.clone()).unwrap());
    let feed = Mos::with_clock(cfg.mos.unwrap(), client, feed_clock.clone()).unwrap();
    let sink = RecordingSink::new();

    for poll in 0..2 {
        if poll > 0 {
            for c in [&sim_clock, &feed_clock] {
                c.advance(chrono::Duration::minutes(5));
            }
        }
        let r = feed.poll(&sink).await;
        assert!(r.is_ok(), "{}", r.summary());
        assert_eq!((r.requests, r.accepted, r.empty), (1, 0, 1), "{}", r.summary());
    }
    assert!(sink.taken().is_empty(), "the 00Z bulletin is not stored as the 12Z cycle");
    feed_clock.advance(chrono::Duration::minutes(5));
    assert_eq!(feed.poll(&sink).await.requests, 0, "after two misses the wait is 10 minutes");

    for c in [&sim_clock, &feed_clock] {
        c.advance(chrono::Duration::hours(1));
    }
    let r = feed.poll(&sink).await;
    assert!(r.is_ok() && r.accepted > 0, "{}", r.summary());
    let twelve = Utc.with_ymd_and_hms(2026, 4, 2, 12, 0, 0).unwrap();
    let runs: BTreeSet<_> = sink
        .taken()
        .iter()
        .flat_map(|t| {
            let Records::Forecasts(rows) = t.format.decode(&t.body, &t.opts).records else { panic!("not forecasts") };
            rows.into_iter().map(|r| (r.model, r.run_time)).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(runs, BTreeSet::from([("NAM-MOS", twelve)]));
    let r = feed.poll(&sink).await;
    assert_eq!(r.requests, 0, "the cycle is done: {}", r.summary());
}
