//! What a bracket distribution is made from, as the service knew it at a time t: nothing
//! published or verified after t is read, so an answer as of t is the one given then and
//! a backtest cannot peek; the live answer is the same computation at now.
//!
//! - Today's forecasts of the settlement day: each model's latest run with a
//!   `forecast_daily` row available by t (the day's window in the logic's clock:
//!   `standard` for `nws`, `civil` for `wu`), run at most [`RUN_HORIZON_DAYS`] before the
//!   day (an older run's errors are past the leads `accuracy_pairs` verifies); the NWS
//!   hourly version in force at t (the station's newest version available then, as
//!   `as_of('nws_hourly', t)` chooses it; a version is available once all its rows are),
//!   when its periods cover the whole day; each daily-forecasts source's latest issuance by t.
//! - The verified history of those sources: `accuracy_pairs` available by t at the lead of
//!   the asked time (whole days from t to the day's start, 1 to 3; a time within the day
//!   uses lead 1), each model at the run label of its run used today, and at lead 0 when
//!   that run was issued after the LST day began (a run at the day's first hour, or a
//!   3-hourly one just after: its errors are a same-day run's, not a day-ahead one's;
//!   lead 1 while its label has no lead-0 pair known by t); a daily-forecasts source by
//!   its latest issuance as long before each past day's start as t is before the asked
//!   day's. A past day's settled value is its full-day climate report's available by t
//!   (the version a reader settles on, as `as_of('reports', t)` chooses it), else its
//!   pairs' verifying value (the engine's day under `nws`).
//! - Asked within the settlement day: each past day's running extreme at the local hour of
//!   its day this one has reached on the logic's clock (`daily_extremes`' `high_by_hour` /
//!   `low_by_hour` under the logic, from the readings known by then), for the same-day step
//!   (`brackets::intraday`). Past days ended before the asked day began; like
//!   `accuracy_pairs`, the table holds current values, so an observation stored late for a
//!   past day counts.
//!
//! Two steps, so one reading serves many times: [`Rows::read`] reads a station's rows for a
//! span of settlement days, each with the moment it became known ([`Rows::read_many`]: many
//! stations' in one statement per table), and [`Rows::inputs`]
//! chooses what was known at an [`Ask`]'s time. `brackets.php` and the stream hold one
//! day's rows, everything stored, and ask at any time (`held`); the `bracket_scores` job
//! reads a span once and asks at every checkpoint.
//!
//! Values are in the settlement unit (°F or °C): pairs and forecasts in the station's
//! other unit are converted. Everything is read from the lake: a live input counts from
//! the flush that stores it.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;
use std::sync::Arc;

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Date32Type, Float64Type, Int64Type, TimestampMicrosecondType, UInt64Type};
use datafusion::prelude::SessionContext;
use rayon::prelude::*;

use datafusion::error::{DataFusionError, Result};

use super::Ask;
use crate::brackets::history::{Builder, History};
use crate::brackets::markets::Quantity;
use crate::extremes::{after_hours, parse_hours_column, Logic};
use crate::lake::bound_sql::{utf8_column, Bindings};
use crate::lake::writer::FastMap;
use crate::time::DayClock;
use crate::units::{round1, round_half_away, Units};

/// The name of the NWS hourly forecast as a source (as in `accuracy_pairs`).
pub const NWS: &str = crate::models::NWS_HOURLY_SOURCE;

/// Years of verified history read.
const HISTORY_YEARS: i64 = 3;

/// Days before the settlement day a model run used can be: the longest lead
/// `accuracy_pairs` verifies, and one for the runs of the day before.
pub const RUN_HORIZON_DAYS: i64 = super::MAX_LEAD_DAYS + 1;

/// Days an NWS hourly version reaches ahead of its generation (seven days of periods),
/// and one of margin: an older version covers no hour of the day.
const NWS_REACH_DAYS: i64 = 8;

/// The `forecast_daily` value columns a run row carries, in [`RunRow::values`]' order.
const RUN_VALUES: [&str; 4] = ["high_f", "high_c", "low_f", "low_c"];

impl Ask<'_> {
    /// The index in [`RUN_VALUES`] of the target in the settlement unit.
    fn run_value(&self) -> usize {
        match (self.target, self.unit) {
            (Quantity::High, Units::Fahrenheit) => 0,
            (Quantity::High, Units::Celsius) => 1,
            (Quantity::Low, Units::Fahrenheit) => 2,
            (Quantity::Low, Units::Celsius) => 3,
        }
    }

    /// The first day of the verified history.
    fn history_from(&self) -> NaiveDate {
        history_start(self.date)
    }
}

/// One source's forecast of the settlement day.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceForecast {
    pub source: String,
    /// The run, the NWS version's generation time, or the daily forecast's issuance.
    pub run: DateTime<Utc>,
    pub forecast: f64,
}

/// What the distribution is made from.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub forecasts: Vec<SourceForecast>,
    /// Past days the asked sources forecast, with their settled values: a column per
    /// forecast, in their order.
    pub history: History,
    /// Every past day's settled value known then (the climatology baseline's sample).
    pub settled: Vec<(NaiveDate, f64)>,
    pub lead_days: i64,
}

impl Inputs {
    /// The forecasts as (source, value), as the method takes them.
    pub fn forecast_values(&self) -> Vec<(String, f64)> {
        self.forecasts.iter().map(|f| (f.source.clone(), f.forecast)).collect()
    }
}

/// A model run's value of one day.
#[derive(Debug, Clone)]
struct RunRow {
    model: Arc<str>,
    run: DateTime<Utc>,
    available: DateTime<Utc>,
    /// The day's high and low in both units ([`RUN_VALUES`]; NaN where the run has none),
    /// so one read serves either target and unit.
    values: [f64; 4],
}

/// One station's model-run rows of a span of days, by day; each day's by model.
type StationRuns = BTreeMap<NaiveDate, Vec<RunRow>>;

/// Model-run rows with their day, as decoded, before they are grouped by day.
type DatedRuns = Vec<(NaiveDate, RunRow)>;

/// One NWS hourly version's periods on one day.
#[derive(Debug, Clone)]
struct NwsDay {
    generated: DateTime<Utc>,
    first: DateTime<Utc>,
    last: DateTime<Utc>,
    high: f64,
    low: f64,
}

/// A station's NWS hourly versions: (generated, available).
type NwsVersions = Vec<(DateTime<Utc>, DateTime<Utc>)>;

/// A station's NWS hourly versions' periods, per day.
type NwsByDay = BTreeMap<NaiveDate, Vec<NwsDay>>;

/// A daily forecast's value of the asked quantity.
#[derive(Debug)]
struct DailyIssue {
    source: String,
    date: NaiveDate,
    /// When its day starts on the read's clock (found once per read: a past issuance is
    /// held against it at every asked time, and a time zone's offset per issuance and
    /// asked time was a measurable part of choosing the inputs).
    start: DateTime<Utc>,
    issued_at: DateTime<Utc>,
    available: DateTime<Utc>,
    value: f64,
}

/// The order `as_of('reports', t)` puts a day's climate reports in, the one a reader
/// settles on greatest: final, then latest issued, then correction, then latest
/// available, received, row key (a missing time ranks below any).
type CliOrder = (bool, Option<DateTime<Utc>>, bool, Option<DateTime<Utc>>, Option<DateTime<Utc>>, u64);

/// One climate report of a day.
#[derive(Debug)]
struct CliVersion {
    /// Its `available_at` is the fourth.
    order: CliOrder,
    /// The target's value, settlement unit.
    value: Option<f64>,
}

impl CliVersion {
    fn known_by(&self, t: DateTime<Utc>) -> bool {
        self.order.3.is_some_and(|at| at <= t)
    }
}

/// One verified pair: a source's forecast at a lead and run label, and the settled value.
#[derive(Debug, Clone, Copy)]
struct PairRow {
    date: NaiveDate,
    /// Its days from the common era: a history's slot is a difference of two (a date
    /// difference per pair was a measurable part of building a history).
    day: i32,
    available: DateTime<Utc>,
    forecast: f64,
    observed: f64,
}

