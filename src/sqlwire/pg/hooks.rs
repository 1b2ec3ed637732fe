//! The statement check in front of `datafusion-postgres`: read-only, and each query counted
//! against its key. It runs first among the hooks, for the simple protocol (per
//! statement) and the extended one (at Parse: the check; at Execute: the count). On both
//! it also answers `COPY ... TO STDOUT` itself, and refuses every other COPY ([`copy`]).
//!
//! Why plan here: the library's simple path runs `SessionContext::sql`, which executes
//! DDL and `COPY` as it plans them, so a statement is planned and checked the way that path
//! will plan it ([`guard::check_plan`]) before the library sees it.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::pgwire::api::query::ExtendedQueryHandler;
use datafusion_postgres::pgwire::api::results::Response;
use datafusion_postgres::pgwire::api::ClientInfo;
use datafusion_postgres::pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use datafusion_postgres::QueryHook;

use crate::access::Access;
use crate::sqlwire::access::{admit_query, authorize};
use crate::sqlwire::error::WireError;
use crate::sqlwire::guard;

use super::copy;

/// The first hook of every connection.
pub struct GuardHook {
    pub access: Access,
    /// The connection's key (set at authentication).
    pub secret: Arc<OnceLock<String>>,
}

/// An error as the pgwire ERROR the client shows.
pub fn pg_error(e: &WireError) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new("ERROR".to_string(), e.sqlstate().to_string(), e.to_string())))
}

/// PostgreSQL's ERROR with SQLSTATE `code`, for what the statements this server answers
/// itself refuse (a cursor that does not exist, a savepoint outside a transaction ...).
pub fn sql_error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new("ERROR".to_string(), code.to_string(), message.into())))
}

/// A refusal as the FATAL error a client shows at connect (or before a session exists).
pub fn fatal(e: &WireError) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new("FATAL".to_string(), e.sqlstate().to_string(), e.to_string())))
}

/// What a statement, parsed and planned, is to `datafusion-postgres` (its portals and
/// prepared statements hold these).
pub type Stored = <datafusion_postgres::DfSessionService as ExtendedQueryHandler>::Statement;

/// A hook answering the statements it knows by itself, the same way on both protocols
/// ([`Answering`] makes it a [`QueryHook`]).
pub trait Answer: Send + Sync {
    /// The answer to `statement`, or `None` to leave it to the later hooks.
    fn answer(&self, statement: &Statement, client: &mut dyn HookClient) -> Option<PgWireResult<Response>>;

    /// Whether Parse describes `statement` as returning no rows (the library plans and
    /// describes the others).
    fn returns_no_rows(&self, statement: &Statement) -> bool;
}

impl<T: Answer> Answer for Arc<T> {
    fn answer(&self, statement: &Statement, client: &mut dyn HookClient) -> Option<PgWireResult<Response>> {
        self.as_ref().answer(statement, client)
    }

    fn returns_no_rows(&self, statement: &Statement) -> bool {
        self.as_ref().returns_no_rows(statement)
    }
}

/// An [`Answer`] as a hook.
pub struct Answering<T>(pub T);

#[async_trait]
impl<T: Answer> QueryHook for Answering<T> {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        _ctx: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        self.0.answer(statement, client)
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        _ctx: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        self.0.returns_no_rows(statement).then(|| Ok(no_rows()))
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _plan: &LogicalPlan,
        _params: &ParamValues,
        _ctx: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        self.0.answer(statement, client)
    }
}

/// The plan of a statement that returns no rows (a savepoint, `DEALLOCATE` ...): what
/// the extended protocol describes it by.
pub fn no_rows() -> LogicalPlan {
    LogicalPlan::EmptyRelation(datafusion::logical_expr::EmptyRelation {
        produce_one_row: false,
        schema: Arc::new(datafusion::common::DFSchema::empty()),
    })
}

/// Statements the later hooks answer without planning or changing anything: transaction
/// bracketing (clients send it; everything is read-only anyway) and cursors over queries.
fn passes_through(s: &Statement) -> bool {
    matches!(
        s,
        Statement::StartTransaction { .. }
            | Statement::Commit { .. }
            | Statement::Rollback { .. }
            | Statement::Savepoint { .. }
            | Statement::ReleaseSavepoint { .. }
            | Statement::Declare { .. }
            | Statement::Fetch { .. }
            | Statement::Close { .. }
            | Statement::Deallocate { .. }
            | Statement::Discard { .. }
            | Statement::ShowVariable { .. }
    )
}

