//! The Iowa Environmental Mesonet request services:
//! - `GET /cgi-bin/request/asos.py?station=CVG&data=metar&sts=..&ets=..&tz=Etc/UTC&format=onlytdf`
//!   (or `year1..minute1`, `year2..minute2`): every report of the window in IEM's TSV
//!   export (`station valid metar`, US ids without their K), routine METARs, SPECIs and
//!   the 5-minute HF-METARs ending in `MADISHF`, as `data/real/metar/IEM_KCVG_*.tsv`;
//! - `GET /cgi-bin/request/asos1min.py?station=CVG&vars=tmpf&sts=..&ets=..&sample=1min`:
//!   one-minute `tmpf` of US (ASOS) stations, `M` in sensor gaps.
//!
//! Windows are half-open `[sts, ets)` and end at the simulator's `now`: IEM has a report
//! as soon as it is observed (the feeds ask with overlapping windows anyway).

use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use std::fmt::Write as _;

use super::super::climate::minute_index;
use super::super::observations::{iem_tsv, onemin_rows, reports};
use super::{parse_time, query_pairs, site, station, value, values, Refusal, SimState};
use crate::catalog::Station;

/// The ASOS/METAR export's path.
pub const ASOS_PATH: &str = "/cgi-bin/request/asos.py";
/// The one-minute export's path.
pub const ONEMIN_PATH: &str = "/cgi-bin/request/asos1min.py";

/// The longest window one request may ask for (IEM throttles long ones; the feeds ask for
/// hours, backfills for days).
const MAX_WINDOW_DAYS: i64 = 31;

/// `asos.py`: the TSV of every report of the requested stations in the window.
pub async fn asos(State(sim): State<SimState>, RawQuery(q): RawQuery) -> Response {
    let pairs = query_pairs(q.as_deref());
    let request = match Request::read(&pairs, sim.now()) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let seed = sim.seed();
    blocking(move || asos_tsv(&request.stations, request.from, request.to, seed), "text/plain; charset=utf-8").await
}

/// `asos1min.py`: the one-minute temperatures of the requested US stations.
pub async fn asos1min(State(sim): State<SimState>, RawQuery(q): RawQuery) -> Response {
    let pairs = query_pairs(q.as_deref());
    let request = match Request::read(&pairs, sim.now()) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    if let Some(v) = values(&pairs, "vars").into_iter().find(|v| *v != "tmpf") {
        return Refusal::bad_request(format!("vars={v}: the simulator serves tmpf only")).into_response();
    }
    let seed = sim.seed();
    blocking(move || onemin_csv(&request.stations, request.from, request.to, seed), "text/csv").await
}

