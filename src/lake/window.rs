//! The lake read the live side starts from: a time window of observations, one-minute
//! readings and daily reports, decoded back into the records ingest produced. The write
//! path rebuilds its hot state from it; handlers and jobs that replay a past day through
//! the extremes engine read the same window, so every reader sees what ingest saw.
//!
//! Every value (station code, times, dates) is bound as a query parameter: the SQL text is
//! built from constant fragments only, so no request value is ever parsed as SQL.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use datafusion::arrow::array::{Array, AsArray, PrimitiveArray, RecordBatch, StructArray};
use datafusion::arrow::datatypes::{DataType, Date32Type, Float64Type, Int32Type, TimeUnit, TimestampMicrosecondType};
use datafusion::common::ScalarValue;
use datafusion::prelude::{DataFrame, SessionContext};

use super::LakeError;
use crate::decode::metar::parse_metar;
use crate::decode::types::{DailyKind, DailyReport, Metar, OneMinute, ReportKind};

/// Observations, one-minute readings and daily reports of the lake in `[from, to)`,
/// optionally for one station, as the decoders' record types (observations re-parsed from
/// their stored raw text, so the live engine sees exactly what ingest saw). The three
/// queries run together. With `as_of`, only the rows available by then
/// (`available_at <= as_of`, `lake::availability`): what the service could have known.
pub async fn load_window(
    ctx: &SessionContext,
    station: Option<&str>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    as_of: Option<DateTime<Utc>>,
) -> Result<(Vec<Metar>, Vec<OneMinute>, Vec<DailyReport>), LakeError> {
    let window = Window::new(station, from, to, as_of, false);
    let (obs, mins, reports) = futures::try_join!(window.observations(ctx), window.onemin(ctx), window.reports(ctx))?;
    Ok((records(obs), records(mins), records(reports)))
}

/// A record with the moment it became known: its row's `available_at` (a row without one,
/// written before the column and not upgraded, is never known: `DateTime::MAX_UTC`).
pub type Known<T> = (T, DateTime<Utc>);

/// A window's observations, one-minute readings and daily reports, each with when it became known.
pub type KnownRows = (Vec<Known<Metar>>, Vec<Known<OneMinute>>, Vec<Known<DailyReport>>);

/// The type a replay read's decoder reads a column as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Text,
    Time,
    Real,
    Int,
    Flag,
    Date,
}

impl Col {
    fn fits(self, t: &DataType) -> bool {
        match self {
            Col::Text => *t == DataType::Utf8,
            Col::Time => matches!(t, DataType::Timestamp(TimeUnit::Microsecond, _)),
            Col::Real => *t == DataType::Float64,
            Col::Int => *t == DataType::Int32,
            Col::Flag => *t == DataType::Boolean,
            Col::Date => *t == DataType::Date32,
        }
    }
}

/// The columns of each table a replay reads, in the order its decoder reads them
/// ([`stored_metars`], [`onemin_of`], [`reports_of`]), `available_at` after them: one list
/// for the local read's `SELECT` and the cluster's per-station lists
/// ([`replay_window_by_station`]).
const STORED_OBSERVATION_COLUMNS: [(&str, Col); 11] = [
    ("station_code", Col::Text),
    ("observation_time", Col::Time),
    ("report_type", Col::Text),
    ("cor", Col::Flag),
    ("temperature", Col::Real),
    ("has_tenths", Col::Flag),
    ("temp_whole_c", Col::Int),
    ("six_hour_high", Col::Real),
    ("six_hour_low", Col::Real),
    ("day_high_24h", Col::Real),
    ("day_low_24h", Col::Real),
];
const ONEMIN_COLUMNS: [(&str, Col); 3] =
    [("station_code", Col::Text), ("observation_time", Col::Time), ("temperature_f", Col::Real)];
const REPORT_COLUMNS: [(&str, Col); 16] = [
    ("kind", Col::Text),
    ("station_code", Col::Text),
    ("report_date", Col::Date),
    ("issued_at", Col::Time),
    ("high_f", Col::Int),
    ("high_time_lst", Col::Time),
    ("low_f", Col::Int),
    ("low_time_lst", Col::Time),
    ("precip_in", Col::Real),
    ("precip_trace", Col::Flag),
    ("precip_mtd_in", Col::Real),
    ("precip_mtd_trace", Col::Flag),
    ("is_final", Col::Flag),
    ("valid_as_of_lst", Col::Time),
    ("correction", Col::Flag),
    ("raw", Col::Text),
];

