use super::delimited::report_text;
use super::*;
use crate::decode::types::fixture;
use crate::decode::types::ReportKind;
use chrono::{DateTime, Datelike, Duration, NaiveDateTime, TimeZone, Utc};

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

/// Decodes a fixture through detection, with a fixed "now" that must not matter.
fn decode_fixture(rel: &str, hint: Option<(i32, u32)>) -> Decoded<Metar> {
    decode_metar_input_at(&fixture(rel), hint, utc(2030, 1, 1, 0, 0))
}

fn count(d: &Decoded<Metar>, kind: ReportKind) -> usize {
    d.records.iter().filter(|m| m.kind == Some(kind)).count()
}

/// (valid, metar) columns of an IEM export, read independently of the decoder.
fn iem_rows(rel: &str) -> Vec<(DateTime<Utc>, String)> {
    let bytes = fixture(rel);
    let text = String::from_utf8(bytes).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let v = header.iter().position(|h| *h == "valid").unwrap();
    let m = header.iter().position(|h| *h == "metar").unwrap();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let t = NaiveDateTime::parse_from_str(f[v], "%Y-%m-%d %H:%M").unwrap();
            (Utc.from_utc_datetime(&t), f[m].to_string())
        })
        .collect()
}

#[test]
fn detect_real_files() {
    use MetarContainer::*;
    let cases = [
        ("metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv", IemDelimited),
        ("metar/IEM_KCVG_2024-03-01_routine.tsv", IemDelimited),
        ("metar/IEM_KCVG_2024-03-01_specials.tsv", IemDelimited),
        ("metar/IEM_VOHY_2014-03-01_2014-04-04_all_fields.tsv", IemDelimited),
        ("metar/WSSS_2025-12-05_2026-01-18_scraped.csv", IemDelimited),
        ("metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json", AwcJson),
        ("lcd/LCD_KLNK_USW00014939_2023-01-01_2023-02-26_metric.csv", Lcd),
    ];
    for (rel, want) in cases {
        assert_eq!(detect(&fixture(rel)), want, "{rel}");
    }
    for name in ["badchars", "collective", "collective2", "first", "kawn", "kmwn", "nullbyte", "rtd_bbb", "sa"] {
        let rel = format!("metar/pyiem_collectives/{name}.txt");
        assert_eq!(detect(&fixture(&rel)), Collective, "{rel}");
    }
    assert_eq!(detect(b"METAR KNYC 011251Z 00000KT 10SM CLR 01/M01 A3000\n"), BareLines);
    assert_eq!(detect(b""), BareLines);
}

#[test]
fn iem_kcvg_all_reports() {
    // 323 lines = 5 #DEBUG + header + 317 rows; `grep -c MADISHF` = 287 HF reports,
    // the other 30 are the 24 routine + 6 special rows of the two smaller exports.
    let rel = "metar/IEM_KCVG_2024-03-01_all_reports_incl_5min.tsv";
    let d = decode_fixture(rel, None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.read, 323);
    assert_eq!(d.records.len(), 317);
    assert_eq!(count(&d, ReportKind::HfMetar), 287);
    assert_eq!(count(&d, ReportKind::Metar), 30);
    // Every report's own time agrees with IEM's `valid` column; station is the ICAO id.
    let rows = iem_rows(rel);
    for (m, (valid, text)) in d.records.iter().zip(&rows) {
        assert_eq!(m.time, *valid, "{text}");
        assert_eq!(m.station, "KCVG");
    }
    // Line 7: "CVG 2024-03-01 00:00 KCVG 010000Z AUTO 15005KT ... MADISHF".
    assert_eq!(d.records[0].time, utc(2024, 3, 1, 0, 0));
    assert_eq!(d.records[0].kind, Some(ReportKind::HfMetar));
}

