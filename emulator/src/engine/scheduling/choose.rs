//! The instance a new task goes to: what the task needs with its service's constraints, the
//! instances that pass ECS's checks, and the one the placement strategies prefer.

use std::collections::HashMap;

use super::Unplaced;
use crate::{
    model::{Cluster, ContainerInstance},
    placement::{
        self,
        resources::{self, Needs},
        GpuRequest, NoFit,
    },
};

/// What a task of `group` needs: the task definition's needs joined by its service's own
/// constraints, and the service's strategies (by default, spread across Availability Zones)
/// that choose among the instances that fit.
pub(in crate::engine) fn needs_and_strategies(
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
pub(in crate::engine) fn choose_instance(
    cluster: &Cluster,
    gpu: &GpuRequest,
    needs: &Needs,
    group: &str,
    strategies: &[placement::strategy::Strategy],
    provider: Option<&str>,
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
        // A capacity provider's tasks go only to the instances it launched.
        if provider.is_some_and(|p| instance.capacity_provider.as_deref() != Some(p)) {
            continue;
        }
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
