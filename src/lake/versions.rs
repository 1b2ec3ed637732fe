//! A re-published forecast run: its other values are stored beside the first ones, which
//! stay, marked with the time they stopped being current (issue 31, "versions are kept,
//! not overwritten").
//!
//! A forecast row's natural key is (model, place, run, valid time), hashed into `row_key`.
//! A write whose row has a stored natural key is a re-ingest: with the same values (a
//! re-fetch, a replayed WAL, the same run in another format) it is a no-op as before; with
//! other values it is a new version of the fact. The version is stored with a `row_key`
//! that hashes its values too ([`version_key`], so ingesting it again is a no-op and the
//! API's `id` of each version differs), and the stored version it replaces gets
//! `superseded_at` = the new one's `available_at`. A re-publication is known when wxlake
//! receives it, whatever the run's publication rule says (the rule dates the first
//! publication), so that is its `available_at`.
//!
//! Readers then choose without a window over the table: the current rows are those with
//! `superseded_at IS NULL` ([`CURRENT`](super::schema::CURRENT)); the row current at t is
//! the one with `available_at <= t` and `superseded_at` NULL or after t (`as_of`).
//!
//! Setting `superseded_at` rewrites the files of the partitions concerned, in one commit
//! that replaces them (a concurrent writer or compaction there conflicts and the versions
//! are stored again on a new snapshot). That is the write's second commit, after the one
//! appending its new facts: a failure between them leaves the first values current and
//! the write failed, so the write path keeps the input in its WAL and the retry stores the
//! versions (its new facts are then duplicates). Every process writing a lake must run a
//! binary that knows `superseded_at`: an older one's compaction would drop the column and
//! make every version current again. Re-publications are rare (the live feeds never
//! re-fetch a stored run: only `wxlake ingest` and `POST /api/v2/ingest` bring them), so
//! the cost of reading a partition whole falls on the re-ingest that causes it. Within one
//! input the first row of a natural key wins, as for every table: a file contradicting
//! itself is not a re-publication; a later input of the same write is, as if ingested
//! after it.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, TimestampMicrosecondArray, UInt64Array};
use datafusion::arrow::compute::{concat_batches, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int32Type, TimestampMicrosecondType};

use super::compact::{conform, read_file};
use super::delta::{backoff, partitions_predicate, Change, TableShape, COMMIT_ATTEMPTS};
use super::keys::{forecast_key, version_key};
use super::schema::{TableDef, SUPERSEDED_AT};
use super::store::delete_if_present;
use super::{Lake, LakeError};

/// The columns a re-publication can change, besides the floats: the coordinates are the
/// place's, not the forecast's, so they are left out of the values.
const INTS: [&str; 2] = ["wind_direction_deg", "weather_code"];
const PLACE: [&str; 2] = ["latitude", "longitude"];

/// The natural key and the version key of each stored forecast row of `model` (the
/// partition's), computed from its columns the way the writer computes them from a row.
fn keys_of(batch: &RecordBatch, model: &str) -> Result<(Vec<u64>, Vec<u64>), LakeError> {
    let schema = batch.schema();
    let col = |name: &str| -> Result<&ArrayRef, LakeError> { Ok(batch.column(schema.index_of(name)?)) };
    let location = col("location_name")?.as_string::<i32>();
    let (run, valid) = (
        col("run_time")?.as_primitive::<TimestampMicrosecondType>(),
        col("valid_time")?.as_primitive::<TimestampMicrosecondType>(),
    );
    let floats: Vec<_> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.data_type() == &DataType::Float64 && !PLACE.contains(&f.name().as_str()))
        .map(|(i, _)| batch.column(i).as_primitive::<Float64Type>())
        .collect();
    let ints = [col(INTS[0])?.as_primitive::<Int32Type>(), col(INTS[1])?.as_primitive::<Int32Type>()];
    let mut natural = Vec::with_capacity(batch.num_rows());
    let mut version = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let key = forecast_key(model, location.value(i), run.value(i), valid.value(i));
        natural.push(key);
        version.push(version_key(
            key,
            floats.iter().map(|a| a.is_valid(i).then(|| a.value(i))),
            ints.map(|a| a.is_valid(i).then(|| a.value(i))),
        ));
    }
    Ok((natural, version))
}