/// A station's rows for a span of settlement days (one target, unit and logic), each with
/// when it became known (module docs).
#[derive(Debug, Default)]
pub struct Rows {
    runs: Arc<StationRuns>,
    /// Every NWS hourly version (generated, available), and each one's periods per day.
    nws_versions: NwsVersions,
    nws: NwsByDay,
    /// By date.
    daily: Vec<DailyIssue>,
    cli: BTreeMap<NaiveDate, Vec<CliVersion>>,
    pairs: PairsBySource,
    /// Per day with pairs, their verifying value and when the first of them was known.
    pair_settled: BTreeMap<NaiveDate, (f64, DateTime<Utc>)>,
    /// Per past day, the target's running extreme after each hour (`daily_extremes`'
    /// `high_by_hour`/`low_by_hour`, native units); read only when a time within a day can
    /// be asked.
    by_hour: HoursByDay,
}

/// What one [`Rows::read_many`] read: every station's rows, both targets, as stored.
struct Read<'p> {
    runs: HashMap<String, Arc<StationRuns>>,
    nws_versions: HashMap<String, NwsVersions>,
    nws: HashMap<String, NwsByDay>,
    past: &'p PastRows,
}

/// What a span reads of its days and the history before them (from [`history_start`]):
/// the daily forecasts, climate reports, verified pairs and past days' hours, as stored.
struct PastRows {
    daily: HashMap<String, Vec<DailyRow>>,
    cli: HashMap<String, BTreeMap<NaiveDate, Vec<CliRow>>>,
    pairs: HashMap<(String, Quantity), PairsByRun>,
    hours: HashMap<(String, Quantity), HoursByDay>,
}

impl PastRows {
    /// Adds `later`, read of the days after these.
    fn extend(&mut self, later: PastRows) {
        for (code, rows) in later.daily {
            self.daily.entry(code).or_default().extend(rows);
        }
        for (code, days) in later.cli {
            self.cli.entry(code).or_default().extend(days);
        }
        for (key, runs) in later.pairs {
            let held = self.pairs.entry(key).or_default();
            for (run, rows) in runs {
                held.entry(run).or_default().extend(rows);
            }
        }
        for (key, days) in later.hours {
            self.hours.entry(key).or_default().extend(days);
        }
    }

    /// Lets go of the days before `from`.
    fn keep_from(&mut self, from: NaiveDate) {
        self.daily.values_mut().for_each(|rows| rows.retain(|d| d.date >= from));
        self.cli.values_mut().for_each(|days| *days = days.split_off(&from));
        for rows in self.pairs.values_mut().flat_map(|runs| runs.values_mut()) {
            rows.drain(..rows.partition_point(|p| p.date < from));
        }
        self.hours.values_mut().for_each(|days| *days = days.split_off(&from));
    }
}

/// The history a job run's spans read, kept from one span to the next (the spans are
/// consecutive and each one's history reaches three years back, so most of it is the
/// previous span's): a later span reads only the days after the last one read and lets go
/// of those before its history. It serves a span of the same stations, targets, logic,
/// leads and time; any other span reads its whole history anew.
#[derive(Default)]
pub struct PastReads {
    held: Option<(PastKey, NaiveDate, PastRows)>,
}

/// What a span's history read depends on besides its days.
#[derive(Debug, PartialEq)]
struct PastKey {
    stations: Vec<String>,
    targets: Vec<Quantity>,
    logic: Logic,
    leads: RangeInclusive<i64>,
    t: DateTime<Utc>,
    within_day: bool,
}

impl PastKey {
    fn of(span: &Span<'_>, leads: &RangeInclusive<i64>) -> Self {
        let mut stations: Vec<String> = span.stations.iter().map(|s| s.code.clone()).collect();
        stations.sort_unstable();
        let (targets, logic, t, within_day) = (span.targets.clone(), span.logic, span.t, span.within_day);
        PastKey { stations, targets, logic, leads: leads.clone(), t, within_day }
    }
}

impl PastReads {
    /// The history of `span` at `leads`: what is held when it serves, with the days after
    /// it read, else all of it read.
    async fn read(&mut self, ctx: &SessionContext, span: &Span<'_>, leads: RangeInclusive<i64>) -> Result<&PastRows> {
        let key = PastKey::of(span, &leads);
        let from = history_start(span.first);
        let held = self.held.take().filter(|(k, last, _)| *k == key && *last < span.last);
        // Climate reports, daily forecasts and pairs of days up to the last; hours of days
        // before it (the last day's own are its checkpoints').
        let (first, first_hour) = match &held {
            Some((_, last, _)) => (*last + Duration::days(1), *last),
            None => (from, from),
        };
        let (days, hours) = (first..=span.last, first_hour..=span.last - Duration::days(1));
        let (daily, cli, pairs, hours) = futures::try_join!(
            timed("daily_forecasts", daily_forecasts(ctx, span, &days)),
            timed("reports", climate_reports(ctx, span, &days)),
            timed("accuracy_pairs", pair_rows(ctx, span, &days, leads)),
            timed("daily_extremes", hours_by_day(ctx, span, &hours)),
        )?;
        let read = PastRows { daily, cli, pairs, hours };
        let rows = match held {
            Some((_, _, mut rows)) => {
                rows.extend(read);
                rows.keep_from(from);
                rows
            }
            None => read,
        };
        let (_, _, rows) = self.held.insert((key, span.last, rows));
        Ok(rows)
    }
}

impl Read<'_> {
    /// `ask`'s rows: its station's, of its target, in its settlement unit.
    fn rows(&self, ask: &Ask<'_>) -> Rows {
        let code = ask.station.code.as_str();
        let target = target_index(ask.target);
        let of_target = (code.to_string(), ask.target);
        let mut daily: Vec<DailyIssue> = (self.past.daily.get(code).into_iter().flatten())
            .filter_map(|d| {
                let value = d.unit.convert(d.values[target]?, ask.unit);
                let (source, date, issued_at, available) = (d.source.clone(), d.date, d.issued_at, d.available);
                let start = crate::time::day_window(ask.station.timezone, ask.logic.clock(), date).start;
                Some(DailyIssue { source, date, start, issued_at, available, value })
            })
            .collect();
        // By day, then source and issuance: a day's issuances of a source are together,
        // earliest first (stable, so equal ones keep the read's order, which decides
        // between them as before).
        daily.sort_by(|a, b| (a.date, &a.source, a.issued_at).cmp(&(b.date, &b.source, b.issued_at)));
        let cli = (self.past.cli.get(code).into_iter().flatten())
            .map(|(date, versions)| {
                let version = |(order, values): &CliRow| CliVersion {
                    order: *order,
                    value: values[target].map(|v| Units::Fahrenheit.convert(v, ask.unit)),
                };
                (*date, versions.iter().map(version).collect())
            })
            .collect();
        let unit = |v: f64| ask.station.units.convert(v, ask.unit);
        let mut pairs: PairsBySource = HashMap::new();
        for ((lead, model, label), rows) in self.past.pairs.get(&of_target).into_iter().flatten() {
            let converted =
                rows.iter().map(|p| PairRow { forecast: unit(p.forecast), observed: unit(p.observed), ..*p });
            let of_source = pairs.entry(model.clone()).or_default();
            of_source.push(PairSeries { lead: *lead, label: label_hour(label), rows: converted.collect() });
        }
        // Each day's first known pair, held by day number rather than found by a map step
        // per pair.
        let all = || pairs.values().flatten().flat_map(|s| &s.rows);
        let first_day = all().map(|p| p.day).min().unwrap_or(0);
        let days = all().map(|p| p.day - first_day + 1).max().unwrap_or(0);
        let mut by_day: Vec<Option<(NaiveDate, f64, DateTime<Utc>)>> = vec![None; days as usize];
        for p in all() {
            let held = by_day[(p.day - first_day) as usize].get_or_insert((p.date, p.observed, p.available));
            if p.available < held.2 {
                *held = (p.date, p.observed, p.available);
            }
        }
        let pair_settled = by_day.into_iter().flatten().map(|(date, v, at)| (date, (v, at))).collect();
        Rows {
            runs: self.runs.get(code).cloned().unwrap_or_default(),
            nws_versions: self.nws_versions.get(code).cloned().unwrap_or_default(),
            nws: self.nws.get(code).cloned().unwrap_or_default(),
            daily,
            cli,
            pairs,
            pair_settled,
            by_hour: self.past.hours.get(&of_target).cloned().unwrap_or_default(),
        }
    }
}

