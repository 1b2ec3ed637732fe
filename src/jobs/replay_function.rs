//! The `observed_extremes` replay as a SQL function, so that on a cluster it runs on the
//! executors, split by station, instead of on the client.
//!
//! Locally the helper table is computed in the job's process ([`super::observed`]): one
//! read of the window's rows, grouped by station in memory, every station replayed in
//! parallel. A client of a cluster doing the same would read every row of the lake over
//! the network and replay alone. So with `--cluster`, `observed_extremes` is registered as
//! a view instead ([`register_view`]):
//!
//! 1. [`replay_window_by_station`] groups the window's rows by station in SQL: each
//!    station's observations, one-minute readings and reports as three lists. On a cluster
//!    the grouping is a shuffle by station, so each task of the next stage holds whole
//!    stations.
//! 2. [`ObservedStationDays`] (`wxlake_observed_station_days`) replays each station's lists
//!    through the same [`station_days`](super::observed::station_days) the local table uses and
//!    returns the station's days as a list of rows of the helper's schema; the view unnests
//!    them into the helper's columns.
//!
//! The function runs wherever the plan's stage does: every process of a cluster registers
//! it ([`super::functions`]: the scheduler to plan it, the executors to run it). Its arguments
//! carry the run's dates and the client's clock, so executors answer for the same `now`.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use datafusion::arrow::array::{new_empty_array, Array, ArrayRef, AsArray, ListArray, RecordBatch, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Date32Type, Field, TimeUnit};
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::Result;
use datafusion::functions::core::expr_fn::get_field;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::{col, lit, SessionContext};
use rayon::prelude::*;

use super::error::JobError;
use super::observed::{by_station, days_of_stations, replay_span, schema, to_batch};
use crate::lake::window::{decode_station_rows, replay_window_by_station};

/// The SQL name of the replay function.
pub const NAME: &str = "wxlake_observed_station_days";

/// The function, to register in a session (every process of a cluster does:
/// [`super::functions`]).
pub fn udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(ObservedStationDays::default()))
}

/// `wxlake_observed_station_days(station_code, metars, onemin, reports, from, to, now)`:
/// the station's `observed_extremes` rows for trading days `from..=to` at `now`, from its
/// lists of [`replay_window_by_station`]; an empty list for a station the catalog lacks.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ObservedStationDays {
    signature: Signature,
}

impl Default for ObservedStationDays {
    fn default() -> Self {
        ObservedStationDays { signature: Signature::any(7, Volatility::Immutable) }
    }
}

/// One row of `observed_extremes` as a struct.
fn row_type() -> DataType {
    DataType::Struct(schema().fields().clone())
}

impl ScalarUDFImpl for ObservedStationDays {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(row_type(), true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [station, metars, onemin, reports, from, to, now] = args.args.as_slice() else {
            return exec_err!("{NAME} takes 7 arguments, not {}", args.args.len());
        };
        let (from, to, now) = (date_arg(from, "from")?, date_arg(to, "to")?, time_arg(now, "now")?);
        let arrays =
            ColumnarValue::values_to_arrays(&[station.clone(), metars.clone(), onemin.clone(), reports.clone()])?;
        let Some(stations) = arrays[0].as_string_opt::<i32>() else {
            return exec_err!("{NAME}: station_code is {}, not text", arrays[0].data_type());
        };
        let lists = arrays[1..]
            .iter()
            .map(|a| match a.data_type() {
                DataType::Null => Ok(None),
                _ => a.as_list_opt::<i32>().map(Some).ok_or_else(|| {
                    datafusion::error::DataFusionError::Execution(format!(
                        "{NAME}: a list of rows was expected, not {}",
                        a.data_type()
                    ))
                }),
            })
            .collect::<Result<Vec<_>>>()?;
        // A station's list, or None when it has no rows of that kind.
        let element = |list: Option<&ListArray>, i: usize| -> Result<Option<StructArray>> {
            let Some(list) = list.filter(|l| l.is_valid(i)) else { return Ok(None) };
            match list.value(i).as_struct_opt() {
                Some(s) => Ok(Some(s.clone())),
                None => exec_err!("{NAME}: a list of structs was expected, not {}", list.value_type()),
            }
        };
        let days: Vec<Option<RecordBatch>> = (0..args.number_rows)
            .into_par_iter()
            .map(|i| {
                if stations.is_null(i) {
                    return Ok(None);
                }
                let (m, o, r) = (element(lists[0], i)?, element(lists[1], i)?, element(lists[2], i)?);
                let (metars, onemin, reports) = decode_station_rows(m.as_ref(), o.as_ref(), r.as_ref())?;
                let rows = days_of_stations(by_station(&metars, &onemin, &reports, from, to), from, to, now);
                to_batch(&rows).map(Some).map_err(|e| datafusion::error::DataFusionError::External(e.into()))
            })
            .collect::<Result<_>>()?;
        if args.number_rows > 0 {
            // Which process replayed which stations: on a cluster, an executor's log shows its share.
            let codes: Vec<&str> =
                (0..args.number_rows).filter(|&i| stations.is_valid(i)).map(|i| stations.value(i)).collect();
            let rows: usize = days.iter().flatten().map(RecordBatch::num_rows).sum();
            tracing::debug!(stations = %codes.join(","), rows, "observed_extremes: stations replayed here");
        }
        Ok(ColumnarValue::Array(Arc::new(days_list(days)?)))
    }
}

