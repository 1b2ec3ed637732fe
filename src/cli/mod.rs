//! Command definitions and dispatch. Each command lives in its own module.

mod cluster;
mod compact;
pub mod config;
mod demo;
mod feeds;
mod ingest;
mod jobs;
mod keys;
mod lake;
mod serve;
mod shutdown;
mod sql;
mod sql_output;
mod startup;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use wxlake::lake::{Lake, DEFAULT_LAKE};

/// wxlake: weather observation and forecast analytics engine.
#[derive(Debug, Parser)]
#[command(name = "wxlake", version, about)]
pub struct Cli {
    /// Lake root URL: file://./data/lake (default), a path, or s3://bucket/prefix.
    #[arg(long, global = true, env = "WXLAKE_LAKE", default_value = DEFAULT_LAKE)]
    pub lake: String,
    /// TOML file with defaults for any flag: top-level keys for these global flags,
    /// `[serve]`, `[sql]`, ... for a command's (see data/wxlake.example.toml). Flags and
    /// environment variables win over it.
    #[arg(long, global = true, env = "WXLAKE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Seconds the files replaced by a compaction or a job's publish stay in the store
    /// (Delta's vacuum retention): queries on an older snapshot, and time travel, read
    /// them until then; 0 lets the next vacuum delete them.
    #[arg(long, global = true, env = "WXLAKE_KEEP_REPLACED_SECS", default_value_t = wxlake::lake::KEEP_REPLACED.as_secs())]
    pub keep_replaced_secs: u64,
    /// More logging (-v info, -vv debug). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decode inputs of a format and store them in the lake (idempotent).
    Ingest(ingest::IngestArgs),
    /// Run SQL over the lake.
    Sql(sql::SqlArgs),
    /// Merge small files per partition, then delete replaced files past the keep time.
    Compact(compact::CompactArgs),
    /// Generate realistic real-format inputs and ingest them.
    Demo(demo::DemoArgs),
    /// Manage API keys.
    Keys(keys::KeysArgs),
    /// List and run the SQL jobs (derived tables).
    Jobs(jobs::JobsArgs),
    /// Serve the REST API.
    Serve(serve::ServeArgs),
    /// Run the live feeds without the API, list them, or backfill a source's archive.
    Feeds(feeds::FeedsArgs),
    /// Run a scheduler or an executor of a Ballista cluster (`sql --cluster` uses it).
    Cluster(cluster::ClusterArgs),
    /// Maintain the lake's tables (`upgrade`).
    Lake(lake::LakeArgs),
}

/// Logs go to stderr, coloured only when stderr is a terminal; `RUST_LOG` wins over `-v`.
/// Not shown unless asked for:
/// - Ballista's scheduler logs an ERROR when it cannot attach a finished stage's metrics to
///   its plan for display (a known mismatch of its own, harmless to the query).
/// - The Delta kernel logs every failed snapshot build as an ERROR, and returns the same
///   error to us, which handles it: a table not created yet is no table, as every new
///   table on an S3 lake is at its first command (`No files in log segment`; a local one
///   is found without the kernel, `lake::delta::load`), and any other failure is reported
///   where it matters.
pub fn init_tracing(verbose: u8) {
    const QUIET: &str = "ballista_scheduler::display=off,buoyant_kernel::snapshot::builder=off";
    let default = match verbose {
        0 => format!("warn,{QUIET}"),
        1 => format!("info,wxlake=info,{QUIET}"),
        _ => "debug".to_string(),
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour only for a terminal: a log file or a pipe gets plain text, not escape codes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).try_init();
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let lake = Lake::open_keeping(&cli.lake, std::time::Duration::from_secs(cli.keep_replaced_secs)).await?;
    // A lake of the former layout converts on open (lake/upgrade.rs); `lake upgrade` says so.
    if !matches!(cli.command, Command::Lake(_)) {
        let done = wxlake::lake::upgrade::upgrade_if_needed(&lake, &wxlake::jobs::tables::all_shapes()?).await?;
        if !done.converted.is_empty() {
            tracing::warn!(tables = done.converted.len(), "converted the lake's tables to Delta tables");
        }
        let rewritten: usize = done.times.iter().map(|(_, s)| s.partitions).sum();
        if rewritten > 0 {
            tracing::warn!(partitions = rewritten, "gave the lake's rows received_at and available_at");
        }
        if done.versions > 0 {
            tracing::warn!("declared forecasts.superseded_at (the versions of re-published runs)");
        }
    }
    let counted = lake.clone();
    let code = match cli.command {
        Command::Ingest(a) => ingest::run(lake, a).await,
        Command::Sql(a) => sql::run(lake, a).await,
        Command::Compact(a) => compact::run(lake, a).await,
        Command::Demo(a) => demo::run(lake, a).await,
        Command::Keys(a) => keys::run(lake, a).await,
        Command::Serve(a) => serve::run(lake, a, cli.config.as_deref()).await,
        Command::Jobs(a) => jobs::run(lake, a).await,
        Command::Feeds(a) => feeds::run(lake, a, cli.config.as_deref()).await,
        Command::Cluster(a) => cluster::run(lake, a).await,
        Command::Lake(a) => lake::run(lake, a).await,
    };
    // What the command cost on the store (on S3, in requests paid for): `-v` shows it.
    tracing::info!(requests = %counted.requests(), "object store requests of this command");
    code
}
