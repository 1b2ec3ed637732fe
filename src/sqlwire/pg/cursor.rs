//! SQL cursors (`DECLARE ... CURSOR FOR`, `FETCH`, `CLOSE`), as server-side cursors use
//! them: psycopg's named cursors, SQLAlchemy's `stream_results`, pandas' `chunksize`.
//!
//! Each describes what it returns, as PostgreSQL's do: `DECLARE` nothing (NoData), the
//! cursor's portal (which psycopg describes by the cursor's name) and each `FETCH` the
//! query's columns. `datafusion-postgres`' own cursors describe 0 columns and then send
//! rows, which psycopg's C implementation answers with a crash. The query takes the
//! statement's parameters (`DECLARE c CURSOR FOR SELECT ... WHERE x = $1`), runs as a
//! stream (a `FETCH` computes only the rows it returns, so a million-row cursor holds one
//! batch at a time) and its rows are encoded at each `FETCH` in the format that `FETCH`
//! asks for (text or binary). Cursors not declared `WITH HOLD` close at the end of their
//! transaction. Only forward fetches exist (`NO SCROLL`, PostgreSQL's default for such a
//! query too); `FETCH BACKWARD`, `PRIOR`, `ABSOLUTE` ... are refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{DFSchema, ParamValues};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::{EmptyRelation, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{CloseCursor, Declare, DeclareType, FetchDirection, Statement, Value};
use datafusion_postgres::arrow_pg::datatypes::{arrow_schema_to_pg_fields, encode_recordbatch};
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::pgwire::api::portal::{Format, Portal};
use datafusion_postgres::pgwire::api::results::{QueryResponse, Response, Tag};
use datafusion_postgres::pgwire::api::stmt::StoredStatement;
use datafusion_postgres::pgwire::api::store::PortalStore;
use datafusion_postgres::pgwire::api::ClientInfo;
use datafusion_postgres::pgwire::error::{PgWireError, PgWireResult};
use datafusion_postgres::pgwire::types::format::FormatOptions;
use datafusion_postgres::QueryHook;
use futures::StreamExt;

use crate::sqlwire::catalog_probes::{CursorList, CursorRow};
use crate::sqlwire::error::WireError;

use super::hooks::{sql_error as error, Stored};
use crate::sqlwire::guard;

/// One open cursor: its query's rows, pulled as `FETCH`es ask.
struct Cursor {
    statement: String,
    binary: bool,
    schema: SchemaRef,
    rows: SendableRecordBatchStream,
    /// What the last `FETCH` pulled and did not return.
    pending: Option<RecordBatch>,
    hold: bool,
}

/// A connection's open cursors, by name.
#[derive(Default)]
pub struct Cursors {
    open: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Cursor>>>>,
}

/// How many rows a `FETCH` asks for (`None`: all that remain).
fn fetch_count(direction: &FetchDirection) -> PgWireResult<Option<usize>> {
    let number = |v: &Value| match v {
        Value::Number(n, _) => n.parse::<usize>().map_err(|_| error("22023", format!("invalid FETCH count {n}"))),
        other => Err(error("22023", format!("invalid FETCH count {other}"))),
    };
    match direction {
        FetchDirection::Next | FetchDirection::Forward { limit: None } => Ok(Some(1)),
        FetchDirection::Forward { limit: Some(v) } | FetchDirection::Count { limit: v } => number(v).map(Some),
        FetchDirection::ForwardAll | FetchDirection::All => Ok(None),
        _ => Err(error("55000", "cursor can only scan forward; declare it SCROLL to make it scan backward")),
    }
}

/// An engine error as the client's ERROR (ours, such as a limit, with its own SQLSTATE).
fn engine(e: datafusion::error::DataFusionError) -> PgWireError {
    super::hooks::pg_error(&WireError::from_engine(e))
}

/// The plan a statement about cursor `name` is described by: no rows, the cursor's
/// columns.
fn described_by(schema: Option<SchemaRef>) -> PgWireResult<LogicalPlan> {
    let schema = match schema {
        Some(s) => DFSchema::try_from(s.as_ref().clone()).map_err(engine)?,
        None => DFSchema::empty(),
    };
    Ok(LogicalPlan::EmptyRelation(EmptyRelation { produce_one_row: false, schema: Arc::new(schema) }))
}

