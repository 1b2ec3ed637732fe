//! `COPY (query) TO STDOUT` and `COPY table TO STDOUT`: the one form of COPY analysts
//! get, because DuckDB's postgres extension (`ATTACH ... (TYPE postgres)`) and `psql \copy`
//! read table data that way. The rows go to the client on the connection, like a query's;
//! nothing touches a file. Every other COPY (`TO 'file'`, `TO PROGRAM`, `FROM STDIN`,
//! `FROM 'file'`) is refused as the write it is ([`refusal`]).
//!
//! Served on both protocols: the simple one (psql, DuckDB, psycopg's `copy()`) and the
//! extended one (libpq's `PQexecParams`), where the statement describes as returning no
//! rows (NoData, as PostgreSQL answers) and its Execute answers with the copy.
//!
//! The query is planned and checked read-only as any other ([`guard::check_plan`]), runs
//! under the same bounds (the session's planner), and streams: each row becomes one
//! CopyData message as its batch arrives.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::DFSchema;
use datafusion::logical_expr::{EmptyRelation, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement,
};
use datafusion_postgres::arrow_pg::datatypes::arrow_schema_to_pg_fields;
use datafusion_postgres::arrow_pg::encoder::encode_value;
use datafusion_postgres::pgwire::api::portal::Format;
use datafusion_postgres::pgwire::api::results::{
    CopyCsvOptions, CopyEncoder, CopyResponse, CopyTextOptions, FieldInfo, Response,
};
use datafusion_postgres::pgwire::error::{PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::copy::CopyData;
use futures::StreamExt;

use crate::sqlwire::error::WireError;
use crate::sqlwire::guard;

/// The formats of `COPY ... TO STDOUT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv { header: bool },
    Binary,
}

/// A `COPY ... TO STDOUT` as the query it copies and its format; `None` for every other
/// statement (and every other COPY, which the read-only check refuses).
pub fn copy_to_stdout(statement: &Statement) -> Option<Result<(String, CopyFormat), WireError>> {
    let Statement::Copy { source, to: true, target: CopyTarget::Stdout, options, legacy_options, .. } = statement
    else {
        return None;
    };
    let sql = match source {
        CopySource::Query(q) => q.to_string(),
        CopySource::Table { table_name, columns } if columns.is_empty() => format!("SELECT * FROM {table_name}"),
        CopySource::Table { table_name, columns } => {
            let cols: Vec<String> = columns.iter().map(ToString::to_string).collect();
            format!("SELECT {} FROM {table_name}", cols.join(", "))
        }
    };
    Some(format_of(options, legacy_options).map(|f| (sql, f)))
}

fn format_of(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<CopyFormat, WireError> {
    let unsupported = |what: String| {
        WireError::ReadOnly(format!("COPY TO STDOUT supports FORMAT text|csv|binary and HEADER, not {what}"))
    };
    let mut format = CopyFormat::Text;
    let mut header = false;
    for o in options {
        match o {
            CopyOption::Format(f) => {
                format = match f.value.to_ascii_lowercase().as_str() {
                    "text" => CopyFormat::Text,
                    "csv" => CopyFormat::Csv { header: false },
                    "binary" => CopyFormat::Binary,
                    other => return Err(unsupported(format!("FORMAT {other}"))),
                }
            }
            CopyOption::Header(h) => header = *h,
            other => return Err(unsupported(other.to_string())),
        }
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Binary => format = CopyFormat::Binary,
            CopyLegacyOption::Csv(csv) => {
                format = CopyFormat::Csv { header: false };
                for c in csv {
                    match c {
                        CopyLegacyCsvOption::Header => header = true,
                        other => return Err(unsupported(other.to_string())),
                    }
                }
            }
            CopyLegacyOption::Header => header = true,
            other => return Err(unsupported(other.to_string())),
        }
    }
    Ok(match format {
        CopyFormat::Csv { .. } => CopyFormat::Csv { header },
        other => other,
    })
}

