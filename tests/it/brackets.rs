//! The bracket distributions judged on real history (data/real/history, SOURCES.md): real
//! official highs with real forecasts issued before each day. Each day is forecast at
//! D−1 18:00 local from what was known then (forecasts issued by then, highs settled by
//! then: days up to D−2), never later, and scored against the settled high.

use std::collections::BTreeMap;
use std::fs::File;
use std::sync::Arc;

use chrono::{Duration, NaiveDate};
use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Date32Type, Float64Type, Int64Type, TimestampNanosecondType};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use wxlake::brackets::baselines::{best_single_gaussian, climatology, equal_weight_fraction};
use wxlake::brackets::scores::{ignorance, Reliability};
use wxlake::brackets::{History, Ladder, Method, Verified};

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
            .filter_map(|(d, f)| {
                let forecasts = f.iter().map(|(n, v)| (Arc::from(n.as_str()), *v)).collect();
                Some(Verified { date: *d, forecasts, settled: *settled.get(d)?, running: None })
            })
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
            let (names, values): (Vec<&str>, Vec<f64>) = day.forecasts.iter().map(|(n, v)| (&**n, *v)).unzip();
            let history = History::of(history, &names);
            let (Some(gauss), Some(clim), Some(fraction)) = (
                best_single_gaussian(&history, &values),
                climatology(seen, day.date, 15),
                equal_weight_fraction(&values),
            ) else {
                continue;
            };
            let (d, _) = method.distribution(&history, day.date, &day.forecasts).unwrap();
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
    for b in &bins {
        println!(
            "reliability {:.1}-{:.1}: n {}, forecast {:.3}, observed {:.3}",
            b.lo, b.hi, b.n, b.forecast, b.observed
        );
    }
}

