//! The scheduler: places tasks, moves them through their lifecycle, rolls services out within
//! their deployment configuration, and trips the circuit breaker, on the simulated clock.

use chrono::{DateTime, Duration, Utc};

use crate::{
    error::{invalid, EcsError},
    model::{
        Cluster, ContainerInstance, Deployment, DeploymentConfig, DeploymentStatus, Fleet,
        RolloutState, Service, Task, TaskContainer, TaskStatus,
    },
    placement::{self, GpuRequest, NoFit},
};

/// Simulated seconds from a task's creation to `PENDING`.
const TO_PENDING_SECONDS: i64 = 2;
/// Placement failures are counted at most once per this many simulated seconds.
const PLACEMENT_RETRY_SECONDS: i64 = 10;
/// A placement failure event is written at most once per this many simulated seconds.
const PLACEMENT_EVENT_SECONDS: i64 = 60;
/// Stopped tasks stay describable this long.
const STOPPED_KEPT_SECONDS: i64 = 3600;

/// What a new service asks for.
#[derive(Clone, Debug)]
pub struct NewService {
    pub name: String,
    pub task_definition: String,
    pub desired_count: u32,
    pub config: DeploymentConfig,
}

/// What an UpdateService changes.
#[derive(Clone, Debug, Default)]
pub struct ServiceUpdate {
    pub task_definition: Option<String>,
    pub desired_count: Option<u32>,
    pub config: Option<DeploymentConfig>,
    pub force_new_deployment: bool,
}

