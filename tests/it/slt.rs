//! sqllogictest for the SQL jobs (sql/*.sql): every tests/slt/*.slt file runs in a fresh
//! DataFusion session holding small fixture tables named like the real ones.
//!
//! The session has `stations` and `models` (the real in-memory catalog tables), empty
//! `observations`, `onemin` and `reports` tables with the lake's column types (all
//! nullable), and an empty `forecast_points(model, location_name, run_time, forecast_hour,
//! temperature_f, temperature_c)`; a file fills them with INSERT (run_time is an ISO 8601
//! UTC string) and may create any other input (`forecast_daily`, `daily_extremes` ...)
//! with CREATE TABLE.
//! The record
//!
//! ```text
//! statement ok
//! RUN JOB forecast_daily FROM 2026-03-07 TO 2026-03-08
//! ```
//!
//! (or `RUN JOB <name>` for a job without an incremental key) runs a job; for a job reading
//! `forecasts` it first turns forecast_points into a `forecasts` table as ingest would (valid_time = run_time +
//! forecast_hour, run_date = UTC date of run_time, valid_date_standard / valid_date_civil
//! from the station's zone through crate::time); for a job that replays observations
//! (`observed_extremes`, `bracket_forecasts`) it first stores each inserted report with
//! the columns ingest's parse gives it, as the lake holds them; it registers the job's helper tables for the
//! range and runs the job's own SQL files (jobs/<name>.toml) through the jobs engine's
//! `run_statements`, with the job session's settings (`tables::tuned`), so the tests run
//! the exact text the job runs. The result is registered as the job's output table
//! (`forecast_daily`) for the queries that follow.
//!
//! `WXLAKE_SLT_COMPLETE=1 cargo test ... slt` rewrites the expected results in place.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, Date32Array, Float64Array, Int32Array, RecordBatch, StringArray,
    TimestampMicrosecondArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int32Type, Schema, TimestampMicrosecondType};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};
use wxlake::catalog::Catalog;
use wxlake::decode::metar::parse_metar;
use wxlake::decode::types::{Metar, ReportKind};
use wxlake::jobs::encode::output_batch;
use wxlake::jobs::job_set::{find, load_specs};
use wxlake::jobs::rust_tables::{self, RustTable};
use wxlake::jobs::spec::JobSpec;
use wxlake::jobs::statements::{run_statements, Intermediates};
use wxlake::jobs::tables::tuned;
use wxlake::lake::query::{models_table, stations_table};
use wxlake::lake::rows::{LakeRecord, RowTimes};
use wxlake::lake::schema::{FORECASTS, OBSERVATIONS, ONEMIN, REPORTS};
use wxlake::time::{civil_date, parse_utc, standard_date};

/// A DataFusion session with the job fixtures; one per .slt file.
struct JobsDb {
    ctx: SessionContext,
    specs: Vec<JobSpec>,
}

#[derive(Debug)]
struct SltError(String);

impl std::fmt::Display for SltError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SltError {}

fn err(e: impl std::fmt::Display) -> SltError {
    SltError(e.to_string())
}

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

impl JobsDb {
    async fn new() -> Result<Self, SltError> {
        let specs = load_specs(crate_root().join("jobs")).map_err(err)?;
        let ctx = tuned(&SessionContext::new());
        ctx.register_table("stations", Arc::new(stations_table().map_err(err)?)).map_err(err)?;
        ctx.register_table("models", Arc::new(models_table().map_err(err)?)).map_err(err)?;
        // Empty observation-side lake tables with their real column types (every column
        // nullable, so a file INSERTs only the columns that matter; partition columns as
        // strings, as the lake registers them).
        for t in [&OBSERVATIONS, &ONEMIN, &REPORTS] {
            let mut fields: Vec<Field> =
                t.file_schema().fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect();
            fields.extend(t.partition_cols.iter().map(|p| Field::new(*p, DataType::Utf8, true)));
            let table = MemTable::try_new(Arc::new(Schema::new(fields)), vec![vec![]]).map_err(err)?;
            ctx.register_table(t.name, Arc::new(table)).map_err(err)?;
        }
        ctx.sql(
            "CREATE TABLE forecast_points (model VARCHAR NOT NULL, location_name VARCHAR NOT NULL, \
             run_time VARCHAR NOT NULL, forecast_hour INT NOT NULL, temperature_f DOUBLE, temperature_c DOUBLE)",
        )
        .await
        .map_err(err)?
        .collect()
        .await
        .map_err(err)?;
        Ok(JobsDb { ctx, specs })
    }

