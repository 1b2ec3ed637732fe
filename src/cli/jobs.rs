//! `wxlake jobs ...`: the command-line edge of the jobs engine.
//!
//! The declarations are the ones built into the binary, the same the server schedules
//! ([`wxlake::jobs::declarations`]); `--jobs-dir DIR` runs those of DIR instead, to try
//! an edit before rebuilding. `jobs list` says which are in use. Data goes to stdout,
//! progress and summaries to stderr; the exit code is 1 when a run failed, 2 for a bad
//! request.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use chrono::NaiveDate;
use clap::{Args, Subcommand};
use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::SessionContext;
use indicatif::{ProgressBar, ProgressStyle};

use wxlake::cluster::SchedulerUrl;
use wxlake::jobs::job_set::{declarations, find};
use wxlake::jobs::runner::{run_all_on, run_job_on, Progress, Step};
use wxlake::jobs::runs::{history, JobRun, RunStatus};
use wxlake::jobs::rust_tables::{day_windows, model_leads, reach_days};
use wxlake::jobs::spec::JobSpec;
use wxlake::jobs::JobError;
use wxlake::lake::query::{models_table, stations_table};
use wxlake::lake::Lake;
use wxlake::time::fmt_iso_utc;

/// `wxlake jobs`
#[derive(Debug, Args)]
pub struct JobsArgs {
    /// Run the declarations of this directory (*.toml; their `sql` paths resolve against
    /// its parent) instead of the ones built into the binary, which `serve` schedules and
    /// every other command uses: for trying an edit before rebuilding. Never implied by a
    /// ./jobs directory.
    #[arg(long)]
    pub jobs_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: JobsCommand,
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// List the jobs: output table, partitions, schedule and last run.
    List,
    /// Run one job, or every job in dependency order (`--all`).
    Run(RunArgs),
    /// Show recorded runs (the job_runs table), newest first.
    Runs(RunsArgs),
    /// Write the helper tables a job's SQL reads (day_windows, model_leads, stations,
    /// models) as Parquet files, to run the same SQL in another engine.
    Helpers(HelpersArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The job to run.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub name: Option<String>,
    /// Run every job, dependencies first.
    #[arg(long)]
    pub all: bool,
    /// First value of the incremental key to recompute (YYYY-MM-DD, inclusive).
    #[arg(long, requires = "to")]
    pub from: Option<NaiveDate>,
    /// Last value of the incremental key to recompute (YYYY-MM-DD, inclusive).
    #[arg(long, requires = "from")]
    pub to: Option<NaiveDate>,
    /// Print the recorded run(s) as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Run the jobs' SQL on the Ballista cluster of this scheduler (df://HOST:PORT); the
    /// helper tables are computed and the output is published here, as in a local run.
    #[arg(long)]
    pub cluster: Option<SchedulerUrl>,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only this job.
    pub name: Option<String>,
    /// How many runs.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HelpersArgs {
    /// Output directory (created).
    #[arg(long)]
    pub out: PathBuf,
    /// First run date the tables must serve.
    #[arg(long)]
    pub from: NaiveDate,
    /// Last run date the tables must serve.
    #[arg(long)]
    pub to: NaiveDate,
}

/// Runs a `wxlake jobs` command.
pub async fn run(lake: Lake, args: JobsArgs) -> anyhow::Result<ExitCode> {
    let (specs, source) = match declarations(args.jobs_dir.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    match args.command {
        JobsCommand::List => list(&lake, &specs, &source).await,
        JobsCommand::Run(a) => run_jobs(&lake, &specs, a).await,
        JobsCommand::Runs(a) => runs(&lake, a).await,
        JobsCommand::Helpers(a) => helpers(a).await,
    }
}

async fn list(lake: &Lake, specs: &[JobSpec], source: &str) -> anyhow::Result<ExitCode> {
    let last = history(lake, None, usize::MAX).await.unwrap_or_default();
    let mut out = String::new();
    out.push_str("job\toutput\tpartition_by\tincremental\tschedule\ton_new_data\tdepends_on\tlast_run\n");
    for s in specs {
        let l = last
            .iter()
            .find(|r| r.job == s.name)
            .map(|r| format!("{} {} ({} rows)", r.status.as_str(), fmt_iso_utc(r.finished_at), r.rows));
        out.push_str(&format!(
            "{}\tderived/{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            s.name,
            s.output.table,
            s.output.partition_by.join(","),
            s.incremental.as_ref().map(|i| i.key.as_str()).unwrap_or("-"),
            s.schedule.cron.as_ref().map(|c| c.as_str()).unwrap_or("-"),
            if s.schedule.on_new_data.is_empty() { "-".into() } else { s.schedule.on_new_data.join(",") },
            if s.depends_on.is_empty() { "-".into() } else { s.depends_on.join(",") },
            l.unwrap_or_else(|| "never".into()),
        ));
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    eprintln!("{} job(s), declarations {source}", specs.len());
    Ok(ExitCode::SUCCESS)
}

fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} [{bar:30}] {pos}/{len} chunks {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

fn show(bar: &ProgressBar, p: &Progress) {
    match &p.step {
        Step::Start => {
            bar.reset();
            bar.set_prefix(p.job.clone());
            bar.set_length(p.total as u64);
            bar.set_position(0);
            bar.set_message("");
        }
        Step::Chunk { from, to } => {
            bar.set_position(p.done as u64);
            let span = match (from, to) {
                (Some(a), Some(b)) => format!(" through {b} (from {a})"),
                _ => String::new(),
            };
            bar.set_message(format!("{} rows{span}", p.rows));
        }
        Step::Publish { files, replaced } => {
            bar.set_message(format!("{} rows, publishing {files} files (replacing {replaced})", p.rows))
        }
        Step::Finish => bar.set_message(format!("{} rows", p.rows)),
    }
}

fn summary(r: &JobRun) -> String {
    let range = r.range.map(|(a, b)| format!(" for {a}..{b}")).unwrap_or_else(|| " (full)".into());
    let secs = (r.finished_at - r.started_at).num_milliseconds() as f64 / 1000.0;
    match r.status {
        RunStatus::Ok => format!("{}: ok, {} rows in {} partitions{range} in {secs:.1}s", r.job, r.rows, r.partitions),
        RunStatus::Failed => format!("{}: FAILED{range} after {secs:.1}s: {}", r.job, r.error.as_deref().unwrap_or("")),
        RunStatus::Skipped => format!("{}: skipped: {}", r.job, r.error.as_deref().unwrap_or("")),
    }
}

async fn run_jobs(lake: &Lake, specs: &[JobSpec], a: RunArgs) -> anyhow::Result<ExitCode> {
    let range = a.from.zip(a.to);
    let bar = progress_bar();
    let cb = {
        let bar = bar.clone();
        move |p: &Progress| show(&bar, p)
    };
    let runs: Vec<JobRun> = if a.all {
        match run_all_on(lake, specs, range, a.cluster.as_ref(), &cb).await {
            Ok(r) => r,
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    } else {
        let name = a.name.as_deref().unwrap_or_default();
        let spec = match find(specs, name) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
        };
        match run_job_on(lake, spec, range, "cli", a.cluster.as_ref(), &cb).await {
            Ok(r) => vec![r],
            Err(e @ (JobError::Range { .. } | JobError::UnknownJob { .. })) => {
                bar.finish_and_clear();
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("{name}: FAILED: {e}");
                if a.json {
                    // The failed run as recorded (when recording worked).
                    let last = history(lake, Some(name), 1).await.unwrap_or_default();
                    println!("{}", serde_json::to_string_pretty(&last)?);
                }
                return Ok(ExitCode::from(1));
            }
        }
    };
    bar.finish_and_clear();
    for r in &runs {
        eprintln!("{}", summary(r));
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    }
    let failed = runs.is_empty() || runs.iter().any(|r| r.status != RunStatus::Ok);
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

async fn runs(lake: &Lake, a: RunsArgs) -> anyhow::Result<ExitCode> {
    let runs = history(lake, a.name.as_deref(), a.limit).await?;
    let mut out = String::new();
    if a.json {
        out = serde_json::to_string_pretty(&runs)? + "\n";
    } else {
        out.push_str("job\trun_id\ttrigger\tstarted_at\tseconds\tstatus\trows\tpartitions\trange\terror\n");
        for r in &runs {
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{:.1}\t{}\t{}\t{}\t{}\t{}\n",
                r.job,
                r.run_id,
                r.trigger,
                fmt_iso_utc(r.started_at),
                (r.finished_at - r.started_at).num_milliseconds() as f64 / 1000.0,
                r.status.as_str(),
                r.rows,
                r.partitions,
                r.range.map(|(a, b)| format!("{a}..{b}")).unwrap_or_else(|| "full".into()),
                r.error.as_deref().unwrap_or("").replace(['\n', '\t'], " "),
            ));
        }
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

async fn helpers(a: HelpersArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let from = a.from - chrono::Duration::days(2);
    let to = a.to + chrono::Duration::days(reach_days());
    let tables: Vec<(&str, MemTable)> = vec![
        ("day_windows", day_windows(from, to)?),
        ("model_leads", model_leads()?),
        ("stations", stations_table()?),
        ("models", models_table()?),
    ];
    let ctx = SessionContext::new();
    for (name, t) in tables {
        ctx.register_table(name, Arc::new(t))?;
        let batches: Vec<RecordBatch> = ctx.table(name).await?.collect().await?;
        let path = a.out.join(format!("{name}.parquet"));
        let file = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let schema = batches.first().map(|b| b.schema()).context("empty helper table")?;
        let mut w = ArrowWriter::try_new(file, schema, None)?;
        for b in &batches {
            w.write(b)?;
        }
        w.close()?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
