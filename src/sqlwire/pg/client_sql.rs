//! The catalog queries of known clients, rewritten before `datafusion-postgres` parses
//! them into forms DataFusion plans and that answer the same (on both protocols, applied by
//! the connection's handlers, [`super::lazy`]):
//!
//! - Grafana's search-path lookup (the subquery over `current_setting('search_path')`),
//!   which the library replaces by `''` so that every table is listed schema-qualified and
//!   a column lookup by bare table name finds nothing: here it becomes the session's search
//!   path, `'public'`;
//! - `generate_subscripts(a, d)` (SQLAlchemy's key and index reflection), a set-returning
//!   function DataFusion lacks, as `unnest(generate_series(1, array_length(a, d)))`, which
//!   zips with the `unnest(a)` beside it as PostgreSQL's set-returning functions do;
//! - a scalar subquery of one unaggregated expression (pgjdbc's `getTypeInfo`:
//!   `(SELECT c.relkind = 'c' FROM pg_class c WHERE c.oid = t.typrelid)`), which
//!   DataFusion refuses when correlated: its expression wrapped in `max()`, which is the
//!   same value for the zero or one row such a subquery may return;
//!
//! - `'pg_catalog.array_in'::regproc` (pgjdbc's type lookups, which every interval or
//!   untyped value triggers) as the text `'array_in'`, which is how the library's
//!   `pg_type` names its functions;
//! - `(expr).field` (pgjdbc's `(_pg_expandarray(i.indkey)).n`), which DataFusion's planner
//!   refuses, as `get_field(expr, 'field')`.
//!
//! - `pg_table_is_visible(c.oid)` as the relation's namespace being on the search path
//!   (`public`, `pg_catalog`);
//! - `LIKE p ESCAPE 'c'` with another escape than the backslash, which DataFusion refuses:
//!   `LIKE like_escape(p, 'c')` ([`like_escape`]).
//!
//! Each applies only where its pattern is; other text passes unchanged (and unparsed when
//! no pattern word is in it).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    visit_expressions, AccessExpr, DataType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    ObjectName, ObjectNamePart, SelectItem, SetExpr, Statement, Value, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser as SqlParser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::sqlwire::like_escape;

/// Grafana's search-path subquery (`postgresMetaQuery.ts`), as tokens it is matched by.
const GRAFANA_SEARCH_PATH: &str = r#"SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
        FROM
            generate_series(
                array_lower(string_to_array(current_setting('search_path'),','),1),
                array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s"#;

/// The schemas a session's unqualified names resolve in.
const SEARCH_PATH: &str = "'public'";

/// `sql` with the AST rewrites applied (every item of the module docs but Grafana's
/// search path, [`search_path`]), or `None` when none applies.
pub fn rewrite(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    let maybe = ["generate_subscripts", "(select", "( select", "regproc", ").", "escape", "pg_table_is_visible"]
        .iter()
        .any(|w| lower.contains(w));
    if maybe {
        statements(sql)
    } else {
        None
    }
}

/// Tokens without whitespace or comments.
fn significant(sql: &str) -> Option<Vec<Token>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    Some(tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_))).collect())
}

/// Grafana's search-path subquery replaced by [`SEARCH_PATH`] (token by token, ahead of
/// the library's own replacement of it by `''`), or `None` when `sql` has none.
pub fn search_path(sql: &str) -> Option<String> {
    if !sql.to_ascii_lowercase().contains("current_setting('search_path')") {
        return None;
    }
    let pattern = significant(GRAFANA_SEARCH_PATH)?;
    let tokens = significant(sql)?;
    let at = tokens.windows(pattern.len()).position(|w| w == pattern.as_slice())?;
    let mut out: Vec<String> = tokens[..at].iter().map(ToString::to_string).collect();
    out.push(SEARCH_PATH.to_string());
    out.extend(tokens[at + pattern.len()..].iter().map(ToString::to_string));
    Some(out.join(" "))
}

/// The AST rewrites, or `None` when none applied (or the text does not parse here: the
/// library then reports it).
fn statements(sql: &str) -> Option<String> {
    let mut statements = SqlParser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    let mut visitor = Rewrites { changed: false };
    for s in &mut statements {
        let _ = s.visit(&mut visitor);
    }
    visitor.changed.then(|| statements.iter().map(Statement::to_string).collect::<Vec<_>>().join("; "))
}

