//! Open-Meteo API responses (forecast, previous-runs and ensemble endpoints) into forecast
//! rows, one per model and valid hour.
//!
//! The three shapes are told apart by their `hourly` keys:
//! - plain: `temperature_2m` (one model, named by the caller) or `temperature_2m_<model>`
//!   (several models requested);
//! - previous runs: `temperature_2m_previous_dayN_<model>`, the forecast issued N days
//!   before the valid day;
//! - ensemble: `temperature_2m_memberNN_<model>` next to the control `temperature_2m_<model>`.
//!
//! Time strings are local to the response's single `utc_offset_seconds`: Open-Meteo applies
//! the offset valid at request time to the whole series and never switches it at a DST
//! change (open-meteo/open-meteo#1255, #488), so subtracting that one offset is exact even
//! across a transition. `timeformat=unixtime` numbers are UTC already. Units come from
//! `hourly_units` per key (API defaults °C, km/h, mm when absent); every quantity with two
//! unit columns in spec 2.5 gets both.
//!
//! Null values are hours the model does not cover (beyond its horizon, not yet run): such an
//! hour gives no row and no error. Errors on `line` N refer to the N-th entry of
//! `hourly.time`; `line` 0 is the response as a whole or a whole key.

use chrono::{DateTime, Days, Duration, NaiveTime, Utc};
use serde_json::{Map, Value};

use super::timestamp::parse_local;
use crate::decode::text::input_text;
use crate::decode::types::{Decoded, ForecastRow, OptF64, PUBLICATION_UNKNOWN};
use crate::units::{c_to_f, f_to_c, kt_to_kmh, kt_to_mph};

const KMH_PER_MPH: f64 = 1.609344;
const MM_PER_INCH: f64 = 25.4;

/// Decodes an Open-Meteo response for one location, detecting its shape.
///
/// `run_time`: Open-Meteo responses do not say which run produced the data. For the plain
/// and ensemble shapes the caller's `run_time` is used, else the first time of the series
/// (the run is at least that old, and this keeps forecast_hour ≥ 0). Previous-runs data
/// derive their own run time (see [`previous_run_time`]) and ignore `run_time`.
///
/// Keys without a model suffix (a single-model request) cannot be attributed and are
/// reported; use [`decode_open_meteo_model`] for those.
pub fn decode_open_meteo(bytes: &[u8], location_name: &str, run_time: Option<DateTime<Utc>>) -> Decoded<ForecastRow> {
    decode_open_meteo_model(bytes, location_name, run_time, None)
}

/// As [`decode_open_meteo`], naming the model of unsuffixed keys (`temperature_2m`), either
/// by its Open-Meteo id (`gfs_seamless`) or by its spec 2.5 name (`GFS`).
///
/// Ensembles: the row holds the ensemble MEAN per hour over the control (the unsuffixed
/// series, member 0) and every `memberNN`, over the members that have a value that hour;
/// wind direction is a vector mean; weather code is left null (a mean code means nothing).
/// NCEP's ensemble is GEFS, which is one of the 18 models. ECMWF's ensemble (and any other
/// ensemble) is NOT stored: spec 2.5 has no name for it, and filing its mean under
/// ECMWF-IFS would mix a smoothed mean into the deterministic model's rows, runs and
/// accuracy scores. Such models give one error naming them (line 0) and no rows.
pub fn decode_open_meteo_model(
    bytes: &[u8],
    location_name: &str,
    run_time: Option<DateTime<Utc>>,
    model: Option<&str>,
) -> Decoded<ForecastRow> {
    let mut out = Decoded::new();
    if let Err(reason) = decode_into(bytes, location_name, run_time, model, &mut out) {
        out.reject(0, reason);
    }
    out
}

/// Run time assumed for a `previous_dayN` value: 00Z of the valid time's UTC day minus N
/// days, so forecast_hour is 24·N + the valid hour. ASSUMPTION: Open-Meteo does not say
/// which run a day-N value came from — its docs only call day N "a glimpse 24·N hours
/// back", i.e. the run that was latest about 24·N h before the valid time, which can be a
/// later cycle of that day or, for early valid hours, a cycle of the day before. A fixed
/// 00Z label keeps every value of one day-N series on one run per valid day, which is
/// what lead-day accuracy needs; treat forecast_hour as nominal for these rows.
/// `None` only when that day is outside chrono's calendar.
pub fn previous_run_time(valid: DateTime<Utc>, days_before: u32) -> Option<DateTime<Utc>> {
    let day = valid.date_naive().checked_sub_days(Days::new(u64::from(days_before)))?;
    Some(day.and_time(NaiveTime::MIN).and_utc())
}

