use super::*;
use crate::decode::types::fixture;
use chrono::{NaiveDateTime, TimeZone};

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

fn ok(text: &str) -> Metar {
    parse_metar(text, utc(2024, 3, 1, 12, 0)).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A metric visibility as the decoder stores it.
fn metres(m: u32) -> Option<f64> {
    Some(f64::from(m) / METRES_PER_SM)
}

fn close(a: Option<f64>, b: f64, tol: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= tol)
}

/// Rows of an IEM tab-separated export: header line after the `#DEBUG` lines.
fn iem_rows(rel: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let text = String::from_utf8(fixture(rel)).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#') && !l.is_empty());
    let header = lines.next().unwrap().split('\t').map(String::from).collect();
    let rows = lines.map(|l| l.split('\t').map(String::from).collect()).collect();
    (header, rows)
}

fn iem_time(s: &str) -> DateTime<Utc> {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap().and_utc()
}

// ---- real data -------------------------------------------------------------------

/// Every FM-15/FM-16 row of the KLNK LCD file decodes, at the time the DATE column
/// (LST = UTC-6) names, and agrees with NCEI's own decoded columns.
#[test]
fn lcd_klnk_every_report_decodes_and_matches_ncei_columns() {
    let bytes = fixture("lcd/LCD_KLNK_USW00014939_2023-01-01_2023-02-26_metric.csv");
    let mut rdr = csv::Reader::from_reader(bytes.as_slice());
    let h = rdr.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (c_date, c_type, c_rem) = (col("DATE"), col("REPORT_TYPE"), col("REM"));
    let (c_temp, c_slp, c_alt) =
        (col("HourlyDryBulbTemperature"), col("HourlySeaLevelPressure"), col("HourlyAltimeterSetting"));
    let (c_vis, c_wdir, c_wspd) = (col("HourlyVisibility"), col("HourlyWindDirection"), col("HourlyWindSpeed"));
    let (mut n, mut both, mut six, mut day, mut tenths_checked) = (0, 0, 0, 0, 0);
    let (mut metars, mut specis, mut traces) = (0, 0, 0);
    for rec in rdr.records() {
        let rec = rec.unwrap();
        let kind = match &rec[c_type] {
            "FM-15" => ReportKind::Metar,
            "FM-16" => ReportKind::Speci,
            _ => continue,
        };
        n += 1;
        let rem = &rec[c_rem];
        let start = rem.find("METAR ").or_else(|| rem.find("SPECI ")).unwrap_or_else(|| panic!("no keyword in {rem}"));
        let lst = NaiveDateTime::parse_from_str(&rec[c_date], "%Y-%m-%dT%H:%M:%S").unwrap();
        let reference = (lst + Duration::hours(6)).and_utc();
        let m = parse_metar(&rem[start..], reference).unwrap_or_else(|e| panic!("{}: {e}", &rem[start..]));
        assert_eq!(m.time, reference, "{rem}");
        assert_eq!(m.kind, Some(kind), "{rem}");
        match kind {
            ReportKind::Metar => metars += 1,
            _ => specis += 1,
        }
        assert_eq!(m.station, "KLNK");
        assert!(!m.tgroup_is_whole);
        // Body temperature is the T-group rounded half away from zero.
        if let (Some(w), Some(t)) = (m.temp_whole_c, m.tgroup_temp_c) {
            both += 1;
            assert_eq!(w, round_half_away(t) as i32, "{rem}");
        }
        if let (Some(w), Some(t)) = (m.dew_whole_c, m.tgroup_dew_c) {
            assert_eq!(w, round_half_away(t) as i32, "{rem}");
        }
        // NCEI's dry bulb is the T-group when there is one, else the body value (a few
        // REM texts are cut short inside the T-group: NCEI still had its tenths).
        if let Ok(t) = rec[c_temp].parse::<f64>() {
            if m.has_tenths() {
                assert_eq!(m.tgroup_temp_c, Some(t), "{rem}");
                tenths_checked += 1;
            } else {
                assert_eq!(m.temp_whole_c, Some(round_half_away(t) as i32), "{rem}: {t}");
            }
        }
        if let Ok(slp) = rec[c_slp].parse::<f64>() {
            assert!(close(m.sea_level_pressure_hpa, slp, 1e-9), "{rem}: {slp}");
        }
        if let Ok(alt) = rec[c_alt].parse::<f64>() {
            assert!(close(m.altimeter_hpa, alt, 0.051), "{rem}: {alt}");
        }
        if let Ok(km) = rec[c_vis].parse::<f64>() {
            assert!(close(m.visibility_sm.map(|v| v * 1.609_344), km, 0.001), "{rem}");
        }
        if let Ok(d) = rec[c_wdir].parse::<u16>() {
            assert_eq!(m.wind_dir_deg, Some(d), "{rem}");
        }
        if let Ok(ms) = rec[c_wspd].parse::<f64>() {
            // NCEI's m/s are rounded to 0.1 after its own conversion.
            assert!(close(m.wind_speed_kt.map(|k| k * 0.514_444), ms, 0.1), "{rem}");
        }
        // (NCEI's HourlyPrecipitation is quality-edited, not a decode: not compared.)
        if rem.contains(" P0000 ") {
            traces += 1;
            assert!(m.precip_trace && m.precip_hour_in == Some(0.0), "{rem}");
        }
        six += usize::from(m.six_hour_max_c.is_some() || m.six_hour_min_c.is_some());
        day += usize::from(m.day_max_c.is_some());
        assert_eq!(m.day_max_c.is_some(), m.day_min_c.is_some());
    }
    assert_eq!((n, metars, specis), (1714, 1357, 357));
    assert!(both > 1500, "{both}");
    assert!(tenths_checked > 1500, "{tenths_checked}");
    assert!(six > 100, "6-hour groups: {six}");
    assert!(day > 20, "24-hour groups: {day}");
    assert!(traces > 0);
}

