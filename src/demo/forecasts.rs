//! Forecasts of the truth: every run of the models covering a station (of the 18) and the
//! NWS hourly forecast versions.
//!
//! A forecast is the truth at the valid time plus the model's bias (`demo_bias_c`, with a
//! swing by season and a drift by lead of its own), a model-specific damping or sharpening of the diurnal cycle, and an error that grows with
//! lead (`demo_noise_c` per day). The error is an AR(1) process along the leads of one run
//! (consecutive hours are correlated, as real model errors are) mixed with a field shared
//! by every forecast of the same valid hour (the weather nobody saw coming), so models
//! miss together on the hard days. The error is bent smoothly below 14 °C beyond 8 °C, and
//! temperatures and dew points stay inside physical bounds (−60…60 °C, dew point at most
//! 35 °C and below the temperature), so every row passes ingest. Values are rounded as the
//! products round them: tenths for gridded output, whole °F and knots for MOS, whole °F for
//! the NWS.
//!
//! Gridded models go out as spec 2.5 CSV rows (variables a model does not supply are
//! null); GFS-MOS, NAM-MOS, LAV-MOS and NBS-MOS as MOS text bulletins on the real
//! products' column schedules; the NWS forecast as api.weather.gov hourly JSON, six
//! versions a day, each 156 hours long.

use chrono::{DateTime, Datelike, Duration, NaiveTime, TimeZone, Timelike, Utc};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::climate::{hour_index, HourState};
use super::noise::{self, Stream};
use super::site::Site;
use crate::decode::forecast_rows::encode_forecast_csv;
use crate::decode::mos::{encode_mos, forecast_hours};
use crate::decode::nws_hourly::encode_nws_hourly;
use crate::decode::types::{ForecastRow, NwsHourlyForecast, NwsHourlyPeriod, OptF64};
use crate::models::{bulletin_code, ModelSpec, MODELS};
use crate::units::{c_to_f, kt_to_kmh, kt_to_mph, relative_humidity, round1};

/// True for the models published as MOS/NBM text bulletins rather than gridded rows
/// (`models::AVAILABILITY`'s `Publisher::Bulletin`).
fn is_mos(model: &str) -> bool {
    bulletin_code(model).is_some()
}

/// Local (civil) hours the NWS hourly forecast is updated at; minutes vary.
const NWS_ISSUE_HOURS: [u32; 6] = [3, 6, 10, 13, 16, 21];
/// Periods in one NWS hourly forecast (6.5 days).
const NWS_PERIODS: i64 = 156;
/// NWS forecasters lean slightly cold on highs in this demo.
const NWS_BIAS_C: f64 = -0.1;

/// Which variables a gridded model supplies (spec 2.5: the rest are null).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Supplies {
    humidity: bool,
    apparent: bool,
    wind: bool,
    gusts: bool,
    cloud: bool,
    precip: bool,
    weather_code: bool,
    msl: bool,
    surface: bool,
}

fn supplies(model: &str) -> Supplies {
    let all = Supplies {
        humidity: true,
        apparent: true,
        wind: true,
        gusts: true,
        cloud: true,
        precip: true,
        weather_code: true,
        msl: true,
        surface: true,
    };
    match model {
        // Ensemble mean: the basics only.
        "GEFS" => Supplies { apparent: false, gusts: false, weather_code: false, surface: false, ..all },
        "JMA" => Supplies { apparent: false, gusts: false, weather_code: false, surface: false, ..all },
        // Blend: no pressure fields.
        "NBM" => Supplies { msl: false, surface: false, ..all },
        // High-resolution Canadian: temperature and wind only.
        "GEM-HRDPS" => Supplies {
            humidity: false,
            apparent: false,
            gusts: false,
            cloud: false,
            precip: false,
            weather_code: false,
            msl: false,
            surface: false,
            ..all
        },
        _ => all,
    }
}

/// Grid spacing (degrees) of the model's nearest grid point to a station.
fn grid_step(model: &str) -> f64 {
    match model {
        "HRRR" | "NAM4KM" | "GEM-HRDPS" | "RAP" => 0.03,
        "NAM" | "NBM" | "ICON" | "UKMO" => 0.1,
        "ARPEGE" | "GEM-GDPS" | "ECMWF-IFS" => 0.15,
        "GFS" | "JMA" => 0.25,
        _ => 0.5,
    }
}

