//! Growth in the pre-check: what a service's capacity provider launches for the new tasks no
//! instance can take, as the emulator's providers do (the shared `placement::growth` rules):
//! Managed Instances the most cost-effective type their requirements match, an Auto Scaling
//! group with managed scaling its own type by its target, step sizes and warm-up, never past
//! `MaxSize`. A provider that cannot grow leaves the tasks in PROVISIONING, and the rollout
//! stalls there.

use std::collections::BTreeMap;

use placement::{
    growth::{self, AsgScaling, Shape, TypeFacts},
    resources::Room,
    GpuRequest, GpuSlot,
};
use serde::{Deserialize, Serialize};

use super::{Host, RolloutPlan};

/// How long a Managed Instances launch takes, from the decision to an ACTIVE instance: ECS does
/// not say; the console assumes three minutes.
pub const MANAGED_LAUNCH_SECONDS: u32 = 180;
/// How long an Auto Scaling group's instance takes to boot and register: EC2 does not say; the
/// console assumes 90 seconds. The group's next scale-out waits for `instanceWarmupPeriod`.
pub const ASG_LAUNCH_SECONDS: u32 = 90;

/// The capacity a service's provider can add, as the pre-check takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Growth {
    pub provider: String,
    pub source: GrowthSource,
}

/// How a provider grows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum GrowthSource {
    /// ECS Managed Instances: the most cost-effective of `candidates` (the types its
    /// requirements match that can share GPUs); `excluded` says why the others are not.
    ManagedInstances {
        candidates: Vec<TypeFacts>,
        excluded: Vec<String>,
        /// What the candidates' prices leave out, when they do (the Managed Instances charge).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fee_note: Option<String>,
    },
    /// An Auto Scaling group with managed scaling.
    AutoScaling {
        kind: TypeFacts,
        scaling: AsgScaling,
        /// Instances in the group now (its desired capacity).
        size: u32,
        warmup_seconds: u32,
    },
    /// A provider that does not launch for waiting tasks, and why.
    Fixed { why: String },
}

/// What the provider would launch for the rollout.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrowthPlan {
    pub provider: String,
    /// Instances by type, in the order launched.
    pub launches: Vec<(String, u32)>,
    /// Until the last launched instance is ACTIVE, from the first launch, in seconds.
    pub seconds: u32,
    /// The launched instances' on-demand price an hour, in US cents; `None` when a type is not
    /// priced.
    pub cents_per_hour: Option<u64>,
    /// What stopped further growth (MaxSize, no type that fits), when something did.
    pub limit: Option<String>,
    /// What the figures assume.
    pub assumed: Vec<String>,
}

impl GrowthPlan {
    /// Instances launched in all.
    pub fn instances(&self) -> u32 {
        self.launches.iter().map(|(_, n)| n).sum()
    }
}

/// The growth of one simulated rollout, as it goes.
pub(super) struct Grower<'a> {
    growth: &'a Growth,
    size: u32,
    plan: GrowthPlan,
    launched_once: bool,
}

