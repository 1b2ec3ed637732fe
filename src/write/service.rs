//! [`WriteService`]: the write path's one owner. It holds the WAL, the inputs acknowledged
//! but not yet in the lake (`pending`, decoded once: the flush and `live_observations`
//! read the same rows), the hot state, the server's DataFusion session, the
//! per-table versions and the new-data broadcast; it acknowledges an ingest once the WAL
//! has it, and its [`flush`](WriteService::flush) moves `pending` into the lake (see the
//! module docs of [`crate::write`] for the ordering that makes this safe).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use datafusion::prelude::SessionContext;
use parking_lot::Mutex;
use thiserror::Error;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::hot::{Applied, HotState, Snapshot, Take};
use super::probe::{Fault, Probes, StorageFault};
use super::wal::{Wal, WalEntry, WalError};
use crate::clock::Clock;
use crate::decode::types::{DailyReport, ForecastRow, LineError, Metar, OneMinute};
use crate::ingest::{store_held, DecodedInput, Format, IngestOptions, OfRecords, Received, Records};
use crate::lake::rows::LakeRecord;
use crate::lake::window::{load_known_window, load_reported_window, load_window};
use crate::lake::writer::WriteStats;
use crate::lake::{Lake, LakeError};
use crate::models::StoredRun;

/// Live-ingest failures.
#[derive(Debug, Error)]
pub enum WriteError {
    #[error("{0}")]
    Wal(#[from] WalError),
    #[error("{0}")]
    Lake(#[from] LakeError),
    /// The input decoded to nothing: not acknowledged, not logged.
    #[error("no usable records")]
    Unusable(Vec<LineError>),
}

impl WriteError {
    /// The storage failure this is, if any: what a client is told (507 for a full disk,
    /// 503 otherwise, both with `Retry-After`) instead of a bare 500.
    pub fn storage_fault(&self) -> Option<StorageFault> {
        match self {
            WriteError::Wal(WalError::TooLarge { .. } | WalError::FormatTooLong(_)) | WriteError::Unusable(_) => None,
            WriteError::Wal(e) => Some(StorageFault::of(e)),
            WriteError::Lake(e) => Some(StorageFault::of(e)),
        }
    }
}

/// One applied record for the stream publisher. `logged`, when present, is answered once
/// the events of this record and of every record sent before it are in the event log.
#[derive(Debug)]
pub struct Notice {
    pub applied: Applied,
    pub logged: Option<oneshot::Sender<()>>,
}

/// What an acknowledged live ingest did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WriteOutcome {
    /// WAL sequence number: the input is durable. `None` when every record was already
    /// held (nothing new to log).
    pub seq: Option<u64>,
    pub read: usize,
    /// Records new to the service (for forecasts: every decoded row; the lake's natural
    /// keys drop stored ones at flush).
    pub accepted: usize,
    /// Records the service already held (same natural key): no event, not stored again.
    pub duplicate: usize,
    pub rejected: usize,
    /// The first rejected lines with reasons.
    pub errors: Vec<LineError>,
    /// New-high / new-low events the input caused.
    pub events: usize,
}

/// What the hot state took of one input: the new records' changes (for the stream) and
/// the counts an ingest reports.
#[derive(Debug, Default)]
struct Taken {
    applied: Vec<Applied>,
    accepted: usize,
    duplicate: usize,
    events: usize,
}

impl Taken {
    fn add(&mut self, take: Take) {
        match take {
            Take::New(a) => {
                self.applied.push(*a);
                self.accepted += 1;
            }
            // Outside the catalog, first seen: stored in the lake, nothing to stream.
            Take::Outside => self.accepted += 1,
            Take::Held => self.duplicate += 1,
        }
    }
}

/// The live service shared by the API handlers and the background tasks.
pub struct WriteService {
    pub lake: Lake,
    /// One DataFusion session for every read (listing tables re-list files per scan, so
    /// new lake files are visible without re-registering).
    pub ctx: datafusion::prelude::SessionContext,
    pub hot: HotState,
    pub clock: Arc<dyn Clock>,
    wal: Arc<Wal>,
    /// The last receipt stamp given: each input gets a later one (by 1 µs when the clock
    /// has not moved), so two inputs are never known at the same instant and an answer as
    /// of one input's stamp never includes the next (see [`WriteService::known_window`]).
    last_received: Mutex<DateTime<Utc>>,
    /// Logged but not yet in the lake, by WAL seq: the inputs' decoded records.
    pending: Mutex<BTreeMap<u64, Received>>,
    flush_lock: tokio::sync::Mutex<()>,
    /// The stream publisher's inbox, once one is attached. Applies and sends happen under
    /// this lock, so the publisher sees records in the order the hot state applied them.
    notices: tokio::sync::Mutex<Option<mpsc::Sender<Notice>>>,
    /// Names of lake tables that just received rows (the job scheduler's new-data trigger).
    new_data: broadcast::Sender<String>,
    /// Per table, how many flushes added rows to it (caches of lake rows compare it).
    versions: Mutex<std::collections::HashMap<&'static str, u64>>,
    /// Per forecast model, how many flushes stored runs of it (a cache of one model's rows
    /// stays current while other models' runs arrive).
    model_versions: Mutex<std::collections::HashMap<String, u64>>,
    /// Per forecast model, the oldest run date each recent version bump stored:
    /// `(version after the bump, date)`, the last [`RUN_DATE_LOG`] of them, so a cache of
    /// the model's rows built at an older version re-reads only the run dates since.
    model_run_dates: Mutex<std::collections::HashMap<String, std::collections::VecDeque<(u64, chrono::NaiveDate)>>>,
    /// The newest run this service stored per (location, model): what the latest-runs
    /// index adds to its lake reads, so a run shows as soon as it is flushed.
    stored_runs: Mutex<std::collections::HashMap<(String, &'static str), DateTime<Utc>>>,
    /// The model runs each flush stored (the fresh-runs trigger, `jobs::fresh`).
    new_runs: broadcast::Sender<Vec<StoredRun>>,
    /// Wakes the background flush before its tick: forecasts are not in the hot state, so
    /// a run is invisible until flushed.
    flush_soon: tokio::sync::Notify,
    /// Changes whenever a job run of this process published derived rows (caches of the
    /// job tables compare it).
    derived_version: std::sync::atomic::AtomicU64,
    /// The last health probes of the WAL and the lake (`/healthz`).
    probes: Probes,
}

/// Version bumps remembered per model for [`WriteService::run_dates_since`]: a cache older
/// than this many bumps of its model is read again whole.
pub const RUN_DATE_LOG: usize = 64;

impl std::fmt::Debug for WriteService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteService").field("lake", &self.lake.location.base_url).finish_non_exhaustive()
    }
}

