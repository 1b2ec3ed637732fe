//! `as_of('<table>', <time>)` in SQL: a raw lake table as the service could have known it
//! at a past moment. It keeps the rows whose `available_at` is at or before the time
//! (`lake::availability`), and of several versions of one fact the one current then
//! ([`Versions`], declared per table in schema.rs): the latest available METAR correction,
//! the climate report a reader of the day settled on, the NWS forecast version in force.
//! Filtering comes first, then the choice: a version that appeared later never hides one
//! that was there.
//!
//! Unlike `table_at` (time_travel.rs), which reads what wxlake had stored at a moment, this
//! answers what the world could have known, and reaches as far back as the rows do: a
//! backtest over years of backfilled data sees each run from its publication on.
//!
//! The result is a view (a filter over the table's own scan, then a window or a semi join
//! choosing the versions, then the table's columns), so
//! predicates on the key and partition columns still prune files; only the partitions that
//! can hold a row available at the time are read ([`AsOfBound`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_err, Column, ScalarValue};
use datafusion::datasource::{provider_as_source, ViewTable};
use datafusion::error::Result;
use datafusion::functions_aggregate::expr_fn::max;
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{col, lit, Expr, ExprFunctionExt, JoinType, LogicalPlanBuilder, SortExpr};
use datafusion::prelude::SessionContext;

use super::schema::{self, AsOfBound, TableDef, Versions, SUPERSEDED_AT};
use super::snapshot_table::SnapshotTable;
use super::time_travel::{lake_tables, moment_ms};

/// The SQL name of the function.
pub const AS_OF: &str = "as_of";

/// The window column naming each row's version rank (dropped from the answer).
const VERSION: &str = "__as_of_version";

/// `as_of` over the raw lake tables registered in a session (module docs).
#[derive(Debug)]
pub struct AsOf {
    tables: BTreeMap<String, (SnapshotTable, &'static TableDef)>,
}

impl AsOf {
    /// Registers `as_of` for every raw lake table `ctx` holds now.
    pub async fn register(ctx: &SessionContext) -> Result<()> {
        let tables = lake_tables(ctx)
            .await
            .into_iter()
            .filter_map(|(name, t)| schema::table(&name).map(|def| (name, (t, def))))
            .collect();
        ctx.register_udtf(AS_OF, Arc::new(AsOf { tables }));
        Ok(())
    }
}

impl TableFunctionImpl for AsOf {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let [name, at] = args.exprs() else {
            return plan_err!("{AS_OF}(table, time) takes two arguments");
        };
        let Some(name) = super::time_travel::text(name) else {
            return plan_err!("{AS_OF}: the first argument is a table name in quotes, like 'forecasts'");
        };
        let Some((table, def)) = self.tables.get(&name) else {
            let names: Vec<&str> = self.tables.keys().map(String::as_str).collect();
            return plan_err!(
                "{AS_OF}: '{name}' is not a raw lake table (tables: {}); derived tables carry no \
                 available_at, compute them from as_of over the raw tables",
                names.join(", ")
            );
        };
        let Some(at) = moment_ms(at).and_then(DateTime::<Utc>::from_timestamp_millis) else {
            return plan_err!(
                "{AS_OF}: the second argument is a time ('2026-11-28T14:00:00Z', UTC unless it says otherwise)"
            );
        };
        Ok(Arc::new(view(&name, table, def, at)?))
    }
}

/// The view `as_of(name, at)` reads.
fn view(name: &str, table: &SnapshotTable, def: &TableDef, at: DateTime<Utc>) -> Result<ViewTable> {
    let provider: Arc<dyn TableProvider> = Arc::new(table.clone());
    let columns: Vec<Expr> =
        provider.schema().fields().iter().map(|f| Expr::Column(Column::from_name(f.name()))).collect();
    let at_us = ScalarValue::TimestampMicrosecond(Some(at.timestamp_micros()), Some("UTC".into()));
    let mut plan = LogicalPlanBuilder::scan(name, provider_as_source(provider), None)?
        .filter(col("available_at").lt_eq(lit(at_us.clone())).and(bound(def.as_of_bound, at)))?;
    let ranked = |f: Expr, key: &[&str], order: &[(&str, bool)]| -> Result<Expr> {
        let order: Vec<SortExpr> = order.iter().map(|(c, desc)| col(*c).sort(!desc, false)).collect();
        Ok(f.partition_by(key.iter().map(|c| col(*c)).collect()).order_by(order).build()?.alias(VERSION))
    };
    match def.versions {
        Versions::Rows => {}
        // The row current at t: not yet replaced then.
        Versions::Superseded => {
            let current = col(SUPERSEDED_AT).is_null().or(col(SUPERSEDED_AT).gt(lit(at_us)));
            plan = plan.filter(current)?;
        }
        Versions::Latest { key, order } => {
            plan = plan.window(vec![ranked(row_number(), key, order)?])?.filter(col(VERSION).eq(lit(1u64)))?;
        }
        // The newest document per key as an aggregate joined back (a semi join), not a
        // window: the window sorted every period of eight days of versions, the aggregate
        // reads three columns of them (benches/README.md, "As of").
        Versions::Document { key, newest } => {
            const NEWEST: &str = "__as_of_newest";
            let newest_rows = plan
                .clone()
                .aggregate(key.iter().map(|c| col(*c)), vec![max(col(newest)).alias(NEWEST)])?
                .alias(NEWEST)?
                .build()?;
            let left: Vec<Column> = key.iter().chain([&newest]).map(|c| Column::new(Some(name), *c)).collect();
            let right: Vec<Column> = key.iter().chain([&NEWEST]).map(|c| Column::new(Some(NEWEST), *c)).collect();
            plan = plan.join(newest_rows, JoinType::LeftSemi, (left, right), None)?;
        }
    }
    Ok(ViewTable::new(plan.project(columns)?.build()?, None))
}

/// The partition predicate of `b` for a time `at` (date partitions are `YYYY-MM-DD`
/// strings, which order as the dates do).
fn bound(b: AsOfBound, at: DateTime<Utc>) -> Expr {
    let day = |t: DateTime<Utc>| lit(t.format("%Y-%m-%d").to_string());
    match b {
        AsOfBound::All => lit(true),
        AsOfBound::UpTo(c) => col(c).lt_eq(day(at)),
        AsOfBound::Within(c, days) => {
            col(c).lt_eq(day(at)).and(col(c).gt_eq(day(at - Duration::days(i64::from(days)))))
        }
    }
}
