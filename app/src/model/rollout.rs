//! The capacity pre-check of a deployment: a rolling update simulated on the fleet snapshot with
//! the service's `maximumPercent` and `minimumHealthyPercent` — old and new tasks together
//! during the overlap — placed with the same rules as the emulator and the fit check (the
//! `placement` crate). It says whether the rollout completes, and if not, at which step it
//! stalls and what would let it through.

use placement::{
    allocate, find_gpus, release,
    resources::{self, Needs, Room},
    GpuAssignment, GpuRequest, GpuSlot,
};
use serde::{Deserialize, Serialize};

use crate::model::{fleet_view::slot, FleetSnapshot};

/// A service's rollout as the pre-check sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutPlan {
    pub cluster: String,
    pub service: String,
    /// Tasks the service should run.
    pub desired: u32,
    /// Old tasks running now (some may hold no GPU).
    pub running: u32,
    pub maximum_percent: u32,
    pub minimum_healthy_percent: u32,
    /// What one old task holds, and what one new task asks.
    pub old: GpuRequest,
    pub new: GpuRequest,
    /// What one old task holds and one new task needs besides GPUs: CPU, memory, host ports,
    /// placement constraints (the service's and the task definition's).
    #[serde(default)]
    pub old_needs: Needs,
    #[serde(default)]
    pub new_needs: Needs,
    /// The deployment strategy when not a rolling update (`BLUE_GREEN`, `LINEAR`, `CANARY`):
    /// the whole new set runs beside the old one, whatever the percentages say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// The service's placement strategies as ECS writes them; empty for ECS's default for
    /// services, spread across Availability Zones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_strategy: Vec<String>,
}

impl RolloutPlan {
    /// Whether the whole new set runs beside the old one before the old one stops.
    pub fn whole_new_set(&self) -> bool {
        self.strategy.as_deref().is_some_and(|s| s != "ROLLING")
    }
}

/// One step of the simulated rollout: tasks started, then tasks stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutStep {
    pub step: u32,
    pub started: u32,
    pub stopped: u32,
    /// New tasks that could not be placed in this step although the bounds allowed them.
    pub unplaced: u32,
    pub old_running: u32,
    pub new_running: u32,
}

/// The pre-check's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every new task is placed and every old one stopped.
    Completes,
    /// The rollout stops making progress at `step`.
    Stalls { step: u32, reason: String },
    /// No instance of the cluster could ever host one new task, even empty.
    Never { reason: String },
}

/// The pre-check's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutCheck {
    pub plan: RolloutPlan,
    pub verdict: Verdict,
    pub steps: Vec<RolloutStep>,
    /// When it stalls: changes that would let it through, each checked by simulating again.
    pub suggestions: Vec<String>,
    /// What the simulation checked, and what it could not know.
    #[serde(default)]
    pub checked: Vec<String>,
    #[serde(default)]
    pub unknown: Vec<String>,
}

/// One instance of the simulated cluster.
#[derive(Clone, Debug)]
struct Host {
    id: String,
    instance_type: String,
    mps_capable: bool,
    gpus: Vec<GpuSlot>,
    /// What is left besides GPUs; `None` when the snapshot did not read it.
    room: Option<Room>,
    /// Why ECS places nothing here (DRAINING, agent disconnected), if so.
    not_placing: Option<String>,
    /// The service's tasks here, old and new, for `distinctInstance`.
    service_tasks: u32,
}

impl Host {
    /// Whether the instance could take `request` with all its GPUs idle.
    fn could_host(&self, request: &GpuRequest) -> bool {
        let empty: Vec<GpuSlot> = self
            .gpus
            .iter()
            .map(|g| GpuSlot::idle(g.total_memory_mib))
            .collect();
        find_gpus(&empty, self.mps_capable, request).is_ok()
    }
}

/// An old task and what it holds.
#[derive(Clone, Debug)]
struct OldTask {
    host: Option<usize>,
    request: GpuRequest,
    assignment: GpuAssignment,
}

/// The cluster's instances and the service's old tasks, as the snapshot has them.
#[derive(Clone, Debug)]
pub struct Cluster {
    hosts: Vec<Host>,
    old_tasks: Vec<OldTask>,
}

