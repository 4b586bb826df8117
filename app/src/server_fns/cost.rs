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
