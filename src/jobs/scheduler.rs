//! The scheduler: runs jobs when their cron schedule is due, when a table they watch gets
//! new data (debounced: a burst of ingests gives one run), and after a job they depend
//! on succeeded. A job never runs twice at once: a trigger arriving while it runs is kept
//! and served (once) when the run ends.
//!
//! Scheduled runs of an incremental job with `lookback_days = n` recompute key values
//! `[today - n, today]` (UTC); others run in full.
//!
//! The decisions live in [`Machine`], a plain state machine over wall-clock times (tested
//! without sleeping); [`spawn_scheduler`] drives it with tokio.

use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use futures::future::BoxFuture;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

use super::runner::{no_progress, run_job_as};
use super::spec::JobSpec;
use crate::lake::Lake;

/// New-data triggers wait at most this many debounce periods after the first one.
const MAX_WAIT_DEBOUNCES: i32 = 10;

/// Starts a job run and resolves to whether it succeeded.
pub type RunFn =
    Arc<dyn Fn(JobSpec, Option<(NaiveDate, NaiveDate)>, &'static str) -> BoxFuture<'static, bool> + Send + Sync>;

/// Spawns the scheduler for `specs` on the current tokio runtime. `notify` carries the
/// names of tables that received new data (ingest sends e.g. `"forecasts"`). `published`
/// is called after each run that succeeded, so the server's caches of job tables reload
/// at once (`WriteService::derived_published`).
pub fn spawn_scheduler(
    lake: Lake,
    specs: Vec<JobSpec>,
    notify: broadcast::Receiver<String>,
    published: impl Fn() + Send + Sync + 'static,
) -> JoinHandle<()> {
    let published = Arc::new(published);
    let run: RunFn = Arc::new(move |spec, range, trigger| {
        let (lake, published) = (lake.clone(), Arc::clone(&published));
        Box::pin(async move {
            let ok = run_job_as(&lake, &spec, range, trigger, &no_progress).await.is_ok();
            if ok {
                published();
            }
            ok
        })
    });
    tokio::spawn(drive(specs, notify, run, Arc::new(Utc::now)))
}

/// The scheduler loop with an injectable runner and clock (tests).
pub async fn drive(
    specs: Vec<JobSpec>,
    mut notify: broadcast::Receiver<String>,
    run: RunFn,
    now: Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>,
) {
    let mut m = Machine::new(specs.clone(), now());
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(usize, bool)>();
    let mut listening = true;
    loop {
        let t = now();
        for (i, trigger) in m.take_due(t) {
            let spec = specs[i].clone();
            let range = scheduled_range(&spec, t.date_naive());
            tracing::info!(job = %spec.name, trigger, ?range, "scheduler starts a run");
            let fut = run(spec, range, trigger);
            let tx = done_tx.clone();
            tokio::spawn(async move {
                let ok = fut.await;
                let _ = tx.send((i, ok));
            });
        }
        let sleep = match m.next_wake() {
            Some(w) => (w - now()).to_std().unwrap_or_default(),
            None => std::time::Duration::from_secs(3600),
        };
        tokio::select! {
            r = notify.recv(), if listening => match r {
                Ok(table) => m.notify(&table, now()),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "scheduler missed new-data notices; treating every table as new");
                    m.notify_all(now());
                }
                Err(broadcast::error::RecvError::Closed) => listening = false,
            },
            Some((i, ok)) = done_rx.recv() => m.finished(i, ok, now()),
            _ = tokio::time::sleep(sleep) => {}
        }
    }
}

