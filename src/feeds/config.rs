//! The feeds' settings: the `[sources]` table of the `--config` file.
//!
//! Top-level keys of `[sources]` are the HTTP client's manners, shared by every source
//! (they are about the public services, not about one feed); each sub-table names one
//! source (`[sources.awc_metar]`) and enables it. Every key has a default, so an empty
//! `[sources.awc_metar]` polls the real public endpoint for the whole station catalog at
//! the interval its operator asks for. Durations are written in seconds (`60`, `0.5`).
//! Unknown keys and unknown sources are refused with the list of known ones: a typo must
//! not silently leave a feed at its default. So is a station outside the catalog
//! (`data/stations.csv`): the hot state, the stream, the extremes and every endpoint serve
//! catalog stations only, so such a station would be fetched for nothing (or, for the
//! sources that need its coordinates or zone, not at all).

use serde::Deserialize;
use thiserror::Error;

use crate::catalog::Catalog;

use super::awc_cache::AwcCacheConfig;
use super::awc_metar::AwcMetarConfig;
pub use super::client_config::ClientConfig;
use super::iem_asos::IemAsosConfig;
use super::iem_onemin::IemOneminConfig;
use super::mos::MosConfig;
use super::nws_hourly::NwsHourlyConfig;
use super::nws_products::{NwsProductsConfig, ProductKind};
use super::open_meteo::OpenMeteoConfig;

/// The sources this build can poll, as named in `[sources.NAME]`.
pub const SOURCES: &[&str] =
    &[AWC_METAR, AWC_CACHE, IEM_ASOS, IEM_ONEMIN, NWS_CLI, NWS_DSM, NWS_HOURLY, OPEN_METEO, MOS];

/// `[sources.awc_metar]`: aviationweather.gov METAR JSON.
pub const AWC_METAR: &str = super::awc_metar::NAME;
/// `[sources.awc_cache]`: aviationweather.gov's bulk METAR cache file.
pub const AWC_CACHE: &str = super::awc_cache::NAME;
/// `[sources.iem_asos]`: IEM ASOS METAR/SPECI/HF-METAR request service.
pub const IEM_ASOS: &str = super::iem_asos::NAME;
/// `[sources.iem_onemin]`: IEM one-minute ASOS request service.
pub const IEM_ONEMIN: &str = super::iem_onemin::NAME;
/// `[sources.nws_cli]`: api.weather.gov Daily Climate Reports (CLI).
pub const NWS_CLI: &str = ProductKind::Cli.source();
/// `[sources.nws_dsm]`: api.weather.gov Daily Summary Messages (DSM).
pub const NWS_DSM: &str = ProductKind::Dsm.source();
/// `[sources.nws_hourly]`: api.weather.gov hourly point forecasts.
pub const NWS_HOURLY: &str = super::nws_hourly::NAME;

/// `[sources.open_meteo]`: Open-Meteo model runs.
pub const OPEN_METEO: &str = super::open_meteo::NAME;
/// `[sources.mos]`: MOS and NBM text bulletins.
pub const MOS: &str = super::mos::NAME;

/// A `[sources]` table that cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("[sources.{name}] names no source; known: {known}")]
    UnknownSource { name: String, known: String },
    #[error("[sources{section}]: {message}")]
    Invalid { section: String, message: String },
    /// A table whose keys or values do not fit its source's settings.
    #[error("[sources{section}]: {source}")]
    Parse {
        section: String,
        #[source]
        source: Box<toml::de::Error>,
    },
    #[error(
        "[sources.{source_name}]: station {station:?} is not in the station catalog (data/stations.csv, {count} \
         stations{hint}); only catalog stations are served"
    )]
    NotInCatalog { source_name: String, station: String, count: usize, hint: String },
}

/// Everything under `[sources]`.
#[derive(Debug, Clone, Default)]
pub struct FeedsConfig {
    /// The HTTP client's manners (top-level keys of `[sources]`).
    pub client: ClientConfig,
    /// `[sources.awc_metar]`, when present.
    pub awc_metar: Option<AwcMetarConfig>,
    /// `[sources.awc_cache]`, when present.
    pub awc_cache: Option<AwcCacheConfig>,
    /// `[sources.iem_asos]`, when present.
    pub iem_asos: Option<IemAsosConfig>,
    /// `[sources.iem_onemin]`, when present.
    pub iem_onemin: Option<IemOneminConfig>,
    /// `[sources.nws_cli]`, when present.
    pub nws_cli: Option<NwsProductsConfig>,
    /// `[sources.nws_dsm]`, when present.
    pub nws_dsm: Option<NwsProductsConfig>,
    /// `[sources.nws_hourly]`, when present.
    pub nws_hourly: Option<NwsHourlyConfig>,
    /// Not a key of the file: where sources keep what must survive a restart (the
    /// `serve` state directory, set by the command); `None` keeps it in memory only.
    pub state_dir: Option<std::path::PathBuf>,
    /// `[sources.open_meteo]`, when present.
    pub open_meteo: Option<OpenMeteoConfig>,
    /// `[sources.mos]`, when present.
    pub mos: Option<MosConfig>,
}

