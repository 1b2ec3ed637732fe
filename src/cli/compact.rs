//! `wxlake compact [--table T]`

use std::process::ExitCode;

use clap::Args;
use wxlake::lake::schema::{table, TABLES};
use wxlake::lake::Lake;

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Only this table (default: every table).
    #[arg(long)]
    pub table: Option<String>,
}

pub async fn run(lake: Lake, a: CompactArgs) -> anyhow::Result<ExitCode> {
    let tables = match &a.table {
        Some(name) => vec![table(name).ok_or_else(|| {
            let names: Vec<_> = TABLES.iter().map(|t| t.name).collect();
            anyhow::anyhow!("unknown table '{name}'; tables: {}", names.join(", "))
        })?],
        None => TABLES.to_vec(),
    };
    for t in tables {
        let s = lake.compact(t).await?;
        eprintln!(
            "{}: {} partition(s) merged, files {} -> {}, {} rows rewritten",
            t.name, s.partitions, s.files_before, s.files_after, s.rows
        );
    }
    Ok(ExitCode::SUCCESS)
}