impl Cluster {
    /// The instances of `cluster` and the GPUs the tasks of `service` hold on them; `None`
    /// when the snapshot has no such cluster.
    pub fn of(snapshot: &FleetSnapshot, cluster: &str, service: &str) -> Option<Cluster> {
        let view = snapshot.clusters.iter().find(|c| c.name == cluster)?;
        let mut hosts = Vec::new();
        let mut tasks: std::collections::BTreeMap<String, OldTask> = Default::default();
        for (host_index, instance) in view.instances.iter().enumerate() {
            hosts.push(Host {
                id: instance.ec2_instance_id.clone(),
                instance_type: instance.instance_type.clone(),
                mps_capable: instance.mps_capable && instance.impaired.is_none(),
                gpus: instance.gpus.iter().map(slot).collect(),
                room: instance.room.clone(),
                not_placing: instance.not_placing.clone(),
                service_tasks: 0,
            });
            for (gpu_index, gpu) in instance.gpus.iter().enumerate() {
                for container in gpu
                    .containers
                    .iter()
                    .filter(|c| c.service.as_deref() == Some(service))
                {
                    let task = tasks
                        .entry(container.task_arn.clone())
                        .or_insert_with(|| OldTask {
                            host: Some(host_index),
                            request: if container.whole_gpu {
                                GpuRequest::Whole(Vec::new())
                            } else {
                                GpuRequest::Mps(Vec::new())
                            },
                            assignment: GpuAssignment {
                                per_container: Vec::new(),
                            },
                        });
                    add_container(
                        &mut task.request,
                        &mut task.assignment,
                        container,
                        gpu_index,
                    );
                }
            }
        }
        let old_tasks: Vec<OldTask> = tasks.into_values().collect();
        for task in &old_tasks {
            if let Some(host) = task.host.and_then(|h| hosts.get_mut(h)) {
                host.service_tasks += 1;
            }
        }
        Some(Cluster { hosts, old_tasks })
    }

    /// The old tasks the service runs: those the snapshot shows on GPUs, then as many without
    /// GPUs as `running` says.
    fn old(&self, running: u32) -> Vec<OldTask> {
        let mut old = self.old_tasks.clone();
        while (old.len() as u32) < running {
            old.push(OldTask {
                host: None,
                request: GpuRequest::None,
                assignment: GpuAssignment {
                    per_container: Vec::new(),
                },
            });
        }
        old
    }

    /// The same cluster where the service runs only its first `count` tasks on GPUs; the GPUs
    /// of the others stay taken, as other services' tasks would keep them.
    pub fn with_service_tasks(&self, count: usize) -> Cluster {
        let mut cluster = self.clone();
        cluster.old_tasks.truncate(count);
        cluster
    }

    /// Adds `count` empty instances like the instance of type `instance_type`.
    fn with_instances(&self, instance_type: &str, count: u32) -> Cluster {
        let mut cluster = self.clone();
        if let Some(model) = self
            .hosts
            .iter()
            .find(|h| h.instance_type == instance_type)
            .cloned()
        {
            for _ in 0..count {
                cluster.hosts.push(Host {
                    id: format!("new {instance_type}"),
                    mps_capable: true,
                    gpus: model
                        .gpus
                        .iter()
                        .map(|g| GpuSlot::idle(g.total_memory_mib))
                        .collect(),
                    // The snapshot does not say what CPU, memory and ports a new instance of
                    // the type would have free: left unchecked.
                    room: None,
                    not_placing: None,
                    service_tasks: 0,
                    ..model.clone()
                });
            }
        }
        cluster
    }
}

/// Adds what one GPU container of a task holds, on the GPU at `gpu_index`, to the task's
/// request and assignment as the snapshot shows them: an MPS container's memory on its GPU, or
/// one more GPU of a whole-GPU container (a container with N whole GPUs shows on N GPUs).
pub fn add_container(
    request: &mut GpuRequest,
    assignment: &mut GpuAssignment,
    container: &crate::model::GpuContainer,
    gpu_index: usize,
) {
    match request {
        GpuRequest::Mps(memories) => {
            memories.push(container.memory_mib.unwrap_or(0));
            assignment.per_container.push(vec![gpu_index]);
        }
        GpuRequest::Whole(counts) => {
            if let Some(last) = assignment.per_container.last_mut() {
                last.push(gpu_index);
                if let Some(count) = counts.last_mut() {
                    *count += 1;
                }
            } else {
                counts.push(1);
                assignment.per_container.push(vec![gpu_index]);
            }
        }
        GpuRequest::None => {}
    }
}

/// Simulated rounds at most; a rollout that has not finished by then stalls.
const MAX_STEPS: u32 = 1_000;

