//! The router and its listener: API routes behind auth, JSON for every error (unknown
//! route, wrong method, panic, an extractor's rejection), request tracing, a deadline on
//! request bodies, graceful shutdown. The connection-level limits (header and idle
//! timeouts, the connection cap) are the listener's ([`super::listener`]).

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Router};
use futures::StreamExt;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use super::error::ApiError;
use super::listener::{self, HttpLimits};
use super::{auth, docs, ingest, metrics, paths, stream_relay, v1, v2, AppState};
use crate::dashboard;

/// A dashboard asset, or this router's 404 for a name that is none.
async fn dashboard_asset(file: axum::extract::Path<String>, headers: axum::http::HeaderMap) -> Response {
    match dashboard::pages::asset(file, headers).await {
        Ok(resp) => resp,
        Err(file) => ApiError::not_found(format!("No such dashboard asset: {file}"), "the dashboard is served at /")
            .into_response(),
    }
}

/// The whole application router, with the default limits.
pub fn router(state: AppState) -> Router {
    router_with(state, HttpLimits::default())
}

/// The whole application router; a request body must arrive within the limits' body
/// timeout, a GET answer begin within its read deadline.
pub fn router_with(state: AppState, limits: HttpLimits) -> Router {
    let body_timeout = limits.body_timeout;
    let ingest_body = move |req: Request, next: Next| read_body_within(body_timeout, ingest::MAX_BODY_BYTES, req, next);
    let deadline = limits.read_deadline;
    let read_deadline = move |req: Request, next: Next| answer_within(deadline, req, next);
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
        .route(paths::V2_BRACKETS, get(v2::brackets::handler))
        .route(paths::V2_BRACKET_ACCURACY, get(v2::bracket_accuracy::handler))
        .route(paths::V2_MODEL_ACCURACY, get(v2::model_accuracy::handler))
        .route(paths::V2_STATIONS, get(v2::stations::handler))
        .route(paths::V2_STREAM_RELAY, get(stream_relay::handler))
        .route(
            paths::V2_INGEST,
            post(ingest::handler)
                .layer(DefaultBodyLimit::max(ingest::MAX_BODY_BYTES))
                .layer(middleware::from_fn(ingest_body)),
        )
        .route(paths::V2_STATUS, get(v2::status::handler))
        .route(paths::METRICS, get(metrics::handler))
        .route_layer(middleware::from_fn(read_deadline))
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
        .route(paths::DASHBOARD_ASSETS, get(dashboard_asset))
        .route(paths::FAVICON, get(dashboard::pages::favicon))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::map_response(json_errors))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// `ok` (200), or `degraded` (503) with the reasons when the WAL cannot take a record or
/// the lake does not answer (`write::probe`): a load balancer routes away, and back.
async fn healthz(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    let faults = state.live.faults().await;
    let status = if faults.is_empty() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let body = super::json::Json(serde_json::json!({
        "status": if faults.is_empty() { "ok" } else { "degraded" },
        "reasons": faults,
        "pending_wal_inputs": state.live.pending(),
        "time": crate::time::fmt_utc(state.now()),
    }));
    (status, body).into_response()
}

/// GET answers that have not begun within `deadline` become a 503 with `Retry-After`
/// (their work is dropped): a hung lake must not hold a client past its own timeout.
/// Ingest (POST) is left alone: once its input is in the WAL it runs to its end anyway.
async fn answer_within(deadline: Duration, req: Request, next: Next) -> Response {
    if req.method() != axum::http::Method::GET {
        return next.run(req).await;
    }
    match tokio::time::timeout(deadline, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::lake_deadline(deadline).into_response(),
    }
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
                format!("connect over HTTPS to {url} with ?stations=KNYC,KMDW&api_key=<API_KEY> (spec 4.5); this port serves the REST API"),
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

/// Reads the whole request body before the handler runs, within `timeout` and `limit`:
/// a body declared (`Content-Length`) over the limit is refused at once with 413, one that
/// turns out larger with 413 as soon as it does, and one that does not arrive in time with
/// 408, so a client that declares 10 GiB and sends nothing holds no connection. A key the
/// handler would refuse (not an admin key) is refused before a byte of the body is read.
async fn read_body_within(timeout: Duration, limit: usize, req: Request, next: Next) -> Response {
    if let Some(caller) = req.extensions().get::<auth::Caller>() {
        if let Err(e) = auth::require_admin(caller) {
            return e.into_response();
        }
    }
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return body_too_large(limit).into_response();
    }
    let (parts, body) = req.into_parts();
    let mut chunks = body.into_data_stream();
    let read = async {
        let mut buf = bytes::BytesMut::new();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| {
                ApiError::bad_request("Could not read the request body", format!("the body was cut short: {e}"))
            })?;
            if buf.len() + chunk.len() > limit {
                return Err(body_too_large(limit));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf.freeze())
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(bytes)) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Ok(Err(e)) => e.into_response(),
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "Request body timeout",
            format!(
                "the request body must arrive in full within {} s (serve --http-body-timeout-secs)",
                timeout.as_secs_f64()
            ),
        )
        .into_response(),
    }
}

/// 413 for a body over `limit` (the ingest limit: the one route that takes a body).
fn body_too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Body too large: the ingest limit is {limit} bytes (2 MiB) per request"),
        "split the input into several requests of at most 2 MiB, or load files with `wxlake ingest`",
    )
}

/// Serves with the default limits until `shutdown` resolves, then drains in-flight
/// requests.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, state, HttpLimits::default(), shutdown).await
}

/// Serves within `limits` (see [`super::listener`]) until `shutdown` resolves.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    state: AppState,
    limits: HttpLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    listener::serve(listener, router_with(state, limits), limits, shutdown).await
}
