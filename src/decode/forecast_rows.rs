//! Forecast rows in the column names of spec 2.5, as CSV (header row) or JSON Lines.
//!
//! This is the format other systems export model rows in (and the demo generator writes),
//! so the decoder is strict about what money can depend on — a known model name, a
//! location, run and valid times that make sense, a lead that agrees with them, and a
//! temperature — and lenient about the rest (column order, extra columns such as `id`
//! and `inserted_at`, empty cells meaning null, numbers given as strings).

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::decode::limits::FORECAST_ROW;
use crate::decode::number::parse_f64;
use crate::decode::swar::bytes_equal;
use crate::decode::text::input_text;
use crate::decode::timestamp::parse_timestamp;
use crate::decode::types::{Decoded, ForecastRow, OptF64};
use crate::models::MODEL_NAMES;

/// The columns this module reads and writes, in spec 2.5 order (`id` and `inserted_at`
/// are the store's own and are ignored on input, never written).
pub const COLUMNS: [&str; 26] = [
    "model",
    "location_name",
    "latitude",
    "longitude",
    "run_time",
    "valid_time",
    "forecast_hour",
    "temperature_k",
    "temperature_f",
    "temperature_c",
    "relative_humidity",
    "dew_point_f",
    "dew_point_c",
    "apparent_temp_f",
    "apparent_temp_c",
    "wind_speed_mph",
    "wind_speed_kmh",
    "wind_direction_deg",
    "wind_gusts_mph",
    "wind_gusts_kmh",
    "cloud_cover",
    "precipitation_mm",
    "precipitation_in",
    "weather_code",
    "pressure_msl_hpa",
    "surface_pressure_hpa",
];

// Indexes into COLUMNS.
pub(crate) const MODEL: usize = 0;
pub(crate) const LOCATION: usize = 1;
pub(crate) const LAT: usize = 2;
pub(crate) const LON: usize = 3;
pub(crate) const RUN: usize = 4;
pub(crate) const VALID: usize = 5;
pub(crate) const LEAD: usize = 6;
pub(crate) const TEMP_K: usize = 7;
pub(crate) const TEMP_F: usize = 8;
pub(crate) const TEMP_C: usize = 9;
pub(crate) const RH: usize = 10;
pub(crate) const DEW_F: usize = 11;
pub(crate) const DEW_C: usize = 12;
pub(crate) const APP_F: usize = 13;
pub(crate) const APP_C: usize = 14;
pub(crate) const WIND_MPH: usize = 15;
pub(crate) const WIND_KMH: usize = 16;
pub(crate) const WIND_DIR: usize = 17;
pub(crate) const GUST_MPH: usize = 18;
pub(crate) const GUST_KMH: usize = 19;
pub(crate) const CLOUD: usize = 20;
pub(crate) const PRECIP_MM: usize = 21;
pub(crate) const PRECIP_IN: usize = 22;
pub(crate) const WEATHER_CODE: usize = 23;
pub(crate) const PMSL: usize = 24;
pub(crate) const PSFC: usize = 25;

/// Columns a CSV header must name (plus at least one temperature column).
const REQUIRED: [usize; 4] = [MODEL, LOCATION, RUN, VALID];

/// Largest disagreement tolerated between temperature columns given together (°C):
/// exports round each unit to a tenth on its own, which moves them apart by < 0.06 °C.
const TEMP_AGREEMENT_C: f64 = 0.1;

/// True when `name` is one of the 18 model names.
pub fn is_model(name: &str) -> bool {
    model_name(name).is_some()
}

/// The spec's spelling of a model name (`ForecastRow::model`), if `name` is one.
pub fn model_name(name: &str) -> Option<&'static str> {
    MODEL_NAMES.iter().find(|m| **m == name).copied()
}

