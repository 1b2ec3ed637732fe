//! From forecasts of one settlement day and the verified errors of their sources to the
//! probability of every whole settlement value (`kde-season`).
//!
//! 1. Each verified past day weighs by season and age: a Gaussian in the distance of its
//!    day of the year (sources err differently in summer and winter: Los Angeles' marine
//!    layer, Miami's gridded point), times an exponential decay over a year, plus a small
//!    share decaying over two months (a source that just changed shows quickly).
//! 2. Per source: its weighted mean error (bias) and mean squared error around it, each
//!    shrunk toward the pool of every source asked about by a few days' weight, so a source
//!    with little history is neither trusted nor ignored.
//! 3. The sources combine with weights ∝ 1 / their error variance (the minimum-variance
//!    blend of bias-corrected forecasts when errors are independent; correlated sources are
//!    over-weighted a little, which step 5 absorbs): the centre.
//! 4. With a year of settled history, the blend leans toward the station's seasonal normal
//!    (a two-harmonic fit of the settled values over the day of the year) by the slope of
//!    the blend's past errors on its distance to the normal (weighted least squares, the
//!    slope held in [0, 1] and shrunk by a ridge): a source that keeps overshooting the
//!    season's usual values (Los Angeles' marine layer) is pulled back by as much as its
//!    errors show, a good one is left alone.
//! 5. The combination's own past errors (each past day's sources blended the same way)
//!    make the spread and the shape: a weighted Gaussian kernel density (Silverman's
//!    bandwidth on the effective number of days), so skewed or heavy-tailed errors stay
//!    so, rather than a Gaussian's guess. The errors are drawn toward their mean by
//!    √(σ² / (σ² + h²)) first, so the kernels' width h adds no spread of its own (Jones'
//!    variance-corrected estimate; v2 without it was under-confident: its 0.8 bin's
//!    brackets settled in 92 % of the time on the demo's history).
//! 6. Rounded to whole values, and mixed with a small uniform share over ±`span`: no
//!    value a day could plausibly settle on gets zero (ignorance punishes zero without
//!    bound).
//! 7. Within the settlement day the caller cuts it at the running extreme and sharpens it
//!    with what past days still added after the same hour ([`super::intraday`]; new in v4,
//!    which changes nothing before the day).
//!
//! The caller passes only history that was verified at the asked time (`as_of`): nothing
//! here looks at dates beyond using them for weights.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::LazyLock;

use chrono::{Datelike, NaiveDate};

use super::distribution::Distribution;
use super::history::{Day, History, Verified};
use super::kernel::{self, Tail};
use super::BracketsError;

/// The method's name and version, as the API reports it.
/// v6 (session 30): the kernels' smallest width 0.7 instead of 0.5; within the day a run
/// issued after the LST day began is judged by its own lead-0 errors (`bracket_odds::inputs`),
/// and past days that settled on their running extreme keep half their weight on it
/// (`Intraday::zero_share`).
/// v7 (session 40): the same-day step sums its kernels binned, as the forecast's
/// distribution did already ([`super::kernel`]): the same answer within a few thousandths,
/// at a fraction of the cost.
pub const METHOD: &str = "kde-season-v7";

/// The method's settings (defaults: see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Method {
    /// Width (days of the year) of the season weight.
    pub season_days: f64,
    /// Decay (days) of the age weight.
    pub memory_days: f64,
    /// Decay (days) and share of the recent weight.
    pub recent_days: f64,
    pub recent_share: f64,
    /// Days' weight of the pool in each source's bias and error.
    pub shrink: f64,
    /// Values either side of the centre with a probability.
    pub span: i32,
    /// Share spread uniformly over the support.
    pub floor_share: f64,
    /// Effective days below which the spread is a Gaussian: the blend's few past errors,
    /// shrunk toward the best source's spread by [`Method::shrink`] days' weight.
    pub min_days: f64,
    /// The error spread (whole units) assumed before any history: the pool's error variance
    /// is shrunk toward its square by `shrink` days' weight, so a source with three lucky
    /// days is not trusted to a degree.
    pub prior_spread: f64,
    /// Verified days from which the seasonal normal is fitted and leaned toward.
    pub normal_days: usize,
    /// Days' weight of the ridge that keeps the lean toward the normal at 0 until the
    /// errors show it.
    pub lean_ridge: f64,
    /// The kernels' smallest width (whole units). Silverman's width is under it on most
    /// histories, so it sets the shape's smoothness; v6 raised it from 0.5, as 0.7 scored
    /// better on the demo's history before and within the day, narrower worse
    /// (benches/README.md, "The kernels' smallest width").
    pub min_bandwidth: f64,
}

