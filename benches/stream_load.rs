//! Load benchmark of the stream: N concurrent HTTPS SSE clients on 127.0.0.1.
//!
//! ```text
//! cargo bench --bench stream_load -- [clients]      # default 10,000
//! ```
//! The parent process runs the real server (self-signed TLS, EventLog, Hub, router, serve_tls)
//! and publishes; it re-executes itself with `--client` to run the clients in a child process
//! (10k client sockets + 10k server sockets do not fit one process under a 20000 fd limit).
//! Phases: connect all clients (handshake + `connected` rate), 50 events 200 ms apart
//! (publish → receive latency), a burst of 200 events back to back (delivery throughput).
//! Every event goes to every client (all subscribe KNYC): the worst-case fan-out.
//! Latency uses wall-clock nanos (same machine, same clock) carried in the event payload.
//! Bounded: the child gives up after 150 s; the parent kills it after 170 s.
//! Pinned: with two or more cores the server (parent) runs on core 0 and the clients (child)
//! on core 1, so the load generator does not take the server's core (`STREAM_LOAD_PIN=0`
//! shares both cores, as before).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Semaphore;
use wxlake::stream::{
    load_tls, self_signed, serve_tls, stream_router, EventLog, Hub, StreamAuth, StreamGrant, StreamRefusal, StreamState,
};

const SPACED_EVENTS: u64 = 50;
const SPACING: Duration = Duration::from_millis(200);
const BURST_EVENTS: u64 = 200;
const CONNECT_CONCURRENCY: usize = 256;
const CHILD_DEADLINE: Duration = Duration::from_secs(150);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    raise_fd_limit();
    let client = args.get(1).map(String::as_str) == Some("--client");
    let pinned = std::env::var("STREAM_LOAD_PIN").as_deref() != Ok("0")
        && online_cores() >= 2
        && pin_to_core(usize::from(client));
    let workers = if pinned { 1 } else { 2 };
    if !client {
        println!("pinned: {}", if pinned { "server on core 0, clients on core 1" } else { "no" });
    } else if pinned {
        eprintln!("clients pinned to core 1");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build().unwrap();
    if client {
        runtime.block_on(client_main(&args[2..]));
    } else {
        let clients = args.iter().skip(1).find_map(|a| a.parse().ok()).unwrap_or(10_000usize);
        runtime.block_on(parent_main(clients));
    }
}

/// The machine's cores. Not `available_parallelism`: the client inherits the server's
/// one-core affinity, under which it reports 1, and the client then stayed on the server's
/// core (every "pinned apart" run before 2026-11-29's session 26 ran both there).
fn online_cores() -> i64 {
    // SAFETY: sysconf with a valid name has no preconditions.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }
}