impl WriteService {
    /// Opens the WAL under `state_dir`, rebuilds the hot state from the lake's recent days,
    /// then replays the WAL on top (those entries stay pending until flushed). `ctx` is the
    /// session every read of the server runs in: the caller's, so the write path need not
    /// know what else it holds (`serve` passes `jobs::analyst_session`: the lake's tables
    /// and the jobs' derived tables).
    pub async fn open(
        lake: Lake,
        ctx: SessionContext,
        state_dir: &std::path::Path,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, WriteError> {
        let wal_dir = state_dir.join("wal");
        let (wal, entries) = tokio::task::spawn_blocking(move || Wal::open(&wal_dir))
            .await
            .map_err(|e| WriteError::Wal(WalError::Task(e)))??;
        for issue in wal.replay_issues() {
            tracing::warn!(segment = %issue.segment.display(), offset = issue.offset, reason = %issue.reason, "WAL damage skipped");
        }
        let (new_data, _) = broadcast::channel(64);
        let (new_runs, _) = broadcast::channel(64);
        let svc = WriteService {
            lake,
            ctx,
            hot: HotState::new(),
            clock,
            wal: Arc::new(wal),
            pending: Mutex::new(BTreeMap::new()),
            flush_lock: tokio::sync::Mutex::new(()),
            notices: tokio::sync::Mutex::new(None),
            new_data,
            versions: Mutex::new(std::collections::HashMap::new()),
            model_versions: Mutex::new(std::collections::HashMap::new()),
            model_run_dates: Mutex::new(std::collections::HashMap::new()),
            stored_runs: Mutex::new(std::collections::HashMap::new()),
            new_runs,
            flush_soon: tokio::sync::Notify::new(),
            last_received: Mutex::new(DateTime::<Utc>::MIN_UTC),
            derived_version: std::sync::atomic::AtomicU64::new(0),
            probes: Probes::default(),
        };
        let now = svc.clock.now();
        let loaded = svc.rebuild_from_lake(now).await?;
        let replayed = entries.len();
        // No publisher is attached yet: replayed inputs were streamed by the run that
        // acknowledged them.
        for e in entries {
            let mut last = svc.last_received.lock();
            *last = (*last).max(e.timestamp);
            drop(last);
            let records = Arc::new(decode_entry(&e).records);
            drop(svc.hot_apply(&records, e.timestamp, Snapshot::Skip));
            svc.pending_lock().insert(e.seq, Received { at: e.timestamp, records });
        }
        tracing::info!(loaded, replayed, "hot state rebuilt");
        Ok(svc)
    }

    fn pending_lock(&self) -> parking_lot::MutexGuard<'_, BTreeMap<u64, Received>> {
        self.pending.lock()
    }