impl<'a> Grower<'a> {
    pub(super) fn new(growth: &'a Growth) -> Grower<'a> {
        let size = match &growth.source {
            GrowthSource::AutoScaling { size, .. } => *size,
            _ => 0,
        };
        let assumed = assumed_of(growth);
        Grower {
            growth,
            size,
            plan: GrowthPlan {
                provider: growth.provider.clone(),
                assumed,
                cents_per_hour: Some(0),
                ..GrowthPlan::default()
            },
            launched_once: false,
        }
    }

    /// Whether any instance the provider may launch could take one new task.
    pub(super) fn could_host(&self, plan: &RolloutPlan) -> bool {
        let one = [shape(plan)];
        match &self.growth.source {
            GrowthSource::ManagedInstances { candidates, .. } => {
                growth::cheapest(candidates, &one).is_some()
            }
            GrowthSource::AutoScaling { kind, .. } => {
                growth::instances_needed(kind, 0, &one).is_some()
            }
            GrowthSource::Fixed { .. } => false,
        }
    }

    /// Launches what the provider would for `unplaced` new tasks, adding the instances to
    /// `hosts`; whether it launched any.
    pub(super) fn grow(
        &mut self,
        hosts: &mut Vec<Host>,
        plan: &RolloutPlan,
        unplaced: u32,
    ) -> bool {
        let shapes = vec![shape(plan); unplaced as usize];
        let launch = match &self.growth.source {
            GrowthSource::ManagedInstances {
                candidates,
                excluded,
                ..
            } => match growth::cheapest(candidates, &shapes) {
                Some((kind, count)) => Some((kind.clone(), count, MANAGED_LAUNCH_SECONDS)),
                None => {
                    self.plan.limit = Some(no_type_for(&plan.new, candidates, excluded));
                    None
                }
            },
            GrowthSource::AutoScaling {
                kind,
                scaling,
                warmup_seconds,
                ..
            } => {
                // The group's instances that run or start a task (the simulation's hosts are
                // the provider's instances): M counts them with those the waiting tasks need.
                let busy = hosts
                    .iter()
                    .filter(|h| h.service_tasks > 0 || h.gpus.iter().any(|g| g.container_count > 0))
                    .count() as u32;
                self.asg_launch(kind, scaling, *warmup_seconds, busy, &shapes)
            }
            GrowthSource::Fixed { why } => {
                self.plan.limit = Some(why.clone());
                None
            }
        };
        let Some((kind, count, takes)) = launch else {
            return false;
        };
        for n in 0..count {
            hosts.push(fresh_host(&kind, self.plan.instances() + n + 1));
        }
        self.plan.seconds += takes;
        self.launched_once = true;
        self.plan.cents_per_hour = match (self.plan.cents_per_hour, kind.usd_per_hour) {
            (Some(sum), Some(usd)) => Some(sum + (usd * 100.0 * f64::from(count)).round() as u64),
            _ => None,
        };
        match self.plan.launches.last_mut() {
            Some((name, n)) if *name == kind.name => *n += count,
            _ => self.plan.launches.push((kind.name.clone(), count)),
        }
        true
    }

    /// One scaling action of an Auto Scaling group: its type, count and time.
    fn asg_launch(
        &mut self,
        kind: &TypeFacts,
        scaling: &AsgScaling,
        warmup_seconds: u32,
        busy: u32,
        shapes: &[Shape],
    ) -> Option<(TypeFacts, u32, u32)> {
        let Some(needed) = growth::instances_needed(kind, 0, shapes) else {
            self.plan.limit = Some(format!(
                "a new task does not fit an empty {} (the group's type)",
                kind.name
            ));
            return None;
        };
        let step = growth::asg_step(scaling, self.size, busy, needed);
        if step.launch == 0 {
            self.plan.limit = Some(format!(
                "the Auto Scaling group is at its MaxSize of {}: {} new {} stay in PROVISIONING",
                scaling.max_size,
                shapes.len(),
                if shapes.len() == 1 { "task" } else { "tasks" }
            ));
            return None;
        }
        self.size += step.launch;
        let takes = if self.launched_once {
            warmup_seconds.max(ASG_LAUNCH_SECONDS)
        } else {
            ASG_LAUNCH_SECONDS
        };
        Some((kind.clone(), step.launch, takes))
    }

    /// What stopped growth, when something did.
    pub(super) fn limit(&self) -> Option<String> {
        self.plan.limit.clone()
    }

    pub(super) fn finish(self) -> Option<GrowthPlan> {
        (self.launched_once || self.plan.limit.is_some()).then_some(self.plan)
    }
}

/// What a provider's launch figures assume: the launch's time, and the price's gaps.
fn assumed_of(growth: &Growth) -> Vec<String> {
    match &growth.source {
        GrowthSource::ManagedInstances { fee_note, .. } => {
            let mut assumed = vec![format!(
                "a Managed Instances launch takes about {} minutes (ECS does not say; an assumption)",
                MANAGED_LAUNCH_SECONDS / 60
            )];
            assumed.extend(fee_note.clone());
            assumed
        }
        GrowthSource::AutoScaling { warmup_seconds, .. } => vec![format!(
            "an instance of the group boots and registers in about {ASG_LAUNCH_SECONDS} s (an assumption); the next scale-out waits for the {warmup_seconds} s warm-up"
        )],
        GrowthSource::Fixed { .. } => Vec::new(),
    }
}

/// One new task as the growth rules see it.
fn shape(plan: &RolloutPlan) -> Shape {
    Shape {
        gpu: plan.new.clone(),
        needs: plan.new_needs.clone(),
        group: format!("service:{}", plan.service),
    }
}

/// An instance the provider launched, empty, as the simulation takes it.
fn fresh_host(kind: &TypeFacts, n: u32) -> Host {
    let (cpu, memory) = kind.registered();
    let mut attributes = BTreeMap::new();
    attributes.insert("ecs.instance-type".to_string(), kind.name.clone());
    Host {
        id: format!("new {} #{n}", kind.name),
        instance_type: kind.name.clone(),
        mps_capable: kind.shares_gpus(),
        impaired: false,
        gpus: vec![GpuSlot::idle(kind.gpu_memory_mib); kind.gpus],
        room: Some(Room {
            status: "ACTIVE".into(),
            agent_connected: true,
            cpu_remaining: cpu,
            memory_remaining_mib: memory,
            attributes,
            enis_free: kind.task_enis,
            ..Room::default()
        }),
        not_placing: None,
        service_tasks: 0,
    }
}

/// What a provider would launch for one task that no instance has room for, as the fit check
/// says it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OneLaunch {
    pub cluster: String,
    pub provider: String,
    /// The type it would launch, with its GPUs and their memory; `None` when it would not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
    #[serde(default)]
    pub gpus: u32,
    #[serde(default)]
    pub gpu_memory_mib: u32,
    /// Until the instance is ACTIVE, in seconds (an assumption; see `assumed`).
    #[serde(default)]
    pub seconds: u32,
    /// Its price an hour in US cents, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cents_per_hour: Option<u64>,
    /// Why the provider would not launch for the task, when it would not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    #[serde(default)]
    pub assumed: Vec<String>,
}

