//! The OpenAPI contract, checked from outside: schemathesis (PyPI) generates requests for
//! every operation of the served `/openapi.json`, with valid catalog values (the demo
//! stations, the model names, times inside the demo lake), against the real server binary
//! on a small demo lake, and fails on any 5xx, undocumented status, wrong content type or
//! body that does not match its schema. It also requires a 2xx answer from every GET
//! operation, so a run whose requests were all refused cannot pass.
//!
//! Run it alone: `bash .ci/run` installs schemathesis into `.ci/venv` (or point
//! `WXLAKE_SCHEMATHESIS` at a `schemathesis` executable), then
//! `cargo test --test it openapi`. Without schemathesis it is skipped with a note, except
//! under `CI=true`, where it fails.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{Duration as ChronoDuration, Utc};

use crate::support::{stderr, stdout, wxlake};

/// Wall-clock limit of the schemathesis run.
const RUN_LIMIT: Duration = Duration::from_secs(170);

/// The demo stations: one °F (US, with DSM/CLI and precipitation) and one °C station.
const STATIONS: [&str; 2] = ["KNYC", "EGLC"];

/// The schemathesis executable: `WXLAKE_SCHEMATHESIS`, the venv `.ci/run` installs, or
/// one on PATH.
fn schemathesis() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/schemathesis");
    let candidates = std::env::var_os("WXLAKE_SCHEMATHESIS")
        .map(PathBuf::from)
        .into_iter()
        .chain([venv, PathBuf::from("schemathesis")]);
    candidates.into_iter().find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// The server on a free port; killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(lake: &Path) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .arg("--lake")
        .arg(format!("file://{}", lake.display()))
        .args(["serve", "--addr", "127.0.0.1:0", "--flush-secs", "3600"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn server");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.split("listening on http://").nth(1) {
            let addr = rest.split_whitespace().next().expect("address").to_string();
            // Keep draining stderr so the server never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return (server, addr);
        }
    }
    panic!("server did not start");
}

fn toml_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

