//! Decoded records → Arrow rows of the lake tables. Each record type knows its table,
//! partition, natural key and sort key; the batch builders fill every column of the
//! table's schema in order (schema.rs is the single source of the column list).

use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Utc};
use datafusion::arrow::array::{
    new_null_array, ArrayRef, BooleanBuilder, Date32Builder, Float64Builder, Int32Builder, RecordBatch, StringBuilder,
    TimestampMicrosecondBuilder, UInt64Builder,
};
use datafusion::arrow::error::ArrowError;

use super::availability;
use super::keys::{forecast_key, version_key};
use super::schema::{KeyHasher, TableDef, DAILY_FORECASTS, FORECASTS, NWS_HOURLY, OBSERVATIONS, ONEMIN, REPORTS};
use crate::catalog::{lst_to_utc, Catalog};
use crate::decode::metar::{report_body, temperature_fields};
use crate::decode::swar::load_le;
use crate::decode::types::{DailyForecast, DailyReport, ForecastRow, Metar, NwsHourlyPeriod, OneMinute};
use crate::time::{DateMemo, DayClock};
use crate::units::relative_humidity;

/// A record that can be stored in a lake table.
pub trait LakeRecord: Send + Sync {
    /// The table it goes to.
    fn table() -> &'static TableDef;
    /// Hive partition path segment(s), e.g. `date=2024-03-01`.
    fn partition(&self) -> String;
    /// A cheap, allocation-free identity of the partition (equal for rows of one
    /// partition): grouping ten million rows must not format ten million strings.
    fn partition_key(&self) -> u64;
    /// Hash of the natural key (schema.rs `key_cols`).
    fn row_key(&self) -> u64;
    /// The table's sort columns of this row: files are ordered by it (then by `row_key`
    /// to be total). Borrowed, so the writer sorts compact keys instead of chasing rows.
    type SortKey<'a>: Ord
    where
        Self: 'a;
    fn sort_key(&self) -> Self::SortKey<'_>;
    /// When the source published it (`lake::availability`): the `available_at` of a
    /// backfilled row, bounded by when wxlake received it. `None`: unknown.
    fn published_at(&self) -> Option<DateTime<Utc>>;
    /// Whether [`published_at`](Self::published_at) is the row's own statement of when it
    /// became known, so it is the `available_at` of a live row too (a daily forecast's
    /// `issued_at`), still never after wxlake received it. Else a live row is known when
    /// received.
    fn states_its_availability() -> bool {
        false
    }
    /// The `row_key` this row gets when its natural key is stored with other values: a
    /// version of a re-published fact, for a table that keeps them
    /// ([`Versions::Superseded`](super::schema::Versions::Superseded), `lake::versions`).
    /// Other tables never ask.
    fn version_key(&self) -> u64 {
        self.row_key()
    }
    /// Builds a batch of the table's file schema from rows already sorted.
    fn to_batch(rows: &[&Self], keys: &[u64], times: RowTimes) -> Result<RecordBatch, ArrowError>;
}

/// A string sort key ordered exactly as `&str`, that settles comparisons of strings up to
/// eight bytes (station codes) on an inline integer: sorting millions of rows by station
/// otherwise spends its time in `memcmp` calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrKey<'a> {
    /// The first eight bytes, big-endian, zero-padded: integer order is byte order.
    prefix: u64,
    s: &'a str,
}

impl<'a> StrKey<'a> {
    pub fn new(s: &'a str) -> Self {
        // Byte 0 becomes the most significant (`load_le` pads with zeros, which land low).
        StrKey { prefix: load_le(s.as_bytes()).swap_bytes(), s }
    }
}

impl Ord for StrKey<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.prefix.cmp(&other.prefix).then_with(|| {
            if self.s.len() <= 8 && other.s.len() <= 8 {
                // Equal padded prefixes: the strings agree up to the shorter one's end and
                // the longer one goes on with NULs, so the shorter sorts first.
                self.s.len().cmp(&other.s.len())
            } else {
                self.s.cmp(other.s)
            }
        })
    }
}

