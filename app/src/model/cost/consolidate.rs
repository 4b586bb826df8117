//! The consolidation plan: the cheapest set of instances found that still holds today's GPU
//! allocations, placed with the same rules as the pre-check and the emulator (the `placement`
//! crate: MPS or whole GPUs, a task's MPS containers on one GPU, CPU, memory, host ports,
//! ENIs, `distinctInstance` and `memberOf`), keeping room for each cluster's largest rolling
//! deployment and a spare share of GPU memory. It says which instances to drain, where their
//! tasks would go, what that saves a month at the console's prices, and what it costs in blast
//! radius. It is a plan: nothing here changes the fleet.
//!
//! How it searches: per cluster (tasks never move between clusters), the instances are tried
//! for draining one at a time, the least allocated first (the dearer first among equals); an
//! instance is drained when every task on it — and every task moved onto it before — can be
//! placed on the instances kept, best fit first as ECS's placement here does. The greedy search
//! finds a good plan quickly; it does not prove that no cheaper one exists.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use placement::{
    allocate, find_gpus, fit_score, release,
    resources::{self, Needs, Room},
    GpuAssignment, GpuRequest, GpuSlot,
};
use serde::{Deserialize, Serialize};

use crate::model::{
    cost::{Lifecycle, PriceBook},
    fleet_view::slot,
    rollout::add_container,
    FleetSnapshot, ServiceRef,
};

/// Hours in a month, as AWS's pricing pages count them.
pub const HOURS_PER_MONTH: f64 = 730.0;

/// Clients one MPS server takes on Volta and later (NVIDIA's MPS documentation). ECS does not
/// enforce it and counts containers, not CUDA contexts, so the plan warns and does not refuse.
pub const MPS_CLIENT_LIMIT: usize = 48;

/// The spare share of GPU memory kept free when no `spare` is given, percent.
pub const DEFAULT_SPARE_PERCENT: u32 = 10;

/// What the plan is asked for: one cluster or all, and the share of GPU memory to keep free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanQuery {
    pub cluster: Option<String>,
    /// GPU memory the instances kept must still have free, percent of theirs (0–90).
    pub spare_percent: u32,
}

impl Default for PlanQuery {
    fn default() -> PlanQuery {
        PlanQuery {
            cluster: None,
            spare_percent: DEFAULT_SPARE_PERCENT,
        }
    }
}

impl PlanQuery {
    /// The query parameters the plan reads.
    pub const KEYS: [&'static str; 2] = ["cluster", "spare"];

    /// Reads `cluster` and `spare` (an integer percent from 0 to 90); anything else is refused
    /// with what exists.
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<PlanQuery, String> {
        let mut query = PlanQuery::default();
        for (key, value) in params {
            match key {
                "cluster" => {
                    let value = value.trim();
                    query.cluster = (!value.is_empty()).then(|| value.to_string());
                }
                "spare" => {
                    let value = value.trim().trim_end_matches('%').trim();
                    query.spare_percent = match value.parse::<u32>() {
                        Ok(percent) if percent <= 90 => percent,
                        _ => {
                            return Err(format!(
                                "spare {value:?} is not a percentage from 0 to 90: give the share of GPU memory to keep free, e.g. spare=10"
                            ))
                        }
                    };
                }
                other => {
                    return Err(format!(
                        "unknown parameter {other:?}: the plan takes {}",
                        PlanQuery::KEYS.join(" and ")
                    ))
                }
            }
        }
        Ok(query)
    }

    /// The query as URL parameters, without the defaults.
    pub fn to_params(&self) -> String {
        let mut params = Vec::new();
        if let Some(cluster) = &self.cluster {
            params.push(format!(
                "cluster={}",
                crate::model::fleet_view::encode(cluster)
            ));
        }
        if self.spare_percent != DEFAULT_SPARE_PERCENT {
            params.push(format!("spare={}", self.spare_percent));
        }
        params.join("&")
    }
}

/// Services on one GPU and on one MPS server: who a fault takes down together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Blast {
    /// GPUs holding at least one task.
    pub gpus_in_use: u32,
    /// The most services on one GPU.
    pub most_services_per_gpu: u32,
    /// The mean number of services on a GPU in use.
    pub mean_services_per_gpu: f64,
    /// GPUs with three services or more.
    pub gpus_with_three_or_more: u32,
    /// The most services on one instance's MPS server (the AMI runs one per instance).
    pub most_services_per_mps_server: u32,
    /// GPUs with more than [`MPS_CLIENT_LIMIT`] MPS containers.
    pub gpus_over_client_limit: u32,
}

/// Tasks of one service (or one standalone task) leaving an instance, and where they go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// The service, or `task <id>` for a task no service started.
    pub service: String,
    pub team: Option<String>,
    pub tasks: u32,
    /// The EC2 instance IDs they would go to.
    pub to: Vec<String>,
}

/// An instance the plan drains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drain {
    pub cluster: String,
    pub ec2_instance_id: String,
    pub instance_type: String,
    pub lifecycle: Lifecycle,
    /// What it costs a month at the console's prices; `None` when its type has no price.
    pub monthly_cents: Option<i64>,
    /// GPU memory allocated on it now, MiB, and its GPUs' memory.
    pub allocated_mib: u64,
    pub total_mib: u64,
    pub moves: Vec<Move>,
}

/// One cluster's part of the plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterPlan {
    pub name: String,
    /// Instances that take tasks now, and after the plan.
    pub instances_before: u32,
    pub instances_after: u32,
    pub monthly_before_cents: i64,
    pub monthly_after_cents: i64,
    /// The room kept for a rollout: "embed-api: 4 more tasks of 8192 MiB (maximumPercent 150)".
    pub headroom: Option<String>,
    /// GPU memory of the instances kept, MiB, and what stays free there after the plan.
    pub kept_mib: u64,
    pub free_after_mib: u64,
    /// The instances not drained because the rest could not hold what is allocated (and the
    /// rollout room) with the spare share free.
    pub held_for_spare: u32,
}

