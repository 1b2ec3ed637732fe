//! The cluster: the same SQL run distributed by Apache DataFusion Ballista, embedded so the
//! one `wxlake` binary is client, scheduler and executor.
//!
//! What runs where:
//!
//! - **Client** (`wxlake sql --cluster df://HOST:PORT`, `wxlake jobs run --cluster`,
//!   [`client`]): parses and plans the SQL in the session a local run uses (same tables,
//!   same read-only refusals, a job's helper tables), optimizes the logical plan and sends
//!   it to the scheduler; then fetches the result partitions from the executors (Arrow
//!   Flight) and prints them, or encodes and publishes a job's output, as a local run does.
//! - **Scheduler** (`wxlake cluster scheduler`, [`scheduler`]): turns the logical plan into
//!   a physical one, which lists the files of every table it reads. So it opens the lake
//!   itself (`--lake`) and lists through the lake's store, whose visibility wrapper hides
//!   the files of unfinished `_txn` swaps, exactly as a local session does. It splits the
//!   plan into stages at each shuffle and hands their tasks to executors.
//! - **Executors** (`wxlake cluster executor`, [`executor`]): run the tasks. A scan task
//!   names the files it reads, and the executor reads them through the lake's store
//!   registered at the lake's URL (same `--lake`, the same `AWS_*` environment on S3), with
//!   the same footer cache a local session has. Shuffle outputs stay in the executor's work
//!   directory until the next stage (or the client) fetches them.
//!
//! What a plan needs beyond files: the in-memory tables (`stations`, `models`, and the
//! jobs' helper tables) travel inside the plan ([`codec`]: their rows as Arrow IPC, so
//! a job's date-bounded `day_windows` reaches the executors exactly as the client built
//! it). The functions a query calls are DataFusion's built-ins, which every process of the
//! cluster has, and the ones wxlake adds (`jobs::functions`: the replay of
//! `daily_extremes`, the rolling sums of `accuracy_trends`), which the command line gives
//! the scheduler and executors (their options' `functions`).
//!
//! Not distributed: `information_schema` queries (Ballista runs them on the client, which
//! has the catalog), everything that writes (ingest, compaction, job publishes), and the
//! other replays through the live engine (`bracket_scores`' helper, the API's days): those
//! stay in the process that asked. `daily_extremes`' replay runs on the executors, split
//! by station.

pub mod client;
pub mod codec;
pub mod executor;
pub mod scheduler;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use thiserror::Error;

use crate::lake::LakeError;

/// The largest gRPC message any process of the cluster sends or accepts. Plans carry the
/// in-memory tables (a job's `CREATE TABLE ... AS` intermediates among them, which the
/// client holds and sends with the next statement's plan), so Ballista's 16 MiB default
/// would fail a job on a lake of some size; past this limit the query fails saying so.
pub const MAX_MESSAGE_BYTES: u32 = 256 * 1024 * 1024;

/// Cluster failures, saying which part of the cluster was involved.
#[derive(Debug, Error)]
pub enum ClusterError {
    #[error("cluster configuration: {0}")]
    Config(String),
    /// The executor cannot listen on its `--bind` address.
    #[error("cluster configuration: cannot listen on --bind {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The scheduler did not answer at the address given.
    #[error("cannot reach the scheduler at {url} ({reason}): is `wxlake cluster scheduler` running there?")]
    Unreachable { url: SchedulerUrl, reason: String },
    #[error("ballista: {0}")]
    Ballista(#[from] ballista_core::error::BallistaError),
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("{0}")]
    Lake(#[from] LakeError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// Where the scheduler listens: `df://HOST:PORT`, the form `--cluster` and `--scheduler`
/// take (Ballista's own clients spell it the same way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerUrl {
    pub host: String,
    pub port: u16,
}

impl FromStr for SchedulerUrl {
    type Err = ClusterError;

    fn from_str(s: &str) -> Result<Self, ClusterError> {
        let bad = |why: &str| ClusterError::Config(format!("scheduler URL '{s}': {why} (expected df://HOST:PORT)"));
        let rest = s.strip_prefix("df://").ok_or_else(|| bad("not a df:// URL"))?;
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("no port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = port.parse::<u16>().map_err(|_| bad("the port is not a number"))?;
        Ok(SchedulerUrl { host: host.to_string(), port })
    }
}

impl fmt::Display for SchedulerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "df://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "df://{}:{}", self.host, self.port)
        }
    }
}

impl SchedulerUrl {
    /// Waits until the scheduler accepts connections, for at most `patience`: an executor
    /// started next to its scheduler waits for it, and a wrong address is an error that
    /// names it rather than Ballista's "could not connect".
    pub async fn wait_reachable(&self, patience: Duration) -> Result<(), ClusterError> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let attempt = tokio::time::timeout(
                Duration::from_secs(2),
                tokio::net::TcpStream::connect((self.host.as_str(), self.port)),
            )
            .await;
            let reason = match attempt {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(e)) => e.to_string(),
                Err(_) => "connection timed out".to_string(),
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(ClusterError::Unreachable { url: self.clone(), reason });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scheduler_urls() {
        let u: SchedulerUrl = "df://127.0.0.1:50050".parse().unwrap();
        assert_eq!(u, SchedulerUrl { host: "127.0.0.1".into(), port: 50050 });
        assert_eq!(u.to_string(), "df://127.0.0.1:50050");
        let v6: SchedulerUrl = "df://[::1]:7/".parse().unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 7));
        assert_eq!(v6.to_string(), "df://[::1]:7");
        for bad in ["http://h:1", "df://h", "df://:1", "df://h:port", "df://h:70000"] {
            let e = bad.parse::<SchedulerUrl>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("df://HOST:PORT"), "{bad}: {e}");
        }
    }

    #[tokio::test]
    async fn an_absent_scheduler_is_named_in_the_error() {
        // A port nobody listens on: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = SchedulerUrl { host: "127.0.0.1".into(), port };
        let e = url.wait_reachable(Duration::from_millis(300)).await.unwrap_err().to_string();
        assert!(e.contains(&format!("df://127.0.0.1:{port}")) && e.contains("wxlake cluster scheduler"), "{e}");
    }
}
