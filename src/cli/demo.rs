//! `wxlake demo [--days N] [--stations ...]`

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use wxlake::demo::{load::load, DemoConfig, DEFAULT_SEED};
use wxlake::lake::schema::TABLES;
use wxlake::lake::Lake;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Complete days of history, ending yesterday (plus today so far).
    #[arg(long, default_value_t = 7)]
    pub days: u32,
    /// Station codes (comma-separated or repeated); default: all 70.
    #[arg(long, value_delimiter = ',')]
    pub stations: Vec<String>,
    /// Seed of the generator: the same seed gives the same data.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Skip model forecasts, MOS and NWS hourly forecasts (observations only).
    #[arg(long)]
    pub no_forecasts: bool,
    /// Skip one-minute data.
    #[arg(long)]
    pub no_onemin: bool,
    /// Stations generated in parallel per write (more = fewer, larger files, more memory).
    #[arg(long, default_value_t = 10)]
    pub group: usize,
}

impl DemoArgs {
    pub fn config(&self, now: chrono::DateTime<chrono::Utc>) -> DemoConfig {
        let mut cfg = DemoConfig::ending_yesterday(now, self.days.max(1));
        cfg.stations = self.stations.clone();
        cfg.seed = self.seed;
        cfg.forecasts = !self.no_forecasts;
        cfg.onemin = !self.no_onemin;
        cfg
    }
}

/// Generates and loads the demo lake, then compacts it. Shared with `serve --demo`.
pub async fn build(lake: &Lake, args: &DemoArgs) -> anyhow::Result<()> {
    let cfg = args.config(chrono::Utc::now());
    let total = cfg.station_list().map_err(anyhow::Error::msg)?.len();
    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::new(total as u64);
        b.set_style(
            ProgressStyle::with_template("{spinner} demo [{bar:40}] {pos}/{len} stations {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let started = std::time::Instant::now();
    let summary = load(lake, &cfg, args.group, |done, rows| {
        bar.set_position(done as u64);
        bar.set_message(format!("{rows} rows"));
    })
    .await?;
    bar.finish_and_clear();
    eprint!("demo: {summary}");
    for t in TABLES {
        lake.compact(t).await?;
    }
    // Derived tables (forecast_daily ...) so every endpoint has data from the start.
    let specs = wxlake::jobs::embedded_specs()?;
    for run in wxlake::jobs::run_all(lake, &specs, None, &wxlake::jobs::runner::no_progress).await? {
        eprintln!("demo: job {} {:?}: {} rows", run.job, run.status, run.rows);
    }
    eprintln!(
        "demo: {} days x {total} stations, {} rows stored in {:.1}s (lake {})",
        cfg.days,
        summary.stored,
        started.elapsed().as_secs_f64(),
        lake.location.local_dir.as_ref().map(|d| d.display().to_string()).unwrap_or_default()
    );
    Ok(())
}

pub async fn run(lake: Lake, a: DemoArgs) -> anyhow::Result<ExitCode> {
    build(&lake, &a).await?;
    Ok(ExitCode::SUCCESS)
}