/// One cell as the row builder sees it, whatever the container.
#[derive(Clone, Copy)]
enum Cell<'a> {
    Null,
    Text(&'a str),
    Num(f64),
    /// A JSON value of the wrong kind (bool, array, object), named for the error.
    Bad(&'static str),
}

impl<'a> Cell<'a> {
    fn from_text(s: &'a str) -> Self {
        // ASCII trim first (the common case, and much cheaper than the Unicode one),
        // then the Unicode trim only if non-ASCII text is left at either end.
        let t = s.trim_ascii();
        let s = match (t.as_bytes().first(), t.as_bytes().last()) {
            (Some(a), Some(z)) if !a.is_ascii() || !z.is_ascii() => t.trim(),
            _ => t,
        };
        if s.is_empty() {
            Cell::Null
        } else {
            Cell::Text(s)
        }
    }

    fn from_json(v: Option<&'a Value>) -> Self {
        match v {
            None | Some(Value::Null) => Cell::Null,
            Some(Value::String(s)) => Cell::from_text(s),
            Some(Value::Number(n)) => n.as_f64().map_or(Cell::Bad("number"), Cell::Num),
            Some(Value::Bool(_)) => Cell::Bad("boolean"),
            Some(Value::Array(_)) => Cell::Bad("array"),
            Some(Value::Object(_)) => Cell::Bad("object"),
        }
    }
}

/// Decodes a CSV export with a header row naming spec 2.5 columns (any order, extra
/// columns ignored, empty cells null). A row whose cell count differs from the header's
/// is rejected rather than guessed at: a stray comma would shift every later column.
/// Records longer than [`FORECAST_ROW`] are rejected; input that is not UTF-8 text is
/// refused whole.
pub fn decode_forecast_csv(bytes: &[u8]) -> Decoded<ForecastRow> {
    let text = match input_text(bytes) {
        Ok(t) => t,
        Err(e) => return Decoded::refused(e.to_string()),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if memchr::memchr2(b'"', b'\r', text.as_bytes()).is_none() {
        decode_plain_lines(text)
    } else {
        decode_csv_records(text)
    }
}

/// Text without quotes or carriage returns (what exporters write unless a value needs
/// quoting): every line is one record and every comma a separator, so records are split
/// on bytes (lines with memchr, commas in one loop over the line) instead of the csv
/// crate's state machine, a fifth of decoding. Records come out exactly as the csv crate
/// reads such text: empty lines are skipped.
fn decode_plain_lines(text: &str) -> Decoded<ForecastRow> {
    let mut rows = CsvRows::new(text);
    let mut fields: Vec<&str> = Vec::with_capacity(COLUMNS.len());
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len()));
    for (i, end) in ends.enumerate() {
        let line = &text[start..end];
        start = end + 1;
        if line.is_empty() {
            continue;
        }
        split_commas(line, &mut fields);
        if !rows.take(&fields, line.len(), || i + 1) {
            break;
        }
    }
    rows.out
}

/// The comma-separated cells of `line` into `fields` (cleared first). Eight bytes are
/// tested at a time: cells are short, and a branch per byte cost more than the rest of
/// the split.
fn split_commas<'t>(line: &'t str, fields: &mut Vec<&'t str>) {
    fields.clear();
    let bytes = line.as_bytes();
    let mut cell = 0;
    let mut words = bytes.chunks_exact(8);
    for (w, word) in words.by_ref().enumerate() {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let mut commas = bytes_equal(word, b',');
        while commas != 0 {
            let i = w * 8 + commas.trailing_zeros() as usize / 8;
            fields.push(&line[cell..i]);
            cell = i + 1;
            commas &= commas - 1;
        }
    }
    let tail = bytes.len() - words.remainder().len();
    for (i, b) in words.remainder().iter().enumerate() {
        if *b == b',' {
            fields.push(&line[cell..tail + i]);
            cell = tail + i + 1;
        }
    }
    fields.push(&line[cell..]);
}

/// Any CSV (quoted cells, line breaks inside quotes, CR or CRLF line ends), read with the
/// csv crate.
fn decode_csv_records(text: &str) -> Decoded<ForecastRow> {
    let mut rows = CsvRows::new(text);
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut record = csv::StringRecord::new();
    let mut lines = LineCounter::new(text.as_bytes());
    let mut last_error_byte = None;
    loop {
        let ok = match reader.read_record(&mut record) {
            Ok(more) => more,
            Err(e) => {
                // Cannot happen on lossy UTF-8 text with flexible records; kept total.
                let byte = e.position().map(|p| p.byte() as usize);
                rows.out.reject(lines.line_at(byte.unwrap_or(lines.byte)), format!("unreadable CSV record: {e}"));
                if byte.is_none() || byte == last_error_byte {
                    break; // no progress: stop rather than loop
                }
                last_error_byte = byte;
                continue;
            }
        };
        if !ok {
            break;
        }
        // Line numbers only matter for rejects; count them (forwards only) when one occurs.
        let start = record.position().map_or(lines.byte, |p| p.byte() as usize);
        // The cells' bytes plus their separators (quotes not counted).
        let len = record.as_slice().len() + record.len().saturating_sub(1);
        if !rows.take(&record, len, || lines.line_at(record_start(text.as_bytes(), start))) {
            break;
        }
    }
    rows.out
}

