//! `GET /api/v1/cost/plan`: the consolidation plan, as JSON or as the CSV of the page's table.

use axum::{
    extract::{rejection::QueryRejection, Query, State},
    response::{IntoResponse, Response},
    Json,
};

use app::{
    model::cost::consolidate::{to_csv, PlanQuery},
    service::cost,
};

use crate::{error::AppError, http::api::parameters, http::state::AppState};

/// `GET /api/v1/cost/plan[?cluster=&spare=&format=csv]`.
pub async fn plan(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, AppError> {
    let known = format!("{} and format", PlanQuery::KEYS.join(", "));
    let pairs = parameters(query, &known)?;
    let mut csv = false;
    let mut rest = Vec::new();
    for (key, value) in &pairs {
        match key.as_str() {
            "format" => csv = super::cost::wants_csv(value)?,
            key if PlanQuery::KEYS.contains(&key) => rest.push((key, value.as_str())),
            other => {
                return Err(AppError::BadRequest(format!(
                    "there is no parameter {other:?}; the parameters are {known}"
                )))
            }
        }
    }
    let query = PlanQuery::from_params(rest).map_err(AppError::BadRequest)?;
    let plan = cost::plan(&state.services, &query).await?;
    Ok(if csv {
        super::cost::csv_attachment(
            "attachment; filename=\"gpushare-consolidation-plan.csv\"",
            to_csv(&plan),
        )
    } else {
        Json(plan).into_response()
    })
}
