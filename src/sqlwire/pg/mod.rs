//! The PostgreSQL wire protocol (`wxlake serve --pg-addr`), through `datafusion-postgres`:
//! its simple and extended query handlers and its `pg_catalog` (what psql, DBeaver,
//! Grafana and Metabase query on connect), with ours around them:
//!
//! - [`startup`]: the API key as the password (any user name), over TLS, or in the clear
//!   only from loopback;
//! - [`hooks`]: every statement checked read-only and counted against the key's limits
//!   before the library plans it;
//! - [`column_names`]: result columns named as PostgreSQL names them (`count`, `?column?`,
//!   `current_user` ...);
//! - [`client_sql`]: known clients' catalog queries in forms DataFusion plans;
//! - [`cursor`], [`savepoints`], [`deallocate`], [`show`]: `DECLARE`/`FETCH`/`CLOSE`,
//!   savepoints, `DEALLOCATE`/`DISCARD` and `SHOW` of the server's settings, as PostgreSQL
//!   answers them;
//! - [`describe`]: each result column's table, attribute number and `numeric` modifier;
//! - [`parameters`]: every `$n` a client binds kept in the plan.
//!
//! Each connection gets its own handlers, and its own session ([`WireEngine::query_session`])
//! once it has authenticated ([`lazy`]): a connection's queries run one after another, so
//! its memory pool bounds each query. At most [`QueryLimits::max_connections`] connections
//! are open at once, those still authenticating included (each has [`STARTUP_LIMIT`] to do
//! so); one more is refused with `too many connections` (SQLSTATE 53300).
//!
//! [`QueryLimits::max_connections`]: super::QueryLimits::max_connections
//!
//! A client that goes away mid-query stops its query: the protocol task reads the socket
//! only between statements, so while an aggregate computes (no row to write yet) it would
//! not notice; [`peer_gone`] watches the socket beside it and drops the connection's task,
//! which drops the query's streams, stops its tasks and frees its slots.

pub mod cancel;
pub mod client_sql;
pub mod column_names;
pub mod copy;
pub mod cursor;
pub mod deallocate;
pub mod describe;
pub mod hooks;
pub mod lazy;
pub mod parameters;
pub mod savepoints;
pub mod show;
pub mod startup;

use std::sync::{Arc, OnceLock};

use datafusion_postgres::pgwire::api::cancel::DefaultCancelHandler;
use datafusion_postgres::pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use datafusion_postgres::pgwire::api::{
    ClientInfo, ConnectionManager, ErrorHandler, PgWireServerHandlers, RandomPidSecretKeyGenerator,
};
use datafusion_postgres::pgwire::error::{PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::PgWireBackendMessage;
use datafusion_postgres::pgwire::tokio::process_socket;
use futures::Sink;
use std::time::Duration;

use tokio::io::Interest;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::bounded::CancelSignal;
use super::error::WireError;
use super::session::WireEngine;

/// One connection's handlers.
struct Connection {
    session: Arc<lazy::LazySession>,
    startup: Arc<startup::KeyStartup>,
    cancel: Arc<cancel::CancelQuery>,
}

impl PgWireServerHandlers for Connection {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::clone(&self.session)
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::clone(&self.session)
    }

    fn startup_handler(&self) -> Arc<impl datafusion_postgres::pgwire::api::auth::StartupHandler> {
        Arc::clone(&self.startup)
    }

    fn cancel_handler(&self) -> Arc<impl datafusion_postgres::pgwire::api::cancel::CancelHandler> {
        Arc::clone(&self.cancel)
    }

    fn error_handler(&self) -> Arc<impl ErrorHandler> {
        Arc::new(RefusalSqlstate)
    }
}

/// Errors raised while rows are pulled (the per-query memory and time limits, a cancel
/// request) reach pgwire as opaque engine errors, sent as SQLSTATE XX000; this gives them
/// their own SQLSTATE (57014 for a cancel, which drivers raise as "query cancelled") and
/// message.
struct RefusalSqlstate;

