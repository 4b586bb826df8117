//! Approvals and budgets for the pages: the requests with what the person may do, one request,
//! a decision about it, every team's budget use, and how many requests wait on the person.

use leptos::prelude::*;

use crate::model::{
    approval::{ApprovalFilter, ApprovalItem, ApprovalRequest, ApprovalsView},
    budget::BudgetUse,
    ServiceError,
};

/// The requests the filter names, newest first, and every budget's use.
#[server(name = ListApprovals, prefix = "/api", endpoint = "list_approvals")]
pub async fn list_approvals(
    #[server(default)] filter: ApprovalFilter,
) -> Result<ApprovalsView, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::approvals::list(&context, &actor, &filter).await
}

/// One request, with what the person may do with it.
#[server(name = GetApproval, prefix = "/api", endpoint = "approval")]
pub async fn approval(id: String) -> Result<ApprovalItem, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::approvals::get(&context, &actor, &id).await
}

/// A decision about request `id`: `approve`, `reject` or `withdraw`, with a note.
#[server(name = DecideApproval, prefix = "/api", endpoint = "decide_approval")]
pub async fn decide_approval(
    id: String,
    decision: String,
    note: String,
) -> Result<ApprovalRequest, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::approvals::decide(&context, &actor, &id, &decision, &note).await
}

/// Every team's budget per cluster, with what it holds, waits for and has free.
#[server(name = TeamBudgets, prefix = "/api", endpoint = "team_budgets")]
pub async fn team_budgets() -> Result<Vec<BudgetUse>, ServiceError> {
    crate::service::budget::budgets(&super::context()?).await
}

/// How many requests wait on the person: those they may decide, and their own.
#[server(name = ApprovalsWaiting, prefix = "/api", endpoint = "approvals_waiting")]
pub async fn approvals_waiting() -> Result<u64, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::approvals::waiting_on(&context, &actor).await
}
