//! SQL with request values bound as parameters, never spliced into the text.
//!
//! A reader (a REST handler, the bracket odds) writes its query with `$1`, `$2`, ... where a value from the request goes and
//! binds the values here (DataFusion replaces each placeholder by a typed literal after
//! parsing): a station code or model name is data even when it holds a quote, `--` or `;`,
//! so no escaping rule has to be right. The parameters' types are those of the columns they
//! are compared with, so the plan is the one a written literal would give.

use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::scalar::ScalarValue;

use datafusion::error::Result;

/// Values bound so far, in placeholder order.
#[derive(Debug, Default)]
pub struct Bindings(Vec<ScalarValue>);

impl Bindings {
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, v: ScalarValue) -> String {
        self.0.push(v);
        format!("${}", self.0.len())
    }

    /// A string value (codes, model names, enum labels); returns its placeholder.
    pub fn str(&mut self, s: &str) -> String {
        self.push(ScalarValue::Utf8(Some(s.to_string())))
    }

    /// A time, typed as the lake's `timestamp[us, UTC]` columns.
    pub fn time(&mut self, t: DateTime<Utc>) -> String {
        self.push(ScalarValue::TimestampMicrosecond(Some(t.timestamp_micros()), Some("UTC".into())))
    }

    /// A date compared with a `DATE` column (the jobs' outputs).
    pub fn date(&mut self, d: NaiveDate) -> String {
        let days = (d - NaiveDate::default()).num_days();
        self.push(ScalarValue::Date32(i32::try_from(days).ok()))
    }

    /// A date compared with a Hive partition column (`date`, `run_date`: strings `YYYY-MM-DD`).
    pub fn partition_date(&mut self, d: NaiveDate) -> String {
        self.str(&d.format("%Y-%m-%d").to_string())
    }

    /// Plans `sql` with the bound values in place of its placeholders.
    pub async fn frame(self, ctx: &SessionContext, sql: &str) -> Result<DataFrame> {
        ctx.sql(sql).await?.with_param_values(self.0)
    }

    /// Plans and runs `sql`, all result batches.
    pub async fn collect(self, ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
        Ok(self.collect_with_schema(ctx, sql).await?.1)
    }

    /// [`collect`](Self::collect), with the result's schema (an empty result has no batch).
    pub async fn collect_with_schema(self, ctx: &SessionContext, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let df = ctx.sql(sql).await?.with_param_values(self.0)?;
        let schema = SchemaRef::clone(df.schema().inner());
        Ok((schema, df.collect().await?))
    }
}

/// Column `i` of a query result as `Utf8`, whichever string type the plan gave it (lake
/// columns read as `Utf8View`, literals and casts as `Utf8`), for `as_string::<i32>()`.
pub fn utf8_column(b: &RecordBatch, i: usize) -> Result<ArrayRef> {
    Ok(cast(b.column(i), &DataType::Utf8)?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{AsArray, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::MemTable;

    use super::*;

    /// A table of codes, one of them hostile.
    async fn ctx(codes: &[&str]) -> SessionContext {
        let schema = Arc::new(Schema::new(vec![Field::new("code", DataType::Utf8, false)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(codes.to_vec()))]).unwrap();
        let ctx = SessionContext::new();
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, vec![vec![batch]]).unwrap())).unwrap();
        ctx
    }

    #[tokio::test]
    async fn a_hostile_value_is_data_not_sql() {
        let hostile = "X' OR '1'='1'; DROP TABLE t; --";
        let ctx = ctx(&["KNYC", hostile]).await;
        for (value, expected) in [(hostile, vec![hostile]), ("KNYC' OR 'a'='a", vec![]), ("KNYC", vec!["KNYC"])] {
            let mut b = Bindings::new();
            let sql = format!("SELECT code FROM t WHERE code = {}", b.str(value));
            assert_eq!(sql, "SELECT code FROM t WHERE code = $1", "the value is not in the SQL text");
            let got: Vec<String> = b
                .collect(&ctx, &sql)
                .await
                .unwrap()
                .iter()
                .flat_map(|b| b.column(0).as_string::<i32>().iter().flatten().map(str::to_string).collect::<Vec<_>>())
                .collect();
            assert_eq!(got, expected, "{value}");
        }
    }

    #[test]
    fn placeholders_count_up_and_dates_are_typed() {
        let mut b = Bindings::new();
        let d = NaiveDate::from_ymd_opt(2026, 3, 8).unwrap();
        assert_eq!((b.str("a"), b.date(d), b.partition_date(d)), ("$1".into(), "$2".into(), "$3".into()));
        assert_eq!(b.0[1], ScalarValue::Date32(Some(20520)));
        assert_eq!(b.0[2], ScalarValue::Utf8(Some("2026-03-08".into())));
        let t = DateTime::from_timestamp(1_772_928_000, 0).unwrap();
        assert_eq!(b.time(t), "$4");
        assert_eq!(b.0[3], ScalarValue::TimestampMicrosecond(Some(1_772_928_000_000_000), Some("UTC".into())));
    }
}
