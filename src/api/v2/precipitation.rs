//! `GET /api/v2/precipitation.php` (spec 4.3, 2.7): this month's total so far = the
//! official month-to-date of the latest CLI (through yesterday) + today's live P-groups.
//!
//! Today's total: each report's P group is the accumulation since the last routine
//! (hourly) report, which the 5-minute reports repeat as it grows. Reports are grouped by
//! accumulation hour (a routine report at :51-:52 closes its hour; a report after it opens
//! the next one: label = LST hour of `time + 8 min`), the hour's maximum is its total, and
//! today's total is the sum over hours. A P0000 is a trace: flagged, never added.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{Datelike, Duration, FixedOffset};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::observations::{history, history_as_of};
use crate::api::auth::Caller;
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::decode::types::{DailyKind, DailyReport};
use crate::lake::window::load_window;
use crate::time::{day_window, fmt_iso_utc, standard_date, DayClock};

/// Query of `GET /api/v2/precipitation.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PrecipitationQuery {
    /// A precipitation station (spec 2.10)
    #[param(required = true, value_type = String)]
    pub station_code: Option<String>,
}

/// The precipitation summary (spec 2.7): this month's total so far at one station.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct Precipitation {
    pub station_code: String,
    pub station_name: String,
    /// IANA zone.
    pub timezone: String,
    /// The fixed UTC offset of Local Standard Time, in hours.
    pub timezone_offset_hours: i32,
    /// Today in Local Standard Time, `YYYY-MM-DD`.
    pub today_local_date: String,
    /// 1-12, of `today_local_date`.
    pub month: u32,
    pub year: i32,
    /// Official month-to-date from the latest CLI of this month, through yesterday (0 before
    /// the month's first CLI).
    pub official_mtd: f64,
    /// Today's total from the live P-groups since Local Standard Time midnight.
    pub today_precip: f64,
    /// official_mtd + today_precip.
    pub total_mtd: f64,
    /// A trace (P0000) was reported today; traces are not added.
    pub has_trace: bool,
    /// The last trace report's time, Local Standard Time `YYYY-MM-DD HH:MM:SS`; null without one.
    pub last_trace_time: Option<String>,
    /// The day of the CLI used, `YYYY-MM-DD`; null when none this month.
    pub cli_date: Option<String>,
    /// When that CLI was issued, ISO 8601 UTC; null when unknown or no CLI.
    pub cli_issued_at: Option<String>,
    /// Per accumulation hour (`YYYY-MM-DD HH`, Local Standard Time), its largest report.
    pub today_hourly_max: BTreeMap<String, f64>,
    /// Response time, ISO 8601 UTC.
    pub timestamp: String,
    /// Always `inches`.
    pub units: String,
}

#[utoipa::path(
    get,
    path = "/api/v2/precipitation.php",
    tag = "observations",
    operation_id = "getPrecipitation",
    summary = "Beta: this month's precipitation so far at a US station",
    description = "The current month only (Local Standard Time): the official month-to-date of the latest Daily \
                   Climate Report (through yesterday) plus today's live hourly P-groups (each accumulation hour's \
                   largest report, summed; a trace is flagged, not added). For the precipitation stations of spec \
                   2.10; any other catalog station is a 400.",
    params(PrecipitationQuery, crate::api::as_of::AsOfQuery),
    responses(
        (status = 200, description = "object 2.7 for the current month", body = Precipitation),
        (status = 400, description = "missing parameter, unknown station, not a precipitation station, or a parameter given twice", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(_caller): Extension<Caller>,
    as_of: crate::api::as_of::AsOf,
    QueryParams(q): QueryParams<PrecipitationQuery>,
) -> ApiResult<Response> {
    let station = params::station("station_code", &q.station_code)?;
    if !station.precipitation {
        return Err(ApiError::bad_request(
            format!("{} is not a precipitation station", station.code),
            "the precipitation endpoint serves KNYC, KLAX, KMDW, KSFO, KAUS, KMIA, KDFW, KHOU, KDEN, KBKF, KSEA, KPHL, \
             KLAS, KPHX, KSAT, KDCA, KCLT, KBOS, KBNA, KATL, KJAX, KOKC, KDTW, KMSP, KMSY",
        ));
    }
    // As of a time: that moment is now, and only what was known then counts.
    let now = as_of.now(&state);
    let today = standard_date(station.timezone, now);
    let off: FixedOffset = station.standard_offset_on(today);
    let w = day_window(station.timezone, DayClock::Standard, today);

    // Official month-to-date: the best CLI of the most recent day before today in this month.
    let month_start = today.with_day(1).unwrap_or(today);
    let reports = match as_of.0 {
        None => {
            let (_, _, mut reports) =
                load_window(&state.live.ctx, Some(&station.code), w.start - Duration::days(3), now, None).await?;
            state.live.hot.read(&station.code, |h| reports.extend(h.reports.iter().cloned()));
            reports
        }
        Some(t) => state.live.known_window(&station.code, w.start - Duration::days(3), now, t, false).await?.2,
    };
    let clis: Vec<DailyReport> = reports.into_iter().filter(|r| r.kind == DailyKind::Cli).collect();
    let cli = clis
        .iter()
        .filter(|r| r.date < today && r.date >= month_start && r.precip_mtd_in.is_some())
        .max_by_key(|r| (r.date, r.precedence()));
    let official = cli.and_then(|r| r.precip_mtd_in).unwrap_or(0.0);

    // Today's live P-groups.
    let obs = match as_of.0 {
        None => history(&state, station, w.start, now.min(w.end)).await?,
        Some(t) => history_as_of(&state, station, w.start, now.min(w.end), t).await?,
    };
    let mut hourly: BTreeMap<String, f64> = BTreeMap::new();
    let mut last_trace = None;
    for (m, _) in &obs {
        let Some(p) = m.precip_hour_in else { continue };
        let label = (m.time + Duration::minutes(8)).with_timezone(&off).format("%Y-%m-%d %H").to_string();
        let e = hourly.entry(label).or_insert(0.0);
        *e = e.max(p);
        if m.precip_trace {
            last_trace = Some(m.time.with_timezone(&off).format("%Y-%m-%d %H:%M:%S").to_string());
        }
    }
    let today_precip = round2(hourly.values().sum());
    let offset_min = off.local_minus_utc() / 60;
    let body = Json(Precipitation {
        station_code: station.code.clone(),
        station_name: station.name.clone(),
        timezone: station.timezone.name().to_string(),
        timezone_offset_hours: offset_min / 60,
        today_local_date: today.to_string(),
        month: today.month(),
        year: today.year(),
        official_mtd: round2(official),
        today_precip,
        total_mtd: round2(official + today_precip),
        has_trace: last_trace.is_some(),
        last_trace_time: last_trace,
        cli_date: cli.map(|r| r.date.to_string()),
        cli_issued_at: cli.and_then(|r| r.issued_at).map(fmt_iso_utc),
        today_hourly_max: hourly.into_iter().map(|(k, v)| (k, round2(v))).collect(),
        timestamp: fmt_iso_utc(state.now()),
        units: "inches".to_string(),
    })
    .into_response();
    Ok(as_of.echo(body))
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
