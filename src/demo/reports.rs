//! Official daily products of US stations: the ASOS Daily Summary Message (DSM, sent just
//! after midnight Local Standard Time, preliminary) and the NWS Daily Climate Report (CLI,
//! final, issued the next morning; for the current day an afternoon preliminary "VALID
//! TODAY AS OF 4 PM" report).
//!
//! Both read the station's one-minute °F series over the LST day, sensor gaps excluded,
//! so the official high is exactly the highest one-minute value a client could have seen
//! and never below a METAR of the day. Times are printed in LST, as the products do.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc};

use super::climate::{minute_index, minute_time};
use super::noise::{self, Stream};
use super::site::{Precip, Site};
use crate::decode::climate_report::encode_cli;
use crate::decode::dsm::encode_dsm;
use crate::decode::types::{DailyKind, DailyReport};
use crate::time::{day_window, DayClock};

/// LST hour the preliminary afternoon CLI is valid through.
const PRELIM_VALID_HOUR: u32 = 16;

/// The UTC minute range `[first, last]` of a Local Standard Time day.
fn day_minutes(site: &Site, date: NaiveDate) -> (i64, i64) {
    let w = day_window(site.station.timezone, DayClock::Standard, date);
    (minute_index(w.start), minute_index(w.end) - 1)
}

/// A UTC minute as Local Standard Time.
fn lst(site: &Site, minute: i64) -> NaiveDateTime {
    let t = minute_time(minute);
    let off = site.station.standard_offset_on(t.date_naive()).local_minus_utc();
    t.naive_utc() + Duration::seconds(i64::from(off))
}

/// A Local Standard Time instant as UTC.
fn utc_of_lst(site: &Site, local: NaiveDateTime) -> DateTime<Utc> {
    let off = site.station.standard_offset_on(local.date()).local_minus_utc();
    (local - Duration::seconds(i64::from(off))).and_utc()
}

/// Minutes of jitter in `0..span` for an issue time (offices are not punctual).
fn issue_jitter(site: &Site, date: NaiveDate, salt: i64, span: f64) -> Duration {
    let u = noise::unit(site.climate.key(), Stream::Issue, i64::from(date.num_days_from_ce()) * 4 + salt);
    Duration::minutes((u * span) as i64)
}

/// A daily report over LST minutes `first..=last` of `date` (values the DSM and CLI share).
fn summary(site: &Site, kind: DailyKind, date: NaiveDate, first: i64, last: i64) -> DailyReport {
    let e = site.extremes(first, last);
    let p = site.precip(first, last);
    DailyReport {
        kind,
        station: site.station.code.clone(),
        date,
        max_f: e.map(|e| e.max_f),
        max_time_lst: e.map(|e| lst(site, e.max_minute)),
        min_f: e.map(|e| e.min_f),
        min_time_lst: e.map(|e| lst(site, e.min_minute)),
        precip_in: Some(f64::from(p.hundredths) / 100.0),
        precip_trace: p.trace,
        precip_mtd_in: None,
        precip_mtd_trace: false,
        is_final: false,
        valid_as_of_lst: None,
        issued_at: None,
        correction: false,
        raw: String::new(),
    }
}

/// Month-to-date precipitation through LST minute `last` of `date`, from the first of the
/// month (which may lie before the generated span: hourly totals reach back).
fn month_to_date(site: &Site, date: NaiveDate, last: i64) -> Precip {
    let first_of_month = date.with_day(1).unwrap_or(date);
    let (start, _) = day_minutes(site, first_of_month);
    site.precip_hours(start.div_euclid(60), last.div_euclid(60))
}

/// Running month-to-date totals: consecutive days of a month add their own day to the
/// previous total instead of summing the month again.
#[derive(Default)]
struct RunningTotal {
    through: Option<(NaiveDate, Precip)>,
}

impl RunningTotal {
    fn through_day(&mut self, site: &Site, date: NaiveDate) -> Precip {
        let (first, last) = day_minutes(site, date);
        let total = match self.through {
            Some((prev, before)) if prev.succ_opt() == Some(date) && prev.month() == date.month() => {
                let day = site.precip_hours(first.div_euclid(60), last.div_euclid(60));
                let hundredths = before.hundredths + day.hundredths;
                Precip { hundredths, trace: hundredths == 0 && (before.trace || day.trace) }
            }
            _ => month_to_date(site, date, last),
        };
        self.through = Some((date, total));
        total
    }
}

