//! Growth: what a capacity provider may launch for tasks that wait for capacity, and how many
//! instances of which type they need. One implementation, used by the emulator to launch and by
//! the console to predict, so that a pre-check's "launches 2 × g6.12xlarge" is what happens.
//!
//! The rules (ECS developer guide, "Amazon ECS Managed Instances" and "Amazon ECS cluster auto
//! scaling"; EC2 API reference, `InstanceRequirements`):
//! - a Managed Instances provider launches the most cost-effective instance type its
//!   `instanceRequirements` match; the emulator reads "most cost-effective" as the lowest hourly
//!   price for all the waiting tasks together (count × price), ties by name;
//! - an Auto Scaling group launches its own type; with managed scaling ECS target-tracks
//!   `CapacityProviderReservation` = M / N × 100, M the instances all tasks need (those that
//!   wait included) and N the group's instances, so the group grows to ⌈M × 100 / target⌉,
//!   by steps between `minimumScalingStepSize` and `maximumScalingStepSize`, never past
//!   `MaxSize`;
//! - GPU sharing runs only on NVIDIA GPUs, and not on fractional-GPU types (G6f, which take a
//!   fractional `value` instead).
//!
//! Packing tasks into new instances uses the same GPU and resource rules as placement, first
//! fit in the order the tasks wait.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    allocate, find_gpus,
    resources::{self, Needs, Room},
    GpuRequest, GpuSlot,
};

/// What the growth rules need of an instance type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TypeFacts {
    pub name: String,
    pub gpus: usize,
    /// GPU memory per GPU that ECS registers as usable (`totalMemoryInMiB`).
    pub gpu_memory_mib: u32,
    /// GPU memory of all GPUs together as EC2 gives it (`acceleratorTotalMemoryMiB`).
    pub total_gpu_memory_mib: u32,
    /// The accelerator's name as instance requirements spell it (`a10g`, `l4`, `h100` …).
    pub accelerator_name: String,
    /// `nvidia`, `amd` …
    pub manufacturer: String,
    pub vcpus: u32,
    /// The instance's memory (MiB), as EC2 gives it.
    pub memory_mib: u32,
    /// ENI attachment points left for `awsvpc` tasks on a new instance, when known.
    pub task_enis: Option<u32>,
    /// On-demand USD an hour, when known.
    pub usd_per_hour: Option<f64>,
}

/// Prices are read from price lists and never NaN, so a type equals itself.
impl Eq for TypeFacts {}

impl TypeFacts {
    /// A fractional-GPU type (`g6f.*`, `gr6f.*`): GPU sharing does not run on it.
    pub fn is_fractional(&self) -> bool {
        let family = self.name.split('.').next().unwrap_or("");
        family.ends_with('f') && family.starts_with('g')
    }

    /// Whether ECS can share this type's GPUs with MPS: NVIDIA, whole GPUs.
    pub fn shares_gpus(&self) -> bool {
        self.gpus > 0 && self.manufacturer == "nvidia" && !self.is_fractional()
    }

    /// CPU units and memory the ECS agent registers on a new instance (1,024 units a vCPU; the
    /// memory less 1 GiB the system keeps).
    pub fn registered(&self) -> (u32, u32) {
        (self.vcpus * 1024, self.memory_mib.saturating_sub(1024))
    }

    /// An empty instance of this type, as placement sees it.
    fn fresh(&self) -> Sim {
        let (cpu, memory) = self.registered();
        let mut attributes = BTreeMap::new();
        attributes.insert("ecs.instance-type".to_string(), self.name.clone());
        Sim {
            gpus: vec![GpuSlot::idle(self.gpu_memory_mib); self.gpus],
            room: Room {
                status: "ACTIVE".into(),
                agent_connected: true,
                cpu_remaining: cpu,
                memory_remaining_mib: memory,
                attributes,
                enis_free: self.task_enis,
                ..Room::default()
            },
            group_tasks: BTreeMap::new(),
        }
    }
}

/// One task that waits for capacity: its GPUs, the rest it needs, and its group (a service's
/// `service:NAME`), for `distinctInstance`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    pub gpu: GpuRequest,
    pub needs: Needs,
    pub group: String,
}

/// A new instance being filled.
struct Sim {
    gpus: Vec<GpuSlot>,
    room: Room,
    group_tasks: BTreeMap<String, u32>,
}

