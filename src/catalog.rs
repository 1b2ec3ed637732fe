//! The station catalog: which stations exist, where they are, which zone and units they
//! report in. Loaded once from `data/stations.csv` (embedded at build time so the binary
//! works from any directory) and shared read-only.

use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::{FixedOffset, NaiveDate, Offset, TimeZone};
use chrono_tz::{OffsetComponents, Tz};
use thiserror::Error;

use crate::models::{coverage, Coverage};
use crate::units::Units;

/// The embedded catalog CSV (data/stations.csv).
pub const STATIONS_CSV: &str = include_str!("../data/stations.csv");

/// A catalog problem: only possible when the embedded CSV is edited badly.
#[derive(Debug, Error)]
pub enum CatalogError {
    #[error("stations.csv line {line}: {reason}")]
    Bad { line: usize, reason: String },
    /// A line the CSV reader could not read.
    #[error("stations.csv line {line}: {source}")]
    Csv {
        line: usize,
        #[source]
        source: csv::Error,
    },
}

/// One station of the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct Station {
    pub code: String,
    pub name: String,
    pub city: String,
    pub country: String,
    pub units: Units,
    pub timezone: Tz,
    pub latitude: f64,
    pub longitude: f64,
    pub elevation_ft: f64,
    /// Served by the precipitation endpoint (spec 2.10).
    pub precipitation: bool,
}

impl Station {
    /// The zone's base offset without DST: the Local Standard Time of the `nws` logic.
    /// Taken at a given date because a few zones changed their base offset in history.
    pub fn standard_offset_on(&self, date: NaiveDate) -> FixedOffset {
        standard_offset(self.timezone, date)
    }
    /// Standard offset today (for display fields like `timezone_offset_hours`).
    pub fn standard_offset(&self) -> FixedOffset {
        self.standard_offset_on(chrono::Utc::now().date_naive())
    }
    /// US stations carry a K prefix and report in °F (rule 3 of spec 4.1 keys on that).
    pub fn is_us(&self) -> bool {
        self.country == "US"
    }

    /// True when `model` (one of the 18) has forecasts for this station, by the model's
    /// [`Coverage`]: the demo gives a station the runs of these models only, as the real
    /// sources would, and the open_meteo feed asks for no others. Here and not in
    /// `models` because `models` is compiled into the fuzz crate, which has no catalog.
    pub fn has_forecasts_from(&self, model: &str) -> bool {
        let (lat, lon) = (self.latitude, self.longitude);
        let inside = |lat_range: (f64, f64), lon_range: (f64, f64)| {
            (lat_range.0..=lat_range.1).contains(&lat) && (lon_range.0..=lon_range.1).contains(&lon)
        };
        match coverage(model) {
            None => false,
            Some(Coverage::Global) => true,
            Some(Coverage::NorthAmerica) => matches!(self.country.as_str(), "US" | "CA" | "MX"),
            Some(Coverage::ConusDomain) => inside((21.0, 53.0), (-135.0, -60.0)),
            Some(Coverage::HrdpsDomain) => inside((27.0, 70.0), (-152.0, -42.0)),
            Some(Coverage::UsStations) => self.is_us(),
        }
    }
}

/// The base UTC offset of `tz` (no DST) around noon UTC of `date`.
pub fn standard_offset(tz: Tz, date: NaiveDate) -> FixedOffset {
    let noon = date.and_hms_opt(12, 0, 0).unwrap_or_default();
    let off = tz.offset_from_utc_datetime(&noon);
    let base = off.base_utc_offset();
    FixedOffset::east_opt(base.num_seconds() as i32).unwrap_or_else(|| off.fix())
}

/// The loaded catalog, in file order with an index by code.
#[derive(Debug)]
pub struct Catalog {
    stations: Vec<Station>,
    by_code: HashMap<String, usize>,
}

impl Catalog {
    /// Parses a catalog CSV in the format of data/stations.csv.
    pub fn parse(csv_text: &str) -> Result<Self, CatalogError> {
        let mut rdr = csv::ReaderBuilder::new().from_reader(csv_text.as_bytes());
        let mut stations = Vec::new();
        for (i, rec) in rdr.records().enumerate() {
            let line = i + 2;
            let bad = |reason: String| CatalogError::Bad { line, reason };
            let rec = rec.map_err(|source| CatalogError::Csv { line, source })?;
            let get = |k: usize| rec.get(k).unwrap_or("").trim().to_string();
            let num = |k: usize| -> Result<f64, CatalogError> {
                get(k).parse::<f64>().map_err(|_| CatalogError::Bad {
                    line,
                    reason: format!("column {k}: expected a number, found '{}'", get(k)),
                })
            };
            let units = Units::parse(&get(4)).ok_or_else(|| bad(format!("bad units '{}'", get(4))))?;
            let timezone: Tz = get(5).parse().map_err(|_| bad(format!("unknown timezone '{}'", get(5))))?;
            stations.push(Station {
                code: get(0),
                name: get(1),
                city: get(2),
                country: get(3),
                units,
                timezone,
                latitude: num(6)?,
                longitude: num(7)?,
                elevation_ft: num(8)?,
                precipitation: get(9).eq_ignore_ascii_case("true"),
            });
        }
        let by_code = stations.iter().enumerate().map(|(i, s)| (s.code.clone(), i)).collect();
        Ok(Catalog { stations, by_code })
    }

