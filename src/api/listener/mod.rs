//! The REST listener: accepts connections and serves each with hyper, within limits a
//! slow or hostile client cannot stretch (what `axum::serve` has no setting for).
//!
//! - **Header timeout** ([`HttpLimits::header_timeout`]): a request head (request line and
//!   headers) must be complete within this long of its first byte; a client that trickles
//!   one (slowloris) is cut.
//! - **Idle timeout** ([`HttpLimits::idle_timeout`]): a connection with no request in
//!   progress (new, or kept alive after a response) is closed when no complete request head
//!   arrives within this long (hyper's `header_read_timeout`, which starts when the
//!   connection begins waiting).
//! - **Body timeout** ([`HttpLimits::body_timeout`]): a request body must be complete within
//!   this long of the handler starting to read it (`408`); enforced on the routes that read a
//!   body ([`crate::api::server`]).
//! - **Connection cap** ([`HttpLimits::max_connections`]): see [`slots`]. At the cap the
//!   connection waiting longest without a request in progress is closed for the newcomer;
//!   when every connection has a request in progress the newcomer is answered `503` with
//!   `Retry-After` (at most a few such answers at once; beyond them it is closed unanswered).
//! - hyper's own answers to unparsable requests are JSON ([`conn_io`]).
//!
//! On shutdown the listener stops accepting, lets each connection finish its request
//! (keep-alive off) and cuts whatever is still open after [`DRAIN_TIMEOUT`].

pub mod conn_io;
pub mod slots;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};
use tower::ServiceExt;
use tracing::{debug, info};

use self::conn_io::{ConnIo, MAX_HEAD_BYTES};
use self::slots::{Admission, BusyGuard, Slot, Slots};
use super::error::ApiError;

/// On shutdown, open connections get this long to finish before they are cut.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection over the cap has to send the request it is answered 503 to.
const BUSY_ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// The limits of the REST listener (`serve --http-*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    /// The longest a GET request's answer may take to begin (lake reads included): past
    /// it the client gets a 503 with `Retry-After` instead of waiting on a hung store.
    pub read_deadline: Duration,
}

/// Default header timeout: ample for any real client's head (a few hundred bytes).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default body timeout: an ingest body of 2 MiB at 70 KB/s.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default read deadline: under the 30 s most HTTP clients give up after, above any
/// healthy lake read (a year of one station's history is well under a second).
pub const DEFAULT_READ_DEADLINE: Duration = Duration::from_secs(20);
/// Default idle timeout of a kept-alive connection.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default connection cap, lowered to half the open-file limit where that is lower
/// ([`default_max_connections`]).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: default_max_connections(),
            read_deadline: DEFAULT_READ_DEADLINE,
        }
    }
}

/// [`DEFAULT_MAX_CONNECTIONS`], or half the process's open-file limit when that is lower:
/// the other half stays for the lake's files, the WAL, the event log and the other
/// listeners, so a full REST port never makes `accept` (or a lake read) fail for want of a
/// descriptor. The limit is read from `/proc/self/limits` (Linux); elsewhere the default.
pub fn default_max_connections() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits").ok().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse::<usize>().ok()
    });
    match soft {
        Some(n) => DEFAULT_MAX_CONNECTIONS.min(n / 2).max(1),
        None => DEFAULT_MAX_CONNECTIONS,
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains (see the module).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let slots = Slots::new(limits.max_connections);
    // Connections over the cap that are answered 503 rather than closed.
    let busy_answers = Arc::new(Semaphore::new((limits.max_connections / 16).clamp(1, 64)));
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection task holds a clone; `recv` returns None once all have finished.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let alive = alive_tx.clone();
                    match slots.admit() {
                        Admission::Admitted(lease) => {
                            let conn = Connection { router: router.clone(), limits, stop: stop_rx.clone() };
                            tokio::spawn(async move {
                                conn.run(tcp, peer, &lease.slot).await;
                                drop((lease, alive));
                            });
                        }
                        Admission::Busy => match Arc::clone(&busy_answers).try_acquire_owned() {
                            Ok(permit) => {
                                tokio::spawn(async move {
                                    answer_busy(tcp).await;
                                    drop((permit, alive));
                                });
                            }
                            Err(_) => debug!(%peer, "http: over the connection cap, closed"),
                        },
                    }
                }
                Err(e) => crate::net::accept_failed("http", e).await,
            },
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(alive_tx);
    let _ = alive_rx.recv().await;
    info!(evicted = slots.evictions(), "http: listener stopped");
    Ok(())
}

