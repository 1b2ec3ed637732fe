//! The account an ingest gives of its inputs.

use std::fmt;

use serde::Serialize;

use crate::decode::types::LineError;
use crate::lake::writer::WriteStats;

/// How many first rejects a summary keeps verbatim.
pub const KEEP_REJECTS: usize = 20;

/// One rejected line, with the input it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reject {
    pub input: String,
    pub line: usize,
    pub reason: String,
}

/// Totals over every input of one ingest.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub inputs: usize,
    /// Lines (or JSON records) looked at, headers included.
    pub read: usize,
    /// Rows those decoded into (one line can give many: a MOS station block, a forecast
    /// document): always `stored + duplicate`.
    pub rows: usize,
    /// Rows new to the lake.
    pub stored: usize,
    /// Rows the lake already held (same natural key).
    pub duplicate: usize,
    pub rejected: usize,
    pub first_rejects: Vec<Reject>,
}

impl Summary {
    pub fn add(&mut self, input: &str, read: usize, errors: &[LineError], stats: WriteStats) {
        self.inputs += 1;
        self.read += read;
        self.add_stored(stats);
        self.rejected += errors.len();
        for e in errors.iter().take(KEEP_REJECTS.saturating_sub(self.first_rejects.len())) {
            self.first_rejects.push(Reject { input: input.to_string(), line: e.line, reason: e.reason.clone() });
        }
    }

    /// Counts a write's outcome (when it covered inputs added with empty stats).
    pub fn add_stored(&mut self, stats: WriteStats) {
        self.rows += stats.stored + stats.duplicate;
        self.stored += stats.stored;
        self.duplicate += stats.duplicate;
    }

    /// True when nothing usable was found (no record stored or recognised as duplicate).
    pub fn nothing_usable(&self) -> bool {
        self.stored + self.duplicate == 0
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} input(s): read {} lines, {} rows: stored {}, duplicate {}, rejected {}",
            self.inputs, self.read, self.rows, self.stored, self.duplicate, self.rejected
        )?;
        for r in &self.first_rejects {
            writeln!(f, "  rejected {}:{}: {}", r.input, r.line, r.reason)?;
        }
        if self.rejected > self.first_rejects.len() {
            writeln!(f, "  ... and {} more rejected", self.rejected - self.first_rejects.len())?;
        }
        Ok(())
    }
}