impl Rows {
    /// The rows of `ask`'s station, target, unit and logic for settlement days
    /// `first..=ask.date` known by `ask.t`, with pairs at `leads`. A span of more than a day
    /// needs the `nws` logic (its days are 24 hours: the NWS versions are grouped by day in
    /// the query).
    pub async fn read(
        ctx: &SessionContext,
        ask: &Ask<'_>,
        first: NaiveDate,
        leads: RangeInclusive<i64>,
    ) -> Result<Self> {
        let mut past = PastReads::default();
        let mut one = Self::read_many(ctx, std::slice::from_ref(ask), first, leads, &mut past).await?;
        Ok(one.pop().unwrap_or_default())
    }

    /// [`Rows::read`] of every ask in `asks` (stations and targets; one logic, settlement
    /// day and time), in their order, with one statement per table for all of them: the
    /// tables are not partitioned by station, so each station's own read would scan every
    /// file of the span (benches/README.md, "Brackets"). The history before the days comes
    /// from `past` where it holds it (the previous span of a job run), which keeps this
    /// span's.
    pub async fn read_many(
        ctx: &SessionContext,
        asks: &[Ask<'_>],
        first: NaiveDate,
        leads: RangeInclusive<i64>,
        past: &mut PastReads,
    ) -> Result<Vec<Self>> {
        let Some(template) = asks.first() else { return Ok(Vec::new()) };
        let alike = |a: &Ask<'_>| a.logic == template.logic && a.date == template.date && a.t == template.t;
        if !asks.iter().all(alike) {
            return Err(DataFusionError::Plan("bracket inputs: one read is of one logic, day and time".into()));
        }
        if first != template.date && template.logic.clock() != DayClock::Standard {
            return Err(DataFusionError::Plan("bracket inputs: a span of days is read under the nws logic".into()));
        }
        let span = Span::of(asks, first);
        let model_rows = async {
            // One station's rows, or every station's (the asked ones among them).
            let one = span.stations.first().filter(|_| span.stations.len() == 1).map(|s| s.code.as_str());
            let read = model_runs(ctx, one, template.logic, first, template.date, template.t).await?;
            Ok(read.into_iter().map(|(code, r)| (code, Arc::new(r))).collect::<HashMap<_, _>>())
        };
        let (runs, nws_versions, nws, past) = futures::try_join!(
            timed("forecast_daily", model_rows),
            timed("nws_hourly versions", nws_versions(ctx, &span)),
            timed("nws_hourly", nws_days(ctx, &span)),
            past.read(ctx, &span, leads),
        )?;
        let read = Read { runs, nws_versions, nws, past };
        // Each ask's own copy in its unit, over the cores: made one after another, they were
        // part of the read's tail in which one core waited.
        Ok(asks.par_iter().map(|ask| read.rows(ask)).collect())
    }

    /// How many rows this holds (what a cache of them weighs).
    pub fn len(&self) -> usize {
        let days = |m: &BTreeMap<NaiveDate, Vec<NwsDay>>| m.values().map(Vec::len).sum::<usize>();
        self.runs.values().map(Vec::len).sum::<usize>()
            + self.nws_versions.len()
            + days(&self.nws)
            + self.daily.len()
            + self.cli.values().map(Vec::len).sum::<usize>()
            + self.pairs.values().flatten().map(|s| s.rows.len()).sum::<usize>()
            + self.by_hour.len()
    }

    /// Whether this holds no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What `ask` is made from (module docs): its day's rows and the history before it,
    /// as known at `ask.t`. `ask` is on the read's station, target, unit and logic.
    pub fn inputs(&self, ask: &Ask<'_>) -> Inputs {
        let t = ask.t;
        let lead_days = ask.lead_days();
        let mut forecasts = self.model_runs(ask);
        forecasts.extend(self.nws_version(ask));
        let runs = forecasts.len();
        // Daily forecasts: today's latest issuance of each source, after the runs.
        let known = |d: &&DailyIssue| d.available <= t;
        let mut latest: BTreeMap<&str, &DailyIssue> = BTreeMap::new();
        for d in self.daily_of(ask.date..=ask.date).iter().filter(known) {
            keep_latest(&mut latest, d.source.as_str(), d);
        }
        for d in latest.values() {
            forecasts.push(SourceForecast { source: d.source.clone(), run: d.issued_at, forecast: d.value });
        }
        // The verified errors of each run's source (by name: the first pair of a day
        // settles it when no final report does): at the run label `accuracy_pairs` gives it
        // (a model's run hour, the NWS version's 6-hour block) and the lead of its pairs
        // (lead 0 for a run issued after the LST day began, `accuracy_pairs`' natural lead
        // 0; else the ask's).
        let from = ask.history_from();
        let lst_start = crate::time::day_window(ask.station.timezone, DayClock::Standard, ask.date).start;
        let mut by_name: Vec<usize> = (0..runs).collect();
        by_name.sort_by(|&a, &b| forecasts[a].source.cmp(&forecasts[b].source));
        let verified: Vec<(usize, &[PairRow])> = (by_name.into_iter())
            .filter_map(|column| {
                let f = &forecasts[column];
                let hour = chrono::Timelike::hour(&f.run);
                let label = if f.source == NWS { 6 * (hour / 6) } else { hour };
                let lead = if f.run >= lst_start { 0 } else { lead_days };
                let of_source = self.pairs.get(f.source.as_str()).map(Vec::as_slice).unwrap_or_default();
                let at = |lead: i64| of_source.iter().find(|s| s.lead == lead && s.label == Some(label));
                // A run issued within the day whose label has no lead-0 pair known by t (none
                // verified yet, or a source without any) is judged by its label's lead-1 errors.
                let known = |s: &&PairSeries| s.rows.iter().any(|p| p.date < ask.date && p.available <= t);
                let pairs = &at(lead).filter(known).or_else(|| at(lead_days))?.rows;
                let lo = pairs.partition_point(|p| p.date < from);
                let hi = pairs.partition_point(|p| p.date < ask.date);
                Some((column, &pairs[lo..hi]))
            })
            .collect();
        // The history: a column per forecast, a slot per past day from the first one any
        // row of it has (three years back at most).
        let before = ask.date - Duration::days(1);
        let finals = self.finals(from, ask.date, t);
        let first = [
            finals.first().map(|f| f.0),
            verified.iter().filter_map(|(_, pairs)| Some(pairs.first()?.date)).min(),
            self.daily_of(from..=before).first().map(|d| d.date),
        ];
        let first = first.into_iter().flatten().min().unwrap_or(ask.date);
        let first_day = first.num_days_from_ce();
        let slot = |date: NaiveDate| (date.num_days_from_ce() - first_day) as usize;
        let mut history = Builder::new(forecasts.len(), slot(ask.date));
        for &(date, settled) in &finals {
            history.settle(slot(date), date, settled);
        }
        // One pair per station, day, model, label, lead and target.
        for (column, pairs) in verified {
            for p in pairs.iter().filter(|p| p.available <= t) {
                let slot = (p.day - first_day) as usize;
                history.settle(slot, p.date, p.observed);
                history.forecast(slot, column, p.forecast);
            }
        }
        // Each daily source's issuance for each past day settled by then: its latest as long
        // before that day's start as t is before this one's.
        // (A day's issuances of a source are together in `daily`, earliest first: walked as
        // groups rather than kept in a map by day and name, which was a string comparison
        // per issuance and step of the map at every asked time.)
        let ahead = ask.window().start - t;
        let same_group = |a: &DailyIssue, b: &DailyIssue| a.date == b.date && a.source == b.source;
        for group in self.daily_of(from..=before).chunk_by(same_group) {
            let Some(column) = latest.keys().position(|s| *s == group[0].source) else { continue };
            let eligible = group.iter().filter(known).filter(|d| d.issued_at <= d.start - ahead);
            // The latest issued (the first of equals, as `keep_latest` keeps).
            let Some(d) = eligible.fold(None, |held: Option<&DailyIssue>, d| match held {
                Some(h) if d.issued_at <= h.issued_at => Some(h),
                _ => Some(d),
            }) else {
                continue;
            };
            if history.is_settled(slot(d.date)) {
                history.forecast(slot(d.date), runs + column, d.value);
            }
        }
        let mut history = history.finish();
        // Within the day: each past day's running extreme at the local hour of its day this
        // one has reached (on the logic's clock), whole in the settlement unit as today's
        // floor is (`Observed::of`: the engine's value in the unit, to tenths, then whole).
        let w = ask.window();
        if w.start <= t && t < w.end {
            let k = crate::time::hours_passed(ask.station.timezone, ask.logic.clock(), t) as usize;
            // Both in date order: walked together rather than looked up per day.
            let mut by_hour = self.by_hour.range(first..).peekable();
            history.set_running(|date| {
                while by_hour.next_if(|(d, _)| **d < date).is_some() {}
                let native = by_hour.peek().filter(|(d, _)| **d == date).and_then(|(_, hours)| after_hours(hours, k));
                native.map(|v| round_half_away(round1(ask.station.units.convert(v, ask.unit))))
            });
        }
        let settled = self.settled_days(&finals, from, ask.date, t);
        Inputs { forecasts, history, settled, lead_days }
    }

    /// The daily forecasts of the days in `dates` (`daily` is sorted by date).
    fn daily_of(&self, dates: RangeInclusive<NaiveDate>) -> &[DailyIssue] {
        let lo = self.daily.partition_point(|d| d.date < *dates.start());
        let hi = self.daily.partition_point(|d| d.date <= *dates.end());
        &self.daily[lo..hi.max(lo)]
    }

    /// The value `date` settled on as known at t, and when it became known: its final
    /// climate report's (the version a reader settles on), else its pairs' verifying value.
    pub fn settled(&self, date: NaiveDate, t: DateTime<Utc>) -> Option<(f64, DateTime<Utc>)> {
        if let Some((v, at)) = self.cli.get(&date).and_then(|versions| final_report(versions, t)) {
            return Some((v, at));
        }
        self.pair_settled.get(&date).copied().filter(|(_, at)| *at <= t)
    }

    /// Every day `from..to` settled as known at t (its final report's value, else its
    /// pairs'), whatever source forecast it: the climatology baseline's sample. `finals`:
    /// [`Rows::finals`] of the same days and time.
    fn settled_days(
        &self,
        finals: &[(NaiveDate, f64)],
        from: NaiveDate,
        to: NaiveDate,
        t: DateTime<Utc>,
    ) -> Vec<(NaiveDate, f64)> {
        // Both by date: merged, a final report's value first (as `Rows::settled` chooses).
        let mut pairs = self.pair_settled.range(from..to).filter(|(_, (_, at))| *at <= t).peekable();
        let mut out = Vec::with_capacity(finals.len());
        for &(date, value) in finals {
            while let Some((&d, &(v, _))) = pairs.next_if(|(d, _)| **d <= date) {
                if d < date {
                    out.push((d, v));
                }
            }
            out.push((date, value));
        }
        out.extend(pairs.map(|(&d, &(v, _))| (d, v)));
        out
    }

    /// The days `from..to` a final climate report known at t settled, with its value, by
    /// date (found once per asked time: the history and the settled days both read them).
    fn finals(&self, from: NaiveDate, to: NaiveDate, t: DateTime<Utc>) -> Vec<(NaiveDate, f64)> {
        let reports = self.cli.range(from..to);
        reports.filter_map(|(&date, versions)| final_report(versions, t).map(|(v, _)| (date, v))).collect()
    }

    /// Each model's latest run of the day available by t, run at most
    /// [`RUN_HORIZON_DAYS`] before it; of a run republished, the version received last by t.
    fn model_runs(&self, ask: &Ask<'_>) -> Vec<SourceForecast> {
        let oldest = ask.date - Duration::days(RUN_HORIZON_DAYS);
        let value = ask.run_value();
        // The day's rows are by model (as read), so a model's are together: each is held
        // against the last one kept (comparing every row with every model kept was a
        // string comparison per pair, a twentieth of the job's CPU).
        let mut latest: Vec<&RunRow> = Vec::new();
        let rows = self.runs.get(&ask.date).into_iter().flatten();
        let known = |r: &&RunRow| r.available <= ask.t && r.run.date_naive() >= oldest && !r.values[value].is_nan();
        for r in rows.filter(known) {
            match latest.last_mut() {
                // A run republished is current from its receipt (as `as_of` chooses): of
                // equal runs, the one available last by t.
                Some(held) if Arc::ptr_eq(&held.model, &r.model) || held.model == r.model => {
                    if (r.run, r.available) > (held.run, held.available) {
                        *held = r;
                    }
                }
                _ => latest.push(r),
            }
        }
        latest
            .into_iter()
            .map(|r| SourceForecast { source: r.model.to_string(), run: r.run, forecast: r.values[value] })
            .collect()
    }

    /// The NWS hourly version in force at t, when its periods cover the day's window; once
    /// the day has begun, the one in force at its start (a later version covers only the
    /// hours left, and the lead-1 history scores the version before the day).
    fn nws_version(&self, ask: &Ask<'_>) -> Option<SourceForecast> {
        let w = ask.window();
        let at = ask.t.min(w.start);
        // As `as_of('nws_hourly', at)` chooses: the station's newest version available then
        // (generated within 8 days of `at`), whether or not it has periods on the day.
        let (newest_day, oldest_day) = (at.date_naive(), at.date_naive() - Duration::days(NWS_REACH_DAYS));
        let generated = self
            .nws_versions
            .iter()
            .filter(|(g, available)| *available <= at && (oldest_day..=newest_day).contains(&g.date_naive()))
            .map(|(g, _)| *g)
            .max()?;
        let in_force = self.nws.get(&ask.date)?.iter().find(|v| v.generated == generated)?;
        if in_force.first > w.start || in_force.last < w.end {
            return None;
        }
        let value = match ask.target {
            Quantity::High => in_force.high,
            Quantity::Low => in_force.low,
        };
        Some(SourceForecast {
            source: NWS.to_string(),
            run: in_force.generated,
            forecast: Units::Fahrenheit.convert(value, ask.unit),
        })
    }
}

/// `read`, with when it ended in the debug log (the reads run together: where a span's read
/// waits; benches/README.md, "Brackets").
async fn timed<T>(table: &'static str, read: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    let started = std::time::Instant::now();
    let out = read.await;
    tracing::debug!(table, elapsed_ms = started.elapsed().as_millis() as u64, "bracket inputs: read");
    out
}

/// The value of the climate report a reader settles on among `versions` known at t, and
/// when it became known, when that report is final and has the value.
fn final_report(versions: &[CliVersion], t: DateTime<Utc>) -> Option<(f64, DateTime<Utc>)> {
    let chosen = versions.iter().filter(|v| v.known_by(t)).max_by_key(|v| v.order)?;
    let (is_final, .., available, _, _) = chosen.order;
    chosen.value.filter(|_| is_final).zip(available)
}

/// The first day of the verified history read for days from `first` on.
fn history_start(first: NaiveDate) -> NaiveDate {
    first - Duration::days(365 * HISTORY_YEARS)
}

/// Holds in `map` the latest issuance under `key`.
fn keep_latest<'a, K: Ord>(map: &mut BTreeMap<K, &'a DailyIssue>, key: K, d: &'a DailyIssue) {
    let held = map.entry(key).or_insert(d);
    if d.issued_at > held.issued_at {
        *held = d;
    }
}

