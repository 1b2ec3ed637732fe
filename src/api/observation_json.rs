//! Observation objects as the API returns them (spec 2.1 for v2, part 9 for v1), and the
//! trading-day extremes of `mode=svc_high` (spec 2.2; v1's day high).
//! Celsius fields keep the report's precision; `*_display` is the station's native unit and
//! `*_f` Fahrenheit, both integers as spec 2.1 types them (whole °F, or whole °C at Celsius
//! stations, rounded half away from zero). The one exception is `temperature_display`,
//! which spec 2.1 types decimal: Celsius stations keep its tenths.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::catalog::Station;
use crate::decode::metar::temperature_fields;
use crate::decode::types::{DailyReport, Metar};
use crate::lake::rows::LakeRecord;
use crate::time::{fmt_iso_utc, fmt_utc};
use crate::trading_day::TradingDay;
use crate::units::{c_to_f, f_to_c, relative_humidity, round1, Units};

/// Observation record, v2 (spec 2.1).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ObservationV2 {
    /// Record id (53 bits of the natural-key hash: stable across re-ingest).
    pub id: i64,
    pub station_code: String,
    /// `YYYY-MM-DD HH:MM:SS`, UTC.
    pub observation_time: String,
    /// `METAR`, `SPECI` or `HF-METAR`.
    pub report_type: String,
    /// Celsius; null when missing or suspect (outside −60…60 °C).
    pub temperature: Option<f64>,
    pub temperature_display: Option<f64>,
    pub temperature_f: Option<i64>,
    /// Lowest probable temperature, native units.
    pub lowest_probable: Option<i64>,
    pub highest_probable: Option<i64>,
    pub units: &'static str,
    /// 1 = exact (T-group); otherwise the number of integer °F the reading allows.
    pub precision_level: Option<i64>,
    pub dew_point: Option<f64>,
    pub dew_point_display: Option<i64>,
    pub dew_point_f: Option<i64>,
    pub relative_humidity: Option<f64>,
    /// Degrees as a string, `VRB` for variable.
    pub wind_direction: Option<String>,
    /// Knots.
    pub wind_speed: Option<f64>,
    pub wind_gust: Option<f64>,
    /// Statute miles.
    pub visibility: Option<f64>,
    /// hPa.
    pub altimeter: Option<f64>,
    /// hPa; null without an SLP group.
    pub sea_level_pressure: Option<f64>,
    pub six_hour_high: Option<f64>,
    pub six_hour_high_display: Option<i64>,
    pub six_hour_high_f: Option<i64>,
    pub six_hour_low: Option<f64>,
    pub six_hour_low_display: Option<i64>,
    pub six_hour_low_f: Option<i64>,
    /// The report's 24-hour maximum temperature group (remark `4snTTTsnTTT`), Celsius
    /// tenths: present in the report that closes the station's Local Standard Time day (US
    /// ASOS, around local standard midnight), null in every other report. It covers the 24
    /// hours ending at the report, the span the `nws` trading day settles on. Null outside
    /// −60…60 °C, as the engine drops such values.
    pub twentyfour_hour_high: Option<f64>,
    pub twentyfour_hour_high_display: Option<i64>,
    pub twentyfour_hour_high_f: Option<i64>,
    /// The same group's 24-hour minimum, Celsius.
    pub twentyfour_hour_low: Option<f64>,
    pub twentyfour_hour_low_display: Option<i64>,
    pub twentyfour_hour_low_f: Option<i64>,
    /// Climate-report (CLI) values for the observation's Local Standard Time day, US only.
    pub cli_high: Option<f64>,
    pub cli_high_display: Option<i64>,
    pub cli_high_f: Option<i64>,
    pub cli_low: Option<f64>,
    pub cli_low_display: Option<i64>,
    pub cli_low_f: Option<i64>,
    /// Daily-summary (DSM) values for the same day, US only.
    pub dsm_high: Option<f64>,
    pub dsm_high_display: Option<i64>,
    pub dsm_high_f: Option<i64>,
    pub dsm_low: Option<f64>,
    pub dsm_low_display: Option<i64>,
    pub dsm_low_f: Option<i64>,
    /// The raw report text.
    pub raw_text: String,
}

/// The CLI and DSM of an observation's day, if any.
#[derive(Debug, Clone, Default)]
pub struct DayReports<'a> {
    pub cli: Option<&'a DailyReport>,
    pub dsm: Option<&'a DailyReport>,
}

/// A JSON-safe record id from the natural-key hash.
pub fn record_id(m: &Metar) -> i64 {
    (m.row_key() >> 11) as i64
}

