//! Durability: kill -9 the real server while it acknowledges live ingest, restart it, and
//! find every acknowledged report (WAL replay), then in the lake after a clean shutdown.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{Datelike, Duration as ChronoDuration, Timelike, Utc};

/// A minimal HTTP/1.1 client: one request per connection.
pub(crate) fn http(addr: &str, method: &str, path: &str, key: &str, body: &str) -> (u16, String) {
    try_http(addr, method, path, key, body).expect("an HTTP response")
}

pub(crate) fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wxlake"))
}

/// Starts `wxlake serve` on a free port and returns it with its address.
pub(crate) fn start_server(lake: &str) -> (Child, String) {
    start_server_flushing(lake, 3600)
}

/// [`start_server`] flushing the WAL to the lake every `flush_secs`.
fn start_server_flushing(lake: &str, flush_secs: u64) -> (Child, String) {
    let mut cmd = bin();
    cmd.args(["--lake", lake, "serve", "--addr", "127.0.0.1:0", "--flush-secs", &flush_secs.to_string()]);
    start_command(cmd)
}

/// Runs a `serve` command line and returns it with its address once it listens.
pub(crate) fn start_command(mut cmd: Command) -> (Child, String) {
    let mut child = cmd.stderr(Stdio::piped()).stdout(Stdio::null()).spawn().expect("spawn server");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.split("listening on http://").nth(1) {
            let addr = rest.split_whitespace().next().unwrap().to_string();
            // Keep draining stderr so the server never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return (child, addr);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("server did not start");
}

/// An Enterprise admin key for the server of `lake`, made by `wxlake keys create` (the key
/// alone on stdout).
pub(crate) fn admin_key(lake: &str) -> String {
    let out = bin()
        .args(["--lake", lake, "keys", "create", "--tier", "enterprise", "--user", "ops", "--admin"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(key.starts_with("wx_") && !key.contains('\n'), "the key alone on stdout");
    key
}

#[test]
fn kill_9_loses_no_acknowledged_report() {
    let dir = tempfile::tempdir().unwrap();
    let lake = format!("file://{}", dir.path().join("lake").display());
    let key = admin_key(&lake);

    let (mut server, addr) = start_server(&lake);
    // One report per request, every minute of the last two hours (KMDW), dated by the
    // server's clock (no `month`: the window may cross a month's end).
    let start = Utc::now() - ChronoDuration::minutes(130);
    let mut acked = Vec::new();
    for i in 0..120 {
        let t = start + ChronoDuration::minutes(i);
        let text = format!(
            "KMDW {:02}{:02}{:02}Z AUTO 27008KT 10SM CLR 05/M02 A3012 RMK T{:04}1017 MADISHF",
            t.day(),
            t.hour(),
            t.minute(),
            50 + i % 7
        );
        let (status, body) = http(&addr, "POST", "/api/v2/ingest/metar", &key, &text);
        assert_eq!(status, 202, "{body}");
        acked.push(t.format("%Y-%m-%d %H:%M:00").to_string());
        if i == 90 {
            // Kill mid-stream: what was acknowledged must survive.
            break;
        }
    }
    server.kill().expect("kill -9");
    server.wait().unwrap();

    let (mut server, addr) = start_server(&lake);
    let q = format!(
        "/api/v2/observations.php?station_code=KMDW&start_time={}&end_time={}",
        (start - ChronoDuration::minutes(1)).format("%Y-%m-%dT%H:%M:%SZ"),
        (start + ChronoDuration::hours(23)).format("%Y-%m-%dT%H:%M:%SZ")
    );
    let (status, body) = http(&addr, "GET", &q, &key, "");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let got: Vec<String> =
        v.as_array().unwrap().iter().map(|o| o["observation_time"].as_str().unwrap().to_string()).collect();
    for t in &acked {
        assert!(
            got.contains(t),
            "acknowledged report at {t} lost after kill -9 ({} of {} back)",
            got.len(),
            acked.len()
        );
    }

    // A clean shutdown (SIGTERM) flushes the WAL into the lake.
    let pid = server.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    server.wait().unwrap();
    let out = bin()
        .args([
            "--lake",
            &lake,
            "sql",
            "SELECT count(*) AS n FROM observations WHERE station_code = 'KMDW'",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("n\n{}\n", acked.len()));
}

/// Posters keep acknowledging unique reports while the server flushes every second and is
/// killed with SIGKILL at random moments, restarted, and killed again. Afterwards every
/// acknowledged report is in the lake exactly once (reports whose request was cut by the
/// kill may be there too: durable but never acknowledged).
#[test]
fn kill_9_loop_under_load_keeps_every_acknowledged_report_once() {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    const ROUNDS: usize = 6;
    const POSTERS: u64 = 6;
    const STATIONS: [&str; 8] = ["KNYC", "KLGA", "KJFK", "KEWR", "KBOS", "KPHL", "KDCA", "KMDW"];
    let dir = tempfile::tempdir().unwrap();
    let lake = format!("file://{}", dir.path().join("lake").display());
    // One key per poster: the per-key rate limit stays out of the way.
    let keys: Vec<String> = (0..POSTERS)
        .map(|p| {
            let user = format!("ops{p}");
            let out = bin()
                .args(["--lake", &lake, "keys", "create", "--tier", "enterprise", "--user", &user, "--admin"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        })
        .collect();

    // Batch m: one report per station at one minute of the last two days, with a T-group
    // variant past the first 2,800 batches, so every report is its own row (the natural
    // key holds the raw text) and a batch shares one month.
    let base = Utc::now() - ChronoDuration::minutes(5);
    let batch = move |m: u64| -> (String, Vec<String>) {
        let t = base - ChronoDuration::minutes((m % 2800) as i64);
        let variant = m / 2800;
        let lines = STATIONS
            .iter()
            .map(|station| {
                format!(
                    "{station} {:02}{:02}{:02}Z AUTO 27008KT 10SM CLR 05/M02 A3012 RMK AO2 T{:04}10{:02}",
                    t.day(),
                    t.hour(),
                    t.minute(),
                    40 + (m % 10),
                    17 + variant % 80
                )
            })
            .collect();
        (format!("{}-{:02}", t.year(), t.month()), lines)
    };
    let mut seed = Utc::now().timestamp_micros() as u64 | 1;
    eprintln!("kill loop seed {seed}");
    let next = AtomicU64::new(0);
    let acked = Mutex::new(Vec::<String>::new());
    for round in 0..ROUNDS {
        let (mut server, addr) = start_server_flushing(&lake, 1);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let run_for = Duration::from_millis(300 + seed % 2200);
        let stop = Arc::new(AtomicBool::new(false));
        std::thread::scope(|s| {
            for key in &keys {
                let (stop, addr, next, acked) = (Arc::clone(&stop), &addr, &next, &acked);
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let (month, lines) = batch(next.fetch_add(1, Ordering::Relaxed));
                        let path = format!("/api/v2/ingest/metar?month={month}");
                        match try_http(addr, "POST", &path, key, &lines.join("\n")) {
                            Some((202, _)) => acked.lock().unwrap().extend(lines),
                            // Over the key's rate limit: not acknowledged, try again later.
                            Some((429, _)) => std::thread::sleep(Duration::from_millis(200)),
                            Some((status, body)) => panic!("{status}: {body}"),
                            None => {} // cut by the kill: not acknowledged
                        }
                    }
                });
            }
            std::thread::sleep(run_for);
            server.kill().expect("kill -9");
            server.wait().unwrap();
            stop.store(true, Ordering::Relaxed);
        });
        eprintln!("round {round}: killed after {run_for:?}, {} acknowledged so far", acked.lock().unwrap().len());
    }
    // A last start replays the WAL; a clean stop flushes it.
    let (server, _addr) = start_server_flushing(&lake, 1);
    Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    let mut server = server;
    server.wait().unwrap();
    let out = bin().args(["--lake", &lake, "sql", "SELECT raw FROM observations", "--format", "csv"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stored: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().skip(1).map(str::to_string).collect();
    let distinct: HashSet<&String> = stored.iter().collect();
    let acked = acked.into_inner().unwrap();
    assert!(acked.len() > 100, "the loop acknowledged too little to prove anything: {}", acked.len());
    let missing: Vec<&String> = acked.iter().filter(|l| !distinct.contains(l)).collect();
    eprintln!(
        "kill loop: {ROUNDS} kills, {} acknowledged, {} found, {} stored rows, {} duplicated",
        acked.len(),
        acked.len() - missing.len(),
        stored.len(),
        stored.len() - distinct.len()
    );
    assert!(
        missing.is_empty(),
        "{} acknowledged reports lost, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(3)]
    );
    assert_eq!(stored.len(), distinct.len(), "a report stored twice");
}

/// One request; `None` when the connection fails or is cut short (the server was killed).
fn try_http(addr: &str, method: &str, path: &str, key: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let status = resp.split(' ').nth(1).and_then(|c| c.parse().ok())?;
    let body = resp.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Some((status, body))
}
