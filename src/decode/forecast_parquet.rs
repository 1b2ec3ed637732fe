//! Forecast rows from a Parquet file with the column names of spec 2.5 (any column order,
//! extra columns ignored, numeric columns of any numeric type, times as timestamps or
//! ISO strings). The same validation as the CSV/JSONL decoder applies to every row.

use std::panic::{self, AssertUnwindSafe};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use chrono::{DateTime, Utc};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use super::forecast_rows::{
    model_name, unknown_model, validate_row, APP_C, APP_F, CLOUD, COLUMNS, DEW_C, DEW_F, GUST_KMH, GUST_MPH, LAT, LEAD,
    LOCATION, LON, MODEL, PMSL, PRECIP_IN, PRECIP_MM, PSFC, RH, RUN, TEMP_C, TEMP_F, TEMP_K, VALID, WEATHER_CODE,
    WIND_DIR, WIND_KMH, WIND_MPH,
};

/// The columns of [`COLUMNS`] that are not numbers read as `f64`.
const NOT_FLOAT: [usize; 7] = [MODEL, LOCATION, RUN, VALID, LEAD, WIND_DIR, WEATHER_CODE];
use super::timestamp::parse_timestamp_or_date;
use super::types::{Decoded, ForecastRow};

/// Decodes a whole Parquet file; a file that is not readable Parquet is one error.
pub fn decode_forecast_parquet(bytes: &[u8]) -> Decoded<ForecastRow> {
    let mut out = Decoded::new();
    let bytes = bytes::Bytes::copy_from_slice(bytes);
    let opened =
        guarded(|| ParquetRecordBatchReaderBuilder::try_new(bytes).and_then(|b| b.build()).map_err(|e| e.to_string()));
    let mut reader: ParquetRecordBatchReader = match opened {
        Ok(r) => r,
        Err(e) => {
            out.reject(1, format!("not a readable Parquet file: {}", super::text::quote(&e, 200)));
            return out;
        }
    };
    let mut row_no = 0;
    loop {
        let batch = match guarded(|| reader.next().transpose().map_err(|e| e.to_string())) {
            Ok(Some(b)) => b,
            Ok(None) => break,
            Err(e) => {
                out.reject(row_no + 1, format!("corrupt Parquet data: {}", super::text::quote(&e, 200)));
                return out;
            }
        };
        decode_batch(&batch, &mut row_no, &mut out);
    }
    out
}

/// Runs a call into the parquet reader, turning a panic into an error. The parquet crate
/// can panic on a malformed file (corrupt metadata or pages) instead of returning an
/// error; an ingest must still answer with a precise reject, not a failed task.
fn guarded<T>(read: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match panic::catch_unwind(AssertUnwindSafe(read)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the reader failed".to_string());
            Err(super::text::quote(&what, 120).into_owned())
        }
    }
}

/// An integer column value as `i32`; one that does not fit is an error naming the column
/// (a silent truncation could turn 4294967386 into a valid-looking 90).
fn small_int(name: &str, v: Option<i64>) -> Result<Option<i32>, String> {
    v.map(|x| i32::try_from(x).map_err(|_| format!("{name}: {x} is out of range"))).transpose()
}