/// The cells of one CSV record, however it was split.
trait Fields {
    fn count(&self) -> usize;
    fn field(&self, i: usize) -> Option<&str>;
    /// True for a record of empty or whitespace-only cells (`,,,` lines).
    fn is_blank(&self) -> bool;
}

impl Fields for csv::StringRecord {
    fn count(&self) -> usize {
        self.len()
    }
    fn field(&self, i: usize) -> Option<&str> {
        self.get(i)
    }
    fn is_blank(&self) -> bool {
        // Any printable ASCII byte settles it at once; only records without one take the
        // per-cell trim.
        !self.as_slice().bytes().any(|b| b.is_ascii_graphic()) && self.iter().all(|c| c.trim().is_empty())
    }
}

impl Fields for Vec<&str> {
    fn count(&self) -> usize {
        self.len()
    }
    fn field(&self, i: usize) -> Option<&str> {
        self.get(i).copied()
    }
    fn is_blank(&self) -> bool {
        self.iter().all(|c| !c.bytes().any(|b| b.is_ascii_graphic()) && c.trim().is_empty())
    }
}

/// Turns CSV records into rows: the header first, then one row (or reject) per record.
struct CsvRows<'t> {
    text: &'t str,
    header: Option<Header>,
    out: Decoded<ForecastRow>,
}

impl<'t> CsvRows<'t> {
    fn new(text: &'t str) -> Self {
        CsvRows { text, header: None, out: Decoded::new() }
    }

    /// Takes one record of `len` bytes starting on the line `line()` gives (asked only for
    /// rejects); false when the input cannot be read further (a bad header).
    fn take(&mut self, record: &impl Fields, len: usize, mut line: impl FnMut() -> usize) -> bool {
        if record.is_blank() {
            return true;
        }
        self.out.read += 1;
        if let Err(reason) = FORECAST_ROW.check(len) {
            self.out.reject(line(), reason);
            return self.header.is_some();
        }
        let Some(h) = &self.header else {
            match Header::parse(record) {
                Ok(h) => {
                    // Room for every remaining line at once: growing a vector of large rows
                    // copies (and faults in) all of it again at each doubling, and an
                    // estimate from one row's length undershoots when rows vary.
                    let lines = memchr::memchr_iter(b'\n', self.text.as_bytes()).count();
                    self.out.records.reserve(lines.saturating_sub(line()) + 1);
                    self.header = Some(h);
                    return true;
                }
                Err(reason) => {
                    self.out.reject(line(), reason);
                    return false;
                }
            }
        };
        if record.count() != h.width {
            let reason = format!("expected {} fields, found {}", h.width, record.count());
            self.out.reject(line(), reason);
            return true;
        }
        let cell = |c: usize| h.cols[c].and_then(|i| record.field(i)).map_or(Cell::Null, Cell::from_text);
        if let Err(reason) = push_row(cell, &mut self.out.records) {
            self.out.reject(line(), reason);
        }
        true
    }
}

/// Where a record's text starts: the csv crate positions a record before the blank lines
/// it skipped, and a record cannot start with a line break.
fn record_start(text: &[u8], byte: usize) -> usize {
    byte + text.get(byte..).map_or(0, |t| t.iter().take_while(|b| matches!(b, b'\r' | b'\n')).count())
}

