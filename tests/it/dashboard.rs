//! The dashboard in a real browser (Debian's chromium, driven through chromedriver by the
//! small WebDriver client in `webdriver.rs`): log in, the overview, a demo station's day view whose values equal the REST
//! API's, a live observation that shows within 2 s as a new high, the accuracy view for a
//! Developer key and refused for a Professional key with the API's message. Screenshots of
//! each view go to `<target>/tmp/dashboard/` for a reviewer; the cold-cache render time and
//! the bytes the page loaded are printed (benches/README.md).
//!
//! Everything runs on loopback: the real `wxlake serve --demo` on port 0, chromedriver on
//! a free port, chromium headless with a fresh profile. One test: browser start-up is the
//! cost, so the steps share one session.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::{stderr, wxlake};
use crate::webdriver::Session;

type Client = Session;

/// Stops a child process (server, chromedriver) when the test ends, however it ends.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first of `names` on PATH.
fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n))).find(|p| p.is_file())
}

/// `wxlake serve --demo` on free ports: its REST address and the demo keys by tier.
fn start_demo_server(lake: &Path, state: &Path) -> (Proc, String, Vec<(String, String)>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .arg("--lake")
        .arg(format!("file://{}", lake.display()))
        .args(["serve", "--demo", "--addr", "127.0.0.1:0", "--stream-addr", "127.0.0.1:0", "--flush-secs", "3600"])
        .arg("--state-dir")
        .arg(state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn server");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let server = Proc(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut addr = None;
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.split("listening on http://").nth(1) {
            addr = Some(rest.split_whitespace().next().expect("address").to_string());
            break;
        }
    }
    let addr = addr.expect("server did not start");
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    // The keys are printed before the listener starts, one line per tier.
    let keys = BufReader::new(stdout)
        .lines()
        .take(4)
        .map_while(Result::ok)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect();
    (server, addr, keys)
}

/// One HTTP/1.1 request on loopback: status and JSON body.
fn http(addr: &str, method: &str, path: &str, key: &str, body: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: {key}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).expect("read");
    let resp = String::from_utf8_lossy(&resp);
    let status = resp.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("status");
    let (head, body) = resp.split_once("\r\n\r\n").expect("a body");
    // Chunked bodies (axum streams JSON arrays): join the chunks.
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_string() };
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// chromedriver on a free loopback port, and a headless chromium session with a fresh profile.
async fn browser(chromium: &Path, driver: &Path, profile: &Path) -> (Proc, Client) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn chromedriver");
    let proc = Proc(child);
    let args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1400,1100",
    ];
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    let url = format!("http://127.0.0.1:{port}");
    let caps = json!({"browserName": "chrome", "goog:chromeOptions": {"binary": chromium, "args": args}});
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match Session::new(&url, caps.clone()).await {
            Ok(client) => return (proc, client),
            Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(200)).await,
            Err(e) => panic!("no WebDriver session: {e}"),
        }
    }
}

/// Runs `script` (a function body) in the page.
async fn js(c: &Client, script: &str) -> Value {
    c.execute(script).await.unwrap_or_else(|e| panic!("{script}: {e}"))
}

/// Waits until `document.body.dataset.rendered` is `view`.
async fn rendered(c: &Client, view: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if js(c, "return document.body.dataset.rendered || ''").await == view {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let html = js(c, "return document.getElementById('main').innerText").await;
    panic!("the {view} view did not render: {html}");
}

async fn screenshot(c: &Client, dir: &Path, name: &str) {
    let png = c.screenshot().await.expect("screenshot");
    std::fs::write(dir.join(name), png).expect("write screenshot");
}

async fn log_in(c: &Client, base: &str, path: &str, key: &str) {
    c.goto(&format!("{base}{path}")).await.expect("goto");
    js(c, "sessionStorage.clear(); return null").await;
    c.refresh().await.expect("reload");
    let input = element(c, "#api-key").await;
    c.send_keys(&input, key).await.expect("type key");
    c.click(&element(c, "#login button").await).await.expect("submit");
}

/// The element matching `selector`, once there is one (10 s at most).
async fn element(c: &Client, selector: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match c.find(selector).await {
            Ok(e) => return e,
            Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(25)).await,
            Err(e) => panic!("{selector}: {e}"),
        }
    }
}

