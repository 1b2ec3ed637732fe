//! The three baselines a bracket distribution must beat to be worth anything, made from the
//! same inputs at the same moment (issue 32, "Verification"):
//!
//! - **climatology**: the station's settled values of the same season in past years,
//!   nothing about the day's weather;
//! - **the best single source's Gaussian**: what a careful trader does by hand: the source
//!   with the lowest recent mean absolute error, centred on its forecast plus its recent
//!   mean error, spread by its recent errors' standard deviation;
//! - **the equal-weight fraction of sources**: each source's forecast, rounded, counts the
//!   same (the raw "member fraction" read off a multi-model list).
//!
//! Each gets the method's small uniform share over the support, so a score compares
//! judgement rather than whether a value was ruled out.

use chrono::NaiveDate;

use super::distribution::{phi, Distribution};
use super::history::History;
use super::method::season_gap;
use super::BracketsError;

/// Verified days the recent baselines read.
pub const RECENT: usize = 30;
/// Share spread uniformly over each baseline's support (as the method's).
pub const FLOOR_SHARE: f64 = 0.005;
/// Values either side of the centre with a probability.
pub const SPAN: i32 = 40;

/// `p` (weights over values from `lo`) with `FLOOR_SHARE` spread over its support.
fn floored(lo: i32, p: Vec<f64>) -> Result<Distribution, BracketsError> {
    Ok(Distribution::new(lo, p)?.with_uniform_share(FLOOR_SHARE))
}

/// The settled values of `settled` within `window` days of `day`'s day of the year (any
/// earlier year, or earlier this year), as a Gaussian kernel density rounded to whole
/// values. `None` with fewer than ten such days.
pub fn climatology(settled: &[(NaiveDate, f64)], day: NaiveDate, window: u32) -> Option<Distribution> {
    let near = |d: NaiveDate| season_gap(d, day) <= f64::from(window);
    let values: Vec<f64> = settled.iter().filter(|(d, _)| *d < day && near(*d)).map(|(_, v)| *v).collect();
    if values.len() < 10 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let h = (1.06 * sd * n.powf(-0.2)).max(0.5);
    let lo = mean.round() as i32 - SPAN;
    let cdf = EdgeCdf::new(&values, h, lo - 1..=lo + 2 * SPAN);
    // Each value's upper edge is the next one's lower edge: every edge's CDF once.
    let mut below: Vec<f64> = values.iter().map(|&v| cdf.at(lo - 1, v)).collect();
    let p: Vec<f64> = (lo..=lo + 2 * SPAN)
        .map(|k| {
            let mut mass = 0.0;
            for (&v, lower) in values.iter().zip(below.iter_mut()) {
                let upper = cdf.at(k, v);
                mass += upper - *lower;
                *lower = upper;
            }
            mass
        })
        .collect();
    floored(lo, p).ok()
}

/// The CDF of a kernel of width `h` around a value v at the upper edges k + ½ of whole
/// values k. For a whole v (settled values in °F are) k + ½ − v is a whole offset and a
/// half, exact in `f64`, so its CDF comes from a table of the offsets made once instead of
/// one `erfc` per value and edge: the same numbers, a few dozen calls instead of thousands.
struct EdgeCdf {
    h: f64,
    /// The offset of the table's first entry.
    first: i32,
    table: Vec<f64>,
}

impl EdgeCdf {
    /// For `values` at the edges of `ks`.
    fn new(values: &[f64], h: f64, ks: std::ops::RangeInclusive<i32>) -> Self {
        let whole = values.iter().filter_map(|&v| whole(v));
        let (low, high) = whole.fold((i32::MAX, i32::MIN), |(a, b), v| (a.min(v), b.max(v)));
        let first = ks.start() - high;
        let table = match low <= high {
            true => (first..=ks.end() - low).map(|j| phi((f64::from(j) + 0.5) / h)).collect(),
            false => Vec::new(),
        };
        EdgeCdf { h, first, table }
    }

    /// The CDF of the kernel around `v` at k + ½.
    fn at(&self, k: i32, v: f64) -> f64 {
        match whole(v) {
            Some(w) => self.table[(k - w - self.first) as usize],
            None => phi((f64::from(k) + 0.5 - v) / self.h),
        }
    }
}

/// `v` as a whole number, when it is one (and small enough that offsets stay exact).
fn whole(v: f64) -> Option<i32> {
    (v.fract() == 0.0 && v.abs() <= 1e6).then_some(v as i32)
}

