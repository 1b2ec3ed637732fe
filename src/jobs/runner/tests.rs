//! Runs against a real lake in a temporary directory.

use std::sync::Mutex;

use chrono::{DateTime, TimeZone};
use datafusion::arrow::array::AsArray;
use datafusion::prelude::SessionContext;
use futures::TryStreamExt;
use object_store::path::Path;

use super::*;
use crate::decode::types::ForecastRow;
use crate::jobs::job_set::{find, load_specs};
use crate::jobs::plan::{full_range, replaced_files, split_days, split_range, Replace};
use crate::jobs::spec::parse_spec;
use crate::jobs::tables::register_derived_with;
use crate::lake::query;

fn d(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

fn rows(
    model: &'static str,
    station: &str,
    run: DateTime<Utc>,
    leads: impl Iterator<Item = i32>,
    offset: f64,
) -> Vec<ForecastRow> {
    leads
        .map(|h| {
            let mut r = ForecastRow {
                model,
                location_name: station.into(),
                run_time: run,
                valid_time: run + Duration::hours(i64::from(h)),
                forecast_hour: h,
                temperature_c: Some(f64::from(h) / 10.0 + offset).into(),
                ..Default::default()
            };
            r.complete_temperatures();
            r
        })
        .collect()
}

async fn lake() -> (tempfile::TempDir, Lake) {
    let tmp = tempfile::tempdir().unwrap();
    let lake = Lake::open(&tmp.path().join("lake").display().to_string()).await.unwrap();
    (tmp, lake)
}

fn forecast_daily() -> JobSpec {
    let specs = load_specs(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs")).unwrap();
    find(&specs, "forecast_daily").unwrap().clone()
}

async fn scalar(lake: &Lake, spec: &JobSpec, q: &str) -> String {
    let ctx = query::session(lake).await.unwrap();
    register_derived_with(&ctx, lake, std::slice::from_ref(spec)).unwrap();
    answer(&ctx, q).await
}

/// The rows of `q`'s answer, `;`-separated, their cells ` | `-separated.
async fn answer(ctx: &SessionContext, q: &str) -> String {
    let b = ctx.sql(q).await.unwrap().collect().await.unwrap();
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&b).unwrap().to_string();
    text.lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect::<Vec<_>>().join(" | "))
        .collect::<Vec<_>>()
        .join(";")
}

async fn output_files(lake: &Lake, spec: &JobSpec) -> Vec<Path> {
    replaced_files(lake, spec, Replace::All).await.unwrap().1.into_iter().map(|f| f.location).collect()
}

