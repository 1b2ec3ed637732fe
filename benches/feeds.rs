//! One poll of a global METAR cache file (issue 17): `awc_cache` fetching a gzip cache of
//! 5,000 stations from a server on 127.0.0.1, gunzipping and selecting its rows, and the
//! live path taking them (decode, WAL, hot state), then the flush into the lake. Measured
//! as the process's CPU time (every thread: the runtime, the WAL, rayon), per poll.
//!
//! The file is built, in aviationweather.gov's `metars.cache.csv` shape (status lines,
//! the 44-column header), from the real reports of data/real/metar (the KCVG day, the
//! VOHY and WSSS months, the AWC JSON) spread over 5,000 station ids: the 70 catalog
//! stations (hot state and stream) and made-up ids for the rest; each report keeps its
//! text and date with its station id replaced. Run: `cargo bench --bench feeds`; it also
//! writes the file to `target/bench-feeds/metars.cache.csv.gz` for the peer comparison
//! (benches/feeds_vs_duckdb.sh).
//!
//! Then publish -> served: the fixture server's cache file gets a new KNYC report (warmer
//! than the last, so a new high), the feed polls at once (the polling interval is left
//! out), and the time is taken until `GET /api/v2/observations.php?mode=latest` (the
//! router in process) answers the report and until the stream hub delivers its
//! `observation` and `new_high` events to a subscriber (the publisher, event log and hub
//! of `serve`; the HTTPS write of the frame is not included). Printed as percentiles
//! over 30 reports.
//!
//! And the climate report's path: a fixture api.weather.gov lists a new CLI product of
//! KNYC (the real CLINYC of 2 January 2013, re-issued with a later heading and a new
//! maximum each round), the `nws_cli` feed polls at once (list, then the new product), and
//! the time is taken until the stream delivers its `cli` event and until
//! `GET /api/v2/observations.php?mode=latest&observation_type=cli_high` answers the new
//! `cli_high`. The clock is a manual one on 3 January 2013, moved a minute a round so
//! each poll finds the list due. Printed as percentiles over 30 products. (Model runs:
//! benches/feeds_models.rs.)

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use wxlake::catalog::Catalog;
use wxlake::clock::{Clock, SystemClock};
use wxlake::feeds::awc_cache::{AwcCache, AwcCacheConfig};
use wxlake::feeds::config::ClientConfig;
use wxlake::feeds::http::HttpClient;
use wxlake::feeds::{FeedSink, Source};
use wxlake::lake::Lake;
use wxlake::write::WriteService;

/// Stations in the built file.
const STATIONS: usize = 5_000;

/// Real report texts with their UTC times (`YYYY-MM-DDTHH:MM:00Z`).
fn real_reports() -> Vec<(String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/data/real/metar/");
    let mut out = Vec::new();
    for file in ["IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv", "IEM_VOHY_2014-03-01_2014-04-04_all_fields.tsv"] {
        let text = std::fs::read_to_string(format!("{root}{file}")).unwrap();
        let mut lines = text.lines().filter(|l| !l.starts_with('#'));
        let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
        let (v, m) =
            (header.iter().position(|h| *h == "valid").unwrap(), header.iter().position(|h| *h == "metar").unwrap());
        for l in lines {
            let f: Vec<&str> = l.split('\t').collect();
            out.push((f[m].to_string(), format!("{}:00Z", f[v].replace(' ', "T"))));
        }
    }
    let json: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(format!("{root}awc_metar_knyc_kmdw_kaus_20260925T0631Z.json")).unwrap(),
    )
    .unwrap();
    for r in json {
        let t = chrono::DateTime::from_timestamp(r["obsTime"].as_i64().unwrap(), 0).unwrap();
        out.push((r["rawOb"].as_str().unwrap().to_string(), t.format("%Y-%m-%dT%H:%M:%SZ").to_string()));
    }
    out
}