impl FeedsConfig {
    /// Reads the `[sources]` table of the `--config` file.
    pub fn from_toml(table: &toml::Table) -> Result<FeedsConfig, ConfigError> {
        let mut client_keys = toml::Table::new();
        let mut cfg = FeedsConfig::default();
        for (key, value) in table {
            match (key.as_str(), value) {
                (AWC_METAR, v) => {
                    let source: AwcMetarConfig = deserialize(v.clone(), &format!(".{AWC_METAR}"))?;
                    cfg.awc_metar = Some(source.validated().map_err(|m| invalid(AWC_METAR, m))?);
                }
                (AWC_CACHE, v) => {
                    let source: AwcCacheConfig = deserialize(v.clone(), &format!(".{AWC_CACHE}"))?;
                    cfg.awc_cache = Some(source.validated().map_err(|m| invalid(AWC_CACHE, m))?);
                }
                (IEM_ASOS, v) => {
                    let source: IemAsosConfig = deserialize(v.clone(), &format!(".{IEM_ASOS}"))?;
                    cfg.iem_asos = Some(source.validated().map_err(|m| invalid(IEM_ASOS, m))?);
                }
                (IEM_ONEMIN, v) => {
                    let source: IemOneminConfig = deserialize(v.clone(), &format!(".{IEM_ONEMIN}"))?;
                    cfg.iem_onemin = Some(source.validated().map_err(|m| invalid(IEM_ONEMIN, m))?);
                }
                (NWS_CLI, v) => {
                    let source: NwsProductsConfig = deserialize(v.clone(), &format!(".{NWS_CLI}"))?;
                    cfg.nws_cli = Some(source.validated(ProductKind::Cli).map_err(|m| invalid(NWS_CLI, m))?);
                }
                (NWS_DSM, v) => {
                    let source: NwsProductsConfig = deserialize(v.clone(), &format!(".{NWS_DSM}"))?;
                    cfg.nws_dsm = Some(source.validated(ProductKind::Dsm).map_err(|m| invalid(NWS_DSM, m))?);
                }
                (NWS_HOURLY, v) => {
                    let source: NwsHourlyConfig = deserialize(v.clone(), &format!(".{NWS_HOURLY}"))?;
                    cfg.nws_hourly = Some(source.validated().map_err(|m| invalid(NWS_HOURLY, m))?);
                }
                (OPEN_METEO, v) => {
                    let source: OpenMeteoConfig = deserialize(v.clone(), &format!(".{OPEN_METEO}"))?;
                    cfg.open_meteo = Some(source.validated().map_err(|m| invalid(OPEN_METEO, m))?);
                }
                (MOS, v) => {
                    let source: MosConfig = deserialize(v.clone(), &format!(".{MOS}"))?;
                    cfg.mos = Some(source.validated().map_err(|m| invalid(MOS, m))?);
                }
                // The one client key whose value is a table (per host).
                (name, toml::Value::Table(_)) if name != "request_spacing_secs" => {
                    return Err(ConfigError::UnknownSource { name: name.to_string(), known: SOURCES.join(", ") });
                }
                _ => {
                    client_keys.insert(key.clone(), value.clone());
                }
            }
        }
        cfg.check_catalog()?;
        cfg.client = deserialize(toml::Value::Table(client_keys), "")?;
        cfg.client.validate().map_err(|message| ConfigError::Invalid { section: String::new(), message })?;
        Ok(cfg)
    }

    /// Each configured source (present table) by name, in [`SOURCES`] order: whether it is
    /// enabled and the stations it names (after its defaults).
    pub fn tables(&self) -> Vec<(&'static str, bool, &[String])> {
        [
            (AWC_METAR, self.awc_metar.as_ref().map(|c| (c.enabled, &c.stations[..]))),
            (AWC_CACHE, self.awc_cache.as_ref().map(|c| (c.enabled, &c.stations[..]))),
            (IEM_ASOS, self.iem_asos.as_ref().map(|c| (c.enabled, &c.stations[..]))),
            (IEM_ONEMIN, self.iem_onemin.as_ref().map(|c| (c.enabled, &c.stations[..]))),
            (NWS_CLI, self.nws_cli.as_ref().map(|c| (c.enabled, &c.stations[..]))),
            (NWS_DSM, self.nws_dsm.as_ref().map(|c| (c.enabled, &c.stations[..]))),
            (NWS_HOURLY, self.nws_hourly.as_ref().map(|c| (c.enabled, &c.stations[..]))),
            (OPEN_METEO, self.open_meteo.as_ref().map(|c| (c.enabled, &c.stations[..]))),
            (MOS, self.mos.as_ref().map(|c| (c.enabled, &c.stations[..]))),
        ]
        .into_iter()
        .filter_map(|(name, table)| table.map(|(enabled, stations)| (name, enabled, stations)))
        .collect()
    }

