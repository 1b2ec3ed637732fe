//! The stream's authorization (spec 5, 8), checked against the same [`Access`] as every
//! front door: a stream-enabled key, catalog stations, and the Professional tier's station
//! limit.

use crate::access::keys::Tier;
use crate::access::Access;
use crate::catalog::{unknown_station_message, Catalog};
use crate::echo::cut_echoes;
use crate::stream::{StreamAuth, StreamGrant, StreamRefusal};

/// Events only the tiers with the analytics endpoints receive.
pub const PREMIUM_EVENTS: [&str; 1] = ["brackets"];

/// Stations a Professional key may stream at once (spec 8).
pub const PROFESSIONAL_MAX_STATIONS: usize = 5;

impl StreamAuth for Access {
    fn authorize(&self, api_key: &str, stations: &[String]) -> Result<StreamGrant, StreamRefusal> {
        if api_key.is_empty() {
            return Err(StreamRefusal::new(401, "Missing API key", "pass the key as api_key=<API_KEY>"));
        }
        let Some(key) = self.authenticate(api_key) else {
            return Err(StreamRefusal::new(401, "Invalid API key", "the key is unknown or revoked"));
        };
        if !key.stream {
            return Err(StreamRefusal::new(
                403,
                "Stream access not enabled for this key",
                format!("enable it with: wxlake keys enable-stream {}", key.id),
            ));
        }
        if stations.is_empty() {
            return Err(StreamRefusal::new(
                400,
                "Missing required parameter: stations",
                "comma-separated station codes",
            ));
        }
        if let Some(bad) = stations.iter().find(|s| Catalog::global().get(s).is_none()) {
            // The REST answer's wording, echo cut short as there.
            let (error, details) = unknown_station_message("stations", bad);
            return Err(StreamRefusal::new(400, cut_echoes(&error), cut_echoes(&details)));
        }
        if key.tier == Tier::Professional && stations.len() > PROFESSIONAL_MAX_STATIONS {
            return Err(StreamRefusal::new(
                403,
                "Too many stations",
                format!(
                    "the Professional tier streams at most {PROFESSIONAL_MAX_STATIONS} stations; {} requested",
                    stations.len()
                ),
            ));
        }
        // The analytics of the Developer and Enterprise tiers (brackets.php) stay theirs on
        // the stream too.
        let withheld =
            if key.tier.has_premium_endpoints() { Vec::new() } else { PREMIUM_EVENTS.map(String::from).to_vec() };
        // One connection per user account (spec 5 item 7), not per key.
        Ok(StreamGrant { user: key.user.clone(), stations: stations.to_vec(), withheld })
    }
}
