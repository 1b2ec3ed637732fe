//! The two times on every row (`received_at`, `available_at`) and `as_of` in SQL: live rows
//! known when the write path received them (by its clock, kept across a restart),
//! backfilled rows known when their source published them, and `as_of` choosing the version
//! in force at a time, with no look-ahead.

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use wxlake::clock::{Clock, ManualClock};
use wxlake::decode::climate_report::decode_cli;
use wxlake::ingest::{ingest_bytes, Format, IngestOptions, Summary};
use wxlake::jobs::runner::no_progress;
use wxlake::lake::Lake;

use crate::support::{fixture, knyc_forecast, open_live, rows, scalar, temp_lake};

const AWC: &str = "metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json";
const NWS: &str = "forecast/nws_hourly_forecast_knyc_gen20260924T0316Z.json";
const CLI_AUS: &str = "cli/CLIAUS_202609041223_morning_prelim_for_2026-09-04.txt";

fn t(s: &str) -> DateTime<Utc> {
    wxlake::time::parse_utc(s).unwrap()
}

async fn backfill(lake: &Lake, format: Format, rel: &str, opts: &IngestOptions) {
    let bytes = std::fs::read(fixture(rel)).unwrap();
    let mut s = Summary::default();
    ingest_bytes(lake, format, rel, &bytes, opts, &mut s).await.unwrap();
}

/// How many rows `as_of(table, at)` keeps that match `filter`.
async fn count_as_of(lake: &Lake, table: &str, at: &str, filter: &str) -> String {
    scalar(lake, &format!("SELECT count(*) FROM as_of('{table}', '{at}') WHERE {filter}")).await
}

#[tokio::test]
async fn backfilled_rows_become_available_when_their_source_published_them() {
    let (_d, lake) = temp_lake().await;
    backfill(&lake, Format::Metar, AWC, &IngestOptions::default()).await;
    backfill(&lake, Format::Cli, CLI_AUS, &IngestOptions::default()).await;
    let opts = IngestOptions { station: Some("KNYC".into()), ..Default::default() };
    backfill(&lake, Format::NwsHourly, NWS, &opts).await;
    let run = t("2026-09-24T00:00:00Z");
    lake.write(vec![knyc_forecast("GFS", run, 24, 70.0), knyc_forecast("HRRR", run, 24, 71.0)]).await.unwrap();

    // A backfill is received at the write: received_at is the lake write's time.
    for table in ["observations", "reports", "nws_hourly", "forecasts"] {
        let q = format!(
            "SELECT count(*) FROM {table} WHERE (received_at IS DISTINCT FROM inserted_at) OR (available_at IS NULL)"
        );
        assert_eq!(scalar(&lake, &q).await, "0", "{table}");
    }
    // aviationweather.gov's receiptTime (3 min 11 s after the 05:51 observation).
    let obs = "station_code = 'KNYC' AND observation_time = TIMESTAMP '2026-09-25T05:51:00Z'";
    let knyc = rows(&lake, &format!("SELECT available_at FROM observations WHERE {obs}")).await;
    assert_eq!(knyc, [["2026-09-25T05:54:11.152Z"]]);
    assert_eq!(count_as_of(&lake, "observations", "2026-09-25T05:54:11Z", obs).await, "0");
    assert_eq!(count_as_of(&lake, "observations", "2026-09-25T05:54:12Z", obs).await, "1");

    // The climate report, from its heading `CDUS44 KEWX 041223`: not a minute before.
    assert_eq!(count_as_of(&lake, "reports", "2026-09-04T12:22:59Z", "station_code = 'KAUS'").await, "0");
    assert_eq!(count_as_of(&lake, "reports", "2026-09-04T12:23:00Z", "station_code = 'KAUS'").await, "1");

    // A run: its run time plus its model's publication delay (GFS 330 min, HRRR 135 min).
    for (at, want) in [
        ("2026-09-24T02:14:59Z", "0"),
        ("2026-09-24T02:15:00Z", "1"),
        ("2026-09-24T05:29:59Z", "1"),
        ("2026-09-24T05:30:00Z", "2"),
    ] {
        assert_eq!(count_as_of(&lake, "forecasts", at, "true").await, want, "{at}");
    }

    // The NWS version: its generatedAt, all of its periods at once.
    let periods = scalar(&lake, "SELECT count(*) FROM nws_hourly").await;
    assert_eq!(periods, "60", "the real version holds 60 hourly periods");
    assert_eq!(count_as_of(&lake, "nws_hourly", "2026-09-24T03:16:36Z", "true").await, "0");
    assert_eq!(count_as_of(&lake, "nws_hourly", "2026-09-24T03:16:37Z", "true").await, periods);
}

#[tokio::test]
async fn previous_runs_values_are_not_known_before_their_lead_says() {
    // Open-Meteo's `previous_day1` value for 23:00 is the run that was latest about 24 h
    // before: it existed at 23:00 the day before, not at the nominal 00Z run's
    // publication (which would see it 17 h early).
    let (_d, lake) = temp_lake().await;
    let opts = IngestOptions { station: Some("KNYC".into()), ..Default::default() };
    backfill(&lake, Format::OpenMeteo, "forecast/openmeteo_previous_runs_knyc_gfs_ecmwf_2026-09-01_03.json", &opts)
        .await;
    let got = rows(
        &lake,
        "SELECT run_time, available_at FROM forecasts WHERE model = 'GFS' AND forecast_hour = 47 \
         AND valid_time = TIMESTAMP '2026-09-02T23:00:00Z'",
    )
    .await;
    assert_eq!(got, [["2026-09-01T00:00:00Z", "2026-09-01T23:00:00Z"]]);
    // An early valid hour: the model's own delay is the later bound.
    let got = rows(
        &lake,
        "SELECT available_at FROM forecasts WHERE model = 'GFS' AND forecast_hour = 25 \
         AND valid_time = TIMESTAMP '2026-09-02T01:00:00Z'",
    )
    .await;
    assert_eq!(got, [["2026-09-01T05:30:00Z"]]);
}