impl Cursors {
    fn get(&self, name: &str) -> Option<Arc<tokio::sync::Mutex<Cursor>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
    }

    /// The columns of cursor `name`, if it is open.
    fn schema(&self, name: &str) -> Option<SchemaRef> {
        let cursor = self.get(name)?;
        let schema = cursor.try_lock().ok().map(|c| Arc::clone(&c.schema));
        schema
    }

    /// `DECLARE`: plans the query (checked read-only, as every statement is), binds
    /// `params` and starts it; registers a portal of the cursor's name that describes its
    /// columns.
    async fn declare(
        &self,
        declare: &Declare,
        params: &ParamValues,
        ctx: &SessionContext,
        portals: &dyn PortalStore<Statement = Stored>,
    ) -> PgWireResult<Response> {
        if declare.declare_type != Some(DeclareType::Cursor) {
            return Err(error("42601", "only DECLARE ... CURSOR FOR a query is supported"));
        }
        let (Some(name), Some(query)) = (declare.names.first(), declare.for_query.as_ref()) else {
            return Err(error("42601", "DECLARE CURSOR needs a name and a FOR query"));
        };
        if declare.scroll == Some(true) {
            return Err(error("0A000", "SCROLL cursors are not supported: declare it NO SCROLL and fetch forward"));
        }
        let name = name.value.clone();
        if self.get(&name).is_some() {
            return Err(error("42P03", format!("cursor \"{name}\" already exists")));
        }
        let statement = Statement::Query(query.clone());
        let plan = plan_query(ctx, &statement).await?;
        let plan = plan.replace_params_with_values(params).map_err(engine)?;
        let frame = ctx.execute_logical_plan(plan).await.map_err(engine)?;
        let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
        let rows = frame.execute_stream().await.map_err(engine)?;
        let described = (statement.to_string(), Some((statement, described_by(Some(Arc::clone(&schema)))?)));
        portals.put_portal(Arc::new(Portal::new_cursor(
            name.clone(),
            Arc::new(StoredStatement::new(name.clone(), described, vec![])),
        )));
        let cursor = Cursor {
            statement: format!("DECLARE {name} CURSOR FOR {query}"),
            binary: declare.binary == Some(true),
            schema,
            rows,
            pending: None,
            hold: declare.hold == Some(true),
        };
        self.open.lock().unwrap_or_else(|p| p.into_inner()).insert(name, Arc::new(tokio::sync::Mutex::new(cursor)));
        Ok(Response::Execution(Tag::new("DECLARE CURSOR")))
    }

    /// `FETCH`: up to `count` rows (all that remain for `None`) of cursor `name`, encoded in
    /// `format`.
    pub async fn fetch(
        &self,
        name: &str,
        count: Option<usize>,
        format: &Format,
        options: Arc<FormatOptions>,
    ) -> PgWireResult<Response> {
        let cursor = self.get(name).ok_or_else(|| error("34000", format!("cursor \"{name}\" does not exist")))?;
        let mut cursor = cursor.lock().await;
        let mut batches = Vec::new();
        let mut wanted = count.unwrap_or(usize::MAX);
        while wanted > 0 {
            let batch = match cursor.pending.take() {
                Some(b) => b,
                None => match cursor.rows.next().await {
                    Some(b) => b.map_err(engine)?,
                    None => break,
                },
            };
            if batch.num_rows() > wanted {
                cursor.pending = Some(batch.slice(wanted, batch.num_rows() - wanted));
                batches.push(batch.slice(0, wanted));
                wanted = 0;
            } else {
                wanted -= batch.num_rows();
                batches.push(batch);
            }
        }
        let fields = Arc::new(arrow_schema_to_pg_fields(&cursor.schema, format, Some(options))?);
        let rows: Vec<_> = batches.into_iter().flat_map(|b| encode_recordbatch(Arc::clone(&fields), b)).collect();
        let mut response = QueryResponse::new(fields, futures::stream::iter(rows));
        response.set_command_tag("FETCH");
        Ok(Response::Query(response))
    }

    /// `CLOSE name` or `CLOSE ALL`.
    fn close(&self, cursor: &CloseCursor, portals: &dyn PortalStore<Statement = Stored>) -> Response {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let names: Vec<String> = match cursor {
            CloseCursor::All => open.keys().cloned().collect(),
            CloseCursor::Specific { name } => vec![name.value.clone()],
        };
        for name in names {
            if open.remove(&name).is_some() {
                portals.rm_portal(&name);
            }
        }
        Response::Execution(Tag::new("CLOSE CURSOR"))
    }

    /// The end of a transaction: its cursors (those not `WITH HOLD`) close.
    fn end_transaction(&self, portals: &dyn PortalStore<Statement = Stored>) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let ended: Vec<String> = open
            .iter()
            .filter(|(_, c)| c.try_lock().map(|c| !c.hold).unwrap_or(true))
            .map(|(n, _)| n.clone())
            .collect();
        for name in ended {
            open.remove(&name);
            portals.rm_portal(&name);
        }
    }
}

