//! Runs the configured sources: each on its own interval, until shutdown, keeping per
//! source its counters, last outcome and next poll ([`SourceStatus`], for `feeds list`, the
//! status endpoint and `/metrics`), written to the state directory's status file after
//! each poll when one is attached ([`Feeds::with_status_file`]).
//!
//! One task per source, so a slow or failing source never delays another, and a source's
//! next poll starts only after its previous one ended (never two polls of a batch in
//! flight). Polls start on a fixed rhythm; one that overruns its interval is followed at
//! once by the next, without a burst of missed ones.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

use super::awc_cache::AwcCache;
use super::awc_metar::AwcMetar;
use super::config::{FeedsConfig, SOURCES};
use super::http::HttpClient;
use super::iem_asos::IemAsos;
use super::iem_onemin::IemOnemin;
use super::mos::Mos;
use super::nws_hourly::NwsHourly;
use super::nws_products::{NwsProducts, ProductKind};
use super::open_meteo::OpenMeteo;
use super::sink::FeedSink;
use super::source::{Archive, FeedError, PollReport, Source};
pub use super::status::{LastPoll, SourceStatus};
use super::status::{StatusFile, StatusSnapshot};
use crate::clock::{Clock, SystemClock};

/// A source named on the command line that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("[sources.{name}]: {reason}")]
    Source { name: String, reason: String },
    #[error(transparent)]
    Feed(#[from] FeedError),
}

/// The feeds of one process.
pub struct Feeds {
    sources: Vec<Arc<dyn Source>>,
    sink: Arc<dyn FeedSink>,
    status: Mutex<BTreeMap<String, SourceStatus>>,
    clock: Arc<dyn Clock>,
    /// Where each poll's statuses are written, and the writer's name (`serve`, `feeds run`).
    status_file: Option<(StatusFile, String)>,
}

impl std::fmt::Debug for Feeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.sources.iter().map(|s| s.name()).collect();
        f.debug_struct("Feeds").field("sources", &names).finish_non_exhaustive()
    }
}

/// Why a source without its `[sources.NAME]` table cannot be backfilled.
const NOT_CONFIGURED: &str = "not in the config file: add the table to backfill it";

impl Feeds {
    /// The enabled sources of `cfg`, sharing one HTTP client, feeding `sink`, on the
    /// system clock.
    pub fn from_config(cfg: &FeedsConfig, sink: Arc<dyn FeedSink>) -> Result<Self, FeedError> {
        Self::from_config_at(cfg, sink, Arc::new(SystemClock))
    }

