//! The fleet state kept between refreshes, and the incremental refresh that brings it up to
//! date with as few ECS calls as can tell what changed:
//!
//! - DescribeClusters (one call per 100 clusters): each cluster's counts of instances, running
//!   and pending tasks and active services;
//! - DescribeContainerInstances of the known instances (one call per 100): an instance whose
//!   status, agent, counts of tasks, remaining resources, GPUs, health or version differ from
//!   the last refresh has changed; one that is gone, or a count of instances that differs,
//!   makes the cluster's instances be listed again;
//! - ListTasks only where something changed: per changed instance, or the whole cluster when
//!   that is fewer calls (or when the cluster's task counts changed with no instance change);
//!   DescribeTasks only for task ARNs not seen before and tasks not yet RUNNING;
//! - with ECS's task state change events (an EventBridge rule into an SQS queue), DescribeTasks
//!   of the tasks they name instead: an instance that changed is listed only when the events do
//!   not account for it (none named a task on it, the tasks known there then are not as many
//!   as ECS counts, or its GPUs are not as they hold them);
//! - DescribeServices of every service in a cluster that changed (with events: of the services
//!   whose tasks they named), of services in a rollout, and of a rotating slice of ten others;
//!   ListServices when the count of services differs;
//! - DescribeTaskDefinition once per ARN (a revision never changes).

mod refresh;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{atomic::AtomicU32, Arc};
use std::time::Instant;

use futures::TryStreamExt;

use app::model::{
    arn::arn_tail, ClusterView, FleetSnapshot, HostUse, InstanceView, ServiceRef, SharingMode,
};

use super::{instance_view, FleetReader, Listing};
use crate::aws::budget::Lane;
use crate::fleet::events::Hints;
use crate::fleet::{
    join::{host_reserved, join, DefinitionGpu, GpuAsk, RawGpu, RawTask},
    ReadError,
};
use app::model::words::{InstanceStatus, RolloutState, ServiceStatus, TaskStatus};

/// Services described per refresh besides those of changed clusters and those in a rollout.
pub(super) const SERVICE_SWEEP: usize = 10;

/// DescribeClusters' counts of one cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterCounts {
    pub instances: i32,
    pub running: i32,
    pub pending: i32,
    pub services: i32,
}

/// One container instance as last described.
#[derive(Clone, Debug)]
pub struct KnownInstance {
    pub arn: String,
    pub status: InstanceStatus,
    /// What DescribeContainerInstances said of it, hashed: equal means unchanged.
    pub fingerprint: u64,
    pub view: InstanceView,
    pub gpus: Vec<RawGpu>,
    /// `runningTasksCount` and `pendingTasksCount`.
    pub running_tasks: i32,
    pub pending_tasks: i32,
}

impl KnownInstance {
    pub fn of(instance: &aws_sdk_ecs::types::ContainerInstance) -> KnownInstance {
        let (view, gpus) = instance_view(instance);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        format!("{view:?}{gpus:?}").hash(&mut hasher);
        (
            instance.running_tasks_count(),
            instance.pending_tasks_count(),
            instance.version(),
            instance.status(),
            instance
                .agent_update_status()
                .map(|s| s.as_str().to_string()),
        )
            .hash(&mut hasher);
        KnownInstance {
            arn: view.arn.clone(),
            status: InstanceStatus::from(instance.status().unwrap_or("ACTIVE")),
            fingerprint: hasher.finish(),
            view,
            gpus,
            running_tasks: instance.running_tasks_count(),
            pending_tasks: instance.pending_tasks_count(),
        }
    }

    /// Whether the tasks known there (`known` in all, `known_pending` not yet RUNNING) are what
    /// ECS counts on the instance. ECS documents `runningTasksCount` as the tasks whose desired
    /// status is RUNNING and does not say whether that takes in those still PENDING (which
    /// `pendingTasksCount` counts); the two readings agree only when nothing is pending, so
    /// only then do the counts account for a change (inference: the cautious reading).
    fn counts_agree(&self, known: usize, known_pending: usize) -> bool {
        self.pending_tasks == 0
            && known_pending == 0
            && i64::from(self.running_tasks) == known as i64
    }

