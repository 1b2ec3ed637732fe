//! Durability: kill -9 the real server while it acknowledges live ingest, restart it, and
//! find every acknowledged report (WAL replay), then in the lake after a clean shutdown.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{Datelike, Duration as ChronoDuration, Timelike, Utc};

/// A minimal HTTP/1.1 client: one request per connection.
fn http(addr: &str, method: &str, path: &str, key: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    let status = resp.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = resp.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wxlake"))
}

/// Starts `wxlake serve` on a free port and returns it with its address.
fn start_server(lake: &str) -> (Child, String) {
    let mut child = bin()
        .args(["--lake", lake, "serve", "--addr", "127.0.0.1:0", "--flush-secs", "3600"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn server");
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

#[test]
fn kill_9_loses_no_acknowledged_report() {
    let dir = tempfile::tempdir().unwrap();
    let lake = format!("file://{}", dir.path().join("lake").display());
    let out = bin()
        .args(["--lake", &lake, "keys", "create", "--tier", "enterprise", "--user", "ops", "--admin"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(key.starts_with("wx_") && !key.contains('\n'), "the key alone on stdout");

    let (mut server, addr) = start_server(&lake);
    // One report per request, every minute of the last two hours (KMDW).
    let start = Utc::now() - ChronoDuration::minutes(130);
    let month = format!("{}-{:02}", start.year(), start.month());
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
        let (status, body) = http(&addr, "POST", &format!("/api/v2/ingest/metar?month={month}"), &key, &text);
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