/// Hand-checked lines of the LCD file.
#[test]
fn lcd_klnk_hand_checked() {
    // DATE 2023-01-31T11:54:00.
    let m = parse_metar(
        "METAR KLNK 311754Z 22013KT 10SM CLR M06/M16 A3037 RMK AO2 SLP309 \
             T10561161 11056 21133 58008 (HT)",
        utc(2023, 1, 31, 18, 0),
    )
    .unwrap();
    assert_eq!(m.time, utc(2023, 1, 31, 17, 54));
    assert_eq!((m.temp_whole_c, m.dew_whole_c), (Some(-6), Some(-16)));
    assert_eq!((m.tgroup_temp_c, m.tgroup_dew_c), (Some(-5.6), Some(-16.1)));
    assert_eq!((m.six_hour_max_c, m.six_hour_min_c), (Some(-5.6), Some(-13.3)));
    assert_eq!(m.sea_level_pressure_hpa, Some(1030.9));
    // DATE 2023-02-24T04:11:00: two-token visibility.
    let m = ok("SPECI KLNK 011011Z 01013KT 1 1/4SM -SN OVC018 M16/M20 A3062 RMK AO2 \
                    SNB0955 P0000 T11611200");
    assert_eq!(m.kind, Some(ReportKind::Speci));
    assert_eq!(m.visibility_sm, Some(1.25));
    assert_eq!((m.precip_hour_in, m.precip_trace), (Some(0.0), true));
    assert_eq!((m.tgroup_temp_c, m.tgroup_dew_c), (Some(-16.1), Some(-20.0)));
    // DATE 2023-02-22T03:54:00: gust, SLP below 1000.
    let m = ok("METAR KLNK 010954Z 02023G28KT 10SM BKN110 M01/M05 A2943 RMK AO2 PK WND \
                    02028/0953 SLP969 T10111050");
    assert_eq!((m.wind_dir_deg, m.wind_speed_kt, m.wind_gust_kt), (Some(20), Some(23.0), Some(28.0)));
    assert_eq!(m.sea_level_pressure_hpa, Some(996.9));
    // DATE 2023-01-02T14:54:00: 6-hour precipitation amount.
    let m = ok("METAR KLNK 012054Z 06009KT 10SM OVC011 03/00 A2979 RMK AO2 \
                    UPB27E36RAB36E37 SLP096 P0000 60002 T00280000 56049 (RC)");
    assert_eq!(m.precip_6h_in, Some(0.02));
    assert_eq!((m.tgroup_temp_c, m.tgroup_dew_c), (Some(2.8), Some(0.0)));
}

/// All three IEM KCVG exports decode at IEM's `valid` time; HF reports are marked.
#[test]
fn iem_kcvg_all_files_decode() {
    let files = [
        ("metar/IEM_KCVG_2024-03-01_routine.tsv", 24),
        ("metar/IEM_KCVG_2024-03-01_specials.tsv", 6),
        ("metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv", 317),
    ];
    for (rel, count) in files {
        let (header, rows) = iem_rows(rel);
        assert_eq!(header, ["station", "valid", "metar"]);
        assert_eq!(rows.len(), count, "{rel}");
        let mut hf = 0;
        for r in &rows {
            let valid = iem_time(&r[1]);
            let m = parse_metar(&r[2], valid).unwrap_or_else(|e| panic!("{}: {e}", r[2]));
            assert_eq!(m.time, valid, "{}", r[2]);
            assert_eq!(m.station, format!("K{}", r[0]));
            assert!(m.temp_whole_c.is_some() && m.altimeter_hpa.is_some(), "{}", r[2]);
            if r[2].ends_with("MADISHF") {
                hf += 1;
                assert_eq!(m.kind, Some(ReportKind::HfMetar));
                assert!(m.tgroup_is_whole && !m.has_tenths());
                // The zero-tenth T-group restates the body value.
                assert_eq!(m.tgroup_temp_c, m.temp_whole_c.map(f64::from), "{}", r[2]);
            } else {
                assert_eq!(m.kind, None);
                assert!(!m.tgroup_is_whole);
                let t = m.tgroup_temp_c.unwrap();
                assert_eq!(m.temp_whole_c, Some(round_half_away(t) as i32));
            }
        }
        if rel.contains("5min") {
            assert_eq!(hf, 287);
        }
    }
}

#[test]
fn iem_kcvg_hand_checked() {
    let (_, rows) = iem_rows("metar/IEM_KCVG_2024-03-01_routine.tsv");
    let get = |time: &str| {
        let r = rows.iter().find(|r| r[1] == time).unwrap();
        parse_metar(&r[2], iem_time(&r[1])).unwrap()
    };
    // 00:52 KCVG 010052Z 14003KT 10SM FEW250 03/M11 A3042 RMK AO2 SLP310 T00281106 $
    let m = get("2024-03-01 00:52");
    assert_eq!((m.wind_dir_deg, m.wind_speed_kt, m.wind_gust_kt), (Some(140), Some(3.0), None));
    assert_eq!((m.visibility_sm, m.visibility_less_than), (Some(10.0), false));
    assert_eq!((m.temp_whole_c, m.dew_whole_c), (Some(3), Some(-11)));
    assert_eq!((m.tgroup_temp_c, m.tgroup_dew_c), (Some(2.8), Some(-10.6)));
    assert_eq!(m.sea_level_pressure_hpa, Some(1031.0));
    assert!(close(m.altimeter_hpa, 1030.14, 0.01));
    assert_eq!(m.raw, "KCVG 010052Z 14003KT 10SM FEW250 03/M11 A3042 RMK AO2 SLP310 T00281106 $");
    assert_eq!(temperature_fields(&m), Some(Probable::exact_f(37)));
    // 04:52 ... T00001078 400671061 $
    let m = get("2024-03-01 04:52");
    assert_eq!((m.day_max_c, m.day_min_c), (Some(6.7), Some(-6.1)));
    assert_eq!(m.tgroup_temp_c, Some(0.0));
    // 05:52 ... T00061083 10033 21006 58020 $
    let m = get("2024-03-01 05:52");
    assert_eq!((m.six_hour_max_c, m.six_hour_min_c), (Some(3.3), Some(-0.6)));
    assert_eq!(m.sea_level_pressure_hpa, Some(1028.6));
    assert_eq!((m.day_max_c, m.precip_6h_in), (None, None));
    // 17:52 ... P0000 60000 T00561022 10056 21011 57010
    let m = get("2024-03-01 17:52");
    assert_eq!((m.precip_hour_in, m.precip_trace, m.precip_6h_in), (Some(0.0), true, Some(0.0)));
    assert_eq!((m.six_hour_max_c, m.six_hour_min_c), (Some(5.6), Some(-1.1)));
    // 23:52 ... 3SM RA BR ... P0005 60011 T00390039 10072 20039 56009 $
    let m = get("2024-03-01 23:52");
    assert_eq!(m.visibility_sm, Some(3.0));
    assert_eq!((m.precip_hour_in, m.precip_trace, m.precip_6h_in), (Some(0.05), false, Some(0.11)));
    assert_eq!((m.six_hour_max_c, m.six_hour_min_c), (Some(7.2), Some(3.9)));

    // HF line 00:00: KCVG 010000Z AUTO 15005KT 10SM 03/M10 A3043 RMK T00301100 MADISHF
    let (_, all) = iem_rows("metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv");
    let m = parse_metar(&all[0][2], iem_time(&all[0][1])).unwrap();
    assert!(m.auto && m.tgroup_is_whole);
    assert_eq!((m.tgroup_temp_c, m.tgroup_dew_c), (Some(3.0), Some(-10.0)));
    assert_eq!(m.temperature_c(), Some(3.0));
    assert_eq!(temperature_fields(&m), Some(Probable::from_whole_c(3)));
}

