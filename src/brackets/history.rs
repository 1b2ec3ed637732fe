//! The verified past days a distribution is made from, as a table: a row per past day (its
//! date, settled value and running extreme), a column per asked source, in the order of the
//! asked forecasts. The method reads a day's forecast of a source by its column; a history
//! kept as a vector of named forecasts per day cost an allocation per day and a shared name
//! per day and source at every checkpoint `bracket_scores` asks at, which was a quarter of
//! its CPU over a year of days (benches/README.md, "Brackets' cost bar at the issue's
//! scale").
//!
//! Only usable days are held: a finite settled value, at least one forecast, every forecast
//! finite. Rows are in date order.

use std::sync::Arc;

use chrono::NaiveDate;

/// One verified past day in row form: the forecasts each source made for it (at the same
/// lead as the asked one) and the settled value. What callers holding days by source name
/// give [`History::of`].
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    pub date: NaiveDate,
    pub forecasts: Vec<(Arc<str>, f64)>,
    pub settled: f64,
    /// The day's running extreme (settlement unit, whole) at the hour of the asked day the
    /// odds are asked at, when they are asked within the day (`brackets::intraday`).
    pub running: Option<f64>,
}

/// A past day's row: everything but its forecasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Day {
    pub date: NaiveDate,
    pub settled: f64,
    /// As [`Verified::running`].
    pub running: Option<f64>,
}

/// The verified history of the asked sources (module docs).
#[derive(Debug, Clone, Default)]
pub struct History {
    columns: usize,
    days: Vec<Day>,
    /// Where each day's forecasts start in `cells`: the builder's slots stay where they
    /// are (moving every row after a gap cost as much as building them).
    at: Vec<usize>,
    /// `columns` per slot; NaN where the source did not forecast the day.
    cells: Vec<f64>,
}

impl History {
    /// The days of `days` with the forecasts of `sources` (a day's first forecast named
    /// as each), in date order; days without any forecast, or not usable, are left out (a
    /// day with forecasts of other sources only is held, without any).
    pub fn of(days: &[Verified], sources: &[impl AsRef<str>]) -> Self {
        let mut sorted: Vec<&Verified> = days.iter().collect();
        sorted.sort_by_key(|d| d.date);
        let mut builder = Builder::new(sources.len(), sorted.len());
        for (slot, day) in sorted.iter().enumerate() {
            builder.settle(slot, day.date, day.settled);
            builder.run(slot, day.running);
            for (column, source) in sources.iter().enumerate() {
                if let Some((_, f)) = day.forecasts.iter().find(|(n, _)| **n == *source.as_ref()) {
                    builder.forecast(slot, column, *f);
                }
            }
            if !day.forecasts.is_empty() {
                builder.forecast_elsewhere(slot);
            }
            if day.forecasts.iter().any(|(_, f)| !f.is_finite()) {
                builder.spoil(slot);
            }
        }
        builder.finish()
    }

    /// Sources (columns).
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Past days held.
    pub fn len(&self) -> usize {
        self.days.len()
    }

    pub fn is_empty(&self) -> bool {
        self.days.is_empty()
    }

    /// The days, in date order.
    pub fn days(&self) -> &[Day] {
        &self.days
    }

    /// Day `i`'s forecast of each source (NaN: none).
    pub fn row(&self, i: usize) -> &[f64] {
        &self.cells[self.at[i]..self.at[i] + self.columns]
    }

    /// Each day with its forecasts.
    pub fn rows(&self) -> impl DoubleEndedIterator<Item = (&Day, &[f64])> + Clone {
        self.days.iter().zip(self.at.iter().map(|&at| &self.cells[at..at + self.columns]))
    }

    /// Source `column`'s forecasts, latest day first, with the day's settled value.
    pub fn latest_of(&self, column: usize) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.rows().rev().filter_map(move |(d, row)| Some((row[column], d.settled)).filter(|(f, _)| !f.is_nan()))
    }

    /// The days before `date`.
    pub fn before(&self, date: NaiveDate) -> usize {
        self.days.partition_point(|d| d.date < date)
    }

    /// Each day's running extreme at the asked hour, by its date (asked in date order).
    pub fn set_running(&mut self, mut running: impl FnMut(NaiveDate) -> Option<f64>) {
        for day in &mut self.days {
            day.running = running(day.date);
        }
    }

    /// Whether `other` holds the same days, settled values and forecasts (not the running
    /// extremes, which only the same-day step reads): the same fit.
    pub fn same_verified(&self, other: &History) -> bool {
        let same_days = self.days.len() == other.days.len()
            && self.days.iter().zip(&other.days).all(|(a, b)| a.date == b.date && a.settled == b.settled);
        let same = |(a, b): (&f64, &f64)| a.to_bits() == b.to_bits();
        let same_rows = || self.rows().zip(other.rows()).all(|((_, a), (_, b))| a.iter().zip(b).all(same));
        self.columns == other.columns && same_days && same_rows()
    }
}

