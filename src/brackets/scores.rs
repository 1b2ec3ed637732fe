//! Probabilities judged like forecasts: proper scores of one distribution against the
//! settled value, and the reliability of many. Lower is better for every score.

use super::distribution::Distribution;
use super::ladder::Ladder;

/// Probability given to the settled value below which the ignorance is capped: a value a
/// distribution ruled out costs as much as one it gave a millionth.
pub const MIN_P: f64 = 1e-6;

/// Ignorance (logarithmic score, bits): −log2 of the probability given to what settled.
pub fn ignorance(d: &Distribution, settled: i32) -> f64 {
    -d.p(settled).max(MIN_P).log2()
}

/// Ranked probability score over whole values: Σ (P(X ≤ v) − 1{settled ≤ v})², over every
/// value where either side changes (the support and the settled value).
pub fn rps(d: &Distribution, settled: i32) -> f64 {
    let (lo, hi) = (d.lo().min(settled), d.hi().max(settled));
    let mut acc = 0.0;
    let mut cdf = 0.0;
    for v in lo..=hi {
        cdf += d.p(v);
        let hit = if settled <= v { 1.0 } else { 0.0 };
        acc += (cdf.min(1.0) - hit).powi(2);
    }
    acc
}

/// Brier score of a ladder: Σ over brackets (p − 1{settled in it})².
pub fn brier(d: &Distribution, ladder: &Ladder, settled: i32) -> f64 {
    d.brackets(ladder)
        .iter()
        .zip(ladder.brackets())
        .map(|(p, b)| (p - if b.contains(settled) { 1.0 } else { 0.0 }).powi(2))
        .sum()
}

/// Probability integral transform of the settled value, mid-point form for whole values:
/// P(X < settled) + ½ P(X = settled). Uniform on [0, 1] when the distributions are
/// calibrated.
pub fn pit(d: &Distribution, settled: i32) -> f64 {
    d.cdf(settled - 1) + 0.5 * d.p(settled)
}

/// Forecast probabilities of binary events (a bracket settling in or not) in ten bins of
/// width 0.1: in a calibrated forecast each bin's events happen as often as it says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reliability {
    /// Per bin: forecasts, their summed probability, events that happened.
    bins: [(u64, f64, u64); 10],
}

/// One bin of a [`Reliability`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Bin {
    pub lo: f64,
    pub hi: f64,
    pub n: u64,
    /// Mean forecast probability.
    pub forecast: f64,
    /// Observed frequency.
    pub observed: f64,
}

impl Reliability {
    pub fn add(&mut self, p: f64, happened: bool) {
        let i = ((p * 10.0).floor().max(0.0) as usize).min(9);
        let b = &mut self.bins[i];
        b.0 += 1;
        b.1 += p;
        b.2 += u64::from(happened);
    }

    /// Every bracket of `ladder` as an event, against `settled`.
    pub fn add_ladder(&mut self, d: &Distribution, ladder: &Ladder, settled: i32) {
        for (p, b) in d.brackets(ladder).into_iter().zip(ladder.brackets()) {
            self.add(p, b.contains(settled));
        }
    }

    pub fn merge(&mut self, other: &Reliability) {
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            *a = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
        }
    }

    /// The bins holding at least one forecast.
    pub fn bins(&self) -> Vec<Bin> {
        self.bins
            .iter()
            .enumerate()
            .filter(|(_, b)| b.0 > 0)
            .map(|(i, &(n, sum, hits))| Bin {
                lo: i as f64 / 10.0,
                hi: (i + 1) as f64 / 10.0,
                n,
                forecast: sum / n as f64,
                observed: hits as f64 / n as f64,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> Distribution {
        // P(70) = 0.25, P(71) = 0.5, P(72) = 0.25.
        Distribution::new(70, vec![1.0, 2.0, 1.0]).unwrap()
    }

    #[test]
    fn scores_of_a_small_distribution_by_hand() {
        let d = three();
        assert!((ignorance(&d, 71) - 1.0).abs() < 1e-12);
        assert!((ignorance(&d, 72) - 2.0).abs() < 1e-12);
        assert!((ignorance(&d, 90) - 19.93).abs() < 0.01, "capped at a millionth");
        // RPS at 71: (0.25 - 0)² + (0.75 - 1)² + (1 - 1)² = 0.125.
        assert!((rps(&d, 71) - 0.125).abs() < 1e-12);
        // Settled outside the support: every value up to it counts fully.
        assert!((rps(&d, 69) - (0.75f64.powi(2) + 0.25f64.powi(2) + 1.0)).abs() < 1e-12);
        let ladder: Ladder = "<=70,71-72,>=73".parse().unwrap();
        // p = (0.25, 0.75, 0) against (0, 1, 0).
        assert!((brier(&d, &ladder, 72) - (0.0625 + 0.0625)).abs() < 1e-12);
        assert!((pit(&d, 71) - 0.5).abs() < 1e-12);
        assert!((pit(&d, 70) - 0.125).abs() < 1e-12);
    }

    #[test]
    fn reliability_bins_count_what_happened() {
        let mut r = Reliability::default();
        for i in 0..10 {
            r.add(0.15, i < 2);
        }
        r.add(1.0, true);
        let bins = r.bins();
        assert_eq!(bins.len(), 2);
        assert_eq!((bins[0].n, bins[0].observed), (10, 0.2));
        assert!((bins[0].forecast - 0.15).abs() < 1e-12);
        assert_eq!((bins[1].lo, bins[1].n, bins[1].observed), (0.9, 1, 1.0));
        let mut all = Reliability::default();
        all.merge(&r);
        all.merge(&r);
        assert_eq!(all.bins()[0].n, 20);
    }
}
