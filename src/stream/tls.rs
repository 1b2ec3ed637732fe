//! HTTPS for the stream port: rustls configuration from PEM files, a self-signed pair for
//! `serve --demo`, and the listener.
//!
//! The listener speaks TLS only: a plain-HTTP request fails the handshake and the socket is
//! closed without an HTTP response (the spec says HTTPS only, and a plain-HTTP answer on this
//! port would invite clients to send their API key in the clear).
//!
//! The crypto provider is passed explicitly (ring) instead of relying on a process-wide
//! default, so another dependency enabling a second rustls provider cannot make the build
//! ambiguous at run time. HTTP/1.1 only (ALPN `http/1.1`): a stream is one long response on
//! its own connection, and HTTP/2 multiplexing buys nothing for it.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;
use tower::Service;
use tracing::{debug, info};

use super::hub::ConnectionCloser;

/// File names written by [`self_signed`].
pub const CERT_FILE: &str = "cert.pem";
/// See [`CERT_FILE`].
pub const KEY_FILE: &str = "key.pem";

/// Failures building the TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file is missing, unreadable or malformed.
    #[error("reading {what} from {path}: {source}")]
    Pem {
        /// "certificate" or "private key".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The parse or I/O error.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The certificate file holds no certificate.
    #[error("no certificate in {0}")]
    NoCertificate(PathBuf),
    /// rustls rejected the pair (e.g. key does not match the certificate).
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// Certificate generation failed.
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// Writing the generated files failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

/// Builds the server configuration from a PEM certificate chain and a PEM private key
/// (PKCS#8, PKCS#1 or SEC1).
pub fn load_tls(cert_pem: &Path, key_pem: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let pem_err = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| TlsError::Pem { what, path, source }
    };
    let certs = CertificateDer::pem_file_iter(cert_pem)
        .map_err(pem_err("certificate", cert_pem))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_err("certificate", cert_pem))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(cert_pem.to_path_buf()));
    }
    let key = PrivateKeyDer::from_pem_file(key_pem).map_err(pem_err("private key", key_pem))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Writes a fresh self-signed certificate and key (`cert.pem`, `key.pem`) into `dir` for
/// `hosts` (DNS names or IP addresses; `localhost` and `127.0.0.1` when empty) and returns
/// their paths. Meant for `serve --demo`: clients must trust `cert.pem` explicitly.
pub fn self_signed(dir: &Path, hosts: &[&str]) -> Result<(PathBuf, PathBuf), TlsError> {
    let names: Vec<String> = if hosts.is_empty() {
        vec!["localhost".into(), "127.0.0.1".into()]
    } else {
        hosts.iter().map(|h| h.to_string()).collect()
    };
    let generated = rcgen::generate_simple_self_signed(names)?;
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TlsError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    let cert_path = dir.join(CERT_FILE);
    let key_path = dir.join(KEY_FILE);
    std::fs::write(&cert_path, generated.cert.pem()).map_err(write_err(&cert_path))?;
    write_private(&key_path, generated.signing_key.serialize_pem().as_bytes()).map_err(write_err(&key_path))?;
    info!(cert = %cert_path.display(), "stream: self-signed certificate written");
    Ok((cert_path, key_path))
}

/// Writes a key readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)?.write_all(bytes)
}

/// Timeouts of the HTTPS listener.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// A TLS handshake must finish within this (stalled handshakes cost a socket each).
    pub handshake_timeout: Duration,
    /// Request headers must arrive within this after the handshake.
    pub header_read_timeout: Duration,
    /// After the hub ends a stream (slow consumer, displaced), the connection gets this long
    /// to write its final event before it is cut.
    pub close_grace: Duration,
    /// On shutdown, open connections get this long to finish before they are cut.
    pub drain_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            close_grace: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(5),
        }
    }
}

/// Serves `router` over HTTPS on `listener` until `shutdown` completes, then waits (at most
/// [`ServeOptions::drain_timeout`]) for open connections. Call `Hub::close_all` on shutdown
/// so the streams end cleanly instead of being cut.
pub async fn serve_tls<F>(listener: TcpListener, config: Arc<ServerConfig>, router: Router, shutdown: F)
where
    F: Future<Output = ()> + Send,
{
    serve_tls_with(listener, config, router, shutdown, ServeOptions::default()).await;
}

