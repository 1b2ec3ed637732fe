//! Ingest: turn input bytes of a named format into lake records, store them idempotently,
//! and account for every line (read / stored / duplicate / rejected with reasons).
//! The CLI and the demo generator store through here directly; the server's live ingest
//! (the `write` module) decodes and stores through here too, after its WAL.

pub mod format;
pub mod summary;

use std::sync::Arc;

use chrono::{DateTime, Utc};

pub use format::Format;
pub use summary::Summary;

use crate::decode::types::{DailyForecast, DailyReport, ForecastRow, LineError, Metar, OneMinute};
use crate::lake::rows::{LakeRecord, NwsHourlyRow};
use crate::lake::writer::{Chunk, WriteStats};
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
    /// When the input was issued, if its source says so (api.weather.gov's `issuanceTime`
    /// of a DSM or CLI product): the reference that dates DSM messages, whose DD/MM dates
    /// carry no year (preferred to `month`), and the issuance of a CLI whose text states
    /// none. Absent from write-ahead log entries written before it
    /// existed (they read as `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued: Option<DateTime<Utc>>,
}

/// Decoded records of one input, typed by destination table.
#[derive(Debug, Clone)]
pub enum Records {
    Observations(Vec<Metar>),
    OneMinute(Vec<OneMinute>),
    Reports(Vec<DailyReport>),
    Forecasts(Vec<ForecastRow>),
    NwsHourly(Vec<NwsHourlyRow>),
    DailyForecasts(Vec<DailyForecast>),
}

impl Records {
    pub fn len(&self) -> usize {
        match self {
            Records::Observations(v) => v.len(),
            Records::OneMinute(v) => v.len(),
            Records::Reports(v) => v.len(),
            Records::Forecasts(v) => v.len(),
            Records::NwsHourly(v) => v.len(),
            Records::DailyForecasts(v) => v.len(),
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
            Records::DailyForecasts(_) => crate::lake::schema::DAILY_FORECASTS.name,
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
    Chunks::from(records).store(lake).await
}

/// A record type's rows in a [`Records`]: its own variant's, none of another's.
pub trait OfRecords: LakeRecord + Send + Sync + Sized + 'static {
    fn of(records: &Records) -> &[Self];
}

macro_rules! of_records {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl OfRecords for $t {
            fn of(records: &Records) -> &[Self] {
                match records {
                    Records::$variant(v) => v,
                    _ => &[],
                }
            }
        }
    )*};
}
of_records!(Metar => Observations, OneMinute => OneMinute, DailyReport => Reports, ForecastRow => Forecasts, NwsHourlyRow => NwsHourly, DailyForecast => DailyForecasts);

/// An input the write path received live, at `at` by its clock (the WAL record's time),
/// held until it is in the lake: `at` is its rows' `received_at` and their `available_at`
/// (a row that states its own, a daily forecast's `issued_at`, keeps that if earlier).
#[derive(Debug, Clone)]
pub struct Received {
    pub at: DateTime<Utc>,
    pub records: Arc<Records>,
}

/// The `T` rows of an input someone else keeps (the write path's pending inputs, held
/// until the write is done): the write reads them in place.
struct Held<T>(Received, std::marker::PhantomData<fn() -> T>);

impl<T: OfRecords> Chunk<T> for Held<T> {
    fn rows(&self) -> &[T] {
        T::of(&self.0.records)
    }
    fn received_at(&self) -> Option<DateTime<Utc>> {
        Some(self.0.at)
    }
    /// The rows stay with their holder.
    fn free(self) {}
}

/// Stores held inputs, one write per table (no copy of their rows): each table's name and
/// what its write did, in [`Records`] order.
pub async fn store_held(lake: &Lake, inputs: &[Received]) -> Result<Vec<(&'static str, WriteStats)>, LakeError> {
    async fn one<T: OfRecords>(lake: &Lake, inputs: &[Received]) -> Result<(&'static str, WriteStats), LakeError> {
        let chunks: Vec<Held<T>> = inputs
            .iter()
            .filter(|r| !T::of(&r.records).is_empty())
            .map(|r| Held(r.clone(), std::marker::PhantomData))
            .collect();
        Ok((T::table().name, lake.write_chunks(chunks).await?))
    }
    Ok(vec![
        one::<Metar>(lake, inputs).await?,
        one::<OneMinute>(lake, inputs).await?,
        one::<DailyReport>(lake, inputs).await?,
        one::<ForecastRow>(lake, inputs).await?,
        one::<NwsHourlyRow>(lake, inputs).await?,
        one::<DailyForecast>(lake, inputs).await?,
    ])
}

