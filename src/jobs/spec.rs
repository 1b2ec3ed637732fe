//! One job declaration (`jobs/*.toml`): parsing and validation. The set of them (loading,
//! cross-job checks, order) is [`super::job_set`].
//!
//! ```toml
//! name = "forecast_daily"                 # [a-z][a-z0-9_]*
//! description = "..."
//! sql = ["sql/forecast_daily.sql"]        # run in order; paths relative to the crate root
//! inputs = ["forecasts", "stations"]      # lake tables, stations/models, other jobs' outputs
//! helpers = ["day_windows", "model_leads"] # tables computed in Rust (rust_tables.rs)
//! depends_on = []                         # other jobs (producers of inputs are added)
//!
//! [output]
//! table = "forecast_daily"                # stored under derived/<table>/
//! partition_by = ["model", "run_date"]    # Hive partitions, outermost first
//! sort_by = ["location_name", "run_time"] # order inside each file (declared to readers)
//! columns = [{ name = "model", type = "string" }, ...]  # the output contract
//!
//! [incremental]                           # optional: allows --from/--to
//! key = "run_date"                        # a partition column (YYYY-MM-DD values)
//! source = "forecasts"                    # the inputs whose days bound a full run: one or a
//!                                         # list; "table" = its `key` partitions, "table.col"
//!                                         # = the dates of a date column (min to max)
//! margin_days = 0                         # a full run reaches this many days beyond them
//! chunk_days = 7                          # a full run is computed this many days at a time
//!
//! [schedule]                              # optional
//! cron = "20 * * * *"                     # UTC, see schedule.rs
//! on_new_data = ["forecasts"]             # run when these tables get new data
//! lookback_days = 2                       # scheduled runs recompute [today-2, today]
//! debounce_seconds = 60                   # wait for new data to settle
//! on_new_run = true                       # refreshed after a new model run (fresh.rs)
//! ```
//!
//! Column types: `string`, `date`, `timestamp` (µs, UTC), `int` (32-bit), `bigint`,
//! `double`, `bool`. Columns are non-null unless `nullable = true`; partition columns
//! must be `string` or `date`.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use serde::Deserialize;

use super::error::JobError;
use super::params;
use super::rust_tables::RustTable;
use super::schedule::Cron;
use crate::lake::schema;

/// Tables every job may read besides lake tables and derived tables.
pub const MEMORY_INPUTS: [&str; 2] = ["stations", "models"];

/// The table recording every run.
pub const JOB_RUNS: &str = "job_runs";

/// One declared job.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub name: String,
    pub description: String,
    pub sql: Vec<SqlFile>,
    pub inputs: Vec<String>,
    /// The tables computed in Rust the SQL reads (the `helpers` key).
    pub helpers: Vec<RustTable>,
    /// Declared dependencies plus the producers of derived inputs (after [`super::job_set::validate_set`]).
    pub depends_on: Vec<String>,
    pub output: OutputSpec,
    /// Outputs of other jobs this job reads (filled by [`super::job_set::validate_set`]).
    pub derived_inputs: Vec<OutputSpec>,
    pub incremental: Option<Incremental>,
    pub schedule: Schedule,
    /// Where the declaration came from (a path, or `embedded:jobs/x.toml`).
    pub origin: String,
}

/// One SQL file of a job.
#[derive(Debug, Clone)]
pub struct SqlFile {
    pub path: String,
    pub text: String,
}

/// The output table of a job.
#[derive(Debug, Clone)]
pub struct OutputSpec {
    pub table: String,
    pub partition_by: Vec<String>,
    pub sort_by: Vec<String>,
    pub columns: Vec<Column>,
}

/// One declared output column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub kind: ColumnKind,
    pub nullable: bool,
}

/// Output column types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    String,
    Date,
    Timestamp,
    Int,
    BigInt,
    Double,
    Bool,
}

impl ColumnKind {
    fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_lowercase().as_str() {
            "string" | "utf8" | "varchar" => ColumnKind::String,
            "date" => ColumnKind::Date,
            "timestamp" => ColumnKind::Timestamp,
            "int" | "integer" | "int32" => ColumnKind::Int,
            "bigint" | "int64" => ColumnKind::BigInt,
            "double" | "float64" => ColumnKind::Double,
            "bool" | "boolean" => ColumnKind::Bool,
            _ => return None,
        })
    }

    /// The Arrow type stored in the files.
    pub fn data_type(self) -> DataType {
        match self {
            ColumnKind::String => DataType::Utf8,
            ColumnKind::Date => DataType::Date32,
            ColumnKind::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            ColumnKind::Int => DataType::Int32,
            ColumnKind::BigInt => DataType::Int64,
            ColumnKind::Double => DataType::Float64,
            ColumnKind::Bool => DataType::Boolean,
        }
    }
}

