//! The `brackets` stream event: when the probability of a bracket of a station's day moves
//! by [`MOVE`] (2 percentage points) or more, the day's ladder goes out again to the
//! station's subscribers; the day's first odds go out when first computed.
//!
//! A watcher task recomputes the odds of both targets of a station's day in progress
//! (`bracket_odds`, what `brackets.php` answers now) when the publisher hands it the
//! station of an applied record (a new observation moves the floor, a climate report can
//! settle the day), and for every subscribed station every [`SWEEP`]: a new model run
//! reaches `forecast_daily` through a job and a daily forecast through a flush, and no
//! applied record marks either; a station is checked at most every [`MIN_GAP`]. A check
//! whose odds could not be computed (a lake read failed) is tried again after
//! [`MIN_GAP`], up to [`RETRIES`] times in a row: the next sweep is minutes away, and the
//! move it would have sent is what subscribers wait for. Each target keeps the ladder of
//! its day's first event, so "moved" compares the same brackets. Only stations someone subscribes to are computed;
//! the events go back to the publisher, which logs and sends them in id order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDate;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::payloads::brackets_payload;
use crate::bracket_odds::{odds, Ask, HeldRows, OddsError};
use crate::brackets::markets::Quantity;
use crate::brackets::Ladder;
use crate::catalog::Catalog;
use crate::stream::Hub;
use crate::write::WriteService;

/// The move of one bracket's probability that makes an event.
pub const MOVE: f64 = 0.02;

/// How often every subscribed station is checked.
pub const SWEEP: Duration = Duration::from_secs(300);

/// The shortest time between two checks of one station: a burst of reports (a backlog
/// replayed, a feed catching up) moves its odds once, not once per report.
pub const MIN_GAP: Duration = Duration::from_secs(5);

/// Failed checks of one station tried again before it waits for the next notice or sweep.
pub const RETRIES: u32 = 3;

/// Stations waiting to be checked before a sender waits (the publisher never does: it
/// drops a notice when full, and the next sweep covers it).
const INBOX: usize = 1024;

/// An event for the publisher: station, name, data.
pub type Computed = (String, &'static str, Value);

/// What went out last for a station's target.
struct Sent {
    date: NaiveDate,
    ladder: Ladder,
    p: Vec<f64>,
}

/// Starts the watcher; its events go to `out`. Returns the sender the publisher hands
/// stations to; the watcher ends when that sender or `out` is dropped.
pub fn spawn_watch(
    live: Arc<WriteService>,
    held: Arc<HeldRows>,
    hub: Hub,
    out: mpsc::Sender<Computed>,
) -> mpsc::Sender<String> {
    let (tx, mut rx) = mpsc::channel::<String>(INBOX);
    tokio::spawn(async move {
        let mut sent: HashMap<(String, Quantity), Sent> = HashMap::new();
        // Stations to check, and when each was last checked ([`MIN_GAP`]).
        let mut waiting: HashSet<String> = HashSet::new();
        let mut checked: HashMap<String, Instant> = HashMap::new();
        // Failed checks in a row, per station.
        let mut failed: HashMap<String, u32> = HashMap::new();
        let mut sweep = tokio::time::interval(SWEEP);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            // When a waiting station may be checked (`None`: at once, never checked yet).
            let due_at = |s: &String| checked.get(s).map(|t| *t + MIN_GAP);
            let next = waiting.iter().map(due_at).min().map(|d| d.unwrap_or_else(Instant::now));
            tokio::select! {
                station = rx.recv() => match station {
                    Some(s) => {
                        waiting.insert(s);
                        while let Ok(more) = rx.try_recv() {
                            waiting.insert(more);
                        }
                    }
                    None => return,
                },
                _ = sweep.tick() => waiting.extend(hub.subscribed_stations()),
                _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {}
            }
            let now = Instant::now();
            let mut due: Vec<String> = waiting.iter().filter(|s| due_at(s).is_none_or(|d| d <= now)).cloned().collect();
            due.sort();
            let subscribed: HashSet<String> = hub.subscribed_stations().into_iter().collect();
            for code in due {
                waiting.remove(&code);
                checked.insert(code.clone(), now);
                if !subscribed.contains(&code) {
                    continue;
                }
                let mut ok = true;
                for target in [Quantity::High, Quantity::Low] {
                    match check(&live, &held, &code, target, &mut sent).await {
                        Ok(Some(event)) => {
                            if out.send(event).await.is_err() {
                                return;
                            }
                        }
                        Ok(None) => {}
                        Err(()) => ok = false,
                    }
                }
                let failures = failed.entry(code.clone()).or_default();
                *failures = if ok { 0 } else { *failures + 1 };
                if !ok && *failures <= RETRIES {
                    waiting.insert(code);
                }
            }
        }
    });
    tx
}

/// The event of `code`'s `target` now, when it is the day's first or a bracket moved;
/// `Err` when its odds could not be computed (logged).
async fn check(
    live: &WriteService,
    held: &HeldRows,
    code: &str,
    target: Quantity,
    sent: &mut HashMap<(String, Quantity), Sent>,
) -> Result<Option<Computed>, ()> {
    let Some(station) = Catalog::global().get(code) else { return Ok(None) };
    let now = live.clock.now();
    let ask = Ask::settling(station, target, None, None, now);
    let key = (code.to_string(), target);
    let previous = sent.get(&key).filter(|s| s.date == ask.date);
    let odds = match odds(live, held, &ask, previous.map(|s| s.ladder.clone()), false).await {
        Ok(o) => o,
        Err(OddsError::NoForecast { .. }) => return Ok(None),
        Err(e) => {
            tracing::warn!(error = %e, station = code, "brackets event: odds not computed");
            return Err(());
        }
    };
    let moved = previous.map(|s| s.p.iter().zip(&odds.brackets).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max));
    if moved.is_some_and(|m| m < MOVE) {
        return Ok(None);
    }
    let payload = brackets_payload(&ask, &odds, moved, now);
    sent.insert(key, Sent { date: ask.date, ladder: odds.ladder, p: odds.brackets });
    Ok(Some((code.to_string(), "brackets", payload)))
}
