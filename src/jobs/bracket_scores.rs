//! The `bracket_forecasts` helper table of the `bracket_scores` job (issue 32,
//! "Verification"): for every settled station-day of the run's dates, both targets, and each
//! checkpoint (D−1 12:00 and 18:00, D 06:00, 10:00, 13:00 and 16:00 on the station's local
//! clock), the distribution the service would have answered then and the three baselines
//! made from the same inputs, scored against the settled value.
//!
//! No look-ahead: each checkpoint's inputs are chosen by [`Rows::inputs`] from what was
//! known at it (the rows `brackets.php` reads, read once per span for every station; the
//! history before a span is the previous span's of the run, extended by its days), its
//! distribution is made as `brackets.php` makes it ([`fit`], then [`on_the_day`]), and a same-day
//! checkpoint's floor (ceiling) is the running high (low) of the lake's observations
//! available then, replayed through the live engine (`brackets.php` as of a time reads
//! the same rows, or the server's in-memory copy of them with their receipt times). Only the settled value each forecast is scored
//! against is today's (the final climate report known now, else the engine's day that
//! `accuracy_pairs` verifies against).
//!
//! The settlement is the `nws` logic's (the climate report's day, what `accuracy_pairs`
//! verifies) in the settlement unit of the station's `nws` market, else the station's.
//!
//! One row per forecast and bracket of the ladder it is scored on (the usual ladder around
//! the distribution's median, the same for the baselines): `station_code, date, target,
//! logic, units, checkpoint, checkpoint_at, forecaster, method (ours, as `brackets.php`
//! names it: the baselines' rows name it too), settled, settled_at (when the
//! settled value became known: `bracket_accuracy.php`'s `as_of`), bracket, bracket_lo,
//! bracket_hi, p, hit`, and on the ladder's first row only (null on the others, so `avg()`
//! over the table weighs each forecast once) `ignorance` (bits), `rps` (over whole values),
//! `brier` (of the ladder), `pit` (mid-point), `mean`. Forecasters: `wxlake`, and the
//! baselines `climatology`, `best_source`, `equal_weight` (`brackets::baselines`), each
//! bounded by the same running extreme; a baseline without enough history that day has no
//! rows.

use std::collections::HashSet;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, TimeZone, Utc};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int32Array, RecordBatch, StringArray, StringBuilder,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use rayon::prelude::*;

use super::error::JobError;
use super::observed::{between, by_station, replay_span, StationRows};
use crate::bracket_odds::inputs::{PastReads, Rows};
use crate::bracket_odds::{bounded, fit, on_the_day, Ask, Inputs, Observed, OddsError, MAX_LEAD_DAYS};
use crate::brackets::baselines::{best_single_gaussian, climatology, equal_weight_fraction};
use crate::brackets::markets::Quantity;
use crate::brackets::method::Fit;
use crate::brackets::scores::{brier, ignorance, pit, rps};
use crate::brackets::{Bracket, Distribution, Ladder, METHOD};
use crate::catalog::{Catalog, Station};
use crate::extremes::{LiveInput, Logic, StationExtremes, REPLAY_AFTER, REPLAY_BEFORE};
use crate::lake::bound_sql::{utf8_column, Bindings};
use crate::lake::rows::date32;
use crate::lake::window::load_replay_window;
use crate::units::round_half_away;

/// The checkpoints: days from the settlement day, local hour, label.
pub const CHECKPOINTS: [(i64, u32, &str); 6] = [
    (-1, 12, "D-1 12:00"),
    (-1, 18, "D-1 18:00"),
    (0, 6, "D 06:00"),
    (0, 10, "D 10:00"),
    (0, 13, "D 13:00"),
    (0, 16, "D 16:00"),
];

/// How long after its time a reading can become known and still reach a same-day
/// checkpoint's replay: it must be known by the day's last checkpoint, which is at most its
/// local hour after the day's start in Local Standard Time (daylight time is ahead of it),
/// and be no older than the replay's margin before the day. Later ones are not read: the
/// one-minute rows, known a day after their minute, reach no checkpoint.
fn same_day_known_within() -> Duration {
    let last_hour = CHECKPOINTS.iter().filter(|c| c.0 == 0).map(|c| c.1).max().unwrap_or(0);
    Duration::hours(i64::from(last_hour)) + REPLAY_BEFORE
}

