//! The job declarations and their SQL, compiled into the binary so an installed `wxlake`
//! runs its jobs from any directory. Keyed by their path in the repository.
//!
//! Adding a job: add its `jobs/*.toml` and `sql/*.sql` here too. The test below fails when
//! a file of `jobs/` or `sql/` is missing from this list or differs from it.

/// `(path relative to the crate root, contents)` of every job file.
pub const FILES: &[(&str, &str)] = &[
    ("jobs/accuracy_daily_detail.toml", include_str!("../../jobs/accuracy_daily_detail.toml")),
    ("sql/accuracy_daily_detail.sql", include_str!("../../sql/accuracy_daily_detail.sql")),
    ("jobs/accuracy_pairs.toml", include_str!("../../jobs/accuracy_pairs.toml")),
    ("sql/accuracy_pairs.sql", include_str!("../../sql/accuracy_pairs.sql")),
    ("jobs/accuracy_trends.toml", include_str!("../../jobs/accuracy_trends.toml")),
    ("sql/accuracy_trends.sql", include_str!("../../sql/accuracy_trends.sql")),
    ("jobs/bracket_scores.toml", include_str!("../../jobs/bracket_scores.toml")),
    ("sql/bracket_scores.sql", include_str!("../../sql/bracket_scores.sql")),
    ("jobs/daily_extremes.toml", include_str!("../../jobs/daily_extremes.toml")),
    ("sql/daily_extremes.sql", include_str!("../../sql/daily_extremes.sql")),
    ("jobs/forecast_daily.toml", include_str!("../../jobs/forecast_daily.toml")),
    ("sql/forecast_daily.sql", include_str!("../../sql/forecast_daily.sql")),
    ("jobs/model_accuracy.toml", include_str!("../../jobs/model_accuracy.toml")),
    ("sql/model_accuracy.sql", include_str!("../../sql/model_accuracy.sql")),
];

/// The embedded file at `path` (`jobs/x.toml`, `sql/x.sql`).
pub fn file(path: &str) -> Option<&'static str> {
    let path = path.trim_start_matches("./");
    FILES.iter().find(|(p, _)| *p == path).map(|(_, text)| *text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_file_is_embedded_and_current() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut on_disk = Vec::new();
        for (dir, ext) in [("jobs", "toml"), ("sql", "sql")] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == ext) {
                    let rel = format!("{dir}/{}", path.file_name().unwrap().to_string_lossy());
                    let text = std::fs::read_to_string(&path).unwrap();
                    assert_eq!(
                        file(&rel),
                        Some(text.as_str()),
                        "{rel} is not embedded (src/jobs/embedded.rs) or differs"
                    );
                    on_disk.push(rel);
                }
            }
        }
        for (p, _) in FILES {
            assert!(on_disk.iter().any(|d| d == p), "{p} is embedded but missing on disk");
        }
    }
}
