//! The fleet snapshot: every GPU, and what runs on it, as the fleet view shows it.

use serde::{Deserialize, Serialize};

use crate::model::words::{DeploymentStrategy, InstanceStatus, Lifecycle, RolloutState};
pub use placement::SharingMode;

/// A container that ECS assigned to a GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuContainer {
    pub task_arn: String,
    pub container: String,
    /// The service that started the task (from its `group`), if any.
    pub service: Option<String>,
    /// The team tag of the service or task definition, if any.
    pub team: Option<String>,
    /// MPS: the memory it asked for. Whole GPU: `None`.
    pub memory_mib: Option<u32>,
    /// MPS: its `maxComputePercent`, or 100 when unset (the MPS default). Whole GPU: 100.
    pub compute_percent: u32,
    /// Whether the container has the GPU to itself.
    pub whole_gpu: bool,
    /// When the task started, RFC 3339.
    pub started_at: Option<String>,
}

/// One GPU with its allocation and what runs on it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuView {
    pub uuid: String,
    /// Device index on its instance (the order of `gpuDevices`).
    pub index: u32,
    pub mode: SharingMode,
    pub total_memory_mib: u32,
    pub remaining_memory_mib: u32,
    /// Σ `maxComputePercent` of its MPS containers (unset counts 100); may exceed 100.
    pub compute_allocated_percent: u32,
    pub containers: Vec<GpuContainer>,
    /// Usage from CloudWatch over the last 15 minutes; `None` when the agent reported nothing.
    #[serde(default)]
    pub usage: Option<GpuUsage>,
}

/// One metric over a window: its newest value and its average.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub latest: f64,
    pub average: f64,
}

/// What the CloudWatch agent reported for one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuUsage {
    /// `nvidia_smi_utilization_gpu`, percent.
    pub utilization_percent: Option<Reading>,
    /// `nvidia_smi_memory_used`, MiB.
    pub memory_used_mib: Option<Reading>,
}

impl GpuView {
    /// Memory ECS allocated on this GPU.
    pub fn allocated_memory_mib(&self) -> u32 {
        self.total_memory_mib
            .saturating_sub(self.remaining_memory_mib)
    }

    /// The distinct services on this GPU: its blast radius.
    pub fn services(&self) -> Vec<&str> {
        let mut services: Vec<&str> = self
            .containers
            .iter()
            .filter_map(|c| c.service.as_deref())
            .collect();
        services.sort_unstable();
        services.dedup();
        services
    }
}

/// One container instance with its GPUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceView {
    pub arn: String,
    pub ec2_instance_id: String,
    pub instance_type: String,
    /// The `ACCELERATED_COMPUTE` check's reason when the MPS daemon is impaired.
    pub impaired: Option<String>,
    /// Carries `ecs.capability.gpu-sharing-mps`: its agent can share GPUs with MPS.
    #[serde(default = "yes")]
    pub mps_capable: bool,
    /// The GPU model: the agent's `name` dimension, else what the instance type carries.
    #[serde(default)]
    pub gpu_model: Option<String>,
    pub gpus: Vec<GpuView>,
    /// Why ECS places nothing here, when it does not: `DRAINING` (any status but `ACTIVE`),
    /// or `agent disconnected`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_placing: Option<String>,
    /// The instance's Availability Zone (its `ecs.availability-zone` attribute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    /// `spot` or `on-demand`, from EC2 DescribeInstances; `None` when EC2 could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    /// What is left besides GPUs (status, agent, CPU, memory, host ports, attributes), for the
    /// checks; `None` when not read (pages get the instance without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<placement::resources::Room>,
    /// Its CPU and memory, and what the tasks on it reserve of them, for the cost review;
    /// `None` when not read (pages get the instance without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostUse>,
    /// The capacity provider that launched it (`capacityProviderName`); `None` for an instance
    /// registered outside any provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_provider: Option<String>,
    /// When it registered with the cluster (RFC 3339), when ECS said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_at: Option<String>,
    /// An ECS Managed Instance (EC2 names ECS as its operator), billed the Managed Instances
    /// charge on top of EC2's price; `false` too when EC2 could not be read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub managed_instance: bool,
}

