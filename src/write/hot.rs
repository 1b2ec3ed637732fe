//! The hot in-memory state of every catalog station: its live extremes engine, its recent
//! observations (for history and the latest observation) and its recent daily reports.
//! One lock per station, held only for an O(1) apply or a short read (the longest: an
//! answer as of a moment copying up to [`RECENT`] of one station's inputs), so readers of
//! one station never wait on ingest of another, and never long on their own.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Duration, Utc};
use parking_lot::{Mutex, RwLock};

use crate::catalog::Catalog;
use crate::decode::types::{DailyKind, DailyReport, Metar, OneMinute};
use crate::extremes::{DayExtremes, LiveEvent, LiveInput, Logic, StationExtremes};
use crate::lake::rows::LakeRecord;

/// How long observations stay in memory (history serves ≤ 24 h; a margin for late data).
pub const RECENT: Duration = Duration::hours(50);

/// The lake's last days the hot state is rebuilt from on start (`WriteService::open`): with
/// every observation ingested since, the hot state then holds every observation younger
/// than this, so a station's latest observation within it is the station's latest (the
/// `latest` mode answers it from memory; an older one is checked against the lake).
pub const REBUILD_WINDOW: Duration = Duration::days(2);

/// One station's hot state.
#[derive(Debug)]
pub struct StationHot {
    pub live: StationExtremes,
    /// Recent METAR/SPECI/HF-METAR by (time, row key): sorted, deduplicated.
    pub recent: BTreeMap<(DateTime<Utc>, u64), Metar>,
    /// Recent CLI and DSM reports, newest issue last.
    pub reports: Vec<DailyReport>,
    /// When each held input became known, for answers as of a time ([`HotState::known`]).
    known: KnownLog,
}

/// The moment each input of a station's hot state became known (its `available_at`: when
/// the service acknowledged it, or the lake's stamp for what a rebuild loaded), pruned with
/// `recent`. One-minute readings are kept here with their value: the engine keeps only
/// what it derived from them, and a replay needs the inputs.
#[derive(Debug, Default)]
struct KnownLog {
    /// By `recent`'s key.
    metars: HashMap<(DateTime<Utc>, u64), DateTime<Utc>>,
    /// By minute: (°F or a -999 gap, known at).
    onemin: BTreeMap<DateTime<Utc>, (Option<f64>, DateTime<Utc>)>,
    /// By report row key.
    reports: HashMap<u64, DateTime<Utc>>,
    /// Observation times before this were pruned (observations and one-minute readings).
    pruned_before: Option<DateTime<Utc>>,
}

impl KnownLog {
    /// Where the log is complete, given the rebuild's start `complete`.
    fn horizon(&self, complete: DateTime<Utc>) -> Option<DateTime<Utc>> {
        Some(self.pruned_before.map_or(complete, |p| p.max(complete)))
    }
}

/// The inputs of one station known by a time, as [`crate::lake::window::load_window`]
/// returns them.
pub type KnownInputs = (Vec<Metar>, Vec<OneMinute>, Vec<DailyReport>);

impl StationHot {
    /// True when the same daily report (kind, day, text) is held: a correction or a final
    /// report differs in its text and is a report of its own.
    fn holds_report(&self, r: &DailyReport) -> bool {
        self.reports.iter().any(|x| x.raw == r.raw && x.kind == r.kind && x.date == r.date)
    }
}

/// All stations' hot state.
#[derive(Debug)]
pub struct HotState {
    stations: HashMap<String, RwLock<StationHot>>,
    /// Records of stations outside the catalog seen within [`RECENT`], by (time, row key):
    /// they are not kept (only stored), but a feed that keeps every station of the world
    /// (the AWC cache file) brings them again with each poll, and those are duplicates
    /// too.
    outside: Mutex<BTreeSet<(DateTime<Utc>, u64)>>,
    /// The observation time from which the state holds every input the lake holds (the
    /// rebuild's window start), once rebuilt: [`HotState::known`] answers for windows
    /// after it.
    complete_from: RwLock<Option<DateTime<Utc>>>,
}