impl Default for Method {
    fn default() -> Self {
        Method {
            season_days: 45.0,
            memory_days: 365.0,
            recent_days: 60.0,
            recent_share: 0.05,
            shrink: 5.0,
            span: 40,
            floor_share: 0.005,
            min_days: 10.0,
            prior_spread: 3.0,
            normal_days: 300,
            lean_ridge: 5.0,
            min_bandwidth: 0.7,
        }
    }
}

/// What a source contributed (the API's `inputs`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SourceFit {
    pub source: String,
    pub forecast: f64,
    /// Share of the centre.
    pub weight: f64,
    /// Mean error (settled − forecast) added to its forecast.
    pub bias: f64,
    /// Root mean squared error around the bias.
    pub spread: f64,
    /// Effective verified days behind the bias and spread.
    pub n: f64,
}

/// How a distribution was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub sources: Vec<SourceFit>,
    pub center: f64,
    /// Kernel bandwidth (whole units); `None` when too few days made a Gaussian instead.
    pub bandwidth: Option<f64>,
    /// Effective verified days behind the shape.
    pub n: f64,
    /// Each past day the shape was made from: its row in the history, weight and the
    /// centre the blend (with its lean to the normal) gave it. The same-day step reads them.
    pub past: Vec<(usize, f64, f64)>,
}

/// Weighted sums of one error series.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    w: f64,
    we: f64,
    wee: f64,
}

impl Sums {
    fn add(&mut self, w: f64, e: f64) {
        self.w += w;
        self.we += w * e;
        self.wee += w * e * e;
    }
    fn mean(&self) -> f64 {
        if self.w > 0.0 {
            self.we / self.w
        } else {
            0.0
        }
    }
    /// Mean squared deviation around `center`.
    fn mse_around(&self, center: f64) -> f64 {
        if self.w > 0.0 {
            (self.wee - 2.0 * center * self.we + center * center * self.w) / self.w
        } else {
            0.0
        }
    }
}

impl Method {
    /// The weight of a verified day `past` for a forecast of `day`.
    fn weight(&self, day: NaiveDate, past: NaiveDate) -> f64 {
        let age = (day - past).num_days().max(0) as f64;
        let season = season_gap(day, past) / self.season_days;
        (-season * season).exp() * (-age / self.memory_days).exp() + self.recent_share * (-age / self.recent_days).exp()
    }

    /// The station's seasonal normal from its settled history (a two-harmonic fit over the
    /// day of the year, weighted by age over two years), as a function of the day of the
    /// year; `None` with less than [`Method::normal_days`] of history. `history` is in date
    /// order.
    fn normal(&self, tables: &Tables, history: &[Day], day: NaiveDate) -> Option<impl Fn(u32) -> f64> {
        let span = match (history.first(), history.last()) {
            (Some(first), Some(last)) => (last.date - first.date).num_days(),
            _ => 0,
        };
        // A year at least, so every season is in the fit rather than extrapolated.
        if history.len() < self.normal_days || span < 365 {
            return None;
        }
        let (mut a, mut b) = ([[0.0f64; 5]; 5], [0.0f64; 5]);
        let from = day.num_days_from_ce();
        for h in history {
            let w = tables.normal_weight(from - h.date.num_days_from_ce());
            let x = harmonics(h.date.ordinal());
            for i in 0..5 {
                b[i] += w * x[i] * h.settled;
                for j in 0..5 {
                    a[i][j] += w * x[i] * x[j];
                }
            }
        }
        let beta = solve(a, b)?;
        Some(move |doy: u32| harmonics(doy).iter().zip(&beta).map(|(x, c)| x * c).sum())
    }

