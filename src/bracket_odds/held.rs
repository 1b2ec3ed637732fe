//! The rows behind recent asks, held in memory: `brackets.php` and the stream's watcher
//! ask the same station-days again and again, and reading their rows from the lake (six
//! statements) was nearly all of an answer's time, the method itself well under a
//! millisecond (benches/README.md, "Brackets").
//!
//! An entry holds every row its tables had stored when it was read, not only those known
//! at one time: [`Rows::inputs`] chooses by each row's own availability, as the
//! `bracket_scores` job does from one read at every checkpoint. So one entry answers any
//! time, now or `as_of` a past moment, and a row that becomes known later than it was
//! stored (a daily forecast issued ahead) counts from its moment.
//!
//! - An entry is current while the live service has stored nothing into the tables it
//!   read and no job run of this process has published since it was read, and for [`TTL`]
//!   at most: rows another process writes (a `wxlake jobs run`, a second ingest) appear
//!   within that time, as in the API's other caches of lake rows.
//! - At most [`HELD_ROWS`] rows over all entries; the least recently loaded go first.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};

use super::inputs::Rows;
use super::{Ask, OddsError};
use crate::brackets::markets::Quantity;
use crate::extremes::Logic;
use crate::lake::loading_cache::LoadingCache;
use crate::lake::schema::{DAILY_FORECASTS, NWS_HOURLY, REPORTS};
use crate::units::Units;
use crate::write::WriteService;

/// Longest an entry is served without re-reading the lake.
pub const TTL: Duration = Duration::from_secs(60);

/// Rows held at most, over every entry: a station-target's three years of verified pairs
/// at one lead are about 80,000 rows of a few dozen bytes, so this keeps the day in
/// progress of every catalog station's high and low (what the stream's watcher asks) in a
/// few hundred MB at most, and far less while the history is short.
pub const HELD_ROWS: usize = 12_000_000;

/// The raw tables [`Rows`] reads; the others (`forecast_daily`, `accuracy_pairs`,
/// `daily_extremes`) are job outputs, followed by the live service's derived version.
const RAW_TABLES: [&str; 3] = [NWS_HOURLY.name, DAILY_FORECASTS.name, REPORTS.name];

/// Station, settlement day, target, unit, logic and the lead of the verified errors: what
/// a read depends on besides the time, which [`Rows::inputs`] applies.
type Key = (String, NaiveDate, Quantity, Units, Logic, i64);

/// The held rows (one per server, shared by `brackets.php` and the stream's watcher).
#[derive(Default)]
pub struct HeldRows {
    entries: LoadingCache<Key, Rows>,
}

impl HeldRows {
    /// The rows of `ask`'s station-day and lead, everything stored (module docs), read
    /// from the lake when not held or no longer current.
    pub async fn rows(&self, live: &WriteService, ask: &Ask<'_>) -> Result<Arc<Rows>, OddsError> {
        let lead = ask.lead_days();
        let key = (ask.station.code.clone(), ask.date, ask.target, ask.unit, ask.logic, lead);
        let version = RAW_TABLES.iter().map(|t| live.table_version(t)).sum::<u64>() + live.derived_version();
        self.entries
            .get_or_load(&key, version, TTL, || async {
                let everything = Ask { t: DateTime::<Utc>::MAX_UTC, ..*ask };
                let rows = Rows::read(&live.ctx, &everything, ask.date, ask.pair_leads()).await?;
                self.entries.evict(Rows::len, HELD_ROWS.saturating_sub(rows.len()));
                Ok::<_, OddsError>(rows)
            })
            .await
    }
}
