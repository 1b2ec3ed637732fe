//! Ingest → lake → SQL round trips, idempotency, compaction and pruning.

use chrono::{Duration, TimeZone, Utc};
use wxlake::decode::forecast_rows::encode_forecast_csv;
use wxlake::decode::types::ForecastRow;
use wxlake::ingest::{ingest_bytes, ingest_inputs, Format, IngestOptions, Input, Summary};
use wxlake::lake::delta::TableShape;
use wxlake::lake::schema::{TableDef, FORECASTS, OBSERVATIONS};
use wxlake::lake::Lake;

use crate::support::{fixture, rows, scalar, sql, temp_lake};

/// How many files the latest snapshot of `table` has in `partition`.
async fn files_in(lake: &Lake, table: &TableDef, partition: &str) -> usize {
    let (_, files) = lake.table_files(&TableShape::lake_table(table)).await.unwrap();
    files.iter().filter(|f| f.partition_dir() == partition).count()
}

fn forecast(model: &'static str, station: &str, run_h: i64, lead: i64, temp_c: f64) -> ForecastRow {
    let run = Utc.with_ymd_and_hms(2026, 3, 7, 0, 0, 0).unwrap() + Duration::hours(run_h);
    let mut r = ForecastRow {
        model,
        location_name: station.into(),
        run_time: run,
        valid_time: run + Duration::hours(lead),
        forecast_hour: lead as i32,
        temperature_c: temp_c.into(),
        ..Default::default()
    };
    r.complete_temperatures();
    r
}

#[tokio::test]
async fn metar_ingest_round_trips_and_reingest_is_a_noop() {
    let (_d, lake) = temp_lake().await;
    let bytes = std::fs::read(fixture("metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv")).unwrap();
    let reports = bytes.split(|&b| b == b'\n').filter(|l| l.starts_with(b"CVG\t")).count();
    let mut s = Summary::default();
    ingest_bytes(&lake, Format::Metar, "kcvg", &bytes, &IngestOptions::default(), &mut s).await.unwrap();
    assert_eq!(s.stored, reports, "{s}");
    assert_eq!(s.rejected, 0, "{s}");
    assert_eq!(scalar(&lake, "SELECT count(*) FROM observations").await, reports.to_string());
    // HF-METAR are whole degrees; routine reports carry tenths.
    let hf = scalar(&lake, "SELECT count(*) FROM observations WHERE report_type = 'HF-METAR' AND has_tenths").await;
    assert_eq!(hf, "0");
    // The 00:52Z routine report: T-group 2.8 °C is exactly 37 °F.
    let q = "SELECT temperature, lowest_probable_f, highest_probable_f, precision_level FROM observations \
             WHERE observation_time = TIMESTAMP '2024-03-01T00:52:00Z' AND report_type = 'METAR'";
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&sql(&lake, q).await).unwrap().to_string();
    assert!(text.contains("| 2.8         | 37                | 37                 | 1               |"), "{text}");
    // Local standard date of 00:52Z on Mar 1 at KCVG is Feb 29 (UTC-5)... KCVG is not in the
    // catalog, so local dates are null rather than guessed.
    assert_eq!(scalar(&lake, "SELECT count(local_date_standard) FROM observations").await, "0");

    let mut again = Summary::default();
    ingest_bytes(&lake, Format::Metar, "kcvg", &bytes, &IngestOptions::default(), &mut again).await.unwrap();
    assert_eq!((again.stored, again.duplicate), (0, reports));
    assert_eq!(scalar(&lake, "SELECT count(*) FROM observations").await, reports.to_string());
}