    /// As [`Feeds::from_config`], every source's notion of now (due runs and cycles, IEM
    /// windows, busy hours) and the runner's taken from `clock`: a test or the demo moves
    /// one clock for the simulated sources and the feeds alike.
    pub fn from_config_at(
        cfg: &FeedsConfig,
        sink: Arc<dyn FeedSink>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, FeedError> {
        let client = Arc::new(HttpClient::new(cfg.client.clone())?);
        let now = || Arc::clone(&clock);
        let mut sources: Vec<Arc<dyn Source>> = Vec::new();
        if let Some(awc) = cfg.awc_metar.as_ref().filter(|a| a.enabled) {
            sources.push(Arc::new(AwcMetar::new(awc.clone(), Arc::clone(&client))?));
        }
        if let Some(c) = cfg.awc_cache.as_ref().filter(|c| c.enabled) {
            sources.push(Arc::new(AwcCache::new(c.clone(), Arc::clone(&client))?));
        }
        if let Some(c) = cfg.iem_asos.as_ref().filter(|c| c.enabled) {
            sources.push(Arc::new(IemAsos::with_clock(c.clone(), Arc::clone(&client), now())?));
        }
        if let Some(c) = cfg.iem_onemin.as_ref().filter(|c| c.enabled) {
            sources.push(Arc::new(IemOnemin::with_clock(c.clone(), Arc::clone(&client), now())?));
        }
        let state_dir = cfg.state_dir.as_deref();
        for (kind, products) in [(ProductKind::Cli, &cfg.nws_cli), (ProductKind::Dsm, &cfg.nws_dsm)] {
            if let Some(c) = products.as_ref().filter(|c| c.enabled) {
                sources.push(Arc::new(
                    NwsProducts::new(kind, c.clone(), Arc::clone(&client), state_dir)?.with_clock(now()),
                ));
            }
        }
        if let Some(c) = cfg.nws_hourly.as_ref().filter(|c| c.enabled) {
            sources.push(Arc::new(NwsHourly::new(c.clone(), Arc::clone(&client), state_dir)?));
        }
        if let Some(om) = cfg.open_meteo.as_ref().filter(|c| c.enabled) {
            sources.push(Arc::new(OpenMeteo::with_clock(om.clone(), Arc::clone(&client), now())?));
        }
        if let Some(mos) = cfg.mos.as_ref().filter(|c| c.enabled) {
            sources.push(Arc::new(Mos::with_clock(mos.clone(), Arc::clone(&client), now())?));
        }
        Ok(Feeds::new(sources, sink).with_clock(clock))
    }

    /// The archive of source `name` for `wxlake feeds backfill`, configured by `cfg` (the
    /// source's table must be present; `enabled = false` does not matter for a backfill).
    pub fn archive(cfg: &FeedsConfig, name: &str) -> Result<Arc<dyn Archive>, SelectError> {
        let missing = |reason: String| SelectError::Source { name: name.to_string(), reason };
        let client = || HttpClient::new(cfg.client.clone()).map(Arc::new).map_err(FeedError::from);
        match name {
            super::config::AWC_METAR => match cfg.awc_metar.as_ref() {
                Some(awc) => Ok(Arc::new(AwcMetar::new(awc.clone(), client()?)?)),
                None => Err(missing(NOT_CONFIGURED.to_string())),
            },
            super::config::IEM_ASOS => match cfg.iem_asos.as_ref() {
                Some(c) => Ok(Arc::new(IemAsos::new(c.clone(), client()?)?)),
                None => Err(missing(NOT_CONFIGURED.to_string())),
            },
            super::config::IEM_ONEMIN => match cfg.iem_onemin.as_ref() {
                Some(c) => Ok(Arc::new(IemOnemin::new(c.clone(), client()?)?)),
                None => Err(missing(NOT_CONFIGURED.to_string())),
            },
            super::config::OPEN_METEO => match cfg.open_meteo.as_ref() {
                Some(c) => Ok(Arc::new(OpenMeteo::new(c.clone(), client()?)?)),
                None => Err(missing(NOT_CONFIGURED.to_string())),
            },
            super::config::NWS_CLI | super::config::NWS_DSM => {
                let (kind, products) = if name == super::config::NWS_CLI {
                    (ProductKind::Cli, &cfg.nws_cli)
                } else {
                    (ProductKind::Dsm, &cfg.nws_dsm)
                };
                match products.as_ref() {
                    Some(c) => Ok(Arc::new(NwsProducts::new(kind, c.clone(), client()?, cfg.state_dir.as_deref())?)),
                    None => Err(missing(NOT_CONFIGURED.to_string())),
                }
            }
            other if SOURCES.contains(&other) => Err(missing("this source keeps no archive".to_string())),
            _ => Err(missing(format!("no such source; known: {}", SOURCES.join(", ")))),
        }
    }

    /// Feeds of the given sources.
    pub fn new(sources: Vec<Arc<dyn Source>>, sink: Arc<dyn FeedSink>) -> Self {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let since = clock.now();
        let status =
            sources.iter().map(|s| (s.name().to_string(), SourceStatus::new(s.name(), s.interval(), since))).collect();
        Feeds { sources, sink, status: Mutex::new(status), clock, status_file: None }
    }

    /// Times polls and the late rule with `clock` (tests move a `ManualClock`).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        let since = clock.now();
        for st in self.status.lock().values_mut() {
            st.since = since;
        }
        self.clock = clock;
        self
    }

    /// Writes every source's status to `file` after each poll, as `writer` (`serve`,
    /// `feeds run`), for `wxlake feeds list`.
    pub fn with_status_file(mut self, file: StatusFile, writer: &str) -> Self {
        self.status_file = Some((file, writer.to_string()));
        self.persist();
        self
    }

