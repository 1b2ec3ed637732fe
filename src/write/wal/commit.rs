//! Group commit: the append path.
//!
//! Appenders encode their record into a shared buffer under a mutex and take the next seq.
//! If no write is in flight, that appender becomes the leader: it takes the whole buffer,
//! writes it with one `write` and one `sync_data`, then wakes everyone. Records queued while
//! a leader waits on the disk go out together in the next batch, so N concurrent appenders
//! cost about one fsync per disk round trip instead of N. Every caller gets its seq only
//! after the fsync covering its record returned.

use std::collections::{BTreeSet, VecDeque};
use std::io;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use parking_lot::MutexGuard;

use super::record::{checked_body_len, encode_record, RecordFields};
use super::{Wal, WalError};

/// A batch buffer that grew past this (one huge input) is dropped rather than kept as spare.
pub(super) const SPARE_KEEP_BYTES: usize = 8 << 20;

/// Appends waiting for a leader, and what is durable.
pub(super) struct Queue {
    pub(super) next_seq: u64,
    /// Encoded records not yet taken by a leader, in seq order.
    pub(super) buf: Vec<u8>,
    /// (seq, encoded length) of each record in `buf`.
    pub(super) buf_records: Vec<(u64, u32)>,
    /// Empty buffer swapped in when a leader takes `buf`, to reuse its allocation.
    pub(super) spare: Vec<u8>,
    pub(super) leader: bool,
    /// Every seq ≤ this has been written and fsynced, or its batch failed.
    pub(super) settled_seq: u64,
    pub(super) failures: Vec<Failure>,
    /// Durable records not yet trimmed, (seq, encoded length), in seq order.
    pub(super) pending: VecDeque<(u64, u32)>,
    pub(super) pending_bytes: u64,
    /// Seqs of `pending` the owner declared stored elsewhere ([`Wal::release`]) but that
    /// cannot be trimmed yet because an older durable record is still unreleased.
    pub(super) released: BTreeSet<u64>,
    pub(super) commits: u64,
}

/// A batch whose write failed; its appenders each take the error once.
pub(super) struct Failure {
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) waiting: usize,
    pub(super) error: Arc<io::Error>,
}

impl Wal {
    /// Appends one raw input and returns its seq once it is fsynced. Blocks the calling
    /// thread for about one disk flush; from async code use [`Wal::append_async`] or
    /// `spawn_blocking`. An `Err` means the input must not be acknowledged (though after a
    /// failed flush it may still turn up at replay, which idempotent ingest tolerates).
    pub fn append(&self, format: &str, options_json: &str, payload: &[u8]) -> Result<u64, WalError> {
        self.append_at(now_micros(), format, options_json, payload)
    }

    /// [`Wal::append`] with the record's time given (µs since the epoch): the write
    /// service's clock, which is when its rows were received (their `received_at`, read
    /// back at replay).
    pub fn append_at(&self, timestamp: i64, format: &str, options_json: &str, payload: &[u8]) -> Result<u64, WalError> {
        let body_len = checked_body_len(format, options_json, payload)?;
        let mut q = self.queue.lock();
        let seq = q.next_seq;
        q.next_seq += 1;
        let fields = RecordFields { seq, timestamp, format, options_json, payload };
        let len = encode_record(&mut q.buf, &fields, body_len);
        q.buf_records.push((seq, len));
        loop {
            if q.settled_seq >= seq {
                return take_result(&mut q, seq);
            }
            if q.leader {
                self.committed.wait(&mut q);
            } else {
                q = self.lead(q);
            }
        }
    }

    /// Async wrapper over [`Wal::append_at`] on tokio's blocking pool, so request handlers do
    /// not stall a runtime worker during the fsync.
    pub async fn append_async<P>(
        self: &Arc<Self>,
        timestamp: DateTime<Utc>,
        format: String,
        options_json: String,
        payload: P,
    ) -> Result<u64, WalError>
    where
        P: AsRef<[u8]> + Send + 'static,
    {
        let wal = Arc::clone(self);
        let at = timestamp.timestamp_micros();
        tokio::task::spawn_blocking(move || wal.append_at(at, &format, &options_json, payload.as_ref()))
            .await
            .map_err(WalError::Task)?
    }

    /// Writes everything queued as one batch, then wakes the waiters. Called with the queue
    /// locked and no leader active; returns with the queue locked again.
    fn lead<'a>(&'a self, mut q: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        let records = std::mem::take(&mut q.buf_records);
        let (Some(&(first, _)), Some(&(last, _))) = (records.first(), records.last()) else {
            return q;
        };
        q.leader = true;
        let mut batch = std::mem::take(&mut q.spare);
        std::mem::swap(&mut batch, &mut q.buf);
        drop(q);

        let result = self.io.lock().write_batch(&batch, first);

        let mut q = self.queue.lock();
        batch.clear();
        if batch.capacity() <= SPARE_KEEP_BYTES {
            q.spare = batch;
        }
        match result {
            Ok(()) => {
                for &(seq, len) in &records {
                    q.pending.push_back((seq, len));
                    q.pending_bytes += u64::from(len);
                }
            }
            Err(error) => {
                tracing::warn!(first, last, %error, "WAL batch write failed");
                q.failures.push(Failure { first, last, waiting: records.len(), error: Arc::new(error) });
            }
        }
        q.commits += 1;
        q.settled_seq = last;
        q.leader = false;
        self.committed.notify_all();
        q
    }
}

/// Hands the batch outcome for `seq` to its appender.
pub(super) fn take_result(q: &mut Queue, seq: u64) -> Result<u64, WalError> {
    let Some(i) = q.failures.iter().position(|f| f.first <= seq && seq <= f.last) else {
        return Ok(seq);
    };
    let failure = &mut q.failures[i];
    let error = Arc::clone(&failure.error);
    failure.waiting = failure.waiting.saturating_sub(1);
    if failure.waiting == 0 {
        q.failures.swap_remove(i);
    }
    Err(WalError::WriteFailed(error))
}

pub(super) fn now_micros() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}
