//! The REST API through the real router: auth, tiers, limits, errors, live ingest and the
//! observation modes. Time is a manual clock; nothing sleeps.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::Value;
use tower::ServiceExt;
use wxlake::access::keys::{KeyStore, Tier};
use wxlake::access::limits::RateLimiter;
use wxlake::api::{server, AppState};
use wxlake::clock::{Clock, ManualClock};
use wxlake::lake::Lake;

/// A running app (in process) with one key per tier.
pub struct App {
    pub _dir: tempfile::TempDir,
    pub state: AppState,
    pub clock: Arc<ManualClock>,
    pub keys: std::collections::HashMap<Tier, String>,
    pub admin: String,
}

pub fn now0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 8, 18, 0, 0).unwrap()
}

impl App {
    pub async fn new() -> App {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&format!("file://{}", dir.path().join("lake").display())).await.unwrap();
        let clock = Arc::new(ManualClock::new(now0()));
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let state_dir = dir.path().join("state");
        let keys = KeyStore::open(&state_dir).unwrap();
        let mut by_tier = std::collections::HashMap::new();
        for t in Tier::ALL {
            by_tier.insert(t, keys.create(t, &format!("u-{}", t.as_str()), false, false).unwrap().1);
        }
        let admin = keys.create(Tier::Enterprise, "ops", true, false).unwrap().1;
        let live = Arc::new(crate::support::open_live(&lake, &state_dir, dyn_clock.clone()).await);
        let state = AppState::new(keys, RateLimiter::new(dyn_clock.clone()), live, dyn_clock);
        App { _dir: dir, state, clock, keys: by_tier, admin }
    }

    pub fn key(&self, t: Tier) -> &str {
        &self.keys[&t]
    }

    pub async fn call(
        &self,
        method: &str,
        uri: &str,
        key: Option<&str>,
        body: &str,
    ) -> (StatusCode, axum::http::HeaderMap, Value) {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(k) = key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        let resp =
            server::router(self.state.clone()).oneshot(req.body(Body::from(body.to_string())).unwrap()).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24).await.unwrap();
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, headers, json)
    }

    pub async fn get(&self, uri: &str) -> (StatusCode, Value) {
        let (s, _, v) = self.call("GET", uri, Some(self.key(Tier::Developer)), "").await;
        (s, v)
    }

    pub async fn ingest(&self, format: &str, query: &str, body: &str) -> (StatusCode, Value) {
        let (s, _, v) =
            self.call("POST", &format!("/api/v2/ingest/{format}?{query}"), Some(&self.admin.clone()), body).await;
        (s, v)
    }
}

/// KNYC on 2026-03-08 (US DST starts at 07:00Z): two routine reports with T-groups and an
/// HF-METAR whose whole 10 °C can only be 50 °F.
const KNYC_REPORTS: &str = "\
KNYC 081451Z 27008KT 10SM FEW250 08/M06 A3021 RMK AO2 SLP231 T00781061
KNYC 081551Z 28010KT 10SM CLR 09/M06 A3020 RMK AO2 SLP228 T00891061
KNYC 081555Z AUTO 28009KT 10SM CLR 10/M06 A3020 RMK T01001060 MADISHF
";

