//! The mass of each whole value under a weighted sum of Gaussian kernels: the shape of every
//! distribution the method makes, before the day ([`super::method`]) and within it
//! ([`super::intraday`]).
//!
//! Summed one kernel at a time it costs an `erfc` per kernel and value, which made the
//! same-day step the largest single cost of `bracket_scores` (thousands of past days, each
//! at six checkpoints). So the kernels' centres are binned to a fine grid and the kernel's
//! CDF is tabulated once on that grid: a few thousand `erfc` calls per distribution instead.
//! The grid step is at most 1/20 of a degree and 1/13.5 of the bandwidth, so no centre moves
//! by more than 1/27 of a kernel's width and the masses by a few thousandths at most
//! (`the_binned_kernel_sum_matches_the_exact_one`).

use super::distribution::phi;

/// Bins above which the kernels are summed one by one instead (a wild outlier).
const MAX_BINS: usize = 40_000;

/// Where the mass below the first value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Left out (the caller normalises): a forecast's support is wide enough that it is
    /// negligible.
    Dropped,
    /// Onto the first value: the same-day step's first value is the running extreme, which
    /// the settled value cannot pass.
    IntoFirst,
}

impl Tail {
    /// The CDF at value `i`'s lower edge as the sum counts it: 0 under the first value when
    /// its tail is kept, so that value takes everything below it.
    fn lower(self, i: usize, cdf: impl FnOnce() -> f64) -> f64 {
        if i == 0 && self == Tail::IntoFirst {
            0.0
        } else {
            cdf()
        }
    }
}

/// The mass of each whole value `lo`..`lo + len` (each value's interval is [v − ½, v + ½))
/// under the Gaussian kernels of bandwidth `h` centred on `center` + each residual, weighed
/// by its weight (`(weight, residual)` pairs); the mass above the last value is left out,
/// below the first as `tail` says.
pub fn masses(residuals: &[(f64, f64)], center: f64, h: f64, lo: i32, len: usize, tail: Tail) -> Vec<f64> {
    let mut p = vec![0.0; len];
    if len == 0 {
        return p;
    }
    let steps = (13.5 / h).ceil().max(20.0);
    let (rmin, rmax) = residuals.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), r| (a.min(r.1), b.max(r.1)));
    let span = (rmax - rmin) * steps;
    if residuals.is_empty() || !span.is_finite() || !steps.is_finite() || span >= MAX_BINS as f64 {
        for &(w, r) in residuals {
            let edge = |i: usize| phi((f64::from(lo) + i as f64 - 0.5 - center - r) / h);
            for (i, slot) in p.iter_mut().enumerate() {
                *slot += w * (edge(i + 1) - tail.lower(i, || edge(i)));
            }
        }
        return p;
    }
    let (steps, bin) = (steps as usize, 1.0 / steps);
    let bins_n = span.round() as usize + 1;
    let mut bins = vec![0.0; bins_n];
    for &(w, r) in residuals {
        bins[((r - rmin) / bin).round() as usize] += w;
    }
    // Value i's lower edge minus bin b's centre is base + bin * (i * steps - b): one table
    // of the CDF over every such offset, indexed by i * steps - b + (bins_n - 1).
    let base = f64::from(lo) - 0.5 - center - rmin;
    let table: Vec<f64> =
        (0..len * steps + bins_n).map(|j| phi((base + bin * (j as f64 - (bins_n - 1) as f64)) / h)).collect();
    for (b, &w) in bins.iter().enumerate().filter(|(_, w)| **w > 0.0) {
        let first = bins_n - 1 - b;
        for (i, slot) in p.iter_mut().enumerate() {
            let at = first + i * steps;
            *slot += w * (table[at + steps] - tail.lower(i, || table[at]));
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// One kernel at a time, as the method summed them before v7.
    fn exact(residuals: &[(f64, f64)], center: f64, h: f64, lo: i32, len: usize, tail: Tail) -> Vec<f64> {
        (0..len)
            .map(|i| {
                residuals
                    .iter()
                    .map(|&(w, r)| {
                        let edge = |k: usize| phi((f64::from(lo) + k as f64 - 0.5 - center - r) / h);
                        let below = if i == 0 && tail == Tail::IntoFirst { 0.0 } else { edge(i) };
                        w * (edge(i + 1) - below)
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn the_binned_kernel_sum_matches_the_exact_one() {
        let mut rng = SmallRng::seed_from_u64(3);
        for (h, tail, n) in [(0.8, Tail::Dropped, 500), (0.3, Tail::IntoFirst, 400), (1.5, Tail::IntoFirst, 7)] {
            let residuals: Vec<(f64, f64)> =
                (0..n).map(|_| (rng.random::<f64>(), 16.0 * rng.random::<f64>() - 8.0)).collect();
            let binned = masses(&residuals, 70.3, h, 66, 41, tail);
            let exact = exact(&residuals, 70.3, h, 66, 41, tail);
            let total: f64 = exact.iter().sum();
            for (b, e) in binned.iter().zip(&exact) {
                assert!((b - e).abs() / total < 2e-3, "h {h}: {b} vs {e}");
            }
            // Kept, the lower tail is there; dropped, it is not: the residuals reach below 66.
            let weight: f64 = residuals.iter().map(|r| r.0).sum();
            let kept = binned.iter().sum::<f64>() / weight;
            match tail {
                Tail::IntoFirst => assert!(kept > 0.999, "h {h}: {kept}"),
                Tail::Dropped => assert!(kept < 0.99, "h {h}: {kept}"),
            }
        }
        // An outlier far away sends the sum down the exact path, the others' masses unchanged.
        let residuals: Vec<(f64, f64)> = (0..300).map(|_| (rng.random::<f64>(), 4.0 * rng.random::<f64>())).collect();
        let mut wild = residuals.clone();
        wild.push((0.0, 5000.0));
        let binned = masses(&residuals, 70.3, 0.8, 66, 41, Tail::Dropped);
        let one_by_one = masses(&wild, 70.3, 0.8, 66, 41, Tail::Dropped);
        assert_eq!(one_by_one, exact(&wild, 70.3, 0.8, 66, 41, Tail::Dropped));
        let total: f64 = one_by_one.iter().sum();
        for (b, e) in binned.iter().zip(&one_by_one) {
            assert!((b - e).abs() / total < 2e-3, "{b} vs {e}");
        }
    }

    #[test]
    fn a_kernel_below_the_first_value_lands_on_it_when_kept() {
        // Centred 3 below the first value: nearly all of it is below.
        let kept = masses(&[(2.0, -3.0)], 10.0, 0.5, 10, 4, Tail::IntoFirst);
        assert!((kept[0] - 2.0).abs() < 1e-6 && kept[1..].iter().all(|p| *p < 1e-6), "{kept:?}");
        let dropped = masses(&[(2.0, -3.0)], 10.0, 0.5, 10, 4, Tail::Dropped);
        assert!(dropped.iter().all(|p| *p < 1e-6), "{dropped:?}");
        assert!(masses(&[], 10.0, 0.5, 10, 4, Tail::IntoFirst).iter().all(|p| *p == 0.0));
        assert!(masses(&[(1.0, 0.0)], 10.0, 0.5, 10, 0, Tail::IntoFirst).is_empty());
    }
}