/// The forecasters scored: ours, then the baselines.
pub const FORECASTERS: [&str; 4] = ["wxlake", "climatology", "best_source", "equal_weight"];

/// Days either side of the day of the year the climatology baseline reads.
const CLIMATOLOGY_WINDOW_DAYS: u32 = 15;

/// The settled day's logic.
const LOGIC: Logic = Logic::Nws;

/// One scored forecast (with the method it was made by: a row keeps it when the method
/// changes and the row is not recomputed).
#[derive(Debug, Clone, PartialEq)]
pub struct Scored<'a> {
    pub station_code: &'a str,
    pub date: NaiveDate,
    pub target: Quantity,
    pub units: &'static str,
    pub checkpoint: &'static str,
    pub checkpoint_at: DateTime<Utc>,
    pub forecaster: &'static str,
    pub settled: i32,
    /// When the settled value became known.
    pub settled_at: DateTime<Utc>,
    pub ladder: Ladder,
    /// Per bracket of the ladder.
    pub p: Vec<f64>,
    pub ignorance: f64,
    pub rps: f64,
    pub brier: f64,
    pub pit: f64,
    pub mean: f64,
}

/// A checkpoint's moment for `date` at `station`: the local civil time, UTC (the earliest
/// reading of a repeated hour; a skipped hour's next one).
pub fn checkpoint_at(station: &Station, date: NaiveDate, days: i64, hour: u32) -> Option<DateTime<Utc>> {
    let local = (date + Duration::days(days)).and_time(NaiveTime::from_hms_opt(hour, 0, 0)?);
    let tz = station.timezone;
    tz.from_local_datetime(&local)
        .earliest()
        .or_else(|| tz.from_local_datetime(&(local + Duration::hours(1))).earliest())
        .map(|t| t.with_timezone(&Utc))
}

/// One station's observations, one-minute data and reports, each with when it was known.
type Observations<'a> = StationRows<'a>;

/// One station-day's running extreme at its checkpoints, in their order: the day's rows,
/// sorted by when each became known, are fed to one engine as the checkpoints pass. The
/// engine's answer does not depend on the order rows reach it, so at each checkpoint it is
/// `StationExtremes::replay` of the rows known then (what `brackets.php` as of that time
/// makes from the same rows), without replaying the earlier ones again.
struct DayReplay<'a> {
    live: StationExtremes,
    /// The day's rows (its window and the replay's margins), by when they became known.
    rows: Vec<(DateTime<Utc>, LiveInput<'a>)>,
    fed: usize,
}

impl<'a> DayReplay<'a> {
    fn new(obs: &Observations<'a>, ask: &Ask<'_>) -> Self {
        let w = ask.window();
        let (from, to) = (w.start - REPLAY_BEFORE, w.end + REPLAY_AFTER);
        let metars = between(&obs.metars, |(m, _)| m.time, from, to).iter().map(|(m, at)| (*at, LiveInput::Metar(m)));
        let onemin =
            between(&obs.onemin, |(o, _)| o.time, from, to).iter().map(|(o, at)| (*at, LiveInput::OneMinute(o)));
        let reports = obs.reports.iter().filter(|(r, _)| r.date == ask.date).map(|(r, at)| (*at, LiveInput::Report(r)));
        let mut rows: Vec<_> = metars.chain(onemin).chain(reports).collect();
        rows.sort_by_key(|(at, _)| *at);
        DayReplay { live: StationExtremes::new(ask.station), rows, fed: 0 }
    }

    /// The running extreme of `ask`'s day from the rows known at `ask.t` (none before the
    /// day starts); `ask.t` no earlier than the last asked.
    fn observed(&mut self, ask: &Ask<'_>) -> Option<Observed> {
        if ask.t < ask.window().start {
            return None;
        }
        let known = self.rows[self.fed..].partition_point(|(at, _)| *at <= ask.t);
        for (_, input) in &self.rows[self.fed..self.fed + known] {
            self.live.apply(*input);
        }
        self.fed += known;
        Observed::of(ask, self.live.extremes(ask.logic, ask.date, ask.t).as_ref())
    }
}

