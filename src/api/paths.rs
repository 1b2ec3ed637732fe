//! Every HTTP path the service serves, in one place (the router, the OpenAPI document
//! and the tests all use these).

pub const HEALTHZ: &str = "/healthz";
pub const OPENAPI: &str = "/openapi.json";
pub const DOCS: &str = "/docs";

pub const V2_OBSERVATIONS: &str = "/api/v2/observations.php";
pub const V2_FORECASTS: &str = "/api/v2/forecasts.php";
pub const V2_PRECIPITATION: &str = "/api/v2/precipitation.php";
pub const V2_NWS_FORECASTS: &str = "/api/v2/nws_forecasts.php";
pub const V2_MODEL_ACCURACY: &str = "/api/v2/model_accuracy.php";
pub const V2_DAILY_EXTREMES: &str = "/api/v2/daily_extremes.php";
pub const V2_NEARBY: &str = "/api/v2/nearby.php";
pub const V2_PACING: &str = "/api/v2/pacing.php";
pub const V2_BRACKETS: &str = "/api/v2/brackets.php";
pub const V2_BRACKET_ACCURACY: &str = "/api/v2/bracket_accuracy.php";
pub const V2_INGEST: &str = "/api/v2/ingest/{format}";
pub const V2_STREAM: &str = "/api/v2/stream";
pub const V2_STATUS: &str = "/api/v2/status";
/// Prometheus text exposition of the same figures as [`V2_STATUS`].
pub const METRICS: &str = "/metrics";
/// The stream's events on the REST port, for the dashboard (key in a header).
pub const V2_STREAM_RELAY: &str = "/api/v2/stream/relay";
pub const V2_STATIONS: &str = "/api/v2/stations.php";

/// The dashboard's views (one page shell) and its static assets.
pub const DASHBOARD: &str = "/";
pub const DASHBOARD_STATION: &str = "/station/{code}";
pub const DASHBOARD_ACCURACY: &str = "/accuracy/{code}";
pub const DASHBOARD_ASSETS: &str = "/dashboard/{file}";
/// The dashboard's icon where browsers ask for it.
pub const FAVICON: &str = "/favicon.ico";

pub const V1_OBSERVATIONS: &str = "/api/v1/observations.php";
pub const V1_FORECASTS: &str = "/api/v1/forecasts.php";