/// Open-Meteo model ids of deterministic models (forecast and previous-runs APIs).
const DETERMINISTIC: &[(&str, &str)] = &[
    ("gfs_seamless", "GFS"),
    ("gfs_global", "GFS"),
    ("gfs013", "GFS"),
    ("gfs025", "GFS"),
    ("ncep_gfs013", "GFS"),
    ("ncep_gfs025", "GFS"),
    ("ncep_gfs_global", "GFS"),
    ("gfs_hrrr", "HRRR"),
    ("ncep_hrrr_conus", "HRRR"),
    ("ncep_nam_conus", "NAM"),
    ("ncep_nbm_conus", "NBM"),
    ("gfs05", "GEFS"),
    ("ncep_gefs_seamless", "GEFS"),
    ("ncep_gefs025", "GEFS"),
    ("ncep_gefs05", "GEFS"),
    ("ncep_gefs025_ensemble_mean", "GEFS"),
    ("ncep_gefs05_ensemble_mean", "GEFS"),
    ("ecmwf_ifs", "ECMWF-IFS"),
    ("ecmwf_ifs025", "ECMWF-IFS"),
    ("ecmwf_ifs04", "ECMWF-IFS"),
    ("icon_seamless", "ICON"),
    ("icon_global", "ICON"),
    ("dwd_icon", "ICON"),
    ("gem_global", "GEM-GDPS"),
    ("cmc_gem_gdps", "GEM-GDPS"),
    ("gem_hrdps_continental", "GEM-HRDPS"),
    ("cmc_gem_hrdps", "GEM-HRDPS"),
    ("jma_seamless", "JMA"),
    ("jma_gsm", "JMA"),
    ("meteofrance_arpege_world", "ARPEGE"),
    ("meteofrance_arpege_world025", "ARPEGE"),
    ("meteofrance_arpege_europe", "ARPEGE"),
    ("ukmo_global", "UKMO"),
    ("ukmo_global_deterministic_10km", "UKMO"),
    ("ukmo_seamless", "UKMO"),
];

/// Open-Meteo model ids in the ensemble API that we store (as the ensemble mean).
const ENSEMBLE: &[(&str, &str)] = &[
    ("ncep_gefs_seamless", "GEFS"),
    ("ncep_gefs025", "GEFS"),
    ("ncep_gefs05", "GEFS"),
    ("gfs_seamless", "GEFS"),
    ("gfs025", "GEFS"),
    ("gfs05", "GEFS"),
];

/// Maps an Open-Meteo model id (or one of our names) to a spec 2.5 model name.
fn resolve_model(id: &str, ensemble: bool) -> Result<&'static str, String> {
    if let Some(name) = super::forecast_rows::model_name(id) {
        return Ok(name);
    }
    let table = if ensemble { ENSEMBLE } else { DETERMINISTIC };
    if let Some((_, name)) = table.iter().find(|(k, _)| *k == id) {
        return Ok(name);
    }
    if id.starts_with("ecmwf_aifs") {
        Err(format!("model '{}' is ECMWF AIFS, not IFS: no model name in spec 2.5", show(id)))
    } else if id.starts_with("ecmwf") && (ensemble || id.contains("ensemble")) {
        Err(format!("ECMWF ensemble '{}' has no model name in spec 2.5; not stored as ECMWF-IFS", show(id)))
    } else if ensemble {
        Err(format!("ensemble model '{}' has no model name in spec 2.5", show(id)))
    } else {
        Err(format!("unknown Open-Meteo model '{}'", show(id)))
    }
}

/// The hourly variables we map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Var {
    Temp,
    Rh,
    Dew,
    Apparent,
    WindSpeed,
    WindDir,
    Gusts,
    Cloud,
    Precip,
    Code,
    PressureMsl,
    PressureSfc,
}