    /// Counted by DescribeClusters' `registeredContainerInstancesCount`.
    fn registered(&self) -> bool {
        self.status.holds_tasks()
    }
}

/// The tasks of `tasks` by the container instance they are on.
fn tasks_by_instance(tasks: &Tasks) -> HashMap<&str, Vec<&RawTask>> {
    let mut by_instance: HashMap<&str, Vec<&RawTask>> = HashMap::new();
    for task in tasks.values() {
        if let Some(arn) = &task.container_instance_arn {
            by_instance.entry(&**arn).or_default().push(task);
        }
    }
    by_instance
}

/// Whether what ECS says of `instance` is what the tasks known on it (`tasks`) make: its
/// counts of tasks, and its GPUs.
fn tasks_agree(
    instance: &KnownInstance,
    tasks: Option<&Vec<&RawTask>>,
    definitions: &HashMap<String, DefinitionGpu>,
) -> bool {
    let tasks = tasks.map_or(&[][..], Vec::as_slice);
    let pending = tasks
        .iter()
        .filter(|t| t.last_status != Some(TaskStatus::Running))
        .count();
    instance.counts_agree(tasks.len(), pending) && gpus_agree(instance, tasks, definitions)
}

/// Whether `instance`'s GPUs are as the tasks known on it (`tasks`) hold them: each GPU's
/// sharing mode, the count of containers ECS assigned it (when it reports one) and, under MPS,
/// the memory ECS says is allocated (total less remaining). With the counts, this is what lets
/// the events account for an instance's change: a lost start and a lost stop on one instance
/// leave its task count as it was, but not its GPUs, unless the two tasks hold the same GPUs
/// in the same way (then only the periodic full read finds the difference). A task told to stop
/// holds its GPU until it has stopped, so an instance with one stopping is listed.
fn gpus_agree(
    instance: &KnownInstance,
    tasks: &[&RawTask],
    definitions: &HashMap<String, DefinitionGpu>,
) -> bool {
    #[derive(Default, Clone, Copy)]
    struct Held {
        containers: u32,
        mps_mib: u64,
        whole: bool,
    }
    let mut held = vec![Held::default(); instance.gpus.len()];
    for task in tasks {
        let Some(definition) = definitions.get(&*task.task_definition_arn) else {
            return false;
        };
        for container in &task.containers {
            let ask = definition
                .containers
                .get(&*container.name)
                .copied()
                .unwrap_or(GpuAsk::None);
            for id in &container.gpu_ids {
                let Some(index) = instance.gpus.iter().position(|g| *g.uuid == **id) else {
                    return false;
                };
                let gpu = &mut held[index];
                gpu.containers += 1;
                match ask {
                    GpuAsk::Mps { memory_mib, .. } => gpu.mps_mib += u64::from(memory_mib),
                    GpuAsk::Whole(_) | GpuAsk::None => gpu.whole = true,
                }
            }
        }
    }
    instance.gpus.iter().zip(held).all(|(gpu, held)| {
        gpu.container_count.is_none_or(|n| n == held.containers)
            && match gpu.mode {
                SharingMode::Idle => held.containers == 0,
                SharingMode::Dedicated => held.containers > 0 && held.mps_mib == 0,
                SharingMode::NvidiaMps => {
                    !held.whole
                        && u64::from(
                            gpu.total_memory_mib
                                .saturating_sub(gpu.remaining_memory_mib),
                        ) == held.mps_mib
                }
            }
    })
}

/// One service as last described.
#[derive(Clone, Debug)]
pub struct KnownService {
    pub arn: String,
    pub status: ServiceStatus,
    pub service: ServiceRef,
}

impl KnownService {
    /// In a rollout, or not yet at its desired count: worth describing every refresh.
    fn moving(&self) -> bool {
        let s = &self.service;
        s.deployments > 1
            || s.rollout_state == Some(RolloutState::InProgress)
            || s.running != s.desired
            || s.pending > 0
    }
}

