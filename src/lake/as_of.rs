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
//! The result is the table's own scan of the partitions that can hold a row available at
//! the time ([`AsOfBound`]), filtered to the rows known then; for a table of versions,
//! sorted by the version key and newest first and thinned to the current version by
//! `lake::newest` (a window cost more to plan than the plain query costs to run). For a
//! table of versions, filters on the version key's columns go below the choice (and prune
//! files when the key holds the partition column, as `observations`' does), any other
//! filter applies to the chosen rows; for the others every filter goes below.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_err, DFSchema, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::logical_expr::{col, lit, utils::conjunction, Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::col as physical_col;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use super::newest::{Keep, NewestExec};
use super::schema::{self, AsOfBound, TableDef, Versions, SUPERSEDED_AT};
use super::snapshot_table::SnapshotTable;
use super::time_travel::{lake_tables, moment_ms};

/// The SQL name of the function.
pub const AS_OF: &str = "as_of";

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
        Ok(Arc::new(AsOfTable { table: table.clone(), def, at }))
    }
}

/// The table `as_of(name, at)` reads (module docs). Local only: the cluster's codec
/// refuses it by name (src/cluster/codec.rs).
#[derive(Debug)]
pub struct AsOfTable {
    table: SnapshotTable,
    def: &'static TableDef,
    at: DateTime<Utc>,
}

impl AsOfTable {
    /// The key whose versions compete, and the order putting the current one first
    /// (column, descending); empty for tables whose rows are chosen one by one.
    fn choice(&self) -> (&'static [&'static str], Vec<(&'static str, bool)>) {
        match self.def.versions {
            Versions::Rows | Versions::Superseded => (&[], vec![]),
            Versions::Latest { key, order } => (key, order.to_vec()),
            Versions::Document { key, newest } => (key, vec![(newest, true)]),
        }
    }

    /// Whether `filter` can be applied before the versions are chosen: one on other
    /// columns would hide the current version of a fact and let an older one stand in.
    fn below_choice(&self, filter: &Expr) -> bool {
        let (key, _) = self.choice();
        key.is_empty() || filter.column_refs().iter().all(|c| key.contains(&c.name.as_str()))
    }

    /// The conditions of the rows known at `at`, before any choice.
    fn known(&self) -> Vec<Expr> {
        let at_us = ScalarValue::TimestampMicrosecond(Some(self.at.timestamp_micros()), Some("UTC".into()));
        let mut known = vec![col("available_at").lt_eq(lit(at_us.clone())), bound(self.def.as_of_bound, self.at)];
        // The row current at t: not yet replaced then.
        if matches!(self.def.versions, Versions::Superseded) {
            known.push(col(SUPERSEDED_AT).is_null().or(col(SUPERSEDED_AT).gt(lit(at_us))));
        }
        known
    }
}

#[async_trait]
impl TableProvider for AsOfTable {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            // Applied exactly by the scan's filter below the choice (`scan`).
            .map(|f| match self.below_choice(f) {
                true => TableProviderFilterPushDown::Exact,
                false => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    /// The table's scan of the columns asked and those the choice reads, filtered to the
    /// rows known at the time and by the pushed filters (for a table of versions, those on
    /// its key only), then for a table of versions sorted by key and newest first and
    /// thinned by [`NewestExec`].
    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = self.table.schema();
        let conditions: Vec<Expr> = self.known().into_iter().chain(filters.iter().cloned()).collect();
        let (key, order) = self.choice();
        let asked: Vec<usize> = projection.cloned().unwrap_or_else(|| (0..schema.fields().len()).collect());
        let mut read: BTreeSet<usize> = asked.iter().copied().collect();
        let named = conditions
            .iter()
            .flat_map(|c| c.column_refs().into_iter().map(|c| c.name.clone()).collect::<Vec<_>>())
            .chain(key.iter().chain(order.iter().map(|(c, _)| c)).map(|c| c.to_string()));
        for name in named {
            read.insert(schema.index_of(&name)?);
        }
        let read: Vec<usize> = read.into_iter().collect();
        let scan = self.table.scan(state, Some(&read), &conditions, None).await?;
        let scanned = scan.schema();
        let predicate = conjunction(conditions).expect("the time's conditions are never empty");
        let predicate = state.create_physical_expr(predicate, &DFSchema::try_from(Arc::clone(&scanned))?)?;
        let mut plan: Arc<dyn ExecutionPlan> = Arc::new(FilterExec::try_new(predicate, scan)?);
        if !key.is_empty() {
            let sort = |name: &str, descending: bool| -> Result<PhysicalSortExpr> {
                Ok(PhysicalSortExpr::new(physical_col(name, &scanned)?, SortOptions { descending, nulls_first: false }))
            };
            let exprs: Vec<PhysicalSortExpr> = key
                .iter()
                .map(|c| sort(c, false))
                .chain(order.iter().map(|(c, d)| sort(c, *d)))
                .collect::<Result<_>>()?;
            let ordering = LexOrdering::new(exprs).expect("a version key is never empty");
            let sorted = SortExec::new(ordering.clone(), plan).with_preserve_partitioning(true);
            let merged = SortPreservingMergeExec::new(ordering.clone(), Arc::new(sorted));
            let key_at: Vec<usize> = key.iter().map(|c| scanned.index_of(c)).collect::<Result<_, _>>()?;
            let keep = match self.def.versions {
                Versions::Document { newest, .. } => Keep::TiedOn(scanned.index_of(newest)?),
                _ => Keep::First,
            };
            plan = Arc::new(NewestExec::new(Arc::new(merged), ordering, key_at, keep));
        }
        let columns = asked
            .iter()
            .map(|&i| {
                let name = schema.field(i).name();
                Ok((physical_col(name, &scanned)?, name.clone()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(ProjectionExec::try_new(columns, plan)?))
    }
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
