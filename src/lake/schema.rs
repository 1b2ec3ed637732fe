//! Every lake table's schema, partitioning, sort order and natural key, in one place.
//! Other tools (DuckDB, Polars, Spark) read the same files: see `docs/lake.md`, "Lake layout".
//!
//! Conventions: times are `timestamp[us, UTC]`; temperatures are stored in Celsius with
//! their native precision (see `has_tenths`), plus integer-°F probable ranges; each row
//! carries its local dates (Local Standard Time and civil) computed once at ingest, and a
//! `row_key` (FNV-1a 64 of the natural key; a re-published forecast's other values hash
//! them too, `lake::versions`) that makes re-ingest a no-op.
//!
//! Every table ends with three times: `inserted_at` (the lake write), `received_at` (when
//! the write path received the row) and `available_at` (when the world could first have
//! known it, `lake::availability`). The last two are declared nullable although every
//! writer fills them: a file written before they existed lacks them, and DataFusion
//! refuses to read a file that lacks a non-nullable column.

use std::hash::Hasher;
use std::sync::{Arc, OnceLock};

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use fnv::FnvHasher;

/// Static description of one lake table.
#[derive(Debug)]
pub struct TableDef {
    /// SQL name and directory under the lake root.
    pub name: &'static str,
    /// Hive partition columns (all strings), outermost first.
    pub partition_cols: &'static [&'static str],
    /// Columns the files are sorted by (declared to DataFusion).
    pub sort_cols: &'static [&'static str],
    /// Columns forming the natural key hashed into `row_key`.
    pub key_cols: &'static [&'static str],
    /// Which rows are versions of one fact, and which version is current: what
    /// `as_of(table, t)` keeps of the rows available at t (`lake::as_of`).
    pub versions: Versions,
    /// Which partitions can hold a row available at a time t (`available_at` is never
    /// before the row's own time: observation, run, generation): `as_of` reads no other.
    pub as_of_bound: AsOfBound,
    schema: fn() -> SchemaRef,
}

/// How a table's rows are versions of each other (`TableDef::versions`).
#[derive(Debug, Clone, Copy)]
pub enum Versions {
    /// Every row is a fact of its own.
    Rows,
    /// Rows equal in `key` are versions of one fact; the current one comes first in
    /// `order` (column, descending), nulls last.
    Latest { key: &'static [&'static str], order: &'static [(&'static str, bool)] },
    /// Rows equal in `key` hold documents (all the periods of one forecast version); the
    /// rows whose `newest` column holds its greatest value are the current document.
    Document { key: &'static [&'static str], newest: &'static str },
    /// A row says when a newer version of its fact replaced it ([`SUPERSEDED_AT`], set by
    /// the writer when it stores the newer one: `lake::versions`): the row is current at t
    /// while that is NULL or after t, so choosing needs no window over the table.
    Superseded,
}

/// The column of a table with [`Versions::Superseded`]: when the row stopped being current.
pub const SUPERSEDED_AT: &str = "superseded_at";

/// The SQL condition that keeps the current rows of such a table (every reader of
/// `forecasts` that wants one row per model, place, run and valid time adds it).
pub const CURRENT: &str = "superseded_at IS NULL";

