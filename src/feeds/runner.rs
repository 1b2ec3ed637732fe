//! Runs the configured sources: each on its own interval, until shutdown, keeping per
//! source its last outcome and next poll (for `feeds list` and the status endpoint).
//!
//! One task per source, so a slow or failing source never delays another, and a source's
//! next poll starts only after its previous one ended (never two polls of a batch in
//! flight). Polls start on a fixed rhythm; one that overruns its interval is followed at
//! once by the next, without a burst of missed ones.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

use super::awc_metar::AwcMetar;
use super::config::FeedsConfig;
use super::http::HttpClient;
use super::sink::FeedSink;
use super::source::{FeedError, PollReport, Source};

/// One source as `feeds list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SourceStatus {
    pub name: String,
    pub interval_secs: f64,
    /// Polls finished, and those with at least one failed request.
    pub polls: u64,
    pub failed_polls: u64,
    /// When the next poll starts (None once stopped).
    pub next_poll: Option<DateTime<Utc>>,
    /// The end of the last poll in which every request succeeded.
    pub last_success: Option<DateTime<Utc>>,
    pub last: Option<LastPoll>,
}

/// The outcome of a source's latest poll.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LastPoll {
    pub finished: DateTime<Utc>,
    pub duration_ms: u64,
    pub ok: bool,
    pub requests: usize,
    pub accepted: usize,
    pub rejected: usize,
    pub not_modified: usize,
    /// `kind: message` of each failed request.
    pub errors: Vec<String>,
}

impl LastPoll {
    fn of(report: &PollReport, finished: DateTime<Utc>, took: Duration) -> Self {
        LastPoll {
            finished,
            duration_ms: took.as_millis().try_into().unwrap_or(u64::MAX),
            ok: report.is_ok(),
            requests: report.requests,
            accepted: report.accepted,
            rejected: report.rejected,
            not_modified: report.not_modified,
            errors: report.errors.iter().map(|e| format!("{}: {e}", e.kind())).collect(),
        }
    }
}

/// The feeds of one process.
pub struct Feeds {
    sources: Vec<Arc<dyn Source>>,
    sink: Arc<dyn FeedSink>,
    status: Mutex<BTreeMap<String, SourceStatus>>,
}

impl std::fmt::Debug for Feeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.sources.iter().map(|s| s.name()).collect();
        f.debug_struct("Feeds").field("sources", &names).finish_non_exhaustive()
    }
}

impl Feeds {
    /// The enabled sources of `cfg`, sharing one HTTP client, feeding `sink`.
    pub fn from_config(cfg: &FeedsConfig, sink: Arc<dyn FeedSink>) -> Result<Self, FeedError> {
        let client = Arc::new(HttpClient::new(cfg.client.clone())?);
        let mut sources: Vec<Arc<dyn Source>> = Vec::new();
        if let Some(awc) = cfg.awc_metar.as_ref().filter(|a| a.enabled) {
            sources.push(Arc::new(AwcMetar::new(awc.clone(), Arc::clone(&client))?));
        }
        if let Some(om) = cfg.open_meteo.as_ref().filter(|c| c.enabled) {
            sources.push(Arc::new(super::open_meteo::OpenMeteo::new(om.clone(), Arc::clone(&client))?));
        }
        if let Some(mos) = cfg.mos.as_ref().filter(|c| c.enabled) {
            sources.push(Arc::new(super::mos::Mos::new(mos.clone(), Arc::clone(&client))?));
        }
        Ok(Feeds::new(sources, sink))
    }

    /// Feeds of the given sources.
    pub fn new(sources: Vec<Arc<dyn Source>>, sink: Arc<dyn FeedSink>) -> Self {
        let status = sources
            .iter()
            .map(|s| {
                let st = SourceStatus {
                    name: s.name().to_string(),
                    interval_secs: s.interval().as_secs_f64(),
                    polls: 0,
                    failed_polls: 0,
                    next_poll: None,
                    last_success: None,
                    last: None,
                };
                (st.name.clone(), st)
            })
            .collect();
        Feeds { sources, sink, status: Mutex::new(status) }
    }

    /// True when no source is enabled.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Every source's status, by name.
    pub fn status(&self) -> Vec<SourceStatus> {
        self.status_lock().values().cloned().collect()
    }

    fn status_lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, SourceStatus>> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Polls every source once, together (`feeds run --once`).
    pub async fn poll_once(&self) -> Vec<(String, PollReport)> {
        let polls = self.sources.iter().map(|s| async move { (s.name().to_string(), self.poll(s.as_ref()).await) });
        futures::future::join_all(polls).await
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
        for st in self.status_lock().values_mut() {
            st.next_poll = None;
        }
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
            if let Some(st) = self.status_lock().get_mut(source.name()) {
                st.next_poll = Some(Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default());
            }
        }
    }

    /// One poll of `source`, logged and recorded in its status.
    async fn poll(&self, source: &dyn Source) -> PollReport {
        let started = Instant::now();
        let report = source.poll(self.sink.as_ref()).await;
        let took = started.elapsed();
        let now = Utc::now();
        let name = source.name();
        if report.is_ok() {
            tracing::info!(
                source = name,
                accepted = report.accepted,
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
        if let Some(st) = self.status_lock().get_mut(name) {
            st.polls += 1;
            if report.is_ok() {
                st.last_success = Some(now);
            } else {
                st.failed_polls += 1;
            }
            st.last = Some(LastPoll::of(&report, now, took));
        }
        report
    }
}