impl PartialOrd for StrKey<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Days since the epoch of a UTC instant (the `date=` partitions).
fn utc_day(t: DateTime<Utc>) -> u64 {
    t.timestamp().div_euclid(86_400) as u64
}

fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}
fn naive_micros(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp_micros()
}
/// Days since the Unix epoch, Arrow's Date32.
pub fn date32(d: NaiveDate) -> i32 {
    d.num_days_from_ce() - UNIX_EPOCH_DAYS_FROM_CE
}

/// `NaiveDate::num_days_from_ce` of 1970-01-01.
const UNIX_EPOCH_DAYS_FROM_CE: i32 = 719_163;
fn ts_builder(n: usize) -> TimestampMicrosecondBuilder {
    TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC")
}
/// The `local_date_standard` / `local_date_civil` columns of rows sorted by station then
/// time: the station is looked up once per run of its rows and the dates come from
/// [`DateMemo`]s. Unknown stations get nulls (no guessed zones).
#[derive(Default)]
struct LocalDates<'a> {
    station: Option<&'a str>,
    memos: Option<(DateMemo, DateMemo)>,
}

impl<'a> LocalDates<'a> {
    fn get(&mut self, station: &'a str, t: DateTime<Utc>) -> (Option<i32>, Option<i32>) {
        if self.station != Some(station) {
            self.station = Some(station);
            self.memos = Catalog::global()
                .get(station)
                .map(|s| (DateMemo::new(s.timezone, DayClock::Standard), DateMemo::new(s.timezone, DayClock::Civil)));
        }
        match &mut self.memos {
            Some((std, civil)) => (Some(date32(std.date(t))), Some(date32(civil.date(t)))),
            None => (None, None),
        }
    }
}
/// The times of a batch's rows, in its order: one `inserted_at` for the write, and each
/// row's `received_at` and `available_at` (`lake::availability`), microseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowTimes {
    pub inserted_at: i64,
    pub received_at: Vec<i64>,
    pub available_at: Vec<i64>,
}

impl RowTimes {
    /// Rows all received at `received` and known then (live rows).
    pub fn live(n: usize, inserted_at: DateTime<Utc>, received: DateTime<Utc>) -> Self {
        let r = micros(received);
        RowTimes { inserted_at: micros(inserted_at), received_at: vec![r; n], available_at: vec![r; n] }
    }

    /// The three time columns, which end every table's schema (the vectors move into
    /// them: a write does not copy them).
    fn into_columns(self) -> [ArrayRef; 3] {
        let utc = |v: Vec<i64>| -> ArrayRef {
            Arc::new(datafusion::arrow::array::TimestampMicrosecondArray::from(v).with_timezone("UTC"))
        };
        let n = self.received_at.len();
        [utc(vec![self.inserted_at; n]), utc(self.received_at), utc(self.available_at)]
    }
}

fn finish(table: &TableDef, mut cols: Vec<ArrayRef>, times: RowTimes) -> Result<RecordBatch, ArrowError> {
    let n = times.received_at.len();
    cols.extend(times.into_columns());
    let schema = table.file_schema();
    // A column after the times (forecasts' `superseded_at`) is NULL in a new row: it is
    // current.
    let rest = schema.fields().get(cols.len()..).unwrap_or_default();
    let nulls: Vec<ArrayRef> = rest.iter().map(|f| new_null_array(f.data_type(), n)).collect();
    cols.extend(nulls);
    RecordBatch::try_new(schema, cols)
}
fn opt_i32(v: Option<u16>) -> Option<i32> {
    v.map(i32::from)
}

