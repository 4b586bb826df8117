//! The simulation the plan runs: the instances kept, the tasks they hold, and placing each task of
//! an instance being drained with the pre-check's rules.

use super::*;
use crate::model::ClusterView;

/// One instance in the simulation.
pub(super) struct Host {
    pub(super) cluster: String,
    pub(super) id: String,
    pub(super) instance_type: String,
    pub(super) lifecycle: Lifecycle,
    pub(super) usd_per_hour: Option<f64>,
    /// What keeps billing it after it goes ("a Savings Plan", "a Capacity Block"), if anything.
    pub(super) keeps_billing: Option<&'static str>,
    /// Who retires it once it is drained, in words.
    pub(super) who_acts: String,
    pub(super) mps_capable: bool,
    pub(super) gpus: Vec<GpuSlot>,
    pub(super) room: Option<Room>,
    /// Whether it takes new tasks in the plan (it does not once drained).
    pub(super) open: bool,
    /// Tasks of each service here, for `distinctInstance`.
    pub(super) per_service: HashMap<usize, u32>,
    pub(super) total_mib: u64,
}

impl Host {
    pub(super) fn allocated_mib(&self) -> u64 {
        self.gpus
            .iter()
            .map(|g| u64::from(g.total_memory_mib - g.remaining_memory_mib.min(g.total_memory_mib)))
            .sum()
    }
}

/// One task in the simulation: a running one, or one of a rollout's extra tasks.
pub(super) struct Task {
    /// Index into the service names; standalone tasks get a name of their own.
    pub(super) service: usize,
    pub(super) request: GpuRequest,
    pub(super) needs: Option<Needs>,
    pub(super) host: usize,
    pub(super) assignment: GpuAssignment,
    /// A rollout's extra task, placed only to keep room.
    pub(super) phantom: bool,
}

/// Where a task was placed during an attempt, to undo it.
pub(super) struct Placed {
    pub(super) task: usize,
    pub(super) from: usize,
    pub(super) from_assignment: GpuAssignment,
}

/// The simulated fleet of one cluster.
pub(super) struct Sim {
    pub(super) hosts: Vec<Host>,
    pub(super) tasks: Vec<Task>,
    /// Task indexes on each host.
    pub(super) on_host: Vec<BTreeSet<usize>>,
    pub(super) names: Vec<String>,
    pub(super) teams: Vec<Option<String>>,
}

