//! The live ingest path: decode → write-ahead log (durable: only then is a request
//! acknowledged) → hot state → background flush to the lake → WAL trim.
//!
//! The flush follows "persist, then clear": the lake files are written first and the WAL
//! is trimmed after, so a record is always in at least one of them; a crash between the
//! two replays records the lake already has, which idempotent ingest turns into
//! duplicates counted, not rows added. On start the hot state is rebuilt from the lake's
//! recent days and then the WAL.

use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Date32Type, Float64Type, Int32Type, TimestampMicrosecondType};
use thiserror::Error;
use tokio::sync::broadcast;

use super::hot::{Applied, HotState};
use super::wal::{Wal, WalEntry, WalError};
use super::{store, Format, IngestOptions, Records};
use crate::clock::Clock;
use crate::decode::metar::parse_metar;
use crate::decode::types::{DailyKind, DailyReport, LineError, OneMinute, ReportKind};
use crate::lake::writer::WriteStats;
use crate::lake::{query, Lake, LakeError};

/// Live-ingest failures.
#[derive(Debug, Error)]
pub enum LiveError {
    #[error("{0}")]
    Wal(#[from] WalError),
    #[error("{0}")]
    Lake(#[from] LakeError),
    /// The input decoded to nothing: not acknowledged, not logged.
    #[error("no usable records")]
    Unusable(Vec<LineError>),
}

/// What an acknowledged live ingest did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LiveOutcome {
    /// WAL sequence number: the input is durable.
    pub seq: u64,
    pub read: usize,
    pub accepted: usize,
    pub rejected: usize,
    /// The first rejected lines with reasons.
    pub errors: Vec<LineError>,
    /// New-high / new-low events the input caused.
    pub events: usize,
}

/// The live service shared by the API handlers and the background tasks.
pub struct LiveService {
    pub lake: Lake,
    /// One DataFusion session for every read (listing tables re-list files per scan, so
    /// new lake files are visible without re-registering).
    pub ctx: datafusion::prelude::SessionContext,
    pub hot: HotState,
    pub clock: Arc<dyn Clock>,
    wal: Arc<Wal>,
    /// Logged but not yet in the lake, in append order.
    pending: Mutex<Vec<WalEntry>>,
    flush_lock: tokio::sync::Mutex<()>,
    notices: broadcast::Sender<Arc<Applied>>,
    /// Names of lake tables that just received rows (the job scheduler's new-data trigger).
    new_data: broadcast::Sender<String>,
    /// Per table, how many flushes added rows to it (caches of lake rows compare it).
    versions: Mutex<std::collections::HashMap<&'static str, u64>>,
}

impl std::fmt::Debug for LiveService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveService").field("lake", &self.lake.location.base_url).finish_non_exhaustive()
    }
}

impl LiveService {
    /// Opens the WAL under `state_dir`, rebuilds the hot state from the lake's recent days,
    /// then replays the WAL on top (those entries stay pending until flushed).
    pub async fn open(lake: Lake, state_dir: &std::path::Path, clock: Arc<dyn Clock>) -> Result<Self, LiveError> {
        let wal_dir = state_dir.join("wal");
        let (wal, entries) = tokio::task::spawn_blocking(move || Wal::open(&wal_dir))
            .await
            .map_err(|e| LiveError::Wal(WalError::Task(e.to_string())))??;
        for issue in wal.replay_issues() {
            tracing::warn!(segment = %issue.segment.display(), offset = issue.offset, reason = %issue.reason, "WAL damage skipped");
        }
        let (notices, _) = broadcast::channel(4096);
        let (new_data, _) = broadcast::channel(64);
        let ctx = query::session(&lake).await?;
        // Derived tables of the jobs (forecast_daily ...) are served from the same session.
        crate::jobs::register_derived(&ctx, &lake)
            .await
            .map_err(|e| LiveError::Lake(LakeError::Config(e.to_string())))?;
        let svc = LiveService {
            lake,
            ctx,
            hot: HotState::new(),
            clock,
            wal: Arc::new(wal),
            pending: Mutex::new(Vec::new()),
            flush_lock: tokio::sync::Mutex::new(()),
            notices,
            new_data,
            versions: Mutex::new(std::collections::HashMap::new()),
        };
        let now = svc.clock.now();
        let loaded = svc.rebuild_from_lake(now).await?;
        let replayed = entries.len();
        for e in entries {
            let decoded = decode_entry(&e);
            svc.apply(decoded.records);
            svc.pending_lock().push(e);
        }
        tracing::info!(loaded, replayed, "hot state rebuilt");
        Ok(svc)
    }

