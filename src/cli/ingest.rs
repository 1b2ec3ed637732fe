//! `wxlake ingest <format> <paths...>`

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use wxlake::ingest::{ingest_inputs, Format, IngestOptions, Input, Summary};
use wxlake::lake::Lake;

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// metar, onemin, cli, dsm, forecasts, open-meteo, mos, nws-hourly, daily-forecasts
    pub format: Format,
    /// Files or directories (read recursively); `-` reads stdin.
    #[arg(required = true)]
    pub paths: Vec<String>,
    /// YYYY-MM for inputs without a year (bare METAR lines, DSM).
    #[arg(long, value_parser = parse_month)]
    pub month: Option<(i32, u32)>,
    /// Station the input belongs to (open-meteo, nws-hourly).
    #[arg(long)]
    pub station: Option<String>,
    /// Run time for open-meteo responses (ISO 8601).
    #[arg(long, value_parser = parse_time)]
    pub run_time: Option<chrono::DateTime<chrono::Utc>>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Input megabytes decoded (on every core) and stored together; memory use is a few
    /// times this. Larger batches leave fewer, larger files per partition.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_mb: u64,
    /// Leave the derived tables as they are. By default the model runs a forecast ingest
    /// stored get their forecast_daily rows (and the accuracy jobs after) recomputed at
    /// once, as `serve` does for live ingests.
    #[arg(long)]
    pub no_refresh: bool,
}

fn parse_month(s: &str) -> Result<(i32, u32), String> {
    let bad = || format!("expected YYYY-MM, found '{s}'");
    let (y, m) = s.split_once('-').ok_or_else(bad)?;
    let y: i32 = y.parse().map_err(|_| bad())?;
    let m: u32 = m.parse().map_err(|_| bad())?;
    if !(1..=12).contains(&m) {
        return Err(bad());
    }
    Ok((y, m))
}

fn parse_time(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    wxlake::time::parse_utc(s).ok_or_else(|| format!("expected an ISO 8601 time, found '{s}'"))
}

/// Expands directories into their files, sorted, so runs are reproducible.
fn expand(paths: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for p in paths {
        if p == "-" {
            out.push(p.clone());
            continue;
        }
        let path = Path::new(p);
        if path.is_dir() {
            let mut stack = vec![path.to_path_buf()];
            let mut files: Vec<PathBuf> = Vec::new();
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
                    let e = e?.path();
                    if e.is_dir() {
                        stack.push(e);
                    } else {
                        files.push(e);
                    }
                }
            }
            files.sort();
            out.extend(files.into_iter().map(|f| f.display().to_string()));
        } else if path.exists() {
            out.push(p.clone());
        } else {
            anyhow::bail!("no such file: {p}");
        }
    }
    Ok(out)
}

/// Recomputes the derived tables for the runs stored since `started` (jobs::fresh). The
/// rows are stored whatever happens here: a failure is reported, not an error of the
/// ingest (`wxlake jobs run` recomputes them).
async fn refresh(lake: &Lake, started: chrono::DateTime<chrono::Utc>) {
    let result = async {
        let runs = wxlake::jobs::fresh::stored_since(lake, started).await?;
        let specs = wxlake::jobs::embedded_specs()?;
        wxlake::jobs::fresh::refresh_runs(lake, &specs, &runs, chrono::Utc::now().date_naive()).await.map(|d| (runs, d))
    }
    .await;
    match result {
        Ok((runs, done)) => tracing::info!(runs = runs.len(), jobs = done.len(), "derived tables refreshed"),
        Err(e) => eprintln!("warning: the derived tables were not refreshed ({e}); `wxlake jobs run` recomputes them"),
    }
}

/// A file's bytes, or stdin's for `-`.
fn read_input(f: &str) -> anyhow::Result<Vec<u8>> {
    if f == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).context("reading stdin")?;
        Ok(buf)
    } else {
        std::fs::read(f).with_context(|| format!("reading {f}"))
    }
}

pub async fn run(lake: Lake, a: IngestArgs) -> anyhow::Result<ExitCode> {
    let files = expand(&a.paths)?;
    let opts = IngestOptions { month: a.month, station: a.station.clone(), run_time: a.run_time, issued: None };
    let bar = if std::io::stderr().is_terminal() && files.len() > 1 {
        let b = ProgressBar::new(files.len() as u64);
        b.set_style(
            ProgressStyle::with_template("{spinner} [{bar:40}] {pos}/{len} files {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let mut summary = Summary::default();
    let started = chrono::Utc::now();
    let batch_bytes = usize::try_from(a.batch_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    let mut files = files.iter().peekable();
    while files.peek().is_some() {
        // Read files until the batch is full (at least one file per batch).
        let (mut batch, mut size) = (Vec::new(), 0);
        while let Some(f) = files.next_if(|_| batch.is_empty() || size < batch_bytes) {
            let bytes = read_input(f)?;
            size += bytes.len();
            batch.push(Input { name: f.clone(), bytes });
        }
        let (n, last) = (batch.len(), batch.last().map(|i| i.name.clone()).unwrap_or_default());
        bar.set_message(last.clone());
        ingest_inputs(&lake, a.format, batch, &opts, &mut summary)
            .await
            .with_context(|| format!("storing {n} input(s) up to {last}"))?;
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    let forecasts = matches!(a.format, Format::Forecasts | Format::OpenMeteo | Format::Mos);
    if forecasts && summary.stored > 0 && !a.no_refresh {
        refresh(&lake, started).await;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    }
    eprint!("{summary}");
    if summary.nothing_usable() {
        eprintln!("error: no usable {} records in {} input(s)", a.format, files.len());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
