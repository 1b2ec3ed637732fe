//! METAR/SPECI/HF-METAR in every container: the detected path `wxlake ingest --format metar`
//! and `POST /api/v2/ingest/metar` take (with and without `month`), then each container's
//! entry point on its own (delimited CSV/TSV, AWC JSON, collectives, bare lines).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wxlake_fuzz::decode::metar_container::{
    decode_awc_json, decode_bare_lines, decode_collective, decode_delimited, decode_metar_input_at,
};
use wxlake_fuzz::{check, clock, metar, month_hint};

fuzz_target!(|data: &[u8]| {
    let now = clock(data);
    let month = month_hint(data);
    check(&decode_metar_input_at(data, None, now), metar);
    check(&decode_metar_input_at(data, Some(month), now), metar);
    if let Ok(text) = std::str::from_utf8(data) {
        check(&decode_delimited(text), metar);
        check(&decode_awc_json(text), metar);
        check(&decode_collective(text, None, now), metar);
        check(&decode_collective(text, Some(month), now), metar);
        check(&decode_bare_lines(text, None, now), metar);
        check(&decode_bare_lines(text, Some(month), now), metar);
    }
});
