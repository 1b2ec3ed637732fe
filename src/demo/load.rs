//! Loading generated inputs into the lake through the same decoders as real data.
//!
//! Stations are generated and decoded in parallel in groups; each group's records are
//! written table by table, so every touched partition gets one file per group. Compact
//! afterwards to merge groups (the CLI does).

use chrono::Datelike;

use super::{generate_station, DemoConfig, StationInputs};
use crate::decode::types::{DailyForecast, DailyReport, ForecastRow, LineError, Metar, OneMinute};
use crate::ingest::{store, DecodedInput, Format, IngestOptions, Records, Summary};
use crate::lake::rows::NwsHourlyRow;
use crate::lake::{Lake, LakeError};

/// Records of a group of stations, gathered per table, with the per-product outcomes.
#[derive(Default)]
struct Gathered {
    obs: Vec<Metar>,
    onemin: Vec<OneMinute>,
    reports: Vec<DailyReport>,
    forecasts: Vec<ForecastRow>,
    nws: Vec<NwsHourlyRow>,
    daily: Vec<DailyForecast>,
    /// (input name, lines read, errors) per decoded product.
    outcomes: Vec<(String, usize, Vec<LineError>)>,
}

impl Gathered {
    fn take(&mut self, name: String, d: DecodedInput) {
        self.outcomes.push((name, d.read, d.errors));
        match d.records {
            Records::Observations(v) => self.obs.extend(v),
            Records::OneMinute(v) => self.onemin.extend(v),
            Records::Reports(v) => self.reports.extend(v),
            Records::Forecasts(v) => self.forecasts.extend(v),
            Records::NwsHourly(v) => self.nws.extend(v),
            Records::DailyForecasts(v) => self.daily.extend(v),
        }
    }

    fn rows(&self) -> usize {
        self.obs.len()
            + self.onemin.len()
            + self.reports.len()
            + self.forecasts.len()
            + self.nws.len()
            + self.daily.len()
    }
}

/// Decodes every product of one station's inputs.
fn decode_station(cfg: &DemoConfig, inputs: &StationInputs) -> Gathered {
    let opts = IngestOptions {
        month: Some((cfg.now.year(), cfg.now.month())),
        station: Some(inputs.station.clone()),
        run_time: None,
        issued: None,
    };
    let code = &inputs.station;
    let mut g = Gathered::default();
    let mut one = |name: String, format: Format, bytes: &[u8]| {
        if !bytes.is_empty() {
            g.take(name, format.decode(bytes, &opts));
        }
    };
    one(format!("{code}/metar.tsv"), Format::Metar, inputs.metar_tsv.as_bytes());
    if let Some(csv) = &inputs.onemin_csv {
        one(format!("{code}/onemin.csv"), Format::Onemin, csv.as_bytes());
    }
    one(format!("{code}/cli.txt"), Format::Cli, inputs.cli.as_bytes());
    one(format!("{code}/forecasts.csv"), Format::Forecasts, inputs.forecast_csv.as_bytes());
    for (model, text) in &inputs.mos {
        one(format!("{code}/{model}.txt"), Format::Mos, text.as_bytes());
    }
    one(format!("{code}/daily_forecasts.csv"), Format::DailyForecasts, inputs.daily_forecasts_csv.as_bytes());
    for (i, doc) in inputs.nws_hourly.iter().enumerate() {
        one(format!("{code}/nws_hourly_{i}.json"), Format::NwsHourly, doc.as_bytes());
    }
    // A DSM's DD/MM has no year: each month's messages are read with their month.
    for ((year, month), text) in &inputs.dsm {
        let opts = IngestOptions { month: Some((*year, *month)), ..opts.clone() };
        if !text.is_empty() {
            g.take(format!("{code}/dsm-{year}-{month:02}.txt"), Format::Dsm.decode(text.as_bytes(), &opts));
        }
    }
    g
}

/// Generates, decodes and stores `cfg`'s data, `group` stations at a time. Calls
/// `progress(stations_done, rows_stored)` after each group.
pub async fn load(
    lake: &Lake,
    cfg: &DemoConfig,
    group: usize,
    mut progress: impl FnMut(usize, usize),
) -> Result<Summary, LakeError> {
    let codes: Vec<String> =
        cfg.station_list().map_err(LakeError::Config)?.into_iter().map(|s| s.code.clone()).collect();
    let mut summary = Summary::default();
    let mut done = 0;
    for chunk in codes.chunks(group.max(1)) {
        let chunk = chunk.to_vec();
        let c = cfg.clone();
        let mut g = crate::lake::blocking(move || {
            use rayon::prelude::*;
            chunk.par_iter().map(|code| decode_station(&c, &generate_station(&c, code))).reduce(
                Gathered::default,
                |mut a, b| {
                    a.obs.extend(b.obs);
                    a.onemin.extend(b.onemin);
                    a.reports.extend(b.reports);
                    a.forecasts.extend(b.forecasts);
                    a.nws.extend(b.nws);
                    a.daily.extend(b.daily);
                    a.outcomes.extend(b.outcomes);
                    a
                },
            )
        })
        .await?;
        let rows = g.rows();
        let mut stats = store(lake, Records::Observations(std::mem::take(&mut g.obs))).await?;
        stats += store(lake, Records::OneMinute(std::mem::take(&mut g.onemin))).await?;
        stats += store(lake, Records::Reports(std::mem::take(&mut g.reports))).await?;
        stats += store(lake, Records::Forecasts(std::mem::take(&mut g.forecasts))).await?;
        stats += store(lake, Records::NwsHourly(std::mem::take(&mut g.nws))).await?;
        stats += store(lake, Records::DailyForecasts(std::mem::take(&mut g.daily))).await?;
        for (name, read, errors) in &g.outcomes {
            summary.add(name, *read, errors, Default::default());
        }
        summary.add_stored(stats);
        debug_assert!(stats.stored + stats.duplicate == rows);
        done += codes.len().min(group.max(1)).min(codes.len() - done);
        progress(done, summary.stored);
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, NaiveDate};

    use super::*;
    use crate::decode::types::DailyKind;

    /// A demo longer than half a year stores every DSM on the day it reports: read with
    /// the demo's month alone, those more than six months old took the nearest date, in
    /// the next year (a one-year lake had them dated up to 2027-05-29).
    #[test]
    fn a_year_of_dsms_keeps_its_dates() {
        let cfg = DemoConfig { onemin: false, ..crate::demo::tests::config(&["KNYC"], 300, false) };
        let g = decode_station(&cfg, &generate_station(&cfg, "KNYC"));
        let errors: Vec<_> = g.outcomes.iter().filter(|o| !o.2.is_empty()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        let mut dsm: Vec<NaiveDate> = g.reports.iter().filter(|r| r.kind == DailyKind::Dsm).map(|r| r.date).collect();
        dsm.sort();
        let cli: std::collections::BTreeSet<NaiveDate> =
            g.reports.iter().filter(|r| r.kind == DailyKind::Cli && r.is_final).map(|r| r.date).collect();
        assert!(dsm.len() >= 290, "{}", dsm.len());
        assert!(dsm.windows(2).all(|w| w[0] < w[1]), "one DSM per day");
        // Every DSM is of a day the finals report too: none in the future, none moved.
        assert!(dsm.iter().all(|d| cli.contains(d)), "{:?}", dsm.iter().find(|d| !cli.contains(d)));
        assert!(*dsm.last().unwrap() <= cfg.end_date);
        assert!(cfg.end_date - *dsm.first().unwrap() > Duration::days(183), "more than half a year");
    }
}