#[tokio::test]
async fn runs_publish_replace_and_record() {
    let (_tmp, lake) = lake().await;
    let spec = forecast_daily();
    let r1 = Utc.with_ymd_and_hms(2026, 1, 10, 0, 0, 0).unwrap();
    let r2 = Utc.with_ymd_and_hms(2026, 1, 11, 0, 0, 0).unwrap();
    let mut input = rows("GFS", "KNYC", r1, 0..=72, 0.0);
    input.extend(rows("GFS", "EGLC", r1, 0..=72, 0.0));
    input.extend(rows("ICON", "KNYC", r2, 0..=72, 0.0));
    lake.write(input).await.unwrap();

    // Full run: every run_date of the forecasts.
    let seen = Mutex::new(Vec::new());
    let run = run_job(&lake, &spec, None, &|p: &Progress| seen.lock().unwrap().push(p.step.clone())).await.unwrap();
    assert_eq!(run.status, RunStatus::Ok);
    assert_eq!(run.partitions, 2, "run_date=2026-01-10 (GFS), run_date=2026-01-11 (ICON)");
    let total = scalar(&lake, &spec, "SELECT count(*) FROM forecast_daily").await;
    assert_eq!(total, run.rows.to_string());
    assert_eq!(
        scalar(&lake, &spec, "SELECT count(*) FROM forecast_daily WHERE location_name = 'EGLC' AND tz_mode = 'civil'")
            .await,
        "3"
    );
    assert_eq!(
        scalar(&lake, &spec, "SELECT high_f IS NULL, high_c FROM forecast_daily WHERE location_name = 'EGLC' AND tz_mode = 'civil' AND date = DATE '2026-01-10'").await,
        "true | 2.3"
    );
    let steps = seen.into_inner().unwrap();
    assert_eq!(steps.first(), Some(&Step::Start));
    assert_eq!(steps.last(), Some(&Step::Finish));
    let files = output_files(&lake, &spec).await;
    assert_eq!(files.len(), 2);

    // A long-lived session (the API's) sees republished output.
    let long_lived = query::session(&lake).await.unwrap();
    register_derived_with(&long_lived, &lake, std::slice::from_ref(&spec)).unwrap();
    let count = |ctx: SessionContext| async move {
        let b = ctx.sql("SELECT count(DISTINCT run_time) FROM forecast_daily WHERE model = 'GFS'").await.unwrap();
        let b = b.collect().await.unwrap();
        b[0].column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0)
    };
    assert_eq!(count(long_lived.clone()).await, 1);

    // Re-run one day after new data: only that partition's file changes.
    lake.write(rows("GFS", "KNYC", r1 + Duration::hours(6), 0..=72, 0.0)).await.unwrap();
    let run2 = run_job(&lake, &spec, Some((d("2026-01-10"), d("2026-01-10"))), &no_progress).await.unwrap();
    assert_eq!(run2.range, Some((d("2026-01-10"), d("2026-01-10"))));
    let after = output_files(&lake, &spec).await;
    assert_eq!(after.len(), 2);
    assert!(!after.contains(&files.iter().find(|p| p.as_ref().contains("run_date=2026-01-10")).unwrap().clone()));
    let icon: Vec<_> = files.iter().filter(|p| p.as_ref().contains("run_date=2026-01-11")).collect();
    assert!(icon.iter().all(|p| after.contains(p)), "the ICON partition (2026-01-11) is untouched");
    assert_eq!(
        scalar(&lake, &spec, "SELECT count(DISTINCT run_time) FROM forecast_daily WHERE model = 'GFS'").await,
        "2"
    );

    // Idempotent: the same range again gives the same rows.
    let before = scalar(&lake, &spec, "SELECT count(*), sum(points_used), sum(high_f) FROM forecast_daily").await;
    run_job(&lake, &spec, Some((d("2026-01-10"), d("2026-01-11"))), &no_progress).await.unwrap();
    run_job(&lake, &spec, None, &no_progress).await.unwrap();
    assert_eq!(
        scalar(&lake, &spec, "SELECT count(*), sum(points_used), sum(high_f) FROM forecast_daily").await,
        before
    );
    assert_eq!(output_files(&lake, &spec).await.len(), 2);

    // Everything recorded, newest first; nothing left staged.
    let hist = runs::history(&lake, Some("forecast_daily"), 10).await.unwrap();
    assert_eq!(hist.len(), 4);
    assert!(hist.iter().all(|r| r.status == RunStatus::Ok));
    assert_eq!(
        scalar(&lake, &spec, "SELECT count(*) FROM job_runs WHERE job = 'forecast_daily' AND status = 'ok'").await,
        "4"
    );
    let staged: Vec<_> = lake.store().list(Some(&lake.staging_root())).try_collect().await.unwrap();
    assert!(staged.is_empty());
}

