//! aviationweather.gov cache files (`/data/cache/metars.cache.csv.gz`, once gunzipped):
//! the data server's status lines (`No errors`, `No warnings`, `12 ms`,
//! `data source=metars`, `4721 results`) before a CSV whose `raw_text` column holds the
//! report and `observation_time` (ISO 8601 UTC) dates it, `metar_type` saying METAR or
//! SPECI. Past the status lines it is a delimited export like any other, so the
//! delimited decoder reads it; line numbers stay those of the whole file.

use super::decode_delimited;
use crate::decode::types::{Decoded, Metar};

/// Decodes a cache file: the status lines are skipped, the CSV after them decoded.
pub fn decode_awc_cache(text: &str) -> Decoded<Metar> {
    let (skipped, rest) = split_preamble(text);
    let mut d = decode_delimited(rest);
    d.read += skipped;
    for e in &mut d.errors {
        // Line 0 is about the input as a whole and stays 0.
        if e.line > 0 {
            e.line += skipped;
        }
    }
    d
}

/// The number of status lines at the top of `text`, and the text after them.
pub(super) fn split_preamble(text: &str) -> (usize, &str) {
    let mut rest = text;
    let mut skipped = 0;
    while let Some((line, after)) = rest.split_once('\n').or_else(|| (!rest.is_empty()).then_some((rest, ""))) {
        if !is_preamble_line(line) {
            break;
        }
        skipped += 1;
        rest = after;
    }
    (skipped, rest)
}

/// One of the data server's status lines: `No errors`, `No warnings`, `N ms`,
/// `data source=...`, `N results`.
pub(super) fn is_preamble_line(line: &str) -> bool {
    let l = line.trim().trim_start_matches('\u{feff}');
    let number_then = |suffix: &str| {
        l.strip_suffix(suffix)
            .map(str::trim_end)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    l.eq_ignore_ascii_case("No errors")
        || l.eq_ignore_ascii_case("No warnings")
        || l.starts_with("data source=")
        || number_then(" ms")
        || number_then(" results")
}
