//! `GET /api/v2/observations.php`: latest, svc_high (both logics, computed by
//! [`crate::trading_day`]) and history.
//!
//! `mode=latest` is the station's most recent observation however old (its
//! `observation_time` says how old): the newer of the hot state's latest and the lake's
//! newest row of the station. The hot state holds every observation of the lake's last
//! [`REBUILD_WINDOW`] and every one this process ingested since; the lake's newest row
//! also sees rows another process (`wxlake ingest`) wrote while `serve` runs. The lake's
//! answer, "none" included, is kept per station for
//! [`LATEST_LAKE_TTL`](crate::api::latest_cache::LATEST_LAKE_TTL), so such rows
//! show in `latest` (v1 and v2) and `nearby` within a minute.
//!
//! The memory answer stays the fast path: when the hot state has a recent latest, the
//! request never waits for the lake; a stale lake answer is served while it is refreshed
//! in the background (one refresh per station at a time, at most once per TTL). Only a
//! station with no recent observation in memory waits for the lake, once per TTL. The lake lookup reads the
//! `date` partitions newest first, in groups of 1, 2, 4, ... partitions, and stops at the
//! first group that holds the station: a recent row costs a scan of one day.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::TimestampMicrosecondType;
use serde::Deserialize;
use tracing::warn;
use utoipa::{IntoParams, ToSchema};

use crate::api::as_of::{AsOf, AsOfQuery};
use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
pub use crate::api::observation_json::SvcHigh;
use crate::api::observation_json::{ObservationV2, WithReports};
use crate::api::params::{self, ClosedSet, QueryParams};
use crate::api::state::AppState;
use crate::catalog::Station;
use crate::decode::types::{DailyKind, DailyReport, Metar};
use crate::extremes::Logic;
use crate::lake::bound_sql::Bindings;
use crate::lake::rows::LakeRecord;
use crate::lake::window::load_reported_window;
use crate::time::standard_date;
use crate::trading_day;
use crate::write::hot::REBUILD_WINDOW;

/// Longest history range (spec 8).
pub const MAX_HISTORY: Duration = Duration::hours(24);

/// `mode` of the observations endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObservationMode {
    Latest,
    SvcHigh,
    History,
}

impl ClosedSet for ObservationMode {}

/// `observation_type` of `mode=latest`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObservationType {
    DsmHigh,
    DsmLow,
    CliHigh,
    CliLow,
}

impl ClosedSet for ObservationType {}

impl ObservationType {
    /// Whether `o`'s day has this report value.
    fn present(self, o: &ObservationV2) -> bool {
        match self {
            ObservationType::DsmHigh => o.dsm_high.is_some(),
            ObservationType::DsmLow => o.dsm_low.is_some(),
            ObservationType::CliHigh => o.cli_high.is_some(),
            ObservationType::CliLow => o.cli_low.is_some(),
        }
    }
}

