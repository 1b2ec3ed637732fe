//! `DEALLOCATE [PREPARE] name | ALL` and `DISCARD ALL` over the protocol's prepared
//! statements, as PostgreSQL answers them: psycopg prepares a query it runs often
//! (`_pg3_0` ...) and sends `DEALLOCATE ALL` after every rollback, SQLAlchemy's pool sends
//! `DISCARD ALL`-like resets. DataFusion's own `DEALLOCATE` knows only SQL `PREPARE`d
//! statements and fails on these.
//!
//! The protocol's statement store can remove a statement by name but not list them, so
//! the connection's handler records each name a Parse stores ([`Prepared::parsed`]).

use std::collections::BTreeSet;
use std::sync::Mutex;

use datafusion::sql::sqlparser::ast::{DiscardObject, Statement};
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::pgwire::api::results::{Response, Tag};
use datafusion_postgres::pgwire::api::store::PortalStore;
use datafusion_postgres::pgwire::error::PgWireResult;

use super::hooks::{sql_error, Answer, Stored};

/// The names of a connection's prepared statements.
#[derive(Default)]
pub struct Prepared {
    names: Mutex<BTreeSet<String>>,
}

impl Prepared {
    fn names(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A Parse stored the statement `name` (the unnamed one is not deallocated by name).
    pub fn parsed(&self, name: Option<&str>) {
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            self.names().insert(name.to_string());
        }
    }

    /// The answer to `DEALLOCATE` or `DISCARD ALL`, or `None` for any other statement.
    fn answer(
        &self,
        statement: &Statement,
        store: &dyn PortalStore<Statement = Stored>,
    ) -> Option<PgWireResult<Response>> {
        match statement {
            Statement::Deallocate { name, .. }
                if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") =>
            {
                self.drop_all(store);
                Some(Ok(Response::Execution(Tag::new("DEALLOCATE ALL"))))
            }
            Statement::Deallocate { name, .. } => {
                if !self.names().remove(&name.value) {
                    return Some(Err(sql_error(
                        "26000",
                        format!("prepared statement \"{}\" does not exist", name.value),
                    )));
                }
                store.rm_statement(&name.value);
                Some(Ok(Response::Execution(Tag::new("DEALLOCATE"))))
            }
            Statement::Discard { object_type: DiscardObject::ALL | DiscardObject::PLANS } => {
                self.drop_all(store);
                let all = matches!(statement, Statement::Discard { object_type: DiscardObject::ALL });
                Some(Ok(Response::Execution(Tag::new(if all { "DISCARD ALL" } else { "DISCARD PLANS" }))))
            }
            _ => None,
        }
    }

    fn drop_all(&self, store: &dyn PortalStore<Statement = Stored>) {
        for name in std::mem::take(&mut *self.names()) {
            store.rm_statement(&name);
        }
    }
}

impl Answer for Prepared {
    fn answer(&self, statement: &Statement, client: &mut dyn HookClient) -> Option<PgWireResult<Response>> {
        Prepared::answer(self, statement, client.portal_store())
    }

    fn returns_no_rows(&self, statement: &Statement) -> bool {
        matches!(statement, Statement::Deallocate { .. } | Statement::Discard { .. })
    }
}
