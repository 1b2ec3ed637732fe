//! The `[sources]` table `serve --demo` runs its feeds with: every source pointed at the
//! simulator, polled more often than the public services allow (the simulator is local,
//! there is no one to hammer), so the demo's stream moves within seconds.

use super::runs::{mos_pils, MOS_PATH};
use crate::feeds::config::{AWC_CACHE, AWC_METAR, IEM_ASOS, IEM_ONEMIN, MOS, NWS_CLI, NWS_DSM, NWS_HOURLY, OPEN_METEO};

/// Each source of the demo and its poll interval, seconds: every source of this build
/// (`feeds::config::SOURCES`, a test checks), named by its constant so a misspelt or
/// removed source does not compile.
pub const DEMO_INTERVALS: [(&str, f64); 9] = [
    (AWC_METAR, 30.0),
    (AWC_CACHE, 60.0),
    (IEM_ASOS, 60.0),
    (IEM_ONEMIN, 120.0),
    (NWS_CLI, 60.0),
    (NWS_DSM, 60.0),
    (NWS_HOURLY, 300.0),
    (OPEN_METEO, 300.0),
    (MOS, 300.0),
];

/// The `[sources]` table of the demo: the client's manners, and one table per source of
/// this build with `base_url` = the simulator's and its demo interval (every other key
/// at its default, so stations are the whole catalog).
pub fn demo_sources(base_url: &str) -> toml::Table {
    let mut t = toml::Table::new();
    t.insert("contact".into(), toml::Value::String("wxlake serve --demo (local simulator)".into()));
    // Every source talks to one host, the simulator.
    t.insert("max_per_host".into(), toml::Value::Integer(4));
    for (name, interval) in DEMO_INTERVALS {
        let mut source = toml::Table::new();
        if name == MOS {
            source.insert("urls".into(), toml::Value::Table(mos_urls(base_url)));
        } else {
            source.insert("base_url".into(), toml::Value::String(base_url.to_string()));
        }
        source.insert("interval_secs".into(), toml::Value::Float(interval));
        t.insert(name.to_string(), toml::Value::Table(source));
    }
    t
}

/// The `mos` feed fetches one file per product and cycle (a URL template, no base URL);
/// the simulator serves each product's bulletin as IEM's text-product service does, by its
/// AFOS id (`MAVUSA` for `MAV`), the cycle in the query.
fn mos_urls(base_url: &str) -> toml::Table {
    mos_pils()
        .into_iter()
        .map(|pil| {
            let url = format!("{base_url}{MOS_PATH}?pil={pil}&fmt=text&limit=1&date={{date}}&hh={{hh}}");
            (pil.trim_end_matches("USA").to_string(), toml::Value::String(url))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feeds::config::SOURCES;
    use crate::feeds::FeedsConfig;

    #[test]
    fn the_demo_table_names_every_source_of_this_build_and_parses() {
        let mut names: Vec<&str> = DEMO_INTERVALS.iter().map(|(n, _)| *n).collect();
        for s in SOURCES {
            assert!(names.contains(s), "source {s} has no demo interval");
        }
        for n in &names {
            assert!(SOURCES.contains(n), "demo interval for {n}, not a source of this build");
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DEMO_INTERVALS.len(), "a source twice in {DEMO_INTERVALS:?}");
        let t = demo_sources("http://127.0.0.1:9");
        let cfg = FeedsConfig::from_toml(&t).unwrap();
        let awc = cfg.awc_metar.expect("awc_metar is in this build");
        assert_eq!(awc.base_url, "http://127.0.0.1:9");
        assert_eq!(awc.interval.as_secs(), 30);
        assert_eq!(t.len() - 2, SOURCES.len());
        let mos = cfg.mos.expect("mos is in this build");
        assert_eq!(mos.urls.len(), mos_pils().len());
        assert!(mos.urls["MAV"].starts_with("http://127.0.0.1:9/cgi-bin/afos/retrieve.py?pil=MAVUSA"));
    }
}
