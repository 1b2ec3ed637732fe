//! The demo's "truth": the weather each station actually had, as a pure function of time.
//!
//! Temperature is built from parts a forecaster would recognise:
//! - a seasonal mean from per-station climate normals (annual mean, half-range, warmest
//!   day of the year), so Singapore sits near 27 °C all year, Moscow well below zero in
//!   January and Sydney has its summer in January;
//! - a diurnal cycle in local *solar* time, coldest just after sunrise (≈ 06:00) and
//!   warmest mid-afternoon (≈ 15:00), damped by cloud and by short winter days;
//! - day-to-day anomalies as an AR(1) process on daily knots (continental stations swing
//!   more, winter more than summer), plus cold fronts in the mid-latitudes: a warm sector
//!   ahead, a sharp drop at passage, a slow recovery, with wind veer, a pressure trough
//!   and rain;
//! - rain cooling and minute-scale sensor noise.
//!
//! Nearby stations share their weather: the anomalies, fronts, cloud, rain spells,
//! pressure and wind of a station are mostly a regional field ([`Region`]: independent
//! draws on a grid of [`CELL_DEG`]° cells, blended bilinearly at the station's position)
//! plus a little local noise, so Central Park and LaGuardia (8 km apart) have nearly the
//! same day while New York and Los Angeles have unrelated ones.
//!
//! Each hour's state is a pure function of `(seed, station, hour)` (see [`super::noise`]);
//! minute values interpolate between hours and add noise keyed by the minute. Nothing is
//! sequential, so the batch generator, the live feed and the tests agree to the bit.

use std::f64::consts::TAU;

use chrono::{DateTime, Utc};

use super::noise::{self, Stream};
use crate::catalog::Station;

/// AR(1) coefficient of the daily anomaly knots (day-to-day persistence).
const PHI: f64 = 0.7;
/// Terms kept of the AR(1) moving-average expansion (PHI^12 ≈ 0.014).
const AR_TERMS: i64 = 12;
/// Length of a front "slot": at most one front passes per slot.
const FRONT_SLOT_H: f64 = 96.0;
/// Net hours of one front's temperature profile per degree of drop: the warm sector
/// (0.35·15·√π/2 + 0.35) minus the cold air mass (40 − 1/(1/1.5 + 1/40)).
const FRONT_NET_H: f64 = 38.537 - 4.653 - 0.35;
/// Days in the mean year, so the seasonal phase stays fixed over centuries.
const YEAR_DAYS: f64 = 365.2425;
/// Side of a cell of the shared weather field, degrees of latitude and longitude (about
/// 450 km): a synoptic system's scale, so stations a few tens of km apart share nearly
/// all of it and stations a thousand km apart share little.
const CELL_DEG: f64 = 4.0;
/// Correlation of a station's noise fields with its region's: the local part keeps a
/// trace of microclimate (√(1 − 0.99²) ≈ 0.14 of the unit deviation).
const SHARED: f64 = 0.99;

/// The four grid cells around a station and their bilinear weights: the regional field at
/// the station is the weighted sum of the cells' independent draws.
#[derive(Debug, Clone, Copy)]
struct Region {
    keys: [u64; 4],
    /// Bilinear weights (sum 1): for blending effects such as a front's.
    linear: [f64; 4],
    /// The same, scaled so their squares sum to 1: a blend of unit-variance draws keeps
    /// unit variance everywhere, at a cell's centre as between cells.
    unit: [f64; 4],
}

impl Region {
    fn new(seed: u64, latitude: f64, longitude: f64) -> Self {
        let (y, x) = (latitude / CELL_DEG, longitude / CELL_DEG);
        let (y0, x0) = (y.floor(), x.floor());
        let (fy, fx) = (y - y0, x - x0);
        let cell = |dy: f64, dx: f64| {
            let (cy, cx) = ((y0 + dy) as i64, (x0 + dx) as i64);
            noise::mix(seed ^ noise::mix(0x5245_4749_4f4e ^ ((cy + 1000) * 4096 + cx + 1000) as u64))
        };
        let keys = [cell(0.0, 0.0), cell(0.0, 1.0), cell(1.0, 0.0), cell(1.0, 1.0)];
        let linear = [(1.0 - fy) * (1.0 - fx), (1.0 - fy) * fx, fy * (1.0 - fx), fy * fx];
        let norm = linear.iter().map(|w| w * w).sum::<f64>().sqrt();
        Region { keys, linear, unit: linear.map(|w| w / norm) }
    }

    /// A unit normal draw of the regional field.
    fn gauss(&self, stream: Stream, index: i64) -> f64 {
        self.keys.iter().zip(self.unit).map(|(&k, w)| w * noise::gauss(k, stream, index)).sum()
    }

    /// Smooth unit-variance noise of the regional field.
    fn smooth(&self, stream: Stream, x: f64) -> f64 {
        self.keys.iter().zip(self.unit).map(|(&k, w)| w * noise::smooth(k, stream, x)).sum()
    }
}

/// Climate normals of one station (°C; `peak_doy` is the warmest day, 0 = 1 January).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normals {
    pub mean_c: f64,
    pub half_range_c: f64,
    pub peak_doy: f64,
    /// Typical daily max − min.
    pub diurnal_range_c: f64,
    /// Typical temperature − dew point.
    pub dew_depression_c: f64,
    /// Fraction of half-days that are wet.
    pub wet: f64,
    /// Annual precipitation, inches.
    pub annual_precip_in: f64,
}

