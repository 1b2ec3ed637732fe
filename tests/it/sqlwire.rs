//! Analyst SQL over the wire with real clients on 127.0.0.1: psql and psycopg/pandas on
//! the PostgreSQL protocol. The server runs in process over a live service with a manual
//! clock; each client is a subprocess. A test whose client is not installed here says so
//! loudly and passes (CI installs them: .ci/run).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wxlake::api::keys::Tier;
use wxlake::sqlwire::{QueryLimits, WireEngine};

use super::http::App;

/// KNYC on 2026-03-08: two routine reports and an HF-METAR (nws high 50 °F).
const KNYC_REPORTS: &str = "\
KNYC 081451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00781061
KNYC 081551Z 28010KT 10SM CLR 09/M06 A3020 RMK AO2 SLP228 T00891061
KNYC 081555Z AUTO 28009KT 10SM CLR 10/M06 A3020 RMK T01001060 MADISHF
";

/// Limits small enough to hit in a test.
fn test_limits() -> QueryLimits {
    QueryLimits { memory_bytes: 16 << 20, timeout: Duration::from_secs(2), max_queries: 4, max_per_key: 2 }
}

/// The app with today's KNYC reports acknowledged (not flushed), and its pgwire port.
async fn start_pg() -> (App, u16) {
    let app = App::new().await;
    let (s, v) = app.ingest("metar", "month=2026-03", KNYC_REPORTS).await;
    assert!(s.is_success(), "{v}");
    let engine = Arc::new(WireEngine::new(app.state.clone(), test_limits()).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(wxlake::sqlwire::pg::serve(listener, engine, None, std::future::pending()));
    (app, port)
}

fn have(program: &str) -> bool {
    let ok = std::process::Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(ok || std::env::var("CI").as_deref() != Ok("true"), "{program} is missing under CI (.ci/run installs it)");
    ok
}

fn venv_python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python");
    let ok = std::process::Command::new(&p)
        .args(["-c", "import psycopg, pandas, pyarrow, adbc_driver_flightsql"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok || std::env::var("CI").as_deref() != Ok("true"),
        "the venv lacks the SQL clients under CI (.ci/run installs them)"
    );
    ok.then_some(p)
}

/// psql's output (stdout, stderr, success) for `args` with `key` as the password.
async fn psql(port: u16, key: &str, args: &[&str]) -> (String, String, bool) {
    let out = tokio::process::Command::new("psql")
        .env("PGPASSWORD", key)
        .env("PGCONNECT_TIMEOUT", "5")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "analyst", "-d", "wxlake", "-X", "-w", "-At"])
        .args(args)
        .output()
        .await
        .expect("run psql");
    (
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
        out.status.success(),
    )
}