impl Sim {
    /// Puts `shape` here if it fits.
    fn take(&mut self, shape: &Shape) -> bool {
        let here = self.group_tasks.get(&shape.group).copied().unwrap_or(0);
        if resources::check(&self.room, &shape.needs, here).is_err() {
            return false;
        }
        let Ok(assignment) = find_gpus(&self.gpus, true, &shape.gpu) else {
            return false;
        };
        allocate(&mut self.gpus, &shape.gpu, &assignment);
        resources::take(&mut self.room, &shape.needs);
        *self.group_tasks.entry(shape.group.clone()).or_default() += 1;
        true
    }
}

/// The `waiting` tasks that `in_flight` new instances of `kind` cannot take, in order.
pub fn leftover(kind: &TypeFacts, in_flight: u32, waiting: &[Shape]) -> Vec<Shape> {
    let mut sims: Vec<Sim> = (0..in_flight).map(|_| kind.fresh()).collect();
    waiting
        .iter()
        .filter(|shape| !sims.iter_mut().any(|sim| sim.take(shape)))
        .cloned()
        .collect()
}

/// How many new instances of `kind` the `waiting` tasks need, after `in_flight` instances of
/// it already on their way take what they can; `None` when one of them fits no empty instance
/// of the type.
pub fn instances_needed(kind: &TypeFacts, in_flight: u32, waiting: &[Shape]) -> Option<u32> {
    let mut sims: Vec<Sim> = (0..in_flight).map(|_| kind.fresh()).collect();
    let mut new = 0;
    for shape in waiting {
        if sims.iter_mut().any(|sim| sim.take(shape)) {
            continue;
        }
        let mut sim = kind.fresh();
        if !sim.take(shape) {
            return None;
        }
        sims.push(sim);
        new += 1;
    }
    Some(new)
}

/// The most cost-effective of `candidates` for the `waiting` tasks: the lowest price for all of
/// them (count × hourly price; an unpriced type last), then the fewest instances, then the
/// name. `None` when no candidate takes every one of them.
pub fn cheapest<'a>(
    candidates: &'a [TypeFacts],
    waiting: &[Shape],
) -> Option<(&'a TypeFacts, u32)> {
    candidates
        .iter()
        .filter(|kind| kind.shares_gpus() || waiting.iter().all(|s| s.gpu == GpuRequest::None))
        .filter_map(|kind| instances_needed(kind, 0, waiting).map(|n| (kind, n)))
        .min_by(|(a, n), (b, m)| {
            let cost = |kind: &TypeFacts, count: u32| {
                kind.usd_per_hour
                    .map_or(f64::INFINITY, |p| p * f64::from(count))
            };
            cost(a, *n)
                .total_cmp(&cost(b, *m))
                .then(n.cmp(m))
                .then(a.name.cmp(&b.name))
        })
}

/// A Managed Instances provider's `instanceRequirements`, as far as they choose GPU types.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requirements {
    pub vcpu: (u32, Option<u32>),
    pub memory_mib: (u32, Option<u32>),
    pub accelerator_types: Vec<String>,
    pub manufacturers: Vec<String>,
    pub names: Vec<String>,
    pub count: (Option<u32>, Option<u32>),
    pub total_memory_mib: (Option<u32>, Option<u32>),
    pub allowed: Vec<String>,
    pub excluded: Vec<String>,
}

/// Why a type does not match a provider's requirements, said for a person.
pub type Mismatch = String;

fn range_of(value: Option<&Value>) -> (Option<u32>, Option<u32>) {
    let bound = |key: &str| {
        value
            .and_then(|v| v.get(key))
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    (bound("min"), bound("max"))
}

fn strings_of(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_ascii_lowercase)
                .collect()
        })
        .unwrap_or_default()
}

fn within(n: u32, (min, max): (Option<u32>, Option<u32>)) -> bool {
    min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m)
}

/// Whether `name` matches an EC2 instance type pattern: `*` stands for any run of characters
/// (`g6.*`, `g6*`, `*.12xlarge`).
pub fn type_pattern_matches(pattern: &str, name: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (index, part) in parts.iter().enumerate() {
        if index == 0 {
            let Some(after) = rest.strip_prefix(part) else {
                return false;
            };
            rest = after;
        } else if index == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else {
                return false;
            };
            rest = &rest[at + part.len()..];
        }
    }
    true
}