impl OutputSpec {
    /// Every output column as the job's SQL produces it (partition columns included).
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns.iter().map(|c| Field::new(&c.name, c.kind.data_type(), c.nullable)).collect::<Vec<_>>(),
        ))
    }

    /// The columns stored in the Parquet files (partition columns live in the paths).
    pub fn file_schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .filter(|c| !self.partition_by.contains(&c.name))
                .map(|c| Field::new(&c.name, c.kind.data_type(), c.nullable))
                .collect::<Vec<_>>(),
        ))
    }

    /// The partition columns with their types (`string` or `date`), as readers register
    /// them: a date partition compares and computes as a date in SQL.
    pub fn partition_types(&self) -> Vec<(String, DataType)> {
        self.partition_by
            .iter()
            .map(|p| {
                let kind = self.columns.iter().find(|c| &c.name == p).map_or(ColumnKind::String, |c| c.kind);
                (p.clone(), kind.data_type())
            })
            .collect()
    }

    /// Directory of the table relative to the lake root.
    pub fn dir(&self) -> String {
        format!("derived/{}", self.table)
    }

    /// The output as a lake table (its Delta table's schema and partitioning, its order).
    pub fn shape(&self) -> crate::lake::delta::TableShape {
        crate::lake::delta::TableShape {
            name: self.table.clone(),
            dir: self.dir(),
            file_schema: self.file_schema(),
            partition_cols: self.partition_types(),
            sort: self.sort_by.clone(),
        }
    }
}

/// Incremental recomputation by a date-valued partition column.
#[derive(Debug, Clone)]
pub struct Incremental {
    /// The partition column of the output (and of partition sources).
    pub key: String,
    /// The inputs whose days bound a full run: every day any of them holds is computed.
    pub sources: Vec<KeySource>,
    /// Days a full run reaches before the first and after the last source day (a trading
    /// day can begin the UTC day before its first observation's date, or end the day after).
    pub margin_days: u32,
    /// Days of `key` per query in a run (bounds memory; the run publishes once).
    pub chunk_days: u32,
}

/// Where a full run's days come from in one input.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySource {
    pub table: String,
    /// A date column whose smallest and largest values bound the run; `None`: the table's
    /// partitions of the incremental key.
    pub column: Option<String>,
}

impl KeySource {
    fn parse(text: &str) -> KeySource {
        match text.split_once('.') {
            Some((t, c)) => KeySource { table: t.to_string(), column: Some(c.to_string()) },
            None => KeySource { table: text.to_string(), column: None },
        }
    }
}

