//! Surface reports as stations send them: METAR/SPECI text, IEM's 5-minute HF-METAR, the
//! IEM TSV container they are archived in, and ASOS one-minute temperatures.
//!
//! US stations (ASOS) measure whole °F. Their report tenths come from that °F value
//! (T-group = round1((F − 32)·5/9)) and the body temperature is the T-group rounded half
//! away from zero, as in every real US report we checked. Routine reports go out at :51 or
//! :52 with remarks in the ASOS order (SLP, P, 6, 7, T, 1, 2, 4, 5); the 00/06/12/18Z reports
//! carry 6-hour max/min groups over the six hours ending at the report, and the routine
//! report closing the Local Standard Time day carries the 24-hour group over that day.
//! HF-METARs (every 5 minutes) restate whole degrees as a zero-tenth T-group and end with
//! `MADISHF`, exactly as IEM writes them. International stations report whole °C at :00
//! and :30 with a Q altimeter and metres (Canada and Mexico: hourly, statute miles, A).

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Timelike, Utc};

use super::climate::{minute_time, HourState};
use super::noise::{self, Stream};
use super::site::Site;
use crate::decode::types::{OneMinute, ReportKind};
use crate::time::{day_window, standard_date, DayClock};
use crate::units::{c_to_f, f_to_c};

/// One generated report: when, what kind, and the bare report text.
#[derive(Debug, Clone, PartialEq)]
pub struct ObsReport {
    pub time: DateTime<Utc>,
    pub kind: ReportKind,
    pub text: String,
}

/// How a station reports.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Style {
    /// ASOS: routine at `routine_minute`, HF every 5 minutes, SPECIs.
    Asos { routine_minute: i64, auto: bool },
    /// Statute miles and an A altimeter (Canada, Mexico), at the given minute each hour.
    Imperial { minute: i64, slp_remark: bool },
    /// Metres, Q altimeter, half-hourly at :00 and :30.
    Metric { mps: bool },
}

fn style(site: &Site) -> Style {
    let st = site.station;
    let key = site.climate.key();
    match st.country.as_str() {
        _ if st.is_us() => Style::Asos {
            routine_minute: if noise::unit(key, Stream::Report, -1) < 0.5 { 51 } else { 52 },
            auto: noise::unit(key, Stream::Report, -2) < 0.25,
        },
        "CA" => Style::Imperial { minute: 0, slp_remark: true },
        "MX" => Style::Imperial { minute: 45, slp_remark: false },
        "CN" | "RU" => Style::Metric { mps: true },
        _ => Style::Metric { mps: false },
    }
}

/// Every report the station sends in minutes `after < m <= until`, in time order.
pub fn reports(site: &Site, after: i64, until: i64) -> Vec<ObsReport> {
    let mut out = Vec::new();
    if until <= after {
        return out;
    }
    let style = style(site);
    for hour in after.div_euclid(60)..=until.div_euclid(60) {
        let mut slots = schedule(site, style, hour);
        slots.sort_by_key(|s| s.0);
        for (minute, kind) in slots {
            if minute > after && minute <= until {
                out.push(ObsReport { time: minute_time(minute), kind, text: report_text(site, style, minute, kind) });
            }
        }
    }
    out
}

/// The report minutes of one hour and their kinds.
fn schedule(site: &Site, style: Style, hour: i64) -> Vec<(i64, ReportKind)> {
    let base = hour * 60;
    match style {
        Style::Asos { routine_minute, .. } => {
            let mut v: Vec<(i64, ReportKind)> = (0..12).map(|k| (base + 5 * k, ReportKind::HfMetar)).collect();
            v.push((base + routine_minute, ReportKind::Metar));
            for m in speci_minutes(site, hour, routine_minute) {
                v.push((base + m, ReportKind::Speci));
            }
            v
        }
        Style::Imperial { minute, .. } => vec![(base + minute, ReportKind::Metar)],
        Style::Metric { .. } => vec![(base, ReportKind::Metar), (base + 30, ReportKind::Metar)],
    }
}

