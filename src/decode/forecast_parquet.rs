//! Forecast rows from a Parquet file with the column names of spec 2.5 (any column order,
//! extra columns ignored, numeric columns of any numeric type, times as timestamps or
//! ISO strings). The same validation as the CSV/JSONL decoder applies to every row.

use chrono::{DateTime, Utc};
use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::forecast_rows::{model_name, unknown_model, validate_row};
use super::types::{Decoded, ForecastRow};
use super::timestamp::parse_timestamp_or_date;

/// Decodes a whole Parquet file; a file that is not readable Parquet is one error.
pub fn decode_forecast_parquet(bytes: &[u8]) -> Decoded<ForecastRow> {
    let mut out = Decoded::new();
    let reader =
        match ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::copy_from_slice(bytes)).and_then(|b| b.build()) {
            Ok(r) => r,
            Err(e) => {
                out.reject(1, format!("not a readable Parquet file: {e}"));
                return out;
            }
        };
    let mut row_no = 0;
    for batch in reader {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                out.reject(row_no + 1, format!("corrupt Parquet data: {e}"));
                return out;
            }
        };
        decode_batch(&batch, &mut row_no, &mut out);
    }
    out
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
            _ => DateTime::from_timestamp_micros(
                a.as_primitive::<arrow::datatypes::TimestampMicrosecondType>().value(i),
            ),
        }
    };
    let (model, loc) = (text("model"), text("location_name"));
    let (run, valid) = (time("run_time"), time("valid_time"));
    let fh = int("forecast_hour");
    let names = [
        "latitude",
        "longitude",
        "temperature_k",
        "temperature_f",
        "temperature_c",
        "relative_humidity",
        "dew_point_f",
        "dew_point_c",
        "apparent_temp_f",
        "apparent_temp_c",
        "wind_speed_mph",
        "wind_speed_kmh",
        "wind_gusts_mph",
        "wind_gusts_kmh",
        "cloud_cover",
        "precipitation_mm",
        "precipitation_in",
        "pressure_msl_hpa",
        "surface_pressure_hpa",
    ];
    let floats: Vec<Option<ArrayRef>> = names.iter().map(|c| float(c)).collect();
    let (wdir, wcode) = (int("wind_direction_deg"), int("weather_code"));
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
        let v = |k: usize| f(&floats[k], i);
        let mut row = ForecastRow {
            model: known,
            location_name: s(&loc, i).unwrap_or_default().into(),
            latitude: v(0).into(),
            longitude: v(1).into(),
            run_time,
            valid_time,
            forecast_hour: 0,
            temperature_k: v(2).into(),
            temperature_f: v(3).into(),
            temperature_c: v(4).into(),
            relative_humidity: v(5).into(),
            dew_point_f: v(6).into(),
            dew_point_c: v(7).into(),
            apparent_temp_f: v(8).into(),
            apparent_temp_c: v(9).into(),
            wind_speed_mph: v(10).into(),
            wind_speed_kmh: v(11).into(),
            wind_direction_deg: n(&wdir, i).map(|x| x as i32),
            wind_gusts_mph: v(12).into(),
            wind_gusts_kmh: v(13).into(),
            cloud_cover: v(14).into(),
            precipitation_mm: v(15).into(),
            precipitation_in: v(16).into(),
            weather_code: n(&wcode, i).map(|x| x as i32),
            pressure_msl_hpa: v(17).into(),
            surface_pressure_hpa: v(18).into(),
        };
        match validate_row(&mut row, n(&fh, i).map(|x| x as i32)) {
            Ok(()) => out.records.push(row),
            Err(reason) => out.reject(*row_no, reason),
        }
    }
}