/// One row of [`NORMALS`], in the order of the [`Normals`] fields after the code.
type NormalsRow = (&'static str, f64, f64, f64, f64, f64, f64, f64);

/// Approximate normals for the catalog stations: (code, annual mean, half of the
/// July−January spread, warmest day of year, diurnal range, dew-point depression, wet
/// fraction, annual precipitation in inches). Read off public climate tables to the
/// nearest half degree; a demo needs plausibility, not a climatology.
#[rustfmt::skip]
const NORMALS: &[NormalsRow] = &[
    ("KMDW", 10.0, 14.5, 200.0, 9.5, 6.0, 0.30, 39.0), ("KAUS", 20.5, 9.5, 210.0, 12.0, 7.0, 0.22, 34.0),
    ("KDFW", 19.3, 11.3, 205.0, 11.0, 7.0, 0.22, 37.0), ("KMSY", 20.3, 8.3, 205.0, 9.0, 4.0, 0.30, 63.0),
    ("KDAL", 19.5, 11.0, 205.0, 11.0, 7.0, 0.22, 37.0), ("KHOU", 20.8, 8.3, 205.0, 9.0, 4.5, 0.28, 54.0),
    ("KSAT", 20.3, 9.3, 205.0, 12.0, 7.0, 0.20, 32.0), ("KBNA", 15.0, 11.5, 200.0, 10.5, 6.0, 0.32, 50.0),
    ("KOKC", 15.5, 12.5, 200.0, 12.0, 7.0, 0.22, 36.0), ("KMSP", 7.0, 16.5, 200.0, 10.0, 5.5, 0.28, 31.0),
    ("KPHL", 13.5, 12.5, 202.0, 9.5, 6.0, 0.30, 44.0), ("KMIA", 24.5, 4.5, 215.0, 7.5, 4.0, 0.32, 62.0),
    ("KNYC", 13.0, 12.5, 203.0, 8.0, 6.0, 0.30, 47.0), ("KLGA", 13.3, 12.8, 203.0, 7.5, 6.0, 0.30, 44.0),
    ("KDCA", 14.8, 12.3, 202.0, 9.0, 6.0, 0.30, 41.0), ("KCLT", 15.8, 10.8, 200.0, 11.0, 6.0, 0.29, 43.0),
    ("KBOS", 10.8, 12.3, 205.0, 8.0, 6.0, 0.32, 44.0), ("KATL", 16.8, 10.3, 200.0, 10.0, 6.0, 0.30, 50.0),
    ("KJAX", 20.0, 8.0, 205.0, 11.0, 4.5, 0.30, 53.0), ("KLAX", 17.5, 3.8, 230.0, 7.0, 6.0, 0.08, 12.0),
    ("KSEA", 12.0, 7.0, 210.0, 9.0, 5.0, 0.40, 39.0), ("KSFO", 14.3, 3.5, 245.0, 8.0, 5.0, 0.17, 20.0),
    ("KLAS", 21.0, 13.0, 200.0, 13.0, 17.0, 0.06, 4.2), ("KBKF", 10.8, 11.8, 200.0, 15.0, 11.0, 0.20, 16.0),
    ("KDEN", 10.8, 12.3, 200.0, 15.0, 11.0, 0.20, 15.0), ("KPHX", 24.0, 11.0, 200.0, 12.0, 15.0, 0.07, 7.2),
    ("KDTW", 9.8, 13.3, 200.0, 9.5, 5.5, 0.33, 33.0), ("EGLC", 12.3, 6.8, 208.0, 7.0, 4.0, 0.42, 24.0),
    ("SAEZ", 17.0, 7.0, 20.0, 12.0, 5.0, 0.22, 40.0), ("CYYZ", 8.0, 14.0, 202.0, 10.0, 5.5, 0.33, 31.0),
    ("CYUL", 6.0, 15.5, 200.0, 9.0, 5.5, 0.35, 39.0), ("CYHC", 11.0, 7.0, 210.0, 6.0, 4.0, 0.42, 57.0),
    ("RKSI", 11.3, 13.8, 215.0, 7.0, 5.0, 0.28, 50.0), ("RKPK", 14.5, 11.5, 215.0, 8.0, 5.5, 0.28, 60.0),
    ("SBGR", 19.8, 3.3, 35.0, 9.0, 4.5, 0.35, 57.0), ("LFPB", 12.8, 7.8, 205.0, 8.0, 4.5, 0.38, 25.0),
    ("LFPO", 12.8, 7.8, 205.0, 8.0, 4.5, 0.38, 25.0), ("LTAC", 10.5, 11.5, 205.0, 13.0, 8.0, 0.25, 16.0),
    ("LTFM", 14.3, 9.3, 210.0, 7.0, 5.0, 0.30, 33.0), ("VILK", 25.0, 9.5, 150.0, 12.0, 8.0, 0.15, 39.0),
    ("EDDM", 8.8, 9.8, 205.0, 9.5, 4.0, 0.38, 38.0), ("LLBG", 20.0, 7.0, 215.0, 10.0, 6.0, 0.12, 21.0),
    ("RJTT", 16.5, 10.5, 215.0, 6.5, 5.0, 0.30, 60.0), ("ZSPD", 16.3, 11.8, 210.0, 7.0, 4.0, 0.32, 47.0),
    ("ZUUU", 15.8, 9.8, 205.0, 6.5, 3.5, 0.38, 35.0), ("ZBAA", 11.3, 15.3, 200.0, 11.0, 8.0, 0.18, 22.0),
    ("ZHHH", 16.5, 12.5, 205.0, 7.5, 4.0, 0.32, 50.0), ("ZUCK", 18.0, 10.5, 210.0, 6.0, 3.5, 0.38, 44.0),
    ("ZGSZ", 22.3, 6.8, 205.0, 6.0, 4.0, 0.32, 75.0), ("ZGGG", 21.3, 7.8, 205.0, 7.0, 4.0, 0.34, 70.0),
    ("ZSQD", 12.8, 13.3, 220.0, 6.0, 4.0, 0.22, 28.0), ("WSSS", 27.7, 0.9, 150.0, 7.0, 3.5, 0.45, 100.0),
    ("EPWA", 8.8, 10.8, 203.0, 9.0, 4.0, 0.38, 20.0), ("LIMC", 12.0, 10.5, 205.0, 10.0, 4.0, 0.25, 40.0),
    ("LEMD", 15.8, 9.8, 205.0, 14.0, 9.0, 0.15, 17.0), ("YSSY", 18.0, 5.0, 25.0, 7.5, 6.0, 0.30, 47.0),
    ("UUWW", 6.0, 13.0, 200.0, 7.0, 3.5, 0.40, 28.0), ("RCSS", 23.0, 7.0, 205.0, 6.0, 4.0, 0.40, 93.0),
    ("MMMX", 16.5, 2.5, 135.0, 14.0, 8.0, 0.25, 28.0), ("VHKO", 22.8, 6.3, 210.0, 4.5, 3.5, 0.32, 94.0),
    ("EFHK", 5.8, 11.3, 203.0, 8.0, 3.0, 0.40, 26.0), ("EHAM", 10.5, 7.0, 210.0, 7.0, 3.5, 0.45, 33.0),
    ("WIHH", 27.5, 0.6, 280.0, 8.0, 4.0, 0.40, 70.0), ("WMKK", 27.5, 0.6, 120.0, 8.0, 4.5, 0.42, 100.0),
    ("MPMG", 27.5, 0.5, 100.0, 7.0, 4.0, 0.40, 75.0), ("DNMM", 27.0, 1.5, 60.0, 7.0, 3.0, 0.30, 60.0),
    ("OEJN", 28.5, 4.5, 205.0, 9.0, 10.0, 0.03, 2.4), ("FACT", 17.0, 4.5, 30.0, 11.0, 6.0, 0.25, 20.0),
    ("OPKC", 26.0, 5.5, 170.0, 9.0, 8.0, 0.05, 7.5), ("RPLL", 28.0, 1.5, 135.0, 8.0, 4.5, 0.35, 80.0),
];

impl Normals {
    /// The table entry for `station`, or a latitude/elevation estimate for a station the
    /// table does not know (so a catalog edit never breaks the demo).
    pub fn for_station(station: &Station) -> Self {
        if let Some(&(_, mean_c, half_range_c, peak_doy, diurnal_range_c, dew_depression_c, wet, annual_precip_in)) =
            NORMALS.iter().find(|n| n.0 == station.code)
        {
            return Normals {
                mean_c,
                half_range_c,
                peak_doy,
                diurnal_range_c,
                dew_depression_c,
                wet,
                annual_precip_in,
            };
        }
        let lat = station.latitude.abs();
        let elev_m = station.elevation_ft * 0.3048;
        Normals {
            mean_c: 28.0 - 0.45 * (lat - 15.0).max(0.0) - 0.0065 * elev_m,
            half_range_c: (0.3 * lat - 2.0).clamp(0.5, 16.0),
            peak_doy: if station.latitude >= 0.0 { 200.0 } else { 20.0 },
            diurnal_range_c: 9.0,
            dew_depression_c: 5.0,
            wet: 0.3,
            annual_precip_in: 30.0,
        }
    }
}

/// Everything about one station's weather at the top of one hour. Temperatures in °C,
/// wind in knots and degrees true, pressure in hPa.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HourState {
    /// Air temperature without minute-scale noise: what a perfect model would forecast.
    pub temp_c: f64,
    /// The diurnal-cycle part of `temp_c` (models that damp the cycle scale this).
    pub diurnal_c: f64,
    pub dew_c: f64,
    /// Cloud fraction 0..1.
    pub cloud: f64,
    /// Precipitation in this hour, hundredths of an inch (ASOS bucket tips).
    pub rain_tips: u16,
    /// Any precipitation this hour, including a trace (no tip).
    pub precip: bool,
    pub snow: bool,
    /// Mist or fog around sunrise (calm, saturated, dry).
    pub fog: bool,
    pub wind_dir: f64,
    pub wind_kt: f64,
    /// Gust speed, knots; 0 when not gusty.
    pub gust_kt: f64,
    pub slp_hpa: f64,
    /// 0..1, how close a front passage is (1 = passing now).
    pub front: f64,
    /// Unit-variance field shared by every forecast of this hour: the part of the
    /// weather nobody predicted, so model errors correlate the way real ones do.
    pub unpredictable: f64,
}