    /// The names of the enabled sources, in [`SOURCES`] order.
    pub fn enabled(&self) -> Vec<&'static str> {
        self.tables().into_iter().filter(|t| t.1).map(|t| t.0).collect()
    }

    /// Refuses a station of any source's `stations` that the catalog does not have,
    /// naming it, the catalog, and the catalog's stations of the same ICAO region.
    fn check_catalog(&self) -> Result<(), ConfigError> {
        let catalog = Catalog::global();
        for (name, _, stations) in self.tables() {
            if let Some(station) = stations.iter().find(|s| catalog.get(s).is_none()) {
                let region: Vec<&str> = catalog
                    .all()
                    .iter()
                    .map(|s| s.code.as_str())
                    .filter(|c| station.len() >= 2 && c.starts_with(&station[..2]))
                    .collect();
                let hint = if region.is_empty() { String::new() } else { format!("; near it: {}", region.join(", ")) };
                return Err(ConfigError::NotInCatalog {
                    source_name: name.to_string(),
                    station: station.clone(),
                    count: catalog.len(),
                    hint,
                });
            }
        }
        Ok(())
    }

    /// Parses a whole file's text and reads its `[sources]` table (absent = no feeds).
    pub fn from_file_text(text: &str) -> Result<FeedsConfig, ConfigError> {
        let doc: toml::Table = toml::from_str(text)
            .map_err(|e| ConfigError::Invalid { section: String::new(), message: e.message().to_string() })?;
        match doc.get("sources") {
            None => Ok(FeedsConfig::default()),
            Some(toml::Value::Table(t)) => FeedsConfig::from_toml(t),
            Some(other) => Err(ConfigError::Invalid {
                section: String::new(),
                message: format!("`sources` must be a table, found {}", other.type_str()),
            }),
        }
    }
}

/// A source's `validated()` message, placed in its table.
fn invalid(source: &str, message: String) -> ConfigError {
    ConfigError::Invalid { section: format!(".{source}"), message }
}

