//! `wxlake_rolling_sums`: the sums of a series over a sliding span of days, for
//! `accuracy_trends`' 7-day points.
//!
//! In plain SQL a 7-day point of day D pools the pairs of D-6..D: each pair is copied to the
//! seven days whose span holds it and the copies are grouped by (series, day). On the 90-day
//! bench lake that is 10 M rows hashed to find 1.5 M points, most of the job's time; a
//! window over the days (`ROWS BETWEEN 6 PRECEDING`) needs a row for every day without a pair
//! and measured slower still (benches/README.md, session 38). A series' pairs grouped into
//! one list (`array_agg`) and summed here over a sliding span touch each pair twice, in
//! order of day.
//!
//! `wxlake_rolling_sums(points, first_day, last_day, width)`:
//! - `points`: a list of structs whose first field is the day (an integer, days since
//!   1970-01-01) and whose other fields are `Decimal128` values; several points may share a
//!   day;
//! - for every day D from `first_day` to `last_day` whose span `D - width + 1 ..= D` holds a
//!   point: a struct of `day`, `n` (the points in the span) and, per value field under its
//!   own name, the sum of its non-null values in the span (null when all are null), in day
//!   order.
//!
//! The sums are exact (integers of the decimal's scale, checked for overflow), so they equal
//! SQL's `sum` of the same decimals bit for bit, whatever order either adds them in.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, Decimal128Builder, Int32Array, Int64Builder, ListArray, StructArray,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Int32Type};
use datafusion::common::exec_err;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

/// The SQL name of the function.
pub const NAME: &str = "wxlake_rolling_sums";

/// The function, to register in a session.
pub fn udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(RollingSums::default()))
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RollingSums {
    signature: Signature,
}

impl Default for RollingSums {
    fn default() -> Self {
        RollingSums { signature: Signature::any(4, Volatility::Immutable) }
    }
}

/// The input struct's value fields (all but the first), each a `Decimal128`.
fn value_fields(points: &DataType) -> Result<Fields> {
    let DataType::List(item) = points else {
        return exec_err!("{NAME}: points must be a list, not {points}");
    };
    let DataType::Struct(fields) = item.data_type() else {
        return exec_err!("{NAME}: points must be a list of structs, not {points}");
    };
    let Some((day, values)) = fields.split_first() else {
        return exec_err!("{NAME}: a point needs a day field");
    };
    if !day.data_type().is_integer() {
        return exec_err!("{NAME}: a point's first field is its day, an integer, not {}", day.data_type());
    }
    if let Some(f) = values.iter().find(|f| !matches!(f.data_type(), DataType::Decimal128(..))) {
        return exec_err!("{NAME}: the value {} is {}, not a decimal", f.name(), f.data_type());
    }
    Ok(values.iter().cloned().collect())
}

/// One output point's fields: `day`, `n`, then the sums under the value fields' names.
fn point_fields(values: &Fields) -> Fields {
    let mut fields = vec![Field::new("day", DataType::Int32, false), Field::new("n", DataType::Int64, false)];
    fields.extend(values.iter().map(|f| Field::new(f.name(), f.data_type().clone(), true)));
    fields.into()
}

fn point_type(values: &Fields) -> DataType {
    DataType::Struct(point_fields(values))
}

