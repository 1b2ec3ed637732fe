//! What the write path runs in the background of a server: every flush interval (and at
//! once when forecasts arrive) it moves the acknowledged inputs from the WAL into the lake
//! and prunes the hot state, and about once an hour it compacts every lake table (each
//! flush leaves one small file per touched partition; compaction merges them back into one
//! sorted file per partition).

use std::sync::Arc;
use std::time::Duration;

use super::LiveService;

/// The compaction period: every table is compacted after each run of flushes this long (or
/// after every flush, when the flush interval is longer).
pub const COMPACT_EVERY: Duration = Duration::from_secs(3600);

impl LiveService {
    /// Flushes every `every`, prunes the hot state, and compacts the lake hourly (each
    /// flush adds small files), until the process ends.
    pub fn spawn_background(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let svc = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let compact_every = (COMPACT_EVERY.as_secs() / every.as_secs().max(1)).max(1);
            let mut n: u64 = 0;
            loop {
                // Forecast ingests ask for an early flush: a new run is served once in the lake.
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = svc.flush_requested() => {}
                }
                n += 1;
                match svc.flush().await {
                    Ok(s) if s.stored > 0 => tracing::info!(stored = s.stored, files = s.files, "flushed WAL to lake"),
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "flush failed; will retry"),
                }
                svc.hot.prune(svc.clock.now());
                if n.is_multiple_of(compact_every) {
                    for t in crate::lake::schema::TABLES {
                        if let Err(e) = svc.lake.compact(t).await {
                            tracing::error!(table = t.name, error = %e, "compaction failed");
                        }
                    }
                }
            }
        })
    }
}
