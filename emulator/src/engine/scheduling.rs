//! Tasks on their instances: placement (best fit on GPU memory for MPS, fewest idle GPUs that
//! suffice for whole GPUs), the lifecycle from PROVISIONING to RUNNING or to a failed start, and
//! stops that free the task's GPUs, CPU and memory.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};

use super::task_list;

use crate::{
    model::{Cluster, Fleet, Task, TaskContainer, TaskStatus},
    placement::{
        self,
        resources::{Blocked, Needs},
        GpuRequest, NoFit,
    },
};

/// What the agent says of an MPS task it cannot start because the instance's MPS control
/// daemon does not answer.
pub const MPS_NOT_RESPONDING: &str = "MPS control daemon is not responding on this instance";

/// Simulated seconds from a task's creation to `PENDING`.
const TO_PENDING_SECONDS: i64 = 2;
/// Stopped tasks stay describable this long.
const STOPPED_KEPT_SECONDS: i64 = 3600;

impl Fleet {
    /// Starts, fails and stops the tasks whose time has come.
    pub(super) fn move_tasks(&mut self, key: &str) {
        let now = self.now;
        let Some(cluster) = self.clusters.get_mut(key) else {
            return;
        };
        let moving: Vec<String> = cluster.moving.iter().cloned().collect();
        // What each moving task's status was, so that every change is told as an event.
        let before: Vec<(TaskStatus, TaskStatus)> = moving
            .iter()
            .map(|arn| {
                cluster
                    .tasks
                    .get(arn)
                    .map_or((TaskStatus::Stopped, TaskStatus::Stopped), |t| {
                        (t.last_status, t.desired_status)
                    })
            })
            .collect();
        let mut failed: Vec<(String, String, String)> = Vec::new();
        let impaired: BTreeSet<String> = cluster
            .instances
            .iter()
            .filter(|i| i.mps_impaired.is_some())
            .map(|i| i.arn.clone())
            .collect();
        for arn in &moving {
            failed.extend(step_task(cluster, arn, now, &impaired));
        }
        for (arn, was) in moving.into_iter().zip(before) {
            let now_is = cluster
                .tasks
                .get(&arn)
                .map(|t| (t.last_status, t.desired_status));
            if now_is.is_some_and(|status| status != was) {
                cluster.changed.push(arn);
            }
        }
        self.count_failed_starts(key, failed);
    }