/// One station's climate plus the seed: evaluates the truth at any hour or minute.
#[derive(Debug, Clone)]
pub struct Climate {
    key: u64,
    region: Region,
    latitude: f64,
    longitude: f64,
    normals: Normals,
    /// Standard deviation of the daily anomaly, °C (before the winter factor).
    sigma_c: f64,
    /// Probability a front slot holds a front.
    front_prob: f64,
    front_drop_c: f64,
    pressure_sd: f64,
    tropical: bool,
    prevailing_dir: f64,
    base_wind_kt: f64,
    /// Median precipitation of a wet hour, hundredths of an inch, set so the year's
    /// total matches the normal.
    rain_rate: f64,
}

/// What the fronts around an instant contribute.
#[derive(Debug, Default, Clone, Copy)]
struct FrontEffect {
    temp_c: f64,
    /// 0..1 closeness to a passage (±4 h).
    near: f64,
    /// 0..1 closeness on the pressure trough's scale (±10 h).
    trough: f64,
    /// 0..1 decaying indicator of the post-frontal air mass (drier, veered wind).
    after: f64,
}

impl Climate {
    /// The climate of `station` under `seed`.
    pub fn new(station: &Station, seed: u64) -> Self {
        let key = noise::mix(seed ^ noise::name_key(&station.code));
        let normals = Normals::for_station(station);
        let lat = station.latitude.abs();
        let tropical = lat < 23.5;
        let front_prob = if lat < 18.0 {
            0.0
        } else if lat < 28.0 {
            0.35
        } else {
            0.8
        } * (normals.wet * 3.0).clamp(0.5, 1.0);
        let westerly = if tropical {
            if station.latitude >= 0.0 {
                70.0
            } else {
                120.0
            }
        } else {
            250.0
        };
        Climate {
            key,
            region: Region::new(seed, station.latitude, station.longitude),
            latitude: station.latitude,
            longitude: station.longitude,
            normals,
            sigma_c: 0.6 + 0.25 * normals.half_range_c,
            front_prob,
            front_drop_c: 1.5 + 0.3 * normals.half_range_c,
            pressure_sd: if tropical { 1.8 } else { 3.0 + 0.12 * lat },
            tropical,
            prevailing_dir: westerly + 80.0 * (noise::unit(key, Stream::WindDir, -1) - 0.5),
            base_wind_kt: 6.0 + 4.0 * noise::unit(key, Stream::WindSpeed, -1),
            rain_rate: 1.0,
        }
        .with_calibrated_rain()
    }

