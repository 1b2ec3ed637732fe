//! The versions of the NWS hourly forecast (api.weather.gov) for one station and Local
//! Standard Time date, as `nws_forecasts.php` answers them (spec 2.8): read from the lake
//! and held per (station, date) like the raw forecasts (forecast_cache.rs), because the
//! dashboard's day view asks for the same date on every load and poll and the lake query
//! was its slowest answer (benches/README.md, "Dashboard").
//!
//! - An entry is current while the live service has stored no NWS rows since it was built
//!   and for [`TTL`] at most: rows written by another process appear within that time.
//! - At most [`HELD`] (station, date) pairs are held; the least recently loaded go first.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Float64Type, TimestampMicrosecondType};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::ApiResult;
use crate::catalog::Station;
use crate::lake::bound_sql::Bindings;
use crate::lake::loading_cache::LoadingCache;
use crate::lake::schema::NWS_HOURLY;
use crate::time::{day_window, fmt_iso_utc, DayClock};
use crate::write::WriteService;

/// Longest an entry is served without re-reading the lake.
pub const TTL: StdDuration = StdDuration::from_secs(60);
/// (station, date) pairs held.
pub const HELD: usize = 2_000;

/// The cache (one per server).
#[derive(Default)]
pub struct NwsCache {
    entries: LoadingCache<(String, NaiveDate), NwsDay>,
}

impl NwsCache {
    /// The versions of (station, date), loading them when missing or stale.
    pub async fn get(&self, live: &WriteService, station: &Station, date: NaiveDate) -> ApiResult<Arc<NwsDay>> {
        let version = live.table_version(NWS_HOURLY.name);
        self.entries
            .get_or_load(&(station.code.clone(), date), version, TTL, || async {
                let found = NwsDay::load(live, station, date).await?;
                self.entries.evict(|_| 1, HELD - 1);
                Ok(found)
            })
            .await
    }
}

/// One version's periods: start time → (°F, available_at; `None` for a row without one).
type Periods = BTreeMap<DateTime<Utc>, (f64, Option<DateTime<Utc>>)>;

/// The stored periods of one (station, date): every version's temperatures with the moment
/// each became available, and the versions as answered now.
pub struct NwsDay {
    /// The date's Local Standard Time window start (slot 0).
    window_start: DateTime<Utc>,
    /// generated_at → its periods.
    periods: BTreeMap<DateTime<Utc>, Periods>,
    /// Every distinct version, oldest first.
    pub current: Vec<NwsVersion>,
}

impl NwsDay {
    async fn load(live: &WriteService, station: &Station, date: NaiveDate) -> ApiResult<NwsDay> {
        let w = day_window(station.timezone, DayClock::Standard, date);
        let mut p = Bindings::new();
        let sql = format!(
            "SELECT generated_at, start_time, temperature_f, available_at FROM nws_hourly WHERE station_code = {} \
             AND date >= {} AND date <= {} AND start_time >= {} AND start_time <= {} \
             AND generated_at < {} ORDER BY generated_at, start_time",
            p.str(&station.code),
            p.partition_date(date - Duration::days(8)),
            p.partition_date(date + Duration::days(1)),
            p.time(w.start),
            p.time(w.start + Duration::hours(24)),
            p.time(w.end),
        );
        let mut periods: BTreeMap<DateTime<Utc>, Periods> = BTreeMap::new();
        for b in p.collect(&live.ctx, &sql).await? {
            let g = b.column(0).as_primitive::<TimestampMicrosecondType>();
            let s = b.column(1).as_primitive::<TimestampMicrosecondType>();
            let f = b.column(2).as_primitive::<Float64Type>();
            let a = b.column(3).as_primitive::<TimestampMicrosecondType>();
            for i in 0..b.num_rows() {
                if let (Some(g), Some(s)) =
                    (DateTime::from_timestamp_micros(g.value(i)), DateTime::from_timestamp_micros(s.value(i)))
                {
                    let available = a.is_valid(i).then(|| a.value(i)).and_then(DateTime::from_timestamp_micros);
                    periods.entry(g).or_default().insert(s, (f.value(i), available));
                }
            }
        }
        let mut day = NwsDay { window_start: w.start, periods, current: Vec::new() };
        day.current = day.versions(None);
        Ok(day)
    }

    /// Every distinct version covering the date, oldest first (a version identical to the
    /// one before it is not a new version); with `as_of`, of the rows available by then
    /// (the repeats dropped and the numbers given among those).
    pub fn versions(&self, as_of: Option<DateTime<Utc>>) -> Vec<NwsVersion> {
        let mut out: Vec<NwsVersion> = Vec::new();
        for (g, rows) in &self.periods {
            let known: BTreeMap<DateTime<Utc>, f64> = rows
                .iter()
                .filter(|(_, (_, a))| as_of.is_none_or(|t| a.is_some_and(|a| a <= t)))
                .map(|(s, (f, _))| (*s, *f))
                .collect();
            let temps = slots(self.window_start, *g, &known);
            if temps.iter().all(Option::is_none) || out.last().is_some_and(|v| v.hourly_temps == temps) {
                continue;
            }
            out.push(version(out.len() + 1, *g, temps));
        }
        out
    }
}

/// One version of a date's hourly temperatures.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct NwsVersion {
    pub version: usize,
    /// When api.weather.gov generated it (ISO 8601 UTC).
    pub generated_at: String,
    /// Index 0 = midnight LST … 24 = next midnight; null for hours already past at issue.
    pub hourly_temps: Vec<Option<i64>>,
    pub high: Option<i64>,
    pub low: Option<i64>,
}

/// The 25 slots of `date` from one version's periods (start time → °F).
pub fn slots(
    window_start: DateTime<Utc>,
    generated_at: DateTime<Utc>,
    periods: &BTreeMap<DateTime<Utc>, f64>,
) -> Vec<Option<i64>> {
    (0..25)
        .map(|k| {
            let t = window_start + Duration::hours(k);
            // An hour that ended before the version was issued is past: null.
            if t + Duration::hours(1) <= generated_at {
                return None;
            }
            periods.get(&t).map(|f| f.round() as i64)
        })
        .collect()
}

fn version(n: usize, generated_at: DateTime<Utc>, temps: Vec<Option<i64>>) -> NwsVersion {
    let vals: Vec<i64> = temps.iter().flatten().copied().collect();
    NwsVersion {
        version: n,
        generated_at: fmt_iso_utc(generated_at),
        high: vals.iter().max().copied(),
        low: vals.iter().min().copied(),
        hourly_temps: temps,
    }
}
