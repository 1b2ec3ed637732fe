//! `wxlake serve [--addr A] [--demo]`
//!
//! One server per state directory: the first thing `serve` does is take the directory's
//! `serve.lock` (an exclusive advisory lock the OS drops when the process ends, even on
//! kill -9). A second `serve` on the same state refuses before any side effect: no demo
//! lake built, no key minted or printed, no WAL or event log opened.
//!
//! The second thing is to bind every listener (REST, stream, PostgreSQL, Flight SQL): a
//! port that is taken stops `serve` at once, with the address and the flag that changes
//! it, instead of after a demo lake was built and keys were minted.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use tokio::net::TcpListener;
use wxlake::access::keys::KeyStore;
use wxlake::access::limits::RateLimiter;
use wxlake::api::listener::HttpLimits;
use wxlake::api::state::StreamFeed;
use wxlake::api::{server, AppState};
use wxlake::clock::{Clock, SystemClock};
use wxlake::demo::sim::{demo_sources, Simulator};
use wxlake::feeds::status::StatusFile;
use wxlake::feeds::{Feeds, FeedsConfig};
use wxlake::lake::Lake;
use wxlake::sqlwire::{QueryLimits, WireEngine};
use wxlake::stream::{self, Hub, StreamState};
use wxlake::write::WriteService;

use super::demo::DemoArgs;
use super::keys::state_dir;
use super::shutdown::Shutdown;
use super::startup::{feeds_config, start_write_path};

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
    /// Run the real service: poll every public source the API serves, for the whole
    /// catalog (data/wxlake.live.toml, built in; a --config file's [sources] wins). Needs a
    /// contact for the User-Agent: WXLAKE_CONTACT or [sources] contact.
    #[arg(long, conflicts_with = "demo")]
    pub live: bool,
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
    /// REST port: seconds a client has to send a request's head (request line and
    /// headers) from its first byte; a slower client (slowloris) is disconnected.
    #[arg(long, env = "WXLAKE_HTTP_HEADER_TIMEOUT_SECS", default_value_t = 10)]
    pub http_header_timeout_secs: u64,
    /// REST port: seconds a request body (ingest) has to arrive in full once the server
    /// reads it; later is a 408.
    #[arg(long, env = "WXLAKE_HTTP_BODY_TIMEOUT_SECS", default_value_t = 30)]
    pub http_body_timeout_secs: u64,
    /// REST port: seconds a connection without a request in progress (new, or kept alive
    /// after a response) stays open waiting for one.
    #[arg(long, env = "WXLAKE_HTTP_IDLE_TIMEOUT_SECS", default_value_t = 60)]
    pub http_idle_timeout_secs: u64,
    /// REST port: connections open at once (default 1024, or half the open-file limit if
    /// that is lower). At the cap the longest-waiting idle connection makes room for a new
    /// one; when all have a request in progress, the new one is answered 503.
    #[arg(long, env = "WXLAKE_HTTP_MAX_CONNECTIONS")]
    pub http_max_connections: Option<usize>,
    /// REST port: seconds a GET request's answer may take to begin (lake reads
    /// included); later it is answered 503 with Retry-After, so a hung object store never
    /// holds a client past its own timeout.
    #[arg(long, env = "WXLAKE_HTTP_READ_DEADLINE_SECS", default_value_t = 20)]
    pub http_read_deadline_secs: u64,
}

impl ServeArgs {
    /// The REST listener's limits from the `--http-*` flags.
    pub fn http_limits(&self) -> HttpLimits {
        let secs = |s: u64| Duration::from_secs(s.max(1));
        HttpLimits {
            header_timeout: secs(self.http_header_timeout_secs),
            body_timeout: secs(self.http_body_timeout_secs),
            idle_timeout: secs(self.http_idle_timeout_secs),
            max_connections: self
                .http_max_connections
                .unwrap_or_else(wxlake::api::listener::default_max_connections)
                .max(1),
            read_deadline: secs(self.http_read_deadline_secs),
        }
    }

    /// Where the push stream listens: `--stream-addr`, or with `--demo` 127.0.0.1:8443.
    fn stream_addr(&self) -> Option<String> {
        self.stream_addr.clone().or_else(|| self.demo.then(|| "127.0.0.1:8443".to_string()))
    }
}