/// 1-based line numbers from byte offsets, counted incrementally (the csv crate's own
/// line count skips blank lines, which would misnumber every later error).
struct LineCounter<'a> {
    text: &'a [u8],
    byte: usize,
    line: usize,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a [u8]) -> Self {
        LineCounter { text, byte: 0, line: 1 }
    }

    /// Line of the byte offset `byte` (offsets only move forward; a smaller one gives the
    /// current line).
    fn line_at(&mut self, byte: usize) -> usize {
        let end = byte.min(self.text.len());
        if end > self.byte {
            // memchr's SIMD scan: the plain byte filter was the hottest loop of decoding.
            self.line += memchr::memchr_iter(b'\n', &self.text[self.byte..end]).count();
            self.byte = end;
        }
        self.line
    }
}

/// Where each known column sits in the CSV header.
struct Header {
    cols: [Option<usize>; COLUMNS.len()],
    width: usize,
}

impl Header {
    fn parse(record: &impl Fields) -> Result<Header, String> {
        let mut cols = [None; COLUMNS.len()];
        for (i, name) in (0..record.count()).filter_map(|i| Some((i, record.field(i)?))) {
            let name = name.trim();
            let Some(c) = COLUMNS.iter().position(|k| k.eq_ignore_ascii_case(name)) else {
                continue;
            };
            if cols[c].is_some() {
                return Err(format!("header names column '{}' twice", COLUMNS[c]));
            }
            cols[c] = Some(i);
        }
        if let Some(&c) = REQUIRED.iter().find(|&&c| cols[c].is_none()) {
            return Err(format!("header lacks column '{}'", COLUMNS[c]));
        }
        if [TEMP_K, TEMP_F, TEMP_C].iter().all(|&c| cols[c].is_none()) {
            return Err("header has no temperature column (temperature_k/_f/_c)".into());
        }
        Ok(Header { cols, width: record.count() })
    }
}

/// Decodes JSON Lines: one object per line with spec 2.5 keys; null or missing values are
/// null, numbers may be given as strings. Blank lines are skipped, lines longer than
/// [`FORECAST_ROW`] rejected; input that is not UTF-8 text is refused whole.
pub fn decode_forecast_jsonl(bytes: &[u8]) -> Decoded<ForecastRow> {
    let text = match input_text(bytes) {
        Ok(t) => t,
        Err(e) => return Decoded::refused(e.to_string()),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut out = Decoded::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        out.read += 1;
        if let Err(reason) = FORECAST_ROW.check(line.len()) {
            out.reject(line_no, reason);
            continue;
        }
        let obj = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(obj)) => obj,
            Ok(_) => {
                out.reject(line_no, "expected a JSON object");
                continue;
            }
            Err(e) => {
                out.reject(line_no, format!("bad JSON: {e}"));
                continue;
            }
        };
        if let Err(reason) = push_row(|c| Cell::from_json(obj.get(COLUMNS[c])), &mut out.records) {
            out.reject(line_no, reason);
        }
    }
    out
}

/// Validates one row's cells and appends the record to `rows` (all three temperature units
/// filled). Built straight into the vector and validated there: returning ~240-byte rows
/// by value cost several copies per row, a tenth of decoding a large export.
fn push_row<'a>(cell: impl Fn(usize) -> Cell<'a>, rows: &mut Vec<ForecastRow>) -> Result<(), String> {
    let run_time = time(cell(RUN), RUN)?;
    let valid_time = time(cell(VALID), VALID)?;
    let given_hour = int(cell(LEAD), LEAD)?;
    let model = text(cell(MODEL), MODEL)?;
    let model = model_name(model).ok_or_else(|| unknown_model(model))?;
    rows.push(ForecastRow {
        model,
        location_name: text(cell(LOCATION), LOCATION)?.into(),
        latitude: num(cell(LAT), LAT)?.into(),
        longitude: num(cell(LON), LON)?.into(),
        run_time,
        valid_time,
        forecast_hour: 0,
        temperature_k: num(cell(TEMP_K), TEMP_K)?.into(),
        temperature_f: num(cell(TEMP_F), TEMP_F)?.into(),
        temperature_c: num(cell(TEMP_C), TEMP_C)?.into(),
        relative_humidity: num(cell(RH), RH)?.into(),
        dew_point_f: num(cell(DEW_F), DEW_F)?.into(),
        dew_point_c: num(cell(DEW_C), DEW_C)?.into(),
        apparent_temp_f: num(cell(APP_F), APP_F)?.into(),
        apparent_temp_c: num(cell(APP_C), APP_C)?.into(),
        wind_speed_mph: num(cell(WIND_MPH), WIND_MPH)?.into(),
        wind_speed_kmh: num(cell(WIND_KMH), WIND_KMH)?.into(),
        wind_direction_deg: int(cell(WIND_DIR), WIND_DIR)?,
        wind_gusts_mph: num(cell(GUST_MPH), GUST_MPH)?.into(),
        wind_gusts_kmh: num(cell(GUST_KMH), GUST_KMH)?.into(),
        cloud_cover: num(cell(CLOUD), CLOUD)?.into(),
        precipitation_mm: num(cell(PRECIP_MM), PRECIP_MM)?.into(),
        precipitation_in: num(cell(PRECIP_IN), PRECIP_IN)?.into(),
        weather_code: int(cell(WEATHER_CODE), WEATHER_CODE)?,
        pressure_msl_hpa: num(cell(PMSL), PMSL)?.into(),
        surface_pressure_hpa: num(cell(PSFC), PSFC)?.into(),
        published_after_s: 0,
    });
    let checked = rows.last_mut().map_or(Ok(()), |row| validate_row(row, given_hour));
    if checked.is_err() {
        rows.pop();
    }
    checked
}

