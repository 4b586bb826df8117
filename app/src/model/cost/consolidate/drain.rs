//! One cluster's part of the plan: room kept for its largest rollout, its instances tried for
//! draining in order, and what each drained instance's tasks would do.

use super::*;
use crate::model::ClusterView;

/// What the plan found for one cluster.
pub(super) struct Planned {
    pub(super) plan: ClusterPlan,
    /// The instances to drain, each with where its tasks go.
    pub(super) drains: Vec<Drain>,
    pub(super) before: Blast,
    pub(super) after: Blast,
    /// Instances kept because GPU memory on them is held by nothing the console knows.
    pub(super) kept_unexplained: u32,
}

/// Plans `cluster`: keeps room for its largest rollout, then drains what the rest can hold.
pub(super) fn plan_cluster(
    cluster: &ClusterView,
    prices: &PriceBook,
    needs: &HashMap<(String, String), Needs>,
    query: &PlanQuery,
    seen: &mut Noticed,
) -> Planned {
    let (mut sim, service_index) = Sim::of_cluster(cluster, prices, needs, seen);
    // The tasks each instance runs now (before the rollout's extra ones are added).
    let mut started_on: Vec<Vec<usize>> = vec![Vec::new(); sim.hosts.len()];
    for (index, task) in sim.tasks.iter().enumerate() {
        started_on[task.host].push(index);
    }
    let before = sim.blast();
    let headroom = keep_room_for_largest_rollout(&mut sim, cluster, &service_index);
    let spare = f64::from(query.spare_percent) / 100.0;
    let mut kept_mib: u64 = sim.hosts.iter().map(|h| h.total_mib).sum();
    let allocated: u64 = sim.hosts.iter().map(Host::allocated_mib).sum();
    let mut drained: Vec<usize> = Vec::new();
    let mut held_for_spare = 0u32;
    let unexplained = unexplained_mib(&sim);
    for host in drain_order(&sim) {
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
    let after = sim.blast();
    #[cfg(test)]
    if let Err(why) = sim.valid() {
        panic!("the simulated placement broke a rule: {why}");
    }
    let mut plan = ClusterPlan {
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
        plan.monthly_before_cents += monthly;
        if host.open {
            plan.monthly_after_cents += monthly;
        }
    }
    Planned {
        plan,
        drains: drained
            .into_iter()
            .map(|host| drain_of(&sim, host, &started_on[host]))
            .collect(),
        before,
        after,
        kept_unexplained: unexplained.iter().filter(|u| **u > 0).count() as u32,
    }
}

/// Places the extra tasks of the cluster's largest rollout as if they ran, so that the
/// instances kept leave room for it; the words that say so, if the cluster has one.
fn keep_room_for_largest_rollout(
    sim: &mut Sim,
    cluster: &ClusterView,
    service_index: &HashMap<String, usize>,
) -> Option<String> {
    let (_, service, index, request, task_needs, extra) = cluster
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
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.name.cmp(&a.1.name)))?;
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
    Some(format!(
        "{}: {extra} more task{} of {per_task} ({}){}",
        service.name,
        if extra == 1 { "" } else { "s" },
        overlap_bound(service),
        if kept_room {
            ""
        } else {
            " — the fleet has no room for them even now"
        }
    ))
}

/// What bounds a service's extra tasks during a rollout: its deployment kind when the whole
/// set runs beside the old one, else its `maximumPercent`.
fn overlap_bound(service: &ServiceRef) -> String {
    if overlap(service) == service.desired
        && !DeploymentStrategy::is_rolling(service.strategy.as_ref())
    {
        format!(
            "{} deployment",
            service
                .strategy
                .as_ref()
                .map(|s| s.as_str().to_lowercase())
                .unwrap_or_default()
                .replace('_', "/")
        )
    } else {
        format!("maximumPercent {}", service.maximum_percent.unwrap_or(200))
    }
}

/// The order instances are tried in: least allocated first, the dearer first among equals.
fn drain_order(sim: &Sim) -> Vec<usize> {
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
    order
}

/// Per instance: the GPU memory allocated on it that no task the console knows explains.
fn unexplained_mib(sim: &Sim) -> Vec<u64> {
    (0..sim.hosts.len())
        .map(|host| {
            let h = &sim.hosts[host];
            let gpu_mib = h.gpus.first().map_or(0, |g| g.total_memory_mib);
            let known: u64 = sim.on_host[host]
                .iter()
                .map(|t| request_mib(&sim.tasks[*t].request, gpu_mib))
                .sum();
            h.allocated_mib().saturating_sub(known)
        })
        .collect()
}

/// The drain of `host`: the tasks it ran (`started_on`), as they were, and where they end.
fn drain_of(sim: &Sim, host: usize, started_on: &[usize]) -> Drain {
    let h = &sim.hosts[host];
    let gpu_mib = h.gpus.first().map_or(0, |g| g.total_memory_mib);
    let mut moves: BTreeMap<usize, (u32, BTreeSet<String>)> = BTreeMap::new();
    let mut allocated_mib = 0;
    for t in started_on.iter().map(|task| &sim.tasks[*task]) {
        allocated_mib += request_mib(&t.request, gpu_mib);
        let entry = moves.entry(t.service).or_default();
        entry.0 += 1;
        entry.1.insert(sim.hosts[t.host].id.clone());
    }
    Drain {
        cluster: h.cluster.clone(),
        ec2_instance_id: h.id.clone(),
        instance_type: h.instance_type.clone(),
        lifecycle: h.lifecycle,
        monthly_cents: h.usd_per_hour.map(|p| cents(p * HOURS_PER_MONTH)),
        keeps_billing: h.keeps_billing.map(str::to_string),
        who_acts: h.who_acts.clone(),
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
    }
}
