//! The production feeds: `data/wxlake.live.toml`, built into the binary, which `wxlake
//! serve --live` runs, and what a real deployment must have before it starts.
//!
//! The file enables every source the API serves for the whole catalog, within each
//! operator's published limits (the arithmetic is written next to each interval there,
//! and [`budget`] recomputes it). What it cannot carry is who runs the deployment: the
//! contact sent in the User-Agent, which api.weather.gov requires. [`live_sources`] takes
//! it from the caller (the CLI reads `WXLAKE_CONTACT`) and refuses, with what to do, a
//! deployment without one or one that leaves a kind of data the API serves unfetched.

use thiserror::Error;

use super::config::{
    ConfigError, FeedsConfig, AWC_CACHE, AWC_METAR, IEM_ASOS, IEM_ONEMIN, MOS, NWS_CLI, NWS_DSM, NWS_HOURLY, OPEN_METEO,
};
use crate::catalog::Catalog;

/// The production `[sources]` (data/wxlake.live.toml), embedded so `--live` works from any
/// directory.
pub const LIVE_TOML: &str = include_str!("../../data/wxlake.live.toml");

/// Where the production file lives in the repository, for messages.
pub const LIVE_PATH: &str = "data/wxlake.live.toml";

/// The environment variable that names the deployment's contact (wins over `contact`).
pub const CONTACT_ENV: &str = "WXLAKE_CONTACT";

/// What the API serves, and the sources that can feed each: a real deployment enables at
/// least one source of every row.
pub const SERVED: &[(&str, &[&str])] = &[
    ("METAR/SPECI observations (latest, history, live highs and lows)", &[AWC_METAR, AWC_CACHE, IEM_ASOS]),
    ("5-minute HF-METAR observations of US stations", &[IEM_ASOS]),
    ("one-minute temperatures", &[IEM_ONEMIN]),
    ("Daily Climate Reports (settlement, the `nws` logic's final high and low)", &[NWS_CLI]),
    ("Daily Summary Messages", &[NWS_DSM]),
    ("NWS hourly forecasts", &[NWS_HOURLY]),
    ("model runs (forecasts, model accuracy)", &[OPEN_METEO]),
    ("MOS bulletins", &[MOS]),
];

/// Why `serve --live` will not start.
#[derive(Debug, Error)]
pub enum WriteError {
    #[error("{origin}: {source}")]
    Config {
        origin: String,
        #[source]
        source: ConfigError,
    },
    #[error(
        "serve --live needs a contact for the feeds' User-Agent (api.weather.gov refuses requests without one, \
         and the other services' operators use it to reach you): set {CONTACT_ENV} to an e-mail or URL that \
         reaches you (e.g. {CONTACT_ENV}=ops@your-domain), or `contact` under [sources] of your --config file"
    )]
    NoContact,
    #[error(
        "serve --live: the contact {contact:?} is a placeholder (example.com/.org/.net reach no one): set \
         {CONTACT_ENV} to an e-mail or URL that reaches you"
    )]
    PlaceholderContact { contact: String },
    #[error(
        "serve --live: {origin} fetches no {what}: enable one of [sources.{}] (see {LIVE_PATH}), or run `serve \
         --config FILE` without --live for a partial deployment",
        sources.join("], [sources.")
    )]
    Unfed { origin: String, what: &'static str, sources: Vec<&'static str> },
}

