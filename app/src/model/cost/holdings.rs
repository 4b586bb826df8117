//! What the fleet holds, before any price: per cluster, instance type and lifecycle, the
//! capacity (instance-hours, GPU-hours, CPU unit-hours and memory MiB-hours) and who holds how
//! much of it (GPU-hours, GPU memory MiB-hours, whole-GPU-hours, how much of it the GPUs did not
//! use, and the CPU and memory their tasks reserve).
//!
//! One snapshot gives the holdings of one moment, weighted by how long it stands for; the
//! recorder adds them up hour by hour, and a report over any period prices their sum. Prices
//! are applied only when a report is made, so a price file changed today re-prices the past.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{words::Lifecycle, FleetSnapshot, GpuView, InstanceView, SharingMode};

use crate::model::unused_fraction;

/// What a holding stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldingKind {
    /// The instances themselves: instance-hours and the GPU-hours they offer.
    Capacity,
    /// What a service's containers hold.
    Held,
    /// What ECS counts as allocated with no known container holding it.
    Unattributed,
}

impl HoldingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HoldingKind::Capacity => "capacity",
            HoldingKind::Held => "held",
            HoldingKind::Unattributed => "unattributed",
        }
    }

    pub fn parse(text: &str) -> Option<HoldingKind> {
        [
            HoldingKind::Capacity,
            HoldingKind::Held,
            HoldingKind::Unattributed,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }
}

/// Who or what a holding is counted under. Text fields are empty when not known (no team tag,
/// a task outside any service, a capacity row), so that the key stores as it compares.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct HoldingKey {
    pub cluster: String,
    pub instance_type: String,
    /// `None` when EC2 could not say (stored as an empty string).
    pub lifecycle: Option<Lifecycle>,
    pub kind: HoldingKind,
    pub team: String,
    pub service: String,
}

/// Amounts over some time, in hours (an instance for a day is 24 instance-hours).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Amounts {
    /// Capacity only: instance-hours.
    pub instance_hours: f64,
    /// Capacity: the GPU-hours the instances offer; held: the GPU-hours held (a quarter of a
    /// GPU's memory for a day is 6).
    pub gpu_hours: f64,
    /// GPU memory held on MPS GPUs, MiB-hours.
    pub memory_mib_hours: f64,
    /// Whole GPUs held, GPU-hours.
    pub whole_gpu_hours: f64,
    /// Of `gpu_hours`, those on GPUs with usage data.
    pub usage_gpu_hours: f64,
    /// Of `gpu_hours`, the part the GPUs did not use.
    pub unused_gpu_hours: f64,
    /// Capacity: the CPU units the instances registered, unit-hours; held: those the tasks
    /// reserve.
    #[serde(default)]
    pub cpu_hours: f64,
    /// Capacity: the memory the instances registered, MiB-hours; held: what the tasks reserve.
    #[serde(default)]
    pub host_memory_mib_hours: f64,
    /// Capacity only: of `instance_hours`, those of ECS Managed Instances, which bill the
    /// Managed Instances charge on top of EC2's price.
    #[serde(default)]
    pub managed_instance_hours: f64,
    /// Held: the GPU-hours held by the larger of memory and compute share (see
    /// [`SplitRule::Max`](super::SplitRule::Max)); equal to `gpu_hours` on whole GPUs.
    #[serde(default)]
    pub max_rule_gpu_hours: f64,
    /// Of `gpu_hours`, those recorded before the compute share was: under the larger-share
    /// rule they count by memory share.
    #[serde(default)]
    pub max_rule_unknown_gpu_hours: f64,
    /// Of `unused_gpu_hours`, the part on MPS GPUs: CloudWatch measures a GPU, not a tenant,
    /// so a tenant's part of it is an estimate (its share of the GPU's unused memory).
    #[serde(default)]
    pub estimated_unused_gpu_hours: f64,
}