/// `a, b, c`: a `SELECT` list.
fn select_list(columns: &[(&str, Col)]) -> String {
    columns.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

/// `named_struct('a', a, ..., 'available_at', available_at)`: one row as a list element.
fn row_struct(columns: &[(&str, Col)]) -> String {
    let fields: Vec<String> =
        columns.iter().map(|(n, _)| *n).chain(["available_at"]).map(|n| format!("'{n}', {n}")).collect();
    format!("named_struct({})", fields.join(", "))
}

/// [`load_window`] of every row (no `as_of`), each with its `available_at`: what the hot
/// state is rebuilt from, so it can answer as of a time (`write::hot`).
pub async fn load_known_window(
    ctx: &SessionContext,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<KnownRows, LakeError> {
    let window = Window::new(None, from, to, None, true);
    futures::try_join!(window.observations(ctx), window.onemin(ctx), window.reports(ctx))
}

fn records<T>(known: Vec<Known<T>>) -> Vec<T> {
    known.into_iter().map(|(r, _)| r).collect()
}

/// [`load_known_window`] for replays through the extremes engine (the jobs' days): each
/// observation is rebuilt from the columns ingest's parse stored (`lake::rows`) instead of
/// parsed again from its text, with only what the engine reads: time, report type,
/// correction, the temperature with its whole degrees and tenths, and the 6- and 24-hour
/// groups. The other fields, `raw` included, are empty: nothing a replay answers reads
/// them (only [`crate::extremes::StationExtremes::latest`] does, which the server's own
/// rebuild serves from [`load_known_window`]). The columns are what the parser of the day
/// the row was written gave: a later fix of the parser reaches these replays only when the
/// rows are rewritten, while the API's own replays parse again. The rows come in no
/// particular order: the callers group them by station and sort each station's by time,
/// cheaper than one sort of every row. Parsing every report again, and that sort, were
/// much of a long replay's read (benches/README.md, "daily_extremes at scale").
///
/// `known_within`: only the observations and one-minute rows that became known at most
/// this long after their time, for a replay that asks only that soon (the `bracket_scores`
/// job's same-day checkpoints: one-minute rows, known a day after their minute, reach
/// none of them).
pub async fn load_replay_window(
    ctx: &SessionContext,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    known_within: Option<Duration>,
) -> Result<KnownRows, LakeError> {
    let window = Window { by_time: false, known_within, ..Window::new(None, from, to, None, true) };
    futures::try_join!(window.stored_observations(ctx), window.onemin(ctx), window.reports(ctx))
}

/// The rows of [`load_replay_window`] grouped by station inside the query, for a replay
/// that runs where the rows are (a cluster's executors: `jobs::replay_function`). One row
/// per catalog station that has any: `station_code`, then `metars`, `onemin` and `reports`, each a
/// list (null when the station has none of that kind) of structs of the local read's
/// columns then `available_at`, which [`decode_station_rows`] turns into the same records.
/// Lists come in no order ([`decode_station_rows`] orders the reports as the local read does).
pub async fn replay_window_by_station(
    ctx: &SessionContext,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<DataFrame, LakeError> {
    let window = Window { by_time: false, ..Window::new(None, from, to, None, true) };
    // Three aggregates joined to the catalog's stations, not one aggregate over the three
    // reads stacked: Ballista 55 loses a partition of a `UNION ALL` that has a branch over a
    // table without files (a lake without one-minute data), silently dropping rows. Each
    // aggregate shuffles its rows by station once; with the joins partitioned (the caller's
    // setting) and all keyed on the catalog's code, no list moves again, and each task of
    // the join holds whole stations. A station outside the catalog has no row (the replay
    // has no clock for it either).
    let sql = format!(
        "WITH m AS (SELECT station_code, array_agg({}) AS rows FROM observations WHERE {} GROUP BY station_code), \
         o AS (SELECT station_code, array_agg({}) AS rows FROM onemin WHERE {} GROUP BY station_code), \
         r AS (SELECT station_code, array_agg({}) AS rows FROM reports \
               WHERE report_date >= $first_report AND report_date <= $last_report GROUP BY station_code) \
         SELECT s.station_code, m.rows AS metars, o.rows AS onemin, r.rows AS reports FROM stations s \
         LEFT JOIN m ON m.station_code = s.station_code LEFT JOIN o ON o.station_code = s.station_code \
         LEFT JOIN r ON r.station_code = s.station_code \
         WHERE m.rows IS NOT NULL OR o.rows IS NOT NULL OR r.rows IS NOT NULL",
        row_struct(&STORED_OBSERVATION_COLUMNS),
        window.time_filter(),
        row_struct(&ONEMIN_COLUMNS),
        window.time_filter(),
        row_struct(&REPORT_COLUMNS),
    );
    Ok(ctx.sql(&sql).await?.with_param_values(window.params())?)
}

/// One station's lists of [`replay_window_by_station`] (each `None` when null), decoded
/// as [`load_replay_window`] decodes its rows. A list whose fields are not the read's
/// columns is an error that names it, never a wrong decode.
pub fn decode_station_rows(
    metars: Option<&StructArray>,
    onemin: Option<&StructArray>,
    reports: Option<&StructArray>,
) -> datafusion::error::Result<KnownRows> {
    let batch = |list: Option<&StructArray>, columns: &[(&str, Col)], what: &str| {
        let Some(list) = list else { return Ok(None) };
        let fields = list.fields();
        let expected = columns.iter().copied().chain([("available_at", Col::Time)]);
        // A null element could not become a batch row (nor can named_struct make one).
        let fits = list.null_count() == 0
            && fields.len() == columns.len() + 1
            && fields.iter().zip(expected).all(|(f, (name, col))| f.name() == name && col.fits(f.data_type()));
        if !fits {
            return Err(datafusion::error::DataFusionError::Execution(format!(
                "replay: the {what} list has fields {:?} and {} null rows, not the replay read's columns ({})",
                fields.iter().map(|f| format!("{} {}", f.name(), f.data_type())).collect::<Vec<_>>(),
                list.null_count(),
                select_list(columns)
            )));
        }
        Ok(Some(RecordBatch::from(list.clone())))
    };
    let (m, o, r) = (
        batch(metars, &STORED_OBSERVATION_COLUMNS, "observations")?,
        batch(onemin, &ONEMIN_COLUMNS, "one-minute")?,
        batch(reports, &REPORT_COLUMNS, "reports")?,
    );
    let (mut obs, mut mins, mut reps) = (Vec::new(), Vec::new(), Vec::new());
    if let Some(b) = &m {
        stored_metars(b, stamps_of(b, Some(STORED_OBSERVATION_COLUMNS.len())), &mut obs);
    }
    if let Some(b) = &o {
        onemin_of(b, stamps_of(b, Some(ONEMIN_COLUMNS.len())), &mut mins);
    }
    if let Some(b) = &r {
        reps = reports_of(b, stamps_of(b, Some(REPORT_COLUMNS.len())));
        // The local read's order, `ORDER BY report_date, issued_at` (nulls last), which
        // the grouped lists do not keep.
        reps.sort_by_key(|(r, _)| (r.date, r.issued_at.is_none(), r.issued_at));
    }
    Ok((obs, mins, reps))
}

/// [`load_window`] without the one-minute readings, for readers that list observations:
/// a day of one-minute rows is 1,440 rows per station read and decoded for nothing.
pub async fn load_reported_window(
    ctx: &SessionContext,
    station: Option<&str>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    as_of: Option<DateTime<Utc>>,
) -> Result<(Vec<Metar>, Vec<DailyReport>), LakeError> {
    let window = Window::new(station, from, to, as_of, false);
    let (obs, reports) = futures::try_join!(window.observations(ctx), window.reports(ctx))?;
    Ok((records(obs), records(reports)))
}

/// The parameters of one [`load_window`] call and the constant SQL fragments that use them.
struct Window {
    station: Option<String>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    as_of: Option<DateTime<Utc>>,
    /// The `date` partitions the window touches, listed so the scan skips every other one.
    dates: Vec<NaiveDate>,
    /// Whether the rows' `available_at` is read too (else every record is stamped
    /// `MAX_UTC` and the column is not read).
    stamped: bool,
    /// Whether observations and one-minute rows come sorted by time.
    by_time: bool,
    /// Observations and one-minute rows known at most this long after their time only
    /// ([`load_replay_window`]).
    known_within: Option<Duration>,
}

impl Window {
    fn new(
        station: Option<&str>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        as_of: Option<DateTime<Utc>>,
        stamped: bool,
    ) -> Self {
        let dates = date_list(from.date_naive(), to.date_naive());
        Window {
            station: station.map(str::to_string),
            from,
            to,
            as_of,
            dates,
            stamped,
            by_time: true,
            known_within: None,
        }
    }

    /// The last selected column: the stamp when it is read.
    fn stamp_column(&self) -> &'static str {
        if self.stamped {
            ", available_at"
        } else {
            ""
        }
    }

    /// `$d0, $d1, ...`: one placeholder per partition date.
    fn date_placeholders(&self) -> String {
        (0..self.dates.len()).map(|i| format!("$d{i}")).collect::<Vec<_>>().join(",")
    }

    /// The station's and the time's filters, common to the three tables.
    fn station_filter(&self) -> &'static str {
        match (self.station.is_some(), self.as_of.is_some()) {
            (true, true) => " AND station_code = $station AND available_at <= $as_of",
            (true, false) => " AND station_code = $station",
            (false, true) => " AND available_at <= $as_of",
            (false, false) => "",
        }
    }

    /// The filter of the two time-stamped tables (observations, one-minute), and their order.
    fn time_filter(&self) -> String {
        format!(
            "date IN ({}) AND observation_time >= $from AND observation_time < $to{}{}{}",
            self.date_placeholders(),
            self.station_filter(),
            match self.known_within {
                Some(d) => format!(" AND available_at <= observation_time + INTERVAL '{} seconds'", d.num_seconds()),
                None => String::new(),
            },
            if self.by_time { " ORDER BY observation_time" } else { "" }
        )
    }

    /// Every parameter any of the three queries uses (a query ignores those it does not name).
    fn params(&self) -> Vec<(String, ScalarValue)> {
        let utc = || Some("UTC".into());
        let date32 = |d: NaiveDate| ScalarValue::Date32(Some(Date32Type::from_naive_date(d)));
        let mut all = vec![
            ("from".to_string(), ScalarValue::TimestampMicrosecond(Some(self.from.timestamp_micros()), utc())),
            ("to".to_string(), ScalarValue::TimestampMicrosecond(Some(self.to.timestamp_micros()), utc())),
            ("first_report".to_string(), date32((self.from - Duration::days(1)).date_naive())),
            ("last_report".to_string(), date32(self.to.date_naive())),
        ];
        all.extend(
            self.dates.iter().enumerate().map(|(i, d)| (format!("d{i}"), ScalarValue::Utf8(Some(d.to_string())))),
        );
        if let Some(s) = &self.station {
            all.push(("station".to_string(), ScalarValue::Utf8(Some(s.clone()))));
        }
        if let Some(t) = self.as_of {
            all.push(("as_of".to_string(), ScalarValue::TimestampMicrosecond(Some(t.timestamp_micros()), utc())));
        }
        all
    }

    async fn query(&self, ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>, LakeError> {
        Ok(ctx.sql(sql).await?.with_param_values(self.params())?.collect().await?)
    }

    async fn observations(&self, ctx: &SessionContext) -> Result<Vec<Known<Metar>>, LakeError> {
        let sql = format!(
            "SELECT station_code, observation_time, report_type, raw{} FROM observations WHERE {}",
            self.stamp_column(),
            self.time_filter()
        );
        let mut obs = Vec::new();
        for b in self.query(ctx, &sql).await? {
            obs.extend(metars_of(&b, self.stamps(&b, 4)));
        }
        Ok(obs)
    }

    /// The observations as [`load_replay_window`] rebuilds them.
    async fn stored_observations(&self, ctx: &SessionContext) -> Result<Vec<Known<Metar>>, LakeError> {
        let sql = format!(
            "SELECT {}{} FROM observations WHERE {}",
            select_list(&STORED_OBSERVATION_COLUMNS),
            self.stamp_column(),
            self.time_filter()
        );
        let batches = self.query(ctx, &sql).await?;
        let mut obs = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
        for b in &batches {
            stored_metars(b, self.stamps(b, STORED_OBSERVATION_COLUMNS.len()), &mut obs);
        }
        Ok(obs)
    }

    async fn onemin(&self, ctx: &SessionContext) -> Result<Vec<Known<OneMinute>>, LakeError> {
        let sql = format!(
            "SELECT {}{} FROM onemin WHERE {}",
            select_list(&ONEMIN_COLUMNS),
            self.stamp_column(),
            self.time_filter()
        );
        let batches = self.query(ctx, &sql).await?;
        let mut onemin = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
        for b in &batches {
            onemin_of(b, self.stamps(b, ONEMIN_COLUMNS.len()), &mut onemin);
        }
        Ok(onemin)
    }

    async fn reports(&self, ctx: &SessionContext) -> Result<Vec<Known<DailyReport>>, LakeError> {
        let sql = format!(
            "SELECT {}{} FROM reports \
             WHERE report_date >= $first_report AND report_date <= $last_report{} ORDER BY report_date, issued_at",
            select_list(&REPORT_COLUMNS),
            self.stamp_column(),
            self.station_filter()
        );
        let mut reports = Vec::new();
        for b in self.query(ctx, &sql).await? {
            reports.extend(reports_of(&b, self.stamps(&b, REPORT_COLUMNS.len())));
        }
        Ok(reports)
    }

    /// Row `i`'s stamp: column `c` when stamps are read.
    fn stamps<'a>(&self, b: &'a RecordBatch, c: usize) -> impl Fn(usize) -> DateTime<Utc> + 'a {
        stamps_of(b, self.stamped.then_some(c))
    }
}

