//! The OpenAPI contract, checked from outside: schemathesis (PyPI) generates requests for
//! every operation of the served `/openapi.json`, with valid catalog values (the demo
//! stations, the model names, times inside the demo lake), against the real server binary
//! on a small demo lake, and fails on any 5xx, undocumented status, wrong content type or
//! body that does not match its schema. It also requires a 2xx answer from every GET
//! operation, so a run whose requests were all refused cannot pass.
//!
//! Clients generated from the document: `redocly lint` (recommended rules) and spectral
//! (`spectral:oas`) must report no error, openapi-typescript's types must compile under
//! `tsc --strict`, and the client openapi-python-client generates must call every GET
//! operation against the demo server and parse each response into its models (the driver
//! is `openapi_client.py`, next to this file).
//!
//! Run them alone: `bash .ci/run` installs schemathesis and openapi-python-client into
//! `.ci/venv` and the npm tools into `.ci/node_modules` (or point `WXLAKE_SCHEMATHESIS`,
//! `WXLAKE_OPENAPI_PYTHON_CLIENT`, `WXLAKE_REDOCLY`, `WXLAKE_SPECTRAL`,
//! `WXLAKE_OPENAPI_TYPESCRIPT`, `WXLAKE_TSC` at the executables),
//! then `cargo test --test it openapi`. A test whose tool is missing is skipped with a
//! note, except under `CI=true`, where it fails.

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

/// Where `.ci/run` installs the tools.
fn ci_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci")
}

/// A tool's executable: the path in `env_var`, the one `.ci/run` installs, or `name` on
/// PATH; the first that answers `--version`.
fn find_tool(env_var: &str, installed: PathBuf, name: &str) -> Option<PathBuf> {
    let candidates = std::env::var_os(env_var).map(PathBuf::from).into_iter().chain([installed, PathBuf::from(name)]);
    candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .env("REDOCLY_TELEMETRY", "off")
            .env("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true")
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// A test's tool is missing: under `CI=true` the test fails, elsewhere it is skipped with a
/// note saying how to install the tool.
fn missing_tool(test: &str, tool: &str, how: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{tool} is not installed: {how}");
    }
    eprintln!("SKIPPED {test}: {tool} is not installed; {how}");
}

/// The schemathesis executable: `WXLAKE_SCHEMATHESIS`, the venv `.ci/run` installs, or
/// one on PATH.
fn schemathesis() -> Option<PathBuf> {
    find_tool("WXLAKE_SCHEMATHESIS", ci_dir().join("venv/bin/schemathesis"), "schemathesis")
}

/// A 2-day demo lake of [`STATIONS`] in `dir` and an Enterprise admin key (every operation
/// answers it).
fn demo_lake(dir: &Path) -> (PathBuf, String) {
    let lake = dir.join("lake");
    let out = wxlake(&lake, &["demo", "--days", "2", "--stations", &STATIONS.join(","), "--no-onemin"]);
    assert!(out.status.success(), "demo: {}", stderr(&out));
    let out = wxlake(&lake, &["keys", "create", "--tier", "enterprise", "--user", "contract", "--admin"]);
    assert!(out.status.success(), "keys: {}", stderr(&out));
    (lake, stdout(&out).trim().to_string())
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
        return missing_tool("openapi_contract_holds_under_schemathesis", "schemathesis", how);
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, key) = demo_lake(dir.path());

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

// ---- clients generated from the document, and linters ----

/// The served document, written to `dir/openapi.json` (what clients generate from).
fn document_file(dir: &Path) -> PathBuf {
    let path = dir.join("openapi.json");
    let doc = serde_json::to_string_pretty(&wxlake::api::docs::document()).expect("document as JSON");
    std::fs::write(&path, doc).expect("write the document");
    path
}

/// Runs a linter in `dir`, its output as JSON (the linters exit non-zero on findings).
fn lint_json(cmd: &mut Command, dir: &Path) -> serde_json::Value {
    let out = cmd
        .current_dir(dir)
        // No telemetry or update check: tests never reach the network.
        .env("REDOCLY_TELEMETRY", "off")
        .env("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run the linter");
    let text = stdout(&out);
    let json = text.find(['{', '[']).map(|i| &text[i..]).unwrap_or_default();
    serde_json::from_str(json).unwrap_or_else(|e| panic!("linter output is not JSON ({e}):\n{text}\n{}", stderr(&out)))
}

