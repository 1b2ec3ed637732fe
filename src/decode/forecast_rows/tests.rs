use super::*;

fn utc(s: &str) -> DateTime<Utc> {
    parse_timestamp(s).unwrap()
}

const HEADER: &str = "id,model,location_name,run_time,valid_time,forecast_hour,temperature_f,inserted_at";

#[test]
fn csv_header_any_order_extras_ignored() {
    let csv = format!(
        "{HEADER}\n\
             17,GFS,KNYC,2026-09-24T06:00:00Z,2026-09-24T12:00:00Z,6,61.5,2026-09-24 10:00:01\n\
             18,ECMWF-IFS,KNYC,2026-09-24 00:00:00,2026-09-25 00:00:00,,,2026-09-24 10:00:01\n"
    );
    let d = decode_forecast_csv(csv.as_bytes());
    assert_eq!(d.read, 3);
    assert_eq!(d.records.len(), 1, "{:?}", d.errors);
    // Line 3 has no temperature at all.
    assert_eq!(d.errors.len(), 1);
    assert_eq!(d.errors[0].line, 3);
    assert!(d.errors[0].reason.contains("no temperature"), "{}", d.errors[0].reason);
    let r = &d.records[0];
    assert_eq!(r.model, "GFS");
    assert_eq!(r.location_name, "KNYC");
    assert_eq!(r.run_time, utc("2026-09-24T06:00:00Z"));
    assert_eq!(r.valid_time, utc("2026-09-24T12:00:00Z"));
    assert_eq!(r.forecast_hour, 6);
    assert_eq!(r.temperature_f, Some(61.5));
    // 61.5 °F = 16.388… °C = 289.538… K
    assert!((r.temperature_c.get().unwrap() - 16.3889).abs() < 1e-3);
    assert!((r.temperature_k.get().unwrap() - 289.5389).abs() < 1e-3);
    assert_eq!(r.relative_humidity, None);
}

#[test]
fn csv_forecast_hour_derived_when_missing() {
    let csv = "model,location_name,run_time,valid_time,temperature_c\n\
                   HRRR,KLAX,2026-01-01 18:00:00,2026-01-02 03:00:00,12.5\n";
    let d = decode_forecast_csv(csv.as_bytes());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records[0].forecast_hour, 9);
    assert_eq!(d.records[0].temperature_f, Some(54.5));
}

#[test]
fn csv_malformed_lines_are_line_errors_rest_kept() {
    let csv = format!(
        "{HEADER}\n\
             1,GFS,KNYC,2026-09-24T06:00:00Z,2026-09-24T07:00:00Z,1,60,\n\
             2,gfs,KNYC,2026-09-24T06:00:00Z,2026-09-24T08:00:00Z,2,60,\n\
             3,GFS,KNYC,2026-09-24T06:00:00Z,2026-09-24T0900Z,3,60,\n\
             4,GFS,KNYC,2026-09-24T06:00:00Z,2026-09-24T10:00:00Z,4,warm,\n\
             5,GFS,KNYC,2026-09-24T06:00:00Z,2026-09-24T11:00:00Z,5\n\
             \n\
             6,GFS,KNYC,2026-09-24T06:00:00Z,2026-09-24T12:00:00Z,7,60,\n\
             7,GFS,KNYC,2026-09-24T06:00:00Z,2026-09-24T05:00:00Z,,60,\n\
             8,GFS,,2026-09-24T06:00:00Z,2026-09-24T13:00:00Z,7,60,\n\
             9,RAP,\"KNYC, Central Park\",2026-09-24T06:00:00Z,2026-09-24T14:00:00Z,8,nan,\n\
             10,NBM,KNYC,2026-09-24T06:00:00Z,2026-09-24T14:00:00Z,8.0,59.0,\n"
    );
    let d = decode_forecast_csv(csv.as_bytes());
    let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![3, 4, 5, 6, 8, 9, 10, 11], "{:?}", d.errors);
    let reason = |l: usize| d.errors.iter().find(|e| e.line == l).unwrap().reason.as_str();
    assert_eq!(reason(3), "unknown model 'gfs'");
    assert_eq!(reason(4), "valid_time: bad time '2026-09-24T0900Z'");
    assert_eq!(reason(5), "temperature_f: expected a number, found 'warm'");
    assert_eq!(reason(6), "expected 8 fields, found 6");
    assert_eq!(reason(8), "forecast_hour 7 disagrees with valid_time - run_time = 6 h");
    assert_eq!(reason(9), "valid_time before run_time");
    assert_eq!(reason(10), "missing location_name");
    assert_eq!(reason(11), "temperature_f: not a finite number");
    assert_eq!(d.records.len(), 2);
    assert_eq!(d.records[0].forecast_hour, 1);
    assert_eq!(d.records[1].model, "NBM");
    assert_eq!(d.records[1].forecast_hour, 8);
    assert_eq!(d.read, 11);
}