impl Sim {
    /// The host that takes `task` now, best fit first, among open hosts other than `not`.
    pub(super) fn find(&self, task: usize, not: usize) -> Option<(usize, GpuAssignment)> {
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

    pub(super) fn take(&mut self, task: usize, host: usize, assignment: GpuAssignment) {
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

    pub(super) fn leave(&mut self, task: usize) {
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
    pub(super) fn try_drain(&mut self, host: usize) -> bool {
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
    pub(super) fn valid(&self) -> Result<(), String> {
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

    pub(super) fn blast(&self) -> Blast {
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
pub(super) fn overlap(service: &ServiceRef) -> u32 {
    if !DeploymentStrategy::is_rolling(service.strategy.as_ref()) {
        return service.desired;
    }
    let maximum = service.maximum_percent.unwrap_or(200);
    (u64::from(service.desired) * u64::from(maximum) / 100)
        .saturating_sub(u64::from(service.desired)) as u32
}

/// What one task of `request` holds of GPU memory, MiB (a whole GPU counts its memory).
pub(super) fn request_mib(request: &GpuRequest, gpu_mib: u32) -> u64 {
    match request {
        GpuRequest::Mps(_) => u64::from(request.mps_memory_mib()),
        GpuRequest::Whole(_) => u64::from(request.whole_gpus()) * u64::from(gpu_mib),
        GpuRequest::None => 0,
    }
}

pub(super) fn cents(dollars: f64) -> i64 {
    (dollars * 100.0).round() as i64
}

/// What building a cluster's simulation noticed, for the plan's notes.
#[derive(Default)]
pub(super) struct Noticed {
    /// Instance types and lifecycles without a price.
    pub(super) unpriced: BTreeSet<String>,
    /// `cluster/service` whose needs besides GPUs are not known.
    pub(super) unchecked_services: BTreeSet<String>,
    /// Tasks started by no service.
    pub(super) standalone: u32,
    /// Instances that take no tasks now, and what those with a price cost a month.
    pub(super) not_placing: u32,
    pub(super) not_placing_cents: i64,
}

impl Sim {
    /// The simulation of `cluster` as it runs now: its instances that take tasks, priced by
    /// `prices`, and the tasks on their GPUs; with the index of each service by name.
    pub(super) fn of_cluster(
        cluster: &ClusterView,
        prices: &PriceBook,
        needs: &HashMap<(String, String), Needs>,
        seen: &mut Noticed,
    ) -> (Sim, HashMap<String, usize>) {
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
                seen.not_placing += 1;
                let lifecycle = Lifecycle::priced_as(instance.lifecycle);
                if let Some(price) = prices.price(&instance.instance_type, lifecycle) {
                    seen.not_placing_cents += cents(price.usd_per_hour * super::HOURS_PER_MONTH);
                }
                continue;
            }
            let host = sim.hosts.len();
            sim.hosts
                .push(host_of(&cluster.name, instance, prices, seen));
            sim.on_host.push(BTreeSet::new());
            for (gpu_index, gpu) in instance.gpus.iter().enumerate() {
                for container in &gpu.containers {
                    let task = match tasks_by_arn.get(container.task_arn.as_str()) {
                        Some(task) => *task,
                        None => {
                            let service = sim.service_of(container, &mut service_index, seen);
                            let task_needs = container.service.as_ref().and_then(|s| {
                                needs.get(&(cluster.name.clone(), s.clone())).cloned()
                            });
                            if task_needs.is_none() {
                                if let Some(service) = &container.service {
                                    seen.unchecked_services
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
        (sim, service_index)
    }

    /// The index of a container's service, added when new; a task of no service is its own
    /// "service", named after the task.
    fn service_of(
        &mut self,
        container: &crate::model::GpuContainer,
        service_index: &mut HashMap<String, usize>,
        seen: &mut Noticed,
    ) -> usize {
        let name = match &container.service {
            Some(service) => service.clone(),
            None => {
                seen.standalone += 1;
                format!(
                    "task {}",
                    container.task_arn.rsplit('/').next().unwrap_or_default()
                )
            }
        };
        *service_index.entry(name.clone()).or_insert_with(|| {
            self.names.push(name);
            self.teams.push(container.team.clone());
            self.names.len() - 1
        })
    }
}

/// An instance that takes tasks as a host of the simulation, priced by its lifecycle; an
/// instance type without a price is noted.
fn host_of(
    cluster: &str,
    instance: &crate::model::InstanceView,
    prices: &PriceBook,
    seen: &mut Noticed,
) -> Host {
    let lifecycle = Lifecycle::priced_as(instance.lifecycle);
    let price = prices.price(&instance.instance_type, lifecycle);
    if price.is_none() {
        seen.unpriced.insert(format!(
            "{} ({})",
            instance.instance_type,
            lifecycle.as_str()
        ));
    }
    let gpus: Vec<GpuSlot> = instance.gpus.iter().map(slot).collect();
    Host {
        cluster: cluster.to_string(),
        id: instance.ec2_instance_id.clone(),
        instance_type: instance.instance_type.clone(),
        lifecycle,
        usd_per_hour: price.map(|p| p.usd_per_hour),
        keeps_billing: match (price.and_then(|p| p.commitment), lifecycle) {
            (Some(commitment), _) => Some(commitment.words()),
            (None, Lifecycle::CapacityBlock) => Some("a Capacity Block"),
            _ => None,
        },
        who_acts: who_acts(instance),
        mps_capable: instance.mps_capable && instance.impaired.is_none(),
        total_mib: gpus.iter().map(|g| u64::from(g.total_memory_mib)).sum(),
        gpus,
        room: instance.room.clone(),
        open: true,
        per_service: HashMap::new(),
    }
}

/// Who retires `instance` once it is drained, as far as the fleet says: the operator for one
/// registered outside any provider; its provider otherwise, which the service's reading of the
/// providers words more closely.
fn who_acts(instance: &crate::model::InstanceView) -> String {
    match &instance.capacity_provider {
        Some(provider) => format!("the capacity provider {provider}"),
        None => {
            "you: it was registered outside any capacity provider; terminate it once it is empty"
                .to_string()
        }
    }
}