/// The plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConsolidationPlan {
    pub query: PlanQuery,
    /// The snapshot it was made from, RFC 3339.
    pub taken_at: String,
    pub clusters: Vec<ClusterPlan>,
    /// Every cluster of the snapshot, for the picker.
    pub all_clusters: Vec<String>,
    pub drains: Vec<Drain>,
    /// What the drained instances cost a month (those with a price).
    pub saving_cents_per_month: i64,
    pub monthly_before_cents: i64,
    pub before: Blast,
    pub after: Blast,
    /// Tasks the plan moves.
    pub tasks_moved: u32,
    /// Things to look at before draining: the MPS client limit, tasks whose CPU and memory
    /// could not be checked, …
    pub warnings: Vec<String>,
    /// What the plan could not know, in words.
    pub unknown: Vec<String>,
    /// Instance types (and how billed) with no price: their instances are kept and not counted.
    pub unpriced: Vec<String>,
}

/// The words the page and the API docs use for how the plan is made.
pub const METHOD: &str = "From today's allocations, per cluster: instances are tried for draining one at a time, the least allocated first (the dearer first among equals). An instance is drained when every task on it, and every task moved onto it before, can be placed on the instances kept, with the same rules as the deployment pre-check — MPS or whole GPUs, all of a task's MPS containers on one GPU, CPU, memory, host ports, ENIs, distinctInstance and memberOf — choosing the best fit as the pre-check does. Before anything moves, each cluster's largest rolling deployment (the extra tasks its maximumPercent lets run beside the old ones) is placed as if it were running, so the instances kept leave room for it; and the instances kept must keep the spare share of their GPU memory free. Savings are at the console's prices over 730 hours a month. The search is greedy: it finds a good plan, not a proven optimum. Nothing is drained from here: drain the instances with ECS (UpdateContainerInstancesState DRAINING) and let the services move their tasks.";

/// One instance in the simulation.
struct Host {
    cluster: String,
    id: String,
    instance_type: String,
    lifecycle: Lifecycle,
    usd_per_hour: Option<f64>,
    mps_capable: bool,
    gpus: Vec<GpuSlot>,
    room: Option<Room>,
    /// Whether it takes new tasks in the plan (it does not once drained).
    open: bool,
    /// Tasks of each service here, for `distinctInstance`.
    per_service: HashMap<usize, u32>,
    total_mib: u64,
}

impl Host {
    fn allocated_mib(&self) -> u64 {
        self.gpus
            .iter()
            .map(|g| u64::from(g.total_memory_mib - g.remaining_memory_mib.min(g.total_memory_mib)))
            .sum()
    }
}

/// One task in the simulation: a running one, or one of a rollout's extra tasks.
struct Task {
    /// Index into the service names; standalone tasks get a name of their own.
    service: usize,
    request: GpuRequest,
    needs: Option<Needs>,
    host: usize,
    assignment: GpuAssignment,
    /// A rollout's extra task, placed only to keep room.
    phantom: bool,
}

/// Where a task was placed during an attempt, to undo it.
struct Placed {
    task: usize,
    from: usize,
    from_assignment: GpuAssignment,
}

/// The simulated fleet of one cluster.
struct Sim {
    hosts: Vec<Host>,
    tasks: Vec<Task>,
    /// Task indexes on each host.
    on_host: Vec<BTreeSet<usize>>,
    names: Vec<String>,
    teams: Vec<Option<String>>,
}

impl Sim {
    /// The host that takes `task` now, best fit first, among open hosts other than `not`.
    fn find(&self, task: usize, not: usize) -> Option<(usize, GpuAssignment)> {
        let task = &self.tasks[task];
        let mut best: Option<(u64, usize, GpuAssignment)> = None;
        for (index, host) in self.hosts.iter().enumerate() {
            if !host.open || index == not {
                continue;
            }
            let Ok(assignment) = find_gpus(&host.gpus, host.mps_capable, &task.request) else {
                continue;
            };
            if let (Some(room), Some(needs)) = (&host.room, &task.needs) {
                let here = host.per_service.get(&task.service).copied().unwrap_or(0);
                if resources::check(room, needs, here).is_err() {
                    continue;
                }
            }
            let score = fit_score(&host.gpus, &task.request, &assignment);
            if best.as_ref().is_none_or(|(s, _, _)| score < *s) {
                best = Some((score, index, assignment));
            }
        }
        best.map(|(_, index, assignment)| (index, assignment))
    }

    fn take(&mut self, task: usize, host: usize, assignment: GpuAssignment) {
        let t = &mut self.tasks[task];
        let h = &mut self.hosts[host];
        allocate(&mut h.gpus, &t.request, &assignment);
        if let (Some(room), Some(needs)) = (&mut h.room, &t.needs) {
            resources::take(room, needs);
        }
        *h.per_service.entry(t.service).or_default() += 1;
        t.host = host;
        t.assignment = assignment;
        self.on_host[host].insert(task);
    }

    fn leave(&mut self, task: usize) {
        let t = &self.tasks[task];
        let host = t.host;
        let h = &mut self.hosts[host];
        release(&mut h.gpus, &t.request, &t.assignment);
        if let (Some(room), Some(needs)) = (&mut h.room, &t.needs) {
            resources::give_back(room, needs);
        }
        if let Some(count) = h.per_service.get_mut(&t.service) {
            *count = count.saturating_sub(1);
        }
        self.on_host[host].remove(&task);
    }

    /// Tries to move every task off `host`; undoes everything and answers false when one
    /// cannot be placed.
    fn try_drain(&mut self, host: usize) -> bool {
        let mut order: Vec<usize> = self.on_host[host].iter().copied().collect();
        // The largest first: they are the hardest to place.
        order.sort_by_key(|t| {
            let task = &self.tasks[*t];
            std::cmp::Reverse((task.request.whole_gpus(), task.request.mps_memory_mib()))
        });
        self.hosts[host].open = false;
        let mut placed: Vec<Placed> = Vec::new();
        for task in order {
            match self.find(task, host) {
                Some((to, assignment)) => {
                    let from_assignment = self.tasks[task].assignment.clone();
                    self.leave(task);
                    self.take(task, to, assignment);
                    placed.push(Placed {
                        task,
                        from: host,
                        from_assignment,
                    });
                }
                None => {
                    for undo in placed.into_iter().rev() {
                        self.leave(undo.task);
                        self.take(undo.task, undo.from, undo.from_assignment);
                    }
                    self.hosts[host].open = true;
                    return false;
                }
            }
        }
        true
    }

