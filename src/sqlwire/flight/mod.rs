//! Arrow Flight SQL (`wxlake serve --flight-addr`), on arrow-flight's `FlightSqlService`:
//! statements, prepared statements with parameters, and the metadata calls ADBC, JDBC and
//! DBeaver send on connect (GetCatalogs, GetDbSchemas, GetTables with schemas,
//! GetTableTypes, GetSqlInfo). Results stream batch by batch from DataFusion's stream to
//! the client, never collected; view types are sent as their plain forms ([`convert`]).
//!
//! Auth: every call carries the API key, as `Authorization: Bearer <key>`, or Basic auth
//! with the key as the password (any user name) on the Handshake, which answers with the
//! Bearer header the client then sends. A statement's ticket carries its SQL, so any
//! endpoint can run it with the key of the request that fetches it.
//!
//! A query counts against the key's rate limits where it runs, at DoGet: GetFlightInfo
//! only plans it, and a ticket fetched again runs (and counts) again. Prepared statements
//! are kept per key, bounded in number and age ([`prepared`]).

pub mod convert;
pub mod keys;
pub mod placeholders;
pub mod prepared;

use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult,
    Any, CommandGetCatalogs, CommandGetCrossReference, CommandGetDbSchemas, CommandGetExportedKeys,
    CommandGetImportedKeys, CommandGetPrimaryKeys, CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables,
    CommandPreparedStatementQuery, CommandStatementQuery, DoPutPreparedStatementResult, ProstMessageExt, SqlInfo,
    TicketStatementQuery,
};
use arrow_flight::{
    Action, FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse, IpcMessage, SchemaAsIpc,
    Ticket,
};
use base64::Engine;
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::ipc::writer::IpcWriteOptions;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::dialect::{dialect_from_str, GenericDialect};
use futures::{Stream, StreamExt, TryStreamExt};
use prost::Message;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status, Streaming};

use super::access::{admit_query, authorize};
use super::bounded::CancelSignal;
use super::error::WireError;
use super::guard;
use super::session::WireEngine;
use convert::{client_schema, parameter_schema, parameter_values, status, to_client};
use prepared::{Prepared, PreparedStatements};

/// The Flight SQL service over a [`WireEngine`].
#[derive(Clone)]
pub struct FlightSql {
    engine: Arc<WireEngine>,
    prepared: Arc<PreparedStatements>,
}

/// The key of a request: the Bearer token, or the password of Basic auth.
fn secret(metadata: &MetadataMap) -> Option<String> {
    let value = metadata.get("authorization")?.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once([' ', '\t'])?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(rest.to_string());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD.decode(rest).ok()?;
        let text = String::from_utf8(decoded).ok()?;
        return text.split_once(':').map(|(_, pass)| pass.to_string());
    }
    None
}

type DoGetStream = Pin<Box<dyn Stream<Item = Result<arrow_flight::FlightData, Status>> + Send + 'static>>;

impl FlightSql {
    pub fn new(engine: Arc<WireEngine>) -> Self {
        FlightSql { engine, prepared: Arc::default() }
    }

    /// The caller's key id, if the request's key may use SQL (not counted).
    fn caller(&self, metadata: &MetadataMap) -> Result<(String, String), Status> {
        let key = secret(metadata);
        let record = authorize(&self.engine.state.access, key.as_deref()).map_err(status)?;
        Ok((record.id.clone(), key.unwrap_or_default()))
    }

    /// A session for the caller's query. With `run`, the query is about to run (DoGet)
    /// and counts against the key's rate limits; planning alone (GetFlightInfo, prepare)
    /// only checks the key.
    fn query_session(&self, metadata: &MetadataMap, run: bool) -> Result<(String, SessionContext), Status> {
        let key = secret(metadata);
        let record = match (run, key.as_deref()) {
            (true, Some(key)) => admit_query(&self.engine.state.access, key),
            (true, None) => Err(WireError::MissingKey),
            (false, key) => authorize(&self.engine.state.access, key),
        }
        .map_err(status)?;
        let id = Arc::new(OnceLock::new());
        let _ = id.set(record.id.clone());
        // No cancel request on Flight SQL: a client that gives up drops the stream.
        Ok((record.id.clone(), self.engine.query_session(id, CancelSignal::default()).map_err(status)?))
    }