#[tokio::test]
async fn auth_headers_and_401s() {
    let app = App::new().await;
    let uri = "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws";
    let (s, _, v) = app.call("GET", uri, None, "").await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(v["error"], "Missing API key");
    let (s, _, v) = app.call("GET", uri, Some("wx_not_a_key"), "").await;
    assert_eq!((s, v["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("Invalid API key")));
    // X-API-Key works as well as Bearer.
    let req = Request::get(uri).header("X-API-Key", app.key(Tier::Professional)).body(Body::empty()).unwrap();
    let resp = server::router(app.state.clone()).oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["x-ratelimit-limit"], "60");
    assert_eq!(resp.headers()["x-ratelimit-remaining"], "59");
    // Revocation takes effect for the running server.
    let secret = app.key(Tier::Testing).to_string();
    app.state.keys.revoke(&secret).unwrap();
    let (s, _, _) = app.call("GET", uri, Some(&secret), "").await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn errors_are_json_with_spec_wording() {
    let app = App::new().await;
    let (s, v) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v,
        serde_json::json!({"error": "Missing required parameter: logic", "details": "Valid values are nws and wu"})
    );
    let (s, v) = app.get("/api/v2/observations.php?station_code=KXYZ&mode=latest").await;
    assert_eq!((s, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("Unknown station: KXYZ")));
    let (s, v) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=cwa").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(v["details"].as_str().unwrap().contains("nws and wu"));
    let (s, v) = app
        .get("/api/v2/observations.php?station_code=KNYC&start_time=2026-03-07T00:00:00Z&end_time=2026-03-08T01:00:00Z")
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, _) = app.get("/api/v2/observations.php?station_code=KNYC&start_time=yesterday&end_time=now").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, v) = app.get("/api/v2/nothing.php").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(v["error"].as_str().unwrap().contains("/api/v2/nothing.php"));
    let (s, _, v) = app.call("DELETE", "/api/v2/observations.php", Some(app.key(Tier::Developer)), "").await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);
    assert!(v["error"].is_string() && v["details"].is_string());
    // A non-admin key may not ingest.
    let (s, _, v) = app.call("POST", "/api/v2/ingest/metar", Some(app.key(Tier::Enterprise)), KNYC_REPORTS).await;
    assert_eq!((s, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("Access Denied")));
    // Nothing usable is a 400 naming the first bad lines.
    let (s, v) = app.ingest("metar", "month=2026-03", "not a report\n").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(v["details"].as_str().unwrap().starts_with("line 1:"), "{v}");
    let (s, _) = app.ingest("grib", "", "x").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_broken_lake_file_is_a_json_500() {
    let app = App::new().await;
    crate::support::commit_broken_file(app.state.lake(), "observations", "date=2026-03-08").await;
    let (s, v) = app
        .get("/api/v2/observations.php?station_code=KNYC&start_time=2026-03-08T00:00:00Z&end_time=2026-03-08T12:00:00Z")
        .await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(v["error"], "Internal server error");
}

