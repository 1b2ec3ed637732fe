//! Open-Meteo JSON (hourly, previous-runs, ensemble), as `Format::OpenMeteo` decodes it:
//! without `station`/`run_time` and with both (the run time is the input's clock). Errors
//! about the whole response are at line 0 there, by design.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wxlake_fuzz::decode::open_meteo::decode_open_meteo;
use wxlake_fuzz::{check_from, clock, forecast_row};

fuzz_target!(|data: &[u8]| {
    check_from(&decode_open_meteo(data, "", None), 0, forecast_row);
    check_from(&decode_open_meteo(data, "KNYC", Some(clock(data))), 0, forecast_row);
});