    /// `RUN JOB <name> FROM <date> TO <date>`, or `RUN JOB <name>` for a job without an
    /// incremental key.
    async fn run_job(&mut self, words: &[&str]) -> Result<u64, SltError> {
        let usage = || {
            SltError(format!("expected RUN JOB <name> [FROM <YYYY-MM-DD> TO <YYYY-MM-DD>], found {}", words.join(" ")))
        };
        let date = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| usage());
        let (name, range) = match words {
            [_, _, name] => (*name, None),
            [_, _, name, from_kw, from, to_kw, to]
                if from_kw.eq_ignore_ascii_case("FROM") && to_kw.eq_ignore_ascii_case("TO") =>
            {
                (*name, Some((date(from)?, date(to)?)))
            }
            _ => return Err(usage()),
        };
        let spec = find(&self.specs, name).map_err(err)?.clone();
        if spec.sql.iter().any(|f| f.text.contains("FROM forecasts")) {
            let forecasts = forecasts_from_points(&self.ctx).await?;
            self.ctx.deregister_table("forecasts").map_err(err)?;
            self.ctx.register_table("forecasts", Arc::new(forecasts)).map_err(err)?;
        }
        if spec.helpers.iter().any(|h| matches!(h, RustTable::ObservedExtremes | RustTable::BracketForecasts)) {
            let observations = observations_as_ingested(&self.ctx).await?;
            self.ctx.deregister_table(OBSERVATIONS.name).map_err(err)?;
            self.ctx.register_table(OBSERVATIONS.name, Arc::new(observations)).map_err(err)?;
        }
        if let Some((a, b)) = range {
            let mut helpers = rust_tables::Helpers::new(Utc::now());
            helpers.register(&self.ctx, &spec.helpers, a, b, rust_tables::Placement::Local).await.map_err(err)?;
        }
        let df = run_statements(&self.ctx, &spec, range, Intermediates::Tables).await.map_err(err)?;
        let batches = df.collect().await.map_err(err)?;
        let batch = output_batch(&spec, &batches).map_err(err)?;
        let rows = batch.as_ref().map_or(0, RecordBatch::num_rows);
        self.ctx.deregister_table(spec.output.table.as_str()).map_err(err)?;
        let table = MemTable::try_new(spec.output.schema(), vec![batch.into_iter().collect()]).map_err(err)?;
        self.ctx.register_table(spec.output.table.as_str(), Arc::new(table)).map_err(err)?;
        Ok(rows as u64)
    }
}