#[test]
fn iem_kcvg_routine_and_specials() {
    // Rows = lines - 6 (5 #DEBUG + header): 30 - 6 = 24 and 12 - 6 = 6.
    for (rel, n) in [("metar/IEM_KCVG_2024-03-01_routine.tsv", 24), ("metar/IEM_KCVG_2024-03-01_specials.tsv", 6)] {
        let d = decode_fixture(rel, None);
        assert!(d.errors.is_empty(), "{rel}: {:?}", d.errors);
        assert_eq!(d.records.len(), n, "{rel}");
        let rows = iem_rows(rel);
        for (m, (valid, _)) in d.records.iter().zip(&rows) {
            assert_eq!(m.time, *valid);
        }
    }
    // specials.tsv line 7: "KCVG 011707Z 18006KT 9SM -PLRA ..." (IEM drops the SPECI
    // keyword, so the kind falls back to METAR).
    let d = decode_fixture("metar/IEM_KCVG_2024-03-01_specials.tsv", None);
    assert_eq!(d.records[0].time, utc(2024, 3, 1, 17, 7));
    assert_eq!(d.records[0].station, "KCVG");
    assert_eq!(d.records[0].kind, Some(ReportKind::Metar));
}

#[test]
fn iem_vohy_all_fields() {
    // 420 lines - 5 #DEBUG - header = 414 rows of 30 tab-separated columns.
    let rel = "metar/IEM_VOHY_2014-03-01_2014-04-04_all_fields.tsv";
    let d = decode_fixture(rel, None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records.len(), 414);
    let rows = iem_rows(rel);
    for (m, (valid, _)) in d.records.iter().zip(&rows) {
        assert_eq!(m.time, *valid);
        assert_eq!(m.station, "VOHY");
    }
    // Last line (420): "VOHY 041540Z 10003KT 6000 FEW020 SCT200 32/12 Q1014 NOSIG".
    let last = d.records.last().unwrap();
    assert_eq!(last.time, utc(2014, 4, 4, 15, 40));
    assert_eq!(last.kind, Some(ReportKind::Metar));
}

#[test]
fn wsss_scraped_csv() {
    // 1223 lines = header `Datetime,METAR` + 1222 rows; `grep -c ',SPECI WSSS'` = 5.
    let rel = "metar/WSSS_2025-12-05_2026-01-18_scraped.csv";
    let d = decode_fixture(rel, None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records.len(), 1222);
    assert_eq!(count(&d, ReportKind::Speci), 5);
    assert_eq!(count(&d, ReportKind::Metar), 1217);
    // Line 2: "2025-12-05 14:30 UTC,METAR WSSS 051430Z 34006KT ...".
    assert_eq!(d.records[0].station, "WSSS");
    assert_eq!(d.records[0].time, utc(2025, 12, 5, 14, 30));
    // Line 236: "2025-12-12 09:47 UTC,SPECI WSSS 120941Z ..." (scrape time is later
    // than the report time: the text wins).
    assert_eq!(d.records[234].time, utc(2025, 12, 12, 9, 41));
    assert_eq!(d.records[234].kind, Some(ReportKind::Speci));
    // Every report precedes its scrape timestamp by under an hour, except line 277
    // ("2025-12-14 05:40 UTC,METAR WSSS 132300Z ...", scraped 6 h 40 min late).
    let text = String::from_utf8(fixture(rel)).unwrap();
    for (i, (m, line)) in d.records.iter().zip(text.lines().skip(1)).enumerate() {
        let stamp = line.split(" UTC,").next().unwrap();
        let t = NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M").unwrap();
        let late = (Utc.from_utc_datetime(&t) - m.time).num_minutes();
        let want = if i + 2 == 277 { 400..401 } else { 0..60 };
        assert!(want.contains(&late), "{line}: {late}");
    }
    assert_eq!(d.records[275].time, utc(2025, 12, 13, 23, 0));
}

#[test]
fn awc_json() {
    // `grep -c rawOb` = 9 objects.
    let d = decode_fixture("metar/awc_metar_knyc_kmdw_kaus_20260925T0631Z.json", None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.read, 9);
    assert_eq!(d.records.len(), 9);
    let got: Vec<(&str, DateTime<Utc>)> = d.records.iter().map(|m| (m.station.as_str(), m.time)).collect();
    // rawOb of objects 1-3: KAUS 250553Z, KMDW 250553Z, KNYC 250551Z (Sept 2026).
    assert_eq!(
        got[..3],
        [("KAUS", utc(2026, 9, 25, 5, 53)), ("KMDW", utc(2026, 9, 25, 5, 53)), ("KNYC", utc(2026, 9, 25, 5, 51))]
    );
    assert_eq!(got[8], ("KNYC", utc(2026, 9, 25, 3, 51)));
    assert!(d.records.iter().all(|m| m.kind == Some(ReportKind::Metar)));
}

