//! The bracket distributions judged on real history (data/real/history, SOURCES.md): real
//! official highs with real forecasts issued before each day. Each day is forecast at
//! D−1 18:00 local from what was known then (forecasts issued by then, highs settled by
//! then: days up to D−2), never later, and scored against the settled high.

use std::collections::BTreeMap;
use std::fs::File;

use chrono::{Duration, NaiveDate};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Date32Type, Float64Type, Int64Type, TimestampNanosecondType};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use wxlake::brackets::baselines::{best_single_gaussian, climatology, equal_weight_fraction};
use wxlake::brackets::scores::{ignorance, Reliability};
use wxlake::brackets::{Ladder, Method, Verified};

use crate::support::fixture;

const CITIES: [&str; 5] = ["austin", "denver", "los_angeles", "miami", "philadelphia"];

fn read(rel: &str) -> Vec<RecordBatch> {
    let file = File::open(fixture(&format!("history/{rel}"))).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap().map(Result::unwrap).collect()
}

fn date(a: &dyn Array, i: usize) -> NaiveDate {
    Date32Type::to_naive_date_opt(a.as_primitive::<Date32Type>().value(i)).unwrap()
}

fn column<'a>(b: &'a RecordBatch, name: &str) -> &'a dyn Array {
    b.column(b.schema().index_of(name).unwrap()).as_ref()
}

/// The official high of each day (`tmax_final`, whole °F).
fn settlements(city: &str) -> BTreeMap<NaiveDate, f64> {
    let mut out = BTreeMap::new();
    for b in read(&format!("halsted_5city/{city}/settlements.parquet")) {
        let highs = column(&b, "tmax_final").as_primitive::<Int64Type>();
        for i in (0..b.num_rows()).filter(|&i| highs.is_valid(i)) {
            out.insert(date(column(&b, "date_local"), i), highs.value(i) as f64);
        }
    }
    out
}

/// Each day's forecasts available at D−1 18:00 local: Visual Crossing's daily high issued
/// on D−1 (`lead_days` 1: a basis date with no hour, taken as issued by the evening), and
/// for Austin NBM and HRRR of D−1 12Z (published by about 14Z, before 18:00 CST).
fn forecasts(city: &str) -> BTreeMap<NaiveDate, Vec<(String, f64)>> {
    let mut out: BTreeMap<NaiveDate, Vec<(String, f64)>> = BTreeMap::new();
    for b in read(&format!("halsted_5city/{city}/forecasts_daily.parquet")) {
        let (lead, high) = (
            column(&b, "lead_days").as_primitive::<Int64Type>(),
            column(&b, "tempmax_f").as_primitive::<Float64Type>(),
        );
        for i in (0..b.num_rows()).filter(|&i| lead.value(i) == 1 && high.is_valid(i)) {
            let day = date(column(&b, "target_date"), i);
            assert_eq!(date(column(&b, "forecast_basis_date"), i), day - Duration::days(1));
            out.entry(day).or_default().push(("VISUAL-CROSSING".into(), high.value(i)));
        }
    }
    if city == "austin" {
        for b in read("halsted_5city/austin/noaa_guidance.parquet") {
            let (model, high) = (column(&b, "model").as_string::<i32>(), column(&b, "peak_window_max_f"));
            let high = high.as_primitive::<Float64Type>();
            let run = column(&b, "run_datetime_utc").as_primitive::<TimestampNanosecondType>();
            for i in (0..b.num_rows()).filter(|&i| high.is_valid(i)) {
                let day = date(column(&b, "target_date"), i);
                // Only the D−1 12Z run, published before the evening cutoff.
                let d_1_12z = (day - Duration::days(1)).and_hms_opt(12, 0, 0).unwrap().and_utc();
                if run.value(i) != d_1_12z.timestamp_nanos_opt().unwrap() {
                    continue;
                }
                out.entry(day).or_default().push((model.value(i).to_uppercase(), high.value(i)));
            }
        }
    }
    out
}

