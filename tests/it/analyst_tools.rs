//! The tools analysts open, against the real server on 127.0.0.1, each its real client in a
//! subprocess (issue 30): SQLAlchemy 2 + psycopg 3 and pandas (the inspector, table
//! reflection, `read_sql_table`, a million rows streamed with bounded client memory,
//! server-side cursors under both psycopg implementations), pgjdbc as DBeaver drives it
//! (sqlwire/PgJdbcBrowse.java), Grafana's exact SQL texts over both protocols
//! (sqlwire/grafana.sql), and ADBC Flight SQL with `?` and `$n` parameters re-executed.
//! Like tests/it/sqlwire.rs: a client that is not installed here is a loud skip, and a
//! failure under CI=true (.ci/run installs them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use wxlake::access::keys::Tier;
use wxlake::sqlwire::QueryLimits;

use super::http::App;
use super::sqlwire::{app_with_reports, have, serve_flight, serve_pg, venv_python};

/// Room for a tool's catalog sweep and a million streamed rows: a cursor's query lives
/// across its fetches, under one time limit.
fn tool_limits() -> QueryLimits {
    QueryLimits {
        memory_bytes: 256 << 20,
        timeout: Duration::from_secs(120),
        max_queries: 4,
        max_per_key: 4,
        wait: Duration::from_secs(5),
        max_connections: 16,
    }
}

/// The app with today's KNYC reports flushed to the lake (so `observations` has rows and
/// files), and its pgwire port.
async fn start() -> (App, u16) {
    let app = app_with_reports().await;
    app.state.live.flush().await.unwrap();
    let port = serve_pg(&app, tool_limits(), None).await;
    (app, port)
}

/// The `ok <name> <value>` lines of a client's output by name (asserting none failed but
/// the `expected_failures`), with the output for messages.
fn steps(stdout: &str, expected_failures: &[&str]) -> HashMap<String, String> {
    let mut ok = HashMap::new();
    for line in stdout.lines() {
        let mut parts = line.splitn(3, ' ');
        let (status, name, value) = (parts.next(), parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        match status {
            Some("ok") => {
                ok.insert(name.to_string(), value.to_string());
            }
            Some("fail") => {
                assert!(expected_failures.contains(&name), "{name} failed: {value}\n{stdout}");
                ok.insert(name.to_string(), format!("FAILED {value}"));
            }
            _ => {}
        }
    }
    ok
}

/// Runs `python script args`, with `env`; its stdout (the run must succeed).
async fn run_python(python: &Path, script: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/sqlwire").join(script);
    let out =
        tokio::process::Command::new(python).arg(path).args(args).envs(env.iter().copied()).output().await.unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script} {args:?}: {stdout}\n{stderr}");
    stdout.into_owned()
}

