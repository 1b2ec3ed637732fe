//! Time travel in SQL: `table_at('<table>', <version>)` and
//! `table_at('<table>', '<ISO 8601 time>')` read a lake table as one of its past Delta
//! versions, or as it was at a past moment (the latest version committed at or before
//! it). A commit time is when wxlake stored something; docs/lake.md, "Time travel", says
//! when that is the time a user wants and when it is the time the world knew it.
//!
//! The past is there as long as its files are: vacuum deletes replaced files after the
//! lake's keep time (`--keep-replaced-secs`), and a version older than that fails to read.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;

use super::delta::At;
use super::snapshot_table::SnapshotTable;

/// The SQL name of the function.
pub const TABLE_AT: &str = "table_at";

/// `table_at` over the lake tables registered in a session (module docs).
#[derive(Debug)]
pub struct TableAt {
    tables: BTreeMap<String, SnapshotTable>,
}

impl TableAt {
    /// Registers `table_at` for every lake table `ctx` holds now.
    pub async fn register(ctx: &SessionContext) -> Result<()> {
        ctx.register_udtf(TABLE_AT, Arc::new(TableAt { tables: lake_tables(ctx).await }));
        Ok(())
    }
}

/// Every lake table `ctx` holds now, by name.
pub(super) async fn lake_tables(ctx: &SessionContext) -> BTreeMap<String, SnapshotTable> {
    let mut tables = BTreeMap::new();
    for name in ctx.catalog_names() {
        let Some(catalog) = ctx.catalog(&name) else { continue };
        for schema in catalog.schema_names() {
            let Some(s) = catalog.schema(&schema) else { continue };
            for t in s.table_names() {
                if let Ok(Some(p)) = s.table(&t).await {
                    if let Some(st) = p.downcast_ref::<SnapshotTable>() {
                        tables.insert(t, st.clone());
                    }
                }
            }
        }
    }
    tables
}

impl TableFunctionImpl for TableAt {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let [name, at] = args.exprs() else {
            return plan_err!("{TABLE_AT}(table, version or time) takes two arguments");
        };
        let Some(name) = text(name) else {
            return plan_err!("{TABLE_AT}: the first argument is a table name in quotes, like 'forecasts'");
        };
        let Some(table) = self.tables.get(&name) else {
            let names: Vec<&str> = self.tables.keys().map(String::as_str).collect();
            return plan_err!("{TABLE_AT}: no lake table '{name}' (tables: {})", names.join(", "));
        };
        Ok(Arc::new(table.travel(when(at)?)))
    }
}

/// A string literal's text (also through a cast, as `TIMESTAMP '…'` plans).
pub(super) fn text(e: &Expr) -> Option<String> {
    match e {
        Expr::Literal(
            ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)),
            _,
        ) => Some(s.clone()),
        Expr::Cast(c) => text(&c.expr),
        Expr::TryCast(c) => text(&c.expr),
        _ => None,
    }
}

/// The version or moment the second argument names.
fn when(e: &Expr) -> Result<At> {
    let bad = || {
        plan_err!(
            "{TABLE_AT}: the second argument is a version (a whole number >= 0) or a time \
             ('2026-11-28T14:00:00Z', UTC unless it says otherwise)"
        )
    };
    match e {
        Expr::Literal(v, _) if v.data_type().is_integer() => {
            match v.cast_to(&datafusion::arrow::datatypes::DataType::Int64)? {
                ScalarValue::Int64(Some(n)) if n >= 0 => Ok(At::Version(n as u64)),
                _ => bad(),
            }
        }
        other => match moment_ms(other) {
            Some(ms) => Ok(At::Time(ms)),
            None => bad(),
        },
    }
}

/// Milliseconds since the epoch of a time argument: a timestamp literal, or a string in
/// ISO 8601 (UTC unless it says otherwise).
pub(super) fn moment_ms(e: &Expr) -> Option<i64> {
    match e {
        Expr::Literal(ScalarValue::TimestampSecond(Some(t), _), _) => Some(t * 1000),
        Expr::Literal(ScalarValue::TimestampMillisecond(Some(t), _), _) => Some(*t),
        Expr::Literal(ScalarValue::TimestampMicrosecond(Some(t), _), _) => Some(t.div_euclid(1000)),
        Expr::Literal(ScalarValue::TimestampNanosecond(Some(t), _), _) => Some(t.div_euclid(1_000_000)),
        other => text(other).and_then(|s| parse_time(&s)),
    }
}

/// Milliseconds of an ISO 8601 time: with an offset, or UTC without one.
pub(super) fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_millis());
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(s, f).ok())
        .or_else(|| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)))
        .map(|t| t.and_utc().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_utc_unless_they_say_otherwise() {
        let utc = chrono::DateTime::parse_from_rfc3339("2026-11-28T14:00:00Z").unwrap().timestamp_millis();
        assert_eq!(parse_time("2026-11-28T14:00:00Z"), Some(utc));
        assert_eq!(parse_time("2026-11-28 14:00:00"), Some(utc));
        assert_eq!(parse_time("2026-11-28T09:00:00-05:00"), Some(utc));
        assert_eq!(parse_time("2026-11-28T14:00"), Some(utc));
        assert_eq!(parse_time("yesterday"), None);
    }
}
