use super::*;
use crate::decode::types::fixture;

fn mos(name: &str) -> Decoded<ForecastRow> {
    decode_mos(&fixture(&format!("forecast/mos/{name}")))
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

fn station<'a>(d: &'a Decoded<ForecastRow>, id: &str) -> Vec<&'a ForecastRow> {
    d.records.iter().filter(|r| r.location_name == id).collect()
}

/// Checks the values of one row as read off the bulletin text.
#[allow(clippy::too_many_arguments)]
fn check(
    r: &ForecastRow,
    valid: DateTime<Utc>,
    fh: i32,
    t: f64,
    dp: Option<f64>,
    wdr: Option<i32>,
    wsp_kt: Option<f64>,
    cloud: Option<f64>,
) {
    assert_eq!(r.valid_time, valid, "{r:?}");
    assert_eq!(r.forecast_hour, fh, "{r:?}");
    assert_eq!(r.temperature_f, Some(t), "{r:?}");
    assert_eq!(r.dew_point_f, dp, "{r:?}");
    assert_eq!(r.wind_direction_deg, wdr, "{r:?}");
    assert_eq!(r.wind_speed_mph, wsp_kt.map(kt_to_mph), "{r:?}");
    assert_eq!(r.cloud_cover, cloud, "{r:?}");
}

const ALL: [&str; 19] = [
    "ECS.txt",
    "LAVUSA.txt",
    "LEVUSA.txt",
    "METNC1.txt",
    "MET_empty.txt",
    "MEXAFG.txt",
    "MEXNC1.txt",
    "MEXNC1_winter.txt",
    "NBEUSA.txt",
    "NBSUSA.txt",
    "NBSUSA_32.txt",
    "NBSUSA_32_station.txt",
    "NBSUSA_empty.txt",
    "NBS_12Z.txt",
    "NBS_15Z.txt",
    "NBS_21Z.txt",
    "NBS_v5.txt",
    "NBXUSA.txt",
    "NBXUSA_int.txt",
];

#[test]
fn every_fixture_decodes_without_errors() {
    // Rows per file: stations with a TMP row × columns carrying a temperature, counted
    // by hand from the bulletin text (see the per-type tests for each breakdown).
    let expected: [(&str, usize); 19] = [
        ("ECS.txt", 0),
        ("LAVUSA.txt", 23),
        ("LEVUSA.txt", 0),
        ("METNC1.txt", 84),
        ("MET_empty.txt", 42),
        ("MEXAFG.txt", 0),
        ("MEXNC1.txt", 0),
        ("MEXNC1_winter.txt", 0),
        ("NBEUSA.txt", 0),
        ("NBSUSA.txt", 42),
        ("NBSUSA_32.txt", 69),
        ("NBSUSA_32_station.txt", 92),
        ("NBSUSA_empty.txt", 0),
        ("NBS_12Z.txt", 23),
        ("NBS_15Z.txt", 23),
        ("NBS_21Z.txt", 23),
        ("NBS_v5.txt", 23),
        ("NBXUSA.txt", 0),
        ("NBXUSA_int.txt", 0),
    ];
    for (name, rows) in expected {
        assert!(ALL.contains(&name));
        let d = mos(name);
        assert!(d.errors.is_empty(), "{name}: {:?}", d.errors);
        assert_eq!(d.records.len(), rows, "{name}");
        let text = fixture(&format!("forecast/mos/{name}"));
        assert_eq!(d.read, String::from_utf8_lossy(&text).lines().count(), "{name}");
        for r in &d.records {
            assert!(r.latitude.is_none() && r.longitude.is_none());
            assert!(r.temperature_c.is_some() && r.temperature_k.is_some());
            assert!(r.valid_time > r.run_time - Duration::hours(1));
        }
    }
    // All bulletins one after the other (as an archive concatenates them): a WMO
    // preamble line closes the previous bulletin's last block.
    let mut all = Vec::new();
    for (name, _) in expected {
        all.extend(fixture(&format!("forecast/mos/{name}")));
        all.push(b'\n');
    }
    let d = decode_mos(&all);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records.len(), expected.iter().map(|(_, n)| n).sum::<usize>());
}