/// The 5,000-station cache file, gzipped.
fn cache_file() -> Vec<u8> {
    let reports = real_reports();
    let catalog: Vec<String> = Catalog::global().all().iter().map(|s| s.code.clone()).collect();
    let mut text = format!("No errors\nNo warnings\n120 ms\ndata source=metars\n{STATIONS} results\n");
    text.push_str("raw_text,station_id,observation_time,latitude,longitude,temp_c,dewpoint_c,wind_dir_degrees,wind_speed_kt,wind_gust_kt,visibility_statute_mi,altim_in_hg,sea_level_pressure_mb,corrected,auto,auto_station,maintenance_indicator_on,no_signal,lightning_sensor_off,freezing_rain_sensor_off,present_weather_sensor_off,wx_string,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,flight_category,three_hr_pressure_tendency_mb,maxT_c,minT_c,maxT24hr_c,minT24hr_c,precip_in,pcp3hr_in,pcp6hr_in,pcp24hr_in,snow_in,vert_vis_ft,metar_type,elevation_m\n");
    for i in 0..STATIONS {
        let id = catalog.get(i).cloned().unwrap_or_else(|| {
            let n = i - catalog.len();
            format!("{}{:03}", ["Q", "X", "Z", "J", "V"][n / 1000], n % 1000)
        });
        let (raw, time) = &reports[(i * 7919) % reports.len()];
        let mut toks: Vec<&str> = raw.split_whitespace().collect();
        let at = toks.iter().position(|t| !matches!(*t, "METAR" | "SPECI")).unwrap();
        toks[at] = &id;
        let kind = if raw.starts_with("SPECI") { "SPECI" } else { "METAR" };
        text.push_str(&format!("\"{}\",{id},{time}{}{kind},100\n", toks.join(" "), ",".repeat(40)));
    }
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(text.as_bytes()).unwrap();
    z.finish().unwrap()
}

/// The process's CPU time so far (user + system, every thread).
fn cpu_time() -> Duration {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) }, 0);
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn bench_cache_poll(c: &mut Criterion) {
    let gz = cache_file();
    let out = concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench-feeds");
    std::fs::create_dir_all(out).unwrap();
    std::fs::write(format!("{out}/metars.cache.csv.gz"), &gz).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let base = rt.block_on(async move {
        let gz = bytes::Bytes::from(gz);
        let app = axum::Router::new().route(
            "/data/cache/metars.cache.csv.gz",
            axum::routing::get(move || {
                let gz = gz.clone();
                async move { ([("content-type", "application/x-gzip")], gz) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}")
    });
    let client =
        Arc::new(HttpClient::new(ClientConfig { contact: "bench@example.com".into(), ..Default::default() }).unwrap());
    let cfg = AwcCacheConfig { base_url: base, stations: vec![], all_stations: true, ..Default::default() };
    let mut g = c.benchmark_group("feeds");
    g.sample_size(10);
    g.bench_function(
        "awc_cache poll of 5,000 stations: fetch, gunzip, decode, WAL, hot state, flush (CPU time)",
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let dir = tempfile::tempdir().unwrap();
                    let (svc, feed) = rt.block_on(async {
                        let lake = Lake::open(&format!("file://{}", dir.path().join("lake").display())).await.unwrap();
                        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
                        let svc = Arc::new(
                            WriteService::open(
                                lake.clone(),
                                wxlake::jobs::analyst_session(&lake).await.unwrap(),
                                &dir.path().join("state"),
                                clock,
                            )
                            .await
                            .unwrap(),
                        );
                        (svc, AwcCache::new(cfg.clone().validated().unwrap(), Arc::clone(&client)).unwrap())
                    });
                    let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&svc));
                    let before = cpu_time();
                    let report = rt.block_on(async {
                        let r = feed.poll(sink.as_ref()).await;
                        svc.flush().await.unwrap();
                        r
                    });
                    total += cpu_time() - before;
                    assert!(report.is_ok() && report.accepted >= STATIONS * 99 / 100, "{}", report.summary());
                }
                total
            })
        },
    );
    g.finish();
}

/// The cache file of the latency rounds: `others` rows of the big file plus KNYC's report.
fn cache_with(rows: &str, knyc: &str, time: &str) -> bytes::Bytes {
    let mut text = rows.to_string();
    text.push_str(&format!("\"{knyc}\",KNYC,{time}{}METAR,3\n", ",".repeat(40)));
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(text.as_bytes()).unwrap();
    bytes::Bytes::from(z.finish().unwrap())
}

