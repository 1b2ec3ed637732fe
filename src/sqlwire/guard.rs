//! Read-only analyst SQL: what a statement may do, decided on its plan.
//!
//! Refused: DDL (`CREATE [EXTERNAL] TABLE`, `DROP`, views), DML (`INSERT`, `COPY`,
//! `DELETE`), and statements that change the engine (`SET datafusion.*`, `RESET`), by
//! DataFusion's `SQLOptions`, the check `wxlake sql` applies
//! ([`crate::lake::query::read_only_plans`]). Reading outside the lake is not possible to
//! begin with: the servers' sessions register no file-reading table function (only
//! [`TABLE_FUNCTIONS`], which generate rows or read lake tables by name) and do not resolve file paths or URLs as table
//! names (DataFusion's URL tables stay off); [`check_table_functions`] keeps that true.
//!
//! `SET` of the client settings PostgreSQL drivers send on connect (`extra_float_digits`,
//! `application_name`, `DateStyle`, `TimeZone`, `statement_timeout` ...) is answered per
//! connection by the pgwire layer and changes no engine option, so it is allowed; any other
//! name is refused ([`check_set`], on the parsed name).

use datafusion::execution::context::SQLOptions;
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast::{ObjectName, Set, Statement};

use super::error::WireError;
use crate::lake::as_of::AS_OF;
use crate::lake::time_travel::TABLE_AT;

/// The only table functions the servers' sessions have: they generate rows, or read the
/// lake's own tables as of a version or a time (`table_at`, `as_of`: by a table's name,
/// never a path or URL).
pub const TABLE_FUNCTIONS: [&str; 5] = ["generate_series", "range", "pg_get_keywords", TABLE_AT, AS_OF];

/// The options that make a plan read-only.
pub fn read_only() -> SQLOptions {
    SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false)
}

/// Refuses a plan that would change data, tables or the session.
pub fn check_plan(plan: &LogicalPlan) -> Result<(), WireError> {
    read_only().verify_plan(plan).map_err(|e| {
        WireError::ReadOnly(
            e.strip_backtrace().trim_start_matches("Error during planning: ").trim_end_matches('.').to_string(),
        )
    })
}

/// The settings a `SET` may change: the per-connection client settings PostgreSQL
/// drivers and tools send on connect (psql, JDBC/DBeaver/Metabase, Grafana, psycopg). The
/// pgwire layer keeps them per connection or ignores them; none is an engine option.
/// Everything else is refused: the library hands a name it does not know to DataFusion,
/// which would apply `datafusion.runtime.memory_limit` (lifting the per-query pool) or
/// `datafusion.runtime.temp_directory` (spilling anywhere).
pub const CLIENT_SETTINGS: [&str; 22] = [
    "application_name",
    "bytea_output",
    "client_encoding",
    "client_min_messages",
    "datestyle",
    "default_transaction_isolation",
    "default_transaction_read_only",
    "escape_string_warning",
    "extra_float_digits",
    "idle_in_transaction_session_timeout",
    "intervalstyle",
    "jit",
    "lc_messages",
    "lc_monetary",
    "lc_numeric",
    "lc_time",
    "lock_timeout",
    "search_path",
    "standard_conforming_strings",
    "statement_timeout",
    "timezone",
    "transaction_isolation",
];

