//! The OpenAPI 3.1 document (generated from the handlers' annotations) and a
//! self-contained docs page that renders it (no CDN: the service may run offline).
//!
//! The document is a contract that clients generate code from and that the schemathesis
//! test (tests/it/openapi.rs) checks every response against, so each operation's 200 body
//! is the shape the handler really sends: one schema per mode where a parameter switches
//! the shape (observations, forecasts). Statuses every authenticated operation can answer
//! (401, 429, 500) are added to all of them here, so a new handler cannot forget them.

use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::server::{ServerBuilder, ServerVariableBuilder};
use utoipa::openapi::{ContentBuilder, ObjectBuilder, PathItem, Ref, RefOr, Required, ResponseBuilder, Type};
use utoipa::{Modify, OpenApi};

use super::error::ErrorBody;
use super::observation_json::{ObservationV1, ObservationV2, SvcHigh, SvcHighV1};
use super::paths;
use super::schemas::param;
use crate::catalog::Catalog;

/// The service's OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "wxlake",
        description = "Weather observations, trading-day extremes (nws and wu logic), model forecasts and accuracy. \
                       Every non-2xx response is JSON {\"error\", \"details\"}. Rate limits per key per minute and per \
                       day are reported in X-RateLimit-Limit / X-RateLimit-Remaining / X-RateLimit-Reset (seconds until \
                       the binding window resets); a 429 carries Retry-After. Parameters: an unknown station is a 400 on \
                       every endpoint (`station_code`, `stations`, `location_name`; GET /api/v2/stations.php lists the \
                       catalog, and each such parameter below names it), except model_accuracy.php, which accepts any \
                       well-formed ICAO code (spec 2.10), and forecasts.php, which also serves a location outside the \
                       catalog that has recent forecasts. Every parameter takes one value: a parameter given twice is a \
                       400 (lists are comma-separated in one value); unknown parameters are ignored."
    ),
    paths(
        super::v2::observations::handler,
        super::v2::daily_extremes::handler,
        super::v2::forecasts::handler,
        super::v2::nws_forecasts::handler,
        super::v2::precipitation::handler,
        super::v2::nearby::handler,
        super::v2::pacing::handler,
        super::v2::model_accuracy::handler,
        super::v2::stations::handler,
        super::v1::observations::handler,
        super::v1::forecasts::handler,
        super::ingest::handler,
        super::v2::status::handler,
        super::metrics::handler,
        super::stream_bridge::relay::handler,
    ),
    // Parameter types are not collected from `params(...)`: listed here so their $refs resolve.
    components(schemas(
        ErrorBody, ObservationV2, ObservationV1, SvcHigh, SvcHighV1,
        param::ObservationMode, param::Logic, param::ObservationType, param::ForecastMode, param::TzMode,
        param::NwsMode, param::AccuracyWindow, param::AccuracyTarget,
    )),
    modifiers(&Security, &CommonResponses, &StreamServer, &StationCatalog),
    tags(
        (name = "observations", description = "Latest observation, trading-day extremes, history"),
        (name = "forecasts", description = "Model forecasts: raw rows, runs, daily summaries; NWS hourly forecast versions"),
        (name = "ingest", description = "Live ingest (admin keys)"),
        (name = "operations", description = "Feeds and stations health (admin keys): JSON status, Prometheus metrics"),
        (name = "stream", description = "Push stream (HTTPS, its own listener)"),
        (name = "analytics", description = "Developer and Enterprise: model accuracy; beta: nearby stations, pacing"),
        (name = "v1", description = "Legacy v1 interface"),
    )
)]
pub struct ApiDoc;

/// The REST port's two ways to send a key, and the stream's key in the URL (spec 5).
struct Security;

/// The security scheme of the push stream: its key travels as the `api_key` query parameter.
pub const STREAM_KEY_SCHEME: &str = "stream_api_key";

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("`Authorization: Bearer <API_KEY>` (the scheme name in any case)"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Key",
                "`X-API-Key: <API_KEY>`, instead of the bearer header",
            ))),
        );
        components.add_security_scheme(
            STREAM_KEY_SCHEME,
            SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::with_description(
                "api_key",
                "The push stream only: a stream-enabled key as the `api_key` query parameter (spec 5 item 3; \
                 `wxlake keys create --stream` or `keys enable-stream`)",
            ))),
        );
    }
}

/// Names the catalog's stations in the description of every parameter that takes station
/// codes, so `/docs` (which renders this document) and clients generated from it carry the
/// list that an unknown-station 400 points to.
struct StationCatalog;

/// The parameters that take catalog station codes.
const STATION_PARAMETERS: [&str; 3] = ["station_code", "stations", "location_name"];

