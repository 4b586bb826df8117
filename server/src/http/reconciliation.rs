//! `GET /api/v1/cost/reconciliation?month=YYYY-MM[&format=csv]`: per day, the console's figure
//! for the EC2 instances it saw against Cost Explorer's amortized cost, and the difference
//! explained; the month's totals. Without Cost Explorer, the list-price figures and a note.

use axum::{
    extract::{rejection::QueryRejection, Query, State},
    http::header,
    response::{IntoResponse, Response},
    Json,
};

use app::{
    model::cost::{ReconciliationQuery, RECONCILIATION_PARAMETERS},
    service::cost::reconciliation,
};

use crate::{error::AppError, http::api::parameters, http::state::AppState};

pub async fn reconciliation(
    State(state): State<AppState>,
    query: Result<Query<ReconciliationQuery>, QueryRejection>,
) -> Result<Response, AppError> {
    let query = parameters(query, RECONCILIATION_PARAMETERS)?;
    let csv = match query.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(other) => {
            return Err(AppError::BadRequest(format!(
                "format={other:?} is not one this endpoint gives: use json (the default) or csv"
            )))
        }
    };
    let answer =
        reconciliation::reconciliation(&state.services, &query, chrono::Utc::now()).await?;
    if !csv {
        return Ok(Json(answer).into_response());
    }
    let name = format!(
        "attachment; filename=\"reconciliation-{}.csv\"",
        answer.month
    );
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, name),
        ],
        answer.to_csv(),
    )
        .into_response())
}