/// Query of `GET /api/v2/observations.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ObservationsQuery {
    /// Station code of the catalog, e.g. KNYC
    #[param(required = true, value_type = String)]
    pub station_code: Option<String>,
    /// `latest`, `svc_high`, or `history` (the default)
    #[param(value_type = Option<ObservationMode>)]
    pub mode: Option<String>,
    /// svc_high only, required: `nws` or `wu`
    #[param(value_type = Option<Logic>)]
    pub logic: Option<String>,
    /// svc_high only: a trading day YYYY-MM-DD, not after today (default: today)
    #[param(value_type = Option<String>, format = Date)]
    pub date: Option<String>,
    /// latest only: the latest observation whose day has that report value
    #[param(value_type = Option<ObservationType>)]
    pub observation_type: Option<String>,
    /// history, required: ISO 8601 UTC
    #[param(value_type = Option<String>, format = DateTime)]
    pub start_time: Option<String>,
    /// history, required: ISO 8601 UTC, after start_time and at most 24 h after it
    #[param(value_type = Option<String>, format = DateTime)]
    pub end_time: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v2/observations.php",
    tag = "observations",
    operation_id = "getObservations",
    summary = "A station's latest observation, trading-day extremes (svc_high) or history",
    description = "`mode=latest`: the station's most recent METAR/SPECI/HF-METAR however old (its \
                   `observation_time` says how old), optionally the latest whose day has a DSM/CLI value \
                   (`observation_type`). `mode=svc_high`: the trading day's computed high and low under `logic` \
                   (`nws`: Local Standard Time day, every report; `wu`: civil day, routine METARs), for today or a \
                   past `date`. History (the default): every observation of `[start_time, end_time]`, at most 24 \
                   hours, oldest first. One-minute data feeds the extremes but is never returned.",
    params(ObservationsQuery, AsOfQuery),
    responses(
        (status = 200, description = "latest: one observation record (2.1); svc_high: the trading-day extremes (2.2); history: array of observation records, oldest first", body = crate::api::schemas::ObservationsV2Body),
        (status = 400, description = "invalid or missing parameter, unknown station, or a parameter given twice", body = crate::api::error::ErrorBody),
        (status = 401, description = "invalid or missing API key", body = crate::api::error::ErrorBody),
        (status = 404, description = "no observation for the station (latest)", body = crate::api::error::ErrorBody),
        (status = 429, description = "rate limit exceeded", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    as_of: AsOf,
    QueryParams(q): QueryParams<ObservationsQuery>,
) -> ApiResult<Response> {
    let station = params::station("station_code", &q.station_code)?;
    let response = match params::choice::<ObservationMode>("mode", &q.mode)? {
        Some(ObservationMode::Latest) => {
            let kind = params::choice("observation_type", &q.observation_type)?;
            let o = match as_of.0 {
                None => latest(&state, station, kind).await?,
                Some(t) => latest_as_of(&state, station, kind, t).await?,
            };
            Json(o).into_response()
        }
        Some(ObservationMode::SvcHigh) => {
            let logic = logic_param(&q.logic)?;
            let date = params::date("date", &q.date)?;
            let day = match as_of.0 {
                None => trading_day::extremes(&state.live, station, logic, date).await?,
                Some(t) => trading_day::extremes_as_of(&state.live, station, logic, date, t).await?,
            };
            Json(SvcHigh::from(&day)).into_response()
        }
        Some(ObservationMode::History) | None => {
            let (start, end) = history_range(&q.start_time, &q.end_time)?;
            let obs = match as_of.0 {
                None => history(&state, station, start, end).await?,
                Some(t) => history_as_of(&state, station, start, end, t).await?,
            };
            let out: Vec<ObservationV2> =
                obs.iter().map(|(m, r)| ObservationV2::new(m, station, r.as_ref_pair())).collect();
            Json(out).into_response()
        }
    };
    Ok(as_of.echo(response))
}

/// The `logic` parameter (any case), with spec 7's exact 400 when missing.
pub fn logic_param(raw: &Option<String>) -> Result<Logic, ApiError> {
    let valid = format!("Valid values are {}", Logic::ALL.map(Logic::as_str).join(" and "));
    let v = params::required("logic", raw, &valid)?;
    Logic::parse(v).ok_or_else(|| ApiError::bad_request(format!("Invalid logic: {v}"), valid))
}

/// `start_time` / `end_time`, both required, ordered, at most 24 h apart.
pub fn history_range(
    start_time: &Option<String>,
    end_time: &Option<String>,
) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
    let fmt = "ISO 8601 UTC, e.g. 2026-03-08T00:00:00Z; the range is at most 24 hours";
    let start = params::time("start_time", start_time)?.ok_or_else(|| ApiError::missing("start_time", fmt))?;
    let end = params::time("end_time", end_time)?.ok_or_else(|| ApiError::missing("end_time", fmt))?;
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

/// The best report of `kind` for a station and LST date ([`DailyReport::precedence`]).
fn report_for(reports: &[DailyReport], kind: DailyKind, date: NaiveDate) -> Option<&DailyReport> {
    reports.iter().filter(|r| r.kind == kind && r.date == date).max_by_key(|r| r.precedence())
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
    let (lake_obs, mut reports) =
        load_reported_window(&state.live.ctx, Some(&station.code), start, end + Duration::seconds(1), None).await?;
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

/// [`history`] as the service would have answered at `t`: what it knew then
/// ([`crate::write::WriteService::known_window`]).
pub async fn history_as_of(
    state: &AppState,
    station: &Station,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    t: DateTime<Utc>,
) -> ApiResult<Vec<(Metar, WithReports)>> {
    let (mut obs, _, reports) =
        state.live.known_window(&station.code, start, end + Duration::seconds(1), t, false).await?;
    obs.sort_by_cached_key(|m| (m.time, m.row_key()));
    Ok(obs.into_iter().map(|m| attach(station, m, &reports)).collect())
}

/// Where [`latest_as_of`] and [`latest_observation_as_of`] look, in turn, for the newest
/// observation known at `t`, each window from the returned start to `t`: from memory first
/// (the last three hours, then all the hot state holds: the newest there is the newest of
/// all), then the lake's last two and ten days.
fn as_of_windows(state: &AppState, station: &Station, t: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let mut starts = Vec::new();
    if let Some(h) = state.live.hot.horizon(&station.code).filter(|h| *h < t) {
        starts.extend([(t - Duration::hours(3)).max(h), h]);
    }
    starts.extend([t - Duration::days(2), t - Duration::days(10)]);
    starts.dedup();
    starts
}

/// [`latest`] as the service would have answered at `t`: the newest observation known
/// then (optionally: whose day has the given report value), looked for in the two days
/// before `t`, then ten, then (any observation) anywhere before it.
async fn latest_as_of(
    state: &AppState,
    station: &Station,
    kind: Option<ObservationType>,
    t: DateTime<Utc>,
) -> ApiResult<ObservationV2> {
    let Some(kind) = kind else {
        return match latest_observation_as_of(state, station, t).await? {
            Some((m, r)) => Ok(ObservationV2::new(&m, station, r.as_ref_pair())),
            None => Err(no_observation(station)),
        };
    };
    for from in as_of_windows(state, station, t) {
        let obs = history_as_of(state, station, from, t + Duration::hours(1), t).await?;
        if let Some(o) = newest(station, obs, |o| kind.present(o)) {
            return Ok(o);
        }
    }
    Err(ApiError::not_found(
        format!("No observation for {}", station.code),
        format!("no observation of the 10 days before as_of whose day has a {} value", kind.name()),
    ))
}

/// The newest of `obs` (by [`latest_key`]) that `wanted` keeps, as answered.
fn newest(
    station: &Station,
    obs: Vec<(Metar, WithReports)>,
    wanted: impl Fn(&ObservationV2) -> bool,
) -> Option<ObservationV2> {
    let mut obs = obs;
    obs.sort_by(|a, b| latest_key(&a.0).cmp(&latest_key(&b.0)));
    obs.iter().rev().map(|(m, r)| ObservationV2::new(m, station, r.as_ref_pair())).find(wanted)
}

/// [`latest_observation`] as the service would have answered at `t`: the newest
/// observation known then, however old; `None` when it knew none.
pub async fn latest_observation_as_of(
    state: &AppState,
    station: &Station,
    t: DateTime<Utc>,
) -> ApiResult<Option<(Metar, WithReports)>> {
    let best = |obs: Vec<(Metar, WithReports)>| obs.into_iter().max_by(|a, b| latest_key(&a.0).cmp(&latest_key(&b.0)));
    for from in as_of_windows(state, station, t) {
        if let Some(found) = best(history_as_of(state, station, from, t + Duration::hours(1), t).await?) {
            return Ok(Some(found));
        }
    }
    // Older than ten days: the newest row available by `t`, however old.
    let mut p = Bindings::new();
    let sql = format!(
        "SELECT max(observation_time) FROM observations WHERE station_code = {} AND available_at <= {} AND date <= {}",
        p.str(&station.code),
        p.time(t),
        p.partition_date((t + Duration::hours(1)).date_naive())
    );
    let batches = p.collect(&state.live.ctx, &sql).await?;
    let found = batches.iter().find(|b| b.num_rows() > 0).and_then(|b| {
        let c = b.column(0).as_primitive_opt::<TimestampMicrosecondType>()?;
        c.is_valid(0).then(|| c.value(0))
    });
    match found.and_then(DateTime::from_timestamp_micros) {
        Some(at) => Ok(best(history_as_of(state, station, at, at, t).await?)),
        None => Ok(None),
    }
}

/// The latest observation (optionally: the latest whose day has the given report value).
async fn latest(state: &AppState, station: &Station, kind: Option<ObservationType>) -> ApiResult<ObservationV2> {
    let Some(kind) = kind else {
        return match latest_observation(state, station).await? {
            Some((m, r)) => Ok(ObservationV2::new(&m, station, r.as_ref_pair())),
            None => Err(no_observation(station)),
        };
    };
    let now = state.now();
    let wanted = |o: &ObservationV2| kind.present(o);
    // Recent first (hot ∪ lake over two days), then a wider lake window.
    for back in [Duration::days(2), Duration::days(10)] {
        let obs = history(state, station, now - back, now + Duration::hours(1)).await?;
        if let Some(o) = obs.iter().rev().map(|(m, r)| ObservationV2::new(m, station, r.as_ref_pair())).find(wanted) {
            return Ok(o);
        }
    }
    Err(ApiError::not_found(
        format!("No observation for {}", station.code),
        format!("no observation of the last 10 days whose day has a {} value", kind.name()),
    ))
}

/// The 404 of a station the lake has never seen an observation of.
pub fn no_observation(station: &Station) -> ApiError {
    ApiError::not_found(
        format!("No observation for {}", station.code),
        "neither the live state nor the lake holds any observation of this station",
    )
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
    let files = state.lake().snapshot_files("observations").await.map_err(ApiError::internal)?;
    let mut dates: Vec<NaiveDate> = files
        .map(|(_, files)| files)
        .unwrap_or_default()
        .iter()
        .filter_map(|f| f.partition_values.get("date").cloned().flatten())
        .filter_map(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok())
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
        let mut p = Bindings::new();
        let sql = format!(
            "SELECT max(observation_time) FROM observations WHERE station_code = {} AND date >= {} AND date <= {}",
            p.str(&station.code),
            p.partition_date(oldest),
            p.partition_date(newest)
        );
        let batches = p.collect(&state.live.ctx, &sql).await?;
        let found = batches.iter().find(|b| b.num_rows() > 0).and_then(|b| {
            let t = b.column(0).as_primitive_opt::<TimestampMicrosecondType>()?;
            t.is_valid(0).then(|| t.value(0))
        });
        let Some(t) = found.and_then(DateTime::from_timestamp_micros) else { continue };
        let (obs, mut reports) =
            load_reported_window(&state.live.ctx, Some(&station.code), t, t + Duration::seconds(1), None).await?;
        state.live.hot.read(&station.code, |h| reports.extend(h.reports.iter().cloned()));
        let best = obs.into_iter().max_by(|a, b| latest_key(a).cmp(&latest_key(b)));
        return Ok(best.map(|m| attach(station, m, &reports)));
    }
    Ok(None)
}
