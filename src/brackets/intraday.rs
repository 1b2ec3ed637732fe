//! Within the settlement day: how much higher the day still goes than its running high
//! (lower than its running low), learned from the station's past days at the same hour of
//! their day.
//!
//! The forecast's distribution cut at the running high keeps the forecast's whole spread
//! above the floor all day, so by mid-afternoon its odds are too wide (the demo's 0.8 bin
//! settled 8.8 points more often than said). What is left of the day depends on two things
//! the past days show directly: the hour (after the usual time of the high little is left)
//! and how far the forecast still is above the running value (a forecast already reached
//! leaves a degree or so; one 8° above, the afternoon's rise). So, for each past day d at
//! the same hour: its gap g_d = forecast centre − running extreme and its excess x_d =
//! settled − running extreme (signs flipped for the low). Today's excess is read from the
//! days whose gap was like today's:
//!
//! 1. each past day weighs by its season/age weight times a Gaussian in (g_d − g), of the
//!    width of the forecast's own past errors (days closer than one error are alike);
//! 2. the excess moves with the gap by the local slope of x on g (weighted least squares,
//!    held in [0, 1]: 1 early, when what is left is the forecast's rise; 0 late, when the
//!    running value is the day's): x_d + slope · (g − g_d);
//! 3. a kernel density of those excesses (the method's bandwidth and variance correction),
//!    summed binned ([`super::kernel`], v7), whole degrees, everything below 0 on 0: the
//!    settled value is the running one;
//! 4. mixed with the forecast's distribution cut at the running value by n / (n + k)
//!    (n the effective days of step 1, k [`Intraday::prior_days`]): a station with little
//!    history keeps mostly the forecast's answer, and below [`Intraday::min_days`] only it.
//!
//! Only past days the caller gives count (verified by the time asked).

use super::distribution::Distribution;
use super::kernel::{self, Tail};
use super::markets::Quantity;

/// One verified past day, seen at the asked hour of its day.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PastDay {
    /// Its season/age weight.
    pub weight: f64,
    /// The blend's centre for it.
    pub center: f64,
    pub settled: f64,
    /// Its running extreme at the asked hour.
    pub running: f64,
}

/// The same-day step's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Intraday {
    /// Effective days below which the forecast's answer stands alone (3: the mixture's
    /// `prior_days` already keeps a thin history's share small; 10 left a new station's
    /// first weeks with the cut forecast alone, under-confident; chosen on half the demo's
    /// stations by ignorance, confirmed on the other half: benches/README.md, session 24).
    pub min_days: f64,
    /// Days' weight of the forecast's answer in the mixture (2: chosen on half the demo's
    /// stations by ignorance, confirmed on the other half; benches/README.md, session 21).
    pub prior_days: f64,
    /// Narrowest kernel (degrees): whole-degree excesses stay nearly whole.
    pub min_bandwidth: f64,
    /// Narrowest gap kernel (degrees).
    pub min_gap_width: f64,
    /// Share of a past day's weight put on the running value itself when that day settled
    /// on its running extreme; the rest goes through the kernel like any excess. A kernel
    /// around 0 alone leaks part of such a day beyond the running value, which left the
    /// low after dawn and the high late in the day too likely to move (0.5: chosen on half
    /// the demo's stations by ignorance, confirmed on the other half; benches/README.md,
    /// session 30).
    pub zero_share: f64,
}

impl Default for Intraday {
    fn default() -> Self {
        Intraday { min_days: 3.0, prior_days: 2.0, min_bandwidth: 0.3, min_gap_width: 1.0, zero_share: 0.5 }
    }
}