/// Runs `sql` through psql, expecting it to be refused with `message`.
async fn refused(port: u16, key: &str, sql: &str, message: &str) {
    let (out, err, ok) = psql(port, key, &["-c", sql]).await;
    assert!(!ok, "{sql}: accepted: {out}");
    assert!(err.contains(message), "{sql}: expected {message:?} in: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_queries_catalog_and_refusals() {
    if !have("psql") {
        eprintln!("\n!!! SKIPPED psql_queries_catalog_and_refusals: psql is not installed (apt postgresql-client; CI installs it)\n");
        return;
    }
    let (app, port) = start_pg().await;
    let dev = app.key(Tier::Developer).to_string();

    // A lake table, the live extremes as REST computes them, and the unflushed observations.
    let (out, err, ok) =
        psql(port, &dev, &["-c", "SELECT station_code, name FROM stations WHERE station_code = 'KNYC'"]).await;
    assert!(ok, "{err}");
    assert!(out.starts_with("KNYC|"), "{out}");
    let q = "SELECT high, low, high_source, date FROM svc_extremes \
             WHERE station_code = 'KNYC' AND logic = 'nws' AND date = DATE '2026-03-08'";
    let (out, err, ok) = psql(port, &dev, &["-c", q]).await;
    assert!(ok, "{err}");
    // Values, not their text form: the float encoding prints `50.0` where PostgreSQL's
    // own float8 output would print `50`.
    let cols: Vec<&str> = out.split('|').collect();
    assert_eq!(cols.len(), 4, "{out}");
    assert_eq!((cols[0].parse::<f64>().ok(), cols[1].parse::<f64>().ok()), (Some(50.0), Some(46.0)), "{out}");
    assert_eq!(&cols[2..], ["observation", "2026-03-08"], "{out}");
    let (out, err, _) = psql(port, &dev, &["-c", "SELECT count(*) FROM live_observations"]).await;
    assert_eq!(out, "3", "{err}");
    let (out, _, _) = psql(port, &dev, &["-c", "SELECT count(*) FROM observations"]).await;
    assert_eq!(out, "0", "nothing flushed yet: the lake has none of them");

    // psql's catalog commands.
    let (out, err, ok) = psql(port, &dev, &["-c", "\\d"]).await;
    assert!(ok, "{err}");
    for t in ["observations", "stations", "svc_extremes", "live_observations", "daily_extremes"] {
        assert!(out.lines().any(|l| l.contains(&format!("|{t}|"))), "\\d lacks {t}:\n{out}");
    }
    let (out, err, ok) = psql(port, &dev, &["-c", "\\d stations"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("station_code"), "{out}");

    // Refusals, each with its message.
    refused(port, "not-a-key", "SELECT 1", "invalid API key").await;
    refused(port, app.key(Tier::Professional), "SELECT 1", "requires a Developer or Enterprise key").await;
    refused(port, &dev, "COPY (SELECT 1) TO '/tmp/wxlake-copy.csv'", "read-only SQL").await;
    // DataFusion's syntax does not even parse as PostgreSQL (`STORED AS` wants a Hive
    // file format): refused before planning; Flight SQL, which parses it, refuses it read-only.
    refused(port, &dev, "CREATE EXTERNAL TABLE pw (line VARCHAR) STORED AS CSV LOCATION '/etc/passwd'", "ERROR").await;
    let (_, err, _) = psql(port, &dev, &["-c", "SELECT * FROM pw"]).await;
    assert!(err.contains("not found"), "{err}");
    refused(port, &dev, "INSERT INTO observations (station_code) VALUES ('KXXX')", "read-only SQL").await;
    refused(port, &dev, "DROP TABLE stations", "read-only SQL").await;
    refused(port, &dev, "SET datafusion.execution.target_partitions = 1", "engine options are fixed").await;
    refused(port, &dev, "SELECT * FROM read_csv('/etc/passwd')", "nothing reads files or URLs").await;
    refused(port, &dev, "SELECT * FROM '/etc/passwd'", "/etc/passwd").await;
    // A hash join's build side cannot spill: over the 16 MiB pool it fails, clearly.
    refused(
        port,
        &dev,
        "SELECT count(*) FROM generate_series(1, 4000000) a(v) JOIN generate_series(1, 4000000) b(w) ON v = w",
        "MiB limit per query",
    )
    .await;
    refused(port, &dev, "SELECT count(*) FROM generate_series(1, 100000000000)", "ran longer than the 2 s limit").await;
    // The server is still fine, and the slots of the failed queries are free again.
    let (out, _, _) = psql(port, &dev, &["-c", "SELECT 41 + 1"]).await;
    assert_eq!(out, "42");

    // A revoked key stops at its next query.
    let (rec, key) = app.state.keys.create(Tier::Enterprise, "leaver", false, false).unwrap();
    assert_eq!(psql(port, &key, &["-c", "SELECT 1"]).await.0, "1");
    app.state.keys.revoke(&rec.id).unwrap();
    refused(port, &key, "SELECT 1", "invalid API key").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psycopg_parameters_into_pandas() {
    let Some(python) = venv_python() else {
        eprintln!("\n!!! SKIPPED psycopg_parameters_into_pandas: .ci/venv lacks psycopg/pandas (bash .ci/run installs them)\n");
        return;
    };
    let (app, port) = start_pg().await;
    let script = r#"
import sys, psycopg, pandas as pd
port, key = sys.argv[1], sys.argv[2]
with psycopg.connect(host="127.0.0.1", port=port, user="analyst", password=key, dbname="wxlake") as conn:
    # A parameter goes through the extended protocol (Parse/Bind/Execute).
    cur = conn.execute("SELECT name, units FROM stations WHERE station_code = %s", ("KNYC",))
    print("param", cur.fetchall())
    df = pd.read_sql("SELECT station_code, logic, high FROM svc_extremes WHERE station_code = 'KNYC' ORDER BY logic, date", conn)
    print("pandas", len(df), df["station_code"].map(type).iloc[0].__name__, df["high"].iloc[-1])
try:
    psycopg.connect(host="127.0.0.1", port=port, user="analyst", password="wrong", dbname="wxlake")
except psycopg.OperationalError as e:
    print("refused", str(e).strip().splitlines()[-1])
"#;
    let dev = app.key(Tier::Developer).to_string();
    let out =
        tokio::process::Command::new(python).args(["-c", script, &port.to_string(), &dev]).output().await.unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("param [('New York Central Park', 'fahrenheit')]"), "{stdout}");
    assert!(stdout.contains("pandas 4 str"), "{stdout}");
    assert!(stdout.contains("refused") && stdout.contains("invalid API key"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adbc_flight_sql_matches_wxlake_sql() {
    let Some(python) = venv_python() else {
        eprintln!("\n!!! SKIPPED adbc_flight_sql_matches_wxlake_sql: .ci/venv lacks adbc-driver-flightsql/pyarrow (bash .ci/run installs them)\n");
        return;
    };
    let app = App::new().await;
    let engine = Arc::new(WireEngine::new(app.state.clone(), test_limits()).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(wxlake::sqlwire::flight::serve(listener, engine, std::future::pending()));
    let query = "SELECT station_code, name, timezone, standard_offset_minutes FROM stations ORDER BY station_code";
    let script = r#"
import csv, sys
import adbc_driver_flightsql.dbapi as flight_sql
port, key, professional, query = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def connect(k):
    return flight_sql.connect(f"grpc://127.0.0.1:{port}", db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {k}"})
with connect(key) as conn:
    cur = conn.cursor()
    cur.execute(query)
    t = cur.fetch_arrow_table()
    print("type", t.schema.field("name").type)
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(t.column_names)
    for row in t.to_pylist():
        w.writerow(row.values())
    print("end-of-csv")
    cur.execute("SELECT name FROM stations WHERE station_code = $1", parameters=("KNYC",))
    print("prepared", cur.fetchall())
    objects = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
    names = sorted(t["table_name"] for c in objects for s in (c["catalog_db_schemas"] or []) for t in (s["db_schema_tables"] or []))
    print("tables", ",".join(n for n in names if n in ("observations", "stations", "svc_extremes", "live_observations")))
    print("schema", conn.adbc_get_table_schema("stations").field("station_code").type)
    for bad, sql in ((key, "DROP TABLE stations"), (key, "CREATE EXTERNAL TABLE pw (l VARCHAR) STORED AS CSV LOCATION '/etc/passwd'"),
                     ("not-a-key", "SELECT 1"), (professional, "SELECT 1")):
        try:
            with connect(bad) as c2:
                cu = c2.cursor()
                cu.execute(sql)
                cu.fetchall()
            print("accepted", sql)
        except Exception as e:
            print("refused", str(e).splitlines()[0])
"#;
    let dev = app.key(Tier::Developer).to_string();
    let pro = app.key(Tier::Professional).to_string();
    let out = tokio::process::Command::new(python)
        .args(["-c", script, &port.to_string(), &dev, &pro, query])
        .output()
        .await
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("type string"), "strings arrive as strings (not string_view): {stdout}");
    let flight_csv = stdout.split("end-of-csv").next().unwrap().lines().skip(1).collect::<Vec<_>>().join("\n");
    let lake_dir = app._dir.path().join("lake");
    let cli = super::support::wxlake(&lake_dir, &["sql", "--format", "csv", query]);
    assert!(cli.status.success(), "{}", super::support::stderr(&cli));
    assert_eq!(flight_csv.trim(), super::support::stdout(&cli).trim(), "Flight SQL equals wxlake sql --format csv");
    assert!(stdout.contains("prepared [('New York Central Park',)]"), "{stdout}");
    assert!(stdout.contains("tables live_observations,observations,stations,svc_extremes"), "{stdout}");
    assert!(stdout.contains("schema string"), "{stdout}");
    let refusals: Vec<&str> =
        stdout.lines().filter(|l| l.starts_with("refused") || l.starts_with("accepted")).collect();
    assert_eq!(refusals.len(), 4, "{stdout}");
    assert!(refusals[0].contains("read-only SQL"), "{refusals:?}");
    assert!(refusals[1].contains("read-only SQL"), "{refusals:?}");
    assert!(refusals[2].contains("invalid API key"), "{refusals:?}");
    assert!(refusals[3].contains("requires a Developer or Enterprise key"), "{refusals:?}");
}