fn native(units: Units, c: Option<f64>) -> Option<f64> {
    c.map(|c| match units {
        Units::Fahrenheit => c_to_f(c).round(),
        Units::Celsius => c,
    })
}

/// A `*_display` value: whole native units.
fn native_whole(units: Units, c: Option<f64>) -> Option<i64> {
    native(units, c).map(|v| v.round() as i64)
}

fn whole_f(c: Option<f64>) -> Option<i64> {
    c.map(|c| c_to_f(c).round() as i64)
}

/// (°C, native whole units, °F) of a report value given in °F.
fn from_f(units: Units, f: Option<i32>) -> (Option<f64>, Option<i64>, Option<i64>) {
    match f {
        None => (None, None, None),
        Some(f) => {
            let c = round1(f_to_c(f64::from(f)));
            let display = match units {
                Units::Fahrenheit => i64::from(f),
                Units::Celsius => c.round() as i64,
            };
            (Some(c), Some(display), Some(i64::from(f)))
        }
    }
}

impl ObservationV2 {
    pub fn new(m: &Metar, station: &Station, reports: DayReports<'_>) -> Self {
        let units = station.units;
        let suspect = m.temperature_c().is_some_and(crate::units::is_suspect_c);
        let t = m.temperature_c().filter(|_| !suspect);
        let td = m.dew_point_c();
        let plausible = |c: Option<f64>| c.filter(|c| !crate::units::is_suspect_c(*c));
        let (day_max, day_min) = (plausible(m.day_max_c), plausible(m.day_min_c));
        let p = temperature_fields(m).filter(|_| !suspect);
        let (lo, hi) = match (units, p) {
            (_, None) => (None, None),
            (Units::Fahrenheit, Some(p)) => (Some(i64::from(p.lowest_f)), Some(i64::from(p.highest_f))),
            (Units::Celsius, Some(_)) => {
                let c = m.temp_whole_c.map(i64::from).or(t.map(|c| c.round() as i64));
                (c, c)
            }
        };
        let (cli_h, cli_l, dsm_h, dsm_l) = match station.is_us() {
            true => (
                from_f(units, reports.cli.and_then(|r| r.max_f)),
                from_f(units, reports.cli.and_then(|r| r.min_f)),
                from_f(units, reports.dsm.and_then(|r| r.max_f)),
                from_f(units, reports.dsm.and_then(|r| r.min_f)),
            ),
            false => Default::default(),
        };
        ObservationV2 {
            id: record_id(m),
            station_code: m.station.clone(),
            observation_time: fmt_utc(m.time),
            report_type: crate::lake::rows::report_type(m).to_string(),
            temperature: t,
            temperature_display: match (units, p) {
                (Units::Fahrenheit, Some(p)) if p.precision_level == 1 => Some(f64::from(p.lowest_f)),
                _ => native(units, t),
            },
            temperature_f: whole_f(t),
            lowest_probable: lo,
            highest_probable: hi,
            units: units.as_str(),
            precision_level: p.map(|p| i64::from(p.precision_level)),
            dew_point: td,
            dew_point_display: native_whole(units, td),
            dew_point_f: whole_f(td),
            relative_humidity: t.zip(td).map(|(t, td)| relative_humidity(t, td)),
            wind_direction: if m.wind_variable { Some("VRB".into()) } else { m.wind_dir_deg.map(|d| d.to_string()) },
            wind_speed: m.wind_speed_kt,
            wind_gust: m.wind_gust_kt,
            visibility: m.visibility_sm,
            altimeter: m.altimeter_hpa.map(|a| (a * 10.0).round() / 10.0),
            sea_level_pressure: m.sea_level_pressure_hpa,
            six_hour_high: m.six_hour_max_c,
            six_hour_high_display: native_whole(units, m.six_hour_max_c),
            six_hour_high_f: whole_f(m.six_hour_max_c),
            six_hour_low: m.six_hour_min_c,
            six_hour_low_display: native_whole(units, m.six_hour_min_c),
            six_hour_low_f: whole_f(m.six_hour_min_c),
            twentyfour_hour_high: day_max,
            twentyfour_hour_high_display: native_whole(units, day_max),
            twentyfour_hour_high_f: whole_f(day_max),
            twentyfour_hour_low: day_min,
            twentyfour_hour_low_display: native_whole(units, day_min),
            twentyfour_hour_low_f: whole_f(day_min),
            cli_high: cli_h.0,
            cli_high_display: cli_h.1,
            cli_high_f: cli_h.2,
            cli_low: cli_l.0,
            cli_low_display: cli_l.1,
            cli_low_f: cli_l.2,
            dsm_high: dsm_h.0,
            dsm_high_display: dsm_h.1,
            dsm_high_f: dsm_h.2,
            dsm_low: dsm_l.0,
            dsm_low_display: dsm_l.1,
            dsm_low_f: dsm_l.2,
            raw_text: m.raw.clone(),
        }
    }
}

