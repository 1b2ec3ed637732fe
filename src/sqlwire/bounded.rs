//! Bounded execution: every analyst query's physical plan is planned by [`BoundedPlanner`],
//! which takes the query's slots ([`Admission`]) and puts [`BoundedExec`] on top of the
//! plan. Its streams hold the slots, end the query at its time limit, and turn the memory
//! pool's refusal into the per-query limit's message. The memory limit itself is the
//! session's own pool (one per query session, `super::session`).
//!
//! Why at the physical plan and not around each protocol's result stream: both protocols
//! (and the catalog queries clients send on connect) plan through the session, so one
//! place bounds them all, and a client that disconnects drops the streams, which stops
//! the query's tasks and frees its slots. A client's cancel request ([`CancelSignal`])
//! ends the streams the same way, with PostgreSQL's "canceling statement" error.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use futures::{Stream, StreamExt};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::time::Instant;

use super::admission::{Admission, QueryPermit};
use super::error::WireError;

/// A connection's cancel requests: each bumps a counter, and a query stops when the
/// counter moves past the value it was planned under. Why not pgwire's own cancel: it
/// interrupts only the handler's call, which returns before the first row is computed;
/// an aggregate runs while its rows are pulled, out of its reach.
#[derive(Debug, Clone)]
pub struct CancelSignal(Arc<watch::Sender<u64>>);

impl Default for CancelSignal {
    fn default() -> Self {
        CancelSignal(Arc::new(watch::channel(0).0))
    }
}

impl CancelSignal {
    /// Stops the queries running now (later ones run).
    pub fn cancel(&self) {
        self.0.send_modify(|n| *n += 1);
    }

    /// Resolves once a cancel request arrives after `planned_at` (the counter then).
    fn requested(&self, planned_at: u64) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let mut rx = self.0.subscribe();
        Box::pin(async move {
            if rx.wait_for(|n| *n != planned_at).await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }

    fn now(&self) -> u64 {
        *self.0.borrow()
    }
}

/// Plans as DataFusion does, then bounds the plan (see the module docs).
#[derive(Debug)]
pub struct BoundedPlanner {
    pub admission: Arc<Admission>,
    /// The key whose queries this session runs (set when the caller authenticated, before
    /// its session is built).
    pub key_id: Arc<OnceLock<String>>,
    /// The connection's cancel requests.
    pub cancel: CancelSignal,
    /// Where the plan computes ([`super::executor`]); the caller's runtime if none.
    pub runtime: Option<Handle>,
}

#[async_trait]
impl QueryPlanner for BoundedPlanner {
    async fn create_physical_plan(&self, plan: &LogicalPlan, session: &dyn Session) -> Result<Arc<dyn ExecutionPlan>> {
        let key_id = self.key_id.get().ok_or(WireError::MissingKey)?;
        let permit = Arc::new(self.admission.admit(key_id).await?);
        let input = DefaultPhysicalPlanner::default().create_physical_plan(plan, session).await?;
        let limits = self.admission.limits();
        Ok(Arc::new(BoundedExec {
            input,
            permit,
            planned_at: self.cancel.now(),
            cancel: self.cancel.clone(),
            runtime: self.runtime.clone(),
            deadline: Instant::now() + limits.timeout,
            timeout_secs: limits.timeout.as_secs(),
            memory_mib: limits.memory_bytes >> 20,
        }))
    }
}

/// The root of a bounded plan: passes its input through under the query's limits.
#[derive(Debug)]
pub struct BoundedExec {
    input: Arc<dyn ExecutionPlan>,
    permit: Arc<QueryPermit>,
    cancel: CancelSignal,
    planned_at: u64,
    runtime: Option<Handle>,
    deadline: Instant,
    timeout_secs: u64,
    memory_mib: usize,
}

impl DisplayAs for BoundedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "BoundedExec: timeout={}s, memory={}MiB", self.timeout_secs, self.memory_mib)
    }
}

impl ExecutionPlan for BoundedExec {
    fn name(&self) -> &'static str {
        "BoundedExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(format!("BoundedExec has one input, given {}", children.len())));
        }
        Ok(Arc::new(BoundedExec {
            input: children.swap_remove(0),
            permit: Arc::clone(&self.permit),
            cancel: self.cancel.clone(),
            planned_at: self.planned_at,
            runtime: self.runtime.clone(),
            deadline: self.deadline,
            timeout_secs: self.timeout_secs,
            memory_mib: self.memory_mib,
        }))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let inner = match &self.runtime {
            Some(runtime) => on_runtime(Arc::clone(&self.input), partition, context, runtime),
            None => self.input.execute(partition, context)?,
        };
        Ok(Box::pin(BoundedStream {
            schema: inner.schema(),
            inner,
            sleep: Box::pin(tokio::time::sleep_until(self.deadline)),
            cancelled: self.cancel.requested(self.planned_at),
            _permit: Arc::clone(&self.permit),
            timeout_secs: self.timeout_secs,
            memory_mib: self.memory_mib,
            done: false,
        }))
    }
}

/// `input`'s partition computed by a task on `runtime`, its batches passed back through a
/// channel; dropping the stream aborts the task (at its next yield).
fn on_runtime(
    input: Arc<dyn ExecutionPlan>,
    partition: usize,
    context: Arc<TaskContext>,
    runtime: &Handle,
) -> SendableRecordBatchStream {
    let mut builder = RecordBatchReceiverStreamBuilder::new(input.schema(), 2);
    let tx = builder.tx();
    builder.spawn_on(
        async move {
            let mut stream = input.execute(partition, context)?;
            while let Some(item) = stream.next().await {
                if tx.send(item).await.is_err() {
                    break;
                }
            }
            Ok(())
        },
        runtime,
    );
    builder.build()
}

/// One partition's output under the query's limits.
struct BoundedStream {
    schema: SchemaRef,
    inner: SendableRecordBatchStream,
    sleep: Pin<Box<tokio::time::Sleep>>,
    cancelled: Pin<Box<dyn Future<Output = ()> + Send>>,
    _permit: Arc<QueryPermit>,
    timeout_secs: u64,
    memory_mib: usize,
    done: bool,
}

impl Stream for BoundedStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.done = true;
            return Poll::Ready(Some(Err(WireError::Timeout(self.timeout_secs).into())));
        }
        if self.cancelled.as_mut().poll(cx).is_ready() {
            self.done = true;
            return Poll::Ready(Some(Err(WireError::Cancelled.into())));
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Err(e))) => {
                self.done = true;
                Poll::Ready(Some(Err(memory_error(e, self.memory_mib))))
            }
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            other => other,
        }
    }
}

impl RecordBatchStream for BoundedStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

/// The pool's "resources exhausted", said as the per-query limit it is.
fn memory_error(e: DataFusionError, memory_mib: usize) -> DataFusionError {
    match e.find_root() {
        DataFusionError::ResourcesExhausted(detail) => {
            WireError::Memory { limit_mib: memory_mib, detail: detail.lines().next().unwrap_or_default().to_string() }
                .into()
        }
        _ => e,
    }
}