/// schemathesis.toml: dictionaries of valid values and the parameters bound to them (with
/// a small chance of a generated value instead, so the 400 paths are exercised too).
fn config(key: &str) -> String {
    let now = Utc::now();
    let t = |h: i64| (now + ChronoDuration::hours(h)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let d = |days: i64| (now + ChronoDuration::days(days)).format("%Y-%m-%d").to_string();
    let models: Vec<String> = wxlake::models::MODELS.iter().map(|m| m.name.to_string()).collect();
    let stations: Vec<String> = STATIONS.iter().map(|s| s.to_string()).collect();
    let dictionaries: BTreeMap<&str, Vec<String>> = BTreeMap::from([
        ("stations", stations.clone()),
        ("station_lists", vec![STATIONS.join(","), STATIONS[0].to_string()]),
        ("models", models),
        // Any start with any end is a valid history range (after it, at most 24 h).
        ("history_starts", vec![t(-20), t(-8)]),
        ("history_ends", vec![t(-1), t(0)]),
        ("valid_starts", vec![t(-12), t(0)]),
        ("valid_ends", vec![t(24), t(72)]),
        ("past_days", vec![d(-1), d(-2)]),
        ("range_starts", vec![d(-3), d(-2)]),
        ("range_ends", vec![d(-1), d(0)]),
        ("nws_days", vec![d(-1), d(0)]),
        ("runs", vec!["latest".to_string()]),
        ("modes", vec!["latest".to_string(), "svc_high".to_string(), "history".to_string()]),
        ("logics", vec!["nws".to_string(), "wu".to_string()]),
        ("formats", vec!["metar".to_string(), "dsm".to_string(), "cli".to_string()]),
        ("months", vec![now.format("%Y-%m").to_string()]),
    ]);
    let mut out = String::from("# Written by tests/it/openapi.rs for one run.\n[generation]\nmode = \"positive\"\n\n");
    // The key for both schemes the document declares (schemathesis would send a generated
    // bearer token otherwise, and the server reads Authorization first: all 401s).
    out += &format!("[auth.openapi.bearer]\nbearer = {key:?}\n\n[auth.openapi.api_key]\napi_key = {key:?}\n\n");
    for (name, values) in &dictionaries {
        out += &format!("[dictionaries.{name}]\nvalues = {}\n\n", toml_list(values));
    }
    let bind = |dict: &str| format!("{{ dictionary = {dict:?}, probability = 0.9 }}");
    out += "[parameters]\n";
    for (param, dict) in [
        ("query.station_code", "stations"),
        ("query.location_name", "stations"),
        ("query.stations", "station_lists"),
        ("query.model", "models"),
        ("query.start_time", "history_starts"),
        ("query.end_time", "history_ends"),
        ("query.start_valid_time", "valid_starts"),
        ("query.end_valid_time", "valid_ends"),
        ("query.date", "past_days"),
        ("query.start_date", "range_starts"),
        ("query.end_date", "range_ends"),
        ("query.run", "runs"),
        ("query.month", "months"),
        ("query.station", "stations"),
        ("path.format", "formats"),
    ] {
        out += &format!("{param:?} = {}\n", bind(dict));
    }
    // Three shapes behind `mode`: every case names a mode, a catalog station and what
    // each mode needs (the others ignore it), so each shape is reached (checked below).
    let always = |dict: &str| format!("{{ dictionary = {dict:?}, probability = 1.0 }}");
    out += &format!(
        "\n[[operations]]\ninclude-path-regex = \"/api/v[12]/observations\\\\.php\"\n\
         generation = {{ max-examples = 40 }}\n\
         parameters = {{ \"query.mode\" = {}, \"query.station_code\" = {}, \"query.logic\" = {}, \
         \"query.start_time\" = {}, \"query.end_time\" = {} }}\n",
        always("modes"),
        always("stations"),
        always("logics"),
        always("history_starts"),
        always("history_ends"),
    );
    // The NWS forecast `date` may be today (and up to 2 days ahead).
    out += &format!(
        "\n[[operations]]\ninclude-path = \"/api/v2/nws_forecasts.php\"\nparameters = {{ \"query.date\" = {} }}\n",
        bind("nws_days")
    );
    out
}

/// The requests of the HAR report: (path, `mode` parameter, answered 2xx).
fn requests(har: &Path) -> Vec<(String, Option<String>, bool)> {
    let text = std::fs::read_to_string(har).unwrap_or_else(|e| panic!("{}: {e}", har.display()));
    let v: serde_json::Value = serde_json::from_str(&text).expect("HAR is JSON");
    let mut out = Vec::new();
    for e in v["log"]["entries"].as_array().cloned().unwrap_or_default() {
        let Some(url) = e["request"]["url"].as_str() else { continue };
        let Some((_, rest)) = url.split("://").nth(1).and_then(|u| u.split_once('/')) else { continue };
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mode = query.split('&').find_map(|kv| kv.strip_prefix("mode=")).map(str::to_string);
        let ok = e["response"]["status"].as_u64().is_some_and(|s| (200..300).contains(&s));
        out.push((format!("/{path}"), mode, ok));
    }
    out
}

#[test]
fn openapi_contract_holds_under_schemathesis() {
    let Some(st) = schemathesis() else {
        let how = "install it with `bash .ci/run` (a venv in .ci/venv, schemathesis pinned there) or \
                   `python3 -m venv .ci/venv && .ci/venv/bin/pip install schemathesis==4.32.5`, \
                   or set WXLAKE_SCHEMATHESIS to its executable";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("schemathesis is not installed: {how}");
        }
        eprintln!("SKIPPED openapi_contract_holds_under_schemathesis: schemathesis is not installed; {how}");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = dir.path().join("lake");
    let out = wxlake(&lake, &["demo", "--days", "2", "--stations", &STATIONS.join(","), "--no-onemin"]);
    assert!(out.status.success(), "demo: {}", stderr(&out));
    let out = wxlake(&lake, &["keys", "create", "--tier", "enterprise", "--user", "contract", "--admin"]);
    assert!(out.status.success(), "keys: {}", stderr(&out));
    let key = stdout(&out).trim().to_string();

    let (_server, addr) = start_server(&lake);
    let cfg = dir.path().join("schemathesis.toml");
    std::fs::write(&cfg, config(&key)).expect("write config");
    let har = dir.path().join("run.har");
    let (out_path, err_path) = (dir.path().join("st.out"), dir.path().join("st.err"));
    let started = Instant::now();
    let mut child = Command::new(&st)
        .arg("--config-file")
        .arg(&cfg)
        .arg("run")
        .arg(format!("http://{addr}/openapi.json"))
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            // The stream is served by its own HTTPS listener (the path's `servers`), not here.
            "--exclude-path",
            "/api/v2/stream",
            // The relay is an endless event stream (tests/it/dashboard.rs covers it).
            "--exclude-path",
            wxlake::api::paths::V2_STREAM_RELAY,
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            "20",
            "--seed",
            "15",
            // One worker: hypothesis's lambda-source parsing is not thread-safe on Python
            // 3.11 ("AST constructor recursion depth mismatch" errors with two).
            "--workers",
            "1",
            "--no-color",
            "--report",
            "har",
            "--report-har-path",
        ])
        .arg(&har)
        .current_dir(dir.path())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("run schemathesis");
    // Bounded: the run must finish well inside CI's budget.
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let report = format!("{}\n{}", read(&out_path), read(&err_path));
    let summary: Vec<&str> = report.lines().rev().take(12).collect();
    eprintln!(
        "schemathesis ran {:.0} s:\n{}",
        started.elapsed().as_secs_f64(),
        summary.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
    let status = status.unwrap_or_else(|| panic!("schemathesis took over {RUN_LIMIT:?}:\n{report}"));
    assert!(status.success(), "schemathesis found contract violations:\n{report}");

    let sent = requests(&har);
    let mut answered: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (path, _, ok) in &sent {
        let c = answered.entry(path).or_default();
        c.0 += usize::from(*ok);
        c.1 += 1;
    }
    for (path, (ok, total)) in &answered {
        eprintln!("  {path}: {ok} of {total} requests answered 2xx");
    }
    // Each shape of the observations endpoints was returned and checked.
    for path in [wxlake::api::paths::V2_OBSERVATIONS, wxlake::api::paths::V1_OBSERVATIONS] {
        for mode in ["latest", "svc_high", "history"] {
            let hit = sent.iter().any(|(p, m, ok)| *ok && p == path && m.as_deref().unwrap_or("history") == mode);
            assert!(hit, "no 2xx {path} mode={mode}: its shape went unchecked\n{report}");
        }
    }
    let doc: serde_json::Value = serde_json::from_str(&fetch_doc(&addr)).expect("document");
    let gets: Vec<String> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .filter(|(p, item)| {
            item.get("get").is_some()
                && p.as_str() != wxlake::api::paths::V2_STREAM
                && p.as_str() != wxlake::api::paths::V2_STREAM_RELAY
        })
        .map(|(p, _)| p.clone())
        .collect();
    assert!(gets.len() >= 10, "the document lists the GET operations: {gets:?}");
    let silent: Vec<&String> = gets.iter().filter(|p| answered.get(p.as_str()).is_none_or(|c| c.0 == 0)).collect();
    assert!(silent.is_empty(), "no 2xx answer for {silent:?}: the run did not reach their 200 shapes\n{report}");
}

