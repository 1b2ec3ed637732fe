//! The PostgreSQL wire protocol (`wxlake serve --pg-addr`), through `datafusion-postgres`:
//! its simple and extended query handlers and its `pg_catalog` (what psql, DBeaver,
//! Grafana and Metabase query on connect), with ours around them:
//!
//! - [`startup`]: the API key as the password (any user name), over TLS, or in the clear
//!   only from loopback;
//! - [`hooks`]: every statement checked read-only and counted against the key's limits
//!   before the library plans it;
//! - [`registers`]: `current_user`, `session_user` ... named as PostgreSQL names them.
//!
//! Each connection gets its own handlers and session ([`WireEngine::query_session`]): a
//! connection's queries run one after another, so its memory pool bounds each query.
//!
//! A client that goes away mid-query stops its query: the protocol task reads the socket
//! only between statements, so while an aggregate computes (no row to write yet) it would
//! not notice; [`peer_gone`] watches the socket beside it and drops the connection's task,
//! which drops the query's streams, stops its tasks and frees its slots.

pub mod cancel;
pub mod copy;
pub mod hooks;
pub mod registers;
pub mod startup;

use std::sync::{Arc, OnceLock};

use datafusion_postgres::pgwire::api::auth::DefaultServerParameterProvider;
use datafusion_postgres::pgwire::api::cancel::DefaultCancelHandler;
use datafusion_postgres::pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use datafusion_postgres::pgwire::api::{
    ClientInfo, ConnectionManager, ErrorHandler, PgWireServerHandlers, RandomPidSecretKeyGenerator,
};
use datafusion_postgres::pgwire::error::PgWireError;
use datafusion_postgres::{DfSessionService, QueryHook};
use std::time::Duration;

use tokio::io::Interest;
use tokio::net::{TcpListener, TcpStream};

use super::bounded::CancelSignal;
use super::error::WireError;
use super::session::WireEngine;

/// One connection's handlers.
struct Connection {
    session: Arc<registers::Named>,
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
    fn new(
        engine: &Arc<WireEngine>,
        manager: &Arc<ConnectionManager>,
        pids: &Arc<RandomPidSecretKeyGenerator>,
        cancels: &Arc<cancel::Cancels>,
    ) -> Result<Self, WireError> {
        let key_id = Arc::new(OnceLock::new());
        let secret = Arc::new(OnceLock::new());
        let signal = CancelSignal::default();
        let ctx = Arc::new(engine.query_session(Arc::clone(&key_id), signal.clone())?);
        let guard = hooks::GuardHook { state: engine.state.clone(), secret: Arc::clone(&secret) };
        let hooks: Vec<Arc<dyn QueryHook>> = vec![
            Arc::new(guard),
            Arc::new(datafusion_postgres::hooks::cursor::CursorStatementHook),
            Arc::new(datafusion_postgres::hooks::set_show::SetShowHook),
            Arc::new(datafusion_postgres::hooks::transactions::TransactionStatementHook),
        ];
        let mut params = DefaultServerParameterProvider::default();
        params.default_transaction_read_only = true;
        params.is_superuser = false;
        Ok(Connection {
            session: Arc::new(registers::Named(Arc::new(DfSessionService::new_with_hooks(ctx, hooks)))),
            startup: Arc::new(startup::KeyStartup {
                state: engine.state.clone(),
                key_id,
                secret,
                params,
                manager: Arc::clone(manager),
                pids: Arc::clone(pids),
                cancels: Arc::clone(cancels),
                signal,
            }),
            cancel: Arc::new(cancel::CancelQuery {
                cancels: Arc::clone(cancels),
                pgwire: DefaultCancelHandler::new(Arc::clone(manager)),
            }),
        })
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
        let conn = match Connection::new(&engine, &manager, &pids, &cancels) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                tracing::error!(error = %e, "pgwire: cannot build a session");
                continue;
            }
        };
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
                ended = datafusion_postgres::pgwire::tokio::process_socket(socket, acceptor, conn) => {
                    if let Err(e) = ended {
                        tracing::debug!(%addr, error = %e, "pgwire connection ended with an error");
                    }
                }
                () = peer_gone(&watch) => {
                    tracing::info!(%addr, "pgwire client went away: its query, if any, is stopped");
                }
            }
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