/// The api.weather.gov point forecast for Los Angeles ("High near N"), logged by a trader
/// several times a day, against the CLILAX high. The log's `forecast_time` carries no zone:
/// read as Pacific local time, which errs early whatever zone it was written in (UTC
/// readings are later than Pacific ones), so no fetch after the cutoff is used.
#[test]
fn on_the_nws_point_forecast_for_los_angeles_too() {
    use chrono::TimeZone;
    let log = lax_log();
    // Per target day: the latest fetch by 18:00 Pacific the day before.
    let cutoff = |day: NaiveDate| {
        let evening = (day - Duration::days(1)).and_hms_opt(18, 0, 0).unwrap();
        chrono_tz::America::Los_Angeles.from_local_datetime(&evening).earliest().unwrap().with_timezone(&chrono::Utc)
    };
    let mut latest: BTreeMap<NaiveDate, (chrono::DateTime<chrono::Utc>, f64)> = BTreeMap::new();
    for (day, issued, v) in &log.forecasts {
        if *issued <= cutoff(*day) && latest.get(day).is_none_or(|(held, _)| issued > held) {
            latest.insert(*day, (*issued, *v));
        }
    }
    let highs: BTreeMap<NaiveDate, f64> = log.highs.iter().map(|(d, h)| (*d, f64::from(*h))).collect();
    let days: Vec<Verified> = latest
        .iter()
        .filter_map(|(d, (_, f))| {
            Some(Verified {
                date: *d,
                forecasts: vec![("NWS-POINT".into(), *f)],
                settled: *highs.get(d)?,
                running: None,
            })
        })
        .collect();
    let method = Method::default();
    let (mut ours, mut baseline, mut n) = (0.0, 0.0, 0usize);
    for (i, day) in days.iter().enumerate() {
        let known = days[..i].partition_point(|h| h.date <= day.date - Duration::days(2));
        let history = History::of(&days[..known], &["NWS-POINT"]);
        let Some(gauss) = best_single_gaussian(&history, &[day.forecasts[0].1]) else { continue };
        let (d, _) = method.distribution(&history, day.date, &day.forecasts).unwrap();
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

/// The LAX point-forecast log as the lake would hold it: each fetch a daily forecast
/// issued when it was logged (read as Pacific time), each actual a final CLI issued the
/// next morning (07:00 PST).
struct LaxLog {
    /// (target day, issued at, high)
    forecasts: Vec<(NaiveDate, chrono::DateTime<chrono::Utc>, f64)>,
    highs: BTreeMap<NaiveDate, i32>,
}

fn lax_log() -> LaxLog {
    use chrono::TimeZone;
    let path = fixture("history/nws_point_forecast_lax/lax_nws_forecast_log.csv");
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (kind, target, fetched, predicted, actual) =
        (at("forecast_or_actual"), at("target_date"), at("forecast_time"), at("predicted_high"), at("actual_high"));
    let mut log = LaxLog { forecasts: Vec::new(), highs: BTreeMap::new() };
    for row in reader.records() {
        let row = row.unwrap();
        let Ok(day) = NaiveDate::parse_from_str(&row[target], "%Y-%m-%d") else { continue };
        match &row[kind] {
            "actual" => {
                if let Ok(v) = row[actual].parse::<i32>() {
                    log.highs.insert(day, v);
                }
            }
            "forecast" => {
                let (Ok(t), Ok(v)) = (
                    chrono::NaiveDateTime::parse_from_str(&row[fetched], "%Y-%m-%d %H:%M:%S"),
                    row[predicted].parse::<f64>(),
                ) else {
                    continue;
                };
                let issued = chrono_tz::America::Los_Angeles.from_local_datetime(&t).earliest().unwrap();
                log.forecasts.push((day, issued.with_timezone(&chrono::Utc), v));
            }
            _ => {}
        }
    }
    log
}

/// Midnight Pacific Standard Time starting `day`, in UTC.
fn lst_midnight(day: NaiveDate) -> chrono::DateTime<chrono::Utc> {
    day.and_hms_opt(8, 0, 0).unwrap().and_utc()
}

/// `brackets.php` as of D−1 18:00 LST answers from exactly what was known then: the same
/// distribution the method gives on the log read independently here (the latest fetch by
/// then; each past day's latest fetch by its own D−1 18:00; only days whose CLI was out),
/// never a later fetch or settlement.
#[tokio::test]
async fn brackets_php_answers_from_what_was_known_at_the_asked_time() {
    use wxlake::decode::types::{DailyKind, DailyReport};
    use wxlake::ingest::{ingest_bytes, Format, IngestOptions, Summary};
    let app = crate::http::App::new().await;
    app.clock.set(chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 9, 1, 0, 0, 0).unwrap());
    let lake = app.state.live.lake.clone();
    let log = lax_log();
    let mut csv = String::from("source,station_code,issued_at,date,high,low,units\n");
    for (day, issued, high) in &log.forecasts {
        csv += &format!("NWS-POINT,KLAX,{},{day},{high},,f\n", wxlake::time::fmt_iso_utc(*issued));
    }
    let mut s = Summary::default();
    ingest_bytes(&lake, Format::DailyForecasts, "lax.csv", csv.as_bytes(), &IngestOptions::default(), &mut s)
        .await
        .unwrap();
    assert_eq!(s.rejected, 0, "{s}");
    let cli_issued = |day: NaiveDate| lst_midnight(day) + Duration::hours(31);
    let reports: Vec<DailyReport> = log
        .highs
        .iter()
        .map(|(day, high)| {
            let mut r = DailyReport::blank(DailyKind::Cli, "KLAX", *day);
            r.max_f = Some(*high);
            r.issued_at = Some(cli_issued(*day));
            r.raw = format!("CLILAX {day} MAXIMUM {high}");
            r
        })
        .collect();
    lake.write(reports).await.unwrap();

    // Independently: what was known at D−1 18:00 LST.
    let known = |day: NaiveDate, t: chrono::DateTime<chrono::Utc>| {
        log.forecasts.iter().filter(|(d, i, _)| *d == day && *i <= t).max_by_key(|(_, i, _)| *i).map(|f| f.2)
    };
    let days: Vec<NaiveDate> = log.highs.keys().copied().filter(|d| known(*d, lst_midnight(*d)).is_some()).collect();
    let asked: Vec<NaiveDate> = days.iter().rev().take(12).copied().collect();
    for day in asked {
        let t = lst_midnight(day) - Duration::hours(6);
        let Some(today) = known(day, t) else { continue };
        let history: Vec<Verified> = days
            .iter()
            .filter(|d| **d < day && cli_issued(**d) <= t)
            .filter_map(|d| {
                let f = known(*d, lst_midnight(*d) - Duration::hours(6))?;
                Some(Verified {
                    date: *d,
                    forecasts: vec![("NWS-POINT".into(), f)],
                    settled: f64::from(log.highs[d]),
                    running: None,
                })
            })
            .collect();
        let (expected, fit) = Method::default().distribution_from(&history, day, &[("NWS-POINT", today)]).unwrap();
        let uri = format!(
            "/api/v2/brackets.php?station_code=KLAX&date={day}&target=high&as_of={}",
            wxlake::time::fmt_iso_utc(t)
        );
        let (status, v) = app.get(&uri).await;
        assert_eq!(status, 200, "{uri}: {v}");
        let got: Vec<(i64, f64)> = v["distribution"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["value"].as_i64().unwrap(), e["p"].as_f64().unwrap()))
            .collect();
        let want: Vec<(i64, f64)> = expected.values().map(|(v, p)| (i64::from(v), p)).collect();
        assert_eq!(got.len(), want.len(), "{day}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g.0 == w.0 && (g.1 - w.1).abs() < 1e-12, "{day}: {g:?} against {w:?}");
        }
        assert_eq!(v["history_days"], history.len(), "{day}");
        assert_eq!(v["lead_days"], 1);
        assert_eq!(v["inputs"][0]["source"], "NWS-POINT");
        assert_eq!(v["inputs"][0]["forecast"], today);
        assert!((v["inputs"][0]["bias"].as_f64().unwrap() - fit.sources[0].bias).abs() < 1e-12);
        assert_eq!(v["as_of"], wxlake::time::fmt_iso_utc(t));
        let total: f64 = v["brackets"].as_array().unwrap().iter().map(|b| b["p"].as_f64().unwrap()).sum();
        assert!((total - 1.0).abs() < 1e-9, "{v}");
        assert_eq!(v["brackets"].as_array().unwrap().len(), 6, "two tails and four 2-degree brackets: {v}");
        assert!(v["floor"].is_null() && v["settled"].is_null(), "{v}");
        let q: Vec<i64> = ["p5", "p10", "p25", "p50", "p75", "p90", "p95"]
            .iter()
            .map(|k| v["quantiles"][k].as_i64().unwrap())
            .collect();
        assert!(q.windows(2).all(|w| w[0] <= w[1]), "{q:?}");
    }
    // Before any fetch of a day: nothing to answer from.
    let first = log.forecasts.iter().map(|f| f.1).min().unwrap();
    let day = log.forecasts.iter().find(|f| f.1 == first).unwrap().0;
    let uri = format!(
        "/api/v2/brackets.php?station_code=KLAX&date={day}&target=high&as_of={}",
        wxlake::time::fmt_iso_utc(first - Duration::seconds(1))
    );
    let (status, v) = app.get(&uri).await;
    assert_eq!(status, 404, "{v}");
    assert!(v["error"].as_str().unwrap().starts_with("No forecast of KLAX"), "{v}");
    // A bad ladder, a missing target, a tier without the analytics endpoints.
    for (uri, error) in [
        ("/api/v2/brackets.php?station_code=KLAX&target=high&brackets=80-81,%3E%3D82", "Invalid brackets"),
        ("/api/v2/brackets.php?station_code=KLAX", "Missing"),
        ("/api/v2/brackets.php?station_code=KLAX&target=middle", "Invalid target: middle"),
        // The clock stands at 2026-09-01: the 5th starts more than 3 days (the verified
        // leads) later.
        (
            "/api/v2/brackets.php?station_code=KLAX&target=high&date=2026-09-05",
            "date 2026-09-05 starts more than 3 days",
        ),
    ] {
        let (status, v) = app.get(uri).await;
        assert_eq!(status, 400, "{uri}: {v}");
        assert!(v["error"].as_str().unwrap().starts_with(error), "{uri}: {v}");
    }
    let (s, _, _) = app
        .call(
            "GET",
            "/api/v2/brackets.php?station_code=KLAX&target=high",
            Some(app.key(wxlake::access::keys::Tier::Professional)),
            "",
        )
        .await;
    assert_eq!(s, 403);
}