/// Any COPY that [`copy_to_stdout`] does not serve, refused with the message of every other
/// write (DataFusion's own parser knows only `COPY ... TO`: planned, `FROM` would fail as a
/// syntax error rather than as the write it is).
pub fn refusal(statement: &Statement) -> Option<WireError> {
    matches!(statement, Statement::Copy { .. }).then(|| WireError::ReadOnly("DML not supported: COPY".into()))
}

/// The plan of the query a `COPY ... TO STDOUT` copies, checked read-only.
pub async fn checked_plan(ctx: &SessionContext, sql: &str) -> Result<LogicalPlan, WireError> {
    let plan = ctx
        .state()
        .create_logical_plan(sql)
        .await
        .map_err(|e| guard::explain_missing_function(WireError::from_engine(e)))?;
    guard::check_plan(&plan)?;
    Ok(plan)
}

/// What a `COPY ... TO STDOUT` describes as on the extended protocol: no columns (NoData),
/// its rows come as COPY data.
pub fn described() -> LogicalPlan {
    LogicalPlan::EmptyRelation(EmptyRelation { produce_one_row: false, schema: Arc::new(DFSchema::empty()) })
}

/// Plans `sql` (checked read-only) and answers it as COPY data in `format`.
pub async fn copy_out(ctx: &SessionContext, sql: &str, format: CopyFormat) -> Result<Response, WireError> {
    let plan = checked_plan(ctx, sql).await?;
    let df = ctx.execute_logical_plan(plan).await.map_err(WireError::from_engine)?;
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let wire_format = if format == CopyFormat::Binary { Format::UnifiedBinary } else { Format::UnifiedText };
    let fields = Arc::new(arrow_schema_to_pg_fields(&schema, &wire_format, None).map_err(pg_to_wire)?);
    let stream = df.execute_stream().await.map_err(WireError::from_engine)?;
    let columns = fields.len();
    let any_row = Arc::new(AtomicBool::new(false));
    let mut encoder = new_encoder(format, &fields);
    let header = match format {
        CopyFormat::Csv { header: true } => {
            let names: Vec<String> = fields.iter().map(|f| csv_quoted(f.name())).collect();
            Some(Ok(CopyData::new(format!("{}\n", names.join(",")).into())))
        }
        _ => None,
    };
    let rows = {
        let any_row = Arc::clone(&any_row);
        stream.flat_map(move |batch| {
            let out: Vec<PgWireResult<CopyData>> = match batch {
                Ok(b) => encode_batch(&mut encoder, &b, &fields),
                Err(e) => vec![Err(PgWireError::ApiError(Box::new(WireError::from_engine(e))))],
            };
            if !out.is_empty() {
                any_row.store(true, Ordering::Relaxed);
            }
            futures::stream::iter(out)
        })
    };
    // A binary copy of no rows still starts with the PGCOPY header (the encoder writes it
    // with the first row).
    let empty_binary_header = futures::stream::once(async move {
        (!any_row.load(Ordering::Relaxed) && format == CopyFormat::Binary).then(|| Ok(CopyData::new(pgcopy_header())))
    })
    .filter_map(futures::future::ready);
    let data = futures::stream::iter(header).chain(rows).chain(empty_binary_header);
    let code = i8::from(format == CopyFormat::Binary);
    Ok(Response::CopyOut(CopyResponse::new(code, columns, data)))
}

fn new_encoder(format: CopyFormat, fields: &Arc<Vec<FieldInfo>>) -> CopyEncoder {
    match format {
        CopyFormat::Text => CopyEncoder::new_text(Arc::clone(fields), CopyTextOptions::default()),
        CopyFormat::Csv { .. } => CopyEncoder::new_csv(Arc::clone(fields), CopyCsvOptions::default()),
        CopyFormat::Binary => CopyEncoder::new_binary(Arc::clone(fields)),
    }
}

