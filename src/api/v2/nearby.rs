//! `GET /api/v2/nearby.php` (spec 4.7, beta, Developer and Enterprise): stations around a
//! station by great-circle distance, or an explicit list, each with its latest observation.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::observations::{latest_observation, latest_observation_as_of};
use crate::api::auth::{require_premium, Caller};
use crate::api::error::{ApiError, ApiResult};
use crate::api::json::Json;
use crate::api::observation_json::ObservationV2;
use crate::api::params::{self, QueryParams};
use crate::api::state::AppState;
use crate::catalog::{distance_km, Catalog, Station};

/// A station chosen for the answer, with its distance when the search was by radius.
type Picked<'a> = (&'a Station, Option<f64>);

/// Default and largest search radius.
pub const DEFAULT_RADIUS_KM: f64 = 100.0;
pub const MAX_RADIUS_KM: f64 = 2000.0;

/// One station of a nearby answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NearbyStation {
    pub station_code: String,
    pub name: String,
    pub city: String,
    pub latitude: f64,
    pub longitude: f64,
    pub timezone: String,
    pub units: String,
    /// Great-circle distance from the reference station (radius search only).
    pub distance_km: Option<f64>,
    /// The station's latest observation however old (its time says how old), or null when
    /// there is none.
    pub latest: Option<ObservationV2>,
}

/// The nearby answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Nearby {
    /// The reference station of a radius search; null for a `stations` lookup.
    pub reference: Option<String>,
    /// The radius searched; null for a `stations` lookup.
    pub radius_km: Option<f64>,
    /// Radius search: nearest first, the reference station excluded; lookup: in the order
    /// asked.
    pub stations: Vec<NearbyStation>,
}

/// Query of `GET /api/v2/nearby.php`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NearbyQuery {
    /// reference station for a radius search
    #[param(value_type = Option<String>)]
    pub station_code: Option<String>,
    /// radius in km (default 100, at most 2000)
    #[param(value_type = Option<f64>, minimum = 0, maximum = 2000)]
    pub radius_km: Option<String>,
    /// instead: comma-separated station codes to look up
    #[param(value_type = Option<String>)]
    pub stations: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/v2/nearby.php",
    tag = "analytics",
    operation_id = "getNearbyStations",
    summary = "Beta: stations around a station, or a list of stations, each with its latest observation",
    description = "Developer and Enterprise. `station_code` (+ `radius_km`, default 100, at most 2,000): the catalog \
                   stations within that great-circle distance, nearest first, the reference station excluded. Or \
                   `stations=A,B,...`: those stations in the order asked. Each comes with its latest observation \
                   however old (as observations.php `mode=latest`), null when it has none.",
    params(NearbyQuery, crate::api::as_of::AsOfQuery),
    responses(
        (status = 200, description = "the stations found, each with its latest observation", body = Nearby),
        (status = 400, description = "neither station_code nor stations, bad radius, unknown station, or a parameter given twice", body = crate::api::error::ErrorBody),
        (status = 403, description = "Professional and Testing keys: Access Denied", body = crate::api::error::ErrorBody),
    ),
    security(("bearer" = []), ("api_key" = []))
)]
pub async fn handler(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    as_of: crate::api::as_of::AsOf,
    QueryParams(q): QueryParams<NearbyQuery>,
) -> ApiResult<Response> {
    require_premium(&caller)?;
    let catalog = Catalog::global();
    let (reference, radius, picked): (Option<&Station>, Option<f64>, Vec<Picked>) =
        if let Some(list) = params::value(&q.stations) {
            let mut out = Vec::new();
            for code in list.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                let s = catalog.lookup(code).ok_or_else(|| params::unknown_station("stations", code))?;
                out.push((s, None));
            }
            (None, None, out)
        } else {
            if params::value(&q.station_code).is_none() {
                return Err(ApiError::bad_request(
                    "Missing required parameter: station_code or stations",
                    "give station_code (and radius_km) for a radius search, or stations=A,B for a lookup",
                ));
            }
            let center = params::station("station_code", &q.station_code)?;
            let radius = match params::value(&q.radius_km) {
                None => DEFAULT_RADIUS_KM,
                Some(r) => r.parse::<f64>().ok().filter(|r| (0.0..=MAX_RADIUS_KM).contains(r)).ok_or_else(|| {
                    ApiError::bad_request(
                        format!("Invalid radius_km: {r}"),
                        format!("a number of km from 0 to {MAX_RADIUS_KM}"),
                    )
                })?,
            };
            let mut near: Vec<Picked> = catalog
                .all()
                .iter()
                .filter(|s| s.code != center.code)
                .map(|s| (s, distance_km(center.latitude, center.longitude, s.latitude, s.longitude)))
                .filter(|(_, d)| *d <= radius)
                .map(|(s, d)| (s, Some((d * 10.0).round() / 10.0)))
                .collect();
            near.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal));
            (Some(center), Some(radius), near)
        };
    let mut stations = Vec::with_capacity(picked.len());
    for (s, d) in picked {
        let found = match as_of.0 {
            None => latest_observation(&state, s).await?,
            Some(t) => latest_observation_as_of(&state, s, t).await?,
        };
        let latest = found.map(|(m, r)| ObservationV2::new(&m, s, r.as_ref_pair()));
        stations.push(NearbyStation {
            station_code: s.code.clone(),
            name: s.name.clone(),
            city: s.city.clone(),
            latitude: s.latitude,
            longitude: s.longitude,
            timezone: s.timezone.name().to_string(),
            units: s.units.as_str().to_string(),
            distance_km: d,
            latest,
        });
    }
    Ok(as_of.echo(
        Json(Nearby { reference: reference.map(|s| s.code.clone()), radius_km: radius, stations }).into_response(),
    ))
}