/// p50, p90 and max of `v`, milliseconds, printed under `what`.
/// What both publish-to-served benches serve from: a lake and state under `dir`, an
/// Enterprise key, the live service with its stream publisher, and the feeds' HTTP client.
struct Rig {
    keys: wxlake::access::keys::KeyStore,
    key: String,
    live: Arc<WriteService>,
    hub: wxlake::stream::Hub,
    client: Arc<HttpClient>,
}

impl Rig {
    async fn open(dir: &std::path::Path, clock: Arc<dyn Clock>) -> Rig {
        use wxlake::access::keys::{KeyStore, Tier};
        use wxlake::stream::{default_retention, EventLog, Hub};
        let lake = Lake::open(&format!("file://{}", dir.join("lake").display())).await.unwrap();
        let keys = KeyStore::open(dir.join("state")).unwrap();
        let key = keys.create(Tier::Enterprise, "bench", true, true).unwrap().1;
        let live = Arc::new(
            WriteService::open(
                lake.clone(),
                wxlake::jobs::analyst_session(&lake).await.unwrap(),
                &dir.join("state"),
                clock,
            )
            .await
            .unwrap(),
        );
        let log = Arc::new(EventLog::open(&dir.join("events"), default_retention()).unwrap());
        let hub = Hub::new(1024);
        wxlake::stream_bridge::spawn_publisher(Arc::clone(&live), Default::default(), log, hub.clone()).await;
        let client = Arc::new(
            HttpClient::new(ClientConfig { contact: "bench@example.com".into(), ..Default::default() }).unwrap(),
        );
        Rig { keys, key, live, hub, client }
    }
}

/// Asks the router for `url` until its answer contains `want` (at most 5 s after `t0`).
async fn answered(router: &axum::Router, key: &str, url: &str, want: &str, t0: Instant, round: impl std::fmt::Display) {
    use tower::ServiceExt;
    loop {
        let req = axum::http::Request::get(url).header("X-API-Key", key).body(axum::body::Body::empty()).unwrap();
        let resp = router.clone().oneshot(req).await.unwrap();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        if String::from_utf8_lossy(&body).contains(want) {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "round {round}: {url} never answered {want}");
    }
}

fn print_percentiles(what: &str, count: &str, v: &mut [f64]) {
    v.sort_by(f64::total_cmp);
    println!(
        "publish -> served, {what} ({} {count}, poll included, interval excluded): p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        v.len(),
        v[v.len() / 2],
        v[v.len() * 9 / 10],
        v[v.len() - 1]
    );
}

