//! One station over one span: its climate, the hour states and what its sensors measured
//! minute by minute. ASOS measures temperature in whole °F once a minute; every product
//! (METAR, HF-METAR, 6- and 24-hour groups, one-minute data, DSM, CLI) is derived from
//! that one series, so the products agree with each other the way real ones do.
//!
//! Sensor gaps (a few per week, 1–30 minutes) are missing minutes of that series: they
//! become `-999` in the one-minute file, a METAR without temperature when a report falls
//! in one, and minutes the daily extremes cannot see.

use chrono::{DateTime, Utc};

use super::climate::{hour_index, minute_index, Climate, HourGrid, HourState};
use super::noise::{self, Stream};
use crate::catalog::Station;
use crate::units::c_to_f;

/// Chance that a sensor gap starts in a given hour (about three a week).
const GAP_PER_HOUR: f64 = 3.0 / 168.0;
/// Longest sensor gap, minutes.
const GAP_MAX_MIN: f64 = 30.0;
/// Marker for a missing minute in the °F series.
const MISSING: i16 = i16::MIN;

/// True when the sensor of the station keyed `key` is down during `minute`. A gap starts
/// in an hour with a small probability and lasts 1–30 minutes, so only the hour of the
/// minute and the one before can reach it.
pub fn sensor_gap(key: u64, minute: i64) -> bool {
    let hour = minute.div_euclid(60);
    (hour - 1..=hour).any(|h| {
        if noise::unit(key, Stream::Gap, h) >= GAP_PER_HOUR {
            return false;
        }
        let start = h * 60 + (noise::unit(key, Stream::GapLength, 2 * h) * 60.0) as i64;
        let len = 1 + (noise::unit(key, Stream::GapLength, 2 * h + 1).powi(2) * GAP_MAX_MIN) as i64;
        (start..start + len).contains(&minute)
    })
}

/// Whole °F an ASOS reports for a true temperature (°C).
pub fn measured_f(truth_c: f64) -> i32 {
    c_to_f(truth_c).round() as i32
}

/// Highest and lowest of a span of the °F series, with the minute each was first reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extremes {
    pub max_f: i32,
    pub max_minute: i64,
    pub min_f: i32,
    pub min_minute: i64,
}

/// Precipitation over a span: hundredths of an inch and whether a trace fell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Precip {
    pub hundredths: u32,
    pub trace: bool,
}

impl Precip {
    /// True when anything fell (an amount or a trace): ASOS then reports the group.
    pub fn any(&self) -> bool {
        self.hundredths > 0 || self.trace
    }
    /// Inches, or `None` when nothing fell.
    pub fn inches(&self) -> Option<f64> {
        self.any().then(|| f64::from(self.hundredths) / 100.0)
    }
}

/// A station over a span of minutes: climate, hour states and the measured series.
#[derive(Debug, Clone)]
pub struct Site {
    pub station: &'static Station,
    pub climate: Climate,
    pub grid: HourGrid,
    first_minute: i64,
    truth_c: Vec<f64>,
    temp_f: Vec<i16>,
    tips: Vec<u8>,
    trace: Vec<bool>,
}

impl Site {
    /// Builds the series for minutes `from..=to` and hour states for `from` − 1 h through
    /// `hours_until` (forecasts need the truth well past the observations).
    pub fn new(
        station: &'static Station,
        seed: u64,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        hours_until: DateTime<Utc>,
    ) -> Self {
        let climate = Climate::new(station, seed);
        let (m0, m1) = (minute_index(from), minute_index(to).max(minute_index(from)));
        let grid = HourGrid::new(&climate, hour_index(from) - 1, hour_index(hours_until.max(to)) + 1);
        let n = (m1 - m0 + 1) as usize;
        let mut site = Site {
            station,
            climate,
            grid,
            first_minute: m0,
            truth_c: Vec::with_capacity(n),
            temp_f: Vec::with_capacity(n),
            tips: vec![0; n],
            trace: vec![false; n],
        };
        site.fill_temperatures(m0, m1);
        site.fill_precipitation(m0, m1);
        site
    }

