//! Unit conversions and the probable-range rule that the `nws` logic settles on.
//!
//! ASOS measures in whole °F and reports °C: a T-group (tenths) maps back to exactly one
//! integer °F, while a whole-degree body temperature covers every integer °F that rounds
//! to it. Those integer °F sets are what an official report can still turn out to be.

use serde::{Deserialize, Serialize};

/// °C → °F.
pub fn c_to_f(c: f64) -> f64 {
    c * 9.0 / 5.0 + 32.0
}

/// °F → °C.
pub fn f_to_c(f: f64) -> f64 {
    (f - 32.0) * 5.0 / 9.0
}

/// Round half away from zero, the METAR convention for whole degrees.
pub fn round_half_away(x: f64) -> f64 {
    x.round()
}

/// Round to one decimal (tenths), as T-groups and CLI conversions do.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The integer °F a T-group reading (tenths of °C) came from.
pub fn tenths_c_to_whole_f(c: f64) -> i32 {
    c_to_f(c).round() as i32
}

/// Inclusive integer °F range whose conversion to °C rounds to `whole_c`.
/// Never empty: 1 °C spans 1.8 °F, so one or two integers qualify (no ties exist, since
/// (f − 32)·5/9 is never exactly x.5 for integer f).
pub fn probable_f_range(whole_c: i32) -> (i32, i32) {
    let c = f64::from(whole_c);
    // f rounds to c when c − 0.5 < (f − 32)·5/9 < c + 0.5.
    let lo = c_to_f(c - 0.5).ceil() as i32;
    let hi = c_to_f(c + 0.5).floor() as i32;
    (lo, hi)
}

/// Probable range and precision of one temperature reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probable {
    pub lowest_f: i32,
    pub highest_f: i32,
    /// Number of integer °F values the reading allows: 1 = exact.
    pub precision_level: i32,
}

impl Probable {
    /// From a T-group (tenths): exact.
    pub fn from_tenths(c: f64) -> Self {
        let f = tenths_c_to_whole_f(c);
        Probable { lowest_f: f, highest_f: f, precision_level: 1 }
    }
    /// From a whole-degree Celsius reading.
    pub fn from_whole_c(c: i32) -> Self {
        let (lo, hi) = probable_f_range(c);
        Probable { lowest_f: lo, highest_f: hi, precision_level: hi - lo + 1 }
    }
    /// From an exact integer °F (one-minute data, CLI/DSM).
    pub fn exact_f(f: i32) -> Self {
        Probable { lowest_f: f, highest_f: f, precision_level: 1 }
    }
}

/// A station's native reporting unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Units {
    Fahrenheit,
    Celsius,
}

impl Units {
    pub fn as_str(self) -> &'static str {
        match self {
            Units::Fahrenheit => "fahrenheit",
            Units::Celsius => "celsius",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fahrenheit" | "f" => Some(Units::Fahrenheit),
            "celsius" | "c" => Some(Units::Celsius),
            _ => None,
        }
    }
    /// A Celsius value in these units, unrounded.
    pub fn from_c(self, c: f64) -> f64 {
        match self {
            Units::Fahrenheit => c_to_f(c),
            Units::Celsius => c,
        }
    }
    /// `v` in these units, in `to`, unrounded.
    pub fn convert(self, v: f64, to: Units) -> f64 {
        match (self, to) {
            (Units::Fahrenheit, Units::Celsius) => f_to_c(v),
            (Units::Celsius, Units::Fahrenheit) => c_to_f(v),
            _ => v,
        }
    }
}

/// Knots → mph and km/h.
pub fn kt_to_mph(kt: f64) -> f64 {
    kt * 1.150_779
}
pub fn kt_to_kmh(kt: f64) -> f64 {
    kt * 1.852
}
/// hPa → inHg (spec 2.1: divide by 33.8639).
pub fn hpa_to_inhg(hpa: f64) -> f64 {
    hpa / 33.8639
}
/// inHg → hPa.
pub fn inhg_to_hpa(inhg: f64) -> f64 {
    inhg * 33.8639
}

/// Relative humidity (%) from temperature and dew point in °C (Magnus formula, the one
/// NWS uses for its observation RH).
pub fn relative_humidity(t_c: f64, td_c: f64) -> f64 {
    let a = 17.625;
    let b = 243.04;
    let rh = 100.0 * ((a * td_c) / (b + td_c)).exp() / ((a * t_c) / (b + t_c)).exp();
    round1(rh.clamp(0.0, 100.0))
}

/// Plausible METAR temperature range (spec 8): outside it a reading is suspect.
pub const PLAUSIBLE_MIN_C: f64 = -60.0;
pub const PLAUSIBLE_MAX_C: f64 = 60.0;

/// True when a Celsius reading lies outside the plausible range.
pub fn is_suspect_c(c: f64) -> bool {
    !(PLAUSIBLE_MIN_C..=PLAUSIBLE_MAX_C).contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probable_range_covers_exactly_the_rounding_preimage() {
        // Brute force: every integer °F from -80 to 140 falls in exactly the range of the
        // whole °C it rounds to.
        for f in -80..=140 {
            let c = f_to_c(f64::from(f)).round() as i32;
            let (lo, hi) = probable_f_range(c);
            assert!(lo <= f && f <= hi, "{f}F -> {c}C -> [{lo},{hi}]");
        }
        assert_eq!(probable_f_range(0), (32, 32));
        assert_eq!(probable_f_range(3), (37, 38));
        assert_eq!(probable_f_range(-10), (14, 14));
        assert_eq!(probable_f_range(-11), (12, 13));
        assert_eq!(probable_f_range(33), (91, 92));
    }

    #[test]
    fn tenths_map_back_to_one_fahrenheit() {
        // T00281106: 2.8 °C is 37 °F; -10.6 °C is 13 °F.
        assert_eq!(Probable::from_tenths(2.8), Probable::exact_f(37));
        assert_eq!(tenths_c_to_whole_f(-10.6), 13);
        for f in -70..=130 {
            let tenths = round1(f_to_c(f64::from(f)));
            assert_eq!(tenths_c_to_whole_f(tenths), f);
        }
    }

    #[test]
    fn precision_level_counts_candidates() {
        assert_eq!(Probable::from_whole_c(3).precision_level, 2);
        assert_eq!(Probable::from_whole_c(0).precision_level, 1);
    }

    #[test]
    fn suspect_bounds() {
        assert!(!is_suspect_c(60.0));
        assert!(is_suspect_c(60.1));
        assert!(is_suspect_c(-61.0));
    }

    #[test]
    fn rh_is_100_when_saturated() {
        assert_eq!(relative_humidity(10.0, 10.0), 100.0);
        let rh = relative_humidity(2.8, -10.6);
        assert!((rh - 37.4).abs() < 1.5, "{rh}");
    }
}