#[test]
fn csv_line_numbers_with_crlf_blank_lines_and_quoted_breaks() {
    let csv = "model,location_name,run_time,valid_time,temperature_c\r\n\
                   \r\n\
                   GFS,\"Central\r\nPark\",2026-01-01 00:00:00,2026-01-01 01:00:00,1\r\n\
                   GFS,KNYC,2026-01-01 00:00:00,2026-01-01 01:00:00,x\r\n\
                   \r\n\
                   \r\n\
                   GFS,KNYC,2026-01-01 00:00:00,bad,1\r\n\
                   GFS,KNYC,2026-01-01 00:00:00,2026-01-01 02:00:00,2";
    let d = decode_forecast_csv(csv.as_bytes());
    let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
    // The quoted field spans lines 3-4, so the bad temperature is on line 5.
    assert_eq!(lines, vec![5, 8], "{:?}", d.errors);
    assert_eq!(d.records.len(), 2);
    assert_eq!(d.records[0].location_name, "Central\r\nPark");
    assert_eq!(d.records[1].temperature_c, Some(2.0));
}

#[test]
fn csv_header_problems() {
    let d = decode_forecast_csv(b"model,location_name,valid_time,temperature_f\nGFS,KNYC,2026-01-01 00:00:00,1\n");
    assert_eq!(d.errors.len(), 1);
    assert_eq!((d.errors[0].line, d.errors[0].reason.as_str()), (1, "header lacks column 'run_time'"));
    assert!(d.records.is_empty());
    let d = decode_forecast_csv(b"model,location_name,run_time,valid_time\n");
    assert!(d.errors[0].reason.contains("no temperature column"));
    let d = decode_forecast_csv(b"model,model,location_name,run_time,valid_time,temperature_c\n");
    assert!(d.errors[0].reason.contains("twice"));
    let d = decode_forecast_csv(b"");
    assert!(d.records.is_empty() && d.errors.is_empty() && d.read == 0);
}

#[test]
fn temperatures_must_agree() {
    let csv = "model,location_name,run_time,valid_time,temperature_k,temperature_f,temperature_c\n\
                   GFS,KNYC,2026-01-01 00:00:00,2026-01-01 01:00:00,289.54,61.5,16.4\n\
                   GFS,KNYC,2026-01-01 00:00:00,2026-01-01 02:00:00,,61.5,61.5\n";
    let d = decode_forecast_csv(csv.as_bytes());
    assert_eq!(d.records.len(), 1);
    assert_eq!(d.records[0].temperature_c, Some(16.4));
    assert_eq!((d.errors[0].line, d.errors[0].reason.as_str()), (3, "temperature_k/_f/_c disagree"));
}

#[test]
fn binary_and_garbage_do_not_panic() {
    let mut junk: Vec<u8> = (0u8..=255).cycle().take(5000).collect();
    junk.extend_from_slice(b"\n\xff\xfe,\x00,\"unterminated\n");
    let d = decode_forecast_csv(&junk);
    assert!(d.records.is_empty());
    let d = decode_forecast_jsonl(&junk);
    assert!(d.records.is_empty());
    assert!(!d.errors.is_empty());
    let mut csv = format!("{HEADER}\n").into_bytes();
    csv.extend_from_slice(b"1,GFS,KN\xffYC,2026-09-24T06:00:00Z,2026-09-24T07:00:00Z,1,60,\n");
    csv.extend_from_slice(b"1,GFS,KNYC,2026-09-24T06:00:00Z,2026-09-24T07:\xc3");
    let d = decode_forecast_csv(&csv);
    assert_eq!(d.records.len(), 1);
    assert_eq!(d.records[0].location_name, "KN\u{fffd}YC");
    assert_eq!(d.errors.len(), 1);
    assert_eq!(d.errors[0].line, 3);
}