/// Minutes within `hour` of special reports: precipitation beginning or ending, and now
/// and then a wind shift or ceiling change. Never on a 5-minute HF slot and always before
/// the routine minute, so every report has its own time.
fn speci_minutes(site: &Site, hour: i64, routine: i64) -> Vec<i64> {
    let key = site.climate.key();
    let this = site.grid.state(&site.climate, hour);
    let prev = site.grid.state(&site.climate, hour - 1);
    let mut out = Vec::new();
    let pick =
        |salt: i64, lo: i64, span: i64| lo + (noise::unit(key, Stream::Speci, hour * 8 + salt) * span as f64) as i64;
    if this.precip && !prev.precip {
        out.push(pick(1, 2, 40));
    }
    if prev.precip && !this.precip {
        out.push(pick(2, 3, 30));
    }
    if noise::unit(key, Stream::Speci, hour * 8 + 3) < 0.02 {
        out.push(pick(4, 7, 40));
    }
    let mut adjusted: Vec<i64> =
        out.into_iter().map(|m| if m % 5 == 0 { m + 1 } else { m }).filter(|&m| m < routine).collect();
    adjusted.sort_unstable();
    adjusted.dedup();
    adjusted
}

fn report_text(site: &Site, style: Style, minute: i64, kind: ReportKind) -> String {
    match style {
        Style::Asos { routine_minute, auto } => match kind {
            ReportKind::HfMetar => hf_text(site, minute),
            _ => asos_text(site, minute, kind, routine_minute, auto),
        },
        Style::Imperial { slp_remark, .. } => imperial_text(site, minute, slp_remark),
        Style::Metric { mps } => metric_text(site, minute, mps),
    }
}

/// Tenths of °C an ASOS reports for whole °F (the T-group value).
pub fn tenths_from_f(f: i32) -> i32 {
    (f_to_c(f64::from(f)) * 10.0).round() as i32
}

/// Whole °C of the body group: tenths rounded half away from zero.
pub fn whole_from_tenths(tenths: i32) -> i32 {
    tenths.signum() * ((tenths.abs() + 5) / 10)
}

/// `sTTT` with sign digit 0/1.
fn push_signed_tenths(s: &mut String, tenths: i32) {
    let _ = write!(s, "{}{:03}", u8::from(tenths < 0), tenths.abs());
}

/// Body temperature `05`, `M05`, and `M00` for a negative reading that rounds to zero.
fn push_whole(s: &mut String, whole: i32, negative: bool) {
    if negative {
        s.push('M');
    }
    let _ = write!(s, "{:02}", whole.abs());
}

fn push_time(s: &mut String, t: DateTime<Utc>) {
    let _ = write!(s, "{:02}{:02}{:02}Z", t.day(), t.hour(), t.minute());
}

/// Measured temperature and dew point of an ASOS at `minute`, whole °F (dew point never
/// above temperature); `None` in a sensor gap.
fn asos_temps(site: &Site, minute: i64, state: &HourState) -> Option<(i32, i32)> {
    let f = site.f_at(minute)?;
    let dew = (c_to_f(state.dew_c).round() as i32).min(f);
    Some((f, dew))
}

/// Per-report jitter in 0..1 (wind and visibility vary between consecutive reports).
fn jitter(site: &Site, minute: i64, salt: i64) -> f64 {
    noise::unit(site.climate.key(), Stream::Report, minute * 16 + salt)
}

/// Wind group in knots or metres per second.
fn push_wind(s: &mut String, site: &Site, minute: i64, state: &HourState, mps: bool) {
    let speed_kt = (state.wind_kt + 3.0 * (jitter(site, minute, 1) - 0.5)).max(0.0);
    let (unit, scale) = if mps { ("MPS", 1.0 / 1.943_844_5) } else { ("KT", 1.0) };
    let speed = (speed_kt * scale).round() as i32;
    if speed == 0 {
        let _ = write!(s, "00000{unit}");
        return;
    }
    if speed <= (6.0 * scale).round() as i32 && jitter(site, minute, 2) < 0.2 {
        let _ = write!(s, "VRB{speed:02}{unit}");
        return;
    }
    let mut dir =
        (((state.wind_dir + 24.0 * (jitter(site, minute, 3) - 0.5)) / 10.0).round() as i32 * 10).rem_euclid(360);
    if dir == 0 {
        dir = 360;
    }
    let _ = write!(s, "{dir:03}{speed:02}");
    let gust = ((state.gust_kt + 4.0 * (jitter(site, minute, 4) - 0.5)) * scale).round() as i32;
    if state.gust_kt > 0.0 && gust >= speed + (10.0 * scale).round() as i32 {
        let _ = write!(s, "G{gust:02}");
    }
    s.push_str(unit);
}