/// The scored forecasts of `station`'s targets for the settled ones of `days` (module
/// docs), from each target's `rows` read for their span and known by `now`. The targets
/// share each day's replay of the observations: the engine's day has both extremes.
fn station_scores<'a>(
    station: &'a Station,
    targets: &[(Quantity, &Rows)],
    obs: &Observations<'_>,
    days: &[NaiveDate],
    now: DateTime<Utc>,
    costs: &Costs,
) -> Vec<Scored<'a>> {
    days.par_iter()
        .flat_map_iter(|&date| {
            let checkpoints = CHECKPOINTS.iter().filter_map(move |&(days, hour, label)| {
                let t = checkpoint_at(station, date, days, hour).filter(|t| *t <= now)?;
                Some((label, t))
            });
            // Each settled target's day: its checkpoints in order, each reusing the one
            // before's fit when its inputs are the same (the four within the day usually
            // are), and the observations replayed once for all of them.
            let mut settled: Vec<_> = targets
                .iter()
                .filter_map(|&(target, rows)| {
                    let settled = rows.settled(date, now).map(|(v, at)| (round_half_away(v) as i32, at))?;
                    Some((target, rows, settled, None))
                })
                .collect();
            let mut replay = None;
            let mut scored = Vec::new();
            for (label, t) in checkpoints {
                for (target, rows, settled, previous) in &mut settled {
                    let ask = Ask::settling(station, *target, Some(date), Some(LOGIC), t);
                    let replay = replay.get_or_insert_with(|| DayReplay::new(obs, &ask));
                    scored.extend(checkpoint_scores(&ask, rows, replay, *settled, label, previous, costs));
                }
            }
            scored
        })
        .collect()
}

/// Where the scoring's CPU time goes, summed over threads (debug log; benches/README.md).
#[derive(Default)]
struct Costs {
    inputs_us: AtomicU64,
    observed_us: AtomicU64,
    fit_us: AtomicU64,
    rest_us: AtomicU64,
    fits: AtomicU64,
    reused: AtomicU64,
}

impl Costs {
    fn add(counter: &AtomicU64, since: Instant) -> Instant {
        let now = Instant::now();
        counter.fetch_add((now - since).as_micros() as u64, Ordering::Relaxed);
        now
    }
}

/// What a checkpoint of a day made from its inputs before the day's observations bound
/// it: the method's fit and the baselines, pure functions of those inputs, so the next
/// checkpoint of the same day takes them again when its inputs are the same.
struct Fitted {
    inputs: Inputs,
    fit: (Distribution, Fit),
    /// Climatology, the best source's Gaussian, the equal-weight fraction.
    baselines: [Option<Distribution>; 3],
}

impl Fitted {
    /// Whether `inputs` make the same fit and baselines as this one's: the same forecasts,
    /// past days (their dates, settled values and forecasts; not their running extremes,
    /// which only the same-day step reads) and settled days.
    fn fits(&self, inputs: &Inputs) -> bool {
        let (a, b) = (&self.inputs, inputs);
        let same_forecasts = a.forecasts.len() == b.forecasts.len()
            && a.forecasts.iter().zip(&b.forecasts).all(|(x, y)| x.source == y.source && x.forecast == y.forecast);
        same_forecasts && a.history.same_verified(&b.history) && a.settled == b.settled
    }
}

