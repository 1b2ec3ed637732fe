//! Ingest: turn input bytes of a named format into lake records, store them idempotently,
//! and account for every line (read / stored / duplicate / rejected with reasons).
//! The CLI, the live HTTP ingest and the demo generator all go through here.

pub mod format;
pub mod hot;
pub mod live;
pub mod summary;
pub mod wal;

use chrono::{DateTime, Utc};

pub use format::Format;
pub use summary::Summary;

use crate::decode::types::{DailyReport, ForecastRow, LineError, Metar, OneMinute};
use crate::lake::rows::NwsHourlyRow;
use crate::lake::writer::WriteStats;
use crate::lake::{Lake, LakeError};

/// Hints some formats need because the input itself does not say.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IngestOptions {
    /// `--month YYYY-MM` for bare METAR lines and DSM dates (which carry no year).
    pub month: Option<(i32, u32)>,
    /// Station / location the input belongs to (Open-Meteo and NWS hourly JSON).
    pub station: Option<String>,
    /// Run time for Open-Meteo responses that do not carry one.
    pub run_time: Option<DateTime<Utc>>,
}

/// Decoded records of one input, typed by destination table.
#[derive(Debug, Clone)]
pub enum Records {
    Observations(Vec<Metar>),
    OneMinute(Vec<OneMinute>),
    Reports(Vec<DailyReport>),
    Forecasts(Vec<ForecastRow>),
    NwsHourly(Vec<NwsHourlyRow>),
}

impl Records {
    pub fn len(&self) -> usize {
        match self {
            Records::Observations(v) => v.len(),
            Records::OneMinute(v) => v.len(),
            Records::Reports(v) => v.len(),
            Records::Forecasts(v) => v.len(),
            Records::NwsHourly(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The lake table these records go to.
    pub fn table_name(&self) -> &'static str {
        match self {
            Records::Observations(_) => crate::lake::schema::OBSERVATIONS.name,
            Records::OneMinute(_) => crate::lake::schema::ONEMIN.name,
            Records::Reports(_) => crate::lake::schema::REPORTS.name,
            Records::Forecasts(_) => crate::lake::schema::FORECASTS.name,
            Records::NwsHourly(_) => crate::lake::schema::NWS_HOURLY.name,
        }
    }
}

/// One decoded input: its records, its rejected lines and how many lines were read.
#[derive(Debug, Clone)]
pub struct DecodedInput {
    pub records: Records,
    pub errors: Vec<LineError>,
    pub read: usize,
}

/// Stores decoded records in their table.
pub async fn store(lake: &Lake, records: Records) -> Result<WriteStats, LakeError> {
    match records {
        Records::Observations(v) => lake.write(v).await,
        Records::OneMinute(v) => lake.write(v).await,
        Records::Reports(v) => lake.write(v).await,
        Records::Forecasts(v) => lake.write(v).await,
        Records::NwsHourly(v) => lake.write(v).await,
    }
}

/// Decodes and stores one input, adding its outcome to `summary` under `name`.
pub async fn ingest_bytes(
    lake: &Lake,
    format: Format,
    name: &str,
    bytes: &[u8],
    opts: &IngestOptions,
    summary: &mut Summary,
) -> Result<WriteStats, LakeError> {
    let decoded = format.decode(bytes, opts);
    let stats = store(lake, decoded.records).await?;
    summary.add(name, decoded.read, &decoded.errors, stats);
    Ok(stats)
}
