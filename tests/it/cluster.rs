//! A Ballista cluster for real: one scheduler and two executors, each a `wxlake cluster`
//! process on 127.0.0.1, over a small demo lake. The same SQL through `wxlake sql` locally
//! and with `--cluster` prints the same rows: aggregates over the lake's Parquet, joins
//! with the in-memory `stations` and `models` tables, a job's derived table, a window.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{comparable_columns, stderr, stdout, wxlake};

/// A child process killed when the test ends, however it ends (or when dropped).
struct Proc(Option<Child>);

impl Proc {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("a running child")
    }

    /// Waits for the process to end by itself and returns what it printed.
    fn output(mut self) -> Output {
        self.0.take().expect("a running child").wait_with_output().expect("child output")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A scheduler and its executors.
pub(crate) struct Cluster {
    pub(crate) url: String,
    /// Stopped before the scheduler (fields drop in order), so they do not log its loss.
    executors: Vec<(u16, Proc)>,
    _scheduler: Proc,
    /// Every line the executors logged, with the executor's port.
    executor_log: Log,
}

/// Lines a process logged, with its name.
type Log = Arc<Mutex<Vec<(String, String)>>>;

impl Cluster {
    /// Starts a scheduler (on a port it picks) and `executors` executors on the local
    /// `lake`, and returns once every executor serves.
    fn start(lake: &Path, work: &Path, executors: usize) -> Cluster {
        Cluster::start_on(&|| file_lake(lake), work, executors)
    }

    /// The same on any lake: `lake` gives the binary with `--lake` and the environment
    /// that reaches it (an S3 lake's `AWS_*`), for the scheduler and every executor.
    pub(crate) fn start_on(lake: &dyn Fn() -> Command, work: &Path, executors: usize) -> Cluster {
        Cluster::start_split(lake, &vec![lake; executors], work)
    }

    /// A scheduler started by `scheduler` and one executor per command of `executors`
    /// (each can reach the lake its own way).
    pub(crate) fn start_split(
        scheduler: &dyn Fn() -> Command,
        executors: &[&dyn Fn() -> Command],
        work: &Path,
    ) -> Cluster {
        let (scheduler, url) = start_scheduler(scheduler);
        let executor_log = Log::default();
        let executors = executors
            .iter()
            .enumerate()
            .map(|(i, lake)| start_executor(*lake, &url, &work.join(format!("e{i}")), &executor_log))
            .collect();
        Cluster { url, executors, _scheduler: scheduler, executor_log }
    }

    /// The executors' log lines so far, each with the executor's name.
    fn executor_lines(&self) -> Vec<(String, String)> {
        self.executor_log.lock().unwrap().clone()
    }
}

/// The binary on a lake of local files.
fn file_lake(lake: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
    c.arg("--lake").arg(format!("file://{}", lake.display()));
    c
}

/// A cluster process: no input, no output but its log.
fn cluster_process(lake: &dyn Fn() -> Command) -> Command {
    let mut c = lake();
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    c
}

/// Prints a process's log lines (warnings and errors at the default level) as they come,
/// so a failing test shows what the cluster said; draining also keeps it from blocking.
fn forward_log(name: String, lines: impl Iterator<Item = std::io::Result<String>> + Send + 'static, keep: Option<Log>) {
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            eprintln!("[{name}] {line}");
            if let Some(log) = &keep {
                log.lock().unwrap().push((name.clone(), line));
            }
        }
    });
}

fn start_scheduler(lake: &dyn Fn() -> Command) -> (Proc, String) {
    let mut child = cluster_process(lake)
        .args(["cluster", "scheduler", "--bind", "127.0.0.1:0", "--executor-timeout-secs", "5"])
        .spawn()
        .expect("spawn scheduler");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let proc = Proc(Some(child));
    let mut url = None;
    for line in lines.by_ref() {
        let line = line.expect("scheduler stderr");
        if let Some(u) = line.strip_prefix("scheduler listening on ") {
            url = Some(u.trim().to_string());
            break;
        }
        eprintln!("[scheduler] {line}");
    }
    let url = url.expect("the scheduler printed its address");
    forward_log("scheduler".into(), lines, None);
    (proc, url)
}

