//! The overview's arrangement of the fleet: each instance a block of its GPUs, the blocks in
//! groups (cluster, instance type, team or availability zone), each group with its totals and
//! its blocks in the chosen order.

use std::{
    cmp::Ordering,
    collections::{BTreeMap, HashMap},
};

use super::{Compute, Grouping, SortKey};
use crate::model::{FleetSnapshot, GpuView, InstanceView, SharingMode};

/// One instance's GPUs of a group: all of them, except when grouping by team, where an
/// instance's GPUs of different teams sit in different groups.
#[derive(Debug)]
pub struct Block<'a> {
    pub cluster: &'a str,
    pub instance: &'a InstanceView,
    pub gpus: Vec<&'a GpuView>,
}

/// What a group's header says.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct GroupTotals {
    pub instances: u32,
    pub gpus: u32,
    pub memory_total_mib: u64,
    pub memory_allocated_mib: u64,
    /// Σ of the GPUs' utilisation over the window, and how many GPUs have one.
    pub utilization_sum: f64,
    pub utilization_gpus: u32,
    pub contended: u32,
}

impl GroupTotals {
    /// Memory allocated, in whole percent.
    pub fn allocated_percent(&self) -> u64 {
        (self.memory_allocated_mib * 100)
            .checked_div(self.memory_total_mib)
            .unwrap_or(0)
    }

    /// Mean utilisation over the window of the GPUs that have one.
    pub fn utilization_percent(&self) -> Option<f64> {
        (self.utilization_gpus > 0).then(|| self.utilization_sum / f64::from(self.utilization_gpus))
    }
}

/// A group of the overview: its value (empty for "none": no team, zone unknown), its blocks in
/// order and its totals.
#[derive(Debug)]
pub struct Group<'a> {
    pub key: String,
    pub blocks: Vec<Block<'a>>,
    pub totals: GroupTotals,
}

/// The team a GPU counts for: the one holding most of its memory (a whole GPU counts all of it;
/// ties go to the first name). `None` for an idle GPU or containers of no team.
pub fn gpu_team(gpu: &GpuView) -> Option<&str> {
    let mut teams: BTreeMap<&str, u64> = BTreeMap::new();
    for container in &gpu.containers {
        let Some(team) = container.team.as_deref() else {
            continue;
        };
        let memory = match (container.whole_gpu, container.memory_mib) {
            (false, Some(mib)) => u64::from(mib),
            _ => u64::from(gpu.total_memory_mib),
        };
        *teams.entry(team).or_default() += memory;
    }
    let mut best: Option<(&str, u64)> = None;
    for (team, memory) in teams {
        if best.is_none_or(|(_, most)| memory > most) {
            best = Some((team, memory));
        }
    }
    best.map(|(team, _)| team)
}

/// Memory ECS allocated on a GPU: all of a dedicated one.
pub fn allocated_mib(gpu: &GpuView) -> u32 {
    match gpu.mode {
        SharingMode::Dedicated => gpu.total_memory_mib,
        _ => gpu.allocated_memory_mib(),
    }
}

/// The group a GPU of `instance` in `cluster` belongs to under `grouping`.
pub fn group_key<'a>(
    grouping: Grouping,
    cluster: &'a str,
    instance: &'a InstanceView,
    gpu: &'a GpuView,
) -> &'a str {
    match grouping {
        Grouping::Cluster => cluster,
        Grouping::InstanceType => &instance.instance_type,
        Grouping::Zone => instance.availability_zone.as_deref().unwrap_or(""),
        Grouping::Team => gpu_team(gpu).unwrap_or(""),
        Grouping::CapacityProvider => instance.capacity_provider.as_deref().unwrap_or(""),
    }
}