/// Simulates the rolling update of `plan` on `cluster`.
pub fn simulate(cluster: &Cluster, plan: &RolloutPlan) -> (Verdict, Vec<RolloutStep>) {
    let mut hosts = cluster.hosts.clone();
    let mut old = cluster.old(plan.running);
    let desired = plan.desired;
    // ECS rounds the upper bound down and the lower bound up. Blue/green, linear and canary
    // start the whole new set beside the old one and stop the old one after.
    let (upper, lower) = if plan.whole_new_set() {
        (desired.saturating_mul(2), desired)
    } else {
        (
            (u64::from(desired) * u64::from(plan.maximum_percent) / 100) as u32,
            (u64::from(desired) * u64::from(plan.minimum_healthy_percent)).div_ceil(100) as u32,
        )
    };
    if plan.new != GpuRequest::None && !hosts.iter().any(|h| h.could_host(&plan.new)) {
        return (
            Verdict::Never {
                reason: format!(
                    "No instance of {} could host one new task even empty: {}.",
                    plan.cluster,
                    describe(&plan.new)
                ),
            },
            Vec::new(),
        );
    }
    let mut new_running = 0_u32;
    let mut steps = Vec::new();
    for step in 1..=MAX_STEPS {
        if new_running >= desired && old.is_empty() {
            return (Verdict::Completes, steps);
        }
        // Start new tasks while the upper bound allows.
        let total = old.len() as u32 + new_running;
        let room = upper
            .saturating_sub(total)
            .min(desired.saturating_sub(new_running));
        let mut started = 0;
        let mut unplaced = 0;
        let mut blocked: Option<String> = None;
        for _ in 0..room {
            match place(&mut hosts, &plan.new, &plan.new_needs) {
                Ok(()) => started += 1,
                Err(why) => {
                    unplaced = room - started;
                    blocked = Some(why);
                    break;
                }
            }
        }
        new_running += started;
        // Stop old tasks while the lower bound allows (new tasks count once they are running).
        let healthy = old.len() as u32 + new_running;
        let can_stop = healthy.saturating_sub(lower).min(old.len() as u32);
        // Those that hold GPUs first: stopping them frees room.
        old.sort_by_key(|t| t.host.is_none());
        let mut stopped = 0;
        for task in old.drain(..can_stop as usize) {
            if let Some(host) = task.host.and_then(|h| hosts.get_mut(h)) {
                release(&mut host.gpus, &task.request, &task.assignment);
                if let Some(room) = host.room.as_mut() {
                    resources::give_back(room, &plan.old_needs);
                }
                host.service_tasks = host.service_tasks.saturating_sub(1);
            }
            stopped += 1;
        }
        steps.push(RolloutStep {
            step,
            started,
            stopped,
            unplaced,
            old_running: old.len() as u32,
            new_running,
        });
        if started == 0 && stopped == 0 {
            let reason = if unplaced > 0 {
                format!(
                    "{unplaced} new {} could not be placed: no instance of {} has room for {} while {} old and {new_running} new tasks run, and the minimum healthy percent ({} %) keeps the old ones. {}",
                    if unplaced == 1 { "task" } else { "tasks" },
                    plan.cluster,
                    describe(&plan.new),
                    old.len(),
                    plan.minimum_healthy_percent,
                    blocked.unwrap_or_default()
                )
            } else {
                format!(
                    "The bounds allow no step: at most {upper} tasks ({} %) and at least {lower} healthy ({} %) of {desired}.",
                    plan.maximum_percent, plan.minimum_healthy_percent
                )
            };
            return (Verdict::Stalls { step, reason }, steps);
        }
    }
    (
        Verdict::Stalls {
            step: MAX_STEPS,
            reason: format!("The rollout had not finished after {MAX_STEPS} steps."),
        },
        steps,
    )
}

/// Places one task on the first instance that takes it (ECS's checks besides GPUs, then the
/// GPU rules); or says what ran out, in ECS's words, at the closest instance: one short only
/// of GPUs before one short of anything else.
fn place(hosts: &mut [Host], request: &GpuRequest, needs: &Needs) -> Result<(), String> {
    let mut closest: Option<(u8, String)> = None;
    let mut note = |rank: u8, text: String| {
        if closest.as_ref().is_none_or(|(r, _)| rank > *r) {
            closest = Some((rank, text));
        }
    };
    // The instance the emulator would pick: the lowest fit score, the first of equals.
    let mut best: Option<(u64, usize, GpuAssignment)> = None;
    for (index, host) in hosts.iter().enumerate() {
        if let Some(reason) = &host.not_placing {
            note(0, format!("The closest instance {} is {reason}.", host.id));
            continue;
        }
        if let Some(room) = &host.room {
            if let Err(why) = resources::check(room, needs, host.service_tasks) {
                note(
                    1,
                    format!(
                        "Out of {}: the closest matching container-instance {} {}.",
                        why.resource(),
                        host.id,
                        why.ecs_words()
                    ),
                );
                continue;
            }
        }
        match find_gpus(&host.gpus, host.mps_capable, request) {
            Ok(assignment) => {
                let score = placement::fit_score(&host.gpus, request, &assignment);
                if best.as_ref().is_none_or(|(s, _, _)| score < *s) {
                    best = Some((score, index, assignment));
                    if *request == GpuRequest::None {
                        break;
                    }
                }
            }
            Err(_) => note(
                2,
                format!("Out of GPU memory or GPUs: {}.", describe(request)),
            ),
        }
    }
    match best {
        Some((_, index, assignment)) => {
            let host = &mut hosts[index];
            allocate(&mut host.gpus, request, &assignment);
            take(host, needs);
            Ok(())
        }
        None => Err(closest.map(|(_, text)| text).unwrap_or_default()),
    }
}