/// Today, the running high is a floor and the running low a ceiling: no settlement value
/// beyond them keeps any probability, whatever the forecasts said; the ladder follows.
#[tokio::test]
async fn todays_running_extremes_bound_the_distribution() {
    let app = crate::http::App::new().await; // 2026-03-08T18:00:00Z
                                             // Forecasts far on the other side of the day's readings (a high of 40 °F against 50).
    let csv = "source,station_code,issued_at,date,high,low,units\n\
               ACME,KNYC,2026-03-07T20:00:00Z,2026-03-08,40,,f\n\
               ACME,KNYC,2026-03-07T20:00:01Z,2026-03-08,,55,f\n";
    let (status, body) = app.ingest("daily-forecasts", "", csv).await;
    assert!(status.is_success(), "{status}: {body}");
    let metars = "KNYC 081451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00781061\n\
                  KNYC 081551Z 28010KT 10SM CLR 10/M06 A3020 RMK AO2 SLP228 T01001061\n";
    let (status, body) = app.ingest("metar", "month=2026-03", metars).await;
    assert!(status.is_success(), "{status}: {body}");
    // The forecasts are read from the lake: a live input counts from the flush on.
    app.state.live.flush().await.unwrap();
    let (_, svc) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws").await;
    for (target, bound) in [("high", "floor"), ("low", "ceiling")] {
        let uri = format!(
            "/api/v2/brackets.php?station_code=KNYC&target={target}&logic=nws&brackets=%3C%3D45,46-49,50-53,%3E%3D54"
        );
        let (status, v) = app.get(&uri).await;
        assert_eq!(status, 200, "{uri}: {v}");
        let observed = svc[format!("svc_{target}")].as_f64().unwrap_or_else(|| panic!("{svc}")) as i64;
        assert_eq!(v[bound].as_i64(), Some(observed), "{v}");
        for e in v["distribution"].as_array().unwrap() {
            let (value, p) = (e["value"].as_i64().unwrap(), e["p"].as_f64().unwrap());
            let beyond = if target == "high" { value < observed } else { value > observed };
            assert!(!beyond || p == 0.0, "{target}: {value} has {p} beyond {observed}");
        }
        let labels: Vec<&str> =
            v["brackets"].as_array().unwrap().iter().map(|b| b["label"].as_str().unwrap()).collect();
        assert_eq!(labels, ["<=45", "46-49", "50-53", ">=54"]);
        // As of a moment: before the reports were received nothing bounded the day; a
        // second after, the same bound as live.
        app.clock.set(chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 3, 8, 18, 5, 0).unwrap());
        for (at, expected) in [("2026-03-08T17:59:59Z", None), ("2026-03-08T18:00:01Z", Some(observed))] {
            let (status, v) = app.get(&format!("{uri}&as_of={at}")).await;
            assert_eq!(status, 200, "{v}");
            assert_eq!(v[bound].as_i64(), expected, "{at}: {v}");
        }
    }
}