/// Checks a row from any container (CSV, JSONL, Parquet) against the same rules: known
/// model, a location, valid_time >= run_time, a `given_hour` that agrees with the times,
/// plausible coordinates and temperatures. Fills `forecast_hour` and all three units, in
/// place (a row is ~240 bytes; moving it through here was a visible share of decoding).
pub fn validate_row(row: &mut ForecastRow, given_hour: Option<i32>) -> Result<(), String> {
    if !is_model(row.model) {
        return Err(unknown_model(row.model));
    }
    if row.location_name.trim().is_empty() {
        return Err("empty location_name".into());
    }
    row.forecast_hour = lead_hours(row.run_time, row.valid_time)?;
    if let Some(given) = given_hour {
        if given != row.forecast_hour {
            return Err(format!(
                "forecast_hour {given} disagrees with valid_time - run_time = {} h",
                row.forecast_hour
            ));
        }
    }
    if row.latitude.get().is_some_and(|v| !(-90.0..=90.0).contains(&v)) {
        return Err("latitude outside -90..90".into());
    }
    if row.longitude.get().is_some_and(|v| !(-180.0..=360.0).contains(&v)) {
        return Err("longitude outside -180..360".into());
    }
    if row.wind_direction_deg.is_some_and(|d| !(0..=360).contains(&d)) {
        return Err("wind_direction_deg outside 0..360".into());
    }
    check_temperatures(row)?;
    row.complete_temperatures();
    Ok(())
}

/// The reject reason for a model name outside [`MODEL_NAMES`].
pub fn unknown_model(name: &str) -> String {
    format!("unknown model '{}'", clip(name))
}

/// Rejects rows without a temperature, or whose K/F/C columns describe different values
/// (a corrupt export must not settle anything).
fn check_temperatures(row: &ForecastRow) -> Result<(), String> {
    let as_c = [
        row.temperature_c.get(),
        row.temperature_f.get().map(|f| (f - 32.0) * 5.0 / 9.0),
        row.temperature_k.get().map(|k| k - 273.15),
    ];
    let mut given = as_c.iter().flatten();
    let Some(&first) = given.next() else {
        return Err("no temperature (temperature_k/_f/_c all empty)".into());
    };
    if given.any(|c| (c - first).abs() > TEMP_AGREEMENT_C) {
        return Err("temperature_k/_f/_c disagree".into());
    }
    if !(-100.0..=70.0).contains(&first) {
        return Err(format!("temperature {first:.1} C outside -100..70"));
    }
    Ok(())
}

/// Lead time in whole hours (truncated), requiring valid_time >= run_time.
/// Whole hours from the run to the valid time, rounded up, as `decode::mos` counts them: a
/// LAMP run labelled 1230 calls its 13Z hour lead 1 (its leads count from the cycle's
/// whole hour). Runs on the hour, every other model's, are unaffected.
fn lead_hours(run: DateTime<Utc>, valid: DateTime<Utc>) -> Result<i32, String> {
    if valid < run {
        return Err("valid_time before run_time".into());
    }
    let secs = (valid - run).num_seconds();
    i32::try_from((secs + 3599) / 3600).map_err(|_| "lead time out of range".to_string())
}