/// `redocly lint` (its recommended rules) and spectral (`spectral:oas`) find no error in the
/// document: the issue 27 run found 29 and 14 (every operationId `handler`, no security on
/// the stream, ...). Warnings are printed.
#[test]
fn openapi_document_passes_redocly_and_spectral() {
    let bin = ci_dir().join("node_modules/.bin");
    let how = "install them with `bash .ci/run` (npm, pinned, into .ci/node_modules), or set WXLAKE_REDOCLY / \
               WXLAKE_SPECTRAL to the executables";
    let redocly = find_tool("WXLAKE_REDOCLY", bin.join("redocly"), "redocly");
    let spectral = find_tool("WXLAKE_SPECTRAL", bin.join("spectral"), "spectral");
    let (Some(redocly), Some(spectral)) = (redocly, spectral) else {
        return missing_tool("openapi_document_passes_redocly_and_spectral", "@redocly/cli or spectral", how);
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = document_file(dir.path());

    std::fs::write(dir.path().join("redocly.yaml"), "extends:\n  - recommended\n").expect("redocly config");
    let report = lint_json(
        Command::new(&redocly).args(["lint", "--config", "redocly.yaml", "--format", "json"]).arg(&doc),
        dir.path(),
    );
    let problems = report["problems"].as_array().cloned().unwrap_or_default();
    let line = |p: &serde_json::Value| {
        format!("{} {}: {} at {}", p["severity"], p["ruleId"], p["message"], p["location"][0]["pointer"])
    };
    for p in &problems {
        eprintln!("redocly {}", line(p));
    }
    let errors: Vec<String> = problems.iter().filter(|p| p["severity"] == "error").map(line).collect();
    eprintln!("redocly: {} errors, {} warnings", report["totals"]["errors"], report["totals"]["warnings"]);
    assert!(report["totals"]["errors"].is_u64(), "no totals in redocly's report: {report}");
    assert_eq!(report["totals"]["errors"], 0, "redocly lint errors:\n{}", errors.join("\n"));

    std::fs::write(dir.path().join(".spectral.yaml"), "extends: [\"spectral:oas\"]\n").expect("spectral ruleset");
    let results = lint_json(
        Command::new(&spectral)
            .args(["lint", "--ruleset", ".spectral.yaml", "--format", "json", "--fail-severity", "error"])
            .arg(&doc),
        dir.path(),
    );
    let results = results.as_array().cloned().unwrap_or_else(|| panic!("spectral's report is a list: {results}"));
    // Severity 0 is an error, 1 a warning.
    let line = |r: &serde_json::Value| format!("{} {}: {} at {}", r["severity"], r["code"], r["message"], r["path"]);
    for r in &results {
        eprintln!("spectral {}", line(r));
    }
    let errors: Vec<String> = results.iter().filter(|r| r["severity"] == 0).map(line).collect();
    eprintln!("spectral: {} errors, {} warnings", errors.len(), results.iter().filter(|r| r["severity"] == 1).count());
    assert!(errors.is_empty(), "spectral spectral:oas errors:\n{}", errors.join("\n"));
}

/// Every operation of the document: (method, path, operation).
pub fn operations(doc: &serde_json::Value) -> Vec<(String, String, serde_json::Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                out.push((method.clone(), path.clone(), op.clone()));
            }
        }
    }
    out
}

/// The TypeScript types openapi-typescript generates from the document compile under
/// `tsc --strict`, with one entry per operation (the issue 27 run: duplicate identifiers,
/// every operation being `handler`).
#[test]
fn typescript_types_compile_under_strict() {
    let bin = ci_dir().join("node_modules/.bin");
    let generator = find_tool("WXLAKE_OPENAPI_TYPESCRIPT", bin.join("openapi-typescript"), "openapi-typescript");
    let tsc = find_tool("WXLAKE_TSC", bin.join("tsc"), "tsc");
    let (Some(generator), Some(tsc)) = (generator, tsc) else {
        let how = "install them with `bash .ci/run` (npm, pinned, into .ci/node_modules), or set \
                   WXLAKE_OPENAPI_TYPESCRIPT / WXLAKE_TSC to the executables";
        return missing_tool("typescript_types_compile_under_strict", "openapi-typescript or tsc", how);
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = document_file(dir.path());
    let types = dir.path().join("api.d.ts");
    let out = Command::new(&generator).arg(&doc).arg("-o").arg(&types).output().expect("run openapi-typescript");
    assert!(out.status.success(), "openapi-typescript:\n{}\n{}", stdout(&out), stderr(&out));
    let out = Command::new(&tsc).args(["--strict", "--noEmit"]).arg(&types).output().expect("run tsc");
    assert!(out.status.success(), "tsc --strict:\n{}\n{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(&types).expect("types");
    let declared = text.split("export interface operations {").nth(1).expect("an operations interface");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&doc).expect("doc")).expect("doc");
    for (method, path, op) in operations(&doc) {
        let id = op["operationId"].as_str().expect("operationId");
        assert!(declared.contains(&format!("\n    {id}: {{")), "{method} {path}: no operations.{id} in the types");
    }
}

