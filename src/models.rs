//! The 18 forecast models: their run cycles, horizons and output intervals. The demo
//! generator produces exactly this cadence and the daily-summary job uses the intervals
//! to decide whether a local day is fully covered (3- or 6-hourly guidance contributes
//! fewer points per day than hourly models without being "partial").

/// One model's production schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSpec {
    pub name: &'static str,
    /// UTC initialisation hours.
    pub cycles: &'static [u32],
    /// Maximum lead time (hours) of the main cycles (00Z/12Z, or every cycle).
    pub horizon_h: u32,
    /// Maximum lead time of the other cycles (06Z/18Z or off-hour runs), when shorter.
    pub short_horizon_h: u32,
    /// Output step by lead: `(until_hour, step)`, in order; the last entry covers the rest.
    pub steps: &'static [(u32, u32)],
    /// First lead hour the product has (MOS bulletins start at 6 h, LAMP at 1 h).
    pub first_lead_h: u32,
    /// Minutes past the cycle hour of the run's label: 30 for LAMP (its bulletin says
    /// `1230 UTC` for the 12Z cycle, and that is its run time), 0 for every other model.
    /// Leads and valid times count from the whole hour.
    pub cycle_minute: u32,
    /// Demo only: hours after the cycle time the simulator serves a run; never later than
    /// the model's [`Publication`] delay, which is what feeds and `available_at` use.
    pub latency_h: u32,
    /// Statistical (MOS-like) guidance rather than a gridded model.
    pub statistical: bool,
    /// Demo only: mean warm bias (°C) and noise growth (°C per day of lead).
    pub demo_bias_c: f64,
    pub demo_noise_c: f64,
}

const SYNOPTIC: &[u32] = &[0, 6, 12, 18];
const TWICE: &[u32] = &[0, 12];
const HOURLY: &[u32] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23];

/// Every model the service knows, in the spec's order (2.5).
pub const MODELS: [ModelSpec; 18] = [
    spec("ARPEGE", SYNOPTIC, 102, 72, &[(102, 1)], 4, false, 0.3, 0.55),
    spec("ECMWF-IFS", SYNOPTIC, 240, 90, &[(144, 3), (240, 6)], 6, false, 0.0, 0.45),
    spec("GEFS", SYNOPTIC, 384, 384, &[(240, 3), (384, 6)], 6, false, -0.2, 0.5),
    spec("GEM-GDPS", TWICE, 240, 240, &[(240, 3)], 5, false, -0.5, 0.6),
    spec("GEM-HRDPS", SYNOPTIC, 48, 48, &[(48, 1)], 5, false, -0.3, 0.5),
    spec("GFS", SYNOPTIC, 384, 384, &[(120, 1), (384, 3)], 4, false, 0.4, 0.55),
    spec("GFS-MOS", SYNOPTIC, 72, 72, &[(60, 3), (72, 6)], 4, true, 0.1, 0.45),
    spec("HRRR", HOURLY, 48, 18, &[(48, 1)], 1, false, 0.6, 0.7),
    spec("ICON", SYNOPTIC, 180, 120, &[(78, 1), (180, 3)], 4, false, -0.1, 0.55),
    spec("JMA", SYNOPTIC, 264, 132, &[(264, 3)], 5, false, 0.2, 0.6),
    spec("LAV-MOS", HOURLY, 25, 25, &[(25, 1)], 1, true, 0.0, 0.5),
    spec("NAM", SYNOPTIC, 84, 84, &[(36, 1), (84, 3)], 3, false, 0.8, 0.65),
    spec("NAM-MOS", TWICE, 72, 72, &[(60, 3), (72, 6)], 3, true, 0.2, 0.5),
    spec("NAM4KM", SYNOPTIC, 60, 60, &[(60, 1)], 3, false, 0.7, 0.65),
    spec("NBM", HOURLY, 264, 36, &[(36, 1), (192, 3), (264, 6)], 2, true, 0.0, 0.4),
    spec("NBS-MOS", &[1, 7, 13, 19], 72, 72, &[(72, 3)], 1, true, 0.0, 0.42),
    spec("RAP", HOURLY, 51, 21, &[(51, 1)], 1, false, 0.5, 0.7),
    spec("UKMO", SYNOPTIC, 168, 54, &[(54, 1), (168, 3)], 6, false, -0.2, 0.5),
];

