//! PostgreSQL's special registers (`current_user`, `session_user`, `user`,
//! `current_catalog`) named as PostgreSQL names them.
//!
//! `datafusion-postgres` rewrites `current_user` into `session_user` (and
//! `current_catalog` into `current_database()`) before DataFusion plans, so
//! `SELECT current_user, session_user` would select `session_user` twice: a duplicate
//! column name, which DataFusion refuses. PostgreSQL names such a column after the register
//! itself; [`name_registers`] gives each unaliased register in a select list that name as
//! its alias, before the library sees the text; the connection's handlers
//! (`super::lazy`) apply it on both protocols.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArguments, Ident, Query, SelectItem, SetExpr, Statement, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser as SqlParser;

/// The registers PostgreSQL lets a query name without parentheses (as sqlparser parses
/// them: a function without an argument list).
const REGISTERS: [&str; 4] = ["current_user", "session_user", "user", "current_catalog"];

/// `sql` with each unaliased register of a select list aliased by its own name, or `None`
/// when there is none (or the text does not parse here: the library reports that).
pub fn name_registers(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    if !REGISTERS.iter().any(|r| lower.contains(r)) {
        return None;
    }
    let mut statements = SqlParser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    let mut visitor = AliasRegisters { changed: false };
    for s in &mut statements {
        let _ = s.visit(&mut visitor);
    }
    visitor.changed.then(|| statements.iter().map(Statement::to_string).collect::<Vec<_>>().join("; "))
}

struct AliasRegisters {
    changed: bool,
}

impl AliasRegisters {
    fn alias_in(&mut self, body: &mut SetExpr) {
        match body {
            SetExpr::Select(select) => {
                for item in &mut select.projection {
                    if let SelectItem::UnnamedExpr(expr) = item {
                        if let Some(name) = register(expr) {
                            *item =
                                SelectItem::ExprWithAlias { expr: expr.clone(), alias: Ident::with_quote('"', name) };
                            self.changed = true;
                        }
                    }
                }
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.alias_in(left);
                self.alias_in(right);
            }
            _ => {}
        }
    }
}

/// The register `expr` is, lowercased.
fn register(expr: &Expr) -> Option<String> {
    let Expr::Function(f) = expr else { return None };
    if !matches!(f.args, FunctionArguments::None) || f.name.0.len() != 1 {
        return None;
    }
    let name = f.name.0[0].as_ident()?.value.to_ascii_lowercase();
    REGISTERS.contains(&name.as_str()).then_some(name)
}

impl VisitorMut for AliasRegisters {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<Self::Break> {
        self.alias_in(&mut query.body);
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_get_their_own_names() {
        assert_eq!(
            name_registers("SELECT current_user, session_user").as_deref(),
            Some("SELECT current_user AS \"current_user\", session_user AS \"session_user\"")
        );
        assert_eq!(
            name_registers("select 1 union all select user").as_deref(),
            Some("SELECT 1 UNION ALL SELECT user AS \"user\"")
        );
        assert_eq!(
            name_registers("SELECT current_catalog, (SELECT CURRENT_USER)").as_deref(),
            Some("SELECT current_catalog AS \"current_catalog\", (SELECT CURRENT_USER AS \"current_user\")")
        );
        for unchanged in [
            "SELECT current_user AS me",
            "SELECT 1",
            "SELECT usename FROM pg_user",
            "SELECT current_user = 'x'",
            "not sql, current_user",
        ] {
            assert_eq!(name_registers(unchanged), None, "{unchanged}");
        }
    }
}