impl Amounts {
    pub fn add(&mut self, other: &Amounts) {
        self.instance_hours += other.instance_hours;
        self.gpu_hours += other.gpu_hours;
        self.memory_mib_hours += other.memory_mib_hours;
        self.whole_gpu_hours += other.whole_gpu_hours;
        self.usage_gpu_hours += other.usage_gpu_hours;
        self.unused_gpu_hours += other.unused_gpu_hours;
        self.cpu_hours += other.cpu_hours;
        self.host_memory_mib_hours += other.host_memory_mib_hours;
        self.managed_instance_hours += other.managed_instance_hours;
        self.max_rule_gpu_hours += other.max_rule_gpu_hours;
        self.max_rule_unknown_gpu_hours += other.max_rule_unknown_gpu_hours;
        self.estimated_unused_gpu_hours += other.estimated_unused_gpu_hours;
    }

    /// These amounts times `factor` (a snapshot standing for `factor` hours).
    pub fn scaled(&self, factor: f64) -> Amounts {
        Amounts {
            instance_hours: self.instance_hours * factor,
            gpu_hours: self.gpu_hours * factor,
            memory_mib_hours: self.memory_mib_hours * factor,
            whole_gpu_hours: self.whole_gpu_hours * factor,
            usage_gpu_hours: self.usage_gpu_hours * factor,
            unused_gpu_hours: self.unused_gpu_hours * factor,
            cpu_hours: self.cpu_hours * factor,
            host_memory_mib_hours: self.host_memory_mib_hours * factor,
            managed_instance_hours: self.managed_instance_hours * factor,
            max_rule_gpu_hours: self.max_rule_gpu_hours * factor,
            max_rule_unknown_gpu_hours: self.max_rule_unknown_gpu_hours * factor,
            estimated_unused_gpu_hours: self.estimated_unused_gpu_hours * factor,
        }
    }
}

/// Holdings by key.
pub type Holdings = BTreeMap<HoldingKey, Amounts>;

/// Adds `more` into `into`.
pub fn merge(into: &mut Holdings, more: &Holdings) {
    for (key, amounts) in more {
        into.entry(key.clone()).or_default().add(amounts);
    }
}

/// What `snapshot` holds, standing for `hours` hours.
pub fn of_snapshot(snapshot: &FleetSnapshot, hours: f64) -> Holdings {
    let mut out = Holdings::new();
    for cluster in &snapshot.clusters {
        for instance in &cluster.instances {
            add_instance(&mut out, &cluster.name, instance, hours);
        }
    }
    out
}

/// What one instance holds: its capacity, the CPU and memory tasks reserve, and its GPUs.
fn add_instance(out: &mut Holdings, cluster: &str, instance: &InstanceView, hours: f64) {
    let key = |kind: HoldingKind, team: Option<&str>, service: Option<&str>| HoldingKey {
        cluster: cluster.to_string(),
        instance_type: instance.instance_type.clone(),
        lifecycle: instance.lifecycle,
        kind,
        team: team.unwrap_or_default().to_string(),
        service: service.unwrap_or_default().to_string(),
    };
    out.entry(key(HoldingKind::Capacity, None, None))
        .or_default()
        .add(&Amounts {
            instance_hours: hours,
            managed_instance_hours: if instance.managed_instance {
                hours
            } else {
                0.0
            },
            gpu_hours: hours * instance.gpus.len() as f64,
            cpu_hours: hours * instance.host.as_ref().map_or(0.0, |h| f64::from(h.cpu)),
            host_memory_mib_hours: hours
                * instance
                    .host
                    .as_ref()
                    .map_or(0.0, |h| f64::from(h.memory_mib)),
            ..Amounts::default()
        });
    for reserved in instance.host.iter().flat_map(|h| &h.reserved) {
        out.entry(key(
            HoldingKind::Held,
            reserved.team.as_deref(),
            reserved.service.as_deref(),
        ))
        .or_default()
        .add(&Amounts {
            cpu_hours: hours * f64::from(reserved.cpu),
            host_memory_mib_hours: hours * f64::from(reserved.memory_mib),
            ..Amounts::default()
        });
    }
    for gpu in &instance.gpus {
        add_gpu(out, &key, gpu, hours);
    }
}

/// One holder of an MPS GPU: a known container, or (`None`) the memory ECS counts as allocated
/// that no known container explains.
struct MpsShare<'a> {
    container: Option<&'a crate::model::GpuContainer>,
    /// MiB held.
    memory: f64,
    /// Of the GPU, by memory share.
    part: f64,
    /// Of the GPU, by the larger of memory and compute share, scaled to the GPU.
    larger: f64,
}

