//! Daily Summary Messages, as `Format::Dsm` decodes them: without `month` (received by
//! "now", here the input's clock) and with it (the 15th of that month, or the clock when
//! the month is not a representable date, as `Format::decode` falls back to now).
#![no_main]

use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use wxlake_fuzz::decode::dsm::{decode_dsm_received, decode_dsm_with_year};
use wxlake_fuzz::{check, clock, daily_report, month_hint};

fuzz_target!(|data: &[u8]| {
    let now = clock(data);
    check(&decode_dsm_received(data, now), daily_report);
    let (y, m) = month_hint(data);
    let reference = Utc.with_ymd_and_hms(y, m, 15, 12, 0, 0).single().unwrap_or(now);
    check(&decode_dsm_with_year(data, reference), daily_report);
});