    /// Changes whenever this service stores rows into `table` (a cache of its rows built at
    /// version v is current while the version is still v, for rows arriving through it).
    pub fn table_version(&self, table: &str) -> u64 {
        self.versions.lock().get(table).copied().unwrap_or(0)
    }

    /// Changes whenever this service stores forecast rows of `model`: finer than
    /// [`table_version`](Self::table_version) of `forecasts`, for caches of one model.
    pub fn forecast_version(&self, model: &str) -> u64 {
        self.model_versions.lock().get(model).copied().unwrap_or(0)
    }

    /// The oldest run date among the `model` rows this service stored after its version
    /// `since` ([`forecast_version`](Self::forecast_version)): `Some(None)` when none
    /// was stored since, `None` when that is too long ago to know (read everything).
    pub fn run_dates_since(&self, model: &str, since: u64) -> Option<Option<chrono::NaiveDate>> {
        let current = self.forecast_version(model);
        if current == since {
            return Some(None);
        }
        let log = self.model_run_dates.lock();
        let bumps = log.get(model)?;
        // Every bump after `since` must still be logged: since+1 ..= current.
        if bumps.front().is_none_or(|(v, _)| *v > since + 1) {
            return None;
        }
        Some(bumps.iter().filter(|(v, _)| *v > since).map(|(_, d)| *d).min())
    }

    /// The newest run of each model this service stored for `location` (since it opened).
    pub fn stored_runs(&self, location: &str) -> Vec<(&'static str, DateTime<Utc>)> {
        let runs = self.stored_runs.lock();
        runs.iter().filter(|((loc, _), _)| loc == location).map(|((_, model), &t)| (*model, t)).collect()
    }

    /// Subscribes to the names of tables a flush added rows to.
    pub fn subscribe_new_data(&self) -> broadcast::Receiver<String> {
        self.new_data.subscribe()
    }

