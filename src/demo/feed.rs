//! The live side of the demo: reports that fall due as the clock moves, for
//! `serve --demo`. Because the truth and every report are pure functions of
//! `(seed, station, time)`, the feed continues exactly the series the batch generator
//! wrote: the report for 14:52Z is the same text whichever of the two produced it, and
//! the live high and low move the way that day's weather says.

use chrono::{DateTime, Duration, Utc};
use rayon::prelude::*;

use super::climate::minute_index;
use super::observations::reports;
use super::site::Site;
use crate::catalog::{Catalog, Station};
use crate::decode::types::ReportKind;

/// How far back the first call looks when no start was given (ingest is idempotent, so
/// re-sending a report the lake already has is harmless).
const FIRST_CALL_LOOKBACK_MIN: i64 = 10;
/// Longest catch-up after a pause: older reports are left to the batch generator.
const MAX_CATCH_UP_H: i64 = 48;
/// History a report needs behind it (24-hour groups and precipitation totals).
const HISTORY_H: i64 = 25;

/// One report that fell due.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveReport {
    pub station: String,
    pub time: DateTime<Utc>,
    pub kind: ReportKind,
    /// Bare report text (`SPECI ` prefix for specials, `MADISHF` marker for HF-METARs),
    /// as `decode::metar::parse_metar` reads it.
    pub text: String,
}

/// State of the live feed: which stations, and up to when reports were handed out.
#[derive(Debug, Clone)]
pub struct LiveFeed {
    seed: u64,
    stations: Vec<&'static Station>,
    /// Last minute already handed out.
    last_minute: Option<i64>,
}

impl LiveFeed {
    /// A feed for `stations` (codes; unknown ones ignored, empty = all) under `seed`, the
    /// seed the lake was generated with. The first call returns the reports of the last
    /// few minutes before it.
    pub fn new(seed: u64, stations: &[String]) -> Self {
        let catalog = Catalog::global();
        let stations = if stations.is_empty() {
            catalog.all().iter().collect()
        } else {
            stations.iter().filter_map(|c| catalog.lookup(c)).collect()
        };
        LiveFeed { seed, stations, last_minute: None }
    }

    /// A feed that continues right after `since` (e.g. the `now` the lake was built at).
    pub fn starting_after(seed: u64, stations: &[String], since: DateTime<Utc>) -> Self {
        let mut feed = LiveFeed::new(seed, stations);
        feed.last_minute = Some(minute_index(since));
        feed
    }

    /// Report texts that became due since the last call, oldest first.
    pub fn next_reports(&mut self, now: DateTime<Utc>) -> Vec<String> {
        self.next_observations(now).into_iter().map(|r| r.text).collect()
    }

    /// Reports that became due since the last call, with station, time and kind, oldest
    /// first (ties by station code).
    pub fn next_observations(&mut self, now: DateTime<Utc>) -> Vec<LiveReport> {
        let until = minute_index(now);
        let floor = until - MAX_CATCH_UP_H * 60;
        let after = self.last_minute.unwrap_or(until - FIRST_CALL_LOOKBACK_MIN).max(floor);
        if until <= after {
            return Vec::new();
        }
        self.last_minute = Some(until);
        let seed = self.seed;
        let from = super::climate::minute_time(after) - Duration::hours(HISTORY_H);
        let mut out: Vec<LiveReport> = self
            .stations
            .par_iter()
            .flat_map_iter(|&st| {
                let site = Site::new(st, seed, from, now, now);
                reports(&site, after, until).into_iter().map(move |r| LiveReport {
                    station: st.code.clone(),
                    time: r.time,
                    kind: r.kind,
                    text: r.text,
                })
            })
            .collect();
        out.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.station.cmp(&b.station)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::{generate_station, DemoConfig};
    use chrono::{NaiveDate, TimeZone};

    #[test]
    fn live_reports_continue_the_batch_series_exactly() {
        let now = Utc.with_ymd_and_hms(2026, 4, 2, 15, 0, 0).unwrap();
        let cfg = DemoConfig {
            end_date: NaiveDate::from_ymd_opt(2026, 4, 1).unwrap(),
            days: 1,
            stations: vec!["KLAX".into()],
            seed: 77,
            now,
            forecasts: false,
            onemin: false,
        };
        let batch = generate_station(&cfg, "KLAX").metar_tsv;
        // Live feed picking up at 12:00Z hands out, for 12:00–15:00, the batch's lines.
        let mut feed = LiveFeed::starting_after(77, &["KLAX".to_string()], now - Duration::hours(3));
        let live = feed.next_reports(now);
        assert!(live.len() > 36, "{}", live.len());
        for text in &live {
            assert!(batch.contains(text.as_str()), "live report not in batch: {text}");
        }
        // As one bare-lines input (what `serve --demo` ingests) every line decodes, with
        // its kind from the text.
        let d = crate::decode::metar_container::decode_bare_lines(&live.join("\n"), None, now);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.records.len(), live.len());
        assert!(d.records.iter().any(|m| m.kind == Some(ReportKind::HfMetar)));
        assert!(d.records.iter().any(|m| m.kind == Some(ReportKind::Metar)));
        // Nothing new until the clock moves; then only what fell due.
        assert!(feed.next_reports(now).is_empty());
        let more = feed.next_observations(now + Duration::minutes(6));
        assert!(!more.is_empty() && more.iter().all(|r| r.time > now && r.time <= now + Duration::minutes(6)));
    }

    #[test]
    fn first_call_looks_back_a_few_minutes_and_catch_up_is_bounded() {
        let now = Utc.with_ymd_and_hms(2026, 4, 2, 15, 3, 0).unwrap();
        let mut feed = LiveFeed::new(1, &["KNYC".to_string(), "EGLC".to_string(), "XXXX".to_string()]);
        let first = feed.next_observations(now);
        // KNYC HF-METARs at 14:55 and 15:00, EGLC's 15:00 METAR.
        assert!(first.iter().any(|r| r.station == "EGLC" && r.kind == ReportKind::Metar));
        assert!(first.iter().all(|r| r.time > now - Duration::minutes(10)));
        let later = feed.next_observations(now + Duration::days(5));
        assert!(later.iter().all(|r| r.time > now + Duration::days(5) - Duration::hours(48)));
    }
}