    /// Chance that a wet half-day hour has precipitation, and a dry one.
    fn rain_odds(&self) -> (f64, f64) {
        let wet = self.normals.wet;
        (0.2 + 0.2 * wet, 0.025 * wet)
    }

    /// Sets the wet-hour median so the expected annual total is the normal. Expected wet
    /// hours: wet half-days, dry half-days, ±4 h around each front (≈ 4√π h of `near`)
    /// and tropical afternoon showers; a lognormal(0, 0.9) amount has mean e^0.405.
    fn with_calibrated_rain(mut self) -> Self {
        let wet = self.normals.wet;
        let (p_wet, p_dry) = self.rain_odds();
        let fronts_per_year = 8766.0 / FRONT_SLOT_H * self.front_prob;
        let front_hours = fronts_per_year * 0.45 * 4.0 * std::f64::consts::PI.sqrt() * (wet * 3.0).min(1.0);
        let tropical = if self.tropical { wet * 0.25 * 7.0 / 24.0 } else { 0.0 };
        let fraction = wet * p_wet + (1.0 - wet) * p_dry + front_hours / 8766.0 + tropical;
        let hours = (8766.0 * fraction).max(1.0);
        self.rain_rate = self.normals.annual_precip_in * 100.0 / (hours * 0.405_f64.exp());
        self
    }

    /// The key this station's draws are made under (seed mixed with the station code).
    pub fn key(&self) -> u64 {
        self.key
    }

    /// A unit normal draw: mostly the region's, a little the station's own.
    fn gauss(&self, stream: Stream, index: i64) -> f64 {
        SHARED * self.region.gauss(stream, index)
            + (1.0 - SHARED * SHARED).sqrt() * noise::gauss(self.key, stream, index)
    }

    /// Smooth unit-variance noise: mostly the region's, a little the station's own.
    fn smooth(&self, stream: Stream, x: f64) -> f64 {
        SHARED * self.region.smooth(stream, x) + (1.0 - SHARED * SHARED).sqrt() * noise::smooth(self.key, stream, x)
    }

    pub fn normals(&self) -> &Normals {
        &self.normals
    }

