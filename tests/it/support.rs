//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use datafusion::arrow::array::RecordBatch;
use wxlake::lake::{query, Lake};

/// A fresh lake in a temp dir (kept alive by the returned guard).
pub async fn temp_lake() -> (tempfile::TempDir, Lake) {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open(&format!("file://{}", dir.path().join("lake").display())).await.expect("open lake");
    (dir, lake)
}

/// Runs one query against the lake and collects the batches.
pub async fn sql(lake: &Lake, q: &str) -> Vec<RecordBatch> {
    let ctx = query::session(lake).await.expect("session");
    ctx.sql(q).await.unwrap_or_else(|e| panic!("{q}: {e}")).collect().await.unwrap_or_else(|e| panic!("{q}: {e}"))
}

/// A single i64-ish scalar from the first column of the first row, formatted.
pub async fn scalar(lake: &Lake, q: &str) -> String {
    let b = sql(lake, q).await;
    let text = datafusion::arrow::util::display::ArrayFormatter::try_new(
        b.first().expect("a batch").column(0).as_ref(),
        &Default::default(),
    )
    .expect("formatter")
    .value(0)
    .to_string();
    text
}

/// Path of a real-data fixture.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/real").join(rel)
}

/// Runs the wxlake binary with a lake and arguments.
pub fn wxlake(lake_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wxlake"))
        .arg("--lake")
        .arg(format!("file://{}", lake_dir.display()))
        .args(args)
        .output()
        .expect("run wxlake")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// One KNYC forecast point of `model`'s run at `run`, `lead` hours ahead, at `temp_f` °F
/// (the other units filled in as ingest does).
pub fn knyc_forecast(
    model: &'static str,
    run: chrono::DateTime<chrono::Utc>,
    lead: i64,
    temp_f: f64,
) -> wxlake::decode::types::ForecastRow {
    let mut r = wxlake::decode::types::ForecastRow {
        model,
        location_name: "KNYC".into(),
        latitude: 40.78.into(),
        longitude: Some(-73.97).into(),
        run_time: run,
        valid_time: run + chrono::Duration::hours(lead),
        forecast_hour: lead as i32,
        temperature_f: temp_f.into(),
        ..Default::default()
    };
    r.complete_temperatures();
    r
}
