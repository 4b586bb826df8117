//! Instances leaving a provider: repaired instances and retired ones (set DRAINING or
//! DEREGISTERING, then terminated once their tasks are gone), idle Managed Instances retired
//! and under-used ones consolidated after `scaleInAfter`, and Spot instances EC2 reclaims.

use super::*;
use crate::{engine::scheduling, placement};

impl Fleet {
    /// Sets a provider's instance DRAINING (a repair) or DEREGISTERING (an idle retirement);
    /// the services with tasks there move them.
    pub(super) fn set_leaving(&mut self, key: &str, arn: &str, status: &str) {
        let now = self.now;
        let Some(cluster) = self.clusters.get_mut(key) else {
            return;
        };
        if let Some(instance) = cluster.instance_mut(arn) {
            instance.room.status = status.to_string();
            instance.version += 1;
        }
        unsettle_services_on(cluster, &[arn.to_string()]);
        self.elastic.retiring.insert(arn.to_string(), now);
        self.elastic.idle_since.remove(arn);
        self.elastic.under_used_since.remove(arn);
    }

    /// EC2 reclaims the Spot instance `instance_arn` of `key`: ECS drains it on the notice, and
    /// EC2 terminates it [`SPOT_NOTICE_SECONDS`] later. `false` when it is not a Spot instance
    /// of the cluster, or is already being reclaimed.
    pub fn interrupt_spot(&mut self, key: &str, instance_arn: &str) -> bool {
        let now = self.now;
        let Some(instance) = self
            .clusters
            .get(key)
            .and_then(|c| c.instance(instance_arn))
            .filter(|i| i.spot)
        else {
            return false;
        };
        if self.elastic.reclaimed.contains_key(instance_arn) {
            return false;
        }
        let (provider, instance_type, ec2_id) = (
            instance.capacity_provider.clone(),
            instance.instance_type.clone(),
            instance.ec2_instance_id.clone(),
        );
        self.elastic.reclaimed.insert(
            instance_arn.to_string(),
            now + Duration::seconds(SPOT_NOTICE_SECONDS),
        );
        self.set_leaving(key, instance_arn, "DRAINING");
        if let Some(provider) = provider {
            self.elastic.record(
                &provider,
                Activity {
                    at: now,
                    kind: ActivityKind::Interrupted,
                    cluster: key.to_string(),
                    instance_type,
                    ec2_instance_id: Some(ec2_id.clone()),
                    description: format!(
                        "{ec2_id}: Spot interruption notice; draining it before EC2 terminates it in {SPOT_NOTICE_SECONDS} s"
                    ),
                },
            );
        }
        true
    }

    /// Spot instances whose notice has run out: EC2 terminates them, the tasks still there
    /// stop, and the instances leave the cluster.
    pub(super) fn finish_reclaims(&mut self, key: &str) {
        let now = self.now;
        let due: Vec<(String, String)> = {
            let Some(cluster) = self.clusters.get(key) else {
                return;
            };
            self.elastic
                .reclaimed
                .iter()
                .filter(|(_, at)| **at <= now)
                .filter_map(|(arn, _)| cluster.instance(arn))
                .map(|i| (i.arn.clone(), i.ec2_instance_id.clone()))
                .collect()
        };
        for (arn, ec2_id) in due {
            let tasks: Vec<String> = self.clusters[key]
                .tasks
                .values()
                .filter(|t| t.is_live() && t.instance_arn == arn)
                .map(|t| t.arn.clone())
                .collect();
            let reason = format!("Host EC2 (instance {ec2_id}) terminated.");
            for task in &tasks {
                self.stop_task(key, task, &reason, "SpotInterruption");
            }
            self.elastic.reclaimed.remove(&arn);
            self.elastic.retiring.remove(&arn);
            let provider = self.clusters[key].instance(&arn).and_then(|i| {
                i.capacity_provider
                    .clone()
                    .zip(Some(i.instance_type.clone()))
            });
            self.deregister_instance(key, &arn);
            if let Some((provider, instance_type)) = provider {
                self.elastic.record(
                    &provider,
                    Activity {
                        at: now,
                        kind: ActivityKind::Retired,
                        cluster: key.to_string(),
                        instance_type,
                        ec2_instance_id: Some(ec2_id.clone()),
                        description: format!(
                            "{ec2_id} terminated by EC2 (Spot interruption); {} task(s) stopped there",
                            tasks.len()
                        ),
                    },
                );
            }
        }
    }

