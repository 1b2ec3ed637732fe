//! `wxlake compact [--table T]`: merge each partition's files, then vacuum.

use std::process::ExitCode;

use clap::Args;
use wxlake::lake::compact::Rewrite;
use wxlake::lake::schema::{table, TABLES};
use wxlake::lake::Lake;

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Only this table (default: every table).
    #[arg(long)]
    pub table: Option<String>,
    /// Also rewrite single-file partitions whose rows get other keys or hold one natural
    /// key twice: once after upgrading a lake written before observations were keyed by
    /// the report's body (the same METAR stored with and without its `METAR` wrapper).
    #[arg(long)]
    pub repair: bool,
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
        let how = if a.repair { Rewrite::Repair } else { Rewrite::Merge };
        let s = lake.rewrite(t, how).await?;
        eprintln!(
            "{}: {} partition(s) rewritten, files {} -> {}, {} rows rewritten, {} duplicate rows dropped",
            t.name, s.partitions, s.files_before, s.files_after, s.rows, s.duplicates
        );
    }
    // The files replaced (now and before) past the keep time leave the store.
    let deleted = lake.vacuum_all().await;
    eprintln!("vacuum: {deleted} file(s) replaced more than {}s ago deleted", lake.keep_replaced().as_secs());
    Ok(ExitCode::SUCCESS)
}