fn take(host: &mut Host, needs: &Needs) {
    if let Some(room) = host.room.as_mut() {
        resources::take(room, needs);
    }
    host.service_tasks += 1;
}

/// What the pre-check of `plan` on `cluster` checked, and what it could not know.
fn scope(cluster: &Cluster, plan: &RolloutPlan) -> (Vec<String>, Vec<String>) {
    let mut checked = vec![
        "GPUs: MPS memory on one GPU per task, whole GPUs idle, the GPU's sharing mode".to_string(),
        match &plan.strategy {
            Some(strategy) if plan.whole_new_set() => format!(
                "the deployment strategy {strategy}: the whole new set of {} tasks runs beside the old one",
                plan.desired
            ),
            _ => format!(
                "the rolling update's bounds: maximumPercent {} %, minimumHealthyPercent {} %",
                plan.maximum_percent, plan.minimum_healthy_percent
            ),
        },
    ];
    let mut unknown = Vec::new();
    let with_room = cluster.hosts.iter().filter(|h| h.room.is_some()).count();
    if with_room > 0 {
        checked.push(format!(
            "CPU ({} units per task) and memory ({} MiB per task) left on each instance",
            plan.new_needs.cpu, plan.new_needs.memory_mib
        ));
        if !plan.new_needs.tcp_ports.is_empty() || !plan.new_needs.udp_ports.is_empty() {
            let ports: Vec<String> = plan
                .new_needs
                .tcp_ports
                .iter()
                .map(|p| format!("{p}/tcp"))
                .chain(plan.new_needs.udp_ports.iter().map(|p| format!("{p}/udp")))
                .collect();
            checked.push(format!("static host ports {}", ports.join(", ")));
        }
    } else {
        unknown.push(
            "CPU, memory and host ports: the fleet data has no remaining resources for this cluster"
                .into(),
        );
    }
    let left_out: Vec<String> = cluster
        .hosts
        .iter()
        .filter_map(|h| Some(format!("{} ({})", h.id, h.not_placing.as_ref()?)))
        .collect();
    checked.push(if left_out.is_empty() {
        "instance status: every instance ACTIVE with its agent connected".into()
    } else {
        format!(
            "instance status: left out, as ECS places nothing there: {}",
            left_out.join(", ")
        )
    });
    if plan.new_needs.distinct_instance {
        checked.push(
            "placement constraint distinctInstance: one task of the service per instance".into(),
        );
    }
    for expression in &plan.new_needs.member_of {
        checked.push(format!(
            "placement constraint memberOf({})",
            expression.text
        ));
    }
    let impaired: Vec<&str> = cluster
        .hosts
        .iter()
        .filter(|h| !h.mps_capable && h.gpus.iter().any(|g| g.total_memory_mib > 0))
        .map(|h| h.id.as_str())
        .collect();
    if matches!(plan.new, GpuRequest::Mps(_)) && !impaired.is_empty() {
        unknown.push(format!(
            "instances that take no MPS task here ({}): without GPU sharing, or with an impaired MPS daemon. Whether ECS avoids an impaired daemon is not documented; if it does not, a task placed there fails at start (\"MPS control daemon is not responding on this instance\")",
            impaired.join(", ")
        ));
    }
    if plan.new_needs.awsvpc {
        let placing = || cluster.hosts.iter().filter(|h| h.not_placing.is_none());
        let unknown_enis: Vec<&str> = placing()
            .filter(|h| h.room.as_ref().is_none_or(|r| r.enis_free.is_none()))
            .map(|h| h.id.as_str())
            .collect();
        let free: u32 = placing().filter_map(|h| h.room.as_ref()?.enis_free).sum();
        if unknown_enis.is_empty() {
            checked.push(format!(
                "ENI attachment points (awsvpc, one per task): {free} left in the cluster, from each instance type's network interfaces (EC2) less the primary one and the tasks' ENIs"
            ));
        } else {
            unknown.push(format!(
                "ENI attachment points (awsvpc, one per task) on {}: ENI trunking is on there, or EC2 DescribeInstanceTypes could not be read, so their limit is not known and the check counts none",
                unknown_enis.join(", ")
            ));
        }
    }
    checked.push(format!(
        "placement strategy {}: it chooses among the instances that fit; every new task being alike, it changes which instances take them, not how many fit",
        if plan.placement_strategy.is_empty() {
            "spread(attribute:ecs.availability-zone) (ECS's default for services)".to_string()
        } else {
            plan.placement_strategy.join(", ")
        }
    ));
    unknown.push("which old tasks ECS stops first (it keeps the service balanced across Availability Zones), and so where room frees up: the check stops those holding GPUs first".into());
    unknown.push("how long new tasks take to pass health checks, and whether they do".into());
    if cluster.old_tasks.len() < plan.running as usize {
        unknown.push("where the old tasks without GPUs run: their CPU, memory and ports are not given back as they stop".into());
    }
    (checked, unknown)
}