    /// The weighted least-squares line of the blend's error on the distance from the blend
    /// to the normal, its slope shrunk by [`Method::lean_ridge`] days' weight: (intercept,
    /// slope). A blend that has been too far from the normal on days like this one leans
    /// back toward it by the slope.
    fn lean(&self, points: impl Iterator<Item = (f64, f64, f64)>) -> (f64, f64) {
        let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (w, x, y) in points {
            (sw, sx, sy, sxx, sxy) = (sw + w, sx + w * x, sy + w * y, sxx + w * x * x, sxy + w * x * y);
        }
        if sw <= 0.0 {
            return (0.0, 0.0);
        }
        // The ridge in days' weight of a typical squared distance.
        let ridge = self.lean_ridge * sxx / sw;
        let det = sw * (sxx + ridge) - sx * sx;
        let slope = if det.abs() < 1e-12 { 0.0 } else { ((sw * sxy - sx * sy) / det).clamp(0.0, 1.0) };
        ((sy - slope * sx) / sw, slope)
    }

    /// [`Method::distribution`] of a history in row form (each day's forecasts by source
    /// name), for callers that hold days so.
    pub fn distribution_from(
        &self,
        days: &[Verified],
        day: NaiveDate,
        forecasts: &[(impl AsRef<str>, f64)],
    ) -> Result<(Distribution, Fit), BracketsError> {
        let names: Vec<&str> = forecasts.iter().map(|(n, _)| n.as_ref()).collect();
        self.distribution(&History::of(days, &names), day, forecasts)
    }

