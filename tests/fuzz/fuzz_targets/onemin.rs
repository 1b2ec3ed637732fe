//! One-minute ASOS temperature CSV, as `Format::Onemin` decodes it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wxlake_fuzz::decode::onemin::decode_onemin;
use wxlake_fuzz::{check, one_minute};

fuzz_target!(|data: &[u8]| {
    check(&decode_onemin(data), one_minute);
});