    /// The full state at the top of `hour` (hours since the Unix epoch, UTC).
    pub fn hour(&self, hour: i64) -> HourState {
        let x = hour as f64;
        let doy = (x / 24.0).rem_euclid(YEAR_DAYS);
        let phase = TAU * (doy - self.normals.peak_doy) / YEAR_DAYS;
        let winter = -phase.cos();
        let solar = (x + self.longitude / 15.0).rem_euclid(24.0);
        let (shape, day_len) = self.diurnal_shape(solar, doy);
        let front = self.fronts(x, winter);
        let (rain_tips, precip) = self.precipitation(hour, solar, front.near);

        let wet_block = self.wet_block(hour);
        let mut cloud = 0.15 + 0.7 * self.normals.wet + 0.28 * self.smooth(Stream::Cloud, x / 6.0);
        cloud += if wet_block { 0.35 } else { 0.0 } + 0.4 * front.near;
        if precip {
            cloud = cloud.max(0.9);
        }
        let cloud = cloud.clamp(0.0, 1.0);

        let sun = (0.35 + 0.65 * day_len / 12.0).clamp(0.4, 1.15);
        let diurnal_c = shape * self.normals.diurnal_range_c / 2.0 * sun * (1.25 - 0.6 * cloud);
        let anomaly =
            self.sigma_c * (1.0 + 0.25 * winter) * self.synoptic(x) + 0.5 * self.smooth(Stream::SubDaily, x / 6.0);
        let rain_cooling = if precip { 1.0 + 0.04 * f64::from(rain_tips.min(40)) } else { 0.0 };
        let temp_c = self.normals.mean_c + self.normals.half_range_c * phase.cos() + anomaly + front.temp_c + diurnal_c
            - rain_cooling;

        let mut dep =
            self.normals.dew_depression_c * (1.0 + 0.35 * shape) * (1.0 + 0.3 * self.smooth(Stream::Dew, x / 12.0))
                + 3.0 * front.after;
        if precip {
            dep = 0.3 + 0.7 * noise::unit(self.key, Stream::Dew, hour);
        }
        let dep = dep.clamp(0.3, 35.0);

        let wind_dir = (self.prevailing_dir
            + 70.0 * self.smooth(Stream::WindDir, x / 10.0)
            + 60.0 * front.after * self.latitude.signum())
        .rem_euclid(360.0);
        let wind_kt = (self.base_wind_kt * (0.7 + 0.3 * (shape + 1.0))
            + 3.0 * self.smooth(Stream::WindSpeed, x / 5.0)
            + 8.0 * front.near)
            .max(0.0);
        let gust_kt = if wind_kt >= 12.0 && noise::unit(self.key, Stream::Gust, hour) < 0.55 {
            wind_kt + 6.0 + 8.0 * noise::unit(self.key, Stream::Gust, hour ^ 0x55)
        } else {
            0.0
        };
        let tide = if self.tropical { 1.2 * (TAU * (solar - 10.0) / 12.0).cos() } else { 0.0 };
        let slp_hpa = 1015.0 + self.pressure_sd * self.smooth(Stream::Pressure, x / 30.0)
            - 0.9 * self.pressure_sd * front.trough
            + tide;
        let fog = !precip && dep < 1.8 && wind_kt < 7.0 && (2.0..9.0).contains(&solar);

        HourState {
            temp_c,
            diurnal_c,
            dew_c: temp_c - dep,
            cloud,
            rain_tips,
            precip,
            snow: precip && temp_c < 0.8,
            fog,
            wind_dir,
            wind_kt,
            gust_kt,
            slp_hpa,
            front: front.near,
            unpredictable: self.smooth(Stream::Unpredictable, x / 8.0),
        }
    }

    /// Minute-scale noise at `minute` (minutes since the epoch): a smooth 10-minute part
    /// (passing clouds, gusts mixing the surface layer) and a little sensor jitter.
    pub fn minute_noise(&self, minute: i64) -> f64 {
        let i = minute.div_euclid(10);
        let f = (minute - i * 10) as f64 / 10.0;
        let a = noise::gauss(self.key, Stream::MinuteTemp, i);
        let b = noise::gauss(self.key, Stream::MinuteTemp, i + 1);
        0.3 * (a + (b - a) * f) + 0.08 * noise::gauss(self.key, Stream::MinuteWhite, minute)
    }

    /// Truth at `minute` given the states of the hour it falls in and the next one.
    pub fn minute_temp(&self, this_hour: &HourState, next_hour: &HourState, minute: i64) -> f64 {
        let f = minute.rem_euclid(60) as f64 / 60.0;
        this_hour.temp_c + (next_hour.temp_c - this_hour.temp_c) * f + self.minute_noise(minute)
    }

    /// The true air temperature (°C) during the minute containing `t`.
    pub fn truth_c(&self, t: DateTime<Utc>) -> f64 {
        let minute = t.timestamp().div_euclid(60);
        let hour = minute.div_euclid(60);
        self.minute_temp(&self.hour(hour), &self.hour(hour + 1), minute)
    }

    /// Diurnal shape in -1..1 at solar hour `solar`, and the day length in hours.
    /// Warming runs from just after sunrise to mid-afternoon; cooling is quick after the
    /// peak and slows through the night.
    fn diurnal_shape(&self, solar: f64, doy: f64) -> (f64, f64) {
        let decl = 23.44_f64.to_radians() * (TAU * (doy - 80.0) / YEAR_DAYS).sin();
        let cos_w = (-self.latitude.to_radians().tan() * decl.tan()).clamp(-1.0, 1.0);
        let day_len = 24.0 * cos_w.acos() / std::f64::consts::PI;
        let t_min = (12.0 - day_len / 2.0 + 0.5).clamp(4.5, 9.0);
        let t_max = (12.0 + day_len * 0.22).clamp(13.5, 15.5);
        let shape = if (t_min..t_max).contains(&solar) {
            -(std::f64::consts::PI * (solar - t_min) / (t_max - t_min)).cos()
        } else {
            let len = 24.0 - (t_max - t_min);
            let since = (solar - t_max).rem_euclid(24.0) / len;
            let smooth = (std::f64::consts::PI * since).cos();
            let quick = 1.0 - 2.0 * (1.0 - (-3.0 * since).exp()) / (1.0 - (-3.0_f64).exp());
            0.5 * (smooth + quick)
        };
        (shape, day_len)
    }