    /// Checks the simulated placement against the rules, from the tasks alone: each task on an
    /// open host, its MPS containers on GPUs in MPS mode and together within the GPU's memory,
    /// its whole GPUs dedicated and held by it alone.
    #[cfg(test)]
    fn valid(&self) -> Result<(), String> {
        let mut mps: HashMap<(usize, usize), u64> = HashMap::new();
        let mut whole: HashMap<(usize, usize), usize> = HashMap::new();
        for (index, task) in self.tasks.iter().enumerate() {
            let host = &self.hosts[task.host];
            if !host.open {
                return Err(format!("task {index} is left on drained {}", host.id));
            }
            if !self.on_host[task.host].contains(&index) {
                return Err(format!("task {index} is not listed on {}", host.id));
            }
            match &task.request {
                GpuRequest::Mps(memories) => {
                    let gpus: BTreeSet<usize> = task
                        .assignment
                        .per_container
                        .iter()
                        .flatten()
                        .copied()
                        .collect();
                    if gpus.len() != 1 {
                        return Err(format!(
                            "task {index}'s MPS containers are on {} GPUs",
                            gpus.len()
                        ));
                    }
                    for gpu in gpus {
                        if host.gpus[gpu].mode != placement::SharingMode::NvidiaMps {
                            return Err(format!(
                                "task {index} is on {}:{gpu}, not in MPS mode",
                                host.id
                            ));
                        }
                        *mps.entry((task.host, gpu)).or_default() +=
                            memories.iter().map(|m| u64::from(*m)).sum::<u64>();
                    }
                }
                GpuRequest::Whole(_) => {
                    for gpu in task.assignment.per_container.iter().flatten() {
                        if host.gpus[*gpu].mode != placement::SharingMode::Dedicated {
                            return Err(format!(
                                "task {index} holds {}:{gpu}, not dedicated",
                                host.id
                            ));
                        }
                        *whole.entry((task.host, *gpu)).or_default() += 1;
                    }
                }
                GpuRequest::None => {}
            }
        }
        for ((host, gpu), used) in mps {
            let slot = &self.hosts[host].gpus[gpu];
            if used > u64::from(slot.total_memory_mib) || whole.contains_key(&(host, gpu)) {
                return Err(format!(
                    "{}:{gpu} holds {used} MiB of {}",
                    self.hosts[host].id, slot.total_memory_mib
                ));
            }
        }
        if let Some(((host, gpu), _)) = whole.iter().find(|(_, n)| **n > 1) {
            return Err(format!(
                "{}:{gpu} is dedicated to two tasks",
                self.hosts[*host].id
            ));
        }
        Ok(())
    }

    fn blast(&self) -> Blast {
        let mut blast = Blast::default();
        let mut sum = 0u64;
        for (host, tasks) in self.on_host.iter().enumerate() {
            if !self.hosts[host].open {
                continue;
            }
            let mut per_gpu: Vec<BTreeSet<usize>> =
                vec![BTreeSet::new(); self.hosts[host].gpus.len()];
            let mut mps_clients: Vec<usize> = vec![0; per_gpu.len()];
            let mut mps_services: BTreeSet<usize> = BTreeSet::new();
            for task in tasks.iter().map(|t| &self.tasks[*t]).filter(|t| !t.phantom) {
                for gpu in task.assignment.per_container.iter().flatten() {
                    if let Some(set) = per_gpu.get_mut(*gpu) {
                        set.insert(task.service);
                    }
                    if matches!(task.request, GpuRequest::Mps(_)) {
                        if let Some(n) = mps_clients.get_mut(*gpu) {
                            *n += 1;
                        }
                        mps_services.insert(task.service);
                    }
                }
            }
            for set in per_gpu.iter().filter(|s| !s.is_empty()) {
                blast.gpus_in_use += 1;
                let n = set.len() as u32;
                sum += u64::from(n);
                blast.most_services_per_gpu = blast.most_services_per_gpu.max(n);
                if n >= 3 {
                    blast.gpus_with_three_or_more += 1;
                }
            }
            blast.gpus_over_client_limit += mps_clients
                .iter()
                .filter(|n| **n > MPS_CLIENT_LIMIT)
                .count() as u32;
            blast.most_services_per_mps_server = blast
                .most_services_per_mps_server
                .max(mps_services.len() as u32);
        }
        if blast.gpus_in_use > 0 {
            blast.mean_services_per_gpu = sum as f64 / f64::from(blast.gpus_in_use);
        }
        blast
    }
}

/// The extra tasks a service's deployment runs beside its old ones: all of them for a
/// blue/green, linear or canary deployment, else what `maximumPercent` allows above `desired`
/// (rounded down, as ECS does).
fn overlap(service: &ServiceRef) -> u32 {
    if service.strategy.as_deref().is_some_and(|s| s != "ROLLING") {
        return service.desired;
    }
    let maximum = service.maximum_percent.unwrap_or(200);
    (u64::from(service.desired) * u64::from(maximum) / 100)
        .saturating_sub(u64::from(service.desired)) as u32
}

/// What one task of `request` holds of GPU memory, MiB (a whole GPU counts its memory).
fn request_mib(request: &GpuRequest, gpu_mib: u32) -> u64 {
    match request {
        GpuRequest::Mps(_) => u64::from(request.mps_memory_mib()),
        GpuRequest::Whole(_) => u64::from(request.whole_gpus()) * u64::from(gpu_mib),
        GpuRequest::None => 0,
    }
}

fn cents(dollars: f64) -> i64 {
    (dollars * 100.0).round() as i64
}