#[test]
fn met_nam_mos_values() {
    // METNC1: 4 stations (KFOZ, KFPK, KFRM, KFSD), each HR row 21 columns, all TMP set.
    let d = mos("METNC1.txt");
    let ids: Vec<&str> = d.records.iter().map(|r| r.location_name.as_str()).collect();
    for id in ["KFOZ", "KFPK", "KFRM", "KFSD"] {
        assert_eq!(ids.iter().filter(|s| **s == id).count(), 21, "{id}");
    }
    let k = station(&d, "KFOZ");
    assert!(k.iter().all(|r| r.model == "NAM-MOS" && r.run_time == utc(2017, 8, 12, 12, 0)));
    // Line 5-12: HR 18, TMP 75, DPT 46, CLD CL, WDR 23, WSP 04.
    check(k[0], utc(2017, 8, 12, 18, 0), 6, 75.0, Some(46.0), Some(230), Some(4.0), Some(0.0));
    // Column 3 (HR 00, Aug 13): TMP 74, DPT 49, CLD CL, WDR 21, WSP 01.
    check(k[2], utc(2017, 8, 13, 0, 0), 12, 74.0, Some(49.0), Some(210), Some(1.0), Some(0.0));
    // Column 5 (06Z): WDR 00 WSP 00 is calm; CLD FW.
    check(k[4], utc(2017, 8, 13, 6, 0), 18, 52.0, Some(46.0), Some(0), Some(0.0), Some(25.0));
    // Column 20 (HR 06, Aug 15): TMP 52, DPT 52, CLD SC, WDR 11, WSP 01.
    check(k[19], utc(2017, 8, 15, 6, 0), 66, 52.0, Some(52.0), Some(110), Some(1.0), Some(50.0));
    // Last column (HR 12): TMP 49, DPT 49, CLD BK, WDR 11, WSP 03.
    check(k[20], utc(2017, 8, 15, 12, 0), 72, 49.0, Some(49.0), Some(110), Some(3.0), Some(80.0));
    assert!((k[0].temperature_c.get().unwrap() - 23.888_888).abs() < 1e-5);
    assert!((k[0].dew_point_c.get().unwrap() - 7.777_777).abs() < 1e-5);
    assert!(k.iter().all(|r| r.wind_gusts_mph.is_none()));
}

#[test]
fn met_truncated_last_station_gives_no_rows() {
    // MET_empty: PHSF and PHTO have 21 columns each; PMDY stops after its HR row. Its
    // headers carry the record separator written out as a literal `^^`.
    let d = mos("MET_empty.txt");
    assert_eq!(station(&d, "PHSF").len(), 21);
    assert_eq!(station(&d, "PHTO").len(), 21);
    assert!(station(&d, "PMDY").is_empty());
    let p = station(&d, "PHTO");
    // 00Z run: HR 06 first, ... 12 18 00 at the end.
    check(p[0], utc(2018, 1, 26, 6, 0), 6, 71.0, Some(68.0), Some(230), Some(4.0), Some(100.0));
    check(p[19], utc(2018, 1, 28, 18, 0), 66, 68.0, Some(63.0), Some(230), Some(5.0), Some(100.0));
    check(p[20], utc(2018, 1, 29, 0, 0), 72, 78.0, Some(67.0), Some(100), Some(8.0), Some(100.0));
}

/// A real MAV block (KMCO 2020-02-11 00Z), from avwx-engine's tests (MIT); the
/// fixture set has no MAV file.
const MAV_KMCO: &str = "\
KMCO   GFS MOS GUIDANCE    2/11/2020  0000 UTC                      
DT /FEB  11            /FEB  12                /FEB  13          /  
HR   06 09 12 15 18 21 00 03 06 09 12 15 18 21 00 03 06 09 12 18 00 
X/N                    85          67          87          66    85 
TMP  66 65 65 74 82 84 76 72 70 69 69 77 84 85 77 72 70 68 68 82 77 
DPT  64 64 64 68 66 64 66 68 68 67 67 69 66 65 66 67 67 66 66 67 66 
CLD  BK OV OV BK SC BK SC SC SC OV BK SC BK BK SC FW SC SC BK BK BK 
WDR  13 14 14 16 18 18 14 17 30 36 09 16 16 16 15 16 16 17 18 20 21 
WSP  05 04 03 08 08 07 06 04 02 01 01 06 12 11 06 06 05 04 04 12 06 
P06         2     2     4    12     5     7     1     0     6  5 26 
P12                     4          15           8           6    33 
Q06         0     0     0     0     0     0     0     0     0  0  0 
Q12                     0           0           0           0     0 
T06      0/16  0/ 5  1/ 3  2/ 0  1/18  1/ 6  1/18  0/ 2  0/ 6 12/14 
T12            0/16        2/ 8        1/18        2/18     1/ 6    
POZ   0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0 
POS   0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  0  1  0  0  0 
TYP   R  R  R  R  R  R  R  R  R  R  R  R  R  R  R  R  R  R  R  R  R 
CIG   8  3  2  8  8  8  8  8  8  6  6  8  6  8  8  8  8  8  5  6  8 
VIS   7  7  4  7  7  7  7  7  7  5  1  7  7  7  7  7  7  7  5  7  7 
OBV   N  N BR  N  N  N  N  N  N BR FG  N  N  N  N  N  N  N BR  N  N
";