/// The feeds `serve --live` runs: the `[sources]` of `explicit` (the text of a `--config`
/// file) when it has that table, else the production file's; `contact` (from
/// `WXLAKE_CONTACT`) wins over the file's. Refused unless the contact is real and every
/// row of [`SERVED`] has an enabled source.
pub fn live_sources(explicit: Option<&str>, contact: Option<&str>) -> Result<FeedsConfig, WriteError> {
    let has_sources = |text: &str| text.parse::<toml::Table>().map(|t| t.contains_key("sources")).unwrap_or(true);
    let (text, origin) = match explicit {
        Some(text) if has_sources(text) => (text, "the [sources] of the --config file".to_string()),
        _ => (LIVE_TOML, format!("the production sources ({LIVE_PATH}, built in)")),
    };
    let mut cfg =
        FeedsConfig::from_file_text(text).map_err(|source| WriteError::Config { origin: origin.clone(), source })?;
    if let Some(c) = contact.map(str::trim).filter(|c| !c.is_empty()) {
        cfg.client.contact = c.to_string();
        cfg.client.validate().map_err(|message| WriteError::Config {
            origin: CONTACT_ENV.to_string(),
            source: ConfigError::Invalid { section: String::new(), message },
        })?;
    }
    check_deployment(&cfg, &origin)?;
    Ok(cfg)
}

/// What a real deployment needs of its feeds: a contact that reaches someone, and a source
/// for every kind of data the API serves.
pub fn check_deployment(cfg: &FeedsConfig, origin: &str) -> Result<(), WriteError> {
    let contact = cfg.client.contact.trim();
    if contact.is_empty() {
        return Err(WriteError::NoContact);
    }
    let lower = contact.to_ascii_lowercase();
    if ["example.com", "example.org", "example.net"].iter().any(|d| lower.contains(d)) {
        return Err(WriteError::PlaceholderContact { contact: contact.to_string() });
    }
    let enabled = cfg.enabled();
    for (what, sources) in SERVED {
        if !sources.iter().any(|s| enabled.contains(s)) {
            return Err(WriteError::Unfed { origin: origin.to_string(), what, sources: sources.to_vec() });
        }
    }
    Ok(())
}

/// A source's requests at the rate its settings and the catalog give, against the limit
/// its operator publishes: [`budget`]'s answer, one row per figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// The source, or the host for a total (`aviationweather.gov`).
    pub what: String,
    /// What is counted (`requests/minute`, `calls/day`, ...).
    pub unit: &'static str,
    /// The figure at these settings.
    pub used: f64,
    /// The most allowed.
    pub limit: f64,
}

/// aviationweather.gov: at most 100 requests a minute (AWC data API), and no endpoint
/// polled more often than once a minute.
pub const AWC_PER_MINUTE: f64 = 100.0;
/// IEM publishes no number: its scripts are rate-limited per address and automated clients
/// are asked for one request at a time. Budgeted: one request every 10 s.
pub const IEM_PER_MINUTE: f64 = 6.0;
/// api.weather.gov publishes no number ("generous for typical use"). Budgeted: one request
/// a second, all its sources together.
pub const NWS_PER_MINUTE: f64 = 60.0;
/// Open-Meteo's free tier, in its calls (a location of a request is one or more).
pub const OPEN_METEO_PER_DAY: f64 = 10_000.0;
pub const OPEN_METEO_PER_HOUR: f64 = 5_000.0;
pub const OPEN_METEO_PER_MINUTE: f64 = 600.0;
/// NCEP NOMADS blocks addresses above about 120 requests a minute.
pub const NOMADS_PER_MINUTE: f64 = 120.0;