/// aviationweather.gov decodes the same groups: compare with its JSON fields.
#[test]
fn awc_json_fields_agree() {
    let v: serde_json::Value =
        serde_json::from_slice(&fixture("metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json")).unwrap();
    let obs = v.as_array().unwrap();
    assert_eq!(obs.len(), 9);
    let mut day_groups = 0;
    for o in obs {
        let raw = o["rawOb"].as_str().unwrap();
        let reference = o["reportTime"].as_str().unwrap().parse::<DateTime<Utc>>().unwrap();
        let m = parse_metar(raw, reference).unwrap();
        assert_eq!(m.kind, Some(ReportKind::Metar));
        assert_eq!(m.station, o["icaoId"].as_str().unwrap());
        assert_eq!(m.time.timestamp(), o["obsTime"].as_i64().unwrap());
        assert_eq!(m.temperature_c(), o["temp"].as_f64(), "{raw}");
        assert_eq!(m.dew_point_c(), o["dewp"].as_f64(), "{raw}");
        assert_eq!(m.sea_level_pressure_hpa, o["slp"].as_f64(), "{raw}");
        // AWC converts with a slightly different factor (A3030 -> 1026.2, not 1026.1).
        assert!(close(m.altimeter_hpa, o["altim"].as_f64().unwrap(), 0.15), "{raw}");
        assert_eq!(m.wind_speed_kt, o["wspd"].as_f64(), "{raw}");
        match o["wdir"].as_u64() {
            Some(d) => assert_eq!(m.wind_dir_deg, Some(d as u16)),
            None => assert!(m.wind_variable && m.wind_dir_deg.is_none()),
        }
        assert_eq!(m.six_hour_max_c, o.get("maxT").and_then(|x| x.as_f64()), "{raw}");
        assert_eq!(m.six_hour_min_c, o.get("minT").and_then(|x| x.as_f64()), "{raw}");
        assert_eq!(m.day_max_c, o.get("maxT24").and_then(|x| x.as_f64()), "{raw}");
        assert_eq!(m.day_min_c, o.get("minT24").and_then(|x| x.as_f64()), "{raw}");
        day_groups += usize::from(m.day_max_c.is_some());
    }
    assert_eq!(day_groups, 3);
    // KNYC 250451Z ... 05007G17KT 240V210 ...
    let m = ok("METAR KNYC 250451Z AUTO 05007G17KT 240V210 10SM CLR 14/03 A3027");
    assert_eq!((m.wind_var_from, m.wind_var_to), (Some(240), Some(210)));
    assert_eq!(m.wind_gust_kt, Some(17.0));
}

/// Singapore: metres visibility, Q altimeter, NOSIG and BECMG trends.
#[test]
fn wsss_all_decode() {
    let bytes = fixture("metar/WSSS_2025-12-05_2026-01-18_scraped.csv");
    let mut rdr = csv::Reader::from_reader(bytes.as_slice());
    let (mut n, mut specis) = (0, 0);
    for rec in rdr.records() {
        let rec = rec.unwrap();
        let when = NaiveDateTime::parse_from_str(&rec[0], "%Y-%m-%d %H:%M UTC").unwrap().and_utc();
        let m = parse_metar(&rec[1], when).unwrap_or_else(|e| panic!("{}: {e}", &rec[1]));
        n += 1;
        assert_eq!(m.station, "WSSS");
        // The scrape's timestamp is when it was scraped: at or after the report.
        assert!(m.time <= when && when - m.time < Duration::hours(7), "{}", &rec[1]);
        let group = rec[1].split(' ').nth(2).unwrap();
        assert_eq!(m.time.format("%d%H%MZ").to_string(), group);
        assert!(m.temp_whole_c.is_some() && m.dew_whole_c.is_some(), "{}", &rec[1]);
        let q = rec[1].split(' ').find(|t| t.starts_with('Q')).unwrap();
        assert_eq!(m.altimeter_hpa, q[1..].parse().ok(), "{}", &rec[1]);
        assert!(m.visibility_sm.is_some() && m.wind_speed_kt.is_some(), "{}", &rec[1]);
        specis += usize::from(m.kind == Some(ReportKind::Speci));
        assert!(m.kind.is_some());
    }
    assert_eq!(n, 1222);
    assert!(specis > 0);
    // Line 5: METAR WSSS 051600Z 32004KT 280V360 9999 FEW018 BKN300 27/23 Q1012 NOSIG
    let m =
        parse_metar("METAR WSSS 051600Z 32004KT 280V360 9999 FEW018 BKN300 27/23 Q1012 NOSIG", utc(2025, 12, 5, 16, 0))
            .unwrap();
    assert_eq!(m.time, utc(2025, 12, 5, 16, 0));
    assert_eq!((m.wind_dir_deg, m.wind_speed_kt), (Some(320), Some(4.0)));
    assert_eq!((m.wind_var_from, m.wind_var_to), (Some(280), Some(360)));
    assert_eq!(m.visibility_sm, metres(10_000));
    assert_eq!((m.temp_whole_c, m.dew_whole_c, m.altimeter_hpa), (Some(27), Some(23), Some(1012.0)));
    assert_eq!(temperature_fields(&m), Some(Probable::from_whole_c(27)));
    // The trend's 6000 must not replace the observed 4000 m.
    let m = ok("SPECI WSSS 120941Z 30004KT 240V010 4000 TSRA FEW012 FEW015CB FEW017TCU \
                    BKN150 25/23 Q1007 BECMG FM1015 TL1025 6000 NSW");
    assert_eq!(m.kind, Some(ReportKind::Speci));
    assert_eq!(m.visibility_sm, metres(4000));
}