fn set_month_to_date(r: &mut DailyReport, p: Precip) {
    r.precip_mtd_in = Some(f64::from(p.hundredths) / 100.0);
    r.precip_mtd_trace = p.trace;
}

/// The DSM for `date`, sent a few minutes after LST midnight.
pub fn dsm(site: &Site, date: NaiveDate) -> DailyReport {
    let (first, last) = day_minutes(site, date);
    let mut r = summary(site, DailyKind::Dsm, date, first, last);
    r.issued_at = Some(minute_time(last + 1) + Duration::minutes(3) + issue_jitter(site, date, 0, 8.0));
    r
}

/// LST hours of the intermediate DSMs an ASOS sends during the day (`KNYC DS 1700 ...`),
/// each with the day's values so far.
pub const INTERMEDIATE_DSM_HOURS: [u32; 3] = [7, 12, 17];

/// The intermediate DSM for `date` valid through `hour`:00 LST, sent a few minutes later.
pub fn intermediate_dsm(site: &Site, date: NaiveDate, hour: u32) -> DailyReport {
    let (first, _) = day_minutes(site, date);
    let valid = date.and_time(NaiveTime::from_hms_opt(hour.min(23), 0, 0).unwrap_or_default());
    let last = minute_index(utc_of_lst(site, valid)) - 1;
    let mut r = summary(site, DailyKind::Dsm, date, first, last);
    r.valid_as_of_lst = Some(valid);
    r.issued_at =
        Some(utc_of_lst(site, valid) + Duration::minutes(3) + issue_jitter(site, date, 3 + i64::from(hour), 8.0));
    r
}

/// The final CLI for `date`, issued around 06:00 LST the next morning.
pub fn final_cli(site: &Site, date: NaiveDate) -> DailyReport {
    final_cli_with(site, date, &mut RunningTotal::default())
}

fn final_cli_with(site: &Site, date: NaiveDate, mtd: &mut RunningTotal) -> DailyReport {
    let (first, last) = day_minutes(site, date);
    let mut r = summary(site, DailyKind::Cli, date, first, last);
    set_month_to_date(&mut r, mtd.through_day(site, date));
    r.is_final = true;
    let next_morning = date.succ_opt().unwrap_or(date).and_time(NaiveTime::from_hms_opt(5, 40, 0).unwrap_or_default());
    r.issued_at = Some(utc_of_lst(site, next_morning) + issue_jitter(site, date, 1, 45.0));
    r
}

/// The afternoon preliminary CLI for `date`, valid through 16:00 LST.
pub fn preliminary_cli(site: &Site, date: NaiveDate) -> DailyReport {
    let (first, _) = day_minutes(site, date);
    let valid = date.and_time(NaiveTime::from_hms_opt(PRELIM_VALID_HOUR, 0, 0).unwrap_or_default());
    let last = minute_index(utc_of_lst(site, valid)) - 1;
    let mut r = summary(site, DailyKind::Cli, date, first, last);
    set_month_to_date(&mut r, month_to_date(site, date, last));
    r.valid_as_of_lst = Some(valid);
    r.issued_at = Some(utc_of_lst(site, valid) + Duration::minutes(20) + issue_jitter(site, date, 2, 25.0));
    r
}

