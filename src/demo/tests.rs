//! End-to-end checks of the generator: every product goes through the real decoders with
//! zero errors, and the products agree with each other and with the sensor series the
//! way real ones do (rounding rule, 6- and 24-hour groups, CLI = one-minute extremes).

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Timelike, Utc};

use super::*;
use crate::decode::climate_report::decode_cli;
use crate::decode::dsm::decode_dsm_with_year;
use crate::decode::forecast_rows::decode_forecast_csv;
use crate::decode::metar::parse_metar;
use crate::decode::metar_container::decode_metar_input;
use crate::decode::mos::{decode_mos, forecast_hours};
use crate::decode::nws_hourly::decode_nws_hourly;
use crate::decode::onemin::decode_onemin;
use crate::decode::types::{DailyKind, Metar, ReportKind};
use crate::models::model;
use crate::units::{f_to_c, round_half_away, tenths_c_to_whole_f};

const STATIONS: [&str; 9] = ["KNYC", "KDEN", "KPHX", "EGLC", "UUWW", "CYYZ", "MMMX", "VILK", "YSSY"];

pub(super) fn config(stations: &[&str], days: u32, forecasts: bool) -> DemoConfig {
    DemoConfig {
        end_date: NaiveDate::from_ymd_opt(2026, 1, 19).unwrap(),
        days,
        stations: stations.iter().map(|s| s.to_string()).collect(),
        seed: 4242,
        now: Utc.with_ymd_and_hms(2026, 1, 20, 23, 30, 0).unwrap(),
        forecasts,
        onemin: true,
    }
}

fn station(code: &str) -> &'static Station {
    Catalog::global().get(code).unwrap()
}

/// Decodes a station's METAR TSV, asserting zero errors and one record per data line.
fn metars(inputs: &StationInputs) -> Vec<Metar> {
    let d = decode_metar_input(inputs.metar_tsv.as_bytes(), None);
    assert!(d.errors.is_empty(), "{}: {:?}", inputs.station, &d.errors[..d.errors.len().min(5)]);
    let lines = inputs.metar_tsv.lines().filter(|l| !l.starts_with('#')).count() - 1;
    assert_eq!(d.records.len(), lines, "{}", inputs.station);
    d.records
}

/// The measured °F series of `code` over minutes `(from, to]`, gaps left out.
fn measured(code: &str, seed: u64, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<(DateTime<Utc>, i32)> {
    let st = station(code);
    let n = (to - from).num_minutes();
    (1..=n)
        .filter_map(|k| {
            let t = from + Duration::minutes(k);
            measured_f(st, t, seed).map(|f| (t, f))
        })
        .collect()
}

#[test]
fn same_seed_same_bytes_other_seed_other_weather() {
    let cfg = config(&["KNYC", "WSSS"], 2, true);
    for code in ["KNYC", "WSSS"] {
        let a = generate_station(&cfg, code);
        let b = generate_station(&cfg, code);
        assert_eq!(a, b, "{code}");
        let other = generate_station(&DemoConfig { seed: 1, ..cfg.clone() }, code);
        assert_ne!(a.metar_tsv, other.metar_tsv);
        assert_ne!(a.forecast_csv, other.forecast_csv);
    }
    // Parallel generation gives the same inputs, in station order.
    let all: Vec<StationInputs> = generate_all(&cfg).collect();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0], generate_station(&cfg, "KNYC"));
    assert_eq!(all[1].station, "WSSS");
    assert_eq!(generate_station(&cfg, "KXYZ"), StationInputs { station: "KXYZ".into(), ..Default::default() });
}