impl Modify for StationCatalog {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let codes: Vec<&str> = Catalog::global().all().iter().map(|s| s.code.as_str()).collect();
        let list = format!("Catalog stations ({}): {}.", codes.len(), codes.join(", "));
        for item in openapi.paths.paths.values_mut() {
            let ops = [&mut item.get, &mut item.post].into_iter().flatten();
            for p in ops.flat_map(|op| op.parameters.iter_mut().flatten()) {
                if STATION_PARAMETERS.contains(&p.name.as_str()) {
                    let said = p.description.take().unwrap_or_default();
                    let said = said.trim_end_matches('.');
                    p.description = Some(if said.is_empty() { list.clone() } else { format!("{said}. {list}") });
                }
            }
        }
    }
}

/// Adds 401, 429 and 500 to every operation behind an API key (the auth middleware and
/// the rate limiter answer them before any handler runs; spec 7).
struct CommonResponses;

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let error = |d: &str| {
            RefOr::T(
                ResponseBuilder::new()
                    .description(d)
                    .content(
                        "application/json",
                        ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build(),
                    )
                    .build(),
            )
        };
        for item in openapi.paths.paths.values_mut() {
            for op in [&mut item.get, &mut item.post].into_iter().flatten() {
                if op.security.as_ref().is_none_or(Vec::is_empty) {
                    continue;
                }
                let r = &mut op.responses.responses;
                r.entry("401".into()).or_insert_with(|| error("invalid or missing API key"));
                r.entry("429".into()).or_insert_with(|| {
                    error("rate limit exceeded (per key, per minute and per day); Retry-After says when to retry")
                });
                r.entry("500".into()).or_insert_with(|| error("internal server error"));
            }
        }
    }
}

/// The push stream's path, with the server that serves it: its own HTTPS listener, not
/// the REST port this document is served from (which answers 404 there).
struct StreamServer;

/// Where the push stream listens unless `serve --stream-addr` says otherwise (`--demo`).
pub const DEMO_STREAM_PORT: &str = "8443";

impl Modify for StreamServer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let mut item = stream_path();
        item.servers = Some(vec![ServerBuilder::new()
            .url("https://{host}:{port}")
            .description(Some(
                "The push stream's own HTTPS listener (`wxlake serve --stream-addr HOST:PORT`, with --tls-cert and \
                 --tls-key; `serve --demo` listens on 127.0.0.1:8443 with a self-signed certificate). The REST port \
                 that serves this document does not serve the stream.",
            ))
            .parameter("host", ServerVariableBuilder::new().default_value("127.0.0.1").description(Some("stream host")))
            .parameter(
                "port",
                ServerVariableBuilder::new().default_value(DEMO_STREAM_PORT).description(Some("stream port")),
            )
            .build()]);
        openapi.paths.paths.insert(paths::V2_STREAM.to_string(), item);
        openapi.servers = Some(vec![ServerBuilder::new()
            .url("/")
            .description(Some("The REST listener serving this document (`wxlake serve --addr`)"))
            .build()]);
    }
}

/// The push stream lives on its own HTTPS listener; it is documented here so one document
/// describes the whole service (README "Push stream" has the same table).
fn stream_path() -> PathItem {
    let param = |name: &str, required: bool, desc: &str| {
        ParameterBuilder::new()
            .name(name)
            .parameter_in(ParameterIn::Query)
            .required(if required { Required::True } else { Required::False })
            .description(Some(desc))
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .build()
    };
    let error = |d: &str| {
        ResponseBuilder::new()
            .description(d)
            .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build())
            .build()
    };
    let op = OperationBuilder::new()
        .tag("stream")
        .operation_id(Some("openStream"))
        .summary(Some(
            "Push stream of server-sent events (HTTPS, on the stream listener of `servers`, not the REST port)",
        ))
        .description(Some(STREAM_DESCRIPTION))
        .security(SecurityRequirement::new(STREAM_KEY_SCHEME, Vec::<String>::new()))
        .parameter(param("stations", true, "comma-separated station codes (Professional: at most 5)"))
        .parameter(param(
            "last_event_id",
            false,
            "id of the last event received: replays what was missed (the Last-Event-ID header works too)",
        ))
        .response(
            "200",
            ResponseBuilder::new()
                .description("text/event-stream: events as `event:`, `id:`, `data:` lines")
                .content("text/event-stream", ContentBuilder::new().build())
                .build(),
        )
        .response("400", error("missing or unknown stations"))
        .response("401", error("missing or invalid api_key (the key goes in the api_key query parameter)"))
        .response("403", error("key not stream-enabled, or too many stations for the tier"))
        .response(
            "429",
            error("the user reconnects too fast (5 back to back, then one per 5 s); the Retry-After header says when to retry"),
        )
        .build();
    PathItem::new(HttpMethod::Get, op)
}