/// Row `i`'s stamp: column `c`'s `available_at`, or never known without one.
fn stamps_of(b: &RecordBatch, c: Option<usize>) -> impl Fn(usize) -> DateTime<Utc> + '_ {
    let column = c.map(|c| b.column(c).as_primitive::<TimestampMicrosecondType>());
    move |i| {
        column
            .filter(|a| a.is_valid(i))
            .and_then(|a| DateTime::from_timestamp_micros(a.value(i)))
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }
}

/// One-minute readings from their columns ([`ONEMIN_COLUMNS`]).
fn onemin_of(b: &RecordBatch, known: impl Fn(usize) -> DateTime<Utc>, out: &mut Vec<Known<OneMinute>>) {
    let (s, t, f) = (
        b.column(0).as_string::<i32>(),
        b.column(1).as_primitive::<TimestampMicrosecondType>(),
        b.column(2).as_primitive::<Float64Type>(),
    );
    out.extend((0..b.num_rows()).filter_map(|i| {
        let time = DateTime::from_timestamp_micros(t.value(i))?;
        Some((OneMinute { station: s.value(i).to_string(), time, temp_f: f.is_valid(i).then(|| f.value(i)) }, known(i)))
    }));
}

fn date_list(from: NaiveDate, to: NaiveDate) -> Vec<NaiveDate> {
    let mut d = from;
    let mut out = Vec::new();
    while d <= to {
        out.push(d);
        d = d.succ_opt().unwrap_or(to + Duration::days(1));
    }
    out
}