    fn fill_temperatures(&mut self, m0: i64, m1: i64) {
        let key = self.climate.key();
        let mut hour = m0.div_euclid(60);
        let mut this = self.grid.state(&self.climate, hour);
        let mut next = self.grid.state(&self.climate, hour + 1);
        for m in m0..=m1 {
            if m.div_euclid(60) != hour {
                hour = m.div_euclid(60);
                this = next;
                next = self.grid.state(&self.climate, hour + 1);
            }
            let c = self.climate.minute_temp(&this, &next, m);
            self.truth_c.push(c);
            let f = if sensor_gap(key, m) { MISSING } else { measured_f(c) as i16 };
            self.temp_f.push(f);
        }
    }

    /// Places each hour's bucket tips at minutes spread through the hour; a trace hour
    /// marks a few minutes as trace.
    fn fill_precipitation(&mut self, m0: i64, m1: i64) {
        let key = self.climate.key();
        for hour in m0.div_euclid(60)..=m1.div_euclid(60) {
            let s = self.grid.state(&self.climate, hour);
            if !s.precip {
                continue;
            }
            let n = u32::from(s.rain_tips);
            if n == 0 {
                for i in 0..2 {
                    let pos = (noise::unit(key, Stream::RainMinute, hour * 512 + i) * 60.0) as i64;
                    if let Some(idx) = self.index(hour * 60 + pos) {
                        self.trace[idx] = true;
                    }
                }
                continue;
            }
            for i in 0..n {
                let u = noise::unit(key, Stream::RainMinute, hour * 512 + i64::from(i));
                let pos = ((f64::from(i) + u) * 60.0 / f64::from(n)) as i64;
                if let Some(idx) = self.index(hour * 60 + pos.min(59)) {
                    self.tips[idx] = self.tips[idx].saturating_add(1);
                }
            }
        }
    }

    fn index(&self, minute: i64) -> Option<usize> {
        usize::try_from(minute - self.first_minute).ok().filter(|&i| i < self.temp_f.len())
    }

    /// First and last minute of the series.
    pub fn minutes(&self) -> (i64, i64) {
        (self.first_minute, self.first_minute + self.temp_f.len() as i64 - 1)
    }

    /// Measured whole °F at `minute`; `None` in a sensor gap or outside the series.
    pub fn f_at(&self, minute: i64) -> Option<i32> {
        self.index(minute).map(|i| self.temp_f[i]).filter(|&f| f != MISSING).map(i32::from)
    }

    /// True temperature (°C) at `minute`, computed when outside the series.
    pub fn truth_at(&self, minute: i64) -> f64 {
        match self.index(minute) {
            Some(i) => self.truth_c[i],
            None => {
                let h = minute.div_euclid(60);
                let (a, b) = (self.grid.state(&self.climate, h), self.grid.state(&self.climate, h + 1));
                self.climate.minute_temp(&a, &b, minute)
            }
        }
    }

    /// The hour state of the hour containing `minute`.
    pub fn hour_of(&self, minute: i64) -> HourState {
        self.grid.state(&self.climate, minute.div_euclid(60))
    }

    /// Hour states interpolated to `minute` for the continuous quantities (dew point,
    /// wind, pressure, cloud); the discrete ones (precipitation, fog) come from the hour.
    pub fn state_at(&self, minute: i64) -> HourState {
        let h = minute.div_euclid(60);
        let a = self.grid.state(&self.climate, h);
        let b = self.grid.state(&self.climate, h + 1);
        let f = (minute - h * 60) as f64 / 60.0;
        let lerp = |x: f64, y: f64| x + (y - x) * f;
        let mut dir_delta = b.wind_dir - a.wind_dir;
        if dir_delta > 180.0 {
            dir_delta -= 360.0;
        } else if dir_delta < -180.0 {
            dir_delta += 360.0;
        }
        HourState {
            temp_c: self.truth_at(minute),
            dew_c: lerp(a.dew_c - a.temp_c, b.dew_c - b.temp_c) + self.truth_at(minute),
            cloud: lerp(a.cloud, b.cloud),
            wind_dir: (a.wind_dir + dir_delta * f).rem_euclid(360.0),
            wind_kt: lerp(a.wind_kt, b.wind_kt),
            slp_hpa: lerp(a.slp_hpa, b.slp_hpa),
            ..a
        }
    }