#[test]
fn every_metar_decodes_and_obeys_the_rounding_rule() {
    let cfg = config(&STATIONS, 3, false);
    for code in STATIONS {
        let inputs = generate_station(&cfg, code);
        let records = metars(&inputs);
        let st = station(code);
        let mut kinds = BTreeMap::new();
        for m in &records {
            assert_eq!(m.station, code);
            *kinds.entry(m.kind.map(|k| k.as_str())).or_insert(0) += 1;
            // The bare text parses on its own, too (the live feed's form).
            let again = parse_metar(&m.raw, m.time).unwrap();
            assert_eq!((again.time, again.temp_whole_c), (m.time, m.temp_whole_c));
            assert!(m.wind_speed_kt.is_some() && m.visibility_sm.is_some() && m.altimeter_hpa.is_some(), "{}", m.raw);
            if m.temp_whole_c.is_none() {
                // Only in a sensor gap.
                assert_eq!(measured_f(st, m.time, cfg.seed), None, "{}", m.raw);
                continue;
            }
            let whole = m.temp_whole_c.unwrap();
            assert!(m.dew_whole_c.unwrap() <= whole, "{}", m.raw);
            if st.is_us() {
                let f = measured_f(st, m.time, cfg.seed).expect("reported temperature outside a gap");
                let tenths = m.tgroup_temp_c.expect("US reports carry a T-group");
                if m.kind == Some(ReportKind::HfMetar) {
                    assert!(m.tgroup_is_whole, "{}", m.raw);
                    assert_eq!(tenths, f64::from(whole), "{}", m.raw);
                } else {
                    assert!(m.has_tenths());
                    assert_eq!(tenths_c_to_whole_f(tenths), f, "{}", m.raw);
                    assert_eq!((f_to_c(f64::from(f)) * 10.0).round() / 10.0, tenths, "{}", m.raw);
                }
                assert_eq!(round_half_away(crate::units::round1(f_to_c(f64::from(f)))) as i32, whole, "{}", m.raw);
            } else {
                assert!(m.tgroup_temp_c.is_none());
                let truth = truth_c(st, m.time, cfg.seed);
                assert_eq!(whole, round_half_away(truth) as i32, "{}", m.raw);
            }
        }
        if st.is_us() {
            assert!(kinds[&Some("HF-METAR")] > 800 && kinds[&Some("METAR")] > 70, "{code} {kinds:?}");
        } else {
            assert_eq!(kinds.len(), 1, "{code} {kinds:?}");
        }
    }
}

#[test]
fn speci_reports_are_marked_and_us_routine_minutes_are_51_or_52() {
    let cfg = config(&["KSEA"], 5, false);
    let records = metars(&generate_station(&cfg, "KSEA"));
    let speci: Vec<&Metar> = records.iter().filter(|m| m.kind == Some(ReportKind::Speci)).collect();
    assert!(!speci.is_empty(), "no SPECI in five Seattle days");
    assert!(speci.iter().all(|m| m.time.minute() % 5 != 0));
    let routine: Vec<u32> =
        records.iter().filter(|m| m.kind == Some(ReportKind::Metar)).map(|m| m.time.minute()).collect();
    assert!(routine.iter().all(|&mi| mi == routine[0]) && (routine[0] == 51 || routine[0] == 52));
}

#[test]
fn six_hour_groups_are_the_extremes_of_the_preceding_six_hours() {
    let cfg = config(&["KDEN", "KNYC"], 3, false);
    for code in ["KDEN", "KNYC"] {
        let records = metars(&generate_station(&cfg, code));
        let mut checked = 0;
        for m in records.iter().filter(|m| m.six_hour_max_c.is_some()) {
            assert_eq!(m.kind, Some(ReportKind::Metar));
            assert_eq!((m.time.hour() + 1) % 6, 0, "{}", m.raw);
            let window = measured(code, cfg.seed, m.time - Duration::hours(6), m.time);
            let max = window.iter().map(|x| x.1).max().unwrap();
            let min = window.iter().map(|x| x.1).min().unwrap();
            assert_eq!(tenths_c_to_whole_f(m.six_hour_max_c.unwrap()), max, "{}", m.raw);
            assert_eq!(tenths_c_to_whole_f(m.six_hour_min_c.unwrap()), min, "{}", m.raw);
            checked += 1;
        }
        assert!(checked >= 12, "{code}: {checked}");
    }
}

