//! Elastic capacity on the simulated clock: tasks that wait for a provider's capacity are
//! placed when it has room; providers launch instances for those that still wait (Managed
//! Instances: the most cost-effective type their requirements match; an Auto Scaling group
//! with managed scaling: its type, by the target, the step sizes and the warm-up, never past
//! `MaxSize`); Managed Instances with auto repair replace an instance whose MPS daemon is
//! IMPAIRED, retire idle instances and consolidate under-used ones after `scaleInAfter`; EC2
//! reclaims Spot instances. The inferences are in
//! [`crate::elastic`].

use std::collections::BTreeMap;

use chrono::Duration;
use serde_json::Value;

use crate::{
    capacity::{CapacityProvider, ProviderKind, StrategyItem},
    elastic::{
        self, Activity, ActivityKind, Cause, Launch, ASG_LAUNCH_SECONDS,
        DEFAULT_SCALE_IN_AFTER_SECONDS, MANAGED_LAUNCH_SECONDS, REPAIR_AFTER_SECONDS,
        SPOT_NOTICE_SECONDS,
    },
    instance_types::{self, InstanceType},
    model::{Cluster, Fleet, TaskStatus},
    placement::growth::{self, AsgScaling, Requirements, Shape},
};

/// How often, in simulated seconds, repairs and retirements are looked for.
const HOUSEKEEPING_SECONDS: i64 = 10;

impl Fleet {
    /// The instances `provider` is launching.
    fn in_flight(&self, provider: &str) -> u32 {
        self.elastic
            .launches
            .iter()
            .filter(|l| l.provider == provider)
            .count() as u32
    }

    /// One step of elastic capacity.
    pub(super) fn run_capacity(&mut self) {
        self.register_launches();
        let keys: Vec<String> = self.clusters.keys().cloned().collect();
        for key in &keys {
            let waiting = self.waiting_tasks(key);
            if waiting.is_empty() {
                continue;
            }
            let mut still: Vec<String> = Vec::new();
            for arn in waiting {
                if !self.place_waiting(key, &arn) {
                    still.push(arn);
                }
            }
            self.scale_out(key, &still);
        }
        if self.now.timestamp() % HOUSEKEEPING_SECONDS == 0 {
            for key in &keys {
                self.repair_impaired(key);
                self.retire_idle(key);
                self.consolidate_under_used(key);
                self.scale_in_groups(key);
                self.finish_reclaims(key);
                self.finish_retirements(key);
            }
        }
    }

    /// The live tasks of `key` that wait for capacity, oldest first.
    fn waiting_tasks(&self, key: &str) -> Vec<String> {
        let Some(cluster) = self.clusters.get(key) else {
            return Vec::new();
        };
        let mut waiting: Vec<(chrono::DateTime<chrono::Utc>, String)> = cluster
            .services
            .values()
            .filter(|s| !s.capacity_provider_strategy.is_empty())
            .flat_map(|s| s.tasks.iter())
            .filter_map(|arn| cluster.tasks.get(arn))
            .filter(|t| t.instance_arn.is_empty() && t.desired_status == TaskStatus::Running)
            .map(|t| (t.created_at, t.arn.clone()))
            .collect();
        waiting.sort();
        waiting.into_iter().map(|(_, arn)| arn).collect()
    }

    /// Which provider of `service`'s strategy its next task goes to: the provider with a
    /// `base` until it runs that many, then the one furthest below its share by weight.
    pub(super) fn provider_for_next_task(&self, key: &str, service: &str) -> Option<String> {
        let cluster = self.clusters.get(key)?;
        let svc = cluster.services.get(service)?;
        let strategy = &svc.capacity_provider_strategy;
        let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
        for task in svc.tasks.iter().filter_map(|arn| cluster.tasks.get(arn)) {
            if let Some(provider) = task.capacity_provider.as_deref() {
                *counts.entry(provider).or_default() += 1;
            }
        }
        let count = |name: &str| counts.get(name).copied().unwrap_or(0);
        if let Some(based) = strategy
            .iter()
            .find(|item| item.base > count(&item.capacity_provider))
        {
            return Some(based.capacity_provider.clone());
        }
        // Beyond the base, the tasks are shared by weight: the provider whose tasks beyond its
        // base are furthest below its weight's share is next (count / weight, compared
        // without division).
        let beyond = |item: &StrategyItem| {
            u64::from(count(&item.capacity_provider).saturating_sub(item.base))
        };
        let weighted = strategy
            .iter()
            .filter(|item| item.weight > 0)
            .min_by(|a, b| {
                (beyond(a) * u64::from(b.weight)).cmp(&(beyond(b) * u64::from(a.weight)))
            });
        weighted
            .or(strategy.first())
            .map(|item| item.capacity_provider.clone())
    }