fn publish_to_served(_c: &mut Criterion) {
    use futures::StreamExt;
    use wxlake::access::limits::RateLimiter;
    use wxlake::api::{server, AppState};
    use wxlake::clock::ManualClock;
    use wxlake::stream::Delivery;

    // The big file's rows without KNYC, so each round's new report is KNYC's.
    let gz = cache_file();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    let others: String = text.lines().filter(|l| !l.contains(",KNYC,")).map(|l| format!("{l}\n")).collect();
    let now = chrono::Utc::now();
    let report = |i: i64| {
        let t = now - chrono::Duration::minutes(40 - i);
        let c10 = 100 + i * 5;
        (
            format!(
                "KNYC {} AUTO 27008KT 10SM CLR {:02}/M02 A3012 RMK AO2 T0{c10:03}1017",
                t.format("%d%H%MZ"),
                (c10 + 5) / 10
            ),
            t.format("%Y-%m-%dT%H:%M:00Z").to_string(),
        )
    };
    let (r0, t0) = report(0);
    let current = Arc::new(Mutex::new(cache_with(&others, &r0, &t0)));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let served = Arc::clone(&current);
    let (router, key, feed, sink, hub) = rt.block_on(async {
        let app = axum::Router::new().route(
            "/data/cache/metars.cache.csv.gz",
            axum::routing::get(move || {
                let body = served.lock().unwrap().clone();
                async move { ([("content-type", "application/x-gzip")], body) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let Rig { keys, key, live, hub, client } = Rig::open(dir.path(), clock.clone()).await;
        let cfg = AwcCacheConfig {
            base_url: format!("http://{addr}"),
            stations: vec![],
            all_stations: true,
            ..Default::default()
        };
        let feed = AwcCache::new(cfg.validated().unwrap(), client).unwrap();
        let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&live));
        // The first poll takes the whole file; the rounds then add one report each.
        assert!(feed.poll(sink.as_ref()).await.is_ok());
        let limiter = RateLimiter::new(Arc::new(ManualClock::new(now - chrono::Duration::days(1))));
        (server::router(AppState::new(keys, limiter, live, clock)), key, feed, sink, hub)
    });
    let (mut rest_ms, mut obs_ms, mut high_ms) = (Vec::new(), Vec::new(), Vec::new());
    rt.block_on(async {
        let mut sub = hub.connect("bench", ["KNYC".to_string()].into());
        for i in 1..=30 {
            let (raw, time) = report(i);
            let stamp = raw.split_whitespace().nth(1).unwrap().to_string();
            *current.lock().unwrap() = cache_with(&others, &raw, &time);
            let t0 = Instant::now();
            let polled = feed.poll(sink.as_ref()).await;
            assert_eq!(polled.accepted, 1, "{}", polled.summary());
            let (mut obs, mut high) = (None, None);
            while obs.is_none() || high.is_none() {
                match tokio::time::timeout(Duration::from_secs(5), sub.next()).await {
                    Ok(Some(Delivery::Event(e))) => {
                        let slot = match &*e.name {
                            "observation" => &mut obs,
                            "new_high" => &mut high,
                            _ => continue,
                        };
                        slot.get_or_insert(t0.elapsed());
                    }
                    other => panic!("round {i}: no event: {other:?}"),
                }
            }
            answered(&router, &key, "/api/v2/observations.php?station_code=KNYC&mode=latest", &stamp, t0, i).await;
            rest_ms.push(t0.elapsed().as_secs_f64() * 1e3);
            obs_ms.push(obs.unwrap().as_secs_f64() * 1e3);
            high_ms.push(high.unwrap().as_secs_f64() * 1e3);
        }
    });
    for (what, v) in
        [("latest REST answer", &mut rest_ms), ("stream observation", &mut obs_ms), ("stream new_high", &mut high_ms)]
    {
        print_percentiles(what, "reports", v);
    }
}

/// The CLI products the fixture lists, newest last: (id, issuance time, text).
type Products = Arc<Mutex<Vec<(String, String, String)>>>;

/// The real CLINYC re-issued `i` minutes after its 06:16Z heading with maximum `33 + i`.
fn clinyc(i: u32) -> (String, String) {
    let real = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/real/cli/CLINYC.txt")).unwrap();
    let minute = 16 + i;
    let text = real
        .replace("CDUS41 KOKX 030616", &format!("CDUS41 KOKX 0306{minute:02}"))
        .replace("  MAXIMUM         33    301 PM", &format!("  MAXIMUM         {:2}    301 PM", 33 + i));
    assert_ne!(text, real);
    (text, format!("2013-01-03T06:{minute:02}:00+00:00"))
}

/// The api.weather.gov product list and products of the CLI fixture.
async fn cli_fixture(products: Products) -> String {
    use axum::extract::{Path, State};
    use axum::routing::get;
    async fn list(State(p): State<Products>) -> axum::response::Response {
        use axum::response::IntoResponse;
        let graph: Vec<serde_json::Value> = p
            .lock()
            .unwrap()
            .iter()
            .rev()
            .map(|(id, issued, _)| {
                serde_json::json!({"@id": format!("https://api.weather.gov/products/{id}"), "id": id,
                    "wmoCollectiveId": "CDUS41", "issuingOffice": "KOKX", "issuanceTime": issued,
                    "productCode": "CLI", "productName": "Climatological Report (Daily)"})
            })
            .collect();
        let body = serde_json::json!({"@context": {"@version": "1.1"}, "@graph": graph});
        ([("content-type", "application/ld+json")], body.to_string()).into_response()
    }
    async fn product(State(p): State<Products>, Path(id): Path<String>) -> axum::response::Response {
        use axum::response::IntoResponse;
        let found = p.lock().unwrap().iter().find(|(i, _, _)| *i == id).cloned();
        let Some((id, issued, text)) = found else { return axum::http::StatusCode::NOT_FOUND.into_response() };
        let body = serde_json::json!({"@id": format!("https://api.weather.gov/products/{id}"), "id": id,
            "issuanceTime": issued, "productCode": "CLI", "productText": text});
        ([("content-type", "application/ld+json")], body.to_string()).into_response()
    }
    let app = axum::Router::new()
        .route("/products/types/CLI/locations/NYC", get(list))
        .route("/products/{id}", get(product))
        .with_state(products);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn cli_publish_to_served(_c: &mut Criterion) {
    use futures::StreamExt;
    use wxlake::access::limits::RateLimiter;
    use wxlake::api::{server, AppState};
    use wxlake::clock::ManualClock;
    use wxlake::feeds::nws_products::{NwsProducts, NwsProductsConfig, ProductKind};
    use wxlake::ingest::{Format, IngestOptions};
    use wxlake::stream::Delivery;

    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let products: Products = Arc::default();
    let manual =
        Arc::new(ManualClock::new(chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2013, 1, 3, 8, 0, 0).unwrap()));
    let clock: Arc<dyn Clock> = manual.clone();
    let (router, key, feed, sink, hub) = rt.block_on(async {
        let base = cli_fixture(Arc::clone(&products)).await;
        let Rig { keys, key, live, hub, client } = Rig::open(dir.path(), clock.clone()).await;
        // The day's observation the served CLI values ride on (`mode=latest` answers an
        // observation with its day's reports).
        let metar = b"KNYC 022051Z 27008KT 10SM CLR 01/M09 A3012 RMK AO2 T00061089\n".to_vec();
        let opts = IngestOptions { month: Some((2013, 1)), ..Default::default() };
        assert_eq!(live.ingest(Format::Metar, opts, metar).await.unwrap().accepted, 1);
        let cfg = NwsProductsConfig {
            base_url: base,
            stations: vec!["KNYC".into()],
            interval: Duration::from_secs(60),
            quiet_interval: Duration::from_secs(60),
            ..Default::default()
        };
        let cfg = cfg.validated(ProductKind::Cli).unwrap();
        let feed = NwsProducts::new(ProductKind::Cli, cfg, client, None).unwrap().with_clock(clock.clone());
        let sink: Arc<dyn FeedSink> = Arc::new(Arc::clone(&live));
        let limiter = RateLimiter::new(Arc::new(ManualClock::new(chrono::Utc::now() - chrono::Duration::days(1))));
        (server::router(AppState::new(keys, limiter, live, clock.clone())), key, feed, sink, hub)
    });
    let (mut rest_ms, mut event_ms) = (Vec::new(), Vec::new());
    rt.block_on(async {
        let mut sub = hub.connect("bench", ["KNYC".to_string()].into());
        for i in 1..=30u32 {
            let (text, issued) = clinyc(i);
            products.lock().unwrap().push((format!("cli-knyc-{i:02}"), issued, text));
            manual.advance(chrono::Duration::minutes(1));
            let t0 = Instant::now();
            let polled = feed.poll(sink.as_ref()).await;
            assert_eq!((polled.requests, polled.accepted), (2, 1), "round {i}: {}", polled.summary());
            let event = loop {
                match tokio::time::timeout(Duration::from_secs(5), sub.next()).await {
                    Ok(Some(Delivery::Event(e))) if &*e.name == "cli" => break t0.elapsed(),
                    Ok(Some(_)) => continue,
                    other => panic!("round {i}: no cli event: {other:?}"),
                }
            };
            let want = format!("\"cli_high_f\":{}", 33 + i);
            let url = "/api/v2/observations.php?station_code=KNYC&mode=latest&observation_type=cli_high";
            answered(&router, &key, url, &want, t0, i).await;
            rest_ms.push(t0.elapsed().as_secs_f64() * 1e3);
            event_ms.push(event.as_secs_f64() * 1e3);
        }
    });
    print_percentiles("CLI: latest REST answer (cli_high)", "products", &mut rest_ms);
    print_percentiles("CLI: stream cli event", "products", &mut event_ms);
}

criterion_group!(benches, bench_cache_poll, publish_to_served, cli_publish_to_served);
criterion_main!(benches);