/// Hyderabad: compare with IEM's decoded columns (tmpf, alti, vsby, sknt).
#[test]
fn vohy_all_decode_and_match_iem_columns() {
    let (h, rows) = iem_rows("metar/IEM_VOHY_2014-03-01_2014-04-04_all_fields.tsv");
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (c_valid, c_metar, c_tmpf, c_alti) = (col("valid"), col("metar"), col("tmpf"), col("alti"));
    let (c_vsby, c_sknt, c_drct) = (col("vsby"), col("sknt"), col("drct"));
    assert_eq!(rows.len(), 414);
    let mut unitless = 0;
    for r in &rows {
        let valid = iem_time(&r[c_valid]);
        let raw = &r[c_metar];
        let m = parse_metar(raw, valid).unwrap_or_else(|e| panic!("{raw}: {e}"));
        assert_eq!((m.time, m.station.as_str()), (valid, "VOHY"));
        if let Ok(f) = r[c_tmpf].parse::<f64>() {
            let c = m.temp_whole_c.map(|c| crate::units::c_to_f(f64::from(c)));
            assert!(close(c, f, 0.01), "{raw}: {f}");
        }
        if let Ok(inhg) = r[c_alti].parse::<f64>() {
            let a = m.altimeter_hpa.map(crate::units::hpa_to_inhg);
            assert!(close(a, inhg, 0.006), "{raw}: {inhg}");
        }
        if let Ok(sm) = r[c_vsby].parse::<f64>() {
            assert!(close(m.visibility_sm, sm, 0.006), "{raw}: {sm}");
        }
        // A unit-less wind like `22005` is ambiguous (IEM assumes m/s): no wind.
        let wind_tok = raw.split(' ').nth(2).unwrap();
        if wind_tok.len() == 5 && wind_tok != "00000" {
            unitless += 1;
            assert_eq!(m.wind_speed_kt, None, "{raw}");
        } else if let Ok(kt) = r[c_sknt].parse::<f64>() {
            assert_eq!(m.wind_speed_kt, Some(kt), "{raw}");
        }
        if let Ok(d) = r[c_drct].parse::<f64>() {
            if d > 0.0 && m.wind_speed_kt.is_some() {
                assert_eq!(m.wind_dir_deg.map(f64::from), Some(d), "{raw}");
            }
        }
    }
    assert!(unitless > 0);
    // First row: VOHY 010040Z 13004KT 3000 HZ BKN010 SCT015 21/16 Q1015 NOSIG
    let m = parse_metar(&rows[0][c_metar], iem_time(&rows[0][c_valid])).unwrap();
    assert_eq!((m.visibility_sm, m.altimeter_hpa), (metres(3000), Some(1015.0)));
    assert_eq!((m.temp_whole_c, m.dew_whole_c, m.kind), (Some(21), Some(16), None));
    // Row of 28 March: "VOHY 280140Z 00000 4000 ..." (wind without unit).
    let m = ok("VOHY 280140Z 00000 4000 HZ NSC 23/14 Q1015 NOSIG");
    assert_eq!((m.wind_speed_kt, m.visibility_sm), (Some(0.0), metres(4000)));
    // Nonstandard "QNH 1011".
    let m = ok("VOHY 010040Z 00000KT 4000 HZ FEW 020 SCT 020 26/12 QNH 1011 NOSIG");
    assert_eq!((m.altimeter_hpa, m.wind_dir_deg, m.wind_speed_kt), (Some(1011.0), None, Some(0.0)));
}

/// Raw WMO collectives (continuations, duplicates, NUL byte, junk): every chunk between
/// `=` terminators parses or errors, never panics, and most real reports decode.
#[test]
fn pyiem_collectives_never_panic() {
    let dir = format!("{}/data/real/metar/pyiem_collectives", env!("CARGO_MANIFEST_DIR"));
    let mut decoded = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for chunk in text.split('=') {
            let _ = parse_metar(chunk, utc(2024, 3, 1, 0, 0));
            // Start at the first station-looking line, as a collective splitter would.
            if let Some(i) = chunk.find("\nK") {
                decoded += usize::from(parse_metar(&chunk[i..], utc(2024, 3, 1, 0, 0)).is_ok());
            }
        }
    }
    assert!(decoded > 0);
}

// ---- time resolution ------------------------------------------------------------

#[test]
fn day_31_before_a_reference_on_the_1st() {
    let m = parse_metar("KXXX 312355Z 00000KT 10SM 05/M05 A3000", utc(2024, 1, 1, 0, 10)).unwrap();
    assert_eq!(m.time, utc(2023, 12, 31, 23, 55));
    // Into March from a reference on 1 March (February has no 31st).
    let m = parse_metar("KXXX 292355Z 00000KT", utc(2024, 3, 1, 0, 10)).unwrap();
    assert_eq!(m.time, utc(2024, 2, 29, 23, 55));
    // 1 May: 31 April does not exist, 31 March and 31 May are a month away.
    let e = parse_metar("KXXX 312355Z 00000KT", utc(2023, 5, 1, 0, 10)).unwrap_err();
    assert!(e.contains("not within 25 days"), "{e}");
}