    /// The distribution of `day`'s settled value given `forecasts` (source, value) and the
    /// verified `history` of those sources, a column each in their order (module docs).
    pub fn distribution(
        &self,
        history: &History,
        day: NaiveDate,
        forecasts: &[(impl AsRef<str>, f64)],
    ) -> Result<(Distribution, Fit), BracketsError> {
        if forecasts.is_empty() {
            return Err(BracketsError::NoInput("no forecast of the day".into()));
        }
        if let Some((name, _)) = forecasts.iter().find(|(_, f)| !f.is_finite()) {
            return Err(BracketsError::Invalid(format!("the forecast of {} is not a number", name.as_ref())));
        }
        if history.columns() != forecasts.len() {
            return Err(BracketsError::Invalid(format!(
                "a history of {} sources for {} forecasts",
                history.columns(),
                forecasts.len()
            )));
        }
        // Only days before the asked one count (the caller passes what was verified by its
        // time; this keeps a mistake from looking ahead). A history holds usable days only.
        let days = &history.days()[..history.before(day)];
        let rows = history.rows().take(days.len());
        let tables = Tables::of(self);
        let weights: Vec<f64> = days.iter().map(|h| tables.weight(self, day, h.date)).collect();
        // Errors per asked source (NaN: no forecast that day), and pooled.
        let mut per: Vec<Sums> = vec![Sums::default(); forecasts.len()];
        let mut pool = Sums::default();
        for ((h, row), &w) in rows.clone().zip(&weights) {
            for (s, f) in row.iter().enumerate().filter(|(_, f)| !f.is_nan()) {
                per[s].add(w, h.settled - f);
                pool.add(w, h.settled - f);
            }
        }
        // Without any verified day, every source is unbiased with the prior spread (the
        // pool's sums are empty, so the shrinking below gives exactly that).
        let prior = self.prior_spread * self.prior_spread;
        let pool_bias = pool.mean();
        let pool_mse = (pool.mse_around(pool_bias) * pool.w + self.shrink * prior) / (pool.w + self.shrink);
        let k = self.shrink;
        let mut fits: Vec<SourceFit> = forecasts
            .iter()
            .zip(&per)
            .map(|((name, f), s)| {
                let bias = (s.we + k * pool_bias) / (s.w + k);
                let mse = (s.mse_around(bias) * s.w + k * pool_mse) / (s.w + k);
                SourceFit {
                    source: name.as_ref().to_string(),
                    forecast: *f,
                    weight: 1.0 / mse.max(0.25),
                    bias,
                    spread: mse.max(0.0).sqrt(),
                    n: s.w,
                }
            })
            .collect();
        let total: f64 = fits.iter().map(|s| s.weight).sum();
        fits.iter_mut().for_each(|s| s.weight /= total);
        let center: f64 = fits.iter().map(|s| s.weight * (s.forecast + s.bias)).sum();

        // The blend's own past errors, each day blending the sources it had: (weight, the
        // day's blend, its settled value, its day of the year), and its row.
        let mut past: Vec<(f64, f64, f64, u32)> = Vec::with_capacity(days.len());
        let mut past_rows: Vec<usize> = Vec::with_capacity(days.len());
        for (i, ((h, row), &w)) in rows.zip(&weights).enumerate() {
            let (mut num, mut den) = (0.0, 0.0);
            for (s, f) in fits.iter().zip(row).filter(|(_, f)| !f.is_nan()) {
                num += s.weight * (f + s.bias);
                den += s.weight;
            }
            if den > 0.0 && w > 1e-6 {
                past.push((w, num / den, h.settled, h.date.ordinal()));
                past_rows.push(i);
            }
        }
        // Toward the season's normal by as much as the blend's past errors lean to it.
        let (center, residuals) = match self.normal(&tables, days, day) {
            Some(normal) => {
                let toward = |doy: u32, blend: f64| normal(doy) - blend;
                let (b0, b1) = self.lean(past.iter().map(|&(w, c, o, d)| (w, toward(d, c), o - c)));
                let residuals = past.iter().map(|&(w, c, o, d)| (w, o - c - b0 - b1 * toward(d, c))).collect();
                (center + b0 + b1 * toward(day.ordinal(), center), residuals)
            }
            None => (center, past.iter().map(|&(w, c, o, _)| (w, o - c)).collect::<Vec<_>>()),
        };
        // Each past day's centre: its settled value less its residual.
        let past_centers =
            past_rows.iter().zip(&past).zip(&residuals).map(|((i, p), (w, r))| (*i, *w, p.2 - r)).collect();
        let (sw, sw2): (f64, f64) = residuals.iter().fold((0.0, 0.0), |(a, b), (w, _)| (a + w, b + w * w));
        let n_eff = if sw2 > 0.0 { sw * sw / sw2 } else { 0.0 };
        let lo = center.round() as i32 - self.span;
        let len = (2 * self.span + 1) as usize;
        // The residuals' weighted mean and sum of squares around it, for either shape.
        let mean = if sw > 0.0 { residuals.iter().map(|(w, r)| w * r).sum::<f64>() / sw } else { 0.0 };
        let sq: f64 = residuals.iter().map(|(w, r)| w * (r - mean).powi(2)).sum();
        let (p, bandwidth) = if n_eff < self.min_days {
            // The blend errs less than its best source: its own past errors, few as they
            // are, count for what they weigh against the best source's spread at
            // `shrink` days' weight (v5; v4 took the best source's spread alone and was
            // under-confident through a new station's first weeks).
            let best = fits.iter().map(|s| s.spread).fold(f64::INFINITY, f64::min).max(0.5);
            let spread = ((sq + self.shrink * best * best) / (sw + self.shrink)).sqrt().max(0.5);
            (Distribution::normal(center, spread, self.span)?.values().map(|(_, p)| p).collect::<Vec<f64>>(), None)
        } else {
            let var = sq / sw;
            let h = (1.06 * var.sqrt() * n_eff.powf(-0.2)).max(self.min_bandwidth);
            // Each kernel adds h² to the spread: the residuals are drawn toward their mean
            // so the density keeps the errors' own variance (Jones' variance-corrected
            // kernel estimate), else the odds come out too wide.
            let pull = (var / (var + h * h)).sqrt();
            let residuals: Vec<(f64, f64)> = residuals.iter().map(|&(w, r)| (w, mean + pull * (r - mean))).collect();
            (kernel::masses(&residuals, center, h, lo, len, Tail::Dropped), Some(h))
        };
        let d = Distribution::new(lo, p)?.with_uniform_share(self.floor_share);
        Ok((d, Fit { sources: fits, center, bandwidth, n: n_eff, past: past_centers }))
    }
}

