//! api.weather.gov, as the feeds use it:
//! - `GET /products/types/{CLI|DSM}/locations/{LOC}`: the JSON-LD list (`@graph`) of the
//!   location's products, newest first, each with `id` and `issuanceTime`;
//! - `GET /products/{id}`: one product, its text in `productText`;
//! - `GET /points/{lat},{lon}`: the forecast office and grid cell of a point, with the
//!   `forecastHourly` URL;
//! - `GET /gridpoints/{wfo}/{x},{y}/forecast/hourly`: the current hourly forecast version.
//!
//! Products appear at their issue times: a DSM a few minutes after 07, 12 and 17 LST
//! (the day so far) and after midnight LST (the whole day); the final CLI around 06 LST
//! the next morning and the preliminary one around 16:20 LST. Hourly forecasts get a new
//! version (`generatedAt`/`updateTime`) at the generator's issue hours. Only US stations
//! have products, points and gridpoints; elsewhere the API answers 404, as the real one.
//!
//! The simulator's offices are its stations: a station's grid is `{LOC}/{x},{y}` with
//! `LOC` the 3-letter id (`NYC` for KNYC) and `x`, `y` derived from its coordinates.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Datelike, Duration, NaiveDate, SecondsFormat, Utc};
use serde_json::{json, Value};

use super::super::forecasts::{nws_issue_times, nws_version};
use super::super::noise;
use super::super::reports::{dsm, dsm_text, final_cli, intermediate_dsm, preliminary_cli, INTERMEDIATE_DSM_HOURS};
use super::{site, station, Refusal, SimState};
use crate::catalog::{Catalog, Station};
use crate::decode::climate_report::encode_cli;
use crate::decode::nws_hourly::encode_nws_hourly;
use crate::decode::types::DailyReport;
use crate::time::{day_window, standard_date, DayClock};

pub const PRODUCT_LIST_PATH: &str = "/products/types/{kind}/locations/{location}";
pub const PRODUCT_PATH: &str = "/products/{id}";
pub const POINTS_PATH: &str = "/points/{point}";
pub const HOURLY_PATH: &str = "/gridpoints/{wfo}/{xy}/forecast/hourly";

/// Days of products a list reaches back (the real lists hold weeks; the feeds read the top).
const LIST_DAYS: i64 = 3;
/// How far `/points` looks for a station around the asked point, degrees.
const POINT_TOLERANCE_DEG: f64 = 0.1;

/// api.weather.gov's JSON-LD context, as its answers open.
fn context() -> Value {
    json!(["https://geojson.org/geojson-ld/geojson-context.jsonld", {"@version": "1.1", "@vocab": "https://api.weather.gov/ontology#"}])
}

fn geo_json(body: Value) -> Response {
    ([("content-type", "application/ld+json")], body.to_string()).into_response()
}

/// The two product types simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProductType {
    Cli,
    Dsm,
}

impl ProductType {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "CLI" => Some(ProductType::Cli),
            "DSM" => Some(ProductType::Dsm),
            _ => None,
        }
    }

    fn code(self) -> &'static str {
        match self {
            ProductType::Cli => "CLI",
            ProductType::Dsm => "DSM",
        }
    }

    fn name(self) -> &'static str {
        match self {
            ProductType::Cli => "Climatological Report (Daily)",
            ProductType::Dsm => "ASOS Daily Summary",
        }
    }

    fn collective(self) -> &'static str {
        match self {
            ProductType::Cli => "CDUS41",
            ProductType::Dsm => "CDUS27",
        }
    }
}

/// One product of one station's day: which kind, and its variant (for a DSM the LST hour
/// it is valid through, 24 for the whole day; for a CLI 24 = final, 16 = preliminary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProductKey {
    pub product: ProductType,
    pub station: usize,
    pub date: NaiveDate,
    pub through_hour: u32,
}

