//! CreateService and UpdateService: a service and its deployments, and the deployment
//! configuration's bounds.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::{
    capacity::StrategyItem,
    error::{invalid, EcsError},
    model::{Deployment, DeploymentConfig, DeploymentStatus, Fleet, RolloutState, Service},
};

/// What a new service asks for.
#[derive(Clone, Debug)]
pub struct NewService {
    pub name: String,
    pub task_definition: String,
    pub desired_count: u32,
    pub config: DeploymentConfig,
    /// `placementConstraints` as given (`distinctInstance`, `memberOf`).
    pub placement_constraints: Vec<Value>,
    /// `placementStrategy` as given; none means ECS's default for services, spread across
    /// Availability Zones.
    pub placement_strategy: Vec<Value>,
    /// The capacity provider strategy; empty for the EC2 launch type.
    pub capacity_provider_strategy: Vec<StrategyItem>,
}

/// What an UpdateService changes.
#[derive(Clone, Debug, Default)]
pub struct ServiceUpdate {
    pub task_definition: Option<String>,
    pub desired_count: Option<u32>,
    pub config: Option<DeploymentConfig>,
    pub force_new_deployment: bool,
    /// A new capacity provider strategy, which needs `force_new_deployment`.
    pub capacity_provider_strategy: Option<Vec<StrategyItem>>,
}