/// `GET /openapi.json` (no key needed).
fn fetch_doc(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(s, "GET /openapi.json HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("request");
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("response");
    resp.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).expect("a body")
}

// ---- in process: the document's shapes and the fields real clients read ----

mod in_process {
    use axum::http::StatusCode;
    use chrono::{TimeZone, Utc};
    use serde_json::Value;
    use wxlake::ingest::{ingest_bytes, Format, IngestOptions, Summary};

    use crate::http::App;
    use crate::support::knyc_forecast;

    async fn document(app: &App) -> Value {
        let (s, _, v) = app.call("GET", "/openapi.json", None, "").await;
        assert_eq!(s, StatusCode::OK);
        v
    }

    fn ok_schema<'a>(doc: &'a Value, path: &str) -> &'a Value {
        &doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    }

    fn component<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(r) => &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")],
            None => schema,
        }
    }

    /// Each operation's 200 schema is the shape its handler sends (issue 15 item 5: six
    /// operations were declared with the wrong shape).
    #[tokio::test]
    async fn document_declares_the_shapes_the_handlers_send() {
        let app = App::new().await;
        let doc = document(&app).await;
        for p in ["/api/v2/forecasts.php", "/api/v1/forecasts.php"] {
            assert_eq!(ok_schema(&doc, p)["type"], "array", "{p}: {}", ok_schema(&doc, p));
        }
        let items = component(&doc, &ok_schema(&doc, "/api/v2/forecasts.php")["items"]);
        assert_eq!(items["oneOf"].as_array().map(Vec::len), Some(2), "raw row or daily row: {items}");
        for p in ["/api/v2/nearby.php", "/api/v2/pacing.php"] {
            let s = component(&doc, ok_schema(&doc, p));
            assert_eq!(s["type"], "object", "{p}: {s}");
        }
        for p in ["/api/v2/observations.php", "/api/v1/observations.php"] {
            let s = component(&doc, ok_schema(&doc, p));
            let shapes = s["oneOf"].as_array().unwrap_or_else(|| panic!("{p}: one shape per mode: {s}"));
            assert_eq!(shapes.len(), 3, "{p}: latest, svc_high, history");
            assert!(shapes.iter().any(|v| v["type"] == "array"), "{p}: history is an array");
        }
        // Every $ref resolves (parameter types are not collected by utoipa on their own).
        let text = doc.to_string();
        for r in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = r.split('"').next().unwrap();
            assert!(doc["components"]["schemas"].get(name).is_some(), "dangling $ref {name}");
        }
        // Every operation behind a key documents 401 and 429.
        let mut secured = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if op.get("security").is_none() {
                    continue;
                }
                secured += 1;
                for status in ["401", "429"] {
                    assert!(op["responses"].get(status).is_some(), "{method} {path} lacks {status}");
                }
            }
        }
        assert!(secured >= 11, "{secured} secured operations");
        // The stream names the server that serves it: not this one.
        let servers = &doc["paths"]["/api/v2/stream"]["servers"];
        assert!(servers[0]["url"].as_str().is_some_and(|u| u.starts_with("https://")), "{servers}");
        // The fields of item 15, documented.
        let obs = &doc["components"]["schemas"]["ObservationV2"]["properties"];
        for f in ["twentyfour_hour_high", "twentyfour_hour_high_display", "twentyfour_hour_low_f"] {
            assert!(obs.get(f).is_some(), "ObservationV2.{f}");
        }
        let svc = &doc["components"]["schemas"]["SvcHigh"];
        for f in ["svc_high_sources", "svc_low_sources"] {
            assert_eq!(svc["properties"][f]["type"], "array", "SvcHigh.{f}");
            assert!(svc["required"].as_array().unwrap().iter().any(|r| r == f), "SvcHigh.{f} always present");
        }
        let mode = doc["paths"]["/api/v2/forecasts.php"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "mode")
            .map(|p| component(&doc, &p["schema"]).clone())
            .unwrap();
        assert!(mode.to_string().contains("hourly"), "{mode}");
    }

    /// The documented raw forecast row has exactly the columns, JSON types and nullability
    /// of the query the handler streams.
    #[tokio::test]
    async fn documented_forecast_row_matches_the_query() {
        let app = App::new().await;
        let doc = document(&app).await;
        let row = &doc["components"]["schemas"]["ForecastRowV2"];
        let ctx = wxlake::lake::query::session(app.state.lake()).await.unwrap();
        let df = ctx
            .sql(&format!("SELECT {} FROM forecasts", wxlake::api::v2::forecasts::RAW_COLUMNS.as_str()))
            .await
            .unwrap();
        let fields = df.schema().fields().clone();
        let props = row["properties"].as_object().unwrap();
        assert_eq!(props.len(), fields.len(), "{:?}", props.keys().collect::<Vec<_>>());
        for f in fields.iter() {
            use datafusion::arrow::datatypes::DataType as D;
            let want = match f.data_type() {
                D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::UInt32 | D::UInt64 => "integer",
                D::Float32 | D::Float64 => "number",
                _ => "string",
            };
            let p = &props.get(f.name()).unwrap_or_else(|| panic!("{} undocumented", f.name()));
            let types: Vec<&str> = match &p["type"] {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                other => panic!("{}: {other}", f.name()),
            };
            assert!(types.contains(&want), "{}: {types:?}, want {want}", f.name());
            assert_eq!(types.contains(&"null"), f.is_nullable(), "{}: nullability", f.name());
        }
    }

    /// Times and dates far outside the data (valid ISO 8601 all the same) are a 400 naming
    /// the range: year 272 became a SQL timestamp out of range, a 500 (found by schemathesis).
    #[tokio::test]
    async fn far_times_are_a_400_not_a_500() {
        let app = App::new().await;
        for uri in [
            "/api/v1/forecasts.php?location_name=EGLC&start_valid_time=0272-10-19T16:56:55Z&end_valid_time=2026-03-09T00:00:00Z",
            "/api/v2/forecasts.php?location_name=KNYC&start_valid_time=0272-10-19T16:56:55Z&end_valid_time=2026-03-09T00:00:00Z",
            "/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=0272-10-19T00:00:00Z",
            "/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=9999-10-19T00:00:00Z",
            "/api/v2/observations.php?station_code=KNYC&start_time=0272-10-19T00:00:00Z&end_time=0272-10-19T06:00:00Z",
            "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws&date=0272-10-19",
            "/api/v2/daily_extremes.php?station_code=KNYC&logic=nws&start_date=0272-10-19&end_date=0272-10-20",
        ] {
            let (s, v) = app.get(uri).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{uri}: {v}");
            assert!(v["error"].as_str().unwrap().contains("out of range"), "{uri}: {v}");
            assert!(v["details"].as_str().unwrap().contains("1900 to 2199"), "{uri}: {v}");
        }
    }

    /// `mode=hourly` (the original service's name) answers the raw rows.
    #[tokio::test]
    async fn hourly_is_a_synonym_of_raw() {
        let app = App::new().await;
        let run = Utc.with_ymd_and_hms(2026, 3, 8, 0, 0, 0).unwrap();
        let rows: Vec<_> = (0..12).map(|lead| knyc_forecast("GFS", run, lead, 40.0 + lead as f64)).collect();
        let csv = wxlake::decode::forecast_rows::encode_forecast_csv(&rows);
        let mut s = Summary::default();
        ingest_bytes(app.state.lake(), Format::Forecasts, "t", csv.as_bytes(), &IngestOptions::default(), &mut s)
            .await
            .unwrap();
        let base = "/api/v2/forecasts.php?location_name=KNYC&start_valid_time=2026-03-08T02:00:00Z\
                    &end_valid_time=2026-03-08T05:00:00Z";
        let (st, raw) = app.get(base).await;
        assert_eq!(st, StatusCode::OK, "{raw}");
        assert_eq!(raw.as_array().map(Vec::len), Some(4), "{raw}");
        for mode in ["raw", "hourly"] {
            let (st, v) = app.get(&format!("{base}&mode={mode}")).await;
            assert_eq!((st, &v), (StatusCode::OK, &raw), "mode={mode}");
        }
        let (st, v) = app.get(&format!("{base}&mode=minutely")).await;
        assert_eq!(st, StatusCode::BAD_REQUEST);
        assert!(v["details"].as_str().unwrap().contains("hourly"), "{v}");
    }

    /// Three KNYC reports of one LST day: 46 °F, then 48 °F, then 47 °F with the 12–18Z
    /// 6-hour groups max 8.9 °C (48 °F) and min 3.9 °C (39 °F).
    fn reports(day: u32) -> String {
        format!(
            "KNYC {day:02}1451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00781061\n\
             KNYC {day:02}1651Z 27008KT 10SM FEW250 09/M06 A3021 RMK AO2 SLP231 T00891061\n\
             KNYC {day:02}1751Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00831061 10089 20039\n"
        )
    }

    fn lists(v: &Value) -> (Vec<String>, Vec<String>) {
        let l = |k: &str| -> Vec<String> {
            v[k].as_array()
                .unwrap_or_else(|| panic!("{k} missing: {v}"))
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        (l("svc_high_sources"), l("svc_low_sources"))
    }

    /// `svc_high_sources` / `svc_low_sources` list every source that reached the extreme,
    /// live (today), recomputed (a past day) and stored by the daily_extremes job.
    #[tokio::test]
    async fn svc_high_lists_every_source_that_reached_the_extreme() {
        let app = App::new().await;
        let (s, v) = app.ingest("metar", "month=2026-03", &reports(8)).await;
        assert_eq!(s, StatusCode::ACCEPTED, "{v}");
        let (_, nws) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws").await;
        assert_eq!((nws["svc_high"].as_f64(), nws["svc_low"].as_f64()), (Some(48.0), Some(39.0)), "{nws}");
        assert_eq!(nws["high_source"], "observation", "first reached by the 16:51 report");
        let both = vec!["observation".to_string(), "six_hour_group".to_string()];
        assert_eq!(lists(&nws), (both.clone(), vec!["six_hour_group".to_string()]));
        let (_, wu) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=wu").await;
        let obs = vec!["observation".to_string()];
        assert_eq!((wu["svc_low"].as_f64(), lists(&wu)), (Some(46.0), (obs.clone(), obs.clone())), "{wu}");

        // A past day: recomputed from the lake, and stored by the job.
        let mut sum = Summary::default();
        let opts = IngestOptions { month: Some((2026, 3)), ..Default::default() };
        ingest_bytes(app.state.lake(), Format::Metar, "old", reports(5).as_bytes(), &opts, &mut sum).await.unwrap();
        let (_, past) =
            app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws&date=2026-03-05").await;
        assert_eq!(lists(&past), (both.clone(), vec!["six_hour_group".to_string()]), "{past}");
        let specs = wxlake::jobs::embedded_specs().unwrap();
        let spec = specs.iter().find(|s| s.name == "daily_extremes").unwrap();
        let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 5).unwrap();
        wxlake::jobs::runner::run_job(app.state.lake(), spec, Some((day, day)), &wxlake::jobs::runner::no_progress)
            .await
            .unwrap();
        let stored = wxlake::lake::query::session(app.state.lake()).await.unwrap();
        wxlake::jobs::tables::register_derived(&stored, app.state.lake()).await.unwrap();
        let b = stored
            .sql("SELECT high_sources, low_sources FROM daily_extremes WHERE logic = 'nws'")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let cell = |c: usize| {
            datafusion::arrow::util::display::ArrayFormatter::try_new(b[0].column(c).as_ref(), &Default::default())
                .unwrap()
                .value(0)
                .to_string()
        };
        assert_eq!((cell(0), cell(1)), ("observation,six_hour_group".to_string(), "six_hour_group".to_string()));
        let (s, days) = app
            .get("/api/v2/daily_extremes.php?station_code=KNYC&logic=nws&start_date=2026-03-05&end_date=2026-03-05")
            .await;
        assert_eq!(s, StatusCode::OK, "{days}");
        assert_eq!(lists(&days[0]), (both, vec!["six_hour_group".to_string()]), "{days}");
    }

    /// `twentyfour_hour_high` / `_low`: the 24-hour group of the report closing the LST day,
    /// in °C, native units and °F; null on every other report.
    #[tokio::test]
    async fn observation_records_carry_the_24_hour_group() {
        let app = App::new().await;
        let body = "KNYC 080451Z 00000KT 10SM CLR 01/M06 A3030 RMK AO2 SLP260 T00061061\n\
                    KNYC 080456Z 00000KT 10SM CLR 01/M06 A3030 RMK AO2 SLP260 T00061061 401001039\n";
        let (s, v) = app.ingest("metar", "month=2026-03", body).await;
        assert_eq!(s, StatusCode::ACCEPTED, "{v}");
        let (s, h) = app
            .get("/api/v2/observations.php?station_code=KNYC&start_time=2026-03-08T04:00:00Z&end_time=2026-03-08T06:00:00Z")
            .await;
        assert_eq!(s, StatusCode::OK, "{h}");
        let (plain, closing) = (&h[0], &h[1]);
        assert_eq!(closing["observation_time"], "2026-03-08 04:56:00");
        let f = |o: &Value, k: &str| o[k].as_f64();
        assert_eq!(
            [
                f(closing, "twentyfour_hour_high"),
                f(closing, "twentyfour_hour_high_display"),
                f(closing, "twentyfour_hour_high_f")
            ],
            [Some(10.0), Some(50.0), Some(50.0)]
        );
        assert_eq!(
            [
                f(closing, "twentyfour_hour_low"),
                f(closing, "twentyfour_hour_low_display"),
                f(closing, "twentyfour_hour_low_f")
            ],
            [Some(-3.9), Some(25.0), Some(25.0)]
        );
        for k in ["twentyfour_hour_high", "twentyfour_hour_low_display", "twentyfour_hour_low_f"] {
            assert!(plain.get(k).is_some_and(Value::is_null), "{k} present and null: {plain}");
        }
    }
}
