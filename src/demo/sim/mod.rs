//! The demo's simulated public sources: one in-process HTTP server (axum on 127.0.0.1)
//! answering the real services' paths in their real formats, so `serve --demo` runs the
//! same feeds (`src/feeds`) a production deployment runs, against weather that continues
//! the demo lake's history.
//!
//! Every answer is a pure function of `(seed, station, now)`: the reports, products and
//! forecasts come from the demo generators ([`super::observations`], [`super::reports`],
//! [`super::forecasts`]) over the same truth the batch generator wrote, and nothing is
//! served before the time it would really be available (a METAR from its observation
//! minute, a CLI from its issue time). `now` is the simulator's [`Clock`]: the system
//! clock in `serve --demo`, a manual one in tests, so a test crosses hours in an instant.
//!
//! Endpoints, each in the module of its service:
//! - [`awc`]: aviationweather.gov `/api/data/metar` (JSON: hourly METARs and SPECIs);
//!   [`awc_cache`]: its bulk `/data/cache/metars.cache.csv.gz`.
//! - [`iem`]: IEM `/cgi-bin/request/asos.py` (TSV with 5-minute HF-METARs) and
//!   `/cgi-bin/request/asos1min.py` (one-minute `tmpf`), US stations for the latter.
//! - [`nws`]: api.weather.gov CLI and DSM product lists and products, `/points` and the
//!   gridpoint hourly forecast.
//! - [`runs`]: Open-Meteo's forecast / single-run API (gridded models) and the MOS/NBM
//!   bulletins, a new run on each model's cycle.
//!
//! Malformed requests (unknown station, bad time, missing parameter) get the 4xx a real
//! service gives, with the reason in the body; the simulator never panics on input.

pub mod awc;
pub mod awc_cache;
pub mod gzip;
pub mod iem;
pub mod nws;
pub mod runs;
pub mod sources;

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, Duration, NaiveDateTime, Utc};

use super::site::Site;
use crate::catalog::{Catalog, Station};
use crate::clock::Clock;

pub use sources::demo_sources;

/// History a report needs behind it (6- and 24-hour groups, precipitation totals).
const HISTORY_H: i64 = 25;

/// What every handler reads.
#[derive(Clone)]
pub struct SimState {
    clock: Arc<dyn Clock>,
    seed: u64,
    /// The simulator's own base URL (`/points` answers name the forecast URL on it).
    base_url: String,
}

impl SimState {
    pub fn new(clock: Arc<dyn Clock>, seed: u64, base_url: String) -> Self {
        SimState { clock, seed, base_url }
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

/// A running simulator; stops when dropped.
#[derive(Debug)]
pub struct Simulator {
    base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Simulator {
    /// Binds 127.0.0.1 on a free port and serves every endpoint under `clock` and `seed`
    /// (the seed the demo lake was generated with).
    pub async fn start(clock: Arc<dyn Clock>, seed: u64) -> std::io::Result<Simulator> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let app = router(SimState::new(clock, seed, base_url.clone()));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "demo source simulator stopped");
            }
        });
        tracing::info!(%base_url, "demo source simulator listening");
        Ok(Simulator { base_url, task })
    }

    /// `http://127.0.0.1:PORT`, the base URL of every simulated service.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Every simulated endpoint, on the real services' paths.
pub fn router(state: SimState) -> axum::Router {
    axum::Router::new()
        .route(awc::METAR_PATH, get(awc::metar))
        .route(awc_cache::CACHE_PATH, get(awc_cache::cache))
        .route(iem::ASOS_PATH, get(iem::asos))
        .route(iem::ONEMIN_PATH, get(iem::asos1min))
        .route(nws::PRODUCT_LIST_PATH, get(nws::product_list))
        .route(nws::PRODUCT_PATH, get(nws::product))
        .route(nws::POINTS_PATH, get(nws::points))
        .route(nws::HOURLY_PATH, get(nws::hourly))
        .route(runs::OPEN_METEO_PATH, get(runs::open_meteo))
        .route(runs::MOS_PATH, get(runs::mos))
        .with_state(state)
}

/// A refused request: status and a one-line reason, as plain text.
#[derive(Debug)]
pub struct Refusal(pub StatusCode, pub String);

impl Refusal {
    pub fn bad_request(reason: impl Into<String>) -> Self {
        Refusal(StatusCode::BAD_REQUEST, reason.into())
    }

    pub fn not_found(reason: impl Into<String>) -> Self {
        Refusal(StatusCode::NOT_FOUND, reason.into())
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.0, [("content-type", "text/plain; charset=utf-8")], self.1).into_response()
    }
}

/// The query string's pairs, repeated keys kept (`station=A&station=B`).
pub fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()).into_owned().collect()
}

/// Every value of `key`, comma lists split (`ids=A,B` and `ids=A&ids=B` alike).
pub fn values<'a>(pairs: &'a [(String, String)], key: &str) -> Vec<&'a str> {
    pairs
        .iter()
        .filter(|(k, _)| k == key)
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect()
}

/// The one value of `key`, if given.
pub fn value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.trim())
}

/// A catalog station by ICAO id, or by the 3-letter id US services use (`NYC` for KNYC).
pub fn station(id: &str) -> Option<&'static Station> {
    let catalog = Catalog::global();
    let id = id.trim().to_ascii_uppercase();
    catalog.lookup(&id).or_else(|| (id.len() == 3).then(|| catalog.lookup(&format!("K{id}"))).flatten())
}

/// The station's series over `from..=to`, with the history its reports need, and hour
/// states through `hours_until` (forecasts).
pub fn site(
    st: &'static Station,
    seed: u64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    hours_until: DateTime<Utc>,
) -> Site {
    Site::new(st, seed, from - Duration::hours(HISTORY_H), to.max(from), hours_until)
}

/// A UTC time as the services write it in query strings: `2026-04-02T15:00Z`,
/// `2026-04-02T15:00:00Z`, `2026-04-02T15:00:00+00:00` or `2026-04-02 15:00`.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    let bare = s.strip_suffix('Z').unwrap_or(s);
    ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(bare, f).ok())
        .map(|t| t.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn query_values_split_lists_and_keep_repeats() {
        let p = query_pairs(Some("ids=KNYC,KMDW&station=CVG&station=DSM&hours=2"));
        assert_eq!(values(&p, "ids"), ["KNYC", "KMDW"]);
        assert_eq!(values(&p, "station"), ["CVG", "DSM"]);
        assert_eq!(value(&p, "hours"), Some("2"));
        assert_eq!(value(&p, "nope"), None);
        assert!(query_pairs(None).is_empty());
    }

    #[test]
    fn stations_by_icao_or_us_three_letter_id_and_times_in_service_styles() {
        assert_eq!(station("knyc").unwrap().code, "KNYC");
        assert_eq!(station("CVG").map(|s| s.code.as_str()), None, "not in the catalog");
        assert_eq!(station("MDW").unwrap().code, "KMDW");
        assert_eq!(station("EGLC").unwrap().code, "EGLC");
        assert!(station("").is_none() && station("K").is_none());
        let t = Utc.with_ymd_and_hms(2026, 4, 2, 15, 0, 0).unwrap();
        for s in ["2026-04-02T15:00Z", "2026-04-02T15:00:00Z", "2026-04-02T15:00:00+00:00", "2026-04-02 15:00"] {
            assert_eq!(parse_time(s), Some(t), "{s}");
        }
        assert_eq!(parse_time("yesterday"), None);
    }
}
