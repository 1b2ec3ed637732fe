//! The input formats `wxlake ingest` and `POST /api/v2/ingest/{format}` accept, and the
//! decoder each one goes through.

use std::fmt;
use std::str::FromStr;

use chrono::{TimeZone, Utc};

use super::{DecodedInput, IngestOptions, Records};
use crate::decode::types::{Decoded, LineError};
use crate::decode::{
    climate_report, daily_forecasts, dsm, forecast_parquet, forecast_rows, metar_container, mos, nws_hourly, onemin,
    open_meteo,
};
use crate::lake::rows::NwsHourlyRow;

/// An ingestible input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// METAR/SPECI/HF-METAR in any supported container (detected).
    Metar,
    /// One-minute ASOS temperatures CSV.
    Onemin,
    /// NWS Daily Climate Report text.
    Cli,
    /// Daily Summary Message text.
    Dsm,
    /// Forecast rows: CSV, JSON Lines or Parquet (detected).
    Forecasts,
    /// Open-Meteo API JSON (hourly, previous-runs, ensemble).
    OpenMeteo,
    /// MOS / NBM text bulletins.
    Mos,
    /// api.weather.gov hourly point forecast JSON.
    NwsHourly,
    /// Daily high/low forecasts CSV (`source,station_code,issued_at,date,high,low,units`).
    DailyForecasts,
}

/// Every format, for help texts and the API's error details.
pub const ALL_FORMATS: [Format; 9] = [
    Format::Metar,
    Format::Onemin,
    Format::Cli,
    Format::Dsm,
    Format::Forecasts,
    Format::OpenMeteo,
    Format::Mos,
    Format::NwsHourly,
    Format::DailyForecasts,
];

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Metar => "metar",
            Format::Onemin => "onemin",
            Format::Cli => "cli",
            Format::Dsm => "dsm",
            Format::Forecasts => "forecasts",
            Format::OpenMeteo => "open-meteo",
            Format::Mos => "mos",
            Format::NwsHourly => "nws-hourly",
            Format::DailyForecasts => "daily-forecasts",
        }
    }

    /// Decodes one input. Never fails as a whole: bad lines become `errors`.
    pub fn decode(self, bytes: &[u8], opts: &IngestOptions) -> DecodedInput {
        match self {
            Format::Metar => wrap(metar_container::decode_metar_input(bytes, opts.month), Records::Observations),
            Format::Onemin => wrap(onemin::decode_onemin(bytes), Records::OneMinute),
            Format::Cli => {
                let mut decoded = climate_report::decode_cli(bytes);
                // A report whose text states no issuance time takes its source's
                // (api.weather.gov's `issuanceTime`): what its `available_at` rests on.
                if let Some(issued) = opts.issued {
                    decoded
                        .records
                        .iter_mut()
                        .filter(|r| r.issued_at.is_none())
                        .for_each(|r| r.issued_at = Some(issued));
                }
                wrap(decoded, Records::Reports)
            }
            Format::Dsm => {
                // Issued at a known time (a product's issuanceTime): no day after it; in a
                // known month (`--month`): the date nearest its middle; else received now.
                let month = |(y, m): (i32, u32)| Utc.with_ymd_and_hms(y, m, 15, 12, 0, 0).single();
                let decoded = match (opts.issued, opts.month.and_then(month)) {
                    (Some(issued), _) => dsm::decode_dsm_received(bytes, issued),
                    (None, Some(reference)) => dsm::decode_dsm_with_year(bytes, reference),
                    (None, None) => dsm::decode_dsm(bytes),
                };
                wrap(decoded, Records::Reports)
            }
            Format::Forecasts => {
                let decoded = if bytes.starts_with(b"PAR1") {
                    forecast_parquet::decode_forecast_parquet(bytes)
                } else if first_non_space(bytes) == Some(b'{') {
                    forecast_rows::decode_forecast_jsonl(bytes)
                } else {
                    forecast_rows::decode_forecast_csv(bytes)
                };
                wrap(decoded, Records::Forecasts)
            }
            Format::OpenMeteo => {
                let loc = opts.station.clone().unwrap_or_default();
                let mut d = open_meteo::decode_open_meteo(bytes, &loc, opts.run_time);
                if loc.is_empty() && !d.records.is_empty() {
                    d.records.clear();
                    d.reject(1, "open-meteo input needs --station (the response names no location)");
                }
                wrap(d, Records::Forecasts)
            }
            Format::Mos => wrap(mos::decode_mos(bytes), Records::Forecasts),
            Format::NwsHourly => decode_nws_hourly(bytes, opts),
            Format::DailyForecasts => wrap(daily_forecasts::decode_daily_forecasts(bytes), Records::DailyForecasts),
        }
    }
}

fn first_non_space(bytes: &[u8]) -> Option<u8> {
    bytes.iter().copied().find(|b| !b.is_ascii_whitespace())
}

fn wrap<T>(d: Decoded<T>, f: impl FnOnce(Vec<T>) -> Records) -> DecodedInput {
    DecodedInput { records: f(d.records), errors: d.errors, read: d.read }
}

fn decode_nws_hourly(bytes: &[u8], opts: &IngestOptions) -> DecodedInput {
    let fail = |reason: String| DecodedInput {
        records: Records::NwsHourly(Vec::new()),
        errors: vec![LineError { line: 1, reason }],
        read: 1,
    };
    match nws_hourly::decode_nws_hourly(bytes) {
        Err(e) => fail(e),
        Ok(f) => {
            let Some(station) = opts.station.clone().or(f.station.clone()) else {
                return fail("nws-hourly input needs --station (the forecast names no station)".into());
            };
            let read = f.periods.len();
            let rows = f
                .periods
                .into_iter()
                .map(|period| NwsHourlyRow { station: station.clone(), generated_at: f.generated_at, period })
                .collect();
            DecodedInput { records: Records::NwsHourly(rows), errors: Vec::new(), read }
        }
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_FORMATS.iter().copied().find(|f| f.as_str() == s).ok_or_else(|| {
            let names: Vec<_> = ALL_FORMATS.iter().map(|f| f.as_str()).collect();
            format!("unknown format '{s}'; valid formats: {}", names.join(", "))
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