#[test]
fn report_just_after_reference_rolls_forward() {
    let m = parse_metar("KXXX 010002Z 00000KT", utc(2023, 12, 31, 23, 58)).unwrap();
    assert_eq!(m.time, utc(2024, 1, 1, 0, 2));
    let m = parse_metar("KXXX 102400Z 00000KT", utc(2024, 3, 10, 23, 0)).unwrap();
    assert_eq!(m.time, utc(2024, 3, 11, 0, 0));
    // 20 days back stays in the same month.
    let m = parse_metar("KXXX 051200Z 00000KT", utc(2024, 3, 25, 12, 0)).unwrap();
    assert_eq!(m.time, utc(2024, 3, 5, 12, 0));
}

#[test]
fn bad_station_or_time_is_an_error() {
    let r = utc(2024, 3, 1, 12, 0);
    for (text, want) in [
        ("", "empty report"),
        ("   \n = ", "empty report"),
        ("METAR", "missing station id"),
        ("kcvg 011200Z", "expected station id, found 'kcvg'"),
        ("KCVG", "missing time group"),
        ("KCVG 14003KT", "bad time group '14003KT'"),
        ("KCVG 321200Z 14003KT", "bad time group '321200Z'"),
        ("KCVG 012560Z 14003KT", "bad time group '012560Z'"),
        ("KCVG 0112Z", "bad time group '0112Z'"),
        ("KCVG 011200Z NIL", "NIL report"),
        ("METAR KCVG 011200Z NIL=", "NIL report"),
    ] {
        let e = parse_metar(text, r).unwrap_err();
        assert!(e.contains(want), "{text:?}: {e}");
    }
}

// ---- groups ---------------------------------------------------------------------

#[test]
fn keywords_flags_and_raw() {
    let m = ok("METAR COR KABC 011155Z AUTO 36010KT 10SM CLR M05/M10 A2992 RMK AO2=");
    assert_eq!((m.kind, m.cor, m.auto), (Some(ReportKind::Metar), true, true));
    assert_eq!((m.temp_whole_c, m.dew_whole_c), (Some(-5), Some(-10)));
    assert_eq!(m.wind_dir_deg, Some(360));
    assert_eq!(m.raw, "METAR COR KABC 011155Z AUTO 36010KT 10SM CLR M05/M10 A2992 RMK AO2");
    let m = ok("SPECI KABC 011155Z COR 36010KT\n     10SM  CLR\t05/04 A2992 $=\n");
    assert_eq!((m.kind, m.cor), (Some(ReportKind::Speci), true));
    assert_eq!(m.raw, "SPECI KABC 011155Z COR 36010KT 10SM CLR 05/04 A2992 $");
    assert_eq!(ok("KABC 011155Z 05/04").kind, None);
    assert!(is_station_id("K1V4") && is_station_id("WSSS"));
    assert!(!is_station_id("1KAB") && !is_station_id("KCV") && !is_station_id("Kcvg"));
    assert!(!is_station_id("METAR") && !is_station_id("KÖLN"));
}

#[test]
fn wind_variants() {
    let m = ok("KABC 011155Z VRB03KT 10SM");
    assert_eq!((m.wind_dir_deg, m.wind_variable, m.wind_speed_kt), (None, true, Some(3.0)));
    let m = ok("KABC 011155Z 00000KT 10SM");
    assert_eq!((m.wind_dir_deg, m.wind_speed_kt), (None, Some(0.0)));
    let m = ok("KABC 011155Z 270105G120KT 10SM");
    assert_eq!((m.wind_dir_deg, m.wind_speed_kt, m.wind_gust_kt), (Some(270), Some(105.0), Some(120.0)));
    let m = ok("UUEE 011155Z 27005MPS 9999");
    assert!(close(m.wind_speed_kt, 9.72, 0.01));
    let m = ok("XXXX 011155Z 27037KMH 9999");
    assert!(close(m.wind_speed_kt, 19.98, 0.01));
    // Missing or malformed wind is skipped, not an error, and later groups still parse.
    for w in ["/////KT", "3605KT", "37010KT", "27010G5KT", "ABCDEKT", "270AAKT", "KT"] {
        let m = ok(&format!("KABC 011155Z {w} 10SM 05/04"));
        assert_eq!((m.wind_speed_kt, m.temp_whole_c), (None, Some(5)), "{w}");
    }
}

#[test]
fn visibility_variants() {
    let vis = |v: &str| {
        let m = ok(&format!("KABC 011155Z 36010KT {v} CLR 05/04"));
        (m.visibility_sm, m.visibility_less_than)
    };
    assert_eq!(vis("10SM"), (Some(10.0), false));
    assert_eq!(vis("1 1/2SM"), (Some(1.5), false));
    assert_eq!(vis("2 3/4SM"), (Some(2.75), false));
    assert_eq!(vis("1/2SM"), (Some(0.5), false));
    assert_eq!(vis("M1/4SM"), (Some(0.25), true));
    assert_eq!(vis("P6SM"), (Some(6.0), false));
    assert_eq!(vis("11/2SM"), (Some(1.5), false));
    assert_eq!(vis("9999"), (metres(10_000), false));
    assert_eq!(vis("CAVOK"), (metres(10_000), false));
    assert_eq!(vis("0800"), (metres(800), false));
    assert_eq!(vis("0000"), (Some(0.0), false));
    assert_eq!(vis("9999NDV"), (metres(10_000), false));
    for bad in ["1/0SM", "SM", "MSM", "1//2SM", "22/2SM", "ABCDSM", "12345"] {
        assert_eq!(vis(bad), (None, false), "{bad}");
    }
    // A lone digit without a fraction after it is not visibility.
    assert_eq!(vis("1 BKN010"), (None, false));
}

