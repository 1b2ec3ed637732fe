//! A minimal W3C WebDriver client: the few commands the dashboard's browser test sends to
//! chromedriver, over the reqwest client the live feeds already build.
//!
//! Why not a WebDriver crate (fantoccini): its dependency tree turns on features of crates
//! that arrow and DataFusion share, so with it in dev-dependencies every test build
//! recompiles the whole query stack, for a handful of HTTP commands. A CDP client
//! (chromiumoxide) is heavier still.

use serde_json::{json, Value};

/// The W3C key under which an element reference is returned.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// One browser session.
pub struct Session {
    http: reqwest::Client,
    /// `http://127.0.0.1:<port>/session/<id>`
    base: String,
}

/// A WebDriver command's result, or the driver's error (`error: message`).
pub type Result<T> = std::result::Result<T, String>;

async fn send(http: &reqwest::Client, method: reqwest::Method, url: &str, body: Option<Value>) -> Result<Value> {
    let mut req = http.request(method, url);
    if let Some(body) = body {
        req = req.header("content-type", "application/json").body(body.to_string());
    }
    let resp = req.send().await.map_err(|e| format!("{url}: {e}"))?;
    let bytes = resp.bytes().await.map_err(|e| format!("{url}: {e}"))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("{url}: not JSON ({e})"))?;
    let value = v.get("value").cloned().unwrap_or(Value::Null);
    match value.get("error").and_then(Value::as_str) {
        Some(error) => Err(format!("{error}: {}", value["message"].as_str().unwrap_or(""))),
        None => Ok(value),
    }
}

impl Session {
    /// Opens a session on the driver at `driver` (`http://127.0.0.1:<port>`).
    pub async fn new(driver: &str, capabilities: Value) -> Result<Session> {
        let http = reqwest::Client::new();
        let body = json!({"capabilities": {"alwaysMatch": capabilities}});
        let v = send(&http, reqwest::Method::POST, &format!("{driver}/session"), Some(body)).await?;
        let id = v["sessionId"].as_str().ok_or_else(|| format!("no sessionId in {v}"))?;
        Ok(Session { http, base: format!("{driver}/session/{id}") })
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value> {
        send(&self.http, reqwest::Method::POST, &format!("{}{path}", self.base), Some(body)).await
    }

    pub async fn goto(&self, url: &str) -> Result<()> {
        self.post("/url", json!({"url": url})).await.map(drop)
    }

    pub async fn refresh(&self) -> Result<()> {
        self.post("/refresh", json!({})).await.map(drop)
    }

    /// Runs `script` (a function body: `return ...`) in the page.
    pub async fn execute(&self, script: &str) -> Result<Value> {
        self.post("/execute/sync", json!({"script": script, "args": []})).await
    }

    /// The element matching the CSS `selector`, as the driver's reference.
    pub async fn find(&self, selector: &str) -> Result<String> {
        let v = self.post("/element", json!({"using": "css selector", "value": selector})).await?;
        v[ELEMENT].as_str().map(str::to_string).ok_or_else(|| format!("no element reference in {v}"))
    }

    pub async fn click(&self, element: &str) -> Result<()> {
        self.post(&format!("/element/{element}/click"), json!({})).await.map(drop)
    }

    pub async fn send_keys(&self, element: &str, text: &str) -> Result<()> {
        self.post(&format!("/element/{element}/value"), json!({"text": text})).await.map(drop)
    }

    /// A Chrome DevTools Protocol command through chromedriver (e.g. clearing the cache).
    pub async fn cdp(&self, cmd: &str, params: Value) -> Result<Value> {
        self.post("/goog/cdp/execute", json!({"cmd": cmd, "params": params})).await
    }

    /// A PNG of the viewport.
    pub async fn screenshot(&self) -> Result<Vec<u8>> {
        let v = send(&self.http, reqwest::Method::GET, &format!("{}/screenshot", self.base), None).await?;
        base64_decode(v.as_str().ok_or("the screenshot is not a string")?)
    }

    /// Ends the session (the browser exits).
    pub async fn close(self) -> Result<()> {
        send(&self.http, reqwest::Method::DELETE, &self.base, None).await.map(drop)
    }
}

/// Standard base64 (the screenshot's encoding), padding optional.
fn base64_decode(text: &str) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(format!("not base64: byte {c:#04x}")),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

#[test]
fn base64_round_trips_known_values() {
    assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
    assert_eq!(base64_decode("iVBORw0KGgo").unwrap(), b"\x89PNG\r\n\x1a\n");
    assert!(base64_decode("a$b").is_err());
}
