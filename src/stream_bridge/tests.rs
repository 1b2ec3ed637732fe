//! The bridge end to end: live ingest through the publisher to an HTTPS stream client.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use serde_json::{json, Value};

use super::*;
use crate::access::keys::KeyStore;
use crate::access::keys::Tier;
use crate::access::limits::RateLimiter;
use crate::access::Access;
use crate::clock::{Clock, ManualClock};
use crate::decode::types::{DailyKind, DailyReport};
use crate::ingest::{Format, IngestOptions};
use crate::stream::testkit::{client_connector, SseClient};
use crate::stream::{load_tls, self_signed, serve_tls, stream_router, Replay, StreamState, STREAM_PATH};
use crate::stream::{EventLog, Hub};
use crate::write::hot::Snapshot;
use crate::write::WriteService;

struct Rig {
    _dir: tempfile::TempDir,
    addr: std::net::SocketAddr,
    connector: tokio_rustls::TlsConnector,
    live: Arc<WriteService>,
    log: Arc<EventLog>,
    pro: String,
    dev: String,
    /// A second Developer user (one connection per user).
    dev2: String,
    no_stream: String,
}

async fn rig(heartbeat: Duration) -> Rig {
    rig_with(heartbeat, 256).await
}

async fn rig_with(heartbeat: Duration, hub_queue: usize) -> Rig {
    rig_at(heartbeat, hub_queue, Utc.with_ymd_and_hms(2026, 3, 8, 18, 0, 0).unwrap()).await
}

/// A rig whose clock stands at `now`.
async fn rig_at(heartbeat: Duration, hub_queue: usize, now: chrono::DateTime<Utc>) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let lake = crate::lake::Lake::open(&format!("file://{}", dir.path().join("lake").display())).await.unwrap();
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(now));
    let state_dir = dir.path().join("state");
    let keys = KeyStore::open(&state_dir).unwrap();
    let pro = keys.create(Tier::Professional, "pat", false, true).unwrap().1;
    let dev = keys.create(Tier::Developer, "dana", false, true).unwrap().1;
    let dev2 = keys.create(Tier::Developer, "dora", false, true).unwrap().1;
    let no_stream = keys.create(Tier::Enterprise, "erin", false, false).unwrap().1;
    let live = Arc::new(
        WriteService::open(
            lake.clone(),
            crate::jobs::analyst_session(&lake).await.unwrap(),
            &state_dir,
            Arc::clone(&clock),
        )
        .await
        .unwrap(),
    );
    let access = Access::new(Arc::new(keys), Arc::new(RateLimiter::new(clock)));
    let (cert, key) = self_signed(&dir.path().join("tls"), &["localhost", "127.0.0.1"]).unwrap();
    let log = Arc::new(EventLog::open(&dir.path().join("events"), crate::stream::default_retention()).unwrap());
    let hub = Hub::new(hub_queue);
    spawn_publisher(Arc::clone(&live), Default::default(), Arc::clone(&log), hub.clone()).await;
    let router = stream_router(StreamState { hub, log: Arc::clone(&log), auth: Arc::new(access), heartbeat });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_tls(listener, load_tls(&cert, &key).unwrap(), router, std::future::pending()));
    Rig { addr, connector: client_connector(&cert), live, log, pro, dev, dev2, no_stream, _dir: dir }
}

impl Rig {
    async fn open(&self, key: &str, stations: &str, last: Option<&str>) -> SseClient {
        let mut path = format!("{STREAM_PATH}?stations={stations}&api_key={key}");
        if let Some(l) = last {
            path.push_str(&format!("&last_event_id={l}"));
        }
        SseClient::connect(self.addr, &self.connector, &path).await
    }
    async fn ingest(&self, text: &str) {
        let opts = IngestOptions { month: Some((2026, 3)), ..Default::default() };
        self.live.ingest(Format::Metar, opts, text.as_bytes().to_vec()).await.unwrap();
    }
}

