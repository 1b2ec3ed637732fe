//! The threads analyst queries compute on: a runtime of their own, apart from the one
//! that serves REST, accepts connections and handles cancel requests.
//!
//! Why: DataFusion yields to the scheduler between batches, but some operators (the
//! nested-loop join of a cross join) compute for seconds between yields. On the server's
//! runtime that holds a worker thread for as long, and everything queued on it waits: REST
//! requests, the cancel request meant to stop that very query, the socket watch. Here the
//! operating system shares the cores between both runtimes' threads instead, and a query's
//! stream on the connection's side ends (error, cancel, disconnect) at once, whatever its
//! operators are doing; their task is aborted at its next yield.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::{Handle, Runtime};

/// A multi-threaded runtime for query execution, shut down (in the background) on drop.
#[derive(Debug)]
pub struct SqlRuntime {
    runtime: Option<Runtime>,
    thread_name: String,
}

impl SqlRuntime {
    /// One worker thread per core, named `wxlake-sql-N` (N counts the runtimes of this
    /// process, so a test can tell its server's threads apart).
    pub fn new() -> std::io::Result<Self> {
        static RUNTIMES: AtomicUsize = AtomicUsize::new(0);
        let thread_name = format!("wxlake-sql-{}", RUNTIMES.fetch_add(1, Ordering::Relaxed));
        let threads = std::thread::available_parallelism().map(usize::from).unwrap_or(2);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name(thread_name.clone())
            .enable_all()
            .build()?;
        Ok(SqlRuntime { runtime: Some(runtime), thread_name })
    }

    /// Where to spawn a query's work.
    pub fn handle(&self) -> Option<Handle> {
        self.runtime.as_ref().map(|r| r.handle().clone())
    }

    /// The name of its threads (at most 15 bytes: Linux's `comm`).
    pub fn thread_name(&self) -> &str {
        &self.thread_name
    }
}

impl Drop for SqlRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
