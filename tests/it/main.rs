//! The one integration-test binary (link time is long: DataFusion). Modules by area.

mod accuracy_http;
mod cli;
mod crash;
mod forecasts_http;
mod http;
mod lake;
mod openapi;
mod slt;
mod support;