/// A `SET` target as the engine resolves it: each part's unquoted text, lowercased,
/// joined by dots, so `"DataFusion".runtime . memory_limit` and
/// `"datafusion.runtime.memory_limit"` both read `datafusion.runtime.memory_limit`.
pub fn setting_name(name: &ObjectName) -> String {
    name.0
        .iter()
        .map(|part| match part.as_ident() {
            Some(ident) => ident.value.trim().to_lowercase(),
            None => part.to_string().to_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Refuses a `SET` of anything but a client setting ([`CLIENT_SETTINGS`]); decided on the
/// parsed statement, never on its text (quotes and spaces change the text, not the name).
pub fn check_set(statement: &Statement) -> Result<(), WireError> {
    let Statement::Set(set) = statement else { return Ok(()) };
    let names: Vec<String> = match set {
        Set::SingleAssignment { variable, .. } => vec![setting_name(variable)],
        Set::ParenthesizedAssignments { variables, .. } => variables.iter().map(setting_name).collect(),
        Set::MultipleAssignments { assignments } => assignments.iter().map(|a| setting_name(&a.name)).collect(),
        // `SET TIME ZONE`, `SET NAMES`, `SET [SESSION CHARACTERISTICS AS] TRANSACTION ...`:
        // client settings by their syntax.
        Set::SetTimeZone { .. } | Set::SetNames { .. } | Set::SetNamesDefault {} | Set::SetTransaction { .. } => {
            Vec::new()
        }
        Set::SetSessionAuthorization(_) | Set::SetSessionParam(_) | Set::SetRole { .. } => {
            return Err(refused_set(statement, "roles and session parameters are fixed by the server"));
        }
    };
    match names.iter().find(|n| !CLIENT_SETTINGS.contains(&n.as_str())) {
        Some(name) if name.starts_with("datafusion") => {
            Err(refused_set(statement, "engine options are fixed by the server"))
        }
        Some(name) => Err(refused_set(
            statement,
            &format!("`{name}` is not a client setting this server accepts ({})", CLIENT_SETTINGS.join(", ")),
        )),
        None => Ok(()),
    }
}

fn refused_set(statement: &Statement, why: &str) -> WireError {
    tracing::info!(%statement, "analyst SET refused");
    WireError::ReadOnly(format!("`{statement}` is not allowed: {why}"))
}

/// Whether the session has exactly the table functions of [`TABLE_FUNCTIONS`]; removes
/// any other (a dependency that adds a file reader such as `read_parquet` must not reach
/// analysts). Returns the names removed.
pub fn check_table_functions(state: &mut SessionState) -> Vec<String> {
    let extra: Vec<String> =
        state.table_functions().keys().filter(|n| !TABLE_FUNCTIONS.contains(&n.as_str())).cloned().collect();
    for name in &extra {
        let _ = state.deregister_udtf(name);
    }
    extra
}

/// An unknown table function's planning error, said as a refusal: a file-reading
/// function an analyst may know from other engines does not exist here on purpose.
pub fn explain_missing_function(e: WireError) -> WireError {
    let text = e.to_string();
    if text.contains("table function") && text.contains("not found") {
        return WireError::ReadOnly(format!(
            "{}; only {} exist here (nothing reads files or URLs)",
            text.lines().next().unwrap_or_default().trim_start_matches("Error during planning: "),
            TABLE_FUNCTIONS.join(", ")
        ));
    }
    e
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    use super::*;

    async fn checked(ctx: &SessionContext, sql: &str) -> Result<(), WireError> {
        let plan = ctx.state().create_logical_plan(sql).await.map_err(WireError::Engine)?;
        check_plan(&plan)
    }

    #[tokio::test]
    async fn only_reads_pass() {
        let ctx = SessionContext::new();
        ctx.sql("CREATE TABLE t (a INT)").await.unwrap();
        checked(&ctx, "SELECT a FROM t WHERE a > 1").await.unwrap();
        checked(&ctx, "EXPLAIN SELECT 1").await.unwrap();
        for sql in [
            "COPY (SELECT 1) TO '/tmp/x.csv'",
            "CREATE EXTERNAL TABLE p (l VARCHAR) STORED AS CSV LOCATION '/etc/passwd'",
            "INSERT INTO t VALUES (1)",
            "DROP TABLE t",
            "CREATE VIEW v AS SELECT 1",
            "SET datafusion.execution.target_partitions = 1",
        ] {
            let e = checked(&ctx, sql).await.unwrap_err();
            assert!(matches!(e, WireError::ReadOnly(_)), "{sql}: {e}");
            assert!(e.to_string().starts_with("read-only SQL: "), "{sql}: {e}");
        }
    }

    fn parsed(sql: &str) -> Statement {
        let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
        let mut statements = datafusion::sql::sqlparser::parser::Parser::parse_sql(&dialect, sql).unwrap();
        statements.remove(0)
    }

    #[test]
    fn set_of_an_engine_option_is_refused_however_spelled() {
        for sql in [
            "SET datafusion.execution.batch_size = 1",
            "SET \"datafusion\".runtime.memory_limit = '100G'",
            "SET \"DataFusion\".\"Runtime\".memory_limit TO '100G'",
            "SET datafusion . execution . target_partitions = 1",
            "SET \"datafusion.runtime.temp_directory\" = '/etc'",
            "SET \"datafusion.runtime\".memory_limit = '100G'",
            "SET SESSION datafusion.runtime.memory_limit = '100G'",
            "SET LOCAL \"datafusion.runtime.memory_limit\" = '100G'",
        ] {
            let e = check_set(&parsed(sql)).expect_err(sql).to_string();
            assert!(e.starts_with("read-only SQL: ") && e.contains("engine options are fixed"), "{sql}: {e}");
        }
        for sql in
            ["SET work_mem = '1GB'", "SET myext.anything = 1", "SET ROLE postgres", "SET SESSION AUTHORIZATION x"]
        {
            let e = check_set(&parsed(sql)).expect_err(sql).to_string();
            assert!(e.starts_with("read-only SQL: ") && e.contains("is not allowed"), "{sql}: {e}");
        }
    }

    #[test]
    fn the_client_settings_tools_send_on_connect_pass() {
        for sql in [
            "SET extra_float_digits = 3",
            "SET application_name = 'PostgreSQL JDBC Driver'",
            "SET DateStyle = 'ISO'",
            "SET datestyle TO ISO, MDY",
            "SET client_encoding = 'UTF8'",
            "SET search_path = public",
            "SET \"search_path\" TO \"$user\", public",
            "SET TIME ZONE 'UTC'",
            "SET timezone = 'UTC'",
            "SET statement_timeout = 30000",
            "SET SESSION statement_timeout TO '5s'",
            "SET NAMES 'UTF8'",
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "SET TRANSACTION READ ONLY",
            "SELECT 1",
        ] {
            check_set(&parsed(sql)).unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }

    #[tokio::test]
    async fn no_table_function_reads_files() {
        let ctx = SessionContext::new();
        let state_ref = ctx.state_ref();
        let mut state = state_ref.write();
        check_table_functions(&mut state);
        let mut names: Vec<&str> = state.table_functions().keys().map(String::as_str).collect();
        names.sort();
        assert!(names.iter().all(|n| TABLE_FUNCTIONS.contains(n)), "{names:?}");
    }
}