/// What `growth`'s provider in `cluster` would launch for one task `shape` that no instance
/// has room for: the type, or why none.
pub fn launch_for_one(cluster: &str, growth: &Growth, shape: &Shape) -> OneLaunch {
    let one = std::slice::from_ref(shape);
    let launched: Result<(&TypeFacts, u32), String> = match &growth.source {
        GrowthSource::ManagedInstances {
            candidates,
            excluded,
            ..
        } => growth::cheapest(candidates, one)
            .map(|(kind, _)| (kind, MANAGED_LAUNCH_SECONDS))
            .ok_or_else(|| no_type_for(&shape.gpu, candidates, excluded)),
        GrowthSource::AutoScaling {
            kind,
            scaling,
            size,
            ..
        } => {
            if growth::instances_needed(kind, 0, one).is_none() {
                Err(format!(
                    "a task does not fit an empty {} (the group's type)",
                    kind.name
                ))
            } else if *size >= scaling.max_size {
                Err(format!(
                    "the Auto Scaling group is at its MaxSize of {}: the task would stay in PROVISIONING",
                    scaling.max_size
                ))
            } else {
                Ok((kind, ASG_LAUNCH_SECONDS))
            }
        }
        GrowthSource::Fixed { why } => Err(why.clone()),
    };
    let named = OneLaunch {
        cluster: cluster.to_string(),
        provider: growth.provider.clone(),
        ..OneLaunch::default()
    };
    match launched {
        Ok((kind, seconds)) => OneLaunch {
            instance_type: Some(kind.name.clone()),
            gpus: kind.gpus as u32,
            gpu_memory_mib: kind.gpu_memory_mib,
            seconds,
            cents_per_hour: kind.usd_per_hour.map(|usd| (usd * 100.0).round() as u64),
            assumed: assumed_of(growth),
            ..named
        },
        Err(limit) => OneLaunch {
            limit: Some(limit),
            ..named
        },
    }
}

/// Why no type of `candidates` takes a task asking for `request`.
fn no_type_for(request: &GpuRequest, candidates: &[TypeFacts], excluded: &[String]) -> String {
    let names: Vec<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
    let mut text = if names.is_empty() {
        "the provider's requirements match no GPU type that can share GPUs".to_string()
    } else {
        format!(
            "no type the provider may launch ({}) takes a new task: {}",
            names.join(", "),
            super::describe(request)
        )
    };
    if !excluded.is_empty() {
        text.push_str(&format!("; not launched: {}", excluded.join("; ")));
    }
    text
}

#[cfg(test)]
mod tests;