#[test]
fn mav_gfs_mos_values() {
    let d = decode_mos(MAV_KMCO.as_bytes());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records.len(), 21); // HR row: 21 columns, TMP row: 21 values.
    let k = &d.records;
    assert!(k.iter().all(|r| r.model == "GFS-MOS" && r.location_name == "KMCO"));
    assert_eq!(k[0].run_time, utc(2020, 2, 11, 0, 0));
    check(&k[0], utc(2020, 2, 11, 6, 0), 6, 66.0, Some(64.0), Some(130), Some(5.0), Some(80.0));
    // Column 10: HR 09 Feb 12, TMP 69, DPT 67, CLD OV, WDR 36 (north), WSP 01.
    check(&k[9], utc(2020, 2, 12, 9, 0), 33, 69.0, Some(67.0), Some(360), Some(1.0), Some(100.0));
    check(&k[20], utc(2020, 2, 14, 0, 0), 72, 77.0, Some(66.0), Some(210), Some(6.0), Some(80.0));
    // The same block as the NWS web page shows it: one leading space per line.
    let indented: String = MAV_KMCO.lines().map(|l| format!(" {l}\n")).collect();
    let e = decode_mos(indented.as_bytes());
    assert!(e.errors.is_empty(), "{:?}", e.errors);
    assert_eq!(e.records, d.records);
}

#[test]
fn lamp_values_and_missing_markers() {
    // LAVUSA: PHBK has no TMP row (0 rows); PHHI's TMP row is 5 × 999, 13 values,
    // 7 × 999 (13 rows); PHJH's is 5 × 999, 10 values, 10 × 999 (10 rows).
    let d = mos("LAVUSA.txt");
    assert!(station(&d, "PHBK").is_empty());
    let h = station(&d, "PHHI");
    assert_eq!(h.len(), 13);
    assert_eq!(station(&d, "PHJH").len(), 10);
    assert!(h.iter().all(|r| r.model == "LAV-MOS" && r.run_time == utc(2020, 7, 10, 12, 30)));
    // Column 6 (UTC 18): TMP 74, DPT 64, WDR/WSP 99 = missing, WGS 999, CLD SC.
    check(h[0], utc(2020, 7, 10, 18, 0), 6, 74.0, Some(64.0), None, None, Some(50.0));
    assert_eq!(h[0].wind_gusts_mph, None);
    // Column 9 (UTC 21): TMP 80, DPT 62, WDR 09, WSP 12, WGS 18, CLD BK.
    check(h[3], utc(2020, 7, 10, 21, 0), 9, 80.0, Some(62.0), Some(90), Some(12.0), Some(80.0));
    assert_eq!(h[3].wind_gusts_mph, Some(kt_to_mph(18.0)));
    // Column 14 (UTC 02, next day): TMP 80, DPT 63, WDR 08, WSP 14; WGS NG = no gust.
    check(h[8], utc(2020, 7, 11, 2, 0), 14, 80.0, Some(63.0), Some(80), Some(14.0), Some(50.0));
    assert_eq!(h[8].wind_gusts_mph, None);
    // Column 18 (UTC 06): TMP 74, DPT 65, WDR 07, WSP 06.
    check(h[12], utc(2020, 7, 11, 6, 0), 18, 74.0, Some(65.0), Some(70), Some(6.0), Some(50.0));
    // LEVUSA: HR counts from 12Z (26 = 14Z next day) and agrees with UTC; no TMP rows.
    let e = mos("LEVUSA.txt");
    assert!(e.errors.is_empty() && e.records.is_empty());
}