/// A lake whose `forecast_daily` was written partitioned by (model, run_date), as every
/// lake was before the declaration changed to run_date alone: until the next run the
/// table reads as before, through the new declaration (same rows, the declared column
/// order, filters on either column); that run, even one asked for a single day,
/// recomputes every run date and lays the table out anew in one commit; the version
/// before it still reads the same rows by its own layout. A reader whose declaration
/// still names the old partition columns reads the new layout too, its filter on `model`
/// applied.
#[tokio::test]
async fn a_changed_partitioning_lays_the_table_out_anew() {
    let (_tmp, lake) = lake().await;
    let spec = forecast_daily();
    let mut old = spec.clone();
    old.output.partition_by = vec!["model".into(), "run_date".into()];
    old.output.sort_by = ["location_name", "run_time", "tz_mode", "date"].map(String::from).to_vec();
    let r1 = Utc.with_ymd_and_hms(2026, 1, 10, 0, 0, 0).unwrap();
    let r2 = Utc.with_ymd_and_hms(2026, 1, 11, 12, 0, 0).unwrap();
    let mut input = rows("GFS", "KNYC", r1, 0..=72, 0.0);
    input.extend(rows("ICON", "KNYC", r1, 0..=72, 1.0));
    input.extend(rows("GFS", "EGLC", r2, 0..=72, 2.0));
    lake.write(input).await.unwrap();

    let dir = spec.output.shape().dir;
    let layout = |lake: &Lake| {
        let (lake, dir) = (lake.clone(), dir.clone());
        async move {
            let (table, files) = lake.snapshot_files(&dir).await.unwrap().unwrap();
            let dirs: Vec<String> = files.iter().map(|f| f.partition_dir().to_string()).collect();
            (table.version().unwrap(), dirs)
        }
    };
    run_job(&lake, &old, None, &no_progress).await.unwrap();
    let (old_version, dirs) = layout(&lake).await;
    assert_eq!(
        dirs,
        ["model=GFS/run_date=2026-01-10", "model=GFS/run_date=2026-01-11", "model=ICON/run_date=2026-01-10"]
    );
    assert!(lake.layout_differs(&spec.output.shape()).await.unwrap());
    assert!(!lake.layout_differs(&old.output.shape()).await.unwrap());

    let all = "SELECT model, run_date, location_name, tz_mode, date, timezone, run_time, points_used, high_f, low_f, \
               high_c, low_c, available_at FROM forecast_daily ORDER BY model, run_date, location_name, tz_mode, date";
    let rows_before = scalar(&lake, &old, all).await;
    assert_eq!(
        scalar(&lake, &spec, all).await,
        rows_before,
        "the old layout reads the same through the new declaration"
    );
    let by_model = "SELECT count(*), sum(high_f) FROM forecast_daily WHERE model = 'ICON' AND run_date = '2026-01-10'";
    let icon = scalar(&lake, &old, by_model).await;
    assert!(!icon.starts_with("0 "), "{icon}");
    assert_eq!(scalar(&lake, &spec, by_model).await, icon);
    let columns = |lake: &Lake, spec: &JobSpec| {
        let (lake, spec) = (lake.clone(), spec.clone());
        async move {
            let ctx = query::session(&lake).await.unwrap();
            register_derived_with(&ctx, &lake, std::slice::from_ref(&spec)).unwrap();
            let batches = ctx.sql("SELECT * FROM forecast_daily").await.unwrap().collect().await.unwrap();
            batches[0].schema().fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>()
        }
    };
    let declared: Vec<String> = spec.output.shape().table_schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(declared.first().map(String::as_str), Some("model"));
    assert_eq!(columns(&lake, &spec).await, declared);

    // One day asked for: every run date recomputed, the table laid out anew.
    let run = run_job(&lake, &spec, Some((d("2026-01-11"), d("2026-01-11"))), &no_progress).await.unwrap();
    assert_eq!((run.range, run.partitions), (None, 2), "{run:?}");
    let (new_version, dirs) = layout(&lake).await;
    assert_eq!(
        (new_version, dirs),
        (old_version + 1, vec!["run_date=2026-01-10".into(), "run_date=2026-01-11".into()])
    );
    assert!(!lake.layout_differs(&spec.output.shape()).await.unwrap());
    assert_eq!(scalar(&lake, &spec, all).await, rows_before);
    assert_eq!(scalar(&lake, &spec, by_model).await, icon);
    assert_eq!(columns(&lake, &spec).await, declared);
    assert_eq!(scalar(&lake, &old, by_model).await, icon, "an older declaration's exact filter on model still applies");
    assert_eq!(scalar(&lake, &old, all).await, rows_before);

    // The version before the change, by its own layout.
    let ctx = query::session(&lake).await.unwrap();
    let before = crate::lake::snapshot_table::SnapshotTable::new(
        &lake,
        spec.output.shape(),
        crate::lake::delta::At::Version(old_version),
    )
    .unwrap();
    ctx.register_table("forecast_daily", Arc::new(before)).unwrap();
    assert_eq!(answer(&ctx, all).await, rows_before);
    let count = "SELECT count(*) FROM forecast_daily";
    assert_eq!(answer(&ctx, count).await, scalar(&lake, &spec, count).await);

    // A later run keeps the new layout and replaces only its range.
    let run = run_job(&lake, &spec, Some((d("2026-01-11"), d("2026-01-11"))), &no_progress).await.unwrap();
    assert_eq!(run.range, Some((d("2026-01-11"), d("2026-01-11"))));
    assert_eq!(scalar(&lake, &spec, all).await, rows_before);
}