/// Variable names, current and pre-2023 spellings. Keys are matched on a whole name
/// followed by `_` or the end, so `precipitation_probability` is not `precipitation`.
const VARS: [(&str, Var); 19] = [
    ("temperature_2m", Var::Temp),
    ("relative_humidity_2m", Var::Rh),
    ("relativehumidity_2m", Var::Rh),
    ("dew_point_2m", Var::Dew),
    ("dewpoint_2m", Var::Dew),
    ("apparent_temperature", Var::Apparent),
    ("wind_speed_10m", Var::WindSpeed),
    ("windspeed_10m", Var::WindSpeed),
    ("wind_direction_10m", Var::WindDir),
    ("winddirection_10m", Var::WindDir),
    ("wind_gusts_10m", Var::Gusts),
    ("windgusts_10m", Var::Gusts),
    ("cloud_cover", Var::Cloud),
    ("cloudcover", Var::Cloud),
    ("precipitation", Var::Precip),
    ("weather_code", Var::Code),
    ("weathercode", Var::Code),
    ("pressure_msl", Var::PressureMsl),
    ("surface_pressure", Var::PressureSfc),
];

/// Units of one series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    DegC,
    DegF,
    Kmh,
    Mph,
    Knots,
    MetresPerSecond,
    Mm,
    Inch,
    /// Percent, degrees, WMO code, hPa: one unit only.
    Native,
}

fn parse_unit(var: Var, unit: Option<&str>) -> Result<Unit, String> {
    let u = unit.map(str::trim);
    let ok = match var {
        Var::Temp | Var::Dew | Var::Apparent => match u {
            None | Some("°C" | "C" | "celsius") => Some(Unit::DegC),
            Some("°F" | "F" | "fahrenheit") => Some(Unit::DegF),
            _ => None,
        },
        Var::WindSpeed | Var::Gusts => match u {
            None | Some("km/h" | "kmh") => Some(Unit::Kmh),
            Some("mp/h" | "mph") => Some(Unit::Mph),
            Some("kn" | "kt" | "knots") => Some(Unit::Knots),
            Some("m/s" | "ms") => Some(Unit::MetresPerSecond),
            _ => None,
        },
        Var::Precip => match u {
            None | Some("mm") => Some(Unit::Mm),
            Some("inch" | "in") => Some(Unit::Inch),
            _ => None,
        },
        Var::Rh | Var::Cloud => matches!(u, None | Some("%")).then_some(Unit::Native),
        Var::PressureMsl | Var::PressureSfc => matches!(u, None | Some("hPa")).then_some(Unit::Native),
        Var::WindDir | Var::Code => Some(Unit::Native),
    };
    ok.ok_or_else(|| format!("unknown unit '{}'", show(u.unwrap_or_default())))
}

/// What a key of `hourly` names.
struct KeyParts<'a> {
    var: Var,
    member: Option<u32>,
    day: Option<u32>,
    model: Option<&'a str>,
}

/// `temperature_2m[_memberNN|_previous_dayN][_<model>]`; None for keys we do not map.
fn parse_key(key: &str) -> Option<KeyParts<'_>> {
    let (var, rest) = VARS.iter().find_map(|&(name, var)| {
        let rest = key.strip_prefix(name)?;
        if rest.is_empty() {
            Some((var, rest))
        } else {
            rest.strip_prefix('_').map(|r| (var, r))
        }
    })?;
    if rest == "spread" || rest.starts_with("spread_") {
        return None; // ensemble-mean API spread: not a forecast value
    }
    let (member, rest) = numbered(rest, "member");
    let (day, rest) = numbered(rest, "previous_day");
    let model = (!rest.is_empty()).then_some(rest);
    Some(KeyParts { var, member, day, model })
}

/// Splits `<prefix>NN[_rest]` into (NN, rest); anything else is returned unchanged.
fn numbered<'a>(s: &'a str, prefix: &str) -> (Option<u32>, &'a str) {
    let Some(tail) = s.strip_prefix(prefix) else {
        return (None, s);
    };
    let n = tail.bytes().take_while(u8::is_ascii_digit).count();
    let (num, rest) = tail.split_at(n);
    let rest = match rest.strip_prefix('_') {
        Some(r) => r,
        None if rest.is_empty() => rest,
        None => return (None, s),
    };
    match num.parse() {
        Ok(v) => (Some(v), rest),
        Err(_) => (None, s),
    }
}