/// The `model=` value of a forecasts partition directory.
fn model_of(dir: &str) -> &str {
    dir.split('/').find_map(|p| p.strip_prefix("model=")).unwrap_or_default()
}

impl Lake {
    /// Stores the rows of `candidates` (per partition directory, built with their
    /// [`version_key`] as `row_key`) whose natural key is stored with other values, and
    /// marks the versions they replace (module docs). Returns how many it stored, and in
    /// how many new files. The caller holds the write lock.
    pub(super) async fn store_versions(
        &self,
        table: &'static TableDef,
        candidates: &[(String, RecordBatch)],
    ) -> Result<(usize, usize), LakeError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.versions_once(table, candidates).await {
                Err(LakeError::Conflict(why)) if attempt < COMMIT_ATTEMPTS => {
                    tracing::info!(table = table.name, attempt, %why, "versions conflicted; retrying on a new snapshot");
                    backoff(attempt).await;
                }
                done => return done,
            }
        }
    }

    async fn versions_once(
        &self,
        table: &'static TableDef,
        candidates: &[(String, RecordBatch)],
    ) -> Result<(usize, usize), LakeError> {
        let store = self.store();
        let shape = TableShape::lake_table(table);
        let (snapshot, active) = self.table_files(&shape).await?;
        let (mut added, mut removed, mut written, mut stored) = (Vec::new(), Vec::new(), Vec::new(), 0);
        for (dir, new) in candidates {
            let files: Vec<_> = active.iter().filter(|f| f.partition_dir() == dir).cloned().collect();
            let model = model_of(dir);
            let mut batches = Vec::with_capacity(files.len());
            for f in &files {
                for b in read_file(&store, &f.location).await? {
                    batches.push(conform(table, Some(model), &b)?);
                }
            }
            let old = concat_batches(&table.file_schema(), &batches)?;
            let Some(merged) = supersede(&old, &conform(table, Some(model), new)?, model)? else { continue };
            stored += merged.num_rows() - old.num_rows();
            let (out, file) = self.put_partition_file(table, dir, &merged).await?;
            written.push(out);
            added.push(file);
            removed.extend(files);
        }
        if added.is_empty() {
            return Ok((0, 0));
        }
        let files = added.len();
        let first = shape.partition_cols.first().map_or("", |(c, _)| c.as_str());
        let read = partitions_predicate(first, added.iter().map(|f| model_of(&f.partition_dir)));
        if let Err(e) = self.commit(&shape, &snapshot, Change::Replace { files: added, remove: removed, read }).await {
            for p in &written {
                delete_if_present(store.as_ref(), p).await.ok();
            }
            return Err(e);
        }
        Ok((stored, files))
    }
}