#[tokio::test]
async fn a_failed_run_leaves_the_previous_output() {
    let (_tmp, lake) = lake().await;
    let good = forecast_daily();
    let r1 = Utc.with_ymd_and_hms(2026, 1, 10, 0, 0, 0).unwrap();
    lake.write(rows("GFS", "KNYC", r1, 0..=72, 0.0)).await.unwrap();
    run_job(&lake, &good, None, &no_progress).await.unwrap();
    let before = scalar(&lake, &good, "SELECT count(*), sum(high_f) FROM forecast_daily").await;
    let files = output_files(&lake, &good).await;

    // Same output table, SQL failing at run time: nothing changes, the failure is recorded.
    let mut bad = good.clone();
    bad.sql[0].text = good.sql[0].text.replace("FROM fd_days d", "FROM fd_days d JOIN no_such_table x ON true");
    lake.write(rows("GFS", "KNYC", r1 + Duration::hours(6), 0..=72, 5.0)).await.unwrap();
    let e = run_job(&lake, &bad, Some((d("2026-01-10"), d("2026-01-10"))), &no_progress).await.unwrap_err();
    assert!(e.to_string().contains("no_such_table"), "{e}");
    assert_eq!(scalar(&lake, &good, "SELECT count(*), sum(high_f) FROM forecast_daily").await, before);
    assert_eq!(output_files(&lake, &good).await, files);
    let last = &runs::history(&lake, Some("forecast_daily"), 1).await.unwrap()[0];
    assert_eq!(last.status, RunStatus::Failed);
    assert!(last.error.as_deref().unwrap_or("").contains("no_such_table"));

    // Output outside the declared range or contract is refused before publishing.
    let mut outside = good.clone();
    outside.sql[0].text =
        good.sql[0].text.replace("d.run_date,\n    d.location_name", "'2030-01-01' AS run_date,\n    d.location_name");
    let e = run_job(&lake, &outside, Some((d("2026-01-10"), d("2026-01-10"))), &no_progress).await.unwrap_err();
    assert!(e.to_string().contains("outside the run's range"), "{e}");
    let mut undeclared = good.clone();
    undeclared.sql[0].text =
        good.sql[0].text.replace("d.points AS points_used,", "d.points AS points_used, 1 AS extra,");
    let e = run_job(&lake, &undeclared, None, &no_progress).await.unwrap_err();
    assert!(e.to_string().contains("extra"), "{e}");
    assert_eq!(scalar(&lake, &good, "SELECT count(*), sum(high_f) FROM forecast_daily").await, before);
}

#[tokio::test]
async fn ranges_are_checked_and_chunked() {
    let (_tmp, lake) = lake().await;
    let spec = forecast_daily();
    // Before any run the derived tables exist and are empty.
    let ctx = query::session(&lake).await.unwrap();
    crate::jobs::register_derived(&ctx, &lake).await.unwrap();
    for t in ["forecast_daily", "job_runs"] {
        let n = ctx.sql(&format!("SELECT count(*) FROM {t}")).await.unwrap().collect().await.unwrap();
        assert_eq!(n[0].column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0), 0, "{t}");
    }
    let e = run_job(&lake, &spec, Some((d("2026-01-12"), d("2026-01-10"))), &no_progress).await.unwrap_err();
    assert!(e.to_string().contains("after"), "{e}");
    assert_eq!(split_range(d("2026-01-01"), d("2026-01-15"), 7).len(), 3);
    assert_eq!(split_range(d("2026-01-01"), d("2026-01-15"), 7)[2], Some((d("2026-01-15"), d("2026-01-15"))));
    // An empty lake: a full run publishes nothing and succeeds.
    let run = run_job(&lake, &spec, None, &no_progress).await.unwrap();
    assert_eq!((run.rows, run.partitions), (0, 0));

    let plain = parse_spec(
        "t",
        "name = \"plain\"\nsql = \"q.sql\"\n[output]\ntable = \"plain\"\ncolumns = [{ name = \"n\", type = \"bigint\" }]\n",
        &|_| Ok("SELECT count(*) AS n FROM stations".into()),
    )
    .unwrap();
    let e = run_job(&lake, &plain, Some((d("2026-01-10"), d("2026-01-10"))), &no_progress).await.unwrap_err();
    assert!(e.to_string().contains("incremental"), "{e}");
    let run = run_job(&lake, &plain, None, &no_progress).await.unwrap();
    assert_eq!(run.rows, 1);
    assert_eq!(scalar(&lake, &plain, "SELECT n FROM plain").await, "70");
}

/// An incremental job whose full-run days come from a column of a derived table
/// (`[incremental] source = "forecast_daily.model"`): the spec cannot check the type
/// when it is loaded; a full run refuses with a clear error instead of panicking.
fn by_days(source: &str, input: &str) -> JobSpec {
    let toml = format!(
        "name = \"by_days\"\nsql = \"q.sql\"\ninputs = [\"{input}\"]\n[output]\ntable = \"by_days\"\n\
         partition_by = [\"d\"]\ncolumns = [{{ name = \"d\", type = \"date\" }}, {{ name = \"n\", type = \"bigint\" }}]\n\
         [incremental]\nkey = \"d\"\nsource = \"{source}\"\n"
    );
    parse_spec("t", &toml, &|_| {
        Ok("SELECT DATE '2026-01-10' AS d, count(*) AS n FROM stations WHERE DATE '2026-01-10' BETWEEN $from AND $to"
            .into())
    })
    .unwrap()
}

