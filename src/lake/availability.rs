//! The two times every raw lake row carries: `received_at`, when wxlake stored it (the
//! write path's clock), and `available_at`, when the world could first have known it.
//!
//! Rows that arrive live (through the write service: its WAL, feeds in `serve`, POSTed
//! ingest) were known when received, so `available_at = received_at`. Backfilled rows
//! (`wxlake ingest`, feed backfills, the demo loader, rows stored before these columns
//! existed) take their source's publication time by the rules below, never later than
//! when wxlake had them: `available_at = min(published, received_at)`. An `as_of` query
//! (`lake::as_of`) then sees a backfilled row exactly when a live service could have.
//!
//! Every rule errs late: an early figure is look-ahead in a backtest, a late one only
//! hides a row a little longer. The rules take primitives, so the row path
//! ([`super::rows::LakeRecord::published_at`]) and the fill of older files
//! ([`fill_times`]) share them.

use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{Date32Type, TimestampMicrosecondType};

use super::schema::{TableDef, FORECASTS, NWS_HOURLY, OBSERVATIONS, ONEMIN, REPORTS};
use super::LakeError;
use crate::catalog::lst_to_utc;
use crate::decode::types::PUBLICATION_UNKNOWN;

/// A METAR or SPECI without a stated receipt time: available 10 minutes after its
/// observation time. aviationweather.gov's data API states `receiptTime` ("time the
/// observation was received"): in the real sample
/// `metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json` all nine reports arrive 3 min 11 s
/// to 3 min 34 s after observation; an ASOS routine observation is ready for transmission
/// by :53:20 for a :51 observation (ForeFlight, "Aging surface observations", 2016).
/// Ten minutes covers both with margin.
pub const METAR_DELAY: Duration = Duration::minutes(10);

/// A five-minute MADIS high-frequency report (`HF-METAR`, from IEM): 20 minutes.
/// Provisional: MADIS documents no latency for HFMETAR; IEM ingests them from MADIS in
/// batches, so twice the routine figure.
pub const HF_METAR_DELAY: Duration = Duration::minutes(20);

/// A correction (METAR `COR`, CLI/DSM `CCA`) without a receipt time: an hour after the
/// original's time. Provisional: no document states when corrections are sent; a CCA
/// keeps the original heading's time, so without a margin it would look as early as the
/// report it corrects.
pub const CORRECTION_MARGIN: Duration = Duration::hours(1);

/// One-minute ASOS data: a day after the minute. wxlake's source (IEM) takes them from
/// NCEI "about a day late" (`feeds::iem_onemin`).
pub const ONEMIN_DELAY: Duration = Duration::hours(24);

/// A preliminary climate report with no issuance time: an hour after the local time its
/// values are valid through (its own statement "VALID AS OF ... "), converted to UTC.
pub const PRELIMINARY_MARGIN: Duration = Duration::hours(1);

/// When an observation could first be known: the source's receipt time when it states
/// one, else its observation time plus the delay of its report type.
pub fn observation(time: DateTime<Utc>, report_type: &str, cor: bool, receipt: Option<DateTime<Utc>>) -> DateTime<Utc> {
    if let Some(r) = receipt {
        return r.max(time);
    }
    let delay = if report_type == "HF-METAR" { HF_METAR_DELAY } else { METAR_DELAY };
    time + delay + if cor { CORRECTION_MARGIN } else { Duration::zero() }
}

/// When a one-minute temperature could first be known.
pub fn onemin(time: DateTime<Utc>) -> DateTime<Utc> {
    time + ONEMIN_DELAY
}

/// When a climate report (CLI, DSM) could first be known: its issuance time (from its
/// heading, or api.weather.gov's `issuanceTime`), plus [`CORRECTION_MARGIN`] for a
/// correction. Without one: a preliminary report an hour after the time it is valid
/// through; anything else noon (LST) of the day after its climate day, which errs late
/// (finals are issued between about 00:30 and mid-morning).
pub fn report(
    station: &str,
    date: NaiveDate,
    issued_at: Option<DateTime<Utc>>,
    valid_as_of_lst: Option<NaiveDateTime>,
    correction: bool,
) -> DateTime<Utc> {
    if let Some(t) = issued_at {
        return t + if correction { CORRECTION_MARGIN } else { Duration::zero() };
    }
    if let Some(utc) = valid_as_of_lst.and_then(|t| lst_to_utc(station, t)) {
        return utc + PRELIMINARY_MARGIN;
    }
    let next = date.succ_opt().unwrap_or(date);
    let noon = next.and_time(NaiveTime::from_hms_opt(12, 0, 0).unwrap_or(NaiveTime::MIN));
    // A station outside the catalog: noon UTC plus the widest US offset (Hawaii, 10 h).
    lst_to_utc(station, noon).unwrap_or_else(|| noon.and_utc() + Duration::hours(10))
}

