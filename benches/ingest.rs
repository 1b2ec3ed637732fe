//! End-to-end ingest throughput: generated real-format inputs → decoders → lake.
//!
//! Not a criterion bench: one run over ≥ 10 M rows is the measurement. Generation is not
//! timed. First the inputs go through `ingest_inputs`, the `wxlake ingest` path, into a new
//! lake on a fresh heap: the end-to-end figure. Then decoding (all cores, rayon) and the
//! lake write (partition, dedup, sort, zstd Parquet, put) are timed as separate phases.
//!
//! Run: `cargo bench --bench ingest` (env WXLAKE_BENCH_DAYS, WXLAKE_BENCH_STATIONS to
//! scale; defaults 20 days x 70 stations, about 10.5 M rows).

use std::time::Instant;

use chrono::Utc;
use rayon::prelude::*;
use wxlake::demo::{generate_station, DemoConfig};
use wxlake::ingest::{ingest_inputs, store, Format, IngestOptions, Input, Records, Summary};
use wxlake::lake::Lake;

/// The allocator the `wxlake` binary runs with, so the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    // `cargo test --benches` runs bench binaries with --bench absent: skip the heavy run.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let days = env_usize("WXLAKE_BENCH_DAYS", 20) as u32;
    let n_stations = env_usize("WXLAKE_BENCH_STATIONS", 70);
    let mut cfg = DemoConfig::ending_yesterday(Utc::now(), days);
    cfg.stations = cfg.station_list().unwrap().iter().take(n_stations).map(|s| s.code.clone()).collect();

    let t = Instant::now();
    let inputs: Vec<_> = cfg.stations.par_iter().map(|c| generate_station(&cfg, c)).collect();
    let bytes: usize = inputs
        .iter()
        .map(|i| i.metar_tsv.len() + i.forecast_csv.len() + i.onemin_csv.as_ref().map_or(0, |s| s.len()))
        .sum();
    let forecast_csv: usize = inputs.iter().map(|i| i.forecast_csv.len()).sum();
    eprintln!(
        "generated {days} days x {n_stations} stations: {:.1} MB ({:.1} MB forecast CSV) in {:.1}s",
        bytes as f64 / 1e6,
        forecast_csv as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    // The same inputs as files for the `wxlake ingest` path.
    let as_files = |format: Format| -> Vec<Input> {
        inputs
            .iter()
            .map(|i| {
                let text = match format {
                    Format::Forecasts => i.forecast_csv.as_str(),
                    Format::Metar => i.metar_tsv.as_str(),
                    _ => i.onemin_csv.as_deref().unwrap_or(""),
                };
                Input { name: i.station.clone(), bytes: text.as_bytes().to_vec() }
            })
            .collect()
    };
    let files: Vec<(Format, Vec<Input>)> =
        [Format::Forecasts, Format::Metar, Format::Onemin].into_iter().map(|f| (f, as_files(f))).collect();

    // End to end the way `wxlake ingest <format> <files...> --batch-mb 2048` runs: each
    // format's station files decoded on every core and stored in one write, into a new lake.
    // It runs first, on a heap as fresh as a new `wxlake` process has: whatever runs second
    // reuses memory the first one faulted in, which flattered this figure when it ran last.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let opts = IngestOptions::default();
    let dir = tempfile::tempdir().unwrap();
    let lake = rt.block_on(Lake::open(&format!("file://{}", dir.path().display()))).unwrap();
    let t = Instant::now();
    let cpu = CpuUse::now();
    let mut summary = Summary::default();
    rt.block_on(async {
        for (format, inputs) in files {
            ingest_inputs(&lake, format, inputs, &opts, &mut summary).await.unwrap();
        }
    });
    let e2e_s = t.elapsed().as_secs_f64();
    let cpu = CpuUse::now().since(&cpu);
    eprintln!(
        "end to end (ingest_inputs, the CLI path): {} rows in {e2e_s:.2}s: {:.2} M rows/s on {} cores",
        summary.stored,
        summary.stored as f64 / e2e_s / 1e6,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    );
    // CPU seconds vary less than wall time on a shared machine, and system time is mostly
    // the kernel zeroing fresh pages: both say where a change saves work.
    eprintln!(
        "end to end CPU: {:.2}s user + {:.2}s system = {:.2} CPU-s per M rows; {} page faults",
        cpu.user_s,
        cpu.sys_s,
        (cpu.user_s + cpu.sys_s) / (summary.stored as f64 / 1e6),
        cpu.faults
    );
    drop(dir);

    // Decode: forecast CSV, METAR TSV and one-minute CSV of every station, in parallel.
    let t = Instant::now();
    let decoded: Vec<_> = inputs
        .par_iter()
        .flat_map_iter(|i| {
            [
                Format::Forecasts.decode(i.forecast_csv.as_bytes(), &opts),
                Format::Metar.decode(i.metar_tsv.as_bytes(), &opts),
                Format::Onemin.decode(i.onemin_csv.as_deref().unwrap_or("").as_bytes(), &opts),
            ]
        })
        .collect();
    let decode_s = t.elapsed().as_secs_f64();
    drop(inputs);
    let (mut fc, mut obs, mut om) = (Vec::new(), Vec::new(), Vec::new());
    let mut errors = 0;
    for d in decoded {
        errors += d.errors.len();
        match d.records {
            Records::Forecasts(v) => fc.extend(v),
            Records::Observations(v) => obs.extend(v),
            Records::OneMinute(v) => om.extend(v),
            _ => {}
        }
    }
    let rows = fc.len() + obs.len() + om.len();
    eprintln!(
        "forecast rows in memory: {} bytes each, {:.1} MB",
        std::mem::size_of::<wxlake::decode::types::ForecastRow>(),
        (fc.len() * std::mem::size_of::<wxlake::decode::types::ForecastRow>()) as f64 / 1e6
    );
    eprintln!(
        "decoded {rows} rows ({} forecast, {} observation, {} one-minute; {errors} errors) in {decode_s:.2}s: {:.2} M rows/s",
        fc.len(),
        obs.len(),
        om.len(),
        rows as f64 / decode_s / 1e6
    );

    let dir = tempfile::tempdir().unwrap();
    let lake = rt.block_on(Lake::open(&format!("file://{}", dir.path().display()))).unwrap();
    let t = Instant::now();
    let stats = rt.block_on(async {
        let mut s = store(&lake, Records::Forecasts(fc)).await.unwrap();
        s += store(&lake, Records::Observations(obs)).await.unwrap();
        s += store(&lake, Records::OneMinute(om)).await.unwrap();
        s
    });
    let write_s = t.elapsed().as_secs_f64();
    let on_disk: u64 = walk_size(dir.path());
    eprintln!(
        "wrote {} rows into {} files ({:.1} MB Parquet) in {write_s:.2}s: {:.2} M rows/s",
        stats.stored,
        stats.files,
        on_disk as f64 / 1e6,
        stats.stored as f64 / write_s / 1e6
    );
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    eprintln!(
        "phases (decode + write): {rows} rows in {:.2}s: {:.2} M rows/s on {cores} cores",
        decode_s + write_s,
        rows as f64 / (decode_s + write_s) / 1e6,
    );
    assert_eq!(summary.stored, stats.stored, "both paths store the same rows");
}

/// This process's CPU time and minor page faults so far (getrusage).
struct CpuUse {
    user_s: f64,
    sys_s: f64,
    faults: i64,
}

impl CpuUse {
    fn now() -> Self {
        // SAFETY: getrusage only writes the struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        CpuUse { user_s: secs(u.ru_utime), sys_s: secs(u.ru_stime), faults: u.ru_minflt }
    }
    fn since(&self, start: &CpuUse) -> CpuUse {
        CpuUse {
            user_s: self.user_s - start.user_s,
            sys_s: self.sys_s - start.sys_s,
            faults: self.faults - start.faults,
        }
    }
}

fn walk_size(p: &std::path::Path) -> u64 {
    std::fs::read_dir(p)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        walk_size(&p)
                    } else {
                        e.metadata().map(|m| m.len()).unwrap_or(0)
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}
