//! What the write path runs in the background of a server: every flush interval (and at
//! once when forecasts arrive) it moves the acknowledged inputs from the WAL into the lake
//! and prunes the hot state, and about once an hour it compacts every lake table (each
//! flush leaves one small file per touched partition; compaction merges them back into one
//! sorted file per partition).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::WriteService;

/// The compaction period: every table is compacted once this long has passed since the
/// last compaction, checked after each flush. Counted in time, not in flushes: a forecast
/// ingest asks for an early flush, and counting flushes compacted after every one of them
/// when the flush interval was long (a demo feed's runs every few seconds), replacing the
/// files readers had just listed.
pub const COMPACT_EVERY: Duration = Duration::from_secs(3600);

/// When compaction is due: [`COMPACT_EVERY`] after the previous one. The first is due one
/// flush interval short of a period after the start: about an hour in, or at the first
/// flush when the interval is an hour or longer (a server that rarely flushes compacts what
/// it finds at start-up).
#[derive(Debug, Clone, Copy)]
struct CompactionClock {
    last: Instant,
}

impl CompactionClock {
    fn starting(now: Instant, every: Duration) -> Self {
        CompactionClock { last: now.checked_sub(every).unwrap_or(now) }
    }

    /// True when a compaction is due at `now` (and counts it as done).
    fn due(&mut self, now: Instant) -> bool {
        if now.duration_since(self.last) < COMPACT_EVERY {
            return false;
        }
        self.last = now;
        true
    }
}

impl WriteService {
    /// Flushes every `every` (and early when forecasts arrive), prunes the hot state, and
    /// compacts the lake hourly (each flush adds small files), until the process ends.
    pub fn spawn_background(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let svc = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut compaction = CompactionClock::starting(Instant::now(), every);
            loop {
                // Forecast ingests ask for an early flush: a new run is served once in the lake.
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = svc.flush_requested() => {}
                }
                match svc.flush().await {
                    Ok(s) if s.stored > 0 => tracing::info!(stored = s.stored, files = s.files, "flushed WAL to lake"),
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "flush failed; will retry"),
                }
                svc.hot.prune(svc.clock.now());
                if compaction.due(Instant::now()) {
                    for t in crate::lake::schema::TABLES {
                        if let Err(e) = svc.lake.compact(t).await {
                            tracing::error!(table = t.name, error = %e, "compaction failed");
                        }
                    }
                    // Files replaced (by compactions and job publishes) more than the keep
                    // time ago, and files no commit names, leave the store.
                    svc.lake.vacuum_all().await;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_is_hourly_however_many_flushes_run_between() {
        let start = Instant::now();
        let mut clock = CompactionClock { last: start };
        // Early flushes every 2 s for an hour (a demo feed's runs): none compacts.
        let early: Vec<bool> = (1..1800).map(|i| clock.due(start + Duration::from_secs(2 * i))).collect();
        assert!(early.iter().all(|due| !due), "compacted before the hour was over");
        assert!(clock.due(start + COMPACT_EVERY), "the hour is over");
        assert!(!clock.due(start + COMPACT_EVERY + Duration::from_secs(2)), "the next flush does not compact again");
        // A flush interval longer than the period: every flush compacts.
        assert!(clock.due(start + COMPACT_EVERY * 3));
        assert!(clock.due(start + COMPACT_EVERY * 5));
    }

    #[test]
    fn the_first_compaction_is_an_hour_in_or_at_the_first_flush_of_a_rare_flusher() {
        let start = Instant::now() + COMPACT_EVERY * 2;
        let mut often = CompactionClock::starting(start, Duration::from_secs(10));
        assert!(!often.due(start) && !often.due(start + Duration::from_secs(3580)));
        assert!(often.due(start + Duration::from_secs(3590)));
        let mut rare = CompactionClock::starting(start, COMPACT_EVERY);
        assert!(rare.due(start), "an hourly flusher compacts at its first flush");
        assert!(!rare.due(start + Duration::from_secs(5)), "an early flush after it does not");
    }
}