    /// Extremes of the measured °F over minutes `from..=to`, gaps excluded.
    pub fn extremes(&self, from: i64, to: i64) -> Option<Extremes> {
        let mut out: Option<Extremes> = None;
        for m in from..=to {
            let Some(f) = self.f_at(m) else { continue };
            match &mut out {
                None => out = Some(Extremes { max_f: f, max_minute: m, min_f: f, min_minute: m }),
                Some(e) => {
                    if f > e.max_f {
                        e.max_f = f;
                        e.max_minute = m;
                    }
                    if f < e.min_f {
                        e.min_f = f;
                        e.min_minute = m;
                    }
                }
            }
        }
        out
    }

    /// Precipitation that fell in minutes `from..=to` (bucket tips and traces).
    pub fn precip(&self, from: i64, to: i64) -> Precip {
        let mut p = Precip::default();
        for m in from..=to {
            if let Some(i) = self.index(m) {
                p.hundredths += u32::from(self.tips[i]);
                p.trace |= self.trace[i];
            }
        }
        if p.hundredths > 0 {
            p.trace = false;
        }
        p
    }

    /// Precipitation over whole hours `first..=last`, from the hour states alone (for
    /// month-to-date totals that reach before the minute series starts). Agrees with
    /// [`Site::precip`] over the same minutes.
    pub fn precip_hours(&self, first: i64, last: i64) -> Precip {
        let mut p = Precip::default();
        for h in first..=last {
            let s = self.grid.state(&self.climate, h);
            p.hundredths += u32::from(s.rain_tips);
            p.trace |= s.precip;
        }
        if p.hundredths > 0 {
            p.trace = false;
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use chrono::TimeZone;

    fn site(code: &str, days: i64) -> Site {
        let st = Catalog::global().get(code).unwrap();
        let from = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        let to = from + chrono::Duration::days(days);
        Site::new(st, 5, from, to, to)
    }

    #[test]
    fn gaps_are_rare_short_runs() {
        let s = site("KSEA", 28);
        let (m0, m1) = s.minutes();
        let (mut runs, mut longest, mut run) = (0, 0, 0);
        for m in m0..=m1 {
            if s.f_at(m).is_none() {
                run += 1;
                if run == 1 {
                    runs += 1;
                }
                longest = longest.max(run);
            } else {
                run = 0;
            }
        }
        // About three a week (merged neighbours count once).
        assert!((4..=25).contains(&runs), "{runs} gap runs in 4 weeks");
        assert!(longest <= 60, "{longest}");
    }

    #[test]
    fn minute_precip_matches_hourly_totals() {
        let s = site("EHAM", 20);
        let (m0, _) = s.minutes();
        let h0 = m0.div_euclid(60);
        for day in 0..19 {
            let (a, b) = (h0 + day * 24, h0 + day * 24 + 23);
            assert_eq!(s.precip(a * 60, b * 60 + 59), s.precip_hours(a, b), "day {day}");
        }
        let total = s.precip_hours(h0, h0 + 19 * 24);
        assert!(total.hundredths > 0, "Amsterdam without rain for 20 days");
    }

    #[test]
    fn extremes_skip_gaps_and_take_first_occurrence() {
        let s = site("KMSP", 3);
        let (m0, m1) = s.minutes();
        let e = s.extremes(m0, m1).unwrap();
        let values: Vec<i32> = (m0..=m1).filter_map(|m| s.f_at(m)).collect();
        assert_eq!(e.max_f, *values.iter().max().unwrap());
        assert_eq!(e.min_f, *values.iter().min().unwrap());
        assert_eq!(s.f_at(e.max_minute), Some(e.max_f));
        assert!((m0..e.max_minute).all(|m| s.f_at(m) != Some(e.max_f)));
    }
}