/// Visibility in statute miles at `minute`.
fn visibility_sm(site: &Site, minute: i64, state: &HourState) -> f64 {
    let u = jitter(site, minute, 5);
    if state.precip {
        let tips = state.rain_tips;
        if state.snow {
            0.5 + 2.5 * u
        } else if tips >= 30 {
            1.0 + 2.0 * u
        } else if tips >= 10 {
            2.5 + 4.0 * u
        } else {
            5.0 + 6.0 * u
        }
    } else if state.fog {
        0.2 + 4.5 * u
    } else {
        10.0
    }
}

/// US visibility group, rounded down to a reportable value.
fn push_vis_sm(s: &mut String, sm: f64, max_sm: u32) {
    const STEPS: [(f64, &str); 16] = [
        (0.25, "1/4"),
        (0.5, "1/2"),
        (0.75, "3/4"),
        (1.0, "1"),
        (1.25, "1 1/4"),
        (1.5, "1 1/2"),
        (1.75, "1 3/4"),
        (2.0, "2"),
        (2.5, "2 1/2"),
        (3.0, "3"),
        (4.0, "4"),
        (5.0, "5"),
        (6.0, "6"),
        (7.0, "7"),
        (8.0, "8"),
        (9.0, "9"),
    ];
    if sm >= 10.0 {
        let _ = write!(s, "{max_sm}SM");
        return;
    }
    if sm < 0.25 {
        s.push_str("M1/4SM");
        return;
    }
    let text = STEPS.iter().rev().find(|(v, _)| sm >= *v).map_or("1/4", |(_, t)| t);
    s.push_str(text);
    s.push_str("SM");
}

/// Metric visibility: 9999 for 10 km or more, else rounded down to the reporting steps.
fn push_vis_metres(s: &mut String, sm: f64) {
    let m = sm * 1609.344;
    let v = if m >= 10_000.0 {
        9999
    } else if m >= 5000.0 {
        (m / 1000.0).floor() as i32 * 1000
    } else if m >= 800.0 {
        (m / 100.0).floor() as i32 * 100
    } else {
        (m / 50.0).floor() as i32 * 50
    };
    let _ = write!(s, "{v:04}");
}

/// Present weather: precipitation by intensity, then mist or fog.
fn push_weather(s: &mut String, state: &HourState, vis_sm: f64) {
    let start = s.len();
    if state.precip {
        let tips = state.rain_tips;
        let kind = if state.snow { "SN" } else { "RA" };
        let intensity = if tips < 10 {
            "-"
        } else if tips < 30 || state.snow {
            ""
        } else {
            "+"
        };
        let _ = write!(s, "{intensity}{kind} ");
    }
    if vis_sm < 0.625 {
        s.push_str("FG ");
    } else if vis_sm < 7.0 && (state.fog || (state.precip && vis_sm < 5.0)) {
        s.push_str("BR ");
    }
    debug_assert!(s.len() == start || s.ends_with(' '));
}