/// Restricts this process (and the threads it starts later) to one core; whether it did.
fn pin_to_core(core: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t filled by CPU_SET, passed by pointer with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Soft fd limit up to the hard one (commonly 1024 soft on desktops).
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn wall_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// CPU seconds (user + system) this process has used so far.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / hz
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

struct BenchAuth;

impl StreamAuth for BenchAuth {
    fn authorize(&self, api_key: &str, stations: &[String]) -> Result<StreamGrant, StreamRefusal> {
        match api_key.strip_prefix('k') {
            Some(user) => {
                Ok(StreamGrant { user: format!("u{user}"), stations: stations.to_vec(), withheld: Vec::new() })
            }
            None => Err(StreamRefusal::new(401, "invalid api_key", "bench keys are k<n>")),
        }
    }
}

async fn parent_main(clients: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(&dir.path().join("tls"), &["localhost"]).unwrap();
    let config = load_tls(&cert, &key).unwrap();
    let log = Arc::new(EventLog::open(&dir.path().join("events"), chrono::Duration::hours(24)).unwrap());
    let hub = Hub::new(1024);
    let state = StreamState {
        hub: hub.clone(),
        log: Arc::clone(&log),
        auth: Arc::new(BenchAuth),
        heartbeat: Duration::from_secs(30),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_tls(listener, config, stream_router(state), async move {
        let _ = stop_rx.await;
    }));
    let rss_before = rss_kib(std::process::id());

    let exe = std::env::current_exe().unwrap();
    let mut child = tokio::process::Command::new(exe)
        .args(["--client", &addr.to_string(), cert.to_str().unwrap(), &clients.to_string()])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let child_pid = child.id().unwrap_or(0);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let run = async {
        let ready = lines.next_line().await.unwrap().unwrap_or_default();
        println!("{ready}");
        tokio::time::sleep(Duration::from_secs(1)).await;
        let stats = hub.stats();
        println!(
            "server: {} subscriptions; server RSS {} MiB -> {} MiB ({:.1} KiB per connection); client process RSS {} MiB",
            stats.clients,
            rss_before / 1024,
            rss_kib(std::process::id()) / 1024,
            (rss_kib(std::process::id()).saturating_sub(rss_before)) as f64 / stats.clients.max(1) as f64,
            rss_kib(child_pid) / 1024
        );
        let cpu_start = cpu_secs();
        let lag_start = hub.delivery_lag().snapshot();
        let mut publish_us = Vec::new();
        for _ in 0..SPACED_EVENTS {
            let event =
                log.append("KNYC", "observation", json!({"phase": 1, "t_pub": wall_nanos()}), chrono::Utc::now());
            let started = Instant::now();
            hub.publish(event.unwrap());
            publish_us.push(started.elapsed().as_micros() as u64);
            tokio::time::sleep(SPACING).await;
        }
        let lag_spaced = hub.delivery_lag().snapshot();
        let burst = Instant::now();
        for _ in 0..BURST_EVENTS {
            let event =
                log.append("KNYC", "observation", json!({"phase": 2, "t_pub": wall_nanos()}), chrono::Utc::now());
            hub.publish(event.unwrap());
        }
        let burst_publish = burst.elapsed();
        let end = log.append("KNYC", "bench_end", json!({}), chrono::Utc::now()).unwrap();
        hub.publish(end);
        publish_us.sort_unstable();
        println!(
            "publish (append excluded) to {} clients: p50 {} us, max {} us; burst of {BURST_EVENTS} appended+published in {:?}",
            hub.stats().clients,
            publish_us[publish_us.len() / 2],
            publish_us[publish_us.len() - 1],
            burst_publish
        );
        while let Ok(Some(line)) = lines.next_line().await {
            println!("{line}");
            if line.starts_with("client process CPU") {
                println!("server process CPU during the event phases: {:.2} s", cpu_secs() - cpu_start);
                let lag_end = hub.delivery_lag().snapshot();
                server_lag("spaced events", &lag_spaced.since(&lag_start));
                server_lag("burst events", &lag_end.since(&lag_spaced));
            }
        }
        let stats = hub.stats();
        println!(
            "hub: published {}, queued copies {}, dropped as slow {}",
            stats.published, stats.delivered, stats.dropped_slow
        );
    };
    if tokio::time::timeout(CHILD_DEADLINE + Duration::from_secs(20), run).await.is_err() {
        println!("benchmark timed out");
    }
    let _ = child.kill().await;
    hub.close_all();
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
}

/// The server's share of the latency: publication to the frame handed to each connection
/// (`Hub::delivery_lag`, bucket upper bounds: within 12.5 %).
fn server_lag(label: &str, lag: &wxlake::stream::lag::LagSnapshot) {
    let ms = |q: f64| lag.quantile(q).map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0);
    println!(
        "server side, {label}: {} deliveries handed to their connections; lag publish->connection p50 {:.1} ms, \
         p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        lag.count(),
        ms(0.50),
        ms(0.90),
        ms(0.99),
        ms(1.0)
    );
}

#[derive(Default)]
struct ClientResult {
    connected: bool,
    spaced_us: Vec<u64>,
    burst_us: Vec<u64>,
    burst_first_pub: u64,
    burst_last_recv: u64,
    ended: bool,
}