#[test]
fn on_real_highs_the_distribution_beats_the_best_single_source_and_is_reliable() {
    let method = Method::default();
    let mut reliability = Reliability::default();
    let mut report = Vec::new();
    for city in CITIES {
        let settled = settlements(city);
        let issued = forecasts(city);
        let days: Vec<Verified> = issued
            .iter()
            .filter_map(|(d, f)| Some(Verified { date: *d, forecasts: f.clone(), settled: *settled.get(d)? }))
            .collect();
        let settled_days: Vec<(NaiveDate, f64)> = settled.iter().map(|(d, v)| (*d, *v)).collect();
        // Mean ignorance of: ours, the best single source's Gaussian, climatology, the
        // equal-weight fraction.
        let (mut sums, mut n) = ([0.0f64; 4], 0usize);
        for (i, day) in days.iter().enumerate() {
            // Known at D−1 18:00: highs settled up to D−2.
            let cut = day.date - Duration::days(2);
            let known = days[..i].partition_point(|h| h.date <= cut);
            let history = &days[..known];
            if history.len() < 60 {
                continue;
            }
            let seen = &settled_days[..settled_days.partition_point(|(d, _)| *d <= cut)];
            let (Some(gauss), Some(clim), Some(fraction)) = (
                best_single_gaussian(history, &day.forecasts),
                climatology(seen, day.date, 15),
                equal_weight_fraction(&day.forecasts),
            ) else {
                continue;
            };
            let (d, _) = method.distribution(history, day.date, &day.forecasts).unwrap();
            let high = day.settled as i32;
            for (sum, dist) in sums.iter_mut().zip([&d, &gauss, &clim, &fraction]) {
                *sum += ignorance(dist, high);
            }
            n += 1;
            reliability.add_ladder(&d, &Ladder::around(d.quantile(0.5), 2, 4), high);
        }
        let [ours, gauss, clim, fraction] = sums.map(|s| s / n as f64);
        report.push(format!(
            "{city}: {n} days, ignorance {ours:.3} bits; best single source's Gaussian {gauss:.3}, \
             climatology {clim:.3}, equal-weight fraction {fraction:.3}"
        ));
        assert!(n > 900, "{city}: {n} days scored");
        assert!(ours < gauss && ours < clim && ours < fraction, "{}", report.join("; "));
    }
    let bins = reliability.bins();
    for b in bins.iter().filter(|b| b.n >= 100) {
        assert!((b.observed - b.forecast).abs() <= 0.07, "{b:?} ({})", report.join("; "));
    }
    assert!(bins.iter().filter(|b| b.n >= 100).count() >= 4, "{bins:?}");
    println!("{}", report.join("\n"));
}

/// The api.weather.gov point forecast for Los Angeles ("High near N"), logged by a trader
/// several times a day, against the CLILAX high. The log's `forecast_time` carries no zone:
/// read as Pacific local time, which errs early whatever zone it was written in (UTC
/// readings are later than Pacific ones), so no fetch after the cutoff is used.
#[test]
fn on_the_nws_point_forecast_for_los_angeles_too() {
    let path = fixture("history/nws_point_forecast_lax/lax_nws_forecast_log.csv");
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (kind, target, fetched, predicted, actual) =
        (at("forecast_or_actual"), at("target_date"), at("forecast_time"), at("predicted_high"), at("actual_high"));
    let mut highs: BTreeMap<NaiveDate, f64> = BTreeMap::new();
    // Per target day: the latest fetch by 18:00 the day before.
    let mut latest: BTreeMap<NaiveDate, (chrono::NaiveDateTime, f64)> = BTreeMap::new();
    for row in reader.records() {
        let row = row.unwrap();
        let Ok(day) = NaiveDate::parse_from_str(&row[target], "%Y-%m-%d") else { continue };
        match &row[kind] {
            "actual" => {
                if let Ok(v) = row[actual].parse::<f64>() {
                    highs.insert(day, v);
                }
            }
            "forecast" => {
                let (Ok(t), Ok(v)) = (
                    chrono::NaiveDateTime::parse_from_str(&row[fetched], "%Y-%m-%d %H:%M:%S"),
                    row[predicted].parse::<f64>(),
                ) else {
                    continue;
                };
                let cutoff = (day - Duration::days(1)).and_hms_opt(18, 0, 0).unwrap();
                if t <= cutoff && latest.get(&day).is_none_or(|(held, _)| t > *held) {
                    latest.insert(day, (t, v));
                }
            }
            _ => {}
        }
    }
    let days: Vec<Verified> = latest
        .iter()
        .filter_map(|(d, (_, f))| {
            Some(Verified { date: *d, forecasts: vec![("NWS-POINT".into(), *f)], settled: *highs.get(d)? })
        })
        .collect();
    let method = Method::default();
    let (mut ours, mut baseline, mut n) = (0.0, 0.0, 0usize);
    for (i, day) in days.iter().enumerate() {
        let known = days[..i].partition_point(|h| h.date <= day.date - Duration::days(2));
        let history = &days[..known];
        let Some(gauss) = best_single_gaussian(history, &day.forecasts) else { continue };
        let (d, _) = method.distribution(history, day.date, &day.forecasts).unwrap();
        ours += ignorance(&d, day.settled as i32);
        baseline += ignorance(&gauss, day.settled as i32);
        n += 1;
    }
    println!(
        "los angeles, NWS point forecast: {n} days, ignorance {:.3} against {:.3}",
        ours / n as f64,
        baseline / n as f64
    );
    assert!(n >= 60, "{n} days scored of {}", days.len());
    assert!(ours < baseline, "{ours} against {baseline} over {n} days");
}

