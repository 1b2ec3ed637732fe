//! `wxlake serve [--addr A] [--demo]`
//!
//! One server per state directory: the first thing `serve` does is take the directory's
//! `serve.lock` (an exclusive advisory lock the OS drops when the process ends, even on
//! kill -9). A second `serve` on the same state refuses before any side effect: no demo
//! lake built, no key minted or printed, no WAL or event log opened.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use wxlake::api::keys::{KeyStore, Tier};
use wxlake::api::limits::RateLimiter;
use wxlake::api::state::StreamFeed;
use wxlake::api::{server, AppState};
use wxlake::clock::{Clock, SystemClock};
use wxlake::demo::sim::{demo_sources, Simulator};
use wxlake::feeds::status::StatusFile;
use wxlake::feeds::{Feeds, FeedsConfig};
use wxlake::lake::Lake;
use wxlake::sqlwire::{QueryLimits, WireEngine};
use wxlake::stream::{self, Hub, StreamState};
use wxlake::write::LiveService;

use super::demo::DemoArgs;
use super::keys::state_dir;
use super::live::{feeds_config, start_live};
use super::shutdown::Shutdown;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// REST listener (127.0.0.1 only by default).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// State directory for keys and the WAL (default: next to a local lake).
    #[arg(long, env = "WXLAKE_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Seconds between WAL → lake flushes.
    #[arg(long, default_value_t = 10)]
    pub flush_secs: u64,
    /// Build a demo lake if the lake is empty, print a key per tier, feed live data.
    #[arg(long)]
    pub demo: bool,
    /// Days of history for the demo lake.
    #[arg(long, default_value_t = 7)]
    pub demo_days: u32,
    /// HTTPS listener of the push stream (default with --demo: 127.0.0.1:8443).
    #[arg(long)]
    pub stream_addr: Option<String>,
    /// PEM certificate chain for the stream listener.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for the stream listener.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Seconds between stream heartbeats.
    #[arg(long, default_value_t = 30)]
    pub heartbeat_secs: u64,
    /// PostgreSQL wire protocol listener for analyst SQL (psql, DBeaver, Grafana): the API
    /// key is the password. TLS with --tls-cert/--tls-key (or --demo's certificate);
    /// without them, loopback addresses only.
    #[arg(long)]
    pub pg_addr: Option<String>,
    /// Arrow Flight SQL listener for analyst SQL (ADBC, JDBC, DBeaver): `Authorization:
    /// Bearer <key>`, or Basic auth with the key as the password. Plain gRPC: loopback
    /// addresses only (put a TLS proxy in front to reach it from elsewhere).
    #[arg(long)]
    pub flight_addr: Option<String>,
    /// Memory one analyst SQL query may use (MiB); beyond it, operators spill or the query
    /// fails with a clear error.
    #[arg(long, default_value_t = 1024)]
    pub sql_memory_mb: usize,
    /// Seconds one analyst SQL query may run, first row to last.
    #[arg(long, default_value_t = 300)]
    pub sql_timeout_secs: u64,
    /// Analyst SQL queries running at once, all keys together.
    #[arg(long, default_value_t = 4)]
    pub sql_max_queries: usize,
    /// Analyst SQL queries running at once per key.
    #[arg(long, default_value_t = 2)]
    pub sql_max_per_key: usize,
    /// Analyst SQL connections open at once on the PostgreSQL listener (one more is
    /// refused), and calls in progress at once on the Flight SQL listener (one more waits).
    #[arg(long, default_value_t = 64)]
    pub sql_max_connections: usize,
}

