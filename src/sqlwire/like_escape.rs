//! `LIKE ... ESCAPE 'c'` with an escape character other than the backslash, which
//! DataFusion refuses ("LIKE does not support escape_char other than the backslash") and
//! PostgreSQL clients send (SQLAlchemy's `autoescape`, `startswith` ... use `/`). The
//! statement rewrite ([`super::pg::client_sql`]) drops the `ESCAPE` and passes the pattern
//! through [`like_escape`] (`like_escape(pattern, 'c')`), which writes the same pattern
//! with the backslash as its escape: what `c` escaped, the backslash escapes, and a
//! backslash that was a plain character is escaped itself.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF, Signature, SimpleScalarUDF, Volatility};

/// The function's SQL name.
pub const NAME: &str = "like_escape";

/// `pattern` (escaped by `escape`) with the backslash as its escape character.
pub fn to_backslash(pattern: &str, escape: char) -> String {
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == escape {
            // The escaped character stands for itself; a trailing escape is kept as a
            // literal (PostgreSQL refuses it; nothing here depends on that).
            match chars.next() {
                Some(next @ ('%' | '_' | '\\')) => {
                    out.push('\\');
                    out.push(next);
                }
                Some(next) => out.push(next),
                None => out.push_str("\\\\"),
            }
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    out
}

/// `like_escape(pattern, escape)`: [`to_backslash`] over text columns or values.
pub fn udf() -> ScalarUDF {
    ScalarUDF::from(SimpleScalarUDF::new_with_signature(
        NAME,
        Signature::exact(vec![DataType::Utf8, DataType::Utf8], Volatility::Immutable),
        DataType::Utf8,
        Arc::new(|args| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let patterns = datafusion::common::cast::as_string_array(&arrays[0])?;
            let escapes = datafusion::common::cast::as_string_array(&arrays[1])?;
            let mut out = StringBuilder::new();
            for (pattern, escape) in patterns.iter().zip(escapes.iter()) {
                match (pattern, escape.map(|e| e.chars().collect::<Vec<_>>())) {
                    (Some(p), Some(e)) if e.len() == 1 => out.append_value(to_backslash(p, e[0])),
                    // An empty escape turns escaping off (PostgreSQL's `ESCAPE ''`).
                    (Some(p), Some(e)) if e.is_empty() => out.append_value(p.replace('\\', "\\\\")),
                    (Some(_), Some(e)) => {
                        return datafusion::common::exec_err!(
                            "invalid escape string: must be empty or one character, not {:?}",
                            e.iter().collect::<String>()
                        )
                    }
                    _ => out.append_null(),
                }
            }
            let out: ArrayRef = Arc::new(out.finish());
            Ok(if args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) {
                ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
            } else {
                ColumnarValue::Array(out)
            })
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_escape_becomes_the_backslash() {
        assert_eq!(to_backslash("pg/_%", '/'), "pg\\_%");
        assert_eq!(to_backslash("100/%", '/'), "100\\%");
        assert_eq!(to_backslash("a//b", '/'), "a/b");
        assert_eq!(to_backslash("c:\\dir", '#'), "c:\\\\dir");
        assert_eq!(to_backslash("a#%#_#\\", '#'), "a\\%\\_\\\\");
    }

    #[tokio::test]
    async fn like_matches_as_postgresql_with_the_escape() {
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.register_udf(udf());
        let sql = "SELECT 'pg_x' LIKE like_escape('pg/_%', '/') AS a, 'pgax' LIKE like_escape('pg/_%', '/') AS b, \
                   '50%' LIKE like_escape('50#%', '#') AS c, 'a\\b' LIKE like_escape('a\\b', '#') AS d";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string();
        assert!(text.contains("| true | false | true | true |"), "{text}");
    }
}
