//! `GET /api/v1/capacity-providers`: every cluster's capacity providers (or one cluster's), with
//! what each may launch, its managed scaling or auto repair, and the instances and GPUs of the
//! fleet it launched; and a new provider for GPU sharing, checked and created (admins).

use axum::{
    body::Bytes,
    extract::{rejection::QueryRejection, Extension, Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};

use app::{
    model::{
        capacity::{CapacityQuery, ClusterCapacity, CAPACITY_PARAMETERS},
        identity::Actor,
        new_provider::{ProviderCheck, ProviderForm},
    },
    service::{capacity, new_provider},
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

/// `POST /api/v1/clusters/{cluster}/capacity-providers/check`: ECS's CreateCapacityProvider
/// request checked, nothing created (admins): the instance types it takes and which of them can
/// share GPUs, the cluster's providers and default strategy after, the CLI.
pub async fn check_new(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(cluster): Path<String>,
    query: Result<Query<NewProviderQuery>, QueryRejection>,
    body: Bytes,
) -> Result<Json<ProviderCheck>, AppError> {
    let form = provider_form(&body, parameters(query, "default, description")?)?;
    Ok(Json(
        new_provider::check(&state.services, &actor, &cluster, &form).await?,
    ))
}

/// `POST /api/v1/clusters/{cluster}/capacity-providers[?default=true&description=]`: creates the
/// provider after the checks (admins) and adds it to the cluster's providers, keeping the default
/// strategy unless `default=true`; audited as `add-provider`. 201 with the check; 400 by field;
/// 403 for anyone but an admin (audited); 502 when ECS refuses, saying what exists now.
pub async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(cluster): Path<String>,
    query: Result<Query<NewProviderQuery>, QueryRejection>,
    body: Bytes,
) -> Result<Response, AppError> {
    let form = provider_form(&body, parameters(query, "default, description")?)?;
    let created = new_provider::create(&state.services, &actor, &cluster, form).await?;
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

/// `?default=true` makes the new provider the cluster's default strategy; `?description=` says why.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewProviderQuery {
    pub default: Option<bool>,
    pub description: Option<String>,
}

fn provider_form(body: &Bytes, query: NewProviderQuery) -> Result<ProviderForm, AppError> {
    let create = std::str::from_utf8(body)
        .map_err(|_| {
            AppError::BadRequest(
                "the body is not UTF-8 text; send ECS's CreateCapacityProvider request as JSON"
                    .into(),
            )
        })?
        .to_string();
    Ok(ProviderForm {
        create,
        make_default: query.default.unwrap_or(false),
        description: query.description.unwrap_or_default(),
    })
}
