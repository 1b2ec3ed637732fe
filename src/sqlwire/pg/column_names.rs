//! A result's columns named as PostgreSQL names them, where DataFusion names them after
//! the whole expression: `SELECT count(*), avg(temperature), 1` gives the columns `count`,
//! `avg` and `?column?` (DataFusion: `count(*)`, `avg(observations.temperature)`,
//! `Int64(1)`), so pandas' frames, Grafana's series and a BI tool's fields get the names
//! they would get from PostgreSQL.
//!
//! Each unaliased item of the outermost select list gets an alias (both sides of a set
//! operation, whose result takes the first side's names):
//! - a function call: the function's name (`count`, `date_trunc`);
//! - PostgreSQL's special registers (`current_user`, `session_user`, `user`,
//!   `current_catalog`, which sqlparser reads as calls without arguments): their own name.
//!   `datafusion-postgres` rewrites `current_user` into `session_user`, so without the alias
//!   `SELECT current_user, session_user` would name two columns `session_user`;
//! - `CASE`: `case`; `EXTRACT`: `extract`; `EXISTS`: `exists`;
//! - a cast of a column: nothing (DataFusion names it after the column, as PostgreSQL);
//!   of anything else: the type's name (`'1'::int` is `int4`);
//! - a literal, an operator or anything else: `?column?`.
//!
//! Registers are named in every select list (a subquery's too), since the duplicate would
//! fail there as well. One result here cannot repeat a name, which PostgreSQL's can: a name
//! already taken gets `_2`, `_3` ... (`SELECT count(*), count(x)`: `count`, `count_2`).
//! Column references, `*`, and items with an alias keep their names.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    DataType, Expr, FunctionArguments, Ident, Query, SelectItem, SetExpr, Statement, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser as SqlParser;

/// The registers PostgreSQL lets a query name without parentheses (as sqlparser parses
/// them: a function without an argument list).
const REGISTERS: [&str; 4] = ["current_user", "session_user", "user", "current_catalog"];

/// `sql` with its result columns named (see the module docs), or `None` when nothing
/// changes (or the text does not parse here: the library reports that).
pub fn name_columns(sql: &str) -> Option<String> {
    let mut statements = SqlParser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    let mut visitor = NameRegisters { changed: false };
    let mut changed = false;
    for s in &mut statements {
        let _ = s.visit(&mut visitor);
        if let Statement::Query(q) = s {
            changed |= name_outermost(&mut q.body);
        }
    }
    (changed || visitor.changed).then(|| statements.iter().map(Statement::to_string).collect::<Vec<_>>().join("; "))
}

/// The name PostgreSQL gives an unaliased select item, or `None` when DataFusion's is the
/// same (a column) or the item is left alone.
fn postgres_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Subquery(_) => None,
        Expr::Function(f) => Some(f.name.0.last()?.as_ident()?.value.to_ascii_lowercase()),
        Expr::Case { .. } => Some("case".into()),
        Expr::Extract { .. } => Some("extract".into()),
        Expr::Exists { .. } => Some("exists".into()),
        Expr::Nested(inner) => postgres_name(inner),
        Expr::Cast { expr, data_type, .. } => match expr.as_ref() {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => None,
            _ => Some(type_name(data_type)),
        },
        _ => Some("?column?".into()),
    }
}

