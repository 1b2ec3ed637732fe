//! `wxlake cluster scheduler|executor`: the processes of a Ballista cluster, from the same
//! binary as everything else (see `wxlake::cluster` for what runs where). Both open the
//! lake given by `--lake`: the scheduler lists its files when planning, executors read
//! them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use wxlake::cluster::executor::ExecutorOptions;
use wxlake::cluster::scheduler::SchedulerOptions;
use wxlake::cluster::{executor, scheduler, SchedulerUrl};
use wxlake::lake::Lake;

#[derive(Debug, Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    pub command: ClusterCommand,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Run the scheduler: plans queries (listing the lake) and hands tasks to executors.
    Scheduler(SchedulerArgs),
    /// Run an executor: runs tasks, reading the lake and serving shuffle data.
    Executor(ExecutorArgs),
}

#[derive(Debug, Args)]
pub struct SchedulerArgs {
    /// Address to listen on (clients and executors connect here as df://HOST:PORT; port 0
    /// picks a free one, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:50050")]
    pub bind: SocketAddr,
    /// Seconds of silence after which an executor is taken for dead and its tasks rerun
    /// elsewhere (executors poll several times a second while alive).
    #[arg(long, default_value_t = 60)]
    pub executor_timeout_secs: u64,
}

#[derive(Debug, Args)]
pub struct ExecutorArgs {
    /// The scheduler, df://HOST:PORT.
    #[arg(long)]
    pub scheduler: SchedulerUrl,
    /// Address of this executor's Arrow Flight service (shuffle data); a fixed port.
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub bind: SocketAddr,
    /// The host name the scheduler and clients reach this executor by (default: the
    /// --bind address; required when binding 0.0.0.0).
    #[arg(long)]
    pub external_host: Option<String>,
    /// Directory for shuffle files (default: a fresh temporary directory, removed on exit).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Tasks run at once (default: one per core).
    #[arg(long, default_value_t = 0)]
    pub concurrent_tasks: usize,
    /// Seconds to wait for the scheduler to accept connections at start.
    #[arg(long, default_value_t = 30)]
    pub connect_secs: u64,
}

pub async fn run(lake: Lake, args: ClusterArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ClusterCommand::Scheduler(a) => run_scheduler(lake, a).await,
        ClusterCommand::Executor(a) => run_executor(lake, a).await,
    }
}

async fn run_scheduler(lake: Lake, a: SchedulerArgs) -> anyhow::Result<ExitCode> {
    let listener = tokio::net::TcpListener::bind(a.bind).await.with_context(|| format!("binding {}", a.bind))?;
    let addr = listener.local_addr()?;
    // Tests and scripts read the address (with port 0, the only way to know it).
    eprintln!("scheduler listening on df://{addr}");
    let options = SchedulerOptions {
        executor_timeout: Duration::from_secs(a.executor_timeout_secs),
        functions: wxlake::jobs::functions::all(),
    };
    tokio::select! {
        served = scheduler::serve(&lake, listener, &options) => served?,
        _ = tokio::signal::ctrl_c() => eprintln!("scheduler stopped"),
    }
    Ok(ExitCode::SUCCESS)
}

async fn run_executor(lake: Lake, a: ExecutorArgs) -> anyhow::Result<ExitCode> {
    let (_cleanup, work_dir) = match a.work_dir {
        Some(dir) => (None, dir),
        None => {
            let dir = std::env::temp_dir().join(format!("wxlake-executor-{}", std::process::id()));
            (Some(RemoveOnDrop(dir.clone())), dir)
        }
    };
    let options = ExecutorOptions {
        scheduler: a.scheduler,
        bind: a.bind,
        external_host: a.external_host,
        work_dir,
        concurrent_tasks: a.concurrent_tasks,
        connect_patience: Duration::from_secs(a.connect_secs),
        functions: wxlake::jobs::functions::all(),
    };
    eprintln!("executor serving on {} for {}", options.bind, options.scheduler);
    executor::run(&lake, options).await?;
    Ok(ExitCode::SUCCESS)
}

/// The default work directory goes when the executor stops (its shuffle files are of no
/// use to another executor).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