/// When the scheduler runs a job.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    pub cron: Option<Cron>,
    pub on_new_data: Vec<String>,
    /// Scheduled runs recompute `[today - lookback_days, today]` (UTC); `None` = full run.
    pub lookback_days: Option<u32>,
    pub debounce: Duration,
    /// Whether a new model run's refresh (fresh.rs) runs it when it is downstream of the
    /// run's tables (`on_new_run`, default true): false for a job a new run cannot change,
    /// as `bracket_scores`, which reads only what was known at past checkpoints.
    pub on_new_run: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: String,
    #[serde(default)]
    description: String,
    sql: OneOrMany,
    #[serde(default)]
    inputs: Vec<String>,
    #[serde(default)]
    helpers: Vec<String>,
    #[serde(default)]
    depends_on: Vec<String>,
    output: RawOutput,
    incremental: Option<RawIncremental>,
    #[serde(default)]
    schedule: RawSchedule,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    table: String,
    #[serde(default)]
    partition_by: Vec<String>,
    #[serde(default)]
    sort_by: Vec<String>,
    columns: Vec<RawColumn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawColumn {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    nullable: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIncremental {
    key: String,
    source: Option<OneOrMany>,
    margin_days: Option<u32>,
    chunk_days: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchedule {
    cron: Option<String>,
    #[serde(default)]
    on_new_data: Vec<String>,
    lookback_days: Option<u32>,
    debounce_seconds: Option<u64>,
    on_new_run: Option<bool>,
}

/// Default days per chunk of an incremental run.
pub const DEFAULT_CHUNK_DAYS: u32 = 7;
/// Default debounce of new-data triggers.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_secs(60);

fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z')) && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Parses one declaration; `read_sql` resolves the `sql` paths.
pub fn parse_spec(
    origin: &str,
    toml_text: &str,
    read_sql: &dyn Fn(&str) -> Result<String, String>,
) -> Result<JobSpec, JobError> {
    let bad = |reason: String| JobError::Spec { origin: origin.to_string(), reason };
    let raw: RawSpec = toml::from_str(toml_text)
        .map_err(|e| JobError::SpecFile { origin: origin.to_string(), source: Box::new(e) })?;
    if !valid_name(&raw.name) {
        return Err(bad(format!("job name '{}' must match [a-z][a-z0-9_]*", raw.name)));
    }
    let paths = match raw.sql {
        OneOrMany::One(p) => vec![p],
        OneOrMany::Many(v) => v,
    };
    if paths.is_empty() {
        return Err(bad("`sql` names no file".into()));
    }
    let mut sql = Vec::new();
    for p in paths {
        let text = read_sql(&p).map_err(|e| bad(format!("sql file {p}: {e}")))?;
        sql.push(SqlFile { path: p, text });
    }
    let mut helpers = Vec::new();
    for h in &raw.helpers {
        let names: Vec<_> = RustTable::ALL.iter().map(|h| h.name()).collect();
        helpers.push(
            RustTable::parse(h).ok_or_else(|| bad(format!("unknown helper '{h}' (helpers: {})", names.join(", "))))?,
        );
    }

    // Output.
    let o = raw.output;
    if !valid_name(&o.table) || o.table == JOB_RUNS {
        return Err(bad(format!("output table '{}' must match [a-z][a-z0-9_]* and not be {JOB_RUNS}", o.table)));
    }
    let mut columns = Vec::new();
    for c in o.columns {
        let kind = ColumnKind::parse(&c.kind).ok_or_else(|| {
            bad(format!(
                "column {}: unknown type '{}' (string, date, timestamp, int, bigint, double, bool)",
                c.name, c.kind
            ))
        })?;
        if columns.iter().any(|x: &Column| x.name == c.name) {
            return Err(bad(format!("column {} declared twice", c.name)));
        }
        columns.push(Column { name: c.name, kind, nullable: c.nullable });
    }
    if columns.is_empty() {
        return Err(bad("output declares no columns".into()));
    }
    let kind_of = |n: &str| columns.iter().find(|c| c.name == n).map(|c| c.kind);
    for p in &o.partition_by {
        match kind_of(p) {
            Some(ColumnKind::String | ColumnKind::Date) => {}
            Some(k) => {
                return Err(bad(format!(
                    "partition column {p} is {k:?}: only string or date columns can be partitions"
                )))
            }
            None => return Err(bad(format!("partition column {p} is not a declared column"))),
        }
    }
    if o.partition_by.len() == columns.len() {
        return Err(bad("every column is a partition column: nothing left for the files".into()));
    }
    for s in &o.sort_by {
        if kind_of(s).is_none() || o.partition_by.contains(s) {
            return Err(bad(format!("sort column {s} must be a declared, non-partition column")));
        }
    }
    let output = OutputSpec { table: o.table, partition_by: o.partition_by, sort_by: o.sort_by, columns };

    // Incremental key.
    let incremental = match raw.incremental {
        None => None,
        Some(i) => {
            if !output.partition_by.contains(&i.key) {
                return Err(bad(format!("incremental key {} must be an output partition column", i.key)));
            }
            let sources: Vec<KeySource> = match i.source {
                Some(OneOrMany::One(s)) => vec![KeySource::parse(&s)],
                Some(OneOrMany::Many(v)) => v.iter().map(|s| KeySource::parse(s)).collect(),
                None => vec![raw
                    .inputs
                    .iter()
                    .find(|t| schema::table(t).is_some_and(|d| d.partition_cols.contains(&i.key.as_str())))
                    .map(|t| KeySource::parse(t))
                    .ok_or_else(|| bad(format!("no input is partitioned by {}: set incremental.source", i.key)))?],
            };
            if sources.is_empty() {
                return Err(bad("incremental.source names no input".into()));
            }
            for src in &sources {
                if !raw.inputs.contains(&src.table) {
                    return Err(bad(format!("incremental source {} is not an input", src.table)));
                }
                let Some(def) = schema::table(&src.table) else { continue };
                match &src.column {
                    None if !def.partition_cols.contains(&i.key.as_str()) => {
                        return Err(bad(format!(
                            "incremental source {} is not partitioned by {}: name a date column as {}.<column>",
                            src.table, i.key, src.table
                        )))
                    }
                    Some(c)
                        if def.file_schema().field_with_name(c).map(|f| f.data_type().clone()).ok()
                            != Some(DataType::Date32) =>
                    {
                        return Err(bad(format!("incremental source {}.{c} is not a date column", src.table)))
                    }
                    _ => {}
                }
            }
            let chunk_days = i.chunk_days.unwrap_or(DEFAULT_CHUNK_DAYS);
            if chunk_days == 0 {
                return Err(bad("incremental.chunk_days must be at least 1".into()));
            }
            Some(Incremental { key: i.key, sources, margin_days: i.margin_days.unwrap_or(0), chunk_days })
        }
    };
    let uses_range = sql.iter().any(|f| params::uses_range(&f.text));
    if uses_range && incremental.is_none() {
        return Err(bad("the SQL uses $from/$to but the job declares no [incremental] key".into()));
    }
    if let Some(h) = helpers
        .iter()
        .find(|h| matches!(h, RustTable::DayWindows | RustTable::ObservedExtremes | RustTable::BracketForecasts))
    {
        if incremental.is_none() {
            return Err(bad(format!(
                "helper {} is computed for the run's range: declare an [incremental] key",
                h.name()
            )));
        }
    }

    let s = raw.schedule;
    let cron = s.cron.as_deref().map(Cron::parse).transpose().map_err(bad)?;
    if s.lookback_days.is_some() && incremental.is_none() {
        return Err(bad("schedule.lookback_days needs an [incremental] key".into()));
    }
    let schedule = Schedule {
        cron,
        on_new_data: s.on_new_data,
        lookback_days: s.lookback_days,
        debounce: s.debounce_seconds.map(Duration::from_secs).unwrap_or(DEFAULT_DEBOUNCE),
        on_new_run: s.on_new_run.unwrap_or(true),
    };

    Ok(JobSpec {
        name: raw.name,
        description: raw.description,
        sql,
        inputs: raw.inputs,
        helpers,
        depends_on: raw.depends_on,
        output,
        derived_inputs: Vec::new(),
        incremental,
        schedule,
        origin: origin.to_string(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::jobs::job_set::load_specs;

    /// A declaration of job `name` writing `table` (also used by job_set's tests).
    pub(crate) fn toml_for(name: &str, inputs: &[&str], deps: &[&str], table: &str) -> String {
        format!(
            r#"name = "{name}"
sql = "q.sql"
inputs = {inputs:?}
depends_on = {deps:?}
[output]
table = "{table}"
partition_by = ["model"]
columns = [{{ name = "model", type = "string" }}, {{ name = "n", type = "bigint" }}]
"#
        )
    }

    /// `source` takes one input or a list; `table.column` names a date column.
    #[test]
    fn incremental_sources_are_checked() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs");
        let de = load_specs(&dir).unwrap().into_iter().find(|s| s.name == "daily_extremes").unwrap();
        let inc = de.incremental.unwrap();
        assert_eq!(
            inc.sources,
            [
                KeySource { table: "observations".into(), column: None },
                KeySource { table: "onemin".into(), column: None },
                KeySource { table: "reports".into(), column: Some("report_date".into()) },
            ]
        );
        assert_eq!(inc.margin_days, 1);
        let base = |source: &str| {
            format!(
                "name = \"x\"\nsql = \"q.sql\"\ninputs = [\"observations\", \"reports\"]\n[output]\ntable = \"x_out\"\n\
                 partition_by = [\"date\"]\ncolumns = [{{ name = \"date\", type = \"date\" }}, {{ name = \"n\", type = \"bigint\" }}]\n\
                 [incremental]\nkey = \"date\"\n{source}"
            )
        };
        let ok = |_: &str| -> Result<String, String> { Ok("SELECT 1".into()) };
        let spec = parse_spec("t", &base(""), &ok).unwrap();
        assert_eq!(spec.incremental.unwrap().sources, [KeySource { table: "observations".into(), column: None }]);
        for (source, needle) in [
            ("source = \"reports\"", "not partitioned by date"),
            ("source = \"reports.station_code\"", "not a date column"),
            ("source = [\"observations\", \"onemin\"]", "onemin is not an input"),
            ("source = []", "names no input"),
        ] {
            let e = parse_spec("t", &base(source), &ok).unwrap_err().to_string();
            assert!(e.contains(needle), "{source}: {e}");
        }
    }

    #[test]
    fn bad_declarations_say_what_is_wrong() {
        let ok = |_: &str| -> Result<String, String> { Ok("SELECT 1".into()) };
        let base = toml_for("x", &[], &[], "x_out");
        for (text, needle) in [
            (base.replace("name = \"x\"", "name = \"X-1\""), "must match"),
            (base.replace("type = \"bigint\"", "type = \"decimal\""), "unknown type"),
            (base.replace("partition_by = [\"model\"]", "partition_by = [\"n\"]"), "only string or date"),
            (base.replace("partition_by = [\"model\"]", "partition_by = [\"nope\"]"), "not a declared column"),
            (format!("{base}sort_by = [\"model\"]\n"), "non-partition"),
            (format!("{base}[incremental]\nkey = \"n\"\n"), "partition column"),
            (format!("{base}[schedule]\ncron = \"61 * * * *\"\n"), "minute"),
            (format!("{base}surprise = 1\n"), "surprise"),
        ] {
            let e = parse_spec("t", &text, &ok).unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let uses_range = |_: &str| -> Result<String, String> { Ok("SELECT 1 WHERE d >= $from".into()) };
        let e = parse_spec("t", &base, &uses_range).unwrap_err().to_string();
        assert!(e.contains("incremental"), "{e}");
    }
}