#[tokio::test]
async fn rate_limits_per_tier_and_window() {
    let app = App::new().await;
    let uri = "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=wu";
    for (tier, per_minute) in [(Tier::Professional, 60), (Tier::Developer, 300), (Tier::Enterprise, 1200)] {
        let key = app.key(tier).to_string();
        for i in 0..per_minute {
            let (s, _, _) = app.call("GET", uri, Some(&key), "").await;
            assert_eq!(s, StatusCode::OK, "{tier:?} request {i}");
        }
        let (s, h, v) = app.call("GET", uri, Some(&key), "").await;
        assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{tier:?}");
        assert_eq!(h["x-ratelimit-remaining"], "0");
        assert_eq!(h["retry-after"], "60", "the manual clock stands at a whole minute");
        assert!(v["details"].as_str().unwrap().contains(&per_minute.to_string()));
    }
    // v1 has its own counters: the Professional key still has its v1 minute.
    let (s, h, _) = app
        .call("GET", "/api/v1/observations.php?station_code=KNYC&mode=svc_high", Some(app.key(Tier::Professional)), "")
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["x-ratelimit-remaining"], "59");
    // The next minute admits again.
    app.clock.advance(Duration::seconds(60));
    let (s, _, _) = app.call("GET", uri, Some(app.key(Tier::Professional)), "").await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn live_ingest_drives_latest_svc_high_and_history() {
    let app = App::new().await;
    let (s, v) = app.ingest("metar", "month=2026-03", KNYC_REPORTS).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    assert_eq!((v["accepted"].as_u64(), v["rejected"].as_u64()), (Some(3), Some(0)));

    let (s, v) = app.get("/api/v2/observations.php?station_code=KNYC&mode=latest").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["observation_time"], "2026-03-08 15:55:00");
    assert_eq!(v["report_type"], "HF-METAR");
    assert_eq!((v["lowest_probable"].as_i64(), v["highest_probable"].as_i64()), (Some(50), Some(50)));
    assert_eq!(v["units"], "fahrenheit");

    // nws takes the HF-METAR (10 °C can only be 50 °F); wu takes routine reports only: 8.9 °C = 48 °F.
    let (_, nws) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws").await;
    assert_eq!((nws["svc_high"].as_f64(), nws["svc_low"].as_f64()), (Some(50.0), Some(46.0)));
    assert_eq!(nws["time_of_high_utc"], "2026-03-08 15:55:00");
    assert_eq!(nws["calculation_logic"], "nws");
    assert_eq!(nws["date"], "2026-03-08");
    assert!(nws["data_quality"]["nws"]["ok"].as_bool().unwrap());
    assert!(nws["data_quality"].get("wu").is_none(), "keyed by the requested logic only");
    let (_, wu) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=wu").await;
    assert_eq!((wu["svc_high"].as_f64(), wu["high_source"].as_str()), (Some(48.0), Some("observation")));

    let (s, h) = app
        .get("/api/v2/observations.php?station_code=KNYC&start_time=2026-03-08T15:00:00Z&end_time=2026-03-08T16:00:00Z")
        .await;
    assert_eq!(s, StatusCode::OK);
    let times: Vec<&str> = h.as_array().unwrap().iter().map(|o| o["observation_time"].as_str().unwrap()).collect();
    assert_eq!(times, ["2026-03-08 15:51:00", "2026-03-08 15:55:00"]);
    assert_eq!(h[0]["temperature"].as_f64(), Some(8.9));
    assert_eq!(h[0]["sea_level_pressure"].as_f64(), Some(1022.8));

    // After a flush the same history comes from the lake, without duplicates.
    let stats = app.state.live.flush().await.unwrap();
    assert_eq!(stats.stored, 3);
    let (_, h2) = app
        .get("/api/v2/observations.php?station_code=KNYC&start_time=2026-03-08T14:00:00Z&end_time=2026-03-08T16:00:00Z")
        .await;
    assert_eq!(h2.as_array().unwrap().len(), 3);

    // Re-sending the same reports is acknowledged and changes nothing.
    app.ingest("metar", "month=2026-03", KNYC_REPORTS).await;
    app.state.live.flush().await.unwrap();
    let (_, h3) = app
        .get("/api/v2/observations.php?station_code=KNYC&start_time=2026-03-08T14:00:00Z&end_time=2026-03-08T16:00:00Z")
        .await;
    assert_eq!(h3.as_array().unwrap().len(), 3);

    // v1: Fahrenheit names, logic by station type, no low.
    let (_, v1) = app.get("/api/v1/observations.php?station_code=KNYC&mode=svc_high").await;
    assert_eq!((v1["svc_high"].as_f64(), v1["calculation_logic"].as_str()), (Some(50.0), Some("standard")));
    assert!(v1.get("svc_low").is_none());
    let (_, l1) = app.get("/api/v1/observations.php?station_code=KNYC&mode=latest").await;
    assert_eq!(l1["observation_time"], "2026-03-08T15:55:00Z");
    assert_eq!(l1["lowest_probable_f"].as_i64(), Some(50));
}