    /// Instances whose launch is done register with their cluster.
    fn register_launches(&mut self) {
        let now = self.now;
        let (due, later): (Vec<Launch>, Vec<Launch>) = std::mem::take(&mut self.elastic.launches)
            .into_iter()
            .partition(|l| l.ready_at <= now);
        self.elastic.launches = later;
        for launch in due {
            let zone = self.next_zone(&launch.cluster, &launch.provider);
            let mut instance =
                self.instance_of_type(&launch.cluster, launch.instance_type, &zone, now);
            instance.capacity_provider = Some(launch.provider.clone());
            instance.spot = self
                .capacity_provider(&launch.provider)
                .is_some_and(launches_spot);
            let ec2_id = instance.ec2_instance_id.clone();
            self.add_instance(&launch.cluster, instance);
            let description = match &launch.cause {
                Cause::Demand => format!("{ec2_id} launched for tasks waiting for capacity"),
                Cause::Repair(old) => format!("{ec2_id} launched to replace {old}"),
            };
            self.elastic.record(
                &launch.provider,
                Activity {
                    at: now,
                    kind: ActivityKind::Launched,
                    cluster: launch.cluster.clone(),
                    instance_type: launch.instance_type.name.to_string(),
                    ec2_instance_id: Some(ec2_id),
                    description,
                },
            );
        }
    }

    /// The Availability Zone for a provider's next instance: the one where it has the fewest.
    fn next_zone(&self, key: &str, provider: &str) -> String {
        let mut counts: BTreeMap<String, u32> = ["us-east-1a", "us-east-1b", "us-east-1c"]
            .iter()
            .map(|z| (z.replace("us-east-1", &self.region), 0))
            .collect();
        if let Some(cluster) = self.clusters.get(key) {
            for instance in &cluster.instances {
                if instance.capacity_provider.as_deref() == Some(provider) {
                    *counts
                        .entry(instance.availability_zone.clone())
                        .or_default() += 1;
                }
            }
        }
        counts
            .into_iter()
            .min_by_key(|(zone, n)| (*n, zone.clone()))
            .map(|(zone, _)| zone)
            .unwrap_or_default()
    }

    /// What the waiting tasks `arns` of `key` need, per provider.
    fn shapes_by_provider(&self, key: &str, arns: &[String]) -> BTreeMap<String, Vec<Shape>> {
        let mut by_provider: BTreeMap<String, Vec<Shape>> = BTreeMap::new();
        let Some(cluster) = self.clusters.get(key) else {
            return by_provider;
        };
        for task in arns.iter().filter_map(|arn| cluster.tasks.get(arn)) {
            let Some(provider) = task.capacity_provider.clone() else {
                continue;
            };
            let needs = self
                .task_definition(&task.task_definition_arn)
                .map(|td| {
                    super::scheduling::needs_and_strategies(cluster, &td.needs, &task.group).0
                })
                .unwrap_or_else(|| task.needs.clone());
            by_provider.entry(provider).or_default().push(Shape {
                gpu: task.gpu.clone(),
                needs,
                group: task.group.clone(),
            });
        }
        by_provider
    }

    /// Launches what each provider needs for the tasks `still` waiting in `key`, beyond the
    /// instances already on their way.
    fn scale_out(&mut self, key: &str, still: &[String]) {
        for (name, shapes) in self.shapes_by_provider(key, still) {
            let Some(provider) = self.capacity_provider(&name).filter(|p| p.active).cloned() else {
                continue;
            };
            let shapes = self.beyond_launches(key, &name, shapes);
            if shapes.is_empty() {
                continue;
            }
            let plan = match provider.kind {
                ProviderKind::ManagedInstances => managed_plan(&provider, &shapes),
                ProviderKind::AutoScalingGroup => self.asg_plan(key, &provider, &shapes),
            };
            let Some((kind, count, takes)) = plan else {
                continue;
            };
            self.launch(key, &name, kind, count, takes, shapes.len());
        }
    }

