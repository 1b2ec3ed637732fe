//! `wxlake feeds run [--once] [SOURCE...]`, `wxlake feeds list`,
//! `wxlake feeds backfill SOURCE --from D --to D [--stations ...]`: the live feeds without
//! the API.
//!
//! `run` starts the same live write path as `serve` (it takes the state directory's
//! `serve.lock`: one process writes a state's WAL), so it cannot run beside a `serve` of
//! the same state; a `serve` with `[sources]` runs the feeds itself. `--once` polls every
//! selected source once, prints one line per source, flushes to the lake and exits 1 when
//! any request failed: made for cron. `list` reads the status file the running process
//! writes after each poll (`<state>/feeds/status.json`). `backfill` writes to the lake
//! directly and may run beside `serve`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use chrono::NaiveDate;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use wxlake::clock::{Clock, SystemClock};
use wxlake::feeds::backfill::{self, LakeSink, ResumeLog, UnitOutcome};
use wxlake::feeds::config::SOURCES;
use wxlake::feeds::status::{SourceStatus, StatusFile};
use wxlake::feeds::{Feeds, FeedsConfig};
use wxlake::jobs::job_set::declarations;
use wxlake::jobs::runner::{run_all, Progress};
use wxlake::jobs::runs::RunStatus;
use wxlake::lake::Lake;
use wxlake::time::fmt_iso_utc;

use super::keys::state_dir;
use super::serve::take_serve_lock;
use super::shutdown::Shutdown;
use super::startup::{feeds_config, start_write_path};

/// `wxlake feeds`
#[derive(Debug, Args)]
pub struct FeedsArgs {
    /// State directory (WAL, feeds status, backfill records; default: next to a local lake).
    #[arg(long, env = "WXLAKE_STATE_DIR", global = true)]
    pub state_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: FeedsCommand,
}