/// Daily high/low forecasts reach the lake by `wxlake ingest` and by POST, each row
/// available from its `issued_at` (never after wxlake had it), and `as_of` sees them so.
#[tokio::test]
async fn daily_forecasts_are_known_from_their_issuance_by_either_door() {
    use wxlake::ingest::{ingest_bytes, Format, IngestOptions, Summary};
    let app = crate::http::App::new().await; // its clock: 2026-03-08T18:00:00Z
    let lake = app.state.live.lake.clone();
    let csv = "source,station_code,issued_at,date,high,low,units\n\
               NWS-POINT,KNYC,2026-03-07T20:05:00Z,2026-03-09,51,38,f\n\
               ACME,EGLC,2026-03-08T06:00:00+01:00,2026-03-09,12.5,,c\n\
               GFS,KNYC,2026-03-07T20:05:00Z,2026-03-09,51,38,f\n";
    // The backfill: a file of two good rows and a model's name refused on its line.
    let mut s = Summary::default();
    ingest_bytes(&lake, Format::DailyForecasts, "daily.csv", csv.as_bytes(), &IngestOptions::default(), &mut s)
        .await
        .unwrap();
    assert_eq!((s.stored, s.rejected, s.first_rejects[0].line), (2, 1, 4), "{s}");
    assert!(s.first_rejects[0].reason.contains("is a model"), "{s}");
    // Over HTTP: one more issuance (at 17:30, received at 18:00) and one claiming a time
    // after its receipt (known only from then), and the first row again (a duplicate).
    let live = "source,station_code,issued_at,date,high,low,units\n\
                NWS-POINT,KNYC,2026-03-08T17:30:00Z,2026-03-09,53,39,f\n\
                NWS-POINT,KNYC,2026-03-08T19:00:00Z,2026-03-10,55,40,f\n\
                NWS-POINT,KNYC,2026-03-07T20:05:00Z,2026-03-09,51,38,f\n";
    let (status, body) = app.ingest("daily-forecasts", "", live).await;
    assert!(status.is_success(), "{status}: {body}");
    app.state.live.flush().await.unwrap();
    let got = crate::support::rows(
        &lake,
        "SELECT source, issued_at, date, high, low, units, available_at FROM daily_forecasts ORDER BY issued_at",
    )
    .await;
    let expected = [
        ["NWS-POINT", "2026-03-07T20:05:00Z", "2026-03-09", "51.0", "38.0", "f", "2026-03-07T20:05:00Z"],
        ["ACME", "2026-03-08T05:00:00Z", "2026-03-09", "12.5", "", "c", "2026-03-08T05:00:00Z"],
        ["NWS-POINT", "2026-03-08T17:30:00Z", "2026-03-09", "53.0", "39.0", "f", "2026-03-08T17:30:00Z"],
        ["NWS-POINT", "2026-03-08T19:00:00Z", "2026-03-10", "55.0", "40.0", "f", "2026-03-08T18:00:00Z"],
    ];
    assert_eq!(got, expected);
    let at = |t: &str| {
        let (lake, q) = (lake.clone(), format!("SELECT count(*) FROM as_of('daily_forecasts', '{t}')"));
        async move { crate::support::scalar(&lake, &q).await }
    };
    assert_eq!(at("2026-03-07T20:04:59Z").await, "0");
    assert_eq!(at("2026-03-08T17:30:00Z").await, "3");
    assert_eq!(at("2026-03-08T18:00:00Z").await, "4");
}