impl ProductKey {
    /// The product id: UUID-shaped as api.weather.gov's, and carrying the key so that
    /// `/products/{id}` needs no memory of earlier lists.
    pub fn id(&self) -> String {
        let kind = match self.product {
            ProductType::Cli => 0x100,
            ProductType::Dsm => 0x200,
        } + self.through_hour;
        let days = self.date.num_days_from_ce() as u32;
        let check = noise::mix(u64::from(days) << 32 ^ (self.station as u64) << 12 ^ u64::from(kind));
        format!("{days:08x}-{:04x}-4{kind:03x}-{:04x}-{:012x}", self.station, check >> 48, check & 0xffff_ffff_ffff)
    }

    /// The key of an id made by [`ProductKey::id`], or `None`.
    pub fn from_id(id: &str) -> Option<ProductKey> {
        let parts: Vec<&str> = id.split('-').collect();
        let [days, station, kind, _, _] = parts.as_slice() else { return None };
        let days = u32::from_str_radix(days, 16).ok()?;
        let station = usize::from_str_radix(station, 16).ok()?;
        let kind = u32::from_str_radix(kind.strip_prefix('4')?, 16).ok()?;
        let product = match kind >> 8 {
            1 => ProductType::Cli,
            2 => ProductType::Dsm,
            _ => return None,
        };
        let date = NaiveDate::from_num_days_from_ce_opt(i32::try_from(days).ok()?)?;
        let key = ProductKey { product, station, date, through_hour: kind & 0xff };
        (key.id() == id && station < Catalog::global().all().len()).then_some(key)
    }

    fn station(&self) -> &'static Station {
        &Catalog::global().all()[self.station]
    }

    /// The product's report, issue time included.
    fn report(&self, seed: u64) -> DailyReport {
        let st = self.station();
        let w = day_window(st.timezone, DayClock::Standard, self.date);
        let s = site(st, seed, w.start, w.end + Duration::hours(8), w.end + Duration::hours(8));
        match (self.product, self.through_hour) {
            (ProductType::Cli, 24) => final_cli(&s, self.date),
            (ProductType::Cli, _) => preliminary_cli(&s, self.date),
            (ProductType::Dsm, 24) => dsm(&s, self.date),
            (ProductType::Dsm, h) => intermediate_dsm(&s, self.date, h),
        }
    }

    /// The product's text, WMO heading first.
    fn text(&self, report: &DailyReport) -> String {
        match self.product {
            ProductType::Cli => encode_cli(report, &self.station().name),
            ProductType::Dsm => dsm_text(std::slice::from_ref(report)),
        }
    }
}

/// The products of `product` for station `index` issued by `now` over the last days,
/// newest first, with their reports.
pub fn products(product: ProductType, index: usize, now: DateTime<Utc>, seed: u64) -> Vec<(ProductKey, DailyReport)> {
    let st = &Catalog::global().all()[index];
    let today = standard_date(st.timezone, now);
    let variants: Vec<u32> = match product {
        ProductType::Cli => vec![16, 24],
        ProductType::Dsm => INTERMEDIATE_DSM_HOURS.iter().copied().chain([24]).collect(),
    };
    let mut out = Vec::new();
    for back in 0..=LIST_DAYS {
        let date = today - Duration::days(back);
        for &through_hour in &variants {
            let key = ProductKey { product, station: index, date, through_hour };
            // Cheap pre-check: nothing of a day is issued before its LST start.
            if day_window(st.timezone, DayClock::Standard, date).start > now {
                continue;
            }
            let report = key.report(seed);
            if report.issued_at.is_some_and(|t| t <= now) {
                out.push((key, report));
            }
        }
    }
    out.sort_by_key(|(_, r)| std::cmp::Reverse(r.issued_at));
    out
}

fn list_item(base: &str, key: &ProductKey, r: &DailyReport) -> Value {
    let id = key.id();
    json!({
        "@id": format!("{base}/products/{id}"),
        "id": id,
        "wmoCollectiveId": key.product.collective(),
        "issuingOffice": "KWBC",
        "issuanceTime": r.issued_at.map(iso),
        "productCode": key.product.code(),
        "productName": key.product.name(),
    })
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, false)
}