/// Every DSM and CLI of `days` (complete LST days) plus, for `today`, the afternoon
/// preliminary CLI — each only if issued by `now` and covered by the site's series.
pub fn daily_reports(
    site: &Site,
    days: &[NaiveDate],
    today: Option<NaiveDate>,
    now: DateTime<Utc>,
) -> (Vec<DailyReport>, Vec<DailyReport>) {
    let (_, series_end) = site.minutes();
    let covered = |d: NaiveDate| day_minutes(site, d).1 <= series_end;
    let mut cli = Vec::new();
    let mut dsms = Vec::new();
    let mut mtd = RunningTotal::default();
    for &d in days.iter().filter(|&&d| covered(d)) {
        let s = dsm(site, d);
        if s.issued_at.is_some_and(|t| t <= now) {
            dsms.push(s);
        }
        let c = final_cli_with(site, d, &mut mtd);
        if c.issued_at.is_some_and(|t| t <= now) {
            cli.push(c);
        }
    }
    if let Some(d) = today {
        let c = preliminary_cli(site, d);
        let valid_end = c.valid_as_of_lst.map(|v| minute_index(utc_of_lst(site, v)) - 1);
        if c.issued_at.is_some_and(|t| t <= now) && valid_end.is_some_and(|m| m <= series_end) {
            cli.push(c);
        }
    }
    (cli, dsms)
}

/// CLI products one after another, each with its WMO heading, as an archive holds them.
pub fn cli_text(site: &Site, reports: &[DailyReport]) -> String {
    let mut s = String::with_capacity(reports.len() * 1200);
    for r in reports {
        s.push_str(&encode_cli(r, &site.station.name));
        s.push('\n');
    }
    s
}

/// DSM messages, each under a WMO heading (`CDUS27 KWBC DDHHMM` + `DSMxxx`) so the issue
/// time travels with it.
pub fn dsm_text(reports: &[DailyReport]) -> String {
    let mut s = String::with_capacity(reports.len() * 300);
    for r in reports {
        if let Some(t) = r.issued_at {
            let id = r.station.strip_prefix('K').unwrap_or(&r.station);
            s.push_str(&format!("000\nCDUS27 KWBC {}\nDSM{id}\n", t.format("%d%H%M")));
        }
        s.push_str(&encode_dsm(r));
        s.push('\n');
    }
    s
}