#[test]
fn twenty_four_hour_group_closes_each_standard_day() {
    let winter = config(&["KNYC", "KPHX"], 3, false);
    // Across the start of daylight saving time (8 March 2026): the LST day still closes
    // at 23:5x LST, which is 00:5x civil time in New York.
    let spring = DemoConfig {
        end_date: NaiveDate::from_ymd_opt(2026, 3, 9).unwrap(),
        now: Utc.with_ymd_and_hms(2026, 3, 10, 12, 0, 0).unwrap(),
        ..winter.clone()
    };
    for (cfg, code) in [(&winter, "KNYC"), (&winter, "KPHX"), (&spring, "KNYC")] {
        let st = station(code);
        let records = metars(&generate_station(cfg, code));
        let closing: Vec<&Metar> = records.iter().filter(|m| m.day_max_c.is_some()).collect();
        let sp = span(cfg, st);
        // One per LST day that ended: the three complete days.
        assert_eq!(closing.len(), sp.days.len(), "{code}");
        for (m, day) in closing.iter().zip(&sp.days) {
            let w = day_window(st.timezone, DayClock::Standard, *day);
            // The routine report nearest LST midnight, inside the day.
            assert!(m.time < w.end && w.end - m.time < Duration::minutes(10), "{}", m.raw);
            let values = measured(code, cfg.seed, w.start - Duration::minutes(1), m.time);
            assert_eq!(tenths_c_to_whole_f(m.day_max_c.unwrap()), values.iter().map(|x| x.1).max().unwrap());
            assert_eq!(tenths_c_to_whole_f(m.day_min_c.unwrap()), values.iter().map(|x| x.1).min().unwrap());
        }
    }
}

#[test]
fn cli_and_dsm_match_the_one_minute_series() {
    let cfg = config(&["KMSP", "KLAX"], 4, false);
    for code in ["KMSP", "KLAX"] {
        let st = station(code);
        let inputs = generate_station(&cfg, code);
        let onemin = decode_onemin(inputs.onemin_csv.as_ref().unwrap().as_bytes());
        assert!(onemin.errors.is_empty(), "{:?}", onemin.errors);
        let sp = span(&cfg, st);
        assert_eq!(onemin.records.len() as i64, (sp.obs_to - sp.obs_from).num_minutes() + 1);
        let gaps = onemin.records.iter().filter(|r| r.temp_f.is_none()).count();
        assert!(gaps < 400, "{gaps}");

        let cli = decode_cli(inputs.cli.as_bytes());
        assert!(cli.errors.is_empty(), "{:?}", cli.errors);
        let finals: Vec<_> = cli.records.iter().filter(|r| r.is_final).collect();
        assert_eq!(finals.len(), sp.days.len(), "{code}");
        // Each month's DSMs as `ingest dsm --month` reads them.
        let mut dsm = Vec::new();
        for ((year, month), text) in &inputs.dsm {
            let mid = Utc.with_ymd_and_hms(*year, *month, 15, 12, 0, 0).unwrap();
            let decoded = decode_dsm_with_year(text.as_bytes(), mid);
            assert!(decoded.errors.is_empty(), "{:?}", decoded.errors);
            dsm.extend(decoded.records);
        }
        assert_eq!(dsm.len(), sp.days.len());
        for r in cli.records.iter().chain(&dsm) {
            assert_eq!(r.station, code);
            let w = day_window(st.timezone, DayClock::Standard, r.date);
            let end = match r.valid_as_of_lst {
                Some(v) => v.and_utc() - Duration::seconds(i64::from(st.standard_offset_on(r.date).local_minus_utc())),
                None => w.end,
            };
            let day: Vec<f64> =
                onemin.records.iter().filter(|m| m.time >= w.start && m.time < end).filter_map(|m| m.temp_f).collect();
            let max = day.iter().copied().fold(f64::MIN, f64::max);
            let min = day.iter().copied().fold(f64::MAX, f64::min);
            assert_eq!(r.max_f.map(f64::from), Some(max), "{code} {:?} {}", r.kind, r.date);
            assert_eq!(r.min_f.map(f64::from), Some(min), "{code} {:?} {}", r.kind, r.date);
            assert!(r.issued_at.unwrap() <= cfg.now);
            if r.kind == DailyKind::Dsm {
                assert!(!r.is_final);
            }
        }
        // Today's afternoon preliminary: issued about 16:30 LST, so by 23:30Z in
        // Minneapolis (17:30 CST) but not yet in Los Angeles (15:30 PST).
        let prelim: Vec<_> = cli.records.iter().filter(|r| !r.is_final).collect();
        assert_eq!(prelim.len(), usize::from(code == "KMSP"), "{code}");
        assert!(prelim.iter().all(|r| Some(r.date) == sp.today));
    }
}