/// Sky condition: one layer from the cloud fraction (low and wet in precipitation, low in
/// fog), sometimes a high layer above. `clear` is the no-cloud code (CLR, NSC, SKC).
fn push_sky(s: &mut String, site: &Site, minute: i64, state: &HourState, clear: &str) {
    let key = site.climate.key();
    let hour = minute.div_euclid(60);
    let u = noise::unit(key, Stream::SkyHeight, hour);
    let c = state.cloud;
    if c < 0.06 {
        let _ = write!(s, "{clear} ");
        return;
    }
    let cover = match c {
        c if c < 0.25 => "FEW",
        c if c < 0.5 => "SCT",
        c if c < 0.87 => "BKN",
        _ => "OVC",
    };
    let base = if state.fog {
        2.0 + 6.0 * u
    } else if state.precip {
        6.0 + 25.0 * u
    } else {
        30.0 + 220.0 * u
    };
    let base = (base + 2.0 * (jitter(site, minute, 6) - 0.5)).max(1.0);
    let base = if base > 50.0 { (base / 10.0).round() * 10.0 } else { base.round() };
    let _ = write!(s, "{cover}{:03} ", base as i32);
    // Now and then a higher layer; layers above never show less cover than those below.
    let upper = match cover {
        "FEW" => Some("SCT"),
        "SCT" => Some("BKN"),
        "BKN" => Some("OVC"),
        _ => None,
    };
    if let Some(upper) = upper {
        if base < 200.0 && noise::unit(key, Stream::SkyHeight, hour + (1 << 40)) < 0.4 {
            let _ = write!(s, "{upper}250 ");
        }
    }
}

/// Altimeter setting in hundredths of inHg (ASOS sets it from the station pressure; for
/// a demo the sea-level pressure is close enough).
fn altimeter_hundredths(state: &HourState) -> i32 {
    (state.slp_hpa / 33.8639 * 100.0).round() as i32
}

fn station_is_down(site: &Site, minute: i64) -> bool {
    let day = minute.div_euclid(1440);
    noise::unit(site.climate.key(), Stream::Maintenance, day) < 0.08
}

/// A routine METAR or a SPECI from an ASOS station.
fn asos_text(site: &Site, minute: i64, kind: ReportKind, routine: i64, auto: bool) -> String {
    let t = minute_time(minute);
    let state = site.state_at(minute);
    let mut s = String::with_capacity(160);
    if kind == ReportKind::Speci {
        s.push_str("SPECI ");
    }
    s.push_str(&site.station.code);
    s.push(' ');
    push_time(&mut s, t);
    s.push(' ');
    if auto {
        s.push_str("AUTO ");
    }
    push_wind(&mut s, site, minute, &state, false);
    s.push(' ');
    let vis = visibility_sm(site, minute, &state);
    push_vis_sm(&mut s, vis, 10);
    s.push(' ');
    push_weather(&mut s, &state, vis);
    push_sky(&mut s, site, minute, &state, "CLR");
    let temps = asos_temps(site, minute, &state);
    if let Some((f, dew_f)) = temps {
        let (tt, dt) = (tenths_from_f(f), tenths_from_f(dew_f));
        push_whole(&mut s, whole_from_tenths(tt), tt < 0);
        s.push('/');
        push_whole(&mut s, whole_from_tenths(dt), dt < 0);
        s.push(' ');
    }
    let _ = write!(s, "A{:04} RMK AO2", altimeter_hundredths(&state));
    let hour_utc = t.hour() as i64;
    let synoptic = (hour_utc + 1) % 6 == 0;
    let three_hourly = (hour_utc + 1) % 3 == 0;
    let routine_report = kind == ReportKind::Metar;
    if routine_report {
        let _ = write!(s, " SLP{:03}", (state.slp_hpa * 10.0).round() as i64 % 1000);
    }
    // P group: precipitation since the last routine report, the previous hour's (SPECIs
    // always fall before their hour's routine minute).
    let last_routine = minute - minute.rem_euclid(60) + routine - 60;
    push_precip_group(&mut s, 'P', site.precip(last_routine + 1, minute));
    if routine_report && three_hourly {
        let span = if synoptic { 360 } else { 180 };
        push_precip_group(&mut s, '6', site.precip(minute - span + 1, minute));
    }
    if routine_report && hour_utc == 11 {
        push_precip_group(&mut s, '7', site.precip(minute - 1440 + 1, minute));
    }
    if let Some((f, dew_f)) = temps {
        s.push_str(" T");
        push_signed_tenths(&mut s, tenths_from_f(f));
        push_signed_tenths(&mut s, tenths_from_f(dew_f));
    }
    if routine_report && synoptic {
        if let Some(e) = site.extremes(minute - 359, minute) {
            s.push_str(" 1");
            push_signed_tenths(&mut s, tenths_from_f(e.max_f));
            s.push_str(" 2");
            push_signed_tenths(&mut s, tenths_from_f(e.min_f));
        }
    }
    if routine_report && closes_standard_day(site, minute) {
        let day_start = day_start_minute(site, minute);
        if let Some(e) = site.extremes(day_start, minute) {
            s.push_str(" 4");
            push_signed_tenths(&mut s, tenths_from_f(e.max_f));
            push_signed_tenths(&mut s, tenths_from_f(e.min_f));
        }
    }
    if routine_report && three_hourly {
        let before = site.state_at(minute - 180);
        let diff = ((state.slp_hpa - before.slp_hpa) * 10.0).round() as i32;
        let a = match diff {
            d if d > 0 => 2,
            d if d < 0 => 7,
            _ => 4,
        };
        let _ = write!(s, " 5{a}{:03}", diff.abs().min(999));
    }
    if station_is_down(site, minute) {
        s.push_str(" $");
    }
    s
}