/// The api.weather.gov hourly forecast's name where it counts as a source beside the
/// models (`accuracy_pairs`, the bracket odds): no daily-forecasts source may take it.
pub const NWS_HOURLY_SOURCE: &str = "NWS";

/// The 18 model names alone, in the same order: the one list decoders check forecast rows
/// against (case-sensitive; a row naming any other model is rejected).
pub const MODEL_NAMES: [&str; 18] = {
    let mut names = [""; 18];
    let mut i = 0;
    while i < MODELS.len() {
        names[i] = MODELS[i].name;
        i += 1;
    }
    names
};

#[allow(clippy::too_many_arguments)]
const fn spec(
    name: &'static str,
    cycles: &'static [u32],
    horizon_h: u32,
    short_horizon_h: u32,
    steps: &'static [(u32, u32)],
    latency_h: u32,
    statistical: bool,
    demo_bias_c: f64,
    demo_noise_c: f64,
) -> ModelSpec {
    let first_lead_h = match name.as_bytes() {
        b"GFS-MOS" | b"NAM-MOS" => 6,
        b"LAV-MOS" => 1,
        b"NBS-MOS" => 3,
        _ => 0,
    };
    let cycle_minute = match name.as_bytes() {
        b"LAV-MOS" => 30,
        _ => 0,
    };
    ModelSpec {
        name,
        cycles,
        horizon_h,
        short_horizon_h,
        steps,
        first_lead_h,
        cycle_minute,
        latency_h,
        statistical,
        demo_bias_c,
        demo_noise_c,
    }
}

/// Where the live feeds fetch a model's runs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publisher {
    /// Open-Meteo (forecast / single-runs / previous-runs APIs), by its model id: one
    /// domain, never a "seamless" blend, so a run is one model's run.
    OpenMeteo(&'static str),
    /// An NWS/MDL text bulletin (`MAV`, `MET`, `LAV`, `NBS`), decoded by `decode::mos`.
    Bulletin(&'static str),
}

/// Where a model's runs are fetched from live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Availability {
    pub model: &'static str,
    pub publisher: Publisher,
}

impl Availability {
    /// Minutes after the cycle time by which the complete run is published
    /// ([`PUBLICATION`]). A feed asks no earlier: asking early gets a missing or partial run,
    /// and a stored run is never fetched again.
    pub fn delay_min(&self) -> u32 {
        publication(self.model).map_or(0, |p| p.delay_min)
    }
}

const fn avail(model: &'static str, publisher: Publisher) -> Availability {
    Availability { model, publisher }
}

/// The live sources, one entry per model a feed fetches. Models absent here have no live
/// source in wxlake: GEFS (Open-Meteo serves it only through the ensemble API), RAP and
/// NAM4KM (not served by Open-Meteo).
pub const AVAILABILITY: &[Availability] = &[
    avail("ARPEGE", Publisher::OpenMeteo("meteofrance_arpege_world")),
    avail("ECMWF-IFS", Publisher::OpenMeteo("ecmwf_ifs025")),
    avail("GEM-GDPS", Publisher::OpenMeteo("gem_global")),
    avail("GEM-HRDPS", Publisher::OpenMeteo("gem_hrdps_continental")),
    avail("GFS", Publisher::OpenMeteo("gfs_global")),
    avail("HRRR", Publisher::OpenMeteo("gfs_hrrr")),
    avail("ICON", Publisher::OpenMeteo("icon_global")),
    avail("JMA", Publisher::OpenMeteo("jma_gsm")),
    avail("NAM", Publisher::OpenMeteo("ncep_nam_conus")),
    avail("NBM", Publisher::OpenMeteo("ncep_nbm_conus")),
    avail("UKMO", Publisher::OpenMeteo("ukmo_global_deterministic_10km")),
    avail("GFS-MOS", Publisher::Bulletin("MAV")),
    avail("NAM-MOS", Publisher::Bulletin("MET")),
    avail("LAV-MOS", Publisher::Bulletin("LAV")),
    avail("NBS-MOS", Publisher::Bulletin("NBS")),
];

