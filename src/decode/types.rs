//! Typed records every decoder produces. Decoders are pure: bytes in, records plus
//! per-line errors out. The lake and the live path consume only these types, so a new
//! container format never touches anything downstream.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use compact_str::CompactString;
use serde::{Deserialize, Serialize};

/// One rejected input line: where it was and why, so an ingest summary can name it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineError {
    /// 1-based line number in the input (or record index for JSON inputs); 0 when the
    /// reason concerns the input as a whole rather than one line (an Open-Meteo response
    /// for a model that cannot be stored).
    pub line: usize,
    pub reason: String,
}

/// Output of a decoder run over one input.
#[derive(Debug, Clone, Default)]
pub struct Decoded<T> {
    pub records: Vec<T>,
    pub errors: Vec<LineError>,
    /// Lines (or records) looked at, including skipped headers, for the ingest summary.
    pub read: usize,
}

impl<T> Decoded<T> {
    pub fn new() -> Self {
        Decoded { records: Vec::new(), errors: Vec::new(), read: 0 }
    }
    pub fn reject(&mut self, line: usize, reason: impl Into<String>) {
        self.errors.push(LineError { line, reason: reason.into() });
    }
    /// An input refused as a whole (it is not text, see [`crate::decode::text::NotText`]):
    /// one error at line 1, nothing decoded.
    pub fn refused(reason: impl Into<String>) -> Self {
        let mut d = Self::new();
        d.read = 1;
        d.reject(1, reason);
        d
    }
}

/// The kind of surface report, as the stream and API name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReportKind {
    /// Routine hourly METAR.
    Metar,
    /// Special unscheduled report.
    Speci,
    /// 5-minute high-frequency ASOS report (IEM marks them `MADISHF`).
    HfMetar,
}

impl ReportKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Metar => "METAR",
            ReportKind::Speci => "SPECI",
            ReportKind::HfMetar => "HF-METAR",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "METAR" => Some(ReportKind::Metar),
            "SPECI" => Some(ReportKind::Speci),
            "HF-METAR" => Some(ReportKind::HfMetar),
            _ => None,
        }
    }
}

/// A decoded METAR / SPECI / HF-METAR. Temperatures in Celsius; `None` when absent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metar {
    /// ICAO identifier from the report text (KCVG, not IEM's CVG).
    pub station: String,
    pub time: DateTime<Utc>,
    pub kind: Option<ReportKind>,
    pub auto: bool,
    pub cor: bool,
    /// Degrees true; `None` for calm-without-direction or VRB.
    pub wind_dir_deg: Option<u16>,
    pub wind_variable: bool,
    pub wind_speed_kt: Option<f64>,
    pub wind_gust_kt: Option<f64>,
    /// Variable sector `dddVddd`.
    pub wind_var_from: Option<u16>,
    pub wind_var_to: Option<u16>,
    /// Statute miles; `M1/4SM` gives 0.25 with `visibility_less_than`, `P6SM` its bound 6.
    /// Metres are converted without rounding, so `round(visibility_sm * 1609.344)` is
    /// exactly the metres the report gave (`0100` → 100 m; 9999 and CAVOK → 10 km).
    pub visibility_sm: Option<f64>,
    pub visibility_less_than: bool,
    /// Body temperature, whole degrees Celsius.
    pub temp_whole_c: Option<i32>,
    pub dew_whole_c: Option<i32>,
    /// T-group tenths, when present (HF-METAR's zero-tenth T-group is NOT tenths, see
    /// `tgroup_is_whole`).
    pub tgroup_temp_c: Option<f64>,
    pub tgroup_dew_c: Option<f64>,
    /// True when the T-group only restates a whole-degree value (IEM's HF-METAR encoding).
    pub tgroup_is_whole: bool,
    pub altimeter_hpa: Option<f64>,
    pub sea_level_pressure_hpa: Option<f64>,
    /// 6-hour max/min groups (1sTTT / 2sTTT), Celsius tenths.
    pub six_hour_max_c: Option<f64>,
    pub six_hour_min_c: Option<f64>,
    /// 24-hour max/min group (4sTTTsTTT), Celsius tenths.
    pub day_max_c: Option<f64>,
    pub day_min_c: Option<f64>,
    /// Hourly precipitation (Prrrr), inches; P0000 is a trace: Some(0.0) with `precip_trace`.
    pub precip_hour_in: Option<f64>,
    pub precip_trace: bool,
    /// 3/6-hour precipitation (6RRRR), inches; `60000` is a trace, `6////` is None.
    pub precip_6h_in: Option<f64>,
    /// 24-hour precipitation (7RRRR), inches.
    pub precip_24h_in: Option<f64>,
    /// The report text as received (whitespace normalised, trailing `=` removed).
    pub raw: String,
    /// When the source says it received the report (aviationweather.gov's `receiptTime`):
    /// what `available_at` of a backfilled report rests on. Not stored otherwise.
    pub receipt_time: Option<DateTime<Utc>>,
}