/// The GET operations a client can call on the REST port (the stream and its relay are
/// endless event streams, not JSON answers).
fn rest_get_operations(doc: &serde_json::Value) -> Vec<String> {
    let paths = doc["paths"].as_object().expect("paths");
    paths
        .iter()
        .filter(|(p, _)| {
            p.as_str() != wxlake::api::paths::V2_STREAM && p.as_str() != wxlake::api::paths::V2_STREAM_RELAY
        })
        .filter_map(|(_, item)| item["get"]["operationId"].as_str().map(str::to_string))
        .collect()
}

/// The client openapi-python-client generates from the served document has a function for
/// every operation (the issue 27 run: 7 of 16, every operationId being `handler`), and each
/// GET operation, called through it against a demo server, answers 200 with a body that
/// parses into its generated models exactly (openapi_client.py checks each shape).
#[test]
fn generated_python_client_parses_every_get_operation() {
    let Some(generator) = find_tool(
        "WXLAKE_OPENAPI_PYTHON_CLIENT",
        ci_dir().join("venv/bin/openapi-python-client"),
        "openapi-python-client",
    ) else {
        let how = "install it with `bash .ci/run` (pinned, into .ci/venv) or `.ci/venv/bin/pip install \
                   openapi-python-client==0.29.1`, or set WXLAKE_OPENAPI_PYTHON_CLIENT to its executable";
        return missing_tool("generated_python_client_parses_every_get_operation", "openapi-python-client", how);
    };
    // The generated client runs on the generator's own dependencies (httpx, attrs): the
    // Python next to it.
    let python = generator.parent().map(|d| d.join("python")).filter(|p| p.is_file()).unwrap_or("python3".into());
    let dir = tempfile::tempdir().expect("tempdir");
    let (lake, key) = demo_lake(dir.path());
    let (_server, addr) = start_server(&lake);
    let served = fetch_doc(&addr);
    let doc: serde_json::Value = serde_json::from_str(&served).expect("document");
    let doc_path = dir.path().join("openapi.json");
    std::fs::write(&doc_path, &served).expect("write the document");
    // No post hooks: they run ruff, which formats but checks nothing.
    std::fs::write(dir.path().join("client.yaml"), "package_name_override: wxlake_client\npost_hooks: []\n")
        .expect("client config");
    let client = dir.path().join("client");
    let out = Command::new(&generator)
        .args(["generate", "--meta", "none", "--fail-on-warning", "--config", "client.yaml", "--path"])
        .arg(&doc_path)
        .arg("--output-path")
        .arg(client.join("wxlake_client"))
        .current_dir(dir.path())
        .output()
        .expect("run openapi-python-client");
    assert!(out.status.success(), "openapi-python-client:\n{}\n{}", stdout(&out), stderr(&out));

    let operations = operations(&doc).len();
    let generated = walkdir(&client.join("wxlake_client/api"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "py") && !p.ends_with("__init__.py"))
        .count();
    eprintln!("openapi-python-client generated {generated} of {operations} operations");
    assert_eq!(generated, operations, "a function per operation\n{}", stderr(&out));

    let gets = rest_get_operations(&doc);
    assert!(gets.len() >= 13, "{gets:?}");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/openapi_client.py");
    let out = Command::new(&python)
        .arg(&driver)
        .arg(&client)
        .arg(format!("http://{addr}"))
        .arg(&key)
        .arg(serde_json::to_string(&gets).expect("operations"))
        .output()
        .expect("run the client driver");
    eprintln!("{}", stdout(&out));
    assert!(out.status.success(), "the generated client failed:\n{}\n{}", stdout(&out), stderr(&out));
}