#[test]
fn lcd_klnk() {
    // `grep -c ',FM-15,'` = 1357, `grep -c ',FM-16,'` = 357; the other 285 rows are
    // FM-12 (226), SOD (57), SOM (2) and are skipped. 2000 lines incl. the header.
    let rel = "lcd/LCD_KLNK_USW00014939_2023-01-01_2023-02-26_metric.csv";
    let d = decode_fixture(rel, None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.read, 2000);
    assert_eq!(d.records.len(), 1714);
    assert_eq!(count(&d, ReportKind::Metar), 1357);
    assert_eq!(count(&d, ReportKind::Speci), 357);
    // DATE is Central Standard Time all year: every report is DATE + 6 h.
    let bytes = fixture(rel);
    let mut reader = csv::Reader::from_reader(bytes.as_slice());
    let headers = reader.headers().unwrap().clone();
    let col = |n: &str| headers.iter().position(|h| h == n).unwrap();
    let (date, rtype) = (col("DATE"), col("REPORT_TYPE"));
    let dates: Vec<DateTime<Utc>> = reader
        .records()
        .map(Result::unwrap)
        .filter(|r| matches!(r[rtype].trim(), "FM-15" | "FM-16"))
        .map(|r| {
            let t = NaiveDateTime::parse_from_str(&r[date], "%Y-%m-%dT%H:%M:%S").unwrap();
            Utc.from_utc_datetime(&t) + Duration::hours(6)
        })
        .collect();
    assert_eq!(dates.len(), 1714);
    for (m, want) in d.records.iter().zip(&dates) {
        assert_eq!(m.time, *want, "{}", m.raw);
        assert_eq!(m.station, "KLNK");
    }
    // Line 3: "MET09601/01/23 00:54:02 METAR KLNK 010654Z 01005KT 8SM CLR M03/M05 A2980
    // RMK AO2 SLP102 T10331050 (CK)": prefix and QC flag are not part of the report.
    let first = &d.records[0];
    assert_eq!(first.time, utc(2023, 1, 1, 6, 54));
    assert_eq!(first.kind, Some(ReportKind::Metar));
    assert!(first.raw.contains("KLNK 010654Z 01005KT"), "{}", first.raw);
    assert!(first.raw.ends_with("T10331050"), "{}", first.raw);
    // First FM-16: DATE 2023-01-02T07:52:00, "SPECI KLNK 021352Z 05009KT ...".
    let speci = d.records.iter().find(|m| m.kind == Some(ReportKind::Speci)).unwrap();
    assert_eq!(speci.time, utc(2023, 1, 2, 13, 52));
}

fn collective(name: &str, hint: (i32, u32)) -> Decoded<Metar> {
    let d = decode_fixture(&format!("metar/pyiem_collectives/{name}.txt"), Some(hint));
    assert_eq!(detect(&fixture(&format!("metar/pyiem_collectives/{name}.txt"))), MetarContainer::Collective);
    d
}

fn stations(d: &Decoded<Metar>) -> Vec<&str> {
    d.records.iter().map(|m| m.station.as_str()).collect()
}