/// Rows longer than any forecast row are rejected with their length, in both CSV
/// readers and JSON Lines; a too-long header stops the file; UTF-16 is named.
#[test]
fn over_long_rows_and_utf16() {
    let good = "1,GFS,KNYC,2026-09-24T06:00:00Z,2026-09-24T07:00:00Z,1,60,";
    let long = format!("2,GFS,{},2026-09-24T06:00:00Z,2026-09-24T08:00:00Z,2,60,", "K".repeat(20_000));
    for quoted in [false, true] {
        let long = if quoted { long.replacen(",K", ",\"K", 1).replacen("K,2026", "K\",2026", 1) } else { long.clone() };
        let csv = format!("{HEADER}\n{long}\n{good}\n");
        let d = decode_forecast_csv(csv.as_bytes());
        assert_eq!(d.records.len(), 1, "quoted {quoted}");
        assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
        assert_eq!(d.errors[0].line, 2);
        let want = format!("forecast row of {} bytes is longer than the 16384-byte limit", 20_054);
        assert_eq!(d.errors[0].reason, want);
    }
    let d = decode_forecast_csv(format!("{HEADER},{}\n{good}\n", "x".repeat(20_000)).as_bytes());
    assert_eq!((d.records.len(), d.errors.len(), d.errors[0].line), (0, 1, 1));
    let jsonl = format!("{{\"model\":\"GFS\",\"location_name\":\"{}\"}}\n", "K".repeat(20_000));
    let d = decode_forecast_jsonl(jsonl.as_bytes());
    assert_eq!(d.errors.len(), 1);
    assert!(d.errors[0].reason.starts_with(&format!("forecast row of {} bytes", jsonl.trim().len())), "{:?}", d.errors);
    let utf16: Vec<u8> = format!("{HEADER}\n{good}\n").encode_utf16().flat_map(u16::to_le_bytes).collect();
    for d in [decode_forecast_csv(&utf16), decode_forecast_jsonl(&utf16)] {
        assert_eq!((d.records.len(), d.errors.len()), (0, 1));
        assert!(d.errors[0].reason.starts_with("input is UTF-16LE text"), "{:?}", d.errors);
    }
}

#[test]
fn jsonl_rows_and_errors() {
    let text = r#"{"id":1,"model":"ICON","location_name":"EGLL","latitude":51.47,"longitude":-0.45,"run_time":"2026-02-01T12:00:00Z","valid_time":"2026-02-02T00:00:00+00:00","forecast_hour":12,"temperature_k":null,"temperature_f":null,"temperature_c":"4.2","wind_direction_deg":250,"weather_code":"3","precipitation_mm":0.4,"inserted_at":"2026-02-01T17:00:00Z"}

{"model":"ICON","location_name":"EGLL","run_time":"2026-02-01T12:00:00Z","valid_time":"2026-02-02T01:00:00Z","temperature_c":"cold"}
{"model":"ICON","location_name":"EGLL","run_time":"2026-02-01T12:00:00Z","temperature_c":3.1}
[1,2]
{"model":"UKMO","location_name":"EGLL","run_time":"2026-02-01T12:00:00Z","valid_time":"2026-02-02T02:00:00Z","temperature_c":3.0,"weather_code":2.5}
{"model":"UKMO","location_name":"EGLL","run_time":"2026-02-01T12:00:00Z","valid_time":"2026-02-02T02:00:00Z","temperature_c":true}
{"model":"UKMO","location_name":"EGLL","run_time":"2026-02-01T12:00:00Z",
{"model":"JMA","location_name":"RJTT","run_time":"2026-02-01T12:00:00Z","valid_time":"2026-02-02T02:00:00Z","forecast_hour":"14","temperature_f":39}
"#;
    let d = decode_forecast_jsonl(text.as_bytes());
    let lines: Vec<usize> = d.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![3, 4, 5, 6, 7, 8], "{:?}", d.errors);
    assert_eq!(d.errors[0].reason, "temperature_c: expected a number, found 'cold'");
    assert_eq!(d.errors[1].reason, "missing valid_time");
    assert_eq!(d.errors[2].reason, "expected a JSON object");
    assert_eq!(d.errors[3].reason, "weather_code: expected an integer, found 2.5");
    assert_eq!(d.errors[4].reason, "temperature_c: expected a number, found boolean");
    assert!(d.errors[5].reason.starts_with("bad JSON"), "{}", d.errors[5].reason);
    assert_eq!(d.read, 8);
    assert_eq!(d.records.len(), 2);
    let r = &d.records[0];
    assert_eq!((r.model, r.forecast_hour), ("ICON", 12));
    assert_eq!((r.latitude.get(), r.longitude.get()), (Some(51.47), Some(-0.45)));
    assert_eq!(r.temperature_c, Some(4.2));
    assert!((r.temperature_k.get().unwrap() - 277.35).abs() < 1e-9);
    assert_eq!((r.wind_direction_deg, r.weather_code, r.precipitation_mm.get()), (Some(250), Some(3), Some(0.4)));
    assert_eq!(d.records[1].forecast_hour, 14);
}

