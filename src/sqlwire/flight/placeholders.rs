//! `?` placeholders, the ADBC dbapi's and JDBC's paramstyle, numbered as DataFusion's `$n`
//! in the order they appear: DataFusion plans every `?` as one parameter named `?`, so
//! a second one fails ("Conflicting types for id ?") and binding fails ("cannot parse
//! integer from empty string"). The text is tokenized in the session's dialect and only
//! placeholder tokens change: a `?` in a string literal, an identifier or a comment stays.

use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::sqlwire::error::WireError;

/// `sql` with its `?` placeholders as `$1`, `$2` ... (`None` when it has none, or does not
/// tokenize: the planner then reports it). Mixing `?` and `$n` is refused: which `$n` a
/// `?` would be is ambiguous.
pub fn number(sql: &str, dialect: &dyn Dialect) -> Result<Option<String>, WireError> {
    if !sql.contains('?') {
        return Ok(None);
    }
    let Ok(mut tokens) = Tokenizer::new(dialect, sql).tokenize() else { return Ok(None) };
    let is_question = |t: &Token| matches!(t, Token::Placeholder(p) if p == "?");
    let questions = tokens.iter().filter(|t| is_question(t)).count();
    if questions == 0 {
        return Ok(None);
    }
    if tokens.iter().any(|t| matches!(t, Token::Placeholder(p) if p.starts_with('$'))) {
        return Err(WireError::ReadOnly(
            "use either ? or $1, $2 ... placeholders in one statement, not both".to_string(),
        ));
    }
    let mut n = 0;
    for t in tokens.iter_mut().filter(|t| is_question(t)) {
        n += 1;
        *t = Token::Placeholder(format!("${n}"));
    }
    Ok(Some(tokens.iter().map(ToString::to_string).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::{GenericDialect, PostgreSqlDialect};

    #[test]
    fn question_marks_become_numbered_in_order_and_nothing_else_changes() {
        let d = GenericDialect {};
        assert_eq!(
            number("SELECT * FROM t WHERE a = ? AND b > ? -- why?\nLIMIT ?", &d).unwrap().as_deref(),
            Some("SELECT * FROM t WHERE a = $1 AND b > $2 -- why?\nLIMIT $3")
        );
        assert_eq!(
            number("SELECT 'a?b', \"c?\" FROM t WHERE x = ?", &d).unwrap().as_deref(),
            Some("SELECT 'a?b', \"c?\" FROM t WHERE x = $1")
        );
        assert_eq!(number("SELECT $1, '?'", &d).unwrap(), None);
        assert_eq!(number("SELECT 1", &d).unwrap(), None);
        assert!(number("SELECT ? , $1", &d).is_err());
        // PostgreSQL's dialect reads `?` as an operator: nothing to number there.
        assert_eq!(number("SELECT ?", &PostgreSqlDialect {}).unwrap(), None);
    }
}
