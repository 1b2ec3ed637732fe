//! The embedded Ballista executor (`wxlake cluster executor`).
//!
//! It runs the tasks the scheduler hands out, polling for them (Ballista's pull
//! scheduling: the executor needs no port of the scheduler's choosing, and its polls are
//! its heartbeat). A scan task names lake files by URL; they are read through the lake's
//! store, registered at the lake's URL by [`query::runtime_env`], with the process's
//! footer cache. Shuffle outputs are written to the work directory and served to the next
//! stage, and to the client, over Arrow Flight on the `--bind` port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ballista_core::config::TaskSchedulingPolicy;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_core::RuntimeProducer;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionConfig;

use super::codec::LakeLogicalCodec;
use super::{ClusterError, SchedulerUrl, MAX_MESSAGE_BYTES};
use crate::lake::query;
use crate::lake::Lake;

/// Where an executor listens and whom it works for.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    pub scheduler: SchedulerUrl,
    /// The Arrow Flight address shuffle outputs are fetched from.
    pub bind: SocketAddr,
    /// The host name others reach `bind` by (default: `bind`'s address).
    pub external_host: Option<String>,
    /// Shuffle files go here.
    pub work_dir: PathBuf,
    /// Tasks run at once (0: one per core).
    pub concurrent_tasks: usize,
    /// How long to wait for the scheduler to accept connections at start.
    pub connect_patience: Duration,
    /// Functions a task may call beyond DataFusion's (`jobs::functions::all`).
    pub functions: Vec<Arc<ScalarUDF>>,
}

/// Runs an executor until it is stopped (Ctrl-C or SIGTERM: it tells the scheduler, lets
/// its running tasks finish, and returns).
pub async fn run(lake: &Lake, options: ExecutorOptions) -> Result<(), ClusterError> {
    if options.bind.port() == 0 {
        // The port is announced to the scheduler before the Flight service binds it.
        return Err(ClusterError::Config("an executor needs a fixed --bind port (not 0)".into()));
    }
    let external_host = match &options.external_host {
        Some(h) => h.clone(),
        None if options.bind.ip().is_unspecified() => {
            return Err(ClusterError::Config(format!(
                "--bind {} is every interface: give --external-host, the name the scheduler and clients reach \
                 this executor by",
                options.bind
            )))
        }
        None => options.bind.ip().to_string(),
    };
    // Ballista binds the Flight port only after registering, and when the bind fails it
    // logs and stops with success, having been given work it will never do. Try it first.
    std::net::TcpListener::bind(options.bind).map_err(|source| ClusterError::Bind { addr: options.bind, source })?;
    std::fs::create_dir_all(&options.work_dir)?;
    options.scheduler.wait_reachable(options.connect_patience).await?;

    let lake_for_tasks = lake.clone();
    let runtime: RuntimeProducer = Arc::new(move |_config: &SessionConfig| {
        query::runtime_env(&lake_for_tasks).map_err(|e| datafusion::error::DataFusionError::External(e.into()))
    });
    let config = ExecutorProcessConfig {
        bind_host: options.bind.ip().to_string(),
        external_host: Some(external_host),
        port: options.bind.port(),
        scheduler_host: options.scheduler.host.clone(),
        scheduler_port: options.scheduler.port,
        vcores: options.concurrent_tasks,
        // Pull, as the scheduler expects (scheduler.rs): no second (gRPC) port to open.
        task_scheduling_policy: TaskSchedulingPolicy::PullStaged,
        work_dir: Some(options.work_dir.display().to_string()),
        print_thread_info: false,
        grpc_max_decoding_message_size: MAX_MESSAGE_BYTES,
        grpc_max_encoding_message_size: MAX_MESSAGE_BYTES,
        override_runtime_producer: Some(runtime),
        override_logical_codec: Some(Arc::new(LakeLogicalCodec::default())),
        override_function_registry: Some(Arc::new(function_registry(&options.functions))),
        ..Default::default()
    };
    tracing::info!(
        bind = %options.bind,
        scheduler = %options.scheduler,
        work_dir = %options.work_dir.display(),
        lake = %lake.location.base_url,
        "ballista executor starting"
    );
    start_executor_process(Arc::new(config)).await?;
    Ok(())
}

/// DataFusion's functions, as Ballista registers them, and `functions`: what a task's
/// plan is decoded against.
fn function_registry(functions: &[Arc<ScalarUDF>]) -> BallistaFunctionRegistry {
    let mut registry = BallistaFunctionRegistry::default();
    registry.scalar_functions.extend(functions.iter().map(|f| (f.name().to_string(), Arc::clone(f))));
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses an executor cannot work with are refused before it registers.
    #[tokio::test]
    async fn unusable_addresses_are_refused_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&dir.path().join("lake").display().to_string()).await.unwrap();
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let options = |bind: &str| ExecutorOptions {
            scheduler: "df://127.0.0.1:1".parse().unwrap(),
            bind: bind.parse().unwrap(),
            external_host: None,
            work_dir: dir.path().join("work"),
            concurrent_tasks: 1,
            connect_patience: Duration::from_millis(100),
            functions: Vec::new(),
        };
        let taken_addr = taken.local_addr().unwrap().to_string();
        for (bind, says) in [
            ("127.0.0.1:0", "fixed --bind port"),
            ("0.0.0.0:7", "--external-host"),
            (taken_addr.as_str(), "cannot listen on --bind"),
        ] {
            let e = run(&lake, options(bind)).await.unwrap_err().to_string();
            assert!(e.contains(says), "{bind}: {e}");
        }
        // A free address, but no scheduler: named.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let e = run(&lake, options(&free)).await.unwrap_err().to_string();
        assert!(e.contains("cannot reach the scheduler at df://127.0.0.1:1"), "{e}");
    }
}