#[tokio::test]
async fn corrupt_and_binary_input_is_rejected_per_line() {
    let (_d, lake) = temp_lake().await;
    // Pseudo-random binary: every format rejects it line by line, nothing is stored, no panic.
    let binary: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let opts = IngestOptions { month: Some((2026, 3)), station: Some("KNYC".into()), ..Default::default() };
    for f in wxlake::ingest::format::ALL_FORMATS {
        let mut s = Summary::default();
        ingest_bytes(&lake, f, "binary", &binary, &opts, &mut s).await.unwrap();
        assert_eq!(s.stored, 0, "{f}: {s}");
        assert!(s.rejected > 0, "{f} must say why binary input was refused: {s}");
        // Truncated real input never panics either.
        let real = std::fs::read(fixture("cli/CLINYC.txt")).unwrap();
        let mut t = Summary::default();
        ingest_bytes(&lake, f, "truncated", &real[..real.len() / 3], &opts, &mut t).await.unwrap();
    }
    // Bare report lines between corrupt lines: the good ones survive, each bad one is named.
    let text = b"KNYC 011251Z 00000KT 10SM CLR 05/M02 A3012 RMK AO2 T00501017\n\
                 \xff\xfe garbage \x00 line\n\
                 KNYC 01125\n\
                 KLGA 011251Z 36005KT 10SM CLR 06/M03 A3011\n";
    let mut s = Summary::default();
    ingest_bytes(&lake, Format::Metar, "mixed", text, &opts, &mut s).await.unwrap();
    assert_eq!((s.stored, s.rejected), (2, 2), "{s}");
    assert_eq!(s.first_rejects.iter().map(|r| r.line).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(scalar(&lake, "SELECT count(*) FROM observations").await, "2");
}

#[tokio::test]
async fn forecasts_partition_by_model_and_run_date_and_prune() {
    let (_d, lake) = temp_lake().await;
    let mut rows = Vec::new();
    for (m, bias) in [("GFS", 0.0), ("HRRR", 1.0), ("NAM", -1.0)] {
        for run in [0, 6, 24] {
            for lead in 0..30 {
                rows.push(forecast(m, "KNYC", run, lead, 5.0 + bias + lead as f64 * 0.1));
            }
        }
    }
    let n = rows.len();
    let stats = lake.write(rows.clone()).await.unwrap();
    assert_eq!((stats.stored, stats.duplicate), (n, 0));
    // 3 models x 2 run dates.
    assert_eq!(stats.files, 6);
    assert_eq!(scalar(&lake, "SELECT count(*) FROM forecasts WHERE model = 'HRRR'").await, "90");
    let avg = scalar(
        &lake,
        "SELECT round(avg(temperature_c) - 5.0, 2) FROM forecasts WHERE model = 'NAM' AND forecast_hour = 0",
    )
    .await;
    assert_eq!(avg, "-1.0");
    // EXPLAIN names only the pruned partition's files.
    let plan = sql(&lake, "EXPLAIN SELECT * FROM forecasts WHERE model = 'GFS' AND run_date = '2026-03-08'").await;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&plan).unwrap().to_string();
    assert!(text.contains("model=GFS/run_date=2026-03-08"), "{text}");
    assert!(!text.contains("model=HRRR"), "HRRR files not pruned:\n{text}");
    assert!(!text.contains("run_date=2026-03-07"), "other run date not pruned:\n{text}");
    // Idempotent.
    let again = lake.write(rows).await.unwrap();
    assert_eq!((again.stored, again.duplicate, again.files), (0, n, 0));
}