impl LakeRecord for Metar {
    fn table() -> &'static TableDef {
        &OBSERVATIONS
    }
    fn partition(&self) -> String {
        format!("date={}", self.time.format("%Y-%m-%d"))
    }
    fn partition_key(&self) -> u64 {
        utc_day(self.time)
    }
    fn row_key(&self) -> u64 {
        observation_key(&self.station, micros(self.time), report_type(self), &self.raw)
    }
    type SortKey<'a> = (&'a str, DateTime<Utc>, &'static str, &'a str);
    fn sort_key(&self) -> Self::SortKey<'_> {
        (&self.station, self.time, report_type(self), &self.raw)
    }
    fn published_at(&self) -> Option<DateTime<Utc>> {
        Some(availability::observation(self.time, report_type(self), self.cor, self.receipt_time))
    }
    fn to_batch(rows: &[&Self], keys: &[u64], times: RowTimes) -> Result<RecordBatch, ArrowError> {
        let n = rows.len();
        let mut station = StringBuilder::with_capacity(n, n * 4);
        let mut time = ts_builder(n);
        let mut kind = StringBuilder::with_capacity(n, n * 5);
        let mut temp = Float64Builder::with_capacity(n);
        let mut tenths = BooleanBuilder::with_capacity(n);
        let mut whole = Int32Builder::with_capacity(n);
        let mut dew = Float64Builder::with_capacity(n);
        let (mut lo, mut hi, mut prec) =
            (Int32Builder::with_capacity(n), Int32Builder::with_capacity(n), Int32Builder::with_capacity(n));
        let mut rh = Float64Builder::with_capacity(n);
        let mut wdir = Int32Builder::with_capacity(n);
        let mut wvrb = BooleanBuilder::with_capacity(n);
        let (mut wspd, mut wgst) = (Float64Builder::with_capacity(n), Float64Builder::with_capacity(n));
        let (mut vfrom, mut vto) = (Int32Builder::with_capacity(n), Int32Builder::with_capacity(n));
        let mut vis = Float64Builder::with_capacity(n);
        let mut vis_lt = BooleanBuilder::with_capacity(n);
        let (mut alt, mut slp) = (Float64Builder::with_capacity(n), Float64Builder::with_capacity(n));
        let (mut s6hi, mut s6lo) = (Float64Builder::with_capacity(n), Float64Builder::with_capacity(n));
        let (mut d24hi, mut d24lo) = (Float64Builder::with_capacity(n), Float64Builder::with_capacity(n));
        let mut p1 = Float64Builder::with_capacity(n);
        let mut ptr = BooleanBuilder::with_capacity(n);
        let (mut p6, mut p24) = (Float64Builder::with_capacity(n), Float64Builder::with_capacity(n));
        let (mut auto, mut cor) = (BooleanBuilder::with_capacity(n), BooleanBuilder::with_capacity(n));
        let (mut lds, mut ldc) = (Date32Builder::with_capacity(n), Date32Builder::with_capacity(n));
        let mut raw = StringBuilder::with_capacity(n, n * 90);
        let mut key = UInt64Builder::with_capacity(n);
        let mut dates = LocalDates::default();
        for (m, k) in rows.iter().zip(keys) {
            station.append_value(&m.station);
            time.append_value(micros(m.time));
            kind.append_value(report_type(m));
            let t = m.temperature_c();
            temp.append_option(t);
            tenths.append_value(m.has_tenths());
            whole.append_option(m.temp_whole_c);
            let td = m.dew_point_c();
            dew.append_option(td);
            let p = temperature_fields(m);
            lo.append_option(p.map(|p| p.lowest_f));
            hi.append_option(p.map(|p| p.highest_f));
            prec.append_option(p.map(|p| p.precision_level));
            rh.append_option(t.zip(td).map(|(t, td)| relative_humidity(t, td)));
            wdir.append_option(opt_i32(m.wind_dir_deg));
            wvrb.append_value(m.wind_variable);
            wspd.append_option(m.wind_speed_kt);
            wgst.append_option(m.wind_gust_kt);
            vfrom.append_option(opt_i32(m.wind_var_from));
            vto.append_option(opt_i32(m.wind_var_to));
            vis.append_option(m.visibility_sm);
            vis_lt.append_value(m.visibility_less_than);
            alt.append_option(m.altimeter_hpa);
            slp.append_option(m.sea_level_pressure_hpa);
            s6hi.append_option(m.six_hour_max_c);
            s6lo.append_option(m.six_hour_min_c);
            d24hi.append_option(m.day_max_c);
            d24lo.append_option(m.day_min_c);
            p1.append_option(m.precip_hour_in);
            ptr.append_value(m.precip_trace);
            p6.append_option(m.precip_6h_in);
            p24.append_option(m.precip_24h_in);
            auto.append_value(m.auto);
            cor.append_value(m.cor);
            let (s, c) = dates.get(&m.station, m.time);
            lds.append_option(s);
            ldc.append_option(c);
            raw.append_value(&m.raw);
            key.append_value(*k);
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(station.finish()),
            Arc::new(time.finish()),
            Arc::new(kind.finish()),
            Arc::new(temp.finish()),
            Arc::new(tenths.finish()),
            Arc::new(whole.finish()),
            Arc::new(dew.finish()),
            Arc::new(lo.finish()),
            Arc::new(hi.finish()),
            Arc::new(prec.finish()),
            Arc::new(rh.finish()),
            Arc::new(wdir.finish()),
            Arc::new(wvrb.finish()),
            Arc::new(wspd.finish()),
            Arc::new(wgst.finish()),
            Arc::new(vfrom.finish()),
            Arc::new(vto.finish()),
            Arc::new(vis.finish()),
            Arc::new(vis_lt.finish()),
            Arc::new(alt.finish()),
            Arc::new(slp.finish()),
            Arc::new(s6hi.finish()),
            Arc::new(s6lo.finish()),
            Arc::new(d24hi.finish()),
            Arc::new(d24lo.finish()),
            Arc::new(p1.finish()),
            Arc::new(ptr.finish()),
            Arc::new(p6.finish()),
            Arc::new(p24.finish()),
            Arc::new(auto.finish()),
            Arc::new(cor.finish()),
            Arc::new(lds.finish()),
            Arc::new(ldc.finish()),
            Arc::new(raw.finish()),
            Arc::new(key.finish()),
        ];
        finish(&OBSERVATIONS, cols, times)
    }
}