/// The rows behind an answer are held in memory (`bracket_odds::held`): a second answer
/// reads nothing from the lake, so a row written behind the service's back is not seen yet
/// (another process's rows count after the held entry's TTL), while a row the service
/// stores itself is in the very next answer, with everything written before it; and a held
/// entry still answers as of a moment before a row it holds became known without it.
#[tokio::test]
async fn brackets_php_holds_its_rows_until_the_service_stores_new_ones() {
    use wxlake::ingest::{ingest_bytes, Format, IngestOptions, Summary};
    let app = crate::http::App::new().await; // 2026-03-08T18:00:00Z
    let header = "source,station_code,issued_at,date,high,low,units\n";
    let sources = |v: &serde_json::Value| -> Vec<String> {
        let mut s: Vec<String> =
            v["inputs"].as_array().unwrap().iter().map(|i| i["source"].as_str().unwrap().to_string()).collect();
        s.sort();
        s
    };
    let uri = "/api/v2/brackets.php?station_code=KNYC&target=high&date=2026-03-09";
    let (status, body) =
        app.ingest("daily-forecasts", "", &format!("{header}ACME,KNYC,2026-03-08T10:00:00Z,2026-03-09,50,,f\n")).await;
    assert!(status.is_success(), "{status}: {body}");
    app.state.live.flush().await.unwrap();
    let (status, first) = app.get(uri).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(sources(&first), ["ACME"]);

    // Behind the service's back: straight into the lake.
    let lake = app.state.live.lake.clone();
    let behind = format!("{header}BETA,KNYC,2026-03-08T11:00:00Z,2026-03-09,52,,f\n");
    let mut s = Summary::default();
    ingest_bytes(&lake, Format::DailyForecasts, "beta.csv", behind.as_bytes(), &IngestOptions::default(), &mut s)
        .await
        .unwrap();
    assert_eq!((s.rejected, s.stored), (0, 1), "{s}");
    let (_, held) = app.get(uri).await;
    assert_eq!(sources(&held), ["ACME"], "the second answer read the lake again: {held}");
    assert_eq!(held["distribution"], first["distribution"]);

    // Through the service: the next answer reads the lake again and has both.
    let csv = format!("{header}GAMMA,KNYC,2026-03-08T12:00:00Z,2026-03-09,48,,f\n");
    let (status, body) = app.ingest("daily-forecasts", "", &csv).await;
    assert!(status.is_success(), "{status}: {body}");
    app.state.live.flush().await.unwrap();
    let (_, now) = app.get(uri).await;
    assert_eq!(sources(&now), ["ACME", "BETA", "GAMMA"], "{now}");
    // The same entry as of 11:30: GAMMA (issued 12:00) was not known yet.
    let (_, then) = app.get(&format!("{uri}&as_of=2026-03-08T11:30:00Z")).await;
    assert_eq!(sources(&then), ["ACME", "BETA"], "{then}");
}

