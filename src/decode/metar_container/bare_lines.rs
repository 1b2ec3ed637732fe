//! One report per line, dated by `--month` or the clock.

use chrono::{DateTime, Utc};

use super::dating::{report_reference, Dating};
use super::report::{clean_line, finish_report, is_keyword, keyword_kind, normalise_ws};
use crate::decode::limits::METAR_REPORT;
use crate::decode::types::{Decoded, Metar, ReportKind};

/// Decodes one report per line (optional `METAR `/`SPECI ` prefix and `=`). With
/// `--month`, day DD of a report is DD of that month; without, the latest such day not
/// after now. A line holding only `METAR` or `SPECI` sets the kind of the lines after it.
pub fn decode_bare_lines(text: &str, month_hint: Option<(i32, u32)>, now: DateTime<Utc>) -> Decoded<Metar> {
    let dating = Dating { month_hint, now };
    let mut out = Decoded::new();
    let mut default_kind = ReportKind::Metar;
    for (idx, line) in text.lines().enumerate() {
        out.read += 1;
        let line = clean_line(line).trim_end_matches('=').trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Err(reason) = METAR_REPORT.check(line.len()) {
            out.reject(idx + 1, reason);
            continue;
        }
        if is_keyword(line) {
            default_kind = keyword_kind(line);
            continue;
        }
        let text = normalise_ws(line);
        let result =
            report_reference(&text, dating).and_then(|reference| finish_report(&text, reference, default_kind));
        match result {
            Ok(m) => out.records.push(m),
            Err(reason) => out.reject(idx + 1, reason),
        }
    }
    out
}