/// Each enabled source's request rate from its interval, batch size and the catalog's
/// stations, the totals per host, and the limits they must stay within. Polls that fail
/// are caught up by the next poll's window, not retried sooner, so these are the rates of
/// a healthy service; retries of transient failures (at most `attempts` per request) come
/// on top, as they must.
pub fn budget(cfg: &FeedsConfig) -> Vec<Rate> {
    let per_minute = |requests: f64, interval: std::time::Duration| requests * 60.0 / interval.as_secs_f64();
    let batches = |stations: usize, batch: usize| stations.div_ceil(batch.max(1)) as f64;
    let rate = |what: &str, unit, used, limit| Rate { what: what.to_string(), unit, used, limit };
    let mut out = Vec::new();

    // aviationweather.gov
    let mut awc = 0.0;
    if let Some(c) = cfg.awc_metar.as_ref().filter(|c| c.enabled) {
        awc += per_minute(batches(c.stations.len(), c.batch_size), c.interval);
        // Each batch URL is asked once per interval.
        out.push(rate(AWC_METAR, "polls of one URL/minute", per_minute(1.0, c.interval), 1.0));
    }
    if let Some(c) = cfg.awc_cache.as_ref().filter(|c| c.enabled) {
        awc += per_minute(1.0, c.interval);
        out.push(rate(AWC_CACHE, "polls of one URL/minute", per_minute(1.0, c.interval), 1.0));
    }
    // Each URL once a minute: the busiest minute is the average.
    out.push(rate("aviationweather.gov", "requests/minute", awc, AWC_PER_MINUTE));

    // IEM: one request in flight is the client's per-host cap. A round (both sources' polls
    // coinciding, as they do at start and every 10 minutes) sends all its batches at once,
    // spread by the host's request spacing.
    let (mut iem, mut iem_round, mut iem_interval) = (0.0, 0.0, f64::INFINITY);
    if let Some(c) = cfg.iem_asos.as_ref().filter(|c| c.enabled) {
        iem += per_minute(batches(c.stations.len(), c.batch_size), c.interval);
        iem_round += batches(c.stations.len(), c.batch_size);
        iem_interval = iem_interval.min(c.interval.as_secs_f64());
    }
    if let Some(c) = cfg.iem_onemin.as_ref().filter(|c| c.enabled) {
        iem += per_minute(batches(c.stations.len(), c.batch_size), c.interval);
        iem_round += batches(c.stations.len(), c.batch_size);
        iem_interval = iem_interval.min(c.interval.as_secs_f64());
    }
    out.extend(host_rates(cfg, IEM_HOST, iem, iem_round, iem_interval, IEM_PER_MINUTE));
    out.push(rate(IEM_HOST, "requests in flight", cfg.client.max_per_host as f64, 1.0));

    // api.weather.gov: every list due at once (all stations in busy hours), products on top
    // (each fetched once: a few per station and day, bounded here by one an hour). A round:
    // every list, every hourly forecast and, at a first start, every grid point at once.
    let (mut nws, mut nws_round, mut nws_interval) = (0.0, 0.0, f64::INFINITY);
    for c in [&cfg.nws_cli, &cfg.nws_dsm].into_iter().flatten().filter(|c| c.enabled) {
        nws += per_minute(c.stations.len() as f64, c.interval) + c.stations.len() as f64 / 60.0;
        nws_round += c.stations.len() as f64;
        nws_interval = nws_interval.min(c.interval.as_secs_f64());
    }
    if let Some(c) = cfg.nws_hourly.as_ref().filter(|c| c.enabled) {
        nws += per_minute(c.stations.len() as f64, c.interval);
        nws_round += 2.0 * c.stations.len() as f64;
        nws_interval = nws_interval.min(c.interval.as_secs_f64());
    }
    out.extend(host_rates(cfg, NWS_HOST, nws, nws_round, nws_interval, NWS_PER_MINUTE));

    if let Some(c) = cfg.open_meteo.as_ref().filter(|c| c.enabled) {
        out.extend(open_meteo_budget(c));
    }

    if let Some(c) = cfg.mos.as_ref().filter(|c| c.enabled) {
        // Each cycle once, a late one asked again after a growing wait: a dozen at most.
        let cycles: usize = c
            .products
            .iter()
            .filter_map(|p| {
                crate::models::MODELS.iter().find(|m| crate::models::bulletin_code(m.name) == Some(p.as_str()))
            })
            .map(|m| m.cycles.len())
            .sum();
        out.push(rate("nomads.ncep.noaa.gov", "requests/minute", cycles as f64 * 12.0 / 1440.0, NOMADS_PER_MINUTE));
    }
    out
}

/// IEM's request services.
pub const IEM_HOST: &str = "mesonet.agron.iastate.edu";
/// The NWS API.
pub const NWS_HOST: &str = "api.weather.gov";

