//! The `wxlake` command line. Data goes to stdout; messages and progress to stderr.

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than the system allocator: bulk ingest allocates gigabytes of rows
/// and millions of short strings, and measured 10-20 % faster end to end with it
/// (benches/README.md, "End-to-end ingest").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_tracing(args.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(cli::run(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