/// When a model's run is published: minutes after its cycle time by which the complete
/// run can be had, and where that figure comes from. One table for three uses: the live
/// feeds' schedule, the `available_at` of backfilled runs (`lake::availability`), and the
/// `models` SQL table and README that show it. Each figure errs late rather than early:
/// an early one would let an `as_of` query see a run before anyone could have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Publication {
    pub model: &'static str,
    pub delay_min: u32,
    /// Where the figure comes from: the producer's schedule, Open-Meteo's, or a third
    /// party's observation (then said so, as provisional).
    pub source: &'static str,
}

const fn published(model: &'static str, delay_min: u32, source: &'static str) -> Publication {
    Publication { model, delay_min, source }
}

/// Open-Meteo's single-runs documentation gives "typically 4-6 hours for global models
/// (e.g. ECMWF IFS, GFS) and 1-3 hours for regional models"
/// (open-meteo.com/en/docs/single-runs-api); each Open-Meteo figure refines it by the
/// producer's dissemination schedule plus the ~10 minutes Open-Meteo asks for after an
/// update is announced (open-meteo.com/en/docs/model-updates). Bulletin figures are the
/// NCEP/MDL issuance times of the text products on NOMADS. In [`MODELS`] order.
pub const PUBLICATION: [Publication; 18] = [
    published("ARPEGE", 270, "Meteo-France ARPEGE world: 102 h runs disseminated from about +3 h 30; Open-Meteo model-updates page"),
    published("ECMWF-IFS", 450, "ECMWF dissemination schedule: day 10 of the 00/12 UTC HRES at about +6 h 55, open data after; Open-Meteo lists about +7 h 30"),
    published("GEFS", 370, "provisional: wethr.net/model-schedule observes GEFS complete about 6 h 6 min after the cycle (a third party's pipeline, an upper bound); needs NCEP's production schedule"),
    published("GEM-GDPS", 300, "MSC Datamart completes the 240 h GDPS run at about +4 h 30"),
    published("GEM-HRDPS", 300, "MSC Datamart completes the 48 h HRDPS continental run at about +4 h"),
    published("GFS", 330, "NCEP production schedule: the 384 h GFS 0.25 deg run completes on NOMADS at about +4 h 30; Open-Meteo: 4-6 hours"),
    published("GFS-MOS", 240, "MDL MAV card: the 0000 UTC message is available before 0400 UTC (about +3 h 45)"),
    published("HRRR", 135, "NCEP production schedule: 48 h HRRR CONUS runs complete at about +1 h 45"),
    published("ICON", 270, "DWD opendata.dwd.de completes the 180 h ICON global run at about +3 h 45"),
    published("JMA", 330, "JMA GSM: the 264 h run reaches JMA's distribution at about +4 h 30"),
    published("LAV-MOS", 65, "MDL LAMP schedule: the HH30 cycle's LAV bulletin is issued near HH+55; counted from HH00"),
    published("NAM", 210, "NCEP production schedule: the 84 h NAM CONUS run completes at about +2 h 45"),
    published("NAM-MOS", 195, "MDL MET bulletin: issued at about +2 h 45, after the NAM completes"),
    published("NAM4KM", 180, "provisional: wethr.net/model-schedule observes NAM 4 km about 2 h 59 min after the cycle; needs NCEP's production schedule"),
    published("NBM", 120, "NCEP production schedule: hourly NBM CONUS cycles complete at about +1 h 20"),
    published("NBS-MOS", 90, "MDL NBS text bulletin: issued with the NBM, about +1 h 20"),
    published("RAP", 105, "provisional: wethr.net/model-schedule observes RAP about 1 h 42 min after the cycle; needs NCEP's production schedule"),
    published("UKMO", 390, "UK Met Office global 10 km: released on its open data feed at about +5 h 30"),
];

/// When `model`'s runs are published.
pub fn publication(model: &str) -> Option<&'static Publication> {
    PUBLICATION.iter().find(|p| p.model == model)
}

/// The live source and delay of `model`, if a feed fetches it.
pub fn availability(model: &str) -> Option<&'static Availability> {
    AVAILABILITY.iter().find(|a| a.model == model)
}

/// The bulletin code (`MAV`, `MET`, `LAV`, `NBS`) of `model`, when its runs are published
/// as an NWS/MDL text bulletin ([`Publisher::Bulletin`] in [`AVAILABILITY`]).
pub fn bulletin_code(model: &str) -> Option<&'static str> {
    match availability(model)?.publisher {
        Publisher::Bulletin(code) => Some(code),
        Publisher::OpenMeteo(_) => None,
    }
}

