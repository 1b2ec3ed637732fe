//! The event log's memory with a realistic day of `observation` payloads in it (a
//! measurement, run by hand; it lives here because the payloads do).

use std::fs;
use std::path::Path;

use chrono::{Duration, Utc};

use super::payloads::observation_payload;
use crate::catalog::Catalog;
use crate::extremes::{LiveInput, Logic, StationExtremes};
use crate::stream::{default_retention, EventLog, EventLogStats};

/// Environment variable naming the log the reopen probe opens.
const PROBE_DIR_VAR: &str = "WXLAKE_EVENT_LOG_PROBE_DIR";

/// Resident set size of this process, KiB.
fn rss_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Bytes allocated through malloc and not freed (glibc), 0 where unknown.
fn heap_bytes() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let info = unsafe { libc::mallinfo2() };
        (info.uordblks + info.hblkhd) as u64
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        0
    }
}

/// Fills `dir` with a day of realistic events: every catalog station (70) every 5 minutes
/// for the last 24 h, each the bridge's `observation` payload with the station's running
/// extremes. Returns the number of events, the bytes on disk and the log's own account
/// of its memory once the day is in.
fn fill_realistic_day(dir: &Path) -> (usize, u64, EventLogStats) {
    let log = EventLog::open(dir, default_retention()).unwrap();
    let stations = Catalog::global().all();
    let mut lives: Vec<StationExtremes> = stations.iter().map(StationExtremes::new).collect();
    let start = Utc::now() - Duration::hours(24) + Duration::minutes(10);
    let mut count = 0;
    for step in 0..288i64 {
        let slot = start + Duration::minutes(5 * step);
        for (i, (st, live)) in stations.iter().zip(lives.iter_mut()).enumerate() {
            let at = slot + Duration::seconds(i as i64);
            let angle = step as f64 / 288.0 * std::f64::consts::TAU;
            let tenths = (100.0 + 80.0 * angle.sin()).round() as i64 + (i as i64 % 7) * 10;
            let text = format!(
                "{} {} 27008KT 10SM FEW250 {:02}/M06 A3021 RMK AO2 SLP231 T0{tenths:03}1061",
                st.code,
                at.format("%d%H%MZ"),
                (tenths + 5) / 10
            );
            let m = crate::decode::metar::parse_metar(&text, at).unwrap();
            live.apply(LiveInput::Metar(&m));
            let nws = live.extremes(Logic::Nws, live.day_of(Logic::Nws, m.time), at);
            let wu = live.extremes(Logic::Wu, live.day_of(Logic::Wu, m.time), at);
            let payload = observation_payload(st, &m, nws.as_ref(), wu.as_ref());
            log.append(&st.code, "observation", payload, at).unwrap();
            count += 1;
        }
    }
    let stats = log.stats();
    drop(log);
    let bytes = fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    (count, bytes, stats)
}

/// Memory of a restart with a realistic day in the log (70 stations × 24 h at 5-minute
/// cadence, bridge `observation` payloads). The log is reopened in a fresh process (this
/// test binary running `reopen_probe`) so the fill's freed memory does not blur the figure:
/// `cargo test --lib stream_bridge::log_memory::memory_after_restart -- --ignored --nocapture`
#[test]
#[ignore = "measurement: prints RSS and heap after a restart"]
fn memory_after_restart_24h_70_stations() {
    let dir = tempfile::tempdir().unwrap();
    let (events, bytes, live) = fill_realistic_day(dir.path());
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", "stream_bridge::log_memory::reopen_probe", "--ignored", "--nocapture"])
        .env(PROBE_DIR_VAR, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let probe = stdout.lines().find(|l| l.starts_with("probe:")).expect("probe output");
    println!("filled {events} events, {} KiB on disk; while live: {live:?}; {probe}", bytes / 1024);
}

/// The reopen half of `memory_after_restart_24h_70_stations` (does nothing on its own).
#[test]
#[ignore = "run by memory_after_restart_24h_70_stations"]
fn reopen_probe() {
    let Some(dir) = std::env::var_os(PROBE_DIR_VAR) else {
        return;
    };
    let (rss0, heap0) = (rss_kib(), heap_bytes());
    let log = EventLog::open(Path::new(&dir), default_retention()).unwrap();
    let (rss1, heap1) = (rss_kib(), heap_bytes());
    println!(
        "probe: retained {} events (memory {:?}); RSS {rss0} -> {rss1} KiB (+{} KiB); heap {} -> {} KiB (+{} KiB)",
        log.len(),
        log.stats().memory_bytes,
        rss1.saturating_sub(rss0),
        heap0 / 1024,
        heap1 / 1024,
        heap1.saturating_sub(heap0) / 1024
    );
}