fn push_precip_group(s: &mut String, tag: char, p: super::site::Precip) {
    if p.any() {
        let _ = write!(s, " {tag}{:04}", p.hundredths.min(9999));
    }
}

/// True for the routine report nearest the end of the Local Standard Time day: the one in
/// the 23rd LST hour (US stations have whole-hour standard offsets).
pub fn closes_standard_day(site: &Site, minute: i64) -> bool {
    let t = minute_time(minute);
    let off = site.station.standard_offset_on(t.date_naive()).local_minus_utc();
    let local = t + chrono::Duration::seconds(i64::from(off));
    local.hour() == 23
}

/// First minute of the Local Standard Time day containing `minute`.
pub fn day_start_minute(site: &Site, minute: i64) -> i64 {
    let t = minute_time(minute);
    let tz = site.station.timezone;
    day_window(tz, DayClock::Standard, standard_date(tz, t)).start.timestamp().div_euclid(60)
}

/// A 5-minute HF-METAR as IEM archives it.
fn hf_text(site: &Site, minute: i64) -> String {
    let t = minute_time(minute);
    let state = site.state_at(minute);
    let mut s = String::with_capacity(100);
    s.push_str(&site.station.code);
    s.push(' ');
    push_time(&mut s, t);
    s.push_str(" AUTO ");
    push_wind(&mut s, site, minute, &state, false);
    s.push(' ');
    let vis = visibility_sm(site, minute, &state);
    push_vis_sm(&mut s, vis, 10);
    s.push(' ');
    push_weather(&mut s, &state, vis);
    let temps = asos_temps(site, minute, &state).map(|(f, d)| {
        (
            whole_from_tenths(tenths_from_f(f)),
            whole_from_tenths(tenths_from_f(d)),
            tenths_from_f(f) < 0,
            tenths_from_f(d) < 0,
        )
    });
    if let Some((t_c, d_c, t_neg, d_neg)) = temps {
        push_whole(&mut s, t_c, t_neg);
        s.push('/');
        push_whole(&mut s, d_c, d_neg);
        s.push(' ');
    }
    let _ = write!(s, "A{:04} RMK", altimeter_hundredths(&state));
    if let Some((t_c, d_c, _, _)) = temps {
        s.push_str(" T");
        push_signed_tenths(&mut s, t_c * 10);
        push_signed_tenths(&mut s, d_c * 10);
    }
    s.push_str(" MADISHF");
    s
}

/// Whole-degree temperature/dew point for a non-ASOS station (`None` in a sensor gap).
fn whole_temps(site: &Site, minute: i64, state: &HourState) -> Option<(f64, f64)> {
    site.f_at(minute)?;
    let t = state.temp_c;
    Some((t, state.dew_c.min(t)))
}

fn push_whole_c(s: &mut String, c: f64) {
    let whole = c.round() as i32;
    push_whole(s, whole, c < 0.0 && whole <= 0);
}