/// Builds a [`History`] over day slots (a slot per candidate day, in date order): a slot
/// becomes a row when it is settled, has a forecast and nothing spoils it.
#[derive(Debug)]
pub struct Builder {
    columns: usize,
    days: Vec<Option<Day>>,
    /// Per slot: whether it has a forecast, and whether a non-finite value spoils it.
    forecast: Vec<bool>,
    spoiled: Vec<bool>,
    cells: Vec<f64>,
}

impl Builder {
    /// `slots` empty slots of `columns` sources.
    pub fn new(columns: usize, slots: usize) -> Self {
        Builder {
            columns,
            days: vec![None; slots],
            forecast: vec![false; slots],
            spoiled: vec![false; slots],
            cells: vec![f64::NAN; slots * columns],
        }
    }

    /// Whether `slot` has its settled value.
    pub fn is_settled(&self, slot: usize) -> bool {
        self.days[slot].is_some()
    }

    /// `slot` is `date`, settled on `settled` (a later call for the same slot changes
    /// nothing: the first settled value stands).
    pub fn settle(&mut self, slot: usize, date: NaiveDate, settled: f64) {
        if self.days[slot].is_none() {
            self.days[slot] = Some(Day { date, settled, running: None });
            self.spoiled[slot] |= !settled.is_finite();
        }
    }

    /// `slot`'s running extreme (a slot not settled keeps none).
    pub fn run(&mut self, slot: usize, running: Option<f64>) {
        if let Some(day) = self.days[slot].as_mut() {
            day.running = running;
        }
    }

    /// Source `column`'s forecast of `slot` (the first given stands).
    pub fn forecast(&mut self, slot: usize, column: usize, value: f64) {
        let cell = &mut self.cells[slot * self.columns + column];
        if cell.is_nan() {
            *cell = value;
        }
        self.forecast[slot] = true;
        if !value.is_finite() {
            self.spoiled[slot] = true;
        }
    }

    /// `slot` has a forecast, of no asked source (it still counts toward the seasonal
    /// normal, as a day of settled history).
    pub fn forecast_elsewhere(&mut self, slot: usize) {
        self.forecast[slot] = true;
    }

    /// `slot` is not usable.
    pub fn spoil(&mut self, slot: usize) {
        self.spoiled[slot] = true;
    }

    /// The usable slots as rows, in slot order.
    pub fn finish(self) -> History {
        let Builder { columns, days, forecast, spoiled, cells } = self;
        let usable = |(slot, day): (usize, Option<Day>)| {
            day.filter(|_| forecast[slot] && !spoiled[slot]).map(|d| (d, slot * columns))
        };
        let (days, at) = days.into_iter().enumerate().filter_map(usable).unzip();
        History { columns, days, at, cells }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 5, d).unwrap()
    }

    fn verified(d: u32, forecasts: &[(&str, f64)], settled: f64) -> Verified {
        let forecasts = forecasts.iter().map(|(n, v)| (Arc::from(*n), *v)).collect();
        Verified { date: day(d), forecasts, settled, running: None }
    }

    #[test]
    fn a_history_holds_the_usable_days_by_date_a_column_per_source() {
        let days = [
            verified(3, &[("B", 71.0), ("A", 70.0), ("A", 99.0)], 72.0),
            verified(1, &[("A", 60.0)], 61.0),
            // None of the asked sources: held, without forecasts; none at all: left out.
            verified(2, &[("C", 50.0)], 51.0),
            verified(6, &[], 51.0),
            // A non-finite forecast or settled value spoils the day.
            verified(4, &[("A", 40.0), ("C", f64::NAN)], 41.0),
            verified(5, &[("A", 40.0)], f64::INFINITY),
        ];
        let h = History::of(&days, &["A", "B"]);
        assert_eq!(h.days().iter().map(|d| d.date).collect::<Vec<_>>(), [day(1), day(2), day(3)]);
        assert_eq!(h.row(2), [70.0, 71.0]);
        assert!(h.row(0)[1].is_nan() && h.row(0)[0] == 60.0);
        assert!(h.row(1).iter().all(|f| f.is_nan()));
        assert_eq!(h.latest_of(0).collect::<Vec<_>>(), [(70.0, 72.0), (60.0, 61.0)]);
        assert_eq!(h.latest_of(1).collect::<Vec<_>>(), [(71.0, 72.0)]);
        assert_eq!(h.before(day(3)), 2);
        assert!(h.same_verified(&History::of(&days, &["A", "B"])));
        assert!(!h.same_verified(&History::of(&days[..2], &["A", "B"])));
        assert!(!h.same_verified(&History::of(&days, &["B", "A"])));
        // Without sources, the usable days with any forecast, none in a column.
        let none = History::of(&days, &[] as &[&str]);
        assert_eq!((none.len(), none.columns(), none.row(2)), (3, 0, &[][..]));
    }
}