/// [`dsm_text`] of `reports` per (year, month) of their dates, in date order.
pub fn dsm_texts_by_month(reports: &[DailyReport]) -> Vec<((i32, u32), String)> {
    let mut months: std::collections::BTreeMap<(i32, u32), Vec<DailyReport>> = Default::default();
    for r in reports {
        months.entry((r.date.year(), r.date.month())).or_default().push(r.clone());
    }
    months.into_iter().map(|(m, rs)| (m, dsm_text(&rs))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::decode::climate_report::decode_cli;
    use crate::decode::dsm::decode_dsm_with_year;
    use chrono::TimeZone;

    fn site(code: &str) -> Site {
        let st = Catalog::global().get(code).unwrap();
        let from = Utc.with_ymd_and_hms(2026, 2, 1, 0, 0, 0).unwrap();
        let to = Utc.with_ymd_and_hms(2026, 2, 12, 0, 0, 0).unwrap();
        Site::new(st, 21, from, to, to)
    }

    fn date(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 2, d).unwrap()
    }

    #[test]
    fn cli_max_is_the_one_minute_max_of_the_lst_day() {
        let s = site("KMDW");
        for d in 2..=10 {
            let r = final_cli(&s, date(d));
            // Chicago LST is UTC-6: the day runs 06:00Z to 06:00Z.
            let start = Utc.with_ymd_and_hms(2026, 2, d, 6, 0, 0).unwrap();
            let values: Vec<(i64, i32)> = (0..1440)
                .filter_map(|k| {
                    let m = minute_index(start) + k;
                    s.f_at(m).map(|f| (m, f))
                })
                .collect();
            let max = values.iter().map(|v| v.1).max();
            let min = values.iter().map(|v| v.1).min();
            assert_eq!(r.max_f, max, "day {d}");
            assert_eq!(r.min_f, min, "day {d}");
            let t_max = values.iter().find(|v| Some(v.1) == max).map(|v| v.0).unwrap();
            assert_eq!(r.max_time_lst, Some(minute_time(t_max).naive_utc() - Duration::hours(6)));
            assert!(r.is_final);
            let issued = r.issued_at.unwrap();
            assert!(issued > start + Duration::hours(24) && issued < start + Duration::hours(32), "{issued}");
            let dsm = dsm(&s, date(d));
            assert_eq!((dsm.max_f, dsm.min_f, dsm.precip_in), (r.max_f, r.min_f, r.precip_in));
        }
    }

    #[test]
    fn month_to_date_accumulates_daily_totals() {
        let s = site("KSEA");
        let days: Vec<NaiveDate> = (1..=10).map(date).collect();
        let now = Utc.with_ymd_and_hms(2026, 2, 12, 0, 0, 0).unwrap();
        let (running, _) = daily_reports(&s, &days, None, now);
        assert_eq!(running.len(), 10);
        let mut sum = 0.0;
        for (d, r) in days.iter().zip(&running) {
            // The running total matches a from-scratch total and the sum of daily totals.
            let fresh = final_cli(&s, *d);
            assert_eq!((r.precip_mtd_in, r.precip_mtd_trace), (fresh.precip_mtd_in, fresh.precip_mtd_trace));
            sum += r.precip_in.unwrap();
            assert!((r.precip_mtd_in.unwrap() - sum).abs() < 1e-9, "{d}");
        }
    }

    #[test]
    fn products_decode_back_to_the_same_values() {
        let s = site("KNYC");
        let days: Vec<NaiveDate> = (1..=10).map(date).collect();
        let now = Utc.with_ymd_and_hms(2026, 2, 11, 23, 0, 0).unwrap();
        let (cli, dsms) = daily_reports(&s, &days, Some(date(11)), now);
        assert_eq!(cli.len(), 11, "10 finals and today's preliminary");
        assert_eq!(dsms.len(), 10);
        let decoded = decode_cli(cli_text(&s, &cli).as_bytes());
        assert!(decoded.errors.is_empty(), "{:?}", decoded.errors);
        assert_eq!(decoded.records.len(), cli.len());
        for (want, got) in cli.iter().zip(&decoded.records) {
            assert_eq!(got.station, "KNYC");
            assert_eq!((got.date, got.max_f, got.min_f), (want.date, want.max_f, want.min_f));
            assert_eq!((got.max_time_lst, got.min_time_lst), (want.max_time_lst, want.min_time_lst));
            assert_eq!((got.precip_in, got.precip_trace), (want.precip_in, want.precip_trace));
            assert_eq!((got.precip_mtd_in, got.precip_mtd_trace), (want.precip_mtd_in, want.precip_mtd_trace));
            assert_eq!((got.is_final, got.valid_as_of_lst), (want.is_final, want.valid_as_of_lst));
            assert_eq!(got.issued_at, want.issued_at);
        }
        let decoded = decode_dsm_with_year(dsm_text(&dsms).as_bytes(), now);
        assert!(decoded.errors.is_empty(), "{:?}", decoded.errors);
        assert_eq!(decoded.records.len(), dsms.len());
        for (want, got) in dsms.iter().zip(&decoded.records) {
            assert_eq!((got.station.as_str(), got.date), ("KNYC", want.date));
            assert_eq!(
                (got.max_f, got.max_time_lst, got.min_f, got.min_time_lst),
                (want.max_f, want.max_time_lst, want.min_f, want.min_time_lst)
            );
            assert_eq!((got.precip_in, got.precip_trace), (want.precip_in, want.precip_trace));
            assert_eq!(got.issued_at, want.issued_at);
        }
    }

    #[test]
    fn an_intermediate_dsm_holds_the_day_so_far() {
        let s = site("KMDW");
        let r = intermediate_dsm(&s, date(5), 12);
        // Chicago LST is UTC-6: 00:00-12:00 LST is 06:00Z-18:00Z.
        let start = Utc.with_ymd_and_hms(2026, 2, 5, 6, 0, 0).unwrap();
        let max = (0..720).filter_map(|k| s.f_at(minute_index(start) + k)).max();
        assert_eq!(r.max_f, max);
        assert_eq!(r.valid_as_of_lst, Some(date(5).and_hms_opt(12, 0, 0).unwrap()));
        let issued = r.issued_at.unwrap();
        assert!(issued > start + Duration::hours(12) && issued < start + Duration::hours(12) + Duration::minutes(12));
        let d = decode_dsm_with_year(dsm_text(std::slice::from_ref(&r)).as_bytes(), issued);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!((d.records[0].max_f, d.records[0].valid_as_of_lst), (r.max_f, r.valid_as_of_lst));
    }
}
