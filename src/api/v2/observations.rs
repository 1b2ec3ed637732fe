//! `GET /api/v2/observations.php`: latest, svc_high (both logics) and history.
//!
//! `mode=latest` is the station's most recent observation however old (its
//! `observation_time` says how old): the newer of the hot state's latest and the lake's
//! newest row of the station. The hot state holds every observation of the lake's last
//! [`REBUILD_WINDOW`] and every one this process ingested since; the lake's newest row
//! also sees rows another process (`wxlake ingest`) wrote while `serve` runs. The lake's
//! answer, "none" included, is kept per station for [`LATEST_LAKE_TTL`], so such rows
//! show in `latest` (v1 and v2) and `nearby` within a minute.
//!
//! The memory answer stays the fast path: when the hot state has a recent latest, the
//! request never waits for the lake; a stale lake answer is served while it is refreshed
//! in the background (one refresh per station at a time, at most once per TTL). Only a
//! station with no recent observation in memory waits for the lake, once per TTL. The lake lookup reads the
//! `date` partitions newest first, in groups of 1, 2, 4, ... partitions, and stops at the
//! first group that holds the station: a recent row costs a scan of one day.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration as StdDuration;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::TimestampMicrosecondType;
use serde::Serialize;
use tracing::warn;
use utoipa::ToSchema;

use super::forecasts::lit;
use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::loading_cache::LoadingCache;
use crate::api::observation_json::{DayReports, ObservationV2};
use crate::api::params::Params;
use crate::api::AppState;
use crate::catalog::Station;
use crate::decode::types::{DailyKind, DailyReport, Metar};
use crate::extremes::{DataQuality, DayExtremes, Logic, StationLive, REPLAY_AFTER, REPLAY_BEFORE};
use crate::lake::rows::LakeRecord;
use crate::lake::window::load_window;
use crate::time::{fmt_utc, standard_date};
use crate::write::hot::REBUILD_WINDOW;

/// Longest history range (spec 8).
pub const MAX_HISTORY: Duration = Duration::hours(24);

/// Response of `mode=svc_high` (spec 2.2, plus `is_final`, sources and valid-through times).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct SvcHigh {
    pub station_code: String,
    /// Trading day `YYYY-MM-DD` (Local Standard Time for nws, civil for wu).
    pub date: String,
    /// Day high in native units; null before any reading.
    pub svc_high: Option<f64>,
    pub svc_low: Option<f64>,
    pub time_of_high_utc: Option<String>,
    pub time_of_low_utc: Option<String>,
    /// `nws` or `wu`.
    pub calculation_logic: String,
    pub units: String,
    pub anomaly: bool,
    /// Keyed by the requested logic (spec 2.4).
    #[schema(value_type = Object)]
    pub data_quality: BTreeMap<String, serde_json::Value>,
    /// A final CLI fixed the values (nws).
    pub is_final: bool,
    /// Where the value came from: observation, one_minute, six_hour_group,
    /// twenty_four_hour_group, dsm or cli.
    pub high_source: Option<String>,
    pub low_source: Option<String>,
    /// Every source that reached `svc_high`: the sources (names as in `high_source`) whose
    /// own high for the day equals it, in the order observation, one_minute, six_hour_group,
    /// twenty_four_hour_group, dsm, cli; always includes `high_source`; `[]` without a value.
    /// Several entries mean independent reports agree on the value.
    pub svc_high_sources: Vec<String>,
    /// The same for `svc_low`.
    pub svc_low_sources: Vec<String>,
    pub high_valid_through_utc: Option<String>,
    pub low_valid_through_utc: Option<String>,
}