/// Every model published as a text bulletin, with its code, in [`AVAILABILITY`] order.
pub fn bulletins() -> impl Iterator<Item = (&'static str, &'static str)> {
    AVAILABILITY.iter().filter_map(|a| match a.publisher {
        Publisher::Bulletin(code) => Some((code, a.model)),
        Publisher::OpenMeteo(_) => None,
    })
}

/// The runs of `model` published by `now` (run time, labelled `cycle_minute` past the
/// cycle hour, + `delay_min` passed) whose run time is after `since`, oldest first.
pub fn published_runs(
    model: &ModelSpec,
    delay_min: u32,
    since: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<chrono::DateTime<chrono::Utc>> {
    use chrono::{Duration, Timelike};
    let newest = now - Duration::minutes(i64::from(delay_min));
    let mut out = Vec::new();
    let Some(mut hour) = since.with_minute(0).and_then(|t| t.with_second(0)).and_then(|t| t.with_nanosecond(0)) else {
        return out;
    };
    while hour <= newest {
        if model.cycles.contains(&hour.hour()) {
            let run = hour + Duration::minutes(i64::from(model.cycle_minute));
            if run > since && run <= newest {
                out.push(run);
            }
        }
        hour += Duration::hours(1);
    }
    out
}

/// The model names accepted by the accuracy endpoint: the 18 plus the NWS hourly forecast.
pub const NWS_MODEL: &str = "NWS";

/// Looks a model up by its exact (case-sensitive) name.
pub fn model(name: &str) -> Option<&'static ModelSpec> {
    MODELS.iter().find(|m| m.name == name)
}

impl ModelSpec {
    /// Horizon of the run initialised at `cycle` UTC hour.
    pub fn horizon_for(&self, cycle: u32) -> u32 {
        let main = if self.cycles.len() > 4 { cycle.is_multiple_of(6) } else { cycle % 12 == self.cycles[0] % 12 };
        if main {
            self.horizon_h
        } else {
            self.short_horizon_h
        }
    }

    /// Output step at lead `h`.
    pub fn step_at(&self, h: u32) -> u32 {
        self.steps.iter().find(|(until, _)| h < *until).or(self.steps.last()).map(|s| s.1).unwrap_or(1)
    }

    /// Every lead hour a run at `cycle` outputs, F00 to its horizon.
    pub fn leads(&self, cycle: u32) -> Vec<u32> {
        let horizon = self.horizon_for(cycle);
        let mut out = Vec::new();
        let mut h = self.first_lead_h;
        while h <= horizon {
            out.push(h);
            h += self.step_at(h);
        }
        out
    }

    /// The UTC label of each of its runs, in cycle order: `06z`, or `06:30z` for a model
    /// whose runs are labelled past the hour (`cycle_minute`: LAMP).
    pub fn cycle_labels(&self) -> Vec<String> {
        self.cycles
            .iter()
            .map(|h| match self.cycle_minute {
                0 => format!("{h:02}z"),
                m => format!("{h:02}:{m:02}z"),
            })
            .collect()
    }

    /// The coarsest output step, the gap tolerated when deciding full-day coverage.
    pub fn max_step(&self) -> u32 {
        self.steps.iter().map(|s| s.1).max().unwrap_or(1)
    }
}

// --- Coverage: which stations a model really serves ------------------------------------

/// The area a model's product covers (approximate domain boxes; what matters here is which
/// catalog stations fall inside).
///
/// Facts per model, from the producers' domain descriptions:
/// - Global: ARPEGE (Météo-France world grid), ECMWF-IFS, GEFS, GEM-GDPS, GFS, ICON, JMA
///   (GSM), UKMO (global deterministic).
/// - North America: NAM (the 12 km North American domain) and RAP (13 km, North America):
///   the US, Canada and Mexico.
/// - The CONUS 3 km domain, which reaches into southern Canada and northern Mexico: HRRR
///   and NAM4KM (the NAM CONUS nest); about 21–53° N, 135–60° W.
/// - The HRDPS continental domain: Canada and the northern and central US; about 27–70° N,
///   152–42° W.
/// - US stations only: the station-based guidance GFS-MOS (MAV), NAM-MOS (MET), LAV-MOS
///   (LAMP) and the National Blend, NBM and NBS-MOS (CONUS, Alaska, Hawaii, Puerto Rico).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    Global,
    NorthAmerica,
    ConusDomain,
    HrdpsDomain,
    UsStations,
}

