//! The embedded Ballista scheduler (`wxlake cluster scheduler`).
//!
//! It plans: a client's logical plan becomes a physical plan here, and planning a lake
//! table lists its files. So every session the scheduler creates runs on the lake's
//! runtime ([`query::runtime_env`]): the lake's store, whose visibility wrapper hides the
//! files of unfinished swaps, at the lake's URL, and no listing cache, exactly as a local
//! session lists. In-memory tables arrive inside the plans ([`LakeLogicalCodec`]).
//!
//! Cluster state (executors, jobs) is Ballista's in-memory state: one scheduler per
//! cluster; restarting it forgets running queries (their clients see an error) and the
//! executors register again on their next poll.

use std::sync::Arc;
use std::time::Duration;

use ballista_core::config::TaskSchedulingPolicy;
use ballista_core::extension::{
    ballista_aggregate_functions, ballista_scalar_functions, ballista_window_functions, SessionConfigExt,
};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::{create_scheduler, start_grpc_service_with_listener};
use ballista_scheduler::scheduler_server::SessionBuilder;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionConfig;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use tokio::net::TcpListener;

use super::codec::LakeLogicalCodec;
use super::{ClusterError, MAX_MESSAGE_BYTES};
use crate::lake::query;
use crate::lake::Lake;

/// How the scheduler treats its executors.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// An executor silent this long is taken for dead: its running tasks are given to
    /// others and the shuffle outputs it held are recomputed.
    pub executor_timeout: Duration,
    /// Functions a plan may call beyond DataFusion's (`jobs::functions::all`):
    /// planning a plan that calls one needs it.
    pub functions: Vec<Arc<ScalarUDF>>,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        SchedulerOptions { executor_timeout: Duration::from_secs(60), functions: Vec::new() }
    }
}

/// Serves the scheduler on `listener` until the process ends (or the service fails).
/// Binding is the caller's, so `--bind HOST:0` works and the address can be printed first.
pub async fn serve(lake: &Lake, listener: TcpListener, options: &SchedulerOptions) -> Result<(), ClusterError> {
    let addr = listener.local_addr()?;
    let timeout = options.executor_timeout.as_secs().max(2);
    let mut config = SchedulerConfig::default()
        .with_hostname(addr.ip().to_string())
        .with_port(addr.port())
        .with_override_session_builder(session_builder(lake, options.functions.clone()))
        // Executors ask for work (see executor.rs): one port each, and their polls are
        // their heartbeat, so a dead one is noticed within `executor_timeout`.
        .with_scheduler_policy(TaskSchedulingPolicy::PullStaged)
        // The last executor gone: queries wait this long for one to come back, then fail.
        .with_no_executors_grace_period_seconds(timeout);
    config.bind_host = addr.ip().to_string();
    config.executor_timeout_seconds = timeout;
    config.expire_dead_executor_interval_seconds = (timeout / 4).max(1);
    config.override_logical_codec = Some(Arc::new(LakeLogicalCodec::default()));
    config.grpc_server_max_decoding_message_size = MAX_MESSAGE_BYTES;
    config.grpc_server_max_encoding_message_size = MAX_MESSAGE_BYTES;
    config.grpc_client_max_message_size = MAX_MESSAGE_BYTES;
    config.validate()?;
    let config = Arc::new(config);
    let cluster = BallistaCluster::new_from_config(&config).await?;
    let scheduler = create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, config).await?;
    tracing::info!(%addr, lake = %lake.location.base_url, "ballista scheduler serving");
    start_grpc_service_with_listener(listener, scheduler).await?;
    Ok(())
}

/// Sessions on the lake's runtime, otherwise what Ballista's default builder makes (its
/// optimizer rules and the built-in functions, with wxlake's `functions`). Each session's runtime holds the one
/// store of the lake (its connections shared) and the process's one footer cache.
///
/// Every job is planned by Ballista's static planner, whatever the client asked: the
/// adaptive one (AQE, Ballista 55's default) rewrites a stage's plan while its tasks run
/// (an input found empty becomes an `EmptyExec`, later a zero-partition scan), so tasks of
/// one stage run plans with different operator counts. The scheduler then refuses the
/// status of every task whose metrics do not match the first one's ("task metrics array
/// size 6 does not equal with the stage metrics array size 5"), the task is never marked
/// done, and the job waits forever with every process idle. Jobs over days without data
/// (an empty side in a join, an empty `nws_hourly`) meet this race every few hundred
/// queries. (`ballista.planner.propagate_empty.enabled` is read by nothing in 55.0.0.)
fn session_builder(lake: &Lake, functions: Vec<Arc<ScalarUDF>>) -> SessionBuilder {
    let lake = lake.clone();
    Arc::new(move |config: SessionConfig| {
        let mut scalar = ballista_scalar_functions();
        scalar.extend(functions.iter().cloned());
        let config = config.with_ballista_adaptive_query_planner(false);
        let runtime = query::runtime_env(&lake).map_err(|e| datafusion::error::DataFusionError::External(e.into()))?;
        Ok(SessionStateBuilder::new()
            .with_default_features()
            .with_config(config)
            .with_runtime_env(runtime)
            .with_optimizer_rules(ballista_core::optimizer::ballista_default_optimizer_rules())
            .with_scalar_functions(scalar)
            .with_aggregate_functions(ballista_aggregate_functions())
            .with_window_functions(ballista_window_functions())
            .build())
    })
}