    /// Managed Instances with infrastructure optimization: an under-used instance (less than
    /// [`elastic::UNDER_USED_PERCENT`] of its GPU memory allocated) whose tasks all fit on the
    /// provider's other instances for `scaleInAfter` seconds is drained and terminated; one
    /// instance per provider at a time, the least allocated first.
    pub(super) fn consolidate_under_used(&mut self, key: &str) {
        let now = self.now;
        let chosen = self.consolidation_choices(key);
        let Some(cluster) = self.clusters.get(key) else {
            return;
        };
        let keep: std::collections::HashSet<&String> = chosen.values().map(|(a, _)| a).collect();
        let in_cluster: std::collections::HashSet<&str> =
            cluster.instances.iter().map(|i| i.arn.as_str()).collect();
        self.elastic
            .under_used_since
            .retain(|arn, _| keep.contains(arn) || !in_cluster.contains(arn.as_str()));
        for (provider, (arn, after)) in chosen {
            let since = *self
                .elastic
                .under_used_since
                .entry(arn.clone())
                .or_insert(now);
            if now < since + Duration::seconds(after) {
                continue;
            }
            let Some((instance_type, ec2_id)) = self.clusters[key]
                .instance(&arn)
                .map(|i| (i.instance_type.clone(), i.ec2_instance_id.clone()))
            else {
                continue;
            };
            self.set_leaving(key, &arn, "DRAINING");
            self.elastic.record(
                &provider,
                Activity {
                    at: now,
                    kind: ActivityKind::Consolidating,
                    cluster: key.to_string(),
                    instance_type,
                    ec2_instance_id: Some(ec2_id.clone()),
                    description: format!(
                        "{ec2_id} under-used past scaleInAfter and its tasks fit on the provider's other instances; draining it"
                    ),
                },
            );
        }
    }

    /// Per provider, the under-used instance to consolidate (with the provider's
    /// `scaleInAfter`): the least allocated whose tasks all fit elsewhere, among the first
    /// few looked at.
    fn consolidation_choices(&self, key: &str) -> BTreeMap<String, (String, i64)> {
        /// Candidates looked at per provider and pass, at most.
        const LOOKED_AT: usize = 3;
        let mut chosen: BTreeMap<String, (String, i64)> = BTreeMap::new();
        let mut looked: BTreeMap<String, usize> = BTreeMap::new();
        for (provider, _, arn, after) in self.under_used(key) {
            if chosen.contains_key(&provider) {
                continue;
            }
            let count = looked.entry(provider.clone()).or_default();
            if *count >= LOOKED_AT {
                continue;
            }
            *count += 1;
            if self.tasks_fit_elsewhere(key, &arn) {
                chosen.insert(provider, (arn, after));
            }
        }
        chosen
    }

    /// The busy instances of `key`'s Managed Instances providers that optimize, with less
    /// than [`elastic::UNDER_USED_PERCENT`] of their GPU memory allocated, least allocated
    /// first: (provider, allocated per mille, instance, scaleInAfter). A provider with an
    /// instance already leaving has none for now.
    fn under_used(&self, key: &str) -> Vec<(String, u64, String, i64)> {
        let Some(cluster) = self.clusters.get(key) else {
            return Vec::new();
        };
        let leaving: std::collections::BTreeSet<String> = cluster
            .instances
            .iter()
            .filter(|i| self.elastic.retiring.contains_key(&i.arn))
            .filter_map(|i| i.capacity_provider.clone())
            .collect();
        let mut candidates: Vec<(String, u64, String, i64)> = cluster
            .instances
            .iter()
            .filter(|i| i.room.status == "ACTIVE" && i.running_tasks + i.pending_tasks > 0)
            .filter_map(|i| {
                let provider = i
                    .capacity_provider
                    .as_deref()
                    .and_then(|p| self.capacity_provider(p))
                    .filter(|p| p.kind == ProviderKind::ManagedInstances)
                    .filter(|p| !leaving.contains(&p.name))?;
                let after = scale_in_after(provider)?;
                let total: u64 = i.gpus.iter().map(|g| u64::from(g.total_memory_mib)).sum();
                let free: u64 = i
                    .gpus
                    .iter()
                    .map(|g| u64::from(g.remaining_memory_mib))
                    .sum();
                let used = (total.saturating_sub(free) * 1000).checked_div(total)?;
                (used < elastic::UNDER_USED_PERCENT * 10)
                    .then(|| (provider.name.clone(), used, i.arn.clone(), after))
            })
            .collect();
        candidates.sort();
        candidates
    }