/// The stored report type; a report with no keyword is a routine METAR.
/// The `row_key` of an observation: station, time (µs), report type and the report's body,
/// not its raw text, so one report is one row whichever source wrapped it (a body without
/// wrapper hashes exactly as the raw text did before, so such stored keys stay valid;
/// compaction recomputes the others, see `lake::compact`).
pub fn observation_key(station: &str, time_micros: i64, report_type: &str, raw: &str) -> u64 {
    KeyHasher::default().str(station).i64(time_micros).str(report_type).str(&report_body(raw)).finish()
}

pub fn report_type(m: &Metar) -> &'static str {
    m.kind.map(|k| k.as_str()).unwrap_or("METAR")
}

impl LakeRecord for OneMinute {
    fn table() -> &'static TableDef {
        &ONEMIN
    }
    fn partition(&self) -> String {
        format!("date={}", self.time.format("%Y-%m-%d"))
    }
    fn partition_key(&self) -> u64 {
        utc_day(self.time)
    }
    fn row_key(&self) -> u64 {
        KeyHasher::default().str(&self.station).i64(micros(self.time)).finish()
    }
    type SortKey<'a> = (StrKey<'a>, i64);
    fn sort_key(&self) -> Self::SortKey<'_> {
        (StrKey::new(&self.station), micros(self.time))
    }
    fn published_at(&self) -> Option<DateTime<Utc>> {
        Some(availability::onemin(self.time))
    }
    fn to_batch(rows: &[&Self], keys: &[u64], times: RowTimes) -> Result<RecordBatch, ArrowError> {
        let n = rows.len();
        let mut station = StringBuilder::with_capacity(n, n * 4);
        let mut time = ts_builder(n);
        let mut temp = Float64Builder::with_capacity(n);
        let mut missing = BooleanBuilder::with_capacity(n);
        let (mut lds, mut ldc) = (Date32Builder::with_capacity(n), Date32Builder::with_capacity(n));
        let mut key = UInt64Builder::with_capacity(n);
        let mut dates = LocalDates::default();
        for (r, k) in rows.iter().zip(keys) {
            station.append_value(&r.station);
            time.append_value(micros(r.time));
            temp.append_option(r.temp_f);
            missing.append_value(r.temp_f.is_none());
            let (s, c) = dates.get(&r.station, r.time);
            lds.append_option(s);
            ldc.append_option(c);
            key.append_value(*k);
        }
        finish(
            &ONEMIN,
            vec![
                Arc::new(station.finish()),
                Arc::new(time.finish()),
                Arc::new(temp.finish()),
                Arc::new(missing.finish()),
                Arc::new(lds.finish()),
                Arc::new(ldc.finish()),
                Arc::new(key.finish()),
            ],
            times,
        )
    }
}