/// Ours and the baselines at one checkpoint (none when nothing had forecast the day, or a
/// final report had already settled it). `previous`: the day's last fit, reused when this
/// checkpoint's inputs are the same, else replaced.
fn checkpoint_scores<'a>(
    ask: &Ask<'a>,
    rows: &Rows,
    replay: &mut DayReplay<'_>,
    settled: (i32, DateTime<Utc>),
    label: &'static str,
    previous: &mut Option<Fitted>,
    costs: &Costs,
) -> Vec<Scored<'a>> {
    let started = Instant::now();
    let observed = replay.observed(ask);
    if observed.is_some_and(|o| o.is_final) {
        return Vec::new();
    }
    let started = Costs::add(&costs.observed_us, started);
    let inputs = rows.inputs(ask);
    let started = Costs::add(&costs.inputs_us, started);
    if !previous.as_ref().is_some_and(|p| p.fits(&inputs)) {
        costs.fits.fetch_add(1, Ordering::Relaxed);
        let fit = match fit(ask, &inputs) {
            Ok(fit) => fit,
            Err(OddsError::NoForecast { .. }) => return Vec::new(),
            Err(e) => {
                tracing::warn!(station = %ask.station.code, date = %ask.date, error = %e, "bracket_scores: no distribution");
                return Vec::new();
            }
        };
        let forecasts: Vec<f64> = inputs.forecasts.iter().map(|f| f.forecast).collect();
        // Climatology reads the settled days only: the day's last one stands while they
        // are the same (new runs change the fit, not them).
        let climatology = match previous.as_mut() {
            Some(p) if p.inputs.settled == inputs.settled => p.baselines[0].take(),
            _ => climatology(&inputs.settled, ask.date, CLIMATOLOGY_WINDOW_DAYS),
        };
        let baselines =
            [climatology, best_single_gaussian(&inputs.history, &forecasts), equal_weight_fraction(&forecasts)];
        *previous = Some(Fitted { inputs, fit, baselines });
    } else if let Some(p) = previous.as_mut() {
        costs.reused.fetch_add(1, Ordering::Relaxed);
        // Same fit; this checkpoint's own running extremes of past days.
        p.inputs = inputs;
    }
    let started = Costs::add(&costs.fit_us, started);
    let Some(day) = previous.as_ref() else { return Vec::new() };
    // As `brackets.php` answers it (`compose_fitted`), without what only the answer shows.
    let (ours, _) = on_the_day(ask, &day.inputs, observed, day.fit.0.clone(), Some(&day.fit.1));
    let ladder = ask.usual_ladder(ours.quantile(0.5));
    let baselines = day.baselines.iter().map(|b| b.clone().map(|d| bounded(d, ask.target, observed)));
    let dists = std::iter::once(Some(ours)).chain(baselines);
    let scored = FORECASTERS
        .iter()
        .zip(dists)
        .filter_map(|(name, d)| Some(score(ask, name, label, &d?, &ladder, settled)))
        .collect();
    Costs::add(&costs.rest_us, started);
    scored
}

fn score<'a>(
    ask: &Ask<'a>,
    forecaster: &'static str,
    label: &'static str,
    d: &Distribution,
    ladder: &Ladder,
    (settled, settled_at): (i32, DateTime<Utc>),
) -> Scored<'a> {
    Scored {
        station_code: &ask.station.code,
        date: ask.date,
        target: ask.target,
        units: ask.unit.as_str(),
        checkpoint: label,
        checkpoint_at: ask.t,
        forecaster,
        settled,
        settled_at,
        ladder: ladder.clone(),
        p: d.brackets(ladder),
        ignorance: ignorance(d, settled),
        rps: rps(d, settled),
        brier: brier(d, ladder, settled),
        pit: pit(d, settled),
        mean: d.mean(),
    }
}