    /// `sql` planned and checked read-only (its `?` placeholders numbered: [`placeholders`]).
    async fn plan(ctx: &SessionContext, sql: &str) -> Result<LogicalPlan, Status> {
        let state = ctx.state();
        let numbered = {
            let dialect = state.config().options().sql_parser.dialect.to_string();
            let dialect = dialect_from_str(&dialect).unwrap_or_else(|| Box::new(GenericDialect {}));
            placeholders::number(sql, dialect.as_ref()).map_err(status)?
        };
        let plan = state
            .create_logical_plan(numbered.as_deref().unwrap_or(sql))
            .await
            .map_err(|e| status(guard::explain_missing_function(WireError::from_engine(e))))?;
        guard::check_plan(&plan).map_err(status)?;
        Ok(plan)
    }

    /// Runs `plan`, streaming its batches in the client's types.
    async fn stream(ctx: &SessionContext, plan: LogicalPlan) -> Result<Response<DoGetStream>, Status> {
        let df = ctx.execute_logical_plan(plan).await.map_err(|e| status(WireError::from_engine(e)))?;
        let schema = client_schema(df.schema().as_arrow());
        let stream = df.execute_stream().await.map_err(|e| status(WireError::from_engine(e)))?;
        let out_schema = Arc::clone(&schema);
        let batches = stream.map(move |b| {
            b.map_err(|e| FlightError::Tonic(Box::new(status(WireError::from_engine(e)))))
                .and_then(|b| to_client(b, &out_schema).map_err(FlightError::Arrow))
        });
        let encoded = FlightDataEncoderBuilder::new().with_schema(schema).build(batches).map_err(Status::from);
        Ok(Response::new(Box::pin(encoded)))
    }

    fn info(schema: &Schema, ticket: Vec<u8>, descriptor: FlightDescriptor) -> Result<Response<FlightInfo>, Status> {
        let info = FlightInfo::new()
            .try_with_schema(schema)
            .map_err(|e| Status::internal(format!("encoding the result schema: {e}")))?
            .with_endpoint(FlightEndpoint::new().with_ticket(Ticket::new(ticket)))
            .with_descriptor(descriptor);
        Ok(Response::new(info))
    }

    fn batch_stream<E: Into<FlightError> + Send + 'static>(
        schema: SchemaRef,
        batch: Result<RecordBatch, E>,
    ) -> DoGetStream {
        let stream = FlightDataEncoderBuilder::new()
            .with_schema(schema)
            .build(futures::stream::once(async move { batch.map_err(Into::into) }))
            .map_err(Status::from);
        Box::pin(stream)
    }

    /// The empty answer of the foreign-key commands ([`keys`]), to a caller with a key.
    fn no_foreign_keys(&self, metadata: &MetadataMap) -> Result<Response<DoGetStream>, Status> {
        self.caller(metadata)?;
        let schema = keys::foreign_keys_schema();
        let none = keys::none(&schema);
        Ok(Response::new(Self::batch_stream::<FlightError>(schema, Ok(none))))
    }

    /// A prepared statement's plan with its bound parameters.
    async fn prepared_plan(ctx: &SessionContext, p: &Prepared) -> Result<LogicalPlan, Status> {
        let plan = Self::plan(ctx, &p.sql).await?;
        let values = match &p.params {
            Some(b) => parameter_values(b).map_err(status)?,
            None => ParamValues::List(Vec::new()),
        };
        plan.with_param_values(values).map_err(|e| status(WireError::from_engine(e)))
    }

    /// The tables of the engine's catalogs: (catalog, schema, table, its schema).
    async fn tables(&self) -> Vec<(String, String, String, SchemaRef)> {
        let ctx = self.engine.base();
        let mut out = Vec::new();
        for catalog in ctx.catalog_names() {
            let Some(c) = ctx.catalog(&catalog) else { continue };
            for schema in c.schema_names() {
                let Some(s) = c.schema(&schema) else { continue };
                for table in s.table_names() {
                    if let Ok(Some(t)) = s.table(&table).await {
                        out.push((catalog.clone(), schema.clone(), table, client_schema(&t.schema())));
                    }
                }
            }
        }
        out
    }
}

/// What GetSqlInfo answers.
fn sql_info() -> &'static SqlInfoData {
    static INFO: OnceLock<SqlInfoData> = OnceLock::new();
    INFO.get_or_init(|| {
        let mut b = SqlInfoDataBuilder::new();
        b.append(SqlInfo::FlightSqlServerName, "wxlake");
        b.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
        b.append(SqlInfo::FlightSqlServerArrowVersion, "1.3");
        b.append(SqlInfo::FlightSqlServerReadOnly, true);
        b.append(SqlInfo::FlightSqlServerSql, true);
        b.append(SqlInfo::FlightSqlServerSubstrait, false);
        b.append(SqlInfo::FlightSqlServerTransaction, 0i32);
        b.append(SqlInfo::FlightSqlServerCancel, false);
        b.build().unwrap_or_else(|_| SqlInfoDataBuilder::new().build().expect("an empty SqlInfoData builds"))
    })
}

