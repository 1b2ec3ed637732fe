//! Storage faults as a client and a load balancer see them, on the real server: the WAL's
//! disk fills up (a small tmpfs mounted over the state directory: root only, as CI runs),
//! and the lake hangs (an S3 endpoint that accepts connections and never answers).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use chrono::{Datelike, Duration as ChronoDuration, Timelike, Utc};

use crate::crash::{bin, start_server};

/// One request on its own connection: status, head, body.
fn request(addr: &str, method: &str, path: &str, key: &str, body: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let status = resp.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("a status");
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// A server process, killed on drop (an assertion that ends a test early must not leave it
/// running on the test's tmpfs or port).
struct Running(std::process::Child);

impl Running {
    /// SIGTERM (a clean shutdown flushes the WAL) and wait.
    fn stop(mut self) {
        Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A tmpfs mounted at a path; unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// `None` when mounting is not allowed here (not root).
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn admin_key(lake: &str) -> String {
    let out = bin()
        .args(["--lake", lake, "keys", "create", "--tier", "enterprise", "--user", "ops", "--admin"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// 100 METARs of KMDW, one a minute, the last `minutes_ago` minutes ago (about 7 KB: more
/// than a page, so a full file system cannot take it into a page the WAL already has),
/// dated by the server's clock: no month is given, as the minutes may cross a month's end.
fn reports(minutes_ago: i64) -> String {
    let last = Utc::now() - ChronoDuration::minutes(minutes_ago);
    (0..100)
        .map(|i| {
            let t = last - ChronoDuration::minutes(99 - i);
            format!(
                "KMDW {:02}{:02}{:02}Z AUTO 27008KT 10SM CLR 05/M02 A3012 RMK T00501017\n",
                t.day(),
                t.hour(),
                t.minute()
            )
        })
        .collect()
}

/// `/healthz` until `want(status, body)` holds (probes are cached a few seconds).
fn healthz_until(addr: &str, want: impl Fn(u16, &serde_json::Value) -> bool) -> (u16, serde_json::Value) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _, body) = request(addr, "GET", "/healthz", "", "");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        if want(status, &v) || Instant::now() > deadline {
            return (status, v);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The WAL's disk full: ingest answers 507 with `Retry-After` (nothing acknowledged),
/// `/healthz` says `degraded` naming the WAL and answers 503 so a load balancer routes
/// away; once space is freed both recover, and every acknowledged report reaches the lake.
#[test]
fn a_full_wal_disk_answers_507_and_degrades_healthz_until_space_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let lake_dir = dir.path().join("lake");
    let Some(_fs) = Tmpfs::mount(&dir.path().join("lake.state"), "4m") else {
        assert!(std::env::var("CI").is_err(), "CI runs as root and must mount the tmpfs");
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let lake = format!("file://{}", lake_dir.display());
    let key = admin_key(&lake);
    let (server, addr) = start_server(&lake);
    let server = Running(server);
    let ingest = |minutes_ago: i64| request(&addr, "POST", "/api/v2/ingest/metar", &key, &reports(minutes_ago));
    let (status, _, body) = ingest(201);
    assert_eq!(status, 202, "{body}");
    let (status, v) = healthz_until(&addr, |s, _| s == 200);
    assert_eq!((status, v["status"].as_str()), (200, Some("ok")), "{v}");

    // Fill the state directory's file system.
    let filler = dir.path().join("lake.state").join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    while f.write_all(&[7u8; 64 * 1024]).and_then(|()| f.sync_all()).is_ok() {}
    drop(f);
    let (status, head, body) = ingest(101);
    assert_eq!(status, 507, "{body}");
    assert!(head.contains("retry-after: 60"), "{head}");
    let err: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(err["error"].as_str().unwrap().contains("storage is full"), "{err}");
    let (status, v) = healthz_until(&addr, |s, _| s == 503);
    assert_eq!((status, v["status"].as_str()), (503, Some("degraded")), "{v}");
    assert_eq!(v["reasons"][0]["part"], "wal", "{v}");
    assert!(v["reasons"][0]["reason"].as_str().unwrap().contains("No space left"), "{v}");

    std::fs::remove_file(&filler).unwrap();
    let (status, v) = healthz_until(&addr, |s, _| s == 200);
    assert_eq!((status, v["status"].as_str()), (200, Some("ok")), "{v}");
    let (status, _, body) = ingest(1);
    assert_eq!(status, 202, "{body}");

    // A clean shutdown flushes: both acknowledged inputs are in the lake, the refused one not.
    server.stop();
    let out = bin()
        .args(["--lake", &lake, "sql", "SELECT count(*) AS n FROM observations", "--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n\n200\n", "{}", String::from_utf8_lossy(&out.stderr));
}

/// A TCP proxy that can freeze: from then on it forwards nothing, on the connections it
/// has and the ones it takes, as a hung S3 endpoint behaves (connections accepted,
/// no answer); thawed, it forwards what it held.
struct FreezableProxy {
    addr: String,
    frozen: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl FreezableProxy {
    fn start(upstream: &str) -> FreezableProxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let upstream = upstream.trim_start_matches("http://").to_string();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = format!("http://{}", listener.local_addr().unwrap());
        let frozen = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&frozen);
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let Ok(server) = TcpStream::connect(&upstream) else { continue };
                for (mut from, mut to) in [(client.try_clone().unwrap(), server.try_clone().unwrap()), (server, client)]
                {
                    let flag = Arc::clone(&flag);
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16 * 1024];
                        loop {
                            let n = match from.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            while flag.load(Ordering::SeqCst) {
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            if to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                }
            }
        });
        FreezableProxy { addr, frozen }
    }

    fn set_frozen(&self, frozen: bool) {
        self.frozen.store(frozen, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for FreezableProxy {
    fn drop(&mut self) {
        self.set_frozen(false);
    }
}

/// The S3 lake hangs (its endpoint takes connections and never answers): a GET that needs
/// the lake answers 503 with `Retry-After` within the read deadline instead of a 500 after
/// 30 s, `/healthz` says `degraded` naming the lake (503), and both recover when the
/// store answers again.
#[test]
fn a_hung_lake_answers_503_within_the_read_deadline_and_degrades_healthz() {
    let Some(lake) = crate::s3::S3Lake::new("hung") else { return };
    // Two days of KMDW reports in the lake (bare lines, March 2024).
    let lines: String = (0..48)
        .map(|h| format!("KMDW {:02}{:02}51Z 27008KT 10SM CLR 05/M02 A3012 RMK T00501017\n", 1 + h / 24, h % 24))
        .collect();
    let file = lake.dir.path().join("kmdw.txt");
    std::fs::write(&file, lines).unwrap();
    lake.ok(&["ingest", "metar", "--month", "2024-03", file.to_str().unwrap()]);
    let state = lake.dir.path().join("state");
    let state = state.to_str().unwrap();
    let key = lake.ok(&["keys", "--state-dir", state, "create", "--tier", "enterprise", "--user", "ops", "--admin"]);
    let key = key.lines().rfind(|l| l.starts_with("wx_")).expect("a key").trim().to_string();

    let proxy = FreezableProxy::start(&lake.moto.endpoint);
    let mut cmd = bin();
    crate::s3::aws_env(&mut cmd, &proxy.addr, "testing");
    cmd.arg("--lake").arg(lake.url());
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--state-dir", state, "--flush-secs", "3600"]);
    cmd.args(["--http-read-deadline-secs", "3"]);
    let (server, addr) = crate::crash::start_command(cmd);
    let _server = Running(server);
    let day = |d: u32| {
        format!("/api/v2/observations.php?station_code=KMDW&start_time=2024-03-0{d}T00:00:00Z&end_time=2024-03-0{d}T23:59:00Z")
    };
    let (status, _, body) = request(&addr, "GET", &day(1), &key, "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&body).unwrap().as_array().map(Vec::len), Some(24), "{body}");
    let (status, v) = healthz_until(&addr, |s, _| s == 200);
    assert_eq!(status, 200, "{v}");

    proxy.set_frozen(true);
    let asked = Instant::now();
    let (status, head, body) = request(&addr, "GET", &day(2), &key, "");
    let took = asked.elapsed();
    assert_eq!(status, 503, "{body}");
    assert!(head.contains("retry-after: 5"), "{head}");
    assert!(body.contains("did not answer in time"), "{body}");
    assert!(took < Duration::from_secs(10), "answered after {took:?}");
    let (status, v) = healthz_until(&addr, |s, _| s == 503);
    assert_eq!(
        (status, v["status"].as_str(), v["reasons"][0]["part"].as_str()),
        (503, Some("degraded"), Some("lake")),
        "{v}"
    );

    proxy.set_frozen(false);
    let (status, v) = healthz_until(&addr, |s, _| s == 200);
    assert_eq!((status, v["status"].as_str()), (200, Some("ok")), "{v}");
    let (status, _, body) = request(&addr, "GET", &day(2), &key, "");
    assert_eq!(status, 200, "{body}");
}