#[tokio::test]
async fn live_rows_are_known_when_the_service_received_them_even_after_a_restart() {
    let (dir, lake) = temp_lake().await;
    let state = dir.path().join("state");
    let t0 = t("2026-09-25T06:00:00Z");
    let clock = Arc::new(ManualClock::new(t0));
    let body = std::fs::read(fixture(AWC)).unwrap();
    let original = "METAR KNYC 250551Z AUTO VRB06G18KT 10SM CLR 14/04 A3023 RMK AO2 SLP227 T01390039 10172 20139 58019";
    {
        let svc = Arc::new(open_live(&lake, &state, clock.clone() as Arc<dyn Clock>).await);
        svc.ingest(Format::Metar, IngestOptions::default(), body).await.unwrap();
        // Forty minutes later, a correction of the KNYC report (one tenth warmer).
        clock.set(t0 + Duration::minutes(40));
        let cor = original.replace("250551Z AUTO", "250551Z COR AUTO").replace("T01390039", "T01440039");
        let sept = IngestOptions { month: Some((2026, 9)), ..Default::default() };
        svc.ingest(Format::Metar, sept, cor.into_bytes()).await.unwrap();
        // Stopped without a flush: the inputs are only in the write-ahead log.
    }
    clock.set(t0 + Duration::hours(2));
    let svc = open_live(&lake, &state, clock.clone() as Arc<dyn Clock>).await;
    svc.flush().await.unwrap();

    let got = rows(
        &lake,
        "SELECT cor, received_at, available_at FROM observations WHERE station_code = 'KNYC' \
         AND observation_time = TIMESTAMP '2026-09-25T05:51:00Z' ORDER BY cor",
    )
    .await;
    let at = |d: Duration| wxlake::time::fmt_iso_utc(t0 + d);
    let (first, later) = (at(Duration::zero()), at(Duration::minutes(40)));
    assert_eq!(got, [["false", first.as_str(), first.as_str()], ["true", later.as_str(), later.as_str()]]);

    // What the service knew: nothing before it received the report, then the original,
    // then the correction.
    let knyc = |at: DateTime<Utc>| {
        let lake = lake.clone();
        async move {
            rows(
                &lake,
                &format!(
                    "SELECT cor, temperature FROM as_of('observations', '{}') WHERE station_code = 'KNYC' \
                     AND observation_time = TIMESTAMP '2026-09-25T05:51:00Z'",
                    wxlake::time::fmt_iso_utc(at)
                ),
            )
            .await
        }
    };
    assert!(knyc(t0 - Duration::seconds(1)).await.is_empty());
    assert_eq!(knyc(t0 + Duration::minutes(39)).await, [["false", "13.9"]]);
    assert_eq!(knyc(t0 + Duration::minutes(40)).await, [["true", "14.4"]]);
    // A filter on another column applies to the version chosen: it never lets the
    // corrected report stand in for its correction.
    let original_value = format!(
        "SELECT count(*) FROM as_of('observations', '{}') WHERE station_code = 'KNYC' \
         AND observation_time = TIMESTAMP '2026-09-25T05:51:00Z' AND temperature = 13.9",
        wxlake::time::fmt_iso_utc(t0 + Duration::minutes(40))
    );
    assert_eq!(scalar(&lake, &original_value).await, "0");
    assert_eq!(scalar(&lake, &original_value.replace("13.9", "14.4")).await, "1");
}

#[tokio::test]
async fn as_of_gives_the_version_in_force() {
    let (_d, lake) = temp_lake().await;
    // NWS: the real version, and the next one an hour later with every period 2 °F warmer.
    let text = std::fs::read_to_string(fixture(NWS)).unwrap();
    let next =
        text.replace("\"generatedAt\":\"2026-09-24T03:16:37+00:00\"", "\"generatedAt\":\"2026-09-24T04:16:37+00:00\"");
    assert_ne!(next, text);
    let next = (40..=99)
        .fold(next, |s, f| s.replace(&format!("\"temperature\":{f},"), &format!("\"temperature\":x{},", f + 2)));
    let next = next.replace("\"temperature\":x", "\"temperature\":");
    let opts = IngestOptions { station: Some("KNYC".into()), ..Default::default() };
    let mut s = Summary::default();
    ingest_bytes(&lake, Format::NwsHourly, "v1", text.as_bytes(), &opts, &mut s).await.unwrap();
    ingest_bytes(&lake, Format::NwsHourly, "v2", next.as_bytes(), &opts, &mut s).await.unwrap();
    let version = |at: &'static str| {
        let lake = lake.clone();
        async move {
            rows(
                &lake,
                &format!(
                    "SELECT count(*), count(DISTINCT generated_at), min(generated_at), max(temperature_f) \
                     FROM as_of('nws_hourly', '{at}')"
                ),
            )
            .await
        }
    };
    let periods =
        scalar(&lake, "SELECT count(*) FROM nws_hourly WHERE generated_at = TIMESTAMP '2026-09-24T03:16:37Z'").await;
    let warmest = scalar(&lake, "SELECT max(temperature_f) FROM nws_hourly").await;
    let first = version("2026-09-24T04:00:00Z").await;
    assert_eq!(first[0][..3], [periods.as_str(), "1", "2026-09-24T03:16:37Z"]);
    let second = version("2026-09-24T05:00:00Z").await;
    assert_eq!(second[0][..3], [periods.as_str(), "1", "2026-09-24T04:16:37Z"]);
    assert_eq!(second[0][3], warmest);
    assert_ne!(first[0][3], second[0][3]);

    // Reports: the real preliminary (issued 12:23Z), then a final of the same day issued
    // the next morning. The final wins from its issuance on; the preliminary before.
    let prelim = decode_cli(&std::fs::read(fixture(CLI_AUS)).unwrap()).records.remove(0);
    assert!(!prelim.is_final);
    let mut fin = prelim.clone();
    fin.is_final = true;
    fin.valid_as_of_lst = None;
    fin.max_f = prelim.max_f.map(|f| f + 9);
    fin.issued_at = Some(Utc.with_ymd_and_hms(2026, 9, 5, 6, 30, 0).unwrap());
    fin.raw = prelim.raw.replace("723 AM CDT FRI SEP 04 2026", "130 AM CDT SAT SEP 05 2026");
    assert_ne!(fin.raw, prelim.raw);
    lake.write(vec![prelim.clone(), fin.clone()]).await.unwrap();
    let high = |at: &'static str| {
        let lake = lake.clone();
        async move {
            rows(&lake, &format!("SELECT is_final, high_f FROM as_of('reports', '{at}') WHERE station_code = 'KAUS'"))
                .await
        }
    };
    let f = |v: Option<i32>| v.map(|v| v.to_string()).unwrap_or_default();
    assert_eq!(high("2026-09-04T12:00:00Z").await, Vec::<Vec<String>>::new());
    assert_eq!(high("2026-09-05T06:29:59Z").await, [vec!["false".to_string(), f(prelim.max_f)]]);
    assert_eq!(high("2026-09-05T06:30:00Z").await, [vec!["true".to_string(), f(fin.max_f)]]);
    // Only raw tables have the times.
    let ctx = wxlake::jobs::analyst_session(&lake).await.unwrap();
    let err = ctx.sql("SELECT * FROM as_of('forecast_daily', '2026-09-05')").await.unwrap_err().to_string();
    assert!(err.contains("not a raw lake table"), "{err}");
    let err = ctx.sql("SELECT * FROM as_of('reports', 'yesterday')").await.unwrap_err().to_string();
    assert!(err.contains("the second argument is a time"), "{err}");
}