#[tonic::async_trait]
impl FlightSqlService for FlightSql {
    type FlightService = FlightSql;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>>, Status> {
        let (_, key) = self.caller(request.metadata())?;
        let result = HandshakeResponse { protocol_version: 0, payload: Bytes::new() };
        let output: Pin<Box<dyn Stream<Item = _> + Send>> = Box::pin(futures::stream::iter(vec![Ok(result)]));
        let mut response = Response::new(output);
        let bearer = format!("Bearer {key}")
            .parse()
            .map_err(|_| Status::invalid_argument("the key is not a valid header value"))?;
        response.metadata_mut().insert("authorization", bearer);
        Ok(response)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let (_, ctx) = self.query_session(request.metadata(), false)?;
        let plan = Self::plan(&ctx, &query.query).await?;
        let schema = client_schema(plan.schema().as_arrow());
        let ticket = TicketStatementQuery { statement_handle: query.query.into_bytes().into() };
        Self::info(&schema, ticket.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        // Counted here, where it runs: a ticket fetched twice is two queries.
        let (_, ctx) = self.query_session(request.metadata(), true)?;
        let sql = String::from_utf8(ticket.statement_handle.to_vec())
            .map_err(|_| Status::invalid_argument("the ticket is not a statement of this server"))?;
        let plan = Self::plan(&ctx, &sql).await?;
        Self::stream(&ctx, plan).await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let (key_id, ctx) = self.query_session(request.metadata(), false)?;
        let plan = Self::plan(&ctx, &query.query).await?;
        let options = IpcWriteOptions::default();
        let ipc = |s: &Schema| -> Result<Bytes, Status> {
            let IpcMessage(bytes) = SchemaAsIpc::new(s, &options)
                .try_into()
                .map_err(|e: datafusion::arrow::error::ArrowError| Status::internal(e.to_string()))?;
            Ok(bytes)
        };
        let dataset_schema = ipc(&client_schema(plan.schema().as_arrow()))?;
        let parameter_schema = ipc(&parameter_schema(&plan).map_err(status)?)?;
        let handle = self.prepared.insert(&key_id, query.query);
        Ok(ActionCreatePreparedStatementResult { prepared_statement_handle: handle, dataset_schema, parameter_schema })
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let (key_id, _) = self.caller(request.metadata())?;
        let handle = query.prepared_statement_handle.clone();
        // The stream itself, not `into_inner`: that drops the peeked first message, which
        // carries the parameters' schema.
        self.prepared.get(&handle, &key_id)?;
        let flight_data = request.into_inner().map_err(|e| FlightError::Tonic(Box::new(e)));
        // At most two batches are read: a second one is already a refusal, and whatever
        // follows stays unread (each message is bounded by tonic's 4 MiB decoding limit, so
        // the parameters take at most twice that).
        let batches: Vec<RecordBatch> = FlightRecordBatchStream::new_from_flight_data(flight_data)
            .take(2)
            .try_collect()
            .await
            .map_err(|e| Status::invalid_argument(format!("reading the parameters: {e}")))?;
        let params = match batches.as_slice() {
            [] => None,
            [one] => Some(one.clone()),
            _ => {
                return Err(Status::invalid_argument(
                    "send one batch of parameter values (one row per execution): a second batch was sent",
                ));
            }
        };
        self.prepared.bind(&handle, &key_id, params)?;
        Ok(DoPutPreparedStatementResult { prepared_statement_handle: Some(handle) })
    }

    async fn get_flight_info_prepared_statement(
        &self,
        cmd: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let (key_id, ctx) = self.query_session(request.metadata(), false)?;
        let p = self.prepared.get(&cmd.prepared_statement_handle, &key_id)?;
        let plan = Self::prepared_plan(&ctx, &p).await?;
        let schema = client_schema(plan.schema().as_arrow());
        Self::info(&schema, cmd.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_prepared_statement(
        &self,
        cmd: CommandPreparedStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        let (key_id, ctx) = self.query_session(request.metadata(), true)?;
        let p = self.prepared.get(&cmd.prepared_statement_handle, &key_id)?;
        let plan = Self::prepared_plan(&ctx, &p).await?;
        Self::stream(&ctx, plan).await
    }

    async fn do_action_close_prepared_statement(
        &self,
        query: ActionClosePreparedStatementRequest,
        request: Request<Action>,
    ) -> Result<(), Status> {
        let (key_id, _) = self.caller(request.metadata())?;
        self.prepared.close(&query.prepared_statement_handle, &key_id);
        Ok(())
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        let schema = query.into_builder().schema();
        Self::info(&schema, query.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.caller(request.metadata())?;
        let mut b = query.into_builder();
        for c in self.engine.base().catalog_names() {
            b.append(c);
        }
        let schema = b.schema();
        Ok(Response::new(Self::batch_stream(schema, b.build())))
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        let schema = query.clone().into_builder().schema();
        Self::info(&schema, query.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.caller(request.metadata())?;
        let mut b = query.into_builder();
        let ctx = self.engine.base();
        for c in ctx.catalog_names() {
            if let Some(catalog) = ctx.catalog(&c) {
                for s in catalog.schema_names() {
                    b.append(&c, s);
                }
            }
        }
        let schema = b.schema();
        Ok(Response::new(Self::batch_stream(schema, b.build())))
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        let schema = query.clone().into_builder().schema();
        Self::info(&schema, query.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.caller(request.metadata())?;
        let mut b = query.into_builder();
        for (catalog, schema, table, table_schema) in self.tables().await {
            let kind = if schema == "public" { "TABLE" } else { "SYSTEM TABLE" };
            b.append(catalog, schema, table, kind, &table_schema).map_err(Status::from)?;
        }
        let schema = b.schema();
        Ok(Response::new(Self::batch_stream(schema, b.build())))
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        let schema = query.into_builder().schema();
        Self::info(&schema, query.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.caller(request.metadata())?;
        let mut b = query.into_builder();
        b.append("SYSTEM TABLE");
        b.append("TABLE");
        let schema = b.schema();
        Ok(Response::new(Self::batch_stream(schema, b.build())))
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        let schema = query.clone().into_builder(sql_info()).schema();
        Self::info(&schema, query.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.caller(request.metadata())?;
        let b = query.into_builder(sql_info());
        let schema = b.schema();
        Ok(Response::new(Self::batch_stream(schema, b.build())))
    }

    async fn get_flight_info_primary_keys(
        &self,
        query: CommandGetPrimaryKeys,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        Self::info(&keys::primary_keys_schema(), query.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_primary_keys(
        &self,
        _query: CommandGetPrimaryKeys,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.caller(request.metadata())?;
        let schema = keys::primary_keys_schema();
        let none = keys::none(&schema);
        Ok(Response::new(Self::batch_stream::<FlightError>(schema, Ok(none))))
    }

    async fn get_flight_info_imported_keys(
        &self,
        query: CommandGetImportedKeys,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        Self::info(&keys::foreign_keys_schema(), query.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_imported_keys(
        &self,
        _query: CommandGetImportedKeys,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.no_foreign_keys(request.metadata())
    }

    async fn get_flight_info_exported_keys(
        &self,
        query: CommandGetExportedKeys,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        Self::info(&keys::foreign_keys_schema(), query.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_exported_keys(
        &self,
        _query: CommandGetExportedKeys,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.no_foreign_keys(request.metadata())
    }

    async fn get_flight_info_cross_reference(
        &self,
        query: CommandGetCrossReference,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        Self::info(&keys::foreign_keys_schema(), query.as_any().encode_to_vec(), request.into_inner())
    }

    async fn do_get_cross_reference(
        &self,
        _query: CommandGetCrossReference,
        request: Request<Ticket>,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        self.no_foreign_keys(request.metadata())
    }

    async fn do_get_fallback(
        &self,
        _request: Request<Ticket>,
        message: Any,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        Err(Status::unimplemented(format!("this server does not serve {}", message.type_url)))
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}

/// Calls one Flight SQL connection may have in progress at once (more wait).
pub const CALLS_PER_CONNECTION: usize = 16;

/// Serves Flight SQL on `listener` until `shutdown` resolves (plain gRPC: give it a
/// loopback address, or put it behind a TLS proxy).
///
/// Bounded: at most [`super::QueryLimits::max_connections`] calls in progress at once over
/// all connections, and [`CALLS_PER_CONNECTION`] per connection; a call over either waits
/// for one to finish (a call is in progress until its response starts: a DoGet's rows
/// stream after that, bounded by the query caps instead). Every call checks its key before
/// it builds anything, so an unauthenticated caller costs no session.
pub async fn serve(
    listener: tokio::net::TcpListener,
    engine: Arc<WireEngine>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let max_calls = engine.limits().max_connections.max(1);
    tonic::transport::Server::builder()
        .concurrency_limit_per_connection(CALLS_PER_CONNECTION)
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(max_calls))
        .add_service(FlightServiceServer::new(FlightSql::new(engine)))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}