#[test]
fn collective_with_garbage_and_duplicates() {
    // 14 '='-terminated reports: KMIA 081403Z appears twice verbatim (dropped once),
    // then three garbage ones on lines 31-33.
    let d = collective("collective", (2013, 8));
    assert_eq!(stations(&d), ["KSPS", "KMIA", "KALO", "PAJN", "RJSK", "KEST", "KAMW", "KAMW", "KALO", "KALO"]);
    let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [31, 32, 33], "{:?}", d.errors);
    assert_eq!(d.errors[0].reason, "QQQQ: no observation after the time group");
    assert!(d.errors[1].reason.starts_with("QQQQ: "), "{}", d.errors[1].reason);
    assert_eq!(d.errors[2].reason, "bad station id '1QQQ'");
    assert_eq!(d.read, 34);
    // Lines 7-10: KMIA spans four lines and ends in "$=".
    let kmia = &d.records[1];
    assert_eq!(kmia.time, utc(2013, 8, 8, 14, 3));
    assert_eq!(kmia.kind, Some(ReportKind::Metar));
    assert!(kmia.raw.starts_with("KMIA 081403Z 16032G45KT 1/2SM"), "{}", kmia.raw);
    assert!(kmia.raw.contains("OVC034 23/19 A3003"), "{}", kmia.raw);
    assert!(kmia.raw.contains("MOV NE P0046"), "{}", kmia.raw);
}

#[test]
fn collective2_month_boundary() {
    // `grep -c '='` = 35 reports, header 010000 with reports stamped 31 23:5x.
    let d = collective("collective2", (2018, 1));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records.len(), 35);
    assert_eq!(d.records[0].station, "KDMH");
    assert_eq!(d.records[0].time, utc(2017, 12, 31, 23, 54));
    assert!(d.records.iter().all(|m| m.time.month() == 12));
}

#[test]
fn first_and_small_collectives() {
    // first.txt: header 010030, KSPS 302352Z (previous month) and KALO 010001Z.
    let d = collective("first", (2017, 12));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let times: Vec<_> = d.records.iter().map(|m| m.time).collect();
    assert_eq!(times, [utc(2017, 11, 30, 23, 52), utc(2017, 12, 1, 0, 1)]);
    // Without a hint, the header day is the latest 1st not after now.
    let now = utc(2017, 12, 15, 0, 0);
    let bytes = fixture("metar/pyiem_collectives/first.txt");
    let d2 = decode_metar_input_at(&bytes, None, now);
    assert_eq!(d2.records.iter().map(|m| m.time).collect::<Vec<_>>(), times);

    // kawn.txt: "000" line, "SAEW KAWN 020100 RRG", keyword on each report, TEMPO
    // continuation line.
    let d = collective("kawn", (2017, 8));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(stations(&d), ["LFBA", "LFBD", "LFLL"]);
    assert!(d.records[1].raw.ends_with("Q1013 TEMPO 4000 SHRA BKN020TCU"), "{}", d.records[1].raw);
    assert_eq!(d.records[2].time, utc(2017, 8, 2, 1, 0));

    // kmwn.txt: no '=' and no trailing newline: the report ends at end of input.
    let d = collective("kmwn", (2019, 12));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(stations(&d), ["KMWN"]);
    assert_eq!(d.records[0].time, utc(2019, 12, 20, 3, 50));

    // rtd_bbb.txt: "SACU31 MUHA 090915 RTD" header.
    let d = collective("rtd_bbb", (2017, 8));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(stations(&d), ["MUCL"]);
    assert_eq!(d.records[0].time, utc(2017, 8, 9, 9, 5));
}

#[test]
fn collective_bad_bytes() {
    // badchars.txt: a UTF-8 NBSP inside HRYR's report is whitespace, all 3 decode.
    let d = collective("badchars", (2018, 6));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(stations(&d), ["HKJK", "HRYR", "HUEN"]);
    assert!(d.records[1].raw.contains("SCT100 21/16"), "{}", d.records[1].raw);
    // nullbyte.txt: the SPECI on line 5 carries a NUL byte: rejected, not truncated.
    let d = collective("nullbyte", (2017, 8));
    assert!(d.records.is_empty());
    assert_eq!(d.errors.len(), 1);
    assert_eq!(d.errors[0].line, 5);
    assert_eq!(d.errors[0].reason, "NUL byte in report");
    // sa.txt: Canadian SA-format lines (3-letter ids) are not METARs: 4 rejects.
    let d = collective("sa", (2017, 8));
    assert!(d.records.is_empty());
    let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [3, 4, 5, 6]);
    assert_eq!(d.errors[0].reason, "bad station id 'WXL'");
}