fn text(c: Cell<'_>, col: usize) -> Result<&str, String> {
    match c {
        Cell::Text(s) => Ok(s),
        Cell::Null => Err(format!("missing {}", COLUMNS[col])),
        Cell::Num(_) => Err(format!("{}: expected text, found a number", COLUMNS[col])),
        Cell::Bad(kind) => Err(format!("{}: expected text, found {kind}", COLUMNS[col])),
    }
}

fn time(c: Cell<'_>, col: usize) -> Result<DateTime<Utc>, String> {
    let s = text(c, col)?;
    parse_timestamp(s).ok_or_else(|| format!("{}: bad time '{}'", COLUMNS[col], clip(s)))
}

fn num(c: Cell<'_>, col: usize) -> Result<Option<f64>, String> {
    let v = match c {
        Cell::Null => return Ok(None),
        Cell::Num(v) => v,
        Cell::Text(s) => {
            parse_f64(s).ok_or_else(|| format!("{}: expected a number, found '{}'", COLUMNS[col], clip(s)))?
        }
        Cell::Bad(kind) => return Err(format!("{}: expected a number, found {kind}", COLUMNS[col])),
    };
    if v.is_finite() {
        Ok(Some(v))
    } else {
        Err(format!("{}: not a finite number", COLUMNS[col]))
    }
}

/// Integers may come as `12` or `12.0` (float-typed exports), never as `12.5`.
fn int(c: Cell<'_>, col: usize) -> Result<Option<i32>, String> {
    let Some(v) = num(c, col)? else {
        return Ok(None);
    };
    if v.fract() != 0.0 || v.abs() > f64::from(i32::MAX) {
        return Err(format!("{}: expected an integer, found {v}", COLUMNS[col]));
    }
    Ok(Some(v as i32))
}

/// At most 24 characters of an offending value, control characters escaped.
fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    crate::decode::text::quote(s, 24)
}

/// Writes rows as CSV with a header in spec 2.5 order (no `id`/`inserted_at`). Times are
/// RFC 3339 UTC with `Z`; numbers use Rust's shortest round-trip form, so decoding the
/// output gives back the same rows.
pub fn encode_forecast_csv(rows: &[ForecastRow]) -> String {
    let mut out = String::with_capacity(64 + rows.len() * 200);
    out.push_str(&COLUMNS.join(","));
    out.push('\n');
    for r in rows {
        push_text(&mut out, r.model);
        push_text(&mut out, &r.location_name);
        let floats = r.floats().map(OptF64::get);
        for v in &floats[..2] {
            push_num(&mut out, *v);
        }
        push_raw(&mut out, &r.run_time.to_rfc3339_opts(SecondsFormat::AutoSi, true));
        push_raw(&mut out, &r.valid_time.to_rfc3339_opts(SecondsFormat::AutoSi, true));
        push_raw(&mut out, &r.forecast_hour.to_string());
        for v in &floats[2..12] {
            push_num(&mut out, *v);
        }
        push_int(&mut out, r.wind_direction_deg);
        for v in &floats[12..17] {
            push_num(&mut out, *v);
        }
        push_int(&mut out, r.weather_code);
        for v in &floats[17..] {
            push_num(&mut out, *v);
        }
        out.pop(); // trailing comma
        out.push('\n');
    }
    out
}

fn push_raw(out: &mut String, s: &str) {
    out.push_str(s);
    out.push(',');
}

/// Quotes text that holds a delimiter, quote or line break (RFC 4180).
fn push_text(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
        out.push(',');
    } else {
        push_raw(out, s);
    }
}

fn push_num(out: &mut String, v: Option<f64>) {
    if let Some(v) = v {
        out.push_str(&v.to_string());
    }
    out.push(',');
}

fn push_int(out: &mut String, v: Option<i32>) {
    if let Some(v) = v {
        out.push_str(&v.to_string());
    }
    out.push(',');
}

#[cfg(test)]
mod tests;
