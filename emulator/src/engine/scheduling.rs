//! Tasks on their instances: placement (best fit on GPU memory for MPS, fewest idle GPUs that
//! suffice for whole GPUs), the lifecycle from PROVISIONING to RUNNING or to a failed start, and
//! stops that free the task's GPUs, CPU and memory.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};

use super::task_list;
use std::collections::HashMap;

use crate::{
    model::{Cluster, ContainerInstance, Fleet, Task, TaskContainer, TaskStatus},
    placement::{
        self,
        resources::{self, Blocked, Needs},
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
        let nothing = || (Unplaced::Gpu(NoFit::NoGpus), None);
        let td = self.task_definition(td_arn).cloned().ok_or_else(nothing)?;
        let now = self.now;
        let (instance_arn, assignment, needs) = {
            let cluster = self.clusters.get(key).ok_or_else(nothing)?;
            let (needs, strategies) = needs_and_strategies(cluster, &td.needs, &group);
            let (arn, assignment) = choose_instance(cluster, &td.gpu, &needs, &group, &strategies)?;
            (arn, assignment, needs)
        };
        let hex = self.new_hex_id();
        let cluster = self.clusters.get_mut(key).ok_or_else(nothing)?;
        let region_account = cluster
            .arn
            .split(":cluster/")
            .next()
            .unwrap_or_default()
            .to_string();
        let task_arn = format!("{region_account}:task/{key}/{hex}");
        let instance = cluster.instance_mut(&instance_arn).ok_or_else(nothing)?;
        placement::allocate(&mut instance.gpus, &td.gpu, &assignment);
        placement::resources::take(&mut instance.room, &needs);
        instance.pending_tasks += 1;
        instance.version += 1;
        let container_arn = |index: usize| {
            format!(
                "{region_account}:container/{key}/{hex}/{:08x}",
                crate::model::splitmix(index as u64 ^ hex.len() as u64) as u32
            )
        };
        let containers = containers_of(&td, &assignment, &instance.gpu_ids, container_arn);
        let task = Task {
            arn: task_arn.clone(),
            cluster_arn: cluster.arn.clone(),
            instance_arn,
            task_definition_arn: td.arn.clone(),
            group,
            started_by,
            // PROVISIONING is for awsvpc tasks (their ENI); bridge and host tasks start at
            // PENDING.
            last_status: if needs.awsvpc {
                TaskStatus::Provisioning
            } else {
                TaskStatus::Pending
            },
            desired_status: TaskStatus::Running,
            containers,
            gpu: td.gpu.clone(),
            assignment,
            needs,
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
        cluster.changed.push(task_arn.clone());
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

/// What a task of `group` needs: the task definition's needs joined by its service's own
/// constraints, and the service's strategies (by default, spread across Availability Zones)
/// that choose among the instances that fit.
fn needs_and_strategies(
    cluster: &Cluster,
    task_needs: &Needs,
    group: &str,
) -> (Needs, Vec<placement::strategy::Strategy>) {
    let mut needs = task_needs.clone();
    let mut strategies = Vec::new();
    if let Some(service) = group
        .strip_prefix("service:")
        .and_then(|name| cluster.services.get(name))
    {
        strategies = service.strategies();
        let extra =
            placement::resources::needs_of(&Default::default(), &service.placement_constraints)
                .unwrap_or_default();
        needs.distinct_instance |= extra.distinct_instance;
        needs.member_of.extend(extra.member_of);
    }
    (needs, strategies)
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

/// How many live tasks of `group` each instance runs. A service knows its live tasks; other
/// groups (and a service's tasks started outside its rollout) are looked for.
fn group_tasks_by_instance<'c>(cluster: &'c Cluster, group: &str) -> HashMap<&'c str, u32> {
    let mut group_tasks: HashMap<&str, u32> = HashMap::new();
    let service_tasks = group
        .strip_prefix("service:")
        .and_then(|name| cluster.services.get(name))
        .map(|s| &s.tasks)
        .filter(|tasks| !tasks.is_empty());
    let live: Box<dyn Iterator<Item = &crate::model::Task>> = match service_tasks {
        Some(arns) => Box::new(arns.iter().filter_map(|arn| cluster.tasks.get(arn))),
        None => Box::new(cluster.tasks.values()),
    };
    for task in live.filter(|t| t.is_live() && t.group == group) {
        *group_tasks.entry(task.instance_arn.as_str()).or_default() += 1;
    }
    group_tasks
}

/// The group's tasks per value of each attribute it spreads on.
fn spread_counts(
    cluster: &Cluster,
    strategies: &[placement::strategy::Strategy],
    group_tasks: &HashMap<&str, u32>,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, u32>> {
    use placement::strategy::{self, Strategy};
    let mut spread_counts: std::collections::BTreeMap<
        String,
        std::collections::BTreeMap<String, u32>,
    > = Default::default();
    for strategy in strategies {
        if let Strategy::SpreadAttribute(name) = strategy {
            let counts = spread_counts.entry(name.clone()).or_default();
            for instance in &cluster.instances {
                let here = group_tasks.get(instance.arn.as_str()).copied().unwrap_or(0);
                *counts
                    .entry(strategy::attribute(&instance.room, name))
                    .or_default() += here;
            }
        }
    }
    spread_counts
}

/// Picks the instance for a task: among the instances that pass ECS's checks (status, agent,
/// constraints, CPU, memory, host ports, ENIs) and have GPUs for it, the one the placement
/// strategies prefer (a service's default: the Availability Zone with the fewest of its
/// tasks), then best fit on GPU memory for MPS, fewest idle GPUs that still suffice for whole
/// GPUs, first fit otherwise. On failure, the reason at the closest instance: one short only of
/// GPUs before one short of anything else.
fn choose_instance(
    cluster: &Cluster,
    gpu: &GpuRequest,
    needs: &Needs,
    group: &str,
    strategies: &[placement::strategy::Strategy],
) -> Result<(String, placement::GpuAssignment), (Unplaced, Option<String>)> {
    use placement::strategy;
    let mut best: Option<((Vec<u64>, u64), usize, placement::GpuAssignment)> = None;
    let mut closest: Option<((u8, u32), Unplaced, String)> = None;
    let group_tasks = group_tasks_by_instance(cluster, group);
    let spread_counts = spread_counts(cluster, strategies, &group_tasks);
    let placed_so_far: u32 = group_tasks.values().sum();
    let mut note = |nearness: (u8, u32), why: Unplaced, instance: &ContainerInstance| {
        if closest.as_ref().is_none_or(|(n, _, _)| nearness > *n) {
            closest = Some((nearness, why, instance.short_id().to_string()));
        }
    };
    for (index, instance) in cluster.instances.iter().enumerate() {
        let here = group_tasks.get(instance.arn.as_str()).copied().unwrap_or(0);
        if let Err(blocked) = resources::check(&instance.room, needs, here) {
            note((0, 0), Unplaced::Room(blocked), instance);
            continue;
        }
        // Whether the scheduler avoids an instance whose MPS daemon is impaired is not
        // documented; the emulator takes the cautious reading that it does not, and the task
        // then fails at start on that instance.
        match placement::find_gpus(&instance.gpus, instance.mps_capable, gpu) {
            Ok(assignment) => {
                let random = crate::model::splitmix(
                    instance.arn.bytes().fold(u64::from(placed_so_far), |h, b| {
                        h.wrapping_mul(31).wrapping_add(u64::from(b))
                    }),
                );
                let key = (
                    strategy::rank(strategies, &instance.room, here, &spread_counts, random),
                    placement::fit_score(&instance.gpus, gpu, &assignment),
                );
                if best.as_ref().is_none_or(|(k, _, _)| key < *k) {
                    let exact = matches!(gpu, GpuRequest::None) && strategies.is_empty();
                    best = Some((key, index, assignment));
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
                note((1, nearness), Unplaced::Gpu(why), instance);
            }
        }
    }
    match best {
        Some((_, index, assignment)) => Ok((cluster.instances[index].arn.clone(), assignment)),
        None => Err(match closest {
            Some((_, why, id)) => (why, Some(id)),
            None => (Unplaced::Gpu(NoFit::NoGpus), None),
        }),
    }
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

#[cfg(test)]
mod tests;