    /// Managed Instances with infrastructure optimization: an instance with no task for
    /// `scaleInAfter` seconds is set DEREGISTERING, to be terminated.
    pub(super) fn retire_idle(&mut self, key: &str) {
        let now = self.now;
        let Some(cluster) = self.clusters.get(key) else {
            return;
        };
        // (instance, provider, its scaleInAfter, idle, type, EC2 ID), for providers that retire
        // idle instances at all.
        type Seen = (String, String, i64, bool, String, String);
        let seen: Vec<Seen> = cluster
            .instances
            .iter()
            .filter_map(|instance| {
                let provider = instance
                    .capacity_provider
                    .as_deref()
                    .and_then(|p| self.capacity_provider(p))
                    .filter(|p| p.kind == ProviderKind::ManagedInstances)?;
                Some((
                    instance.arn.clone(),
                    provider.name.clone(),
                    scale_in_after(provider)?,
                    instance.running_tasks + instance.pending_tasks == 0
                        && instance.room.status == "ACTIVE",
                    instance.instance_type.clone(),
                    instance.ec2_instance_id.clone(),
                ))
            })
            .collect();
        let mut retire = Vec::new();
        for (arn, provider, after, idle, instance_type, ec2_id) in seen {
            if !idle {
                self.elastic.idle_since.remove(&arn);
                continue;
            }
            let since = *self.elastic.idle_since.entry(arn.clone()).or_insert(now);
            if now >= since + Duration::seconds(after) {
                retire.push((arn, provider, instance_type, ec2_id));
            }
        }
        for (arn, provider, instance_type, ec2_id) in retire {
            self.set_leaving(key, &arn, "DEREGISTERING");
            self.elastic.record(
                &provider,
                Activity {
                    at: now,
                    kind: ActivityKind::Retiring,
                    cluster: key.to_string(),
                    instance_type,
                    ec2_instance_id: Some(ec2_id.clone()),
                    description: format!("{ec2_id} idle past scaleInAfter; retiring it"),
                },
            );
        }
    }

    /// Instances being repaired or retired that no longer run a task leave the cluster, and
    /// their EC2 instances are terminated.
    pub(super) fn finish_retirements(&mut self, key: &str) {
        let now = self.now;
        let done: Vec<(String, Option<String>, String, String)> = {
            let Some(cluster) = self.clusters.get(key) else {
                return;
            };
            self.elastic
                .retiring
                .keys()
                .filter_map(|arn| cluster.instance(arn))
                .filter(|i| i.running_tasks + i.pending_tasks == 0)
                .map(|i| {
                    (
                        i.arn.clone(),
                        i.capacity_provider.clone(),
                        i.instance_type.clone(),
                        i.ec2_instance_id.clone(),
                    )
                })
                .collect()
        };
        for (arn, provider, instance_type, ec2_id) in done {
            self.elastic.retiring.remove(&arn);
            self.deregister_instance(key, &arn);
            if let Some(provider) = provider {
                self.elastic.record(
                    &provider,
                    Activity {
                        at: now,
                        kind: ActivityKind::Retired,
                        cluster: key.to_string(),
                        instance_type,
                        ec2_instance_id: Some(ec2_id.clone()),
                        description: format!("{ec2_id} deregistered and terminated"),
                    },
                );
            }
        }
    }

    /// Whether every live task on `instance_arn` of `key` could be placed now on the cluster's
    /// other instances (each on its own provider's), one after another, with the rules a new
    /// task is placed by. `false` for an instance with no task, or with a task no service owns
    /// (ECS does not move a standalone task).
    fn tasks_fit_elsewhere(&self, key: &str, instance_arn: &str) -> bool {
        let Some(cluster) = self.clusters.get(key) else {
            return false;
        };
        let tasks: Vec<&crate::model::Task> = cluster
            .tasks
            .values()
            .filter(|t| t.is_live() && t.instance_arn == instance_arn)
            .collect();
        if tasks.is_empty() || tasks.iter().any(|t| !t.group.starts_with("service:")) {
            return false;
        }
        let mut sim = cluster.clone();
        match sim.instance_mut(instance_arn) {
            Some(instance) => instance.room.status = "DRAINING".into(),
            None => return false,
        }
        for task in tasks {
            let Some(td) = self.task_definition(&task.task_definition_arn) else {
                return false;
            };
            let (needs, strategies) =
                scheduling::needs_and_strategies(&sim, &td.needs, &task.group);
            let provider = task.capacity_provider.as_deref();
            let Ok((target, assignment)) = scheduling::choose_instance(
                &sim,
                &td.gpu,
                &needs,
                &task.group,
                &strategies,
                provider,
            ) else {
                return false;
            };
            if let Some(instance) = sim.instance_mut(&target) {
                placement::allocate(&mut instance.gpus, &td.gpu, &assignment);
                placement::resources::take(&mut instance.room, &needs);
            }
        }
        true
    }

