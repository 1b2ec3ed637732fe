//! The lake's Delta tables under concurrency: two writers (two open lakes on one directory
//! are two processes' worth: each its own cache of snapshots and its own write lock),
//! readers during write and compaction loops, kill -9 of a writer mid-commit, time travel.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use wxlake::decode::types::ForecastRow;
use wxlake::lake::delta::TableShape;
use wxlake::lake::schema::FORECASTS;
use wxlake::lake::Lake;

use crate::support::{scalar, wxlake};

/// `n` forecast rows of one run, at stations `first..first+n` (distinct keys), in two
/// partitions (GFS and HRRR).
fn rows(first: usize, n: usize) -> Vec<ForecastRow> {
    let run = Utc.with_ymd_and_hms(2026, 3, 7, 0, 0, 0).unwrap();
    (first..first + n)
        .map(|i| {
            let mut r = ForecastRow {
                model: if i % 2 == 0 { "GFS" } else { "HRRR" },
                location_name: format!("S{i:06}").into(),
                run_time: run,
                valid_time: run + Duration::hours(6),
                forecast_hour: 6,
                temperature_c: ((i % 400) as f64 / 10.0).into(),
                ..Default::default()
            };
            r.complete_temperatures();
            r
        })
        .collect()
}

async fn open(url: &str) -> Lake {
    Lake::open(url).await.unwrap()
}

/// Rows stored, and rows stored twice, read by a fresh session on the latest snapshot.
async fn counts(lake: &Lake) -> (u64, u64) {
    let total: u64 = scalar(lake, "SELECT count(*) FROM forecasts").await.parse().unwrap();
    let twice: u64 = scalar(lake, "SELECT count(*) - count(DISTINCT row_key) FROM forecasts").await.parse().unwrap();
    (total, twice)
}

/// The server and a `wxlake ingest` write the same reports at the same moment: each
/// reads the partitions' stored keys, and the one that commits second finds its read
/// outdated, reads again and stores nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_of_the_same_rows_store_each_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("lake").display());
    let (a, b) = (open(&url).await, open(&url).await);
    for round in 0..6 {
        let batch = rows(round * 50, 80); // overlapping the previous round by 30
        let (ra, rb) = tokio::join!(a.write(batch.clone()), b.write(batch));
        let (ra, rb) = (ra.unwrap(), rb.unwrap());
        assert_eq!(ra.stored + ra.duplicate, 80);
        assert_eq!(rb.stored + rb.duplicate, 80);
    }
    assert_eq!(counts(&a).await, (5 * 50 + 80, 0));
    assert_eq!(counts(&b).await, (330, 0));
}

/// Two processes compact one table at once: one commits its merge, the other's commit
/// conflicts and changes nothing; the rows stay as they were, one file a partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_compactions_at_once_merge_each_partition_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("lake").display());
    let (a, b) = (open(&url).await, open(&url).await);
    for i in 0..6 {
        a.write(rows(i * 10, 10)).await.unwrap();
    }
    let before = counts(&a).await;
    let (sa, sb) = tokio::join!(a.compact(&FORECASTS), b.compact(&FORECASTS));
    let merged = sa.unwrap().partitions + sb.unwrap().partitions;
    assert_eq!(merged, 2, "each of the two partitions merged by one of them");
    assert_eq!(counts(&b).await, before);
    let (_, files) = b.table_files(&TableShape::lake_table(&FORECASTS)).await.unwrap();
    assert_eq!(files.len(), 2, "{files:?}");
}

/// Two processes run the same job at once: one publication wins, the other conflicts or
/// replaces it whole; the output holds one copy of every row either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_publishes_of_one_job_leave_one_output() {
    use wxlake::jobs::runner::no_progress;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("lake").display());
    let (a, b) = (open(&url).await, open(&url).await);
    let run = Utc.with_ymd_and_hms(2026, 3, 7, 0, 0, 0).unwrap();
    let points: Vec<ForecastRow> =
        (0..48).map(|lead| crate::support::knyc_forecast("GFS", run, lead, 40.0 + lead as f64)).collect();
    a.write(points).await.unwrap();
    let specs = wxlake::jobs::job_set::embedded_specs().unwrap();
    let spec = wxlake::jobs::job_set::find(&specs, "forecast_daily").unwrap();
    wxlake::jobs::run_job(&a, spec, None, &no_progress).await.unwrap();
    let once = scalar(&a, "SELECT count(*) FROM forecast_daily").await;
    assert_ne!(once, "0");
    let (ra, rb) = tokio::join!(
        wxlake::jobs::run_job(&a, spec, None, &no_progress),
        wxlake::jobs::run_job(&b, spec, None, &no_progress)
    );
    for r in [&ra, &rb] {
        if let Err(e) = r {
            assert!(e.to_string().contains("concurrent writer"), "{e}");
        }
    }
    assert!(ra.is_ok() || rb.is_ok(), "one of them published");
    assert_eq!(scalar(&b, "SELECT count(*) FROM forecast_daily").await, once);
}

