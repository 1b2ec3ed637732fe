//! The open prepared statements of the Flight SQL server. A client that never sends
//! ClosePreparedStatement (a crashed notebook, a driver that leaks handles) must not grow
//! the map for ever: a statement unused for [`IDLE`] is forgotten, and a key holds at most
//! [`PER_KEY`] (preparing one more forgets that key's least recently used).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use parking_lot::Mutex;
use tonic::Status;

/// How long an unused prepared statement is kept.
pub const IDLE: Duration = Duration::from_secs(3600);
/// Open prepared statements per key.
pub const PER_KEY: usize = 256;

/// A prepared statement: its SQL and, once bound, its parameter values.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub sql: String,
    /// The key that prepared it: only that key may run, bind or close it.
    pub key_id: String,
    pub params: Option<RecordBatch>,
    last_used: Instant,
}

/// The statements by handle, under [`IDLE`] and [`PER_KEY`].
#[derive(Debug)]
pub struct PreparedStatements {
    map: Mutex<HashMap<Bytes, Prepared>>,
    idle: Duration,
    per_key: usize,
}

impl Default for PreparedStatements {
    fn default() -> Self {
        PreparedStatements::new(IDLE, PER_KEY)
    }
}

impl PreparedStatements {
    pub fn new(idle: Duration, per_key: usize) -> Self {
        PreparedStatements { map: Mutex::default(), idle, per_key: per_key.max(1) }
    }

    /// Keeps `sql` for `key_id`; returns its new handle.
    pub fn insert(&self, key_id: &str, sql: String) -> Bytes {
        let now = Instant::now();
        let mut map = self.map.lock();
        map.retain(|_, p| now.duration_since(p.last_used) < self.idle);
        let mut mine: Vec<(Bytes, Instant)> =
            map.iter().filter(|(_, p)| p.key_id == key_id).map(|(h, p)| (h.clone(), p.last_used)).collect();
        if mine.len() >= self.per_key {
            mine.sort_by_key(|(_, used)| *used);
            for (handle, _) in mine.iter().take(mine.len() + 1 - self.per_key) {
                map.remove(handle);
            }
            tracing::debug!(key_id, "prepared statements over the per-key bound: least recently used forgotten");
        }
        let handle = Bytes::from(uuid::Uuid::new_v4().to_string());
        map.insert(handle.clone(), Prepared { sql, key_id: key_id.to_string(), params: None, last_used: now });
        handle
    }

    /// The statement behind `handle`, if `key_id` prepared it and it is still open.
    pub fn get(&self, handle: &Bytes, key_id: &str) -> Result<Prepared, Status> {
        let now = Instant::now();
        let mut map = self.map.lock();
        match map.get_mut(handle) {
            Some(p) if p.key_id == key_id && now.duration_since(p.last_used) < self.idle => {
                p.last_used = now;
                Ok(p.clone())
            }
            _ => Err(Status::not_found(
                "no such prepared statement (closed, expired after an hour unused, or prepared with another key)",
            )),
        }
    }

    /// Binds `params` to the statement behind `handle`.
    pub fn bind(&self, handle: &Bytes, key_id: &str, params: Option<RecordBatch>) -> Result<(), Status> {
        self.get(handle, key_id)?;
        if let Some(p) = self.map.lock().get_mut(handle) {
            p.params = params;
        }
        Ok(())
    }

    /// Forgets the statement behind `handle` if `key_id` prepared it.
    pub fn close(&self, handle: &Bytes, key_id: &str) {
        let mut map = self.map.lock();
        if map.get(handle).is_some_and(|p| p.key_id == key_id) {
            map.remove(handle);
        }
    }

    /// Open statements (all keys).
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_a_bounded_number_and_loses_its_least_recently_used() {
        let s = PreparedStatements::new(IDLE, 3);
        let handles: Vec<Bytes> = (0..3).map(|i| s.insert("k", format!("SELECT {i}"))).collect();
        std::thread::sleep(Duration::from_millis(2));
        s.get(&handles[0], "k").unwrap();
        let other = s.insert("other", "SELECT 9".into());
        let fourth = s.insert("k", "SELECT 3".into());
        assert_eq!(s.len(), 4, "three of k's and one of other's");
        assert!(s.get(&handles[1], "k").is_err(), "the least recently used went");
        for h in [&handles[0], &handles[2], &fourth] {
            s.get(h, "k").unwrap();
        }
        s.get(&other, "other").unwrap();
        assert!(s.get(&other, "k").is_err(), "only its key may use it");
    }

    #[test]
    fn unused_statements_expire() {
        let s = PreparedStatements::new(Duration::from_millis(30), PER_KEY);
        let old = s.insert("k", "SELECT 1".into());
        std::thread::sleep(Duration::from_millis(50));
        let e = s.get(&old, "k").unwrap_err();
        assert!(e.message().contains("expired"), "{e}");
        s.insert("k", "SELECT 2".into());
        assert_eq!(s.len(), 1, "preparing sweeps the expired ones");
        s.close(&old, "k");
    }
}
