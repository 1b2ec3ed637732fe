//! The lake on S3, for real: every command against a moto S3 server this module starts on
//! 127.0.0.1 (one process shared by the tests, a bucket each), configured only through the
//! `AWS_*` environment as an operator would. Moto comes from `.ci/venv` (installed by
//! `.ci/run`), else from the PATH's `python3`; without it these tests say so loudly and skip
//! (under `CI=true` they fail).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path as FsPath, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::cluster::{assert_same_tables, derived_rows_of, files_under, Cluster};
use crate::support::{comparable_columns, fixture, wxlake};

/// A moto S3 server, killed when the last test using it lets go.
pub(crate) struct Moto {
    child: Mutex<Child>,
    pub(crate) endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// A Python with moto's server importable: `.ci/venv`'s, else the PATH's `python3`.
fn moto_python() -> Option<PathBuf> {
    let venv = FsPath::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python");
    [venv, PathBuf::from("python3")].into_iter().find(|py| {
        Command::new(py)
            .args(["-c", "import moto.server"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Starts moto on a free loopback port. `auth` makes it check credentials (it accepts any
/// by default). The server exits when this test process does, even if it is killed.
fn start_moto(auth: bool) -> Option<Moto> {
    let Some(py) = moto_python() else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "moto is missing under CI: .ci/run installs it");
        eprintln!(
            "\n*** SKIPPED: no moto S3 server (run .ci/run, or pip install 'moto[server]' into .ci/venv); \
             the S3 lake tests did not run ***\n"
        );
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // A watchdog thread ends the server when its parent (this test binary) is gone.
    let script = format!(
        "import os, sys, threading, time\n\
         parent = os.getppid()\n\
         def watch():\n    while os.getppid() == parent: time.sleep(0.5)\n    os._exit(0)\n\
         threading.Thread(target=watch, daemon=True).start()\n\
         from moto.server import main\n\
         main(['-H', '127.0.0.1', '-p', '{port}'])\n"
    );
    let mut cmd = Command::new(py);
    cmd.args(["-c", &script]).stdout(Stdio::null()).stderr(Stdio::null());
    if auth {
        cmd.env("INITIAL_NO_AUTH_ACTION_COUNT", "0");
    }
    let child = cmd.spawn().expect("start moto");
    let moto = Moto { child: Mutex::new(child), endpoint: format!("http://127.0.0.1:{port}") };
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "moto did not start on port {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(moto)
}

/// The module's moto server, started by the first test that needs it.
fn shared_moto() -> Option<Arc<Moto>> {
    static SHARED: Mutex<Weak<Moto>> = Mutex::new(Weak::new());
    let mut slot = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = slot.upgrade() {
        return Some(m);
    }
    let m = Arc::new(start_moto(false)?);
    *slot = Arc::downgrade(&m);
    Some(m)
}

/// One test's bucket on the shared server, and a scratch directory.
pub(crate) struct S3Lake {
    pub(crate) moto: Arc<Moto>,
    bucket: String,
    pub(crate) dir: tempfile::TempDir,
}

impl S3Lake {
    /// A new bucket, or `None` (skipped) without moto.
    pub(crate) fn new(name: &str) -> Option<S3Lake> {
        let moto = shared_moto()?;
        let bucket = format!("{name}-{}", std::process::id());
        let (status, body) = raw_http(&moto.endpoint, "PUT", &format!("/{bucket}"));
        assert_eq!(status, 200, "create bucket {bucket}: {body}");
        Some(S3Lake { moto, bucket, dir: tempfile::tempdir().unwrap() })
    }

    pub(crate) fn url(&self) -> String {
        format!("s3://{}/wx/lake", self.bucket)
    }

    /// The binary on this lake, configured through the environment only.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
        aws_env(&mut c, &self.moto.endpoint, "testing");
        // What it logs is what an operator sees (`-v` where a test needs more).
        c.env_remove("RUST_LOG");
        c.arg("--lake").arg(self.url()).args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run wxlake")
    }

    /// Runs and insists on success.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(o.status.success(), "wxlake {args:?}: {}", err(&o));
        err(&o) + &out(&o)
    }

    /// One CSV value of a query.
    fn scalar(&self, q: &str) -> String {
        let o = self.run(&["sql", q, "--format", "csv"]);
        assert!(o.status.success(), "{q}: {}", err(&o));
        out(&o).lines().nth(1).unwrap_or_default().to_string()
    }

    /// A client of the bucket, to look at what the commands left.
    fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::new(
            AmazonS3Builder::new()
                .with_endpoint(&self.moto.endpoint)
                .with_allow_http(true)
                .with_bucket_name(&self.bucket)
                .with_region("us-east-1")
                .with_access_key_id("testing")
                .with_secret_access_key("testing")
                .build()
                .unwrap(),
        )
    }

    /// Every object under the lake root: path relative to it -> size.
    fn objects(&self) -> BTreeMap<String, u64> {
        let store = self.store();
        let metas: Vec<_> = block(store.list(Some(&Path::from("wx/lake"))).try_collect::<Vec<_>>()).unwrap();
        metas.into_iter().map(|m| (m.location.as_ref().trim_start_matches("wx/lake/").to_string(), m.size)).collect()
    }

    /// The files of the latest snapshot of the Delta table at `table` (relative to the
    /// lake root), read from its log in the bucket: (path relative to the root, partition
    /// directory).
    fn snapshot(&self, table: &str) -> Vec<(String, String)> {
        let url = url::Url::parse(&format!("s3://{}/wx/lake/{table}/", self.bucket)).unwrap();
        let loaded = block(wxlake::lake::delta::load(self.store(), &url, wxlake::lake::delta::At::Latest)).unwrap();
        let Some(t) = loaded else { return vec![] };
        let files = wxlake::lake::delta::active_files(&t, &Path::from(format!("wx/lake/{table}"))).unwrap();
        files
            .into_iter()
            .map(|f| {
                let dir = format!("{table}/{}", f.partition_dir());
                (f.location.as_ref().trim_start_matches("wx/lake/").to_string(), dir)
            })
            .collect()
    }

    /// Parquet files per partition directory of `table` in its latest snapshot (the files
    /// a commit replaced stay in the bucket for the keep time, in no snapshot).
    fn files_per_partition(&self, table: &str) -> BTreeMap<String, usize> {
        let mut per = BTreeMap::new();
        for (_, dir) in self.snapshot(table) {
            *per.entry(dir).or_insert(0) += 1;
        }
        per
    }

    /// Nothing of an unfinished publish left behind (no staged file), and every file the
    /// snapshot of every table names is in the bucket.
    fn assert_no_leftovers(&self) {
        let objects = self.objects();
        let left: Vec<_> = objects.keys().filter(|k| k.starts_with("_staging/")).collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        let tables: std::collections::BTreeSet<&str> =
            objects.keys().filter_map(|k| k.split_once("/_delta_log/").map(|(t, _)| t)).collect();
        assert!(!tables.is_empty(), "no Delta table in {:?}", objects.keys().collect::<Vec<_>>());
        for t in tables {
            for (k, _) in self.snapshot(t) {
                assert!(objects.contains_key(&k), "{k} of {t}'s snapshot is missing");
            }
        }
    }

    /// The routine KCVG day split into `n` files (so one partition gets `n` files).
    fn kcvg_parts(&self, n: usize) -> Vec<String> {
        let text = std::fs::read_to_string(fixture("metar/IEM_KCVG_2024-03-01_routine.tsv")).unwrap();
        let (head, rows): (Vec<&str>, Vec<&str>) =
            text.lines().partition(|l| l.starts_with('#') || l.starts_with("station"));
        (0..n)
            .map(|i| {
                let p = self.dir.path().join(format!("kcvg-{i}.tsv"));
                let mine: Vec<&str> = rows.iter().skip(i).step_by(n).copied().collect();
                std::fs::write(&p, format!("{}\n{}\n", head.join("\n"), mine.join("\n"))).unwrap();
                p.display().to_string()
            })
            .collect()
    }
}

/// The environment an operator sets for an S3-compatible endpoint (path-style requests
/// are the default).
pub(crate) fn aws_env(c: &mut Command, endpoint: &str, secret: &str) {
    c.env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env("AWS_REGION", "us-east-1");
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// A bare HTTP/1.1 request (moto accepts unsigned bucket creation): status and body.
fn raw_http(endpoint: &str, method: &str, path: &str) -> (u16, String) {
    let addr = endpoint.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let status = resp.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, resp)
}

/// Reports of three stations the daily_extremes job has days for.
const AWC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/real/metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json");

#[test]
fn ingest_sql_compact_and_jobs_run_on_an_s3_lake() {
    let Some(lake) = S3Lake::new("cmds") else { return };
    for part in lake.kcvg_parts(3) {
        let said = lake.ok(&["ingest", "metar", &part]);
        // The first creates the tables: finding none there yet is no error to print.
        assert!(!said.contains("ERROR"), "{said}");
    }
    assert_eq!(lake.scalar("SELECT count(*) FROM observations"), "24");
    assert!(lake.files_per_partition("observations").values().any(|&n| n == 3), "three ingests, three files");
    // Idempotent on S3 as locally.
    let again = lake.ok(&["ingest", "metar", fixture("metar/IEM_KCVG_2024-03-01_routine.tsv").to_str().unwrap()]);
    assert!(again.contains("stored 0, duplicate 24"), "{again}");

    let raw_parquet = |lake: &S3Lake| {
        lake.objects().keys().filter(|k| k.starts_with("observations/") && k.ends_with(".parquet")).count()
    };
    let before = raw_parquet(&lake);
    let compacted = lake.ok(&["compact", "--table", "observations"]);
    assert!(compacted.contains("observations:"), "{compacted}");
    assert!(lake.files_per_partition("observations").values().all(|&n| n == 1));
    assert_eq!(lake.scalar("SELECT count(*) FROM observations"), "24");
    lake.assert_no_leftovers();
    // The replaced files stay for the keep time, in no snapshot (queries planned on an
    // older one still read them); a vacuum past the keep time deletes them.
    let merged = lake.files_per_partition("observations").values().sum::<usize>();
    assert_eq!(raw_parquet(&lake), before + merged, "{:?}", lake.objects());
    lake.ok(&["--keep-replaced-secs", "0", "compact", "--table", "observations"]);
    assert_eq!(raw_parquet(&lake), merged, "{:?}", lake.objects());
    assert_eq!(lake.scalar("SELECT count(*) FROM observations"), "24");

    // Jobs on a lake of their own: a full run goes chunk by chunk over every day between
    // the first and last report, and KCVG's 2024 day is far from AWC's 2026 ones.
    let Some(lake) = S3Lake::new("jobs") else { return };
    lake.ok(&["ingest", "metar", AWC]);
    lake.ok(&["jobs", "run", "daily_extremes"]);
    let q = "SELECT count(*) || '/' || count(DISTINCT logic) FROM daily_extremes WHERE station_code = 'KNYC'";
    let rows = lake.scalar(q);
    assert!(rows.ends_with("/2"), "{rows}");
    // A second run replaces its output (copy + delete on S3, no rename): same rows, once.
    lake.ok(&["jobs", "run", "daily_extremes"]);
    assert_eq!(lake.scalar(q), rows);
    assert_eq!(lake.scalar("SELECT count(*) FROM job_runs WHERE job = 'daily_extremes'"), "2");
    lake.assert_no_leftovers();
}

/// A running `wxlake serve`: stopped with SIGTERM by [`sigterm`], killed if a failing
/// assertion ends the test first (no server left running after it).
struct Served(Option<Child>);

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `wxlake serve` on the lake and returns it with its address once it listens.
fn serve(lake: &S3Lake, extra: &[&str]) -> (Served, String) {
    let mut args = vec!["serve", "--addr", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut child = lake.cmd(&args).stderr(Stdio::piped()).stdout(Stdio::null()).spawn().expect("spawn serve");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.split("listening on http://").nth(1) {
            let addr = rest.split_whitespace().next().unwrap().to_string();
            // Keep draining stderr so the server never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return (Served(Some(child)), addr);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("serve did not start");
}

fn sigterm(mut served: Served) {
    let Some(mut child) = served.0.take() else { return };
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
}

#[test]
fn serve_needs_a_local_state_dir_compacts_and_flushes_to_s3() {
    let Some(lake) = S3Lake::new("serve") else { return };
    let o = lake.run(&["serve", "--addr", "127.0.0.1:0"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("a remote lake needs --state-dir"), "{}", err(&o));
    let state = lake.dir.path().join("state");
    let state = state.to_str().unwrap();

    // The hourly compaction: with an hour between flushes it runs at start-up, then hourly.
    for part in lake.kcvg_parts(2) {
        lake.ok(&["ingest", "metar", &part]);
    }
    let (server, _) = serve(&lake, &["--state-dir", state, "--flush-secs", "3600"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while lake.files_per_partition("observations").values().any(|&n| n > 1) {
        assert!(Instant::now() < deadline, "serve did not compact: {:?}", lake.files_per_partition("observations"));
        std::thread::sleep(Duration::from_millis(200));
    }
    sigterm(server);
    assert_eq!(lake.scalar("SELECT count(*) FROM observations"), "24");

    // Live ingest through the WAL (local, in the state dir), flushed to the S3 lake.
    let key = lake.ok(&["keys", "--state-dir", state, "create", "--tier", "enterprise", "--user", "ops", "--admin"]);
    let key = key.lines().rfind(|l| l.starts_with("wx_")).expect("a key").trim().to_string();
    let (child, addr) = serve(&lake, &["--state-dir", state, "--flush-secs", "1"]);
    let text = "KMDW 011251Z 27008KT 10SM CLR 05/M02 A3012 RMK T00501017\nKMDW 011351Z 27008KT 10SM CLR 06/M02 A3012";
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /api/v2/ingest/metar?month=2024-03 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 202"), "{resp}");
    // The one-second flush puts the reports in the lake while the server runs.
    let deadline = Instant::now() + Duration::from_secs(30);
    while lake.scalar("SELECT count(*) FROM observations WHERE station_code = 'KMDW'") != "2" {
        assert!(Instant::now() < deadline, "not flushed to the S3 lake");
        std::thread::sleep(Duration::from_millis(300));
    }

    // A model run through the same endpoint: the flush stores it and the server's fresh
    // job runs publish its forecast_daily rows to the S3 lake while it serves.
    let run = chrono::Utc::now() - chrono::Duration::hours(6);
    let run = chrono::DateTime::from_timestamp(run.timestamp() - run.timestamp() % 21_600, 0).unwrap();
    let rows: Vec<_> = (0..=48).map(|h| crate::support::knyc_forecast("GFS", run, h, 50.0 + h as f64 / 4.0)).collect();
    let csv = wxlake::decode::forecast_rows::encode_forecast_csv(&rows);
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /api/v2/ingest/forecasts HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: text/csv\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{csv}",
        csv.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 202"), "{resp}");
    let q = "SELECT count(*) FROM forecast_daily WHERE location_name = 'KNYC' AND model = 'GFS'";
    let deadline = Instant::now() + Duration::from_secs(60);
    while lake.run(&["sql", q, "--format", "csv"]).status.code() != Some(0) || lake.scalar(q) == "0" {
        assert!(Instant::now() < deadline, "serve published no forecast_daily rows to the S3 lake");
        std::thread::sleep(Duration::from_millis(500));
    }
    // The accuracy jobs downstream follow; a shutdown in the middle of one would leave its
    // claims for recovery (docs/lake.md, "S3 lakes"), so the server is stopped once they are done.
    let mut quiet = 0;
    while quiet < 10 {
        let claimed = lake.objects().keys().any(|k| k.starts_with("_claims/"));
        quiet = if claimed { 0 } else { quiet + 1 };
        assert!(Instant::now() < deadline, "the fresh job runs never finished: {:?}", lake.objects().keys());
        std::thread::sleep(Duration::from_millis(300));
    }
    sigterm(child);
    assert_eq!(lake.scalar("SELECT count(*) FROM observations"), "26");
    assert_eq!(lake.scalar("SELECT count(*) FROM forecasts"), "49");
    let runs = lake.scalar("SELECT count(*) FROM job_runs WHERE job = 'forecast_daily' AND status = 'ok'");
    assert_ne!(runs, "0", "the server's run of forecast_daily is recorded");
    lake.assert_no_leftovers();
}

/// A lake of the former layout on S3 (Parquet directories and `_txn` records, no Delta
/// log) converts on the first command that opens it: the files its readers saw, once; the
/// copies its records hid deleted with the records.
#[test]
fn a_lake_of_the_former_layout_converts_on_s3() {
    let Some(lake) = S3Lake::new("upgrade") else { return };
    lake.ok(&["ingest", "metar", fixture("metar/IEM_KCVG_2024-03-01_routine.tsv").to_str().unwrap()]);
    let rows = lake.scalar("SELECT count(*) FROM observations");
    let store = lake.store();
    let (file, dir) = lake.snapshot("observations").into_iter().next().unwrap();
    let (file, dir) = (Path::from(format!("wx/lake/{file}")), Path::from(format!("wx/lake/{dir}")));
    // Back to the former layout: no log; a swap that committed after a crash (the replaced
    // copy still there), one that crashed while writing (its new copy never committed).
    let (old, unfinished) = (dir.clone().join("old.parquet"), dir.clone().join("unfinished.parquet"));
    block(async {
        let log: Vec<Path> = store
            .list(Some(&Path::from("wx/lake/observations/_delta_log")))
            .map_ok(|m| m.location)
            .try_collect()
            .await
            .unwrap();
        for p in log {
            store.delete(&p).await.unwrap();
        }
        for copy in [&old, &unfinished] {
            store.copy(&file, copy).await.unwrap();
        }
        let committed = serde_json::json!({"id": "c1", "state": "committed", "add": [file.to_string()],
            "remove": [old.to_string()], "created_at": chrono::Utc::now().timestamp()});
        let writing = serde_json::json!({"id": "w1", "state": "writing", "add": [unfinished.to_string()],
            "remove": [], "created_at": 0});
        for (id, rec) in [("c1", committed), ("w1", writing)] {
            let p = Path::from(format!("wx/lake/_txn/{id}.json"));
            store.put(&p, PutPayload::from(rec.to_string())).await.unwrap();
        }
    });
    let said = lake.ok(&["lake", "upgrade"]);
    assert!(said.contains("observations: converted (1 files)"), "{said}");
    assert_eq!(lake.scalar("SELECT count(*) FROM observations"), rows);
    let left: Vec<Path> = block(store.list(Some(&dir)).map_ok(|m| m.location).try_collect::<Vec<_>>()).unwrap();
    assert_eq!(left, vec![file], "the hidden copies are gone");
    assert!(lake.objects().keys().all(|k| !k.starts_with("_txn/")), "{:?}", lake.objects());
    let again = lake.ok(&["lake", "upgrade"]);
    assert!(again.contains("observations: already a Delta table"), "{again}");
}

/// Runs `n` copies of a command at once while a reader checks `check` until they end.
fn race(lake: &S3Lake, args: &[&str], n: usize, check: &str, expected: &str) -> Vec<Output> {
    let children: Vec<Child> =
        (0..n).map(|_| lake.cmd(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()).collect();
    let mut reads = 0;
    let mut children: Vec<Option<Child>> = children.into_iter().map(Some).collect();
    let mut outputs = Vec::new();
    loop {
        // Readers during the race read one snapshot each: never a row twice or missing,
        // and never a file gone (replaced files stay for the keep time).
        let o = lake.run(&["sql", check, "--format", "csv"]);
        assert!(o.status.success(), "read {reads} during {args:?}: {}", err(&o));
        assert_eq!(out(&o).lines().nth(1).unwrap_or_default(), expected, "read {reads} during {args:?}");
        reads += 1;
        for c in children.iter_mut() {
            if c.as_mut().is_some_and(|c| c.try_wait().unwrap().is_some()) {
                outputs.push(c.take().unwrap().wait_with_output().unwrap());
            }
        }
        if children.iter().all(Option::is_none) {
            return outputs;
        }
    }
}

#[test]
fn two_processes_compacting_or_publishing_at_once_never_double_or_lose_a_file() {
    let Some(lake) = S3Lake::new("race") else { return };
    for part in lake.kcvg_parts(4) {
        lake.ok(&["ingest", "metar", &part]);
    }
    let count = "SELECT count(*) || '/' || count(DISTINCT row_key) FROM observations";
    for o in race(&lake, &["-v", "compact", "--table", "observations"], 2, count, "24/24") {
        assert!(o.status.success(), "{}", err(&o));
        let text = err(&o);
        let said: Vec<&str> = text.lines().filter(|l| l.contains("observations") || l.contains("left to")).collect();
        eprintln!("compact in the race: {said:?}");
    }
    assert!(lake.files_per_partition("observations").values().all(|&n| n == 1));
    assert_eq!(lake.scalar(count), "24/24");
    lake.assert_no_leftovers();

    // Two processes ingesting the same new reports at once (a `wxlake ingest` beside the
    // server's flush): the one that commits second reads the partition's keys again and
    // stores each report once.
    let vohy = fixture("metar/IEM_VOHY_2014-03-01_2014-04-04_all_fields.tsv");
    let ingest = ["ingest", "metar", vohy.to_str().unwrap()];
    let both: Vec<Child> =
        (0..2).map(|_| lake.cmd(&ingest).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()).collect();
    let mut stored = 0;
    for c in both {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", err(&o));
        let said = err(&o) + &out(&o);
        stored +=
            said.split("stored ").nth(1).and_then(|r| r.split(',').next()).map_or(0, |n| n.parse::<u64>().unwrap());
    }
    let total = lake.scalar("SELECT count(*) FROM observations");
    assert_eq!(lake.scalar(count), format!("{total}/{total}"), "no report twice");
    assert_eq!(stored + 24, total.parse::<u64>().unwrap(), "each stored by one of them");

    let Some(lake) = S3Lake::new("race-jobs") else { return };
    lake.ok(&["ingest", "metar", AWC]);
    lake.ok(&["jobs", "run", "daily_extremes"]);
    let check = "SELECT count(*) || '/' || count(DISTINCT station_code) FROM daily_extremes";
    let rows = lake.scalar(check);
    let before = lake.files_per_partition("derived/daily_extremes");
    let outputs = race(&lake, &["jobs", "run", "daily_extremes"], 2, check, &rows);
    // Each run either published or lost the commit to the other, publishing nothing.
    for o in &outputs {
        eprintln!("jobs run in the race: {:?} {}", o.status, err(o).lines().last().unwrap_or_default());
        assert!(o.status.success() || err(o).contains("concurrent writer"), "{}", err(o));
    }
    assert!(outputs.iter().any(|o| o.status.success()), "one of them publishes");
    assert_eq!(lake.scalar(check), rows);
    assert_eq!(lake.files_per_partition("derived/daily_extremes").len(), before.len());
    assert!(lake.files_per_partition("derived/daily_extremes").values().all(|&n| n == 1));
    lake.assert_no_leftovers();
}

#[test]
fn a_selective_query_reads_one_partition_not_the_lake() {
    let Some(lake) = S3Lake::new("requests") else { return };
    lake.ok(&["ingest", "metar", fixture("metar/IEM_VOHY_2014-03-01_2014-04-04_all_fields.tsv").to_str().unwrap()]);
    let partitions = lake.files_per_partition("observations").len();
    assert!(partitions >= 30, "{partitions} partitions");
    let q = "SELECT count(*) FROM observations WHERE date = '2014-03-15' AND station_code = 'VOHY'";
    let o = lake.run(&["-v", "sql", q, "--format", "csv"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_ne!(out(&o).lines().nth(1), Some("0"));
    let line = err(&o).lines().rfind(|l| l.contains("object store requests")).map(str::to_string);
    let line = line.unwrap_or_else(|| panic!("no request counts in {}", err(&o)));
    let count = |kind: &str| -> u64 {
        let rest = line.split(&format!("{kind} ")).nth(1).unwrap_or_else(|| panic!("{kind} in {line}"));
        rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    // Opening the lake (the root, the upgrade check), the table's Delta log (its LIST and
    // one GET per commit: this lake has two), and the query's one partition (its footer
    // and pages): no request per partition, where a whole-table read gets every footer.
    assert!(count("objects listed") <= 10, "{line}");
    assert!(count("LIST") <= 8, "{line}");
    assert!(count("GET") + count("HEAD") <= 14, "{line}");
    assert!(count("GET") + count("HEAD") < partitions as u64 / 2, "{line}");
    assert_eq!(count("PUT") + count("DELETE") + count("COPY"), 0, "a query writes nothing: {line}");
}

#[test]
fn a_wrong_endpoint_a_missing_bucket_or_bad_credentials_are_named() {
    let Some(lake) = S3Lake::new("errors") else { return };
    let kcvg = fixture("metar/IEM_KCVG_2024-03-01_routine.tsv");
    let kcvg = kcvg.to_str().unwrap();
    let check = |o: Output, want: &str| {
        assert!(!o.status.success());
        let e = err(&o);
        assert!(e.contains(want), "wanted '{want}' in: {e}");
        assert!(!e.contains("panicked"), "{e}");
    };
    // Nothing listens on this port.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut c = lake.cmd(&["ingest", "metar", kcvg]);
    c.env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"));
    check(c.output().unwrap(), &format!("cannot reach the S3 endpoint http://127.0.0.1:{port}"));
    let mut c = lake.cmd(&["ingest", "metar", kcvg]);
    c.env_remove("AWS_ALLOW_HTTP");
    check(c.output().unwrap(), "is plain http: set AWS_ALLOW_HTTP=true");

    let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
    aws_env(&mut c, &lake.moto.endpoint, "testing");
    c.args(["--lake", "s3://no-such-bucket-wx/lake", "ingest", "metar", kcvg]);
    check(c.output().unwrap(), "S3 bucket 'no-such-bucket-wx' does not exist");

    // Moto checking credentials (its own process: the setting is per server).
    let Some(strict) = start_moto(true) else { return };
    let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
    aws_env(&mut c, &strict.endpoint, "wrong-secret");
    c.args(["--lake", &lake.url(), "ingest", "metar", kcvg]);
    check(c.output().unwrap(), "S3 refused the credentials");
    // Nothing half-written anywhere.
    assert!(lake.objects().is_empty(), "{:?}", lake.objects());
}

/// `wxlake sql` rows of `table` as sorted CSV lines, `computed_at` (the run's own clock)
/// left out so two runs of the same job over the same inputs compare equal.
fn table_lines(cmd: impl Fn(&[&str]) -> Output, table: &str) -> Vec<String> {
    let o = cmd(&["sql", &format!("SELECT {} FROM {table}", comparable_columns(table)), "--format", "csv"]);
    let o = if o.status.success() { o } else { cmd(&["sql", &format!("SELECT * FROM {table}"), "--format", "csv"]) };
    assert!(o.status.success(), "{table}: {}", err(&o));
    // Floats to 12 significant digits: a parallel aggregate may add in another order.
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(o.stdout.as_slice());
    let mut lines: Vec<String> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            let cell = |c: &str| match c.parse::<f64>() {
                Ok(v) if c.contains(['.', 'e', 'E']) => format!("{v:.11e}"),
                _ => c.to_string(),
            };
            r.iter().map(cell).collect::<Vec<_>>().join("|")
        })
        .collect();
    lines.sort();
    lines
}

impl S3Lake {
    /// The demo's inputs (observations, reports, model runs, MOS, NWS hourly), made on a
    /// local lake (returned) whose raw tables' files are then copied to the bucket as they
    /// are; both lakes read the same rows.
    fn with_demo_inputs(&self) -> PathBuf {
        let local = self.dir.path().join("local");
        let o = wxlake(&local, &["demo", "--days", "3", "--stations", "KNYC,KMDW,EGLC", "--no-onemin"]);
        assert!(o.status.success(), "demo: {}", err(&o));
        let from = object_store::local::LocalFileSystem::new_with_prefix(&local).unwrap();
        let to = self.store();
        let copied = block(async {
            let mut n = 0;
            for t in wxlake::lake::schema::TABLES {
                let files: Vec<_> = from.list(Some(&Path::from(t.name))).try_collect().await.unwrap();
                for f in files {
                    let bytes = from.get(&f.location).await.unwrap().bytes().await.unwrap();
                    to.put(&Path::from(format!("wx/lake/{}", f.location)), PutPayload::from(bytes)).await.unwrap();
                    n += 1;
                }
            }
            n
        });
        assert!(copied >= 5, "{copied} files");
        for t in wxlake::lake::schema::TABLES {
            assert_eq!(
                table_lines(|a| self.run(a), t.name),
                table_lines(|a| wxlake(&local, a), t.name),
                "{} differs after the copy",
                t.name
            );
        }
        local
    }
}

#[test]
fn every_job_gives_on_s3_what_it_gives_on_local_files() {
    let Some(lake) = S3Lake::new("same") else { return };
    let local = lake.with_demo_inputs();
    let local_cmd = |args: &[&str]| wxlake(&local, args);

    // Every job, dependencies first, on both lakes.
    let ran = lake.ok(&["jobs", "run", "--all"]);
    assert!(!ran.contains("failed"), "{ran}");
    let o = local_cmd(&["jobs", "run", "--all"]);
    assert!(o.status.success(), "local jobs: {}", err(&o));
    let specs = wxlake::jobs::embedded_specs().unwrap();
    assert_eq!(specs.len(), 7, "a new job belongs in this comparison");
    for spec in &specs {
        let table = &spec.output.table;
        let on_s3 = table_lines(|a| lake.run(a), table);
        assert!(on_s3.len() > 1, "{table} is empty on S3");
        assert_eq!(on_s3, table_lines(local_cmd, table), "{table}: S3 and local runs differ");
    }
    lake.assert_no_leftovers();
}

/// A Ballista scheduler and two executors on the S3 lake, configured like every other
/// command through the `AWS_*` environment: the executors read the bucket's Parquet, the
/// client publishes to it, and every job's table is the one a local run on local files
/// publishes (floats to the last bits of a sum's order, as in `cluster.rs`). The second
/// executor is started without `--lake` (its default is a local directory): it reads the
/// bucket the plans name through its `AWS_*` environment.
#[test]
fn jobs_on_a_cluster_over_an_s3_lake_publish_what_local_runs_publish() {
    let Some(lake) = S3Lake::new("cluster") else { return };
    let local = lake.with_demo_inputs();
    let o = wxlake(&local, &["jobs", "run", "--all"]);
    assert!(o.status.success(), "local jobs: {}", err(&o));

    let work = lake.dir.path().join("work");
    let with_lake = || lake.cmd(&[]);
    let without_lake = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
        aws_env(&mut c, &lake.moto.endpoint, "testing");
        c.current_dir(lake.dir.path());
        c
    };
    let cluster = Cluster::start_split(&with_lake, &[&with_lake, &without_lake], &work);
    let ran = lake.ok(&["jobs", "run", "--all", "--cluster", &cluster.url]);
    assert!(!ran.contains("FAILED"), "{ran}");
    assert!(files_under(&work) > 0, "the executors ran the jobs' tasks (their shuffle files are there)");
    assert!(files_under(&work.join("e1")) > 0, "the executor without --lake ran tasks too");
    assert!(!ran.contains("No suitable object store"), "{ran}");
    assert_same_tables(&derived_rows_of(&|a| wxlake(&local, a)), &derived_rows_of(&|a| lake.run(a)));
    lake.assert_no_leftovers();
}

/// The cluster over S3 finishes, in bounded time, a full run of every job on a lake whose
/// data sit years apart: a real LCD export of early 2023 and the demo's recent days.
/// Before, a full run computed every day between (a Ballista job round for each empty
/// chunk), and Ballista's adaptive planner, rewriting stages whose inputs were empty, left
/// a task whose status the scheduler refused: the run waited forever, every process idle.
#[test]
fn a_full_run_over_years_on_a_cluster_over_s3_finishes_in_bounded_time() {
    let Some(lake) = S3Lake::new("cluster-years") else { return };
    let local = lake.with_demo_inputs();
    let lcd = fixture("lcd/LCD_KLNK_USW00014939_2023-01-01_2023-02-26_metric.csv");
    let lcd = lcd.to_str().unwrap();
    lake.ok(&["ingest", "metar", lcd]);
    let o = wxlake(&local, &["ingest", "metar", lcd]);
    assert!(o.status.success(), "local: {}", err(&o));
    let o = wxlake(&local, &["jobs", "run", "--all"]);
    assert!(o.status.success(), "local jobs: {}", err(&o));

    let work = lake.dir.path().join("work");
    let with_lake = || lake.cmd(&[]);
    let cluster = Cluster::start_split(&with_lake, &[&with_lake, &with_lake], &work);
    let started = Instant::now();
    let mut run = lake
        .cmd(&["jobs", "run", "--all", "--cluster", &cluster.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // 11 s here; before, a lake like it took 78 s, and one spanning 2005 to now hung.
    let bound = Duration::from_secs(120);
    while run.try_wait().unwrap().is_none() {
        if started.elapsed() > bound {
            run.kill().ok();
            let o = run.wait_with_output().unwrap();
            panic!("jobs run --all --cluster did not finish in {bound:?}: {}", err(&o));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let o = run.wait_with_output().unwrap();
    eprintln!("jobs run --all --cluster over S3, data 2023 and now: {:.1} s", started.elapsed().as_secs_f64());
    assert!(o.status.success() && !err(&o).contains("FAILED"), "{}", err(&o));
    assert_same_tables(&derived_rows_of(&|a| wxlake(&local, a)), &derived_rows_of(&|a| lake.run(a)));
}