impl Intraday {
    /// The distribution of the settled value given today's `running` extreme of `target`,
    /// the forecast `center` and `bounded` (the forecast's distribution cut at `running`),
    /// from `past` days at the same hour, and the effective number of alike past days it
    /// rests on; `None` with too few (then `bounded` stands).
    pub fn distribution(
        &self,
        bounded: &Distribution,
        center: f64,
        running: i32,
        target: Quantity,
        past: &[PastDay],
    ) -> Option<(Distribution, f64)> {
        let sign = match target {
            Quantity::High => 1.0,
            Quantity::Low => -1.0,
        };
        let r = f64::from(running);
        let gap = sign * (center - r);
        let usable =
            past.iter().filter(|p| p.weight > 0.0 && [p.center, p.settled, p.running].iter().all(|v| v.is_finite()));
        // The forecast's own past errors set how alike two gaps must be.
        let (sw, se, see) = usable.clone().fold((0.0, 0.0, 0.0), |(a, b, c), p| {
            (a + p.weight, b + p.weight * (p.settled - p.center), c + p.weight * (p.settled - p.center).powi(2))
        });
        if sw <= 0.0 {
            return None;
        }
        let width = (see / sw - (se / sw).powi(2)).max(0.0).sqrt().max(self.min_gap_width);
        // (weight, gap, excess)
        let days: Vec<(f64, f64, f64)> = usable
            .map(|p| {
                let g = sign * (p.center - p.running);
                let z = (g - gap) / width;
                (p.weight * (-0.5 * z * z).exp(), g, sign * (p.settled - p.running))
            })
            .filter(|(w, ..)| *w > 1e-9)
            .collect();
        let (w1, w2) = days.iter().fold((0.0, 0.0), |(a, b), (w, ..)| (a + w, b + w * w));
        let n = if w2 > 0.0 { w1 * w1 / w2 } else { 0.0 };
        if n < self.min_days {
            return None;
        }
        let slope = local_slope(&days);
        let excess: Vec<(f64, f64)> = days.iter().map(|&(w, g, x)| (w, x + slope * (gap - g))).collect();
        let mean = excess.iter().map(|(w, x)| w * x).sum::<f64>() / w1;
        let var = excess.iter().map(|(w, x)| w * (x - mean).powi(2)).sum::<f64>() / w1;
        let h = (1.06 * var.sqrt() * n.powf(-0.2)).max(self.min_bandwidth);
        let pull = (var / (var + h * h)).sqrt();
        let top = excess.iter().map(|(_, x)| mean + pull * (x - mean)).fold(0.0f64, f64::max);
        let steps = (top + 4.0 * h).ceil().max(0.0) as usize + 1;
        // Whole excesses 0..steps; everything below ½ is the running value itself.
        let mut on_running = 0.0;
        let kernels: Vec<(f64, f64)> = excess
            .iter()
            .zip(&days)
            .map(|(&(w, x), &(.., settled_excess))| {
                let w = if settled_excess.abs() < 0.5 {
                    on_running += w * self.zero_share;
                    w * (1.0 - self.zero_share)
                } else {
                    w
                };
                (w, mean + pull * (x - mean))
            })
            .collect();
        let mut p = kernel::masses(&kernels, 0.0, h, 0, steps, Tail::IntoFirst);
        p[0] += on_running;
        let learned = match target {
            Quantity::High => Distribution::new(running, p),
            Quantity::Low => Distribution::new(running - steps as i32 + 1, p.into_iter().rev().collect()),
        }
        .ok()?;
        Some((learned.mix(bounded, n / (n + self.prior_days)), n))
    }
}