impl LakeRecord for DailyReport {
    fn table() -> &'static TableDef {
        &REPORTS
    }
    fn partition(&self) -> String {
        format!("kind={}", self.kind.as_str())
    }
    fn partition_key(&self) -> u64 {
        self.kind as u64
    }
    fn row_key(&self) -> u64 {
        KeyHasher::default()
            .str(self.kind.as_str())
            .str(&self.station)
            .i64(i64::from(date32(self.date)))
            .str(&self.raw)
            .finish()
    }
    type SortKey<'a> = (&'a str, NaiveDate, Option<DateTime<Utc>>, &'a str);
    fn sort_key(&self) -> Self::SortKey<'_> {
        (&self.station, self.date, self.issued_at, &self.raw)
    }
    fn published_at(&self) -> Option<DateTime<Utc>> {
        let (station, date) = (self.station.as_str(), self.date);
        Some(availability::report(station, date, self.issued_at, self.valid_as_of_lst, self.correction))
    }
    fn to_batch(rows: &[&Self], keys: &[u64], times: RowTimes) -> Result<RecordBatch, ArrowError> {
        let n = rows.len();
        let mut station = StringBuilder::with_capacity(n, n * 4);
        let mut date = Date32Builder::with_capacity(n);
        let mut issued = ts_builder(n);
        let (mut hi, mut lo) = (Int32Builder::with_capacity(n), Int32Builder::with_capacity(n));
        let mut hi_lst = TimestampMicrosecondBuilder::with_capacity(n);
        let mut lo_lst = TimestampMicrosecondBuilder::with_capacity(n);
        let (mut hi_utc, mut lo_utc) = (ts_builder(n), ts_builder(n));
        let (mut p, mut pmtd) = (Float64Builder::with_capacity(n), Float64Builder::with_capacity(n));
        let (mut ptr, mut pmtr) = (BooleanBuilder::with_capacity(n), BooleanBuilder::with_capacity(n));
        let mut fin = BooleanBuilder::with_capacity(n);
        let mut vao = TimestampMicrosecondBuilder::with_capacity(n);
        let mut corr = BooleanBuilder::with_capacity(n);
        let mut raw = StringBuilder::with_capacity(n, n * 2000);
        let mut key = UInt64Builder::with_capacity(n);
        for (r, k) in rows.iter().zip(keys) {
            station.append_value(&r.station);
            date.append_value(date32(r.date));
            issued.append_option(r.issued_at.map(micros));
            hi.append_option(r.max_f);
            lo.append_option(r.min_f);
            hi_lst.append_option(r.max_time_lst.map(naive_micros));
            lo_lst.append_option(r.min_time_lst.map(naive_micros));
            hi_utc.append_option(r.max_time_lst.and_then(|t| lst_to_utc(&r.station, t)).map(micros));
            lo_utc.append_option(r.min_time_lst.and_then(|t| lst_to_utc(&r.station, t)).map(micros));
            p.append_option(r.precip_in);
            ptr.append_value(r.precip_trace);
            pmtd.append_option(r.precip_mtd_in);
            pmtr.append_value(r.precip_mtd_trace);
            fin.append_value(r.is_final);
            vao.append_option(r.valid_as_of_lst.map(naive_micros));
            corr.append_value(r.correction);
            raw.append_value(&r.raw);
            key.append_value(*k);
        }
        finish(
            &REPORTS,
            vec![
                Arc::new(station.finish()),
                Arc::new(date.finish()),
                Arc::new(issued.finish()),
                Arc::new(hi.finish()),
                Arc::new(hi_lst.finish()),
                Arc::new(hi_utc.finish()),
                Arc::new(lo.finish()),
                Arc::new(lo_lst.finish()),
                Arc::new(lo_utc.finish()),
                Arc::new(p.finish()),
                Arc::new(ptr.finish()),
                Arc::new(pmtd.finish()),
                Arc::new(pmtr.finish()),
                Arc::new(fin.finish()),
                Arc::new(vao.finish()),
                Arc::new(corr.finish()),
                Arc::new(raw.finish()),
                Arc::new(key.finish()),
            ],
            times,
        )
    }
}

