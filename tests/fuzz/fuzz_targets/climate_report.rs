//! The NWS Daily Climate Report (CLI product), as `Format::Cli` decodes it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wxlake_fuzz::decode::climate_report::decode_cli;
use wxlake_fuzz::{check, daily_report};

fuzz_target!(|data: &[u8]| {
    check(&decode_cli(data), daily_report);
});