/// The fleet in groups, each group's blocks ordered by `sort`; clusters in the snapshot's
/// order, other groups by name (the group of "none" last). Instances without GPUs have no
/// block but count in their group's instances (by cluster, type or zone).
pub fn pack(
    snapshot: &FleetSnapshot,
    grouping: Grouping,
    sort: SortKey,
    threshold: u32,
) -> Vec<Group<'_>> {
    let mut groups = Groups::default();
    for cluster in &snapshot.clusters {
        for instance in &cluster.instances {
            if instance.gpus.is_empty() && grouping != Grouping::Team {
                let key = match grouping {
                    Grouping::Cluster => cluster.name.as_str(),
                    Grouping::InstanceType => instance.instance_type.as_str(),
                    Grouping::CapacityProvider => {
                        instance.capacity_provider.as_deref().unwrap_or("")
                    }
                    _ => instance.availability_zone.as_deref().unwrap_or(""),
                };
                groups.get(key).totals.instances += 1;
                continue;
            }
            // The instance's GPUs by group, in index order.
            let mut parts: Vec<(&str, Vec<&GpuView>)> = Vec::new();
            for gpu in &instance.gpus {
                let key = group_key(grouping, &cluster.name, instance, gpu);
                match parts.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, gpus)) => gpus.push(gpu),
                    None => parts.push((key, vec![gpu])),
                }
            }
            for (key, gpus) in parts {
                let group = groups.get(key);
                group.totals.instances += 1;
                for gpu in &gpus {
                    add(&mut group.totals, gpu, threshold);
                }
                group.blocks.push(Block {
                    cluster: &cluster.name,
                    instance,
                    gpus,
                });
            }
        }
    }
    let mut out = groups.list;
    if grouping != Grouping::Cluster {
        // "None" (no team, zone unknown) last.
        out.sort_by(|a, b| {
            a.key
                .is_empty()
                .cmp(&b.key.is_empty())
                .then_with(|| a.key.cmp(&b.key))
        });
    }
    for group in &mut out {
        order(&mut group.blocks, sort);
    }
    out
}

/// Groups in the order they are first met.
#[derive(Default)]
struct Groups<'a> {
    list: Vec<Group<'a>>,
    index: HashMap<&'a str, usize>,
}