impl Fleet {
    /// CreateService: a replica service whose first deployment starts at once.
    pub fn create_service(&mut self, cluster: &str, new: NewService) -> Result<&Service, EcsError> {
        let key = self.cluster_key(cluster).ok_or(EcsError::ClusterNotFound)?;
        validate_config(&new.config)?;
        if new.name.is_empty()
            || new.name.len() > 255
            || !new
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(
                "serviceName must be 1 to 255 letters, numbers, hyphens and underscores.",
            ));
        }
        let td_arn = self
            .task_definition(&new.task_definition)
            .filter(|td| td.active)
            .map(|td| td.arn.clone())
            .ok_or_else(|| {
                invalid(format!(
                    "TaskDefinition not found: {}.",
                    new.task_definition
                ))
            })?;
        // A name stays taken while its service is ACTIVE or DRAINING; an INACTIVE one is
        // replaced.
        if self.clusters[&key]
            .services
            .get(&new.name)
            .is_some_and(|s| s.status() != "INACTIVE")
        {
            return Err(invalid("Creation of service was not idempotent."));
        }
        let deployment_id = self.new_deployment_id();
        let now = self.now;
        let cluster_arn = self.clusters[&key].arn.clone();
        let arn = self.arn(&format!("service/{key}/{}", new.name));
        let service = Service {
            name: new.name.clone(),
            arn,
            cluster_arn,
            task_definition_arn: td_arn.clone(),
            desired_count: new.desired_count,
            deployments: vec![new_deployment(
                deployment_id,
                td_arn,
                new.desired_count,
                now,
            )],
            config: new.config,
            events: Default::default(),
            created_at: now,
            last_placement_event: None,
            last_steady_event: None,
            steady: false,
            last_completed: None,
            tasks: Default::default(),
            placement_constraints: new.placement_constraints.clone(),
            placement_strategy: new.placement_strategy.clone(),
            capacity_provider_strategy: new.capacity_provider_strategy.clone(),
            deleted_at: None,
        };
        let cluster = self
            .clusters
            .get_mut(&key)
            .ok_or(EcsError::ClusterNotFound)?;
        cluster.services.insert(new.name.clone(), service);
        self.reconcile(&key, &new.name);
        Ok(&self.clusters[&key].services[&new.name])
    }

    /// UpdateService: a new task definition or `forceNewDeployment` starts a new PRIMARY
    /// deployment; a new desired count applies to the current one.
    pub fn update_service(
        &mut self,
        cluster: &str,
        service: &str,
        update: ServiceUpdate,
    ) -> Result<&Service, EcsError> {
        let key = self.cluster_key(cluster).ok_or(EcsError::ClusterNotFound)?;
        let name = service.rsplit('/').next().unwrap_or(service).to_string();
        match self.clusters[&key].services.get(&name) {
            None => return Err(EcsError::ServiceNotFound),
            Some(s) if !s.is_active() => return Err(EcsError::ServiceNotActive),
            Some(_) => {}
        }
        if let Some(config) = &update.config {
            validate_config(config)?;
        }
        let new_td = match &update.task_definition {
            Some(reference) => Some(
                self.task_definition(reference)
                    .filter(|td| td.active)
                    .map(|td| td.arn.clone())
                    .ok_or_else(|| invalid(format!("TaskDefinition not found: {reference}.")))?,
            ),
            None => None,
        };
        let current_td = self.clusters[&key].services[&name]
            .task_definition_arn
            .clone();
        if let Some(strategy) = &update.capacity_provider_strategy {
            let current = &self.clusters[&key].services[&name].capacity_provider_strategy;
            if strategy != current && !update.force_new_deployment {
                return Err(invalid(
                    "Changing a service's capacity provider strategy, or moving it from a launch type to one, requires a new deployment: set forceNewDeployment.",
                ));
            }
        }
        let new_deployment =
            update.force_new_deployment || new_td.as_ref().is_some_and(|td| *td != current_td);
        let deployment_id = new_deployment.then(|| self.new_deployment_id());
        let now = self.now;
        let cluster = self
            .clusters
            .get_mut(&key)
            .ok_or(EcsError::ClusterNotFound)?;
        let svc = cluster
            .services
            .get_mut(&name)
            .ok_or(EcsError::ServiceNotFound)?;
        if let Some(count) = update.desired_count {
            svc.desired_count = count;
            if let Some(primary) = svc.deployments.first_mut() {
                primary.desired_count = count;
            }
        }
        if let Some(config) = update.config {
            svc.config = config;
        }
        if let Some(strategy) = update.capacity_provider_strategy {
            svc.capacity_provider_strategy = strategy;
        }
        if let Some(id) = deployment_id {
            let td = new_td.unwrap_or(current_td);
            start_deployment(svc, id, td, now);
        }
        svc.steady = false;
        self.reconcile(&key, &name);
        Ok(&self.clusters[&key].services[&name])
    }

    /// DeleteService: a service scaled to 0 (or any, with `force`, which scales it to 0) is
    /// deleted: no longer listed, DRAINING while its tasks stop, then INACTIVE.
    pub fn delete_service(
        &mut self,
        cluster: &str,
        service: &str,
        force: bool,
    ) -> Result<&Service, EcsError> {
        let key = self.cluster_key(cluster).ok_or(EcsError::ClusterNotFound)?;
        let name = service.rsplit('/').next().unwrap_or(service).to_string();
        let now = self.now;
        let svc = self
            .clusters
            .get_mut(&key)
            .and_then(|c| c.services.get_mut(&name))
            .ok_or(EcsError::ServiceNotFound)?;
        if !svc.is_active() {
            return Err(EcsError::ServiceNotActive);
        }
        if svc.desired_count > 0 && !force {
            return Err(invalid(
                "The service cannot be stopped while it is scaled above 0.",
            ));
        }
        svc.desired_count = 0;
        for deployment in &mut svc.deployments {
            deployment.desired_count = 0;
        }
        svc.deleted_at = Some(now);
        svc.steady = false;
        self.reconcile(&key, &name);
        Ok(&self.clusters[&key].services[&name])
    }
}

/// Makes `id` the PRIMARY deployment running `td`; earlier deployments become ACTIVE. An `id`
/// the service still has (a rollback re-activating the last completed deployment) moves to
/// the front, its tasks still its own.
pub(super) fn start_deployment(svc: &mut Service, id: String, td: String, now: DateTime<Utc>) {
    for deployment in &mut svc.deployments {
        deployment.status = DeploymentStatus::Active;
    }
    svc.deployments.retain(|d| d.id != id);
    svc.task_definition_arn = td.clone();
    let deployment = new_deployment(id, td, svc.desired_count, now);
    svc.deployments.insert(0, deployment);
}