#[tokio::test]
async fn as_of_plans_read_only_the_partitions_a_time_can_see() {
    let (_d, lake) = temp_lake().await;
    let base = t("2026-09-20T00:00:00Z");
    let rows_: Vec<_> = (0..6).map(|d| knyc_forecast("GFS", base + Duration::days(d), 12, 60.0 + d as f64)).collect();
    lake.write(rows_).await.unwrap();
    // As of the 22nd noon: the runs of the 20th, 21st and 22nd, not the later files.
    let got = rows(&lake, "SELECT count(*), max(run_date) FROM as_of('forecasts', '2026-09-22T12:00:00Z')").await;
    assert_eq!(got, [["3", "2026-09-22"]]);
    let plan = rows(&lake, "EXPLAIN SELECT * FROM as_of('forecasts', '2026-09-22T12:00:00Z')").await;
    let text: String = plan.iter().map(|r| r.join(" ")).collect::<Vec<_>>().join("\n");
    // The scan lists the files of the runs up to the 22nd only.
    assert!(text.contains("run_date=2026-09-22/") && !text.contains("run_date=2026-09-23/"), "{text}");
}

/// A job whose declaration gained a column (forecast_daily's `available_at`) recomputes
/// every partition on its next run, whatever range it was asked for, so no row of the
/// table lacks the column afterwards.
#[tokio::test]
async fn a_job_output_that_gains_a_column_is_recomputed_whole() {
    let (_d, lake) = temp_lake().await;
    let runs = [t("2026-09-01T00:00:00Z"), t("2026-09-05T00:00:00Z")];
    let points: Vec<_> = runs
        .iter()
        .flat_map(|r| (0..=72).map(|lead| knyc_forecast("GFS", *r, lead, 60.0 + lead as f64 / 4.0)))
        .collect();
    lake.write(points).await.unwrap();
    let specs = wxlake::jobs::embedded_specs().unwrap();
    let spec = specs.iter().find(|s| s.name == "forecast_daily").unwrap();
    // The job as declared before the column.
    let mut before = spec.clone();
    before.output.columns.retain(|c| c.name != "available_at");
    let text = &mut before.sql[0].text;
    assert!(text.contains(",\n    d.available_at\nFROM fd_days d"));
    *text = text.replace(",\n    d.available_at\nFROM fd_days d", "\nFROM fd_days d");
    wxlake::jobs::run_job(&lake, &before, None, &no_progress).await.unwrap();
    let all = "SELECT count(*) FROM forecast_daily";
    let days = scalar(&lake, all).await;
    assert_eq!(days, "8", "two runs, two covered days each, both tz_modes");

    let sep5 = chrono::NaiveDate::from_ymd_opt(2026, 9, 5).unwrap();
    let run = wxlake::jobs::run_job(&lake, spec, Some((sep5, sep5)), &no_progress).await.unwrap();
    assert_eq!(run.range, None, "the run widened to every partition");
    assert_eq!(scalar(&lake, all).await, days);
    // Each day known when its last point was (the backfill rule: run + the model's delay).
    let got = rows(
        &lake,
        "SELECT DISTINCT CAST(run_time AS VARCHAR), CAST(available_at AS VARCHAR) FROM forecast_daily ORDER BY 1",
    )
    .await;
    assert_eq!(
        got,
        [["2026-09-01T00:00:00Z", "2026-09-01T05:30:00Z"], ["2026-09-05T00:00:00Z", "2026-09-05T05:30:00Z"]]
    );
    // Declared once: the next narrow run stays narrow.
    let run = wxlake::jobs::run_job(&lake, spec, Some((sep5, sep5)), &no_progress).await.unwrap();
    assert_eq!(run.range, Some((sep5, sep5)));
}

/// Commits `records` to `lake` as a lake of the previous format would hold them: files
/// without `received_at` and `available_at`, in a Delta table whose schema lacks them,
/// written at `inserted`.
async fn commit_legacy(lake: &Lake, records: &[wxlake::decode::types::Metar], inserted: DateTime<Utc>) {
    use object_store::ObjectStoreExt;
    use wxlake::lake::delta::{Change, NewFile, TableShape};
    use wxlake::lake::rows::LakeRecord;
    use wxlake::lake::schema::OBSERVATIONS;
    let full = wxlake::lake::writer::batch_of(records, inserted).unwrap();
    let keep = full.num_columns() - 2;
    let legacy = full.project(&(0..keep).collect::<Vec<_>>()).unwrap();
    let mut shape = TableShape::lake_table(&OBSERVATIONS);
    shape.file_schema = legacy.schema();
    let mut buf = Vec::new();
    let mut w = datafusion::parquet::arrow::ArrowWriter::try_new(&mut buf, legacy.schema(), None).unwrap();
    w.write(&legacy).unwrap();
    w.close().unwrap();
    let partition = records[0].partition();
    let name = format!("part-legacy-{}.parquet", inserted.timestamp());
    let at = lake.table_path(&format!("observations/{partition}")).join(name.as_str());
    lake.store().put(&at, buf.clone().into()).await.unwrap();
    let snapshot = lake.delta_table(&shape).await.unwrap();
    let file = NewFile { partition_dir: partition, name, size: buf.len() as u64, rows: legacy.num_rows() as u64 };
    lake.commit(&shape, &snapshot, Change::Append { files: vec![file], read: None }).await.unwrap();
}

/// The real KCVG reports of 1 March 2024 (UTC), every type.
fn kcvg_day() -> Vec<wxlake::decode::types::Metar> {
    use wxlake::lake::rows::LakeRecord;
    let bytes = std::fs::read(fixture("metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv")).unwrap();
    let wxlake::ingest::Records::Observations(all) = Format::Metar.decode(&bytes, &IngestOptions::default()).records
    else {
        panic!("observations")
    };
    all.into_iter().filter(|m| m.partition() == "date=2024-03-01").collect()
}

