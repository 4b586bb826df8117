//! `GET /api/v1/services` and `GET /api/v1/services/{cluster}/{service}/pre-check`: services
//! with their revision, counts and deployment configuration, and the capacity pre-check of a
//! rollout.

use axum::{
    body::Bytes,
    extract::{rejection::QueryRejection, Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;

use app::{
    model::deployment::{DeployRequest, WatchState},
    server_fns::deployments::{PreCheck, ServiceRow},
    ssr::deployments::{self, DeployRefusal},
};

use crate::{error::AppError, http::api::parameters, state::AppState};

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
    Ok(Json(
        deployments::services(&state.console, query.cluster.as_deref()).await?,
    ))
}

/// `?revision=` is a revision number of the service's family, or `family:revision`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreCheckQuery {
    pub revision: Option<String>,
}

/// The family of the task definition `cluster/service` runs.
async fn service_family(
    state: &AppState,
    cluster: &str,
    service: &str,
) -> Result<String, AppError> {
    let rows = deployments::services(&state.console, Some(cluster)).await?;
    rows.iter()
        .find(|row| row.service.name == service)
        .map(|row| row.family.clone())
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "cluster {cluster} has no service {service:?}; GET /api/v1/services?cluster={cluster} lists them"
            ))
        })
}

/// The revision number a `revision` parameter names, refusing another family's.
fn revision_of(text: &str, family: &str) -> Result<u32, AppError> {
    let (named, number) = match text.rsplit_once(':') {
        Some((named, number)) => (Some(named), number),
        None => (None, text),
    };
    if let Some(named) = named.filter(|named| *named != family) {
        return Err(AppError::BadRequest(format!(
            "{text:?} is a revision of {named}, but the service runs {family}; roll out a revision of {family}"
        )));
    }
    number
        .parse::<u32>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| {
            AppError::BadRequest(format!(
                "{text:?} is not a revision: give a number from 1, or {family}:<number>"
            ))
        })
}

/// `GET /api/v1/services/{cluster}/{service}/pre-check[?revision=]`: the rolling update of the
/// revision (the family's newest active one by default) simulated on the fleet snapshot with
/// the service's deployment configuration, and the diff against what runs now.
pub async fn pre_check(
    State(state): State<AppState>,
    Path((cluster, service)): Path<(String, String)>,
    query: Result<Query<PreCheckQuery>, QueryRejection>,
) -> Result<Json<PreCheck>, AppError> {
    let query = parameters(query, "revision")?;
    let revision = match query.revision {
        Some(text) => Some(revision_of(
            &text,
            &service_family(&state, &cluster, &service).await?,
        )?),
        None => None,
    };
    Ok(Json(
        deployments::pre_check(&state.console, &cluster, &service, revision).await?,
    ))
}

/// A refused deploy as an HTTP answer: the status its reason calls for, the error, and the
/// pre-check when that is the reason.
fn refused(refusal: DeployRefusal) -> Response {
    let (status, code) = match &refusal {
        DeployRefusal::BadRequest { .. } => (StatusCode::BAD_REQUEST, "bad_request"),
        DeployRefusal::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
        DeployRefusal::Conflict { .. } => (StatusCode::CONFLICT, "conflict"),
        DeployRefusal::PreCheck { .. } => (StatusCode::CONFLICT, "pre_check"),
        DeployRefusal::Ecs { .. } => (StatusCode::BAD_GATEWAY, "ecs"),
        DeployRefusal::Unavailable { .. } => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
    };
    let mut body = serde_json::json!({"error": {"code": code, "message": refusal.message()}});
    if let DeployRefusal::PreCheck { check, .. } = &refusal {
        body["pre_check"] = serde_json::to_value(check).unwrap_or_default();
    }
    (status, Json(body)).into_response()
}