struct Rewrites {
    changed: bool,
}

fn function(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(datafusion::sql::sqlparser::ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: args.into_iter().map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e))).collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// The name of the function `expr` calls, lowercased.
fn function_name(expr: &Expr) -> Option<String> {
    let Expr::Function(f) = expr else { return None };
    Some(f.name.0.last()?.as_ident()?.value.to_ascii_lowercase())
}

/// Whether `expr` calls an aggregate anywhere.
fn aggregates(expr: &Expr) -> bool {
    visit_expressions(expr, |e| match function_name(e) {
        Some(name) if AGGREGATES.contains(&name.as_str()) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The name of a function call, lowercased, and its plain arguments.
fn call(expr: &Expr) -> Option<(String, Vec<Expr>)> {
    let name = function_name(expr)?;
    let Expr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return Some((name, vec![])) };
    let args = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((name, args))
}

/// `pg_table_is_visible(c.oid)` as PostgreSQL decides it for a session's search path:
/// the relation `c` is in `public` or `pg_catalog` (`datafusion-pg-catalog`'s function is
/// true for every relation, so SQLAlchemy's `get_view_names()` listed
/// `information_schema`'s views as the user's).
fn visible_namespace(oid: &Expr) -> Option<Expr> {
    let relation = match oid {
        Expr::CompoundIdentifier(parts) if parts.last()?.value.eq_ignore_ascii_case("oid") => {
            parts[..parts.len() - 1].iter().map(|p| p.to_string()).collect::<Vec<_>>().join(".")
        }
        _ => return None,
    };
    let sql = format!(
        "{relation}.relnamespace IN (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname IN ('public', 'pg_catalog'))"
    );
    SqlParser::new(&PostgreSqlDialect {}).try_with_sql(&sql).ok()?.parse_expr().ok()
}

/// The function a `'name'::regproc` literal names, without its schema: the library's
/// `pg_type` (`typinput`, `typoutput` ...) and `pg_proc` name functions by such text, and
/// its own rewrite of the cast looks the qualified name up and fails.
fn regproc_name(expr: &Expr) -> Option<String> {
    let Expr::Cast { expr: inner, data_type: DataType::Custom(ty, _), .. } = expr else { return None };
    let ty = ty.0.last()?.as_ident()?.value.to_ascii_lowercase();
    if ty != "regproc" && ty != "regprocedure" {
        return None;
    }
    let Expr::Value(v) = inner.as_ref() else { return None };
    let Value::SingleQuotedString(name) = &v.value else { return None };
    let name = name.split('(').next().unwrap_or(name);
    Some(name.strip_prefix("pg_catalog.").unwrap_or(name).to_string())
}

const AGGREGATES: [&str; 10] =
    ["count", "sum", "min", "max", "avg", "bool_or", "bool_and", "every", "array_agg", "string_agg"];

impl VisitorMut for Rewrites {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Like { pattern, escape_char, .. } | Expr::ILike { pattern, escape_char, .. } = expr {
            let other = escape_char.as_ref().and_then(|e| match &e.value {
                Value::SingleQuotedString(c) if c != "\\" => Some(c.clone()),
                _ => None,
            });
            if let Some(escape) = other {
                let quoted = Expr::Value(Value::SingleQuotedString(escape).into());
                **pattern = function(like_escape::NAME, vec![pattern.as_ref().clone(), quoted]);
                *escape_char = None;
                self.changed = true;
            }
            return ControlFlow::Continue(());
        }
        if let Some(name) = regproc_name(expr) {
            *expr = Expr::Value(Value::SingleQuotedString(name).into());
            self.changed = true;
            return ControlFlow::Continue(());
        }
        if let Expr::CompoundFieldAccess { root, access_chain } = expr {
            let fields: Option<Vec<String>> = access_chain
                .iter()
                .map(|a| match a {
                    AccessExpr::Dot(Expr::Identifier(id)) => Some(id.value.clone()),
                    _ => None,
                })
                .collect();
            if let Some(fields) = fields {
                let field = |e: Expr, name: String| {
                    function("get_field", vec![e, Expr::Value(Value::SingleQuotedString(name).into())])
                };
                *expr = fields.into_iter().fold(root.as_ref().clone(), field);
                self.changed = true;
            }
            return ControlFlow::Continue(());
        }
        if let Some((name, args)) = call(expr) {
            if name == "pg_table_is_visible" {
                if let Some(visible) = args.first().and_then(visible_namespace) {
                    *expr = visible;
                    self.changed = true;
                }
                return ControlFlow::Continue(());
            }
            if name == "generate_subscripts" && args.len() == 2 {
                let length = function("array_length", args.clone());
                let series =
                    function("generate_series", vec![Expr::Value(Value::Number("1".into(), false).into()), length]);
                *expr = function("unnest", vec![series]);
                self.changed = true;
            }
            return ControlFlow::Continue(());
        }
        if let Expr::Subquery(query) = expr {
            let SetExpr::Select(select) = query.body.as_mut() else { return ControlFlow::Continue(()) };
            let plain = query.limit_clause.is_none()
                && matches!(&select.group_by, datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(g, _) if g.is_empty())
                && select.having.is_none()
                && !select.from.is_empty();
            let [SelectItem::UnnamedExpr(only) | SelectItem::ExprWithAlias { expr: only, .. }] =
                select.projection.as_mut_slice()
            else {
                return ControlFlow::Continue(());
            };
            if plain && !aggregates(only) {
                *only = function("max", vec![only.clone()]);
                self.changed = true;
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grafanas_search_path_becomes_the_sessions() {
        let sql = format!("SELECT quote_ident(table_name) FROM information_schema.tables WHERE quote_ident(table_schema) IN ({GRAFANA_SEARCH_PATH})");
        let out = search_path(&sql).unwrap();
        assert!(out.contains("IN ( 'public' )"), "{out}");
        assert!(!out.contains("current_setting"), "{out}");
    }

    #[test]
    fn subscripts_unnest_and_scalar_subqueries_aggregate() {
        let out =
            rewrite("SELECT unnest(i.indkey) AS k, generate_subscripts(i.indkey, 1) AS o FROM pg_index i").unwrap();
        assert!(out.contains("unnest(generate_series(1, array_length(i.indkey, 1))) AS o"), "{out}");
        let out = rewrite(
            "SELECT t.typname FROM pg_type t WHERE t.typrelid = 0 OR (SELECT c.relkind = 'c' FROM pg_class c WHERE c.oid = t.typrelid)",
        )
        .unwrap();
        assert!(out.contains("(SELECT max(c.relkind = 'c') FROM pg_class c"), "{out}");
        assert_eq!(rewrite("SELECT (SELECT count(*) FROM t) AS n"), None, "already aggregated");
        assert_eq!(rewrite("SELECT (SELECT 1 + max(a) FROM t) AS n"), None, "already aggregated, inside");
        assert_eq!(rewrite("SELECT (SELECT 1) AS n"), None, "no FROM: one row");
    }

    #[test]
    fn regproc_literals_and_field_access() {
        let out =
            rewrite("SELECT typinput='pg_catalog.array_in'::regproc AS is_array FROM pg_type WHERE oid = $1").unwrap();
        assert!(out.contains("typinput = 'array_in' AS is_array"), "{out}");
        let out = rewrite("SELECT (information_schema._pg_expandarray(i.indkey)).n AS k, (r.keys).x FROM pg_index i")
            .unwrap();
        assert!(out.contains("get_field((information_schema._pg_expandarray(i.indkey)), 'n') AS k"), "{out}");
        assert!(out.contains("get_field((r.keys), 'x')"), "{out}");
    }

    #[test]
    fn visibility_is_the_search_path() {
        let out =
            rewrite("SELECT c.relname FROM pg_catalog.pg_class c WHERE pg_catalog.pg_table_is_visible(c.oid)").unwrap();
        assert!(
            out.contains("WHERE c.relnamespace IN (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname IN ('public', 'pg_catalog'))"),
            "{out}"
        );
        assert_eq!(rewrite("SELECT pg_table_is_visible(16384)"), None, "an oid value: left to the function");
    }

    #[test]
    fn other_escape_characters_become_the_function() {
        let out = rewrite("SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg/_%' ESCAPE '/'").unwrap();
        assert!(out.contains("nspname NOT LIKE like_escape('pg/_%', '/')"), "{out}");
        assert_eq!(rewrite("SELECT 1 FROM t WHERE a LIKE 'x\\_%' ESCAPE '\\'"), None, "the backslash stays");
    }
}