    /// The waiting tasks the instances on their way for `provider` in `key` cannot take.
    fn beyond_launches(&self, key: &str, provider: &str, mut shapes: Vec<Shape>) -> Vec<Shape> {
        let mut in_flight: BTreeMap<&str, (&InstanceType, u32)> = BTreeMap::new();
        for launch in &self.elastic.launches {
            if launch.cluster == key && launch.provider == provider {
                in_flight
                    .entry(launch.instance_type.name)
                    .or_insert((launch.instance_type, 0))
                    .1 += 1;
            }
        }
        for (kind, count) in in_flight.into_values() {
            shapes = growth::leftover(&elastic::facts(kind), count, &shapes);
        }
        shapes
    }

    /// What an Auto Scaling group provider launches now: its type, the count its scaling
    /// allows, and how long the launch takes; `None` without managed scaling, during the last
    /// scale-out's warm-up, or at `MaxSize`.
    fn asg_plan(
        &mut self,
        key: &str,
        provider: &CapacityProvider,
        shapes: &[Shape],
    ) -> Option<(&'static InstanceType, u32, i64)> {
        let scaling = provider.settings.get("managedScaling")?;
        if scaling.get("status").and_then(Value::as_str) != Some("ENABLED") {
            return None;
        }
        let number = |k: &str, default: u64| scaling_value(scaling, k, default);
        let warmup = i64::from(number("instanceWarmupPeriod", 300));
        let group_ref = provider.settings.get("autoScalingGroupArn")?.as_str()?;
        let group = self.elastic.group_of(group_ref)?.clone();
        if group
            .last_scale_out
            .is_some_and(|at| self.now < at + Duration::seconds(warmup))
        {
            return None;
        }
        let kind = instance_types::find(group.instance_types.first()?)?;
        let needed = growth::instances_needed(&elastic::facts(kind), 0, shapes)?;
        let in_flight = self.in_flight(&provider.name);
        let busy = self
            .clusters
            .get(key)
            .map_or(0, |c| busy_instances(c, &provider.name))
            + in_flight;
        let step = growth::asg_step(
            &AsgScaling {
                target: number("targetCapacity", 100),
                min_step: number("minimumScalingStepSize", 1),
                max_step: number("maximumScalingStepSize", 10_000),
                max_size: group.max_size,
            },
            group.desired_capacity,
            busy,
            needed,
        );
        if step.launch == 0 {
            return None;
        }
        if let Some(group) = self.elastic.groups.get_mut(&group.name) {
            group.desired_capacity += step.launch;
            group.last_scale_out = Some(self.now);
        }
        Some((kind, step.launch, ASG_LAUNCH_SECONDS))
    }

    /// Starts `count` launches of `kind` for `provider` in `key`, ready in `takes` seconds.
    fn launch(
        &mut self,
        key: &str,
        provider: &str,
        kind: &'static InstanceType,
        count: u32,
        takes: i64,
        waiting: usize,
    ) {
        let ready_at = self.now + Duration::seconds(takes);
        for _ in 0..count {
            self.elastic.launches.push(Launch {
                provider: provider.to_string(),
                cluster: key.to_string(),
                instance_type: kind,
                ready_at,
                cause: Cause::Demand,
            });
        }
        self.elastic.record(
            provider,
            Activity {
                at: self.now,
                kind: ActivityKind::Launching,
                cluster: key.to_string(),
                instance_type: kind.name.to_string(),
                ec2_instance_id: None,
                description: format!(
                    "launching {count} × {} for {waiting} task(s) waiting for capacity",
                    kind.name
                ),
            },
        );
    }

