//! A probability for every whole settlement value: what a bracket's odds, the mean and the
//! quantiles are read from. Whole values because settlements are whole degrees (the CLI's
//! °F, a civil-day observation rule's °C); a value outside the support has probability 0.

use super::ladder::Ladder;
use super::BracketsError;

/// P(value = `lo` + i) = `p[i]`, summing to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    lo: i32,
    p: Vec<f64>,
}

impl Distribution {
    /// Normalises `weights` (non-negative, not all zero) over the values from `lo` on.
    pub fn new(lo: i32, weights: Vec<f64>) -> Result<Self, BracketsError> {
        if weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
            return Err(BracketsError::Invalid("a probability is negative or not finite".into()));
        }
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err(BracketsError::Invalid("no value has any probability".into()));
        }
        Ok(Distribution { lo, p: weights.into_iter().map(|w| w / total).collect() })
    }

    /// The normal distribution N(`mean`, `sd`²) rounded to whole values (each value takes
    /// the mass of [v − ½, v + ½)), over `mean` ± `span`: the Gaussian baselines.
    pub fn normal(mean: f64, sd: f64, span: i32) -> Result<Self, BracketsError> {
        let sd = sd.max(1e-6);
        let lo = mean.round() as i32 - span;
        let cdf: Vec<f64> = (0..=2 * span + 1).map(|i| phi((f64::from(lo + i) - 0.5 - mean) / sd)).collect();
        Self::new(lo, cdf.windows(2).map(|w| w[1] - w[0]).collect())
    }

    /// This distribution with `share` of its mass spread evenly over its support: no value
    /// of the support keeps a zero (a score must not meet an impossible value it could
    /// have allowed for).
    pub fn with_uniform_share(&self, share: f64) -> Self {
        let share = share.clamp(0.0, 1.0);
        let even = share / self.p.len() as f64;
        Distribution { lo: self.lo, p: self.p.iter().map(|p| (1.0 - share) * p + even).collect() }
    }

    /// The lowest value with a probability (0 or more).
    pub fn lo(&self) -> i32 {
        self.lo
    }

    /// The highest value of the support.
    pub fn hi(&self) -> i32 {
        self.lo + self.p.len() as i32 - 1
    }

    /// Every value of the support with its probability, lowest first.
    pub fn values(&self) -> impl Iterator<Item = (i32, f64)> + '_ {
        self.p.iter().enumerate().map(move |(i, &p)| (self.lo + i as i32, p))
    }

    /// P(value = `v`).
    pub fn p(&self, v: i32) -> f64 {
        usize::try_from(v - self.lo).ok().and_then(|i| self.p.get(i)).copied().unwrap_or(0.0)
    }

    /// P(value ≤ `v`).
    pub fn cdf(&self, v: i32) -> f64 {
        let n = (i64::from(v) - i64::from(self.lo) + 1).clamp(0, self.p.len() as i64) as usize;
        self.p[..n].iter().sum::<f64>().min(1.0)
    }

    pub fn mean(&self) -> f64 {
        self.values().map(|(v, p)| f64::from(v) * p).sum()
    }

    /// The smallest value whose cumulative probability reaches `q` (0 < q ≤ 1).
    pub fn quantile(&self, q: f64) -> i32 {
        let mut acc = 0.0;
        for (v, p) in self.values() {
            acc += p;
            // A hair below q: the running sum of many terms can fall short of an exact 1.
            if acc >= q - 1e-12 {
                return v;
            }
        }
        self.hi()
    }

    /// Given that the value is at least `floor` (the running high of the day so far):
    /// values below it get 0, the rest keep their odds relative to each other. A support
    /// wholly below the floor leaves all the probability on the floor.
    pub fn at_least(&self, floor: i32) -> Self {
        self.restricted(|v| v >= floor, floor)
    }

    /// Given that the value is at most `ceiling` (the running low of the day so far).
    pub fn at_most(&self, ceiling: i32) -> Self {
        self.restricted(|v| v <= ceiling, ceiling)
    }

    fn restricted(&self, keep: impl Fn(i32) -> bool, bound: i32) -> Self {
        let weights: Vec<(i32, f64)> = self.values().filter(|&(v, _)| keep(v)).collect();
        let total: f64 = weights.iter().map(|w| w.1).sum();
        if total <= 0.0 {
            return Distribution { lo: bound, p: vec![1.0] };
        }
        let lo = weights.first().map_or(bound, |w| w.0);
        Distribution { lo, p: weights.into_iter().map(|(_, p)| p / total).collect() }
    }

    /// `share` of this distribution and the rest of `other`, over both supports.
    pub fn mix(&self, other: &Distribution, share: f64) -> Self {
        let share = share.clamp(0.0, 1.0);
        let (lo, hi) = (self.lo.min(other.lo), self.hi().max(other.hi()));
        let p = (lo..=hi).map(|v| share * self.p(v) + (1.0 - share) * other.p(v)).collect();
        Distribution { lo, p }
    }

    /// The probability of each bracket of `ladder`, in its order (they sum to 1: a ladder
    /// covers every value).
    pub fn brackets(&self, ladder: &Ladder) -> Vec<f64> {
        ladder.brackets().iter().map(|b| self.values().filter(|&(v, _)| b.contains(v)).map(|(_, p)| p).sum()).collect()
    }
}