#[test]
fn nbs_v3_layouts() {
    // NBSUSA (2018, no version in the header): KALM and KALN, FHR 06-66 (21 columns).
    let d = mos("NBSUSA.txt");
    let k = station(&d, "KALM");
    assert_eq!(k.len(), 21);
    assert_eq!(station(&d, "KALN").len(), 21);
    assert!(k.iter().all(|r| r.model == "NBS-MOS" && r.run_time == utc(2018, 11, 7, 15, 0)));
    check(k[0], utc(2018, 11, 7, 21, 0), 6, 72.0, Some(34.0), Some(190), Some(5.0), Some(3.0));
    assert_eq!(k[0].wind_gusts_mph, Some(kt_to_mph(11.0)));
    // Column 10 (FHR 33): WDR '  8' is 80 degrees, SKY 19.
    check(k[9], utc(2018, 11, 9, 0, 0), 33, 66.0, Some(33.0), Some(80), Some(4.0), Some(19.0));
    check(k[20], utc(2018, 11, 10, 9, 0), 66, 40.0, Some(33.0), Some(130), Some(3.0), Some(36.0));
    assert_eq!(k[20].wind_gusts_mph, Some(kt_to_mph(4.0)));
    // KALN column 11: SKY '100' written without a separating space.
    assert_eq!(station(&d, "KALN")[10].cloud_cover, Some(100.0));

    // NBSUSA_32 (V3.2): three buoys × 23 columns, FHR 06-72.
    let d = mos("NBSUSA_32.txt");
    let b = station(&d, "46083");
    assert_eq!(b.len(), 23);
    assert_eq!((station(&d, "46084").len(), station(&d, "46085").len()), (23, 23));
    check(b[0], utc(2020, 2, 19, 18, 0), 6, 40.0, Some(34.0), Some(190), Some(17.0), Some(57.0));
    assert_eq!(b[8].cloud_cover, Some(100.0));
    check(b[22], utc(2020, 2, 22, 12, 0), 72, 36.0, Some(26.0), Some(230), Some(14.0), Some(76.0));
    assert_eq!(b[22].wind_gusts_mph, Some(kt_to_mph(16.0)));

    // NBSUSA_32_station: 4 stations × 23 columns; a 17Z run starts at FHR 04.
    let d = mos("NBSUSA_32_station.txt");
    for id in ["XSBN_0", "XSHP_0", "XSHR_0", "XSIT_0"] {
        assert_eq!(station(&d, id).len(), 23, "{id}");
    }
    let x = station(&d, "XSBN_0");
    check(x[0], utc(2020, 2, 19, 21, 0), 4, 38.0, Some(15.0), Some(310), Some(12.0), Some(0.0));
    // Columns 16-17 (FHR 49, 52): negative dew points -2 and -1.
    check(x[15], utc(2020, 2, 21, 18, 0), 49, 30.0, Some(-2.0), Some(330), Some(4.0), Some(0.0));
    assert_eq!(x[16].dew_point_f, Some(-1.0));
    check(x[22], utc(2020, 2, 22, 15, 0), 70, 36.0, Some(13.0), Some(260), Some(8.0), Some(0.0));
}

#[test]
fn nbs_v4_and_v5_layouts() {
    // One station (KDSM), 23 columns each.
    let d = mos("NBS_12Z.txt");
    let k = &d.records;
    assert_eq!(k[0].run_time, utc(2021, 4, 7, 12, 0));
    check(&k[0], utc(2021, 4, 7, 18, 0), 6, 69.0, Some(57.0), Some(170), Some(13.0), Some(68.0));
    assert_eq!(k[0].wind_gusts_mph, Some(kt_to_mph(19.0)));
    check(&k[22], utc(2021, 4, 10, 12, 0), 72, 45.0, Some(38.0), Some(320), Some(9.0), Some(80.0));

    let d = mos("NBS_21Z.txt");
    check(&d.records[0], utc(2021, 4, 7, 3, 0), 6, 69.0, Some(54.0), Some(160), Some(11.0), Some(67.0));
    check(&d.records[22], utc(2021, 4, 9, 21, 0), 72, 62.0, Some(42.0), Some(280), Some(13.0), Some(37.0));

    // V5.0 adds WBG and moves SWH before GST; GST must still be read from its own row.
    let v5 = mos("NBS_v5.txt");
    let v4 = mos("NBS_15Z.txt");
    let r = &v5.records;
    assert_eq!(r[0].run_time, utc(2026, 4, 7, 15, 0));
    check(&r[0], utc(2026, 4, 7, 21, 0), 6, 68.0, Some(58.0), Some(140), Some(11.0), Some(85.0));
    assert_eq!(r[0].wind_gusts_mph, Some(kt_to_mph(16.0)));
    check(&r[22], utc(2026, 4, 10, 15, 0), 72, 48.0, Some(38.0), Some(330), Some(12.0), Some(67.0));
    assert_eq!(r[22].wind_gusts_mph, Some(kt_to_mph(16.0)));
    // Same numbers as the V4.0 15Z bulletin, five years apart.
    for (a, b) in r.iter().zip(&v4.records) {
        assert_eq!(a.temperature_f, b.temperature_f);
        assert_eq!(a.wind_gusts_kmh, b.wind_gusts_kmh);
        assert_eq!(a.forecast_hour, b.forecast_hour);
    }
}