    fn pending_lock(&self) -> std::sync::MutexGuard<'_, Vec<WalEntry>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes whenever this service stores rows into `table` (a cache of its rows built at
    /// version v is current while the version is still v, for rows arriving through it).
    pub fn table_version(&self, table: &str) -> u64 {
        self.versions.lock().unwrap_or_else(|p| p.into_inner()).get(table).copied().unwrap_or(0)
    }

    /// Subscribes to the names of tables a flush added rows to.
    pub fn subscribe_new_data(&self) -> broadcast::Receiver<String> {
        self.new_data.subscribe()
    }

    /// Subscribes to everything the hot state applies (the push stream's source).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Applied>> {
        self.notices.subscribe()
    }

    /// Decodes, logs durably, applies. Returns only after the WAL fsync.
    pub async fn ingest(&self, format: Format, opts: IngestOptions, bytes: Vec<u8>) -> Result<LiveOutcome, LiveError> {
        let opts_json = serde_json::to_string(&opts).unwrap_or_default();
        let (decoded, bytes) = tokio::task::spawn_blocking(move || (format.decode(&bytes, &opts), bytes))
            .await
            .map_err(|e| LiveError::Wal(WalError::Task(e.to_string())))?;
        if decoded.records.is_empty() {
            return Err(LiveError::Unusable(decoded.errors));
        }
        let payload = bytes.clone();
        let seq = self.wal.append_async(format.as_str().to_string(), opts_json.clone(), payload).await?;
        let accepted = decoded.records.len();
        let events = self.apply(decoded.records);
        self.pending_lock().push(WalEntry {
            seq,
            timestamp: self.clock.now(),
            format: format.as_str().to_string(),
            options_json: opts_json,
            payload: bytes,
        });
        Ok(LiveOutcome {
            seq,
            read: decoded.read,
            accepted,
            rejected: decoded.errors.len(),
            errors: decoded.errors.into_iter().take(20).collect(),
            events,
        })
    }

    /// Applies records to the hot state and announces them; returns the number of
    /// new-high/new-low events.
    fn apply(&self, records: Records) -> usize {
        let mut applied = Vec::new();
        match &records {
            Records::Observations(v) => applied.extend(v.iter().filter_map(|m| self.hot.apply_metar(m))),
            Records::OneMinute(v) => applied.extend(v.iter().filter_map(|o| self.hot.apply_onemin(o))),
            Records::Reports(v) => applied.extend(v.iter().filter_map(|r| self.hot.apply_report(r))),
            Records::Forecasts(_) | Records::NwsHourly(_) => {}
        }
        let mut events = 0;
        for a in applied {
            events += match &a {
                Applied::Observation { events, .. }
                | Applied::OneMinute { events, .. }
                | Applied::Report { events, .. } => events.len(),
            };
            // No subscriber is fine: the stream may not be running.
            let _ = self.notices.send(Arc::new(a));
        }
        events
    }

    /// Writes everything pending to the lake (one write per table, so a flush adds at most
    /// one file per touched partition), then trims the WAL through it.
    pub async fn flush(&self) -> Result<WriteStats, LiveError> {
        let _guard = self.flush_lock.lock().await;
        let batch: Vec<WalEntry> = self.pending_lock().clone();
        let Some(last) = batch.last().map(|e| e.seq) else { return Ok(WriteStats::default()) };
        let (mut obs, mut onemin, mut reports, mut forecasts, mut nws) = (vec![], vec![], vec![], vec![], vec![]);
        for e in &batch {
            match decode_entry(e).records {
                Records::Observations(v) => obs.extend(v),
                Records::OneMinute(v) => onemin.extend(v),
                Records::Reports(v) => reports.extend(v),
                Records::Forecasts(v) => forecasts.extend(v),
                Records::NwsHourly(v) => nws.extend(v),
            }
        }
        let mut stats = WriteStats::default();
        for records in [
            Records::Observations(obs),
            Records::OneMinute(onemin),
            Records::Reports(reports),
            Records::Forecasts(forecasts),
            Records::NwsHourly(nws),
        ] {
            let table = records.table_name();
            let s = store(&self.lake, records).await?;
            if s.stored > 0 {
                *self.versions.lock().unwrap_or_else(|p| p.into_inner()).entry(table).or_default() += 1;
                // No scheduler listening is fine.
                let _ = self.new_data.send(table.to_string());
            }
            stats += s;
        }
        let wal = Arc::clone(&self.wal);
        tokio::task::spawn_blocking(move || wal.trim_through(last))
            .await
            .map_err(|e| LiveError::Wal(WalError::Task(e.to_string())))??;
        self.pending_lock().retain(|e| e.seq > last);
        Ok(stats)
    }

    /// Number of acknowledged inputs not yet in the lake.
    pub fn pending(&self) -> usize {
        self.pending_lock().len()
    }

    /// Flushes every `every`, prunes the hot state, and compacts the lake hourly (each
    /// flush adds small files), until the process ends.
    pub fn spawn_background(self: &Arc<Self>, every: StdDuration) -> tokio::task::JoinHandle<()> {
        let svc = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let compact_every = (3600 / every.as_secs().max(1)).max(1);
            let mut n: u64 = 0;
            loop {
                tick.tick().await;
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

    /// Loads the lake's observations, one-minute data and reports of the last days.
    async fn rebuild_from_lake(&self, now: DateTime<Utc>) -> Result<usize, LiveError> {
        let from = now - Duration::days(2);
        let (obs, onemin, reports) = load_window(&self.ctx, None, from, now + Duration::hours(1)).await?;
        let n = obs.len() + onemin.len() + reports.len();
        obs.iter().for_each(|m| drop(self.hot.apply_metar(m)));
        onemin.iter().for_each(|o| drop(self.hot.apply_onemin(o)));
        reports.iter().for_each(|r| drop(self.hot.apply_report(r)));
        Ok(n)
    }
}

fn decode_entry(e: &WalEntry) -> super::DecodedInput {
    let opts: IngestOptions = serde_json::from_str(&e.options_json).unwrap_or_default();
    match e.format.parse::<Format>() {
        Ok(f) => f.decode(&e.payload, &opts),
        Err(reason) => super::DecodedInput {
            records: Records::Observations(Vec::new()),
            errors: vec![LineError { line: 0, reason }],
            read: 0,
        },
    }
}

/// Observations, one-minute readings and daily reports of the lake in `[from, to)`,
/// optionally for one station, as the decoders' record types (observations re-parsed from
/// their stored raw text, so the live engine sees exactly what ingest saw).
pub async fn load_window(
    ctx: &datafusion::prelude::SessionContext,
    station: Option<&str>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<(Vec<crate::decode::types::Metar>, Vec<OneMinute>, Vec<DailyReport>), LakeError> {
    let dates = date_list(from.date_naive(), to.date_naive());
    let st = station.map(|s| format!(" AND station_code = '{}'", s.replace('\'', "''"))).unwrap_or_default();
    let range = format!(
        "observation_time >= TIMESTAMP '{}' AND observation_time < TIMESTAMP '{}'",
        from.to_rfc3339(),
        to.to_rfc3339()
    );
    let obs_sql = format!(
        "SELECT station_code, observation_time, report_type, raw FROM observations WHERE date IN ({dates}) AND {range}{st} ORDER BY observation_time"
    );
    let mut obs = Vec::new();
    for b in ctx.sql(&obs_sql).await?.collect().await? {
        obs.extend(metars_of(&b));
    }
    let om_sql = format!(
        "SELECT station_code, observation_time, temperature_f FROM onemin WHERE date IN ({dates}) AND {range}{st} ORDER BY observation_time"
    );
    let mut onemin = Vec::new();
    for b in ctx.sql(&om_sql).await?.collect().await? {
        let (s, t, f) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_primitive::<TimestampMicrosecondType>(),
            b.column(2).as_primitive::<Float64Type>(),
        );
        for i in 0..b.num_rows() {
            if let Some(time) = DateTime::from_timestamp_micros(t.value(i)) {
                onemin.push(OneMinute {
                    station: s.value(i).to_string(),
                    time,
                    temp_f: f.is_valid(i).then(|| f.value(i)),
                });
            }
        }
    }
    let rep_sql = format!(
        "SELECT kind, station_code, report_date, issued_at, high_f, high_time_lst, low_f, low_time_lst, precip_in, precip_trace, \
         precip_mtd_in, precip_mtd_trace, is_final, valid_as_of_lst, correction, raw FROM reports \
         WHERE report_date >= DATE '{}' AND report_date <= DATE '{}'{st} ORDER BY report_date, issued_at",
        (from - Duration::days(1)).date_naive(),
        to.date_naive()
    );
    let mut reports = Vec::new();
    for b in ctx.sql(&rep_sql).await?.collect().await? {
        reports.extend(reports_of(&b));
    }
    Ok((obs, onemin, reports))
}

fn date_list(from: NaiveDate, to: NaiveDate) -> String {
    let mut d = from;
    let mut out = Vec::new();
    while d <= to {
        out.push(format!("'{d}'"));
        d = d.succ_opt().unwrap_or(to + Duration::days(1));
    }
    out.join(",")
}

fn metars_of(b: &RecordBatch) -> Vec<crate::decode::types::Metar> {
    let (_s, t, k, raw) = (
        b.column(0).as_string::<i32>(),
        b.column(1).as_primitive::<TimestampMicrosecondType>(),
        b.column(2).as_string::<i32>(),
        b.column(3).as_string::<i32>(),
    );
    (0..b.num_rows())
        .filter_map(|i| {
            let time = DateTime::from_timestamp_micros(t.value(i))?;
            let mut m = parse_metar(raw.value(i), time).ok()?;
            m.time = time;
            m.kind = ReportKind::parse(k.value(i));
            Some(m)
        })
        .collect()
}

fn reports_of(b: &RecordBatch) -> Vec<DailyReport> {
    let s = |c: usize| b.column(c).as_string::<i32>();
    let ts = |c: usize| b.column(c).as_primitive::<TimestampMicrosecondType>();
    let i32c = |c: usize| b.column(c).as_primitive::<Int32Type>();
    let f64c = |c: usize| b.column(c).as_primitive::<Float64Type>();
    let boolc = |c: usize| b.column(c).as_boolean();
    let opt_ts = |c: usize, i: usize| ts(c).is_valid(i).then(|| ts(c).value(i));
    let naive = |v: Option<i64>| v.and_then(DateTime::from_timestamp_micros).map(|d| d.naive_utc());
    let date = b.column(2).as_primitive::<Date32Type>();
    (0..b.num_rows())
        .filter_map(|i| {
            let kind = match s(0).value(i) {
                "cli" => DailyKind::Cli,
                "dsm" => DailyKind::Dsm,
                _ => return None,
            };
            Some(DailyReport {
                kind,
                station: s(1).value(i).to_string(),
                date: Date32Type::to_naive_date_opt(date.value(i))?,
                issued_at: opt_ts(3, i).and_then(DateTime::from_timestamp_micros),
                max_f: i32c(4).is_valid(i).then(|| i32c(4).value(i)),
                max_time_lst: naive(opt_ts(5, i)),
                min_f: i32c(6).is_valid(i).then(|| i32c(6).value(i)),
                min_time_lst: naive(opt_ts(7, i)),
                precip_in: f64c(8).is_valid(i).then(|| f64c(8).value(i)),
                precip_trace: boolc(9).value(i),
                precip_mtd_in: f64c(10).is_valid(i).then(|| f64c(10).value(i)),
                precip_mtd_trace: boolc(11).value(i),
                is_final: boolc(12).value(i),
                valid_as_of_lst: naive(opt_ts(13, i)),
                correction: boolc(14).value(i),
                raw: s(15).value(i).to_string(),
            })
        })
        .collect()
}