/// `/products/types/{kind}/locations/{location}`.
pub async fn product_list(State(sim): State<SimState>, Path((kind, location)): Path<(String, String)>) -> Response {
    let Some(product) = ProductType::parse(&kind) else {
        return Refusal::not_found(format!("product type {kind:?} is not simulated (CLI, DSM)")).into_response();
    };
    // Unknown and non-US locations have no products: an empty list, as the API answers.
    let index = us_station(&location).and_then(|st| Catalog::global().all().iter().position(|s| s.code == st.code));
    let (now, seed, base) = (sim.now(), sim.seed(), sim.base_url().to_string());
    let graph = match index {
        None => Vec::new(),
        Some(i) => match tokio::task::spawn_blocking(move || products(product, i, now, seed)).await {
            Ok(list) => list.iter().map(|(k, r)| list_item(&base, k, r)).collect(),
            Err(e) => return Refusal(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        },
    };
    geo_json(json!({"@context": {"@version": "1.1", "@vocab": "https://api.weather.gov/ontology#"}, "@graph": graph}))
}

/// `/products/{id}`.
pub async fn product(State(sim): State<SimState>, Path(id): Path<String>) -> Response {
    let Some(key) = ProductKey::from_id(&id) else {
        return Refusal::not_found(format!("Product {id} not found")).into_response();
    };
    let (now, seed, base) = (sim.now(), sim.seed(), sim.base_url().to_string());
    let built = tokio::task::spawn_blocking(move || {
        let r = key.report(seed);
        let text = key.text(&r);
        (r, text)
    })
    .await;
    let Ok((r, text)) = built else {
        return Refusal(axum::http::StatusCode::INTERNAL_SERVER_ERROR, "product build failed".into()).into_response();
    };
    if r.issued_at.is_none_or(|t| t > now) {
        return Refusal::not_found(format!("Product {id} not found")).into_response();
    }
    let mut body = list_item(&base, &key, &r);
    body["@context"] = json!({"@version": "1.1", "@vocab": "https://api.weather.gov/ontology#"});
    body["productText"] = Value::String(text);
    geo_json(body)
}

/// A US catalog station by ICAO or 3-letter id.
fn us_station(id: &str) -> Option<&'static Station> {
    station(id).filter(|s| s.is_us())
}

/// The simulated office and grid cell of a US station.
pub fn grid_of(st: &Station) -> (String, u32, u32) {
    let wfo = st.code.strip_prefix('K').unwrap_or(&st.code).to_string();
    let cell = |deg: f64| 10 + ((deg.abs() * 100.0).round() as u32) % 150;
    (wfo, cell(st.latitude), cell(st.longitude))
}

/// `/points/{lat},{lon}`.
pub async fn points(State(sim): State<SimState>, Path(point): Path<String>) -> Response {
    let parsed =
        point.split_once(',').and_then(|(a, b)| Some((a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?)));
    let Some((lat, lon)) = parsed.filter(|(a, b)| a.is_finite() && b.is_finite()) else {
        return Refusal::bad_request(format!("Invalid point {point:?}: expected LAT,LON")).into_response();
    };
    let near =
        Catalog::global().all().iter().filter(|s| s.is_us()).find(|s| {
            (s.latitude - lat).abs() <= POINT_TOLERANCE_DEG && (s.longitude - lon).abs() <= POINT_TOLERANCE_DEG
        });
    let Some(st) = near else {
        return Refusal::not_found(format!("Data Unavailable For Requested Point {point}")).into_response();
    };
    geo_json(points_body(sim.base_url(), st, lat, lon))
}