    /// Daily AR(1) anomaly knots joined smoothly: unit variance, day-to-day persistence.
    fn synoptic(&self, x: f64) -> f64 {
        let d = x / 24.0;
        let i = d.floor();
        let f = d - i;
        let i = i as i64;
        let k = |day: i64| self.ar_knot(day);
        noise::catmull_rom(k(i - 1), k(i), k(i + 1), k(i + 2), f) * 1.1
    }

    /// One AR(1) value, from its moving-average expansion (stateless).
    fn ar_knot(&self, day: i64) -> f64 {
        let mut sum = 0.0;
        let mut w = 1.0;
        for j in 0..AR_TERMS {
            sum += w * self.gauss(Stream::Synoptic, day - j);
            w *= PHI;
        }
        sum * (1.0 - PHI * PHI).sqrt()
    }

    /// Fronts passing within a few days of `x`: each cell of the region has its own,
    /// blended by the cells' weights, so a front reaches neighbouring stations together.
    fn fronts(&self, x: f64, winter: f64) -> FrontEffect {
        let mut fx = FrontEffect::default();
        if self.front_prob <= 0.0 {
            return fx;
        }
        for (&key, w) in self.region.keys.iter().zip(self.region.linear) {
            if w <= 0.0 {
                continue;
            }
            let cell = self.cell_fronts(key, x, winter);
            fx.temp_c += w * cell.temp_c;
            fx.near += w * cell.near;
            fx.trough += w * cell.trough;
            fx.after += w * cell.after;
        }
        // Fronts cool more than they warm; add their mean effect back so the normals stay
        // the normals. Per front the profile integrates to −FRONT_NET_H · drop hours.
        fx.temp_c += self.front_prob * FRONT_NET_H * self.front_drop_c * (1.0 + 0.3 * winter) / FRONT_SLOT_H;
        fx
    }

    /// The fronts of one cell (keyed by `key`) around `x`, with this station's sizes.
    fn cell_fronts(&self, key: u64, x: f64, winter: f64) -> FrontEffect {
        let mut fx = FrontEffect::default();
        let slot = (x / FRONT_SLOT_H).floor() as i64;
        for s in slot - 2..=slot + 1 {
            if noise::unit(key, Stream::Front, s) >= self.front_prob {
                continue;
            }
            let tf = (s as f64 + noise::unit(key, Stream::FrontTime, s)) * FRONT_SLOT_H;
            let drop = self.front_drop_c * (0.5 + noise::unit(key, Stream::FrontSize, s)) * (1.0 + 0.3 * winter);
            let dt = x - tf;
            if dt < 0.0 {
                fx.temp_c += 0.35 * drop * (-(dt / 15.0).powi(2)).exp();
            } else {
                fx.temp_c += 0.35 * drop * (-dt).exp() - drop * (1.0 - (-dt / 1.5).exp()) * (-dt / 40.0).exp();
                fx.after = fx.after.max((-dt / 24.0).exp());
            }
            fx.near = fx.near.max((-(dt / 4.0).powi(2)).exp());
            fx.trough = fx.trough.max((-(dt / 10.0).powi(2)).exp());
        }
        fx
    }

    /// True when the half-day block containing `hour` is a wet one.
    fn wet_block(&self, hour: i64) -> bool {
        // A unit normal above the level it exceeds with probability `wet`.
        self.gauss(Stream::WetBlock, hour.div_euclid(12)) > upper_quantile(self.normals.wet)
    }

    /// Precipitation in `hour`: bucket tips (hundredths of an inch) and whether anything
    /// fell at all (a trace is precipitation without a tip).
    fn precipitation(&self, hour: i64, solar: f64, near_front: f64) -> (u16, bool) {
        let wet = self.normals.wet;
        let (p_wet, p_dry) = self.rain_odds();
        let mut p = if self.wet_block(hour) { p_wet } else { p_dry };
        p += 0.45 * near_front * (wet * 3.0).min(1.0);
        if self.tropical && self.wet_block(hour) && (13.0..20.0).contains(&solar) {
            p += 0.25;
        }
        // Rain falls where a smooth propensity field (3-hour knots) exceeds the level that
        // gives probability `p`: showers and rain spells last hours, not single hours.
        let propensity = self.smooth(Stream::RainHour, hour as f64 / 3.0);
        if propensity <= upper_quantile(p.min(0.95)) {
            return (0, false);
        }
        let amount =
            self.rain_rate * (0.9 * noise::gauss(self.key, Stream::RainAmount, hour)).exp() * (1.0 + near_front);
        let tips = (amount + noise::unit(self.key, Stream::RainFraction, hour)).floor().min(300.0);
        (tips as u16, true)
    }
}