/// Computes `bracket_forecasts` for settled days `from..=to` of every catalog station from
/// the tables registered in `ctx` (`forecast_daily`, `accuracy_pairs`, `nws_hourly`,
/// `daily_forecasts`, `reports`, `observations`, `onemin`), as known at `now`; the history
/// before the days from `past` where the run's previous chunk read it.
pub async fn bracket_forecasts(
    ctx: &SessionContext,
    from: NaiveDate,
    to: NaiveDate,
    now: DateTime<Utc>,
    past: &mut PastReads,
) -> Result<MemTable, JobError> {
    // Only stations with a verified pair in the span have a settled day with forecasts.
    let started = Instant::now();
    let verified = stations_with_pairs(ctx, from, to).await?;
    let with_pairs = started.elapsed();
    let asks: Vec<(&'static Station, Quantity)> = Catalog::global()
        .all()
        .iter()
        .filter(|s| verified.contains(s.code.as_str()))
        .flat_map(|s| [(s, Quantity::High), (s, Quantity::Low)])
        .collect();
    // The span's templates: its last day, everything known now.
    let templates: Vec<Ask<'_>> =
        asks.iter().map(|&(station, target)| Ask::settling(station, target, Some(to), Some(LOGIC), now)).collect();
    // Read together: the same-day checkpoints' observations, and every station's rows in
    // one statement per table (the tables are not partitioned by station, so each
    // station's own read would scan every file: benches/README.md).
    let started = Instant::now();
    let (start, end) = replay_span(from, to);
    let observations = async {
        let rows = load_replay_window(ctx, start, end, Some(same_day_known_within())).await?;
        Ok::<_, JobError>((rows, started.elapsed()))
    };
    let station_rows =
        async { Ok::<_, JobError>(Rows::read_many(ctx, &templates, from, 0..=MAX_LEAD_DAYS, past).await?) };
    let (((metars, onemin, reports), observations_read), rows) = futures::try_join!(observations, station_rows)?;
    let read = started.elapsed();
    let started = Instant::now();
    let by_station = by_station(&metars, &onemin, &reports, from, to);
    let grouped = started.elapsed();
    let none = Observations::default();
    // Each station's and target's scoring spreads over the cores.
    let started = Instant::now();
    let costs = Costs::default();
    let days: Vec<NaiveDate> = from.iter_days().take_while(|d| *d <= to).collect();
    // Each station's targets together (`asks` holds them side by side).
    let mut scored: Vec<Scored> = asks
        .par_chunks(2)
        .zip(rows.par_chunks(2))
        .flat_map_iter(|(asks, rows)| {
            let station = asks[0].0;
            let targets: Vec<(Quantity, &Rows)> = asks.iter().map(|a| a.1).zip(rows).collect();
            let obs = by_station.get(station.code.as_str()).unwrap_or(&none);
            station_scores(station, &targets, obs, &days, now, &costs)
        })
        .collect();
    // Where the job's time goes (benches/README.md, "Brackets").
    tracing::debug!(
        stations = asks.len() / 2,
        with_pairs_ms = with_pairs.as_millis() as u64,
        read_ms = read.as_millis() as u64,
        observations_read_ms = observations_read.as_millis() as u64,
        grouped_ms = grouped.as_millis() as u64,
        scored_ms = started.elapsed().as_millis() as u64,
        inputs_cpu_ms = costs.inputs_us.load(Ordering::Relaxed) / 1000,
        observed_cpu_ms = costs.observed_us.load(Ordering::Relaxed) / 1000,
        fit_cpu_ms = costs.fit_us.load(Ordering::Relaxed) / 1000,
        rest_cpu_ms = costs.rest_us.load(Ordering::Relaxed) / 1000,
        fits = costs.fits.load(Ordering::Relaxed),
        reused = costs.reused.load(Ordering::Relaxed),
        "bracket_scores: read and scored"
    );
    // In the output's order, a batch per date (the job's partition), built over the cores:
    // the writer then finds each date's rows together and sorted, and neither gathers nor
    // sorts them again (it checks; any other order is only slower).
    let started = Instant::now();
    let batches = output_batches(&mut scored)?;
    tracing::debug!(
        forecasts = scored.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "bracket_scores: rows built"
    );
    Ok(MemTable::try_new(schema(), vec![batches])?)
}

/// `scored` in the output's order, a batch per date.
fn output_batches(scored: &mut [Scored<'_>]) -> Result<Vec<RecordBatch>, JobError> {
    scored.par_sort_by(|a, b| output_order(a).cmp(&output_order(b)));
    let dates: Vec<&[Scored]> = scored.chunk_by(|a, b| a.date == b.date).collect();
    dates.into_par_iter().map(to_batch).collect()
}

/// A forecast's place in the job's output: its partition (`date`), then the declared sort
/// columns before `bracket_lo` (jobs/bracket_scores.toml); its ladder's rows follow in the
/// ladder's order, the open lower tail (no `bracket_lo`) first.
fn output_order<'a>(s: &Scored<'a>) -> (NaiveDate, &'a str, &'static str, &'static str, &'static str) {
    (s.date, s.station_code, s.target.as_str(), s.checkpoint, s.forecaster)
}

/// The stations with an `accuracy_pairs` row of days `from..=to`.
async fn stations_with_pairs(
    ctx: &SessionContext,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<HashSet<String>, JobError> {
    let mut b = Bindings::new();
    let sql = format!(
        "SELECT DISTINCT station_code FROM accuracy_pairs WHERE date >= {} AND date <= {}",
        b.date(from),
        b.date(to)
    );
    let mut out = HashSet::new();
    for batch in b.collect(ctx, &sql).await? {
        let codes = utf8_column(&batch, 0)?;
        out.extend(codes.as_string::<i32>().iter().flatten().map(str::to_string));
    }
    Ok(out)
}

/// The helper's schema.
pub fn schema() -> SchemaRef {
    let ts = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    Arc::new(Schema::new(vec![
        f("station_code", DataType::Utf8, false),
        f("date", DataType::Date32, false),
        f("target", DataType::Utf8, false),
        f("logic", DataType::Utf8, false),
        f("units", DataType::Utf8, false),
        f("checkpoint", DataType::Utf8, false),
        f("checkpoint_at", ts.clone(), false),
        f("forecaster", DataType::Utf8, false),
        f("method", DataType::Utf8, false),
        f("settled", DataType::Int32, false),
        f("settled_at", ts.clone(), false),
        f("bracket", DataType::Utf8, false),
        f("bracket_lo", DataType::Int32, true),
        f("bracket_hi", DataType::Int32, true),
        f("p", DataType::Float64, false),
        f("hit", DataType::Boolean, false),
        f("ignorance", DataType::Float64, true),
        f("rps", DataType::Float64, true),
        f("brier", DataType::Float64, true),
        f("pit", DataType::Float64, true),
        f("mean", DataType::Float64, true),
    ]))
}

fn to_batch<'a>(scored: &[Scored<'a>]) -> Result<RecordBatch, JobError> {
    // One row per forecast and bracket.
    let rows: Vec<(&Scored, usize)> = scored.iter().flat_map(|s| (0..s.p.len()).map(move |i| (s, i))).collect();
    let text = |f: fn(&Scored<'a>) -> &'a str| StringArray::from_iter_values(rows.iter().map(|(s, _)| f(s)));
    let first = |f: fn(&Scored) -> f64| Float64Array::from_iter(rows.iter().map(|(s, i)| (*i == 0).then(|| f(s))));
    let bracket = |s: &Scored, i: usize| s.ladder.brackets()[i];
    let cols: Vec<ArrayRef> = vec![
        Arc::new(text(|s| s.station_code)),
        Arc::new(Date32Array::from_iter_values(rows.iter().map(|(s, _)| date32(s.date)))),
        Arc::new(text(|s| s.target.as_str())),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|_| LOGIC.as_str()))),
        Arc::new(text(|s| s.units)),
        Arc::new(text(|s| s.checkpoint)),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(rows.iter().map(|(s, _)| s.checkpoint_at.timestamp_micros()))
                .with_timezone("UTC"),
        ),
        Arc::new(text(|s| s.forecaster)),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|_| METHOD))),
        Arc::new(Int32Array::from_iter_values(rows.iter().map(|(s, _)| s.settled))),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(rows.iter().map(|(s, _)| s.settled_at.timestamp_micros()))
                .with_timezone("UTC"),
        ),
        Arc::new(labels(rows.iter().map(|(s, i)| bracket(s, *i)))?),
        Arc::new(Int32Array::from_iter(rows.iter().map(|(s, i)| bracket(s, *i).lo))),
        Arc::new(Int32Array::from_iter(rows.iter().map(|(s, i)| bracket(s, *i).hi))),
        Arc::new(Float64Array::from_iter_values(rows.iter().map(|(s, i)| s.p[*i]))),
        Arc::new(BooleanArray::from_iter(rows.iter().map(|(s, i)| Some(bracket(s, *i).contains(s.settled))))),
        Arc::new(first(|s| s.ignorance)),
        Arc::new(first(|s| s.rps)),
        Arc::new(first(|s| s.brier)),
        Arc::new(first(|s| s.pit)),
        Arc::new(first(|s| s.mean)),
    ];
    Ok(RecordBatch::try_new(schema(), cols)?)
}

