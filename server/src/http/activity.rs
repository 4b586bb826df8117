//! `GET /api/v1/clusters/{cluster}/events` and `GET /api/v1/clusters/{cluster}/stopped-tasks`:
//! every service's events merged newest first, and the tasks that stopped recently with why.

use axum::{
    extract::{rejection::QueryRejection, Path, Query, State},
    Json,
};

use app::{
    model::activity::{
        EventFeed, EventFilter, StoppedFilter, StoppedTasks, EVENT_PARAMETERS, STOPPED_PARAMETERS,
    },
    service::activity,
};

use crate::{error::AppError, http::api::parameters, http::state::AppState};

/// `GET /api/v1/clusters/{cluster}/events[?service=&kind=&q=&since=&limit=]`.
pub async fn events(
    State(state): State<AppState>,
    Path(cluster): Path<String>,
    query: Result<Query<EventFilter>, QueryRejection>,
) -> Result<Json<EventFeed>, AppError> {
    let filter = parameters(query, EVENT_PARAMETERS)?;
    Ok(Json(
        activity::event_feed(&state.services, &cluster, filter).await?,
    ))
}

/// `GET /api/v1/clusters/{cluster}/stopped-tasks[?service=&stop_code=&q=&limit=]`.
pub async fn stopped_tasks(
    State(state): State<AppState>,
    Path(cluster): Path<String>,
    query: Result<Query<StoppedFilter>, QueryRejection>,
) -> Result<Json<StoppedTasks>, AppError> {
    let filter = parameters(query, STOPPED_PARAMETERS)?;
    Ok(Json(
        activity::stopped_tasks(&state.services, &cluster, filter).await?,
    ))
}