#[tokio::test]
async fn past_days_come_from_the_lake_through_the_same_engine() {
    let app = App::new().await;
    // Two days back: not in the hot window of "today/yesterday".
    let old = "KNYC 061451Z 27008KT 10SM FEW250 03/M06 A3021 RMK AO2 SLP231 T00281061\n\
               KNYC 061751Z 27008KT 10SM FEW250 05/M06 A3021 RMK AO2 SLP231 T00501061\n";
    let bytes = old.as_bytes();
    let mut s = wxlake::ingest::Summary::default();
    let opts = wxlake::ingest::IngestOptions { month: Some((2026, 3)), ..Default::default() };
    wxlake::ingest::ingest_bytes(app.state.lake(), wxlake::ingest::Format::Metar, "old", bytes, &opts, &mut s)
        .await
        .unwrap();
    let (s, v) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws&date=2026-03-06").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!((v["svc_high"].as_f64(), v["svc_low"].as_f64()), (Some(41.0), Some(37.0)));
    let (s, _) = app.get("/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws&date=2026-03-10").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "future dates are refused");
    let (s, v) = app
        .get("/api/v2/daily_extremes.php?station_code=KNYC&logic=nws&start_date=2026-03-05&end_date=2026-03-08")
        .await;
    assert_eq!(s, StatusCode::OK);
    let highs: Vec<Option<f64>> = v.as_array().unwrap().iter().map(|d| d["svc_high"].as_f64()).collect();
    assert_eq!(highs, [None, Some(41.0), None, None]);
}

#[tokio::test]
async fn openapi_describes_every_route() {
    let app = App::new().await;
    let (s, _, v) = app.call("GET", "/openapi.json", None, "").await;
    assert_eq!(s, StatusCode::OK);
    assert!(v["openapi"].as_str().unwrap().starts_with("3.1"));
    for p in [
        "/api/v2/observations.php",
        "/api/v1/observations.php",
        "/api/v2/ingest/{format}",
        "/api/v2/forecasts.php",
        "/api/v2/nws_forecasts.php",
        "/api/v2/precipitation.php",
        "/api/v1/forecasts.php",
        "/api/v2/stream",
        "/api/v2/daily_extremes.php",
        "/api/v2/nearby.php",
        "/api/v2/pacing.php",
        "/api/v2/brackets.php",
        "/api/v2/bracket_accuracy.php",
        "/api/v2/model_accuracy.php",
    ] {
        assert!(v["paths"].get(p).is_some(), "{p} missing from OpenAPI");
    }
    let (s, _, v) = app.call("GET", "/docs", None, "").await;
    assert_eq!(s, StatusCode::OK);
    assert!(v.as_str().unwrap().contains("/openapi.json"));
}