impl ScalarUDFImpl for RollingSums {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let Some(points) = arg_types.first() else { return exec_err!("{NAME} takes 4 arguments") };
        Ok(DataType::List(Arc::new(Field::new_list_field(point_type(&value_fields(points)?), true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if args.args.len() != 4 {
            return exec_err!("{NAME} takes 4 arguments (points, first_day, last_day, width), not {}", args.args.len());
        }
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let values = value_fields(arrays[0].data_type())?;
        let lists = arrays[0].as_list::<i32>();
        let int = |a: &ArrayRef, what: &str| -> Result<Int32Array> {
            if !a.data_type().is_integer() && !a.data_type().is_null() {
                return exec_err!("{NAME}: {what} must be an integer, not {}", a.data_type());
            }
            Ok(cast(a, &DataType::Int32)?.as_primitive::<Int32Type>().clone())
        };
        let (first, last, width) =
            (int(&arrays[1], "first_day")?, int(&arrays[2], "last_day")?, int(&arrays[3], "width")?);
        let points = lists.values().as_struct();
        let days = cast(points.column(0), &DataType::Int32)?;
        let days = days.as_primitive::<Int32Type>();
        let sums: Vec<&Decimal128Array> = points.columns()[1..].iter().map(|c| c.as_primitive()).collect();

        let mut out = Points::new(&values);
        let mut lengths = Vec::with_capacity(lists.len());
        for row in 0..lists.len() {
            let before = out.len();
            if lists.is_valid(row) && first.is_valid(row) && last.is_valid(row) && width.is_valid(row) {
                if width.value(row) < 1 {
                    return exec_err!("{NAME}: width must be at least 1, not {}", width.value(row));
                }
                let range = lists.value_offsets()[row] as usize..lists.value_offsets()[row + 1] as usize;
                let mut order: Vec<usize> = range.filter(|&i| days.is_valid(i)).collect();
                order.sort_by_key(|&i| days.value(i));
                out.series(&order, days, &sums, (first.value(row), last.value(row)), width.value(row))?;
            }
            lengths.push(out.len() - before);
        }
        let field = Arc::new(Field::new_list_field(point_type(&values), true));
        let list =
            ListArray::try_new(field, OffsetBuffer::from_lengths(lengths), Arc::new(out.finish(&values)?), None)?;
        Ok(ColumnarValue::Array(Arc::new(list)))
    }
}

/// The output points being built, column by column.
struct Points {
    day: Vec<i32>,
    n: Int64Builder,
    sums: Vec<Decimal128Builder>,
}

impl Points {
    fn new(values: &Fields) -> Self {
        Points {
            day: Vec::new(),
            n: Int64Builder::new(),
            sums: values.iter().map(|_| Decimal128Builder::new()).collect(),
        }
    }

    fn len(&self) -> usize {
        self.day.len()
    }

    /// The points of one series whose indices `order` are sorted by day: a span of `width`
    /// days slides over `first..=last`, adding each point as it enters and taking it out as
    /// it leaves. Days with nothing in the span are skipped in one step, so the work is
    /// bounded by the points, whatever the range.
    fn series(
        &mut self,
        order: &[usize],
        days: &Int32Array,
        sums: &[&Decimal128Array],
        (first, last): (i32, i32),
        width: i32,
    ) -> Result<()> {
        let day = |k: usize| i64::from(days.value(order[k]));
        let (first, last, width) = (i64::from(first), i64::from(last), i64::from(width));
        // Per value: the sum and the count of non-null values in the span.
        let mut total = vec![(0i128, 0usize); sums.len()];
        let (mut lo, mut hi) = (0usize, 0usize);
        let mut d = first;
        while d <= last {
            while hi < order.len() && day(hi) <= d {
                step(&mut total, sums, order[hi], true)?;
                hi += 1;
            }
            while lo < hi && day(lo) <= d - width {
                step(&mut total, sums, order[lo], false)?;
                lo += 1;
            }
            if lo == hi {
                // Nothing in the span: on to the day the next point (after d) enters it.
                if hi == order.len() {
                    break;
                }
                d = day(hi);
                continue;
            }
            self.day.push(d as i32);
            self.n.append_value((hi - lo) as i64);
            for (b, (sum, count)) in self.sums.iter_mut().zip(&total) {
                b.append_option((*count > 0).then_some(*sum));
            }
            d += 1;
        }
        Ok(())
    }

    fn finish(mut self, values: &Fields) -> Result<StructArray> {
        let mut columns: Vec<ArrayRef> =
            vec![Arc::new(Int32Array::from(std::mem::take(&mut self.day))), Arc::new(self.n.finish())];
        for (b, f) in self.sums.iter_mut().zip(values) {
            columns.push(Arc::new(b.finish().with_data_type(f.data_type().clone())));
        }
        Ok(StructArray::try_new(point_fields(values), columns, None)?)
    }
}

/// Adds point `i`'s values to the span's totals (`entering`), or takes them out.
fn step(total: &mut [(i128, usize)], sums: &[&Decimal128Array], i: usize, entering: bool) -> Result<()> {
    for ((sum, count), values) in total.iter_mut().zip(sums) {
        if values.is_valid(i) {
            let v = values.value(i);
            let next = if entering { sum.checked_add(v) } else { sum.checked_sub(v) };
            let Some(next) = next else { return exec_err!("{NAME}: a sum overflows its decimal") };
            *sum = next;
            *count = if entering { *count + 1 } else { *count - 1 };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
    use datafusion::arrow::datatypes::Schema;
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::prelude::SessionContext;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// Series with gaps longer than the span, several points a day, null values and days,
    /// points before the first day asked; values of both signs. Scale 2 keeps the printed
    /// sums short.
    fn random_points(seed: u64) -> RecordBatch {
        let mut rng = SmallRng::seed_from_u64(seed);
        let (mut series, mut day, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in 0..12 {
            let mut d = rng.random_range(-20..10);
            for _ in 0..rng.random_range(0..40) {
                d += [0, 1, 1, 1, 2, 3, 9][rng.random_range(0..7)];
                series.push(format!("s{s}"));
                day.push((rng.random_range(0..50) > 0).then_some(d));
                a.push((rng.random_range(0..8) > 0).then(|| rng.random_range(-99_999i128..99_999)));
                b.push(Some(rng.random_range(0i128..10_000)));
            }
        }
        let dec = |v: Vec<Option<i128>>| Arc::new(Decimal128Array::from(v).with_precision_and_scale(38, 2).unwrap());
        let schema = Schema::new(vec![
            Field::new("series", DataType::Utf8, false),
            Field::new("day", DataType::Int64, true),
            Field::new("a", DataType::Decimal128(38, 2), true),
            Field::new("b", DataType::Decimal128(38, 2), true),
        ]);
        let columns: Vec<ArrayRef> =
            vec![Arc::new(StringArray::from(series)), Arc::new(Int64Array::from(day)), dec(a), dec(b)];
        RecordBatch::try_new(Arc::new(schema), columns).unwrap()
    }

    /// The query's rows as printed, sorted (each side's own ORDER BY is not what is compared).
    async fn rows(ctx: &SessionContext, q: &str) -> Vec<String> {
        let text = pretty_format_batches(&ctx.sql(q).await.unwrap().collect().await.unwrap()).unwrap().to_string();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    }

    /// The function's points are those of the plain SQL it stands for in accuracy_trends:
    /// every point copied to the days whose span holds it, grouped and summed by DataFusion,
    /// for spans of 1, 3 and 7 days and first days before, inside and after the series.
    #[tokio::test]
    async fn the_points_are_the_spread_and_grouped_sums() {
        for seed in 0..4 {
            let ctx = SessionContext::new();
            crate::jobs::functions::register(&ctx);
            ctx.register_batch("t", random_points(seed)).unwrap();
            for (first, last, width) in [(0, 60, 7), (-30, 100, 3), (5, 5, 1), (40, 45, 7), (200, 300, 7)] {
                let ours = format!(
                    "SELECT series, get_field(p, 'day') AS day, get_field(p, 'n') AS n, get_field(p, 'a') AS a, \
                     get_field(p, 'b') AS b FROM (SELECT series, unnest(pts) AS p FROM (SELECT series, \
                     {NAME}(array_agg(named_struct('day', day, 'a', a, 'b', b)), {first}, {last}, {width}) AS pts \
                     FROM t GROUP BY series))"
                );
                let plain = format!(
                    "SELECT series, CAST(day + k AS INT) AS day, count(*) AS n, sum(a) AS a, sum(b) AS b \
                     FROM t CROSS JOIN (SELECT unnest(range(0, {width})) AS k) o \
                     WHERE day IS NOT NULL AND day + k BETWEEN {first} AND {last} \
                     GROUP BY series, day + k"
                );
                let (o, p) = (rows(&ctx, &ours).await, rows(&ctx, &plain).await);
                assert_eq!(o, p, "seed {seed}, days {first}..={last}, width {width}");
            }
            // The comparison compared something: points, nulls and gaps were there.
            let b = ctx
                .sql("SELECT count(*) FROM t WHERE day IS NULL OR a IS NULL")
                .await
                .unwrap()
                .collect()
                .await
                .unwrap();
            assert!(b[0].column(0).as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(0) > 0);
            assert!(rows(&ctx, "SELECT * FROM t").await.len() > 100);
        }
    }

    /// What the function cannot read is an error that says why, never a panic.
    #[tokio::test]
    async fn unreadable_arguments_are_errors() {
        let ctx = SessionContext::new();
        crate::jobs::functions::register(&ctx);
        let one = "named_struct('day', 1, 'a', CAST(1 AS DECIMAL(38, 2)))";
        // Two halves of i128's range: their sum does not fit.
        let big = format!("named_struct('day', 1, 'a', CAST({} AS DECIMAL(38, 0)))", i128::MAX / 2 + 1);
        for (q, says) in [
            (format!("{NAME}([{big}, {big}], 0, 5, 7)"), "a sum overflows"),
            (format!("{NAME}([1, 2], 0, 5, 7)"), "a list of structs"),
            (format!("{NAME}(1, 0, 5, 7)"), "must be a list"),
            (format!("{NAME}([named_struct('day', 1, 'a', 1.5)], 0, 5, 7)"), "not a decimal"),
            (format!("{NAME}([named_struct('day', 'x', 'a', CAST(1 AS DECIMAL(38, 2)))], 0, 5, 7)"), "an integer"),
            (format!("{NAME}([{one}], 0, 5, 0)"), "width must be at least 1"),
            (format!("{NAME}([{one}], 'a', 5, 7)"), "first_day must be an integer"),
            (format!("{NAME}([{one}], 0, 5)"), "expected 4 arguments"),
        ] {
            let e = match ctx.sql(&format!("SELECT {q}")).await {
                Ok(df) => df.collect().await.unwrap_err().to_string(),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(says), "{q}: {e}");
        }
    }
}