/// How much a model scales the diurnal cycle (coarse models damp it).
fn diurnal_gain(model: &str) -> f64 {
    match model {
        "GEFS" | "GEM-GDPS" | "JMA" => 0.85,
        "GFS" | "ECMWF-IFS" | "ICON" | "UKMO" | "ARPEGE" => 0.93,
        "HRRR" | "RAP" | "NAM4KM" | "GEM-HRDPS" => 1.05,
        _ => 1.0,
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The runs of `spec` initialised in `[from, to]` and published by `now`, each at its
/// label (`cycle_minute` past the cycle hour: LAMP's are HH30).
pub fn runs(spec: &ModelSpec, from: DateTime<Utc>, to: DateTime<Utc>, now: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let mut out = Vec::new();
    let mut day = from.date_naive();
    while day <= to.date_naive() {
        for &cycle in spec.cycles {
            let at = NaiveTime::from_hms_opt(cycle, spec.cycle_minute, 0).unwrap_or_default();
            let run = Utc.from_utc_datetime(&day.and_time(at));
            if run >= from && run <= to && run + Duration::hours(i64::from(spec.latency_h)) <= now {
                out.push(run);
            }
        }
        match day.succ_opt() {
            Some(next) => day = next,
            None => break,
        }
    }
    out
}

/// Lead hours of one run: the model's cadence, or the real bulletin's columns for MOS.
pub fn run_leads(spec: &ModelSpec, run: DateTime<Utc>) -> Vec<u32> {
    if is_mos(spec.name) {
        forecast_hours(spec.name, run).unwrap_or_default().into_iter().filter_map(|h| u32::try_from(h).ok()).collect()
    } else {
        spec.leads(run.hour())
    }
}

/// Per-run forecast error generator: AR(1) along the leads.
struct RunNoise {
    rng: SmallRng,
    z: f64,
    last_lead: u32,
}

impl RunNoise {
    fn new(site: &Site, model_index: usize, run: DateTime<Utc>) -> Self {
        let seed = noise::hash(site.climate.key(), Stream::ModelRun, hour_index(run) * 32 + model_index as i64);
        let mut rng = SmallRng::seed_from_u64(seed);
        let z = noise::normal(&mut rng);
        RunNoise { rng, z, last_lead: 0 }
    }

    /// Advances to `lead` and returns the run's standard-normal error there.
    fn at(&mut self, lead: u32) -> f64 {
        let dt = f64::from(lead.saturating_sub(self.last_lead));
        let rho = (-dt / 10.0).exp();
        self.z = rho * self.z + (1.0 - rho * rho).sqrt() * noise::normal(&mut self.rng);
        self.last_lead = lead;
        self.z
    }

    fn normal(&mut self) -> f64 {
        noise::normal(&mut self.rng)
    }
}

/// Forecast errors up to this size (°C) are kept as drawn; larger ones are bent smoothly
/// towards [`MAX_ERROR_C`]. The error's spread grows with lead without limit (0.5 °C plus
/// `demo_noise_c` per day), so a 3-sigma draw at a 16-day lead on a hot day once made a
/// 73.1 °C ZSPD forecast, which ingest rightly rejects.
const LINEAR_ERROR_C: f64 = 8.0;
/// No forecast misses the truth by more than this (°C).
const MAX_ERROR_C: f64 = 14.0;
/// Plausible air temperature (spec 8: −60 to 60 °C); forecasts stay inside it.
const TEMP_BOUNDS_C: (f64, f64) = (-60.0, 60.0);
/// The highest dew point ever measured (35 °C, Dhahran 2003): forecast air never holds more
/// water than that.
const MAX_DEW_POINT_C: f64 = 35.0;

/// `e` unchanged up to [`LINEAR_ERROR_C`], then bent towards ±[`MAX_ERROR_C`] (continuous,
/// with slope 1 at the bend, so the bulk of the error distribution is untouched).
fn bounded_error(e: f64) -> f64 {
    if e.abs() <= LINEAR_ERROR_C {
        return e;
    }
    let room = MAX_ERROR_C - LINEAR_ERROR_C;
    e.signum() * (LINEAR_ERROR_C + room * ((e.abs() - LINEAR_ERROR_C) / room).tanh())
}

/// Forecast temperature (°C) of a model at lead `lead` for valid hour `valid_h` with state
/// `s`.
fn forecast_temp(spec: &ModelSpec, s: &HourState, valid_h: i64, lead: u32, z: f64) -> f64 {
    let spread = 0.5 + spec.demo_noise_c * f64::from(lead) / 24.0;
    let error = bounded_error(spread * (0.45 * s.unpredictable + 0.89 * z));
    let bias = spec.demo_bias_c + varying_bias_c(spec, valid_h, lead);
    (s.temp_c + (diurnal_gain(spec.name) - 1.0) * s.diurnal_c + bias + error).clamp(TEMP_BOUNDS_C.0, TEMP_BOUNDS_C.1)
}

/// A model's bias beyond its mean `demo_bias_c`, as real models have one by season and by
/// lead (a warm bias of summer afternoons, a cold one of winter inversions; a drift as the
/// run ages): a yearly swing of the valid time and a drift per day of lead up to five days,
/// each fixed per model by its place in [`MODELS`] (swing 0.3–0.9 °C with phases spread
/// over the year; drift −0.15, 0 or +0.15 °C a day), so the bracket odds have seasonal,
/// per-lead errors to learn.
fn varying_bias_c(spec: &ModelSpec, valid_h: i64, lead: u32) -> f64 {
    let i = MODELS.iter().position(|m| m.name == spec.name).unwrap_or(0);
    let swing = 0.3 + 0.15 * (i % 5) as f64;
    let phase_days = (i * 73 % 365) as f64;
    let days = valid_h as f64 / 24.0;
    let season = (std::f64::consts::TAU * (days - phase_days) / 365.25).cos();
    let drift = 0.15 * ((i % 3) as f64 - 1.0) * f64::from(lead.min(120)) / 24.0;
    swing * season + drift
}

/// One forecast row for `lead` of `run`.
fn row(site: &Site, spec: &ModelSpec, run: DateTime<Utc>, lead: u32, step: u32, noise: &mut RunNoise) -> ForecastRow {
    let valid_h = hour_index(run) + i64::from(lead);
    let s = site.grid.state(&site.climate, valid_h);
    let z = noise.at(lead);
    let spread = 0.5 + spec.demo_noise_c * f64::from(lead) / 24.0;
    let t = forecast_temp(spec, &s, valid_h, lead, z);
    let (zd, zw, zc, zp) = (noise.normal(), noise.normal(), noise.normal(), noise.normal());
    let dep = ((s.temp_c - s.dew_c) + 0.6 * spread * zd).max(0.2);
    let dew = (t - dep).min(MAX_DEW_POINT_C);
    let wind_kt = (s.wind_kt * (1.0 + 0.15 * zw)).max(0.0);
    let gust_kt = if s.gust_kt > 0.0 { s.gust_kt * (1.0 + 0.1 * zw) } else { wind_kt * 1.4 };
    let cloud = (s.cloud * 100.0 + 15.0 * zc).clamp(0.0, 100.0).round();
    let precip_mm = precip_mm(site, valid_h, step) * (0.5 * zp).exp();
    let st = site.station;
    let g = grid_step(spec.name);
    let sup = supplies(spec.name);
    let rh = relative_humidity(t, dew);
    let opt = |on: bool, v: f64| on.then_some(v);
    let msl = round1(s.slp_hpa + 0.8 * spread * zp);
    ForecastRow {
        model: spec.name,
        location_name: st.code.as_str().into(),
        latitude: round2((st.latitude / g).round() * g).into(),
        longitude: round2((st.longitude / g).round() * g).into(),
        run_time: run,
        // Leads count from the cycle's whole hour (a LAMP run labelled 1230 is the 12Z cycle).
        valid_time: DateTime::from_timestamp(hour_index(run) * 3600, 0).unwrap_or(run)
            + Duration::hours(i64::from(lead)),
        forecast_hour: lead as i32,
        temperature_k: round2(t + 273.15).into(),
        temperature_f: round1(c_to_f(t)).into(),
        temperature_c: round1(t).into(),
        relative_humidity: opt(sup.humidity, rh).into(),
        dew_point_f: opt(sup.humidity, round1(c_to_f(dew))).into(),
        dew_point_c: opt(sup.humidity, round1(dew)).into(),
        apparent_temp_f: opt(sup.apparent, round1(c_to_f(apparent(t, rh, wind_kt)))).into(),
        apparent_temp_c: opt(sup.apparent, round1(apparent(t, rh, wind_kt))).into(),
        wind_speed_mph: opt(sup.wind, round1(kt_to_mph(wind_kt))).into(),
        wind_speed_kmh: opt(sup.wind, round1(kt_to_kmh(wind_kt))).into(),
        wind_direction_deg: sup.wind.then(|| (s.wind_dir + 12.0 * zw).rem_euclid(360.0).round() as i32 % 360),
        wind_gusts_mph: opt(sup.gusts, round1(kt_to_mph(gust_kt))).into(),
        wind_gusts_kmh: opt(sup.gusts, round1(kt_to_kmh(gust_kt))).into(),
        cloud_cover: opt(sup.cloud, cloud).into(),
        precipitation_mm: opt(sup.precip, round1(precip_mm)).into(),
        precipitation_in: opt(sup.precip, round2(round1(precip_mm) / 25.4)).into(),
        weather_code: sup.weather_code.then(|| weather_code(&s, t, cloud, precip_mm)),
        pressure_msl_hpa: opt(sup.msl, msl).into(),
        surface_pressure_hpa: opt(sup.surface, round1(msl * (-st.elevation_ft * 0.3048 / 8434.0).exp())).into(),
        published_after_s: 0,
    }
}

/// Precipitation (mm) over the `step` hours ending at `valid_h`, from the truth.
fn precip_mm(site: &Site, valid_h: i64, step: u32) -> f64 {
    (valid_h - i64::from(step.max(1)) + 1..=valid_h)
        .map(|h| f64::from(site.grid.state(&site.climate, h).rain_tips) * 0.254)
        .sum()
}

/// Steadman's apparent temperature (°C) from temperature, RH and wind.
fn apparent(t: f64, rh: f64, wind_kt: f64) -> f64 {
    let e = rh / 100.0 * 6.105 * (17.27 * t / (237.7 + t)).exp();
    t + 0.33 * e - 0.70 * (wind_kt * 0.514_444) - 4.0
}

/// WMO weather interpretation code for the forecast hour.
fn weather_code(s: &HourState, t: f64, cloud: f64, precip_mm: f64) -> i32 {
    if precip_mm >= 0.1 {
        let heavy = precip_mm > 2.5;
        match (t < 0.5, heavy) {
            (true, true) => 73,
            (true, false) => 71,
            (false, true) => 63,
            (false, false) => 61,
        }
    } else if s.fog {
        45
    } else if cloud < 20.0 {
        0
    } else if cloud < 50.0 {
        1
    } else if cloud < 80.0 {
        2
    } else {
        3
    }
}

/// MOS row: whole °F, whole knots, tens of degrees, as the bulletin carries them.
fn mos_row(site: &Site, spec: &ModelSpec, run: DateTime<Utc>, lead: u32, noise: &mut RunNoise) -> ForecastRow {
    let mut r = row(site, spec, run, lead, 1, noise);
    let kt = |mph: Option<f64>| mph.map(|m| kt_to_mph((m / kt_to_mph(1.0)).round()));
    r.temperature_f = r.temperature_f.get().map(f64::round).into();
    r.temperature_c = OptF64::NONE;
    r.temperature_k = OptF64::NONE;
    r.dew_point_f = r.dew_point_f.get().map(f64::round).into();
    r.dew_point_c = OptF64::NONE;
    r.wind_speed_mph = kt(r.wind_speed_mph.get()).into();
    r.wind_gusts_mph = kt(r.wind_gusts_mph.get()).into();
    r.wind_speed_kmh = OptF64::NONE;
    r.wind_gusts_kmh = OptF64::NONE;
    r.complete_temperatures();
    r
}

/// The AFOS product id under which IEM's text archive files a MOS model's bulletin, the
/// whole-US one: the model's bulletin code (`models::AVAILABILITY`) + `USA` (`MAVUSA` for
/// GFS-MOS). `None` for a model without a bulletin.
pub fn mos_pil(model: &str) -> Option<String> {
    bulletin_code(model).map(|code| format!("{code}USA"))
}

/// WMO heading and AWIPS id of a MOS bulletin. The heading's time is the cycle's whole
/// hour (a LAMP bulletin of the 1230 run is headed `FOUS11 KWNO DD1200`).
fn mos_preamble(model: &str, run: DateTime<Utc>) -> String {
    let tt = match model {
        "GFS-MOS" => "FOUS21 KWNO",
        "NAM-MOS" => "FOUS44 KWNO",
        "LAV-MOS" => "FOUS11 KWNO",
        _ => "FOUS15 KWNO",
    };
    let awips = mos_pil(model).unwrap_or_default();
    format!("000 \n{tt} {}\n{awips}\n\n", run.format("%d%H00"))
}

/// The rows of one run of `MODELS[index]` at the site: every lead of a gridded model, or
/// the columns of a MOS bulletin (whole °F and knots, as the bulletin carries them).
pub fn run_rows(site: &Site, index: usize, run: DateTime<Utc>) -> Vec<ForecastRow> {
    let Some(spec) = MODELS.get(index) else { return Vec::new() };
    let mut noise = RunNoise::new(site, index, run);
    let leads = run_leads(spec, run);
    if is_mos(spec.name) {
        leads.iter().map(|&l| mos_row(site, spec, run, l, &mut noise)).collect()
    } else {
        leads
            .iter()
            .map(|&lead| {
                let step = if lead == 0 { 1 } else { spec.step_at(lead.saturating_sub(1)) };
                row(site, spec, run, lead, step, &mut noise)
            })
            .collect()
    }
}

/// The MOS bulletin (WMO heading, AWIPS id, then the station's block) of one run of the
/// MOS model `MODELS[index]`; `None` for gridded models.
pub fn mos_bulletin(site: &Site, index: usize, run: DateTime<Utc>) -> Option<String> {
    let spec = MODELS.get(index).filter(|m| is_mos(m.name))?;
    let rows = run_rows(site, index, run);
    encode_mos(spec.name, &site.station.code, run, &rows).map(|text| mos_preamble(spec.name, run) + &text)
}

/// Every run of the models covering the site ([`Station::has_forecasts_from`](crate::catalog::Station::has_forecasts_from)) initialised in `[from, to]` and
/// published by `now`: gridded models as one CSV (spec 2.5 columns), MOS models as
/// (model, bulletin) pairs.
pub fn model_forecasts(
    site: &Site,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> (String, Vec<(String, String)>) {
    let mut csv = String::new();
    let mut mos = Vec::new();
    // The index keys each model's noise, so it is taken before leaving out the models that
    // do not cover the station.
    for (index, spec) in MODELS.iter().enumerate().filter(|(_, m)| site.station.has_forecasts_from(m.name)) {
        let mos_model = is_mos(spec.name);
        let mut rows = Vec::new();
        for run in runs(spec, from, to, now) {
            if mos_model {
                if let Some(text) = mos_bulletin(site, index, run) {
                    mos.push((spec.name.to_string(), text));
                }
            } else {
                rows.extend(run_rows(site, index, run));
            }
        }
        if !rows.is_empty() {
            let chunk = encode_forecast_csv(&rows);
            if csv.is_empty() {
                csv = chunk;
            } else {
                // One header for the whole file.
                csv.push_str(chunk.split_once('\n').map_or("", |(_, body)| body));
            }
        }
    }
    (csv, mos)
}

/// Issue times of NWS hourly forecast versions between `from` and `to` (local civil
/// hours with a few minutes' jitter), at most `now`.
pub fn nws_issue_times(site: &Site, from: DateTime<Utc>, to: DateTime<Utc>, now: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let tz = site.station.timezone;
    let key = site.climate.key();
    let end = to.min(now);
    let mut out = Vec::new();
    let mut day = from.with_timezone(&tz).date_naive();
    let last_day = end.with_timezone(&tz).date_naive();
    while day <= last_day {
        for (k, &h) in NWS_ISSUE_HOURS.iter().enumerate() {
            let idx = i64::from(day.num_days_from_ce()) * 8 + k as i64;
            let minutes = 5 + (noise::unit(key, Stream::NwsIssue, idx) * 40.0) as i64;
            let local = day.and_time(NaiveTime::from_hms_opt(h, 0, 0).unwrap_or_default());
            let Some(t) = tz.from_local_datetime(&local).earliest() else { continue };
            let seconds = (noise::unit(key, Stream::NwsIssue, idx + 4) * 60.0) as i64;
            let t = t.with_timezone(&Utc) + Duration::minutes(minutes) + Duration::seconds(seconds);
            if t >= from && t <= end {
                out.push(t);
            }
        }
        match day.succ_opt() {
            Some(d) => day = d,
            None => break,
        }
    }
    out
}

/// One NWS hourly forecast version generated at `generated_at`.
pub fn nws_version(site: &Site, generated_at: DateTime<Utc>) -> NwsHourlyForecast {
    let key = site.climate.key();
    let version_key = noise::mix(key ^ generated_at.timestamp() as u64);
    let gen_h = hour_index(generated_at);
    let periods = (0..NWS_PERIODS)
        .map(|i| {
            let h = gen_h + i;
            let s = site.grid.state(&site.climate, h);
            let lead_days = (h - gen_h) as f64 / 24.0;
            let spread = 0.6 + 0.45 * lead_days;
            let version = noise::smooth(version_key, Stream::NwsVersion, h as f64 / 8.0);
            let t = (s.temp_c + NWS_BIAS_C + bounded_error(spread * (0.6 * s.unpredictable + 0.3 * version)))
                .clamp(TEMP_BOUNDS_C.0, TEMP_BOUNDS_C.1);
            let start = DateTime::from_timestamp(h * 3600, 0).unwrap_or_default();
            NwsHourlyPeriod {
                start_time: start,
                end_time: start + Duration::hours(1),
                temperature_f: c_to_f(t).round(),
            }
        })
        .collect();
    NwsHourlyForecast { station: Some(site.station.code.clone()), generated_at, periods }
}

/// Every NWS hourly version issued in `[from, to]` by `now`, as api.weather.gov JSON.
pub fn nws_hourly(site: &Site, from: DateTime<Utc>, to: DateTime<Utc>, now: DateTime<Utc>) -> Vec<String> {
    nws_issue_times(site, from, to, now)
        .into_iter()
        .map(|t| encode_nws_hourly(&nws_version(site, t), site.station.timezone))
        .collect()
}

/// The NWS point forecast's source name in the demo's daily forecasts.
pub const POINT_SOURCE: &str = "NWS-POINT";

/// Local Standard Time hours a day's point forecast is issued at: the afternoon before
/// and the early morning of the day.
const POINT_ISSUES: [(i64, u32); 2] = [(-1, 16), (0, 4)];

/// The NWS point forecast's "High near N" and "Low around N" for each LST day whose
/// window starts from `from` through two days after `to`, as daily forecasts issued by
/// `now` (whole °F: truth's extremes sampled every ten minutes, plus an error that leans
/// warm in summer and cold in winter and is wider the day before than the morning of).
pub fn daily_forecasts(site: &Site, from: DateTime<Utc>, to: DateTime<Utc>, now: DateTime<Utc>) -> String {
    use crate::decode::daily_forecasts::encode_daily_forecasts_csv;
    use crate::decode::types::DailyForecast;
    use crate::time::{day_window, standard_date, DayClock};
    let tz = site.station.timezone;
    let key = site.climate.key();
    let (first, last) = (standard_date(tz, from), standard_date(tz, to) + Duration::days(2));
    let mut rows = Vec::new();
    let mut day = first;
    while day <= last {
        let w = day_window(tz, DayClock::Standard, day);
        let (m0, m1) = (w.start.timestamp().div_euclid(60), (w.end.timestamp() - 1).div_euclid(60));
        let (mut hi, mut lo) = (f64::MIN, f64::MAX);
        for m in (m0..=m1).step_by(10) {
            let f = c_to_f(site.truth_at(m));
            hi = hi.max(f);
            lo = lo.min(f);
        }
        let season = (2.0 * std::f64::consts::PI * f64::from(day.ordinal()) / 365.25).cos();
        for (i, (offset, hour)) in POINT_ISSUES.iter().enumerate() {
            let local = (day + Duration::days(*offset)).and_hms_opt(*hour, 0, 0).unwrap_or_default();
            let off = site.station.standard_offset_on(local.date()).local_minus_utc();
            let issued_at = (local - Duration::seconds(i64::from(off))).and_utc()
                + Duration::minutes(
                    (noise::unit(key, Stream::DailyForecast, day.num_days_from_ce().into()) * 30.0) as i64,
                );
            if issued_at > now {
                continue;
            }
            let sd = if *offset < 0 { 2.6 } else { 1.9 };
            let index = i64::from(day.num_days_from_ce()) * 8 + i as i64 * 2;
            let high = hi - 0.8 * season + sd * noise::gauss(key, Stream::DailyForecast, index);
            let low = lo + 0.6 * season + sd * noise::gauss(key, Stream::DailyForecast, index + 1);
            let (high, low) = (high.round(), low.round().min(high.round()));
            rows.push(DailyForecast {
                source: POINT_SOURCE.to_string(),
                station: site.station.code.clone(),
                issued_at,
                date: day,
                high: Some(high),
                low: Some(low),
                units: crate::units::Units::Fahrenheit,
            });
        }
        day += Duration::days(1);
    }
    encode_daily_forecasts_csv(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::decode::forecast_rows::decode_forecast_csv;
    use crate::decode::mos::decode_mos;
    use crate::decode::nws_hourly::decode_nws_hourly;
    use crate::models::model;
    use std::collections::BTreeMap;

    fn utc(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, 0, 0).unwrap()
    }

    fn site(code: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> Site {
        Site::new(Catalog::global().get(code).unwrap(), 9, from, to, to + Duration::hours(400))
    }

    #[test]
    fn runs_respect_cycles_and_latency() {
        let gfs = model("GFS").unwrap();
        let from = utc(2026, 5, 1, 0);
        let r = runs(gfs, from, utc(2026, 5, 2, 23), utc(2026, 5, 2, 23));
        // 8 cycles in two days; the 18Z run of day 2 publishes at 22Z, so all 8.
        assert_eq!(r.len(), 8);
        let r = runs(gfs, from, utc(2026, 5, 2, 23), utc(2026, 5, 2, 21));
        assert_eq!(r.len(), 7);
        let hrrr = model("HRRR").unwrap();
        assert_eq!(runs(hrrr, from, utc(2026, 5, 1, 23), utc(2026, 5, 3, 0)).len(), 24);
    }

    #[test]
    fn forecast_csv_decodes_with_the_model_leads() {
        let from = utc(2026, 5, 1, 0);
        let to = utc(2026, 5, 2, 0);
        let s = site("KDEN", from, to);
        let (csv, mos) = model_forecasts(&s, from, to, to);
        let d = decode_forecast_csv(csv.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", &d.errors[..d.errors.len().min(5)]);
        let mut by_run: BTreeMap<(&str, DateTime<Utc>), Vec<u32>> = BTreeMap::new();
        for r in &d.records {
            by_run.entry((r.model, r.run_time)).or_default().push(r.forecast_hour as u32);
            assert_eq!(r.valid_time - r.run_time, Duration::hours(i64::from(r.forecast_hour)));
        }
        let models: std::collections::BTreeSet<&str> = by_run.keys().map(|k| k.0).collect();
        assert_eq!(models.len(), 14, "{models:?}");
        for ((name, run), leads) in &by_run {
            let spec = model(name).unwrap();
            assert_eq!(*leads, spec.leads(run.hour()), "{name} {run}");
            assert!(*run + Duration::hours(i64::from(spec.latency_h)) <= to);
        }
        // Null fields for models that do not supply them.
        let hrdps = d.records.iter().find(|r| r.model == "GEM-HRDPS").unwrap();
        assert!(hrdps.relative_humidity.is_none() && hrdps.wind_speed_mph.is_some());
        let gfs = d.records.iter().find(|r| r.model == "GFS").unwrap();
        assert!(gfs.relative_humidity.is_some() && gfs.pressure_msl_hpa.is_some());

        let mut count = BTreeMap::new();
        for (name, text) in &mos {
            let d = decode_mos(text.as_bytes());
            assert!(d.errors.is_empty(), "{name}: {:?}", d.errors);
            let run = d.records[0].run_time;
            let leads: Vec<i32> = d.records.iter().map(|r| r.forecast_hour).collect();
            assert_eq!(Some(leads), forecast_hours(name, run), "{name} {run}");
            assert!(d.records.iter().all(|r| r.location_name == "KDEN" && r.model == *name));
            *count.entry(name.as_str()).or_insert(0) += 1;
        }
        // One day of runs, each published by the end of the day.
        assert_eq!(count.get("GFS-MOS"), Some(&4));
        assert_eq!(count.get("NAM-MOS"), Some(&2));
        assert_eq!(count.get("NBS-MOS"), Some(&4));
        // LAMP runs are labelled HH30: 23:30's is out at 00:30.
        assert_eq!(count.get("LAV-MOS"), Some(&23));
    }

    #[test]
    fn stations_get_only_the_models_covering_them() {
        let from = utc(2026, 5, 1, 0);
        let to = utc(2026, 5, 1, 12);
        let models_of = |code: &str| {
            let s = site(code, from, to);
            let (csv, mos) = model_forecasts(&s, from, to, to);
            let mut names: Vec<String> =
                decode_forecast_csv(csv.as_bytes()).records.into_iter().map(|r| r.model.to_string()).collect();
            names.extend(mos.into_iter().map(|(m, _)| m));
            names.sort();
            names.dedup();
            names
        };
        let global = ["ARPEGE", "ECMWF-IFS", "GEFS", "GEM-GDPS", "GFS", "ICON", "JMA", "UKMO"];
        assert_eq!(models_of("EGLC"), global);
        let toronto = models_of("CYYZ");
        assert!(["GEM-HRDPS", "HRRR", "NAM", "NAM4KM", "RAP"].iter().all(|m| toronto.iter().any(|t| t == m)));
        assert!(!toronto.iter().any(|m| m.ends_with("-MOS") || m == "NBM"), "{toronto:?}");
        assert_eq!(models_of("KDEN").len(), 18);
    }

    #[test]
    fn errors_grow_with_lead_and_carry_the_bias() {
        let from = utc(2026, 3, 1, 0);
        let to = utc(2026, 3, 15, 0);
        let s = site("KATL", from, to);
        let gfs = model("GFS").unwrap();
        let (mut e1, mut n1, mut e5, mut n5, mut bias) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (k, run) in runs(gfs, from, to, to).into_iter().enumerate() {
            let mut noise = RunNoise::new(&s, k, run);
            for lead in gfs.leads(run.hour()) {
                let r = row(&s, gfs, run, lead, 1, &mut noise);
                let truth = s.grid.state(&s.climate, hour_index(r.valid_time)).temp_c;
                let err = r.temperature_c.get().unwrap() - truth;
                if (18..=30).contains(&lead) {
                    e1 += err * err;
                    n1 += 1.0;
                    bias += err;
                }
                if (114..=126).contains(&lead) {
                    e5 += err * err;
                    n5 += 1.0;
                }
            }
        }
        let (rmse1, rmse5) = ((e1 / n1).sqrt(), (e5 / n5).sqrt());
        assert!(rmse5 > rmse1 * 1.5, "day-1 {rmse1} day-5 {rmse5}");
        assert!((0.5..2.5).contains(&rmse1), "{rmse1}");
        // GFS runs warm by 0.4 °C (plus its damped diurnal cycle, which averages out).
        assert!((bias / n1 - 0.4).abs() < 0.6, "{}", bias / n1);
    }

    /// Every value the generator makes, at every catalog station, for every model's runs of
    /// a northern-summer and a southern-summer day (all leads, to 16 days ahead) and the
    /// NWS versions, lies inside physical bounds and passes ingest's row checks. (A 73.1 °C
    /// ZSPD row at a long GFS lead was once rejected at ingest.)
    #[test]
    fn every_station_and_model_stays_physical() {
        use crate::decode::forecast_rows::validate_row;
        let days = [(utc(2026, 7, 20, 0), utc(2026, 7, 21, 0)), (utc(2026, 1, 20, 0), utc(2026, 1, 21, 0))];
        let bad = std::cell::RefCell::new(Vec::<String>::new());
        let mut rows = 0usize;
        let mut hottest = (f64::MIN, String::new());
        let check = |what: &str, v: Option<f64>, lo: f64, hi: f64, at: &dyn Fn() -> String| {
            if let Some(v) = v {
                if !(lo..=hi).contains(&v) || !v.is_finite() {
                    bad.borrow_mut().push(format!("{what} {v} outside {lo}..{hi} at {}", at()));
                }
            }
        };
        for station in Catalog::global().all() {
            for (from, to) in days {
                let s = Site::new(station, crate::demo::DEFAULT_SEED, from, to, to + Duration::hours(400));
                for (index, spec) in MODELS.iter().enumerate() {
                    let mos_model = is_mos(spec.name);
                    for run in runs(spec, from, to, to) {
                        let mut noise = RunNoise::new(&s, index, run);
                        for lead in run_leads(spec, run) {
                            let mut r = if mos_model {
                                mos_row(&s, spec, run, lead, &mut noise)
                            } else {
                                let step = if lead == 0 { 1 } else { spec.step_at(lead - 1) };
                                row(&s, spec, run, lead, step, &mut noise)
                            };
                            rows += 1;
                            let at = || format!("{} {} run {run} +{lead}h", station.code, spec.name);
                            let t = r.temperature_c.get().or(r.temperature_f.get().map(crate::units::f_to_c));
                            if t.is_some_and(|t| t > hottest.0) {
                                hottest = (t.unwrap_or_default(), at());
                            }
                            check("temperature_c", t, -60.0, 60.0, &at);
                            let dew = r.dew_point_c.get().or(r.dew_point_f.get().map(crate::units::f_to_c));
                            check("dew_point_c", dew, -90.0, 35.0, &at);
                            if let (Some(t), Some(d)) = (t, dew) {
                                check("dew point above temperature by", Some(d - t), -200.0, 0.1, &at);
                            }
                            check("apparent_temp_c", r.apparent_temp_c.get(), -80.0, 75.0, &at);
                            check("relative_humidity", r.relative_humidity.get(), 0.0, 100.0, &at);
                            check("wind_speed_mph", r.wind_speed_mph.get(), 0.0, 250.0, &at);
                            check("wind_gusts_mph", r.wind_gusts_mph.get(), 0.0, 300.0, &at);
                            check("cloud_cover", r.cloud_cover.get(), 0.0, 100.0, &at);
                            check("precipitation_mm", r.precipitation_mm.get(), 0.0, 400.0, &at);
                            check("pressure_msl_hpa", r.pressure_msl_hpa.get(), 870.0, 1085.0, &at);
                            check("surface_pressure_hpa", r.surface_pressure_hpa.get(), 500.0, 1085.0, &at);
                            if let Err(e) = validate_row(&mut r, Some(lead as i32)) {
                                bad.borrow_mut().push(format!("ingest rejects {}: {e}", at()));
                            }
                        }
                    }
                }
                if station.is_us() {
                    for t in nws_issue_times(&s, from, to, to) {
                        for p in nws_version(&s, t).periods {
                            let at = || format!("{} NWS version {t} period {}", station.code, p.start_time);
                            check("NWS temperature_f", Some(p.temperature_f), -76.0, 140.0, &at);
                        }
                    }
                }
            }
        }
        assert!(rows > 500_000, "{rows} rows");
        let bad = bad.into_inner();
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        for b in &bad {
            *kinds.entry(b.split(' ').next().unwrap_or_default().to_string()).or_default() += 1;
        }
        assert!(
            bad.is_empty(),
            "{} of {rows} rows out of bounds {kinds:?} (hottest {hottest:?}), e.g.\n{}",
            bad.len(),
            bad[..bad.len().min(15)].join("\n")
        );
    }

    #[test]
    fn nws_versions_decode_and_differ_slightly() {
        let from = utc(2026, 7, 1, 0);
        let to = utc(2026, 7, 3, 0);
        let s = site("KPHX", from, to);
        let times = nws_issue_times(&s, from, to, to);
        assert_eq!(times.len(), 12, "{times:?}");
        let texts = nws_hourly(&s, from, to, to);
        let decoded: Vec<NwsHourlyForecast> = texts.iter().map(|t| decode_nws_hourly(t.as_bytes()).unwrap()).collect();
        for (f, t) in decoded.iter().zip(&times) {
            assert_eq!(f.generated_at, *t);
            assert_eq!(f.periods.len(), 156);
            assert_eq!(f.periods[0].start_time, DateTime::from_timestamp(hour_index(*t) * 3600, 0).unwrap());
        }
        // Consecutive versions agree within a few °F on shared hours, and not always exactly.
        let (a, b) = (&decoded[3], &decoded[4]);
        let mut diffs = Vec::new();
        for p in &a.periods {
            if let Some(q) = b.periods.iter().find(|q| q.start_time == p.start_time) {
                diffs.push((p.temperature_f - q.temperature_f).abs());
            }
        }
        assert!(diffs.len() > 100);
        assert!(diffs.iter().all(|&d| d <= 6.0), "{diffs:?}");
        assert!(diffs.iter().any(|&d| d > 0.0));
    }
}