fn decode_batch(batch: &RecordBatch, row_no: &mut usize, out: &mut Decoded<ForecastRow>) {
    let float = |name: &str| -> Option<ArrayRef> {
        let c = batch.column_by_name(name)?;
        cast(c, &DataType::Float64).ok()
    };
    let int = |name: &str| -> Option<ArrayRef> {
        let c = batch.column_by_name(name)?;
        cast(c, &DataType::Int64).ok()
    };
    let text = |name: &str| -> Option<ArrayRef> {
        let c = batch.column_by_name(name)?;
        cast(c, &DataType::Utf8).ok()
    };
    let time = |name: &str| -> Option<ArrayRef> {
        let c = batch.column_by_name(name)?;
        match c.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => cast(c, &DataType::Utf8).ok(),
            _ => cast(c, &DataType::Timestamp(TimeUnit::Microsecond, None)).ok(),
        }
    };
    let f = |a: &Option<ArrayRef>, i: usize| -> Option<f64> {
        a.as_ref().filter(|a| a.is_valid(i)).map(|a| a.as_primitive::<Float64Type>().value(i))
    };
    let n = |a: &Option<ArrayRef>, i: usize| -> Option<i64> {
        a.as_ref().filter(|a| a.is_valid(i)).map(|a| a.as_primitive::<Int64Type>().value(i))
    };
    let s = |a: &Option<ArrayRef>, i: usize| -> Option<String> {
        a.as_ref().filter(|a| a.is_valid(i)).map(|a| a.as_string::<i32>().value(i).to_string())
    };
    let t = |a: &Option<ArrayRef>, i: usize| -> Option<DateTime<Utc>> {
        let a = a.as_ref().filter(|a| a.is_valid(i))?;
        match a.data_type() {
            DataType::Utf8 => parse_timestamp_or_date(a.as_string::<i32>().value(i)),
            _ => {
                DateTime::from_timestamp_micros(a.as_primitive::<arrow::datatypes::TimestampMicrosecondType>().value(i))
            }
        }
    };
    let (model, loc) = (text(COLUMNS[MODEL]), text(COLUMNS[LOCATION]));
    let (run, valid) = (time(COLUMNS[RUN]), time(COLUMNS[VALID]));
    let fh = int(COLUMNS[LEAD]);
    // The number columns by their index in the one column list; the others stay `None`.
    let floats: Vec<Option<ArrayRef>> =
        COLUMNS.iter().enumerate().map(|(k, c)| if NOT_FLOAT.contains(&k) { None } else { float(c) }).collect();
    let (wdir, wcode) = (int(COLUMNS[WIND_DIR]), int(COLUMNS[WEATHER_CODE]));
    for i in 0..batch.num_rows() {
        *row_no += 1;
        out.read += 1;
        let (Some(run_time), Some(valid_time)) = (t(&run, i), t(&valid, i)) else {
            out.reject(*row_no, "missing or invalid run_time/valid_time");
            continue;
        };
        let name = s(&model, i).unwrap_or_default();
        let Some(known) = model_name(&name) else {
            out.reject(*row_no, unknown_model(&name));
            continue;
        };
        if let Some(k) = (0..COLUMNS.len()).find(|&k| f(&floats[k], i).is_some_and(f64::is_infinite)) {
            out.reject(*row_no, format!("{}: not a finite number", COLUMNS[k]));
            continue;
        }
        let ints = (
            small_int(COLUMNS[LEAD], n(&fh, i)),
            small_int(COLUMNS[WIND_DIR], n(&wdir, i)),
            small_int(COLUMNS[WEATHER_CODE], n(&wcode, i)),
        );
        let (given_hour, wind_direction_deg, weather_code) = match ints {
            (Ok(h), Ok(d), Ok(c)) => (h, d, c),
            (Err(e), ..) | (_, Err(e), _) | (.., Err(e)) => {
                out.reject(*row_no, e);
                continue;
            }
        };
        let v = |k: usize| f(&floats[k], i);
        let mut row = ForecastRow {
            model: known,
            location_name: s(&loc, i).unwrap_or_default().into(),
            latitude: v(LAT).into(),
            longitude: v(LON).into(),
            run_time,
            valid_time,
            forecast_hour: 0,
            temperature_k: v(TEMP_K).into(),
            temperature_f: v(TEMP_F).into(),
            temperature_c: v(TEMP_C).into(),
            relative_humidity: v(RH).into(),
            dew_point_f: v(DEW_F).into(),
            dew_point_c: v(DEW_C).into(),
            apparent_temp_f: v(APP_F).into(),
            apparent_temp_c: v(APP_C).into(),
            wind_speed_mph: v(WIND_MPH).into(),
            wind_speed_kmh: v(WIND_KMH).into(),
            wind_direction_deg,
            wind_gusts_mph: v(GUST_MPH).into(),
            wind_gusts_kmh: v(GUST_KMH).into(),
            cloud_cover: v(CLOUD).into(),
            precipitation_mm: v(PRECIP_MM).into(),
            precipitation_in: v(PRECIP_IN).into(),
            weather_code,
            pressure_msl_hpa: v(PMSL).into(),
            surface_pressure_hpa: v(PSFC).into(),
            published_after_s: 0,
        };
        match validate_row(&mut row, given_hour) {
            Ok(()) => out.records.push(row),
            Err(reason) => out.reject(*row_no, reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, Int64Array, StringArray, TimestampMicrosecondArray};
    use parquet::arrow::ArrowWriter;

    use super::*;

    /// A Parquet file of the given columns (all of one batch).
    fn file(columns: Vec<(&str, ArrayRef)>) -> Vec<u8> {
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut buf = Vec::new();
        let mut w = ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        buf
    }

    /// Two rows: GFS with string times, HRRR with timestamp-typed times.
    fn sample(extra: Vec<(&'static str, ArrayRef)>) -> Vec<u8> {
        let mut cols: Vec<(&str, ArrayRef)> = vec![
            ("model", Arc::new(StringArray::from(vec!["GFS", "HRRR"]))),
            ("location_name", Arc::new(StringArray::from(vec!["KNYC", "KORD"]))),
            ("run_time", Arc::new(StringArray::from(vec!["2026-09-24T06:00:00Z", "2024-02-29"]))),
            ("valid_time", Arc::new(StringArray::from(vec!["2026-09-24 12:00", "2024-02-29T03:00:00+00:00"]))),
            ("temperature_f", Arc::new(Float64Array::from(vec![Some(61.5), Some(30.0)]))),
        ];
        cols.extend(extra);
        file(cols)
    }

    #[test]
    fn rows_with_string_and_timestamp_times() {
        let d = decode_forecast_parquet(&sample(vec![]));
        assert_eq!((d.read, d.records.len()), (2, 2), "{:?}", d.errors);
        let r = &d.records[0];
        assert_eq!((r.model, r.location_name.as_str(), r.forecast_hour), ("GFS", "KNYC", 6));
        assert!((r.temperature_c.get().unwrap() - 16.3889).abs() < 1e-3);
        // A bare date in a string column is midnight UTC.
        assert_eq!(d.records[1].forecast_hour, 3);

        let micros = |s: &str| parse_timestamp_or_date(s).unwrap().timestamp_micros();
        let typed = file(vec![
            ("model", Arc::new(StringArray::from(vec!["ICON"]))),
            ("location_name", Arc::new(StringArray::from(vec!["EGLL"]))),
            ("run_time", Arc::new(TimestampMicrosecondArray::from(vec![micros("2026-02-01T12:00:00Z")]))),
            ("valid_time", Arc::new(TimestampMicrosecondArray::from(vec![micros("2026-02-02T01:00:00Z")]))),
            ("forecast_hour", Arc::new(Int64Array::from(vec![13]))),
            ("temperature_c", Arc::new(Float64Array::from(vec![4.5]))),
        ]);
        let d = decode_forecast_parquet(&typed);
        assert_eq!(d.records.len(), 1, "{:?}", d.errors);
        assert_eq!(d.records[0].forecast_hour, 13);
    }

    /// Found by the fuzz target's finite-number check: an infinity in a float column was
    /// stored as a value (`OptF64` promises decoders never produce a non-finite number).
    #[test]
    fn infinite_values_are_rejected_like_csv() {
        let rh: ArrayRef = Arc::new(Float64Array::from(vec![Some(f64::INFINITY), Some(f64::NAN)]));
        let d = decode_forecast_parquet(&sample(vec![("relative_humidity", rh)]));
        assert_eq!(d.records.len(), 1, "a NaN is a null, as in OptF64");
        assert_eq!(d.errors.len(), 1);
        assert_eq!((d.errors[0].line, d.errors[0].reason.as_str()), (1, "relative_humidity: not a finite number"));
    }

    /// An integer that does not fit i32 used to wrap: 2^32 + 90 became a valid 90 degrees.
    #[test]
    fn out_of_range_integers_are_rejected_not_wrapped() {
        let wdir: ArrayRef = Arc::new(Int64Array::from(vec![Some((1i64 << 32) + 90), Some(90)]));
        let d = decode_forecast_parquet(&sample(vec![("wind_direction_deg", wdir)]));
        assert_eq!(d.records.len(), 1);
        assert_eq!(d.records[0].wind_direction_deg, Some(90));
        assert_eq!(d.errors[0].reason, "wind_direction_deg: 4294967386 is out of range");
        let fh: ArrayRef = Arc::new(Int64Array::from(vec![Some((1i64 << 32) + 6), None]));
        let d = decode_forecast_parquet(&sample(vec![("forecast_hour", fh)]));
        assert_eq!(d.errors[0].reason, "forecast_hour: 4294967302 is out of range");
    }

    #[test]
    fn not_parquet_is_one_precise_error() {
        for bytes in [&b""[..], b"PAR1", b"PAR1\0\0\0\0PAR1", b"model,location_name\nGFS,KNYC\n"] {
            let d = decode_forecast_parquet(bytes);
            assert!(d.records.is_empty());
            assert_eq!(d.errors.len(), 1, "{bytes:?}");
            assert!(d.errors[0].reason.starts_with("not a readable Parquet file: "), "{}", d.errors[0].reason);
        }
    }

    /// Found by the `forecast_parquet` fuzz target: the parquet crate's error message quotes
    /// names from the file (here a column name with a control byte) and reached the reject
    /// reason raw.
    #[test]
    fn reader_errors_are_escaped() {
        let good = sample(vec![]);
        let at = good.windows(13).position(|w| w == b"temperature_f").unwrap();
        let mut bad = good.clone();
        bad[at + 5] = 0x16;
        let d = decode_forecast_parquet(&bad);
        assert!(d.records.is_empty());
        assert!(d.errors.iter().all(|e| !e.reason.chars().any(char::is_control)), "{:?}", d.errors);
    }

    /// Every truncation and every single-byte corruption of a real file: a precise error
    /// or rows, never a panic (the parquet crate's own panics are caught).
    #[test]
    fn truncated_and_corrupted_files_never_panic() {
        let good = sample(vec![]);
        for n in 0..good.len() {
            let _ = decode_forecast_parquet(&good[..n]);
        }
        let mut next = crate::decode::testrand::xorshift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..2000 {
            let mut bad = good.clone();
            let at = (next() % bad.len() as u64) as usize;
            bad[at] = next() as u8;
            let d = decode_forecast_parquet(&bad);
            assert!(!d.errors.is_empty() || d.records.len() <= 2);
        }
    }
}
