//! Types that exist only to be described in the OpenAPI document ([`super::docs`]): the
//! response bodies whose shape depends on a parameter, and rows the handlers stream from
//! Arrow batches. No handler builds them; handlers name them in their annotations, so they
//! are kept apart from the document, which names the handlers. (The closed sets of parameter
//! values are the enums the handlers parse them with: [`super::params::ClosedSet`].)

use serde::Serialize;
use utoipa::ToSchema;

use super::observation_json::{ObservationV1, ObservationV2, SvcHigh, SvcHighV1};

/// 200 body of `GET /api/v2/observations.php`: the shape depends on `mode`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code, clippy::large_enum_variant)] // documentation only: never built, the handler sends the variants' types
pub enum ObservationsV2Body {
    /// `mode=latest`: one observation record (spec 2.1).
    Latest(ObservationV2),
    /// `mode=svc_high`: the trading-day extremes (spec 2.2).
    SvcHigh(SvcHigh),
    /// history (mode omitted or `history`): the observations of the range, oldest first.
    History(Vec<ObservationV2>),
}

/// 200 body of `GET /api/v1/observations.php`: the shape depends on `mode`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code, clippy::large_enum_variant)] // documentation only: never built, the handler sends the variants' types
pub enum ObservationsV1Body {
    /// `mode=latest`: one v1 observation record.
    Latest(ObservationV1),
    /// `mode=svc_high`: the day high (no low in v1).
    SvcHigh(SvcHighV1),
    /// history (mode omitted or `history`): the observations of the range, oldest first.
    History(Vec<ObservationV1>),
}

/// One raw forecast row (spec 2.5) as `GET /api/v2/forecasts.php` streams it: every column
/// of `RAW_COLUMNS`, nulls explicit. Times are ISO 8601 UTC strings.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)] // documentation only: rows are streamed from Arrow batches
pub struct ForecastRowV2 {
    /// Record id (53 bits of the natural-key hash).
    pub id: i64,
    pub model: String,
    pub location_name: String,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// Model initialization time.
    pub run_time: String,
    pub valid_time: String,
    /// Lead time in hours.
    pub forecast_hour: i32,
    pub temperature_k: Option<f64>,
    pub temperature_f: Option<f64>,
    pub temperature_c: Option<f64>,
    pub relative_humidity: Option<f64>,
    pub dew_point_f: Option<f64>,
    pub dew_point_c: Option<f64>,
    pub apparent_temp_f: Option<f64>,
    pub apparent_temp_c: Option<f64>,
    pub wind_speed_mph: Option<f64>,
    pub wind_speed_kmh: Option<f64>,
    pub wind_direction_deg: Option<i32>,
    pub wind_gusts_mph: Option<f64>,
    pub wind_gusts_kmh: Option<f64>,
    pub cloud_cover: Option<f64>,
    pub precipitation_mm: Option<f64>,
    pub precipitation_in: Option<f64>,
    /// WMO weather interpretation code.
    pub weather_code: Option<i32>,
    pub pressure_msl_hpa: Option<f64>,
    pub surface_pressure_hpa: Option<f64>,
    /// When the row was ingested.
    pub inserted_at: String,
}

/// One `mode=daily` row (spec 2.6), as the handler builds it. Fahrenheit fields for US
/// stations, Celsius fields for international ones; a field is absent when the model gave
/// no value for the day.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct DailyForecastRow {
    pub model: String,
    /// Local calendar day `YYYY-MM-DD`.
    pub date: String,
    /// IANA timezone used for bucketing.
    pub timezone: String,
    /// `civil` or `standard`.
    pub tz_mode: String,
    /// The run summarized, ISO 8601 UTC.
    pub run_time: String,
    /// Forecast points that contributed.
    pub points_used: i64,
    /// Day maximum, °F (US stations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high_f: Option<f64>,
    /// Day minimum, °F (US stations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_f: Option<f64>,
    /// Day maximum, °C (international stations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high_c: Option<f64>,
    /// Day minimum, °C (international stations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_c: Option<f64>,
}

/// One item of `GET /api/v2/forecasts.php`: a raw row (default, `mode=raw` or
/// `mode=hourly`) or a daily summary (`mode=daily`); one response holds one kind.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code, clippy::large_enum_variant)] // documentation only: never built
pub enum ForecastsV2Item {
    Raw(ForecastRowV2),
    Daily(DailyForecastRow),
}

/// One row of `GET /api/v1/forecasts.php` (spec 9).
#[derive(Serialize, ToSchema)]
#[allow(dead_code)] // documentation only: rows are streamed from Arrow batches
pub struct ForecastRowV1 {
    pub model: String,
    pub location_name: String,
    pub run_time: String,
    pub valid_time: String,
    pub forecast_hour: i32,
    pub temperature_k: Option<f64>,
    pub temperature_f: Option<f64>,
    pub temperature_c: Option<f64>,
}

/// Request body of `POST /api/v2/ingest/{format}`: the input's bytes, in the format the path
/// names (text for most, Parquet for forecasts). Declared as bytes (`application/octet-stream`)
/// rather than text so that generated clients can send either; the handler reads the body
/// whatever its Content-Type.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)] // documentation only: the handler reads `Bytes`
pub struct RawInput(Vec<u8>);

/// 202 body of `POST /api/v2/ingest/{format}`: the live service's outcome
/// (`crate::write::WriteOutcome`, which `crate::write` owns and serializes). Described here
/// field for field; tests/it/openapi.rs posts inputs and checks that the body has exactly
/// these fields, so a field added there fails until it is documented here.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)] // documentation only: the handler sends `WriteOutcome`
pub struct IngestOutcome {
    /// WAL sequence number: the input is durable. Null when every record was already held
    /// (nothing new to log).
    pub seq: Option<u64>,
    /// Records decoded from the body.
    pub read: u64,
    /// Records new to the service.
    pub accepted: u64,
    /// Records the service already held (same natural key): no event, not stored again.
    pub duplicate: u64,
    /// Lines that could not be decoded.
    pub rejected: u64,
    /// The first rejected lines, with reasons.
    pub errors: Vec<IngestLineError>,
    /// New-high / new-low events the input caused.
    pub events: u64,
}

/// One rejected input line of an ingest (`crate::decode::types::LineError`).
#[derive(Serialize, ToSchema)]
#[allow(dead_code)] // documentation only
pub struct IngestLineError {
    /// 1-based line (or JSON record) number; 0 when the reason concerns the whole input.
    pub line: u64,
    pub reason: String,
}
