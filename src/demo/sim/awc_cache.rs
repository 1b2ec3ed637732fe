//! aviationweather.gov's bulk cache, `GET /data/cache/metars.cache.csv.gz`: every
//! station's METARs and SPECIs received in the last [`CACHE_WINDOW_MIN`] minutes, as
//! AWC's gzipped CSV (five preamble lines, `N results`, then the header and one row per
//! report: `raw_text` without its keyword, `observation_time`, `metar_type`, ...).
//!
//! The window is an assumption: AWC rewrites the file every minute with the recent
//! reports of every station; the feed polls it more often than the window, and the lake
//! stores a report once.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use std::fmt::Write as _;

use super::super::climate::minute_index;
use super::super::observations::reports;
use super::awc::RECEIPT_DELAY_MIN;
use super::gzip::gzip_stored;
use super::{site, Refusal, SimState};
use crate::catalog::{Catalog, Station};
use crate::decode::metar::parse_metar;
use crate::decode::types::ReportKind;

pub const CACHE_PATH: &str = "/data/cache/metars.cache.csv.gz";

/// Minutes of reports the cache file holds.
pub const CACHE_WINDOW_MIN: i64 = 60;

/// AWC's column list (the sky cover/base pair repeats four times).
const HEADER: &str = "raw_text,station_id,observation_time,latitude,longitude,temp_c,dewpoint_c,wind_dir_degrees,wind_speed_kt,wind_gust_kt,visibility_statute_mi,altim_in_hg,sea_level_pressure_mb,corrected,auto,auto_station,maintenance_indicator_on,no_signal,lightning_sensor_off,freezing_rain_sensor_off,present_weather_sensor_off,wx_string,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,flight_category,three_hr_pressure_tendency_mb,maxT_c,minT_c,maxT24hr_c,minT24hr_c,precip_in,pcp3hr_in,pcp6hr_in,pcp24hr_in,snow_in,vert_vis_ft,metar_type,elevation_m";

/// The handler.
pub async fn cache(State(sim): State<SimState>) -> Response {
    let (now, seed) = (sim.now(), sim.seed());
    match tokio::task::spawn_blocking(move || gzip_stored(cache_csv(Catalog::global().all(), now, seed).as_bytes()))
        .await
    {
        Ok(body) => ([("content-type", "application/x-gzip")], body).into_response(),
        Err(e) => Refusal(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// The cache file's CSV (before gzip) for `stations` at `now`.
pub fn cache_csv(stations: &'static [Station], now: DateTime<Utc>, seed: u64) -> String {
    let received_by = now - Duration::minutes(RECEIPT_DELAY_MIN);
    let from = received_by - Duration::minutes(CACHE_WINDOW_MIN);
    let mut rows = String::new();
    let mut n = 0;
    for st in stations {
        let s = site(st, seed, from, received_by, received_by);
        for r in reports(&s, minute_index(from), minute_index(received_by)).into_iter().rev() {
            if r.kind == ReportKind::HfMetar {
                continue;
            }
            let text = r.text.strip_prefix("SPECI ").unwrap_or(&r.text);
            let m = parse_metar(&r.text, r.time).ok();
            let num = |v: Option<f64>| v.map(|v| format!("{v:.1}")).unwrap_or_default();
            let temp = m.as_ref().and_then(|m| m.tgroup_temp_c.or(m.temp_whole_c.map(f64::from)));
            let dew = m.as_ref().and_then(|m| m.tgroup_dew_c.or(m.dew_whole_c.map(f64::from)));
            let kind = if r.kind == ReportKind::Speci { "SPECI" } else { "METAR" };
            let _ = writeln!(
                rows,
                "{text},{},{},{:.4},{:.4},{},{}{},{kind},{:.0}",
                st.code,
                r.time.format("%Y-%m-%dT%H:%M:%SZ"),
                st.latitude,
                st.longitude,
                num(temp),
                num(dew),
                ",".repeat(35),
                st.elevation_ft * 0.3048
            );
            n += 1;
        }
    }
    format!("No errors\nNo warnings\n12 ms\ndata source=metars\n{n} results\n{HEADER}\n{rows}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::{Format, IngestOptions, Records};
    use chrono::TimeZone;

    #[test]
    fn the_cache_csv_after_its_preamble_decodes_to_every_stations_recent_reports() {
        let now = Utc.with_ymd_and_hms(2026, 4, 2, 15, 10, 0).unwrap();
        let csv = cache_csv(Catalog::global().all(), now, 77);
        let mut lines = csv.lines();
        assert_eq!(lines.nth(4).unwrap().split(' ').nth(1), Some("results"));
        let header = lines.next().unwrap();
        assert_eq!(header.split(',').count(), 44);
        assert!(csv.lines().skip(6).all(|l| l.split(',').count() == 44), "every row has AWC's 44 columns");
        // The feed hands the CSV from its header on to the METAR decoder.
        let body: String = csv.lines().skip(5).map(|l| format!("{l}\n")).collect();
        let d = Format::Metar.decode(body.as_bytes(), &IngestOptions::default());
        assert!(d.errors.is_empty(), "{:?}", &d.errors[..d.errors.len().min(3)]);
        let Records::Observations(m) = d.records else { panic!("not observations") };
        let n: usize = csv.lines().nth(4).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert_eq!(m.len(), n);
        // Every catalog station reports at least once an hour.
        let mut stations: Vec<&str> = m.iter().map(|r| r.station.as_str()).collect();
        stations.sort();
        stations.dedup();
        assert_eq!(stations.len(), Catalog::global().len());
        assert!(m.iter().all(|r| r.time > now - Duration::minutes(63) && r.time <= now - Duration::minutes(2)));
        assert!(m.iter().all(|r| r.kind != Some(ReportKind::HfMetar)));
    }
}