fn metars_of(b: &RecordBatch, known: impl Fn(usize) -> DateTime<Utc>) -> Vec<Known<Metar>> {
    let (_s, t, k, raw) = (
        b.column(0).as_string::<i32>(),
        b.column(1).as_primitive::<TimestampMicrosecondType>(),
        b.column(2).as_string::<i32>(),
        b.column(3).as_string::<i32>(),
    );
    (0..b.num_rows())
        .filter_map(|i| {
            let time = DateTime::from_timestamp_micros(t.value(i))?;
            let mut m = parse_metar(raw.value(i), time).ok()?;
            m.time = time;
            m.kind = ReportKind::parse(k.value(i));
            Some((m, known(i)))
        })
        .collect()
}

/// Observations from their stored columns ([`load_replay_window`]). The temperature comes
/// back in the form [`Metar::temperature_c`] and [`Metar::has_tenths`] read: real tenths as
/// a T-group; else the whole degrees, or a whole-valued T-group when the body had none.
fn stored_metars(b: &RecordBatch, known: impl Fn(usize) -> DateTime<Utc>, out: &mut Vec<Known<Metar>>) {
    let (s, t, k, cor) = (
        b.column(0).as_string::<i32>(),
        b.column(1).as_primitive::<TimestampMicrosecondType>(),
        b.column(2).as_string::<i32>(),
        b.column(3).as_boolean(),
    );
    let (tenths, whole) = (b.column(5).as_boolean(), b.column(6).as_primitive::<Int32Type>());
    // The temperature, then the 6- and 24-hour groups (max, min each).
    let [temp, six_max, six_min, day_max, day_min] =
        [4, 7, 8, 9, 10].map(|c| b.column(c).as_primitive::<Float64Type>());
    let f = |a: &PrimitiveArray<Float64Type>, i: usize| a.is_valid(i).then(|| a.value(i));
    out.extend((0..b.num_rows()).filter_map(|i| {
        let time = DateTime::from_timestamp_micros(t.value(i))?;
        let temperature = f(temp, i);
        let temp_whole_c = whole.is_valid(i).then(|| whole.value(i));
        let tenths = tenths.value(i);
        let whole_tgroup = !tenths && temp_whole_c.is_none();
        let m = Metar {
            station: s.value(i).to_string(),
            time,
            kind: ReportKind::parse(k.value(i)),
            cor: cor.value(i),
            temp_whole_c,
            tgroup_temp_c: temperature.filter(|_| tenths || whole_tgroup),
            tgroup_is_whole: whole_tgroup && temperature.is_some(),
            six_hour_max_c: f(six_max, i),
            six_hour_min_c: f(six_min, i),
            day_max_c: f(day_max, i),
            day_min_c: f(day_min, i),
            ..Metar::default()
        };
        Some((m, known(i)))
    }));
}