/// A cast's column name in PostgreSQL: the type's internal name for the common ones.
fn type_name(t: &DataType) -> String {
    let written = t.to_string().to_ascii_lowercase();
    let name = match written.as_str() {
        "int" | "integer" | "int4" => "int4",
        "bigint" | "int8" => "int8",
        "smallint" | "int2" => "int2",
        "real" | "float4" => "float4",
        "double precision" | "float8" | "double" => "float8",
        "boolean" | "bool" => "bool",
        "text" => "text",
        "date" => "date",
        "timestamp" | "timestamp without time zone" => "timestamp",
        "timestamptz" | "timestamp with time zone" => "timestamptz",
        "interval" => "interval",
        other if other.starts_with("numeric") || other.starts_with("decimal") => "numeric",
        other if other.starts_with("varchar") || other.starts_with("character varying") => "varchar",
        _ => "?column?",
    };
    name.to_string()
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

/// Names the outermost select lists' unaliased items; whether any changed.
fn name_outermost(body: &mut SetExpr) -> bool {
    match body {
        SetExpr::Select(select) => {
            // Names already taken: aliases and plain columns.
            let mut taken: HashSet<String> = select
                .projection
                .iter()
                .filter_map(|item| match item {
                    SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
                    SelectItem::UnnamedExpr(Expr::Identifier(i)) => Some(i.value.clone()),
                    SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => parts.last().map(|i| i.value.clone()),
                    _ => None,
                })
                .collect();
            let mut changed = false;
            for item in &mut select.projection {
                let SelectItem::UnnamedExpr(expr) = item else { continue };
                let Some(name) = register(expr).or_else(|| postgres_name(expr)) else { continue };
                let mut unique = name.clone();
                let mut n = 1;
                while !taken.insert(unique.clone()) {
                    n += 1;
                    unique = format!("{name}_{n}");
                }
                *item = SelectItem::ExprWithAlias { expr: expr.clone(), alias: Ident::with_quote('"', unique) };
                changed = true;
            }
            changed
        }
        SetExpr::SetOperation { left, right, .. } => name_outermost(left) | name_outermost(right),
        SetExpr::Query(q) => name_outermost(&mut q.body),
        _ => false,
    }
}

/// Registers in every select list, subqueries' too.
struct NameRegisters {
    changed: bool,
}

impl NameRegisters {
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

impl VisitorMut for NameRegisters {
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
            name_columns("SELECT current_user, session_user").as_deref(),
            Some("SELECT current_user AS \"current_user\", session_user AS \"session_user\"")
        );
        assert_eq!(
            name_columns("select 1 union all select user").as_deref(),
            Some("SELECT 1 AS \"?column?\" UNION ALL SELECT user AS \"user\"")
        );
        assert_eq!(
            name_columns("SELECT current_catalog, (SELECT CURRENT_USER)").as_deref(),
            Some("SELECT current_catalog AS \"current_catalog\", (SELECT CURRENT_USER AS \"current_user\")")
        );
        for unchanged in
            ["SELECT current_user AS me", "SELECT usename FROM pg_user", "not sql, current_user", "SELECT *"]
        {
            assert_eq!(name_columns(unchanged), None, "{unchanged}");
        }
    }

    #[test]
    fn expressions_get_postgresqls_names_once_each() {
        assert_eq!(
            name_columns("SELECT count(*), avg(o.temperature), count(x), station_code, 1, a + b FROM o").as_deref(),
            Some(
                "SELECT count(*) AS \"count\", avg(o.temperature) AS \"avg\", count(x) AS \"count_2\", station_code, \
                 1 AS \"?column?\", a + b AS \"?column?_2\" FROM o"
            )
        );
        assert_eq!(
            name_columns("SELECT '1'::int, a::text, CASE WHEN a THEN 1 END, EXTRACT(year FROM t) FROM x").as_deref(),
            Some(
                "SELECT '1'::INT AS \"int4\", a::TEXT, CASE WHEN a THEN 1 END AS \"case\", EXTRACT(YEAR FROM t) AS \
                 \"extract\" FROM x"
            )
        );
        // A column already named `count` keeps it; the call gets the next.
        assert_eq!(
            name_columns("SELECT count, count(*) FROM t").as_deref(),
            Some("SELECT count, count(*) AS \"count_2\" FROM t")
        );
        // Only the outermost list: a subquery's names are its own.
        assert_eq!(name_columns("SELECT n FROM (SELECT count(*) AS n FROM t) s").as_deref(), None);
    }
}