impl SvcHigh {
    /// The answer for `date` from the engine's extremes; `None` (nothing at all for that day)
    /// is answered with null values and a data quality that says so, as seen at `now`.
    pub fn new(station: &Station, logic: Logic, date: NaiveDate, x: Option<&DayExtremes>, now: DateTime<Utc>) -> Self {
        let dq = match x {
            Some(x) => serde_json::to_value(&x.data_quality),
            None => {
                let w = crate::time::day_window(station.timezone, logic.clock(), date);
                let held = (logic == Logic::Wu && station.code.starts_with('K')).then(Vec::new);
                serde_json::to_value(DataQuality::no_data(logic.as_str(), w.start, w.end, now, held))
            }
        }
        .unwrap_or_default();
        SvcHigh {
            station_code: station.code.clone(),
            date: date.to_string(),
            svc_high: x.and_then(|x| x.high).map(|e| e.value),
            svc_low: x.and_then(|x| x.low).map(|e| e.value),
            time_of_high_utc: x.and_then(|x| x.high).map(|e| fmt_utc(e.time)),
            time_of_low_utc: x.and_then(|x| x.low).map(|e| fmt_utc(e.time)),
            calculation_logic: logic.as_str().to_string(),
            units: station.units.as_str().to_string(),
            anomaly: x.is_some_and(|x| x.anomaly),
            data_quality: BTreeMap::from([(logic.as_str().to_string(), dq)]),
            is_final: x.is_some_and(|x| x.is_final),
            high_source: x.and_then(|x| x.high).map(|e| e.source.as_str().to_string()),
            low_source: x.and_then(|x| x.low).map(|e| e.source.as_str().to_string()),
            svc_high_sources: x.map(|x| source_names(&x.high_sources)).unwrap_or_default(),
            svc_low_sources: x.map(|x| source_names(&x.low_sources)).unwrap_or_default(),
            high_valid_through_utc: x.and_then(|x| x.high_valid_through_utc).map(fmt_utc),
            low_valid_through_utc: x.and_then(|x| x.low_valid_through_utc).map(fmt_utc),
        }
    }
}

fn source_names(sources: &[crate::extremes::Source]) -> Vec<String> {
    sources.iter().map(|s| s.as_str().to_string()).collect()
}

#[utoipa::path(
    get,
    path = "/api/v2/observations.php",
    tag = "observations",
    params(
        ("station_code" = String, Query, description = "Station code of the catalog, e.g. KNYC"),
        ("mode" = Option<crate::api::docs::param::ObservationMode>, Query, description = "`latest`, `svc_high`, or `history` (the default)"),
        ("logic" = Option<crate::api::docs::param::Logic>, Query, description = "svc_high only, required: `nws` or `wu`"),
        ("date" = Option<String>, Query, format = Date, description = "svc_high only: a trading day YYYY-MM-DD, not after today (default: today)"),
        ("observation_type" = Option<crate::api::docs::param::ObservationType>, Query, description = "latest only: the latest observation whose day has that report value"),
        ("start_time" = Option<String>, Query, format = DateTime, description = "history, required: ISO 8601 UTC"),
        ("end_time" = Option<String>, Query, format = DateTime, description = "history, required: ISO 8601 UTC, after start_time and at most 24 h after it"),
    ),
    responses(
        (status = 200, description = "latest: one observation record (2.1); svc_high: the trading-day extremes (2.2); history: array of observation records, oldest first", body = crate::api::docs::ObservationsV2Body),
        (status = 400, description = "invalid or missing parameters", body = crate::api::error::ErrorBody),
        (status = 401, description = "invalid or missing API key", body = crate::api::error::ErrorBody),
        (status = 404, description = "no observation for the station (latest)", body = crate::api::error::ErrorBody),
        (status = 429, description = "rate limit exceeded", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> ApiResult<Response> {
    let p = Params(q);
    let station = p.station("station_code")?;
    match p.choice("mode", &["latest", "svc_high", "history"])? {
        Some("latest") => {
            let kind = p.choice("observation_type", &["dsm_high", "dsm_low", "cli_high", "cli_low"])?;
            let o = latest(&state, station, kind).await?;
            Ok(Json(o).into_response())
        }
        Some("svc_high") => {
            let logic = logic_param(&p)?;
            let date = p.date("date")?;
            Ok(Json(svc_high(&state, station, logic, date).await?).into_response())
        }
        _ => {
            let (start, end) = history_range(&p)?;
            let obs = history(&state, station, start, end).await?;
            let out: Vec<ObservationV2> =
                obs.iter().map(|(m, r)| ObservationV2::new(m, station, r.as_ref_pair())).collect();
            Ok(Json(out).into_response())
        }
    }
}

/// The `logic` parameter, with spec 7's exact 400 when missing.
pub fn logic_param(p: &Params) -> Result<Logic, ApiError> {
    let v = p.required("logic", "Valid values are nws and wu")?;
    Logic::parse(v).ok_or_else(|| ApiError::bad_request(format!("Invalid logic: {v}"), "Valid values are nws and wu"))
}

/// `start_time` / `end_time`, both required, ordered, at most 24 h apart.
pub fn history_range(p: &Params) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
    let fmt = "ISO 8601 UTC, e.g. 2026-03-08T00:00:00Z; the range is at most 24 hours";
    let start = p.time("start_time")?.ok_or_else(|| ApiError::missing("start_time", fmt))?;
    let end = p.time("end_time")?.ok_or_else(|| ApiError::missing("end_time", fmt))?;
    if end <= start {
        return Err(ApiError::bad_request("end_time must be after start_time", fmt));
    }
    if end - start > MAX_HISTORY {
        return Err(ApiError::bad_request(
            format!("History range too long: {} hours", (end - start).num_minutes() as f64 / 60.0),
            "the range is at most 24 hours",
        ));
    }
    Ok((start, end))
}

/// An observation with the CLI/DSM of its Local Standard Time day.
#[derive(Debug, Clone)]
pub struct WithReports {
    pub cli: Option<DailyReport>,
    pub dsm: Option<DailyReport>,
}

impl WithReports {
    pub fn as_ref_pair(&self) -> DayReports<'_> {
        DayReports { cli: self.cli.as_ref(), dsm: self.dsm.as_ref() }
    }
}

