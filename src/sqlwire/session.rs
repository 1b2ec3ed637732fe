//! The sessions analyst queries run in over the wire.
//!
//! [`WireEngine::new`] derives one base session from the server's (built by
//! [`crate::jobs::analyst_session`], the session `wxlake sql` uses, so the engine settings
//! and tables are the same): its own catalog list holding the lake's schema overlaid with
//! the live tables ([`super::live_tables`]), named [`DATABASE`] and the session's default
//! catalog, PostgreSQL's `pg_catalog` (what psql, DBeaver and Grafana read on connect), `information_schema`, and only the table functions that
//! read nothing ([`super::guard`]). The REST API's session is left as it was.
//!
//! [`WireEngine::query_session`] gives each connection (pgwire: its queries run one after
//! another) or query (Flight SQL) a session of its own over the same tables: its own memory
//! pool of the per-query size, and the [`BoundedPlanner`] with the caller's key.

use std::sync::{Arc, OnceLock};

use datafusion::catalog::{CatalogProvider, CatalogProviderList, MemoryCatalogProvider, MemoryCatalogProviderList};
use datafusion::execution::memory_pool::{GreedyMemoryPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::setup_pg_catalog;

use super::admission::{Admission, QueryLimits};
use super::bounded::{BoundedPlanner, CancelSignal};
use super::error::WireError;
use super::executor::SqlRuntime;
use super::guard;
use super::live_tables::live_tables;
use super::overlay::OverlaySchema;
use super::WireState;
use super::{catalog_probes, information_schema, like_escape, server_settings};

/// The database analysts connect to (`dbname=wxlake`): the wire sessions' one catalog, so
/// `current_database()`, `pg_database` and Flight SQL's GetCatalogs name it, and
/// `wxlake.public.observations` is a table. `wxlake sql` and the jobs keep DataFusion's
/// default name (`datafusion`).
pub const DATABASE: &str = "wxlake";

/// The shared part of every wire session, and the caps they run under.
pub struct WireEngine {
    base: SessionContext,
    /// `pg_class` oids of the default schema's tables, by name (stable while the server
    /// runs: the catalog assigns each once).
    table_oids: std::sync::Mutex<std::collections::HashMap<String, i32>>,
    admission: Arc<Admission>,
    runtime: SqlRuntime,
    pub state: WireState,
}

impl std::fmt::Debug for WireEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireEngine").field("limits", &self.admission.limits()).finish_non_exhaustive()
    }
}

impl WireEngine {
    /// The base session over the server's tables and live state (see the module docs).
    pub async fn new(state: impl Into<WireState>, limits: QueryLimits) -> Result<Self, WireError> {
        let state = state.into();
        let server = &state.live.ctx;
        let options = server.state().config().options().catalog.clone();
        let lake_schema = server
            .catalog(&options.default_catalog)
            .and_then(|c| c.schema(&options.default_schema))
            .ok_or_else(|| WireError::ReadOnly("the server's session has no default schema".into()))?;
        let catalog = MemoryCatalogProvider::new();
        catalog
            .register_schema(&options.default_schema, Arc::new(OverlaySchema::new(lake_schema, live_tables(&state))))?;
        let catalogs: Arc<dyn CatalogProviderList> = Arc::new(MemoryCatalogProviderList::new());
        catalogs.register_catalog(DATABASE.to_string(), Arc::new(catalog));
        // Unqualified names resolve in the renamed catalog; and the builder must not create
        // an empty default catalog of that name over it (it does when asked to and the
        // server's default catalog, `datafusion`, is not the one named here).
        let config = server
            .state()
            .config()
            .clone()
            .with_default_catalog_and_schema(DATABASE, &options.default_schema)
            .with_create_default_catalog_and_schema(false)
            // Ours, registered below: PostgreSQL's type names (`information_schema`).
            .with_information_schema(false);
        let builder = SessionStateBuilder::new_from_existing(server.state())
            .with_config(config)
            .with_catalog_list(Arc::clone(&catalogs));
        let base = SessionContext::new_with_state(builder.build());
        setup_pg_catalog(&base, DATABASE, EmptyContextProvider).map_err(|e| WireError::Engine(*e))?;
        let pg_settings = server_settings::register(&base)?;
        base.register_udf(like_escape::udf());
        let wxlake =
            base.catalog(DATABASE).ok_or_else(|| WireError::ReadOnly("the wire session has no catalog".into()))?;
        wxlake.register_schema("information_schema", information_schema::schema(catalogs))?;
        if let Some(pg_catalog) = wxlake.schema("pg_catalog") {
            let mut own = catalog_probes::register(&base, &pg_catalog).await?;
            own.insert("pg_settings".to_string(), pg_settings);
            wxlake.register_schema("pg_catalog", Arc::new(OverlaySchema::new(pg_catalog, own)))?;
        }
        {
            let state_ref = base.state_ref();
            let mut state = state_ref.write();
            let removed = guard::check_table_functions(&mut state);
            if !removed.is_empty() {
                tracing::warn!(?removed, "table functions withheld from analyst SQL");
            }
        }
        let runtime = SqlRuntime::new().map_err(|e| WireError::Engine(e.into()))?;
        Ok(WireEngine {
            base,
            table_oids: Default::default(),
            admission: Arc::new(Admission::new(limits)),
            runtime,
            state,
        })
    }

    /// The base session (its catalogs, for the protocols' metadata calls).
    pub fn base(&self) -> &SessionContext {
        &self.base
    }

    /// The `pg_class` oid of the default schema's table `table`, as the catalog lists it.
    pub async fn table_oid(&self, table: &str) -> Option<i32> {
        if let Some(oid) = self.table_oids.lock().unwrap_or_else(|p| p.into_inner()).get(table) {
            return Some(*oid);
        }
        let sql = format!(
            "SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON c.relnamespace = n.oid \
             WHERE n.nspname = 'public' AND c.relname = '{}'",
            table.replace('\'', "''")
        );
        let batches = self.base.sql(&sql).await.ok()?.collect().await.ok()?;
        let column = batches.first()?.column(0);
        let oid = datafusion::common::cast::as_int32_array(column).ok().filter(|a| !a.is_empty())?.value(0);
        self.table_oids.lock().unwrap_or_else(|p| p.into_inner()).insert(table.to_string(), oid);
        Some(oid)
    }

    pub fn limits(&self) -> QueryLimits {
        self.admission.limits()
    }

    /// The name of the threads queries compute on ([`SqlRuntime`]).
    pub fn sql_threads(&self) -> &str {
        self.runtime.thread_name()
    }

    /// A session for the queries of the key `key_id` holds, once it holds one, stopped by
    /// `cancel` (see the module docs).
    pub fn query_session(
        &self,
        key_id: Arc<OnceLock<String>>,
        cancel: CancelSignal,
    ) -> Result<SessionContext, WireError> {
        let state = self.base.state();
        let pool = TrackConsumersPool::new(
            GreedyMemoryPool::new(self.admission.limits().memory_bytes),
            std::num::NonZeroUsize::new(3).unwrap_or(std::num::NonZeroUsize::MIN),
        );
        let runtime =
            RuntimeEnvBuilder::from_runtime_env(state.runtime_env()).with_memory_pool(Arc::new(pool)).build_arc()?;
        let planner =
            BoundedPlanner { admission: Arc::clone(&self.admission), key_id, cancel, runtime: self.runtime.handle() };
        let state = SessionStateBuilder::new_from_existing(state)
            .with_runtime_env(runtime)
            .with_query_planner(Arc::new(planner))
            .build();
        Ok(SessionContext::new_with_state(state))
    }
}