/// Every model run's rows of the days `first..=last` in the day clock of `logic`, available
/// by t, run at most [`RUN_HORIZON_DAYS`] before `first`: of `station`, or of every station
/// (by station code).
async fn model_runs(
    ctx: &SessionContext,
    station: Option<&str>,
    logic: Logic,
    first: NaiveDate,
    last: NaiveDate,
    t: DateTime<Utc>,
) -> Result<HashMap<String, StationRuns>> {
    let mut b = Bindings::new();
    let tz_mode = if logic == Logic::Nws { "standard" } else { "civil" };
    let of_station = station.map(|s| format!("location_name = {} AND", b.str(s))).unwrap_or_default();
    let sql = format!(
        "SELECT location_name, model, run_time, available_at, date, {values} FROM forecast_daily WHERE {of_station} \
         tz_mode = {mode} AND date >= {first} AND date <= {last} AND available_at <= {t} \
         AND run_date >= {from} AND run_date <= {to}",
        values = RUN_VALUES.join(", "),
        mode = b.str(tz_mode),
        first = b.date(first),
        last = b.date(last),
        t = b.time(t),
        from = b.partition_date(first - Duration::days(RUN_HORIZON_DAYS)),
        to = b.partition_date(t.date_naive().min(last)),
    );
    let started = std::time::Instant::now();
    let batches = b.collect(ctx, &sql).await?;
    let collected = started.elapsed();
    // Each batch decoded on its own core, then each station's rows grouped by day on its
    // own (one thread for all was a third of a second per span with the other core idle).
    let names: std::sync::Mutex<HashMap<String, Arc<str>>> = Default::default();
    let decoded = batches.par_iter().map(|batch| run_rows(batch, &names)).collect::<Result<Vec<_>>>()?;
    let mut by_station: HashMap<String, DatedRuns> = HashMap::new();
    for rows in decoded {
        for (code, rows) in rows {
            by_station.entry(code).or_default().extend(rows);
        }
    }
    let out = by_station
        .into_par_iter()
        .map(|(code, mut rows)| {
            // Each day's rows by model (`Rows::model_runs` reads a model's rows together).
            rows.sort_unstable_by(|a, b| (a.0, &a.1.model).cmp(&(b.0, &b.1.model)));
            let mut days = StationRuns::new();
            for (date, row) in rows {
                days.entry(date).or_default().push(row);
            }
            (code, days)
        })
        .collect();
    tracing::debug!(
        query_ms = collected.as_millis() as u64,
        rows_ms = (started.elapsed() - collected).as_millis() as u64,
        "bracket inputs: forecast_daily"
    );
    Ok(out)
}

