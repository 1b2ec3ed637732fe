//! The hot path: applying observations to a station's live state, answering svc_high from
//! it, and whole requests through the router (auth, rate limit, JSON) in process: latest,
//! svc_high, one day of raw GFS forecasts and model_accuracy on a 3-day KNYC demo lake;
//! then the latency percentiles of `mode=latest` over 20,000 sequential requests.
//! Run: `cargo bench --bench live`. HTTP under load from a second process: benches/http_load.sh.

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use wxlake::catalog::Catalog;
use wxlake::decode::metar::parse_metar;
use wxlake::decode::types::{Metar, OneMinute};
use wxlake::extremes::{LiveInput, Logic, StationExtremes};
use wxlake::units::{c_to_f, f_to_c, round1};

enum Input {
    M(Box<Metar>),
    O(OneMinute),
}

/// `days` of KMDW: one-minute readings, 5-minute HF-METARs, hourly METARs with 6-hour
/// groups, a -999 now and then: about 1,750 inputs a day.
fn inputs(days: i64) -> Vec<Input> {
    let start = Utc.with_ymd_and_hms(2026, 1, 10, 6, 0, 0).unwrap();
    let routine =
        parse_metar("METAR KMDW 101553Z 27010KT 10SM CLR 03/M04 A3012 RMK AO2 SLP205 T00331044", start).unwrap();
    let hf = parse_metar("KMDW 101605Z AUTO 27010KT 10SM CLR 03/M04 A3012 RMK T00301040 MADISHF", start).unwrap();
    let mut out = Vec::new();
    for minute in 0..days * 1440 {
        let t: DateTime<Utc> = start + Duration::minutes(minute);
        let phase = ((minute % 1440) as f64 / 1440.0) * std::f64::consts::TAU;
        let f = c_to_f(3.0 - 9.0 * phase.cos()).round();
        let tenths = round1(f_to_c(f));
        out.push(Input::O(OneMinute { station: "KMDW".into(), time: t, temp_f: (minute % 997 != 0).then_some(f) }));
        if minute % 5 == 0 {
            let mut m = hf.clone();
            (m.time, m.temp_whole_c, m.tgroup_temp_c) = (t, Some(tenths.round() as i32), Some(tenths.round()));
            out.push(Input::M(Box::new(m)));
        }
        if minute % 60 == 53 {
            let mut m = routine.clone();
            (m.time, m.temp_whole_c, m.tgroup_temp_c) = (t, Some(tenths.round() as i32), Some(tenths));
            if minute % 360 == 353 {
                (m.six_hour_max_c, m.six_hour_min_c) = (Some(tenths + 1.0), Some(tenths - 1.0));
            }
            out.push(Input::M(Box::new(m)));
        }
    }
    out
}

fn apply_all(live: &mut StationExtremes, inputs: &[Input]) -> usize {
    let mut events = 0;
    for i in inputs {
        events += match i {
            Input::M(m) => live.apply(LiveInput::Metar(m)).len(),
            Input::O(o) => live.apply(LiveInput::OneMinute(o)).len(),
        };
    }
    events
}

fn bench_apply(c: &mut Criterion) {
    let station = Catalog::global().get("KMDW").unwrap();
    let data = inputs(3);
    let mut g = c.benchmark_group("live");
    g.throughput(Throughput::Elements(data.len() as u64));
    g.bench_function("apply_3_days", |b| {
        b.iter_batched(|| StationExtremes::new(station), |mut live| apply_all(&mut live, &data), BatchSize::LargeInput)
    });
    let mut live = StationExtremes::new(station);
    apply_all(&mut live, &data);
    let now = Utc.with_ymd_and_hms(2026, 1, 12, 20, 0, 0).unwrap();
    let date = live.day_of(Logic::Nws, now);
    g.throughput(Throughput::Elements(1));
    g.bench_function("extremes_nws", |b| b.iter(|| live.extremes(Logic::Nws, date, now)));
    g.bench_function("extremes_wu", |b| b.iter(|| live.extremes(Logic::Wu, date, now)));
    g.finish();
}

