//! Job declarations (`jobs/*.toml`): parsing and validation.
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
//! ```
//!
//! Column types: `string`, `date`, `timestamp` (µs, UTC), `int` (32-bit), `bigint`,
//! `double`, `bool`. Columns are non-null unless `nullable = true`; partition columns
//! must be `string` or `date`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use serde::Deserialize;

use super::embedded;
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
    /// Declared dependencies plus the producers of derived inputs (after [`validate_set`]).
    pub depends_on: Vec<String>,
    pub output: OutputSpec,
    /// Outputs of other jobs this job reads (filled by [`validate_set`]).
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
    let raw: RawSpec = toml::from_str(toml_text).map_err(|e| bad(e.to_string()))?;
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
    if let Some(h) = helpers.iter().find(|h| matches!(h, RustTable::DayWindows | RustTable::ObservedExtremes)) {
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

/// Where the declarations come from when no directory is named, as `wxlake jobs list` says.
pub const BUILT_IN: &str = "built into the binary";

/// The job declarations a command uses, and where they come from. One rule for every
/// command: the copies compiled into the binary ([`embedded_specs`]); `serve` schedules
/// them, `wxlake jobs` and `wxlake demo` run them, `wxlake sql` and the API read their
/// outputs. Only a directory named explicitly (`wxlake jobs --jobs-dir DIR`) replaces
/// them, to try an edit of jobs/*.toml or sql/*.sql before rebuilding; a `./jobs`
/// directory is never picked up by itself, so the CLI and the server cannot disagree
/// about what a job is without being told to.
pub fn declarations(dir: Option<&Path>) -> Result<(Vec<JobSpec>, String), JobError> {
    match dir {
        Some(d) => Ok((load_specs(d)?, d.display().to_string())),
        None => Ok((embedded_specs()?, BUILT_IN.to_string())),
    }
}

/// Loads every `*.toml` of `dir` (SQL paths resolve against the directory's parent, the
/// crate root in this repository), and validates them as a set.
pub fn load_specs(dir: impl AsRef<Path>) -> Result<Vec<JobSpec>, JobError> {
    let dir = dir.as_ref();
    let io = |e: std::io::Error| JobError::Spec { origin: dir.display().to_string(), reason: e.to_string() };
    let root: PathBuf =
        dir.canonicalize().map_err(io)?.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut specs = Vec::new();
    for f in files {
        let origin = f.display().to_string();
        let text = std::fs::read_to_string(&f)
            .map_err(|e| JobError::Spec { origin: origin.clone(), reason: e.to_string() })?;
        let read =
            |p: &str| std::fs::read_to_string(root.join(p)).map_err(|e| format!("{}: {e}", root.join(p).display()));
        specs.push(parse_spec(&origin, &text, &read)?);
    }
    validate_set(&mut specs)?;
    Ok(specs)
}

/// The job declarations compiled into the binary (see embedded.rs).
pub fn embedded_specs() -> Result<Vec<JobSpec>, JobError> {
    let mut specs = Vec::new();
    for (path, text) in embedded::FILES.iter().filter(|(p, _)| p.ends_with(".toml")) {
        let read = |p: &str| embedded::file(p).map(str::to_string).ok_or_else(|| "not embedded".to_string());
        specs.push(parse_spec(&format!("embedded:{path}"), text, &read)?);
    }
    validate_set(&mut specs)?;
    Ok(specs)
}

/// Cross-job checks: unique names and outputs, inputs that exist, dependencies (the
/// producers of derived inputs are added to `depends_on`), no cycle.
pub fn validate_set(specs: &mut [JobSpec]) -> Result<(), JobError> {
    let mut producers: HashMap<String, String> = HashMap::new();
    let outputs: HashMap<String, OutputSpec> =
        specs.iter().map(|s| (s.output.table.clone(), s.output.clone())).collect();
    let mut names = BTreeSet::new();
    for s in specs.iter() {
        if !names.insert(s.name.clone()) {
            return Err(JobError::Spec { origin: s.origin.clone(), reason: format!("job {} declared twice", s.name) });
        }
        let known = schema::table(&s.output.table).is_some() || MEMORY_INPUTS.contains(&s.output.table.as_str());
        if known {
            return Err(JobError::Spec {
                origin: s.origin.clone(),
                reason: format!("output table {} has the name of a lake table", s.output.table),
            });
        }
        if let Some(other) = producers.insert(s.output.table.clone(), s.name.clone()) {
            return Err(JobError::Spec {
                origin: s.origin.clone(),
                reason: format!("output table {} is also written by job {other}", s.output.table),
            });
        }
    }
    for s in specs.iter_mut() {
        let bad = |reason: String| JobError::Spec { origin: s.origin.clone(), reason };
        let mut deps: BTreeSet<String> = s.depends_on.iter().cloned().collect();
        let mut derived = Vec::new();
        for d in &deps {
            if !names.contains(d) {
                return Err(bad(format!("depends_on names unknown job {d}")));
            }
        }
        for t in s.inputs.iter().chain(&s.schedule.on_new_data) {
            if schema::table(t).is_some() || MEMORY_INPUTS.contains(&t.as_str()) || t == JOB_RUNS {
                continue;
            }
            match producers.get(t) {
                Some(p) if s.inputs.contains(t) => {
                    deps.insert(p.clone());
                    if let Some(o) = outputs.get(t) {
                        if !derived.iter().any(|d: &OutputSpec| d.table == o.table) {
                            derived.push(o.clone());
                        }
                    }
                }
                Some(_) => {}
                None => return Err(bad(format!("table {t} is neither a lake table nor the output of a job"))),
            }
        }
        if deps.contains(&s.name) {
            return Err(JobError::Cycle(format!("{} reads its own output", s.name)));
        }
        s.depends_on = deps.into_iter().collect();
        s.derived_inputs = derived;
    }
    topo_order(specs)?;
    Ok(())
}

/// Indices of `specs` in dependency order (producers first, then by name); a cycle is
/// an error naming the jobs on it.
pub fn topo_order(specs: &[JobSpec]) -> Result<Vec<usize>, JobError> {
    let index: HashMap<&str, usize> = specs.iter().enumerate().map(|(i, s)| (s.name.as_str(), i)).collect();
    let mut indegree = vec![0usize; specs.len()];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); specs.len()];
    for (i, s) in specs.iter().enumerate() {
        for d in &s.depends_on {
            let Some(&j) = index.get(d.as_str()) else {
                return Err(JobError::UnknownJob { name: d.clone(), known: names(specs) });
            };
            indegree[i] += 1;
            dependents[j].push(i);
        }
    }
    // Kahn's algorithm with a name-ordered ready set: deterministic.
    let mut ready: BTreeMap<&str, usize> =
        (0..specs.len()).filter(|&i| indegree[i] == 0).map(|i| (specs[i].name.as_str(), i)).collect();
    let mut order = Vec::with_capacity(specs.len());
    while let Some((_, i)) = ready.pop_first() {
        order.push(i);
        for &k in &dependents[i] {
            indegree[k] -= 1;
            if indegree[k] == 0 {
                ready.insert(specs[k].name.as_str(), k);
            }
        }
    }
    if order.len() < specs.len() {
        let stuck: Vec<&str> = (0..specs.len()).filter(|&i| indegree[i] > 0).map(|i| specs[i].name.as_str()).collect();
        return Err(JobError::Cycle(format!("dependency cycle among jobs: {}", stuck.join(", "))));
    }
    Ok(order)
}