#[test]
fn temperature_variants() {
    let td = |g: &str| {
        let m = ok(&format!("KABC 011155Z 36010KT 10SM {g} A2992"));
        (m.temp_whole_c, m.dew_whole_c)
    };
    assert_eq!(td("03/M10"), (Some(3), Some(-10)));
    assert_eq!(td("M02/M05"), (Some(-2), Some(-5)));
    assert_eq!(td("M00/M00"), (Some(0), Some(0)));
    assert_eq!(td("15/"), (Some(15), None));
    assert_eq!(td("15/M"), (Some(15), None));
    assert_eq!(td("///15"), (None, Some(15)));
    assert_eq!(td("15///"), (Some(15), None));
    assert_eq!(td("/M05"), (None, Some(-5)));
    assert_eq!(td("//"), (None, None));
    assert_eq!(td("///"), (None, None));
    assert_eq!(td("/////"), (None, None));
    assert_eq!(td("1/2"), (None, None));
    assert_eq!(td("R24/P6000FT 12/10"), (Some(12), Some(10)));
    assert_eq!(td("////// 12/10"), (Some(12), Some(10)));
    assert_eq!(td("123/10"), (None, None));
    assert_eq!(td("M/M"), (None, None));
    assert_eq!(td("12/1"), (None, None));
    // Without visibility before it, a temperature group is still one.
    assert_eq!(ok("KABC 011155Z 12/10").temp_whole_c, Some(12));
    // The altimeter after any of those still parses.
    let m = ok("KABC 011155Z 36010KT 10SM // A2992");
    assert!(close(m.altimeter_hpa, 1013.21, 0.01));
    let m = ok("KABC 011155Z 36010KT 10SM 05/04 Q0999");
    assert_eq!(m.altimeter_hpa, Some(999.0));
    let m = ok("KABC 011155Z 36010KT 10SM 05/04 A0000 Q////");
    assert_eq!(m.altimeter_hpa, None);
}

#[test]
fn remark_groups_only_after_rmk() {
    // Coded groups before RMK are not remarks.
    let m = ok("KABC 011155Z 10SM 10056 21011 400670106 60012 70034 P0010 T00561011 05/01");
    assert_eq!(m.six_hour_max_c, None);
    assert_eq!(m.six_hour_min_c, None);
    assert_eq!((m.day_max_c, m.precip_6h_in, m.precip_24h_in), (None, None, None));
    assert_eq!((m.precip_hour_in, m.tgroup_temp_c), (None, None));
    assert_eq!(m.temp_whole_c, Some(5));
    let m = ok("KABC 011155Z 10SM 05/01 A3000 RMK AO2 SLP987 T00561011 10056 21011 \
                    401121089 60012 70034 P0010");
    assert_eq!(m.sea_level_pressure_hpa, Some(998.7));
    assert_eq!((m.tgroup_temp_c, m.tgroup_dew_c), (Some(5.6), Some(-1.1)));
    assert_eq!((m.six_hour_max_c, m.six_hour_min_c), (Some(5.6), Some(-1.1)));
    assert_eq!((m.day_max_c, m.day_min_c), (Some(11.2), Some(-8.9)));
    assert_eq!((m.precip_6h_in, m.precip_24h_in), (Some(0.12), Some(0.34)));
    assert_eq!((m.precip_hour_in, m.precip_trace), (Some(0.1), false));
    assert_eq!(temperature_fields(&m), Some(Probable::exact_f(42)));
}

#[test]
fn missing_and_odd_remark_groups() {
    let m = ok("KABC 011155Z 10SM 05/01 RMK AO2 SLPNO T0028 1//// 2//// 6//// 7//// \
                    P//// 4/012 4//////// 98060 TSB05 PK WND 02028/0953 VIS 1 1/2 10SM");
    assert_eq!((m.sea_level_pressure_hpa, m.tgroup_temp_c, m.tgroup_dew_c), (None, Some(2.8), None));
    assert_eq!((m.six_hour_max_c, m.six_hour_min_c), (None, None));
    assert_eq!((m.precip_6h_in, m.precip_24h_in, m.precip_hour_in), (None, None, None));
    assert_eq!((m.day_max_c, m.day_min_c, m.precip_trace), (None, None, false));
    assert_eq!(m.visibility_sm, Some(10.0));
    // Negative six-hour values and T-group signs; -0.0 never appears.
    let m = ok("KABC 011155Z RMK T10001000 11000 21120");
    assert_eq!((m.tgroup_temp_c, m.six_hour_max_c, m.six_hour_min_c), (Some(0.0), Some(0.0), Some(-12.0)));
    assert!(m.tgroup_temp_c.unwrap().is_sign_positive());
    // Bad sign digits are not groups.
    let m = ok("KABC 011155Z RMK T20281106 12028 421230456");
    assert_eq!((m.tgroup_temp_c, m.six_hour_max_c, m.day_max_c), (None, None, None));
}

#[test]
fn hf_metar_tgroup_is_whole() {
    let m = ok("KCVG 010015Z AUTO 14005KT 10SM 02/M10 A3043 RMK T00201100 MADISHF");
    assert_eq!(m.kind, Some(ReportKind::HfMetar));
    assert!(m.tgroup_is_whole && !m.has_tenths());
    assert_eq!(temperature_fields(&m), Some(Probable::from_whole_c(2)));
    // Without a body temperature the whole-degree T-group still gives the range.
    let m = ok("KCVG 010015Z AUTO 14005KT 10SM A3043 RMK T00201100 MADISHF");
    assert_eq!(temperature_fields(&m), Some(Probable::from_whole_c(2)));
    // No temperature at all.
    assert_eq!(temperature_fields(&ok("KCVG 010015Z AUTO 14005KT")), None);
    // Body only.
    assert_eq!(temperature_fields(&ok("KCVG 010015Z 03/M10")), Some(Probable::from_whole_c(3)));
}

#[test]
fn trend_groups_are_ignored() {
    let m = ok("EGLL 011150Z 24010KT 9999 FEW030 12/08 Q1020 TEMPO 3000 RA 25015G25KT");
    assert_eq!((m.visibility_sm, m.wind_speed_kt), (metres(10_000), Some(10.0)));
    let m = ok("EGLL 011150Z TEMPO 3000 RA RMK SLP123");
    assert_eq!((m.visibility_sm, m.sea_level_pressure_hpa), (None, Some(1012.3)));
}

