//! The capacity pre-check of a deployment: a rolling update simulated on the fleet snapshot with
//! the service's `maximumPercent` and `minimumHealthyPercent` — old and new tasks together
//! during the overlap — placed with the same rules as the emulator and the fit check (the
//! `placement` crate). It says whether the rollout completes, and if not, at which step it
//! stalls and what would let it through.

mod growth;
mod simulate;

use placement::{
    allocate, find_gpus, release,
    resources::{self, Needs, Room},
    GpuAssignment, GpuRequest, GpuSlot,
};
use serde::{Deserialize, Serialize};

use crate::model::{fleet_view::slot, FleetSnapshot};

pub use self::growth::{
    launch_for_one, Growth, GrowthPlan, GrowthSource, OneLaunch, ASG_LAUNCH_SECONDS,
    MANAGED_LAUNCH_SECONDS,
};
use self::simulate::scope;
pub use self::simulate::{simulate, simulate_growing};
use crate::model::words::DeploymentStrategy;

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
    pub strategy: Option<DeploymentStrategy>,
    /// The service's placement strategies as ECS writes them; empty for ECS's default for
    /// services, spread across Availability Zones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_strategy: Vec<String>,
    /// The capacity provider that launches instances for new tasks that fit nowhere; `None`
    /// for the EC2 launch type (a fixed fleet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<Growth>,
}

impl RolloutPlan {
    /// Whether the whole new set runs beside the old one before the old one stops.
    pub fn whole_new_set(&self) -> bool {
        !DeploymentStrategy::is_rolling(self.strategy.as_ref())
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
    /// What the service's capacity provider would launch, or why it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<GrowthPlan>,
}

/// One instance of the simulated cluster.
#[derive(Clone, Debug)]
struct Host {
    id: String,
    instance_type: String,
    mps_capable: bool,
    /// Whether the agent reports the instance's MPS daemon impaired (`ACCELERATED_COMPUTE`
    /// IMPAIRED): an MPS task placed there fails at start.
    impaired: bool,
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
        Cluster::of_provider(snapshot, cluster, service, None)
    }

    /// The same, with only the instances of `provider` when one is given: a service on a
    /// capacity provider places its tasks on that provider's instances only.
    pub fn of_provider(
        snapshot: &FleetSnapshot,
        cluster: &str,
        service: &str,
        provider: Option<&str>,
    ) -> Option<Cluster> {
        let view = snapshot.clusters.iter().find(|c| c.name == cluster)?;
        let mut hosts = Vec::new();
        let mut tasks: std::collections::BTreeMap<String, OldTask> = Default::default();
        let instances = view
            .instances
            .iter()
            .filter(|i| provider.is_none_or(|p| i.capacity_provider.as_deref() == Some(p)));
        for (host_index, instance) in instances.enumerate() {
            hosts.push(Host {
                id: instance.ec2_instance_id.clone(),
                instance_type: instance.instance_type.clone(),
                mps_capable: instance.mps_capable,
                impaired: instance.impaired.is_some(),
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
                    impaired: false,
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

/// The pre-check of `plan` on `cluster`: the verdict, the steps, and when it stalls, what would
/// let it through.
pub fn pre_check(cluster: &Cluster, plan: &RolloutPlan) -> RolloutCheck {
    let (verdict, steps, growth) = simulate_growing(cluster, plan);
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
        growth,
    }
}

fn completes(cluster: &Cluster, plan: &RolloutPlan) -> bool {
    simulate(cluster, plan).0 == Verdict::Completes
}

/// Changes that would let a stalled rollout through, each checked by simulating again.
fn suggestions(cluster: &Cluster, plan: &RolloutPlan) -> Vec<String> {
    [
        lower_minimum(cluster, plan),
        lower_maximum(cluster, plan),
        fewer_tasks(cluster, plan),
        less_memory(cluster, plan),
        more_instances(cluster, plan),
        drain_impaired(cluster, plan),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A lower minimum healthy percent lets ECS stop old tasks before starting new ones.
fn lower_minimum(cluster: &Cluster, plan: &RolloutPlan) -> Option<String> {
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
        return Some(format!(
            "Set minimumHealthyPercent to {min} % (now {} %): ECS then stops old tasks first to make room, running fewer tasks for a while.",
            plan.minimum_healthy_percent
        ));
    }
    None
}

/// A lower maximum percent starts fewer new tasks at once.
fn lower_maximum(cluster: &Cluster, plan: &RolloutPlan) -> Option<String> {
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
        return Some(format!(
            "Set maximumPercent to {max} % (now {} %): fewer new tasks start at once.",
            plan.maximum_percent
        ));
    }
    None
}

/// Fewer tasks: the largest desired count with which the rollout completes.
fn fewer_tasks(cluster: &Cluster, plan: &RolloutPlan) -> Option<String> {
    if let Some(count) = (1..plan.desired).rev().find(|count| {
        completes(
            cluster,
            &RolloutPlan {
                desired: *count,
                ..plan.clone()
            },
        )
    }) {
        return Some(format!(
            "Run {count} {} instead of {}: the rollout completes with that desired count.",
            if count == 1 { "task" } else { "tasks" },
            plan.desired
        ));
    }
    None
}

/// Less memory per task, for MPS: the most (found by halving) with which the rollout completes.
fn less_memory(cluster: &Cluster, plan: &RolloutPlan) -> Option<String> {
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
            return Some(format!(
                "Ask for {low} MiB of GPU memory per task instead of {total}: the rollout completes with that."
            ));
        }
    }
    None
}

/// More instances of the type with the most GPU memory that could host a new task.
fn more_instances(cluster: &Cluster, plan: &RolloutPlan) -> Option<String> {
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
            return Some(format!(
                "Add {count} {instance_type} {} to the cluster.",
                if count == 1 { "instance" } else { "instances" }
            ));
        }
    }
    None
}

/// Draining the instances whose MPS daemon is impaired, so that ECS places no new task there.
fn drain_impaired(cluster: &Cluster, plan: &RolloutPlan) -> Option<String> {
    if !matches!(plan.new, GpuRequest::Mps(_)) {
        return None;
    }
    let mut drained = cluster.clone();
    let mut ids = Vec::new();
    for host in drained.hosts.iter_mut().filter(|h| h.impaired) {
        host.not_placing = Some("DRAINING".into());
        ids.push(host.id.clone());
    }
    if ids.is_empty() || !completes(&drained, plan) {
        return None;
    }
    Some(format!(
        "Drain {} (set {} DRAINING) or have {} replaced, then deploy: ECS places no new task on a draining instance, and the rollout completes on the others. Draining moves the other services' tasks there too; the check does not count the room they take.",
        ids.join(", "),
        if ids.len() == 1 { "it" } else { "them" },
        if ids.len() == 1 { "it" } else { "them" },
    ))
}

/// A task's GPU request in words.
fn describe(request: &GpuRequest) -> String {
    match request {
        GpuRequest::None => "a task without GPUs".into(),
        GpuRequest::Whole(_) => format!("{} whole GPUs", request.whole_gpus()),
        GpuRequest::Mps(_) => format!("MPS {} MiB on one GPU", request.mps_memory_mib()),
    }
}

#[cfg(test)]
mod tests;