/// The tasks known of a cluster, by ARN. Shared, not owned: a refresh keeps the state it
/// started from (to give it back if a read fails), and a copy of this map copies pointers, not
/// the tasks — on `large` a copy of the tasks themselves was most of the console's memory in
/// the moment of a refresh.
pub type Tasks = HashMap<Arc<str>, Arc<RawTask>>;

/// `task` as `Tasks` keeps it.
pub fn task_entry(task: RawTask) -> (Arc<str>, Arc<RawTask>) {
    (task.arn.clone(), Arc::new(task))
}

/// What the reader knows of one cluster.
#[derive(Clone, Debug, Default)]
pub struct ClusterState {
    pub arn: String,
    pub counts: Option<ClusterCounts>,
    /// Container instances in the order ECS lists them.
    pub instances: Vec<KnownInstance>,
    pub tasks: Tasks,
    /// By ARN.
    pub services: BTreeMap<String, KnownService>,
}

impl ClusterState {
    /// The state a full read of one cluster gives.
    pub fn from_reads(
        arn: &str,
        counts: Option<ClusterCounts>,
        instances: Vec<Result<KnownInstance, String>>,
        tasks: Vec<RawTask>,
        services: Vec<Result<KnownService, String>>,
    ) -> ClusterState {
        ClusterState {
            arn: arn.to_string(),
            counts,
            instances: instances.into_iter().filter_map(Result::ok).collect(),
            tasks: tasks.into_iter().map(task_entry).collect(),
            services: services
                .into_iter()
                .filter_map(Result::ok)
                .filter(|s| s.status != ServiceStatus::Inactive)
                .map(|s| (s.arn.clone(), s))
                .collect(),
        }
    }
}

/// The whole incremental state.
#[derive(Debug)]
pub struct Known {
    pub clusters: Vec<ClusterState>,
    /// When the state was last made by a full read.
    pub full_at: Instant,
    /// Where the rotating slice of services starts next.
    sweep: usize,
    /// Made by a full read and not refreshed since. A full read describes instances and reads
    /// the clusters' counts beside listing their tasks, so a task that started or stopped in
    /// between can be in one answer and not the other; the first refresh after it lists the
    /// instances whose counts or GPUs disagree with the tasks known there.
    fresh: bool,
}

impl Known {
    pub fn new(clusters: Vec<ClusterState>) -> Known {
        Known {
            clusters,
            full_at: Instant::now(),
            sweep: 0,
            fresh: true,
        }
    }

    /// The next slice of services to describe, as ARNs: [`SERVICE_SWEEP`] of them, in order
    /// of cluster and ARN, continuing where the last refresh stopped.
    fn next_sweep(&mut self) -> HashSet<String> {
        let all: Vec<&String> = self
            .clusters
            .iter()
            .flat_map(|c| c.services.keys())
            .collect();
        if all.is_empty() {
            return HashSet::new();
        }
        let start = self.sweep % all.len();
        self.sweep = start + SERVICE_SWEEP;
        all.iter()
            .cycle()
            .skip(start)
            .take(SERVICE_SWEEP.min(all.len()))
            .map(|arn| (*arn).clone())
            .collect()
    }
}

/// What comparing an incremental state with a full read found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drift {
    /// GPUs compared: those of instances that had not changed between the two reads.
    pub compared: u64,
    /// The GPUs that differed, as `cluster/instance GPU uuid`.
    pub differing: Vec<String>,
}