/// The head of a non-US report: `CODE DDHHMMZ WIND ` (wind in m/s when `mps`).
fn station_time_wind(site: &Site, minute: i64, state: &HourState, mps: bool) -> String {
    let mut s = String::with_capacity(100);
    s.push_str(&site.station.code);
    s.push(' ');
    push_time(&mut s, minute_time(minute));
    s.push(' ');
    push_wind(&mut s, site, minute, state, mps);
    s.push(' ');
    s
}

/// Canada and Mexico: statute miles, A altimeter, hourly.
fn imperial_text(site: &Site, minute: i64, slp_remark: bool) -> String {
    let state = site.state_at(minute);
    let mut s = station_time_wind(site, minute, &state, false);
    let vis = visibility_sm(site, minute, &state);
    push_vis_sm(&mut s, vis, if slp_remark { 15 } else { 10 });
    s.push(' ');
    push_weather(&mut s, &state, vis);
    push_sky(&mut s, site, minute, &state, "SKC");
    if let Some((t, d)) = whole_temps(site, minute, &state) {
        push_whole_c(&mut s, t);
        s.push('/');
        push_whole_c(&mut s, d);
        s.push(' ');
    }
    let _ = write!(s, "A{:04}", altimeter_hundredths(&state));
    if slp_remark {
        let _ = write!(s, " RMK SLP{:03}", (state.slp_hpa * 10.0).round() as i64 % 1000);
    }
    s
}

/// The ICAO format most of the world uses: metres, Q altimeter, CAVOK, NOSIG.
fn metric_text(site: &Site, minute: i64, mps: bool) -> String {
    let state = site.state_at(minute);
    let mut s = station_time_wind(site, minute, &state, mps);
    let vis = visibility_sm(site, minute, &state);
    if vis >= 10.0 && state.cloud < 0.2 && !state.precip {
        s.push_str("CAVOK ");
    } else {
        push_vis_metres(&mut s, vis);
        s.push(' ');
        push_weather(&mut s, &state, vis);
        push_sky(&mut s, site, minute, &state, "NSC");
    }
    if let Some((t, d)) = whole_temps(site, minute, &state) {
        push_whole_c(&mut s, t);
        s.push('/');
        push_whole_c(&mut s, d);
        s.push(' ');
    }
    let _ = write!(s, "Q{:04}", state.slp_hpa.floor() as i32);
    if !state.precip && state.front < 0.3 {
        s.push_str(" NOSIG");
    }
    s
}

/// IEM's station column: US ids lose their K (KCVG → CVG), others stay ICAO.
fn iem_station(code: &str) -> &str {
    match code.strip_prefix('K') {
        Some(rest) if code.len() == 4 => rest,
        _ => code,
    }
}

/// The reports in IEM's TSV export layout (`#DEBUG` lines, then `station valid metar`,
/// valid as `YYYY-MM-DD HH:MM` UTC). SPECIs keep their keyword (IEM's archive drops it,
/// which would leave a reader unable to tell them from routine reports).
pub fn iem_tsv(code: &str, reports: &[ObsReport], from: DateTime<Utc>, to: DateTime<Utc>) -> String {
    let mut s = String::with_capacity(200 + reports.len() * 110);
    let _ = writeln!(s, "#DEBUG: Format Typ    -> tdf");
    let _ = writeln!(
        s,
        "#DEBUG: Time Period   -> {} {}",
        from.format("%Y-%m-%d %H:%M:%S+00:00"),
        to.format("%Y-%m-%d %H:%M:%S+00:00")
    );
    let _ = writeln!(s, "#DEBUG: Time Zone     -> UTC");
    let _ = writeln!(s, "#DEBUG: Entries Found -> -1");
    s.push_str("station\tvalid\tmetar\n");
    let id = iem_station(code);
    for r in reports {
        let _ = writeln!(s, "{id}\t{}\t{}", r.time.format("%Y-%m-%d %H:%M"), r.text);
    }
    s
}