/// Of the statements that pass through, those that run a query (a cursor's): `DECLARE`
/// counts as the query against the key's rate limits, each `FETCH` of its rows only checks
/// the key is still valid (a revoked key stops at its next `FETCH`; a result streamed in
/// a hundred fetches is one request, as it is without a cursor).
fn runs_a_query(s: &Statement) -> bool {
    matches!(s, Statement::Declare { .. } | Statement::Fetch { .. })
}

impl GuardHook {
    /// Admits `statement`: counted against the key, but a cursor's `FETCH`, which is only
    /// checked ([`runs_a_query`]).
    fn admit(&self, statement: &Statement) -> Result<(), WireError> {
        let secret = self.secret.get().ok_or(WireError::MissingKey)?;
        match statement {
            Statement::Fetch { .. } => authorize(&self.access, Some(secret)).map(drop),
            _ => admit_query(&self.access, secret).map(drop),
        }
    }

    /// The check of the simple path: plan the text as `SessionContext::sql` will.
    async fn check_text(&self, statement: &Statement, ctx: &SessionContext) -> Result<(), WireError> {
        if let Statement::Set(_) = statement {
            return set_allowed(statement);
        }
        let plan = ctx.state().create_logical_plan(&statement.to_string()).await;
        let plan = plan.map_err(|e| guard::explain_missing_function(WireError::Engine(e)))?;
        guard::check_plan(&plan)
    }

    /// The check of the extended path: plan the statement as the library's parser will.
    async fn check_statement(&self, statement: &Statement, ctx: &SessionContext) -> Result<(), WireError> {
        if let Statement::Set(_) = statement {
            return set_allowed(statement);
        }
        let plan = ctx.state().statement_to_plan(DfStatement::Statement(Box::new(statement.clone()))).await;
        match plan {
            Ok(plan) => guard::check_plan(&plan),
            Err(e) => match guard::explain_missing_function(WireError::Engine(e)) {
                refused @ WireError::ReadOnly(_) => Err(refused),
                // The library reports its own planning error.
                _ => Ok(()),
            },
        }
    }
}

/// `SET` of a client setting passes (the set/show hook keeps it per connection); of
/// anything else, not ([`guard::check_set`], on the parsed name).
fn set_allowed(statement: &Statement) -> Result<(), WireError> {
    guard::check_set(statement)
}

#[async_trait]
impl QueryHook for GuardHook {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        ctx: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        if passes_through(statement) {
            if !runs_a_query(statement) {
                return None;
            }
            return self.admit(statement).err().map(|e| Err(pg_error(&e)));
        }
        if let Err(e) = self.admit(statement) {
            return Some(Err(pg_error(&e)));
        }
        if let Some(copy) = copy::copy_to_stdout(statement) {
            let answered = match copy {
                Ok((sql, format)) => copy::copy_out(ctx, &sql, format).await,
                Err(e) => Err(e),
            };
            return Some(answered.map_err(|e| pg_error(&e)));
        }
        if let Some(e) = copy::refusal(statement) {
            return Some(Err(pg_error(&e)));
        }
        self.check_text(statement, ctx).await.err().map(|e| Err(pg_error(&e)))
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        ctx: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        if passes_through(statement) {
            return None;
        }
        if let Some(copy) = copy::copy_to_stdout(statement) {
            let checked = match copy {
                Ok((sql, _)) => copy::checked_plan(ctx, &sql).await.map(|_| copy::described()),
                Err(e) => Err(e),
            };
            return Some(checked.map_err(|e| pg_error(&e)));
        }
        if let Some(e) = copy::refusal(statement) {
            return Some(Err(pg_error(&e)));
        }
        self.check_statement(statement, ctx).await.err().map(|e| Err(pg_error(&e)))
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _plan: &LogicalPlan,
        _params: &ParamValues,
        ctx: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        if passes_through(statement) && !runs_a_query(statement) {
            return None;
        }
        if let Err(e) = self.admit(statement) {
            return Some(Err(pg_error(&e)));
        }
        // Checked at Parse; copied here.
        let (sql, format) = copy::copy_to_stdout(statement)?.ok()?;
        Some(copy::copy_out(ctx, &sql, format).await.map_err(|e| pg_error(&e)))
    }
}