/// Readers during a loop of appends and compactions see whole versions only: every count
/// a multiple of one append's rows, never falling, never a row twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_see_whole_versions_during_appends_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("lake").display());
    let writer = open(&url).await;
    let reader = open(&url).await;
    reader_loop(writer, reader).await;
}

/// The reader half of the snapshot tests (local and S3): 12 appends of 20 rows, a
/// compaction after every third, while a second lake reads counts.
pub(crate) async fn reader_loop(writer: Lake, reader: Lake) {
    const STEP: u64 = 20;
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let watch = {
        let (done, reads) = (Arc::clone(&done), Arc::clone(&reads));
        tokio::spawn(async move {
            let mut last = 0;
            let mut bad = Vec::new();
            while !done.load(Ordering::SeqCst) {
                let (n, twice) = counts(&reader).await;
                if n % STEP != 0 || n < last || twice != 0 {
                    bad.push((n, twice));
                }
                last = n;
                reads.fetch_add(1, Ordering::SeqCst);
            }
            bad
        })
    };
    for i in 0..12 {
        writer.write(rows(i * STEP as usize, STEP as usize)).await.unwrap();
        if i % 3 == 2 {
            writer.compact(&FORECASTS).await.unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    done.store(true, Ordering::SeqCst);
    let bad = watch.await.unwrap();
    assert!(reads.load(Ordering::SeqCst) >= 5, "the reader read during the loop");
    assert!(bad.is_empty(), "inconsistent reads: {bad:?}");
    assert_eq!(counts(&writer).await, (12 * STEP, 0));
}

/// `wxlake ingest` killed with SIGKILL at random moments, again and again: the table is
/// always at some version (it opens, every file it names exists), and an ingest run to
/// the end afterwards completes it with every row once.
#[test]
fn kill_9_mid_commit_leaves_a_version_before_or_after() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let lake_dir = dir.path().join("lake");
    let inputs: Vec<std::path::PathBuf> = (0..6)
        .map(|i| {
            let path = dir.path().join(format!("f{i}.csv"));
            let csv = wxlake::decode::forecast_rows::encode_forecast_csv(&rows(i * 500, 500));
            std::fs::write(&path, csv).unwrap();
            path
        })
        .collect();
    let seed: u64 = rand::random();
    eprintln!("kill -9 seed {seed}");
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(seed);
    for round in 0..8 {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_wxlake"));
        cmd.arg("--lake").arg(format!("file://{}", lake_dir.display())).args(["ingest", "forecasts"]);
        cmd.args(&inputs).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let wait = rand::Rng::random_range(&mut rng, 20..400u64);
        std::thread::sleep(std::time::Duration::from_millis(wait));
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();
        let out = wxlake(&lake_dir, &["sql", "SELECT count(*) - count(DISTINCT row_key) AS twice FROM forecasts"]);
        assert!(out.status.success(), "round {round}: {}", crate::support::stderr(&out));
        assert!(crate::support::stdout(&out).contains("0"), "round {round}: {}", crate::support::stdout(&out));
    }
    let args: Vec<&str> =
        ["ingest", "forecasts"].into_iter().chain(inputs.iter().map(|p| p.to_str().unwrap())).collect();
    let out = wxlake(&lake_dir, &args);
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    let out = wxlake(&lake_dir, &["sql", "SELECT count(*) AS n, count(DISTINCT row_key) AS d FROM forecasts"]);
    let text = crate::support::stdout(&out);
    assert!(text.contains("3000") && !text.contains("| 6000"), "{text}");
    let counted = text.matches("3000").count();
    assert_eq!(counted, 2, "every row once: {text}");
}

/// `table_at` reads a table at a past version or as committed by a past moment; a version
/// that was never committed is an error that says so.
#[tokio::test]
async fn table_at_reads_past_versions_and_moments() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(&format!("file://{}", dir.path().join("lake").display())).await;
    lake.write(rows(0, 10)).await.unwrap();
    let v_first = lake.delta_table(&TableShape::lake_table(&FORECASTS)).await.unwrap().version().unwrap();
    let between = Utc::now();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    lake.write(rows(10, 5)).await.unwrap();
    assert_eq!(scalar(&lake, "SELECT count(*) FROM forecasts").await, "15");
    assert_eq!(scalar(&lake, &format!("SELECT count(*) FROM table_at('forecasts', {v_first})")).await, "10");
    let at = between.format("%Y-%m-%dT%H:%M:%S%.3fZ");
    assert_eq!(scalar(&lake, &format!("SELECT count(*) FROM table_at('forecasts', '{at}')")).await, "10");
    let ctx = wxlake::jobs::analyst_session(&lake).await.unwrap();
    let e = ctx.sql("SELECT count(*) FROM table_at('forecasts', 99)").await.unwrap().collect().await.unwrap_err();
    assert!(e.to_string().contains("99"), "{e}");
    let e = ctx.sql("SELECT * FROM table_at('nope', 1)").await.unwrap_err();
    assert!(e.to_string().contains("no lake table 'nope'"), "{e}");
}

