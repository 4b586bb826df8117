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
            let arn = arn.clone();
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
            if task.last_status == TaskStatus::Pending
                && now >= task.running_at
                && matches!(task.gpu, GpuRequest::Mps(_))
                && impaired.contains(&task.instance_arn)
            {
                // The agent's gate before an MPS task's containers are created: the task fails
                // at start, its containers never run (no exit code).
                task.failed_to_start = true;
                task.desired_status = TaskStatus::Stopped;
                task.stopping_at = Some(now);
                task.stop_code = Some("TaskFailedToStart");
                task.stopped_reason = Some(MPS_NOT_RESPONDING.to_string());
                for container in &mut task.containers {
                    container.reason = Some(MPS_NOT_RESPONDING.to_string());
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
            // A container that exits at once: the task reached RUNNING, and stops a second
            // later with the container's exit code.
            if let (TaskStatus::Running, Some(code), Some(started)) =
                (task.last_status, task.fails_with, task.started_at)
            {
                if now >= started + Duration::seconds(1) {
                    task.desired_status = TaskStatus::Stopped;
                    task.last_status = TaskStatus::Deprovisioning;
                    task.stopping_at = Some(now);
                    task.stop_code = Some("EssentialContainerExited");
                    task.stopped_reason = Some("Essential container in task exited".to_string());
                    // A plain exit: the exit code, and no container reason (ECS gives one only
                    // when the agent or the runtime stopped the container).
                    for container in &mut task.containers {
                        container.exit_code = Some(code);
                    }
                    if let Some(service) = task.group.strip_prefix("service:") {
                        failed.push((
                            service.to_string(),
                            task.started_by.clone().unwrap_or_default(),
                            arn.clone(),
                        ));
                    }
                }
                continue;
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
            // The service's own constraints join the task definition's; its strategies (by
            // default, spread across Availability Zones) choose among the instances that fit.
            let mut needs = td.needs.clone();
            let mut strategies = Vec::new();
            if let Some(service) = group
                .strip_prefix("service:")
                .and_then(|name| cluster.services.get(name))
            {
                strategies = service.strategies();
                let extra = placement::resources::needs_of(
                    &Default::default(),
                    &service.placement_constraints,
                )
                .unwrap_or_default();
                needs.distinct_instance |= extra.distinct_instance;
                needs.member_of.extend(extra.member_of);
            }
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
                let gpu_sharing_strategy = td
                    .body
                    .get("containerDefinitions")
                    .and_then(serde_json::Value::as_array)
                    .and_then(|list| {
                        list.iter().find(|c| {
                            c.get("name").and_then(serde_json::Value::as_str) == Some(name)
                        })
                    })
                    .and_then(|c| c.get("resourceRequirements"))
                    .and_then(serde_json::Value::as_array)
                    .and_then(|list| list.iter().find_map(|r| r.get("sharingStrategy").cloned()));
                TaskContainer {
                    name: name.clone(),
                    gpu_sharing_strategy,
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
            running_at,
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
    use placement::strategy::{self, Strategy};
    let mut best: Option<((Vec<u64>, u64), usize, placement::GpuAssignment)> = None;
    let mut closest: Option<((u8, u32), Unplaced, String)> = None;
    let mut group_tasks: HashMap<&str, u32> = HashMap::new();
    // A service knows its live tasks; other groups (and a service's tasks started outside its
    // rollout) are looked for.
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
    // The group's tasks per value of each attribute it spreads on.
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
mod tests {
    use super::*;
    use crate::engine::fixture;

    fn place(fleet: &mut Fleet, td: &str) -> String {
        fleet
            .run_task("prod", td, "family:test".into(), None)
            .expect("placed")
    }

    #[test]
    fn mps_tasks_go_best_fit_by_gpu_memory() {
        let mut fleet = fixture::fleet(2, 1);
        let big = fixture::mps_family(&mut fleet, "big", 16_000, None);
        let small = fixture::mps_family(&mut fleet, "small", 6_000, None);
        let first = place(&mut fleet, &big);
        let second = place(&mut fleet, &small);
        let third = place(&mut fleet, &big);
        let cluster = &fleet.clusters["prod"];
        let instance_of = |arn: &str| cluster.tasks[arn].instance_arn.clone();
        assert_eq!(
            instance_of(&first),
            instance_of(&second),
            "the small task fills the GPU with the least room that fits"
        );
        assert_ne!(instance_of(&third), instance_of(&first));
        match fleet.run_task("prod", &big, "family:test".into(), None) {
            Err((Unplaced::Gpu(NoFit::NotEnoughGpuMemory { .. }), Some(_))) => {}
            other => panic!("no room left: {other:?}"),
        }
    }

    #[test]
    fn a_task_runs_after_its_start_up_and_a_stop_frees_its_gpu() {
        let mut fleet = fixture::fleet(1, 1);
        let td = fixture::mps_family(&mut fleet, "embed", 8_000, None);
        let arn = place(&mut fleet, &td);
        assert_eq!(
            fleet.clusters["prod"].tasks[&arn].last_status,
            TaskStatus::Pending,
            "a bridge-mode task skips PROVISIONING, which is for awsvpc"
        );
        fixture::run(&mut fleet, 20);
        let cluster = &fleet.clusters["prod"];
        assert_eq!(cluster.tasks[&arn].last_status, TaskStatus::Running);
        assert_eq!(
            cluster.instances[0].gpus[0].remaining_memory_mib,
            22_563 - 8_000
        );
        assert_eq!(cluster.instances[0].running_tasks, 1);
        assert!(fleet.stop_task("prod", &arn, "stopped by a test", "UserInitiated"));
        assert!(
            !fleet.stop_task("prod", &arn, "again", "UserInitiated"),
            "once"
        );
        fixture::run(&mut fleet, 3);
        let cluster = &fleet.clusters["prod"];
        let task = &cluster.tasks[&arn];
        assert_eq!(task.last_status, TaskStatus::Stopped);
        assert_eq!(task.containers[0].exit_code, Some(0));
        assert_eq!(cluster.instances[0].gpus[0].remaining_memory_mib, 22_563);
        assert_eq!(cluster.instances[0].running_tasks, 0);
    }

    #[test]
    fn an_instance_version_counts_every_change_even_a_replacement_of_the_same_size() {
        let mut fleet = fixture::fleet(1, 1);
        let td = fixture::mps_family(&mut fleet, "embed", 8_000, None);
        let version = |fleet: &Fleet| fleet.clusters["prod"].instances[0].version;
        let start = version(&fleet);
        let first = place(&mut fleet, &td);
        fixture::run(&mut fleet, 20);
        let placed_and_started = version(&fleet);
        assert_eq!(placed_and_started, start + 2);
        // Stopped and replaced by a task of the same size: the resources and counts end as
        // they were, the version does not.
        assert!(fleet.stop_task("prod", &first, "replaced", "UserInitiated"));
        fixture::run(&mut fleet, 3);
        let _second = place(&mut fleet, &td);
        fixture::run(&mut fleet, 20);
        assert_eq!(version(&fleet), placed_and_started + 3);
    }

    #[test]
    fn a_container_that_exits_at_once_fails_its_task_with_its_code() {
        let mut fleet = fixture::fleet(1, 1);
        let td = fixture::mps_family(&mut fleet, "broken", 4_000, Some(3));
        let arn = place(&mut fleet, &td);
        fixture::run(&mut fleet, 20);
        let task = &fleet.clusters["prod"].tasks[&arn];
        assert_eq!(task.last_status, TaskStatus::Stopped);
        assert_eq!(task.stop_code, Some("EssentialContainerExited"));
        assert_eq!(task.containers[0].exit_code, Some(3));
        assert_eq!(fleet.clusters["prod"].instances[0].pending_tasks, 0);
    }

    #[test]
    fn an_impaired_mps_daemon_stops_nothing_and_new_mps_tasks_there_fail_at_start() {
        let mut fleet = fixture::fleet(1, 1);
        let td = fixture::mps_family(&mut fleet, "embed", 4_000, None);
        let running = place(&mut fleet, &td);
        fixture::run(&mut fleet, 20);
        let instance = fleet.clusters["prod"].instances[0].arn.clone();
        fleet.impair_mps("prod", &instance);
        fixture::run(&mut fleet, 20);
        assert_eq!(
            fleet.clusters["prod"].tasks[&running].last_status,
            TaskStatus::Running,
            "the agent stops nothing"
        );
        // The scheduler still places there (the emulator's cautious reading); the task fails
        // at start and gives its GPU memory back.
        let doomed = place(&mut fleet, &td);
        fixture::run(&mut fleet, 20);
        let cluster = &fleet.clusters["prod"];
        let task = &cluster.tasks[&doomed];
        assert_eq!(task.last_status, TaskStatus::Stopped);
        assert_eq!(task.stop_code, Some("TaskFailedToStart"));
        assert_eq!(task.stopped_reason.as_deref(), Some(MPS_NOT_RESPONDING));
        assert_eq!(task.containers[0].exit_code, None, "never ran");
        assert!(task.started_at.is_none());
        assert_eq!(
            cluster.instances[0].gpus[0].remaining_memory_mib,
            22_563 - 4_000
        );
        assert_eq!(
            reason_text(&NoFit::NoMpsCapability),
            "is missing an attribute required by your task: ecs.capability.gpu-sharing-mps"
        );
    }

    fn register(fleet: &mut Fleet, body: serde_json::Value) -> String {
        let now = fleet.now;
        fleet
            .register_task_definition(body.as_object().cloned().unwrap_or_default(), now)
            .expect("valid")
            .arn
            .clone()
    }

    fn blocked(fleet: &mut Fleet, td: &str, group: &str) -> Unplaced {
        fleet
            .run_task("prod", td, group.into(), None)
            .expect_err("no room")
            .0
    }

    #[test]
    fn cpu_memory_host_ports_and_instance_status_limit_placement_as_in_ecs() {
        let mut fleet = fixture::fleet(1, 4);
        // A static host port: the second task finds it taken.
        let web = register(
            &mut fleet,
            serde_json::json!({"family": "web", "containerDefinitions": [{"name": "w", "image": "w", "memory": 512,
                "portMappings": [{"containerPort": 80, "hostPort": 8443}]}]}),
        );
        place(&mut fleet, &web);
        let why = blocked(&mut fleet, &web, "family:web");
        assert_eq!(
            why,
            Unplaced::Room(Blocked::Port {
                port: 8443,
                udp: false
            })
        );
        assert_eq!(
            why.reason_text(),
            "is already using a port required by your task"
        );
        // CPU: the instance has 48 vCPUs.
        let hungry = register(
            &mut fleet,
            serde_json::json!({"family": "hungry", "cpu": "40960", "memory": "1024", "containerDefinitions": [{"name": "h", "image": "h"}]}),
        );
        place(&mut fleet, &hungry);
        assert_eq!(
            blocked(&mut fleet, &hungry, "family:hungry").reason_text(),
            "has insufficient CPU units available"
        );
        // Memory: memoryReservation counts when set.
        let big = register(
            &mut fleet,
            serde_json::json!({"family": "big", "containerDefinitions": [{"name": "b", "image": "b", "memory": 500_000, "memoryReservation": 150_000}]}),
        );
        place(&mut fleet, &big);
        assert_eq!(
            blocked(&mut fleet, &big, "family:big").reason_text(),
            "has insufficient memory available"
        );
        // A DRAINING instance and a disconnected agent take nothing.
        let small = fixture::mps_family(&mut fleet, "small", 1_000, None);
        fleet.clusters.get_mut("prod").expect("prod").instances[0]
            .room
            .status = "DRAINING".into();
        assert!(matches!(
            blocked(&mut fleet, &small, "family:small"),
            Unplaced::Room(Blocked::NotActive { .. })
        ));
        let instance = &mut fleet.clusters.get_mut("prod").expect("prod").instances[0];
        instance.room.status = "ACTIVE".into();
        instance.room.agent_connected = false;
        assert_eq!(
            blocked(&mut fleet, &small, "family:small").reason_text(),
            "encountered error \"AGENT\""
        );
    }

    #[test]
    fn awsvpc_tasks_take_an_eni_each_until_the_instance_type_has_none_left() {
        // One g5.12xlarge: 15 network interfaces, the primary one the instance's own.
        let mut fleet = fixture::fleet(1, 4);
        let vpc = register(
            &mut fleet,
            serde_json::json!({"family": "vpc", "networkMode": "awsvpc", "containerDefinitions": [{"name": "v", "image": "v", "cpu": 256, "memory": 512,
                "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 1_000}}}]}]}),
        );
        let placed: Vec<String> = (0..14).map(|_| place(&mut fleet, &vpc)).collect();
        let why = blocked(&mut fleet, &vpc, "family:vpc");
        assert_eq!(why, Unplaced::Room(Blocked::Eni));
        assert_eq!(why.reason_text(), "encountered error \"RESOURCE:ENI\"");
        // The GPUs had room: 14 GiB of 88 taken.
        let free: u32 = fleet.clusters["prod"].instances[0]
            .gpus
            .iter()
            .map(|g| g.remaining_memory_mib)
            .sum();
        assert_eq!(free, 4 * 22_563 - 14 * 1_000);
        // A bridge task needs no ENI.
        let bridge = fixture::mps_family(&mut fleet, "bridge", 1_000, None);
        place(&mut fleet, &bridge);
        // A stopped task gives its ENI back.
        fleet.stop_task("prod", &placed[0], "scaled in", "UserInitiated");
        fixture::run(&mut fleet, 5);
        assert_eq!(fleet.clusters["prod"].instances[0].room.enis_free, Some(1));
        place(&mut fleet, &vpc);
    }

    #[test]
    fn distinct_instance_and_member_of_hold_for_a_service() {
        let mut fleet = fixture::fleet(2, 4);
        let td = fixture::mps_family(&mut fleet, "embed", 1_000, None);
        let new = crate::engine::services::NewService {
            name: "spread".into(),
            task_definition: td.clone(),
            desired_count: 0,
            config: Default::default(),
            placement_constraints: vec![serde_json::json!({"type": "distinctInstance"})],
            placement_strategy: Vec::new(),
        };
        fleet.create_service("prod", new).expect("created");
        let first = fleet
            .run_task("prod", &td, "service:spread".into(), None)
            .expect("placed");
        let second = fleet
            .run_task("prod", &td, "service:spread".into(), None)
            .expect("placed");
        let cluster = &fleet.clusters["prod"];
        assert_ne!(
            cluster.tasks[&first].instance_arn,
            cluster.tasks[&second].instance_arn
        );
        assert_eq!(
            blocked(&mut fleet, &td, "service:spread"),
            Unplaced::Room(Blocked::DistinctInstance)
        );
        // memberOf in the task definition: no instance is a p5.
        let picky = register(
            &mut fleet,
            serde_json::json!({"family": "picky", "containerDefinitions": [{"name": "p", "image": "p", "memory": 512}],
                "placementConstraints": [{"type": "memberOf", "expression": "attribute:ecs.instance-type == p5.*"}]}),
        );
        assert_eq!(
            blocked(&mut fleet, &picky, "family:picky").reason_text(),
            "is missing an attribute required by your task"
        );
    }

    #[test]
    fn a_service_spreads_across_zones_by_default_and_binpacks_when_asked() {
        let mut fleet = fixture::fleet(3, 1);
        for (instance, zone) in fleet
            .clusters
            .get_mut("prod")
            .expect("prod")
            .instances
            .iter_mut()
            .zip(["us-east-1a", "us-east-1b", "us-east-1c"])
        {
            instance.availability_zone = zone.into();
            instance
                .room
                .attributes
                .insert("ecs.availability-zone".into(), zone.into());
        }
        let td = fixture::mps_family(&mut fleet, "embed", 1_000, None);
        let service =
            |name: &str, strategy: Vec<serde_json::Value>| crate::engine::services::NewService {
                name: name.into(),
                task_definition: td.clone(),
                desired_count: 3,
                config: Default::default(),
                placement_constraints: Vec::new(),
                placement_strategy: strategy,
            };
        let hosts = |fleet: &Fleet, group: &str| -> std::collections::BTreeSet<String> {
            fleet.clusters["prod"]
                .tasks
                .values()
                .filter(|t| t.is_live() && t.group == group)
                .map(|t| t.instance_arn.clone())
                .collect()
        };
        // ECS's default for services: one task in each zone, where best fit alone would have
        // put all three on one GPU.
        fleet
            .create_service("prod", service("spread", Vec::new()))
            .expect("created");
        fixture::run(&mut fleet, 30);
        assert_eq!(hosts(&fleet, "service:spread").len(), 3);
        // binpack on memory: the instance with the least memory left, again and again.
        fleet
            .create_service(
                "prod",
                service(
                    "packed",
                    vec![serde_json::json!({"type": "binpack", "field": "memory"})],
                ),
            )
            .expect("created");
        fixture::run(&mut fleet, 30);
        assert_eq!(hosts(&fleet, "service:packed").len(), 1);
        assert_eq!(
            fleet.clusters["prod"].services["packed"].strategies(),
            [placement::strategy::Strategy::BinpackMemory]
        );
    }
}
