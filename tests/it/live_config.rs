//! The production feeds (`data/wxlake.live.toml`, what `wxlake serve --live` runs): every
//! source the API serves, for the whole catalog, within each operator's published limits;
//! and `serve --live` refusing, before any side effect, a deployment that lacks something.
//! Nothing here reaches the network: the refusals happen before any feed starts.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use wxlake::catalog::Catalog;
use wxlake::feeds::config::{AWC_CACHE, SOURCES};
use wxlake::feeds::live_config::{budget, LIVE_TOML, SERVED};
use wxlake::feeds::FeedsConfig;

fn production() -> FeedsConfig {
    FeedsConfig::from_file_text(LIVE_TOML).expect("data/wxlake.live.toml parses")
}

#[test]
fn the_production_file_parses_and_enables_every_source_the_api_serves() {
    // The embedded text is the file in the repository.
    let on_disk = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/wxlake.live.toml")).unwrap();
    assert_eq!(on_disk, LIVE_TOML);
    let cfg = production();
    let enabled = cfg.enabled();
    assert!(enabled.iter().all(|s| SOURCES.contains(s)), "{enabled:?}");
    for (what, sources) in SERVED {
        assert!(sources.iter().any(|s| enabled.contains(s)), "nothing fetches {what}");
    }
    // Every source of this build is in the file; the one left out says why.
    let tables: Vec<&str> = cfg.tables().iter().map(|t| t.0).collect();
    assert_eq!(tables, SOURCES);
    let left_out: Vec<&str> = SOURCES.iter().copied().filter(|s| !enabled.contains(s)).collect();
    assert_eq!(left_out, [AWC_CACHE]);
    assert!(LIVE_TOML.contains("# AWC's bulk cache file: left out."));
    // The settlement feeds are on: what the markets settle on and the `nws` logic needs.
    for s in ["nws_cli", "nws_dsm", "iem_onemin", "nws_hourly"] {
        assert!(enabled.contains(&s), "{s} is off");
    }
}

#[test]
fn the_production_sources_cover_the_whole_catalog() {
    let catalog = Catalog::global();
    let all: Vec<String> = catalog.all().iter().map(|s| s.code.clone()).collect();
    let us: Vec<String> = catalog.all().iter().filter(|s| s.is_us()).map(|s| s.code.clone()).collect();
    let cfg = production();
    for (name, enabled, stations) in cfg.tables() {
        if !enabled {
            continue;
        }
        // Observation, model and MOS feeds: every station; the US services: the US ones.
        let expected =
            if ["iem_asos", "iem_onemin", "nws_cli", "nws_dsm", "nws_hourly"].contains(&name) { &us } else { &all };
        assert_eq!(stations, &expected[..], "{name}");
    }
    assert!(!LIVE_TOML.lines().any(|l| l.trim_start().starts_with("stations")), "stations left to the defaults");
}

#[test]
fn each_source_stays_within_its_published_rate_limit() {
    let rates = budget(&production());
    let mut table = String::new();
    for r in &rates {
        table.push_str(&format!("{:<36} {:<26} {:>9.2} <= {}\n", r.what, r.unit, r.used, r.limit));
    }
    eprintln!("{table}");
    for r in &rates {
        assert!(r.used <= r.limit, "{} {}: {:.2} > {}\n{table}", r.what, r.unit, r.used, r.limit);
    }
    // Every host the production file polls has its row.
    for host in ["aviationweather.gov", "mesonet.agron.iastate.edu", "api.weather.gov", "nomads.ncep.noaa.gov"] {
        assert!(rates.iter().any(|r| r.what == host), "{host}\n{table}");
    }
    assert!(rates.iter().any(|r| r.what.starts_with("open_meteo") && r.unit == "calls/day"), "{table}");
    // Unpaced, a first start's catch-up of Open-Meteo runs would cross the per-minute limit:
    // the pacing is what keeps it within.
    let mut unpaced = production();
    unpaced.open_meteo.as_mut().unwrap().max_calls_per_minute = 0.0;
    let minute = budget(&unpaced).into_iter().find(|r| r.unit == "calls/minute").unwrap();
    assert!(minute.used > minute.limit, "{minute:?}");
    // Unspaced, a round of api.weather.gov polls (every station's list and forecast at
    // once) would cross its budget within a minute: the spacing is what keeps it within.
    let mut unspaced = production();
    unspaced.client.request_spacing.clear();
    let busiest = budget(&unspaced)
        .into_iter()
        .find(|r| r.what == "api.weather.gov" && r.unit == "requests in the busiest minute")
        .unwrap();
    assert!(busiest.used > busiest.limit, "{busiest:?}");
}

#[test]
fn a_config_naming_a_station_outside_the_catalog_is_refused() {
    let e =
        FeedsConfig::from_file_text("[sources.awc_metar]\nstations = [\"KNYC\", \"EGLL\"]\n").unwrap_err().to_string();
    assert!(e.contains("station \"EGLL\" is not in the station catalog (data/stations.csv"), "{e}");
    assert!(e.contains("near it: EGLC"), "{e}");
    // The example file names catalog stations only.
    let example = include_str!("../../data/wxlake.example.toml");
    FeedsConfig::from_file_text(example).unwrap();
    assert!(!example.contains("EGLL"));
}

