//! The client side: a lake session whose queries run on the cluster.
//!
//! [`remote_session`] keeps everything of the local session the SQL is planned in (its
//! tables, settings and functions) and changes only where physical plans are made and
//! run: Ballista's query planner sends each optimized logical plan to the scheduler and
//! streams the result back. So a query is parsed, checked (read-only) and optimized
//! exactly as locally, and its settings travel with it to the scheduler.

use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;

use super::codec::LakeLogicalCodec;
use super::{ClusterError, SchedulerUrl, MAX_MESSAGE_BYTES};

/// How long a client waits for the scheduler to accept a connection.
const CONNECT_PATIENCE: Duration = Duration::from_secs(5);

/// `local` (a session of [`crate::lake::query`] or [`crate::jobs`], tables registered)
/// turned into a session that runs its queries on the cluster of `scheduler`.
pub async fn remote_session(local: &SessionContext, scheduler: &SchedulerUrl) -> Result<SessionContext, ClusterError> {
    // Ballista connects only when the first query runs: check now, and say where.
    scheduler.wait_reachable(CONNECT_PATIENCE).await?;
    let state = local.state();
    // The session's catalog is kept: a config asking for a default catalog would make the
    // builder replace it with an empty one.
    let mut config = state
        .config()
        .clone()
        .with_create_default_catalog_and_schema(false)
        .upgrade_for_ballista()
        .with_ballista_logical_extension_codec(Arc::new(LakeLogicalCodec::default()))
        // The static planner: see scheduler.rs (`session_builder`), which insists on it too.
        .with_ballista_adaptive_query_planner(false);
    config.options_mut().set("ballista.client.grpc_max_message_size", &MAX_MESSAGE_BYTES.to_string())?;
    let state = SessionStateBuilder::new_from_existing(state).with_config(config).build();
    Ok(SessionContext::remote_with_state(&scheduler.to_string(), state).await?)
}