const STREAM_DESCRIPTION: &str = "The key goes in the URL: a stream-enabled key as the `api_key` query parameter \
(security scheme `stream_api_key`). Events: `connected` (no id; stations, user, timestamp), `heartbeat` (no id; every 30 s), \
`observation` (METAR, SPECI, HF-METAR; never one-minute data; spec 6 payload with svc_high/svc_low per logic, \
valid-through times, anomaly, suspect_temperature, data_quality), `dsm`, `cli`, `new_high` / `new_low` (per logic, \
with prev_value_f/prev_value_c, only for the trading day in progress; suspect temperatures never alert), `resync` \
(no id; reason unknown_last_event_id or last_event_id_expired: resynchronise over REST, the stream continues; \
slow_consumer: the client fell behind and is closed), `displaced` (no id; a newer connection of the same user took \
over, this one closes; the frame's `retry:` field and `retry_after_ms` say how long to wait before reconnecting). \
Reconnect with the last id received: missed events of the subscribed stations are replayed in order from a 24-hour \
durable log, then the stream continues live without gap or duplicate. Only data about a station's current or \
previous trading day is streamed; backfills are not.";

/// The document as JSON.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

pub async fn openapi_json() -> Response {
    Json(document()).into_response()
}

pub async fn docs_page() -> Html<&'static str> {
    Html(DOCS_HTML)
}

const DOCS_HTML: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>wxlake API</title>
<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h2{border-bottom:1px solid #ddd;padding-bottom:.3rem}.m{font-weight:bold;text-transform:uppercase;margin-right:.5rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left}
code{background:#f4f4f4;padding:0 .2rem}
</style></head><body>
<h1>wxlake API</h1>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). Authenticate with
<code>Authorization: Bearer &lt;API_KEY&gt;</code> or <code>X-API-Key: &lt;API_KEY&gt;</code>.</p>
<div id="doc">Loading…</div>
<script>
fetch('/openapi.json').then(r => r.json()).then(spec => {
  const esc = s => String(s ?? '').replace(/[&<>]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;'}[c]));
  let html = `<p>${esc(spec.info.description)}</p>`;
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'delete', 'patch'].includes(method)) continue;
      html += `<h2><span class="m">${esc(method)}</span><code>${esc(path)}</code></h2>`;
      if (op.summary) html += `<p><strong>${esc(op.summary)}</strong> <small>(operationId <code>${esc(op.operationId)}</code>)</small></p>`;
      if (item.servers) html += `<p>Served by ${item.servers.map(s => `<code>${esc(s.url)}</code>: ${esc(s.description)}`).join('; ')}</p>`;
      if (op.description) html += `<p>${esc(op.description)}</p>`;
      if (op.parameters) {
        html += '<table><tr><th>parameter</th><th>in</th><th>required</th><th>description</th></tr>';
        for (const p of op.parameters) html += `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td><td>${esc(p.description)}</td></tr>`;
        html += '</table>';
      }
      html += '<table><tr><th>status</th><th>meaning</th></tr>';
      for (const [code, r] of Object.entries(op.responses || {})) html += `<tr><td>${esc(code)}</td><td>${esc(r.description)}</td></tr>`;
      html += '</table>';
    }
  }
  document.getElementById('doc').innerHTML = html;
});
</script></body></html>"#;

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The relay's entry comes from its handler's annotation (parameters from
    /// `RelayQuery`), with what the hand-built entry said.
    #[test]
    fn the_relay_is_documented_from_its_handler() {
        let doc = serde_json::to_value(super::document()).unwrap();
        let op = &doc["paths"][super::paths::V2_STREAM_RELAY]["get"];
        assert_eq!(op["tags"], json!(["stream"]));
        assert_eq!(op["parameters"][0]["name"], "stations");
        assert_eq!(op["parameters"][0]["required"], true);
        assert_eq!(op["parameters"][0]["schema"], json!({"type": "string"}));
        assert_eq!(op["parameters"][1]["name"], "last_event_id");
        assert_eq!(op["parameters"][1]["required"], false);
        assert_eq!(op["parameters"][1]["schema"], json!({"type": "string"}));
        assert_eq!(op["responses"]["200"]["content"], json!({"text/event-stream": {}}));
        for status in ["400", "401", "403", "404", "429", "500"] {
            let schema = &op["responses"][status]["content"]["application/json"]["schema"]["$ref"];
            assert_eq!(schema, "#/components/schemas/ErrorBody", "{status}");
        }
        assert_eq!(op["security"], json!([{"bearer": []}, {"api_key": []}]));
    }
}