impl Requirements {
    /// Reads `instanceRequirements` as CreateCapacityProvider takes it.
    pub fn from_json(value: &Value) -> Requirements {
        let (vcpu_min, vcpu_max) = range_of(value.get("vCpuCount"));
        let (memory_min, memory_max) = range_of(value.get("memoryMiB"));
        Requirements {
            vcpu: (vcpu_min.unwrap_or(0), vcpu_max),
            memory_mib: (memory_min.unwrap_or(0), memory_max),
            accelerator_types: strings_of(value.get("acceleratorTypes")),
            manufacturers: strings_of(value.get("acceleratorManufacturers")),
            names: strings_of(value.get("acceleratorNames")),
            count: range_of(value.get("acceleratorCount")),
            total_memory_mib: range_of(value.get("acceleratorTotalMemoryMiB")),
            allowed: strings_of(value.get("allowedInstanceTypes")),
            excluded: strings_of(value.get("excludedInstanceTypes")),
        }
    }

    /// Whether `kind` matches, or the first requirement it fails.
    pub fn check(&self, kind: &TypeFacts) -> Result<(), Mismatch> {
        let gpu_type = !self.accelerator_types.is_empty()
            && !self.accelerator_types.iter().any(|t| t == "gpu");
        let fails = [
            (
                !within(kind.vcpus, (Some(self.vcpu.0), self.vcpu.1)),
                format!("{} vCPUs is outside vCpuCount", kind.vcpus),
            ),
            (
                !within(
                    kind.memory_mib,
                    (Some(self.memory_mib.0), self.memory_mib.1),
                ),
                format!("{} MiB of memory is outside memoryMiB", kind.memory_mib),
            ),
            (
                gpu_type,
                "acceleratorTypes does not include gpu".to_string(),
            ),
            (
                !self.manufacturers.is_empty() && !self.manufacturers.contains(&kind.manufacturer),
                format!(
                    "its GPU maker {} is not in acceleratorManufacturers",
                    kind.manufacturer
                ),
            ),
            (
                !self.names.is_empty() && !self.names.contains(&kind.accelerator_name),
                format!(
                    "its GPU {} is not in acceleratorNames",
                    kind.accelerator_name
                ),
            ),
            (
                !within(kind.gpus as u32, self.count),
                format!("{} GPUs is outside acceleratorCount", kind.gpus),
            ),
            (
                !within(kind.total_gpu_memory_mib, self.total_memory_mib),
                format!(
                    "{} MiB of GPU memory is outside acceleratorTotalMemoryMiB",
                    kind.total_gpu_memory_mib
                ),
            ),
            (
                !self.allowed.is_empty()
                    && !self
                        .allowed
                        .iter()
                        .any(|p| type_pattern_matches(p, &kind.name)),
                "it is not in allowedInstanceTypes".to_string(),
            ),
            (
                self.excluded
                    .iter()
                    .any(|p| type_pattern_matches(p, &kind.name)),
                "excludedInstanceTypes names it".to_string(),
            ),
        ];
        match fails.into_iter().find(|(failed, _)| *failed) {
            Some((_, why)) => Err(why),
            None => Ok(()),
        }
    }
}

/// How far an Auto Scaling group provider grows in one scaling action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsgScaling {
    /// `targetCapacity`, percent.
    pub target: u32,
    pub min_step: u32,
    pub max_step: u32,
    pub max_size: u32,
}

/// What one scaling action of a group does: the instances it launches, and whether `MaxSize`
/// or the step size held it back from what target tracking wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsgStep {
    pub launch: u32,
    /// The group size target tracking wants: ⌈M × 100 / target⌉.
    pub wanted: u32,
    pub held_by_max_size: bool,
    pub held_by_step: bool,
}

/// One scaling action of a group of `size` instances (those on their way included), of which
/// `busy` run tasks, for tasks that need `needed_new` more instances.
pub fn asg_step(scaling: &AsgScaling, size: u32, busy: u32, needed_new: u32) -> AsgStep {
    let m = busy + needed_new;
    let wanted = (m * 100).div_ceil(scaling.target.clamp(1, 100));
    let short = wanted.saturating_sub(size);
    if short == 0 || needed_new == 0 {
        return AsgStep {
            launch: 0,
            wanted,
            held_by_max_size: false,
            held_by_step: false,
        };
    }
    let stepped = short.clamp(scaling.min_step.max(1), scaling.max_step.max(1));
    let room = scaling.max_size.saturating_sub(size);
    AsgStep {
        launch: stepped.min(room),
        wanted,
        held_by_max_size: room < stepped,
        held_by_step: stepped < short,
    }
}

#[cfg(test)]
mod tests;
