//! What the server says it is and how it is set, in PostgreSQL's terms, from one list:
//! the startup parameters ([`startup_parameters`]), `version()`, `SHOW`,
//! `current_setting()` and `pg_catalog.pg_settings` ([`register`]) all read it, so each
//! client's version probe gets the same answer: SQLAlchemy parses `version()`, Grafana
//! reads `current_setting('server_version_num')`, libpq and pgjdbc the startup parameter
//! `server_version`, pgjdbc's metadata `pg_settings`' `max_index_keys`.
//!
//! The version is the PostgreSQL whose catalogs and behaviour `datafusion-postgres`
//! imitates (16), with wxlake's and DataFusion's own versions beside it, where
//! PostgreSQL's builds name their distribution.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, StringArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{MemTable, TableProvider};
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{
    create_udf, ColumnarValue, ScalarUDF, Signature, SimpleScalarUDF, TypeSignature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion_postgres::pgwire::api::auth::DefaultServerParameterProvider;

/// The PostgreSQL release the server answers as.
pub const PG_VERSION: &str = "16.6";
/// [`PG_VERSION`] as `server_version_num` spells it.
pub const PG_VERSION_NUM: &str = "160006";

/// `server_version`: `16.6 (wxlake 0.1.0)`, as PostgreSQL's `16.6 (Debian 16.6-1)`.
pub fn server_version() -> String {
    format!("{PG_VERSION} (wxlake {})", env!("CARGO_PKG_VERSION"))
}

/// `version()`: `PostgreSQL 16.6 (wxlake 0.1.0, DataFusion 55.2.0) on x86_64-linux, 64-bit`.
pub fn version() -> String {
    format!(
        "PostgreSQL {PG_VERSION} (wxlake {}, DataFusion {}) on {}-{}, {}-bit",
        env!("CARGO_PKG_VERSION"),
        datafusion::DATAFUSION_VERSION,
        std::env::consts::ARCH,
        std::env::consts::OS,
        usize::BITS
    )
}

/// The parameters sent at startup: pgwire's defaults with the server's version, read-only
/// transactions and no superuser.
pub fn startup_parameters() -> DefaultServerParameterProvider {
    let mut params = DefaultServerParameterProvider::default();
    params.server_version = server_version();
    params.default_transaction_read_only = true;
    params.is_superuser = false;
    params
}

/// Every setting a client may read (`SHOW`, `current_setting`, `pg_settings`), by its
/// PostgreSQL name, with the value this server runs with. Those sent at startup come from
/// [`startup_parameters`]; the rest are PostgreSQL's fixed or default values that catalog
/// probes ask for.
pub fn settings() -> &'static [(&'static str, String)] {
    static SETTINGS: std::sync::OnceLock<Vec<(&'static str, String)>> = std::sync::OnceLock::new();
    SETTINGS.get_or_init(build_settings)
}

/// The list [`settings`] keeps (built once: `current_setting` reads it per row).
fn build_settings() -> Vec<(&'static str, String)> {
    let p = startup_parameters();
    let on_off = |b: bool| if b { "on" } else { "off" }.to_string();
    vec![
        ("server_version", p.server_version.clone()),
        ("server_version_num", PG_VERSION_NUM.to_string()),
        ("server_encoding", p.server_encoding.clone()),
        ("client_encoding", p.client_encoding.clone().unwrap_or_else(|| "UTF8".into())),
        ("integer_datetimes", on_off(p.integer_datetimes)),
        ("in_hot_standby", on_off(p.in_hot_standby)),
        ("is_superuser", on_off(p.is_superuser)),
        ("default_transaction_read_only", on_off(p.default_transaction_read_only)),
        ("transaction_read_only", on_off(p.default_transaction_read_only)),
        ("standard_conforming_strings", on_off(p.standard_conforming_strings)),
        ("search_path", p.search_path.clone()),
        ("TimeZone", p.time_zone.clone()),
        ("DateStyle", p.date_style.clone()),
        ("IntervalStyle", p.interval_style.clone()),
        ("max_index_keys", "32".into()),
        ("max_identifier_length", "63".into()),
        ("max_function_args", "100".into()),
        ("block_size", "8192".into()),
        ("lc_collate", "C".into()),
        ("lc_ctype", "C".into()),
        ("lc_messages", "C".into()),
        ("lc_monetary", "C".into()),
        ("lc_numeric", "C".into()),
        ("lc_time", "C".into()),
        ("default_transaction_isolation", "read committed".into()),
        ("transaction_isolation", "read committed".into()),
        ("extra_float_digits", "1".into()),
        ("bytea_output", "hex".into()),
        ("application_name", String::new()),
        ("statement_timeout", "0".into()),
    ]
}

/// The value of `name` (case-insensitive, as PostgreSQL's), if the server has it.
pub fn setting(name: &str) -> Option<String> {
    settings().iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())
}