#[tokio::test]
async fn a_derived_source_column_that_is_not_a_date_is_refused() {
    let (_tmp, lake) = lake().await;
    let mut spec = by_days("forecast_daily.model", "forecast_daily");
    spec.derived_inputs = vec![forecast_daily().output];
    let e = run_job(&lake, &spec, None, &no_progress).await.unwrap_err();
    assert!(e.to_string().contains("forecast_daily.model is Utf8, not a date"), "{e}");
    let mut missing = by_days("forecast_daily.nope", "forecast_daily");
    missing.derived_inputs = vec![forecast_daily().output];
    let e = run_job(&lake, &missing, None, &no_progress).await.unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
}

/// A full run computes the days its sources hold, not the calendar between them: two
/// forecast runs 21 years apart are two chunks, not the ~1,100 empty ones between (each a
/// query round trip; on a cluster several Ballista stages of executor polling, which made
/// `jobs run --all --cluster` on such a lake take many minutes).
#[tokio::test]
async fn a_full_run_skips_the_years_no_source_holds() {
    let days = [d("2026-01-01"), d("2026-01-02"), d("2026-01-09"), d("2026-03-01")];
    assert_eq!(
        split_days(&days, 7),
        vec![
            Some((d("2026-01-01"), d("2026-01-02"))),
            Some((d("2026-01-09"), d("2026-01-09"))),
            Some((d("2026-03-01"), d("2026-03-01")))
        ]
    );
    // Contiguous days: the chunks of split_range.
    let all: Vec<NaiveDate> = (0..15).map(|i| d("2026-01-01") + Duration::days(i)).collect();
    assert_eq!(split_days(&all, 7), split_range(d("2026-01-01"), d("2026-01-15"), 7));
    assert!(split_days(&[], 7).is_empty());

    let (_tmp, lake) = lake().await;
    let spec = forecast_daily();
    for y in [2005, 2026] {
        lake.write(rows("GFS", "KNYC", Utc.with_ymd_and_hms(y, 1, 10, 0, 0, 0).unwrap(), 0..=48, 0.0)).await.unwrap();
    }
    let p = plan(&lake, &spec, None).await.unwrap();
    assert_eq!(p.chunks, vec![Some((d("2005-01-10"), d("2005-01-10"))), Some((d("2026-01-10"), d("2026-01-10")))]);
    assert_eq!(
        full_range(&lake, &spec, spec.incremental.as_ref().unwrap()).await.unwrap(),
        Some((d("2005-01-10"), d("2026-01-10")))
    );
    // The run publishes both years' rows and replaces everything, as before.
    let run = run_job(&lake, &spec, None, &no_progress).await.unwrap();
    assert!(run.rows > 0 && run.partitions == 2, "{run:?}");
}

/// One report dated 1970 and one dated 2099 do not stretch a full run over decades:
/// the range is the plausible days (FULL_RUN_FLOOR or older lake data, today + 2).
#[tokio::test]
async fn bogus_report_dates_do_not_stretch_a_full_run() {
    use crate::decode::types::{DailyKind, DailyReport};
    let (_tmp, lake) = lake().await;
    let spec = by_days("reports.report_date", "reports");
    let inc = spec.incremental.clone().unwrap();
    let today = Utc::now().date_naive();
    let report = |date: NaiveDate| DailyReport::blank(DailyKind::Cli, "KNYC", date);
    lake.write(vec![report(d("1970-01-01")), report(d("1995-06-01")), report(today - Duration::days(3))])
        .await
        .unwrap();
    lake.write(vec![report(d("2099-01-01")), report(today + Duration::days(40))]).await.unwrap();
    assert_eq!(full_range(&lake, &spec, &inc).await.unwrap(), Some((d("1995-06-01"), today - Duration::days(3))));
    // Forecasts older than the floor make it earlier: a 1985 report is then plausible.
    lake.write(rows("GFS", "KNYC", Utc.with_ymd_and_hms(1985, 1, 10, 0, 0, 0).unwrap(), 0..=3, 0.0)).await.unwrap();
    lake.write(vec![report(d("1985-02-01"))]).await.unwrap();
    assert_eq!(full_range(&lake, &spec, &inc).await.unwrap(), Some((d("1985-02-01"), today - Duration::days(3))));
}