/// A port free now (bound, then released: the executor needs a fixed one).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An executor on a free port. A port found free can be taken before the executor binds
/// it (the outgoing connections of the other processes draw from the same range): then
/// the executor exits at once and another port is tried.
fn start_executor(lake: &dyn Fn() -> Command, url: &str, work: &Path, log: &Log) -> (u16, Proc) {
    for _ in 0..5 {
        let port = free_port();
        let mut child = cluster_process(lake)
            .args(["cluster", "executor", "--scheduler", url, "--bind", &format!("127.0.0.1:{port}"), "--work-dir"])
            .arg(work)
            .spawn()
            .expect("spawn executor");
        let lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        forward_log(format!("executor {port}"), lines, Some(Arc::clone(log)));
        let mut proc = Proc(Some(child));
        // Its Flight service listens once it has registered with the scheduler.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut exited = false;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = proc.child().try_wait().expect("executor status") {
                eprintln!("executor on port {port} exited ({status}); trying another port");
                exited = true;
                break;
            }
            assert!(Instant::now() < deadline, "executor on port {port} did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        if !exited {
            return (port, proc);
        }
    }
    panic!("no executor started in 5 attempts");
}

/// `wxlake sql --format csv` locally and on the cluster: both succeed and print the same.
fn same_on_cluster(lake: &Path, cluster: &Cluster, q: &str) -> String {
    let local = wxlake(lake, &["sql", q, "--format", "csv"]);
    assert!(local.status.success(), "local {q}: {}", stderr(&local));
    let remote = wxlake(lake, &["sql", q, "--format", "csv", "--cluster", &cluster.url]);
    assert!(remote.status.success(), "cluster {q}: {}", stderr(&remote));
    let (l, r) = (stdout(&local), stdout(&remote));
    let (ll, rl): (Vec<&str>, Vec<&str>) = (l.lines().collect(), r.lines().collect());
    assert_eq!(ll.len(), rl.len(), "{q}: {} rows locally, {} on the cluster", ll.len(), rl.len());
    for (i, (a, b)) in ll.iter().zip(&rl).enumerate() {
        assert_eq!(a, b, "{q}: row {i} differs");
    }
    l
}

fn demo_lake(dir: &Path) -> PathBuf {
    let lake = dir.join("lake");
    let o = wxlake(&lake, &["demo", "--days", "2", "--stations", "KNYC,EGLC", "--no-onemin"]);
    assert!(o.status.success(), "demo: {}", stderr(&o));
    lake
}

fn ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what}: {}", stderr(o));
}

