//! The set of job declarations a command uses: loaded from a directory or from the copies
//! compiled into the binary ([`super::embedded`]), which one by [`declarations`] (the one
//! rule), checked as a set (unique names and outputs, inputs that exist, dependencies) and
//! put in dependency order. One declaration's parsing is [`super::spec`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::embedded;
use super::error::JobError;
use super::spec::{parse_spec, JobSpec, OutputSpec, JOB_RUNS, MEMORY_INPUTS};
use crate::lake::schema;

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
    let io = |e: std::io::Error| JobError::SpecFile { origin: dir.display().to_string(), source: Box::new(e) };
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
            .map_err(|e| JobError::SpecFile { origin: origin.clone(), source: Box::new(e) })?;
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
    use crate::jobs::rust_tables::RustTable;
    use crate::jobs::spec::tests::toml_for;

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
        assert_eq!(fd.output.partition_by, ["run_date"]);
        assert_eq!(fd.output.sort_by[0], "model", "a file's rows by model first");
        assert_eq!(fd.incremental.as_ref().unwrap().key, "run_date");
        assert_eq!(fd.helpers, [RustTable::DayWindows, RustTable::ModelLeads]);
        assert!(fd.schedule.cron.is_some());
        assert!(fd.sql[0].text.contains("$from"));
        assert!(fd.output.file_schema().fields().iter().any(|f| f.name() == "model"));
        assert!(!fd.output.file_schema().fields().iter().any(|f| f.name() == "run_date"));
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
}
