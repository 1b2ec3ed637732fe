//! Test harness shared by the end-to-end tests: a real HTTPS server on 127.0.0.1 with a
//! self-signed certificate, and a hand-written SSE client that trusts it and sees the raw
//! wire lines.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::*;

const READ_TIMEOUT: Duration = Duration::from_secs(15);

/// Keys are `key-<user>`; `nostream` is a key without stream access; at most 5 stations.
pub struct Auth;

impl StreamAuth for Auth {
    fn authorize(&self, api_key: &str, stations: &[String]) -> Result<StreamGrant, StreamRefusal> {
        if api_key.is_empty() {
            return Err(StreamRefusal::new(401, "missing api_key", "pass api_key=<API_KEY>"));
        }
        if api_key == "nostream" {
            return Err(StreamRefusal::new(403, "stream not enabled", "enable streaming for this key"));
        }
        let Some(user) = api_key.strip_prefix("key-") else {
            return Err(StreamRefusal::new(401, "invalid api_key", "unknown key"));
        };
        if stations.is_empty() {
            return Err(StreamRefusal::new(400, "missing required parameter stations", "comma-separated codes"));
        }
        if stations.len() > 5 {
            return Err(StreamRefusal::new(403, "too many stations", "Professional tier allows 5"));
        }
        Ok(StreamGrant { user: user.to_string(), stations: stations.to_vec(), withheld: Vec::new() })
    }
}

/// Server knobs the tests vary.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub heartbeat: Duration,
    pub queue: usize,
    pub close_grace: Duration,
    pub reconnect: ReconnectPolicy,
    pub log_budget: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            heartbeat: DEFAULT_HEARTBEAT,
            queue: 64,
            close_grace: ServeOptions::default().close_grace,
            reconnect: ReconnectPolicy::default(),
            log_budget: DEFAULT_MEMORY_BUDGET,
        }
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub hub: Hub,
    pub log: Arc<EventLog>,
    connector: TlsConnector,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start(options: Options) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed(&dir.path().join("tls"), &["localhost", "127.0.0.1"]).unwrap();
        let config = load_tls(&cert, &key).unwrap();
        let log_options = EventLogOptions { memory_budget: options.log_budget, ..EventLogOptions::default() };
        let log = Arc::new(EventLog::open_with(&dir.path().join("events"), log_options).unwrap());
        let hub = Hub::with_policy(options.queue, options.reconnect);
        let state =
            StreamState { hub: hub.clone(), log: Arc::clone(&log), auth: Arc::new(Auth), heartbeat: options.heartbeat };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let serve_options = ServeOptions { close_grace: options.close_grace, ..ServeOptions::default() };
        let shutdown = async move {
            let _ = rx.await;
        };
        let task = tokio::spawn(serve_tls_with(listener, config, stream_router(state), shutdown, serve_options));
        TestServer {
            addr,
            hub,
            log,
            connector: client_connector(&cert),
            shutdown: Some(tx),
            task: Some(task),
            _dir: dir,
        }
    }

    /// Appends to the log, then publishes (the order the server uses); returns the id.
    pub fn publish(&self, station: &str, name: &str, data: Value) -> u64 {
        let event = self.log.append(station, name, data, chrono::Utc::now()).unwrap();
        let id = event.id;
        self.hub.publish(event);
        id
    }

    /// Publishes `count` events alternating KNYC/KMDW with `pause` between them; yields
    /// the KNYC ids.
    pub fn spawn_publisher(&self, count: usize, pause: Duration) -> JoinHandle<Vec<u64>> {
        let (log, hub) = (Arc::clone(&self.log), self.hub.clone());
        tokio::spawn(async move {
            let mut knyc = Vec::new();
            for i in 0..count {
                let station = if i % 2 == 0 { "KNYC" } else { "KMDW" };
                let event =
                    log.append(station, "observation", serde_json::json!({"i": i}), chrono::Utc::now()).unwrap();
                if station == "KNYC" {
                    knyc.push(event.id);
                }
                hub.publish(event);
                tokio::time::sleep(pause).await;
            }
            knyc
        })
    }

    fn path(user: &str, stations: &str, last: Option<&str>) -> String {
        let mut path = format!("{STREAM_PATH}?stations={stations}&api_key=key-{user}");
        if let Some(last) = last {
            path.push_str(&format!("&last_event_id={last}"));
        }
        path
    }

    pub async fn open(&self, user: &str, stations: &str, last: Option<&str>) -> SseClient {
        SseClient::get(self, &Self::path(user, stations, last), &[]).await
    }

    pub async fn open_with_header(&self, user: &str, stations: &str, last: &str) -> SseClient {
        SseClient::get(self, &Self::path(user, stations, None), &[("Last-Event-ID", last)]).await
    }

    /// Opens a stream over a socket with a tiny receive buffer and reads nothing yet.
    pub async fn open_slow(&self, user: &str, stations: &str) -> SseClient {
        SseClient::send(self, &Self::path(user, stations, None), &[], Some(4096)).await
    }

    /// Stops accepting; the returned task ends once connections are done.
    pub fn stop(mut self) -> JoinHandle<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.task.take().unwrap()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A client configuration that trusts exactly the test's self-signed certificate.