    /// Changes whenever [`derived_published`](Self::derived_published) is called: a cache of
    /// job tables built at version v is current while this is still v (and its TTL runs).
    pub fn derived_version(&self) -> u64 {
        self.derived_version.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A job run of this process published new rows of a derived table (the fresh runs
    /// after a new model run, a scheduled run): caches of the job tables reload on their
    /// next read.
    pub fn derived_published(&self) {
        self.derived_version.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Subscribes to the model runs each flush stores: (model, run time) pairs of the
    /// forecast rows written, sent once the rows are in the lake.
    pub fn subscribe_new_runs(&self) -> broadcast::Receiver<Vec<StoredRun>> {
        self.new_runs.subscribe()
    }

    /// Resolves when an ingest asked for an early flush (forecasts arrived).
    pub(super) async fn flush_requested(&self) {
        self.flush_soon.notified().await
    }

    /// Attaches the stream publisher: from now on every record the hot state applies is
    /// sent to the returned receiver, in apply order, and an ingest waits while `capacity`
    /// records are unread. Attaching again replaces the previous publisher.
    pub async fn attach_publisher(&self, capacity: usize) -> mpsc::Receiver<Notice> {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        *self.notices.lock().await = Some(tx);
        rx
    }

    /// Detaches the publisher: its inbox closes, so it ends once it has logged what it
    /// holds (a graceful shutdown awaits that before it closes the stream).
    pub async fn detach_publisher(&self) {
        *self.notices.lock().await = None;
    }

    /// Decodes (once: the records stay pending until flushed), logs durably, applies.
    /// Returns only after the WAL fsync. The body is not copied: the WAL writes it from
    /// where the caller's buffer holds it.
    pub async fn ingest(
        self: &Arc<Self>,
        format: Format,
        opts: IngestOptions,
        body: impl Into<Bytes>,
    ) -> Result<WriteOutcome, WriteError> {
        let bytes: Bytes = body.into();
        let opts_json = serde_json::to_string(&opts).unwrap_or_default();
        let input = bytes.clone();
        let decoded = tokio::task::spawn_blocking(move || format.decode(&input, &opts))
            .await
            .map_err(|e| WriteError::Wal(WalError::Task(e)))?;
        if decoded.records.is_empty() {
            return Err(WriteError::Unusable(decoded.errors));
        }
        // From the WAL append on, the work runs to its end even if the caller goes away (a
        // client that disconnects drops this future): an input that is durable but never
        // reached `pending` would hold back every later WAL trim until a restart.
        let svc = Arc::clone(self);
        tokio::spawn(async move { svc.log_and_apply(format, opts_json, bytes, decoded).await })
            .await
            .map_err(|e| WriteError::Wal(WalError::Task(e)))?
    }

    async fn log_and_apply(
        &self,
        format: Format,
        opts_json: String,
        bytes: Bytes,
        decoded: DecodedInput,
    ) -> Result<WriteOutcome, WriteError> {
        // Held records were acknowledged before (or loaded from the lake): an input of
        // nothing else is answered without a WAL record, a flush or an event. A record
        // that races in twice is caught below, under the station's lock.
        if self.all_held(&decoded.records) {
            return Ok(WriteOutcome {
                seq: None,
                read: decoded.read,
                accepted: 0,
                duplicate: decoded.records.len(),
                rejected: decoded.errors.len(),
                errors: decoded.errors.into_iter().take(20).collect(),
                events: 0,
            });
        }
        // The one time these rows were received: the WAL keeps it for a replay, the lake
        // stores it as `received_at` and `available_at`.
        let received = {
            let mut last = self.last_received.lock();
            *last = self.clock.now().max(*last + Duration::microseconds(1));
            *last
        };
        let seq = self.wal.append_async(received, format.as_str().to_string(), opts_json, bytes).await?;
        let records = Arc::new(decoded.records);
        self.pending_lock().insert(seq, Received { at: received, records: Arc::clone(&records) });
        if matches!(*records, Records::Forecasts(_)) {
            self.flush_soon.notify_one();
        }
        let taken = self.apply(&records, received).await;
        Ok(WriteOutcome {
            seq: Some(seq),
            read: decoded.read,
            accepted: taken.accepted,
            duplicate: taken.duplicate,
            rejected: decoded.errors.len(),
            errors: decoded.errors.into_iter().take(20).collect(),
            events: taken.events,
        })
    }

    /// Applies records received at `received` to the hot state and hands the new ones to
    /// the stream publisher, if one is attached (waiting while its inbox is full); returns
    /// what the hot state took.
    async fn apply(&self, records: &Records, received: DateTime<Utc>) -> Taken {
        let mut notices = self.notices.lock().await;
        let snapshot = if notices.is_some() { Snapshot::At(self.clock.now()) } else { Snapshot::Skip };
        let mut taken = self.hot_apply(records, received, snapshot);
        taken.events = taken.applied.iter().map(Applied::event_count).sum();
        let applied = std::mem::take(&mut taken.applied);
        let mut logged = None;
        if let Some(tx) = notices.as_ref() {
            let last = applied.len().saturating_sub(1);
            for (i, applied) in applied.into_iter().enumerate() {
                let (done, wait) = if i == last { Some(oneshot::channel()).unzip() } else { (None, None) };
                logged = wait;
                if tx.send(Notice { applied, logged: done }).await.is_err() {
                    tracing::error!("stream publisher stopped; live events are no longer streamed");
                    *notices = None;
                    logged = None;
                    break;
                }
            }
        }
        drop(notices);
        if let Some(wait) = logged {
            // An error means the publisher went away: there is nothing left to wait for.
            let _ = wait.await;
        }
        taken
    }

    /// Applies records known from `known` on to the hot state; returns what each new one
    /// changed and how many were new and already held.
    fn hot_apply(&self, records: &Records, known: DateTime<Utc>, snapshot: Snapshot) -> Taken {
        let mut taken = Taken::default();
        let hot = &self.hot;
        match records {
            Records::Observations(v) => v.iter().for_each(|m| taken.add(hot.apply_metar(m, known, snapshot))),
            Records::OneMinute(v) => v.iter().for_each(|o| taken.add(hot.apply_onemin(o, known))),
            Records::Reports(v) => v.iter().for_each(|r| taken.add(hot.apply_report(r, known, snapshot))),
            // Not in the hot state: the lake's natural keys drop a stored row at flush.
            Records::Forecasts(_) | Records::NwsHourly(_) | Records::DailyForecasts(_) => {
                taken.accepted = records.len()
            }
        }
        taken
    }

    /// True when every record is already held by the hot state: such an input adds
    /// nothing, so it is neither logged nor streamed. Forecasts are never held here.
    fn all_held(&self, records: &Records) -> bool {
        match records {
            Records::Observations(v) => v.iter().all(|m| self.hot.holds_metar(m)),
            Records::OneMinute(v) => v.iter().all(|o| self.hot.holds_onemin(o)),
            Records::Reports(v) => v.iter().all(|r| self.hot.holds_report(r)),
            Records::Forecasts(_) | Records::NwsHourly(_) | Records::DailyForecasts(_) => false,
        }
    }

    /// Writes everything pending to the lake (one write per table, so a flush adds at most
    /// one file per touched partition), then forgets exactly those inputs and releases them
    /// to the WAL (see the module docs for why not "through the newest").
    pub async fn flush(&self) -> Result<WriteStats, WriteError> {
        let _guard = self.flush_lock.lock().await;
        let (seqs, batch): (Vec<u64>, Vec<Received>) =
            self.pending_lock().iter().map(|(seq, r)| (*seq, r.clone())).unzip();
        let stats = self.store_pending(&batch).await?;
        {
            let mut pending = self.pending_lock();
            for seq in &seqs {
                pending.remove(seq);
            }
        }
        // Also retries a release that failed after an earlier flush had stored its inputs.
        let wal = Arc::clone(&self.wal);
        tokio::task::spawn_blocking(move || wal.release(seqs))
            .await
            .map_err(|e| WriteError::Wal(WalError::Task(e)))??;
        Ok(stats)
    }

    /// Stores pending inputs in the lake, one write per table, and tells the subscribers.
    async fn store_pending(&self, batch: &[Received]) -> Result<WriteStats, WriteError> {
        let forecasts = || batch.iter().flat_map(|r| ForecastRow::of(&r.records));
        let runs = StoredRun::distinct(forecasts().map(|r| (r.model, r.run_time)));
        let mut newest: std::collections::HashMap<(String, &'static str), DateTime<Utc>> = Default::default();
        for r in forecasts() {
            let t = newest.entry((r.location_name.to_string(), r.model)).or_insert(r.run_time);
            *t = (*t).max(r.run_time);
        }
        let mut stats = WriteStats::default();
        for (table, s) in store_held(&self.lake, batch).await? {
            if s.stored > 0 {
                *self.versions.lock().entry(table).or_default() += 1;
                // No scheduler listening is fine.
                let _ = self.new_data.send(table.to_string());
                if table == crate::lake::schema::FORECASTS.name {
                    // Both under one lock order (versions, then dates), bumped once per model.
                    let mut versions = self.model_versions.lock();
                    let mut dates = self.model_run_dates.lock();
                    let mut oldest: std::collections::BTreeMap<&str, chrono::NaiveDate> = Default::default();
                    for r in &runs {
                        let d = oldest.entry(r.model.as_str()).or_insert(r.run_date());
                        *d = (*d).min(r.run_date());
                    }
                    for (model, date) in oldest {
                        let v = versions.entry(model.to_string()).or_default();
                        *v += 1;
                        let log = dates.entry(model.to_string()).or_default();
                        log.push_back((*v, date));
                        while log.len() > RUN_DATE_LOG {
                            log.pop_front();
                        }
                    }
                    drop((versions, dates));
                    let mut stored = self.stored_runs.lock();
                    for (key, t) in std::mem::take(&mut newest) {
                        let held = stored.entry(key).or_insert(t);
                        *held = (*held).max(t);
                    }
                    drop(stored);
                    let _ = self.new_runs.send(runs.clone());
                }
            }
            stats += s;
        }
        Ok(stats)
    }

    /// The inputs acknowledged but not yet in the lake, decoded (the SQL servers'
    /// `live_observations`; pending holds a few flush intervals).
    pub fn pending_records(&self) -> Vec<Received> {
        self.pending_lock().values().cloned().collect()
    }

    /// What the service knew at `t` of `station` in `[from, to)`: from memory when the hot
    /// state holds the window ([`HotState::known`]: every input it acknowledged or loaded
    /// at start, with when each became known); else the lake's rows available by `t` and
    /// the inputs it had acknowledged by `t` but not yet flushed (read first: an input
    /// flushed meanwhile is in the lake by the time the lake is read, so none is missed;
    /// one seen twice is dropped here). `to` bounds observations and one-minute
    /// readings; reports are those the lake window holds (its days and the day before).
    pub async fn known_window(
        &self,
        station: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        t: DateTime<Utc>,
        onemin: bool,
    ) -> Result<(Vec<Metar>, Vec<OneMinute>, Vec<DailyReport>), LakeError> {
        // Within the hot state's horizon it holds every input with its known time: no
        // lake read (the acknowledged inputs not yet flushed are in it too).
        if let Some(known) = self.hot.known(station, from, to, t, onemin) {
            return Ok(known);
        }
        let pending: Vec<Received> = self.pending_lock().values().filter(|r| r.at <= t).cloned().collect();
        let (mut obs, mut mins, mut reports) = if onemin {
            load_window(&self.ctx, Some(station), from, to, Some(t)).await?
        } else {
            let (o, r) = load_reported_window(&self.ctx, Some(station), from, to, Some(t)).await?;
            (o, Vec::new(), r)
        };
        let in_window = |time: DateTime<Utc>| time >= from && time < to;
        for r in &pending {
            obs.extend(Metar::of(&r.records).iter().filter(|m| m.station == station && in_window(m.time)).cloned());
            if onemin {
                let of = OneMinute::of(&r.records).iter();
                mins.extend(of.filter(|o| o.station == station && in_window(o.time)).cloned());
            }
            reports.extend(DailyReport::of(&r.records).iter().filter(|d| d.station == station).cloned());
        }
        let mut seen = std::collections::HashSet::new();
        obs.retain(|m| seen.insert((m.time, m.row_key())));
        let mut seen = std::collections::HashSet::new();
        mins.retain(|o| seen.insert(o.time));
        let mut seen = std::collections::HashSet::new();
        reports.retain(|d| seen.insert(d.row_key()));
        Ok((obs, mins, reports))
    }

    /// What keeps the write path from doing its job now: the WAL directory refusing a
    /// write, the lake not answering (probed, at most once per `probe::PROBE_TTL`).
    pub async fn faults(&self) -> Vec<Fault> {
        let store = self.lake.store();
        self.probes.faults(self.wal.dir(), store.as_ref(), &self.lake.location.root).await
    }

    /// Number of acknowledged inputs not yet in the lake.
    pub fn pending(&self) -> usize {
        self.pending_lock().len()
    }

    /// Loads the lake's observations, one-minute data and reports of the last days.
    async fn rebuild_from_lake(&self, now: DateTime<Utc>) -> Result<usize, WriteError> {
        let from = now - super::hot::REBUILD_WINDOW;
        let (obs, onemin, reports) = load_known_window(&self.ctx, from, now + Duration::hours(1)).await?;
        let n = obs.len() + onemin.len() + reports.len();
        obs.iter().for_each(|(m, at)| drop(self.hot.apply_metar(m, *at, Snapshot::Skip)));
        onemin.iter().for_each(|(o, at)| drop(self.hot.apply_onemin(o, *at)));
        reports.iter().for_each(|(r, at)| drop(self.hot.apply_report(r, *at, Snapshot::Skip)));
        self.hot.mark_complete_from(from);
        Ok(n)
    }
}

fn decode_entry(e: &WalEntry) -> DecodedInput {
    let opts: IngestOptions = serde_json::from_str(&e.options_json).unwrap_or_default();
    match e.format.parse::<Format>() {
        Ok(f) => f.decode(&e.payload, &opts),
        Err(reason) => DecodedInput {
            records: Records::Observations(Vec::new()),
            errors: vec![LineError { line: 0, reason }],
            read: 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration as StdDuration;

    use chrono::TimeZone;
    use datafusion::arrow::array::AsArray;

    use super::*;
    use crate::clock::ManualClock;
    use crate::write::hot::KnownInputs;

    async fn open(dir: &std::path::Path) -> Arc<WriteService> {
        let lake = Lake::open(&format!("file://{}", dir.join("lake").display())).await.unwrap();
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 3, 8, 18, 0, 0).unwrap()));
        Arc::new(
            WriteService::open(
                lake.clone(),
                crate::lake::query::session(&lake).await.unwrap(),
                &dir.join("state"),
                clock,
            )
            .await
            .unwrap(),
        )
    }

    /// What the service knew at a time, answered from the hot state, equals what the lake
    /// says with `as_of` (inputs acknowledged at different times, some flushed and some
    /// not), and equals it again after a restart rebuilt the state from the lake's stamps.
    #[tokio::test]
    async fn the_hot_state_knows_what_the_lake_knew_at_each_time() {
        use crate::decode::onemin::encode_onemin_csv;
        let dir = tempfile::tempdir().unwrap();
        let at = |h: u32, m: u32| Utc.with_ymd_and_hms(2026, 3, 8, h, m, 0).unwrap();
        let lake = Lake::open(&format!("file://{}", dir.path().join("lake").display())).await.unwrap();
        let ctx = crate::lake::query::session(&lake).await.unwrap();
        let clock = Arc::new(ManualClock::new(at(18, 0)));
        let svc = Arc::new(
            WriteService::open(lake.clone(), ctx.clone(), &dir.path().join("state"), clock.clone()).await.unwrap(),
        );
        let march = IngestOptions { month: Some((2026, 3)), ..Default::default() };
        let metar = |text: &str| (Format::Metar, march.clone(), text.to_string());
        let minutes: Vec<OneMinute> = (0..10)
            .map(|i| OneMinute {
                station: "KNYC".into(),
                time: at(18, i),
                temp_f: (i != 4).then_some(41.0 + f64::from(i)),
            })
            .collect();
        let inputs = [
            (at(18, 0), metar("KNYC 081751Z AUTO 27008KT 10SM CLR 05/M02 A3012 RMK T00501017")),
            (at(18, 30), (Format::Onemin, IngestOptions::default(), encode_onemin_csv(&minutes))),
            (at(19, 0), metar("KNYC 081851Z AUTO 27008KT 10SM CLR 06/M02 A3012 RMK T00561017")),
            // A correction of the 17:51 report, an hour later.
            (at(19, 5), metar("KNYC 081751Z COR AUTO 27008KT 10SM CLR 05/M02 A3012 RMK T00521017")),
        ];
        for (i, (when, (format, opts, body))) in inputs.iter().enumerate() {
            clock.set(*when);
            svc.ingest(*format, opts.clone(), body.clone().into_bytes()).await.unwrap();
            if i == 1 {
                svc.flush().await.unwrap();
            }
        }
        let (from, to) = (at(12, 0), at(23, 0));
        let times = [at(17, 59), at(18, 0), at(18, 29), at(18, 30), at(19, 0), at(19, 4), at(19, 5)];
        let sorted = |(mut o, mut m, r): KnownInputs| {
            o.sort_by_key(|x| (x.time, x.raw.clone()));
            m.sort_by_key(|x| x.time);
            (
                o.iter().map(|x| x.raw.clone()).collect::<Vec<_>>(),
                m.iter().map(|x| (x.time, x.temp_f)).collect::<Vec<_>>(),
                r.len(),
            )
        };
        let mut hot = Vec::new();
        for t in times {
            let known = svc.hot.known("KNYC", from, to, t, true).expect("within the hot horizon");
            hot.push(sorted(known));
        }
        let counts: Vec<(usize, usize)> = hot.iter().map(|(o, m, _)| (o.len(), m.len())).collect();
        assert_eq!(counts, [(0, 0), (1, 0), (1, 0), (1, 10), (2, 10), (2, 10), (3, 10)]);
        // The lake alone, once everything is flushed, says the same at each time.
        svc.flush().await.unwrap();
        for (t, want) in times.iter().zip(&hot) {
            let lake_said = load_window(&ctx, Some("KNYC"), from, to, Some(*t)).await.unwrap();
            assert_eq!(&sorted(lake_said), want, "{t}");
        }
        // A window reaching before the hot horizon is left to the lake.
        assert!(svc.hot.known("KNYC", at(18, 0) - Duration::days(3), to, at(19, 0), true).is_none());
        drop(svc);
        let svc =
            WriteService::open(lake.clone(), ctx.clone(), &dir.path().join("state"), clock.clone()).await.unwrap();
        for (t, want) in times.iter().zip(&hot) {
            let known = svc.hot.known("KNYC", from, to, *t, true).expect("rebuilt");
            assert_eq!(&sorted(known), want, "after a restart, {t}");
        }
        // Pruning moves the horizon: the pruned part is the lake's to answer.
        let later = at(19, 0) + Duration::hours(60);
        svc.hot.prune(later);
        assert_eq!(svc.hot.horizon("KNYC"), Some(later - crate::write::hot::RECENT));
        assert!(svc.hot.known("KNYC", from, to, at(19, 5), true).is_none());
        assert!(svc.hot.known("KNYC", later - Duration::hours(1), later, later, true).is_some());
    }

    async fn lake_counts(svc: &WriteService) -> (i64, i64) {
        let q = "SELECT count(*), count(DISTINCT row_key) FROM observations";
        let b = svc.ctx.sql(q).await.unwrap().collect().await.unwrap();
        let col = |c: usize| b[0].column(c).as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0);
        (col(0), col(1))
    }

    /// Many posters against a flusher that never pauses: under group commit inputs reach
    /// `pending` out of seq order, and a flush that trimmed "through the newest stored seq"
    /// lost the older ones still on their way. Every acknowledged line must end up in the
    /// lake exactly once, also across a restart that replays what was not yet flushed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_ingests_and_flushes_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let svc = open(dir.path()).await;
        const EACH: usize = 150;
        const STATIONS: [&str; 8] = ["KNYC", "KLGA", "KJFK", "KEWR", "KBOS", "KPHL", "KDCA", "KMDW"];
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flusher = {
            let (svc, stop) = (Arc::clone(&svc), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut flushes = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    svc.flush().await.unwrap();
                    flushes += 1;
                }
                flushes
            })
        };
        let mut posters = Vec::new();
        for (p, station) in STATIONS.into_iter().enumerate() {
            let svc = Arc::clone(&svc);
            posters.push(tokio::spawn(async move {
                let mut acked = 0;
                for i in 0..EACH {
                    // One report per minute of 8 March, unique per poster.
                    let (h, m) = (i / 60, i % 60);
                    let line = format!(
                        "{station} 08{h:02}{m:02}Z AUTO 27008KT 10SM CLR 05/M02 A3012 RMK T00{:02}1017",
                        p * 10 + i % 10
                    );
                    let opts = IngestOptions { month: Some((2026, 3)), ..Default::default() };
                    svc.ingest(Format::Metar, opts, line.into_bytes()).await.unwrap();
                    acked += 1;
                }
                acked
            }));
        }
        let mut acked = 0;
        for p in posters {
            acked += p.await.unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(flusher.await.unwrap() > 1, "the flusher ran alongside the posters");
        // Some inputs may still be pending: stop without flushing them, as a crash would.
        drop(svc);
        let svc = open(dir.path()).await;
        svc.flush().await.unwrap();
        assert_eq!(svc.pending(), 0);
        assert_eq!(lake_counts(&svc).await, (acked as i64, acked as i64), "every acknowledged line, once");
        assert_eq!(svc.wal.pending().records, 0, "the WAL is trimmed once everything is in the lake");
    }

