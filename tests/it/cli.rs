//! The binary: ingest summaries and exit codes, SQL output formats and errors.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::{fixture, stderr, stdout, wxlake};

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

#[test]
fn unknown_format_is_a_clear_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = wxlake(&dir.path().join("lake"), &["ingest", "grib", "x"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("valid formats: metar, onemin"), "{}", stderr(&o));
}
