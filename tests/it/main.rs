//! The one integration-test binary (link time is long: DataFusion). Modules by area.

mod accuracy_http;
mod cli;
mod contract_cli;
mod contract_http;
mod crash;
mod feeds;
mod forecasts_http;
mod http;
mod lake;
mod layering;
mod openapi;
mod slt;
mod sqlwire;
mod support;
