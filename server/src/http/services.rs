//! `/api/v1/services…` and `/api/v1/deployments…`: services with their revision, counts and
//! deployment configuration; the capacity pre-check of a rollout; deploys and rollbacks; and a
//! deployment's state, once or as server-sent events.

use axum::{
    body::Bytes,
    extract::{rejection::QueryRejection, Extension, Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;

use app::{
    model::{
        arn::RevisionRef,
        deployment::{
            DeployRequest, PreCheck, RestartRequest, ScaleRequest, ServiceRow, WatchState,
        },
        identity::Actor,
        new_service::{NewServiceCheck, NewServiceForm},
        retire::{RetireAnswer, RetirePreview, RetireRequest},
    },
    service::deployments,
};

use crate::{error::AppError, http::api::parameters, http::state::AppState};

/// `?cluster=` limits the list to one cluster.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServicesQuery {
    pub cluster: Option<String>,
}

/// `GET /api/v1/services[?cluster=]`: every service of the fleet snapshot.
pub async fn list(
    State(state): State<AppState>,
    query: Result<Query<ServicesQuery>, QueryRejection>,
) -> Result<Json<Vec<ServiceRow>>, AppError> {
    let query = parameters(query, "cluster")?;
    let rows = deployments::services(&state.services, query.cluster.as_deref()).await?;
    Ok(Json(rows))
}

/// `?revision=` is a revision number of the service's family, or `family:revision`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreCheckQuery {
    pub revision: Option<String>,
}

/// `GET /api/v1/services/{cluster}/{service}/pre-check[?revision=]`: the rolling update of the
/// revision (the family's newest active one by default) simulated on the fleet snapshot with
/// the service's deployment configuration, and the diff against what runs now.
pub async fn pre_check(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, service)): Path<(String, String)>,
    query: Result<Query<PreCheckQuery>, QueryRejection>,
) -> Result<Json<PreCheck>, AppError> {
    let query = parameters(query, "revision")?;
    let revision = query
        .revision
        .map(|text| RevisionRef::parse(&text).map_err(AppError::BadRequest))
        .transpose()?;
    let check =
        deployments::pre_check(&state.services, &actor, &cluster, &service, revision).await?;
    Ok(Json(check))
}

/// The body of a deploy, or what is wrong with it.
fn deploy_body(body: &Bytes) -> Result<DeployRequest, AppError> {
    serde_json::from_slice(body).map_err(|e| {
        AppError::BadRequest(format!(
            "the body is not a deploy: {e}; send {{\"revision\": 3, \"expected_revision\": 2, \"force\": false, \"description\": \"why\"}}"
        ))
    })
}

/// `POST /api/v1/services/{cluster}/{service}/deploy`: rolls a revision out after the checks.
/// 202 with the audit id to watch; 409 when the service changed, another deploy is in flight or
/// the pre-check fails (with it; `force` sends anyway); 502 when ECS refuses.
pub async fn deploy(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, service)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, AppError> {
    let request = deploy_body(&body)?;
    let answer = deployments::deploy(&state.services, &actor, &cluster, &service, request).await?;
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

/// `POST /api/v1/services/{cluster}/{service}/rollback`: a deploy of an earlier revision of the
/// family — any earlier one — with the same checks.
pub async fn rollback(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, service)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, AppError> {
    let request = deploy_body(&body)?;
    let answer =
        deployments::rollback(&state.services, &actor, &cluster, &service, request).await?;
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

/// `POST /api/v1/services/{cluster}/{service}/restart`: new tasks of the revision running
/// (`forceNewDeployment`), with a deploy's checks, lock, budget gate and audit. 202 with the
/// audit id to watch (or `approval` past the team's budget); 409 when the service runs another
/// revision now, another deploy is in flight or the pre-check fails (`force` sends anyway).
pub async fn restart(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, service)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, AppError> {
    let request: RestartRequest = serde_json::from_slice(&body).map_err(|e| {
        AppError::BadRequest(format!(
            "the body is not a restart: {e}; send {{\"expected_revision\": 2, \"force\": false, \"description\": \"why\"}}"
        ))
    })?;
    let answer = deployments::restart(&state.services, &actor, &cluster, &service, request).await?;
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

/// `POST /api/v1/services/{cluster}/{service}/scale`: sets the desired count after the checks.
/// 200 with the audit id when sent; 202 with `approval` when it would take the team past its
/// budget; 409 when the count changed since the user looked or another change is being sent.
pub async fn scale(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, service)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, AppError> {
    let request: ScaleRequest = serde_json::from_slice(&body).map_err(|e| {
        AppError::BadRequest(format!(
            "the body is not a scale: {e}; send {{\"desired\": 12, \"expected_desired\": 8, \"description\": \"why\"}}"
        ))
    })?;
    let answer = deployments::scale(&state.services, &actor, &cluster, &service, request).await?;
    let status = if answer.approval.is_some() {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(answer)).into_response())
}

/// `GET /api/v1/clusters/{cluster}/services/{service}/retire`: what retiring the service would
/// stop and free — its GPUs, the instances left empty, its share of the cost, the requests that
/// wait for it — and whether the caller may.
pub async fn retire_preview(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, service)): Path<(String, String)>,
) -> Result<Json<RetirePreview>, AppError> {
    let preview = deployments::retire_preview(&state.services, &actor, &cluster, &service).await?;
    Ok(Json(preview))
}

