//! Services and their rollouts for the pages: every service with its revision, counts and
//! deployment configuration; and the capacity pre-check of a revision.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{
    model::{rollout::RolloutCheck, task_definition::RevisionDetail, ServiceRef},
    server_fns::task_definitions::Comparison,
};

/// One service as the services table shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServiceRow {
    pub cluster: String,
    pub service: ServiceRef,
    /// The family and revision it runs.
    pub family: String,
    pub revision: u32,
    /// The GPU settings of that revision's GPU containers, in words; empty without GPUs.
    pub gpu: Vec<String>,
}

/// The pre-check of rolling a revision out to a service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PreCheck {
    pub service: ServiceRow,
    /// The revision to roll out.
    pub target: RevisionDetail,
    /// The family's revisions, newest first, to choose from.
    pub revisions: Vec<u32>,
    /// What changes from the running revision; `None` when the target is the running one.
    pub comparison: Option<Comparison>,
    pub rollout: RolloutCheck,
}

#[cfg(feature = "ssr")]
fn context() -> Result<crate::ssr::console::ConsoleContext, ServerFnError> {
    use_context::<crate::ssr::console::ConsoleContext>()
        .ok_or_else(|| ServerFnError::new("the server did not provide its console context"))
}

/// Every service of the fleet snapshot (or of one cluster), with its revision's GPU settings.
#[server(name = ListServices, prefix = "/api", endpoint = "list_services")]
pub async fn list_services(cluster: Option<String>) -> Result<Vec<ServiceRow>, ServerFnError> {
    Ok(crate::ssr::deployments::services(&context()?, cluster.as_deref()).await?)
}

/// The pre-check of rolling `revision` (the family's newest when `None`) out to
/// `cluster/service`.
#[server(name = PreCheckRollout, prefix = "/api", endpoint = "pre_check_rollout")]
pub async fn pre_check_rollout(
    cluster: String,
    service: String,
    revision: Option<u32>,
) -> Result<PreCheck, ServerFnError> {
    Ok(crate::ssr::deployments::pre_check(&context()?, &cluster, &service, revision).await?)
}

/// Rolls `request.revision` out to `cluster/service` after the checks; the audit id to watch,
/// or why it was not sent.
#[server(name = DeployService, prefix = "/api", endpoint = "deploy_service")]
pub async fn deploy_service(
    cluster: String,
    service: String,
    request: crate::model::deployment::DeployRequest,
) -> Result<crate::model::deployment::DeployAnswer, ServerFnError> {
    let context = context()?;
    context
        .deployer
        .deploy(&context, cluster, service, request)
        .await
        .map_err(|refusal| ServerFnError::new(refusal.message()))
}

/// The state of the deployment of audit record `id`; `None` when there is none.
#[server(name = GetDeploymentState, prefix = "/api", endpoint = "deployment_state")]
pub async fn deployment_state(
    id: String,
) -> Result<Option<crate::model::deployment::WatchState>, ServerFnError> {
    let context = context()?;
    context
        .deployer
        .state(context.audit.as_ref(), id)
        .await
        .map_err(ServerFnError::new)
}