/// One batch of [`model_runs`]' statement as (day, run) rows, a run of them per station
/// code in the batch's order; the model's name shared through `names` (a run's model is
/// compared by pointer first).
fn run_rows(
    batch: &RecordBatch,
    names: &std::sync::Mutex<HashMap<String, Arc<str>>>,
) -> Result<Vec<(String, DatedRuns)>> {
    let (codes, models) = (utf8_column(batch, 0)?, utf8_column(batch, 1)?);
    let (codes, models) = (codes.as_string::<i32>(), models.as_string::<i32>());
    let (runs, available, dates) = (times(batch, 2)?, times(batch, 3)?, dates(batch, 4)?);
    let values = [floats(batch, 5)?, floats(batch, 6)?, floats(batch, 7)?, floats(batch, 8)?];
    let mut out: Vec<(String, DatedRuns)> = Vec::new();
    // The rows come by station and model: the last station's rows and model name found
    // stand for the next rows (a map step per row was most of this loop).
    let mut last: Option<(&str, Arc<str>)> = None;
    for i in 0..batch.num_rows() {
        let (Some(run), Some(available), Some(date)) = (runs[i], available[i], dates[i]) else { continue };
        let values = values.map(|v| if v.is_valid(i) { v.value(i) } else { f64::NAN });
        if values.iter().all(|v| v.is_nan()) {
            continue;
        }
        let name = models.value(i);
        let model = match &last {
            Some((held, model)) if *held == name => Arc::clone(model),
            _ => {
                let mut names = names.lock().unwrap_or_else(|e| e.into_inner());
                let model = Arc::clone(names.entry(name.to_string()).or_insert_with(|| Arc::from(name)));
                last = Some((name, Arc::clone(&model)));
                model
            }
        };
        let code = codes.value(i);
        if out.last().is_none_or(|(held, _)| held != code) {
            out.push((code.to_string(), Vec::new()));
        }
        if let Some((_, rows)) = out.last_mut() {
            rows.push((date, RunRow { model, run, available, values }));
        }
    }
    Ok(out)
}

/// What one read covers: its stations (each once), their days' windows, the targets
/// asked, the logic, the days `first..=last` and the time (module docs).
struct Span<'a> {
    stations: Vec<&'a crate::catalog::Station>,
    targets: Vec<Quantity>,
    logic: Logic,
    first: NaiveDate,
    last: NaiveDate,
    t: DateTime<Utc>,
    /// Per station: the first day's start and the last day's end.
    windows: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// A time within a day can be asked: a span's, or one day's from its start (the hours
    /// of past days serve it).
    within_day: bool,
}