/// Every listener of the server, bound before anything else starts.
struct Listeners {
    rest: TcpListener,
    stream: Option<TcpListener>,
    pg: Option<TcpListener>,
    flight: Option<TcpListener>,
}

impl Listeners {
    /// Binds the REST, stream, PostgreSQL and Flight SQL listeners, and checks what their
    /// addresses must be (loopback without TLS), so that a taken port or a refused address
    /// stops `serve` before it builds, mints or opens anything.
    async fn bind(a: &ServeArgs) -> anyhow::Result<Self> {
        let rest = bind(&a.addr, "--addr").await?;
        let stream = match a.stream_addr() {
            Some(addr) => Some(bind(&addr, "--stream-addr").await?),
            None => None,
        };
        let pg = match &a.pg_addr {
            Some(addr) => {
                let listener = bind(addr, "--pg-addr").await?;
                let has_tls = a.tls_cert.is_some() || a.demo;
                if !has_tls && !listener.local_addr()?.ip().is_loopback() {
                    anyhow::bail!("--pg-addr {addr} is not a loopback address: give --tls-cert and --tls-key (the API key is the password)");
                }
                Some(listener)
            }
            None => None,
        };
        let flight = match &a.flight_addr {
            Some(addr) => {
                let listener = bind(addr, "--flight-addr").await?;
                if !listener.local_addr()?.ip().is_loopback() {
                    anyhow::bail!("--flight-addr {addr} is not a loopback address: Flight SQL is served without TLS (the API key is the credential)");
                }
                Some(listener)
            }
            None => None,
        };
        Ok(Listeners { rest, stream, pg, flight })
    }
}

/// Binds `addr`, or says which address failed, why, and which flag (`flag`) changes it.
async fn bind(addr: &str, flag: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::AddrInUse => format!(
                "another process listens on that port: stop it, or give {flag} another address \
                 ({flag} 127.0.0.1:0 takes any free port)"
            ),
            std::io::ErrorKind::AddrNotAvailable => {
                format!("no interface of this machine has that address: give {flag} one of its addresses")
            }
            std::io::ErrorKind::PermissionDenied => {
                format!("ports below 1024 need privileges: give {flag} a higher port")
            }
            _ => format!("give {flag} another address"),
        };
        anyhow::anyhow!("cannot listen on {addr} ({flag}): {e}; {hint}")
    })
}

