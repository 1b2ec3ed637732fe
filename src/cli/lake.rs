//! `wxlake lake upgrade`: convert a lake written before its tables were Delta tables, or
//! before its rows carried their availability times.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use wxlake::lake::upgrade::upgrade;
use wxlake::lake::Lake;

#[derive(Debug, Args)]
pub struct LakeArgs {
    #[command(subcommand)]
    pub command: LakeCommand,
}

#[derive(Debug, Subcommand)]
pub enum LakeCommand {
    /// Make every table a Delta table in place and give every raw row `received_at` and
    /// `available_at` (idempotent; every command does it on open, this one says what it
    /// did). docs/lake.md, "Upgrading a lake".
    Upgrade,
}

pub async fn run(lake: Lake, a: LakeArgs) -> anyhow::Result<ExitCode> {
    match a.command {
        LakeCommand::Upgrade => {
            let done = upgrade(&lake, &wxlake::jobs::tables::all_shapes()?).await?;
            for (table, files) in &done.converted {
                eprintln!("{table}: converted ({files} files)");
            }
            for table in &done.already {
                eprintln!("{table}: already a Delta table");
            }
            eprintln!("{} file(s) of the former layout deleted", done.deleted);
            for (table, s) in &done.times {
                eprintln!(
                    "{table}: received_at and available_at in every file ({} partition(s) rewritten, {} rows)",
                    s.partitions, s.rows
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