/// The coverage of a model by its exact name (`None` for a name that is not one of the 18).
pub fn coverage(model: &str) -> Option<Coverage> {
    Some(match model {
        "ARPEGE" | "ECMWF-IFS" | "GEFS" | "GEM-GDPS" | "GFS" | "ICON" | "JMA" | "UKMO" => Coverage::Global,
        "NAM" | "RAP" => Coverage::NorthAmerica,
        "HRRR" | "NAM4KM" => Coverage::ConusDomain,
        "GEM-HRDPS" => Coverage::HrdpsDomain,
        "GFS-MOS" | "NAM-MOS" | "LAV-MOS" | "NBM" | "NBS-MOS" => Coverage::UsStations,
        _ => return None,
    })
}

/// One model run whose rows were stored: what a flush tells its subscribers (the jobs'
/// fresh-runs trigger) and what the jobs read back from the lake.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoredRun {
    pub model: String,
    pub run_time: chrono::DateTime<chrono::Utc>,
}

impl StoredRun {
    /// The distinct runs among `(model, run_time)` pairs, sorted.
    pub fn distinct<'a>(pairs: impl Iterator<Item = (&'a str, chrono::DateTime<chrono::Utc>)>) -> Vec<StoredRun> {
        let set: std::collections::BTreeSet<StoredRun> =
            pairs.map(|(model, run_time)| StoredRun { model: model.to_string(), run_time }).collect();
        set.into_iter().collect()
    }

    /// The `run_date` partition of the run's rows (its UTC date).
    pub fn run_date(&self) -> chrono::NaiveDate {
        self.run_time.date_naive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eighteen_unique_models_in_spec_order() {
        let names: Vec<_> = MODELS.iter().map(|m| m.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        sorted.dedup();
        assert_eq!(sorted.len(), 18);
        assert!(model("GFS").is_some());
        assert!(model("gfs").is_none());
    }

    #[test]
    fn every_available_model_is_one_of_the_18_once() {
        for (i, a) in AVAILABILITY.iter().enumerate() {
            assert!(model(a.model).is_some(), "{}", a.model);
            assert!(AVAILABILITY[..i].iter().all(|b| b.model != a.model), "{} twice", a.model);
            let statistical = model(a.model).unwrap().statistical && a.model != "NBM";
            assert_eq!(matches!(a.publisher, Publisher::Bulletin(_)), statistical, "{}", a.model);
        }
        assert_eq!(availability("GFS").unwrap().publisher, Publisher::OpenMeteo("gfs_global"));
        assert!(availability("RAP").is_none());
        let codes: Vec<_> = bulletins().collect();
        assert_eq!(codes, [("MAV", "GFS-MOS"), ("MET", "NAM-MOS"), ("LAV", "LAV-MOS"), ("NBS", "NBS-MOS")]);
        assert_eq!(bulletin_code("LAV-MOS"), Some("LAV"));
        assert_eq!((bulletin_code("GFS"), bulletin_code("RAP"), bulletin_code("FOO")), (None, None, None));
    }

    #[test]
    fn every_model_has_one_sourced_publication_in_model_order() {
        let names: Vec<&str> = PUBLICATION.iter().map(|p| p.model).collect();
        assert_eq!(names, MODEL_NAMES);
        assert!(
            PUBLICATION.iter().all(|p| p.delay_min > 0 && p.source.len() > 20),
            "every figure says where it comes from"
        );
        assert_eq!(availability("GFS").unwrap().delay_min(), 330);
    }

    #[test]
    fn the_readme_lists_every_publication_as_the_code_has_it() {
        let readme = include_str!("../README.md");
        let table = readme.split("<!-- publication -->").nth(1).expect("the README's publication table");
        let rows: Vec<&str> =
            table.lines().skip_while(|l| l.is_empty()).take_while(|l| l.starts_with('|')).skip(2).collect();
        let want: Vec<String> =
            PUBLICATION.iter().map(|p| format!("| {} | {} | {} |", p.model, p.delay_min, p.source)).collect();
        assert_eq!(rows, want);
    }

    #[test]
    fn published_runs_wait_for_the_delay() {
        let t = |s: &str| crate::time::parse_utc(s).unwrap();
        let gfs = model("GFS").unwrap();
        // 05:29 with a 330-minute delay: 00Z is not out yet, 18Z of the day before is.
        let runs = published_runs(gfs, 330, t("2026-09-24T12:00:00Z"), t("2026-09-25T05:29:00Z"));
        assert_eq!(runs, [t("2026-09-24T18:00:00Z")]);
        let runs = published_runs(gfs, 330, t("2026-09-24T12:00:00Z"), t("2026-09-25T05:30:00Z"));
        assert_eq!(runs, [t("2026-09-24T18:00:00Z"), t("2026-09-25T00:00:00Z")]);
        // LAMP: hourly runs labelled HH30.
        let lav = model("LAV-MOS").unwrap();
        let runs = published_runs(lav, 65, t("2026-09-25T00:00:00Z"), t("2026-09-25T03:00:00Z"));
        assert_eq!(runs, [t("2026-09-25T00:30:00Z"), t("2026-09-25T01:30:00Z")]);
    }

    #[test]
    fn the_demo_publishes_each_run_no_later_than_its_feed_asks() {
        // The simulator serves a run `latency_h` after its run time; a feed asks for it
        // (and a backfilled run becomes available) `delay_min` after. Asking before it
        // exists would store nothing for that cycle.
        for p in &PUBLICATION {
            let spec = model(p.model).unwrap();
            assert!(
                spec.latency_h * 60 <= p.delay_min,
                "{}: demo {} h, published {} min",
                p.model,
                spec.latency_h,
                p.delay_min
            );
        }
        assert_eq!(model("LAV-MOS").unwrap().cycle_minute, 30);
        assert!(MODELS.iter().filter(|m| m.name != "LAV-MOS").all(|m| m.cycle_minute == 0));
    }

    #[test]
    fn cycle_labels_are_the_run_labels() {
        assert_eq!(model("GFS").unwrap().cycle_labels(), ["00z", "06z", "12z", "18z"]);
        assert_eq!(model("NBS-MOS").unwrap().cycle_labels(), ["01z", "07z", "13z", "19z"]);
        let lav = model("LAV-MOS").unwrap().cycle_labels();
        assert_eq!((lav.len(), lav[0].as_str(), lav[23].as_str()), (24, "00:30z", "23:30z"));
        // The label is the run time `published_runs` gives.
        let t = |s: &str| crate::time::parse_utc(s).unwrap();
        let runs = published_runs(model("LAV-MOS").unwrap(), 0, t("2026-09-25T11:59:00Z"), t("2026-09-25T12:59:00Z"));
        assert_eq!(runs, [t("2026-09-25T12:30:00Z")]);
        assert_eq!(model("LAV-MOS").unwrap().cycle_labels()[12], "12:30z");
    }

    #[test]
    fn leads_follow_steps_and_horizons() {
        let gfs = model("GFS").unwrap();
        let l = gfs.leads(0);
        assert_eq!(l[0], 0);
        assert_eq!(l[120], 120);
        assert_eq!(l[121], 123);
        assert_eq!(*l.last().unwrap(), 384);
        let hrrr = model("HRRR").unwrap();
        assert_eq!(*hrrr.leads(6).last().unwrap(), 48);
        assert_eq!(*hrrr.leads(7).last().unwrap(), 18);
        // MAV: 6..60 every 3 h, then 66 and 72 (the real bulletin's columns).
        let mav = model("GFS-MOS").unwrap();
        assert_eq!(mav.leads(0)[0], 6);
        assert_eq!(mav.leads(0).len(), 21);
        assert_eq!(&mav.leads(0)[18..], &[60, 66, 72]);
        assert_eq!(model("LAV-MOS").unwrap().leads(5)[0], 1);
        let nbs = model("NBS-MOS").unwrap();
        assert_eq!(nbs.horizon_for(1), 72);
    }

    #[test]
    fn every_model_has_a_coverage() {
        for m in &MODELS {
            assert!(coverage(m.name).is_some(), "{}", m.name);
        }
        assert!(coverage("FOO").is_none());
    }
}