/// The `/points` answer for a point at station `st`.
pub fn points_body(base: &str, st: &Station, lat: f64, lon: f64) -> Value {
    let (wfo, x, y) = grid_of(st);
    let grid = format!("{base}/gridpoints/{wfo}/{x},{y}");
    json!({
        "@context": context(),
        "id": format!("{base}/points/{lat},{lon}"),
        "type": "Feature",
        "geometry": {"type": "Point", "coordinates": [lon, lat]},
        "properties": {
            "@id": format!("{base}/points/{lat},{lon}"),
            "@type": "wx:Point",
            "cwa": wfo,
            "gridId": wfo,
            "gridX": x,
            "gridY": y,
            "forecast": format!("{grid}/forecast"),
            "forecastHourly": format!("{grid}/forecast/hourly"),
            "forecastGridData": grid,
            "timeZone": st.timezone.name(),
        }
    })
}

/// `/gridpoints/{wfo}/{x},{y}/forecast/hourly`: the version current at `now`.
pub async fn hourly(State(sim): State<SimState>, Path((wfo, xy)): Path<(String, String)>) -> Response {
    let found = Catalog::global().all().iter().filter(|s| s.is_us()).find(|s| {
        let (w, x, y) = grid_of(s);
        w == wfo && format!("{x},{y}") == xy
    });
    let Some(st) = found else {
        return Refusal::not_found(format!("Invalid gridpoint {wfo}/{xy}")).into_response();
    };
    let (now, seed) = (sim.now(), sim.seed());
    match tokio::task::spawn_blocking(move || hourly_json(st, now, seed)).await {
        Ok(Some(body)) => ([("content-type", "application/geo+json")], body).into_response(),
        Ok(None) => Refusal::not_found("no forecast issued yet").into_response(),
        Err(e) => Refusal(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// The hourly forecast version of `st` current at `now` (the last one issued), as
/// api.weather.gov JSON.
pub fn hourly_json(st: &'static Station, now: DateTime<Utc>, seed: u64) -> Option<String> {
    let from = now - Duration::days(1);
    let s = site(st, seed, from, now, now + Duration::hours(170));
    let issued = nws_issue_times(&s, from, now, now).pop()?;
    Some(encode_nws_hourly(&nws_version(&s, issued), st.timezone))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::types::DailyKind;
    use crate::ingest::{Format, IngestOptions, Records};
    use chrono::TimeZone;

    fn index(code: &str) -> usize {
        Catalog::global().all().iter().position(|s| s.code == code).unwrap()
    }

    fn decoded_reports(format: Format, text: &str, now: DateTime<Utc>) -> Vec<DailyReport> {
        let opts = IngestOptions { month: Some((now.year(), now.month())), ..Default::default() };
        let d = format.decode(text.as_bytes(), &opts);
        assert!(d.errors.is_empty(), "{:?}\n{text}", d.errors);
        match d.records {
            Records::Reports(v) => v,
            _ => panic!("not reports"),
        }
    }

    #[test]
    fn product_ids_carry_their_key_and_refuse_tampering() {
        let key = ProductKey {
            product: ProductType::Dsm,
            station: index("KNYC"),
            date: NaiveDate::from_ymd_opt(2026, 4, 2).unwrap(),
            through_hour: 17,
        };
        let id = key.id();
        assert_eq!(id.len(), 36);
        assert_eq!(ProductKey::from_id(&id), Some(key));
        let mut bad = id.clone();
        bad.replace_range(35..36, if id.ends_with('0') { "1" } else { "0" });
        assert_eq!(ProductKey::from_id(&bad), None);
        assert_eq!(ProductKey::from_id("not-an-id"), None);
        assert_eq!(ProductKey::from_id(""), None);
    }

    #[test]
    fn cli_products_decode_to_the_days_measured_extremes() {
        // 2026-04-03 20:00Z is 15:00 EST: yesterday's final CLI is out, today's
        // preliminary (16:00 LST) not yet.
        let now = Utc.with_ymd_and_hms(2026, 4, 3, 20, 0, 0).unwrap();
        let list = products(ProductType::Cli, index("KNYC"), now, 77);
        assert!(list.windows(2).all(|w| w[0].1.issued_at >= w[1].1.issued_at), "newest first");
        assert!(list.iter().all(|(_, r)| r.issued_at.unwrap() <= now));
        let (key, report) = &list[0];
        assert_eq!((key.date, key.through_hour), (NaiveDate::from_ymd_opt(2026, 4, 2).unwrap(), 24));
        let text = key.text(report);
        let got = decoded_reports(Format::Cli, &text, now);
        assert_eq!(got.len(), 1);
        assert!(got[0].is_final);
        // The CLI's max is the day's highest measured minute (the NWS logic: LST day).
        let st = key.station();
        let w = day_window(st.timezone, DayClock::Standard, key.date);
        let max = (0..(w.end - w.start).num_minutes())
            .filter_map(|k| crate::demo::measured_f(st, w.start + Duration::minutes(k), 77))
            .max();
        assert_eq!(got[0].max_f, max);
        assert_eq!(got[0].date, key.date);
        // The afternoon preliminary appears after 16:20 LST.
        let later = products(ProductType::Cli, index("KNYC"), now + Duration::hours(2), 77);
        assert!(later.iter().any(|(k, r)| k.date == NaiveDate::from_ymd_opt(2026, 4, 3).unwrap() && !r.is_final));
    }

    #[test]
    fn dsm_products_come_a_few_times_a_day_and_decode() {
        let now = Utc.with_ymd_and_hms(2026, 4, 3, 23, 30, 0).unwrap();
        let list = products(ProductType::Dsm, index("KMDW"), now, 5);
        // Chicago, 17:30 LST on Apr 3: 07, 12 and 17 today; days before in full.
        let today: Vec<u32> = list
            .iter()
            .filter(|(k, _)| k.date == NaiveDate::from_ymd_opt(2026, 4, 3).unwrap())
            .map(|(k, _)| k.through_hour)
            .collect();
        assert_eq!(today, [17, 12, 7]);
        for (key, report) in list.iter().take(5) {
            let got = decoded_reports(Format::Dsm, &key.text(report), now);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].kind, DailyKind::Dsm);
            assert_eq!((got[0].station.as_str(), got[0].date), ("KMDW", key.date));
            assert_eq!((got[0].max_f, got[0].min_f), (report.max_f, report.min_f));
            assert_eq!(got[0].valid_as_of_lst.is_none(), key.through_hour == 24);
        }
    }

    #[test]
    fn points_lead_to_the_hourly_forecast_of_the_station() {
        let st = station("KNYC").unwrap();
        let body = points_body("http://sim", st, st.latitude, st.longitude);
        let hourly_url = body["properties"]["forecastHourly"].as_str().unwrap();
        let (wfo, x, y) = grid_of(st);
        assert_eq!(hourly_url, format!("http://sim/gridpoints/{wfo}/{x},{y}/forecast/hourly"));
        // Every US station has its own grid cell (the hourly handler finds it back).
        let us: Vec<_> = Catalog::global().all().iter().filter(|s| s.is_us()).map(grid_of).collect();
        let mut unique = us.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), us.len());

        let now = Utc.with_ymd_and_hms(2026, 4, 3, 20, 0, 0).unwrap();
        let json = hourly_json(st, now, 77).unwrap();
        let opts = IngestOptions { station: Some("KNYC".into()), ..Default::default() };
        let d = Format::NwsHourly.decode(json.as_bytes(), &opts);
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let Records::NwsHourly(rows) = d.records else { panic!("not an hourly forecast") };
        assert_eq!(rows.len(), 156);
        let generated = rows[0].generated_at;
        assert!(generated <= now && generated > now - Duration::hours(8), "{generated}");
        // A later version once the next issue time passes.
        let next = hourly_json(st, now + Duration::hours(8), 77).unwrap();
        assert_ne!(next, json);
    }
}
