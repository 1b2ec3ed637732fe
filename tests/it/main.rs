//! The one integration-test binary (link time is long: DataFusion). Modules by area.

mod accuracy_http;
mod cli;
mod cluster;
mod contract_cli;
mod contract_http;
mod crash;
mod dashboard;
mod delta;
mod feeds;
mod feeds_demosim;
mod feeds_modelfeeds;
mod feeds_nwsfeeds;
mod feeds_obsfeeds;
mod feeds_ops;
mod forecasts_http;
mod http;
mod lake;
mod layering;
mod live_config;
mod openapi;
mod s3;
mod slt;
mod sqlwire;
mod storage;
mod support;
mod webdriver;