/// A record the hot state took, with the events it caused.
#[derive(Debug, Clone)]
pub enum Applied {
    Observation {
        station: String,
        metar: Metar,
        events: Vec<LiveEvent>,
        /// The station's extremes of the observation's day right after it, per logic
        /// (`nws`, `wu`), when asked for ([`Snapshot::At`]): what its stream payload shows,
        /// whatever was applied after it by the time the payload is built.
        after: Option<Box<[Option<DayExtremes>; 2]>>,
    },
    OneMinute {
        station: String,
        events: Vec<LiveEvent>,
    },
    Report {
        station: String,
        report: DailyReport,
        events: Vec<LiveEvent>,
        /// Whether the report disagrees with the observations, right after it was applied
        /// (when asked for).
        anomaly: Option<bool>,
    },
}

/// What the hot state did with one record.
#[derive(Debug, Clone)]
pub enum Take {
    /// New to the service: applied, with what it changed (the stream sends it). Boxed:
    /// an observation's change carries its whole report.
    New(Box<Applied>),
    /// Already held (same natural key): nothing changed, nothing is sent, and an ingest
    /// counts it as a duplicate rather than as accepted.
    Held,
    /// A record of a station outside the catalog, first seen within [`RECENT`]: stored in
    /// the lake, not kept in the hot state, nothing to stream (seen again, it is `Held`).
    Outside,
}

impl Take {
    /// The applied record, when the hot state took a new one.
    pub fn applied(self) -> Option<Applied> {
        match self {
            Take::New(a) => Some(*a),
            Take::Held | Take::Outside => None,
        }
    }
}

/// Whether an apply also captures the state its stream payload needs.
#[derive(Debug, Clone, Copy)]
pub enum Snapshot {
    /// No one streams the result (rebuilds, replays without a publisher).
    Skip,
    /// Capture the extremes as of this time.
    At(DateTime<Utc>),
}

impl Applied {
    /// The station the record is about.
    pub fn station(&self) -> &str {
        match self {
            Applied::Observation { station, .. }
            | Applied::OneMinute { station, .. }
            | Applied::Report { station, .. } => station,
        }
    }

    /// How many new-high / new-low changes the record caused.
    pub fn event_count(&self) -> usize {
        match self {
            Applied::Observation { events, .. }
            | Applied::OneMinute { events, .. }
            | Applied::Report { events, .. } => events.len(),
        }
    }
}

impl Default for HotState {
    fn default() -> Self {
        Self::new()
    }
}

impl HotState {
    /// One entry per catalog station, created up front so the map itself never changes.
    pub fn new() -> Self {
        let stations = Catalog::global()
            .all()
            .iter()
            .map(|s| {
                let hot = StationHot {
                    live: StationExtremes::new(s),
                    recent: BTreeMap::new(),
                    reports: Vec::new(),
                    known: KnownLog::default(),
                };
                (s.code.clone(), RwLock::new(hot))
            })
            .collect();
        HotState { stations, outside: Mutex::new(BTreeSet::new()), complete_from: RwLock::new(None) }
    }

    /// Records that the state now holds every input the lake holds observed from `from` on
    /// (called once the rebuild loaded the lake's window starting there).
    pub fn mark_complete_from(&self, from: DateTime<Utc>) {
        *self.complete_from.write() = Some(from);
    }

    /// The earliest observation time from which the state holds every input of station
    /// `code` (`None` before the rebuild, or outside the catalog): [`HotState::known`]
    /// answers for windows starting there or later. It moves only when [`HotState::prune`]
    /// runs.
    pub fn horizon(&self, code: &str) -> Option<DateTime<Utc>> {
        let complete = (*self.complete_from.read())?;
        self.read(code, |h| h.known.horizon(complete)).flatten()
    }

