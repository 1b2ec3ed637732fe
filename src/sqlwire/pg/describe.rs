//! What a result's description says about each column beyond its name and type, as
//! PostgreSQL's RowDescription does: the table and column it comes from (table oid and
//! attribute number, which pgjdbc's `ResultSetMetaData.getTableName()`, `isNullable()`
//! and DBeaver's editors look up in `pg_class`/`pg_attribute`), and the type modifier of a
//! `numeric` (`row_key`, an unsigned 64-bit key that `bigint` cannot hold, is `numeric(20,0)`:
//! an integer with 20 digits to a client, not an unbounded decimal).
//!
//! The origins are found when a statement is parsed (finding a table's oid asks the
//! catalog, which a describe cannot wait for) and kept per connection by the statement's
//! text ([`Origins`]); the extended protocol's Describe applies them ([`super::lazy`]).

use std::collections::HashMap;
use std::sync::Mutex;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::TableReference;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion_postgres::pgwire::api::results::FieldInfo;
use datafusion_postgres::pgwire::api::Type;

use crate::sqlwire::session::WireEngine;

/// A column's origin: its table's oid and its attribute number.
pub type Origin = Option<(i32, i16)>;

/// How many statements' origins a connection keeps (a client preparing more statements
/// than this only loses the table names of the oldest).
const KEPT: usize = 512;

/// A connection's column origins, by statement text.
#[derive(Default)]
pub struct Origins {
    by_sql: Mutex<HashMap<String, Vec<Origin>>>,
}

impl Origins {
    /// Finds and keeps the origins of `plan`'s columns (parsed from `sql`).
    pub async fn remember(&self, engine: &WireEngine, sql: &str, plan: &LogicalPlan) {
        let found = origins(engine, plan).await;
        if found.iter().all(Option::is_none) {
            return;
        }
        let mut by_sql = self.by_sql.lock().unwrap_or_else(|p| p.into_inner());
        if by_sql.len() >= KEPT {
            by_sql.clear();
        }
        by_sql.insert(sql.to_string(), found);
    }

    /// `fields` (of a statement `sql` whose result schema is `schema`) with their origins
    /// and type modifiers.
    pub fn describe(&self, sql: &str, schema: &Schema, fields: Vec<FieldInfo>) -> Vec<FieldInfo> {
        let by_sql = self.by_sql.lock().unwrap_or_else(|p| p.into_inner());
        let origins = by_sql.get(sql);
        fields
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                let origin = origins.and_then(|o| o.get(i).copied().flatten());
                let modifier = schema.fields().get(i).and_then(|a| numeric_modifier(a.data_type()));
                let (table, column) = match origin {
                    Some((t, c)) => (Some(t), Some(c)),
                    None => (f.table_id(), f.column_id()),
                };
                let described = FieldInfo::new(f.name().to_string(), table, column, f.datatype().clone(), f.format())
                    .with_format_options(f.format_options().clone())
                    .with_type_size(f.type_size());
                match modifier {
                    Some(m) if *f.datatype() == Type::NUMERIC => described.with_type_modifier(m),
                    _ => described.with_type_modifier(f.type_modifier()),
                }
            })
            .collect()
    }
}

/// PostgreSQL's `numeric(p,s)` type modifier for an Arrow type sent as `numeric`.
fn numeric_modifier(t: &DataType) -> Option<i32> {
    let (precision, scale) = match t {
        DataType::UInt64 => (20, 0),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => (i32::from(*p), i32::from(*s)),
        _ => return None,
    };
    (scale >= 0).then_some(((precision << 16) | scale) + 4)
}

/// The table and column each output column of `plan` reads unchanged, when it reads a
/// table of the default schema.
async fn origins(engine: &WireEngine, plan: &LogicalPlan) -> Vec<Origin> {
    let mut tables = HashMap::new();
    scans(plan, &mut tables);
    let outputs = output_columns(plan);
    let mut found = Vec::with_capacity(outputs.len());
    for output in outputs {
        let origin = match output.and_then(|(relation, name)| Some((tables.get(&relation)?.clone(), name))) {
            Some(((table, schema), column)) => match schema.index_of(&column) {
                Ok(index) => engine.table_oid(&table).await.map(|oid| (oid, i16::try_from(index + 1).unwrap_or(0))),
                Err(_) => None,
            },
            None => None,
        };
        found.push(origin);
    }
    found
}

/// The table scans of `plan`, by the name its columns are qualified with (the table's, or
/// its alias): the table's name in the default schema and its schema.
fn scans(plan: &LogicalPlan, out: &mut HashMap<String, (String, std::sync::Arc<Schema>)>) {
    match plan {
        LogicalPlan::TableScan(scan) if default_schema(&scan.table_name) => {
            let table = scan.table_name.table().to_string();
            out.insert(table.clone(), (table, scan.source.schema()));
        }
        LogicalPlan::SubqueryAlias(alias) => {
            if let LogicalPlan::TableScan(scan) = alias.input.as_ref() {
                if default_schema(&scan.table_name) {
                    let table = scan.table_name.table().to_string();
                    out.insert(alias.alias.table().to_string(), (table, scan.source.schema()));
                }
            }
        }
        _ => {}
    }
    for input in plan.inputs() {
        scans(input, out);
    }
}

/// Whether `name` is a table of the default schema (the lake's and the live tables).
fn default_schema(name: &TableReference) -> bool {
    name.schema().is_none_or(|s| s == "public")
}

/// For each output column, the qualifier and name of the column it passes on unchanged
/// (through an alias), if it does.
fn output_columns(plan: &LogicalPlan) -> Vec<Option<(String, String)>> {
    let mut node = plan;
    loop {
        match node {
            LogicalPlan::Sort(s) => node = s.input.as_ref(),
            LogicalPlan::Limit(l) => node = l.input.as_ref(),
            LogicalPlan::Filter(f) => node = f.input.as_ref(),
            LogicalPlan::Projection(p) => {
                return p
                    .expr
                    .iter()
                    .map(|e| match e.clone().unalias() {
                        Expr::Column(c) => Some((c.relation?.table().to_string(), c.name)),
                        _ => None,
                    })
                    .collect();
            }
            _ => {
                return node
                    .schema()
                    .iter()
                    .map(|(q, f)| q.map(|q| (q.table().to_string(), f.name().clone())))
                    .collect();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_keys_are_twenty_digit_integers() {
        assert_eq!(numeric_modifier(&DataType::UInt64), Some((20 << 16) + 4));
        assert_eq!(numeric_modifier(&DataType::Decimal128(10, 2)), Some((10 << 16 | 2) + 4));
        assert_eq!(numeric_modifier(&DataType::Utf8), None);
    }
}
