//! `GET /api/v1/capacity-providers`: every cluster's capacity providers (or one cluster's), with
//! what each may launch, its managed scaling or auto repair, and the instances and GPUs of the
//! fleet it launched.

use axum::{
    extract::{rejection::QueryRejection, Query, State},
    Json,
};

use app::{
    model::capacity::{CapacityQuery, ClusterCapacity, CAPACITY_PARAMETERS},
    service::capacity,
};

use crate::{error::AppError, http::api::parameters, http::state::AppState};

/// `GET /api/v1/capacity-providers[?cluster=]`.
pub async fn providers(
    State(state): State<AppState>,
    query: Result<Query<CapacityQuery>, QueryRejection>,
) -> Result<Json<Vec<ClusterCapacity>>, AppError> {
    let query = parameters(query, CAPACITY_PARAMETERS)?;
    Ok(Json(capacity::providers(&state.services, query).await?))
}