/// The level a standard normal exceeds with probability `p` (Abramowitz & Stegun
/// 26.2.23, error < 5e-4).
fn upper_quantile(p: f64) -> f64 {
    let q = p.clamp(1e-9, 1.0 - 1e-9);
    let (tail, sign) = if q < 0.5 { (q, 1.0) } else { (1.0 - q, -1.0) };
    let t = (-2.0 * tail.ln()).sqrt();
    let z = t
        - (2.515_517 + 0.802_853 * t + 0.010_328 * t * t)
            / (1.0 + 1.432_788 * t + 0.189_269 * t * t + 0.001_308 * t * t * t);
    sign * z
}

/// Hour states over a span, computed once: every consumer (minute series, reports,
/// forecasts) reads the same values.
#[derive(Debug, Clone)]
pub struct HourGrid {
    first_hour: i64,
    hours: Vec<HourState>,
}

impl HourGrid {
    /// States for hours `first..=last` (hours since the epoch).
    pub fn new(climate: &Climate, first: i64, last: i64) -> Self {
        let hours = (first..=last.max(first)).map(|h| climate.hour(h)).collect();
        HourGrid { first_hour: first, hours }
    }

    pub fn first_hour(&self) -> i64 {
        self.first_hour
    }

    pub fn last_hour(&self) -> i64 {
        self.first_hour + self.hours.len() as i64 - 1
    }

    /// The state of `hour`, when the grid covers it.
    pub fn get(&self, hour: i64) -> Option<&HourState> {
        usize::try_from(hour - self.first_hour).ok().and_then(|i| self.hours.get(i))
    }

    /// The state of `hour`, computed on the spot when the grid does not cover it.
    pub fn state(&self, climate: &Climate, hour: i64) -> HourState {
        self.get(hour).copied().unwrap_or_else(|| climate.hour(hour))
    }
}

/// Hours since the Unix epoch of the hour containing `t`.
pub fn hour_index(t: DateTime<Utc>) -> i64 {
    t.timestamp().div_euclid(3600)
}

/// Minutes since the Unix epoch of the minute containing `t`.
pub fn minute_index(t: DateTime<Utc>) -> i64 {
    t.timestamp().div_euclid(60)
}