pub async fn run(lake: Lake, a: ServeArgs, config: Option<&Path>) -> anyhow::Result<ExitCode> {
    // --live: the production feeds, checked before any side effect (a missing contact
    // stops here, before a state directory, a lock or a listener exists).
    let live_sources = if a.live { Some(super::startup::live_feeds_config(config)?) } else { None };
    let dir = state_dir(&lake, a.state_dir.clone())?;
    // Held until the process ends.
    let _lock = take_serve_lock(&dir)?;
    let listeners = Listeners::bind(&a).await?;
    // One shutdown for both listeners, its signal handlers registered before anything
    // listens: a SIGTERM at any moment from here on is a graceful stop with a final flush.
    let shutdown = Shutdown::on_signal();
    let feeds_config = match live_sources {
        Some(cfg) => FeedsConfig { state_dir: Some(dir.clone()), ..cfg },
        None => feeds_config(config, &dir)?,
    };
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
    let live = start_write_path(lake, &dir, a.flush_secs, Arc::clone(&clock)).await?;
    let state = AppState::new(keys, RateLimiter::new(Arc::clone(&clock)), Arc::clone(&live), Arc::clone(&clock));
    let stream = match listeners.stream {
        Some(listener) => Some(start_stream(&a, &dir, listener, &state, &live, &shutdown).await?),
        None => None,
    };
    if listeners.pg.is_some() || listeners.flight.is_some() {
        start_sql_wire(&a, &dir, listeners.pg, listeners.flight, &state, &shutdown).await?;
    }
    // The demo's weather arrives the way real weather does: the feeds poll a simulator of
    // the public sources. Kept alive until the process ends.
    let (_simulator, feeds_config) =
        if a.demo { demo_feeds(&clock, &dir, config.is_some()).await? } else { (None, feeds_config) };
    // After the stream's publisher is attached, so the feeds' first reports are streamed.
    let feeds = Feeds::from_config_at(&feeds_config, Arc::new(Arc::clone(&live)), Arc::clone(&clock))?
        .with_status_file(StatusFile::in_state_dir(&dir), "serve");
    if !feeds.is_empty() {
        let names = feeds.names();
        eprintln!("feeds: polling {} source(s): {}", names.len(), names.join(", "));
        let feeds = Arc::new(feeds);
        state.set_feeds(Arc::clone(&feeds));
        tokio::spawn(feeds.run(shutdown.wait()));
    }
    let listener = listeners.rest;
    let limits = a.http_limits();
    eprintln!("wxlake listening on http://{} (docs: /docs, OpenAPI: /openapi.json)", listener.local_addr()?);
    tracing::info!(?limits, "REST listener limits");
    server::serve_with(listener, state, limits, shutdown.wait()).await?;
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

/// Starts the HTTPS push stream on its bound listener: event log, hub, publisher.
async fn start_stream(
    a: &ServeArgs,
    dir: &std::path::Path,
    listener: TcpListener,
    state: &AppState,
    live: &Arc<WriteService>,
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
    let publisher = wxlake::stream_bridge::spawn_publisher(
        Arc::clone(live),
        Arc::clone(&state.bracket_rows),
        Arc::clone(&log),
        hub.clone(),
    )
    .await;
    let heartbeat = Duration::from_secs(a.heartbeat_secs.max(1));
    let stream_state =
        StreamState { hub: hub.clone(), log: Arc::clone(&log), auth: Arc::new(state.access()), heartbeat };
    // The dashboard's same-origin relay on the REST port serves the same log and hub.
    state.set_stream_feed(StreamFeed { hub: hub.clone(), log: Arc::clone(&log), heartbeat });
    state.set_stream_addr(listener.local_addr()?);
    eprintln!("wxlake stream on https://{}{}", listener.local_addr()?, stream::STREAM_PATH);
    tokio::spawn(stream::serve_tls(listener, config, stream::stream_router(stream_state), shutdown.wait()));
    Ok(RunningStream { hub, log, publisher })
}

/// Starts the analyst SQL listener(s), bound and checked by [`Listeners::bind`], over one
/// [`WireEngine`].
async fn start_sql_wire(
    a: &ServeArgs,
    dir: &Path,
    pg: Option<TcpListener>,
    flight: Option<TcpListener>,
    state: &AppState,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let limits = QueryLimits {
        memory_bytes: a.sql_memory_mb.max(1) << 20,
        timeout: Duration::from_secs(a.sql_timeout_secs.max(1)),
        max_queries: a.sql_max_queries.max(1),
        max_per_key: a.sql_max_per_key.max(1),
        max_connections: a.sql_max_connections.max(1),
        ..QueryLimits::default()
    };
    let engine = Arc::new(WireEngine::new(state.clone(), limits).await.context("analyst SQL")?);
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => Some(stream::load_tls(c, k)?),
        _ if a.demo => {
            let (c, k) = stream::self_signed(&dir.join("tls"), &["localhost", "127.0.0.1"])?;
            Some(stream::load_tls(&c, &k)?)
        }
        _ => None,
    };
    if let Some(listener) = pg {
        let local = listener.local_addr()?;
        eprintln!(
            "wxlake pgwire on {local} ({}; password = API key)",
            if tls.is_some() { "TLS or loopback" } else { "loopback, no TLS" }
        );
        tokio::spawn(wxlake::sqlwire::pg::serve(listener, Arc::clone(&engine), tls.clone(), shutdown.wait()));
    }
    if let Some(listener) = flight {
        let local = listener.local_addr()?;
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
        .with_context(|| format!("cannot open {}", path.display()))?;
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

/// The demo's key of each tier (the enterprise key is admin), printed to stdout: minted
/// by the first start, the same ones again on every later start on this state directory
/// (kept in `<state>/demo-keys.json`, 0600).
fn print_demo_keys(keys: &KeyStore) -> anyhow::Result<()> {
    for key in keys.demo_keys()? {
        let rec = &key.record;
        println!("{:<13} {}  ({}{})", rec.tier.as_str(), key.secret, rec.id, if rec.admin { ", admin" } else { "" });
    }
    Ok(())
}