#[test]
fn the_cluster_answers_the_same_sql_as_a_local_session() {
    let dir = tempfile::tempdir().unwrap();
    // The demo ran every job: the derived tables have rows.
    let lake = demo_lake(dir.path());
    let work = dir.path().join("work");
    let cluster = Cluster::start(&lake, &work, 2);
    assert_eq!(cluster.executors.len(), 2);
    assert_eq!(files_under(&work), 0, "no shuffle file before the first query");

    let queries = [
        // An aggregate over every forecast file (Hive partitions, a shuffle).
        "SELECT model, run_date, count(*) AS points, min(temperature_f) AS low, max(temperature_f) AS high, \
         round(avg(temperature_f), 6) AS mean FROM forecasts GROUP BY model, run_date ORDER BY model, run_date",
        // A join with the in-memory station catalog.
        "SELECT s.station_code, s.city, s.timezone, f.model, count(*) AS points, max(f.valid_time) AS last_valid \
         FROM forecasts f JOIN stations s ON s.station_code = f.location_name \
         GROUP BY s.station_code, s.city, s.timezone, f.model ORDER BY s.station_code, f.model",
        // The in-memory model schedule, outer-joined: models without forecasts count 0.
        "SELECT m.model, m.cycles, m.horizon_h, count(DISTINCT f.run_time) AS runs \
         FROM models m LEFT JOIN forecasts f ON f.model = m.model GROUP BY m.model, m.cycles, m.horizon_h \
         ORDER BY m.model",
        // Observations per station and day.
        "SELECT station_code, date, count(*) AS reports, min(temperature) AS low, max(temperature) AS high \
         FROM observations GROUP BY station_code, date ORDER BY station_code, date",
        // A job's derived table.
        "SELECT model, tz_mode, count(*) AS days, round(avg(high_f), 6) AS mean_high, min(low_f) AS min_low \
         FROM forecast_daily GROUP BY model, tz_mode ORDER BY model, tz_mode",
        // A window over repartitioned rows, then a global sort.
        "SELECT location_name, model, run_time, temperature_f, \
         row_number() OVER (PARTITION BY location_name, model ORDER BY run_time) AS k \
         FROM forecasts WHERE forecast_hour = 24 ORDER BY location_name, model, run_time",
    ];
    let mut rows = Vec::new();
    for q in queries {
        rows.push(same_on_cluster(&lake, &cluster, q).lines().count() - 1);
    }
    // Every query saw data (the comparison is not of two empty answers).
    assert!(rows.iter().all(|&n| n > 0), "rows per query: {rows:?}");
    assert_eq!(rows[2], 18, "one row per model: {rows:?}");
    assert!(rows[0] >= 2 && rows[1] >= 2, "several models and stations: {rows:?}");
    // The executors ran the queries: their shuffle files are there.
    assert!(files_under(&work) > 0, "the executors wrote shuffle files");

    // The read-only refusals are the local ones, word for word.
    let insert = "INSERT INTO observations SELECT * FROM observations LIMIT 1";
    let local = wxlake(&lake, &["sql", insert]);
    let remote = wxlake(&lake, &["sql", insert, "--cluster", &cluster.url]);
    assert_eq!(remote.status.code(), Some(2), "{}", stderr(&remote));
    assert_eq!(stderr(&remote), stderr(&local));
    // `as_of` answers locally only, and says so on the cluster.
    let as_of = "SELECT count(*) FROM as_of('observations', '2030-01-01T00:00:00Z')";
    ok(&wxlake(&lake, &["sql", as_of]), "as_of locally");
    let remote = wxlake(&lake, &["sql", as_of, "--cluster", &cluster.url]);
    assert!(!remote.status.success(), "{}", stdout(&remote));
    assert!(stderr(&remote).contains("runs in the local engine only"), "{}", stderr(&remote));
}

/// A `--cluster` whose scheduler is not there fails at once, naming the address.
#[test]
fn an_absent_scheduler_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("df://127.0.0.1:{}", free_port());
    let o = wxlake(&dir.path().join("lake"), &["sql", "SELECT 1", "--cluster", &url]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&format!("cannot reach the scheduler at {url}")), "{err}");
    let o = wxlake(&dir.path().join("lake"), &["sql", "SELECT 1", "--cluster", "http://127.0.0.1:1"]);
    assert!(!o.status.success() && stderr(&o).contains("expected df://HOST:PORT"), "{}", stderr(&o));
}

/// The jobs' output tables.
const DERIVED: [&str; 7] = [
    "forecast_daily",
    "daily_extremes",
    "accuracy_pairs",
    "accuracy_daily_detail",
    "accuracy_trends",
    "model_accuracy",
    "bracket_scores",
];

/// Every derived table as CSV lines, header first, rows sorted (partitions are read in
/// listing order; the comparison is of the rows), without what the run's clock decides
/// ([`comparable_columns`]).
fn derived_rows(lake: &Path) -> Vec<(&'static str, Vec<String>)> {
    derived_rows_of(&|args| wxlake(lake, args))
}