/// One array of values with its variable and unit.
struct Series<'a> {
    var: Var,
    unit: Unit,
    values: &'a [Value],
}

/// Every series of one model (and one previous-day lead).
struct Group<'a> {
    model_id: Option<&'a str>,
    day: Option<u32>,
    series: Vec<Series<'a>>,
    /// A `temperature_2m` key was seen (even if its series was rejected).
    temp_key: bool,
    /// Problems with this group's keys, reported only when the group is a model.
    errors: Vec<(usize, String)>,
}

impl Group<'_> {
    /// The value of `var` at hour `i` in its series' unit: the only series, or the mean of
    /// the ensemble members that have one (a vector mean for wind direction).
    fn value(&self, var: Var, i: usize) -> Option<(f64, Unit)> {
        let mut unit = None;
        let (mut sum, mut sin, mut cos, mut n) = (0.0, 0.0, 0.0, 0u32);
        for s in self.series.iter().filter(|s| s.var == var) {
            let Some(v) = s.values.get(i).and_then(Value::as_f64).filter(|v| v.is_finite()) else {
                continue;
            };
            unit = Some(s.unit);
            sum += v;
            sin += v.to_radians().sin();
            cos += v.to_radians().cos();
            n += 1;
        }
        let unit = unit?;
        if n == 1 {
            return Some((sum, unit));
        }
        if var == Var::WindDir {
            return Some((sin.atan2(cos).to_degrees().rem_euclid(360.0), unit));
        }
        Some((sum / f64::from(n), unit))
    }
}

/// Everything an hour's row needs from the response.
struct Context<'a> {
    location: &'a str,
    latitude: Option<f64>,
    longitude: Option<f64>,
    times: &'a [Option<DateTime<Utc>>],
    run_time: Option<DateTime<Utc>>,
    /// No run time was given: `run_time` is the series' first time, a guess.
    run_guessed: bool,
    ensemble: bool,
}

fn decode_into(
    bytes: &[u8],
    location_name: &str,
    run_time: Option<DateTime<Utc>>,
    model: Option<&str>,
    out: &mut Decoded<ForecastRow>,
) -> Result<(), String> {
    let location = location_name.trim();
    if location.is_empty() {
        return Err("empty location_name".into());
    }
    let text = input_text(bytes).map_err(|e| e.to_string())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let root: Value = serde_json::from_str(text).map_err(|e| format!("bad JSON: {e}"))?;
    let root = single_location(&root)?;
    if root.get("error").and_then(Value::as_bool) == Some(true) {
        let reason = root.get("reason").and_then(Value::as_str).unwrap_or("no reason given");
        return Err(format!("Open-Meteo error: {}", show(reason)));
    }
    let hourly = root.get("hourly").and_then(Value::as_object).ok_or("no hourly object")?;
    let time = hourly.get("time").and_then(Value::as_array).ok_or("hourly has no time array")?;
    out.read = time.len();
    let offset = utc_offset(root)?;
    let times = valid_times(time, offset, out);
    let units = root.get("hourly_units").and_then(Value::as_object);
    let (groups, ensemble) = group_series(hourly, units, time.len());
    if !groups.iter().any(|g| g.temp_key) {
        return Err("no temperature_2m series in hourly".into());
    }
    let ctx = Context {
        location,
        latitude: root.get("latitude").and_then(Value::as_f64),
        longitude: root.get("longitude").and_then(Value::as_f64),
        times: &times,
        run_time: run_time.or_else(|| times.iter().flatten().next().copied()),
        run_guessed: run_time.is_none(),
        ensemble,
    };
    for g in groups.iter().filter(|g| g.temp_key) {
        for (line, reason) in &g.errors {
            out.reject(*line, reason.as_str());
        }
        let id = g.model_id.or(model);
        let Some(id) = id else {
            out.reject(0, "temperature_2m has no model suffix and no model was given");
            continue;
        };
        match resolve_model(id, ensemble) {
            Ok(name) => emit_group(g, name, &ctx, out),
            Err(reason) => out.reject(0, reason),
        }
    }
    Ok(())
}

/// A multi-location request answers with an array; one location per call here, because
/// the caller names it.
fn single_location(root: &Value) -> Result<&Value, String> {
    match root {
        Value::Array(items) if items.len() == 1 => Ok(&items[0]),
        Value::Array(items) => Err(format!("{} locations in one response; expected 1", items.len())),
        Value::Object(_) => Ok(root),
        _ => Err("expected a JSON object".into()),
    }
}