/// One-minute rows for minutes `from..=to`, `None` (written `-999`) in sensor gaps.
pub fn onemin_rows(site: &Site, from: i64, to: i64) -> Vec<OneMinute> {
    (from..=to)
        .map(|m| OneMinute {
            station: site.station.code.clone(),
            time: minute_time(m),
            temp_f: site.f_at(m).map(f64::from),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::units::round_half_away;
    use chrono::TimeZone;

    fn site(code: &str, days: i64) -> Site {
        let st = Catalog::global().get(code).unwrap();
        let from = Utc.with_ymd_and_hms(2026, 1, 10, 0, 0, 0).unwrap();
        let to = from + chrono::Duration::days(days);
        Site::new(st, 3, from, to, to)
    }

    #[test]
    fn rounding_rule_matches_units() {
        for f in -60..=130 {
            let tenths = tenths_from_f(f);
            assert_eq!(f64::from(tenths) / 10.0, crate::units::round1(f_to_c(f64::from(f))));
            assert_eq!(whole_from_tenths(tenths), round_half_away(f64::from(tenths) / 10.0) as i32, "{f}");
        }
        // 37 °F is 2.8 °C (T0028), body 03; 31 °F is -0.6 (T1006), body M01; 32 °F is 0.
        assert_eq!((tenths_from_f(37), whole_from_tenths(28)), (28, 3));
        assert_eq!((tenths_from_f(31), whole_from_tenths(-6)), (-6, -1));
        let mut s = String::new();
        push_whole(&mut s, whole_from_tenths(tenths_from_f(31)), true);
        push_whole(&mut s, 0, true);
        assert_eq!(s, "M01M00");
    }

    #[test]
    fn asos_schedule_has_routine_hf_and_specials() {
        let s = site("KBOS", 7);
        let (m0, m1) = s.minutes();
        let r = reports(&s, m0 + 1440, m1);
        let routine = r.iter().filter(|x| x.kind == ReportKind::Metar).count();
        let hf = r.iter().filter(|x| x.kind == ReportKind::HfMetar).count();
        let speci = r.iter().filter(|x| x.kind == ReportKind::Speci).count();
        assert!((143..=145).contains(&routine), "{routine}");
        assert!((1720..=1730).contains(&hf), "{hf}");
        assert!(speci >= 1, "no SPECI in six days");
        assert!(r.windows(2).all(|w| w[0].time < w[1].time), "reports out of order or sharing a minute");
        let m = r.iter().find(|x| x.kind == ReportKind::Metar).unwrap();
        let minute = m.time.minute();
        assert!(minute == 51 || minute == 52);
        assert!(m.text.starts_with("KBOS "));
        assert!(m.text.contains(" RMK AO2"));
        let h = r.iter().find(|x| x.kind == ReportKind::HfMetar).unwrap();
        assert!(h.text.contains(" AUTO ") && h.text.ends_with(" MADISHF"), "{}", h.text);
    }

    #[test]
    fn international_reports_are_whole_degree_metric() {
        let s = site("EDDM", 2);
        let (m0, m1) = s.minutes();
        let r = reports(&s, m0, m1);
        assert!((94..=97).contains(&r.len()), "{}", r.len());
        for x in &r {
            assert!(x.time.minute() == 0 || x.time.minute() == 30);
            assert!(!x.text.contains(" RMK") && !x.text.contains(" T0") && !x.text.contains(" T1"), "{}", x.text);
            assert!(x.text.contains(" Q1") || x.text.contains(" Q0"), "{}", x.text);
        }
        let moscow = site("UUWW", 1);
        let (a, b) = moscow.minutes();
        assert!(reports(&moscow, a, b).iter().all(|x| x.text.contains("MPS ")));
    }

    #[test]
    fn tsv_container_drops_the_k_of_us_ids() {
        let t = Utc.with_ymd_and_hms(2024, 3, 1, 17, 7, 0).unwrap();
        let r = vec![ObsReport { time: t, kind: ReportKind::Speci, text: "SPECI KCVG 011707Z 18006KT".into() }];
        let tsv = iem_tsv("KCVG", &r, t, t);
        assert!(tsv.ends_with("station\tvalid\tmetar\nCVG\t2024-03-01 17:07\tSPECI KCVG 011707Z 18006KT\n"), "{tsv}");
        assert_eq!(iem_station("WSSS"), "WSSS");
    }
}
