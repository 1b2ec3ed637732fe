//! Savepoints (`SAVEPOINT`, `RELEASE [SAVEPOINT]`, `ROLLBACK TO [SAVEPOINT]`), which
//! psycopg sends for a nested transaction (SQLAlchemy's `begin_nested`, psycopg's own
//! type probes inside a transaction) and `datafusion-postgres` does not know.
//!
//! Every session is read-only, so a savepoint has nothing to undo; what it keeps is
//! PostgreSQL's bookkeeping, which clients rely on: the names (an unknown one is an
//! error), savepoints only inside a transaction block, and `ROLLBACK TO` leaving a failed
//! transaction usable again. That last one is a transaction status only the protocol
//! handler sets, so the connection's handler calls [`Savepoints::recovers`] before it
//! runs a statement ([`super::lazy`]).

use std::sync::Mutex;

use datafusion::sql::sqlparser::ast::{Ident, Statement};
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::pgwire::api::results::{Response, Tag};
use datafusion_postgres::pgwire::error::{PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::response::TransactionStatus;

use super::hooks::{sql_error as error, Answer};

/// A connection's savepoints, oldest first.
#[derive(Default)]
pub struct Savepoints {
    names: Mutex<Vec<String>>,
}

/// A savepoint's name as PostgreSQL compares it (unquoted names fold to lower case).
fn name_of(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

impl Savepoints {
    fn names(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `statement` rolls back to a savepoint this connection holds: the handler
    /// then runs it as in a working transaction, and it leaves the transaction working.
    pub fn recovers(&self, statement: &Statement) -> bool {
        match statement {
            Statement::Rollback { savepoint: Some(name), .. } => self.names().contains(&name_of(name)),
            _ => false,
        }
    }

    /// The answer to a savepoint statement, or `None` for any other; `status` is the
    /// transaction's.
    fn answer(&self, statement: &Statement, status: TransactionStatus) -> Option<PgWireResult<Response>> {
        let outside = || error("25P01", format!("{} can only be used in transaction blocks", verb(statement)));
        match statement {
            Statement::Savepoint { name } => Some(match status {
                TransactionStatus::Idle => Err(outside()),
                TransactionStatus::Error => Err(aborted()),
                TransactionStatus::Transaction => {
                    self.names().push(name_of(name));
                    Ok(Response::Execution(Tag::new("SAVEPOINT")))
                }
            }),
            Statement::ReleaseSavepoint { name } | Statement::Rollback { savepoint: Some(name), .. } => {
                if status == TransactionStatus::Idle {
                    return Some(Err(outside()));
                }
                let release = matches!(statement, Statement::ReleaseSavepoint { .. });
                if release && status == TransactionStatus::Error {
                    return Some(Err(aborted()));
                }
                let wanted = name_of(name);
                let mut names = self.names();
                // The latest of that name, as PostgreSQL finds it.
                let Some(at) = names.iter().rposition(|n| *n == wanted) else {
                    return Some(Err(error("3B001", format!("savepoint \"{wanted}\" does not exist"))));
                };
                // RELEASE drops it and the later ones; ROLLBACK TO keeps it.
                names.truncate(if release { at } else { at + 1 });
                Some(Ok(Response::Execution(Tag::new(if release { "RELEASE" } else { "ROLLBACK" }))))
            }
            Statement::Commit { .. } | Statement::Rollback { savepoint: None, .. } => {
                self.names().clear();
                None
            }
            _ => None,
        }
    }
}

fn aborted() -> PgWireError {
    error("25P02", "current transaction is aborted, commands ignored until end of transaction block")
}

fn verb(statement: &Statement) -> &'static str {
    match statement {
        Statement::Savepoint { .. } => "SAVEPOINT",
        Statement::ReleaseSavepoint { .. } => "RELEASE SAVEPOINT",
        _ => "ROLLBACK TO SAVEPOINT",
    }
}

impl Answer for Savepoints {
    fn answer(&self, statement: &Statement, client: &mut dyn HookClient) -> Option<PgWireResult<Response>> {
        Savepoints::answer(self, statement, client.transaction_status())
    }

    fn returns_no_rows(&self, statement: &Statement) -> bool {
        matches!(
            statement,
            Statement::Savepoint { .. }
                | Statement::ReleaseSavepoint { .. }
                | Statement::Rollback { savepoint: Some(_), .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn statement(sql: &str) -> Statement {
        Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap().remove(0)
    }

    fn tag(r: Option<PgWireResult<Response>>) -> String {
        match r {
            Some(Ok(Response::Execution(t))) => format!("{t:?}"),
            Some(Err(PgWireError::UserError(e))) => format!("ERROR {} {}", e.code, e.message),
            other => panic!("unexpected {:?}", other.map(|r| r.is_ok())),
        }
    }

    #[test]
    fn savepoints_keep_postgresql_bookkeeping() {
        let s = Savepoints::default();
        let t = TransactionStatus::Transaction;
        assert!(tag(s.answer(&statement("SAVEPOINT a"), TransactionStatus::Idle)).contains("25P01"));
        assert!(tag(s.answer(&statement("SAVEPOINT a"), t)).contains("SAVEPOINT"));
        assert!(tag(s.answer(&statement("SAVEPOINT \"_pg3_1\""), t)).contains("SAVEPOINT"));
        assert!(tag(s.answer(&statement("ROLLBACK TO SAVEPOINT b"), t)).contains("3B001"));
        assert!(s.recovers(&statement("ROLLBACK TO \"_pg3_1\"")));
        assert!(!s.recovers(&statement("ROLLBACK TO \"_PG3_1\"")), "quoted names keep their case");
        assert!(tag(s.answer(&statement("ROLLBACK TO \"_pg3_1\""), TransactionStatus::Error)).contains("ROLLBACK"));
        assert!(tag(s.answer(&statement("RELEASE SAVEPOINT A"), t)).contains("RELEASE"), "unquoted names fold");
        assert!(!s.recovers(&statement("ROLLBACK TO \"_pg3_1\"")), "released with the earlier one");
        assert!(s.answer(&statement("SELECT 1"), t).is_none());
        s.answer(&statement("SAVEPOINT c"), t);
        assert!(s.answer(&statement("COMMIT"), t).is_none(), "the transaction hook answers COMMIT");
        assert!(!s.recovers(&statement("ROLLBACK TO c")), "a transaction's end forgets its savepoints");
    }
}
