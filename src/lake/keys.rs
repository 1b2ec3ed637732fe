//! The hashes that identify stored rows beyond the natural keys schema.rs declares: a
//! forecast's natural key, and the key of a re-published forecast's other values
//! (`lake::versions`). Computed from a decoded row (rows.rs) and from stored columns
//! (versions.rs) alike, so both must come from here.

use super::schema::KeyHasher;

/// The natural key of a forecast row (`FORECASTS.key_cols`), from its fields or from its
/// stored columns (`lake::versions`).
pub fn forecast_key(model: &str, location: &str, run_us: i64, valid_us: i64) -> u64 {
    KeyHasher::default().str(model).str(location).i64(run_us).i64(valid_us).finish()
}

/// The `row_key` of a version: its natural key, then its values rounded to a thousandth of
/// their unit, so the same run decoded from another format (°F derived from °C, say) is
/// the same version. `floats` are the forecast values in the file schema's order, the
/// coordinates left out; `ints` the wind direction and weather code.
pub fn version_key(natural: u64, floats: impl IntoIterator<Item = Option<f64>>, ints: [Option<i32>; 2]) -> u64 {
    // A tag byte, so a missing value never hashes like a present one.
    let tagged = |h: KeyHasher, v: Option<i64>| match v {
        Some(v) => {
            let mut b = [1u8; 9];
            b[1..].copy_from_slice(&v.to_le_bytes());
            h.bytes(&b)
        }
        None => h.bytes(&[0]),
    };
    let h =
        floats.into_iter().fold(KeyHasher::from_key(natural), |h, v| tagged(h, v.map(|v| (v * 1000.0).round() as i64)));
    ints.into_iter().fold(h, |h, v| tagged(h, v.map(i64::from))).finish()
}