/// The server (live ingest, its WAL flushed to the lake every second) and `wxlake ingest`
/// processes storing the same reports at the same time: every report is in the lake once.
#[test]
fn the_server_and_wxlake_ingest_side_by_side_store_each_report_once() {
    use crate::crash::{admin_key, bin, http, start_command};
    use chrono::{Datelike, Timelike};
    let dir = tempfile::tempdir().unwrap();
    let lake = format!("file://{}", dir.path().join("lake").display());
    let key = admin_key(&lake);
    let mut cmd = bin();
    cmd.args(["--lake", &lake, "serve", "--addr", "127.0.0.1:0", "--flush-secs", "1"]);
    let (mut server, addr) = start_command(cmd);

    // Dated by the clock (no month given): the two hours may cross a month's end.
    let start = Utc::now() - Duration::minutes(130);
    let reports: Vec<String> = (0..120)
        .map(|i| {
            let t = start + Duration::minutes(i);
            format!(
                "KMDW {:02}{:02}{:02}Z AUTO 27008KT 10SM CLR 05/M02 A3012 RMK T{:04}1017",
                t.day(),
                t.hour(),
                t.minute(),
                50 + i % 7
            )
        })
        .collect();
    let file = dir.path().join("reports.txt");
    std::fs::write(&file, reports.join("\n") + "\n").unwrap();
    let side = {
        let (lake, file) = (lake.clone(), file.clone());
        std::thread::spawn(move || {
            for _ in 0..4 {
                let o = bin().args(["--lake", &lake, "ingest", "metar", file.to_str().unwrap()]).output().unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
        })
    };
    // Posts spread over about four seconds: the server flushes several times while the
    // ingest processes commit.
    for r in &reports {
        let (status, body) = http(&addr, "POST", "/api/v2/ingest/metar", &key, r);
        assert_eq!(status, 202, "{body}");
        std::thread::sleep(std::time::Duration::from_millis(30));
    }
    side.join().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500)); // a flush after the last post
    std::process::Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    server.wait().unwrap();
    let out = wxlake(
        &dir.path().join("lake"),
        &[
            "sql",
            "SELECT count(*) AS n, count(DISTINCT row_key) AS d FROM observations WHERE station_code = 'KMDW'",
            "--format",
            "csv",
        ],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n,d\n120,120\n", "{}", crate::support::stderr(&out));
}

/// Vacuum with a keep time of zero deletes the files a compaction replaced at once, and
/// never a file a writer has put but not committed yet (one no commit names is left for
/// an hour, `ORPHAN_AGE`).
#[tokio::test]
async fn vacuum_deletes_replaced_files_and_spares_uncommitted_ones() {
    use object_store::ObjectStoreExt;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("lake").display());
    let lake = Lake::open_keeping(&url, std::time::Duration::ZERO).await.unwrap();
    for i in 0..2 {
        lake.write(rows(i * 2, 2)).await.unwrap(); // one GFS and one HRRR row each
    }
    let in_flight = lake.table_path("forecasts/model=GFS/run_date=2026-03-07").join("part-in-flight.parquet");
    lake.store().put(&in_flight, b"a writer's file, its commit still to come".to_vec().into()).await.unwrap();
    assert_eq!(lake.compact(&FORECASTS).await.unwrap().files_before, 4);
    assert_eq!(lake.vacuum(FORECASTS.name).await, 4, "the four replaced files");
    assert!(lake.store().head(&in_flight).await.is_ok(), "the uncommitted file stays");
    assert_eq!(counts(&lake).await, (4, 0));
}