/// Each station's days as one list element (empty for `None`).
fn days_list(days: Vec<Option<RecordBatch>>) -> Result<ListArray> {
    let lengths: Vec<usize> = days.iter().map(|d| d.as_ref().map_or(0, RecordBatch::num_rows)).collect();
    let parts: Vec<StructArray> = days.into_iter().flatten().map(StructArray::from).collect();
    let values: ArrayRef = if parts.is_empty() {
        new_empty_array(&row_type())
    } else {
        let refs: Vec<&dyn Array> = parts.iter().map(|p| p as &dyn Array).collect();
        datafusion::arrow::compute::concat(&refs)?
    };
    let field = Arc::new(Field::new_list_field(row_type(), true));
    Ok(ListArray::try_new(field, OffsetBuffer::from_lengths(lengths), values, None)?)
}

fn date_arg(v: &ColumnarValue, what: &str) -> Result<NaiveDate> {
    match v {
        ColumnarValue::Scalar(ScalarValue::Date32(Some(d))) => match Date32Type::to_naive_date_opt(*d) {
            Some(d) => Ok(d),
            None => exec_err!("{NAME}: {what} is out of range"),
        },
        other => exec_err!("{NAME}: {what} must be a date literal, not {}", other.data_type()),
    }
}

fn time_arg(v: &ColumnarValue, what: &str) -> Result<DateTime<Utc>> {
    let micros = match v {
        ColumnarValue::Scalar(s) if matches!(s.data_type(), DataType::Timestamp(..)) => {
            s.cast_to(&DataType::Timestamp(TimeUnit::Microsecond, None))?
        }
        other => return exec_err!("{NAME}: {what} must be a timestamp literal, not {}", other.data_type()),
    };
    match micros {
        ScalarValue::TimestampMicrosecond(Some(t), _) => match DateTime::from_timestamp_micros(t) {
            Some(t) => Ok(t),
            None => exec_err!("{NAME}: {what} is out of range"),
        },
        _ => exec_err!("{NAME}: {what} is null"),
    }
}

