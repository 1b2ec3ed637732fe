//! Other tools read the lake while it changes: Polars (`scan_delta`) and the `deltalake`
//! package (delta-rs for Python, pyarrow underneath) read the tables in a loop while the
//! lake ingests, compacts and publishes a job's output in a loop, as `serve` does. Every
//! read must give exactly the rows of one version: the count each reader saw at a version
//! is compared with that version's count read back afterwards (time travel), and the raw
//! table's counts with what the writer appended.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use chrono::{Duration, TimeZone, Utc};
use wxlake::decode::types::ForecastRow;
use wxlake::jobs::runner::no_progress;
use wxlake::lake::schema::FORECASTS;
use wxlake::lake::Lake;

use crate::support::{knyc_forecast, scalar};

/// The reader: every table's version and row count, by Polars and by deltalake, one JSON
/// line per read, until told to stop (a line on stdin) or the time is up.
const READER: &str = r#"
import json, sys, threading, polars as pl
from deltalake import DeltaTable
root, tables = sys.argv[1], sys.argv[2:]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
while not stop.is_set():
    for t in tables:
        path = f"{root}/{t}"
        try:
            dt = DeltaTable(path)
        except Exception:
            continue  # not created yet
        v = dt.version()
        n_polars = pl.scan_delta(path, version=v).select(pl.len()).collect().item()
        n_deltalake = dt.to_pyarrow_dataset().count_rows()
        print(json.dumps({"table": t, "version": v, "polars": n_polars, "deltalake": n_deltalake}), flush=True)
"#;

fn venv_python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python");
    let ok = Command::new(&p).args(["-c", "import polars, deltalake"]).output().is_ok_and(|o| o.status.success());
    assert!(
        ok || std::env::var("CI").as_deref() != Ok("true"),
        "the venv lacks polars/deltalake under CI (.ci/run installs them)"
    );
    ok.then_some(p)
}

/// Rows of step `i`: 20 at stations of their own, and a KNYC run for the job.
fn step_rows(i: usize) -> Vec<ForecastRow> {
    let run = Utc.with_ymd_and_hms(2026, 3, 7, 0, 0, 0).unwrap();
    let mut rows: Vec<ForecastRow> = (0..20)
        .map(|k| {
            let mut r = ForecastRow {
                model: "GFS",
                location_name: format!("X{i:03}{k:02}").into(),
                run_time: run,
                valid_time: run + Duration::hours(6),
                forecast_hour: 6,
                temperature_c: 10.0.into(),
                ..Default::default()
            };
            r.complete_temperatures();
            r
        })
        .collect();
    let knyc_run = run + Duration::hours(6 * i as i64);
    rows.extend((0..24).map(|lead| knyc_forecast("GFS", knyc_run, lead, 40.0 + lead as f64)));
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polars_and_deltalake_read_whole_versions_while_the_lake_changes() {
    let Some(python) = venv_python() else {
        eprintln!("\n!!! SKIPPED polars_and_deltalake_read_whole_versions_while_the_lake_changes: .ci/venv lacks polars/deltalake (bash .ci/run installs them)\n");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("lake");
    let lake = Lake::open(&root.display().to_string()).await.unwrap();
    let tables = ["forecasts", "derived/forecast_daily", "derived/job_runs"];
    let mut reader = Command::new(python)
        .args(["-c", READER, root.to_str().unwrap()])
        .args(tables)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let out = BufReader::new(reader.stdout.take().unwrap());
    let lines = std::thread::spawn(move || out.lines().map_while(Result::ok).collect::<Vec<String>>());

    // The writer: what `serve` does, in a tight loop (appends, the job a new run starts,
    // the hourly compaction). The first half runs `forecast_daily` as it was declared
    // before 2026-11-30 (partitioned by model and run date), the rest as now: the readers
    // see the table laid out anew while they read.
    let specs = wxlake::jobs::job_set::embedded_specs().unwrap();
    let job = wxlake::jobs::job_set::find(&specs, "forecast_daily").unwrap();
    let mut old = job.clone();
    old.output.partition_by = vec!["model".into(), "run_date".into()];
    old.output.sort_by = ["location_name", "run_time", "tz_mode", "date"].map(String::from).to_vec();
    const STEPS: usize = 16;
    let mut last_old_version = 0;
    for i in 0..STEPS {
        lake.write(step_rows(i)).await.unwrap();
        let declared = if i <= STEPS / 2 { &old } else { job };
        wxlake::jobs::run_job(&lake, declared, None, &no_progress).await.unwrap();
        if i == STEPS / 2 {
            let (table, _) = lake.snapshot_files("derived/forecast_daily").await.unwrap().unwrap();
            last_old_version = table.version().unwrap();
        }
        if i % 3 == 2 {
            lake.compact(&FORECASTS).await.unwrap();
        }
        if i == STEPS / 2 {
            // Let the reader catch up with the first half (it starts slowly).
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        }
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    use std::io::Write;
    writeln!(reader.stdin.take().unwrap()).ok();
    assert!(reader.wait().unwrap().success(), "the reader failed");
    let reads: Vec<serde_json::Value> =
        lines.join().unwrap().iter().map(|l| serde_json::from_str(l).unwrap()).collect();

    let mut checked = std::collections::BTreeMap::<String, usize>::new();
    let mut counts = std::collections::HashMap::<(String, u64), u64>::new();
    for r in &reads {
        let (t, v) = (r["table"].as_str().unwrap().to_string(), r["version"].as_u64().unwrap());
        let (polars, deltalake) = (r["polars"].as_u64().unwrap(), r["deltalake"].as_u64().unwrap());
        assert_eq!(polars, deltalake, "{r}");
        let name = t.rsplit('/').next().unwrap().to_string();
        let expected = match counts.get(&(name.clone(), v)) {
            Some(n) => *n,
            None => {
                let n: u64 =
                    scalar(&lake, &format!("SELECT count(*) FROM table_at('{name}', {v})")).await.parse().unwrap();
                counts.insert((name.clone(), v), n);
                n
            }
        };
        assert_eq!(polars, expected, "{t} at version {v}: {r}");
        if t == "forecasts" {
            assert_eq!(polars % 44, 0, "whole appends only: {r}");
        }
        *checked.entry(t).or_default() += 1;
    }
    eprintln!("reads checked per table: {checked:?}");
    for t in tables {
        assert!(checked.get(t).is_some_and(|&n| n >= 3), "{t} read too few times: {checked:?}");
    }
    let versions: std::collections::BTreeSet<u64> =
        reads.iter().filter(|r| r["table"] == "forecasts").map(|r| r["version"].as_u64().unwrap()).collect();
    assert!(versions.len() >= 3, "the reader saw the table change: {versions:?}");
    let daily: Vec<u64> = reads
        .iter()
        .filter(|r| r["table"] == "derived/forecast_daily")
        .map(|r| r["version"].as_u64().unwrap())
        .collect();
    assert!(
        daily.iter().any(|v| *v <= last_old_version) && daily.iter().any(|v| *v > last_old_version),
        "forecast_daily read in both layouts (laid out anew after version {last_old_version}): {daily:?}"
    );
}