/// Issue 16 item 1: a station code or model name carrying SQL (a quote, `--`, `;`) is a
/// precise 400 in the spec's error format on every endpoint that takes one. The handlers
/// bind request values as parameters (`api::bound_sql`), so such a value could never be
/// read as SQL; the check here is that it is refused before any query at all.
#[tokio::test]
async fn sql_in_a_code_or_model_is_a_400_not_sql() {
    let app = App::new().await;
    let enterprise = app.key(Tier::Enterprise).to_string();
    // Raw value, URL-encoded value.
    let hostile = [
        ("KNYC' OR '1'='1", "KNYC%27%20OR%20%271%27%3D%271"),
        ("KNYC'--", "KNYC%27--"),
        ("KNYC;DROP TABLE observations", "KNYC%3BDROP%20TABLE%20observations"),
    ];
    let win = "start_valid_time=2026-03-08T00:00:00Z&end_valid_time=2026-03-09T00:00:00Z";
    for (raw, enc) in hostile {
        let cases = [
            (format!("/api/v2/observations.php?station_code={enc}&mode=latest"), format!("Unknown station: {raw}")),
            (format!("/api/v2/precipitation.php?station_code={enc}"), format!("Unknown station: {raw}")),
            (format!("/api/v2/nws_forecasts.php?station_code={enc}"), format!("Unknown station: {raw}")),
            (
                format!("/api/v2/daily_extremes.php?station_code={enc}&start_date=2026-03-01&end_date=2026-03-08"),
                format!("Unknown station: {raw}"),
            ),
            (format!("/api/v2/pacing.php?station_code={enc}"), format!("Unknown station: {raw}")),
            (format!("/api/v2/brackets.php?station_code={enc}&target=high"), format!("Unknown station: {raw}")),
            (format!("/api/v2/bracket_accuracy.php?station_code={enc}"), format!("Unknown station: {raw}")),
            (format!("/api/v2/nearby.php?stations={enc}"), format!("Unknown station: {raw}")),
            (format!("/api/v2/model_accuracy.php?station_code={enc}"), {
                // The code is cut to 24 characters in the message.
                format!("Invalid station_code: {}", raw.chars().take(24).collect::<String>())
            }),
            (format!("/api/v2/forecasts.php?location_name={enc}&{win}"), format!("Invalid location_name: {raw}")),
            (format!("/api/v2/forecasts.php?location_name=KNYC&model={enc}&{win}"), format!("Unknown model: {raw}")),
            (
                format!("/api/v2/forecasts.php?location_name=KNYC&model={enc}&mode=daily"),
                format!("Unknown model: {raw}"),
            ),
            (format!("/api/v2/model_accuracy.php?station_code=KNYC&model={enc}"), format!("Unknown model '{raw}'")),
            (format!("/api/v1/observations.php?station_code={enc}&mode=latest"), format!("Unknown station: {raw}")),
            (format!("/api/v1/forecasts.php?location_name={enc}&{win}"), format!("Invalid location_name: {raw}")),
            (format!("/api/v1/forecasts.php?location_name=KNYC&model={enc}&{win}"), format!("Unknown model: {raw}")),
        ];
        for (uri, error) in cases {
            let (s, _, v) = app.call("GET", &uri, Some(&enterprise), "").await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{uri}: {v}");
            assert_eq!(v["error"], error.as_str(), "{uri}");
            let details = v["details"].as_str().unwrap_or_default();
            assert!(!details.is_empty() && v.as_object().unwrap().len() == 2, "{uri}: {v}");
        }
    }
}

