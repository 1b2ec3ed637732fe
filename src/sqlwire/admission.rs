//! What one analyst query may use, and who may run one now: the per-query memory and time
//! limits, and the caps on queries running at once (all keys together, and per key), so a
//! heavy query slows the REST API by a bounded share and one key cannot take every slot.
//!
//! A query over a cap waits briefly for a slot ([`QueryLimits::wait`], 2 s): the tools
//! open several connections on connect and send their catalog queries in parallel (DBeaver's
//! metadata connection, Grafana's and Metabase's pools), and those must not fail on a busy
//! key. Past that wait it is refused with a message naming the cap, not queued longer: a
//! client waiting on a full server learns nothing, and its own timeout would hide why.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::WireError;

/// The bounds of analyst queries (`wxlake serve --sql-*` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLimits {
    /// Memory one query may hold in its operators (hash tables, sorts); beyond it the
    /// operators that can spill to disk do, the others fail with a clear error.
    pub memory_bytes: usize,
    /// Wall-clock time from planning to the last row sent.
    pub timeout: Duration,
    /// Queries running at once over all keys.
    pub max_queries: usize,
    /// Queries running at once for one key.
    pub max_per_key: usize,
    /// How long a query over a cap waits for a slot before it is refused.
    pub wait: Duration,
    /// Connections open at once on the PostgreSQL listener (authenticating ones included;
    /// one more is refused), and calls in progress at once on the Flight SQL listener (one
    /// more waits for a slot: gRPC multiplexes a client's calls over few connections).
    pub max_connections: usize,
}

impl Default for QueryLimits {
    fn default() -> Self {
        QueryLimits {
            memory_bytes: 1 << 30,
            timeout: Duration::from_secs(300),
            max_queries: 4,
            max_per_key: 2,
            wait: Duration::from_secs(2),
            max_connections: 64,
        }
    }
}

/// Hands out query slots under [`QueryLimits`]' caps.
#[derive(Debug)]
pub struct Admission {
    limits: QueryLimits,
    total: Arc<Semaphore>,
    per_key: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A running query's slots; dropping it (the query's streams ended or were dropped, as
/// when the client disconnects) frees them.
#[derive(Debug)]
pub struct QueryPermit {
    _total: OwnedSemaphorePermit,
    _key: OwnedSemaphorePermit,
}

impl Admission {
    pub fn new(limits: QueryLimits) -> Self {
        Admission {
            limits,
            total: Arc::new(Semaphore::new(limits.max_queries.max(1))),
            per_key: Mutex::new(HashMap::new()),
        }
    }

    pub fn limits(&self) -> QueryLimits {
        self.limits
    }

    /// A slot for a query of `key_id` (waiting up to [`QueryLimits::wait`] for one), or
    /// the cap it would exceed.
    pub async fn admit(&self, key_id: &str) -> Result<QueryPermit, WireError> {
        let key_sem = {
            let mut map = self.per_key.lock();
            Arc::clone(
                map.entry(key_id.to_string())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.limits.max_per_key.max(1)))),
            )
        };
        let wait = self.limits.wait;
        let key = acquire(key_sem, wait).await.ok_or_else(|| {
            WireError::Busy(format!(
                "too many queries running for this key: at most {} at once; wait for one to finish",
                self.limits.max_per_key.max(1)
            ))
        })?;
        let total = acquire(Arc::clone(&self.total), wait).await.ok_or_else(|| {
            WireError::Busy(format!(
                "the server is running its maximum of {} analyst queries; retry shortly",
                self.limits.max_queries.max(1)
            ))
        })?;
        Ok(QueryPermit { _total: total, _key: key })
    }
}

/// A permit of `sem`, at once or within `wait`.
async fn acquire(sem: Arc<Semaphore>, wait: Duration) -> Option<OwnedSemaphorePermit> {
    if let Ok(p) = Arc::clone(&sem).try_acquire_owned() {
        return Some(p);
    }
    tokio::time::timeout(wait, sem.acquire_owned()).await.ok()?.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn caps_per_key_and_overall_are_exact_and_freed_on_drop() {
        let wait = Duration::from_millis(20);
        let a = Admission::new(QueryLimits { max_queries: 3, max_per_key: 2, wait, ..Default::default() });
        let p1 = a.admit("k1").await.unwrap();
        let _p2 = a.admit("k1").await.unwrap();
        let e = a.admit("k1").await.unwrap_err().to_string();
        assert!(e.contains("at most 2 at once"), "{e}");
        let _p3 = a.admit("k2").await.unwrap();
        let e = a.admit("k3").await.unwrap_err().to_string();
        assert!(e.contains("maximum of 3"), "{e}");
        drop(p1);
        a.admit("k1").await.expect("a finished query frees its slots");
    }

    #[tokio::test]
    async fn a_burst_waits_for_a_slot_instead_of_failing() {
        let a = Arc::new(Admission::new(QueryLimits {
            max_per_key: 1,
            wait: Duration::from_secs(5),
            ..Default::default()
        }));
        let first = a.admit("k").await.unwrap();
        let waiting = tokio::spawn({
            let a = Arc::clone(&a);
            async move { a.admit("k").await.map(drop) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(first);
        waiting.await.unwrap().expect("admitted once the first query ended");
    }
}
