//! The parameters of a statement as the client binds them: every `$n` of its text.
//!
//! The library's rewrites can drop some from the plan (it replaces a correlated subquery
//! in a select list by NULL, and with it SQLAlchemy's `$1` ... `$9` in `get_columns`), and
//! the library then reads the client's values by position among those left, so `$10`'s
//! type decodes `$1`'s value ("invalid digit found in string").

use datafusion::logical_expr::{lit, placeholder, Expr, LogicalPlan, LogicalPlanBuilder};

/// `plan` naming every parameter `$1` ... `$n` up to its highest again: a filter that is
/// always true names the missing ones; the optimizer removes it once the values are bound.
pub fn every_parameter(plan: LogicalPlan) -> LogicalPlan {
    let Ok(types) = plan.get_parameter_types() else { return plan };
    let numbers: Vec<usize> = types.keys().filter_map(|id| id.strip_prefix('$')?.parse().ok()).collect();
    let Some(&highest) = numbers.iter().max() else { return plan };
    if numbers.len() == highest {
        return plan;
    }
    let missing = (1..=highest).filter(|n| !numbers.contains(n));
    let named = missing.map(|n| placeholder(format!("${n}")).is_null()).fold(lit(true), Expr::or);
    LogicalPlanBuilder::from(plan.clone()).filter(named).and_then(|b| b.build()).unwrap_or(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn dropped_parameters_are_named_again_and_cost_nothing_once_bound() {
        let ctx = SessionContext::new();
        let plan = ctx.state().create_logical_plan("SELECT $3 AS c, $4 AS d").await.unwrap();
        let filled = every_parameter(plan);
        let mut ids: Vec<String> = filled.get_parameter_types().unwrap().into_keys().collect();
        ids.sort();
        assert_eq!(ids, ["$1", "$2", "$3", "$4"]);
        let values = datafusion::common::ParamValues::List(
            ["a", "b", "c", "d"].map(|v| datafusion::common::ScalarValue::from(v).into()).to_vec(),
        );
        let bound = filled.with_param_values(values).unwrap();
        let batches = ctx.execute_logical_plan(bound).await.unwrap().collect().await.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string();
        assert!(text.contains("| c | d |"), "{text}");
        let whole = ctx.state().create_logical_plan("SELECT $1 AS a").await.unwrap();
        assert_eq!(every_parameter(whole.clone()), whole, "nothing missing: unchanged");
    }
}
