//! The parameters of a job's SQL: `$from` and `$to`, the first and last day (inclusive)
//! of the incremental key a chunk computes.
//!
//! They are DataFusion placeholders, bound as typed `DATE` values into each planned
//! statement ([`bind`]), never spliced into the SQL text: a `$from` inside a comment or a
//! string literal stays text, and no value is ever parsed as SQL. Their types come from
//! the values, so `run_date BETWEEN $from AND $to`, `CAST($to AS VARCHAR)` and
//! `$from - INTERVAL '8 days'` all see dates.

use chrono::NaiveDate;
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use thiserror::Error;

use crate::lake::rows::date32;

/// The first day of the chunk.
pub const FROM: &str = "$from";
/// The last day of the chunk (inclusive).
pub const TO: &str = "$to";

/// Why a statement could not be bound.
#[derive(Debug, Error)]
pub enum BindError {
    /// The statement uses a parameter and the run has no range (a job without an
    /// `[incremental]` key).
    #[error("{0} is used but the run has no range")]
    NoRange(String),
    /// DataFusion refused the values (e.g. a placeholder other than `$from`/`$to`).
    #[error(transparent)]
    Plan(#[from] DataFusionError),
}

/// True when the SQL text uses `$from` or `$to` as a parameter: in the SQL, not in a
/// comment or a string literal (the text is tokenized as DataFusion's parser does).
/// Text that does not tokenize says false; planning it reports the error.
pub fn uses_range(sql: &str) -> bool {
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize() else { return false };
    tokens.iter().any(|t| matches!(t, Token::Placeholder(p) if p == FROM || p == TO))
}

/// `plan` with `$from` and `$to` replaced by the range's days as `Date32` values. A plan
/// without parameters is returned as it is, whatever the range; any other placeholder is
/// DataFusion's error naming it.
pub fn bind(plan: LogicalPlan, range: Option<(NaiveDate, NaiveDate)>) -> Result<LogicalPlan, BindError> {
    let names = plan.get_parameter_names()?;
    if names.is_empty() {
        return Ok(plan);
    }
    let day = |d: NaiveDate| ScalarValue::Date32(Some(date32(d)));
    // DataFusion names parameters without their `$`.
    let values = match range {
        Some((from, to)) => vec![(&FROM[1..], day(from)), (&TO[1..], day(to))],
        None => match [FROM, TO].into_iter().find(|p| names.contains(*p)) {
            Some(p) => return Err(BindError::NoRange(p.to_string())),
            None => Vec::new(),
        },
    };
    Ok(plan.with_param_values(values)?)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::prelude::SessionContext;
    use datafusion::sql::parser::DFParser;

    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    async fn run(sql: &str, range: Option<(NaiveDate, NaiveDate)>) -> Result<String, BindError> {
        let ctx = SessionContext::new();
        let mut statements = DFParser::parse_sql(sql)?;
        let plan = ctx.state().statement_to_plan(statements.pop_front().unwrap()).await?;
        let plan = bind(plan, range)?;
        let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
        Ok(pretty_format_batches(&batches).map_err(DataFusionError::from)?.to_string())
    }

    #[test]
    fn parameters_are_found_in_sql_only() {
        assert!(uses_range("SELECT 1 WHERE a >= $to)"));
        assert!(uses_range("SELECT 1 WHERE a BETWEEN $from AND DATE '2026-01-01'"));
        assert!(!uses_range("SELECT 1 WHERE a >= $today"));
        assert!(!uses_range("SELECT '$from', \"$to\" -- $from\n/* $to */"));
    }

    /// `$from`/`$to` become DATE values in the plan; the same words in a string literal, a
    /// quoted identifier or a comment stay as they are.
    #[tokio::test]
    async fn values_are_bound_typed_and_text_is_left_alone() {
        let r = Some((d("2026-01-10"), d("2026-01-12")));
        let out = run(
            "SELECT arrow_typeof($from) AS t, '$from -- $to' AS s, \
             $from - INTERVAL '8 days' AS early, CAST($to AS VARCHAR) AS text \
             -- $from in a comment, and 'an unterminated one\n\
             FROM (VALUES (DATE '2026-01-09'), (DATE '2026-01-11')) v(d) WHERE d BETWEEN $from AND $to /* $to */",
            r,
        )
        .await
        .unwrap();
        let row: Vec<&str> = out.lines().nth(3).unwrap().split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(row, ["Date32", "$from -- $to", "2026-01-02", "2026-01-12"], "{out}");
        assert_eq!(out.lines().filter(|l| l.starts_with('|')).count(), 2, "one row inside the range: {out}");
    }

    #[tokio::test]
    async fn unbound_and_unknown_parameters_are_errors() {
        let e = run("SELECT 1 AS n WHERE DATE '2026-01-10' >= $from", None).await.unwrap_err();
        assert!(matches!(&e, BindError::NoRange(p) if p == "$from"), "{e}");
        let r = Some((d("2026-01-10"), d("2026-01-12")));
        let e = run("SELECT 1 AS n WHERE DATE '2026-01-10' >= $tox", r).await.unwrap_err().to_string();
        assert!(e.contains("$tox"), "{e}");
        let e = run("SELECT 1 AS n WHERE DATE '2026-01-10' >= $tox", None).await.unwrap_err();
        assert!(matches!(&e, BindError::Plan(_)) && e.to_string().contains("$tox"), "{e}");
        // No parameter, no range needed.
        assert!(run("SELECT '$from' AS s", None).await.unwrap().contains("$from"));
    }
}