/// The columns of `table` in the server's own session.
async fn column_count(app: &App, table: &str) -> usize {
    app.state.live.ctx.table(table).await.unwrap().schema().fields().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlalchemy_and_pandas_reflect_read_and_stream() {
    let Some(python) = venv_python() else {
        eprintln!("\n!!! SKIPPED sqlalchemy_and_pandas_reflect_read_and_stream: .ci/venv lacks sqlalchemy (bash .ci/run installs it)\n");
        return;
    };
    let (app, port) = start().await;
    let key = app.key(Tier::Enterprise).to_string();
    let port = port.to_string();

    let out = run_python(&python, "sqlalchemy_pandas.py", &["inspect", &port, &key], &[]).await;
    let s = steps(&out, &[]);
    // The dialect's version probe parses `version()`.
    assert_eq!(s["server_version"], "16.6", "{out}");
    assert!(s["schemas"].split(',').any(|n| n == "public"), "{out}");
    let tables: Vec<&str> = s["tables"].split(',').collect();
    for t in ["observations", "stations", "svc_extremes", "live_observations"] {
        assert!(tables.contains(&t), "{t}: {out}");
    }
    assert_eq!(s["views"], "0", "no views on the search path, as in PostgreSQL: {out}");
    assert_eq!(s["reflect"], tables.len().to_string(), "MetaData.reflect finds every table: {out}");
    assert!(
        s["columns"].starts_with("station_code:TEXT:False,name:TEXT:False,")
            && s["columns"].contains("standard_offset_minutes:INTEGER:False")
            && s["columns"].contains("latitude:DOUBLE PRECISION:False"),
        "{out}"
    );
    // A database without keys, indexes or constraints, as PostgreSQL answers for one.
    for (step, none) in [("pk", "[]"), ("foreign_keys", "0"), ("indexes", "0"), ("unique", "0"), ("checks", "0")] {
        assert_eq!(s[step], none, "{step}: {out}");
    }
    assert_eq!(s["has_table"], "(True, False)", "{out}");
    assert_eq!(s["autoload"], column_count(&app, "observations").await.to_string(), "{out}");
    let stations = app.state.live.ctx.sql("SELECT count(*) FROM stations").await.unwrap().collect().await.unwrap();
    let stations = datafusion::arrow::util::display::array_value_to_string(stations[0].column(0), 0).unwrap();
    assert_eq!(s["read_sql_table"], format!("{stations}x{}", column_count(&app, "stations").await), "{out}");
    assert_eq!(s["read_sql_params"], "1", "{out}");
    assert_eq!(s["column_names"], "count,avg,?column?,station_code", "named as PostgreSQL names them: {out}");
    assert_eq!(s["like_escape"], "['KNYC'] []", "LIKE ... ESCAPE '/': {out}");
    assert_eq!(s["nested_transaction"], "42", "a savepoint's rollback leaves the transaction working: {out}");
    assert_eq!(s["prepared_rollback"], "New York Central Park", "DEALLOCATE ALL after a rollback: {out}");

    let out = run_python(&python, "sqlalchemy_pandas.py", &["stream", &port, &key], &[]).await;
    let s = steps(&out, &[]);
    let growth = |step: &str| -> f64 { s[step].rsplit(' ').next().unwrap().parse().unwrap() };
    assert!(s["stream_results"].starts_with("1000000 500000500000 "), "every row, once: {out}");
    assert!(s["read_sql_chunksize"].starts_with("1000000 50 "), "fifty chunks of 20,000: {out}");
    assert!(s["read_sql_whole"].starts_with("1000000 "), "{out}");
    // Streamed, the client holds a batch at a time; whole, it holds the million rows.
    let whole = growth("read_sql_whole");
    assert!(whole > 150.0, "the yardstick is a million rows in memory: {out}");
    assert!(growth("stream_results") < whole / 5.0, "stream_results is bounded: {out}");
    assert!(growth("read_sql_chunksize") < whole / 4.0, "chunksize over a streaming connection is bounded: {out}");

    // psycopg's C implementation (`binary`, the default, which crashed on 0-column cursors) and the
    // pure-Python one.
    for implementation in ["binary", "python"] {
        let out =
            run_python(&python, "sqlalchemy_pandas.py", &["cursors", &port, &key], &[("PSYCOPG_IMPL", implementation)])
                .await;
        let s = steps(&out, &["plain_after_commit"]);
        assert_eq!(s["named_description"], "station_code,name", "{implementation}: {out}");
        assert_eq!(s["named_rows"], "[('KNYC', 'New York Central Park')]", "{implementation}: {out}");
        assert_eq!(s["binary_fetchmany"], "(1000, 1000, 500)", "{implementation}: {out}");
        assert_eq!(s["plain_after_commit"], "FAILED cursor \"plain\" does not exist", "{implementation}: {out}");
        assert_eq!(s["held_after_commit"], "[(2,)]", "{implementation}: {out}");
        assert_eq!(s["after_savepoint_rollback"], "7", "{implementation}: {out}");
        assert_eq!(s["deallocate_all"], "DEALLOCATE ALL", "{implementation}: {out}");
    }
}

/// pgjdbc's jar: Debian's libpostgresql-jdbc-java, or `PGJDBC_JAR`.
fn pgjdbc_jar() -> Option<PathBuf> {
    let jar =
        std::env::var_os("PGJDBC_JAR").map(PathBuf::from).unwrap_or_else(|| "/usr/share/java/postgresql.jar".into());
    let ok = jar.exists() && have("javac") && have("java");
    assert!(
        ok || std::env::var("CI").as_deref() != Ok("true"),
        "pgjdbc or a JDK is missing under CI (.ci/run installs them)"
    );
    ok.then_some(jar)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgjdbc_metadata_and_result_sets_as_dbeaver_browses() {
    let Some(jar) = pgjdbc_jar() else {
        eprintln!("\n!!! SKIPPED pgjdbc_metadata_and_result_sets_as_dbeaver_browses: no JDK or pgjdbc (bash .ci/run installs them)\n");
        return;
    };
    let (app, port) = start().await;
    let classes = tempfile::tempdir().unwrap();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/sqlwire/PgJdbcBrowse.java");
    let built = tokio::process::Command::new("javac")
        .arg("-d")
        .arg(classes.path())
        .arg("-cp")
        .arg(&jar)
        .arg(&source)
        .output()
        .await
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let classpath = format!("{}:{}", jar.display(), classes.path().display());
    let out = tokio::process::Command::new("java")
        .args(["-cp", &classpath, "PgJdbcBrowse", &port.to_string(), app.key(Tier::Enterprise)])
        .output()
        .await
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let s = steps(&stdout, &[]);
    assert_eq!(s["product"], "PostgreSQL 16", "{stdout}");
    assert_eq!(s["catalogs"], "1 wxlake", "{stdout}");
    assert!(s["tables"].contains(",observations,") && s["tables"].contains(",stations,"), "{stdout}");
    let stations_columns = column_count(&app, "stations").await;
    assert_eq!(
        s["columns"],
        format!("{stations_columns} text,text,text,text,text,text,int4,float8,float8,float8,bool"),
        "{stdout}"
    );
    // No keys, indexes, functions, procedures, types or privileges: empty, not errors.
    for none in [
        "primary_keys",
        "imported_keys",
        "exported_keys",
        "index_info",
        "unique_index_info",
        "best_row_identifier",
        "functions",
        "procedures",
        "udts",
        "table_privileges",
        "column_privileges",
    ] {
        assert!(s[none].starts_with("0"), "{none}: {stdout}");
    }
    assert_eq!(s["max_columns_in_index"], "32", "{stdout}");
    let (types, int4, timestamptz) = {
        let mut p = s["type_info"].split(' ');
        (p.next().unwrap().parse::<usize>().unwrap(), p.next().unwrap(), p.next().unwrap())
    };
    assert!(types > 50 && int4 == "true" && timestamptz == "true", "{stdout}");
    // Browsing: each column knows its table; a computed one has none, as in PostgreSQL.
    assert!(s["browse"].ends_with(&format!(" {stations_columns} stations  station_code 0")), "{stdout}");
    assert_eq!(s["key_column"], "numeric 20 0 BigDecimal observations", "{stdout}");
    assert_eq!(s["computed_column_table"], "''", "{stdout}");
    assert_eq!(s["interval"], "0 years 0 mons 1 days 0 hours 0 mins 0.0 secs", "{stdout}");
    assert_eq!(s["null"], "null", "{stdout}");
    assert_eq!(s["prepared"], "210", "server-side prepared, re-executed: {stdout}");
    assert_eq!(s["timestamp_parameter"], "true", "{stdout}");
    assert_eq!(s["fetch_size"], "25000 312512500", "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grafanas_sql_texts_answer_on_both_protocols() {
    let Some(python) = venv_python() else {
        eprintln!("\n!!! SKIPPED grafanas_sql_texts_answer_on_both_protocols: .ci/venv lacks psycopg (bash .ci/run installs it)\n");
        return;
    };
    let (app, port) = start().await;
    let out = run_python(&python, "grafana.py", &[&port.to_string(), app.key(Tier::Enterprise)], &[]).await;
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("fail ")).collect();
    assert!(failed.is_empty(), "{}\n{out}", failed.join("\n"));
    let answer = |id: &str, protocol: &str| -> String {
        let prefix = format!("ok {id} {protocol} ");
        out.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{id} {protocol}: {out}"))
            .to_string()
    };
    let texts = out.lines().filter(|l| l.contains(" simple ")).count();
    assert_eq!(texts, 36, "every text ran: {out}");
    for protocol in ["simple", "unnamed", "named"] {
        // The version probe: `current_setting('server_version_num')::int/100`.
        assert!(answer("version_probe", protocol).starts_with("1 [\"1600\"]"), "{out}");
        // The table list names the search path's tables as PostgreSQL does, unqualified.
        let tables = answer("show_tables", protocol);
        assert!(tables.contains("\"observations\"") && !tables.contains("public."), "{out}");
        // Columns by bare table name, with PostgreSQL's type names.
        let observations = column_count(&app, "observations").await;
        for id in ["columns_unqualified", "columns_qualified"] {
            let columns = answer(id, protocol);
            assert!(columns.starts_with(&format!("{observations} [\"station_code\", \"text\"]")), "{id}: {out}");
        }
        let columns = answer("schemads_columns", protocol);
        assert!(
            columns.starts_with(&format!("{observations} [\"station_code\", \"text\", \"text\", null, null]")),
            "{out}"
        );
        assert!(answer("health_ping_pgx", protocol).starts_with("0 "), "{out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adbc_question_marks_and_numbered_parameters_re_execute() {
    let Some(python) = venv_python() else {
        eprintln!("\n!!! SKIPPED adbc_question_marks_and_numbered_parameters_re_execute: .ci/venv lacks adbc-driver-flightsql (bash .ci/run installs it)\n");
        return;
    };
    let app = App::new().await;
    let port = serve_flight(&app, tool_limits()).await;
    let script = r#"
import sys
import adbc_driver_flightsql.dbapi as flight_sql
port, key = sys.argv[1:3]
with flight_sql.connect(f"grpc://127.0.0.1:{port}", db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {key}"}) as conn:
    cur = conn.cursor()
    for sql in ("SELECT name FROM stations WHERE station_code = ? AND standard_offset_minutes < ?",
                "SELECT name FROM stations WHERE station_code = $1 AND standard_offset_minutes < $2"):
        for code, offset in (("KNYC", 0), ("KLAX", 0), ("KNYC", -600)):
            cur.execute(sql, parameters=(code, offset))
            print("rows", "?" if "?" in sql else "$", code, offset, cur.fetchall())
    cur.execute("SELECT ? || '-' || ? AS s, ? + 1 AS n", parameters=("a", "b", 41))
    print("mixed", cur.fetchall())
    try:
        cur.execute("SELECT ? + $1", parameters=(1,))
        print("both accepted", cur.fetchall())
    except Exception as e:
        print("both refused", str(e).splitlines()[0])
"#;
    let out = tokio::process::Command::new(python)
        .args(["-c", script, &port.to_string(), app.key(Tier::Enterprise)])
        .output()
        .await
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for style in ["?", "$"] {
        assert!(stdout.contains(&format!("rows {style} KNYC 0 [('New York Central Park',)]")), "{stdout}");
        assert!(stdout.contains(&format!("rows {style} KLAX 0 [('Los Angeles International Airport',)]")), "{stdout}");
        assert!(stdout.contains(&format!("rows {style} KNYC -600 []")), "{stdout}");
    }
    assert!(stdout.contains("mixed [('a-b', 42)]"), "{stdout}");
    assert!(stdout.contains("both refused") && stdout.contains("either ? or $1"), "{stdout}");

    // Key metadata: the specification's schemas, no rows (the lake declares no keys).
    let mut client = super::sqlwire::flight_client(port, app.key(Tier::Enterprise)).await;
    let info = client
        .get_primary_keys(arrow_flight::sql::CommandGetPrimaryKeys {
            catalog: None,
            db_schema: Some("public".into()),
            table: "stations".into(),
        })
        .await
        .unwrap();
    let ticket = info.endpoint[0].ticket.clone().unwrap();
    assert_eq!(super::sqlwire::fetch(&mut client, ticket).await, Ok(0));
    let info = client
        .get_imported_keys(arrow_flight::sql::CommandGetImportedKeys {
            catalog: None,
            db_schema: Some("public".into()),
            table: "stations".into(),
        })
        .await
        .unwrap();
    let schema = info.clone().try_decode_schema().unwrap();
    assert!(schema.field_with_name("fk_table_name").is_ok(), "{schema:?}");
    assert_eq!(super::sqlwire::fetch(&mut client, info.endpoint[0].ticket.clone().unwrap()).await, Ok(0));
}