/// The brackets' labels, each written in place (a `String` per row was a measurable part
/// of building the rows).
fn labels(brackets: impl ExactSizeIterator<Item = Bracket>) -> Result<StringArray, JobError> {
    let mut out = StringBuilder::with_capacity(brackets.len(), brackets.len() * 5);
    for b in brackets {
        write!(out, "{b}").map_err(|e| JobError::Output { job: "bracket_scores".into(), reason: e.to_string() })?;
        out.append_value("");
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::row::{RowConverter, SortField};

    use super::*;

    /// The helper's batches are a date each, and each in the order the job's declaration
    /// sorts its files by (`encode` then writes them as they are): made from forecasts in
    /// no order, of two stations, both targets, every checkpoint and forecaster, ladders of
    /// different lengths.
    #[test]
    fn the_rows_come_a_date_per_batch_in_the_declared_order() {
        let specs = crate::jobs::embedded_specs().unwrap();
        let out = &crate::jobs::job_set::find(&specs, "bracket_scores").unwrap().output;
        assert_eq!(out.partition_by, ["date"]);
        let t = Utc.with_ymd_and_hms(2026, 5, 1, 12, 0, 0).unwrap();
        let day = NaiveDate::from_ymd_opt(2026, 5, 2).unwrap();
        let mut scored = Vec::new();
        for (i, station) in ["KNYC", "KMDW"].into_iter().enumerate() {
            for date in [day, day.succ_opt().unwrap()] {
                for target in [Quantity::Low, Quantity::High] {
                    for (_, _, checkpoint) in CHECKPOINTS.iter().rev() {
                        for forecaster in FORECASTERS {
                            let ladder = Ladder::around(60 + i as i32, 2, 4 + i as i32);
                            scored.push(Scored {
                                station_code: station,
                                date,
                                target,
                                units: "f",
                                checkpoint,
                                checkpoint_at: t,
                                forecaster,
                                settled: 61,
                                settled_at: t,
                                p: vec![1.0 / ladder.brackets().len() as f64; ladder.brackets().len()],
                                ladder,
                                ignorance: 0.0,
                                rps: 0.0,
                                brier: 0.0,
                                pit: 0.5,
                                mean: 61.0,
                            });
                        }
                    }
                }
            }
        }
        let forecasts = scored.len();
        let batches = output_batches(&mut scored).unwrap();
        assert_eq!(batches.len(), 2);
        let mut rows = 0;
        for batch in &batches {
            let dates =
                batch.column_by_name("date").unwrap().as_primitive::<datafusion::arrow::datatypes::Date32Type>();
            assert!(dates.values().iter().all(|d| *d == dates.value(0)), "one date per batch");
            let columns: Vec<ArrayRef> =
                out.sort_by.iter().map(|c| Arc::clone(batch.column_by_name(c).unwrap())).collect();
            let fields = columns.iter().map(|c| SortField::new(c.data_type().clone())).collect();
            let sorted = RowConverter::new(fields).unwrap().convert_columns(&columns).unwrap();
            for i in 1..sorted.num_rows() {
                assert!(sorted.row(i - 1) < sorted.row(i), "row {i} of {} out of the declared order", dates.value(0));
            }
            rows += batch.num_rows();
        }
        assert_eq!(rows, scored.iter().map(|s| s.p.len()).sum::<usize>());
        assert_eq!(forecasts, 2 * 2 * 2 * 6 * 4);
    }

    /// A bracket's label as its `Display` writes it, in place.
    #[test]
    fn labels_are_the_brackets_own() {
        let ladder: Ladder = "<=79,80-81,82,83-87,>=88".parse().unwrap();
        let labels = labels(ladder.brackets().iter().copied()).unwrap();
        let got: Vec<&str> = labels.iter().flatten().collect();
        assert_eq!(got, ["<=79", "80-81", "82", "83-87", ">=88"]);
    }

    /// Every same-day checkpoint of every catalog station, through a year with both clock
    /// changes, is within the read's bound of the earliest reading its replay can feed, so
    /// a reading the read leaves out could never have been fed; and one-minute rows, known
    /// a day after their minute, are left out.
    #[test]
    fn the_same_day_read_leaves_out_only_readings_no_checkpoint_could_know() {
        let bound = same_day_known_within();
        assert!(bound < crate::lake::availability::ONEMIN_DELAY, "{bound}");
        let first = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
        let mut checked = 0;
        for station in Catalog::global().all() {
            for date in first.iter_days().take(366) {
                let window = crate::time::day_window(station.timezone, LOGIC.clock(), date);
                for &(days, hour, label) in CHECKPOINTS.iter().filter(|c| c.0 == 0) {
                    let t = checkpoint_at(station, date, days, hour).unwrap();
                    assert!(t >= window.start, "{} {date} {label}", station.code);
                    let reach = t - (window.start - REPLAY_BEFORE);
                    assert!(
                        reach <= bound,
                        "{} {date} {label}: {reach} after the replay's first reading",
                        station.code
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 366 * 4, "{checked}");
    }
}