/// Registers `observed_extremes` in `ctx` for trading days `from..=to` at `now` as the view
/// of the module docs (the same rows [`super::observed::observed_extremes`] computes), and
/// the function it calls. The session's hash joins become partitioned, whatever their
/// sides' sizes: a run that registers this view asks only for it.
pub async fn register_view(
    ctx: &SessionContext,
    from: NaiveDate,
    to: NaiveDate,
    now: DateTime<Utc>,
) -> Result<(), JobError> {
    let udf = udf();
    ctx.register_udf((*udf).clone());
    // Joins partitioned by station whatever the sides' sizes: a join that collects a small
    // side into every task would leave the stations of that side to whichever task ends last.
    {
        let state = ctx.state_ref();
        let mut state = state.write();
        let optimizer = &mut state.config_mut().options_mut().optimizer;
        optimizer.hash_join_single_partition_threshold = 0;
        optimizer.hash_join_single_partition_threshold_rows = 0;
    }
    let (start, end) = replay_span(from, to);
    let date = |d: NaiveDate| lit(ScalarValue::Date32(Some(Date32Type::from_naive_date(d))));
    let days = udf.call(vec![
        col("station_code"),
        col("metars"),
        col("onemin"),
        col("reports"),
        date(from),
        date(to),
        lit(ScalarValue::TimestampMicrosecond(Some(now.timestamp_micros()), Some("UTC".into()))),
    ]);
    let columns =
        schema().fields().iter().map(|f| get_field(col("d"), f.name().as_str()).alias(f.name())).collect::<Vec<_>>();
    let view = replay_window_by_station(ctx, start, end)
        .await?
        .select(vec![days.alias("d")])?
        .unnest_columns(&["d"])?
        .select(columns)?
        .into_view();
    ctx.deregister_table("observed_extremes")?;
    ctx.register_table("observed_extremes", view)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};
    use datafusion::arrow::util::pretty::pretty_format_batches;

    use super::*;
    use crate::demo::load::load;
    use crate::demo::DemoConfig;
    use crate::jobs::observed::observed_extremes;
    use crate::lake::{query, Lake};

    async fn table(ctx: &SessionContext, name: &str) -> String {
        let q = format!("SELECT * FROM {name} ORDER BY station_code, date, logic");
        pretty_format_batches(&ctx.sql(&q).await.unwrap().collect().await.unwrap()).unwrap().to_string()
    }

    /// The view a cluster runs gives, row for row, the table computed in one process: three
    /// demo days of a US station with one-minute data and CLI/DSM reports, a US station
    /// without one-minute data and an international one, the last day still in progress.
    #[tokio::test]
    async fn the_view_replays_what_the_local_table_replays() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&format!("file://{}", dir.path().display())).await.unwrap();
        let now = Utc.with_ymd_and_hms(2026, 3, 10, 15, 30, 0).unwrap();
        let cfg = DemoConfig {
            stations: vec!["KNYC".into(), "KMIA".into(), "EGLC".into()],
            forecasts: false,
            ..DemoConfig::ending_yesterday(now, 3)
        };
        load(&lake, &cfg, 3, |_, _| {}).await.unwrap();
        let ctx = query::session(&lake).await.unwrap();
        let (from, to) = (cfg.end_date - Duration::days(3), now.date_naive() + Duration::days(1));
        ctx.register_table("local_days", Arc::new(observed_extremes(&ctx, from, to, now).await.unwrap())).unwrap();
        register_view(&ctx, from, to, now).await.unwrap();
        let (local, view) = (table(&ctx, "local_days").await, table(&ctx, "observed_extremes").await);
        assert_eq!(local, view);
        // Every kind of input reached the rows: observations, one-minute rows, CLI values;
        // and a day not complete at `now`.
        let counts = "SELECT count(DISTINCT station_code), sum(observations), sum(onemin), count(cli_high), \
                      count(*) FILTER (WHERE NOT day_complete) FROM observed_extremes";
        let b = ctx.sql(counts).await.unwrap().collect().await.unwrap();
        let text = pretty_format_batches(&b).unwrap().to_string();
        let row: Vec<i64> = text.lines().nth(3).unwrap().split('|').filter_map(|f| f.trim().parse().ok()).collect();
        assert!(row[0] == 3 && row[1] > 100 && row[2] > 1000 && row[3] > 0 && row[4] > 0, "{text}");
    }

    /// Arguments the function cannot read are errors that say why, never a panic or rows
    /// decoded from the wrong columns; a station the catalog lacks has no days.
    #[tokio::test]
    async fn unreadable_arguments_are_errors_and_unknown_stations_have_no_days() {
        let ctx = SessionContext::new();
        crate::jobs::functions::register(&ctx);
        let call = |station: &str, metars: &str, from: &str| {
            format!(
                "SELECT {NAME}({station}, {metars}, NULL, NULL, {from}, DATE '2026-03-09', \
                 TIMESTAMP '2026-03-10T00:00:00Z') AS d"
            )
        };
        for (q, says) in [
            (call("'KNYC'", "[named_struct('x', 1)]", "DATE '2026-03-08'"), "not the replay read's columns"),
            (call("'KNYC'", "[1, 2]", "DATE '2026-03-08'"), "a list of structs was expected"),
            (call("'KNYC'", "1", "DATE '2026-03-08'"), "a list of rows was expected"),
            (call("'KNYC'", "NULL", "'2026-03-08'"), "from must be a date literal"),
            (call("7", "NULL", "DATE '2026-03-08'"), "not text"),
        ] {
            let e = match ctx.sql(&q).await {
                Ok(df) => df.collect().await.unwrap_err().to_string(),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(says), "{q}: {e}");
        }
        let b = ctx.sql(&call("'XXXX'", "NULL", "DATE '2026-03-08'")).await.unwrap().collect().await.unwrap();
        assert_eq!(b[0].column(0).as_list::<i32>().value(0).len(), 0);
    }
}