impl InstanceView {
    /// An instance built by hand (a test's, a what-if's): `id` of `instance_type`, able to share
    /// GPUs with MPS, its ARN `arn:{id}`, with no GPUs, room, host use or EC2 facts until the
    /// `with_` methods add them.
    pub fn of(id: impl Into<String>, instance_type: impl Into<String>) -> InstanceView {
        let id = id.into();
        InstanceView {
            arn: format!("arn:{id}"),
            ec2_instance_id: id,
            instance_type: instance_type.into(),
            impaired: None,
            mps_capable: true,
            gpu_model: None,
            gpus: Vec::new(),
            not_placing: None,
            availability_zone: None,
            lifecycle: None,
            room: None,
            host: None,
            capacity_provider: None,
            registered_at: None,
            managed_instance: false,
        }
    }

    /// With the container instance ARN `arn`.
    pub fn with_arn(self, arn: impl Into<String>) -> InstanceView {
        InstanceView {
            arn: arn.into(),
            ..self
        }
    }

    /// With `gpus`.
    pub fn with_gpus(self, gpus: Vec<GpuView>) -> InstanceView {
        InstanceView { gpus, ..self }
    }

    /// With the room ECS reports (or none).
    pub fn with_room(self, room: Option<placement::resources::Room>) -> InstanceView {
        InstanceView { room, ..self }
    }

    /// Billed as `lifecycle` (or not known).
    pub fn with_lifecycle(self, lifecycle: Option<Lifecycle>) -> InstanceView {
        InstanceView { lifecycle, ..self }
    }
}

/// An instance's CPU units and memory as it registered them, and what its tasks reserve.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostUse {
    pub cpu: u32,
    pub memory_mib: u32,
    /// Per service (and team), what its tasks on the instance reserve; tasks outside services
    /// under `None`.
    pub reserved: Vec<HostReserved>,
}

/// What one service's tasks reserve of an instance's CPU and memory (the task definition's
/// task-level `cpu`/`memory`, else the containers' `cpu` and `memoryReservation` or `memory`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostReserved {
    pub service: Option<String>,
    pub team: Option<String>,
    pub cpu: u32,
    pub memory_mib: u32,
}

impl InstanceView {
    /// Why ECS would place nothing on this instance, from its status and agent connection.
    pub fn not_placing_reason(status: &InstanceStatus, agent_connected: bool) -> Option<String> {
        if *status != InstanceStatus::Active {
            Some(status.to_string())
        } else if !agent_connected {
            Some("agent disconnected".to_string())
        } else {
            None
        }
    }

    /// Whether ECS places tasks here at all.
    pub fn takes_tasks(&self) -> bool {
        self.not_placing.is_none()
    }
}

/// One cluster with its container instances.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterView {
    pub name: String,
    pub instances: Vec<InstanceView>,
    /// Services in the cluster.
    #[serde(default)]
    pub services: u32,
    /// Each service with the task definition it runs.
    #[serde(default)]
    pub service_list: Vec<ServiceRef>,
    /// Tasks whose last status is RUNNING.
    #[serde(default)]
    pub running_tasks: u32,
    /// Tasks not yet running (PROVISIONING, PENDING, ACTIVATING).
    #[serde(default)]
    pub pending_tasks: u32,
}

/// One entry of a capacity provider strategy: a service's, or a cluster's default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrategyItem {
    pub capacity_provider: String,
    pub weight: u32,
    pub base: u32,
}