/// Ages (days) the weights are tabulated for: three years of history and a leap day.
const TABLE_DAYS: usize = 3 * 366;

/// One method's weights of whole-day distances, tabulated once per thread: a fit reads one
/// per past day, each a product of `exp`s of the distance, and finds it here rather than
/// computing it (the same expressions, so the same values).
struct Tables {
    /// The settings they are of: season, memory and recent days, recent share.
    made_for: [f64; 4],
    /// The season factor by whole days between days of the year (0..=365).
    season: Vec<f64>,
    /// By age in days: the age factor, the recent share's, the normal's.
    age: Vec<[f64; 3]>,
}

impl Tables {
    /// `method`'s tables (this thread's, made again when the settings differ).
    fn of(method: &Method) -> Rc<Tables> {
        thread_local!(static HELD: RefCell<Option<Rc<Tables>>> = const { RefCell::new(None) });
        let made_for = [method.season_days, method.memory_days, method.recent_days, method.recent_share];
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            match held.as_ref() {
                Some(t) if t.made_for == made_for => Rc::clone(t),
                _ => Rc::clone(held.insert(Rc::new(Tables::new(method, made_for)))),
            }
        })
    }

    fn new(m: &Method, made_for: [f64; 4]) -> Tables {
        let season = (0..=365u32)
            .map(|gap| {
                let season = season_gap_days(f64::from(gap)) / m.season_days;
                (-season * season).exp()
            })
            .collect();
        let age = (0..TABLE_DAYS)
            .map(|age| {
                let age = age as f64;
                [
                    (-age / m.memory_days).exp(),
                    m.recent_share * (-age / m.recent_days).exp(),
                    (-age / NORMAL_DAYS).exp(),
                ]
            })
            .collect();
        Tables { made_for, season, age }
    }

    /// [`Method::weight`], found.
    fn weight(&self, m: &Method, day: NaiveDate, past: NaiveDate) -> f64 {
        let age = (day.num_days_from_ce() - past.num_days_from_ce()).max(0) as usize;
        match self.age.get(age) {
            Some(&[memory, recent, _]) => {
                self.season[day.ordinal().abs_diff(past.ordinal()) as usize] * memory + recent
            }
            None => m.weight(day, past),
        }
    }

    /// The normal's weight of a day `age` days old.
    fn normal_weight(&self, age: i32) -> f64 {
        let age = age.max(0);
        self.age.get(age as usize).map_or_else(|| (-f64::from(age) / NORMAL_DAYS).exp(), |a| a[2])
    }
}

/// The decay (days) of the normal's weights.
const NORMAL_DAYS: f64 = 730.0;

/// The normal's features of a day of the year: a constant and two harmonics.
fn harmonics(doy: u32) -> [f64; 5] {
    static TABLE: LazyLock<Vec<[f64; 5]>> = LazyLock::new(|| (0..=366).map(harmonics_of).collect());
    TABLE.get(doy as usize).copied().unwrap_or_else(|| harmonics_of(doy))
}

fn harmonics_of(doy: u32) -> [f64; 5] {
    let t = 2.0 * std::f64::consts::PI * f64::from(doy) / 365.25;
    [1.0, t.cos(), t.sin(), (2.0 * t).cos(), (2.0 * t).sin()]
}