impl<'a> Groups<'a> {
    fn get(&mut self, key: &'a str) -> &mut Group<'a> {
        let at = *self.index.entry(key).or_insert_with(|| {
            self.list.push(Group {
                key: key.to_string(),
                blocks: Vec::new(),
                totals: GroupTotals::default(),
            });
            self.list.len() - 1
        });
        &mut self.list[at]
    }
}

fn add(totals: &mut GroupTotals, gpu: &GpuView, threshold: u32) {
    totals.gpus += 1;
    totals.memory_total_mib += u64::from(gpu.total_memory_mib);
    totals.memory_allocated_mib += u64::from(allocated_mib(gpu));
    if let Some(reading) = gpu.usage.and_then(|u| u.utilization_percent) {
        totals.utilization_sum += reading.average;
        totals.utilization_gpus += 1;
    }
    totals.contended += u32::from(Compute::of(gpu, threshold) == Compute::Contended);
}

/// A block's value for `sort`, highest first; `None` (no data) after every value.
fn value(block: &Block<'_>, sort: SortKey) -> Option<f64> {
    let sum = |f: &dyn Fn(&GpuView) -> Option<f64>| -> Option<f64> {
        let values: Vec<f64> = block.gpus.iter().filter_map(|g| f(g)).collect();
        (!values.is_empty()).then(|| values.iter().sum())
    };
    match sort {
        SortKey::Name => None,
        SortKey::Allocation => {
            let total: u64 = block
                .gpus
                .iter()
                .map(|g| u64::from(g.total_memory_mib))
                .sum();
            let allocated: u64 = block.gpus.iter().map(|g| u64::from(allocated_mib(g))).sum();
            Some(allocated as f64 / total.max(1) as f64)
        }
        SortKey::Utilization => {
            let values: Vec<f64> = block
                .gpus
                .iter()
                .filter_map(|g| g.usage?.utilization_percent.map(|r| r.average))
                .collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        }
        SortKey::Unused => sum(&|g: &GpuView| {
            let used = g.usage?.memory_used_mib?.average;
            Some((f64::from(allocated_mib(g)) - used).max(0.0))
        }),
        SortKey::Free => Some(
            block
                .gpus
                .iter()
                .map(|g| f64::from(g.total_memory_mib - allocated_mib(g)))
                .sum(),
        ),
    }
}

/// Orders blocks by `sort`, highest first and no data last, ties and `Name` by instance ID.
fn order(blocks: &mut [Block<'_>], sort: SortKey) {
    let by_name =
        |a: &Block<'_>, b: &Block<'_>| a.instance.ec2_instance_id.cmp(&b.instance.ec2_instance_id);
    if sort == SortKey::Name {
        blocks.sort_by(by_name);
        return;
    }
    let mut keyed: Vec<(Option<f64>, usize)> = blocks
        .iter()
        .enumerate()
        .map(|(n, b)| (value(b, sort), n))
        .collect();
    keyed.sort_by(|(va, a), (vb, b)| {
        let by_value = match (va, vb) {
            (Some(x), Some(y)) => y.partial_cmp(x).unwrap_or(Ordering::Equal),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        by_value.then_with(|| by_name(&blocks[*a], &blocks[*b]))
    });
    let order: Vec<usize> = keyed.into_iter().map(|(_, n)| n).collect();
    apply_order(blocks, &order);
}

/// Puts `blocks[order[0]]` first, and so on.
fn apply_order<T>(items: &mut [T], order: &[usize]) {
    let mut position: Vec<usize> = vec![0; order.len()];
    for (to, from) in order.iter().enumerate() {
        position[*from] = to;
    }
    for start in 0..items.len() {
        while position[start] != start {
            let target = position[start];
            items.swap(start, target);
            position.swap(start, target);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::fleet_view::fixture::{container, snapshot};
    use crate::model::{GpuUsage, Reading};

    fn ids(group: &Group<'_>) -> Vec<String> {
        group
            .blocks
            .iter()
            .map(|b| {
                format!(
                    "{}:{}",
                    b.instance.ec2_instance_id,
                    b.gpus
                        .iter()
                        .map(|g| g.index.to_string())
                        .collect::<Vec<_>>()
                        .join("")
                )
            })
            .collect()
    }

    #[test]
    fn every_gpu_is_in_exactly_one_block_under_every_grouping() {
        let fleet = snapshot();
        let gpus = fleet.gpu_count();
        for grouping in Grouping::ALL {
            for sort in SortKey::ALL {
                let groups = pack(&fleet, grouping, sort, 90);
                let packed: usize = groups
                    .iter()
                    .flat_map(|g| g.blocks.iter())
                    .map(|b| b.gpus.len())
                    .sum();
                assert_eq!(packed, gpus, "{grouping:?} {sort:?}");
                let totals: u32 = groups.iter().map(|g| g.totals.gpus).sum();
                assert_eq!(totals as usize, gpus);
            }
        }
    }

    #[test]
    fn clusters_are_groups_and_teams_split_an_instance() {
        let fleet = snapshot();
        let by_cluster = pack(&fleet, Grouping::Cluster, SortKey::Name, 90);
        let names: Vec<&str> = by_cluster.iter().map(|g| g.key.as_str()).collect();
        let clusters: Vec<&str> = fleet.clusters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, clusters);
        let by_team = pack(&fleet, Grouping::Team, SortKey::Name, 90);
        let keys: Vec<&str> = by_team.iter().map(|g| g.key.as_str()).collect();
        assert_eq!(
            keys.last(),
            Some(&""),
            "GPUs of no team come last: {keys:?}"
        );
        let search = by_team.iter().find(|g| g.key == "search").unwrap();
        assert!(
            ids(search).iter().any(|id| id.starts_with("i-1:")),
            "{:?}",
            ids(search)
        );
    }

    #[test]
    fn a_gpu_counts_for_the_team_holding_most_of_its_memory() {
        let mut gpu = snapshot().clusters[0].instances[0].gpus[0].clone();
        gpu.containers = vec![
            container("a", "alpha", 4_000, 50),
            container("b", "beta", 3_000, 50),
            container("c", "beta", 3_000, 50),
        ];
        assert_eq!(gpu_team(&gpu), Some("beta"));
        gpu.containers.truncate(2);
        assert_eq!(gpu_team(&gpu), Some("alpha"));
        gpu.containers.clear();
        assert_eq!(gpu_team(&gpu), None);
    }

    #[test]
    fn blocks_sort_highest_first_with_no_data_last() {
        let mut fleet = snapshot();
        // Utilisation for i-1 only.
        for gpu in &mut fleet.clusters[0].instances[0].gpus {
            gpu.usage = Some(GpuUsage {
                utilization_percent: Some(Reading {
                    latest: 5.0,
                    average: 50.0,
                }),
                memory_used_mib: None,
            });
        }
        let prod = |sort| {
            let groups = pack(&fleet, Grouping::Cluster, sort, 90);
            ids(&groups[0])
        };
        let by_name = prod(SortKey::Name);
        let mut sorted = by_name.clone();
        sorted.sort();
        assert_eq!(by_name, sorted);
        assert!(prod(SortKey::Utilization)[0].starts_with("i-1:"));
        // Allocation: highest share of memory first.
        let groups = pack(&fleet, Grouping::Cluster, SortKey::Allocation, 90);
        let shares: Vec<f64> = groups[0]
            .blocks
            .iter()
            .map(|b| value(b, SortKey::Allocation).unwrap())
            .collect();
        assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
        let free: Vec<f64> = pack(&fleet, Grouping::Cluster, SortKey::Free, 90)[0]
            .blocks
            .iter()
            .map(|b| value(b, SortKey::Free).unwrap())
            .collect();
        assert!(free.windows(2).all(|w| w[0] >= w[1]), "{free:?}");
    }

    #[test]
    fn an_order_is_applied_in_place() {
        let mut items = vec!['a', 'b', 'c', 'd'];
        apply_order(&mut items, &[2, 0, 3, 1]);
        assert_eq!(items, vec!['c', 'a', 'd', 'b']);
    }
}
