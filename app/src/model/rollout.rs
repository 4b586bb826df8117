//! The capacity pre-check of a deployment: a rolling update simulated on the fleet snapshot with
//! the service's `maximumPercent` and `minimumHealthyPercent` — old and new tasks together
//! during the overlap — placed with the same rules as the emulator and the fit check (the
//! `placement` crate). It says whether the rollout completes, and if not, at which step it
//! stalls and what would let it through.

use placement::{allocate, find_gpus, release, GpuAssignment, GpuRequest, GpuSlot};
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
}

/// One instance of the simulated cluster.
#[derive(Clone, Debug)]
struct Host {
    instance_type: String,
    mps_capable: bool,
    gpus: Vec<GpuSlot>,
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
                instance_type: instance.instance_type.clone(),
                mps_capable: instance.mps_capable && instance.impaired.is_none(),
                gpus: instance.gpus.iter().map(slot).collect(),
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
                    match &mut task.request {
                        GpuRequest::Mps(memories) => {
                            memories.push(container.memory_mib.unwrap_or(0));
                            task.assignment.per_container.push(vec![gpu_index]);
                        }
                        GpuRequest::Whole(counts) => {
                            // One container with N whole GPUs shows on N GPUs.
                            if let Some(last) = task.assignment.per_container.last_mut() {
                                last.push(gpu_index);
                                if let Some(count) = counts.last_mut() {
                                    *count += 1;
                                }
                            } else {
                                counts.push(1);
                                task.assignment.per_container.push(vec![gpu_index]);
                            }
                        }
                        GpuRequest::None => {}
                    }
                }
            }
        }
        Some(Cluster {
            hosts,
            old_tasks: tasks.into_values().collect(),
        })
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
                    mps_capable: true,
                    gpus: model
                        .gpus
                        .iter()
                        .map(|g| GpuSlot::idle(g.total_memory_mib))
                        .collect(),
                    ..model.clone()
                });
            }
        }
        cluster
    }
}

/// Simulated rounds at most; a rollout that has not finished by then stalls.
const MAX_STEPS: u32 = 1_000;

/// Simulates the rolling update of `plan` on `cluster`.
pub fn simulate(cluster: &Cluster, plan: &RolloutPlan) -> (Verdict, Vec<RolloutStep>) {
    let mut hosts = cluster.hosts.clone();
    let mut old = cluster.old(plan.running);
    let desired = plan.desired;
    // ECS rounds the upper bound down and the lower bound up.
    let upper = (u64::from(desired) * u64::from(plan.maximum_percent) / 100) as u32;
    let lower = (u64::from(desired) * u64::from(plan.minimum_healthy_percent)).div_ceil(100) as u32;
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
        for _ in 0..room {
            if place(&mut hosts, &plan.new) {
                started += 1;
            } else {
                unplaced = room - started;
                break;
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
            if let Some(host) = task.host {
                release(&mut hosts[host].gpus, &task.request, &task.assignment);
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
                    "{unplaced} new {} could not be placed: no instance of {} has room for {} while {} old and {new_running} new tasks run, and the minimum healthy percent ({} %) keeps the old ones.",
                    if unplaced == 1 { "task" } else { "tasks" },
                    plan.cluster,
                    describe(&plan.new),
                    old.len(),
                    plan.minimum_healthy_percent
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

/// Places one task on the first instance with room; whether it could.
fn place(hosts: &mut [Host], request: &GpuRequest) -> bool {
    if *request == GpuRequest::None {
        return true;
    }
    for host in hosts.iter_mut() {
        if let Ok(assignment) = find_gpus(&host.gpus, host.mps_capable, request) {
            allocate(&mut host.gpus, request, &assignment);
            return true;
        }
    }
    false
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
    RolloutCheck {
        plan: plan.clone(),
        verdict,
        steps,
        suggestions,
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
                arn: format!("arn:i-{n}"),
                ec2_instance_id: format!("i-{n}"),
                instance_type: "g5.xlarge".into(),
                impaired: None,
                mps_capable: true,
                gpu_model: None,
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
}