/// [`derived_rows`] of any lake, read by `sql` through `run`.
pub(crate) fn derived_rows_of(run: &dyn Fn(&[&str]) -> Output) -> Vec<(&'static str, Vec<String>)> {
    DERIVED
        .iter()
        .map(|t| {
            let o = run(&["sql", &format!("SELECT {} FROM {t}", comparable_columns(t)), "--format", "csv"]);
            ok(&o, t);
            let text = stdout(&o);
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            lines[1..].sort();
            (*t, lines)
        })
        .collect()
}

/// The derived tables hold the same rows, bit for bit: no job adds floats in an order a
/// plan decides (the accuracy jobs' sums are exact decimals, sql/model_accuracy.sql), so
/// however the cluster splits the rows, every value is the local run's.
pub(crate) fn assert_same_tables(local: &[(&str, Vec<String>)], remote: &[(&str, Vec<String>)]) {
    for ((table, l), (_, r)) in local.iter().zip(remote) {
        assert!(l.len() > 1, "{table} has rows locally");
        assert_eq!(l[0], r[0], "{table}: columns");
        assert_eq!(l.len(), r.len(), "{table}: {} rows locally, {} from the cluster", l.len() - 1, r.len() - 1);
        for (i, (a, b)) in l.iter().zip(r).enumerate() {
            assert_eq!(a, b, "{table}: row {i} differs:\n local   {a}\n cluster {b}");
        }
    }
}

/// Files under a directory, recursively.
pub(crate) fn files_under(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.map_while(Result::ok).map(|e| if e.path().is_dir() { files_under(&e.path()) } else { 1 }).sum()
}

/// `wxlake jobs run --all --cluster` publishes, table by table and row by row, what the
/// local run published; the executors did the work (their shuffle files are there).
#[test]
fn jobs_on_the_cluster_publish_what_local_runs_publish() {
    let dir = tempfile::tempdir().unwrap();
    // The demo ran every job locally.
    let lake = demo_lake(dir.path());
    let local = derived_rows(&lake);
    let work = dir.path().join("work");
    let cluster = Cluster::start(&lake, &work, 2);
    ok(&wxlake(&lake, &["jobs", "run", "--all", "--cluster", &cluster.url]), "jobs run --all --cluster");
    let remote = derived_rows(&lake);
    assert_same_tables(&local, &remote);
    assert!(files_under(&work) > 0, "the executors wrote shuffle files");
    // Every run of every job is recorded, and ok (the demo ran some already).
    let q = "SELECT job, count(*) AS runs, count(*) FILTER (WHERE status = 'ok') AS ok FROM job_runs \
             GROUP BY job ORDER BY job";
    let o = wxlake(&lake, &["sql", q, "--format", "csv"]);
    ok(&o, "job_runs");
    let counts: Vec<String> = stdout(&o).lines().skip(1).map(str::to_string).collect();
    assert_eq!(counts.len(), DERIVED.len(), "{counts:?}");
    for line in &counts {
        let f: Vec<&str> = line.split(',').collect();
        assert!(f[1] == f[2] && f[1].parse::<u32>().unwrap() >= 2, "{line}");
    }
}