async fn client_main(args: &[String]) {
    let addr: std::net::SocketAddr = args[0].parse().unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(&args[1]).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let clients: usize = args[2].parse().unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let permits = Arc::new(Semaphore::new(CONNECT_CONCURRENCY));
    let ready = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(clients);
    for i in 0..clients {
        let (connector, permits, ready, failed) =
            (connector.clone(), Arc::clone(&permits), Arc::clone(&ready), Arc::clone(&failed));
        tasks.push(tokio::spawn(async move {
            let result = run_client(i, addr, connector, permits, &ready).await;
            if !result.connected {
                failed.fetch_add(1, Ordering::Relaxed);
            }
            result
        }));
    }
    let deadline = Instant::now() + CHILD_DEADLINE;
    while ready.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) < clients && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    let cpu_start = cpu_secs();
    let n = ready.load(Ordering::Relaxed);
    println!(
        "connect: {n} clients connected (TLS handshake + GET + `connected` event), {} failed, in {:.2?}: {:.0} connections/s",
        failed.load(Ordering::Relaxed),
        elapsed,
        n as f64 / elapsed.as_secs_f64()
    );
    let mut spaced = Vec::new();
    let mut burst = Vec::new();
    let (mut first_pub, mut last_recv, mut ended) = (u64::MAX, 0u64, 0usize);
    for task in tasks {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let Ok(Ok(r)) = tokio::time::timeout(remaining, task).await else { continue };
        spaced.extend(r.spaced_us);
        if !r.burst_us.is_empty() {
            first_pub = first_pub.min(r.burst_first_pub);
            last_recv = last_recv.max(r.burst_last_recv);
        }
        burst.extend(r.burst_us);
        ended += usize::from(r.ended);
    }
    println!("client process CPU during the event phases: {:.2} s", cpu_secs() - cpu_start);
    report("spaced events (1 per 200 ms)", &mut spaced, n as u64 * SPACED_EVENTS);
    report("burst events (200 back to back)", &mut burst, n as u64 * BURST_EVENTS);
    if last_recv > first_pub {
        let secs = (last_recv - first_pub) as f64 / 1e9;
        println!(
            "burst throughput: {} event deliveries in {:.2} s = {:.0} events/s delivered ({:.1} events/s per client)",
            burst.len(),
            secs,
            burst.len() as f64 / secs,
            BURST_EVENTS as f64 / secs
        );
    }
    println!("{ended} clients saw the end marker");
}

fn report(label: &str, latencies: &mut [u64], expected: u64) {
    latencies.sort_unstable();
    let pct = |p: f64| latencies.get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)));
    let ms = |v: Option<&u64>| v.map_or(f64::NAN, |v| *v as f64 / 1000.0);
    println!(
        "{label}: {} of {expected} received; latency publish->client p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        latencies.len(),
        ms(pct(0.50)),
        ms(pct(0.90)),
        ms(pct(0.99)),
        ms(latencies.last())
    );
}

async fn run_client(
    i: usize,
    addr: std::net::SocketAddr,
    connector: tokio_rustls::TlsConnector,
    permits: Arc<Semaphore>,
    ready: &AtomicUsize,
) -> ClientResult {
    let mut result = ClientResult::default();
    let permit = permits.acquire_owned().await.unwrap();
    let Ok(tcp) = tokio::net::TcpStream::connect(addr).await else { return result };
    let _ = tcp.set_nodelay(true);
    let Ok(mut tls) = connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await else {
        return result;
    };
    let request = format!("GET /api/v2/stream?stations=KNYC&api_key=k{i} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    if tls.write_all(request.as_bytes()).await.is_err() {
        return result;
    }
    let mut reader = BufReader::with_capacity(4096, tls);
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line).await {
            Ok(0) | Err(_) => return result,
            Ok(_) if line.starts_with("event: connected") => break,
            Ok(_) => {}
        }
    }
    drop(permit);
    result.connected = true;
    ready.fetch_add(1, Ordering::Relaxed);
    loop {
        line.clear();
        match reader.read_line(&mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.starts_with("event: bench_end") {
            result.ended = true;
            break;
        }
        let Some(data) = line.strip_prefix("data: ") else { continue };
        let now = wall_nanos();
        let (Some(phase), Some(t_pub)) = (field(data, "\"phase\":"), field(data, "\"t_pub\":")) else { continue };
        let latency_us = now.saturating_sub(t_pub) / 1000;
        if phase == 1 {
            result.spaced_us.push(latency_us);
        } else {
            if result.burst_us.is_empty() {
                result.burst_first_pub = t_pub;
            }
            result.burst_us.push(latency_us);
            result.burst_last_recv = now;
        }
    }
    // Drain so the server sees a clean close.
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_millis(10), reader.read_to_end(&mut rest)).await;
    result
}

/// The unsigned integer after `key` in a flat JSON object line.
fn field(data: &str, key: &str) -> Option<u64> {
    let start = data.find(key)? + key.len();
    let digits: &str = &data[start..];
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    digits[..end].parse().ok()
}
