//! The SQL functions wxlake adds to DataFusion's for its jobs: registered in every session
//! that runs a job's statements ([`super::statements`]), and given to every process of a
//! cluster (the scheduler plans with them, the executors run them).

use std::sync::Arc;

use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

/// Every function: the `observed_extremes` replay and the rolling sums of `accuracy_trends`.
pub fn all() -> Vec<Arc<ScalarUDF>> {
    vec![super::replay_function::udf(), super::rolling_sums::udf()]
}

/// Registers [`all`] in `ctx`.
pub fn register(ctx: &SessionContext) {
    for f in all() {
        ctx.register_udf((*f).clone());
    }
}