impl LakeRecord for ForecastRow {
    fn table() -> &'static TableDef {
        &FORECASTS
    }
    fn partition(&self) -> String {
        format!("model={}/run_date={}", self.model, self.run_time.format("%Y-%m-%d"))
    }
    fn partition_key(&self) -> u64 {
        KeyHasher::default().str(self.model).i64(utc_day(self.run_time) as i64).finish()
    }
    fn row_key(&self) -> u64 {
        forecast_key(self.model, &self.location_name, micros(self.run_time), micros(self.valid_time))
    }
    fn version_key(&self) -> u64 {
        let floats = self.floats();
        version_key(self.row_key(), floats[2..].iter().map(|v| v.get()), [self.wind_direction_deg, self.weather_code])
    }
    type SortKey<'a> = (StrKey<'a>, i64, i64);
    fn sort_key(&self) -> Self::SortKey<'_> {
        (StrKey::new(&self.location_name), micros(self.run_time), micros(self.valid_time))
    }
    fn published_at(&self) -> Option<DateTime<Utc>> {
        availability::forecast(self.model, self.run_time, self.published_after_s)
    }
    fn to_batch(rows: &[&Self], keys: &[u64], times: RowTimes) -> Result<RecordBatch, ArrowError> {
        let n = rows.len();
        let mut loc = StringBuilder::with_capacity(n, n * 4);
        let (mut run, mut valid) = (ts_builder(n), ts_builder(n));
        let mut fh = Int32Builder::with_capacity(n);
        let mut floats: [Float64Builder; 19] = std::array::from_fn(|_| Float64Builder::with_capacity(n));
        let (mut wind_dir, mut weather) = (Int32Builder::with_capacity(n), Int32Builder::with_capacity(n));
        let (mut vds, mut vdc) = (Date32Builder::with_capacity(n), Date32Builder::with_capacity(n));
        let mut dates = LocalDates::default();
        // One pass over the rows (each ~240 bytes, touched once rather than once a column).
        for r in rows {
            loc.append_value(&r.location_name);
            run.append_value(micros(r.run_time));
            valid.append_value(micros(r.valid_time));
            fh.append_value(r.forecast_hour);
            for (b, v) in floats.iter_mut().zip(r.floats()) {
                b.append_option(v.get());
            }
            wind_dir.append_option(r.wind_direction_deg);
            weather.append_option(r.weather_code);
            let (s, c) = dates.get(&r.location_name, r.valid_time);
            vds.append_option(s);
            vdc.append_option(c);
        }
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(29);
        cols.push(Arc::new(loc.finish()));
        cols.push(Arc::new(run.finish()));
        cols.push(Arc::new(valid.finish()));
        cols.push(Arc::new(fh.finish()));
        // Schema order: the floats with wind_direction_deg after the 12th and
        // weather_code after the 17th.
        let mut floats = floats.into_iter().map(|mut b| Arc::new(b.finish()) as ArrayRef);
        cols.extend(floats.by_ref().take(12));
        cols.push(Arc::new(wind_dir.finish()));
        cols.extend(floats.by_ref().take(5));
        cols.push(Arc::new(weather.finish()));
        cols.extend(floats);
        cols.push(Arc::new(vds.finish()));
        cols.push(Arc::new(vdc.finish()));
        let mut key = UInt64Builder::with_capacity(n);
        keys.iter().for_each(|k| key.append_value(*k));
        cols.push(Arc::new(key.finish()));
        finish(&FORECASTS, cols, times)
    }
}

/// One period of one NWS hourly forecast version, flattened for storage.
#[derive(Debug, Clone, PartialEq)]
pub struct NwsHourlyRow {
    pub station: String,
    pub generated_at: DateTime<Utc>,
    pub period: NwsHourlyPeriod,
}

