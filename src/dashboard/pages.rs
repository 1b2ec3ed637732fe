//! The dashboard's page shell and static assets, compiled into the binary.
//!
//! One list ([`ASSETS`]) names every file with its content type; the router serves the
//! list, the shell links to it, and a test checks the two agree. Assets are revalidated by
//! ETag (a hash of the bytes) so an upgraded binary never serves a stale script from the
//! browser's cache.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The page shell served for every view.
const SHELL: &str = include_str!("assets/index.html");

/// Every static asset: name under [`crate::api::paths::DASHBOARD_ASSETS`], content type, bytes.
pub const ASSETS: &[(&str, &str, &[u8])] = &[
    ("uplot.min.js", "text/javascript; charset=utf-8", include_bytes!("assets/uplot.min.js")),
    ("uplot.min.css", "text/css; charset=utf-8", include_bytes!("assets/uplot.min.css")),
    ("app.css", "text/css; charset=utf-8", include_bytes!("assets/app.css")),
    ("format.js", "text/javascript; charset=utf-8", include_bytes!("assets/format.js")),
    ("api.js", "text/javascript; charset=utf-8", include_bytes!("assets/api.js")),
    ("live.js", "text/javascript; charset=utf-8", include_bytes!("assets/live.js")),
    ("overview.js", "text/javascript; charset=utf-8", include_bytes!("assets/overview.js")),
    ("day_data.js", "text/javascript; charset=utf-8", include_bytes!("assets/day_data.js")),
    ("day_chart.js", "text/javascript; charset=utf-8", include_bytes!("assets/day_chart.js")),
    ("day_panels.js", "text/javascript; charset=utf-8", include_bytes!("assets/day_panels.js")),
    ("day_live.js", "text/javascript; charset=utf-8", include_bytes!("assets/day_live.js")),
    ("day.js", "text/javascript; charset=utf-8", include_bytes!("assets/day.js")),
    ("accuracy.js", "text/javascript; charset=utf-8", include_bytes!("assets/accuracy.js")),
    ("app.js", "text/javascript; charset=utf-8", include_bytes!("assets/app.js")),
    ("uplot.LICENSE", "text/plain; charset=utf-8", include_bytes!("assets/uplot.LICENSE")),
    ("favicon.ico", "image/x-icon", include_bytes!("assets/favicon.ico")),
];

/// `GET /favicon.ico`: the page's icon (browsers ask for it on every page; also linked
/// from the shell as an asset).
pub async fn favicon(headers: HeaderMap) -> Response {
    match asset(Path("favicon.ico".to_string()), headers).await {
        Ok(resp) => resp,
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// What the page may load and talk to: only this origin (the key never leaves it), no
/// inline script, no framing.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// `GET /`, `/station/{code}`, `/accuracy/{code}`: the shell (the script reads the path).
pub async fn shell() -> Response {
    let mut resp = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], SHELL).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// `GET /dashboard/{file}`: one asset of [`ASSETS`], 304 when the browser has it;
/// `Err(file)` for a name that is no asset (the router answers it in its error format).
pub async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Result<Response, String> {
    let Some(i) = ASSETS.iter().position(|(name, _, _)| *name == file) else {
        return Err(file);
    };
    let (_, content_type, bytes) = ASSETS[i];
    let etag = &etags()[i];
    let fresh = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| v == etag);
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, content_type)], bytes).into_response()
    };
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    Ok(resp)
}

/// The ETag of each asset, in [`ASSETS`] order (computed once).
fn etags() -> &'static [String] {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        ASSETS.iter().map(|(_, _, bytes)| format!("\"{}\"", hex::encode(&Sha256::digest(bytes)[..12]))).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shell loads exactly the listed scripts and styles (no file left out or unserved),
    /// all from this origin.
    #[test]
    fn the_shell_links_every_asset_and_only_listed_ones() {
        let prefix = format!("{}/", crate::api::paths::DASHBOARD_ASSETS.trim_end_matches("/{file}"));
        let linked: Vec<&str> = SHELL.split(['"', '\'']).filter_map(|s| s.strip_prefix(prefix.as_str())).collect();
        for (name, _, _) in ASSETS {
            if !name.ends_with("LICENSE") {
                assert!(linked.contains(name), "{name} is not linked from index.html");
            }
        }
        for l in &linked {
            assert!(ASSETS.iter().any(|(n, _, _)| n == l), "index.html links {l}, which is not served");
        }
        assert!(!SHELL.contains("http://") && !SHELL.contains("https://"), "the shell loads nothing from elsewhere");
    }

    /// The page's budget (issue 19): all assets at most 300 KB even uncompressed here.
    #[test]
    fn assets_stay_within_the_budget() {
        let total: usize = ASSETS.iter().map(|(_, _, b)| b.len()).sum::<usize>() + SHELL.len();
        assert!(total <= 300 * 1024, "dashboard assets are {total} bytes");
    }
}