    /// The embedded catalog, parsed once per process.
    pub fn global() -> &'static Catalog {
        static CATALOG: OnceLock<Catalog> = OnceLock::new();
        CATALOG.get_or_init(|| Catalog::parse(STATIONS_CSV).expect("embedded stations.csv is valid"))
    }

    pub fn get(&self, code: &str) -> Option<&Station> {
        self.by_code.get(code).map(|&i| &self.stations[i])
    }

    /// Case-insensitive lookup, for query parameters.
    pub fn lookup(&self, code: &str) -> Option<&Station> {
        self.get(code).or_else(|| self.get(&code.trim().to_ascii_uppercase()))
    }

    pub fn all(&self) -> &[Station] {
        &self.stations
    }

    pub fn len(&self) -> usize {
        self.stations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stations.is_empty()
    }
}

/// Converts a Local Standard Time instant of `station` to UTC (`None` for a station the
/// catalog does not hold: no guessed zones).
pub fn lst_to_utc(station: &str, t: chrono::NaiveDateTime) -> Option<chrono::DateTime<chrono::Utc>> {
    let s = Catalog::global().get(station)?;
    let off = standard_offset(s.timezone, t.date());
    Some((t - chrono::Duration::seconds(i64::from(off.local_minus_utc()))).and_utc())
}

/// What every front door answers for a station code outside the catalog, given in the
/// parameter `name`: (error, details).
pub fn unknown_station_message(name: &str, code: &str) -> (String, String) {
    (
        format!("Unknown station: {code}"),
        format!(
            "{name} must be one of the {} catalog stations: GET /api/v2/stations.php lists them, and /docs names \
             them under {name}",
            Catalog::global().len()
        ),
    )
}

/// Great-circle distance in km (haversine, mean Earth radius).
pub fn distance_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * 6371.0088 * a.sqrt().asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn us_only_and_regional_models_skip_stations_outside_their_domain() {
        let catalog = Catalog::global();
        let get = |c: &str| catalog.get(c).unwrap();
        let covers = |m: &str, st: &Station| st.has_forecasts_from(m);
        for m in &crate::models::MODELS {
            assert!(covers(m.name, get("KNYC")), "{} covers Central Park", m.name);
        }
        assert!(!covers("FOO", get("KNYC")));
        for m in ["NAM", "NAM4KM", "HRRR", "RAP", "GFS-MOS", "NAM-MOS", "LAV-MOS", "NBM", "NBS-MOS", "GEM-HRDPS"] {
            for intl in ["EGLC", "RJTT", "WSSS", "SBGR", "YSSY"] {
                assert!(!covers(m, get(intl)), "{m} does not cover {intl}");
            }
        }
        assert_eq!(crate::models::MODELS.iter().filter(|m| covers(m.name, get("EGLC"))).count(), 8);
        // Toronto sits in the CONUS and HRDPS domains and in North America, not in US MOS.
        let yyz = get("CYYZ");
        assert!(covers("HRRR", yyz) && covers("GEM-HRDPS", yyz) && covers("NAM", yyz));
        assert!(!covers("GFS-MOS", yyz) && !covers("NBM", yyz));
        // Mexico City: North America, south of the CONUS domain.
        let mex = get("MMMX");
        assert!(covers("NAM", mex) && !covers("HRRR", mex) && !covers("GEM-HRDPS", mex));
        assert!(covers("GEM-HRDPS", get("KSEA")) && !covers("GEM-HRDPS", get("KMIA")));
    }

    #[test]
    fn catalog_has_the_70_spec_stations() {
        let c = Catalog::global();
        assert_eq!(c.len(), 70);
        let us = c.all().iter().filter(|s| s.units == Units::Fahrenheit).count();
        assert_eq!(us, 27);
        let precip = c.all().iter().filter(|s| s.precipitation).count();
        assert_eq!(precip, 25);
        let nyc = c.get("KNYC").unwrap();
        assert_eq!(nyc.timezone, chrono_tz::America::New_York);
        assert!(c.lookup("knyc").is_some());
        assert!(c.get("KORD").is_none());
    }

    #[test]
    fn standard_offsets_ignore_dst() {
        let c = Catalog::global();
        let july = NaiveDate::from_ymd_opt(2026, 7, 1).unwrap();
        let jan = NaiveDate::from_ymd_opt(2026, 1, 15).unwrap();
        for (code, minutes) in [("KNYC", -300), ("KPHX", -420), ("YSSY", 600), ("VILK", 330), ("EGLC", 0)] {
            let s = c.get(code).unwrap();
            assert_eq!(s.standard_offset_on(july).local_minus_utc(), minutes * 60, "{code} july");
            assert_eq!(s.standard_offset_on(jan).local_minus_utc(), minutes * 60, "{code} jan");
        }
        // Half-hour zone.
        assert_eq!(c.get("VILK").unwrap().timezone, chrono_tz::Asia::Kolkata);
        let kolkata = standard_offset(chrono_tz::Asia::Kolkata, jan);
        assert_eq!(kolkata.local_minus_utc(), 5 * 3600 + 1800);
    }

    #[test]
    fn distance_is_plausible() {
        let c = Catalog::global();
        let (a, b) = (c.get("KLGA").unwrap(), c.get("KNYC").unwrap());
        let d = distance_km(a.latitude, a.longitude, b.latitude, b.longitude);
        assert!((5.0..15.0).contains(&d), "{d}");
    }
}