/// The records of several inputs bound for one table, kept per input until the write:
/// concatenating them would copy every row of a bulk load once more.
enum Chunks {
    Observations(Vec<Vec<Metar>>),
    OneMinute(Vec<Vec<OneMinute>>),
    Reports(Vec<Vec<DailyReport>>),
    Forecasts(Vec<Vec<ForecastRow>>),
    NwsHourly(Vec<Vec<NwsHourlyRow>>),
    DailyForecasts(Vec<Vec<DailyForecast>>),
}

impl From<Records> for Chunks {
    fn from(r: Records) -> Self {
        match r {
            Records::Observations(v) => Chunks::Observations(vec![v]),
            Records::OneMinute(v) => Chunks::OneMinute(vec![v]),
            Records::Reports(v) => Chunks::Reports(vec![v]),
            Records::Forecasts(v) => Chunks::Forecasts(vec![v]),
            Records::NwsHourly(v) => Chunks::NwsHourly(vec![v]),
            Records::DailyForecasts(v) => Chunks::DailyForecasts(vec![v]),
        }
    }
}

impl Chunks {
    /// Adds `r` when its records go to the same table; otherwise hands it back.
    fn push(&mut self, r: Records) -> Result<(), Records> {
        match (self, r) {
            (Chunks::Observations(c), Records::Observations(v)) => c.push(v),
            (Chunks::OneMinute(c), Records::OneMinute(v)) => c.push(v),
            (Chunks::Reports(c), Records::Reports(v)) => c.push(v),
            (Chunks::Forecasts(c), Records::Forecasts(v)) => c.push(v),
            (Chunks::NwsHourly(c), Records::NwsHourly(v)) => c.push(v),
            (Chunks::DailyForecasts(c), Records::DailyForecasts(v)) => c.push(v),
            (_, other) => return Err(other),
        }
        Ok(())
    }

    async fn store(self, lake: &Lake) -> Result<WriteStats, LakeError> {
        match self {
            Chunks::Observations(c) => lake.write_chunks(c).await,
            Chunks::OneMinute(c) => lake.write_chunks(c).await,
            Chunks::Reports(c) => lake.write_chunks(c).await,
            Chunks::Forecasts(c) => lake.write_chunks(c).await,
            Chunks::NwsHourly(c) => lake.write_chunks(c).await,
            Chunks::DailyForecasts(c) => lake.write_chunks(c).await,
        }
    }
}

/// One named input (a file, stdin, a request body).
#[derive(Debug, Clone)]
pub struct Input {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// Decodes `inputs` on every core and stores their records together, adding each input's
/// outcome to `summary`. One write per table rather than one per input: a write leaves a
/// file in every partition it touches, so per-input writes of many station files would
/// scatter each partition over as many small files (and decode on one core). Records keep
/// input order, so where inputs repeat a natural key the first input's row is the one
/// stored, as when they are ingested one by one.
pub async fn ingest_inputs(
    lake: &Lake,
    format: Format,
    inputs: Vec<Input>,
    opts: &IngestOptions,
    summary: &mut Summary,
) -> Result<WriteStats, LakeError> {
    let opts = opts.clone();
    let decoded = crate::lake::blocking(move || {
        use rayon::prelude::*;
        inputs.into_par_iter().map(|i| (i.name, format.decode(&i.bytes, &opts))).collect::<Vec<_>>()
    })
    .await?;
    let mut stats = WriteStats::default();
    let mut pending: Option<Chunks> = None;
    for (name, d) in decoded {
        summary.add(&name, d.read, &d.errors, WriteStats::default());
        let Some(p) = &mut pending else {
            pending = Some(d.records.into());
            continue;
        };
        if let Err(other) = p.push(d.records) {
            if let Some(done) = pending.replace(other.into()) {
                stats += done.store(lake).await?;
            }
        }
    }
    if let Some(p) = pending {
        stats += p.store(lake).await?;
    }
    summary.add_stored(stats);
    Ok(stats)
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