#[test]
fn header_classification() {
    assert_eq!(model_of_header(" KNYC   GFS MOS GUIDANCE    2/04/2022  1200 UTC"), Some("GFS-MOS"));
    assert_eq!(model_of_header("KFOZ   NAM MOS GUIDANCE    8/12/2017  1200 UTC"), Some("NAM-MOS"));
    assert_eq!(model_of_header("\u{1e}PHBK   GFS LAMP GUIDANCE   7/10/2020  1230 UTC  "), Some("LAV-MOS"));
    assert_eq!(model_of_header("KDSM    NBM V4.0 NBS GUIDANCE    4/07/2021  1200 UTC"), Some("NBS-MOS"));
    assert_eq!(model_of_header("KALM    NBM NBS GUIDANCE   11/07/2018  1500 UTC"), Some("NBS-MOS"));
    assert_eq!(model_of_header("PAOR   GFSX MOS GUIDANCE  11/07/2020  0000 UTC"), None);
    assert_eq!(bulletin_of_header("PAOR   GFSX MOS GUIDANCE  11/07/2020  0000 UTC"), Some(Bulletin::GfsMex));
    assert_eq!(bulletin_of_header("KBAF   ECM MOS GUIDANCE    2/24/2020  1200 UTC"), Some(Bulletin::EcmwfMos));
    assert_eq!(bulletin_of_header("CLFU1   NBM V3.2 NBE GUIDANCE    7/22/2020  1400 UTC"), Some(Bulletin::NbmOther));
    assert_eq!(model_of_header("KNYC   GFS MOS GUIDANCE   13/04/2022  1200 UTC"), None);
    assert_eq!(model_of_header("KNYC   GFS MOS GUIDANCE    2/04/2022  2400 UTC"), None);
    assert_eq!(model_of_header("KNYC   FOO MOS GUIDANCE    2/04/2022  1200 UTC"), None);
    assert_eq!(model_of_header("TMP  75 78 74"), None);
}

fn rows_for(model: &'static str, station: &str, run: DateTime<Utc>) -> Vec<ForecastRow> {
    forecast_hours(model, run)
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(k, h)| {
            let k = k as i32;
            let mut r = ForecastRow {
                model,
                location_name: station.into(),
                run_time: run,
                valid_time: floor_hour(run) + Duration::hours(i64::from(h)),
                forecast_hour: h,
                temperature_f: f64::from((13 * k) % 150 - 40).into(),
                dew_point_f: f64::from(-20 + 5 * k).into(),
                wind_direction_deg: Some(10 * (1 + (k * 7) % 36)),
                wind_speed_mph: kt_to_mph(f64::from(1 + k % 23)).into(),
                wind_gusts_mph: (k % 4 != 0).then(|| kt_to_mph(f64::from(10 + k))).into(),
                cloud_cover: [0.0, 25.0, 50.0, 80.0, 100.0][k as usize % 5].into(),
                ..ForecastRow::default()
            };
            r.wind_speed_kmh = r.wind_speed_mph.get().map(|m| m / kt_to_mph(1.0) * 1.852).into();
            r
        })
        .collect()
}