#[test]
fn collective_keyword_lines_and_speci_bulletin() {
    let text = "SPUS70 KWBC 011200\nKAAA 011155Z 00000KT 10SM CLR 01/M01 A3000=\n\
                    METAR\nKBBB 011156Z 00000KT 10SM CLR 01/M01 A3000\n\
                    KCCC 011157Z 00000KT 10SM CLR 01/M01 A3000\nSPECI\n\
                    KDDD 011158Z 00000KT 10SM CLR 01/M01 A3000=\n";
    let d = decode_metar_input_at(text.as_bytes(), Some((2024, 5)), utc(2030, 1, 1, 0, 0));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let kinds: Vec<_> = d.records.iter().map(|m| (m.station.as_str(), m.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("KAAA", Some(ReportKind::Speci)),
            ("KBBB", Some(ReportKind::Metar)),
            ("KCCC", Some(ReportKind::Metar)),
            ("KDDD", Some(ReportKind::Speci)),
        ]
    );
    assert_eq!(d.records[3].time, utc(2024, 5, 1, 11, 58));
}

const BARE: &str = "METAR KNYC 011251Z 00000KT 10SM CLR 01/M01 A3000 RMK AO2=\n\
                        SPECI KNYC 011305Z 00000KT 2SM BR OVC004 01/01 A3000\n\
                        \n\
                        KNYC 302351Z 00000KT 10SM CLR 01/M01 A3000\n\
                        K1 011251Z 00000KT 10SM CLR 01/M01 A3000\n\
                        KNYC 311251Z 00000KT 10SM CLR 01/M01 A3000\n";

#[test]
fn bare_lines_with_month_hint() {
    let d = decode_metar_input_at(BARE.as_bytes(), Some((2024, 4)), utc(2030, 1, 1, 0, 0));
    assert_eq!(d.read, 6);
    let got: Vec<_> = d.records.iter().map(|m| (m.time, m.kind)).collect();
    assert_eq!(
        got,
        [
            (utc(2024, 4, 1, 12, 51), Some(ReportKind::Metar)),
            (utc(2024, 4, 1, 13, 5), Some(ReportKind::Speci)),
            (utc(2024, 4, 30, 23, 51), Some(ReportKind::Metar)),
        ]
    );
    let errs: Vec<_> = d.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
    assert_eq!(errs, [(5, "bad station id 'K1'"), (6, "day 31 does not exist in 2024-04")]);
}

#[test]
fn bare_lines_without_hint_use_latest_past_day() {
    let now = utc(2024, 5, 15, 12, 0);
    let d = decode_metar_input_at(BARE.as_bytes(), None, now);
    let times: Vec<_> = d.records.iter().map(|m| m.time).collect();
    // Day 1 → 1 May; day 30 → 30 April (30 May is in the future); day 31 → 31 March.
    assert_eq!(
        times,
        [utc(2024, 5, 1, 12, 51), utc(2024, 5, 1, 13, 5), utc(2024, 4, 30, 23, 51), utc(2024, 3, 31, 12, 51)]
    );
    assert_eq!(d.errors.len(), 1);
}

