//! The router and the listener: API routes behind auth, JSON for every error (unknown
//! route, wrong method, panic), request tracing, graceful shutdown.

use std::net::SocketAddr;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Router};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use super::error::ApiError;
use super::{auth, docs, ingest, paths, v1, v2, AppState};

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
        .route(paths::V2_INGEST, post(ingest::handler))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::authenticate));
    Router::new()
        .merge(api)
        .route(paths::HEALTHZ, get(healthz))
        .route(paths::OPENAPI, get(docs::openapi_json))
        .route(paths::DOCS, get(docs::docs_page))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

async fn healthz(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    axum::Json(serde_json::json!({
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
