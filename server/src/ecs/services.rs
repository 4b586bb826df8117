//! A service as DescribeServices reports it, UpdateService and DeleteService.

use app::{
    model::deployment::{LiveDeployment, LiveEvent, LiveService},
    service::ports::ServiceUpdated,
};
use aws_sdk_ecs::operation::RequestId;

use super::Ecs;
use crate::aws::{errors, once, rfc3339};
use app::model::words::{DeploymentStatus, RolloutState};
use app::model::ServiceError;

/// A count as the pages show it: ECS never reports a negative one.
fn count(n: i32) -> u32 {
    n.max(0) as u32
}

impl Ecs {
    /// The service now, from DescribeServices.
    pub async fn live(&self, cluster: &str, service: &str) -> Result<LiveService, ServiceError> {
        self.paced("DescribeServices").await?;
        let out = self
            .client
            .describe_services()
            .cluster(cluster)
            .services(service)
            .send()
            .await
            .map_err(|e| errors::ecs_read("DescribeServices", &e))?;
        let found = out.services().first().ok_or_else(|| {
            ServiceError::not_found(format!(
                "ECS has no service {service:?} in cluster {cluster:?}"
            ))
        })?;
        Ok(LiveService {
            status: found.status().unwrap_or_default().to_string(),
            task_definition: found.task_definition().unwrap_or_default().to_string(),
            desired: count(found.desired_count()),
            running: count(found.running_count()),
            pending: count(found.pending_count()),
            deployments: found
                .deployments()
                .iter()
                .map(|d| LiveDeployment {
                    id: d.id().unwrap_or_default().to_string(),
                    status: DeploymentStatus::from(d.status().unwrap_or_default()),
                    task_definition: d.task_definition().unwrap_or_default().to_string(),
                    desired: count(d.desired_count()),
                    running: count(d.running_count()),
                    pending: count(d.pending_count()),
                    failed_tasks: count(d.failed_tasks()),
                    rollout_state: d.rollout_state().map(|s| RolloutState::from(s.as_str())),
                    rollout_state_reason: d.rollout_state_reason().map(str::to_string),
                    created_at: d.created_at().map(rfc3339),
                })
                .collect(),
            events: found
                .events()
                .iter()
                .map(|e| LiveEvent {
                    id: e.id().unwrap_or_default().to_string(),
                    at: e.created_at().map(rfc3339).unwrap_or_default(),
                    message: e.message().unwrap_or_default().to_string(),
                })
                .collect(),
        })
    }

    /// Rolls `task_definition` out to `cluster/service` with UpdateService; with `force_new`,
    /// as a new deployment even of the revision running.
    pub async fn update(
        &self,
        cluster: &str,
        service: &str,
        task_definition: &str,
        force_new: bool,
    ) -> Result<ServiceUpdated, app::model::ServiceError> {
        let call = self
            .client
            .update_service()
            .cluster(cluster)
            .service(service)
            .task_definition(task_definition)
            .force_new_deployment(force_new);
        let out = once::write_once!(call, "UpdateService")?;
        Ok(updated(&out))
    }

    /// UpdateService with the desired count alone: no new deployment, ECS starts or stops tasks
    /// of the PRIMARY one.
    pub async fn scale(
        &self,
        cluster: &str,
        service: &str,
        desired: u32,
    ) -> Result<ServiceUpdated, app::model::ServiceError> {
        let call = self
            .client
            .update_service()
            .cluster(cluster)
            .service(service)
            .desired_count(i32::try_from(desired).unwrap_or(i32::MAX));
        let out = once::write_once!(call, "UpdateService")?;
        Ok(updated(&out))
    }

    /// DeleteService, not forced: ECS refuses while the service is scaled above 0.
    pub async fn delete(
        &self,
        cluster: &str,
        service: &str,
    ) -> Result<app::service::ports::ServiceDeleted, app::model::ServiceError> {
        let call = self
            .client
            .delete_service()
            .cluster(cluster)
            .service(service)
            .force(false);
        let out = once::write_once!(call, "DeleteService")?;
        Ok(app::service::ports::ServiceDeleted {
            status: out
                .service()
                .and_then(|s| s.status())
                .unwrap_or_default()
                .to_string(),
            request_id: out.request_id().map(str::to_string),
        })
    }
}

/// What UpdateService answered: its request id and the PRIMARY deployment.
fn updated(out: &aws_sdk_ecs::operation::update_service::UpdateServiceOutput) -> ServiceUpdated {
    ServiceUpdated {
        request_id: out.request_id().map(str::to_string),
        deployment_id: out
            .service()
            .and_then(|s| {
                s.deployments().iter().find(|d| {
                    d.status().map(DeploymentStatus::from) == Some(DeploymentStatus::Primary)
                })
            })
            .and_then(|d| d.id())
            .map(str::to_string),
    }
}