impl LakeRecord for NwsHourlyRow {
    fn table() -> &'static TableDef {
        &NWS_HOURLY
    }
    fn partition(&self) -> String {
        format!("date={}", self.generated_at.format("%Y-%m-%d"))
    }
    fn partition_key(&self) -> u64 {
        utc_day(self.generated_at)
    }
    fn row_key(&self) -> u64 {
        KeyHasher::default()
            .str(&self.station)
            .i64(micros(self.generated_at))
            .i64(micros(self.period.start_time))
            .finish()
    }
    type SortKey<'a> = (&'a str, DateTime<Utc>, DateTime<Utc>);
    fn sort_key(&self) -> Self::SortKey<'_> {
        (&self.station, self.generated_at, self.period.start_time)
    }
    fn published_at(&self) -> Option<DateTime<Utc>> {
        Some(availability::nws_hourly(self.generated_at))
    }
    fn to_batch(rows: &[&Self], keys: &[u64], times: RowTimes) -> Result<RecordBatch, ArrowError> {
        let n = rows.len();
        let mut station = StringBuilder::with_capacity(n, n * 4);
        let (mut gen, mut start, mut end) = (ts_builder(n), ts_builder(n), ts_builder(n));
        let mut temp = Float64Builder::with_capacity(n);
        let mut key = UInt64Builder::with_capacity(n);
        for (r, k) in rows.iter().zip(keys) {
            station.append_value(&r.station);
            gen.append_value(micros(r.generated_at));
            start.append_value(micros(r.period.start_time));
            end.append_value(micros(r.period.end_time));
            temp.append_value(r.period.temperature_f);
            key.append_value(*k);
        }
        finish(
            &NWS_HOURLY,
            vec![
                Arc::new(station.finish()),
                Arc::new(gen.finish()),
                Arc::new(start.finish()),
                Arc::new(end.finish()),
                Arc::new(temp.finish()),
                Arc::new(key.finish()),
            ],
            times,
        )
    }
}