/// A demo lake of `days` days of KNYC without one-minute data, and the API over it on a
/// manual clock set to now.
async fn knyc_demo(
    days: &str,
) -> (tempfile::TempDir, wxlake::lake::Lake, std::sync::Arc<dyn wxlake::clock::Clock>, crate::support::Api) {
    demo(days, "KNYC").await
}

/// [`knyc_demo`] of the comma-separated `stations`.
async fn demo(
    days: &str,
    stations: &str,
) -> (tempfile::TempDir, wxlake::lake::Lake, std::sync::Arc<dyn wxlake::clock::Clock>, crate::support::Api) {
    use crate::support::{open_live, stderr, wxlake, Api};
    let dir = tempfile::tempdir().unwrap();
    let lake_dir = dir.path().join("lake");
    let out = wxlake(&lake_dir, &["demo", "--days", days, "--stations", stations, "--no-onemin"]);
    assert!(out.status.success(), "demo: {}", stderr(&out));
    let lake = wxlake::lake::Lake::open(&format!("file://{}", lake_dir.display())).await.unwrap();
    let clock: std::sync::Arc<dyn wxlake::clock::Clock> =
        std::sync::Arc::new(wxlake::clock::ManualClock::new(chrono::Utc::now()));
    let live = std::sync::Arc::new(open_live(&lake, &dir.path().join("state"), clock.clone()).await);
    let api = Api::over(live, &dir.path().join("state"));
    (dir, lake, clock, api)
}

/// Over a demo lake (models' runs through forecast_daily, their verified pairs): each
/// model's input is its latest run of the day available at the asked time, with that run's
/// summary of the day; a run published after an `as_of` is not used, the one before it is.
#[tokio::test]
async fn brackets_php_takes_each_models_latest_run_known_at_the_time() {
    use crate::support::rows;
    let (_dir, lake, clock, api) = knyc_demo("6").await;
    let now = clock.now();
    // Tomorrow in Local Standard Time (UTC−5 all year).
    let day = (now - Duration::hours(5)).date_naive() + Duration::days(1);
    let latest = |t: chrono::DateTime<chrono::Utc>| {
        let lake = lake.clone();
        async move {
            rows(
                &lake,
                &format!(
                    "SELECT model, run_time, high_f, available_at FROM forecast_daily f WHERE location_name = 'KNYC' \
                     AND tz_mode = 'standard' AND date = DATE '{day}' AND high_f IS NOT NULL \
                     AND available_at <= TIMESTAMP '{}' AND run_time = (SELECT max(run_time) FROM forecast_daily g \
                       WHERE g.model = f.model AND g.location_name = 'KNYC' AND g.tz_mode = 'standard' \
                       AND g.date = DATE '{day}' AND g.high_f IS NOT NULL AND g.available_at <= TIMESTAMP '{}') \
                     ORDER BY model",
                    wxlake::time::fmt_iso_utc(t),
                    wxlake::time::fmt_iso_utc(t)
                ),
            )
            .await
        }
    };
    let inputs = |v: &serde_json::Value| -> BTreeMap<String, (String, f64)> {
        v["inputs"]
            .as_array()
            .unwrap()
            .iter()
            // The models' inputs (the NWS hourly and the demo's point forecast are others).
            .filter(|i| wxlake::models::MODEL_NAMES.contains(&i["source"].as_str().unwrap_or("")))
            .map(|i| {
                let source = i["source"].as_str().unwrap().to_string();
                (source, (i["run"].as_str().unwrap().to_string(), i["forecast"].as_f64().unwrap()))
            })
            .collect()
    };
    let expected = |rows: &[Vec<String>]| -> BTreeMap<String, (String, f64)> {
        rows.iter().map(|r| (r[0].clone(), (r[1].clone(), r[2].parse::<f64>().unwrap()))).collect()
    };
    let uri = format!("/api/v2/brackets.php?station_code=KNYC&target=high&date={day}");
    let (_, live_answer) = api.get(&uri).await;
    let now_rows = latest(now).await;
    assert!(now_rows.len() >= 5, "the demo's models forecast tomorrow: {now_rows:?}");
    assert_eq!(inputs(&live_answer), expected(&now_rows), "{live_answer}");
    assert!(live_answer["history_days"].as_u64().unwrap() > 0, "{live_answer}");
    assert!(live_answer["inputs"].as_array().unwrap().iter().any(|i| i["n"].as_f64().unwrap() > 0.0), "{live_answer}");
    assert_eq!(live_answer["market"]["series"], "KXHIGHNY");
    // The demo's NWS point forecast counts as a source of its own, with its verified days,
    // once it is issued for the day (16:00 LST the day before: not yet before then).
    let point = live_answer["inputs"].as_array().unwrap().iter().find(|i| i["source"] == "NWS-POINT");
    let issued = rows(
        &lake,
        &format!(
            "SELECT count(*) FROM daily_forecasts WHERE source = 'NWS-POINT' AND station_code = 'KNYC' \
             AND date = DATE '{day}' AND available_at <= TIMESTAMP '{}'",
            wxlake::time::fmt_iso_utc(now)
        ),
    )
    .await;
    match issued[0][0].as_str() {
        "0" => assert!(point.is_none(), "{live_answer}"),
        _ => assert!(point.is_some_and(|p| p["n"].as_f64().unwrap() > 0.0), "{live_answer}"),
    }
    // A second before the newest run became available, that model's previous run answers.
    let newest = now_rows.iter().max_by_key(|r| r[3].clone()).unwrap();
    let before = wxlake::time::parse_utc(&newest[3]).unwrap() - Duration::seconds(1);
    let (_, earlier) = api.get(&format!("{uri}&as_of={}", wxlake::time::fmt_iso_utc(before))).await;
    let then = expected(&latest(before).await);
    assert_eq!(inputs(&earlier), then, "{earlier}");
    assert_ne!(then.get(&newest[0]).map(|r| &r.0), Some(&newest[1]), "{then:?}");
}