pub async fn run(lake: Lake, a: ServeArgs, config: Option<&Path>) -> anyhow::Result<ExitCode> {
    let dir = state_dir(&lake, a.state_dir.clone())?;
    // Held until the process ends.
    let _lock = take_serve_lock(&dir)?;
    // One shutdown for both listeners, its signal handlers registered before anything
    // listens: a SIGTERM at any moment from here on is a graceful stop with a final flush.
    let shutdown = Shutdown::on_signal();
    let feeds_config = feeds_config(config, &dir)?;
    if a.demo && !lake_has_data(&lake) {
        eprintln!("demo: building a {}-day demo lake (first run only)...", a.demo_days);
        let args = DemoArgs {
            days: a.demo_days,
            stations: Vec::new(),
            seed: wxlake::demo::DEFAULT_SEED,
            no_forecasts: false,
            no_onemin: false,
            group: 10,
        };
        super::demo::build(&lake, &args).await?;
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let keys = KeyStore::open(&dir)?;
    if a.demo {
        print_demo_keys(&keys)?;
    }
    let live = start_live(lake, &dir, a.flush_secs, Arc::clone(&clock)).await?;
    let state = AppState::new(keys, RateLimiter::new(Arc::clone(&clock)), Arc::clone(&live), Arc::clone(&clock));
    let stream_addr = a.stream_addr.clone().or_else(|| a.demo.then(|| "127.0.0.1:8443".to_string()));
    let stream = match stream_addr {
        Some(addr) => Some(start_stream(&a, &dir, &addr, &state, &live, &shutdown).await?),
        None => None,
    };
    if a.pg_addr.is_some() || a.flight_addr.is_some() {
        start_sql_wire(&a, &dir, &state, &shutdown).await?;
    }
    // The demo's weather arrives the way real weather does: the feeds poll a simulator of
    // the public sources. Kept alive until the process ends.
    let (_simulator, feeds_config) =
        if a.demo { demo_feeds(&clock, &dir, config.is_some()).await? } else { (None, feeds_config) };
    // After the stream's publisher is attached, so the feeds' first reports are streamed.
    let feeds = Feeds::from_config_at(&feeds_config, Arc::new(Arc::clone(&live)), Arc::clone(&clock))?
        .with_status_file(StatusFile::in_state_dir(&dir), "serve");
    if !feeds.is_empty() {
        eprintln!("feeds: polling {feeds:?}");
        let feeds = Arc::new(feeds);
        state.set_feeds(Arc::clone(&feeds));
        tokio::spawn(feeds.run(shutdown.wait()));
    }
    let listener = tokio::net::TcpListener::bind(&a.addr).await?;
    eprintln!("wxlake listening on http://{} (docs: /docs, OpenAPI: /openapi.json)", listener.local_addr()?);
    server::serve(listener, state, shutdown.wait()).await?;
    if let Some(stream) = stream {
        // Events of everything applied so far reach the log before the stream closes.
        live.detach_publisher().await;
        if let Err(e) = stream.publisher.await {
            tracing::error!(error = %e, "stream publisher ended abnormally");
        }
        stream.log.sync()?;
        stream.hub.close_all();
    }
    eprintln!("shutting down: flushing the WAL to the lake");
    live.flush().await?;
    Ok(ExitCode::SUCCESS)
}

/// Starts the simulated public sources and the feeds configuration pointing every source
/// at them, in place of the config file's `[sources]` (which was still checked).
async fn demo_feeds(
    clock: &Arc<dyn Clock>,
    dir: &Path,
    has_config: bool,
) -> anyhow::Result<(Option<Simulator>, FeedsConfig)> {
    let sim = Simulator::start(Arc::clone(clock), wxlake::demo::DEFAULT_SEED).await?;
    if has_config {
        eprintln!("demo: the feeds poll the simulated sources; the config file's [sources] are not used");
    }
    let mut cfg = FeedsConfig::from_toml(&demo_sources(sim.base_url()))?;
    cfg.state_dir = Some(dir.to_path_buf());
    eprintln!("demo: simulated public sources on {}", sim.base_url());
    Ok((Some(sim), cfg))
}

/// The running push stream, for its orderly stop.
struct RunningStream {
    hub: Hub,
    log: Arc<stream::EventLog>,
    publisher: tokio::task::JoinHandle<()>,
}

/// Starts the HTTPS push stream: event log, hub, publisher, listener.
async fn start_stream(
    a: &ServeArgs,
    dir: &std::path::Path,
    addr: &str,
    state: &AppState,
    live: &Arc<LiveService>,
    shutdown: &Shutdown,
) -> anyhow::Result<RunningStream> {
    let (cert, key) = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => (c.clone(), k.clone()),
        _ if a.demo => {
            let pair = stream::self_signed(&dir.join("tls"), &["localhost", "127.0.0.1"])?;
            eprintln!("demo: self-signed stream certificate {} (key {})", pair.0.display(), pair.1.display());
            pair
        }
        _ => anyhow::bail!("--stream-addr needs --tls-cert and --tls-key (the stream is HTTPS only)"),
    };
    let config = stream::load_tls(&cert, &key)?;
    let log = Arc::new(stream::EventLog::open(&dir.join("events"), stream::default_retention())?);
    let hub = Hub::new(1024);
    let publisher = wxlake::api::stream_bridge::spawn_publisher(Arc::clone(live), Arc::clone(&log), hub.clone()).await;
    let heartbeat = Duration::from_secs(a.heartbeat_secs.max(1));
    let stream_state =
        StreamState { hub: hub.clone(), log: Arc::clone(&log), auth: Arc::new(state.clone()), heartbeat };
    // The dashboard's same-origin relay on the REST port serves the same log and hub.
    state.set_stream_feed(StreamFeed { hub: hub.clone(), log: Arc::clone(&log), heartbeat });
    let listener = tokio::net::TcpListener::bind(addr).await?;
    state.set_stream_addr(listener.local_addr()?);
    eprintln!("wxlake stream on https://{}{}", listener.local_addr()?, stream::STREAM_PATH);
    tokio::spawn(stream::serve_tls(listener, config, stream::stream_router(stream_state), shutdown.wait()));
    Ok(RunningStream { hub, log, publisher })
}