impl<'a> Span<'a> {
    /// The span of `asks` (at least one, alike: [`Rows::read_many`]) from day `first`.
    fn of(asks: &[Ask<'a>], first: NaiveDate) -> Self {
        let template = asks[0];
        let mut stations: Vec<&crate::catalog::Station> = Vec::new();
        let mut targets = Vec::new();
        for a in asks {
            if !stations.iter().any(|s| s.code == a.station.code) {
                stations.push(a.station);
            }
            if !targets.contains(&a.target) {
                targets.push(a.target);
            }
        }
        let clock = template.logic.clock();
        let windows = stations
            .iter()
            .map(|s| {
                let (w_first, w_last) = (
                    crate::time::day_window(s.timezone, clock, first),
                    crate::time::day_window(s.timezone, clock, template.date),
                );
                (w_first.start, w_last.end)
            })
            .collect();
        let within_day = first != template.date || asks.iter().any(|a| a.t >= a.window().start);
        Span {
            stations,
            targets,
            logic: template.logic,
            first,
            last: template.date,
            t: template.t,
            windows,
            within_day,
        }
    }

    /// `station_code IN (…)`, bound.
    fn stations_in(&self, b: &mut Bindings, column: &str) -> String {
        let codes: Vec<String> = self.stations.iter().map(|s| b.str(&s.code)).collect();
        format!("{column} IN ({})", codes.join(", "))
    }

    /// The earliest first-day start and the latest last-day end of the stations.
    fn bounds(&self) -> (DateTime<Utc>, DateTime<Utc>) {
        let start = self.windows.iter().map(|w| w.0).min().unwrap_or(self.t);
        let end = self.windows.iter().map(|w| w.1).max().unwrap_or(self.t);
        (start, end)
    }

    /// The latest last-day start: no NWS version generated after it is read.
    fn last_start(&self) -> DateTime<Utc> {
        let clock = self.logic.clock();
        let latest = self.stations.iter().map(|s| crate::time::day_window(s.timezone, clock, self.last).start).max();
        latest.unwrap_or(self.t)
    }
}

/// The index of `target` in the two-target values read: high, low.
fn target_index(target: Quantity) -> usize {
    match target {
        Quantity::High => 0,
        Quantity::Low => 1,
    }
}

/// Every NWS hourly version of the stations available by t that can be in force at a time
/// the days are asked about (from 3 days before the first day's start, the farthest
/// `brackets.php` answers, less the 8 days a version is in force), with when it became
/// available (its last row's), by station.
async fn nws_versions(ctx: &SessionContext, span: &Span<'_>) -> Result<HashMap<String, NwsVersions>> {
    let mut b = Bindings::new();
    let (start, _) = span.bounds();
    let sql = format!(
        "SELECT station_code, generated_at, max(available_at) FROM nws_hourly WHERE {stations} \
         AND available_at <= {t} AND date >= {p_from} AND date <= {p_to} GROUP BY station_code, generated_at",
        stations = span.stations_in(&mut b, "station_code"),
        t = b.time(span.t),
        p_from = b.partition_date((start - Duration::days(super::MAX_LEAD_DAYS + NWS_REACH_DAYS)).date_naive()),
        p_to = b.partition_date(span.t.min(span.last_start()).date_naive()),
    );
    let mut out: HashMap<String, NwsVersions> = HashMap::new();
    for batch in b.collect(ctx, &sql).await? {
        let codes = utf8_column(&batch, 0)?;
        let codes = codes.as_string::<i32>();
        let (generated, available) = (times(&batch, 1)?, times(&batch, 2)?);
        for (i, (g, a)) in generated.into_iter().zip(available).enumerate() {
            if let Some(v) = g.zip(a) {
                out.entry(codes.value(i).to_string()).or_default().push(v);
            }
        }
    }
    Ok(out)
}

/// Every NWS hourly version's periods on the days `first..=last`, per station, day and
/// version, available by t (the versions that can be in force for them: generated from 8
/// days before the first day's start). Each station's days are cut at its own windows,
/// given to the query as a table of (station, first day's start, last day's end) in
/// seconds.
async fn nws_days(ctx: &SessionContext, span: &Span<'_>) -> Result<HashMap<String, NwsByDay>> {
    let mut b = Bindings::new();
    let (start, end) = span.bounds();
    let windows: Vec<String> = span
        .stations
        .iter()
        .zip(&span.windows)
        .map(|(s, (lo, hi))| {
            format!("({}, CAST({} AS BIGINT), CAST({} AS BIGINT))", b.str(&s.code), lo.timestamp(), hi.timestamp())
        })
        .collect();
    // One day: the version's periods in its window. More: 24-hour days from the first's
    // start (the read checks the clock).
    let day = match span.first == span.last {
        true => "CAST(0 AS BIGINT)",
        false => "CAST((to_unixtime(n.start_time) - w.lo) / 86400 AS BIGINT)",
    };
    let sql = format!(
        "SELECT n.station_code, n.generated_at, min(n.start_time), max(n.end_time), max(n.temperature_f), \
         min(n.temperature_f), {day} AS day FROM nws_hourly n JOIN (VALUES {windows}) AS w(code, lo, hi) \
         ON n.station_code = w.code WHERE {stations} AND n.start_time >= {from} AND n.start_time < {to} \
         AND to_unixtime(n.start_time) >= w.lo AND to_unixtime(n.start_time) < w.hi \
         AND n.available_at <= {t} AND n.date >= {p_from} AND n.date <= {p_to} \
         GROUP BY n.station_code, n.generated_at, day",
        windows = windows.join(", "),
        stations = span.stations_in(&mut b, "n.station_code"),
        from = b.time(start),
        to = b.time(end),
        t = b.time(span.t),
        p_from = b.partition_date((start - Duration::days(super::MAX_LEAD_DAYS + NWS_REACH_DAYS)).date_naive()),
        p_to = b.partition_date(span.t.min(span.last_start()).date_naive()),
    );
    let mut out: HashMap<String, NwsByDay> = HashMap::new();
    for batch in b.collect(ctx, &sql).await? {
        let codes = utf8_column(&batch, 0)?;
        let codes = codes.as_string::<i32>();
        let (generated, firsts, lasts) = (times(&batch, 1)?, times(&batch, 2)?, times(&batch, 3)?);
        let (high, low) = (floats(&batch, 4)?, floats(&batch, 5)?);
        let days = ints(&batch, 6)?;
        for i in 0..batch.num_rows() {
            let (Some(generated), Some(first_t), Some(last_t)) = (generated[i], firsts[i], lasts[i]) else {
                continue;
            };
            if high.is_null(i) || low.is_null(i) || days.is_null(i) {
                continue;
            }
            let date = span.first + Duration::days(days.value(i));
            let v = NwsDay { generated, first: first_t, last: last_t, high: high.value(i), low: low.value(i) };
            out.entry(codes.value(i).to_string()).or_default().entry(date).or_default().push(v);
        }
    }
    Ok(out)
}

/// A daily forecast row, both targets in its own unit.
#[derive(Debug)]
struct DailyRow {
    source: String,
    date: NaiveDate,
    issued_at: DateTime<Utc>,
    available: DateTime<Utc>,
    /// High and low ([`target_index`]).
    values: [Option<f64>; 2],
    unit: Units,
}

/// Every daily forecast of the stations known by t for `days`, by station.
async fn daily_forecasts(
    ctx: &SessionContext,
    span: &Span<'_>,
    days: &RangeInclusive<NaiveDate>,
) -> Result<HashMap<String, Vec<DailyRow>>> {
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT station_code, source, date, issued_at, available_at, high, low, units FROM daily_forecasts \
         WHERE {stations} AND date <= {to} AND date >= {from} AND available_at <= {t} \
         AND (high IS NOT NULL OR low IS NOT NULL)",
        stations = span.stations_in(&mut b, "station_code"),
        to = b.date(*days.end()),
        from = b.date(*days.start()),
        t = b.time(span.t),
    );
    let mut out: HashMap<String, Vec<DailyRow>> = HashMap::new();
    for batch in b.collect(ctx, &sql).await? {
        let (codes, sources, units) = (utf8_column(&batch, 0)?, utf8_column(&batch, 1)?, utf8_column(&batch, 7)?);
        let (codes, sources, units) = (codes.as_string::<i32>(), sources.as_string::<i32>(), units.as_string::<i32>());
        let (dates, issued, available) = (dates(&batch, 2)?, times(&batch, 3)?, times(&batch, 4)?);
        let (high, low) = (floats(&batch, 5)?, floats(&batch, 6)?);
        for i in 0..batch.num_rows() {
            let (Some(date), Some(issued_at), Some(available)) = (dates[i], issued[i], available[i]) else { continue };
            let Some(unit) = Units::parse(units.value(i)) else { continue };
            let values = [high.is_valid(i).then(|| high.value(i)), low.is_valid(i).then(|| low.value(i))];
            let row = DailyRow { source: sources.value(i).to_string(), date, issued_at, available, values, unit };
            out.entry(codes.value(i).to_string()).or_default().push(row);
        }
    }
    Ok(out)
}

/// One climate report's choice order and its high and low in °F ([`target_index`]).
type CliRow = (CliOrder, [Option<f64>; 2]);

/// Every climate report of the stations' `days` known by t, each with what `as_of`
/// chooses it by (the choice and the `is_final` test come after: a filter before it would
/// let an older version stand in), by station and day.
async fn climate_reports(
    ctx: &SessionContext,
    span: &Span<'_>,
    days: &RangeInclusive<NaiveDate>,
) -> Result<HashMap<String, BTreeMap<NaiveDate, Vec<CliRow>>>> {
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT station_code, report_date, CAST(high_f AS DOUBLE), CAST(low_f AS DOUBLE), is_final, issued_at, \
         correction, available_at, received_at, row_key FROM reports WHERE kind = 'cli' AND {stations} \
         AND report_date <= {to} AND report_date >= {from} AND available_at <= {t}",
        stations = span.stations_in(&mut b, "station_code"),
        to = b.date(*days.end()),
        from = b.date(*days.start()),
        t = b.time(span.t),
    );
    let mut out: HashMap<String, BTreeMap<NaiveDate, Vec<CliRow>>> = HashMap::new();
    for batch in b.collect(ctx, &sql).await? {
        let codes = utf8_column(&batch, 0)?;
        let codes = codes.as_string::<i32>();
        let (dates, high, low) = (dates(&batch, 1)?, floats(&batch, 2)?, floats(&batch, 3)?);
        let (finals, corrections) = (bools(&batch, 4)?, bools(&batch, 6)?);
        let (issued, available, received) = (times(&batch, 5)?, times(&batch, 7)?, times(&batch, 8)?);
        let keys = batch.column(9).as_primitive_opt::<UInt64Type>().ok_or_else(|| internal("row_key"))?;
        for i in 0..batch.num_rows() {
            let Some(date) = dates[i] else { continue };
            let order = (finals.value(i), issued[i], corrections.value(i), available[i], received[i], keys.value(i));
            let values = [high.is_valid(i).then(|| high.value(i)), low.is_valid(i).then(|| low.value(i))];
            out.entry(codes.value(i).to_string()).or_default().entry(date).or_default().push((order, values));
        }
    }
    Ok(out)
}

