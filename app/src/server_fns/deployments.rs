//! Services and their rollouts for the pages: every service with its revision, counts and
//! deployment configuration; the capacity pre-check of a revision; the deploy; and a rollout's
//! state.

use leptos::prelude::*;

use crate::model::{
    deployment::{
        DeployAnswer, DeployRequest, PreCheck, RestartRequest, ScaleRequest, ServiceRow, WatchState,
    },
    ServiceError,
};

/// Every service of the fleet snapshot (or of one cluster), with its revision's GPU settings.
#[server(name = ListServices, prefix = "/api", endpoint = "list_services")]
pub async fn list_services(cluster: Option<String>) -> Result<Vec<ServiceRow>, ServiceError> {
    crate::service::deployments::services(&super::context()?, cluster.as_deref()).await
}

/// The pre-check of rolling `revision` (the family's newest when `None`) out to
/// `cluster/service`.
#[server(name = PreCheckRollout, prefix = "/api", endpoint = "pre_check_rollout")]
pub async fn pre_check_rollout(
    cluster: String,
    service: String,
    revision: Option<u32>,
) -> Result<PreCheck, ServiceError> {
    let revision = revision.map(crate::model::arn::RevisionRef::number);
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::deployments::pre_check(&context, &actor, &cluster, &service, revision).await
}

/// Rolls `request.revision` out to `cluster/service` after the checks; the audit id to watch,
/// or why it was not sent.
#[server(name = DeployService, prefix = "/api", endpoint = "deploy_service")]
pub async fn deploy_service(
    cluster: String,
    service: String,
    request: DeployRequest,
) -> Result<DeployAnswer, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::deployments::deploy(&context, &actor, &cluster, &service, request).await
}

/// Restarts `cluster/service` (new tasks of the revision it runs) after a deploy's checks; the
/// audit id to watch, or the request for approval past the team's budget.
#[server(name = RestartService, prefix = "/api", endpoint = "restart_service")]
pub async fn restart_service(
    cluster: String,
    service: String,
    request: RestartRequest,
) -> Result<DeployAnswer, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::deployments::restart(&context, &actor, &cluster, &service, request).await
}

/// Sets `cluster/service`'s desired count after the checks; a request for approval past the
/// team's budget.
#[server(name = ScaleService, prefix = "/api", endpoint = "scale_service")]
pub async fn scale_service(
    cluster: String,
    service: String,
    request: ScaleRequest,
) -> Result<DeployAnswer, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::deployments::scale(&context, &actor, &cluster, &service, request).await
}

/// A new service checked, nothing created: the requests as they would be sent, the pre-check,
/// the team's budget, the CLI and CloudFormation.
#[server(name = CheckNewService, prefix = "/api", endpoint = "check_new_service")]
pub async fn check_new_service(
    cluster: String,
    form: crate::model::new_service::NewServiceForm,
) -> Result<crate::model::new_service::NewServiceCheck, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::new_service::check(&context, &actor, &cluster, &form).await
}

/// Creates a new service after the checks (registering the template's revision first); the
/// audit id whose first deployment is watched.
#[server(name = CreateNewService, prefix = "/api", endpoint = "create_new_service")]
pub async fn create_new_service(
    cluster: String,
    form: crate::model::new_service::NewServiceForm,
) -> Result<DeployAnswer, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::new_service::create(&context, &actor, &cluster, form).await
}

/// What retiring `cluster/service` would stop and free, and whether the caller may.
#[server(name = PreviewRetirement, prefix = "/api", endpoint = "retire_preview")]
pub async fn retire_preview(
    cluster: String,
    service: String,
) -> Result<crate::model::retire::RetirePreview, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::deployments::retire_preview(&context, &actor, &cluster, &service).await
}

/// Scales `cluster/service` to 0 and deletes it, after the checks.
#[server(name = RetireService, prefix = "/api", endpoint = "retire_service")]
pub async fn retire_service(
    cluster: String,
    service: String,
    request: crate::model::retire::RetireRequest,
) -> Result<crate::model::retire::RetireAnswer, ServiceError> {
    let (context, actor) = (super::context()?, super::actor()?);
    crate::service::deployments::retire(&context, &actor, &cluster, &service, request).await
}

/// The state of the deployment of audit record `id`; `None` when there is none.
#[server(name = GetDeploymentState, prefix = "/api", endpoint = "deployment_state")]
pub async fn deployment_state(id: String) -> Result<Option<WatchState>, ServiceError> {
    crate::service::deployments::deployment_state(&super::context()?, &id).await
}