/// The `forecasts` table (real schema plus the model/run_date partition columns) built
/// from `forecast_points` the way ingest fills it.
async fn forecasts_from_points(ctx: &SessionContext) -> Result<MemTable, SltError> {
    let batches = ctx
        .sql("SELECT model, location_name, run_time, forecast_hour, temperature_f, temperature_c FROM forecast_points")
        .await
        .map_err(err)?
        .collect()
        .await
        .map_err(err)?;
    let (mut model, mut loc, mut run, mut valid, mut lead, mut tf, mut tc) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut vds, mut vdc, mut run_date) = (vec![], vec![], vec![]);
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap();
    let days = |d: NaiveDate| (d - epoch).num_days() as i32;
    for b in &batches {
        let s = |i: usize| cast(b.column(i), &DataType::Utf8).map_err(err);
        let (m, l, r) = (s(0)?, s(1)?, s(2)?);
        let h = cast(b.column(3), &DataType::Int32).map_err(err)?;
        let (f, c) =
            (cast(b.column(4), &DataType::Float64).map_err(err)?, cast(b.column(5), &DataType::Float64).map_err(err)?);
        let (m, l, r) = (m.as_string::<i32>(), l.as_string::<i32>(), r.as_string::<i32>());
        let (h, f, c) =
            (h.as_primitive::<Int32Type>(), f.as_primitive::<Float64Type>(), c.as_primitive::<Float64Type>());
        for i in 0..b.num_rows() {
            let run_time: DateTime<Utc> = parse_utc(r.value(i))
                .ok_or_else(|| SltError(format!("run_time '{}' is not a UTC time", r.value(i))))?;
            let valid_time = run_time + Duration::hours(i64::from(h.value(i)));
            let station = Catalog::global().get(l.value(i));
            model.push(m.value(i).to_string());
            loc.push(l.value(i).to_string());
            run.push(run_time.timestamp_micros());
            valid.push(valid_time.timestamp_micros());
            lead.push(h.value(i));
            tf.push(f.is_valid(i).then(|| f.value(i)));
            tc.push(c.is_valid(i).then(|| c.value(i)));
            vds.push(station.map(|s| days(standard_date(s.timezone, valid_time))));
            vdc.push(station.map(|s| days(civil_date(s.timezone, valid_time))));
            run_date.push(run_time.format("%Y-%m-%d").to_string());
        }
    }
    let n = model.len();
    let file_schema = FORECASTS.file_schema();
    let mut fields: Vec<Field> = file_schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("model", DataType::Utf8, false));
    fields.push(Field::new("run_date", DataType::Utf8, false));
    let schema = Arc::new(Schema::new(fields));
    let mut cols: Vec<ArrayRef> = Vec::new();
    for f in schema.fields() {
        let col: ArrayRef = match f.name().as_str() {
            "location_name" => Arc::new(StringArray::from(loc.clone())),
            "run_time" => Arc::new(TimestampMicrosecondArray::from(run.clone()).with_timezone("UTC")),
            "valid_time" => Arc::new(TimestampMicrosecondArray::from(valid.clone()).with_timezone("UTC")),
            "inserted_at" => Arc::new(TimestampMicrosecondArray::from(vec![0; n]).with_timezone("UTC")),
            "forecast_hour" => Arc::new(Int32Array::from(lead.clone())),
            "temperature_f" => Arc::new(Float64Array::from(tf.clone())),
            "temperature_c" => Arc::new(Float64Array::from(tc.clone())),
            "valid_date_standard" => Arc::new(Date32Array::from(vds.clone())),
            "valid_date_civil" => Arc::new(Date32Array::from(vdc.clone())),
            "row_key" => Arc::new(UInt64Array::from((0..n as u64).collect::<Vec<_>>())),
            "model" => Arc::new(StringArray::from(model.clone())),
            "run_date" => Arc::new(StringArray::from(run_date.clone())),
            _ => new_null_array(f.data_type(), n),
        };
        cols.push(col);
    }
    let batch = RecordBatch::try_new(Arc::clone(&schema), cols).map_err(err)?;
    MemTable::try_new(schema, vec![vec![batch]]).map_err(err)
}

/// The `observations` table as ingest writes it: every inserted report parsed from its
/// `raw` text (one that does not parse is refused by ingest, so dropped) and stored with all
/// its columns (`LakeRecord::to_batch`), keeping the row's `date` and `available_at` (null
/// stays null: never known). The jobs' replays read those parsed columns, as from a lake.
async fn observations_as_ingested(ctx: &SessionContext) -> Result<MemTable, SltError> {
    let sql = "SELECT observation_time, report_type, raw, available_at, date FROM observations";
    let batches = ctx.sql(sql).await.map_err(err)?.collect().await.map_err(err)?;
    let (mut metars, mut available, mut dates) = (Vec::new(), Vec::new(), Vec::new());
    for b in &batches {
        let (t, kind, raw) = (
            b.column(0).as_primitive::<TimestampMicrosecondType>(),
            b.column(1).as_string::<i32>(),
            b.column(2).as_string::<i32>(),
        );
        let (known, date) = (b.column(3).as_primitive::<TimestampMicrosecondType>(), b.column(4).as_string::<i32>());
        for i in 0..b.num_rows() {
            let Some(time) = DateTime::from_timestamp_micros(t.value(i)) else { continue };
            let Ok(mut m) = parse_metar(raw.value(i), time) else { continue };
            m.time = time;
            m.kind = ReportKind::parse(kind.value(i));
            metars.push(m);
            available.push(known.is_valid(i).then(|| known.value(i)));
            dates.push(date.value(i).to_string());
        }
    }
    let refs: Vec<&Metar> = metars.iter().collect();
    let keys: Vec<u64> = refs.iter().map(|m| m.row_key()).collect();
    let stamps: Vec<i64> = available.iter().map(|a| a.unwrap_or(0)).collect();
    let times = RowTimes { inserted_at: 0, received_at: stamps.clone(), available_at: stamps };
    let stored = Metar::to_batch(&refs, &keys, times).map_err(err)?;
    let mut fields: Vec<Field> =
        OBSERVATIONS.file_schema().fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect();
    fields.push(Field::new("date", DataType::Utf8, true));
    let schema = Arc::new(Schema::new(fields));
    let mut cols: Vec<ArrayRef> = Vec::new();
    for f in schema.fields() {
        cols.push(match f.name().as_str() {
            "available_at" => Arc::new(TimestampMicrosecondArray::from(available.clone()).with_timezone("UTC")),
            "received_at" => new_null_array(f.data_type(), refs.len()),
            "date" => Arc::new(StringArray::from(dates.clone())),
            name => Arc::clone(stored.column_by_name(name).ok_or_else(|| SltError(format!("no column {name}")))?),
        });
    }
    let batch = RecordBatch::try_new(Arc::clone(&schema), cols).map_err(err)?;
    MemTable::try_new(schema, vec![vec![batch]]).map_err(err)
}