/// Days between two dates' days of the year, around the year (31 December and 1 January
/// are a day apart, whatever the year's length).
pub(crate) fn season_gap(a: NaiveDate, b: NaiveDate) -> f64 {
    season_gap_days((f64::from(a.ordinal()) - f64::from(b.ordinal())).abs())
}

/// [`season_gap`] of days of the year `gap` days apart.
fn season_gap_days(gap: f64) -> f64 {
    gap.min(365.25 - gap).max(0.0)
}

/// Solves `a x = b` for a small symmetric system by Gaussian elimination with partial
/// pivoting; `None` when it is singular (a history of one season only).
fn solve<const N: usize>(mut a: [[f64; N]; N], mut b: [f64; N]) -> Option<[f64; N]> {
    let scale = a.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs())).max(f64::MIN_POSITIVE);
    for col in 0..N {
        let pivot = (col..N).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        // Relative to the system's scale: a history of one season is singular here.
        if a[pivot][col].abs() < 1e-9 * scale {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let pivot_row = a[col];
        for row in col + 1..N {
            let f = a[row][col] / pivot_row[col];
            for (x, p) in a[row][col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; N];
    for row in (0..N).rev() {
        let rest: f64 = (row + 1..N).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - rest) / a[row][row];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::Duration;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::brackets::scores::{ignorance, Reliability};

    /// Today's forecasts as a verified day holds them.
    fn shared(f: &[(String, f64)]) -> Vec<(Arc<str>, f64)> {
        f.iter().map(|(n, v)| (Arc::from(n.as_str()), *v)).collect()
    }

    /// A normal draw (Box-Muller).
    fn normal(rng: &mut SmallRng) -> f64 {
        let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// Two years of days: a truth, a good source (bias +2, sd 2) and a poor one (bias −1,
    /// sd 5).
    fn synthetic() -> Vec<Verified> {
        let mut rng = SmallRng::seed_from_u64(7);
        let start = NaiveDate::from_ymd_opt(2024, 1, 1).unwrap();
        (0..730)
            .map(|i| {
                let truth = (60.0 + 20.0 * (f64::from(i) / 58.0).sin() + 3.0 * normal(&mut rng)).round();
                let good = truth - 2.0 + 2.0 * normal(&mut rng);
                let poor = truth + 1.0 + 5.0 * normal(&mut rng);
                Verified {
                    date: start + Duration::days(i64::from(i)),
                    forecasts: vec![("GOOD".into(), good), ("POOR".into(), poor)],
                    settled: truth,
                    running: None,
                }
            })
            .collect()
    }

    #[test]
    fn biases_and_weights_come_from_the_errors() {
        let days = synthetic();
        let (last, history) = days.split_last().unwrap();
        let (_, fit) = Method::default().distribution_from(history, last.date, &last.forecasts).unwrap();
        let good = &fit.sources[0];
        let poor = &fit.sources[1];
        assert!((good.bias - 2.0).abs() < 0.6, "{good:?}");
        assert!((poor.bias + 1.0).abs() < 1.5, "{poor:?}");
        assert!((good.spread - 2.0).abs() < 0.6 && (poor.spread - 5.0).abs() < 1.2, "{fit:?}");
        // Inverse error variance: about 25 / 4 to one.
        assert!(good.weight > 0.8 && (good.weight + poor.weight - 1.0).abs() < 1e-12, "{fit:?}");
    }

    #[test]
    fn calibrated_and_sharper_than_either_source_alone_without_look_ahead() {
        let days = synthetic();
        let m = Method::default();
        let (mut ours, mut good_alone) = (0.0, 0.0);
        let mut rel = Reliability::default();
        let mut n = 0;
        for i in 120..days.len() {
            let day = &days[i];
            // Verified by the day before: everything before it.
            let history = &days[..i];
            let (d, _) = m.distribution_from(history, day.date, &day.forecasts).unwrap();
            let alone = &day.forecasts[..1];
            let (g, _) = m.distribution_from(history, day.date, alone).unwrap();
            let settled = day.settled as i32;
            ours += ignorance(&d, settled);
            good_alone += ignorance(&g, settled);
            for v in d.lo()..=d.hi() {
                rel.add(d.cdf(v), settled <= v);
            }
            n += 1;
        }
        assert!(ours / f64::from(n) < good_alone / f64::from(n), "{ours} vs {good_alone}");
        for b in rel.bins().iter().filter(|b| b.n >= 200) {
            assert!((b.observed - b.forecast).abs() < 0.05, "{b:?}");
        }
    }

    #[test]
    fn a_few_days_of_a_blend_better_than_its_sources_narrow_the_gaussian() {
        // Two sources erring by the same amount in opposite directions: each is 2° off,
        // their blend is exact. Eight days are too few for the kernel density.
        let m = Method::default();
        let day = NaiveDate::from_ymd_opt(2026, 5, 1).unwrap();
        let few: Vec<Verified> = (1..=8)
            .map(|i| {
                let e = if i % 2 == 0 { 2.0 } else { -2.0 };
                Verified {
                    date: day - Duration::days(i),
                    forecasts: vec![("A".into(), 70.0 + e), ("B".into(), 70.0 - e)],
                    settled: 70.0,
                    running: None,
                }
            })
            .collect();
        let (d, fit) = m.distribution_from(&few, day, &[("A", 71.0), ("B", 69.0)]).unwrap();
        assert_eq!(fit.bandwidth, None);
        let best = fit.sources.iter().map(|s| s.spread).fold(f64::INFINITY, f64::min);
        // The blend's eight exact days against the best source's 2.1° at five days'
        // weight: a spread of √(5 · 2.1² / 13) ≈ 1.3°, so 69–71 holds about three quarters
        // of the odds (half with the best source's spread).
        let inner: f64 = (69..=71).map(|v| d.p(v)).sum();
        assert!(best > 1.8 && (0.68..0.8).contains(&inner), "69-71: {inner}, best source {best}");
    }

    #[test]
    fn without_history_the_prior_spread_and_little_history_is_a_gaussian() {
        let m = Method::default();
        let day = NaiveDate::from_ymd_opt(2026, 5, 1).unwrap();
        let f = vec![("GFS".to_string(), 70.0)];
        // No verified day: the forecast, unbiased, with the prior spread.
        let (prior, fit) = m.distribution_from(&[], day, &f).unwrap();
        assert_eq!((fit.sources[0].bias, fit.sources[0].spread, fit.n), (0.0, m.prior_spread, 0.0));
        assert!((prior.mean() - 70.0).abs() < 1e-6, "{}", prior.mean());
        let (sd, normal) = (m.prior_spread, Distribution::normal(70.0, m.prior_spread, m.span).unwrap());
        assert!((prior.p(70) - normal.p(70) * (1.0 - m.floor_share)).abs() < 1e-3, "{sd}: {}", prior.p(70));
        assert!(matches!(m.distribution_from(&[], day, &[] as &[(&str, f64)]), Err(BracketsError::NoInput(_))));
        let few: Vec<Verified> = (1..4)
            .map(|i| Verified { date: day - Duration::days(i), forecasts: shared(&f), settled: 72.0, running: None })
            .collect();
        let (d, fit) = m.distribution_from(&few, day, &f).unwrap();
        assert_eq!(fit.bandwidth, None);
        assert!((d.mean() - 72.0).abs() < 0.5, "the source's bias corrected: {}", d.mean());
        // Three lucky days do not make a source exact: the prior spread keeps it humble.
        let mode = d.p(d.quantile(0.5));
        assert!(mode < 0.3, "{mode}");
        // Days after the asked one never count.
        let later: Vec<Verified> = (1..40)
            .map(|i| Verified { date: day + Duration::days(i), forecasts: shared(&f), settled: 90.0, running: None })
            .collect();
        assert_eq!(m.distribution_from(&later, day, &f).unwrap().0, prior);
        let nan = vec![("GFS".to_string(), f64::NAN)];
        assert!(matches!(m.distribution_from(&few, day, &nan), Err(BracketsError::Invalid(_))));
    }
}