#[tokio::test]
async fn a_lake_written_before_the_times_gets_them_by_the_backfill_rules_once() {
    use object_store::ObjectStoreExt;
    use wxlake::lake::upgrade::upgrade_if_needed;
    let (_d, lake) = temp_lake().await;
    let day = kcvg_day();
    let (early, late) = day.split_at(day.len() / 2);
    let inserted = t("2024-03-05T00:00:00Z");
    commit_legacy(&lake, early, inserted).await;
    commit_legacy(&lake, late, inserted + Duration::seconds(1)).await;
    // The lake of the previous format said only that it is a Delta lake.
    let marker = lake.location.root.clone().join("_lake_format");
    lake.store().put(&marker, "delta\n".into()).await.unwrap();
    assert_eq!(
        scalar(&lake, "SELECT count(*) FROM observations WHERE available_at IS NULL").await,
        day.len().to_string()
    );

    let done = upgrade_if_needed(&lake, &wxlake::jobs::tables::all_shapes().unwrap()).await.unwrap();
    let obs = done.times.iter().find(|(t, _)| t == "observations").expect("observations upgraded").1;
    assert_eq!((obs.partitions, obs.rows), (1, day.len()));
    // Every row: received when inserted, available by its report type's delay.
    let q = "SELECT report_type, count(*), \
             count(*) FILTER (WHERE received_at = inserted_at), \
             count(*) FILTER (WHERE available_at - observation_time = \
               CASE report_type WHEN 'HF-METAR' THEN INTERVAL '20 minutes' ELSE INTERVAL '10 minutes' END \
               + CASE WHEN cor THEN INTERVAL '1 hour' ELSE INTERVAL '0 minutes' END) \
             FROM observations GROUP BY 1 ORDER BY 1";
    let got = rows(&lake, q).await;
    assert!(got.len() >= 2, "{got:?}");
    for r in &got {
        assert_eq!((&r[2], &r[3]), (&r[1], &r[1]), "{r:?}");
    }
    // Other engines read the table by its Delta schema, which now declares both.
    let (table, files) = lake.snapshot_files("observations").await.unwrap().unwrap();
    let schema = table.snapshot().unwrap().schema();
    assert!(schema.contains("received_at") && schema.contains("available_at"));
    assert_eq!(files.len(), 1, "the two legacy files merged into one");
    let text = lake.store().get(&marker).await.unwrap().bytes().await.unwrap();
    assert_eq!(String::from_utf8_lossy(&text), "delta\ntimes\nversions\n");

    // Idempotent: the marker skips it, and run anyway it rewrites nothing.
    let again = upgrade_if_needed(&lake, &[]).await.unwrap();
    assert!(again.times.is_empty());
    let forced = wxlake::lake::upgrade::add_times(&lake).await.unwrap();
    assert!(forced.iter().all(|(_, s)| s.partitions == 0), "{forced:?}");
}

#[tokio::test]
async fn compaction_merges_files_written_before_and_after_the_times() {
    let (_d, lake) = temp_lake().await;
    let day = kcvg_day();
    let (early, late) = day.split_at(day.len() / 2);
    commit_legacy(&lake, early, t("2024-03-05T00:00:00Z")).await;
    lake.write(late.to_vec()).await.unwrap();
    let stats = lake.compact(&wxlake::lake::schema::OBSERVATIONS).await.unwrap();
    assert_eq!((stats.files_before, stats.files_after, stats.rows), (2, 1, day.len()));
    let q = "SELECT count(*) FROM observations WHERE received_at IS NULL OR available_at IS NULL";
    assert_eq!(scalar(&lake, q).await, "0");
}

#[tokio::test]
async fn a_republished_run_is_kept_beside_the_first_and_current_from_its_receipt() {
    use wxlake::lake::schema::FORECASTS;
    let (_d, lake) = temp_lake().await;
    let run = t("2026-01-10T00:00:00Z");
    let version = |offset: f64| -> Vec<_> {
        (0..6).map(|lead| knyc_forecast("GFS", run, lead, 40.0 + offset + lead as f64 / 2.0)).collect()
    };
    let state = |q: &str| {
        let (lake, q) = (lake.clone(), format!("SELECT count(*), min(temperature_f), max(temperature_f) FROM {q}"));
        async move { rows(&lake, &q).await }
    };
    let first = lake.write(version(0.0)).await.unwrap();
    assert_eq!(first.stored, 6);
    // The same values again (a re-fetch, or the same run in another format): nothing.
    assert_eq!(lake.write(version(0.0)).await.unwrap().stored, 0);
    let mut recoded = version(0.0);
    recoded.iter_mut().for_each(|r| r.temperature_k = r.temperature_k.get().map(|k| k + 1e-6).into());
    assert_eq!(lake.write(recoded).await.unwrap().stored, 0, "a thousandth of a unit is the same value");

    // Re-published with other values: stored beside, the first ones superseded.
    let before = Utc::now();
    let second = lake.write(version(3.0)).await.unwrap();
    assert_eq!((second.stored, second.duplicate), (6, 0));
    assert_eq!(state("forecasts").await, [["12", "40.0", "45.5"]]);
    assert_eq!(state("forecasts WHERE superseded_at IS NULL").await, [["6", "43.0", "45.5"]]);
    // The new values are known from their receipt; the old ones until then.
    let q = "SELECT count(*) FROM forecasts WHERE superseded_at IS NOT NULL \
             AND superseded_at = (SELECT min(available_at) FROM forecasts WHERE temperature_f >= 43) \
             AND available_at < superseded_at";
    assert_eq!(scalar(&lake, q).await, "6");
    let republished = t(&scalar(&lake, "SELECT min(available_at) FROM forecasts WHERE superseded_at IS NULL").await);
    assert!(republished >= before - Duration::seconds(1), "{republished}");
    let as_of = |at: DateTime<Utc>| format!("as_of('forecasts', '{}')", wxlake::time::fmt_iso_utc(at));
    let published = t(&scalar(&lake, "SELECT min(available_at) FROM forecasts").await);
    assert_eq!(state(&as_of(published - Duration::seconds(1))).await, [["0", "", ""]]);
    assert_eq!(state(&as_of(published)).await, [["6", "40.0", "42.5"]]);
    assert_eq!(state(&as_of(republished - Duration::seconds(1))).await, [["6", "40.0", "42.5"]]);
    assert_eq!(state(&as_of(republished + Duration::seconds(1))).await, [["6", "43.0", "45.5"]]);
    // Each version has its own id.
    assert_eq!(scalar(&lake, "SELECT count(DISTINCT row_key) FROM forecasts").await, "12");

    // The first values once more: already stored (as a version), so nothing changes.
    assert_eq!(lake.write(version(0.0)).await.unwrap().stored, 0);
    assert_eq!(state("forecasts WHERE superseded_at IS NULL").await, [["6", "43.0", "45.5"]]);
    // A third version supersedes the second; one write repeating a fact keeps its first row.
    let mut third = version(6.0);
    third.extend(version(9.0));
    assert_eq!(lake.write(third).await.unwrap().stored, 6);
    assert_eq!(state("forecasts WHERE superseded_at IS NULL").await, [["6", "46.0", "48.5"]]);
    assert_eq!(state("forecasts").await, [["18", "40.0", "48.5"]]);
    // A new fact of the same partition beside a version is stored as usual.
    let mut mixed = version(12.0);
    mixed.push(knyc_forecast("GFS", run, 6, 50.0));
    assert_eq!(lake.write(mixed).await.unwrap().stored, 7);
    assert_eq!(state("forecasts WHERE superseded_at IS NULL").await, [["7", "50.0", "54.5"]]);

    // Compaction keeps every version and when each was superseded.
    let superseded = "SELECT count(*), count(superseded_at), count(DISTINCT superseded_at) FROM forecasts";
    let kept = rows(&lake, superseded).await;
    assert_eq!(kept, [["25", "18", "3"]]);
    lake.compact(&FORECASTS).await.unwrap();
    assert_eq!(rows(&lake, superseded).await, kept);
    assert_eq!(lake.snapshot_files("forecasts").await.unwrap().unwrap().1.len(), 1);
}