fn column_type(dt: &DataType) -> DefaultColumnType {
    match dt {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => DefaultColumnType::Integer,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => DefaultColumnType::Integer,
        DataType::Float16 | DataType::Float32 | DataType::Float64 | DataType::Decimal128(_, _) => {
            DefaultColumnType::FloatingPoint
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Date32 | DataType::Timestamp(_, _) => {
            DefaultColumnType::Text
        }
        _ => DefaultColumnType::Any,
    }
}

#[async_trait]
impl AsyncDB for JobsDb {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<Self::ColumnType>, Self::Error> {
        let words: Vec<&str> = sql.split_whitespace().collect();
        if words.len() >= 2 && words[0].eq_ignore_ascii_case("RUN") && words[1].eq_ignore_ascii_case("JOB") {
            return Ok(DBOutput::StatementComplete(self.run_job(&words).await?));
        }
        let df = self.ctx.sql(sql).await.map_err(err)?;
        let is_query = !df.schema().fields().is_empty()
            && !words
                .first()
                .is_some_and(|w| ["CREATE", "INSERT", "DROP", "SET"].iter().any(|k| w.eq_ignore_ascii_case(k)));
        let types: Vec<DefaultColumnType> = df.schema().fields().iter().map(|f| column_type(f.data_type())).collect();
        let batches = df.collect().await.map_err(err)?;
        if !is_query {
            let n = batches.iter().map(RecordBatch::num_rows).sum::<usize>();
            return Ok(DBOutput::StatementComplete(n as u64));
        }
        let options = FormatOptions::default().with_null("NULL");
        let mut rows = Vec::new();
        for b in &batches {
            let formatters: Vec<ArrayFormatter> = b
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
                .collect::<Result<_, _>>()
                .map_err(err)?;
            for r in 0..b.num_rows() {
                rows.push(
                    formatters
                        .iter()
                        .map(|f| {
                            let s = f.value(r).to_string();
                            if s.is_empty() {
                                "(empty)".to_string()
                            } else {
                                s
                            }
                        })
                        .collect(),
                );
            }
        }
        Ok(DBOutput::Rows { types, rows })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "wxlake-datafusion"
    }

    async fn sleep(dur: std::time::Duration) {
        tokio::time::sleep(dur).await;
    }
}

fn slt_files() -> Vec<PathBuf> {
    let dir = crate_root().join("tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn slt_files_pass() {
    let files = slt_files();
    assert!(!files.is_empty(), "no tests/slt/*.slt");
    let complete = std::env::var("WXLAKE_SLT_COMPLETE").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    for f in &files {
        let mut runner = sqllogictest::Runner::new(|| async { JobsDb::new().await });
        let result = if complete {
            runner
                .update_test_file(
                    f,
                    " ",
                    sqllogictest::default_validator,
                    sqllogictest::default_normalizer,
                    sqllogictest::default_column_validator,
                )
                .await
                .map_err(|e| e.to_string())
        } else {
            runner.run_file_async(f).await.map_err(|e| e.display(false).to_string())
        };
        if let Err(e) = result {
            failures.push(format!("{}:\n{e}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{} of {} .slt files failed:\n{}", failures.len(), files.len(), failures.join("\n\n"));
}

#[test]
fn every_job_sql_is_covered_by_an_slt_file() {
    let specs = load_specs(crate_root().join("jobs")).expect("jobs load");
    let texts: Vec<String> = slt_files().iter().map(|f| std::fs::read_to_string(f).unwrap_or_default()).collect();
    for s in &specs {
        let needle = format!("RUN JOB {}", s.name);
        assert!(texts.iter().any(|t| t.contains(&needle)), "no .slt runs job {} ({})", s.name, needle);
    }
}