/// The best report of `kind` for a station and LST date: a final beats a preliminary,
/// then the newest issue wins.
fn report_for(reports: &[DailyReport], kind: DailyKind, date: NaiveDate) -> Option<&DailyReport> {
    reports.iter().filter(|r| r.kind == kind && r.date == date).max_by_key(|r| (r.is_final, r.issued_at))
}

fn attach(station: &Station, m: Metar, reports: &[DailyReport]) -> (Metar, WithReports) {
    let d = standard_date(station.timezone, m.time);
    let w = WithReports {
        cli: report_for(reports, DailyKind::Cli, d).cloned(),
        dsm: report_for(reports, DailyKind::Dsm, d).cloned(),
    };
    (m, w)
}

/// Observations of `[start, end]`: the lake's, plus the hot state's not yet flushed,
/// deduplicated by natural key, in time order, each with its day's reports.
pub async fn history(
    state: &AppState,
    station: &Station,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> ApiResult<Vec<(Metar, WithReports)>> {
    let (lake_obs, _, mut reports) =
        load_window(&state.live.ctx, Some(&station.code), start, end + Duration::seconds(1)).await?;
    let mut by_key: BTreeMap<(DateTime<Utc>, u64), Metar> =
        lake_obs.into_iter().map(|m| ((m.time, m.row_key()), m)).collect();
    state.live.hot.read(&station.code, |h| {
        for ((t, k), m) in h.recent.range((start, 0)..=(end, u64::MAX)) {
            by_key.entry((*t, *k)).or_insert_with(|| m.clone());
        }
        reports.extend(h.reports.iter().cloned());
    });
    Ok(by_key.into_values().map(|m| attach(station, m, &reports)).collect())
}

/// The latest observation (optionally: the latest whose day has the given report value).
async fn latest(state: &AppState, station: &Station, kind: Option<&str>) -> ApiResult<ObservationV2> {
    let Some(kind) = kind else {
        return match latest_observation(state, station).await? {
            Some((m, r)) => Ok(ObservationV2::new(&m, station, r.as_ref_pair())),
            None => Err(no_observation(station)),
        };
    };
    let now = state.now();
    let wanted = |o: &ObservationV2| match kind {
        "dsm_high" => o.dsm_high.is_some(),
        "dsm_low" => o.dsm_low.is_some(),
        "cli_high" => o.cli_high.is_some(),
        "cli_low" => o.cli_low.is_some(),
        _ => true,
    };
    // Recent first (hot ∪ lake over two days), then a wider lake window.
    for back in [Duration::days(2), Duration::days(10)] {
        let obs = history(state, station, now - back, now + Duration::hours(1)).await?;
        if let Some(o) = obs.iter().rev().map(|(m, r)| ObservationV2::new(m, station, r.as_ref_pair())).find(wanted) {
            return Ok(o);
        }
    }
    Err(ApiError::not_found(
        format!("No observation for {}", station.code),
        format!("no observation of the last 10 days whose day has a {kind} value"),
    ))
}

/// The 404 of a station the lake has never seen an observation of.
pub fn no_observation(station: &Station) -> ApiError {
    ApiError::not_found(
        format!("No observation for {}", station.code),
        "neither the live state nor the lake holds any observation of this station",
    )
}

/// How long the lake's newest observation of a station (or "none") stays in memory: rows
/// another process writes to the lake show in `latest` within this time.
pub const LATEST_LAKE_TTL: StdDuration = StdDuration::from_secs(60);

/// The lake's newest observation per station, with its day's reports (`None`: the lake
/// has no row of the station), kept for [`LATEST_LAKE_TTL`].
pub struct LatestCache {
    lake: LoadingCache<String, Option<(Metar, WithReports)>>,
    /// Stations whose background refresh is running.
    refreshing: Mutex<HashSet<String>>,
    /// The TTL in milliseconds ([`LATEST_LAKE_TTL`] unless set).
    ttl_ms: AtomicU64,
    /// Lake lookups run so far (monitoring, tests).
    lookups: AtomicU64,
}

impl Default for LatestCache {
    fn default() -> Self {
        LatestCache {
            lake: LoadingCache::default(),
            refreshing: Mutex::new(HashSet::new()),
            ttl_ms: AtomicU64::new(LATEST_LAKE_TTL.as_millis() as u64),
            lookups: AtomicU64::new(0),
        }
    }
}

impl LatestCache {
    /// How long a lake answer is kept.
    pub fn ttl(&self) -> StdDuration {
        StdDuration::from_millis(self.ttl_ms.load(Ordering::Relaxed))
    }

    /// Changes how long a lake answer is kept (tests; the default is [`LATEST_LAKE_TTL`]).
    pub fn set_ttl(&self, ttl: StdDuration) {
        self.ttl_ms.store(ttl.as_millis() as u64, Ordering::Relaxed);
    }

    /// How many lake lookups ran (each is at most one per station per TTL).
    pub fn lookups(&self) -> u64 {
        self.lookups.load(Ordering::Relaxed)
    }

    fn refreshing(&self) -> MutexGuard<'_, HashSet<String>> {
        self.refreshing.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The order of "latest" (the live engine's): time, then a correction over the original,
/// then the raw text so that the choice never depends on read order.
fn latest_key(m: &Metar) -> (DateTime<Utc>, bool, &str) {
    (m.time, m.cor, m.raw.as_str())
}

/// The station's most recent METAR/SPECI/HF-METAR however old, with the CLI/DSM of its day;
/// `None` when neither the hot state nor the lake has any. See the module docs.
pub async fn latest_observation(state: &AppState, station: &Station) -> ApiResult<Option<(Metar, WithReports)>> {
    let hot = state
        .live
        .hot
        .read(&station.code, |h| {
            h.live.latest().map(|m| {
                let day = standard_date(station.timezone, m.time);
                let reports = WithReports {
                    cli: report_for(&h.reports, DailyKind::Cli, day).cloned(),
                    dsm: report_for(&h.reports, DailyKind::Dsm, day).cloned(),
                };
                (m.clone(), reports)
            })
        })
        .flatten();
    let cache = &state.latest;
    let ttl = cache.ttl();
    let lake = if hot.as_ref().is_some_and(|(m, _)| m.time >= state.now() - REBUILD_WINDOW) {
        // The fast path: never wait for the lake. A stale answer still counts until the
        // refresh replaces it (latest must not step back to an older memory row).
        let cached = cache.lake.peek(&station.code, 0, ttl);
        if !cached.as_ref().is_some_and(|(_, fresh)| *fresh) {
            refresh_in_background(state, station);
        }
        cached.map(|(v, _)| v)
    } else {
        Some(cache.lake.get_or_load(&station.code, 0, ttl, || newest_in_lake(state, station)).await?)
    };
    Ok(match (hot, lake.as_deref().and_then(Option::as_ref)) {
        (Some(h), Some(l)) if latest_key(&l.0) > latest_key(&h.0) => Some(l.clone()),
        (Some(h), _) => Some(h),
        (None, l) => l.cloned(),
    })
}

/// Looks the station's newest lake row up off the request path, unless a lookup for it
/// is already running. A failed lookup is kept as "none" for the TTL (the memory answer
/// stands; the lake is not asked again on every request).
fn refresh_in_background(state: &AppState, station: &Station) {
    if !state.latest.refreshing().insert(station.code.clone()) {
        return;
    }
    /// Ends the station's refresh however the task ends (a panic included), so a later
    /// request can start the next one.
    struct Running(AppState, String);
    impl Drop for Running {
        fn drop(&mut self) {
            self.0.latest.refreshing().remove(&self.1);
        }
    }
    let running = Running(state.clone(), station.code.clone());
    let station = station.clone();
    tokio::spawn(async move {
        let state = &running.0;
        let cache = &state.latest;
        let loaded = cache.lake.get_or_load(&station.code, 0, cache.ttl(), || newest_in_lake(state, &station)).await;
        if let Err(e) = loaded {
            warn!(station = %station.code, error = %e.body.error, "latest: the lake's newest observation cannot be read");
            cache.lake.insert(station.code.clone(), 0, None);
        }
        drop(running);
    });
}

/// The `date` partitions of the observations, newest first.
async fn observation_dates(state: &AppState) -> ApiResult<Vec<NaiveDate>> {
    let lake = state.lake();
    let listing =
        lake.store().list_with_delimiter(Some(&lake.table_path("observations"))).await.map_err(ApiError::internal)?;
    let mut dates: Vec<NaiveDate> = listing
        .common_prefixes
        .iter()
        .filter_map(|p| p.filename())
        .filter_map(|part| part.strip_prefix("date=").and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()))
        .collect();
    dates.sort_unstable_by(|a, b| b.cmp(a));
    dates.dedup();
    Ok(dates)
}

/// The lake's newest observation of the station, however old: the `date` partitions
/// newest first, in groups of 1, 2, 4, ... partitions (each query prunes to its group),
/// stopping at the first group that holds the station. A recent row costs one day's
/// scan; a station with no row at all costs one pass over the table, which the caller
/// keeps for the TTL.
async fn newest_in_lake(state: &AppState, station: &Station) -> ApiResult<Option<(Metar, WithReports)>> {
    state.latest.lookups.fetch_add(1, Ordering::Relaxed);
    let dates = observation_dates(state).await?;
    let (mut start, mut width) = (0usize, 1usize);
    while start < dates.len() {
        let group = &dates[start..(start + width).min(dates.len())];
        let (newest, oldest) = (group[0], group[group.len() - 1]);
        start += group.len();
        width *= 2;
        let sql = format!(
            "SELECT max(observation_time) FROM observations WHERE station_code = {} AND date >= '{oldest}' AND date <= '{newest}'",
            lit(&station.code)
        );
        let batches = state.live.ctx.sql(&sql).await?.collect().await?;
        let found = batches.iter().find(|b| b.num_rows() > 0).and_then(|b| {
            let t = b.column(0).as_primitive_opt::<TimestampMicrosecondType>()?;
            t.is_valid(0).then(|| t.value(0))
        });
        let Some(t) = found.and_then(DateTime::from_timestamp_micros) else { continue };
        let (obs, _, mut reports) =
            load_window(&state.live.ctx, Some(&station.code), t, t + Duration::seconds(1)).await?;
        state.live.hot.read(&station.code, |h| reports.extend(h.reports.iter().cloned()));
        let best = obs.into_iter().max_by(|a, b| latest_key(a).cmp(&latest_key(b)));
        return Ok(best.map(|m| attach(station, m, &reports)));
    }
    Ok(None)
}

/// The trading-day extremes of `date` (default: today) under `logic`. Today and
/// yesterday come from the hot state; older days are recomputed from the lake by the same
/// engine.
pub async fn svc_high(
    state: &AppState,
    station: &Station,
    logic: Logic,
    date: Option<NaiveDate>,
) -> ApiResult<SvcHigh> {
    let now = state.now();
    let today = crate::time::local_date(station.timezone, logic.clock(), now);
    let date = date.unwrap_or(today);
    if date > today {
        return Err(ApiError::bad_request(
            format!("date {date} is in the future"),
            format!("the current {} trading day of {} is {today}", logic.as_str(), station.code),
        ));
    }
    let hot = if date >= today - Duration::days(1) {
        state.live.hot.read(&station.code, |h| h.live.extremes(logic, date, now)).flatten()
    } else {
        None
    };
    let x = match hot {
        Some(x) => Some(x),
        None => day_from_lake(state, station, logic, date, now).await?,
    };
    Ok(SvcHigh::new(station, logic, date, x.as_ref(), now))
}

/// Recomputes one past day from the lake's rows with a fresh engine.
pub async fn day_from_lake(
    state: &AppState,
    station: &Station,
    logic: Logic,
    date: NaiveDate,
    now: DateTime<Utc>,
) -> ApiResult<Option<DayExtremes>> {
    let w = crate::time::day_window(station.timezone, logic.clock(), date);
    let (obs, onemin, reports) =
        load_window(&state.live.ctx, Some(&station.code), w.start - REPLAY_BEFORE, w.end + REPLAY_AFTER).await?;
    let live = StationLive::replay(station, &obs, &onemin, reports.iter().filter(|r| r.date == date));
    Ok(live.extremes(logic, date, now))
}