impl ErrorHandler for RefusalSqlstate {
    fn on_error<C: ClientInfo>(&self, _client: &C, error: &mut PgWireError) {
        if let PgWireError::ApiError(inner) = error {
            if let Some(refusal) = WireError::find_in(inner.as_ref()) {
                *error = hooks::pg_error(&refusal);
            }
        }
    }
}

impl Connection {
    /// The handlers of a new connection, and its session's slot (empty until the client
    /// has authenticated: [`lazy`]).
    fn new(
        engine: &Arc<WireEngine>,
        manager: &Arc<ConnectionManager>,
        pids: &Arc<RandomPidSecretKeyGenerator>,
        cancels: &Arc<cancel::Cancels>,
    ) -> (Self, Arc<lazy::SessionSlot>) {
        let key_id = Arc::new(OnceLock::new());
        let secret = Arc::new(OnceLock::new());
        let signal = CancelSignal::default();
        let slot = Arc::new(lazy::SessionSlot::new(
            Arc::clone(engine),
            Arc::clone(&key_id),
            Arc::clone(&secret),
            signal.clone(),
        ));
        let params = crate::sqlwire::server_settings::startup_parameters();
        let conn = Connection {
            session: Arc::new(lazy::LazySession::new(Arc::clone(&slot))),
            startup: Arc::new(startup::KeyStartup {
                access: engine.state.access.clone(),
                key_id,
                secret,
                params,
                manager: Arc::clone(manager),
                pids: Arc::clone(pids),
                cancels: Arc::clone(cancels),
                signal,
                session: Arc::clone(&slot),
            }),
            cancel: Arc::new(cancel::CancelQuery {
                cancels: Arc::clone(cancels),
                pgwire: DefaultCancelHandler::new(Arc::clone(manager)),
            }),
        };
        (conn, slot)
    }
}

/// How long a connection may take to authenticate (TLS, startup, password) before it is
/// closed: it holds one of the connection slots meanwhile.
pub const STARTUP_LIMIT: Duration = Duration::from_secs(10);

/// The handlers of a connection over the cap: its startup is answered with the refusal.
struct OverCap(usize);

impl PgWireServerHandlers for OverCap {
    fn startup_handler(&self) -> Arc<impl datafusion_postgres::pgwire::api::auth::StartupHandler> {
        Arc::new(RefuseStartup(self.0))
    }
}

/// Refuses every startup: too many connections (SQLSTATE 53300, as PostgreSQL says it).
struct RefuseStartup(usize);

#[async_trait::async_trait]
impl datafusion_postgres::pgwire::api::auth::StartupHandler for RefuseStartup {
    async fn on_startup<C>(
        &self,
        _client: &mut C,
        _message: datafusion_postgres::pgwire::messages::PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        Err(hooks::fatal(&over_cap(self.0)))
    }
}

/// The refusal of a connection over the cap of `max`.
fn over_cap(max: usize) -> WireError {
    WireError::Busy(format!(
        "too many connections: this server accepts at most {max} analyst SQL connections at once; close one or \
         retry shortly"
    ))
}

/// Resolves once `limit` has passed without the client `authenticated`; never if it has.
async fn startup_expired(authenticated: impl Fn() -> bool, limit: Duration) {
    tokio::time::sleep(limit).await;
    if authenticated() {
        std::future::pending::<()>().await;
    }
}

