//! The longest line, report or message each text format can plausibly hold: one place for
//! all of them (`docs/ingest-formats.md` lists the same values).
//!
//! Real inputs stay far below these: a METAR report with long remarks is a few hundred
//! bytes, bulletin lines (CLI, DSM, MOS/NBM) are wrapped for an 80-column teletype, CSV
//! rows hold a few dozen short cells. Anything longer is not an observation (a file
//! concatenated without line breaks, a binary blob, a hostile request), and accepting it
//! would store it in the lake and echo it back in every answer that carries the raw text.
//! Each decoder rejects such a line or record with a reason naming its length and the
//! limit, and reads on.
//!
//! JSON documents (aviationweather.gov, Open-Meteo, api.weather.gov) have no line limit:
//! a whole document may legitimately sit on one line; the report texts inside an
//! aviationweather.gov document are held to [`METAR_REPORT`].

/// A length limit of one kind of line or record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// What is limited, as the rejection reason names it ("METAR report").
    pub what: &'static str,
    /// Longest accepted length in bytes.
    pub max: usize,
}

impl Limit {
    /// `Err` with the reason when `len` bytes are over the limit.
    pub fn check(self, len: usize) -> Result<(), String> {
        if len <= self.max {
            Ok(())
        } else {
            Err(format!("{} of {len} bytes is longer than the {}-byte limit", self.what, self.max))
        }
    }
}

/// One METAR/SPECI report text, in any container (bare line, collective, CSV cell, JSON).
pub const METAR_REPORT: Limit = Limit { what: "METAR report", max: 1024 };
/// One row of a delimited METAR export (IEM CSV/TSV, or NOAA LCD with its many columns).
pub const METAR_ROW: Limit = Limit { what: "METAR CSV row", max: 16 * 1024 };
/// One line of a one-minute ASOS CSV.
pub const ONEMIN_LINE: Limit = Limit { what: "one-minute CSV line", max: 4096 };
/// One line of a CLI product.
pub const CLI_LINE: Limit = Limit { what: "CLI line", max: 1024 };
/// One CLI product (or station section of a multi-station product), stored as raw text.
pub const CLI_PRODUCT: Limit = Limit { what: "CLI product", max: 64 * 1024 };
/// One line of a DSM input.
pub const DSM_LINE: Limit = Limit { what: "DSM line", max: 1024 };
/// One DSM message (its lines up to the `=`), stored as raw text.
pub const DSM_MESSAGE: Limit = Limit { what: "DSM message", max: 1024 };
/// One line of a MOS/NBM bulletin.
pub const MOS_LINE: Limit = Limit { what: "MOS line", max: 1024 };
/// One forecast row: a CSV record or a JSON Lines object.
pub const FORECAST_ROW: Limit = Limit { what: "forecast row", max: 16 * 1024 };

/// Every limit, for the documentation test.
pub const ALL: [Limit; 9] =
    [METAR_REPORT, METAR_ROW, ONEMIN_LINE, CLI_LINE, CLI_PRODUCT, DSM_LINE, DSM_MESSAGE, MOS_LINE, FORECAST_ROW];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_names_the_length_and_the_limit() {
        assert_eq!(METAR_REPORT.check(1024), Ok(()));
        assert_eq!(
            METAR_REPORT.check(10 << 20).unwrap_err(),
            "METAR report of 10485760 bytes is longer than the 1024-byte limit"
        );
    }

    /// `docs/ingest-formats.md` lists every limit with its value: keep them in step.
    #[test]
    fn readme_lists_every_limit() {
        let readme = std::fs::read_to_string(format!("{}/docs/ingest-formats.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
        for l in ALL {
            let row = readme.lines().find(|r| r.starts_with(&format!("| {} |", l.what)));
            let row = row.unwrap_or_else(|| panic!("docs/ingest-formats.md has no '| {} |' row", l.what));
            assert!(row.contains(&format!("| {} |", l.max)), "docs/ingest-formats.md row for {}: {row}", l.what);
        }
    }
}
