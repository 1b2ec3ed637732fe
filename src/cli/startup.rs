//! What `serve` and `feeds run` both start: the live write path (WAL → hot state → lake
//! flush in the background, the derived jobs on new data) and the feeds' settings from the
//! `--config` file. One implementation, so a feed polled by `feeds run` lands exactly as
//! one polled inside `serve`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use wxlake::clock::Clock;
use wxlake::feeds::FeedsConfig;
use wxlake::lake::Lake;
use wxlake::write::WriteService;

/// The `[sources]` table of the `--config` file: the live feeds to run (none without it).
/// Read before anything starts, so a wrong setting stops `serve` at once. What the feeds
/// must remember across restarts lives in `state_dir`, with the rest of the state.
pub fn feeds_config(config: Option<&Path>, state_dir: &Path) -> anyhow::Result<FeedsConfig> {
    let mut cfg = match config {
        None => FeedsConfig::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?;
            FeedsConfig::from_file_text(&text).with_context(|| format!("config {}", path.display()))?
        }
    };
    cfg.state_dir = Some(state_dir.to_path_buf());
    Ok(cfg)
}

/// `serve --live`: the production feeds (`data/wxlake.live.toml`, built in), or the
/// `[sources]` of the `--config` file when it has one, with the contact from
/// `WXLAKE_CONTACT`. Refused with what to do, before anything starts, when a real
/// deployment would lack something (see `wxlake::feeds::live_config`). The state
/// directory is the caller's to set.
pub fn live_feeds_config(config: Option<&Path>) -> anyhow::Result<FeedsConfig> {
    use wxlake::feeds::live_config::{live_sources, CONTACT_ENV};
    let text = match config {
        Some(path) => {
            Some(std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?)
        }
        None => None,
    };
    let contact = std::env::var(CONTACT_ENV).ok();
    Ok(live_sources(text.as_deref(), contact.as_deref())?)
}

/// Opens the live service on `dir` (replaying its WAL), flushes it to the lake every
/// `flush_secs` in the background, and schedules the derived jobs (cron, on new data, and
/// at once for each new model run).
/// The caller holds the state directory's `serve.lock`.
pub async fn start_write_path(
    lake: Lake,
    dir: &Path,
    flush_secs: u64,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Arc<WriteService>> {
    // The session every read of the server runs in: the lake's tables and the jobs'.
    let session = wxlake::jobs::analyst_session(&lake).await?;
    let live = Arc::new(WriteService::open(lake.clone(), session, dir, clock).await?);
    live.spawn_background(Duration::from_secs(flush_secs.max(1)));
    // Derived tables: scheduled (cron) and on-new-data job runs, and at once for new model
    // runs (jobs::fresh).
    let specs = wxlake::jobs::embedded_specs()?;
    let (published, scheduled) = (Arc::clone(&live), Arc::clone(&live));
    let fresh_clock = Arc::clone(&live.clock);
    wxlake::jobs::spawn_fresh_runs(
        live.lake.clone(),
        specs.clone(),
        live.subscribe_new_runs(),
        fresh_clock,
        move || published.derived_published(),
    );
    wxlake::jobs::spawn_scheduler(live.lake.clone(), specs, live.subscribe_new_data(), move || {
        scheduled.derived_published()
    });
    Ok(live)
}
