//! The one integration-test binary (link time is long: DataFusion). Modules by area.

mod cli;
mod lake;
mod support;