/// When a model run's value could first be known: its run time plus the model's
/// publication delay (`models::PUBLICATION`), or later when the row says so
/// (`published_after_s`, e.g. Open-Meteo's previous-runs values). `None` when the run time
/// is a guess ([`PUBLICATION_UNKNOWN`]) or the model unknown: only the receipt is safe.
pub fn forecast(model: &str, run_time: DateTime<Utc>, published_after_s: u32) -> Option<DateTime<Utc>> {
    if published_after_s == PUBLICATION_UNKNOWN {
        return None;
    }
    let delay = i64::from(crate::models::publication(model)?.delay_min) * 60;
    Some(run_time + Duration::seconds(delay.max(i64::from(published_after_s))))
}

/// When an NWS hourly forecast version could first be known: its `generatedAt`, the time
/// api.weather.gov says the document was made (its `updateTime`, the grid edit, is earlier
/// but reached the API at a time no source states).
pub fn nws_hourly(generated_at: DateTime<Utc>) -> DateTime<Utc> {
    generated_at
}

/// `available_at` of a row received at `received` whose source published it at
/// `published` (`None`: unknown): never after wxlake had it.
pub fn settle(published: Option<DateTime<Utc>>, received: DateTime<Utc>) -> DateTime<Utc> {
    published.map_or(received, |p| p.min(received))
}

/// The same, on microseconds since the epoch.
fn settle_micros(published: Option<i64>, received: i64) -> i64 {
    published.map_or(received, |p| p.min(received))
}