/// Serves the PostgreSQL protocol on `listener` until `shutdown` resolves. With `tls`,
/// clients may (and off loopback must) use TLS.
pub async fn serve(
    listener: TcpListener,
    engine: Arc<WireEngine>,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let acceptor = tls.map(|config| {
        // The stream's configuration offers HTTP's ALPN; a libpq that offers `postgresql`
        // would be refused by a server that knows only `http/1.1`.
        let mut config = (*config).clone();
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let manager = Arc::new(ConnectionManager::new());
    let pids = Arc::new(RandomPidSecretKeyGenerator::default());
    let cancels = Arc::new(cancel::Cancels::default());
    let max_connections = engine.limits().max_connections.max(1);
    let open = Arc::new(Semaphore::new(max_connections));
    let refusing = Arc::new(Semaphore::new(max_connections));
    tokio::pin!(shutdown);
    loop {
        let (socket, addr) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "pgwire accept failed");
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        // Over the cap, a connection is told so (bounded in number and time like the
        // connections themselves), or, past that too, closed.
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            match Arc::clone(&refusing).try_acquire_owned() {
                Ok(refusal) => {
                    let acceptor = acceptor.clone();
                    tokio::spawn(async move {
                        let refuse = process_socket(socket, acceptor, OverCap(max_connections));
                        let _ = tokio::time::timeout(STARTUP_LIMIT, refuse).await;
                        drop(refusal);
                    });
                }
                Err(_) => tracing::warn!(%addr, "pgwire: over the connection cap, closed"),
            }
            continue;
        };
        let (conn, slot) = Connection::new(&engine, &manager, &pids, &cancels);
        let (socket, watch) = match watched(socket) {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!(%addr, error = %e, "pgwire: cannot watch the connection");
                continue;
            }
        };
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            tokio::select! {
                ended = process_socket(socket, acceptor, Arc::new(conn)) => {
                    if let Err(e) = ended {
                        tracing::debug!(%addr, error = %e, "pgwire connection ended with an error");
                    }
                }
                () = peer_gone(&watch) => {
                    tracing::info!(%addr, "pgwire client went away: its query, if any, is stopped");
                }
                () = startup_expired(|| slot.is_open(), STARTUP_LIMIT) => {
                    tracing::info!(%addr, "pgwire client did not authenticate within {STARTUP_LIMIT:?}: closed");
                }
            }
            drop(permit);
        });
    }
}

/// The socket, and a second handle on it (a duplicated descriptor) for [`peer_gone`].
fn watched(socket: TcpStream) -> std::io::Result<(TcpStream, TcpStream)> {
    let socket = socket.into_std()?;
    let watch = socket.try_clone()?;
    Ok((TcpStream::from_std(socket)?, TcpStream::from_std(watch)?))
}

/// Resolves once the client has closed or reset the connection: the socket's read side
/// closed (even with bytes still unread), or a peek that finds its end. Only peeks, so
/// the protocol task still reads every byte; while bytes wait for it, looks again a
/// moment later.
async fn peer_gone(watch: &TcpStream) {
    let mut byte = [0u8; 1];
    loop {
        match watch.ready(Interest::READABLE).await {
            Ok(ready) if ready.is_read_closed() => return,
            Ok(_) => {}
            Err(_) => return,
        }
        match watch.peek(&mut byte).await {
            Ok(0) | Err(_) => return,
            Ok(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unauthenticated_connection_expires_an_authenticated_one_does_not() {
        let limit = Duration::from_millis(50);
        tokio::time::timeout(Duration::from_secs(2), startup_expired(|| false, limit))
            .await
            .expect("no authentication within the limit: expired");
        let authenticated = tokio::time::timeout(Duration::from_millis(300), startup_expired(|| true, limit)).await;
        assert!(authenticated.is_err(), "an authenticated connection never expires");
    }

    #[tokio::test]
    async fn peer_gone_waits_for_the_close_not_for_data() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (_socket, watch) = watched(server).unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut client, b"Q").await.unwrap();
        let early = tokio::time::timeout(Duration::from_millis(500), peer_gone(&watch)).await;
        assert!(early.is_err(), "pending data is not a close");
        drop(client);
        tokio::time::timeout(Duration::from_secs(2), peer_gone(&watch)).await.expect("the close is seen");
    }
}
