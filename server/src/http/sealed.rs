//! Sealed months: `GET /api/v1/cost/months` (every seal), `GET /api/v1/cost/months/{month}`
//! (one month's seals and what re-pricing it would change) and
//! `POST /api/v1/cost/months/{month}/reprice` (admins; audited as `reprice`).

use axum::{
    body::Bytes,
    extract::{Extension, Path, State},
    Json,
};
use serde::{Deserialize, Serialize};

use app::{
    model::{
        cost::{Repricing, Sealing},
        identity::Actor,
    },
    service::cost::sealing,
};

use crate::{error::AppError, http::state::AppState};

/// One month's seals, newest first, and what re-pricing it at today's prices would change.
#[derive(Serialize)]
pub struct MonthView {
    pub month: String,
    pub versions: Vec<Sealing>,
    pub repricing: Repricing,
}

/// A re-pricing's body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RepriceBody {
    reason: String,
}

/// `GET /api/v1/cost/months`: every sealed month's every version, newest month first.
pub async fn months(State(state): State<AppState>) -> Result<Json<Vec<Sealing>>, AppError> {
    Ok(Json(sealing::list(&state.services).await?))
}

/// `GET /api/v1/cost/months/{month}`: 404 when the month is not sealed.
pub async fn month(
    State(state): State<AppState>,
    Path(month): Path<String>,
) -> Result<Json<MonthView>, AppError> {
    let repricing = sealing::preview(&state.services, &month).await?;
    let versions = sealing::list(&state.services)
        .await?
        .into_iter()
        .filter(|s| s.month == month)
        .collect();
    Ok(Json(MonthView {
        month,
        versions,
        repricing,
    }))
}

/// `POST /api/v1/cost/months/{month}/reprice` with `{"reason": "…"}`: the month sealed again at
/// today's prices, as the next version; what changed. 403 for anyone but an admin; 400 without
/// a reason; 404 for a month not sealed; 409 when another re-pricing was stored first.
pub async fn reprice(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(month): Path<String>,
    body: Bytes,
) -> Result<Json<Repricing>, AppError> {
    let body: RepriceBody = serde_json::from_slice(&body).map_err(|e| {
        AppError::BadRequest(format!(
            "the body is not a re-pricing: {e}; send {{\"reason\": \"why the month is re-priced\"}}"
        ))
    })?;
    Ok(Json(
        sealing::reprice(&state.services, &actor, &month, &body.reason).await?,
    ))
}
