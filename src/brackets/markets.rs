//! The settlement markets on the catalog's stations (data/markets.csv, the one source): who
//! trades which quantity of which station, settled how, on what source when. Each row is a
//! market over a range of dates with one settlement source, so a source change (Kalshi's
//! move from the NWS climate report to The Weather Company's relay of it on 2026-08-14) is
//! two rows. A row's `reference` is where it was read (the market's rules as published).

use std::sync::OnceLock;

use chrono::NaiveDate;
use serde::Deserialize;

use super::ladder::Ladder;
use super::BracketsError;
use crate::catalog::Catalog;
use crate::extremes::Logic;

/// The catalog, compiled in.
const MARKETS_CSV: &str = include_str!("../../data/markets.csv");

/// High or low of the day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantity {
    High,
    Low,
}

impl Quantity {
    /// `high` or `low`, as the API and the stream name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Quantity::High => "high",
            Quantity::Low => "low",
        }
    }

    /// The quantity [`as_str`](Self::as_str) names.
    pub fn named(name: &str) -> Option<Self> {
        [Quantity::High, Quantity::Low].into_iter().find(|q| q.as_str() == name)
    }
}

/// One market over one settlement source's date range.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Market {
    pub venue: String,
    pub series: String,
    pub station_code: String,
    pub quantity: Quantity,
    /// `nws`: the climate report's Local Standard Time day; `wu`: the civil day.
    pub logic: String,
    /// `f` or `c`: the settlement value is a whole number of these.
    pub unit: String,
    /// The usual ladder: `ladder_inner` brackets `ladder_width` wide between two tails.
    pub ladder_width: i32,
    pub ladder_inner: i32,
    pub source: String,
    /// First and last settlement day on this source (open when absent).
    pub source_from: Option<NaiveDate>,
    pub source_to: Option<NaiveDate>,
    pub reference: String,
}

impl Market {
    /// The settlement logic.
    pub fn logic(&self) -> Logic {
        if self.logic == "wu" {
            Logic::Wu
        } else {
            Logic::Nws
        }
    }

    /// Whether `day` settles on this row's source.
    pub fn covers(&self, day: NaiveDate) -> bool {
        self.source_from.is_none_or(|f| day >= f) && self.source_to.is_none_or(|t| day <= t)
    }

    /// The market's usual ladder around `median`.
    pub fn ladder(&self, median: i32) -> Ladder {
        Ladder::around(median, self.ladder_width, self.ladder_inner)
    }
}

/// Every market row, checked once (a broken catalog is a build that fails its tests).
pub fn all() -> &'static [Market] {
    static MARKETS: OnceLock<Vec<Market>> = OnceLock::new();
    MARKETS.get_or_init(|| parse(MARKETS_CSV).unwrap_or_else(|e| panic!("data/markets.csv: {e}")))
}

/// The row of `series` settling `day`.
pub fn on(series: &str, day: NaiveDate) -> Option<&'static Market> {
    all().iter().find(|m| m.series == series && m.covers(day))
}

/// The markets of a station's quantity settling `day`.
pub fn of_station(station: &str, quantity: Quantity, day: NaiveDate) -> Vec<&'static Market> {
    all().iter().filter(|m| m.station_code == station && m.quantity == quantity && m.covers(day)).collect()
}