impl Metar {
    /// Best temperature in Celsius: T-group tenths when they are real tenths, else whole.
    pub fn temperature_c(&self) -> Option<f64> {
        match (self.tgroup_temp_c, self.tgroup_is_whole) {
            (Some(t), false) => Some(t),
            _ => self.temp_whole_c.map(f64::from).or(self.tgroup_temp_c),
        }
    }
    /// Best dew point in Celsius, same precedence as `temperature_c`.
    pub fn dew_point_c(&self) -> Option<f64> {
        match (self.tgroup_dew_c, self.tgroup_is_whole) {
            (Some(t), false) => Some(t),
            _ => self.dew_whole_c.map(f64::from).or(self.tgroup_dew_c),
        }
    }
    /// True when the temperature carries tenths (an exact integer °F behind it).
    pub fn has_tenths(&self) -> bool {
        self.tgroup_temp_c.is_some() && !self.tgroup_is_whole
    }
}

/// One-minute ASOS temperature. `temp_f` is `None` for the -999 sentinel: a gap, kept.
#[derive(Debug, Clone, PartialEq)]
pub struct OneMinute {
    pub station: String,
    pub time: DateTime<Utc>,
    pub temp_f: Option<f64>,
}

/// Which official daily product a [`DailyReport`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DailyKind {
    /// NWS Daily Climate Report (CLI).
    Cli,
    /// Daily Summary Message (DSM).
    Dsm,
}

impl DailyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DailyKind::Cli => "cli",
            DailyKind::Dsm => "dsm",
        }
    }
}

/// A CLI or DSM daily summary for one station and one Local Standard Time day.
/// Temperatures in °F as the products report them; times are local standard time.
#[derive(Debug, Clone, PartialEq)]
pub struct DailyReport {
    pub kind: DailyKind,
    /// ICAO id (CLINYC -> KNYC; DSM ids are 3 or 4 letters, US ones get a K prefix).
    pub station: String,
    /// The climate day the values are for.
    pub date: NaiveDate,
    pub max_f: Option<i32>,
    pub max_time_lst: Option<NaiveDateTime>,
    pub min_f: Option<i32>,
    pub min_time_lst: Option<NaiveDateTime>,
    pub precip_in: Option<f64>,
    pub precip_trace: bool,
    pub precip_mtd_in: Option<f64>,
    pub precip_mtd_trace: bool,
    /// False for preliminary reports ("VALID AS OF ..." / "VALID TODAY AS OF ...").
    pub is_final: bool,
    /// Local time the preliminary values are valid through, when stated.
    pub valid_as_of_lst: Option<NaiveDateTime>,
    /// Issue time from the WMO header (UTC), when it can be resolved.
    pub issued_at: Option<DateTime<Utc>>,
    /// Correction (CCA/COR) flag.
    pub correction: bool,
    pub raw: String,
}

impl DailyReport {
    /// Order among reports of one kind for the same station and day (several arrive: a
    /// preliminary, the final, a correction issued later or under the same heading): a
    /// final beats a preliminary, then the latest issue wins, then a correction beats the
    /// report it corrects. The one order every reader of reports uses.
    pub fn precedence(&self) -> (bool, Option<DateTime<Utc>>, bool) {
        (self.is_final, self.issued_at, self.correction)
    }

    /// A final, uncorrected report with no values: decoders and tests fill in what the
    /// product states.
    pub fn blank(kind: DailyKind, station: &str, date: NaiveDate) -> Self {
        DailyReport {
            kind,
            station: station.to_string(),
            date,
            max_f: None,
            max_time_lst: None,
            min_f: None,
            min_time_lst: None,
            precip_in: None,
            precip_trace: false,
            precip_mtd_in: None,
            precip_mtd_trace: false,
            is_final: true,
            valid_as_of_lst: None,
            issued_at: None,
            correction: false,
            raw: String::new(),
        }
    }
}

