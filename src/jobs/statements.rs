//! A job's SQL in a session: every statement of its files parsed, planned, its `$from` and
//! `$to` bound ([`super::params`]) and run in order; the last one's rows are the output,
//! cast to the declared columns. Shared by the runner and the sqllogictest adapter, so the
//! tests run the very SQL text the job runs.

use chrono::NaiveDate;
use datafusion::arrow::array::AsArray;
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::{cast as cast_expr, CreateView, DdlStatement, Expr, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::DFParser;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use super::error::JobError;
use super::params;
use super::spec::JobSpec;

/// How a job's `CREATE TABLE … AS` intermediates are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intermediates {
    /// Computed once and held in the session (a local run), declaring the hash
    /// partitioning of the plan that made them ([`super::hashed_table`]).
    Tables,
    /// For a cluster, where a table's rows come back to the client and travel out again
    /// inside the next statement's plan (gRPC messages, capped at 256 MiB: one year of 70
    /// stations' spread pairs, an intermediate `accuracy_trends` had before session 38,
    /// were past it). An intermediate named once in the statements
    /// after it becomes a view, so its work runs inside that statement's plan on the
    /// executors; one named more often stays a table (a view would be computed per use).
    ViewsWhenUsedOnce,
}

/// Runs the job's statements in `ctx` (inputs and computed tables already registered; the
/// functions jobs call, [`super::functions`], registered here), `$from`/`$to` bound to
/// `range`, and returns the last one's result cast to the declared output columns.
pub async fn run_statements(
    ctx: &SessionContext,
    spec: &JobSpec,
    range: Option<(NaiveDate, NaiveDate)>,
    intermediates: Intermediates,
) -> Result<DataFrame, JobError> {
    let sql_err = |file: &str, statement: usize, e: datafusion::error::DataFusionError| JobError::Sql {
        job: spec.name.clone(),
        file: file.to_string(),
        statement,
        source: Box::new(e),
    };
    let mut statements = Vec::new();
    for f in &spec.sql {
        let parsed = DFParser::parse_sql(&f.text).map_err(|e| sql_err(&f.path, 0, e))?;
        for (i, s) in parsed.into_iter().enumerate() {
            statements.push((f.path.as_str(), i + 1, s));
        }
    }
    let Some(last) = statements.pop() else {
        return Err(JobError::Output { job: spec.name.clone(), reason: "the SQL files hold no statement".into() });
    };
    let bind = |plan: LogicalPlan, file: &str, n: usize| {
        params::bind(plan, range).map_err(|e| match e {
            params::BindError::NoRange(p) => JobError::Range {
                job: spec.name.clone(),
                reason: format!("{file}: {p} is used but the run has no range"),
            },
            params::BindError::Plan(e) => sql_err(file, n, e),
        })
    };
    let texts: Vec<String> = statements.iter().chain([&last]).map(|(_, _, s)| s.to_string()).collect();
    super::functions::register(ctx);
    let state = ctx.state();
    for (i, (file, n, s)) in statements.into_iter().enumerate() {
        let plan = state.statement_to_plan(s).await.map_err(|e| sql_err(file, n, e))?;
        let plan = match (intermediates, bind(plan, file, n)?) {
            (Intermediates::ViewsWhenUsedOnce, LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(t)))
                if references(t.name.table(), &texts[i + 1..]) == 1 =>
            {
                LogicalPlan::Ddl(DdlStatement::CreateView(CreateView {
                    name: t.name,
                    input: t.input,
                    or_replace: t.or_replace,
                    definition: None,
                    temporary: t.temporary,
                }))
            }
            (_, plan) => plan,
        };
        if let LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(t)) = &plan {
            trace_analyzed(ctx, &t.input, &spec.name, file, n).await;
        }
        let started = std::time::Instant::now();
        match plan {
            LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(t)) if intermediates == Intermediates::Tables => {
                super::hashed_table::create(ctx, t).await.map_err(|e| sql_err(file, n, e))?
            }
            plan => {
                ctx.execute_logical_plan(plan)
                    .await
                    .map_err(|e| sql_err(file, n, e))?
                    .collect()
                    .await
                    .map_err(|e| sql_err(file, n, e))?;
            }
        }
        tracing::debug!(job = %spec.name, file, statement = n, elapsed_ms = started.elapsed().as_millis() as u64, "statement ran");
    }
    let (file, n, s) = last;
    let plan = state.statement_to_plan(s).await.map_err(|e| sql_err(file, n, e))?;
    let plan = bind(plan, file, n)?;
    if matches!(plan, LogicalPlan::Ddl(_) | LogicalPlan::Dml(_) | LogicalPlan::Copy(_) | LogicalPlan::Statement(_)) {
        return Err(sql_err(
            file,
            n,
            datafusion::error::DataFusionError::Plan("the last statement must be a query producing the output".into()),
        ));
    }
    trace_analyzed(ctx, &plan, &spec.name, file, n).await;
    let df = ctx.execute_logical_plan(plan).await.map_err(|e| sql_err(file, n, e))?;
    conform(df, spec).map_err(|e| match e {
        JobError::DataFusion(d) => sql_err(file, n, d),
        other => other,
    })
}