/// Starts the analyst SQL listener(s) over one [`WireEngine`].
async fn start_sql_wire(a: &ServeArgs, dir: &Path, state: &AppState, shutdown: &Shutdown) -> anyhow::Result<()> {
    let limits = QueryLimits {
        memory_bytes: a.sql_memory_mb.max(1) << 20,
        timeout: Duration::from_secs(a.sql_timeout_secs.max(1)),
        max_queries: a.sql_max_queries.max(1),
        max_per_key: a.sql_max_per_key.max(1),
        max_connections: a.sql_max_connections.max(1),
        ..QueryLimits::default()
    };
    let engine = Arc::new(WireEngine::new(state.clone(), limits).map_err(|e| anyhow::anyhow!("analyst SQL: {e}"))?);
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => Some(stream::load_tls(c, k)?),
        _ if a.demo => {
            let (c, k) = stream::self_signed(&dir.join("tls"), &["localhost", "127.0.0.1"])?;
            Some(stream::load_tls(&c, &k)?)
        }
        _ => None,
    };
    if let Some(addr) = &a.pg_addr {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--pg-addr {addr}"))?;
        let local = listener.local_addr()?;
        if tls.is_none() && !local.ip().is_loopback() {
            anyhow::bail!("--pg-addr {addr} is not a loopback address: give --tls-cert and --tls-key (the API key is the password)");
        }
        eprintln!(
            "wxlake pgwire on {local} ({}; password = API key)",
            if tls.is_some() { "TLS or loopback" } else { "loopback, no TLS" }
        );
        tokio::spawn(wxlake::sqlwire::pg::serve(listener, Arc::clone(&engine), tls.clone(), shutdown.wait()));
    }
    if let Some(addr) = &a.flight_addr {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--flight-addr {addr}"))?;
        let local = listener.local_addr()?;
        if !local.ip().is_loopback() {
            anyhow::bail!("--flight-addr {addr} is not a loopback address: Flight SQL is served without TLS (the API key is the credential)");
        }
        eprintln!("wxlake Flight SQL on grpc://{local} (Authorization: Bearer <API key>)");
        let shutdown = shutdown.wait();
        tokio::spawn(async move {
            if let Err(e) = wxlake::sqlwire::flight::serve(listener, engine, shutdown).await {
                tracing::error!(error = %e, "Flight SQL listener ended");
            }
        });
    }
    Ok(())
}

/// The lock file that makes a state directory one server's.
pub const SERVE_LOCK: &str = "serve.lock";

/// How long to wait for a lock held by a predecessor that is still exiting.
const SERVE_LOCK_WAIT: Duration = Duration::from_millis(500);

/// Takes `<dir>/serve.lock` exclusively (waiting up to 0.5 s), or says who holds the
/// state. The file records the holder's pid for that message.
pub(super) fn take_serve_lock(dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use std::io::{Read, Seek, Write};
    let path = dir.join(SERVE_LOCK);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
    let deadline = std::time::Instant::now() + SERVE_LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() { String::new() } else { format!(" (pid {holder})") };
                anyhow::bail!(
                    "another wxlake serve{who} is using the state directory {}; stop it first, or give this one \
                     another --state-dir (and lake)",
                    dir.display()
                );
            }
            Err(std::fs::TryLockError::Error(e)) => anyhow::bail!("cannot lock {}: {e}", path.display()),
        }
    }
    // Best effort: the pid is only for the message above.
    let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| writeln!(file, "{}", std::process::id()));
    Ok(file)
}

fn lake_has_data(lake: &Lake) -> bool {
    lake.location
        .local_dir
        .as_ref()
        .map(|d| d.join("observations").read_dir().map(|mut r| r.next().is_some()).unwrap_or(false))
        .unwrap_or(true)
}

/// One key per tier (the enterprise key is admin and stream-enabled), printed to stdout.
fn print_demo_keys(keys: &KeyStore) -> anyhow::Result<()> {
    for tier in Tier::ALL {
        let admin = tier == Tier::Enterprise;
        let (rec, secret) = keys.create(tier, &format!("demo-{}", tier.as_str()), admin, true)?;
        println!("{:<13} {secret}  ({}{})", tier.as_str(), rec.id, if admin { ", admin" } else { "" });
    }
    Ok(())
}