impl Fleet {
    /// Creates an empty cluster, or returns the one with that name.
    pub fn create_cluster(&mut self, name: &str) -> Result<&Cluster, EcsError> {
        if name.is_empty()
            || name.len() > 255
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(
                "clusterName must be 1 to 255 letters, numbers, hyphens and underscores.",
            ));
        }
        let arn = self.arn(&format!("cluster/{name}"));
        Ok(self
            .clusters
            .entry(name.to_string())
            .or_insert_with(|| Cluster {
                name: name.to_string(),
                arn,
                instances: Vec::new(),
                instance_index: Default::default(),
                services: Default::default(),
                tasks: Default::default(),
                moving: Default::default(),
            }))
    }

    /// Registers a container instance with the cluster.
    pub fn add_instance(&mut self, cluster: &str, instance: ContainerInstance) {
        if let Some(cluster) = self.clusters.get_mut(cluster) {
            cluster
                .instance_index
                .insert(instance.arn.clone(), cluster.instances.len());
            cluster.instances.push(instance);
        }
    }

    /// A new deployment ID: `ecs-svc/` and 19 digits.
    fn new_deployment_id(&mut self) -> String {
        let hex = self.new_hex_id();
        let number = u64::from_str_radix(&hex[..16], 16).unwrap_or(0) % 10_000_000_000_000_000_000;
        format!("ecs-svc/{number:019}")
    }

    fn push_event(&mut self, cluster: &str, service: &str, message: String) {
        let id = self.new_hex_id();
        let id = format!(
            "{}-{}-{}-{}-{}",
            &id[..8],
            &id[8..12],
            &id[12..16],
            &id[16..20],
            &id[20..]
        );
        let now = self.now;
        if let Some(service) = self
            .clusters
            .get_mut(cluster)
            .and_then(|c| c.services.get_mut(service))
        {
            service.push_event(id, now, message);
        }
    }

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
        if self.clusters[&key].services.contains_key(&new.name) {
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
            steady: false,
            last_completed_task_definition: None,
            tasks: Default::default(),
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
        if !self.clusters[&key].services.contains_key(&name) {
            return Err(EcsError::ServiceNotFound);
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
        if let Some(id) = deployment_id {
            let td = new_td.unwrap_or(current_td);
            start_deployment(svc, id, td, now);
        }
        svc.steady = false;
        self.reconcile(&key, &name);
        Ok(&self.clusters[&key].services[&name])
    }

    /// Moves the simulation forward to `to`, one simulated second at a time.
    pub fn advance(&mut self, to: DateTime<Utc>) {
        while self.now + Duration::seconds(1) <= to {
            let next = self.now + Duration::seconds(1);
            self.step(next);
        }
    }

    /// One step: task transitions, then every service's reconciliation.
    pub fn step(&mut self, now: DateTime<Utc>) {
        self.now = now;
        let keys: Vec<String> = self.clusters.keys().cloned().collect();
        for key in &keys {
            self.move_tasks(key);
            // A steady service with no task on the move has nothing to do: skip it, which keeps
            // a step of a large fleet cheap.
            let cluster = &self.clusters[key];
            let busy: std::collections::HashSet<&str> = cluster
                .moving
                .iter()
                .filter_map(|arn| cluster.tasks.get(arn))
                .filter_map(|task| task.group.strip_prefix("service:"))
                .collect();
            let services: Vec<String> = cluster
                .services
                .values()
                .filter(|svc| !svc.steady || busy.contains(svc.name.as_str()))
                .map(|svc| svc.name.clone())
                .collect();
            for service in services {
                self.reconcile(key, &service);
            }
            if now.timestamp() % 60 == 0 {
                self.forget_old_tasks(key);
            }
        }
    }

    /// Starts, fails and stops the tasks whose time has come.
    fn move_tasks(&mut self, key: &str) {
        let now = self.now;
        let Some(cluster) = self.clusters.get_mut(key) else {
            return;
        };
        let moving: Vec<String> = cluster.moving.iter().cloned().collect();
        let mut failed: Vec<(String, String, String)> = Vec::new();
        for arn in moving {
            let Some(task) = cluster.tasks.get_mut(&arn) else {
                cluster.moving.remove(&arn);
                continue;
            };
            if task.desired_status == TaskStatus::Stopped {
                if task
                    .stopping_at
                    .is_some_and(|at| now >= at + Duration::seconds(2))
                {
                    finish_stop(cluster, &arn, now);
                }
                continue;
            }
            if task.last_status == TaskStatus::Provisioning && now >= task.pending_at {
                task.last_status = TaskStatus::Pending;
            }
            if task.last_status == TaskStatus::Pending && now >= task.running_at {
                if let Some(code) = task.fails_with {
                    task.failed_to_start = true;
                    task.desired_status = TaskStatus::Stopped;
                    task.stopping_at = Some(now);
                    task.stop_code = Some("EssentialContainerExited");
                    task.stopped_reason = Some("Essential container in task exited".to_string());
                    for container in &mut task.containers {
                        container.exit_code = Some(code);
                        container.reason = Some("Essential container exited".to_string());
                    }
                    if let Some(service) = task.group.strip_prefix("service:") {
                        failed.push((
                            service.to_string(),
                            task.started_by.clone().unwrap_or_default(),
                            arn.clone(),
                        ));
                    }
                    continue;
                }
                task.last_status = TaskStatus::Running;
                task.started_at = Some(now);
                let instance_arn = task.instance_arn.clone();
                cluster.moving.remove(&arn);
                if let Some(instance) = cluster.instance_mut(&instance_arn) {
                    instance.pending_tasks = instance.pending_tasks.saturating_sub(1);
                    instance.running_tasks += 1;
                }
            }
        }
        for (service, deployment, arn) in failed {
            if let Some(svc) = self
                .clusters
                .get_mut(key)
                .and_then(|c| c.services.get_mut(&service))
            {
                svc.tasks.remove(&arn);
                svc.steady = false;
                if let Some(d) = svc.deployments.iter_mut().find(|d| d.id == deployment) {
                    d.failed_tasks += 1;
                    d.updated_at = now;
                }
            }
            let id = task_list(std::slice::from_ref(&arn));
            self.push_event(
                key,
                &service,
                format!("(service {service}) has stopped 1 running tasks: {id}."),
            );
        }
    }

    /// Drops stopped tasks older than an hour, as ECS forgets them.
    fn forget_old_tasks(&mut self, key: &str) {
        let cutoff = self.now - Duration::seconds(STOPPED_KEPT_SECONDS);
        if let Some(cluster) = self.clusters.get_mut(key) {
            cluster
                .tasks
                .retain(|_, task| task.stopped_at.is_none_or(|at| at > cutoff));
        }
    }

    /// Places one task of `td_arn` in the cluster, or says why no instance can take it.
    pub fn run_task(
        &mut self,
        key: &str,
        td_arn: &str,
        group: String,
        started_by: Option<String>,
    ) -> Result<String, (NoFit, Option<String>)> {
        let td = self
            .task_definition(td_arn)
            .cloned()
            .ok_or((NoFit::NoGpus, None))?;
        let now = self.now;
        let (instance_arn, assignment) = {
            let cluster = self.clusters.get(key).ok_or((NoFit::NoGpus, None))?;
            choose_instance(cluster, &td.gpu, td.cpu, td.memory_mib)?
        };
        let hex = self.new_hex_id();
        let cluster = self.clusters.get_mut(key).ok_or((NoFit::NoGpus, None))?;
        let region_account = cluster
            .arn
            .split(":cluster/")
            .next()
            .unwrap_or_default()
            .to_string();
        let task_arn = format!("{region_account}:task/{key}/{hex}");
        let instance = cluster
            .instance_mut(&instance_arn)
            .ok_or((NoFit::NoGpus, None))?;
        placement::allocate(&mut instance.gpus, &td.gpu, &assignment);
        instance.cpu_remaining = instance.cpu_remaining.saturating_sub(td.cpu);
        instance.memory_remaining_mib = instance.memory_remaining_mib.saturating_sub(td.memory_mib);
        instance.pending_tasks += 1;
        let containers = td
            .containers
            .iter()
            .enumerate()
            .map(|(index, name)| {
                let gpu_ids = td
                    .gpu_containers
                    .iter()
                    .position(|gpu_name| gpu_name == name)
                    .and_then(|position| assignment.per_container.get(position))
                    .map(|indexes| {
                        indexes
                            .iter()
                            .filter_map(|i| instance.gpu_ids.get(*i).cloned())
                            .collect()
                    })
                    .unwrap_or_default();
                TaskContainer {
                    name: name.clone(),
                    arn: format!(
                        "{region_account}:container/{key}/{hex}/{:08x}",
                        crate::model::splitmix(index as u64 ^ hex.len() as u64) as u32
                    ),
                    gpu_ids,
                    exit_code: None,
                    reason: None,
                }
            })
            .collect();
        // Start-up takes 6 to 15 simulated seconds, varying by task.
        let start_seconds = 6
            + (crate::model::splitmix(
                hex.len() as u64 ^ u64::from_str_radix(&hex[..8], 16).unwrap_or(0),
            ) % 10) as i64;
        let running_at = now + Duration::seconds(start_seconds);
        let task = Task {
            arn: task_arn.clone(),
            cluster_arn: cluster.arn.clone(),
            instance_arn,
            task_definition_arn: td.arn.clone(),
            group,
            started_by,
            last_status: TaskStatus::Provisioning,
            desired_status: TaskStatus::Running,
            containers,
            gpu: td.gpu.clone(),
            assignment,
            cpu: td.cpu,
            memory_mib: td.memory_mib,
            created_at: now,
            pending_at: now + Duration::seconds(TO_PENDING_SECONDS),
            running_at,
            started_at: None,
            fails_with: td.fails_with,
            stopping_at: None,
            stopped_at: None,
            stopped_reason: None,
            stop_code: None,
            failed_to_start: false,
        };
        cluster.tasks.insert(task_arn.clone(), task);
        cluster.moving.insert(task_arn.clone());
        Ok(task_arn)
    }

    /// Tells a task to stop; it reaches `STOPPED` and frees its resources two seconds later.
    pub fn stop_task(
        &mut self,
        key: &str,
        task_arn: &str,
        reason: &str,
        code: &'static str,
    ) -> bool {
        let now = self.now;
        let Some(cluster) = self.clusters.get_mut(key) else {
            return false;
        };
        let Some(task) = cluster.tasks.get_mut(task_arn) else {
            return false;
        };
        if task.desired_status == TaskStatus::Stopped {
            return false;
        }
        task.desired_status = TaskStatus::Stopped;
        task.stopping_at = Some(now);
        task.stopped_reason = Some(reason.to_string());
        task.stop_code = Some(code);
        if task.last_status == TaskStatus::Running {
            task.last_status = TaskStatus::Deprovisioning;
        }
        let group = task.group.clone();
        cluster.moving.insert(task_arn.to_string());
        if let Some(service) = group.strip_prefix("service:") {
            if let Some(svc) = cluster.services.get_mut(service) {
                svc.tasks.remove(task_arn);
                svc.steady = false;
            }
        }
        true
    }

    /// Marks an instance's MPS daemon as impaired: its MPS tasks stop, as the agent stops them.
    pub fn impair_mps(&mut self, key: &str, instance_arn: &str, reason: &str) {
        let Some(cluster) = self.clusters.get_mut(key) else {
            return;
        };
        if let Some(instance) = cluster.instance_mut(instance_arn) {
            instance.mps_impaired = Some(reason.to_string());
        }
        let victims: Vec<String> = cluster
            .tasks
            .values()
            .filter(|t| {
                t.instance_arn == instance_arn && t.is_live() && matches!(t.gpu, GpuRequest::Mps(_))
            })
            .map(|t| t.arn.clone())
            .collect();
        for arn in victims {
            self.stop_task(
                key,
                &arn,
                "MPS control daemon is not responding",
                "TaskFailedToStart",
            );
        }
    }

    /// Brings a service toward its desired state within its deployment configuration.
    fn reconcile(&mut self, key: &str, name: &str) {
        let now = self.now;
        // Counts per deployment from the live tasks.
        let (desired, config, primary_id, primary_td, group) = {
            let Some(cluster) = self.clusters.get_mut(key) else {
                return;
            };
            let Some(svc) = cluster.services.get(name) else {
                return;
            };
            let mut counts: Vec<(u32, u32)> = vec![(0, 0); svc.deployments.len()];
            for arn in &svc.tasks {
                if let Some(task) = cluster.tasks.get(arn) {
                    let index = svc
                        .deployments
                        .iter()
                        .position(|d| Some(&d.id) == task.started_by.as_ref());
                    if let Some(index) = index {
                        if task.last_status == TaskStatus::Running {
                            counts[index].0 += 1;
                        } else {
                            counts[index].1 += 1;
                        }
                    }
                }
            }
            let svc = cluster
                .services
                .get_mut(name)
                .expect("service exists: checked above");
            for (deployment, (running, pending)) in svc.deployments.iter_mut().zip(counts) {
                deployment.running_count = running;
                deployment.pending_count = pending;
            }
            let Some(primary) = svc.deployments.first() else {
                return;
            };
            (
                svc.desired_count,
                svc.config.clone(),
                primary.id.clone(),
                primary.task_definition_arn.clone(),
                format!("service:{name}"),
            )
        };
        let max_total = (desired * config.maximum_percent / 100).max(1);
        let min_healthy = (desired * config.minimum_healthy_percent).div_ceil(100);

        // 1. Start primary tasks while there is room under maximumPercent.
        let mut started = Vec::new();
        let mut placement_failure: Option<(NoFit, Option<String>)> = None;
        loop {
            let svc = &self.clusters[key].services[name];
            let primary = &svc.deployments[0];
            let live_total: u32 = svc
                .deployments
                .iter()
                .map(|d| d.running_count + d.pending_count)
                .sum();
            let primary_live = primary.running_count + primary.pending_count;
            if primary_live >= desired
                || live_total >= max_total
                || primary.rollout_state == RolloutState::Failed
            {
                break;
            }
            if primary
                .last_placement_failure
                .is_some_and(|at| now < at + Duration::seconds(PLACEMENT_RETRY_SECONDS))
            {
                break;
            }
            match self.run_task(key, &primary_td, group.clone(), Some(primary_id.clone())) {
                Ok(arn) => {
                    let svc = self
                        .clusters
                        .get_mut(key)
                        .and_then(|c| c.services.get_mut(name))
                        .expect("service exists");
                    svc.tasks.insert(arn.clone());
                    svc.deployments[0].pending_count += 1;
                    svc.deployments[0].updated_at = now;
                    started.push(arn);
                }
                Err(why) => {
                    placement_failure = Some(why);
                    break;
                }
            }
        }
        if !started.is_empty() {
            let ids = task_list(&started);
            self.push_event(
                key,
                name,
                format!(
                    "(service {name}) has started {} tasks: {ids}.",
                    started.len()
                ),
            );
        }
        if let Some((why, closest)) = placement_failure {
            self.record_placement_failure(key, name, &why, closest.as_deref());
        }

        // 2. Stop old deployments' tasks while enough stay healthy; pending ones first.
        let (old_tasks, running_total, primary_live) = {
            let cluster = &self.clusters[key];
            let svc = &cluster.services[name];
            let mut old: Vec<(bool, String)> = svc
                .tasks
                .iter()
                .filter_map(|arn| cluster.tasks.get(arn))
                .filter(|t| t.started_by.as_deref() != Some(primary_id.as_str()))
                .map(|t| (t.last_status == TaskStatus::Running, t.arn.clone()))
                .collect();
            old.sort();
            let running: u32 = svc.deployments.iter().map(|d| d.running_count).sum();
            let primary = &svc.deployments[0];
            (old, running, primary.running_count + primary.pending_count)
        };
        let mut running_total = running_total;
        let mut stopped = Vec::new();
        let primary_running = self.clusters[key].services[name].deployments[0].running_count;
        for (running, arn) in old_tasks {
            if running {
                // Keep old tasks while the new ones are not all started, unless minimumHealthyPercent
                // leaves room to make space for them.
                let needed_room = primary_live < desired;
                let over = running_total > min_healthy;
                let replaced = running_total > desired || primary_running >= desired;
                if !(over && (needed_room || replaced)) {
                    continue;
                }
                running_total -= 1;
            }
            if self.stop_task(
                key,
                &arn,
                "Scaling activity initiated by (deployment ecs-svc)",
                "ServiceSchedulerInitiated",
            ) {
                stopped.push(arn);
            }
        }
        // Excess primary tasks after a scale-in.
        let excess: Vec<String> = {
            let cluster = &self.clusters[key];
            let svc = &cluster.services[name];
            let primary = &svc.deployments[0];
            let live = primary.running_count + primary.pending_count;
            let mut primary_tasks: Vec<(bool, String)> = svc
                .tasks
                .iter()
                .filter_map(|arn| cluster.tasks.get(arn))
                .filter(|t| t.started_by.as_deref() == Some(primary_id.as_str()))
                .map(|t| (t.last_status == TaskStatus::Running, t.arn.clone()))
                .collect();
            primary_tasks.sort();
            primary_tasks
                .into_iter()
                .take(live.saturating_sub(desired) as usize)
                .map(|(_, arn)| arn)
                .collect()
        };
        for arn in excess {
            if self.stop_task(
                key,
                &arn,
                "Scaling activity initiated by (deployment ecs-svc)",
                "ServiceSchedulerInitiated",
            ) {
                stopped.push(arn);
            }
        }
        if !stopped.is_empty() {
            let ids = task_list(&stopped);
            self.push_event(
                key,
                name,
                format!(
                    "(service {name}) has stopped {} running tasks: {ids}.",
                    stopped.len()
                ),
            );
        }

        self.settle_rollout(key, name);
    }

    fn record_placement_failure(
        &mut self,
        key: &str,
        name: &str,
        why: &NoFit,
        closest: Option<&str>,
    ) {
        let now = self.now;
        let write_event = {
            let Some(svc) = self
                .clusters
                .get_mut(key)
                .and_then(|c| c.services.get_mut(name))
            else {
                return;
            };
            let primary = &mut svc.deployments[0];
            primary.failed_placements += 1;
            primary.last_placement_failure = Some(now);
            primary.updated_at = now;
            let due = svc
                .last_placement_event
                .is_none_or(|at| now >= at + Duration::seconds(PLACEMENT_EVENT_SECONDS));
            if due {
                svc.last_placement_event = Some(now);
            }
            due
        };
        if write_event {
            let closest = closest
                .map(|id| {
                    format!(
                        " The closest matching (container-instance {id}) {}.",
                        reason_text(why)
                    )
                })
                .unwrap_or_default();
            self.push_event(
                key,
                name,
                format!(
                    "(service {name}) was unable to place a task because no container instance met all of its requirements.{closest} For more information, see the Troubleshooting section of the Amazon ECS Developer Guide."
                ),
            );
        }
    }

    /// Completes, fails or rolls back the primary deployment, and says when the service is steady.
    fn settle_rollout(&mut self, key: &str, name: &str) {
        let now = self.now;
        let Some(svc) = self.clusters.get(key).and_then(|c| c.services.get(name)) else {
            return;
        };
        let primary = &svc.deployments[0];
        let old_live: u32 = svc.deployments[1..]
            .iter()
            .map(|d| d.running_count + d.pending_count)
            .sum();
        let threshold = svc.desired_count.div_ceil(2).clamp(3, 200);
        let failures = primary.failed_tasks + primary.failed_placements;
        let breaker = svc.config.circuit_breaker_enable;
        let rollback = svc.config.circuit_breaker_rollback;
        let in_progress = primary.rollout_state == RolloutState::InProgress;
        let done = primary.running_count == svc.desired_count
            && primary.pending_count == 0
            && old_live == 0;
        let primary_id = primary.id.clone();
        let steady = svc.steady;
        let rollback_to = svc.last_completed_task_definition.clone();

        if in_progress && breaker && failures >= threshold {
            let reason = if primary.failed_tasks > 0 {
                "tasks failed to start"
            } else {
                "tasks could not be placed"
            };
            let target = rollback.then_some(rollback_to).flatten();
            let new_id = target.as_ref().map(|_| self.new_deployment_id());
            let svc = self
                .clusters
                .get_mut(key)
                .and_then(|c| c.services.get_mut(name))
                .expect("service exists");
            let primary = &mut svc.deployments[0];
            primary.rollout_state = RolloutState::Failed;
            primary.rollout_state_reason = format!("ECS deployment circuit breaker: {reason}.");
            primary.updated_at = now;
            if let (Some(td), Some(id)) = (target.clone(), new_id.clone()) {
                start_deployment(svc, id, td, now);
            }
            svc.steady = false;
            self.push_event(
                key,
                name,
                format!("(service {name}) (deployment {primary_id}) deployment failed: {reason}."),
            );
            if let Some(id) = new_id {
                self.push_event(key, name, format!("(service {name}) (deployment {primary_id}) rolling back to deployment {id}."));
            }
            return;
        }
        if in_progress && done {
            let svc = self
                .clusters
                .get_mut(key)
                .and_then(|c| c.services.get_mut(name))
                .expect("service exists");
            svc.deployments.truncate(1);
            let primary = &mut svc.deployments[0];
            primary.rollout_state = RolloutState::Completed;
            primary.rollout_state_reason = "ECS deployment completed.".to_string();
            primary.updated_at = now;
            svc.last_completed_task_definition = Some(primary.task_definition_arn.clone());
            self.push_event(
                key,
                name,
                format!("(service {name}) (deployment {primary_id}) deployment completed."),
            );
        }
        let svc = &self.clusters[key].services[name];
        let is_steady = svc.deployments.len() == 1
            && svc.deployments[0].running_count == svc.desired_count
            && svc.deployments[0].pending_count == 0;
        if is_steady && !steady {
            self.push_event(
                key,
                name,
                format!("(service {name}) has reached a steady state."),
            );
        }
        if let Some(svc) = self
            .clusters
            .get_mut(key)
            .and_then(|c| c.services.get_mut(name))
        {
            svc.steady = is_steady;
            // Drop old deployments that have no tasks left once the primary has moved on.
            if svc.deployments.len() > 1
                && svc.deployments[0].rollout_state != RolloutState::InProgress
            {
                let primary = svc.deployments[0].clone();
                svc.deployments
                    .retain(|d| d.id == primary.id || d.running_count + d.pending_count > 0);
            }
        }
    }
}