#[test]
fn round_trip_every_layout() {
    let runs = [utc(2024, 12, 31, 18, 0), utc(2025, 2, 28, 0, 0), utc(2025, 7, 10, 12, 30), utc(2025, 3, 9, 17, 0)];
    for model in ["GFS-MOS", "NAM-MOS", "LAV-MOS", "NBS-MOS"] {
        for run in runs {
            let rows = rows_for(model, "KXYZ", run);
            let text = encode_mos(model, "KXYZ", run, &rows).unwrap();
            let d = decode_mos(text.as_bytes());
            assert!(d.errors.is_empty(), "{model} {run}: {:?}\n{text}", d.errors);
            assert_eq!(d.records.len(), rows.len(), "{model} {run}\n{text}");
            for (a, b) in rows.iter().zip(&d.records) {
                assert_eq!(b.model, model);
                assert_eq!(b.location_name, "KXYZ");
                assert_eq!(b.run_time, run);
                assert_eq!(b.valid_time, a.valid_time);
                assert_eq!(b.forecast_hour, a.forecast_hour);
                assert_eq!(b.temperature_f, a.temperature_f);
                assert_eq!(b.dew_point_f, a.dew_point_f);
                assert_eq!(b.wind_direction_deg, a.wind_direction_deg);
                let kt = |m: Option<f64>| m.map(|m| (m / kt_to_mph(1.0)).round());
                assert_eq!(kt(b.wind_speed_mph.get()), kt(a.wind_speed_mph.get()));
                let gusts = if model == "GFS-MOS" || model == "NAM-MOS" { None } else { kt(a.wind_gusts_mph.get()) };
                assert_eq!(kt(b.wind_gusts_mph.get()), gusts, "{model}\n{text}");
                assert_eq!(b.cloud_cover, a.cloud_cover);
            }
        }
    }
    assert!(encode_mos("GFS", "KXYZ", runs[0], &[]).is_none());
}

#[test]
fn encoder_reproduces_real_layouts() {
    // Re-encoding decoded real blocks gives back the real lines (leading space aside).
    let real = String::from_utf8(fixture("forecast/mos/METNC1.txt")).unwrap();
    let d = mos("METNC1.txt");
    let rows: Vec<ForecastRow> = station(&d, "KFRM").into_iter().cloned().collect();
    let text = encode_mos("NAM-MOS", "KFRM", rows[0].run_time, &rows).unwrap();
    for line in text.lines() {
        let line = line.strip_prefix(' ').unwrap();
        assert!(real.lines().any(|l| l.trim_end() == line), "not in METNC1: {line:?}");
    }
    assert_eq!(text.lines().count(), 8); // header, DT, HR, TMP, DPT, CLD, WDR, WSP

    let mav = decode_mos(MAV_KMCO.as_bytes());
    let text = encode_mav("KMCO", utc(2020, 2, 11, 0, 0), &mav.records);
    for line in text.lines() {
        let line = line.strip_prefix(' ').unwrap();
        assert!(MAV_KMCO.lines().any(|l| l.trim_end() == line), "not in MAV: {line:?}");
    }

    let real = String::from_utf8(fixture("forecast/mos/NBS_15Z.txt")).unwrap();
    let d = mos("NBS_15Z.txt");
    let text = encode_nbs("KDSM", utc(2021, 4, 7, 15, 0), &d.records);
    for line in text.lines().skip(1) {
        let line = line.strip_prefix(' ').unwrap();
        assert!(real.lines().any(|l| l.trim_end() == line), "not in NBS_15Z: {line:?}");
    }
    assert!(text.starts_with(" KDSM    NBM V4.2 NBS GUIDANCE    4/07/2021  1500 UTC\n"));

    let real = String::from_utf8_lossy(&fixture("forecast/mos/LAVUSA.txt")).into_owned();
    let d = mos("LAVUSA.txt");
    let rows: Vec<ForecastRow> = station(&d, "PHHI").into_iter().cloned().collect();
    let text = encode_mos("LAV-MOS", "PHHI", utc(2020, 7, 10, 12, 30), &rows).unwrap();
    for label in [" UTC", " TMP", " DPT", " WDR", " WSP"] {
        let line = text.lines().find(|l| l.starts_with(label)).unwrap().strip_prefix(' ').unwrap();
        let block = real.split("PHHI").nth(1).unwrap();
        assert!(block.lines().any(|l| l.trim_end() == line), "not in LAVUSA: {line:?}");
    }
}

#[test]
fn encoder_fills_missing_columns() {
    let run = utc(2025, 1, 5, 12, 0);
    let mut rows = rows_for("GFS-MOS", "KNYC", run);
    rows.remove(3);
    rows[0].dew_point_f = OptF64::NONE;
    rows[1].wind_direction_deg = None;
    let text = encode_mav("KNYC", run, &rows);
    assert!(text.lines().nth(3).unwrap().starts_with(" TMP -40-27-14999 12"), "{text}");
    let d = decode_mos(text.as_bytes());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records.len(), 20);
    assert_eq!(d.records[0].dew_point_f, None);
    assert_eq!(d.records[1].wind_direction_deg, None);
    assert_eq!(d.records[3].forecast_hour, 18);
}