/// Parses and checks the catalog: known stations, logics and units, sane ladders, and the
/// rows of one series covering its dates once, without gaps.
pub fn parse(text: &str) -> Result<Vec<Market>, BracketsError> {
    let bad = |why: String| BracketsError::Invalid(why);
    let mut out: Vec<Market> = Vec::new();
    for (i, row) in csv::Reader::from_reader(text.as_bytes()).deserialize::<Market>().enumerate() {
        let line = i + 2;
        let m = row.map_err(|e| bad(format!("line {line}: {e}")))?;
        if Catalog::global().get(&m.station_code).is_none() {
            return Err(bad(format!("line {line}: {} is not a catalog station", m.station_code)));
        }
        if !["nws", "wu"].contains(&m.logic.as_str()) || !["f", "c"].contains(&m.unit.as_str()) {
            return Err(bad(format!("line {line}: logic is nws or wu, unit f or c")));
        }
        if !(1..=10).contains(&m.ladder_width) || !(1..=20).contains(&m.ladder_inner) {
            return Err(bad(format!("line {line}: a ladder of 1 to 20 brackets 1 to 10 wide")));
        }
        if let (Some(f), Some(t)) = (m.source_from, m.source_to) {
            if f > t {
                return Err(bad(format!("line {line}: source_from after source_to")));
            }
        }
        out.push(m);
    }
    let mut series: Vec<&str> = out.iter().map(|m| m.series.as_str()).collect();
    series.sort_unstable();
    series.dedup();
    for s in series {
        let mut rows: Vec<&Market> = out.iter().filter(|m| m.series == s).collect();
        rows.sort_by_key(|m| m.source_from);
        let first = rows[0];
        if first.source_from.is_some() || rows[rows.len() - 1].source_to.is_some() {
            return Err(bad(format!("{s}: its first source opens the range and its last one closes it")));
        }
        for w in rows.windows(2) {
            let (a, b) = (w[0], w[1]);
            let same = (a.station_code == b.station_code) && a.quantity == b.quantity && a.logic == b.logic;
            let meets = a.source_to.and_then(|t| t.succ_opt()) == b.source_from;
            if !same || !meets {
                return Err(bad(format!("{s}: its sources must meet day to day on one station, quantity and logic")));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn kalshi_settles_on_the_climate_report_then_on_its_relay() {
        let before = on("KXHIGHNY", d("2026-08-13")).unwrap();
        let after = on("KXHIGHNY", d("2026-08-14")).unwrap();
        assert!(before.source.starts_with("NWS CLI"), "{before:?}");
        assert!(after.source.starts_with("The Weather Company"), "{after:?}");
        assert_eq!((after.station_code.as_str(), after.quantity, after.logic()), ("KNYC", Quantity::High, Logic::Nws));
        assert_eq!(after.ladder(84).to_string(), "<=79,80-81,82-83,84-85,86-87,>=88");
        assert_eq!(of_station("KMDW", Quantity::High, d("2026-11-28")).len(), 1);
        assert!(of_station("KMDW", Quantity::Low, d("2026-11-28")).is_empty());
        // Philadelphia's high and Los Angeles' low settle on the climate report too.
        let series = |code: &str, q: Quantity| {
            of_station(code, q, d("2026-11-28")).iter().map(|m| m.series.clone()).collect::<Vec<_>>()
        };
        assert_eq!(series("KPHL", Quantity::High), ["KXHIGHPHIL"]);
        assert_eq!(series("KLAX", Quantity::Low), ["KXLOWTLAX"]);
        assert!(on("KXNOPE", d("2026-11-28")).is_none());
        // Polymarket's city markets settle on Wunderground's civil-day high, London in whole
        // degrees Celsius with a one-degree ladder.
        let london = on("highest-temperature-in-london", d("2026-05-10")).unwrap();
        assert_eq!((london.station_code.as_str(), london.unit.as_str(), london.logic()), ("EGLC", "c", Logic::Wu));
        assert_eq!(london.ladder(14).to_string(), "<=9,10,11,12,13,14,15,16,17,18,>=19");
    }

    #[test]
    fn a_catalog_with_a_gap_or_an_unknown_station_is_refused() {
        let head = "venue,series,station_code,quantity,logic,unit,ladder_width,ladder_inner,source,source_from,source_to,reference\n";
        let gap = format!(
            "{head}kalshi,X,KNYC,high,nws,f,2,4,A,,2026-08-12,r\nkalshi,X,KNYC,high,nws,f,2,4,B,2026-08-14,,r\n"
        );
        assert!(parse(&gap).is_err());
        let unknown = format!("{head}kalshi,X,KZZZ,high,nws,f,2,4,A,,,r\n");
        assert!(parse(&unknown).unwrap_err().to_string().contains("not a catalog station"));
        let ok = format!("{head}kalshi,X,KNYC,low,wu,c,1,5,A,,,r\n");
        assert_eq!(parse(&ok).unwrap()[0].quantity, Quantity::Low);
        assert!(!all().is_empty());
    }
}