/// Observation record, v1 (part 9): Fahrenheit-oriented names.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ObservationV1 {
    pub station_code: String,
    /// ISO 8601 with Z.
    pub observation_time: String,
    /// Celsius.
    pub temperature: Option<f64>,
    pub temperature_f: Option<i64>,
    pub lowest_probable_f: Option<i64>,
    pub highest_probable_f: Option<i64>,
    pub dew_point: Option<f64>,
    pub relative_humidity: Option<f64>,
    pub cli_high: Option<f64>,
    pub cli_high_f: Option<i64>,
    pub dsm_high: Option<f64>,
    pub dsm_high_f: Option<i64>,
    pub six_hour_high: Option<f64>,
    /// Knots.
    pub wind_speed: Option<f64>,
    /// Statute miles.
    pub visibility: Option<f64>,
}

impl ObservationV1 {
    pub fn new(m: &Metar, station: &Station, reports: DayReports<'_>) -> Self {
        let v2 = ObservationV2::new(m, station, reports);
        let p = temperature_fields(m).filter(|_| v2.temperature.is_some());
        ObservationV1 {
            station_code: v2.station_code,
            observation_time: fmt_iso_utc(m.time),
            temperature: v2.temperature,
            temperature_f: v2.temperature_f,
            lowest_probable_f: p.map(|p| i64::from(p.lowest_f)),
            highest_probable_f: p.map(|p| i64::from(p.highest_f)),
            dew_point: v2.dew_point,
            relative_humidity: v2.relative_humidity,
            cli_high: v2.cli_high,
            cli_high_f: v2.cli_high_f,
            dsm_high: v2.dsm_high,
            dsm_high_f: v2.dsm_high_f,
            six_hour_high: v2.six_hour_high,
            wind_speed: v2.wind_speed,
            visibility: v2.visibility,
        }
    }
}

/// An observation with the CLI/DSM of its Local Standard Time day.
#[derive(Debug, Clone)]
pub struct WithReports {
    pub cli: Option<DailyReport>,
    pub dsm: Option<DailyReport>,
}

impl WithReports {
    pub fn as_ref_pair(&self) -> DayReports<'_> {
        DayReports { cli: self.cli.as_ref(), dsm: self.dsm.as_ref() }
    }
}

/// Response of `mode=svc_high` (spec 2.2, plus `is_final`, sources and valid-through times).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct SvcHigh {
    pub station_code: String,
    /// Trading day `YYYY-MM-DD` (Local Standard Time for nws, civil for wu).
    pub date: String,
    /// Day high in native units; null before any reading.
    pub svc_high: Option<f64>,
    pub svc_low: Option<f64>,
    pub time_of_high_utc: Option<String>,
    pub time_of_low_utc: Option<String>,
    /// `nws` or `wu`.
    pub calculation_logic: String,
    pub units: String,
    pub anomaly: bool,
    /// Keyed by the requested logic (spec 2.4).
    #[schema(value_type = Object)]
    pub data_quality: BTreeMap<String, serde_json::Value>,
    /// A final CLI fixed the values (nws).
    pub is_final: bool,
    /// Where the value came from: observation, one_minute, six_hour_group,
    /// twenty_four_hour_group, dsm or cli.
    pub high_source: Option<String>,
    pub low_source: Option<String>,
    /// Every source that reached `svc_high`: the sources (names as in `high_source`) whose
    /// own high for the day equals it, in the order observation, one_minute, six_hour_group,
    /// twenty_four_hour_group, dsm, cli; always includes `high_source`; `[]` without a value.
    /// Several entries mean independent reports agree on the value.
    pub svc_high_sources: Vec<String>,
    /// The same for `svc_low`.
    pub svc_low_sources: Vec<String>,
    pub high_valid_through_utc: Option<String>,
    pub low_valid_through_utc: Option<String>,
}