impl CursorList for Cursors {
    fn cursors(&self) -> Vec<CursorRow> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.iter()
            .filter_map(|(name, c)| {
                let c = c.try_lock().ok()?;
                Some(CursorRow {
                    name: name.clone(),
                    statement: c.statement.clone(),
                    is_holdable: c.hold,
                    is_binary: c.binary,
                    is_scrollable: false,
                })
            })
            .collect()
    }
}

/// The plan of a cursor's query, checked read-only.
async fn plan_query(ctx: &SessionContext, statement: &Statement) -> PgWireResult<LogicalPlan> {
    let plan =
        ctx.state().statement_to_plan(DfStatement::Statement(Box::new(statement.clone()))).await.map_err(engine)?;
    guard::check_plan(&plan).map_err(|e| super::hooks::pg_error(&e))?;
    Ok(plan)
}

/// The cursor `FETCH` statement names and how many rows it asks for, if it is one.
pub fn as_fetch(statement: &Statement) -> Option<PgWireResult<(String, Option<usize>)>> {
    match statement {
        Statement::Fetch { name, direction, .. } => Some(fetch_count(direction).map(|n| (name.value.clone(), n))),
        _ => None,
    }
}

/// The hook answering cursor statements (in place of `datafusion-postgres`' own); the
/// extended protocol's `FETCH` is answered by the connection's handler, which knows the
/// format the client asks for ([`super::lazy`]).
pub struct CursorHook {
    pub cursors: Arc<Cursors>,
}

#[async_trait]
impl QueryHook for CursorHook {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        ctx: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        self.answer(statement, &ParamValues::List(vec![]), ctx, client).await
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        ctx: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        match statement {
            // The query's plan: its parameters are the statement's (`$1` ...); the
            // connection's parser describes `DECLARE` itself as returning nothing.
            Statement::Declare { stmts } => {
                let query = stmts.first().and_then(|d| d.for_query.as_ref())?;
                Some(plan_query(ctx, &Statement::Query(query.clone())).await)
            }
            Statement::Fetch { name, .. } => Some(described_by(self.cursors.schema(&name.value))),
            Statement::Close { .. } => Some(described_by(None)),
            _ => None,
        }
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _plan: &LogicalPlan,
        params: &ParamValues,
        ctx: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        self.answer(statement, params, ctx, client).await
    }
}

impl CursorHook {
    async fn answer(
        &self,
        statement: &Statement,
        params: &ParamValues,
        ctx: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        match statement {
            Statement::Declare { stmts } => {
                for declare in stmts {
                    if let Err(e) = self.cursors.declare(declare, params, ctx, client.portal_store()).await {
                        return Some(Err(e));
                    }
                }
                Some(Ok(Response::Execution(Tag::new("DECLARE CURSOR"))))
            }
            Statement::Fetch { .. } => {
                let (name, count) = match as_fetch(statement)? {
                    Ok(f) => f,
                    Err(e) => return Some(Err(e)),
                };
                let options = Arc::new(FormatOptions::from_client_metadata(client.metadata()));
                Some(self.cursors.fetch(&name, count, &Format::UnifiedText, options).await)
            }
            Statement::Close { cursor } => Some(Ok(self.cursors.close(cursor, client.portal_store()))),
            Statement::Commit { .. } | Statement::Rollback { savepoint: None, .. } => {
                self.cursors.end_transaction(client.portal_store());
                None
            }
            _ => None,
        }
    }
}
