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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::AtomicU32;
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

/// Services described per refresh besides those of changed clusters and those in a rollout.
const SERVICE_SWEEP: usize = 10;

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
    /// `ACTIVE`, `DRAINING`, `INACTIVE`, …
    pub status: String,
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
            status: instance.status().unwrap_or("ACTIVE").to_string(),
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
        matches!(self.status.as_str(), "ACTIVE" | "DRAINING")
    }
}

/// The tasks of `tasks` by the container instance they are on.
fn tasks_by_instance(tasks: &HashMap<String, RawTask>) -> HashMap<&str, Vec<&RawTask>> {
    let mut by_instance: HashMap<&str, Vec<&RawTask>> = HashMap::new();
    for task in tasks.values() {
        if let Some(arn) = &task.container_instance_arn {
            by_instance.entry(arn.as_str()).or_default().push(task);
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
        .filter(|t| t.last_status.as_deref() != Some("RUNNING"))
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
        let Some(definition) = definitions.get(&task.task_definition_arn) else {
            return false;
        };
        for container in &task.containers {
            let ask = definition
                .containers
                .get(&container.name)
                .copied()
                .unwrap_or(GpuAsk::None);
            for id in &container.gpu_ids {
                let Some(index) = instance.gpus.iter().position(|g| &g.uuid == id) else {
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
    pub status: String,
    pub service: ServiceRef,
}

impl KnownService {
    /// In a rollout, or not yet at its desired count: worth describing every refresh.
    fn moving(&self) -> bool {
        let s = &self.service;
        s.deployments > 1
            || s.rollout_state.as_deref() == Some("IN_PROGRESS")
            || s.running != s.desired
            || s.pending > 0
    }
}

/// What the reader knows of one cluster.
#[derive(Clone, Debug, Default)]
pub struct ClusterState {
    pub arn: String,
    pub counts: Option<ClusterCounts>,
    /// Container instances in the order ECS lists them.
    pub instances: Vec<KnownInstance>,
    pub tasks: HashMap<String, RawTask>,
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
            tasks: tasks.into_iter().map(|t| (t.arn.clone(), t)).collect(),
            services: services
                .into_iter()
                .filter_map(Result::ok)
                .filter(|s| s.status != "INACTIVE")
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
        let mut tasks: Vec<RawTask> = state.tasks.values().cloned().collect();
        tasks.sort_by(|a, b| a.arn.cmp(&b.arn));
        let mut services: Vec<ServiceRef> =
            state.services.values().map(|s| s.service.clone()).collect();
        services.sort_by(|a, b| a.name.cmp(&b.name));
        let teams: HashMap<String, String> = services
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.team.clone()?)))
            .collect();
        let gpus: Vec<Vec<RawGpu>> = state.instances.iter().map(|i| i.gpus.clone()).collect();
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
                *eni_tasks.entry(arn.clone()).or_default() += 1;
            }
        }
        let status = |wanted: &[&str]| {
            tasks
                .iter()
                .filter(|t| {
                    t.last_status
                        .as_deref()
                        .is_some_and(|s| wanted.contains(&s))
                })
                .count() as u32
        };
        clusters.push(ClusterView {
            name: arn_tail(&state.arn).to_string(),
            instances,
            services: services.len() as u32,
            service_list: services,
            running_tasks: status(&["RUNNING"]),
            pending_tasks: status(&["PROVISIONING", "PENDING", "ACTIVATING"]),
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

impl FleetReader {
    /// Brings `known` up to date with what changed since the last read.
    pub(super) async fn read_changes(
        &self,
        known: &mut Known,
        calls: &AtomicU32,
    ) -> Result<(), ReadError> {
        let lane = Lane::Foreground;
        let arns: Vec<String> = known.clusters.iter().map(|c| c.arn.clone()).collect();
        let counts = self.describe_clusters(&arns, calls, lane).await?;
        // A cluster ECS no longer has (deleted, or INACTIVE) leaves; new clusters come with
        // the next full read.
        known.clusters.retain(|c| counts.contains_key(&c.arn));
        let sweep = known.next_sweep();
        // What the events said since the last refresh, per cluster; none when no queue is
        // followed (or the consumer is not keeping up with it).
        let mut hints = self.events.as_ref().and_then(|feed| feed.take());
        let states = std::mem::take(&mut known.clusters);
        let per_cluster: Vec<(ClusterState, Option<Hints>)> = states
            .into_iter()
            .map(|state| {
                let mine = hints.as_mut().map(|h| h.take_cluster(&state.arn));
                (state, mine)
            })
            .collect();
        let sweep = &sweep;
        let fresh = known.fresh;
        let updated = futures::future::join_all(per_cluster.into_iter().map(|(state, mine)| {
            let counts = counts.get(&state.arn).copied();
            async move {
                let result = self
                    .refresh_cluster(state, counts, sweep, mine.as_ref(), fresh, calls)
                    .await;
                (result, mine)
            }
        }))
        .await;
        let mut failed = None;
        for (result, mine) in updated {
            match result {
                Ok(state) => known.clusters.push(state),
                Err((state, error)) => {
                    known.clusters.push(state);
                    failed.get_or_insert(error);
                    // The next refresh starts from the state as it was: it needs the hints.
                    if let (Some(feed), Some(mine)) = (&self.events, mine) {
                        feed.give_back(mine);
                    }
                }
            }
        }
        known
            .clusters
            .sort_by(|a, b| arn_tail(&a.arn).cmp(arn_tail(&b.arn)));
        match failed {
            Some(error) => Err(error),
            None => {
                known.fresh = false;
                Ok(())
            }
        }
    }

    /// Describes `arns` and brings them into `state`: a task ECS no longer has, or one told to
    /// stop (which ListTasks no longer lists), leaves; the others replace what was known, and
    /// their task definitions are read if new.
    async fn describe_into(
        &self,
        state: &mut ClusterState,
        arns: Vec<String>,
        calls: &AtomicU32,
    ) -> Result<(), ReadError> {
        let lane = Lane::Foreground;
        let described = self
            .described(
                calls,
                100,
                arns,
                self.describe_tasks(&state.arn, lane, None),
            )
            .await?;
        let mut kept = Vec::new();
        for result in described {
            match result {
                Ok(task) if task.desired_status.as_deref() != Some("STOPPED") => kept.push(task),
                Ok(task) => {
                    state.tasks.remove(&task.arn);
                }
                Err(arn) => {
                    state.tasks.remove(&arn);
                }
            }
        }
        self.cache_definitions(&kept, calls, lane).await?;
        state
            .tasks
            .extend(kept.into_iter().map(|t| (t.arn.clone(), t)));
        Ok(())
    }

    /// One cluster's refresh. On failure the cluster's state is given back as it was, so
    /// that the next refresh starts from a consistent base.
    async fn refresh_cluster(
        &self,
        state: ClusterState,
        counts: Option<ClusterCounts>,
        sweep: &HashSet<String>,
        hints: Option<&Hints>,
        fresh: bool,
        calls: &AtomicU32,
    ) -> Result<ClusterState, (ClusterState, ReadError)> {
        let before = state.clone();
        self.refresh_cluster_inner(state, counts, sweep, hints, fresh, calls)
            .await
            .map_err(|error| (before, error))
    }

    async fn refresh_cluster_inner(
        &self,
        mut state: ClusterState,
        counts: Option<ClusterCounts>,
        sweep: &HashSet<String>,
        hints: Option<&Hints>,
        fresh: bool,
        calls: &AtomicU32,
    ) -> Result<ClusterState, ReadError> {
        let lane = Lane::Foreground;
        let cluster = state.arn.clone();
        // Instances: describe the known ones; list again when some are gone or the count
        // differs.
        let known_arns: Vec<String> = state.instances.iter().map(|i| i.arn.clone()).collect();
        let described = self
            .described(
                calls,
                100,
                known_arns.clone(),
                self.describe_instances(&cluster, lane),
            )
            .await?;
        let mut found: HashMap<String, KnownInstance> = HashMap::new();
        let mut gone = false;
        for result in described {
            match result {
                Ok(instance) => {
                    gone |= instance.status == "INACTIVE";
                    found.insert(instance.arn.clone(), instance);
                }
                Err(_) => gone = true,
            }
        }
        let registered = found.values().filter(|i| i.registered()).count() as i32;
        let relist_instances = gone
            || counts.is_some_and(|c| c.instances != registered)
            || counts.is_none() && state.counts.is_some();
        let order: Vec<String> = if relist_instances {
            let listed: Vec<String> = self
                .listing(&cluster, Listing::Instances, calls, lane)
                .try_collect::<Vec<Vec<String>>>()
                .await?
                .concat();
            let new: Vec<String> = listed
                .iter()
                .filter(|arn| !found.contains_key(*arn))
                .cloned()
                .collect();
            for instance in self
                .described(calls, 100, new, self.describe_instances(&cluster, lane))
                .await?
                .into_iter()
                .flatten()
            {
                found.insert(instance.arn.clone(), instance);
            }
            listed
        } else {
            known_arns.clone()
        };
        let previous: HashMap<&str, u64> = state
            .instances
            .iter()
            .map(|i| (i.arn.as_str(), i.fingerprint))
            .collect();
        let instances: Vec<KnownInstance> = order
            .iter()
            .filter_map(|arn| found.remove(arn))
            .filter(|i| i.status != "INACTIVE")
            .collect();
        let disagreeing: HashSet<String> = if fresh {
            let definitions = self.definitions.lock().unwrap_or_else(|p| p.into_inner());
            let by_instance = tasks_by_instance(&state.tasks);
            instances
                .iter()
                .filter(|i| !tasks_agree(i, by_instance.get(i.arn.as_str()), &definitions))
                .map(|i| i.arn.clone())
                .collect()
        } else {
            HashSet::new()
        };
        let changed: Vec<String> = instances
            .iter()
            .filter(|i| {
                previous.get(i.arn.as_str()) != Some(&i.fingerprint) || disagreeing.contains(&i.arn)
            })
            .map(|i| i.arn.clone())
            .collect();
        let present: HashSet<&str> = instances.iter().map(|i| i.arn.as_str()).collect();
        let removed: HashSet<String> = previous
            .keys()
            .filter(|arn| !present.contains(*arn))
            .map(|arn| arn.to_string())
            .collect();
        state.tasks.retain(|_, task| {
            task.container_instance_arn
                .as_ref()
                .is_none_or(|arn| !removed.contains(arn))
        });

        // Events: the tasks they name are described again (a task told to stop leaves, as
        // ListTasks lists only those whose desired status is RUNNING). An instance that
        // changed is accounted for when events named tasks on it and the tasks known there now
        // are as many as ECS counts; the others are listed below.
        let mut unexplained = changed.clone();
        if let Some(hints) = hints {
            for (arn, hint) in &hints.tasks {
                if hint.stopping {
                    state.tasks.remove(arn);
                }
            }
            // Also the tasks known on a changed instance that were not yet RUNNING: a lost
            // event must not leave one PENDING for ever.
            let changed_set: HashSet<&str> = changed.iter().map(String::as_str).collect();
            let mut describe: Vec<String> = hints
                .tasks
                .iter()
                .filter(|(_, hint)| !hint.stopping)
                .map(|(arn, _)| arn.clone())
                .collect();
            describe.extend(
                state
                    .tasks
                    .values()
                    .filter(|t| {
                        t.last_status.as_deref() != Some("RUNNING")
                            && t.container_instance_arn
                                .as_deref()
                                .is_some_and(|i| changed_set.contains(i))
                            && !hints.tasks.contains_key(&t.arn)
                    })
                    .map(|t| t.arn.clone()),
            );
            self.describe_into(&mut state, describe, calls).await?;
            let named = hints.instances();
            let by_instance = tasks_by_instance(&state.tasks);
            let by_arn: HashMap<&str, &KnownInstance> =
                instances.iter().map(|i| (i.arn.as_str(), i)).collect();
            let definitions = self.definitions.lock().unwrap_or_else(|p| p.into_inner());
            unexplained.retain(|arn| {
                let agree = by_arn.get(arn.as_str()).is_some_and(|instance| {
                    tasks_agree(instance, by_instance.get(arn.as_str()), &definitions)
                });
                !(named.contains(arn.as_str()) && agree)
            });
            drop(definitions);
        }

        // Tasks: list where something changed that the events did not account for.
        let task_counts_changed = match (state.counts, counts) {
            (Some(old), Some(new)) => (old.running, old.pending) != (new.running, new.pending),
            _ => true,
        };
        let unplaced = state
            .tasks
            .values()
            .any(|t| t.container_instance_arn.is_none());
        let cluster_pages = state.tasks.len().div_ceil(100).max(1);
        let whole_cluster = unplaced
            || (task_counts_changed && changed.is_empty())
            || unexplained.len() > cluster_pages;
        let listed: Option<(Vec<String>, Option<HashSet<String>>)> = if whole_cluster {
            let arns = self
                .listing(&cluster, Listing::Tasks(None), calls, lane)
                .try_collect::<Vec<Vec<String>>>()
                .await?
                .concat();
            Some((arns, None))
        } else if !unexplained.is_empty() {
            let lists = futures::future::try_join_all(unexplained.iter().map(|instance| {
                self.listing(
                    &cluster,
                    Listing::Tasks(Some(instance.clone())),
                    calls,
                    lane,
                )
                .try_collect::<Vec<Vec<String>>>()
            }))
            .await?;
            let scope: HashSet<String> = unexplained.iter().cloned().collect();
            Some((lists.concat().concat(), Some(scope)))
        } else {
            None
        };
        let listed_any = listed.is_some();
        if let Some((arns, scope)) = listed {
            let listed: HashSet<&String> = arns.iter().collect();
            state.tasks.retain(|arn, task| {
                let in_scope = match &scope {
                    None => true,
                    Some(instances) => task
                        .container_instance_arn
                        .as_ref()
                        .is_some_and(|i| instances.contains(i)),
                };
                !in_scope || listed.contains(arn)
            });
            let describe: Vec<String> = arns
                .iter()
                .filter(|arn| {
                    state
                        .tasks
                        .get(*arn)
                        .is_none_or(|t| t.last_status.as_deref() != Some("RUNNING"))
                })
                .cloned()
                .collect();
            self.describe_into(&mut state, describe, calls).await?;
        }

        // Services: list again when the count differs; describe those of a changed cluster
        // (with events, of the services whose tasks they named), those in a rollout and this
        // refresh's slice.
        let cluster_changed = relist_instances
            || !removed.is_empty()
            || listed_any
            || (hints.is_none() && (!changed.is_empty() || task_counts_changed));
        let named_services: HashSet<&str> = hints
            .map(|h| {
                h.tasks
                    .values()
                    .filter_map(|t| t.group.as_deref()?.strip_prefix("service:"))
                    .collect()
            })
            .unwrap_or_default();
        let active = state
            .services
            .values()
            .filter(|s| s.status == "ACTIVE")
            .count() as i32;
        let relist_services = counts.is_some_and(|c| c.services != active);
        let mut describe: Vec<String> = state
            .services
            .values()
            .filter(|s| {
                cluster_changed
                    || s.moving()
                    || sweep.contains(&s.arn)
                    || named_services.contains(s.service.name.as_str())
            })
            .map(|s| s.arn.clone())
            .collect();
        if relist_services {
            let listed: Vec<String> = self
                .listing(&cluster, Listing::Services, calls, lane)
                .try_collect::<Vec<Vec<String>>>()
                .await?
                .concat();
            let listed_set: HashSet<&String> = listed.iter().collect();
            state.services.retain(|arn, _| listed_set.contains(arn));
            describe.retain(|arn| listed_set.contains(arn));
            describe.extend(
                listed
                    .iter()
                    .filter(|arn| !state.services.contains_key(*arn))
                    .cloned(),
            );
        }
        for result in self
            .described(calls, 10, describe, self.describe_services(&cluster, lane))
            .await?
        {
            match result {
                Ok(service) if service.status == "INACTIVE" => {
                    state.services.remove(&service.arn);
                }
                Ok(service) => {
                    state.services.insert(service.arn.clone(), service);
                }
                Err(arn) => {
                    state.services.remove(&arn);
                }
            }
        }
        state.instances = instances;
        state.counts = counts;
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::join::RawContainer;

    fn instance(arn: &str, fingerprint: u64, remaining: u32) -> KnownInstance {
        KnownInstance {
            arn: arn.into(),
            status: "ACTIVE".into(),
            fingerprint,
            view: InstanceView {
                host: None,
                arn: arn.into(),
                ec2_instance_id: format!("i-{arn}"),
                instance_type: "g5.xlarge".into(),
                impaired: None,
                mps_capable: true,
                gpu_model: None,
                gpus: Vec::new(),
                not_placing: None,
                availability_zone: None,
                lifecycle: None,
                room: None,
            },
            gpus: vec![RawGpu {
                uuid: format!("GPU-{arn}"),
                mode: SharingMode::NvidiaMps,
                total_memory_mib: 24_000,
                remaining_memory_mib: remaining,
                container_count: None,
            }],
            running_tasks: 0,
            pending_tasks: 0,
        }
    }

    fn cluster(instances: Vec<KnownInstance>) -> ClusterState {
        ClusterState {
            arn: "arn:aws:ecs:us-east-1:1:cluster/prod".into(),
            instances,
            ..ClusterState::default()
        }
    }

    #[test]
    fn a_difference_counts_only_on_instances_unchanged_between_the_reads() {
        let definitions = HashMap::new();
        let ours = cluster(vec![instance("a", 1, 10_000), instance("b", 2, 10_000)]);
        // "a" answered the same to both reads but differs: drift. "b" changed in between:
        // not compared.
        let full = cluster(vec![instance("a", 1, 12_000), instance("b", 3, 12_000)]);
        let drift = compare(std::slice::from_ref(&ours), &[full], &definitions);
        assert_eq!(drift.compared, 1);
        assert_eq!(drift.differing, vec!["prod/a GPU GPU-a".to_string()]);
        let same = compare(
            std::slice::from_ref(&ours),
            std::slice::from_ref(&ours),
            &definitions,
        );
        assert_eq!((same.compared, same.differing.len()), (2, 0));
    }

    #[test]
    fn the_service_sweep_goes_round_every_service() {
        let mut state = cluster(Vec::new());
        for n in 0..25 {
            let arn = format!("arn:svc/{n:02}");
            state.services.insert(
                arn.clone(),
                KnownService {
                    arn,
                    status: "ACTIVE".into(),
                    service: ServiceRef::default(),
                },
            );
        }
        let mut known = Known::new(vec![state]);
        let mut seen = HashSet::new();
        for _ in 0..3 {
            let slice = known.next_sweep();
            assert_eq!(slice.len(), SERVICE_SWEEP);
            seen.extend(slice);
        }
        assert_eq!(seen.len(), 25, "three refreshes describe all 25 services");
    }

    fn task(arn: &str, definition: &str, gpu: &str) -> RawTask {
        RawTask {
            arn: arn.into(),
            task_definition_arn: definition.into(),
            group: None,
            started_at: None,
            last_status: Some("RUNNING".into()),
            desired_status: Some("RUNNING".into()),
            containers: vec![RawContainer {
                name: "main".into(),
                gpu_ids: vec![gpu.into()],
            }],
            container_instance_arn: Some("a".into()),
            holds_eni: false,
        }
    }

    fn definitions() -> HashMap<String, DefinitionGpu> {
        let ask = |memory_mib| GpuAsk::Mps {
            memory_mib,
            max_compute_percent: None,
        };
        [
            ("small", ask(4_000)),
            ("large", ask(8_000)),
            ("whole", GpuAsk::Whole(1)),
        ]
        .into_iter()
        .map(|(name, ask)| {
            (
                name.to_string(),
                DefinitionGpu {
                    containers: HashMap::from([("main".to_string(), ask)]),
                    ..DefinitionGpu::default()
                },
            )
        })
        .collect()
    }

    #[test]
    fn the_gpus_agree_only_with_the_tasks_that_hold_them() {
        let definitions = definitions();
        // 24,000 MiB, 12,000 left, two containers: a small and a large task.
        let mut a = instance("a", 1, 12_000);
        a.gpus[0].container_count = Some(2);
        let (small, large) = (task("t1", "small", "GPU-a"), task("t2", "large", "GPU-a"));
        assert!(gpus_agree(&a, &[&small, &large], &definitions));
        // A lost start of another small task and a lost stop of the large one: one task each
        // way, but 4,000 MiB less allocated than ECS says.
        let other = task("t3", "small", "GPU-a");
        assert!(!gpus_agree(&a, &[&small, &other], &definitions));
        // Memory that adds up with a container too few.
        let mut b = instance("a", 1, 16_000);
        b.gpus[0].container_count = Some(2);
        let big = task("t4", "large", "GPU-a");
        assert!(!gpus_agree(&b, &[&big], &definitions));
        b.gpus[0].container_count = None;
        assert!(
            gpus_agree(&b, &[&big], &definitions),
            "no count: memory alone"
        );
        // A GPU not on the instance, a definition not yet read, a whole-GPU container on an
        // MPS GPU: none of these is accounted for.
        assert!(!gpus_agree(
            &b,
            &[&task("t5", "large", "GPU-b")],
            &definitions
        ));
        assert!(!gpus_agree(
            &b,
            &[&task("t6", "unread", "GPU-a")],
            &definitions
        ));
        let mut c = instance("a", 1, 24_000);
        assert!(!gpus_agree(
            &c,
            &[&task("t7", "whole", "GPU-a")],
            &definitions
        ));
        // A dedicated GPU needs a container; an idle one has none.
        c.gpus[0].mode = SharingMode::Dedicated;
        assert!(gpus_agree(
            &c,
            &[&task("t7", "whole", "GPU-a")],
            &definitions
        ));
        assert!(!gpus_agree(&c, &[], &definitions));
        c.gpus[0].mode = SharingMode::Idle;
        assert!(gpus_agree(&c, &[], &definitions));
        assert!(!gpus_agree(&c, &[&small], &definitions));
    }
}