/// A batch of a file written before the two times existed, with them filled: both in the
/// table's file schema. `received_at` is the row's `inserted_at` (nothing older is known),
/// `available_at` the backfill rule of its table settled against it. Such rows carry no
/// record of how they arrived, so every one is treated as backfilled: a live row gets its
/// receipt time anyway whenever its source's delay is longer than it took to arrive.
/// `model` is the `model` partition value of a forecasts file. A batch that has the
/// columns is returned as it is.
pub fn fill_times(table: &TableDef, model: Option<&str>, batch: &RecordBatch) -> Result<RecordBatch, LakeError> {
    let schema = table.file_schema();
    if batch.schema().index_of("available_at").is_ok() {
        return Ok(batch.clone());
    }
    let col = |name: &str| -> Result<&ArrayRef, LakeError> { Ok(batch.column(batch.schema().index_of(name)?)) };
    let time = |name: &str| -> Result<TimestampMicrosecondArray, LakeError> {
        Ok(col(name)?.as_primitive::<TimestampMicrosecondType>().clone())
    };
    let inserted = time("inserted_at")?;
    let n = batch.num_rows();
    let at = |v: i64| DateTime::<Utc>::from_timestamp_micros(v).unwrap_or_default();
    let published: Vec<Option<i64>> = if table.name == OBSERVATIONS.name {
        let (t, kind, cor) =
            (time("observation_time")?, col("report_type")?.as_string::<i32>(), col("cor")?.as_boolean());
        (0..n)
            .map(|i| Some(observation(at(t.value(i)), kind.value(i), cor.value(i), None).timestamp_micros()))
            .collect()
    } else if table.name == ONEMIN.name {
        let t = time("observation_time")?;
        (0..n).map(|i| Some(onemin(at(t.value(i))).timestamp_micros())).collect()
    } else if table.name == REPORTS.name {
        let station = col("station_code")?.as_string::<i32>();
        let date = col("report_date")?.as_primitive::<Date32Type>();
        let (issued, valid) = (time("issued_at")?, time("valid_as_of_lst")?);
        let correction = col("correction")?.as_boolean();
        (0..n)
            .map(|i| {
                let day = date.value_as_date(i).unwrap_or_default();
                let issued = issued.is_valid(i).then(|| at(issued.value(i)));
                let valid = valid.is_valid(i).then(|| at(valid.value(i)).naive_utc());
                Some(report(station.value(i), day, issued, valid, correction.value(i)).timestamp_micros())
            })
            .collect()
    } else if table.name == FORECASTS.name {
        let run = time("run_time")?;
        let model = model.unwrap_or_default();
        (0..n).map(|i| forecast(model, at(run.value(i)), 0).map(|t| t.timestamp_micros())).collect()
    } else if table.name == NWS_HOURLY.name {
        let g = time("generated_at")?;
        (0..n).map(|i| Some(nws_hourly(at(g.value(i))).timestamp_micros())).collect()
    } else {
        return Err(LakeError::Config(format!("table {} carries no availability times", table.name)));
    };
    let available: Vec<i64> = published.iter().zip(inserted.values()).map(|(p, &r)| settle_micros(*p, r)).collect();
    let utc = |v: Vec<i64>| -> ArrayRef { Arc::new(TimestampMicrosecondArray::from(v).with_timezone("UTC")) };
    let mut cols = batch.columns().to_vec();
    cols.push(utc(inserted.values().to_vec()));
    cols.push(utc(available));
    if cols.len() != schema.fields().len() {
        return Err(LakeError::Config(format!(
            "a {} file has {} columns where {} are expected",
            table.name,
            batch.num_columns(),
            schema.fields().len() - 2
        )));
    }
    Ok(RecordBatch::try_new(schema, cols)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_utc;

    fn t(s: &str) -> DateTime<Utc> {
        parse_utc(s).unwrap()
    }

    #[test]
    fn observations_wait_for_their_receipt_or_their_delay() {
        let obs = t("2026-09-25T05:51:00Z");
        // The AWC sample's KNYC report: received 3 min 11 s after observation.
        let receipt = t("2026-09-25T05:54:11.152Z");
        assert_eq!(observation(obs, "METAR", false, Some(receipt)), receipt);
        assert_eq!(observation(obs, "METAR", false, None), t("2026-09-25T06:01:00Z"));
        assert_eq!(observation(obs, "SPECI", true, None), t("2026-09-25T07:01:00Z"));
        assert_eq!(observation(obs, "HF-METAR", false, None), t("2026-09-25T06:11:00Z"));
        // A receipt stated before the observation (a source's clock) is no earlier than it.
        assert_eq!(observation(obs, "METAR", false, Some(t("2026-09-25T05:00:00Z"))), obs);
    }

    #[test]
    fn reports_are_available_when_issued() {
        let day = NaiveDate::from_ymd_opt(2013, 1, 2).unwrap();
        // CLINYC's heading `CDUS41 KOKX 030616`: issued 06:16 UTC on the 3rd.
        let issued = t("2013-01-03T06:16:00Z");
        assert_eq!(report("KNYC", day, Some(issued), None, false), issued);
        assert_eq!(report("KNYC", day, Some(issued), None, true), issued + CORRECTION_MARGIN);
        // A preliminary valid as of 17:00 LST (EST, UTC-5): 22:00 UTC, then an hour.
        let valid = day.and_hms_opt(17, 0, 0).unwrap();
        assert_eq!(report("KNYC", day, None, Some(valid), false), t("2013-01-02T23:00:00Z"));
        // Nothing stated: noon LST of the next day (17:00 UTC for New York).
        assert_eq!(report("KNYC", day, None, None, false), t("2013-01-03T17:00:00Z"));
        assert_eq!(report("XXXX", day, None, None, false), t("2013-01-03T22:00:00Z"));
    }

    #[test]
    fn runs_wait_for_their_models_publication() {
        let run = t("2026-09-24T00:00:00Z");
        assert_eq!(forecast("GFS", run, 0), Some(t("2026-09-24T05:30:00Z")));
        assert_eq!(forecast("HRRR", run, 0), Some(t("2026-09-24T02:15:00Z")));
        // A later bound stated by the row wins over the model's delay, an earlier one not.
        assert_eq!(forecast("GFS", run, 18 * 3600), Some(t("2026-09-24T18:00:00Z")));
        assert_eq!(forecast("GFS", run, 60), Some(t("2026-09-24T05:30:00Z")));
        assert_eq!(forecast("GFS", run, PUBLICATION_UNKNOWN), None);
        assert_eq!(forecast("FOO", run, 0), None);
    }

    #[test]
    fn available_is_never_after_received() {
        let r = t("2026-09-24T04:00:00Z");
        assert_eq!(settle(Some(t("2026-09-24T05:30:00Z")), r), r);
        assert_eq!(settle(Some(t("2026-09-24T03:00:00Z")), r), t("2026-09-24T03:00:00Z"));
        assert_eq!(settle(None, r), r);
    }
}
