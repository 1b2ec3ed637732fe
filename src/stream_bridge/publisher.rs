//! From the live path to the stream: the events each applied record produces, and the one
//! task that appends them to the event log and publishes them.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use serde_json::Value;

use tokio::sync::mpsc;

use super::brackets::{spawn_watch, Computed};
use super::payloads::{change_payload, observation_payload, report_payload};
use crate::bracket_odds::HeldRows;
use crate::catalog::Catalog;
use crate::decode::types::DailyKind;
use crate::extremes::Logic;
use crate::stream::{EventLog, Hub};
use crate::write::hot::Applied;
use crate::write::WriteService;

/// True when `day` is the trading day in progress (`today`) or the one before it (or
/// later, for a clock running behind the source): the days whose data is live news.
fn is_live_day(day: chrono::NaiveDate, today: chrono::NaiveDate) -> bool {
    today.pred_opt().is_none_or(|previous| day >= previous)
}

/// The events one applied record produces, in order: (station, name, payload).
///
/// Only data about the station's current or previous trading day (under either logic) is
/// live news: a backfilled observation or daily report updates the lake and the past days'
/// extremes, and is not streamed (a month of backfill would otherwise flood every client and
/// the event log).
pub fn events_for(live: &WriteService, applied: &Applied) -> Vec<(String, &'static str, Value)> {
    let now = live.clock.now();
    let mut out = Vec::new();
    let (station, changes) = match applied {
        Applied::Observation { station, metar, events, after } => {
            if let Some(st) = Catalog::global().get(station) {
                // The extremes right after this report (captured when it was applied), or,
                // when they were not captured, as they are now.
                let view = live.hot.read(station, |h| {
                    let recent =
                        Logic::ALL.iter().any(|&l| is_live_day(h.live.day_of(l, metar.time), h.live.day_of(l, now)));
                    recent.then(|| match after {
                        Some(after) => (after[0].clone(), after[1].clone()),
                        None => {
                            let day = |l| h.live.day_of(l, metar.time);
                            (
                                h.live.extremes(Logic::Nws, day(Logic::Nws), now),
                                h.live.extremes(Logic::Wu, day(Logic::Wu), now),
                            )
                        }
                    })
                });
                if let Some(Some((nws, wu))) = view {
                    out.push((
                        station.clone(),
                        "observation",
                        observation_payload(st, metar, nws.as_ref(), wu.as_ref()),
                    ));
                }
            }
            (station, events)
        }
        Applied::OneMinute { station, events } => (station, events),
        Applied::Report { station, report, events, anomaly } => {
            let view = live.hot.read(station, |h| {
                let recent = Logic::ALL.iter().any(|&l| is_live_day(report.date, h.live.day_of(l, now)));
                recent.then(|| anomaly.unwrap_or_else(|| h.live.report_anomaly(report)))
            });
            if let Some(Some(anomaly)) = view {
                let name = if report.kind == DailyKind::Dsm { "dsm" } else { "cli" };
                out.push((station.clone(), name, report_payload(report, anomaly)));
            }
            (station, events)
        }
    };
    // Only changes of the trading day in progress are alerts; a late report that changes
    // an older day is visible through svc_high?date=, not pushed.
    let current: BTreeMap<Logic, chrono::NaiveDate> =
        Logic::ALL.iter().filter_map(|&l| live.hot.read(station, |h| (l, h.live.day_of(l, now)))).collect();
    for e in changes {
        let c = e.change();
        if current.get(&c.logic) == Some(&c.date) {
            out.push((station.clone(), e.name(), change_payload(station, e)));
        }
    }
    out
}

/// Records the publisher's inbox holds before an ingest waits for it.
pub const PUBLISHER_INBOX: usize = 4096;

/// Attaches to the live path and publishes the events of everything it applies until the
/// live service goes away, and the `brackets` events its watcher computes
/// ([`super::brackets`], handed the station of each applied record). Append, then publish,
/// from this one task: ids reach clients in order. Nothing is skipped: the live path waits
/// when this task falls behind, and an ingest is acknowledged once this task has logged
/// its events.
pub async fn spawn_publisher(
    live: Arc<WriteService>,
    held: Arc<HeldRows>,
    log: Arc<EventLog>,
    hub: Hub,
) -> tokio::task::JoinHandle<()> {
    let mut rx = live.attach_publisher(PUBLISHER_INBOX).await;
    let (computed_tx, mut computed) = mpsc::channel::<Computed>(256);
    let watch = spawn_watch(Arc::clone(&live), held, hub.clone(), computed_tx);
    let emit = move |station: &str, name: &'static str, data: Value| {
        // Emission (wall-clock) time: the log's retention and the payload `timestamp` are
        // about when the event went out.
        match log.append(station, name, data, Utc::now()) {
            Ok(event) => {
                hub.publish(event);
            }
            Err(e) => tracing::error!(error = %e, station, event = name, "event log append failed; event not streamed"),
        }
    };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                notice = rx.recv() => {
                    let Some(notice) = notice else { break };
                    for (station, name, data) in events_for(&live, &notice.applied) {
                        emit(&station, name, data);
                    }
                    if let Some(logged) = notice.logged {
                        // The ingest waiting for it may have given up: nothing to do then.
                        let _ = logged.send(());
                    }
                    // Only a new high or low, or a report, moves a day's odds between sweeps.
                    // Full: the watcher's next sweep covers the station.
                    let moves = notice.applied.event_count() > 0 || matches!(notice.applied, Applied::Report { .. });
                    if moves {
                        let _ = watch.try_send(notice.applied.station().to_string());
                    }
                }
                Some((station, name, data)) = computed.recv() => emit(&station, name, data),
            }
        }
    })
}