/// A PRIMARY deployment that has not started a task yet.
fn new_deployment(id: String, td: String, desired_count: u32, now: DateTime<Utc>) -> Deployment {
    Deployment {
        id: id.clone(),
        status: DeploymentStatus::Primary,
        task_definition_arn: td,
        desired_count,
        running_count: 0,
        pending_count: 0,
        healthy_count: 0,
        failed_tasks: 0,
        has_run_a_task: false,
        failed_placements: 0,
        last_placement_failure: None,
        rollout_state: RolloutState::InProgress,
        rollout_state_reason: format!("ECS deployment {id} in progress."),
        created_at: now,
        updated_at: now,
    }
}

fn validate_config(config: &DeploymentConfig) -> Result<(), EcsError> {
    if config.maximum_percent < 100 || config.maximum_percent > 200 {
        return Err(invalid(
            "maximumPercent must be between 100 and 200 for the rolling update deployment type.",
        ));
    }
    if config.minimum_healthy_percent > 100 {
        return Err(invalid("minimumHealthyPercent must be between 0 and 100."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fixture;

    fn new_service(td: &str, desired: u32) -> NewService {
        NewService {
            name: "embed".into(),
            task_definition: td.into(),
            desired_count: desired,
            config: DeploymentConfig::default(),
            placement_constraints: Vec::new(),
            placement_strategy: Vec::new(),
            capacity_provider_strategy: Vec::new(),
        }
    }

    #[test]
    fn a_service_starts_its_first_deployment_at_once() {
        let mut fleet = fixture::fleet(1, 4);
        let td = fixture::mps_family(&mut fleet, "embed", 4_096, None);
        let service = fleet
            .create_service("prod", new_service(&td, 2))
            .expect("created");
        assert_eq!(service.deployments.len(), 1);
        let primary = &service.deployments[0];
        assert_eq!(primary.status, DeploymentStatus::Primary);
        assert_eq!(primary.rollout_state, RolloutState::InProgress);
        assert!(primary.id.starts_with("ecs-svc/"), "{}", primary.id);
        assert_eq!(primary.pending_count, 2, "both tasks placed at once");
        assert!(
            fleet.create_service("prod", new_service(&td, 2)).is_err(),
            "not idempotent"
        );
        assert!(matches!(
            fleet.create_service("nope", new_service(&td, 1)),
            Err(EcsError::ClusterNotFound)
        ));
    }

    #[test]
    fn an_update_with_a_new_revision_starts_a_new_primary_deployment() {
        let mut fleet = fixture::fleet(2, 4);
        let first = fixture::mps_family(&mut fleet, "embed", 4_096, None);
        let second = fixture::mps_family(&mut fleet, "embed", 8_192, None);
        fleet
            .create_service("prod", new_service(&first, 2))
            .expect("created");
        let same = ServiceUpdate {
            task_definition: Some(first.clone()),
            ..ServiceUpdate::default()
        };
        assert_eq!(
            fleet
                .update_service("prod", "embed", same)
                .expect("updated")
                .deployments
                .len(),
            1
        );
        let new = ServiceUpdate {
            task_definition: Some(second.clone()),
            ..ServiceUpdate::default()
        };
        let service = fleet.update_service("prod", "embed", new).expect("updated");
        assert_eq!(service.deployments.len(), 2);
        assert_eq!(service.deployments[0].task_definition_arn, second);
        assert_eq!(service.deployments[0].status, DeploymentStatus::Primary);
        assert_eq!(service.deployments[1].status, DeploymentStatus::Active);
        assert!(matches!(
            fleet.update_service("prod", "nope", ServiceUpdate::default()),
            Err(EcsError::ServiceNotFound)
        ));
    }

    #[test]
    fn deployment_bounds_are_checked_as_ecs_checks_them() {
        let config = |maximum_percent, minimum_healthy_percent| DeploymentConfig {
            maximum_percent,
            minimum_healthy_percent,
            ..DeploymentConfig::default()
        };
        assert!(validate_config(&config(200, 100)).is_ok());
        assert!(validate_config(&config(99, 50)).is_err());
        assert!(validate_config(&config(201, 50)).is_err());
        assert!(validate_config(&config(150, 101)).is_err());
    }
}
