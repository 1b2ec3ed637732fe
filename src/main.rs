//! The `wxlake` command line. Data goes to stdout; messages and progress to stderr.

mod cli;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

/// mimalloc rather than the system allocator: bulk ingest allocates gigabytes of rows
/// and millions of short strings, and measured 10-20 % faster end to end with it
/// (benches/README.md, "End-to-end ingest").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Transparent huge pages off for a batch command (every one but `serve`), unless
/// `MIMALLOC_ALLOW_THP` (mimalloc's own switch, read before `main`) says otherwise.
/// mimalloc asks for huge pages on its arenas, and the kernel then zeroes (and at times
/// compacts memory for) 2 MiB at each first touch: a job that frees and allocates its
/// buffers again chunk after chunk spent up to half its CPU time in the kernel, as much or
/// as little as memory's fragmentation allowed, so its times wandered. The server keeps
/// them: its hot reads measured a few percent faster with them, tail included
/// (benches/README.md, "Performance (issue 33)").
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
fn no_transparent_huge_pages(command: &cli::Command) {
    #[cfg(target_os = "linux")]
    if !matches!(command, cli::Command::Serve(_)) && std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: PR_SET_THP_DISABLE takes no pointer; it sets one flag of this process.
        let refused = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0;
        if refused {
            eprintln!("note: transparent huge pages stay on ({})", std::io::Error::last_os_error());
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    // The `--config` file's settings become the flags' defaults before the real parse.
    let command = match cli::config::command_with_config(cli::Cli::command(), &argv) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {}", wxlake::error_chain::error_chain(e.as_ref()));
            return ExitCode::from(2);
        }
    };
    let args = match command.try_get_matches_from(argv).and_then(|m| cli::Cli::from_arg_matches(&m)) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    no_transparent_huge_pages(&args.command);
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
            // Every cause, each said once (most of our errors print theirs too).
            eprintln!("error: {}", wxlake::error_chain::error_chain(e.as_ref()));
            ExitCode::from(1)
        }
    }
}