/// Which partitions `as_of` reads for a time t (`TableDef::as_of_bound`).
#[derive(Debug, Clone, Copy)]
pub enum AsOfBound {
    /// All of them.
    All,
    /// Those whose date partition column is at most t's UTC date.
    UpTo(&'static str),
    /// Those whose date partition column is within `days` before t's UTC date.
    Within(&'static str, u32),
}

impl TableDef {
    /// The schema of the Parquet files (partition columns excluded).
    pub fn file_schema(&self) -> SchemaRef {
        (self.schema)()
    }
}

fn ts() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}
fn f(name: &str, dt: DataType, nullable: bool) -> Field {
    Field::new(name, dt, nullable)
}

macro_rules! cached_schema {
    ($fn_name:ident, $fields:expr) => {
        fn $fn_name() -> SchemaRef {
            static S: OnceLock<SchemaRef> = OnceLock::new();
            S.get_or_init(|| Arc::new(Schema::new($fields))).clone()
        }
    };
}

cached_schema!(
    observations_schema,
    vec![
        f("station_code", DataType::Utf8, false),
        f("observation_time", ts(), false),
        // METAR, SPECI or HF-METAR.
        f("report_type", DataType::Utf8, false),
        // Best temperature (°C): T-group tenths when present, else whole degrees.
        f("temperature", DataType::Float64, true),
        f("has_tenths", DataType::Boolean, false),
        f("temp_whole_c", DataType::Int32, true),
        f("dew_point", DataType::Float64, true),
        f("lowest_probable_f", DataType::Int32, true),
        f("highest_probable_f", DataType::Int32, true),
        f("precision_level", DataType::Int32, true),
        f("relative_humidity", DataType::Float64, true),
        f("wind_direction_deg", DataType::Int32, true),
        f("wind_variable", DataType::Boolean, false),
        f("wind_speed_kt", DataType::Float64, true),
        f("wind_gust_kt", DataType::Float64, true),
        f("wind_var_from", DataType::Int32, true),
        f("wind_var_to", DataType::Int32, true),
        // Statute miles; metric groups unrounded, so round(visibility_sm * 1609.344) is
        // exactly the metres the report gave. `P6SM` is stored as its bound 6.
        f("visibility_sm", DataType::Float64, true),
        f("visibility_less_than", DataType::Boolean, false),
        f("altimeter", DataType::Float64, true),
        f("sea_level_pressure", DataType::Float64, true),
        f("six_hour_high", DataType::Float64, true),
        f("six_hour_low", DataType::Float64, true),
        f("day_high_24h", DataType::Float64, true),
        f("day_low_24h", DataType::Float64, true),
        f("precip_hour_in", DataType::Float64, true),
        f("precip_trace", DataType::Boolean, false),
        f("precip_6h_in", DataType::Float64, true),
        f("precip_24h_in", DataType::Float64, true),
        f("auto", DataType::Boolean, false),
        f("cor", DataType::Boolean, false),
        f("local_date_standard", DataType::Date32, true),
        f("local_date_civil", DataType::Date32, true),
        f("raw", DataType::Utf8, false),
        f("row_key", DataType::UInt64, false),
        f("inserted_at", ts(), false),
        f("received_at", ts(), true),
        f("available_at", ts(), true),
    ]
);

cached_schema!(
    onemin_schema,
    vec![
        f("station_code", DataType::Utf8, false),
        f("observation_time", ts(), false),
        // Null for the -999 sentinel: a gap, kept so data quality can count it.
        f("temperature_f", DataType::Float64, true),
        f("missing", DataType::Boolean, false),
        f("local_date_standard", DataType::Date32, true),
        f("local_date_civil", DataType::Date32, true),
        f("row_key", DataType::UInt64, false),
        f("inserted_at", ts(), false),
        f("received_at", ts(), true),
        f("available_at", ts(), true),
    ]
);

cached_schema!(
    reports_schema,
    vec![
        f("station_code", DataType::Utf8, false),
        // The climate day (Local Standard Time) the values are for.
        f("report_date", DataType::Date32, false),
        f("issued_at", ts(), true),
        f("high_f", DataType::Int32, true),
        f("high_time_lst", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        f("high_time_utc", ts(), true),
        f("low_f", DataType::Int32, true),
        f("low_time_lst", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        f("low_time_utc", ts(), true),
        f("precip_in", DataType::Float64, true),
        f("precip_trace", DataType::Boolean, false),
        f("precip_mtd_in", DataType::Float64, true),
        f("precip_mtd_trace", DataType::Boolean, false),
        f("is_final", DataType::Boolean, false),
        f("valid_as_of_lst", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        f("correction", DataType::Boolean, false),
        f("raw", DataType::Utf8, false),
        f("row_key", DataType::UInt64, false),
        f("inserted_at", ts(), false),
        f("received_at", ts(), true),
        f("available_at", ts(), true),
    ]
);

cached_schema!(
    forecasts_schema,
    vec![
        f("location_name", DataType::Utf8, false),
        f("run_time", ts(), false),
        f("valid_time", ts(), false),
        f("forecast_hour", DataType::Int32, false),
        f("latitude", DataType::Float64, true),
        f("longitude", DataType::Float64, true),
        f("temperature_k", DataType::Float64, true),
        f("temperature_f", DataType::Float64, true),
        f("temperature_c", DataType::Float64, true),
        f("relative_humidity", DataType::Float64, true),
        f("dew_point_f", DataType::Float64, true),
        f("dew_point_c", DataType::Float64, true),
        f("apparent_temp_f", DataType::Float64, true),
        f("apparent_temp_c", DataType::Float64, true),
        f("wind_speed_mph", DataType::Float64, true),
        f("wind_speed_kmh", DataType::Float64, true),
        f("wind_direction_deg", DataType::Int32, true),
        f("wind_gusts_mph", DataType::Float64, true),
        f("wind_gusts_kmh", DataType::Float64, true),
        f("cloud_cover", DataType::Float64, true),
        f("precipitation_mm", DataType::Float64, true),
        f("precipitation_in", DataType::Float64, true),
        f("weather_code", DataType::Int32, true),
        f("pressure_msl_hpa", DataType::Float64, true),
        f("surface_pressure_hpa", DataType::Float64, true),
        f("valid_date_standard", DataType::Date32, true),
        f("valid_date_civil", DataType::Date32, true),
        f("row_key", DataType::UInt64, false),
        f("inserted_at", ts(), false),
        f("received_at", ts(), true),
        f("available_at", ts(), true),
        // When a re-published run's other values for this row became available: NULL
        // while the row is current (`lake::versions`).
        f(SUPERSEDED_AT, ts(), true),
    ]
);

cached_schema!(
    daily_forecasts_schema,
    vec![
        f("station_code", DataType::Utf8, false),
        // When the source issued it, which is when it became available (`available_at`).
        f("issued_at", ts(), false),
        // The settlement day it forecasts.
        f("date", DataType::Date32, false),
        f("high", DataType::Float64, true),
        f("low", DataType::Float64, true),
        // `f` or `c`: the unit of `high` and `low`, as issued.
        f("units", DataType::Utf8, false),
        f("row_key", DataType::UInt64, false),
        f("inserted_at", ts(), false),
        f("received_at", ts(), true),
        f("available_at", ts(), true),
    ]
);

cached_schema!(
    nws_hourly_schema,
    vec![
        f("station_code", DataType::Utf8, false),
        f("generated_at", ts(), false),
        f("start_time", ts(), false),
        f("end_time", ts(), false),
        f("temperature_f", DataType::Float64, false),
        f("row_key", DataType::UInt64, false),
        f("inserted_at", ts(), false),
        f("received_at", ts(), true),
        f("available_at", ts(), true),
    ]
);

/// METAR / SPECI / HF-METAR observations, one row per report.
pub const OBSERVATIONS: TableDef = TableDef {
    name: "observations",
    partition_cols: &["date"],
    sort_cols: &["station_code", "observation_time"],
    key_cols: &["station_code", "observation_time", "report_type", "raw"],
    // A report and its corrections (METAR COR): the latest available one.
    versions: Versions::Latest {
        key: &["date", "station_code", "observation_time", "report_type"],
        order: &[("available_at", true), ("cor", true), ("received_at", true), ("row_key", true)],
    },
    as_of_bound: AsOfBound::UpTo("date"),
    schema: observations_schema,
};

/// One-minute ASOS temperatures (never served, feed the extremes).
pub const ONEMIN: TableDef = TableDef {
    name: "onemin",
    partition_cols: &["date"],
    sort_cols: &["station_code", "observation_time"],
    key_cols: &["station_code", "observation_time"],
    versions: Versions::Rows,
    as_of_bound: AsOfBound::UpTo("date"),
    schema: onemin_schema,
};

/// CLI and DSM daily reports; `kind` is the partition.
pub const REPORTS: TableDef = TableDef {
    name: "reports",
    partition_cols: &["kind"],
    sort_cols: &["station_code", "report_date"],
    key_cols: &["kind", "station_code", "report_date", "raw"],
    // Preliminary, final and corrected reports of one day: the one a reader of the day
    // settles on (`DailyReport::precedence`: final, then latest issued, then correction).
    versions: Versions::Latest {
        key: &["kind", "station_code", "report_date"],
        order: &[
            ("is_final", true),
            ("issued_at", true),
            ("correction", true),
            ("available_at", true),
            ("received_at", true),
            ("row_key", true),
        ],
    },
    as_of_bound: AsOfBound::All,
    schema: reports_schema,
};

/// Model forecast rows (spec 2.5 names), partitioned by model and UTC run date.
pub const FORECASTS: TableDef = TableDef {
    name: "forecasts",
    partition_cols: &["model", "run_date"],
    sort_cols: &["location_name", "run_time", "valid_time"],
    key_cols: &["model", "location_name", "run_time", "valid_time"],
    // A re-published run's other values are kept beside the first (`lake::versions`).
    versions: Versions::Superseded,
    as_of_bound: AsOfBound::UpTo("run_date"),
    schema: forecasts_schema,
};

/// api.weather.gov hourly forecast versions, one row per period per version.
pub const NWS_HOURLY: TableDef = TableDef {
    name: "nws_hourly",
    partition_cols: &["date"],
    sort_cols: &["station_code", "generated_at", "start_time"],
    key_cols: &["station_code", "generated_at", "start_time"],
    // The version in force: every period of each station's newest available document.
    versions: Versions::Document { key: &["station_code"], newest: "generated_at" },
    // A version older than the 7-day forecast it covers is in force for nothing.
    as_of_bound: AsOfBound::Within("date", 8),
    schema: nws_hourly_schema,
};

/// Forecasts published as a day's high and low only (`decode::daily_forecasts`), by source.
pub const DAILY_FORECASTS: TableDef = TableDef {
    name: "daily_forecasts",
    partition_cols: &["source"],
    sort_cols: &["station_code", "date", "issued_at"],
    key_cols: &["source", "station_code", "issued_at", "date"],
    // Each issuance is a fact of its own: a reader takes the latest issued by its time.
    versions: Versions::Rows,
    as_of_bound: AsOfBound::All,
    schema: daily_forecasts_schema,
};

/// Every ingested table.
pub const TABLES: [&TableDef; 6] = [&OBSERVATIONS, &ONEMIN, &REPORTS, &FORECASTS, &NWS_HOURLY, &DAILY_FORECASTS];

/// Looks a table up by name.
pub fn table(name: &str) -> Option<&'static TableDef> {
    TABLES.iter().copied().find(|t| t.name == name)
}

/// FNV-1a 64-bit over the natural key's bytes (the `fnv` crate's hasher). Stable across
/// Rust versions and platforms, unlike `DefaultHasher`, because stored keys must match on
/// every later ingest.
#[derive(Debug, Clone, Copy)]
pub struct KeyHasher(u64);

impl Default for KeyHasher {
    fn default() -> Self {
        KeyHasher(FnvHasher::default().finish())
    }
}

impl KeyHasher {
    /// Goes on hashing after a key already computed (a version's key after its natural key).
    pub fn from_key(key: u64) -> Self {
        KeyHasher(key)
    }
    pub fn bytes(self, b: &[u8]) -> Self {
        let mut h = FnvHasher::with_key(self.0);
        h.write(b);
        // Field separator so ("ab","c") and ("a","bc") differ.
        h.write_u8(0xff);
        KeyHasher(h.finish())
    }
    pub fn str(self, s: &str) -> Self {
        self.bytes(s.as_bytes())
    }
    pub fn i64(self, v: i64) -> Self {
        self.bytes(&v.to_le_bytes())
    }
    pub fn finish(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_names_existing_columns() {
        for t in TABLES {
            let s = t.file_schema();
            for c in t.sort_cols.iter().chain(t.key_cols) {
                let in_file = s.field_with_name(c).is_ok();
                assert!(in_file || t.partition_cols.contains(c), "{}.{c}", t.name);
            }
            assert!(s.field_with_name("row_key").is_ok());
            for p in t.partition_cols {
                assert!(s.field_with_name(p).is_err(), "{}: partition column {p} duplicated", t.name);
            }
        }
    }

    /// The forecasts file holds the decoders' columns (one list, `forecast_rows::COLUMNS`;
    /// `model` is a partition) and the lake's own: a column added to one list and not the
    /// other fails here.
    #[test]
    fn forecast_files_hold_the_decoders_columns() {
        let file: Vec<String> = FORECASTS.file_schema().fields().iter().map(|f| f.name().clone()).collect();
        let own = [
            "valid_date_standard",
            "valid_date_civil",
            "row_key",
            "inserted_at",
            "received_at",
            "available_at",
            SUPERSEDED_AT,
        ];
        let mut expected: Vec<&str> = crate::decode::forecast_rows::COLUMNS
            .iter()
            .copied()
            .filter(|c| !FORECASTS.partition_cols.contains(c))
            .collect();
        expected.extend(own);
        let mut got: Vec<&str> = file.iter().map(String::as_str).collect();
        got.sort_unstable();
        expected.sort_unstable();
        assert_eq!(got, expected);
    }

    #[test]
    fn key_hash_is_stable_and_separates_fields() {
        let a = KeyHasher::default().str("ab").str("c").finish();
        let b = KeyHasher::default().str("a").str("bc").finish();
        assert_ne!(a, b);
        // Pinned value: changing the hash would silently duplicate every re-ingest.
        assert_eq!(KeyHasher::default().str("KNYC").i64(0).finish(), 0x1688_4a33_4b7d_601a);
        assert_eq!(KeyHasher::default().finish(), 0xcbf2_9ce4_8422_2325);
    }
}