    /// Auto Scaling groups with managed scaling that have had more instances than their
    /// target needs for [`elastic::SCALE_IN_AFTER_SECONDS`] scale in: their idle instances
    /// are set DEREGISTERING and terminated, at most `maximumScalingStepSize` at a time.
    pub(super) fn scale_in_groups(&mut self, key: &str) {
        let now = self.now;
        for shrink in self.group_shrinks(key) {
            let Some(group) = self.elastic.groups.get_mut(&shrink.group) else {
                continue;
            };
            if shrink.step == 0 {
                group.above_target_since = None;
                continue;
            }
            let since = *group.above_target_since.get_or_insert(now);
            if now < since + Duration::seconds(elastic::SCALE_IN_AFTER_SECONDS)
                || shrink.idle.is_empty()
            {
                continue;
            }
            let removed: Vec<Leaver> = shrink.idle.into_iter().take(shrink.step as usize).collect();
            group.desired_capacity -= removed.len() as u32;
            group.above_target_since = None;
            for (arn, instance_type, ec2_id) in removed {
                self.set_leaving(key, &arn, "DEREGISTERING");
                self.elastic.record(
                    &shrink.provider,
                    Activity {
                        at: now,
                        kind: ActivityKind::Retiring,
                        cluster: key.to_string(),
                        instance_type,
                        ec2_instance_id: Some(ec2_id.clone()),
                        description: format!(
                            "{ec2_id}: the group {} scales in (more instances than its target needs); terminating it",
                            shrink.group
                        ),
                    },
                );
            }
        }
    }

    /// For each Auto Scaling group provider of `key` with managed scaling: how many instances
    /// it has beyond what its target needs (at most one step), and its idle instances.
    fn group_shrinks(&self, key: &str) -> Vec<Shrink> {
        let Some(cluster) = self.clusters.get(key) else {
            return Vec::new();
        };
        let mut shrinks = Vec::new();
        for provider in cluster
            .capacity_providers
            .iter()
            .filter_map(|name| self.capacity_provider(name))
        {
            let Some(scaling) = provider
                .settings
                .get("managedScaling")
                .filter(|s| s.get("status").and_then(Value::as_str) == Some("ENABLED"))
            else {
                continue;
            };
            let Some(group) = provider
                .settings
                .get("autoScalingGroupArn")
                .and_then(Value::as_str)
                .and_then(|g| self.elastic.group_of(g))
            else {
                continue;
            };
            let number = |k: &str, default: u64| scaling_value(scaling, k, default);
            let busy = busy_instances(cluster, &provider.name) + self.in_flight(&provider.name);
            let target = number("targetCapacity", 100).clamp(1, 100);
            let wanted = (busy * 100).div_ceil(target).max(group.min_size);
            let step = group
                .desired_capacity
                .saturating_sub(wanted)
                .min(number("maximumScalingStepSize", 10_000).max(1));
            let idle = cluster
                .instances
                .iter()
                .filter(|i| i.capacity_provider.as_deref() == Some(provider.name.as_str()))
                .filter(|i| i.room.status == "ACTIVE" && i.running_tasks + i.pending_tasks == 0)
                .map(|i| {
                    (
                        i.arn.clone(),
                        i.instance_type.clone(),
                        i.ec2_instance_id.clone(),
                    )
                })
                .collect();
            shrinks.push(Shrink {
                group: group.name.clone(),
                provider: provider.name.clone(),
                step,
                idle,
            });
        }
        shrinks
    }
}

/// An instance that may leave: its container instance ARN, type and EC2 ID.
type Leaver = (String, String, String);

/// An Auto Scaling group's scale-in, as far as its target allows.
struct Shrink {
    group: String,
    provider: String,
    /// Instances beyond what the target needs, at most one step.
    step: u32,
    idle: Vec<Leaver>,
}

/// Whether a provider launches Spot instances: Managed Instances with `capacityOptionType`
/// `SPOT`.
pub(super) fn launches_spot(provider: &CapacityProvider) -> bool {
    provider.kind == ProviderKind::ManagedInstances
        && provider
            .settings
            .get("instanceLaunchTemplate")
            .and_then(|t| t.get("capacityOptionType"))
            .and_then(Value::as_str)
            == Some("SPOT")
}

/// A Managed Instances provider's `scaleInAfter` in seconds; `None` when it is `-1` (off).
fn scale_in_after(provider: &CapacityProvider) -> Option<i64> {
    let given = provider
        .settings
        .get("infrastructureOptimization")
        .and_then(|o| o.get("scaleInAfter"))
        .and_then(Value::as_i64);
    match given {
        Some(-1) => None,
        Some(seconds) => Some(seconds.max(0)),
        None => Some(DEFAULT_SCALE_IN_AFTER_SECONDS),
    }
}

#[cfg(test)]
mod tests;
