//! The binary: ingest summaries and exit codes, SQL output formats and errors.

use std::io::Write;
use std::process::{Command, Stdio};

use wxlake::decode::forecast_rows::encode_forecast_csv;

use crate::support::{fixture, knyc_forecast, stderr, stdout, wxlake};

#[test]
fn ingest_then_sql_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let kcvg = fixture("metar/IEM_KCVG_2024-03-01_routine.tsv");
    let o = wxlake(&lake, &["ingest", "metar", kcvg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("stored 24"), "{}", stderr(&o));

    let o = wxlake(&lake, &["sql", "SELECT count(*) AS n FROM observations", "--format", "csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "n\n24\n");

    let o = wxlake(
        &lake,
        &["sql", "SELECT station_code, max(temperature) AS t FROM observations GROUP BY 1", "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["station_code"], "KCVG");

    let o = wxlake(&lake, &["sql", "SELECT count(*) FROM observations", "--format", "table"]);
    assert!(stdout(&o).contains("| 24"), "{}", stdout(&o));

    let out = dir.path().join("out.parquet");
    let o = wxlake(&lake, &["sql", "SELECT * FROM observations", "--format", "parquet", "-o", out.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(&std::fs::read(&out).unwrap()[..4], b"PAR1");

    // Re-ingest: all duplicates.
    let o = wxlake(&lake, &["ingest", "metar", kcvg.to_str().unwrap()]);
    assert!(stderr(&o).contains("stored 0, duplicate 24"), "{}", stderr(&o));
}

/// Job outputs are tables of `wxlake sql` too.
#[test]
fn job_outputs_are_sql_tables() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let awc = fixture("metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json");
    let o = wxlake(&lake, &["ingest", "metar", awc.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = wxlake(&lake, &["jobs", "run", "daily_extremes"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let q = "SELECT count(DISTINCT logic) AS n FROM daily_extremes WHERE station_code = 'KNYC'";
    let o = wxlake(&lake, &["sql", q, "--format", "csv"]);
    assert_eq!(stdout(&o), "n\n2\n", "{}", stderr(&o));
}

/// `wxlake sql` is an analyst's tool: nothing it runs changes the lake or the session, and
/// statements are split by the SQL parser, not at every `;`.
#[test]
fn sql_is_read_only_and_splits_statements_by_the_parser() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let kcvg = fixture("metar/IEM_KCVG_2024-03-01_routine.tsv");
    assert!(wxlake(&lake, &["ingest", "metar", kcvg.to_str().unwrap()]).status.success());
    let count = "SELECT count(*) AS n, count(DISTINCT row_key) AS k FROM observations";
    let before = stdout(&wxlake(&lake, &["sql", count, "--format", "csv"]));
    assert_eq!(before, "n,k\n24,24\n");
    let copy_to = format!("COPY (SELECT 1) TO '{}'", dir.path().join("x.csv").display());
    for refused in [
        "INSERT INTO observations SELECT * FROM observations LIMIT 5",
        "CREATE TABLE t AS SELECT 1",
        "DROP TABLE observations",
        "SET datafusion.execution.batch_size = 1",
        copy_to.as_str(),
        "SELECT 1; INSERT INTO observations SELECT * FROM observations LIMIT 1",
    ] {
        let o = wxlake(&lake, &["sql", refused]);
        assert_eq!(o.status.code(), Some(2), "{refused}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(err.starts_with("error: read-only:") && err.lines().count() == 1, "{refused}: {err}");
    }
    assert!(!dir.path().join("x.csv").exists(), "COPY wrote nothing");
    assert_eq!(stdout(&wxlake(&lake, &["sql", count, "--format", "csv"])), before, "the lake is unchanged");

    let o = wxlake(
        &lake,
        &["sql", "SELECT 'a;b' AS s; -- a comment; with a semicolon\nSELECT 'c;d' AS s", "--format", "csv"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "s\nc;d\n", "two statements, the last one printed");
}

#[test]
fn sql_errors_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let o = wxlake(&dir.path().join("lake"), &["sql", "SELECT nope FROM observations"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains("nope"), "{err}");
}

#[test]
fn nothing_usable_exits_nonzero_and_stdin_works() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, b"this is not a weather report\n\x00\x01\x02\n").unwrap();
    let o = wxlake(&lake, &["ingest", "metar", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no usable metar records"), "{}", stderr(&o));
    assert!(stderr(&o).contains("junk.txt:1"), "first rejects are named: {}", stderr(&o));

    let mut child = Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .args(["--lake", lake.to_str().unwrap(), "ingest", "metar", "--month", "2026-03", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"KNYC 011251Z 00000KT 10SM CLR 05/M02 A3012 RMK AO2 T00501017\nMETAR KLGA 011251Z 36005KT 10SM CLR 06/M03 A3011\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("stored 2"), "{}", stderr(&o));
}

/// A 10 MB "METAR" line used to be stored (exit 0): it is rejected with its length and
/// the limit, without being echoed, and only the good line of the file is stored.
#[test]
fn over_long_metar_line_is_rejected_and_the_good_line_stored() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let input = dir.path().join("reports.txt");
    let huge = format!("KNYC 011251Z 36010KT 10SM RMK {}", "X".repeat(10 << 20));
    let good = "KNYC 011351Z 36010KT 10SM FEW250 05/M05 A3000";
    std::fs::write(&input, format!("{huge}\n{good}\n")).unwrap();
    let o = wxlake(&lake, &["ingest", "metar", "--month", "2024-03", input.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("read 2 lines, 1 rows: stored 1, duplicate 0, rejected 1"), "{err}");
    let reason = format!("reports.txt:1: METAR report of {} bytes is longer than the 1024-byte limit", huge.len());
    assert!(err.contains(&reason), "{err}");
    assert!(!err.contains("XXXXXXXX"), "the line is not echoed: {} bytes of stderr", err.len());
    let o = wxlake(&lake, &["sql", "SELECT raw FROM observations", "--format", "csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("raw\n{good}\n"));
}

#[test]
fn unknown_format_is_a_clear_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = wxlake(&dir.path().join("lake"), &["ingest", "grib", "x"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("valid formats: metar, onemin"), "{}", stderr(&o));
}

/// `--batch-mb` bounds how much input one write takes: every batch adds one file to each
/// partition it touches, and the summary counts every file either way.
#[test]
fn ingest_batches_files_by_size() {
    let dir = tempfile::tempdir().unwrap();
    // Two files of over 1 MiB, both of GFS's Mar 7 partition (runs 00Z and 06Z).
    let file = |run_h: i64| {
        let run = chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 3, 7, 0, 0, 0).unwrap()
            + chrono::Duration::hours(run_h);
        let rows: Vec<_> = (0..1000)
            .flat_map(|n| {
                (0..12).map(move |lead| {
                    let mut r = knyc_forecast("GFS", run, lead, 40.0 + lead as f64);
                    r.location_name = format!("POINT{n:04}").into();
                    r
                })
            })
            .collect();
        let path = dir.path().join(format!("gfs_{run_h:02}z.csv"));
        std::fs::write(&path, encode_forecast_csv(&rows)).unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 1 << 20);
        path.to_str().unwrap().to_string()
    };
    let (a, b) = (file(0), file(6));
    let files_in = |lake: &std::path::Path| {
        std::fs::read_dir(lake.join("forecasts/model=GFS/run_date=2026-03-07"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "parquet"))
            .count()
    };
    for (batch_mb, files) in [("1", 2), ("1024", 1)] {
        let lake = dir.path().join(format!("lake{batch_mb}"));
        let o = wxlake(&lake, &["ingest", "forecasts", "--batch-mb", batch_mb, &a, &b]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("2 input(s): read 24002 lines, 24000 rows: stored 24000, duplicate 0, rejected 0"),
            "{}",
            stderr(&o)
        );
        assert_eq!(files_in(&lake), files, "--batch-mb {batch_mb}");
    }
    let o = wxlake(&dir.path().join("lake0"), &["ingest", "forecasts", "--batch-mb", "0", &a]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `--config FILE` sets flags' defaults (here the lake and `sql --format`); the flag and its
/// environment variable win over the file; a key that names no flag is refused.
#[test]
fn config_file_sets_what_the_flags_set() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let kcvg = fixture("metar/IEM_KCVG_2024-03-01_routine.tsv");
    assert!(wxlake(&lake, &["ingest", "metar", kcvg.to_str().unwrap()]).status.success());
    let config = dir.path().join("wxlake.toml");
    std::fs::write(&config, format!("lake = \"file://{}\"\n[sql]\nformat = \"csv\"\n", lake.display())).unwrap();
    let run = |args: &[&str], env_lake: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
        c.env_remove("WXLAKE_LAKE").env_remove("WXLAKE_CONFIG").current_dir(dir.path()).args(args);
        if let Some(l) = env_lake {
            c.env("WXLAKE_LAKE", l);
        }
        c.output().unwrap()
    };
    let count = "SELECT count(*) AS n FROM observations";
    let o = run(&["--config", config.to_str().unwrap(), "sql", count], None);
    assert_eq!(stdout(&o), "n\n24\n", "{}", stderr(&o));
    // The flag wins over the file.
    let o = run(&["--config", config.to_str().unwrap(), "sql", count, "--format", "json"], None);
    assert_eq!(stdout(&o).trim(), r#"[{"n":24}]"#, "{}", stderr(&o));
    // So does the environment variable: an empty lake elsewhere.
    let empty = format!("file://{}", dir.path().join("empty").display());
    let o = run(&["--config", config.to_str().unwrap(), "sql", count], Some(&empty));
    assert_eq!(stdout(&o), "n\n0\n", "{}", stderr(&o));
    // A misspelt key is refused before anything runs, naming the key.
    std::fs::write(&config, "[sql]\nformt = \"csv\"\n").unwrap();
    let o = run(&["--config", config.to_str().unwrap(), "sql", count], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`sql.formt` names no flag"), "{}", stderr(&o));
    let o = run(&["--config", dir.path().join("missing.toml").to_str().unwrap(), "sql", count], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing.toml"), "{}", stderr(&o));
}

/// Engine settings come from `DATAFUSION_*` environment variables over wxlake's own (a
/// setting wxlake sets, pushdown of filters, and one it leaves at DataFusion's default);
/// a value the setting refuses is named in a warning and the default stays.
#[test]
fn engine_settings_come_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let lake = format!("file://{}", dir.path().join("lake").display());
    let q = "SELECT name, value FROM information_schema.df_settings \
             WHERE name IN ('datafusion.execution.batch_size', 'datafusion.execution.parquet.pushdown_filters') ORDER BY name";
    let run = |env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
        c.env_remove("WXLAKE_CONFIG").env("RUST_LOG", "warn").args(["--lake", &lake, "sql", q, "--format", "csv"]);
        c.envs(env.iter().copied());
        c.output().unwrap()
    };
    let o = run(&[]);
    assert_eq!(
        stdout(&o),
        "name,value\ndatafusion.execution.batch_size,8192\ndatafusion.execution.parquet.pushdown_filters,true\n",
        "{}",
        stderr(&o)
    );
    let o =
        run(&[("DATAFUSION_EXECUTION_BATCH_SIZE", "1234"), ("DATAFUSION_EXECUTION_PARQUET_PUSHDOWN_FILTERS", "false")]);
    assert_eq!(
        stdout(&o),
        "name,value\ndatafusion.execution.batch_size,1234\ndatafusion.execution.parquet.pushdown_filters,false\n",
        "{}",
        stderr(&o)
    );
    let o = run(&[("DATAFUSION_EXECUTION_BATCH_SIZE", "many")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("datafusion.execution.batch_size,8192"), "{}", stdout(&o));
    assert!(stderr(&o).contains("datafusion.execution.batch_size"), "{}", stderr(&o));
}

/// `wxlake jobs` uses the declarations built into the binary, the ones `serve` schedules,
/// wherever it is started: a `./jobs` directory is not picked up by itself. `--jobs-dir`
/// names another set explicitly.
#[test]
fn jobs_use_the_built_in_declarations_unless_a_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let lake = format!("file://{}", dir.path().join("lake").display());
    std::fs::create_dir(dir.path().join("jobs")).unwrap();
    std::fs::write(dir.path().join("jobs/broken.toml"), "name = 1\n").unwrap();
    std::fs::create_dir_all(dir.path().join("custom/jobs")).unwrap();
    std::fs::create_dir_all(dir.path().join("custom/sql")).unwrap();
    std::fs::write(
        dir.path().join("custom/jobs/one.toml"),
        "name = \"one\"\nsql = \"sql/one.sql\"\ninputs = [\"stations\"]\n[output]\ntable = \"one_out\"\n\
         columns = [{ name = \"n\", type = \"bigint\" }]\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("custom/sql/one.sql"), "SELECT count(*) AS n FROM stations").unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wxlake"))
            .current_dir(dir.path())
            .args(["--lake", &lake])
            .args(args)
            .output()
            .expect("run wxlake")
    };

    let o = run(&["jobs", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("declarations built into the binary"), "{}", stderr(&o));
    assert!(stdout(&o).contains("forecast_daily\t"), "{}", stdout(&o));

    let o = run(&["jobs", "--jobs-dir", "custom/jobs", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 job(s), declarations custom/jobs"), "{}", stderr(&o));
    assert!(stdout(&o).contains("one\tderived/one_out"), "{}", stdout(&o));
    let o = run(&["jobs", "--jobs-dir", "custom/jobs", "run", "one"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let o = run(&["jobs", "--jobs-dir", "jobs", "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("broken.toml"), "{}", stderr(&o));
}

/// A `wxlake serve` child, killed when dropped.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `wxlake --lake <lake> serve <args>` and waits (at most 120 s) until it listens:
/// the server, its REST address, the lines it printed on stdout before that (the demo's
/// keys) and on stderr up to the "listening" line.
fn start_serve(lake: &std::path::Path, args: &[&str]) -> (Server, String, Vec<String>, String) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .arg("--lake")
        .arg(format!("file://{}", lake.display()))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wxlake serve");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let server = Server(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut seen = String::new();
    let mut addr = None;
    while std::time::Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        seen.push_str(&line);
        seen.push('\n');
        if let Some(rest) = line.split("listening on http://").nth(1) {
            addr = Some(rest.split_whitespace().next().unwrap().to_string());
            break;
        }
    }
    let addr = addr.unwrap_or_else(|| panic!("the server did not start:\n{seen}"));
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    // The demo's keys are printed before the listener starts: already in the pipe.
    let keys = if args.contains(&"--demo") {
        BufReader::new(stdout).lines().take(4).map_while(Result::ok).collect()
    } else {
        Vec::new()
    };
    (server, addr, keys, seen)
}

/// Runs wxlake with `args`, killing it after `limit`: its output and how long it ran.
fn run_within(limit: std::time::Duration, args: &[&str]) -> (std::process::Output, std::time::Duration) {
    let started = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wxlake");
    while started.elapsed() < limit && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    (child.wait_with_output().unwrap(), started.elapsed())
}

/// A lake with one observation, so `serve --demo` does not build a demo lake.
fn lake_with_one_report(dir: &std::path::Path) -> std::path::PathBuf {
    let lake = dir.join("lake");
    let input = dir.join("in.txt");
    std::fs::write(&input, "KNYC 011251Z 00000KT 10SM CLR 05/M02 A3012 RMK AO2 T00501017\n").unwrap();
    let o = wxlake(&lake, &["ingest", "metar", "--month", "2026-03", input.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    lake
}

/// A second server on a port the first one holds fails within seconds, before anything
/// else (no demo lake built, no key minted), naming the address and the flag that changes
/// it: for the REST port (`--addr`) and the stream's (`--stream-addr`).
#[test]
fn a_taken_port_fails_at_once_naming_the_address_and_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_with_one_report(dir.path());
    let (_first, addr, _, _) = start_serve(&lake, &["--addr", "127.0.0.1:0"]);

    let empty = dir.path().join("empty-lake");
    let empty_url = format!("file://{}", empty.display());
    let state = dir.path().join("second.state");
    let state = state.to_str().unwrap();
    for (flag, args) in [
        ("--addr", vec!["--addr", addr.as_str(), "--stream-addr", "127.0.0.1:0"]),
        ("--stream-addr", vec!["--addr", "127.0.0.1:0", "--stream-addr", addr.as_str()]),
    ] {
        let mut argv = vec!["--lake", empty_url.as_str(), "serve", "--demo", "--state-dir", state];
        argv.extend(args);
        let (o, took) = run_within(std::time::Duration::from_secs(60), &argv);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{flag}: {err}");
        assert!(took < std::time::Duration::from_secs(10), "{flag}: failed only after {took:?}");
        assert!(err.contains(&format!("cannot listen on {addr} ({flag})")), "{flag}: {err}");
        assert!(
            err.contains("Address already in use") && err.contains(&format!("give {flag} another address")),
            "{err}"
        );
        assert_eq!(stdout(&o), "", "{flag}: no key printed");
        assert!(!err.contains("demo:"), "{flag}: nothing of the demo started: {err}");
        assert!(!empty.join("observations").exists(), "{flag}: no demo lake built");
        assert!(!std::path::Path::new(state).join("keys.json").exists(), "{flag}: no key minted");
    }
}

/// `serve --demo` shows the same four keys on every start on the same state directory
/// (not four new ones per start), and its log is plain text with a one-line feeds summary.
#[test]
fn serve_demo_reuses_its_keys_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_with_one_report(dir.path());
    let state = dir.path().join("state");
    let args =
        ["--demo", "--addr", "127.0.0.1:0", "--stream-addr", "127.0.0.1:0", "--state-dir", state.to_str().unwrap()];
    let (server, _, first, log) = start_serve(&lake, &args);
    drop(server);
    let (server, _, second, _) = start_serve(&lake, &args);
    drop(server);
    assert_eq!(first.len(), 4, "{first:?}");
    assert_eq!(second, first, "the same keys, printed again");
    for (line, tier) in first.iter().zip(["professional", "developer", "enterprise", "testing"]) {
        assert!(line.starts_with(tier) && line.contains(" wx_"), "{line}");
    }
    let keys = wxlake::access::keys::KeyStore::open(&state).unwrap().list();
    assert_eq!(keys.len(), 4, "four keys minted in all: {keys:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(state.join("demo-keys.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(log.contains("feeds: polling ") && !log.contains("Feeds {"), "{log}");
}

/// Logs written to a pipe or a file carry no ANSI colour codes.
#[test]
fn logs_to_a_pipe_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let o = wxlake(&dir.path().join("lake"), &["-v", "sql", "SELECT 1 AS n", "--format", "csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("INFO"), "an info line is logged with -v: {err}");
    assert!(!err.contains('\u{1b}'), "escape codes in a piped log: {err:?}");
}

/// The kernel's `THP_enabled` of process `pid` ("1" or "0"), where the kernel reports it.
#[cfg(target_os = "linux")]
fn thp_enabled(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("THP_enabled:").map(|v| v.trim().to_string()))
}

/// Batch commands run without transparent huge pages (a job's system time went to zeroing
/// them: benches/README.md, "Session 23"), `MIMALLOC_ALLOW_THP=1` keeps them, and `serve`
/// keeps them (its hot reads are faster with them).
#[cfg(target_os = "linux")]
#[test]
fn batch_commands_run_without_transparent_huge_pages() {
    // A kernel that does not report it, or has them off for the test itself: nothing to see.
    if thp_enabled(std::process::id()).as_deref() != Some("1") {
        eprintln!("transparent huge pages are not reported on for this process: nothing to check");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    // `ingest metar -` waits on its stdin: the process stays while it is looked at.
    let state_of_ingest = |allow: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wxlake"));
        c.arg("--lake").arg(format!("file://{}", lake.display())).args(["ingest", "metar", "-"]);
        c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).env_remove("MIMALLOC_ALLOW_THP");
        if let Some(a) = allow {
            c.env("MIMALLOC_ALLOW_THP", a);
        }
        let mut child = Server(c.spawn().unwrap());
        // Set once the arguments are parsed: the last state seen within 3 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let mut seen = thp_enabled(child.0.id());
        while std::time::Instant::now() < deadline && seen.as_deref() != Some("0") {
            std::thread::sleep(std::time::Duration::from_millis(20));
            seen = thp_enabled(child.0.id());
        }
        drop(child.0.stdin.take());
        seen
    };
    assert_eq!(state_of_ingest(None).as_deref(), Some("0"));
    assert_eq!(state_of_ingest(Some("1")).as_deref(), Some("1"));
    let (server, _, _, _) = start_serve(&lake, &["--addr", "127.0.0.1:0"]);
    assert_eq!(thp_enabled(server.0.id()).as_deref(), Some("1"));
}