/// The best single source's Gaussian (module docs) from the verified `history` of the
/// `forecasts`' sources (a column each, in their order): `None` when none has [`RECENT`]
/// verified days.
pub fn best_single_gaussian(history: &History, forecasts: &[f64]) -> Option<Distribution> {
    let mut best: Option<(f64, f64, f64, f64)> = None; // (mae, forecast, bias, sd)
    for (column, f) in forecasts.iter().enumerate().take(history.columns()) {
        let errors: Vec<f64> = history.latest_of(column).map(|(v, settled)| settled - v).take(RECENT).collect();
        if errors.len() < RECENT {
            continue;
        }
        let n = errors.len() as f64;
        let mae = errors.iter().map(|e| e.abs()).sum::<f64>() / n;
        let bias = errors.iter().sum::<f64>() / n;
        let sd = (errors.iter().map(|e| (e - bias).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        if best.is_none_or(|b| mae < b.0) {
            best = Some((mae, *f, bias, sd));
        }
    }
    let (_, f, bias, sd) = best?;
    let g = Distribution::normal(f + bias, sd.max(0.5), SPAN).ok()?;
    floored(g.lo(), g.values().map(|(_, p)| p).collect()).ok()
}

/// The equal-weight fraction of sources (module docs): `None` without a forecast.
pub fn equal_weight_fraction(forecasts: &[f64]) -> Option<Distribution> {
    let values: Vec<i32> = forecasts.iter().map(|f| f.round() as i32).collect();
    let mid = (values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len().max(1) as f64).round() as i32;
    if values.is_empty() {
        return None;
    }
    let lo = mid - SPAN;
    let p: Vec<f64> = (lo..=lo + 2 * SPAN).map(|k| values.iter().filter(|&&v| v == k).count() as f64).collect();
    // A source far outside ±SPAN of the mean counts nowhere; all of them so: uniform.
    if p.iter().all(|&w| w == 0.0) {
        return floored(lo, vec![1.0; p.len()]).ok();
    }
    floored(lo, p).ok()
}

#[cfg(test)]
mod tests {
    use chrono::{Datelike, Duration};

    use super::*;
    use crate::brackets::Verified;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn climatology_reads_the_same_season_of_earlier_years_only() {
        // Summers at 90, winters at 40, over two years; asked for a July day.
        let start = d("2024-01-01");
        let settled: Vec<(NaiveDate, f64)> = (0..730)
            .map(|i| {
                let day = start + Duration::days(i);
                (day, if (5..=8).contains(&day.month()) { 90.0 } else { 40.0 })
            })
            .collect();
        let c = climatology(&settled, d("2025-07-10"), 15).unwrap();
        assert!((c.mean() - 90.0).abs() < 1.0, "{}", c.mean());
        assert!(c.p(40) < 0.001);
        // Nothing after the day itself: asked in early 2024, only January 2024 is there.
        assert!(climatology(&settled, d("2024-01-05"), 15).is_none());
    }

    /// The table gives, to the bit, the CDF computed per value and edge (whole values from
    /// it, others computed), so climatology's odds do not move by taking it.
    #[test]
    fn the_edge_table_is_the_cdf_computed_per_value() {
        let values = [71.0, 68.0, 75.0, 70.5, -3.0, 71.0, 21.7];
        let h = 1.37;
        let cdf = EdgeCdf::new(&values, h, 19..=120);
        for &v in &values {
            assert_eq!(cdf.at(19, v).to_bits(), phi((20.0 - 0.5 - v) / h).to_bits(), "{v}");
            for k in 20..=120 {
                assert_eq!(cdf.at(k, v).to_bits(), phi((f64::from(k) + 0.5 - v) / h).to_bits(), "{v} {k}");
            }
        }
        assert!(cdf.table.len() < 200, "{}", cdf.table.len());
    }

    #[test]
    fn the_best_source_is_the_recently_most_accurate_one() {
        let start = d("2026-01-01");
        let history: Vec<Verified> = (0..40)
            .map(|i| Verified {
                date: start + Duration::days(i),
                forecasts: vec![("A".into(), 70.0 + (i % 3) as f64), ("B".into(), 62.0)],
                settled: 72.0,
                running: None,
            })
            .collect();
        let g = best_single_gaussian(&History::of(&history, &["A", "B"]), &[71.0, 60.0]).unwrap();
        // A's recent errors are 2, 1, 0: bias about 1, so centred near 72.
        assert!((g.mean() - 72.0).abs() < 0.3, "{}", g.mean());
        assert!(best_single_gaussian(&History::of(&history[..10], &["A"]), &[71.0]).is_none());
    }

    #[test]
    fn the_fraction_counts_each_source_once() {
        let e = equal_weight_fraction(&[70.2, 69.6, 74.0]).unwrap();
        assert!((e.p(70) - (2.0 / 3.0 * (1.0 - FLOOR_SHARE) + FLOOR_SHARE / 81.0)).abs() < 1e-9);
        assert!(e.p(72) > 0.0 && e.p(72) < 0.001);
        assert!(equal_weight_fraction(&[]).is_none());
    }
}