/// The UTC instant of a minute index.
pub fn minute_time(minute: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(minute * 60, 0).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use chrono::{NaiveDate, TimeZone, Timelike};

    fn climate(code: &str) -> Climate {
        Climate::new(Catalog::global().get(code).unwrap(), 7)
    }

    /// Mean daily maximum and minimum of the truth over 28 LST days from the 1st of `month`.
    fn month_stats(code: &str, year: i32, month: u32) -> (f64, f64) {
        let st = Catalog::global().get(code).unwrap();
        let c = Climate::new(st, 7);
        let off = i64::from(st.standard_offset_on(NaiveDate::from_ymd_opt(year, month, 1).unwrap()).local_minus_utc());
        let start = Utc.with_ymd_and_hms(year, month, 1, 0, 0, 0).unwrap() - chrono::Duration::seconds(off);
        let (mut sum_max, mut sum_min) = (0.0, 0.0);
        for d in 0..28 {
            let (mut hi, mut lo) = (f64::MIN, f64::MAX);
            for m in (0..1440).step_by(5) {
                let v = c.truth_c(start + chrono::Duration::minutes(d * 1440 + m));
                hi = hi.max(v);
                lo = lo.min(v);
            }
            sum_max += hi;
            sum_min += lo;
        }
        (sum_max / 28.0, sum_min / 28.0)
    }

    /// Daily maxima of the truth (hourly, UTC days) over `days` days from 1 Nov 2026.
    fn daily_max(code: &str, days: i64) -> Vec<f64> {
        let c = climate(code);
        let start = hour_index(Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap());
        (0..days).map(|d| (0..24).map(|h| c.hour(start + d * 24 + h).temp_c).fold(f64::MIN, f64::max)).collect()
    }

    fn correlation(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len() as f64;
        let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
        let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
        let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
        let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
        cov / (va * vb).sqrt()
    }

    /// Neighbours share their weather (the pairs a user found 11 °C apart on one day);
    /// stations a continent apart do not.
    #[test]
    fn nearby_stations_have_the_same_day_and_distant_ones_their_own() {
        // Day-to-day changes: the seasons' common trend left out.
        let changes = |v: Vec<f64>| v.windows(2).map(|w| w[1] - w[0]).collect::<Vec<f64>>();
        for (a, b) in [("KNYC", "KLGA"), ("KDAL", "KDFW"), ("LFPB", "LFPO")] {
            let (x, y) = (daily_max(a, 120), daily_max(b, 120));
            let worst = x.iter().zip(&y).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
            let mean = x.iter().zip(&y).map(|(p, q)| (p - q).abs()).sum::<f64>() / x.len() as f64;
            let r = correlation(&changes(x), &changes(y));
            // Their normals differ by up to half a degree, and a thunderstorm over one of
            // two airports can make a few degrees; eleven was what unshared fields gave.
            assert!(
                worst < 4.5 && mean < 1.5 && r > 0.85,
                "{a}/{b}: daily maxima differ by {mean:.1} °C on average, up to {worst:.1} °C, r = {r:.2}"
            );
        }
        for (a, b) in [("KNYC", "KLAX"), ("KNYC", "EGLC"), ("KDFW", "KMIA")] {
            let r = correlation(&changes(daily_max(a, 120)), &changes(daily_max(b, 120)));
            assert!(r.abs() < 0.4, "{a} and {b} share their weather: r = {r:.2}");
        }
    }

    #[test]
    fn climates_are_plausible() {
        // Singapore about 24–31 °C; Moscow well below zero in January; Sydney has its summer
        // in January; Phoenix summer afternoons above 38 °C.
        let (sg_max, sg_min) = month_stats("WSSS", 2026, 1);
        assert!((29.0..33.0).contains(&sg_max) && (22.0..26.0).contains(&sg_min), "{sg_max} {sg_min}");
        let (mos_max, mos_min) = month_stats("UUWW", 2026, 1);
        assert!(mos_max < 0.0 && mos_min < -6.0, "Moscow January {mos_max} {mos_min}");
        assert!(sg_min > mos_max + 20.0);
        let (syd_jan, _) = month_stats("YSSY", 2026, 1);
        let (syd_jul, _) = month_stats("YSSY", 2026, 7);
        assert!(syd_jan > syd_jul + 6.0, "Sydney {syd_jan} vs {syd_jul}");
        let (phx_jul, phx_jul_min) = month_stats("KPHX", 2026, 7);
        assert!(phx_jul > 38.0 && phx_jul_min > 22.0, "Phoenix July {phx_jul} {phx_jul_min}");
    }

    #[test]
    fn diurnal_cycle_peaks_in_the_local_afternoon() {
        // Average over a month by local standard hour: minimum in the early morning,
        // maximum in the afternoon, for a western and an eastern station.
        for code in ["KDEN", "RJTT", "EGLC"] {
            let st = Catalog::global().get(code).unwrap();
            let c = Climate::new(st, 11);
            let off = st.standard_offset_on(NaiveDate::from_ymd_opt(2026, 4, 1).unwrap()).local_minus_utc();
            let mut by_hour = [0.0; 24];
            let start = Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, 0).unwrap();
            for k in 0..(30 * 24) {
                let t = start + chrono::Duration::hours(k);
                let local = t + chrono::Duration::seconds(i64::from(off));
                by_hour[local.hour() as usize] += c.truth_c(t);
            }
            let argmax = (0..24).max_by(|&a, &b| by_hour[a].total_cmp(&by_hour[b])).unwrap();
            let argmin = (0..24).min_by(|&a, &b| by_hour[a].total_cmp(&by_hour[b])).unwrap();
            assert!((12..=17).contains(&argmax), "{code} warmest at {argmax}");
            assert!((3..=8).contains(&argmin), "{code} coldest at {argmin}");
        }
    }

    #[test]
    fn dew_point_stays_below_temperature_and_weather_is_sane() {
        let c = climate("KNYC");
        let h0 = hour_index(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap());
        let mut wet_hours = 0;
        for h in h0..h0 + 24 * 60 {
            let s = c.hour(h);
            assert!(s.dew_c < s.temp_c, "{s:?}");
            assert!((0.0..=1.0).contains(&s.cloud));
            assert!((0.0..360.0).contains(&s.wind_dir));
            assert!((0.0..60.0).contains(&s.wind_kt));
            assert!((960.0..1060.0).contains(&s.slp_hpa), "{}", s.slp_hpa);
            wet_hours += usize::from(s.precip);
        }
        // New York: some precipitation most weeks, but not most hours.
        assert!((20..400).contains(&wet_hours), "{wet_hours}");
    }

    #[test]
    fn upper_quantile_matches_the_normal_table() {
        // Φ⁻¹ values from a standard table.
        for (p, z) in [(0.5, 0.0), (0.16, 0.994), (0.025, 1.960), (0.001, 3.090), (0.975, -1.960)] {
            assert!((upper_quantile(p) - z).abs() < 2e-3, "{p}: {}", upper_quantile(p));
        }
    }

    #[test]
    fn precipitation_comes_in_spells() {
        let c = climate("KSEA");
        let h0 = hour_index(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap());
        let wet: Vec<bool> = (h0..h0 + 24 * 120).map(|h| c.hour(h).precip).collect();
        let hours = wet.iter().filter(|w| **w).count();
        let spells = wet.windows(2).filter(|w| w[1] && !w[0]).count();
        // Seattle winter: wet a fifth of the time or so, in spells of a few hours.
        assert!((200..1200).contains(&hours), "{hours}");
        assert!(hours as f64 / spells as f64 > 2.5, "{hours} hours in {spells} spells");
    }

    #[test]
    fn truth_is_deterministic_and_seed_dependent() {
        let st = Catalog::global().get("KMDW").unwrap();
        let t = Utc.with_ymd_and_hms(2026, 2, 3, 4, 5, 0).unwrap();
        assert_eq!(Climate::new(st, 1).truth_c(t), Climate::new(st, 1).truth_c(t));
        assert_ne!(Climate::new(st, 1).truth_c(t), Climate::new(st, 2).truth_c(t));
        // The grid and the direct evaluation agree exactly.
        let c = Climate::new(st, 1);
        let h = hour_index(t);
        let g = HourGrid::new(&c, h - 3, h + 3);
        assert_eq!(g.get(h).copied(), Some(c.hour(h)));
        assert_eq!(g.get(h + 4), None);
    }
}