#[test]
fn garbled_cells_and_rows_are_reported() {
    let base = MAV_KMCO;
    // A letter inside the TMP row: that cell is lost, the rest of the row stays.
    let d = decode_mos(base.replacen("TMP  66 65", "TMP  66 6x", 1).as_bytes());
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    assert_eq!(d.errors[0].line, 5);
    assert!(d.errors[0].reason.contains("bad TMP value '6x' in column 2"), "{:?}", d.errors);
    assert_eq!(d.records.len(), 20);
    // A row shifted by one character cannot be trusted at all.
    let d = decode_mos(base.replacen("DPT  64 64", "DPT  64 6", 1).as_bytes());
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    assert!(d.records.iter().all(|r| r.dew_point_f.is_none()));
    // Out-of-range wind direction.
    let d = decode_mos(base.replacen("WDR  13", "WDR  47", 1).as_bytes());
    assert!(d.errors[0].reason.contains("bad WDR value '47'"), "{:?}", d.errors);
    assert_eq!(d.records[0].wind_direction_deg, None);
    // Garbage line inside a block.
    let d = decode_mos(base.replacen("P06 ", "##garbage## ", 1).as_bytes());
    assert_eq!(d.errors.len(), 1);
    assert!(d.errors[0].reason.starts_with("unrecognised row"), "{:?}", d.errors);
    // Bad header: the block is skipped with one error.
    let d = decode_mos(base.replacen("2/11/2020", "2/30/2020", 1).as_bytes());
    assert_eq!((d.errors.len(), d.records.len()), (1, 0));
    assert!(d.errors[0].reason.contains("bad header date"));
    // Hours that go backwards in an NBS FHR row disagree with the UTC row.
    let nbs = String::from_utf8(fixture("forecast/mos/NBS_12Z.txt")).unwrap();
    let d = decode_mos(nbs.replacen("FHR  06 09 12", "FHR  06 12 09", 1).as_bytes());
    assert_eq!(d.errors.len(), 2, "{:?}", d.errors);
    assert_eq!(d.records.len(), 21);
    // Duplicate TMP row.
    let d = decode_mos(base.replacen("DPT ", "TMP ", 1).as_bytes());
    assert!(d.errors.iter().any(|e| e.reason == "duplicate TMP row"), "{:?}", d.errors);
    // TMP row without any time row.
    let d = decode_mos(base.replacen("HR   06", "XX   06", 1).as_bytes());
    assert!(d.records.is_empty());
    assert!(d.errors.iter().any(|e| e.reason.contains("without a time row")), "{:?}", d.errors);
}

#[test]
fn truncated_input_reports_or_stops_cleanly() {
    let full = fixture("forecast/mos/METNC1.txt");
    let text = String::from_utf8(full.clone()).unwrap();
    // Cut in the middle of KFPK's TMP row ("TMP  70 71 6").
    let at = text.find("TMP  70 71 68").unwrap() + "TMP  70 71 6".len();
    let d = decode_mos(&full[..at]);
    assert_eq!(d.records.len(), 21, "KFOZ only");
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    assert!(d.errors[0].reason.starts_with("truncated or misaligned TMP row"));
    // Preamble only: no station header.
    let d = decode_mos(b"906 \nFOUS46 KWNO 121200\nMETNC1\n");
    assert_eq!(d.errors.len(), 1);
    assert_eq!(d.errors[0].reason, "no MOS/NBM station header found");
    // Empty input is not an error.
    let d = decode_mos(b"");
    assert!(d.errors.is_empty() && d.records.is_empty() && d.read == 0);
    // Every prefix of two real bulletins: no panic, and rows only from whole columns.
    for name in ["METNC1.txt", "NBSUSA_32_station.txt", "LAVUSA.txt"] {
        let full = fixture(&format!("forecast/mos/{name}"));
        let whole = decode_mos(&full).records;
        for cut in 0..full.len() {
            let d = decode_mos(&full[..cut]);
            for r in &d.records {
                assert!(whole.iter().any(|w| w.location_name == r.location_name && w.valid_time == r.valid_time));
            }
        }
    }
}