#[test]
fn metar_temperatures_sit_within_the_official_extremes() {
    let cfg = config(&["KATL"], 3, false);
    let st = station("KATL");
    let inputs = generate_station(&cfg, "KATL");
    let cli = decode_cli(inputs.cli.as_bytes()).records;
    for m in metars(&inputs) {
        let Some(t) = m.temperature_c() else { continue };
        let date = crate::time::standard_date(st.timezone, m.time);
        let Some(r) = cli.iter().find(|r| r.date == date && r.is_final) else { continue };
        let p = crate::decode::metar::temperature_fields(&m).unwrap();
        assert!(p.lowest_f <= r.max_f.unwrap() && p.highest_f >= r.min_f.unwrap(), "{} vs {:?}", m.raw, r);
        let _ = t;
    }
}

#[test]
fn every_forecast_product_decodes_with_the_expected_leads() {
    let cfg = config(&["KNYC", "EGLC"], 1, true);
    for code in ["KNYC", "EGLC"] {
        let inputs = generate_station(&cfg, code);
        let d = decode_forecast_csv(inputs.forecast_csv.as_bytes());
        assert!(d.errors.is_empty(), "{:?}", &d.errors[..d.errors.len().min(5)]);
        let mut by_run: BTreeMap<(&str, DateTime<Utc>), Vec<u32>> = BTreeMap::new();
        for r in &d.records {
            assert_eq!(r.location_name, code);
            assert!(r.temperature_c.is_some() && r.temperature_f.is_some() && r.temperature_k.is_some());
            by_run.entry((r.model, r.run_time)).or_default().push(r.forecast_hour as u32);
        }
        let gridded: std::collections::BTreeSet<&str> = by_run.keys().map(|k| k.0).collect();
        // KNYC has all 14 gridded models; EGLC only the 8 global ones (Station::has_forecasts_from).
        assert_eq!(gridded.len(), if code == "KNYC" { 14 } else { 8 }, "{gridded:?}");
        for ((name, run), leads) in &by_run {
            assert_eq!(*leads, model(name).unwrap().leads(run.hour()), "{name} {run}");
        }
        let mut mos_models = std::collections::BTreeSet::new();
        for (name, text) in &inputs.mos {
            let d = decode_mos(text.as_bytes());
            assert!(d.errors.is_empty(), "{name}: {:?}", d.errors);
            let run = d.records[0].run_time;
            let leads: Vec<i32> = d.records.iter().map(|r| r.forecast_hour).collect();
            assert_eq!(Some(leads), forecast_hours(name, run), "{name}");
            assert!(run + Duration::hours(i64::from(model(name).unwrap().latency_h)) <= cfg.now);
            mos_models.insert(name.as_str());
        }
        // MOS guidance exists for US stations only.
        assert_eq!(mos_models.len(), if code == "KNYC" { 4 } else { 0 });
        if code == "KNYC" {
            assert!(inputs.nws_hourly.len() >= 12);
            let mut last = None;
            for text in &inputs.nws_hourly {
                let f = decode_nws_hourly(text.as_bytes()).unwrap();
                assert_eq!(f.periods.len(), 156);
                assert!(f.generated_at <= cfg.now && last.is_none_or(|l| l < f.generated_at));
                last = Some(f.generated_at);
            }
        } else {
            assert!(inputs.nws_hourly.is_empty() && inputs.cli.is_empty() && inputs.onemin_csv.is_none());
        }
    }
}

