//! The PostgreSQL wire protocol (`wxlake serve --pg-addr`), through `datafusion-postgres`:
//! its simple and extended query handlers and its `pg_catalog` (what psql, DBeaver,
//! Grafana and Metabase query on connect), with ours around them:
//!
//! - [`startup`]: the API key as the password (any user name), over TLS, or in the clear
//!   only from loopback;
//! - [`hooks`]: every statement checked read-only and counted against the key's limits
//!   before the library plans it.
//!
//! Each connection gets its own handlers and session ([`WireEngine::query_session`]): a
//! connection's queries run one after another, so its memory pool bounds each query.

pub mod hooks;
pub mod startup;

use std::sync::{Arc, OnceLock};

use datafusion_postgres::pgwire::api::auth::DefaultServerParameterProvider;
use datafusion_postgres::pgwire::api::cancel::DefaultCancelHandler;
use datafusion_postgres::pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use datafusion_postgres::pgwire::api::{ConnectionManager, PgWireServerHandlers, RandomPidSecretKeyGenerator};
use datafusion_postgres::{DfSessionService, QueryHook};
use tokio::net::TcpListener;

use super::error::WireError;
use super::session::WireEngine;

/// One connection's handlers.
struct Connection {
    session: Arc<DfSessionService>,
    startup: Arc<startup::KeyStartup>,
    cancel: Arc<DefaultCancelHandler>,
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
}

impl Connection {
    fn new(
        engine: &Arc<WireEngine>,
        manager: &Arc<ConnectionManager>,
        pids: &Arc<RandomPidSecretKeyGenerator>,
    ) -> Result<Self, WireError> {
        let key_id = Arc::new(OnceLock::new());
        let secret = Arc::new(OnceLock::new());
        let ctx = Arc::new(engine.query_session(Arc::clone(&key_id))?);
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
            session: Arc::new(DfSessionService::new_with_hooks(ctx, hooks)),
            startup: Arc::new(startup::KeyStartup {
                state: engine.state.clone(),
                key_id,
                secret,
                params,
                manager: Arc::clone(manager),
                pids: Arc::clone(pids),
            }),
            cancel: Arc::new(DefaultCancelHandler::new(Arc::clone(manager))),
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
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let manager = Arc::new(ConnectionManager::new());
    let pids = Arc::new(RandomPidSecretKeyGenerator::default());
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
        let conn = match Connection::new(&engine, &manager, &pids) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                tracing::error!(error = %e, "pgwire: cannot build a session");
                continue;
            }
        };
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            if let Err(e) = datafusion_postgres::pgwire::tokio::process_socket(socket, acceptor, conn).await {
                tracing::debug!(%addr, error = %e, "pgwire connection ended with an error");
            }
        });
    }
}