/// The hyper settings shared by served and refused connections.
fn builder(idle_timeout: Duration) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(idle_timeout).max_header_size(MAX_HEAD_BYTES);
    builder
}

/// One admitted connection.
struct Connection {
    router: Router,
    limits: HttpLimits,
    stop: watch::Receiver<bool>,
}

impl Connection {
    async fn run(mut self, tcp: TcpStream, peer: SocketAddr, slot: &Arc<Slot>) {
        let router = self.router.clone();
        let request_slot = Arc::clone(slot);
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            // Counted from here: a request whose future is dropped unpolled still ends.
            let busy = request_slot.request_started();
            request.extensions_mut().insert(ConnectInfo(peer));
            let router = router.clone();
            async move {
                let response = router.oneshot(request).await.unwrap_or_else(|e: Infallible| match e {});
                Ok::<_, Infallible>(response.map(|body| Body::new(UntilSent { body, _busy: busy })))
            }
        });
        let conn = builder(self.limits.idle_timeout)
            .serve_connection(TokioIo::new(ConnIo::new(tcp, Some(Arc::clone(slot)))), service);
        tokio::pin!(conn);
        let header_timeout_ms = u64::try_from(self.limits.header_timeout.as_millis()).unwrap_or(u64::MAX);
        let mut tick = tokio::time::interval(
            (self.limits.header_timeout / 4).clamp(Duration::from_millis(20), Duration::from_secs(1)),
        );
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                result = conn.as_mut() => {
                    if let Err(e) = result {
                        debug!(%peer, error = %e, "http: connection ended with an error");
                    }
                    return;
                }
                _ = tick.tick() => {
                    if slot.head_age_ms().is_some_and(|age| age > header_timeout_ms) {
                        debug!(%peer, "http: request head not complete within the header timeout, closed");
                        return;
                    }
                }
                () = slot.evicted() => {
                    debug!(%peer, "http: idle connection closed for a newer one (connection cap)");
                    return;
                }
                _ = self.stop.wait_for(|stop| *stop) => break,
            }
        }
        conn.as_mut().graceful_shutdown();
        if tokio::time::timeout(DRAIN_TIMEOUT, conn.as_mut()).await.is_err() {
            debug!(%peer, "http: connection cut after the drain timeout");
        }
    }
}

/// Answers the one request of a connection over the cap with a JSON 503 and closes it.
async fn answer_busy(tcp: TcpStream) {
    let service =
        hyper::service::service_fn(|_request: hyper::Request<Incoming>| async { Ok::<_, Infallible>(busy_response()) });
    let mut builder = builder(BUSY_ANSWER_TIMEOUT);
    builder.keep_alive(false);
    let conn = builder.serve_connection(TokioIo::new(ConnIo::new(tcp, None)), service);
    let _ = tokio::time::timeout(BUSY_ANSWER_TIMEOUT * 2, conn).await;
}

fn busy_response() -> Response {
    ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "Server busy",
        "every connection of this server has a request in progress; retry in a second",
    )
    .with_headers(vec![("retry-after", "1".to_string())])
    .into_response()
}

/// A response body that keeps its request counted as in progress until it is sent in
/// full (or dropped): the dashboard's stream relay is a request for as long as it lasts.
struct UntilSent {
    body: Body,
    _busy: BusyGuard,
}

impl HttpBody for UntilSent {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
