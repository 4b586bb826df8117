//! `/api/v1/approvals…` and `/api/v1/budgets`: requests waiting for approval, the decisions about
//! them (approve, reject, withdraw, each with a note), and every team's budget use.

use axum::{
    body::Bytes,
    extract::{rejection::QueryRejection, Extension, Path, Query, State},
    Json,
};

use app::{
    model::{
        approval::{
            ApprovalDecision, ApprovalFilter, ApprovalItem, ApprovalRequest, ApprovalsView,
            DecisionBody,
        },
        budget::BudgetUse,
        identity::Actor,
    },
    service::approvals,
};

use crate::{error::AppError, http::api::parameters, http::state::AppState};

/// `GET /api/v1/approvals[?state=&team=&cluster=&page=]`: requests newest first, a page of 100
/// at a time, with what the caller may do with each, how many match in all, and every budget's
/// use.
pub async fn list(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    query: Result<Query<ApprovalFilter>, QueryRejection>,
) -> Result<Json<ApprovalsView>, AppError> {
    let filter = parameters(query, "state, team, cluster and page")?;
    Ok(Json(
        approvals::list(&state.services, &actor, &filter).await?,
    ))
}

/// `GET /api/v1/approvals/{id}`: one request.
pub async fn one(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> Result<Json<ApprovalItem>, AppError> {
    Ok(Json(approvals::get(&state.services, &actor, &id).await?))
}

/// A decision's body: `{"note": "…"}`, or nothing.
fn note_of(body: &Bytes) -> Result<String, AppError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(String::new());
    }
    serde_json::from_slice::<DecisionBody>(body)
        .map(|b| b.note)
        .map_err(|e| {
            AppError::BadRequest(format!(
                "the body is not a decision: {e}; send {{\"note\": \"why\"}} or nothing"
            ))
        })
}

/// `POST /api/v1/approvals/{id}/{decision}`, the decision being `approve` (the checks run again
/// and the change is sent as the requester's; 409 with the reason when they no longer pass, and
/// nothing is sent), `reject` or `withdraw`; 409 when the request was already decided.
pub async fn decide(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((id, decision)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<ApprovalRequest>, AppError> {
    if decision.parse::<ApprovalDecision>().is_err() {
        return Err(AppError::NotFound(format!(
            "there is no decision {decision:?}: POST …/approve, …/reject or …/withdraw"
        )));
    }
    let note = note_of(&body)?;
    Ok(Json(
        approvals::decide(&state.services, &actor, &id, &decision, &note).await?,
    ))
}

/// `GET /api/v1/budgets`: every team's budget per cluster with what it holds, waits for and has
/// free.
pub async fn budgets(State(state): State<AppState>) -> Result<Json<Vec<BudgetUse>>, AppError> {
    Ok(Json(app::service::budget::budgets(&state.services).await?))
}
