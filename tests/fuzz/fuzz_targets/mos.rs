//! MOS and NBM text bulletins, as `Format::Mos` decodes them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wxlake_fuzz::decode::mos::decode_mos;
use wxlake_fuzz::{check, forecast_row};

fuzz_target!(|data: &[u8]| {
    check(&decode_mos(data), forecast_row);
});