fn deserialize<T: for<'de> Deserialize<'de>>(value: toml::Value, section: &str) -> Result<T, ConfigError> {
    T::deserialize(value).map_err(|e| ConfigError::Parse { section: section.to_string(), source: Box::new(e) })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::catalog::Catalog;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn an_empty_source_table_takes_the_documented_defaults() {
        let cfg = FeedsConfig::from_toml(&table("[awc_metar]")).unwrap();
        let awc = cfg.awc_metar.unwrap();
        assert_eq!(awc.base_url, "https://aviationweather.gov");
        assert_eq!(awc.interval, Duration::from_secs(60));
        assert_eq!(awc.batch_size, 40);
        assert_eq!(awc.hours, 2.0);
        assert_eq!(awc.timeout, Duration::from_secs(20));
        assert_eq!(awc.stations.len(), Catalog::global().len());
        assert!(awc.stations.iter().any(|s| s == "KNYC"));
        assert_eq!(cfg.client.max_per_host, 2);
        assert_eq!(cfg.client.breaker_pause, Duration::from_secs(300));
        assert!(FeedsConfig::from_toml(&toml::Table::new()).unwrap().awc_metar.is_none());
    }

    #[test]
    fn keys_override_defaults_and_seconds_may_be_fractional() {
        let cfg = FeedsConfig::from_toml(&table(
            r#"
            contact = "ops@example.com"
            attempts = 4
            backoff_secs = 0.25
            [awc_metar]
            base_url = "http://127.0.0.1:9"
            stations = ["knyc", "KMDW"]
            batch_size = 1
            hours = 1.5
            interval_secs = 0.5
            "#,
        ))
        .unwrap();
        assert_eq!(cfg.client.contact, "ops@example.com");
        assert_eq!(cfg.client.attempts, 4);
        assert_eq!(cfg.client.backoff, Duration::from_millis(250));
        let awc = cfg.awc_metar.unwrap();
        assert_eq!(awc.stations, ["KNYC", "KMDW"]);
        assert_eq!(awc.interval, Duration::from_millis(500));
        assert_eq!(awc.hours, 1.5);
    }

    #[test]
    fn typos_and_bad_values_are_refused_precisely() {
        let err = |t: &str| FeedsConfig::from_toml(&table(t)).unwrap_err().to_string();
        assert_eq!(err("[iem_asoss]"), format!("[sources.iem_asoss] names no source; known: {}", SOURCES.join(", ")));
        assert!(
            err("[awc_metar]\nintervall_secs = 5").contains("unknown field `intervall_secs`"),
            "{}",
            err("[awc_metar]\nintervall_secs = 5")
        );
        assert!(err("contakt = \"x\"").starts_with("[sources]: unknown field `contakt`"));
        assert!(err("[awc_metar]\nstations = [\"NYC\"]").contains("station \"NYC\" is not a 4-character ICAO id"));
        assert!(err("[awc_metar]\nbatch_size = 0").contains("batch_size must be at least 1"));
        assert!(err("[awc_metar]\ninterval_secs = -1").contains("expected a number of seconds"));
        assert!(err("[awc_metar]\nbase_url = \"not a url\"").contains("base_url"));
        assert!(err("max_per_host = 0").contains("max_per_host must be at least 1"));
        assert!(err("[awc_metar]\nhours = 0.01\ninterval_secs = 60").contains("reaches back less than one interval"));
    }

    #[test]
    fn request_spacing_is_per_host() {
        let cfg = FeedsConfig::from_toml(&table(
            "request_spacing_secs = { \"api.weather.gov\" = 1, \"mesonet.agron.iastate.edu\" = 7.5 }",
        ))
        .unwrap();
        assert_eq!(cfg.client.spacing("api.weather.gov"), Duration::from_secs(1));
        assert_eq!(cfg.client.spacing("mesonet.agron.iastate.edu"), Duration::from_millis(7500));
        assert_eq!(cfg.client.spacing("aviationweather.gov"), Duration::ZERO);
        let e = FeedsConfig::from_toml(&table("request_spacing_secs = { \"api.weather.gov\" = -1 }")).unwrap_err();
        assert!(
            e.to_string().contains("request_spacing_secs: \"api.weather.gov\" must be a number of seconds >= 0"),
            "{e}"
        );
    }

    #[test]
    fn a_file_without_sources_has_no_feeds() {
        let cfg =
            FeedsConfig::from_file_text("lake = \"file:///tmp/lake\"\n[serve]\naddr = \"127.0.0.1:0\"\n").unwrap();
        assert!(cfg.awc_metar.is_none());
        let e = FeedsConfig::from_file_text("sources = 3").unwrap_err();
        assert_eq!(e.to_string(), "[sources]: `sources` must be a table, found integer");
    }

    #[test]
    fn a_station_outside_the_catalog_is_refused_with_the_catalog_named() {
        let err = |t: &str| FeedsConfig::from_toml(&table(t)).unwrap_err().to_string();
        let e = err("[awc_metar]\nstations = [\"KNYC\", \"egll\"]");
        assert_eq!(
            e,
            format!(
                "[sources.awc_metar]: station \"EGLL\" is not in the station catalog (data/stations.csv, {} stations; \
                 near it: EGLC); only catalog stations are served",
                Catalog::global().len()
            )
        );
        for source in [AWC_CACHE, IEM_ASOS, IEM_ONEMIN, NWS_CLI, NWS_DSM, MOS] {
            let e = err(&format!("[{source}]\nstations = [\"KMEM\"]"));
            assert!(
                e.starts_with(&format!("[sources.{source}]: station \"KMEM\" is not in the station catalog")),
                "{e}"
            );
        }
        // Open-Meteo and the NWS hourly forecast need the coordinates and say so themselves.
        assert!(err("[open_meteo]\nstations = [\"EGLL\"]").contains("\"EGLL\" is not in the station catalog"));
        assert!(err("[nws_hourly]\nstations = [\"KMEM\"]").contains("\"KMEM\" is not in the catalog"));
        let ok = FeedsConfig::from_toml(&table("[awc_metar]\nstations = [\"EGLC\"]\n[mos]\nenabled = false")).unwrap();
        assert_eq!(ok.enabled(), [AWC_METAR]);
        assert_eq!(ok.tables().len(), 2);
    }

    #[test]
    fn the_example_file_parses() {
        let text = include_str!("../../data/wxlake.example.toml");
        let cfg = FeedsConfig::from_file_text(text).unwrap();
        let awc = cfg.awc_metar.expect("the example enables awc_metar");
        assert!(awc.enabled);
        assert!(!cfg.client.contact.is_empty());
    }
}