/// The weighted least-squares slope of excess on gap, held in [0, 1] (0 when the gaps do not
/// vary).
fn local_slope(days: &[(f64, f64, f64)]) -> f64 {
    let sw: f64 = days.iter().map(|d| d.0).sum();
    let (mg, mx) = (days.iter().map(|d| d.0 * d.1).sum::<f64>() / sw, days.iter().map(|d| d.0 * d.2).sum::<f64>() / sw);
    let (sgg, sgx) =
        days.iter().fold((0.0, 0.0), |(a, b), &(w, g, x)| (a + w * (g - mg).powi(2), b + w * (g - mg) * (x - mx)));
    if sgg <= 1e-9 * sw {
        return 0.0;
    }
    (sgx / sgg).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::brackets::scores::{ignorance, Reliability};

    /// Days whose high comes by mid-afternoon: at the asked hour the running high is the
    /// day's less an afternoon rise that shrinks as the hour passes; the forecast errs by
    /// about 2.5°.
    fn days(rng: &mut SmallRng, hour: f64, n: usize) -> Vec<(PastDay, Distribution)> {
        (0..n)
            .map(|_| {
                let truth = (70.0 + 8.0 * (rng.random::<f64>() - 0.5)).round();
                let center = truth + 2.5 * 1.7 * (rng.random::<f64>() - 0.5);
                let left = ((15.0 - hour).max(0.0) * rng.random::<f64>() * 1.2).round();
                let running = truth - left;
                let forecast = Distribution::normal(center, 2.5, 30).unwrap().at_least(running as i32);
                (PastDay { weight: 1.0, center, settled: truth, running }, forecast)
            })
            .collect()
    }

    #[test]
    fn late_in_the_day_the_odds_gather_on_the_running_high_and_stay_calibrated() {
        let mut rng = SmallRng::seed_from_u64(11);
        let m = Intraday::default();
        for hour in [6.0, 13.0, 16.0] {
            let history: Vec<PastDay> = days(&mut rng, hour, 400).into_iter().map(|d| d.0).collect();
            let (mut ours, mut cut) = (0.0, 0.0);
            let mut rel = Reliability::default();
            let tests = days(&mut rng, hour, 400);
            for (day, bounded) in &tests {
                let (d, n) = m.distribution(bounded, day.center, day.running as i32, Quantity::High, &history).unwrap();
                assert!(n >= m.min_days, "{n}");
                assert!(d.lo() >= day.running as i32, "never below the running high");
                assert!((d.values().map(|(_, p)| p).sum::<f64>() - 1.0).abs() < 1e-9);
                ours += ignorance(&d, day.settled as i32);
                cut += ignorance(bounded, day.settled as i32);
                for v in d.lo()..=d.hi() {
                    rel.add(d.cdf(v), (day.settled as i32) <= v);
                }
            }
            let n = tests.len() as f64;
            assert!(ours / n < cut / n, "hour {hour}: {} vs the cut forecast's {}", ours / n, cut / n);
            for b in rel.bins().iter().filter(|b| b.n >= 200) {
                assert!((b.observed - b.forecast).abs() < 0.05, "hour {hour}: {b:?}");
            }
        }
    }

    /// Half the past days settled on their running high, half 2° above it: the kernel alone
    /// leaks part of the first half beyond the running value, the point-mass share keeps
    /// the running value's probability nearer the half those days are.
    #[test]
    fn days_that_settled_on_their_running_high_keep_weight_on_it() {
        let past: Vec<PastDay> = (0..200)
            .map(|i| PastDay {
                weight: 1.0,
                center: 72.0,
                settled: if i % 2 == 0 { 70.0 } else { 72.0 },
                running: 70.0,
            })
            .collect();
        let forecast = Distribution::normal(72.0, 2.0, 20).unwrap().at_least(70);
        let at_running = |m: &Intraday| m.distribution(&forecast, 72.0, 70, Quantity::High, &past).unwrap().0.p(70);
        let (kernel, shared) =
            (at_running(&Intraday { zero_share: 0.0, ..Intraday::default() }), at_running(&Intraday::default()));
        assert!(shared > kernel, "{shared} vs {kernel}");
        assert!((shared - 0.5).abs() < (kernel - 0.5).abs() && (shared - 0.5).abs() < 0.05, "{shared} vs {kernel}");
    }

    #[test]
    fn the_low_mirrors_the_high_and_thin_history_keeps_the_forecast() {
        let m = Intraday::default();
        // Every past day settled exactly on its running value: all the mass there but
        // the forecast's share.
        let past: Vec<PastDay> = (0..150)
            .map(|i| PastDay { weight: 1.0, center: 40.0 + f64::from(i % 3), settled: 38.0, running: 38.0 })
            .collect();
        let forecast = Distribution::normal(40.0, 2.0, 20).unwrap().at_most(39);
        let (d, _) = m.distribution(&forecast, 40.0, 39, Quantity::Low, &past).unwrap();
        assert!(d.hi() <= 39 && d.p(39) > 0.8, "{:?}", d.values().collect::<Vec<_>>());
        assert!(m.distribution(&forecast, 40.0, 39, Quantity::Low, &past[..2]).is_none());
        // Unlike gaps do not count: days whose forecast was 20° above the running value.
        let far: Vec<PastDay> =
            (0..50).map(|_| PastDay { weight: 1.0, center: 60.0, settled: 61.0, running: 40.0 }).collect();
        assert!(m.distribution(&forecast, 40.0, 39, Quantity::Low, &far).is_none());
    }
}