/// A service and the task definition it runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceRef {
    pub name: String,
    pub task_definition_arn: String,
    pub team: Option<String>,
    /// Tasks the service should run, runs, and has pending.
    #[serde(default)]
    pub desired: u32,
    #[serde(default)]
    pub running: u32,
    #[serde(default)]
    pub pending: u32,
    /// The PRIMARY deployment's rollout state.
    #[serde(default)]
    pub rollout_state: Option<RolloutState>,
    /// Deployments in flight (PRIMARY and ACTIVE).
    #[serde(default)]
    pub deployments: u32,
    /// The deployment configuration: the bounds of a rolling update, in percent of `desired`.
    #[serde(default)]
    pub maximum_percent: Option<u32>,
    #[serde(default)]
    pub minimum_healthy_percent: Option<u32>,
    /// The deployment circuit breaker: whether it is on, and whether it rolls back.
    #[serde(default)]
    pub circuit_breaker: bool,
    #[serde(default)]
    pub circuit_breaker_rollback: bool,
    /// `deploymentConfiguration.strategy`: rolling also when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<DeploymentStrategy>,
    /// The service's `placementConstraints` as ECS returns them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_constraints: Vec<serde_json::Value>,
    /// The service's `placementStrategy` as ECS writes it (`spread(attribute:…)`,
    /// `binpack(memory)`, `random`); empty for ECS's default, spread across Availability Zones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_strategy: Vec<String>,
    /// The service's capacity provider strategy; empty for the EC2 launch type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity_provider_strategy: Vec<StrategyItem>,
    /// When ECS last described the service to the console, RFC 3339: a budget counts the
    /// changes the console sent since (see [`crate::model::sent`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<String>,
}

/// The whole fleet at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetSnapshot {
    /// When the snapshot was complete, RFC 3339.
    pub taken_at: String,
    /// ECS calls it took.
    pub api_calls: u32,
    /// CloudWatch calls it took.
    #[serde(default)]
    pub cloudwatch_calls: u32,
    /// Why GPU usage could not be read, when it could not: usage then shows as "no data".
    #[serde(default)]
    pub usage_error: Option<String>,
    pub clusters: Vec<ClusterView>,
    /// Containers that named a GPU no instance reports.
    pub unknown_gpu_ids: u32,
}

fn yes() -> bool {
    true
}

impl FleetSnapshot {
    /// Every instance of every cluster.
    pub fn instances(&self) -> impl Iterator<Item = &InstanceView> {
        self.clusters.iter().flat_map(|c| c.instances.iter())
    }

    /// How many GPUs the fleet has.
    pub fn gpu_count(&self) -> usize {
        self.instances().map(|i| i.gpus.len()).sum()
    }
}

/// The GPU model an instance type carries (AWS instance pages), for when the agent says none.
pub fn gpu_model_of(instance_type: &str) -> Option<&'static str> {
    let family = instance_type.split('.').next()?;
    Some(match family {
        "g4dn" => "NVIDIA T4",
        "g5" => "NVIDIA A10G",
        "g6" => "NVIDIA L4",
        "g6e" => "NVIDIA L40S",
        "p4d" => "NVIDIA A100 40GB",
        "p4de" => "NVIDIA A100 80GB",
        "p5" => "NVIDIA H100",
        "p5e" | "p5en" => "NVIDIA H200",
        _ => return None,
    })
}

/// The nominal memory of one GPU of an instance type, in MiB (AWS instance pages: 24 GiB for an
/// A10G, …), for an instance that reports no `gpuDevices` and so no measured memory.
pub fn nominal_gpu_memory_mib(instance_type: &str) -> Option<u32> {
    let family = instance_type.split('.').next()?;
    let gib = match family {
        "g4dn" => 16,
        "g5" | "g6" => 24,
        "g6e" => 48,
        "p4d" => 40,
        "p4de" | "p5" => 80,
        "p5e" | "p5en" => 141,
        _ => return None,
    };
    Some(gib * 1024)
}

/// The part of a GPU's allocation it did not use, 0–1; `None` without usage data. Measured: the
/// GPU's own figure (its memory used against what ECS allocated on an MPS GPU, its utilisation
/// on a whole one).
pub fn unused_fraction(gpu: &GpuView) -> Option<f64> {
    let usage = gpu.usage?;
    match gpu.mode {
        SharingMode::NvidiaMps => {
            let allocated = f64::from(gpu.allocated_memory_mib());
            let used = usage.memory_used_mib?.average;
            (allocated > 0.0).then(|| ((allocated - used) / allocated).clamp(0.0, 1.0))
        }
        _ => {
            let busy = usage.utilization_percent?.average;
            Some((1.0 - busy / 100.0).clamp(0.0, 1.0))
        }
    }
}