    /// What the service knew at `t` of station `code` in `[from, to)` (observation time;
    /// reports of the window's days and the day before, as the lake window reads them),
    /// from memory: the inputs it holds whose known time is at or before `t`. `None` when
    /// the state cannot tell: a station outside the catalog, or a window reaching before
    /// what it holds completely (the rebuild's start, or what [`HotState::prune`] dropped;
    /// checked under the station's lock, so a prune cannot cut the window while it is
    /// copied). The inputs are copied under the read lock (at most [`RECENT`] of one
    /// station's inputs); the caller replays them outside.
    pub fn known(
        &self,
        code: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        t: DateTime<Utc>,
        onemin: bool,
    ) -> Option<KnownInputs> {
        let complete = (*self.complete_from.read())?;
        self.read(code, |h| {
            if h.known.horizon(complete).is_none_or(|horizon| from < horizon) {
                return None;
            }
            let admitted = |k: Option<&DateTime<Utc>>| k.is_some_and(|at| *at <= t);
            let obs = h
                .recent
                .range((from, 0)..(to, 0))
                .filter(|(k, _)| admitted(h.known.metars.get(k)))
                .map(|(_, m)| m.clone())
                .collect();
            let mins = match onemin {
                false => Vec::new(),
                true => h
                    .known
                    .onemin
                    .range(from..to)
                    .filter(|(_, (_, at))| *at <= t)
                    .map(|(time, (temp_f, _))| OneMinute { station: code.to_string(), time: *time, temp_f: *temp_f })
                    .collect(),
            };
            let (first, last) = ((from - Duration::days(1)).date_naive(), to.date_naive());
            let reports = h
                .reports
                .iter()
                .filter(|r| first <= r.date && r.date <= last && admitted(h.known.reports.get(&r.row_key())))
                .cloned()
                .collect();
            Some((obs, mins, reports))
        })
        .flatten()
    }

    /// Runs `f` with read access to one station's state; `None` for stations outside the
    /// catalog.
    pub fn read<T>(&self, code: &str, f: impl FnOnce(&StationHot) -> T) -> Option<T> {
        let lock = self.stations.get(code)?;
        let guard = lock.read();
        Some(f(&guard))
    }

    fn write<T>(&self, code: &str, f: impl FnOnce(&mut StationHot) -> T) -> Option<T> {
        let lock = self.stations.get(code)?;
        let mut guard = lock.write();
        Some(f(&mut guard))
    }

    /// Applies one observation, unless the station's state already holds it (same natural
    /// key: a feed's overlapping windows and every restart bring reports back).
    /// `known`: when it became known (its `available_at`).
    pub fn apply_metar(&self, m: &Metar, known: DateTime<Utc>, snapshot: Snapshot) -> Take {
        let key = (m.time, m.row_key());
        self.write(&m.station, |h| {
            if h.recent.contains_key(&key) {
                return Take::Held;
            }
            let events = h.live.apply(LiveInput::Metar(m));
            h.recent.insert(key, m.clone());
            h.known.metars.insert(key, known);
            let after = match snapshot {
                Snapshot::Skip => None,
                Snapshot::At(now) => {
                    Some(Box::new([Logic::Nws, Logic::Wu].map(|l| h.live.extremes(l, h.live.day_of(l, m.time), now))))
                }
            };
            Take::New(Box::new(Applied::Observation { station: m.station.clone(), metar: m.clone(), events, after }))
        })
        .unwrap_or_else(|| self.take_outside(m.time, m.row_key()))
    }

    /// Applies one one-minute reading, unless one for that minute is already held.
    pub fn apply_onemin(&self, o: &OneMinute, known: DateTime<Utc>) -> Take {
        self.write(&o.station, |h| {
            if h.live.holds_one_minute(o.time) {
                return Take::Held;
            }
            // The first one stored wins, as in the lake (a suspect reading is not held by the
            // engine, so the same minute can come again).
            h.known.onemin.entry(o.time).or_insert((o.temp_f, known));
            Take::New(Box::new(Applied::OneMinute {
                station: o.station.clone(),
                events: h.live.apply(LiveInput::OneMinute(o)),
            }))
        })
        .unwrap_or_else(|| self.take_outside(o.time, o.row_key()))
    }