/// The `bracket_scores` job scores exactly what `brackets.php` would have answered at each
/// checkpoint (no look-ahead: the same inputs chosen as known then, the same floor from the
/// observations known then), against the day's settled value; `bracket_accuracy.php` is
/// the table summed, and as of a moment before any day settled it counts nothing.
#[tokio::test]
async fn bracket_scores_are_what_brackets_php_answered_at_each_checkpoint() {
    use crate::support::rows;
    // A month: enough past days for the same-day step at the last days' checkpoints. Two
    // stations two hours apart, read by the job in one statement per table.
    let (_dir, lake, _clock, api) = demo("30", "KNYC,KDEN").await;

    // Every forecast's ladder sums to 1 and holds the settled value in exactly one bracket.
    let forecasts = rows(
        &lake,
        "SELECT date, target, checkpoint, forecaster, sum(p), sum(CAST(hit AS INT)), count(ignorance), \
         min(settled), max(settled), station_code FROM bracket_scores \
         GROUP BY date, target, checkpoint, forecaster, station_code",
    )
    .await;
    assert!(forecasts.len() >= 40, "days × targets × checkpoints × forecasters: {forecasts:?}");
    let stations: std::collections::BTreeSet<&str> = forecasts.iter().map(|f| f[9].as_str()).collect();
    assert_eq!(stations, ["KDEN", "KNYC"].into(), "both stations are scored");
    for f in &forecasts {
        assert!((f[4].parse::<f64>().unwrap() - 1.0).abs() < 1e-9, "{f:?}");
        assert_eq!((f[5].as_str(), f[6].as_str()), ("1", "1"), "one bracket settles, one row scores: {f:?}");
        assert_eq!(f[7], f[8], "{f:?}");
    }
    let checkpoints: std::collections::BTreeSet<&str> = forecasts.iter().map(|f| f[2].as_str()).collect();
    assert_eq!(checkpoints.len(), 6, "{checkpoints:?}");
    let baselines: std::collections::BTreeSet<&str> = forecasts.iter().map(|f| f[3].as_str()).collect();
    assert!(baselines.contains("wxlake") && baselines.contains("equal_weight"), "{baselines:?}");

    // The settled value is the final climate report's.
    let settled = rows(
        &lake,
        "SELECT s.date, s.target, min(s.settled), min(CAST(CASE WHEN s.target = 'high' THEN r.high_f ELSE r.low_f END AS INT)) \
         FROM bracket_scores s JOIN as_of('reports', now()) r ON r.station_code = s.station_code \
         AND r.report_date = s.date AND r.kind = 'cli' AND r.is_final GROUP BY s.station_code, s.date, s.target",
    )
    .await;
    assert!(!settled.is_empty());
    for s in &settled {
        assert_eq!(s[2], s[3], "{s:?}");
    }

    // Each of our forecasts of the last three settled days is brackets.php's as of its
    // checkpoint, on the same ladder (the day's floor and the same-day step included).
    let ours = rows(
        &lake,
        "SELECT date, target, checkpoint, checkpoint_at, string_agg(bracket, ',' ORDER BY bracket_lo NULLS FIRST), \
         string_agg(CAST(p AS VARCHAR), ',' ORDER BY bracket_lo NULLS FIRST), station_code FROM bracket_scores \
         WHERE forecaster = 'wxlake' AND date > (SELECT max(date) - INTERVAL '3 days' FROM bracket_scores) \
         GROUP BY station_code, date, target, checkpoint, checkpoint_at ORDER BY station_code, date, target, checkpoint",
    )
    .await;
    assert!(ours.len() >= 48, "{ours:?}");
    let (mut floors, mut nws_checked, mut same_day) = (0, 0, 0);
    for r in &ours {
        let at = wxlake::time::parse_utc(&r[3]).unwrap();
        let ladder = r[4].replace('<', "%3C").replace('>', "%3E").replace('=', "%3D");
        let uri = format!(
            "/api/v2/brackets.php?station_code={}&date={}&target={}&logic=nws&brackets={ladder}&as_of={}",
            r[6],
            r[0],
            r[1],
            wxlake::time::fmt_iso_utc(at)
        );
        let (_, v) = api.get(&uri).await;
        let served: Vec<f64> = v["brackets"].as_array().unwrap().iter().map(|b| b["p"].as_f64().unwrap()).collect();
        let scored: Vec<f64> = r[5].split(',').map(|p| p.parse().unwrap()).collect();
        assert_eq!(served.len(), scored.len(), "{uri}: {v}");
        for (a, b) in served.iter().zip(&scored) {
            assert!((a - b).abs() < 1e-9, "{uri}: served {served:?}, scored {scored:?}");
        }
        floors += usize::from(!v["floor"].is_null() || !v["ceiling"].is_null());
        // The same-day step applies within the day only, with its alike past days.
        if let Some(n) = v["same_day_days"].as_f64() {
            assert!(
                r[2].starts_with("D ") && n >= wxlake::brackets::intraday::Intraday::default().min_days,
                "{uri}: {v}"
            );
            same_day += 1;
        }
        // The NWS input is the version `as_of('nws_hourly', ...)` has in force at the time
        // (or at the day's start, once the day began), its max (min) over the day.
        let day: chrono::NaiveDate = r[0].parse().unwrap();
        let tz = wxlake::catalog::Catalog::global().get(&r[6]).unwrap().timezone;
        let w = wxlake::time::day_window(tz, wxlake::time::DayClock::Standard, day);
        let at = wxlake::time::fmt_iso_utc(at.min(w.start));
        let agg = if r[1] == "high" { "max" } else { "min" };
        let version = rows(
            &lake,
            &format!(
                "SELECT max(generated_at), {agg}(temperature_f), min(start_time) <= TIMESTAMP '{}' \
                 AND max(end_time) >= TIMESTAMP '{}' FROM as_of('nws_hourly', '{at}') WHERE station_code = '{}' \
                 AND start_time >= TIMESTAMP '{}' AND start_time < TIMESTAMP '{}'",
                wxlake::time::fmt_iso_utc(w.start),
                wxlake::time::fmt_iso_utc(w.end),
                r[6],
                wxlake::time::fmt_iso_utc(w.start),
                wxlake::time::fmt_iso_utc(w.end)
            ),
        )
        .await;
        let nws = v["inputs"].as_array().unwrap().iter().find(|i| i["source"] == "NWS");
        match (&version[0][..], nws) {
            ([generated, value, covered], Some(i)) if covered == "true" => {
                assert_eq!(
                    wxlake::time::parse_utc(generated),
                    wxlake::time::parse_utc(i["run"].as_str().unwrap()),
                    "{uri}"
                );
                assert!((value.parse::<f64>().unwrap() - i["forecast"].as_f64().unwrap()).abs() < 1e-9, "{uri}: {v}");
                nws_checked += 1;
            }
            (found, i) => assert!(i.is_none() && found[2] != "true", "{uri}: as_of {found:?}, brackets.php {i:?}"),
        }
    }
    assert!(floors > 0, "the same-day checkpoints had a running extreme");
    assert!(same_day > 0, "a month of past days' hours sharpened some same-day odds");
    assert!(nws_checked > 0, "the demo's NWS versions were inputs");

    // bracket_accuracy.php: the table summed.
    let (_, v) = api.get("/api/v2/bracket_accuracy.php?station_code=KNYC").await;
    let ours_n = forecasts.iter().filter(|f| f[3] == "wxlake" && f[9] == "KNYC").count() as i64;
    assert_eq!(v["forecasts"].as_i64(), Some(ours_n), "{v}");
    assert_eq!(v["methods"], serde_json::json!([wxlake::brackets::METHOD]), "{v}");
    assert_eq!(v["checkpoints"].as_array().unwrap().len(), 6, "{v}");
    for c in v["checkpoints"].as_array().unwrap() {
        let fs = c["forecasters"].as_array().unwrap();
        assert_eq!(fs[0]["forecaster"], "wxlake");
        assert!(fs[0]["skill"].is_null() && fs.len() >= 2, "{c}");
        for f in &fs[1..] {
            let (ours, theirs) = (fs[0]["ignorance"].as_f64().unwrap(), f["ignorance"].as_f64().unwrap());
            // On the forecasts both made; ours is the same set when the baseline made all of them.
            if f["n"] == fs[0]["n"] {
                assert!((f["skill"]["ignorance_bits"].as_f64().unwrap() - (theirs - ours)).abs() < 1e-9, "{c}");
            }
        }
    }
    let wx = v["calibration"].as_array().unwrap().iter().find(|c| c["forecaster"] == "wxlake").unwrap();
    let brackets: i64 = wx["reliability"].as_array().unwrap().iter().map(|b| b["n"].as_i64().unwrap()).sum();
    let table =
        rows(&lake, "SELECT count(*) FROM bracket_scores WHERE forecaster = 'wxlake' AND station_code = 'KNYC'").await;
    assert_eq!(brackets.to_string(), table[0][0], "{wx}");
    let pit: i64 = wx["pit_histogram"].as_array().unwrap().iter().map(|n| n.as_i64().unwrap()).sum();
    assert_eq!(pit, ours_n, "{wx}");
    // As of a moment before the first day settled: nothing.
    let first = rows(&lake, "SELECT min(settled_at) FROM bracket_scores").await;
    let before = wxlake::time::parse_utc(&first[0][0]).unwrap() - Duration::seconds(1);
    let (_, v) = api.get(&format!("/api/v2/bracket_accuracy.php?as_of={}", wxlake::time::fmt_iso_utc(before))).await;
    assert_eq!((v["forecasts"].as_i64(), v["checkpoints"].as_array().map(Vec::len)), (Some(0), Some(0)), "{v}");
    for (uri, error) in [
        ("/api/v2/bracket_accuracy.php?target=middle", "Invalid target: middle"),
        ("/api/v2/bracket_accuracy.php?from=2026-05-02&to=2026-05-01", "from 2026-05-02 is after to 2026-05-01"),
        ("/api/v2/bracket_accuracy.php?from=May", "Invalid from: May"),
    ] {
        let (status, _, v) = api.get_any(uri).await;
        assert_eq!((status.as_u16(), v["error"].as_str()), (400, Some(error)), "{uri}: {v}");
    }
    chunks_score_what_one_chunk_scores(&lake).await;
}

