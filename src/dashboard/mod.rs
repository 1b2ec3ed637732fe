//! The dashboard: a browser page served at `/` that a trader keeps open all day (issue 19).
//!
//! The server side is thin on purpose. [`pages`] serves one static page shell for every
//! dashboard view (`/`, `/station/{code}`, `/accuracy/{code}`) and the static assets
//! (the page's scripts and styles, and the vendored uPlot charting library), all without a
//! key: none of them holds data. Everything the page shows, it fetches from the REST API
//! with the key in the `X-API-Key` header (kept in the browser's session storage, never in
//! a URL), so the values are the API's by construction and tiers are the API's; live updates
//! come from the stream's same-origin relay (`api::stream_relay`).
//!
//! Not part of the REST API: the REST router serves these routes (and answers an unknown
//! asset in its JSON error format), the dashboard imports nothing of it.
//!
//! Why uPlot, vendored: plots come from a well-kept library, not hand-drawn geometry; uPlot
//! is one dependency-free file, fast with thousands of points, and small enough that the
//! whole page stays far below the 300 KB budget. It is copied from its npm package
//! into `assets/` and committed, with the `package.json`/`package-lock.json` and the script
//! that rebuild it in `assets/vendor/`, so `cargo run` needs neither npm nor the network,
//! and the page works offline (no CDN).

pub mod pages;
