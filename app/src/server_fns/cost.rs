//! The cost review for its page.

use leptos::prelude::*;

use crate::model::{
    cost::{CostQuery, CostReport},
    ServiceError,
};

/// What the fleet costs at today's allocations, grouped and sorted as `query` asks.
#[server(name = GetCostReport, prefix = "/api", endpoint = "cost_report")]
pub async fn cost_report(query: CostQuery) -> Result<CostReport, ServiceError> {
    crate::service::cost::report(&super::context()?, &query).await
}

/// The consolidation plan from today's allocations, for one cluster or all.
#[server(name = GetConsolidationPlan, prefix = "/api", endpoint = "consolidation_plan")]
pub async fn consolidation_plan(
    query: crate::model::cost::consolidate::PlanQuery,
) -> Result<crate::model::cost::consolidate::ConsolidationPlan, ServiceError> {
    crate::service::cost::plan(&super::context()?, &query).await
}

/// The sealed months, and `query`'s month at today's prices.
#[server(name = GetCostMonths, prefix = "/api", endpoint = "cost_months")]
pub async fn cost_months(
    query: crate::model::cost::MonthsQuery,
) -> Result<crate::model::cost::MonthsView, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::cost::sealing::view(&context, &actor, &query).await
}

/// Closed month `month` re-priced at today's prices (admins), with the reason.
#[server(name = RepriceMonth, prefix = "/api", endpoint = "reprice_month")]
pub async fn reprice_month(
    month: String,
    reason: String,
) -> Result<crate::model::cost::Repricing, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::cost::sealing::reprice(&context, &actor, &month, &reason).await
}

/// A month's reconciliation of the console's figures with Cost Explorer's, by day.
#[server(name = GetCostReconciliation, prefix = "/api", endpoint = "cost_reconciliation")]
pub async fn cost_reconciliation(
    query: crate::model::cost::ReconciliationQuery,
) -> Result<crate::model::cost::Reconciliation, ServiceError> {
    crate::service::cost::reconciliation::reconciliation(
        &super::context()?,
        &query,
        chrono::Utc::now(),
    )
    .await
}