/// Reads events until one named `name` arrives, skipping heartbeats.
async fn next_named(c: &mut SseClient, name: &str) -> crate::stream::testkit::SseEvent {
    loop {
        let e = c.next_event().await.unwrap_or_else(|| panic!("stream ended before {name}"));
        if e.name == name {
            return e;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observation_new_high_replay_and_displacement() {
    // 16:00: the 14:51 report is current (an hourly station is down only after 2 h 10 min
    // without a report), so its data_quality is ok.
    let rig = rig_at(Duration::from_secs(30), 256, Utc.with_ymd_and_hms(2026, 3, 8, 16, 0, 0).unwrap()).await;
    let mut c = rig.open(&rig.dev, "KNYC", None).await;
    assert_eq!(c.status, 200);
    let connected = c.next_event().await.unwrap();
    assert_eq!((connected.name.as_str(), connected.data["stations"].clone()), ("connected", json!(["KNYC"])));

    rig.ingest("KNYC 081451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00781061").await;
    let obs = next_named(&mut c, "observation").await;
    assert_eq!(obs.lines[0], "event: observation");
    assert!(obs.lines[1].starts_with("id: ") && obs.lines[2].starts_with("data: "));
    assert_eq!(obs.data["product"], "METAR");
    assert_eq!(obs.data["temperature_celsius"], 7.8);
    assert_eq!(obs.data["svc_high"]["nws"]["value_f"], 46.0);
    assert_eq!(obs.data["svc_high"]["wu"]["value_f"], 46.0);
    assert!(obs.data["data_quality"]["nws"]["ok"].as_bool().unwrap());
    // The day's first value is a new high (and low) under both logics.
    let mut highs = Vec::new();
    for _ in 0..4 {
        let e = c.next_event().await.unwrap();
        if e.name == "new_high" {
            highs.push(e.data["logic"].as_str().unwrap().to_string());
        }
    }
    highs.sort();
    assert_eq!(highs, ["nws", "wu"]);

    // A warmer report: new_high for both logics with the previous value.
    rig.ingest("KNYC 081551Z 28010KT 10SM CLR 09/M06 A3020 RMK AO2 SLP228 T00891061").await;
    next_named(&mut c, "observation").await;
    let h = next_named(&mut c, "new_high").await;
    assert_eq!((h.data["value_f"].as_f64(), h.data["prev_value_f"].as_f64()), (Some(48.0), Some(46.0)));
    let last_id = h.id.clone().unwrap();
    drop(c);

    // Missed while away: an HF-METAR (nws only sees it: 10 °C can only be 50 °F).
    rig.ingest("KNYC 081555Z AUTO 28009KT 10SM CLR 10/M06 A3020 RMK T01001060 MADISHF").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut c2 = rig.open(&rig.dev, "KNYC", Some(&last_id)).await;
    assert_eq!(c2.next_event().await.unwrap().name, "connected");
    // Replay: exactly what came after last_id (the other logic's 48 °F alert, then the
    // HF-METAR and the nws 50 °F alert), in id order, nothing twice.
    let mut replayed = Vec::new();
    let mut ids = Vec::new();
    while !replayed.contains(&("new_high".to_string(), Some(50.0))) {
        let e = c2.next_event().await.unwrap();
        ids.push(e.id_u64());
        replayed.push((e.name.clone(), e.data.get("value_f").and_then(Value::as_f64)));
        assert!(replayed.len() <= 4, "{replayed:?}");
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]) && ids[0] > last_id.parse::<u64>().unwrap(), "{ids:?}");
    assert_eq!(replayed.iter().filter(|(n, _)| n == "observation").count(), 1, "{replayed:?}");
    assert!(replayed.contains(&("new_high".to_string(), Some(48.0))), "{replayed:?}");

    // The same user again: the older connection is displaced and closed.
    let mut c3 = rig.open(&rig.dev, "KNYC", None).await;
    assert_eq!(c3.next_event().await.unwrap().name, "connected");
    let displaced = next_named(&mut c2, "displaced").await;
    assert_eq!(displaced.name, "displaced");
    assert!(c2.reaches_eof().await);
}

fn names(events: &[(String, &'static str, Value)]) -> Vec<&'static str> {
    events.iter().map(|(_, name, _)| *name).collect()
}

fn report(kind: DailyKind, date: chrono::NaiveDate) -> DailyReport {
    DailyReport {
        max_f: Some(50),
        min_f: Some(30),
        raw: format!("{kind:?} {date}"),
        ..DailyReport::blank(kind, "KNYC", date)
    }
}

/// The clock says 2026-03-08 18:00 UTC (13:00 in New York): the 8th is the trading day
/// in progress and the 7th the previous one under both logics; the 6th is backfill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfilled_days_produce_no_stream_events() {
    let rig = rig(Duration::from_secs(30)).await;
    let now = rig.live.clock.now();
    let observe = |text: &str| {
        let m = crate::decode::metar::parse_metar(text, now).unwrap();
        events_for(&rig.live, &rig.live.hot.apply_metar(&m, now, Snapshot::At(rig.live.clock.now())).applied().unwrap())
    };
    // Oldest first, as a backfill arrives: a day's first value would be a new high.
    let old = observe("KNYC 061451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 T00781061");
    assert!(old.is_empty(), "backfill must not stream: {:?}", names(&old));
    let previous = observe("KNYC 071451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 T00781061");
    assert_eq!(names(&previous), ["observation"], "the previous day is still news (no alert)");
    assert_eq!(previous[0].2["local_date"], "2026-03-07");
    let today = observe("KNYC 081451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 T00781061");
    assert_eq!(names(&today)[0], "observation");
    assert!(names(&today).contains(&"new_high"), "{:?}", names(&today));
    // A late METAR of the 5th after today's: still backfill.
    assert!(observe("KNYC 051451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 T00781061").is_empty());

    let date = |d| chrono::NaiveDate::from_ymd_opt(2026, 3, d).unwrap();
    for (kind, name) in [(DailyKind::Cli, "cli"), (DailyKind::Dsm, "dsm")] {
        for (day, streamed) in [(6, false), (7, true), (8, true)] {
            let applied = rig
                .live
                .hot
                .apply_report(&report(kind, date(day)), now, Snapshot::At(rig.live.clock.now()))
                .applied()
                .unwrap();
            let events = events_for(&rig.live, &applied);
            assert_eq!(names(&events).contains(&name), streamed, "{name} for the {day}th: {:?}", names(&events));
        }
    }
}

/// End to end: a backfill posted through the live path reaches the lake's days but no
/// subscriber; the next live observation is the first event the client sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_backfill_is_not_streamed() {
    let rig = rig(Duration::from_secs(30)).await;
    let mut c = rig.open(&rig.dev, "KNYC", None).await;
    assert_eq!(c.next_event().await.unwrap().name, "connected");
    let backfill: String = (1..=5)
        .flat_map(|d| (0..24).map(move |h| format!("KNYC 0{d}{h:02}51Z 27008KT 10SM CLR 08/M06 A3021 RMK AO2\n")))
        .collect();
    rig.ingest(&backfill).await;
    rig.ingest("KNYC 081651Z 27008KT 10SM CLR 09/M06 A3021 RMK AO2 T00891061").await;
    let first = c.next_event().await.unwrap();
    assert_eq!(first.name, "observation");
    assert_eq!(first.data["observation_time_utc"], "2026-03-08T16:51:00Z");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_heartbeat_and_suspect_temperatures() {
    let rig = rig(Duration::from_secs(1)).await;
    let six = "KNYC,KLGA,KJFK,KEWR,KMDW,KORD";
    let mut c = rig.open(&rig.pro, "KNYC,KLGA,KBOS,KPHL,KMDW,KDCA", None).await;
    assert_eq!(c.status, 403);
    let body: Value = serde_json::from_slice(&c.read_body().await).unwrap();
    assert_eq!(body["error"], "Too many stations");
    let c = rig.open(&rig.pro, six, None).await;
    assert_eq!(c.status, 400, "unknown stations are refused first");
    for (key, want) in [("", 401), ("wx_nope", 401), (rig.no_stream.as_str(), 403)] {
        let c = rig.open(key, "KNYC", None).await;
        assert_eq!(c.status, want, "key {key:?}");
    }
    let mut c = rig.open(&rig.pro, "KNYC,KLGA,KBOS,KPHL,KMDW", None).await;
    assert_eq!(c.status, 200);
    assert_eq!(c.next_event().await.unwrap().name, "connected");
    let hb = c.next_event().await.unwrap();
    assert_eq!(hb.name, "heartbeat");
    // A suspect temperature is an observation with null temperatures and no alert.
    rig.ingest("KNYC 081651Z 27008KT 10SM CLR 65/M06 A3021 RMK AO2").await;
    let obs = next_named(&mut c, "observation").await;
    assert!(obs.data["temperature_celsius"].is_null());
    assert_eq!(obs.data["suspect_temperature"]["reason"], "out_of_range");
    // Next: a heartbeat, never a new_high.
    let after = c.next_event().await.unwrap();
    assert_eq!(after.name, "heartbeat", "{:?}", after.lines);
}

/// A burst far larger than any queue between the live path and the clients: every
/// event gets its id in the log, the fast client receives all of them in order, and a
/// client that reads nothing is dropped alone (it would resume from the log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn burst_reaches_the_fast_client_whole_while_a_slow_one_is_dropped() {
    let rig = rig_with(Duration::from_secs(30), 4096).await;
    let stations = [
        "KMDW", "KAUS", "KDFW", "KMSY", "KDAL", "KHOU", "KSAT", "KBNA", "KOKC", "KMSP", "KPHL", "KMIA", "KNYC", "KLGA",
        "KDCA", "KCLT", "KBOS", "KATL", "KJAX", "KDEN",
    ];
    const MINUTES: usize = 1000;
    let all = stations.join(",");
    let mut fast = rig.open(&rig.dev, &all, None).await;
    assert_eq!(fast.next_event().await.unwrap().name, "connected");
    // Reads nothing at all: its socket and then its queue fill up.
    let path = format!("{STREAM_PATH}?stations={all}&api_key={}", rig.dev2);
    let slow = SseClient::connect_slow(rig.addr, &rig.connector, &path).await;
    let start_id = rig.log.last_id();

    // 20,000 reports in one input: 1,000 minutes of 8 March for each of 20 stations.
    let mut lines = Vec::with_capacity(20 * MINUTES);
    for minute in 0..MINUTES {
        let (h, m) = (1 + (20 + minute) / 60, (20 + minute) % 60);
        for st in &stations {
            let t = minute % 30;
            lines.push(format!(
                "{st} 08{h:02}{m:02}Z AUTO 27008KT 10SM CLR {t:02}/M06 A3021 RMK AO2 T0{:03}1061",
                t * 10
            ));
        }
    }
    let ingest = {
        let live = Arc::clone(&rig.live);
        tokio::spawn(async move {
            let opts = IngestOptions { month: Some((2026, 3)), ..Default::default() };
            live.ingest(Format::Metar, opts, lines.join("\n").into_bytes()).await.unwrap()
        })
    };
    let mut ids = Vec::new();
    let mut observations = 0;
    while observations < 20 * MINUTES {
        let e = tokio::time::timeout(Duration::from_secs(60), fast.next_event())
            .await
            .expect("the fast client waited a minute for the next event")
            .expect("the fast client's stream ended");
        assert_ne!(e.name, "resync", "the fast client was dropped after {} events", ids.len());
        if e.name == "heartbeat" {
            continue;
        }
        observations += usize::from(e.name == "observation");
        ids.push(e.id_u64());
    }
    assert_eq!(ingest.await.unwrap().accepted, 20 * MINUTES);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let wanted: std::collections::HashSet<String> = stations.iter().map(|s| s.to_string()).collect();
    let Replay::Events { events: logged, more: false } = rig.log.replay_after(&start_id.to_string(), &wanted) else {
        panic!("the burst must be replayable from the log")
    };
    let logged: Vec<u64> = logged.iter().map(|e| e.id).collect();
    assert_eq!(ids, logged, "the fast client got exactly the logged events, in id order");
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert!(ids.len() >= 20 * MINUTES, "observations and their new_high/new_low alerts: {}", ids.len());

    // The client that read nothing was cut off: its stream ends short of its 5,000
    // observations (what it got is what its socket held when it was dropped).
    let mut slow = slow;
    let mut slow_observations = 0;
    while let Some(e) = slow.next_event().await {
        slow_observations += usize::from(e.name == "observation");
    }
    assert_eq!(slow.status, 200);
    assert!(slow_observations < 20 * MINUTES, "the slow client was not dropped");
}

/// 2026-03-08 16:00 UTC with a daily forecast of KNYC's day stored (the odds' one input),
/// and a Developer connection (the odds' tier) subscribed to KNYC.
async fn brackets_rig() -> (Rig, SseClient) {
    let rig = rig_at(Duration::from_secs(30), 256, Utc.with_ymd_and_hms(2026, 3, 8, 16, 0, 0).unwrap()).await;
    let csv = "source,station_code,issued_at,date,high,low,units\n\
               ACME,KNYC,2026-03-07T20:00:00Z,2026-03-08,48,35,f\n";
    rig.live.ingest(Format::DailyForecasts, IngestOptions::default(), csv.as_bytes().to_vec()).await.unwrap();
    rig.live.flush().await.unwrap();
    let mut c = rig.open(&rig.dev, "KNYC", None).await;
    assert_eq!(c.next_event().await.unwrap().name, "connected");
    (rig, c)
}

/// The `brackets` event: the day's first odds when a report comes in for a subscribed
/// station, again when a report moves a bracket by 2 points or more (a new running high),
/// not when nothing moved; its brackets are what the odds are then (`brackets.php`'s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brackets_event_when_a_bracket_moves_two_points() {
    use crate::bracket_odds::{odds, Ask};
    use crate::brackets::markets::Quantity;
    let (rig, mut c) = brackets_rig().await;
    // A Professional key streams observations, not the analytics tiers' odds.
    let mut pro = rig.open(&rig.pro, "KNYC", None).await;
    assert_eq!(pro.next_event().await.unwrap().name, "connected");

    rig.ingest("KNYC 081451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00781061").await;
    let high = next_named(&mut c, "brackets").await;
    assert_eq!(
        (high.data["target"].as_str(), high.data["floor"].as_i64()),
        (Some("high"), Some(46)),
        "{:?}",
        high.data
    );
    assert!(high.data["moved"].is_null(), "the day's first: {:?}", high.data);
    assert_eq!(high.data["series"], "KXHIGHNY");
    let low = next_named(&mut c, "brackets").await;
    assert_eq!((low.data["target"].as_str(), low.data["ceiling"].as_i64()), (Some("low"), Some(46)), "{:?}", low.data);
    // The event's brackets are the odds now, on its ladder.
    let station = crate::catalog::Catalog::global().get("KNYC").unwrap();
    let ask = Ask::settling(station, Quantity::High, None, None, rig.live.clock.now());
    let now = odds(&rig.live, &Default::default(), &ask, None, false).await.unwrap();
    let sent: Vec<f64> = high.data["brackets"].as_array().unwrap().iter().map(|b| b["p"].as_f64().unwrap()).collect();
    assert_eq!(sent, now.brackets);
    let labels: Vec<String> = now.ladder.brackets().iter().map(|b| b.to_string()).collect();
    let sent_labels: Vec<&str> =
        high.data["brackets"].as_array().unwrap().iter().map(|b| b["label"].as_str().unwrap()).collect();
    assert_eq!(sent_labels, labels);

    // 10 °C = 50 °F: the running high jumps past most of the forecast's mass.
    rig.ingest("KNYC 081551Z 28010KT 10SM CLR 10/M06 A3020 RMK AO2 SLP228 T01001061").await;
    let moved = next_named(&mut c, "brackets").await;
    assert_eq!((moved.data["target"].as_str(), moved.data["floor"].as_i64()), (Some("high"), Some(50)));
    assert!(moved.data["moved"].as_f64().unwrap() >= 0.02, "{:?}", moved.data);
    assert_eq!(moved.data["brackets"].as_array().unwrap().len(), sent.len(), "the same ladder all day");

    // Another report at 50 °F moves nothing: an observation event, and no brackets event.
    rig.ingest("KNYC 081651Z 28010KT 10SM CLR 10/M06 A3020 RMK AO2 SLP228 T01001061").await;
    let obs = next_named(&mut c, "observation").await;
    assert_eq!(obs.data["temperature_celsius"], 10.0);
    let quiet = tokio::time::timeout(Duration::from_millis(1500), async {
        loop {
            match c.next_event().await {
                Some(e) if e.name == "brackets" => return Some(e),
                Some(_) => continue,
                None => return None,
            }
        }
    })
    .await;
    assert!(quiet.is_err(), "no bracket moved, yet: {:?}", quiet.ok().flatten().map(|e| e.data));
    // The Professional connection got the three observations and none of the odds.
    let mut names = Vec::new();
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        while let Some(e) = pro.next_event().await {
            names.push(e.name);
        }
    })
    .await;
    assert_eq!(names.iter().filter(|n| *n == "observation").count(), 3, "{names:?}");
    assert!(!names.iter().any(|n| n == "brackets"), "{names:?}");
}

