//! SQL jobs: `jobs/*.toml` declarations running `sql/*.sql` (plain DataFusion SQL) into
//! derived tables of the lake, `derived/<table>/`, Hive-partitioned Parquet that any
//! reader understands and that the API serves.
//!
//! - [`spec`]: one declaration (what a job reads, writes, how it is partitioned and
//!   scheduled); [`job_set`]: the set of them, from a directory or from the copies
//!   compiled into the binary ([`embedded`]), checked together and ordered by dependency;
//!   [`declarations`] is the one rule for which set a command uses.
//! - [`runner`]: one run, chunk by chunk, published atomically (lake/publish.rs): readers
//!   see the old output or the new one, never a mix, and a failed run leaves the old one.
//!   Its steps, one module each: [`plan`] (the key range, chunks and replaced partitions),
//!   [`statements`] (the SQL run in a session, with [`params`] `$from`/`$to` bound as
//!   values; intermediates kept as [`hashed_table`]s), [`encode`] (sorted Parquet per
//!   output partition).
//! - [`rust_tables`]: tables computed in Rust for the SQL (local day windows, model
//!   cadences, [`observed`]: the live engine's daily extremes, and [`bracket_scores`]: the
//!   bracket odds at each checkpoint, scored), declared as `helpers`. On a cluster,
//!   `observed_extremes` is a view whose replay runs on the executors ([`replay_function`]).
//! - [`functions`]: the SQL functions the jobs call beyond DataFusion's ([`replay_function`],
//!   [`rolling_sums`]).
//! - [`runs`]: `job_runs`, the record of every run.
//! - [`tables`]: registering derived tables in any session ([`register_derived`]) and the
//!   session a job runs in.
//! - [`schedule`], [`scheduler`]: cron and new-data triggers, one run per job at a time.
//! - [`fresh`]: a newly stored model run's derived rows recomputed at once, for its run
//!   date (issue 17 item 7).
//!
//! The command line (`wxlake jobs ...`) is in the binary, `src/cli/jobs.rs`.

pub mod adjacent_groups;
pub mod bracket_scores;
pub mod embedded;
pub mod encode;
pub mod error;
pub mod fresh;
pub mod functions;
pub mod hashed_table;
pub mod job_set;
pub mod observed;
pub mod params;
pub mod plan;
pub mod replay_function;
pub mod rolling_sums;
pub mod runner;
pub mod runs;
pub mod rust_tables;
pub mod schedule;
pub mod scheduler;
pub mod spec;
pub mod statements;
pub mod tables;

pub use error::JobError;
pub use fresh::spawn_fresh_runs;
pub use job_set::{declarations, embedded_specs, load_specs};
pub use runner::{run_all, run_all_on, run_job, run_job_as, run_job_on, Progress, Step};
pub use runs::{JobRun, RunStatus};
pub use scheduler::spawn_scheduler;
pub use spec::JobSpec;
pub use tables::{analyst_session, register_derived};