/// [`serve_tls`] with explicit timeouts.
pub async fn serve_tls_with<F>(
    listener: TcpListener,
    config: Arc<ServerConfig>,
    router: Router,
    shutdown: F,
    options: ServeOptions,
) where
    F: Future<Output = ()> + Send,
{
    let acceptor = TlsAcceptor::from(config);
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection task holds a clone; `recv` returns None once all have finished.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "stream: HTTPS listener ready");
    }
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let conn = Connection {
                        acceptor: acceptor.clone(),
                        router: router.clone(),
                        options,
                        stop: stop_rx.clone(),
                        _alive: alive_tx.clone(),
                    };
                    tokio::spawn(conn.run(tcp, peer));
                }
                Err(e) => crate::net::accept_failed("stream", e).await,
            },
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(alive_tx);
    let _ = alive_rx.recv().await;
    info!("stream: HTTPS listener stopped");
}

/// One accepted socket.
struct Connection {
    acceptor: TlsAcceptor,
    router: Router,
    options: ServeOptions,
    stop: watch::Receiver<bool>,
    _alive: mpsc::Sender<()>,
}

impl Connection {
    async fn run(mut self, tcp: TcpStream, peer: SocketAddr) {
        // Events are small writes that must leave at once; Nagle would hold them for an ACK.
        if let Err(e) = tcp.set_nodelay(true) {
            debug!(%peer, error = %e, "stream: cannot set TCP_NODELAY");
        }
        let tls = match tokio::time::timeout(self.options.handshake_timeout, self.acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                debug!(%peer, error = %e, "stream: TLS handshake failed");
                return;
            }
            Err(_) => {
                debug!(%peer, "stream: TLS handshake timed out");
                return;
            }
        };
        let closer = ConnectionCloser::new();
        let router = self.router.clone();
        let request_closer = closer.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(request_closer.clone());
            let mut router = router.clone();
            async move { router.call(request).await }
        });
        let mut builder = http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(self.options.header_read_timeout);
        let conn = builder.serve_connection(TokioIo::new(tls), service);
        tokio::pin!(conn);
        let grace = tokio::select! {
            result = conn.as_mut() => {
                log_end(peer, result);
                return;
            }
            () = closer.requested() => self.options.close_grace,
            _ = self.stop.wait_for(|stop| *stop) => {
                conn.as_mut().graceful_shutdown();
                self.options.drain_timeout
            }
        };
        match tokio::time::timeout(grace, conn.as_mut()).await {
            Ok(result) => log_end(peer, result),
            Err(_) => debug!(%peer, "stream: connection cut after its grace period"),
        }
    }
}

fn log_end(peer: SocketAddr, result: Result<(), hyper::Error>) {
    if let Err(e) = result {
        debug!(%peer, error = %e, "stream: connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn self_signed_pair_loads() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed(dir.path(), &["localhost", "127.0.0.1"]).unwrap();
        assert_eq!(cert, dir.path().join(CERT_FILE));
        assert!(std::fs::read_to_string(&cert).unwrap().starts_with("-----BEGIN CERTIFICATE-----"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let config = load_tls(&cert, &key).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }

    #[test]
    fn missing_garbage_and_mismatched_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed(dir.path(), &[]).unwrap();
        let missing = dir.path().join("nope.pem");
        assert!(matches!(load_tls(&missing, &key), Err(TlsError::Pem { what: "certificate", .. })));
        assert!(matches!(load_tls(&cert, &missing), Err(TlsError::Pem { what: "private key", .. })));
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, b"\x00\xffnot pem at all").unwrap();
        assert!(matches!(load_tls(&garbage, &key), Err(TlsError::NoCertificate(_))));
        assert!(matches!(load_tls(&cert, &garbage), Err(TlsError::Pem { .. })));
        // A key from another pair does not match the certificate.
        let other = tempfile::tempdir().unwrap();
        let (_, other_key) = self_signed(other.path(), &["localhost"]).unwrap();
        assert!(matches!(load_tls(&cert, &other_key), Err(TlsError::Config(_))));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn plain_http_fails_the_handshake_instead_of_being_served() {
        let server = crate::stream::testkit::TestServer::start(Default::default()).await;
        let mut tcp = TcpStream::connect(server.addr).await.unwrap();
        tcp.write_all(b"GET /api/v2/stream?stations=KNYC&api_key=key-alice HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut reply = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut reply)).await.expect("closed");
        // Either a TLS alert record or a reset; never an HTTP response.
        assert!(read.is_err() || !reply.starts_with(b"HTTP/"), "{:?}", String::from_utf8_lossy(&reply));
        if let Some(first) = reply.first() {
            assert_eq!(*first, 0x15, "expected a TLS alert record");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_ends_streams_and_returns() {
        let server = crate::stream::testkit::TestServer::start(Default::default()).await;
        let mut client = server.open("alice", "KNYC", None).await;
        client.next_event().await.expect("connected");
        server.hub.close_all();
        let stopped = server.stop();
        assert!(client.next_event().await.is_none(), "stream ends after close_all");
        tokio::time::timeout(Duration::from_secs(10), stopped).await.expect("server stopped").unwrap();
    }
}