    /// The names of the sources, in configuration order.
    pub fn names(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.name().to_string()).collect()
    }

    /// Only the sources named in `names` (all when empty); an unknown or unconfigured name
    /// is an error naming the configured ones.
    pub fn select(mut self, names: &[String]) -> Result<Self, SelectError> {
        if names.is_empty() {
            return Ok(self);
        }
        if let Some(bad) = names.iter().find(|n| !self.sources.iter().any(|s| s.name() == n.as_str())) {
            return Err(SelectError::Source {
                name: bad.clone(),
                reason: format!("not an enabled source of the config file; enabled: {}", self.names().join(", ")),
            });
        }
        self.sources.retain(|s| names.iter().any(|n| n == s.name()));
        self.status.lock().retain(|k, _| names.contains(k));
        Ok(self)
    }

    /// True when no source is enabled.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The stations some source brings observations of (upper-case ICAO ids).
    pub fn observed_stations(&self) -> std::collections::BTreeSet<String> {
        self.sources.iter().flat_map(|s| s.observed_stations()).collect()
    }

    /// Every source's status, by name (`late` as of now).
    pub fn status(&self) -> Vec<SourceStatus> {
        let now = self.clock.now();
        self.status.lock().values().cloned().map(|s| s.at(now)).collect()
    }

    /// Writes the statuses to the status file, if one is attached. A failure is logged,
    /// never fatal: the feeds matter more than their report.
    fn persist(&self) {
        let Some((file, writer)) = &self.status_file else { return };
        if self.sources.is_empty() {
            // A `serve` without feeds leaves no status behind.
            return;
        }
        let snapshot = StatusSnapshot {
            writer: writer.clone(),
            pid: std::process::id(),
            written: self.clock.now(),
            sources: self.status(),
        };
        if let Err(e) = file.write(&snapshot) {
            tracing::warn!(error = %e, "cannot write the feeds status file");
        }
    }

    /// Polls every source once, together (`feeds run --once`).
    pub async fn poll_once(&self) -> Vec<(String, PollReport)> {
        let polls = self.sources.iter().map(|s| async move { (s.name().to_string(), self.poll(s.as_ref()).await) });
        let reports = futures::future::join_all(polls).await;
        self.persist();
        reports
    }

    /// Polls each source on its interval until `shutdown` resolves; a poll under way is
    /// abandoned then (the ingest path finishes what it has logged).
    pub async fn run(self: Arc<Self>, shutdown: impl Future<Output = ()> + Send) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        for source in self.sources.clone() {
            let me = Arc::clone(&self);
            let stop = stop_rx.clone();
            tasks.spawn(async move { me.run_source(source, stop).await });
        }
        tracing::info!(sources = self.sources.len(), "feeds started");
        shutdown.await;
        let _ = stop_tx.send(true);
        while tasks.join_next().await.is_some() {}
        for st in self.status.lock().values_mut() {
            st.next_poll = None;
        }
        self.persist();
        tracing::info!("feeds stopped");
    }

    async fn run_source(&self, source: Arc<dyn Source>, mut stop: watch::Receiver<bool>) {
        let interval = source.interval();
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            let started = Instant::now();
            tokio::select! {
                _ = self.poll(source.as_ref()) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            let wait = (started + interval).saturating_duration_since(Instant::now());
            if let Some(st) = self.status.lock().get_mut(source.name()) {
                st.next_poll = Some(self.clock.now() + chrono::Duration::from_std(wait).unwrap_or_default());
            }
            self.persist();
        }
    }

    /// One poll of `source`, logged and recorded in its status.
    async fn poll(&self, source: &dyn Source) -> PollReport {
        let started = Instant::now();
        let report = source.poll(self.sink.as_ref()).await;
        let took = started.elapsed();
        let now = self.clock.now();
        let name = source.name();
        if report.is_ok() {
            tracing::info!(
                source = name,
                accepted = report.accepted,
                duplicate = report.duplicate,
                rejected = report.rejected,
                not_modified = report.not_modified,
                bytes = report.bytes,
                ?took,
                "poll done"
            );
        } else {
            for e in &report.errors {
                tracing::warn!(source = name, kind = e.kind(), error = %e, "poll request failed");
            }
            tracing::warn!(source = name, summary = %report.summary(), ?took, "poll done with failures");
        }
        if let Some(st) = self.status.lock().get_mut(name) {
            st.record(&report, now, took);
        }
        report
    }
}