async fn blocking(work: impl FnOnce() -> String + Send + 'static, content_type: &'static str) -> Response {
    match tokio::task::spawn_blocking(work).await {
        Ok(body) => ([("content-type", content_type)], body).into_response(),
        Err(e) => Refusal(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// A checked request: known stations and a window ending by `now`.
#[derive(Debug)]
struct Request {
    stations: Vec<&'static Station>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
}

impl Request {
    fn read(pairs: &[(String, String)], now: DateTime<Utc>) -> Result<Request, Refusal> {
        let ids = values(pairs, "station");
        if ids.is_empty() {
            return Err(Refusal::bad_request("station is required"));
        }
        let mut stations = Vec::new();
        for id in ids {
            stations.push(station(id).ok_or_else(|| Refusal::bad_request(format!("unknown station {id:?}")))?);
        }
        let from = window_end(pairs, "sts", "1")?;
        let to = window_end(pairs, "ets", "2")?;
        if to <= from {
            return Err(Refusal::bad_request("the window is empty: ets must be after sts"));
        }
        if to - from > Duration::days(MAX_WINDOW_DAYS) {
            return Err(Refusal::bad_request(format!("windows are limited to {MAX_WINDOW_DAYS} days")));
        }
        Ok(Request { stations, from, to: to.min(now) })
    }
}

/// One end of the window: `sts`/`ets`, else `yearN`, `monthN`, `dayN`, `hourN`, `minuteN`.
fn window_end(pairs: &[(String, String)], iso_key: &str, n: &str) -> Result<DateTime<Utc>, Refusal> {
    if let Some(v) = value(pairs, iso_key) {
        return parse_time(v).ok_or_else(|| Refusal::bad_request(format!("{iso_key}={v:?} is not a UTC time")));
    }
    let part = |name: &str, default: Option<u32>| -> Result<u32, Refusal> {
        let key = format!("{name}{n}");
        match value(pairs, &key) {
            None => default.ok_or_else(|| Refusal::bad_request(format!("{iso_key} or {key} is required"))),
            Some(v) => v.parse().map_err(|_| Refusal::bad_request(format!("{key}={v:?} is not a number"))),
        }
    };
    let (y, mo, d) = (part("year", None)?, part("month", None)?, part("day", None)?);
    let (h, mi) = (part("hour", Some(0))?, part("minute", Some(0))?);
    NaiveDate::from_ymd_opt(y as i32, mo, d)
        .and_then(|date| date.and_hms_opt(h, mi, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| Refusal::bad_request(format!("{y}-{mo}-{d} {h}:{mi} is not a time")))
}

/// The IEM TSV of every report of `stations` observed in `[from, to)`.
pub fn asos_tsv(stations: &[&'static Station], from: DateTime<Utc>, to: DateTime<Utc>, seed: u64) -> String {
    let mut out = String::new();
    for (i, &st) in stations.iter().enumerate() {
        let s = site(st, seed, from, to, to);
        // Minutes `after < m <= until`: from the minute before `from`, to the one before `to`.
        let r = reports(&s, minute_index(from) - 1, minute_index(to) - 1);
        let tsv = iem_tsv(&st.code, &r, from, to);
        if i == 0 {
            out = tsv;
        } else {
            // One header for the whole export, as IEM writes several stations.
            out.extend(tsv.split_once("station\tvalid\tmetar\n").map(|(_, rows)| rows));
        }
    }
    out
}

/// IEM's one-minute CSV (`station,station_name,valid(UTC),tmpf`) of the US stations among
/// `stations` over `[from, to)`; IEM has no one-minute data of other stations.
pub fn onemin_csv(stations: &[&'static Station], from: DateTime<Utc>, to: DateTime<Utc>, seed: u64) -> String {
    let mut s = String::from("station,station_name,valid(UTC),tmpf\n");
    for &st in stations.iter().filter(|st| st.is_us()) {
        let site = site(st, seed, from, to, to);
        let id = st.code.strip_prefix('K').unwrap_or(&st.code);
        let name = st.name.replace(',', " ");
        for row in onemin_rows(&site, minute_index(from), minute_index(to) - 1) {
            let t = row.time.format("%Y-%m-%d %H:%M");
            match row.temp_f {
                Some(f) => writeln!(s, "{id},{name},{t},{f}"),
                None => writeln!(s, "{id},{name},{t},M"),
            }
            .unwrap_or_default();
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::types::{Metar, OneMinute, ReportKind};
    use crate::demo::{generate_station, measured_f, DemoConfig};
    use crate::ingest::{Format, IngestOptions, Records};
    use crate::units::f_to_c;
    use chrono::TimeZone;

    fn utc(d: u32, h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 4, d, h, m, 0).unwrap()
    }

    fn stations(codes: &[&str]) -> Vec<&'static Station> {
        codes.iter().map(|c| station(c).unwrap()).collect()
    }

    fn metars(body: &str) -> Vec<Metar> {
        let d = Format::Metar.decode(body.as_bytes(), &IngestOptions::default());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        match d.records {
            Records::Observations(v) => v,
            _ => panic!("not observations"),
        }
    }

    #[test]
    fn asos_tsv_carries_hf_metars_with_the_measured_whole_degrees() {
        let (from, to) = (utc(2, 12, 0), utc(2, 15, 0));
        let body = asos_tsv(&stations(&["KNYC", "EGLC"]), from, to, 77);
        assert_eq!(body.matches("station\tvalid\tmetar").count(), 1);
        assert!(body.contains("\nNYC\t2026-04-02 12:00\t"), "US ids lose their K as in IEM's export");
        let m = metars(&body);
        assert!(m.iter().all(|r| r.time >= from && r.time < to));
        let hf: Vec<&Metar> = m.iter().filter(|r| r.kind == Some(ReportKind::HfMetar)).collect();
        assert_eq!(hf.len(), 36, "every 5 minutes for 3 hours");
        let nyc = station("KNYC").unwrap();
        for r in &hf {
            let Some(f) = measured_f(nyc, r.time, 77) else { continue };
            // An HF-METAR restates the whole °C of the measured °F.
            let whole = (f_to_c(f64::from(f)) * 10.0).round() / 10.0;
            assert_eq!(r.temp_whole_c, Some(crate::units::round_half_away(whole) as i32), "{r:?}");
        }
        assert!(m.iter().any(|r| r.station == "EGLC" && r.kind == Some(ReportKind::Metar)));
    }

    #[test]
    fn live_answers_continue_the_batch_series_exactly() {
        // The demo lake and the simulator write the same report for the same minute.
        let now = utc(2, 15, 0);
        let cfg = DemoConfig {
            end_date: NaiveDate::from_ymd_opt(2026, 4, 1).unwrap(),
            days: 1,
            stations: vec!["KLAX".into()],
            seed: 77,
            now,
            forecasts: false,
            onemin: false,
        };
        let batch = generate_station(&cfg, "KLAX").metar_tsv;
        let live = asos_tsv(&stations(&["KLAX"]), now - Duration::hours(3), now, 77);
        let rows: Vec<&str> = live.lines().filter(|l| l.starts_with("LAX\t")).collect();
        assert!(rows.len() > 36, "{}", rows.len());
        for row in rows {
            assert!(batch.contains(row), "live report not in the batch: {row}");
        }
    }

    #[test]
    fn onemin_csv_is_the_measured_series_of_us_stations() {
        let (from, to) = (utc(2, 12, 0), utc(2, 13, 0));
        let body = onemin_csv(&stations(&["KMDW", "EGLC"]), from, to, 5);
        assert!(body.starts_with("station,station_name,valid(UTC),tmpf\nMDW,"), "{body:.80}");
        let d = Format::Onemin.decode(body.as_bytes(), &IngestOptions::default());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let Records::OneMinute(rows) = d.records else { panic!("not one-minute rows") };
        assert_eq!(rows.len(), 60, "KMDW only: EGLC has no one-minute data");
        let mdw = station("KMDW").unwrap();
        for OneMinute { station, time, temp_f } in &rows {
            assert_eq!(station, "KMDW");
            assert_eq!(*temp_f, measured_f(mdw, *time, 5).map(f64::from), "{time}");
        }
    }

    #[test]
    fn requests_are_checked_precisely() {
        let now = utc(2, 15, 0);
        let read = |q: &str| Request::read(&query_pairs(Some(q)), now).map_err(|e| e.1);
        let r = read("station=CVG&station=MDW&sts=2026-04-02T12:00Z&ets=2026-04-03T00:00Z");
        assert_eq!(r.unwrap_err(), "unknown station \"CVG\"");
        let r = read("station=MDW&year1=2026&month1=4&day1=2&hour1=12&year2=2026&month2=4&day2=3").unwrap();
        assert_eq!((r.from, r.to), (utc(2, 12, 0), now), "the window ends at now");
        assert_eq!(read("sts=2026-04-02T12:00Z").unwrap_err(), "station is required");
        assert_eq!(read("station=MDW&sts=x&ets=y").unwrap_err(), "sts=\"x\" is not a UTC time");
        assert_eq!(read("station=MDW&ets=2026-04-02T12:00Z").unwrap_err(), "sts or year1 is required");
        assert!(read("station=MDW&sts=2026-04-02T12:00Z&ets=2026-04-02T11:00Z").unwrap_err().contains("empty"));
        assert!(read("station=MDW&sts=2026-01-01T00:00Z&ets=2026-04-02T00:00Z").unwrap_err().contains("31 days"));
        assert!(read("station=MDW&year1=2026&month1=13&day1=1&year2=2026&month2=4&day2=3")
            .unwrap_err()
            .contains("is not a time"));
    }
}