/// One station's running extreme of one target after each hour, per past day.
type HoursByDay = BTreeMap<NaiveDate, Vec<Option<f64>>>;

/// The pairs of one station and target: by (lead, model, run label), each by date.
type PairsByRun = HashMap<(i64, String, String), Vec<PairRow>>;

/// One source's pairs at one lead and run label, by date.
#[derive(Debug)]
struct PairSeries {
    lead: i64,
    /// The run label's hour (`06z`: 6); `None` for a label not of that form.
    label: Option<u32>,
    rows: Vec<PairRow>,
}

/// The pairs of one station and target, by source (looked up by name without an
/// allocation, once per source and asked time).
type PairsBySource = HashMap<String, Vec<PairSeries>>;

/// The hour of a run label as `accuracy_pairs` writes it (two digits and `z`).
fn label_hour(label: &str) -> Option<u32> {
    label.strip_suffix('z').filter(|h| h.len() == 2).and_then(|h| h.parse().ok())
}

/// The `accuracy_pairs` rows of the stations and targets of `days` at `leads` known by t,
/// in the station's units, by (station, target).
async fn pair_rows(
    ctx: &SessionContext,
    span: &Span<'_>,
    days: &RangeInclusive<NaiveDate>,
    leads: RangeInclusive<i64>,
) -> Result<HashMap<(String, Quantity), PairsByRun>> {
    let mut b = Bindings::new();
    let targets: Vec<String> = span.targets.iter().map(|t| b.str(t.as_str())).collect();
    let sql = format!(
        "SELECT station_code, target, date, model, run_label, CAST(lead_days AS BIGINT), forecast, observed, \
         available_at FROM accuracy_pairs WHERE {stations} AND target IN ({targets}) AND lead_days >= {l1} \
         AND lead_days <= {l2} AND available_at <= {t} AND date <= {to} AND date >= {from} \
         AND forecast IS NOT NULL AND observed IS NOT NULL",
        stations = span.stations_in(&mut b, "station_code"),
        targets = targets.join(", "),
        l1 = leads.start(),
        l2 = leads.end(),
        t = b.time(span.t),
        to = b.date(*days.end()),
        from = b.date(*days.start()),
    );
    // Rows by (station, target), then by (lead, model, label) as numbers: a row's strings
    // are compared with the last station's and the few names seen, not allocated and
    // hashed per row (a string and a map step each was most of this read, on one core).
    let mut names: Vec<String> = Vec::new();
    let mut by_station: HashMap<(String, Quantity), RunsById> = HashMap::new();
    for batch in b.collect(ctx, &sql).await? {
        let (codes, targets) = (utf8_column(&batch, 0)?, utf8_column(&batch, 1)?);
        let (codes, targets) = (codes.as_string::<i32>(), targets.as_string::<i32>());
        let (models, run_labels) = (utf8_column(&batch, 3)?, utf8_column(&batch, 4)?);
        let (models, run_labels) = (models.as_string::<i32>(), run_labels.as_string::<i32>());
        let leads = ints(&batch, 5)?;
        let (dates, forecasts, observed, available) =
            (dates(&batch, 2)?, floats(&batch, 6)?, floats(&batch, 7)?, times(&batch, 8)?);
        // The rows come by station and target (the table's files are sorted so).
        let mut held: Option<(&str, Quantity, &mut RunsById)> = None;
        for i in 0..batch.num_rows() {
            let (Some(date), Some(available)) = (dates[i], available[i]) else { continue };
            let Some(target) = Quantity::named(targets.value(i)) else { continue };
            let code = codes.value(i);
            let runs = match held.take() {
                Some((c, t, runs)) if c == code && t == target => runs,
                _ => by_station.entry((code.to_string(), target)).or_default(),
            };
            let key = (leads.value(i), name_id(&mut names, models.value(i)), name_id(&mut names, run_labels.value(i)));
            let (day, forecast, observed) = (date.num_days_from_ce(), forecasts.value(i), observed.value(i));
            runs.entry(key).or_default().push(PairRow { date, day, available, forecast, observed });
            held = Some((code, target, runs));
        }
    }
    let out = by_station
        .into_iter()
        .map(|(key, runs)| {
            let runs = runs.into_iter().map(|((lead, model, label), mut rows)| {
                rows.sort_by_key(|p| p.date);
                ((lead, names[model].clone(), names[label].clone()), rows)
            });
            (key, runs.collect())
        })
        .collect();
    Ok(out)
}

/// A station and target's pairs by (lead, model, label), the names as [`name_id`]s.
type RunsById = FastMap<(i64, usize, usize), Vec<PairRow>>;

/// `name`'s place in `names`, added when new (a read holds a few dozen model and run-label
/// names).
fn name_id(names: &mut Vec<String>, name: &str) -> usize {
    match names.iter().position(|n| n == name) {
        Some(i) => i,
        None => {
            names.push(name.to_string());
            names.len() - 1
        }
    }
}

/// Each target's running extreme after each hour (`daily_extremes`, the logic's rows) of
/// the stations' `days`, when a time within a day can be asked, by (station, target);
/// none of a target whose column a lake's `daily_extremes` lacks yet (written before it
/// existed, until the job runs again), or without the table.
async fn hours_by_day(
    ctx: &SessionContext,
    span: &Span<'_>,
    days: &RangeInclusive<NaiveDate>,
) -> Result<HashMap<(String, Quantity), HoursByDay>> {
    let mut out: HashMap<(String, Quantity), HoursByDay> = HashMap::new();
    let Ok(table) = ctx.table_provider("daily_extremes").await else { return Ok(out) };
    let column = |t: Quantity| format!("{}_by_hour", t.as_str());
    let targets: Vec<Quantity> =
        span.targets.iter().copied().filter(|t| table.schema().field_with_name(&column(*t)).is_ok()).collect();
    if !span.within_day || targets.is_empty() {
        return Ok(out);
    }
    let mut b = Bindings::new();
    let columns: Vec<String> = targets.iter().map(|t| column(*t)).collect();
    let sql = format!(
        "SELECT station_code, date, {columns} FROM daily_extremes WHERE {stations} AND logic = {logic} \
         AND date >= {from} AND date <= {to}",
        columns = columns.join(", "),
        stations = span.stations_in(&mut b, "station_code"),
        logic = b.str(span.logic.as_str()),
        from = b.date(*days.start()),
        to = b.date(*days.end()),
    );
    for batch in b.collect(ctx, &sql).await? {
        let codes = utf8_column(&batch, 0)?;
        let (codes, dates) = (codes.as_string::<i32>(), dates(&batch, 1)?);
        for (k, target) in targets.iter().enumerate() {
            let hours = utf8_column(&batch, 2 + k)?;
            for (i, hours) in hours.as_string::<i32>().iter().enumerate() {
                if let (Some(date), Some(hours)) = (dates[i], hours) {
                    let held = out.entry((codes.value(i).to_string(), *target)).or_default();
                    held.insert(date, parse_hours_column(hours));
                }
            }
        }
    }
    Ok(out)
}

fn internal(what: &str) -> DataFusionError {
    DataFusionError::Internal(format!("bracket inputs: unexpected type of {what}"))
}

fn floats(batch: &RecordBatch, i: usize) -> Result<&datafusion::arrow::array::PrimitiveArray<Float64Type>> {
    batch.column(i).as_primitive_opt::<Float64Type>().ok_or_else(|| internal(batch.schema().field(i).name()))
}

fn times(batch: &RecordBatch, i: usize) -> Result<Vec<Option<DateTime<Utc>>>> {
    let a = batch
        .column(i)
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(|| internal(batch.schema().field(i).name()))?;
    Ok((0..a.len()).map(|r| a.is_valid(r).then(|| DateTime::from_timestamp_micros(a.value(r))).flatten()).collect())
}

fn dates(batch: &RecordBatch, i: usize) -> Result<Vec<Option<NaiveDate>>> {
    let a = batch.column(i).as_primitive_opt::<Date32Type>().ok_or_else(|| internal(batch.schema().field(i).name()))?;
    Ok((0..a.len()).map(|r| a.is_valid(r).then(|| Date32Type::to_naive_date_opt(a.value(r))).flatten()).collect())
}