/// The `data-value` of a settlement cell, as a number (None when empty).
async fn shown_value(c: &Client, id: &str) -> Option<f64> {
    js(c, &format!("return document.getElementById('{id}').dataset.value")).await.as_str().and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_a_real_browser() {
    let (Some(chromium), Some(driver)) =
        (which(&["chromium", "chromium-browser", "google-chrome"]), which(&["chromedriver"]))
    else {
        let how = "install Debian's chromium and chromium-driver (bash .ci/run does: apt-get install -y chromium chromium-driver)";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("chromium or chromedriver is not installed: {how}");
        }
        eprintln!("SKIPPED dashboard_in_a_real_browser: chromium or chromedriver is not installed; {how}");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    let out = wxlake(&lake, &["demo", "--days", "2", "--stations", "KNYC,EGLC", "--no-onemin"]);
    assert!(out.status.success(), "demo: {}", stderr(&out));
    let (_server, addr, keys) = start_demo_server(&lake, &dir.path().join("state"));
    let key = |tier: &str| keys.iter().find(|(t, _)| t == tier).map(|(_, k)| k.clone()).expect("a demo key per tier");
    let (enterprise, developer, professional) = (key("enterprise"), key("developer"), key("professional"));
    let base = format!("http://{addr}");
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    std::fs::create_dir_all(&shots).expect("screenshot dir");

    let (_driver, c) = browser(&chromium, &driver, &dir.path().join("profile")).await;

    // Render time from a cold browser cache: the fresh profile has fetched nothing of the
    // page before the first load (the server's own caches are cold too); the second load
    // follows a cache clear (the server warm, as for a trader opening the page).
    c.goto(&format!("{base}/dashboard/uplot.LICENSE")).await.expect("goto");
    js(&c, &format!("sessionStorage.setItem('wxlake.key', '{enterprise}'); return null")).await;
    for run in ["first load (server cold)", "cleared browser cache"] {
        if run != "first load (server cold)" {
            c.cdp("Network.clearBrowserCache", json!({})).await.expect("clear the cache");
        }
        c.goto(&format!("{base}/station/KNYC")).await.expect("goto day view");
        rendered(&c, "day").await;
        let timing = js(
            &c,
            "const r = performance.getEntriesByType('resource'); \
             const api = r.filter(e => e.name.includes('/api/') && !e.name.includes('/relay')); \
             return {rendered_ms: Math.round(window.WX_RENDERED_AT), \
                     assets_done_ms: Math.round(Math.max(...r.filter(e => e.name.includes('/dashboard/')).map(e => e.responseEnd))), \
                     api_done_ms: Math.round(Math.max(...api.map(e => e.responseEnd))), \
                     asset_bytes: r.filter(e => e.name.includes('/dashboard/')).reduce((s, e) => s + e.encodedBodySize, 0), \
                     api_bytes: api.reduce((s, e) => s + e.encodedBodySize, 0), \
                     requests: r.length, \
                     slowest: api.map(e => [e.name.split('?')[0].split('/').pop(), Math.round(e.duration)]) \
                                 .sort((a, b) => b[1] - a[1]).slice(0, 4)}",
        )
        .await;
        eprintln!("day view, {run}: {timing}");
        assert!(timing["rendered_ms"].as_f64().is_some(), "{timing}");
    }

    // Log in through the form; the overview lists the stations.
    log_in(&c, &base, "/", &enterprise).await;
    rendered(&c, "overview").await;
    let rows = js(&c, "return document.querySelectorAll('#overview tbody tr').length").await;
    assert_eq!(rows.as_u64(), Some(70), "every catalog station is on the overview");
    screenshot(&c, &shots, "overview.png").await;

    // The day view of a demo station: observations, both logics' high/low, a model, NWS.
    c.click(&element(&c, "#overview tr[data-station=KNYC] a").await).await.expect("open the day view");
    rendered(&c, "day").await;
    let legend = js(&c, "return [...document.querySelectorAll('.u-legend .u-label')].map(e => e.textContent)").await;
    let legend: Vec<&str> = legend.as_array().expect("legend").iter().filter_map(Value::as_str).collect();
    for series in ["observed", "nws high", "nws low", "wu high", "wu low", "NWS hourly"] {
        assert!(legend.contains(&series), "{series} is not plotted: {legend:?}");
    }
    assert!(["HRRR", "NBM", "GFS", "ECMWF-IFS"].iter().any(|m| legend.contains(m)), "no model series: {legend:?}");
    // The values shown are the API's at the same instant (the demo feed may move them
    // between two reads: read again until a page read and a REST read agree).
    let mut agreed = false;
    for _ in 0..5 {
        let mut same = true;
        for logic in ["nws", "wu"] {
            let (s, rest) = http(
                &addr,
                "GET",
                &format!("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic={logic}"),
                &enterprise,
                "",
            );
            assert_eq!(s, 200, "{rest}");
            for which in ["high", "low"] {
                let page = shown_value(&c, &format!("svc-{logic}-{which}")).await;
                let api = rest[format!("svc_{which}")].as_f64();
                assert!(api.is_some(), "the demo day has a {logic} {which}: {rest}");
                same &= page == api;
            }
        }
        let count = js(&c, "return Number(document.getElementById('observations').dataset.count)").await;
        assert!(count.as_u64().unwrap_or(0) > 0, "observations are listed");
        if same {
            agreed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(agreed, "the day view's high/low differ from observations.php");
    screenshot(&c, &shots, "day.png").await;

    // Live: an observation posted to the ingest endpoint shows within 2 s, as a new high.
    let now = chrono::Utc::now();
    let report = format!("SPECI KNYC {} 27008KT 10SM FEW250 40/10 A3001 RMK AO2 T04000100", now.format("%d%H%MZ"));
    let (s, body) =
        http(&addr, "POST", &format!("/api/v2/ingest/metar?month={}", now.format("%Y-%m")), &enterprise, &report);
    assert_eq!(s, 202, "ingest: {body}");
    let posted = Instant::now();
    let mut seen = None;
    while posted.elapsed() < Duration::from_secs(2) {
        let alert = js(
            &c,
            r#"const a = document.querySelector('#alerts li.new-high[data-logic=nws][data-value="104"]');
               return a ? a.dataset.value : null"#,
        )
        .await;
        if !alert.is_null() {
            seen = Some((posted.elapsed(), alert));
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (after, alert) = seen.expect("the new high did not show within 2 s");
    eprintln!("new observation shown {} ms after the ingest was acknowledged", after.as_millis());
    assert_eq!(alert.as_str(), Some("104"), "the alert shows the new high");
    assert_eq!(shown_value(&c, "svc-nws-high").await, Some(104.0), "the nws high moved");
    let flagged = js(&c, "return document.getElementById('svc-nws-high').innerText").await;
    assert!(flagged.as_str().unwrap_or("").contains("NEW HIGH"), "{flagged}");
    let (_, rest) =
        http(&addr, "GET", "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws", &enterprise, "");
    assert_eq!(rest["svc_high"].as_f64(), Some(104.0), "{rest}");
    screenshot(&c, &shots, "day-live.png").await;

    // Accuracy: a Developer key sees it, a Professional key is refused with the API's message.
    log_in(&c, &base, "/accuracy/KNYC", &developer).await;
    rendered(&c, "accuracy").await;
    screenshot(&c, &shots, "accuracy.png").await;
    log_in(&c, &base, "/accuracy/KNYC", &professional).await;
    rendered(&c, "accuracy-refused").await;
    let (s, refusal) = http(&addr, "GET", "/api/v2/model_accuracy.php?station_code=KNYC", &professional, "");
    assert_eq!(s, 403);
    let shown = js(&c, "const d = document.getElementById('denied'); return [d.querySelector('h2').textContent, d.querySelector('p').textContent]").await;
    assert_eq!(shown, json!([refusal["error"], refusal["details"]]), "the page shows the API's refusal");
    screenshot(&c, &shots, "accuracy-refused.png").await;

    // The key never reached a URL: not in the page's address, not in any request it made.
    let urls = js(&c, "return [location.href, ...performance.getEntriesByType('resource').map(e => e.name)]").await;
    for k in [&enterprise, &developer, &professional] {
        assert!(!urls.to_string().contains(k.as_str()), "a key appears in a URL: {urls}");
    }
    eprintln!("screenshots in {}", shots.display());
    c.close().await.expect("close browser");
}

// ---- in process: the endpoints the page reads (no browser) ----

mod in_process {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use futures::StreamExt;
    use tower::ServiceExt;
    use wxlake::api::keys::Tier;
    use wxlake::api::server;
    use wxlake::api::state::StreamFeed;
    use wxlake::stream::{default_retention, EventLog, Hub};

    use crate::http::App;

    const REPORTS: &str = "\
KNYC 081451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00781061
KNYC 081551Z 28010KT 10SM CLR 09/M06 A3020 RMK AO2 SLP228 T00891061
";

    /// `stations.php` answers what `observations.php` answers (latest, svc_high per logic),
    /// with each logic's day window; auth and station errors as every endpoint.
    #[tokio::test]
    async fn stations_answer_what_observations_answer() {
        let app = App::new().await;
        let (s, body) = app.ingest("metar", "month=2026-03", REPORTS).await;
        assert!(s.is_success(), "{body}");
        let (s, st) = app.get("/api/v2/stations.php?station_code=knyc").await;
        assert_eq!(s, StatusCode::OK, "{st}");
        let st = &st[0];
        for logic in ["nws", "wu"] {
            let (_, svc) =
                app.get(&format!("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic={logic}")).await;
            assert_eq!(st["svc"][logic], svc, "{logic}");
        }
        let (_, latest) = app.get("/api/v2/observations.php?station_code=KNYC&mode=latest").await;
        assert_eq!(st["latest"], latest);
        assert_eq!(st["svc"]["nws"]["svc_high"].as_f64(), Some(48.0), "{st}");
        // 2026-03-08 is the US DST change: the nws day is 05:00Z-05:00Z (EST all year), the
        // wu day starts at civil midnight (05:00Z) and ends at the next (04:00Z).
        assert_eq!(st["days"]["nws"]["start_utc"], "2026-03-08 05:00:00", "{st}");
        assert_eq!(st["days"]["wu"]["end_utc"], "2026-03-09 04:00:00", "{st}");

        let (s, all) = app.get("/api/v2/stations.php").await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(all.as_array().map(Vec::len), Some(70), "the whole catalog");
        let (s, err) = app.get("/api/v2/stations.php?station_code=KNYC,XXXX").await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{err}");
        assert_eq!(err["error"], "Unknown station: XXXX");
        let (s, _, _) = app.call("GET", "/api/v2/stations.php", None, "").await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
    }

    /// Reads the relay's body until a frame names `event`, or gives up after 5 s.
    async fn until_event(body: &mut axum::body::BodyDataStream, event: &str) -> String {
        let mut seen = String::new();
        let wanted = format!("event: {event}\n");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !seen.contains(&wanted) {
            match tokio::time::timeout_at(deadline, body.next()).await {
                Ok(Some(Ok(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
                other => panic!("no {event} event (got {other:?}) after:\n{seen}"),
            }
        }
        seen
    }

    /// The relay serves the stream's own events on the REST port with the key in a header,
    /// and applies the stream's rules.
    #[tokio::test]
    async fn the_relay_serves_the_stream_events_with_the_key_in_a_header() {
        let app = App::new().await;
        let get = |key: Option<String>, uri: &str| {
            let mut req = Request::builder().uri(uri.to_string());
            if let Some(k) = key {
                req = req.header("X-API-Key", k);
            }
            server::router(app.state.clone()).oneshot(req.body(Body::empty()).unwrap())
        };
        let relay = "/api/v2/stream/relay?stations=KNYC";
        // No stream on this server: the relay says so.
        let resp = get(Some(app.key(Tier::Developer).to_string()), relay).await.unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);

        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(EventLog::open(dir.path(), default_retention()).unwrap());
        let hub = Hub::new(64);
        let _publisher =
            wxlake::api::stream_bridge::spawn_publisher(app.state.live.clone(), log.clone(), hub.clone()).await;
        app.state.set_stream_feed(StreamFeed { hub, log, heartbeat: Duration::from_secs(30) });

        assert_eq!(get(None, relay).await.unwrap().status(), StatusCode::UNAUTHORIZED);
        let resp = get(Some(app.key(Tier::Developer).to_string()), relay).await.unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "the key must be stream-enabled, as on the stream");
        let (_, streaming) = app.state.keys.create(Tier::Professional, "trader", false, true).unwrap();
        let six = "/api/v2/stream/relay?stations=KNYC,KMDW,KLAX,KSFO,KMIA,KDEN";
        assert_eq!(get(Some(streaming.clone()), six).await.unwrap().status(), StatusCode::FORBIDDEN, "Professional: 5");

        let resp = get(Some(streaming), relay).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let mut body = resp.into_body().into_data_stream();
        let first = until_event(&mut body, "connected").await;
        assert!(first.contains("\"user\":\"trader#relay\""), "{first}");
        let (s, out) = app.ingest("metar", "month=2026-03", REPORTS).await;
        assert!(s.is_success(), "{out}");
        let seen = until_event(&mut body, "new_high").await;
        assert!(seen.contains("event: observation\nid: "), "{seen}");
    }
}