/// Issue 27 item 4: an unknown station is the same JSON 400 on every endpoint that takes a
/// station (observations answered 400 where forecasts answered `200 []`), pointing to where
/// the catalog is listed; a single-valued parameter given twice is a 400, never an answer
/// for its last value (`station_code=KNYC&station_code=EGLC` answered for EGLC).
#[tokio::test]
async fn unknown_stations_and_repeated_parameters_are_400_everywhere() {
    let app = App::new().await;
    let key = app.key(Tier::Enterprise).to_string();
    let win = "start_valid_time=2026-03-08T00:00:00Z&end_valid_time=2026-03-09T00:00:00Z";
    let hist = "start_time=2026-03-08T00:00:00Z&end_time=2026-03-08T06:00:00Z";
    // (path and parameters before the station, the station parameter, what follows it)
    let endpoints = [
        ("/api/v2/observations.php?mode=latest", "station_code", ""),
        ("/api/v2/observations.php?mode=svc_high&logic=nws", "station_code", ""),
        ("/api/v2/observations.php?", "station_code", hist),
        ("/api/v1/observations.php?mode=latest", "station_code", ""),
        ("/api/v1/observations.php?mode=svc_high", "station_code", ""),
        ("/api/v2/daily_extremes.php?logic=nws&start_date=2026-03-01&end_date=2026-03-08", "station_code", ""),
        ("/api/v2/precipitation.php?", "station_code", ""),
        ("/api/v2/nws_forecasts.php?", "station_code", ""),
        ("/api/v2/pacing.php?", "station_code", ""),
        ("/api/v2/brackets.php?target=high", "station_code", ""),
        ("/api/v2/bracket_accuracy.php?", "station_code", ""),
        ("/api/v2/nearby.php?radius_km=500", "station_code", ""),
        ("/api/v2/nearby.php?", "stations", ""),
        ("/api/v2/stations.php?", "station_code", ""),
        ("/api/v2/forecasts.php?", "location_name", win),
        ("/api/v2/forecasts.php?model=GFS&run=latest", "location_name", ""),
        ("/api/v2/forecasts.php?mode=daily", "location_name", ""),
        ("/api/v1/forecasts.php?", "location_name", win),
    ];
    let uri = |(head, name, tail): (&str, &str, &str), value: &str| {
        let sep = if head.ends_with('?') { "" } else { "&" };
        let tail = if tail.is_empty() { String::new() } else { format!("&{tail}") };
        format!("{head}{sep}{name}={value}{tail}")
    };
    for e in endpoints {
        let u = uri(e, "KXYZ");
        let (s, _, v) = app.call("GET", &u, Some(&key), "").await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{u}: {v}");
        assert_eq!(v["error"], "Unknown station: KXYZ", "{u}: {v}");
        let details = v["details"].as_str().unwrap_or_default();
        assert!(details.contains("GET /api/v2/stations.php lists them"), "{u}: {v}");
        assert!(details.contains(&format!("/docs names them under {}", e.1)), "{u}: {v}");
        assert_eq!(v.as_object().unwrap().len(), 2, "{u}: {v}");

        let u = uri(e, &format!("KNYC&{}=EGLC", e.1));
        let (s, _, v) = app.call("GET", &u, Some(&key), "").await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{u}: {v}");
        assert_eq!(v["error"], format!("Repeated parameter: {}", e.1), "{u}: {v}");
    }
    // Spec 2.10: the accuracy endpoint accepts any well-formed ICAO code; repeated is a 400
    // there too.
    let (s, _, v) = app.call("GET", "/api/v2/model_accuracy.php?station_code=KXYZ", Some(&key), "").await;
    assert_eq!((s, v["station"].as_str(), &v["city"]), (StatusCode::OK, Some("KXYZ"), &Value::Null), "{v}");
    for u in [
        "/api/v2/model_accuracy.php?station_code=KNYC&station_code=EGLC",
        "/api/v2/observations.php?station_code=KNYC&mode=latest&mode=svc_high&logic=nws",
        "/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=latest&model=HRRR",
    ] {
        let (s, _, v) = app.call("GET", u, Some(&key), "").await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{u}: {v}");
        assert!(v["error"].as_str().unwrap().starts_with("Repeated parameter: "), "{u}: {v}");
    }
    // Names the endpoint does not take are ignored, repeated or not (cache busters).
    let (s, _, v) = app
        .call("GET", "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws&_=1&_=2", Some(&key), "")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

/// The REST listener itself, over real sockets (issue 27, points 5 and 7): a client that
/// trickles its request head is cut within the header timeout, an idle one within the idle
/// timeout, `/healthz` answers while the connection cap is reached, a declared huge body
/// is answered at once, and hyper's own answers (malformed request, URI or head too large)
/// are the API's JSON error.
mod listener_limits {
    use std::net::SocketAddr;
    use std::time::{Duration, Instant};

    use serde_json::Value;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use wxlake::access::keys::Tier;
    use wxlake::api::listener::HttpLimits;
    use wxlake::api::server;

    use super::App;

    /// A real listener on loopback serving `app`, stopped when the returned sender drops.
    async fn listen(app: &App, limits: HttpLimits) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(server::serve_with(listener, app.state.clone(), limits, async move {
            let _ = stopped.await;
        }));
        (addr, stop)
    }

    fn limits(header: u64, body: u64, idle: u64, max_connections: usize) -> HttpLimits {
        HttpLimits {
            header_timeout: Duration::from_millis(header),
            body_timeout: Duration::from_millis(body),
            idle_timeout: Duration::from_millis(idle),
            max_connections,
            ..HttpLimits::default()
        }
    }

    /// One response read off `tcp` (head, then `content-length` bytes), within 5 s:
    /// status, head and JSON body.
    async fn response(tcp: &mut TcpStream) -> (u16, String, Value) {
        let mut buf = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut chunk = [0u8; 8192];
        let (head, body_start) = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break (String::from_utf8_lossy(&buf[..i]).to_string(), i + 4);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let n = tokio::time::timeout(left, tcp.read(&mut chunk)).await.expect("a response within 5 s").unwrap();
            assert!(n > 0, "closed before a response: {:?}", String::from_utf8_lossy(&buf));
            buf.extend_from_slice(&chunk[..n]);
        };
        let length: usize = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
            .expect("content-length");
        while buf.len() < body_start + length {
            let left = deadline.saturating_duration_since(Instant::now());
            let n = tokio::time::timeout(left, tcp.read(&mut chunk)).await.expect("the body within 5 s").unwrap();
            assert!(n > 0, "closed inside the body");
            buf.extend_from_slice(&chunk[..n]);
        }
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        let body = serde_json::from_slice(&buf[body_start..body_start + length]).unwrap_or(Value::Null);
        (status, head, body)
    }

    /// Whether the server closed `tcp` (end of stream or reset) within `wait`.
    async fn closed_within(tcp: &mut TcpStream, wait: Duration) -> bool {
        let mut buf = [0u8; 256];
        matches!(tokio::time::timeout(wait, tcp.read(&mut buf)).await, Ok(Ok(0)) | Ok(Err(_)))
    }

    async fn healthz(addr: SocketAddr) -> (u16, Value) {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.unwrap();
        let (status, _, body) = response(&mut tcp).await;
        (status, body)
    }

    fn assert_json_error(head: &str, body: &Value) {
        assert!(head.to_ascii_lowercase().contains("content-type: application/json"), "{head}");
        assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{head}\n{body}");
        assert!(body["details"].as_str().is_some_and(|d| !d.is_empty()), "{body}");
    }

    /// A client sending its request head one byte every 100 ms is disconnected once the
    /// header timeout (1 s) has passed since its first byte, not when it is done.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_request_head_is_cut_within_the_header_timeout() {
        let app = App::new().await;
        let (addr, _stop) = listen(&app, limits(1_000, 1_000, 30_000, 64)).await;
        let request = format!("GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: {}\r\n\r\n", "a".repeat(100));
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        let mut cut = None;
        for byte in request.bytes() {
            if tcp.write_all(&[byte]).await.is_err() || closed_within(&mut tcp, Duration::from_millis(100)).await {
                cut = Some(started.elapsed());
                break;
            }
        }
        let cut = cut.expect("the server held a 13-second request head");
        assert!(cut >= Duration::from_millis(900) && cut < Duration::from_millis(2_500), "cut after {cut:?}");
        // The server itself is fine.
        assert_eq!(healthz(addr).await.0, 200);
    }

    /// A connection that sends nothing is closed after the idle timeout; so is one kept
    /// alive after a response.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn idle_connections_are_closed_after_the_idle_timeout() {
        let app = App::new().await;
        let (addr, _stop) = listen(&app, limits(10_000, 1_000, 1_000, 64)).await;
        let mut silent = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        assert!(closed_within(&mut silent, Duration::from_secs(3)).await, "a silent connection was held");
        assert!(started.elapsed() >= Duration::from_millis(900), "closed early: {:?}", started.elapsed());

        let mut kept = TcpStream::connect(addr).await.unwrap();
        kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
        assert_eq!(response(&mut kept).await.0, 200);
        assert!(closed_within(&mut kept, Duration::from_secs(3)).await, "a kept-alive idle connection was held");
    }

    /// With the cap (4) held by slow clients, `/healthz` still answers at once: the slow
    /// connection that has waited longest makes room, and only that one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn healthz_answers_while_slow_clients_hold_the_connection_cap() {
        let app = App::new().await;
        let (addr, _stop) = listen(&app, limits(30_000, 30_000, 30_000, 4)).await;
        let mut slow = Vec::new();
        for _ in 0..4 {
            let mut tcp = TcpStream::connect(addr).await.unwrap();
            tcp.write_all(b"GET /hea").await.unwrap();
            slow.push(tcp);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let started = Instant::now();
        let (status, body) = healthz(addr).await;
        assert_eq!((status, body["status"].as_str()), (200, Some("ok")), "{body}");
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        let mut closed = Vec::new();
        for tcp in &mut slow {
            closed.push(closed_within(tcp, Duration::from_millis(300)).await);
        }
        assert_eq!(closed, vec![true, false, false, false], "the oldest slow connection made room");
    }

    /// An admin POST declaring 10 GiB and sending nothing is answered 413 at once; a body
    /// that stops arriving is answered 408 after the body timeout; a key that may not
    /// ingest is refused before the body is read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn declared_huge_and_stalled_bodies_are_answered_promptly() {
        let app = App::new().await;
        let (addr, _stop) = listen(&app, limits(5_000, 1_000, 30_000, 64)).await;
        let post = |key: &str, length: u64| {
            format!(
                "POST /api/v2/ingest/metar?month=2026-03 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {key}\r\n\
                 Content-Length: {length}\r\n\r\n"
            )
        };
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        tcp.write_all(post(app.admin.as_str(), 10_737_418_240).as_bytes()).await.unwrap();
        let (status, head, body) = response(&mut tcp).await;
        assert_eq!(status, 413, "{head}\n{body}");
        assert_json_error(&head, &body);
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());

        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        tcp.write_all(post(app.admin.as_str(), 100).as_bytes()).await.unwrap();
        tcp.write_all(b"KNYC 08").await.unwrap();
        let (status, head, body) = response(&mut tcp).await;
        assert_eq!(status, 408, "{head}\n{body}");
        assert_json_error(&head, &body);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(3), "{took:?}");

        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(post(app.key(Tier::Developer), 10_737_418_240).as_bytes()).await.unwrap();
        let (status, head, body) = response(&mut tcp).await;
        assert_eq!(status, 403, "{head}\n{body}");
    }

    /// What hyper answers before any handler runs (a request line it cannot parse, a URI
    /// over 65,534 bytes, a head over 128 KiB) is the API's JSON error too.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hyper_level_errors_are_json() {
        let app = App::new().await;
        let (addr, _stop) = listen(&app, limits(5_000, 5_000, 30_000, 64)).await;
        let cases = [
            (400, "GARBAGE\r\n\r\n".to_string()),
            (400, "GET / HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n".to_string()),
            (414, format!("GET /{} HTTP/1.1\r\nHost: localhost\r\n\r\n", "a".repeat(70_000))),
            (431, format!("GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: {}\r\n\r\n", "b".repeat(200_000))),
        ];
        for (expected, request) in cases {
            let mut tcp = TcpStream::connect(addr).await.unwrap();
            tcp.write_all(request.as_bytes()).await.unwrap();
            let (status, head, body) = response(&mut tcp).await;
            assert_eq!(status, expected, "{head}\n{body}");
            assert_json_error(&head, &body);
        }
        // A normal request on the same listener is untouched.
        assert_eq!(healthz(addr).await.0, 200);
    }

    /// A 10 KB `station_code` is echoed as its first 64 characters and an ellipsis.
    #[tokio::test]
    async fn echoed_input_is_cut_short() {
        let app = App::new().await;
        let code = "X".repeat(10_000);
        let (s, v) = app.get(&format!("/api/v2/observations.php?station_code={code}&mode=latest")).await;
        assert_eq!(s, axum::http::StatusCode::BAD_REQUEST);
        let error = v["error"].as_str().unwrap();
        assert!(error.contains(&format!("{}…", "X".repeat(64))) && !error.contains(&"X".repeat(65)), "{error}");
        assert!(v.to_string().len() < 1_000, "{v}");
    }
}