fn bools(batch: &RecordBatch, i: usize) -> Result<&datafusion::arrow::array::BooleanArray> {
    batch.column(i).as_boolean_opt().ok_or_else(|| internal(batch.schema().field(i).name()))
}

fn ints(batch: &RecordBatch, i: usize) -> Result<&datafusion::arrow::array::PrimitiveArray<Int64Type>> {
    batch.column(i).as_primitive_opt::<Int64Type>().ok_or_else(|| internal(batch.schema().field(i).name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 5, d).unwrap()
    }

    fn at(h: u32) -> DateTime<Utc> {
        day(20).and_hms_opt(h, 0, 0).unwrap().and_utc()
    }

    fn report(is_final: bool, value: f64, available: DateTime<Utc>) -> CliVersion {
        CliVersion {
            order: (is_final, Some(available), false, Some(available), Some(available), 1),
            value: Some(value),
        }
    }

    /// The climatology's settled days are each day's `Rows::settled`: a final report known
    /// by then first, else the pairs' value known by then (a preliminary report, or a final
    /// one not yet known, leaves the pairs' value).
    #[test]
    fn the_settled_days_are_each_days_settled_value_as_known_then() {
        let mut rows = Rows::default();
        rows.cli.insert(day(1), vec![report(true, 70.0, at(1))]);
        rows.cli.insert(day(2), vec![report(false, 60.0, at(1))]);
        rows.cli.insert(day(4), vec![report(true, 50.0, at(9))]);
        rows.cli.insert(day(6), vec![report(false, 40.0, at(1)), report(true, 41.0, at(2))]);
        for (d, v, known) in [(2, 61.0, 1), (3, 62.0, 1), (4, 63.0, 1), (5, 64.0, 9), (7, 65.0, 1)] {
            rows.pair_settled.insert(day(d), (v, at(known)));
        }
        let t = at(5);
        let finals = rows.finals(day(1), day(8), t);
        assert_eq!(finals, [(day(1), 70.0), (day(6), 41.0)]);
        let expected: Vec<(NaiveDate, f64)> =
            (1..8).filter_map(|d| rows.settled(day(d), t).map(|(v, _)| (day(d), v))).collect();
        assert_eq!(rows.settled_days(&finals, day(1), day(8), t), expected);
        assert_eq!(
            expected,
            [(day(1), 70.0), (day(2), 61.0), (day(3), 62.0), (day(4), 63.0), (day(6), 41.0), (day(7), 65.0)]
        );
        // Only days before the asked one.
        let finals = rows.finals(day(1), day(4), t);
        assert_eq!(rows.settled_days(&finals, day(1), day(4), t), expected[..3]);
    }

    /// Within the day a run issued after the LST day began is judged by its label's lead-0
    /// pairs, and by its lead-1 ones while the label has none; a run issued before the day
    /// keeps the ask's lead. KNYC's LST day starts at 05:00 UTC.
    #[test]
    fn a_run_issued_within_the_day_takes_its_lead_0_errors() {
        let station = crate::catalog::Catalog::global().get("KNYC").unwrap();
        let utc = |d: u32, h: u32| day(d).and_hms_opt(h, 0, 0).unwrap().and_utc();
        let run = |model: &str, d: u32, h: u32, value: f64| RunRow {
            model: Arc::from(model),
            run: utc(d, h),
            available: utc(d, h) + Duration::hours(1),
            values: [value, f64::NAN, f64::NAN, f64::NAN],
        };
        let mut runs = StationRuns::new();
        // By model, as read.
        let rows = vec![run("ECMWF-IFS", 20, 6, 78.0), run("GFS", 20, 0, 79.0), run("HRRR", 19, 5, 80.0)];
        runs.insert(day(20), rows);
        runs.get_mut(&day(20)).unwrap().extend([run("HRRR", 20, 5, 81.0), run("NAM", 20, 6, 77.0)]);
        let known_at = |lead: i64, hour: u32, forecast: f64, available: DateTime<Utc>| PairSeries {
            lead,
            label: Some(hour),
            rows: vec![PairRow { date: day(10), day: day(10).num_days_from_ce(), available, forecast, observed: 72.0 }],
        };
        let series = |lead: i64, hour: u32, forecast: f64| known_at(lead, hour, forecast, utc(11, 12));
        let mut rows = Rows { runs: Arc::new(runs), ..Rows::default() };
        rows.pairs.insert("HRRR".into(), vec![series(1, 5, 60.0), series(0, 5, 70.0)]);
        rows.pairs.insert("GFS".into(), vec![series(1, 0, 65.0), series(0, 0, 64.0)]);
        rows.pairs.insert("ECMWF-IFS".into(), vec![series(1, 6, 66.0)]);
        // NAM's lead-0 pair became known only after the asked time.
        rows.pairs.insert("NAM".into(), vec![series(1, 6, 67.0), known_at(0, 6, 68.0, utc(21, 0))]);
        let history = |t: DateTime<Utc>| {
            let ask = Ask::settling(station, Quantity::High, Some(day(20)), Some(Logic::Nws), t);
            let inputs = rows.inputs(&ask);
            assert_eq!(inputs.lead_days, 1);
            let names = inputs.forecasts.iter().map(|f| f.source.as_str());
            let mut seen: Vec<(String, f64)> = (inputs.history.rows())
                .flat_map(|(_, row)| names.clone().zip(row.iter().copied()).filter(|(_, v)| !v.is_nan()))
                .map(|(n, v)| (n.to_string(), v))
                .collect();
            seen.sort_by(|a, b| a.0.cmp(&b.0));
            seen
        };
        let pairs = |list: &[(&str, f64)]| list.iter().map(|(n, v)| (n.to_string(), *v)).collect::<Vec<_>>();
        // 10:00 EST: HRRR's 05z run of the day (lead 0), GFS's 00z run before it (lead 1),
        // ECMWF's 06z run of the day, whose label has lead-1 pairs only, and NAM's, whose
        // lead-0 pair is not known yet.
        assert_eq!(history(utc(20, 15)), pairs(&[("ECMWF-IFS", 66.0), ("GFS", 65.0), ("HRRR", 70.0), ("NAM", 67.0)]));
        // The evening before: HRRR's run of the day before, at lead 1; the others not out yet.
        assert_eq!(history(utc(19, 23)), pairs(&[("HRRR", 60.0)]));
    }

    /// A run published again (the same model and run time, received later with other
    /// values) is current from its receipt, whichever the read gave first.
    #[test]
    fn a_republished_run_is_current_from_its_receipt() {
        let station = crate::catalog::Catalog::global().get("KNYC").unwrap();
        let utc = |d: u32, h: u32| day(d).and_hms_opt(h, 0, 0).unwrap().and_utc();
        let gfs: Arc<str> = Arc::from("GFS");
        let row = |available: u32, value: f64| RunRow {
            model: Arc::clone(&gfs),
            run: utc(19, 12),
            available: utc(19, available),
            values: [value, f64::NAN, f64::NAN, f64::NAN],
        };
        for rows in [vec![row(20, 81.0), row(16, 80.0)], vec![row(16, 80.0), row(20, 81.0)]] {
            let mut runs = StationRuns::new();
            runs.insert(day(20), rows);
            let rows = Rows { runs: Arc::new(runs), ..Rows::default() };
            let at = |h: u32| {
                let ask = Ask::settling(station, Quantity::High, Some(day(20)), Some(Logic::Nws), utc(19, h));
                rows.model_runs(&ask).iter().map(|f| f.forecast).collect::<Vec<_>>()
            };
            assert_eq!((at(15), at(17), at(21)), (vec![], vec![80.0], vec![81.0]));
        }
    }

    #[test]
    fn run_labels_are_two_digit_hours() {
        assert_eq!(label_hour("06z"), Some(6));
        assert_eq!(label_hour("18z"), Some(18));
        assert_eq!(label_hour("6z"), None);
        assert_eq!(label_hour("06"), None);
    }
}