#[test]
fn generic_csv_variants() {
    // Comma-separated IEM export; the text's day disagrees with `valid` on line 5.
    let iem = "#DEBUG: Format Typ    -> comma\n\
                   station,valid,metar\n\
                   CVG,2024-03-01 00:52,KCVG 010052Z 14003KT 10SM FEW250 03/M11 A3042\n\
                   CVG,2024-03-01 01:52,KCVG 010152Z 15007KT 10SM CLR 02/M09 A3042\n\
                   CVG,2024-03-01 00:00,KCVG 292355Z 15007KT 10SM CLR 02/M09 A3042\n\
                   CVG,not a time,KCVG 010252Z 15007KT 10SM CLR 02/M09 A3042\n\
                   CVG,2024-03-01 03:52\n\
                   CVG,2024-03-01 04:52,M\n";
    assert_eq!(detect(iem.as_bytes()), MetarContainer::IemDelimited);
    let d = decode_metar_input(iem.as_bytes(), None);
    let times: Vec<_> = d.records.iter().map(|m| m.time).collect();
    assert_eq!(times, [utc(2024, 3, 1, 0, 52), utc(2024, 3, 1, 1, 52), utc(2024, 2, 29, 23, 55)]);
    let errs: Vec<_> = d.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
    assert_eq!(
        errs,
        [(6, "bad valid time 'not a time'"), (7, "expected at least 3 columns, found 2"), (8, "empty METAR text"),]
    );
    // Any header with a raw text column and a time column, any order, ISO times.
    let other = "obsTime,raw_text,flight_category\n\
                     2024-07-04T13:51:00Z,SPECI KMDW 041351Z 12004KT 10SM OVC250 17/13 A3029,VFR\n";
    let d = decode_metar_input(other.as_bytes(), None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records[0].time, utc(2024, 7, 4, 13, 51));
    assert_eq!(d.records[0].kind, Some(ReportKind::Speci));
    // A type column outside LCD only overrides METAR/SPECI; other codes decode.
    let typed = "station,valid,report_type,metar\n\
                     CVG,2024-03-01 00:52,3,KCVG 010052Z 14003KT 10SM FEW250 03/M11 A3042\n\
                     CVG,2024-03-01 00:55,SPECI,KCVG 010055Z 14003KT 10SM FEW250 03/M11 A3042\n";
    let d = decode_metar_input(typed.as_bytes(), None);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let kinds: Vec<_> = d.records.iter().map(|m| m.kind).collect();
    assert_eq!(kinds, [Some(ReportKind::Metar), Some(ReportKind::Speci)]);
    // LCD-style REM without a keyword: the report starts at `CCCC DDHHMMZ`.
    assert_eq!(
        report_text("MET10501/01/23 00:54:02 KLNK 010654Z 01005KT 8SM CLR (CK)"),
        "KLNK 010654Z 01005KT 8SM CLR"
    );
    // A delimited header without a time column is one error.
    let d = decode_metar_input(b"station,metar\nCVG,KCVG 010052Z 14003KT\n", None);
    assert_eq!(d.errors.len(), 1);
    assert_eq!(d.errors[0].line, 1);
}

#[test]
fn awc_json_edge_cases() {
    let d = decode_awc_json("[{\"rawOb\": \"METAR KAUS 250553Z 16006KT\"");
    assert!(d.records.is_empty());
    assert_eq!(d.errors.len(), 1);
    assert!(d.errors[0].reason.starts_with("invalid JSON"));
    let json = r#"{"type":"FeatureCollection","features":[
            {"properties":{"rawOb":"KAUS 250553Z 16006KT 10SM 28/23 A3008","obsTime":"2026-09-25T05:53:00Z","metarType":"SPECI"}},
            {"properties":{"rawOb":"KAUS 250653Z 16006KT 10SM 28/23 A3008"}},
            {"properties":{"obsTime":1790315580}}]}"#;
    let d = decode_metar_input(json.as_bytes(), None);
    assert_eq!(d.read, 3);
    assert_eq!(d.records.len(), 1);
    assert_eq!(d.records[0].kind, Some(ReportKind::Speci));
    let errs: Vec<_> = d.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
    assert_eq!(errs, [(2, "object lacks a usable obsTime/reportTime"), (3, "object lacks 'rawOb'")]);
}

#[test]
fn garbage_never_panics() {
    let mut noise = Vec::new();
    let mut x: u32 = 12345;
    for _ in 0..20_000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        noise.push((x >> 16) as u8);
    }
    let inputs: Vec<Vec<u8>> = vec![
        noise.clone(),
        b"\0\0\0".to_vec(),
        b"\x01\r\r\n\x03".to_vec(),
        b"SAUS70 KWBC 311200\nKAAA 3\xff1200Z=\n\xe9\xe9\n".to_vec(),
        b"station,valid,metar\n\"CVG,2024\n".to_vec(),
        b"[1, \"x\", null, {\"rawOb\": 5}]".to_vec(),
        b"SAUS70 KWBC 999999\nKAAA 999999Z 00000KT=\n".to_vec(),
        fixture("metar/pyiem_collectives/nullbyte.txt")[..60].to_vec(),
    ];
    for input in &inputs {
        for hint in [None, Some((2024, 2)), Some((2024, 13))] {
            let d = decode_metar_input_at(input, hint, utc(2024, 3, 1, 0, 0));
            assert!(d.records.len() <= 1);
        }
    }
    let d = decode_metar_input(&inputs[3], Some((2024, 3)));
    assert_eq!(d.errors.len(), 2, "{:?}", d.errors);
    assert_eq!(d.errors[0].reason, "invalid UTF-8 byte in report");
}