/// Makes the plan for `query` from `snapshot`, priced by `prices`. `needs` gives, per
/// (cluster, service), what one task of the revision the service runs needs besides GPUs;
/// a service missing there is placed by its GPUs only, and the plan says so.
pub fn plan(
    snapshot: &FleetSnapshot,
    prices: &PriceBook,
    needs: &HashMap<(String, String), Needs>,
    query: &PlanQuery,
) -> Result<ConsolidationPlan, String> {
    let all_clusters: Vec<String> = snapshot.clusters.iter().map(|c| c.name.clone()).collect();
    crate::model::cost::check_cluster(query.cluster.as_ref(), &all_clusters)?;
    let mut plan = ConsolidationPlan {
        query: query.clone(),
        taken_at: snapshot.taken_at.clone(),
        all_clusters,
        ..ConsolidationPlan::default()
    };
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut unpriced: BTreeSet<String> = BTreeSet::new();
    let mut unchecked_services: BTreeSet<String> = BTreeSet::new();
    let mut standalone = 0u32;
    let mut not_placing = 0u32;
    let mut kept_unexplained = 0u32;
    for cluster in snapshot
        .clusters
        .iter()
        .filter(|c| query.cluster.as_ref().is_none_or(|name| &c.name == name))
    {
        let mut sim = Sim {
            hosts: Vec::new(),
            tasks: Vec::new(),
            on_host: Vec::new(),
            names: Vec::new(),
            teams: Vec::new(),
        };
        let mut service_index: HashMap<String, usize> = HashMap::new();
        let mut tasks_by_arn: HashMap<&str, usize> = HashMap::new();
        for instance in &cluster.instances {
            if !instance.takes_tasks() {
                not_placing += 1;
                continue;
            }
            let lifecycle = Lifecycle::of(instance.lifecycle.as_deref());
            let price = prices.price(&instance.instance_type, lifecycle);
            if price.is_none() {
                unpriced.insert(format!(
                    "{} ({})",
                    instance.instance_type,
                    lifecycle.as_str()
                ));
            }
            let gpus: Vec<GpuSlot> = instance.gpus.iter().map(slot).collect();
            let host = sim.hosts.len();
            sim.hosts.push(Host {
                cluster: cluster.name.clone(),
                id: instance.ec2_instance_id.clone(),
                instance_type: instance.instance_type.clone(),
                lifecycle,
                usd_per_hour: price.map(|p| p.usd_per_hour),
                mps_capable: instance.mps_capable && instance.impaired.is_none(),
                total_mib: gpus.iter().map(|g| u64::from(g.total_memory_mib)).sum(),
                gpus,
                room: instance.room.clone(),
                open: true,
                per_service: HashMap::new(),
            });
            sim.on_host.push(BTreeSet::new());
            for (gpu_index, gpu) in instance.gpus.iter().enumerate() {
                for container in &gpu.containers {
                    let task = match tasks_by_arn.get(container.task_arn.as_str()) {
                        Some(task) => *task,
                        None => {
                            let name = match &container.service {
                                Some(service) => service.clone(),
                                None => {
                                    standalone += 1;
                                    format!(
                                        "task {}",
                                        container.task_arn.rsplit('/').next().unwrap_or_default()
                                    )
                                }
                            };
                            let service = *service_index.entry(name.clone()).or_insert_with(|| {
                                sim.names.push(name.clone());
                                sim.teams.push(container.team.clone());
                                sim.names.len() - 1
                            });
                            let task_needs = container.service.as_ref().and_then(|s| {
                                needs.get(&(cluster.name.clone(), s.clone())).cloned()
                            });
                            if task_needs.is_none() {
                                if let Some(service) = &container.service {
                                    unchecked_services
                                        .insert(format!("{}/{service}", cluster.name));
                                }
                            }
                            sim.tasks.push(Task {
                                service,
                                request: if container.whole_gpu {
                                    GpuRequest::Whole(Vec::new())
                                } else {
                                    GpuRequest::Mps(Vec::new())
                                },
                                needs: task_needs,
                                host,
                                assignment: GpuAssignment {
                                    per_container: Vec::new(),
                                },
                                phantom: false,
                            });
                            tasks_by_arn.insert(&container.task_arn, sim.tasks.len() - 1);
                            sim.tasks.len() - 1
                        }
                    };
                    let task = &mut sim.tasks[task];
                    add_container(
                        &mut task.request,
                        &mut task.assignment,
                        container,
                        gpu_index,
                    );
                }
            }
        }
        for (index, task) in sim.tasks.iter().enumerate() {
            sim.on_host[task.host].insert(index);
            *sim.hosts[task.host]
                .per_service
                .entry(task.service)
                .or_default() += 1;
        }
        // The tasks each instance runs now (before the rollout's extra ones are added).
        let mut started_on: Vec<Vec<usize>> = vec![Vec::new(); sim.hosts.len()];
        for (index, task) in sim.tasks.iter().enumerate() {
            started_on[task.host].push(index);
        }
        before.push(sim.blast());

        // Room for the largest rollout: its extra tasks placed as if running.
        let mut headroom = None;
        let largest = cluster
            .service_list
            .iter()
            .filter_map(|service| {
                let index = *service_index.get(&service.name)?;
                let sample = sim.tasks.iter().find(|t| t.service == index)?;
                let gpu_mib = sim.hosts[sample.host]
                    .gpus
                    .first()
                    .map_or(0, |g| g.total_memory_mib);
                let extra = overlap(service);
                let size = u64::from(extra) * request_mib(&sample.request, gpu_mib);
                (extra > 0).then(|| {
                    (
                        size,
                        service,
                        index,
                        sample.request.clone(),
                        sample.needs.clone(),
                        extra,
                    )
                })
            })
            .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.name.cmp(&a.1.name)));
        if let Some((_, service, index, request, task_needs, extra)) = largest {
            let mut kept_room = true;
            for _ in 0..extra {
                let task = sim.tasks.len();
                sim.tasks.push(Task {
                    service: index,
                    request: request.clone(),
                    needs: task_needs.clone(),
                    host: 0,
                    assignment: GpuAssignment {
                        per_container: Vec::new(),
                    },
                    phantom: true,
                });
                match sim.find(task, usize::MAX) {
                    Some((host, assignment)) => sim.take(task, host, assignment),
                    None => {
                        sim.tasks.pop();
                        kept_room = false;
                        break;
                    }
                }
            }
            let per_task = match &request {
                GpuRequest::Whole(_) => format!("{} whole GPU(s)", request.whole_gpus()),
                _ => format!("{} MiB", request.mps_memory_mib()),
            };
            let bound = if overlap(service) == service.desired
                && service.strategy.as_deref().is_some_and(|s| s != "ROLLING")
            {
                format!(
                    "{} deployment",
                    service
                        .strategy
                        .clone()
                        .unwrap_or_default()
                        .to_lowercase()
                        .replace('_', "/")
                )
            } else {
                format!("maximumPercent {}", service.maximum_percent.unwrap_or(200))
            };
            headroom = Some(format!(
                "{}: {extra} more task{} of {per_task} ({bound}){}",
                service.name,
                if extra == 1 { "" } else { "s" },
                if kept_room {
                    ""
                } else {
                    " — the fleet has no room for them even now"
                }
            ));
        }

        // Drain, least allocated first, the dearer first among equals.
        let mut order: Vec<usize> = (0..sim.hosts.len()).collect();
        order.sort_by(|a, b| {
            let (ha, hb) = (&sim.hosts[*a], &sim.hosts[*b]);
            let fa = ha.allocated_mib() as f64 / ha.total_mib.max(1) as f64;
            let fb = hb.allocated_mib() as f64 / hb.total_mib.max(1) as f64;
            fa.total_cmp(&fb)
                .then_with(|| {
                    hb.usd_per_hour
                        .unwrap_or(0.0)
                        .total_cmp(&ha.usd_per_hour.unwrap_or(0.0))
                })
                .then_with(|| ha.id.cmp(&hb.id))
        });
        let spare = f64::from(query.spare_percent) / 100.0;
        let mut kept_mib: u64 = sim.hosts.iter().map(|h| h.total_mib).sum();
        let allocated: u64 = sim.hosts.iter().map(Host::allocated_mib).sum();
        let mut drained: Vec<usize> = Vec::new();
        let mut held_for_spare = 0u32;
        let unexplained: Vec<u64> = (0..sim.hosts.len())
            .map(|host| {
                let h = &sim.hosts[host];
                let gpu_mib = h.gpus.first().map_or(0, |g| g.total_memory_mib);
                let known: u64 = sim.on_host[host]
                    .iter()
                    .map(|t| request_mib(&sim.tasks[*t].request, gpu_mib))
                    .sum();
                h.allocated_mib().saturating_sub(known)
            })
            .collect();
        let unexplained_hosts = unexplained.iter().filter(|u| **u > 0).count();
        if unexplained_hosts > 0 {
            kept_unexplained += unexplained_hosts as u32;
        }
        for host in order {
            // Unpriced instances are kept: draining them saves nothing the plan can show. So is
            // one holding GPU memory no known task explains: what holds it could not be moved.
            if sim.hosts[host].usd_per_hour.is_none()
                || sim.hosts[host].gpus.is_empty()
                || unexplained[host] > 0
            {
                continue;
            }
            let left = kept_mib - sim.hosts[host].total_mib;
            if (left as f64) * (1.0 - spare) < allocated as f64 {
                held_for_spare += 1;
                continue;
            }
            if sim.try_drain(host) {
                kept_mib = left;
                drained.push(host);
            }
        }
        after.push(sim.blast());
        #[cfg(test)]
        if let Err(why) = sim.valid() {
            panic!("the simulated placement broke a rule: {why}");
        }

        // What moves where: each drained instance's tasks as they were, to where they end.
        let mut cluster_plan = ClusterPlan {
            name: cluster.name.clone(),
            instances_before: sim.hosts.len() as u32,
            instances_after: (sim.hosts.len() - drained.len()) as u32,
            headroom,
            kept_mib,
            free_after_mib: kept_mib.saturating_sub(allocated),
            held_for_spare,
            ..ClusterPlan::default()
        };
        for host in &sim.hosts {
            let monthly = cents(host.usd_per_hour.unwrap_or(0.0) * HOURS_PER_MONTH);
            cluster_plan.monthly_before_cents += monthly;
            if host.open {
                cluster_plan.monthly_after_cents += monthly;
            }
        }
        for host in drained {
            let h = &sim.hosts[host];
            let gpu_mib = h.gpus.first().map_or(0, |g| g.total_memory_mib);
            let mut moves: BTreeMap<usize, (u32, BTreeSet<String>)> = BTreeMap::new();
            let mut allocated_mib = 0;
            for t in started_on[host].iter().map(|task| &sim.tasks[*task]) {
                allocated_mib += request_mib(&t.request, gpu_mib);
                let entry = moves.entry(t.service).or_default();
                entry.0 += 1;
                entry.1.insert(sim.hosts[t.host].id.clone());
            }
            plan.tasks_moved += moves.values().map(|(n, _)| n).sum::<u32>();
            plan.drains.push(Drain {
                cluster: h.cluster.clone(),
                ec2_instance_id: h.id.clone(),
                instance_type: h.instance_type.clone(),
                lifecycle: h.lifecycle,
                monthly_cents: h.usd_per_hour.map(|p| cents(p * HOURS_PER_MONTH)),
                allocated_mib,
                total_mib: h.total_mib,
                moves: moves
                    .into_iter()
                    .map(|(service, (tasks, to))| Move {
                        service: sim.names[service].clone(),
                        team: sim.teams[service].clone(),
                        tasks,
                        to: to.into_iter().collect(),
                    })
                    .collect(),
            });
        }
        plan.clusters.push(cluster_plan);
    }
    plan.monthly_before_cents = plan.clusters.iter().map(|c| c.monthly_before_cents).sum();
    plan.saving_cents_per_month = plan
        .clusters
        .iter()
        .map(|c| c.monthly_before_cents - c.monthly_after_cents)
        .sum();
    plan.before = combine(&before);
    plan.after = combine(&after);
    plan.drains.sort_by(|a, b| {
        b.monthly_cents
            .cmp(&a.monthly_cents)
            .then_with(|| a.ec2_instance_id.cmp(&b.ec2_instance_id))
    });
    if plan.after.gpus_over_client_limit > plan.before.gpus_over_client_limit {
        plan.warnings.push(format!(
            "After the plan {} GPUs would carry more than {MPS_CLIENT_LIMIT} MPS containers (now {}). MPS takes {MPS_CLIENT_LIMIT} client CUDA contexts per GPU; ECS does not check it, so a task past it fails when it starts its CUDA context.",
            plan.after.gpus_over_client_limit, plan.before.gpus_over_client_limit
        ));
    }
    if !unchecked_services.is_empty() {
        let listed: Vec<&str> = unchecked_services
            .iter()
            .map(String::as_str)
            .take(10)
            .collect();
        plan.warnings.push(format!(
            "The task definitions of {} service(s) could not be read ({}{}), so their CPU, memory, ports and constraints were not checked: only their GPUs.",
            unchecked_services.len(),
            listed.join(", "),
            if unchecked_services.len() > listed.len() { ", …" } else { "" }
        ));
    }
    if standalone > 0 {
        plan.unknown.push(format!(
            "{standalone} task(s) started by no service: they would not move by themselves when their instance drains. Stop and start them elsewhere."
        ));
    }
    if kept_unexplained > 0 {
        plan.unknown.push(format!(
            "{kept_unexplained} instance(s) hold GPU memory that no task the console knows explains: kept, since what holds it could not be moved."
        ));
    }
    if not_placing > 0 {
        plan.unknown.push(format!(
            "{not_placing} instance(s) take no tasks now (draining or agent disconnected): left out of the plan."
        ));
    }
    plan.unknown.push("Tasks that hold no GPU are not in the fleet snapshot: instances to drain may also run some; ECS moves them with their services.".into());
    plan.unknown.push("The plan is made from today's allocations, not from the period's peak: a service that scales out later needs room the plan does not keep beyond the spare.".into());
    plan.unpriced = unpriced.into_iter().collect();
    Ok(plan)
}