#[test]
fn span_covers_standard_and_civil_days_and_stops_at_now() {
    let cfg = config(&["KNYC"], 2, false);
    let st = station("KNYC");
    let sp = span(&cfg, st);
    assert_eq!(sp.obs_from, Utc.with_ymd_and_hms(2026, 1, 18, 5, 0, 0).unwrap());
    assert_eq!(sp.obs_to, cfg.now);
    assert_eq!(sp.days.len(), 2);
    assert_eq!(sp.today, NaiveDate::from_ymd_opt(2026, 1, 20));
    // Before the last day ends (New York, 03:00Z), it is "today" and has no final CLI.
    let early = DemoConfig { now: Utc.with_ymd_and_hms(2026, 1, 20, 3, 0, 0).unwrap(), ..cfg };
    let sp = span(&early, st);
    assert_eq!(sp.days.len(), 1);
    assert_eq!(sp.today, NaiveDate::from_ymd_opt(2026, 1, 19));
}

#[test]
fn precipitation_groups_add_up() {
    // Seattle in January: 3- and 6-hour groups (6RRRR) and the 24-hour group (7RRRR) are
    // the sums of the hourly P groups of the routine reports they span.
    let cfg = config(&["KSEA"], 6, false);
    let records = metars(&generate_station(&cfg, "KSEA"));
    let routine: Vec<&Metar> = records.iter().filter(|m| m.kind == Some(ReportKind::Metar)).collect();
    let hundredths = |x: Option<f64>| x.map_or(0, |v| (v * 100.0).round() as i64);
    let (mut groups, mut wet) = (0, 0);
    for (i, m) in routine.iter().enumerate() {
        for (total, hours) in
            [(m.precip_6h_in, if (m.time.hour() + 1) % 6 == 0 { 6 } else { 3 }), (m.precip_24h_in, 24)]
        {
            if total.is_none() || i < hours {
                continue;
            }
            let sum: i64 = routine[i + 1 - hours..=i].iter().map(|r| hundredths(r.precip_hour_in)).sum();
            assert_eq!(hundredths(total), sum, "{}", m.raw);
            groups += 1;
            wet += usize::from(sum > 0);
        }
    }
    assert!(groups > 10 && wet > 3, "{groups} groups, {wet} with rain");
}

#[test]
fn daily_point_forecasts_decode_come_before_their_day_and_err_like_forecasts() {
    use crate::decode::daily_forecasts::decode_daily_forecasts;
    let cfg = config(&["KMSP", "EGLC"], 30, true);
    let inputs = generate_station(&cfg, "EGLC");
    assert!(inputs.daily_forecasts_csv.is_empty(), "the NWS point forecast is a US product");
    let st = station("KMSP");
    let inputs = generate_station(&cfg, "KMSP");
    let d = decode_daily_forecasts(inputs.daily_forecasts_csv.as_bytes());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let cli = decode_cli(inputs.cli.as_bytes());
    let settled: BTreeMap<NaiveDate, i32> =
        cli.records.iter().filter(|r| r.is_final).filter_map(|r| Some((r.date, r.max_f?))).collect();
    let mut errors = Vec::new();
    for f in &d.records {
        assert_eq!((f.source.as_str(), f.station.as_str()), (forecasts::POINT_SOURCE, "KMSP"));
        assert!(f.issued_at <= cfg.now, "{f:?}");
        // Issued the afternoon before or the early morning of the day, never after noon.
        let day = day_window(st.timezone, DayClock::Standard, f.date);
        assert!(f.issued_at < day.start + Duration::hours(12), "{f:?}");
        assert!(f.high >= f.low, "{f:?}");
        if let (Some(high), Some(cli)) = (f.high, settled.get(&f.date)) {
            errors.push(high - f64::from(*cli));
        }
    }
    // Both issuances of the settled days: a forecast, not the answer, and not a guess.
    assert!(errors.len() >= 50, "{}", errors.len());
    let mae = errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64;
    let exact = errors.iter().filter(|e| **e == 0.0).count();
    assert!((1.0..4.0).contains(&mae), "mean absolute error {mae}");
    assert!(exact < errors.len() / 3, "{exact} of {} exact", errors.len());
}