/// Comma-separated job names, for error messages.
pub fn names(specs: &[JobSpec]) -> String {
    specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// Finds a job by name.
pub fn find<'a>(specs: &'a [JobSpec], name: &str) -> Result<&'a JobSpec, JobError> {
    specs
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| JobError::UnknownJob { name: name.to_string(), known: names(specs) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml_for(name: &str, inputs: &[&str], deps: &[&str], table: &str) -> String {
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

    fn parse(name: &str, inputs: &[&str], deps: &[&str], table: &str) -> JobSpec {
        parse_spec(name, &toml_for(name, inputs, deps, table), &|_| Ok("SELECT 1".into())).unwrap()
    }

    #[test]
    fn the_repository_jobs_load_from_disk_and_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs");
        let disk = load_specs(&dir).unwrap();
        let emb = embedded_specs().unwrap();
        assert_eq!(names(&disk), names(&emb));
        let fd = find(&disk, "forecast_daily").unwrap();
        assert_eq!(fd.output.partition_by, ["model", "run_date"]);
        assert_eq!(fd.incremental.as_ref().unwrap().key, "run_date");
        assert_eq!(fd.helpers, [RustTable::DayWindows, RustTable::ModelLeads]);
        assert!(fd.schedule.cron.is_some());
        assert!(fd.sql[0].text.contains("$from"));
        assert!(!fd.output.file_schema().fields().iter().any(|f| f.name() == "model"));
    }

    /// Without a directory every command gets the embedded declarations, whatever the
    /// current directory holds; a named directory is loaded (and its errors reported).
    #[test]
    fn declarations_are_the_built_in_ones_unless_a_directory_is_named() {
        let (specs, source) = declarations(None).unwrap();
        assert_eq!(source, BUILT_IN);
        assert_eq!(names(&specs), names(&embedded_specs().unwrap()));
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs");
        let (specs, source) = declarations(Some(&dir)).unwrap();
        assert_eq!(source, dir.display().to_string());
        assert_eq!(names(&specs), names(&embedded_specs().unwrap()));
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("broken.toml"), "name = 1\n").unwrap();
        let e = declarations(Some(tmp.path())).unwrap_err().to_string();
        assert!(e.contains("broken.toml"), "{e}");
    }

    #[test]
    fn dependencies_are_inferred_and_ordered() {
        let mut specs = vec![
            parse("c_job", &["b_out"], &[], "c_out"),
            parse("a_job", &["forecasts"], &[], "a_out"),
            parse("b_job", &["a_out"], &[], "b_out"),
        ];
        validate_set(&mut specs).unwrap();
        assert_eq!(specs[2].depends_on, ["a_job"]);
        let order: Vec<_> = topo_order(&specs).unwrap().into_iter().map(|i| specs[i].name.clone()).collect();
        assert_eq!(order, ["a_job", "b_job", "c_job"]);
    }

    #[test]
    fn cycles_and_unknowns_are_clear_errors() {
        let mut specs = vec![parse("a_job", &["b_out"], &[], "a_out"), parse("b_job", &["a_out"], &[], "b_out")];
        let e = validate_set(&mut specs).unwrap_err().to_string();
        assert!(e.contains("cycle") && e.contains("a_job") && e.contains("b_job"), "{e}");
        let mut specs = vec![parse("a_job", &["nowhere"], &[], "a_out")];
        assert!(validate_set(&mut specs).unwrap_err().to_string().contains("nowhere"));
        let mut specs = vec![parse("a_job", &[], &["ghost"], "a_out")];
        assert!(validate_set(&mut specs).unwrap_err().to_string().contains("ghost"));
        let mut specs = vec![parse("a_job", &[], &[], "same"), parse("b_job", &[], &[], "same")];
        assert!(validate_set(&mut specs).unwrap_err().to_string().contains("also written"));
    }

    /// `source` takes one input or a list; `table.column` names a date column.
    #[test]
    fn incremental_sources_are_checked() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs");
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