/// A partition's stored rows `old` with the rows of `new` that are versions of them, in
/// order: each replaces the version current before it (stored or earlier in `new`), which
/// gets `superseded_at`. A row of `new` whose values some version of its fact already has
/// is dropped. `None` when that leaves none.
fn supersede(old: &RecordBatch, new: &RecordBatch, model: &str) -> Result<Option<RecordBatch>, LakeError> {
    let both = concat_batches(&old.schema(), [old, new])?;
    let (natural, version) = keys_of(&both, model)?;
    let column = |name: &str| -> Result<TimestampMicrosecondArray, LakeError> {
        Ok(both.column(both.schema().index_of(name)?).as_primitive::<TimestampMicrosecondType>().clone())
    };
    let available = column("available_at")?;
    let mut superseded: Vec<Option<i64>> = column(SUPERSEDED_AT)?.iter().collect();
    // Per natural key: the version keys stored, and the row current now.
    let mut facts: HashMap<u64, (Vec<u64>, Option<usize>)> = HashMap::new();
    for i in 0..old.num_rows() {
        let fact = facts.entry(natural[i]).or_default();
        fact.0.push(version[i]);
        if superseded[i].is_none() {
            fact.1 = Some(i);
        }
    }
    let mut keep: Vec<u64> = (0..old.num_rows() as u64).collect();
    for i in old.num_rows()..both.num_rows() {
        let fact = facts.entry(natural[i]).or_default();
        if fact.0.contains(&version[i]) {
            continue;
        }
        let at = available.is_valid(i).then(|| available.value(i));
        if let Some(current) = fact.1.replace(i) {
            // Never before the replaced version became available: it was current then.
            let since = available.is_valid(current).then(|| available.value(current));
            superseded[current] = at.max(since);
        }
        fact.0.push(version[i]);
        keep.push(i as u64);
    }
    if keep.len() == old.num_rows() {
        return Ok(None);
    }
    let mut cols = both.columns().to_vec();
    cols[both.schema().index_of(SUPERSEDED_AT)?] =
        Arc::new(TimestampMicrosecondArray::from(superseded).with_timezone("UTC"));
    let both = RecordBatch::try_new(both.schema(), cols)?;
    Ok(Some(take_record_batch(&both, &UInt64Array::from(keep))?))
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};

    use super::*;
    use crate::decode::types::ForecastRow;
    use crate::lake::rows::LakeRecord;
    use crate::lake::writer::batch_of;

    fn row(lead: i64, temp_c: Option<f64>, code: Option<i32>) -> ForecastRow {
        let run = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
        let mut r = ForecastRow {
            model: "HRRR",
            location_name: "KAUS".into(),
            latitude: 30.18.into(),
            longitude: Some(-97.68).into(),
            run_time: run,
            valid_time: run + Duration::hours(lead),
            forecast_hour: lead as i32,
            temperature_c: temp_c.into(),
            precipitation_mm: Some(0.2).into(),
            weather_code: code,
            ..Default::default()
        };
        r.complete_temperatures();
        r
    }

    #[test]
    fn a_rows_version_key_is_the_one_its_stored_columns_give() {
        let rows = vec![row(1, Some(21.3), Some(3)), row(2, None, None), row(3, Some(-0.04), Some(61))];
        let batch = batch_of(&rows, Utc::now()).unwrap();
        let (natural, version) = keys_of(&batch, "HRRR").unwrap();
        assert_eq!(natural, rows.iter().map(LakeRecord::row_key).collect::<Vec<_>>());
        assert_eq!(version, rows.iter().map(LakeRecord::version_key).collect::<Vec<_>>());
    }

    #[test]
    fn a_version_key_tells_values_apart_but_not_their_place_or_rounding() {
        let key = |r: &ForecastRow| r.version_key();
        let base = row(1, Some(21.3), Some(3));
        assert_ne!(key(&base), base.row_key());
        let mut moved = base.clone();
        moved.latitude = 30.2.into();
        assert_eq!(key(&moved), key(&base), "the coordinates are the place's");
        let mut noise = base.clone();
        noise.temperature_c = Some(21.3 + 1e-7).into();
        assert_eq!(key(&noise), key(&base), "within a thousandth");
        for other in [
            row(1, Some(21.4), Some(3)),
            row(1, Some(21.3), Some(4)),
            row(1, Some(21.3), None),
            row(2, Some(21.3), Some(3)),
        ] {
            assert_ne!(key(&other), key(&base));
        }
        // A value that moves from one column to the next is another version.
        let mut shifted = base.clone();
        (shifted.precipitation_mm, shifted.precipitation_in) = (shifted.precipitation_in, shifted.precipitation_mm);
        assert_ne!(key(&shifted), key(&base));
    }
}