/// At `trace` level (`RUST_LOG=wxlake::jobs::statements=trace`), runs `query` once more
/// under EXPLAIN ANALYZE and logs the plan with each operator's rows and time: where a
/// statement's time goes, without copying the job's SQL and its helper tables into another
/// session. The query then runs twice, so the run's own timings are not comparable.
async fn trace_analyzed(ctx: &SessionContext, query: &LogicalPlan, job: &str, file: &str, statement: usize) {
    if !tracing::enabled!(tracing::Level::TRACE) {
        return;
    }
    let analyzed = async {
        let batches = DataFrame::new(ctx.state(), query.clone()).explain(false, true)?.collect().await?;
        let mut text = String::new();
        for b in &batches {
            // (plan_type, plan): the plan's text, one operator a line.
            let plans = crate::lake::bound_sql::utf8_column(b, 1)?;
            for plan in plans.as_string::<i32>().iter().flatten() {
                text.push_str(plan);
            }
        }
        Ok::<_, datafusion::error::DataFusionError>(text)
    };
    match analyzed.await {
        Ok(text) => tracing::trace!(job, file, statement, "statement analyzed\n{text}"),
        Err(e) => tracing::trace!(job, file, statement, error = %e, "statement not analyzed"),
    }
}

/// How many times `name` appears as a word in `texts` (SQL): a table joined to itself
/// counts twice. Text that does not tokenize counts as many uses.
fn references(name: &str, texts: &[String]) -> usize {
    texts
        .iter()
        .map(|t| {
            Tokenizer::new(&GenericDialect {}, t).tokenize().map_or(2, |tokens| {
                tokens.iter().filter(|k| matches!(k, Token::Word(w) if w.value.eq_ignore_ascii_case(name))).count()
            })
        })
        .sum()
}

/// Selects the declared columns, in declared order, cast to their declared types.
fn conform(df: DataFrame, spec: &JobSpec) -> Result<DataFrame, JobError> {
    let bad = |reason: String| JobError::Output { job: spec.name.clone(), reason };
    let produced: Vec<String> = df.schema().fields().iter().map(|f| f.name().clone()).collect();
    for p in &produced {
        if !spec.output.columns.iter().any(|c| &c.name == p) {
            return Err(bad(format!("the query produces column {p}, which [output].columns does not declare")));
        }
    }
    let mut exprs = Vec::new();
    for c in &spec.output.columns {
        let Some(field) = df.schema().fields().iter().find(|f| f.name() == &c.name) else {
            return Err(bad(format!(
                "declared column {} is missing from the query (it produces {})",
                c.name,
                produced.join(", ")
            )));
        };
        let want = c.kind.data_type();
        let e = Expr::Column(datafusion::common::Column::new_unqualified(&c.name));
        exprs.push(if field.data_type() == &want { e } else { cast_expr(e, want).alias(&c.name) });
    }
    Ok(df.select(exprs)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_count_words_not_substrings() {
        let later = [
            "SELECT * FROM ap_runs_n n JOIN ap_runs_n r ON r.x = n.x".to_string(),
            "SELECT * FROM AP_LEADS -- ap_runs_n in a comment is not a use\n".to_string(),
        ];
        assert_eq!(references("ap_runs_n", &later), 2, "a self-join names it twice");
        assert_eq!(references("ap_leads", &later), 1, "case-insensitive");
        assert_eq!(references("ap_runs", &later), 0, "not a prefix of another name");
        assert_eq!(references("x", &[]), 0);
    }
}