/// The holders of an MPS GPU (`total_memory_mib` > 0): each container by its own ask, bounded
/// by what ECS says is allocated, and what no known container explains. The larger share is
/// each one's memory share or compute limit, whichever is larger (unexplained memory counts by
/// memory); where they add up to more than the GPU, all are scaled to the GPU.
fn mps_shares(gpu: &GpuView) -> Vec<MpsShare<'_>> {
    let total = f64::from(gpu.total_memory_mib);
    let allocated = f64::from(gpu.allocated_memory_mib());
    let known: f64 = gpu
        .containers
        .iter()
        .map(|c| f64::from(c.memory_mib.unwrap_or(0)))
        .sum();
    let scale = if known > allocated && known > 0.0 {
        allocated / known
    } else {
        1.0
    };
    let mut out: Vec<MpsShare> = gpu
        .containers
        .iter()
        .map(|c| (c, f64::from(c.memory_mib.unwrap_or(0)) * scale))
        .filter(|(_, memory)| *memory > 0.0)
        .map(|(c, memory)| MpsShare {
            container: Some(c),
            memory,
            part: memory / total,
            larger: (memory / total).max(f64::from(c.compute_percent) / 100.0),
        })
        .collect();
    let unknown = (allocated - known.min(allocated)).max(0.0);
    if unknown > 0.0 {
        out.push(MpsShare {
            container: None,
            memory: unknown,
            part: unknown / total,
            larger: unknown / total,
        });
    }
    let sum: f64 = out.iter().map(|h| h.larger).sum();
    if sum > 1.0 {
        for holder in &mut out {
            holder.larger /= sum;
        }
    }
    out
}

/// Who holds one GPU: its whole-GPU containers in equal parts, its MPS containers by memory
/// (what no known container explains is unattributed), a dedicated GPU of no known container
/// unattributed — never idle.
fn add_gpu(
    out: &mut Holdings,
    key: &impl Fn(HoldingKind, Option<&str>, Option<&str>) -> HoldingKey,
    gpu: &GpuView,
    hours: f64,
) {
    let unused = unused_fraction(gpu);
    let estimated = gpu.mode == SharingMode::NvidiaMps;
    // `part` by memory share, `larger` by the larger of memory and compute share.
    let share = |part: f64, larger: f64, memory: f64, whole: f64| Amounts {
        instance_hours: 0.0,
        gpu_hours: hours * part,
        memory_mib_hours: hours * memory,
        whole_gpu_hours: hours * whole,
        usage_gpu_hours: if unused.is_some() { hours * part } else { 0.0 },
        unused_gpu_hours: hours * part * unused.unwrap_or(0.0),
        estimated_unused_gpu_hours: if estimated {
            hours * part * unused.unwrap_or(0.0)
        } else {
            0.0
        },
        max_rule_gpu_hours: hours * larger,
        ..Amounts::default()
    };
    let whole: Vec<_> = gpu.containers.iter().filter(|c| c.whole_gpu).collect();
    if !whole.is_empty() {
        let each = 1.0 / whole.len() as f64;
        for c in whole {
            out.entry(key(
                HoldingKind::Held,
                c.team.as_deref(),
                c.service.as_deref(),
            ))
            .or_default()
            .add(&share(each, each, 0.0, each));
        }
    } else if gpu.mode == SharingMode::NvidiaMps && gpu.total_memory_mib > 0 {
        for holder in mps_shares(gpu) {
            let key = match holder.container {
                Some(c) => key(HoldingKind::Held, c.team.as_deref(), c.service.as_deref()),
                None => key(HoldingKind::Unattributed, None, None),
            };
            out.entry(key)
                .or_default()
                .add(&share(holder.part, holder.larger, holder.memory, 0.0));
        }
    } else if gpu.mode == SharingMode::Dedicated {
        // ECS says a container has it, and no known container does: held, by whom
        // not known — never idle.
        out.entry(key(HoldingKind::Unattributed, None, None))
            .or_default()
            .add(&share(1.0, 1.0, 0.0, 1.0));
    }
}