fn reports_of(b: &RecordBatch, known: impl Fn(usize) -> DateTime<Utc>) -> Vec<Known<DailyReport>> {
    let s = |c: usize| b.column(c).as_string::<i32>();
    let ts = |c: usize| b.column(c).as_primitive::<TimestampMicrosecondType>();
    let i32c = |c: usize| b.column(c).as_primitive::<Int32Type>();
    let f64c = |c: usize| b.column(c).as_primitive::<Float64Type>();
    let boolc = |c: usize| b.column(c).as_boolean();
    let opt_ts = |c: usize, i: usize| ts(c).is_valid(i).then(|| ts(c).value(i));
    let naive = |v: Option<i64>| v.and_then(DateTime::from_timestamp_micros).map(|d| d.naive_utc());
    let date = b.column(2).as_primitive::<Date32Type>();
    (0..b.num_rows())
        .filter_map(|i| {
            let kind = match s(0).value(i) {
                "cli" => DailyKind::Cli,
                "dsm" => DailyKind::Dsm,
                _ => return None,
            };
            Some((
                DailyReport {
                    kind,
                    station: s(1).value(i).to_string(),
                    date: Date32Type::to_naive_date_opt(date.value(i))?,
                    issued_at: opt_ts(3, i).and_then(DateTime::from_timestamp_micros),
                    max_f: i32c(4).is_valid(i).then(|| i32c(4).value(i)),
                    max_time_lst: naive(opt_ts(5, i)),
                    min_f: i32c(6).is_valid(i).then(|| i32c(6).value(i)),
                    min_time_lst: naive(opt_ts(7, i)),
                    precip_in: f64c(8).is_valid(i).then(|| f64c(8).value(i)),
                    precip_trace: boolc(9).value(i),
                    precip_mtd_in: f64c(10).is_valid(i).then(|| f64c(10).value(i)),
                    precip_mtd_trace: boolc(11).value(i),
                    is_final: boolc(12).value(i),
                    valid_as_of_lst: naive(opt_ts(13, i)),
                    correction: boolc(14).value(i),
                    raw: s(15).value(i).to_string(),
                },
                known(i),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::lake::{query, Lake};

    /// Station codes are bound, never spliced: a code that would change the statement if it
    /// were pasted into the SQL text finds no rows and raises no planner error.
    #[tokio::test]
    async fn station_codes_are_bound_not_spliced() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&format!("file://{}", dir.path().display())).await.unwrap();
        let at = |h: u32| Utc.with_ymd_and_hms(2026, 3, 8, h, 51, 0).unwrap();
        let metars: Vec<Metar> = (10..14)
            .map(|h| parse_metar(&format!("KNYC 08{h:02}51Z AUTO 27008KT 10SM CLR 05/M02 A3012"), at(h)).unwrap())
            .collect();
        lake.write(metars).await.unwrap();
        let ctx = query::session(&lake).await.unwrap();
        let (from, to) = (at(0), at(23));

        let (obs, onemin, reports) = load_window(&ctx, Some("KNYC"), from, to, None).await.unwrap();
        assert_eq!((obs.len(), onemin.len(), reports.len()), (4, 0, 0));
        assert_eq!(load_window(&ctx, None, from, to, None).await.unwrap().0.len(), 4);
        assert_eq!(load_window(&ctx, Some("KNYC"), at(11), at(13), None).await.unwrap().0.len(), 2, "[from, to)");

        for hostile in
            ["KNYC' OR '1'='1", "KNYC'--", "KNYC' OR 1=1 --", "KNYC'; DROP TABLE observations; --", "x;y", "'"]
        {
            let (obs, onemin, reports) = load_window(&ctx, Some(hostile), from, to, None)
                .await
                .unwrap_or_else(|e| panic!("{hostile:?} reached the planner: {e}"));
            assert!(obs.is_empty() && onemin.is_empty() && reports.is_empty(), "{hostile:?} matched rows");
        }
        assert_eq!(load_window(&ctx, Some("KNYC"), from, to, None).await.unwrap().0.len(), 4, "the table is intact");
    }

    /// The replay read gives back, from the stored columns, what the extremes engine reads
    /// of each real report, exactly as parsing its text again does: KLNK's LCD month (T-groups,
    /// 6- and 24-hour groups), a KCVG day from IEM (five-minute HF-METARs with whole-degree T-groups,
    /// specials), and WSSS (whole °C, no T-group).
    #[tokio::test]
    async fn the_replay_read_gives_the_engine_what_parsing_gives() {
        use crate::decode::metar::temperature_fields;
        use crate::decode::metar_container::decode_metar_input_at;
        use crate::decode::types::fixture;

        let now = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
        let files = [
            "lcd/LCD_KLNK_USW00014939_2023-01-01_2023-02-26_metric.csv",
            "metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv",
            "metar/IEM_KCVG_2024-03-01_specials.tsv",
            "metar/WSSS_2025-12-05_2026-01-18_scraped.csv",
        ];
        let mut kinds = (0, 0, 0);
        for file in files {
            let metars = decode_metar_input_at(&fixture(file), None, now).records;
            let (from, to) =
                metars.iter().fold((now, DateTime::<Utc>::MIN_UTC), |(a, b), m| (a.min(m.time), b.max(m.time)));
            let dir = tempfile::tempdir().unwrap();
            let lake = Lake::open(&format!("file://{}", dir.path().display())).await.unwrap();
            lake.write(metars).await.unwrap();
            let ctx = query::session(&lake).await.unwrap();
            let to = to + Duration::seconds(1);
            // One row per station, time and report type (the table's latest version); the
            // replay read's rows come in no order.
            let by_key = |mut rows: Vec<Known<Metar>>| {
                rows.sort_by(|(a, _), (b, _)| {
                    (&a.station, a.time, a.kind.map(|k| k.as_str())).cmp(&(
                        &b.station,
                        b.time,
                        b.kind.map(|k| k.as_str()),
                    ))
                });
                rows
            };
            let parsed = by_key(load_known_window(&ctx, from, to).await.unwrap().0);
            let stored = by_key(load_replay_window(&ctx, from, to, None).await.unwrap().0);
            assert!(!parsed.is_empty(), "{file}: no rows");
            assert_eq!(parsed.len(), stored.len(), "{file}");
            for ((p, p_at), (s, s_at)) in parsed.iter().zip(&stored) {
                let engine = |m: &Metar| {
                    let groups = (m.six_hour_max_c, m.six_hour_min_c, m.day_max_c, m.day_min_c);
                    let temp = (m.temperature_c(), m.has_tenths(), temperature_fields(m));
                    (m.station.clone(), m.time, m.kind, m.cor, temp, groups)
                };
                assert_eq!(engine(p), engine(s), "{file}: {}", p.raw);
                assert_eq!(p_at, s_at);
                kinds.0 += usize::from(p.has_tenths());
                kinds.1 += usize::from(p.tgroup_is_whole);
                kinds.2 += usize::from(p.day_max_c.is_some());
            }
        }
        // Each form of temperature and the groups were met.
        assert!(kinds.0 > 100 && kinds.1 > 0 && kinds.2 > 10, "{kinds:?}");
    }
}
