//! Housekeeping of the binary and the bench scripts (issue 15): a refused second `serve`
//! has no side effect, full job runs cover the whole history, the bench scripts survive a
//! long partition listing under `set -o pipefail`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{stderr, stdout, wxlake};

/// A second `serve --demo` on a state another server holds refuses before any side
/// effect: no key minted or printed, one clear message.
#[test]
fn a_refused_second_serve_has_no_side_effect() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    // Some data, so that --demo does not build a demo lake.
    let line = "KNYC 011251Z 00000KT 10SM CLR 05/M02 A3012 RMK AO2 T00501017\n";
    let input = dir.path().join("in.txt");
    std::fs::write(&input, line).unwrap();
    let o = wxlake(&lake, &["ingest", "metar", "--month", "2026-03", input.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));

    let mut first = Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .arg("--lake")
        .arg(format!("file://{}", lake.display()))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(first.stderr.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut up = false;
    while Instant::now() < deadline {
        let Some(Ok(l)) = lines.next() else { break };
        if l.contains("listening on http://") {
            up = true;
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    if !up {
        let _ = first.kill();
        panic!("the first server did not start");
    }
    let keys = dir.path().join("lake.state/keys.json");
    let keys_before = std::fs::read(&keys).unwrap_or_default();

    let o = wxlake(&lake, &["serve", "--demo", "--addr", "127.0.0.1:0", "--stream-addr", "127.0.0.1:0"]);
    let _ = first.kill();
    let _ = first.wait();
    assert!(!o.status.success());
    assert_eq!(stdout(&o), "", "no key printed");
    assert_eq!(std::fs::read(&keys).unwrap_or_default(), keys_before, "no key minted");
    let err = stderr(&o);
    assert!(err.contains("another wxlake serve") && err.contains("lake.state"), "{err}");
    assert_eq!(err.matches("another wxlake serve").count(), 1, "said once: {err}");
    assert!(!err.contains("demo:"), "nothing of the demo started: {err}");
}

/// `jobs run --all` and `jobs run daily_extremes` without a range cover every trading day
/// of the inputs, however old, not only the days of the observations' partitions: here the
/// history is one-minute data (January 1-10) and the observations are two later days.
#[test]
fn full_job_runs_cover_the_whole_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut onemin = String::from("station,valid,tmpf\n");
    let start = chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap().and_hms_opt(0, 0, 0).unwrap();
    for k in 0..(10 * 24 * 6) {
        let t = start + chrono::Duration::minutes(10 * k);
        onemin.push_str(&format!("KNYC,{},{}\n", t.format("%Y-%m-%d %H:%M"), 30 + k % 7));
    }
    let onemin_file = dir.path().join("onemin.csv");
    std::fs::write(&onemin_file, onemin).unwrap();
    // 02:51Z on the 20th is 21:51 Local Standard Time on the 19th: that trading day lies
    // before the first UTC date of the observations.
    let mut metars = String::from("KNYC 200251Z 27008KT 10SM CLR 01/M02 A3012 RMK AO2 T00111017\n");
    for hour in 0..24 {
        metars.push_str(&format!("KNYC 21{hour:02}51Z 27008KT 10SM CLR 02/M02 A3012 RMK AO2 T00221017\n"));
    }
    let metar_file = dir.path().join("metar.txt");
    std::fs::write(&metar_file, metars).unwrap();

    let q = "SELECT count(DISTINCT date) AS n, min(date) AS first, max(date) AS last FROM daily_extremes \
             WHERE station_code = 'KNYC' AND logic = 'nws'";
    for (name, args) in [("one job", &["jobs", "run", "daily_extremes"][..]), ("--all", &["jobs", "run", "--all"][..])]
    {
        let lake = dir.path().join(format!("lake-{}", name.replace(' ', "-")));
        let o = wxlake(&lake, &["ingest", "onemin", onemin_file.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let o = wxlake(&lake, &["ingest", "metar", "--month", "2025-01", metar_file.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let o = wxlake(&lake, args);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains("daily_extremes: ok") && stderr(&o).contains("(full)"), "{}", stderr(&o));
        let o = wxlake(&lake, &["sql", q, "--format", "csv"]);
        // LST days: Dec 31 (the first minutes, 19:00 LST) to Jan 10 from the one-minute
        // data; Jan 19 to 21 from the observations.
        assert_eq!(stdout(&o), "n,first,last\n14,2024-12-31,2025-01-21\n", "{name}: {}", stderr(&o));
    }
}

/// The engine-comparison scripts find the first and last partition of a large lake under
/// `set -euo pipefail` (`sort | head` exited 141 there: the writer died of SIGPIPE).
#[test]
fn bench_scripts_read_partition_ranges_of_large_lakes() {
    let dir = tempfile::tempdir().unwrap();
    let forecasts = dir.path().join("forecasts");
    let start = chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
    for m in 0..18 {
        for d in 0..401 {
            let day = start + chrono::Duration::days(d);
            std::fs::create_dir_all(forecasts.join(format!("model=M{m:02}/run_date={day}"))).unwrap();
        }
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let script = format!(
        "set -euo pipefail; cd '{root}'; . benches/bench_env.sh; RANGE=$(partition_range \"$1\" run_date); \
         read -r FIRST LAST <<< \"$RANGE\"; echo \"$FIRST $LAST\"; \
         test -z \"$(partition_range \"$1\" no_such_key)\"; echo empty-ok"
    );
    let o = Command::new("bash").args(["-c", &script, "_", forecasts.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), stderr(&o));
    assert_eq!(stdout(&o), "2025-01-01 2026-02-05\nempty-ok\n");
    // Both scripts use it (no `sort | head` left under pipefail).
    for s in ["benches/jobs_vs_duckdb.sh", "benches/accuracy_vs_duckdb.sh"] {
        let text = std::fs::read_to_string(std::path::Path::new(root).join(s)).unwrap();
        assert!(text.contains("partition_range") && !text.contains("| head"), "{s}");
    }
}