#[derive(Debug, Subcommand)]
pub enum FeedsCommand {
    /// Poll the configured sources (all, or those named) until Ctrl-C, or once.
    Run(RunArgs),
    /// Each configured source: interval, next poll, last outcome, late or not.
    List,
    /// Fetch a source's archive for past days into the lake, then rerun the derived jobs.
    Backfill(BackfillArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Poll each source once, print a summary, exit 1 if any request failed.
    #[arg(long)]
    pub once: bool,
    /// Seconds between WAL → lake flushes (without --once).
    #[arg(long, default_value_t = 10)]
    pub flush_secs: u64,
    /// Only these sources (names of `[sources.NAME]` tables).
    pub sources: Vec<String>,
}

#[derive(Debug, Args)]
pub struct BackfillArgs {
    /// The source whose archive to fetch.
    pub source: String,
    /// First day (YYYY-MM-DD, UTC).
    #[arg(long)]
    pub from: NaiveDate,
    /// Last day (YYYY-MM-DD, UTC, inclusive).
    #[arg(long)]
    pub to: NaiveDate,
    /// Only these stations (default: the source's configured stations).
    #[arg(long, value_delimiter = ',')]
    pub stations: Vec<String>,
    /// Skip the derived jobs after the fetch.
    #[arg(long)]
    pub no_jobs: bool,
}

pub async fn run(lake: Lake, a: FeedsArgs, config: Option<&Path>) -> anyhow::Result<ExitCode> {
    let dir = state_dir(&lake, a.state_dir.clone())?;
    let cfg = feeds_config(config, &dir)?;
    match a.command {
        FeedsCommand::Run(r) => run_feeds(lake, &dir, &cfg, r).await,
        FeedsCommand::List => list(&dir, &cfg),
        FeedsCommand::Backfill(b) => backfill(lake, &dir, &cfg, b).await,
    }
}

async fn run_feeds(lake: Lake, dir: &Path, cfg: &FeedsConfig, a: RunArgs) -> anyhow::Result<ExitCode> {
    let _lock = take_serve_lock(dir)?;
    let shutdown = Shutdown::on_signal();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let live = start_write_path(lake, dir, a.flush_secs, Arc::clone(&clock)).await?;
    let writer = if a.once { "feeds run --once" } else { "feeds run" };
    let feeds = Feeds::from_config(cfg, Arc::new(Arc::clone(&live)))?
        .select(&a.sources)?
        .with_clock(clock)
        .with_status_file(StatusFile::in_state_dir(dir), writer);
    if feeds.is_empty() {
        anyhow::bail!(
            "no enabled source: add a [sources.NAME] table to the --config file (known: {})",
            SOURCES.join(", ")
        );
    }
    let mut failed = false;
    if a.once {
        for (name, report) in feeds.poll_once().await {
            failed |= !report.is_ok();
            println!("{name}: {}", report.summary());
        }
    } else {
        let names = feeds.names();
        eprintln!("feeds: polling {} source(s) until Ctrl-C: {}", names.len(), names.join(", "));
        Arc::new(feeds).run(shutdown.wait()).await;
    }
    eprintln!("flushing the WAL to the lake");
    live.flush().await?;
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn list(dir: &Path, cfg: &FeedsConfig) -> anyhow::Result<ExitCode> {
    let file = StatusFile::in_state_dir(dir);
    let snapshot = file.read()?;
    let configured = Feeds::from_config(cfg, Arc::new(wxlake::feeds::RecordingSink::new()))?;
    let now = chrono::Utc::now();
    let known: Vec<SourceStatus> = snapshot.as_ref().map(|s| s.sources.clone()).unwrap_or_default();
    let mut out = String::from(
        "source\tinterval_s\tnext_poll\tlast_poll\tlast_success\tlate\tpolls\tfailed\trows\tlast_outcome\n",
    );
    let mut names = configured.names();
    names.extend(known.iter().map(|s| s.name.clone()).filter(|n| !configured.names().contains(n)));
    for name in &names {
        let st = known.iter().find(|s| &s.name == name).cloned();
        let interval = configured.status().into_iter().find(|s| &s.name == name).map(|s| s.interval_secs);
        let line = match st.map(|s| s.at(now)) {
            None => format!("{name}\t{}\t-\tnever\tnever\t-\t0\t0\t0\tnot polled yet\n", interval.unwrap_or_default()),
            Some(s) => {
                let outcome = match &s.last {
                    None => "not polled yet".to_string(),
                    Some(l) if l.ok => format!(
                        "ok: {} accepted, {} duplicate, {} not modified",
                        l.accepted, l.duplicate, l.not_modified
                    ),
                    Some(l) => format!("FAILED: {}", l.errors.first().cloned().unwrap_or_default()),
                };
                let t = |t: Option<chrono::DateTime<chrono::Utc>>| t.map(fmt_iso_utc).unwrap_or_else(|| "-".into());
                format!(
                    "{name}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                    s.interval_secs,
                    t(s.next_poll),
                    t(s.last.as_ref().map(|l| l.finished)),
                    t(s.last_success),
                    if s.late { "LATE" } else { "no" },
                    s.polls,
                    s.failed_polls,
                    s.rows_stored,
                    outcome.replace(['\t', '\n'], " "),
                )
            }
        };
        out.push_str(&line);
    }
    print!("{out}");
    match snapshot {
        Some(s) => eprintln!("status written {} by {} (pid {})", fmt_iso_utc(s.written), s.writer, s.pid),
        None => eprintln!("no status yet in {}: no feeds ran with this state directory", file.path().display()),
    }
    Ok(ExitCode::SUCCESS)
}

async fn backfill(lake: Lake, dir: &Path, cfg: &FeedsConfig, a: BackfillArgs) -> anyhow::Result<ExitCode> {
    if a.to < a.from {
        eprintln!("error: --to {} is before --from {}", a.to, a.from);
        return Ok(ExitCode::from(2));
    }
    let archive = Feeds::archive(cfg, &a.source)?;
    let stations: Vec<String> = a.stations.iter().map(|s| s.trim().to_ascii_uppercase()).collect();
    let units = archive.units(a.from, a.to, &stations);
    let mut log = ResumeLog::open(dir, &a.source)?;
    let sink = LakeSink::new(lake.clone());
    let bar = progress_bar(units.len() as u64, &a.source);
    let report = backfill::run(archive.as_ref(), &units, &sink, &mut log, |unit, outcome| {
        bar.inc(1);
        match outcome {
            UnitOutcome::Skipped => bar.set_message(format!("{} done before", unit.id())),
            UnitOutcome::Stored(r) => bar.set_message(format!("{}: {} rows", unit.id(), r.accepted)),
            UnitOutcome::Failed(r) => bar.println(format!("{}: FAILED: {}", unit.id(), r.summary())),
        }
    })
    .await?;
    bar.finish_and_clear();
    eprintln!(
        "{}: {} unit(s): {} stored now ({} rows new, {} already stored), {} done before, {} failed (record: {})",
        a.source,
        report.units,
        report.stored,
        report.accepted,
        report.duplicate,
        report.skipped,
        report.failed.len(),
        log.path().display()
    );
    for (id, e) in &report.failed {
        eprintln!("  {id}: {e}");
    }
    let mut ok = report.is_ok();
    if !a.no_jobs {
        let (first, last) = backfill::derived_range(archive.as_ref(), a.from, a.to, chrono::Utc::now().date_naive());
        eprintln!("derived jobs for {first}..{last}");
        ok &= run_jobs(&lake, first, last).await?;
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The derived jobs for `from..=to`, dependencies first; true when all ran.
async fn run_jobs(lake: &Lake, from: NaiveDate, to: NaiveDate) -> anyhow::Result<bool> {
    let (specs, _) = declarations(None)?;
    let runs = run_all(lake, &specs, Some((from, to)), &|_: &Progress| {}).await.context("derived jobs")?;
    let mut ok = true;
    for r in &runs {
        ok &= r.status == RunStatus::Ok;
        let error = r.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
        eprintln!("job {}: {} ({} rows){error}", r.job, r.status.as_str(), r.rows);
    }
    Ok(ok)
}

/// A bar on stderr when it is a terminal, hidden otherwise (cron, tests).
fn progress_bar(len: u64, source: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} units {msg} ({elapsed}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(source.to_string());
    bar
}
