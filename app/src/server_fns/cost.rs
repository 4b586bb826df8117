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