/// Several inputs ingested together: one file per touched partition, every input's
/// rejects named under that input, and where a later input repeats a natural key at other
/// values it is a re-published run, kept beside the earlier values and current
/// (`lake::versions`): the same rows as ingesting the inputs one by one.
#[tokio::test]
async fn inputs_ingested_together_match_one_by_one() {
    let csv = |rows: Vec<ForecastRow>| encode_forecast_csv(&rows).into_bytes();
    // a: GFS and HRRR runs of Mar 7; b: repeats GFS leads 0..5 at other values and adds a
    // Mar 8 run; c: one good row after a malformed line.
    let a =
        csv((0..10).flat_map(|l| [forecast("GFS", "KNYC", 0, l, 1.0), forecast("HRRR", "KNYC", 0, l, 2.0)]).collect());
    let b = csv((0..5)
        .map(|l| forecast("GFS", "KNYC", 0, l, 9.0))
        .chain((0..5).map(|l| forecast("GFS", "KNYC", 24, l, 3.0)))
        .collect());
    let mut c = csv(vec![forecast("NAM", "KMDW", 0, 1, 4.0)]);
    let header_end = c.iter().position(|&b| b == b'\n').unwrap() + 1;
    c.splice(header_end..header_end, b"GFS,KNYC,not,enough\n".iter().copied());
    let inputs = vec![
        Input { name: "a.csv".into(), bytes: a },
        Input { name: "b.csv".into(), bytes: b },
        Input { name: "c.csv".into(), bytes: c },
    ];

    let (_d, together) = temp_lake().await;
    let mut s = Summary::default();
    let stats =
        ingest_inputs(&together, Format::Forecasts, inputs.clone(), &IngestOptions::default(), &mut s).await.unwrap();
    assert_eq!((s.inputs, s.read, s.stored, s.duplicate, s.rejected), (3, 20 + 10 + 2 + 3, 31, 0, 1), "{s}");
    assert_eq!((s.first_rejects[0].input.as_str(), s.first_rejects[0].line), ("c.csv", 2), "{s}");
    // GFS Mar 7, HRRR Mar 7, GFS Mar 8, NAM Mar 7: one file each; GFS Mar 7 once more
    // with the versions beside the first values, replacing the first file.
    assert_eq!(stats.files, 5);
    assert_eq!(files_in(&together, &FORECASTS, "model=GFS/run_date=2026-03-07").await, 1);
    let early = "SELECT superseded_at IS NULL, max(temperature_c) FROM forecasts \
                 WHERE model = 'GFS' AND forecast_hour < 5 AND run_date = '2026-03-07' GROUP BY 1 ORDER BY 1";
    assert_eq!(rows(&together, early).await, [["false", "1.0"], ["true", "9.0"]]);

    let (_d2, one_by_one) = temp_lake().await;
    let mut t = Summary::default();
    for i in &inputs {
        ingest_bytes(&one_by_one, Format::Forecasts, &i.name, &i.bytes, &IngestOptions::default(), &mut t)
            .await
            .unwrap();
    }
    assert_eq!(t, s);
    let q = "SELECT model, run_time, valid_time, temperature_c, superseded_at IS NULL FROM forecasts \
             ORDER BY 1, 2, 3, 4";
    let show = |b: Vec<_>| datafusion::arrow::util::pretty::pretty_format_batches(&b).unwrap().to_string();
    assert_eq!(show(sql(&together, q).await), show(sql(&one_by_one, q).await));

    // Again: all duplicates, no new files.
    let mut again = Summary::default();
    let stats =
        ingest_inputs(&together, Format::Forecasts, inputs, &IngestOptions::default(), &mut again).await.unwrap();
    assert_eq!((again.stored, again.duplicate, stats.files), (0, 31, 0), "{again}");
}

#[tokio::test]
async fn one_large_input_is_deduplicated_across_the_writers_slices() {
    // More rows than the writer keys in one task (65,536), in one chunk, two partitions,
    // the last row repeating the fourth at another value: the first one must be stored.
    let row = |i: usize, temp: f64| {
        forecast("GFS", &format!("P{:05}", i / 100), (i % 2) as i64 * 24, (i / 2 % 50) as i64, temp)
    };
    let mut rows: Vec<ForecastRow> = (0..70_000).map(|i| row(i, 1.0)).collect();
    rows.push(row(3, 9.0));
    let (_d, lake) = temp_lake().await;
    let stats = lake.write(rows).await.unwrap();
    assert_eq!((stats.stored, stats.duplicate, stats.files), (70_000, 1, 2));
    assert_eq!(scalar(&lake, "SELECT max(temperature_c) FROM forecasts").await, "1.0");
    assert_eq!(scalar(&lake, "SELECT count(DISTINCT location_name) FROM forecasts").await, "700");
}

#[tokio::test]
async fn a_failed_put_fails_the_write_and_a_retry_stores_each_row_once() {
    let (d, lake) = temp_lake().await;
    // A file where the GFS partitions' directory belongs: no GFS file can be put.
    let table_dir = d.path().join("lake").join(FORECASTS.name);
    std::fs::create_dir_all(&table_dir).unwrap();
    std::fs::write(table_dir.join("model=GFS"), b"in the way").unwrap();
    let rows = |model| (0..4).map(move |run| forecast(model, "KNYC", run * 24, 1, 1.0));
    let all: Vec<ForecastRow> = rows("GFS").chain(rows("HRRR")).collect();
    let err = lake.write(all.clone()).await.unwrap_err().to_string();
    assert!(err.contains("model=GFS"), "{err}");
    // Whatever was stored is whole and readable.
    let stored: usize = scalar(&lake, "SELECT count(*) FROM forecasts").await.parse().unwrap();
    assert!(stored <= 4, "only HRRR rows can have been stored: {stored}");

    std::fs::remove_file(table_dir.join("model=GFS")).unwrap();
    let stats = lake.write(all).await.unwrap();
    assert_eq!((stats.stored, stats.duplicate), (8 - stored, stored));
    assert_eq!(scalar(&lake, "SELECT count(*) FROM forecasts").await, "8");
}