fn bench_request(c: &mut Criterion) {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;
    use wxlake::access::keys::{KeyStore, Tier};
    use wxlake::access::limits::RateLimiter;
    use wxlake::api::{server, AppState};
    use wxlake::clock::{Clock, ManualClock, SystemClock};
    use wxlake::write::WriteService;

    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The limiter runs on its own manual clock, moved a minute per request, so the bench
    // measures served requests (auth and limiter included) rather than 429s.
    let limiter_clock = Arc::new(ManualClock::new(Utc::now()));
    let lc = limiter_clock.clone();
    let (router, key) = rt.block_on(async {
        let lake = wxlake::lake::Lake::open(&format!("file://{}", dir.path().join("lake").display())).await.unwrap();
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let keys = KeyStore::open(dir.path().join("state")).unwrap();
        let key = keys.create(Tier::Enterprise, "bench", true, false).unwrap().1;
        let live = Arc::new(
            WriteService::open(
                lake.clone(),
                wxlake::jobs::analyst_session(&lake).await.unwrap(),
                &dir.path().join("state"),
                clock.clone(),
            )
            .await
            .unwrap(),
        );
        let now = Utc::now();
        let body = (0..60)
            .map(|i| {
                let t = now - Duration::minutes(60 - i);
                format!("KNYC {} 27008KT 10SM CLR 05/M02 A3012 RMK AO2 T00{}1017", t.format("%d%H%MZ"), 50 + i % 9)
            })
            .collect::<Vec<_>>()
            .join("\n");
        let month = Some((chrono::Datelike::year(&now), chrono::Datelike::month(&now)));
        live.ingest(
            wxlake::ingest::Format::Metar,
            wxlake::ingest::IngestOptions { month, ..Default::default() },
            body.into_bytes(),
        )
        .await
        .unwrap();
        // Three demo days of KNYC (forecasts of all 18 models, NWS hourly) and every job,
        // for the forecast and accuracy requests.
        let lake = live.lake.clone();
        let mut cfg = wxlake::demo::DemoConfig::ending_yesterday(now, 3);
        cfg.stations = vec!["KNYC".into()];
        cfg.onemin = false;
        wxlake::demo::load::load(&lake, &cfg, 1, |_, _| {}).await.unwrap();
        let specs = wxlake::jobs::embedded_specs().unwrap();
        wxlake::jobs::run_all(&lake, &specs, None, &wxlake::jobs::runner::no_progress).await.unwrap();
        let state = AppState::new(keys, RateLimiter::new(lc), live, clock);
        (server::router(state), key)
    });
    let today = Utc::now().date_naive();
    let forecast_day = format!(
        "/api/v2/forecasts.php?location_name=KNYC&model=GFS&start_valid_time={today}T00:00:00Z&end_valid_time={}T00:00:00Z",
        today.succ_opt().unwrap()
    );
    let mut g = c.benchmark_group("http_in_process");
    g.throughput(Throughput::Elements(1));
    for (name, path) in [
        ("latest", "/api/v2/observations.php?station_code=KNYC&mode=latest"),
        ("svc_high_nws", "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws"),
        ("forecasts_raw_gfs_one_day", forecast_day.as_str()),
        (
            "model_accuracy_30d_all_sections",
            "/api/v2/model_accuracy.php?station_code=KNYC&window=30d&include=trends,daily_detail",
        ),
    ] {
        g.bench_function(name, |b| {
            b.to_async(&rt).iter(|| {
                let req = Request::get(path).header("X-API-Key", &key).body(Body::empty()).unwrap();
                let r = router.clone();
                limiter_clock.advance(Duration::seconds(61));
                async move {
                    let resp = r.oneshot(req).await.unwrap();
                    assert!(resp.status().is_success(), "{}", resp.status());
                    axum::body::to_bytes(resp.into_body(), 1 << 24).await.unwrap().len()
                }
            })
        });
    }
    g.finish();

    // Tail latency of latest (criterion reports means): one request at a time, each timed
    // from the request to the last body byte.
    let mut micros: Vec<f64> = rt.block_on(async {
        let mut out = Vec::with_capacity(20_000);
        for _ in 0..20_000 {
            let req = Request::get("/api/v2/observations.php?station_code=KNYC&mode=latest")
                .header("X-API-Key", &key)
                .body(Body::empty())
                .unwrap();
            limiter_clock.advance(Duration::seconds(61));
            let t0 = std::time::Instant::now();
            let resp = router.clone().oneshot(req).await.unwrap();
            assert!(resp.status().is_success(), "{}", resp.status());
            axum::body::to_bytes(resp.into_body(), 1 << 16).await.unwrap();
            out.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        out
    });
    micros.sort_by(f64::total_cmp);
    let pct = |p: f64| micros[((micros.len() as f64 * p) as usize).min(micros.len() - 1)];
    println!(
        "latest (in process, {} requests): p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
        micros.len(),
        pct(0.5),
        pct(0.99),
        pct(0.999),
        micros[micros.len() - 1]
    );
}

criterion_group!(benches, bench_apply, bench_request);
criterion_main!(benches);
