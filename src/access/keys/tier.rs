//! Account tiers: what a key may do (rate limits in [`crate::access::limits`], endpoint access).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use super::error::KeyError;

/// Account tier of a key; decides rate limits ([`super::limits`]) and endpoint access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Professional,
    Developer,
    Enterprise,
    /// Referenced but not described by the spec; treated like Professional everywhere.
    Testing,
}

impl Tier {
    /// All tiers, for help texts and table-driven tests.
    pub const ALL: [Tier; 4] = [Tier::Professional, Tier::Developer, Tier::Enterprise, Tier::Testing];

    /// The lowercase name used in the key file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Professional => "professional",
            Tier::Developer => "developer",
            Tier::Enterprise => "enterprise",
            Tier::Testing => "testing",
        }
    }

    /// Whether the accuracy, nearby-stations and pacing endpoints are open to this tier
    /// (spec 5.6: Developer and Enterprise only; others get 403).
    pub fn has_premium_endpoints(self) -> bool {
        matches!(self, Tier::Developer | Tier::Enterprise)
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Tier {
    type Err = KeyError;

    /// Case-insensitive, surrounding blanks ignored: `Professional`, `DEVELOPER`, ` testing`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Tier::ALL.into_iter().find(|tier| tier.as_str().eq_ignore_ascii_case(t)).ok_or_else(|| {
            let shown: String = t.chars().take(32).collect();
            KeyError::UnknownTier(shown)
        })
    }
}

impl<'de> Deserialize<'de> for Tier {
    /// Accepts any case, so a hand-edited `"Enterprise"` in the key file still loads.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