/// A report longer than any real METAR is rejected with its length in every container
/// (it used to be stored), and the good report next to it decodes. Exactly at the
/// limit still decodes.
#[test]
fn over_long_reports_are_rejected_in_every_container() {
    let now = utc(2024, 3, 20, 0, 0);
    let good = "KNYC 011251Z 36010KT 10SM FEW250 05/M05 A3000";
    let huge = format!("KNYC 011251Z {}", "36010KT ".repeat(150_000));
    let huge = huge.trim_end();
    let too_long = |len: usize| format!("METAR report of {len} bytes is longer than the 1024-byte limit");
    let errs = |d: &Decoded<Metar>| d.errors.iter().map(|e| (e.line, e.reason.clone())).collect::<Vec<_>>();
    let stored = |d: &Decoded<Metar>| d.records.iter().map(|m| m.raw.clone()).collect::<Vec<_>>();

    let bare = format!("{huge}\n{good}\n");
    let d = decode_metar_input_at(bare.as_bytes(), Some((2024, 3)), now);
    assert_eq!((stored(&d), errs(&d)), (vec![good.to_string()], vec![(1, too_long(huge.len()))]));

    let coll = format!("SAUS70 KWBC 011300\nMETAR\n{huge}=\n{good}=\n");
    let d = decode_metar_input_at(coll.as_bytes(), Some((2024, 3)), now);
    assert_eq!((stored(&d), errs(&d)), (vec![good.to_string()], vec![(3, too_long(huge.len()))]));

    let json =
        serde_json::json!([{"rawOb": huge, "obsTime": 1_709_297_460}, {"rawOb": good, "obsTime": 1_709_297_460}]);
    let d = decode_metar_input_at(json.to_string().as_bytes(), None, now);
    assert_eq!((stored(&d), errs(&d)), (vec![good.to_string()], vec![(1, too_long(huge.len()))]));

    // In a CSV the row is held to its own limit, the report to the report's.
    let row = |text: &str| format!("NYC\t2024-03-01 12:51\t{text}\n");
    let mid = format!("KNYC 011251Z 36010KT 10SM RMK {}", "X".repeat(2000));
    let tsv = format!("station\tvalid\tmetar\n{}{}{}", row(huge), row(&mid), row(good));
    let d = decode_metar_input_at(tsv.as_bytes(), None, now);
    let row_reason = format!("METAR CSV row of {} bytes is longer than the 16384-byte limit", row(huge).len() - 1);
    assert_eq!(stored(&d), vec![good.to_string()]);
    assert_eq!(errs(&d), vec![(2, row_reason), (3, too_long(mid.len()))]);

    let at_limit = format!("{good} RMK {}", "X".repeat(1024 - good.len() - 5));
    assert_eq!(at_limit.len(), 1024);
    let d = decode_metar_input_at(format!("{at_limit}\n{at_limit}X\n").as_bytes(), Some((2024, 3)), now);
    assert_eq!((stored(&d), errs(&d)), (vec![at_limit.clone()], vec![(2, too_long(1025))]));
}

