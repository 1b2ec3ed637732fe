//! `wxlake sql "<query>"` / `wxlake sql -f file.sql`

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::sql_output::{write_batches, OutputFormat};
use anyhow::Context;
use clap::Args;
use wxlake::cluster::SchedulerUrl;
use wxlake::lake::{query, Lake};

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The query (several statements separated by `;` run in order; the last one prints).
    /// Read-only: statements that would change data or the session are refused.
    pub query: Option<String>,
    /// Read the query from a file.
    #[arg(short = 'f', long = "file", conflicts_with = "query")]
    pub file: Option<PathBuf>,
    /// table, csv, json or parquet.
    #[arg(long, default_value = "table")]
    pub format: OutputFormat,
    /// Write results to this file instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Run the query on the Ballista cluster of this scheduler (df://HOST:PORT), with the
    /// same tables and the same output as a local run.
    #[arg(long)]
    pub cluster: Option<SchedulerUrl>,
}

pub async fn run(lake: Lake, a: SqlArgs) -> anyhow::Result<ExitCode> {
    let text = match (&a.query, &a.file) {
        (Some(q), _) => q.clone(),
        (None, Some(f)) => std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
        (None, None) => anyhow::bail!("give a query or -f FILE"),
    };
    // The lake's tables and the jobs' outputs (forecast_daily, daily_extremes, the accuracy
    // tables, job_runs), as the server's SQL listeners see them.
    let ctx = wxlake::jobs::analyst_session(&lake).await?;
    let ctx = match &a.cluster {
        Some(url) => wxlake::cluster::client::remote_session(&ctx, url).await?,
        None => ctx,
    };
    let plans = match query::read_only_plans(&ctx, &text).await {
        Ok(p) if p.is_empty() => anyhow::bail!("no SQL statement given"),
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {}", one_line(&e.to_string()));
            return Ok(ExitCode::from(2));
        }
    };
    let mut last = Vec::new();
    for plan in plans {
        let result = match ctx.execute_logical_plan(plan).await {
            Ok(df) => df.collect().await,
            Err(e) => Err(e),
        };
        match result {
            Ok(b) => last = b,
            Err(e) => {
                eprintln!("error: {}", one_line(&e.to_string()));
                return Ok(ExitCode::from(2));
            }
        }
    }
    match &a.output {
        Some(path) => {
            let mut f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
            write_batches(&last, a.format, &mut f)?;
        }
        None => {
            // Buffer, then write once: the Parquet writer needs a Send sink.
            let mut buf = Vec::new();
            write_batches(&last, a.format, &mut buf)?;
            let mut out = std::io::stdout().lock();
            out.write_all(&buf)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// DataFusion errors can span lines; the CLI reports one.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
