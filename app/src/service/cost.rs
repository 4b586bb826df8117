//! Cost review: what the fleet costs at today's allocations, from the in-memory snapshot and
//! the console's prices. Never waits on AWS.

use crate::{
    model::{
        cost::{report as price, CostQuery, CostReport},
        ServiceError,
    },
    service::context::ServiceContext,
};

/// The report for `query`; before the first snapshot, an error that says to wait.
pub fn report(context: &ServiceContext, query: &CostQuery) -> Result<CostReport, ServiceError> {
    let state = context.fleet.state();
    let Some(snapshot) = state.snapshot else {
        return Err(ServiceError::unavailable(
            "the fleet has not been read yet, so there is nothing to price; try again in a few seconds",
        ));
    };
    price(&snapshot, &context.prices, query).map_err(ServiceError::invalid)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::service::fake::Fake;

    #[test]
    fn the_report_prices_the_snapshot_and_refuses_an_unknown_cluster() {
        let fake = Fake::new();
        let context = fake.context();
        let report = report(&context, &CostQuery::default()).unwrap();
        assert!(report.total_cents > 0, "{report:?}");
        assert_eq!(
            report.rows.iter().map(|r| r.cost_cents).sum::<i64>(),
            report.total_cents
        );
        let error = super::report(
            &context,
            &CostQuery {
                cluster: Some("nope".into()),
                ..CostQuery::default()
            },
        )
        .unwrap_err();
        assert_eq!(error.status(), 400, "{error:?}");
    }
}