/// The snapshot of `states` (ECS's part: no usage, zones from ECS only), and per container
/// instance ARN the number of its tasks that hold an ENI of their own. Tasks are joined in ARN
/// order, so that a GPU's containers are listed the same however the state was read.
pub fn assemble(
    states: &[ClusterState],
    definitions: &HashMap<String, DefinitionGpu>,
) -> (FleetSnapshot, HashMap<String, u32>) {
    let mut eni_tasks: HashMap<String, u32> = HashMap::new();
    let mut unknown = 0;
    let mut clusters = Vec::with_capacity(states.len());
    for state in states {
        let mut tasks: Vec<&RawTask> = state.tasks.values().map(Arc::as_ref).collect();
        tasks.sort_by(|a, b| a.arn.cmp(&b.arn));
        let mut services: Vec<ServiceRef> =
            state.services.values().map(|s| s.service.clone()).collect();
        services.sort_by(|a, b| a.name.cmp(&b.name));
        let teams: HashMap<String, String> = services
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.team.clone()?)))
            .collect();
        let gpus: Vec<&[RawGpu]> = state.instances.iter().map(|i| i.gpus.as_slice()).collect();
        let joined = join(&gpus, &tasks, definitions, &teams);
        let mut reserved = host_reserved(&tasks, definitions, &teams);
        unknown += joined.unknown_gpus.len() as u32;
        let instances = state
            .instances
            .iter()
            .zip(joined.instances)
            .map(|(known, gpus)| InstanceView {
                gpus,
                host: known.view.host.as_ref().map(|host| HostUse {
                    reserved: reserved.remove(&known.view.arn).unwrap_or_default(),
                    ..host.clone()
                }),
                ..known.view.clone()
            })
            .collect();
        for task in tasks.iter().filter(|t| t.holds_eni) {
            if let Some(arn) = &task.container_instance_arn {
                *eni_tasks.entry(arn.to_string()).or_default() += 1;
            }
        }
        let count = |wanted: fn(&TaskStatus) -> bool| {
            tasks
                .iter()
                .filter(|t| t.last_status.as_ref().is_some_and(wanted))
                .count() as u32
        };
        clusters.push(ClusterView {
            name: arn_tail(&state.arn).to_string(),
            instances,
            services: services.len() as u32,
            service_list: services,
            running_tasks: count(|s| *s == TaskStatus::Running),
            pending_tasks: count(TaskStatus::is_pending),
        });
    }
    clusters.sort_by(|a, b| a.name.cmp(&b.name));
    let snapshot = FleetSnapshot {
        taken_at: app::service::clock::now(),
        api_calls: 0,
        cloudwatch_calls: 0,
        usage_error: None,
        clusters,
        unknown_gpu_ids: unknown,
    };
    (snapshot, eni_tasks)
}

/// Compares an incremental state with a full read, GPU by GPU, on the instances whose
/// DescribeContainerInstances answer was the same in both (an instance that changed between
/// the two reads cannot be compared).
pub fn compare(
    incremental: &[ClusterState],
    full: &[ClusterState],
    definitions: &HashMap<String, DefinitionGpu>,
) -> Drift {
    let (a, _) = assemble(incremental, definitions);
    let (b, _) = assemble(full, definitions);
    let fingerprints = |states: &[ClusterState]| -> HashMap<String, u64> {
        states
            .iter()
            .flat_map(|c| c.instances.iter())
            .map(|i| (i.arn.clone(), i.fingerprint))
            .collect()
    };
    let (fa, fb) = (fingerprints(incremental), fingerprints(full));
    let views = |snapshot: &FleetSnapshot| -> HashMap<String, (String, InstanceView)> {
        snapshot
            .clusters
            .iter()
            .flat_map(|c| {
                c.instances
                    .iter()
                    .map(|i| (i.arn.clone(), (c.name.clone(), i.clone())))
            })
            .collect()
    };
    let (va, vb) = (views(&a), views(&b));
    let mut drift = Drift::default();
    for (arn, (cluster, full_view)) in &vb {
        if fa.get(arn) != fb.get(arn) {
            continue;
        }
        let Some((_, ours)) = va.get(arn) else {
            continue;
        };
        for (index, gpu) in full_view.gpus.iter().enumerate() {
            drift.compared += 1;
            if ours.gpus.get(index) != Some(gpu) {
                drift
                    .differing
                    .push(format!("{cluster}/{} GPU {}", arn_tail(arn), gpu.uuid));
            }
        }
    }
    drift.differing.sort();
    drift
}

#[cfg(test)]
mod tests;