/// `version()`, `current_setting(name [, missing_ok])` and the `pg_settings` table, into
/// `ctx` (whose `pg_catalog` is already set up): `version` replaces DataFusion's own.
pub fn register(ctx: &SessionContext) -> Result<Arc<dyn TableProvider>> {
    let version_text = version();
    ctx.register_udf(create_udf(
        "version",
        vec![],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |_| Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(version_text.clone()))))),
    ));
    let one_or_two = Signature::one_of(
        vec![TypeSignature::Exact(vec![DataType::Utf8]), TypeSignature::Exact(vec![DataType::Utf8, DataType::Boolean])],
        Volatility::Stable,
    );
    ctx.register_udf(ScalarUDF::from(SimpleScalarUDF::new_with_signature(
        "current_setting",
        one_or_two,
        DataType::Utf8,
        Arc::new(current_setting),
    )));
    pg_settings()
}

/// `current_setting`: an unknown name is PostgreSQL's error, or NULL when the second
/// argument (`missing_ok`) is true.
fn current_setting(args: &[ColumnarValue]) -> Result<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let names = datafusion::common::cast::as_string_array(&arrays[0])?;
    let missing_ok = arrays.get(1).map(|a| datafusion::common::cast::as_boolean_array(a)).transpose()?;
    let mut out = StringBuilder::new();
    for i in 0..names.len() {
        if names.is_null(i) {
            out.append_null();
            continue;
        }
        match setting(names.value(i)) {
            Some(v) => out.append_value(v),
            None if missing_ok.is_some_and(|m| m.is_valid(i) && m.value(i)) => out.append_null(),
            None => return exec_err!("unrecognized configuration parameter \"{}\"", names.value(i)),
        }
    }
    let array: ArrayRef = Arc::new(out.finish());
    Ok(if args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) {
        ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?)
    } else {
        ColumnarValue::Array(array)
    })
}

/// `pg_settings` with [`settings`]: `datafusion-pg-catalog`'s has one row.
fn pg_settings() -> Result<Arc<dyn TableProvider>> {
    let rows = settings();
    let text = |f: &dyn Fn(&(&str, String)) -> Option<String>| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<StringArray>())
    };
    let schema = Arc::new(Schema::new(
        ["name", "setting", "unit", "category", "short_desc", "context", "vartype", "source", "reset_val", "boot_val"]
            .map(|n| Field::new(n, DataType::Utf8, true))
            .to_vec(),
    ));
    let columns = vec![
        text(&|(n, _)| Some(n.to_string())),
        text(&|(_, v)| Some(v.clone())),
        text(&|_| None),
        text(&|_| Some("Preset Options".into())),
        text(&|_| None),
        text(&|_| Some("internal".into())),
        text(&|_| Some("string".into())),
        text(&|_| Some("default".into())),
        text(&|(_, v)| Some(v.clone())),
        text(&|(_, v)| Some(v.clone())),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns)?;
    Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_postgresql_shaped_and_agrees_with_the_version_number() {
        let v = version();
        assert!(v.starts_with(&format!("PostgreSQL {PG_VERSION} (wxlake ")), "{v}");
        assert!(v.contains(&format!("DataFusion {}", datafusion::DATAFUSION_VERSION)), "{v}");
        let (major, minor) = PG_VERSION.split_once('.').unwrap();
        let num: u32 = PG_VERSION_NUM.parse().unwrap();
        assert_eq!(num, major.parse::<u32>().unwrap() * 10_000 + minor.parse::<u32>().unwrap());
        assert!(server_version().starts_with(PG_VERSION));
        assert_eq!(setting("SERVER_VERSION").as_deref(), Some(server_version().as_str()));
        assert_eq!(setting("no_such_setting"), None);
    }

    #[tokio::test]
    async fn current_setting_and_pg_settings_read_the_same_list() {
        let ctx = SessionContext::new();
        let table = register(&ctx).unwrap();
        ctx.register_table("pg_settings", table).unwrap();
        let sql = "SELECT current_setting('server_version_num') AS n, current_setting('nope', true) AS missing, \
                   (SELECT setting FROM pg_settings WHERE name = 'max_index_keys') AS keys, version() AS v";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string();
        assert!(text.contains(PG_VERSION_NUM) && text.contains("| 32 ") && text.contains("PostgreSQL 16"), "{text}");
        let err = ctx.sql("SELECT current_setting('nope')").await.unwrap().collect().await.unwrap_err();
        assert!(err.to_string().contains("unrecognized configuration parameter \"nope\""), "{err}");
    }
}