/// Below this the standard normal CDF is taken as 0: it is under 1.2e-19 there, far below
/// any mass that matters (every distribution gets a uniform share of each value some 10^14
/// times larger), and `erfc` of such arguments costs two `exp`s, which made the far lower
/// tail of every kernel table the larger part of a distribution's cost.
const PHI_ZERO_BELOW: f64 = -9.0;

/// At or below this argument `erfc` is under `erfc(6)` ≈ 2.2e-17 less than 2, which rounds
/// to exactly 2 in `f64`: the CDF is exactly 1 from `6√2` ≈ 8.49 up. `libm::erfc` reaches
/// that value through the same two `exp`s as anywhere below 28, so every kernel table's
/// upper tail cost as much as its middle; answered here, the values are the same bits.
const ERFC_TWO_AT_OR_BELOW: f64 = -6.0;

/// The standard normal CDF.
pub fn phi(x: f64) -> f64 {
    if x < PHI_ZERO_BELOW {
        return 0.0;
    }
    let a = -x / std::f64::consts::SQRT_2;
    if a <= ERFC_TWO_AT_OR_BELOW {
        return 1.0;
    }
    0.5 * libm::erfc(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rounded_normal_sums_to_one_and_keeps_its_centre() {
        let d = Distribution::normal(71.3, 2.0, 30).unwrap();
        let total: f64 = d.values().map(|(_, p)| p).sum();
        assert!((total - 1.0).abs() < 1e-12, "{total}");
        assert!((d.mean() - 71.3).abs() < 0.01, "{}", d.mean());
        assert_eq!(d.quantile(0.5), 71);
        // Within one sd of the mean: about 68 % of the mass, by whole degrees 69.3..73.3.
        let inner: f64 = (70..=72).map(|v| d.p(v)).sum();
        assert!((0.5..0.6).contains(&inner), "{inner}");
        assert_eq!(d.p(d.lo() - 1), 0.0);
    }

    #[test]
    fn the_cdf_answered_without_erfc_is_the_same_bits() {
        // Where `phi` answers 1 itself, `erfc` gives exactly 1 too: a fine grid from below
        // the cut, where the values still differ from 1, to far above it, and the cut's
        // neighbours to the last bit.
        let computed = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
        let cut = -ERFC_TWO_AT_OR_BELOW * std::f64::consts::SQRT_2;
        let grid = (0..400_000).map(|i| 7.0 + f64::from(i) * 1e-4);
        let near = (-50i64..50).map(|k| f64::from_bits((cut.to_bits() as i64 + k) as u64));
        for x in grid.chain(near) {
            assert_eq!(phi(x).to_bits(), computed(x).to_bits(), "{x}");
        }
        assert!(computed(7.5) < 1.0, "the grid starts where the CDF is not yet 1");
    }

    #[test]
    fn a_floor_removes_what_the_day_already_passed() {
        let d = Distribution::normal(70.0, 3.0, 20).unwrap();
        let f = d.at_least(72);
        assert_eq!(f.lo(), 72);
        assert_eq!(f.p(71), 0.0);
        assert!((f.values().map(|(_, p)| p).sum::<f64>() - 1.0).abs() < 1e-12);
        // The odds above the floor keep their ratio.
        assert!((f.p(73) / f.p(74) - d.p(73) / d.p(74)).abs() < 1e-9);
        // A floor above the whole support: the floor is certain.
        let far = d.at_least(200);
        assert_eq!((far.lo(), far.p(200)), (200, 1.0));
        let c = d.at_most(65);
        assert_eq!((c.hi(), c.p(66)), (65, 0.0));
    }

    #[test]
    fn a_mix_weighs_both_over_both_supports() {
        let a = Distribution::new(10, vec![1.0, 1.0]).unwrap();
        let b = Distribution::new(12, vec![1.0]).unwrap();
        let m = a.mix(&b, 0.75);
        assert_eq!((m.lo(), m.hi()), (10, 12));
        assert!((m.p(10) - 0.375).abs() < 1e-12 && (m.p(11) - 0.375).abs() < 1e-12 && (m.p(12) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn quantiles_and_cdf_read_the_same_mass() {
        let d = Distribution::new(10, vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!((d.quantile(0.1), d.quantile(0.11), d.quantile(0.6), d.quantile(1.0)), (10, 11, 12, 13));
        assert!((d.cdf(11) - 0.3).abs() < 1e-12 && d.cdf(9) == 0.0 && (d.cdf(99) - 1.0).abs() < 1e-12);
        assert!((d.mean() - 12.0).abs() < 1e-12);
        assert!(Distribution::new(0, vec![0.0, 0.0]).is_err());
        assert!(Distribution::new(0, vec![1.0, -0.5]).is_err());
    }
}