/// The body of a deploy, or what is wrong with it. `revision` and `expected_revision` are
/// revision numbers, or `family:N` of the service's family.
async fn deploy_body(
    state: &AppState,
    cluster: &str,
    service: &str,
    body: &Bytes,
) -> Result<DeployRequest, AppError> {
    let bad = |e: serde_json::Error| {
        AppError::BadRequest(format!(
            "the body is not a deploy: {e}; send {{\"revision\": 3, \"expected_revision\": 2, \"force\": false, \"description\": \"why\"}}"
        ))
    };
    let mut value: serde_json::Value = serde_json::from_slice(body).map_err(bad)?;
    for key in ["revision", "expected_revision"] {
        if let Some(text) = value.get(key).and_then(|v| v.as_str()).map(str::to_string) {
            let family = service_family(state, cluster, service).await?;
            value[key] = serde_json::json!(revision_of(&text, &family)?);
        }
    }
    serde_json::from_value(value).map_err(bad)
}

/// Sends a checked deploy request and answers 202, or the refusal.
async fn send(
    state: AppState,
    cluster: String,
    service: String,
    request: DeployRequest,
) -> Response {
    match state
        .console
        .deployer
        .deploy(&state.console, cluster, service, request)
        .await
    {
        Ok(answer) => (StatusCode::ACCEPTED, Json(answer)).into_response(),
        Err(refusal) => refused(refusal),
    }
}

/// `POST /api/v1/services/{cluster}/{service}/deploy`: rolls a revision out after the checks.
/// 202 with the audit id to watch; 409 when the service changed, another deploy is in flight or
/// the pre-check fails (with it; `force` sends anyway); 502 when ECS refuses.
pub async fn deploy(
    State(state): State<AppState>,
    Path((cluster, service)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, AppError> {
    let request = deploy_body(&state, &cluster, &service, &body).await?;
    Ok(send(state, cluster, service, request).await)
}

/// `POST /api/v1/services/{cluster}/{service}/rollback`: a deploy of an earlier revision of the
/// family — any earlier one — with the same checks.
pub async fn rollback(
    State(state): State<AppState>,
    Path((cluster, service)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, AppError> {
    let request = deploy_body(&state, &cluster, &service, &body).await?;
    if request.revision >= request.expected_revision {
        return Err(AppError::BadRequest(format!(
            "a rollback goes to an earlier revision than the running {}; POST …/deploy rolls {} out",
            request.expected_revision, request.revision
        )));
    }
    Ok(send(state, cluster, service, request).await)
}

/// `GET /api/v1/deployments/{id}`: a deployment's state now.
pub async fn deployment(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<WatchState>, AppError> {
    state
        .console
        .deployer
        .state(state.console.audit.as_ref(), id.clone())
        .await
        .map_err(AppError::Unavailable)?
        .map(Json)
        .ok_or_else(|| {
            AppError::NotFound(format!(
                "there is no deployment {id:?}; GET /api/v1/audit lists them"
            ))
        })
}

/// `GET /api/v1/deployments/{id}/events`: server-sent events, one message (the state as JSON)
/// per change of the deployment, until its result is known.
pub async fn deployment_events(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let first = state
        .console
        .deployer
        .state(state.console.audit.as_ref(), id.clone())
        .await
        .map_err(AppError::Unavailable)?
        .ok_or_else(|| AppError::NotFound(format!("there is no deployment {id:?}")))?;
    let receiver = state.deployer.subscribe(&id);
    let stream = futures::stream::unfold(
        (Some(first), receiver, false),
        |(first, mut receiver, ended)| async move {
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
                (None, receiver, done),
            ))
        },
    );
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::revision_of;

    #[test]
    fn a_revision_is_a_number_of_the_services_family() {
        assert_eq!(revision_of("3", "embed").ok(), Some(3));
        assert_eq!(revision_of("embed:4", "embed").ok(), Some(4));
        assert!(revision_of("other:4", "embed")
            .err()
            .is_some_and(|e| e.to_string().contains("a revision of other")));
        assert!(revision_of("0", "embed").is_err());
        assert!(revision_of("latest", "embed").is_err());
    }
}