/// `daily_extremes` on a cluster: the live engine's replay runs on the executors, split
/// by station (each task's line lists whole stations; every station is replayed once per
/// chunk, by one executor), never on the client, and the table is the local run's, row for
/// row (one-minute data and CLI/DSM reports included).
#[test]
fn daily_extremes_replays_on_the_executors_split_by_station() {
    const LOG: &str = "warn,wxlake::jobs::replay_function=debug";
    const SAYS: &str = "observed_extremes: stations replayed here";
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let stations = ["EGLC", "KATL", "KDEN", "KLAX", "KMDW", "KMIA", "KNYC", "RJTT"];
    let o = wxlake(&lake, &["demo", "--days", "3", "--stations", &stations.join(","), "--no-forecasts"]);
    ok(&o, "demo");
    let table = |lake: &Path| {
        let q = format!("SELECT {} FROM daily_extremes", comparable_columns("daily_extremes"));
        let o = wxlake(lake, &["sql", &q, "--format", "csv"]);
        ok(&o, "daily_extremes");
        let mut lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
        lines[1..].sort();
        lines
    };
    let local = table(&lake);
    let with_log = || {
        let mut c = file_lake(&lake);
        c.env("RUST_LOG", LOG);
        c
    };
    let cluster = Cluster::start_on(&with_log, &dir.path().join("work"), 2);
    let run = with_log().args(["jobs", "run", "daily_extremes", "--cluster", &cluster.url]).output().unwrap();
    ok(&run, "jobs run daily_extremes --cluster");
    assert!(!stderr(&run).contains(SAYS), "the client replayed: {}", stderr(&run));
    assert_same_tables(&[("daily_extremes", local)], &[("daily_extremes", table(&lake))]);

    // The executors' lines arrive through their log threads: wait for every station.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (replayed, tasks) = loop {
        let (mut replayed, mut tasks): (Vec<(String, String)>, usize) = (Vec::new(), 0);
        for (executor, line) in cluster.executor_lines() {
            if let Some(list) = line.contains(SAYS).then(|| line.split("stations=").nth(1)).flatten() {
                let list = list.split_whitespace().next().unwrap_or("");
                replayed.extend(list.split(',').filter(|c| !c.is_empty()).map(|c| (c.to_string(), executor.clone())));
                tasks += 1;
            }
        }
        if stations.iter().all(|s| replayed.iter().any(|(c, _)| c == s)) || Instant::now() > deadline {
            break (replayed, tasks);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Eight stations over the job's hash partitions (DataFusion's hash is seeded the same
    // in every run): more than one share.
    assert!(tasks >= 2, "the stations were replayed in one piece: {replayed:?}");
    let times = |s: &str| replayed.iter().filter(|(c, _)| c == s).count();
    let chunks = times(stations[0]);
    assert!(chunks >= 1, "no executor replayed {}: {replayed:?}", stations[0]);
    for s in stations {
        assert_eq!(times(s), chunks, "{s}: each station once per chunk: {replayed:?}");
    }
    assert_eq!(replayed.len(), chunks * stations.len(), "only the lake's stations: {replayed:?}");
}

/// An executor killed while a query runs: Ballista reruns its lost work on the other one
/// and the answer is the local one, or the query fails with an error; it never hangs and
/// never prints a wrong answer.
#[test]
fn losing_an_executor_mid_query_gives_the_answer_or_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let lake = demo_lake(dir.path());
    // A self-join: several stages, long enough to lose an executor in the middle.
    let q = "SELECT a.model, count(*) AS pairs, round(avg(a.temperature_f - b.temperature_f), 6) AS diff \
             FROM forecasts a JOIN forecasts b ON a.location_name = b.location_name AND a.model = b.model \
             AND a.valid_time = b.valid_time GROUP BY a.model ORDER BY a.model";
    let local = wxlake(&lake, &["sql", q, "--format", "csv"]);
    ok(&local, "local");
    let work = dir.path().join("work");
    let mut cluster = Cluster::start(&lake, &work, 2);
    let started = Instant::now();
    let client = file_lake(&lake)
        .args(["sql", q, "--format", "csv", "--cluster", &cluster.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn client");
    let mut client = Proc(Some(client));
    // The first shuffle file shows the query running; its executor is the one to lose.
    let victim = loop {
        if let Some(i) = (0..2).find(|i| files_under(&work.join(format!("e{i}"))) > 0) {
            break Some(i);
        }
        if client.child().try_wait().expect("client status").is_some() {
            break None;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the query never started");
        std::thread::sleep(Duration::from_millis(10));
    };
    let victim = victim.expect("the query finished before any shuffle file was seen");
    drop(cluster.executors.remove(victim));
    // The answer, or an error, within the executor timeout and some reruns.
    let deadline = Instant::now() + Duration::from_secs(180);
    while client.child().try_wait().expect("client status").is_none() {
        assert!(Instant::now() < deadline, "the query hung after losing an executor");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = client.output();
    if out.status.success() {
        // A mean of zero may come out as -0.0 on one side: the cluster adds in another order.
        let unsigned_zero = |s: String| s.replace(",-0.0\n", ",0.0\n");
        assert_eq!(
            unsigned_zero(stdout(&out)),
            unsigned_zero(stdout(&local)),
            "the answer after a rerun is the local one"
        );
    } else {
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "a query error: {err}");
        assert!(err.starts_with("error: ") && err.lines().count() == 1, "one clear line: {err}");
    }
    eprintln!("after losing executor e{victim}: {}", if out.status.success() { "answered" } else { "failed" });
}

/// `wxlake jobs run ARGS --cluster` on `lake`, started (its output piped) and not awaited.
fn jobs_run(lake: &Path, cluster: &Cluster, args: &[&str]) -> Proc {
    let run = file_lake(lake)
        .args(["jobs", "run"])
        .args(args)
        .args(["--cluster", &cluster.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn jobs run");
    Proc(Some(run))
}

/// An executor killed while `jobs run --all --cluster` runs: every job completes (its lost
/// work rerun elsewhere) or the run fails, and either way no table is left half-published:
/// each derived table holds the rows of a whole run, the same as the local run's.
#[test]
fn losing_an_executor_mid_job_never_publishes_a_partial_output() {
    let dir = tempfile::tempdir().unwrap();
    // The demo ran every job locally.
    let lake = demo_lake(dir.path());
    let local = derived_rows(&lake);
    let work = dir.path().join("work");
    let mut cluster = Cluster::start(&lake, &work, 2);
    let mut run = jobs_run(&lake, &cluster, &["--all"]);
    let started = Instant::now();
    let victim = loop {
        if let Some(i) = (0..2).find(|i| files_under(&work.join(format!("e{i}"))) > 0) {
            break i;
        }
        assert!(run.child().try_wait().expect("status").is_none(), "the run ended before any task ran");
        assert!(started.elapsed() < Duration::from_secs(120), "the run never started a task");
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(cluster.executors.remove(victim));
    let deadline = Instant::now() + Duration::from_secs(300);
    while run.child().try_wait().expect("status").is_none() {
        assert!(Instant::now() < deadline, "the run hung after losing an executor");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = run.output();
    let err = stderr(&out);
    eprintln!("after losing executor e{victim}: exit {:?}\n{err}", out.status.code());
    if !out.status.success() {
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("FAILED"), "the failed job is named: {err}");
    }
    assert_same_tables(&local, &derived_rows(&lake));
}

/// Every executor lost while `jobs run` runs: the run fails within the scheduler's grace
/// (the executor timeout), naming the job and why, and publishes nothing.
#[test]
fn losing_every_executor_fails_the_run_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lake = demo_lake(dir.path());
    let before = derived_rows(&lake);
    let work = dir.path().join("work");
    let mut cluster = Cluster::start(&lake, &work, 2);
    let mut run = jobs_run(&lake, &cluster, &["forecast_daily"]);
    let started = Instant::now();
    while files_under(&work) == 0 {
        assert!(run.child().try_wait().expect("status").is_none(), "the run ended before any task ran");
        assert!(started.elapsed() < Duration::from_secs(120), "the run never started a task");
        std::thread::sleep(Duration::from_millis(10));
    }
    cluster.executors.clear();
    let deadline = Instant::now() + Duration::from_secs(300);
    while run.child().try_wait().expect("status").is_none() {
        assert!(Instant::now() < deadline, "the run hung without executors");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = run.output();
    let err = stderr(&out);
    eprintln!("without executors: exit {:?}\n{err}", out.status.code());
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("forecast_daily: FAILED"), "{err}");
    // Nothing was published: every table as before, byte for byte.
    assert_eq!(derived_rows(&lake), before);
    // The failure is recorded.
    let q = "SELECT status, error FROM job_runs WHERE job = 'forecast_daily' ORDER BY started_at DESC LIMIT 1";
    let o = wxlake(&lake, &["sql", q, "--format", "csv"]);
    assert!(stdout(&o).starts_with("status,error\nfailed,"), "{}", stdout(&o));
}