/// The backtest query of the README, as written there.
fn readme_backtest() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let after = readme.split("<!-- backtest").nth(1).expect("the README's backtest");
    let block = after.split("```sql\n").nth(1).unwrap();
    block.split("```").next().unwrap().to_string()
}

#[tokio::test]
async fn the_readme_backtest_uses_only_runs_available_the_evening_before() {
    let (_d, lake) = temp_lake().await;
    // The real final CLI for Central Park, 2 January 2013 (issued 06:16 UTC on the 3rd).
    backfill(&lake, Format::Cli, "cli/CLINYC.txt", &IngestOptions::default()).await;
    let settled = rows(&lake, "SELECT report_date, high_f, is_final FROM reports").await;
    assert_eq!(settled, [["2013-01-02", "33", "true"]]);
    // The day's cutoff: 18:00 EST on 1 January, 23:00 UTC. The 12Z GFS run is published
    // at 17:30 UTC, before it; the 18Z run at 23:30 UTC, after it.
    let day = Utc.with_ymd_and_hms(2013, 1, 2, 5, 0, 0).unwrap(); // 00:00 EST
    let mut points = Vec::new();
    for (run_h, temp) in [(12, 38.0), (18, 45.0)] {
        let run = Utc.with_ymd_and_hms(2013, 1, 1, run_h, 0, 0).unwrap();
        for hour in [0i64, 15, 20] {
            let lead = (day + Duration::hours(hour) - run).num_hours();
            points.push(knyc_forecast("GFS", run, lead, temp + hour as f64 / 5.0));
        }
    }
    lake.write(points).await.unwrap();
    let got = rows(&lake, &readme_backtest()).await;
    assert_eq!(got, [["KNYC", "2013-01-02", "2013-01-01T12:00:00Z", "42.0", "33"]]);
}

/// One input of the replayed day and when it reaches the service.
struct Delivery {
    at: DateTime<Utc>,
    format: Format,
    opts: IngestOptions,
    body: String,
    /// Forecast rows are read from the lake: flushed when delivered, as `serve` does soon after.
    flush: bool,
}