/// An optional number in 8 bytes instead of `Option<f64>`'s 16: NaN stands for "none".
/// Forecast rows carry 19 of them and bulk loads hold millions of rows, so this takes a
/// row from 392 to 240 bytes. Decoders never produce a NaN value (non-finite numbers are
/// rejected), so no value is lost to the encoding; a NaN given in is read as none.
#[derive(Clone, Copy)]
pub struct OptF64(f64);

impl OptF64 {
    pub const NONE: OptF64 = OptF64(f64::NAN);

    pub fn get(self) -> Option<f64> {
        (!self.0.is_nan()).then_some(self.0)
    }

    pub fn is_some(self) -> bool {
        !self.0.is_nan()
    }

    pub fn is_none(self) -> bool {
        self.0.is_nan()
    }

    /// Sets `v` unless a value is already there (`Option::get_or_insert`).
    pub fn fill(&mut self, v: f64) {
        if self.is_none() {
            self.0 = v;
        }
    }
}

impl Default for OptF64 {
    fn default() -> Self {
        OptF64::NONE
    }
}

impl From<Option<f64>> for OptF64 {
    fn from(v: Option<f64>) -> Self {
        OptF64(v.unwrap_or(f64::NAN))
    }
}

impl From<f64> for OptF64 {
    fn from(v: f64) -> Self {
        OptF64(v)
    }
}

impl PartialEq for OptF64 {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl PartialEq<Option<f64>> for OptF64 {
    fn eq(&self, other: &Option<f64>) -> bool {
        self.get() == *other
    }
}

impl std::fmt::Debug for OptF64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// One forecast row in the column names of spec 2.5. Units as named.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ForecastRow {
    /// One of [`crate::models::MODEL_NAMES`] (decoders map names onto that list,
    /// so a row never carries an unknown model nor allocates its name).
    pub model: &'static str,
    /// Inline up to 24 bytes (station codes, most place names): a bulk load decodes
    /// millions of rows, and a heap string each was a visible share of decoding them.
    pub location_name: CompactString,
    pub latitude: OptF64,
    pub longitude: OptF64,
    pub run_time: DateTime<Utc>,
    pub valid_time: DateTime<Utc>,
    pub forecast_hour: i32,
    pub temperature_k: OptF64,
    pub temperature_f: OptF64,
    pub temperature_c: OptF64,
    pub relative_humidity: OptF64,
    pub dew_point_f: OptF64,
    pub dew_point_c: OptF64,
    pub apparent_temp_f: OptF64,
    pub apparent_temp_c: OptF64,
    pub wind_speed_mph: OptF64,
    pub wind_speed_kmh: OptF64,
    pub wind_direction_deg: Option<i32>,
    pub wind_gusts_mph: OptF64,
    pub wind_gusts_kmh: OptF64,
    pub cloud_cover: OptF64,
    pub precipitation_mm: OptF64,
    pub precipitation_in: OptF64,
    pub weather_code: Option<i32>,
    pub pressure_msl_hpa: OptF64,
    pub surface_pressure_hpa: OptF64,
    /// Seconds after `run_time` before which this value cannot have been published, when
    /// the row knows better than its model's publication delay (`models::PUBLICATION`):
    /// 0 says the delay alone bounds it; Open-Meteo's previous-runs values are later;
    /// [`PUBLICATION_UNKNOWN`] when the run time was guessed, so only the time wxlake
    /// received the row is safe (`lake::availability`). Not stored: it decides
    /// `available_at` at the write.
    pub published_after_s: u32,
}

/// [`ForecastRow::published_after_s`] of a row whose run time is a guess.
pub const PUBLICATION_UNKNOWN: u32 = u32::MAX;

impl ForecastRow {
    /// The float columns in spec 2.5 order (`latitude` .. `surface_pressure_hpa`, without
    /// the integer `wind_direction_deg` and `weather_code`), for writers that emit them all
    /// in order: a fixed array, so a loop over it unrolls instead of calling a getter per
    /// value.
    pub fn floats(&self) -> [OptF64; 19] {
        [
            self.latitude,
            self.longitude,
            self.temperature_k,
            self.temperature_f,
            self.temperature_c,
            self.relative_humidity,
            self.dew_point_f,
            self.dew_point_c,
            self.apparent_temp_f,
            self.apparent_temp_c,
            self.wind_speed_mph,
            self.wind_speed_kmh,
            self.wind_gusts_mph,
            self.wind_gusts_kmh,
            self.cloud_cover,
            self.precipitation_mm,
            self.precipitation_in,
            self.pressure_msl_hpa,
            self.surface_pressure_hpa,
        ]
    }