/// A query planned before a compaction (a long analyst query, a streamed answer) reads the
/// snapshot it was planned on: the files the compaction replaced stay in the store for the
/// keep time, so it still reads them, while new queries read the merged file. Vacuum then
/// deletes them only once the keep time is over; with a keep time of zero the planned
/// query finds them gone.
#[tokio::test]
async fn a_query_planned_before_a_compaction_reads_its_snapshot() {
    for (keep, kept) in [(wxlake::lake::KEEP_REPLACED, true), (std::time::Duration::ZERO, false)] {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().join("lake").display());
        let lake = Lake::open_keeping(&url, keep).await.unwrap();
        // Temperatures that differ (a constant column's sum comes from the footers' statistics).
        for batch in 0..4 {
            let rows = (0..10).map(|lead| forecast("GFS", "KMDW", 0, batch * 10 + lead, lead as f64)).collect();
            lake.write(rows).await.unwrap();
        }
        let ctx = wxlake::jobs::analyst_session(&lake).await.unwrap();
        let planned = ctx.sql("SELECT sum(temperature_c) FROM forecasts").await.unwrap();
        let plan = planned.create_physical_plan().await.unwrap();
        assert_eq!(lake.compact(&FORECASTS).await.unwrap().files_before, 4);
        assert_eq!(files_in(&lake, &FORECASTS, "model=GFS/run_date=2026-03-07").await, 1, "new queries see one file");
        let deleted = lake.vacuum(FORECASTS.name).await;
        assert_eq!(deleted, if kept { 0 } else { 4 });
        let partition = lake.table_path(&format!("{}/model=GFS/run_date=2026-03-07", FORECASTS.name));
        let on_disk = std::fs::read_dir(format!("/{partition}")).map(|d| d.count()).unwrap_or(0);
        assert_eq!(on_disk, if kept { 5 } else { 1 }, "{partition}");
        let read = datafusion::physical_plan::collect(plan, ctx.task_ctx()).await;
        if kept {
            let batches = read.expect("the planned query reads the replaced files");
            let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string();
            assert!(text.contains("| 180.0 "), "{text}");
            assert_eq!(scalar(&lake, "SELECT sum(temperature_c) FROM forecasts").await, "180.0");
        } else {
            let e = read.expect_err("the replaced files are gone").to_string();
            assert!(e.to_lowercase().contains("not found"), "{e}");
        }
    }
}

#[tokio::test]
async fn compaction_merges_files_without_changing_rows() {
    let (_d, lake) = temp_lake().await;
    for batch in 0..4 {
        let rows: Vec<_> =
            (0..10).map(|lead| forecast("GFS", "KMDW", 0, batch * 10 + lead, 1.0 + lead as f64)).collect();
        lake.write(rows).await.unwrap();
    }
    let partition = "model=GFS/run_date=2026-03-07";
    assert_eq!(files_in(&lake, &FORECASTS, partition).await, 4);
    let before = scalar(&lake, "SELECT sum(temperature_c) FROM forecasts").await;
    let stats = lake.compact(&FORECASTS).await.unwrap();
    assert_eq!((stats.partitions, stats.files_before, stats.files_after, stats.rows), (1, 4, 1, 40));
    assert_eq!(files_in(&lake, &FORECASTS, partition).await, 1);
    assert_eq!(scalar(&lake, "SELECT count(*) FROM forecasts").await, "40");
    assert_eq!(scalar(&lake, "SELECT sum(temperature_c) FROM forecasts").await, before);
    // The merged file is sorted by valid_time within the run.
    let ordered = scalar(
        &lake,
        "SELECT count(*) FROM (SELECT valid_time, lag(valid_time) OVER () AS prev FROM forecasts) WHERE prev > valid_time",
    )
    .await;
    assert_eq!(ordered, "0");
    // Nothing left to do the second time; still no duplicates after re-ingest.
    assert_eq!(lake.compact(&FORECASTS).await.unwrap().partitions, 0);
    assert_eq!(lake.compact(&OBSERVATIONS).await.unwrap().files_before, 0);
}

