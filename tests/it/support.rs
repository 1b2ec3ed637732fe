//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use wxlake::access::keys::{KeyStore, Tier};
use wxlake::access::limits::RateLimiter;
use wxlake::api::{server, AppState};
use wxlake::lake::Lake;
use wxlake::write::WriteService;

/// A fresh lake in a temp dir (kept alive by the returned guard).
pub async fn temp_lake() -> (tempfile::TempDir, Lake) {
    let dir = tempfile::tempdir().expect("tempdir");
    let lake = Lake::open(&format!("file://{}", dir.path().join("lake").display())).await.expect("open lake");
    (dir, lake)
}

/// Puts an unreadable file into `partition` of lake table `table` and commits it: a
/// corrupt file the table's snapshot names.
pub async fn commit_broken_file(lake: &Lake, table: &str, partition: &str) {
    use object_store::ObjectStoreExt;
    use wxlake::lake::delta::{Change, NewFile, TableShape};
    let shape = TableShape::lake_table(wxlake::lake::schema::table(table).expect("a lake table"));
    let bytes = b"PAR1 this is not parquet";
    let name = "part-broken.parquet";
    let at = lake.table_path(&format!("{table}/{partition}")).join(name);
    lake.store().put(&at, bytes.to_vec().into()).await.unwrap();
    let snapshot = lake.delta_table(&shape).await.unwrap();
    let file = NewFile { partition_dir: partition.into(), name: name.into(), size: bytes.len() as u64, rows: 1 };
    lake.commit(&shape, &snapshot, Change::Append { files: vec![file], read: None }).await.unwrap();
}

/// Runs one query in the analysts' session (the lake's tables, the jobs' derived tables,
/// `job_runs`) and collects the batches.
/// The write path over `lake` as `serve` opens it: its reads see the lake's tables and the
/// jobs' derived tables.
pub async fn open_live(lake: &Lake, state_dir: &Path, clock: Arc<dyn wxlake::clock::Clock>) -> WriteService {
    let session = wxlake::jobs::analyst_session(lake).await.unwrap();
    WriteService::open(lake.clone(), session, state_dir, clock).await.unwrap()
}

/// The columns of a derived table that say what it holds, not when its job ran: all but
/// `computed_at` (the run's clock) and, for a day still in progress, `data_quality` (it
/// describes the day "so far": a run a few seconds later sees more of it missing). Two
/// runs of the same jobs on the same rows agree on these, whenever each ran.
pub fn comparable_columns(table: &str) -> &'static str {
    match table {
        "forecast_daily" | "accuracy_pairs" => "*",
        "daily_extremes" => {
            "* EXCLUDE (computed_at, data_quality), CASE WHEN day_complete THEN data_quality END AS data_quality"
        }
        _ => "* EXCLUDE (computed_at)",
    }
}

pub async fn sql(lake: &Lake, q: &str) -> Vec<RecordBatch> {
    let ctx = wxlake::jobs::analyst_session(lake).await.expect("session");
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

/// Every row of a query, each column as text.
pub async fn rows(lake: &Lake, q: &str) -> Vec<Vec<String>> {
    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    let options = FormatOptions::default();
    let mut out = Vec::new();
    for b in sql(lake, q).await {
        let fmt: Vec<_> = b.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap()).collect();
        out.extend((0..b.num_rows()).map(|i| fmt.iter().map(|f| f.value(i).to_string()).collect()));
    }
    out
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

/// The REST API (the real router, in process) over a live service, on its clock, with a
/// Developer key.
pub struct Api {
    pub state: AppState,
    key: String,
}

impl Api {
    /// Keys are kept in `state_dir`.
    pub fn over(live: Arc<WriteService>, state_dir: &Path) -> Api {
        let keys = KeyStore::open(state_dir).expect("key store");
        let key = keys.create(Tier::Developer, "u-dev", false, false).expect("a key").1;
        let clock = Arc::clone(&live.clock);
        let state = AppState::new(keys, RateLimiter::new(Arc::clone(&clock)), live, clock);
        Api { state, key }
    }

    /// GETs `uri`: its status, headers and body (JSON, or the text as a JSON string).
    pub async fn get_any(&self, uri: &str) -> (axum::http::StatusCode, axum::http::HeaderMap, serde_json::Value) {
        use tower::ServiceExt;
        let req = axum::http::Request::builder()
            .uri(uri)
            .header("Authorization", format!("Bearer {}", self.key))
            .body(axum::body::Body::empty())
            .unwrap();
        let resp = server::router(self.state.clone()).oneshot(req).await.unwrap();
        let (status, headers) = (resp.status(), resp.headers().clone());
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 26).await.unwrap();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, headers, body)
    }

    /// GETs `uri`, which must answer 200 with JSON: its headers and body.
    pub async fn get(&self, uri: &str) -> (axum::http::HeaderMap, serde_json::Value) {
        let (status, headers, body) = self.get_any(uri).await;
        assert_eq!(status, axum::http::StatusCode::OK, "{uri}: {body}");
        assert!(!body.is_string(), "{uri}: not JSON: {body}");
        (headers, body)
    }
}