/// UTF-16 and binary inputs are refused as a whole, naming the encoding (a UTF-16 IEM
/// export used to be reported as a header without a metar column).
#[test]
fn utf16_and_binary_inputs_are_named() {
    let now = utc(2024, 3, 20, 0, 0);
    let text = String::from_utf8(fixture("metar/IEM_KCVG_2024-03-01_routine.tsv")).unwrap();
    let le: Vec<u8> = [0xFF, 0xFE].into_iter().chain(text.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let d = decode_metar_input_at(&le, None, now);
    assert_eq!((d.records.len(), d.read), (0, 1));
    assert_eq!(d.errors.len(), 1);
    assert_eq!(
            d.errors[0].reason,
            "input is UTF-16LE text (byte-order mark FF FE); wxlake reads UTF-8: convert it first (iconv -f UTF-16 -t UTF-8)"
        );
    let d = decode_metar_input_at(&[0x1F, 0x8B, 0x08, 0x00, 0x12, 0x34], None, now);
    assert_eq!(d.errors[0].reason, "input is gzip-compressed data, not text");
}

/// aviationweather.gov's `metars.cache.csv`: its status lines and its 44-column header (the
/// real file's shape; no cache file is saved in data/real) around real reports of the AWC
/// JSON fixture, one quoted with its METAR/SPECI keyword as newer files write them.
#[test]
fn awc_cache_csv_is_decoded_past_its_status_lines() {
    let header = "raw_text,station_id,observation_time,latitude,longitude,temp_c,dewpoint_c,wind_dir_degrees,wind_speed_kt,wind_gust_kt,visibility_statute_mi,altim_in_hg,sea_level_pressure_mb,corrected,auto,auto_station,maintenance_indicator_on,no_signal,lightning_sensor_off,freezing_rain_sensor_off,present_weather_sensor_off,wx_string,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,sky_cover,cloud_base_ft_agl,flight_category,three_hr_pressure_tendency_mb,maxT_c,minT_c,maxT24hr_c,minT24hr_c,precip_in,pcp3hr_in,pcp6hr_in,pcp24hr_in,snow_in,vert_vis_ft,metar_type,elevation_m";
    assert_eq!(header.split(',').count(), 44);
    let row = |raw: &str, id: &str, time: &str, kind: &str| {
        let mut f = vec![String::new(); 44];
        f[0] = raw.to_string();
        f[1] = id.to_string();
        f[2] = time.to_string();
        f[42] = kind.to_string();
        f.join(",")
    };
    let text = [
        "No errors".to_string(),
        "No warnings".to_string(),
        "11 ms".to_string(),
        "data source=metars".to_string(),
        "4 results".to_string(),
        header.to_string(),
        row("KNYC 250551Z AUTO VRB06G18KT 10SM CLR 14/04 A3023 RMK AO2 SLP227 T01390039 10172 20139 58019", "KNYC", "2026-09-25T05:51:00Z", "METAR"),
        row("\"SPECI KMDW 250553Z 12004KT 10SM FEW055 OVC250 17/13 A3029 RMK AO2 SLP254 T01670128\"", "KMDW", "2026-09-25T05:53:00.000Z", "SPECI"),
        row("KAUS 250553Z 16006KT 10SM SCT200 BKN250 28/23 A3008 RMK AO2 SLP172 T02830228 10344 20278 403670217 51013 $", "KAUS", "2026-09-25T05:53:00Z", "METAR"),
        row("KAUS 250453Z 18004KT 10SM SCT080 SCT120 28/22 A3007", "KAUS", "yesterday", "METAR"),
    ]
    .join("\n");
    assert_eq!(detect(text.as_bytes()), MetarContainer::AwcCache);
    let d = decode_metar_input(text.as_bytes(), None);
    assert_eq!(d.read, 10);
    let got: Vec<_> = d.records.iter().map(|m| (m.station.as_str(), m.time, m.kind)).collect();
    assert_eq!(
        got,
        [
            ("KNYC", utc(2026, 9, 25, 5, 51), Some(ReportKind::Metar)),
            ("KMDW", utc(2026, 9, 25, 5, 53), Some(ReportKind::Speci)),
            ("KAUS", utc(2026, 9, 25, 5, 53), Some(ReportKind::Metar)),
        ]
    );
    let errs: Vec<_> = d.errors.iter().map(|e| (e.line, e.reason.as_str())).collect();
    assert_eq!(errs, [(10, "bad observation_time time 'yesterday'")], "line numbers of the whole file");
    // Status lines alone (an empty answer) decode to nothing, without an error.
    let d = decode_metar_input(b"No errors\nNo warnings\n3 ms\ndata source=metars\n0 results\n", None);
    assert!(d.records.is_empty() && d.errors.is_empty(), "{:?}", d.errors);
}