    /// Applies one daily report, unless the same product (kind, day, text) is already held:
    /// a correction or a final report differs in its text and is a report of its own.
    pub fn apply_report(&self, r: &DailyReport, known: DateTime<Utc>, snapshot: Snapshot) -> Take {
        self.write(&r.station, |h| {
            if h.holds_report(r) {
                return Take::Held;
            }
            let events = h.live.apply(LiveInput::Report(r));
            h.reports.push(r.clone());
            h.known.reports.insert(r.row_key(), known);
            h.reports.sort_by_key(|x| (x.date, x.issued_at, x.is_final));
            let anomaly = matches!(snapshot, Snapshot::At(_)).then(|| h.live.report_anomaly(r));
            Take::New(Box::new(Applied::Report { station: r.station.clone(), report: r.clone(), events, anomaly }))
        })
        .unwrap_or_else(|| self.take_outside(report_time(r), r.row_key()))
    }

    /// True when `m` is already held (the natural key of its station's recent reports):
    /// an ingest made only of held records has nothing to log or stream.
    pub fn holds_metar(&self, m: &Metar) -> bool {
        self.read(&m.station, |h| h.recent.contains_key(&(m.time, m.row_key())))
            .unwrap_or_else(|| self.outside_holds(m.time, m.row_key()))
    }

    /// True when a one-minute reading of that station and minute is already held.
    pub fn holds_onemin(&self, o: &OneMinute) -> bool {
        self.read(&o.station, |h| h.live.holds_one_minute(o.time))
            .unwrap_or_else(|| self.outside_holds(o.time, o.row_key()))
    }

    /// True when the same daily report (kind, day, text) is already held.
    pub fn holds_report(&self, r: &DailyReport) -> bool {
        self.read(&r.station, |h| h.holds_report(r)).unwrap_or_else(|| self.outside_holds(report_time(r), r.row_key()))
    }

    /// A record of a station outside the catalog: [`Take::Held`] when seen within
    /// [`RECENT`], else remembered and [`Take::Outside`].
    fn take_outside(&self, time: DateTime<Utc>, key: u64) -> Take {
        let mut seen = self.outside.lock();
        if seen.insert((time, key)) {
            Take::Outside
        } else {
            Take::Held
        }
    }

    fn outside_holds(&self, time: DateTime<Utc>, key: u64) -> bool {
        self.outside.lock().contains(&(time, key))
    }

    /// Drops what is older than the hot horizon (observations) or a few days (extremes).
    pub fn prune(&self, now: DateTime<Utc>) {
        {
            let mut seen = self.outside.lock();
            *seen = seen.split_off(&(now - RECENT, 0));
        }
        for lock in self.stations.values() {
            let mut h = lock.write();
            let cutoff = now - RECENT;
            h.recent = h.recent.split_off(&(cutoff, 0));
            h.live.prune(3, now);
            let oldest = (now - Duration::days(10)).date_naive();
            h.reports.retain(|r| r.date >= oldest);
            let h = &mut *h;
            h.known.metars.retain(|k, _| k.0 >= cutoff);
            h.known.onemin = h.known.onemin.split_off(&cutoff);
            h.known.pruned_before = h.known.pruned_before.max(Some(cutoff));
            let kept: BTreeSet<u64> = h.reports.iter().map(LakeRecord::row_key).collect();
            h.known.reports.retain(|k, _| kept.contains(k));
        }
    }

    /// The latest report of `kind` for a station, with the newest issue winning.
    pub fn latest_report(&self, code: &str, kind: DailyKind) -> Option<DailyReport> {
        self.read(code, |h| h.reports.iter().rev().find(|r| r.kind == kind).cloned()).flatten()
    }
}

/// The instant a daily report is remembered under among outside stations' records: its
/// issuance, else the start of its day.
fn report_time(r: &DailyReport) -> DateTime<Utc> {
    r.issued_at.unwrap_or_else(|| r.date.and_time(chrono::NaiveTime::MIN).and_utc())
}