/// One station's day delivered through the live path on a controllable clock, every answer
/// recorded each 30 simulated minutes, then asked again with `as_of` at each recording:
/// every answer equals what was said then (the response's own `timestamp` aside).
#[tokio::test]
async fn answers_as_of_a_time_equal_what_the_service_said_then() {
    use wxlake::decode::climate_report::encode_cli;
    use wxlake::decode::forecast_rows::encode_forecast_csv;
    use wxlake::decode::onemin::{decode_onemin, encode_onemin_csv};

    let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 10).unwrap();
    let lst_midnight = Utc.with_ymd_and_hms(2026, 3, 10, 5, 0, 0).unwrap(); // 00:00 EST
    let end = lst_midnight + Duration::hours(36);
    let cfg = wxlake::demo::DemoConfig {
        end_date: day,
        days: 1,
        stations: vec!["KNYC".into()],
        seed: 7,
        now: end,
        forecasts: true,
        onemin: true,
    };
    let inputs = wxlake::demo::generate_station(&cfg, "KNYC");
    let march = IngestOptions { month: Some((2026, 3)), ..Default::default() };
    let mut plan: Vec<Delivery> = Vec::new();
    // Each report two minutes after its observation.
    let wxlake::ingest::Records::Observations(reports) =
        Format::Metar.decode(inputs.metar_tsv.as_bytes(), &march).records
    else {
        panic!("observations")
    };
    for m in &reports {
        let body = if m.raw.starts_with("METAR") || m.raw.starts_with("SPECI") {
            m.raw.clone()
        } else {
            format!("METAR {}", m.raw)
        };
        plan.push(Delivery {
            at: m.time + Duration::minutes(2),
            format: Format::Metar,
            opts: march.clone(),
            body,
            flush: false,
        });
    }
    // One-minute data in ten-minute batches three minutes after each; one afternoon hour
    // two hours late, so a gap open then is filled later.
    let minutes = decode_onemin(inputs.onemin_csv.as_deref().unwrap().as_bytes()).records;
    let late = lst_midnight + Duration::hours(14);
    for batch in minutes.chunk_by(|a, b| a.time.timestamp() / 600 == b.time.timestamp() / 600) {
        let last = batch.last().unwrap().time;
        let held = batch[0].time >= late && batch[0].time < late + Duration::hours(1);
        let at = last + Duration::minutes(if held { 120 } else { 3 });
        let body = encode_onemin_csv(batch);
        plan.push(Delivery { at, format: Format::Onemin, opts: IngestOptions::default(), body, flush: false });
    }
    // Climate reports when issued, and a correction of the final the next morning.
    let mut clis = decode_cli(inputs.cli.as_bytes()).records;
    let fin = clis.iter().find(|r| r.is_final && r.date == day).expect("the day's final CLI").clone();
    let mut corrected = fin.clone();
    corrected.correction = true;
    corrected.max_f = fin.max_f.map(|f| f + 2);
    corrected.issued_at = fin.issued_at.map(|t| t + Duration::hours(4));
    clis.push(corrected);
    for r in &clis {
        let at = r.issued_at.expect("issued") + Duration::minutes(1);
        plan.push(Delivery {
            at,
            format: Format::Cli,
            opts: IngestOptions::default(),
            body: encode_cli(r, "NY CITY CENTRAL PARK"),
            flush: false,
        });
    }
    // NWS hourly versions a minute after they were generated.
    for doc in &inputs.nws_hourly {
        let v: serde_json::Value = serde_json::from_str(doc).unwrap();
        let generated = v["properties"]["generatedAt"].as_str().unwrap();
        let at = chrono::DateTime::parse_from_rfc3339(generated).unwrap().with_timezone(&Utc) + Duration::minutes(1);
        let opts = IngestOptions { station: Some("KNYC".into()), ..Default::default() };
        plan.push(Delivery { at, format: Format::NwsHourly, opts, body: doc.clone(), flush: true });
    }
    // Two GFS runs, published mid-morning and mid-afternoon; the first re-published with
    // other values in between (kept beside the first ones: `lake::versions`).
    for (run_h, published_h, base) in [(6, 15, 40.0), (6, 18, 42.0), (12, 21, 44.0)] {
        let run = lst_midnight.date_naive().and_hms_opt(run_h, 0, 0).unwrap().and_utc();
        let rows: Vec<_> =
            (0..48).map(|lead| knyc_forecast("GFS", run, lead, base + (lead % 24) as f64 / 3.0)).collect();
        let at = lst_midnight.date_naive().and_hms_opt(published_h, 40, 0).unwrap().and_utc();
        plan.push(Delivery {
            at,
            format: Format::Forecasts,
            opts: IngestOptions::default(),
            body: encode_forecast_csv(&rows),
            flush: true,
        });
    }
    plan.sort_by_key(|d| d.at);

    let (dir, lake) = temp_lake().await;
    let clock = Arc::new(ManualClock::new(lst_midnight - Duration::hours(2)));
    let live = Arc::new(open_live(&lake, &dir.path().join("state"), clock.clone() as Arc<dyn Clock>).await);
    let api = crate::support::Api::over(Arc::clone(&live), dir.path());
    let uris = |r: DateTime<Utc>| {
        let iso = |t: DateTime<Utc>| wxlake::time::fmt_iso_utc(t);
        let from = (r - Duration::hours(24)).format("%Y-%m-%dT%H:%M:00Z").to_string();
        vec![
            "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws".to_string(),
            "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=wu".to_string(),
            format!("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws&date={day}"),
            "/api/v2/observations.php?station_code=KNYC&mode=latest".to_string(),
            format!("/api/v2/observations.php?station_code=KNYC&start_time={from}&end_time={}", iso(r)),
            "/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=latest".to_string(),
            "/api/v2/forecasts.php?location_name=KNYC&mode=daily&run=latest".to_string(),
            "/api/v2/forecasts.php?location_name=KNYC&mode=daily&tz_mode=standard".to_string(),
            format!("/api/v2/nws_forecasts.php?station_code=KNYC&date={day}"),
            format!("/api/v2/nws_forecasts.php?station_code=KNYC&date={day}&mode=history"),
            "/api/v2/precipitation.php?station_code=KNYC".to_string(),
            "/api/v2/pacing.php?station_code=KNYC".to_string(),
            "/api/v2/nearby.php?stations=KNYC".to_string(),
            "/api/v2/stations.php?station_code=KNYC&include=latest_runs".to_string(),
            format!(
                "/api/v2/daily_extremes.php?station_code=KNYC&logic=nws&start_date={}&end_date={}",
                day - chrono::Days::new(2),
                day + chrono::Days::new(1)
            ),
        ]
    };
    let specs = wxlake::jobs::embedded_specs().unwrap();
    let forecast_daily = specs.iter().find(|s| s.name == "forecast_daily").unwrap();
    let mut recorded = Vec::new();
    let mut next = 0;
    let mut r = lst_midnight - Duration::hours(1);
    while r <= end {
        while next < plan.len() && plan[next].at <= r {
            let d = &plan[next];
            clock.set(d.at);
            live.ingest(d.format, d.opts.clone(), d.body.clone().into_bytes()).await.unwrap();
            if d.flush {
                live.flush().await.unwrap();
            }
            // A new run refreshes forecast_daily, as `serve` does on new data.
            if d.format == Format::Forecasts {
                wxlake::jobs::run_job(&lake, forecast_daily, None, &wxlake::jobs::runner::no_progress).await.unwrap();
            }
            next += 1;
        }
        clock.set(r);
        for uri in uris(r) {
            let (status, headers, body) = api.get_any(&uri).await;
            let run = headers.get("x-run-time").map(|v| v.to_str().unwrap().to_string());
            recorded.push((r, uri, status, run, body));
        }
        r += Duration::minutes(30);
    }
    clock.set(end + Duration::hours(1));
    live.flush().await.unwrap();

    let strip = |mut v: serde_json::Value| {
        if let Some(o) = v.as_object_mut() {
            o.remove("timestamp");
        }
        v
    };
    let mut distinct_highs = std::collections::BTreeSet::new();
    let mut runs = std::collections::BTreeSet::new();
    let (mut qualities, mut sources, mut versions) =
        (std::collections::BTreeSet::new(), std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    for (i, (r, uri, status, run, body)) in recorded.iter().enumerate() {
        // A second a request keeps the key under its rate limit.
        clock.set(end + Duration::hours(1) + Duration::seconds(i as i64));
        let at = wxlake::time::fmt_iso_utc(*r);
        let (s, headers, again) = api.get_any(&format!("{uri}&as_of={at}")).await;
        let echoed = s.is_success().then_some(at.as_str());
        assert_eq!(
            (s, headers.get("x-as-of").map(|v| v.to_str().unwrap())),
            (*status, echoed),
            "{uri} at {at}: {again}"
        );
        let run_again = headers.get("x-run-time").map(|v| v.to_str().unwrap().to_string());
        assert_eq!(&run_again, run, "{uri} at {at}");
        assert_eq!(strip(again), strip(body.clone()), "{uri} at {at}");
        if uri.contains("svc_high&logic=nws&date=") && status.is_success() {
            distinct_highs.insert(body["svc_high"].to_string());
            qualities.insert(body["data_quality"].to_string());
            sources.insert(body["high_source"].to_string());
        }
        if uri.contains("mode=history") && uri.contains("nws_forecasts") {
            versions.insert(body["total_versions"].to_string());
        }
        runs.insert(run.clone());
    }
    // The day really changed while it was recorded: the high rose, its quality and source
    // changed (the late hour, the CLI and its correction), runs and NWS versions came.
    assert!(distinct_highs.len() >= 4, "{distinct_highs:?}");
    assert!(qualities.len() >= 3, "{qualities:?}");
    assert!(sources.len() >= 2, "{sources:?}");
    assert!(versions.len() >= 2, "{versions:?}");
    assert_eq!(runs.len(), 3, "no run, then the 06Z, then the 12Z: {runs:?}");
    for endpoint in
        ["pacing", "precipitation", "nearby", "mode=daily&run", "model=GFS&run=latest", "stations", "daily_extremes"]
    {
        let answered: std::collections::BTreeSet<String> = recorded
            .iter()
            .filter(|(_, u, s, _, _)| u.contains(endpoint) && s.is_success())
            .map(|(_, _, _, _, b)| strip(b.clone()).to_string())
            .collect();
        assert!(answered.len() >= 3, "{endpoint}: {} distinct answers", answered.len());
    }
}

