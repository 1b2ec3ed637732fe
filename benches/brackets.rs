//! One station-day's bracket distribution from memory (issue 32's bar: under 5 ms): the
//! method (`brackets::METHOD`) over three years of verified days of 20 sources (18 models, the
//! NWS point forecast, one daily forecast), then the ladder's brackets, as the API would.
//! Run: `cargo bench --bench brackets`.

use std::sync::Arc;

use chrono::{Duration, NaiveDate};
use criterion::{criterion_group, criterion_main, Criterion};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use wxlake::brackets::{Ladder, Method, Verified};

/// Three years of days with a seasonal truth and 20 sources of different skill: the
/// verified ones, and the last (its forecasts and date are the asked day's).
fn history() -> (Vec<Verified>, Verified) {
    let mut rng = SmallRng::seed_from_u64(11);
    let start = NaiveDate::from_ymd_opt(2023, 11, 1).unwrap();
    let sources: Vec<Arc<str>> = (0..20).map(|i| Arc::from(format!("SRC-{i}"))).collect();
    let mut noise = |sd: f64| sd * (rng.random::<f64>() - 0.5) * 3.46;
    let days: Vec<Verified> = (0..1095)
        .map(|i| {
            let truth = (60.0 + 20.0 * (f64::from(i) * std::f64::consts::TAU / 365.0).sin() + noise(4.0)).round();
            let forecasts =
                sources.iter().enumerate().map(|(s, n)| (n.clone(), truth + noise(1.5 + s as f64 / 4.0))).collect();
            Verified { date: start + Duration::days(i64::from(i)), forecasts, settled: truth, running: None }
        })
        .collect();
    let (last, history) = days.split_last().unwrap();
    (history.to_vec(), last.clone())
}

fn bench(c: &mut Criterion) {
    let (history, last) = history();
    let (today, day) = (last.forecasts, last.date);
    let m = Method::default();
    c.bench_function("brackets: one station-day, 3 years x 20 sources", |b| {
        b.iter(|| {
            let (d, _) = m.distribution_from(&history, day, &today).unwrap();
            d.brackets(&Ladder::around(d.quantile(0.5), 2, 4))
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
