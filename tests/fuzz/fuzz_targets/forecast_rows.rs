//! Forecast rows as CSV and as JSON Lines. `Format::Forecasts` picks JSONL when the first
//! non-space byte is `{` and CSV otherwise; both decoders are called on every input here,
//! since each must hold on any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wxlake_fuzz::decode::forecast_rows::{decode_forecast_csv, decode_forecast_jsonl};
use wxlake_fuzz::{check, forecast_row};

fuzz_target!(|data: &[u8]| {
    check(&decode_forecast_csv(data), forecast_row);
    check(&decode_forecast_jsonl(data), forecast_row);
});
