//! A connection's query handlers, whose DataFusion session is built only once the client
//! has authenticated ([`SessionSlot::open`], called by [`super::startup`]): until then a
//! connection costs a few handles, not a session (its copy of the engine's state, its
//! runtime environment and memory pool). pgwire takes a connection's handlers before the
//! first message, so these stand in for `datafusion-postgres`' and pass every call on,
//! but for what only the protocol handler can do: a `FETCH` in the format the client asks
//! for ([`super::cursor`]), `DECLARE` described as returning nothing, and a
//! `ROLLBACK TO SAVEPOINT` that makes a failed transaction work again
//! ([`super::savepoints`]).

use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use datafusion::sql::sqlparser::ast::Statement as SqlStatement;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser as SqlParser;
use datafusion_postgres::datafusion_pg_catalog::sql::PostgresCompatibilityParser;
use datafusion_postgres::pgwire::api::portal::{Format, Portal};
use datafusion_postgres::pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use datafusion_postgres::pgwire::api::results::{FieldInfo, Response};
use datafusion_postgres::pgwire::api::stmt::QueryParser;
use datafusion_postgres::pgwire::api::stmt::StoredStatement;
use datafusion_postgres::pgwire::api::store::PortalStore;
use datafusion_postgres::pgwire::api::{ClientInfo, ClientPortalStore, Type, DEFAULT_NAME};
use datafusion_postgres::pgwire::error::{PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::extendedquery::{Execute, Parse, ParseComplete};
use datafusion_postgres::pgwire::messages::response::TransactionStatus;
use datafusion_postgres::pgwire::messages::simplequery::Query;
use datafusion_postgres::pgwire::messages::PgWireBackendMessage;
use datafusion_postgres::pgwire::types::format::FormatOptions;
use datafusion_postgres::{DfSessionService, QueryHook};
use futures::Sink;
use futures::SinkExt;

use super::client_sql;
use super::column_names::name_columns;
use super::cursor::{as_fetch, CursorHook, Cursors};
use super::deallocate::Prepared;
use super::describe::Origins;
use super::hooks::{self, fatal, Answering};
use super::parameters;
use super::savepoints::Savepoints;
use super::show::ShowSetting;
use crate::sqlwire::access::authorize;
use crate::sqlwire::bounded::CancelSignal;
use crate::sqlwire::catalog_probes::{CursorList, OpenCursors};
use crate::sqlwire::error::WireError;
use crate::sqlwire::session::WireEngine;

use super::hooks::Stored as Statement;

/// A connection's session, once it has one.
pub struct SessionSlot {
    engine: Arc<WireEngine>,
    key_id: Arc<OnceLock<String>>,
    secret: Arc<OnceLock<String>>,
    signal: CancelSignal,
    service: OnceLock<Arc<DfSessionService>>,
    cursors: Arc<Cursors>,
    savepoints: Arc<Savepoints>,
    prepared: Arc<Prepared>,
    origins: Arc<Origins>,
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
        SessionSlot {
            engine,
            key_id,
            secret,
            signal,
            service: OnceLock::new(),
            cursors: Arc::default(),
            savepoints: Arc::default(),
            prepared: Arc::default(),
            origins: Arc::default(),
        }
    }

    /// Builds the connection's session (once).
    pub fn open(&self) -> Result<(), WireError> {
        if self.service.get().is_some() {
            return Ok(());
        }
        let ctx = self.engine.query_session(Arc::clone(&self.key_id), self.signal.clone())?;
        let cursors: Arc<dyn CursorList> = Arc::clone(&self.cursors) as Arc<dyn CursorList>;
        ctx.state_ref().write().config_mut().set_extension(Arc::new(OpenCursors(cursors)));
        let ctx = Arc::new(ctx);
        let guard = hooks::GuardHook { access: self.engine.state.access.clone(), secret: Arc::clone(&self.secret) };
        // Ours first: each answers what the library's would answer wrongly or not at all.
        let hooks: Vec<Arc<dyn QueryHook>> = vec![
            Arc::new(guard),
            Arc::new(Answering(Arc::clone(&self.savepoints))),
            Arc::new(CursorHook { cursors: Arc::clone(&self.cursors) }),
            Arc::new(Answering(Arc::clone(&self.prepared))),
            Arc::new(Answering(ShowSetting)),
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

/// `sql` as the library should see it: known clients' catalog queries rewritten
/// ([`client_sql`]) and the result's columns named as PostgreSQL names them
/// ([`name_columns`]); `None` when unchanged, or when the library substitutes the text
/// itself (its own fixes for psql's and DBeaver's catalog queries match the text token for
/// token, which a rewritten text no longer does).
fn client_text(sql: &str) -> Option<String> {
    let searched = client_sql::search_path(sql);
    let text = searched.as_deref().unwrap_or(sql);
    let rewritten = client_sql::rewrite(text);
    match name_columns(rewritten.as_deref().unwrap_or(text)).or(rewritten) {
        Some(changed) if !library_substitutes(text) => Some(changed),
        _ => searched,
    }
}

/// Whether `datafusion-postgres`' parser replaces part of `sql` before it plans: its
/// parse differs from a plain parse with its rewrite rules applied.
fn library_substitutes(sql: &str) -> bool {
    static LIBRARY: OnceLock<PostgresCompatibilityParser> = OnceLock::new();
    let library = LIBRARY.get_or_init(PostgresCompatibilityParser::new);
    let (Ok(theirs), Ok(plain)) = (library.parse(sql), SqlParser::parse_sql(&PostgreSqlDialect {}, sql)) else {
        return false;
    };
    theirs != plain.into_iter().map(|s| library.rewrite(s)).collect::<Vec<_>>()
}

/// The one statement `sql` is, as the library parses it.
fn single_statement(sql: &str) -> Option<SqlStatement> {
    let mut statements = SqlParser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    (statements.len() == 1).then(|| statements.remove(0))
}

impl LazySession {
    /// Before `statement` runs: a `ROLLBACK TO` a held savepoint runs as in a working
    /// transaction (the protocol handler keeps the status it starts a statement with).
    fn before<C: ClientInfo>(&self, client: &mut C, statement: Option<&SqlStatement>) {
        if client.transaction_status() == TransactionStatus::Error
            && statement.is_some_and(|s| self.slot.savepoints.recovers(s))
        {
            client.set_transaction_status(TransactionStatus::Transaction);
        }
    }
}

#[async_trait]
impl SimpleQueryHandler for LazySession {
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if client.transaction_status() == TransactionStatus::Error {
            self.before(client, single_statement(&query.query).as_ref());
        }
        self._on_query(client, query).await
    }

    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let text = client_text(query);
        SimpleQueryHandler::do_query(self.slot.service()?.as_ref(), client, text.as_deref().unwrap_or(query)).await
    }
}

#[async_trait]
impl ExtendedQueryHandler for LazySession {
    type Statement = Statement;
    type QueryParser = LazyParser;

    fn query_parser(&self) -> Arc<LazyParser> {
        Arc::clone(&self.parser)
    }

    /// pgwire's own Parse, which also records the statement's name for `DEALLOCATE ALL`.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.clone().unwrap_or_else(|| DEFAULT_NAME.to_owned());
        match StoredStatement::parse(client, &message, self.query_parser()).await? {
            Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
            None => client.portal_store().put_empty_statement(&name),
        }
        self.slot.prepared.parsed(message.name.as_deref());
        client.send(PgWireBackendMessage::ParseComplete(ParseComplete::new())).await?;
        Ok(())
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if client.transaction_status() == TransactionStatus::Error {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            let portal = client.portal_store().get_portal(name).and_then(|e| e.value().cloned());
            let statement = portal.as_ref().and_then(|p| p.statement.statement.1.as_ref().map(|(s, _)| s.clone()));
            self.before(client, statement.as_ref());
        }
        self._on_execute(client, message).await
    }

    async fn do_query<C>(&self, client: &mut C, portal: &Portal<Statement>, max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let service = self.slot.service()?;
        // A FETCH's rows in the format its portal asks for (the hooks do not see it).
        if let Some((statement, _)) = &portal.statement.statement.1 {
            if let Some(fetch) = as_fetch(statement) {
                // As the guard checks a FETCH of the simple protocol: the key, uncounted.
                authorize(&self.slot.engine.state.access, self.slot.secret.get().map(String::as_str))
                    .map_err(|e| hooks::pg_error(&e))?;
                let (name, count) = fetch?;
                let options = Arc::new(FormatOptions::from_client_metadata(client.metadata()));
                return self.slot.cursors.fetch(&name, count, &portal.result_column_format, options).await;
            }
        }
        ExtendedQueryHandler::do_query(service.as_ref(), client, portal, max_rows).await
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
        let text = client_text(sql);
        let parsed =
            self.slot.service()?.query_parser().parse_sql(client, text.as_deref().unwrap_or(sql), types).await?;
        if let Some((sql, Some((SqlStatement::Query(_), plan)))) = &parsed {
            self.slot.origins.remember(&self.slot.engine, sql, plan).await;
        }
        Ok(parsed.map(|(sql, planned)| {
            (sql, planned.map(|(statement, plan)| (statement, parameters::every_parameter(plan))))
        }))
    }

    fn get_parameter_types(&self, stmt: &Statement) -> PgWireResult<Vec<Type>> {
        self.slot.service()?.query_parser().get_parameter_types(stmt)
    }

    fn get_result_schema(&self, stmt: &Statement, column_format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        // DECLARE's plan is its query's (for the parameters); it returns no rows.
        if let (_, Some((SqlStatement::Declare { .. }, _))) = stmt {
            return Ok(vec![]);
        }
        let fields = self.slot.service()?.query_parser().get_result_schema(stmt, column_format)?;
        Ok(match stmt {
            (sql, Some((_, plan))) => self.slot.origins.describe(sql, plan.schema().as_arrow(), fields),
            _ => fields,
        })
    }
}