/// One CopyData per row of `batch`.
fn encode_batch(encoder: &mut CopyEncoder, batch: &RecordBatch, fields: &[FieldInfo]) -> Vec<PgWireResult<CopyData>> {
    let schema = batch.schema();
    let mut out = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        for (col, array) in batch.columns().iter().enumerate() {
            if let Err(e) = encode_value(encoder, array, row, schema.field(col), &fields[col]) {
                out.push(Err(e));
                return out;
            }
        }
        out.push(Ok(encoder.take_copy()));
    }
    out
}

/// PostgreSQL's binary COPY header: signature, flags, no extension.
fn pgcopy_header() -> bytes::Bytes {
    let mut h = b"PGCOPY\n\xff\r\n\0".to_vec();
    h.extend_from_slice(&0i32.to_be_bytes());
    h.extend_from_slice(&0i32.to_be_bytes());
    h.into()
}

fn csv_quoted(name: &str) -> String {
    if name.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", name.replace('"', "\"\""))
    } else {
        name.to_string()
    }
}

fn pg_to_wire(e: PgWireError) -> WireError {
    WireError::Engine(datafusion::error::DataFusionError::External(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn parsed(sql: &str) -> Statement {
        Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap().remove(0)
    }

    #[test]
    fn only_copy_to_stdout_is_served() {
        let (sql, f) = copy_to_stdout(&parsed("COPY (SELECT 1 AS a) TO STDOUT (FORMAT binary)")).unwrap().unwrap();
        assert_eq!((sql.as_str(), f), ("SELECT 1 AS a", CopyFormat::Binary));
        let (sql, f) =
            copy_to_stdout(&parsed("COPY stations (station_code, name) TO STDOUT WITH (FORMAT csv, HEADER)"))
                .unwrap()
                .unwrap();
        assert_eq!((sql.as_str(), f), ("SELECT station_code, name FROM stations", CopyFormat::Csv { header: true }));
        let (_, f) = copy_to_stdout(&parsed("COPY stations TO STDOUT")).unwrap().unwrap();
        assert_eq!(f, CopyFormat::Text);
        for other in [
            "COPY (SELECT 1) TO '/tmp/x.csv'",
            "COPY stations FROM STDIN",
            "COPY stations FROM '/etc/passwd'",
            "COPY (SELECT 1) TO PROGRAM 'sh'",
            "SELECT 1",
        ] {
            assert!(copy_to_stdout(&parsed(other)).is_none(), "{other}");
        }
        for refused in [
            "COPY stations FROM STDIN",
            "COPY stations FROM '/etc/passwd'",
            "COPY (SELECT 1) TO '/tmp/x.csv'",
            "COPY (SELECT 1) TO PROGRAM 'sh'",
        ] {
            let e = refusal(&parsed(refused)).expect(refused).to_string();
            assert_eq!(e, "read-only SQL: DML not supported: COPY", "{refused}");
        }
        assert!(refusal(&parsed("SELECT 1")).is_none());
        let e = copy_to_stdout(&parsed("COPY stations TO STDOUT (DELIMITER '|')")).unwrap().unwrap_err();
        assert!(e.to_string().contains("not DELIMITER"), "{e}");
    }

    #[tokio::test]
    async fn binary_copy_has_the_pgcopy_framing_even_when_empty() {
        let ctx = SessionContext::new();
        for (sql, rows) in [("SELECT 1 AS a WHERE false", 0), ("SELECT * FROM (VALUES (1), (2)) t(a)", 2)] {
            let Response::CopyOut(mut r) = copy_out(&ctx, sql, CopyFormat::Binary).await.unwrap() else {
                panic!("a copy response")
            };
            let mut data: Vec<u8> = Vec::new();
            while let Some(d) = r.data_stream().next().await {
                data.extend_from_slice(&d.unwrap().data);
            }
            assert!(data.starts_with(b"PGCOPY\n\xff\r\n\0"), "{sql}: {data:?}");
            assert!(data.ends_with(&[0xff, 0xff]), "{sql}");
            // header 19 bytes, per row 2 (field count) + 4 (length) + 8 (int64), trailer 2
            assert_eq!(data.len(), 19 + rows * 14 + 2, "{sql}");
        }
    }
}