/// `(task id) (task id)`, as ECS names tasks in service events.
fn task_list(arns: &[String]) -> String {
    let ids: Vec<String> = arns
        .iter()
        .map(|arn| format!("(task {})", arn.rsplit('/').next().unwrap_or(arn)))
        .collect();
    ids.join(" ")
}

/// Makes `id` the PRIMARY deployment running `td`; earlier deployments become ACTIVE.
fn start_deployment(svc: &mut Service, id: String, td: String, now: DateTime<Utc>) {
    for deployment in &mut svc.deployments {
        deployment.status = DeploymentStatus::Active;
    }
    svc.task_definition_arn = td.clone();
    let deployment = new_deployment(id, td, svc.desired_count, now);
    svc.deployments.insert(0, deployment);
}

/// A PRIMARY deployment that has not started a task yet.
fn new_deployment(id: String, td: String, desired_count: u32, now: DateTime<Utc>) -> Deployment {
    Deployment {
        id,
        status: DeploymentStatus::Primary,
        task_definition_arn: td,
        desired_count,
        running_count: 0,
        pending_count: 0,
        failed_tasks: 0,
        failed_placements: 0,
        last_placement_failure: None,
        rollout_state: RolloutState::InProgress,
        rollout_state_reason: "ECS deployment in progress.".to_string(),
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

/// Finishes a stop: frees the task's GPUs, CPU and memory.
fn finish_stop(cluster: &mut Cluster, arn: &str, now: DateTime<Utc>) {
    cluster.moving.remove(arn);
    let Some(task) = cluster.tasks.get_mut(arn) else {
        return;
    };
    let was_running = task.started_at.is_some() && !task.failed_to_start;
    task.last_status = TaskStatus::Stopped;
    task.stopped_at = Some(now);
    // A container that never started has no exit code, as in ECS.
    if was_running || task.failed_to_start {
        for container in &mut task.containers {
            container
                .exit_code
                .get_or_insert(if task.failed_to_start { 1 } else { 0 });
        }
    }
    let (gpu, assignment, cpu, memory, instance_arn) = (
        task.gpu.clone(),
        task.assignment.clone(),
        task.cpu,
        task.memory_mib,
        task.instance_arn.clone(),
    );
    if let Some(instance) = cluster.instance_mut(&instance_arn) {
        placement::release(&mut instance.gpus, &gpu, &assignment);
        instance.cpu_remaining = (instance.cpu_remaining + cpu).min(instance.cpu);
        instance.memory_remaining_mib =
            (instance.memory_remaining_mib + memory).min(instance.memory_mib);
        if was_running {
            instance.running_tasks = instance.running_tasks.saturating_sub(1);
        } else {
            instance.pending_tasks = instance.pending_tasks.saturating_sub(1);
        }
    }
}

/// Picks the instance for a task: best fit on GPU memory for MPS, fewest idle GPUs that still
/// suffice for whole GPUs, first fit otherwise. On failure, the reason at the closest instance.
fn choose_instance(
    cluster: &Cluster,
    gpu: &GpuRequest,
    cpu: u32,
    memory_mib: u32,
) -> Result<(String, placement::GpuAssignment), (NoFit, Option<String>)> {
    let mut best: Option<(u64, usize, placement::GpuAssignment)> = None;
    let mut closest: Option<(u32, NoFit, String)> = None;
    for (index, instance) in cluster.instances.iter().enumerate() {
        if !instance.accepts_tasks()
            || instance.cpu_remaining < cpu
            || instance.memory_remaining_mib < memory_mib
        {
            continue;
        }
        let mps_ok = instance.mps_capable && instance.mps_impaired.is_none();
        match placement::find_gpus(&instance.gpus, mps_ok, gpu) {
            Ok(assignment) => {
                let score = match gpu {
                    GpuRequest::Mps(_) => assignment
                        .per_container
                        .first()
                        .and_then(|g| g.first())
                        .map_or(0, |g| u64::from(instance.gpus[*g].remaining_memory_mib)),
                    GpuRequest::Whole(_) => instance
                        .gpus
                        .iter()
                        .filter(|g| g.mode == placement::SharingMode::Idle)
                        .count() as u64,
                    GpuRequest::None => 0,
                };
                if best.as_ref().is_none_or(|(s, _, _)| score < *s) {
                    let exact = matches!(gpu, GpuRequest::None);
                    best = Some((score, index, assignment));
                    if exact {
                        break;
                    }
                }
            }
            Err(why) => {
                let nearness = match &why {
                    NoFit::NotEnoughGpuMemory {
                        largest_free_mib, ..
                    } => *largest_free_mib,
                    NoFit::NotEnoughIdleGpus { idle, .. } => *idle,
                    _ => 0,
                };
                if closest.as_ref().is_none_or(|(n, _, _)| nearness > *n) {
                    closest = Some((nearness, why, instance.short_id().to_string()));
                }
            }
        }
    }
    match best {
        Some((_, index, assignment)) => Ok((cluster.instances[index].arn.clone(), assignment)),
        None => Err(match closest {
            Some((_, why, id)) => (why, Some(id)),
            None => (NoFit::NoGpus, None),
        }),
    }
}

fn reason_text(why: &NoFit) -> &'static str {
    match why {
        NoFit::NoGpus => "has no GPUs",
        NoFit::NoMpsCapability => {
            "is missing an attribute required by your task: ecs.capability.gpu-sharing-mps"
        }
        NoFit::NotEnoughGpuMemory { .. } => "has insufficient GPU memory available",
        NoFit::NotEnoughIdleGpus { .. } => "has insufficient GPU available",
        NoFit::LargerThanAnyGpu { .. } => "has no GPU with enough memory for the request",
    }
}