/// What a case expects of the decoded report: wind, visibility and sea-level pressure,
/// the groups the acceptance cases are about.
#[derive(Debug, PartialEq)]
struct Groups {
    dir: Option<u16>,
    vrb: bool,
    kt: Option<f64>,
    gust: Option<f64>,
    vis_sm: Option<f64>,
    less: bool,
    slp: Option<f64>,
}

impl Groups {
    fn of(m: &Metar) -> Self {
        Groups {
            dir: m.wind_dir_deg,
            vrb: m.wind_variable,
            kt: m.wind_speed_kt,
            gust: m.wind_gust_kt,
            vis_sm: m.visibility_sm,
            less: m.visibility_less_than,
            slp: m.sea_level_pressure_hpa,
        }
    }
}

/// Acceptance cases written by public METAR decoder projects (python-metar's
/// `test_metar.py`, aeharding/metar-taf-parser, SimGear's METAR tests, factor's
/// `metar-tests`), each as a whole report line with the fields its project expects.
/// A part a report gives as missing is `None`; the parts it does give are kept.
#[test]
fn decoder_project_acceptance_cases() {
    let g = |dir, kt, gust, vis_sm, slp| Groups { dir, vrb: false, kt, gust, vis_sm, less: false, slp };
    let cases: Vec<(&str, Groups)> = vec![
            // Gust reported missing: speed and direction stay (python-metar, SimGear).
            ("KXYZ 011155Z 09010G//KT 10SM 05/04 A2992", g(Some(90), Some(10.0), None, Some(10.0), None)),
            ("KXYZ 011155Z 09010GMMKT 10SM 05/04 A2992", g(Some(90), Some(10.0), None, Some(10.0), None)),
            ("KXYZ 011155Z 09010GKT 10SM 05/04 A2992", g(Some(90), Some(10.0), None, Some(10.0), None)),
            (
                "CYAZ 171600Z 14040G//KT 10SM -RA OVC012 12/11 A2895 RMK NS8 VIA CYXY SLP806 DENSITY ALT 900FT",
                g(Some(140), Some(40.0), None, Some(10.0), Some(980.6)),
            ),
            // Direction missing: the speed stays; a missing speed keeps the direction.
            ("KXYZ 011155Z ///04KT 10SM CLR M01/M10 A2986 RMK AO2 T10061102", g(None, Some(4.0), None, Some(10.0), None)),
            ("KXYZ 011155Z ///00KT 10SM 05/04 A2992", g(None, Some(0.0), None, Some(10.0), None)),
            ("KXYZ 011155Z MMM00KT 10SM 05/04 A2992", g(None, Some(0.0), None, Some(10.0), None)),
            ("ZBAA 121253Z 180//KT 8000 12/02 Q1013", g(Some(180), None, None, metres(8000), None)),
            ("KXYZ 011155Z 000//KT 10SM 05/04 A2992", g(None, None, None, Some(10.0), None)),
            ("KXYZ 011155Z /////KT 10SM 05/04 A2992", g(None, None, None, Some(10.0), None)),
            ("KXYZ 011155Z MMMMMKT 10SM 05/04 A2992", g(None, None, None, Some(10.0), None)),
            (
                "KXYZ 011155Z VRB03G40KT 10SM 05/04 A2992",
                Groups { vrb: true, ..g(None, Some(3.0), Some(40.0), Some(10.0), None) },
            ),
            // Unit-less gusty wind: knots or m/s cannot be told, so nothing is stored.
            ("ENLK 081350Z 26026G40 240V300 9999 VCSH FEW025 BKN030 02/M01 Q0996", g(None, None, None, metres(10_000), None)),
            // Statute-mile visibility, prefixed fractions included (metar-taf-parser).
            ("SUMU 070520Z P1 1/2SM", g(None, None, None, Some(1.5), None)),
            ("SUMU 070520Z 3 1/4SM", g(None, None, None, Some(3.25), None)),
            ("SUMU 070520Z P6SM", g(None, None, None, Some(6.0), None)),
            ("SUMU 070520Z M1/4SM", Groups { less: true, ..g(None, None, None, Some(0.25), None) }),
            ("SUMU 070520Z M1 1/2SM", Groups { less: true, ..g(None, None, None, Some(1.5), None) }),
            ("KTTN 051853Z 04011KT 1 1/2SM VCTS SN FZFG BKN003 OVC010 M02/M02 A3006 RMK AO2 TSB40 SLP176 P0002 T10171017",
             g(Some(40), Some(11.0), None, Some(1.5), Some(1017.6))),
            // SLP before RMK (python-metar `test_slp_outside_remarks`), wind after the sky.
            (
                "METAR KCOF 191855Z 18015G22KT 7SM FEW049 SCT300 28/18 A3001 SLP162 RMK WND DATA ESTMD",
                g(Some(180), Some(15.0), Some(22.0), Some(7.0), Some(1016.2)),
            ),
            (
                "METAR KCOF 281855Z FEW029TCU FEW040 SCT250 09008KT 7SM 32/25 A3008 RMK VIRGA E TCU NE AND DSNT ALQDS SLP186",
                g(Some(90), Some(8.0), None, Some(7.0), Some(1018.6)),
            ),
            ("METAR KXYZ 191855Z 18015KT 7SM 28/18 A3001 SLPNO RMK AO2", g(Some(180), Some(15.0), None, Some(7.0), None)),
            // Metres, stored without rounding (factor, python-metar, metar-taf-parser).
            ("EGXX 011150Z 24010KT 0100 FG VV001 08/08 Q1020", g(Some(240), Some(10.0), None, metres(100), None)),
            ("EGXX 011150Z 24010KT 4200 BR 08/08 Q1020", g(Some(240), Some(10.0), None, metres(4200), None)),
            ("EGXX 011150Z 24010KT 9999 08/08 Q1020", g(Some(240), Some(10.0), None, metres(10_000), None)),
            ("EGXX 011150Z 24010KT CAVOK 08/08 Q1020", g(Some(240), Some(10.0), None, metres(10_000), None)),
            ("EGXX 011150Z 24010KT 7000NDV 08/08 Q1020", g(Some(240), Some(10.0), None, metres(7000), None)),
            ("EGXX 011150Z 24010KT 5000E 08/08 Q1020", g(Some(240), Some(10.0), None, metres(5000), None)),
            ("EGXX 011150Z 24010KT 1000W 3000 08/08 Q1020", g(Some(240), Some(10.0), None, metres(1000), None)),
            ("EGXX 011150Z 24010KT 1000 3000NE 08/08 Q1020", g(Some(240), Some(10.0), None, metres(1000), None)),
            (
                "LFPG 170830Z 00000KT 0350 R27L/0375N R09R/0175N R26R/0500D R08L/0400N R26L/0275D R08R/0250N \
                 R27R/0300N R09L/0200N FG SCT000 M01/M01 Q1026 NOSIG",
                g(None, Some(0.0), None, metres(350), None),
            ),
        ];
    for (report, want) in cases {
        assert_eq!(Groups::of(&ok(report)), want, "{report}");
    }
}

