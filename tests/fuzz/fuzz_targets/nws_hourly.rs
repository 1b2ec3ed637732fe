//! api.weather.gov hourly point forecasts, as `Format::NwsHourly` decodes them (a whole
//! input is one forecast or one error).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wxlake_fuzz::decode::nws_hourly::decode_nws_hourly;

fuzz_target!(|data: &[u8]| {
    match decode_nws_hourly(data) {
        Ok(f) => wxlake_fuzz::nws_hourly(&f),
        Err(reason) => wxlake_fuzz::check_errors(&[wxlake_fuzz::decode::types::LineError { line: 1, reason }], 1),
    }
});