    /// Managed Instances with auto repair on: an instance whose MPS daemon has been IMPAIRED
    /// for [`REPAIR_AFTER_SECONDS`] is drained and a replacement of its type launched.
    fn repair_impaired(&mut self, key: &str) {
        let now = self.now;
        let repairing: Vec<(String, String, String, String)> = {
            let Some(cluster) = self.clusters.get(key) else {
                return;
            };
            cluster
                .instances
                .iter()
                .filter(|i| i.room.status == "ACTIVE")
                .filter(|i| {
                    i.mps_impaired
                        .is_some_and(|at| now >= at + Duration::seconds(REPAIR_AFTER_SECONDS))
                })
                .filter_map(|i| {
                    let provider = self.capacity_provider(i.capacity_provider.as_deref()?)?;
                    auto_repair(provider).then(|| {
                        (
                            i.arn.clone(),
                            provider.name.clone(),
                            i.instance_type.clone(),
                            i.ec2_instance_id.clone(),
                        )
                    })
                })
                .collect()
        };
        for (arn, provider, instance_type, ec2_id) in repairing {
            let Some(kind) = instance_types::find(&instance_type) else {
                continue;
            };
            self.set_leaving(key, &arn, "DRAINING");
            self.elastic.launches.push(Launch {
                provider: provider.clone(),
                cluster: key.to_string(),
                instance_type: kind,
                ready_at: now + Duration::seconds(MANAGED_LAUNCH_SECONDS),
                cause: Cause::Repair(ec2_id.clone()),
            });
            self.elastic.record(
                &provider,
                Activity {
                    at: now,
                    kind: ActivityKind::Repairing,
                    cluster: key.to_string(),
                    instance_type,
                    ec2_instance_id: Some(ec2_id.clone()),
                    description: format!(
                        "{ec2_id}: MPS daemon IMPAIRED; draining it and launching a replacement"
                    ),
                },
            );
        }
    }
}

/// What a Managed Instances provider launches for `shapes`: the most cost-effective type its
/// requirements match among those that can share GPUs, and how many.
fn managed_plan(
    provider: &CapacityProvider,
    shapes: &[Shape],
) -> Option<(&'static InstanceType, u32, i64)> {
    let requirements = provider
        .settings
        .get("instanceLaunchTemplate")
        .and_then(|t| t.get("instanceRequirements"))
        .map(Requirements::from_json)
        .unwrap_or_default();
    let candidates: Vec<_> = instance_types::ALL
        .iter()
        .map(elastic::facts)
        .filter(|facts| requirements.check(facts).is_ok())
        .collect();
    let (chosen, count) = growth::cheapest(&candidates, shapes)?;
    let kind = instance_types::find(&chosen.name)?;
    Some((kind, count, MANAGED_LAUNCH_SECONDS))
}

/// Whether a provider replaces impaired instances: Managed Instances with auto repair on.
fn auto_repair(provider: &CapacityProvider) -> bool {
    provider.kind == ProviderKind::ManagedInstances
        && provider
            .settings
            .get("autoRepairConfiguration")
            .and_then(|r| r.get("actionsStatus"))
            .and_then(Value::as_str)
            == Some("ENABLED")
}

/// A managed scaling setting (`targetCapacity`, `maximumScalingStepSize` …), or `default`.
fn scaling_value(scaling: &Value, key: &str, default: u64) -> u32 {
    scaling.get(key).and_then(Value::as_u64).unwrap_or(default) as u32
}

/// The provider's instances in the cluster that run or start a task.
fn busy_instances(cluster: &Cluster, provider: &str) -> u32 {
    cluster
        .instances
        .iter()
        .filter(|i| i.capacity_provider.as_deref() == Some(provider))
        .filter(|i| i.running_tasks + i.pending_tasks > 0)
        .count() as u32
}

/// The services with tasks on instances that are leaving have work to do.
pub fn unsettle_services_on(cluster: &mut Cluster, leaving: &[String]) {
    let services: std::collections::BTreeSet<String> = cluster
        .tasks
        .values()
        .filter(|t| t.is_live() && leaving.contains(&t.instance_arn))
        .filter_map(|t| t.group.strip_prefix("service:").map(str::to_string))
        .collect();
    for name in services {
        if let Some(service) = cluster.services.get_mut(&name) {
            service.steady = false;
        }
    }
}

mod leaving;

use leaving::launches_spot;

#[cfg(test)]
mod tests;