/// `POST /api/v1/clusters/{cluster}/services/{service}/retire`: scales the service to 0, then
/// deletes it (its team or an admin; `confirm` is the service's name typed again). 200 with the
/// audit id and ECS's status of the service; 409 when the count changed since the caller
/// looked or it is deleted already; 502 when ECS refuses (the message says what exists now).
pub async fn retire(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, service)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<RetireAnswer>, AppError> {
    let request: RetireRequest = serde_json::from_slice(&body).map_err(|e| {
        AppError::BadRequest(format!(
            "the body is not a retirement: {e}; send {{\"confirm\": \"{service}\", \"expected_desired\": 2, \"description\": \"why\"}}"
        ))
    })?;
    let answer = deployments::retire(&state.services, &actor, &cluster, &service, request).await?;
    Ok(Json(answer))
}

/// The CreateService body of a new-service request, and the query's `description` and `force`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewServiceQuery {
    pub description: Option<String>,
    pub force: Option<bool>,
}

fn new_service_form(body: &Bytes, query: NewServiceQuery) -> Result<NewServiceForm, AppError> {
    let create = std::str::from_utf8(body)
        .map_err(|_| {
            AppError::BadRequest(
                "the body is not UTF-8 text; send ECS's CreateService request as JSON".into(),
            )
        })?
        .to_string();
    Ok(NewServiceForm {
        create,
        register: None,
        description: query.description.unwrap_or_default(),
        force: query.force.unwrap_or(false),
    })
}

/// `POST /api/v1/clusters/{cluster}/services/check`: a CreateService request checked, nothing
/// created — the request as it would be sent (the team tag and defaults added), the pre-check of
/// its desired count with what its provider would launch, the team's budget, and the same
/// request as AWS CLI input and CloudFormation.
pub async fn check_new(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(cluster): Path<String>,
    query: Result<Query<NewServiceQuery>, QueryRejection>,
    body: Bytes,
) -> Result<Json<NewServiceCheck>, AppError> {
    let query = parameters(query, "description, force")?;
    let form = new_service_form(&body, query)?;
    Ok(Json(
        app::service::new_service::check(&state.services, &actor, &cluster, &form).await?,
    ))
}

/// `POST /api/v1/clusters/{cluster}/services[?description=&force=true]`: creates a service from
/// ECS's CreateService request after the checks (the team tag set to the caller's team), audited
/// as `create`. 202 with the audit id whose first deployment `/rollouts/{id}` follows (or with
/// `approval` past the team's budget: nothing created until it is approved); 400 with
/// each field that is wrong; 403 for a team that is not the caller's; 409 when the pre-check
/// fails (`force` creates anyway).
pub async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(cluster): Path<String>,
    query: Result<Query<NewServiceQuery>, QueryRejection>,
    body: Bytes,
) -> Result<Response, AppError> {
    let query = parameters(query, "description, force")?;
    let form = new_service_form(&body, query)?;
    let answer = app::service::new_service::create(&state.services, &actor, &cluster, form).await?;
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

/// The state of deployment `id`, or a 404 that says where to look.
async fn state_of(state: &AppState, id: &str) -> Result<WatchState, AppError> {
    deployments::deployment_state(&state.services, id)
        .await?
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "there is no deployment {id:?}; GET /api/v1/audit lists them"
            ))
        })
}

/// `GET /api/v1/deployments/{id}`: a deployment's state now.
pub async fn deployment(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<WatchState>, AppError> {
    Ok(Json(state_of(&state, &id).await?))
}

/// `GET /api/v1/deployments/{id}/events`: server-sent events, one message (the state as JSON)
/// per change of the deployment, until its result is known.
pub async fn deployment_events(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let ticket = state
        .streams
        .admit(&crate::http::streams::client_of(&actor))?;
    let first = state_of(&state, &id).await?;
    let receiver = state.services.watches.subscribe(&id);
    let stream = futures::stream::unfold(
        (Some(first), receiver, false, ticket),
        |(first, mut receiver, ended, ticket)| async move {
            if ended {
                return None;
            }
            let next = match first {
                Some(first) => first,
                None => {
                    let receiver_ref = receiver.as_mut()?;
                    receiver_ref.changed().await.ok()?;
                    let current = receiver_ref.borrow_and_update().clone();
                    current
                }
            };
            let done = next.done() || receiver.is_none();
            let event = Event::default()
                .json_data(&next)
                .unwrap_or_else(|_| Event::default().data("{}"));
            Some((
                Ok::<_, std::convert::Infallible>(event),
                (None, receiver, done, ticket),
            ))
        },
    );
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}
