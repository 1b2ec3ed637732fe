//! A connection's query handlers, whose DataFusion session is built only once the client
//! has authenticated ([`SessionSlot::open`], called by [`super::startup`]): until then a
//! connection costs a few handles, not a session (its copy of the engine's state, its
//! runtime environment and memory pool). pgwire takes a connection's handlers before the
//! first message, so these stand in for `datafusion-postgres`' and pass every call on.

use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use datafusion_postgres::pgwire::api::portal::{Format, Portal};
use datafusion_postgres::pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use datafusion_postgres::pgwire::api::results::{FieldInfo, Response};
use datafusion_postgres::pgwire::api::stmt::QueryParser;
use datafusion_postgres::pgwire::api::store::PortalStore;
use datafusion_postgres::pgwire::api::{ClientInfo, ClientPortalStore, Type};
use datafusion_postgres::pgwire::error::{PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::PgWireBackendMessage;
use datafusion_postgres::{DfSessionService, QueryHook};
use futures::Sink;

use super::hooks::{self, fatal};
use super::registers::name_registers;
use crate::sqlwire::bounded::CancelSignal;
use crate::sqlwire::error::WireError;
use crate::sqlwire::session::WireEngine;

/// What a parsed statement is to `datafusion-postgres`.
type Statement = <DfSessionService as ExtendedQueryHandler>::Statement;

/// A connection's session, once it has one.
pub struct SessionSlot {
    engine: Arc<WireEngine>,
    key_id: Arc<OnceLock<String>>,
    secret: Arc<OnceLock<String>>,
    signal: CancelSignal,
    service: OnceLock<Arc<DfSessionService>>,
}

impl SessionSlot {
    /// The slot of a connection whose key will be in `key_id` and `secret`, its queries
    /// stopped by `signal`.
    pub fn new(
        engine: Arc<WireEngine>,
        key_id: Arc<OnceLock<String>>,
        secret: Arc<OnceLock<String>>,
        signal: CancelSignal,
    ) -> Self {
        SessionSlot { engine, key_id, secret, signal, service: OnceLock::new() }
    }

    /// Builds the connection's session (once).
    pub fn open(&self) -> Result<(), WireError> {
        if self.service.get().is_some() {
            return Ok(());
        }
        let ctx = Arc::new(self.engine.query_session(Arc::clone(&self.key_id), self.signal.clone())?);
        let guard = hooks::GuardHook { access: self.engine.state.access.clone(), secret: Arc::clone(&self.secret) };
        let hooks: Vec<Arc<dyn QueryHook>> = vec![
            Arc::new(guard),
            Arc::new(datafusion_postgres::hooks::cursor::CursorStatementHook),
            Arc::new(datafusion_postgres::hooks::set_show::SetShowHook),
            Arc::new(datafusion_postgres::hooks::transactions::TransactionStatementHook),
        ];
        let _ = self.service.set(Arc::new(DfSessionService::new_with_hooks(ctx, hooks)));
        Ok(())
    }

    /// Whether the session is built (the client has authenticated).
    pub fn is_open(&self) -> bool {
        self.service.get().is_some()
    }

    /// The session; pgwire routes no query here before authentication, so its absence is
    /// the missing key.
    fn service(&self) -> PgWireResult<&Arc<DfSessionService>> {
        self.service.get().ok_or_else(|| fatal(&WireError::MissingKey))
    }
}

/// The simple and extended query handlers of one connection.
pub struct LazySession {
    slot: Arc<SessionSlot>,
    parser: Arc<LazyParser>,
}

impl LazySession {
    pub fn new(slot: Arc<SessionSlot>) -> Self {
        LazySession { parser: Arc::new(LazyParser { slot: Arc::clone(&slot) }), slot }
    }
}

#[async_trait]
impl SimpleQueryHandler for LazySession {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let named = name_registers(query);
        SimpleQueryHandler::do_query(self.slot.service()?.as_ref(), client, named.as_deref().unwrap_or(query)).await
    }
}

#[async_trait]
impl ExtendedQueryHandler for LazySession {
    type Statement = Statement;
    type QueryParser = LazyParser;

    fn query_parser(&self) -> Arc<LazyParser> {
        Arc::clone(&self.parser)
    }

    async fn do_query<C>(&self, client: &mut C, portal: &Portal<Statement>, max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        ExtendedQueryHandler::do_query(self.slot.service()?.as_ref(), client, portal, max_rows).await
    }
}

/// The extended protocol's parser, `datafusion-postgres`' once the session exists.
pub struct LazyParser {
    slot: Arc<SessionSlot>,
}

#[async_trait]
impl QueryParser for LazyParser {
    type Statement = Statement;

    async fn parse_sql<C>(&self, client: &C, sql: &str, types: &[Option<Type>]) -> PgWireResult<Option<Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let named = name_registers(sql);
        self.slot.service()?.query_parser().parse_sql(client, named.as_deref().unwrap_or(sql), types).await
    }

    fn get_parameter_types(&self, stmt: &Statement) -> PgWireResult<Vec<Type>> {
        self.slot.service()?.query_parser().get_parameter_types(stmt)
    }

    fn get_result_schema(&self, stmt: &Statement, column_format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        self.slot.service()?.query_parser().get_result_schema(stmt, column_format)
    }
}