/// A task's GPU request in words.
fn describe(request: &GpuRequest) -> String {
    match request {
        GpuRequest::None => "a task without GPUs".into(),
        GpuRequest::Whole(_) => format!("{} whole GPUs", request.whole_gpus()),
        GpuRequest::Mps(_) => format!("MPS {} MiB on one GPU", request.mps_memory_mib()),
    }
}

/// The pre-check of `plan` on `cluster`: the verdict, the steps, and when it stalls, what would
/// let it through.
pub fn pre_check(cluster: &Cluster, plan: &RolloutPlan) -> RolloutCheck {
    let (verdict, steps) = simulate(cluster, plan);
    let suggestions = match verdict {
        Verdict::Stalls { .. } => suggestions(cluster, plan),
        _ => Vec::new(),
    };
    let (checked, unknown) = scope(cluster, plan);
    RolloutCheck {
        plan: plan.clone(),
        verdict,
        steps,
        suggestions,
        checked,
        unknown,
    }
}

fn completes(cluster: &Cluster, plan: &RolloutPlan) -> bool {
    simulate(cluster, plan).0 == Verdict::Completes
}

/// Changes that would let a stalled rollout through, each checked by simulating again.
fn suggestions(cluster: &Cluster, plan: &RolloutPlan) -> Vec<String> {
    let mut out = Vec::new();
    // A lower minimum healthy percent lets ECS stop old tasks before starting new ones.
    if let Some(min) = [75, 50, 25, 0]
        .into_iter()
        .filter(|min| *min < plan.minimum_healthy_percent)
        .find(|min| {
            completes(
                cluster,
                &RolloutPlan {
                    minimum_healthy_percent: *min,
                    ..plan.clone()
                },
            )
        })
    {
        out.push(format!(
            "Set minimumHealthyPercent to {min} % (now {} %): ECS then stops old tasks first to make room, running fewer tasks for a while.",
            plan.minimum_healthy_percent
        ));
    }
    // A lower maximum percent starts fewer new tasks at once.
    if let Some(max) = [175, 150, 125, 100]
        .into_iter()
        .filter(|max| *max < plan.maximum_percent)
        .find(|max| {
            completes(
                cluster,
                &RolloutPlan {
                    maximum_percent: *max,
                    ..plan.clone()
                },
            )
        })
    {
        out.push(format!(
            "Set maximumPercent to {max} % (now {} %): fewer new tasks start at once.",
            plan.maximum_percent
        ));
    }
    // Fewer tasks.
    if let Some(count) = (1..plan.desired).rev().find(|count| {
        completes(
            cluster,
            &RolloutPlan {
                desired: *count,
                ..plan.clone()
            },
        )
    }) {
        out.push(format!(
            "Run {count} {} instead of {}: the rollout completes with that desired count.",
            if count == 1 { "task" } else { "tasks" },
            plan.desired
        ));
    }
    // Less memory per task, for MPS.
    if let GpuRequest::Mps(memories) = &plan.new {
        let total = plan.new.mps_memory_mib();
        let scaled = |total_wanted: u32| -> GpuRequest {
            GpuRequest::Mps(
                memories
                    .iter()
                    .map(|m| {
                        (u64::from(*m) * u64::from(total_wanted) / u64::from(total.max(1))).max(1)
                            as u32
                    })
                    .collect(),
            )
        };
        let fits = |memory: u32| {
            completes(
                cluster,
                &RolloutPlan {
                    new: scaled(memory),
                    ..plan.clone()
                },
            )
        };
        if total > 1 && fits(1) {
            let (mut low, mut high) = (1_u32, total);
            while high - low > 1 {
                let middle = low + (high - low) / 2;
                if fits(middle) {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            out.push(format!(
                "Ask for {low} MiB of GPU memory per task instead of {total}: the rollout completes with that."
            ));
        }
    }
    // More instances of the type with the most GPU memory that could host a new task.
    let mut types: Vec<(u32, String)> = cluster
        .hosts
        .iter()
        .filter(|h| h.could_host(&plan.new))
        .map(|h| {
            (
                h.gpus.iter().map(|g| g.total_memory_mib).sum(),
                h.instance_type.clone(),
            )
        })
        .collect();
    types.sort();
    types.dedup_by(|a, b| a.1 == b.1);
    if let Some((_, instance_type)) = types.last() {
        if let Some(count) = (1..=plan.desired.max(1))
            .find(|count| completes(&cluster.with_instances(instance_type, *count), plan))
        {
            out.push(format!(
                "Add {count} {instance_type} {} to the cluster.",
                if count == 1 { "instance" } else { "instances" }
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        ClusterView, FleetSnapshot, GpuContainer, GpuView, InstanceView, SharingMode,
    };

    fn gpu(index: u32, containers: Vec<GpuContainer>, total: u32) -> GpuView {
        let used: u32 = containers.iter().filter_map(|c| c.memory_mib).sum();
        let whole = containers.iter().any(|c| c.whole_gpu);
        GpuView {
            uuid: format!("GPU-{index}"),
            index,
            compute_allocated_percent: 0,
            usage: None,
            mode: if whole {
                SharingMode::Dedicated
            } else if containers.is_empty() {
                SharingMode::Idle
            } else {
                SharingMode::NvidiaMps
            },
            remaining_memory_mib: if whole { 0 } else { total - used },
            total_memory_mib: total,
            containers,
        }
    }

    fn mps(task: &str, memory: u32) -> GpuContainer {
        GpuContainer {
            task_arn: task.into(),
            container: "model".into(),
            service: Some("embed".into()),
            team: None,
            memory_mib: Some(memory),
            compute_percent: 100,
            whole_gpu: false,
            started_at: None,
        }
    }

    /// One cluster of `instances` single-GPU instances of 24 GiB, with the given containers.
    fn cluster(gpus: Vec<Vec<GpuContainer>>) -> Cluster {
        let instances = gpus
            .into_iter()
            .enumerate()
            .map(|(n, containers)| InstanceView {
                host: None,
                arn: format!("arn:i-{n}"),
                ec2_instance_id: format!("i-{n}"),
                instance_type: "g5.xlarge".into(),
                impaired: None,
                mps_capable: true,
                gpu_model: None,
                not_placing: None,
                availability_zone: None,
                lifecycle: None,
                room: None,
                gpus: vec![gpu(0, containers, 24_000)],
            })
            .collect();
        let snapshot = FleetSnapshot {
            taken_at: "t".into(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            clusters: vec![ClusterView {
                name: "ml".into(),
                instances,
                ..ClusterView::default()
            }],
            unknown_gpu_ids: 0,
        };
        Cluster::of(&snapshot, "ml", "embed").expect("cluster ml")
    }

    fn plan(desired: u32, max: u32, min: u32, new_memory: u32) -> RolloutPlan {
        RolloutPlan {
            cluster: "ml".into(),
            service: "embed".into(),
            desired,
            running: desired,
            maximum_percent: max,
            minimum_healthy_percent: min,
            old: GpuRequest::Mps(vec![8_000]),
            new: GpuRequest::Mps(vec![new_memory]),
            old_needs: Needs::default(),
            new_needs: Needs::default(),
            strategy: None,
            placement_strategy: Vec::new(),
        }
    }

    #[test]
    fn a_rollout_with_room_for_the_overlap_completes() {
        // Two old tasks of 8 GB on two 24 GB GPUs: 16 GB free on each, room for new ones.
        let cluster = cluster(vec![vec![mps("t1", 8_000)], vec![mps("t2", 8_000)]]);
        let check = pre_check(&cluster, &plan(2, 200, 100, 12_000));
        assert_eq!(check.verdict, Verdict::Completes, "{check:?}");
        assert_eq!(check.steps[0].started, 2);
        assert_eq!(check.steps[0].stopped, 2);
        assert!(check.suggestions.is_empty());
    }

    #[test]
    fn a_rollout_that_needs_the_old_tasks_room_stalls_at_the_overlap() {
        // New tasks need 20 GB: none fits beside an old 8 GB task.
        let cluster = cluster(vec![vec![mps("t1", 8_000)], vec![mps("t2", 8_000)]]);
        let check = pre_check(&cluster, &plan(2, 200, 100, 20_000));
        let Verdict::Stalls { step, reason } = &check.verdict else {
            panic!("{check:?}");
        };
        assert_eq!(*step, 1);
        assert!(
            reason.contains("2 new tasks could not be placed"),
            "{reason}"
        );
        assert!(reason.contains("minimum healthy percent (100 %)"));
        // Stopping old tasks first lets it through, as do fewer or smaller tasks or one more
        // instance.
        assert!(
            check.suggestions[0].starts_with("Set minimumHealthyPercent to 75 %")
                || check.suggestions[0].starts_with("Set minimumHealthyPercent to 50 %"),
            "{:?}",
            check.suggestions
        );
        assert!(check
            .suggestions
            .iter()
            .any(|s| s.contains("MiB of GPU memory per task instead of 20000")));
        assert!(
            check
                .suggestions
                .iter()
                .any(|s| s == "Add 1 g5.xlarge instance to the cluster."),
            "{:?}",
            check.suggestions
        );
        // Each suggestion really completes.
        assert!(completes(&cluster, &plan(2, 200, 50, 20_000)));
        assert!(completes(&cluster, &plan(2, 200, 100, 16_000)));
        assert!(!completes(&cluster, &plan(2, 200, 100, 16_001)));
    }

    #[test]
    fn a_rollout_larger_than_any_gpu_never_fits() {
        let cluster = cluster(vec![vec![mps("t1", 8_000)]]);
        let check = pre_check(&cluster, &plan(1, 200, 100, 30_000));
        let Verdict::Never { reason } = &check.verdict else {
            panic!("{check:?}");
        };
        assert!(reason.contains("MPS 30000 MiB"), "{reason}");
        assert!(check.steps.is_empty());
    }

    #[test]
    fn bounds_that_allow_no_step_stall_at_once() {
        let cluster = cluster(vec![vec![mps("t1", 8_000)]]);
        let check = pre_check(&cluster, &plan(1, 100, 100, 1_000));
        let Verdict::Stalls { reason, .. } = &check.verdict else {
            panic!("{check:?}");
        };
        assert!(reason.contains("allow no step"), "{reason}");
        assert!(check
            .suggestions
            .iter()
            .any(|s| s.starts_with("Set minimumHealthyPercent to 0 %")));
    }

    /// Two single-GPU instances with CPU, memory and ports as the reader fills them.
    fn roomy_cluster(cpu: u32, not_placing: Option<&str>) -> Cluster {
        let room = Room {
            status: "ACTIVE".into(),
            agent_connected: true,
            cpu_remaining: cpu,
            memory_remaining_mib: 30_000,
            tcp_ports_used: [22].into_iter().collect(),
            udp_ports_used: Default::default(),
            attributes: Default::default(),
            enis_free: Some(3),
        };
        let instances = (0..2)
            .map(|n| InstanceView {
                host: None,
                arn: format!("arn:i-{n}"),
                ec2_instance_id: format!("i-{n}"),
                instance_type: "g5.xlarge".into(),
                impaired: None,
                mps_capable: true,
                gpu_model: None,
                not_placing: (n == 1).then(|| not_placing.map(str::to_string)).flatten(),
                availability_zone: None,
                lifecycle: None,
                room: Some(room.clone()),
                gpus: vec![gpu(0, vec![mps(&format!("t{n}"), 4_000)], 24_000)],
            })
            .collect();
        let snapshot = FleetSnapshot {
            taken_at: "t".into(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            clusters: vec![ClusterView {
                name: "ml".into(),
                instances,
                ..ClusterView::default()
            }],
            unknown_gpu_ids: 0,
        };
        Cluster::of(&snapshot, "ml", "embed").expect("cluster ml")
    }

    fn with_needs(mut plan: RolloutPlan, needs: Needs) -> RolloutPlan {
        plan.old = GpuRequest::Mps(vec![4_000]);
        plan.old_needs = needs.clone();
        plan.new_needs = needs;
        plan
    }

    #[test]
    fn cpu_that_runs_out_stalls_a_rollout_the_gpus_would_let_through() {
        let needs = Needs {
            cpu: 1_024,
            memory_mib: 2_048,
            ..Needs::default()
        };
        // GPUs have room for the overlap; CPU has room for it with 1,024 units free on each
        // instance, not with 512.
        let plan = with_needs(plan(2, 200, 100, 4_000), needs);
        let check = pre_check(&roomy_cluster(1_024, None), &plan);
        assert_eq!(check.verdict, Verdict::Completes, "{check:?}");
        let check = pre_check(&roomy_cluster(512, None), &plan);
        match &check.verdict {
            Verdict::Stalls { reason, .. } => {
                assert!(
                    reason.contains("Out of CPU (1024 units per task)"),
                    "{reason}"
                );
                assert!(
                    reason.contains("has insufficient CPU units available"),
                    "{reason}"
                );
            }
            other => panic!("stalls on CPU: {other:?}"),
        }
        assert!(check
            .checked
            .iter()
            .any(|c| c.contains("CPU (1024 units per task)")));
    }

    #[test]
    fn enis_that_run_out_stall_an_awsvpc_rollout_and_unknown_ones_are_said() {
        let needs = Needs {
            awsvpc: true,
            ..Needs::default()
        };
        // Each instance has 3 ENIs left besides its old task's: 6 new tasks fit beside the 2
        // old ones, 8 do not while minimum healthy 100 % keeps the old ones.
        let plan_of = |desired: u32| {
            let mut plan = with_needs(plan(desired, 400, 100, 1_000), needs.clone());
            plan.running = 2;
            plan
        };
        let cluster = roomy_cluster(8_192, None);
        let check = pre_check(&cluster, &plan_of(6));
        assert_eq!(check.verdict, Verdict::Completes, "{check:?}");
        assert!(
            check
                .checked
                .iter()
                .any(|c| c.contains("ENI attachment points") && c.contains("6 left")),
            "{:?}",
            check.checked
        );
        match pre_check(&cluster, &plan_of(8)).verdict {
            Verdict::Stalls { reason, .. } => {
                assert!(reason.contains("Out of ENI attachment points"), "{reason}");
                assert!(reason.contains("RESOURCE:ENI"), "{reason}");
            }
            other => panic!("stalls on ENIs: {other:?}"),
        }
        // An instance whose limit is not known (ENI trunking) counts none, and is named.
        let mut trunked = roomy_cluster(8_192, None);
        if let Some(room) = trunked.hosts[1].room.as_mut() {
            room.enis_free = None;
        }
        let check = pre_check(&trunked, &plan_of(8));
        assert_eq!(check.verdict, Verdict::Completes, "unknown is not zero");
        assert!(
            check
                .unknown
                .iter()
                .any(|u| u.contains("ENI attachment points") && u.contains("i-1")),
            "{:?}",
            check.unknown
        );
    }

    #[test]
    fn a_draining_instance_takes_nothing_and_the_check_says_so() {
        let needs = Needs {
            cpu: 512,
            memory_mib: 512,
            ..Needs::default()
        };
        let plan = with_needs(plan(2, 200, 100, 4_000), needs);
        assert_eq!(
            pre_check(&roomy_cluster(8_192, None), &plan).verdict,
            Verdict::Completes
        );
        // The same, with the second instance DRAINING: only one instance for the overlap of
        // two new tasks beside two old ones... which its GPU still holds.
        let check = pre_check(&roomy_cluster(8_192, Some("DRAINING")), &plan);
        assert!(
            check
                .checked
                .iter()
                .any(|c| c.contains("left out") && c.contains("i-1 (DRAINING)")),
            "{:?}",
            check.checked
        );
        assert!(check.checked.iter().any(|c| c.contains(
            "placement strategy spread(attribute:ecs.availability-zone) (ECS's default"
        )));
        assert!(check
            .unknown
            .iter()
            .any(|u| u.contains("which old tasks ECS stops first")));
        let binpack = RolloutPlan {
            placement_strategy: vec!["binpack(memory)".into()],
            ..plan
        };
        assert!(pre_check(&roomy_cluster(8_192, None), &binpack)
            .checked
            .iter()
            .any(|c| c.contains("placement strategy binpack(memory): it chooses")));
    }

    #[test]
    fn distinct_instance_and_a_static_port_allow_one_task_per_instance() {
        // Two instances, two old tasks (one on each): a new task needs an instance without
        // one of the service's tasks, so with 100 % minimum healthy nothing can start.
        for needs in [
            Needs {
                distinct_instance: true,
                ..Needs::default()
            },
            Needs {
                tcp_ports: vec![8443],
                ..Needs::default()
            },
        ] {
            let mut cluster = roomy_cluster(8_192, None);
            if !needs.tcp_ports.is_empty() {
                for host in &mut cluster.hosts {
                    if let Some(room) = host.room.as_mut() {
                        room.tcp_ports_used.insert(8443);
                    }
                }
            }
            let stuck = with_needs(plan(2, 200, 100, 4_000), needs.clone());
            match pre_check(&cluster, &stuck).verdict {
                Verdict::Stalls { reason, .. } => assert!(
                    reason.contains("distinctInstance") || reason.contains("host port 8443/tcp"),
                    "{reason}"
                ),
                other => panic!("{needs:?} stalls: {other:?}"),
            }
            // Stopping old tasks first (minimum healthy 50 %) frees an instance at a time.
            let through = with_needs(plan(2, 100, 50, 4_000), needs.clone());
            assert_eq!(
                pre_check(&cluster, &through).verdict,
                Verdict::Completes,
                "{needs:?}"
            );
        }
    }

    #[test]
    fn a_blue_green_rollout_needs_room_for_the_whole_new_set() {
        // Two old 8 GB tasks on two 24 GB GPUs; new tasks of 12 GB: a rolling update with
        // minimum healthy 50 % gets through, blue/green needs 2 × 12 GB beside the old tasks
        // on each GPU and does not.
        let cluster = cluster(vec![vec![mps("t1", 8_000)], vec![mps("t2", 8_000)]]);
        let mut rolling = plan(2, 100, 50, 12_000);
        assert_eq!(pre_check(&cluster, &rolling).verdict, Verdict::Completes);
        rolling.new = GpuRequest::Mps(vec![16_001]);
        assert_eq!(pre_check(&cluster, &rolling).verdict, Verdict::Completes);
        let blue_green = RolloutPlan {
            strategy: Some("BLUE_GREEN".into()),
            ..rolling
        };
        let check = pre_check(&cluster, &blue_green);
        assert!(matches!(check.verdict, Verdict::Stalls { .. }), "{check:?}");
        assert!(check.checked.iter().any(|c| c.contains("BLUE_GREEN")));
    }
}