/// A check whose odds cannot be computed (the lake's `daily_forecasts` log unreadable for a
/// moment) is tried again after `MIN_GAP`: the move goes out once the lake reads again,
/// not at the next sweep minutes later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_brackets_check_is_tried_again() {
    use super::brackets::MIN_GAP;
    let (rig, mut c) = brackets_rig().await;
    // The table's next commit is garbage: every read of it fails until it is gone.
    let log = rig._dir.path().join("lake").join(crate::lake::schema::DAILY_FORECASTS.name).join("_delta_log");
    let versions = std::fs::read_dir(&log)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    let garbage = log.join(format!("{versions:020}.json"));
    std::fs::write(&garbage, "not a Delta commit\n").unwrap();

    rig.ingest("KNYC 081451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00781061").await;
    next_named(&mut c, "observation").await;
    let early = tokio::time::timeout(Duration::from_secs(2), next_named(&mut c, "brackets")).await;
    assert!(early.is_err(), "odds from an unreadable lake: {:?}", early.ok().map(|e| e.data));
    std::fs::remove_file(&garbage).unwrap();
    let started = std::time::Instant::now();
    let high = tokio::time::timeout(MIN_GAP * 3, next_named(&mut c, "brackets"))
        .await
        .expect("the failed check was not tried again");
    assert_eq!(
        (high.data["target"].as_str(), high.data["floor"].as_i64()),
        (Some("high"), Some(46)),
        "{:?}",
        high.data
    );
    assert!(started.elapsed() < MIN_GAP * 2, "tried again within MIN_GAP: {:?}", started.elapsed());
}