/// Every file under `dir`.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
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
        for p in ["/api/v2/nearby.php", "/api/v2/pacing.php", "/api/v2/brackets.php", "/api/v2/bracket_accuracy.php"] {
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

    /// What generated clients need of every operation (issue 27 item 3): a unique
    /// operationId, a summary and a description; a 2xx JSON body with a real schema (not a
    /// bare `object`); no component schema left unused.
    #[tokio::test]
    async fn every_operation_is_named_summarized_and_typed() {
        let app = App::new().await;
        let doc = document(&app).await;
        let ops = super::operations(&doc);
        assert_eq!(ops.len(), 18, "{:?}", ops.iter().map(|(m, p, _)| format!("{m} {p}")).collect::<Vec<_>>());
        let mut ids = std::collections::BTreeSet::new();
        for (method, path, op) in &ops {
            let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path}: no operationId"));
            assert!(ids.insert(id.to_string()), "{method} {path}: operationId {id} is not unique");
            assert!(id.chars().all(|c| c.is_ascii_alphanumeric()) && id != "handler", "{id}");
            for field in ["summary", "description"] {
                assert!(op[field].as_str().is_some_and(|s| s.len() > 20), "{method} {path}: {field}: {}", op[field]);
            }
            assert!(op["security"].as_array().is_some_and(|s| !s.is_empty()), "{method} {path}: no security");
            for (status, resp) in op["responses"].as_object().unwrap() {
                let Some(schema) = resp["content"]["application/json"].get("schema") else { continue };
                if status.starts_with('2') {
                    let s = component(&doc, schema);
                    let bare = s["type"] == "object" && s.get("properties").is_none() && s.get("allOf").is_none();
                    assert!(!bare, "{method} {path} {status}: a bare object: {s}");
                }
            }
        }
        // Every component schema is referenced from somewhere else in the document.
        let text = doc.to_string();
        for name in doc["components"]["schemas"].as_object().unwrap().keys() {
            let r = format!("\"#/components/schemas/{name}\"");
            assert!(text.contains(&r), "component {name} is unused");
        }
        // Unknown stations and repeated parameters are documented (issue 27 item 4).
        let info = doc["info"]["description"].as_str().unwrap();
        assert!(info.contains("unknown station is a 400") && info.contains("given twice is a"), "{info}");
        let station = doc["paths"]["/api/v2/observations.php"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "station_code")
            .unwrap();
        let desc = station["description"].as_str().unwrap();
        assert!(desc.contains("KNYC") && desc.contains("EGLC") && desc.contains("Catalog stations (70)"), "{desc}");
        // The stream names its key's scheme.
        let stream = &doc["paths"]["/api/v2/stream"]["get"];
        assert_eq!(stream["security"], serde_json::json!([{"stream_api_key": []}]));
        assert_eq!(doc["components"]["securitySchemes"]["stream_api_key"]["in"], "query");
        let headers = &doc["paths"]["/api/v2/forecasts.php"]["get"]["responses"]["200"]["headers"];
        assert!(headers.get("X-Run-Time").is_some() && headers.get("X-Run-Signature").is_some(), "{headers}");
    }

    /// The 202 body of an ingest has exactly the fields `IngestOutcome` documents (the body
    /// is `crate::write::WriteOutcome`, serialized elsewhere: a field added there fails here
    /// until it is documented).
    #[tokio::test]
    async fn ingest_outcome_is_documented_field_for_field() {
        let app = App::new().await;
        let doc = document(&app).await;
        let keys = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let schemas = &doc["components"]["schemas"];
        let body = &doc["paths"]["/api/v2/ingest/{format}"]["post"]["responses"]["202"]["content"]["application/json"]
            ["schema"];
        assert_eq!(body["$ref"], "#/components/schemas/IngestOutcome");
        let (s, v) = app
            .ingest(
                "metar",
                "month=2026-03",
                "KNYC 081451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00781061\nnot a report\n",
            )
            .await;
        assert_eq!(s, StatusCode::ACCEPTED, "{v}");
        assert_eq!(keys(&v), keys(&schemas["IngestOutcome"]["properties"]), "{v}");
        let error = v["errors"].get(0).unwrap_or_else(|| panic!("the bad line is reported: {v}"));
        assert_eq!(keys(error), keys(&schemas["IngestLineError"]["properties"]), "{v}");
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
