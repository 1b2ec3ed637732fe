//! The two settlement logics a trading-day high/low is computed under.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::time::DayClock;

/// Which rule book a day's high/low follows (spec 4.1 `logic`).
///
/// `Nws` settles markets on the national climate report: a Local Standard Time day and every
/// source that can move the official value. `Wu` settles markets on a weather-site history: a
/// civil day and routine METAR/SPECI reports only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(description = "A trading-day logic.")]
pub enum Logic {
    Nws,
    Wu,
}

impl Logic {
    /// Both logics, in the order the stream payloads list them.
    pub const ALL: [Logic; 2] = [Logic::Nws, Logic::Wu];

    /// The spelling the API and the stream use.
    pub fn as_str(self) -> &'static str {
        match self {
            Logic::Nws => "nws",
            Logic::Wu => "wu",
        }
    }

    /// Parses a query parameter (`nws`/`wu`, any case, surrounding blanks ignored).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("nws") {
            Some(Logic::Nws)
        } else if s.eq_ignore_ascii_case("wu") {
            Some(Logic::Wu)
        } else {
            None
        }
    }

    /// The clock the logic's day is counted in: `nws` keeps Standard Time all year.
    pub fn clock(self) -> DayClock {
        match self {
            Logic::Nws => DayClock::Standard,
            Logic::Wu => DayClock::Civil,
        }
    }

    /// Dense index for per-logic arrays.
    pub(crate) fn index(self) -> usize {
        match self {
            Logic::Nws => 0,
            Logic::Wu => 1,
        }
    }
}

impl fmt::Display for Logic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Logic {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Logic::parse(s).ok_or_else(|| format!("expected logic 'nws' or 'wu', found '{}'", s.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_both_spellings() {
        for (text, want) in [
            ("nws", Some(Logic::Nws)),
            (" WU ", Some(Logic::Wu)),
            ("Nws", Some(Logic::Nws)),
            ("", None),
            ("nwsx", None),
        ] {
            assert_eq!(Logic::parse(text), want, "{text:?}");
        }
        assert_eq!("wu".parse::<Logic>(), Ok(Logic::Wu));
        assert!("cli".parse::<Logic>().unwrap_err().contains("'cli'"));
        assert_eq!(Logic::Nws.to_string(), "nws");
        assert_eq!(serde_json::to_string(&Logic::Wu).unwrap(), "\"wu\"");
        assert_eq!(serde_json::from_str::<Logic>("\"nws\"").unwrap(), Logic::Nws);
        assert_eq!(Logic::Nws.clock(), DayClock::Standard);
        assert_eq!(Logic::Wu.clock(), DayClock::Civil);
    }
}