#[tokio::test]
async fn as_of_is_refused_for_the_future_and_where_it_cannot_be_honoured() {
    let (dir, lake) = temp_lake().await;
    let now = t("2026-03-10T18:00:00Z");
    let clock = Arc::new(ManualClock::new(now));
    let live = Arc::new(open_live(&lake, &dir.path().join("state"), clock as Arc<dyn Clock>).await);
    let api = crate::support::Api::over(live, dir.path());
    let cases = [
        ("/api/v2/observations.php?station_code=KNYC&mode=latest&as_of=2026-03-10T18:00:01Z", "in the future"),
        ("/api/v2/observations.php?station_code=KNYC&mode=latest&as_of=noon", "Invalid as_of"),
        (
            "/api/v2/observations.php?station_code=KNYC&as_of=2026-03-10T01:00:00Z&as_of=2026-03-10T02:00:00Z",
            "Repeated",
        ),
        (
            "/api/v2/daily_extremes.php?station_code=KNYC&logic=nws&start_date=2026-03-09&end_date=2026-03-10\
             &as_of=2026-03-10T18:00:01Z",
            "in the future",
        ),
        ("/api/v1/observations.php?station_code=KNYC&as_of=2026-03-10T12:00:00Z", "v2 parameter"),
    ];
    for (uri, says) in cases {
        let (status, _, body) = api.get_any(uri).await;
        assert_eq!(status, axum::http::StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert!(body["error"].as_str().unwrap().contains(says), "{uri}: {body}");
    }
    // Before any data: the documented empty answers, echoing the time asked.
    let (status, headers, body) =
        api.get_any("/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=latest&as_of=2026-03-10T12:00:00Z").await;
    assert_eq!((status.as_u16(), body), (200, serde_json::json!([])));
    assert_eq!(headers.get("x-as-of").unwrap(), "2026-03-10T12:00:00Z");
    let (status, _, _) =
        api.get_any("/api/v2/observations.php?station_code=KNYC&mode=latest&as_of=2026-03-10T12:00:00Z").await;
    assert_eq!(status.as_u16(), 404);

    // The document says which operations take as_of, and that their answers echo it.
    let (_, _, doc) = api.get_any("/openapi.json").await;
    let mut taking = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(get) = item.get("get") else { continue };
        let params = get["parameters"].as_array().cloned().unwrap_or_default();
        if params.iter().any(|p| p["name"] == "as_of") {
            assert!(get["responses"]["200"]["headers"]["X-As-Of"].is_object(), "{path}");
            taking.push(path.trim_start_matches("/api/v2/").to_string());
        }
    }
    taking.sort();
    assert_eq!(
        taking,
        [
            "bracket_accuracy.php",
            "brackets.php",
            "daily_extremes.php",
            "forecasts.php",
            "model_accuracy.php",
            "nearby.php",
            "nws_forecasts.php",
            "observations.php",
            "pacing.php",
            "precipitation.php",
            "stations.php"
        ]
    );

    // A backfilled run (stored at once, published at 06Z + 330 min): `run=latest` does not
    // see it before its publication, and does after.
    let run = t("2026-03-10T06:00:00Z");
    lake.write((0..6).map(|lead| knyc_forecast("GFS", run, lead, 50.0)).collect::<Vec<_>>()).await.unwrap();
    for (at, want_run, want_rows) in
        [("2026-03-10T11:29:59Z", None, 0), ("2026-03-10T11:30:00Z", Some("2026-03-10T06:00:00Z"), 6)]
    {
        let uri = format!("/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=latest&as_of={at}");
        let (_, headers, body) = api.get_any(&uri).await;
        let got_run = headers.get("x-run-time").map(|v| v.to_str().unwrap().to_string());
        assert_eq!((got_run.as_deref(), body.as_array().map_or(0, Vec::len)), (want_run, want_rows), "{at}");
    }
}