pub fn client_connector(cert: &std::path::Path) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

/// One received SSE event with its raw field lines.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub lines: Vec<String>,
    pub name: String,
    pub id: Option<String>,
    /// The `retry:` field (milliseconds), when sent.
    pub retry: Option<u64>,
    pub data: Value,
}

impl SseEvent {
    pub fn id_u64(&self) -> u64 {
        self.id.as_deref().and_then(|i| i.parse().ok()).unwrap_or_else(|| panic!("no id on {:?}", self.lines))
    }
}

enum Chunk {
    Size,
    Data(usize),
    Crlf,
    Done,
}

/// Minimal HTTP/1.1 client: status, headers, chunked or sized body, SSE events.
pub struct SseClient {
    stream: TlsStream<TcpStream>,
    raw: Vec<u8>,
    body: Vec<u8>,
    pub status: u16,
    headers: Vec<(String, String)>,
    chunk: Chunk,
    chunked: bool,
    head_read: bool,
    eof: bool,
}

impl SseClient {
    pub async fn get(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> SseClient {
        let mut client = Self::send(server, path, headers, None).await;
        client.read_head().await;
        client
    }

    pub async fn send(server: &TestServer, path: &str, headers: &[(&str, &str)], recv_buf: Option<u32>) -> SseClient {
        Self::send_to(server.addr, &server.connector, path, headers, recv_buf).await
    }

    /// Opens a stream on any server (address and a connector trusting its certificate).
    pub async fn connect(addr: SocketAddr, connector: &TlsConnector, path: &str) -> SseClient {
        let mut client = Self::send_to(addr, connector, path, &[], None).await;
        client.read_head().await;
        client
    }

    /// [`SseClient::connect`] over a socket with a tiny receive buffer, reading nothing
    /// yet (not even the response head): a client that has stopped draining.
    pub async fn connect_slow(addr: SocketAddr, connector: &TlsConnector, path: &str) -> SseClient {
        Self::send_to(addr, connector, path, &[], Some(4096)).await
    }

    async fn send_to(
        addr: SocketAddr,
        connector: &TlsConnector,
        path: &str,
        headers: &[(&str, &str)],
        recv_buf: Option<u32>,
    ) -> SseClient {
        let socket = TcpSocket::new_v4().unwrap();
        if let Some(size) = recv_buf {
            socket.set_recv_buffer_size(size).unwrap();
        }
        let tcp = socket.connect(addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let mut stream = connector.connect(name, tcp).await.unwrap();
        let mut request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n");
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        stream.flush().await.unwrap();
        SseClient {
            stream,
            raw: Vec::new(),
            body: Vec::new(),
            status: 0,
            headers: Vec::new(),
            chunk: Chunk::Size,
            chunked: false,
            head_read: false,
            eof: false,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    async fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        let mut buf = [0u8; 16 * 1024];
        match tokio::time::timeout(READ_TIMEOUT, self.stream.read(&mut buf)).await {
            Err(_) => panic!("no data from the server within {READ_TIMEOUT:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => {
                self.eof = true;
                false
            }
            Ok(Ok(n)) => {
                self.raw.extend_from_slice(&buf[..n]);
                true
            }
        }
    }

    async fn read_head(&mut self) {
        if self.head_read {
            return;
        }
        let end = loop {
            if let Some(pos) = find(&self.raw, b"\r\n\r\n") {
                break pos;
            }
            assert!(self.fill().await, "connection closed before the response head");
        };
        let head = String::from_utf8(self.raw.drain(..end + 4).collect()).unwrap();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        self.status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        for line in lines.filter(|l| !l.is_empty()) {
            let (k, v) = line.split_once(':').unwrap();
            self.headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        self.chunked = self.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        self.head_read = true;
    }

    /// Moves decoded body bytes from `raw` to `body`.
    fn decode(&mut self) {
        if !self.chunked {
            self.body.append(&mut self.raw);
            return;
        }
        loop {
            match self.chunk {
                Chunk::Size => {
                    let Some(pos) = find(&self.raw, b"\r\n") else { return };
                    let line: Vec<u8> = self.raw.drain(..pos + 2).collect();
                    let text = std::str::from_utf8(&line[..pos]).unwrap();
                    let size = usize::from_str_radix(text.split(';').next().unwrap().trim(), 16).unwrap();
                    self.chunk = if size == 0 { Chunk::Done } else { Chunk::Data(size) };
                }
                Chunk::Data(left) => {
                    let take = left.min(self.raw.len());
                    self.body.extend(self.raw.drain(..take));
                    self.chunk = if take == left { Chunk::Crlf } else { Chunk::Data(left - take) };
                    if self.raw.is_empty() {
                        return;
                    }
                }
                Chunk::Crlf => {
                    if self.raw.len() < 2 {
                        return;
                    }
                    assert_eq!(&self.raw[..2], b"\r\n", "chunk framing");
                    self.raw.drain(..2);
                    self.chunk = Chunk::Size;
                }
                Chunk::Done => return,
            }
        }
    }

    /// The next event, or None at the end of the body / connection.
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        self.read_head().await;
        loop {
            self.decode();
            if let Some(pos) = find(&self.body, b"\n\n") {
                let block: Vec<u8> = self.body.drain(..pos + 2).collect();
                return Some(parse_event(&block[..pos]));
            }
            if matches!(self.chunk, Chunk::Done) || !self.fill().await {
                return None;
            }
        }
    }

    /// The whole (non-streaming) body.
    pub async fn read_body(&mut self) -> Vec<u8> {
        let length: usize = self.header("content-length").map_or(usize::MAX, |l| l.parse().unwrap());
        loop {
            self.decode();
            if self.body.len() >= length || matches!(self.chunk, Chunk::Done) || !self.fill().await {
                return std::mem::take(&mut self.body);
            }
        }
    }

    /// True if the server closes the connection (within the read timeout).
    pub async fn reaches_eof(&mut self) -> bool {
        while self.fill().await {
            self.raw.clear();
        }
        self.eof
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse_event(block: &[u8]) -> SseEvent {
    let text = std::str::from_utf8(block).unwrap();
    let lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let mut event = SseEvent { lines: lines.clone(), name: String::new(), id: None, retry: None, data: Value::Null };
    for line in &lines {
        if let Some(v) = line.strip_prefix("event: ") {
            event.name = v.to_string();
        } else if let Some(v) = line.strip_prefix("id: ") {
            event.id = Some(v.to_string());
        } else if let Some(v) = line.strip_prefix("retry: ") {
            event.retry = Some(v.parse().unwrap());
        } else if let Some(v) = line.strip_prefix("data: ") {
            event.data = serde_json::from_str(v).unwrap();
        } else {
            panic!("unexpected SSE line {line:?}");
        }
    }
    event
}