    /// Fill whichever of K/F/C is missing from the one(s) present, so every row carries
    /// all three (spec 2.5: "present for all models").
    pub fn complete_temperatures(&mut self) {
        let c = self
            .temperature_c
            .get()
            .or_else(|| self.temperature_f.get().map(|f| (f - 32.0) * 5.0 / 9.0))
            .or_else(|| self.temperature_k.get().map(|k| k - 273.15));
        if let Some(c) = c {
            self.temperature_c.fill(c);
            self.temperature_f.fill(c * 9.0 / 5.0 + 32.0);
            self.temperature_k.fill(c + 273.15);
        }
    }
}

/// One version of the api.weather.gov hourly point forecast.
#[derive(Debug, Clone, PartialEq)]
pub struct NwsHourlyForecast {
    /// Station the forecast point belongs to, when known from the input (else set by caller).
    pub station: Option<String>,
    /// `generatedAt` (or `updateTime` when that is all there is).
    pub generated_at: DateTime<Utc>,
    pub periods: Vec<NwsHourlyPeriod>,
}

/// A forecast published as a day's high and low only (`decode::daily_forecasts`).
#[derive(Debug, Clone, PartialEq)]
pub struct DailyForecast {
    /// Who issued it: capitals, digits and `-`, not a model name.
    pub source: String,
    pub station: String,
    /// When it was issued, which is when it became available.
    pub issued_at: DateTime<Utc>,
    /// The settlement day it forecasts.
    pub date: NaiveDate,
    pub high: Option<f64>,
    pub low: Option<f64>,
    /// The unit of `high` and `low`.
    pub units: crate::units::Units,
}

/// One hourly period of an NWS forecast, temperature in °F.
#[derive(Debug, Clone, PartialEq)]
pub struct NwsHourlyPeriod {
    pub start_time: DateTime<Utc>,
    pub end_time: DateTime<Utc>,
    pub temperature_f: f64,
}

/// Reads a real-data fixture from `data/real/` (tests only).
#[cfg(test)]
pub(crate) fn fixture(rel: &str) -> Vec<u8> {
    let path = format!("{}/data/real/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opt_f64_reads_back_as_the_option_it_was_given() {
        for v in [None, Some(0.0), Some(-0.0), Some(-40.0), Some(1e-300), Some(f64::MAX), Some(f64::INFINITY)] {
            let o = OptF64::from(v);
            assert_eq!(o.get().map(f64::to_bits), v.map(f64::to_bits));
            assert_eq!((o.is_some(), o.is_none()), (v.is_some(), v.is_none()));
            assert_eq!(format!("{o:?}"), format!("{v:?}"));
        }
        // A NaN given in is none, and equal to none.
        assert_eq!(OptF64::from(f64::NAN), None);
        assert_eq!(OptF64::from(Some(f64::NAN)), OptF64::NONE);
        assert_ne!(OptF64::from(1.5), OptF64::NONE);
        let mut o = OptF64::default();
        o.fill(2.5);
        o.fill(3.0);
        assert_eq!(o, Some(2.5), "fill keeps the first value");
    }

    /// Bulk loads hold millions of forecast rows: keep the row compact.
    #[test]
    fn forecast_row_stays_compact() {
        assert_eq!(std::mem::size_of::<OptF64>(), 8);
        assert!(std::mem::size_of::<ForecastRow>() <= 240, "{}", std::mem::size_of::<ForecastRow>());
    }

    #[test]
    fn a_final_then_the_latest_issue_then_the_correction_takes_precedence() {
        let day = NaiveDate::from_ymd_opt(2013, 1, 2).unwrap();
        let at = |h| Some(day.and_hms_opt(h, 16, 0).unwrap().and_utc());
        let report = |is_final, issued_at, correction| DailyReport {
            is_final,
            issued_at,
            correction,
            ..DailyReport::blank(DailyKind::Cli, "KNYC", day)
        };
        let original = report(true, at(6), false);
        // A CCA under the original's heading time, and one issued later.
        assert!(report(true, at(6), true).precedence() > original.precedence());
        assert!(report(true, at(9), true).precedence() > report(true, at(6), true).precedence());
        assert!(report(true, at(9), false).precedence() > original.precedence());
        // A later preliminary does not replace the final.
        assert!(report(false, at(21), false).precedence() < original.precedence());
    }
}