/// The key range a triggered run recomputes: the last `lookback_days` days, or all.
pub fn scheduled_range(spec: &JobSpec, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    match (&spec.incremental, spec.schedule.lookback_days) {
        (Some(_), Some(n)) => Some((today - Duration::days(i64::from(n)), today)),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pending {
    trigger: &'static str,
    due: DateTime<Utc>,
    first: DateTime<Utc>,
}

#[derive(Debug, Clone, Default)]
struct JobState {
    next_cron: Option<DateTime<Utc>>,
    pending: Option<Pending>,
    running: bool,
}

/// What the scheduler knows: per job, its next cron time, a pending trigger and whether
/// it runs.
#[derive(Debug)]
pub struct Machine {
    specs: Vec<JobSpec>,
    state: Vec<JobState>,
}

fn debounce(spec: &JobSpec) -> Duration {
    Duration::from_std(spec.schedule.debounce).unwrap_or_else(|_| Duration::seconds(60))
}

impl Machine {
    pub fn new(specs: Vec<JobSpec>, now: DateTime<Utc>) -> Self {
        let state = specs
            .iter()
            .map(|s| JobState {
                next_cron: s.schedule.cron.as_ref().and_then(|c| c.next_after(now)),
                ..Default::default()
            })
            .collect();
        Machine { specs, state }
    }

    fn trigger(&mut self, i: usize, trigger: &'static str, due: DateTime<Utc>, now: DateTime<Utc>) {
        let st = &mut self.state[i];
        st.pending = Some(match st.pending {
            None => Pending { trigger, due, first: now },
            Some(p) => {
                // An earlier due time wins (a schedule firing during a debounce); a later
                // one (another new-data notice) pushes the run back, up to a maximum wait.
                let cap = p.first + debounce(&self.specs[i]) * MAX_WAIT_DEBOUNCES;
                let due = if due <= p.due { due } else { due.min(cap).max(p.due) };
                Pending { trigger: p.trigger, due, first: p.first }
            }
        });
    }

    /// `table` received new data.
    pub fn notify(&mut self, table: &str, now: DateTime<Utc>) {
        for i in 0..self.specs.len() {
            if self.specs[i].schedule.on_new_data.iter().any(|t| t == table) {
                let due = now + debounce(&self.specs[i]);
                self.trigger(i, "new_data", due, now);
            }
        }
    }

    /// Notices were lost: every watched table may have new data.
    pub fn notify_all(&mut self, now: DateTime<Utc>) {
        let tables: Vec<String> = self.specs.iter().flat_map(|s| s.schedule.on_new_data.clone()).collect();
        for t in tables {
            self.notify(&t, now);
        }
    }

    /// Job `i` finished; its dependents run next if it succeeded.
    pub fn finished(&mut self, i: usize, ok: bool, now: DateTime<Utc>) {
        self.state[i].running = false;
        if ok {
            let name = self.specs[i].name.clone();
            for k in 0..self.specs.len() {
                if self.specs[k].depends_on.contains(&name) {
                    self.trigger(k, "dependency", now, now);
                }
            }
        }
    }

    /// Fires due cron schedules and returns the jobs to start now (marked running).
    pub fn take_due(&mut self, now: DateTime<Utc>) -> Vec<(usize, &'static str)> {
        for i in 0..self.specs.len() {
            if self.state[i].next_cron.is_some_and(|c| c <= now) {
                self.state[i].next_cron = self.specs[i].schedule.cron.as_ref().and_then(|c| c.next_after(now));
                self.trigger(i, "schedule", now, now);
            }
        }
        let mut start = Vec::new();
        for (i, st) in self.state.iter_mut().enumerate() {
            if st.running {
                continue;
            }
            if let Some(p) = st.pending.filter(|p| p.due <= now) {
                st.pending = None;
                st.running = true;
                start.push((i, p.trigger));
            }
        }
        start
    }

    /// The next time something may become due.
    pub fn next_wake(&self) -> Option<DateTime<Utc>> {
        self.state
            .iter()
            .flat_map(|st| {
                let pending = if st.running { None } else { st.pending.map(|p| p.due) };
                [st.next_cron, pending]
            })
            .flatten()
            .min()
    }

    /// Whether job `i` is running.
    pub fn is_running(&self, i: usize) -> bool {
        self.state[i].running
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::jobs::schedule::Cron;
    use crate::jobs::spec::parse_spec;

    fn spec(name: &str, cron: Option<&str>, on_new_data: &[&str], deps: &[&str], debounce_s: u64) -> JobSpec {
        let text = format!(
            "name = \"{name}\"\nsql = \"q.sql\"\ndepends_on = {deps:?}\n[output]\ntable = \"{name}_out\"\n\
             columns = [{{ name = \"n\", type = \"bigint\" }}]\n"
        );
        let mut s = parse_spec(name, &text, &|_| Ok("SELECT 1 AS n".into())).unwrap();
        s.schedule.cron = cron.map(|c| Cron::parse(c).unwrap());
        s.schedule.on_new_data = on_new_data.iter().map(|t| t.to_string()).collect();
        s.schedule.debounce = std::time::Duration::from_secs(debounce_s);
        s
    }

    fn t(s: &str) -> DateTime<Utc> {
        crate::time::parse_utc(s).unwrap()
    }

    #[test]
    fn new_data_is_debounced_with_a_maximum_wait() {
        let mut m = Machine::new(vec![spec("a", None, &["forecasts"], &[], 30)], t("2026-03-08T10:00:00Z"));
        m.notify("observations", t("2026-03-08T10:00:00Z"));
        assert_eq!(m.next_wake(), None, "unwatched table");
        m.notify("forecasts", t("2026-03-08T10:00:00Z"));
        m.notify("forecasts", t("2026-03-08T10:00:20Z"));
        assert!(m.take_due(t("2026-03-08T10:00:40Z")).is_empty(), "pushed back by the second notice");
        assert_eq!(m.next_wake(), Some(t("2026-03-08T10:00:50Z")));
        assert_eq!(m.take_due(t("2026-03-08T10:00:50Z")), [(0, "new_data")]);
        m.finished(0, true, t("2026-03-08T10:01:00Z"));
        // A steady stream of notices still runs within 10 debounces of the first.
        let mut now = t("2026-03-08T11:00:00Z");
        let mut started = None;
        for _ in 0..40 {
            m.notify("forecasts", now);
            if !m.take_due(now).is_empty() {
                started = Some(now);
                break;
            }
            now += Duration::seconds(20);
        }
        assert_eq!(started, Some(t("2026-03-08T11:05:00Z")));
    }

    #[test]
    fn a_running_job_is_not_started_again_and_a_trigger_is_kept() {
        let mut m = Machine::new(vec![spec("a", Some("* * * * *"), &[], &[], 30)], t("2026-03-08T10:00:30Z"));
        assert_eq!(m.next_wake(), Some(t("2026-03-08T10:01:00Z")));
        assert_eq!(m.take_due(t("2026-03-08T10:01:00Z")), [(0, "schedule")]);
        assert!(m.is_running(0));
        // Two more firings during the run: one pending run, not two, and not now.
        assert!(m.take_due(t("2026-03-08T10:02:00Z")).is_empty());
        assert!(m.take_due(t("2026-03-08T10:03:00Z")).is_empty());
        m.finished(0, false, t("2026-03-08T10:03:30Z"));
        assert_eq!(m.take_due(t("2026-03-08T10:03:30Z")), [(0, "schedule")]);
        m.finished(0, true, t("2026-03-08T10:03:40Z"));
        assert!(m.take_due(t("2026-03-08T10:03:50Z")).is_empty());
        assert_eq!(m.next_wake(), Some(t("2026-03-08T10:04:00Z")));
    }

    #[test]
    fn dependents_follow_a_successful_run_only() {
        let specs = vec![spec("a", None, &["forecasts"], &[], 0), spec("b", None, &[], &["a"], 0)];
        let mut m = Machine::new(specs, t("2026-03-08T10:00:00Z"));
        m.notify("forecasts", t("2026-03-08T10:00:00Z"));
        assert_eq!(m.take_due(t("2026-03-08T10:00:00Z")), [(0, "new_data")]);
        m.finished(0, false, t("2026-03-08T10:00:10Z"));
        assert!(m.take_due(t("2026-03-08T10:00:10Z")).is_empty());
        m.notify("forecasts", t("2026-03-08T10:01:00Z"));
        assert_eq!(m.take_due(t("2026-03-08T10:01:00Z")), [(0, "new_data")]);
        m.finished(0, true, t("2026-03-08T10:01:10Z"));
        assert_eq!(m.take_due(t("2026-03-08T10:01:10Z")), [(1, "dependency")]);
    }

    #[tokio::test]
    async fn the_loop_runs_debounced_jobs_one_at_a_time() {
        let mut a = spec("a", None, &["forecasts"], &[], 0);
        a.schedule.debounce = std::time::Duration::from_millis(40);
        let (tx, rx) = broadcast::channel(16);
        let started = Arc::new(AtomicUsize::new(0));
        let active = Arc::new(AtomicUsize::new(0));
        let overlap = Arc::new(AtomicUsize::new(0));
        let (s2, a2, o2) = (Arc::clone(&started), Arc::clone(&active), Arc::clone(&overlap));
        let run: RunFn = Arc::new(move |_spec, _range, _trigger| {
            let (s, a, o) = (Arc::clone(&s2), Arc::clone(&a2), Arc::clone(&o2));
            Box::pin(async move {
                s.fetch_add(1, Ordering::SeqCst);
                if a.fetch_add(1, Ordering::SeqCst) > 0 {
                    o.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(std::time::Duration::from_millis(150)).await;
                a.fetch_sub(1, Ordering::SeqCst);
                true
            })
        });
        let handle = tokio::spawn(drive(vec![a], rx, run, Arc::new(Utc::now)));
        for _ in 0..3 {
            tx.send("forecasts".to_string()).unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(120)).await;
        assert_eq!(started.load(Ordering::SeqCst), 1, "three notices in a burst: one run");
        // Notices during the run: one more run after it, never two at once.
        tx.send("forecasts".to_string()).unwrap();
        tx.send("forecasts".to_string()).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        assert_eq!(started.load(Ordering::SeqCst), 2);
        assert_eq!(overlap.load(Ordering::SeqCst), 0);
        handle.abort();
    }
}
