//! `SHOW name` of the server's settings ([`server_settings`]), ahead of
//! `datafusion-postgres`' `SHOW`, which names DataFusion as `server_version` and knows no
//! `server_version_num`. A setting the client has `SET` on this connection is left to the
//! library, which keeps those per connection.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::Statement;
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo, QueryResponse, Response};
use datafusion_postgres::pgwire::api::{ClientInfo, Type};
use datafusion_postgres::pgwire::error::PgWireResult;

use crate::sqlwire::server_settings;

use super::hooks::Answer;

/// The setting a `SHOW` names and its value, when it is the server's to answer.
fn shown(statement: &Statement, client: &dyn ClientInfo) -> Option<(String, String)> {
    let Statement::ShowVariable { variable } = statement else { return None };
    let [name] = variable.as_slice() else { return None };
    let lower = name.value.to_lowercase();
    if client.metadata().contains_key(&lower) {
        return None;
    }
    let value = server_settings::setting(&lower)?;
    Some((lower, value))
}

/// One row, one text column named after the setting, as PostgreSQL answers `SHOW`.
fn answer(name: &str, value: &str) -> PgWireResult<Response> {
    let fields = Arc::new(vec![FieldInfo::new(name.to_string(), None, None, Type::TEXT, FieldFormat::Text)]);
    let mut encoder = DataRowEncoder::new(Arc::clone(&fields));
    encoder.encode_field(&Some(value))?;
    let row = encoder.take_row();
    let mut response = QueryResponse::new(fields, futures::stream::iter([Ok(row)]));
    response.set_command_tag("SHOW");
    Ok(Response::Query(response))
}

/// The answer to `SHOW` of a server setting.
pub struct ShowSetting;

impl Answer for ShowSetting {
    fn answer(&self, statement: &Statement, client: &mut dyn HookClient) -> Option<PgWireResult<Response>> {
        let (name, value) = shown(statement, client)?;
        Some(answer(&name, &value))
    }

    fn returns_no_rows(&self, _statement: &Statement) -> bool {
        false
    }
}