/// What an instance's GPUs did not use of their allocations, as the GPUs measure it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceUnused {
    /// Of the allocations of the GPUs measured (an MPS GPU weighs its allocated memory, a whole
    /// GPU all of it), the part unused, 0–1.
    pub fraction: f64,
    /// GPUs with an allocation and usage data, of `allocated` GPUs with an allocation.
    pub measured: u32,
    pub allocated: u32,
}

/// What `instance`'s GPUs did not use of their allocations; `None` when no GPU with an
/// allocation has usage data.
pub fn instance_unused(instance: &InstanceView) -> Option<InstanceUnused> {
    let mut weighed = 0.0;
    let mut unused = 0.0;
    let mut measured = 0;
    let mut allocated = 0;
    for gpu in &instance.gpus {
        let weight = match gpu.mode {
            SharingMode::NvidiaMps if gpu.total_memory_mib > 0 => {
                f64::from(gpu.allocated_memory_mib()) / f64::from(gpu.total_memory_mib)
            }
            SharingMode::Dedicated => 1.0,
            _ => 0.0,
        };
        if weight <= 0.0 {
            continue;
        }
        allocated += 1;
        if let Some(fraction) = unused_fraction(gpu) {
            measured += 1;
            weighed += weight;
            unused += weight * fraction;
        }
    }
    (measured > 0).then(|| InstanceUnused {
        fraction: unused / weighed,
        measured,
        allocated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nominal_memory_comes_from_the_family() {
        assert_eq!(nominal_gpu_memory_mib("p4d.24xlarge"), Some(40 * 1024));
        assert_eq!(nominal_gpu_memory_mib("g6e.12xlarge"), Some(48 * 1024));
        assert_eq!(nominal_gpu_memory_mib("m7i.large"), None);
    }

    #[test]
    fn instance_types_name_their_gpus() {
        assert_eq!(gpu_model_of("g6e.12xlarge"), Some("NVIDIA L40S"));
        assert_eq!(gpu_model_of("p5en.48xlarge"), Some("NVIDIA H200"));
        assert_eq!(gpu_model_of("m7i.large"), None);
        assert_eq!(gpu_model_of(""), None);
    }

    fn gpu(mode: SharingMode, allocated: u32, usage: Option<GpuUsage>) -> GpuView {
        GpuView {
            uuid: "GPU-0".into(),
            index: 0,
            mode,
            total_memory_mib: 20_000,
            remaining_memory_mib: 20_000 - allocated,
            compute_allocated_percent: 0,
            containers: Vec::new(),
            usage,
        }
    }

    fn reading(value: f64) -> Option<Reading> {
        Some(Reading {
            latest: value,
            average: value,
        })
    }

    /// An MPS GPU with 10,000 MiB allocated and 2,500 used is 75 % unused; a whole GPU at 60 %
    /// utilisation 40 %; an idle one and one without data are not counted. Weighed by
    /// allocation (a half and a whole GPU): (0.5 × 0.75 + 1 × 0.4) ÷ 1.5.
    #[test]
    fn an_instances_unused_weighs_its_gpus_allocations() {
        let mps = gpu(
            SharingMode::NvidiaMps,
            10_000,
            Some(GpuUsage {
                utilization_percent: reading(90.0),
                memory_used_mib: reading(2_500.0),
            }),
        );
        assert_eq!(unused_fraction(&mps), Some(0.75));
        let whole = gpu(
            SharingMode::Dedicated,
            20_000,
            Some(GpuUsage {
                utilization_percent: reading(60.0),
                memory_used_mib: None,
            }),
        );
        let unmeasured = gpu(SharingMode::Dedicated, 20_000, None);
        let idle = gpu(SharingMode::Idle, 0, None);
        let instance =
            InstanceView::of("i-1", "g5.12xlarge").with_gpus(vec![mps, whole, unmeasured, idle]);
        let unused = instance_unused(&instance).expect("measured");
        assert!(
            (unused.fraction - (0.5 * 0.75 + 0.4) / 1.5).abs() < 1e-9,
            "{unused:?}"
        );
        assert_eq!((unused.measured, unused.allocated), (2, 3));
        let quiet = InstanceView::of("i-2", "g5.xlarge").with_gpus(vec![gpu(
            SharingMode::Dedicated,
            20_000,
            None,
        )]);
        assert_eq!(instance_unused(&quiet), None);
    }
}