impl From<&TradingDay> for SvcHigh {
    /// The answer for a trading day: the engine's extremes, or null values with a data
    /// quality that says why.
    fn from(day: &TradingDay) -> Self {
        let x = day.extremes.as_ref();
        let logic = day.logic.as_str();
        SvcHigh {
            station_code: day.station.code.clone(),
            date: day.date.to_string(),
            svc_high: x.and_then(|x| x.high).map(|e| e.value),
            svc_low: x.and_then(|x| x.low).map(|e| e.value),
            time_of_high_utc: x.and_then(|x| x.high).map(|e| fmt_utc(e.time)),
            time_of_low_utc: x.and_then(|x| x.low).map(|e| fmt_utc(e.time)),
            calculation_logic: logic.to_string(),
            units: day.station.units.as_str().to_string(),
            anomaly: x.is_some_and(|x| x.anomaly),
            data_quality: BTreeMap::from([(
                logic.to_string(),
                serde_json::to_value(&day.data_quality).unwrap_or_default(),
            )]),
            is_final: x.is_some_and(|x| x.is_final),
            high_source: x.and_then(|x| x.high).map(|e| e.source.as_str().to_string()),
            low_source: x.and_then(|x| x.low).map(|e| e.source.as_str().to_string()),
            svc_high_sources: x.map(|x| source_names(&x.high_sources)).unwrap_or_default(),
            svc_low_sources: x.map(|x| source_names(&x.low_sources)).unwrap_or_default(),
            high_valid_through_utc: x.and_then(|x| x.high_valid_through_utc).map(fmt_utc),
            low_valid_through_utc: x.and_then(|x| x.low_valid_through_utc).map(fmt_utc),
        }
    }
}

fn source_names(sources: &[crate::extremes::Source]) -> Vec<String> {
    sources.iter().map(|s| s.as_str().to_string()).collect()
}

/// v1 `mode=svc_high` response.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct SvcHighV1 {
    pub station_code: String,
    pub date: String,
    /// °F for US stations (native units otherwise).
    pub svc_high: Option<f64>,
    pub time_of_high_utc: Option<String>,
    /// `standard` (nws logic, Local Standard Time day) for US stations, `civil` (wu) otherwise.
    pub calculation_logic: String,
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone, Utc};

    use super::*;
    use crate::catalog::Catalog;
    use crate::decode::metar::parse_metar;
    use crate::decode::types::DailyKind;

    fn report(kind: DailyKind, max_f: i32, min_f: i32) -> DailyReport {
        let date = NaiveDate::from_ymd_opt(2026, 3, 8).unwrap();
        DailyReport { max_f: Some(max_f), min_f: Some(min_f), ..DailyReport::blank(kind, "KNYC", date) }
    }

    /// Spec 2.1: every `*_display` but `temperature_display` is an integer, in native
    /// units (°F at US stations, °C elsewhere).
    #[test]
    fn display_fields_are_integers_in_native_units() {
        let t = Utc.with_ymd_and_hms(2026, 3, 8, 18, 0, 0).unwrap();
        let m = parse_metar("KNYC 081751Z 27008KT 10SM CLR 14/M06 A3021 RMK AO2 T01441061 10150 20017", t).unwrap();
        let (cli, dsm) = (report(DailyKind::Cli, 58, 41), report(DailyKind::Dsm, 57, 40));
        let knyc = Catalog::global().get("KNYC").unwrap();
        let v = serde_json::to_value(ObservationV2::new(&m, knyc, DayReports { cli: Some(&cli), dsm: Some(&dsm) }))
            .unwrap();
        let want = [
            ("dew_point_display", 21),
            ("six_hour_high_display", 59),
            ("six_hour_low_display", 35),
            ("cli_high_display", 58),
            ("cli_low_display", 41),
            ("dsm_high_display", 57),
            ("dsm_low_display", 40),
        ];
        for (f, n) in want {
            assert!(v[f].is_i64(), "{f}: {}", v[f]);
            assert_eq!(v[f].as_i64(), Some(n), "{f}");
        }
        assert_eq!(v["temperature_display"].as_f64(), Some(58.0));

        let eglc = Catalog::global().get("EGLC").unwrap();
        let m = parse_metar("EGLC 081750Z 27008KT 9999 FEW030 14/M06 Q1021 RMK T01441061 10156", t).unwrap();
        let v = serde_json::to_value(ObservationV2::new(&m, eglc, DayReports::default())).unwrap();
        assert_eq!(v["dew_point_display"].as_i64(), Some(-6), "{}", v["dew_point_display"]);
        assert_eq!(v["six_hour_high_display"].as_i64(), Some(16), "15.6 °C shows as 16");
        assert_eq!(v["temperature_display"].as_f64(), Some(14.4), "decimal in spec 2.1: tenths kept");
        assert!(v["cli_high_display"].is_null());
    }
}