fn sample_rows() -> Vec<ForecastRow> {
    let mut a = ForecastRow {
        model: "NAM4KM",
        location_name: "KNYC \"Central Park\", NY".into(),
        latitude: 40.78858.into(),
        longitude: Some(-73.9661).into(),
        run_time: utc("2026-09-24T06:00:00Z"),
        valid_time: utc("2026-09-25T09:00:00Z"),
        forecast_hour: 27,
        temperature_f: 63.1.into(),
        relative_humidity: 81.0.into(),
        dew_point_f: 57.2.into(),
        dew_point_c: 14.0.into(),
        apparent_temp_f: 62.9.into(),
        apparent_temp_c: 17.166666666666668.into(),
        wind_speed_mph: 7.2.into(),
        wind_speed_kmh: 11.5872.into(),
        wind_direction_deg: Some(190),
        wind_gusts_mph: 15.0.into(),
        wind_gusts_kmh: 24.14.into(),
        cloud_cover: 100.0.into(),
        precipitation_mm: 0.1.into(),
        precipitation_in: 0.003937007874015748.into(),
        weather_code: Some(61),
        pressure_msl_hpa: 1013.2.into(),
        surface_pressure_hpa: 1008.1.into(),
        published_after_s: 0,
        ..Default::default()
    };
    a.complete_temperatures();
    let mut b = ForecastRow {
        model: "GEM-HRDPS",
        location_name: "CYYZ".into(),
        run_time: utc("2026-01-01T00:00:00Z"),
        valid_time: utc("2026-01-01T00:00:00Z"),
        temperature_c: Some(-21.3).into(),
        ..Default::default()
    };
    b.complete_temperatures();
    vec![a, b]
}

#[test]
fn split_commas_matches_str_split() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let alphabet = [",", "a", "7", ".", "\u{e9}", " ", "\u{1F600}"];
    let mut rng = SmallRng::seed_from_u64(11);
    for _ in 0..20_000 {
        let line: String =
            (0..rng.random_range(0..40)).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect();
        let mut fields = Vec::new();
        split_commas(&line, &mut fields);
        assert_eq!(fields, line.split(',').collect::<Vec<_>>(), "{line:?}");
    }
}

/// The memchr line splitter must read quote- and CR-free text exactly as the csv
/// crate does: same rows, same rejects on the same lines, same count of lines read.
#[test]
fn plain_line_split_matches_the_csv_crate() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    // Quote-free text only (what the plain path is chosen for): the quoted location of
    // the first sample row loses its quotes and so gains a field.
    let good = encode_forecast_csv(&sample_rows()).replace('"', "");
    let good: Vec<&str> = good.lines().skip(1).collect();
    let fragments = [
        "",
        ",,,",
        "   ",
        " , \t ,",
        "\u{a0}",
        "GFS,KNYC",
        "ECMWF-IFS,KNYC,40.7,-74.0,2026-01-01 00:00:00,2026-01-01 03:00:00,3,,,4.5",
        "garbage without commas",
        "\u{fffd},\u{fffd}\u{fffd}",
    ];
    let headers =
        ["model,location_name,run_time,valid_time,temperature_c", COLUMNS.join(",").leak(), "location_name,model", ""];
    let mut rng = SmallRng::seed_from_u64(7);
    for case in 0..400 {
        let mut lines: Vec<String> = Vec::new();
        for _ in 0..rng.random_range(0..4) {
            lines.push(fragments[rng.random_range(0..fragments.len())].to_string());
        }
        lines.push(headers[rng.random_range(0..headers.len())].to_string());
        for _ in 0..rng.random_range(0..30) {
            let line = match rng.random_range(0..4) {
                0 => fragments[rng.random_range(0..fragments.len())].to_string(),
                _ => good[rng.random_range(0..good.len())].to_string(),
            };
            lines.push(line);
        }
        let mut text = lines.join("\n");
        if rng.random_bool(0.5) {
            text.push('\n');
        }
        let (plain, csv) = (decode_plain_lines(&text), decode_csv_records(&text));
        assert_eq!(plain.records, csv.records, "case {case}:\n{text}");
        assert_eq!(plain.errors, csv.errors, "case {case}:\n{text}");
        assert_eq!(plain.read, csv.read, "case {case}:\n{text}");
    }
}

#[test]
fn csv_round_trip() {
    let rows = sample_rows();
    let text = encode_forecast_csv(&rows);
    assert!(text.starts_with("model,location_name,latitude,longitude,run_time,valid_time,forecast_hour,"));
    let d = decode_forecast_csv(text.as_bytes());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(d.records, rows);
    assert_eq!(d.read, 3);
    assert!(encode_forecast_csv(&[]).ends_with("surface_pressure_hpa\n"));
}

#[test]
fn models_list_is_the_spec_list() {
    assert_eq!(MODEL_NAMES.len(), 18);
    assert!(is_model("NAM4KM") && is_model("ECMWF-IFS") && !is_model("NWS") && !is_model("ecmwf-ifs"));
    let mut sorted = MODEL_NAMES;
    sorted.sort_unstable();
    assert_eq!(sorted, MODEL_NAMES, "spec order is alphabetical");
}