/// One report is one row whichever source wrapped it: the real aviationweather.gov answer
/// (`METAR KAUS ...` in rawOb), then the same reports as a WMO collective (`METAR` line,
/// folded lines, `=`) and as bare lines (as IEM sends them) store nothing new.
#[tokio::test]
async fn the_same_report_from_three_wrappers_is_one_row() {
    let (_d, lake) = temp_lake().await;
    let awc = std::fs::read(fixture("metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&awc).unwrap();
    let raws: Vec<String> = doc.as_array().unwrap().iter().map(|r| r["rawOb"].as_str().unwrap().to_string()).collect();
    assert!(raws.len() >= 9 && raws.iter().all(|r| r.starts_with("METAR ")), "{raws:?}");
    let opts = IngestOptions { month: Some((2026, 9)), ..Default::default() };
    let mut first = Summary::default();
    ingest_bytes(&lake, Format::Metar, "awc", &awc, &opts, &mut first).await.unwrap();
    assert_eq!((first.stored, first.rejected), (raws.len(), 0), "{first}");

    // A collective: the header, one `METAR` line, each report folded after its 6th group.
    let mut collective = String::from("776 \nSAUS70 KWBC 250600\nMETAR\n");
    for r in &raws {
        let body = r.trim_start_matches("METAR ").trim_start_matches("SPECI ");
        let toks: Vec<&str> = body.split(' ').collect();
        let (a, b) = toks.split_at(toks.len().min(6));
        collective.push_str(&format!("{}\n     {}=\n", a.join(" "), b.join(" ")));
    }
    let bare: String = raws.iter().map(|r| format!("{}\n", r.trim_start_matches("METAR "))).collect();
    for (name, text) in [("collective", collective), ("bare", bare)] {
        let mut again = Summary::default();
        ingest_bytes(&lake, Format::Metar, name, text.as_bytes(), &opts, &mut again).await.unwrap();
        assert_eq!(again.stored, 0, "{name}: {again}");
    }
    let q =
        "SELECT count(*) - count(DISTINCT concat(station_code, CAST(observation_time AS VARCHAR))) FROM observations";
    assert_eq!(scalar(&lake, q).await, "0");
    assert_eq!(scalar(&lake, "SELECT count(*) FROM observations").await, raws.len().to_string());
}

/// A lake written before observations were keyed by the report's body (and before its
/// tables were Delta tables) holds one METAR twice (with and without its `METAR` wrapper,
/// under two keys, in one file): once upgraded, the hourly merge leaves a single-file
/// partition alone, `compact --repair` keeps one row, and the report ingested again
/// afterwards is a duplicate.
#[tokio::test]
async fn a_repair_keeps_one_row_of_a_report_stored_under_two_wrappers() {
    use datafusion::arrow::array::{RecordBatch, UInt64Array};
    use object_store::ObjectStoreExt;
    use std::sync::Arc;
    use wxlake::lake::compact::Rewrite;
    use wxlake::lake::schema::KeyHasher;
    use wxlake::lake::writer::{batch_of, encode_parquet};

    let (_d, lake) = temp_lake().await;
    let now = Utc.with_ymd_and_hms(2026, 11, 27, 9, 0, 0).unwrap();
    let body = "KNYC 270751Z 00000KT 10SM CLR 09/01 A3012 RMK AO2 SLP199 T00890011";
    let wrapped = format!("METAR {body}");
    let metars: Vec<_> =
        [body, wrapped.as_str()].iter().map(|t| wxlake::decode::metar::parse_metar(t, now).unwrap()).collect();
    // The keys as they were: the raw text, wrapper and all.
    let old = |raw: &str| {
        let t = Utc.with_ymd_and_hms(2026, 11, 27, 7, 51, 0).unwrap().timestamp_micros();
        KeyHasher::default().str("KNYC").i64(t).str("METAR").str(raw).finish()
    };
    let batch = batch_of(&metars, now).unwrap();
    let mut cols = batch.columns().to_vec();
    let k = batch.schema().index_of("row_key").unwrap();
    cols[k] = Arc::new(UInt64Array::from(vec![old(body), old(&wrapped)]));
    let batch = RecordBatch::try_new(batch.schema(), cols).unwrap();
    let path = lake.table_path("observations").join("date=2026-11-27").join("before-upgrade.parquet");
    lake.store().put(&path, encode_parquet(&OBSERVATIONS, &batch).unwrap().into()).await.unwrap();
    assert_eq!(scalar(&lake, "SELECT count(*) FROM observations").await, "0", "no commit names the file yet");
    let done = wxlake::lake::upgrade::upgrade(&lake, &wxlake::jobs::tables::all_shapes().unwrap()).await.unwrap();
    assert_eq!(done.converted, [("observations".to_string(), 1)]);
    // The conversion's pass over every partition (it gives rows lacking them their
    // availability times) is a repair: the report stored twice is one row.
    let (_, s) = done.times.iter().find(|(t, _)| t == "observations").unwrap();
    assert_eq!((s.partitions, s.duplicates, s.rows), (1, 1, 1), "{s:?}");
    assert_eq!(scalar(&lake, "SELECT count(*) FROM observations").await, "1");
    assert_eq!(lake.compact(&OBSERVATIONS).await.unwrap().partitions, 0, "one file: nothing to merge");
    // Repaired: a second repair has nothing to do, and the wrapped report is a duplicate.
    assert_eq!(lake.rewrite(&OBSERVATIONS, Rewrite::Repair).await.unwrap().partitions, 0);
    let mut again = Summary::default();
    let opts = IngestOptions { month: Some((2026, 11)), ..Default::default() };
    ingest_bytes(&lake, Format::Metar, "wrapped", wrapped.as_bytes(), &opts, &mut again).await.unwrap();
    assert_eq!((again.stored, again.duplicate), (0, 1), "{again}");
}

/// A lake of the former layout (Parquet directories, no Delta log) whose `forecast_daily`
/// is partitioned as it was before 2026-11-30 (by model and run date) converts with the
/// partition columns its directories have, reads the same through today's declaration
/// (partitioned by run date alone), and the job's next run lays it out anew.
#[tokio::test]
async fn a_former_layout_job_output_converts_as_its_directories_are() {
    use wxlake::jobs::runner::no_progress;
    let (d, lake) = temp_lake().await;
    let run = Utc.with_ymd_and_hms(2026, 9, 1, 0, 0, 0).unwrap();
    let points = ["GFS", "ICON"]
        .into_iter()
        .flat_map(|m| (0..=72).map(move |lead| crate::support::knyc_forecast(m, run, lead, 60.0 + lead as f64 / 4.0)));
    lake.write(points.collect()).await.unwrap();
    let specs = wxlake::jobs::embedded_specs().unwrap();
    let spec = specs.iter().find(|s| s.name == "forecast_daily").unwrap();
    let mut old = spec.clone();
    old.output.partition_by = vec!["model".into(), "run_date".into()];
    old.output.sort_by = ["location_name", "run_time", "tz_mode", "date"].map(String::from).to_vec();
    wxlake::jobs::run_job(&lake, &old, None, &no_progress).await.unwrap();
    let all = "SELECT model, run_date, location_name, tz_mode, date, high_f, low_f FROM forecast_daily ORDER BY 1, 2, 3, 4, 5";
    let before = rows(&lake, all).await;
    assert_eq!(before.len(), 8, "two models, two covered days each, both tz_modes");

    // Back to the former layout: the output's files without their Delta log, in a process
    // that never loaded the table.
    let root = d.path().join("lake");
    std::fs::remove_dir_all(root.join("derived/forecast_daily/_delta_log")).unwrap();
    let lake = Lake::open(&format!("file://{}", root.display())).await.unwrap();
    let done = wxlake::lake::upgrade::upgrade(&lake, &wxlake::jobs::tables::all_shapes().unwrap()).await.unwrap();
    assert_eq!(done.converted, [("derived/forecast_daily".to_string(), 2)]);
    assert!(lake.layout_differs(&spec.output.shape()).await.unwrap(), "converted as its directories are");
    assert_eq!(rows(&lake, all).await, before);

    wxlake::jobs::run_job(&lake, spec, None, &no_progress).await.unwrap();
    assert!(!lake.layout_differs(&spec.output.shape()).await.unwrap());
    let (_, files) = lake.snapshot_files("derived/forecast_daily").await.unwrap().unwrap();
    let dirs: Vec<&str> = files.iter().map(|f| f.partition_dir()).collect();
    assert_eq!(dirs, ["run_date=2026-09-01"]);
    assert_eq!(rows(&lake, all).await, before);
}