impl LakeRecord for DailyForecast {
    fn table() -> &'static TableDef {
        &DAILY_FORECASTS
    }
    fn partition(&self) -> String {
        format!("source={}", self.source)
    }
    fn partition_key(&self) -> u64 {
        KeyHasher::default().str(&self.source).finish()
    }
    fn row_key(&self) -> u64 {
        KeyHasher::default()
            .str(&self.source)
            .str(&self.station)
            .i64(micros(self.issued_at))
            .i64(i64::from(date32(self.date)))
            .finish()
    }
    type SortKey<'a> = (&'a str, NaiveDate, DateTime<Utc>);
    fn sort_key(&self) -> Self::SortKey<'_> {
        (&self.station, self.date, self.issued_at)
    }
    fn published_at(&self) -> Option<DateTime<Utc>> {
        Some(self.issued_at)
    }
    fn states_its_availability() -> bool {
        true
    }
    fn to_batch(rows: &[&Self], keys: &[u64], times: RowTimes) -> Result<RecordBatch, ArrowError> {
        let n = rows.len();
        let mut station = StringBuilder::with_capacity(n, n * 4);
        let mut issued = ts_builder(n);
        let mut date = Date32Builder::with_capacity(n);
        let (mut high, mut low) = (Float64Builder::with_capacity(n), Float64Builder::with_capacity(n));
        let mut units = StringBuilder::with_capacity(n, n);
        let mut key = UInt64Builder::with_capacity(n);
        for (r, k) in rows.iter().zip(keys) {
            station.append_value(&r.station);
            issued.append_value(micros(r.issued_at));
            date.append_value(date32(r.date));
            high.append_option(r.high);
            low.append_option(r.low);
            units.append_value(if r.units == crate::units::Units::Fahrenheit { "f" } else { "c" });
            key.append_value(*k);
        }
        finish(
            &DAILY_FORECASTS,
            vec![
                Arc::new(station.finish()),
                Arc::new(issued.finish()),
                Arc::new(date.finish()),
                Arc::new(high.finish()),
                Arc::new(low.finish()),
                Arc::new(units.finish()),
                Arc::new(key.finish()),
            ],
            times,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::types::OptF64;

    #[test]
    fn forecast_batch_puts_every_number_in_its_column() {
        use datafusion::arrow::array::{Array, AsArray};
        use datafusion::arrow::datatypes::{DataType, Float64Type, Int32Type};
        let t = |h: i64| DateTime::from_timestamp(1_767_225_600 + h * 3600, 0).unwrap();
        // The schema's numeric columns, latitude .. surface_pressure_hpa.
        let schema = FORECASTS.file_schema();
        let names: Vec<&str> = schema
            .fields()
            .iter()
            .filter(|f| matches!(f.data_type(), DataType::Float64 | DataType::Int32) && f.name() != "forecast_hour")
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names.len(), 21, "{names:?}");
        // Column i holds i + 1 (as the test's own field list says, not the builder's).
        let v = |name: &str| OptF64::from((names.iter().position(|n| *n == name).unwrap() + 1) as f64);
        let row = ForecastRow {
            model: "GFS",
            location_name: "KNYC".into(),
            latitude: v("latitude"),
            longitude: v("longitude"),
            run_time: t(0),
            valid_time: t(6),
            forecast_hour: 6,
            temperature_k: v("temperature_k"),
            temperature_f: v("temperature_f"),
            temperature_c: v("temperature_c"),
            relative_humidity: v("relative_humidity"),
            dew_point_f: v("dew_point_f"),
            dew_point_c: v("dew_point_c"),
            apparent_temp_f: v("apparent_temp_f"),
            apparent_temp_c: v("apparent_temp_c"),
            wind_speed_mph: v("wind_speed_mph"),
            wind_speed_kmh: v("wind_speed_kmh"),
            wind_direction_deg: Some(13),
            wind_gusts_mph: v("wind_gusts_mph"),
            wind_gusts_kmh: v("wind_gusts_kmh"),
            cloud_cover: v("cloud_cover"),
            precipitation_mm: v("precipitation_mm"),
            precipitation_in: v("precipitation_in"),
            weather_code: Some(19),
            pressure_msl_hpa: v("pressure_msl_hpa"),
            surface_pressure_hpa: OptF64::NONE,
            published_after_s: 0,
        };
        let batch = ForecastRow::to_batch(&[&row], &[7], RowTimes::live(1, t(1), t(1))).unwrap();
        for (i, name) in names.iter().enumerate() {
            let col = batch.column_by_name(name).unwrap();
            let got = match col.data_type() {
                DataType::Int32 => col.is_valid(0).then(|| f64::from(col.as_primitive::<Int32Type>().value(0))),
                _ => col.is_valid(0).then(|| col.as_primitive::<Float64Type>().value(0)),
            };
            let want = (*name != "surface_pressure_hpa").then_some((i + 1) as f64);
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn str_key_orders_as_str() {
        let words = [
            "",
            "A",
            "AB",
            "AB\0",
            "AB\0\0\0\0\0\0",
            "AB\0\0\0\0\0\0X",
            "KNYC",
            "KNYC1234",
            "KNYC12345",
            "KNYC1234\0",
            "KNYD",
            "Z",
            "\u{e9}t\u{e9}",
            "Central Park",
            "Central Parkway",
            "\u{ff}\u{ff}",
        ];
        for a in words {
            for b in words {
                assert_eq!(StrKey::new(a).cmp(&StrKey::new(b)), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(StrKey::new(a) == StrKey::new(b), a == b, "{a:?} == {b:?}");
            }
        }
    }

    #[test]
    fn date32_counts_days_from_the_unix_epoch() {
        let d = |y, m, day| NaiveDate::from_ymd_opt(y, m, day).unwrap();
        assert_eq!(date32(d(1970, 1, 1)), 0);
        assert_eq!(date32(d(1969, 12, 31)), -1);
        assert_eq!(date32(d(2000, 3, 1)), 11_017);
        for day in [d(1900, 1, 1), d(2024, 2, 29), d(2026, 11, 24)] {
            assert_eq!(date32(day) as i64, (day - d(1970, 1, 1)).num_days());
        }
    }
}