/// Metres come back exactly: `0100` is 100 m, not 96.6 m (0.06 SM), for every value
/// a four-digit group can hold.
#[test]
fn metric_visibility_round_trips_to_the_reported_metres() {
    let m = ok("EGXX 011150Z 24010KT 0100 FG 08/08 Q1020");
    assert_eq!(m.visibility_sm.map(|v| (v * METRES_PER_SM).round()), Some(100.0));
    for metres in 0..=9998u32 {
        let m = ok(&format!("EGXX 011150Z 24010KT {metres:04} 08/08 Q1020"));
        let back = m.visibility_sm.map(|v| v * METRES_PER_SM).unwrap();
        assert_eq!(back.round(), f64::from(metres), "{metres:04}");
        assert!((back - f64::from(metres)).abs() < 1e-9, "{metres:04}: {back}");
    }
}

#[test]
fn garbage_and_binary_never_panic() {
    let full = "METAR KCVG 010052Z 14003KT 1 1/2SM FEW250 03/M11 A3042 RMK AO2 SLP310 \
                    T00281106 10033 21006 400671061 P0000 60000 70012 MADISHF $=";
    // Every prefix (on char boundaries) parses or errors.
    for (i, _) in full.char_indices() {
        let _ = parse_metar(&full[..i], utc(2024, 3, 1, 0, 0));
    }
    // Pseudo-random bytes (xorshift), lossily decoded like a decoder's input would be.
    let mut next = crate::decode::testrand::xorshift(0x9E37_79B9_7F4A_7C15);
    let mut errors = 0;
    for _ in 0..2000 {
        let bytes: Vec<u8> = (0..64).map(|_| (next() >> 24) as u8).collect();
        let text = String::from_utf8_lossy(&bytes);
        errors += usize::from(parse_metar(&text, utc(2024, 3, 1, 0, 0)).is_err());
    }
    assert_eq!(errors, 2000);
    // Junk tokens between real ones.
    let m = ok("KABC 011155Z \u{0}\u{7} ÄÖÜ 36010KT ??? 10SM ///// 05/04 \u{FFFD} A2992 RMK T\u{0}\u{0}\u{0} \
                    Täst SLP1€");
    assert_eq!((m.wind_speed_kt, m.visibility_sm, m.temp_whole_c), (Some(10.0), Some(10.0), Some(5)));
    assert_eq!(m.sea_level_pressure_hpa, None);
    let e = parse_metar("\u{0}\u{1}\u{2} KABC", utc(2024, 3, 1, 0, 0)).unwrap_err();
    assert_eq!(e, "expected station id, found '\\0\\u{1}\\u{2}'");
    let long = "X".repeat(1000);
    let e = parse_metar(&long, utc(2024, 3, 1, 0, 0)).unwrap_err();
    assert!(e.len() < 80, "{e}");
}

#[test]
fn a_report_body_is_the_same_whatever_the_wrapper() {
    // The real AWC answer wraps its rawOb in `METAR`; IEM and bare lines do not; WMO
    // collectives add the `=` and fold lines.
    let awc = "METAR KAUS 250553Z 16006KT 10SM SCT200 BKN250 28/23 A3008 RMK AO2 SLP172 T02830228 10344 20278 403670217 51013 $";
    let bare =
        "KAUS 250553Z 16006KT 10SM SCT200 BKN250 28/23 A3008 RMK AO2 SLP172 T02830228 10344 20278 403670217 51013 $";
    let collective = "METAR KAUS 250553Z 16006KT 10SM SCT200 BKN250 28/23 A3008 RMK AO2\n     SLP172 T02830228 10344 20278 403670217 51013 $=";
    assert_eq!(report_body(awc), bare);
    assert_eq!(report_body(bare), bare);
    assert_eq!(report_body(collective), bare);
    // Borrowed when nothing moves: the key is computed for every stored row.
    assert!(matches!(report_body(awc), std::borrow::Cow::Borrowed(_)));
    assert_eq!(
        report_body("SPECI KNYC 270812Z 00000KT 10SM CLR 09/01 A3012"),
        "KNYC 270812Z 00000KT 10SM CLR 09/01 A3012"
    );
}

#[test]
fn a_correction_keeps_its_cor_wherever_the_source_wrote_it() {
    let us = "KNYC 270751Z COR 00000KT 10SM CLR 09/01 A3012";
    assert_eq!(report_body("METAR COR KNYC 270751Z 00000KT 10SM CLR 09/01 A3012"), us);
    assert_eq!(report_body("METAR KNYC 270751Z COR 00000KT 10SM CLR 09/01 A3012"), us);
    assert_eq!(report_body(us), us);
    // A correction is a report of its own: its body differs from the original's.
    assert_ne!(report_body(us), report_body("KNYC 270751Z 00000KT 10SM CLR 09/01 A3012"));
    // Degenerate inputs never panic.
    for odd in ["", "METAR", "COR", "METAR COR", "COR KNYC", "  METAR  KNYC  =", "METAR COR KNYC 270751Z"] {
        let _ = report_body(odd);
    }
    assert_eq!(report_body("METAR COR KNYC 270751Z"), "KNYC 270751Z COR");
}