    /// Counts tasks of services that failed to start (`(service, deployment, task)`) against
    /// their deployments, and tells each as a service event.
    fn count_failed_starts(&mut self, key: &str, failed: Vec<(String, String, String)>) {
        let now = self.now;
        for (service, deployment, arn) in failed {
            if let Some(svc) = self
                .clusters
                .get_mut(key)
                .and_then(|c| c.services.get_mut(&service))
            {
                svc.tasks.remove(&arn);
                svc.steady = false;
                if let Some(d) = svc.deployments.iter_mut().find(|d| d.id == deployment) {
                    d.failed_tasks += u32::from(!d.has_run_a_task);
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
    pub(super) fn forget_old_tasks(&mut self, key: &str) {
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
    ) -> Result<String, (Unplaced, Option<String>)> {
        self.run_task_on(key, td_arn, group, started_by, None)
    }

    /// Places one task of `td_arn` in the cluster, on the instances of `provider` only when one
    /// is given, or says why no instance can take it.
    pub fn run_task_on(
        &mut self,
        key: &str,
        td_arn: &str,
        group: String,
        started_by: Option<String>,
        provider: Option<&str>,
    ) -> Result<String, (Unplaced, Option<String>)> {
        let nothing = || (Unplaced::Gpu(NoFit::NoGpus), None);
        let td = self.task_definition(td_arn).cloned().ok_or_else(nothing)?;
        let placed = {
            let cluster = self.clusters.get(key).ok_or_else(nothing)?;
            let (needs, strategies) = needs_and_strategies(cluster, &td.needs, &group);
            let (arn, assignment) =
                choose_instance(cluster, &td.gpu, &needs, &group, &strategies, provider)?;
            (arn, assignment, needs)
        };
        let task_arn = self
            .new_task(key, &td, group, started_by, provider)
            .ok_or_else(nothing)?;
        self.put_task(key, &task_arn, placed);
        Ok(task_arn)
    }

    /// A task of `td_arn` for `provider` that no instance can take now: it waits in
    /// PROVISIONING with no instance until the provider has capacity for it.
    pub fn wait_for_capacity(
        &mut self,
        key: &str,
        td_arn: &str,
        group: String,
        started_by: Option<String>,
        provider: &str,
    ) -> Option<String> {
        let td = self.task_definition(td_arn).cloned()?;
        let arn = self.new_task(key, &td, group, started_by, Some(provider))?;
        self.clusters.get_mut(key)?.changed.push(arn.clone());
        Some(arn)
    }

    /// Places a task that waits for capacity on an instance of its provider that can take it
    /// now; whether it was placed.
    pub(super) fn place_waiting(&mut self, key: &str, task_arn: &str) -> bool {
        let placed = {
            let Some(cluster) = self.clusters.get(key) else {
                return false;
            };
            let Some(task) = cluster.tasks.get(task_arn) else {
                return false;
            };
            let Some(td) = self.task_definition(&task.task_definition_arn) else {
                return false;
            };
            let (needs, strategies) = needs_and_strategies(cluster, &td.needs, &task.group);
            let provider = task.capacity_provider.as_deref();
            match choose_instance(cluster, &td.gpu, &needs, &task.group, &strategies, provider) {
                Ok((arn, assignment)) => (arn, assignment, needs),
                Err(_) => return false,
            }
        };
        self.put_task(key, task_arn, placed);
        true
    }

    /// A new task of `td` with no instance yet, in PROVISIONING.
    fn new_task(
        &mut self,
        key: &str,
        td: &crate::model::TaskDefinition,
        group: String,
        started_by: Option<String>,
        provider: Option<&str>,
    ) -> Option<String> {
        let now = self.now;
        let hex = self.new_hex_id();
        let cluster = self.clusters.get_mut(key)?;
        let region_account = cluster.arn.split(":cluster/").next().unwrap_or_default();
        let task_arn = format!("{region_account}:task/{key}/{hex}");
        let container_arn = |index: usize| {
            format!(
                "{region_account}:container/{key}/{hex}/{:08x}",
                crate::model::splitmix(index as u64 ^ hex.len() as u64) as u32
            )
        };
        let no_gpus = placement::GpuAssignment {
            per_container: Vec::new(),
        };
        let task = Task {
            arn: task_arn.clone(),
            cluster_arn: cluster.arn.clone(),
            instance_arn: String::new(),
            task_definition_arn: td.arn.clone(),
            group,
            started_by,
            capacity_provider: provider.map(str::to_string),
            last_status: TaskStatus::Provisioning,
            desired_status: TaskStatus::Running,
            containers: containers_of(td, &no_gpus, &[], container_arn),
            gpu: td.gpu.clone(),
            assignment: no_gpus,
            needs: td.needs.clone(),
            created_at: now,
            pending_at: now + Duration::seconds(TO_PENDING_SECONDS),
            running_at: now + Duration::seconds(start_seconds(&hex)),
            started_at: None,
            fails_with: td.fails_with,
            stopping_at: None,
            stopped_at: None,
            stopped_reason: None,
            stop_code: None,
            failed_to_start: false,
            version: 1,
        };
        cluster.tasks.insert(task_arn.clone(), task);
        Some(task_arn)
    }

    /// Puts a task on the instance chosen for it: the GPUs and the rest it needs are taken, and
    /// it starts from there (PROVISIONING for `awsvpc`, its ENI; PENDING for bridge and host).
    fn put_task(
        &mut self,
        key: &str,
        task_arn: &str,
        (instance_arn, assignment, needs): (String, placement::GpuAssignment, Needs),
    ) {
        let now = self.now;
        let td = self
            .clusters
            .get(key)
            .and_then(|c| c.tasks.get(task_arn))
            .and_then(|t| self.task_definition(&t.task_definition_arn))
            .cloned();
        let Some(cluster) = self.clusters.get_mut(key) else {
            return;
        };
        let Some(index) = cluster.instance_index.get(&instance_arn).copied() else {
            return;
        };
        let Some(instance) = cluster.instances.get_mut(index) else {
            return;
        };
        let Some(task) = cluster.tasks.get_mut(task_arn) else {
            return;
        };
        placement::allocate(&mut instance.gpus, &task.gpu, &assignment);
        placement::resources::take(&mut instance.room, &needs);
        instance.pending_tasks += 1;
        instance.version += 1;
        if task.capacity_provider.is_some() {
            task.capacity_provider = instance.capacity_provider.clone();
        }
        if let Some(td) = td {
            let arns: Vec<String> = task.containers.iter().map(|c| c.arn.clone()).collect();
            let container_arn = |index: usize| arns.get(index).cloned().unwrap_or_default();
            task.containers = containers_of(&td, &assignment, &instance.gpu_ids, container_arn);
        }
        let start_takes = task.running_at - task.created_at;
        task.instance_arn = instance_arn;
        task.assignment = assignment;
        task.last_status = if needs.awsvpc {
            TaskStatus::Provisioning
        } else {
            TaskStatus::Pending
        };
        task.needs = needs;
        task.pending_at = now + Duration::seconds(TO_PENDING_SECONDS);
        task.running_at = now + start_takes;
        task.version += u64::from(task.created_at != now);
        cluster.changed.push(task_arn.to_string());
        cluster.moving.insert(task_arn.to_string());
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
        cluster.changed.push(task_arn.to_string());
        if let Some(service) = group.strip_prefix("service:") {
            if let Some(svc) = cluster.services.get_mut(service) {
                svc.tasks.remove(task_arn);
                svc.steady = false;
            }
        }
        true
    }

    /// Marks an instance's MPS daemon as impaired, as the agent's health check does after
    /// three failed probes. It stops nothing: running tasks keep running. An MPS task that
    /// starts there later fails at start (see [`Fleet::move_tasks`]).
    pub fn impair_mps(&mut self, key: &str, instance_arn: &str) {
        let now = self.now;
        if let Some(instance) = self
            .clusters
            .get_mut(key)
            .and_then(|c| c.instance_mut(instance_arn))
        {
            if instance.mps_impaired.is_none() {
                instance.mps_impaired = Some(now);
                instance.version += 1;
            }
        }
    }
}

/// The agent's gate before an MPS task's containers are created: the task fails at start, its
/// containers never run (no exit code).
fn fail_start_mps_not_responding(task: &mut Task, now: DateTime<Utc>) {
    task.failed_to_start = true;
    task.desired_status = TaskStatus::Stopped;
    task.stopping_at = Some(now);
    task.stop_code = Some("TaskFailedToStart");
    task.stopped_reason = Some(MPS_NOT_RESPONDING.to_string());
    for container in &mut task.containers {
        container.reason = Some(MPS_NOT_RESPONDING.to_string());
    }
}

/// An essential container exited: a plain exit has the exit code, and no container reason (ECS
/// gives one only when the agent or the runtime stopped the container).
fn exit_at_once(task: &mut Task, code: i32, now: DateTime<Utc>) {
    task.desired_status = TaskStatus::Stopped;
    task.last_status = TaskStatus::Deprovisioning;
    task.stopping_at = Some(now);
    task.stop_code = Some("EssentialContainerExited");
    task.stopped_reason = Some("Essential container in task exited".to_string());
    for container in &mut task.containers {
        container.exit_code = Some(code);
    }
}

/// A failed task of a service, told to its service: (service, deployment, task ARN).
fn failed_service_task(task: &Task) -> Option<(String, String, String)> {
    let service = task.group.strip_prefix("service:")?;
    Some((
        service.to_string(),
        task.started_by.clone().unwrap_or_default(),
        task.arn.clone(),
    ))
}

/// One step of a moving task `arn` at `now`: a stop that finishes, PROVISIONING to PENDING to
/// RUNNING, an MPS task that fails at start on an `impaired` instance, a container that exits at
/// once. A service's task that failed to start: its service, deployment and ARN.
fn step_task(
    cluster: &mut Cluster,
    arn: &str,
    now: DateTime<Utc>,
    impaired: &BTreeSet<String>,
) -> Option<(String, String, String)> {
    let arn = arn.to_string();
    let Some(task) = cluster.tasks.get_mut(&arn) else {
        cluster.moving.remove(&arn);
        return None;
    };
    if task.desired_status == TaskStatus::Stopped {
        if task
            .stopping_at
            .is_some_and(|at| now >= at + Duration::seconds(2))
        {
            finish_stop(cluster, &arn, now);
        }
        return None;
    }
    if task.last_status == TaskStatus::Provisioning && now >= task.pending_at {
        task.last_status = TaskStatus::Pending;
    }
    if task.last_status == TaskStatus::Pending
        && now >= task.running_at
        && matches!(task.gpu, GpuRequest::Mps(_))
        && impaired.contains(&task.instance_arn)
    {
        fail_start_mps_not_responding(task, now);
        return failed_service_task(task);
    }
    // A container that exits at once: the task reached RUNNING, and stops a second
    // later with the container's exit code.
    if let (TaskStatus::Running, Some(code), Some(started)) =
        (task.last_status, task.fails_with, task.started_at)
    {
        if now >= started + Duration::seconds(1) {
            exit_at_once(task, code, now);
            return failed_service_task(task);
        }
        return None;
    }
    if task.last_status == TaskStatus::Pending && now >= task.running_at {
        task.last_status = TaskStatus::Running;
        task.started_at = Some(now);
        let instance_arn = task.instance_arn.clone();
        // One that is about to exit stays on the list of tasks with a change to come.
        if task.fails_with.is_none() {
            cluster.moving.remove(&arn);
        }
        if let Some(instance) = cluster.instance_mut(&instance_arn) {
            instance.pending_tasks = instance.pending_tasks.saturating_sub(1);
            instance.running_tasks += 1;
            instance.version += 1;
        }
    }
    None
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
    if was_running {
        for container in &mut task.containers {
            container.exit_code.get_or_insert(0);
        }
    }
    let (gpu, assignment, needs, instance_arn) = (
        task.gpu.clone(),
        task.assignment.clone(),
        task.needs.clone(),
        task.instance_arn.clone(),
    );
    if let Some(instance) = cluster.instance_mut(&instance_arn) {
        placement::release(&mut instance.gpus, &gpu, &assignment);
        placement::resources::give_back(&mut instance.room, &needs);
        instance.room.cpu_remaining = instance.room.cpu_remaining.min(instance.cpu);
        instance.room.memory_remaining_mib =
            instance.room.memory_remaining_mib.min(instance.memory_mib);
        if was_running {
            instance.running_tasks = instance.running_tasks.saturating_sub(1);
        } else {
            instance.pending_tasks = instance.pending_tasks.saturating_sub(1);
        }
        instance.version += 1;
    }
}

/// Why no instance could take a task: its GPUs, or the rest of what it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unplaced {
    Gpu(NoFit),
    Room(Blocked),
}

impl Unplaced {
    /// The closing words of ECS's event for the closest matching instance.
    pub fn reason_text(&self) -> String {
        match self {
            Unplaced::Gpu(why) => reason_text(why).to_string(),
            Unplaced::Room(why) => why.ecs_words(),
        }
    }
}

/// A new task's containers: each with the GPUs it was given and its sharing strategy.
fn containers_of(
    td: &crate::model::TaskDefinition,
    assignment: &placement::GpuAssignment,
    gpu_ids: &[String],
    container_arn: impl Fn(usize) -> String,
) -> Vec<TaskContainer> {
    td.containers
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
                        .filter_map(|i| gpu_ids.get(*i).cloned())
                        .collect()
                })
                .unwrap_or_default();
            TaskContainer {
                name: name.clone(),
                gpu_sharing_strategy: sharing_strategy_of(&td.body, name),
                arn: container_arn(index),
                gpu_ids,
                exit_code: None,
                reason: None,
            }
        })
        .collect()
}

/// The `sharingStrategy` of a container's GPU resource requirement, as registered.
fn sharing_strategy_of(
    body: &serde_json::Map<String, serde_json::Value>,
    container: &str,
) -> Option<serde_json::Value> {
    body.get("containerDefinitions")
        .and_then(serde_json::Value::as_array)
        .and_then(|list| {
            list.iter()
                .find(|c| c.get("name").and_then(serde_json::Value::as_str) == Some(container))
        })
        .and_then(|c| c.get("resourceRequirements"))
        .and_then(serde_json::Value::as_array)
        .and_then(|list| list.iter().find_map(|r| r.get("sharingStrategy").cloned()))
}

/// Start-up takes 6 to 15 simulated seconds, varying by task.
fn start_seconds(hex: &str) -> i64 {
    let seed = hex.len() as u64 ^ u64::from_str_radix(&hex[..8.min(hex.len())], 16).unwrap_or(0);
    6 + (crate::model::splitmix(seed) % 10) as i64
}

pub(super) fn reason_text(why: &NoFit) -> &'static str {
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

mod choose;

pub(super) use choose::{choose_instance, needs_and_strategies};

#[cfg(test)]
mod tests;