#[test]
fn binary_and_mutated_input_never_panics() {
    let d = decode_mos(&[0xff, 0xfe, 0x00, 0x41, 0x0a, 0xc3, 0x28, 0x0a, 0x1e, 0x01]);
    assert!(!d.errors.is_empty());
    let mut garbage = Vec::new();
    let mut x: u32 = 12345;
    for _ in 0..20_000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        garbage.push((x >> 16) as u8);
    }
    let d = decode_mos(&garbage);
    assert!(!d.errors.is_empty());
    assert!(d.records.is_empty());
    // Random byte mutations of real bulletins, including multi-byte characters
    // inside columns.
    for name in ALL {
        let full = fixture(&format!("forecast/mos/{name}"));
        for round in 0..60 {
            let mut m = full.clone();
            for _ in 0..(1 + round % 5) {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let pos = (x as usize >> 8) % m.len().max(1);
                let byte = [b'x', b'-', b' ', b'\n', 0xc3, 0xa9, b'9', 0][(x >> 4) as usize % 8];
                if let Some(b) = m.get_mut(pos) {
                    *b = byte;
                }
            }
            let _ = decode_mos(&m);
        }
    }
}

/// UTF-16 input is named, junk rows are quoted with control characters escaped, and
/// an implausibly long line is rejected with its length while the block decodes.
#[test]
fn non_text_junk_and_over_long_lines() {
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain(MAV_KMCO.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let d = decode_mos(&utf16);
    assert_eq!((d.records.len(), d.errors.len()), (0, 1), "{:?}", d.errors);
    assert!(d.errors[0].reason.starts_with("input is UTF-16LE text (byte-order mark FF FE)"), "{:?}", d.errors);
    let whole = decode_mos(MAV_KMCO.as_bytes()).records;
    assert_eq!(whole.len(), 21);
    let d = decode_mos(MAV_KMCO.replacen("P06 ", "\u{1b}[2J\u{7}garbage ", 1).as_bytes());
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    assert_eq!(d.errors[0].reason, "unrecognised row '\\u{1b}[2J\\u{7}garbage…'");
    assert_eq!(d.records, whole);
    let d = decode_mos(MAV_KMCO.replacen("P06 ", &format!("P06 {}", "  5".repeat(1000)), 1).as_bytes());
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    assert!(d.errors[0].reason.starts_with("MOS line of "), "{:?}", d.errors);
    assert!(d.errors[0].reason.ends_with("bytes is longer than the 1024-byte limit"), "{:?}", d.errors);
    assert_eq!(d.records, whole);
}

#[test]
fn dt_row_matches_the_nws() {
    // 00Z MAV: the marker for the last column's day does not fit and is cut to '/'.
    let rows = rows_for("GFS-MOS", "KMCO", utc(2018, 1, 26, 0, 0));
    let text = encode_mav("KMCO", utc(2018, 1, 26, 0, 0), &rows);
    assert_eq!(text.lines().nth(1).unwrap(), " DT /JAN  26            /JAN  27                /JAN  28          /");
    // 17Z NBS: the first day's marker is left out (NBSUSA_32_station).
    let text = encode_nbs("XSBN_0", utc(2020, 2, 19, 17, 0), &[]);
    assert_eq!(text.lines().nth(1).unwrap(), " DT      /FEB  20                /FEB  21                /FEB  22");
    assert_eq!(
        text.lines().nth(3).unwrap(),
        " FHR  04 07 10 13 16 19 22 25 28 31 34 37 40 43 46 49 52 55 58 61 64 67 70"
    );
    assert_eq!(forecast_hours("NBS-MOS", utc(2021, 4, 6, 21, 0)).unwrap()[0], 6);
    assert_eq!(forecast_hours("LAV-MOS", utc(2021, 4, 6, 21, 30)).unwrap().len(), 25);
}

/// Found by the `mos` fuzz target: a control byte in a value cell reached the reject
/// reason raw (reasons quote and escape what they show).
#[test]
fn control_bytes_in_cells_are_escaped_in_reasons() {
    let good = String::from_utf8(fixture("forecast/mos/NBSUSA.txt")).unwrap();
    let row = "SKY   1  0 17 15  8 59 72 73 81 89100 96 90 71 68 54 54 53 30 22 10";
    assert!(good.contains(row));
    let bad = good.replacen(row, "SKY   1  0 17 15  8 59 72 73 81 89100 96 90 71 68 54 54\x1e53 30 22 10", 1);
    let d = decode_mos(bad.as_bytes());
    assert!(d.errors.iter().all(|e| !e.reason.chars().any(char::is_control)), "{:?}", d.errors);
    assert!(d.errors.iter().any(|e| e.reason.contains("'\\u{1e}53'")), "{:?}", d.errors);
}
