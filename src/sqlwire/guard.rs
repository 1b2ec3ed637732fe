//! Read-only analyst SQL: what a statement may do, decided on its plan.
//!
//! Refused: DDL (`CREATE [EXTERNAL] TABLE`, `DROP`, views), DML (`INSERT`, `COPY`,
//! `DELETE`), and statements that change the engine (`SET datafusion.*`, `RESET`), by
//! DataFusion's `SQLOptions`, the check `wxlake sql` applies
//! ([`crate::lake::query::read_only_plans`]). Reading outside the lake is not possible to
//! begin with: the servers' sessions register no file-reading table function (only
//! [`TABLE_FUNCTIONS`], which generate rows) and do not resolve file paths or URLs as table
//! names (DataFusion's URL tables stay off); [`check_table_functions`] keeps that true.
//!
//! `SET` of the client settings PostgreSQL drivers send on connect (`extra_float_digits`,
//! `application_name`, `DateStyle`, `TimeZone`, `statement_timeout` ...) is answered per
//! connection by the pgwire layer and changes no engine option, so it is allowed.

use datafusion::execution::context::SQLOptions;
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;

use super::error::WireError;

/// The only table functions the servers' sessions have: they generate rows, read nothing.
pub const TABLE_FUNCTIONS: [&str; 3] = ["generate_series", "range", "pg_get_keywords"];

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

/// Refuses a `SET` statement (its text) of an engine option (`datafusion.*`); other names
/// are client settings.
pub fn check_set(statement: &str) -> Result<(), WireError> {
    if statement.to_ascii_lowercase().contains("datafusion.") {
        return Err(WireError::ReadOnly(format!(
            "`{statement}` is not allowed: engine options are fixed by the server"
        )));
    }
    Ok(())
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
        assert!(check_set("SET datafusion.execution.batch_size = 1").is_err());
        check_set("SET extra_float_digits = 3").unwrap();
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