/// The blast radius over several clusters.
fn combine(parts: &[Blast]) -> Blast {
    let mut all = Blast::default();
    let mut sum = 0.0;
    for part in parts {
        all.gpus_in_use += part.gpus_in_use;
        sum += part.mean_services_per_gpu * f64::from(part.gpus_in_use);
        all.most_services_per_gpu = all.most_services_per_gpu.max(part.most_services_per_gpu);
        all.gpus_with_three_or_more += part.gpus_with_three_or_more;
        all.most_services_per_mps_server = all
            .most_services_per_mps_server
            .max(part.most_services_per_mps_server);
        all.gpus_over_client_limit += part.gpus_over_client_limit;
    }
    if all.gpus_in_use > 0 {
        all.mean_services_per_gpu = sum / f64::from(all.gpus_in_use);
    }
    all
}

/// The plan as CSV: a line per instance to drain and service moving off it (one line for an
/// instance with nothing to move), as the page's table, then the total saving.
pub fn to_csv(plan: &ConsolidationPlan) -> String {
    use crate::model::{cost::usd, csv::field};
    let mut out = String::from(
        "cluster,instance,instance_type,lifecycle,monthly_usd,service,team,tasks,to\n",
    );
    let nothing = [Move {
        service: String::new(),
        team: None,
        tasks: 0,
        to: Vec::new(),
    }];
    for drain in &plan.drains {
        // An instance with no GPU task still has its line, as in the table.
        let moves = if drain.moves.is_empty() {
            &nothing[..]
        } else {
            &drain.moves[..]
        };
        for step in moves {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{}\n",
                field(&drain.cluster),
                field(&drain.ec2_instance_id),
                field(&drain.instance_type),
                drain.lifecycle.as_str(),
                drain.monthly_cents.map(usd).unwrap_or_default(),
                field(&step.service),
                field(step.team.as_deref().unwrap_or_default()),
                step.tasks,
                field(&step.to.join(" ")),
            ));
        }
    }
    out.push_str(&format!(
        "total,{} instances,,,{},,,{},\n",
        plan.drains.len(),
        usd(plan.saving_cents_per_month),
        plan.tasks_moved
    ));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use rand::{rngs::StdRng, Rng, SeedableRng};

    use super::*;
    use crate::model::{ClusterView, GpuContainer, GpuView, InstanceView, SharingMode};

    const GPU_MIB: u32 = 24_000;

    /// An MPS task: `(service, task number, memory)`.
    type Held<'a> = (&'a str, u32, u32);

    fn gpu(index: u32, tasks: &[Held]) -> GpuView {
        let used: u32 = tasks.iter().map(|(_, _, m)| m).sum();
        GpuView {
            uuid: format!("GPU-{index}"),
            index,
            mode: if tasks.is_empty() {
                SharingMode::Idle
            } else {
                SharingMode::NvidiaMps
            },
            total_memory_mib: GPU_MIB,
            remaining_memory_mib: GPU_MIB - used,
            compute_allocated_percent: 0,
            containers: tasks
                .iter()
                .map(|(service, n, memory)| GpuContainer {
                    task_arn: format!("arn:aws:ecs:us-east-1:1:task/prod/{service}-{n}"),
                    container: "main".into(),
                    service: Some(service.to_string()),
                    team: Some(format!("team-{service}")),
                    memory_mib: Some(*memory),
                    compute_percent: 100,
                    whole_gpu: false,
                    started_at: None,
                })
                .collect(),
            usage: None,
        }
    }

    fn instance(
        id: &str,
        instance_type: &str,
        gpus: Vec<GpuView>,
        room: Option<Room>,
    ) -> InstanceView {
        InstanceView {
            host: None,
            arn: format!("arn:aws:ecs:us-east-1:1:container-instance/prod/{id}"),
            ec2_instance_id: id.into(),
            instance_type: instance_type.into(),
            impaired: None,
            mps_capable: true,
            gpu_model: None,
            gpus,
            not_placing: None,
            availability_zone: None,
            lifecycle: None,
            room,
        }
    }

    fn room(cpu: u32) -> Room {
        Room {
            status: "ACTIVE".into(),
            agent_connected: true,
            cpu_remaining: cpu,
            memory_remaining_mib: 60_000,
            ..Room::default()
        }
    }

    fn fleet(instances: Vec<InstanceView>, services: Vec<ServiceRef>) -> FleetSnapshot {
        FleetSnapshot {
            taken_at: "2026-12-02T00:00:00Z".into(),
            api_calls: 0,
            cloudwatch_calls: 0,
            usage_error: None,
            clusters: vec![ClusterView {
                name: "prod".into(),
                instances,
                service_list: services,
                ..ClusterView::default()
            }],
            unknown_gpu_ids: 0,
        }
    }

    fn service(name: &str, desired: u32, maximum_percent: u32) -> ServiceRef {
        ServiceRef {
            name: name.into(),
            desired,
            maximum_percent: Some(maximum_percent),
            ..ServiceRef::default()
        }
    }

    fn prices() -> PriceBook {
        PriceBook::builtin("us-east-1")
    }

    /// Three g5.xlarge ($1.006 an hour) a third full each: one instance holds all three tasks
    /// after the plan, so two are drained, saving 2 × $1.006 × 730 a month, and the tasks say
    /// where they go.
    #[test]
    fn thin_instances_are_drained_onto_one_and_the_saving_is_their_price() {
        let snapshot = fleet(
            vec![
                instance(
                    "i-a",
                    "g5.xlarge",
                    vec![gpu(0, &[("embed", 1, 7_000)])],
                    None,
                ),
                instance(
                    "i-b",
                    "g5.xlarge",
                    vec![gpu(0, &[("embed", 2, 7_000)])],
                    None,
                ),
                instance(
                    "i-c",
                    "g5.xlarge",
                    vec![gpu(0, &[("rerank", 1, 8_000)])],
                    None,
                ),
            ],
            Vec::new(),
        );
        let query = PlanQuery {
            spare_percent: 0,
            ..PlanQuery::default()
        };
        let plan = plan(&snapshot, &prices(), &HashMap::new(), &query).unwrap();
        assert_eq!(plan.drains.len(), 2, "{plan:#?}");
        assert_eq!(plan.saving_cents_per_month, 2 * 73_438, "2 × 1.006 × 730");
        assert_eq!(plan.clusters[0].instances_after, 1);
        assert_eq!(plan.tasks_moved, 2);
        let kept = ["i-a", "i-b", "i-c"]
            .into_iter()
            .find(|id| plan.drains.iter().all(|d| d.ec2_instance_id != *id))
            .unwrap();
        for drain in &plan.drains {
            assert_eq!(drain.moves.len(), 1);
            assert_eq!(drain.moves[0].to, [kept]);
            assert_eq!(drain.monthly_cents, Some(73_438));
        }
        // Three services' worth of tasks now share one GPU: the blast radius grows.
        assert_eq!(plan.before.most_services_per_gpu, 1);
        assert_eq!(plan.after.most_services_per_gpu, 2);
        assert_eq!(plan.after.gpus_in_use, 1);
    }

    /// The spare share and the largest rollout's overlap keep instances that would otherwise go.
    #[test]
    fn the_spare_and_the_rollout_overlap_keep_room() {
        let instances = vec![
            instance(
                "i-a",
                "g5.xlarge",
                vec![gpu(0, &[("embed", 1, 7_000)])],
                None,
            ),
            instance(
                "i-b",
                "g5.xlarge",
                vec![gpu(0, &[("embed", 2, 7_000)])],
                None,
            ),
        ];
        let lean = PlanQuery {
            spare_percent: 0,
            ..PlanQuery::default()
        };
        let none = plan(
            &fleet(instances.clone(), Vec::new()),
            &prices(),
            &HashMap::new(),
            &lean,
        )
        .unwrap();
        assert_eq!(none.drains.len(), 1);
        // embed at maximumPercent 200 starts 2 more tasks of 7,000 MiB beside its 2: 28,000 MiB
        // is more than one GPU has, so both instances stay.
        let rolling = fleet(instances.clone(), vec![service("embed", 2, 200)]);
        let kept = plan(&rolling, &prices(), &HashMap::new(), &lean).unwrap();
        assert!(kept.drains.is_empty(), "{kept:#?}");
        assert_eq!(
            kept.clusters[0].headroom.as_deref(),
            Some("embed: 2 more tasks of 7000 MiB (maximumPercent 200)")
        );
        // At maximumPercent 150 one more task: 21,000 MiB fits one GPU.
        let gentle = fleet(instances.clone(), vec![service("embed", 2, 150)]);
        assert_eq!(
            plan(&gentle, &prices(), &HashMap::new(), &lean)
                .unwrap()
                .drains
                .len(),
            1
        );
        // Keeping 60 % of the memory spare keeps both.
        let half = PlanQuery {
            spare_percent: 60,
            ..PlanQuery::default()
        };
        let spared = plan(
            &fleet(instances, Vec::new()),
            &prices(),
            &HashMap::new(),
            &half,
        )
        .unwrap();
        assert!(spared.drains.is_empty());
        assert_eq!(spared.clusters[0].held_for_spare, 2);
    }

    /// CPU counts: a task whose service needs more CPU than the other instance has left stays.
    #[test]
    fn cpu_left_on_the_instances_kept_bounds_the_plan() {
        let instances = vec![
            instance(
                "i-a",
                "g5.xlarge",
                vec![gpu(0, &[("embed", 1, 6_000)])],
                Some(room(1_024)),
            ),
            instance(
                "i-b",
                "g5.xlarge",
                vec![gpu(0, &[("embed", 2, 6_000)])],
                Some(room(1_024)),
            ),
        ];
        let lean = PlanQuery {
            spare_percent: 0,
            ..PlanQuery::default()
        };
        let needs = |cpu: u32| -> HashMap<(String, String), Needs> {
            [(
                ("prod".to_string(), "embed".to_string()),
                Needs {
                    cpu,
                    memory_mib: 1_000,
                    ..Needs::default()
                },
            )]
            .into()
        };
        let fits = plan(
            &fleet(instances.clone(), Vec::new()),
            &prices(),
            &needs(1_024),
            &lean,
        )
        .unwrap();
        assert_eq!(fits.drains.len(), 1);
        assert!(fits.warnings.is_empty(), "{:?}", fits.warnings);
        let starved = plan(
            &fleet(instances.clone(), Vec::new()),
            &prices(),
            &needs(2_048),
            &lean,
        )
        .unwrap();
        assert!(starved.drains.is_empty());
        // Without the task definition, only GPUs are checked, and the plan says so.
        let unknown = plan(
            &fleet(instances, Vec::new()),
            &prices(),
            &HashMap::new(),
            &lean,
        )
        .unwrap();
        assert!(
            unknown.warnings.iter().any(|w| w.contains("prod/embed")),
            "{:?}",
            unknown.warnings
        );
    }

    #[test]
    fn bad_queries_say_what_to_give() {
        let query = |pairs: &[(&str, &str)]| PlanQuery::from_params(pairs.iter().copied());
        assert_eq!(query(&[("spare", "25")]).unwrap().spare_percent, 25);
        assert_eq!(query(&[("spare", "25 %")]).unwrap().spare_percent, 25);
        assert!(query(&[("spare", "95")]).unwrap_err().contains("0 to 90"));
        assert!(query(&[("spare", "lots")])
            .unwrap_err()
            .contains("spare=10"));
        assert!(query(&[("group", "team")])
            .unwrap_err()
            .contains("cluster and spare"));
        let round = PlanQuery {
            cluster: Some("a b".into()),
            spare_percent: 20,
        };
        assert_eq!(round.to_params(), "cluster=a%20b&spare=20");
        let snapshot = fleet(Vec::new(), Vec::new());
        let error = plan(
            &snapshot,
            &prices(),
            &HashMap::new(),
            &PlanQuery {
                cluster: Some("nope".into()),
                ..PlanQuery::default()
            },
        )
        .unwrap_err();
        assert!(error.contains("prod"), "{error}");
    }

    /// Over random fleets: every task is somewhere after the plan, no GPU holds more than it
    /// has, nothing is left on a drained instance, and the saving is the drained instances'
    /// price. Checked by replaying the plan's moves on the snapshot.
    #[test]
    fn any_plan_replays_onto_the_instances_kept() {
        let mut rng = StdRng::seed_from_u64(7);
        for round in 0..200 {
            let mut instances = Vec::new();
            let mut n = 0;
            for i in 0..rng.random_range(1..12) {
                let gpus = if rng.random_bool(0.5) { 1 } else { 4 };
                let kind = if gpus == 1 {
                    "g5.xlarge"
                } else {
                    "g5.12xlarge"
                };
                let views = (0..gpus)
                    .map(|g| {
                        let mut held: Vec<(String, u32, u32)> = Vec::new();
                        let mut used = 0;
                        for _ in 0..rng.random_range(0..4) {
                            let memory = rng.random_range(1..9) * 1_000;
                            if used + memory <= GPU_MIB {
                                used += memory;
                                n += 1;
                                held.push((format!("s{}", rng.random_range(0..5)), n, memory));
                            }
                        }
                        let held: Vec<Held> =
                            held.iter().map(|(s, n, m)| (s.as_str(), *n, *m)).collect();
                        gpu(g, &held)
                    })
                    .collect();
                instances.push(instance(&format!("i-{i}"), kind, views, None));
            }
            let snapshot = fleet(instances, Vec::new());
            let spare = rng.random_range(0..40);
            let query = PlanQuery {
                spare_percent: spare,
                ..PlanQuery::default()
            };
            let plan = plan(&snapshot, &prices(), &HashMap::new(), &query).unwrap();
            let drained: BTreeSet<&str> = plan
                .drains
                .iter()
                .map(|d| d.ec2_instance_id.as_str())
                .collect();
            // Replay: memory per kept instance after the moves.
            let mut held: BTreeMap<String, u64> = BTreeMap::new();
            let mut total: BTreeMap<String, u64> = BTreeMap::new();
            for instance in &snapshot.clusters[0].instances {
                total.insert(
                    instance.ec2_instance_id.clone(),
                    instance.gpus.len() as u64 * u64::from(GPU_MIB),
                );
                if !drained.contains(instance.ec2_instance_id.as_str()) {
                    let here: u64 = instance
                        .gpus
                        .iter()
                        .map(|g| u64::from(g.allocated_memory_mib()))
                        .sum();
                    *held.entry(instance.ec2_instance_id.clone()).or_default() += here;
                }
            }
            let moved: u64 = plan.drains.iter().map(|d| d.allocated_mib).sum();
            for drain in &plan.drains {
                for step in &drain.moves {
                    assert!(
                        step.to.iter().all(|to| !drained.contains(to.as_str())),
                        "round {round}: moved onto a drained instance"
                    );
                }
            }
            let all: u64 = snapshot.clusters[0]
                .instances
                .iter()
                .flat_map(|i| &i.gpus)
                .map(|g| u64::from(g.allocated_memory_mib()))
                .sum();
            let kept_total: u64 = total
                .iter()
                .filter(|(id, _)| !drained.contains(id.as_str()))
                .map(|(_, t)| *t)
                .sum();
            assert_eq!(held.values().sum::<u64>() + moved, all, "round {round}");
            assert!(
                plan.drains.is_empty()
                    || all as f64 <= kept_total as f64 * (1.0 - f64::from(spare) / 100.0) + 0.5,
                "round {round}: the spare is kept"
            );
            let saving: i64 = plan.drains.iter().map(|d| d.monthly_cents.unwrap()).sum();
            assert_eq!(saving, plan.saving_cents_per_month, "round {round}");
            assert_eq!(
                plan.tasks_moved,
                plan.drains
                    .iter()
                    .flat_map(|d| &d.moves)
                    .map(|m| m.tasks)
                    .sum::<u32>()
            );
        }
    }
}