/// A host's rows: its average rate, the requests in its busiest minute (a round of polls
/// sent at once, `round` requests, spread by the host's `request_spacing_secs`), and the
/// time that round takes, which must fit in the shortest interval of its sources
/// (`interval` s) or polls would queue behind each other.
fn host_rates(cfg: &FeedsConfig, host: &str, average: f64, round: f64, interval: f64, limit: f64) -> Vec<Rate> {
    if round == 0.0 {
        return Vec::new();
    }
    let spacing = cfg.client.spacing(host).as_secs_f64();
    let busiest = if spacing > 0.0 { round.min((60.0 / spacing).ceil()) } else { round };
    let rate = |unit, used, limit| Rate { what: host.to_string(), unit, used, limit };
    vec![
        rate("requests/minute (average)", average, limit),
        rate("requests in the busiest minute", busiest, limit),
        rate("seconds to send a round of polls", round * spacing, interval),
    ]
}

/// Open-Meteo's calls per day, in the busiest hour, and per minute, for the models and
/// stations of `c`: each run once, after its delay, for each station its model covers,
/// every location weighted as Open-Meteo counts it. Per minute: the busiest five-minute
/// poll in a steady day, or with pacing the pace (a first start finds the whole lookback
/// due at once: unpaced, that goes out in a minute or two).
fn open_meteo_budget(c: &super::open_meteo::OpenMeteoConfig) -> Vec<Rate> {
    use super::open_meteo::run_calls_per_location;
    let catalog = Catalog::global();
    let stations: Vec<_> = c.stations.iter().filter_map(|s| catalog.get(s)).collect();
    // Calls coming due in each minute of the day.
    let mut due = vec![0.0f64; 1440];
    let mut catch_up = 0.0;
    for name in &c.models {
        let (Some(spec), Some(avail)) = (crate::models::model(name), crate::models::availability(name)) else {
            continue;
        };
        let covered = stations.iter().filter(|s| s.has_forecasts_from(name)).count() as f64;
        let per_run = covered * run_calls_per_location(spec);
        for cycle in spec.cycles {
            let minute = (cycle * 60 + spec.cycle_minute + avail.delay_min()) as usize % 1440;
            due[minute] += per_run;
        }
        // Runs of the lookback already published at a first start.
        let published = (c.lookback_hours - f64::from(avail.delay_min()) / 60.0).max(0.0);
        catch_up += per_run * spec.cycles.len() as f64 * published / 24.0;
    }
    // The most calls coming due within `len` consecutive minutes.
    let max_window =
        |len: usize| (0..1440).map(|start| (0..len).map(|i| due[(start + i) % 1440]).sum::<f64>()).fold(0.0, f64::max);
    let day: f64 = due.iter().sum();
    let paced = c.max_calls_per_minute > 0.0;
    // The catch-up of a first start goes out in the first hour, at the pace if paced.
    let hour = max_window(60) + if paced { catch_up.min(c.max_calls_per_minute * 60.0) } else { catch_up };
    let poll = (c.interval.as_secs_f64() / 60.0).ceil().max(1.0) as usize;
    let minute = if paced {
        // Paced: at most one request's cost above the pace.
        let largest = c.models.iter().filter_map(|m| crate::models::model(m)).map(run_calls_per_location);
        c.max_calls_per_minute + largest.fold(0.0, f64::max) * c.batch_size as f64
    } else {
        max_window(poll).max(catch_up)
    };
    let what = |s: &str| format!("{OPEN_METEO} ({s})");
    vec![
        Rate { what: what("steady"), unit: "calls/day", used: day, limit: OPEN_METEO_PER_DAY },
        Rate { what: what("first start"), unit: "calls/day", used: day + catch_up, limit: OPEN_METEO_PER_DAY },
        Rate { what: what("busiest hour"), unit: "calls/hour", used: hour, limit: OPEN_METEO_PER_HOUR },
        Rate { what: what("busiest minute"), unit: "calls/minute", used: minute, limit: OPEN_METEO_PER_MINUTE },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTACT: &str = "ops@wxlake.test";

    #[test]
    fn the_production_file_enables_every_source_but_the_cache() {
        let cfg = FeedsConfig::from_file_text(LIVE_TOML).unwrap();
        let all: Vec<&str> = cfg.tables().iter().map(|t| t.0).collect();
        assert_eq!(all, super::super::config::SOURCES, "every source has its table, enabled or said why not");
        let left_out: Vec<&str> = cfg.tables().iter().filter(|t| !t.1).map(|t| t.0).collect();
        assert_eq!(left_out, [AWC_CACHE]);
        assert!(cfg.client.contact.is_empty(), "the contact is the deployment's, not the file's");
        assert_eq!(cfg.client.max_per_host, 1);
    }

    #[test]
    fn live_needs_a_contact_and_takes_it_from_the_environment() {
        let e = live_sources(None, None).unwrap_err();
        assert!(matches!(e, WriteError::NoContact), "{e}");
        assert!(e.to_string().contains("WXLAKE_CONTACT="), "{e}");
        assert!(matches!(live_sources(None, Some("  ")).unwrap_err(), WriteError::NoContact));
        let e = live_sources(None, Some("ops@example.com")).unwrap_err();
        assert!(e.to_string().contains("placeholder"), "{e}");
        let cfg = live_sources(None, Some(CONTACT)).unwrap();
        assert_eq!(cfg.client.contact, CONTACT);
        assert_eq!(cfg.enabled().len(), super::super::config::SOURCES.len() - 1);
        let e = live_sources(None, Some("a\nb")).unwrap_err();
        assert!(e.to_string().starts_with("WXLAKE_CONTACT: [sources]: contact must not contain control"), "{e}");
    }

    #[test]
    fn an_explicit_sources_table_wins_and_must_feed_everything() {
        // A --config file without [sources]: the production sources.
        let cfg = live_sources(Some("lake = \"file:///tmp/x\"\n"), Some(CONTACT)).unwrap();
        assert!(cfg.nws_cli.is_some());
        // With one: that one, checked like the production file.
        let partial = "[sources]\ncontact = \"me@wxlake.test\"\n[sources.awc_metar]\n";
        let e = live_sources(Some(partial), None).unwrap_err().to_string();
        assert!(e.starts_with("serve --live: the [sources] of the --config file fetches no 5-minute HF-METAR"), "{e}");
        assert!(e.contains("[sources.iem_asos]"), "{e}");
        let mut full = LIVE_TOML.replace("\nmax_per_host = 1\n", "\nmax_per_host = 1\ncontact = \"me@wxlake.test\"\n");
        assert_eq!(live_sources(Some(&full), None).unwrap().client.contact, "me@wxlake.test");
        assert_eq!(live_sources(Some(&full), Some(CONTACT)).unwrap().client.contact, CONTACT, "the environment wins");
        full = full.replace("[sources.nws_cli]\nenabled = true", "[sources.nws_cli]\nenabled = false");
        let e = live_sources(Some(&full), None).unwrap_err().to_string();
        assert!(e.contains("fetches no Daily Climate Reports") && e.contains("[sources.nws_cli]"), "{e}");
        let e = live_sources(Some("[sources.awc_metar]\nstations = [\"EGLL\"]\n"), Some(CONTACT)).unwrap_err();
        assert!(e.to_string().contains("station \"EGLL\" is not in the station catalog"), "{e}");
    }

    #[test]
    fn the_production_rates_stay_within_the_published_limits() {
        let cfg = FeedsConfig::from_file_text(LIVE_TOML).unwrap();
        let rates = budget(&cfg);
        for r in &rates {
            assert!(r.used <= r.limit, "{} {}: {:.2} > {}", r.what, r.unit, r.used, r.limit);
        }
        let open_meteo_day = rates.iter().find(|r| r.what == "open_meteo (steady)").unwrap();
        assert!(open_meteo_day.used > 1000.0, "{open_meteo_day:?}");
    }
}