/// A run of `bracket_scores` in chunks scores what each chunk scores alone: the history
/// the first chunk read serves the second, extended by the second's days (`PastReads`),
/// without changing a row.
async fn chunks_score_what_one_chunk_scores(lake: &wxlake::lake::Lake) {
    use wxlake::bracket_odds::inputs::PastReads;
    use wxlake::jobs::bracket_scores::bracket_forecasts;
    let specs = wxlake::jobs::job_set::embedded_specs().unwrap();
    let spec = wxlake::jobs::job_set::find(&specs, "bracket_scores").unwrap();
    let runtime = wxlake::lake::query::runtime_env(lake).unwrap();
    let ctx = wxlake::jobs::tables::job_session(lake, spec, runtime).await.unwrap();
    let days = crate::support::rows(lake, "SELECT min(date), max(date) FROM accuracy_pairs").await;
    let (first, last): (NaiveDate, NaiveDate) = (days[0][0].parse().unwrap(), days[0][1].parse().unwrap());
    let middle = first + Duration::days((last - first).num_days() / 2);
    let now = chrono::Utc::now();
    let sorted = |table: datafusion::datasource::MemTable| async move {
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.register_table("t", Arc::new(table)).unwrap();
        let batches = ctx.sql("SELECT * FROM t ORDER BY station_code, date, target, checkpoint, forecaster, bracket_lo NULLS FIRST, bracket").await.unwrap().collect().await.unwrap();
        datafusion::arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string()
    };
    let mut past = PastReads::default();
    let earlier = sorted(bracket_forecasts(&ctx, first, middle, now, &mut past).await.unwrap()).await;
    let later = sorted(bracket_forecasts(&ctx, middle + Duration::days(1), last, now, &mut past).await.unwrap()).await;
    let alone = sorted(
        bracket_forecasts(&ctx, middle + Duration::days(1), last, now, &mut PastReads::default()).await.unwrap(),
    )
    .await;
    assert!(earlier.lines().count() > 100 && later.lines().count() > 100, "{earlier}\n{later}");
    assert!(later == alone, "the second chunk's rows differ with the first's history:\n{later}\n{alone}");
}