    /// A caller that goes away mid-ingest (an HTTP client disconnecting drops the handler's
    /// future) must not leave a durable input outside `pending`: it would never reach the
    /// lake before a restart, and would hold every later WAL trim back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn abandoned_ingests_still_reach_the_lake() {
        let dir = tempfile::tempdir().unwrap();
        let svc = open(dir.path()).await;
        for i in 0..200u64 {
            let line = format!("KNYC 08{:02}{:02}Z AUTO 27008KT 10SM CLR 05/M02 A3012", i / 60, i % 60);
            let opts = IngestOptions { month: Some((2026, 3)), ..Default::default() };
            let cut = StdDuration::from_micros(i * 37 % 3000);
            let _ = tokio::time::timeout(cut, svc.ingest(Format::Metar, opts, line.into_bytes())).await;
        }
        tokio::time::sleep(StdDuration::from_millis(500)).await;
        svc.flush().await.unwrap();
        let logged = svc.wal.last_seq();
        assert!(logged > 0, "some inputs reached the WAL");
        assert_eq!(lake_counts(&svc).await.0, logged as i64, "every logged input is in the lake");
        assert_eq!(svc.wal.pending().records, 0, "and the WAL is trimmed");
    }

    /// The publisher's inbox is bounded: an ingest waits for it rather than skip records.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn publisher_receives_every_applied_record_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let svc = open(dir.path()).await;
        let mut rx = svc.attach_publisher(4).await;
        // Warming for 300 minutes, then cooling.
        let tenths = |i: usize| 50 + i.min(599 - i);
        let lines: Vec<String> = (0..600)
            .map(|i| {
                let t = tenths(i);
                format!(
                    "KNYC 08{:02}{:02}Z AUTO 27008KT 10SM CLR {:02}/M02 A3012 RMK AO2 T0{t:03}1017",
                    i / 60,
                    i % 60,
                    t / 10
                )
            })
            .collect();
        let poster = {
            let svc = Arc::clone(&svc);
            tokio::spawn(async move {
                let opts = IngestOptions { month: Some((2026, 3)), ..Default::default() };
                svc.ingest(Format::Metar, opts, lines.join("\n").into_bytes()).await.unwrap()
            })
        };
        let (mut times, mut highs) = (Vec::new(), Vec::new());
        while times.len() < 600 {
            let notice = rx.recv().await.unwrap();
            match &notice.applied {
                Applied::Observation { metar, after, .. } => {
                    times.push(metar.time);
                    highs.push(after.as_ref().unwrap()[0].as_ref().unwrap().high.unwrap().value_c);
                }
                other => panic!("unexpected {other:?}"),
            }
            if let Some(done) = notice.logged {
                done.send(()).unwrap();
            }
        }
        assert_eq!(poster.await.unwrap().accepted, 600);
        assert!(times.windows(2).all(|w| w[0] < w[1]), "in apply order");
        // Each notice carries the day's high as of its own report, not as of when the
        // publisher reads it: rising with the warming, then flat at the peak.
        assert!(highs[..300].windows(2).all(|w| w[0] <= w[1]) && highs[0] < highs[299], "{highs:?}");
        assert!(highs[299..].iter().all(|&h| h == highs[299]), "{highs:?}");
    }
}
