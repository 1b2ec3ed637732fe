//! Forecast rows as Parquet (`Format::Forecasts` on input starting `PAR1`).
//!
//! The parquet crate may panic on a malformed file; the decoder catches that and rejects
//! the file with a precise error. libfuzzer-sys installs a panic hook that aborts before
//! any `catch_unwind` runs, so this target replaces it with one that only remembers the
//! message: a panic the decoder catches is then an ordinary reject, and one that escapes
//! the decoder is still a crash, reported with its message.
#![no_main]

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use libfuzzer_sys::fuzz_target;
use wxlake_fuzz::decode::forecast_parquet::decode_forecast_parquet;
use wxlake_fuzz::{check, forecast_row};

thread_local! {
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

fuzz_target!(|data: &[u8]| {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        // FUZZ_SHOW_PANICS=1 prints every panic, caught or not: a panic that cannot unwind
        // (a failed unsafe precondition in a dependency) aborts before it could be reported.
        let show = std::env::var_os("FUZZ_SHOW_PANICS").is_some();
        panic::set_hook(Box::new(move |info| {
            if show {
                eprintln!("panic: {info}");
            }
            LAST_PANIC.with(|p| *p.borrow_mut() = info.to_string());
        }))
    });
    if panic::catch_unwind(AssertUnwindSafe(|| check(&decode_forecast_parquet(data), forecast_row))).is_err() {
        eprintln!("{}", LAST_PANIC.with(|p| p.borrow().clone()));
        std::process::abort();
    }
});
