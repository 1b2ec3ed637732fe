//! The router and the listener: API routes behind auth, JSON for every error (unknown
//! route, wrong method, panic, an extractor's rejection), request tracing, graceful
//! shutdown.

use std::net::SocketAddr;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Router};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use super::error::ApiError;
use super::{auth, dashboard, docs, ingest, metrics, paths, stream_bridge, v1, v2, AppState};

/// The whole application router.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route(paths::V2_OBSERVATIONS, get(v2::observations::handler))
        .route(paths::V1_OBSERVATIONS, get(v1::observations::handler))
        .route(paths::V2_DAILY_EXTREMES, get(v2::daily_extremes::handler))
        .route(paths::V2_FORECASTS, get(v2::forecasts::handler))
        .route(paths::V2_NWS_FORECASTS, get(v2::nws_forecasts::handler))
        .route(paths::V2_PRECIPITATION, get(v2::precipitation::handler))
        .route(paths::V1_FORECASTS, get(v1::forecasts::handler))
        .route(paths::V2_NEARBY, get(v2::nearby::handler))
        .route(paths::V2_PACING, get(v2::pacing::handler))
        .route(paths::V2_MODEL_ACCURACY, get(v2::model_accuracy::handler))
        .route(paths::V2_STATIONS, get(v2::stations::handler))
        .route(paths::V2_STREAM_RELAY, get(stream_bridge::relay::handler))
        .route(paths::V2_INGEST, post(ingest::handler).layer(DefaultBodyLimit::max(ingest::MAX_BODY_BYTES)))
        .route(paths::V2_STATUS, get(v2::status::handler))
        .route(paths::METRICS, get(metrics::handler))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::authenticate));
    Router::new()
        .merge(api)
        .route(paths::HEALTHZ, get(healthz))
        .route(paths::OPENAPI, get(docs::openapi_json))
        .route(paths::DOCS, get(docs::docs_page))
        .route(paths::V2_STREAM, get(stream_elsewhere))
        .route(paths::DASHBOARD, get(dashboard::pages::shell))
        .route(paths::DASHBOARD_STATION, get(dashboard::pages::shell))
        .route(paths::DASHBOARD_ACCURACY, get(dashboard::pages::shell))
        .route(paths::DASHBOARD_ASSETS, get(dashboard::pages::asset))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::map_response(json_errors))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

async fn healthz(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    super::json::Json(serde_json::json!({
        "status": "ok",
        "pending_wal_inputs": state.live.pending(),
        "time": crate::time::fmt_utc(state.now()),
    }))
    .into_response()
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("No such endpoint: {}", uri.path()), "see /openapi.json for the endpoints")
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("Method {method} not allowed on {}", uri.path()),
        "v2 and v1 endpoints are GET; ingest is POST",
    )
}

/// `GET /api/v2/stream` on the REST port: the stream has its own HTTPS listener
/// (`--stream-addr`), so name it, or say that this server has none. No key is needed to
/// learn where the stream is (its own port checks `api_key`).
async fn stream_elsewhere(
    axum::extract::State(state): axum::extract::State<AppState>,
    headers: axum::http::HeaderMap,
) -> ApiError {
    match state.stream_addr() {
        Some(addr) => {
            let url = stream_url(addr, headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok()));
            ApiError::not_found(
                format!("The push stream is not served on this port: it is at {url}"),
                format!("connect over HTTPS to {url}?stations=KNYC,KMDW&api_key=<API_KEY> (spec 4.5); this port serves the REST API"),
            )
        }
        None => ApiError::not_found(
            "The push stream is not enabled on this server",
            "start wxlake serve with --stream-addr ADDR --tls-cert FILE --tls-key FILE (or --demo) to serve it over HTTPS on its own port",
        ),
    }
}

/// The stream's URL as a client of this server reaches it: the listener's address, or for
/// a wildcard listener (0.0.0.0, ::) the host name the client used for the REST port.
pub fn stream_url(addr: SocketAddr, host_header: Option<&str>) -> String {
    let host = if addr.ip().is_unspecified() {
        host_header.and_then(host_of).unwrap_or_else(|| "localhost".to_string())
    } else if addr.is_ipv6() {
        format!("[{}]", addr.ip())
    } else {
        addr.ip().to_string()
    };
    format!("https://{host}:{}{}", addr.port(), paths::V2_STREAM)
}

/// The host part of a `Host` header (`name`, `name:port`, `[v6]:port`), if it looks like one.
fn host_of(h: &str) -> Option<String> {
    let host = match h.strip_prefix('[') {
        Some(rest) => format!("[{}]", rest.split_once(']')?.0),
        None => h.rsplit_once(':').map_or(h, |(name, _)| name).to_string(),
    };
    let ok = !host.is_empty()
        && host.len() <= 255
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    ok.then_some(host)
}

/// Error responses that did not come from [`ApiError`] (an extractor's plain-text
/// rejection: an unreadable query string, a path that does not parse, a body over a limit)
/// get the JSON body every other error has, with their status kept.
async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024).await.map(|b| String::from_utf8_lossy(&b).trim().to_string());
    let reason = status.canonical_reason().unwrap_or("Error").to_string();
    let details = match text {
        Ok(t) if !t.is_empty() => t,
        _ => format!("HTTP {}", status.as_u16()),
    };
    let mut out = ApiError::new(status, reason, details).into_response();
    for (name, value) in parts.headers.iter() {
        if name != axum::http::header::CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    out
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::internal("handler panicked").into_response()
}

/// Serves until `shutdown` resolves, then drains in-flight requests.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}