/// Runs `wxlake` in `dir` (lake and state under it) with no WXLAKE_* settings from the
/// environment but `env`, and gives up (killing it) after 60 s: a server that started
/// would never end by itself.
fn run_bounded(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wxlake"));
    cmd.current_dir(dir).arg("--lake").arg(format!("file://{}", dir.join("lake").display())).args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("WXLAKE_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("run wxlake");
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("wxlake {args:?} did not stop: {:?}", child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), start.elapsed())
}

#[test]
fn serve_live_without_a_contact_stops_before_any_side_effect() {
    let dir = tempfile::tempdir().unwrap();
    // A port that is taken: binding first would fail with "cannot listen" instead.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let state = dir.path().join("state");
    let args = ["serve", "--live", "--addr", &addr, "--state-dir", state.to_str().unwrap()];
    let (out, took) = run_bounded(dir.path(), &args, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("serve --live needs a contact for the feeds' User-Agent"), "{err}");
    assert!(err.contains("WXLAKE_CONTACT="), "{err}");
    assert!(!err.contains("cannot listen"), "checked before binding: {err}");
    assert!(took < Duration::from_secs(20), "fails fast: {took:?}");
    assert!(!state.exists(), "no state directory, lock or WAL");
    // Opening the lake (every command does, before its own work) may create its empty
    // directory; nothing is written in it.
    let lake = dir.path().join("lake");
    assert!(!lake.exists() || std::fs::read_dir(&lake).unwrap().next().is_none(), "nothing in the lake");
    assert!(out.stdout.is_empty(), "no keys printed");

    // A placeholder contact is refused the same way.
    let (out, _) = run_bounded(dir.path(), &args, &[("WXLAKE_CONTACT", "ops@example.com")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("is a placeholder"), "{err}");
    assert!(!state.exists());

    // With a contact, a --config file naming a station outside the catalog stops it too,
    // before anything starts (and before any feed could poll).
    let config = dir.path().join("wxlake.toml");
    std::fs::write(&config, "[sources]\n[sources.awc_metar]\nstations = [\"EGLL\"]\n").unwrap();
    let with_config = [&["--config", config.to_str().unwrap()][..], &args[..]].concat();
    let (out, _) = run_bounded(dir.path(), &with_config, &[("WXLAKE_CONTACT", "ops@wxlake.test")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("station \"EGLL\" is not in the station catalog"), "{err}");
    assert!(!state.exists());
    drop(taken);
}

#[test]
fn serve_live_and_demo_together_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let (out, _) = run_bounded(
        dir.path(),
        &["serve", "--live", "--demo", "--addr", "127.0.0.1:0", "--state-dir", state.to_str().unwrap()],
        &[("WXLAKE_CONTACT", "ops@wxlake.test")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--live") && err.contains("--demo") && err.contains("cannot be used with"), "{err}");
    assert!(!state.exists());
}

/// With a contact and a `[sources]` table feeding every kind of data, `serve --live`
/// starts and runs those feeds. Every source points at a closed local port, so nothing
/// reaches the network.
#[test]
fn serve_live_with_a_contact_runs_the_feeds() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let down = "http://127.0.0.1:9";
    let config = dir.path().join("wxlake.toml");
    std::fs::write(
        &config,
        format!(
            "[sources]\nattempts = 1\n\
             [sources.awc_metar]\nbase_url = \"{down}\"\n[sources.iem_asos]\nbase_url = \"{down}\"\n\
             [sources.iem_onemin]\nbase_url = \"{down}\"\n[sources.nws_cli]\nbase_url = \"{down}\"\n\
             [sources.nws_dsm]\nbase_url = \"{down}\"\n[sources.nws_hourly]\nbase_url = \"{down}\"\n\
             [sources.open_meteo]\nbase_url = \"{down}\"\n\
             [sources.mos.urls]\nMAV = \"{down}/{{date}}{{hh}}\"\nMET = \"{down}/{{date}}{{hh}}\"\nLAV = \"{down}/{{date}}{{hh}}{{mm}}\"\n"
        ),
    )
    .unwrap();
    let state = dir.path().join("state");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wxlake"));
    for (k, _) in std::env::vars() {
        if k.starts_with("WXLAKE_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd
        .current_dir(dir.path())
        .args(["--lake", &format!("file://{}", dir.path().join("lake").display())])
        .args(["--config", config.to_str().unwrap()])
        .args(["serve", "--live", "--addr", "127.0.0.1:0", "--state-dir", state.to_str().unwrap()])
        .env("WXLAKE_CONTACT", "ops@wxlake.test")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen.iter().any(|l: &String| l.contains("wxlake listening on")) {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let text = seen.join("\n");
    assert!(text.contains("wxlake listening on"), "{text}");
    let feeds = seen.iter().find(|l| l.contains("feeds: polling")).unwrap_or_else(|| panic!("{text}"));
    assert!(feeds.contains("polling 8 source(s)"), "{feeds}");
    for s in ["awc_metar", "iem_asos", "iem_onemin", "nws_cli", "nws_dsm", "nws_hourly", "open_meteo", "mos"] {
        assert!(feeds.contains(s), "{s}: {feeds}");
    }
    assert!(state.join("serve.lock").exists());
}