#[tokio::test]
async fn a_climate_report_stating_no_issuance_takes_its_sources() {
    // The real CLINYC without its heading and local issue line: the text dates nothing.
    let text = std::fs::read_to_string(fixture("cli/CLINYC.txt")).unwrap();
    let bare: String = text
        .lines()
        .filter(|l| !l.starts_with("CDUS41") && !l.starts_with("116 AM EST"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(decode_cli(bare.as_bytes()).records[0].issued_at, None);
    let (_d, lake) = temp_lake().await;
    // As a feed ingests it: with api.weather.gov's issuanceTime.
    let issued = t("2013-01-03T06:40:00Z");
    let mut s = Summary::default();
    let opts = IngestOptions { issued: Some(issued), ..Default::default() };
    ingest_bytes(&lake, Format::Cli, "CLINYC", bare.as_bytes(), &opts, &mut s).await.unwrap();
    let got = rows(&lake, "SELECT issued_at, available_at FROM reports").await;
    assert_eq!(got, [["2013-01-03T06:40:00Z", "2013-01-03T06:40:00Z"]]);
}

/// The stream and REST say the same thing (issue 31, item 5): each `observation` event's
/// extremes and data quality, computed when the report was applied, are what `svc_high`
/// answers as of the event's time, under both logics. A day of KNYC reports to 16:00 (two
/// minutes after each observation) and one-minute batches (three minutes after each ten).
#[tokio::test]
async fn each_stream_event_says_what_svc_high_answers_as_of_its_time() {
    use wxlake::decode::onemin::{decode_onemin, encode_onemin_csv};
    let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 10).unwrap();
    let lst_midnight = Utc.with_ymd_and_hms(2026, 3, 10, 5, 0, 0).unwrap();
    let cfg = wxlake::demo::DemoConfig {
        end_date: day,
        days: 1,
        stations: vec!["KNYC".into()],
        seed: 11,
        now: lst_midnight + Duration::hours(36),
        forecasts: false,
        onemin: true,
    };
    let inputs = wxlake::demo::generate_station(&cfg, "KNYC");
    let march = IngestOptions { month: Some((2026, 3)), ..Default::default() };
    let until = lst_midnight + Duration::hours(16);
    let mut plan: Vec<(DateTime<Utc>, Format, IngestOptions, String)> = Vec::new();
    let wxlake::ingest::Records::Observations(reports) =
        Format::Metar.decode(inputs.metar_tsv.as_bytes(), &march).records
    else {
        panic!("observations")
    };
    for m in reports.iter().filter(|m| m.time >= lst_midnight && m.time < until) {
        let body = if m.raw.starts_with("METAR") || m.raw.starts_with("SPECI") {
            m.raw.clone()
        } else {
            format!("METAR {}", m.raw)
        };
        plan.push((m.time + Duration::minutes(2), Format::Metar, march.clone(), body));
    }
    let minutes = decode_onemin(inputs.onemin_csv.as_deref().unwrap().as_bytes()).records;
    let morning: Vec<_> = minutes.into_iter().filter(|o| o.time >= lst_midnight && o.time < until).collect();
    for batch in morning.chunk_by(|a, b| a.time.timestamp() / 600 == b.time.timestamp() / 600) {
        let at = batch.last().unwrap().time + Duration::minutes(3);
        plan.push((at, Format::Onemin, IngestOptions::default(), encode_onemin_csv(batch)));
    }
    plan.sort_by_key(|p| p.0);

    let (dir, lake) = temp_lake().await;
    let clock = Arc::new(ManualClock::new(lst_midnight - Duration::hours(1)));
    let live = Arc::new(open_live(&lake, &dir.path().join("state"), clock.clone() as Arc<dyn Clock>).await);
    let log = Arc::new(wxlake::stream::EventLog::open(&dir.path().join("events"), Duration::hours(48)).unwrap());
    let _publisher = wxlake::stream_bridge::spawn_publisher(
        Arc::clone(&live),
        Default::default(),
        Arc::clone(&log),
        wxlake::stream::Hub::new(64),
    )
    .await;
    let mut observed: Vec<serde_json::Value> = Vec::new();
    for (at, format, opts, body) in &plan {
        clock.set(*at);
        let before = log.last_id();
        // Returns once the publisher logged the input's events.
        live.ingest(*format, opts.clone(), body.clone().into_bytes()).await.unwrap();
        let wxlake::stream::Replay::Events { events, .. } =
            log.replay_after(&before.to_string(), &["KNYC".to_string()].into())
        else {
            panic!("the log replays")
        };
        observed.extend(events.iter().filter(|e| &*e.name == "observation").map(|e| e.data().unwrap()));
    }
    assert!(observed.len() >= 20, "{} observation events", observed.len());
    // Each report's receipt stamp, as stored: the moment its event was computed.
    live.flush().await.unwrap();
    let stamps: std::collections::HashMap<(String, String), String> = rows(
        &lake,
        "SELECT CAST(observation_time AS VARCHAR), report_type, \
         to_char(received_at, '%Y-%m-%dT%H:%M:%S%.6fZ') FROM observations",
    )
    .await
    .into_iter()
    .map(|r| ((r[0].clone(), r[1].clone()), r[2].clone()))
    .collect();

    let api = crate::support::Api::over(Arc::clone(&live), dir.path());
    clock.set(until + Duration::hours(1));
    let mut highs = std::collections::BTreeSet::new();
    for (i, data) in observed.iter().enumerate() {
        let time = data["observation_time_utc"].as_str().unwrap().to_string();
        let at = &stamps[&(time, data["product"].as_str().unwrap().to_string())];
        let obs = DateTime::parse_from_rfc3339(data["observation_time_utc"].as_str().unwrap()).unwrap().to_utc();
        for (logic, date) in [
            ("nws", (obs - Duration::hours(5)).date_naive().to_string()),
            ("wu", data["local_date"].as_str().unwrap().to_string()),
        ] {
            clock.set(until + Duration::hours(1) + Duration::seconds(2 * i as i64 + 1));
            let uri = format!(
                "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic={logic}&date={date}&as_of={at}"
            );
            let (status, _, rest) = api.get_any(&uri).await;
            assert!(status.is_success(), "{uri}: {rest}");
            // REST writes times as `YYYY-MM-DD HH:MM:SS` (spec 2.3), the stream in ISO 8601.
            let iso = |v: &serde_json::Value| match v.as_str() {
                Some(t) => serde_json::json!(format!("{}Z", t.replace(' ', "T"))),
                None => v.clone(),
            };
            let said = (&data["svc_high"][logic]["value_f"], &data["svc_high"][logic]["time_utc"]);
            assert_eq!(said, (&rest["svc_high"], &iso(&rest["time_of_high_utc"])), "{uri}");
            let said_low = (&data["svc_low"][logic]["value_f"], &data["svc_low"][logic]["time_utc"]);
            assert_eq!(said_low, (&rest["svc_low"], &iso(&rest["time_of_low_utc"])), "{uri}");
            assert_eq!(data["data_quality"][logic], rest["data_quality"][logic], "{uri}");
            if logic == "nws" {
                assert_eq!(data["high_valid_through_utc"], rest["high_valid_through_utc"], "{uri}");
                highs.insert(rest["svc_high"].to_string());
            }
        }
    }
    assert!(highs.len() >= 3, "the morning's high rose: {highs:?}");
}