fn utc_offset(root: &Value) -> Result<i64, String> {
    match root.get("utc_offset_seconds") {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v.as_i64().filter(|s| s.abs() <= 18 * 3600).ok_or_else(|| format!("bad utc_offset_seconds {v}")),
    }
}

/// UTC valid times of `hourly.time`; a bad entry is reported and gives no rows.
fn valid_times(time: &[Value], offset: i64, out: &mut Decoded<ForecastRow>) -> Vec<Option<DateTime<Utc>>> {
    time.iter()
        .enumerate()
        .map(|(i, v)| {
            let t = match v {
                Value::String(s) => parse_local(s).and_then(|(naive, written)| {
                    let off = written.map_or(offset, i64::from);
                    naive.checked_sub_signed(Duration::seconds(off)).map(|n| n.and_utc())
                }),
                Value::Number(n) => n.as_i64().and_then(|s| DateTime::from_timestamp(s, 0)),
                _ => None,
            };
            if t.is_none() {
                out.reject(i + 1, format!("bad time {}", clip_json(v)));
            }
            t
        })
        .collect()
}

/// Groups the mapped keys by model (and previous-day lead). Keys with a bad array or
/// unknown unit are skipped, their errors kept with the group: a group without a
/// temperature key is not a model (`precipitation_probability_<model>` parses as
/// precipitation of model `probability_<model>`) and its errors are noise. Returns whether
/// the response is an ensemble.
fn group_series<'a>(
    hourly: &'a Map<String, Value>,
    units: Option<&'a Map<String, Value>>,
    len: usize,
) -> (Vec<Group<'a>>, bool) {
    let keys: Vec<(&String, KeyParts<'_>)> = hourly.iter().filter_map(|(k, _)| Some((k, parse_key(k)?))).collect();
    let ensemble = keys.iter().any(|(_, p)| p.member.is_some());
    let previous = keys.iter().any(|(_, p)| p.day.is_some());
    let mut groups: Vec<Group<'a>> = Vec::new();
    for (key, parts) in keys {
        // In a previous-runs response the unsuffixed series is the latest run: day 0.
        let day = parts.day.or(previous.then_some(0));
        let idx = match groups.iter().position(|g| g.model_id == parts.model && g.day == day) {
            Some(idx) => idx,
            None => {
                let group =
                    Group { model_id: parts.model, day, series: Vec::new(), temp_key: false, errors: Vec::new() };
                groups.push(group);
                groups.len() - 1
            }
        };
        let group = &mut groups[idx];
        group.temp_key |= parts.var == Var::Temp;
        let Some(values) = hourly.get(key.as_str()).and_then(Value::as_array) else {
            group.errors.push((0, format!("{key}: expected an array")));
            continue;
        };
        if values.len() != len {
            group.errors.push((0, format!("{key}: {} values for {len} times", values.len())));
            continue;
        }
        if let Some(i) = values.iter().position(|v| !v.is_null() && !v.is_number()) {
            group.errors.push((i + 1, format!("{}: expected a number, found {}", show(key), clip_json(&values[i]))));
        }
        let unit_text = units.and_then(|u| u.get(key.as_str())).and_then(Value::as_str);
        let unit = match parse_unit(parts.var, unit_text) {
            Ok(u) => u,
            Err(reason) => {
                group.errors.push((0, format!("{}: {reason}", show(key))));
                continue;
            }
        };
        if group.series.iter().any(|s| s.var == parts.var && s.unit != unit) {
            group.errors.push((0, format!("{key}: unit differs from the other members")));
            continue;
        }
        group.series.push(Series { var: parts.var, unit, values });
    }
    (groups, ensemble)
}

/// One row per hour that has a temperature.
fn emit_group(g: &Group<'_>, model: &'static str, ctx: &Context<'_>, out: &mut Decoded<ForecastRow>) {
    for (i, valid) in ctx.times.iter().enumerate() {
        let Some(valid) = *valid else {
            continue;
        };
        let Some((temp, temp_unit)) = g.value(Var::Temp, i) else {
            continue;
        };
        let run = match g.day {
            Some(day) => previous_run_time(valid, day),
            None => ctx.run_time,
        };
        let Some(run) = run else {
            out.reject(i + 1, "no run time");
            continue;
        };
        if valid < run {
            out.reject(i + 1, format!("{model}: valid time {valid} before run time {run}"));
            continue;
        }
        let Ok(forecast_hour) = i32::try_from((valid - run).num_hours()) else {
            out.reject(i + 1, "lead time out of range");
            continue;
        };
        // When the value could first be known (`lake::availability`): a day-N value is
        // the run that was latest about 24·N h before its valid time, so not before then;
        // a guessed run time bounds nothing.
        let published_after_s = match g.day {
            Some(day) => u32::try_from((valid - Duration::days(i64::from(day)) - run).num_seconds()).unwrap_or(0),
            None if ctx.run_guessed => PUBLICATION_UNKNOWN,
            None => 0,
        };
        let mut row = ForecastRow {
            model,
            location_name: ctx.location.into(),
            latitude: ctx.latitude.into(),
            longitude: ctx.longitude.into(),
            run_time: run,
            valid_time: valid,
            forecast_hour,
            published_after_s,
            ..Default::default()
        };
        apply(&mut row, Var::Temp, temp_unit, temp);
        for s in &g.series {
            if s.var == Var::Temp || (s.var == Var::Code && ctx.ensemble) {
                continue;
            }
            if let Some((v, unit)) = g.value(s.var, i) {
                apply(&mut row, s.var, unit, v);
            }
        }
        row.complete_temperatures();
        out.records.push(row);
    }
}

/// Stores one value in its column(s), filling both units where spec 2.5 has two.
fn apply(row: &mut ForecastRow, var: Var, unit: Unit, v: f64) {
    match var {
        Var::Temp => match unit {
            Unit::DegF => row.temperature_f = v.into(),
            _ => row.temperature_c = v.into(),
        },
        Var::Dew => set_both(&mut row.dew_point_f, &mut row.dew_point_c, both_temps(unit, v)),
        Var::Apparent => set_both(&mut row.apparent_temp_f, &mut row.apparent_temp_c, both_temps(unit, v)),
        Var::WindSpeed => set_both(&mut row.wind_speed_mph, &mut row.wind_speed_kmh, both_speeds(unit, v)),
        Var::Gusts => set_both(&mut row.wind_gusts_mph, &mut row.wind_gusts_kmh, both_speeds(unit, v)),
        Var::Precip => {
            let mm_in = match unit {
                Unit::Inch => (v * MM_PER_INCH, v),
                _ => (v, v / MM_PER_INCH),
            };
            set_both(&mut row.precipitation_mm, &mut row.precipitation_in, mm_in)
        }
        Var::WindDir => row.wind_direction_deg = Some(v.round() as i32),
        Var::Code => row.weather_code = Some(v.round() as i32),
        Var::Rh => row.relative_humidity = v.into(),
        Var::Cloud => row.cloud_cover = v.into(),
        Var::PressureMsl => row.pressure_msl_hpa = v.into(),
        Var::PressureSfc => row.surface_pressure_hpa = v.into(),
    }
}

/// (°F, °C).
fn both_temps(unit: Unit, v: f64) -> (f64, f64) {
    match unit {
        Unit::DegF => (v, f_to_c(v)),
        _ => (c_to_f(v), v),
    }
}

/// (mph, km/h).
fn both_speeds(unit: Unit, v: f64) -> (f64, f64) {
    let (mph, kmh) = match unit {
        Unit::Mph => (v, v * KMH_PER_MPH),
        Unit::Knots => (kt_to_mph(v), kt_to_kmh(v)),
        Unit::MetresPerSecond => (v * 3.6 / KMH_PER_MPH, v * 3.6),
        _ => (v / KMH_PER_MPH, v),
    };
    (mph, kmh)
}

/// Sets a pair of unit columns.
fn set_both(a: &mut OptF64, b: &mut OptF64, (x, y): (f64, f64)) {
    (*a, *b) = (x.into(), y.into());
}

/// A JSON value for an error message, at most 32 characters.
fn clip_json(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(32) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// A name or value from the response as a reason shows it: at most 60 characters,
/// control characters escaped.
fn show(s: &str) -> std::borrow::Cow<'_, str> {
    crate::decode::text::quote(s, 60)
}

#[cfg(test)]
mod tests;
