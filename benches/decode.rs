//! Decoder throughput on real reports: METAR core parser, containers, CLI and MOS; and
//! the bulk path of forecast CSV (one generated station-day of all 18 models).
//! Run: `cargo bench --bench decode`. Figures go in benches/README.md.

use chrono::{DateTime, Utc};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wxlake::decode::{climate_report, forecast_rows, metar, metar_container, mos, number};
use wxlake::demo::{generate_station, DemoConfig};

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{}/data/real/{rel}", env!("CARGO_MANIFEST_DIR"))).expect("fixture")
}

/// The report texts of the KCVG day (317 reports incl. 287 HF-METAR) and the KLNK LCD
/// (1,714 METAR/SPECI with T-groups, 6- and 24-hour groups).
/// Each text comes with its own time as the reference, as a container would pass it.
fn report_texts() -> Vec<(String, DateTime<Utc>)> {
    let mut out = Vec::new();
    for f in [
        "metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv",
        "lcd/LCD_KLNK_USW00014939_2023-01-01_2023-02-26_metric.csv",
    ] {
        let d = metar_container::decode_metar_input(&fixture(f), None);
        out.extend(d.records.into_iter().map(|m| (m.raw, m.time)));
    }
    out
}

fn bench_metar(c: &mut Criterion) {
    let texts = report_texts();
    let mut g = c.benchmark_group("metar");
    g.throughput(Throughput::Elements(texts.len() as u64));
    g.bench_function(BenchmarkId::new("parse_metar", texts.len()), |b| {
        b.iter(|| {
            let mut ok = 0usize;
            for (t, reference) in &texts {
                ok += metar::parse_metar(t, *reference).is_ok() as usize;
            }
            assert_eq!(ok, texts.len());
            ok
        })
    });
    let iem = fixture("metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv");
    g.throughput(Throughput::Elements(317));
    g.bench_function("iem_tsv_container", |b| b.iter(|| metar_container::decode_metar_input(&iem, None).records.len()));
    let lcd = fixture("lcd/LCD_KLNK_USW00014939_2023-01-01_2023-02-26_metric.csv");
    g.throughput(Throughput::Elements(1714));
    g.bench_function("lcd_container", |b| b.iter(|| metar_container::decode_metar_input(&lcd, None).records.len()));
    g.finish();
}

fn bench_reports(c: &mut Criterion) {
    let mut g = c.benchmark_group("products");
    let nyc = fixture("cli/CLINYC.txt");
    g.throughput(Throughput::Bytes(nyc.len() as u64));
    g.bench_function("cli", |b| b.iter(|| climate_report::decode_cli(&nyc).records.len()));
    let nbs = fixture("forecast/mos/NBSUSA.txt");
    g.throughput(Throughput::Bytes(nbs.len() as u64));
    g.bench_function("mos_nbs", |b| b.iter(|| mos::decode_mos(&nbs).records.len()));
    g.finish();
}

fn bench_forecasts(c: &mut Criterion) {
    let mut cfg = DemoConfig::ending_yesterday(Utc::now(), 1);
    cfg.stations = vec!["KNYC".into()];
    let csv = generate_station(&cfg, "KNYC").forecast_csv;
    let rows = forecast_rows::decode_forecast_csv(csv.as_bytes()).records.len();
    let mut g = c.benchmark_group("forecasts");
    g.throughput(Throughput::Elements(rows as u64));
    g.bench_function(BenchmarkId::new("forecast_csv", rows), |b| {
        b.iter(|| forecast_rows::decode_forecast_csv(csv.as_bytes()).records.len())
    });
    // The same file with one quoted header cell: the csv crate's reader instead of the
    // byte splitter that quote-free text takes.
    let quoted = csv.replacen("model,", "\"model\",", 1);
    assert_eq!(forecast_rows::decode_forecast_csv(quoted.as_bytes()).records.len(), rows);
    g.bench_function(BenchmarkId::new("forecast_csv_quoted", rows), |b| {
        b.iter(|| forecast_rows::decode_forecast_csv(quoted.as_bytes()).records.len())
    });
    // The number cells of that file, through our decimal parser and through std's.
    let cells: Vec<&str> = csv
        .lines()
        .skip(1)
        .flat_map(|l| l.split(',').skip(2))
        .filter(|c| c.bytes().next().is_some_and(|b| b.is_ascii_digit() || b == b'-'))
        .filter(|c| !c.contains('T'))
        .collect();
    g.throughput(Throughput::Elements(cells.len() as u64));
    g.bench_function("parse_f64", |b| b.iter(|| cells.iter().filter_map(|c| number::parse_f64(c)).sum::<f64>()));
    g.bench_function("std_parse_f64", |b| b.iter(|| cells.iter().filter_map(|c| c.parse::<f64>().ok()).sum::<f64>()));
    g.finish();
}

criterion_group!(benches, bench_metar, bench_reports, bench_forecasts);
criterion_main!(benches);
